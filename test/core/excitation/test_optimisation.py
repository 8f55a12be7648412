"""Fourier excitation optimised for the condition number ([Volkmann2020] §II.C) on the 6-axis arm."""

from __future__ import annotations

import math
import time

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation import optimisation
from dynamic_identification.core.excitation.fourier import FourierTrajectory
from dynamic_identification.core.excitation.optimisation import (
    ExcitationDesign,
    Workspace,
    condition_number,
    fit_to_limits,
    optimise_fourier,
    random_fourier,
    search_report,
)
from dynamic_identification.core.excitation.safety import JointLimits, check_trajectory, limit_usage
from dynamic_identification.core.excitation.settings import ExcitationSettings
from dynamic_identification.core.excitation.trajectory import sample
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel
from dynamic_identification.core.regressors.dynamic_model import DynamicModel

EVALUATIONS = 2000
"""Evaluation budget of the designs under test (a few seconds each); the bench runs 60 s."""

RESTRICTED = Workspace(
    lower=np.array([-1.0, -1.0, -1.5, -2.5, -1.5, -2.5]),
    upper=np.array([1.0, 0.8, 1.5, 2.5, 1.5, 2.5]),
    box_min=np.array([0.1, -0.5, 0.15]),
    box_max=np.array([0.7, 0.5, 0.9]),
)
"""A restricted workspace like [Volkmann2020] Fig. 2.c: a sector in front of the arm, above the table."""


@pytest.fixture(scope="module")
def chain(robot: RobotModel) -> DriveChain:
    return DriveChain.create(robot.n_joints, gear_ratios=np.full(robot.n_joints, 100.0))


@pytest.fixture(scope="module")
def dynamic_model(robot: RobotModel, chain: DriveChain) -> DynamicModel:
    return DynamicModel.create(robot, chain, DriveTerms())


@pytest.fixture(scope="module")
def full_design(dynamic_model, limits) -> ExcitationDesign:
    return optimise_fourier(
        dynamic_model,
        limits,
        max_evaluations=EVALUATIONS,
        time_budget_s=math.inf,
        seed=0,
    )


@pytest.fixture(scope="module")
def restricted_design(dynamic_model, limits) -> ExcitationDesign:
    return optimise_fourier(
        dynamic_model,
        limits,
        workspace=RESTRICTED,
        max_evaluations=EVALUATIONS,
        time_budget_s=math.inf,
        seed=0,
    )


def random_median(robot, dynamic_model, limits, workspace: Workspace | None) -> float:
    values = [
        condition_number(
            dynamic_model,
            random_fourier(robot, limits, seed=seed, workspace=workspace),
            samples=200,
        )
        for seed in range(3)
    ]
    return float(np.median(values))


def dense(trajectory: FourierTrajectory, limits: JointLimits, phase_s: float = 0.0):
    """One period at 1 kHz, optionally shifted between the samples the optimiser fitted on."""
    return sample(trajectory, phase_s + np.arange(0.0, trajectory.period_s, 1e-3), limits.joint_names)


def tool_positions(robot: RobotModel, q: np.ndarray) -> np.ndarray:
    model, data = robot.model, robot.model.createData()
    frame = model.nframes - 1
    positions = []
    for configuration in q:
        pin.framesForwardKinematics(model, data, configuration)
        positions.append(data.oMf[frame].translation.copy())
    return np.array(positions)


def test_full_range_design_reaches_seed_004_condition_number(full_design: ExcitationDesign) -> None:
    # [Volkmann2020] §III.B: 6.76 in the full workspace; the issue asks for <= 10.
    assert full_design.condition_number <= 10.0
    assert full_design.evaluations <= EVALUATIONS


def test_reported_condition_number_is_that_of_the_trajectory(dynamic_model, full_design) -> None:
    recomputed = condition_number(dynamic_model, full_design.trajectory, samples=200)
    assert_allclose(full_design.condition_number, recomputed, rtol=1e-12)


@pytest.mark.parametrize("phase_s", [0.0, 0.5e-3])
def test_designs_pass_the_safety_check_at_1khz(full_design, restricted_design, limits, phase_s) -> None:
    check_trajectory(dense(full_design.trajectory, limits, phase_s), limits)
    check_trajectory(dense(restricted_design.trajectory, limits, phase_s), restricted_design.limits)


def limit_ratios(trajectory: FourierTrajectory, limits: JointLimits) -> np.ndarray:
    """Per joint: upper-side and lower-side position swing, speed and acceleration over their limits, (4, n)."""
    sampled = dense(trajectory, limits)
    return np.stack(
        [
            (sampled.q.max(axis=0) - trajectory.offsets) / (limits.upper - trajectory.offsets),
            (trajectory.offsets - sampled.q.min(axis=0)) / (trajectory.offsets - limits.lower),
            np.abs(sampled.dq).max(axis=0) / limits.velocity,
            np.abs(sampled.ddq).max(axis=0) / limits.acceleration,
        ]
    )


def test_design_reports_its_limit_usage_and_uses_the_limits_fully(full_design, limits) -> None:
    usage = limit_usage(dense(full_design.trajectory, limits), limits)
    assert_allclose(usage.position, full_design.usage.position, atol=1e-3)
    assert_allclose(usage.velocity, full_design.usage.velocity, atol=1e-3)
    assert_allclose(usage.acceleration, full_design.usage.acceleration, atol=1e-3)
    # feasible by construction and fitted: every joint reaches its tightest limit.
    assert_allclose(limit_ratios(full_design.trajectory, limits).max(axis=0), 1.0, atol=2e-4)


def test_restricted_design_stays_in_its_workspace(robot, restricted_design, limits) -> None:
    trajectory = dense(restricted_design.trajectory, limits)
    assert np.all(trajectory.q >= np.maximum(limits.lower, RESTRICTED.lower))
    assert np.all(trajectory.q <= np.minimum(limits.upper, RESTRICTED.upper))
    positions = tool_positions(robot, trajectory.q)
    assert np.all(positions >= RESTRICTED.box_min)
    assert np.all(positions <= RESTRICTED.box_max)


def test_restricted_design_is_well_conditioned(restricted_design) -> None:
    # [Volkmann2020] §III.B: restraining the workspace raises κ (7.71 vs 6.76), it stays usable.
    assert restricted_design.condition_number <= 30.0


def test_optimised_beats_random_coefficients(robot, dynamic_model, limits, full_design, restricted_design) -> None:
    # With full ranges, random coefficients fitted to the limits are already fair (κ ≈ 9);
    # in the restricted workspace, where the box shrinks them, the optimiser wins by far.
    assert random_median(robot, dynamic_model, limits, None) >= 1.8 * full_design.condition_number
    assert random_median(robot, dynamic_model, limits, RESTRICTED) >= 5.0 * restricted_design.condition_number


def test_fixed_seed_and_evaluations_give_the_same_design(dynamic_model, limits) -> None:
    def design(seed: int) -> ExcitationDesign:
        return optimise_fourier(
            dynamic_model,
            limits,
            harmonics=2,
            max_evaluations=200,
            time_budget_s=math.inf,
            seed=seed,
        )

    first, second, other = design(3), design(3), design(4)
    assert_array_equal(first.trajectory.sine, second.trajectory.sine)
    assert_array_equal(first.trajectory.cosine, second.trajectory.cosine)
    assert first.condition_number == second.condition_number
    assert not np.array_equal(first.trajectory.sine, other.trajectory.sine)


def test_fit_to_limits_reaches_the_tightest_limit_of_every_joint(robot, limits) -> None:
    rng = np.random.default_rng(1)
    raw = FourierTrajectory(0.1, limits.centre + 0.1, rng.normal(size=(5, 6)), rng.normal(size=(5, 6)))
    fitted = fit_to_limits(raw, limits, samples=10_000)
    check_trajectory(dense(fitted, limits), limits)
    assert_allclose(limit_ratios(fitted, limits).max(axis=0), 1.0, atol=2e-4)


def test_fit_to_limits_refuses_an_offset_outside_the_range(limits) -> None:
    offsets = limits.centre.copy()
    offsets[1] = limits.upper[1] + 0.1
    raw = FourierTrajectory(0.1, offsets, np.ones((2, 6)), np.ones((2, 6)))
    with pytest.raises(IdentificationError, match="joint_2"):
        fit_to_limits(raw, limits, samples=100)


def test_random_baseline_keeps_the_limits_and_the_box(robot, limits) -> None:
    trajectory = random_fourier(robot, limits, seed=5, workspace=RESTRICTED)
    restricted = limits.restricted(lower=RESTRICTED.lower, upper=RESTRICTED.upper)
    sampled = dense(trajectory, limits)
    check_trajectory(sampled, restricted)
    positions = tool_positions(robot, sampled.q[::10])
    assert np.all((positions >= RESTRICTED.box_min) & (positions <= RESTRICTED.box_max))


def test_a_joint_that_never_moves_makes_the_condition_number_infinite(robot, dynamic_model, limits) -> None:
    trajectory = random_fourier(robot, limits, seed=0)
    still = trajectory.scaled(np.array([1.0, 1.0, 0.0, 1.0, 1.0, 1.0]))
    assert np.isinf(condition_number(dynamic_model, still, samples=200))


def test_box_excluding_the_offset_poses_is_refused(dynamic_model, limits) -> None:
    unreachable = Workspace(box_min=np.array([5.0, 5.0, 5.0]), box_max=np.array([6.0, 6.0, 6.0]))
    with pytest.raises(IdentificationError, match="workspace box"):
        optimise_fourier(
            dynamic_model,
            limits,
            harmonics=1,
            workspace=unreachable,
            max_evaluations=100,
            time_budget_s=math.inf,
        )


@pytest.mark.parametrize(
    ("workspace", "message"),
    [
        (dict(box_min=np.zeros(3), box_max=np.array([1.0, -1.0, 1.0])), "box_min < box_max"),
        (dict(box_min=np.zeros(3)), "together"),
    ],
)
def test_bad_workspace_is_refused(workspace: dict, message: str) -> None:
    with pytest.raises(IdentificationError, match=message):
        Workspace(**workspace)


def test_unknown_frame_is_refused(robot, limits) -> None:
    workspace = Workspace(box_min=-np.ones(3), box_max=np.ones(3), frame="flange")
    with pytest.raises(IdentificationError, match="flange"):
        random_fourier(robot, limits, workspace=workspace)


class _SlowClock:
    """``time.perf_counter`` of a machine ``factor`` times slower (or more loaded) than this one: every reading
    advances ``factor`` times as far as the real clock did since the first."""

    def __init__(self, factor: float) -> None:
        self.factor = factor
        self.real = time.perf_counter
        self.origin = self.real()

    def __call__(self) -> float:
        return self.origin + self.factor * (self.real() - self.origin)


def test_an_evaluation_budget_gives_the_same_design_on_a_machine_a_hundred_times_slower(
    dynamic_model, limits, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan must not depend on the load: the evaluations, not the wall time, end the search (issue 26)."""

    def design() -> ExcitationDesign:
        return optimise_fourier(
            dynamic_model,
            limits,
            harmonics=3,
            max_evaluations=200,
            time_budget_s=3600.0,
        )

    here = design()
    monkeypatch.setattr(optimisation.time, "perf_counter", _SlowClock(100.0))
    slow = design()
    assert not here.time_capped and not slow.time_capped
    assert slow.evaluations == here.evaluations
    assert_array_equal(slow.trajectory.sine, here.trajectory.sine)
    assert_array_equal(slow.trajectory.cosine, here.trajectory.cosine)


def test_a_wall_time_cap_that_ends_the_search_first_is_reported(
    dynamic_model, limits, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(optimisation.time, "perf_counter", _SlowClock(1e4))
    design = optimise_fourier(
        dynamic_model,
        limits,
        harmonics=3,
        max_evaluations=5000,
        time_budget_s=5.0,
    )
    assert design.time_capped and design.evaluations < 5000
    _, warnings = search_report(
        design.evaluations, design.wall_time_s, time_capped=True, time_budget_s=5.0, max_evaluations=5000
    )
    assert warnings and "time_budget_s = 5 s ended the search" in warnings[0]


def test_the_default_excitation_budget_is_counted_in_evaluations() -> None:
    budget = ExcitationSettings().budget_arguments()
    assert budget["max_evaluations"] is not None and budget["max_evaluations"] > 0
