"""Excitation settings: what to excite the robot with, and within which limits."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.safety import DEFAULT_INTERPOLATION_TOLERANCE_RAD, JointLimits
from dynamic_identification.core.model import RobotModel

MODES: tuple[str, ...] = ("fourier", "segmented", "process", "payload")
PROCESSES: tuple[str, ...] = ("pick_and_place", "square")


@dataclass(frozen=True)
class ExcitationSettings:
    """What to excite the robot with, and within which limits.

    Attributes
    ----------
    mode
        ``fourier``, ``segmented``, ``process`` or ``payload`` (a Fourier series of the last
        joints optimised for the load's parameters on ``frame``, [Swevers2002] §4.2).
    fundamental_hz, harmonics
        Fourier fundamental frequency (Hz) and number of harmonics ``n_h`` ([Volkmann2020]: 0.1 Hz, 5).
    periods
        Repetitions of the trajectory.
    rate_hz
        Sampling of the planned trajectory, Hz.
    position_margin_rad, velocity_scale, acceleration_scale, acceleration_limits
        Margins on the URDF limits (see :meth:`JointLimits.from_robot`); acceleration
        limits in rad/s², one per joint, or ``None`` for the default.
    jerk_scale, jerk_limits
        Fraction of the jerk limits allowed and the limits themselves, rad/s³ (``None``:
        :data:`~.safety.DEFAULT_JERK_PER_ACCELERATION_HZ` times the acceleration limits).
    effort_scale, effort_limits
        Fraction of the effort limits a planned motion may need and the limits, N·m
        (``None``: the URDF's); the torques come from the nominal or an identified model.
    interpolation_tolerance_rad
        Largest distance allowed between the motion the controller executes between
        published points and the planned motion, rad; a lower ``rate_hz`` is refused
        with the lowest rate that keeps it.
    optimise, time_budget_s, max_evaluations, seed
        Fourier mode: optimise the coefficients (within the budget, s, and at most
        ``max_evaluations`` cost evaluations when > 0: reproducible whatever the machine's
        load) or draw them at random.
    workspace_lower, workspace_upper
        Narrower joint ranges, rad (restricted workspace), or ``None``.
    box_min, box_max, frame
        End-effector box in the base frame, m, checked on ``frame`` (Fourier optimisation);
        in ``payload`` mode the frame the load is attached to (default the last frame).
    process, cycles
        Process mode: ``pick_and_place`` (``cycles`` pick-and-place cycles) or ``square``
        (``cycles`` laps).
    """

    mode: Literal["fourier", "segmented", "process", "payload"] = "fourier"
    fundamental_hz: float = 0.1
    harmonics: int = 5
    periods: int = 1
    rate_hz: float = 100.0
    position_margin_rad: float = 0.05
    velocity_scale: float = 0.8
    acceleration_scale: float = 0.8
    acceleration_limits: tuple[float, ...] | None = None
    jerk_scale: float = 0.8
    jerk_limits: tuple[float, ...] | None = None
    effort_scale: float = 0.9
    effort_limits: tuple[float, ...] | None = None
    interpolation_tolerance_rad: float = DEFAULT_INTERPOLATION_TOLERANCE_RAD
    optimise: bool = True
    time_budget_s: float = 30.0
    max_evaluations: int = 0
    seed: int = 0
    workspace_lower: tuple[float, ...] | None = None
    workspace_upper: tuple[float, ...] | None = None
    box_min: tuple[float, ...] | None = None
    box_max: tuple[float, ...] | None = None
    frame: str | None = None
    process: Literal["pick_and_place", "square"] = "pick_and_place"
    cycles: int = 3

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise IdentificationError(f"mode must be one of {list(MODES)}, got {self.mode!r}")
        if self.process not in PROCESSES:
            raise IdentificationError(f"process must be one of {list(PROCESSES)}, got {self.process!r}")
        for name in ("fundamental_hz", "rate_hz", "interpolation_tolerance_rad"):
            if not (math.isfinite(getattr(self, name)) and getattr(self, name) > 0.0):
                raise IdentificationError(f"{name} must be finite and > 0, got {getattr(self, name)}")
        if not self.time_budget_s > 0.0:
            raise IdentificationError(f"time_budget_s must be > 0, got {self.time_budget_s}")
        for name in ("velocity_scale", "acceleration_scale", "jerk_scale", "effort_scale"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise IdentificationError(f"{name} must be in (0, 1], got {getattr(self, name)}")
        if self.max_evaluations < 0:
            raise IdentificationError(f"max_evaluations must be >= 0, got {self.max_evaluations}")
        for name in ("harmonics", "periods", "cycles"):
            if getattr(self, name) < 1:
                raise IdentificationError(f"{name} must be >= 1, got {getattr(self, name)}")

    def limits(self, robot: RobotModel) -> JointLimits:
        """The robot's limits with these margins and workspace restrictions."""
        limits = JointLimits.from_robot(
            robot,
            position_margin_rad=self.position_margin_rad,
            velocity_scale=self.velocity_scale,
            acceleration_limits=self.acceleration_limits,
            acceleration_scale=self.acceleration_scale,
            jerk_limits=self.jerk_limits,
            jerk_scale=self.jerk_scale,
            effort_limits=self.effort_limits,
            effort_scale=self.effort_scale,
        )
        return limits.restricted(lower=self.workspace_lower, upper=self.workspace_upper)
