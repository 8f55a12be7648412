"""Recursive least squares ([DirectDrive2012] §3.1): convergence to batch LS, forgetting, covariance history."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from dynamic_identification.core.errors import DataError, IdentificationError
from dynamic_identification.core.estimation import weighted_least_squares
from dynamic_identification.core.estimation.recursive import RecursiveLeastSquares, recursive_estimate


def _problem(rows: int = 400, b: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(rows, b)) * np.logspace(0, 1, b)
    theta = rng.normal(size=b)
    return a, a @ theta + 0.1 * rng.normal(size=rows), theta


def test_rls_without_forgetting_converges_to_batch_least_squares() -> None:
    a, y, _ = _problem()
    p0 = 1e8
    rls = RecursiveLeastSquares(a.shape[1], initial_covariance=p0)
    for start in range(0, a.shape[0], 3):
        rls.update(a[start : start + 3], y[start : start + 3])
    batch, *_ = np.linalg.lstsq(a, y, rcond=None)
    # RLS is the ridge solution (AᵀA + I/p0)⁻¹Aᵀy: its relative distance to batch LS is at most
    # 1 / (p0 λ_min(AᵀA)), far below the 1e-6 asserted here.
    assert 1.0 / (p0 * np.linalg.eigvalsh(a.T @ a)[0]) < 1e-8
    assert_allclose(rls.parameters, batch, rtol=1e-6, atol=1e-6 * np.linalg.norm(batch))


def test_rls_is_exactly_the_regularised_solution_of_its_prior() -> None:
    a, y, _ = _problem(rows=30, seed=1)
    p0, theta0 = 0.5, np.full(a.shape[1], 0.3)
    rls = RecursiveLeastSquares(a.shape[1], initial_covariance=p0, initial_parameters=theta0)
    for row, value in zip(a, y, strict=True):
        rls.update(row, np.array([value]))
    information = a.T @ a + np.eye(a.shape[1]) / p0
    assert_allclose(rls.parameters, np.linalg.solve(information, a.T @ y + theta0 / p0), rtol=1e-10)
    assert_allclose(rls.covariance, np.linalg.inv(information), rtol=1e-9, atol=1e-14)


def test_weighted_rls_on_an_observation_matrix_equals_per_joint_wls() -> None:
    rng = np.random.default_rng(2)
    w = rng.normal(size=(300, 3, 5))
    y = w @ rng.normal(size=5) + rng.normal(size=(300, 3)) * [0.1, 1.0, 0.3]
    valid = rng.random((300, 3)) > 0.1
    std = np.array([0.1, 1.0, 0.3])
    batch = weighted_least_squares(w, y, joint_std=std, valid=valid)
    rls = recursive_estimate(w, y, valid=valid, joint_std=std, initial_covariance=1e6)
    # The prior's pull is below 1 / (p0 λ_min(Σ WᵀW / σ²)) ~ 1e-9; a much larger p0 would
    # trade it for round-off in the first updates.
    stacked = (w / std[None, :, None])[valid]
    assert 1.0 / (1e6 * np.linalg.eigvalsh(stacked.T @ stacked)[0]) < 1e-8
    assert_allclose(rls.parameters, batch.parameters, rtol=1e-7, atol=1e-9)
    assert rls.rows_seen == int(valid.sum())


def test_covariance_shrinks_monotonically_and_its_history_is_recorded() -> None:
    a, y, _ = _problem(rows=100)
    rls = RecursiveLeastSquares(a.shape[1], eigenvalues=True)
    for row, value in zip(a, y, strict=True):
        rls.update(row, np.array([value]))
    history = rls.history
    assert history.parameters.shape == (100, a.shape[1])
    assert history.covariance_eigenvalues.shape == (100, a.shape[1])
    assert np.all(np.diff(history.covariance_trace) <= 1e-9 * history.covariance_trace[:-1])
    assert_allclose(history.covariance_diagonal.sum(axis=1), history.covariance_trace, rtol=1e-12)
    assert_allclose(history.parameters[-1], rls.parameters)


def test_forgetting_tracks_a_parameter_change_that_plain_rls_averages() -> None:
    rng = np.random.default_rng(3)
    a = rng.normal(size=(600, 2))
    before, after = np.array([1.0, -1.0]), np.array([2.0, 0.5])
    y = np.where(np.arange(600)[:, None] < 300, a @ before[:, None], a @ after[:, None])[:, 0]
    forgetting, plain = RecursiveLeastSquares(2, forgetting=0.95), RecursiveLeastSquares(2)
    for row, value in zip(a, y, strict=True):
        forgetting.update(row, np.array([value]))
        plain.update(row, np.array([value]))
    assert_allclose(forgetting.parameters, after, atol=1e-6)
    assert np.abs(plain.parameters - after).max() > 0.3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"forgetting": 0.0}, "forgetting"),
        ({"forgetting": 1.5}, "forgetting"),
        ({"initial_covariance": -1.0}, "initial_covariance"),
        ({"initial_parameters": np.zeros(3)}, "initial_parameters"),
    ],
)
def test_bad_settings_are_refused_with_their_name(kwargs: dict, message: str) -> None:
    with pytest.raises(IdentificationError, match=message):
        RecursiveLeastSquares(2, **kwargs)


def test_bad_rows_are_refused() -> None:
    rls = RecursiveLeastSquares(2)
    with pytest.raises(DataError, match="rows"):
        rls.update(np.ones((3, 3)), np.ones(3))
    with pytest.raises(DataError, match="weights"):
        rls.update(np.ones((3, 2)), np.ones(3), weights=-np.ones(3))
