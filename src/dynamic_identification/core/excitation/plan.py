"""One entry point from excitation settings to a checked trajectory, shared by ``dynid excite`` and the node.

Modes (issue: excitation):

* ``fourier`` — a periodic Fourier series optimised for the condition number of
  the base observation matrix (seed 004 §II.C), or random coefficients fitted
  into the limits when ``optimise`` is off;
* ``segmented`` — segment ``k`` holds joints ``1..k-1`` still (seed 000 §IV.B);
* ``process`` — pick-and-place or a horizontal square (seed 004 §III.B), the
  stand-in for the robot's real job.

The trajectory is repeated ``periods`` times (Fourier series join seamlessly;
other modes return to their start through a C² ramp) and always passes
:func:`~dynamic_identification.core.excitation.safety.check_trajectory`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynamic_identification.core.excitation.optimisation import (
    Workspace,
    optimise_fourier,
    random_fourier,
    sampled_condition_number,
)
from dynamic_identification.core.excitation.process import default_process_areas, pick_and_place, square
from dynamic_identification.core.excitation.safety import (
    JointLimits,
    LimitUsage,
    check_trajectory,
    limit_usage,
    ramp,
)
from dynamic_identification.core.excitation.segmented import default_segmented_trajectory
from dynamic_identification.core.excitation.settings import ExcitationSettings
from dynamic_identification.core.excitation.trajectory import SampledTrajectory, concatenate, sample
from dynamic_identification.core.model import DriveChain, DriveTerms, RobotModel
from dynamic_identification.core.regressors import base_parameters


@dataclass(frozen=True)
class ExcitationPlan:
    """A checked trajectory and what it achieves.

    ``condition_number`` is that of the column-normalised base observation matrix
    along the trajectory (infinite when some base parameter is not excited).
    """

    trajectory: SampledTrajectory
    limits: JointLimits
    usage: LimitUsage
    condition_number: float
    description: str


def plan_excitation(
    robot: RobotModel, drive_chain: DriveChain, terms: DriveTerms, settings: ExcitationSettings
) -> ExcitationPlan:
    """Build the trajectory the settings ask for, repeat it, and check it against the limits."""
    limits = settings.limits(robot)
    condition: float | None = None
    if settings.mode == "fourier":
        if settings.optimise:
            design = optimise_fourier(
                robot,
                drive_chain,
                terms,
                limits,
                fundamental_hz=settings.fundamental_hz,
                harmonics=settings.harmonics,
                workspace=_workspace(settings),
                seed=settings.seed,
                time_budget_s=settings.time_budget_s,
                max_evaluations=settings.max_evaluations or None,
            )
            fourier, condition = design.trajectory, design.condition_number
            description = f"optimised Fourier series, condition number {condition:.3g}"
        else:
            fourier = random_fourier(
                robot,
                limits,
                fundamental_hz=settings.fundamental_hz,
                harmonics=settings.harmonics,
                seed=settings.seed,
                workspace=_workspace(settings),
            )
            description = "random Fourier series fitted into the limits"
        duration = settings.periods * fourier.period_s
        steps = int(round(duration * settings.rate_hz))
        trajectory = sample(fourier, np.arange(steps + 1) / settings.rate_hz, robot.joint_names)
        description += f", {settings.periods} period(s) of {fourier.period_s:g} s"
    else:
        if settings.mode == "segmented":
            one = default_segmented_trajectory(
                robot,
                limits,
                fundamental_hz=settings.fundamental_hz,
                harmonics=settings.harmonics,
                rate_hz=settings.rate_hz,
                seed=settings.seed,
            ).trajectory
            description = f"segmented per-joint-fixed trajectory, {robot.n_joints} segments"
        else:
            areas = default_process_areas(robot, settings.frame, limits=limits)
            common = {
                "rate_hz": settings.rate_hz,
                "frame": areas["frame"],
                "q_seed": areas["q_seed"],
                "orientation": areas["orientation"],
            }
            if settings.process == "pick_and_place":
                one = pick_and_place(
                    robot,
                    limits,
                    area_a=areas["area_a"],
                    area_b=areas["area_b"],
                    cycles=settings.cycles,
                    seed=settings.seed,
                    lift_m=areas["lift_m"],
                    **common,
                )
                description = f"pick-and-place process, {settings.cycles} cycle(s)"
            else:
                one = square(
                    robot, limits, centre=areas["centre"], side_m=areas["side_m"], laps=settings.cycles, **common
                )
                description = f"horizontal square process, {settings.cycles} lap(s)"
        trajectory = _repeated(one, settings.periods, limits, settings.rate_hz)
        if settings.periods > 1:
            description += f", repeated {settings.periods} times"
    check_trajectory(trajectory, limits)
    if condition is None:
        base = base_parameters(robot, drive_chain, terms)
        condition = sampled_condition_number(robot, drive_chain, terms, base, trajectory)
    return ExcitationPlan(
        trajectory=trajectory,
        limits=limits,
        usage=limit_usage(trajectory, limits),
        condition_number=condition,
        description=description,
    )


def _workspace(settings: ExcitationSettings) -> Workspace | None:
    """The Fourier optimiser's workspace restrictions, if any."""
    if settings.box_min is None and settings.box_max is None and settings.workspace_lower is None:
        return None
    return Workspace(
        lower=None if settings.workspace_lower is None else np.asarray(settings.workspace_lower, dtype=float),
        upper=None if settings.workspace_upper is None else np.asarray(settings.workspace_upper, dtype=float),
        box_min=None if settings.box_min is None else np.asarray(settings.box_min, dtype=float),
        box_max=None if settings.box_max is None else np.asarray(settings.box_max, dtype=float),
        frame=settings.frame,
    )


def _repeated(one: SampledTrajectory, periods: int, limits: JointLimits, rate_hz: float) -> SampledTrajectory:
    """``periods`` copies of ``one`` joined by C² ramps from its end back to its start."""
    if periods == 1:
        return one
    back = ramp((one.q[-1], one.dq[-1], one.ddq[-1]), (one.q[0], one.dq[0], one.ddq[0]), limits, rate_hz=rate_hz)
    inner = SampledTrajectory(back.time[1:-1], back.q[1:-1], back.dq[1:-1], back.ddq[1:-1], one.joint_names)
    parts: list[SampledTrajectory] = [one]
    for _ in range(periods - 1):
        if inner.time.size:
            parts.append(inner)
        parts.append(one)
    return concatenate(parts)
