"""[Volkmann2020]'s story on the simulated arm: identify in-process on pick-and-place and square processes.

Sensitivity reduction makes the process data usable (condition number down by far more
than 7×, [Volkmann2020]: 61.7 → 8.46 and 1632 → 2.73) while no joint's relative error grows
by more than ``e_tol``; the reduced model predicts a fresh run of the same process about
as well as a full model identified from an optimised excitation ([Volkmann2020] Tables V-VI).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from arm6_drives import ARM6_DRIVE, ARM6_UNCOUPLED_CHAIN
from dynamic_identification.core.estimation import reduce_parameters
from dynamic_identification.core.estimation.normal_equations import joint_error_std_from_normal_equations
from dynamic_identification.core.excitation import JointLimits, optimise_fourier, sample
from dynamic_identification.core.excitation.plan import plan_excitation
from dynamic_identification.core.excitation.settings import ExcitationSettings
from dynamic_identification.core.excitation.trajectory import interpolate_trajectory
from dynamic_identification.core.identification import (
    IdentificationSettings,
    ReductionSettings,
    identify,
    predict_torques,
)
from dynamic_identification.core.identification.in_process import SlidingWindowEstimator, WindowSettings
from dynamic_identification.core.mechanism.robot import DriveTerms, load_robot
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.regressors.idim import base_parameters
from dynamic_identification.core.simulation import (
    SensorModel,
    inverse_dynamics,
    synthesize_measurements,
)

RATE_HZ = 1000.0
E_TOL = WindowSettings().reduction.e_tol
"""The default tolerance of Algorithm 1 (5 %)."""
STICK_PERIODS = 3
"""The simulated data have no stick phases: a narrow margin keeps the accelerations at every stop."""
MIN_SPEED = 0.05


@pytest.fixture(scope="module")
def arm(arm6_urdf: Path):
    robot = load_robot(arm6_urdf)
    chain, drive = ARM6_UNCOUPLED_CHAIN, ARM6_DRIVE
    terms = DriveTerms()
    return robot, chain, drive, terms, base_parameters(robot, chain, terms)


def _run(arm, trajectory, seed: int):
    """1 kHz motion along a planned trajectory, its noisy measurements and exact torques."""
    robot, chain, drive, _, _ = arm
    time = np.arange(trajectory.time[0], trajectory.time[-1], 1.0 / RATE_HZ)
    q, dq, ddq = interpolate_trajectory(trajectory.time, trajectory.q, trajectory.dq, trajectory.ddq, time)
    measured, currents = synthesize_measurements(robot, chain, drive, time, q, dq, ddq, SensorModel(), seed=seed)
    return (
        time,
        (q, dq, ddq),
        measured,
        chain.joint_torques(currents),
        inverse_dynamics(robot, chain, drive, q, dq, ddq),
    )


def _relative_errors(predicted: np.ndarray, measured: np.ndarray, dq: np.ndarray) -> np.ndarray:
    """[Volkmann2020] eq. (11)-(12) per joint against the measured torques, where the joint moves.

    A joint at rest holds an unknown static friction that no model predicts; a joint
    that never moves has no entry (NaN).
    """
    moving = np.abs(dq) >= MIN_SPEED
    with np.errstate(invalid="ignore", divide="ignore"):
        error = np.where(moving, np.abs(predicted - measured), 0.0).sum(axis=0) / moving.sum(axis=0)
        magnitude = np.where(moving, np.abs(measured), 0.0).sum(axis=0) / moving.sum(axis=0)
        return error / magnitude


@pytest.fixture(scope="module")
def excitation_model(arm):
    """The reference: a full model identified offline from an optimised Fourier excitation."""
    robot, chain, _, terms, base = arm
    limits = JointLimits.from_robot(robot, velocity_scale=0.8, acceleration_scale=0.8)
    dynamic_model = DynamicModel.create(robot, chain, terms, base)
    design = optimise_fourier(dynamic_model, limits, seed=0, max_evaluations=1500, time_budget_s=math.inf)
    trajectory = sample(design.trajectory, np.arange(0.0, 30.0, 0.01), robot.joint_names)
    time, _, measured, torques, _ = _run(arm, trajectory, seed=11)
    result = identify(dynamic_model, time, measured, torques, settings=IdentificationSettings())
    return result.values


@pytest.mark.parametrize(("process", "cycles"), [("pick_and_place", 8), ("square", 3)])
def test_in_process_reduction_on_a_process_matches_the_excitation_model(arm, excitation_model, process, cycles) -> None:
    robot, chain, _, terms, base = arm
    plan = plan_excitation(robot, chain, terms, ExcitationSettings(mode="process", process=process, cycles=cycles))
    time, _, measured, torques, _ = _run(arm, plan.trajectory, seed=1)
    settings = WindowSettings(
        window_s=60.0,
        update_period_s=1.0,
        reduction=ReductionSettings(method="sensitivity", e_tol=E_TOL),
        max_condition_number=1e3,
        stick_periods=STICK_PERIODS,
    )
    estimator = SlidingWindowEstimator(DynamicModel.create(robot, chain, terms, base), settings)
    for start in range(0, time.size, 1000):
        estimator.add_samples(time[start : start + 1000], measured[start : start + 1000], torques[start : start + 1000])
        update = estimator.update()
    assert update.publishable, update.reason
    assert update.condition_number_full >= 7.0 * update.condition_number

    equations = estimator.window_equations()
    reduction = reduce_parameters(
        equations, joint_error_std_from_normal_equations(equations), method="sensitivity", e_tol=E_TOL
    )
    assert np.all(reduction.solution.relative_errors <= (1.0 + E_TOL) * reduction.reference.relative_errors + 1e-12)

    fresh = plan_excitation(
        robot, chain, terms, ExcitationSettings(mode="process", process=process, cycles=cycles, seed=7)
    )
    _, (q, dq, ddq), _, measured_torques, _ = _run(arm, fresh.trajectory, seed=2)
    reduced = predict_torques(robot, chain, terms, dict(zip(update.names, update.values, strict=True)), q, dq, ddq)
    reference = predict_torques(robot, chain, terms, excitation_model, q, dq, ddq)
    e_reduced = _relative_errors(reduced, measured_torques, dq)
    e_reference = _relative_errors(reference, measured_torques, dq)
    moved = np.isfinite(e_reference)
    assert moved.sum() >= 4
    assert np.all(e_reduced[moved] <= 1.1 * e_reference[moved]), (e_reduced, e_reference)
