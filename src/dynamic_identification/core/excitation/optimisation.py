"""Fourier excitation optimised for identifiability ([Volkmann2020] §II.C, [Swevers2002] §3.1).

The coefficients of the finite Fourier series ([Volkmann2020] eq. (6), :mod:`.fourier`)
are chosen to minimise the condition number of the base-parameter observation
matrix over one period, with its columns normalised to unit norm (the [Gautier2013]
convention, [Volkmann2020] ref. [15]: units and magnitudes of the parameters do not
count, only collinearity). [Volkmann2020] reaches 6.76 in the full workspace and 7.71
in a restricted one with a genetic algorithm; here a global stage
(:func:`scipy.optimize.differential_evolution`) is followed by a local bounded
refinement (:func:`scipy.optimize.minimize`, Powell), within a time budget and,
for reproducible runs, an evaluation budget.

The series moves a mechanism's controlled joints
(:class:`~dynamic_identification.core.mechanism.seam.Mechanism`); the observation matrix is
the IDIM of the motion completed to the tree: a serial robot's own, a closed-loop
robot's ``τ_act = J_tᵀ φ_tree χ`` with its passive joints completed from the loop
closures ([Briot2012] eq. (2)-(7)).

Every candidate is feasible by construction: the decision variables are, per
controlled joint, an offset inside the middle of its range and raw coefficients in
``[-1, 1]``; each joint's oscillation is then scaled to the tightest of its
position, velocity and acceleration limits (:func:`fit_to_limits`) and all joints are
scaled together toward the offset pose (bisection) until the tool stays in an
end-effector box, when one restricts the workspace, and the completed motion keeps what
a joint alone cannot (:class:`~.constraints.LimitProbe`): the torques and, with passive
joints, their limits and a distance to parallel singularities ([Briot2012] eq. (3)).
Offset poses where the loops cannot be closed from the reference configuration get a
penalty. The optimiser therefore only searches among trajectories that use the limits
fully and safely; the final trajectory is fitted and shrunk again on one period at
1 kHz, with the self-collision margin when a collision model is given (the search
itself only penalises a colliding new best: shrinking every candidate for the geometry
gave worse designs, bench_self_collision.py --robots five_bar).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pinocchio as pin
import scipy.optimize

from dynamic_identification.core.cancellation import NEVER, Cancellation
from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.collision import SelfCollisionModel
from dynamic_identification.core.excitation.constraints import (
    LimitProbe,
    MechanismLimits,
    Probe,
    as_mechanism_limits,
    passive_condition,
    passive_usage,
)
from dynamic_identification.core.excitation.fourier import FourierTrajectory
from dynamic_identification.core.excitation.safety import (
    CHECK_RATE_HZ,
    TORQUE_CHECK_RATE_HZ,
    JointLimits,
    LimitUsage,
    TorqueModel,
    check_trajectory,
    limit_usage,
)
from dynamic_identification.core.excitation.trajectory import SampledTrajectory, sample
from dynamic_identification.core.mechanism.closed_loop import LoopClosureError
from dynamic_identification.core.mechanism.robot import RobotModel
from dynamic_identification.core.mechanism.seam import Mechanism, mechanism_of
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.regressors.idim import BaseParameters

_FILL = 1.0 - 1e-4
"""Fraction of a limit a fitted trajectory reaches on its grid; the rest covers peaks between samples."""

_FIT_SAMPLES = 1000
"""Samples per period on which the optimiser fits candidates to the limits (cheap: no dynamics)."""

_OFFSET_FRACTION = 0.5
"""Offsets range over this fraction of each half-range around its centre, leaving room to oscillate."""

_UNBOUNDED_HALF_RANGE = np.pi
"""Half-range used to place the offset of an unbounded (continuous) joint, rad."""

_GLOBAL_SHARE = 0.25
"""Share of the time and evaluation budgets given to the global stage."""

_RESTART_GAIN = 1e-4
"""Smallest gain of ``log κ`` for which the local refinement is restarted once more."""

_POPULATION = 40
"""Individuals of the differential-evolution population."""

_BOX_BISECTIONS = 6
"""Bisection steps of the scale toward the offset pose during the search: into the box, and into the limits of a
serial robot's candidate (:data:`_SERIAL_SHAPE`)."""

_SINGLE_THREAD_PRODUCT = 200_000
"""``m n k`` of a matrix product that BLAS runs on the calling thread."""

_INFEASIBLE_COST = 100.0
"""Cost of a candidate whose offset pose leaves the end-effector box (plus its distance, m), cannot be reached from
the reference configuration or breaks a passive limit or the singularity margin (plus how far, at most 10), or
that no shrink toward its offset pose brings into the limits."""

_COLLIDING_COST = 50.0
"""Cost of a candidate that would be the best so far but brings two links within the self-collision margin on
the cost grid (above any ``log κ``, below :data:`_INFEASIBLE_COST`)."""


@dataclass(frozen=True)
class Workspace:
    """Restrictions of the excitation workspace ([Volkmann2020] restricted workspace, Fig. 2.c).

    Attributes
    ----------
    lower, upper
        Narrower joint ranges, rad, shape ``(n,)``; intersected with the joint limits.
    box_min, box_max
        End-effector position bounds in the base frame, m, shape ``(3,)``.
    frame
        Pinocchio frame checked against the box; ``None`` is the last frame of the
        model (the tool).
    """

    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    box_min: np.ndarray | None = None
    box_max: np.ndarray | None = None
    frame: str | None = None

    def __post_init__(self) -> None:
        if (self.box_min is None) != (self.box_max is None):
            raise IdentificationError("box_min and box_max must be given together")
        if self.box_min is not None and self.box_max is not None:
            low = np.asarray(self.box_min, dtype=float)
            high = np.asarray(self.box_max, dtype=float)
            if low.shape != (3,) or high.shape != (3,) or not np.all(low < high):
                raise IdentificationError(
                    f"end-effector box needs box_min < box_max, 3 numbers each, got {low.tolist()}, {high.tolist()}"
                )

    @property
    def has_box(self) -> bool:
        return self.box_min is not None


@dataclass(frozen=True)
class ExcitationDesign:
    """An optimised excitation and how good and how safe it is.

    Attributes
    ----------
    trajectory
        The Fourier trajectory ([Volkmann2020] eq. (6)).
    condition_number
        Of the column-normalised base observation matrix on one period ([Gautier2013] convention).
    usage
        Fractions of the limits used, from :func:`~.safety.limit_usage` on one period at
        :data:`CHECK_RATE_HZ`.
    evaluations
        Cost evaluations spent.
    wall_time_s
        Wall time of the optimisation, s.
    limits
        The limits (workspace ranges applied) the trajectory was checked against with
        :func:`~.safety.check_trajectory` at :data:`CHECK_RATE_HZ`; with a workspace box,
        every sample of that check also kept the tool in the box.
    time_capped
        Whether the wall-time budget, not ``max_evaluations``, ended the search: the design then
        depends on the machine's speed and load.
    singularity_ratio, passive_usage
        Of a mechanism with passive joints (:func:`optimise_fourier`): the
        smallest ``σ_min / σ_max`` of the passive block of ``A_t`` over one period, as a fraction of its
        value at the reference configuration, and the fractions of the passive joints' limits used (jerk:
        ``nan``, not checked); ``None`` without passive joints.
    """

    trajectory: FourierTrajectory
    condition_number: float
    usage: LimitUsage
    evaluations: int
    wall_time_s: float
    limits: JointLimits
    time_capped: bool = False
    singularity_ratio: float | None = None
    passive_usage: LimitUsage | None = None


def search_report(
    evaluations: int, wall_time_s: float, *, time_capped: bool, time_budget_s: float, max_evaluations: int | None
) -> tuple[str, tuple[str, ...]]:
    """What a plan says of its search: ``"N cost evaluations in T s"`` and the warning when the wall time, not the
    evaluations, ended it (the plan then depends on the machine's speed and load: another run gives another one)."""
    done = f"{evaluations} cost evaluations in {wall_time_s:.3g} s"
    if max_evaluations is None:
        return done, (
            f"the search ran on its wall-time budget alone (time_budget_s = {time_budget_s:g} s, max_evaluations 0):"
            " another run or another load gives another plan",
        )
    if time_capped:
        return done, (
            f"the wall-time cap time_budget_s = {time_budget_s:g} s ended the search after {evaluations} of"
            f" max_evaluations = {max_evaluations} cost evaluations: this plan depends on the machine's load"
            " (raise time_budget_s for one that does not)",
        )
    return done, ()


def normalised_condition(stacked: np.ndarray) -> float:
    """Condition number of ``stacked`` (rows × b) with columns scaled to unit norm; infinite if a column is zero."""
    norms = np.linalg.norm(stacked, axis=0)
    if np.any(norms <= 1e-12 * max(float(norms.max(initial=0.0)), 1.0)):
        return float("inf")
    singular = np.linalg.svd(stacked / norms, compute_uv=False)
    return float(singular[0] / singular[-1]) if singular[-1] > 0.0 else float("inf")


def gram_matrix(stacked: np.ndarray) -> np.ndarray:
    """``Wᵀ W`` summed over row blocks small enough for BLAS to stay on one thread.

    Between the Python loops of the observation matrix, waking BLAS threads for one
    product costs milliseconds on a loaded machine; blocks below OpenBLAS's threading
    threshold (``m n k`` about 2.6e5) avoid it at no cost when the machine is idle.
    """
    columns = stacked.shape[1]
    rows = max(1, _SINGLE_THREAD_PRODUCT // (columns * columns))
    gram = np.zeros((columns, columns))
    for start in range(0, stacked.shape[0], rows):
        block = stacked[start : start + rows]
        gram += block.T @ block
    return gram


def gram_condition(gram: np.ndarray) -> float:
    """The same condition number from the Gram matrix ``Wᵀ W`` (b × b).

    Its eigenvalues are the squared singular values, so this is exact enough below
    ~1e6 — all the optimiser needs to rank candidates — at a fraction of the cost.
    """
    diagonal = np.diag(gram)
    if np.any(diagonal <= 1e-24 * max(float(diagonal.max(initial=0.0)), 1.0)):
        return float("inf")
    scale = 1.0 / np.sqrt(diagonal)
    eigenvalues = np.linalg.eigvalsh(gram * scale[:, None] * scale[None, :])
    return float(np.sqrt(eigenvalues[-1] / max(eigenvalues[0], 1e-300)))


def period_grid(trajectory: FourierTrajectory, samples: int) -> np.ndarray:
    """``samples`` equally spaced instants of one period of ``trajectory``, s, from 0 (the period excluded)."""
    if samples < 2:
        raise IdentificationError(f"samples must be >= 2, got {samples}")
    return np.arange(samples) * (trajectory.period_s / samples)


def condition_number(
    dynamic_model: DynamicModel,
    trajectory: FourierTrajectory,
    *,
    samples: int,
) -> float:
    """Condition number of the column-normalised base observation matrix over one period.

    ``W_b`` is the mechanism's IDIM (:meth:`~dynamic_identification.core.mechanism.seam.Mechanism.observation_matrix`,
    a serial robot's :func:`~.regressors.observation_matrix`, a closed-loop robot's ``J_tᵀ φ_tree``
    [Briot2012] eq. (6)) at ``samples`` equally spaced times of one period of the controlled joints'
    ``trajectory``, completed from its offset pose (followed from the reference configuration),
    reduced to the base columns and stacked to ``(samples · n_a, b)``; each column is scaled to unit
    norm before ``κ = σ_max / σ_min`` ([Volkmann2020] §II.C, normalisation of its ref. [15]; the
    [Gautier2013] convention). Drive-chain columns (rotor inertia, friction, offset) count as
    ``terms`` says. Infinite when a base column is never excited.

    Raises
    ------
    IdentificationError
        When the loops of a closed-loop robot cannot be closed along the motion.
    """
    mechanism, base = dynamic_model.mechanism, dynamic_model.base
    q, dq, ddq = trajectory.evaluate(period_grid(trajectory, samples))
    try:
        start = mechanism.follow(
            q[0], start=mechanism.follow(trajectory.offsets, start=mechanism.reference_configuration)
        )
        motion = mechanism.complete_motion(q, dq, ddq, q_guess=start)
    except LoopClosureError as error:
        raise IdentificationError(f"no condition number of the excitation: {error}") from error
    observed = mechanism.observation_matrix(dynamic_model.drive_chain, dynamic_model.terms, motion)
    return normalised_condition(base.select(observed).reshape(-1, base.count))


def sampled_condition_number(
    dynamic_model: DynamicModel,
    trajectory: SampledTrajectory,
    *,
    samples: int = 500,
    q_guess: np.ndarray | None = None,
) -> float:
    """:func:`condition_number` of any sampled trajectory of the controlled joints, on ``samples`` evenly spread
    samples of its motion completed to the tree (from the tree configuration ``q_guess`` near its first sample,
    which chooses a closed-loop robot's assembly mode).

    Infinite when the trajectory leaves a base parameter unexcited (a process that
    never moves a joint, [Volkmann2020] §III.D).

    Raises
    ------
    IdentificationError
        When the loops of a closed-loop robot cannot be closed along the motion.
    """
    mechanism = dynamic_model.mechanism
    try:
        motion = mechanism.complete_motion(trajectory.q, trajectory.dq, trajectory.ddq, q_guess=q_guess)
    except LoopClosureError as error:
        raise IdentificationError(f"no condition number of the excitation: {error}") from error
    index = np.unique(np.linspace(0, trajectory.time.shape[0] - 1, samples).round().astype(int))
    base = dynamic_model.base
    full = mechanism.observation_matrix(dynamic_model.drive_chain, dynamic_model.terms, motion.rows(index))
    return normalised_condition(base.select(full).reshape(-1, base.count))


def _half_ranges(limits: JointLimits) -> tuple[np.ndarray, np.ndarray]:
    """Centre (:attr:`~.safety.JointLimits.centre`) and half-range used to place offsets, rad (π for unbounded
    joints)."""
    finite = np.isfinite(limits.lower) & np.isfinite(limits.upper)
    half = np.where(finite, 0.5 * (limits.upper - limits.lower), _UNBOUNDED_HALF_RANGE)
    return limits.centre, half


def fit_scales(
    offsets: np.ndarray, motion: tuple[np.ndarray, np.ndarray, np.ndarray], limits: JointLimits
) -> np.ndarray:
    """Per-joint factors that bring the oscillation ``motion = (q − q0, q̇, q̈)`` exactly to the limits."""
    deviation, dq, ddq = motion
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.stack(
            [
                deviation.max(axis=0) / (limits.upper - offsets),
                -deviation.min(axis=0) / (offsets - limits.lower),
                np.abs(dq).max(axis=0) / limits.velocity,
                np.abs(ddq).max(axis=0) / limits.acceleration,
            ]
        )
    ratios = np.nan_to_num(ratios, nan=0.0, posinf=np.inf, neginf=0.0)
    worst = ratios.max(axis=0)
    return np.where(worst > 0.0, _FILL / np.where(worst > 0.0, worst, 1.0), 1.0)


def _check_offsets(offsets: np.ndarray, limits: JointLimits) -> None:
    if offsets.shape != limits.lower.shape:
        raise IdentificationError(f"trajectory has {offsets.shape[0]} joints, limits have {limits.lower.shape[0]}")
    outside = (offsets <= limits.lower) | (offsets >= limits.upper)
    if outside.any():
        j = int(np.argmax(outside))
        raise IdentificationError(
            f"offset of {limits.joint_names[j]} ({offsets[j]:.6g} rad) is not inside its range"
            f" [{limits.lower[j]:.6g}, {limits.upper[j]:.6g}] rad"
        )


def fit_to_limits(trajectory: FourierTrajectory, limits: JointLimits, *, samples: int) -> FourierTrajectory:
    """Scale each joint's oscillation around its offset so it just fits the limits.

    On ``samples`` equally spaced times of one period, joint ``j``'s oscillation
    ``q_j − q_{0,j}`` (and with it ``q̇_j``, ``q̈_j``) is multiplied by the largest factor
    that keeps positions in ``[lower, upper]``, ``|q̇| <= velocity`` and
    ``|q̈| <= acceleration``, less a ``1e-4`` fraction for peaks between samples. Joints
    that do not move are left alone. Scales up as well as down.

    Raises
    ------
    IdentificationError
        When an offset is not strictly inside its position range.
    """
    offsets = np.asarray(trajectory.offsets, dtype=float)
    _check_offsets(offsets, limits)
    q, dq, ddq = trajectory.evaluate(period_grid(trajectory, samples))
    return trajectory.scaled(fit_scales(offsets, (q - offsets, dq, ddq), limits))


def _workspace_limits(limits: MechanismLimits, workspace: Workspace | None) -> MechanismLimits:
    """``limits`` with the controlled joints' ranges narrowed to ``workspace``'s."""
    if workspace is None or (workspace.lower is None and workspace.upper is None):
        return limits
    n = len(limits.actuated.joint_names)
    for name in ("lower", "upper"):
        value = getattr(workspace, name)
        if value is not None and np.shape(value) != (n,):
            raise IdentificationError(f"workspace.{name} must have {n} entries, got shape {np.shape(value)}")
    return replace(limits, actuated=limits.actuated.restricted(lower=workspace.lower, upper=workspace.upper))


class _Tool:
    """Forward kinematics of the frame a workspace box restricts."""

    def __init__(self, mechanism: Mechanism, workspace: Workspace) -> None:
        if mechanism.passive.shape[0] > 0:
            raise IdentificationError(
                "an end-effector box needs a serial chain (its tool's position from the controlled joints alone):"
                " restrict a closed-loop robot's controlled joints with workspace lower/upper"
            )
        robot = mechanism.robot
        model = robot.model
        if workspace.frame is None:
            self.frame_id = model.nframes - 1
        elif model.existFrame(workspace.frame):
            self.frame_id = model.getFrameId(workspace.frame)
        else:
            names = [frame.name for frame in model.frames]
            raise IdentificationError(f"workspace.frame {workspace.frame!r} is not a frame of the model ({names})")
        self.robot = robot
        self.data = model.createData()
        self.low = np.asarray(workspace.box_min, dtype=float)
        self.high = np.asarray(workspace.box_max, dtype=float)

    def positions(self, q: np.ndarray) -> np.ndarray:
        """Frame origins in the base frame, m, shape ``(N, 3)``."""
        model, data, frame = self.robot.model, self.data, self.frame_id
        out = np.empty((q.shape[0], 3))
        for k, configuration in enumerate(self.robot.configurations(q)):
            pin.forwardKinematics(model, data, configuration)
            out[k] = pin.updateFramePlacement(model, data, frame).translation
        return out

    def excess(self, q: np.ndarray) -> float:
        """Largest distance (m, per axis) by which the frame leaves the box; 0 inside."""
        positions = self.positions(q)
        return float(max(np.max(positions - self.high, initial=0.0), np.max(self.low - positions, initial=0.0)))

    def shrink(
        self, offsets: np.ndarray, deviation: np.ndarray, *, steps: int, cancellation: Cancellation = NEVER
    ) -> float | None:
        """Largest scale ``s`` (bisection) with ``q0 + s (q − q0)`` in the box; ``None`` if the offset pose is not."""
        if self.excess(offsets[None, :]) > 0.0:
            return None
        if self.excess(offsets + deviation) == 0.0:
            return 1.0
        return _bisect_scale(
            lambda scale: self.excess(offsets + scale * deviation) == 0.0,
            infeasible=1.0,
            steps=steps,
            cancellation=cancellation,
        )


def _bisect_scale(
    feasible: Callable[[float], bool], *, infeasible: float, steps: int, cancellation: Cancellation = NEVER
) -> float:
    """The largest scale toward the offset pose found feasible by ``steps`` bisections of ``[0, infeasible]``.

    ``0`` (the offset pose) is taken as feasible and ``infeasible`` as not; each step
    halves the bracket by one call of ``feasible``, after a poll of ``cancellation`` (a
    step of the final fit evaluates a whole period at 1 kHz). Returns the feasible end of
    the last bracket (0 when no scale tried was feasible).
    """
    low, high = 0.0, infeasible
    for _ in range(steps):
        cancellation.check()
        middle = 0.5 * (low + high)
        if feasible(middle):
            low = middle
        else:
            high = middle
    return low


def _into_box(
    trajectory: FourierTrajectory, tool: _Tool, grid: np.ndarray, *, steps: int, cancellation: Cancellation = NEVER
) -> FourierTrajectory:
    """Scale all joints toward the offset pose until the tool stays in the box on ``grid``."""
    q, _, _ = trajectory.evaluate(grid)
    scale = tool.shrink(trajectory.offsets, q - trajectory.offsets, steps=steps, cancellation=cancellation)
    if scale is None:
        position = tool.positions(trajectory.offsets[None, :])[0]
        raise IdentificationError(
            f"the offset pose puts the tool at {np.round(position, 4).tolist()} m, outside the workspace box"
            f" [{tool.low.tolist()}, {tool.high.tolist()}] m"
        )
    return trajectory if scale == 1.0 else trajectory.scaled(scale)


MINIMUM_SCALE = 0.1
"""A design whose shrink toward its offset pose keeps less than this fraction of the motion the controlled joints'
limits allow is refused: the mechanism's other constraints leave too little motion to excite the dynamics."""

_FINAL_RETRIES = 5
"""Times the final shrink is reduced by :data:`_RETRY_FACTOR` when the verification at :data:`CHECK_RATE_HZ` fails."""

_RETRY_FACTOR = 0.98


@dataclass(frozen=True)
class _SearchShape:
    """Points per period of the cost, the fewest allowed, the differential-evolution population, and the bisection
    steps of a candidate's shrink into the limits and of the final one (:func:`_within_limits`), and the rate, Hz, of
    the final one's grid."""

    samples: int
    min_samples: int
    population: int
    shrink_steps: int
    final_steps: int
    final_rate_hz: float


_SERIAL_SHAPE = _SearchShape(
    samples=200,
    min_samples=2,
    population=_POPULATION,
    shrink_steps=_BOX_BISECTIONS,
    final_steps=20,
    final_rate_hz=TORQUE_CHECK_RATE_HZ,
)
_CLOSED_LOOP_SHAPE = _SearchShape(
    samples=100,
    min_samples=8,
    population=_POPULATION // 2,
    shrink_steps=4,
    final_steps=8,
    final_rate_hz=80.0,
)
"""A candidate of a mechanism with closures costs motion completions (Newton on the loops, [Briot2012] eq. (2)) on
each probe of its shrink, and most candidates need the shrink: half the points and the population, four bisection
steps (within 1/16 of the feasible scale), eight in the final shrink on 80 points a second (then verified at
:data:`CHECK_RATE_HZ`), and the grid dense enough (a few tenths of a radian between points) for the loops to be
followed."""


def _shape(mechanism: Mechanism) -> _SearchShape:
    """The search's shape for ``mechanism``: :data:`_CLOSED_LOOP_SHAPE` with passive joints."""
    return _CLOSED_LOOP_SHAPE if mechanism.passive.shape[0] > 0 else _SERIAL_SHAPE


def _within_limits(
    trajectory: FourierTrajectory,
    probe: LimitProbe,
    grid: np.ndarray,
    *,
    shape: _SearchShape,
    cancellation: Cancellation = NEVER,
) -> tuple[FourierTrajectory, Probe, np.ndarray]:
    """Scale all controlled joints toward the offset pose until the motion, completed to the tree, keeps what
    ``probe`` measures (passive limits, singularity margin, torques, self-collision clearance): ``shape.final_steps``
    bisections on the instants of ``grid`` ``shape.final_rate_hz`` apart, then verified on all of ``grid``
    (:data:`CHECK_RATE_HZ`; the torques every :data:`~.safety.TORQUE_CHECK_RATE_HZ` instant), shrunk by
    :data:`_RETRY_FACTOR` while it fails. Returns the trajectory, its probe on ``grid`` and the tree configuration
    of its offset pose.

    Raises
    ------
    IdentificationError
        When the offset pose cannot be reached or already breaks a limit at rest, when less than
        :data:`MINIMUM_SCALE` of the motion is left, or when the verification keeps failing.
    """
    offsets = np.asarray(trajectory.offsets, dtype=float)
    limits = probe.limits
    where = f"around the offset pose q_a = {np.round(offsets, 4).tolist()} rad"
    q_offset, rest = probe.offset_pose(offsets)
    if q_offset is None or rest.worst > 1.0:
        raise IdentificationError(f"no excitation {where}: the offset pose is not feasible, {rest.reason}")
    step = max(1, int(round(CHECK_RATE_HZ / TORQUE_CHECK_RATE_HZ)))
    coarse = grid[:: max(1, int(round(CHECK_RATE_HZ / shape.final_rate_hz)))]
    first = probe.probe(*trajectory.evaluate(coarse), q_offset)
    if first.worst > 1.0:
        cancellation.check()
        at_rest = probe.probe(*trajectory.scaled(0.0).evaluate(coarse[:1]), q_offset)
        if at_rest.worst > 1.0:
            raise IdentificationError(
                f"holding the offset pose q_a = {np.round(offsets, 4).tolist()} rad at rest already breaks the effort"
                f" limits or the self-collision margin: {at_rest.reason}"
            )
        scale = _bisect_scale(
            lambda middle: probe.probe(*trajectory.scaled(middle).evaluate(coarse), q_offset).worst <= 1.0,
            infeasible=1.0,
            steps=shape.final_steps,
            cancellation=cancellation,
        )
        if scale < MINIMUM_SCALE:
            binding = probe.probe(*trajectory.scaled(MINIMUM_SCALE).evaluate(coarse), q_offset).reason
            kept = (
                f"the closed-loop constraints (singularity margin {limits.singularity_margin:g})"
                if probe.closed
                else "the effort limits and the self-collision margin"
            )
            raise IdentificationError(
                f"no excitation {where} keeps {kept} with more than {MINIMUM_SCALE:.0%} of the motion the controlled"
                f" joints' limits allow: shrunk to {scale:.1%}, {binding or first.reason}"
            )
        trajectory = trajectory.scaled(scale)
    for _ in range(_FINAL_RETRIES):
        cancellation.check()
        final = probe.probe(*trajectory.evaluate(grid), q_offset, observe=False, torque_every=step)
        if final.worst <= 1.0:
            return trajectory, final, q_offset
        trajectory = trajectory.scaled(_RETRY_FACTOR)
    raise IdentificationError(
        f"no excitation {where} keeps the passive limits, the singularity margin {limits.singularity_margin:g},"
        f" the torques and the self-collision margin: {final.reason}"
    )


def _dense_grid(trajectory: FourierTrajectory) -> np.ndarray:
    return period_grid(trajectory, max(int(np.ceil(trajectory.period_s * CHECK_RATE_HZ)), _FIT_SAMPLES))


def _finalise(
    trajectory: FourierTrajectory,
    limits: MechanismLimits,
    tool: _Tool | None,
    probe: LimitProbe,
    cancellation: Cancellation = NEVER,
) -> tuple[FourierTrajectory, LimitUsage, Probe | None]:
    """Fit the controlled joints at :data:`CHECK_RATE_HZ`, keep the box and what ``probe`` measures, then check;
    returns the trajectory, its limit usage and (when ``probe`` constrains anything) its completed motion's probe
    at :data:`CHECK_RATE_HZ`."""
    grid = _dense_grid(trajectory)
    fitted = fit_to_limits(trajectory, limits.actuated, samples=grid.shape[0])
    if tool is not None:
        fitted = _into_box(fitted, tool, grid, steps=20, cancellation=cancellation)
        excess = tool.excess(fitted.evaluate(grid)[0])
        if excess > 0.0:
            raise IdentificationError(f"the excitation leaves the workspace box by {excess:.3g} m")
    final = None
    if probe.constrains:
        shape = _shape(probe.mechanism)
        fitted, final, _ = _within_limits(fitted, probe, grid, shape=shape, cancellation=cancellation)
    sampled = sample(fitted, grid, limits.actuated.joint_names)
    check_trajectory(sampled, limits.actuated, cancellation=cancellation)
    return fitted, limit_usage(sampled, limits.actuated, cancellation=cancellation), final


def random_fourier(
    robot: RobotModel | Mechanism,
    limits: JointLimits | MechanismLimits,
    *,
    fundamental_hz: float = 0.1,
    harmonics: int = 5,
    seed: int = 0,
    workspace: Workspace | None = None,
    torque_model: TorqueModel | None = None,
    collision: SelfCollisionModel | None = None,
    cancellation: Cancellation = NEVER,
) -> FourierTrajectory:
    """The random-coefficient baseline: same limits (and workspace), no optimisation.

    Offsets at the centre of each (workspace-restricted) range of the controlled joints;
    coefficients ``a_{k,j}, b_{k,j}`` standard normal (seeded); each joint fitted to its
    limits by :func:`fit_to_limits` at :data:`CHECK_RATE_HZ`, then all joints scaled
    toward the centre pose until, with a workspace box, the tool stays in the box and the
    motion completed to the tree keeps the passive limits and the singularity margin of a
    :class:`~.constraints.MechanismLimits`, ``torque_model``'s torques and, with
    ``collision``, the self-collision margin (:func:`_within_limits`).

    ``cancellation`` is polled through the final fit and checks (a long period takes long).

    Raises
    ------
    IdentificationError
        On bad settings, when the centre pose already leaves the box or breaks a limit, or
        when no shrink makes the motion feasible.
    PlanningCancelled
        When ``cancellation`` is requested before the trajectory is checked.
    """
    mechanism = mechanism_of(robot)
    constraints = as_mechanism_limits(limits)
    _check_settings(mechanism, constraints, fundamental_hz, harmonics)
    effective = _workspace_limits(constraints, workspace)
    rng = np.random.default_rng(seed)
    n = mechanism.n_actuated
    raw = FourierTrajectory(
        fundamental_hz=float(fundamental_hz),
        offsets=effective.actuated.centre,
        sine=rng.normal(size=(harmonics, n)),
        cosine=rng.normal(size=(harmonics, n)),
    )
    tool = _Tool(mechanism, workspace) if workspace is not None and workspace.has_box else None
    probe = LimitProbe(mechanism, effective, torque_model, collision=collision, cancellation=cancellation)
    trajectory, _, _ = _finalise(raw, effective, tool, probe, cancellation)
    return trajectory


def _check_settings(mechanism: Mechanism, limits: MechanismLimits, fundamental_hz: float, harmonics: int) -> None:
    if not (np.isfinite(fundamental_hz) and fundamental_hz > 0.0):
        raise IdentificationError(f"fundamental_hz must be > 0, got {fundamental_hz}")
    if harmonics < 1:
        raise IdentificationError(f"harmonics must be >= 1, got {harmonics}")
    if limits.actuated.joint_names != mechanism.actuated_joint_names:
        raise IdentificationError(
            f"limits name joints {list(limits.actuated.joint_names)}, the robot's controlled joints are"
            f" {list(mechanism.actuated_joint_names)}"
        )
    passive_joints = tuple(mechanism.joint_names[int(j)] for j in mechanism.passive)
    if limits.passive.joint_names != passive_joints:
        raise IdentificationError(
            f"limits.passive name joints {list(limits.passive.joint_names)}, the mechanism's passive joints are"
            f" {list(passive_joints)}"
        )


SEARCH_STAGE = "Fourier search"
"""The stage a Fourier design's search reports (:meth:`BudgetedSearch.watch`)."""


class BudgetSpent(Exception):
    """Raised inside the cost to stop a SciPy stage when its budget is spent."""


class BudgetedSearch:
    """The evaluations of a search's cost counted against the budget of its stage, and the best candidate seen.

    A cost calls :meth:`spend` first and returns through :meth:`record`; the SciPy stage it
    runs in stops with :class:`BudgetSpent` once :meth:`stage`'s budget is spent, and the
    whole search with :class:`~dynamic_identification.core.errors.PlanningCancelled` once
    ``cancellation`` is requested. Every designer's search (serial, closed-loop, payload)
    evaluates its candidates through :meth:`spend`: the one place a search is stopped.
    """

    def __init__(self, cancellation: Cancellation = NEVER) -> None:
        self.cancellation = cancellation
        self.evaluations = 0
        self.best_cost = np.inf
        self.best_x: np.ndarray | None = None
        self.stop_evaluations: float = np.inf
        self.deadline: float = np.inf
        self.time_capped = False
        """Whether the wall-time deadline, not the evaluation budget, ended a stage: the result then depends on the
        machine's speed and load."""
        self._watched: tuple[str, float, float, float] | None = None

    def watch(self, name: str, *, start: float, time_budget_s: float, max_evaluations: float | None) -> None:
        """Report the search as the stage ``name`` to ``cancellation``'s progress at every evaluation, against
        its whole budget: the wall time from ``start`` (``time.perf_counter``, s) within ``time_budget_s``, or the
        ``max_evaluations``: in evaluations when they are bounded (the wall time is then a cap), else in s of the
        time budget."""
        self._watched = (name, start, time_budget_s, np.inf if max_evaluations is None else float(max_evaluations))

    def spend(self) -> None:
        """Count one evaluation of the cost, or raise :class:`BudgetSpent` when the stage's budget is spent.

        The first candidate is always evaluated, so a loaded machine still gets a design.
        Raises :class:`~dynamic_identification.core.errors.PlanningCancelled`, before any
        evaluation, once ``cancellation`` is requested; reports the budget spent (:meth:`watch`).
        """
        self.cancellation.check()
        now = time.perf_counter()
        counted = self.evaluations >= self.stop_evaluations
        if (counted or now >= self.deadline) and self.best_x is not None:
            self.time_capped = self.time_capped or not counted
            raise BudgetSpent
        self.evaluations += 1
        self._report(now)

    def finished(self) -> None:
        """Report the search's budget spent: it ended (:meth:`watch`)."""
        self._report(np.inf)

    def _report(self, now: float) -> None:
        """The budget spent at ``now`` (``time.perf_counter``, s) to ``cancellation``'s progress, when watched."""
        if self._watched is None:
            return
        name, start, seconds, evaluations = self._watched
        if np.isfinite(evaluations):
            self.cancellation.report(
                name, self.evaluations if np.isfinite(now) else evaluations, evaluations, "evaluations"
            )
        else:
            used = seconds * min(max((now - start) / seconds, 0.0), 1.0)
            self.cancellation.report(name, used, seconds, "s")

    def record(self, x: np.ndarray, value: float) -> float:
        """``value``, the cost of ``x``, kept when it is the best so far."""
        if value < self.best_cost:
            self.best_cost, self.best_x = value, np.array(x, dtype=float)
        return value

    def stage(self, *, evaluations: float, deadline: float) -> None:
        """Let the next stage run until ``evaluations`` costs in all or the ``deadline`` (``time.perf_counter``, s)."""
        self.stop_evaluations = evaluations
        self.deadline = deadline


class FourierSearch(BudgetedSearch):
    """The decision vector of a Fourier excitation search, the best candidate seen and the budget.

    The decision vector ``x`` in ``[-1, 1]`` holds, for the ``n`` joints of ``limits`` and
    ``harmonics`` harmonics, the offsets (placed in the middle :data:`_OFFSET_FRACTION` of
    each half-range around its centre, ±π for an unbounded joint), then the raw sine and
    cosine coefficients ([Volkmann2020] eq. (6)); :meth:`decode` fits each joint's
    oscillation to ``limits``. A subclass gives the cost.

    Parameters
    ----------
    limits
        Limits of the joints the trajectory moves.
    fundamental_hz, harmonics
        The Fourier series.
    samples
        Points per period of the cost grid (:attr:`cost_basis`).
    cancellation
        Polled before every evaluation of the cost (:meth:`BudgetedSearch.spend`).
    """

    def __init__(
        self,
        limits: JointLimits,
        *,
        fundamental_hz: float,
        harmonics: int,
        samples: int,
        cancellation: Cancellation = NEVER,
    ) -> None:
        super().__init__(cancellation)
        self.fit_limits, self.n = limits, len(limits.joint_names)
        self.centre, self.half = _half_ranges(limits)
        self.fundamental_hz, self.harmonics = fundamental_hz, harmonics
        period = 1.0 / fundamental_hz
        omega = 2.0 * np.pi * fundamental_hz * np.arange(1, harmonics + 1)
        self.fit_basis = fourier_basis(np.arange(_FIT_SAMPLES) * (period / _FIT_SAMPLES), omega)
        self.cost_basis = fourier_basis(np.arange(samples) * (period / samples), omega)

    @property
    def size(self) -> int:
        return self.n * (1 + 2 * self.harmonics)

    def cost(self, x: np.ndarray) -> float:
        """The cost of decision vector ``x``: ``log κ`` of its observation matrix, or a penalty."""
        raise NotImplementedError

    def decode(self, x: np.ndarray) -> FourierTrajectory:
        """Trajectory of decision vector ``x`` (in ``[-1, 1]``), each joint fitted to its limits on the fit grid."""
        n, h = self.n, self.harmonics
        offsets = self.centre + _OFFSET_FRACTION * self.half * x[:n]
        sine = x[n : n + h * n].reshape(h, n)
        cosine = x[n + h * n :].reshape(h, n)
        qs, qc, vs, vc, acs, acc = self.fit_basis
        motion = (qs @ sine + qc @ cosine, vs @ sine + vc @ cosine, acs @ sine + acc @ cosine)
        scale = fit_scales(offsets, motion, self.fit_limits)
        return FourierTrajectory(self.fundamental_hz, offsets, sine * scale, cosine * scale)


def fourier_basis(grid: np.ndarray, omega: np.ndarray) -> tuple[np.ndarray, ...]:
    """Matrices mapping ``(a, b)`` to ``q − q0``, ``q̇``, ``q̈`` on ``grid`` ([Volkmann2020] eq. (6), :mod:`.fourier`)."""
    phase = grid[:, None] * omega
    sin, cos = np.sin(phase), np.cos(phase)
    return sin / omega, -cos / omega, cos, sin, -sin * omega, cos * omega


@dataclass(frozen=True)
class SearchBudget:
    """What a seeded excitation search may spend, and its seed.

    Attributes
    ----------
    start
        ``time.perf_counter()`` (s) when the design began: the wall-time budget counts from it.
    time_budget_s
        Wall-time budget, s.
    max_evaluations
        Cost-evaluation budget; ``None``: bounded by the time only.
    seed
        Seeds the population and the mutations.
    population
        Individuals of the differential-evolution population.
    """

    start: float
    time_budget_s: float
    max_evaluations: int | None
    seed: int
    population: int

    def check(self, samples: int, min_samples: int) -> None:
        """Refuse the budget: ``time_budget_s`` (s) not > 0, fewer ``samples`` than ``min_samples`` per period,
        or fewer ``max_evaluations`` than two generations of the population.

        Raises
        ------
        IdentificationError
            Naming the setting and its value.
        """
        if not self.time_budget_s > 0.0:
            raise IdentificationError(f"time_budget_s must be > 0, got {self.time_budget_s}")
        if samples < min_samples:
            raise IdentificationError(f"samples must be >= {min_samples}, got {samples}")
        if self.max_evaluations is not None and self.max_evaluations < 2 * self.population:
            raise IdentificationError(f"max_evaluations must be >= {2 * self.population}, got {self.max_evaluations}")


def run_search(search: FourierSearch, budget: SearchBudget, *, centre_first: bool) -> np.ndarray:
    """The best decision vector of ``search.cost`` within ``budget``.

    A quarter (:data:`_GLOBAL_SHARE`) of the time and evaluation budgets goes to
    :func:`scipy.optimize.differential_evolution` (seeded Latin-hypercube population of
    ``budget.population`` individuals, the first at the centre offsets with ``centre_first``; no
    polishing), the rest to bounded Powell refinements of the best candidate, restarted
    while they improve by :data:`_RESTART_GAIN`; ``search`` keeps the best cost and scale.

    Raises
    ------
    IdentificationError
        When ``time_budget_s`` left no time to evaluate a candidate.
    PlanningCancelled
        When ``search.cancellation`` is requested: at the next cost evaluation, in either stage.
    """
    start, time_budget_s = budget.start, budget.time_budget_s
    total = np.inf if budget.max_evaluations is None else float(budget.max_evaluations)
    bounds = [(-1.0, 1.0)] * search.size
    rng = np.random.default_rng(budget.seed)
    # Imported here: scipy.stats is a third of a second of imports that the planner needs for this draw only.
    from scipy.stats import qmc

    initial = 2.0 * qmc.LatinHypercube(d=search.size, rng=rng).random(budget.population) - 1.0
    if centre_first:
        initial[0, : search.n] = 0.0
    search.watch(SEARCH_STAGE, start=start, time_budget_s=time_budget_s, max_evaluations=budget.max_evaluations)
    search.stage(evaluations=_GLOBAL_SHARE * total, deadline=start + _GLOBAL_SHARE * time_budget_s)
    try:
        scipy.optimize.differential_evolution(
            search.cost, bounds, init=initial, maxiter=1_000_000, tol=0.0, polish=False, rng=rng
        )
    except BudgetSpent:
        pass
    search.stage(evaluations=total, deadline=start + time_budget_s)
    try:
        # Powell stalls on the non-smooth cost (max/min singular values, max-based fitting);
        # restarting it from its own result with fresh directions keeps improving.
        previous = np.inf
        while search.best_x is not None and search.best_cost < previous - _RESTART_GAIN:
            previous = search.best_cost
            scipy.optimize.minimize(search.cost, search.best_x, method="Powell", bounds=bounds)
    except BudgetSpent:
        pass
    if search.best_x is None:
        raise IdentificationError(f"time_budget_s = {time_budget_s} s left no time to evaluate a candidate")
    search.finished()
    return search.best_x


class _Search(FourierSearch):
    """Cost of the decision vector of a mechanism's excitation, the best candidate seen, the closest infeasible
    offset, and the budget."""

    def __init__(
        self,
        probe: LimitProbe,
        base: BaseParameters,
        tool: _Tool | None,
        *,
        fundamental_hz: float,
        harmonics: int,
        samples: int,
        shrink_steps: int = _BOX_BISECTIONS,
        collision: SelfCollisionModel | None = None,
    ) -> None:
        self.probe, self.base, self.tool, self.collision = probe, base, tool, collision
        self.shrink_steps = shrink_steps
        super().__init__(
            probe.limits.actuated,
            fundamental_hz=fundamental_hz,
            harmonics=harmonics,
            samples=samples,
            cancellation=probe.cancellation,
        )
        self.closest: tuple[float, str] = (np.inf, "")

    def cost(self, x: np.ndarray) -> float:
        """``log κ`` of the decoded candidate on the cost grid, shrunk toward its offset pose into the box and the
        limits the probe measures; penalised when its offset pose fails, when no shrink is feasible, or when it
        would be the best so far and brings two links within the self-collision margin on the grid."""
        self.spend()
        trajectory = self.decode(np.asarray(x, dtype=float))
        offsets = trajectory.offsets
        scale = 1.0
        if self.tool is not None:
            qs, qc, _, _, _, _ = self.cost_basis
            deviation = qs @ trajectory.sine + qc @ trajectory.cosine
            shrink = self.tool.shrink(offsets, deviation, steps=_BOX_BISECTIONS, cancellation=self.cancellation)
            if shrink is None:
                excess = self.tool.excess(offsets[None, :])
                self._closer(1.0 + excess, f"the tool leaves the workspace box by {excess:.3g} m", offsets)
                return self.record(x, _INFEASIBLE_COST + excess)
            scale = shrink
        q_offset, rest = self.probe.offset_pose(offsets)
        if q_offset is None or rest.worst > 1.0:
            self._closer(rest.worst, rest.reason, offsets)
            return self.record(x, _INFEASIBLE_COST + min(rest.worst - 1.0, 10.0))
        probe = self.probe.probe(*self._motion(trajectory, scale), q_offset)
        if probe.worst > 1.0:
            feasible: dict[float, Probe] = {}

            def keeps_limits(middle: float) -> bool:
                trial = self.probe.probe(*self._motion(trajectory, middle), q_offset)
                if trial.worst <= 1.0:
                    feasible[middle] = trial
                return trial.worst <= 1.0

            scale = _bisect_scale(
                keeps_limits, infeasible=scale, steps=self.shrink_steps, cancellation=self.cancellation
            )
            if scale == 0.0:
                return self.record(x, _INFEASIBLE_COST)
            probe = feasible[scale]
        if probe.observed is None or probe.motion is None:
            return self.record(x, _INFEASIBLE_COST)
        kappa = gram_condition(gram_matrix(self.base.select(probe.observed).reshape(-1, self.base.count)))
        value = float(np.log(min(kappa, 1e12)))
        # Checked only for a new best: a collision test costs about ten cost evaluations.
        if self.collision is not None and value < self.best_cost:
            if self.collision.first_collision(probe.motion.q) is not None:
                value = _COLLIDING_COST
        return self.record(x, value)

    def _closer(self, worst: float, reason: str, offsets: np.ndarray) -> None:
        """Keep ``reason`` when the offset pose ``offsets`` is the closest miss so far."""
        if worst < self.closest[0] or not self.closest[1]:
            self.closest = (worst, f"at q_a = {np.round(offsets, 3).tolist()} rad, {reason}")

    def _motion(self, trajectory: FourierTrajectory, scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``q, q̇, q̈`` of the controlled joints on the cost grid of ``trajectory`` with its oscillation scaled by
        ``scale``."""
        qs, qc, vs, vc, acs, acc = self.cost_basis
        sine, cosine = trajectory.sine * scale, trajectory.cosine * scale
        return trajectory.offsets + qs @ sine + qc @ cosine, vs @ sine + vc @ cosine, acs @ sine + acc @ cosine


def optimise_fourier(
    dynamic_model: DynamicModel,
    limits: JointLimits | MechanismLimits,
    *,
    fundamental_hz: float = 0.1,
    harmonics: int = 5,
    workspace: Workspace | None = None,
    seed: int = 0,
    time_budget_s: float = 60.0,
    samples: int | None = None,
    max_evaluations: int | None = None,
    torque_model: TorqueModel | None = None,
    collision: SelfCollisionModel | None = None,
    cancellation: Cancellation = NEVER,
) -> ExcitationDesign:
    """Fourier excitation of the controlled joints minimising the condition number of the normalised base
    observation matrix.

    [Volkmann2020] §II.C: ``n_h = 5`` harmonics of ``ω_b = 2π · 0.1 Hz``, coefficients chosen
    to minimise ``κ`` of the design matrix with unit-norm columns ([Gautier2013] convention)
    under the joint limits and, optionally, a restricted workspace (narrower joint
    ranges, an end-effector box checked with Pinocchio forward kinematics). The design
    matrix is the mechanism's IDIM: a serial robot's, or a closed-loop robot's
    ``τ_act = J_tᵀ φ_tree χ`` of its motion completed from the loop closures ([Briot2012]
    eq. (2)-(7)). The cost is ``log κ`` on ``samples`` points of one period. A quarter of
    the budget goes to :func:`scipy.optimize.differential_evolution` (seeded
    Latin-hypercube population, no polishing; with passive joints its first individual at
    the centre offsets), the rest to a bounded Powell refinement of the best candidate,
    restarted while it improves.

    Every candidate is feasible by construction (see the module docstring): each
    controlled joint fitted to its limits, then the whole oscillation shrunk toward the
    offset pose (bisection) into the box and into the limits a joint alone cannot keep
    (:class:`~.constraints.LimitProbe`): the passive joints' limits and the singularity
    margin of a :class:`~.constraints.MechanismLimits`, and the torques. Offset poses
    where the loops cannot be closed from the reference configuration, or that break
    the passive limits or the margin at rest, are penalised. The result is fitted and
    shrunk again at :data:`CHECK_RATE_HZ` (:func:`_within_limits`), with ``collision`` also
    into the self-collision margin.

    Parameters
    ----------
    dynamic_model
        The robot's IDIM in base parameters: a serial robot's or any
        :class:`~dynamic_identification.core.mechanism.seam.Mechanism`'s.
    limits
        Joint limits, margins applied (:meth:`~.safety.JointLimits.from_robot`), or a
        mechanism's (:class:`~.constraints.MechanismLimits`: controlled and passive joints,
        singularity margin).
    workspace
        Restrictions of the workspace; ``None`` uses the full joint ranges. Its box needs
        a serial chain.
    seed
        Seeds the population and the mutations.
    time_budget_s
        Wall-time budget, s; the search stops at the first evaluation past it.
    samples
        Points per period of the observation matrix in the cost; default 200, 100 with
        passive joints (:data:`_CLOSED_LOOP_SHAPE`).
    max_evaluations
        Cost-evaluation budget. With it and ``time_budget_s=math.inf`` the result
        depends only on ``seed``: use both for reproducible designs (a finite time
        budget may stop a loaded machine's search earlier).
    torque_model
        Torques of a candidate (nominal or identified model): a candidate whose
        torques exceed ``limits.effort`` is scaled toward its offset pose until they
        keep them (a constraint of the search, not a penalty).
    collision
        Self-collision of a candidate that would be the best so far, on the cost grid
        (:meth:`~.collision.SelfCollisionModel.first_collision`): such a candidate is
        penalised, so the search keeps to motions clear of the robot itself; the final
        shrink keeps the margin plus half the sweep between samples
        (:meth:`~.constraints.LimitProbe.required_clearance_m`). :func:`~.plan.plan_excitation`
        checks the executed motion.
    cancellation
        Polled before every cost evaluation and through the final fit and checks; a
        design that is not cancelled is the same as without it.

    Raises
    ------
    IdentificationError
        On bad settings; when no offset pose tried keeps the box and the mechanism's
        constraints (naming the closest miss: the box, loops that cannot be closed, a
        passive limit or the singularity margin); when the final shrink leaves less than
        :data:`MINIMUM_SCALE` of the motion or the final trajectory fails the 1 kHz check.
    PlanningCancelled
        When ``cancellation`` is requested before the design is done.
    """
    start = time.perf_counter()
    mechanism, drive_chain, terms = dynamic_model.mechanism, dynamic_model.drive_chain, dynamic_model.terms
    constraints = as_mechanism_limits(limits)
    _check_settings(mechanism, constraints, fundamental_hz, harmonics)
    shape = _shape(mechanism)
    samples = shape.samples if samples is None else samples
    budget = SearchBudget(start, time_budget_s, max_evaluations, seed, shape.population)
    budget.check(samples, min_samples=shape.min_samples)
    effective = _workspace_limits(constraints, workspace)
    tool = _Tool(mechanism, workspace) if workspace is not None and workspace.has_box else None
    search = _Search(
        LimitProbe(mechanism, effective, torque_model, observation=(drive_chain, terms), cancellation=cancellation),
        dynamic_model.base,
        tool,
        fundamental_hz=float(fundamental_hz),
        harmonics=harmonics,
        samples=samples,
        shrink_steps=shape.shrink_steps,
        collision=collision,
    )
    best = run_search(search, budget, centre_first=mechanism.passive.shape[0] > 0)
    if search.best_cost >= _INFEASIBLE_COST:
        raise IdentificationError(
            f"no offset pose of the controlled joints keeps the workspace box and the mechanism's constraints"
            f" (singularity margin {effective.singularity_margin:g}); closest of {search.evaluations} tried:"
            f" {search.closest[1] or 'no shrink toward it keeps the torques'}"
        )
    probe = LimitProbe(mechanism, effective, torque_model, collision=collision, cancellation=cancellation)
    trajectory, usage, final = _finalise(search.decode(best), effective, tool, probe, cancellation)
    motion = final.motion if final is not None and probe.closed else None
    return ExcitationDesign(
        trajectory=trajectory,
        condition_number=condition_number(dynamic_model, trajectory, samples=samples),
        usage=usage,
        evaluations=search.evaluations,
        wall_time_s=time.perf_counter() - start,
        limits=effective.actuated,
        time_capped=search.time_capped,
        singularity_ratio=(
            None if motion is None else float(1.0 / (np.max(passive_condition(motion)) * probe.reference_ratio))
        ),
        passive_usage=None if motion is None else passive_usage(motion, mechanism, effective.passive),
    )
