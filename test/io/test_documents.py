"""The package's YAML documents: read as ROS reads them, written as the package has always written them, and a
broken document refused in one line that names it."""

from __future__ import annotations

import datetime
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from dynamic_identification.core.errors import DataError
from dynamic_identification.io import documents
from dynamic_identification.io.documents import parse_yaml, plain_values, yaml_text

REFERENCE_OUTPUTS = Path(__file__).resolve().parents[1] / "data" / "reference" / "outputs"


@pytest.mark.parametrize("file", sorted(REFERENCE_OUTPUTS.glob("*.yaml")), ids=lambda file: file.stem)
def test_a_parameter_file_written_before_is_written_again_to_the_byte(file: Path) -> None:
    """The reference files were emitted by PyYAML's Python emitter; libyaml's must not change a user's files."""
    text = file.read_text(encoding="utf-8")
    assert yaml_text(parse_yaml(text, file.name)) == text


def test_scalars_are_read_as_ros_reads_them() -> None:
    document = parse_yaml("a: 1e9\nb: -2.5E-3\nc: 3\nd: '1e9'\ne: 1.5\nf: true\n", "scalars")
    assert document == {"a": 1e9, "b": -2.5e-3, "c": 3, "d": "1e9", "e": 1.5, "f": True}
    assert [type(document[key]) for key in "abcd"] == [float, float, int, str]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\ufeffa: 1\n", {"a": 1}),
        ("a: 1\r\nb: [1, 2]\r\n", {"a": 1, "b": [1, 2]}),
        ("a: &x [1, 2]\nb: *x\n", {"a": [1, 2], "b": [1, 2]}),
        ("u: 'N·m ö'\n", {"u": "N·m ö"}),
        ("b: [yes, off, ~]\n", {"b": [True, False, None]}),
        ("s: |\n  line1\n  line2\n", {"s": "line1\nline2\n"}),
        ("k: !!python/tuple [1, 2]\n", {"k": [1, 2]}),
        ("", None),
        ("b: &b {x: 1}\nd:\n  <<: *b\n  y: 2\n", {"b": {"x": 1}, "d": {"x": 1, "y": 2}}),
        ("d: 2026-12-02\ns: !!set {a}\n", {"d": datetime.date(2026, 12, 2), "s": {"a"}}),
        ("n: [0x1F, 1_000, 1:30, .inf, !!float 3, !!str 12]\n", {"n": [31, 1000, 90, math.inf, 3.0, "12"]}),
        ("{7: a, 2.5: b, true: c, null: d}\n", {7: "a", 2.5: "b", True: "c", None: "d"}),
    ],
    ids=[
        "byte-order-mark",
        "crlf",
        "alias",
        "unicode",
        "yaml-1.1-booleans",
        "block-scalar",
        "tuple",
        "empty",
        "merge-key",
        "date-and-set",
        "yaml-1.1-numbers",
        "scalar-keys",
    ],
)
def test_documents_read_as_pyyaml_always_read_them(text: str, expected: object) -> None:
    document = parse_yaml(text, "doc")
    assert document == expected
    assert _typed(document) == _typed(expected)


def _typed(value: Any) -> Any:
    """``value`` with each scalar paired with its type: ``1``, ``1.0`` and ``True`` compare equal otherwise."""
    if isinstance(value, dict):
        return {_typed(key): _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return (type(value).__name__, value)


def test_an_alias_reads_as_the_object_it_names() -> None:
    document = parse_yaml("a: &x [1, 2]\nb: *x\n", "doc")
    assert document["a"] is document["b"]


def test_numpy_values_and_tuples_are_written_as_plain_yaml() -> None:
    text = yaml_text({"values": np.array([1.0, 2.5]), "count": np.int64(3), "pair": (1, 2), "flag": np.bool_(True)})
    assert text == "values: [1.0, 2.5]\ncount: 3\npair: [1, 2]\nflag: true\n"
    assert parse_yaml(text, "written") == {"values": [1.0, 2.5], "count": 3, "pair": [1, 2], "flag": True}


def _representer_text(document: Any) -> str:
    """``document`` written by PyYAML's own representer with ``yaml_text``'s options."""
    return yaml.dump(
        plain_values(document),
        Dumper=yaml.SafeDumper,
        sort_keys=False,
        default_flow_style=None,
        allow_unicode=True,
        width=120,
    )


_FLOATS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e17, 1e-300, 5e-324, 1e300, 0.1, -2.5, 123456789012345678.0]
_STRINGS = [
    "",
    "joint_1",
    "yes",
    "null",
    "1.0",
    "1e3",
    "~",
    "- x",
    "a: b",
    "x # y",
    "'q'",
    '"d"',
    "ünï",
    "line\nbreak",
    " lead",
    "*star",
    "&amp",
    "!bang",
    "[",
    "{",
    "true",
    "0x1F",
    "1_000",
    "12:30",
    "2026-12-02",
    "MZ2 + 0.225 M3 + 0.225 M4 " * 6,
]


def _random_value(rng: np.random.Generator, depth: int) -> Any:
    choice = rng.integers(10) if depth < 4 else rng.integers(6)
    scalars = [
        lambda: _FLOATS[rng.integers(len(_FLOATS))],
        lambda: float(rng.normal() * 10.0 ** rng.integers(-20, 20)),
        lambda: _STRINGS[rng.integers(len(_STRINGS))],
        lambda: int(rng.integers(-(10**12), 10**12)),
        lambda: bool(rng.integers(2)) if rng.integers(2) else None,
        lambda: [np.float32(rng.normal()), np.int64(rng.integers(9)), np.bool_(rng.integers(2))][rng.integers(3)],
    ]
    if choice < 6:
        return scalars[choice]()
    if choice < 8:
        items = [_random_value(rng, depth + 1) for _ in range(rng.integers(0, 8))]
        return items if choice == 6 else tuple(items)
    if choice == 8:
        return rng.normal(size=rng.integers(0, 7))
    return {
        f"{_STRINGS[rng.integers(len(_STRINGS))]}{i}": _random_value(rng, depth + 1) for i in range(rng.integers(7))
    }


def test_documents_are_written_as_pyyaml_s_representer_writes_them_and_read_as_its_loader_reads_them() -> None:
    rng = np.random.default_rng(11)
    for _ in range(400):
        document = {f"key{i}": _random_value(rng, 0) for i in range(rng.integers(1, 6))}
        text = yaml_text(document)
        assert text == _representer_text(document)
        read = parse_yaml(text, "doc")
        # NaN is not equal to itself: compared as text.
        assert repr(_typed(read)) == repr(_typed(yaml.load(text, Loader=_PythonRosLoader)))  # noqa: S506


class _PythonRosLoader(yaml.SafeLoader):
    """PyYAML's own loader and constructor with the scalar resolvers and constructors of ``parse_yaml``'s loader."""


_PythonRosLoader.yaml_implicit_resolvers = documents._RosLoader.yaml_implicit_resolvers
_PythonRosLoader.yaml_constructors = documents._RosLoader.yaml_constructors


def test_a_value_of_another_type_is_written_by_pyyaml_s_representer() -> None:
    document = {"day": datetime.date(2026, 12, 2), "tags": {"a"}, "values": [1.0]}
    assert (
        yaml_text(document) == _representer_text(document) == "day: 2026-12-02\ntags: !!set {a: null}\nvalues: [1.0]\n"
    )


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "[" * 5000 + "]" * 5000 + "\n",
        "".join("  " * level + f"k{level}:\n" for level in range(2000)) + "  " * 2000 + "leaf: 1\n",
    ],
    ids=["flow-5000", "block-2000"],
)
def test_a_document_nested_too_deeply_is_refused_in_one_line(text: str) -> None:
    with pytest.raises(DataError, match=r"^deep\.yaml nests too deeply to read$"):
        parse_yaml(text, "deep.yaml")


@pytest.mark.parametrize("text", ["a: [\n", "a: 1\x00\n", "a: b: c\n"], ids=["unclosed", "nul", "mapping"])
def test_broken_yaml_is_refused_in_one_line_that_names_the_document(text: str) -> None:
    with pytest.raises(DataError, match=r"^bad\.yaml is not valid YAML: ") as caught:
        parse_yaml(text, "bad.yaml")
    assert "\n" not in str(caught.value)
