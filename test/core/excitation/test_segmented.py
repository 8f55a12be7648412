"""Segmented per-joint-fixed trajectories ([Gautier2013] §IV.B): held joints still, C² joins, limits kept."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.fourier import FourierTrajectory
from dynamic_identification.core.excitation.safety import JointLimits, check_trajectory
from dynamic_identification.core.excitation.segmented import (
    SegmentedTrajectory,
    default_segmented_trajectory,
    fit_motion,
    segmented_trajectory,
)
from dynamic_identification.core.mechanism.robot import RobotModel, load_robot

RATE_HZ = 200.0
PANDA_ARM = [f"panda_joint{i}" for i in range(1, 8)]


@pytest.fixture(scope="module")
def panda(example_urdf: Callable[[str], Path]) -> RobotModel:
    return load_robot(example_urdf("panda.urdf"), PANDA_ARM)


@pytest.fixture(scope="module")
def arm6_segmented(arm6: RobotModel) -> tuple[SegmentedTrajectory, JointLimits]:
    limits = JointLimits.from_robot(arm6)
    return default_segmented_trajectory(arm6, limits, rate_hz=RATE_HZ, seed=3), limits


def _junctions(segmented: SegmentedTrajectory) -> list[int]:
    """Sample indices where a segment and a transition meet (first sample of the later piece)."""
    indices = []
    for segment in segmented.segments:
        indices += [segment.start, segment.stop]
    return [i for i in indices if 0 < i < segmented.trajectory.time.shape[0]]


def _assert_c2(segmented: SegmentedTrajectory, limits: JointLimits) -> None:
    """Per-sample changes fit the limits, and at every join q, q̇, q̈ continue as a C² motion would.

    With ``J`` the largest jerk inside the pieces, a C² motion obeys the Taylor bounds
    ``|q⁺ − (q + q̇ dt + q̈ dt²/2)| ≤ J dt³/6``, ``|q̇⁺ − (q̇ + q̈ dt)| ≤ J dt²/2`` and
    ``|q̈⁺ − q̈| ≤ J dt``; a jump in any of them breaks its bound.
    """
    trajectory = segmented.trajectory
    dt = 1.0 / RATE_HZ
    assert_allclose(np.diff(trajectory.time), dt, rtol=1e-9)
    assert np.all(np.abs(np.diff(trajectory.q, axis=0)) <= limits.velocity * dt * (1 + 1e-9))
    assert np.all(np.abs(np.diff(trajectory.dq, axis=0)) <= limits.acceleration * dt * (1 + 1e-9))
    junctions = _junctions(segmented)
    inside = np.ones(trajectory.time.shape[0] - 1, dtype=bool)
    inside[[i - 1 for i in junctions]] = False
    jerk = np.abs(np.diff(trajectory.ddq, axis=0))[inside].max(axis=0) / dt
    slack = 1.5 * jerk + 1e-9
    for i in junctions:
        q, dq, ddq = trajectory.q[i - 1], trajectory.dq[i - 1], trajectory.ddq[i - 1]
        assert np.all(np.abs(trajectory.q[i] - (q + dq * dt + 0.5 * ddq * dt**2)) <= slack * dt**3 / 6), i
        assert np.all(np.abs(trajectory.dq[i] - (dq + ddq * dt)) <= slack * dt**2 / 2), i
        assert np.all(np.abs(trajectory.ddq[i] - ddq) <= slack * dt), i


def test_one_segment_per_joint_in_order(arm6_segmented: tuple[SegmentedTrajectory, JointLimits]) -> None:
    segmented, _ = arm6_segmented
    assert [s.first_moving_joint for s in segmented.segments] == list(range(6))
    assert all(s.stop - s.start == int(10.0 * RATE_HZ) for s in segmented.segments)  # one 0.1 Hz period each
    assert all(a.stop < b.start for a, b in zip(segmented.segments[:-1], segmented.segments[1:], strict=True))


def test_held_joints_are_exactly_still_in_segments_and_transitions(
    arm6_segmented: tuple[SegmentedTrajectory, JointLimits],
) -> None:
    segmented, _ = arm6_segmented
    trajectory = segmented.trajectory
    segments = segmented.segments
    for k, segment in enumerate(segments):
        # joints 0..k-1 stand still through segment k and the transition after it
        stop = segments[k + 1].start if k + 1 < len(segments) else trajectory.time.shape[0]
        window = slice(segment.start, stop)
        assert_array_equal(trajectory.dq[window, :k], 0.0)
        assert_array_equal(trajectory.ddq[window, :k], 0.0)
        assert_array_equal(trajectory.q[window, :k], np.tile(segmented.hold_positions[:k], (stop - segment.start, 1)))
        moving = trajectory.dq[segment.start : segment.stop, k:]
        assert np.all(np.abs(moving).max(axis=0) > 1e-3), "every joint k..n-1 moves in segment k"


def test_transitions_are_c2_and_limits_hold(arm6_segmented: tuple[SegmentedTrajectory, JointLimits]) -> None:
    segmented, limits = arm6_segmented
    check_trajectory(segmented.trajectory, limits)
    _assert_c2(segmented, limits)


def test_starts_and_ends_at_rest(arm6_segmented: tuple[SegmentedTrajectory, JointLimits]) -> None:
    segmented, _ = arm6_segmented
    trajectory = segmented.trajectory
    assert_array_equal(trajectory.dq[[0, -1]], 0.0)
    assert_array_equal(trajectory.ddq[[0, -1]], 0.0)
    assert_array_equal(trajectory.q[-1], segmented.hold_positions)


def test_segments_follow_their_motion_exactly(arm6: RobotModel) -> None:
    limits = JointLimits.from_robot(arm6)
    rng = np.random.default_rng(0)
    motions = [
        fit_motion(
            FourierTrajectory(0.5, limits.centre, rng.normal(size=(3, 6)), rng.normal(size=(3, 6))),
            limits,
            moving=range(k, 6),
        )
        for k in range(6)
    ]
    segmented = segmented_trajectory(
        motions, limits, hold_positions=limits.centre, segment_duration_s=2.0, rate_hz=RATE_HZ
    )
    trajectory = segmented.trajectory
    for k, segment in enumerate(segmented.segments):
        local = np.arange(segment.stop + 1 - segment.start) / RATE_HZ  # 2 s is a whole number of samples
        assert_allclose(trajectory.time[segment.start : segment.stop + 1] - trajectory.time[segment.start], local)
        q, dq, ddq = motions[k].evaluate(local)
        # the segment proper, and the transition's first sample which is the motion one sample later
        assert_array_equal(trajectory.q[segment.start : segment.stop + 1, k:], q[:, k:])
        assert_array_equal(trajectory.dq[segment.start : segment.stop + 1, k:], dq[:, k:])
        assert_array_equal(trajectory.ddq[segment.start : segment.stop + 1, k:], ddq[:, k:])


def test_panda_arm_segmented_trajectory_keeps_limits(panda: RobotModel) -> None:
    limits = JointLimits.from_robot(panda)
    segmented = default_segmented_trajectory(panda, limits, rate_hz=RATE_HZ, seed=1, fundamental_hz=0.2)
    assert len(segmented.segments) == 7
    check_trajectory(segmented.trajectory, limits)
    _assert_c2(segmented, limits)


def test_fit_motion_starts_at_rest_and_keeps_margins(arm6: RobotModel) -> None:
    limits = JointLimits.from_robot(arm6)
    rng = np.random.default_rng(5)
    raw = FourierTrajectory(0.3, limits.centre, 5.0 * rng.normal(size=(4, 6)), 5.0 * rng.normal(size=(4, 6)))
    motion = fit_motion(raw, limits, moving=[2, 3, 4, 5], position_margin=0.2, velocity_fraction=0.5)
    q, dq, ddq = motion.evaluate(np.linspace(0.0, motion.period_s, 4001))
    assert_allclose(dq[0], 0.0, atol=1e-12)
    assert_allclose(ddq[0], 0.0, atol=1e-12)
    assert_array_equal(np.ptp(q[:, :2], axis=0), 0.0)
    half = 0.5 * (limits.upper - limits.lower)
    assert np.all(q <= limits.upper - 0.2 * half + 1e-4) and np.all(q >= limits.lower + 0.2 * half - 1e-4)
    assert np.all(np.abs(dq) <= 0.5 * limits.velocity * (1 + 1e-3))


def test_bad_arguments_are_refused(arm6: RobotModel) -> None:
    limits = JointLimits.from_robot(arm6)
    motion = FourierTrajectory(0.5, limits.centre, np.ones((2, 6)), np.zeros((2, 6)))
    with pytest.raises(IdentificationError, match="one Fourier motion per joint"):
        segmented_trajectory([motion], limits, hold_positions=limits.centre, segment_duration_s=2.0, rate_hz=100.0)
    with pytest.raises(IdentificationError, match="hold_positions"):
        segmented_trajectory(
            [motion] * 6, limits, hold_positions=limits.upper + 1.0, segment_duration_s=2.0, rate_hz=100.0
        )
    with pytest.raises(IdentificationError, match="at least 2 harmonics"):
        fit_motion(FourierTrajectory(0.5, limits.centre, np.ones((1, 6)), np.ones((1, 6))), limits)


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    joints=st.integers(1, 4),
    position_margin=st.floats(0.02, 0.4),
    fraction=st.floats(0.3, 0.95),
    samples_per_period=st.integers(20, 400),
    harmonics=st.integers(2, 6),
    periods=st.integers(1, 2),
)
def test_never_violates_a_limit(
    seed: int,
    joints: int,
    position_margin: float,
    fraction: float,
    samples_per_period: int,
    harmonics: int,
    periods: int,
) -> None:
    rng = np.random.default_rng(seed)
    lower = rng.uniform(-3.0, 0.0, joints)
    limits = JointLimits(
        tuple(f"j{i}" for i in range(joints)),
        lower,
        lower + rng.uniform(0.05, 4.0, joints),
        rng.uniform(0.2, 8.0, joints),
        rng.uniform(0.5, 40.0, joints),
    )
    fundamental_hz = RATE_HZ / samples_per_period
    motions = [
        fit_motion(
            FourierTrajectory(
                fundamental_hz,
                rng.uniform(limits.lower, limits.upper),
                rng.normal(size=(harmonics, joints)),
                rng.normal(size=(harmonics, joints)),
            ),
            limits,
            moving=range(k, joints),
            position_margin=position_margin,
            velocity_fraction=fraction,
            acceleration_fraction=fraction,
        )
        for k in range(joints)
    ]
    segmented = segmented_trajectory(
        motions,
        limits,
        hold_positions=rng.uniform(limits.lower, limits.upper),
        segment_duration_s=periods / fundamental_hz,
        rate_hz=RATE_HZ,
    )
    check_trajectory(segmented.trajectory, limits)
    assert len(segmented.segments) == joints
