"""Self-collision of the executed motion on a URDF's collision geometry (UR5 and Panda of example-robot-data)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_allclose

from dynamic_identification.core.cancellation import Cancellation
from dynamic_identification.core.errors import ModelError, PlanningCancelled
from dynamic_identification.core.excitation.collision import (
    SelfCollisionError,
    SelfCollisionModel,
    check_self_collision,
)
from dynamic_identification.core.excitation.fourier import FourierTrajectory
from dynamic_identification.core.excitation.plan import SCALE_BISECTIONS, plan_excitation, scaled_until_safe
from dynamic_identification.core.excitation.safety import executed_motion
from dynamic_identification.core.excitation.settings import ExcitationSettings
from dynamic_identification.core.excitation.trajectory import SampledTrajectory
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel, load_robot
from ur5_collision import CLEAR_A, CLEAR_B, rest_to_rest, touching


@pytest.fixture(scope="module")
def ur5(example_urdf: Callable[[str], Path]) -> RobotModel:
    return load_robot(example_urdf("ur5_robot.urdf"))


@pytest.fixture(scope="module")
def ur5_collision(ur5: RobotModel, example_urdf: Callable[[str], Path]) -> SelfCollisionModel:
    """The UR5's check with the SRDF of example-robot-data (its base and upper arm are 16 mm apart at rest)."""
    model = SelfCollisionModel.from_urdf(ur5, srdf=example_urdf("ur5.srdf"))
    assert model is not None
    return model


def _clearance_m(model: SelfCollisionModel, q: np.ndarray) -> float:
    """Smallest distance between the checked pairs over the samples of ``q``, m, by Pinocchio directly."""
    robot = model.robot
    data, geometry_data = robot.model.createData(), pin.GeometryData(model.geometry)
    clearance = np.inf
    for configuration in robot.configurations(q):
        pin.computeDistances(robot.model, data, model.geometry, geometry_data, configuration)
        clearance = min(clearance, *(result.min_distance for result in geometry_data.distanceResults))
    return float(clearance)


def test_a_urdf_without_collision_geometry_has_no_check(arm6_urdf: Path) -> None:
    assert SelfCollisionModel.from_urdf(load_robot(arm6_urdf)) is None


def test_links_joined_by_one_joint_are_never_paired_and_an_srdf_leaves_out_its_pairs(
    ur5: RobotModel, ur5_collision: SelfCollisionModel
) -> None:
    without_srdf = SelfCollisionModel.from_urdf(ur5)
    assert without_srdf is not None
    objects = without_srdf.geometry.geometryObjects
    parents = ur5.model.parents
    for pair in without_srdf.geometry.collisionPairs:
        a, b = objects[pair.first].parentJoint, objects[pair.second].parentJoint
        assert a != b and parents[a] != b and parents[b] != a, (objects[pair.first].name, objects[pair.second].name)
    assert ("base_link_0", "upper_arm_link_0") in without_srdf.pair_names
    assert ("base_link_0", "upper_arm_link_0") not in ur5_collision.pair_names  # <disable_collisions> of ur5.srdf
    assert ("forearm_link_0", "ee_link_0") in ur5_collision.pair_names
    assert set(ur5_collision.pair_names) < set(without_srdf.pair_names)


def test_a_collision_between_published_points_is_refused_naming_the_links_and_the_instant(
    ur5: RobotModel, ur5_collision: SelfCollisionModel
) -> None:
    trajectory = rest_to_rest(ur5.joint_names, [CLEAR_A, CLEAR_B], interval_s=2.0)
    assert _clearance_m(ur5_collision, trajectory.q) > ur5_collision.margin_m  # both published points are clear
    with pytest.raises(SelfCollisionError) as raised:
        check_self_collision(trajectory, ur5_collision)
    error = raised.value
    assert (error.first, error.second) in ur5_collision.pair_names
    assert error.between_points and 0.0 < error.time_s < 2.0
    assert error.distance_m < ur5_collision.margin_m
    assert error.first in str(error) and error.second in str(error) and "\n" not in str(error)


def test_a_motion_that_keeps_the_margin_at_every_checked_instant_touches_nothing_in_between(
    ur5: RobotModel, ur5_collision: SelfCollisionModel
) -> None:
    # Approach the collision from CLEAR_A as far as the check lets pass: the largest accepted fraction of the way.
    accepted = []
    fractions = np.linspace(0.1, 0.3, 9)
    for fraction in fractions:
        end = tuple(np.array(CLEAR_A) + fraction * (np.array(CLEAR_B) - np.array(CLEAR_A)))
        trajectory = rest_to_rest(ur5.joint_names, [CLEAR_A, end], interval_s=1.0)
        try:
            check_self_collision(trajectory, ur5_collision)
        except SelfCollisionError:
            continue
        accepted.append(trajectory)
    assert accepted, "no approach was accepted"
    assert len(accepted) < fractions.size, "the collision was never reached"
    for trajectory in accepted:  # ground truth at 20 kHz of the controller's motion: no contact
        assert not touching(ur5_collision, executed_motion(trajectory, check_rate_hz=20_000.0).q)


def test_checked_instants_are_closer_than_the_margin_in_sweep_and_slow_motion_is_checked_rarely(
    ur5_collision: SelfCollisionModel,
) -> None:
    time = np.linspace(0.0, 10.0, 10_001)
    fast = 0.8 * np.sin(2.0 * np.pi * 0.5 * time)[:, None] * np.ones(6)
    slow = 0.1 * fast
    reach = ur5_collision.joint_reach_m
    for q in (fast, slow):
        chosen = ur5_collision.checked_instants(q)
        sweep = np.concatenate([[0.0], np.cumsum(np.abs(np.diff(q, axis=0)) @ reach)])
        assert chosen[0] == 0 and chosen[-1] == q.shape[0] - 1
        assert np.diff(sweep[chosen]).max() < ur5_collision.margin_m
    assert 5 * ur5_collision.checked_instants(slow).size < ur5_collision.checked_instants(fast).size


def test_a_colliding_fourier_excitation_is_scaled_until_it_keeps_the_margin(
    ur5: RobotModel, ur5_collision: SelfCollisionModel, example_urdf: Callable[[str], Path]
) -> None:
    chain, terms = DriveChain.create(ur5.n_joints), DriveTerms()
    srdf = str(example_urdf("ur5.srdf"))
    unchecked = plan_excitation(
        ur5, chain, terms, ExcitationSettings(optimise=False, seed=2, collision_srdf=srdf, self_collision=False)
    )
    assert touching(ur5_collision, executed_motion(unchecked.trajectory, check_rate_hz=2_000.0).q)
    assert unchecked.self_collision == "self-collision not checked (self_collision: false)"
    plan = plan_excitation(ur5, chain, terms, ExcitationSettings(optimise=False, seed=2, collision_srdf=srdf))
    assert "to keep the self-collision margin" in plan.description
    assert plan.self_collision == "self-collision checked: 16 pairs of links kept 0.01 m apart"
    assert not touching(ur5_collision, executed_motion(plan.trajectory, check_rate_hz=2_000.0).q)
    assert plan.condition_number is not None and np.isfinite(plan.condition_number)


def test_missing_meshes_are_refused_in_one_line_naming_the_way_out(
    tmp_path: Path, example_urdf: Callable[[str], Path]
) -> None:
    urdf = example_urdf("ur5_robot.urdf")
    copy = tmp_path / "ur5_elsewhere.urdf"
    shutil.copy(urdf, copy)  # package://example-robot-data/... cannot be found from tmp_path
    robot = load_robot(copy)
    with pytest.raises(ModelError, match="self_collision: false") as raised:
        SelfCollisionModel.from_urdf(robot)
    assert "\n" not in str(raised.value)
    assert ExcitationSettings(self_collision=False).collision_model(robot) is None


def test_the_margin_must_be_finite_and_not_negative(ur5: RobotModel) -> None:
    for margin in (-0.01, float("nan")):
        with pytest.raises(ModelError, match="collision_margin_m"):
            SelfCollisionModel.from_urdf(ur5, margin_m=margin)


def test_the_optimised_fourier_search_keeps_clear_of_the_robot_itself(
    ur5: RobotModel, ur5_collision: SelfCollisionModel, example_urdf: Callable[[str], Path]
) -> None:
    chain, terms = DriveChain.create(ur5.n_joints), DriveTerms()
    srdf = str(example_urdf("ur5.srdf"))
    common = {"seed": 1, "max_evaluations": 300, "time_budget_s": 3600.0, "collision_srdf": srdf}
    unchecked = plan_excitation(ur5, chain, terms, ExcitationSettings(self_collision=False, **common))
    assert touching(ur5_collision, executed_motion(unchecked.trajectory, check_rate_hz=2_000.0).q)
    plan = plan_excitation(ur5, chain, terms, ExcitationSettings(**common))
    assert "scaled" not in plan.description  # the search itself avoided the collision
    assert not touching(ur5_collision, executed_motion(plan.trajectory, check_rate_hz=2_000.0).q)
    assert plan.condition_number is not None and unchecked.condition_number is not None
    assert plan.condition_number < 1.2 * unchecked.condition_number


def test_the_clearance_of_a_pose_is_the_distance_of_its_closest_checked_pair(
    ur5_collision: SelfCollisionModel,
) -> None:
    """What the closed-loop shrink keeps above the margin, against each pair's distance from Pinocchio."""
    q = np.array([CLEAR_A, CLEAR_B])
    clearance_m, closest = ur5_collision.clearance_m(q)
    for k in range(q.shape[0]):
        distances = [ur5_collision.distance_m(q[k], pair) for pair in range(len(ur5_collision.pair_names))]
        assert clearance_m[k] == pytest.approx(min(distances), abs=1e-9)
        assert closest[k] == int(np.argmin(distances))
    assert np.all(clearance_m >= 0.02)


def test_the_clearance_measures_exactly_only_the_pairs_near_enough_to_matter(ur5_collision: SelfCollisionModel) -> None:
    """With a cutoff, a sample whose closest pair is nearer than it gets the exact distance; a farther one a lower
    bound above the cutoff (bounding spheres), which keeps the shrink's constraint on the safe side."""
    rng = np.random.default_rng(3)
    q = np.array(CLEAR_A) + rng.uniform(-0.6, 0.6, (40, 6))
    exact_m, _ = ur5_collision.clearance_m(q)
    cutoff_m = float(np.median(exact_m))
    bounded_m, _ = ur5_collision.clearance_m(q, cutoff_m=cutoff_m)
    near = exact_m < cutoff_m
    assert near.any() and (~near).any()
    assert_allclose(bounded_m[near], exact_m[near], atol=1e-9)
    assert np.all(bounded_m[~near] <= exact_m[~near] + 1e-9)
    assert np.all(bounded_m[~near] >= cutoff_m)


@pytest.mark.parametrize("largest", [0.95, 0.7, 0.5, 0.35])
def test_a_scaled_excitation_keeps_within_3_percent_of_the_largest_safe_amplitude(largest: float) -> None:
    """A stand-in check that refuses motion beyond ``largest`` of the unscaled excursion from the offset pose: the
    scale kept passes and lies within 3 % below ``largest`` (steps of 0.8 alone could lose 20 %)."""
    fourier = FourierTrajectory(0.5, np.zeros(1), np.array([[1.0]]), np.array([[0.0]]))
    time = np.linspace(0.0, 2.0, 401)
    reach_rad = largest * float(np.abs(fourier.evaluate(time)[0]).max())
    checked: list[float] = []

    def check(motion: SampledTrajectory) -> float:
        excursion = float(np.abs(motion.q).max())
        if excursion > reach_rad:
            raise SelfCollisionError(
                first="a", second="b", time_s=0.0, distance_m=-1.0, margin_m=0.0, between_points=False
            )
        checked.append(excursion)
        return excursion

    motion, scale, excursion = scaled_until_safe(fourier, time, ("joint",), check, what="the test motion")
    assert excursion <= reach_rad and excursion == float(np.abs(motion.q).max())
    assert 0.97 * largest <= scale <= largest
    assert len(checked) <= 1 + SCALE_BISECTIONS


def test_measuring_the_clearance_stops_when_the_caller_cancels(ur5_collision: SelfCollisionModel) -> None:
    """Exact mesh distances take milliseconds a pose: a long motion must not hold up a node being destroyed."""
    with pytest.raises(PlanningCancelled):
        ur5_collision.clearance_m(np.array([CLEAR_A] * 10), cancellation=Cancellation(lambda: True))
