"""The data choose each kind of drive term: a kind the motion does not need is dropped, saying why in one line."""

from __future__ import annotations

import dataclasses

import numpy as np
import pinocchio as pin
import pytest

from arm6_drives import IDENTIFICATION_DRIVE
from dynamic_identification.core.estimation.consistency import ConsistencySettings, ConsistentEstimator
from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.identification import identify, predict_torques
from dynamic_identification.core.identification.drive_term_choice import (
    DriveTermChoice,
    choose_drive_terms,
    identify_choosing_drive_terms,
    kind_parameters,
    least_squares_values,
)
from dynamic_identification.core.identification.solve import IdentificationResult
from dynamic_identification.core.mechanism.robot import (
    DriveChain,
    DriveParameters,
    DriveTerms,
    RobotModel,
    standard_parameters,
)
from dynamic_identification.core.mechanism.seam import mechanism_of
from dynamic_identification.core.regressors.dynamic_model import DynamicModel

RATE_HZ = 500.0
CURRENT_NOISE_A = 0.02
CHAIN = DriveChain.create(
    6,
    gear_ratios=[100.0, 100.0, 80.0, 60.0, 60.0, 50.0],
    drive_gains=[0.4, 0.4, 0.3, 0.15, 0.1, 0.08],
)
WITHOUT_OFFSETS = dataclasses.replace(IDENTIFICATION_DRIVE, offset=np.zeros(6))


def _torques(robot: RobotModel, drive: DriveParameters, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
    """Pinocchio's RNEA plus the drive terms, N·m."""
    data = robot.model.createData()
    rigid = np.array([pin.rnea(robot.model, data, q[k], dq[k], ddq[k]) for k in range(q.shape[0])])
    return rigid + drive.rotor_inertia * ddq + drive.viscous * dq + drive.coulomb * np.sign(dq) + drive.offset


def _recording(robot: RobotModel, drive: DriveParameters, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """30 s of a Fourier excitation with noisy currents: stamps, positions, measured torques."""
    rng = np.random.default_rng(seed)
    trajectory = random_fourier_trajectory(robot, fundamental_hz=0.1, harmonics=5, seed=seed, margin=0.15)
    time = np.arange(0.0, 30.0, 1.0 / RATE_HZ)
    q, dq, ddq = trajectory.evaluate(time)
    currents = CHAIN.motor_currents(_torques(robot, drive, q, dq, ddq))
    return time, q, CHAIN.joint_torques(currents + rng.normal(0.0, CURRENT_NOISE_A, currents.shape))


def _identified(
    robot: RobotModel, drive: DriveParameters, seed: int
) -> tuple[DriveTerms, IdentificationResult, DriveTermChoice]:
    """The recording identified choosing the drive terms."""
    time, q, torques = _recording(robot, drive, seed)

    def identified(terms: DriveTerms) -> IdentificationResult:
        return identify(DynamicModel.create(robot, CHAIN, terms), time, q, torques)

    return identify_choosing_drive_terms(identified, mechanism_of(robot), DriveTerms())


@pytest.fixture(scope="module")
def without_offsets(arm6: RobotModel) -> tuple[DriveTerms, IdentificationResult, DriveTermChoice]:
    return _identified(arm6, WITHOUT_OFFSETS, seed=3)


def test_drives_without_offsets_are_identified_without_them_and_the_reason_is_one_line(without_offsets) -> None:
    terms, result, choice = without_offsets
    assert choice.dropped == ("off",)
    assert terms == DriveTerms(offset=False) and choice.terms == terms
    assert not any(name.startswith("off") for name in result.names)
    assert "\n" not in choice.reason and choice.reason.startswith("no torque offsets: ")
    assert "(off1, off2, off3, off4, off5, off6)" in choice.reason


def test_the_simpler_model_predicts_a_new_motion_within_one_percent(arm6: RobotModel, without_offsets) -> None:
    terms, result, _ = without_offsets
    other = random_fourier_trajectory(arm6, fundamental_hz=0.1, harmonics=5, seed=99, margin=0.2)
    q, dq, ddq = other.evaluate(np.arange(0.0, 10.0, 1.0 / RATE_HZ))
    exact = _torques(arm6, WITHOUT_OFFSETS, q, dq, ddq)
    predicted = predict_torques(arm6, CHAIN, terms, result.values, q, dq, ddq)
    assert np.linalg.norm(predicted - exact) / np.linalg.norm(exact) < 0.01


def test_drives_with_every_term_keep_every_kind(arm6: RobotModel) -> None:
    terms, result, choice = _identified(arm6, IDENTIFICATION_DRIVE, seed=3)
    assert choice.dropped == () and terms == DriveTerms()
    assert all(test.test is not None and test.test.significant for test in choice.tests)
    assert {f"off{j}" for j in range(1, 7)} <= set(result.names)


def test_rotor_inertias_regrouped_with_link_inertia_are_not_tested(arm6: RobotModel, without_offsets) -> None:
    # On the arm, Ia1 regroups into ZZ1 and Ia2 into YY2: the data determine only Ia3-Ia6 alone.
    _, result, choice = without_offsets
    assert kind_parameters(mechanism_of(arm6), result, "Ia") == ("Ia3", "Ia4", "Ia5", "Ia6")
    (rotor,) = [test for test in choice.tests if test.kind == "Ia"]
    assert rotor.names == ("Ia3", "Ia4", "Ia5", "Ia6") and rotor.test is not None and rotor.test.dof == 4


def test_with_the_consistent_estimate_published_the_test_is_on_the_least_squares_one(arm6: RobotModel) -> None:
    time, q, torques = _recording(arm6, WITHOUT_OFFSETS, seed=3)
    terms = DriveTerms()
    model = DynamicModel.create(arm6, CHAIN, terms)
    consistency = ConsistentEstimator(
        model.base, terms, standard_parameters(arm6, terms), settings=ConsistencySettings()
    )
    consistent = identify(model, time, q, torques, consistency=consistency)
    unconstrained = identify(model, time, q, torques)
    assert consistent.consistency is not None and consistent.consistency.estimate is not None
    assert not np.allclose(consistent.estimate.parameters, unconstrained.estimate.parameters, rtol=1e-6)
    assert np.allclose(least_squares_values(consistent), unconstrained.estimate.parameters, rtol=1e-9, atol=1e-12)
    assert choose_drive_terms(mechanism_of(arm6), terms, consistent).dropped == ("off",)


def test_nothing_offered_is_nothing_chosen(arm6: RobotModel, without_offsets) -> None:
    _, result, _ = without_offsets
    offered = DriveTerms(rotor_inertia=False, viscous_friction=False, coulomb_friction=False, offset=False)
    choice = choose_drive_terms(mechanism_of(arm6), offered, result)
    assert choice.tests == () and choice.terms == offered and "none offered" in choice.reason
