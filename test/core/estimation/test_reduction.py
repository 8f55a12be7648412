"""Tests of model reduction on normal equations: [Volkmann2020] Algorithm 1, [Gautier2013] essential parameters."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.estimation import essential_parameters
from dynamic_identification.core.estimation.normal_equations import (
    NormalEquations,
    solve_weighted,
    weighted_normal_matrix,
)
from dynamic_identification.core.estimation.reduction import recheck_reduction, reduce_parameters

NOISE = np.array([0.05, 0.1, 0.05])
"""Error std per joint, N·m."""

TRUE_PARAMETERS = np.array([1.0, -0.5, 2.0, 0.8, 0.0, 0.0, 0.3])
"""Columns 0-3 strong, 4 (nearly collinear with 0) and 5 weak with value 0, 6 only on joint 2."""

ONLY_JOINT_2 = 6
ZERO_WEAK = (4, 5)


def _rows(rng: np.random.Generator, rows: int = 400) -> np.ndarray:
    w = rng.normal(size=(rows, 3, 7)) * np.array([1.0, 2.0, 1.5, 3.0, 1.0, 0.01, 0.3])
    w[:, :, 4] = 0.02 * (w[:, :, 0] + 0.05 * rng.normal(size=(rows, 3)))
    w[:, :2, ONLY_JOINT_2] = 0.0
    return w


def _problem(seed: int, *, noise: np.ndarray = NOISE) -> tuple[np.ndarray, np.ndarray, NormalEquations]:
    rng = np.random.default_rng(seed)
    w = _rows(rng)
    y = w @ TRUE_PARAMETERS + rng.normal(size=w.shape[:2]) * noise
    return w, y, NormalEquations.from_rows(w, y)


def test_weak_zero_columns_are_removed_and_strong_ones_kept() -> None:
    _, _, equations = _problem(0)

    result = reduce_parameters(equations, NOISE)

    assert_array_equal(result.kept, [0, 1, 2, 3, ONLY_JOINT_2])
    assert sorted(result.removed) == [(4, "low sensitivity"), (5, "low sensitivity")]
    assert_array_equal(result.solution.columns, result.kept)
    assert_allclose(result.solution.parameters, TRUE_PARAMETERS[result.kept], atol=0.02)
    # The kept model's inverse weighted normal matrix, the sandwich's bread the sliding window's HAC σ reuses.
    normal, _ = weighted_normal_matrix(equations, NOISE, result.kept)
    assert_allclose(result.inverse @ normal, np.eye(result.kept.size), atol=1e-12)


def test_removal_follows_increasing_sensitivity() -> None:
    _, _, equations = _problem(1)

    result = reduce_parameters(equations, NOISE)

    removed = [column for column, _ in result.removed]
    sensitivity = equations.sensitivities()
    assert np.all(np.diff(sensitivity[removed]) >= 0.0)  # [Volkmann2020] Algorithm 1 line 6


def test_sensitivity_reduction_matches_algorithm_1_written_with_solve_weighted() -> None:
    rng = np.random.default_rng(12)
    w = rng.normal(size=(300, 4, 12)) * rng.uniform(0.05, 2.0, size=12)
    parameters = rng.normal(size=12) * np.where(rng.random(12) < 0.5, 1.0, 0.01)
    y = w @ parameters + 0.1 * rng.normal(size=(300, 4))
    equations = NormalEquations.from_rows(w, y)
    joint_std = np.full(4, 0.1)

    result = reduce_parameters(equations, joint_std, e_tol=0.02)

    reference = solve_weighted(equations, joint_std, np.arange(12)).relative_errors
    included = list(range(12))
    removed = []
    for column in np.argsort(equations.sensitivities()):
        trial = [i for i in included if i != column]
        if np.all(solve_weighted(equations, joint_std, trial).relative_errors <= 1.02 * reference):
            included, removed = trial, [*removed, int(column)]
    assert 0 < len(removed) < 12
    assert_array_equal(result.kept, included)
    assert [column for column, _ in result.removed] == removed


def test_column_that_one_joint_needs_becomes_essential() -> None:
    _, _, equations = _problem(2)

    result = reduce_parameters(equations, NOISE)

    assert ONLY_JOINT_2 in result.essential
    without = solve_weighted(equations, NOISE, [column for column in result.kept if column != ONLY_JOINT_2])
    growth = without.relative_errors / result.reference.relative_errors
    assert growth[2] > 1.5  # one joint beyond e_tol is enough ([Volkmann2020] Algorithm 1 line 10)
    assert np.all(growth[:2] < 1.05)


def test_reduced_model_is_better_conditioned_and_within_tolerance() -> None:
    _, _, equations = _problem(3)

    result = reduce_parameters(equations, NOISE, e_tol=0.05)

    assert result.solution.condition_number < 0.5 * result.reference.condition_number
    assert np.all(result.solution.relative_errors <= 1.05 * result.reference.relative_errors)


def test_forced_columns_are_never_removed() -> None:
    _, _, equations = _problem(4)

    result = reduce_parameters(equations, NOISE, forced=ZERO_WEAK)

    assert set(ZERO_WEAK) <= set(result.kept.tolist())
    assert set(ZERO_WEAK) <= set(result.essential.tolist())
    assert result.removed == ()


def test_duplicated_column_is_not_identifiable_before_the_loop() -> None:
    rng = np.random.default_rng(5)
    w = _rows(rng)
    w = np.concatenate([w, 2.0 * w[:, :, :1]], axis=2)  # column 7 = 2 × column 0
    y = w[:, :, :7] @ TRUE_PARAMETERS + rng.normal(size=w.shape[:2]) * NOISE
    equations = NormalEquations.from_rows(w, y)

    result = reduce_parameters(equations, NOISE)
    preferring_forced = reduce_parameters(equations, NOISE, forced=(0,))

    column, reason = result.removed[0]
    assert column in (0, 7) and reason == "not identifiable"
    assert {0, 7} - {column} <= set(result.kept.tolist())
    assert preferring_forced.removed[0] == (7, "not identifiable")
    assert 0 in preferring_forced.kept
    assert result.reference.columns.size == 7


def test_all_zero_column_is_not_identifiable() -> None:
    w, y, _ = _problem(6)
    w = np.concatenate([w, np.zeros(w.shape[:2] + (1,))], axis=2)

    result = reduce_parameters(NormalEquations.from_rows(w, y), NOISE)

    assert result.removed[0] == (7, "not identifiable")


def test_exact_data_uses_an_absolute_tolerance() -> None:
    _, _, equations = _problem(7, noise=np.zeros(3))

    result = reduce_parameters(equations, np.ones(3))

    assert np.all(result.reference.relative_errors < 1e-6)
    assert_array_equal(result.kept, [0, 1, 2, 3, ONLY_JOINT_2])
    assert_allclose(result.solution.parameters, TRUE_PARAMETERS[result.kept], rtol=1e-8)


def test_essential_stops_below_r_sigma_and_matches_the_row_version() -> None:
    w, y, equations = _problem(8)

    result = reduce_parameters(equations, NOISE, method="essential", r_sigma=20.0)
    rows = essential_parameters(w, y, r_sigma=20.0, joint_std=NOISE)

    percent = result.solution.relative_std_percent
    assert percent.max() / percent.min() < 20.0
    assert_array_equal(result.kept, rows.kept)
    assert [column for column, _ in result.removed] == rows.removed.tolist()
    assert all(reason.startswith("not essential (r_sigma=") for _, reason in result.removed)
    assert_allclose(result.solution.parameters, rows.result.parameters, rtol=1e-8)
    assert_allclose(result.solution.relative_std_percent, rows.result.relative_std_percent, rtol=1e-6)


def test_none_keeps_every_identifiable_column() -> None:
    rng = np.random.default_rng(9)
    w = _rows(rng)
    w = np.concatenate([w, w[:, :, 1:2]], axis=2)
    y = w[:, :, :7] @ TRUE_PARAMETERS + rng.normal(size=w.shape[:2]) * NOISE

    result = reduce_parameters(NormalEquations.from_rows(w, y), NOISE, method="none")

    assert result.kept.size == 7
    assert len(result.removed) == 1 and result.removed[0][1] == "not identifiable"
    assert_array_equal(result.solution.columns, result.reference.columns)


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"method": "lasso"}, "method"),
        ({"e_tol": 0.0}, "e_tol"),
        ({"e_tol": -0.1}, "e_tol"),
        ({"r_sigma": 1.0}, "r_sigma"),
        ({"forced": (7,)}, "forced"),
        ({"names": ("a", "b")}, "names"),
    ],
)
def test_bad_settings_are_refused_by_name(settings: dict[str, object], named: str) -> None:
    _, _, equations = _problem(10)

    with pytest.raises(IdentificationError, match=named):
        reduce_parameters(equations, NOISE, **settings)  # type: ignore[arg-type]


def test_bad_joint_std_is_refused_by_name() -> None:
    _, _, equations = _problem(11)

    with pytest.raises(IdentificationError, match="joint_std"):
        reduce_parameters(equations, np.array([0.1, 0.0, 0.1]))


def test_essential_never_removes_the_last_parameter_of_a_joint() -> None:
    """Joint 2's only column is poorly determined (largest %σ): removing it would leave joint 2 unexplained."""
    rng = np.random.default_rng(13)
    w = rng.normal(size=(400, 2, 3)) * np.array([1.0, 2.0, 0.01])
    w[:, 0, 2] = 0.0  # column 2 acts on joint 2 only
    w[:, 1, :2] = 0.0  # and is all joint 2 has
    y = w @ np.array([1.0, -0.5, 0.3]) + rng.normal(size=(400, 2)) * 0.05
    equations = NormalEquations.from_rows(w, y)

    result = reduce_parameters(equations, np.array([0.05, 0.05]), method="essential", r_sigma=2.0)

    assert 2 in result.kept
    assert result.refused == ((2, 1),)
    assert all(column != 2 for column, _ in result.removed)


def test_sensitivity_reduction_decides_as_algorithm_1_solved_afresh_at_each_trial() -> None:
    """The rank-one trials and downdates decide as fresh WLS solves would: more removals than a refactoring, one
    refusal."""
    rng = np.random.default_rng(14)
    scales = np.where(np.arange(40) < 12, 1.0, 0.01)
    w = rng.normal(size=(500, 3, 40)) * scales
    w[:, :2, 39] = 0.0  # column 39 alone acts on joint 2, whose torque is noise only
    w[:, 2, :39] = 0.0
    parameters = np.where(np.arange(40) < 12, rng.normal(size=40), 0.0)
    y = w @ parameters + 0.05 * rng.normal(size=(500, 3))
    equations = NormalEquations.from_rows(w, y)
    joint_std = np.full(3, 0.05)

    result = reduce_parameters(equations, joint_std)

    limits = 1.05 * solve_weighted(equations, joint_std, np.arange(40)).relative_errors
    included, removed, refused = list(range(40)), [], []
    for column in np.argsort(equations.sensitivities(), kind="stable"):
        trial = [i for i in included if i != column]
        if not np.any(equations.a[2, trial, trial] > 0.0) and equations.a[2, column, column] > 0.0:
            refused.append((int(column), 2))
        elif np.all(solve_weighted(equations, joint_std, trial).relative_errors <= limits):
            included, removed = trial, [*removed, int(column)]
    assert len(removed) > 16 and refused == [(39, 2)]
    assert_array_equal(result.kept, included)
    assert [column for column, _ in result.removed] == removed
    assert result.refused == tuple(refused)


def test_algorithm_1_s_model_is_accepted_again_on_its_own_data_with_the_same_solution() -> None:
    _, _, equations = _problem(13)
    chosen = reduce_parameters(equations, NOISE, forced=(1,))

    again = recheck_reduction(chosen, equations, NOISE, forced=(1,))

    assert again is not None
    assert_array_equal(again.kept, chosen.kept)
    assert again.removed == chosen.removed and again.refused == ()
    assert_array_equal(again.essential, chosen.essential)
    assert_allclose(again.solution.parameters, chosen.solution.parameters, rtol=1e-12)
    assert_allclose(again.inverse, chosen.inverse, rtol=1e-12)


def test_a_model_is_accepted_on_new_data_of_the_same_process_and_refused_once_a_removed_column_matters() -> None:
    _, _, equations = _problem(14)
    chosen = reduce_parameters(equations, NOISE)
    assert 5 not in chosen.kept

    same_process = recheck_reduction(chosen, _problem(15)[2], NOISE)
    rng = np.random.default_rng(16)
    w = _rows(rng)
    y = w @ (TRUE_PARAMETERS + np.eye(7)[5] * 40.0) + rng.normal(size=w.shape[:2]) * NOISE  # column 5 now acts

    assert same_process is not None
    assert_array_equal(same_process.kept, chosen.kept)
    assert recheck_reduction(chosen, NormalEquations.from_rows(w, y), NOISE) is None
    assert 5 in reduce_parameters(NormalEquations.from_rows(w, y), NOISE).kept


def test_a_model_is_refused_when_new_data_do_not_identify_a_kept_column_or_force_a_left_out_one() -> None:
    w, _, equations = _problem(17)
    chosen = reduce_parameters(equations, NOISE)
    unexcited = w.copy()
    unexcited[:, :, 2] = 0.0  # the data no longer see column 2, and fit as well without it
    y = unexcited @ TRUE_PARAMETERS + np.random.default_rng(17).normal(size=w.shape[:2]) * NOISE
    assert 2 in chosen.kept and 4 not in chosen.kept

    assert recheck_reduction(chosen, NormalEquations.from_rows(unexcited, y), NOISE) is None
    assert recheck_reduction(chosen, equations, NOISE, forced=(4,)) is None
    assert recheck_reduction(chosen, equations, NOISE) is not None


def test_only_a_sensitivity_reduction_is_rechecked() -> None:
    _, _, equations = _problem(18)
    essential = reduce_parameters(equations, NOISE, method="essential")

    with pytest.raises(IdentificationError, match="only a 'sensitivity' reduction"):
        recheck_reduction(essential, equations, NOISE)


@pytest.mark.parametrize("kept_twin", [0, 7])
def test_a_model_with_either_of_two_dependent_columns_is_accepted_whichever_the_pivot_leaves_out(
    kept_twin: int,
) -> None:
    rng = np.random.default_rng(19)
    w = _rows(rng)
    w = np.concatenate([w, 2.0 * w[:, :, :1]], axis=2)  # column 7 = 2 × column 0: the data see one of them
    y = w[:, :, :7] @ TRUE_PARAMETERS + rng.normal(size=w.shape[:2]) * NOISE
    equations = NormalEquations.from_rows(w, y)
    chosen = reduce_parameters(equations, NOISE, forced=(kept_twin,))
    other = 7 - kept_twin

    again = recheck_reduction(chosen, equations, NOISE)

    assert again is not None
    assert_array_equal(again.kept, chosen.kept)
    assert (other, "not identifiable") in again.removed and kept_twin in again.kept
