"""What a mechanism's excitation must keep, and the one check of the motion its controller executes.

A robot is excited through its controlled joints (:class:`~dynamic_identification.core.mechanism.seam.Mechanism`):
the published points are theirs, and the controller's quintic through them
(:func:`~.safety.executed_motion`) is what the robot does. That motion must keep

* the controlled joints' position, velocity, acceleration and jerk limits (:func:`~.safety.check_trajectory`);
* the effort limits, under a torque model of the motion completed to the tree
  (:class:`~.safety.TorqueModel`, :func:`~.safety.check_torques`);
* the passive joints' position, velocity and acceleration limits, the passive motion completed from the
  loop closures ([Briot2012] eq. (2)-(4));
* a distance to parallel (type 2) singularities, where the passive block ``A_p`` of the constraint
  Jacobian ``A_t`` loses rank, ``q̇_p = −A_p⁺ A_a q̇_a`` (eq. (3)) blows up and so do the actuator
  torques: along the whole motion the conditioning ``r = σ_min(A_p) / σ_max(A_p)``, relative to its
  value at the mechanism's reference configuration, keeps ``r / r_ref >= margin``
  (:data:`DEFAULT_SINGULARITY_MARGIN`). The rows of ``A_t`` are in m or rad, so ``r`` itself depends on
  the link lengths when a closure mixes translations and rotations (``planar``, ``6d``); its ratio to the
  well-assembled reference pose does not, and vanishes at a singularity all the same;
* when the URDF has collision geometry, no two links of the tree closer than the self-collision margin
  (:mod:`.collision`; the bodies a closure joins are not paired).

A serial robot has no passive joints and no singularity of this kind (``J_t = I``): for it the list is the
first two items and the last one. :func:`check_executed_motion` checks them all, for every mechanism.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynamic_identification.core.cancellation import NEVER, Cancellation
from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.collision import SelfCollisionModel, first_self_collision
from dynamic_identification.core.excitation.safety import (
    CHECK_RATE_HZ,
    DEFAULT_ACCELERATION_PER_VELOCITY_HZ,
    DEFAULT_JERK_PER_ACCELERATION_HZ,
    ROUNDING_TOLERANCE,
    JointLimits,
    LimitUsage,
    LimitViolationError,
    TorqueModel,
    check_torques,
    check_trajectory,
    executed_chunks,
)
from dynamic_identification.core.excitation.settings import ExcitationSettings
from dynamic_identification.core.excitation.trajectory import SampledTrajectory
from dynamic_identification.core.mechanism.closed_loop import LoopClosureError
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms
from dynamic_identification.core.mechanism.seam import Mechanism, TreeMotion, tree_values

DEFAULT_SINGULARITY_MARGIN = 0.2
"""Default smallest ``σ_min / σ_max`` of the passive block ``A_p`` of ``A_t`` along an excitation, as a
fraction of its value at the reference configuration (:func:`reference_singularity_ratio`).

``cond(A_p)`` grows to at most five times its value at the home pose, and with it the passive
velocities ``‖A_p⁺ A_a q̇_a‖`` a given actuated velocity may cause. The shipped five-bar has
``σ_min / σ_max = 0.95`` at its home pose and 0 at its parallel singularity (distal links aligned);
opening both motors symmetrically, it falls below 0.2 of the home value at 0.58 rad, 0.055 rad before it."""

PLANNING_HEADROOM = 0.99
"""Plans use this fraction of the velocity, acceleration and jerk limits (and keep the interpolation
tolerance from the position limits), so the controller's interpolation between published points,
which overshoots the planned peaks slightly, still keeps the limits."""

PASSIVE_POSITION_HEADROOM = 10.0
"""Plans keep the passive joints this many interpolation tolerances inside their position ranges: the
controller's motion deviates from the planned one by up to one tolerance on the actuated joints, which
the loop closures amplify on the passive ones by ``‖J_t‖``."""


class MechanismMotionError(IdentificationError):
    """The motion leaves the mechanism's feasible set at one instant (loops that cannot be closed, a singularity).

    Attributes
    ----------
    time_s
        Time of the first violation, s.
    sample
        Its index in the motion checked at :data:`~.safety.CHECK_RATE_HZ`.
    """

    def __init__(self, message: str, *, time_s: float, sample: int) -> None:
        super().__init__(message)
        self.time_s = time_s
        self.sample = sample


class SingularityMarginError(MechanismMotionError):
    """The motion comes closer to a parallel singularity than the margin allows.

    Attributes
    ----------
    ratio
        ``σ_min / σ_max`` of the passive block of ``A_t`` at the violation, as a fraction
        of its value at the reference configuration.
    margin
        The smallest fraction allowed.
    """

    def __init__(
        self,
        *,
        time_s: float,
        sample: int,
        ratio: float,
        margin: float,
        between_points: bool,
        rate_hz: float = CHECK_RATE_HZ,
    ) -> None:
        where = " (in the controller's quintic interpolation between published points)" if between_points else ""
        super().__init__(
            f"closure at t = {time_s:.4f} s (sample {sample} of the motion checked at {rate_hz:g} Hz):"
            f" σ_min/σ_max of the passive joints' block of A_t falls to {ratio:.4g} of its value at the reference"
            f" configuration, below the singularity margin {margin:g}{where}",
            time_s=time_s,
            sample=sample,
        )
        self.ratio = ratio
        self.margin = margin


@dataclass(frozen=True)
class MechanismLimits:
    """What an excitation of a mechanism must keep, margins applied.

    Attributes
    ----------
    actuated
        Limits of the controlled joints (kinematic order): positions, velocities,
        accelerations, jerks of the controller's motion, and effort limits of the motors.
    passive
        Position, velocity and acceleration limits of the passive joints (kinematic
        order; none for a serial robot); their jerk and effort are not checked (no motor).
    singularity_margin
        Smallest ``σ_min / σ_max`` of the passive block ``A_p`` of ``A_t`` allowed, as a
        fraction of its value at the reference configuration, in ``(0, 1)``
        ([Briot2012] eq. (3) needs ``A_p`` of full rank); unused without passive joints.
    """

    actuated: JointLimits
    passive: JointLimits
    singularity_margin: float = DEFAULT_SINGULARITY_MARGIN

    def __post_init__(self) -> None:
        margin = self.singularity_margin
        if not (np.isfinite(margin) and 0.0 < margin < 1.0):
            raise IdentificationError(f"singularity_margin must be in (0, 1), got {margin}")

    @classmethod
    def from_settings(
        cls,
        mechanism: Mechanism,
        settings: ExcitationSettings,
        *,
        singularity_margin: float = DEFAULT_SINGULARITY_MARGIN,
    ) -> MechanismLimits:
        """The URDF limits of every tree joint with the margins and restrictions of ``settings``.

        Per-joint settings (``acceleration_limits``, ``jerk_limits``, ``effort_limits``,
        ``workspace_lower``, ``workspace_upper``) hold one value per controlled joint (the
        configured ``joints``) or one per tree joint, in kinematic order; the passive
        joints of a controlled-only setting keep their defaults (accelerations
        :data:`~.safety.DEFAULT_ACCELERATION_PER_VELOCITY_HZ` times the velocity limit,
        full range). A serial robot's controlled limits are
        :meth:`~.settings.ExcitationSettings.limits`.

        Raises
        ------
        IdentificationError
            On a per-joint setting of another length, or limits empty after margins.
        """
        robot = mechanism.robot
        velocity = robot.velocity_limits
        acceleration = tree_values(
            mechanism,
            "acceleration_limits",
            settings.acceleration_limits,
            DEFAULT_ACCELERATION_PER_VELOCITY_HZ * velocity,
        )
        jerk = tree_values(
            mechanism, "jerk_limits", settings.jerk_limits, DEFAULT_JERK_PER_ACCELERATION_HZ * acceleration
        )
        effort = tree_values(mechanism, "effort_limits", settings.effort_limits, robot.effort_limits)
        tree = JointLimits.from_robot(
            robot,
            position_margin_rad=settings.position_margin_rad,
            velocity_scale=settings.velocity_scale,
            acceleration_limits=acceleration,
            acceleration_scale=settings.acceleration_scale,
            jerk_limits=jerk,
            jerk_scale=settings.jerk_scale,
            effort_limits=effort,
            effort_scale=settings.effort_scale,
        ).restricted(
            lower=tree_values(
                mechanism, "workspace_lower", settings.workspace_lower, np.full(mechanism.n_tree, -np.inf)
            ),
            upper=tree_values(
                mechanism, "workspace_upper", settings.workspace_upper, np.full(mechanism.n_tree, np.inf)
            ),
        )
        return cls(
            actuated=_subset(tree, mechanism.actuated, effort=True),
            passive=_subset(tree, mechanism.passive, effort=False),
            singularity_margin=float(singularity_margin),
        )

    def planning(self, tolerance_rad: float) -> MechanismLimits:
        """The tighter limits a plan aims for, so that the controller's motion keeps these.

        Velocities, accelerations and jerks times :data:`PLANNING_HEADROOM`; controlled
        joints' ranges shrunk by ``tolerance_rad`` and passive ones by
        :data:`PASSIVE_POSITION_HEADROOM` times it.
        """
        actuated = self.actuated.slower(PLANNING_HEADROOM)
        passive = self.passive.slower(PLANNING_HEADROOM)
        gap = PASSIVE_POSITION_HEADROOM * tolerance_rad
        return MechanismLimits(
            actuated=actuated.restricted(lower=actuated.lower + tolerance_rad, upper=actuated.upper - tolerance_rad),
            passive=passive.restricted(lower=passive.lower + gap, upper=passive.upper - gap),
            singularity_margin=self.singularity_margin,
        )


NO_JOINTS = JointLimits((), *(np.zeros(0) for _ in range(4)))
"""The passive joints of a mechanism without closures."""


def as_mechanism_limits(limits: JointLimits | MechanismLimits) -> MechanismLimits:
    """``limits`` as a mechanism's: a serial robot's joint limits, without passive joints, as they are."""
    return limits if isinstance(limits, MechanismLimits) else MechanismLimits(limits, NO_JOINTS)


def _subset(limits: JointLimits, index: np.ndarray, *, effort: bool) -> JointLimits:
    return JointLimits(
        joint_names=tuple(limits.joint_names[int(j)] for j in index),
        lower=limits.lower[index],
        upper=limits.upper[index],
        velocity=limits.velocity[index],
        acceleration=limits.acceleration[index],
        jerk=limits.jerk[index],
        effort=limits.effort[index] if effort else np.full(index.shape[0], np.inf),
    )


def reference_singularity_ratio(mechanism: Mechanism) -> float:
    """``σ_min / σ_max`` of the passive block of ``A_t`` at the mechanism's reference configuration (1 without
    passive joints). The singularity margin of :class:`MechanismLimits` is a fraction of this value."""
    reference = mechanism.reference_configuration
    actuated = reference[None, mechanism.actuated]
    zeros = np.zeros_like(actuated)
    motion = mechanism.complete_motion(actuated, zeros, zeros, q_guess=reference)
    return 1.0 if motion.passive_condition is None else float(1.0 / motion.passive_condition[0])


def passive_usage(motion: TreeMotion, mechanism: Mechanism, limits: JointLimits) -> LimitUsage:
    """Fractions of the passive joints' limits ``motion`` uses (jerk: ``nan``, not checked)."""
    passive = mechanism.passive
    q = motion.q[:, passive]
    span = np.where(np.isfinite(limits.upper - limits.lower), limits.upper - limits.lower, 2.0 * np.pi)
    return LimitUsage(
        position=(q.max(axis=0, initial=-np.inf) - q.min(axis=0, initial=np.inf)) / span,
        velocity=np.abs(motion.dq[:, passive]).max(axis=0, initial=0.0) / limits.velocity,
        acceleration=np.abs(motion.ddq[:, passive]).max(axis=0, initial=0.0) / limits.acceleration,
        jerk=np.full(passive.shape[0], np.nan),
    )


PASSIVE_QUANTITIES = ("position", "velocity", "acceleration")
"""The passive joints' limits a motion must keep, in the order :class:`PassiveLimitUse` measures them."""


@dataclass(frozen=True)
class PassiveLimitUse:
    """What a completed motion uses, sample by sample, of a mechanism's passive limits and singularity margin.

    The one rule of both the design's probe (:meth:`LimitProbe.worst`) and the check of the executed motion
    (:func:`check_executed_motion`): each entry is a fraction of its limit, 1 at the limit, above 1 beyond it
    (:func:`passive_limit_use`).

    Attributes
    ----------
    position
        ``(N, n_p)``: distance of each passive position from the middle of its range over the half range on
        that side (0 for an unbounded side).
    velocity, acceleration
        ``(N, n_p)``: ``|q̇_p|`` and ``|q̈_p|`` over their limits.
    singularity
        ``(N, 1)``: the margin over ``σ_min / σ_max`` of ``A_p`` relative to the reference configuration.
    ratio
        ``(N,)``: that relative ``σ_min / σ_max`` itself.
    """

    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    singularity: np.ndarray
    ratio: np.ndarray

    def fractions(self) -> list[tuple[str, np.ndarray]]:
        """``(quantity, fractions)`` of :data:`PASSIVE_QUANTITIES` and ``singularity``, in that order."""
        return [(name, getattr(self, name)) for name in (*PASSIVE_QUANTITIES, "singularity")]


def passive_limit_use(
    mechanism: Mechanism, motion: TreeMotion, passive: JointLimits, *, margin: float, reference_ratio: float
) -> PassiveLimitUse:
    """:class:`PassiveLimitUse` of a completed ``motion`` (with ``passive_condition``) against the passive limits
    ``passive`` and the smallest ``σ_min / σ_max`` of ``A_p`` allowed, ``margin`` times ``reference_ratio`` (its
    value at the reference configuration, :func:`reference_singularity_ratio`)."""
    index = mechanism.passive
    q = motion.q[:, index]
    centre = passive.centre
    with np.errstate(divide="ignore", invalid="ignore"):
        above = np.where(np.isfinite(passive.upper), passive.upper - centre, np.inf)
        below = np.where(np.isfinite(passive.lower), centre - passive.lower, np.inf)
        position = np.nan_to_num(np.maximum((q - centre) / above, (centre - q) / below))
    condition = passive_condition(motion)
    return PassiveLimitUse(
        position=position,
        velocity=np.abs(motion.dq[:, index]) / passive.velocity,
        acceleration=np.abs(motion.ddq[:, index]) / passive.acceleration,
        singularity=margin * reference_ratio * condition[:, None],
        ratio=1.0 / (condition * reference_ratio),
    )


def passive_excess(
    mechanism: Mechanism, motion: TreeMotion, passive: JointLimits, quantity: str, sample: int, joint: int
) -> tuple[float, float]:
    """The value of passive ``quantity`` (rad, rad/s or rad/s²) of passive joint ``joint`` at ``sample`` of
    ``motion`` and the limit it is measured against (the nearer end of the range for a position)."""
    values = {"position": motion.q, "velocity": motion.dq, "acceleration": motion.ddq}[quantity]
    value = float(values[sample, mechanism.passive[joint]])
    if quantity == "position":
        centre = passive.centre[joint]
        return value, float(passive.upper[joint] if value > centre else passive.lower[joint])
    return value, float(getattr(passive, quantity)[joint])


@dataclass(frozen=True)
class MotionCheck:
    """What the controller's motion through a trajectory uses of a mechanism's limits.

    Attributes
    ----------
    torque_usage
        Largest fraction of an effort limit needed (0 when not checked).
    singularity_ratio
        Smallest ``σ_min / σ_max`` of the passive block of ``A_t`` met, as a fraction of
        its value at the reference configuration (``None`` without passive joints).
    passive_usage
        Fractions of the passive limits used (jerk: ``nan``, not checked); empty without passive joints.
    """

    torque_usage: float
    singularity_ratio: float | None
    passive_usage: LimitUsage | None


def check_executed_motion(
    mechanism: Mechanism,
    trajectory: SampledTrajectory,
    limits: MechanismLimits,
    *,
    torque_model: TorqueModel | None = None,
    collision: SelfCollisionModel | None = None,
    q_guess: np.ndarray | None = None,
    check_rate_hz: float = CHECK_RATE_HZ,
    cancellation: Cancellation = NEVER,
) -> MotionCheck:
    """Refuse a trajectory of the controlled joints whose executed motion leaves the mechanism's limits.

    The controller's quintic through the points (:func:`~.safety.executed_motion`, at
    ``check_rate_hz`` or finer) must keep the controlled joints' limits
    (:func:`~.safety.check_trajectory`); its torques under ``torque_model``, at
    :data:`~.safety.TORQUE_CHECK_RATE_HZ` and at every point, the effort limits
    (:func:`~.safety.check_torques`); completed into the tree motion
    (:meth:`~dynamic_identification.core.mechanism.seam.Mechanism.complete_motion`, [Briot2012] eq. (2)-(4))
    at ``check_rate_hz``, the passive position, velocity and acceleration limits,
    ``σ_min/σ_max(A_p)`` at least ``limits.singularity_margin`` times its value at the reference
    configuration and, with ``collision`` (the tree's collision model, the bodies a closure joins
    unpaired), no two links closer than its margin (:func:`~.collision.first_self_collision`). The
    first violation in time of the completed motion is raised.

    Parameters
    ----------
    trajectory
        Published points of the controlled joints (kinematic order).
    q_guess
        Tree configuration near the first point, choosing a closed-loop robot's assembly mode;
        default: the mechanism's (:meth:`~dynamic_identification.core.mechanism.seam.Mechanism.complete_motion`).
    cancellation
        Polled through the checks.

    Raises
    ------
    LimitViolationError
        A controlled or passive limit (joint, time, quantity, value, limit), or a torque.
    SingularityMarginError
        The first instant below the singularity margin (time, sample, ratio).
    SelfCollisionError
        The first instant two links come closer than the collision margin (links, time, distance).
    MechanismMotionError
        The first instant where the loops cannot be closed.
    """
    if collision is not None and collision.robot.joint_names != mechanism.joint_names:
        raise IdentificationError(
            f"the collision model's joints {list(collision.robot.joint_names)} differ from the tree's"
            f" {list(mechanism.joint_names)}"
        )
    if trajectory.joint_names != mechanism.actuated_joint_names:
        raise IdentificationError(
            f"trajectory joints {list(trajectory.joint_names)} differ from the controlled joints"
            f" {list(mechanism.actuated_joint_names)}"
        )
    check_trajectory(trajectory, limits.actuated, check_rate_hz=check_rate_hz, cancellation=cancellation)
    torque_usage = 0.0
    if torque_model is not None:
        torque_usage = check_torques(
            trajectory, limits.actuated, torque_model, q_guess=q_guess, cancellation=cancellation
        )
    has_passive = mechanism.passive.shape[0] > 0
    if not has_passive and collision is None:
        return MotionCheck(torque_usage=torque_usage, singularity_ratio=None, passive_usage=None)
    reference = reference_singularity_ratio(mechanism) if has_passive else 1.0
    smallest = np.inf
    usages: list[LimitUsage] = []
    offset = 0
    for executed in executed_chunks(trajectory, check_rate_hz, cancellation):
        try:
            motion = mechanism.complete_motion(executed.q, executed.dq, executed.ddq, q_guess=q_guess)
        except LoopClosureError as error:
            k = int(error.sample) if error.sample is not None else 0
            raise MechanismMotionError(
                f"closure at t = {executed.time[k]:.4f} s (sample {offset + k} of the motion checked at"
                f" {check_rate_hz:g} Hz): {error}",
                time_s=float(executed.time[k]),
                sample=offset + k,
            ) from error
        q_guess = motion.q[-1]
        failures: list[tuple[int, IdentificationError]] = []
        if has_passive:
            use = passive_limit_use(
                mechanism, motion, limits.passive, margin=limits.singularity_margin, reference_ratio=reference
            )
            failures += _passive_failures(
                mechanism, motion, limits, use, executed.time, executed.at_point, offset, check_rate_hz
            )
            smallest = min(smallest, float(use.ratio.min()))
            usages.append(passive_usage(motion, mechanism, limits.passive))
        if collision is not None:
            found = first_self_collision(collision, executed.time, motion.q, executed.at_point)
            if found is not None:
                failures.append(found)
        if failures:
            raise min(failures, key=lambda failure: failure[0])[1]
        offset += executed.time.shape[0]
    if not has_passive:
        return MotionCheck(torque_usage=torque_usage, singularity_ratio=None, passive_usage=None)
    return MotionCheck(
        torque_usage=torque_usage,
        singularity_ratio=smallest,
        passive_usage=LimitUsage(
            position=np.max([usage.position for usage in usages], axis=0),
            velocity=np.max([usage.velocity for usage in usages], axis=0),
            acceleration=np.max([usage.acceleration for usage in usages], axis=0),
            jerk=usages[0].jerk,
        ),
    )


def _passive_failures(
    mechanism: Mechanism,
    motion: TreeMotion,
    limits: MechanismLimits,
    use: PassiveLimitUse,
    times: np.ndarray,
    at_point: np.ndarray,
    offset: int,
    rate_hz: float,
) -> list[tuple[int, IdentificationError]]:
    """The first sample of ``motion`` (checked at ``rate_hz``, after ``offset`` earlier ones) beyond each
    passive limit and the singularity margin (:class:`PassiveLimitUse` above 1 by more than rounding), as a
    limit violation or a :class:`SingularityMarginError`."""
    failures: list[tuple[int, IdentificationError]] = []
    for quantity, fractions in use.fractions():
        bad = fractions > 1.0 + ROUNDING_TOLERANCE
        if not bad.any():
            continue
        k, j = (int(i) for i in np.argwhere(bad)[0])
        between_points = not bool(at_point[k])
        if quantity == "singularity":
            failures.append(
                (
                    k,
                    SingularityMarginError(
                        time_s=float(times[k]),
                        sample=offset + k,
                        ratio=float(use.ratio[k]),
                        margin=limits.singularity_margin,
                        between_points=between_points,
                        rate_hz=rate_hz,
                    ),
                )
            )
            continue
        value, limit = passive_excess(mechanism, motion, limits.passive, quantity, k, j)
        violation = LimitViolationError(
            joint=limits.passive.joint_names[j],
            time_s=float(times[k]),
            quantity=quantity,
            value=value,
            limit=limit,
            between_points=between_points,
        )
        failures.append((k, violation))
    return failures


def passive_condition(motion: TreeMotion) -> np.ndarray:
    """``σ_max / σ_min`` of ``A_p`` per sample of a completed motion with passive joints (a closed-loop
    mechanism's :meth:`~dynamic_identification.core.mechanism.seam.Mechanism.complete_motion` records it)."""
    if motion.passive_condition is None:
        raise IdentificationError("the motion has no passive_condition: complete it with the mechanism")
    return motion.passive_condition


# --------------------------------------------------------------------- candidate motions of a design
MARGIN_HEADROOM = 0.01
"""Designs keep the relative conditioning this fraction of the way from the margin to 1 above the margin,
so that the controller's motion, which deviates slightly from the design, keeps the margin itself."""

CLEARANCE_SCALE_M = 0.01
"""Clearance, m, that counts as one whole limit in :meth:`LimitProbe.worst` (:meth:`LimitProbe.required_clearance_m`):
the slope a design's shrink sees, not the constraint."""


@dataclass(frozen=True)
class Probe:
    """A completed candidate motion and the largest fraction of a limit it uses (> 1: infeasible), and which.

    ``observed``: its IDIM ``(N, n_a, p)``
    (:meth:`~dynamic_identification.core.mechanism.seam.Mechanism.observation_matrix`) when the probe measures one;
    ``motion`` and ``observed`` are ``None`` when the loops could not be closed."""

    worst: float
    reason: str
    motion: TreeMotion | None = None
    observed: np.ndarray | None = None


class LimitProbe:
    """Completes candidate motions of a mechanism's controlled joints and measures what they use of the limits a
    design cannot keep by fitting each controlled joint alone (:func:`~.optimisation.fit_to_limits`).

    Those are the passive joints' positions, velocities and accelerations and the singularity margin (with
    :data:`MARGIN_HEADROOM`; none of them for a serial robot), the effort limits under ``torque_model`` and,
    with ``collision``, the self-collision clearance (:meth:`required_clearance_m`). A candidate is completed
    from its offset pose, itself reached from the reference configuration (:meth:`offset_pose`), so its
    assembly mode is the reference's ([Briot2012] eq. (2)). With ``observation = (drive_chain, terms)``
    every probe also holds the IDIM of the motion (the torques then come from it when ``torque_model`` has
    the same columns). ``cancellation`` is polled by the clearance.
    """

    def __init__(
        self,
        mechanism: Mechanism,
        limits: MechanismLimits,
        torque_model: TorqueModel | None,
        *,
        observation: tuple[DriveChain, DriveTerms] | None = None,
        collision: SelfCollisionModel | None = None,
        cancellation: Cancellation = NEVER,
    ) -> None:
        self.mechanism, self.limits, self.observation = mechanism, limits, observation
        self.collision, self.cancellation = collision, cancellation
        self.torque_model = (
            torque_model if torque_model is not None and np.isfinite(limits.actuated.effort).any() else None
        )
        self.data = mechanism.robot.model.createData()
        self.margin = limits.singularity_margin + MARGIN_HEADROOM * (1.0 - limits.singularity_margin)
        self.closed = mechanism.passive.shape[0] > 0
        self.reference_ratio = reference_singularity_ratio(mechanism) if self.closed else 1.0

    @property
    def constrains(self) -> bool:
        """Whether any limit is measured: passive joints, known effort limits under a torque model, or collision."""
        return self.closed or self.torque_model is not None or self.collision is not None

    def offset_pose(self, offsets: np.ndarray) -> tuple[np.ndarray | None, Probe]:
        """The tree configuration at the controlled pose ``offsets``, followed from the reference configuration,
        and what it uses at rest of the passive limits and the singularity margin (not the torques: a shrink
        toward it may still find them); ``None`` where the loops cannot be closed on the way."""
        mechanism = self.mechanism
        try:
            q_offset = mechanism.follow(offsets, start=mechanism.reference_configuration)
        except LoopClosureError:
            return None, Probe(
                np.inf,
                f"the loops cannot be closed on the way from the reference configuration to q_a ="
                f" {np.round(offsets, 3).tolist()} rad (outside the workspace, or a singularity)",
            )
        if not self.closed:
            return q_offset, Probe(0.0, "")
        zeros = np.zeros((1, mechanism.n_actuated))
        motion = mechanism.complete_motion(offsets[None, :], zeros, zeros, q_guess=q_offset)
        worst, reason = self.worst(motion, None, collision=False)
        return q_offset, Probe(worst, reason, motion)

    def probe(
        self,
        q: np.ndarray,
        dq: np.ndarray,
        ddq: np.ndarray,
        q_offset: np.ndarray,
        *,
        observe: bool = True,
        torque_every: int = 1,
    ) -> Probe:
        """One period ``(q, q̇, q̈)`` of a periodic motion of the controlled joints ``(N, n_a)``, completed from the
        offset pose's tree configuration ``q_offset``, and the largest fraction of a limit it uses: the torques on
        every ``torque_every``-th sample (:data:`~.safety.TORQUE_CHECK_RATE_HZ` on a finer grid), the rest on all.
        ``observe``: also its IDIM, when the probe has an ``observation``.

        The loops are followed from ``q_offset`` to the sample nearest the offset pose (the shortest way), then
        along the period from there, round to it (its last sample precedes its first)."""
        mechanism = self.mechanism
        offsets = q_offset[mechanism.actuated]
        first = int(np.argmin(np.max(np.abs(q - offsets), axis=1)))
        try:
            start = mechanism.follow(q[first], start=q_offset)
            later = mechanism.complete_motion(q[first:], dq[first:], ddq[first:], q_guess=start)
            motion = later
            if first > 0:
                earlier = mechanism.complete_motion(q[:first], dq[:first], ddq[:first], q_guess=later.q[-1])
                motion = _joined(earlier, later)
        except LoopClosureError as error:
            return Probe(np.inf, str(error))
        observed = None
        if self.observation is not None and observe:
            drive_chain, terms = self.observation
            observed = mechanism.observation_matrix(drive_chain, terms, motion, data=self.data)
        torques = None
        model = self.torque_model
        if model is not None:
            if (
                observed is not None
                and self.observation is not None
                and model.drive_chain is self.observation[0]
                and model.terms == self.observation[1]
                and model.robot is mechanism.robot
            ):
                torques = observed[::torque_every] @ model.standard
            else:
                torques = model.motion_torques(every(motion, torque_every), data=self.data)
        worst, reason = self.worst(motion, torques, torque_every=torque_every)
        return Probe(worst, reason, motion, observed)

    def worst(
        self, motion: TreeMotion, torques: np.ndarray | None, *, collision: bool = True, torque_every: int = 1
    ) -> tuple[float, str]:
        """Largest fraction of a limit ``motion`` uses (passive positions, velocities, accelerations, the margin,
        ``torques`` of every ``torque_every``-th sample and, with a collision model and ``collision``, the
        clearance: :meth:`required_clearance_m`), and, above 1, why."""
        mechanism, limits = self.mechanism, self.limits
        usages: list[tuple[str, np.ndarray]] = []
        use = None
        if self.closed:
            use = passive_limit_use(
                mechanism, motion, limits.passive, margin=self.margin, reference_ratio=self.reference_ratio
            )
            usages += use.fractions()
        effort = limits.actuated.effort
        if torques is not None:
            known = np.isfinite(effort)
            usages.append(("torque", np.where(known, np.abs(torques) / np.where(known, effort, 1.0), 0.0)))
        clearance = None
        if self.collision is not None and collision:
            required = self.required_clearance_m(motion.q)
            clearance = self.collision.clearance_m(
                motion.q, cutoff_m=float(required.max()) + CLEARANCE_SCALE_M, cancellation=self.cancellation
            )
            usages.append(("self-collision", (1.0 + (required - clearance[0]) / CLEARANCE_SCALE_M)[:, None]))
        peaks = [float(np.max(values, initial=0.0)) for _, values in usages]
        if not peaks:
            return 0.0, ""
        kind = int(np.argmax(peaks))
        worst = peaks[kind]
        if not worst > 1.0:
            return worst, ""
        name, values = usages[kind]
        sample, column = np.unravel_index(int(np.argmax(values)), values.shape)
        if name == "singularity" and use is not None:
            return worst, (
                f"σ_min/σ_max of A_p falls to {use.ratio[sample]:.4g} of its value at the reference configuration,"
                f" below {self.margin:.3g} (singularity margin {limits.singularity_margin:g} and"
                f" {MARGIN_HEADROOM:.0%} headroom)"
            )
        if name == "self-collision" and self.collision is not None and clearance is not None:
            first, second = self.collision.pair_names[int(clearance[1][sample])]
            return worst, (
                f"{first} and {second} come within {clearance[0][sample]:.3g} m of each other (self-collision margin"
                f" {self.collision.margin_m:g} m)"
            )
        if name == "torque" and torques is not None:
            return worst, (
                f"{limits.actuated.joint_names[column]} needs {torques[sample, column]:.3g} N·m, beyond the effort"
                f" limit {effort[column]:.3g} N·m"
            )
        joint = limits.passive.joint_names[column]
        value, limit = passive_excess(mechanism, motion, limits.passive, name, int(sample), int(column))
        if name == "position":
            return worst, (
                f"passive joint {joint} at {value:.3g} rad leaves [{limits.passive.lower[column]:.3g},"
                f" {limits.passive.upper[column]:.3g}] rad"
            )
        return worst, f"passive joint {joint} {name} {value:.3g} exceeds {limit:.3g}"

    def required_clearance_m(self, q: np.ndarray) -> np.ndarray:
        """Per sample of the tree motion ``q`` ``(N, n_t)``, the distance every checked pair of links must keep, m:
        the self-collision margin plus half the sweep ``Σ_j r_j |Δq_j|`` to the farther of its neighbouring samples,
        so the motion between samples keeps the margin too (as in
        :meth:`~.collision.SelfCollisionModel.checked_instants`). In :meth:`worst` a sample at the required
        clearance uses 1 of this limit, one :data:`CLEARANCE_SCALE_M` closer 2."""
        collision = self.collision
        if collision is None:
            return np.zeros(q.shape[0])
        sweep = np.abs(np.diff(q, axis=0)) @ collision.joint_reach_m
        return collision.margin_m + 0.5 * np.maximum(np.append(sweep, 0.0), np.insert(sweep, 0, 0.0))


def every(motion: TreeMotion, step: int) -> TreeMotion:
    """Every ``step``-th sample of ``motion``."""
    return motion if step == 1 else motion.rows(slice(None, None, step))


def _joined(first: TreeMotion, second: TreeMotion) -> TreeMotion:
    """``first`` then ``second``, one motion."""

    def stacked(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
        return None if a is None or b is None else np.concatenate([a, b])

    return TreeMotion(
        q=np.vstack([first.q, second.q]),
        dq=np.vstack([first.dq, second.dq]),
        ddq=np.vstack([first.ddq, second.ddq]),
        projection=stacked(first.projection, second.projection),
        passive_condition=stacked(first.passive_condition, second.passive_condition),
    )
