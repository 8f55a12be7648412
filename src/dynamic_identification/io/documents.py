"""Reading the package's YAML documents (parameter files, payload files): a path, or the text itself.

A document published on a topic (``/estimator/parameters``, ``/estimator/payload``) arrives
as text; the loaders take either and report a missing file, an unreadable one or broken
YAML as one :class:`~dynamic_identification.core.errors.DataError` line that names it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from dynamic_identification.core.errors import DataError


def document_text(path_or_text: str | os.PathLike[str], kind: str) -> tuple[str, Path | None]:
    """The text of a document and the file it was read from (``None``: ``path_or_text`` was the text).

    A string containing a newline is the YAML text itself; a :class:`os.PathLike` or a
    one-line string is a path. ``kind`` names the document in errors (``"parameter"``:
    ``parameter file not found: …``).

    Raises
    ------
    DataError
        If the file is missing or unreadable.
    """
    if isinstance(path_or_text, str) and "\n" in path_or_text:
        return path_or_text, None
    path = Path(path_or_text)
    try:
        return path.read_text(encoding="utf-8"), path
    except FileNotFoundError:
        raise DataError(f"{kind} file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise DataError(f"cannot read {kind} file {path}: {error}") from error


def parse_yaml(text: str, source: str) -> Any:
    """The YAML document of ``text``; broken YAML is a one-line :class:`DataError` naming ``source``."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise DataError(f"{source} is not valid YAML: {' '.join(str(error).split())}") from error
