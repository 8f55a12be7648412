"""Parameter YAML: exact round trip, key order, validation, atomic write."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from numpy.testing import assert_array_equal

from dynamic_identification.core.errors import DataError
from dynamic_identification.core.model import DriveChain, DriveTerms
from dynamic_identification.io.parameters import (
    FORMAT,
    ParameterEntry,
    ParameterFile,
    dump_parameters,
    load_parameters,
    parse_parameters,
    write_parameters_atomic,
)


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
    assert list(document) == ["format", "robot", "model", "parameters", "removed", "quality", "stamp"]
    assert document["format"] == FORMAT
    assert document["robot"] == {"urdf": "/robots/arm.urdf", "joints": ["shoulder", "elbow"]}
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
