"""Periodic experiments: split by period, average, noise variance, Fourier filtering and differentiation.

A periodic excitation ([Swevers2002] §3.1, [Volkmann2020] eq. (6)) repeats the same motion every
``period_s`` seconds. Arranging the samples by period gives, for every instant of the
period, ``P`` repetitions of the same measurement, which

* averaged, improve the signal-to-noise ratio by ``sqrt(P)`` ([Swevers2002] §4.3, [Volkmann2020] §III.C);
* scattered around their mean, estimate the measurement-noise variance per sample
  ([Volkmann2020] eq. (7)) and per channel ([Swevers2002] §4.3), the weights of WLS ([Volkmann2020]
  eq. (8)-(9));
* being one period of a band-limited periodic signal, are filtered and differentiated
  exactly in the frequency domain, without leakage: only the excited Fourier lines are
  kept and multiplied by ``i ω_k`` ([Swevers2002] §4.3, [Volkmann2020] §III.C).

Samples are rows and time is float seconds, as everywhere in the core; a
:class:`PeriodicData` adds a leading period axis: ``values[j, k]`` is sample ``k`` of
period ``j``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynamic_identification.core.checks import integer_at_least, positive_finite
from dynamic_identification.core.errors import DataError
from dynamic_identification.core.signal.filters import clean_time_stamps

__all__ = [
    "DEFAULT_FLOOR_FRACTION",
    "PeriodicData",
    "average_periods",
    "fourier_filter",
    "PERIODIC_TOLERANCE",
    "PeriodicStretch",
    "mean_noise_variance",
    "period_variance",
    "periodic_stretch",
    "sample_weights_from_variance",
    "split_periods",
]

_INTERPOLATION_KINDS = ("cubic", "linear")

#: Default std floor of :func:`sample_weights_from_variance`, as a fraction of the median std.
DEFAULT_FLOOR_FRACTION = 0.1

#: How far positions one period apart may differ in a stretch that :func:`periodic_stretch` calls periodic, as a
#: fraction of each joint's travel over the recording (beyond the position noise). Averaging periods that differ by
#: ``δ`` moves the averaged motion by up to ``δ``; 1 % keeps that well below the excitation while a robot's tracking
#: repeats to far less between the periods of a steady excitation.
PERIODIC_TOLERANCE = 0.01

#: Position noise allowed on top of :data:`PERIODIC_TOLERANCE`, in σ of the difference of two noisy samples: 5σ is
#: exceeded by chance about once in two million samples.
_NOISE_SIGMAS = 5.0

#: A window of one period whose joints all travel less than this many times their tolerance (beyond the noise) is a
#: rest, not a period of an excitation (a robot at rest repeats itself trivially).
_REST_FACTOR = 10.0

#: The ends of a repeating stretch are trimmed where positions one period apart differ by more than this many times
#: the stretch's median difference (:func:`periodic_stretch`): a transient's tail, not the robot's repeatability.
_REPEATABILITY_FACTOR = 10.0

#: ... but never below this fraction of the travel: the differences of an exact simulation are round-off.
_TRIM_FLOOR = 1e-4


def _mean_step(t: np.ndarray, segments: tuple[tuple[int, int], ...], fallback: float) -> float:
    """Mean stamp step within gap-free segments, s: the recording's rate, insensitive to jitter and gaps.

    The median step of jittered stamps scatters by a fraction of a percent, enough to
    change ``round(period / dt)`` for a few hundred samples per period; the mean over a
    segment only depends on its first and last stamps.
    """
    steps = sum(stop - start - 1 for start, stop in segments)
    if steps == 0:
        return fallback
    return float(sum(t[stop - 1] - t[start] for start, stop in segments)) / steps


@dataclass(frozen=True)
class PeriodicData:
    """Samples of a periodic experiment arranged by period.

    Attributes
    ----------
    time : numpy.ndarray
        Sample instants within one period, shape ``(M,)``, s: ``k * period_s / M`` for
        ``k = 0 .. M-1`` (the end of the period, which is the start of the next, is excluded).
    values : numpy.ndarray
        Samples, shape ``(P, M, ...)``: period, sample within the period, then the
        trailing shape of the recorded signal (for example joints).
    period_s : float
        Period of the excitation, s.

    Raises
    ------
    DataError
        If ``values`` has fewer than 2 periods, does not match ``time``, or is not finite.
    ValueError
        If ``period_s`` is not finite and > 0.
    """

    time: np.ndarray
    values: np.ndarray
    period_s: float

    def __post_init__(self) -> None:
        period = positive_finite("period_s", self.period_s)
        time = np.asarray(self.time, dtype=float)
        values = np.asarray(self.values, dtype=float)
        if time.ndim != 1:
            raise DataError(f"time must be one-dimensional, got shape {time.shape}")
        if values.ndim < 2 or values.shape[1] != time.size:
            raise DataError(f"values must have shape (P, {time.size}, ...) to match time, got {values.shape}")
        if values.shape[0] < 2:
            raise DataError(f"values needs at least 2 periods, got {values.shape[0]}")
        if not np.all(np.isfinite(values)):
            raise DataError("values contain NaN or infinite entries")
        object.__setattr__(self, "time", time)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "period_s", period)

    @property
    def periods(self) -> int:
        """Number of whole periods ``P``."""
        return int(self.values.shape[0])

    @property
    def samples_per_period(self) -> int:
        """Number of samples per period ``M``."""
        return int(self.values.shape[1])


def split_periods(
    time: np.ndarray,
    values: np.ndarray,
    *,
    period_s: float,
    start_s: float | None = None,
    samples_per_period: int | None = None,
    kind: str = "cubic",
) -> PeriodicData:
    """Resample a periodic recording onto an exact per-period grid and arrange it by period.

    The grid is ``start_s + i * period_s / M`` for ``i = 0 .. P*M - 1``, where ``M`` is
    ``samples_per_period`` and ``P`` the number of *whole* periods between ``start_s``
    and the last stamp; samples after the last whole period are dropped. Because the
    grid divides the period exactly, sample ``k`` of every period falls at the same
    phase, which averaging (:func:`average_periods`) and the leakage-free DFT of
    :func:`fourier_filter` require even when the recorder's rate does not divide the
    period or its stamps jitter.

    Interpolation follows :func:`dynamic_identification.core.signal.filters.resample_uniform`
    (not-a-knot cubic spline or piecewise linear); it is done here because that
    function anchors its grid on the first stamp, while this grid starts at ``start_s``.
    Repeated stamps are dropped as :func:`~dynamic_identification.core.signal.filters.clean_time_stamps`
    does (the first is kept).

    Parameters
    ----------
    time : numpy.ndarray
        Stamps, shape ``(N,)``, s (rows repeated or stamped slightly earlier than one before them are dropped,
        :func:`~.filters.clean_time_stamps`).
    values : numpy.ndarray
        Samples, shape ``(N, ...)``.
    period_s : float
        Period of the excitation, s ([Swevers2002] eq. (15): ``T_f = 2π / ω_f``).
    start_s : float, optional
        Start of the first period, s, within the recording (default: the first stamp).
        Choose it after the transient response has died out ([Swevers2002] §4.3).
    samples_per_period : int, optional
        ``M`` (>= 2). Default: ``round(period_s / dt)`` with ``dt`` the mean stamp step
        within gap-free stretches (see ``clean_time_stamps``), i.e. the recording's own rate.
    kind : {"cubic", "linear"}, optional
        ``"cubic"`` for smooth signals such as positions; ``"linear"`` for noisy
        signals such as torques or currents, whose noise a spline would amplify.

    Returns
    -------
    PeriodicData
        ``P >= 2`` whole periods of ``M`` samples.

    Raises
    ------
    DataError
        If stamps are not finite or jump back (a restart), ``values`` does not match ``time`` or
        is not finite, ``start_s`` lies outside the recording, or the recording holds
        fewer than 2 whole periods after ``start_s``.
    ValueError
        If ``period_s``, ``samples_per_period`` or ``kind`` is invalid.

    Examples
    --------
    >>> t = np.arange(0.0, 3.0, 0.01)
    >>> data = split_periods(t, np.sin(2 * np.pi * t), period_s=1.0)
    >>> data.values.shape
    (3, 100)
    """
    period = positive_finite("period_s", period_s)
    if kind not in _INTERPOLATION_KINDS:
        raise ValueError(f"kind must be one of {_INTERPOLATION_KINDS}, got {kind!r}")
    report = clean_time_stamps(time)
    t = np.asarray(time, dtype=float)[report.keep]
    v_all = np.asarray(values, dtype=float)
    if v_all.ndim == 0 or v_all.shape[0] != np.asarray(time).shape[0]:
        raise DataError(f"values must have {np.asarray(time).shape[0]} rows to match time, got shape {v_all.shape}")
    v = v_all[report.keep]
    if not np.all(np.isfinite(v)):
        raise DataError("values contain NaN or infinite entries")
    if samples_per_period is None:
        m = max(2, int(round(period / _mean_step(t, report.segments, report.nominal_dt))))
    else:
        m = integer_at_least("samples_per_period", samples_per_period, 2)
    start = float(t[0]) if start_s is None else float(start_s)
    if not np.isfinite(start) or start < t[0] or start >= t[-1]:
        raise DataError(f"start_s={start_s!r} s must lie within the recording [{t[0]!r}, {t[-1]!r}) s")
    step = period / m
    # The last sample of period P lies one step before its end, so a recording ending at
    # start + P*period - step holds P whole periods; the slack absorbs rounding of the stamps.
    periods = int(np.floor((t[-1] - start + step) / period + 1e-9))
    if periods < 2:
        raise DataError(
            f"the recording holds {periods} whole period(s) of period_s={period!r} s after start_s={start!r} s "
            f"(stamps end at {float(t[-1])!r} s); at least 2 are needed"
        )
    # Imported here: the nodes that never resample a period do not load scipy.interpolate (issue 26).
    from scipy.interpolate import CubicSpline, make_interp_spline

    grid = np.minimum(start + np.arange(periods * m) * step, t[-1])
    if kind == "cubic":
        resampled = CubicSpline(t, v, axis=0)(grid)
    else:
        resampled = make_interp_spline(t, v, k=1, axis=0)(grid)
    return PeriodicData(
        time=np.arange(m) * step,
        values=resampled.reshape((periods, m) + v.shape[1:]),
        period_s=period,
    )


@dataclass(frozen=True)
class PeriodicStretch:
    """The stretch of a recording that repeats with the excitation's period (:func:`periodic_stretch`).

    Attributes
    ----------
    start_s, stop_s : float
        First instant of the first period and end of the last, s, on the recording's clock.
    periods : int
        Whole periods in it (>= 2).
    mismatch : float
        Largest difference of positions one period apart inside it beyond the position noise, as a fraction of the
        joint's travel (:func:`periodic_stretch`).
    """

    start_s: float
    stop_s: float
    periods: int
    mismatch: float


def periodic_stretch(
    time: np.ndarray, q: np.ndarray, *, period_s: float, tolerance: float = PERIODIC_TOLERANCE
) -> PeriodicStretch:
    """The longest stretch of whole periods over which the positions ``q`` repeat every ``period_s`` s.

    A recording of a periodic excitation also holds what the robot did before and after it: rest, the ramp in
    from rest and the ramp out ([Swevers2002] §4.3: start after the transient). Averaging those as periods
    biases every estimate; a wrong period does worse. Here the positions are compared with themselves one period
    later, sample by sample (on a grid of the recording's rate that divides the period):

    1. a sample repeats when every joint differs from one period later by at most ``tolerance`` of its travel
       (of a tenth of the largest travel for a joint that barely moves) beyond the position noise
       (:data:`_NOISE_SIGMAS` σ of a difference, σ from the samples' third differences), and its period is not
       a rest; the longest run of such samples, the earliest of equally long ones, must hold 2 periods;
    2. its ends are trimmed to where the positions repeat as well as in the run's middle
       (:data:`_REPEATABILITY_FACTOR` times its median difference, at least :data:`_TRIM_FLOOR` of the travel):
       a ramp joins the excitation with the same position, velocity and acceleration, so its tail passes the
       first test; if the trimmed run no longer holds 2 periods it is kept whole.

    Parameters
    ----------
    time : numpy.ndarray
        Stamps, ``(N,)``, s, non-decreasing (repeated stamps are dropped as :func:`split_periods` does).
    q : numpy.ndarray
        Positions, ``(N, n)``, rad (or m).
    period_s : float
        Period of the excitation, s.
    tolerance : float
        Fraction of each joint's travel (default :data:`PERIODIC_TOLERANCE`).

    Raises
    ------
    DataError
        Bad stamps or positions, no motion, or no two consecutive periods that repeat: the one line says by how
        much the closest ones differ.
    """
    period = positive_finite("period_s", period_s)
    report = clean_time_stamps(time)
    t = np.asarray(time, dtype=float)[report.keep]
    positions = np.asarray(q, dtype=float)
    if positions.ndim != 2 or positions.shape[0] != np.asarray(time).shape[0]:
        raise DataError(f"q must have shape ({np.asarray(time).shape[0]}, n) to match time, got {positions.shape}")
    positions = positions[report.keep]
    if not np.all(np.isfinite(positions)):
        raise DataError("q contains NaN or infinite entries")
    m = max(2, int(round(period / _mean_step(t, report.segments, report.nominal_dt))))
    step = period / m
    grid = t[0] + np.arange(int(np.floor((t[-1] - t[0]) / step + 1e-9)) + 1) * step
    if grid.size < 2 * m:
        raise DataError(
            f"the recording lasts {float(t[-1] - t[0]):.6g} s: it cannot hold 2 periods of period_s={period:g} s"
        )
    from scipy.interpolate import CubicSpline
    from scipy.ndimage import maximum_filter1d, minimum_filter1d

    sampled = CubicSpline(t, positions, axis=0)(np.minimum(grid, t[-1]))
    travel = np.ptp(sampled, axis=0)
    if not np.any(travel > 0.0):
        raise DataError("the positions do not move: no period to find")
    scale = np.maximum(travel, 0.1 * travel.max())
    # σ of white noise from the third differences (variance 20 σ²), robust to the few steps of a non-smooth motion;
    # those of a smooth motion are ω³ dt³ of it, negligible at a robot's rates.
    third = np.diff(sampled, n=3, axis=0)
    sigma = 1.4826 * np.median(np.abs(third - np.median(third, axis=0)), axis=0) / np.sqrt(20.0)
    noise = _NOISE_SIGMAS * np.sqrt(2.0) * sigma
    # Beyond the noise, as a fraction of the joint's scale; the largest over the joints, per sample.
    excess = (np.maximum(np.abs(sampled[m:] - sampled[:-m]) - noise, 0.0) / scale).max(axis=1)
    origin = -((m + 1) // 2)  # the window of sample k is [k, k + m]: one period from it
    window_travel = (
        maximum_filter1d(sampled, m + 1, axis=0, origin=origin)
        - minimum_filter1d(sampled, m + 1, axis=0, origin=origin)
    )[:-m]
    # Twice the noise allowance: more than any window of white noise spans (10.5 σ for a million samples).
    moving = np.any(window_travel > _REST_FACTOR * tolerance * scale + 2.0 * noise, axis=1)
    if not moving.any():
        raise DataError(f"the positions barely move in any {period:g} s: no period of an excitation to find")
    runs = [run for run in _runs((excess <= tolerance) & moving) if run[1] - run[0] >= m]
    if not runs:
        # The two consecutive periods that come closest: the smallest over windows of a period of the largest excess.
        worst = maximum_filter1d(excess, m, origin=-(m // 2))[: excess.size - m + 1][moving[: excess.size - m + 1]]
        closest = 100.0 * float(np.min(worst, initial=np.inf))
        raise DataError(
            f"the positions do not repeat every {period:g} s: the two consecutive periods that come closest differ"
            f" by {closest:.3g} % of a joint's travel ({100.0 * tolerance:g} % allowed beyond the noise); is the"
            " period the excitation's?"
        )
    start, stop = max(runs, key=lambda run: (run[1] - run[0], -run[0]))
    trim = max(_REPEATABILITY_FACTOR * float(np.median(excess[start:stop])), _TRIM_FLOOR)
    repeats = np.flatnonzero(excess[start:stop] <= trim)
    if repeats.size and repeats[-1] - repeats[0] + 1 >= m:
        start, stop = start + int(repeats[0]), start + int(repeats[-1]) + 1
    periods = (stop - start) // m + 1
    first = float(grid[start])
    return PeriodicStretch(
        start_s=first,
        stop_s=first + periods * period,
        periods=int(periods),
        mismatch=float(np.max(excess[start : start + (periods - 1) * m])),
    )


def _runs(flags: np.ndarray) -> list[tuple[int, int]]:
    """``[start, stop)`` of each run of true ``flags``."""
    edges = np.diff(np.concatenate([[0], flags.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist(), strict=True))


def average_periods(data: PeriodicData) -> np.ndarray:
    """Mean over the periods, sample by sample ([Swevers2002] §4.3; [Volkmann2020] §III.C).

    ``x̄(k) = (1/P) Σ_j x_j(k)``. Averaging ``P`` periods divides the standard deviation
    of independent measurement noise by ``sqrt(P)``.

    Parameters
    ----------
    data : PeriodicData
        ``P`` periods of ``M`` samples.

    Returns
    -------
    numpy.ndarray
        Averaged period, shape ``(M, ...)``.
    """
    return np.mean(data.values, axis=0)


def period_variance(data: PeriodicData) -> np.ndarray:
    """Sample variance of the repetitions at every instant of the period ([Volkmann2020] eq. (7)).

    ``σ²(k) = 1/(P - 1) · Σ_j (x_j(k) - x̄(k))²``: the unbiased (``ddof=1``) variance of
    *one* measurement at instant ``k``. The variance of the averaged value
    :func:`average_periods` at that instant is ``σ²(k) / P``.

    Parameters
    ----------
    data : PeriodicData
        ``P >= 2`` periods of ``M`` samples.

    Returns
    -------
    numpy.ndarray
        Variance per sample and channel, shape ``(M, ...)``, in the squared unit of the values.
    """
    return np.var(data.values, axis=0, ddof=1)


def mean_noise_variance(data: PeriodicData) -> np.ndarray:
    """Noise variance of the averaged data, one value per channel ([Swevers2002] §4.3).

    Pools the scatter of all ``P·M`` samples around their per-instant means and
    divides by ``P`` for the averaging::

        σ̂² = (1/P) · 1/(M (P - 1)) · Σ_k Σ_j (x_j(k) - x̄(k))²
            = mean over k of period_variance(data) / P

    Notes
    -----
    [Swevers2002] divides the double sum by ``(P·M - 1)`` (``10N - 1`` there). That is the
    divisor for scatter around *one* mean; here each of the ``M`` instants has its own
    mean, which uses up ``M`` degrees of freedom, so the sum has expectation
    ``M (P - 1) σ²`` and the unbiased divisor is ``M (P - 1)``. [Swevers2002]'s estimate is
    this one times ``M (P - 1) / (P·M - 1) ≈ (P - 1) / P``, i.e. 10 % low for their 10
    periods. This function returns the unbiased value.

    Parameters
    ----------
    data : PeriodicData
        ``P >= 2`` periods of ``M`` samples.

    Returns
    -------
    numpy.ndarray
        Variance of the averaged data per channel, shape ``values.shape[2:]`` (a 0-d
        array for a single channel), in the squared unit of the values.
    """
    return np.mean(period_variance(data), axis=0) / data.periods


def sample_weights_from_variance(variance: np.ndarray, *, floor: float | None = None) -> np.ndarray:
    """Per-sample standard deviations for WLS from a per-sample variance ([Volkmann2020] eq. (8)-(9)).

    [Volkmann2020] weights the equation of joint ``j`` at sample ``p`` by ``1/σ²_{j,p}``
    (``W = diag(W_1⁻¹, …)``, ``W_j = diag(σ²_{j,1}, …)``). This returns
    ``σ = max(sqrt(variance), floor)``, the ``sample_std`` argument of
    :func:`dynamic_identification.core.estimation.weighted_least_squares`. The floor
    keeps a sample whose repetitions happen to agree exactly (quantised encoders or
    currents, a joint at rest, a noise-free simulation) from receiving infinite weight.

    When the torques passed to WLS are the *averaged* torques, their variance is
    ``period_variance(data) / P`` ([Volkmann2020]: ``var(y) = W⁻¹ / N_r``); pass that, so the
    parameter standard deviations that WLS reports are those of the averaged data.

    Parameters
    ----------
    variance : numpy.ndarray
        Variance per sample, shape ``(N, ...)`` (usually ``(N, n)``), >= 0.
    floor : float, optional
        Smallest returned standard deviation, in the unit of ``sqrt(variance)``, > 0.
        Default: per channel (column), ``DEFAULT_FLOOR_FRACTION`` (0.1) times the median
        of the channel's positive standard deviations; a channel with none uses the
        median over all channels; when every variance is zero all weights are equal
        (``σ = 1``, ordinary least squares). The variance from ``P`` repetitions
        scatters by ``sqrt(2 / (P - 1))`` relative, so few repetitions give some
        near-zero estimates by chance; the default bounds a single sample's weight
        ``1/σ²`` at 100 times the typical weight.

    Returns
    -------
    numpy.ndarray
        Standard deviations, shape of ``variance``, finite and > 0.

    Raises
    ------
    DataError
        If ``variance`` is a scalar, not finite, or negative.
    ValueError
        If ``floor`` is not finite and > 0.
    """
    var = np.asarray(variance, dtype=float)
    if var.ndim == 0:
        raise DataError("variance must have at least one dimension (samples), got a scalar")
    if not np.all(np.isfinite(var)):
        raise DataError("variance contains NaN or infinite entries")
    if np.any(var < 0.0):
        raise DataError(f"variance must be >= 0, got min {float(np.min(var))!r}")
    std = np.sqrt(var)
    if floor is not None:
        return np.maximum(std, positive_finite("floor", floor))
    positive = std > 0.0
    if not positive.any():
        return np.ones_like(std)
    overall = float(np.median(std[positive]))
    channels = std.reshape(std.shape[0], -1)
    per_channel = np.array(
        [np.median(column[column > 0.0]) if np.any(column > 0.0) else overall for column in channels.T]
    )
    return np.maximum(std, DEFAULT_FLOOR_FRACTION * per_channel.reshape(std.shape[1:]))


def fourier_filter(
    values: np.ndarray, *, period_s: float, harmonics: int, axis: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keep the first Fourier lines of one period and differentiate them exactly.

    [Swevers2002] §4.3, [Volkmann2020] §III.C.

    ``values`` holds one period of ``M`` uniform samples ``x(t_m)``, ``t_m = m T / M``
    (typically :func:`average_periods` of positions). Its DFT (``numpy.fft.rfft``) gives
    the Fourier coefficients ``X_k`` at pulsations ``ω_k = 2π k / T``; the offset and
    harmonics ``1 .. harmonics`` are kept ([Volkmann2020]: "only the first n_h + 1 Fourier
    coefficients are retained"), the others, which carry only noise for an excitation
    of ``harmonics`` lines, are set to zero. The derivatives multiply the kept lines by
    ``i ω_k`` and ``-ω_k²`` ([Swevers2002] eq. (16)-(17)): no leakage and no finite-difference
    error, because the data are exactly periodic.

    Parameters
    ----------
    values : numpy.ndarray
        One period of uniformly sampled data, ``M`` samples along ``axis`` (the sample at
        ``t = T``, the start of the next period, excluded).
    period_s : float
        Period ``T``, s.
    harmonics : int
        Highest harmonic kept, ``n_h`` (>= 0, < M / 2 so the Nyquist line, whose
        derivative is ambiguous, is never kept).
    axis : int, optional
        Sample axis of ``values``.

    Returns
    -------
    filtered : numpy.ndarray
        Filtered signal, shape of ``values``.
    first_derivative : numpy.ndarray
        Its time derivative, unit of ``values`` per s.
    second_derivative : numpy.ndarray
        Its second time derivative, unit of ``values`` per s².

    Raises
    ------
    DataError
        If ``values`` is a scalar or not finite, or has too few samples per period for ``harmonics``.
    ValueError
        If ``period_s`` or ``harmonics`` is invalid, or ``axis`` is out of range.

    Examples
    --------
    >>> t = np.arange(100) / 100.0
    >>> q, dq, ddq = fourier_filter(np.sin(2 * np.pi * t), period_s=1.0, harmonics=1)
    >>> bool(np.allclose(dq, 2 * np.pi * np.cos(2 * np.pi * t)))
    True
    """
    period = positive_finite("period_s", period_s)
    n_h = integer_at_least("harmonics", harmonics, 0)
    x = np.asarray(values, dtype=float)
    if x.ndim == 0:
        raise DataError("values must have at least one dimension, got a scalar")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis={axis!r} is out of range for values of shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise DataError("values contain NaN or infinite entries")
    m = x.shape[axis]
    if 2 * n_h >= m:
        raise DataError(f"harmonics={harmonics!r} must be below half the {m} samples per period (< {m / 2})")
    spectrum = np.fft.rfft(np.moveaxis(x, axis, 0), axis=0)
    spectrum[n_h + 1 :] = 0.0
    shape = (-1,) + (1,) * (spectrum.ndim - 1)
    i_omega = (1j * 2.0 * np.pi / period * np.arange(spectrum.shape[0])).reshape(shape)
    outputs = (spectrum, i_omega * spectrum, i_omega**2 * spectrum)
    filtered, first, second = (np.moveaxis(np.fft.irfft(c, n=m, axis=0), 0, axis) for c in outputs)
    return filtered, first, second
