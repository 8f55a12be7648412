"""Fourier excitation of a closed-loop (parallel) robot, kept away from its singularities.

A parallel robot is driven through its actuated joints only; the passive joints follow
from the loop closures ([Briot2012] eq. (2)-(4), :meth:`ClosedLoopModel.complete_motion`).
Its excitation is therefore a finite Fourier series of the **actuated** joints
([Volkmann2020] eq. (6), :mod:`.fourier`) chosen, as for a serial robot
(:mod:`.optimisation`), to minimise the condition number of the column-normalised base
observation matrix — here the closed-loop IDIM ``τ_act = J_tᵀ φ_tree χ`` ([Briot2012]
eq. (6)) reduced to its base parameters (eq. (7)) — under constraints a serial robot
does not have:

* the passive joints' positions, velocities and accelerations (completed from the
  actuated motion) keep their limits;
* the mechanism stays away from parallel (type 2) singularities, where the passive
  block ``A_p`` of the constraint Jacobian ``A_t`` loses rank, ``q̇_p = −A_p⁺ A_a q̇_a``
  (eq. (3)) blows up and so do the actuator torques: along the whole motion the
  conditioning ``r = σ_min(A_p) / σ_max(A_p)``, relative to its value at the reference
  configuration, keeps ``r / r_ref >= margin`` (:data:`DEFAULT_SINGULARITY_MARGIN`). The
  rows of ``A_t`` are in m or rad, so ``r`` itself depends on the link lengths when a
  closure mixes translations and rotations (``planar``, ``6d``); its ratio to the
  well-assembled home pose does not, and vanishes at a singularity all the same;
* the actuated torques of a nominal model, ``τ_act = J_tᵀ τ_tree`` plus the drive terms
  (:class:`ClosedLoopTorqueModel`), keep the effort limits;
* when the URDF has collision geometry, no two links of the tree come closer than the
  self-collision margin (:mod:`.collision`; the bodies a closure joins are not paired).

Candidates are feasible by construction, as in the serial optimiser: the decision
variables are the offsets of the actuated joints (inside the middle of their ranges) and
raw coefficients in ``[-1, 1]``; each actuated joint's oscillation is scaled to its own
position, velocity and acceleration limits (:func:`~.optimisation.fit_to_limits`), then
the whole oscillation is shrunk toward the offset pose, ``q_a = q_0 + s (q_a − q_0)``,
by the largest ``s`` in ``[0, 1]`` that keeps the passive limits, the singularity margin
and the torques (regula falsi on the worst fraction of a limit used). Offset poses where
the loops cannot be closed, or that already break a constraint, get a penalty; when no
candidate has a feasible offset pose the design is refused, naming the closest miss. The
self-collision margin enters the final shrink of the chosen design only (the search
ignores the geometry, measured to give better designs than shrinking every candidate).

What is published is the actuated joints' trajectory — what a controller of the actuated
joints executes. :func:`plan_closed_loop_excitation` checks it as the serial plan does
(:func:`~.safety.check_sampling`: the controller's quintic at 1 kHz against the actuated
limits and the interpolation tolerance), then completes that executed motion at 1 kHz and
checks the passive joints, the singularity margin, the torques and, when the URDF has
collision geometry, the self-collision margin of every link of the tree
(:func:`check_closed_loop_trajectory`, :mod:`.collision`), refusing with the time of the
first violation; a plan whose executed motion still collides is scaled toward its offset
pose first.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from dynamic_identification.core.cancellation import NEVER, Cancellation
from dynamic_identification.core.closed_loop import (
    ClosedLoopModel,
    ClosedLoopMotion,
    LoopClosureError,
    base_parameters,
    observation_matrix,
    standard_parameters,
    tree_values,
)
from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.collision import (
    SelfCollisionError,
    SelfCollisionModel,
    first_self_collision,
    self_collision_summary,
)
from dynamic_identification.core.excitation.fourier import FourierTrajectory
from dynamic_identification.core.excitation.optimisation import (
    FourierSearch,
    SearchBudget,
    fit_to_limits,
    gram_condition,
    gram_matrix,
    normalised_condition,
    period_grid,
    run_search,
    search_report,
)
from dynamic_identification.core.excitation.plan import (
    PLANNING_HEADROOM,
    ExcitationPlan,
    planning_factor,
    planning_times,
    scaled_until_safe,
    subsampled,
)
from dynamic_identification.core.excitation.safety import (
    CHECK_RATE_HZ,
    DEFAULT_ACCELERATION_PER_VELOCITY_HZ,
    DEFAULT_JERK_PER_ACCELERATION_HZ,
    ROUNDING_TOLERANCE,
    JointLimits,
    LimitUsage,
    LimitViolationError,
    check_sampling,
    check_trajectory,
    executed_motion,
    limit_usage,
    urdf_friction,
)
from dynamic_identification.core.excitation.settings import ExcitationSettings
from dynamic_identification.core.excitation.trajectory import SampledTrajectory, sample
from dynamic_identification.core.model import DriveChain, DriveParameters, DriveTerms
from dynamic_identification.core.regressors import BaseParameters

DEFAULT_SINGULARITY_MARGIN = 0.2
"""Default smallest ``σ_min / σ_max`` of the passive block ``A_p`` of ``A_t`` along an excitation, as a
fraction of its value at the reference configuration (:func:`reference_singularity_ratio`).

``cond(A_p)`` grows to at most five times its value at the home pose, and with it the passive
velocities ``‖A_p⁺ A_a q̇_a‖`` a given actuated velocity may cause. The shipped five-bar has
``σ_min / σ_max = 0.95`` at its home pose and 0 at its parallel singularity (distal links aligned);
opening both motors symmetrically, it falls below 0.2 of the home value at 0.58 rad, 0.055 rad before it."""

PASSIVE_POSITION_HEADROOM = 10.0
"""Plans keep the passive joints this many interpolation tolerances inside their position ranges: the
controller's motion deviates from the planned one by up to one tolerance on the actuated joints, which
the loop closures amplify on the passive ones by ``‖J_t‖``."""

MARGIN_HEADROOM = 0.01
"""Designs keep the relative conditioning this fraction of the way from the margin to 1 above the margin,
so that the controller's motion, which deviates slightly from the design, keeps the margin itself."""

MINIMUM_SCALE = 0.1
"""A design whose shrink toward the offset pose keeps less than this fraction of the motion the actuated limits
allow is refused: the closed-loop constraints leave too little motion to excite the dynamics."""

_FIT_SAMPLES = 1000
"""Samples per period on which candidates are fitted to the actuated limits (cheap: no kinematics)."""

_POPULATION = 20
"""Individuals of the differential-evolution population (each costs a few motion completions)."""

_SEARCH_STEPS = 4
"""Regula-falsi steps of the shrink toward the offset pose per candidate during the search."""

_FINAL_STEPS = 8
"""Regula-falsi steps of the final shrink, on :data:`_FINAL_SAMPLES` points per period."""

_CLEARANCE_SCALE_M = 0.01
"""Clearance, m, that counts as one whole limit in :meth:`_Evaluator.worst` (:meth:`_Evaluator.required_clearance_m`):
the slope the shrink's regula falsi sees, not the constraint."""

_FINAL_SAMPLES = 400
"""Points per period of the final shrink; the result is then verified at 1 kHz."""

_FINAL_RETRIES = 5
"""Times the final shrink is reduced by :data:`_RETRY_FACTOR` when the 1 kHz verification fails."""

_RETRY_FACTOR = 0.98

_SCALE_TOLERANCE = 0.01
"""The shrink search stops when the feasible and infeasible scales are this close (relative)."""

_WALK_STEP_RAD = 0.05
"""Largest actuated step when walking the loops from one pose to another (keeps the assembly mode)."""

_INFEASIBLE_COST = 100.0
"""Cost of a candidate whose offset pose breaks a constraint (plus how far, at most 10)."""

_UNEXCITED_COST = float(np.log(1e12))
"""Cost of a candidate that no shrink makes feasible: its motion is the offset pose at rest."""


class ClosedLoopExcitationError(IdentificationError):
    """The motion of a closed-loop excitation leaves the mechanism's feasible set at one instant.

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


class SingularityMarginError(ClosedLoopExcitationError):
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


# --------------------------------------------------------------------- limits and torques
@dataclass(frozen=True)
class ClosedLoopLimits:
    """What a closed-loop excitation must keep, margins applied.

    Attributes
    ----------
    actuated
        Limits of the actuated joints (kinematic order): positions, velocities,
        accelerations, jerks of the controller's motion, and effort limits of the motors.
    passive
        Position, velocity and acceleration limits of the passive joints (kinematic
        order); their jerk and effort are not checked (no motor).
    singularity_margin
        Smallest ``σ_min / σ_max`` of the passive block ``A_p`` of ``A_t`` allowed, as a
        fraction of its value at the reference configuration, in ``(0, 1)``
        ([Briot2012] eq. (3) needs ``A_p`` of full rank).
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
        model: ClosedLoopModel,
        settings: ExcitationSettings,
        *,
        singularity_margin: float = DEFAULT_SINGULARITY_MARGIN,
    ) -> ClosedLoopLimits:
        """The URDF limits of every tree joint with the margins and restrictions of ``settings``.

        Per-joint settings (``acceleration_limits``, ``jerk_limits``, ``effort_limits``,
        ``workspace_lower``, ``workspace_upper``) hold one value per actuated joint (the
        configured ``joints``) or one per tree joint, in kinematic order; the passive
        joints of an actuated-only setting keep their defaults (accelerations
        :data:`~.safety.DEFAULT_ACCELERATION_PER_VELOCITY_HZ` times the velocity limit,
        full range).

        Raises
        ------
        IdentificationError
            On a per-joint setting of another length, or limits empty after margins.
        """
        robot = model.robot
        velocity = robot.velocity_limits
        acceleration = tree_values(
            model, "acceleration_limits", settings.acceleration_limits, DEFAULT_ACCELERATION_PER_VELOCITY_HZ * velocity
        )
        jerk = tree_values(model, "jerk_limits", settings.jerk_limits, DEFAULT_JERK_PER_ACCELERATION_HZ * acceleration)
        effort = tree_values(model, "effort_limits", settings.effort_limits, robot.effort_limits)
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
            lower=tree_values(model, "workspace_lower", settings.workspace_lower, np.full(model.n_tree, -np.inf)),
            upper=tree_values(model, "workspace_upper", settings.workspace_upper, np.full(model.n_tree, np.inf)),
        )
        return cls(
            actuated=_subset(tree, model.actuated, effort=True),
            passive=_subset(tree, model.passive, effort=False),
            singularity_margin=float(singularity_margin),
        )

    def planning(self, tolerance_rad: float) -> ClosedLoopLimits:
        """The tighter limits a plan aims for, so that the controller's motion keeps these.

        Velocities, accelerations and jerks times :data:`~.plan.PLANNING_HEADROOM`;
        actuated ranges shrunk by ``tolerance_rad`` and passive ones by
        :data:`PASSIVE_POSITION_HEADROOM` times it. (Designs always keep
        :data:`MARGIN_HEADROOM` above the singularity margin.)
        """
        actuated = self.actuated.slower(PLANNING_HEADROOM)
        passive = self.passive.slower(PLANNING_HEADROOM)
        gap = PASSIVE_POSITION_HEADROOM * tolerance_rad
        return ClosedLoopLimits(
            actuated=actuated.restricted(lower=actuated.lower + tolerance_rad, upper=actuated.upper - tolerance_rad),
            passive=passive.restricted(lower=passive.lower + gap, upper=passive.upper - gap),
            singularity_margin=self.singularity_margin,
        )


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


@dataclass(frozen=True)
class ClosedLoopTorqueModel:
    """Actuated torques of a consistent tree motion: ``τ_act = J_tᵀ φ_tree χ_tree`` + drive terms ([Briot2012] eq. (6)).

    Attributes
    ----------
    model, drive_chain, terms
        The mechanism and the columns of ``standard``.
    standard
        Closed-loop standard parameters in SI units
        (:func:`~dynamic_identification.core.closed_loop.standard_parameter_names` order).
    source
        What the values come from, for messages.
    """

    model: ClosedLoopModel
    drive_chain: DriveChain
    terms: DriveTerms
    standard: np.ndarray
    source: str

    @classmethod
    def nominal(
        cls, model: ClosedLoopModel, drive_chain: DriveChain, terms: DriveTerms, drive: DriveParameters | None = None
    ) -> ClosedLoopTorqueModel:
        """The URDF's inertias; drive terms ``drive``, by default the URDF's ``<dynamics damping friction>`` of
        the actuated joints as viscous and Coulomb friction."""
        source = "the URDF's nominal model" if drive is None else "the URDF's inertias and the given drive terms"
        if drive is None:
            joints = model.robot.model.joints
            drive = urdf_friction(model.robot, [joints[int(j) + 1].idx_v for j in model.actuated])
        standard = standard_parameters(model, terms, drive)
        return cls(model, drive_chain, terms, standard, source)

    def torques(self, motion: ClosedLoopMotion) -> np.ndarray:
        """Actuated torques (N·m), ``(N, n_a)``, of a completed motion."""
        matrix = observation_matrix(
            self.model, self.drive_chain, self.terms, motion.q, motion.dq, motion.ddq, projection=motion.projection
        )
        return matrix @ self.standard


# --------------------------------------------------------------------- feasibility of a motion
@dataclass(frozen=True)
class _Probe:
    """A completed candidate motion and the worst fraction of a limit it uses (> 1: infeasible)."""

    worst: float
    reason: str
    motion: ClosedLoopMotion | None = None
    observed: np.ndarray | None = None
    torques: np.ndarray | None = None


def _walk(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Actuated poses from ``start`` toward ``end`` in steps of at most :data:`_WALK_STEP_RAD`, ``end`` excluded."""
    steps = max(1, int(np.ceil(float(np.max(np.abs(end - start), initial=0.0)) / _WALK_STEP_RAD)))
    return start + (np.arange(steps) / steps)[:, None] * (end - start)


class _Evaluator:
    """Completes candidate motions of the actuated joints and measures the limits they use.

    ``cancellation`` is polled before every probe of :meth:`largest_scale`.
    """

    def __init__(
        self,
        model: ClosedLoopModel,
        drive_chain: DriveChain,
        terms: DriveTerms,
        limits: ClosedLoopLimits,
        torque_model: ClosedLoopTorqueModel | None,
        cancellation: Cancellation = NEVER,
        collision: SelfCollisionModel | None = None,
    ) -> None:
        self.model, self.drive_chain, self.terms, self.limits = model, drive_chain, terms, limits
        self.cancellation, self.collision = cancellation, collision
        known = np.isfinite(limits.actuated.effort).any()
        self.torque_model = torque_model if torque_model is not None and known else None
        self.margin = limits.singularity_margin + MARGIN_HEADROOM * (1.0 - limits.singularity_margin)
        self.reference_ratio = reference_singularity_ratio(model)
        passive = limits.passive
        self.centre = passive.centre
        with np.errstate(invalid="ignore"):
            self.above = np.where(np.isfinite(passive.upper), passive.upper - self.centre, np.inf)
            self.below = np.where(np.isfinite(passive.lower), self.centre - passive.lower, np.inf)

    def offset_pose(self, offsets: np.ndarray) -> tuple[np.ndarray | None, _Probe]:
        """The tree configuration at rest at ``offsets``, walked from the reference configuration."""
        model = self.model
        path = np.vstack([_walk(model.reference_configuration[model.actuated], offsets), offsets])
        zeros = np.zeros_like(path)
        try:
            motion = model.complete_motion(path, zeros, zeros, q_guess=model.reference_configuration)
        except LoopClosureError as error:
            where = path[error.sample] if error.sample is not None else offsets
            return None, _Probe(
                np.inf,
                f"the loops cannot be closed at q_a = {np.round(where, 3).tolist()} rad on the way from the reference"
                " configuration (outside the workspace, or a singularity)",
            )
        rest = _rows(motion, slice(-1, None))
        return motion.q[-1], self.probe(rest)

    def scaled(self, offsets: np.ndarray, q_offset: np.ndarray, grid: tuple[np.ndarray, ...], scale: float) -> _Probe:
        """Complete ``q_0 + s (q_a − q_0)`` on ``grid = (q_a − q_0, q̇_a, q̈_a)``, walking from the offset pose."""
        deviation, dq, ddq = grid
        walk = _walk(offsets, offsets + scale * deviation[0])
        skip = walk.shape[0]
        zeros = np.zeros_like(walk)
        try:
            motion = self.model.complete_motion(
                np.vstack([walk, offsets + scale * deviation]),
                np.vstack([zeros, scale * dq]),
                np.vstack([zeros, scale * ddq]),
                q_guess=q_offset,
            )
        except LoopClosureError as error:
            return _Probe(np.inf, str(error))
        return self.probe(_rows(motion, slice(skip, None)))

    def probe(self, motion: ClosedLoopMotion) -> _Probe:
        """The worst fraction of a limit ``motion`` uses, and which."""
        model = self.model
        observed = observation_matrix(
            model, self.drive_chain, self.terms, motion.q, motion.dq, motion.ddq, projection=motion.projection
        )
        torques = None
        if self.torque_model is not None:
            torque_model = self.torque_model
            same = torque_model.drive_chain is self.drive_chain and torque_model.terms == self.terms
            torques = observed @ torque_model.standard if same else torque_model.torques(motion)
        worst, reason = self.worst(motion, torques)
        return _Probe(worst, reason, motion, observed, torques)

    def worst(self, motion: ClosedLoopMotion, torques: np.ndarray | None) -> tuple[float, str]:
        """Largest fraction of a limit used (passive positions, velocities, accelerations, margin, torques and, with
        a collision model, the self-collision clearance: :meth:`required_clearance_m`)."""
        model, limits = self.model, self.limits
        passive = limits.passive
        q = motion.q[:, model.passive]
        with np.errstate(divide="ignore", invalid="ignore"):
            position = np.nan_to_num(np.maximum((q - self.centre) / self.above, (self.centre - q) / self.below))
        condition = _passive_condition(motion)
        usages = [
            ("position", position),
            ("velocity", np.abs(motion.dq[:, model.passive]) / passive.velocity),
            ("acceleration", np.abs(motion.ddq[:, model.passive]) / passive.acceleration),
            ("singularity", self.margin * self.reference_ratio * condition[:, None]),
        ]
        if torques is not None:
            usages.append(("torque", np.abs(torques) / limits.actuated.effort))
        clearance = None
        if self.collision is not None:
            required = self.required_clearance_m(motion.q)
            clearance = self.collision.clearance_m(
                motion.q, cutoff_m=float(required.max()) + _CLEARANCE_SCALE_M, cancellation=self.cancellation
            )
            usages.append(("self-collision", (1.0 + (required - clearance[0]) / _CLEARANCE_SCALE_M)[:, None]))
        peaks = [float(np.max(values)) for _, values in usages]
        kind = int(np.argmax(peaks))
        worst = peaks[kind]
        if not worst > 1.0:
            return worst, ""
        name, values = usages[kind]
        sample, column = np.unravel_index(int(np.argmax(values)), values.shape)
        if name == "singularity":
            ratio = 1.0 / float(condition[sample] * self.reference_ratio)
            return worst, (
                f"σ_min/σ_max of A_p falls to {ratio:.4g} of its value at the reference configuration, below"
                f" {self.margin:.3g} (singularity margin {limits.singularity_margin:g} and {MARGIN_HEADROOM:.0%}"
                " headroom)"
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
                f" limit {limits.actuated.effort[column]:.3g} N·m"
            )
        joint = passive.joint_names[column]
        if name == "position":
            value = float(q[sample, column])
            return worst, (
                f"passive joint {joint} at {value:.3g} rad leaves [{passive.lower[column]:.3g},"
                f" {passive.upper[column]:.3g}] rad"
            )
        value = float((motion.dq if name == "velocity" else motion.ddq)[sample, model.passive[column]])
        limit = float(getattr(passive, name)[column])
        return worst, f"passive joint {joint} {name} {value:.3g} exceeds {limit:.3g}"

    def required_clearance_m(self, q: np.ndarray) -> np.ndarray:
        """Per sample of the tree motion ``q`` ``(N, n_t)``, the distance every checked pair of links must keep, m:
        the self-collision margin plus half the sweep ``Σ_j r_j |Δq_j|`` to the farther of its neighbouring samples,
        so the motion between samples keeps the margin too (as in
        :meth:`~.collision.SelfCollisionModel.checked_instants`). In :meth:`worst` a sample at the required
        clearance uses 1 of this limit, one :data:`_CLEARANCE_SCALE_M` closer 2."""
        collision = self.collision
        if collision is None:
            return np.zeros(q.shape[0])
        sweep = np.abs(np.diff(q, axis=0)) @ collision.joint_reach_m
        return collision.margin_m + 0.5 * np.maximum(np.append(sweep, 0.0), np.insert(sweep, 0, 0.0))

    def largest_scale(
        self,
        offsets: np.ndarray,
        q_offset: np.ndarray,
        rest: _Probe,
        grid: tuple[np.ndarray, ...],
        *,
        first: float,
        steps: int,
    ) -> tuple[float, _Probe | None, str]:
        """The largest feasible shrink ``s`` in ``(0, first]`` found by regula falsi (Illinois) on the worst usage.

        ``rest`` is the probe of the offset pose (``s = 0``, feasible). Returns ``first``
        when it is feasible, else the best feasible ``s`` after at most ``steps`` more
        probes, stopping once the bracket is within :data:`_SCALE_TOLERANCE` (0 and
        ``None`` when no probe was feasible), and why the smallest infeasible ``s`` is.
        """
        low, f_low, best = 0.0, rest.worst - 1.0, None
        high, f_high = first, np.inf
        scale, side, reason = first, 0, ""
        for _ in range(steps + 1):
            self.cancellation.check()
            probe = self.scaled(offsets, q_offset, grid, scale)
            value = probe.worst - 1.0
            if value <= 0.0:
                if scale == first:
                    return scale, probe, ""
                if side > 0:
                    f_high *= 0.5
                low, f_low, best, side = scale, value, probe, 1
            else:
                if side < 0:
                    f_low *= 0.5
                high, f_high, side, reason = scale, value, -1, probe.reason
            if np.isfinite(f_high):
                scale = low + (high - low) * (-f_low) / (f_high - f_low)
            else:
                scale = 0.5 * (low + high)
            if high - low <= _SCALE_TOLERANCE * high:
                break
            scale = float(np.clip(scale, low + 0.02 * (high - low), high - 0.02 * (high - low)))
        return low, best, reason


def reference_singularity_ratio(model: ClosedLoopModel) -> float:
    """``σ_min / σ_max`` of the passive block of ``A_t`` at the model's reference configuration.

    The singularity margin of :class:`ClosedLoopLimits` is a fraction of this value.
    """
    reference = model.reference_configuration
    actuated = reference[None, model.actuated]
    zeros = np.zeros_like(actuated)
    motion = model.complete_motion(actuated, zeros, zeros, q_guess=reference)
    return float(1.0 / _passive_condition(motion)[0])


def _passive_condition(motion: ClosedLoopMotion) -> np.ndarray:
    """``σ_max / σ_min`` of ``A_p`` per sample, as :meth:`ClosedLoopModel.complete_motion` records it."""
    if motion.passive_condition is None:
        raise IdentificationError(
            "the motion has no passive_condition: complete it with ClosedLoopModel.complete_motion"
        )
    return motion.passive_condition


def _rows(motion: ClosedLoopMotion, index: slice) -> ClosedLoopMotion:
    condition = None if motion.passive_condition is None else motion.passive_condition[index]
    return ClosedLoopMotion(
        q=motion.q[index],
        dq=motion.dq[index],
        ddq=motion.ddq[index],
        projection=motion.jacobians[index],
        passive_condition=condition,
    )


def _from_rest(deviation: np.ndarray, *others: np.ndarray) -> tuple[np.ndarray, ...]:
    """The grid rolled to start at its sample nearest the offset pose (the walk there is shortest)."""
    start = int(np.argmin(np.max(np.abs(deviation), axis=1)))
    return tuple(np.roll(values, -start, axis=0) for values in (deviation, *others))


# --------------------------------------------------------------------- designs
@dataclass(frozen=True)
class ClosedLoopExcitationDesign:
    """A Fourier excitation of the actuated joints of a closed-loop robot and how good and safe it is.

    Attributes
    ----------
    trajectory
        The Fourier series of the actuated joints (kinematic order), [Volkmann2020] eq. (6).
    condition_number
        Of the column-normalised closed-loop base observation matrix ([Briot2012] eq. (7)) on
        one period sampled at :data:`~.safety.CHECK_RATE_HZ`.
    singularity_ratio
        Smallest ``σ_min / σ_max`` of the passive block of ``A_t`` over that period, as a
        fraction of its value at the reference configuration.
    scale
        The shrink toward the offset pose kept: 1 when the actuated limits alone bind.
    usage
        Fractions of the actuated limits used (:func:`~.safety.limit_usage`).
    passive_usage
        Fractions of the passive limits used over the period (jerk: ``nan``, not checked).
    torque_usage
        Largest fraction of an actuated effort limit the torque model needs (0 unchecked).
    evaluations, wall_time_s
        Cost evaluations spent and wall time, s (0 and the fitting time for a random design).
    limits
        The limits the design keeps.
    time_capped
        Whether the wall-time budget, not ``max_evaluations``, ended the search.
    """

    trajectory: FourierTrajectory
    condition_number: float
    singularity_ratio: float
    scale: float
    usage: LimitUsage
    passive_usage: LimitUsage
    torque_usage: float
    evaluations: int
    wall_time_s: float
    limits: ClosedLoopLimits
    time_capped: bool = False


def _passive_usage(motion: ClosedLoopMotion, model: ClosedLoopModel, limits: JointLimits) -> LimitUsage:
    q = motion.q[:, model.passive]
    span = np.where(np.isfinite(limits.upper - limits.lower), limits.upper - limits.lower, 2.0 * np.pi)
    return LimitUsage(
        position=(q.max(axis=0) - q.min(axis=0)) / span,
        velocity=np.abs(motion.dq[:, model.passive]).max(axis=0) / limits.velocity,
        acceleration=np.abs(motion.ddq[:, model.passive]).max(axis=0) / limits.acceleration,
        jerk=np.full(model.n_passive, np.nan),
    )


def _finalise(
    evaluator: _Evaluator,
    base: BaseParameters,
    trajectory: FourierTrajectory,
    *,
    first: float,
    evaluations: int,
    start: float,
    time_capped: bool = False,
) -> ClosedLoopExcitationDesign:
    """Fit to the actuated limits at :data:`~.safety.CHECK_RATE_HZ`, shrink until the closed-loop constraints
    hold on :data:`_FINAL_SAMPLES` points per period, verify them at 1 kHz, and describe."""
    model, limits = evaluator.model, evaluator.limits
    grid = period_grid(trajectory, max(int(np.ceil(trajectory.period_s * CHECK_RATE_HZ)), _FIT_SAMPLES))
    fitted = fit_to_limits(trajectory, limits.actuated, samples=grid.shape[0])
    offsets = fitted.offsets
    where = f"around the offset pose q_a = {np.round(offsets, 4).tolist()} rad"
    q_offset, rest = evaluator.offset_pose(offsets)
    if q_offset is None or rest.worst > 1.0:
        raise IdentificationError(f"no excitation {where}: the offset pose is not feasible, {rest.reason}")

    def oscillation(times: np.ndarray) -> tuple[np.ndarray, ...]:
        q, dq, ddq = fitted.evaluate(times)
        return _from_rest(q - offsets, dq, ddq)

    coarse = oscillation(period_grid(fitted, _FINAL_SAMPLES))
    scale, probe, binding = evaluator.largest_scale(
        offsets, q_offset, rest, coarse, first=min(first, 1.0) if first > 0.0 else 1.0, steps=_FINAL_STEPS
    )
    if scale < MINIMUM_SCALE:
        # The constraint that binds: at the smallest motion allowed, else (feasible there) at the full motion.
        binding = (
            binding
            or evaluator.scaled(offsets, q_offset, coarse, MINIMUM_SCALE).reason
            or f"at the full motion {evaluator.scaled(offsets, q_offset, coarse, 1.0).reason}"
        )
        raise IdentificationError(
            f"no excitation {where} keeps the closed-loop constraints (singularity margin"
            f" {limits.singularity_margin:g}) with more than {MINIMUM_SCALE:.0%} of the motion the actuated limits"
            f" allow: shrunk to {scale:.1%}, {binding}"
        )
    dense = oscillation(grid)
    for _ in range(_FINAL_RETRIES):
        if probe is None:
            break
        evaluator.cancellation.check()
        probe = evaluator.scaled(offsets, q_offset, dense, scale)
        if probe.worst <= 1.0:
            break
        scale *= _RETRY_FACTOR
    if probe is None or probe.worst > 1.0 or probe.motion is None or probe.observed is None:
        reason = "no shrink toward it is feasible" if probe is None else probe.reason
        raise IdentificationError(
            f"no excitation {where} keeps the passive limits, the singularity margin"
            f" {limits.singularity_margin:g} and the torques: {reason}"
        )
    final = fitted.scaled(scale)
    sampled = sample(final, grid, limits.actuated.joint_names)
    check_trajectory(sampled, limits.actuated, cancellation=evaluator.cancellation)
    stacked = base.select(probe.observed).reshape(-1, base.count)
    condition = _passive_condition(probe.motion)
    torque_usage = 0.0
    if probe.torques is not None:
        torque_usage = float(np.max(np.abs(probe.torques) / limits.actuated.effort))
    return ClosedLoopExcitationDesign(
        trajectory=final,
        condition_number=normalised_condition(stacked),
        singularity_ratio=float(1.0 / (np.max(condition) * evaluator.reference_ratio)),
        scale=scale,
        usage=limit_usage(sampled, limits.actuated, cancellation=evaluator.cancellation),
        passive_usage=_passive_usage(probe.motion, model, limits.passive),
        torque_usage=torque_usage,
        evaluations=evaluations,
        wall_time_s=time.perf_counter() - start,
        limits=limits,
        time_capped=time_capped,
    )


def _check_settings(model: ClosedLoopModel, limits: ClosedLoopLimits, fundamental_hz: float, harmonics: int) -> None:
    if not (np.isfinite(fundamental_hz) and fundamental_hz > 0.0):
        raise IdentificationError(f"fundamental_hz must be > 0, got {fundamental_hz}")
    if harmonics < 1:
        raise IdentificationError(f"harmonics must be >= 1, got {harmonics}")
    if limits.actuated.joint_names != model.actuated_joint_names:
        raise IdentificationError(
            f"limits.actuated name joints {list(limits.actuated.joint_names)}, the mechanism's actuated joints are"
            f" {list(model.actuated_joint_names)}"
        )
    if limits.passive.joint_names != model.passive_joint_names:
        raise IdentificationError(
            f"limits.passive name joints {list(limits.passive.joint_names)}, the mechanism's passive joints are"
            f" {list(model.passive_joint_names)}"
        )


def random_closed_loop_fourier(
    model: ClosedLoopModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    limits: ClosedLoopLimits,
    *,
    fundamental_hz: float = 0.1,
    harmonics: int = 5,
    seed: int = 0,
    torque_model: ClosedLoopTorqueModel | None = None,
    base: BaseParameters | None = None,
    collision: SelfCollisionModel | None = None,
    cancellation: Cancellation = NEVER,
) -> ClosedLoopExcitationDesign:
    """The random-coefficient baseline: same limits and constraints, no optimisation.

    Offsets at the centre of the actuated ranges; coefficients standard normal (seeded);
    each actuated joint fitted to its limits, then the oscillation shrunk toward the
    centre pose until the passive limits, the singularity margin, the torques and, with
    ``collision`` (the opened tree's), the self-collision margin hold.

    ``cancellation`` is polled through the shrink and the final check.

    Raises
    ------
    IdentificationError
        When the centre pose itself breaks a constraint, or no shrink makes the motion feasible.
    PlanningCancelled
        When ``cancellation`` is requested before the design is done.
    """
    start = time.perf_counter()
    _check_settings(model, limits, fundamental_hz, harmonics)
    rng = np.random.default_rng(seed)
    raw = FourierTrajectory(
        fundamental_hz=float(fundamental_hz),
        offsets=limits.actuated.centre,
        sine=rng.normal(size=(harmonics, model.n_actuated)),
        cosine=rng.normal(size=(harmonics, model.n_actuated)),
    )
    evaluator = _Evaluator(model, drive_chain, terms, limits, torque_model, cancellation, collision)
    base = base if base is not None else base_parameters(model, drive_chain, terms)
    return _finalise(evaluator, base, raw, first=1.0, evaluations=0, start=start)


class _Search(FourierSearch):
    """Cost of the decision vector of a closed-loop excitation, the best candidate seen, the closest infeasible
    offset, and the budget."""

    def __init__(
        self,
        evaluator: _Evaluator,
        base: BaseParameters,
        *,
        fundamental_hz: float,
        harmonics: int,
        samples: int,
    ) -> None:
        self.evaluator, self.base = evaluator, base
        super().__init__(
            evaluator.limits.actuated,
            fundamental_hz=fundamental_hz,
            harmonics=harmonics,
            samples=samples,
            cancellation=evaluator.cancellation,
        )
        self.closest: tuple[float, str] = (np.inf, "")

    def cost(self, x: np.ndarray) -> float:
        """``log κ`` of the decoded, shrunk candidate on the cost grid; a penalty when its offset pose fails."""
        self.spend()
        trajectory = self.decode(np.asarray(x, dtype=float))
        offsets = trajectory.offsets
        q_offset, rest = self.evaluator.offset_pose(offsets)
        if q_offset is None or rest.worst > 1.0:
            if rest.worst < self.closest[0] or not self.closest[1]:
                self.closest = (rest.worst, f"at q_a = {np.round(offsets, 3).tolist()} rad, {rest.reason}")
            return self.record(x, _INFEASIBLE_COST + min(rest.worst - 1.0, 10.0), 0.0)
        qs, qc, vs, vc, acs, acc = self.cost_basis
        grid = _from_rest(
            qs @ trajectory.sine + qc @ trajectory.cosine,
            vs @ trajectory.sine + vc @ trajectory.cosine,
            acs @ trajectory.sine + acc @ trajectory.cosine,
        )
        scale, probe, _ = self.evaluator.largest_scale(offsets, q_offset, rest, grid, first=1.0, steps=_SEARCH_STEPS)
        if probe is None or probe.observed is None:
            return self.record(x, _UNEXCITED_COST, 0.0)
        kappa = gram_condition(gram_matrix(self.base.select(probe.observed).reshape(-1, self.base.count)))
        return self.record(x, float(np.log(min(kappa, 1e12))), scale)


def optimise_closed_loop_fourier(
    model: ClosedLoopModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    limits: ClosedLoopLimits,
    *,
    fundamental_hz: float = 0.1,
    harmonics: int = 5,
    seed: int = 0,
    time_budget_s: float = 60.0,
    samples: int = 100,
    base: BaseParameters | None = None,
    max_evaluations: int | None = None,
    torque_model: ClosedLoopTorqueModel | None = None,
    collision: SelfCollisionModel | None = None,
    cancellation: Cancellation = NEVER,
) -> ClosedLoopExcitationDesign:
    """Fourier excitation of the actuated joints minimising the condition number of the closed-loop base IDIM.

    The cost is ``log κ`` of the column-normalised base observation matrix
    (:func:`~dynamic_identification.core.closed_loop.observation_matrix` reduced to
    ``base``, [Briot2012] eq. (6)-(7)) on ``samples`` points of one period of the
    completed motion. Candidates are feasible by construction (module docstring): fitted
    to the actuated limits, then shrunk toward their offset pose until the passive
    limits, ``limits.singularity_margin`` and the torques of ``torque_model`` hold. A
    quarter of the budget goes to :func:`scipy.optimize.differential_evolution`
    (seeded Latin-hypercube population that includes the centre pose), the rest to
    bounded Powell refinements of the best candidate, restarted while they improve. The
    result is fitted and shrunk again on one period at :data:`~.safety.CHECK_RATE_HZ`.

    Parameters
    ----------
    limits
        Actuated and passive limits and the singularity margin (:class:`ClosedLoopLimits`).
    seed
        Seeds the population and the mutations.
    time_budget_s
        Wall-time budget, s; the search stops at the first evaluation past it.
    samples
        Points per period of the cost; consecutive points must be close enough for the
        loop closures to be followed (a few tenths of a radian apart).
    base
        Base parameters; default :func:`~dynamic_identification.core.closed_loop.base_parameters`.
    max_evaluations
        Cost-evaluation budget; with ``time_budget_s=math.inf`` the result depends only
        on ``seed``.
    torque_model
        Actuated torques of a candidate (e.g. :meth:`ClosedLoopTorqueModel.nominal`);
        ``None`` leaves the torques unconstrained.
    collision
        The opened tree's collision model: the final shrink of the best candidate also
        keeps every checked pair of links the margin apart, plus half the sweep between
        samples (:meth:`_Evaluator.required_clearance_m`), on :data:`_FINAL_SAMPLES` points per
        period and again at :data:`~.safety.CHECK_RATE_HZ`; the search does not look at the
        geometry. ``None`` leaves self-collision unchecked here.
    cancellation
        Polled before every cost evaluation and every shrink probe; a design that is not
        cancelled is the same as without it.

    Raises
    ------
    IdentificationError
        On bad settings; when no offset pose tried keeps every constraint (naming the
        closest miss: loops that cannot be closed, a passive limit, the singularity
        margin or a torque).
    PlanningCancelled
        When ``cancellation`` is requested before the design is done.
    """
    start = time.perf_counter()
    _check_settings(model, limits, fundamental_hz, harmonics)
    budget = SearchBudget(start, time_budget_s, max_evaluations, seed, _POPULATION)
    budget.check(samples, min_samples=8)
    evaluator = _Evaluator(model, drive_chain, terms, limits, torque_model, cancellation)
    base = base if base is not None else base_parameters(model, drive_chain, terms)
    search = _Search(evaluator, base, fundamental_hz=float(fundamental_hz), harmonics=harmonics, samples=samples)
    best = run_search(search, budget, centre_first=True)
    if search.best_cost >= _INFEASIBLE_COST:
        raise IdentificationError(
            f"no offset pose of the actuated joints keeps the closed-loop constraints (singularity margin"
            f" {limits.singularity_margin:g}); closest of {search.evaluations} tried: {search.closest[1]}"
        )
    # The search itself ignores the geometry: shrinking every candidate for it gave worse designs than shrinking
    # the best one (bench_self_collision.py --robots five_bar, optimised: κ 91-116 against 49-82).
    return _finalise(
        _Evaluator(model, drive_chain, terms, limits, torque_model, cancellation, collision),
        base,
        search.decode(best),
        first=search.best_scale,
        evaluations=search.evaluations,
        start=start,
        time_capped=search.time_capped,
    )


# --------------------------------------------------------------------- the check of what is published
@dataclass(frozen=True)
class ClosedLoopCheck:
    """What the controller's motion through a closed-loop trajectory uses of the limits.

    Attributes
    ----------
    samples
        Samples of the executed motion checked (at :data:`~.safety.CHECK_RATE_HZ` or finer).
    singularity_ratio
        Smallest ``σ_min / σ_max`` of the passive block of ``A_t`` met, as a fraction of
        its value at the reference configuration.
    passive_usage
        Fractions of the passive limits used (jerk: ``nan``, not checked).
    torque_usage
        Largest fraction of an actuated effort limit needed (0 when not checked).
    """

    samples: int
    singularity_ratio: float
    passive_usage: LimitUsage
    torque_usage: float


def check_closed_loop_trajectory(
    model: ClosedLoopModel,
    trajectory: SampledTrajectory,
    limits: ClosedLoopLimits,
    *,
    torque_model: ClosedLoopTorqueModel | None = None,
    collision: SelfCollisionModel | None = None,
    q_guess: np.ndarray | None = None,
    check_rate_hz: float = CHECK_RATE_HZ,
) -> ClosedLoopCheck:
    """Refuse a trajectory of the actuated joints whose executed motion leaves the closed-loop limits.

    The controller's quintic through the points (:func:`~.safety.executed_motion`, at
    ``check_rate_hz`` or finer) must keep the actuated limits
    (:func:`~.safety.check_trajectory`); completed into the tree motion
    (:meth:`ClosedLoopModel.complete_motion`, [Briot2012] eq. (2)-(4)) it must keep the
    passive position, velocity and acceleration limits, ``σ_min/σ_max(A_p)`` at least
    ``limits.singularity_margin`` times its value at the reference configuration, the
    effort limits under ``torque_model``, and, with ``collision`` (the opened tree's
    collision model, :attr:`ClosedLoopModel.closure_joints` joined), no two links closer
    than its margin (:func:`~.collision.first_self_collision` on the tree motion).

    Parameters
    ----------
    trajectory
        Published points of the actuated joints (kinematic order).
    q_guess
        Tree configuration near the first point, choosing the assembly mode; default:
        walked from the model's reference configuration.

    Raises
    ------
    LimitViolationError
        An actuated or passive limit (joint, time, quantity, value, limit), or a torque.
    SingularityMarginError
        The first instant below the singularity margin (time, sample, ratio).
    SelfCollisionError
        The first instant two links come closer than the collision margin (links, time, distance).
    ClosedLoopExcitationError
        The first instant where the loops cannot be closed.
    """
    if collision is not None and collision.robot.joint_names != model.joint_names:
        raise IdentificationError(
            f"the collision model's joints {list(collision.robot.joint_names)} differ from the tree's"
            f" {list(model.joint_names)}"
        )
    if trajectory.joint_names != model.actuated_joint_names:
        raise IdentificationError(
            f"trajectory joints {list(trajectory.joint_names)} differ from the actuated joints"
            f" {list(model.actuated_joint_names)}"
        )
    check_trajectory(trajectory, limits.actuated, check_rate_hz=check_rate_hz)
    executed = executed_motion(trajectory, check_rate_hz=check_rate_hz)
    keep = np.concatenate([[True], np.diff(executed.time) > 0.0])
    times, at_point = executed.time[keep], executed.at_point[keep]
    try:
        motion = model.complete_motion(executed.q[keep], executed.dq[keep], executed.ddq[keep], q_guess=q_guess)
    except LoopClosureError as error:
        sample_index = int(error.sample) if error.sample is not None else 0
        raise ClosedLoopExcitationError(
            f"closure at t = {times[sample_index]:.4f} s (sample {sample_index} of the motion checked at"
            f" {check_rate_hz:g} Hz): {error}",
            time_s=float(times[sample_index]),
            sample=sample_index,
        ) from error
    failures: list[tuple[int, IdentificationError]] = []
    passive = limits.passive
    tol = ROUNDING_TOLERANCE
    q, dq, ddq = (values[:, model.passive] for values in (motion.q, motion.dq, motion.ddq))
    for quantity, values, bad in (
        ("position", q, (q < passive.lower - tol) | (q > passive.upper + tol)),
        ("velocity", dq, np.abs(dq) > passive.velocity + tol),
        ("acceleration", ddq, np.abs(ddq) > passive.acceleration + tol),
    ):
        if bad.any():
            k, j = (int(i) for i in np.argwhere(bad)[0])
            value = float(values[k, j])
            if quantity == "position":
                limit = float(passive.upper[j] if value > passive.upper[j] else passive.lower[j])
            else:
                limit = float(getattr(passive, quantity)[j])
            violation = LimitViolationError(
                joint=passive.joint_names[j],
                time_s=float(times[k]),
                quantity=quantity,
                value=value,
                limit=limit,
                between_points=not bool(at_point[k]),
            )
            failures.append((k, violation))
    ratio = 1.0 / (_passive_condition(motion) * reference_singularity_ratio(model))
    below = ratio < limits.singularity_margin - tol
    if below.any():
        k = int(np.argmax(below))
        singular = SingularityMarginError(
            time_s=float(times[k]),
            sample=k,
            ratio=float(ratio[k]),
            margin=limits.singularity_margin,
            between_points=not bool(at_point[k]),
            rate_hz=check_rate_hz,
        )
        failures.append((k, singular))
    torque_usage = 0.0
    known = np.isfinite(limits.actuated.effort)
    if torque_model is not None and known.any():
        torques = torque_model.torques(motion)
        fraction = np.where(known, np.abs(torques) / limits.actuated.effort, 0.0)
        excess = fraction > 1.0 + tol
        if excess.any():
            k, j = (int(i) for i in np.argwhere(excess)[0])
            excessive = LimitViolationError(
                joint=limits.actuated.joint_names[j],
                time_s=float(times[k]),
                quantity="torque",
                value=float(torques[k, j]),
                limit=float(limits.actuated.effort[j]),
                between_points=not bool(at_point[k]),
            )
            failures.append((k, excessive))
        torque_usage = float(fraction.max(initial=0.0))
    if collision is not None:
        found = first_self_collision(collision, times, motion.q, at_point)
        if found is not None:
            failures.append(found)
    if failures:
        raise min(failures, key=lambda failure: failure[0])[1]
    return ClosedLoopCheck(
        samples=int(times.shape[0]),
        singularity_ratio=float(ratio.min()),
        passive_usage=_passive_usage(motion, model, passive),
        torque_usage=torque_usage,
    )


# --------------------------------------------------------------------- the plan
def start_configuration(model: ClosedLoopModel, offsets: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Tree configuration at the actuated pose ``first``, walked from the reference configuration through ``offsets``.

    The route the design was checked along: reference → offset pose → the start of the
    oscillation (steps of :data:`_WALK_STEP_RAD`), so the assembly mode is the one of the
    reference configuration ([Briot2012] eq. (2)).

    Raises
    ------
    LoopClosureError
        When the loops cannot be followed along that route.
    """
    reference = model.reference_configuration[model.actuated]
    path = np.vstack([_walk(reference, offsets), _walk(offsets, first), first])
    zeros = np.zeros_like(path)
    return model.complete_motion(path, zeros, zeros, q_guess=model.reference_configuration).q[-1]


def plan_closed_loop_excitation(
    model: ClosedLoopModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    settings: ExcitationSettings,
    *,
    margin: float = DEFAULT_SINGULARITY_MARGIN,
    torque_model: ClosedLoopTorqueModel | None = None,
    collision: SelfCollisionModel | None = None,
    cancellation: Cancellation = NEVER,
) -> ExcitationPlan:
    """The Fourier excitation of a closed-loop robot's actuated joints, checked as the controller executes it.

    As :func:`~.plan.plan_excitation` for a serial robot: the design
    (:func:`optimise_closed_loop_fourier`, or :func:`random_closed_loop_fourier` when
    ``settings.optimise`` is off) is planned against tighter limits
    (:meth:`ClosedLoopLimits.planning`), sampled at a multiple of ``settings.rate_hz`` of
    at least :data:`~.plan.PLANNING_RATE_HZ`, repeated ``settings.periods`` times, and
    published every ``1 / rate_hz``; then the controller's quintic through the points
    must stay within the interpolation tolerance and the actuated limits
    (:func:`~.safety.check_sampling`), and its completion at
    :data:`~.safety.CHECK_RATE_HZ` within the passive limits, the singularity
    ``margin``, the effort limits and, when the URDF has collision geometry (and
    ``settings.self_collision``), the self-collision margin of every link of the tree
    (:func:`check_closed_loop_trajectory`). The design's final shrink keeps that margin
    already; should the executed motion still collide, it is scaled toward its offset pose
    (:func:`~.plan.scaled_until_safe`) until it keeps the margin, else refused.

    Only ``settings.mode == "fourier"`` is available: segmented per-joint-fixed
    trajectories ([Gautier2013]) and process trajectories need a serial chain (inverse
    kinematics of the tool) and are refused. The workspace box (``box_min``,
    ``box_max``) is refused as well; restrict the actuated joints with
    ``workspace_lower`` / ``workspace_upper``.

    Parameters
    ----------
    settings
        Excitation settings; per-joint values hold one entry per actuated joint or per
        tree joint (:meth:`ClosedLoopLimits.from_settings`).
    margin
        Smallest ``σ_min / σ_max`` of the passive block of ``A_t`` allowed along the motion.
    torque_model
        Actuated torques; default :meth:`ClosedLoopTorqueModel.nominal`.
    collision
        The opened tree's collision model when the caller has built it (as the excitation
        node has); default: the one of ``settings``
        (:meth:`~.settings.ExcitationSettings.collision_model`).
    cancellation
        Polled through the design and the checks (:mod:`~dynamic_identification.core.cancellation`).

    Returns
    -------
    ExcitationPlan
        The actuated joints' points, their limits and usage, the condition number of the
        closed-loop base observation matrix over one period; the description states the
        smallest singularity ratio met.

    Raises
    ------
    IdentificationError
        For another mode or a workspace box, when no design keeps the constraints, or
        naming the first violation of the checks (time, joint, closure or colliding links).
    PlanningCancelled
        When ``cancellation`` is requested before the plan is checked.
    """
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
    limits = ClosedLoopLimits.from_settings(model, settings, singularity_margin=margin)
    if collision is None:
        collision = settings.collision_model(model.robot, joined=model.closure_joints)
    tolerance = settings.interpolation_tolerance_rad
    planning = limits.planning(tolerance)
    torques = torque_model if torque_model is not None else ClosedLoopTorqueModel.nominal(model, drive_chain, terms)
    base = base_parameters(model, drive_chain, terms)
    if settings.optimise:
        design = optimise_closed_loop_fourier(
            model,
            drive_chain,
            terms,
            planning,
            torque_model=torques,
            base=base,
            collision=collision,
            cancellation=cancellation,
            **settings.fourier_arguments(),
            **settings.budget_arguments(),
        )
        searched, warnings = search_report(
            design.evaluations, design.wall_time_s, time_capped=design.time_capped, **settings.budget_arguments()
        )
        kind = f"optimised Fourier series of the actuated joints ({searched})"
    else:
        design = random_closed_loop_fourier(
            model,
            drive_chain,
            terms,
            planning,
            torque_model=torques,
            base=base,
            collision=collision,
            cancellation=cancellation,
            **settings.fourier_arguments(),
        )
        kind = "random Fourier series of the actuated joints fitted into the limits"
        warnings = ()
    fourier = design.trajectory
    factor = planning_factor(settings.rate_hz)

    def checked(reference: SampledTrajectory) -> tuple[SampledTrajectory, ClosedLoopCheck, np.ndarray]:
        """The published points, their check and the tree configuration they start from."""
        points = subsampled(reference, factor)
        check_sampling(
            points,
            reference,
            limits.actuated,
            rate_hz=settings.rate_hz,
            tolerance_rad=tolerance,
            cancellation=cancellation,
        )
        cancellation.check()
        q_start = start_configuration(model, fourier.offsets, points.q[0])
        check = check_closed_loop_trajectory(
            model, points, limits, torque_model=torques, collision=collision, q_guess=q_start
        )
        return points, check, q_start

    _, scale, (points, check, q_start) = scaled_until_safe(
        fourier,
        planning_times(fourier.period_s, settings, factor),
        model.actuated_joint_names,
        checked,
        what="the closed-loop Fourier excitation",
        recoverable=(SelfCollisionError,),
        cancellation=cancellation,
    )
    condition = design.condition_number
    description = f"{kind}, condition number {condition:.3g}"
    if scale < 1.0:
        condition = _condition_number(model, drive_chain, terms, base, points, q_start)
        description += f" before scaling, amplitudes scaled to {scale:.0%} to keep the self-collision margin"
    description += (
        f", closure σ_min/σ_max >= {check.singularity_ratio:.2f} of its reference value (margin {margin:g}),"
        f" {settings.periods} period(s) of {fourier.period_s:g} s"
    )
    return ExcitationPlan(
        trajectory=points,
        limits=limits.actuated,
        usage=limit_usage(points, limits.actuated, cancellation=cancellation),
        condition_number=condition,
        description=description,
        torque_usage=check.torque_usage,
        torque_source=torques.source,
        self_collision=self_collision_summary(collision, enabled=settings.self_collision),
        warnings=warnings,
    )


def _condition_number(
    model: ClosedLoopModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    base: BaseParameters,
    points: SampledTrajectory,
    q_guess: np.ndarray,
) -> float:
    """Condition number of the column-normalised closed-loop base observation matrix on the published points."""
    motion = model.complete_motion(points.q, points.dq, points.ddq, q_guess=q_guess)
    observed = observation_matrix(
        model, drive_chain, terms, motion.q, motion.dq, motion.ddq, projection=motion.projection
    )
    return normalised_condition(base.select(observed).reshape(-1, base.count))
