"""Fourier excitation of a closed-loop (parallel) robot, kept away from its singularities.

A parallel robot is driven through its actuated joints only; the passive joints follow
from the loop closures ([Briot2012] eq. (2)-(4), :meth:`ClosedLoopModel.complete_motion`).
Its excitation is therefore a finite Fourier series of the **actuated** joints
([Volkmann2020] eq. (6), :mod:`.fourier`) chosen, as for a serial robot
(:mod:`.optimisation`), to minimise the condition number of the column-normalised base
observation matrix — here the closed-loop IDIM ``τ_act = J_tᵀ φ_tree χ`` ([Briot2012]
eq. (6)) reduced to its base parameters (eq. (7)) — under the constraints a serial robot
does not have (:mod:`.constraints`): the passive joints' limits and the distance to
parallel singularities, besides the torques and, in the final shrink, the self-collision
margin of every link of the tree.

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
joints executes. :func:`~.plan.plan_excitation` checks it as it checks a serial robot's
(:func:`~.safety.check_sampling`, then :func:`~.constraints.check_executed_motion` of the
executed motion completed to the tree), refusing with the time of the first violation; a
plan whose executed motion still collides is scaled toward its offset pose first.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from dynamic_identification.core.cancellation import NEVER, Cancellation
from dynamic_identification.core.closed_loop import LoopClosureError
from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.collision import SelfCollisionModel
from dynamic_identification.core.excitation.constraints import (
    MechanismLimits,
    passive_condition,
    passive_usage,
    reference_singularity_ratio,
)
from dynamic_identification.core.excitation.fourier import FourierTrajectory
from dynamic_identification.core.excitation.optimisation import (
    ExcitationDesign,
    FourierSearch,
    SearchBudget,
    fit_to_limits,
    gram_condition,
    gram_matrix,
    normalised_condition,
    period_grid,
    run_search,
)
from dynamic_identification.core.excitation.safety import (
    CHECK_RATE_HZ,
    TorqueModel,
    check_trajectory,
    limit_usage,
)
from dynamic_identification.core.excitation.trajectory import sample
from dynamic_identification.core.mechanism import WALK_STEP_RAD, Mechanism, TreeMotion
from dynamic_identification.core.model import DriveChain, DriveTerms
from dynamic_identification.core.regressors import BaseParameters

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

_INFEASIBLE_COST = 100.0
"""Cost of a candidate whose offset pose breaks a constraint (plus how far, at most 10)."""

_UNEXCITED_COST = float(np.log(1e12))
"""Cost of a candidate that no shrink makes feasible: its motion is the offset pose at rest."""


# --------------------------------------------------------------------- feasibility of a motion
@dataclass(frozen=True)
class _Probe:
    """A completed candidate motion and the worst fraction of a limit it uses (> 1: infeasible)."""

    worst: float
    reason: str
    motion: TreeMotion | None = None
    observed: np.ndarray | None = None
    torques: np.ndarray | None = None


def _walk(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Actuated poses from ``start`` toward ``end`` in steps of at most :data:`WALK_STEP_RAD`, ``end`` excluded."""
    steps = max(1, int(np.ceil(float(np.max(np.abs(end - start), initial=0.0)) / WALK_STEP_RAD)))
    return start + (np.arange(steps) / steps)[:, None] * (end - start)


class _Evaluator:
    """Completes candidate motions of the actuated joints and measures the limits they use.

    ``cancellation`` is polled before every probe of :meth:`largest_scale`.
    """

    def __init__(
        self,
        model: Mechanism,
        drive_chain: DriveChain,
        terms: DriveTerms,
        limits: MechanismLimits,
        torque_model: TorqueModel | None,
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

    def probe(self, motion: TreeMotion) -> _Probe:
        """The worst fraction of a limit ``motion`` uses, and which."""
        model = self.model
        observed = model.observation_matrix(self.drive_chain, self.terms, motion)
        torques = None
        if self.torque_model is not None:
            torque_model = self.torque_model
            same = torque_model.drive_chain is self.drive_chain and torque_model.terms == self.terms
            torques = observed @ torque_model.standard if same else torque_model.motion_torques(motion)
        worst, reason = self.worst(motion, torques)
        return _Probe(worst, reason, motion, observed, torques)

    def worst(self, motion: TreeMotion, torques: np.ndarray | None) -> tuple[float, str]:
        """Largest fraction of a limit used (passive positions, velocities, accelerations, margin, torques and, with
        a collision model, the self-collision clearance: :meth:`required_clearance_m`)."""
        model, limits = self.model, self.limits
        passive = limits.passive
        q = motion.q[:, model.passive]
        with np.errstate(divide="ignore", invalid="ignore"):
            position = np.nan_to_num(np.maximum((q - self.centre) / self.above, (self.centre - q) / self.below))
        condition = passive_condition(motion)
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


def _rows(motion: TreeMotion, index: slice) -> TreeMotion:
    condition = None if motion.passive_condition is None else motion.passive_condition[index]
    return TreeMotion(
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
def _finalise(
    evaluator: _Evaluator,
    base: BaseParameters,
    trajectory: FourierTrajectory,
    *,
    first: float,
    evaluations: int,
    start: float,
    time_capped: bool = False,
) -> ExcitationDesign:
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
    condition = passive_condition(probe.motion)
    return ExcitationDesign(
        trajectory=final,
        condition_number=normalised_condition(stacked),
        usage=limit_usage(sampled, limits.actuated, cancellation=evaluator.cancellation),
        evaluations=evaluations,
        wall_time_s=time.perf_counter() - start,
        limits=limits.actuated,
        time_capped=time_capped,
        singularity_ratio=float(1.0 / (np.max(condition) * evaluator.reference_ratio)),
        passive_usage=passive_usage(probe.motion, model, limits.passive),
    )


def _check_settings(model: Mechanism, limits: MechanismLimits, fundamental_hz: float, harmonics: int) -> None:
    if not (np.isfinite(fundamental_hz) and fundamental_hz > 0.0):
        raise IdentificationError(f"fundamental_hz must be > 0, got {fundamental_hz}")
    if harmonics < 1:
        raise IdentificationError(f"harmonics must be >= 1, got {harmonics}")
    if limits.actuated.joint_names != model.actuated_joint_names:
        raise IdentificationError(
            f"limits.actuated name joints {list(limits.actuated.joint_names)}, the mechanism's actuated joints are"
            f" {list(model.actuated_joint_names)}"
        )
    passive_joints = tuple(model.joint_names[int(j)] for j in model.passive)
    if limits.passive.joint_names != passive_joints:
        raise IdentificationError(
            f"limits.passive name joints {list(limits.passive.joint_names)}, the mechanism's passive joints are"
            f" {list(passive_joints)}"
        )


def random_closed_loop_fourier(
    model: Mechanism,
    drive_chain: DriveChain,
    terms: DriveTerms,
    limits: MechanismLimits,
    *,
    fundamental_hz: float = 0.1,
    harmonics: int = 5,
    seed: int = 0,
    torque_model: TorqueModel | None = None,
    base: BaseParameters | None = None,
    collision: SelfCollisionModel | None = None,
    cancellation: Cancellation = NEVER,
) -> ExcitationDesign:
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
    base = base if base is not None else model.base_parameters(drive_chain, terms)
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
    model: Mechanism,
    drive_chain: DriveChain,
    terms: DriveTerms,
    limits: MechanismLimits,
    *,
    fundamental_hz: float = 0.1,
    harmonics: int = 5,
    seed: int = 0,
    time_budget_s: float = 60.0,
    samples: int = 100,
    base: BaseParameters | None = None,
    max_evaluations: int | None = None,
    torque_model: TorqueModel | None = None,
    collision: SelfCollisionModel | None = None,
    cancellation: Cancellation = NEVER,
) -> ExcitationDesign:
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
        Actuated and passive limits and the singularity margin (:class:`MechanismLimits`).
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
        Actuated torques of a candidate (e.g. :meth:`TorqueModel.nominal`);
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
    base = base if base is not None else model.base_parameters(drive_chain, terms)
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


# --------------------------------------------------------------------- the plan
def start_configuration(model: Mechanism, offsets: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Tree configuration at the actuated pose ``first``, walked from the reference configuration through ``offsets``.

    The route the design was checked along: reference → offset pose → the start of the
    oscillation (steps of :data:`WALK_STEP_RAD`), so the assembly mode is the one of the
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
