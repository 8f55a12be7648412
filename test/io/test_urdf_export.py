"""URDF export: the written URDF, reloaded, reproduces the identified rigid-body torques."""

from __future__ import annotations

import re
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_allclose

from dynamic_identification.core.errors import ModelError
from dynamic_identification.core.estimation import NormalEquations
from dynamic_identification.core.estimation.consistency import consistent_estimate
from dynamic_identification.core.mechanism.robot import (
    DriveChain,
    DriveParameters,
    DriveTerms,
    RobotModel,
    load_robot,
    standard_parameters,
)
from dynamic_identification.core.regressors.idim import base_parameters, observation_matrix, random_motion
from dynamic_identification.io.urdf_export import attached_inertias, export_urdf, write_urdf

TERMS = DriveTerms()
RIGID = DriveTerms(False, False, False, False)
PANDA_ARM = tuple(f"panda_joint{i}" for i in range(1, 8))


def _identified(robot: RobotModel, *, seed: int, change: float) -> np.ndarray:
    """Consistent standard parameters: the URDF's bodies with mass, COM, inertia changed by up to ``change``."""
    rng = np.random.default_rng(seed)
    drive = DriveParameters.create(
        robot.n_joints,
        rotor_inertia=rng.uniform(0.01, 0.5, robot.n_joints),
        viscous=rng.uniform(0.5, 7.0, robot.n_joints),
        coulomb=rng.uniform(0.5, 7.0, robot.n_joints),
        offset=rng.normal(size=robot.n_joints),
    )
    blocks = standard_parameters(robot, TERMS, drive).reshape(robot.n_joints, TERMS.per_joint)
    for block in blocks:
        inertia = pin.Inertia.FromDynamicParameters(block[:10])
        turn = pin.rpy.rpyToMatrix(*(change * rng.normal(size=3)))
        block[:10] = pin.Inertia(
            inertia.mass * (1.0 + change * rng.uniform(-1.0, 1.0)),
            inertia.lever + 0.1 * change * rng.normal(size=3),
            turn @ inertia.inertia @ turn.T * (1.0 + change * rng.uniform(-1.0, 1.0)),
        ).toDynamicParameters()
    return blocks.ravel()


def _rigid_torques(robot: RobotModel, standard: np.ndarray, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray):
    """Torques of the identified inertial parameters through the regressor's inertial columns."""
    inertial = standard.reshape(robot.n_joints, -1)[:, :10].ravel()
    return observation_matrix(robot, DriveChain.create(robot.n_joints), RIGID, q, dq, ddq) @ inertial


def _rnea(robot: RobotModel, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
    data = robot.model.createData()
    configurations = robot.configurations(q)
    return np.array([pin.rnea(robot.model, data, configurations[k], dq[k], ddq[k]) for k in range(q.shape[0])])


def _round_trip_error(robot: RobotModel, standard: np.ndarray, out: Path, seed: int) -> float:
    write_urdf(out, robot, standard, TERMS)
    reloaded = load_robot(out, robot.joint_names)
    q, dq, ddq = random_motion(robot, 100, np.random.default_rng(seed))
    return float(np.abs(_rnea(reloaded, q, dq, ddq) - _rigid_torques(robot, standard, q, dq, ddq)).max())


@pytest.mark.parametrize("change", [0.05, 0.3], ids=["near-urdf", "far-from-urdf"])
def test_reloaded_arm_reproduces_the_identified_torques(arm6_urdf: Path, tmp_path: Path, change: float) -> None:
    robot = load_robot(arm6_urdf)
    assert _round_trip_error(robot, _identified(robot, seed=1, change=change), tmp_path / "arm.urdf", seed=2) < 1e-9


@pytest.mark.parametrize("change", [0.0, 0.3], ids=["gripper-kept", "gripper-zeroed"])
def test_reloaded_panda_reproduces_the_identified_torques(example_urdf, tmp_path: Path, change: float) -> None:
    """Joint 7's body includes hand and (locked) fingers, whatever scheme the export chose for them."""
    robot = load_robot(example_urdf("panda.urdf"), PANDA_ARM)
    assert _round_trip_error(robot, _identified(robot, seed=3, change=change), tmp_path / "panda.urdf", seed=4) < 1e-9


def test_gripper_keeps_its_urdf_inertia_when_the_wrist_body_allows(example_urdf) -> None:
    robot = load_robot(example_urdf("panda.urdf"), PANDA_ARM)
    export = export_urdf(robot, _identified(robot, seed=5, change=0.02), TERMS)
    assert export.zeroed == ()
    hand = ElementTree.fromstring(export.text).find("link[@name='panda_hand']/inertial/mass")
    assert hand is not None and float(hand.get("value", "nan")) == 0.73


def test_everything_but_inertials_and_dynamics_is_kept_byte_for_byte(example_urdf) -> None:
    robot = load_robot(example_urdf("panda.urdf"), PANDA_ARM)
    source = Path(robot.urdf_path).read_text(encoding="utf-8")
    export = export_urdf(robot, _identified(robot, seed=6, change=0.3), TERMS)

    def strip(text: str) -> str:
        return re.sub(r"<dynamics[^>]*>", "", re.sub(r"<inertial>.*?</inertial>", "", text, flags=re.DOTALL))

    assert strip(export.text) == strip(source)
    assert export.text != source


def test_friction_is_written_per_joint_and_through_the_coupling(arm6_urdf: Path) -> None:
    robot = load_robot(arm6_urdf)
    standard = _identified(robot, seed=7, change=0.05)
    drive = standard.reshape(6, 14)[:, 10:]
    coupling = np.eye(6)
    coupling[5, 4] = 1.0  # wrist coupling of [Gautier2013] eq. (25): motor 6 turns with joints 5 and 6
    export = export_urdf(robot, standard, TERMS, drive_chain=DriveChain.create(6, coupling=coupling))
    joints = {j.get("name"): j.find("dynamics") for j in ElementTree.fromstring(export.text).findall("joint")}
    damping = [float(joints[f"joint_{j}"].get("damping")) for j in range(1, 7)]
    friction = [float(joints[f"joint_{j}"].get("friction")) for j in range(1, 7)]
    viscous, coulomb = drive[:, 1], drive[:, 2]
    assert_allclose(damping[:4], viscous[:4], rtol=1e-15)
    assert_allclose(damping[4], viscous[4] + viscous[5], rtol=1e-15)
    assert_allclose(friction[4], coulomb[4] + coulomb[5], rtol=1e-15)
    assert_allclose(friction[5], coulomb[5], rtol=1e-15)


MINIMAL = """<?xml version="1.0"?>
<robot name="two">
  <link name="base"/>
  <joint name="j1" type="revolute">
    <parent link="base"/>
    <child link="a"/>
    <axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="10" velocity="2"/>
  </joint>
  <link name="a"/>
  <joint name="j2" type="revolute">
    <parent link="a"/>
    <child link="b"/>
    <origin xyz="0.3 0 0"/>
    <axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="2"/>
  </joint>
  <link name="b">
    <inertial>
      <mass value="1"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>
    </inertial>
  </link>
</robot>
"""


def test_a_link_without_inertial_receives_one(tmp_path: Path) -> None:
    source = tmp_path / "two.urdf"
    source.write_text(MINIMAL, encoding="utf-8")
    robot = load_robot(source)
    standard = standard_parameters(robot, TERMS)
    standard[:10] = pin.Inertia(2.0, np.array([0.1, 0.0, 0.05]), np.diag([0.02, 0.03, 0.04])).toDynamicParameters()
    export = export_urdf(robot, standard, TERMS)
    link = ElementTree.fromstring(export.text).find("link[@name='a']")
    assert link is not None and link.find("inertial/mass").get("value") == "2.0"
    assert link.find("inertial/origin").get("xyz") == "0.1 0 0.05"
    assert _round_trip_error(robot, standard, tmp_path / "out.urdf", seed=8) < 1e-9


def test_an_inconsistent_body_is_refused(arm6_urdf: Path) -> None:
    robot = load_robot(arm6_urdf)
    standard = standard_parameters(robot, TERMS)
    standard[2 * 14] = -1.0  # mass of link 3
    with pytest.raises(ModelError, match="joint_3 is not physically consistent"):
        export_urdf(robot, standard, TERMS)


def test_attached_inertias_are_what_the_model_merged_into_each_body(example_urdf) -> None:
    robot = load_robot(example_urdf("panda.urdf"), PANDA_ARM)
    attached = attached_inertias(robot)
    assert_allclose(attached[:6], 0.0, atol=0.0)
    assert_allclose(attached[6, 0], 0.73 + 2 * 0.015, rtol=1e-12)  # hand and two fingers
    link7 = robot.standard_inertial_parameters()[6] - attached[6]
    assert_allclose(link7[0], 0.735522, rtol=1e-12)


def test_estimate_with_attachments_exports_without_zeroing_the_gripper(example_urdf, tmp_path: Path) -> None:
    """The gripper constraint of the estimate keeps the export's difference scheme consistent."""
    robot = load_robot(example_urdf("panda.urdf"), PANDA_ARM)
    chain = DriveChain.create(7)
    base = base_parameters(robot, chain, TERMS)
    truth = _identified(robot, seed=9, change=0.1)
    q, dq, ddq = random_motion(robot, 1000, np.random.default_rng(10))
    rows = observation_matrix(robot, chain, TERMS, q, dq, ddq)
    torques = rows @ truth + np.random.default_rng(11).normal(0.0, 0.5, q.shape)
    equations = NormalEquations.from_rows(base.select(rows), torques)
    nominal = standard_parameters(robot, TERMS)
    result = consistent_estimate(equations, np.full(7, 0.5), base, TERMS, nominal, attached=attached_inertias(robot))
    export = write_urdf(tmp_path / "panda.urdf", robot, result.standard, TERMS)
    assert export.zeroed == ()
    assert _round_trip_error(robot, result.standard, tmp_path / "panda.urdf", seed=12) < 1e-9
