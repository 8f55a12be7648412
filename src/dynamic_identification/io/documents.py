"""Reading and writing the package's YAML documents (configurations, parameter and payload files): a path, or the
text itself.

A document published on a topic (``/estimator/parameters``, ``/estimator/payload``) arrives
as text; the loaders take either and report a missing file, an unreadable one or broken
YAML as one :class:`~dynamic_identification.core.errors.DataError` line that names it.

Documents are parsed and emitted by libyaml through PyYAML's C classes (``CSafeLoader``,
``CSafeDumper``; the pure-Python ones where PyYAML was built without libyaml), which read the same
documents and write the same text as the Python classes, in a fraction of their time: the
estimator node emits a parameter document at every update and the feedforward node parses it
(``bench/bench_documents.py`` compares the two). Between libyaml's nodes and a plain document (mappings, lists and
scalars) the objects are made here, without PyYAML's representer and constructor (:func:`yaml_text`,
:func:`parse_yaml`), which spend most of the rest; any other document goes through them.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
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


_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SafeDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

_TAG = "tag:yaml.org,2002:"
"""The prefix of YAML's standard tags."""


class _NotPlain(Exception):
    """A value or document that :func:`_node` or :func:`_plain_document` leaves to PyYAML's representer or
    constructor."""


_NESTING = "maximum nesting depth"
"""What libyaml says of a document nested deeper than it parses (1000 levels); PyYAML's Python parser runs out of
Python's recursion limit instead."""


class _RosLoader(_SafeLoader):
    """PyYAML's safe loader with the scalars ROS's parameter parser reads as numbers: ``1e9`` is a float."""


_RosLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def _sequence(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> list[Any]:
    return loader.construct_sequence(node, deep=True)


# launch_ros writes the lists of a launch file's parameter dictionary as Python tuples (``!!python/tuple``) into
# the parameter file it passes; ROS's parser reads them as lists, and so does this loader.
_RosLoader.add_constructor("tag:yaml.org,2002:python/tuple", _sequence)


def parse_yaml(text: str, source: str) -> Any:
    """The YAML document of ``text`` (safe: no Python objects), scalars resolved as ROS resolves them."""
    loader = _RosLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            return _plain_document(node, loader, set())
        except _NotPlain:
            return loader.construct_document(node)
    except yaml.YAMLError as error:
        if _NESTING in str(error):
            raise DataError(f"{source} nests too deeply to read") from None
        raise DataError(f"{source} is not valid YAML: {shorten_yaml_error(error)}") from None
    except RecursionError:
        raise DataError(f"{source} nests too deeply to read") from None
    finally:
        loader.dispose()


_CONSTRUCTED_SCALARS = {
    _TAG + "str": lambda loader, node: node.value,
    _TAG + "float": _RosLoader.construct_yaml_float,
    _TAG + "int": _RosLoader.construct_yaml_int,
    _TAG + "bool": _RosLoader.construct_yaml_bool,
    _TAG + "null": lambda loader, node: None,
}
"""The scalars :func:`_plain_document` constructs, as the loader constructs them."""


def _plain_document(node: yaml.Node, loader: Any, seen: set[int]) -> Any:
    """What ``loader.construct_document(node)`` returns for a document of plain mappings, sequences and scalars,
    built without the constructor's bookkeeping (an object per node, the generators that let a structure refer to
    itself): most of the time of reading a parameter document, which the feedforward node does at every update.
    :class:`_NotPlain` for any other document: another tag, a merge key, a key that is not a scalar, or a node
    reached twice (an alias)."""
    if type(node) is yaml.ScalarNode:
        construct = _CONSTRUCTED_SCALARS.get(node.tag)
        if construct is None:
            raise _NotPlain
        return construct(loader, node)
    if id(node) in seen:
        raise _NotPlain
    seen.add(id(node))
    if type(node) is yaml.SequenceNode and node.tag == _TAG + "seq":
        return [_plain_document(item, loader, seen) for item in node.value]
    if type(node) is yaml.MappingNode and node.tag == _TAG + "map":
        mapping = {}
        for key, item in node.value:
            if type(key) is not yaml.ScalarNode:
                raise _NotPlain
            mapping[_plain_document(key, loader, seen)] = _plain_document(item, loader, seen)
        return mapping
    raise _NotPlain


def yaml_text(document: Mapping[str, Any]) -> str:
    """``document`` as the YAML text of the package's files: keys in their order, short lists inline, numpy values
    and tuples as plain YAML, lines up to 120 characters.

    The text is ``yaml.dump`` of :func:`plain_values` with those options, to the byte. Its nodes are made by
    :func:`_node` rather than by PyYAML's representer, a Python object per value that checks each for aliases
    and looks its type up: most of the time of a parameter document that the estimator node emits at every update.
    A value of another type (a date, a set) takes PyYAML's representer.
    """
    try:
        node = _node(document)
    except _NotPlain:
        return yaml.dump(
            plain_values(document),
            Dumper=_SafeDumper,
            sort_keys=False,
            default_flow_style=None,
            allow_unicode=True,
            width=120,
        )
    return yaml.serialize(node, Dumper=_SafeDumper, allow_unicode=True, width=120)


def _node(value: Any) -> yaml.Node:
    """The node PyYAML's ``SafeRepresenter`` makes of :func:`plain_values` of ``value`` with
    ``default_flow_style=None``: a mapping or sequence in flow style when it holds scalars only (``{}`` and ``[]``
    when empty), no aliases (each mapping and list of :func:`plain_values` is a new object), floats as
    ``represent_float`` writes them."""
    kind = type(value)
    # The types of nearly every value first, by identity: an isinstance check of Mapping costs more than the node.
    if kind is float:
        return yaml.ScalarNode(_TAG + "float", _float_text(value))
    if kind is str:
        return yaml.ScalarNode(_TAG + "str", value)
    if isinstance(value, Mapping):
        pairs = [(yaml.ScalarNode(_TAG + "str", str(key)), _node(item)) for key, item in value.items()]
        return yaml.MappingNode(_TAG + "map", pairs, flow_style=all(type(item) is yaml.ScalarNode for _, item in pairs))
    if isinstance(value, np.ndarray):
        return _node(value.tolist())
    if isinstance(value, list | tuple):
        items = [_node(item) for item in value]
        return yaml.SequenceNode(_TAG + "seq", items, flow_style=all(type(item) is yaml.ScalarNode for item in items))
    # Any other scalar as plain_values makes it plain (a numpy bool, integer or float as Python's).
    scalar = plain_values(value)
    kind = type(scalar)
    if kind is bool:
        return yaml.ScalarNode(_TAG + "bool", "true" if scalar else "false")
    if kind is int:
        return yaml.ScalarNode(_TAG + "int", str(scalar))
    if kind is float:
        return yaml.ScalarNode(_TAG + "float", _float_text(scalar))
    if scalar is None:
        return yaml.ScalarNode(_TAG + "null", "null")
    raise _NotPlain


def _float_text(value: float) -> str:
    """``SafeRepresenter.represent_float``'s text of ``value``: ``.nan``, ``.inf``, ``-.inf``, or its ``repr`` in
    lower case with ``.0`` before an exponent that has no decimal point (``1e17`` reads as a string in YAML 1.1)."""
    if value != value:
        return ".nan"
    if value == math.inf:
        return ".inf"
    if value == -math.inf:
        return "-.inf"
    text = repr(value).lower()
    return text.replace("e", ".0e", 1) if "." not in text and "e" in text else text


_PLAIN_SCALARS = frozenset({float, str, int, bool, type(None)})
"""The types :func:`plain_values` returns as they are."""


def plain_values(value: Any) -> Any:
    """``value`` with numpy scalars and arrays and tuples turned into plain Python for YAML."""
    if type(value) in _PLAIN_SCALARS:
        # Nearly every value: returned as it is, before the isinstance checks (a Mapping one is slow).
        return value
    if isinstance(value, Mapping):
        return {str(key): plain_values(item) for key, item in value.items()}
    if isinstance(value, np.ndarray):
        return plain_values(value.tolist())
    if isinstance(value, list | tuple):
        return [plain_values(item) for item in value]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value)
    return value


def shorten_yaml_error(error: yaml.YAMLError) -> str:
    """PyYAML's message on one line, at most 300 characters (it may quote a long line)."""
    text = " ".join(str(error).split())
    return text if len(text) <= 300 else text[:299] + "…"
