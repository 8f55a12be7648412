"""Make the reference inputs and outputs of ``test/cli/test_reference.py`` (run once, by hand).

The input is a deterministic simulated recording of the shipped 6-axis arm
(``urdf/dynid_arm6.urdf``, drive chain and true drive parameters of
``config/dynid_arm6.yaml``): 24 s of a random Fourier excitation at 500 Hz with
jittered stamps, quantised encoders and noisy motor currents, rounded to the digits a
recorder would keep. The outputs are what ``dynid`` wrote for it when the reference
was made: ``identify`` (default configuration, ``estimation.reduction: sensitivity``
and ``essential``, and every other regression model with ``--accept-implausible``),
``predict`` and ``stream``. The test recomputes them and compares every number to
1e-9; the outputs here are therefore a record of behaviour, never regenerated to make
a test pass.

Run: ``PYTHONPATH=src python test/data/reference/generate.py``
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import yaml

from dynamic_identification import cli
from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.mechanism.robot import load_robot
from dynamic_identification.core.simulation import synthesize_measurements
from dynamic_identification.io.config import simulated_robot
from dynamic_identification.io.recording import recording_from_arrays, write_recording_csv

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[2]
URDF = REPO_ROOT / "urdf" / "dynid_arm6.urdf"
CONFIG = REPO_ROOT / "config" / "dynid_arm6.yaml"
RATE_HZ = 500.0
SECONDS = 24.0
SEED = 11
JITTER_S = 2e-4

MODELS = ("filtered_dynamic", "supplied_energy", "power", "filtered_power")
REDUCTIONS = ("sensitivity", "essential")


def make_recording(path: Path) -> None:
    """The simulated recording, written as a recording CSV."""
    robot = load_robot(URDF)
    sim = simulated_robot(CONFIG, robot.n_joints)
    rng = np.random.default_rng(SEED)
    samples = int(round(SECONDS * RATE_HZ))
    stamps = np.arange(samples) / RATE_HZ + rng.uniform(-JITTER_S, JITTER_S, samples)
    q, dq, ddq = random_fourier_trajectory(robot, margin=0.2, velocity_fraction=0.5, seed=SEED).evaluate(stamps)
    measured, currents = synthesize_measurements(
        robot, sim.drive_chain, sim.drive, stamps, q, dq, ddq, sim.sensor, seed=SEED
    )
    recording = recording_from_arrays(
        time=np.round(stamps, 7),
        joint_names=robot.joint_names,
        position=np.round(measured, 10),
        current=np.round(currents, 6),
    )
    write_recording_csv(path, recording)


def config_with_reduction(path: Path, reduction: str) -> None:
    """The shipped configuration with ``estimation.reduction`` set."""
    document = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    document["estimator"]["ros__parameters"]["estimation"]["reduction"] = reduction
    path.write_text(yaml.safe_dump(document), encoding="utf-8")


def dynid(*argv: str | Path) -> None:
    """Run ``dynid``; refuse to record a failure."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(arg) for arg in argv])
    if code != 0:
        raise SystemExit(f"dynid {' '.join(map(str, argv))} failed: {err.getvalue()}")


def main() -> None:
    inputs, outputs = HERE / "inputs", HERE / "outputs"
    inputs.mkdir(exist_ok=True)
    outputs.mkdir(exist_ok=True)
    data = inputs / "recording.csv"
    make_recording(data)
    identify = ["identify", "--urdf", URDF, "--data", data]
    dynid(*identify, "--config", CONFIG, "--out", outputs / "identify_default.yaml")
    for reduction in REDUCTIONS:
        config = inputs / f"config_{reduction}.yaml"
        config_with_reduction(config, reduction)
        dynid(*identify, "--config", config, "--out", outputs / f"identify_{reduction}.yaml")
    for model in MODELS:
        out = outputs / f"identify_{model}.yaml"
        dynid(*identify, "--config", CONFIG, "--model", model, "--accept-implausible", "--out", out)
    dynid(
        "predict",
        "--params",
        outputs / "identify_default.yaml",
        "--data",
        data,
        "--config",
        CONFIG,
        "--out",
        outputs / "predict.csv",
    )
    dynid(
        "stream",
        "--urdf",
        URDF,
        "--data",
        data,
        "--config",
        CONFIG,
        "--out",
        outputs / "stream.jsonl",
        "--params-out",
        outputs / "stream_params.yaml",
    )


if __name__ == "__main__":
    main()
