"""Excitation: trajectories the robot follows while it is identified, and their safety.

* :mod:`.fourier` — periodic finite Fourier series (seed 004 eq. (6), seed 002 eq. (15)-(17));
* :mod:`.trajectory` — sampled trajectories, what is streamed and written;
* :mod:`.safety` — the one limit check every commanded motion passes, and C² ramps.
"""

from dynamic_identification.core.excitation.fourier import FourierTrajectory, random_fourier_trajectory
from dynamic_identification.core.excitation.safety import (
    JointLimits,
    LimitViolationError,
    check_trajectory,
    limit_usage,
    ramp,
    stop_ramp,
)
from dynamic_identification.core.excitation.trajectory import SampledTrajectory, concatenate, sample

__all__ = [
    "FourierTrajectory",
    "JointLimits",
    "LimitViolationError",
    "SampledTrajectory",
    "check_trajectory",
    "concatenate",
    "limit_usage",
    "ramp",
    "random_fourier_trajectory",
    "sample",
    "stop_ramp",
]
