"""Adversarial corpus of ``dynid``: bad arguments, recordings, URDFs, configurations and parameter files.

Each case builds one bad input next to valid ones and runs ``dynid`` in-process
(:func:`dynamic_identification.cli.main`). Every case must end with exit code 2 and
exactly one bounded ``dynid VERB: error: …`` line on stderr naming the problem (no
traceback, no value printed whole); warning lines, also bounded, may precede it. A
few cases run ``dynid`` as a real child process to show the same at process level.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml

from dynamic_identification import cli
from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.mechanism.robot import DriveTerms, load_robot
from dynamic_identification.core.simulation import inverse_dynamics
from dynamic_identification.io.config import load_config, simulated_robot
from dynamic_identification.io.parameters import ParameterFile, dump_parameters, write_parameters_atomic
from dynamic_identification.io.recording import recording_from_arrays, write_recording_csv
from repo_paths import ARM6_CONFIG, ARM6_URDF, REPO_ROOT
from true_parameters import true_parameter_file

MAX_LINE = 500
"""Longest stderr line accepted, characters (the messages are cut at 400)."""
RATE_HZ = 500.0


@dataclass(frozen=True)
class Inputs:
    """Valid inputs the cases start from, in a folder of their own."""

    folder: Path
    recording: Path
    header: str
    rows: list[str]
    time: np.ndarray
    position: np.ndarray
    effort: np.ndarray
    params: Path
    params_text: str

    def write(self, name: str, text: str | bytes) -> Path:
        path = self.folder / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return path

    def csv(self, name: str, *, time: np.ndarray | None = None, position: np.ndarray | None = None) -> Path:
        recording = recording_from_arrays(
            time=self.time if time is None else time,
            joint_names=[f"joint_{k}" for k in range(1, 7)],
            position=self.position if position is None else position,
            effort=self.effort,
        )
        path = self.folder / name
        write_recording_csv(path, recording)
        return path

    def config(self, name: str, edit: Callable[[dict], None]) -> Path:
        document = yaml.safe_load(ARM6_CONFIG.read_text(encoding="utf-8"))
        edit(document)
        return self.write(name, yaml.safe_dump(document))

    def params_with(self, name: str, edit: Callable[[dict], None]) -> Path:
        document = yaml.safe_load(self.params_text)
        edit(document)
        return self.write(name, yaml.safe_dump(document))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    folder = tmp_path_factory.mktemp("corpus")
    robot = load_robot(ARM6_URDF)
    trajectory = random_fourier_trajectory(robot, margin=0.2, velocity_fraction=0.5, seed=11)
    time_s = np.arange(int(4.0 * RATE_HZ)) / RATE_HZ
    q, dq, ddq = trajectory.evaluate(time_s)
    config = load_config(str(ARM6_CONFIG))
    chain = config.drive_chain(robot.n_joints)
    drive = simulated_robot(ARM6_CONFIG, robot.n_joints).drive
    effort = inverse_dynamics(robot, chain, drive, q, dq, ddq)
    recording_path = folder / "recording.csv"
    write_recording_csv(
        recording_path, recording_from_arrays(time=time_s, joint_names=robot.joint_names, position=q, effort=effort)
    )
    lines = recording_path.read_text(encoding="utf-8").splitlines()
    params = true_parameter_file(robot, chain, DriveTerms(), drive, urdf=str(ARM6_URDF))
    params_path = folder / "params.yaml"
    write_parameters_atomic(params_path, params)
    return Inputs(
        folder=folder,
        recording=recording_path,
        header=lines[0],
        rows=lines[1:],
        time=time_s,
        position=q,
        effort=effort,
        params=params_path,
        params_text=dump_parameters(params),
    )


def identify(data: Path, out: Path, *extra: str | Path, config: Path | None = ARM6_CONFIG) -> list[str | Path]:
    argv: list[str | Path] = ["identify", "--urdf", ARM6_URDF, "--data", data, "--out", out, *extra]
    return argv + (["--config", config] if config is not None else [])


def predict(params: Path, out: Path, data: Path) -> list[str | Path]:
    return ["predict", "--params", params, "--data", data, "--out", out]


def excite(config: Path, out: Path) -> list[str | Path]:
    return ["excite", "--urdf", ARM6_URDF, "--config", config, "--mode", "fourier", "--out", out]


def stream(data: Path, out: Path, *extra: str | Path, config: Path = ARM6_CONFIG) -> list[str | Path]:
    return ["stream", "--urdf", ARM6_URDF, "--data", data, "--config", config, "--out", out, *extra]


def billion_laughs(levels: int = 9) -> str:
    """A ``joints`` list whose last item nests 9⁹ strings by YAML aliases (5.8 GB printed in full)."""
    items = ["      - &a [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, levels):
        previous, name = chr(ord("a") + level - 1), chr(ord("a") + level)
        items.append(f"      - &{name} [{', '.join([f'*{previous}'] * 9)}]")
    return "/**:\n  ros__parameters:\n    joints:\n" + "\n".join(items) + "\n"


def rows_with(inputs: Inputs, row: int, cell: int, value: str) -> str:
    rows = [line.split(",") for line in inputs.rows]
    rows[row][cell] = value
    return "\n".join([inputs.header, *(",".join(cells) for cells in rows)]) + "\n"


Case = Callable[[Inputs, Path], list[str | Path]]


def config_text(name: str, text: str) -> Case:
    """``identify`` of the valid recording with the configuration file ``name`` holding ``text``."""
    return lambda i, o: identify(i.recording, o, config=i.write(name, text))


def excite_config_text(name: str, text: str) -> Case:
    """``excite`` with the configuration file ``name`` holding ``text``."""
    return lambda i, o: excite(i.write(name, text), o)


def _sparse_nul_file(inputs: Inputs, out: Path) -> list[str | Path]:
    path = inputs.write("nul_padded.csv", inputs.header + "\n")
    with path.open("r+b") as stream:
        stream.truncate(2 * 1024**3)  # a valid header, then 2 GiB of NUL bytes (sparse: no disk used)
    return identify(path, out)


def _long_line(inputs: Inputs, out: Path) -> list[str | Path]:
    return identify(inputs.write("long.csv", "time," + "x" * (3 * 1024**2)), out)


def _symlink_to_data(inputs: Inputs, out: Path) -> list[str | Path]:
    link = inputs.folder / "link_to_recording.csv"
    if not link.exists():
        link.symlink_to(inputs.recording)
    return identify(inputs.recording, link)


def _bag_output(inputs: Inputs, out: Path) -> list[str | Path]:
    bag = inputs.folder / "bag_dir"
    bag.mkdir(exist_ok=True)
    (bag / "metadata.yaml").write_text("rosbag2_bagfile_information: {}\n", encoding="utf-8")
    return ["identify", "--urdf", ARM6_URDF, "--bag", bag, "--out", bag / "metadata.yaml"]


def _degrees(inputs: Inputs, out: Path) -> list[str | Path]:
    return identify(inputs.csv("degrees.csv", position=np.degrees(inputs.position)), out)


def _nanoseconds(inputs: Inputs, out: Path) -> list[str | Path]:
    return identify(inputs.csv("ns.csv", time=1.7e18 + inputs.time * 1e9), out)


def _milliseconds(inputs: Inputs, out: Path) -> list[str | Path]:
    return identify(inputs.csv("ms.csv", time=inputs.time * 1e3), out)


def _subnormal(inputs: Inputs, out: Path) -> list[str | Path]:
    return identify(inputs.csv("subnormal.csv", time=np.arange(inputs.time.size) * 5e-324), out)


def _huge_positions(inputs: Inputs, out: Path) -> list[str | Path]:
    position = inputs.position.copy()
    position[100, 2] = 1e9
    return identify(inputs.csv("huge.csv", position=position), out)


def _deep_yaml(inputs: Inputs, out: Path) -> list[str | Path]:
    return identify(inputs.recording, out, config=inputs.write("deep.yaml", "a: " + "[" * 5000 + "]" * 5000 + "\n"))


def _big_config(inputs: Inputs, out: Path) -> list[str | Path]:
    path = inputs.write("big.yaml", "# filler\n")
    with path.open("r+b") as stream:
        stream.truncate(20 * 1024**2)
    return identify(inputs.recording, out, config=path)


CASES: dict[str, tuple[Case, str]] = {
    # --- arguments and output paths ---
    "no-verb": (lambda i, o: [], "required"),
    "unknown-verb": (lambda i, o: ["identfy"], "invalid choice"),
    "identify-without-out": (lambda i, o: ["identify", "--urdf", ARM6_URDF, "--data", i.recording], "--out"),
    "identify-data-and-bag": (lambda i, o: [*identify(i.recording, o), "--bag", i.folder], "not allowed"),
    "identify-unknown-model": (lambda i, o: [*identify(i.recording, o), "--model", "idim2"], "invalid choice"),
    "excite-unknown-mode": (
        lambda i, o: ["excite", "--urdf", ARM6_URDF, "--mode", "sine", "--out", o],
        "invalid choice",
    ),
    "demo-duration-not-a-number": (lambda i, o: ["demo", "--duration", "long"], "not a number"),
    "out-empty": (lambda i, o: identify(i.recording, Path("")), "is a directory"),
    "out-empty-string": (
        lambda i, o: ["identify", "--urdf", ARM6_URDF, "--data", i.recording, "--out", ""],
        "argument --out: empty path",
    ),
    "out-is-a-directory": (lambda i, o: identify(i.recording, i.folder), "is a directory"),
    "out-in-missing-folder": (lambda i, o: identify(i.recording, i.folder / "no" / "p.yaml"), "does not exist"),
    "out-is-the-recording": (lambda i, o: identify(i.recording, i.recording), "refusing to overwrite"),
    "out-is-the-urdf": (lambda i, o: identify(i.recording, ARM6_URDF), "refusing to overwrite"),
    "out-is-the-config": (lambda i, o: identify(i.recording, ARM6_CONFIG), "refusing to overwrite"),
    "out-links-to-the-recording": (_symlink_to_data, "refusing to overwrite"),
    "out-inside-the-bag": (_bag_output, "inside the input directory"),
    "predict-out-is-the-params": (lambda i, o: predict(i.params, i.params, i.recording), "refusing to overwrite"),
    "predict-out-is-the-data": (lambda i, o: predict(i.params, i.recording, i.recording), "refusing to overwrite"),
    "stream-out-is-params-out": (lambda i, o: stream(i.recording, o, "--params-out", o), "refusing to overwrite"),
    "stream-out-is-the-data": (lambda i, o: stream(i.recording, i.recording), "refusing to overwrite"),
    "excite-out-is-the-config": (lambda i, o: excite(ARM6_CONFIG, ARM6_CONFIG), "refusing to overwrite"),
    # --- recording files ---
    "recording-missing": (lambda i, o: identify(i.folder / "nope.csv", o), "not found"),
    "recording-is-a-directory": (lambda i, o: identify(i.folder, o), "not found"),
    "recording-empty": (lambda i, o: identify(i.write("empty.csv", ""), o), "empty"),
    "recording-header-only": (lambda i, o: identify(i.write("header.csv", i.header + "\n"), o), "0 data rows"),
    "recording-one-row": (
        lambda i, o: identify(i.write("one.csv", "\n".join([i.header, i.rows[0]]) + "\n"), o),
        "1 data rows",
    ),
    "recording-2GiB-of-NUL-after-the-header": (_sparse_nul_file, "0 data rows"),
    "recording-first-line-3MiB": (_long_line, "longer than"),
    "recording-NUL-inside": (
        lambda i, o: identify(i.write("nul.csv", (i.header + "\n" + i.rows[0] + "\n\0\0\0\n" + i.rows[1] + "\n")), o),
        "NUL",
    ),
    "recording-binary-header": (lambda i, o: identify(i.write("bin.csv", b"\xff\xfe\x00t\x00i\n1,2\n"), o), "NUL"),
    "recording-latin1-header": (
        lambda i, o: identify(i.write("latin.csv", b"time,j\xe9/position,j\xe9/effort\n0,1,2\n1,1,2\n"), o),
        "not UTF-8",
    ),
    "recording-no-time-column": (
        lambda i, o: identify(i.write("notime.csv", i.header.replace("time", "t", 1) + "\n" + i.rows[0] + "\n"), o),
        "'time'",
    ),
    "recording-duplicate-column": (
        lambda i, o: identify(i.write("dup.csv", i.header + ",time\n" + i.rows[0] + ",1\n"), o),
        "appears twice",
    ),
    "recording-unknown-column": (
        lambda i, o: identify(i.write("col.csv", i.header + ",joint_1/torque\n" + i.rows[0] + ",1\n"), o),
        "unknown column",
    ),
    "recording-text-cell": (lambda i, o: identify(i.write("text.csv", rows_with(i, 5, 1, "oops")), o), "oops"),
    "recording-nan-cell": (lambda i, o: identify(i.write("nan.csv", rows_with(i, 5, 2, "nan")), o), "not finite"),
    "recording-inf-cell": (lambda i, o: identify(i.write("inf.csv", rows_with(i, 5, 2, "inf")), o), "not finite"),
    "recording-1e400-cell": (lambda i, o: identify(i.write("big.csv", rows_with(i, 5, 2, "1e400")), o), "finite"),
    "recording-1e300-torque": (
        lambda i, o: identify(
            i.write("spike.csv", rows_with(i, 5, i.header.split(",").index("joint_2/effort"), "1e300")), o
        ),
        "beyond 10 × its effort limit",
    ),
    "recording-ragged-row": (
        lambda i, o: identify(i.write("ragged.csv", "\n".join([i.header, i.rows[0], "1,2", i.rows[2]]) + "\n"), o),
        "cells",
    ),
    "recording-time-backwards": (
        lambda i, o: identify(i.csv("back.csv", time=np.concatenate([i.time[:1000], i.time[1000:] - 1.5])), o),
        "the recording restarts there",
    ),
    "recording-in-degrees": (_degrees, "degrees"),
    "recording-time-in-nanoseconds": (_nanoseconds, "nanoseconds"),
    "recording-time-in-milliseconds": (_milliseconds, "milliseconds"),
    "recording-subnormal-time-steps": (_subnormal, "seconds"),
    "recording-position-1e9": (_huge_positions, "outside its limits"),
    "recording-joint-not-in-urdf": (
        lambda i, o: identify(i.write("joint.csv", "time,elbow/position,elbow/effort\n0,1,2\n0.1,1,2\n"), o),
        "elbow",
    ),
    "recording-currents-without-drive-gains": (
        lambda i, o: identify(
            i.write("cur.csv", i.header.replace("/effort", "/current") + "\n" + "\n".join(i.rows) + "\n"),
            o,
            config=None,
        ),
        "drive gains",
    ),
    "recording-robot-standing-still": (
        lambda i, o: identify(i.csv("still.csv", position=np.tile(i.position[:1], (i.time.size, 1))), o),
        "standing still",
    ),
    # --- URDF ---
    "urdf-missing": (
        lambda i, o: ["identify", "--urdf", i.folder / "no.urdf", "--data", i.recording, "--out", o],
        "no.urdf",
    ),
    "urdf-is-a-csv": (
        lambda i, o: ["identify", "--urdf", i.recording, "--data", i.recording, "--out", o],
        "not a URDF",
    ),
    "urdf-empty": (
        lambda i, o: ["identify", "--urdf", i.write("e.urdf", ""), "--data", i.recording, "--out", o],
        "not a URDF",
    ),
    "urdf-entity-expansion": (
        lambda i, o: [
            "identify",
            "--urdf",
            i.write(
                "lol.urdf",
                '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">'
                '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;">]><robot name="&c;"><link name="l"/></robot>',
            ),
            "--data",
            i.recording,
            "--out",
            o,
        ],
        "joint",
    ),
    # --- configuration ---
    "config-missing": (lambda i, o: identify(i.recording, o, config=i.folder / "no.yaml"), "not found"),
    "config-is-a-directory": (lambda i, o: identify(i.recording, o, config=i.folder), "directory"),
    "config-not-yaml": (config_text("bad.yaml", "a: [\n"), "not valid YAML"),
    "config-a-list": (config_text("list.yaml", "- 1\n- 2\n"), "mapping"),
    "config-python-tag": (
        config_text("tag.yaml", "a: !!python/object/apply:os.system [ls]\n"),
        "not valid YAML",
    ),
    "config-billion-laughs-joints": (
        config_text("laughs.yaml", billion_laughs()),
        "joints",
    ),
    "config-deeply-nested": (_deep_yaml, "too deeply"),
    "config-20MiB": (_big_config, "bytes"),
    "config-misspelled-section": (
        lambda i, o: identify(
            i.recording,
            o,
            config=i.config(
                "typo.yaml", lambda d: d["/**/estimator"]["ros__parameters"].update({"estimaton": {"method": "ols"}})
            ),
        ),
        "did you mean 'estimation.method'",
    ),
    "config-misspelled-key": (
        lambda i, o: identify(
            i.recording,
            o,
            config=i.config(
                "typo2.yaml",
                lambda d: d["/**/estimator"]["ros__parameters"]["signal"].update({"positon_cutoff_hz": 5.0}),
            ),
        ),
        "did you mean 'signal.position_cutoff_hz'",
    ),
    "config-misspelled-block": (
        lambda i, o: identify(
            i.recording, o, config=i.config("typo3.yaml", lambda d: d.update({"/**/estimater": d.pop("/**/estimator")}))
        ),
        "did you mean 'estimator'",
    ),
    "config-misspelled-excitation-key": (
        lambda i, o: excite(
            i.config("typo4.yaml", lambda d: d["/**/excitation"]["ros__parameters"].update({"harmoncs": 3})), o
        ),
        "did you mean 'harmonics'",
    ),
    "config-non-string-key": (
        config_text("key.yaml", "/**:\n  ros__parameters:\n    1: 2\n"),
        "must be strings",
    ),
    "config-parameters-a-list": (
        config_text("pl.yaml", "/**:\n  ros__parameters: [1, 2]\n"),
        "must be a mapping",
    ),
    "config-decimation-1e9": (
        config_text("d.yaml", "signal: {decimation: 1000000000}\n"),
        "at most 1000",
    ),
    "config-decimation-1e9-float": (
        config_text("d2.yaml", "signal: {decimation: 1e9}\n"),
        "an integer",
    ),
    "config-rate-1e7": (
        config_text("r.yaml", "signal: {rate_hz: 1e7}\n"),
        "at most 100000",
    ),
    "config-window-nan": (
        lambda i, o: stream(i.recording, o, config=i.write("w.yaml", "window: {window_s: .nan}\n")),
        "finite",
    ),
    "config-window-1e400": (
        config_text("w2.yaml", "window: {window_s: 1e400}\n"),
        "finite",
    ),
    "config-negative-decimation": (
        config_text("n.yaml", "signal: {decimation: -1}\n"),
        ">= 0",
    ),
    "config-method-a-number": (
        config_text("m.yaml", "estimation: {method: 3}\n"),
        "one of",
    ),
    "config-ragged-coupling": (
        config_text("c.yaml", "drive_chain: {coupling: [[1, 0], [0]]}\n"),
        "square matrix",
    ),
    "config-coupling-strings": (
        config_text("c2.yaml", "drive_chain: {coupling: [a, b, c, d]}\n"),
        "square matrix",
    ),
    "config-gear-ratios-wrong-length": (
        lambda i, o: identify(
            i.recording,
            o,
            config=i.config(
                "g.yaml", lambda d: d["/**"]["ros__parameters"]["drive_chain"].update({"gear_ratios": [1.0, 2.0]})
            ),
        ),
        "sizes disagree",
    ),
    "config-repeated-joints": (
        config_text("j.yaml", "joints: [joint_1, joint_1]\n"),
        "distinct",
    ),
    "config-excite-rate-1e7": (
        excite_config_text("er.yaml", "excitation:\n  ros__parameters:\n    rate_hz: 1e7\n"),
        "at most 10000",
    ),
    "config-excite-fundamental-1e-9": (
        excite_config_text("ef.yaml", "excitation:\n  ros__parameters:\n    fundamental_hz: 1e-9\n"),
        "at least 0.0001",
    ),
    "config-excite-too-many-samples": (
        lambda i, o: excite(
            i.write(
                "es.yaml",
                "excitation:\n  ros__parameters:\n    fundamental_hz: 0.0001\n    rate_hz: 10000.0\n    periods: 10\n",
            ),
            o,
        ),
        "samples",
    ),
    "config-excite-harmonics-1000": (
        excite_config_text("eh.yaml", "excitation:\n  ros__parameters:\n    harmonics: 1000\n"),
        "at most 100",
    ),
    # --- parameter files (predict) ---
    "params-missing": (lambda i, o: predict(i.folder / "none.yaml", o, i.recording), "not found"),
    "params-not-yaml": (lambda i, o: predict(i.write("p0.yaml", "format: [\n"), o, i.recording), "not valid YAML"),
    "params-empty-list": (
        lambda i, o: predict(i.params_with("p1.yaml", lambda d: d.update(parameters=[])), o, i.recording),
        "empty",
    ),
    "params-unknown-regression": (
        lambda i, o: predict(
            i.params_with("p2.yaml", lambda d: d["model"].update(regression="neural")), o, i.recording
        ),
        "model.regression",
    ),
    "params-wrong-format": (
        lambda i, o: predict(i.params_with("p3.yaml", lambda d: d.update(format="v0")), o, i.recording),
        "format",
    ),
    "params-nan-value": (
        lambda i, o: predict(
            i.params_with("p4.yaml", lambda d: d["parameters"][0].update(value=float("nan"))), o, i.recording
        ),
        "finite",
    ),
    "params-ragged-coupling": (
        lambda i, o: predict(
            i.params_with("p5.yaml", lambda d: d["model"]["drive_chain"].update(coupling=[[1.0, 0.0], [0.0]])),
            o,
            i.recording,
        ),
        "coupling",
    ),
    "params-unknown-joint": (
        lambda i, o: predict(
            i.params_with("p6.yaml", lambda d: d["robot"].update(joints=["joint_1", "wrist_9"])), o, i.recording
        ),
        "one per joint",
    ),
    "params-missing-urdf": (
        lambda i, o: predict(
            i.params_with("p7.yaml", lambda d: d["robot"].update(urdf="/no/robot.urdf")), o, i.recording
        ),
        "URDF file not found",
    ),
    "params-a-list": (lambda i, o: predict(i.write("p8.yaml", "- 1\n"), o, i.recording), "mapping"),
    "params-parameters-a-string": (
        lambda i, o: predict(i.params_with("p9.yaml", lambda d: d.update(parameters="x" * 10**6)), o, i.recording),
        "must be a list",
    ),
    "params-unknown-parameter-name": (
        lambda i, o: predict(
            i.params_with("p10.yaml", lambda d: d["parameters"][0].update(name="NOT_A_PARAMETER")), o, i.recording
        ),
        "NOT_A_PARAMETER",
    ),
    "predict-recording-in-degrees": (
        lambda i, o: predict(i.params, o, i.csv("deg2.csv", position=np.degrees(i.position))),
        "degrees",
    ),
    # --- bags ---
    "bag-missing": (
        lambda i, o: ["identify", "--urdf", ARM6_URDF, "--bag", i.folder / "nobag", "--out", o],
        "not found",
    ),
    "bag-empty-directory": (
        lambda i, o: ["identify", "--urdf", ARM6_URDF, "--bag", i.folder / "empty_bag", "--out", o],
        "metadata",
    ),
    "bag-is-a-csv": (
        lambda i, o: ["identify", "--urdf", ARM6_URDF, "--bag", i.recording, "--out", o],
        "cannot read rosbag2",
    ),
    "stream-update-longer-than-window": (
        lambda i, o: stream(i.recording, o, config=i.write("s.yaml", "window: {update_period_s: 20.0}\n")),
        "update_period_s",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_gives_one_bounded_error_line_and_exit_code_2(name: str, inputs: Inputs, tmp_path: Path) -> None:
    (inputs.folder / "empty_bag").mkdir(exist_ok=True)
    build, needle = CASES[name]
    argv = [str(arg) for arg in build(inputs, tmp_path / "out.yaml")]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exit_:  # argparse
            code = int(exit_.code or 0)
    lines = err.getvalue().splitlines()
    errors = [line for line in lines if ": error: " in line]
    assert code == 2, err.getvalue()[-2000:]
    assert len(errors) == 1 and lines[-1] == errors[0], err.getvalue()[-2000:]
    assert all(len(line) <= MAX_LINE for line in lines), [len(line) for line in lines]
    assert "Traceback" not in err.getvalue() and out.getvalue() == ""
    assert needle in errors[0], errors[0]
    assert not (tmp_path / "out.yaml").exists()


def test_the_input_survives_an_out_that_names_it(inputs: Inputs) -> None:
    before = inputs.recording.read_bytes()
    with contextlib.redirect_stderr(io.StringIO()):
        assert cli.main([str(arg) for arg in identify(inputs.recording, inputs.recording)]) == 2
    assert inputs.recording.read_bytes() == before


def child(argv: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    environment = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "src"))
    return subprocess.Popen(  # noqa: S603 - this interpreter, fixed module
        [sys.executable, "-m", "dynamic_identification.cli", *argv],
        cwd=cwd,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize(
    "name", ["recording-2GiB-of-NUL-after-the-header", "config-billion-laughs-joints", "recording-in-degrees"]
)
def test_as_a_process_the_error_is_one_line_too(name: str, inputs: Inputs, tmp_path: Path) -> None:
    argv = [str(arg) for arg in CASES[name][0](inputs, tmp_path / "out.yaml")]
    process = child(argv, tmp_path)
    out, err = process.communicate(timeout=120)
    errors = [line for line in err.decode().splitlines() if ": error: " in line]
    assert process.returncode == 2 and len(errors) == 1 and b"Traceback" not in err, err.decode()[-2000:]


def wait_until_caught(process: subprocess.Popen[bytes], number: int, timeout_s: float = 120.0) -> None:
    """Wait until ``process`` has its own handler for signal ``number`` (Linux: ``SigCgt`` of /proc/PID/status).

    A fixed sleep would depend on how long the imports take on a loaded machine.
    """
    deadline = time.monotonic() + timeout_s
    status = Path(f"/proc/{process.pid}/status")
    while time.monotonic() < deadline and process.poll() is None:
        caught = next(line for line in status.read_text().splitlines() if line.startswith("SigCgt:"))
        if int(caught.split()[1], 16) & (1 << (number - 1)):
            return
        time.sleep(0.05)
    raise AssertionError(f"the process never caught signal {number} (exit code {process.poll()})")


def test_sigterm_during_a_write_leaves_no_temporary_file(inputs: Inputs, tmp_path: Path) -> None:
    """A killed or interrupted dynid leaves neither half a file nor its ``.NAME.PID.tmp``."""
    config = inputs.write("slow.yaml", "excitation:\n  ros__parameters:\n    time_budget_s: 60.0\n")
    process = child(["excite", "--urdf", str(ARM6_URDF), "--config", str(config), "--mode", "fourier",
                     "--out", str(tmp_path / "traj.csv")], tmp_path)  # fmt: skip
    wait_until_caught(process, signal.SIGTERM)
    # Into the optimisation: once it says so on stderr. After a fixed 1 s sleep, on a machine loaded by the suite's
    # two processes and more, the signal came before the search and the process ended by SIGINT (-2, not 130).
    assert process.stderr is not None
    started = [process.stderr.readline()]
    while started[-1] and not started[-1].startswith(b"dynid excite: Fourier search"):
        started.append(process.stderr.readline())
    assert started[-1], b"".join(started).decode()
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err.decode()
    assert err.decode().strip().endswith("interrupted")
    assert sorted(path.name for path in tmp_path.iterdir()) == []


def test_a_temporary_file_of_a_killed_writer_is_removed_by_the_next_write(inputs: Inputs, tmp_path: Path) -> None:
    target = tmp_path / "params.yaml"
    stale = tmp_path / ".params.yaml.999999999.abcdef.tmp"  # no such process
    stale.write_text("half a file", encoding="utf-8")
    shutil.copy(inputs.params, target)
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["predict", "--params", str(target), "--data", str(inputs.recording), "--out",
                         str(tmp_path / "params.csv")])  # fmt: skip
    assert code == 0
    predicted = tmp_path / "params.csv"
    write_parameters_atomic(target, ParameterFile.create(
        urdf=str(ARM6_URDF), joints=("joint_1",), drive_terms=DriveTerms(),
        drive_chain=load_config(None).drive_chain(1), names=["m1"], values=[1.0],
    ))  # fmt: skip
    assert predicted.is_file() and not stale.exists()


def test_stream_replaces_its_output_atomically_and_never_writes_through_a_symlink(
    inputs: Inputs, tmp_path: Path
) -> None:
    """``stream --out`` truncated the file and followed a symlink; it now replaces it as ``identify`` does."""
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n", encoding="utf-8")
    link = tmp_path / "updates.jsonl"
    link.symlink_to(precious)
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main([str(arg) for arg in stream(inputs.recording, link)])
    assert code == 0
    assert precious.read_text(encoding="utf-8") == "keep me\n"
    assert not link.is_symlink() and len(link.read_text(encoding="utf-8").splitlines()) >= 3
    assert sorted(path.name for path in tmp_path.iterdir()) == ["precious.txt", "updates.jsonl"]
