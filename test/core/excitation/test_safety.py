"""The safety check, limits with margins and C² ramps: no commanded motion leaves the limits."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation import (
    JointLimits,
    LimitViolationError,
    SampledTrajectory,
    check_trajectory,
    limit_usage,
    ramp,
    random_fourier_trajectory,
    sample,
    stop_ramp,
)
from dynamic_identification.core.mechanism.robot import RobotModel, load_robot

RATE_HZ = 500.0


@pytest.fixture(scope="module")
def panda(example_urdf) -> RobotModel:
    return load_robot(example_urdf("panda.urdf"), [f"panda_joint{i}" for i in range(1, 8)])


def _limits(robot: RobotModel, margin: float, velocity_scale: float, acceleration: float) -> JointLimits:
    return JointLimits.from_robot(
        robot,
        position_margin_rad=margin,
        velocity_scale=velocity_scale,
        acceleration_limits=np.full(robot.n_joints, acceleration),
    )


def test_the_first_violation_in_time_is_named(arm6: RobotModel) -> None:
    limits = JointLimits.from_robot(arm6)
    time = np.arange(0.0, 1.0, 0.01)
    q = np.tile(limits.centre, (time.size, 1))
    dq = np.zeros_like(q)
    dq[70, 1] = 10.0  # later velocity violation
    q[40, 4] = limits.upper[4] + 0.01  # earlier position violation
    trajectory = SampledTrajectory(time, q, dq, np.zeros_like(q), arm6.joint_names)
    with pytest.raises(LimitViolationError) as caught:
        check_trajectory(trajectory, limits)
    error = caught.value
    # The controller's quintic toward the spike at 0.4 s breaks a limit before it arrives there.
    assert error.joint == "joint_5"
    assert 0.39 <= error.time_s < 0.4
    assert error.between_points
    assert "between published points" in str(error)


def test_non_finite_values_are_violations(arm6: RobotModel) -> None:
    limits = JointLimits.from_robot(arm6)
    q = np.tile(limits.centre, (3, 1))
    ddq = np.zeros_like(q)
    ddq[1, 2] = np.nan
    with pytest.raises(LimitViolationError, match="joint_3 .* acceleration is nan"):
        check_trajectory(SampledTrajectory(np.arange(3.0), q, np.zeros_like(q), ddq, arm6.joint_names), limits)


def test_margins_shrink_the_urdf_limits(arm6: RobotModel) -> None:
    limits = JointLimits.from_robot(arm6, position_margin_rad=0.1, velocity_scale=0.5, acceleration_scale=0.5)
    assert_allclose(limits.lower, arm6.lower_position_limits + 0.1)
    assert_allclose(limits.velocity, 0.5 * arm6.velocity_limits)
    narrower = limits.restricted(lower=np.full(6, -0.5), upper=np.full(6, 5.0))
    assert_allclose(narrower.lower, np.maximum(limits.lower, -0.5))
    assert_allclose(narrower.upper, limits.upper)
    with pytest.raises(IdentificationError, match="velocity_scale"):
        JointLimits.from_robot(arm6, velocity_scale=1.5)
    with pytest.raises(IdentificationError, match="position range is empty"):
        JointLimits.from_robot(arm6, position_margin_rad=3.0)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    margin=st.floats(0.0, 0.5),
    velocity_scale=st.floats(0.2, 1.0),
    acceleration=st.floats(1.0, 40.0),
    start=st.lists(st.floats(0.0, 1.0), min_size=7, max_size=7),
    end=st.lists(st.floats(0.0, 1.0), min_size=7, max_size=7),
    robot_name=st.sampled_from(["arm6", "panda"]),
)
def test_ramps_between_any_two_poses_keep_the_limits_and_are_exact_at_both_ends(
    arm6: RobotModel, panda: RobotModel, margin, velocity_scale, acceleration, start, end, robot_name
) -> None:
    robot = arm6 if robot_name == "arm6" else panda
    limits = _limits(robot, margin, velocity_scale, acceleration)
    n = robot.n_joints
    q0 = limits.lower + np.array(start[:n]) * (limits.upper - limits.lower)
    q1 = limits.lower + np.array(end[:n]) * (limits.upper - limits.lower)
    zero = np.zeros(n)
    trajectory = ramp((q0, zero, zero), (q1, zero, zero), limits, rate_hz=RATE_HZ)
    check_trajectory(trajectory, limits)
    assert_allclose(trajectory.q[0], q0, atol=1e-12)
    assert_allclose(trajectory.q[-1], q1, atol=1e-9)
    assert_allclose(trajectory.dq[[0, -1]], 0.0, atol=1e-9)
    assert_allclose(trajectory.ddq[[0, -1]], 0.0, atol=1e-7)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    margin=st.floats(0.0, 0.3),
    fundamental_hz=st.floats(0.05, 0.5),
    harmonics=st.integers(1, 6),
    seed=st.integers(0, 10_000),
    stop_at=st.floats(0.0, 1.0),
    robot_name=st.sampled_from(["arm6", "panda"]),
)
def test_fourier_trajectories_fitted_to_limits_and_their_stops_keep_the_limits(
    arm6: RobotModel, panda: RobotModel, margin, fundamental_hz, harmonics, seed, stop_at, robot_name
) -> None:
    robot = arm6 if robot_name == "arm6" else panda
    limits = JointLimits.from_robot(robot, position_margin_rad=margin)
    fourier = random_fourier_trajectory(
        robot,
        fundamental_hz=fundamental_hz,
        harmonics=harmonics,
        seed=seed,
        margin=float(np.max(margin / (0.5 * (robot.upper_position_limits - robot.lower_position_limits)))) + 0.02,
        velocity_fraction=0.8,
        acceleration_limits=0.8 * limits.acceleration,
    )
    trajectory = sample(fourier, np.arange(0.0, fourier.period_s, 1.0 / RATE_HZ), robot.joint_names)
    check_trajectory(trajectory, limits)
    k = int(stop_at * (trajectory.time.size - 1))
    stop = stop_ramp((trajectory.q[k], trajectory.dq[k], trajectory.ddq[k]), limits, rate_hz=RATE_HZ)
    check_trajectory(stop, limits)
    assert_allclose(stop.dq[-1], 0.0, atol=1e-9)
    assert_allclose(stop.q[0], trajectory.q[k], atol=1e-12)


def test_limit_usage_reports_fractions(arm6: RobotModel) -> None:
    limits = JointLimits.from_robot(arm6)
    zero = np.zeros(6)
    trajectory = ramp((limits.centre, zero, zero), (limits.centre + 0.5, zero, zero), limits, rate_hz=RATE_HZ)
    usage = limit_usage(trajectory, limits)
    assert_allclose(usage.position, 0.5 / (limits.upper - limits.lower), rtol=1e-9)
    assert np.all(usage.velocity <= 1.0) and np.all(usage.acceleration <= 1.0)
    assert usage.acceleration.max() > 0.5  # the shortest ramp uses a good part of a limit


def test_joint_mismatch_is_refused(arm6: RobotModel) -> None:
    limits = JointLimits.from_robot(arm6)
    renamed = dataclasses.replace(limits, joint_names=tuple(f"j{i}" for i in range(6)))
    trajectory = ramp(
        (limits.centre, np.zeros(6), np.zeros(6)), (limits.centre, np.zeros(6), np.zeros(6)), limits, rate_hz=RATE_HZ
    )
    with pytest.raises(IdentificationError, match="differ"):
        check_trajectory(trajectory, renamed)
