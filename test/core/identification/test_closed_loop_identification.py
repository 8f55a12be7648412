"""Closed-loop identification from recordings ([Briot2012] eq. (6)-(13)) on the simulated five-bar.

Ground truth: Pinocchio's constrained forward dynamics (``RobotSimulator``) tracking Fourier
motions of the two motors by PD + feedforward at 1 kHz, with rotor inertia, viscous and Coulomb
friction, offsets, 14-bit encoders and 1 % current noise; the drive gains of the motors differ from
the nominal ones by +7.5 % and -6 %.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from numpy.testing import assert_allclose

from dynamic_identification.core.errors import DataError, ModelError
from dynamic_identification.core.estimation.consistency import mechanism_estimator
from dynamic_identification.core.estimation.least_squares import (
    LeastSquaresResult,
    joint_error_std,
    weighted_least_squares,
)
from dynamic_identification.core.estimation.normal_equations import NormalEquations
from dynamic_identification.core.identification import (
    IdentificationSettings,
    PreparedObservations,
    SignalSettings,
    prepare_observations,
)
from dynamic_identification.core.identification.completion import complete_recording
from dynamic_identification.core.identification.drive_gains import (
    CurrentRecording,
    DriveGainsResult,
    identify_drive_gains,
    projected_payload_regressor,
)
from dynamic_identification.core.mechanism.closed_loop import (
    ClosedLoopModel,
    LoopClosureError,
    base_parameters,
    observation_matrix,
    random_motion,
    standard_parameters,
)
from dynamic_identification.core.mechanism.payload import attach_payload
from dynamic_identification.core.mechanism.robot import DriveChain, DriveParameters, DriveTerms
from dynamic_identification.core.mechanism.seam import tree_standard
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.regressors.idim import BaseParameters
from dynamic_identification.core.simulation import (
    SensorModel,
    TrackingRun,
    inverse_dynamics,
    quantize_positions,
)
from five_bar import (
    FIVE_BAR_ACTUATED,
    FIVE_BAR_CHAIN,
    FIVE_BAR_DRIVE,
    FIVE_BAR_TRUE_GAINS,
    TIP_PAYLOAD,
    five_bar_runs,
    fourier,
    identify_gains_from_runs,
    load_five_bar,
)

NOMINAL = FIVE_BAR_CHAIN
"""The data sheet's torque constants of the five-bar's motors (config/five_bar.yaml), N·m/A."""
TRUE_GAINS = FIVE_BAR_TRUE_GAINS.drive_gains
"""The motors' actual torque constants: within the ~10 % a data sheet promises ([Briot2012] §3.2)."""
TRUTH = FIVE_BAR_TRUE_GAINS
DRIVE = FIVE_BAR_DRIVE
PAYLOAD = TIP_PAYLOAD
SETTINGS = IdentificationSettings(
    signal=SignalSettings(position_cutoff_hz=10.0, decimation=10, min_speed_rad_s=0.05), min_samples=2000
)
"""The estimator block of config/five_bar.yaml."""
TERMS = DriveTerms()


def _all_joints(model: ClosedLoopModel, run: TrackingRun) -> np.ndarray:
    """Every tree joint as 14-bit encoders on the passive joints too would report them, ``(N, n_t)``."""
    q = quantize_positions(DriveChain.create(model.n_tree), SensorModel(encoder_counts_per_rev=2**14), run.q_tree)
    q[:, model.actuated] = run.q
    return q


@dataclass(frozen=True)
class Scenario:
    model: ClosedLoopModel
    base: BaseParameters
    truth: np.ndarray
    unloaded: TrackingRun
    loaded: TrackingRun
    observations: PreparedObservations
    estimate: LeastSquaresResult
    gains: DriveGainsResult


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    model = load_five_bar()
    runs = five_bar_runs()
    unloaded, loaded = runs.unloaded, runs.loaded
    base = base_parameters(model, NOMINAL, TERMS)
    dynamic_model = DynamicModel.create(model, NOMINAL, TERMS, base)
    observations = prepare_observations(
        dynamic_model,
        unloaded.time_s,
        unloaded.q,
        unloaded.joint_torques_nm,
        settings=SETTINGS,
    )
    joint_std = joint_error_std(observations.observation_matrix, observations.torques, valid=observations.valid)
    estimate = weighted_least_squares(
        observations.observation_matrix,
        observations.torques,
        joint_std=joint_std,
        parameter_names=base.names,
        valid=observations.valid,
    )
    gains = identify_gains_from_runs(
        dynamic_model, unloaded=unloaded, loaded=loaded, payload=PAYLOAD, settings=SETTINGS
    )
    truth = base.from_standard(standard_parameters(model, TERMS, DRIVE))
    return Scenario(model, base, truth, unloaded, loaded, observations, estimate, gains)


def _observations(
    s: Scenario, *, q: np.ndarray | None = None, torques: np.ndarray | None = None, base: BaseParameters | None = None
) -> PreparedObservations:
    """``prepare_observations`` of the unloaded recording of ``s`` with the nominal gains; ``q``, ``torques``
    and ``base`` replace its actuated positions, its joint torques and the scenario's base parameters."""
    return prepare_observations(
        DynamicModel.create(s.model, NOMINAL, TERMS, s.base if base is None else base),
        s.unloaded.time_s,
        s.unloaded.q if q is None else q,
        s.unloaded.joint_torques_nm if torques is None else torques,
        settings=SETTINGS,
    )


def _validation_error(s: Scenario, names: tuple[str, ...], values: np.ndarray) -> float:
    """Relative error of the predicted noise-free actuated torques along a trajectory not used for identification."""
    _, q, dq, ddq = fourier(11, 5.0)
    motion = s.model.complete_motion(q, dq, ddq)
    expected = inverse_dynamics(s.model, TRUTH, DRIVE, motion.q, motion.dq, motion.ddq)
    regressor = observation_matrix(
        s.model, NOMINAL, TERMS, motion.q, motion.dq, motion.ddq, projection=motion.projection
    )
    predicted = s.base.select(regressor)[..., s.base.subset(names)] @ values
    return float(np.linalg.norm(predicted - expected) / np.linalg.norm(expected))


# ----------------------------------------------------------------------------- physical consistency
def test_the_tree_layout_regroups_into_the_same_base_parameters(scenario: Scenario) -> None:
    """The opened tree's standard layout (passive joints' drive terms 0) gives the closed-loop base values."""
    model, base = scenario.model, scenario.base
    tree_base = DynamicModel.create(model, NOMINAL, TERMS, base).tree_base_parameters()
    assert tree_base.names == base.names and len(tree_base.standard_names) == model.n_tree * TERMS.per_joint
    standard = np.random.default_rng(0).normal(size=len(base.standard_names))
    assert_allclose(tree_base.from_standard(tree_standard(model, TERMS, standard)), base.from_standard(standard))
    passive = [j for j in range(model.n_tree) if j not in {int(k) for k in model.actuated}]
    drive = [j * TERMS.per_joint + 10 + t for j in passive for t in range(len(TERMS.names))]
    assert not tree_base.regrouping[:, drive].any()


def test_the_consistent_estimate_is_a_physical_tree_within_a_sigma_of_the_wls(scenario: Scenario) -> None:
    """[Wensing2018] on the closed-loop normal equations: every tree link a body, the actuated Ia, Fv, Fc >= 0."""
    observations = scenario.observations
    equations = NormalEquations.from_rows(observations.observation_matrix, observations.torques, observations.valid)
    estimator = mechanism_estimator(DynamicModel.create(scenario.model, NOMINAL, TERMS, scenario.base))
    estimate = estimator.solve(equations, scenario.estimate.joint_std)
    assert estimate.report.consistent
    # Measured: 5e-6 σ; the URDF's links are a consistent model of this noisy recording.
    assert estimate.shift_sigma < 1.0
    assert_allclose(estimate.unconstrained, scenario.estimate.parameters, rtol=1e-6)
    deviation = np.abs(estimate.base_values - scenario.truth) / scenario.estimate.std
    assert np.all(deviation < 3.0), dict(zip(scenario.base.names, np.round(deviation, 2), strict=True))


# ----------------------------------------------------------------------------- (a) observations + WLS
def test_builder_and_wls_recover_the_base_parameters_within_3_sigma(scenario: Scenario) -> None:
    # Measured: largest deviation 2.4 σ over the 17 base parameters (1.7 σ at worst over 5 other noise seeds).
    deviation = np.abs(scenario.estimate.parameters - scenario.truth) / scenario.estimate.std
    assert np.all(deviation < 3.0), dict(zip(scenario.base.names, np.round(deviation, 2), strict=True))


def test_identified_model_predicts_validation_torques_within_1_percent(scenario: Scenario) -> None:
    # Measured: 0.29 %.
    assert _validation_error(scenario, scenario.base.names, scenario.estimate.parameters) < 0.01


def test_observations_are_decimated_actuated_equations_with_velocity_reversals_masked(scenario: Scenario) -> None:
    observations = scenario.observations
    assert observations.observation_matrix.shape == (observations.torques.shape[0], 2, scenario.base.count)
    assert observations.decimation == 10
    assert observations.rate_hz == pytest.approx(1000.0)
    assert 0.3 < observations.valid.mean() < 1.0


# ----------------------------------------------------------------------------- (b) drive gains by IDIM-TLS
def test_tls_drive_gains_are_within_one_percent_with_a_payload_on_the_platform(scenario: Scenario) -> None:
    # Measured: errors 0.005 % and 0.04 % (σ 0.06 %), from nominal gains 7.5 % and 6 % off.
    assert_allclose(scenario.gains.drive_gains, TRUE_GAINS, rtol=0.01)
    assert np.all(np.abs(scenario.gains.drive_gains - TRUE_GAINS) < 4.0 * scenario.gains.drive_gains_std)


def test_tls_base_parameters_are_within_3_sigma(scenario: Scenario) -> None:
    gains = scenario.gains
    deviation = np.abs(gains.values - scenario.truth[scenario.base.subset(gains.names)]) / gains.std
    assert np.all(deviation < 3.0), dict(zip(gains.names, np.round(deviation, 2), strict=True))


def test_tls_model_predicts_true_torques_better_than_ols_with_nominal_gains(scenario: Scenario) -> None:
    # OLS (IDIM-WLS) must trust the nominal gains; on the same unloaded recording its torques are off by
    # the gain errors. Measured on the validation trajectory: TLS 0.06 %, OLS with nominal gains 6.1 %.
    s = scenario
    observations = _observations(s, torques=NOMINAL.joint_torques(s.unloaded.currents_a))
    ols = weighted_least_squares(observations.observation_matrix, observations.torques, valid=observations.valid)
    tls_error = _validation_error(s, s.gains.names, s.gains.values)
    ols_error = _validation_error(s, s.base.names, ols.parameters)
    assert tls_error < 0.005
    assert ols_error > 10.0 * tls_error


def test_payload_regressor_is_the_difference_of_loaded_and_unloaded_constrained_dynamics(scenario: Scenario) -> None:
    """``J_tᵀ Y_p φ`` ([Briot2012] eq. (6), (11)) against Lagrange multipliers on the model carrying the payload."""
    model = scenario.model
    loaded = ClosedLoopModel.create(attach_payload(model.robot, PAYLOAD), model.closures, FIVE_BAR_ACTUATED)
    motion = random_motion(model, 20, np.random.default_rng(2))
    no_drive = DriveParameters.create(2)
    difference = inverse_dynamics(loaded, NOMINAL, no_drive, motion.q, motion.dq, motion.ddq) - inverse_dynamics(
        model, NOMINAL, no_drive, motion.q, motion.dq, motion.ddq
    )
    regressor = projected_payload_regressor(model, PAYLOAD.frame, motion)
    assert_allclose(regressor @ PAYLOAD.dynamic_parameters(), difference, rtol=0.0, atol=1e-9)


# ----------------------------------------------------------------------------- (c) actuated-only vs all joints
def test_actuated_only_and_all_joint_recordings_give_the_same_estimate(scenario: Scenario) -> None:
    """Passive encoders (14 bit) pass the closure check; the motion used is the completed one either way."""
    s = scenario
    observations = _observations(s, q=_all_joints(s.model, s.unloaded))
    estimate = weighted_least_squares(
        observations.observation_matrix,
        observations.torques,
        joint_std=s.estimate.joint_std,
        valid=observations.valid,
    )
    assert np.array_equal(observations.valid, s.observations.valid)
    assert np.all(np.abs(estimate.parameters - s.estimate.parameters) < 1e-6 * s.estimate.std)


def test_a_recording_left_open_closes_its_loops_at_the_asked_instants_as_the_walk_through_every_sample(
    scenario: Scenario,
) -> None:
    """The rows need the tree's motion at the decimated instants only: solved there, it is the motion a walk through
    every sample reaches, to Newton's tolerance (the passive positions, eq. (3)-(4) and ``J_t``)."""
    s = scenario
    recording = (s.model, s.unloaded.time_s, s.unloaded.q, s.unloaded.joint_torques_nm)
    walked = complete_recording(*recording, settings=SETTINGS.signal).segments[0]
    left_open = complete_recording(*recording, settings=SETTINGS.signal, complete=False).segments[0]
    assert walked.loops is None and left_open.loops is not None
    instants = np.arange(37, left_open.time.shape[0], 10)
    everywhere = walked.tree_motion_at(instants)
    there = left_open.tree_motion_at(instants)
    assert_allclose(there.q, everywhere.q, rtol=0.0, atol=1e-11)
    for name in ("dq", "ddq", "projection"):
        expected = getattr(everywhere, name)
        assert_allclose(getattr(there, name), expected, rtol=0.0, atol=1e-9 * np.abs(expected).max(), err_msg=name)


def test_all_joint_recordings_give_the_same_drive_gains(scenario: Scenario) -> None:
    s = scenario
    result = identify_drive_gains(
        DynamicModel.create(s.model, NOMINAL, TERMS, s.base),
        unloaded=CurrentRecording.create(s.unloaded.time_s, _all_joints(s.model, s.unloaded), s.unloaded.currents_a),
        loaded=CurrentRecording.create(s.loaded.time_s, _all_joints(s.model, s.loaded), s.loaded.currents_a),
        payload=PAYLOAD,
        settings=SETTINGS,
    )
    assert np.all(np.abs(result.drive_gains - s.gains.drive_gains) < 1e-6 * s.gains.drive_gains_std)


# ----------------------------------------------------------------------------- (d), (e) refusals
def test_recording_through_a_singularity_is_refused_naming_its_sample() -> None:
    """Both motors open symmetrically by s(t) = 0.4 (1 − cos(π t / 3 s)): the distal links align at
    s* = 60° − acos(0.11 / 0.12) = 0.6361 rad, i.e. t* = 2.1028 s: recorded sample 2103 at 1 kHz."""
    model = load_five_bar()
    time_s = np.arange(0.0, 3.0005, 1e-3)
    opening = 0.4 * (1.0 - np.cos(np.pi * time_s / 3.0))
    q = np.stack([opening, -opening], axis=1)
    singular = math.radians(60.0) - math.acos(0.11 / 0.12)
    crossing = int(np.ceil(3.0 / np.pi * math.acos(1.0 - singular / 0.4) / 1e-3))
    base = base_parameters(model, NOMINAL, TERMS)
    with pytest.raises(LoopClosureError) as caught:
        prepare_observations(
            DynamicModel.create(model, NOMINAL, TERMS, base), time_s, q, np.zeros_like(q), settings=SETTINGS
        )
    assert caught.value.sample is not None
    assert crossing - 20 <= caught.value.sample <= crossing + 1, (caught.value.sample, crossing)
    assert str(caught.value).startswith(f"sample {caught.value.sample} (t = ")
    assert "\n" not in str(caught.value)


def test_passive_positions_that_contradict_the_closure_are_refused_naming_sample_and_joint(
    scenario: Scenario,
) -> None:
    """A passive encoder slipping by 0.05 rad at sample 4000 (t = 4 s)."""
    s = scenario
    q = _all_joints(s.model, s.unloaded)
    q[4000:, s.model.joint_names.index("distal_joint_1")] += 0.05
    with pytest.raises(
        DataError, match=r"at sample 4000 \(t = 4\.0000 s\): distal_joint_1 is 0\.0[45]\d* rad"
    ) as caught:
        _observations(s, q=q)
    assert "\n" not in str(caught.value)


def test_base_parameters_of_other_drive_terms_are_refused(scenario: Scenario) -> None:
    s = scenario
    other = base_parameters(s.model, NOMINAL, DriveTerms(offset=False))
    with pytest.raises(ModelError, match="do not regroup the standard parameters of this mechanism"):
        _observations(s, base=other)


def test_a_non_finite_position_is_refused_naming_joint_and_sample(scenario: Scenario) -> None:
    s = scenario
    q = s.unloaded.q.copy()
    q[1234, 1] = np.nan
    with pytest.raises(DataError, match="position of proximal_joint_2 is not finite at sample 1234"):
        _observations(s, q=q)
