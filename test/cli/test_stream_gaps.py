"""``dynid stream`` on a recording with a 30 s forward gap: the window restarts after it, never interpolated.

Before the gap rule the updates after such a gap reported windows of 31-41 s for a 10 s
setting and published friction off by tens of percent.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dynamic_identification import cli
from dynamic_identification.io.config import load_config
from dynamic_identification.io.recording import recording_from_arrays, write_recording_csv

REPO_ROOT = Path(__file__).resolve().parents[2]
ARM6_URDF = REPO_ROOT / "urdf" / "dynid_arm6.urdf"
ARM6_CONFIG = REPO_ROOT / "config" / "dynid_arm6.yaml"
RATE_HZ = 500.0
HALF_S = 20.0
GAP_S = 30.0


def test_stream_restarts_the_window_after_a_gap(arm6_run: Callable, tmp_path: Path) -> None:
    data, out = tmp_path / "gap.csv", tmp_path / "updates.jsonl"
    run = arm6_run(2.0 * HALF_S, rate_hz=RATE_HZ, seed=5)
    stamps = np.where(run.stamps < HALF_S, run.stamps, run.stamps + GAP_S)
    joints = run.robot.joint_names
    write_recording_csv(
        data, recording_from_arrays(time=stamps, joint_names=joints, position=run.q, current=run.currents)
    )
    true_fc1 = run.coulomb_friction[0]
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
