"""Parameter YAML: exact round trip, key order, validation, atomic write."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from numpy.testing import assert_array_equal

from arm6_drives import ARM6_DRIVE, ARM6_UNCOUPLED_CHAIN
from dynamic_identification import api
from dynamic_identification.core.errors import DataError
from dynamic_identification.core.identification import SignalSettings
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, load_robot
from dynamic_identification.feedforward import FeedforwardModel
from dynamic_identification.io.parameters import (
    FORMAT,
    ParameterEntry,
    ParameterFile,
    dump_parameters,
    identified_torque_model,
    load_parameters,
    parameter_file_mechanism,
    parse_parameters,
    write_parameters_atomic,
)
from true_parameters import true_parameter_file

SHA = "0123456789abcdef" * 4
"""A well-formed SHA-256 for files whose URDF is not read."""


def _parameter_file(stamp: float = 1_700_000_000.123456) -> ParameterFile:
    rng = np.random.default_rng(3)
    names = ["ZZ1R", "XX2R", "MX2R", "Ia1", "Fv1", "Fc2"]
    values = rng.standard_normal(len(names)) * np.array([1.0, 1e-9, 1e12, 1 / 3, 2 / 7, 1e-300])
    std = np.array([0.5, np.inf, np.nan, 12.25, 1 / 3, 3.0])
    return ParameterFile.create(
        urdf="/robots/arm.urdf",
        joints=["shoulder", "elbow"],
        drive_terms=DriveTerms(offset=False),
        drive_chain=DriveChain.create(
            2, gear_ratios=[100.0, 80.0], drive_gains=[0.11, 0.07], coupling=[[1, 0], [1, 1]]
        ),
        names=names,
        values=values,
        std_percent=std,
        expressions=["ZZ1 + YY2 + 0.1 M2", "XX2 - YY2", "MX2", "Ia1", "Fv1", "Fc2"],
        removed=["MY2", "Fv2"],
        quality={
            "condition_number": np.float64(123.456789012345),
            "relative_error": 0.0123,
            "joint_errors": {"shoulder": np.float64(0.1), "elbow": 0.2},
            "joint_relative_errors": {"shoulder": 0.01, "elbow": 0.02},
            "samples": np.int64(12000),
            "window": 30.0,
        },
        stamp=stamp,
        urdf_sha256=SHA,
        settings={
            "signal": {"position_cutoff_hz": 15.0, "gap_factor": 4.0, "rate_hz": None},
            "method": "wls",
            "e_tol": 0.05,
        },
        standard_parameters={"source": "base", "links": [{"joint": "shoulder", "m_kg": np.float64(1.5)}]},
    )


def test_round_trip_values_are_bit_identical() -> None:
    original = _parameter_file()
    loaded = load_parameters(dump_parameters(original))
    assert loaded == original
    assert_array_equal(list(loaded.values().values()), list(original.values().values()))
    assert loaded.stamp == original.stamp


def test_std_percent_null_for_unknown_and_inf_for_unidentifiable() -> None:
    text = dump_parameters(_parameter_file())
    document = yaml.safe_load(text)
    stds = [entry["std_percent"] for entry in document["parameters"]]
    assert stds[1] == math.inf and ".inf" in text
    assert stds[2] is None


def test_top_level_keys_in_contract_order() -> None:
    document = yaml.safe_load(dump_parameters(_parameter_file()))
    assert list(document) == [
        "format",
        "robot",
        "model",
        "parameters",
        "removed",
        "quality",
        "stamp",
        "settings",
        "standard_parameters",
    ]
    assert document["format"] == FORMAT
    assert document["robot"] == {"urdf": "/robots/arm.urdf", "urdf_sha256": SHA, "joints": ["shoulder", "elbow"]}
    assert list(document["parameters"][0]) == ["name", "value", "std_percent", "expression"]
    assert document["quality"]["samples"] == 12000


def test_drive_terms_and_chain_are_restored() -> None:
    loaded = load_parameters(dump_parameters(_parameter_file()))
    assert loaded.drive_terms() == DriveTerms(offset=False)
    chain = loaded.drive_chain()
    assert_array_equal(chain.gear_ratios, [100.0, 80.0])
    assert_array_equal(chain.drive_gains, [0.11, 0.07])
    assert_array_equal(chain.coupling, [[1.0, 0.0], [1.0, 1.0]])


def test_missing_drive_chain_means_direct_drive() -> None:
    document = yaml.safe_load(dump_parameters(_parameter_file()))
    del document["model"]["drive_chain"]
    chain = parse_parameters(yaml.safe_dump(document)).drive_chain()
    assert_array_equal(chain.transmission, np.eye(2))


def test_atomic_write_replaces_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    path = tmp_path / "params.yaml"
    write_parameters_atomic(path, _parameter_file(stamp=1.0))
    write_parameters_atomic(path, _parameter_file(stamp=2.0))
    assert [p.name for p in tmp_path.iterdir()] == ["params.yaml"]
    assert load_parameters(path).stamp == 2.0
    assert load_parameters(str(path)) == _parameter_file(stamp=2.0)


def test_identified_joints_leave_out_those_without_equations() -> None:
    document = _parameter_file()
    assert document.identified_joints() == ("shoulder", "elbow")
    quality = {**document.quality, "joint_relative_errors": {"shoulder": 0.01, "elbow": None}}
    without_elbow = parse_parameters(dump_parameters(ParameterFile(**{**document.__dict__, "quality": quality})))
    assert without_elbow.identified_joints() == ("shoulder",)
    no_quality = ParameterFile(**{**document.__dict__, "quality": {}})
    assert no_quality.identified_joints() == ("shoulder", "elbow")


def test_load_rejects_a_wrong_format_key() -> None:
    text = dump_parameters(_parameter_file()).replace(FORMAT, "dynamic_identification/parameters/v0")
    with pytest.raises(DataError, match="format 'dynamic_identification/parameters/v0', expected .*v1"):
        load_parameters(text)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (("format",), "misses the key 'format'"),
        (("robot",), "misses the key 'robot'"),
        (("robot", "joints"), "misses the key 'robot.joints'"),
        (("model", "drive_terms"), "misses the key 'model.drive_terms'"),
        (("parameters",), "misses the key 'parameters'"),
    ],
)
def test_load_names_a_missing_key(path: tuple[str, ...], message: str) -> None:
    document = yaml.safe_load(dump_parameters(_parameter_file()))
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    with pytest.raises(DataError, match=message):
        parse_parameters(yaml.safe_dump(document))


def test_load_names_a_parameter_without_value() -> None:
    document = yaml.safe_load(dump_parameters(_parameter_file()))
    del document["parameters"][1]["value"]
    with pytest.raises(DataError, match=r"misses the key 'parameters\[1\].value'"):
        parse_parameters(yaml.safe_dump(document))


def test_load_missing_file_and_invalid_yaml(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="parameter file not found: .*absent.yaml"):
        load_parameters(tmp_path / "absent.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("format: [unclosed\n")
    with pytest.raises(DataError, match="bad.yaml is not valid YAML"):
        load_parameters(bad)


def test_entry_rejects_non_finite_value() -> None:
    with pytest.raises(DataError, match="value of parameter ZZ1 must be finite"):
        ParameterEntry(name="ZZ1", value=float("nan"), std_percent=None, expression="ZZ1")


def test_drive_terms_must_be_booleans() -> None:
    document = yaml.safe_load(dump_parameters(_parameter_file()))
    document["model"]["drive_terms"]["offset"] = "no"
    with pytest.raises(DataError, match="model.drive_terms.offset must be true or false, got 'no'"):
        parse_parameters(yaml.safe_dump(document))


def test_stored_signal_settings_are_read_with_defaults_for_the_fields_a_file_lacks() -> None:
    signal = load_parameters(dump_parameters(_parameter_file())).signal_settings()
    assert signal == SignalSettings(position_cutoff_hz=15.0, gap_factor=4.0, rate_hz=None)


def test_a_file_without_settings_hash_or_standard_parameters_still_loads() -> None:
    """Files written before these keys existed: no settings (predict uses the defaults), no hash check."""
    document = yaml.safe_load(dump_parameters(_parameter_file()))
    for key in ("settings", "standard_parameters"):
        del document[key]
    del document["robot"]["urdf_sha256"]
    old = parse_parameters(yaml.safe_dump(document))
    assert old.signal_settings() is None
    assert old.urdf_sha256 is None and old.standard_parameters == {}


def test_an_unknown_signal_setting_is_refused_by_name() -> None:
    document = yaml.safe_load(dump_parameters(_parameter_file()))
    document["settings"]["signal"]["cutoff_hz"] = 20.0
    with pytest.raises(DataError, match=r"settings.signal has keys \['cutoff_hz'\] that this version does not know"):
        parse_parameters(yaml.safe_dump(document))


def test_a_malformed_urdf_hash_is_refused() -> None:
    document = yaml.safe_load(dump_parameters(_parameter_file()))
    document["robot"]["urdf_sha256"] = "abc"
    with pytest.raises(DataError, match="robot.urdf_sha256 must be 64 lower-case hex digits"):
        parse_parameters(yaml.safe_dump(document))


def _with_urdf(tmp_path: Path) -> tuple[ParameterFile, Path]:
    urdf = tmp_path / "robots" / "arm.urdf"
    urdf.parent.mkdir()
    urdf.write_text("<robot name='arm'/>\n", encoding="utf-8")
    document = replace(_parameter_file(), urdf=str(urdf), urdf_sha256=hashlib.sha256(urdf.read_bytes()).hexdigest())
    return document, urdf


def test_a_written_file_names_its_urdf_relative_to_itself_and_moves_with_it(tmp_path: Path) -> None:
    document, urdf = _with_urdf(tmp_path)
    path = tmp_path / "results" / "params.yaml"
    path.parent.mkdir()
    write_parameters_atomic(path, document)
    assert yaml.safe_load(path.read_text(encoding="utf-8"))["robot"]["urdf"] == "../robots/arm.urdf"
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    for folder in ("robots", "results"):
        (tmp_path / folder).rename(moved / folder)
    assert load_parameters(moved / "results" / "params.yaml").urdf_path() == (moved / "robots" / "arm.urdf").resolve()


def test_a_changed_urdf_is_refused_naming_both_hashes(tmp_path: Path) -> None:
    document, urdf = _with_urdf(tmp_path)
    path = tmp_path / "params.yaml"
    write_parameters_atomic(path, document)
    urdf.write_text("<robot name='arm'><link name='extra'/></robot>\n", encoding="utf-8")
    now = hashlib.sha256(urdf.read_bytes()).hexdigest()
    with pytest.raises(DataError) as refused:
        load_parameters(path).urdf_path()
    message = str(refused.value)
    assert "\n" not in message and "changed since" in message
    assert now[:16] in message and document.urdf_sha256 is not None and document.urdf_sha256[:16] in message


def test_a_urdf_given_instead_of_the_named_one_must_hold_the_identified_content(tmp_path: Path) -> None:
    document, urdf = _with_urdf(tmp_path)
    elsewhere = tmp_path / "controller" / "arm.urdf"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(urdf.read_bytes())
    assert document.urdf_path(elsewhere) == elsewhere.resolve()
    elsewhere.write_text("<robot name='arm'><link name='camera_mount'/></robot>\n", encoding="utf-8")
    with pytest.raises(DataError) as refused:
        document.urdf_path(elsewhere)
    message = str(refused.value)
    assert "\n" not in message and str(elsewhere.resolve()) in message
    assert hashlib.sha256(elsewhere.read_bytes()).hexdigest()[:16] in message
    with pytest.raises(DataError, match="URDF file not found"):
        document.urdf_path(tmp_path / "missing.urdf")


def _arm6_file(arm6_urdf: Path, *, without: str = "", removed: tuple[str, ...] = ()) -> ParameterFile:
    """The shipped arm's true base parameters as an identified file, ``without`` one of them, ``removed`` listed."""
    complete = true_parameter_file(
        load_robot(arm6_urdf), ARM6_UNCOUPLED_CHAIN, DriveTerms(), ARM6_DRIVE, urdf=arm6_urdf, removed=removed
    )
    return replace(complete, parameters=tuple(entry for entry in complete.parameters if entry.name != without))


def test_a_base_parameter_neither_given_nor_removed_is_refused_naming_it(arm6_urdf: Path) -> None:
    # Fc2 deleted by hand: taken as zero it would take 7.9 N·m of Coulomb friction out of joint 2's torques.
    with pytest.raises(DataError, match=r"leaves out base parameters \['Fc2'\] of its model") as refused:
        parameter_file_mechanism(_arm6_file(arm6_urdf, without="Fc2"))
    assert "\n" not in str(refused.value)


def test_a_base_parameter_the_identification_removed_is_zero_by_right(arm6_urdf: Path) -> None:
    mechanism = parameter_file_mechanism(_arm6_file(arm6_urdf, without="Fc2", removed=("Fc2",)))
    assert mechanism.actuated_joint_names == ("joint_1", "joint_2", "joint_3", "joint_4", "joint_5", "joint_6")


def test_a_misspelt_base_parameter_is_refused_naming_both_names(arm6_urdf: Path) -> None:
    complete = _arm6_file(arm6_urdf)
    misspelt = replace(
        complete,
        parameters=tuple(replace(e, name="Fc22") if e.name == "Fc2" else e for e in complete.parameters),
    )
    with pytest.raises(DataError, match=r"\['Fc22'\] that are not of its model and leaves out .*\['Fc2'\]"):
        parameter_file_mechanism(misspelt)


def _csv(path: Path) -> Path:
    """A short recording of the arm at rest: positions only."""
    joints = [f"joint_{j}" for j in range(1, 7)]
    rows = [",".join(["time", *(f"{joint}/position" for joint in joints)])]
    rows += [",".join([f"{0.004 * k:.3f}", *["0.1"] * 6]) for k in range(50)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _feedforward(path: Path, tmp_path: Path) -> object:
    return FeedforwardModel.from_yaml(path)


def _feedforward_of_a_robot_model(path: Path, tmp_path: Path) -> object:
    # The feedforward node's way: the robot model built once, new parameters for it.
    parameters = load_parameters(path)
    complete = parameter_file_mechanism(_arm6_file(parameters.urdf_path()))
    return FeedforwardModel.from_parameters(parameters, robot=complete)


def _predict(path: Path, tmp_path: Path) -> object:
    return api.predict_file(params=path, data=_csv(tmp_path / "rest.csv"), config=None, out=tmp_path / "out.csv")


def _payload(path: Path, tmp_path: Path) -> object:
    data = _csv(tmp_path / "rest.csv")
    return api.payload_file(params=path, data=data, frame="tool0", config=None, out=tmp_path / "payload.yaml")


def _torque_model(path: Path, tmp_path: Path) -> object:
    return identified_torque_model(path, load_robot(load_parameters(path).urdf_path()))


@pytest.mark.parametrize(
    "consumer",
    [_feedforward, _feedforward_of_a_robot_model, _predict, _payload, _torque_model],
    ids=["feedforward", "feedforward-node", "dynid-predict", "dynid-payload", "excitation-torque-check"],
)
def test_every_reader_of_a_file_refuses_one_that_leaves_out_a_base_parameter(
    arm6_urdf: Path, tmp_path: Path, consumer: Callable[[Path, Path], object]
) -> None:
    path = tmp_path / "params.yaml"
    write_parameters_atomic(path, _arm6_file(arm6_urdf, without="Fc2"))
    with pytest.raises(DataError, match=r"leaves out base parameters \['Fc2'\]"):
        consumer(path, tmp_path)
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "payload.yaml").exists()
