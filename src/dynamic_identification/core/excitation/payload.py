"""Fourier excitation for payload identification: only the last joints move ([Swevers2002] §3.1, §4.2).

To identify a load with the robot's parameters known, the whole robot need not move:
[Swevers2002] moves the wrist and one joint before it (axis 3 of the KUKA KR150) and
holds the others. With the wrist alone the centre of the wrist stays still and the
load's mass is not identifiable (their rank analysis, §4.2: 18 of 19): the default here
moves the last four joints for a 6-axis arm.

The moving joints follow a finite Fourier series of common period (eq. (15)-(17),
:class:`~dynamic_identification.core.excitation.fourier.FourierTrajectory`); the others
stay at the middle of their range (or at ``rest``). Coefficients and offsets are chosen to
minimise the condition number of the load's observation matrix ``Y_p`` (the 10 columns of
:func:`~dynamic_identification.core.mechanism.payload.payload_regressor`, rows of the moving joints)
with unit-norm columns, over one period: [Swevers2002] §4.2 uses the condition number of
the estimation Jacobian as the accuracy criterion. Friction and efficiency columns are
left out of the criterion: they are per-motor and excited by any motion of the motor.

The search is that of :func:`~dynamic_identification.core.excitation.optimisation.optimise_fourier`
in small: a seeded differential evolution then a bounded Powell refinement, every
candidate scaled to the joint limits by
:func:`~dynamic_identification.core.excitation.optimisation.fit_to_limits`, and the final
trajectory checked at 1 kHz (:func:`~dynamic_identification.core.excitation.safety.check_trajectory`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.optimize

from dynamic_identification.core.cancellation import NEVER, Cancellation
from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.fourier import FourierTrajectory
from dynamic_identification.core.excitation.optimisation import BudgetedSearch, BudgetSpent, fit_to_limits
from dynamic_identification.core.excitation.safety import (
    CHECK_RATE_HZ,
    JointLimits,
    LimitUsage,
    check_trajectory,
    limit_usage,
)
from dynamic_identification.core.excitation.trajectory import sample
from dynamic_identification.core.mechanism.payload import PayloadDynamics
from dynamic_identification.core.mechanism.robot import RobotModel

DEFAULT_MOVING_JOINTS = 4
"""Joints moved by default, counted from the end of the chain: the wrist and the joint before it."""

_OFFSET_FRACTION = 0.5
"""Offsets of the moving joints range over this fraction of each half-range around its centre."""

_FIT_SAMPLES = 500
"""Samples per period on which candidates are fitted to the limits."""


@dataclass(frozen=True)
class PayloadExcitationDesign:
    """An excitation for payload identification and how well it determines the load.

    Attributes
    ----------
    trajectory
        Fourier trajectory of all joints (the held ones have no harmonics).
    moving
        Names of the joints that move.
    condition_number
        Of the column-normalised ``Y_p`` of the moving joints over one period.
    usage
        Fractions of the limits used, checked at :data:`~.safety.CHECK_RATE_HZ`.
    evaluations
        Cost evaluations spent.
    wall_time_s
        Wall time of the search, s.
    time_capped
        Whether the wall-time budget, not ``max_evaluations``, ended the search.
    """

    trajectory: FourierTrajectory
    moving: tuple[str, ...]
    condition_number: float
    usage: LimitUsage
    evaluations: int
    wall_time_s: float
    time_capped: bool = False


class _Cost(BudgetedSearch):
    """``log κ(Y_p)`` of a decision vector in ``[-1, 1]``, and the best vector seen."""

    def __init__(
        self,
        robot: RobotModel,
        frame: str,
        limits: JointLimits,
        moving: np.ndarray,
        rest: np.ndarray,
        *,
        fundamental_hz: float,
        harmonics: int,
        samples: int,
        max_evaluations: int,
        deadline: float,
        cancellation: Cancellation = NEVER,
    ) -> None:
        super().__init__(cancellation)
        self.stage(evaluations=max_evaluations, deadline=deadline)
        self.dynamics = PayloadDynamics(robot, frame)
        self.limits, self.moving, self.rest = limits, moving, rest
        self.fundamental_hz, self.harmonics = fundamental_hz, harmonics
        self.grid = np.arange(samples) / (samples * fundamental_hz)
        self.centre = 0.5 * (limits.lower + limits.upper)
        self.half = 0.5 * (limits.upper - limits.lower)

    @property
    def size(self) -> int:
        return int(self.moving.size * (1 + 2 * self.harmonics))

    def decode(self, x: np.ndarray, *, samples: int = _FIT_SAMPLES) -> FourierTrajectory:
        m, h = self.moving.size, self.harmonics
        n = self.rest.size
        offsets = self.rest.copy()
        offsets[self.moving] = self.centre[self.moving] + _OFFSET_FRACTION * self.half[self.moving] * x[:m]
        sine, cosine = np.zeros((h, n)), np.zeros((h, n))
        sine[:, self.moving] = x[m : m + h * m].reshape(h, m)
        cosine[:, self.moving] = x[m + h * m :].reshape(h, m)
        return fit_to_limits(
            FourierTrajectory(self.fundamental_hz, offsets, sine, cosine), self.limits, samples=samples
        )

    def condition(self, trajectory: FourierTrajectory) -> float:
        q, dq, ddq = trajectory.evaluate(self.grid)
        rows = np.stack([self.dynamics.regressor(q[k], dq[k], ddq[k]) for k in range(q.shape[0])])
        stacked = rows[:, self.moving, :].reshape(-1, 10)
        norms = np.linalg.norm(stacked, axis=0)
        if np.any(norms <= 1e-12 * max(float(norms.max()), 1e-300)):
            return float("inf")
        singular = np.linalg.svd(stacked / norms, compute_uv=False)
        return float(singular[0] / singular[-1]) if singular[-1] > 0.0 else float("inf")

    def __call__(self, x: np.ndarray) -> float:
        self.spend()
        return self.record(x, float(np.log(min(self.condition(self.decode(np.asarray(x, dtype=float))), 1e12))))


def optimise_payload_excitation(
    robot: RobotModel,
    frame: str,
    limits: JointLimits,
    *,
    moving: Sequence[str] | None = None,
    rest: Sequence[float] | np.ndarray | None = None,
    fundamental_hz: float = 0.1,
    harmonics: int = 5,
    samples: int = 100,
    seed: int = 0,
    max_evaluations: int = 1500,
    time_budget_s: float = 60.0,
    cancellation: Cancellation = NEVER,
) -> PayloadExcitationDesign:
    """Fourier excitation of a few joints minimising the condition number of the load's regressor.

    Parameters
    ----------
    robot, frame
        The robot and the frame the load is attached to.
    limits
        Joint limits, margins applied (:meth:`~.safety.JointLimits.from_robot`).
    moving
        Joints to move; default the last :data:`DEFAULT_MOVING_JOINTS` (the wrist and
        the joint before it: the wrist alone cannot give the mass, [Swevers2002] §4.2).
    rest
        Positions (rad) of the held joints, all ``n`` given (entries of moving joints
        ignored); default the middle of each range.
    fundamental_hz, harmonics
        ``ω_f / 2π`` (Hz) and the number of harmonics ``N_i`` of eq. (15).
    samples
        Points per period of ``Y_p`` in the cost.
    seed
        Seeds the differential evolution.
    max_evaluations, time_budget_s
        Budgets of the search (evaluations, wall time in s); with a generous time
        budget the result depends only on ``seed``.
    cancellation
        Polled before every cost evaluation and through the final check.

    Raises
    ------
    IdentificationError
        Unknown joint names, a frame unknown to the model (``ModelError``), bad
        settings, or a final trajectory that fails the limit check (never expected).
    PlanningCancelled
        When ``cancellation`` is requested before the design is done.
    """
    start = time.perf_counter()
    if not fundamental_hz > 0.0 or harmonics < 1 or samples < 2 or max_evaluations < 1:
        raise IdentificationError(
            f"need fundamental_hz > 0, harmonics >= 1, samples >= 2, max_evaluations >= 1; got {fundamental_hz},"
            f" {harmonics}, {samples}, {max_evaluations}"
        )
    if limits.joint_names != robot.joint_names:
        raise IdentificationError(f"limits name joints {list(limits.joint_names)}, robot has {list(robot.joint_names)}")
    names = list(robot.joint_names[-DEFAULT_MOVING_JOINTS:] if moving is None else moving)
    unknown = [name for name in names if name not in robot.joint_names]
    if unknown or not names:
        raise IdentificationError(f"moving must name joints of the robot {list(robot.joint_names)}, got {names}")
    index = np.array(sorted(robot.joint_names.index(name) for name in set(names)), dtype=int)
    centre = 0.5 * (np.asarray(limits.lower, dtype=float) + np.asarray(limits.upper, dtype=float))
    held = centre.copy() if rest is None else np.array(rest, dtype=float)
    if held.shape != (robot.n_joints,) or not np.all(np.isfinite(held)):
        raise IdentificationError(
            f"rest must be {robot.n_joints} finite positions (rad), got {np.asarray(rest).tolist()}"
        )
    held[index] = centre[index]
    cost = _Cost(
        robot,
        frame,
        limits,
        index,
        held,
        fundamental_hz=float(fundamental_hz),
        harmonics=harmonics,
        samples=samples,
        max_evaluations=max_evaluations,
        deadline=start + time_budget_s,
        cancellation=cancellation,
    )
    cost.watch(
        "payload search",
        start=start,
        time_budget_s=time_budget_s,
        max_evaluations=max_evaluations,
    )
    bounds = [(-1.0, 1.0)] * cost.size
    rng = np.random.default_rng(seed)
    try:
        scipy.optimize.differential_evolution(
            cost, bounds, popsize=max(2, 20 // cost.size + 1), maxiter=1_000_000, tol=0.0, polish=False, rng=rng
        )
    except BudgetSpent:
        pass
    try:
        if cost.best_x is not None:
            scipy.optimize.minimize(cost, cost.best_x, method="Powell", bounds=bounds)
    except BudgetSpent:
        pass
    if cost.best_x is None:
        raise IdentificationError(f"time_budget_s = {time_budget_s} s left no time to evaluate a candidate")
    cost.finished()
    grid = np.arange(int(np.ceil(CHECK_RATE_HZ / fundamental_hz))) / CHECK_RATE_HZ
    trajectory = cost.decode(cost.best_x, samples=grid.size)
    sampled = sample(trajectory, grid, robot.joint_names)
    check_trajectory(sampled, limits, cancellation=cancellation)
    return PayloadExcitationDesign(
        trajectory=trajectory,
        moving=tuple(robot.joint_names[i] for i in index),
        condition_number=cost.condition(trajectory),
        usage=limit_usage(sampled, limits, cancellation=cancellation),
        evaluations=cost.evaluations,
        wall_time_s=time.perf_counter() - start,
        time_capped=cost.time_capped,
    )
