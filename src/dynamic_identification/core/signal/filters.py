"""Signal processing for identification data: stamps, resampling, filtering, derivatives, decimation.

Samples are rows (axis 0) and time is float seconds, as everywhere in the core.

Cut-off choices ([Gautier2013] §IV.A)
--------------------------------
Only joint positions ``q`` are measured; velocities and accelerations are estimated from
them. The positions are low-passed with a zero-phase Butterworth filter whose cut-off is
*well above the bandwidth of the robot's motion* (so the filter leaves the dynamics
untouched: a 4th-order filter applied forwards and backwards changes a component at a
tenth of the cut-off by about 1e-8) and *below the frequencies where the encoder noise
and quantisation dominate*. Differentiating the low-passed position by central
differences then gives ``q̇`` and ``q̈`` whose noise is bounded by the cut-off: the
derivative of a low-passed signal is a *band-pass derivative*, the "band-pass
filtering of the measure of q" of [Gautier2013] §IV.A. A usual choice is a cut-off of
about 5 to 10 times the highest frequency of the trajectory (for example 20 Hz for
motions below 2 Hz recorded at 1 kHz).

The torques ``Y`` still contain high-frequency torque ripple, and the observation
matrix ``W`` built from ``(q̂, q̇̂, q̈̂)`` is sampled much faster than the dynamics
require. *Parallel decimation* ([Gautier2013] eq. (13)-(14)) applies the same linear-phase
FIR low-pass and the same down-sampling to ``Y`` and to every column of ``W``: since
both operations are linear, ``Y = W χ + ρ`` keeps holding on the decimated samples,
while the ripple is removed and the identification frequency range is windowed into
the model dynamics. The filter is the one of Matlab's / SciPy's ``decimate`` with
``ftype='fir'`` (see :func:`decimation_taps`); it is applied centred (zero phase),
so decimated ``Y`` and ``W`` stay aligned in time with the original samples.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np
import scipy.ndimage
from numpy.lib.stride_tricks import as_strided

from dynamic_identification.core.checks import integer_at_least, positive_finite
from dynamic_identification.core.errors import DataError
from dynamic_identification.core.settings_schema import default
from dynamic_identification.core.signal.stamps import Stamp, accepted_samples, classify_stamp

# scipy.signal and scipy.interpolate (half a second of imports with the scipy.stats and scipy.optimize they load)
# are imported in the functions that use them: a node that never filters or resamples (the recorder) starts
# without them (issue 26).

DEFAULT_GAP_FACTOR: float = default("signal.gap_factor")
"""Stamp steps up to this many nominal periods are always bridged (the default of ``signal.gap_factor``)."""

BRIDGE_CUTOFF_PERIODS = 0.25
"""Stamp steps up to this fraction of a period of the position cut-off are bridged too (:func:`longest_bridge_s`)."""

__all__ = [
    "BRIDGE_CUTOFF_PERIODS",
    "LinearResampling",
    "ParallelDecimator",
    "StampReport",
    "clean_time_stamps",
    "decimation_taps",
    "default_decimation",
    "derivatives_at",
    "differentiate",
    "filter_positions",
    "linear_resampling",
    "longest_bridge_s",
    "lowpass_to_edges",
    "lowpass_zero_phase",
    "parallel_decimate",
    "resample_uniform",
]

_INTERPOLATION_KINDS = ("cubic", "local_cubic", "linear")


def _check_cutoff(cutoff_hz: float, rate_hz: float, *, name: str = "cutoff_hz") -> tuple[float, float]:
    """Validate a low-pass cut-off (argument ``name``) against the Nyquist frequency ``rate_hz / 2``."""
    rate = positive_finite("rate_hz", rate_hz)
    cutoff = positive_finite(name, cutoff_hz)
    if cutoff >= 0.5 * rate:
        raise ValueError(f"{name}={cutoff_hz!r} must be below the Nyquist frequency rate_hz/2={0.5 * rate!r}")
    return cutoff, rate


def _time_vector(time: np.ndarray) -> np.ndarray:
    """Return ``time`` as a finite 1-D float array, or raise :class:`DataError`."""
    t = np.asarray(time, dtype=float)
    if t.ndim != 1:
        raise DataError(f"time must be one-dimensional, got shape {t.shape}")
    bad = np.flatnonzero(~np.isfinite(t))
    if bad.size:
        raise DataError(f"time[{bad[0]}] is not finite ({t[bad[0]]!r})")
    return t


@dataclass(frozen=True)
class StampReport:
    """Result of cleaning time stamps (see :func:`clean_time_stamps`).

    Attributes
    ----------
    keep : numpy.ndarray
        Increasing integer indices of the rows kept (repeated stamps removed).
    duplicates_dropped : int
        Number of rows whose stamp equals the previous kept stamp.
    repeated_stamps : int
        Number of rows kept though their stamp equals their predecessor's: samples of their own
        (their values differ), stamped again with the last stamp (only with ``values``).
    stale_dropped : int
        Number of rows dropped because their stamp is earlier than one before them (stale or out of
        order, by less than :data:`~.stamps.BACKWARD_JUMP_S`).
    segments : tuple of (int, int)
        ``[start, stop)`` ranges into the *kept* rows, split where the step between two
        kept stamps exceeds ``gap_factor * nominal_dt``. Each segment is a contiguous
        recording that can be filtered and differentiated on its own.
    nominal_dt : float
        Median of the positive stamp differences, s.
    """

    keep: np.ndarray
    duplicates_dropped: int
    segments: tuple[tuple[int, int], ...]
    nominal_dt: float
    repeated_stamps: int = 0
    stale_dropped: int = 0


def longest_bridge_s(period_s: float, *, gap_factor: float, cutoff_hz: float | None) -> float:
    """The longest stamp step, s, that a segment bridges by interpolation; a longer one is a gap.

    A real driver's loop misses a few cycles every few seconds (a 1 kHz log with an 8.5 ms
    step every 3-7 s). Interpolating the positions across such a hiccup before the
    zero-phase low-pass changes nothing the filter passes: the interpolation's error lives
    at the hiccup's time scale, above the cut-off, as long as the step is short against the
    cut-off's period. Cutting the segment there instead would lose the filter margins on both
    sides (hundreds of samples) at every hiccup. So a step is bridged up to the longer of
    ``gap_factor`` periods and :data:`BRIDGE_CUTOFF_PERIODS` of a period of the position
    cut-off ``cutoff_hz`` (12.5 ms at 20 Hz, 125 ms at 2 Hz); only a longer step, one that
    matters for the filter, is a gap. ``cutoff_hz`` ``None`` (no filter): ``gap_factor``
    periods only.
    """
    bridge = float(gap_factor) * float(period_s)
    if cutoff_hz:
        bridge = max(bridge, BRIDGE_CUTOFF_PERIODS / float(cutoff_hz))
    return bridge


def clean_time_stamps(
    time: np.ndarray, *, gap_factor: float = DEFAULT_GAP_FACTOR, bridge_s: float = 0.0, values: np.ndarray | None = None
) -> StampReport:
    """Check time stamps, drop repeated and stale ones and split the recording at gaps.

    Jitter is normal and accepted; a stamp equal to its predecessor is a repeated
    message (the first is kept, the rest counted); a stamp earlier than one before it, by less
    than :data:`~.stamps.BACKWARD_JUMP_S`, is a stale or out-of-order row, dropped and counted
    as every stream drops it (:func:`~.stamps.accepted_samples`: sorting would put a sample's
    positions out of their order); a stamp earlier by more is a recording that starts again, an
    error that says how to go on.

    Given the rows' ``values`` (e.g. the positions), a repeated stamp is a repeated message only
    when its values repeat too: a row of new values under its predecessor's stamp is a sample of
    its own that the driver stamped again (a stall, a millisecond counter that two samples read
    alike) and is kept, counted in ``repeated_stamps``. Its stamp says nothing of its instant,
    but its place in the sample order does (:func:`recover_stamps`); dropping it would leave a
    sample missing from that order, which the recovery spreads over a hundred samples.

    Parameters
    ----------
    time : numpy.ndarray
        Stamps, shape ``(N,)``, s.
    gap_factor : float, optional
        A step larger than ``gap_factor`` times the nominal period (and than ``bridge_s``)
        starts a new segment. Must be > 1.
    bridge_s : float, optional
        Steps up to this long, s, are bridged whatever ``gap_factor`` says
        (:func:`longest_bridge_s`).
    values : numpy.ndarray, optional
        The rows' values, shape ``(N,)`` or ``(N, n)``: rows under a repeated stamp whose values
        differ from their predecessor's are kept (the kept stamps then only non-decreasing).

    Returns
    -------
    StampReport
        Kept rows, number of duplicates and stale rows, segments and nominal period.

    Raises
    ------
    DataError
        If a stamp is not finite, there are fewer than two distinct stamps, or a
        stamp is :data:`~.stamps.BACKWARD_JUMP_S` or more earlier than one before it.
    ValueError
        If ``gap_factor`` is not a finite number > 1.
    """
    factor = float(gap_factor)
    if not np.isfinite(factor) or factor <= 1.0:
        raise ValueError(f"gap_factor must be finite and > 1, got {gap_factor!r}")
    t = _time_vector(time)
    if t.size < 2:
        raise DataError(f"time needs at least 2 samples, got {t.size}")
    latest = np.maximum.accumulate(t)
    earlier = np.flatnonzero(t[1:] < latest[:-1]) + 1
    restart = next((int(i) for i in earlier if classify_stamp(t[i], latest[i - 1]) is Stamp.RESTART), None)
    if restart is not None:
        i = restart
        raise DataError(
            f"time[{i}]={float(t[i])!r} s is earlier than time[{i - 1}]={float(t[i - 1])!r} s: the recording restarts"
            " there (a bag played twice, a simulation reset?); give each run as a recording of its own, or use dynid"
            " stream, whose window restarts"
        )
    # The streams' rule (:func:`accepted_samples`): a later stamp, or the last one again with new values.
    keep = np.flatnonzero(accepted_samples(t, values))
    kept_step = np.diff(t[keep])
    forward = kept_step > 0.0
    if not forward.any():
        raise DataError(f"time needs at least 2 distinct stamps, all {t.size} equal {float(t[0])!r} s")
    nominal_dt = float(np.median(kept_step[forward]))
    breaks = np.flatnonzero(kept_step > max(factor * nominal_dt, float(bridge_s))) + 1
    bounds = np.concatenate(([0], breaks, [keep.size]))
    segments = tuple((int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True))
    return StampReport(
        keep=keep,
        duplicates_dropped=int(t.size - keep.size - earlier.size),
        segments=segments,
        nominal_dt=nominal_dt,
        repeated_stamps=int(np.count_nonzero(kept_step == 0.0)),
        stale_dropped=int(earlier.size),
    )


STAMP_RECOVERY_WINDOW = 101
"""Samples of the running median that recovers sample instants from the sample order (:func:`recover_stamps`)."""

LOST_SAMPLES_STEP_PERIODS = 2.5
"""A stamp step longer than this many periods, followed by regular steps, is samples lost (:func:`recover_stamps` at
the ends of a piece): a millisecond counter's steps stay under 2 periods, a lost sample's is 2."""


@dataclass(frozen=True)
class RecoveredStamps:
    """Sample instants recovered from the sample order (:func:`recover_stamps`).

    ``time`` (s) the recovered instants; ``period_s`` the mean sample period the stamps
    show; ``jitter`` the robust standard deviation of the stamps about the recovered
    instants, as a fraction of a period; ``smeared_steps`` the places where the residual
    steps by half a period or more over one running-median window without a step that
    sharp between two samples: a sample missing from the order where the stamps scatter by
    about a period (a 1 ms counter at 978 Hz whose colliding stamps were dropped as
    repeated), which the running median spreads into a ramp, the recovered instants off by
    up to half a period over a tenth of a second around it.
    """

    time: np.ndarray
    period_s: float
    jitter: float
    smeared_steps: int = 0


def recover_stamps(
    time: np.ndarray, *, window: int = STAMP_RECOVERY_WINDOW, gap_factor: float = DEFAULT_GAP_FACTOR
) -> RecoveredStamps:
    """Recover the instants of regularly taken samples from jittered, quantised or bunched stamps.

    A driver takes samples at a steady rate but stamps them when its thread runs: with
    jitter, with a counter's resolution (1 ms stamps of a 978 Hz stream), or late and
    bunched after a stall. The stamps ``t_k`` of distinct samples are modelled as
    ``t_0 + k T + r_k`` with ``T`` the median slope over up to 1000 samples (a slope over
    many samples averages the stamps' resolution away; the median ignores the few spans
    that hold a gap); the residual ``r_k`` is replaced by its running median over
    ``window`` samples, separately between gaps (steps longer than ``gap_factor`` periods,
    where the pipeline splits segments anyway). A running median removes the stamping
    noise and the short bursts of a stall and keeps steps: a few lost samples stay a
    step, a gap stays a gap, as long as the stamps scatter by well under a period (else
    the step is spread over the window and counted in ``smeared_steps``). Exact stamps
    come back unchanged. Within half a window of a piece's end the running median sees too
    few samples beyond a step to follow it; there, a step of more than
    :data:`LOST_SAMPLES_STEP_PERIODS` periods followed by regular steps is lost samples and
    moves the instants after it (before it, at a piece's start) by the whole periods lost
    (a stall's late stamps are bunched, not regular, and stay outvoted).

    Parameters
    ----------
    time
        Stamps of distinct samples in their order, s, shape ``(N,)``: increasing, but for a sample
        stamped again with its predecessor's stamp (:func:`clean_time_stamps` with ``values``),
        which its place in the order puts back where it was taken.
    window
        Odd number of samples of the running median.
    gap_factor
        Steps longer than this many periods bound the pieces smoothed separately.

    Raises
    ------
    DataError
        When a stamp is earlier than its predecessor, all are equal, or the recovered instants would not increase.
    """
    recovery = _recovery(time, window, gap_factor)
    period = recovery.period_s
    smeared = sum(
        _smeared_steps(recovery.smooth[start:stop], size, 0.5 * period) for start, stop, size in recovery.pieces
    )
    scatter = recovery.residual - recovery.smooth
    jitter = float(1.4826 * np.median(np.abs(scatter - np.median(scatter)))) / period
    # The recovered instants carry no stamp resolution: their slope is the period to report.
    recovered, lag = recovery.instants, recovery.lag
    period = float(np.median((recovered[lag:] - recovered[:-lag]) / lag))
    return RecoveredStamps(time=recovered, period_s=period, jitter=jitter, smeared_steps=smeared)


def recovered_instants(
    time: np.ndarray, *, window: int = STAMP_RECOVERY_WINDOW, gap_factor: float = DEFAULT_GAP_FACTOR
) -> np.ndarray:
    """The instants of :func:`recover_stamps` (s) without its diagnostics (jitter, smeared steps, period): for a
    caller that has decided to recover them, e.g. every update of a sliding window. Same arguments and errors."""
    return _recovery(time, window, gap_factor).instants


@dataclass(frozen=True)
class _Recovery:
    """What :func:`recover_stamps` computes before its diagnostics: the ``instants`` (s), the stamps' ``residual``
    about ``t_0 + k T`` and its running median ``smooth``, the ``(start, stop, window)`` of each piece between gaps,
    the slope ``period_s`` and its ``lag`` in samples."""

    instants: np.ndarray
    residual: np.ndarray
    smooth: np.ndarray
    pieces: tuple[tuple[int, int, int], ...]
    period_s: float
    lag: int


def _recovery(time: np.ndarray, window: int, gap_factor: float) -> _Recovery:
    """The instants of :func:`recover_stamps` and what its diagnostics need; raises its errors."""
    t = _time_vector(time)
    if t.size < 2 or np.any(np.diff(t) < 0.0) or t[-1] <= t[0]:
        raise DataError("recover_stamps needs increasing stamps")
    lag = max(1, min(1000, t.size // 4))
    period = float(np.median((t[lag:] - t[:-lag]) / lag))
    index = np.arange(t.size)
    origin = float(t[0])
    residual = t - origin - index * period
    bounds = np.concatenate(([0], np.flatnonzero(np.diff(t) > gap_factor * period) + 1, [t.size]))
    smooth = np.empty_like(residual)
    pieces = []
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        piece = residual[start:stop]
        size = min(window, piece.size - (1 - piece.size % 2))
        # Reflection, not repetition, at the ends: a repeated end stamp would outvote the others there.
        smooth[start:stop] = scipy.ndimage.median_filter(piece, size=max(size, 1), mode="reflect")
        _follow_lost_samples_at_end(t[start:stop], piece, smooth[start:stop], period, size // 2)
        _follow_lost_samples_at_end(-t[start:stop][::-1], piece[::-1], smooth[start:stop][::-1], period, size // 2)
        pieces.append((int(start), int(stop), size))
    recovered = origin + index * period + smooth
    if np.any(np.diff(recovered) <= 0.0):
        raise DataError("the recovered sample instants do not increase: the stamps are too irregular")
    return _Recovery(
        instants=recovered, residual=residual, smooth=smooth, pieces=tuple(pieces), period_s=period, lag=lag
    )


def _follow_lost_samples_at_end(
    time: np.ndarray, residual: np.ndarray, smooth: np.ndarray, period_s: float, reach: int
) -> None:
    """Move ``smooth`` (s, in place) by the whole periods lost at a step within ``reach`` samples of the end of
    ``time`` (increasing, s) that the running median of ``residual`` (s) did not follow (:func:`recover_stamps`);
    a reversed view of a piece serves its start."""
    steps = np.diff(time)
    first = max(1, time.size - reach)
    lost = first + np.flatnonzero(steps[first - 1 : -1] > LOST_SAMPLES_STEP_PERIODS * period_s)
    if lost.size == 0:
        return
    after = int(lost[-1])  # the first sample after the last such step, with at least one more after it
    regular = steps[after:]
    if np.any(regular < 0.5 * period_s) or np.any(regular > 1.5 * period_s):
        return  # bunched (a stall) or another step: nothing the samples' order tells
    periods = round(float(np.median(residual[after:] - smooth[after:])) / period_s)
    smooth[after:] += periods * period_s


def _smeared_steps(smooth: np.ndarray, size: int, step_s: float) -> int:
    """How often ``smooth`` (s) moves by ``step_s`` or more over ``size`` samples with no single step that large."""
    if size < 3 or smooth.size <= size:
        return 0
    rise = np.abs(smooth[size:] - smooth[:-size])
    # The largest step between neighbours within each span of ``size`` steps, centred: spans [k, k + size).
    sharpest = scipy.ndimage.maximum_filter1d(np.abs(np.diff(smooth)), size=size, mode="nearest")
    spread = (rise >= step_s) & (sharpest[size // 2 : size // 2 + rise.size] < step_s)
    return int(np.count_nonzero(np.diff(spread.astype(np.int8)) == 1) + int(spread[0]))


def resample_uniform(
    time: np.ndarray, values: np.ndarray, rate_hz: float, *, kind: str = "cubic"
) -> tuple[np.ndarray, np.ndarray]:
    """Interpolate jittered samples onto a uniform time grid.

    Parameters
    ----------
    time : numpy.ndarray
        Strictly increasing stamps, shape ``(N,)``, s (clean them first with
        :func:`clean_time_stamps`).
    values : numpy.ndarray
        Samples, shape ``(N, ...)``; interpolated independently along every trailing axis.
    rate_hz : float
        Rate of the uniform grid, Hz. The grid is ``time[0] + k / rate_hz`` for every
        ``k >= 0`` up to ``time[-1]``.
    kind : {"cubic", "linear"}, optional
        ``"cubic"``: not-a-knot cubic spline (``scipy.interpolate.make_interp_spline``), for
        smooth signals such as positions. ``"local_cubic"``: the cubic through the four
        nearest samples (Lagrange), exact for cubics like the spline but local, so a
        value does not depend on where a block of samples ends (for streaming).
        ``"linear"``: piecewise linear, for signals such as torques or currents whose
        noise a spline would amplify.

    Returns
    -------
    grid : numpy.ndarray
        Uniform stamps, shape ``(M,)``, s.
    resampled : numpy.ndarray
        Interpolated values, shape ``(M, ...)``.

    Raises
    ------
    DataError
        If stamps are not finite or not strictly increasing, shapes disagree, fewer
        than two samples are given, or values are not finite.
    ValueError
        If ``rate_hz`` is not finite and > 0 or ``kind`` is unknown.
    """
    if kind not in _INTERPOLATION_KINDS:
        raise ValueError(f"kind must be one of {_INTERPOLATION_KINDS}, got {kind!r}")
    t, v, rate, count = _uniform_grid(time, values, rate_hz)
    grid = _grid_instants(t, rate, range(count))
    return grid, _interpolate(t, v, grid, kind)


@dataclass(frozen=True, eq=False)
class LinearResampling:
    """Samples ``values`` ``(N, ...)`` taken at the strictly increasing stamps ``time`` ``(N,)`` (s), read at the
    ``rows`` of the uniform grid of ``rate_hz`` (Hz) from ``time[0]`` (:func:`resample_uniform`'s) by piecewise-linear
    interpolation, a block of rows at a time where they are used (:func:`linear_resampling`).

    Indexed by a slice of its rows, it gives those rows of ``resample_uniform(..., kind="linear")`` bit for bit: an
    identification reads a long recording's torques block by block from the samples it holds anyway, instead of
    holding them again on the grid (29 MB for 600 k samples of 6 joints, at the peak of its memory), and the grid's
    instants are computed for the rows read, not held (5 MB).
    """

    time: np.ndarray
    values: np.ndarray
    rate_hz: float
    rows: range

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the values on the grid, ``(M, ...)``."""
        return (len(self.rows), *self.values.shape[1:])

    def __getitem__(self, rows: slice) -> np.ndarray:
        """The values at the grid rows ``rows`` (a slice), a new array."""
        return _interpolate(self.time, self.values, _grid_instants(self.time, self.rate_hz, self.rows[rows]), "linear")

    def whole(self) -> np.ndarray:
        """The values at every grid instant, ``(M, ...)``."""
        return self[:]

    def within(self, rows: slice) -> LinearResampling:
        """The resampling of the grid rows ``rows`` (a slice) only."""
        return replace(self, rows=self.rows[rows])


def linear_resampling(time: np.ndarray, values: np.ndarray, rate_hz: float) -> LinearResampling:
    """``resample_uniform(time, values, rate_hz, kind="linear")`` read where it is used (:class:`LinearResampling`):
    the same grid and checks, the interpolation deferred to the rows asked for.

    Raises
    ------
    DataError, ValueError
        As :func:`resample_uniform`.
    """
    t, v, rate, count = _uniform_grid(time, values, rate_hz)
    return LinearResampling(t, v, rate, range(count))


def _uniform_grid(time: np.ndarray, values: np.ndarray, rate_hz: float) -> tuple[np.ndarray, np.ndarray, float, int]:
    """The checked stamps and values of :func:`resample_uniform`, its rate (Hz) and the number of instants of its
    uniform grid (:func:`_grid_instants`); raises its errors."""
    rate = positive_finite("rate_hz", rate_hz)
    t = _time_vector(time)
    v = np.asarray(values, dtype=float)
    if v.ndim == 0 or v.shape[0] != t.size:
        raise DataError(f"values must have {t.size} rows to match time, got shape {v.shape}")
    if t.size < 2:
        raise DataError(f"time needs at least 2 samples to resample, got {t.size}")
    not_increasing = np.flatnonzero(np.diff(t) <= 0.0)
    if not_increasing.size:
        i = int(not_increasing[0]) + 1
        raise DataError(
            f"time must be strictly increasing: time[{i}]={float(t[i])!r} s <= time[{i - 1}]={float(t[i - 1])!r} s"
        )
    if not np.all(np.isfinite(v)):
        raise DataError("values contain NaN or infinite entries")
    # The tiny slack keeps the last grid point when time[-1] - time[0] is a whole number of periods.
    count = int(np.floor((t[-1] - t[0]) * rate * (1.0 + 1e-12))) + 1
    return t, v, rate, count


def _grid_instants(time: np.ndarray, rate_hz: float, rows: range) -> np.ndarray:
    """The instants (s) of the ``rows`` of the uniform grid of ``rate_hz`` (Hz) from ``time[0]``, within the stamps
    ``time``: each the same number whichever rows are asked for."""
    return np.minimum(time[0] + np.arange(rows.start, rows.stop, rows.step) / rate_hz, time[-1])


def interpolate_at(time: np.ndarray, values: np.ndarray, grid: np.ndarray, *, kind: str = "cubic") -> np.ndarray:
    """Values at the instants ``grid`` (within ``[time[0], time[-1]]`` up to rounding), as resample_uniform does.

    For a grid kept across calls, e.g. by a sliding window that resamples each new
    block onto the grid its first sample fixed.

    Raises
    ------
    DataError
        If stamps are not strictly increasing or a grid instant lies outside them.
    """
    if kind not in _INTERPOLATION_KINDS:
        raise ValueError(f"kind must be one of {_INTERPOLATION_KINDS}, got {kind!r}")
    t = _time_vector(time)
    v = np.asarray(values, dtype=float)
    g = np.asarray(grid, dtype=float)
    if t.size < 2 or v.shape[0] != t.size:
        raise DataError(f"need at least 2 samples with matching values, got {t.size} stamps and {v.shape}")
    if np.any(np.diff(t) <= 0.0):
        raise DataError("time must be strictly increasing")
    slack = 1e-6 * (t[-1] - t[0]) / (t.size - 1)
    if g.size and (g[0] < t[0] - slack or g[-1] > t[-1] + slack):
        raise DataError(f"grid [{g[0]}, {g[-1]}] s leaves the samples' span [{t[0]}, {t[-1]}] s")
    return _interpolate(t, v, np.clip(g, t[0], t[-1]), kind)


def _interpolate(t: np.ndarray, v: np.ndarray, grid: np.ndarray, kind: str) -> np.ndarray:
    if kind == "cubic":
        from scipy.interpolate import make_interp_spline

        return make_interp_spline(t, v, k=3, axis=0, check_finite=False)(grid)
    if kind == "local_cubic" and t.size >= 4:
        return _local_cubic(t, v, grid)
    i = np.clip(np.searchsorted(t, grid, side="right") - 1, 0, t.size - 2)
    w = ((grid - t[i]) / (t[i + 1] - t[i])).reshape((-1,) + (1,) * (v.ndim - 1))
    # v_i + w (v_i+1 - v_i) in place: two arrays of the signal's size alive instead of four (600 k samples: 58 MB).
    lower = v[i]
    out = v[i + 1]
    out -= lower
    out *= w
    out += lower
    return out


def _local_cubic(t: np.ndarray, v: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Lagrange cubic through the samples ``i-1 .. i+2`` around each grid instant in ``[t_i, t_i+1]``."""
    first = np.clip(np.searchsorted(t, grid, side="right") - 2, 0, t.size - 4)
    nodes = [t[first + a] for a in range(4)]
    out = np.zeros((grid.size, *v.shape[1:]))
    for a in range(4):
        weight = np.ones(grid.size)
        for b in range(4):
            if b != a:
                weight *= (grid - nodes[b]) / (nodes[a] - nodes[b])
        out += weight.reshape((-1,) + (1,) * (v.ndim - 1)) * v[first + a]
    return out


@functools.lru_cache(maxsize=32)
def _butterworth_sos(order: int, cutoff_hz: float, rate_hz: float) -> tuple[np.ndarray, np.ndarray]:
    """Low-pass Butterworth sections and their step-response initial state (``sosfilt_zi``),
    designed once per (order, cut-off, rate): a streaming caller reuses them."""
    from scipy.signal import butter, sosfilt_zi

    sos = butter(order, cutoff_hz, btype="low", fs=rate_hz, output="sos")
    return sos, sosfilt_zi(sos)


def lowpass_zero_phase(x: np.ndarray, *, cutoff_hz: float, rate_hz: float, order: int = 4, axis: int = 0) -> np.ndarray:
    """Zero-phase Butterworth low-pass (forward-backward, [Gautier2013] §IV.A).

    The filter is designed with ``scipy.signal.butter(order, cutoff_hz, fs=rate_hz,
    output='sos')`` and applied forward and backward as ``scipy.signal.sosfiltfilt``
    does (odd extension, steady-state initial conditions), so the effective
    magnitude response is the square of the Butterworth response (-6 dB at
    ``cutoff_hz``, order ``2 * order``) and the phase is zero.

    Parameters
    ----------
    x : numpy.ndarray
        Uniformly sampled signal, any shape.
    cutoff_hz : float
        Cut-off frequency, Hz; ``0 < cutoff_hz < rate_hz / 2``.
    rate_hz : float
        Sampling rate, Hz.
    order : int, optional
        Butterworth order (>= 1).
    axis : int, optional
        Time axis of ``x``.

    Returns
    -------
    numpy.ndarray
        Filtered signal, same shape as ``x``.

    Notes
    -----
    The ends are padded by odd extension over ``3 * rate_hz / cutoff_hz`` samples.
    This keeps the value and slope continuous but not the curvature, so about
    ``4 / cutoff_hz`` seconds at each end carry an edge error; derivatives (see
    :func:`differentiate`) there should be discarded, as parallel decimation does
    for samples without full filter support.

    Raises
    ------
    ValueError
        If ``cutoff_hz`` is not below the Nyquist frequency, ``rate_hz`` or ``order``
        is invalid.
    DataError
        If ``x`` is not finite or too short for the filter's edge padding.
    """
    cutoff, rate = _check_cutoff(cutoff_hz, rate_hz)
    integer_at_least("order", order, 1)
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0:
        raise DataError("x must have at least one dimension, got a scalar")
    if not np.all(np.isfinite(arr)):
        raise DataError("x contains NaN or infinite entries")
    sos, initial_state = _butterworth_sos(int(order), cutoff, rate)
    # sosfiltfilt's default odd-extension padding length is the minimum usable length.
    min_pad = 3 * (2 * len(sos) + 1 - min(int((sos[:, 2] == 0).sum()), int((sos[:, 5] == 0).sum())))
    length = arr.shape[axis]
    if length <= min_pad:
        raise DataError(f"x has {length} samples along axis {axis}; an order-{order} filter needs more than {min_pad}")
    # Padding by three cut-off periods lets the start-up transient decay before the data begin.
    padlen = min(length - 1, max(min_pad, int(np.ceil(3.0 * rate / cutoff))))
    filtered = _forward_backward(sos, initial_state, np.moveaxis(arr, axis, 0), padlen)
    return np.moveaxis(filtered, 0, axis)


def roughness(time: np.ndarray, values: np.ndarray, *, rate_hz: float, cutoff_hz: float) -> np.ndarray:
    """How rough samples look against their stamps: RMS above ``cutoff_hz`` after resampling at them.

    Samples of a motion slower than ``cutoff_hz``, resampled onto a uniform grid at the
    instants ``time``, hold above the cut-off only their noise (encoder quantisation,
    sensor noise: the same whatever the stamps); stamps that misplace the samples add the
    motion times the stamp error (a millisecond counter's sawtooth, a late thread's
    jitter). Comparing the roughness of the same samples against two candidate stamp
    sequences says which one the samples were taken at (:func:`recover_stamps`).

    Parameters
    ----------
    time
        Strictly increasing stamps of one contiguous segment, s, shape ``(N,)``.
    values
        Samples, shape ``(N,)`` or ``(N, n)``.
    rate_hz
        Rate of the uniform grid, Hz.
    cutoff_hz
        Above the motion's bandwidth, below the Nyquist frequency, Hz.

    Returns
    -------
    numpy.ndarray
        One roughness per column, units of ``values``, shape ``(n,)``.
    """
    t = _time_vector(time)
    _, uniform = resample_uniform(t, np.asarray(values, dtype=float).reshape(t.size, -1), rate_hz, kind="cubic")
    edge = int(np.ceil(3.0 * rate_hz / cutoff_hz))
    if uniform.shape[0] <= 4 * edge:
        raise DataError(f"roughness needs more than {4 * edge} samples at {rate_hz:.6g} Hz, got {uniform.shape[0]}")
    residual = uniform - lowpass_zero_phase(uniform, cutoff_hz=cutoff_hz, rate_hz=rate_hz)
    return np.asarray(np.sqrt(np.mean(residual[edge:-edge] ** 2, axis=0)), dtype=float)


def _forward_backward(sos: np.ndarray, initial_state: np.ndarray, x: np.ndarray, padlen: int) -> np.ndarray:
    """``scipy.signal.sosfiltfilt(sos, x, axis=0, padlen=padlen)`` with the initial state computed once."""
    from scipy.signal import sosfilt

    extended = np.concatenate([2.0 * x[:1] - x[padlen:0:-1], x, 2.0 * x[-1:] - x[-2 : -padlen - 2 : -1]])
    state = initial_state.reshape(initial_state.shape + (1,) * (x.ndim - 1))
    forward, _ = sosfilt(sos, extended, axis=0, zi=state * extended[:1])
    backward, _ = sosfilt(sos, forward[::-1], axis=0, zi=state * forward[-1:])
    return backward[::-1][padlen:-padlen]


EDGE_FIT_CUTOFF_PERIODS = 1.0
""":func:`differentiate` with ``edges="extrapolated"`` fits its cubic to this many periods of the cut-off at each end
(of cubics and parabolas over half, one and two periods, the one with the smallest acceleration error near the ends
on noisy sinusoids of 0.2-2 Hz filtered at 20 Hz)."""


def _extrapolated(x: np.ndarray, count: int, fit: int) -> np.ndarray:
    """``x`` (samples along axis 0) extended by ``count`` samples at each end along the least-squares cubic of
    its first and last ``fit`` samples: value, slope *and curvature* continue across the ends."""
    fit = min(fit, x.shape[0])
    degree = min(3, fit - 1)
    steps = np.arange(fit, dtype=float)
    outward = np.arange(1, count + 1, dtype=float)
    flat = x.reshape(x.shape[0], -1)
    before = np.polynomial.polynomial.polyfit(steps, flat[:fit], degree)
    after = np.polynomial.polynomial.polyfit(steps, flat[-fit:][::-1], degree)
    head = np.polynomial.polynomial.polyval(-outward, before).T[::-1]
    tail = np.polynomial.polynomial.polyval(-outward, after).T
    return np.concatenate([head, flat, tail]).reshape((x.shape[0] + 2 * count,) + x.shape[1:])


def differentiate(
    q: np.ndarray, *, rate_hz: float, cutoff_hz: float | None, edges: str = "odd"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Band-pass derivative estimation of positions ([Gautier2013] §IV.A).

    ``q`` is low-passed with :func:`lowpass_zero_phase` (order 4, skipped when
    ``cutoff_hz`` is None), then differentiated twice by central differences
    (``numpy.gradient`` with second-order one-sided differences at the ends).

    ``edges="odd"`` pads the filter by odd extension (:func:`lowpass_zero_phase`): about
    ``4 / cutoff_hz`` s at each end then carry an edge error, which identification drops.
    ``edges="extrapolated"`` first extends ``q`` at each end along the cubic fitted to
    its :data:`EDGE_FIT_CUTOFF_PERIODS` last cut-off period, so value, velocity and
    acceleration continue across the ends and the estimates are usable up to the last
    sample (what a prediction of every recorded row needs); it also takes segments too
    short for the filter's own padding (any of 3 samples or more).

    Parameters
    ----------
    q : numpy.ndarray
        Uniformly sampled positions, shape ``(N, ...)`` with ``N >= 3``, rad.
    rate_hz : float
        Sampling rate, Hz.
    cutoff_hz : float or None
        Position low-pass cut-off, Hz: well above the motion bandwidth, below the noise.

    Returns
    -------
    q_filtered : numpy.ndarray
        Filtered positions, shape of ``q``, rad.
    dq : numpy.ndarray
        Velocities, rad/s.
    ddq : numpy.ndarray
        Accelerations, rad/s².

    Notes
    -----
    About ``4 / cutoff_hz`` seconds at each end are distorted by the filter's edge
    padding (see :func:`lowpass_zero_phase`); drop them before identification.

    Raises
    ------
    ValueError
        If ``rate_hz`` or ``cutoff_hz`` is invalid.
    DataError
        If ``q`` has fewer than 3 samples, is not finite, or is too short to filter.
    """
    filtered, pad = filter_positions(q, rate_hz=rate_hz, cutoff_hz=cutoff_hz, edges=edges)
    inner = slice(pad, filtered.shape[0] - pad)
    dq, ddq = derivatives_at(filtered, inner, rate_hz=rate_hz, count=2)
    return filtered[inner], dq, ddq


def filter_positions(
    q: np.ndarray, *, rate_hz: float, cutoff_hz: float | None, edges: str = "odd"
) -> tuple[np.ndarray, int]:
    """The low-passed positions of :func:`differentiate` before they are differentiated, and the samples
    extrapolated at each end (``edges="extrapolated"``; 0 otherwise) that they still carry: ``(M, ...)``, rad.

    With :func:`derivatives_at` a caller differentiates the rows it needs when it needs them, rather than
    holding a long recording's velocities and accelerations whole (600 k samples of 6 joints: 58 MB).

    Raises
    ------
    ValueError
        If ``rate_hz``, ``cutoff_hz`` or ``edges`` is invalid.
    DataError
        If ``q`` has fewer than 3 samples, is not finite, or is too short to filter.
    """
    rate = positive_finite("rate_hz", rate_hz)
    if edges not in ("odd", "extrapolated"):
        raise ValueError(f"edges must be 'odd' or 'extrapolated', got {edges!r}")
    arr = np.asarray(q, dtype=float)
    if arr.ndim == 0 or arr.shape[0] < 3:
        raise DataError(f"q needs at least 3 samples along axis 0, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise DataError("q contains NaN or infinite entries")
    pad = 0
    if edges == "extrapolated" and cutoff_hz is not None:
        pad = _extrapolation_samples(cutoff_hz, rate)
        arr = _extrapolated(arr, pad, _edge_fit_samples(cutoff_hz, rate))
    return (arr if cutoff_hz is None else lowpass_zero_phase(arr, cutoff_hz=cutoff_hz, rate_hz=rate, axis=0)), pad


DERIVATIVE_SUPPORT = 3
"""Samples on each side of the rows asked of :func:`derivatives_at` that it differentiates with them: two central
differences reach two samples out, and at an end of the signal the one-sided difference of the first derivative,
over three samples, reaches three."""


def derivatives_at(values: np.ndarray, rows: slice, *, rate_hz: float, count: int) -> tuple[np.ndarray, ...]:
    """The first ``count`` (1 or 2) derivatives of uniformly sampled ``values`` ``(M, ...)`` (``M >= 3``) at the
    contiguous ``rows`` only.

    They are, bit for bit, those rows of ``numpy.gradient`` (central differences, second-order one-sided at the
    ends of ``values``) applied ``count`` times to the whole array, from :data:`DERIVATIVE_SUPPORT` samples on
    each side: blocks of a long recording are differentiated one at a time with the result of the whole.
    """
    if count not in (1, 2):
        raise ValueError(f"count must be 1 or 2, got {count}")
    start, stop, step = rows.indices(values.shape[0])
    if step != 1:
        raise ValueError(f"rows must be contiguous, got step {step}")
    stop = max(start, stop)
    low, high = max(start - DERIVATIVE_SUPPORT, 0), min(stop + DERIVATIVE_SUPPORT, values.shape[0])
    step_s = 1.0 / positive_finite("rate_hz", rate_hz)
    derivatives = []
    current = values[low:high]
    for _ in range(count):
        current = np.gradient(current, step_s, axis=0, edge_order=2)
        derivatives.append(current[start - low : stop - low])
    return tuple(derivatives)


def _extrapolation_samples(cutoff_hz: float, rate_hz: float) -> int:
    """Samples added at each end before filtering with extrapolated edges: the odd padding's transient."""
    cutoff, rate = _check_cutoff(cutoff_hz, rate_hz)
    return int(np.ceil(4.0 * rate / cutoff))


def _edge_fit_samples(cutoff_hz: float, rate_hz: float) -> int:
    """Samples the extrapolating cubic is fitted to at each end (:data:`EDGE_FIT_CUTOFF_PERIODS`)."""
    return max(4, int(np.ceil(EDGE_FIT_CUTOFF_PERIODS * rate_hz / cutoff_hz)))


def lowpass_to_edges(x: np.ndarray, *, cutoff_hz: float, rate_hz: float) -> np.ndarray:
    """:func:`lowpass_zero_phase` along axis 0 of ``x`` with extrapolated edges, as
    ``differentiate(..., edges="extrapolated")`` filters positions: usable up to the last sample, and for
    segments of 4 samples or more (measured velocities of a prediction)."""
    arr = np.asarray(x, dtype=float)
    pad = _extrapolation_samples(cutoff_hz, rate_hz)
    extended = _extrapolated(arr, pad, _edge_fit_samples(cutoff_hz, rate_hz))
    return lowpass_zero_phase(extended, cutoff_hz=cutoff_hz, rate_hz=rate_hz)[pad : pad + arr.shape[0]]


def _decimation_factor(factor: int) -> int:
    """Validate a decimation factor (integer >= 1)."""
    return integer_at_least("factor", factor, 1)


def decimation_taps(factor: int) -> np.ndarray:
    """Linear-phase FIR low-pass used by parallel decimation ([Gautier2013] eq. (13)-(14)).

    Same filter as ``scipy.signal.decimate(x, factor, ftype='fir')`` and Matlab's
    ``decimate(..., 'fir')`` cited by [Gautier2013]: ``firwin(20 * factor + 1, 1 / factor,
    window='hamming')``, an odd-length symmetric filter with unit DC gain and its
    -6 dB cut-off at the new Nyquist frequency ``rate / (2 * factor)``. Its passband
    (ripple < 0.02 dB) extends to about ``0.42 * rate / factor`` and its stopband
    (> 50 dB) starts at about ``0.58 * rate / factor``.

    Parameters
    ----------
    factor : int
        Decimation factor ``n_d`` (>= 1). ``1`` gives the identity filter ``[1.0]``.

    Returns
    -------
    numpy.ndarray
        Filter taps, shape ``(20 * factor + 1,)`` (``(1,)`` for ``factor == 1``).
    """
    nd = _decimation_factor(factor)
    if nd == 1:
        return np.array([1.0])
    from scipy.signal import firwin

    return firwin(20 * nd + 1, 1.0 / nd, window="hamming")


@dataclass(frozen=True)
class ParallelDecimator:
    """Parallel decimation ([Gautier2013] eq. (13)-(14)).

    The same zero-phase FIR low-pass and down-sampling are applied to ``Y`` and to
    every column of ``W``, so ``Y = W χ`` still holds on the decimated samples.
    Output ``k`` of a decimation lives at global sample index ``g = k * factor`` and
    is centred on it (no delay), so decimated signals stay aligned with their stamps
    ``time[g]``.

    Attributes
    ----------
    factor : int
        Decimation factor ``n_d``: one sample kept over ``factor``.
    taps : numpy.ndarray
        Odd-length FIR taps, centred on the kept sample (see :func:`decimation_taps`).
    """

    factor: int
    taps: np.ndarray

    def __post_init__(self) -> None:
        _decimation_factor(self.factor)
        taps = np.asarray(self.taps, dtype=float)
        if taps.ndim != 1 or taps.size % 2 == 0 or not np.all(np.isfinite(taps)):
            raise ValueError(f"taps must be a finite 1-D array of odd length, got shape {taps.shape}")
        object.__setattr__(self, "taps", taps)

    @classmethod
    def create(cls, factor: int) -> ParallelDecimator:
        """Decimator with the :func:`decimation_taps` filter of ``factor``."""
        return cls(factor=_decimation_factor(factor), taps=decimation_taps(factor))

    @property
    def half_length(self) -> int:
        """Samples of support needed on each side of a kept sample: ``(len(taps) - 1) // 2``."""
        return (self.taps.size - 1) // 2

    def output_indices(self, length: int, *, start: int = 0) -> np.ndarray:
        """Global indices of the outputs of a block of ``length`` samples starting at global index ``start``:
        the multiples of ``factor`` whose whole filter support lies in the block, shape ``(K,)``."""
        nd, h = self.factor, self.half_length
        first = -(-(start + h) // nd) * nd  # smallest multiple of nd with full support on the left
        last = ((start + length - 1 - h) // nd) * nd  # largest with full support on the right
        return np.arange(first, last + 1, nd, dtype=np.int64)

    def decimate(self, x: np.ndarray, *, start: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Filter and down-sample a block of samples along axis 0.

        Computes ``y[k] = Σ_m taps[m] · x_global[g_k + m - half_length]`` for every
        global index ``g_k`` that is a multiple of ``factor`` and whose full filter
        support lies inside the block; no edge padding is used, so overlapping blocks
        (overlap ``>= 2 * half_length`` samples) give exactly the outputs of the whole
        array. Only the kept outputs are computed: each is the taps times the window of
        samples centred on it, read in place through a strided view (one matrix-vector
        product per output, no copy of the block).

        Parameters
        ----------
        x : numpy.ndarray
            Block of samples, shape ``(L, ...)`` (for ``W``: ``(L, n, p)``), covering
            global sample indices ``[start, start + L)``.
        start : int, optional
            Global index of ``x[0]`` (>= 0).

        Returns
        -------
        outputs : numpy.ndarray
            Decimated samples, shape ``(K, ...)``; ``K`` may be 0 for a short block.
        global_indices : numpy.ndarray
            Global sample index of each output, shape ``(K,)``, multiples of ``factor``.
        """
        integer_at_least("start", start, 0)
        arr = np.asarray(x, dtype=float)
        if arr.ndim == 0:
            raise DataError("x must have at least one dimension, got a scalar")
        start = int(start)
        nd, h = self.factor, self.half_length
        indices = self.output_indices(arr.shape[0], start=start)
        if indices.size == 0:
            return np.empty((0,) + arr.shape[1:]), indices
        first, last = int(indices[0]), int(indices[-1])
        columns = int(np.prod(arr.shape[1:], dtype=np.int64))
        segment = np.ascontiguousarray(arr[first - h - start : last + h + 1 - start]).reshape(
            last - first + 2 * h + 1, columns
        )
        row, column = segment.strides
        windows = as_strided(
            segment, shape=(indices.size, 2 * h + 1, segment.shape[1]), strides=(nd * row, row, column), writeable=False
        )
        return np.matmul(self.taps, windows).reshape((indices.size,) + arr.shape[1:]), indices


def parallel_decimate(x: np.ndarray, factor: int) -> tuple[np.ndarray, np.ndarray]:
    """Decimate a whole array: ``ParallelDecimator.create(factor).decimate(x)``.

    Parameters
    ----------
    x : numpy.ndarray
        Samples, shape ``(N, ...)``.
    factor : int
        Decimation factor (>= 1).

    Returns
    -------
    outputs : numpy.ndarray
        Decimated samples, shape ``(K, ...)``.
    global_indices : numpy.ndarray
        Row of ``x`` each output is centred on, shape ``(K,)``.
    """
    return ParallelDecimator.create(factor).decimate(x)


def default_decimation(rate_hz: float, *, position_cutoff_hz: float) -> int:
    """Default parallel-decimation factor: ``max(1, floor(rate_hz / (4 * position_cutoff_hz)))``.

    Gautier's rule for the decimation low-pass ([Gautier2013] §IV.A, eq. (13)-(14)) is a
    cut-off well above the dynamics bandwidth and at or above the position filter's
    cut-off ``f_c``, so decimation removes torque ripple without distorting anything
    that ``q̂, q̇̂, q̈̂`` still contain. This rule keeps a decimated rate of at least
    ``4 f_c``, i.e. a new Nyquist frequency of at least ``2 f_c``; the
    :func:`decimation_taps` passband then ends near ``0.42 · 4 f_c ≈ 1.7 f_c``, above
    the position cut-off, while ``Y`` and ``W`` keep 2 to 3 samples per period of the
    fastest retained component. Example: 1 kHz with a 20 Hz position cut-off gives
    ``n_d = 12`` (83.3 Hz, flat to about 35 Hz).

    Parameters
    ----------
    rate_hz : float
        Sampling rate of the recording, Hz.
    position_cutoff_hz : float
        Cut-off of the position low-pass, Hz (below ``rate_hz / 2``).

    Returns
    -------
    int
        Decimation factor ``n_d >= 1``.
    """
    cutoff, rate = _check_cutoff(position_cutoff_hz, rate_hz, name="position_cutoff_hz")
    return max(1, int(np.floor(rate / (4.0 * cutoff))))
