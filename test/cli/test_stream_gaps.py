"""``dynid stream`` on a recording with a 30 s forward gap: the window restarts after it, never interpolated.

Before the gap rule the updates after such a gap reported windows of 31-41 s for a 10 s
setting and published friction off by tens of percent.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np

from dynamic_identification import cli
from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.model import DriveParameters, load_robot
from dynamic_identification.core.simulation import SensorModel, synthesize_measurements
from dynamic_identification.io.config import load_config, ros_parameters
from dynamic_identification.io.recording import recording_from_arrays, write_recording_csv

REPO_ROOT = Path(__file__).resolve().parents[2]
ARM6_URDF = REPO_ROOT / "urdf" / "dynid_arm6.urdf"
ARM6_CONFIG = REPO_ROOT / "config" / "dynid_arm6.yaml"
RATE_HZ = 500.0
HALF_S = 20.0
GAP_S = 30.0


def _recording_with_gap(path: Path) -> float:
    """Write 2 × 20 s of the shipped arm with a 30 s gap between them; returns the true Fc1, N·m."""
    robot = load_robot(ARM6_URDF)
    sim = ros_parameters(ARM6_CONFIG, "sim_robot")
    drive = DriveParameters.create(
        robot.n_joints,
        rotor_inertia=sim["rotor_inertia"],
        viscous=sim["viscous_friction"],
        coulomb=sim["coulomb_friction"],
        offset=sim["offset"],
    )
    sensor = SensorModel(current_noise_std_a=sim["current_noise_std"], encoder_counts_per_rev=sim["encoder_counts"])
    chain = load_config(str(ARM6_CONFIG)).drive_chain(robot.n_joints)
    time = np.arange(0.0, 2.0 * HALF_S, 1.0 / RATE_HZ)
    q, dq, ddq = random_fourier_trajectory(robot, margin=0.2, velocity_fraction=0.5, seed=5).evaluate(time)
    measured, currents = synthesize_measurements(robot, chain, drive, time, q, dq, ddq, sensor, seed=5)
    stamps = np.where(time < HALF_S, time, time + GAP_S)
    write_recording_csv(
        path, recording_from_arrays(time=stamps, joint_names=robot.joint_names, position=measured, current=currents)
    )
    return float(sim["coulomb_friction"][0])


def test_stream_restarts_the_window_after_a_gap(tmp_path: Path) -> None:
    data, out = tmp_path / "gap.csv", tmp_path / "updates.jsonl"
    true_fc1 = _recording_with_gap(data)
    argv = ["stream", "--urdf", ARM6_URDF, "--data", data, "--config", ARM6_CONFIG, "--out", out]
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main([str(arg) for arg in argv]) == 0
    updates = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    settings = load_config(str(ARM6_CONFIG)).window_settings()
    assert all(u["window_s"] <= settings.window_s + settings.update_period_s + 1e-6 for u in updates)
    resumed = HALF_S + GAP_S
    assert all(u["window_s"] <= u["time"] - resumed + 1e-6 for u in updates if u["time"] > resumed)
    after = [u["parameters"]["Fc1"] for u in updates if u["publishable"] and u["time"] > resumed]
    assert after, [u["reason"] for u in updates]
    assert np.all(np.abs(np.array(after) - true_fc1) < 0.2 * true_fc1), after
