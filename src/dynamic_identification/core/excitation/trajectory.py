"""Sampled joint trajectories: what the excitation node streams and ``dynid excite`` writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from dynamic_identification.core.errors import IdentificationError


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
