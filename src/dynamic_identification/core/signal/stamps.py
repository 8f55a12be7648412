"""Stamps of streamed samples: what a stamp earlier than the last one means, and what a gap forward hides.

Streams (the recorder's inputs, a rosbag read offline, the estimator's samples, ``dynid
stream``) judge each stamp against the latest one accepted so far:

* later: a new sample, accepted;
* equal, with values (positions) other than the latest sample's: a new sample that the driver
  stamped again with the latest stamp (a stall, a millisecond counter that two samples read
  alike), accepted: where the instants are recovered from the sample order it is put back where
  it was taken, and dropping it would leave a sample missing from that order;
* earlier by more than :data:`BACKWARD_JUMP_S`: the clock jumped back (a bag played in a
  loop, a simulation reset): accepted, and whatever the stream built so far (alignment,
  window) restarts there;
* otherwise (equal with the same values, or slightly earlier): a duplicated message or an
  out-of-order sample, dropped.

Time is float seconds, as everywhere in the core; :data:`NS_PER_S` converts the
integer nanoseconds of the ROS boundary. Forward gaps are the concern of the
consumers: a step longer than ``gap_factor`` periods splits the data, never
interpolated (:class:`~dynamic_identification.core.identification.settings.SignalSettings`).

Forward, a regular stream (a driver publishing at a fixed rate) that loses messages on the
way leaves gaps of whole periods between its stamps: :class:`StampGaps` counts the samples
missing from them, and the interruptions (a driver that stopped), on integer nanoseconds.
"""

from __future__ import annotations

import statistics
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
    AGAIN = "again"
    RESTART = "restart"
    STALE = "stale"


def classify_stamp(stamp_s: float, latest_s: float, *, new_values: bool = False) -> Stamp:
    """The rule of the module docstring for one stamp; ``latest_s`` is ``-inf`` before the first, ``new_values``
    whether the sample's values differ from those of the latest sample accepted."""
    if stamp_s > latest_s:
        return Stamp.NEW
    if stamp_s == latest_s and new_values:
        return Stamp.AGAIN
    if stamp_s < latest_s - BACKWARD_JUMP_S:
        return Stamp.RESTART
    return Stamp.STALE


def accepted_samples(
    time_s: np.ndarray,
    values: np.ndarray | None = None,
    *,
    latest_s: float = -np.inf,
    latest_values: np.ndarray | None = None,
) -> np.ndarray:
    """Which rows of a run (no jump back) are samples by :func:`classify_stamp`, as a mask ``(N,)``.

    ``values`` ``(N,)`` or ``(N, n)`` are the rows' values (positions), ``latest_s`` and ``latest_values`` the latest
    sample accepted before these rows (none by default). A stamp later than every earlier one is new; one equal to
    the latest is a sample stamped again if its values differ from the latest accepted sample's, which are those of
    the last row under the latest stamp (a row there that was not accepted repeated them). Without ``values`` every
    repeated stamp is dropped.
    """
    time = np.asarray(time_s, dtype=float)
    latest = np.maximum.accumulate(np.concatenate([[latest_s], time]))
    accepted = time > latest[:-1]
    if values is None or accepted.all():
        return accepted
    rows = np.asarray(values, dtype=float).reshape(time.size, -1)
    # The last row under the latest stamp before each row (-1: the sample accepted before these rows).
    holds_latest = np.where(time == latest[1:], np.arange(time.size), -1)
    previous = np.concatenate([[-1], np.maximum.accumulate(holds_latest)[:-1]])
    known = previous >= 0
    reference = rows[np.maximum(previous, 0)]
    if latest_values is not None:
        reference[~known] = np.asarray(latest_values, dtype=float).reshape(-1)
        known[:] = True
    again = (time == latest[:-1]) & known & np.any(rows != reference, axis=1)
    return accepted | again


def jumped_back(stamp_ns: int, latest_ns: int | None) -> bool:
    """Whether an integer-nanosecond stamp restarts its stream (``latest_ns`` ``None`` before the first)."""
    return latest_ns is not None and stamp_ns < latest_ns - BACKWARD_JUMP_S * NS_PER_S


def chunk_end_s(origin_s: float, first_s: float, period_s: float) -> float:
    """End, s, of the chunk of samples that starts at ``first_s``, in a run of stamps that started at ``origin_s``.

    The chunks of a run (the samples between two updates of a sliding window) end on a
    grid of ``period_s`` from the run's first stamp: at the first point of it later than
    the chunk's first sample. A sample at or after the end belongs to the next chunk, so
    the updates fall at the same data times whatever the batches the samples came in
    (``dynid stream`` reads a whole recording, the estimator node a few samples at a time),
    and a gap of any length starts the next chunk at its first sample.
    """
    periods = float(np.floor((first_s - origin_s) / period_s)) + 1.0
    while origin_s + period_s * periods <= first_s:
        periods += 1.0
    return origin_s + period_s * periods


def stream_chunks(
    time_s: np.ndarray, period_s: float, values: np.ndarray | None = None
) -> Iterator[tuple[np.ndarray, bool]]:
    """Indices of consecutive chunks of ``period_s`` of data time, and whether a chunk restarts the stream.

    Applies :func:`classify_stamp` to every stamp of a recording: new stamps are kept (and,
    given the rows' ``values``, samples stamped again: :func:`accepted_samples`), a jump back
    restarts (the chunk starting there says so), stale stamps are dropped.
    The chunks of one run of accepted stamps end as :func:`chunk_end_s` says; a run's
    last chunk may be shorter. Chunks are found one by one, so a gap of any length
    costs nothing.
    """
    time = np.asarray(time_s, dtype=float)
    start = 0
    restarted = False
    while start < time.size:
        stop = _next_jump(time, start)
        run = start + np.flatnonzero(accepted_samples(time[start:stop], None if values is None else values[start:stop]))
        stamps = time[run]
        first = 0
        while first < run.size:
            last = int(np.searchsorted(stamps, chunk_end_s(float(stamps[0]), float(stamps[first]), period_s)))
            yield run[first:last], restarted
            restarted = False
            first = last
        start, restarted = stop, True


def _next_jump(time: np.ndarray, start: int) -> int:
    """Index of the first stamp after ``start`` earlier than the running latest by more than BACKWARD_JUMP_S."""
    latest = np.maximum.accumulate(time[start:])
    jumps = np.flatnonzero(time[start + 1 :] < latest[:-1] - BACKWARD_JUMP_S)
    return start + 1 + int(jumps[0]) if jumps.size else time.size


LEARN_STEPS = 64
"""Steps whose median is the first estimate of a stream's period (:class:`StampGaps`)."""

REFRESH_STEPS = 1024
"""Every this many steps :class:`StampGaps` compares the latest median with its period."""

GAP_FACTOR = 1.5
"""A step longer than this many periods is a gap (jitter alone stays below it)."""


GRID_DIVISORS = 8
"""The median step over 1 … this many is what :func:`_grid_period` tries as a stream's period."""

GRID_TOLERANCE = 0.05
"""A longer period is preferred whose steps fit its whole multiples within this many periods (mean) of the best."""


def _median_period(steps: list[int]) -> float:
    """The median step without the gaps (steps over ``GAP_FACTOR`` times the plain median), ns: a step that occurred,
    not the mean of two, since the median of steps of one and two periods is not a multiple of either."""
    rough = statistics.median_low(steps)
    return float(statistics.median_low([step for step in steps if step <= GAP_FACTOR * rough]))


def _grid_period(steps: list[int]) -> float:
    """The period of a regular stream from its steps, ns: the longest of the median step over 1 …
    :data:`GRID_DIVISORS` whose whole multiples the steps (but the longest gaps) fit within :data:`GRID_TOLERANCE`
    of the best fit (mean distance to the nearest multiple, in periods). A stream losing half its messages or more
    (a subscriber of a 5 kHz stream on a loaded machine) steps by two periods or more half the time: its median step
    is a multiple of its period, and taking it would count the lost messages as none."""
    median = _median_period(steps)
    fitted = np.asarray([step for step in steps if step <= 4 * GRID_DIVISORS * median], dtype=float)
    candidates = [_on_grid(fitted, median / divisor) for divisor in range(1, GRID_DIVISORS + 1)]
    misfits = [float(np.mean(np.abs(fitted / period - np.round(fitted / period)))) for period in candidates]
    best = min(misfits)
    return next(period for period, misfit in zip(candidates, misfits, strict=True) if misfit <= best + GRID_TOLERANCE)


def _on_grid(steps: np.ndarray, period: float) -> float:
    """``period`` (ns) refined on ``steps`` (ns): their sum over the whole periods they span, three times."""
    for _ in range(3):
        period = float(np.sum(steps) / np.sum(np.maximum(np.round(steps / period), 1.0)))
    return period


class StampGaps:
    """Counts samples missing from a regular stream.

    A robot driver publishes joint states and motor currents at a fixed rate, stamped by
    its control loop. A message lost on the way (a subscriber queue that overflowed, a
    publisher history overwritten before delivery, a congested network) leaves a gap of a
    whole number of periods between two consecutive stamps; ``round(gap / period) - 1``
    samples are counted missing for every gap longer than :data:`GAP_FACTOR` periods:
    exact for a stream whose stamps stay within a quarter of a period of its grid (±0.25 ms
    at 1 kHz), and independent of the transport (DDS gives rclpy's events executor no
    sequence numbers). A gap longer than ``max_gap_s`` is an *interruption* (the driver
    stopped), counted separately with its duration rather than as samples. Stamps are
    integer nanoseconds, as on the ROS side, so a period of 200 µs stays exact after years
    of stamps; steps that are zero or negative (repeated or out-of-order stamps) are not
    gaps and are left to the caller's counts.

    The period is the one of the first :data:`LEARN_STEPS` steps' grid (:func:`_grid_period`:
    the median step, or the fraction of it whose whole multiples the steps are when half the
    messages or more are lost), then the mean over every step so far, each counted as the
    whole number of periods it spans: a stamp's jitter does not accumulate on a grid, so the
    estimate converges to the driver's period and rounding a long gap stays exact. Every
    :data:`REFRESH_STEPS` steps the period of the latest ones is compared with it and, should
    the rate have changed by more than 10 %, replaces it.

    Parameters
    ----------
    max_gap_s
        Longest gap counted as missing samples, s; a longer one is an interruption.
    """

    def __init__(self, *, max_gap_s: float = 1.0) -> None:
        if not max_gap_s > 0.0:
            raise ValueError(f"max_gap_s must be > 0, got {max_gap_s!r}")
        self.max_gap_ns = max_gap_s * 1e9
        self.missing = 0
        self.gaps = 0
        self.interruptions = 0
        self.interrupted_s = 0.0
        self.largest_gap_s = 0.0
        self._period_ns: float | None = None
        self._span_ns = 0
        self._span_periods = 0
        self._steps: list[int] = []
        self._last: int | None = None

    @property
    def period_s(self) -> float | None:
        """The stream's period, s, once learnt."""
        return None if self._period_ns is None else self._period_ns / 1e9

    def reset(self) -> None:
        """Forget the last stamp (a jump back: a bag loop, a clock reset); counts and period are kept."""
        self._last = None

    def add(self, stamp_ns: int) -> int:
        """Take the next stamp; the samples found missing before it (usually 0)."""
        last, self._last = self._last, stamp_ns
        if last is None:
            return 0
        step = stamp_ns - last
        if step <= 0:
            self._last = last if step < 0 else stamp_ns
            return 0
        if self._period_ns is None:
            self._steps.append(step)
            if len(self._steps) < LEARN_STEPS:
                return 0
            return self._learn()
        self._steps.append(step)
        if len(self._steps) >= REFRESH_STEPS:
            latest = _grid_period(self._steps)
            if abs(latest - self._period_ns) > 0.1 * self._period_ns:  # the rate changed: start from the latest
                count = len(self._steps)
                self._period_ns, self._span_ns, self._span_periods = latest, round(latest * count), count
            self._steps.clear()
        return self._count(step)

    def _learn(self) -> int:
        """Period of the learnt steps (median, then twice the mean over whole periods), and their gaps."""
        learnt, self._steps = self._steps, []
        period = _grid_period(learnt)
        regular = [step for step in learnt if step <= self.max_gap_ns]
        for _ in range(2):
            periods = [max(round(step / period), 1) for step in regular]
            period = sum(regular) / sum(periods)
        self._period_ns, self._span_ns, self._span_periods = period, sum(regular), sum(periods)
        return sum(self._count(step, learn=False) for step in learnt)

    def _count(self, step: int, *, learn: bool = True) -> int:
        period = self._period_ns
        if period is None:
            return 0
        if step > self.max_gap_ns:
            seconds = step / 1e9
            self.largest_gap_s = max(self.largest_gap_s, seconds)
            self.interruptions += 1
            self.interrupted_s += seconds
            return 0
        periods = max(round(step / period), 1)
        if learn:
            self._span_ns += step
            self._span_periods += periods
            self._period_ns = self._span_ns / self._span_periods
        if step <= GAP_FACTOR * period:
            return 0
        self.largest_gap_s = max(self.largest_gap_s, step / 1e9)
        self.gaps += 1
        self.missing += periods - 1
        return periods - 1


__all__ = [
    "BACKWARD_JUMP_S",
    "NS_PER_S",
    "Stamp",
    "StampGaps",
    "accepted_samples",
    "chunk_end_s",
    "classify_stamp",
    "jumped_back",
    "stream_chunks",
]
