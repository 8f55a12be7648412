"""Tests of the least-squares core: OLS, per-joint WLS, statistics, rank, essential parameters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from dynamic_identification.core.errors import DataError, IdentificationError, RankDeficientError
from dynamic_identification.core.estimation import (
    essential_parameters,
    joint_error_std,
    joint_fits,
    ordinary_least_squares,
    rank_deficient_columns,
    weighted_least_squares,
)
from dynamic_identification.core.estimation.least_squares import sparse_joint_triangle, stacked_triangle

TRUE_PARAMETERS = np.array([1.5, -0.7, 3.0, 0.25])


def _observation_matrix(rng: np.random.Generator, samples: int, joints: int, columns: int) -> np.ndarray:
    """Random well-conditioned ``W`` whose columns have very different scales (like SI parameters)."""
    scales = np.logspace(-1, 2, columns)
    return rng.normal(size=(samples, joints, columns)) * scales


def test_ols_equals_numpy_lstsq() -> None:
    rng = np.random.default_rng(0)
    w = _observation_matrix(rng, 100, 3, 4)
    y = w @ TRUE_PARAMETERS + rng.normal(scale=0.3, size=(100, 3))

    result = ordinary_least_squares(w, y)

    expected = np.linalg.lstsq(w.reshape(-1, 4), y.reshape(-1), rcond=None)[0]
    assert_allclose(result.parameters, expected, rtol=1e-10)
    assert_array_equal(result.joint_std, np.ones(3))
    assert result.samples == 100
    assert_allclose(result.predict(w), w @ expected, rtol=1e-10)


def test_covariance_and_condition_number_match_their_definitions() -> None:
    rng = np.random.default_rng(1)
    w = _observation_matrix(rng, 60, 2, 4)
    y = w @ TRUE_PARAMETERS + rng.normal(scale=0.2, size=(60, 2))
    a = w.reshape(-1, 4)

    result = ordinary_least_squares(w, y)

    residual = y.reshape(-1) - a @ result.parameters
    sigma2 = residual @ residual / (a.shape[0] - 4)  # [Gautier2013] eq. (17)
    assert_allclose(result.residual_std, np.sqrt(sigma2), rtol=1e-10)
    assert_allclose(result.covariance, sigma2 * np.linalg.inv(a.T @ a), rtol=1e-8)  # eq. (18)
    assert_allclose(result.std, np.sqrt(np.diag(result.covariance)), rtol=1e-12)
    assert_allclose(result.condition_number, np.linalg.cond(a / np.linalg.norm(a, axis=0)), rtol=1e-8)


def test_std_estimates_are_consistent_over_monte_carlo_noise() -> None:
    rng = np.random.default_rng(2)
    w = _observation_matrix(rng, 30, 2, 4)
    estimates, stds = [], []
    for seed in range(200):
        noise = np.random.default_rng(1000 + seed).normal(scale=0.5, size=(30, 2))
        result = ordinary_least_squares(w, w @ TRUE_PARAMETERS + noise)
        estimates.append(result.parameters)
        stds.append(result.std)
    errors, stds = np.array(estimates) - TRUE_PARAMETERS, np.array(stds)

    within_two_sigma = np.mean(np.abs(errors) < 2.0 * stds)
    assert 0.91 < within_two_sigma < 0.99
    assert_allclose(stds.mean(axis=0), errors.std(axis=0), rtol=0.15)


def test_relative_std_percent_follows_eq_19() -> None:
    rng = np.random.default_rng(3)
    w = _observation_matrix(rng, 50, 2, 4)
    result = ordinary_least_squares(w, w @ TRUE_PARAMETERS + rng.normal(scale=0.1, size=(50, 2)))

    assert_allclose(result.relative_std_percent, 100.0 * result.std / np.abs(result.parameters), rtol=1e-12)


def test_relative_std_percent_is_infinite_for_a_zero_estimate() -> None:
    rng = np.random.default_rng(4)
    w = _observation_matrix(rng, 20, 2, 3)

    result = ordinary_least_squares(w, np.zeros((20, 2)))

    assert_array_equal(result.parameters, np.zeros(3))
    assert np.all(np.isinf(result.relative_std_percent))
    assert result.relative_error == 0.0


def test_joint_errors_match_hand_computation() -> None:
    # One parameter acting on joint 0 only: χ̂ is the mean of τ_0 = 3.
    w = np.zeros((4, 2, 1))
    w[:, 0, 0] = 1.0
    y = np.array([[1.0, 1.0], [2.0, -1.0], [3.0, 2.0], [6.0, -2.0]])

    result = ordinary_least_squares(w, y)

    assert_allclose(result.parameters, [3.0])
    # residuals: joint 0 [-2, -1, 0, 3], joint 1 [1, -1, 2, -2]
    assert_allclose(result.joint_errors, [1.5, 1.5])  # [Volkmann2020] eq. (11)
    assert_allclose(result.joint_relative_errors, [1.5 / 3.0, 1.5 / 1.5])  # eq. (12), mean|τ| = 3 and 1.5
    assert_allclose(result.relative_error, np.sqrt(24.0 / 60.0))


def test_wls_beats_ols_and_recovers_joint_noise_levels() -> None:
    noise = np.array([0.01, 1.0, 10.0])
    rng = np.random.default_rng(5)
    w = _observation_matrix(rng, 300, 3, 4)
    ols_errors, wls_errors, joint_stds = [], [], []
    for seed in range(10):
        y = w @ TRUE_PARAMETERS + np.random.default_rng(seed).normal(size=(300, 3)) * noise
        ols_errors.append(ordinary_least_squares(w, y).parameters - TRUE_PARAMETERS)
        wls = weighted_least_squares(w, y)
        wls_errors.append(wls.parameters - TRUE_PARAMETERS)
        joint_stds.append(wls.joint_std)
        assert_allclose(wls.residual_std, 1.0, rtol=0.1)  # weights normalise the errors

    ols_rms = np.sqrt(np.mean(np.square(ols_errors), axis=0))
    wls_rms = np.sqrt(np.mean(np.square(wls_errors), axis=0))
    assert np.all(wls_rms < 0.2 * ols_rms)
    assert_allclose(np.mean(joint_stds, axis=0), noise, rtol=0.05)


def test_joint_error_std_uses_the_rank_of_each_joint() -> None:
    # Block-triangular IDIM structure ([Gautier2013] eq. (20)): joint 1 does not see columns 0 and 1.
    rng = np.random.default_rng(6)
    w = rng.normal(size=(12, 2, 3))
    w[:, 1, :2] = 0.0
    y = w @ np.array([1.0, 2.0, 3.0]) + rng.normal(scale=0.3, size=(12, 2))

    sigma = joint_error_std(w, y)

    for j, rank in ((0, 3), (1, 1)):
        columns = slice(0, 3) if j == 0 else slice(2, 3)
        solution = np.linalg.lstsq(w[:, j, columns], y[:, j], rcond=None)[0]
        residual = y[:, j] - w[:, j, columns] @ solution
        assert_allclose(sigma[j], np.linalg.norm(residual) / np.sqrt(12 - rank), rtol=1e-10)


def test_joint_error_std_floors_exact_joints_and_rejects_too_few_samples() -> None:
    rng = np.random.default_rng(7)
    w = rng.normal(size=(10, 2, 3))
    y = w @ np.array([1.0, 2.0, 3.0])
    y[:, 1] += rng.normal(scale=2.0, size=10)

    sigma = joint_error_std(w, y)

    assert 0.0 < sigma[0] < 1e-6 * sigma[1]
    assert_array_equal(joint_error_std(w, w @ np.ones(3)), np.ones(2))
    with pytest.raises(DataError, match="joint 0 has 3 samples"):
        joint_error_std(w[:3], y[:3])


def test_sample_std_equal_per_joint_gives_joint_weighting() -> None:
    rng = np.random.default_rng(8)
    w = _observation_matrix(rng, 40, 2, 4)
    y = w @ TRUE_PARAMETERS + rng.normal(size=(40, 2)) * [0.1, 2.0]
    joint_std = np.array([0.1, 2.0])

    by_joint = weighted_least_squares(w, y, joint_std=joint_std)
    by_sample = weighted_least_squares(w, y, sample_std=np.tile(joint_std, (40, 1)))

    assert_allclose(by_sample.parameters, by_joint.parameters, rtol=1e-10)
    assert_allclose(by_sample.covariance, by_joint.covariance, rtol=1e-10)
    assert_allclose(by_sample.joint_std, joint_std)
    with pytest.raises(IdentificationError, match="not both"):
        weighted_least_squares(w, y, joint_std=joint_std, sample_std=np.tile(joint_std, (40, 1)))


def test_per_sample_weights_from_repetitions_normalise_errors() -> None:
    # [Volkmann2020] eq. (7)-(9): noise that changes along the trajectory.
    rng = np.random.default_rng(9)
    w = _observation_matrix(rng, 400, 2, 4)
    sample_std = np.exp(rng.uniform(-3.0, 1.0, size=(400, 2)))
    y = w @ TRUE_PARAMETERS + rng.normal(size=(400, 2)) * sample_std

    result = weighted_least_squares(w, y, sample_std=sample_std)

    assert_allclose(result.residual_std, 1.0, rtol=0.1)
    assert np.all(np.abs(result.parameters - TRUE_PARAMETERS) < 4.0 * result.std)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    joint=st.integers(0, 2),
    scale=st.floats(0.01, 100.0) | st.floats(-100.0, -0.01),
)
def test_wls_is_invariant_to_scaling_one_joint(seed: int, joint: int, scale: float) -> None:
    rng = np.random.default_rng(seed)
    w = _observation_matrix(rng, 25, 3, 4)
    y = w @ TRUE_PARAMETERS + rng.normal(size=(25, 3)) * [0.05, 0.5, 5.0]
    w_scaled, y_scaled = w.copy(), y.copy()
    w_scaled[:, joint] *= scale
    y_scaled[:, joint] *= scale

    reference = weighted_least_squares(w, y)
    scaled = weighted_least_squares(w_scaled, y_scaled)

    assert_allclose(scaled.parameters, reference.parameters, rtol=1e-7, atol=1e-9)
    assert_allclose(scaled.std, reference.std, rtol=1e-7)
    assert_allclose(scaled.joint_std[joint], abs(scale) * reference.joint_std[joint], rtol=1e-7)


def test_rank_deficient_columns_finds_duplicated_and_zero_columns() -> None:
    rng = np.random.default_rng(10)
    w = _observation_matrix(rng, 30, 2, 6)
    w[..., 4] = -3.0 * w[..., 1]
    w[..., 2] = 0.0

    assert_array_equal(rank_deficient_columns(w[..., [0, 1, 3, 5]]), np.array([], dtype=int))
    deficient = rank_deficient_columns(w)
    assert 2 in deficient
    assert len(deficient) == 2 and deficient[1] in (1, 4)
    assert_array_equal(deficient, np.sort(deficient))


def test_rank_deficient_columns_finds_a_combination_up_to_rounding() -> None:
    rng = np.random.default_rng(11)
    w = rng.normal(size=(30, 2, 4))
    w[..., 3] = w[..., 0] + 2.0 * w[..., 1] + 1e-13 * rng.normal(size=(30, 2))

    assert len(rank_deficient_columns(w)) == 1
    assert len(rank_deficient_columns(w, tolerance=1e-15)) == 0


@pytest.mark.parametrize("estimator", [ordinary_least_squares, weighted_least_squares])
def test_estimators_name_unidentifiable_parameters(estimator) -> None:
    rng = np.random.default_rng(12)
    w = _observation_matrix(rng, 30, 2, 4)
    w[..., 2] = 0.0
    y = rng.normal(size=(30, 2))

    with pytest.raises(RankDeficientError, match=r"ZZ2 \(columns \[2\]\)"):
        estimator(w, y, parameter_names=("M1", "MX1", "ZZ2", "Fv2"))
    with pytest.raises(RankDeficientError, match=r"parameters 2 "):
        estimator(w, y)


@pytest.mark.parametrize("estimator", [ordinary_least_squares, weighted_least_squares])
def test_estimators_reject_bad_data(estimator) -> None:
    rng = np.random.default_rng(13)
    w = _observation_matrix(rng, 10, 2, 3)
    y = rng.normal(size=(10, 2))
    y_nan = y.copy()
    y_nan[4, 1] = np.nan
    w_inf = w.copy()
    w_inf[2, 0, 1] = np.inf

    with pytest.raises(DataError, match="torques contains NaN or inf .*sample 4, joint 1"):
        estimator(w, y_nan)
    with pytest.raises(DataError, match="observation_matrix contains NaN or inf"):
        estimator(w_inf, y)
    with pytest.raises(DataError, match="torques must have shape"):
        estimator(w, y[:9])
    with pytest.raises(DataError, match="more equations than parameters"):
        estimator(w[:1, :1], y[:1, :1])


def _essential_problem(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Three strong columns, and a weak column 3 whose true parameter is 0."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(200, 2, 4))
    w[..., 3] *= 1e-3
    y = w @ np.array([2.0, -1.0, 3.0, 0.0]) + rng.normal(scale=0.1, size=(200, 2))
    return w, y


def test_essential_parameters_remove_a_weak_zero_parameter() -> None:
    w, y = _essential_problem(14)
    names = ("a", "b", "c", "weak")

    full = weighted_least_squares(w, y, parameter_names=names)
    essential = essential_parameters(w, y, parameter_names=names)

    assert full.relative_std_percent.max() / full.relative_std_percent.min() >= 20.0
    assert_array_equal(essential.kept, [0, 1, 2])
    assert_array_equal(essential.removed, [3])
    final = essential.result.relative_std_percent
    assert final.max() / final.min() < 20.0  # [Gautier2013] §V.B stopping rule
    assert_allclose(essential.result.parameters, [2.0, -1.0, 3.0], atol=0.02)
    assert_allclose(essential.result.joint_std, full.joint_std)  # weights fixed from the full model


def test_essential_parameters_honour_ratio_and_minimum_count() -> None:
    w, y = _essential_problem(15)

    untouched = essential_parameters(w, y, r_sigma=1e9)
    at_least_two = essential_parameters(w, y, r_sigma=1.01, min_parameters=2)

    assert_array_equal(untouched.kept, [0, 1, 2, 3])
    assert untouched.removed.size == 0
    assert at_least_two.kept.size == 2
    assert_array_equal(np.sort(np.concatenate([at_least_two.kept, at_least_two.removed])), np.arange(4))
    assert at_least_two.removed[0] == 3
    with pytest.raises(IdentificationError, match="r_sigma"):
        essential_parameters(w, y, r_sigma=0.5)
    with pytest.raises(IdentificationError, match="min_parameters"):
        essential_parameters(w, y, min_parameters=5)


def test_equations_marked_invalid_are_ignored_by_estimate_and_statistics() -> None:
    """Stick phases: equations flagged invalid (here corrupted by gross errors) change nothing."""
    rng = np.random.default_rng(21)
    w = _observation_matrix(rng, 200, 3, 4)
    y = w @ TRUE_PARAMETERS + rng.normal(scale=[0.1, 0.5, 1.0], size=(200, 3))
    valid = rng.uniform(size=(200, 3)) > 0.2
    corrupted = np.where(valid, y, y + 1e3)
    masked = weighted_least_squares(w, corrupted, valid=valid)
    rows = valid.reshape(-1)
    sigma = joint_error_std(w, y, valid=valid)
    stacked = (w / sigma[:, None]).reshape(-1, 4)[rows]
    expected = np.linalg.lstsq(stacked, (y / sigma).reshape(-1)[rows], rcond=None)[0]
    assert_allclose(masked.parameters, expected, rtol=1e-10)
    for j in range(3):
        residual = (y - w @ masked.parameters)[valid[:, j], j]
        assert_allclose(masked.joint_errors[j], np.mean(np.abs(residual)), rtol=1e-10)


def test_a_joint_without_valid_equations_does_not_break_the_weights() -> None:
    rng = np.random.default_rng(22)
    w = _observation_matrix(rng, 100, 2, 4)
    y = w @ TRUE_PARAMETERS + rng.normal(scale=0.1, size=(100, 2))
    valid = np.ones((100, 2), dtype=bool)
    valid[:, 1] = False
    sigma = joint_error_std(w, y, valid=valid)
    assert np.all(np.isfinite(sigma)) and np.all(sigma > 0)
    assert_allclose(weighted_least_squares(w, y, valid=valid).parameters, TRUE_PARAMETERS, rtol=0.05)


@pytest.mark.parametrize("block_rows", [3, 40, 1000])
def test_the_triangle_of_stacked_blocks_is_the_r_of_all_rows(block_rows: int) -> None:
    """Rows fed a block at a time leave R of the whole stack (rows up to sign) and the residual norm in its corner,
    also when the first blocks hold fewer rows than columns."""
    rng = np.random.default_rng(5)
    a = rng.normal(size=(1000, 6)) * np.logspace(-2, 3, 6)
    b = a @ rng.normal(size=6) + rng.normal(scale=0.1, size=1000)
    triangle = np.zeros((0, 7))
    for start in range(0, 1000, block_rows):
        triangle = stacked_triangle(triangle, a[start : start + block_rows], b[start : start + block_rows])
    whole = np.linalg.qr(np.column_stack([a, b]), mode="r")
    assert triangle.shape == (7, 7)
    assert_allclose(np.abs(triangle), np.abs(whole), rtol=1e-10, atol=1e-10 * np.abs(whole).max())
    residual = np.linalg.norm(b - a @ np.linalg.lstsq(a, b, rcond=None)[0])
    assert_allclose(abs(triangle[6, 6]), residual, rtol=1e-10)


def test_the_triangle_without_the_zero_columns_is_an_r_of_the_rows() -> None:
    """Columns zero in every row (an IDIM joint's, of the links before it) left out of the QR, the rows factorised a
    block at a time: the R still gives the rows' normal equations and every least-squares residual, zero in the rows
    and columns of those columns."""
    rng = np.random.default_rng(6)
    a = rng.normal(size=(5000, 7)) * np.logspace(-2, 3, 7)
    a[:, [0, 3]] = 0.0
    b = a @ rng.normal(size=7) + rng.normal(scale=0.1, size=5000)
    rows = np.vstack([a.T, b])
    # Joint 1 of two, its rows every other one of the 10 000: more than two blocks of GATHER_ROWS.
    observation_matrix, torques = np.zeros((10_000, 2, 7)), np.zeros((10_000, 2))
    observation_matrix[1::2, 1], torques[1::2, 1] = a, b
    triangle = sparse_joint_triangle(observation_matrix, torques, np.arange(1, 10_000, 2), 1)
    assert_array_equal(triangle[[0, 3]], 0.0)
    assert_array_equal(triangle[:, [0, 3]], 0.0)
    assert_allclose(triangle.T @ triangle, rows @ rows.T, rtol=1e-12, atol=1e-12 * np.abs(rows @ rows.T).max())
    some = [1, 4, 6]
    residual = np.linalg.norm(b - a[:, some] @ np.linalg.lstsq(a[:, some], b, rcond=None)[0])
    reduced = triangle[:, some]
    assert_allclose(
        np.linalg.norm(triangle[:, 7] - reduced @ np.linalg.lstsq(reduced, triangle[:, 7], rcond=None)[0]),
        residual,
        rtol=1e-10,
    )


def test_wls_from_the_joints_own_factors_equals_wls_of_the_rows() -> None:
    """The identification's WLS of its kept columns, factorised from each joint's R of ``[W_j | y_j]`` (no second
    pass over the rows), gives the estimate and statistics of the QR of the weighted rows; a kept set the data do
    not determine is refused naming the same parameter."""
    rng = np.random.default_rng(31)
    w = _observation_matrix(rng, 400, 3, 6)
    w[:, 2, :2] = 0.0  # block-triangular: the last joint does not see the first two columns
    y = w @ np.linspace(-1.0, 2.0, 6) + rng.normal(size=(400, 3)) * np.array([0.02, 0.5, 3.0])
    valid = rng.random((400, 3)) > 0.2
    fits = joint_fits(w, y, valid=valid)
    assert_array_equal(fits.std, joint_error_std(w, y, valid=valid))
    kept = np.array([0, 2, 3, 5])
    names = [f"p{i}" for i in kept]
    rows = weighted_least_squares(w[..., kept], y, joint_std=fits.std, parameter_names=names, valid=valid)
    factors = weighted_least_squares(
        w[..., kept], y, joint_std=fits.std, parameter_names=names, valid=valid, triangles=fits.columns(kept)
    )
    for field in ("parameters", "std", "covariance", "residual_std", "condition_number", "joint_errors"):
        assert_allclose(getattr(factors, field), getattr(rows, field), rtol=1e-10, err_msg=field)

    w[..., 5] = w[..., 3]
    fits = joint_fits(w, y, valid=valid)
    for triangles in (None, fits.columns(kept)):
        with pytest.raises(RankDeficientError, match="parameters p5 "):
            weighted_least_squares(
                w[..., kept], y, joint_std=fits.std, parameter_names=names, valid=valid, triangles=triangles
            )
    with pytest.raises(IdentificationError, match="triangles need joint_std"):
        weighted_least_squares(w[..., kept], y, valid=valid, triangles=fits.columns(kept))
