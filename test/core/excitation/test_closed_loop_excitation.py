"""Fourier excitation of the shipped five-bar's actuated joints, kept away from its parallel singularity."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
import scipy.ndimage

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.collision import SelfCollisionError, SelfCollisionModel
from dynamic_identification.core.excitation.constraints import (
    DEFAULT_SINGULARITY_MARGIN,
    LimitProbe,
    MechanismLimits,
    SingularityMarginError,
    check_executed_motion,
)
from dynamic_identification.core.excitation.optimisation import condition_number, random_fourier
from dynamic_identification.core.excitation.plan import ExcitationPlan, plan_excitation
from dynamic_identification.core.excitation.safety import TorqueModel, check_trajectory, executed_motion
from dynamic_identification.core.excitation.trajectory import SampledTrajectory, controller_motion
from dynamic_identification.core.mechanism.closed_loop import (
    ClosedLoopModel,
    base_parameters,
)
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.io.config import load_excitation_settings
from five_bar import (
    FIVE_BAR_ACTUATED,
    FIVE_BAR_CHAIN,
    FIVE_BAR_CLOSURES,
    FIVE_BAR_CONFIG,
    FIVE_BAR_DRIVE,
    five_bar_with_collision_geometry,
    identify_wls,
    load_five_bar,
    track,
)
from ur5_collision import rest_to_rest, touching

SETTINGS = replace(load_excitation_settings(FIVE_BAR_CONFIG), time_budget_s=math.inf, max_evaluations=40)
"""The excitation block of config/five_bar.yaml, with an evaluation budget instead of a time budget (reproducible):
the smallest the search accepts (two generations of its population)."""

ONE_PERIOD = replace(SETTINGS, optimise=False, seed=1, periods=1)
"""A random design (seed 1) played once: what the self-collision tests plan, every executed instant checked."""


@pytest.fixture(scope="module")
def five_bar() -> ClosedLoopModel:
    return load_five_bar()


@pytest.fixture(scope="module")
def chain() -> DriveChain:
    return FIVE_BAR_CHAIN


@pytest.fixture(scope="module")
def plan(five_bar: ClosedLoopModel, chain: DriveChain) -> ExcitationPlan:
    return plan_excitation(five_bar, chain, DriveTerms(), SETTINGS)


def _executed(plan: ExcitationPlan) -> SampledTrajectory:
    """The controller's quintic through the published points, every millisecond."""
    points = plan.trajectory
    time_s = np.arange(int(round(points.duration_s * 1000.0)) + 1) / 1000.0
    q, dq, ddq, _ = controller_motion(points.time, points.q, points.dq, points.ddq, time_s)
    return SampledTrajectory(time_s, q, dq, ddq, points.joint_names)


def _ratio(model: ClosedLoopModel, q_tree: np.ndarray) -> np.ndarray:
    """σ_min / σ_max of the passive columns of A_t relative to the reference configuration's, from the
    model's constraint Jacobian."""
    out = np.empty(q_tree.shape[0] + 1)
    for k, q in enumerate([model.reference_configuration, *q_tree]):
        singular = scipy.linalg.svdvals(model.constraint_jacobian(q)[:, model.passive])
        out[k] = singular[-1] / singular[0]
    return out[1:] / out[0]


def test_optimised_design_beats_random_coefficients_in_condition_number(
    five_bar: ClosedLoopModel, chain: DriveChain, plan: ExcitationPlan
) -> None:
    terms = DriveTerms()
    limits = MechanismLimits.from_settings(five_bar, SETTINGS).planning(SETTINGS.interpolation_tolerance_rad)
    torque_model = TorqueModel.nominal(five_bar, chain, terms)
    base = base_parameters(five_bar, chain, terms)
    random = [
        condition_number(
            DynamicModel.create(five_bar, chain, terms, base),
            random_fourier(five_bar, limits, fundamental_hz=0.2, seed=seed, torque_model=torque_model),
            samples=5000,
        )
        for seed in range(3)
    ]
    assert plan.condition_number is not None
    assert plan.condition_number < min(random), (plan.condition_number, random)


def test_every_executed_sample_keeps_the_actuated_and_passive_limits_and_the_singularity_margin(
    five_bar: ClosedLoopModel, plan: ExcitationPlan
) -> None:
    """Checked independently of the planner: URDF limits with the configured margins, A_t's singular values."""
    check_trajectory(plan.trajectory, plan.limits)
    executed = _executed(plan)
    motion = five_bar.complete_motion(executed.q, executed.dq, executed.ddq)
    robot, passive = five_bar.robot, five_bar.passive
    q, dq, ddq = motion.q[:, passive], motion.dq[:, passive], motion.ddq[:, passive]
    velocity = SETTINGS.velocity_scale * robot.velocity_limits[passive]
    assert np.all(q >= robot.lower_position_limits[passive] + SETTINGS.position_margin_rad)
    assert np.all(q <= robot.upper_position_limits[passive] - SETTINGS.position_margin_rad)
    assert np.all(np.abs(dq) <= velocity)
    assert np.all(np.abs(ddq) <= 4.0 * robot.velocity_limits[passive] * SETTINGS.acceleration_scale)
    assert np.min(_ratio(five_bar, motion.q)) >= DEFAULT_SINGULARITY_MARGIN


def test_planned_torques_keep_the_motors_effort_limits(five_bar: ClosedLoopModel, plan: ExcitationPlan) -> None:
    effort = SETTINGS.effort_scale * five_bar.robot.effort_limits[five_bar.actuated]
    assert 0.0 < plan.torque_usage <= 1.0
    assert np.all(plan.limits.effort == effort)


def test_workspace_beyond_the_singularity_is_refused_naming_the_margin(
    five_bar: ClosedLoopModel, chain: DriveChain
) -> None:
    """Both motors opened by more than 0.7 rad: the distal links align (at 0.636 rad symmetric) or come apart."""
    settings = replace(SETTINGS, workspace_lower=(0.7, -1.1), workspace_upper=(1.1, -0.7))
    with pytest.raises(IdentificationError, match=r"no offset pose .* margin 0\.2\).* cannot be closed") as caught:
        plan_excitation(five_bar, chain, DriveTerms(), settings)
    assert "\n" not in str(caught.value)


def test_margin_that_leaves_almost_no_motion_is_refused_naming_it(five_bar: ClosedLoopModel, chain: DriveChain) -> None:
    """95 % of the home pose's σ_min/σ_max (0.95) holds only in a narrow band of the workspace."""
    with pytest.raises(IdentificationError, match=r"singularity margin 0\.95\) with more than 10% of the motion"):
        plan_excitation(five_bar, chain, DriveTerms(), SETTINGS, margin=0.95)


def test_motion_through_the_singularity_margin_is_refused_at_its_time(five_bar: ClosedLoopModel) -> None:
    """Opening both motors symmetrically by 0.6 rad over 3 s passes 0.2 of the home σ_min/σ_max at 0.58 rad."""
    time_s = np.arange(301) / 100.0
    shape = 10.0 * (time_s / 3.0) ** 3 - 15.0 * (time_s / 3.0) ** 4 + 6.0 * (time_s / 3.0) ** 5
    rate = (30.0 * (time_s / 3.0) ** 2 - 60.0 * (time_s / 3.0) ** 3 + 30.0 * (time_s / 3.0) ** 4) / 3.0
    accel = (60.0 * (time_s / 3.0) - 180.0 * (time_s / 3.0) ** 2 + 120.0 * (time_s / 3.0) ** 3) / 9.0
    sign = np.array([0.6, -0.6])
    trajectory = SampledTrajectory(
        time_s, shape[:, None] * sign, rate[:, None] * sign, accel[:, None] * sign, five_bar.actuated_joint_names
    )
    limits = MechanismLimits.from_settings(five_bar, SETTINGS)
    with pytest.raises(
        SingularityMarginError, match=r"closure at t = \d+\.\d{4} s .* below the singularity margin"
    ) as caught:
        check_executed_motion(five_bar, trajectory, limits)
    at = np.array([caught.value.time_s])
    q, dq, ddq, _ = controller_motion(time_s, trajectory.q, trajectory.dq, trajectory.ddq, at)
    assert _ratio(five_bar, five_bar.complete_motion(q, dq, ddq).q)[0] == pytest.approx(0.2, abs=2e-3)


def test_segmented_mode_is_refused_for_a_closed_loop_robot(five_bar: ClosedLoopModel, chain: DriveChain) -> None:
    with pytest.raises(IdentificationError, match="mode 'segmented' is not available for a closed-loop robot"):
        plan_excitation(five_bar, chain, DriveTerms(), replace(SETTINGS, mode="segmented"))


def test_identification_along_the_planned_trajectory_recovers_base_parameters_within_3_sigma(
    five_bar: ClosedLoopModel, chain: DriveChain, plan: ExcitationPlan
) -> None:
    """The five-bar simulated along the plan (PD + feedforward at 1 kHz, 14-bit encoders, 10 mA current noise),
    identified by IDIM-WLS on band-pass derivatives decimated by 10 ([Briot2012] §3.1)."""
    executed = _executed(plan)
    motion = (executed.time, executed.q, executed.dq, executed.ddq)
    run = track(five_bar, chain, FIVE_BAR_DRIVE, motion, seed=4, current_noise_a=0.01, q0=executed.q[0])
    identified = identify_wls(five_bar, chain, FIVE_BAR_DRIVE, run)
    deviation = np.abs(identified.result.parameters - identified.truth) / identified.result.std
    assert np.all(deviation < 3.0), dict(zip(identified.base.names, np.round(deviation, 2), strict=True))


@pytest.fixture(scope="module")
def five_bar_post(tmp_path_factory: pytest.TempPathFactory) -> ClosedLoopModel:
    """The five-bar with collision geometry and a post between its motors that its distal links can reach."""
    urdf = five_bar_with_collision_geometry(Path(tmp_path_factory.mktemp("five_bar_post")))
    return ClosedLoopModel.from_config(urdf, loop_closures=FIVE_BAR_CLOSURES, actuated_joints=FIVE_BAR_ACTUATED)


@pytest.fixture(scope="module")
def post_collision(five_bar_post: ClosedLoopModel) -> SelfCollisionModel:
    model = SETTINGS.collision_model(five_bar_post.robot, joined=five_bar_post.closure_joints)
    assert model is not None
    return model


def _tree_motion(model: ClosedLoopModel, trajectory: SampledTrajectory) -> np.ndarray:
    """Tree positions of the controller's motion through ``trajectory`` at 2 kHz, completed by the loop closure."""
    executed = executed_motion(trajectory, check_rate_hz=2000.0)
    return model.complete_motion(executed.q, executed.dq, executed.ddq).q


def test_the_two_bodies_a_loop_closure_joins_are_never_paired(
    five_bar_post: ClosedLoopModel, post_collision: SelfCollisionModel
) -> None:
    """The distal links' boxes overlap at the cut joint by design: paired, the assembled mechanism would collide."""
    rest = five_bar_post.reference_configuration[None, :]
    unjoined = SelfCollisionModel.from_urdf(five_bar_post.robot, margin_m=post_collision.margin_m)
    assert unjoined is not None
    found = unjoined.first_collision(rest)
    assert found is not None and unjoined.pair_names[found[1]] == ("distal_1_0", "distal_2_0")
    assert ("distal_1_0", "distal_2_0") not in post_collision.pair_names
    assert ("plate_0", "distal_1_0") in post_collision.pair_names
    assert post_collision.first_collision(rest) is None


def test_a_closed_loop_motion_into_the_post_is_refused_where_a_passive_link_first_comes_within_the_margin(
    five_bar_post: ClosedLoopModel, post_collision: SelfCollisionModel
) -> None:
    """From home to a pose within every joint limit and the singularity margin whose distal link lies on the post."""
    limits = MechanismLimits.from_settings(five_bar_post, SETTINGS)
    trajectory = rest_to_rest(five_bar_post.actuated_joint_names, [(0.0, 0.0), (0.9, -0.3)], 2.0)
    check_executed_motion(five_bar_post, trajectory, limits)
    with pytest.raises(SelfCollisionError, match=r"self-collision at t = \d\.\d{4} s \(in the controller") as caught:
        check_executed_motion(five_bar_post, trajectory, limits, collision=post_collision)
    error = caught.value
    assert {error.first, error.second} & {"distal_1_0", "distal_2_0"} and "plate_0" in (error.first, error.second)
    assert 0.0 < error.time_s < 2.0 and error.between_points
    assert error.distance_m < post_collision.margin_m
    executed = executed_motion(trajectory, check_rate_hz=2000.0)
    q_tree = _tree_motion(five_bar_post, trajectory)
    assert not touching(post_collision, q_tree[executed.time < error.time_s])
    assert touching(post_collision, q_tree)


def test_a_closed_loop_excitation_is_shrunk_to_keep_the_margin_from_the_post_at_every_executed_instant(
    five_bar_post: ClosedLoopModel, post_collision: SelfCollisionModel, chain: DriveChain
) -> None:
    """Random design of seed 1: unchecked, its distal links run into the post; checked, the design's shrink toward
    its offset pose keeps the margin, so the plan needs no scaling after it."""
    settings = ONE_PERIOD
    unchecked = plan_excitation(five_bar_post, chain, DriveTerms(), replace(settings, self_collision=False))
    assert unchecked.self_collision == "self-collision not checked (self_collision: false)"
    assert touching(post_collision, _tree_motion(five_bar_post, unchecked.trajectory))
    plan = plan_excitation(five_bar_post, chain, DriveTerms(), settings)
    assert plan.self_collision == "self-collision checked: 5 pairs of links kept 0.01 m apart"
    assert "scaled" not in plan.description
    clearance_m, _ = post_collision.clearance_m(_tree_motion(five_bar_post, plan.trajectory))
    assert clearance_m.min() >= post_collision.margin_m * 0.99


def test_a_design_that_does_not_keep_the_margin_is_scaled_until_its_executed_motion_does(
    five_bar_post: ClosedLoopModel,
    post_collision: SelfCollisionModel,
    chain: DriveChain,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The plan's safety net: with a design shrunk only out of contact (no margin), the check of the executed motion
    finds the post within the margin and the plan scales the design toward its offset pose until it keeps it."""
    monkeypatch.setattr(LimitProbe, "required_clearance_m", lambda self, q: np.zeros(q.shape[0]))
    plan = plan_excitation(five_bar_post, chain, DriveTerms(), ONE_PERIOD)
    assert re.search(r"condition number [\d.]+ before scaling, amplitudes scaled to \d+% to keep", plan.description)
    before = float(plan.description.split("condition number ")[1].split(" ")[0])
    assert plan.condition_number is not None and plan.condition_number > before
    clearance_m, _ = post_collision.clearance_m(_tree_motion(five_bar_post, plan.trajectory))
    assert clearance_m.min() >= post_collision.margin_m * 0.99


def test_the_shipped_five_bar_says_its_urdf_has_no_collision_geometry(plan: ExcitationPlan) -> None:
    assert plan.self_collision == "self-collision not checked: the URDF has no <collision> geometry"
