"""The IDIM observation matrix and base parameters against Pinocchio's RNEA."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_allclose

from dynamic_identification.core.errors import DataError, ModelError
from dynamic_identification.core.mechanism.robot import (
    DriveChain,
    DriveParameters,
    DriveTerms,
    RobotModel,
    load_robot,
    standard_parameter_names,
    standard_parameters,
)
from dynamic_identification.core.regressors.idim import (
    base_parameters,
    observation_matrix,
    random_motion,
)

PANDA_ARM = tuple(f"panda_joint{i}" for i in range(1, 8))


def _rnea(robot: RobotModel, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
    data = robot.model.createData()
    configurations = robot.configurations(q)
    return np.array([pin.rnea(robot.model, data, configurations[k], dq[k], ddq[k]) for k in range(q.shape[0])])


def _drive(robot: RobotModel, rng: np.random.Generator) -> DriveParameters:
    n = robot.n_joints
    return DriveParameters.create(
        n,
        rotor_inertia=rng.uniform(0.05, 1.0, n),
        viscous=rng.uniform(0.5, 5.0, n),
        coulomb=rng.uniform(0.5, 5.0, n),
        offset=rng.uniform(-1.0, 1.0, n),
    )


@pytest.fixture(params=["ur5", "panda", "arm6", "continuous_pendulum"])
def robot(request: pytest.FixtureRequest, example_urdf, arm6_urdf: Path) -> RobotModel:
    if request.param == "ur5":
        return load_robot(example_urdf("ur5_robot.urdf"))
    if request.param == "panda":
        return load_robot(example_urdf("panda.urdf"), PANDA_ARM)
    if request.param == "continuous_pendulum":
        return load_robot(example_urdf("double_pendulum_continuous.urdf"))
    return load_robot(arm6_urdf)


def test_observation_matrix_times_standard_parameters_equals_rnea_plus_drive_terms(robot: RobotModel) -> None:
    rng = np.random.default_rng(3)
    q, dq, ddq = random_motion(robot, 40, rng)
    drive = _drive(robot, rng)
    chain = DriveChain.create(robot.n_joints, gear_ratios=np.full(robot.n_joints, 80.0))
    terms = DriveTerms()
    expected = _rnea(robot, q, dq, ddq) + drive.rotor_inertia * ddq + drive.viscous * dq
    expected += drive.coulomb * np.sign(dq) + drive.offset
    torques = observation_matrix(robot, chain, terms, q, dq, ddq) @ standard_parameters(robot, terms, drive)
    assert_allclose(torques, expected, rtol=0.0, atol=1e-9)


def test_coupled_wrist_follows_seed_000_eq_26(arm6_urdf: Path) -> None:
    """Motor 6 driving joints 5 and 6 adds Ia6 q̈6 to τ5 and Ia6 q̈5 to τ6 ([Gautier2013] eq. (26))."""
    robot = load_robot(arm6_urdf)
    coupling = np.eye(6)
    coupling[5, 4] = 1.0
    chain = DriveChain.create(6, coupling=coupling)
    terms = DriveTerms(rotor_inertia=True, viscous_friction=True, coulomb_friction=False, offset=False)
    rng = np.random.default_rng(4)
    q, dq, ddq = random_motion(robot, 10, rng)
    ia = rng.uniform(0.1, 1.0, 6)
    fv = rng.uniform(0.1, 1.0, 6)
    drive = DriveParameters.create(6, rotor_inertia=ia, viscous=fv)
    torques = observation_matrix(robot, chain, terms, q, dq, ddq) @ standard_parameters(robot, terms, drive)
    expected = _rnea(robot, q, dq, ddq) + ia * ddq + fv * dq
    expected[:, 4] += ia[5] * (ddq[:, 4] + ddq[:, 5]) + fv[5] * (dq[:, 4] + dq[:, 5])
    expected[:, 5] += ia[5] * ddq[:, 4] + fv[5] * dq[:, 4]
    assert_allclose(torques, expected, rtol=0.0, atol=1e-9)


def test_base_parameters_reproduce_full_model_torques(robot: RobotModel) -> None:
    terms = DriveTerms()
    chain = DriveChain.create(robot.n_joints)
    base = base_parameters(robot, chain, terms)
    rng = np.random.default_rng(5)
    q, dq, ddq = random_motion(robot, 60, rng)
    standard = standard_parameters(robot, terms, _drive(robot, rng))
    full = observation_matrix(robot, chain, terms, q, dq, ddq)
    assert_allclose(base.select(full) @ base.from_standard(standard), full @ standard, rtol=0.0, atol=1e-9)


def test_base_parameter_count_equals_numerical_rank(robot: RobotModel) -> None:
    terms = DriveTerms()
    chain = DriveChain.create(robot.n_joints)
    base = base_parameters(robot, chain, terms)
    q, dq, ddq = random_motion(robot, 300, np.random.default_rng(6))
    stacked = observation_matrix(robot, chain, terms, q, dq, ddq).reshape(-1, len(base.standard_names))
    singular = np.linalg.svd(stacked, compute_uv=False)
    assert base.count == int(np.sum(singular > 1e-9 * singular[0]))
    base_stacked = base.select(stacked)
    assert np.linalg.matrix_rank(base_stacked) == base.count


def test_base_parameter_expressions_name_the_regrouped_standard_parameters(arm6_urdf: Path) -> None:
    robot = load_robot(arm6_urdf)
    base = base_parameters(robot, DriveChain.create(6), DriveTerms())
    expressions = dict(zip(base.names, base.expressions, strict=True))
    assert "Ia1" in expressions["ZZ1"]
    assert all(name.startswith(("ZZ1", "Fv1", "Fc1", "off1")) for name in base.names if name.endswith("1"))
    for row, expression in zip(base.regrouping, base.expressions, strict=True):
        named = {token for token in expression.replace("-", " ").split() if token[0].isalpha()}
        assert named == {base.standard_names[i] for i in np.flatnonzero(row)}


def test_standard_parameter_names_follow_pinocchio_order() -> None:
    names = standard_parameter_names(2, DriveTerms(offset=False))
    assert names[:13] == ("M1", "MX1", "MY1", "MZ1", "XX1", "XY1", "YY1", "XZ1", "YZ1", "ZZ1", "Ia1", "Fv1", "Fc1")
    assert len(names) == 26


def test_panda_fingers_are_locked_and_their_mass_kept(example_urdf) -> None:
    full = pin.buildModelFromUrdf(str(example_urdf("panda.urdf")))
    robot = load_robot(example_urdf("panda.urdf"), PANDA_ARM)
    assert robot.joint_names == PANDA_ARM
    assert_allclose(robot.standard_inertial_parameters()[:, 0].sum(), sum(i.mass for i in full.inertias[1:]))


def test_joint_order_of_the_request_does_not_matter(example_urdf) -> None:
    robot = load_robot(example_urdf("panda.urdf"), tuple(reversed(PANDA_ARM)))
    assert robot.joint_names == PANDA_ARM
    assert list(robot.order_of(tuple(reversed(PANDA_ARM)))) == list(range(6, -1, -1))


def test_continuous_joints_take_angles_and_unwrap(example_urdf) -> None:
    robot = load_robot(example_urdf("double_pendulum_continuous.urdf"))
    assert robot.continuous == (True, True)
    assert robot.model.nq == 4
    angles = np.linspace(0.0, 8.0, 50)[:, None] * np.array([1.0, -1.0])
    wrapped = np.angle(np.exp(1j * angles))
    assert_allclose(robot.unwrap_positions(wrapped), angles, atol=1e-12)
    assert_allclose(robot.configurations(wrapped), robot.configurations(angles), atol=1e-12)


def test_unknown_joint_is_named(example_urdf) -> None:
    with pytest.raises(ModelError, match="elbow_jont"):
        load_robot(example_urdf("ur5_robot.urdf"), ["shoulder_pan_joint", "elbow_jont"])


def test_missing_joint_in_data_is_named(arm6_urdf: Path) -> None:
    robot = load_robot(arm6_urdf)
    with pytest.raises(ModelError, match="joint_6"):
        robot.order_of(["joint_1", "joint_2", "joint_3", "joint_4", "joint_5"])


def test_nan_motion_is_refused_with_the_sample(arm6_urdf: Path) -> None:
    robot = load_robot(arm6_urdf)
    q, dq, ddq = random_motion(robot, 5, np.random.default_rng(0))
    dq[3, 2] = np.nan
    with pytest.raises(DataError, match="dq.*sample 3"):
        observation_matrix(robot, DriveChain.create(6), DriveTerms(), q, dq, ddq)


def test_drive_chain_converts_currents_through_the_coupling() -> None:
    coupling = np.array([[1.0, 0.0], [1.0, 1.0]])
    chain = DriveChain.create(2, gear_ratios=[45.0, 32.0], drive_gains=[0.5, 0.4], coupling=coupling)
    currents = np.array([[1.0, 2.0]])
    motor_torque = np.array([0.5, 0.8])
    expected = np.array([[45.0, 32.0], [0.0, 32.0]]) @ motor_torque  # [Gautier2013] eq. (25)
    assert_allclose(chain.joint_torques(currents)[0], expected)
    assert_allclose(chain.motor_currents(chain.joint_torques(currents)), currents)
