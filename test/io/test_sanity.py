"""Unit checks of recordings: time in seconds, positions in radians and velocities in rad/s, judged against the
URDF."""

from __future__ import annotations

import numpy as np
import pytest

from dynamic_identification.io.sanity import (
    position_problem,
    recorded_speed_problem,
    speed_problem,
    time_unit_problem,
)

NAMES = ("j1", "j2")
LOWER = np.array([-2.0, -np.inf])
UPPER = np.array([2.0, np.inf])
VELOCITY = np.array([2.0, 3.0])
TIME = np.arange(2000) / 1000.0
MOTION = np.column_stack([1.5 * np.sin(2.0 * np.pi * 0.2 * TIME), 20.0 + 2.5 * np.sin(TIME)])


def test_a_plausible_recording_passes() -> None:
    assert time_unit_problem(TIME) is None
    assert position_problem(NAMES, MOTION, LOWER, UPPER) is None
    assert speed_problem(NAMES, TIME, MOTION, VELOCITY) is None


@pytest.mark.parametrize(
    ("scale", "offset", "unit"),
    [(1e9, 1.7e18, "nanoseconds"), (1e6, 0.0, "microseconds"), (1e3, 0.0, "milliseconds")],
)
def test_time_in_another_unit_is_named(scale: float, offset: float, unit: str) -> None:
    assert unit in (time_unit_problem(offset + TIME * scale) or "")


def test_subnormal_time_steps_are_not_seconds() -> None:
    assert "time must be in seconds" in (time_unit_problem(np.arange(100) * 5e-324) or "")


def test_positions_in_degrees_leave_the_limits() -> None:
    assert "degrees" in (position_problem(NAMES, np.degrees(MOTION), LOWER, UPPER) or "")


def test_recorded_velocities_in_degrees_per_second_are_caught_and_in_rad_s_pass() -> None:
    """``J/velocity`` is used as recorded by ``predict`` of a model identified with measured velocities."""
    velocities = np.gradient(MOTION, TIME, axis=0)
    assert recorded_speed_problem(NAMES, velocities, VELOCITY) is None
    problem = recorded_speed_problem(NAMES, np.degrees(velocities), VELOCITY) or ""
    assert "j1/velocity" in problem and "degrees per second" in problem


def test_a_continuous_joint_in_degrees_is_caught_by_its_speed() -> None:
    """No position limit to leave: 57 times the speed gives it away."""
    degrees = MOTION.copy()
    degrees[:, 1] = np.degrees(degrees[:, 1] - 20.0)
    problem = speed_problem(NAMES, TIME, degrees, VELOCITY) or ""
    assert "j2" in problem and "degrees" in problem


def test_encoder_quantisation_and_jitter_are_not_speed() -> None:
    rng = np.random.default_rng(0)
    jittered = TIME + rng.uniform(-2e-4, 2e-4, TIME.size)
    quantised = np.round(MOTION / 1e-4) * 1e-4
    assert speed_problem(NAMES, jittered, quantised, VELOCITY) is None


@pytest.mark.parametrize(
    ("share", "times_limit"), [(0.02, 6.0), (0.02, 4.0), (0.005, 10.0), (0.012, 5.5), (0.008, 3.0)]
)
def test_the_99th_percentile_speed_decides_however_few_samples_are_fast(share: float, times_limit: float) -> None:
    """A joint at ``times_limit`` × its limit for ``share`` of the time: refused exactly when its 99th percentile
    speed exceeds 5 × the limit, as the percentile of every speed says."""
    time = np.arange(20_000) / 1000.0
    speed = np.full(time.size, 0.5 * VELOCITY[0])
    speed[: int(share * time.size)] = times_limit * VELOCITY[0]
    travelled = np.concatenate([[0.0], np.cumsum(speed[1:] * np.diff(time))])
    positions = np.column_stack([travelled, np.full(time.size, 20.0)])
    stride = 10
    speeds = np.abs(positions[stride:, 0] - positions[:-stride, 0]) / (time[stride:] - time[:-stride])
    refused = np.percentile(speeds, 99.0) > 5.0 * VELOCITY[0]
    problem = speed_problem(NAMES, time, positions, VELOCITY)
    assert (problem is not None) == refused, (problem, np.percentile(speeds, 99.0))
    assert problem is None or "j1 moves at" in problem
