"""One seam for every robot: a serial arm is the mechanism without closures ([Briot2012] eq. (6) with ``J_t = I``)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_allclose

from dynamic_identification.core.errors import ModelError
from dynamic_identification.core.mechanism.closed_loop import ClosedLoopModel, random_motion
from dynamic_identification.core.mechanism.robot import DriveChain, DriveParameters, DriveTerms, RobotModel
from dynamic_identification.core.mechanism.seam import Mechanism, SerialMechanism, TreeMotion, mechanism_of, tree_values
from dynamic_identification.core.regressors import idim as regressors
from dynamic_identification.core.simulation import inverse_dynamics
from five_bar import load_five_bar


@pytest.fixture(scope="module")
def five_bar() -> ClosedLoopModel:
    return load_five_bar()


def _drive(n: int, rng: np.random.Generator) -> DriveParameters:
    return DriveParameters.create(
        n,
        rotor_inertia=rng.uniform(1e-5, 1e-3, n),
        viscous=rng.uniform(1e-4, 1e-2, n),
        coulomb=rng.uniform(1e-3, 1e-1, n),
        offset=rng.uniform(-1e-2, 1e-2, n),
    )


def test_serial_and_closed_loop_robots_are_both_mechanisms(arm6: RobotModel, five_bar: ClosedLoopModel) -> None:
    serial = mechanism_of(arm6)
    assert isinstance(serial, Mechanism) and isinstance(five_bar, Mechanism)
    assert mechanism_of(five_bar) is five_bar
    assert serial.closures == () and serial.passive.size == 0
    assert serial.actuated_joint_names == serial.joint_names == arm6.joint_names


def test_serial_mechanism_idim_is_rnea_plus_drive_torques(arm6: RobotModel) -> None:
    """``W(q, q̇, q̈) χ`` of the serial mechanism equals Pinocchio's RNEA plus the drive chain's torques."""
    rng = np.random.default_rng(3)
    mechanism = SerialMechanism(arm6)
    terms = DriveTerms(rotor_inertia=True, viscous_friction=True, coulomb_friction=True, offset=True)
    chain = DriveChain.create(arm6.n_joints)
    drive = _drive(arm6.n_joints, rng)
    q, dq, ddq = regressors.random_motion(arm6, 20, rng)
    motion = mechanism.complete_motion(q, dq, ddq)
    torques = mechanism.observation_matrix(chain, terms, motion) @ mechanism.standard_parameters(terms, drive)
    data = arm6.model.createData()
    for k in range(q.shape[0]):
        expected = pin.rnea(arm6.model, data, q[k], dq[k], ddq[k])
        expected += drive.rotor_inertia * ddq[k] + drive.viscous * dq[k] + drive.coulomb * np.sign(dq[k]) + drive.offset
        assert_allclose(torques[k], expected, rtol=1e-9, atol=1e-9)
    assert_allclose(motion.jacobians[0], np.eye(arm6.n_joints))


def test_closed_loop_mechanism_idim_is_the_constrained_dynamics(five_bar: ClosedLoopModel) -> None:
    """Through the same seam, the five-bar's ``W χ`` is the actuated torque of the constrained dynamics (Lagrange
    multipliers, Pinocchio's constrained inverse dynamics), drive terms included."""
    rng = np.random.default_rng(4)
    terms = DriveTerms(rotor_inertia=True, viscous_friction=True, coulomb_friction=True, offset=True)
    chain = DriveChain.create(five_bar.n_actuated)
    drive = _drive(five_bar.n_actuated, rng)
    sampled = random_motion(five_bar, 10, rng)
    motion = TreeMotion(q=sampled.q, dq=sampled.dq, ddq=sampled.ddq)
    torques = five_bar.observation_matrix(chain, terms, motion) @ five_bar.standard_parameters(terms, drive)
    expected = inverse_dynamics(five_bar, chain, drive, sampled.q, sampled.dq, sampled.ddq)
    assert_allclose(torques, expected, rtol=1e-7, atol=1e-9)


def test_base_parameters_come_from_the_mechanism(arm6: RobotModel, five_bar: ClosedLoopModel) -> None:
    terms = DriveTerms()
    serial = SerialMechanism(arm6).base_parameters(DriveChain.create(arm6.n_joints), terms)
    assert serial.names == regressors.base_parameters(arm6, DriveChain.create(arm6.n_joints), terms).names
    closed = five_bar.base_parameters(DriveChain.create(2), terms)
    assert len(closed.names) == 17


def test_following_the_loops_to_a_far_pose_closes_them_in_the_reference_assembly_mode(
    arm6: RobotModel, five_bar: ClosedLoopModel
) -> None:
    """0.4 rad from home in steps of WALK_STEP_RAD: the configuration the default completion walks to; a serial
    robot reaches any pose directly."""
    target = five_bar.reference_configuration[five_bar.actuated] + np.array([0.4, -0.4])
    q = five_bar.follow(target, start=five_bar.reference_configuration)
    assert_allclose(q[five_bar.actuated], target, atol=1e-12)
    assert np.max(np.abs(five_bar.residual(q))) < 1e-9
    zeros = np.zeros((1, 2))
    assert_allclose(q, five_bar.complete_motion(target[None], zeros, zeros).q[0], atol=1e-9)
    pose = np.linspace(-0.5, 0.5, arm6.n_joints)
    assert_allclose(SerialMechanism(arm6).follow(pose, start=np.zeros(arm6.n_joints)), pose, rtol=0.0, atol=0.0)


def test_a_per_joint_setting_names_the_controlled_or_the_tree_joints(
    arm6: RobotModel, five_bar: ClosedLoopModel
) -> None:
    default = np.arange(five_bar.n_tree, dtype=float)
    actuated = tree_values(five_bar, "effort_limits", [7.0, 8.0], default)
    assert_allclose(actuated[five_bar.actuated], [7.0, 8.0])
    assert_allclose(actuated[five_bar.passive], default[five_bar.passive])
    with pytest.raises(
        ModelError, match=r"effort_limits must have 2 entries \(actuated joints .*\) or 4 \(tree joints\)"
    ):
        tree_values(five_bar, "effort_limits", [1.0, 2.0, 3.0], default)
    with pytest.raises(ModelError, match=r"effort_limits must have 6 entries \(one per joint\)"):
        tree_values(SerialMechanism(arm6), "effort_limits", [1.0], np.ones(6))
