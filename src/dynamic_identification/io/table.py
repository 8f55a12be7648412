"""CSV tables of numbers with a header row: the shared reader and writer of the file formats.

Numbers are written with :func:`repr`, the shortest text that reads back as the same
binary64 value, so a written table reads back bit for bit. Writing is atomic
(:func:`~dynamic_identification.io.atomic.atomic_output`): a reader never sees half a
file. Reading errors are one-line :class:`DataError` messages naming the file, line
and column, never quoting more than a few dozen characters of it.

What a killed writer leaves is read, not refused: a last line cut short (no newline
and too few cells or a broken number) and NUL bytes padding the end of the file (a
crash of a file system that had reserved the blocks) are dropped with a warning on
the ``dynamic_identification`` logger, since every earlier line is intact. A last
line without newline that still parses is kept (a hand-written file), with a warning
when NUL padding follows it. A UTF-8 byte
order mark (a spreadsheet's export) is ignored. NUL bytes or an endless first line
anywhere else mean the file is not a text CSV and are refused.
"""

from __future__ import annotations

import csv
import errno
import io
import logging
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dynamic_identification.core.errors import DataError, brief, shorten
from dynamic_identification.io.atomic import atomic_output

_WRITE_CHUNK = 10_000
MAX_LINE_BYTES = 1 << 20
"""Longest line (bytes) a table may have: the header of 1000 joints is some 30 kB."""
_SCAN_CHUNK = 1 << 24
PANDAS_FROM_BYTES = 24 << 20
"""Data rows of this many bytes and more are parsed by pandas, fewer by NumPy: pandas parses four times faster
(eight from pandas 3.1, which parses a file in threads) but its import takes about 0.3 s, the time NumPy takes
for some 25 MB (``bench/bench_identify.py``)."""

LOGGER = logging.getLogger("dynamic_identification")


def write_table(path: str | os.PathLike[str], header: Sequence[str], table: np.ndarray) -> None:
    """Write ``header`` and the rows of ``table`` (2-D floats) atomically."""
    row_format = ",".join(["%r"] * table.shape[1]) + "\n"
    with atomic_output(path) as stream:
        csv.writer(stream, lineterminator="\n").writerow(list(header))
        for start in range(0, table.shape[0], _WRITE_CHUNK):
            chunk = table[start : start + _WRITE_CHUNK].tolist()
            stream.write("".join(row_format % tuple(row) for row in chunk))


def _first_line(file: Path) -> bytes:
    try:
        with file.open("rb") as stream:
            line = stream.readline(MAX_LINE_BYTES + 1)
    except OSError as error:
        raise DataError(f"cannot read {file}: {error.strerror or error}") from None
    if not line.strip(b"\x00 \t\r\n"):
        raise DataError(f"file is empty: {file}" if not line else f"{file} has an empty header row")
    if len(line) > MAX_LINE_BYTES:
        raise DataError(f"the first line of {file} is longer than {MAX_LINE_BYTES} bytes: not a CSV header row")
    if b"\x00" in line:
        raise DataError(f"the header row of {file} holds NUL bytes: not a text CSV file")
    return line


def read_header(file: Path) -> list[str]:
    """The stripped header row of ``file`` (a UTF-8 byte order mark is ignored)."""
    line = _first_line(file)
    try:
        text = line.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise DataError(f"the header row of {file} is not UTF-8 text ({error.reason} at byte {error.start})") from None
    try:
        header = next(csv.reader([text]))
    except (csv.Error, StopIteration) as error:
        raise DataError(f"cannot read the header row of {file}: {shorten(str(error), 200)}") from None
    header = [name.strip() for name in header]
    if not any(header):
        raise DataError(f"{file} has an empty header row")
    return header


@dataclass(frozen=True)
class _Body:
    """Where the data rows of a file lie (bytes), and what was cut off at its end."""

    start: int
    stop: int
    padding: int
    torn: bytes

    @property
    def whole(self) -> bool:
        """Whether the rows run to the end of the file (nothing cut off): a reader may then read the file itself."""
        return not (self.padding or self.torn)


def _data_end(stream: io.BufferedReader, start: int, size: int) -> int:
    """Where the hole that ends a sparse file begins (``size`` when it has none, or the file system cannot say).

    A file extended but never written (the padding a crash leaves) is a hole the file system reads as
    NUL bytes: ``SEEK_HOLE`` finds it without reading it.
    """
    seek_hole, seek_data = getattr(os, "SEEK_HOLE", None), getattr(os, "SEEK_DATA", None)
    if seek_hole is None or seek_data is None:
        return size
    descriptor = stream.fileno()
    try:
        hole = os.lseek(descriptor, start, seek_hole)
        while hole < size:
            try:
                data = os.lseek(descriptor, hole, seek_data)
            except OSError as error:
                if error.errno == errno.ENXIO:  # nothing but the hole after it
                    return hole
                raise
            hole = os.lseek(descriptor, data, seek_hole)
    except OSError:  # the file system does not support it
        return size
    return size


def _content_end(stream: io.BufferedReader, start: int, size: int) -> int:
    """Offset after the last byte that is not a NUL (the end of a NUL-padded file's content)."""
    end = _data_end(stream, start, size)
    while end > start:
        begin = max(start, end - _SCAN_CHUNK)
        stream.seek(begin)
        chunk = stream.read(end - begin).rstrip(b"\x00")
        if chunk:
            return begin + len(chunk)
        end = begin
    return start


def _locate_body(file: Path, n_columns: int) -> _Body:
    start = len(_first_line(file))
    with file.open("rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        content_end = _content_end(stream, start, size)
        stop, torn = content_end, b""
        if stop > start:
            begin = max(start, stop - MAX_LINE_BYTES)
            stream.seek(begin)
            tail = stream.read(stop - begin)
            if not tail.endswith(b"\n"):
                newline = tail.rfind(b"\n")
                if newline < 0 and begin > start:
                    raise DataError(f"the last line of {file} is longer than {MAX_LINE_BYTES} bytes: not a CSV table")
                last = tail[newline + 1 :]
                if not _parses(last, n_columns):
                    torn, stop = last, stop - len(last)
                elif content_end < size:
                    LOGGER.warning(f"{file}: its last line, followed by NUL bytes, may be cut short: check it")
    return _Body(start=start, stop=stop, padding=size - content_end, torn=torn)


def _parses(line: bytes, n_columns: int) -> bool:
    """Whether ``line`` is a whole data row: ``n_columns`` numbers."""
    try:
        cells = line.decode("utf-8").strip().split(",")
        if len(cells) != n_columns:
            return False
        for cell in cells:
            float(cell)
    except (UnicodeDecodeError, ValueError):
        return False
    return True


class _Window(io.RawIOBase):
    """Bytes ``[start, stop)`` of a binary file, as a raw stream (what NumPy reads the rows from)."""

    def __init__(self, stream: io.BufferedReader, start: int, stop: int) -> None:
        super().__init__()
        stream.seek(start)
        self._stream = stream
        self._left = stop - start

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        count = min(len(buffer), self._left)
        if count <= 0:
            return 0
        got = self._stream.readinto(memoryview(buffer)[:count])
        self._left -= got
        return got


def _body_stream(raw: io.BufferedReader, body: _Body) -> io.BufferedReader:
    """The data rows alone (bytes ``[body.start, body.stop)`` of the open file ``raw``), buffered by the megabyte:
    what either reader reads when the rows do not run to the end of the file."""
    return io.BufferedReader(_Window(raw, body.start, body.stop), buffer_size=1 << 20)


def read_body(file: Path, n_columns: int) -> np.ndarray:
    """All data rows as floats, shape ``(rows, n_columns)``; on failure, diagnose in Python.

    A torn last line and trailing NUL padding are dropped with a warning (module docstring).
    """
    body = _locate_body(file, n_columns)
    if body.padding:
        LOGGER.warning(f"{file}: dropped {body.padding} NUL bytes at its end (a write cut off by a crash)")
    if body.torn:
        line = _line_number(file, body.stop)
        LOGGER.warning(
            f"{file}: dropped its last line {line}, cut off mid-write ({brief(body.torn.decode('utf-8', 'replace'))})"
        )
    data = _rows_by_pandas(file, body) if body.stop - body.start >= PANDAS_FROM_BYTES else None
    if data is None:
        data = _rows_by_numpy(file, n_columns, body)
    if data.size == 0:
        return np.empty((0, n_columns))
    if data.shape[1] != n_columns:
        raise DataError(f"data rows of {file} have {data.shape[1]} cells but the header has {n_columns} columns")
    return data


def _exact_floats(pandas_version: str) -> dict[str, str]:
    """The ``read_csv`` option that reads every number to the nearest binary64 (bit for bit what was written).

    Before pandas 3.1 its default converter could miss by the last bit; from 3.1 every converter is exact
    and the option is deprecated.
    """
    major, minor = (int(part) for part in pandas_version.split(".")[:2])
    return {} if (major, minor) >= (3, 1) else {"float_precision": "round_trip"}


def _rows_by_pandas(file: Path, body: _Body) -> np.ndarray | None:
    """The data rows read by pandas' C parser, or ``None`` where it refuses them.

    What it refuses (``nan``, ``Infinity``, a row short of cells: pandas names no line) goes to NumPy's reader,
    which reads the non-finite numbers for :func:`check_finite_cells` to name, and to :func:`_diagnose_body`.
    """
    import pandas  # imported by the verbs that read a table, not by every start

    with file.open("rb") as raw:
        if body.whole:
            source: io.BufferedReader | Path = file  # pandas reads a path twice as fast as a Python stream
            skip = 1
        else:
            source, skip = _body_stream(raw, body), 0
        try:
            frame = pandas.read_csv(
                source,
                header=None,
                skiprows=skip,
                dtype=np.float64,
                na_filter=False,
                comment=None,
                quoting=csv.QUOTE_NONE,
                engine="c",
                **_exact_floats(pandas.__version__),
            )
        except (ValueError, OverflowError):  # pandas' ParserError and EmptyDataError are ValueErrors
            return None
    return np.ascontiguousarray(frame.to_numpy(dtype=np.float64))


def _rows_by_numpy(file: Path, n_columns: int, body: _Body) -> np.ndarray:
    """The data rows read by NumPy's reader; on failure, diagnose in Python."""
    try:
        with file.open("rb") as raw, warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data": reported by the caller
            if body.whole:
                source: io.TextIOBase | Path = file  # NumPy's own reader of the file is faster
                skip = 1
            else:
                source = io.TextIOWrapper(_body_stream(raw, body), encoding="utf-8", newline="")
                skip = 0
            data = np.loadtxt(
                source, delimiter=",", skiprows=skip, ndmin=2, comments=None, dtype=float, encoding="utf-8"
            )
    except (ValueError, UnicodeDecodeError) as error:
        _diagnose_body(file, n_columns, body)
        raise DataError(f"cannot read the data rows of {file}: {shorten(str(error), 200)}") from None
    return data


def _line_number(file: Path, offset: int) -> int:
    """1-based number of the line starting at byte ``offset``."""
    count = 1
    with file.open("rb") as stream:
        done = 0
        while done < offset:
            chunk = stream.read(min(_SCAN_CHUNK, offset - done))
            if not chunk:
                break
            count += chunk.count(b"\n")
            done += len(chunk)
    return count


def _diagnose_body(file: Path, n_columns: int, body: _Body) -> None:
    """Raise a :class:`DataError` naming the first bad line and column of ``file``."""
    header = read_header(file)
    with file.open("rb") as stream:
        stream.seek(body.start)
        position = body.start
        line_number = 1
        while position < body.stop:
            line = stream.readline(min(MAX_LINE_BYTES + 1, body.stop - position))
            if not line:
                break
            position += len(line)
            line_number += 1
            if len(line) > MAX_LINE_BYTES:
                raise DataError(f"line {line_number} of {file} is longer than {MAX_LINE_BYTES} bytes")
            if b"\x00" in line:
                raise DataError(f"line {line_number} of {file} holds NUL bytes: the file is damaged")
            text = line.decode("utf-8", errors="replace")
            if not text.strip():
                continue
            cells = text.rstrip("\r\n").split(",")
            if len(cells) != n_columns:
                raise DataError(f"line {line_number} of {file} has {len(cells)} cells, the header has {n_columns}")
            for column, cell in zip(header, cells, strict=True):
                try:
                    float(cell)
                except ValueError:
                    raise DataError(
                        f"line {line_number} of {file}, column {column!r}: {brief(cell.strip())} is not a number"
                    ) from None


def check_finite_cells(data: np.ndarray, header: list[str], file: Path) -> None:
    """Raise a :class:`DataError` naming the line and column of the first non-finite cell."""
    finite = np.isfinite(data)
    if finite.all():
        return
    row, col = (int(i) for i in np.argwhere(~finite)[0])
    line = _line_of_row(file, row)
    value = float(data[row, col])
    text = "nan" if math.isnan(value) else repr(value)
    raise DataError(f"line {line} of {file}, column {header[col]!r}: {text} is not finite")


def _line_of_row(file: Path, row: int) -> int:
    """1-based line number of data row ``row`` (blank lines are skipped by the reader)."""
    with file.open("rb") as stream:
        stream.readline(MAX_LINE_BYTES + 1)
        count = -1
        line_number = 1
        while True:
            line = stream.readline(MAX_LINE_BYTES + 1)
            if not line:
                break
            line_number += 1
            if line.strip():
                count += 1
                if count == row:
                    return line_number
    return row + 2
