"""From recorded samples to filtered motion on a uniform grid ([Gautier2013] §IV.A).

1. clean the stamps (drop duplicates, refuse time going backwards), recover the sample
   instants from the sample order when the stamps jitter (:func:`~.signal.recover_stamps`),
   and split at gaps: a hiccup of a few samples is bridged, only a step longer than
   ``gap_factor`` periods *and* a quarter period of the position cut-off
   (:func:`~.signal.longest_bridge_s`) ends a segment, and such a gap is never interpolated;
2. resample each contiguous segment onto a uniform grid at the true sample rate;
3. band-pass derivative estimation: zero-phase low-pass of ``q`` and central
   differences for ``q̇``, ``q̈`` (or the measured velocities, filtered).

This is the one stamp-and-gap rule of every path: ``identify``, ``predict``, the bags, and
the sliding window of the estimator node and ``dynid stream``
(:mod:`~dynamic_identification.core.identification.in_process`).

What a real recording needs is decided from the recording itself
(:func:`resolve_signal`), each choice with its reason, so that default settings work on
real robots and the parameter file records exactly what was done:

* **stamps** — recovered from the sample order when they scatter by more than 1 % of a
  period about a regular sequence (a millisecond counter on a 978 Hz stream, jitter,
  the bunched stamps after a driver's stall), the order of the samples is whole (no
  samples missing where the stamps scatter by about a period) and the positions are
  smoother (less power above 20 Hz) against the recovered instants; recorded otherwise (a
  sampler that jitters and stamps exactly);
* **sample rate** — from the (recovered) stamps' median period, not a nominal figure;
* **position cut-off** — 20 times the motion's bandwidth (the frequency below which
  99 % of the joint-velocity power lies, the noise floor removed), within
  2 Hz … min(20 Hz, rate / 10): the band a rigid-body model needs, no more noise;
* **velocities** — the recorded ones when they agree with the derivative of the
  filtered positions within 5 % (same band, no lag or scale error), else the derivative.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np

from dynamic_identification.core.errors import DataError, InsufficientExcitationError
from dynamic_identification.core.identification.settings import AUTO_CUTOFF_HZ, SignalSettings
from dynamic_identification.core.mechanism.seam import TreeMotion
from dynamic_identification.core.signal.filters import (
    LinearResampling,
    clean_time_stamps,
    default_decimation,
    derivatives_at,
    differentiate,
    filter_positions,
    linear_resampling,
    longest_bridge_s,
    lowpass_to_edges,
    lowpass_zero_phase,
    recover_stamps,
    resample_uniform,
    roughness,
)
from dynamic_identification.core.signal.stamps import BACKWARD_JUMP_S, accepted_samples

STAMP_JITTER_LIMIT = 0.01
"""Stamps scattering by more than this fraction of a period about a regular sequence are candidates for recovery."""

ROUGHNESS_GAIN = 0.95
"""Jittered stamps are recovered only when the positions' roughness against the recovered instants is below
this fraction of their roughness against the recorded stamps (:func:`~.signal.roughness`)."""

SMEARED_STEPS_PER_S = 0.2
"""Jittered stamps are recovered only when the recovery spreads fewer steps than this per second of stamps over
its running median (:attr:`~.signal.RecoveredStamps.smeared_steps`: samples missing from the order of stamps that
scatter by about a period). On the Panda preset's 1 ms counter at 978 Hz, whose colliding stamps are dropped as
repeated, about two a second: recovered, its instants made the sliding window's validation torque error 1.5-3.6
times that on the true instants (``bench/bench_window_stamps.py --variants``); one long stall in a minute stays
below."""

ROUGHNESS_SAMPLES = 60_000
"""The stamp decision compares roughness over at most this many first samples."""

BANDWIDTH_POWER_FRACTION = 0.99
"""The motion's bandwidth: the frequency below which this fraction of the joint-velocity power lies."""

BANDWIDTH_SIGNIFICANCE = 100.0
"""A spectral bin of the positions counts as motion when its power exceeds this many times the noise floor."""

CUTOFF_PER_BANDWIDTH = 20.0
"""The automatic position cut-off is this many times the motion's bandwidth."""

AUTO_CUTOFF_RANGE_HZ = (2.0, 20.0)
"""Bounds of the automatic position cut-off, Hz (and at most a tenth of the sample rate)."""

AUTO_CUTOFF_DECIMALS = 9
"""The automatic position cut-off is rounded to this many decimals of a Hz (1e-9 Hz, correctly rounded by ``round``).

It is decided from a Welch bin of the positions' spectrum (a multiple of rate / segment length: 1 Hz steps of
cut-off on 20 s or more) or a tenth of the sample rate, both carrying the float noise of a rate measured from the
stamps' median period (1e-13 relative): 20 Hz came out 19.999999999999982, stored and printed so. Rounding to 1e-9 Hz
drops that noise, so the decision is stored, printed and read back as made, and changes the filter by at most 5e-10
of the lowest cut-off (round-off to the estimates; no digit the decision made is below it)."""

MIN_SEGMENT_SAMPLES = 4
"""A segment between two gaps needs this many samples for its motion to be estimated to its ends (a cubic)."""

VELOCITY_AGREEMENT = 0.05
"""Recorded velocities within this relative RMS difference of the differentiated positions are used."""


@dataclass(frozen=True)
class SignalChoice:
    """The signal settings a recording was processed with, every ``auto`` decided, and why.

    ``signal`` holds no ``auto`` (:attr:`SignalSettings.resolved`): stored in a parameter
    file, it makes ``predict`` process new data exactly the same way. ``reasons`` says in
    one line per decision what was chosen and why; ``rate_hz`` is the sample rate found.
    ``stamps`` and ``resampled`` are what the decisions were made on: the cleaned stamps
    and the longest segment's positions on the grid, which :func:`estimate_motion` takes
    over instead of computing them again (``None`` for a choice made by hand).
    """

    signal: SignalSettings
    reasons: tuple[str, ...]
    rate_hz: float
    stamps: _Stamps | None = field(default=None, repr=False, compare=False)
    resampled: _Resampled | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class Motion:
    """Uniformly sampled, filtered motion of one contiguous segment.

    ``time`` (s) ``(N,)``; ``torques`` (N·m, ``None`` when not given) ``(N, n)``, read where they are used
    (:class:`~.signal.LinearResampling`: indexed by a slice of rows, or :meth:`~.signal.LinearResampling.whole`);
    ``rate_hz`` the grid's rate. ``positions`` (rad) are the low-passed positions the motion's ``q`` are rows
    ``[first, first + N)`` of (:func:`~.signal.filter_positions`: with the filter's edge samples,
    which the derivatives of the first and last rows reach into); ``velocities`` (rad/s, the same
    rows) the low-passed measured velocities, ``None`` when the velocities are differentiated
    positions. ``dq`` (rad/s) and ``ddq`` (rad/s²) are differentiated when first asked for;
    :meth:`rows` differentiates a block of rows only, so a long recording is never held with its
    derivatives whole. It serves where the
    :class:`~dynamic_identification.core.mechanism.seam.TreeMotion` of a robot without closures does
    (``q``, ``dq``, ``ddq``, ``projection`` ``None``, :meth:`rows`).
    """

    time: np.ndarray
    positions: np.ndarray
    first: int
    torques: LinearResampling | None
    rate_hz: float
    velocities: np.ndarray | None = None
    projection: ClassVar[None] = None

    @property
    def q(self) -> np.ndarray:
        """Filtered positions ``(N, n)``, rad."""
        return self.positions[self.first : self.first + self.time.shape[0]]

    @property
    def dq(self) -> np.ndarray:
        """Velocities ``(N, n)``, rad/s: band-pass derivatives of the positions, or the filtered measured ones."""
        return self._whole.dq

    @property
    def ddq(self) -> np.ndarray:
        """Accelerations ``(N, n)``, rad/s²: the derivatives of :attr:`dq`."""
        return self._whole.ddq

    @functools.cached_property
    def _whole(self) -> TreeMotion:
        return self.rows(slice(None))

    def rows(self, block: slice) -> TreeMotion:
        """The motion of the contiguous rows ``block``, differentiated there only (equal to those rows of the
        whole motion's, bit for bit: :func:`~.signal.derivatives_at`)."""
        start, stop, _ = block.indices(self.time.shape[0])
        rows = slice(self.first + start, self.first + max(start, stop))
        if self.velocities is None:
            dq, ddq = derivatives_at(self.positions, rows, rate_hz=self.rate_hz, count=2)
        else:
            dq = self.velocities[rows]
            (ddq,) = derivatives_at(self.velocities, rows, rate_hz=self.rate_hz, count=1)
        return TreeMotion(q=self.positions[rows], dq=dq, ddq=ddq)


def edge_samples(rate_hz: float, cutoff_hz: float | None) -> int:
    """Samples dropped at each end of a segment, where the zero-phase filter's transient spoils derivatives."""
    return int(np.ceil(4.0 * rate_hz / cutoff_hz)) if cutoff_hz else 1


def bridging_cutoff_hz(settings: SignalSettings, rate_hz: float) -> float | None:
    """The position cut-off (Hz) that decides which stamp steps are bridged (:func:`~.signal.longest_bridge_s`):
    the configured one, or, while it is still to be chosen from the data, the highest the automatic rule can
    choose at ``rate_hz`` (the shortest bridge: nothing is bridged that the final cut-off would not bridge)."""
    if settings.position_cutoff_hz == AUTO_CUTOFF_HZ:
        return highest_automatic_cutoff_hz(rate_hz)
    return settings.position_cutoff_hz


def longest_step_s(settings: SignalSettings, period_s: float) -> float:
    """The longest stamp step, s, a segment bridges under ``settings`` for samples ``period_s`` (s) apart
    (``signal.rate_hz`` wins when set)."""
    period = 1.0 / settings.rate_hz if settings.rate_hz else float(period_s)
    cutoff = bridging_cutoff_hz(settings, 1.0 / period)
    return longest_bridge_s(period, gap_factor=settings.gap_factor, cutoff_hz=cutoff)


def decimation_factor(signal: SignalSettings, rate_hz: float) -> int:
    """The parallel-decimation factor of ``signal`` at ``rate_hz``: the configured one, or the default
    for the position cut-off (a quarter of the rate without a filter)."""
    cutoff = signal.position_cutoff_hz or 0.25 * rate_hz
    return signal.decimation or default_decimation(rate_hz, position_cutoff_hz=cutoff)


@dataclass(frozen=True)
class _Stamps:
    """Cleaned stamps: rows kept, their instants relative to ``origin`` (s), segments, duplicates, period.

    ``jitter`` is the stamps' scatter about a regular sequence (fraction of a period),
    ``recovered`` whether ``time`` holds the recovered instants, ``roughness_ratio`` the
    roughness of the positions against the recovered over the recorded stamps (``nan`` when
    not compared), ``smeared_steps`` the steps the recovery would have spread, when they
    decided to keep the stamps (0 otherwise), and ``repeated_stamps`` the samples kept though
    stamped again with their predecessor's stamp, placed by the recovery (0 when not recovered), ``stale`` the rows
    dropped for a stamp earlier than one before them (:func:`~.signal.clean_time_stamps`).
    """

    keep: np.ndarray
    time: np.ndarray
    origin: float
    segments: tuple[tuple[int, int], ...]
    duplicates: int
    period_s: float
    jitter: float = 0.0
    recovered: bool = False
    roughness_ratio: float = float("nan")
    smeared_steps: int = 0
    repeated_stamps: int = 0
    stale: int = 0


@dataclass(frozen=True)
class _Resampled:
    """Positions of the rows ``segment`` (``[start, stop)`` of the cleaned stamps) resampled on the uniform ``grid``
    (s, relative to the stamps' origin) by the cubic spline: ``q`` ``(M, n)``."""

    segment: tuple[int, int]
    grid: np.ndarray
    q: np.ndarray


def _roughness_ratio(recorded: np.ndarray, recovered: np.ndarray, q: np.ndarray, segment: tuple[int, int]) -> float:
    """Roughness of the positions against ``recovered`` over against ``recorded`` stamps, summed over joints.

    Measured on (at most :data:`ROUGHNESS_SAMPLES` of) the longest segment, above the
    highest automatic cut-off; joints at rest add the same noise to both sides. A sample stamped
    again with its predecessor's stamp has no place against the recorded stamps: both sides leave
    it out.
    """
    start, stop = segment
    stop = min(stop, start + ROUGHNESS_SAMPLES)
    period = float(np.median(np.diff(recovered[start:stop])))
    rate = 1.0 / period
    cutoff = highest_automatic_cutoff_hz(rate)
    stamped = np.arange(start, stop)[accepted_samples(recorded[start:stop])]
    try:
        against_recorded = roughness(recorded[stamped], q[stamped], rate_hz=rate, cutoff_hz=cutoff)
        against_recovered = roughness(recovered[stamped], q[stamped], rate_hz=rate, cutoff_hz=cutoff)
    except DataError:
        return 1.0  # too short to tell: keep the stamps
    total = float(np.sum(against_recorded**2))
    return float(np.sqrt(np.sum(against_recovered**2) / total)) if total > 0.0 else 1.0


@dataclass(frozen=True)
class SampleInstants:
    """The instants a :class:`SignalSettings` takes samples at: the stamps as given or the recovered instants.

    ``time`` (s, ``(N,)``) are the instants to use, ``recovered`` whether they were recovered
    from the sample order (:func:`~.signal.recover_stamps`), ``period_s`` their period, ``jitter``
    the stamps' scatter about a regular sequence (fraction of a period; 0 when not measured),
    ``smeared_steps`` the steps the recovery would spread (:attr:`~.signal.RecoveredStamps.smeared_steps`),
    ``roughness_ratio`` the positions' roughness against the recovered over the recorded
    stamps (``nan`` when not compared).
    """

    time: np.ndarray
    recovered: bool
    period_s: float
    jitter: float = 0.0
    smeared_steps: int = 0
    roughness_ratio: float = float("nan")


def sample_instants(
    stamps: np.ndarray,
    q: np.ndarray,
    settings: SignalSettings,
    *,
    segment: tuple[int, int] | None = None,
) -> SampleInstants:
    """The instants of ``settings.stamps`` for cleaned stamps (s) and their positions (rad).

    The stamps increase strictly, or, for samples stamped again with their predecessor's stamp
    (:func:`~.signal.clean_time_stamps` with ``values``), do not decrease: such samples have an
    instant only when recovered, and a caller that keeps the recorded stamps drops them.

    ``recorded`` keeps the stamps; ``recovered`` recovers the instants; ``auto`` recovers
    them when the stamps scatter by more than :data:`STAMP_JITTER_LIMIT` of a period, the
    recovery spreads fewer than :data:`SMEARED_STEPS_PER_S` steps a second (samples missing
    from the order of stamps that scatter by about a period, which it would misplace by up
    to half a period), *and* the positions are smoother against the recovered instants (by
    :data:`ROUGHNESS_GAIN`, compared on ``segment``, rows ``[start, stop)`` of one gap-free
    stretch; default all): a driver that stamps late scatters stamps of regular samples, but
    a sampler that jitters and stamps exactly scatters them too, and only the positions tell
    the two apart. Fewer than 8 stamps are kept as they are. The one rule of offline
    identification and of the sliding window.

    Raises
    ------
    DataError
        When the stamps do not increase strictly, or ``recovered`` is asked for and the recovered instants would
        not increase (``auto`` then keeps the stamps).
    """
    kept = np.asarray(stamps, dtype=float)
    period = float(np.median(np.diff(kept))) if kept.size > 1 else float("nan")
    recorded = SampleInstants(kept, recovered=False, period_s=period)
    if settings.stamps == "recorded" or kept.size < 8:
        return recorded
    try:
        candidate = recover_stamps(kept, gap_factor=settings.gap_factor)
    except DataError:
        if settings.stamps == "recovered":
            raise
        return recorded  # auto: stamps too irregular to recover an order from are taken as they are
    ratio = float("nan")
    if settings.stamps == "auto":
        if candidate.jitter <= STAMP_JITTER_LIMIT:
            return replace(recorded, jitter=candidate.jitter)
        if candidate.smeared_steps > SMEARED_STEPS_PER_S * float(kept[-1] - kept[0]):
            return replace(recorded, jitter=candidate.jitter, smeared_steps=candidate.smeared_steps)
        ratio = _roughness_ratio(kept, candidate.time, np.asarray(q, dtype=float), segment or (0, kept.size))
        if ratio >= ROUGHNESS_GAIN:
            return replace(recorded, jitter=candidate.jitter, roughness_ratio=ratio)
    return SampleInstants(
        candidate.time, True, candidate.period_s, candidate.jitter, candidate.smeared_steps, roughness_ratio=ratio
    )


def _stamps(time: np.ndarray, settings: SignalSettings, q: np.ndarray) -> _Stamps:
    """Drop repeated stamps, recover the instants when asked or when the data say so (:func:`sample_instants`,
    judged on the longest gap-free segment), split at gaps (steps longer than :func:`longest_step_s`).

    The recovery sees every sample in its order, those stamped again with their predecessor's stamp included
    (:func:`~.signal.clean_time_stamps` with the positions); the recorded stamps keep only the first of a repeated
    stamp's rows."""
    stamps = np.asarray(time, dtype=float)
    report = clean_time_stamps(stamps, gap_factor=settings.gap_factor)
    bridge_s = longest_step_s(settings, report.nominal_dt)
    report = clean_time_stamps(stamps, gap_factor=settings.gap_factor, bridge_s=bridge_s)
    ordered = report
    if settings.stamps != "recorded" and report.duplicates_dropped:
        ordered = clean_time_stamps(stamps, gap_factor=settings.gap_factor, bridge_s=bridge_s, values=q)
    # Stamps relative to the first one keep full resolution for epoch-based clocks (~1.7e9 s).
    origin = float(stamps[0])
    kept = stamps[report.keep] - origin
    recorded = _Stamps(
        report.keep,
        kept,
        origin,
        report.segments,
        report.duplicates_dropped,
        report.nominal_dt,
        stale=report.stale_dropped,
    )
    longest = max(ordered.segments, key=lambda segment: segment[1] - segment[0], default=(0, ordered.keep.size))
    instants = sample_instants(stamps[ordered.keep] - origin, _kept_rows(q, ordered.keep), settings, segment=longest)
    if not instants.recovered:
        return replace(
            recorded,
            jitter=instants.jitter,
            roughness_ratio=instants.roughness_ratio,
            smeared_steps=instants.smeared_steps,
        )
    split = clean_time_stamps(
        instants.time, gap_factor=settings.gap_factor, bridge_s=longest_step_s(settings, instants.period_s)
    )
    return _Stamps(
        ordered.keep,
        instants.time,
        origin,
        split.segments,
        ordered.duplicates_dropped,
        instants.period_s,
        instants.jitter,
        recovered=True,
        roughness_ratio=instants.roughness_ratio,
        smeared_steps=instants.smeared_steps,
        repeated_stamps=ordered.repeated_stamps,
        stale=ordered.stale_dropped,
    )


def resolve_signal(
    time: np.ndarray, q: np.ndarray, settings: SignalSettings, *, dq_measured: np.ndarray | None = None
) -> SignalChoice:
    """Decide every ``auto`` of ``settings`` from the recording (module docstring), with the reasons.

    Settings given explicitly are kept (and said so only where they matter).

    Raises
    ------
    DataError
        Bad stamps or too few samples to decide.
    """
    stamps = _stamps(time, settings, q)
    reasons = []
    if stamps.stale:
        reasons.append(
            f"stamps: {stamps.stale} rows stamped earlier than a row before them (by less than {BACKWARD_JUMP_S:g} s:"
            " stale or out of order) left out, as dynid stream and the nodes leave them out"
        )
    stamp_choice = settings.stamps
    if settings.stamps == "auto":
        stamp_choice = "recovered" if stamps.recovered else "recorded"
        reasons.append(_stamp_reason(stamps))
    rate = settings.rate_hz if settings.rate_hz else 1.0 / stamps.period_s
    if not settings.rate_hz:
        reasons.append(f"sample rate: {rate:.6g} Hz from the stamps")
    start, stop = max(stamps.segments, key=lambda segment: segment[1] - segment[0])
    longest = slice(start, stop)
    segment_time = stamps.time[longest]
    grid, q_uniform = resample_uniform(segment_time, _kept_rows(q, stamps.keep)[longest], rate, kind="cubic")
    cutoff = settings.position_cutoff_hz
    if cutoff == AUTO_CUTOFF_HZ:
        bandwidth = motion_bandwidth_hz(q_uniform, rate)
        cutoff = automatic_cutoff_hz(bandwidth, rate)
        reasons.append(
            f"position cut-off: {cutoff:.3g} Hz ({CUTOFF_PER_BANDWIDTH:g} × the motion's {bandwidth:.3g} Hz bandwidth,"
            f" within {AUTO_CUTOFF_RANGE_HZ[0]:g}-{highest_automatic_cutoff_hz(rate):.3g} Hz)"
        )
    _check_cutoff(cutoff, rate)
    if not settings.decimation:
        factor = decimation_factor(replace(settings, position_cutoff_hz=cutoff), rate)
        reasons.append(f"decimation: {factor} (to {rate / factor:.4g} Hz, at least 4 × the cut-off)")
    velocity = settings.velocity
    if velocity == "auto":
        if dq_measured is None:
            velocity = "differentiated"
            reasons.append("velocities: differentiated positions (the recording has none)")
        else:
            dq_recorded = _kept_rows(dq_measured, stamps.keep)[longest]
            _, dq_uniform = resample_uniform(segment_time, dq_recorded, rate)
            agreement = compare_velocities(q_uniform, dq_uniform, rate_hz=rate, cutoff_hz=cutoff)
            difference = agreement.difference
            velocity = "measured" if difference <= VELOCITY_AGREEMENT else "differentiated"
            reasons.append(
                f"velocities: recorded ones (within {100 * difference:.2g} % of the differentiated positions,"
                f" {agreement.lag_text(rate)})"
                if velocity == "measured"
                else f"velocities: differentiated positions (the recorded ones differ by {100 * difference:.2g} %:"
                " lag, scale or noise)"
            )
    signal = replace(
        settings,
        position_cutoff_hz=cutoff,
        velocity=velocity,
        stamps=stamp_choice,
        rate_hz=settings.rate_hz if settings.rate_hz else None,
    )
    return SignalChoice(
        signal=signal,
        reasons=tuple(reasons),
        rate_hz=rate,
        stamps=stamps,
        resampled=_Resampled(segment=(start, stop), grid=grid, q=q_uniform),
    )


def _check_cutoff(cutoff_hz: float | None, rate_hz: float) -> None:
    """Refuse a position cut-off at or above the Nyquist frequency of ``rate_hz``."""
    if cutoff_hz is not None and cutoff_hz >= 0.5 * rate_hz:
        raise DataError(f"position_cutoff_hz={cutoff_hz} must be below the Nyquist frequency {0.5 * rate_hz:.6g} Hz")


def _stamp_reason(stamps: _Stamps) -> str:
    """Why ``stamps: auto`` kept or recovered the stamps, one line."""
    scatter = f"they scatter by {100 * stamps.jitter:.2g} % of a period"
    if stamps.recovered:
        repeated = (
            f"; {stamps.repeated_stamps} samples stamped again with their predecessor's stamp are placed by their order"
            if stamps.repeated_stamps
            else ""
        )
        return (
            f"stamps: recovered from the sample order ({scatter}; the positions are"
            f" {1.0 / stamps.roughness_ratio:.3g}× smoother against the recovered instants{repeated})"
        )
    if stamps.smeared_steps:
        return (
            f"stamps: as recorded ({scatter}, but the sample order slips {stamps.smeared_steps} times where they"
            " scatter by about a period: samples are missing, recovered instants would be off by up to half a period)"
        )
    if np.isnan(stamps.roughness_ratio):
        return f"stamps: as recorded ({scatter}: regular)"
    return (
        f"stamps: as recorded ({scatter}, but the positions are no smoother against recovered instants:"
        " the samples were taken at the stamps)"
    )


def automatic_cutoff_hz(bandwidth_hz: float, rate_hz: float) -> float:
    """The position cut-off for a motion of ``bandwidth_hz``: :data:`CUTOFF_PER_BANDWIDTH` times it, within
    :data:`AUTO_CUTOFF_RANGE_HZ` and at most a tenth of ``rate_hz`` (:func:`highest_automatic_cutoff_hz`), Hz, to
    :data:`AUTO_CUTOFF_DECIMALS`."""
    cutoff = float(
        np.clip(CUTOFF_PER_BANDWIDTH * bandwidth_hz, AUTO_CUTOFF_RANGE_HZ[0], highest_automatic_cutoff_hz(rate_hz))
    )
    return round(cutoff, AUTO_CUTOFF_DECIMALS)


def highest_automatic_cutoff_hz(rate_hz: float) -> float:
    """The highest position cut-off the automatic rule chooses for samples at ``rate_hz``: the top of
    :data:`AUTO_CUTOFF_RANGE_HZ`, at most a tenth of the rate, Hz."""
    return min(AUTO_CUTOFF_RANGE_HZ[1], 0.1 * rate_hz)


def motion_bandwidth_hz(q_uniform: np.ndarray, rate_hz: float) -> float:
    """The frequency (Hz) below which :data:`BANDWIDTH_POWER_FRACTION` of the joint-velocity power lies.

    From the positions' power spectrum (Welch, ``scipy.signal.welch``) of every joint:
    its noise floor is the median level above a quarter of the rate (encoder quantisation
    and sensor noise are white in position there, motion is not); only the bins that stand
    :data:`BANDWIDTH_SIGNIFICANCE` times above the floor count as motion, less the floor,
    weighted by ``(2πf)²`` into velocity power, summed over joints. Counting every bin would
    let the noise, whose velocity power grows with ``f²``, set the bandwidth.
    """
    q = np.asarray(q_uniform, dtype=float)
    segment = int(min(q.shape[0], max(256, round(20.0 * rate_hz))))
    import scipy.signal  # here: the nodes that never estimate a cut-off do not load scipy.signal (issue 26)

    frequency, power = scipy.signal.welch(q, fs=rate_hz, nperseg=segment, axis=0, detrend="linear")
    floor = np.median(power[frequency > 0.25 * rate_hz], axis=0)
    motion = np.where(power > BANDWIDTH_SIGNIFICANCE * floor, power - floor, 0.0)
    velocity_power = ((2.0 * np.pi * frequency) ** 2)[:, None] * motion
    signal_power = velocity_power.sum(axis=1)
    total = float(signal_power.sum())
    if total <= 0.0:
        return float(frequency[1]) if frequency.size > 1 else 0.0
    cumulative = np.cumsum(signal_power) / total
    return float(frequency[min(int(np.searchsorted(cumulative, BANDWIDTH_POWER_FRACTION)), frequency.size - 1)])


def _kept_rows(values: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``values[keep]`` (rows of samples; ``keep`` the increasing indices of the kept rows) as floats: the array
    itself when every row is kept, as in most recordings, rather than a copy (29 MB for 600 k samples of 6 joints)."""
    array = np.asarray(values, dtype=float)
    return array if keep.size == array.shape[0] else array[keep]


@dataclass(frozen=True)
class VelocityAgreement:
    """Recorded velocities against the derivative of the filtered positions, both low-passed alike
    (:func:`compare_velocities`): their relative RMS ``difference`` and the recorded ones' lag ``lag_s`` (s, positive
    behind), the least-squares ``δ`` of the difference ``≈ −δ q̈`` (a driver's backward difference: half a period)."""

    difference: float
    lag_s: float

    def lag_text(self, rate_hz: float) -> str:
        """``"lagging them by 0.5 ms, 0.5 sample periods: …"``, or ``"in time with them"`` within a tenth of one; from
        a quarter of a period on, which source fits depends on when the torques were taken (README, signal.velocity)."""
        periods = self.lag_s * rate_hz
        if abs(periods) < 0.1:
            return "in time with them"
        way = "lagging" if periods > 0 else "leading"
        text = f"{way} them by {1e3 * abs(self.lag_s):.2g} ms, {abs(periods):.2g} sample periods"
        if abs(periods) < 0.25:
            return text
        return f"{text}: signal.velocity differentiated if the torques are read at the samples (a torque sensor)"


def compare_velocities(
    q_uniform: np.ndarray, dq_recorded: np.ndarray, *, rate_hz: float, cutoff_hz: float | None
) -> VelocityAgreement:
    """Recorded velocities against the derivative of the filtered positions, both low-passed alike, over the joints'
    samples faster than a tenth of their peak speed (:class:`VelocityAgreement`)."""
    _, derivative, acceleration = differentiate(q_uniform, rate_hz=rate_hz, cutoff_hz=cutoff_hz)
    recorded = (
        lowpass_zero_phase(dq_recorded, cutoff_hz=cutoff_hz, rate_hz=rate_hz) if cutoff_hz is not None else dq_recorded
    )
    moving = np.abs(derivative) > 0.1 * np.abs(derivative).max(axis=0, initial=0.0)
    reference = float(np.linalg.norm(np.where(moving, derivative, 0.0)))
    if reference <= 0.0:
        return VelocityAgreement(float("inf"), 0.0)
    difference = np.where(moving, recorded - derivative, 0.0)
    moving_acceleration = np.where(moving, acceleration, 0.0)
    power = float(np.vdot(moving_acceleration, moving_acceleration))
    lag_s = -float(np.vdot(moving_acceleration, difference)) / power if power > 0.0 else 0.0
    return VelocityAgreement(float(np.linalg.norm(difference)) / reference, lag_s)


def row_instants(time: np.ndarray, choice: SignalChoice) -> np.ndarray:
    """Each row's instant on the clock of :func:`estimate_motion`'s grids, s ``(N,)``: its stamp ``time``, or, when
    ``choice`` recovered the stamps, its recovered sample instant (a sample stamped again with its predecessor's stamp
    included); a repeated message's row (dropped) takes the instant of the row it repeats. What a prediction of
    every row is read at: a late stamp (a driver's stall) is not when its sample was taken."""
    stamps = np.asarray(time, dtype=float)
    cleaned = choice.stamps
    if cleaned is None or not cleaned.recovered:
        return stamps
    latest_kept = np.searchsorted(cleaned.keep, np.arange(stamps.shape[0]), side="right") - 1
    return (cleaned.origin + cleaned.time)[np.maximum(latest_kept, 0)]


def estimate_motion(
    time: np.ndarray,
    q: np.ndarray,
    settings: SignalSettings | SignalChoice,
    *,
    torques: np.ndarray | None = None,
    dq_measured: np.ndarray | None = None,
    edges: bool = False,
) -> tuple[list[Motion], int]:
    """Clean stamps, resample and differentiate; one :class:`Motion` per segment.

    Settings with an ``auto`` left are decided first (:func:`resolve_signal`); given the
    :class:`SignalChoice` that :func:`resolve_signal` made for these very samples, its
    stamps and resampled positions are taken over, not computed again. Returns
    the motions and the number of duplicate stamps dropped. By default the filter's
    transient at each end of a segment (:func:`edge_samples`) is dropped and segments too
    short to keep anything are left out: identification uses only samples whose
    derivatives are exact. With ``edges`` (a prediction of every recorded row) each
    segment is kept whole, its ends filtered on the cubic extrapolation of its last
    cut-off period (``differentiate(..., edges="extrapolated")``); only segments of fewer
    than :data:`MIN_SEGMENT_SAMPLES` samples are left out.

    Raises
    ------
    DataError
        Bad stamps, a cut-off above the Nyquist frequency, no segment long enough.
    """
    choice: SignalChoice | None
    if isinstance(settings, SignalChoice):
        choice, signal = settings, settings.signal
    elif not settings.resolved:
        choice = resolve_signal(time, q, settings, dq_measured=dq_measured)
        signal = choice.signal
    else:
        choice, signal = None, settings
    stamps = choice.stamps if choice is not None and choice.stamps is not None else _stamps(time, signal, q)
    resampled = choice.resampled if choice is not None else None
    rate = signal.rate_hz if signal.rate_hz else 1.0 / stamps.period_s
    _check_cutoff(signal.position_cutoff_hz, rate)
    origin = stamps.origin
    kept_time = stamps.time
    report_keep = stamps.keep
    kept_q = _kept_rows(q, report_keep)
    kept_torques = None if torques is None else _kept_rows(torques, report_keep)
    edge = 0 if edges else edge_samples(rate, signal.position_cutoff_hz)
    shortest = MIN_SEGMENT_SAMPLES if edges else 16
    padding = "extrapolated" if edges else "odd"
    motions = []
    for start, stop in stamps.segments:
        if stop - start < shortest:
            continue
        t = kept_time[start:stop]
        if resampled is not None and resampled.segment == (start, stop):
            grid, q_uniform = resampled.grid, resampled.q
        else:
            grid, q_uniform = resample_uniform(t, kept_q[start:stop], rate, kind="cubic")
        if grid.shape[0] < max(2 * edge + 16, MIN_SEGMENT_SAMPLES):
            continue
        positions, pad = filter_positions(q_uniform, rate_hz=rate, cutoff_hz=signal.position_cutoff_hz, edges=padding)
        velocities = None
        if signal.velocity == "measured" and dq_measured is not None:
            _, dq_uniform = resample_uniform(t, _kept_rows(dq_measured, report_keep)[start:stop], rate)
            lowpass = lowpass_to_edges if edges else lowpass_zero_phase
            velocities = (
                lowpass(dq_uniform, cutoff_hz=signal.position_cutoff_hz, rate_hz=rate)
                if signal.position_cutoff_hz is not None
                else dq_uniform
            )
            positions, pad = positions[pad : positions.shape[0] - pad], 0  # the rows of the measured velocities
        inner = slice(edge, grid.shape[0] - edge)
        tau = None
        if kept_torques is not None:
            tau = linear_resampling(t, kept_torques[start:stop], rate).within(inner)
        motions.append(
            Motion(
                time=grid[inner] + origin,
                positions=positions,
                first=pad + edge,
                torques=tau,
                rate_hz=rate,
                velocities=velocities,
            )
        )
    if not motions:
        raise DataError(
            f"no contiguous segment long enough to differentiate in {len(kept_time)} samples"
            f" (each needs {2 * edge + 16} samples at {rate:.6g} Hz)"
        )
    return motions, stamps.duplicates


def check_samples(joint_names: tuple[str, ...], q: np.ndarray, torques: np.ndarray, *, where: str = "") -> None:
    """Refuse non-finite positions or torques, naming the joint and the sample."""
    for name, array in (("position", q), ("torque", torques)):
        finite = np.isfinite(np.asarray(array, dtype=float))
        if not finite.all():
            row, column = (int(i) for i in np.argwhere(~finite)[0])
            raise DataError(f"{where}{name} of joint {joint_names[column]} is not finite at sample {row}")


def joint_travel(q: np.ndarray) -> np.ndarray:
    """Each joint's travel over the samples ``q`` ``(N, n)``: its largest position less its smallest (rad, ``(n,)``).

    One joint at a time: ``np.ptp(q, axis=0)`` of a row-major recording reduces ``n`` numbers at a time, several
    times slower on a long recording (``bench/bench_identify.py``).
    """
    positions = np.asarray(q, dtype=float)
    return np.array([np.ptp(positions[:, j]) for j in range(positions.shape[1])], dtype=float)


def check_motion(q: np.ndarray, joint_names: tuple[str, ...], *, min_motion_rad: float) -> np.ndarray:
    """The joints' travel (:func:`joint_travel`, rad); refuses a recording in which no joint moved more than
    ``min_motion_rad``."""
    travel = joint_travel(q)
    if travel.max(initial=0.0) < min_motion_rad:
        worst = joint_names[int(np.argmax(travel))] if travel.size else "none"
        raise InsufficientExcitationError(
            f"the robot is standing still: the largest joint travel is {travel.max(initial=0.0):.3g} rad"
            f" ({worst}), below min_motion_rad={min_motion_rad}"
        )
    return travel


__all__ = [
    "MIN_SEGMENT_SAMPLES",
    "Motion",
    "SampleInstants",
    "SignalChoice",
    "VelocityAgreement",
    "automatic_cutoff_hz",
    "bridging_cutoff_hz",
    "check_motion",
    "check_samples",
    "compare_velocities",
    "decimation_factor",
    "edge_samples",
    "estimate_motion",
    "joint_travel",
    "longest_step_s",
    "motion_bandwidth_hz",
    "resolve_signal",
    "row_instants",
    "sample_instants",
]
