"""Excitation trajectories: periodic Fourier series inside the joint limits.

The finite Fourier series of [Volkmann2020] eq. (6) ([Swevers2002] eq. (15)-(17)) shares one
fundamental frequency ``ω_b`` between all joints, so the motion is exactly periodic
and can be averaged over periods:

``q_j(t) = q_{0,j} + Σ_k (a_{k,j} / (k ω_b)) sin(k ω_b t) − (b_{k,j} / (k ω_b)) cos(k ω_b t)``

(the sign of the cosine term is chosen so that ``q̇`` reads ``Σ a cos + b sin``).
Positions, velocities and accelerations are analytic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.mechanism.robot import RobotModel


@dataclass(frozen=True)
class FourierTrajectory:
    """Per-joint finite Fourier series ([Volkmann2020] eq. (6)).

    Attributes
    ----------
    fundamental_hz
        ``ω_b / 2π`` in Hz; the period is ``1 / fundamental_hz``.
    offsets
        ``q_0`` in rad, shape ``(n,)``.
    sine
        ``a_{k,j}`` in rad/s, shape ``(n_h, n)``.
    cosine
        ``b_{k,j}`` in rad/s, shape ``(n_h, n)``.
    """

    fundamental_hz: float
    offsets: np.ndarray
    sine: np.ndarray
    cosine: np.ndarray

    @property
    def period_s(self) -> float:
        return 1.0 / self.fundamental_hz

    @property
    def harmonics(self) -> int:
        return int(self.sine.shape[0])

    def evaluate(self, time_s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions (rad), velocities (rad/s) and accelerations (rad/s²), each ``(N, n)``."""
        t = np.asarray(time_s, dtype=float).reshape(-1, 1)
        omega = 2.0 * np.pi * self.fundamental_hz * np.arange(1, self.harmonics + 1)
        phase = t * omega
        sin, cos = np.sin(phase), np.cos(phase)
        q = self.offsets + (sin / omega) @ self.sine - (cos / omega) @ self.cosine
        dq = cos @ self.sine + sin @ self.cosine
        ddq = -(sin * omega) @ self.sine + (cos * omega) @ self.cosine
        return q, dq, ddq

    def scaled(self, factor: np.ndarray | float) -> FourierTrajectory:
        """The same motion with every joint's oscillation multiplied by ``factor``."""
        scale = np.broadcast_to(np.asarray(factor, dtype=float), self.offsets.shape)
        return FourierTrajectory(self.fundamental_hz, self.offsets, self.sine * scale, self.cosine * scale)


def random_fourier_trajectory(
    robot: RobotModel,
    *,
    fundamental_hz: float = 0.1,
    harmonics: int = 5,
    margin: float = 0.1,
    seed: int = 0,
    samples_per_period: int = 2000,
    velocity_fraction: float = 0.8,
    acceleration_limits: np.ndarray | None = None,
) -> FourierTrajectory:
    """A random Fourier trajectory scaled per joint to use most of its limits.

    Offsets sit at the middle of each joint's range; random coefficients are then
    scaled so that, on a dense grid over one period, positions stay within the
    range shrunk by ``margin`` (fraction of the half-range), velocities within
    ``velocity_fraction`` of the URDF limit and, when given, accelerations within
    ``acceleration_limits`` (rad/s²). Not optimised for identifiability: that is
    the job of the excitation optimiser.
    """
    if not 0.0 <= margin < 1.0:
        raise IdentificationError(f"margin must be in [0, 1), got {margin}")
    if fundamental_hz <= 0.0 or harmonics < 1:
        raise IdentificationError(f"need fundamental_hz > 0 and harmonics >= 1, got {fundamental_hz}, {harmonics}")
    rng = np.random.default_rng(seed)
    n = robot.n_joints
    lower, upper = robot.sampling_position_range()
    centre = 0.5 * (lower + upper)
    half_range = 0.5 * (upper - lower) * (1.0 - margin)
    trajectory = FourierTrajectory(
        fundamental_hz=fundamental_hz,
        offsets=centre,
        sine=rng.normal(size=(harmonics, n)),
        cosine=rng.normal(size=(harmonics, n)),
    )
    grid = np.linspace(0.0, trajectory.period_s, samples_per_period, endpoint=False)
    q, dq, ddq = trajectory.evaluate(grid)
    ratios = [
        np.abs(q - centre).max(axis=0) / half_range,
        np.abs(dq).max(axis=0) / (velocity_fraction * robot.velocity_limits),
    ]
    if acceleration_limits is not None:
        ratios.append(np.abs(ddq).max(axis=0) / np.asarray(acceleration_limits, dtype=float))
    return trajectory.scaled(1.0 / np.max(ratios, axis=0))
