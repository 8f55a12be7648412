"""The one safety check every commanded motion passes, and smooth ramps in and out.

A trajectory is refused when any value is not finite or a position, velocity or
acceleration leaves its limit; the error names the first violation in time
(joint, time, quantity, value, limit). Ramps are quintic polynomials, so
position, velocity and acceleration are continuous where they join a trajectory
(C²), and their duration is the shortest that keeps the limits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.trajectory import SampledTrajectory
from dynamic_identification.core.model import RobotModel

ROUNDING_TOLERANCE = 1e-9
"""Excesses below this (rad, rad/s, rad/s²) are rounding, not violations: a trajectory that
ends exactly on a limit must pass."""

DEFAULT_ACCELERATION_PER_VELOCITY_HZ = 4.0
"""Without acceleration limits in the URDF, ``a_max = 4 /s · v_max``: full speed in 0.25 s."""


class LimitViolationError(IdentificationError):
    """A trajectory leaves the joint limits (or holds a non-finite value).

    Attributes name the first violation in time.
    """

    def __init__(self, *, joint: str, time_s: float, quantity: str, value: float, limit: float) -> None:
        self.joint = joint
        self.time_s = time_s
        self.quantity = quantity
        self.value = value
        self.limit = limit
        units = {"position": "rad", "velocity": "rad/s", "acceleration": "rad/s²"}.get(quantity, "")
        if np.isfinite(value):
            text = f"{quantity} {value:.6g} {units} exceeds the limit {limit:.6g} {units}"
        else:
            text = f"{quantity} is {value}"
        super().__init__(f"{joint} at t = {time_s:.4f} s: {text}")


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
    """

    joint_names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.joint_names)
        for name in ("lower", "upper", "velocity", "acceleration"):
            value = np.asarray(getattr(self, name), dtype=float)
            if value.shape != (n,) or np.any(np.isnan(value)):
                raise IdentificationError(f"{name} limits must be {n} numbers, got {value.tolist()}")
        if np.any(np.asarray(self.lower) >= np.asarray(self.upper)):
            bad = int(np.argmax(np.asarray(self.lower) >= np.asarray(self.upper)))
            raise IdentificationError(
                f"{self.joint_names[bad]}: position range is empty after margins"
                f" ({self.lower[bad]:.6g} >= {self.upper[bad]:.6g} rad)"
            )
        for name in ("velocity", "acceleration"):
            value = np.asarray(getattr(self, name), dtype=float)
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
        """
        for name, value in (("velocity_scale", velocity_scale), ("acceleration_scale", acceleration_scale)):
            if not 0.0 < value <= 1.0:
                raise IdentificationError(f"{name} must be in (0, 1], got {value}")
        if position_margin_rad < 0.0:
            raise IdentificationError(f"position_margin_rad must be >= 0, got {position_margin_rad}")
        velocity = robot.velocity_limits
        if np.any(~np.isfinite(velocity) | (velocity <= 0.0)):
            raise IdentificationError(f"the URDF velocity limits must be positive, got {velocity.tolist()}")
        if acceleration_limits is None:
            acceleration = DEFAULT_ACCELERATION_PER_VELOCITY_HZ * velocity
        else:
            acceleration = np.asarray(acceleration_limits, dtype=float)
            if acceleration.shape != velocity.shape:
                raise IdentificationError(
                    f"acceleration_limits must have {robot.n_joints} entries, got {acceleration.tolist()}"
                )
        return cls(
            joint_names=robot.joint_names,
            lower=robot.lower_position_limits + position_margin_rad,
            upper=robot.upper_position_limits - position_margin_rad,
            velocity=velocity_scale * velocity,
            acceleration=acceleration_scale * acceleration,
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
        return JointLimits(self.joint_names, new_lower, new_upper, self.velocity, self.acceleration)

    @property
    def centre(self) -> np.ndarray:
        """Middle of each (finite) position range, rad; 0 for unbounded joints."""
        return np.where(np.isfinite(self.lower) & np.isfinite(self.upper), 0.5 * (self.lower + self.upper), 0.0)


def check_trajectory(trajectory: SampledTrajectory, limits: JointLimits) -> None:
    """Refuse a trajectory that leaves ``limits``; silent when it keeps them.

    Raises
    ------
    LimitViolationError
        Naming the first violation in time (joint, time, quantity, value, limit).
    IdentificationError
        When the trajectory's joints differ from the limits' joints.
    """
    if trajectory.joint_names != limits.joint_names:
        raise IdentificationError(
            f"trajectory joints {list(trajectory.joint_names)} differ from the limits' {list(limits.joint_names)}"
        )
    tol = ROUNDING_TOLERANCE
    checks = (
        ("position", trajectory.q, lambda v: ~np.isfinite(v) | (v < limits.lower - tol) | (v > limits.upper + tol)),
        ("velocity", trajectory.dq, lambda v: ~np.isfinite(v) | (np.abs(v) > limits.velocity + tol)),
        ("acceleration", trajectory.ddq, lambda v: ~np.isfinite(v) | (np.abs(v) > limits.acceleration + tol)),
    )
    first: tuple[int, int, str, np.ndarray] | None = None
    for quantity, values, violates in checks:
        bad = violates(values)
        if bad.any():
            sample, joint = (int(i) for i in np.argwhere(bad)[0])
            if first is None or sample < first[0]:
                first = (sample, joint, quantity, values)
    if first is None:
        return
    sample, joint, quantity, values = first
    value = float(values[sample, joint])
    if quantity == "position":
        limit = float(limits.upper[joint] if value > limits.upper[joint] else limits.lower[joint])
    else:
        limit = float((limits.velocity if quantity == "velocity" else limits.acceleration)[joint])
    raise LimitViolationError(
        joint=trajectory.joint_names[joint],
        time_s=float(trajectory.time[sample]),
        quantity=quantity,
        value=value,
        limit=limit,
    )


@dataclass(frozen=True)
class LimitUsage:
    """How much of each limit a trajectory uses, per joint, as fractions.

    ``position``: fraction of the allowed range the motion spans; ``velocity`` and
    ``acceleration``: largest magnitude over the limit.
    """

    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray


def limit_usage(trajectory: SampledTrajectory, limits: JointLimits) -> LimitUsage:
    """Fractions of the limits used by ``trajectory`` (seed 004 reports its workspace use)."""
    span = np.where(np.isfinite(limits.upper - limits.lower), limits.upper - limits.lower, 2.0 * np.pi)
    return LimitUsage(
        position=np.ptp(trajectory.q, axis=0) / span,
        velocity=np.abs(trajectory.dq).max(axis=0) / limits.velocity,
        acceleration=np.abs(trajectory.ddq).max(axis=0) / limits.acceleration,
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
    q0, v0, a0 = (np.asarray(x, dtype=float) for x in start)
    q1, v1, a1 = (np.asarray(x, dtype=float) for x in end)
    big_t = float(duration_s)
    c0, c1, c2 = q0, v0, 0.5 * a0
    delta = q1 - (c0 + c1 * big_t + c2 * big_t**2)
    delta_v = v1 - (c1 + 2.0 * c2 * big_t)
    delta_a = a1 - 2.0 * c2
    c3 = (10.0 * delta - 4.0 * delta_v * big_t + 0.5 * delta_a * big_t**2) / big_t**3
    c4 = (-15.0 * delta + 7.0 * delta_v * big_t - delta_a * big_t**2) / big_t**4
    c5 = (6.0 * delta - 3.0 * delta_v * big_t + 0.5 * delta_a * big_t**2) / big_t**5
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
    distance, speed and acceleration limits.

    Raises
    ------
    LimitViolationError
        When even ``max_duration_s`` leaves the limits (e.g. the end lies outside them);
        names the violation of the longest ramp tried.
    """
    q0 = np.asarray(start[0], dtype=float)
    q1 = np.asarray(end[0], dtype=float)
    distance = np.abs(q1 - q0)
    duration = max(
        float(np.max(1.875 * distance / limits.velocity)),
        float(np.max(np.sqrt(5.8 * distance / limits.acceleration))),
        2.0 / rate_hz,
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
