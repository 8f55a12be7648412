"""Recordings of joint motion and effort, and their CSV file format.

A recording is what the recorder node writes and what ``dynid`` reads: one row per
sample, the sample time in s, and per joint ``J`` the columns

* ``J/position`` in rad (required),
* ``J/velocity`` in rad/s (optional),
* ``J/effort`` (joint torque in N·m) and/or ``J/current`` (motor current in A; at
  least one of the two).

Columns may come in any order after a header row; a joint name may itself contain
``/`` because the column name is split at its *last* ``/``. Every joint must carry the
same kinds of column (all have velocities or none, all have currents or none, …):
a recording is a set of ``(N, n)`` arrays, not a patchwork. Time stamps are kept as
recorded; :func:`dynamic_identification.core.signal.filters.clean_time_stamps` cleans them.

Numbers are written with :func:`repr`, the shortest text that reads back as the same
binary64 value, so ``read_recording_csv(write_recording_csv(r)) == r`` bit for bit.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
import os
import re
import time as _time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dynamic_identification.core.errors import DataError, brief
from dynamic_identification.core.mechanism.robot import DriveChain
from dynamic_identification.io.table import check_finite_cells, read_body, read_header, write_table

TIME_COLUMN = "time"
"""Name of the sample-time column (s)."""

COLUMN_KINDS: tuple[str, ...] = ("position", "velocity", "effort", "current")
"""Per-joint column suffixes, in the order they are written."""

_MIN_ROWS = 2


@dataclass(frozen=True)
class Recording:
    """Samples of joint positions, optional velocities and measured efforts or currents.

    Attributes
    ----------
    time
        Sample times in s, shape ``(N,)``, as recorded (not cleaned).
    joint_names
        Joint names, one per column of the arrays below.
    position
        Joint positions in rad, shape ``(N, n)``.
    velocity
        Measured joint velocities in rad/s, shape ``(N, n)``, or ``None``.
    effort
        Measured joint torques in N·m, shape ``(N, n)``, or ``None``.
    current
        Measured motor currents in A, shape ``(N, n)``, or ``None``.

    The arrays are converted to read-only float arrays; every value must be finite.
    """

    time: np.ndarray
    joint_names: tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray | None = None
    effort: np.ndarray | None = None
    current: np.ndarray | None = None

    def __post_init__(self) -> None:
        names = tuple(self.joint_names)
        if not names:
            raise DataError("a recording needs at least one joint, got joint_names=()")
        bad = [name for name in names if not isinstance(name, str) or not name]
        if bad:
            raise DataError(f"joint names must be non-empty strings, got {bad}")
        if len(set(names)) != len(names):
            raise DataError(f"joint names repeat: {list(names)}")
        time = _read_only(self.time)
        if time.ndim != 1 or time.shape[0] < 1:
            raise DataError(f"time must have shape (N,) with N >= 1, got shape {time.shape}")
        _check_finite("time", time[:, None], ("time",))
        object.__setattr__(self, "joint_names", names)
        object.__setattr__(self, "time", time)
        shape = (time.shape[0], len(names))
        for kind in COLUMN_KINDS:
            value = getattr(self, kind)
            if value is None:
                if kind == "position":
                    raise DataError("position is required, got None")
                continue
            array = _read_only(value)
            if array.shape != shape:
                raise DataError(f"{kind} must have shape {shape} (samples, joints), got shape {array.shape}")
            _check_finite(kind, array, names)
            object.__setattr__(self, kind, array)

    @property
    def n_samples(self) -> int:
        return int(self.time.shape[0])

    @property
    def n_joints(self) -> int:
        return len(self.joint_names)

    def select(self, joint_names: Sequence[str]) -> Recording:
        """The same samples with only ``joint_names``, in that order (this recording itself when
        those are its joints in its order: its arrays are read-only, so nothing is copied; otherwise the
        selected columns, and the same ``time``).

        Raises
        ------
        DataError
            Naming the requested joints the recording does not have.
        """
        wanted = _joint_list(joint_names)
        if tuple(wanted) == self.joint_names:
            return self
        column = {name: j for j, name in enumerate(self.joint_names)}
        missing = [name for name in wanted if name not in column]
        if missing:
            raise DataError(f"joints {missing} are not in the recording (it has {list(self.joint_names)})")
        index = np.array([column[name] for name in wanted], dtype=int)
        return Recording(
            time=self.time,
            joint_names=tuple(wanted),
            position=self.position[:, index],
            velocity=_columns(self.velocity, index),
            effort=_columns(self.effort, index),
            current=_columns(self.current, index),
        )

    def rows(self, index: int | slice | Sequence[int] | np.ndarray) -> Recording:
        """The samples selected by ``index`` (an int, a slice, indices or a boolean mask)."""
        if isinstance(index, (int, np.integer)):
            index = [int(index)]
        return Recording(
            time=self.time[index],
            joint_names=self.joint_names,
            position=self.position[index],
            velocity=_rows(self.velocity, index),
            effort=_rows(self.effort, index),
            current=_rows(self.current, index),
        )

    def joint_torques(self, drive_chain: DriveChain | None = None) -> np.ndarray:
        """Joint torques in N·m, shape ``(N, n)``.

        The measured ``effort`` when the recording has it; otherwise the currents
        converted with ``drive_chain`` (``τ = Gᵀ (k ⊙ i)``, [Gautier2013] eq. (7)).

        Raises
        ------
        DataError
            If the recording only has currents and no ``drive_chain`` is given, or the
            drive chain is for a different number of joints.
        """
        if self.effort is not None:
            return self.effort
        if self.current is None:
            raise DataError("the recording has neither effort nor current")
        if drive_chain is None:
            raise DataError("the recording has motor currents but no efforts: a drive_chain is needed to convert them")
        if drive_chain.n_joints != self.n_joints:
            raise DataError(
                f"drive_chain has {drive_chain.n_joints} joints, the recording has {self.n_joints} "
                f"({list(self.joint_names)})"
            )
        return drive_chain.joint_torques(self.current)


def recording_from_arrays(
    time: Sequence[float] | np.ndarray,
    joint_names: Sequence[str],
    position: Sequence[Sequence[float]] | np.ndarray,
    *,
    velocity: Sequence[Sequence[float]] | np.ndarray | None = None,
    effort: Sequence[Sequence[float]] | np.ndarray | None = None,
    current: Sequence[Sequence[float]] | np.ndarray | None = None,
) -> Recording:
    """Validated :class:`Recording` from array-likes (e.g. lists collected by a node).

    Raises
    ------
    DataError
        If shapes disagree with ``(N, len(joint_names))``, a value is not finite,
        there are fewer than 2 samples, or neither ``effort`` nor ``current`` is given.
    """
    if effort is None and current is None:
        raise DataError("a recording needs effort (N·m) or current (A), got neither")
    recording = Recording(
        time=np.asarray(time),
        joint_names=tuple(_joint_list(joint_names)),
        position=np.asarray(position),
        velocity=_optional_array(velocity),
        effort=_optional_array(effort),
        current=_optional_array(current),
    )
    if recording.n_samples < _MIN_ROWS:
        raise DataError(f"a recording needs at least {_MIN_ROWS} samples, got {recording.n_samples}")
    return recording


def read_recording_csv(
    path: str | os.PathLike[str], *, joint_names: Sequence[str] | None = None, require_torque: bool = True
) -> Recording:
    """Read a recording CSV file.

    Parameters
    ----------
    path
        The file (see the module docstring for its columns).
    joint_names
        Joints to keep, in this order; ``None`` keeps all, in order of first appearance.
    require_torque
        Whether every joint needs an ``effort`` or ``current`` column; ``False`` for
        a motion to predict torques along.

    Raises
    ------
    DataError
        With a one-line message naming the file and the offending column or line:
        missing or empty file, no ``time`` column, repeated or unknown column, a joint
        without ``position`` or without ``effort``/``current``, joints with different
        kinds of column, a non-numeric or non-finite cell, a row with the wrong number
        of cells, fewer than 2 samples, or requested joints the file does not have.
    """
    file = Path(path)
    if not file.is_file():
        raise DataError(f"recording file not found: {file}")
    header = read_header(file)
    time_column, layout = _parse_header(header, file, require_torque=require_torque)
    if joint_names is not None:
        wanted = _joint_list(joint_names)
        missing = [name for name in wanted if name not in layout]
        if missing:
            raise DataError(f"joints {missing} are not in {file} (it has {list(layout)})")
        layout = {name: layout[name] for name in wanted}
    data = read_body(file, len(header))
    if data.shape[0] < _MIN_ROWS:
        raise DataError(f"{file} has {data.shape[0]} data rows, a recording needs at least {_MIN_ROWS}")
    check_finite_cells(data, header, file)
    names = tuple(layout)
    arrays: dict[str, Any] = {}
    for kind in COLUMN_KINDS:
        if kind in layout[names[0]]:
            # A new array of the file's columns, handed over read-only: the recording keeps it as it is (_read_only).
            columns = np.take(data, [layout[name][kind] for name in names], axis=1)
            columns.setflags(write=False)
            arrays[kind] = columns
    return Recording(time=data[:, time_column], joint_names=names, **arrays)


def write_recording_csv(path: str | os.PathLike[str], recording: Recording) -> None:
    """Write ``recording`` as CSV so that :func:`read_recording_csv` returns it exactly.

    Columns: ``time``, then per joint ``J/position``, ``J/velocity``, ``J/effort``,
    ``J/current`` (those present). The file is written to a temporary name in the
    same directory and renamed, so a reader never sees half a file.
    """
    header = [TIME_COLUMN]
    blocks = [recording.time[:, None]]
    kinds = [kind for kind in COLUMN_KINDS if getattr(recording, kind) is not None]
    for j, name in enumerate(recording.joint_names):
        for kind in kinds:
            header.append(f"{name}/{kind}")
            blocks.append(getattr(recording, kind)[:, j : j + 1])
    write_table(path, header, np.concatenate(blocks, axis=1))


class RecordingWriter:
    """Writes a recording CSV sample by sample, readable by :func:`read_recording_csv` while it grows.

    The header is written at once; samples are kept in memory as whole text lines
    and handed to the operating system in one ``write`` per flush, at the latest
    ``flush_period_s`` after the first unflushed sample (checked on :meth:`append`;
    call :meth:`flush` from a timer to bound the delay when samples stop). A crash
    of the writing process therefore loses at most the last ``flush_period_s`` of
    samples and the file on disk always ends with a whole line; only a power loss
    (data not yet on the disk) or a reader racing a flush can see a torn last line,
    which :func:`read_recording_csv` reports naming the line. Columns and number
    format are those of :func:`write_recording_csv`: ``time`` then per joint the
    ``kinds`` in :data:`COLUMN_KINDS` order, numbers as :func:`repr`.

    Parameters
    ----------
    path
        The file to create; an existing file is never overwritten.
    joint_names
        Joint names, in column order.
    kinds
        Per-joint columns: ``position`` and at least one of ``effort``/``current``,
        optionally ``velocity``.
    flush_period_s
        Longest time (s, wall clock) a sample stays in memory while samples arrive.

    Raises
    ------
    DataError
        On bad joint names or kinds, or when the file exists or cannot be created.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        joint_names: Sequence[str],
        kinds: Sequence[str],
        *,
        flush_period_s: float = 1.0,
    ) -> None:
        names = tuple(_joint_list(joint_names))
        unknown = [kind for kind in kinds if kind not in COLUMN_KINDS]
        if unknown or len(set(kinds)) != len(kinds):
            raise DataError(f"kinds must be distinct names of {list(COLUMN_KINDS)}, got {list(kinds)}")
        if "position" not in kinds or not ({"effort", "current"} & set(kinds)):
            raise DataError(f"kinds need 'position' and 'effort' or 'current', got {list(kinds)}")
        if not (math.isfinite(flush_period_s) and flush_period_s > 0.0):
            raise DataError(f"flush_period_s must be finite and > 0, got {flush_period_s!r}")
        self.path = Path(path)
        self.joint_names = names
        self.kinds = tuple(kind for kind in COLUMN_KINDS if kind in kinds)
        self.flush_period_s = float(flush_period_s)
        self.n_samples = 0
        self._lines: list[str] = []
        self._oldest_unflushed: float | None = None
        self._row_format = ",".join(["%r"] * (1 + len(names) * len(self.kinds))) + "\n"
        header = io.StringIO()
        csv.writer(header, lineterminator="\n").writerow(
            [TIME_COLUMN, *(f"{name}/{kind}" for name in names for kind in self.kinds)]
        )
        try:
            self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise DataError(f"recording file exists, not overwriting it: {self.path}") from None
        except OSError as error:
            raise DataError(f"cannot create recording file {self.path}: {error}") from error
        self._write(header.getvalue())

    @property
    def closed(self) -> bool:
        return self._fd is None

    def append(
        self,
        time_s: float,
        *,
        position: np.ndarray | Sequence[float],
        velocity: np.ndarray | Sequence[float] | None = None,
        effort: np.ndarray | Sequence[float] | None = None,
        current: np.ndarray | Sequence[float] | None = None,
    ) -> None:
        """Add one sample: time in s, arrays of shape ``(n,)`` for exactly the writer's kinds.

        Raises
        ------
        DataError
            If the writer is closed, a kind is missing or extra, a shape is wrong or
            a value is not finite (the file stays loadable: the sample is not written).
        """
        if self._fd is None:
            raise DataError(f"recording {self.path} is closed")
        given = {"position": position, "velocity": velocity, "effort": effort, "current": current}
        present = tuple(kind for kind in COLUMN_KINDS if given[kind] is not None)
        if present != self.kinds:
            raise DataError(f"a sample of {self.path} needs {list(self.kinds)}, got {list(present)}")
        n = len(self.joint_names)
        columns = [np.asarray(given[kind], dtype=float) for kind in self.kinds]
        for kind, values in zip(self.kinds, columns, strict=True):
            if values.shape != (n,):
                raise DataError(f"{kind} must have shape ({n},), got shape {values.shape}")
        block = np.stack(columns, axis=1)  # joint by joint, kinds within a joint: the header's order
        stamp = float(time_s)
        if not math.isfinite(stamp) or not np.isfinite(block).all():
            raise DataError(f"sample at time {stamp!r} has a non-finite value, not written to {self.path}")
        self._lines.append(self._row_format % (stamp, *block.ravel().tolist()))
        self.n_samples += 1
        now = _time.monotonic()
        if self._oldest_unflushed is None:
            self._oldest_unflushed = now
        elif now - self._oldest_unflushed >= self.flush_period_s:
            self.flush()

    def flush(self) -> None:
        """Hand every buffered sample to the operating system, as whole lines in one write."""
        if self._fd is None or not self._lines:
            return
        text = "".join(self._lines)
        self._lines.clear()
        self._oldest_unflushed = None
        self._write(text)

    def close(self) -> None:
        """Flush and close the file; closing twice is harmless."""
        if self._fd is None:
            return
        try:
            self.flush()
        finally:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RecordingWriter:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _write(self, text: str) -> None:
        fd = self._fd
        if fd is None:
            raise DataError(f"recording {self.path} is closed")
        data = memoryview(text.encode("utf-8"))
        while data:
            written = os.write(fd, data)
            data = data[written:]


def _read_only(value: Any) -> np.ndarray:
    """``value`` as a read-only float array: itself when it already is one that owns its data (another recording's,
    which nobody can write: :meth:`Recording.select` and ``dataclasses.replace`` copy nothing), otherwise a copy,
    so the caller's array stays writable."""
    if isinstance(value, np.ndarray) and value.dtype == np.float64 and value.base is None and not value.flags.writeable:
        return value
    array = np.array(value, dtype=float)
    array.setflags(write=False)
    return array


def _check_finite(kind: str, array: np.ndarray, names: tuple[str, ...]) -> None:
    finite = np.isfinite(array)
    if finite.all():
        return
    row, col = (int(i) for i in np.argwhere(~finite)[0])
    raise DataError(f"{kind} of joint {names[col]!r} at sample {row} is not finite ({array[row, col]!r})")


def _joint_list(joint_names: Sequence[str]) -> list[str]:
    if isinstance(joint_names, str):
        raise DataError(f"joint_names must be a sequence of names, got the string {joint_names!r}")
    names = list(joint_names)
    if len(set(names)) != len(names):
        raise DataError(f"joint names repeat: {names}")
    if not names:
        raise DataError("joint_names is empty")
    return names


def _optional_array(value: Sequence[Sequence[float]] | np.ndarray | None) -> np.ndarray | None:
    return None if value is None else np.asarray(value)


def _columns(array: np.ndarray | None, index: np.ndarray) -> np.ndarray | None:
    return None if array is None else array[:, index]


def _rows(array: np.ndarray | None, index: Any) -> np.ndarray | None:
    return None if array is None else array[index]


_TIME_LIKE = re.compile(
    r"(?i)(t|time|times|timestamp|stamp|stamps|sec|secs|seconds|header\.stamp"
    r"|time_?(s|sec|ns|us|ms)|time ?[\[(].*[\])])"
)
"""Names a time column goes by elsewhere (``t``, ``timestamp``, ``time [s]``, ``time_ns``)."""

_KIND_SYNONYMS = {
    **dict.fromkeys(("torque", "torques", "tau", "effort_nm", "efforts", "force"), "effort"),
    **dict.fromkeys(("pos", "positions", "q", "angle", "angles", "rad"), "position"),
    **dict.fromkeys(("vel", "velocities", "speed", "dq", "qd"), "velocity"),
    **dict.fromkeys(("i", "curr", "currents", "amp", "amps", "current_a"), "current"),
}
"""Column kinds a user may write for the package's, by the kind they mean."""

_KIND_UNITS = {"position": "rad", "velocity": "rad/s", "effort": "joint torque in N·m", "current": "motor current in A"}

_SEPARATORS = {";": "';'", "\t": "tab", "|": "'|'"}


def _check_format(header: list[str], file: Path) -> None:
    """Refuse a file that is not a comma-separated recording, saying what it looks like.

    A header read as one cell holding ``;`` (what a spreadsheet in a locale with decimal
    commas writes), tabs or ``|`` is another separator: refused rather than guessed, since such
    a file's numbers may use decimal commas too, which no separator choice reads right. A
    first line of YAML (``/**:``) or XML (``<``) is another kind of file given as a recording.
    """
    if len(header) != 1:
        return
    first = header[0].strip()
    for separator, name in _SEPARATORS.items():
        if separator in first:
            raise DataError(
                f"the header of {file} looks {name}-separated ({brief(first, 60)}): dynid reads comma-separated CSV"
                " ('time,J/position,…', '.' for decimals); export it with commas"
            )
    if first.startswith("<") or first.endswith(":"):
        kind = "XML (a URDF?)" if first.startswith("<") else "YAML (a configuration or parameter file?)"
        raise DataError(f"{file} is not a recording CSV: its first line {brief(first, 60)} looks like {kind}")


def _mistyped_joint_hint(joint: str, layout: dict[str, dict[str, int]]) -> str:
    """``"; 'joint_2' has ['effort', 'velocity']: is one of the two names mistyped?"`` when another joint of the header
    is spelled nearly as ``joint`` and holds the kinds it lacks (``joint2/position`` beside ``joint_2/effort``), else
    empty."""
    close = difflib.get_close_matches(joint, [other for other in layout if other != joint], n=1, cutoff=0.8)
    if not close or not set(layout[joint]).isdisjoint(layout[close[0]]):
        return ""
    return f"; {close[0]!r} has {sorted(layout[close[0]])}: is one of the two names mistyped?"


def _parse_header(
    header: list[str], file: Path, *, require_torque: bool = True
) -> tuple[int, dict[str, dict[str, int]]]:
    """Index of the time column and, per joint (in order of appearance), column index per kind."""
    _check_format(header, file)
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise DataError(f"column {name!r} appears twice in {file}")
        seen.add(name)
    if TIME_COLUMN not in seen:
        timelike = [name for name in header if _TIME_LIKE.fullmatch(name.strip())]
        hint = f": is {timelike[0]!r} the time? name it {TIME_COLUMN!r} (seconds)" if timelike else ""
        raise DataError(f"{file} has no {TIME_COLUMN!r} column (header: {brief(header)}){hint}")
    layout: dict[str, dict[str, int]] = {}
    for index, name in enumerate(header):
        if name == TIME_COLUMN:
            continue
        joint, _, kind = name.rpartition("/")
        if not joint or kind not in COLUMN_KINDS:
            meant = _KIND_SYNONYMS.get(kind.strip().lower()) if joint else None
            hint = f" (did you mean {joint + '/' + meant!r}, {_KIND_UNITS[meant]}?)" if meant else ""
            raise DataError(
                f"unknown column {name!r} in {file}: expected {TIME_COLUMN!r} or 'JOINT/KIND' with KIND in "
                f"{list(COLUMN_KINDS)}{hint}"
            )
        layout.setdefault(joint, {})[kind] = index
    if not layout:
        raise DataError(f"{file} has no joint columns (header: {brief(header)})")
    for joint, kinds in layout.items():
        if "position" not in kinds:
            raise DataError(
                f"joint {joint!r} in {file} has {sorted(kinds)} columns but no {joint + '/position'!r}"
                + _mistyped_joint_hint(joint, layout)
            )
        if require_torque and "effort" not in kinds and "current" not in kinds:
            raise DataError(
                f"joint {joint!r} in {file} has neither {joint + '/effort'!r} nor {joint + '/current'!r}"
                + _mistyped_joint_hint(joint, layout)
            )
    first, reference = next(iter(layout.items()))
    for joint, kinds in layout.items():
        if set(kinds) != set(reference):
            raise DataError(
                f"joints of {file} have different columns: {first!r} has {sorted(reference)}, {joint!r} has "
                f"{sorted(kinds)} (every joint needs the same kinds)"
            )
    return header.index(TIME_COLUMN), layout
