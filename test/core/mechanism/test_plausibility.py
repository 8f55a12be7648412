"""Plausibility gates: models no real robot could have are caught, models of real data pass."""

from __future__ import annotations

import numpy as np
import pytest

from arm6_drives import ARM6_DRIVE
from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.identification import IdentificationSettings, identify
from dynamic_identification.core.mechanism.plausibility import (
    ImplausibleModelError,
    PlausibilityBounds,
    check_model,
    model_problems,
)
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.regressors.idim import base_parameters
from dynamic_identification.core.simulation import inverse_dynamics

RATE_HZ = 500.0


@pytest.fixture(scope="module")
def recording(arm6: RobotModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """20 s of a random Fourier excitation of the shipped arm with its simulator's friction, rotor inertia and
    offsets, and noise."""
    trajectory = random_fourier_trajectory(arm6, fundamental_hz=0.1, harmonics=5, seed=4, margin=0.15)
    time = np.arange(0.0, 20.0, 1.0 / RATE_HZ)
    q, dq, ddq = trajectory.evaluate(time)
    torques = inverse_dynamics(arm6, DriveChain.create(6), ARM6_DRIVE, q, dq, ddq)
    return time, q, torques + np.random.default_rng(0).normal(0.0, 0.2, torques.shape)


def _identified(
    arm6: RobotModel, time: np.ndarray, q: np.ndarray, torques: np.ndarray
) -> tuple[tuple, np.ndarray, np.ndarray]:
    chain, terms = DriveChain.create(6), DriveTerms()
    result = identify(
        DynamicModel.create(arm6, chain, terms, base_parameters(arm6, chain, terms)),
        time,
        q,
        torques,
        settings=IdentificationSettings(),
    )
    rows = result.observations
    predicted = rows.observation_matrix[..., result.base.subset(result.names)] @ result.estimate.parameters
    return result.names, result.estimate.parameters, np.abs(predicted).max(axis=0, where=rows.valid, initial=0.0)


def test_a_model_of_real_data_passes_every_gate(arm6, recording) -> None:
    names, values, peak = _identified(arm6, *recording)
    assert model_problems(PlausibilityBounds.from_robot(arm6), names, values, predicted_peak=peak) == ()


def test_torques_recorded_in_milli_newton_metres_give_a_refused_model(arm6, recording) -> None:
    time, q, torques = recording
    names, values, peak = _identified(arm6, time, q, 1000.0 * torques)
    problems = model_problems(PlausibilityBounds.from_robot(arm6), names, values, predicted_peak=peak)
    assert any(problem.startswith("Fc1 = ") for problem in problems)
    assert any("predicted torque of joint_1" in problem and "wrong unit" in problem for problem in problems)


def test_a_huge_constant_effort_gives_a_refused_model(arm6, recording) -> None:
    time, q, _ = recording
    with np.errstate(over="ignore", invalid="ignore"):
        names, values, peak = _identified(arm6, time, q, np.full((time.size, 6), 1e300))
    with pytest.raises(ImplausibleModelError) as caught:
        check_model(PlausibilityBounds.from_robot(arm6), names, values, predicted_peak=peak, hint="override")
    assert caught.value.problems and "override" in str(caught.value)


@pytest.mark.parametrize(
    ("name", "value", "text"),
    [
        ("Fc1", 6771.0, "Fc1 = 6771 N·m exceeds 1.5 × the effort limit 120 N·m of joint_1"),
        ("off6", -20.0, "off6 = -20 N·m exceeds"),
        ("Fv2", 100.0, "Fv2 = 100 N·m·s/rad needs 450 N·m at the velocity limit"),
        ("Ia6", 2.0, "Ia6 = 2 kg·m² needs 64 N·m at the acceleration limit"),
        ("ZZ1", 1e5, "ZZ1 = 1e+05 kg·m² is beyond"),
        ("MX3", float("inf"), "MX3 = inf is not finite"),
    ],
)
def test_each_parameter_gate_names_the_parameter_and_the_bound(arm6, name, value, text) -> None:
    problems = model_problems(PlausibilityBounds.from_robot(arm6), [name], [value])
    assert len(problems) == 1 and problems[0].startswith(text), problems


def test_bounds_come_from_the_urdf_and_configured_limits_replace_them(arm6) -> None:
    bounds = PlausibilityBounds.from_robot(arm6)
    total = sum(arm6.model.inertias[j].mass for j in range(1, 7))
    assert bounds.mass_kg == pytest.approx(10.0 * total)
    assert 0.5 < bounds.reach_m < 3.0  # a TX-40-class arm reaches about 0.5-1 m
    configured = PlausibilityBounds.from_robot(arm6, effort_limits=[1.0] * 6, effort_factor=2.0)
    assert model_problems(configured, ["Fc1"], [2.5]) and not model_problems(configured, ["Fc1"], [1.5])


def test_unknown_effort_limits_skip_the_torque_gates(arm6) -> None:
    bounds = PlausibilityBounds.from_robot(arm6, effort_limits=[0.0] * 6)
    assert model_problems(bounds, ["Fc1"], [1e4], predicted_peak=np.full(6, 1e6)) == ()
