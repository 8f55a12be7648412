"""The one safety check every commanded motion passes, and smooth ramps in and out.

A trajectory is checked **as the controller will execute it**: the excitation
publishes positions, velocities and accelerations, so ``joint_trajectory_controller``
moves the robot along the quintic through consecutive points
(:func:`~.trajectory.controller_motion`). :func:`check_trajectory` evaluates that
motion at :data:`CHECK_RATE_HZ` or finer (every interval at least twice) and
refuses it when any value is not finite or a position, velocity, acceleration or
jerk leaves its limit; the error names the first violation in time (joint, time,
quantity, value, limit, and whether it lies between published points).

Three more checks complete it where the points alone cannot tell:

* :func:`check_consistency` — positions that contradict the velocities and
  accelerations of the same file (a step with zero velocity makes the
  controller's quintic fly far past every limit);
* :func:`check_sampling` — a publish rate too low for the motion's bandwidth:
  the executed quintic deviates from the planned motion; the error gives the
  lowest rate that would work (:func:`minimum_rate_hz`);
* :func:`check_torques` — the joint torques the motion needs, from a
  :class:`TorqueModel` (the URDF's nominal one or an identified one), against the
  effort limits.

Ramps are quintic polynomials, so position, velocity and acceleration are
continuous where they join a trajectory (C²), and their duration is the shortest
that keeps the limits.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from dynamic_identification.core.cancellation import NEVER, Cancellation
from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.trajectory import (
    SampledTrajectory,
    controller_motion,
    quintic_coefficients,
)
from dynamic_identification.core.mechanism.robot import DriveChain, DriveParameters, DriveTerms, RobotModel
from dynamic_identification.core.mechanism.seam import Mechanism, TreeMotion, mechanism_of
from dynamic_identification.core.settings_schema import DYNID_EXCITE, default

ROUNDING_TOLERANCE = 1e-9
"""Excesses below this (rad, rad/s, rad/s², rad/s³, N·m) are rounding, not violations: a
trajectory that ends exactly on a limit must pass."""

CHECK_RATE_HZ = 1000.0
"""The executed motion is evaluated at least this often, Hz (and every interval at least twice)."""

DEFAULT_ACCELERATION_PER_VELOCITY_HZ = 4.0
"""Without acceleration limits in the URDF, ``a_max = 4 /s · v_max``: full speed in 0.25 s."""

DEFAULT_JERK_PER_ACCELERATION_HZ = 50.0
"""Without jerk limits, ``j_max = 50 /s · a_max``: full acceleration in 20 ms. The shipped
plans use up to 37 /s (the short rest-to-rest quintics of a pick-and-place)."""

DEFAULT_INTERPOLATION_TOLERANCE_RAD: float = default("interpolation_tolerance_rad", DYNID_EXCITE)
"""Largest distance between the executed and the planned motion, rad."""

TORQUE_CHECK_RATE_HZ = 250.0
"""The torques of the executed motion are evaluated at this rate, Hz (they vary more slowly than its jerk)."""

_CHUNK_SAMPLES = 200_000
"""Executed-motion samples evaluated at once (bounds memory on long trajectories)."""

_UNITS = {
    "position": "rad",
    "velocity": "rad/s",
    "acceleration": "rad/s²",
    "jerk": "rad/s³",
    "torque": "N·m",
}


class _JointFault(IdentificationError):
    """A fault of one joint's ``quantity`` at one instant of a trajectory; the message starts with where it is."""

    def __init__(self, detail: str, *, joint: str, time_s: float, quantity: str) -> None:
        self.joint = joint
        self.time_s = time_s
        self.quantity = quantity
        super().__init__(f"{joint} at t = {time_s:.4f} s: {detail}")


class LimitViolationError(_JointFault):
    """A trajectory leaves the joint limits (or holds a non-finite value).

    Attributes name the first violation in time; ``between_points`` is true when it
    lies between published points, in the controller's interpolation.
    """

    def __init__(
        self,
        *,
        joint: str,
        time_s: float,
        quantity: str,
        value: float,
        limit: float,
        between_points: bool = False,
    ) -> None:
        units = _UNITS.get(quantity, "")
        if np.isfinite(value):
            text = f"{quantity} {value:.6g} {units} exceeds the limit {limit:.6g} {units}"
        else:
            text = f"{quantity} is {value}"
        where = " (in the controller's quintic interpolation between published points)" if between_points else ""
        super().__init__(f"{text}{where}", joint=joint, time_s=time_s, quantity=quantity)
        self.value = value
        self.limit = limit
        self.between_points = between_points


class InconsistentTrajectoryError(_JointFault):
    """The positions of a trajectory contradict its velocities and accelerations."""

    def __init__(
        self, *, joint: str, time_s: float, quantity: str, change: float, integral: float, tolerance: float
    ) -> None:
        source = "velocities and accelerations" if quantity == "position" else "accelerations"
        units = _UNITS[quantity]
        super().__init__(
            f"the {quantity} changes by {change:.6g} {units} over one interval"
            f" while the {source} integrate to {integral:.6g} {units} (tolerance {tolerance:.3g} {units});"
            f" the trajectory's columns contradict each other and the controller's interpolation would leave"
            " the planned path",
            joint=joint,
            time_s=time_s,
            quantity=quantity,
        )
        self.change = change
        self.integral = integral
        self.tolerance = tolerance


class SamplingRateError(IdentificationError):
    """A publish rate too low for the motion: the executed quintic leaves the planned motion."""

    def __init__(
        self,
        *,
        rate_hz: float,
        minimum_rate_hz: float | None,
        joint: str,
        time_s: float,
        deviation: float,
        tolerance: float,
        cause: str = "",
    ) -> None:
        self.rate_hz = rate_hz
        self.minimum_rate_hz = minimum_rate_hz
        self.joint = joint
        self.time_s = time_s
        self.deviation = deviation
        self.tolerance = tolerance
        advice = (
            f"rate_hz >= {minimum_rate_hz:.4g} Hz would work"
            if minimum_rate_hz is not None
            else "no rate up to the planning rate works"
        )
        what = cause or (
            f"the controller's interpolation deviates {deviation:.3g} rad from the planned motion"
            f" (tolerance {tolerance:.3g} rad) at {joint}, t = {time_s:.4f} s"
        )
        super().__init__(f"rate_hz = {rate_hz:.4g} Hz is too low for this motion's bandwidth: {what}; {advice}")


@dataclass(frozen=True)
class JointLimits:
    """Limits a commanded motion must keep, margins already applied.

    Attributes
    ----------
    joint_names
        Joints, in the order of the arrays.
    lower, upper
        Position limits, rad (or m).
    velocity
        Speed limits ``|q̇|``, rad/s.
    acceleration
        Acceleration limits ``|q̈|``, rad/s².
    jerk
        Jerk limits ``|d³q/dt³|``, rad/s³; empty (the default) means ``∞``, unchecked.
    effort
        Joint torque limits ``|τ|``, N·m; ``∞`` where unknown (unchecked); empty means all unknown.
    """

    joint_names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    jerk: np.ndarray = field(default_factory=lambda: np.zeros(0))
    effort: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        n = len(self.joint_names)
        for name in ("jerk", "effort"):
            if np.size(getattr(self, name)) == 0:
                object.__setattr__(self, name, np.full(n, np.inf))
        for name in ("lower", "upper", "velocity", "acceleration", "jerk", "effort"):
            value = np.asarray(getattr(self, name), dtype=float)
            if value.shape != (n,) or np.any(np.isnan(value)):
                raise IdentificationError(f"{name} limits must be {n} numbers, got {value.tolist()}")
            object.__setattr__(self, name, value)
        if np.any(self.lower >= self.upper):
            bad = int(np.argmax(self.lower >= self.upper))
            raise IdentificationError(
                f"{self.joint_names[bad]}: position range is empty after margins"
                f" ({self.lower[bad]:.6g} >= {self.upper[bad]:.6g} rad)"
            )
        for name in ("velocity", "acceleration", "jerk", "effort"):
            value = getattr(self, name)
            if np.any(value <= 0.0):
                bad = int(np.argmax(value <= 0.0))
                raise IdentificationError(f"{self.joint_names[bad]}: {name} limit must be > 0, got {value[bad]}")

    @classmethod
    def from_robot(
        cls,
        robot: RobotModel,
        *,
        position_margin_rad: float = 0.05,
        velocity_scale: float = 0.9,
        acceleration_limits: Sequence[float] | np.ndarray | None = None,
        acceleration_scale: float = 1.0,
        jerk_limits: Sequence[float] | np.ndarray | None = None,
        jerk_scale: float = 1.0,
        effort_limits: Sequence[float] | np.ndarray | None = None,
        effort_scale: float = 1.0,
    ) -> JointLimits:
        """The URDF's limits shrunk by margins.

        Parameters
        ----------
        position_margin_rad
            Distance kept from each position limit, rad.
        velocity_scale
            Fraction of the URDF velocity limit allowed, in (0, 1].
        acceleration_limits
            Acceleration limits, rad/s² (URDF has none); default
            :data:`DEFAULT_ACCELERATION_PER_VELOCITY_HZ` times the velocity limit.
        acceleration_scale
            Fraction of the acceleration limits allowed, in (0, 1].
        jerk_limits
            Jerk limits, rad/s³; default :data:`DEFAULT_JERK_PER_ACCELERATION_HZ` times the
            acceleration limits.
        jerk_scale
            Fraction of the jerk limits allowed, in (0, 1].
        effort_limits
            Joint torque limits, N·m; default the URDF's (non-positive or non-finite
            entries mean unknown: torques of that joint are not checked).
        effort_scale
            Fraction of the effort limits a planned motion may need, in (0, 1].
        """
        scales = (
            ("velocity_scale", velocity_scale),
            ("acceleration_scale", acceleration_scale),
            ("jerk_scale", jerk_scale),
            ("effort_scale", effort_scale),
        )
        for name, value in scales:
            if not 0.0 < value <= 1.0:
                raise IdentificationError(f"{name} must be in (0, 1], got {value}")
        if not (np.isfinite(position_margin_rad) and position_margin_rad >= 0.0):
            raise IdentificationError(f"position_margin_rad must be >= 0, got {position_margin_rad}")
        velocity = robot.velocity_limits
        if np.any(~np.isfinite(velocity) | (velocity <= 0.0)):
            raise IdentificationError(f"the URDF velocity limits must be positive, got {velocity.tolist()}")
        acceleration = _per_joint(
            "acceleration_limits", acceleration_limits, DEFAULT_ACCELERATION_PER_VELOCITY_HZ * velocity
        )
        jerk = _per_joint("jerk_limits", jerk_limits, DEFAULT_JERK_PER_ACCELERATION_HZ * acceleration)
        effort = _per_joint("effort_limits", effort_limits, robot.effort_limits)
        effort = np.where(np.isfinite(effort) & (effort > 0.0), effort, np.inf)
        return cls(
            joint_names=robot.joint_names,
            lower=robot.lower_position_limits + position_margin_rad,
            upper=robot.upper_position_limits - position_margin_rad,
            velocity=velocity_scale * velocity,
            acceleration=acceleration_scale * acceleration,
            jerk=jerk_scale * jerk,
            effort=effort_scale * effort,
        )

    def restricted(
        self,
        *,
        lower: Sequence[float] | np.ndarray | None = None,
        upper: Sequence[float] | np.ndarray | None = None,
    ) -> JointLimits:
        """Narrower position ranges (a restricted workspace), never wider than these limits."""
        new_lower = self.lower if lower is None else np.maximum(self.lower, np.asarray(lower, dtype=float))
        new_upper = self.upper if upper is None else np.minimum(self.upper, np.asarray(upper, dtype=float))
        return JointLimits(
            self.joint_names, new_lower, new_upper, self.velocity, self.acceleration, self.jerk, self.effort
        )

    def slower(self, factor: float) -> JointLimits:
        """The same ranges with velocity, acceleration and jerk limits times ``factor`` ``(0, 1]``."""
        if not 0.0 < factor <= 1.0:
            raise IdentificationError(f"factor must be in (0, 1], got {factor}")
        return JointLimits(
            self.joint_names,
            self.lower,
            self.upper,
            factor * self.velocity,
            factor * self.acceleration,
            factor * self.jerk,
            self.effort,
        )

    @property
    def centre(self) -> np.ndarray:
        """Middle of each (finite) position range, rad; 0 for unbounded joints.

        NumPy's warning of ``inf − inf`` for unbounded (continuous) joints is silenced: their middle is not used.
        """
        with np.errstate(invalid="ignore"):
            return np.where(np.isfinite(self.lower) & np.isfinite(self.upper), 0.5 * (self.lower + self.upper), 0.0)


def _per_joint(name: str, value: Sequence[float] | np.ndarray | None, default: np.ndarray) -> np.ndarray:
    if value is None:
        return np.asarray(default, dtype=float)
    array = np.asarray(value, dtype=float)
    if array.shape != default.shape:
        raise IdentificationError(f"{name} must have {default.shape[0]} entries, got {array.tolist()}")
    return array


@dataclass(frozen=True)
class ExecutedMotion:
    """The controller's motion between published points, on a dense grid.

    ``time`` ``(M,)`` in s; ``q``, ``dq``, ``ddq``, ``jerk`` ``(M, n)``; ``at_point``
    ``(M,)`` tells which samples are published points.
    """

    time: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    jerk: np.ndarray
    at_point: np.ndarray


def executed_motion(
    trajectory: SampledTrajectory,
    *,
    check_rate_hz: float = CHECK_RATE_HZ,
    start: int = 0,
    stop: int | None = None,
) -> ExecutedMotion:
    """The motion ``joint_trajectory_controller`` executes through the points ``[start, stop)``.

    Each interval is evaluated with its own quintic at ``max(2, ⌈h · check_rate_hz⌉) + 1``
    equally spaced instants, both ends included, so jerk (discontinuous at points) is
    seen from both sides.
    """
    last = trajectory.time.shape[0] if stop is None else stop
    time, q, dq, ddq = trajectory.time, trajectory.q, trajectory.dq, trajectory.ddq
    if last - start < 2:
        index = slice(start, last)
        zeros = np.zeros_like(q[index])
        return ExecutedMotion(time[index], q[index], dq[index], ddq[index], zeros, np.ones(last - start, dtype=bool))
    k = np.arange(start, last - 1)
    h = time[k + 1] - time[k]
    steps = np.maximum(2, np.ceil(h * check_rate_hz - 1e-9).astype(int))
    interval = np.repeat(np.arange(k.size), steps + 1)
    offsets = np.arange(interval.size) - np.repeat(np.cumsum(steps + 1) - (steps + 1), steps + 1)
    fraction = offsets / np.repeat(steps, steps + 1)
    local = (fraction * h[interval])[:, None]
    rows = k[interval]
    per_interval = quintic_coefficients(h[:, None], (q[k], dq[k], ddq[k]), (q[k + 1], dq[k + 1], ddq[k + 1]))
    c0, c1, c2, c3, c4, c5 = (coefficient[interval] for coefficient in per_interval)
    s = local
    return ExecutedMotion(
        time=time[rows] + local[:, 0],
        q=c0 + s * (c1 + s * (c2 + s * (c3 + s * (c4 + s * c5)))),
        dq=c1 + s * (2.0 * c2 + s * (3.0 * c3 + s * (4.0 * c4 + s * 5.0 * c5))),
        ddq=2.0 * c2 + s * (6.0 * c3 + s * (12.0 * c4 + s * 20.0 * c5)),
        jerk=6.0 * c3 + s * (24.0 * c4 + s * 60.0 * c5),
        at_point=(offsets == 0) | (offsets == np.repeat(steps, steps + 1)),
    )


def executed_chunks(
    trajectory: SampledTrajectory, check_rate_hz: float, cancellation: Cancellation = NEVER
) -> Iterator[ExecutedMotion]:
    """The executed motion in consecutive pieces of about :data:`_CHUNK_SAMPLES` samples.

    ``cancellation`` is polled before each piece: every check over a long motion passes here.
    """
    time = trajectory.time
    count = time.shape[0]
    if count < 2:
        yield executed_motion(trajectory, check_rate_hz=check_rate_hz)
        return
    per_interval = np.maximum(2, np.ceil(np.diff(time) * check_rate_hz - 1e-9)) + 1
    cumulative = np.concatenate([[0.0], np.cumsum(per_interval)])
    start = 0
    while start < count - 1:
        cancellation.check()
        stop = int(np.searchsorted(cumulative, cumulative[start] + _CHUNK_SAMPLES, side="right"))
        stop = min(max(stop, start + 2), count)
        yield executed_motion(trajectory, check_rate_hz=check_rate_hz, start=start, stop=stop)
        start = stop - 1


def check_trajectory(
    trajectory: SampledTrajectory,
    limits: JointLimits,
    *,
    check_rate_hz: float = CHECK_RATE_HZ,
    cancellation: Cancellation = NEVER,
) -> None:
    """Refuse a trajectory whose executed motion leaves ``limits``; silent when it keeps them.

    The published points must be finite; then the controller's quintic through them
    (:func:`executed_motion`, at ``check_rate_hz`` or finer) must keep every position,
    velocity, acceleration and jerk limit.

    Raises
    ------
    LimitViolationError
        Naming the first violation in time (joint, time, quantity, value, limit, and
        whether it lies between published points).
    IdentificationError
        When the trajectory's joints differ from the limits' joints.
    PlanningCancelled
        When ``cancellation`` is requested before the check ends.
    """
    if trajectory.joint_names != limits.joint_names:
        raise IdentificationError(
            f"trajectory joints {list(trajectory.joint_names)} differ from the limits' {list(limits.joint_names)}"
        )
    for quantity, values in (("position", trajectory.q), ("velocity", trajectory.dq), ("acceleration", trajectory.ddq)):
        bad = ~np.isfinite(values)
        if bad.any():
            sample, joint = (int(i) for i in np.argwhere(bad)[0])
            raise LimitViolationError(
                joint=trajectory.joint_names[joint],
                time_s=float(trajectory.time[sample]),
                quantity=quantity,
                value=float(values[sample, joint]),
                limit=float("nan"),
            )
    for motion in executed_chunks(trajectory, check_rate_hz, cancellation):
        _check_motion(motion, limits)


def _check_motion(motion: ExecutedMotion, limits: JointLimits) -> None:
    tol = ROUNDING_TOLERANCE
    checks = (
        ("position", motion.q, lambda v: ~np.isfinite(v) | (v < limits.lower - tol) | (v > limits.upper + tol)),
        ("velocity", motion.dq, lambda v: ~np.isfinite(v) | (np.abs(v) > limits.velocity + tol)),
        ("acceleration", motion.ddq, lambda v: ~np.isfinite(v) | (np.abs(v) > limits.acceleration + tol)),
        ("jerk", motion.jerk, lambda v: ~np.isfinite(v) | (np.abs(v) > limits.jerk + tol)),
    )
    first: tuple[int, int, str, np.ndarray] | None = None
    for quantity, values, violates in checks:
        bad = violates(values)
        if bad.any():
            sample, joint = (int(i) for i in np.argwhere(bad)[0])
            if first is None or motion.time[sample] < motion.time[first[0]]:
                first = (sample, joint, quantity, values)
    if first is None:
        return
    sample, joint, quantity, values = first
    value = float(values[sample, joint])
    if quantity == "position":
        limit = float(limits.upper[joint] if value > limits.upper[joint] else limits.lower[joint])
    else:
        limit = float(getattr(limits, quantity)[joint])
    raise LimitViolationError(
        joint=limits.joint_names[joint],
        time_s=float(motion.time[sample]),
        quantity=quantity,
        value=value,
        limit=limit,
        between_points=quantity == "jerk" or not bool(motion.at_point[sample]),
    )


def check_consistency(
    trajectory: SampledTrajectory,
    limits: JointLimits,
    *,
    tolerance_rad: float = DEFAULT_INTERPOLATION_TOLERANCE_RAD,
    velocity_fraction: float = 0.01,
) -> None:
    """Refuse a trajectory whose positions contradict its velocities and accelerations.

    Over each interval ``h`` the position change must equal the integral of the
    velocities, ``h (q̇_k + q̇_{k+1}) / 2 + h² (q̈_k − q̈_{k+1}) / 12`` (exact for cubic
    motion, error ``O(h⁵)`` for smooth motion), within ``tolerance_rad``, and the
    velocity change the integral of the accelerations, ``h (q̈_k + q̈_{k+1}) / 2``,
    within ``velocity_fraction`` of the joint's velocity limit. A file whose
    velocity columns are zero while its positions step fails here, before its
    quintic interpolation can fling the robot.

    Raises
    ------
    InconsistentTrajectoryError
        Naming the joint, the time and the sizes of the first contradiction.
    """
    if trajectory.time.shape[0] < 2:
        return
    h = np.diff(trajectory.time)[:, None]
    q, dq, ddq = trajectory.q, trajectory.dq, trajectory.ddq
    change = np.diff(q, axis=0)
    integral = h * (dq[:-1] + dq[1:]) / 2.0 + h**2 * (ddq[:-1] - ddq[1:]) / 12.0
    velocity_change = np.diff(dq, axis=0)
    velocity_integral = h * (ddq[:-1] + ddq[1:]) / 2.0
    velocity_tolerance = velocity_fraction * limits.velocity
    failures = []
    for quantity, actual, expected, tolerance in (
        ("position", change, integral, np.full(q.shape[1], tolerance_rad)),
        ("velocity", velocity_change, velocity_integral, velocity_tolerance),
    ):
        bad = ~(np.abs(actual - expected) <= tolerance)
        if bad.any():
            interval, joint = (int(i) for i in np.argwhere(bad)[0])
            failures.append((interval, joint, quantity, actual, expected, tolerance))
    if not failures:
        return
    interval, joint, quantity, actual, expected, tolerance = min(failures, key=lambda failure: failure[0])
    raise InconsistentTrajectoryError(
        joint=trajectory.joint_names[joint],
        time_s=float(trajectory.time[interval]),
        quantity=quantity,
        change=float(actual[interval, joint]),
        integral=float(expected[interval, joint]),
        tolerance=float(tolerance[joint]),
    )


def resample(reference: SampledTrajectory, rate_hz: float) -> SampledTrajectory:
    """Points every ``1 / rate_hz`` from the start of ``reference`` (its last point appended), taken from
    the controller's motion through ``reference``."""
    duration = reference.duration_s
    times = reference.time[0] + np.arange(int(np.floor(duration * rate_hz + 1e-9)) + 1) / rate_hz
    if reference.time[-1] - times[-1] > 1e-9:
        times = np.append(times, reference.time[-1])
    q, dq, ddq, _ = controller_motion(reference.time, reference.q, reference.dq, reference.ddq, times)
    q[-1], dq[-1], ddq[-1] = reference.q[-1], reference.dq[-1], reference.ddq[-1]
    return SampledTrajectory(times, q, dq, ddq, reference.joint_names)


def interpolation_deviation(
    points: SampledTrajectory, reference: SampledTrajectory, *, cancellation: Cancellation = NEVER
) -> tuple[float, int, float]:
    """Largest ``|q_executed − q_reference|`` (rad), its joint and time, over the reference's executed motion.

    ``reference`` is the planned motion sampled densely; ``points`` what is published.
    """
    worst, joint, when = 0.0, 0, float(reference.time[0])
    for motion in executed_chunks(reference, CHECK_RATE_HZ, cancellation):
        q, _, _, _ = controller_motion(points.time, points.q, points.dq, points.ddq, motion.time)
        deviation = np.abs(q - motion.q)
        if not np.all(np.isfinite(deviation)):
            return float("inf"), int(np.argwhere(~np.isfinite(deviation))[0, 1]), float(motion.time[0])
        sample, column = np.unravel_index(int(np.argmax(deviation)), deviation.shape)
        if deviation[sample, column] > worst:
            worst, joint, when = float(deviation[sample, column]), int(column), float(motion.time[sample])
    return worst, joint, when


def _rate_works(
    reference: SampledTrajectory, limits: JointLimits, rate_hz: float, tolerance_rad: float, cancellation: Cancellation
) -> bool:
    points = resample(reference, rate_hz)
    if interpolation_deviation(points, reference, cancellation=cancellation)[0] > tolerance_rad:
        return False
    try:
        check_trajectory(points, limits, cancellation=cancellation)
    except LimitViolationError:
        return False
    return True


def minimum_rate_hz(
    reference: SampledTrajectory,
    limits: JointLimits,
    *,
    rate_hz: float,
    tolerance_rad: float = DEFAULT_INTERPOLATION_TOLERANCE_RAD,
    cancellation: Cancellation = NEVER,
) -> float | None:
    """The lowest publish rate (Hz, within 5 %) whose executed motion stays within ``tolerance_rad``
    of ``reference`` and within ``limits``; ``None`` when not even the reference's own rate works.

    Rates are tried upward from ``rate_hz`` by doubling, then bisected.
    """
    top = 1.0 / float(np.min(np.diff(reference.time))) if reference.time.shape[0] > 1 else rate_hz
    low, high = rate_hz, None
    candidate = rate_hz * 2.0
    while candidate < top:
        if _rate_works(reference, limits, candidate, tolerance_rad, cancellation):
            high = candidate
            break
        low, candidate = candidate, candidate * 2.0
    if high is None:
        if not _rate_works(reference, limits, top, tolerance_rad, cancellation):
            return None
        high = top
    while high > 1.05 * low:
        middle = float(np.sqrt(low * high))
        if _rate_works(reference, limits, middle, tolerance_rad, cancellation):
            high = middle
        else:
            low = middle
    return float(np.ceil(high * 10.0) / 10.0)


def check_sampling(
    points: SampledTrajectory,
    reference: SampledTrajectory,
    limits: JointLimits,
    *,
    rate_hz: float,
    tolerance_rad: float = DEFAULT_INTERPOLATION_TOLERANCE_RAD,
    cancellation: Cancellation = NEVER,
) -> None:
    """Refuse ``points`` (published at ``rate_hz``) when the controller's motion through them strays
    more than ``tolerance_rad`` from the planned ``reference`` or leaves ``limits``.

    Raises
    ------
    SamplingRateError
        With the lowest rate that would work (:func:`minimum_rate_hz`).
    PlanningCancelled
        When ``cancellation`` is requested before the check ends.
    """
    deviation, joint, when = interpolation_deviation(points, reference, cancellation=cancellation)
    cause = ""
    if deviation <= tolerance_rad:
        try:
            check_trajectory(points, limits, cancellation=cancellation)
            return
        except LimitViolationError as error:
            if not error.between_points:
                raise
            cause = str(error)
    raise SamplingRateError(
        rate_hz=rate_hz,
        minimum_rate_hz=minimum_rate_hz(
            reference, limits, rate_hz=rate_hz, tolerance_rad=tolerance_rad, cancellation=cancellation
        ),
        joint=limits.joint_names[joint],
        time_s=when,
        deviation=deviation,
        tolerance=tolerance_rad,
        cause=cause,
    )


def urdf_friction(robot: RobotModel, velocity_index: slice | Sequence[int]) -> DriveParameters:
    """Drive terms of the URDF: ``<dynamics damping friction>`` as viscous and Coulomb friction.

    One entry per joint whose velocity index (Pinocchio ``idx_v``) ``velocity_index``
    selects, in that order: viscous in N·m·s/rad, Coulomb in N·m; the other drive terms zero.
    The nominal torque model (:meth:`TorqueModel.nominal`) uses them.
    """
    viscous = np.asarray(robot.model.damping, dtype=float)[velocity_index]
    coulomb = np.asarray(robot.model.friction, dtype=float)[velocity_index]
    return DriveParameters.create(viscous.shape[0], viscous=viscous, coulomb=coulomb)


@dataclass(frozen=True)
class TorqueModel:
    """Torques of a mechanism's controlled joints from standard parameters: ``τ = W_st(q, q̇, q̈) χ_st``
    ([Gautier2013] eq. (2)); for a closed-loop robot the IDIM of its completed tree motion,
    ``τ_a = J_tᵀ φ_tree χ_tree`` plus the actuated joints' drive terms ([Briot2012] eq. (6)).

    Attributes
    ----------
    mechanism, drive_chain, terms
        The model whose standard parameters ``standard`` are
        (:meth:`~dynamic_identification.core.mechanism.seam.Mechanism.standard_parameter_names` order).
    standard
        Standard-parameter values in SI units.
    source
        What the values come from, for messages (``"URDF nominal"``, a parameter file …).
    """

    mechanism: Mechanism
    drive_chain: DriveChain
    terms: DriveTerms
    standard: np.ndarray
    source: str

    @property
    def robot(self) -> RobotModel:
        """The mechanism's kinematic tree."""
        return self.mechanism.robot

    @classmethod
    def nominal(
        cls,
        robot: RobotModel | Mechanism,
        drive_chain: DriveChain,
        terms: DriveTerms,
        drive: DriveParameters | None = None,
    ) -> TorqueModel:
        """The URDF's inertias; drive terms ``drive``, by default the URDF's ``<dynamics damping friction>`` of
        the controlled joints as viscous and Coulomb friction (:func:`urdf_friction`)."""
        mechanism = mechanism_of(robot)
        source = "the URDF's nominal model" if drive is None else "the URDF's inertias and the given drive terms"
        if drive is None:
            joints = mechanism.robot.model.joints
            drive = urdf_friction(mechanism.robot, [joints[int(j) + 1].idx_v for j in mechanism.actuated])
        return cls(mechanism, drive_chain, terms, mechanism.standard_parameters(terms, drive), source)

    @classmethod
    def identified(
        cls,
        robot: RobotModel | Mechanism,
        drive_chain: DriveChain,
        terms: DriveTerms,
        values: Mapping[str, float],
        *,
        source: str,
    ) -> TorqueModel:
        """An identified model: base-parameter values at their independent standard columns, zeros elsewhere
        ([Gautier2013] eq. (4)).

        Raises
        ------
        IdentificationError
            When a name is not a standard parameter of the model or a value is not finite.
        """
        mechanism = mechanism_of(robot)
        names = mechanism.standard_parameter_names(terms)
        position = {name: i for i, name in enumerate(names)}
        unknown = [name for name in values if name not in position]
        if unknown:
            raise IdentificationError(f"parameters {unknown} of {source} are not standard parameters of this model")
        standard = np.zeros(len(names))
        for name, value in values.items():
            if not np.isfinite(value):
                raise IdentificationError(f"parameter {name} = {value} of {source} is not finite")
            standard[position[name]] = value
        return cls(mechanism, drive_chain, terms, standard, source)

    def torques(
        self,
        q: np.ndarray,
        dq: np.ndarray,
        ddq: np.ndarray,
        *,
        q_guess: np.ndarray | None = None,
        cancellation: Cancellation = NEVER,
    ) -> np.ndarray:
        """Torques (N·m), ``(N, n_a)``, of a motion of the controlled joints ``(N, n_a)``, completed by the
        mechanism (``q_guess``: a tree configuration near the first sample, choosing a closed-loop robot's
        assembly mode); ``cancellation`` is polled every 5000 samples."""
        mechanism = self.mechanism
        out = np.empty((np.shape(q)[0], mechanism.n_actuated))
        data = mechanism.robot.model.createData()
        step = 5000
        for start in range(0, out.shape[0], step):
            cancellation.check()
            part = slice(start, start + step)
            motion = mechanism.complete_motion(q[part], dq[part], ddq[part], q_guess=q_guess)
            q_guess = motion.q[-1]
            out[part] = self.motion_torques(motion, data=data)
        return out

    def motion_torques(self, motion: TreeMotion, *, data: pin.Data | None = None) -> np.ndarray:
        """Torques (N·m), ``(N, n_a)``, of a completed tree motion."""
        return self.mechanism.observation_matrix(self.drive_chain, self.terms, motion, data=data) @ self.standard


def check_torques(
    trajectory: SampledTrajectory,
    limits: JointLimits,
    model: TorqueModel,
    *,
    q_guess: np.ndarray | None = None,
    cancellation: Cancellation = NEVER,
) -> float:
    """Refuse a motion whose torques exceed the effort limits; returns the largest fraction used.

    The torques of the executed motion are evaluated at :data:`TORQUE_CHECK_RATE_HZ`
    (and at every point) with ``model`` (its mechanism completes the motion; ``q_guess``: a tree
    configuration near the first point, :meth:`TorqueModel.torques`); joints of unknown effort
    limit are skipped.

    Raises
    ------
    LimitViolationError
        Quantity ``torque``, naming the first excess in time.
    PlanningCancelled
        When ``cancellation`` is requested before the check ends.
    """
    known = np.isfinite(limits.effort)
    if not known.any():
        return 0.0
    usage = 0.0
    for motion in executed_chunks(trajectory, TORQUE_CHECK_RATE_HZ, cancellation):
        torques = model.torques(motion.q, motion.dq, motion.ddq, q_guess=q_guess, cancellation=cancellation)
        ratio = np.where(known, np.abs(torques) / limits.effort, 0.0)
        bad = ~(ratio <= 1.0 + ROUNDING_TOLERANCE)
        if bad.any():
            sample, joint = (int(i) for i in np.argwhere(bad)[0])
            raise LimitViolationError(
                joint=limits.joint_names[joint],
                time_s=float(motion.time[sample]),
                quantity="torque",
                value=float(torques[sample, joint]),
                limit=float(limits.effort[joint]),
                between_points=not bool(motion.at_point[sample]),
            )
        usage = max(usage, float(ratio.max(initial=0.0)))
    return usage


@dataclass(frozen=True)
class LimitUsage:
    """How much of each limit a trajectory uses, per joint, as fractions.

    ``position``: fraction of the allowed range the motion spans; ``velocity``,
    ``acceleration`` and ``jerk``: largest magnitude of the executed motion over the limit.
    """

    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    jerk: np.ndarray


def limit_usage(
    trajectory: SampledTrajectory, limits: JointLimits, *, cancellation: Cancellation = NEVER
) -> LimitUsage:
    """Fractions of the limits used by the executed motion of ``trajectory`` ([Volkmann2020] reports its
    workspace use); ``cancellation`` is polled before each chunk of it."""
    span = np.where(np.isfinite(limits.upper - limits.lower), limits.upper - limits.lower, 2.0 * np.pi)
    low = np.full(trajectory.n_joints, np.inf)
    high = -low
    peaks = np.zeros((3, trajectory.n_joints))
    for motion in executed_chunks(trajectory, CHECK_RATE_HZ, cancellation):
        low, high = np.minimum(low, motion.q.min(axis=0)), np.maximum(high, motion.q.max(axis=0))
        for row, values in enumerate((motion.dq, motion.ddq, motion.jerk)):
            peaks[row] = np.maximum(peaks[row], np.abs(values).max(axis=0))
    return LimitUsage(
        position=(high - low) / span,
        velocity=peaks[0] / limits.velocity,
        acceleration=peaks[1] / limits.acceleration,
        jerk=peaks[2] / limits.jerk,
    )


def quintic(
    start: tuple[np.ndarray, np.ndarray, np.ndarray],
    end: tuple[np.ndarray, np.ndarray, np.ndarray],
    duration_s: float,
    time_s: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Quintic polynomial from ``(q, q̇, q̈)`` at 0 to ``(q, q̇, q̈)`` at ``duration_s``, per joint.

    Returns positions, velocities and accelerations at ``time_s`` (``(N, n)`` each).
    """
    c0, c1, c2, c3, c4, c5 = quintic_coefficients(float(duration_s), start, end)
    t = np.asarray(time_s, dtype=float)[:, None]
    q = c0 + t * (c1 + t * (c2 + t * (c3 + t * (c4 + t * c5))))
    dq = c1 + t * (2.0 * c2 + t * (3.0 * c3 + t * (4.0 * c4 + t * 5.0 * c5)))
    ddq = 2.0 * c2 + t * (6.0 * c3 + t * (12.0 * c4 + t * 20.0 * c5))
    return q, dq, ddq


def ramp(
    start: tuple[np.ndarray, np.ndarray, np.ndarray],
    end: tuple[np.ndarray, np.ndarray, np.ndarray],
    limits: JointLimits,
    *,
    rate_hz: float,
    max_duration_s: float = 120.0,
) -> SampledTrajectory:
    """The shortest quintic from ``start`` to ``end`` (each ``(q, q̇, q̈)``) that keeps ``limits``.

    Sampled at ``rate_hz`` from 0 to its duration inclusive, so its last sample is
    ``end`` exactly. Durations grow geometrically (×1.2) from a lower bound set by
    distance and the speed, acceleration and jerk limits (a rest-to-rest quintic over
    ``T`` peaks at ``1.875 d / T``, ``5.77 d / T²`` and ``60 d / T³``). The samples are
    exact values of the quintic, so the controller's interpolation through them is
    the quintic itself.

    Raises
    ------
    LimitViolationError
        When even ``max_duration_s`` leaves the limits (e.g. the end lies outside them);
        names the violation of the longest ramp tried.
    """
    if not (np.isfinite(rate_hz) and rate_hz > 0.0):
        raise IdentificationError(f"rate_hz must be finite and > 0, got {rate_hz}")
    q0 = np.asarray(start[0], dtype=float)
    q1 = np.asarray(end[0], dtype=float)
    distance = np.abs(q1 - q0)
    duration = max(
        float(np.max(1.875 * distance / limits.velocity)),
        float(np.max(np.sqrt(5.8 * distance / limits.acceleration))),
        float(np.max(np.cbrt(60.0 * distance / limits.jerk))),
        2.0 / rate_hz,
    )
    if not np.isfinite(duration):
        raise IdentificationError(f"no ramp from {q0.tolist()} to {q1.tolist()} rad: a position is not finite")
    outside = (np.minimum(q0, q1) < limits.lower - ROUNDING_TOLERANCE) | (
        np.maximum(q0, q1) > limits.upper + ROUNDING_TOLERANCE
    )
    if outside.any():
        joint = int(np.argmax(outside))
        value = float(q0[joint] if not limits.lower[joint] <= q0[joint] <= limits.upper[joint] else q1[joint])
        limit = float(limits.upper[joint] if value > limits.upper[joint] else limits.lower[joint])
        raise LimitViolationError(
            joint=limits.joint_names[joint], time_s=0.0, quantity="position", value=value, limit=limit
        )
    if duration > max_duration_s:
        raise IdentificationError(
            f"a ramp from {np.round(q0, 4).tolist()} to {np.round(q1, 4).tolist()} rad needs at least {duration:.4g} s"
            f" within the limits, more than max_duration_s = {max_duration_s:g} s"
        )
    while True:
        steps = int(np.ceil(duration * rate_hz))
        time = np.arange(steps + 1) / rate_hz
        q, dq, ddq = quintic(start, end, steps / rate_hz, time)
        q[-1], dq[-1], ddq[-1] = end
        candidate = SampledTrajectory(time, q, dq, ddq, limits.joint_names)
        try:
            check_trajectory(candidate, limits)
            return candidate
        except LimitViolationError:
            if duration >= max_duration_s:
                raise
        duration = min(1.2 * duration, max_duration_s)


def stop_ramp(
    state: tuple[np.ndarray, np.ndarray, np.ndarray], limits: JointLimits, *, rate_hz: float
) -> SampledTrajectory:
    """Bring the joints smoothly to rest from ``state`` = ``(q, q̇, q̈)`` within the limits.

    Each joint comes to rest ``k q̇ |q̇| / a_max`` ahead of where it is (clipped into
    its position range), for the first ``k`` in 0.75, 1, 1.5, 2 whose quintic keeps
    every limit: short stops first, longer ones when a short stop would need more
    than the allowed deceleration.

    Raises
    ------
    LimitViolationError
        When no stop keeps the limits (the state itself is outside them).
    """
    q, dq, ddq = (np.asarray(x, dtype=float) for x in state)
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(dq)) and np.all(np.isfinite(ddq))):
        raise LimitViolationError(joint="all", time_s=0.0, quantity="state", value=float("nan"), limit=float("nan"))
    zero = np.zeros_like(q)
    factors = (0.75, 1.0, 1.5, 2.0)
    for factor in factors:
        stop = np.clip(q + factor * dq * np.abs(dq) / limits.acceleration, limits.lower, limits.upper)
        try:
            return ramp((q, dq, ddq), (stop, zero, zero), limits, rate_hz=rate_hz, max_duration_s=30.0)
        except LimitViolationError:
            if factor == factors[-1]:
                raise
    raise LimitViolationError(joint="all", time_s=0.0, quantity="stop", value=float("nan"), limit=float("nan"))
