"""Payload YAML and drive-gains YAML: exact round trips, one-line errors, files the config reader takes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from numpy.testing import assert_array_equal

from dynamic_identification.core.errors import DataError
from dynamic_identification.core.identification.drive_gains import DriveGainsResult
from dynamic_identification.core.mechanism.payload import Payload, PayloadError, PayloadStd
from dynamic_identification.core.mechanism.robot import DriveChain
from dynamic_identification.io.config import load_config, ros_parameters
from dynamic_identification.io.payload import (
    GAINS_BLOCK,
    dump_payload,
    load_drive_gains_std,
    load_payload,
    parse_payload,
    write_drive_gains_atomic,
    write_payload_atomic,
)

PAYLOAD_TEXT = """\
payload:
  frame: tool0
  mass_kg: 3.5
  com_m: [0.04, -0.02, 0.09]
  inertia_kg_m2: {ixx: 0.014, ixy: -0.003, ixz: -0.0016, iyy: 0.019, iyz: -0.0026, izz: 0.025}
"""


def _payload() -> Payload:
    return Payload.create(
        "tool0",
        mass_kg=3.5 + 1e-13,
        com_m=[0.04, -0.02, 1 / 3 * 0.1],
        inertia_kg_m2={"ixx": 0.014, "ixy": -0.003, "ixz": -0.0016, "iyy": 0.019, "iyz": -0.0026, "izz": 0.025},
        std=PayloadStd(mass_kg=0.001, com_m=np.array([1e-5, 2e-5, 4e-5]), inertia_kg_m2=np.full(6, 1e-4)),
    )


def test_a_payload_reads_back_bit_identical_with_its_std() -> None:
    payload = _payload()
    again = parse_payload(dump_payload(payload, identification={"method": "ml", "residual_std": 0.996}))
    assert again.frame == payload.frame
    assert again.mass_kg == payload.mass_kg
    assert_array_equal(again.com_m, payload.com_m)
    assert_array_equal(again.inertia_kg_m2, payload.inertia_kg_m2)
    assert again.std is not None and payload.std is not None
    assert_array_equal(again.std.inertia_kg_m2, payload.std.inertia_kg_m2)


def test_a_hand_written_payload_without_format_or_std_loads_from_text() -> None:
    payload = load_payload(PAYLOAD_TEXT)
    assert payload.mass_kg == 3.5
    assert payload.inertia_entries()["iyz"] == -0.0026
    assert payload.std is None


def test_a_payload_file_is_written_atomically_and_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "payload.yaml"
    target.write_text("old")
    target.chmod(0o600)
    write_payload_atomic(target, _payload())
    assert load_payload(target).mass_kg == _payload().mass_kg
    assert target.stat().st_mode & 0o777 == 0o600
    assert [path.name for path in tmp_path.iterdir()] == ["payload.yaml"]


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        (PAYLOAD_TEXT.replace("  mass_kg: 3.5\n", ""), DataError, r"misses the key 'payload\.mass_kg'"),
        (PAYLOAD_TEXT.replace("iyz: -0.0026, ", ""), DataError, r"misses the key 'payload\.inertia_kg_m2\.iyz'"),
        (PAYLOAD_TEXT.replace("frame: tool0", "frame: tool0\n  colour: red"), DataError, r"unknown keys \['colour'\]"),
        (PAYLOAD_TEXT.replace("izz: 0.025", "izz: -0.025"), PayloadError, "not positive definite"),
        (PAYLOAD_TEXT.replace("izz: 0.025", "izz: 0.05"), PayloadError, "triangle inequality"),
        (PAYLOAD_TEXT.replace("mass_kg: 3.5", "mass_kg: heavy"), DataError, "must be a number"),
        ("payload: [1, 2]\n", DataError, "must be a mapping"),
    ],
)
def test_a_bad_payload_file_is_a_one_line_error_naming_its_source(
    tmp_path: Path, text: str, error: type[Exception], message: str
) -> None:
    path = tmp_path / "known.yaml"
    path.write_text(text)
    with pytest.raises(error, match=message) as raised:
        load_payload(path)
    assert str(path) in str(raised.value)
    assert "\n" not in str(raised.value)


def _gains_result() -> DriveGainsResult:
    gains = np.array([0.4862, 0.4185, 0.42, 0.315, 0.33, 0.285])
    return DriveGainsResult(
        drive_gains=gains,
        drive_gains_std=gains * 2e-4,
        nominal_drive_gains=np.array([0.45, 0.45, 0.4, 0.35, 0.3, 0.3]),
        names=("ZZ1R",),
        values=np.array([1.0]),
        std=np.array([0.01]),
        expressions=("ZZ1 + Ia1",),
        removed=(),
        residual_std=1.0,
        joint_std=np.ones((2, 6)),
        relative_error=0.0027,
        condition_number=32.3,
        smallest_singular_value=0.5,
        samples=(1614, 1614),
    )


def _chain() -> DriveChain:
    coupling = np.eye(6)
    coupling[5, 4] = 1.0
    return DriveChain.create(
        6, gear_ratios=[100.0, 100.0, 80.0, 60.0, 60.0, 50.0], drive_gains=np.ones(6), coupling=coupling
    )


JOINTS = tuple(f"joint_{i}" for i in range(1, 7))


def test_a_gains_file_is_a_configuration_with_the_identified_drive_chain(tmp_path: Path) -> None:
    path = tmp_path / "gains.yaml"
    write_drive_gains_atomic(path, _gains_result(), _chain(), JOINTS)
    config = load_config(path)
    chain = config.drive_chain(6)
    assert_array_equal(chain.drive_gains, _gains_result().drive_gains)
    assert_array_equal(chain.coupling, _chain().coupling)
    assert config.joints == JOINTS


def test_the_gains_std_block_is_seen_by_no_node(tmp_path: Path) -> None:
    path = tmp_path / "gains.yaml"
    write_drive_gains_atomic(path, _gains_result(), _chain(), JOINTS)
    for node in ("estimator", "recorder", "sim_robot", "feedforward"):
        assert not any(key.startswith(("drive_gains_std", "quality")) for key in ros_parameters(path, node))
    assert GAINS_BLOCK in yaml.safe_load(path.read_text())
    gains, std = load_drive_gains_std(path)
    assert_array_equal(std, _gains_result().drive_gains_std)
    assert_array_equal(gains, _gains_result().drive_gains)
