"""``dynid identify`` and ``dynid predict`` of a closed-loop robot whose passive joints' bearings have friction.

The tests' 3-RRR in an inclined plane, 5 % of the motors' friction in each passive joint, tracked by the
constrained forward simulation (1 % current noise, 14-bit encoders); its configuration leaves
``estimation.passive_friction`` at its default.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from dynamic_identification import cli
from dynamic_identification.core.simulation import TrackingRun
from dynamic_identification.feedforward import load_feedforward
from dynamic_identification.io.parameters import load_parameters
from dynamic_identification.io.recording import read_recording_csv, recording_from_arrays, write_recording_csv
from three_rrr import (
    ACTUATED,
    bearing_friction_run,
    load_three_rrr,
    platform_motion,
    three_rrr_config,
    track,
    true_motor_torques,
)


def dynid(*argv: str | Path) -> tuple[int, str, str]:
    """Run ``dynid`` in-process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(arg) for arg in argv])
    return code, out.getvalue(), err.getvalue()


def _csv(path: Path, run: TrackingRun) -> Path:
    write_recording_csv(
        path,
        recording_from_arrays(time=run.time_s, joint_names=ACTUATED, position=run.q, effort=run.joint_torques_nm),
    )
    return path


@dataclass(frozen=True)
class Identified:
    folder: Path
    params: Path
    report: str
    validation: Path
    validation_torques: np.ndarray


@pytest.fixture(scope="module")
def identified(tmp_path_factory: pytest.TempPathFactory) -> Identified:
    folder = tmp_path_factory.mktemp("three_rrr_identify")
    model = load_three_rrr(folder)
    config = three_rrr_config(folder)
    data = _csv(folder / "train.csv", bearing_friction_run(model))
    held_out = track(model, platform_motion(2, 10.0), seed=12)
    validation = _csv(folder / "validation.csv", held_out)
    params = folder / "params.yaml"
    code, report, error = dynid(
        "identify", "--urdf", folder / "three_rrr.urdf", "--data", data, "--config", config, "--out", params
    )
    assert code == 0, error
    return Identified(folder, params, report, validation, held_out.joint_torques_nm)


def test_identify_publishes_the_passive_joints_friction_and_says_why_in_one_line(identified: Identified) -> None:
    lines = [line for line in identified.report.splitlines() if line.startswith("model: passive-joint friction")]
    assert len(lines) == 1 and "explains the data significantly better" in lines[0]
    names = {entry.name for entry in load_parameters(identified.params).parameters}
    assert {"Fv2", "Fc2", "Fv3", "Fc3", "Fv5", "Fc5", "Fv7", "Fc7"} <= names


def test_predict_rebuilds_the_model_with_the_passive_joints_friction(identified: Identified) -> None:
    out = identified.folder / "predicted.csv"
    code, _, error = dynid("predict", "--params", identified.params, "--data", identified.validation, "--out", out)
    assert code == 0, error
    # Measured: 2.5 % from the recorded torques (their 1 % current noise and the smoothed Coulomb friction of the
    # simulation at velocity reversals included).
    predicted = read_recording_csv(out).effort
    assert predicted is not None
    measured = identified.validation_torques
    covered = np.all(predicted != 0.0, axis=1)
    error_norm = np.linalg.norm(predicted[covered] - measured[covered]) / np.linalg.norm(measured[covered])
    assert error_norm < 0.05


def test_the_feedforward_of_the_identified_file_includes_the_bearing_friction(identified: Identified) -> None:
    # Measured: 0.57 % from the noise-free torques (bearing friction included) along a motion not identified on.
    model = load_three_rrr(identified.folder)
    feedforward = load_feedforward(identified.params)
    assert feedforward.mechanism.passive_friction
    _, q, dq, ddq = platform_motion(2, 10.0, dt=0.01)
    motion = model.complete_motion(q, dq, ddq)
    expected = true_motor_torques(model, motion)
    torques = feedforward.torques(q, dq, ddq)
    assert np.linalg.norm(torques - expected) / np.linalg.norm(expected) < 0.01
