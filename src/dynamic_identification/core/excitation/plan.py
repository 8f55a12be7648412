"""One entry point from excitation settings to a checked trajectory, shared by ``dynid excite`` and the node.

Modes (issue: excitation):

* ``fourier`` — a periodic Fourier series optimised for the condition number of
  the base observation matrix ([Volkmann2020] §II.C), or random coefficients fitted
  into the limits when ``optimise`` is off;
* ``segmented`` — segment ``k`` holds joints ``1..k-1`` still ([Gautier2013] §IV.B);
* ``process`` — pick-and-place or a horizontal square ([Volkmann2020] §III.B), the
  stand-in for the robot's real job;
* ``payload`` — a Fourier series of the last joints only, optimised for the condition
  number of the load's regressor on ``frame`` ([Swevers2002] §4.2): a quick experiment
  for ``dynid payload`` with the robot's model known (the others hold mid-range).

The trajectory is repeated ``periods`` times (Fourier series join seamlessly;
other modes return to their start through a C² ramp). What the controller will
execute between the published points is checked against every limit, the
interpolation tolerance and the effort limits, and, when the URDF has collision geometry,
against self-collision (:func:`plan_excitation`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from dynamic_identification.core.cancellation import NEVER, Cancellation
from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.collision import (
    SelfCollisionError,
    SelfCollisionModel,
    check_self_collision,
    self_collision_summary,
)
from dynamic_identification.core.excitation.constraints import (
    DEFAULT_SINGULARITY_MARGIN,
    MechanismLimits,
    check_executed_motion,
)
from dynamic_identification.core.excitation.fourier import FourierTrajectory
from dynamic_identification.core.excitation.optimisation import (
    Workspace,
    optimise_fourier,
    random_fourier,
    sampled_condition_number,
    search_report,
)
from dynamic_identification.core.excitation.payload import optimise_payload_excitation
from dynamic_identification.core.excitation.process import default_process_areas, pick_and_place, square
from dynamic_identification.core.excitation.safety import (
    CHECK_RATE_HZ,
    JointLimits,
    LimitUsage,
    LimitViolationError,
    TorqueModel,
    check_sampling,
    check_torques,
    limit_usage,
    ramp,
)
from dynamic_identification.core.excitation.segmented import default_segmented_trajectory
from dynamic_identification.core.excitation.settings import ExcitationSettings
from dynamic_identification.core.excitation.trajectory import SampledTrajectory, concatenate, sample
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel
from dynamic_identification.core.mechanism.seam import Mechanism, mechanism_of
from dynamic_identification.core.regressors.dynamic_model import DynamicModel

PLANNING_RATE_HZ = CHECK_RATE_HZ
"""The planned motion is built at least this densely (a multiple of ``rate_hz``), Hz; the published
points are every k-th of its samples, and the controller's motion through them is compared with it."""

SLOWER_FACTOR = 0.8
"""Segmented and process plans whose torques exceed the effort limits are re-planned this much slower."""

SLOWER_ATTEMPTS = 6
"""Re-plans before a torque excess is refused (down to 0.8⁵ ≈ 33 % of the speed and acceleration limits), and
amplitude scalings before a Fourier series that collides with the robot itself is refused."""

SCALE_BISECTIONS = 3
"""Bisections of the amplitude scale between the first passing step of :func:`scaled_until_safe` (steps of
:data:`SLOWER_FACTOR`) and the failing one before it: the scale kept lies within 3 % below the smallest failing
scale found, where the steps alone could lose 20 %."""

PAYLOAD_EVALUATIONS = 1500
"""Cost evaluations of the payload excitation's search when ``max_evaluations`` is 0."""

_Checked = TypeVar("_Checked")
"""What the check of :func:`scaled_until_safe` returns for the motion it accepts."""


@dataclass(frozen=True)
class ExcitationPlan:
    """A checked trajectory and what it achieves.

    ``trajectory`` holds the points to publish (every ``1 / rate_hz``); the motion the
    controller executes through them keeps ``limits`` (position, velocity,
    acceleration, jerk, torque) and stays within the interpolation tolerance of the
    planned motion. ``condition_number`` is that of the column-normalised base
    observation matrix along the trajectory (infinite when some base parameter is not
    excited, ``None`` when not computed, e.g. for a trajectory file); ``torque_usage``
    the largest fraction of an effort limit the motion needs under ``torque_source``
    (0 when no effort limit is known); ``self_collision`` whether and how the motion was
    checked for self-collision (:func:`~.collision.self_collision_summary`; empty where
    the check does not apply); ``warnings`` what a user must read, e.g. that the wall-time
    cap, not the evaluation budget, ended an optimised design's search
    (:func:`~.optimisation.search_report`).
    """

    trajectory: SampledTrajectory
    limits: JointLimits
    usage: LimitUsage
    condition_number: float | None
    description: str
    torque_usage: float = 0.0
    torque_source: str = ""
    self_collision: str = ""
    warnings: tuple[str, ...] = ()


def plan_excitation(
    robot: RobotModel | Mechanism,
    drive_chain: DriveChain,
    terms: DriveTerms,
    settings: ExcitationSettings,
    *,
    torque_model: TorqueModel | None = None,
    collision: SelfCollisionModel | None = None,
    margin: float = DEFAULT_SINGULARITY_MARGIN,
    cancellation: Cancellation = NEVER,
) -> ExcitationPlan:
    """Build the trajectory of the controlled joints the settings ask for, repeat it, and check what the
    controller will execute.

    ``robot`` is a serial robot's model or a :class:`~dynamic_identification.core.mechanism.seam.Mechanism`;
    every mechanism is planned the same way, against its limits
    (:meth:`~.constraints.MechanismLimits.from_settings`): a closed-loop robot's passive joints, completed
    from its loop closures ([Briot2012] §2), keep theirs and ``margin``, the smallest ``σ_min / σ_max`` of the
    passive block of ``A_t`` allowed, as a fraction of its reference value (:mod:`.constraints`); a serial
    robot has neither. Segmented, process and payload trajectories and the end-effector box need a serial
    chain (inverse kinematics of the tool) and are refused for a mechanism with passive joints; restrict
    its actuated joints with ``workspace_lower`` / ``workspace_upper``.

    The motion is planned at a multiple of ``settings.rate_hz`` of at least
    :data:`PLANNING_RATE_HZ`; the published points are its samples every ``1 / rate_hz``.
    Then, in order:

    1. the controller's quintic through the points must stay within
       ``settings.interpolation_tolerance_rad`` of the planned motion and within every
       kinematic limit (:func:`~.safety.check_sampling`; a too low rate is refused with
       the lowest rate that works);
    2. the torques the motion needs under ``torque_model`` (default: the URDF's nominal
       model, :meth:`~.safety.TorqueModel.nominal`) must keep the effort limits: a
       Fourier series is scaled toward its offset pose until they do (inside the
       optimisation), a segmented or process plan is re-planned slower
       (:data:`SLOWER_FACTOR`, at most :data:`SLOWER_ATTEMPTS` times), else refused;
    3. when the URDF has collision geometry (and ``settings.self_collision``), no two links
       may come closer than ``settings.collision_margin_m`` along the executed motion
       (:func:`~.collision.check_self_collision`; ``collision``: the model of these settings
       when the caller has already built it, as the excitation node has, else built here):
       a Fourier or payload series is scaled toward its offset pose (:data:`SLOWER_FACTOR`,
       at most :data:`SLOWER_ATTEMPTS` times) until it keeps the margin, a segmented or
       process plan is refused;
    4. the executed motion completed to the tree keeps the passive joints' limits and the
       singularity margin (:func:`~.constraints.check_executed_motion`, which checks 1-3 too).

    An optimised design spends ``settings.max_evaluations`` cost evaluations, so the plan is
    the same at any load; ``settings.time_budget_s`` caps the wall time, and the plan's
    ``warnings`` say when the cap ended the search first. Planning takes as long as that
    budget and the length of the motion (a period of ``1 / fundamental_hz``) ask; ``cancellation`` withdraws it: it is
    polled before every cost evaluation of a search, every bisection step and every chunk of
    a check (:mod:`~dynamic_identification.core.cancellation`). A plan that is not cancelled
    is the same as without it.

    Raises
    ------
    LimitViolationError, SamplingRateError, SelfCollisionError, IdentificationError
        Naming the first violation, the rate needed, the colliding links, or why no plan exists.
    PlanningCancelled
        When ``cancellation`` is requested before the plan is checked.
    """
    mechanism = mechanism_of(robot)
    _refuse_serial_only(mechanism, settings)
    limits = MechanismLimits.from_settings(mechanism, settings, singularity_margin=margin)
    tolerance = settings.interpolation_tolerance_rad
    planning = limits.planning(tolerance)
    model = torque_model if torque_model is not None else TorqueModel.nominal(mechanism, drive_chain, terms)
    if collision is None:
        collision = settings.collision_model(mechanism.robot, joined=mechanism.closure_joints)
    factor = planning_factor(settings.rate_hz)
    condition: float | None = None
    cancellation.check()
    warnings: tuple[str, ...] = ()
    q_start: np.ndarray | None = None
    dynamic_model: DynamicModel | None = None
    if settings.mode == "fourier":
        dynamic_model = DynamicModel.create(mechanism, drive_chain, terms)
        reference, description, condition, warnings, q_start = _fourier(
            dynamic_model, settings, planning, model, factor, collision, cancellation
        )
    elif settings.mode == "payload":
        reference, description, condition, warnings = _payload(
            mechanism.robot, settings, planning.actuated, model, factor, collision, cancellation
        )
    else:
        dense_rate = settings.rate_hz * factor
        reference, description = _slower_until_torques_fit(
            planning.actuated, model, dense_rate, _builder(mechanism.robot, settings), cancellation
        )
    if settings.periods > 1:
        description += f", repeated {settings.periods} times" if settings.mode not in ("fourier", "payload") else ""
    points = subsampled(reference, factor)
    cancellation.report(CHECK_STAGE)
    check_sampling(
        points, reference, limits.actuated, rate_hz=settings.rate_hz, tolerance_rad=tolerance, cancellation=cancellation
    )
    checked = check_executed_motion(
        mechanism,
        points,
        limits,
        torque_model=model,
        collision=collision,
        q_guess=q_start,
        cancellation=cancellation,
    )
    if condition is None and settings.mode != "payload":
        dynamic_model = dynamic_model or DynamicModel.create(mechanism, drive_chain, terms)
        condition = sampled_condition_number(dynamic_model, points, q_guess=q_start)
    if checked.singularity_ratio is not None:
        description += (
            f", closure σ_min/σ_max >= {checked.singularity_ratio:.2f} of its reference value (margin {margin:g})"
        )
    usage = limit_usage(points, limits.actuated, cancellation=cancellation)
    return ExcitationPlan(
        trajectory=points,
        limits=limits.actuated,
        usage=usage,
        condition_number=condition,
        description=description,
        torque_usage=checked.torque_usage,
        torque_source=model.source,
        self_collision=self_collision_summary(collision, enabled=settings.self_collision),
        warnings=warnings + _still_joints(limits.actuated.joint_names, usage, settings),
    )


#: A joint whose motion spans less than this fraction of its range does not move, for :func:`_still_joints`.
STILL_RANGE_FRACTION = 1e-3


def _still_joints(names: tuple[str, ...], usage: LimitUsage, settings: ExcitationSettings) -> tuple[str, ...]:
    """The warning that joints of a plan do not move: the parameters only their motion excites are not identifiable
    from it. A payload plan holds the shoulder joints on purpose ([Swevers2002] §4.2): no warning."""
    still = [name for name, used in zip(names, usage.position, strict=True) if used < STILL_RANGE_FRACTION]
    if not still or settings.mode == "payload":
        return ()
    hint = (
        "; tool_tilt > 0 turns the wrist at the pick and place points"
        if settings.mode == "process" and settings.process == "pick_and_place" and settings.tool_tilt == 0.0
        else ""
    )
    return (
        f"{', '.join(still)} {'does' if len(still) == 1 else 'do'} not move in this plan: the parameters only"
        f" {'its' if len(still) == 1 else 'their'} motion excites cannot be identified from it (the estimator's"
        f" reduction leaves them out){hint}",
    )


def _refuse_serial_only(mechanism: Mechanism, settings: ExcitationSettings) -> None:
    """Refuse what needs a serial chain (inverse kinematics of the tool) for a mechanism with passive joints.

    Raises
    ------
    IdentificationError
        For a segmented, process or payload mode, or an end-effector box.
    """
    if mechanism.passive.shape[0] == 0:
        return
    if settings.mode != "fourier":
        raise IdentificationError(
            f"mode {settings.mode!r} is not available for a closed-loop robot: only 'fourier' plans the actuated"
            " joints with the passive joints and the singularities checked"
        )
    if settings.box_min is not None or settings.box_max is not None:
        raise IdentificationError(
            "box_min/box_max (end-effector box) are not available for a closed-loop robot: restrict the actuated"
            " joints with workspace_lower/workspace_upper"
        )


def _fourier(
    dynamic_model: DynamicModel,
    settings: ExcitationSettings,
    limits: MechanismLimits,
    model: TorqueModel,
    factor: int,
    collision: SelfCollisionModel | None,
    cancellation: Cancellation,
) -> tuple[SampledTrajectory, str, float | None, tuple[str, ...], np.ndarray]:
    """The Fourier series of the controlled joints, sampled at ``factor`` times ``settings.rate_hz``, its
    description, (when optimised and not scaled to avoid a self-collision) its condition number, the search's
    warnings (:func:`search_report`) and the tree configuration it starts from.

    The design (:func:`~.optimisation.optimise_fourier`, or :func:`~.optimisation.random_fourier` when
    ``settings.optimise`` is off) keeps the planning ``limits`` (:meth:`~.constraints.MechanismLimits.planning`:
    the controlled and passive joints' and the singularity margin), the torques under ``model`` and the
    workspace box; an optimised design and a random one with passive joints keep the self-collision margin
    too, a serial robot's random one leaves it to the scaling below (what the tests of both ask). The tree
    configuration of its first point is reached from the reference configuration through the offset pose (the
    route the design was checked along, choosing the assembly mode); should the motion, completed to the tree
    from there, bring two links closer than the self-collision margin, it is scaled toward its offset pose
    (:func:`scaled_until_safe`) until it keeps it, else refused. The description names the condition number of
    a design scaled, on its published points before scaling; the plan's own is reported beside the description.
    """
    mechanism = dynamic_model.mechanism
    condition: float | None = None
    warnings: tuple[str, ...] = ()
    series = "Fourier series" + (" of the actuated joints" if mechanism.passive.shape[0] > 0 else "")
    workspace = _workspace(settings)
    if settings.optimise:
        design = optimise_fourier(
            dynamic_model,
            limits,
            workspace=workspace,
            torque_model=model,
            collision=collision,
            cancellation=cancellation,
            **settings.fourier_arguments(),
            **settings.budget_arguments(),
        )
        fourier, condition = design.trajectory, design.condition_number
        searched, warnings = search_report(
            design.evaluations, design.wall_time_s, time_capped=design.time_capped, **settings.budget_arguments()
        )
        description = f"optimised {series} ({searched})"
    else:
        fourier = random_fourier(
            mechanism,
            limits,
            workspace=workspace,
            torque_model=model,
            collision=collision if mechanism.passive.shape[0] > 0 else None,
            cancellation=cancellation,
            **settings.fourier_arguments(),
        )
        description = f"random {series} fitted into the limits"
    time = planning_times(fourier.period_s, settings, factor)
    q_offset = mechanism.follow(fourier.offsets, start=mechanism.reference_configuration)

    def start_of(reference: SampledTrajectory) -> np.ndarray:
        """The tree configuration ``reference`` starts from, reached through the offset pose."""
        return mechanism.follow(reference.q[0], start=q_offset)

    def keeps_clear(reference: SampledTrajectory) -> np.ndarray:
        """:func:`start_of` ``reference``, after :func:`~.collision.check_self_collision` of ``reference``
        completed to the tree from there."""
        q_start = start_of(reference)
        if collision is not None:
            motion = mechanism.complete_motion(reference.q, reference.dq, reference.ddq, q_guess=q_start)
            tree = SampledTrajectory(reference.time, motion.q, motion.dq, motion.ddq, mechanism.joint_names)
            check_self_collision(tree, collision, cancellation=cancellation)
        return q_start

    reference, scale, q_start = scaled_until_safe(
        fourier,
        time,
        mechanism.actuated_joint_names,
        keeps_clear,
        what="the Fourier excitation",
        cancellation=cancellation,
    )
    if scale < 1.0 and condition is None:
        unscaled = sample(fourier, time, mechanism.actuated_joint_names)
        condition = sampled_condition_number(dynamic_model, subsampled(unscaled, factor), q_guess=start_of(unscaled))
    if condition is not None and scale < 1.0:
        # The plan's own condition number (of the scaled motion) is reported beside the description, once.
        description += f", condition number {condition:.3g} before scaling"
    if scale < 1.0:
        description += f", amplitudes scaled to {scale:.0%} to keep the self-collision margin"
        condition = None  # recomputed on the scaled motion
    description += f", {settings.periods} period(s) of {fourier.period_s:g} s"
    return reference, description, condition, warnings, q_start


def _payload(
    robot: RobotModel,
    settings: ExcitationSettings,
    limits: JointLimits,
    model: TorqueModel,
    factor: int,
    collision: SelfCollisionModel | None,
    cancellation: Cancellation,
) -> tuple[SampledTrajectory, str, float, tuple[str, ...]]:
    """The payload experiment's reference motion at ``factor`` times ``settings.rate_hz``, its description, the
    condition number of ``Y_p`` and the search's warnings (:func:`search_report`).

    :func:`~.payload.optimise_payload_excitation` within ``limits``; when the motion needs
    more torque than the effort limits allow, or brings two links closer than the
    self-collision margin, its amplitudes about the held pose are scaled by
    :data:`SLOWER_FACTOR` (at most :data:`SLOWER_ATTEMPTS` times), which keeps the period
    of the Fourier series.
    """
    frame = settings.frame or robot.model.frames[robot.model.nframes - 1].name
    design = optimise_payload_excitation(
        robot,
        frame,
        limits,
        max_evaluations=settings.max_evaluations or PAYLOAD_EVALUATIONS,
        time_budget_s=settings.time_budget_s,
        cancellation=cancellation,
        **settings.fourier_arguments(),
    )
    fourier = design.trajectory
    time = planning_times(fourier.period_s, settings, factor)

    def check(motion: SampledTrajectory) -> None:
        check_torques(motion, limits, model, cancellation=cancellation)
        _check_collision(motion, collision, cancellation)

    reference, scale, _ = scaled_until_safe(
        fourier,
        time,
        robot.joint_names,
        check,
        what="the payload excitation",
        source=model.source,
        cancellation=cancellation,
    )
    searched, warnings = search_report(
        design.evaluations,
        design.wall_time_s,
        time_capped=design.time_capped,
        time_budget_s=settings.time_budget_s,
        max_evaluations=settings.max_evaluations or PAYLOAD_EVALUATIONS,
    )
    description = (
        f"payload excitation of {', '.join(design.moving)} for the load on {frame} ([Swevers2002] §4.2, {searched}),"
        f" condition number of its regressor {design.condition_number:.3g}"
    )
    if scale < 1.0:
        description += f", amplitudes scaled to {scale:.0%} to keep the effort limits and the self-collision margin"
    description += f", {settings.periods} period(s) of {fourier.period_s:g} s"
    return reference, description, design.condition_number, warnings


def _check_collision(
    motion: SampledTrajectory, collision: SelfCollisionModel | None, cancellation: Cancellation
) -> None:
    """:func:`~.collision.check_self_collision` of ``motion`` when there is a collision model."""
    if collision is not None:
        check_self_collision(motion, collision, cancellation=cancellation)


def scaled_until_safe(
    fourier: FourierTrajectory,
    time: np.ndarray,
    joint_names: tuple[str, ...],
    check: Callable[[SampledTrajectory], _Checked],
    *,
    what: str,
    recoverable: tuple[type[IdentificationError], ...] = (LimitViolationError, SelfCollisionError),
    source: str = "",
    cancellation: Cancellation = NEVER,
) -> tuple[SampledTrajectory, float, _Checked]:
    """``fourier`` sampled at ``time`` (s), its amplitudes about the offset pose scaled by :data:`SLOWER_FACTOR`
    (at most :data:`SLOWER_ATTEMPTS` times) until ``check`` of the sampled motion raises none of the
    ``recoverable`` errors (a torque beyond an effort limit, a self-collision), then bisected
    :data:`SCALE_BISECTIONS` times between that scale and the last failing one, keeping the largest that passes;
    returns the motion, the scale and what ``check`` returned. Scaling about the offset pose keeps the period and
    shrinks every excursion from that pose, which the design has already checked. Each scale tried below 1 is a
    stage reported to ``cancellation`` (``check`` polls it).

    Raises
    ------
    IdentificationError
        When even the smallest scale fails, naming what (``what``), the torque model (``source``) of a torque
        violation, and the last violation; any error of ``check`` that is not ``recoverable`` as it is.
    """

    def attempt(scale: float) -> tuple[SampledTrajectory, _Checked] | IdentificationError:
        if scale < 1.0:
            cancellation.report(f"{what}: checking {scale:.0%} of its amplitudes")
        reference = sample(fourier.scaled(scale), time, joint_names)
        try:
            return reference, check(reference)
        except recoverable as error:
            return error

    failing = None
    for step in range(SLOWER_ATTEMPTS):
        scale = SLOWER_FACTOR**step
        outcome = attempt(scale)
        if isinstance(outcome, IdentificationError):
            failing = scale, outcome
            continue
        if failing is not None:
            high = failing[0]
            for _ in range(SCALE_BISECTIONS):
                middle = 0.5 * (scale + high)
                trial = attempt(middle)
                if isinstance(trial, IdentificationError):
                    high = middle
                else:
                    scale, outcome = middle, trial
        return outcome[0], scale, outcome[1]
    last_error = failing[1] if failing is not None else None
    model = f" ({source})" if source and isinstance(last_error, LimitViolationError) else ""
    raise IdentificationError(f"{what} still fails at {scale:.0%} of its amplitudes{model}: {last_error}")


CHECK_STAGE = "checks of the executed motion"
"""The stage :func:`plan_excitation` reports while it checks the published points."""

_Builder = Callable[[JointLimits, float], tuple[SampledTrajectory, str]]
"""A segmented or process planner: limits and sampling rate (Hz) → trajectory and description."""


def _builder(robot: RobotModel, settings: ExcitationSettings) -> _Builder:
    """The segmented or process planner of ``settings``, as a function of the limits and the rate."""

    def segmented(limits: JointLimits, rate_hz: float) -> tuple[SampledTrajectory, str]:
        one = default_segmented_trajectory(robot, limits, rate_hz=rate_hz, **settings.fourier_arguments()).trajectory
        return _repeated(one, settings.periods, limits, rate_hz), (
            f"segmented per-joint-fixed trajectory, {robot.n_joints} segments"
        )

    def process(limits: JointLimits, rate_hz: float) -> tuple[SampledTrajectory, str]:
        areas = default_process_areas(robot, settings.frame, limits=limits)
        common = {
            "rate_hz": rate_hz,
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
                tool_tilt_rad=settings.tool_tilt,
                **common,
            )
            tilted = f", the tool tilted up to {settings.tool_tilt:.2g} rad" if settings.tool_tilt > 0.0 else ""
            description = f"pick-and-place process, {settings.cycles} cycle(s){tilted}"
        else:
            one = square(robot, limits, centre=areas["centre"], side_m=areas["side_m"], laps=settings.cycles, **common)
            description = f"horizontal square process, {settings.cycles} lap(s)"
        return _repeated(one, settings.periods, limits, rate_hz), description

    return segmented if settings.mode == "segmented" else process


def _slower_until_torques_fit(
    limits: JointLimits,
    model: TorqueModel,
    rate_hz: float,
    build: _Builder,
    cancellation: Cancellation,
) -> tuple[SampledTrajectory, str]:
    """Plan with ``limits``; while the torques exceed the effort limits, plan again slower (``cancellation``
    polled before each attempt and through its torque check)."""
    last_error: LimitViolationError | None = None
    for attempt in range(SLOWER_ATTEMPTS):
        cancellation.check()
        speed = SLOWER_FACTOR**attempt
        cancellation.report(f"planning at {speed:.0%} of the speed limits" if attempt else "planning")
        trajectory, description = build(limits.slower(speed) if attempt else limits, rate_hz)
        try:
            check_torques(trajectory, limits, model, cancellation=cancellation)
        except LimitViolationError as error:
            last_error = error
            continue
        if attempt:
            description += f", slowed to {speed:.0%} of the speed limits to keep the effort limits"
        return trajectory, description
    slowest = SLOWER_FACTOR ** (SLOWER_ATTEMPTS - 1)
    raise IdentificationError(
        f"the motion needs more torque than the effort limits allow even at {slowest:.0%} of the speed limits"
        f" ({model.source}): {last_error}"
    )


def planning_factor(rate_hz: float) -> int:
    """Planned samples per published point: the smallest ``k >= 1`` with ``k · rate_hz >= PLANNING_RATE_HZ``.

    The motion is planned at ``k · rate_hz`` (Hz) so that the published points, every
    ``k``-th planned sample (:func:`subsampled`), are samples of the planned motion.
    """
    return max(1, int(np.ceil(PLANNING_RATE_HZ / rate_hz - 1e-9)))


def planning_times(period_s: float, settings: ExcitationSettings, factor: int) -> np.ndarray:
    """Instants (s) at which ``settings.periods`` periods of a periodic motion are planned.

    From 0 to ``settings.periods · period_s`` rounded to a whole number of published
    steps ``1 / settings.rate_hz``, both ends included, every ``1 / (factor ·
    settings.rate_hz)`` s; ``factor`` from :func:`planning_factor`.
    """
    steps = int(round(settings.periods * period_s * settings.rate_hz)) * factor
    return np.arange(steps + 1) / (settings.rate_hz * factor)


def subsampled(reference: SampledTrajectory, factor: int) -> SampledTrajectory:
    """Every ``factor``-th sample of ``reference``, its last sample always included."""
    index = np.arange(0, reference.time.shape[0], factor)
    if index[-1] != reference.time.shape[0] - 1:
        index = np.append(index, reference.time.shape[0] - 1)
    return SampledTrajectory(
        reference.time[index], reference.q[index], reference.dq[index], reference.ddq[index], reference.joint_names
    )


def _workspace(settings: ExcitationSettings) -> Workspace | None:
    """The Fourier optimiser's end-effector box, if any (the joint ranges of ``workspace_lower`` and
    ``workspace_upper`` are in the limits already: :meth:`~.constraints.MechanismLimits.from_settings`)."""
    if settings.box_min is None and settings.box_max is None:
        return None
    return Workspace(
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
