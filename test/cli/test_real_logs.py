"""``dynid`` on a log as a real driver writes it: 1 kHz, jittered stamps, a hiccup of 5-10 samples every 3-5 s.

The log is the realistic Panda of :mod:`dynamic_identification.testing.realistic` (link-side torque
sensors, stiction, coloured noise, drifting offsets) with the stamps of the public 1 kHz logs of such
arms. Before the one stamp-and-gap rule each hiccup cut the data: ``dynid stream`` with defaults
published none of its updates ("window is empty (waiting for data)"), and ``dynid predict`` left a
fifth of the rows without a torque (the filter's edges around every hiccup).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from dynamic_identification import cli
from dynamic_identification.io.recording import recording_from_arrays, write_recording_csv
from dynamic_identification.testing.realistic import (
    RealisticRecording,
    excitation_trajectory,
    generate_recording,
    panda_hiccups_preset,
    plan_stamps,
)

TRAIN_S = 20.0
VALIDATION_S = 8.0
SEED = 2
HICCUP_INTERVAL_S = (3.0, 4.9)
"""Hiccups 3-4.9 s apart: never the 5 s without one that the window used to wait for."""


def write_log(path: Path, data: RealisticRecording, rows: np.ndarray | None = None) -> Path:
    """The recording (its ``rows``, default all) as a recording CSV, stamps and values as the driver gave them."""
    keep = slice(None) if rows is None else rows
    recording = recording_from_arrays(
        data.time[keep], data.joint_names, data.position[keep], velocity=data.velocity[keep], effort=data.effort[keep]
    )
    write_recording_csv(path, recording)
    return path


@dataclasses.dataclass(frozen=True)
class Logs:
    folder: Path
    urdf: Path
    config: Path
    train: Path
    clean: Path
    validation: Path
    truth: np.ndarray


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory, example_urdf) -> Logs:
    """A training log with hiccups, the same log without them, a validation log, the noise-free validation torques."""
    folder = tmp_path_factory.mktemp("real_logs")
    # The URDF beside the logs, as a user keeps it: the parameter files name it relative to themselves.
    urdf = Path(shutil.copy(example_urdf("panda.urdf"), folder / "panda.urdf"))
    robot_settings = panda_hiccups_preset(urdf)
    hiccups = dataclasses.replace(robot_settings.stamps, hiccup_interval_s=HICCUP_INTERVAL_S)
    clean = robot_settings.with_settings(stamps=dataclasses.replace(hiccups, hiccup_interval_s=(0.0, 0.0)))
    robot = robot_settings.robot()
    train = generate_recording(
        robot, clean, excitation_trajectory(robot, clean, seed=SEED), duration_s=TRAIN_S, seed=SEED
    )
    # The generator's stamp plan with the hiccups, from the same draws: the same log less the rows they lose.
    lost = ~np.isin(plan_stamps(clean.stamps, TRAIN_S, np.random.default_rng(SEED)).rows,
                    plan_stamps(hiccups, TRAIN_S, np.random.default_rng(SEED)).rows)  # fmt: skip
    validation = generate_recording(
        robot, clean, excitation_trajectory(robot, clean, seed=SEED + 1), duration_s=VALIDATION_S, seed=SEED + 1
    )
    config = folder / "panda.yaml"
    chain = robot_settings.drive_chain
    parameters = {
        "joints": list(robot.joint_names),
        "drive_chain": {"gear_ratios": chain.gear_ratios.tolist(), "drive_gains": chain.drive_gains.tolist()},
    }
    config.write_text(yaml.safe_dump({"/**": {"ros__parameters": parameters}}))
    return Logs(
        folder=folder,
        urdf=urdf,
        config=config,
        train=write_log(folder / "hiccups.csv", train, np.flatnonzero(~lost)),
        clean=write_log(folder / "clean.csv", train),
        validation=write_log(folder / "validation.csv", validation),
        truth=validation.truth.torque_nm,
    )


def dynid(*argv: str | Path) -> None:
    assert cli.main([str(arg) for arg in argv]) == 0


def predicted(logs: Logs, params: Path, data: Path, name: str) -> np.ndarray:
    """``dynid predict``'s torques at every row of ``data`` (NaN where it gives none)."""
    out = logs.folder / f"predicted_{name}.csv"
    dynid("predict", "--params", params, "--data", data, "--out", out)
    table = np.genfromtxt(out, delimiter=",", names=True)
    return np.column_stack([table[name] for name in table.dtype.names if name.endswith("effort")])


def test_the_log_has_the_hiccups_of_a_real_driver(logs: Logs) -> None:
    time = np.loadtxt(logs.train, delimiter=",", skiprows=1, usecols=0)
    steps = np.diff(time)
    assert 4 <= np.count_nonzero(steps > 5e-3) <= 7


def test_stream_with_defaults_publishes_most_of_its_updates(logs: Logs) -> None:
    out = logs.folder / "updates.jsonl"
    dynid("stream", "--urdf", logs.urdf, "--data", logs.train, "--config", logs.config, "--out", out)
    updates = [json.loads(line) for line in out.read_text().splitlines()]
    published = [update for update in updates if update["publishable"]]
    assert len(published) >= len(updates) / 2, [update["reason"] for update in updates]


@pytest.fixture(scope="module")
def identified(logs: Logs) -> dict[str, Path]:
    """``dynid identify`` with the user's configuration on the log with hiccups and on the same log without."""
    parameters = {}
    for name, log in (("hiccups", logs.train), ("clean", logs.clean)):
        parameters[name] = logs.folder / f"{name}.yaml"
        dynid("identify", "--urdf", logs.urdf, "--data", log, "--config", logs.config, "--out", parameters[name])
    return parameters


def test_identify_on_the_log_with_hiccups_predicts_as_well_as_without_them(
    logs: Logs, identified: dict[str, Path]
) -> None:
    errors = {}
    for name, params in identified.items():
        torques = predicted(logs, params, logs.validation, name)
        assert np.isfinite(torques).all()
        errors[name] = np.linalg.norm(torques - logs.truth) / np.linalg.norm(logs.truth)
    assert errors["hiccups"] <= 1.05 * errors["clean"], errors


def test_predict_gives_a_torque_for_every_row_of_a_log_with_hiccups(logs: Logs, identified: dict[str, Path]) -> None:
    torques = predicted(logs, identified["clean"], logs.train, "of_hiccups")
    assert np.isfinite(torques).all(axis=1).mean() >= 0.99
