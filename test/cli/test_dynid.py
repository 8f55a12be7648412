"""End-to-end tests of the ``dynid`` command line: CSV round trip and one-line errors for bad input.

The recordings are synthesised once per module from the exact inverse dynamics of the
shipped 6-axis arm (``urdf/dynid_arm6.urdf``, drive chain and true drive parameters from
``config/dynid_arm6.yaml``) along random Fourier excitations, at 1 kHz with jittered
stamps, quantised encoder positions and noisy motor currents ([Gautier2013] eq. (7)).
``dynid`` runs in-process through :func:`dynamic_identification.cli.main`; one test runs
the module as a child process.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from numpy.testing import assert_allclose, assert_array_equal

from dynamic_identification import cli
from dynamic_identification.core.excitation import FourierTrajectory, random_fourier_trajectory
from dynamic_identification.core.mechanism.plausibility import ImplausibleModelError
from dynamic_identification.core.mechanism.robot import DriveChain, DriveParameters, RobotModel, load_robot
from dynamic_identification.core.simulation import SensorModel, inverse_dynamics, synthesize_measurements
from dynamic_identification.feedforward import FeedforwardModel
from dynamic_identification.io.config import load_config, ros_parameters, simulated_robot
from dynamic_identification.io.parameters import FORMAT, load_parameters
from dynamic_identification.io.recording import (
    Recording,
    recording_from_arrays,
    write_recording_csv,
)
from dynamic_identification.io.table import read_body, read_header
from dynamic_identification.io.trajectory import read_trajectory_csv
from repo_paths import ARM6_CONFIG, ARM6_URDF

JOINTS = tuple(f"joint_{k}" for k in range(1, 7))

RATE_HZ = 1000.0
JITTER_S = 2e-4
"""Stamps are ``k / RATE_HZ`` plus uniform jitter in ``±JITTER_S`` s."""
IDENTIFY_S = 40.0
VALIDATE_S = 20.0
IDENTIFY_SEED = 3
VALIDATE_SEED = 4
SMALL_ROWS = 3000
"""Rows of the short effort recording the bad-input tests corrupt (errors come before any fit)."""
MIN_SPEED_RAD_S = 0.05
"""Below this joint speed the IDIM's ``Fc sign(q̇)`` does not hold (config ``signal.min_speed_rad_s``)."""


@dataclass(frozen=True)
class Arm:
    """The shipped arm, its drive chain and the true drive parameters of its simulation."""

    robot: RobotModel
    chain: DriveChain
    drive: DriveParameters
    sensor: SensorModel
    sim: dict[str, Any]


@dataclass(frozen=True)
class Synthetic:
    """A synthesised recording, the trajectory it follows and its CSV file."""

    trajectory: FourierTrajectory
    recording: Recording
    path: Path


@dataclass(frozen=True)
class Run:
    """Exit code and captured output of one ``dynid`` call."""

    code: int
    out: str
    err: str


def run_captured(argv: Sequence[str]) -> Run:
    """``cli.main(argv)`` with stdout and stderr captured (usable from module-scoped fixtures)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(arg) for arg in argv])
    return Run(code, out.getvalue(), err.getvalue())


def run_dynid(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> Run:
    code = cli.main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return Run(code, captured.out, captured.err)


def identify_argv(data: Path, out: Path, *, config: Path | None = ARM6_CONFIG, urdf: Path = ARM6_URDF) -> list[str]:
    argv = ["identify", "--urdf", str(urdf), "--data", str(data), "--out", str(out)]
    return argv + (["--config", str(config)] if config is not None else [])


def assert_one_line_error(run: Run, verb: str, *needles: str) -> str:
    """The run failed with exactly one stderr line ``dynid VERB: error: ...`` containing every needle, its last; the
    lines before it, if any, are the verb's progress (its stages), no warning."""
    assert run.code != 0
    assert run.out == ""
    *progress, last = run.err.splitlines()
    assert all(line.startswith(f"dynid {verb}: ") and ": error: " not in line for line in progress), run.err
    assert not any(": warning: " in line for line in progress), run.err
    assert last.startswith(f"dynid {verb}: error: "), last
    for needle in needles:
        assert needle in last, f"{needle!r} not in {last!r}"
    return last


def synthesize(arm: Arm, *, seconds: float, seed: int) -> tuple[FourierTrajectory, np.ndarray, np.ndarray, np.ndarray]:
    """Trajectory, jittered stamps (s), measured positions (rad) and motor currents (A)."""
    rng = np.random.default_rng(seed)
    samples = int(round(seconds * RATE_HZ))
    stamps = np.arange(samples) / RATE_HZ + rng.uniform(-JITTER_S, JITTER_S, samples)
    trajectory = random_fourier_trajectory(arm.robot, margin=0.2, velocity_fraction=0.5, seed=seed)
    q, dq, ddq = trajectory.evaluate(stamps)
    q_measured, currents = synthesize_measurements(
        arm.robot, arm.chain, arm.drive, stamps, q, dq, ddq, arm.sensor, seed=seed
    )
    return trajectory, stamps, q_measured, currents


def write_synthetic(arm: Arm, path: Path, *, seconds: float, seed: int) -> Synthetic:
    trajectory, stamps, q_measured, currents = synthesize(arm, seconds=seconds, seed=seed)
    recording = recording_from_arrays(time=stamps, joint_names=JOINTS, position=q_measured, current=currents)
    write_recording_csv(path, recording)
    return Synthetic(trajectory, recording, path)


def csv_cells(path: Path) -> list[list[str]]:
    return [line.split(",") for line in path.read_text(encoding="utf-8").splitlines()]


def write_cells(path: Path, cells: list[list[str]]) -> Path:
    path.write_text("".join(",".join(row) + "\n" for row in cells), encoding="utf-8")
    return path


def config_with(path: Path, block: str, dotted_key: str, value: Any) -> Path:
    """The shipped configuration with ``block.ros__parameters.<dotted_key>`` set to ``value``."""
    document = yaml.safe_load(ARM6_CONFIG.read_text(encoding="utf-8"))
    node = document[block if block == "/**" else f"/**/{block}"]["ros__parameters"]
    *parents, leaf = dotted_key.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = value
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def read_predicted(path: Path) -> tuple[list[str], np.ndarray]:
    """Header and rows of a ``dynid predict`` CSV (``nan`` where the model has no prediction)."""
    header = read_header(path)
    return header, read_body(path, len(header))


def parameter_values(path: Path) -> dict[str, float]:
    return load_parameters(path).values()


def assert_same_parameters(actual: Path, expected: Path) -> None:
    got, want = parameter_values(actual), parameter_values(expected)
    assert list(got) == list(want)
    assert_allclose(list(got.values()), list(want.values()), rtol=1e-9, atol=0.0)


@pytest.fixture(scope="module")
def arm() -> Arm:
    robot = load_robot(ARM6_URDF)
    sim = ros_parameters(ARM6_CONFIG, "sim_robot")
    simulated = simulated_robot(ARM6_CONFIG, robot.n_joints)
    drive, sensor = simulated.drive, simulated.sensor
    return Arm(robot, load_config(str(ARM6_CONFIG)).drive_chain(robot.n_joints), drive, sensor, sim)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dynid")


@pytest.fixture(scope="module")
def good(arm: Arm, folder: Path) -> Synthetic:
    """40 s of excitation at 1 kHz with motor currents: the recording to identify from."""
    return write_synthetic(arm, folder / "excitation.csv", seconds=IDENTIFY_S, seed=IDENTIFY_SEED)


@pytest.fixture(scope="module")
def validation(arm: Arm, folder: Path) -> Synthetic:
    """20 s of a different excitation of the same robot."""
    return write_synthetic(arm, folder / "validation.csv", seconds=VALIDATE_S, seed=VALIDATE_SEED)


@pytest.fixture(scope="module")
def identified(good: Synthetic, folder: Path) -> tuple[Run, Path]:
    """``dynid identify`` on the good recording with the shipped configuration."""
    out = folder / "parameters.yaml"
    return run_captured(identify_argv(good.path, out)), out


@pytest.fixture(scope="module")
def predicted(identified: tuple[Run, Path], validation: Synthetic, folder: Path) -> tuple[Run, Path]:
    """``dynid predict`` of the validation recording's torques with the identified parameters."""
    _, params = identified
    out = folder / "predicted.csv"
    argv = ["predict", "--params", params, "--data", validation.path, "--config", ARM6_CONFIG, "--out", out]
    return run_captured(argv), out


@pytest.fixture(scope="module")
def small(arm: Arm, good: Synthetic, folder: Path) -> Path:
    """The first 3 s of the good recording with joint torques (``J/effort``) instead of currents."""
    head = good.recording.rows(slice(0, SMALL_ROWS))
    recording = recording_from_arrays(
        time=head.time, joint_names=JOINTS, position=head.position, effort=arm.chain.joint_torques(head.current)
    )
    path = folder / "small_effort.csv"
    write_recording_csv(path, recording)
    return path


# --- the command and its help -------------------------------------------------------------------------------


def test_help_of_the_installed_module_lists_the_verbs() -> None:
    command = [sys.executable, "-m", "dynamic_identification.cli"]
    top = subprocess.run([*command, "--help"], capture_output=True, text=True, timeout=120, check=False)
    assert top.returncode == 0, top.stderr
    for verb in ("identify", "predict", "demo"):
        assert re.search(rf"^\s+{verb}\s", top.stdout, flags=re.MULTILINE), top.stdout
    identify = subprocess.run(
        [*command, "identify", "--help"], capture_output=True, text=True, timeout=120, check=False
    )
    assert identify.returncode == 0, identify.stderr
    for option in ("--urdf", "--data", "--config", "--out"):
        assert option in identify.stdout


# --- identify -----------------------------------------------------------------------------------------------


IDENTIFY_STAGES = (
    "reading ",
    "base parameters",
    "signal decisions",
    "observation matrix rows (",
    "observation matrix rows: 100 %",
    "normal equations, reduction",
    "least squares",
    "physical consistency",
    "writing the parameter file",
)
"""The beginnings of the stages ``dynid identify`` reports, in their order."""


def test_identify_reports_its_stages_on_stderr_in_plain_lines_and_only_its_report_on_stdout(
    identified: tuple[Run, Path],
) -> None:
    run, _ = identified
    assert "\r" not in run.err  # stderr is not a terminal here: lines, no bar
    lines = run.err.splitlines()
    assert all(line.startswith("dynid identify: ") for line in lines), run.err
    stages = [line.removeprefix("dynid identify: ") for line in lines]
    where = [next(i for i, stage in enumerate(stages) if stage.startswith(start)) for start in IDENTIFY_STAGES]
    assert where == sorted(where), stages
    rows = [stage for stage in stages if stage.startswith("observation matrix rows: ")]
    assert 1 <= len(rows) <= 10, rows  # a line per 10 % of the samples at most (blocks of 10 000 samples)
    assert "observation matrix rows" not in run.out and not set(stages) & set(run.out.splitlines())


def test_identify_quiet_reports_nothing_on_stderr(good: Synthetic, folder: Path) -> None:
    run = run_captured([*identify_argv(good.path, folder / "quiet.yaml"), "--quiet"])
    assert run.code == 0 and run.err == ""


def test_identify_without_consistency_checks_the_estimate_without_a_conic_solver(good: Synthetic, folder: Path) -> None:
    """``--no-consistency`` only checks the unconstrained values (issue 26): cvxpy, the conic solver's modelling
    layer, is never imported, and the file says whether the values are consistent."""
    out = folder / "unconstrained.yaml"
    argv = [*identify_argv(good.path, out), "--no-consistency", "--quiet"]
    code = (
        "import sys\n"
        "from dynamic_identification import cli\n"
        f"assert cli.main({argv!r}) == 0\n"
        "print('cvxpy' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "False"
    consistency = load_parameters(out).quality["physical_consistency"]
    assert consistency["enforced"] is False and consistency["ok"] in (True, False)


def test_identify_prints_the_table_and_writes_a_complete_parameter_yaml(identified: tuple[Run, Path]) -> None:
    run, out = identified
    assert run.code == 0, run.err
    assert not any(": warning: " in line for line in run.err.splitlines()), run.err
    names_in_table = {line.split()[0] for line in run.out.splitlines() if line.strip()}
    assert {"ZZ1", "Fv1", "Fc6", "off6"} <= names_in_table
    assert "condition number" in run.out
    assert str(out) in run.out

    assert yaml.safe_load(out.read_text(encoding="utf-8"))["format"] == FORMAT
    params = load_parameters(out)
    assert params.joints == JOINTS
    assert params.urdf_path().resolve() == ARM6_URDF.resolve()
    assert params.urdf_sha256 == hashlib.sha256(ARM6_URDF.read_bytes()).hexdigest()
    assert len(params.parameters) > 0
    for entry in params.parameters:
        assert np.isfinite(entry.value), entry
        assert entry.expression.strip(), entry
        assert entry.name in names_in_table
    assert np.isfinite(params.quality["condition_number"])
    assert params.quality["samples"] == IDENTIFY_S * RATE_HZ
    # %σ accounts for residuals correlated in time, and says so in the output and the file.
    assert "%σ: autocorrelation-consistent" in run.out
    uncertainty = params.quality["uncertainty"]
    assert uncertainty["method"] == "hac" and uncertainty["bandwidth_rows"] >= 1
    assert uncertainty["hac_over_white_median"] > 1.0


def test_identified_friction_matches_the_simulated_robot(arm: Arm, identified: tuple[Run, Path]) -> None:
    values = parameter_values(identified[1])
    for term, key in (("Fv", "viscous_friction"), ("Fc", "coulomb_friction")):
        found = [values[f"{term}{k}"] for k in range(1, 7)]
        assert_allclose(found, arm.sim[key], rtol=0.03, err_msg=term)


def test_identify_with_the_power_model_writes_the_same_base_parameters_with_torque_errors(
    capsys: pytest.CaptureFixture[str], identified: tuple[Run, Path], good: Synthetic, tmp_path: Path
) -> None:
    out = tmp_path / "power.yaml"
    # With every configured drive term, on one trajectory the power model's unconstrained drive terms are
    # physically impossible (e.g. a wrist rotor inertia that would need several times the joint's effort limit):
    # refused unless accepted.
    every_term = config_with(tmp_path / "every_term.yaml", "estimator", "estimation.choose_drive_terms", False)
    unconstrained = (*identify_argv(good.path, out, config=every_term), "--model", "power", "--no-consistency")
    refused = run_dynid(capsys, *unconstrained)
    assert refused.code == 2 and "implausible model" in refused.err and "--accept-implausible" in refused.err
    assert not out.exists()
    accepted = run_dynid(capsys, *unconstrained, "--accept-implausible")
    assert accepted.code == 0, accepted.err
    assert load_parameters(out).quality["plausibility"]["ok"] is False
    # By default the published values are the nearest physically consistent ones: plausible.
    run = run_dynid(capsys, *identify_argv(good.path, out), "--model", "power")
    assert run.code == 0, run.err
    assert "regression model power ([DirectDrive2012] §3)" in run.out and str(out) in run.out
    power, dynamic = load_parameters(out), load_parameters(identified[1])
    assert power.quality["plausibility"] == {"ok": True, "problems": []}
    assert power.quality["physical_consistency"]["enforced"] is True
    assert dynamic.quality["plausibility"] == {"ok": True, "problems": []}
    assert power.model["regression"] == "power" and dynamic.model["regression"] == "idim"
    base_names = {entry.name for entry in dynamic.parameters} | set(dynamic.removed)
    assert {entry.name for entry in power.parameters} <= base_names
    # One scale for every model: e*_j of the predicted torques. A single trajectory leaves the power
    # model (one equation per sample for all joints) far behind the IDIM, as in [Gautier2013] Table IV.
    power_errors, dynamic_errors = power.quality["joint_relative_errors"], dynamic.quality["joint_relative_errors"]
    assert set(power_errors) == set(JOINTS)
    assert all(power_errors[joint] > 2.0 * dynamic_errors[joint] for joint in JOINTS), (power_errors, dynamic_errors)


def test_identify_model_from_the_config_and_an_unknown_model_refused(
    capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path
) -> None:
    config = config_with(tmp_path / "config.yaml", "estimator", "estimation.model", "filtered_dynamic")
    out = tmp_path / "filtered.yaml"
    run = run_dynid(capsys, *identify_argv(small, out, config=config))
    assert run.code == 0, run.err
    assert load_parameters(out).model["regression"] == "filtered_dynamic"
    with pytest.raises(SystemExit):
        cli.main(identify_argv(small, out) + ["--model", "kinetic"])
    assert "invalid choice: 'kinetic'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["payload", "--period", "0"], "argument --period: must be finite and > 0, got '0'"),
        (["payload", "--period", "nan"], "argument --period: must be finite and > 0, got 'nan'"),
        (["payload", "--period", "10", "--harmonics", "-2"], "argument --harmonics: must be >= 1, got '-2'"),
        (["demo", "--duration", "-5"], "argument --duration: must be finite and > 0, got '-5'"),
    ],
)
def test_a_period_harmonics_or_duration_out_of_range_is_refused_before_any_work(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    payload_inputs = ["--params", "robot.yaml", "--data", "loaded.csv", "--frame", "tool0", "--out", "load.yaml"]
    with pytest.raises(SystemExit) as caught:
        cli.main(argv + (payload_inputs if argv[0] == "payload" else []))
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_a_second_config_is_refused_not_silently_read_instead_of_the_first(
    capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path
) -> None:
    gains = config_with(tmp_path / "gains.yaml", "/**", "drive_chain.drive_gains", [0.45] * 6)
    with pytest.raises(SystemExit) as caught:
        cli.main([*identify_argv(small, tmp_path / "out.yaml"), "--config", str(gains)])
    assert caught.value.code == 2
    assert "--config given twice" in capsys.readouterr().err
    assert not (tmp_path / "out.yaml").exists()


def test_identify_does_not_depend_on_the_csv_column_order(
    capsys: pytest.CaptureFixture[str], identified: tuple[Run, Path], good: Synthetic, tmp_path: Path
) -> None:
    """Joints taken from a reversed CSV (no ``joints:`` in the config) give the parameters of the normal order."""
    config = config_with(tmp_path / "no_joints.yaml", "/**", "joints", [])
    assert load_config(str(config)).joints is None
    reversed_csv = tmp_path / "reversed.csv"
    write_recording_csv(reversed_csv, good.recording.select(JOINTS[::-1]))
    assert csv_cells(reversed_csv)[0][1] == "joint_6/position"
    out = tmp_path / "reversed.yaml"
    run = run_dynid(capsys, *identify_argv(reversed_csv, out, config=config))
    assert run.code == 0, run.err
    assert load_parameters(out).joints == JOINTS
    assert_same_parameters(out, identified[1])


def test_identify_ignores_a_joint_the_config_does_not_list(
    capsys: pytest.CaptureFixture[str], identified: tuple[Run, Path], good: Synthetic, tmp_path: Path
) -> None:
    cells = csv_cells(good.path)
    header = cells[0]
    source = [header.index("joint_6/position"), header.index("joint_6/current")]
    extended = [row + [row[i] for i in source] for row in cells]
    extended[0][-2:] = ["joint_7/position", "joint_7/current"]
    data = write_cells(tmp_path / "extra_joint.csv", extended)
    out = tmp_path / "extra_joint.yaml"
    run = run_dynid(capsys, *identify_argv(data, out))
    assert run.code == 0, run.err
    assert load_parameters(out).joints == JOINTS
    assert_same_parameters(out, identified[1])


def test_identify_names_a_recorded_joint_the_urdf_lacks(
    capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path
) -> None:
    cells = csv_cells(small)
    header = cells[0]
    source = [header.index("joint_6/position"), header.index("joint_6/effort")]
    extended = [row + [row[i] for i in source] for row in cells]
    extended[0][-2:] = ["joint_7/position", "joint_7/effort"]
    data = write_cells(tmp_path / "extra_joint.csv", extended)
    run = run_dynid(capsys, *identify_argv(data, tmp_path / "out.yaml", config=None))
    assert_one_line_error(run, "identify", "joint_7", "dynid_arm6.urdf")
    assert not (tmp_path / "out.yaml").exists()


def test_identify_drops_duplicate_stamps_and_reports_them(
    capsys: pytest.CaptureFixture[str], identified: tuple[Run, Path], good: Synthetic, tmp_path: Path
) -> None:
    rows = np.arange(good.recording.n_samples)
    repeated = np.repeat(rows, np.where(rows % 50 == 0, 2, 1))
    data = tmp_path / "duplicates.csv"
    write_recording_csv(data, good.recording.rows(repeated))
    out = tmp_path / "duplicates.yaml"
    run = run_dynid(capsys, *identify_argv(data, out))
    assert run.code == 0, run.err
    dropped = re.search(r"duplicates dropped (\d+)", run.out)
    assert dropped is not None, run.out
    assert int(dropped.group(1)) == repeated.size - rows.size > 0
    assert_same_parameters(out, identified[1])


def test_identify_splits_a_recording_with_a_gap_into_two_segments(
    capsys: pytest.CaptureFixture[str], arm: Arm, good: Synthetic, tmp_path: Path
) -> None:
    time = good.recording.time
    data = tmp_path / "gap.csv"
    write_recording_csv(data, good.recording.rows((time < 19.0) | (time >= 21.0)))
    out = tmp_path / "gap.yaml"
    run = run_dynid(capsys, *identify_argv(data, out))
    assert run.code == 0, run.err
    segments = re.search(r"segments (\d+)", run.out)
    assert segments is not None, run.out
    assert int(segments.group(1)) == 2
    values = parameter_values(out)
    assert_allclose([values[f"Fv{k}"] for k in range(1, 7)], arm.sim["viscous_friction"], rtol=0.05)


# --- predict ------------------------------------------------------------------------------------------------


def test_predict_reproduces_the_exact_torques_of_a_different_trajectory(
    arm: Arm, predicted: tuple[Run, Path], validation: Synthetic
) -> None:
    run, out = predicted
    assert run.code == 0, run.err
    header, rows = read_predicted(out)
    assert header[0] == "time"
    assert {f"{joint}/effort" for joint in JOINTS} <= set(header)
    effort = rows[:, [header.index(f"{joint}/effort") for joint in JOINTS]]
    predicted_rows = np.isfinite(effort).all(axis=1)
    assert predicted_rows.all()
    q, dq, ddq = validation.trajectory.evaluate(rows[predicted_rows, 0])
    exact = inverse_dynamics(arm.robot, arm.chain, arm.drive, q, dq, ddq)
    for j, joint in enumerate(JOINTS):
        moving = np.abs(dq[:, j]) >= MIN_SPEED_RAD_S
        assert moving.mean() > 0.8, joint
        found = effort[predicted_rows, j]
        error = np.linalg.norm(found[moving] - exact[moving, j]) / np.linalg.norm(exact[moving, j])
        assert error < 0.01, f"{joint}: relative error {error:.4f}"


def test_predict_writes_one_row_per_recorded_row_each_with_a_torque(
    predicted: tuple[Run, Path], validation: Synthetic
) -> None:
    """Row by row, the output lines up with the recording: its stamps and positions, and a torque for each."""
    run, out = predicted
    assert run.code == 0, run.err
    header, rows = read_predicted(out)
    source = validation.recording
    assert_array_equal(rows[:, 0], source.time)
    assert_array_equal(rows[:, [header.index(f"{joint}/position") for joint in JOINTS]], source.position)
    effort = rows[:, [header.index(f"{joint}/effort") for joint in JOINTS]]
    # One segment, predicted to its ends: before, the zero-phase filter's transient (0.2 s at 20 Hz) was left nan.
    assert np.isfinite(effort).all()
    assert f"predicted {source.n_samples} of {source.n_samples} rows;" in run.out


def test_predict_accepts_a_recording_of_positions_only(
    capsys: pytest.CaptureFixture[str], identified: tuple[Run, Path], small: Path, tmp_path: Path
) -> None:
    cells = csv_cells(small)
    keep = [i for i, name in enumerate(cells[0]) if not name.endswith("/effort")]
    data = write_cells(tmp_path / "positions.csv", [[row[i] for i in keep] for row in cells])
    out = tmp_path / "predicted.csv"
    run = run_dynid(capsys, "predict", "--params", identified[1], "--data", data, "--out", out)
    assert run.code == 0, run.err
    header, _ = read_predicted(out)
    assert header == ["time"] + [f"{joint}/{kind}" for joint in JOINTS for kind in ("position", "effort")]


def test_predict_gives_the_torques_of_a_planned_excitation_at_every_row(
    capsys: pytest.CaptureFixture[str], arm: Arm, identified: tuple[Run, Path], tmp_path: Path
) -> None:
    # dynid excite's CSV: positions, velocities and accelerations (issue 21, finding 5).
    config = config_with(tmp_path / "excite.yaml", "excitation", "optimise", False)
    plan = tmp_path / "plan.csv"
    excited = run_dynid(capsys, "excite", "--urdf", ARM6_URDF, "--config", config, "--mode", "fourier", "--out", plan)
    assert excited.code == 0, excited.err
    out = tmp_path / "torques.csv"

    run = run_dynid(capsys, "predict", "--params", identified[1], "--data", plan, "--out", out)

    assert run.code == 0, run.err
    header, rows = read_predicted(out)
    assert header == ["time"] + [f"{joint}/{kind}" for joint in JOINTS for kind in ("position", "effort")]
    trajectory = read_trajectory_csv(plan)
    assert_array_equal(rows[:, 0], trajectory.time)
    effort = rows[:, [header.index(f"{joint}/effort") for joint in JOINTS]]
    assert np.isfinite(effort).all()  # a plan is its exact motion: no filter edge, every row predicted
    exact = inverse_dynamics(arm.robot, arm.chain, arm.drive, trajectory.q, trajectory.dq, trajectory.ddq)
    moving = np.abs(trajectory.dq) >= MIN_SPEED_RAD_S  # the identified Coulomb friction holds there
    for j, joint in enumerate(JOINTS):
        rows_j = moving[:, j]
        error = np.linalg.norm(effort[rows_j, j] - exact[rows_j, j]) / np.linalg.norm(exact[rows_j, j])
        assert error < 0.01, f"{joint}: relative error {error:.4f}"
    assert f"predicted {trajectory.time.size} of {trajectory.time.size} rows of the planned motion" in run.out


def test_a_configuration_key_set_where_it_has_no_effect_is_warned_about_once(
    capsys: pytest.CaptureFixture[str], identified: tuple[Run, Path], small: Path, tmp_path: Path
) -> None:
    config = config_with(tmp_path / "unread.yaml", "/**", "current_polynomial", [0.0, 0.4, 0.0, 0.0] * 6)
    out = tmp_path / "predicted.csv"

    run = run_dynid(capsys, "predict", "--params", identified[1], "--data", small, "--config", config, "--out", out)

    assert run.code == 0, run.err
    assert run.err.splitlines() == [
        f"dynid predict: warning: current_polynomial in block '/**' of {config} has no effect on dynid predict: it is"
        " read by the recorder node only"
    ]


# --- bad input: one line on stderr naming the problem, non-zero exit ----------------------------------------


@pytest.mark.parametrize("missing", ["data", "urdf", "config"])
def test_identify_names_a_missing_file(
    capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path, missing: str
) -> None:
    absent = tmp_path / f"no_such_{missing}"
    paths = {"data": small, "urdf": ARM6_URDF, "config": ARM6_CONFIG, missing: absent}
    out = tmp_path / "out.yaml"
    run = run_dynid(capsys, *identify_argv(paths["data"], out, config=paths["config"], urdf=paths["urdf"]))
    assert_one_line_error(run, "identify", str(absent), "not found")
    assert not out.exists()


def test_predict_names_a_missing_parameter_file(
    capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path
) -> None:
    absent = tmp_path / "no_such_params.yaml"
    run = run_dynid(capsys, "predict", "--params", absent, "--data", small, "--out", tmp_path / "out.csv")
    assert_one_line_error(run, "predict", str(absent), "not found")


def test_identify_names_a_missing_position_column(
    capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path
) -> None:
    cells = csv_cells(small)
    drop = cells[0].index("joint_3/position")
    data = write_cells(tmp_path / "no_position.csv", [row[:drop] + row[drop + 1 :] for row in cells])
    run = run_dynid(capsys, *identify_argv(data, tmp_path / "out.yaml"))
    assert_one_line_error(run, "identify", "joint_3/position", str(data))


def test_identify_names_the_line_and_column_of_a_nan_effort(
    capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path
) -> None:
    cells = csv_cells(small)
    column = cells[0].index("joint_2/effort")
    cells[100][column] = "nan"
    data = write_cells(tmp_path / "nan.csv", cells)
    run = run_dynid(capsys, *identify_argv(data, tmp_path / "out.yaml"))
    assert_one_line_error(run, "identify", "line 101", "joint_2/effort", "nan")


def test_identify_names_a_non_numeric_cell(capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path) -> None:
    cells = csv_cells(small)
    column = cells[0].index("joint_4/position")
    cells[7][column] = "0.1rad"
    data = write_cells(tmp_path / "text.csv", cells)
    run = run_dynid(capsys, *identify_argv(data, tmp_path / "out.yaml"))
    assert_one_line_error(run, "identify", "line 8", "joint_4/position", "0.1rad", "not a number")


def test_identify_names_the_missing_time_column(
    capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path
) -> None:
    cells = csv_cells(small)
    assert cells[0][0] == "time"
    data = write_cells(tmp_path / "no_time.csv", [row[1:] for row in cells])
    run = run_dynid(capsys, *identify_argv(data, tmp_path / "out.yaml"))
    assert_one_line_error(run, "identify", "'time'", str(data))


def test_identify_refuses_too_few_samples(capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path) -> None:
    data = write_cells(tmp_path / "short.csv", csv_cells(small)[:51])
    run = run_dynid(capsys, *identify_argv(data, tmp_path / "out.yaml"))
    assert_one_line_error(run, "identify", "too few samples", "50", "min_samples")


def test_identify_refuses_a_robot_standing_still(capsys: pytest.CaptureFixture[str], arm: Arm, tmp_path: Path) -> None:
    samples = int(5.0 * RATE_HZ)
    rest = 0.5 * (arm.robot.lower_position_limits + arm.robot.upper_position_limits)
    recording = recording_from_arrays(
        time=np.arange(samples) / RATE_HZ,
        joint_names=JOINTS,
        position=np.tile(rest, (samples, 1)),
        effort=np.tile(np.linspace(1.0, 6.0, 6), (samples, 1)),
    )
    data = tmp_path / "still.csv"
    write_recording_csv(data, recording)
    run = run_dynid(capsys, *identify_argv(data, tmp_path / "out.yaml"))
    assert_one_line_error(run, "identify", "standing still")


def test_identify_leaves_out_a_row_stamped_earlier_than_its_predecessor_and_says_so(
    capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path
) -> None:
    """Two stamps swapped in a log: identify refused it whole, where dynid stream left the stale row out."""
    cells = csv_cells(small)
    cells[501][0], cells[502][0] = cells[502][0], cells[501][0]
    data = write_cells(tmp_path / "backwards.csv", cells)
    run = run_dynid(capsys, *identify_argv(data, tmp_path / "out.yaml"))
    assert run.code == 0, run.err
    assert (
        "signal: stamps: 1 rows stamped earlier than a row before them (by less than 1 s: stale or out of order)"
        in run.out
    )


def test_identify_names_a_configured_joint_the_urdf_lacks(
    capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path
) -> None:
    config = config_with(tmp_path / "joints.yaml", "/**", "joints", [*JOINTS[:5], "joint_9"])
    run = run_dynid(capsys, *identify_argv(small, tmp_path / "out.yaml", config=config))
    assert_one_line_error(run, "identify", "joint_9")


def test_identify_names_a_misspelt_configuration_key(
    capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path
) -> None:
    config = config_with(tmp_path / "typo.yaml", "estimator", "estimation.metod", "ols")
    run = run_dynid(capsys, *identify_argv(small, tmp_path / "out.yaml", config=config))
    assert_one_line_error(run, "identify", "estimation.metod", str(config))


@pytest.mark.parametrize(
    ("cutoff_hz", "needles"),
    [
        (-5.0, ("signal.position_cutoff_hz", "-5.0")),
        (600.0, ("position_cutoff_hz", "600", "Nyquist")),
    ],
)
def test_identify_names_a_position_cutoff_out_of_range(
    capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path, cutoff_hz: float, needles: tuple[str, ...]
) -> None:
    config = config_with(tmp_path / "cutoff.yaml", "estimator", "signal.position_cutoff_hz", cutoff_hz)
    run = run_dynid(capsys, *identify_argv(small, tmp_path / "out.yaml", config=config))
    assert_one_line_error(run, "identify", *needles)


def test_predict_names_a_wrong_format_key(
    capsys: pytest.CaptureFixture[str], identified: tuple[Run, Path], small: Path, tmp_path: Path
) -> None:
    text = identified[1].read_text(encoding="utf-8")
    params = tmp_path / "old.yaml"
    params.write_text(text.replace(FORMAT, "dynamic_identification/parameters/v0", 1), encoding="utf-8")
    out = tmp_path / "out.csv"
    run = run_dynid(capsys, "predict", "--params", params, "--data", small, "--out", out)
    assert_one_line_error(run, "predict", "format", "parameters/v0")
    assert not out.exists()


def test_identify_names_an_output_folder_that_does_not_exist(
    capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path
) -> None:
    out = tmp_path / "no_such_folder" / "parameters.yaml"
    run = run_dynid(capsys, *identify_argv(small, out))
    assert_one_line_error(run, "identify", str(out))


def test_identify_names_a_urdf_that_is_not_xml_in_one_line(
    capfd: pytest.CaptureFixture[str], small: Path, tmp_path: Path
) -> None:
    code = cli.main(identify_argv(small, tmp_path / "out.yaml", urdf=small))
    captured = capfd.readouterr()
    assert_one_line_error(Run(code, captured.out, captured.err), "identify", str(small), "URDF")


def test_identify_refuses_torques_in_the_wrong_unit_unless_accepted(
    capsys: pytest.CaptureFixture[str], arm: Arm, good: Synthetic, tmp_path: Path
) -> None:
    recording = good.recording
    scaled = recording_from_arrays(
        time=recording.time,
        joint_names=JOINTS,
        position=recording.position,
        effort=1000.0 * recording.joint_torques(arm.chain),  # mN·m written as N·m
    )
    data, out = tmp_path / "milli.csv", tmp_path / "milli.yaml"
    write_recording_csv(data, scaled)
    # The recording's torques are refused first: no drive produces 10 effort limits.
    refused = run_dynid(capsys, *identify_argv(data, out))
    assert_one_line_error(refused, "identify", "beyond 10 × its effort limit", "not in N·m?", "--no-unit-checks")
    # Past the unit checks, the model they give is refused by the plausibility gates.
    unchecked = [*identify_argv(data, out), "--no-unit-checks"]
    message = assert_one_line_error(
        run_dynid(capsys, *unchecked), "identify", "implausible model", "--accept-implausible"
    )
    assert "Fc1" in message and not out.exists()
    accepted = run_dynid(capsys, *unchecked, "--accept-implausible")
    assert accepted.code == 0 and "WARNING: implausible model written" in accepted.out
    assert load_parameters(out).quality["plausibility"]["ok"] is False
    # Written for inspection, never fed forward: the feedforward refuses what its writer judged implausible.
    with pytest.raises(ImplausibleModelError, match="written with --accept-implausible.*Fc1"):
        FeedforwardModel.from_yaml(out)


@pytest.mark.parametrize("verb", ["identify", "stream"])
def test_one_corrupt_torque_sample_is_a_one_line_error_naming_it(
    capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path, verb: str
) -> None:
    # The user-acceptance run: one cell of 1e300 (finite) ended identify with "unexpected error: LinAlgError" and
    # stream with "unexpected error: ValueError", exit 1, "please report it".
    cells = csv_cells(small)
    column = cells[0].index("joint_2/effort")
    cells[101][column] = "1e300"
    data = write_cells(tmp_path / "spike.csv", cells)
    out = tmp_path / ("spike.yaml" if verb == "identify" else "spike.jsonl")
    argv = (
        identify_argv(data, out)
        if verb == "identify"
        else ["stream", "--urdf", str(ARM6_URDF), "--data", str(data), "--config", str(ARM6_CONFIG), "--out", str(out)]
    )
    run = run_dynid(capsys, *argv)
    assert run.code == 2
    assert_one_line_error(
        run,
        verb,
        str(data),
        "torque of joint_2 is 1e+300 N·m at sample 100, beyond 10 × its effort limit",
        "(1 sample of ",
    )


def test_identify_publishes_the_supplied_energy_model_of_one_trajectory_only_physically_consistent(
    capsys: pytest.CaptureFixture[str], good: Synthetic, tmp_path: Path
) -> None:
    # One 6-axis trajectory leaves the supplied-energy model far from any physical robot ([DirectDrive2012]
    # compares it on a 3-axis arm): it used to exit 0 with a model predicting thousands of N·m.
    # Published only as the nearest physically consistent model (the default).
    out = tmp_path / "energy.yaml"
    refused = run_dynid(capsys, *identify_argv(good.path, out), "--model", "supplied_energy", "--no-consistency")
    assert_one_line_error(refused, "identify", "implausible model", "effort limit", "--accept-implausible")
    assert not out.exists()
    run = run_dynid(capsys, *identify_argv(good.path, out), "--model", "supplied_energy")
    assert run.code == 0, run.err
    assert load_parameters(out).quality["plausibility"] == {"ok": True, "problems": []}


def test_identify_refuses_a_regression_model_that_leaves_base_parameters_undetermined(
    capsys: pytest.CaptureFixture[str], arm: Arm, good: Synthetic, tmp_path: Path
) -> None:
    recording = good.recording
    held = recording.position.copy()
    held[:, 5] = held[0, 5]  # the wrist's last joint never moves: the power model cannot see its parameters
    data, out = tmp_path / "held.csv", tmp_path / "held.yaml"
    write_recording_csv(
        data,
        recording_from_arrays(
            time=recording.time, joint_names=JOINTS, position=held, effort=recording.joint_torques(arm.chain)
        ),
    )
    refused = run_dynid(capsys, *identify_argv(data, out), "--model", "power")
    assert_one_line_error(refused, "identify", "the power model determines only", "use --model dynamic")


# --- issue 21, finding 9: messages that said the wrong thing -------------------------------------------------


def test_joints_that_move_but_are_left_out_of_joints_are_named_in_a_warning(good: Synthetic, tmp_path: Path) -> None:
    """Before: a ``joints:`` list of 3 for a 6-axis recording locked the 3 others, that moved, without a word."""
    shipped = ros_parameters(ARM6_CONFIG)
    config = tmp_path / "three.yaml"
    chain = {key: shipped[f"drive_chain.{key}"][:3] for key in ("gear_ratios", "drive_gains")}
    config.write_text(
        yaml.safe_dump(
            {"/**": {"ros__parameters": {"joints": ["joint_1", "joint_2", "joint_3"], "drive_chain": chain}}}
        )
    )
    run = run_captured([*identify_argv(good.path, tmp_path / "three_out.yaml", config=config), "--quiet"])
    (warning,) = [line for line in run.err.splitlines() if ": warning: " in line]
    assert warning.startswith(f"dynid identify: warning: {good.path} records joints joint_4 (")
    assert "joint_6 (" in warning and f"joints in {config} leaves them out" in warning and "locked" in warning


def test_recorded_joint_names_the_urdf_lacks_are_said_to_come_from_the_columns(good: Synthetic, tmp_path: Path) -> None:
    """Before: "unknown joints ['j1', …] in dynid_arm6.urdf", which read as a configuration problem."""
    lines = good.path.read_text(encoding="utf-8").splitlines(keepends=True)
    renamed = tmp_path / "renamed.csv"
    renamed.write_text(lines[0].replace("joint_", "j") + "".join(lines[1:3000]), encoding="utf-8")
    run = run_captured([*identify_argv(renamed, tmp_path / "renamed.yaml", config=None), "--quiet"])
    assert_one_line_error(
        run, "identify", f"the columns of {renamed} (J/position, …) name joints ['j1'", "rename the columns"
    )
    # With joints: in the configuration, the file and the columns are named too (before: "joints [...] are not in
    # the recording", which named neither).
    run = run_captured([*identify_argv(renamed, tmp_path / "renamed.yaml"), "--quiet"])
    assert_one_line_error(run, "identify", f"joints in {ARM6_CONFIG} names ['joint_1'", f"which {renamed} has no")
