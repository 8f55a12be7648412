"""What the controller executes between published points keeps every limit, or the trajectory is refused.

The oracle is independent of the package's own interpolation: SciPy's ``BPoly.from_derivatives`` builds
the quintic Hermite spline through position, velocity and acceleration that ``joint_trajectory_controller``
executes, evaluated at 1 kHz and at every point.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import scipy.interpolate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation import JointLimits, SampledTrajectory, check_trajectory
from dynamic_identification.core.excitation.plan import plan_excitation
from dynamic_identification.core.excitation.safety import (
    InconsistentTrajectoryError,
    LimitViolationError,
    SamplingRateError,
    check_consistency,
    ramp,
)
from dynamic_identification.core.excitation.settings import ExcitationSettings
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms

ORACLE_RATE_HZ = 1000.0
SLACK = 1e-6
"""Relative slack of the oracle's comparison (round-off of a different evaluation of the same polynomials)."""


def executed(trajectory: SampledTrajectory) -> tuple[np.ndarray, ...]:
    """Positions, velocities, accelerations and jerks of the controller's quintic at 1 kHz and at every point."""
    dense = np.arange(trajectory.time[0], trajectory.time[-1], 1.0 / ORACLE_RATE_HZ)
    midpoints = 0.5 * (trajectory.time[1:] + trajectory.time[:-1])
    times = np.unique(np.concatenate([dense, trajectory.time, midpoints]))
    values = np.stack([trajectory.q, trajectory.dq, trajectory.ddq], axis=1)  # (K, 3, n)
    spline = scipy.interpolate.BPoly.from_derivatives(trajectory.time, values)
    return tuple(spline(times, nu=order) for order in range(4))


def assert_within(trajectory: SampledTrajectory, limits: JointLimits) -> None:
    q, dq, ddq, jerk = executed(trajectory)
    tol = SLACK
    assert np.all(q >= limits.lower - tol) and np.all(q <= limits.upper + tol), "position"
    assert np.all(np.abs(dq) <= limits.velocity * (1 + tol)), "velocity"
    assert np.all(np.abs(ddq) <= limits.acceleration * (1 + tol)), "acceleration"
    assert np.all(np.abs(jerk) <= limits.jerk * (1 + tol)), "jerk"


def alternating(joints: tuple[str, ...], *, step_rad: float, rate_hz: float = 100.0) -> SampledTrajectory:
    time = np.arange(200) / rate_hz
    q = np.zeros((time.size, len(joints)))
    q[:, 0] = np.where(np.arange(time.size) % 2 == 0, -0.5 * step_rad, 0.5 * step_rad)
    return SampledTrajectory(time, q, np.zeros_like(q), np.zeros_like(q), joints)


def test_a_file_whose_positions_contradict_its_velocities_is_refused_naming_joint_time_and_sizes(arm6) -> None:
    limits = JointLimits.from_robot(arm6)
    with pytest.raises(InconsistentTrajectoryError) as caught:
        check_consistency(alternating(arm6.joint_names, step_rad=2.0), limits)
    error = caught.value
    assert (error.joint, error.time_s, error.quantity) == ("joint_1", 0.0, "position")
    assert error.change == pytest.approx(2.0) and error.integral == pytest.approx(0.0)
    assert "joint_1 at t = 0.0000 s" in str(error) and "changes by 2" in str(error)


@pytest.mark.parametrize(("step_rad", "times_the_limit"), [(2.0, 75.0), (4.0, 83.0)])
def test_the_executed_motion_of_such_a_file_is_refused_for_its_speed_between_the_points(
    arm6, step_rad: float, times_the_limit: float
) -> None:
    # Every point is inside the limits, at rest; the quintic through them is not.
    urdf_limits = JointLimits.from_robot(arm6, position_margin_rad=0.0, velocity_scale=1.0)
    trajectory = alternating(arm6.joint_names, step_rad=step_rad)
    assert np.all(trajectory.q >= urdf_limits.lower) and np.all(trajectory.q <= urdf_limits.upper)
    with pytest.raises(LimitViolationError) as caught:
        check_trajectory(trajectory, urdf_limits)
    error = caught.value
    assert error.joint == "joint_1" and error.between_points
    peak = np.abs(executed(trajectory)[1][:, 0]).max()
    assert peak / urdf_limits.velocity[0] >= times_the_limit


def test_a_too_low_publish_rate_is_refused_with_a_rate_that_then_works(arm6) -> None:
    chain, terms = DriveChain.create(6), DriveTerms()
    slow = ExcitationSettings(rate_hz=1.0, fundamental_hz=0.33, harmonics=3, optimise=False)
    with pytest.raises(SamplingRateError) as caught:
        plan_excitation(arm6, chain, terms, slow)
    error = caught.value
    assert error.minimum_rate_hz is not None and error.minimum_rate_hz > 1.0
    assert f"rate_hz >= {error.minimum_rate_hz:.4g} Hz would work" in str(error)
    plan = plan_excitation(arm6, chain, terms, dataclasses.replace(slow, rate_hz=error.minimum_rate_hz))
    assert_within(plan.trajectory, plan.limits)


def test_a_jerk_beyond_the_limit_is_refused_between_points(arm6) -> None:
    limits = JointLimits.from_robot(arm6, jerk_limits=np.full(6, 10.0))
    time = np.linspace(0.0, 1.0, 101)
    q = np.zeros((time.size, 6))
    q[:, 2] = 0.2 * np.sin(2.0 * np.pi * 2.0 * time)  # jerk 0.2 (4π)³ ≈ 397 rad/s³
    dq = np.zeros_like(q)
    dq[:, 2] = 0.2 * 4.0 * np.pi * np.cos(4.0 * np.pi * time)
    ddq = np.zeros_like(q)
    ddq[:, 2] = -0.2 * (4.0 * np.pi) ** 2 * np.sin(4.0 * np.pi * time)
    with pytest.raises(LimitViolationError) as caught:
        check_trajectory(SampledTrajectory(time, q, dq, ddq, arm6.joint_names), limits)
    assert (caught.value.joint, caught.value.quantity) == ("joint_3", "jerk")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    jerk=st.floats(20.0, 2000.0),
    start=st.lists(st.floats(0.0, 1.0), min_size=6, max_size=6),
    end=st.lists(st.floats(0.0, 1.0), min_size=6, max_size=6),
    rate_hz=st.sampled_from([50.0, 100.0, 500.0]),
)
def test_ramps_keep_the_jerk_limit_in_the_executed_motion(arm6, jerk, start, end, rate_hz) -> None:
    limits = JointLimits.from_robot(arm6, jerk_limits=np.full(6, jerk))
    zero = np.zeros(6)
    q0 = limits.lower + np.array(start) * (limits.upper - limits.lower)
    q1 = limits.lower + np.array(end) * (limits.upper - limits.lower)
    assert_within(ramp((q0, zero, zero), (q1, zero, zero), limits, rate_hz=rate_hz), limits)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    mode=st.sampled_from(["fourier", "segmented", "process"]),
    rate_hz=st.sampled_from([2.0, 5.0, 20.0, 100.0, 250.0]),
    margin=st.floats(0.0, 0.3),
    velocity_scale=st.floats(0.2, 1.0),
    acceleration_scale=st.floats(0.2, 1.0),
    jerk_scale=st.floats(0.2, 1.0),
    fundamental_hz=st.floats(0.05, 0.4),
    harmonics=st.integers(1, 5),
    seed=st.integers(0, 1000),
)
def test_every_accepted_plan_is_executed_within_every_limit(
    arm6, mode, rate_hz, margin, velocity_scale, acceleration_scale, jerk_scale, fundamental_hz, harmonics, seed
) -> None:
    settings_ = ExcitationSettings(
        mode=mode,
        rate_hz=rate_hz,
        position_margin_rad=margin,
        velocity_scale=velocity_scale,
        acceleration_scale=acceleration_scale,
        jerk_scale=jerk_scale,
        fundamental_hz=fundamental_hz,
        harmonics=harmonics,
        optimise=False,
        seed=seed,
        cycles=1,
    )
    try:
        plan = plan_excitation(arm6, DriveChain.create(6), DriveTerms(), settings_)
    except IdentificationError as error:
        assert str(error) and "\n" not in str(error)  # a refusal is one line naming the problem
        return
    assert_within(plan.trajectory, plan.limits)
    assert plan.torque_usage <= 1.0 + 1e-9


@st.composite
def files(draw: st.DrawFn) -> SampledTrajectory:
    """Random trajectory files: smooth and consistent, jittered, or with contradicting columns."""
    rate = draw(st.sampled_from([10.0, 50.0, 100.0, 500.0]))
    count = draw(st.integers(3, 60))
    time = np.arange(count) / rate
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    amplitude = draw(st.floats(0.0, 2.0))
    omega = 2.0 * math.pi * draw(st.floats(0.05, 3.0))
    phase = rng.uniform(0.0, 2.0 * math.pi, 6)
    q = amplitude * np.sin(omega * time[:, None] + phase)
    dq = amplitude * omega * np.cos(omega * time[:, None] + phase)
    ddq = -amplitude * omega**2 * np.sin(omega * time[:, None] + phase)
    kind = draw(st.sampled_from(["consistent", "zero_velocity", "noisy"]))
    if kind == "zero_velocity":
        dq[:], ddq[:] = 0.0, 0.0
    elif kind == "noisy":
        q = q + rng.normal(0.0, draw(st.floats(1e-6, 0.1)), q.shape)
    return SampledTrajectory(time, q, dq, ddq, tuple(f"joint_{j}" for j in range(1, 7)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trajectory=files(), velocity_scale=st.floats(0.2, 1.0))
def test_every_accepted_file_is_executed_within_every_limit(arm6, trajectory, velocity_scale) -> None:
    limits = JointLimits.from_robot(arm6, velocity_scale=velocity_scale)
    try:
        check_consistency(trajectory, limits)
        check_trajectory(trajectory, limits)
    except (InconsistentTrajectoryError, LimitViolationError) as error:
        assert "\n" not in str(error)
        return
    assert_within(trajectory, limits)
