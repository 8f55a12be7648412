"""Process trajectories ([Volkmann2020] §III.B): pick and place, square; inverse kinematics with Pinocchio."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.plan import plan_excitation
from dynamic_identification.core.excitation.process import (
    default_process_areas,
    frame_placement,
    frame_positions,
    inverse_kinematics,
    pick_and_place,
    pick_and_place_targets,
    square,
    square_corners,
    tool_tilts,
)
from dynamic_identification.core.excitation.safety import JointLimits, check_trajectory
from dynamic_identification.core.excitation.settings import ExcitationSettings
from dynamic_identification.core.excitation.trajectory import SampledTrajectory
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel, load_robot

RATE_HZ = 250.0
MM = 1e-3


@pytest.fixture(scope="module")
def limits(arm6: RobotModel) -> JointLimits:
    return JointLimits.from_robot(arm6)


@pytest.fixture(scope="module")
def layout(arm6: RobotModel, limits: JointLimits) -> dict[str, Any]:
    return default_process_areas(arm6, limits=limits)


def _pick_and_place(
    arm6: RobotModel, limits: JointLimits, layout: dict[str, Any], seed: int, tool_tilt_rad: float = 0.0
) -> SampledTrajectory:
    return pick_and_place(
        arm6,
        limits,
        area_a=layout["area_a"],
        area_b=layout["area_b"],
        cycles=2,
        seed=seed,
        rate_hz=RATE_HZ,
        lift_m=layout["lift_m"],
        q_seed=layout["q_seed"],
        orientation=layout["orientation"],
        tool_tilt_rad=tool_tilt_rad,
    )


def _square(
    arm6: RobotModel, limits: JointLimits, layout: dict[str, Any], offset_xy: tuple[float, float] = (0.0, 0.0)
) -> SampledTrajectory:
    return square(
        arm6,
        limits,
        centre=layout["centre"],
        side_m=layout["side_m"],
        laps=2,
        rate_hz=RATE_HZ,
        offset_xy=offset_xy,
        q_seed=layout["q_seed"],
        orientation=layout["orientation"],
    )


@pytest.fixture(scope="module")
def picking(arm6: RobotModel, limits: JointLimits, layout: dict[str, Any]) -> SampledTrajectory:
    return _pick_and_place(arm6, limits, layout, seed=7)


@pytest.fixture(scope="module")
def tracing(arm6: RobotModel, limits: JointLimits, layout: dict[str, Any]) -> SampledTrajectory:
    return _square(arm6, limits, layout)


def _assert_c2(trajectory: SampledTrajectory, limits: JointLimits) -> None:
    """No jumps: per-sample changes of q, q̇ fit the limits; q̈ changes by at most a bounded jerk times dt.

    The bounds come from the Taylor expansion of a C² motion: the change of q matches
    ``q̇ dt + q̈ dt²/2`` to ``J dt³/6`` and that of q̇ matches ``q̈ dt`` to ``J dt²/2``,
    ``J`` the largest jerk (estimated from the samples, hence a factor 2 of slack).
    """
    dt = 1.0 / RATE_HZ
    assert_allclose(np.diff(trajectory.time), dt, rtol=1e-9)
    assert np.all(np.abs(np.diff(trajectory.q, axis=0)) <= limits.velocity * dt * (1 + 1e-9))
    assert np.all(np.abs(np.diff(trajectory.dq, axis=0)) <= limits.acceleration * dt * (1 + 1e-9))
    jerk = 2.0 * np.abs(np.diff(trajectory.ddq, axis=0)).max(axis=0) / dt
    predicted = trajectory.q[:-1] + trajectory.dq[:-1] * dt + 0.5 * trajectory.ddq[:-1] * dt**2
    assert np.all(np.abs(trajectory.q[1:] - predicted) <= jerk * dt**3 / 6 + 1e-12)
    assert np.all(np.abs(trajectory.dq[1:] - trajectory.dq[:-1] - trajectory.ddq[:-1] * dt) <= jerk * dt**2 / 2 + 1e-12)


def _closest_approach(robot: RobotModel, trajectory: SampledTrajectory, points: np.ndarray) -> np.ndarray:
    """For each point (m), the smallest distance (m) of the end effector to it over the trajectory."""
    positions = frame_positions(robot, "tool0", trajectory.q)
    return np.linalg.norm(positions[None, :, :] - np.asarray(points)[:, None, :], axis=2).min(axis=1)


def test_inverse_kinematics_reaches_pose_of_a_known_configuration(arm6: RobotModel, limits: JointLimits) -> None:
    q_true = np.array([0.3, 0.4, -0.5, 0.2, 1.2, -0.4])
    goal = frame_placement(arm6, "tool0", q_true)
    q = inverse_kinematics(arm6, "tool0", goal.translation, q_true + 0.1, limits=limits, orientation=goal.rotation)
    reached = frame_placement(arm6, "tool0", q)
    assert_allclose(reached.translation, goal.translation, atol=1e-6)
    assert_allclose(pin.log3(reached.rotation.T @ goal.rotation), 0.0, atol=1e-6)
    position_only = inverse_kinematics(arm6, "tool0", goal.translation, np.zeros(6), limits=limits)
    assert_allclose(frame_placement(arm6, "tool0", position_only).translation, goal.translation, atol=1e-6)


def test_inverse_kinematics_refuses_an_unreachable_target(arm6: RobotModel) -> None:
    with pytest.raises(IdentificationError, match="did not converge.*residual"):
        inverse_kinematics(arm6, "tool0", np.array([2.0, 0.0, 0.5]), np.zeros(6))


def test_default_layout_points_the_tool_down(arm6: RobotModel, layout: dict[str, Any]) -> None:
    assert layout["frame"] == "tool0"
    assert_allclose(layout["orientation"][:, 2], [0.0, 0.0, -1.0], atol=1e-9)
    assert_allclose(frame_placement(arm6, "tool0", layout["q_seed"]).translation, layout["centre"], atol=1e-6)


def test_pick_and_place_keeps_limits_and_is_c2(picking: SampledTrajectory, limits: JointLimits) -> None:
    check_trajectory(picking, limits)
    _assert_c2(picking, limits)
    assert_array_equal(picking.dq[[0, -1]], 0.0)


def test_pick_and_place_visits_every_pick_and_place_point(
    arm6: RobotModel, picking: SampledTrajectory, layout: dict[str, Any]
) -> None:
    picks, places = pick_and_place_targets(area_a=layout["area_a"], area_b=layout["area_b"], cycles=2, seed=7)
    up = np.array([0.0, 0.0, layout["lift_m"]])
    targets = np.concatenate([picks, places, picks + up, places + up])
    assert np.all(_closest_approach(arm6, picking, targets) < 1 * MM)
    for (centre, half), points in ((layout["area_a"], picks), (layout["area_b"], places)):
        assert np.all(np.abs(points - centre) <= half + 1e-12)


def test_pick_and_place_is_reproducible_and_seeded(
    arm6: RobotModel, limits: JointLimits, layout: dict[str, Any], picking: SampledTrajectory
) -> None:
    again = _pick_and_place(arm6, limits, layout, seed=7)
    assert_array_equal(again.q, picking.q)
    areas = {"area_a": layout["area_a"], "area_b": layout["area_b"]}
    first = pick_and_place_targets(**areas, cycles=2, seed=7)
    other = pick_and_place_targets(**areas, cycles=2, seed=8)
    assert np.all(np.linalg.norm(first[0] - other[0], axis=1) > 1 * MM)


def test_a_tilted_tool_turns_the_forearm_roll_and_still_reaches_every_point(
    arm6: RobotModel, limits: JointLimits, layout: dict[str, Any], picking: SampledTrajectory
) -> None:
    # With the tool vertical, joints 2, 3 and 5 (parallel axes) place it and joint 4 (forearm roll) never turns;
    # tilted up to 0.3 rad at each point, as parts lying askew, the wrist turns too.
    assert np.ptp(picking.q[:, 3]) < 1e-5  # IK tolerance
    tilted = _pick_and_place(arm6, limits, layout, seed=7, tool_tilt_rad=0.3)
    check_trajectory(tilted, limits)
    _assert_c2(tilted, limits)
    assert np.ptp(tilted.q[:, 3]) > 0.2, np.ptp(tilted.q, axis=0)
    picks, places = pick_and_place_targets(area_a=layout["area_a"], area_b=layout["area_b"], cycles=2, seed=7)
    up = np.array([0.0, 0.0, layout["lift_m"]])
    assert np.all(_closest_approach(arm6, tilted, np.concatenate([picks, places, picks + up, places + up])) < 1 * MM)
    # Each point's tilt lies within the bound: the tool axis is at most 0.3 rad off the vertical anywhere.
    axes = np.array([frame_placement(arm6, "tool0", q).rotation[:, 2] for q in tilted.q[::25]])
    assert np.all(np.arccos(np.clip(-axes[:, 2], -1.0, 1.0)) <= 0.3 + 1e-6)


def test_tool_tilts_are_seeded_and_bounded() -> None:
    tilts = tool_tilts(cycles=50, tilt_rad=0.3, seed=4)
    assert tilts.shape == (50, 2, 3, 3)
    assert_array_equal(tilts, tool_tilts(cycles=50, tilt_rad=0.3, seed=4))
    angles = np.array([np.linalg.norm(pin.log3(rotation)) for rotation in tilts.reshape(-1, 3, 3)])
    assert np.all(angles <= 0.3 + 1e-12) and angles.max() > 0.25
    assert_allclose(tilts.reshape(-1, 3, 3)[:, 2, 2], np.cos(angles), atol=1e-12)  # about horizontal axes
    assert_array_equal(tool_tilts(cycles=3, tilt_rad=0.0, seed=4), np.broadcast_to(np.eye(3), (3, 2, 3, 3)))
    with pytest.raises(IdentificationError, match="tool_tilt_rad"):
        tool_tilts(cycles=3, tilt_rad=2.0, seed=4)


def test_square_keeps_limits_and_is_c2(tracing: SampledTrajectory, limits: JointLimits) -> None:
    check_trajectory(tracing, limits)
    _assert_c2(tracing, limits)
    assert_allclose(tracing.dq[[0, -1]], 0.0, atol=1e-12)


def test_square_is_horizontal_and_passes_its_corners(
    arm6: RobotModel, tracing: SampledTrajectory, layout: dict[str, Any]
) -> None:
    positions = frame_positions(arm6, "tool0", tracing.q)
    assert_allclose(positions[:, 2], layout["centre"][2], atol=1 * MM)
    corners = square_corners(centre=layout["centre"], side_m=layout["side_m"])
    assert np.all(_closest_approach(arm6, tracing, corners) < 1 * MM)
    half = 0.5 * layout["side_m"]
    assert_allclose(np.abs(positions[:, :2] - layout["centre"][:2]).max(axis=0), half, atol=1 * MM)


def test_offset_shifts_the_square(
    arm6: RobotModel, limits: JointLimits, layout: dict[str, Any], tracing: SampledTrajectory
) -> None:
    offset = (0.02, -0.015)
    shifted = _square(arm6, limits, layout, offset_xy=offset)
    check_trajectory(shifted, limits)
    moved = frame_positions(arm6, "tool0", shifted.q)
    original = frame_positions(arm6, "tool0", tracing.q)
    assert_allclose(moved[:, :2].mean(axis=0) - original[:, :2].mean(axis=0), offset, atol=1 * MM)
    corners = square_corners(centre=layout["centre"], side_m=layout["side_m"], offset_xy=offset)
    assert np.all(_closest_approach(arm6, shifted, corners) < 1 * MM)


def test_panda_processes_keep_limits(example_urdf: Callable[[str], Path]) -> None:
    panda = load_robot(example_urdf("panda.urdf"), [f"panda_joint{i}" for i in range(1, 8)])
    limits = JointLimits.from_robot(panda)
    layout = default_process_areas(panda, limits=limits)
    assert layout["frame"] == "panda_hand_tcp"
    common = {"rate_hz": RATE_HZ, "q_seed": layout["q_seed"], "orientation": layout["orientation"]}
    picking = pick_and_place(
        panda, limits, area_a=layout["area_a"], area_b=layout["area_b"], cycles=1, seed=0, **common
    )
    tracing = square(panda, limits, centre=layout["centre"], side_m=layout["side_m"], laps=1, **common)
    for trajectory in (picking, tracing):
        check_trajectory(trajectory, limits)


@pytest.mark.parametrize(("tool_tilt", "warned"), [(0.0, True), (0.4, False)])
def test_a_plan_that_keeps_a_joint_still_says_so(arm6: RobotModel, tool_tilt: float, warned: bool) -> None:
    # The pick and place with the tool pointing down keeps the forearm roll still: its parameters are not
    # identifiable from the plan, which the report said only as a 0.000 in its table.
    settings = ExcitationSettings(mode="process", cycles=1, rate_hz=100.0, tool_tilt=tool_tilt)
    plan = plan_excitation(arm6, DriveChain.create(arm6.n_joints), DriveTerms(), settings)
    still = [warning for warning in plan.warnings if "does not move" in warning]
    assert still == (
        [
            "joint_4 does not move in this plan: the parameters only its motion excites cannot be identified from it"
            " (the estimator's reduction leaves them out); tool_tilt > 0 turns the wrist at the pick and place points"
        ]
        if warned
        else []
    )
