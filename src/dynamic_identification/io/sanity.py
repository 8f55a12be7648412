"""Unit checks of recordings: time in seconds, positions in radians, velocities in rad/s, before any identification.

A recording in the wrong unit is not refused by the numbers alone: positions in
degrees identify a model 57 times too stiff with no error; time in nanoseconds gives
a rate of 1e-6 Hz and a baffling filter error. :func:`check_recording_units` refuses
such a recording with one line naming the likely unit:

* the median time step must lie in ``[MIN_STEP_S, MAX_STEP_S]``: 1 µs to 0.5 s, i.e.
  1 MHz to 2 Hz; above, it says which unit the steps look like (milliseconds,
  microseconds, nanoseconds); below (subnormal steps), that the stamps are not in s;
* each joint's positions must stay within its URDF limits widened by
  :data:`POSITION_TOLERANCE_RAD` (or within ±:data:`MAX_ABS_POSITION_RAD` for a joint
  without limits), and its speed (99th percentile over 10 ms differences) below
  :data:`SPEED_FACTOR` times its URDF velocity limit: otherwise positions look like
  degrees; recorded velocities (``J/velocity``) likewise, or they look like degrees per second;
* the joint torques (measured, or the currents through the drive chain) within :data:`MEASURED_TORQUE_FACTOR`
  times the effort limits (:func:`torque_problem`): a corrupt sample, or torques not in N·m.

``dynid … --no-unit-checks`` skips these checks for a robot whose URDF limits are wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dynamic_identification.core.errors import DataError

MIN_STEP_S = 1e-6
MAX_STEP_S = 0.5
POSITION_TOLERANCE_RAD = 0.5
"""A position may exceed the URDF limits by this much (rad) before the recording is refused."""
MAX_ABS_POSITION_RAD = 1e4
"""Largest plausible position of a joint without limits (a continuous joint), rad: 1600 turns."""
SPEED_FACTOR = 5.0
"""Speeds above this multiple of the URDF velocity limit are refused (degrees give 57×)."""
SPEED_BASELINE_S = 0.01
"""Speeds are position differences over this span (s), so encoder quantisation does not count."""
MEASURED_TORQUE_FACTOR = 10.0
"""A measured joint torque beyond this many effort limits is refused: no drive produces it (a corrupt sample, or
torques not in N·m); a collision's peak stays within a few."""
MAX_ABS_TORQUE_NM = 1e6
"""Largest plausible measured torque of a joint without an effort limit, N·m."""


def time_unit_problem(time_s: np.ndarray) -> str | None:
    """Why stamps ``time_s`` (meant in s) are in another unit, or ``None``."""
    time = np.asarray(time_s, dtype=float)
    steps = np.diff(time)
    steps = steps[steps > 0.0]
    if steps.size == 0:
        return None  # constant or decreasing stamps: the cleaning reports them
    step = float(np.median(steps))
    rate = f"a rate of {1.0 / step:.3g} Hz" if step > 1e-300 else "no usable rate"
    if step < MIN_STEP_S:
        return f"the median time step is {step:.3g} s ({rate}): time must be in seconds"
    if step > MAX_STEP_S:
        if step >= 1e5 or abs(float(time[-1])) > 1e15:
            unit = "nanoseconds"
        elif step >= 100.0:
            unit = "microseconds"
        else:
            unit = "milliseconds"
        return (
            f"the median time step is {step:.6g} s ({rate}): time looks like {unit};"
            " the recording's 'time' column must be in seconds"
        )
    return None


def position_problem(
    names: Sequence[str],
    positions: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    tolerance: float = POSITION_TOLERANCE_RAD,
    what: str = "position",
) -> str | None:
    """Why ``positions`` (``(n,)`` or ``(K, n)``, rad) cannot be the robot's, or ``None``.

    A value is refused when it is not finite, lies outside ``[lower - tolerance,
    upper + tolerance]`` or, for a joint without limits, beyond ±:data:`MAX_ABS_POSITION_RAD`.
    """
    values = np.atleast_2d(np.asarray(positions, dtype=float))
    lower = np.asarray(lower, dtype=float)
    upper = np.asarray(upper, dtype=float)
    low, high = _position_bounds(lower, upper, tolerance)
    outside = ~np.isfinite(values) | (values < low) | (values > high)
    if not outside.any():
        return None
    k, j = (int(i) for i in np.argwhere(outside)[0])
    value = float(values[k, j])
    if not np.isfinite(value):
        return f"{what} of {names[j]} is {value!r}"
    return (
        f"{what} of {names[j]} is {value:.6g} rad, outside its limits [{float(lower[j]):.6g}, {float(upper[j]):.6g}]"
        f" rad by more than {tolerance:g} rad: degrees instead of radians?"
    )


def torque_problem(
    names: Sequence[str], torques: np.ndarray, effort_limits: np.ndarray, *, from_currents: bool = False
) -> str | None:
    """Why measured joint torques ``(n,)`` or ``(K, n)`` (N·m) cannot be the robot's, or ``None``: a value beyond
    :data:`MEASURED_TORQUE_FACTOR` times the joint's effort limit (``effort_limits``, N·m; beyond
    :data:`MAX_ABS_TORQUE_NM` where it is unknown: ``∞`` or not > 0) or not finite. ``from_currents``: the torques are
    recorded currents through the drive chain, and the message asks about their unit and the drive gains instead.

    One such sample in a recording is enough: its square dominates every sum of the normal equations (1e300 N·m
    overflows them), so it is never averaged away."""
    values = np.atleast_2d(np.asarray(torques, dtype=float))
    limits = np.asarray(effort_limits, dtype=float)
    limited = _limited(limits)
    outside = ~(np.abs(values) <= _torque_bound(limits))
    if not outside.any():
        return None
    k, j = (int(i) for i in np.argwhere(outside)[0])
    over = (
        f"{MEASURED_TORQUE_FACTOR:g} × its effort limit {float(limits[j]):.4g} N·m"
        if limited[j]
        else f"{MAX_ABS_TORQUE_NM:g} N·m (its effort limit is unknown)"
    )
    count = int(np.count_nonzero(outside.any(axis=1)))
    where, share = "", ""
    if values.shape[0] > 1:
        where, share = f" at sample {k}", f" ({count} sample{'s' if count > 1 else ''} of {values.shape[0]})"
    unit = (
        "currents in mA rather than A, or drive_chain.drive_gains (N·m/A) wrong? (the torque is J/current through the"
        " drive chain)"
        if from_currents
        else "not in N·m?"
    )
    value = float(values[k, j])
    return f"torque of {names[j]} is {value:.4g} N·m{where}, beyond {over}{share}: a corrupt sample, or {unit}"


def _position_bounds(lower: np.ndarray, upper: np.ndarray, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
    """The positions (rad) :func:`position_problem` accepts: the limits widened by ``tolerance``, ±
    :data:`MAX_ABS_POSITION_RAD` for a joint without limits."""
    low = np.where(np.isfinite(lower), lower - tolerance, -MAX_ABS_POSITION_RAD)
    high = np.where(np.isfinite(upper), upper + tolerance, MAX_ABS_POSITION_RAD)
    return low, high


def _limited(effort_limits: np.ndarray) -> np.ndarray:
    """The joints whose effort limit is known (finite and > 0)."""
    return np.isfinite(effort_limits) & (effort_limits > 0.0)


def _torque_bound(effort_limits: np.ndarray) -> np.ndarray:
    """The largest ``|τ|`` (N·m) :func:`torque_problem` accepts per joint."""
    limited = _limited(effort_limits)
    return np.where(limited, MEASURED_TORQUE_FACTOR * np.where(limited, effort_limits, 0.0), MAX_ABS_TORQUE_NM)


@dataclass(frozen=True)
class SampleLimits:
    """What one sample of a robot's joints may hold, for a node that judges every message: positions as
    :func:`position_problem` accepts them, torques as :func:`torque_problem` does, their bounds computed once (a
    sample within them costs a few µs, where the two functions take some 25 µs at 1 kHz).

    Attributes
    ----------
    names
        The joints, in the order of the samples.
    lower, upper
        Position limits, rad (``±∞``: none).
    effort
        Effort limits, N·m (``∞`` or not > 0: unknown).
    """

    names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    effort: np.ndarray
    _low: np.ndarray = field(init=False, repr=False)
    _high: np.ndarray = field(init=False, repr=False)
    _torque: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("lower", "upper", "effort"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=float))
        low, high = _position_bounds(self.lower, self.upper, POSITION_TOLERANCE_RAD)
        object.__setattr__(self, "_low", low)
        object.__setattr__(self, "_high", high)
        object.__setattr__(self, "_torque", _torque_bound(self.effort))

    def problem(self, positions: np.ndarray, torques: np.ndarray) -> str | None:
        """Why one sample (``(n,)`` positions, rad; torques, N·m) cannot be the robot's, or ``None``."""
        if np.all((positions >= self._low) & (positions <= self._high) & (np.abs(torques) <= self._torque)):
            return None
        return position_problem(self.names, positions, self.lower, self.upper) or torque_problem(
            self.names, torques, self.effort
        )


def speed_problem(
    names: Sequence[str], time_s: np.ndarray, positions: np.ndarray, velocity_limits: np.ndarray
) -> str | None:
    """Why the speeds of ``positions`` cannot be the robot's (over :data:`SPEED_FACTOR` × the limits), or ``None``.

    A joint's speed is its 99th percentile over :data:`SPEED_BASELINE_S` differences (:func:`_too_fast`).
    """
    time = np.asarray(time_s, dtype=float)
    q = np.asarray(positions, dtype=float)
    steps = np.diff(time)
    steps = steps[steps > 0.0]
    if steps.size == 0 or q.shape[0] < 3:
        return None
    stride = max(1, round(SPEED_BASELINE_S / float(np.median(steps))))
    if q.shape[0] <= stride:
        return None
    span = time[stride:] - time[:-stride]
    valid = span > 0.0
    if not valid.any():
        return None
    # Each joint's position differences in one contiguous row, ``(n, M)``.
    moved = np.subtract(q[stride:].T, q[:-stride].T, order="C")
    np.abs(moved, out=moved)
    if not valid.all():
        moved, span = moved[:, valid], span[valid]
    fastest = _too_fast(moved, span, velocity_limits)
    if fastest is None:
        return None
    j, typical, excess = fastest
    return (
        f"{names[j]} moves at {typical:.4g} rad/s (99th percentile), {excess:.3g} times its URDF velocity limit"
        f" {float(velocity_limits[j]):.4g} rad/s: positions in degrees, or time not in seconds?"
    )


def recorded_speed_problem(names: Sequence[str], velocities: np.ndarray, velocity_limits: np.ndarray) -> str | None:
    """Why recorded velocities ``(K, n)`` cannot be the robot's in rad/s (their 99th percentile over
    :data:`SPEED_FACTOR` × the URDF limit, :func:`_too_fast`: degrees per second give 57×), or ``None``. ``predict``
    and a parameter file made with ``signal.velocity: measured`` use them as they are."""
    speeds = np.abs(np.asarray(velocities, dtype=float).T, order="C")
    if speeds.shape[1] == 0:
        return None
    fastest = _too_fast(speeds, 1.0, velocity_limits)
    if fastest is None:
        return None
    j, typical, excess = fastest
    return (
        f"{names[j]}/velocity reaches {typical:.4g} (99th percentile), {excess:.3g} times its URDF"
        f" velocity limit {float(velocity_limits[j]):.4g} rad/s: velocities in degrees per second, or the motors'"
        " rather than the joints'?"
    )


def _too_fast(
    distance: np.ndarray, span: np.ndarray | float, velocity_limits: np.ndarray
) -> tuple[int, float, float] | None:
    """``(joint, its 99th-percentile speed, that over its URDF limit)`` for the joint most over :data:`SPEED_FACTOR`
    × its limit, or ``None``; each joint's speeds are ``distance / span``, its row of ``distance`` ``(n, M)``.

    Most recordings move far below the limit: when no more than 1 % of every joint's speeds exceed half of
    :data:`SPEED_FACTOR` × its limit, its percentile cannot exceed the whole, and the percentiles (a partition of
    every joint's speeds) are skipped.
    """
    limits = np.asarray(velocity_limits, dtype=float)
    limited = limits > 0.0
    screen = np.where(limited, 0.5 * SPEED_FACTOR * limits, np.inf)
    samples = distance.shape[1]
    # The 99th percentile interpolates the order statistics k and k + 1: at most the screen when no more than
    # samples - k - 2 speeds exceed it.
    below = samples - int(np.floor(0.99 * (samples - 1))) - 2
    if np.all(np.count_nonzero(distance > screen[:, None] * span, axis=1) <= below):
        return None
    typical = np.percentile(distance / span, 99.0, axis=1)
    excess = np.where(limited, typical / np.where(limited, limits, 1.0), 0.0)
    j = int(np.argmax(excess))
    if excess[j] <= SPEED_FACTOR:
        return None
    return j, float(typical[j]), float(excess[j])


def check_recording_units(
    names: Sequence[str],
    time_s: np.ndarray,
    positions: np.ndarray,
    *,
    lower: np.ndarray,
    upper: np.ndarray,
    velocity_limits: np.ndarray,
    source: str,
    velocities: np.ndarray | None = None,
) -> None:
    """``DataError`` when the stamps are not in s, the positions not in rad or the recorded ``velocities`` (if any)
    not in rad/s (module docstring)."""
    problem = (
        time_unit_problem(time_s)
        or position_problem(names, positions, lower, upper)
        or speed_problem(names, time_s, positions, velocity_limits)
        or (None if velocities is None else recorded_speed_problem(names, velocities, velocity_limits))
    )
    _refuse(source, problem)


def check_recording_torques(
    names: Sequence[str], torques: np.ndarray, effort_limits: np.ndarray, source: str, *, from_currents: bool = False
) -> None:
    """``DataError`` when a joint torque ``(K, n)`` (N·m) of the recording ``source`` is one no drive produces
    (:func:`torque_problem`; ``from_currents`` as there)."""
    _refuse(source, torque_problem(names, torques, effort_limits, from_currents=from_currents))


def _refuse(source: str, problem: str | None) -> None:
    if problem is not None:
        raise DataError(f"{source}: {problem} (--no-unit-checks skips this check)")
