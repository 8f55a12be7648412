"""The five regression models of [DirectDrive2012] on the 3-axis direct-drive arm ``urdf/dynid_dd3.urdf``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.signal
from numpy.testing import assert_allclose

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.estimation import joint_error_std
from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.identification import IdentificationSettings, ReductionSettings, SignalSettings
from dynamic_identification.core.identification.regression_models import (
    MODELS,
    first_order_filter,
    identify_model,
    model_observations,
)
from dynamic_identification.core.mechanism.robot import (
    DriveChain,
    DriveParameters,
    DriveTerms,
    RobotModel,
    load_robot,
    standard_parameters,
)
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.regressors.idim import BaseParameters
from dynamic_identification.core.simulation import SensorModel, inverse_dynamics, synthesize_measurements

DD3_URDF = Path(__file__).resolve().parents[3] / "urdf" / "dynid_dd3.urdf"
TERMS = DriveTerms(rotor_inertia=False, viscous_friction=True, coulomb_friction=True, offset=False)
RATE_HZ = 500.0
NOISE_NM = 0.1


class Arm:
    """The direct-drive arm, its model in base parameters, true values and one Fourier motion (8 s at 500 Hz)."""

    def __init__(self) -> None:
        self.robot: RobotModel = load_robot(DD3_URDF)
        self.chain = DriveChain.create(3)
        self.drive = DriveParameters.create(3, viscous=[1.5, 0.8, 0.15], coulomb=[1.2, 1.0, 0.3])
        self.dynamic_model = DynamicModel.create(self.robot, self.chain, TERMS)
        self.base: BaseParameters = self.dynamic_model.base
        self.truth = self.base.from_standard(standard_parameters(self.robot, TERMS, self.drive))
        self.time = np.arange(0.0, 8.0, 1.0 / RATE_HZ)
        trajectory = random_fourier_trajectory(self.robot, fundamental_hz=0.125, harmonics=5, seed=3)
        self.q, self.dq, self.ddq = trajectory.evaluate(self.time)

    def measure(self, noise_nm: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
        sensor = SensorModel(current_noise_std_a=noise_nm, encoder_counts_per_rev=1_024_000)
        return synthesize_measurements(
            self.robot, self.chain, self.drive, self.time, self.q, self.dq, self.ddq, sensor, seed=seed
        )


@pytest.fixture(scope="module")
def arm() -> Arm:
    return Arm()


def test_the_arm_has_seed_003s_21_base_parameters(arm: Arm) -> None:
    assert arm.base.count == 21
    assert sum(name.startswith(("Fv", "Fc")) for name in arm.base.names) == 6


def test_tustin_filter_has_unit_dc_gain_and_lambda_one_minus_f_is_f_times_a_derivative() -> None:
    lam, rate = 9.11, 500.0
    b, a = first_order_filter(lam, rate)
    frequencies = np.array([0.01, 0.5, 2.0, 10.0])
    _, response = scipy.signal.freqz(b, a, worN=frequencies, fs=rate)
    z = np.exp(2j * np.pi * frequencies / rate)
    tustin_derivative = 2.0 * rate * (1.0 - 1.0 / z) / (1.0 + 1.0 / z)
    assert_allclose(lam * (1.0 - response), response * tustin_derivative, rtol=1e-9)
    assert_allclose(response, lam / (1j * 2 * np.pi * frequencies + lam), rtol=2e-3)


@pytest.mark.parametrize("model", MODELS)
def test_noise_free_equations_hold_for_the_true_parameters(arm: Arm, model: str) -> None:
    """Every model is an identity of the same base parameters: its equation error is the discretisation's."""
    settings = IdentificationSettings(signal=SignalSettings(position_cutoff_hz=None))
    torques = inverse_dynamics(arm.robot, arm.chain, arm.drive, arm.q, arm.dq, arm.ddq)
    observations = model_observations(
        arm.dynamic_model,
        arm.time,
        arm.q,
        torques,
        model=model,
        settings=settings,
    )
    valid = observations.valid
    residual = np.where(valid, observations.torques - observations.observation_matrix @ arm.truth, 0.0)
    scalar = model in ("supplied_energy", "power", "filtered_power")
    assert observations.observation_matrix.shape[1:] == ((1,) if scalar else (3,)) + (21,)
    # Second-order differences/trapezoids at 500 Hz on motion below 1 Hz: errors of order 1e-5 of the signal.
    assert np.linalg.norm(residual) < 2e-4 * np.linalg.norm(np.where(valid, observations.torques, 0.0))


@pytest.mark.parametrize("model", MODELS)
def test_every_model_identifies_the_parameters_from_noisy_data(arm: Arm, model: str) -> None:
    """[DirectDrive2012] §5: all five models recover the arm; the well-excited parameters within a few percent."""
    q, torques = arm.measure(NOISE_NM, seed=7)
    # The models are compared under one fixed filter (the automatic cut-off is tested with the
    # signal settings): 8 s give the energy model only 37 equations for 21 parameters, and an
    # estimate that close to its rank moves by several percent with the cut-off.
    settings = IdentificationSettings(signal=SignalSettings(position_cutoff_hz=20.0))
    estimate = identify_model(arm.dynamic_model, arm.time, q, torques, model=model, settings=settings)
    assert estimate.excited.all()
    # Well excited: the dynamic model's relative standard deviation on this data is below 1 %. The
    # scalar (energy, power) models have one equation per sample instead of three, and a random,
    # unoptimised trajectory: 10 % is a few of their standard deviations.
    reference = identify_model(
        arm.dynamic_model,
        arm.time,
        q,
        torques,
        model="dynamic",
        settings=settings,
    )
    well_excited = reference.std / np.abs(reference.parameters) < 0.01
    assert well_excited.sum() >= 8
    error = np.abs(estimate.parameters - arm.truth) / np.abs(arm.truth)
    assert error[well_excited].max() < 0.10, dict(
        zip(np.array(arm.base.names)[well_excited], error[well_excited], strict=True)
    )


def test_recursive_estimate_equals_the_batch_estimate(arm: Arm) -> None:
    q, torques = arm.measure(NOISE_NM, seed=8)
    # σ of [Gautier2013] eq. (18), which RLS carries in its covariance: the HAC σ (the default) of either estimate
    # is computed afterwards from its residuals, so it follows the two estimates' 1e-6 difference.
    kwargs = {
        "model": "filtered_dynamic",
        "settings": IdentificationSettings(reduction=ReductionSettings(uncertainty="white")),
    }
    batch = identify_model(arm.dynamic_model, arm.time, q, torques, **kwargs)
    recursive = identify_model(arm.dynamic_model, arm.time, q, torques, recursive=True, **kwargs)
    assert recursive.history is not None
    assert recursive.history.parameters.shape[1] == 21
    # RLS runs on unit-norm columns with p0 = 1e8; the prior's relative pull is 1 / (p0 σ_min²).
    observations = batch.observations
    std = joint_error_std(observations.observation_matrix, observations.torques, valid=observations.valid)
    weighted = (observations.observation_matrix / std[None, :, None]).reshape(-1, 21)
    sigma_min = np.linalg.svd(weighted / np.linalg.norm(weighted, axis=0), compute_uv=False)[-1]
    assert 1.0 / (1e8 * sigma_min**2) < 1e-6
    assert_allclose(recursive.parameters, batch.parameters, atol=1e-6 * np.abs(batch.parameters).max())
    assert_allclose(recursive.std, batch.std, rtol=1e-6)


def test_unknown_model_and_bad_lambda_are_refused(arm: Arm) -> None:
    q, torques = arm.measure(0.0, seed=0)
    with pytest.raises(IdentificationError, match="model must be one of"):
        model_observations(arm.dynamic_model, arm.time, q, torques, model="integral")
    with pytest.raises(IdentificationError, match="filter_lambda"):
        model_observations(
            arm.dynamic_model,
            arm.time,
            q,
            torques,
            model="filtered_power",
            filter_lambda=-1.0,
        )
