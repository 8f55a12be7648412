"""Model reduction on per-joint normal equations: sensitivity-based ([Volkmann2020]) and essential ([Gautier2013]).

Every trial model is solved from the statistics of :class:`NormalEquations`, never by a
pass over the rows; trying to remove a parameter is a rank-one step from the current
model (``O(n b²)``, no factorisation). Three methods:

``'sensitivity'`` — Algorithm 1 of [Volkmann2020] §III.D (backward stepwise selection):

1. the columns the pivoted Cholesky of the weighted normal matrix finds dependent
   (and all-zero columns) are removed first as ``'not identifiable'`` (line 1);
2. the WLS of the identifiable model is the reference; its relative errors
   ``e*_0,j`` (lines 2-3);
3. the essential set ``E`` starts with ``forced`` ([Volkmann2020] puts the friction
   parameters there when every joint moves enough, §III.D) (line 4);
4. repeatedly the parameter of ``I \\ E`` with the lowest sensitivity ``c̄_i``
   ([Volkmann2020] eq. (10)) is removed and the rest re-estimated (lines 6-9). The removal
   is negligible — the parameter stays removed, ``'low sensitivity'`` — when for *all*
   joints ``e*_k,j <= (1 + e_tol) e*_0,j``; otherwise it is put back into the model
   and added to ``E`` (line 10). The pseudo code writes line 10 as
   ``e*_k,j / e*_0,j >= e_tol ∀j``; the text below it defines the rule used here:
   "negligible if ``e*_k,j`` is within the tolerance ``e_tol`` with respect to
   ``e*_0,j`` for all joints", i.e. a relative growth of at most ``e_tol``, compared
   always with the reference, so the reduced model's error grows by at most ``e_tol``.
   A joint fitted exactly (reference ``e*_0,j`` below ``1e-6``, e.g. noise-free data)
   has no relative scale: its reference is raised to ``1e-6``, which makes the test an
   absolute one, ``e*_k,j <= (1 + e_tol) · 1e-6``.

A model that Algorithm 1 chose on earlier data is still its outcome on new data when it still meets the rule
that accepted each removal: :func:`recheck_reduction` judges that without the trials (the sliding window keeps its
model while it does).

``'essential'`` — [Gautier2013] §V.B (Pham & Gautier): remove the parameter with the largest
``%σ`` ([Gautier2013] eq. (19)) until ``max %σ / min %σ < r_sigma``.

``'none'`` — only the rank check of step 1.

Guard for both reductions: a removal that would leave an equation column (a joint of
the IDIM) that has equations with no parameter acting on it is refused, whatever its
sensitivity or ``%σ``: the reduced model would predict zero torque there while the data
say otherwise, and every equation of that joint would be lost to the model. The column
stays in the model; :attr:`ReductionResult.refused` says which and for which joint.

The relative errors are ``e*_j = ‖ρ_j‖ / ‖y_j‖`` (:attr:`NormalSolution.relative_errors`),
the RMS counterpart of [Volkmann2020] eq. (11)-(12): the mean absolute errors of eq. (11)-(12)
need the rows, which the normal equations do not keep; the caller computes them for the
final model (e.g. :func:`~dynamic_identification.core.estimation.least_squares.weighted_least_squares`
on the kept columns gives ``joint_relative_errors``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from dynamic_identification.core.errors import DataError, IdentificationError, RankDeficientError
from dynamic_identification.core.estimation.normal_equations import (
    RANK_TOLERANCE,
    NormalEquations,
    NormalSolution,
    numerical_rank,
    residual_norms_squared,
    weighted_normal_matrix,
    weighted_solution,
)
from dynamic_identification.core.estimation.quality import relative_std_percent, sigma_ratio
from dynamic_identification.core.settings_schema import REDUCTIONS

METHODS: tuple[str, ...] = REDUCTIONS
"""Reduction methods accepted by :func:`reduce_parameters` (the schema's choices of ``estimation.reduction``)."""

NOT_IDENTIFIABLE = "not identifiable"
LOW_SENSITIVITY = "low sensitivity"

_ERROR_FLOOR = 1e-6
"""Reference relative error below which a joint counts as fitted exactly.

Residual norms from normal equations (``c − 2θᵀb + θᵀAθ``) carry a round-off of about
``sqrt(eps) ≈ 1e-8`` in ``‖ρ_j‖/‖y_j‖``; a reference below this floor is raised to it,
so on exact data the tolerance becomes the absolute ``(1 + e_tol) · 1e-6``.
"""


@dataclass(frozen=True)
class ReductionResult:
    """Outcome of :func:`reduce_parameters`.

    Attributes
    ----------
    method
        ``'sensitivity'``, ``'essential'`` or ``'none'``.
    kept
        Column indices kept, increasing.
    removed
        ``(column, reason)`` in removal order; reasons are ``'not identifiable'`` (rank
        check, [Volkmann2020] Algorithm 1 line 1), ``'low sensitivity'`` (Algorithm 1) and
        ``'not essential (r_sigma=…)'`` ([Gautier2013] §V.B, with the ``%σ`` ratio at removal).
    essential
        The set ``E`` of Algorithm 1, increasing: the identifiable ``forced`` columns and
        the columns whose removal raised some ``e*_j`` beyond ``e_tol``. For
        ``'essential'`` and ``'none'``, the identifiable ``forced`` columns.
    solution
        WLS of the kept columns.
    reference
        WLS of the identifiable full model (Algorithm 1 lines 2-3).
    inverse
        ``(Σ_j A_j/σ_j²)⁻¹`` of the kept columns ``(k, k)``: :attr:`solution`'s covariance before ``σ̂²``, the
        bread of a sandwich covariance (``(0, 0)`` when every column is removed).
    refused
        ``(column, equation column)`` of each removal refused because the column was
        the last one acting on that equation column (a joint of the IDIM, 0-based), in
        the order the reduction met them (module docstring).
    """

    method: str
    kept: np.ndarray
    removed: tuple[tuple[int, str], ...]
    essential: np.ndarray
    solution: NormalSolution
    reference: NormalSolution
    inverse: np.ndarray
    refused: tuple[tuple[int, int], ...] = ()


def reduce_parameters(
    equations: NormalEquations,
    joint_std: np.ndarray,
    *,
    method: str = "sensitivity",
    e_tol: float = 0.05,
    r_sigma: float = 20.0,
    forced: Sequence[int] = (),
    names: Sequence[str] | None = None,
    min_parameters: int = 1,
) -> ReductionResult:
    """Reduce the model of ``equations`` to the parameters the data needs ([Volkmann2020] Algorithm 1).

    Parameters
    ----------
    equations
        Per-joint normal equations of the window, ``b`` columns.
    joint_std
        ``σ_j`` per joint, N·m, ``(n,)``, positive: the WLS weights ``1/σ_j``
        ([Gautier2013] eq. (20)), fixed through the reduction.
    method
        ``'sensitivity'`` ([Volkmann2020] Algorithm 1), ``'essential'`` ([Gautier2013] §V.B) or
        ``'none'`` (rank check only).
    e_tol
        Allowed relative growth of every joint's relative error ``e*_j`` over the
        reference, ``> 0``; [Volkmann2020] uses 0.05 (§IV).
    r_sigma
        Stopping ratio ``max %σ / min %σ`` of ``'essential'``, ``> 1``; [Gautier2013] uses 20.
    forced
        Columns never removed by the reduction (the initial ``E``, e.g. friction when
        every joint moves); they are still removed when not identifiable.
    names
        ``b`` parameter names used in error messages.
    min_parameters
        ``'essential'`` never keeps fewer parameters than this, in ``[1, b]``.

    Returns
    -------
    ReductionResult
        Kept and removed columns with reasons, the set ``E``, and the WLS of the kept
        and of the identifiable full model.

    Raises
    ------
    IdentificationError
        On an unknown ``method``, ``e_tol <= 0``, ``r_sigma <= 1``, bad ``forced``,
        ``joint_std`` or ``names``.
    DataError
        When there are no more equations than identifiable parameters.
    RankDeficientError
        Should a trial sub-model of the identifiable columns lose positive definiteness
        to round-off (not expected: they are principal sub-blocks of a full-rank matrix).
    """
    b = equations.n_parameters
    if method not in METHODS:
        raise IdentificationError(f"method must be one of {METHODS}, got {method!r}")
    if not (np.isfinite(r_sigma) and r_sigma > 1.0):
        raise IdentificationError(f"r_sigma must be a finite ratio > 1, got {r_sigma}")
    if isinstance(min_parameters, bool) or not isinstance(min_parameters, int | np.integer):
        raise IdentificationError(f"min_parameters must be an integer, got {min_parameters!r}")
    if not 1 <= min_parameters <= b:
        raise IdentificationError(f"min_parameters must be in [1, {b}], got {min_parameters}")
    sigma, forced_mask = _checked(equations, joint_std, e_tol, forced, names)

    matrix, vector = weighted_normal_matrix(equations, sigma, np.arange(b))
    dependent = _dependent_columns(matrix, forced_mask)
    removed: list[tuple[int, str]] = [(int(i), NOT_IDENTIFIABLE) for i in dependent]
    determined = np.ones(b, dtype=bool)
    determined[dependent] = False
    identifiable = np.flatnonzero(determined)
    essential = identifiable[forced_mask[identifiable]]
    reference, reference_inverse = _solve(equations, sigma, matrix, vector, identifiable, names)

    guard = _LastParameterGuard(equations, identifiable)
    if method == "sensitivity":
        trials = _RemovalTrials(equations, matrix, vector, identifiable, reference.parameters, reference_inverse)
        kept, essential, dropped = _sensitivity_reduction(
            equations, trials, identifiable, essential, reference.relative_errors, e_tol, guard
        )
        removed += [(i, LOW_SENSITIVITY) for i in dropped]
        solution, inverse = _solve(equations, sigma, matrix, vector, kept, names)
    elif method == "essential":
        kept, dropped_essential = _essential_reduction(
            equations, sigma, matrix, vector, identifiable, forced_mask, r_sigma, min_parameters, guard
        )
        removed += dropped_essential
        solution, inverse = _solve(equations, sigma, matrix, vector, kept, names)
    else:
        kept, solution, inverse = identifiable, reference, reference_inverse
    return ReductionResult(
        method=method,
        kept=kept,
        removed=tuple(removed),
        essential=essential,
        solution=solution,
        reference=reference,
        refused=tuple(guard.refused),
        inverse=inverse,
    )


def recheck_reduction(
    previous: ReductionResult,
    equations: NormalEquations,
    joint_std: np.ndarray,
    *,
    e_tol: float = 0.05,
    forced: Sequence[int] = (),
    names: Sequence[str] | None = None,
) -> ReductionResult | None:
    """``previous``'s sensitivity-reduced model on new ``equations`` if Algorithm 1 still accepts it, else ``None``.

    Algorithm 1 compares every trial with the reference ([Volkmann2020] line 10), so the model it returns is one
    whose every joint has ``e*_j ≤ (1 + e_tol) e*_0,j`` against the identifiable full model, with every column of
    ``E`` kept. ``previous`` is still such a model on these equations when: its columns are identifiable here
    (line 1: independent, though the pivoted Cholesky of every column may leave out another member of a dependent
    set than the model did), the identifiable ``forced`` columns are all among them (line 4), every equation column
    with equations
    keeps a parameter acting on it (the guard of :func:`reduce_parameters`), and line 10 holds against these
    equations' own reference. It costs the rank check and two WLS solves, not the trials: a caller that re-selects
    only when this fails (the sliding window) keeps one model while the data still support it, instead of one
    that follows each update's noise among models equally good.

    ``joint_std``, ``e_tol``, ``forced`` and ``names`` as in :func:`reduce_parameters`. The result's ``removed`` holds
    the columns not identifiable here, then the identifiable ones left out, ``'low sensitivity'`` (line 10 holds
    without them), in ``previous``'s order; ``essential`` is ``previous``'s set ``E`` of identifiable columns with
    the identifiable ``forced`` ones; ``refused`` is empty.

    Raises
    ------
    IdentificationError
        When ``previous`` is not a ``'sensitivity'`` reduction of ``equations``' columns, or on bad ``joint_std``,
        ``forced`` or ``names``, ``e_tol`` as :func:`reduce_parameters`.
    DataError
        When there are no more equations than identifiable parameters.
    """
    b = equations.n_parameters
    if previous.method != "sensitivity":
        raise IdentificationError(f"only a 'sensitivity' reduction is re-checked, got {previous.method!r}")
    if previous.kept.size and previous.kept[-1] >= b:
        raise IdentificationError(f"the reduction kept column {int(previous.kept[-1])} of equations with {b} columns")
    sigma, forced_mask = _checked(equations, joint_std, e_tol, forced, names)
    kept = previous.kept
    matrix, vector = weighted_normal_matrix(equations, sigma, np.arange(b))
    dependent = _dependent_columns(matrix, forced_mask)
    determined = np.ones(b, dtype=bool)
    determined[dependent] = False
    included = np.zeros(b, dtype=bool)
    included[kept] = True
    if (forced_mask & determined & ~included).any():
        return None
    if not determined[kept].all():
        # Of columns dependent on one another the pivot may leave out another member than the model did: the
        # model's own columns are eliminated first, and it is refused only when they are dependent themselves.
        dependent = _dependent_columns(matrix, included)
        determined[:] = True
        determined[dependent] = False
        if not determined[kept].all():
            return None
    identifiable = np.flatnonzero(determined)
    if _LastParameterGuard(equations, identifiable).orphans(kept).size:
        return None
    reference, _ = _solve(equations, sigma, matrix, vector, identifiable, names)
    solution, inverse = _solve(equations, sigma, matrix, vector, kept, names)
    if (solution.residual_norms**2 > _residual_limits(equations, reference.relative_errors, e_tol)).any():
        return None
    left_out = determined & ~included
    removed = [(int(i), NOT_IDENTIFIABLE) for i in dependent]
    removed += [(i, LOW_SENSITIVITY) for i, _ in previous.removed if left_out[i]]
    essential = np.zeros(b, dtype=bool)
    essential[previous.essential] = True
    essential |= forced_mask
    return ReductionResult(
        method=previous.method,
        kept=kept,
        removed=tuple(removed),
        essential=np.flatnonzero(essential & determined),
        solution=solution,
        reference=reference,
        inverse=inverse,
    )


class _LastParameterGuard:
    """Refuses removing the last column that acts on an equation column with equations (module docstring).

    Column ``k`` acts on equation column ``j`` when ``a[j, k, k] > 0`` (some valid row of
    ``j`` has a non-zero entry in ``k``); an equation column needs a parameter when it has
    equations with non-zero torque (``c_j > 0``). The guard follows the model it guards: it starts
    from the columns ``index`` and is told of each removal.
    """

    def __init__(self, equations: NormalEquations, index: np.ndarray) -> None:
        self._acts = np.einsum("jkk->jk", equations.a) > 0.0
        self._needs = (equations.count > 0) & (equations.c > 0.0)
        self._acting = self._acts[:, index].sum(axis=1).astype(float)
        self._single = self._needs & (self._acting <= 1.0)
        self.refused: list[tuple[int, int]] = []

    def orphans(self, columns: np.ndarray) -> np.ndarray:
        """The equation columns with equations that none of ``columns`` acts on, increasing."""
        return np.flatnonzero(self._needs & ~self._acts[:, columns].any(axis=1))

    def allows(self, column: int) -> bool:
        """Whether ``column`` may leave the current model; records a refusal."""
        orphaned = self._single & self._acts[:, column]
        if not orphaned.any():
            return True
        self.refused.append((int(column), int(np.argmax(orphaned))))
        return False

    def remove(self, column: int) -> None:
        """The model lost ``column``."""
        self._acting = self._acting - self._acts[:, column]
        self._single = self._needs & (self._acting <= 1.0)


def _checked(
    equations: NormalEquations,
    joint_std: np.ndarray,
    e_tol: float,
    forced: Sequence[int],
    names: Sequence[str] | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The arguments both reductions share, checked: ``(σ_j, forced mask)``; raises :class:`IdentificationError`."""
    b = equations.n_parameters
    if not (np.isfinite(e_tol) and e_tol > 0.0):
        raise IdentificationError(f"e_tol must be a finite relative tolerance > 0, got {e_tol}")
    sigma = np.asarray(joint_std, dtype=float)
    if sigma.shape != (equations.n_joints,) or not np.all(np.isfinite(sigma) & (sigma > 0.0)):
        raise IdentificationError(
            f"joint_std must be {equations.n_joints} finite positive values, got {np.array2string(sigma)}"
        )
    if names is not None and len(names) != b:
        raise IdentificationError(f"names must have {b} entries (one per column), got {len(names)}")
    return sigma, _forced_mask(forced, b)


def _forced_mask(forced: Sequence[int], b: int) -> np.ndarray:
    mask = np.zeros(b, dtype=bool)
    for column in forced:
        if isinstance(column, bool) or not isinstance(column, int | np.integer) or not 0 <= column < b:
            raise IdentificationError(f"forced must hold column indices in [0, {b}), got {column!r}")
        mask[column] = True
    return mask


def _dependent_columns(matrix: np.ndarray, forced_mask: np.ndarray) -> np.ndarray:
    """Columns of the weighted normal matrix that the data does not determine, increasing.

    The pivoted Cholesky (:func:`numerical_rank`) picks which member of a dependent set
    goes; when it picks a forced column, the forced columns are eliminated first instead
    (pivoted Cholesky of their block, then of the Schur complement of the others on the
    unit-diagonal scale, same threshold), so a forced column is removed only when the
    forced columns are dependent among themselves.
    """
    rank, pivots = numerical_rank(matrix)
    dependent = pivots[rank:]
    if not forced_mask[dependent].any():
        return np.sort(dependent)
    diagonal = np.diag(matrix)
    nonzero = diagonal > 0.0
    scale = np.where(nonzero, 1.0 / np.sqrt(np.where(nonzero, diagonal, 1.0)), 0.0)
    scaled = matrix * scale[:, None] * scale[None, :]
    forced_columns = np.flatnonzero(forced_mask)
    others = np.flatnonzero(~forced_mask)
    rank_forced, pivots_forced = numerical_rank(scaled[np.ix_(forced_columns, forced_columns)])
    independent = forced_columns[pivots_forced[:rank_forced]]
    dependent_forced = forced_columns[pivots_forced[rank_forced:]]
    if others.size == 0:
        return np.sort(dependent_forced)
    block = scaled[np.ix_(independent, independent)]
    coupling = scaled[np.ix_(independent, others)]
    schur = scaled[np.ix_(others, others)]
    if independent.size:
        schur = schur - coupling.T @ scipy.linalg.solve(block, coupling, assume_a="pos")
    _, schur_pivots, rank_others, _ = scipy.linalg.lapack.dpstrf(schur, lower=1, tol=RANK_TOLERANCE)
    dependent_others = others[schur_pivots[rank_others : others.size] - 1]
    return np.sort(np.concatenate([dependent_forced, dependent_others]))


def _sensitivity_reduction(
    equations: NormalEquations,
    trials: _RemovalTrials,
    identifiable: np.ndarray,
    forced: np.ndarray,
    reference_errors: np.ndarray,
    e_tol: float,
    guard: _LastParameterGuard,
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """[Volkmann2020] Algorithm 1 lines 4-15 on the identifiable columns; returns ``(kept, E, removed)``.

    ``trials`` starts from the reference model; each trial is a rank-one step from the
    current model (:class:`_RemovalTrials`).
    """
    limit_squares = _residual_limits(equations, reference_errors, e_tol)
    essential = np.zeros(equations.n_parameters, dtype=bool)
    essential[forced] = True
    sensitivity = equations.sensitivities()
    candidates = identifiable[~essential[identifiable]]
    # c̄_i does not depend on the model, so taking the argmin of I \ E at every step
    # (line 6) visits the candidates in increasing sensitivity.
    order = candidates[np.argsort(sensitivity[candidates], kind="stable")]
    removed: list[int] = []
    for column in order:
        if not guard.allows(int(column)) or (trials.residual_squares_without(int(column)) > limit_squares).any():
            essential[column] = True
        else:
            trials.remove(int(column))
            guard.remove(int(column))
            removed.append(int(column))
    return trials.columns, np.flatnonzero(essential), removed


def _residual_limits(equations: NormalEquations, reference_errors: np.ndarray, e_tol: float) -> np.ndarray:
    """The largest ``‖ρ_j‖²`` per joint, N²·m², of a model that Algorithm 1 line 10 accepts:
    ``e*_j ≤ (1 + e_tol) e*_0,j``, the reference ``e*_0,j`` floored at :data:`_ERROR_FLOOR`."""
    threshold = (1.0 + e_tol) * np.maximum(reference_errors, _ERROR_FLOOR)
    # e*_j > threshold_j  <=>  ‖ρ_j‖² > (threshold_j ‖y_j‖)²; a joint with ‖y_j‖ = 0 has e*_j = 0.
    return np.where(equations.c > 0.0, threshold**2 * equations.c, np.inf)


class _RemovalTrials:
    """The current model of Algorithm 1 and the residuals of removing one more column from it.

    Holds the WLS solution ``θ`` and the inverse ``P`` of the weighted normal matrix of
    the included columns, zero-padded to all ``b`` columns. Removing column ``k`` gives
    the WLS of the others in closed form, ``θ' = θ − P[:, k] θ_k / P_kk`` (partitioned
    inverse), and accepting the removal downdates ``P ← P − P[:, k] P[k, :] / P_kk``:
    ``O(b)`` and ``O(b²)`` instead of a Cholesky factorisation per trial; the residual
    norms per joint come from the per-joint normal equations in ``O(n b²)``. ``P`` and
    ``θ`` start from the reference model's WLS and inverse (Algorithm 1 lines 2-3, solved
    once) and are refactored from the normal equations every :attr:`REFACTOR_EVERY`
    removals so that downdating round-off stays bounded (on a pick-and-place window
    of the shipped arm, condition number 3.8e5, the trial errors of 25 downdates in a
    row agree with a fresh factorisation to 4e-7 relative, against an ``e_tol`` of 5e-2).
    """

    REFACTOR_EVERY = 16

    def __init__(
        self,
        equations: NormalEquations,
        matrix: np.ndarray,
        vector: np.ndarray,
        columns: np.ndarray,
        parameters: np.ndarray,
        inverse: np.ndarray,
    ) -> None:
        """The model of ``columns`` with its WLS ``parameters`` and ``inverse`` of the weighted normal matrix.

        ``matrix``, ``vector`` are the weighted normal equations of all ``b`` columns, from
        which the model is refactored.
        """
        b = equations.n_parameters
        index = np.asarray(columns, dtype=int)
        self._equations = equations
        self._matrix = matrix
        self._vector = vector
        self._a = equations.a.reshape(-1, b)
        self._included = np.zeros(b, dtype=bool)
        self._included[index] = True
        self._parameters = np.zeros(b)
        self._parameters[index] = parameters
        self._inverse = np.zeros((b, b))
        self._inverse[np.ix_(index, index)] = inverse
        self._since_refactor = 0

    @property
    def columns(self) -> np.ndarray:
        """The included columns, increasing."""
        return np.flatnonzero(self._included)

    def _refactor(self) -> None:
        columns = self.columns
        self._parameters[:] = 0.0
        self._inverse[:] = 0.0
        self._since_refactor = 0
        if not columns.size:
            return
        parameters, factor, diagonal = _trial_solve(self._matrix, self._vector, columns)
        inverse, info = scipy.linalg.lapack.dpotri(factor, lower=1)
        if info != 0:
            raise RankDeficientError(f"model on columns {columns.tolist()} is not positive definite")
        inverse = (np.tril(inverse) + np.tril(inverse, -1).T) / diagonal[:, None] / diagonal[None, :]
        self._inverse[np.ix_(columns, columns)] = inverse
        self._parameters[columns] = parameters

    def _without(self, column: int) -> np.ndarray:
        if not self._included[column]:
            raise IdentificationError(f"column {column} is not in the current model")
        pivot = self._inverse[:, column]
        parameters = self._parameters - pivot * (self._parameters[column] / pivot[column])
        parameters[column] = 0.0
        return parameters

    def residual_squares_without(self, column: int) -> np.ndarray:
        """``‖ρ_j‖²`` per joint of the WLS on the included columns but ``column``, N²·m²."""
        parameters = self._without(column)
        equations = self._equations
        fitted = (self._a @ parameters).reshape(equations.n_joints, -1)
        return equations.c - 2.0 * (equations.b @ parameters) + fitted @ parameters

    def remove(self, column: int) -> None:
        """Take ``column`` out of the model."""
        self._parameters = self._without(column)
        pivot = self._inverse[:, column].copy()
        self._inverse -= np.outer(pivot, pivot / pivot[column])
        self._inverse[column, :] = 0.0
        self._inverse[:, column] = 0.0
        self._included[column] = False
        self._since_refactor += 1
        if self._since_refactor >= self.REFACTOR_EVERY:
            self._refactor()


def _trial_solve(
    matrix: np.ndarray, vector: np.ndarray, columns: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """WLS on ``columns`` from the full weighted normal equations; ``(θ, L, d)``.

    As :func:`solve_weighted`: Cholesky ``L`` of the sub-block scaled to unit diagonal by
    ``d = sqrt(diag)``, but on a slice of normal equations weighted once, not re-summed
    over the joints.
    """
    block = matrix[np.ix_(columns, columns)]
    diagonal = np.sqrt(np.diag(block))
    factor, info = scipy.linalg.lapack.dpotrf(block / diagonal[:, None] / diagonal[None, :], lower=1)
    if info != 0:
        raise RankDeficientError(f"trial model on columns {columns.tolist()} is not positive definite")
    scaled, _ = scipy.linalg.lapack.dpotrs(factor, vector[columns] / diagonal, lower=1)
    return scaled / diagonal, factor, diagonal


def _essential_reduction(
    equations: NormalEquations,
    joint_std: np.ndarray,
    matrix: np.ndarray,
    vector: np.ndarray,
    identifiable: np.ndarray,
    forced_mask: np.ndarray,
    r_sigma: float,
    min_parameters: int,
    guard: _LastParameterGuard,
) -> tuple[np.ndarray, list[tuple[int, str]]]:
    """[Gautier2013] §V.B: drop the largest ``%σ`` (never a forced column) until ``max/min %σ < r_sigma``.

    ``%σ`` as in :func:`solve_weighted` ([Gautier2013] eq. (17)-(19)), each step from a slice
    of the weighted normal equations.
    """
    weights = 1.0 / joint_std**2
    total = float(equations.count.sum())
    kept = identifiable
    removed: list[tuple[int, str]] = []
    guarded = np.zeros_like(forced_mask)
    while kept.size > min_parameters:
        parameters, factor, diagonal = _trial_solve(matrix, vector, kept)
        sigma_squared = float(weights @ residual_norms_squared(equations, kept, parameters)) / (total - kept.size)
        inverse, _ = scipy.linalg.lapack.dpotri(factor, lower=1)
        std = np.sqrt(np.clip(sigma_squared * np.diag(inverse), 0.0, None)) / diagonal
        percent = relative_std_percent(std, parameters)
        # A column the guard keeps does not hold the others back: its %σ leaves the ratio.
        free = ~guarded[kept]
        ratio = sigma_ratio(percent[free]) if free.any() else 0.0
        removable = ~(forced_mask | guarded)[kept]
        if not ratio >= r_sigma or not removable.any():  # a nan ratio (all %σ infinite) stops too
            break
        worst = int(np.argmax(np.where(removable, percent, -np.inf)))
        if not guard.allows(int(kept[worst])):
            guarded[kept[worst]] = True
            continue
        guard.remove(int(kept[worst]))
        removed.append((int(kept[worst]), f"not essential (r_sigma={ratio:.3g} >= {r_sigma:g})"))
        kept = np.delete(kept, worst)
    return kept, removed


def _solve(
    equations: NormalEquations,
    joint_std: np.ndarray,
    matrix: np.ndarray,
    vector: np.ndarray,
    columns: np.ndarray,
    names: Sequence[str] | None,
) -> tuple[NormalSolution, np.ndarray]:
    """:func:`weighted_solution` on the weighted normal equations ``matrix``, ``vector`` of all columns,
    extended to the empty model (every parameter removed, ``Ŷ = 0``).

    The empty model reports condition number 1 and relative errors 1 (0 for a joint
    whose torques are all zero).
    """
    if columns.size:
        return weighted_solution(equations, joint_std, columns, matrix, vector, names=names)
    if float(equations.count.sum()) <= 0.0:
        raise DataError("no equations to evaluate the empty model on")
    measured = np.sqrt(equations.c)
    empty = NormalSolution(
        columns=columns,
        parameters=np.zeros(0),
        covariance=np.zeros((0, 0)),
        residual_norms=measured,
        relative_errors=(measured > 0.0).astype(float),
        relative_error=1.0 if equations.c.sum() > 0.0 else 0.0,
        condition_number=1.0,
        rank=0,
        normal_matrix=np.zeros((0, 0)),
    )
    return empty, np.zeros((0, 0))
