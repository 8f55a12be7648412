"""``dynid gains`` ([Briot2012] IDIM-TLS) and ``dynid payload`` ([Swevers2002] ML) from CSV files, as a user runs them.

The recordings are simulated from the physical model of :mod:`~dynamic_identification.testing.payload_simulation`
(Pinocchio ``rnea`` of the arm carrying the load, wrist coupling, transmission efficiencies, rotor
inertia, friction, a third-order current polynomial, 1 % current noise, encoder quantisation) and
written as ``J/current`` CSVs; ``dynid`` runs in-process through :func:`dynamic_identification.cli.main`.
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from numpy.testing import assert_allclose

from arm6_drives import (
    ARM6_DRIVE,
    EFFICIENCY,
    GEAR_RATIOS,
    KNOWN_LOAD,
    NOMINAL_GAINS,
    POLYNOMIAL,
    TRUE_GAINS,
    UNKNOWN_LOAD,
    arm6_chain,
    fourier_current_recording,
    unknown_load_recording,
    wrist_coupling,
)
from dynamic_identification import cli
from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.excitation.safety import JointLimits, ramp, stop_ramp
from dynamic_identification.core.excitation.trajectory import SampledTrajectory, interpolate_trajectory
from dynamic_identification.core.mechanism.payload import Payload
from dynamic_identification.core.mechanism.robot import (
    DriveChain,
    DriveTerms,
    RobotModel,
    load_robot,
)
from dynamic_identification.core.simulation import inverse_dynamics
from dynamic_identification.io.parameters import load_parameters, write_parameters_atomic
from dynamic_identification.io.payload import load_payload, write_payload_atomic
from dynamic_identification.io.recording import read_recording_csv, recording_from_arrays, write_recording_csv
from dynamic_identification.io.trajectory import read_trajectory_csv
from dynamic_identification.io.urdf_location import urdf_sha256
from dynamic_identification.testing.payload_simulation import (
    currents_from_motor_torques,
    motor_side_torques,
)
from repo_paths import ARM6_URDF
from true_parameters import true_parameter_file


def _run(*argv: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(item) for item in argv])
    return code, out.getvalue(), err.getvalue()


def _write_config(path: Path, gains: np.ndarray, *, polynomial: bool = False) -> Path:
    document = {
        "/**": {
            "ros__parameters": {
                "joints": [f"joint_{k}" for k in range(1, 7)],
                "drive_chain": {
                    "gear_ratios": GEAR_RATIOS.tolist(),
                    "drive_gains": gains.tolist(),
                    "coupling": wrist_coupling().ravel().tolist(),
                },
            }
        }
    }
    if polynomial:
        document["/**/recorder"] = {"ros__parameters": {"current_polynomial": POLYNOMIAL.ravel().tolist()}}
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def _write_currents(path: Path, robot: RobotModel, time: np.ndarray, q: np.ndarray, currents: np.ndarray) -> Path:
    write_recording_csv(
        path, recording_from_arrays(time=time, joint_names=robot.joint_names, position=q, current=currents)
    )
    return path


@dataclass(frozen=True)
class Files:
    robot: RobotModel
    folder: Path
    config: Path
    unloaded: Path
    loaded: Path
    known: Path
    gains: Path
    report: str


@pytest.fixture(scope="module")
def gains(tmp_path_factory: pytest.TempPathFactory) -> Files:
    """20 s without load and 20 s with the known load, true gains 5-10 % off the configured ones; ``dynid gains``."""
    folder = tmp_path_factory.mktemp("gains")
    robot = load_robot(ARM6_URDF)
    truth = arm6_chain(TRUE_GAINS)
    paths = []
    for name, seed, payload in (("unloaded.csv", 1, None), ("loaded.csv", 2, KNOWN_LOAD)):
        recording = fourier_current_recording(
            robot, truth, trajectory_seed=seed, duration_s=20.0, payload=payload, seed=10 + seed
        )
        paths.append(_write_currents(folder / name, robot, recording.time, recording.q, recording.currents))
    known = folder / "known.yaml"
    write_payload_atomic(known, KNOWN_LOAD)
    config = _write_config(folder / "config.yaml", NOMINAL_GAINS)
    out = folder / "gains.yaml"
    code, report, error = _run(
        "gains", "--urdf", ARM6_URDF, "--data", paths[0], "--data-loaded", paths[1], "--payload", known,
        "--frame", "tool0", "--config", config, "--out", out,
    )  # fmt: skip
    assert code == 0, error
    return Files(robot, folder, config, paths[0], paths[1], known, out, report)


def test_gains_are_within_one_percent_of_the_truth_with_one_percent_current_noise(gains: Files) -> None:
    # Measured: within 0.1 % (σ 0.02-0.07 %), from configured gains 5-10 % off.
    document = yaml.safe_load(gains.gains.read_text(encoding="utf-8"))
    identified = np.array(document["/**"]["ros__parameters"]["drive_chain"]["drive_gains"])
    assert_allclose(identified, TRUE_GAINS, rtol=0.01)
    assert "IDIM-TLS" in gains.report and "joint_6" in gains.report
    # No gain rests on a large errors-in-variables correction here: nothing to warn about.
    assert "warnings" not in document["drive_gains_identification"]["ros__parameters"]
    assert "warning:" not in gains.report


def test_lossless_drives_get_one_gain_per_motor_and_one_line_saying_why(gains: Files) -> None:
    document = yaml.safe_load(gains.gains.read_text(encoding="utf-8"))
    block = document["drive_gains_identification"]["ros__parameters"]
    assert block["model"]["chosen"] == "one gain" and "efficiency" not in block
    lines = [line for line in gains.report.splitlines() if line.startswith("model: ")]
    assert len(lines) == 1 and "one gain per motor" in lines[0]
    assert "not explain the data significantly better" in lines[0]


def test_the_gains_file_is_a_configuration_identify_reads_and_it_beats_the_nominal_gains(gains: Files) -> None:
    # IDIM-WLS must trust the gains it is given: with the data sheet's its torques are off by the gain errors.
    # Measured on a fresh trajectory: 0.05 % relative error with the TLS gains, 7.5 % with the nominal ones
    # (0.04 and 7.2 % before main's data-driven signal defaults, consistent estimates and row-wise predict).
    robot = gains.robot
    truth = arm6_chain(TRUE_GAINS)
    time = np.arange(0.0, 10.0, 0.001)
    q, dq, ddq = random_fourier_trajectory(robot, seed=3, margin=0.25).evaluate(time)
    validation = gains.folder / "validation.csv"
    write_recording_csv(
        validation,
        recording_from_arrays(
            time=time,
            joint_names=robot.joint_names,
            position=q,
            effort=inverse_dynamics(robot, truth, ARM6_DRIVE, q, dq, ddq),
        ),
    )
    errors = {}
    for label, config in (("tls", gains.gains), ("nominal", gains.config)):
        params = gains.folder / f"robot_{label}.yaml"
        code, _, error = _run("identify", "--urdf", ARM6_URDF, "--data", gains.unloaded, "--config", config,
                              "--out", params)  # fmt: skip
        assert code == 0, error
        code, report, error = _run("predict", "--params", params, "--data", validation, "--out", gains.folder / "p.csv")
        assert code == 0, error
        # main's predict: "relative error ||predicted - recorded|| / ||recorded|| on the predicted rows: X".
        match = re.search(r"\|\|recorded\|\|[^:\n]*: ([-+0-9.eE]+)", report)
        assert match, report
        errors[label] = float(match.group(1))
    assert errors["tls"] < 0.005
    assert errors["nominal"] > 10.0 * errors["tls"]


@pytest.fixture(scope="module")
def lossy_gains(gains: Files) -> dict[str, tuple[dict, str]]:
    """``dynid gains`` on data with efficiency losses and the wrist coupling: by default and ``--no-efficiency``."""
    truth = arm6_chain(TRUE_GAINS)
    paths = []
    for name, seed, payload in (("lossy_unloaded.csv", 1, None), ("lossy_loaded.csv", 2, KNOWN_LOAD)):
        recording = fourier_current_recording(
            gains.robot,
            truth,
            trajectory_seed=seed,
            duration_s=20.0,
            payload=payload,
            efficiency=EFFICIENCY,
            seed=20 + seed,
        )
        paths.append(_write_currents(gains.folder / name, gains.robot, recording.time, recording.q, recording.currents))
    runs = {}
    for label, extra in (("efficiency", []), ("single", ["--no-efficiency"])):
        out = gains.folder / f"lossy_{label}.yaml"
        code, report, error = _run(
            "gains", "--urdf", ARM6_URDF, "--data", paths[0], "--data-loaded", paths[1], "--payload", gains.known,
            "--config", gains.config, "--out", out, *extra,
        )  # fmt: skip
        assert code == 0, error
        runs[label] = (yaml.safe_load(out.read_text(encoding="utf-8")), report)
    return runs


def test_gains_with_efficiency_losses_are_within_one_percent_and_the_efficiencies_are_written(
    lossy_gains: dict[str, tuple[dict, str]],
) -> None:
    # Measured: gains within 0.11 %, η within 0.14 % (joint 1), the others 0.07 %; --no-efficiency: up to 14.6 % off.
    document, report = lossy_gains["efficiency"]
    identified = np.array(document["/**"]["ros__parameters"]["drive_chain"]["drive_gains"])
    assert_allclose(identified, TRUE_GAINS, rtol=0.01)
    block = document["drive_gains_identification"]["ros__parameters"]
    assert block["efficiency_identified"] == [True] * 6
    assert_allclose(block["efficiency"], EFFICIENCY, rtol=0.03)
    assert all(0.0 < std < 0.01 for std in block["efficiency_std"])
    assert "η" in report and "transmission efficiency" in report
    assert block["model"]["chosen"] == "efficiency" and "model: efficiency model" in report
    single, report = lossy_gains["single"]
    assert "efficiency" not in single["drive_gains_identification"]["ros__parameters"] and "η" not in report
    single_gains = np.array(single["/**"]["ros__parameters"]["drive_chain"]["drive_gains"])
    assert np.max(np.abs(single_gains / TRUE_GAINS - 1.0)) > 0.05


def test_gains_refuse_a_recording_without_currents_in_one_line(gains: Files, tmp_path: Path) -> None:
    torques = read_recording_csv(gains.loaded)
    effort_only = tmp_path / "effort.csv"
    write_recording_csv(
        effort_only,
        recording_from_arrays(
            time=torques.time,
            joint_names=torques.joint_names,
            position=torques.position,
            effort=torques.current * TRUE_GAINS * GEAR_RATIOS,
        ),
    )
    code, _, error = _run(
        "gains", "--urdf", ARM6_URDF, "--data", gains.unloaded, "--data-loaded", effort_only, "--payload", gains.known,
        "--frame", "tool0", "--config", gains.config, "--out", tmp_path / "g.yaml",
    )  # fmt: skip
    assert code == 2
    assert error.count("\n") == 1 and "has no motor currents" in error and "effort.csv" in error
    assert not (tmp_path / "g.yaml").exists()


@pytest.mark.parametrize("verb", ["gains", "payload"])
def test_an_unknown_frame_is_a_one_line_error_naming_the_frames(verb: str, gains: Files, tmp_path: Path) -> None:
    if verb == "gains":
        argv = ["--urdf", ARM6_URDF, "--data", gains.unloaded, "--data-loaded", gains.loaded, "--payload", gains.known]
    else:
        params = tmp_path / "robot.yaml"
        write_parameters_atomic(
            params, true_parameter_file(gains.robot, DriveChain.create(6), DriveTerms(), ARM6_DRIVE, urdf=ARM6_URDF)
        )
        argv = ["--params", params, "--data", gains.loaded]
    code, _, error = _run(verb, *argv, "--frame", "flange", "--out", tmp_path / "out.yaml")
    assert code == 2
    assert error.count("\n") == 1 and "unknown frame 'flange'" in error and "tool0" in error


def test_a_payload_file_with_an_inertia_that_is_not_positive_definite_is_a_one_line_error(
    gains: Files, tmp_path: Path
) -> None:
    text = gains.known.read_text(encoding="utf-8")
    document = yaml.safe_load(text)
    document["payload"]["inertia_kg_m2"] = {"ixx": 0.02, "ixy": 0.0, "ixz": 0.0, "iyy": -0.01, "iyz": 0.0, "izz": 0.02}
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(document), encoding="utf-8")
    code, _, error = _run(
        "gains", "--urdf", ARM6_URDF, "--data", gains.unloaded, "--data-loaded", gains.loaded, "--payload", bad,
        "--out", tmp_path / "g.yaml",
    )  # fmt: skip
    assert code == 2
    assert error.count("\n") == 1 and "not positive definite" in error and "bad.yaml" in error


# --------------------------------------------------------------------------- dynid payload


@dataclass(frozen=True)
class PayloadRun:
    folder: Path
    ml: Payload
    linear: Payload
    report: str
    out: Path


@pytest.fixture(scope="module")
def payload_run(tmp_path_factory: pytest.TempPathFactory) -> PayloadRun:
    """40 s of the arm with the unknown load: efficiency losses, coupling, the current polynomial, 1 % noise."""
    folder = tmp_path_factory.mktemp("payload")
    robot = load_robot(ARM6_URDF)
    chain = arm6_chain(NOMINAL_GAINS)
    recording = unknown_load_recording(robot, chain, duration_s=40.0, seed=5)
    loaded = _write_currents(folder / "loaded.csv", robot, recording.time, recording.q, recording.currents)
    params = folder / "robot.yaml"
    write_parameters_atomic(params, true_parameter_file(robot, chain, DriveTerms(), ARM6_DRIVE, urdf=ARM6_URDF))
    config = _write_config(folder / "config.yaml", NOMINAL_GAINS, polynomial=True)
    found = {}
    report = ""
    for method in ("ml", "linear"):
        out = folder / f"payload_{method}.yaml"
        code, text, error = _run("payload", "--params", params, "--data", loaded, "--frame", "tool0",
                                 "--config", config, "--out", out, "--method", method)  # fmt: skip
        assert code == 0, error
        found[method] = load_payload(out)
        report = text if method == "ml" else report
    return PayloadRun(folder, found["ml"], found["linear"], report, folder / "payload_ml.yaml")


def _errors(payload: Payload) -> tuple[float, float, float]:
    """Relative mass error, largest COM coordinate error (m), largest relative principal-moment error."""
    return (
        abs(payload.mass_kg / UNKNOWN_LOAD.mass_kg - 1.0),
        float(np.max(np.abs(payload.com_m - UNKNOWN_LOAD.com_m))),
        float(np.max(np.abs(payload.principal_moments() / UNKNOWN_LOAD.principal_moments() - 1.0))),
    )


def test_payload_mass_com_and_principal_moments_by_ml(payload_run: PayloadRun) -> None:
    # Measured: mass 0.06 %, COM 0.08 mm, principal moments 1.0 % ([Swevers2002] Table 2, KR150: mass 0.68 %).
    mass, com, moments = _errors(payload_run.ml)
    assert mass < 0.01
    assert com < 0.003
    assert moments < 0.05


def test_ml_with_efficiency_beats_the_linear_estimate_on_data_with_losses(payload_run: PayloadRun) -> None:
    # Measured: the linear estimate (efficiency 1) is off by 3.7 % in mass, 7.3 mm in COM, 36 % in moments.
    ml, linear = _errors(payload_run.ml), _errors(payload_run.linear)
    assert linear[0] > 0.01
    assert all(m < 0.2 * lin for m, lin in zip(ml, linear, strict=True))


def test_the_payload_file_has_the_contract_keys_with_std_and_the_table_is_printed(payload_run: PayloadRun) -> None:
    body = yaml.safe_load(payload_run.out.read_text(encoding="utf-8"))["payload"]
    assert set(body) == {"frame", "mass_kg", "com_m", "inertia_kg_m2", "std"}
    assert body["frame"] == "tool0" and len(body["com_m"]) == 3
    keys = {"ixx", "ixy", "ixz", "iyy", "iyz", "izz"}
    assert set(body["inertia_kg_m2"]) == keys and set(body["std"]["inertia_kg_m2"]) == keys
    assert set(body["std"]) == {"mass_kg", "com_m", "inertia_kg_m2"}
    assert abs(body["mass_kg"] - UNKNOWN_LOAD.mass_kg) < 4.0 * body["std"]["mass_kg"]
    for row in ("mass", "com x", "com z", "inertia ixx", "inertia izz"):
        assert row in payload_run.report
    assert "current polynomial" in payload_run.report and "efficiency" in payload_run.report


def test_payload_reads_a_late_driver_s_currents_as_late_as_the_robot_s_identification_aligned_them(
    payload_run: PayloadRun, tmp_path: Path
) -> None:
    """The robot's file says its identification found the currents 9 ms late and aligned them
    (``quality.torque_delay``); the same driver's recording with the load comes 9 ms late too. Measured: read as
    recorded, the mass came out 7.0 g (0.20 %, 9.5 σ) and the centre of mass 0.23 mm from the estimate in time, with
    a σ of the mass 4.9 times larger; read with the file's delay, the estimate in time."""
    folder = payload_run.folder
    recording = read_recording_csv(folder / "loaded.csv")
    assert recording.current is not None
    late = np.column_stack([np.interp(recording.time - 0.009, recording.time, c) for c in recording.current.T])
    robot = load_robot(ARM6_URDF)
    loaded = _write_currents(tmp_path / "late.csv", robot, recording.time, recording.position, late)
    document = load_parameters(folder / "robot.yaml")
    aligned = {"delay_s": 0.009, "std_s": 0.0003, "aligned": True, "reason": "torque delay: 9 ± 0.3 ms …"}
    params = tmp_path / "robot.yaml"
    write_parameters_atomic(params, replace(document, quality={**document.quality, "torque_delay": aligned}))
    out = tmp_path / "payload.yaml"
    code, text, error = _run("payload", "--params", params, "--data", loaded, "--frame", "tool0",
                             "--config", folder / "config.yaml", "--out", out)  # fmt: skip
    assert code == 0, error
    assert "torques: read 9 ms later than recorded, as the robot's identification aligned them" in text
    assert yaml.safe_load(out.read_text(encoding="utf-8"))["identification"]["torque_delay_s"] == 0.009
    found, in_time = load_payload(out), payload_run.ml
    assert abs(found.mass_kg - in_time.mass_kg) < 0.1 * 7.0e-3, (found.mass_kg, in_time.mass_kg)
    assert np.max(np.abs(found.com_m - in_time.com_m)) < 0.1 * 0.23e-3, (found.com_m, in_time.com_m)


def test_payload_of_a_robot_identified_by_dynid_identify(tmp_path: Path) -> None:
    # The whole pipeline on a robot without transmission losses: identify, then the load with it as prior.
    # Measured: mass 0.01 %, COM 0.03 mm, principal moments 1.3 % (the prior's wrist errors).
    robot = load_robot(ARM6_URDF)
    chain = arm6_chain(NOMINAL_GAINS)
    config = _write_config(tmp_path / "config.yaml", NOMINAL_GAINS)
    files = []
    for name, seed, payload, seconds in (("unloaded.csv", 8, None, 60.0), ("loaded.csv", 3, UNKNOWN_LOAD, 30.0)):
        recording = fourier_current_recording(
            robot, chain, trajectory_seed=seed, duration_s=seconds, payload=payload, seed=seed + 20
        )
        files.append(_write_currents(tmp_path / name, robot, recording.time, recording.q, recording.currents))
    code, _, error = _run("identify", "--urdf", ARM6_URDF, "--data", files[0], "--config", config,
                          "--out", tmp_path / "robot.yaml")  # fmt: skip
    assert code == 0, error
    code, _, error = _run("payload", "--params", tmp_path / "robot.yaml", "--data", files[1], "--frame", "tool0",
                          "--config", config, "--out", tmp_path / "payload.yaml")  # fmt: skip
    assert code == 0, error
    mass, com, moments = _errors(load_payload(tmp_path / "payload.yaml"))
    assert mass < 0.01 and com < 0.003 and moments < 0.05


@pytest.fixture(scope="module")
def payload_plan(tmp_path_factory: pytest.TempPathFactory) -> tuple[SampledTrajectory, str]:
    """`dynid excite --mode payload`'s plan of 3 periods of 10 s at 100 Hz, and its report."""
    folder = tmp_path_factory.mktemp("payload_plan")
    config = folder / "excite.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "/**/excitation": {
                    "ros__parameters": {
                        "fundamental_hz": 0.1, "harmonics": 5, "periods": 3, "rate_hz": 100.0,
                        "max_evaluations": 300, "time_budget_s": 60.0, "frame": "tool0",
                    }
                }
            }
        ),
        encoding="utf-8",
    )  # fmt: skip
    code, report, error = _run("excite", "--urdf", ARM6_URDF, "--config", config, "--mode", "payload",
                               "--out", folder / "trajectory.csv")  # fmt: skip
    assert code == 0, error
    return read_trajectory_csv(folder / "trajectory.csv"), report


def _payload_run(
    folder: Path, time: np.ndarray, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, period: str
) -> tuple[int, str, str]:
    """`dynid payload --period` on the arm following ``q, dq, ddq`` with the load (losses, 1 % current noise)."""
    robot = load_robot(ARM6_URDF)
    chain = arm6_chain(NOMINAL_GAINS)
    currents = currents_from_motor_torques(
        chain, motor_side_torques(robot, chain, ARM6_DRIVE, q, dq, ddq, payload=UNKNOWN_LOAD, efficiency=EFFICIENCY)
    )
    noisy = currents + np.random.default_rng(4).normal(size=currents.shape) * 0.01 * np.sqrt(
        np.mean(currents**2, axis=0)
    )
    loaded = _write_currents(folder / "loaded.csv", robot, time, q, noisy)
    params = folder / "robot.yaml"
    write_parameters_atomic(params, true_parameter_file(robot, chain, DriveTerms(), ARM6_DRIVE, urdf=ARM6_URDF))
    config = _write_config(folder / "c.yaml", NOMINAL_GAINS)
    return _run("payload", "--params", params, "--data", loaded, "--frame", "tool0", "--period", period,
                "--config", config, "--out", folder / "p.yaml")  # fmt: skip


def test_the_payload_excitation_moves_the_wrist_and_gives_the_load_from_its_periods(
    tmp_path: Path, payload_plan: tuple[SampledTrajectory, str]
) -> None:
    # Item 5: `dynid excite --mode payload` plans the last four joints ([Swevers2002] §4.2); the arm follows it
    # with the load (losses, 1 % noise) and `dynid payload --period` averages its periods ([Swevers2002] §4.3).
    # Measured: mass 0.008 %, COM 0.01 mm, principal moments 0.7 %.
    planned, report = payload_plan
    assert "payload regressor" in report and "checked at 1 kHz" in report
    assert np.ptp(planned.q[:, :2], axis=0).max() == 0.0  # shoulder joints held
    assert np.all(np.ptp(planned.q[:, 2:], axis=0) > 0.2)  # joint 3 and the wrist move
    time = np.arange(0.0, float(planned.time[-1]), 0.002)
    q, dq, ddq = interpolate_trajectory(planned.time, planned.q, planned.dq, planned.ddq, time)
    code, _, error = _payload_run(tmp_path, time, q, dq, ddq, "10")
    assert code == 0, error
    mass, com, moments = _errors(load_payload(tmp_path / "p.yaml"))
    assert mass < 0.01 and com < 0.003 and moments < 0.05


def test_payload_refuses_a_current_no_drive_produces_in_one_line(tmp_path: Path) -> None:
    # One corrupt current sample (1e300 A, finite) is refused like the identification's recordings are.
    robot = load_robot(ARM6_URDF)
    chain = arm6_chain(NOMINAL_GAINS)
    recording = unknown_load_recording(robot, chain, fundamental_hz=0.1, duration_s=4.0, rate_hz=250.0, seed=5)
    currents = recording.currents.copy()
    currents[100, 3] = 1e300
    loaded = _write_currents(tmp_path / "spike.csv", robot, recording.time, recording.q, currents)
    params = tmp_path / "robot.yaml"
    write_parameters_atomic(params, true_parameter_file(robot, chain, DriveTerms(), ARM6_DRIVE, urdf=ARM6_URDF))
    config = _write_config(tmp_path / "c.yaml", NOMINAL_GAINS)
    code, _, error = _run("payload", "--params", params, "--data", loaded, "--frame", "tool0",
                          "--config", config, "--out", tmp_path / "p.yaml")  # fmt: skip
    assert code == 2 and "at sample 100" in error and "a corrupt sample, or currents in mA rather than A" in error
    assert error.count("\n") == 1 and not (tmp_path / "p.yaml").exists()


def test_payload_reads_the_robot_of_its_parameter_file_as_every_reader_does(tmp_path: Path) -> None:
    # Its URDF beside the file, named relative to it, and checked against robot.urdf_sha256: dynid payload looked
    # the name up from the working directory first and never checked the URDF was the one identified.
    robot = load_robot(ARM6_URDF)
    chain = arm6_chain(NOMINAL_GAINS)
    folder = tmp_path / "model"
    folder.mkdir()
    urdf = folder / "arm.urdf"
    urdf.write_text(Path(ARM6_URDF).read_text(encoding="utf-8"), encoding="utf-8")
    params = folder / "robot.yaml"
    identified = true_parameter_file(robot, chain, DriveTerms(), ARM6_DRIVE, urdf="arm.urdf")
    write_parameters_atomic(params, replace(identified, urdf_sha256=urdf_sha256(urdf)))
    recording = unknown_load_recording(robot, chain, fundamental_hz=0.1, duration_s=4.0, rate_hz=250.0, seed=5)
    loaded = _write_currents(tmp_path / "loaded.csv", robot, recording.time, recording.q, recording.currents)
    config = _write_config(tmp_path / "c.yaml", NOMINAL_GAINS)
    argv = ("payload", "--params", params, "--data", loaded, "--frame", "tool0", "--config", config)
    code, _, error = _run(*argv, "--out", tmp_path / "p.yaml")
    assert code == 0, error
    urdf.write_text(urdf.read_text(encoding="utf-8") + "<!-- edited -->\n", encoding="utf-8")
    code, _, error = _run(*argv, "--out", tmp_path / "q.yaml")
    assert code == 2 and "is not the one" in error and error.count("\n") == 1


def test_payload_periods_are_found_between_the_rest_and_the_ramps_of_a_played_excitation(
    tmp_path: Path, payload_plan: tuple[SampledTrajectory, str]
) -> None:
    # As the excitation node plays it (its C² ramps in from rest and out to rest), recorded with 2 s at rest before
    # and 3 s after: averaging from the first sample took the rest and the ramps as periods, with no warning.
    # Measured before: mass 0.76 %, COM 1.6 mm, principal moments 84 %; now 0.03 %, 0.06 mm, 1.5 %.
    planned, _ = payload_plan
    limits = JointLimits.from_robot(load_robot(ARM6_URDF))
    home, rest = planned.q[0] - np.array([0.0, 0.0, 0.3, 0.2, 0.2, 0.3]), np.zeros(6)
    ramp_in = ramp((home, rest, rest), (planned.q[0], planned.dq[0], planned.ddq[0]), limits, rate_hz=100.0)
    ramp_out = stop_ramp((planned.q[-1], planned.dq[-1], planned.ddq[-1]), limits, rate_hz=100.0)
    played = [
        np.concatenate([x[:-1], y, z[1:]])
        for x, y, z in zip(
            (ramp_in.q, ramp_in.dq, ramp_in.ddq),
            (planned.q, planned.dq, planned.ddq),
            (ramp_out.q, ramp_out.dq, ramp_out.ddq),
            strict=True,
        )
    ]
    played_time = np.arange(played[0].shape[0]) / 100.0
    time = np.arange(0.0, float(played_time[-1]), 0.002)
    q, dq, ddq = interpolate_trajectory(played_time, *played, time)
    before, after = int(2.0 / 0.002), int(3.0 / 0.002)
    q = np.concatenate([np.repeat(q[:1], before, 0), q, np.repeat(q[-1:], after, 0)])
    dq, ddq = (np.concatenate([np.zeros((before, 6)), x, np.zeros((after, 6))]) for x in (dq, ddq))
    time = np.arange(q.shape[0]) * 0.002
    code, report, error = _payload_run(tmp_path, time, q, dq, ddq, "10")
    assert code == 0, error
    mass, com, moments = _errors(load_payload(tmp_path / "p.yaml"))
    assert mass < 0.01 and com < 0.003 and moments < 0.05
    assert "periods: 3 averaged, from 2.3" in report
    code, _, error = _payload_run(tmp_path, time, q, dq, ddq, "7")
    assert code == 2 and "do not repeat every 7 s" in error and "is the period the excitation's?" in error
    assert error.count("\n") == 1
