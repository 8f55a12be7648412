"""Reading and writing the package's YAML documents: libyaml (PyYAML's C classes, a plain document's objects made
directly from its nodes) against PyYAML's Python classes.

:mod:`dynamic_identification.io.documents` parses every configuration, parameter and payload document and emits
every parameter and payload file; the estimator node emits a parameter document at each update and the
feedforward node parses it. Printed, never asserted, for the shipped configurations and the reference
parameter files of ``test/data/reference/outputs`` (``stream_params.yaml`` is what the estimator publishes):

- the CPU time of :func:`~dynamic_identification.io.documents.parse_yaml` against the same loader on
  PyYAML's Python parser (the same scalar resolvers and constructors), best of ``--repeats``;
- the CPU time of :func:`~dynamic_identification.io.documents.yaml_text` against ``yaml.safe_dump`` with the
  same options (parameter files only: the configurations are hand-written, with comments);
- whether both read the same document and write the same text.

Run: ``.venv/bin/python bench/bench_documents.py [--repeats 20]``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from dynamic_identification.io import documents
from dynamic_identification.resources import shipped_path

REFERENCE_OUTPUTS = Path(__file__).resolve().parents[1] / "test" / "data" / "reference" / "outputs"


class _PythonRosLoader(yaml.SafeLoader):
    """PyYAML's Python loader with the scalar resolvers and constructors of ``parse_yaml``'s loader."""


_PythonRosLoader.yaml_implicit_resolvers = documents._RosLoader.yaml_implicit_resolvers
_PythonRosLoader.yaml_constructors = documents._RosLoader.yaml_constructors


def _python_text(document: Any) -> str:
    """``document`` written by PyYAML's Python dumper with the options of ``yaml_text``."""
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=None, allow_unicode=True, width=120)


def _best_ms(function: Callable[[], Any], repeats: int) -> float:
    """The least CPU time of ``repeats`` calls, ms."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        function()
        best = min(best, time.process_time() - start)
    return 1e3 * best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    arguments = parser.parse_args()
    print(f"PyYAML {yaml.__version__}, libyaml: {yaml.__with_libyaml__}")
    files = sorted(shipped_path("config", "dynid_arm6.yaml").parent.glob("*.yaml"))
    files += sorted(REFERENCE_OUTPUTS.glob("*.yaml"))
    columns = ("kB", "parse C", "Python", "same", "write C", "Python", "same")
    print(f"{'document':32} " + " ".join(f"{column:>8}" for column in columns))
    for file in files:
        text = file.read_text(encoding="utf-8")
        document = documents.parse_yaml(text, file.name)
        python_document = yaml.load(text, Loader=_PythonRosLoader)  # noqa: S506 - a SafeLoader subclass
        parse_c = _best_ms(lambda text=text, name=file.name: documents.parse_yaml(text, name), arguments.repeats)
        parse_python = _best_ms(
            lambda text=text: yaml.load(text, Loader=_PythonRosLoader),  # noqa: S506 - a SafeLoader subclass
            arguments.repeats,
        )
        same = document == python_document
        line = f"{file.name:32} {len(text) / 1024:8.1f} {parse_c:8.2f} {parse_python:8.2f} {same!s:>8}"
        if file.parent == REFERENCE_OUTPUTS:
            written = documents.yaml_text(document)
            python_written = _python_text(document)
            write_c = _best_ms(lambda document=document: documents.yaml_text(document), arguments.repeats)
            write_python = _best_ms(lambda document=document: _python_text(document), arguments.repeats)
            line += f" {write_c:8.2f} {write_python:8.2f} {written == python_written == text!s:>8}"
        print(line)
    print("CPU ms per document, best of", arguments.repeats)


if __name__ == "__main__":
    main()
