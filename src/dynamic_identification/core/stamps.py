"""The stamp rule of streamed samples: what a stamp earlier than the last one means.

Streams (the recorder's inputs, a rosbag read offline, the estimator's samples, ``dynid
stream``) judge each stamp against the latest one accepted so far:

* later: a new sample, accepted;
* earlier by more than :data:`BACKWARD_JUMP_S`: the clock jumped back (a bag played in a
  loop, a simulation reset): accepted, and whatever the stream built so far (alignment,
  window) restarts there;
* otherwise (equal, or slightly earlier): a duplicated or out-of-order sample, dropped.

Time is float seconds, as everywhere in the core; :data:`NS_PER_S` converts the
integer nanoseconds of the ROS boundary. Forward gaps are the concern of the
consumers: a step longer than ``gap_factor`` periods splits the data, never
interpolated (:class:`~dynamic_identification.core.identification.settings.SignalSettings`).
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import Enum

import numpy as np

NS_PER_S = 1_000_000_000
"""Nanoseconds per second."""

BACKWARD_JUMP_S = 1.0
"""A stamp earlier than the latest accepted one by more than this, s, restarts the stream."""


class Stamp(Enum):
    """What a stamp is for a stream, given the latest stamp it accepted."""

    NEW = "new"
    RESTART = "restart"
    STALE = "stale"


def classify_stamp(stamp_s: float, latest_s: float) -> Stamp:
    """The rule of the module docstring for one stamp; ``latest_s`` is ``-inf`` before the first."""
    if stamp_s > latest_s:
        return Stamp.NEW
    if stamp_s < latest_s - BACKWARD_JUMP_S:
        return Stamp.RESTART
    return Stamp.STALE


def jumped_back(stamp_ns: int, latest_ns: int | None) -> bool:
    """Whether an integer-nanosecond stamp restarts its stream (``latest_ns`` ``None`` before the first)."""
    return latest_ns is not None and stamp_ns < latest_ns - BACKWARD_JUMP_S * NS_PER_S


def stream_chunks(time_s: np.ndarray, period_s: float) -> Iterator[tuple[np.ndarray, bool]]:
    """Indices of consecutive chunks of ``period_s`` of data time, and whether a chunk restarts the stream.

    Applies :func:`classify_stamp` to every stamp of a recording: new stamps are kept,
    a jump back restarts (the chunk starting there says so), stale stamps are dropped.
    The chunks of one run of accepted stamps start at its first stamp and end at the
    first multiple of ``period_s`` after it that a stamp reaches; a run's last chunk may
    be shorter. Chunks are found one by one, so a gap of any length costs nothing.
    """
    time = np.asarray(time_s, dtype=float)
    start = 0
    restarted = False
    while start < time.size:
        stop = _next_jump(time, start)
        run = start + np.flatnonzero(_increasing(time[start:stop]))
        stamps = time[run]
        first = 0
        while first < run.size:
            periods = np.floor((stamps[first] - stamps[0]) / period_s) + 1.0
            while stamps[0] + period_s * periods <= stamps[first]:
                periods += 1.0
            last = int(np.searchsorted(stamps, stamps[0] + period_s * periods))
            yield run[first:last], restarted
            restarted = False
            first = last
        start, restarted = stop, True


def _increasing(time: np.ndarray) -> np.ndarray:
    """Which stamps are later than every earlier one (the first always is)."""
    previous = np.maximum.accumulate(np.concatenate([[-np.inf], time[:-1]]))
    return time > previous


def _next_jump(time: np.ndarray, start: int) -> int:
    """Index of the first stamp after ``start`` earlier than the running latest by more than BACKWARD_JUMP_S."""
    latest = np.maximum.accumulate(time[start:])
    jumps = np.flatnonzero(time[start + 1 :] < latest[:-1] - BACKWARD_JUMP_S)
    return start + 1 + int(jumps[0]) if jumps.size else time.size


__all__ = ["BACKWARD_JUMP_S", "NS_PER_S", "Stamp", "classify_stamp", "jumped_back", "stream_chunks"]
