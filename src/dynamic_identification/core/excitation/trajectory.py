"""Sampled joint trajectories: what the excitation node streams and ``dynid excite`` writes."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np

from dynamic_identification.core.errors import DataError, IdentificationError


@dataclass(frozen=True)
class SampledTrajectory:
    """Desired positions (rad), velocities (rad/s) and accelerations (rad/s²) at increasing times (s).

    Arrays have shape ``(N, n)`` (``time``: ``(N,)``); joints are in ``joint_names`` order.
    """

    time: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    joint_names: tuple[str, ...]

    def __post_init__(self) -> None:
        time = np.asarray(self.time, dtype=float)
        n = len(self.joint_names)
        if time.ndim != 1 or time.shape[0] < 1:
            raise IdentificationError(f"time must be a non-empty 1-D array, got shape {time.shape}")
        for name in ("q", "dq", "ddq"):
            value = np.asarray(getattr(self, name), dtype=float)
            if value.shape != (time.shape[0], n):
                raise IdentificationError(f"{name} must have shape ({time.shape[0]}, {n}), got {value.shape}")
        if time.shape[0] > 1 and np.any(np.diff(time) <= 0.0):
            index = int(np.argmax(np.diff(time) <= 0.0)) + 1
            raise IdentificationError(f"trajectory time must increase: time[{index}] = {time[index]} s")

    @property
    def n_joints(self) -> int:
        return len(self.joint_names)

    @property
    def duration_s(self) -> float:
        return float(self.time[-1] - self.time[0])

    def shifted(self, offset_s: float) -> SampledTrajectory:
        """The same motion ``offset_s`` later."""
        return SampledTrajectory(self.time + offset_s, self.q, self.dq, self.ddq, self.joint_names)


class AnalyticTrajectory(Protocol):
    """A trajectory known in closed form, e.g. :class:`~.fourier.FourierTrajectory`."""

    def evaluate(self, time_s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...


def sample(trajectory: AnalyticTrajectory, time_s: np.ndarray, joint_names: Sequence[str]) -> SampledTrajectory:
    """Sample an analytic trajectory at ``time_s``."""
    time = np.asarray(time_s, dtype=float)
    q, dq, ddq = trajectory.evaluate(time)
    return SampledTrajectory(time, q, dq, ddq, tuple(joint_names))


def concatenate(parts: Sequence[SampledTrajectory]) -> SampledTrajectory:
    """Join trajectories end to end; each part is shifted to start one sample period after the previous one ends.

    The sample period is taken from the first part (``time[1] − time[0]``).
    """
    if not parts:
        raise IdentificationError("nothing to concatenate")
    names = parts[0].joint_names
    if any(part.joint_names != names for part in parts):
        raise IdentificationError("trajectories to concatenate name different joints")
    step = float(parts[0].time[1] - parts[0].time[0]) if parts[0].time.shape[0] > 1 else 0.0
    shifted = [parts[0]]
    for part in parts[1:]:
        start = shifted[-1].time[-1] + step
        shifted.append(part.shifted(start - part.time[0]))
    return SampledTrajectory(
        time=np.concatenate([part.time for part in shifted]),
        q=np.concatenate([part.q for part in shifted]),
        dq=np.concatenate([part.dq for part in shifted]),
        ddq=np.concatenate([part.ddq for part in shifted]),
        joint_names=names,
    )


def quintic_coefficients(
    duration_s: float | np.ndarray,
    start: tuple[np.ndarray, np.ndarray, np.ndarray],
    end: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, ...]:
    """Coefficients ``c0 … c5`` of the quintic ``q(s) = Σ c_i s^i`` between two ``(q, q̇, q̈)``, ``duration_s`` apart.

    The unique polynomial of degree five that meets position, velocity and
    acceleration at both ends: the interpolation of ``joint_trajectory_controller``
    between two points that carry all three, and the shape of every ramp. Arrays
    broadcast (one duration per row, one column per joint).
    """
    q0, v0, a0 = (np.asarray(x, dtype=float) for x in start)
    q1, v1, a1 = (np.asarray(x, dtype=float) for x in end)
    h = np.asarray(duration_s, dtype=float)
    delta = q1 - q0
    c3 = (20.0 * delta - (8.0 * v1 + 12.0 * v0) * h - (3.0 * a0 - a1) * h**2) / (2.0 * h**3)
    c4 = (-30.0 * delta + (14.0 * v1 + 16.0 * v0) * h + (3.0 * a0 - 2.0 * a1) * h**2) / (2.0 * h**4)
    c5 = (12.0 * delta - 6.0 * (v1 + v0) * h + (a1 - a0) * h**2) / (2.0 * h**5)
    return q0, v0, 0.5 * a0, c3, c4, c5


def controller_motion(
    times: np.ndarray,
    positions: np.ndarray,
    velocities: np.ndarray | None,
    accelerations: np.ndarray | None,
    t: float | np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The motion a trajectory controller executes through way points: ``q, q̇, q̈`` and jerk at ``t``.

    The rule of ``joint_trajectory_controller`` (``interpolation_method: splines``):
    between two points, a quintic polynomial when velocities and accelerations are
    given, a cubic Hermite polynomial when only velocities are, a straight line
    otherwise. Before the first point the first point is held; after the last point
    its position is held at rest. This is what the robot is asked to do between
    published points, so it is what every safety check evaluates.

    Parameters
    ----------
    times
        Strictly increasing way-point times ``(K,)``, s.
    positions, velocities, accelerations
        Way points ``(K, n)`` in rad, rad/s, rad/s²; ``None`` when absent.
    t
        A time (returns ``(n,)`` arrays) or times ``(M,)`` (returns ``(M, n)``), s.

    Returns
    -------
    tuple of numpy.ndarray
        Positions (rad), velocities (rad/s), accelerations (rad/s²) and jerks (rad/s³).

    Raises
    ------
    DataError
        When the way points are malformed (sizes, times not increasing).
    """
    return WayPoints.create(times, positions, velocities, accelerations).motion(t)


@dataclass(frozen=True)
class WayPoints:
    """Way points of a trajectory controller, checked once and evaluated as often as needed
    (:func:`controller_motion`; a follower evaluates them every control period).

    ``times`` ``(K,)`` s, strictly increasing; ``positions`` ``(K, n)`` rad; ``velocities``,
    ``accelerations`` ``(K, n)`` rad/s, rad/s², or ``None`` (accelerations are dropped without
    velocities, as the controller's rule says).
    """

    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray | None
    accelerations: np.ndarray | None

    @classmethod
    def create(
        cls,
        times: np.ndarray,
        positions: np.ndarray,
        velocities: np.ndarray | None,
        accelerations: np.ndarray | None,
    ) -> WayPoints:
        """Checked way points.

        Raises
        ------
        DataError
            When the way points are malformed (sizes, times not increasing).
        """
        knots = np.asarray(times, dtype=float)
        p = np.atleast_2d(np.asarray(positions, dtype=float))
        if knots.ndim != 1 or knots.shape[0] != p.shape[0] or knots.shape[0] == 0:
            raise DataError(f"times must have shape ({p.shape[0]},) and be non-empty, got {knots.shape}")
        if np.any(np.diff(knots) <= 0.0):
            index = int(np.argmax(np.diff(knots) <= 0.0)) + 1
            raise DataError(f"times must increase strictly: times[{index}] = {knots[index]} s")
        for name, value in (("velocities", velocities), ("accelerations", accelerations)):
            if value is not None and np.shape(value) != p.shape:
                raise DataError(f"{name} must have shape {p.shape}, got {np.shape(value)}")
        v = None if velocities is None else np.asarray(velocities, dtype=float)
        a = None if accelerations is None or v is None else np.asarray(accelerations, dtype=float)
        return cls(times=knots, positions=p, velocities=v, accelerations=a)

    @cached_property
    def _polynomials(self) -> tuple[np.ndarray, ...] | None:
        """``(h, c2, c3, c4, c5)`` of every segment, ``(K − 1, 1)`` and ``(K − 1, n)`` (the controller's rule,
        :func:`controller_motion`); ``None`` for straight lines (no velocities) or a single point."""
        knots, p, v, a = self.times, self.positions, self.velocities, self.accelerations
        if v is None or knots.shape[0] < 2:
            return None
        h = np.diff(knots)[:, None]
        delta = p[1:] - p[:-1]
        v0, v1 = v[:-1], v[1:]
        if a is None:
            c2 = (3.0 * delta - (2.0 * v0 + v1) * h) / h**2
            c3 = (-2.0 * delta + (v0 + v1) * h) / h**3
            c4 = c5 = np.zeros_like(delta)
        else:
            _, _, c2, c3, c4, c5 = quintic_coefficients(h, (p[:-1], v0, a[:-1]), (p[1:], v1, a[1:]))
        return h, c2, c3, c4, c5

    @cached_property
    def _knot_list(self) -> list[float]:
        return self.times.tolist()

    def motion(self, t: float | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``q, q̇, q̈`` and jerk at a time ``t`` (``(n,)`` arrays) or times ``(M,)`` (``(M, n)``), s
        (:func:`controller_motion`)."""
        if np.ndim(t) == 0:
            return self._motion_at(float(t))
        knots, p, v, a = self.times, self.positions, self.velocities, self.accelerations
        query = np.asarray(t, dtype=float)
        segment = np.clip(np.searchsorted(knots, query, side="right") - 1, 0, max(knots.shape[0] - 2, 0))
        q_out = np.empty((query.shape[0], p.shape[1]))
        dq_out = np.zeros_like(q_out)
        ddq_out = np.zeros_like(q_out)
        jerk_out = np.zeros_like(q_out)
        before = query <= knots[0]
        after = query >= knots[-1]
        inside = ~(before | after)
        q_out[before] = p[0]
        if v is not None:
            dq_out[before] = v[0]
        if a is not None:
            ddq_out[before] = a[0]
        q_out[after] = p[-1]
        if np.any(inside):
            k = segment[inside]
            s = (query[inside] - knots[k])[:, None]
            q_out[inside], dq_out[inside], ddq_out[inside], jerk_out[inside] = self._segment(k, s)
        return q_out, dq_out, ddq_out, jerk_out

    def _motion_at(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`motion` at one time ``t`` (s): the segment found by bisection, without array masks (a follower
        evaluates the motion at every control period)."""
        p, v, a = self.positions, self.velocities, self.accelerations
        knots = self._knot_list
        zeros = np.zeros(p.shape[1])
        if t <= knots[0]:
            return (
                p[0].copy(),
                zeros.copy() if v is None else v[0].copy(),
                zeros.copy() if a is None else a[0].copy(),
                zeros,
            )
        if t >= knots[-1]:
            return p[-1].copy(), zeros.copy(), zeros.copy(), zeros
        k = min(max(bisect.bisect_right(knots, t) - 1, 0), len(knots) - 2)
        return self._segment(k, t - knots[k])

    def _segment(
        self, k: int | np.ndarray, s: float | np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``q, q̇, q̈``, jerk at ``s`` (s) into segment(s) ``k``."""
        p, v = self.positions, self.velocities
        p0 = p[k]
        polynomials = self._polynomials
        if v is None or polynomials is None:
            h = self.times[np.add(k, 1)] - self.times[k]
            h = h[:, None] if np.ndim(h) else h
            delta = p[np.add(k, 1)] - p0
            zeros = np.zeros_like(p0)
            return p0 + delta * s / h, delta / h + zeros, zeros, zeros.copy()
        _, c2, c3, c4, c5 = (part[k] for part in polynomials)
        v0 = v[k]
        q = p0 + s * (v0 + s * (c2 + s * (c3 + s * (c4 + s * c5))))
        dq = v0 + s * (2.0 * c2 + s * (3.0 * c3 + s * (4.0 * c4 + s * 5.0 * c5)))
        ddq = 2.0 * c2 + s * (6.0 * c3 + s * (12.0 * c4 + s * 20.0 * c5))
        jerk = 6.0 * c3 + s * (24.0 * c4 + s * 60.0 * c5)
        return q, dq, ddq, jerk


def interpolate_trajectory(
    times: np.ndarray,
    positions: np.ndarray,
    velocities: np.ndarray | None,
    accelerations: np.ndarray | None,
    t: float | np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Desired ``q, q̇, q̈`` at time(s) ``t``: :func:`controller_motion` without the jerk."""
    q, dq, ddq, _ = controller_motion(times, positions, velocities, accelerations, t)
    return q, dq, ddq
