"""Unit checks of recordings: time in seconds and positions in radians, judged against the URDF."""

from __future__ import annotations

import numpy as np
import pytest

from dynamic_identification.io.sanity import position_problem, speed_problem, time_unit_problem

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
