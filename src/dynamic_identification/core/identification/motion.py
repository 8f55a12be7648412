"""From recorded samples to filtered motion on a uniform grid ([Gautier2013] §IV.A).

1. clean the stamps (drop duplicates, refuse time going backwards, split at gaps of
   more than ``gap_factor`` periods: a gap is never interpolated);
2. resample each contiguous segment onto a uniform grid at the nominal rate;
3. band-pass derivative estimation: zero-phase low-pass of ``q`` and central
   differences for ``q̇``, ``q̈`` (or the measured velocities, filtered).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynamic_identification.core.errors import DataError, InsufficientExcitationError
from dynamic_identification.core.identification.settings import SignalSettings
from dynamic_identification.core.signal import (
    clean_time_stamps,
    default_decimation,
    differentiate,
    lowpass_zero_phase,
    resample_uniform,
)


@dataclass(frozen=True)
class Motion:
    """Uniformly sampled, filtered motion of one contiguous segment.

    ``time`` (s) ``(N,)``; ``q`` (rad), ``dq`` (rad/s), ``ddq`` (rad/s²) and ``torques``
    (N·m, ``None`` when not given) ``(N, n)``; ``rate_hz`` the grid's rate.
    """

    time: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    torques: np.ndarray | None
    rate_hz: float


def edge_samples(rate_hz: float, cutoff_hz: float | None) -> int:
    """Samples dropped at each end of a segment, where the zero-phase filter's transient spoils derivatives."""
    return int(np.ceil(4.0 * rate_hz / cutoff_hz)) if cutoff_hz else 1


def decimation_factor(signal: SignalSettings, rate_hz: float) -> int:
    """The parallel-decimation factor of ``signal`` at ``rate_hz``: the configured one, or the default
    for the position cut-off (a quarter of the rate without a filter)."""
    cutoff = signal.position_cutoff_hz or 0.25 * rate_hz
    return signal.decimation or default_decimation(rate_hz, position_cutoff_hz=cutoff)


def estimate_motion(
    time: np.ndarray,
    q: np.ndarray,
    settings: SignalSettings,
    *,
    torques: np.ndarray | None = None,
    dq_measured: np.ndarray | None = None,
) -> tuple[list[Motion], int]:
    """Clean stamps, resample and differentiate; one :class:`Motion` per segment.

    Returns the motions and the number of duplicate stamps dropped. Segments too short
    to differentiate are left out.

    Raises
    ------
    DataError
        Bad stamps, a cut-off above the Nyquist frequency, no segment long enough.
    """
    report = clean_time_stamps(np.asarray(time, dtype=float), gap_factor=settings.gap_factor)
    rate = settings.rate_hz if settings.rate_hz else 1.0 / report.nominal_dt
    if settings.position_cutoff_hz is not None and settings.position_cutoff_hz >= 0.5 * rate:
        raise DataError(
            f"position_cutoff_hz={settings.position_cutoff_hz} must be below the Nyquist frequency {0.5 * rate:.6g} Hz"
        )
    # Stamps relative to the first one keep full resolution for epoch-based clocks (~1.7e9 s).
    origin = float(np.asarray(time, dtype=float)[0])
    kept_time = np.asarray(time, dtype=float)[report.keep] - origin
    kept_q = np.asarray(q, dtype=float)[report.keep]
    edge = edge_samples(rate, settings.position_cutoff_hz)
    motions = []
    for start, stop in report.segments:
        if stop - start < 16:
            continue
        t = kept_time[start:stop]
        grid, q_uniform = resample_uniform(t, kept_q[start:stop], rate, kind="cubic")
        if grid.shape[0] < 2 * edge + 16:
            continue
        q_filtered, dq, ddq = differentiate(q_uniform, rate_hz=rate, cutoff_hz=settings.position_cutoff_hz)
        if settings.use_measured_velocity and dq_measured is not None:
            _, dq_uniform = resample_uniform(t, np.asarray(dq_measured, dtype=float)[report.keep][start:stop], rate)
            dq = (
                lowpass_zero_phase(dq_uniform, cutoff_hz=settings.position_cutoff_hz, rate_hz=rate)
                if settings.position_cutoff_hz is not None
                else dq_uniform
            )
            ddq = np.gradient(dq, 1.0 / rate, axis=0, edge_order=2)
        tau = None
        if torques is not None:
            _, tau = resample_uniform(t, np.asarray(torques, dtype=float)[report.keep][start:stop], rate, kind="linear")
        inner = slice(edge, grid.shape[0] - edge)
        motions.append(
            Motion(
                time=grid[inner] + origin,
                q=q_filtered[inner],
                dq=dq[inner],
                ddq=ddq[inner],
                torques=None if tau is None else tau[inner],
                rate_hz=rate,
            )
        )
    if not motions:
        raise DataError(
            f"no contiguous segment long enough to differentiate in {len(kept_time)} samples"
            f" (each needs {2 * edge + 16} samples at {rate:.6g} Hz)"
        )
    return motions, report.duplicates_dropped


def check_samples(joint_names: tuple[str, ...], q: np.ndarray, torques: np.ndarray, *, where: str = "") -> None:
    """Refuse non-finite positions or torques, naming the joint and the sample."""
    for name, array in (("position", q), ("torque", torques)):
        bad = ~np.isfinite(np.asarray(array, dtype=float))
        if bad.any():
            row, column = (int(i) for i in np.argwhere(bad)[0])
            raise DataError(f"{where}{name} of joint {joint_names[column]} is not finite at sample {row}")


def check_motion(q: np.ndarray, joint_names: tuple[str, ...], *, min_motion_rad: float) -> None:
    """Refuse a recording in which no joint moved more than ``min_motion_rad``."""
    travel = np.ptp(np.asarray(q, dtype=float), axis=0)
    if travel.max(initial=0.0) < min_motion_rad:
        worst = joint_names[int(np.argmax(travel))] if travel.size else "none"
        raise InsufficientExcitationError(
            f"the robot is standing still: the largest joint travel is {travel.max(initial=0.0):.3g} rad"
            f" ({worst}), below min_motion_rad={min_motion_rad}"
        )


__all__ = ["Motion", "check_motion", "check_samples", "decimation_factor", "edge_samples", "estimate_motion"]
