"""Trajectory CSV: exact round trip and one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from dynamic_identification.core.errors import DataError
from dynamic_identification.core.excitation import SampledTrajectory
from dynamic_identification.io.trajectory import read_trajectory_csv, write_trajectory_csv


def _trajectory() -> SampledTrajectory:
    rng = np.random.default_rng(0)
    time = np.cumsum(rng.uniform(1e-3, 2e-3, 50))
    return SampledTrajectory(
        time, rng.normal(size=(50, 2)), rng.normal(size=(50, 2)), rng.normal(size=(50, 2)), ("shoulder/pan", "elbow")
    )


def test_round_trip_is_exact(tmp_path: Path) -> None:
    trajectory = _trajectory()
    write_trajectory_csv(tmp_path / "t.csv", trajectory)
    back = read_trajectory_csv(tmp_path / "t.csv")
    assert back.joint_names == trajectory.joint_names
    for name in ("time", "q", "dq", "ddq"):
        assert_array_equal(getattr(back, name), getattr(trajectory, name))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("time,a/position,a/velocity\n0,1,2\n1,1,2\n", "lacks columns \\['a/acceleration'\\]"),
        ("a/position,a/velocity,a/acceleration\n0,1,2\n", "no 'time' column"),
        ("time,a/position,a/velocity,a/jerk\n0,1,2,3\n", "unknown column 'a/jerk'"),
        ("time,a/position,a/velocity,a/acceleration\n0,1,2,3\n0,1,nan,3\n", "line 3.*'a/velocity'.*not finite"),
        ("time,a/position,a/velocity,a/acceleration\n1,1,2,3\n0,1,2,3\n", "time must increase"),
    ],
)
def test_bad_files_are_refused_naming_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=message):
        read_trajectory_csv(path)
