"""Validation by simulation ([DirectDrive2012] §5): forward dynamics of an identified base-parameter model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_allclose

from dynamic_identification.core.errors import ModelError
from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.mechanism.robot import (
    DriveChain,
    DriveParameters,
    DriveTerms,
    load_robot,
    standard_parameters,
)
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.regressors.idim import random_motion
from dynamic_identification.core.simulation import inverse_dynamics
from dynamic_identification.testing.validation import IdentifiedDynamics, PDFeedback, validate_by_simulation

DD3_URDF = Path(__file__).resolve().parents[2] / "urdf" / "dynid_dd3.urdf"
TERMS = DriveTerms(rotor_inertia=True, viscous_friction=True, coulomb_friction=True, offset=True)
RATE_HZ = 500.0


@pytest.fixture(scope="module")
def setup() -> dict:
    robot = load_robot(DD3_URDF)
    chain = DriveChain.create(3)
    drive = DriveParameters.create(
        3, rotor_inertia=[0.02, 0.03, 0.004], viscous=[1.5, 0.8, 0.15], coulomb=[1.2, 1.0, 0.3], offset=[0.1, 0, -0.05]
    )
    dynamic_model = DynamicModel.create(robot, chain, TERMS)
    truth = dynamic_model.base.from_standard(standard_parameters(robot, TERMS, drive))
    time = np.arange(0.0, 1.0, 1.0 / RATE_HZ)
    q, dq, ddq = random_fourier_trajectory(robot, fundamental_hz=0.2, harmonics=4, seed=11).evaluate(time)
    torques = inverse_dynamics(robot, chain, drive, q, dq, ddq)
    return {
        "robot": robot,
        "chain": chain,
        "drive": drive,
        "dynamic_model": dynamic_model,
        "truth": truth,
        "time": time,
        "q": q,
        "dq": dq,
        "ddq": ddq,
        "torques": torques,
    }


def test_identified_model_of_the_true_parameters_is_the_true_model(setup: dict) -> None:
    """M from unit accelerations of the base regressor equals crba (+ rotor inertia); W θ equals rnea + drive."""
    robot, drive = setup["robot"], setup["drive"]
    dynamics = IdentifiedDynamics.create(setup["dynamic_model"], setup["truth"])
    q, dq, ddq = random_motion(robot, 5, np.random.default_rng(0))
    data = robot.model.createData()
    expected = inverse_dynamics(robot, setup["chain"], drive, q, dq, ddq)
    for k in range(5):
        mass = pin.crba(robot.model, data, q[k])
        mass = np.triu(mass) + np.triu(mass, 1).T + np.diag(drive.rotor_inertia)
        assert_allclose(dynamics.mass_matrix(q[k]), mass, atol=1e-12)
        dynamics_sign = IdentifiedDynamics.create(
            setup["dynamic_model"],
            setup["truth"],
            coulomb_smoothing_rad_s=0.0,
        )
        assert_allclose(dynamics_sign.inverse(q[k], dq[k], ddq[k]), expected[k], atol=1e-10)
        assert_allclose(dynamics_sign.forward(q[k], dq[k], expected[k]), ddq[k], atol=1e-9)


def test_true_parameters_reproduce_the_measured_motion_and_perturbed_ones_do_not(setup: dict) -> None:
    dynamic_model, truth = setup["dynamic_model"], setup["truth"]
    args = (setup["time"], setup["q"], setup["torques"])
    true = validate_by_simulation(
        IdentifiedDynamics.create(dynamic_model, truth),
        *args,
        dq0=setup["dq"][0],
    )
    perturbed = validate_by_simulation(
        IdentifiedDynamics.create(dynamic_model, 1.05 * truth),
        *args,
        dq0=setup["dq"][0],
    )
    assert true.success and perturbed.success
    # Open loop for 1 s: the floor is the smoothed Coulomb friction and linear torque interpolation (mrad).
    assert true.error_max.max() < 0.01
    assert perturbed.error_max.max() > 10.0 * true.error_max.max()
    assert_allclose(true.error_norm, np.linalg.norm(true.q_error, axis=0))


def test_pd_on_the_measured_motion_keeps_the_simulation_near_it(setup: dict) -> None:
    dynamic_model, truth = setup["dynamic_model"], setup["truth"]
    feedback = PDFeedback(kp=[400.0, 400.0, 40.0], kd=[40.0, 40.0, 4.0])
    args = (setup["time"], setup["q"], setup["torques"])
    true = validate_by_simulation(
        IdentifiedDynamics.create(dynamic_model, truth),
        *args,
        feedback=feedback,
    )
    perturbed = validate_by_simulation(
        IdentifiedDynamics.create(dynamic_model, 1.05 * truth),
        *args,
        feedback=feedback,
    )
    assert true.error_max.max() < 1e-4
    assert perturbed.error_max.max() > 10.0 * true.error_max.max()


def test_wrong_parameter_count_is_refused(setup: dict) -> None:
    with pytest.raises(ModelError, match="parameters"):
        IdentifiedDynamics.create(setup["dynamic_model"], np.ones(3))
