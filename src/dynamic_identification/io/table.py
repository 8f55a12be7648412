"""CSV tables of numbers with a header row: the shared reader and writer of the file formats.

Numbers are written with :func:`repr`, the shortest text that reads back as the same
binary64 value, so a written table reads back bit for bit. Writing goes to a
temporary file in the same directory that is then renamed, so a reader never sees
half a file. Reading errors are one-line :class:`DataError` messages naming the
file, line and column.
"""

from __future__ import annotations

import csv
import math
import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dynamic_identification.core.errors import DataError

_WRITE_CHUNK = 10_000


def write_table(path: str | os.PathLike[str], header: Sequence[str], table: np.ndarray) -> None:
    """Write ``header`` and the rows of ``table`` (2-D floats) atomically."""
    row_format = ",".join(["%r"] * table.shape[1]) + "\n"
    file = Path(path)
    temporary = file.with_name(f".{file.name}.{os.getpid()}.tmp")
    try:
        with temporary.open("w", encoding="utf-8", newline="") as stream:
            csv.writer(stream, lineterminator="\n").writerow(list(header))
            for start in range(0, table.shape[0], _WRITE_CHUNK):
                chunk = table[start : start + _WRITE_CHUNK].tolist()
                stream.write("".join(row_format % tuple(row) for row in chunk))
        os.replace(temporary, file)
    finally:
        temporary.unlink(missing_ok=True)


def read_header(file: Path) -> list[str]:
    """The stripped header row of ``file``."""
    with file.open("r", encoding="utf-8", newline="") as stream:
        try:
            header = next(csv.reader(stream))
        except StopIteration:
            raise DataError(f"file is empty: {file}") from None
        except (csv.Error, UnicodeDecodeError) as error:
            raise DataError(f"cannot read the header row of {file}: {error}") from error
    header = [name.strip() for name in header]
    if not any(header):
        raise DataError(f"{file} has an empty header row")
    return header


def read_body(file: Path, n_columns: int) -> np.ndarray:
    """All data rows as floats, shape ``(rows, n_columns)``; on failure, diagnose in Python."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data": reported below
            data = np.loadtxt(file, delimiter=",", skiprows=1, ndmin=2, comments=None, dtype=float, encoding="utf-8")
    except (ValueError, UnicodeDecodeError) as error:
        _diagnose_body(file, n_columns)
        raise DataError(f"cannot read the data rows of {file}: {error}") from error
    if data.size == 0:
        return np.empty((0, n_columns))
    if data.shape[1] != n_columns:
        raise DataError(f"data rows of {file} have {data.shape[1]} cells but the header has {n_columns} columns")
    return data


def _diagnose_body(file: Path, n_columns: int) -> None:
    """Raise a :class:`DataError` naming the first bad line and column of ``file``."""
    with file.open("r", encoding="utf-8", errors="replace", newline="") as stream:
        header = [name.strip() for name in next(csv.reader(stream))]
        for line_number, line in enumerate(stream, start=2):
            if not line.strip():
                continue
            cells = line.rstrip("\r\n").split(",")
            if len(cells) != n_columns:
                raise DataError(f"line {line_number} of {file} has {len(cells)} cells, the header has {n_columns}")
            for column, cell in zip(header, cells, strict=True):
                try:
                    float(cell)
                except ValueError:
                    raise DataError(
                        f"line {line_number} of {file}, column {column!r}: {cell.strip()!r} is not a number"
                    ) from None


def check_finite_cells(data: np.ndarray, header: list[str], file: Path) -> None:
    """Raise a :class:`DataError` naming the line and column of the first non-finite cell."""
    bad = np.argwhere(~np.isfinite(data))
    if bad.size:
        row, col = (int(i) for i in bad[0])
        line = _line_of_row(file, row)
        value = float(data[row, col])
        text = "nan" if math.isnan(value) else repr(value)
        raise DataError(f"line {line} of {file}, column {header[col]!r}: {text} is not finite")


def _line_of_row(file: Path, row: int) -> int:
    """1-based line number of data row ``row`` (blank lines are skipped by the reader)."""
    with file.open("r", encoding="utf-8", newline="") as stream:
        next(stream)
        count = -1
        for line_number, line in enumerate(stream, start=2):
            if line.strip():
                count += 1
                if count == row:
                    return line_number
    return row + 2
