"""Normal equations: blocks add and subtract exactly; solutions equal the row-based WLS."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from dynamic_identification.core.errors import RankDeficientError
from dynamic_identification.core.estimation import (
    NormalEquations,
    joint_error_std,
    joint_fits,
    solve_weighted,
    weighted_least_squares,
)
from dynamic_identification.core.estimation.normal_equations import (
    joint_error_std_from_normal_equations,
    numerical_rank,
    weighted_normal_matrix,
    weighted_solution,
)

TRUE = np.array([2.0, -1.0, 0.5, 3.0, 0.25, -0.75])


def _rows(seed: int, samples: int = 400) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(samples, 3, 6)) * np.logspace(-1, 2, 6)
    w[:, 2, :2] = 0.0  # block-triangular structure of the IDIM ([Gautier2013] eq. (5))
    y = w @ TRUE + rng.normal(size=(samples, 3)) * np.array([0.1, 1.0, 3.0])
    valid = rng.uniform(size=(samples, 3)) > 0.1
    return w, y, valid


def test_blocks_add_and_subtract_to_the_statistics_of_the_union() -> None:
    w, y, valid = _rows(0)
    whole = NormalEquations.from_rows(w, y, valid)
    first = NormalEquations.from_rows(w[:150], y[:150], valid[:150])
    second = NormalEquations.from_rows(w[150:], y[150:], valid[150:])
    for total, expected in zip((first + second)._fields(), whole._fields(), strict=True):
        assert_allclose(total, expected, rtol=1e-12, atol=1e-9)
    for rest, expected in zip((whole - first)._fields(), second._fields(), strict=True):
        assert_allclose(rest, expected, rtol=1e-9, atol=1e-8)


def test_a_joint_whose_equations_all_left_the_window_has_zero_sums_not_round_off_below_zero() -> None:
    # A joint at rest after large torques: 1e9² swallows 0.3² in the sum, and taking both out again left -0.09.
    w, _, _ = _rows(1, samples=2)
    small = NormalEquations.from_rows(w[:1], np.array([[0.3, 0.3, 0.3]]))
    large = NormalEquations.from_rows(w[1:], np.array([[1e9, 1.0, 1.0]]))
    window = (small + large).without(large)
    assert np.all(window.c >= 0.0) and np.all(window.abs_y >= 0.0)
    empty = window.without(small)
    for field in empty._fields():
        assert np.all(field == 0.0)
    with np.errstate(invalid="raise"):
        np.sqrt(empty.c)


def test_the_statistics_from_each_joints_qr_equal_those_summed_over_the_rows() -> None:
    # Offline WLS has each joint's R factor already; its RᵀR gives the same normal equations without the products.
    w, y, valid = _rows(2, samples=20_000)
    valid[:, 1] = False  # a joint without valid equations: zero statistics both ways
    triangles = joint_fits(w, y, valid=valid).triangles
    from_triangles = NormalEquations.from_triangles(triangles, w, y, valid)
    from_rows = NormalEquations.from_rows(w, y, valid)
    for field, expected in zip(from_triangles._fields(), from_rows._fields(), strict=True):
        assert_allclose(field, expected, rtol=1e-12, atol=1e-9 * np.abs(expected).max())


def test_weighted_solution_equals_the_row_based_wls() -> None:
    w, y, valid = _rows(1)
    equations = NormalEquations.from_rows(w, y, valid)
    sigma = joint_error_std(w, y, valid=valid)
    assert_allclose(joint_error_std_from_normal_equations(equations), sigma, rtol=1e-8)
    solution = solve_weighted(equations, sigma, np.arange(6))
    reference = weighted_least_squares(w, y, joint_std=sigma, valid=valid)
    assert_allclose(solution.parameters, reference.parameters, rtol=1e-10)
    assert_allclose(solution.std, reference.std, rtol=1e-8)
    assert_allclose(solution.condition_number, reference.condition_number, rtol=1e-8)
    assert solution.rank == 6


def test_a_solution_carries_the_weighted_normal_matrix_of_its_columns_and_its_inverse_is_the_covariance_s() -> None:
    # The consistent estimate's metric is this matrix: it is taken from the solution, not formed again.
    w, y, valid = _rows(3)
    equations = NormalEquations.from_rows(w, y, valid)
    sigma = joint_error_std(w, y, valid=valid)
    columns = np.array([0, 2, 3, 5])
    matrix, vector = weighted_normal_matrix(equations, sigma, np.arange(6))
    solution, inverse = weighted_solution(equations, sigma, columns, matrix, vector)
    assert np.array_equal(solution.normal_matrix, weighted_normal_matrix(equations, sigma, columns)[0])
    rows = (w[..., columns] / sigma[None, :, None])[valid]
    assert_allclose(solution.normal_matrix, rows.T @ rows, rtol=1e-12)
    assert_allclose(solution.normal_matrix @ inverse, np.eye(4), atol=1e-10)


def test_rank_deficiency_names_the_dependent_parameter() -> None:
    w, y, _ = _rows(2)
    w[..., 4] = 2.0 * w[..., 1]
    equations = NormalEquations.from_rows(w, y)
    names = ("A", "B", "C", "D", "E", "F")
    with pytest.raises(RankDeficientError, match="'[BE]'"):
        solve_weighted(equations, np.ones(3), np.arange(6), names=names)


@pytest.mark.parametrize("perturbation", [1e-7, 1e-5, 3e-5, 4e-5, 5e-5, 1e-4, 1e-3])
def test_weighted_solution_refuses_exactly_the_subsets_the_pivoted_cholesky_finds_dependent(
    perturbation: float,
) -> None:
    # Near the rank threshold either side: the solution's shortcut past the pivoted Cholesky must not change its
    # decision.
    w, y, _ = _rows(4)
    w[..., 4] = 2.0 * w[..., 1] + perturbation * np.abs(w[..., 1]).mean() * np.random.default_rng(5).normal(
        size=w.shape[:2]
    )
    equations = NormalEquations.from_rows(w, y)
    matrix, vector = weighted_normal_matrix(equations, np.ones(3), np.arange(6))
    rank, _ = numerical_rank(matrix)
    if rank < 6:
        with pytest.raises(RankDeficientError, match="'[BE]'"):
            weighted_solution(equations, np.ones(3), np.arange(6), matrix, vector, names=("A", "B", "C", "D", "E", "F"))
    else:
        solution, _ = weighted_solution(equations, np.ones(3), np.arange(6), matrix, vector)
        assert solution.rank == 6


def test_a_column_without_data_is_named_dependent() -> None:
    w, y, _ = _rows(6)
    w[..., 3] = 0.0
    equations = NormalEquations.from_rows(w, y)
    with pytest.raises(RankDeficientError, match="'D'"):
        solve_weighted(equations, np.ones(3), np.arange(6), names=("A", "B", "C", "D", "E", "F"))


def test_sensitivities_are_mean_absolute_column_values() -> None:
    w, y, _ = _rows(3)
    equations = NormalEquations.from_rows(w, y)
    assert_allclose(equations.sensitivities(), np.abs(w).sum(axis=(0, 1)) / (w.shape[0] * w.shape[1]))
