"""The shared CSV table reader, with pandas' parser and NumPy's: every binary64 back bit for bit, the same refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dynamic_identification.core.errors import DataError
from dynamic_identification.io import table
from dynamic_identification.io.table import _exact_floats, read_body, write_table


@pytest.fixture(params=["pandas", "numpy"], autouse=True)
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test reads with both parsers: pandas' (long files) and NumPy's (short ones)."""
    monkeypatch.setattr(table, "PANDAS_FROM_BYTES", 0 if request.param == "pandas" else 1 << 62)
    return str(request.param)


def _awkward_floats(rows: int, seed: int) -> np.ndarray:
    """Finite binary64 values of every exponent, both zeros, the subnormal and normal extremes."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 2**64, size=rows * 4, dtype=np.uint64).view(np.float64)
    values = np.where(np.isfinite(values), values, 1.0)
    values[:6] = [5e-324, -2.2250738585072014e-308, 1.7976931348623157e308, -0.0, 0.0, 1.953e-14]
    return values.reshape(rows, 4)


@pytest.mark.parametrize("torn", [False, True])
def test_every_finite_binary64_reads_back_bit_for_bit(tmp_path: Path, torn: bool) -> None:
    table = _awkward_floats(20_000, seed=7)
    path = tmp_path / "table.csv"
    write_table(path, ["a", "b", "c", "d"], table)
    if torn:  # a killed writer's last line: the rows before it are read from a window of the file
        with path.open("a", encoding="utf-8") as stream:
            stream.write("1.5,2.")
    data = read_body(path, 4)
    assert data.flags.c_contiguous
    np.testing.assert_array_equal(data.view(np.uint64), table.view(np.uint64))


@pytest.mark.parametrize(
    ("cell", "expected"),
    [("nan", np.nan), ("NaN", np.nan), ("Infinity", np.inf), ("+inf", np.inf), ("-inf", -np.inf), (" 2.5 ", 2.5)],
)
def test_numbers_the_fast_parser_refuses_are_read_as_numpy_reads_them(
    tmp_path: Path, cell: str, expected: float
) -> None:
    path = tmp_path / "table.csv"
    path.write_text(f"a,b\n1,2\n3,{cell}\n", encoding="utf-8")
    np.testing.assert_array_equal(read_body(path, 2), [[1.0, 2.0], [3.0, expected]])


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ('3,"4"', "line 3 .*column 'b': '\"4\"' is not a number"),
        ("3", "line 3 .*has 1 cells, the header has 2"),
        ("3,", "line 3 .*column 'b': '' is not a number"),
        ("3,NA", "line 3 .*column 'b': 'NA' is not a number"),
    ],
)
def test_a_cell_that_is_no_number_is_named_by_line_and_column(tmp_path: Path, row: str, message: str) -> None:
    path = tmp_path / "table.csv"
    path.write_text(f"a,b\n1,2\n{row}\n5,6\n", encoding="utf-8")
    with pytest.raises(DataError, match=message):
        read_body(path, 2)


@pytest.mark.parametrize(
    ("version", "option"), [("1.5.3", "round_trip"), ("2.2.3+dfsg", "round_trip"), ("3.1.1", None)]
)
def test_pandas_before_3_1_is_asked_for_its_exact_float_converter(version: str, option: str | None) -> None:
    assert _exact_floats(version).get("float_precision") == option
