"""What ``dynid identify`` writes besides parameters: a self-contained file, ``--urdf-out``, ``--validate``, a report.

The recordings are synthesised from the exact inverse dynamics of the shipped 6-axis arm
(``urdf/dynid_arm6.urdf``, drive chain and true drive parameters from
``config/dynid_arm6.yaml``) along random Fourier excitations at 1 kHz with quantised
encoder positions and noisy motor currents. The identification uses signal settings other
than the defaults (cut-off 15 Hz, gap factor 4, stick speed 0.08 rad/s), so a ``dynid
predict`` that ignored the file's settings would be caught.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pinocchio as pin
import pytest
import yaml
from numpy.testing import assert_allclose

from dynamic_identification import cli
from dynamic_identification.api import with_joint_torques
from dynamic_identification.core.estimation.consistency import is_physically_consistent
from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.mechanism.robot import DriveChain, DriveParameters, DriveTerms, load_robot
from dynamic_identification.core.mechanism.seam import mechanism_of
from dynamic_identification.core.simulation import inverse_dynamics, synthesize_measurements
from dynamic_identification.feedforward import FeedforwardModel
from dynamic_identification.io.config import load_config, simulated_robot
from dynamic_identification.io.parameters import load_parameters, write_parameters_atomic
from dynamic_identification.io.recording import (
    Recording,
    recording_from_arrays,
    write_recording_csv,
)
from repo_paths import ARM6_CONFIG, ARM6_URDF, example_robot_file

RATE_HZ = 1000.0
SIGNAL = {"position_cutoff_hz": 15.0, "gap_factor": 4.0, "min_speed_rad_s": 0.08}
"""Signal settings of the identification, all different from the defaults."""


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def dynid(*argv: str | Path) -> Run:
    """``cli.main(argv)`` with stdout and stderr captured (usable from module-scoped fixtures)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(arg) for arg in argv])
    return Run(code, out.getvalue(), err.getvalue())


def config_with(path: Path, signal: dict[str, float], estimation: dict[str, object] | None = None) -> Path:
    """The shipped configuration with ``signal.*`` (and ``estimation.*``) of the estimator block replaced."""
    document = yaml.safe_load(ARM6_CONFIG.read_text(encoding="utf-8"))
    block = document["/**/estimator"]["ros__parameters"]
    block["signal"].update(signal)
    block["estimation"].update(estimation or {})
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def synthetic(path: Path, *, seconds: float, seed: int) -> Recording:
    """A recording of motor currents along a random Fourier excitation, written to ``path``."""
    robot = load_robot(ARM6_URDF)
    chain = load_config(str(ARM6_CONFIG)).drive_chain(robot.n_joints)
    simulated = simulated_robot(ARM6_CONFIG, robot.n_joints)
    rng = np.random.default_rng(seed)
    stamps = np.arange(int(seconds * RATE_HZ)) / RATE_HZ + rng.uniform(-2e-4, 2e-4, int(seconds * RATE_HZ))
    trajectory = random_fourier_trajectory(robot, margin=0.2, velocity_fraction=0.5, seed=seed)
    q, dq, ddq = trajectory.evaluate(stamps)
    q_measured, currents = synthesize_measurements(
        robot, chain, simulated.drive, stamps, q, dq, ddq, simulated.sensor, seed=seed
    )
    recording = recording_from_arrays(time=stamps, joint_names=robot.joint_names, position=q_measured, current=currents)
    write_recording_csv(path, recording)
    return recording


@dataclass(frozen=True)
class Identified:
    run: Run
    params: Path
    urdf: Path
    report: Path
    config: Path
    training: Recording
    held_out: Path


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("outputs")


@pytest.fixture(scope="module")
def identified(folder: Path) -> Identified:
    """``dynid identify`` with ``--urdf-out``, ``--validate`` (twice: the same file) and ``--report``."""
    config = config_with(folder / "config.yaml", SIGNAL)
    training = synthetic(folder / "training.csv", seconds=30.0, seed=3)
    synthetic(folder / "held_out.csv", seconds=10.0, seed=4)
    params, urdf, report = folder / "params.yaml", folder / "identified.urdf", folder / "report"
    run = dynid(
        "identify",
        "--urdf",
        ARM6_URDF,
        "--data",
        folder / "training.csv",
        "--config",
        config,
        "--out",
        params,
        "--urdf-out",
        urdf,
        "--validate",
        folder / "held_out.csv",
        "--validate",
        folder / "held_out.csv",
        "--report",
        report,
    )
    assert run.code == 0, run.err
    return Identified(run, params, urdf, report, config, training, folder / "held_out.csv")


# --- the parameter file is self-contained ---------------------------------------------------------------


def test_the_file_stores_every_signal_setting_the_identification_used(identified: Identified) -> None:
    stored = load_parameters(identified.params)
    signal = stored.signal_settings()
    assert signal is not None
    for key, value in SIGNAL.items():
        assert getattr(signal, key) == value
    assert stored.settings["method"] == "wls" and "e_tol" in stored.settings
    # What signal.torque_delay: auto found is kept beside the setting (the simulator's torques are in time).
    delay = stored.quality["torque_delay"]
    assert delay["aligned"] is False and abs(delay["delay_s"]) < 3.0 * delay["std_s"], delay
    assert delay["reason"].startswith("torque delay: none (")


def test_predict_without_config_uses_the_stored_settings(identified: Identified, folder: Path) -> None:
    with_config, without = folder / "with_config.csv", folder / "without.csv"
    argv = ["predict", "--params", identified.params, "--data", identified.held_out]
    assert dynid(*argv, "--config", identified.config, "--out", with_config).code == 0
    run = dynid(*argv, "--out", without)
    assert run.code == 0, run.err
    assert f"signal settings from {identified.params}: position_cutoff_hz=15.0" in run.out
    assert without.read_bytes() == with_config.read_bytes()
    shipped = folder / "shipped.csv"  # the shipped configuration filters at 20 Hz: another prediction
    assert dynid(*argv, "--config", ARM6_CONFIG, "--out", shipped).code == 0
    assert shipped.read_bytes() != without.read_bytes()


def test_predict_gives_the_error_where_the_joints_move_as_validate_does_beside_every_row_s(
    identified: Identified, folder: Path
) -> None:
    """``dynid predict`` judged every row, the rows at rest too, where the model gives gravity ± Fc by the sign of
    the velocity's noise: 0.3493 against 0.0407 where the joints move, the figure ``--validate`` gives."""
    entry = load_parameters(identified.params).quality["validation"][0]
    run = dynid("predict", "--params", identified.params, "--data", identified.held_out, "--out", folder / "p.csv")
    assert run.code == 0, run.err
    line = next(line for line in run.out.splitlines() if line.startswith("relative error"))
    moving = f"{entry['recorded_relative_error']:.4g} where the joint moves ({entry['moving']} of 60000 joint samples"
    assert line.startswith(f"relative error ||predicted - recorded|| / ||recorded||: {moving}")
    assert re.search(r"; [\d.]+ on every predicted row \(at rest", line), line


def test_predict_judges_a_driver_s_late_torques_read_as_late_as_its_identification_aligned_them(
    identified: Identified, folder: Path
) -> None:
    """A file whose identification found the torques 3 ms late (``quality.torque_delay``) predicts the torque of the
    motion at each row; the same driver's held-out torques come 3 ms late, and the error line compared them as
    recorded. Noise-free torques, so that only the model and the timing count."""
    robot = load_robot(ARM6_URDF)
    chain = load_config(str(ARM6_CONFIG)).drive_chain(robot.n_joints)
    drive = simulated_robot(ARM6_CONFIG, robot.n_joints).drive
    trajectory = random_fourier_trajectory(robot, margin=0.2, velocity_fraction=0.5, seed=4)
    time = np.arange(int(10.0 * RATE_HZ)) / RATE_HZ

    def recorded(path: Path, delay_s: float) -> Path:
        torques = inverse_dynamics(robot, chain, drive, *trajectory.evaluate(time - delay_s))
        q = trajectory.evaluate(time)[0]
        write_recording_csv(
            path, recording_from_arrays(time=time, joint_names=robot.joint_names, position=q, effort=torques)
        )
        return path

    in_time_data, late_data = recorded(folder / "in_time.csv", 0.0), recorded(folder / "late.csv", 0.003)
    document = load_parameters(identified.params)
    aligned = {"delay_s": 0.003, "std_s": 0.0002, "aligned": True, "reason": "torque delay: 3 ± 0.2 ms …"}
    params = folder / "late.yaml"
    write_parameters_atomic(params, replace(document, quality={**document.quality, "torque_delay": aligned}))

    def predict(parameters: Path, data: Path) -> Run:
        return dynid("predict", "--params", parameters, "--data", data, "--out", folder / "predicted.csv")

    def moving_error(run: Run) -> float:
        assert run.code == 0, run.err
        line = next(line for line in run.out.splitlines() if line.startswith("relative error"))
        return float(line.split(": ")[1].split()[0])

    in_time = moving_error(predict(identified.params, in_time_data))
    as_recorded = moving_error(predict(identified.params, late_data))
    run = predict(params, late_data)
    assert "the recorded torques read 3 ms later, as the identification aligned them (quality.torque_delay)" in run.out
    assert abs(moving_error(run) - in_time) < 0.1 * (as_recorded - in_time), (moving_error(run), in_time, as_recorded)


def test_the_stamp_is_the_data_time_of_the_last_sample(identified: Identified) -> None:
    assert load_parameters(identified.params).stamp == identified.training.time[-1]


def test_the_file_names_the_urdf_with_its_hash(identified: Identified) -> None:
    stored = load_parameters(identified.params)
    assert stored.urdf_sha256 == hashlib.sha256(ARM6_URDF.read_bytes()).hexdigest()
    assert stored.urdf_path() == ARM6_URDF.resolve()


def test_predict_refuses_a_urdf_that_changed_since_the_identification(identified: Identified, tmp_path: Path) -> None:
    urdf = tmp_path / "arm.urdf"
    shutil.copyfile(ARM6_URDF, urdf)
    document = yaml.safe_load(identified.params.read_text(encoding="utf-8"))
    document["robot"]["urdf"] = "arm.urdf"  # beside the file
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    out = tmp_path / "predicted.csv"
    assert dynid("predict", "--params", params, "--data", identified.held_out, "--out", out).code == 0
    urdf.write_text(urdf.read_text(encoding="utf-8").replace("</robot>", "<!-- edited --></robot>"), encoding="utf-8")

    run = dynid("predict", "--params", params, "--data", identified.held_out, "--out", tmp_path / "again.csv")

    assert run.code == 2 and run.out == ""
    (line,) = run.err.splitlines()
    assert line.startswith("dynid predict: error: the URDF ") and "changed since" in line
    assert hashlib.sha256(urdf.read_bytes()).hexdigest()[:16] in line
    assert document["robot"]["urdf_sha256"][:16] in line


def test_a_file_identified_on_the_pip_installed_panda_is_read_back_by_predict_and_the_feedforward(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # example-robot-data's wheel holds share/example-robot-data/package.xml, but nothing puts it on
    # AMENT_PREFIX_PATH: a package:// name would not resolve (issue 21, finding 3).
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    urdf = example_robot_file("panda.urdf")
    joints = [f"panda_joint{k}" for k in range(1, 8)]
    robot = load_robot(urdf, joints)
    time = np.arange(1000) / 100.0
    q, dq, ddq = random_fourier_trajectory(robot, margin=0.2, velocity_fraction=0.5, seed=1).evaluate(time)
    drive = DriveParameters.create(7, viscous=[0.1] * 7, coulomb=[0.5] * 7)
    torques = inverse_dynamics(robot, DriveChain.create(7), drive, q, dq, ddq)
    data = tmp_path / "panda.csv"
    write_recording_csv(data, recording_from_arrays(time, joints, q, velocity=dq, effort=torques))
    config = tmp_path / "panda.yaml"
    config.write_text(yaml.safe_dump({"/**": {"ros__parameters": {"joints": joints}}}), encoding="utf-8")
    params = tmp_path / "params.yaml"
    # The unconstrained estimate: how the file names its URDF does not depend on it, and it is quicker.
    argv = ["--urdf", urdf, "--data", data, "--config", config, "--out", params, "--no-consistency"]
    assert dynid("identify", *argv).code == 0

    predicted = dynid("predict", "--params", params, "--data", data, "--out", tmp_path / "predicted.csv")
    model = FeedforwardModel.from_yaml(params)

    assert predicted.code == 0, predicted.err
    name = load_parameters(params).urdf
    # A path that leads back to the file from the parameter file's folder (relative when the two share a folder).
    assert not name.startswith("package://") and (params.parent / name).resolve() == Path(urdf).resolve(), name
    assert_allclose(model.torques(q[500], dq[500], ddq[500]), torques[500], rtol=0.02, atol=0.05)


def test_predict_urdf_reads_a_file_whose_urdf_name_does_not_resolve_here(
    identified: Identified, tmp_path: Path
) -> None:
    expected = tmp_path / "expected.csv"
    argv = ["predict", "--data", identified.held_out]
    assert dynid(*argv, "--params", identified.params, "--out", expected).code == 0
    document = yaml.safe_load(identified.params.read_text(encoding="utf-8"))
    document["robot"]["urdf"] = "package://robot_pc_description/urdf/arm.urdf"  # identified on another machine
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    refused = dynid(*argv, "--params", params, "--out", tmp_path / "refused.csv")
    assert refused.code == 2 and "package 'robot_pc_description' has no such file" in refused.err

    out = tmp_path / "predicted.csv"
    run = dynid(*argv, "--params", params, "--urdf", ARM6_URDF, "--out", out)

    assert run.code == 0, run.err
    assert out.read_bytes() == expected.read_bytes()


def test_predict_urdf_of_other_content_is_refused_naming_both_hashes(identified: Identified, tmp_path: Path) -> None:
    other = tmp_path / "arm.urdf"
    other.write_text(ARM6_URDF.read_text(encoding="utf-8").replace("</robot>", "<!-- edited --></robot>"), "utf-8")

    argv = ["--params", identified.params, "--urdf", other, "--data", identified.held_out, "--out", tmp_path / "x"]
    run = dynid("predict", *argv)

    assert run.code == 2 and run.out == ""
    (line,) = run.err.splitlines()
    assert line.startswith(f"dynid predict: error: the URDF {other} is not the one {identified.params}")
    assert hashlib.sha256(other.read_bytes()).hexdigest()[:16] in line
    assert hashlib.sha256(ARM6_URDF.read_bytes()).hexdigest()[:16] in line


# --- standard parameters and --urdf-out -------------------------------------------------------------------


def _standard_inertial(params: Path) -> np.ndarray:
    links = load_parameters(params).standard_parameters["links"]
    return np.array([[link["m_kg"], *link["mc_kg_m"], *link["inertia_kg_m2"].values()] for link in links])


def test_standard_parameters_are_physically_consistent_links_with_units(identified: Identified) -> None:
    section = load_parameters(identified.params).standard_parameters
    assert section["source"] == "consistent" and section["physically_consistent"] is True
    link = section["links"][0]
    assert list(link) == ["joint", "link", "m_kg", "mc_kg_m", "com_m", "inertia_kg_m2", "drive"]
    assert list(link["inertia_kg_m2"]) == ["xx", "xy", "yy", "xz", "yz", "zz"]  # Pinocchio order
    assert list(link["drive"]) == ["Ia_kg_m2", "Fv_N_m_s_per_rad", "Fc_N_m", "off_N_m"]
    assert_allclose(link["com_m"], np.array(link["mc_kg_m"]) / link["m_kg"], rtol=1e-12)
    inertial = _standard_inertial(identified.params)
    assert is_physically_consistent(inertial.ravel(), len(inertial), DriveTerms(False, False, False, False))


def test_urdf_out_reloaded_in_pinocchio_reproduces_the_rigid_body_torques_of_the_yaml(identified: Identified) -> None:
    joints = load_parameters(identified.params).joints
    exported = load_robot(identified.urdf, joints).model
    original = load_robot(ARM6_URDF, joints).model
    phi = _standard_inertial(identified.params).ravel()
    rng = np.random.default_rng(7)
    data_exported, data_original = exported.createData(), original.createData()
    for _ in range(20):
        q, dq, ddq = rng.uniform(-2.0, 2.0, 6), rng.uniform(-3.0, 3.0, 6), rng.uniform(-10.0, 10.0, 6)
        regressor = pin.computeJointTorqueRegressor(original, data_original, q, dq, ddq)
        assert_allclose(pin.rnea(exported, data_exported, q, dq, ddq), regressor @ phi, rtol=0.0, atol=1e-9)


def test_the_output_and_urdf_out_show_each_body_against_the_urdf_s_with_what_determines_it(
    identified: Identified,
) -> None:
    """Issue 25 item 2: per body mass, centre of mass and principal moments, identified against the URDF, with what
    the data determine marked."""
    robot = load_robot(ARM6_URDF)
    lines = identified.run.out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("identified bodies against the URDF"))
    bodies = lines[start + 1 : start + 1 + robot.n_joints]
    for joint, line in zip(robot.joint_names, bodies, strict=True):
        assert re.fullmatch(
            rf"  {joint}: mass \S+ kg \(URDF \S+; (data|URDF|data \+ URDF)\), centre of mass \(.*\) m \(URDF \(.*\);"
            r" (data|URDF|data \+ URDF)\), principal moments \(.*\) kg·m² \(URDF \(.*\); (data|URDF|data \+ URDF)\)"
            r"(; held at the physical-consistency bound \(.*\))?",
            line,
        ), line
    comments = re.findall(r"<!-- identified by dynamic_identification: (.*?) -->", identified.urdf.read_text())
    assert comments == [line.split(": ", 1)[1] for line in bodies]


def test_urdf_out_carries_the_identified_friction(identified: Identified) -> None:
    links = load_parameters(identified.params).standard_parameters["links"]
    root = ElementTree.parse(identified.urdf).getroot()
    for link in links:
        dynamics = root.find(f"joint[@name='{link['joint']}']/dynamics")
        assert dynamics is not None
        assert float(dynamics.get("damping", "nan")) == link["drive"]["Fv_N_m_s_per_rad"]  # identity coupling
        assert float(dynamics.get("friction", "nan")) == link["drive"]["Fc_N_m"]


# --- held-out validation and the report -------------------------------------------------------------------


def test_each_validate_file_is_judged_into_quality_validation(identified: Identified) -> None:
    quality = load_parameters(identified.params).quality
    first, second = quality["validation"]
    assert first["file"] == str(identified.held_out) and second["file"] == f"{identified.held_out} #2"
    # Every row, the filter's ends extrapolated (before: 10 000 less 2 × 4 rate / cut-off rows of transient).
    assert first["samples"] == 10_000 and first["predicted"] == 10_000
    training, held_out = quality["joint_relative_errors"], first["joint_relative_errors"]
    for joint, error in held_out.items():
        # The held-out equations are filtered like the training ones: same scale, a little worse.
        assert 0.5 * training[joint] < error < min(3.0 * training[joint], 0.05), joint
        assert error < first["recorded_joint_relative_errors"][joint]  # the raw currents carry their noise
    assert f"validation {identified.held_out}: e*_j [%] on its equations" in identified.run.out


def test_the_validation_line_counts_the_joint_samples_its_figures_are_over(identified: Identified) -> None:
    """Against the recorded torques the figures leave out the joint samples at rest (``signal.min_speed_rad_s``):
    the line said "at 10000 of 10000 rows" for them."""
    first = load_parameters(identified.params).quality["validation"][0]
    assert 0 < first["moving"] < 6 * first["predicted"]
    prefix = f"validation {identified.held_out}:"
    line = next(line for line in identified.run.out.splitlines() if line.startswith(prefix))
    assert (
        f"against the recorded torques where the joint moves ({first['moving']} of 60000 joint samples of the"
        " 10000 of 10000 rows predicted): e*_j [%]"
    ) in line


def test_the_cost_of_physical_consistency_is_the_relative_torque_error_before_and_after_on_every_data_set(
    identified: Identified,
) -> None:
    """Issue 25 finding 3: one measure, the relative torque error of the unconstrained and of the consistent model,
    on the training equations and on each held-out file, in the file and the output (it was a +43.8 % growth of
    the weighted residual beside 0.01781 against 0.01724)."""
    quality = load_parameters(identified.params).quality
    physical = quality["physical_consistency"]
    training, *held_out = physical["cost"]
    assert training["data"] == "training"
    assert training["relative_error"] == physical["relative_error"]
    assert training["relative_error_unconstrained"] == physical["relative_error_unconstrained"]
    assert [entry["data"] for entry in held_out] == [entry["file"] for entry in quality["validation"]]
    for entry, validation in zip(held_out, quality["validation"], strict=True):
        assert entry["relative_error"] == validation["recorded_relative_error"]
    for entry in physical["cost"]:
        assert entry["ratio"] == pytest.approx(entry["relative_error"] / entry["relative_error_unconstrained"])
        assert 0.99 < entry["ratio"] < 1.2  # consistent data: the constraint costs nothing a user would notice
    line = next(line for line in identified.run.out.splitlines() if line.startswith("cost of physical consistency"))
    assert f"{held_out[0]['data']} {held_out[0]['relative_error_unconstrained']:.4g} ->" in line


def test_report_is_a_self_contained_page_with_its_figures(identified: Identified) -> None:
    page = identified.report / "index.html"
    text = page.read_text(encoding="utf-8")
    figures = ["torques_1.png", "torques_2.png", "torques_3.png", "spectra.png", "coverage.png"]
    for name in figures:
        assert (identified.report / name).stat().st_size > 10_000, name
        assert f'src="{name}"' in text
    assert f"validation: {identified.held_out}" in text and "training: " in text
    assert "http://" not in text.replace("http://www.w3.org", "") and "https://" not in text
    assert f"report written to {page}" in identified.run.out


def test_the_report_gives_a_held_out_file_the_figures_of_its_validation_entry(identified: Identified) -> None:
    """The report counted the joint samples at rest by the recorded (here: differentiated) velocity, the file by the
    filtered speed: 4.92 % in the report against 0.05422 in the file and the output for one recording."""
    entry = load_parameters(identified.params).quality["validation"][0]
    text = (identified.report / "index.html").read_text(encoding="utf-8")
    headline = re.search(
        rf"<dt>torque error ‖τ − τ̂‖/‖τ‖, validation: {re.escape(str(identified.held_out))}</dt>"
        r"<dd><strong>([\d.]+) %</strong>",
        text,
    )
    assert headline is not None
    assert headline.group(1) == f"{100 * entry['recorded_relative_error']:.3g}"
    counted, relative = [], []
    for joint in load_parameters(identified.params).joints:
        row = re.search(rf"<tr><td>{joint}</td>(.*?)</tr>", text)
        assert row is not None, joint
        cells = re.findall(r'<td class="num">([^<]*)</td>', row.group(1))
        # identification e_j, e*_j; per data set (training first): samples, RMS, e_j, e*_j, the URDF's e*_j.
        counted.append(int(cells[2 + 5]))
        relative.append(cells[2 + 5 + 3])
    assert sum(counted) == entry["moving"]
    assert relative == [f"{100 * e:.3g} %" for e in entry["recorded_joint_relative_errors"].values()]


def test_the_report_scores_the_urdf_s_own_model_beside_the_identified_one(identified: Identified) -> None:
    """Issue 25 finding 4: the model the user had without us is the baseline of every data set."""
    text = (identified.report / "index.html").read_text(encoding="utf-8")
    headline = re.findall(r"<strong>([\d.]+) %</strong> \(the URDF(?:'|&#x27;)s model: ([\d.]+) %\)", text)
    assert len(headline) == 3  # training and the two held-out files
    for ours, urdf in headline:
        assert float(ours) < float(urdf)  # the shipped URDF has no friction: identification beats it
    assert "e*_j of the URDF&#x27;s model" in text or "e*_j of the URDF's model" in text


# --- warnings, in the output and in the file ----------------------------------------------------------------


def _identify(folder: Path, data: Path, name: str, *extra: str | Path) -> tuple[Run, dict[str, object]]:
    out = folder / f"{name}.yaml"
    run = dynid("identify", "--urdf", ARM6_URDF, "--data", data, "--out", out, *extra)
    assert run.code == 0, run.err
    return run, load_parameters(out).quality


def _warned(run: Run, quality: dict[str, object], needle: str) -> None:
    warnings = quality["warnings"]
    assert isinstance(warnings, list)
    assert any(needle in warning for warning in warnings), warnings
    assert any(line.startswith("warning: ") and needle in line for line in run.out.splitlines()), run.out


def test_a_recording_that_leaves_parameters_unexcited_is_warned_about(
    identified: Identified, folder: Path, tmp_path: Path
) -> None:
    training = identified.training
    held = training.position.copy()
    held[:, 5] = 0.3  # the wrist's last joint never moves
    data = tmp_path / "held.csv"
    write_recording_csv(
        data,
        recording_from_arrays(
            time=training.time, joint_names=training.joint_names, position=held, current=training.current
        ),
    )
    run, quality = _identify(tmp_path, data, "held", "--config", ARM6_CONFIG)
    _warned(run, quality, "unexcited: ")
    _warned(run, quality, "joint_6 had no usable equation")


def test_a_recording_too_short_to_tell_the_parameters_apart_is_warned_about(
    identified: Identified, tmp_path: Path
) -> None:
    # An independent simulator's first 2 s: condition number 3983, held-out torques 15-20 % off, and no warning.
    data = tmp_path / "short.csv"
    write_recording_csv(data, identified.training.rows(slice(0, 2_000)))
    run, quality = _identify(tmp_path, data, "short", "--config", ARM6_CONFIG)
    _warned(run, quality, "too little to tell them apart")
    assert not any("condition number" in w for w in load_parameters(identified.params).quality["warnings"])


def test_a_joint_the_model_cannot_predict_is_warned_about_in_the_file_the_output_and_the_report(
    identified: Identified, tmp_path: Path
) -> None:
    # Issue 21 finding 7: a joint with 94 % training error, and quality.warnings was [].
    training = identified.training.rows(slice(0, 8_000))
    current = training.current.copy()
    current[:, 5] += 3.0 * np.std(current[:, 5]) * np.random.default_rng(7).standard_normal(training.n_samples)
    data = tmp_path / "noisy_wrist.csv"
    write_recording_csv(
        data,
        recording_from_arrays(
            time=training.time, joint_names=training.joint_names, position=training.position, current=current
        ),
    )

    run, quality = _identify(tmp_path, data, "noisy_wrist", "--config", ARM6_CONFIG, "--report", tmp_path / "report")

    relative = quality["joint_relative_errors"]
    assert isinstance(relative, dict) and relative["joint_6"] > 0.3 > max(relative[f"joint_{k}"] for k in range(1, 6))
    needle = f"joint_6: e*_j = {relative['joint_6']:.3g}"
    _warned(run, quality, needle)
    assert not any("e*_j = " in warning for warning in quality["warnings"] if needle not in warning)
    assert needle in (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert not any("e*_j = " in warning for warning in load_parameters(identified.params).quality["warnings"])


def test_a_reduction_that_raises_a_joints_error_beyond_e_tol_is_warned_about(
    identified: Identified, folder: Path, tmp_path: Path
) -> None:
    config = config_with(tmp_path / "config.yaml", SIGNAL, {"reduction": "essential", "e_tol": 1e-6})
    run, quality = _identify(tmp_path, folder / "training.csv", "essential", "--config", config)
    _warned(run, quality, "the essential reduction raised its relative error ‖ρ_j‖/‖y_j‖")


def test_identify_output_without_validate_holds_an_empty_validation(
    identified: Identified, folder: Path, tmp_path: Path
) -> None:
    _, quality = _identify(tmp_path, folder / "training.csv", "plain", "--config", identified.config)
    assert quality["validation"] == []
    assert isinstance(quality["physical_consistency"], dict) and "ok" in quality["physical_consistency"]


def test_identify_turns_currents_into_joint_torques_once_and_holds_only_those() -> None:
    robot = load_robot(ARM6_URDF)
    chain = load_config(str(ARM6_CONFIG)).drive_chain(robot.n_joints)
    mechanism = mechanism_of(robot)
    rng = np.random.default_rng(5)
    time = np.arange(50) * 1e-3
    currents = rng.normal(size=(50, robot.n_joints))
    recording = recording_from_arrays(
        time=time, joint_names=robot.joint_names, position=rng.normal(size=currents.shape), current=currents
    )

    converted = with_joint_torques(mechanism, recording, chain)

    assert converted.current is None
    assert_allclose(converted.joint_torques(), chain.joint_torques(currents))
    # Efforts as recorded, or a recording of other joints, stay as they are.
    assert with_joint_torques(mechanism, converted, chain) is converted
    partial = recording.select(robot.joint_names[:3])
    assert with_joint_torques(mechanism, partial, chain) is partial
