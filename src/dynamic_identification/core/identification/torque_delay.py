"""The delay of the torques (currents) behind the positions, measured by the IDIM fit ([Gautier2013] eq. (13)-(14)).

A driver takes its torque or current at some instant relative to its positions: a torque sensor's reading at
the sample, a current loop's average over the last period (half a period late), a command held for the next
period (half a period early), a drive's current filter (a first-order lag of τ: τ late), a bus cycle, or a
second topic whose stamps are late. Torques read ``δ`` late fit the motion's inverse dynamics at ``t − δ``, not at
``t``: the residual of the least-squares fit of the decimated rows grows with ``|δ|``. Reading the torques ``δ``
later (:class:`LateRows`: the decimation filter's output between the samples) and fitting again, the
residual as a function of the shift has its minimum at the delay (:func:`estimate_torque_delay`). The scan spans
:data:`DELAY_RANGE_PERIODS` sample periods: half-period averaging and one-period commands, drive filters, bus
cycles and late stamps of a few periods. The uncertainty is the jackknife of the minimum over :data:`BLOCKS`
blocks of rows in time, which holds for the residuals of filtered, decimated rows, correlated in time (the
white-noise curvature is several times too small there). The torques are aligned only when the delay lies
:data:`SIGNIFICANCE` σ away from 0, inside the scanned range: otherwise they are taken as recorded, and the
reason says so. The delay is measured on the first :data:`MEASURED_DATA_S` of motion (rows with an equation) and
applied to all of it (:func:`measured_and_aligned`; a sliding window: to its rows from then on). Figures:
``bench/HISTORY.md``, "The torques' delay behind the positions".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dynamic_identification.core.signal.filters import LinearResampling, ParallelDecimator, lowpass_zero_phase

DELAY_RANGE_PERIODS = (-3.0, 10.0)
"""The delays scanned, in sample periods of the grid: from a command held for the next period or two to a drive's
current filter, bus cycles or a second topic's late stamps of up to ten periods (10 ms at 1 kHz); the minimum is
found half a period inside either end."""

DELAY_STEP_PERIODS = 0.25
"""The scan's step, sample periods; the minimum is the vertex of the parabola through the five nearest shifts."""

SIGNIFICANCE = 3.0
"""The torques are aligned only when the delay lies this many of its σ (jackknife) away from 0."""

BLOCKS = 10
"""Blocks of rows in time the jackknife leaves out one at a time."""

MEASURED_DATA_S = 60.0
"""The delay is measured on the first this many seconds of rows with an equation (of motion;
:func:`measured_and_aligned`, the sliding window): a minute measures a delay to a fraction of a sample period, and a
long recording's torques are decimated once more instead of at every shift of the scan."""

BLOCK_OUTPUTS = 4096
"""Rows :meth:`LateRows.whole` decimates at a time."""

MIN_ROWS_PER_BLOCK = 4
"""Fewer decimated rows (equations per joint) than this in a block leave the delay unmeasured."""


@dataclass(frozen=True)
class TorqueDelay:
    """The torques' delay behind the positions and whether they are aligned (:func:`estimate_torque_delay`).

    ``delay_s`` (s, positive: the torques are late) is the minimum of the fit's residual over the shifts,
    ``std_s`` (s) its jackknife σ (``nan`` when undetermined), ``residual_ratio`` the fit's residual at the delay
    over that at 0, ``period_s`` the grid's sample period, ``applied`` whether the torques are aligned, ``note``
    why not (empty when they are).
    """

    delay_s: float
    std_s: float
    residual_ratio: float
    period_s: float
    applied: bool
    note: str = ""

    @property
    def applied_delay_s(self) -> float:
        """The delay the torques are read with, s: :attr:`delay_s` when aligned, else 0."""
        return self.delay_s if self.applied else 0.0

    def reason(self) -> str:
        """One line: the delay found and what was done with it."""
        side = "behind" if self.delay_s >= 0.0 else "ahead of"
        found = (
            f"{1e3 * abs(self.delay_s):.2g} ± {1e3 * self.std_s:.2g} ms ({abs(self.delay_s) / self.period_s:.2g} sample"
            f" periods) {side} the positions"
        )
        if self.applied:
            return (
                f"torque delay: {found}, the torques aligned (the fit's residual"
                f" {100 * (self.residual_ratio - 1.0):+.2g} %)"
            )
        if np.isnan(self.std_s):
            return f"torque delay: none ({self.note})"
        return f"torque delay: none ({found}: {self.note})"


class LateRows:
    """The decimated rows of signals on a uniform grid read late: ``rows(delay_samples)`` ``(r, m)``.

    ``segments`` are the signals ``(N_s, m)`` of each segment; the rows are the decimator's outputs of every
    segment whole (:meth:`~.signal.ParallelDecimator.decimate`), in order. Read ``delay_samples`` (grid samples,
    fractional, within :data:`DELAY_RANGE_PERIODS`) later, a row is the decimation filter's output at its index
    plus the delay: the outputs at the four nearest whole samples (the signal's ends held), interpolated by the
    cubic through them (:meth:`weights`), which the filter's band-limited output allows (in the motion's band, below
    a tenth of the rate, to 1e-5). A whole delay reads the decimator's own outputs (:meth:`whole`), computed when
    first needed and kept.
    """

    LOWEST = int(np.floor(DELAY_RANGE_PERIODS[0])) - 1
    """The earliest whole shift a read within the range combines, samples."""
    HIGHEST = int(np.ceil(DELAY_RANGE_PERIODS[1])) + 2
    """The latest, samples."""

    def __init__(self, decimator: ParallelDecimator, segments: Sequence[np.ndarray | LinearResampling]) -> None:
        self._decimator = decimator
        self._segments = [
            signals if isinstance(signals, LinearResampling) else np.asarray(signals, dtype=float)
            for signals in segments
        ]
        self._width = self._segments[0].shape[1] if self._segments else 0
        self._outputs: dict[int, np.ndarray] = {}

    def whole(self, shift: int) -> np.ndarray:
        """The rows read ``shift`` (whole) samples later, ``(r, m)``: decimated :data:`BLOCK_OUTPUTS` rows at a time
        from the samples they need, never a shifted copy of a whole segment (29 MB for 600 k samples of 6 joints)."""
        if shift not in self._outputs:
            decimator, half = self._decimator, self._decimator.half_length
            rows = []
            for values in self._segments:
                outputs = decimator.output_indices(values.shape[0])
                for first in range(0, outputs.size, BLOCK_OUTPUTS):
                    block = outputs[first : first + BLOCK_OUTPUTS]
                    start = int(block[0]) - half
                    read = read_shifted(values, slice(start, int(block[-1]) + half + 1), shift)
                    rows.append(decimator.decimate(read, start=start)[0])
            self._outputs[shift] = np.concatenate(rows) if rows else np.empty((0, self._width))
        return self._outputs[shift]

    @classmethod
    def weights(cls, delay_samples: float) -> tuple[int, np.ndarray]:
        """The first of the four whole shifts a read ``delay_samples`` late combines, and their cubic weights."""
        whole = int(np.floor(delay_samples))
        if whole - 1 < cls.LOWEST or whole + 2 > cls.HIGHEST:
            raise ValueError(f"delay_samples must lie within {DELAY_RANGE_PERIODS}, got {delay_samples}")
        u = float(delay_samples) - whole
        weights = (
            -u * (u - 1.0) * (u - 2.0) / 6.0,
            (u + 1.0) * (u - 1.0) * (u - 2.0) / 2.0,
            -(u + 1.0) * u * (u - 2.0) / 2.0,
            (u + 1.0) * u * (u - 1.0) / 6.0,
        )
        return whole - 1, np.array(weights)

    def __call__(self, delay_samples: float) -> np.ndarray:
        return read_between(delay_samples, self.whole)


WHOLE_SHIFTS = np.arange(LateRows.LOWEST, LateRows.HIGHEST + 1)
"""The whole shifts, samples, whose reads the scan combines (:class:`DelaySums`)."""


def read_shifted(values: np.ndarray | LinearResampling, block: slice, shift: int) -> np.ndarray:
    """The samples ``values[block]`` (``(N, m)``, a block of grid samples) read ``shift`` (whole) samples later, the
    ends of ``values`` held; of ``values`` only the rows read are taken (a recording's torques read on the grid
    where they are used, :class:`~dynamic_identification.core.signal.filters.LinearResampling`)."""
    read = np.clip(np.arange(block.start, block.stop) + shift, 0, values.shape[0] - 1)
    if not read.size:
        return values[0:0]
    first = int(read[0])
    return values[first : int(read[-1]) + 1][read - first]


def filtered_whole_shifts(values: np.ndarray, positions: np.ndarray, taps: np.ndarray) -> np.ndarray:
    """The centred FIR ``taps`` (odd length ``2h + 1``, a decimator's) applied to ``values`` ``(N, m)`` read at each of
    :data:`WHOLE_SHIFTS` later (the ends of ``values`` held), at the grid indices ``positions`` ``(R,)`` only:
    ``(R, m, s)``, ``out[r, :, k] = Σ_j taps[j] · values[positions[r] + WHOLE_SHIFTS[k] + j − h]``, what decimating the
    shifted reads of :func:`read_shifted` gives at those outputs.

    Each output gathers its ``2h + s`` samples once and one product with the banded matrix of the taps at every shift
    filters them: a sliding window's rows with an equation are a fraction of its block, which decimating the block
    whole at every shift would copy and filter seventeen times.
    """
    half, shifts = taps.size // 2, WHOLE_SHIFTS.size
    banded = np.zeros((shifts, taps.size + shifts - 1))
    for k in range(shifts):
        banded[k, k : k + taps.size] = taps
    span = np.arange(WHOLE_SHIFTS[0] - half, WHOLE_SHIFTS[-1] + half + 1)
    read = np.clip(np.asarray(positions)[:, None] + span[None, :], 0, values.shape[0] - 1)
    return np.matmul(banded, values[read]).transpose(0, 2, 1)


def read_between(delay_samples: float, read_whole: Callable[[int], np.ndarray]) -> np.ndarray:
    """A read ``delay_samples`` (fractional) late from the reads ``read_whole(shift)`` at whole shifts: the cubic of
    :meth:`LateRows.weights` through the four nearest (the read itself at a whole delay)."""
    first, cubic = LateRows.weights(delay_samples)
    if cubic[1] == 1.0:
        return read_whole(first + 1)
    return np.tensordot(cubic, np.stack([read_whole(first + k) for k in range(4)]), axes=1)


def read_late_on_grid(values: np.ndarray, block: slice, delay_samples: float) -> np.ndarray:
    """The samples ``values[block]`` read ``delay_samples`` (fractional) later (:func:`read_between` of
    :func:`read_shifted`). Decimated, these are :class:`LateRows`' rows (the decimation is linear); a stream reads its
    grid's torques so before it decimates them (the sliding window)."""
    return read_between(delay_samples, lambda shift: read_shifted(values, block, shift))


def measured_rows(rate_hz: float, decimation: int) -> int:
    """The decimated rows with an equation the delay is measured on: :data:`MEASURED_DATA_S` of them at ``rate_hz``
    (Hz, the grid's) decimated by ``decimation``."""
    return int(np.ceil(MEASURED_DATA_S * float(rate_hz) / decimation))


def delay_blocks(positions: np.ndarray, count: int) -> np.ndarray:
    """The block (``0 … BLOCKS − 1``) of each of the measured rows with an equation at ``positions`` (``0 …
    count − 1``, in time order) among ``count``: row ``k`` in block ``k · BLOCKS // count``."""
    return np.asarray(positions) * BLOCKS // count


def window_reason(delay: TorqueDelay) -> str:
    """One line: the delay a sliding window measured on its first :data:`MEASURED_DATA_S` of rows with an equation
    (of motion) and what it did with it
    (:class:`~dynamic_identification.core.identification.in_process.SlidingWindowEstimator`)."""
    scope = f", measured on the window's first {MEASURED_DATA_S:g} s of motion"
    return delay.reason() + scope + (": its rows read the torques so from then on" if delay.applied else "")


def in_band(signals: np.ndarray, *, cutoff_hz: float | None, rate_hz: float) -> np.ndarray:
    """The grid's torques ``(N, m)`` the scan compares, low-passed by the positions' filter (``cutoff_hz``, Hz;
    ``None``: unfiltered, as the positions then are): above the motion's band the rows model nothing, and noise
    there, read between samples, is smoothed by the interpolation, which draws the residual's minimum towards half a
    sample (a 100 Hz log with current noise to 15 Hz read 0.4 periods ahead, to 30 Hz 0.47 behind, torques in
    time)."""
    if not cutoff_hz:
        return signals
    return lowpass_zero_phase(signals, cutoff_hz=cutoff_hz, rate_hz=rate_hz)


def read_late(time: np.ndarray, values: np.ndarray, delay_s: float) -> np.ndarray:
    """``values`` ``(N, m)`` sampled at ``time`` (s, non-decreasing) read ``delay_s`` later, linearly between the
    samples and held at the ends: recorded torques in time with the motion their model predicts at ``time``. A delay
    of 0 (torques taken as recorded) reads the values themselves."""
    stamps = np.asarray(time, dtype=float)
    signals = np.asarray(values, dtype=float).reshape(stamps.size, -1)
    if not delay_s:
        return signals
    return np.column_stack([np.interp(stamps + delay_s, stamps, column) for column in signals.T])


def later_text(delay_s: float) -> str:
    """How much later (or earlier) recorded torques are read with a delay of ``delay_s`` (s): "3 ms later"."""
    return f"{1e3 * abs(delay_s):.2g} ms {'later' if delay_s > 0 else 'earlier'}"


def measured_and_aligned(
    decimator: ParallelDecimator,
    segments: Sequence[np.ndarray | LinearResampling],
    observation_matrix: np.ndarray,
    valid: np.ndarray,
    torques: np.ndarray,
    *,
    rate_hz: float,
    cutoff_hz: float | None = None,
) -> tuple[TorqueDelay, np.ndarray]:
    """The delay of :func:`estimate_torque_delay` on the first :data:`MEASURED_DATA_S` of rows with an equation (of
    motion: a recording that starts at rest is measured on its first minute of motion, as a sliding window is) of the
    segments' signals ``(N_s, m)``, and the decimated torques of every row read with it ``(r, m)`` (``torques``
    themselves when not aligned): a long recording costs one more decimation of its torques, not the scan's.

    With ``cutoff_hz`` (the positions' low-pass, Hz) the scan reads the torques low-passed alike (:func:`in_band`).
    """
    moving = np.cumsum(np.asarray(valid, dtype=bool).any(axis=1))
    needed = measured_rows(rate_hz, decimator.factor)
    left = min(int(np.searchsorted(moving, needed)) + 1, moving.size)
    # Filtered a few cut-off periods beyond a cut, so that its end is not a filter's edge.
    margin = int(np.ceil(4.0 * float(rate_hz) / cutoff_hz)) if cutoff_hz else 0
    measured = []
    for signals in segments:
        if left <= 0:
            break
        outputs = decimator.output_indices(signals.shape[0])
        # A segment cut a sample after its last measured row's support has those rows for its outputs.
        end = signals.shape[0] if outputs.size <= left else int(outputs[left - 1]) + decimator.half_length + 1
        measured.append(in_band(signals[: end + margin], cutoff_hz=cutoff_hz, rate_hz=rate_hz)[:end])
        left -= outputs.size
    late = LateRows(decimator, measured)
    rows = late(0.0).shape[0]
    delay = estimate_torque_delay(observation_matrix[:rows], valid[:rows], late, rate_hz=rate_hz)
    if not delay.applied:
        return delay, torques
    return delay, LateRows(decimator, segments)(delay.applied_delay_s * float(rate_hz))


def estimate_torque_delay(
    observation_matrix: np.ndarray,
    valid: np.ndarray,
    late: LateRows,
    *,
    rate_hz: float,
) -> TorqueDelay:
    """The delay of the torques behind the motion that minimises the residual of the IDIM's rows (module docstring).

    Parameters
    ----------
    observation_matrix
        ``W`` ``(r, n, b)`` of the decimated rows, in time order.
    valid
        ``(r, n)``: the equations used.
    late
        The decimated torques ``(r, n)`` of the same rows read late (:class:`LateRows`).
    rate_hz
        The grid's sample rate, Hz.

    The rows with an equation are cut into :data:`BLOCKS` blocks of as many rows and summed (:class:`DelaySums`), each
    block's torques read at every whole shift only while it is summed.
    """
    w = np.asarray(observation_matrix, dtype=float)
    mask = np.asarray(valid, dtype=bool)
    held = np.flatnonzero(mask.any(axis=1))
    if held.size < BLOCKS * MIN_ROWS_PER_BLOCK:
        return TorqueDelay(
            0.0,
            float("nan"),
            1.0,
            1.0 / float(rate_hz),
            False,
            f"{held.size} decimated rows with an equation are too few to measure it",
        )
    sums = DelaySums(mask.shape[1], w.shape[2])
    blocks = delay_blocks(np.arange(held.size), held.size)
    for block in range(BLOCKS):
        rows = held[blocks == block]
        reads = np.stack([late.whole(int(shift))[rows] for shift in WHOLE_SHIFTS], axis=2)
        sums.add(block, w[rows], mask[rows], reads)
    return sums.delay(rate_hz=rate_hz)


class DelaySums:
    """What :func:`estimate_torque_delay` needs of the rows, summed per block of rows in time and per joint: each
    block's normal matrix, its equations' products with the torques read at each of :data:`WHOLE_SHIFTS`, those
    torques' own products, and its equations' count. A recording adds its blocks at once, a stream (the sliding
    window) its rows as they come; :meth:`delay` decides.
    """

    def __init__(self, n_joints: int, n_parameters: int) -> None:
        shifts = WHOLE_SHIFTS.size
        self._grams = np.zeros((BLOCKS, n_joints, n_parameters, n_parameters))
        self._products = np.zeros((BLOCKS, n_joints, shifts, n_parameters))
        self._squares = np.zeros((BLOCKS, n_joints, shifts, shifts))
        self._counts = np.zeros((BLOCKS, n_joints))

    def add(self, block: int, observation_matrix: np.ndarray, valid: np.ndarray, reads: np.ndarray) -> None:
        """Add rows ``W`` ``(r, n, b)``, their equations used ``valid`` ``(r, n)`` and their decimated torques read at
        each of :data:`WHOLE_SHIFTS` ``(r, n, s)`` to block ``block`` (``0 … BLOCKS − 1``, in time order)."""
        mask = np.asarray(valid, dtype=float)
        # Per joint, (b, r) and (s, r): batched products, as NormalEquations.from_rows.
        equations = (observation_matrix * mask[:, :, None]).transpose(1, 2, 0)
        torques = (reads * mask[:, :, None]).transpose(1, 2, 0)
        self._grams[block] += np.matmul(equations, equations.transpose(0, 2, 1))
        self._products[block] += np.matmul(torques, equations.transpose(0, 2, 1))
        self._squares[block] += np.matmul(torques, torques.transpose(0, 2, 1))
        self._counts[block] += mask.sum(axis=0)

    def delay(self, *, rate_hz: float) -> TorqueDelay:
        """The delay of the sums' rows, ``rate_hz`` the grid's sample rate, Hz.

        The equations are weighted per joint by the root mean square of their residual at no delay (the weights of
        the per-joint least squares, [Gautier2013] eq. (20)), the same at every shift, so the residuals compare. A
        read at any shift is a combination of reads at whole shifts (:meth:`LateRows.weights`): the residual at
        every shift of the scan, with all blocks and without each, comes from the blocks' sums.
        """
        period = 1.0 / float(rate_hz)
        joints = self._counts.shape[1]
        if self._counts.sum(axis=1).min() < MIN_ROWS_PER_BLOCK * joints:
            return TorqueDelay(0.0, float("nan"), 1.0, period, False, "too few equations in a tenth of the rows")
        shifts = np.arange(
            DELAY_RANGE_PERIODS[0], DELAY_RANGE_PERIODS[1] + 0.5 * DELAY_STEP_PERIODS, DELAY_STEP_PERIODS
        )
        zero = int(np.flatnonzero(WHOLE_SHIFTS == 0)[0])
        # The unweighted fit at no delay only sets the joints' weights: its normal equations, columns scaled to unit
        # norm, and each joint's residual from its sums.
        joint_grams = self._grams.sum(axis=0)
        joint_moments = self._products[:, :, zero].sum(axis=0)
        normal = joint_grams.sum(axis=0)
        norms = np.sqrt(np.diag(normal))
        norms[norms == 0.0] = 1.0
        solution = np.linalg.lstsq(normal / np.outer(norms, norms), joint_moments.sum(axis=0) / norms, rcond=None)[0]
        solution /= norms
        squared = (
            self._squares[:, :, zero, zero].sum(axis=0)
            - 2.0 * joint_moments @ solution
            + np.einsum("jpq,p,q->j", joint_grams, solution, solution)
        )
        scale = np.sqrt(np.maximum(squared, 0.0) / np.maximum(self._counts.sum(axis=0), 1.0))
        weights = 1.0 / np.where(scale > 0.0, scale, 1.0) ** 2
        grams = np.einsum("j,gjpq->gpq", weights, self._grams)
        products = np.einsum("j,gjwp->gwp", weights, self._products)
        squares = np.einsum("j,gjwv->gwv", weights, self._squares)
        combination = np.zeros((shifts.size, WHOLE_SHIFTS.size))
        for k, shift in enumerate(shifts):
            first, cubic = LateRows.weights(float(shift))
            combination[k, first - LateRows.LOWEST : first - LateRows.LOWEST + 4] = cubic
        projections = np.einsum("kw,gwp->kgp", combination, products)
        block_squares = np.einsum("kw,gwv,kv->kg", combination, squares, combination)
        total = grams.sum(axis=0)
        inverses = np.array([np.linalg.pinv(total - gram, hermitian=True) for gram in grams])
        inverse = np.linalg.pinv(total, hermitian=True)
        curves = np.empty((BLOCKS + 1, shifts.size))
        for k in range(shifts.size):
            h = projections[k].sum(axis=0)
            all_squares = block_squares[k].sum()
            curves[BLOCKS, k] = all_squares - h @ inverse @ h
            left = h[None, :] - projections[k]
            curves[:BLOCKS, k] = all_squares - block_squares[k] - np.einsum("gi,gij,gj->g", left, inverses, left)
        return _delay_of_curves(shifts, curves, period)


def _delay_of_curves(shifts: np.ndarray, curves: np.ndarray, period: float) -> TorqueDelay:
    """The delay at the minimum of the residual over ``shifts`` (sample periods of ``period`` s) with all blocks of
    rows (``curves[BLOCKS]``), its jackknife σ from the minima without each (``curves[:BLOCKS]``), and the decision."""
    minimum = _vertex(shifts, curves[BLOCKS])
    if minimum is None:
        return TorqueDelay(
            0.0,
            float("nan"),
            1.0,
            period,
            False,
            f"the fit's residual has no minimum within {DELAY_RANGE_PERIODS[0]:g}…{DELAY_RANGE_PERIODS[1]:g} sample"
            " periods",
        )
    left_out = [_vertex(shifts, curves[g]) for g in range(BLOCKS)]
    zero = int(np.argmin(np.abs(shifts)))
    ratio = float(np.interp(minimum, shifts, curves[BLOCKS]) / curves[BLOCKS, zero])
    if any(value is None for value in left_out):
        return TorqueDelay(
            minimum * period,
            float("nan"),
            ratio,
            period,
            False,
            f"undetermined: without one block of rows the fit's residual has no minimum within the range, found at"
            f" {1e3 * minimum * period:.2g} ms with all",
        )
    values = np.array(left_out, dtype=float)
    spread = float(np.sqrt((BLOCKS - 1) / BLOCKS * np.sum((values - values.mean()) ** 2)))
    delay, std = minimum * period, spread * period
    if abs(minimum) < SIGNIFICANCE * spread:
        return TorqueDelay(delay, std, ratio, period, False, f"within {SIGNIFICANCE:g} σ of 0: in time with them")
    return TorqueDelay(delay, std, ratio, period, True)


def _vertex(shifts: np.ndarray, curve: np.ndarray) -> float | None:
    """The minimum of ``curve`` over ``shifts``: the vertex of the parabola through the five samples around its
    smallest; ``None`` when that lies at an end of the scan or the parabola opens downwards."""
    smallest = int(np.argmin(curve))
    if smallest < 2 or smallest > shifts.size - 3:
        return None
    near = slice(smallest - 2, smallest + 3)
    curvature, slope, _ = np.polyfit(shifts[near], curve[near], 2)
    if curvature <= 0.0:
        return None
    return float(np.clip(-slope / (2.0 * curvature), shifts[smallest - 2], shifts[smallest + 2]))


__all__ = [
    "BLOCKS",
    "DELAY_RANGE_PERIODS",
    "WHOLE_SHIFTS",
    "DelaySums",
    "delay_blocks",
    "measured_rows",
    "read_between",
    "DELAY_STEP_PERIODS",
    "MEASURED_DATA_S",
    "SIGNIFICANCE",
    "TorqueDelay",
    "LateRows",
    "estimate_torque_delay",
    "filtered_whole_shifts",
    "in_band",
    "measured_and_aligned",
    "later_text",
    "read_late",
    "read_late_on_grid",
    "read_shifted",
    "window_reason",
]
