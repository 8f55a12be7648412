"""Excitation settings: what to excite the robot with, and within which limits."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.collision import SelfCollisionModel
from dynamic_identification.core.excitation.safety import JointLimits
from dynamic_identification.core.mechanism.robot import RobotModel
from dynamic_identification.core.settings_schema import DYNID_EXCITE, EXCITATION_MODES, PROCESSES, setting_field

MODES: tuple[str, ...] = EXCITATION_MODES


class FourierArguments(TypedDict):
    """The Fourier series every excitation designer takes, as keyword arguments.

    ``fundamental_hz`` (Hz) and ``harmonics`` of [Volkmann2020] eq. (6), and the ``seed`` of
    the random coefficients or of the search.
    """

    fundamental_hz: float
    harmonics: int
    seed: int


class BudgetArguments(TypedDict):
    """The budget of an optimised Fourier design, as keyword arguments.

    ``time_budget_s`` (s) and ``max_evaluations`` (``None``: the time budget alone).
    """

    time_budget_s: float
    max_evaluations: int | None


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
    self_collision, collision_margin_m, collision_srdf
        Check the executed motion for self-collision when the URDF has collision
        geometry, keeping its links ``collision_margin_m`` (m) apart, leaving out the
        pairs the SRDF file ``collision_srdf`` disables (empty: none); see
        :mod:`~.collision`.
    optimise, time_budget_s, max_evaluations, seed
        Fourier mode: optimise the coefficients (within the budget, s, and at most
        ``max_evaluations`` cost evaluations when > 0: reproducible whatever the machine's
        load) or draw them at random.
    workspace_lower, workspace_upper
        Narrower joint ranges, rad (restricted workspace), or ``None``.
    box_min, box_max, frame
        End-effector box in the base frame, m, checked on ``frame`` (Fourier optimisation);
        in ``payload`` mode the frame the load is attached to (default the last frame).
    process, cycles, tool_tilt
        Process mode: ``pick_and_place`` (``cycles`` pick-and-place cycles, the tool tilted by up
        to ``tool_tilt`` rad at each point) or ``square`` (``cycles`` laps).
    """

    mode: Literal["fourier", "segmented", "process", "payload"] = setting_field("mode", DYNID_EXCITE)
    fundamental_hz: float = setting_field("fundamental_hz", DYNID_EXCITE)
    harmonics: int = setting_field("harmonics", DYNID_EXCITE)
    periods: int = setting_field("periods", DYNID_EXCITE)
    rate_hz: float = setting_field("rate_hz", DYNID_EXCITE)
    position_margin_rad: float = setting_field("position_margin_rad", DYNID_EXCITE)
    velocity_scale: float = setting_field("velocity_scale", DYNID_EXCITE)
    acceleration_scale: float = setting_field("acceleration_scale", DYNID_EXCITE)
    acceleration_limits: tuple[float, ...] | None = setting_field("acceleration_limits", DYNID_EXCITE)
    jerk_scale: float = setting_field("jerk_scale", DYNID_EXCITE)
    jerk_limits: tuple[float, ...] | None = setting_field("limits.jerk")
    effort_scale: float = setting_field("effort_scale", DYNID_EXCITE)
    effort_limits: tuple[float, ...] | None = setting_field("limits.effort")
    interpolation_tolerance_rad: float = setting_field("interpolation_tolerance_rad", DYNID_EXCITE)
    self_collision: bool = setting_field("self_collision", DYNID_EXCITE)
    collision_margin_m: float = setting_field("collision_margin_m", DYNID_EXCITE)
    collision_srdf: str = setting_field("collision_srdf", DYNID_EXCITE)
    optimise: bool = setting_field("optimise", DYNID_EXCITE)
    time_budget_s: float = setting_field("time_budget_s", DYNID_EXCITE)
    max_evaluations: int = setting_field("max_evaluations", DYNID_EXCITE)
    seed: int = setting_field("seed", DYNID_EXCITE)
    workspace_lower: tuple[float, ...] | None = setting_field("workspace_lower", DYNID_EXCITE)
    workspace_upper: tuple[float, ...] | None = setting_field("workspace_upper", DYNID_EXCITE)
    box_min: tuple[float, ...] | None = setting_field("box_min", DYNID_EXCITE)
    box_max: tuple[float, ...] | None = setting_field("box_max", DYNID_EXCITE)
    frame: str | None = setting_field("frame", DYNID_EXCITE)
    process: Literal["pick_and_place", "square"] = setting_field("process", DYNID_EXCITE)
    cycles: int = setting_field("cycles", DYNID_EXCITE)
    tool_tilt: float = setting_field("tool_tilt", DYNID_EXCITE)

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

    def fourier_arguments(self) -> FourierArguments:
        """``fundamental_hz``, ``harmonics`` and ``seed`` for a designer (``optimise_fourier(..., **arguments)``)."""
        return FourierArguments(fundamental_hz=self.fundamental_hz, harmonics=self.harmonics, seed=self.seed)

    def budget_arguments(self) -> BudgetArguments:
        """``time_budget_s`` and ``max_evaluations`` for an optimiser; a configured 0 evaluations means no limit."""
        return BudgetArguments(time_budget_s=self.time_budget_s, max_evaluations=self.max_evaluations or None)

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

    def collision_model(
        self, robot: RobotModel, *, joined: Sequence[tuple[int, int]] = ()
    ) -> SelfCollisionModel | None:
        """The self-collision check these settings ask for on ``robot`` (a closed-loop robot's opened tree, with
        its :attr:`~dynamic_identification.core.mechanism.closed_loop.ClosedLoopModel.closure_joints` as ``joined``);
        ``None`` when off or when its URDF has no collision geometry."""
        if not self.self_collision:
            return None
        return SelfCollisionModel.from_urdf(
            robot, margin_m=self.collision_margin_m, srdf=self.collision_srdf or None, joined=joined
        )
