"""``dynid identify`` and ``dynid predict`` of a closed-loop robot whose passive joints' bearings have friction.

The tests' 3-RRR in an inclined plane, 5 % of the motors' friction in each passive joint, tracked by the
constrained forward simulation (1 % current noise, 14-bit encoders); its configuration leaves
``estimation.passive_friction`` at its default.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml

from dynamic_identification.core.mechanism.robot import DriveTerms
from dynamic_identification.core.simulation import TrackingRun
from dynamic_identification.feedforward import load_feedforward
from dynamic_identification.io.parameters import load_parameters
from dynamic_identification.io.recording import read_recording_csv, recording_from_arrays, write_recording_csv
from dynid_runner import dynid
from three_rrr import (
    ACTUATED,
    bearing_friction_run,
    load_three_rrr,
    platform_motion,
    three_rrr_config,
    track,
    true_motor_torques,
)


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


def _window(identified: Identified, folder: Path, *, offered: bool) -> tuple[Path, float]:
    """``dynid stream`` on the training recording (``estimation.passive_friction`` ``offered``): the window's last
    publishable parameters and the relative error of their feedforward against the true torques (bearing friction
    included) along a motion not identified on."""
    config = yaml.safe_load(three_rrr_config(folder).read_text(encoding="utf-8"))
    estimator = config["/**/estimator"]["ros__parameters"]
    estimator["estimation"]["passive_friction"] = offered
    # The platform motion's 10 s windows leave the base parameters' condition number at 200-3000 with or without
    # the bearings: a 20 s window, and the gate of the four-bar's configuration.
    estimator["window"] = {"window_s": 20.0, "max_condition_number": 1000.0}
    config_path = folder / f"three_rrr_{offered}.yaml"
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    params = folder / f"window_{offered}.yaml"
    code, _, error = dynid(
        "stream", "--urdf", identified.folder / "three_rrr.urdf", "--data", identified.folder / "train.csv",
        "--config", config_path, "--out", folder / f"updates_{offered}.jsonl", "--params-out", params,
    )  # fmt: skip
    assert code == 0, error
    model = load_three_rrr(identified.folder)
    _, q, dq, ddq = platform_motion(2, 10.0, dt=0.01)
    expected = true_motor_torques(model, model.complete_motion(q, dq, ddq))
    torques = load_feedforward(params).torques(q, dq, ddq)
    return params, float(np.linalg.norm(torques - expected) / np.linalg.norm(expected))


def test_the_window_is_offered_the_bearing_friction_and_its_reduction_keeps_what_the_data_need(
    identified: Identified, tmp_path: Path
) -> None:
    with_friction, error_with = _window(identified, tmp_path, offered=True)
    without, error_without = _window(identified, tmp_path, offered=False)
    bearings = set(load_three_rrr(identified.folder).with_passive_friction().passive_friction_names(DriveTerms()))
    assert {entry.name for entry in load_parameters(with_friction).parameters} & bearings
    assert not {entry.name for entry in load_parameters(without).parameters} & bearings
    # Measured: 1.25 % from the true torques with the bearings offered, 1.96 % without (the identification of the
    # whole recording: 0.57 %).
    assert error_with < 0.8 * error_without, (error_with, error_without)
