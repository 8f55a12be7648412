"""Simulated recordings computed once per test run and shared by every test process of it.

Under pytest-xdist (``make test``) the test modules run in two processes, and a module-scoped or
``functools.cache`` fixture is built once *per process*: two modules that need the same simulated
robot run would each pay for it. :func:`shared_run` builds a value once per run instead: the first
process to ask builds it while holding a lock on its file, the others wait and read the file
(``pickle``). The run's controller chooses the directory (``conftest.pytest_configure``,
:data:`CACHE_ENV`) and removes it at the end; without it (a script, a lone test) the value is
built in place.
"""

from __future__ import annotations

import fcntl
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

CACHE_ENV = "DYNID_TEST_SHARED_RUNS"
"""Environment variable naming the run's directory of shared values."""

T = TypeVar("T")


def shared_run(key: str, build: Callable[[], T]) -> T:
    """``build()``, computed by the first test process of the run to ask for ``key`` (a file name stem that says
    what was simulated and with which seeds) and read back by the others."""
    directory = os.environ.get(CACHE_ENV)
    if not directory:
        return build()
    path = Path(directory) / f"{key}.pickle"
    with open(path.with_suffix(".lock"), "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            value: T = pickle.loads(path.read_bytes())
            return value
        value = build()
        partial = path.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(value))
        partial.replace(path)
        return value
