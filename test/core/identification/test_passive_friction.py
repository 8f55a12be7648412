"""Bearing friction in a closed-loop robot's passive joints ([Briot2012] eq. (6)), on a simulated 3-RRR.

The 3-RRR of ``three_rrr`` in its inclined plane, every passive joint with 5 % of the motors' friction,
tracked by the constrained forward simulation (1 % current noise, 14-bit encoders): the identification with
the passive joints' friction columns, without them, and the choice between the two that the default makes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from numpy.testing import assert_allclose

from dynamic_identification.core.estimation.consistency import mechanism_estimator
from dynamic_identification.core.estimation.model_selection import SIGNIFICANCE
from dynamic_identification.core.identification import (
    IdentificationResult,
    IdentificationSettings,
    SignalSettings,
)
from dynamic_identification.core.identification.passive_friction import PassiveFrictionChoice, choose_passive_friction
from dynamic_identification.core.identification.regression_models import identify_model
from dynamic_identification.core.mechanism.closed_loop import (
    ClosedLoopModel,
    base_parameters,
    observation_matrix,
    standard_parameters,
)
from dynamic_identification.core.mechanism.robot import DriveTerms
from dynamic_identification.core.mechanism.seam import Mechanism
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.simulation import TrackingRun
from three_rrr import (
    CHAIN,
    DRIVE,
    PASSIVE_COULOMB,
    PASSIVE_VISCOUS,
    bearing_friction_run,
    load_three_rrr,
    platform_motion,
    track,
    true_motor_torques,
)

TERMS = DriveTerms()
SETTINGS = IdentificationSettings(
    signal=SignalSettings(position_cutoff_hz=10.0, decimation=10, min_speed_rad_s=0.05), min_samples=2000
)
FRICTIONLESS_S = 10.0


@pytest.fixture(scope="module")
def three_rrr(tmp_path_factory: pytest.TempPathFactory) -> ClosedLoopModel:
    return load_three_rrr(tmp_path_factory.mktemp("three_rrr"))


@dataclass(frozen=True)
class Identified:
    """The identification of one recording without and with the passive joints' friction columns, and the choice."""

    run: TrackingRun
    without: IdentificationResult
    with_friction: IdentificationResult
    choice: PassiveFrictionChoice


def _fits(
    model: ClosedLoopModel, run: TrackingRun, regression: str = "dynamic", *, consistency: bool = False
) -> list[IdentificationResult]:
    """The identification of ``run`` with ``regression`` without and with the passive joints' friction columns;
    ``consistency``: publishing the physically consistent estimates ([Wensing2018])."""
    models = [
        DynamicModel.create(candidate, CHAIN, TERMS, base_parameters(candidate, CHAIN, TERMS))
        for candidate in (model, model.with_passive_friction())
    ]
    return [
        identify_model(
            dynamic_model,
            run.time_s,
            run.q,
            run.joint_torques_nm,
            model=regression,
            settings=SETTINGS,
            consistency=mechanism_estimator(dynamic_model) if consistency else None,
        )
        for dynamic_model in models
    ]


def _identified(model: ClosedLoopModel, run: TrackingRun, *, consistency: bool = False) -> Identified:
    results = _fits(model, run, consistency=consistency)
    choice = choose_passive_friction(model, TERMS, without=results[0], with_friction=results[1])
    return Identified(run, results[0], results[1], choice)


@pytest.fixture(scope="module")
def bearings(three_rrr: ClosedLoopModel) -> Identified:
    """30 s of the 3-RRR with bearing friction (5 % of the motors') in its passive joints."""
    return _identified(three_rrr, bearing_friction_run(three_rrr))


@pytest.fixture(scope="module")
def frictionless(three_rrr: ClosedLoopModel) -> Identified:
    """10 s of the 3-RRR with frictionless passive joints: nothing to find, so a third of the bearings' 30 s is enough
    to show the fallback (measured: p = 0.87 of frictionless bearings, 0.38 on 30 s)."""
    run = track(three_rrr, platform_motion(3, FRICTIONLESS_S), seed=13, passive_viscous=None, passive_coulomb=None)
    return _identified(three_rrr, run)


@pytest.fixture(scope="module")
def frictionless_consistent(three_rrr: ClosedLoopModel, frictionless: Identified) -> Identified:
    """The frictionless recording identified publishing the physically consistent estimates."""
    return _identified(three_rrr, frictionless.run, consistency=True)


@dataclass(frozen=True)
class Validation:
    """A 10 s platform motion not used for identification: the 3-RRR's standard regressors ``(N, n_a, p)`` without
    and with the bearing-friction columns (keyed by :attr:`ClosedLoopModel.passive_friction`) and its true actuated
    torques, bearing friction included."""

    regressors: dict[bool, np.ndarray]
    torques: np.ndarray

    def error(self, model: ClosedLoopModel, result: IdentificationResult) -> float:
        """Relative error of the actuated torques that ``result`` of ``model`` predicts against the true ones."""
        base = result.base
        regressor = base.select(self.regressors[model.passive_friction])
        predicted = regressor[..., base.subset(result.names)] @ result.estimate.parameters
        return float(np.linalg.norm(predicted - self.torques) / np.linalg.norm(self.torques))


@pytest.fixture(scope="module")
def validation(three_rrr: ClosedLoopModel) -> Validation:
    _, q, dq, ddq = platform_motion(2, 10.0)
    motion = three_rrr.complete_motion(q, dq, ddq)
    return Validation(
        regressors={
            friction: observation_matrix(
                three_rrr.with_passive_friction(friction), CHAIN, TERMS, motion.q, motion.dq, motion.ddq
            )
            for friction in (False, True)
        },
        torques=true_motor_torques(three_rrr, motion),
    )


def test_the_3rrr_is_a_mechanism_with_four_passive_joints(three_rrr: ClosedLoopModel) -> None:
    assert isinstance(three_rrr.with_passive_friction(), Mechanism)
    assert three_rrr.passive_joint_names == ("elbow_1", "wrist_1", "elbow_2", "elbow_3")
    assert three_rrr.with_passive_friction().passive_friction_names(TERMS) == (
        "Fv2",
        "Fc2",
        "Fv3",
        "Fc3",
        "Fv5",
        "Fc5",
        "Fv7",
        "Fc7",
    )
    assert three_rrr.passive_friction_names(TERMS) == ()


def test_bearing_friction_columns_reproduce_the_inverse_dynamics(three_rrr: ClosedLoopModel) -> None:
    """``J_tᵀ`` of the passive rows times the bearing friction equals the Lagrange-multiplier torques of
    ``rnea + F_p`` ([Briot2012] eq. (5)-(6)), which never form ``J_t``."""
    model = three_rrr.with_passive_friction()
    _, q, dq, ddq = platform_motion(4, 2.0, dt=0.01)
    motion = model.complete_motion(q, dq, ddq)
    standard = standard_parameters(
        model, TERMS, DRIVE, passive_viscous=PASSIVE_VISCOUS, passive_coulomb=PASSIVE_COULOMB
    )
    expected = true_motor_torques(model, motion)
    assert_allclose(model.observation_matrix(CHAIN, TERMS, motion) @ standard, expected, atol=1e-9, rtol=0)


def test_passive_friction_columns_cut_the_validation_error(
    three_rrr: ClosedLoopModel, bearings: Identified, validation: Validation
) -> None:
    # Measured: 4.49 % without the bearing-friction columns, 0.18 % with them; the Wald χ² of frictionless bearings
    # 3205 for 8 extra unknowns (frictionless bearings, 30 s: 8.5, p = 0.38).
    without = validation.error(three_rrr, bearings.without)
    with_friction = validation.error(three_rrr.with_passive_friction(), bearings.with_friction)
    assert with_friction < 0.006
    assert without > 5.0 * with_friction


@pytest.mark.parametrize("model", ["supplied_energy", "power", "filtered_power"])
def test_the_energy_and_power_models_see_the_bearings_dissipate(
    three_rrr: ClosedLoopModel, bearings: Identified, validation: Validation, model: str
) -> None:
    """The bearings' power ``Fv_p q̇_p² + Fc_p |q̇_p|`` is in these models' friction columns: their bearing friction
    is determined, and the model with it predicts better than the one without."""
    results = _fits(three_rrr, bearings.run, model)
    names = three_rrr.with_passive_friction().passive_friction_names(TERMS)
    assert set(names) <= set(results[1].names), results[1].removed
    without = validation.error(three_rrr, results[0])
    with_friction = validation.error(three_rrr.with_passive_friction(), results[1])
    # Measured, without → with: supplied_energy 49.7 → 25.8 %, power 17.7 → 3.7 %, filtered_power 18.3 → 6.5 % (these
    # models are far from the IDIM's 0.18 % on 30 s; before the bearings' power was in them, their bearing columns
    # were zero and no better than without).
    assert with_friction < 0.6 * without, (without, with_friction)


def test_passive_friction_is_recovered_within_3_sigma(three_rrr: ClosedLoopModel, bearings: Identified) -> None:
    model = three_rrr.with_passive_friction()
    result = bearings.with_friction
    names = model.passive_friction_names(TERMS)
    truth = dict(
        zip(
            result.base.names,
            result.base.from_standard(
                standard_parameters(
                    model, TERMS, DRIVE, passive_viscous=PASSIVE_VISCOUS, passive_coulomb=PASSIVE_COULOMB
                )
            ),
            strict=True,
        )
    )
    index = [result.names.index(name) for name in names]
    estimate, std = result.estimate.parameters[index], result.estimate.std[index]
    expected = np.array([truth[name] for name in names])
    assert np.all(np.abs(estimate - expected) < 3.0 * std)
    assert np.all(std < 0.5 * expected)  # determined: each σ within half its value


def test_the_default_takes_passive_friction_the_data_show(bearings: Identified) -> None:
    choice = bearings.choice
    assert choice.passive_friction and choice.test is not None and choice.test.p_value < SIGNIFICANCE
    assert choice.reason.startswith("passive-joint friction Fv2, Fc2, Fv3, Fc3, Fv5, Fc5, Fv7, Fc7:")
    assert choice.chosen(bearings.without, bearings.with_friction) is bearings.with_friction


def test_both_fits_are_compared_on_the_same_rows_with_the_same_weights(frictionless: Identified) -> None:
    """The figures of the choice are ``‖(Y − Wχ̂)/σ‖ / ‖Y/σ‖`` of each fit on the rows of the recording, weighted by
    the ``σ_j`` of the model with bearing friction, which its least squares minimised: the fit with more columns
    cannot come out worse (each model's own ``‖ρ‖/‖Y‖`` weighs its equations by its own ``σ_j``)."""
    choice, std = frictionless.choice, frictionless.with_friction.joint_std
    assert std is not None

    def weighted_error(result: IdentificationResult) -> float:
        rows = result.observations
        fitted = rows.observation_matrix[..., result.base.subset(result.names)] @ result.estimate.parameters
        residual = np.where(rows.valid, (rows.torques - fitted) / std, 0.0)
        return float(np.linalg.norm(residual) / np.linalg.norm(np.where(rows.valid, rows.torques / std, 0.0)))

    # Without physical consistency the published estimates are the least-squares fits.
    expected = [weighted_error(frictionless.without), weighted_error(frictionless.with_friction)]
    assert_allclose([choice.relative_error_without, choice.relative_error_with], expected, rtol=1e-9)
    assert_allclose([choice.published_error_without, choice.published_error_with], expected, rtol=1e-9)
    assert choice.relative_error_with <= choice.relative_error_without


def test_the_wald_test_is_of_the_least_squares_estimate_when_the_consistent_one_is_published(
    frictionless: Identified, frictionless_consistent: Identified
) -> None:
    """The physically consistent estimate is pulled toward the URDF's frictionless bearings: testing it would find
    the bearings frictionless whatever the data say."""
    with_friction = frictionless_consistent.with_friction
    assert with_friction.consistency is not None and with_friction.consistency.applied
    test, unconstrained = frictionless_consistent.choice.test, frictionless.choice.test
    assert test is not None and unconstrained is not None
    assert_allclose(test.statistic, unconstrained.statistic, rtol=1e-6)


def test_frictionless_passive_joints_fall_back_in_one_line(frictionless: Identified) -> None:
    choice = frictionless.choice
    assert not choice.passive_friction
    assert choice.reason.startswith("no passive-joint friction: it does not explain the data significantly better")
    assert "\n" not in choice.reason
    assert choice.chosen(frictionless.without, frictionless.with_friction) is frictionless.without
