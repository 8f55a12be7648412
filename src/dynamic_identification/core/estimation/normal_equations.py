"""Per-joint normal equations: the sufficient statistics of a window of IDIM rows.

For joint ``j`` the rows of a window contribute ``A_j = Σ w_jᵀ w_j``,
``b_j = Σ w_jᵀ y_j``, ``c_j = Σ y_j²`` (and counts, ``Σ|y_j|``, ``Σ|w|`` for the
sensitivities of [Volkmann2020] eq. (10)). They add for a new block and subtract for an
expired one, so a sliding window costs ``O(rows · b²)`` per block instead of a
pass over the whole window. From them, for any subset of columns and any joint
weights ``1/σ_j`` ([Gautier2013] eq. (20)):

* the WLS estimate ``(Σ A_j/σ_j²) θ = Σ b_j/σ_j²`` solved by pivoted Cholesky, which
  reports the numerical rank;
* the residual norms ``‖ρ_j‖² = c_j − 2 θᵀ b_j + θᵀ A_j θ``, hence ``σ̂_ρ``, the
  covariance ([Gautier2013] eq. (17)-(18)) and relative errors per joint;
* the condition number of the column-normalised weighted observation matrix,
  ``sqrt(cond(D A D))`` with ``D = diag(A)^-1/2``.

Forming ``WᵀW`` squares the condition number: for the well-conditioned base
parameters of an excited window (``κ`` below ~1e4) the estimate still agrees with a
QR solution to about ``κ² · 1e-16``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from dynamic_identification.core.errors import DataError, RankDeficientError

BLOCK_ROWS = 8192
"""Rows summed at a time by :meth:`NormalEquations.from_rows` and :meth:`NormalEquations.from_triangles`."""

RANK_TOLERANCE = 1e-10
"""Relative pivot threshold of the pivoted Cholesky on the scaled normal matrix (≈ 1e-5 on singular values)."""

_FULL_RANK_EIGENVALUE = 2.0 * RANK_TOLERANCE
"""Smallest eigenvalue of a unit-diagonal normal matrix above which :func:`weighted_solution` knows without the pivoted
Cholesky that it has full rank: :data:`RANK_TOLERANCE` with room for the eigenvalues' round-off (``k · eps`` of a
``k × k`` matrix of unit diagonal, about 1e-14)."""


@dataclass(frozen=True)
class NormalEquations:
    """Sufficient statistics of a set of IDIM rows, per joint.

    Attributes
    ----------
    a
        ``(n, b, b)``: ``Σ w_jᵀ w_j`` per joint over valid rows.
    b
        ``(n, b)``: ``Σ w_jᵀ y_j`` (N·m units of ``y``).
    c
        ``(n,)``: ``Σ y_j²``.
    count
        ``(n,)``: number of valid equations per joint.
    abs_y
        ``(n,)``: ``Σ |y_j|`` (mean torque magnitude of [Volkmann2020] eq. (12)).
    abs_columns
        ``(b,)``: ``Σ |w|`` over all valid rows and joints ([Volkmann2020] eq. (10)).
    """

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    count: np.ndarray
    abs_y: np.ndarray
    abs_columns: np.ndarray

    @classmethod
    def zeros(cls, n_joints: int, n_parameters: int) -> NormalEquations:
        return cls(
            a=np.zeros((n_joints, n_parameters, n_parameters)),
            b=np.zeros((n_joints, n_parameters)),
            c=np.zeros(n_joints),
            count=np.zeros(n_joints),
            abs_y=np.zeros(n_joints),
            abs_columns=np.zeros(n_parameters),
        )

    @classmethod
    def from_rows(
        cls, observation_matrix: np.ndarray, torques: np.ndarray, valid: np.ndarray | None = None
    ) -> NormalEquations:
        """Statistics of rows ``W`` ``(r, n, b)``, ``Y`` ``(r, n)``; invalid equations are left out.

        Summed over blocks of :data:`BLOCK_ROWS` rows: masking the invalid equations copies the
        rows, which for a long recording would be a second ``W`` (139 MB at 600 k samples).
        """
        w = np.asarray(observation_matrix, dtype=float)
        y = np.asarray(torques, dtype=float)
        if w.ndim != 3 or y.shape != w.shape[:2]:
            raise DataError(f"need W (r, n, b) and Y (r, n), got {w.shape} and {y.shape}")
        mask = np.ones(y.shape, dtype=bool) if valid is None else np.asarray(valid, dtype=bool)
        total = cls.zeros(w.shape[1], w.shape[2])
        for start in range(0, w.shape[0], BLOCK_ROWS):
            block = slice(start, start + BLOCK_ROWS)
            weights = mask[block].astype(float)
            w_masked = w[block] * weights[:, :, None]
            y_masked = y[block] * weights
            # Per joint, (b, r) @ (r, b): one batched product, no einsum path search per block.
            per_joint = w_masked.transpose(1, 2, 0)
            total = total + cls(
                a=np.matmul(per_joint, per_joint.transpose(0, 2, 1)),
                b=np.matmul(per_joint, y_masked.T[:, :, None])[:, :, 0],
                c=np.einsum("rj,rj->j", y_masked, y_masked),
                count=weights.sum(axis=0),
                abs_y=np.abs(y_masked).sum(axis=0),
                abs_columns=np.abs(w_masked).sum(axis=(0, 1)),
            )
        return total

    @classmethod
    def from_triangles(
        cls, triangles: np.ndarray, observation_matrix: np.ndarray, torques: np.ndarray, valid: np.ndarray
    ) -> NormalEquations:
        """:meth:`from_rows` of rows whose per-joint QR is known: ``triangles`` ``(n, b + 1, b + 1)`` holds each
        joint's ``R_j`` of its valid rows ``[W_j | y_j]`` (e.g. :class:`~dynamic_identification.core.estimation.
        least_squares.JointFits`' triangles, which weighted least squares computes anyway).

        ``R_jᵀ R_j = [W_j | y_j]ᵀ [W_j | y_j]`` gives ``a``, ``b`` and ``c`` in ``O(n b³)`` instead of the
        ``O(rows · b²)`` products of :meth:`from_rows`; the counts and sums of magnitudes are still summed over the
        rows.
        """
        w = np.asarray(observation_matrix, dtype=float)
        y = np.asarray(torques, dtype=float)
        mask = np.asarray(valid, dtype=bool)
        r = np.asarray(triangles, dtype=float)
        p = w.shape[2]
        if w.ndim != 3 or y.shape != w.shape[:2] or mask.shape != y.shape or r.shape != (w.shape[1], p + 1, p + 1):
            raise DataError(
                f"need W (r, n, b), Y and valid (r, n) and triangles (n, b + 1, b + 1), got {w.shape}, {y.shape},"
                f" {mask.shape} and {r.shape}"
            )
        gram = np.matmul(r.transpose(0, 2, 1), r)
        abs_columns = np.zeros(p)
        for start in range(0, w.shape[0], BLOCK_ROWS):
            block = slice(start, start + BLOCK_ROWS)
            abs_columns += np.einsum("rj,rjb->b", mask[block].astype(float), np.abs(w[block]))
        return cls(
            a=gram[:, :p, :p],
            b=gram[:, :p, p],
            c=gram[:, p, p],
            count=mask.sum(axis=0).astype(float),
            abs_y=np.where(mask, np.abs(y), 0.0).sum(axis=0),
            abs_columns=abs_columns,
        )

    @property
    def n_joints(self) -> int:
        return int(self.c.shape[0])

    @property
    def n_parameters(self) -> int:
        return int(self.abs_columns.shape[0])

    def __add__(self, other: NormalEquations) -> NormalEquations:
        return NormalEquations(*(x + y for x, y in zip(self._fields(), other._fields(), strict=True)))

    def __sub__(self, other: NormalEquations) -> NormalEquations:
        return NormalEquations(*(x - y for x, y in zip(self._fields(), other._fields(), strict=True)))

    def without(self, part: NormalEquations) -> NormalEquations:
        """``self − part`` for ``part`` a share of these rows (a sliding window's expired block).

        The subtraction's round-off may leave a sum of squares or magnitudes slightly below zero, whose square root
        is NaN (a joint whose equations all left the window: the robot at rest, its stops masked); they are kept at
        zero or above, a joint left without equations has exactly zero sums, and so have the columns once no joint
        has any.
        """
        difference = self - part
        count = np.maximum(difference.count, 0.0)
        left = count > 0.0
        return NormalEquations(
            a=np.where(left[:, None, None], difference.a, 0.0),
            b=np.where(left[:, None], difference.b, 0.0),
            c=np.where(left, np.maximum(difference.c, 0.0), 0.0),
            count=count,
            abs_y=np.where(left, np.maximum(difference.abs_y, 0.0), 0.0),
            abs_columns=np.maximum(difference.abs_columns, 0.0)
            if left.any()
            else np.zeros_like(difference.abs_columns),
        )

    def _fields(self) -> tuple[np.ndarray, ...]:
        return (self.a, self.b, self.c, self.count, self.abs_y, self.abs_columns)

    def sensitivities(self) -> np.ndarray:
        """``c̄_i = ‖c_i‖₁ / (n N)``, the mean magnitude of each column ([Volkmann2020] eq. (10))."""
        return self.abs_columns / max(float(self.count.sum()), 1.0)


@dataclass(frozen=True)
class NormalSolution:
    """Weighted least-squares solution on a subset of columns, from normal equations.

    Attributes
    ----------
    columns
        Indices of the columns solved for.
    parameters
        Estimate ``θ`` ``(k,)``.
    covariance
        ``σ̂_ρ² (Wᵀ Σ⁻¹ W)⁻¹`` ``(k, k)`` ([Gautier2013] eq. (17)-(18) on the weighted system).
    residual_norms
        ``‖ρ_j‖`` per joint, unweighted, N·m.
    relative_errors
        ``‖ρ_j‖ / ‖y_j‖`` per joint (RMS counterpart of [Volkmann2020] eq. (12)).
    relative_error
        ``‖ρ‖ / ‖Y‖`` over all joints.
    condition_number
        Of the weighted observation matrix with unit-norm columns.
    rank
        Numerical rank of the weighted normal matrix (= ``k`` when solved).
    normal_matrix
        ``Wᵀ Σ⁻¹ W = Σ_j A_j / σ_j²`` ``(k, k)`` on the columns solved for: what a caller that goes on from the
        solution (the consistent estimate's metric) would otherwise form again.
    """

    columns: np.ndarray
    parameters: np.ndarray
    covariance: np.ndarray
    residual_norms: np.ndarray
    relative_errors: np.ndarray
    relative_error: float
    condition_number: float
    rank: int
    normal_matrix: np.ndarray

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(np.clip(np.diag(self.covariance), 0.0, None))

    @property
    def relative_std_percent(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.parameters != 0.0, 100.0 * self.std / np.abs(self.parameters), np.inf)


def weighted_normal_matrix(
    equations: NormalEquations, joint_std: np.ndarray, columns: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(Σ A_j/σ_j², Σ b_j/σ_j²)`` restricted to ``columns``."""
    weights = 1.0 / np.asarray(joint_std, dtype=float) ** 2
    index = np.asarray(columns, dtype=int)
    matrix = np.tensordot(weights, equations.a, axes=1)[np.ix_(index, index)]
    vector = weights @ equations.b[:, index]
    return matrix, vector


def numerical_rank(matrix: np.ndarray, *, tolerance: float = RANK_TOLERANCE) -> tuple[int, np.ndarray]:
    """Rank of a symmetric positive semi-definite matrix by pivoted Cholesky, and the pivot order.

    The matrix is scaled to unit diagonal first (zero diagonals count as dependent);
    the first ``rank`` pivots are independent columns.
    """
    rank, pivots, _, _ = _pivoted_cholesky(matrix, tolerance)
    return rank, pivots


def _pivoted_cholesky(matrix: np.ndarray, tolerance: float) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """``(rank, pivots, L, s)``: ``L[:rank, :rank]`` is the Cholesky factor of ``S[p, p]`` for
    ``p = pivots[:rank]``, where ``S = diag(s) · matrix · diag(s)`` has unit diagonal."""
    size = matrix.shape[0]
    diagonal = np.diag(matrix).copy()
    nonzero = diagonal > 0.0
    scale = np.where(nonzero, 1.0 / np.sqrt(np.where(nonzero, diagonal, 1.0)), 0.0)
    scaled = matrix * scale[:, None] * scale[None, :]
    scaled[np.diag_indices(size)] = np.where(nonzero, 1.0, 0.0)
    factor, pivots, rank, _ = scipy.linalg.lapack.dpstrf(scaled, lower=1, tol=tolerance)
    return int(rank), pivots[:size] - 1, factor, scale


def solve_weighted(
    equations: NormalEquations,
    joint_std: np.ndarray,
    columns: Sequence[int] | np.ndarray,
    *,
    names: Sequence[str] | None = None,
) -> NormalSolution:
    """WLS on ``columns`` from normal equations; refuses a rank-deficient subset.

    Raises
    ------
    RankDeficientError
        Naming the columns the pivoted Cholesky found dependent.
    DataError
        When there are no more equations than parameters.
    """
    matrix, vector = weighted_normal_matrix(equations, joint_std, np.arange(equations.n_parameters))
    solution, _ = weighted_solution(equations, joint_std, columns, matrix, vector, names=names)
    return solution


def weighted_solution(
    equations: NormalEquations,
    joint_std: np.ndarray,
    columns: Sequence[int] | np.ndarray,
    matrix: np.ndarray,
    vector: np.ndarray,
    *,
    names: Sequence[str] | None = None,
) -> tuple[NormalSolution, np.ndarray]:
    """:func:`solve_weighted` from weighted normal equations already formed, and ``(Σ A_j/σ_j²)⁻¹`` on ``columns``.

    ``matrix``, ``vector`` are :func:`weighted_normal_matrix` of every column with the same
    ``joint_std``: a caller that solves several subsets sums ``A_j`` over the joints once. The
    inverse is the covariance before ``σ̂_ρ²``, the start of a model that is downdated column by
    column (the sensitivity reduction). Raises as :func:`solve_weighted`.
    """
    index = np.asarray(columns, dtype=int)
    k = index.size
    total = float(equations.count.sum())
    if total <= k:
        raise DataError(f"only {total:.0f} equations for {k} parameters")
    matrix = matrix[np.ix_(index, index)]
    vector = vector[index]
    diagonal = np.sqrt(np.diag(matrix))
    positive = bool(np.all(diagonal > 0.0))
    scaled = matrix / diagonal[:, None] / diagonal[None, :] if positive else matrix
    # A column without data (a zero diagonal) is one the pivoted Cholesky finds dependent.
    eigenvalues = np.linalg.eigvalsh(scaled) if positive else np.zeros(k)
    rank = k
    # Each pivot of the pivoted Cholesky is a diagonal entry of a Schur complement of `scaled`, never below its
    # smallest eigenvalue: well above the tolerance, every column is a pivot, and the factorisation is not needed.
    if not eigenvalues[0] > _FULL_RANK_EIGENVALUE:
        rank, pivots = numerical_rank(matrix)
        if rank < k:
            dependent = sorted(int(index[i]) for i in pivots[rank:])
            labels = [names[i] for i in dependent] if names is not None else dependent
            raise RankDeficientError(f"the window does not determine parameters {labels} (rank {rank} of {k})")
    factor, info = scipy.linalg.lapack.dpotrf(scaled, lower=1)
    if info != 0:
        raise RankDeficientError(f"the normal matrix of columns {index.tolist()} is not positive definite")
    solution, _ = scipy.linalg.lapack.dpotrs(factor, vector / diagonal, lower=1)
    parameters = solution / diagonal
    residual_squares = residual_norms_squared(equations, index, parameters)
    weights = 1.0 / np.asarray(joint_std, dtype=float) ** 2
    weighted_residual = float(weights @ residual_squares)
    sigma_squared = weighted_residual / (total - k)
    lower, _ = scipy.linalg.lapack.dpotri(factor, lower=1)
    triangle = np.tril(lower)
    inverse = triangle + triangle.T
    inverse.flat[:: k + 1] *= 0.5  # the diagonal, added to itself: halving it is exact
    inverse /= diagonal[:, None]
    inverse /= diagonal[None, :]
    condition = float(np.sqrt(eigenvalues[-1] / eigenvalues[0])) if eigenvalues[0] > 0.0 else float("inf")
    norms = np.sqrt(residual_squares)
    measured = np.sqrt(equations.c)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(measured > 0.0, norms / measured, 0.0)
    total_measured = float(np.sqrt(equations.c.sum()))
    solution = NormalSolution(
        columns=index,
        parameters=parameters,
        covariance=sigma_squared * inverse,
        residual_norms=norms,
        relative_errors=relative,
        relative_error=float(np.sqrt(residual_squares.sum()) / total_measured) if total_measured > 0 else 0.0,
        condition_number=condition,
        rank=rank,
        normal_matrix=matrix,
    )
    return solution, inverse


def residual_norms_squared(equations: NormalEquations, columns: np.ndarray, parameters: np.ndarray) -> np.ndarray:
    """``‖y_j − W_j θ‖²`` per joint for ``θ`` on ``columns`` (clipped at 0 against round-off).

    ``θ`` is padded with zeros to all columns, so no sub-block of ``A_j`` is copied.
    """
    n, b = equations.n_joints, equations.n_parameters
    padded = np.zeros(b)
    padded[np.asarray(columns, dtype=int)] = parameters
    fitted = (equations.a.reshape(n * b, b) @ padded).reshape(n, b)
    squares = equations.c - 2.0 * (equations.b @ padded) + fitted @ padded
    return np.clip(squares, 0.0, None)


def joint_error_std_from_normal_equations(equations: NormalEquations) -> np.ndarray:
    """``σ_j`` of each joint's own OLS fit ([Gautier2013] §IV.A), from its normal equations.

    ``σ_j² = ‖y_j − W_j θ̂_j‖² / (N_j − rank(A_j))`` with ``θ̂_j`` the least-squares
    solution of joint ``j``'s equations on its independent columns. Joints without
    enough equations get the largest ``σ`` of the others (their rows carry no weight
    worth trusting); all zero gives ones.
    """
    n = equations.n_joints
    sigma = np.full(n, np.nan)
    for j in range(n):
        a, b = equations.a[j], equations.b[j]
        rank, pivots, factor, scale = _pivoted_cholesky(a, RANK_TOLERANCE)
        dof = equations.count[j] - rank
        if dof <= 0:
            continue
        parameters = np.zeros(b.size)
        if rank:
            independent = pivots[:rank]
            solution, _ = scipy.linalg.lapack.dpotrs(factor[:rank, :rank], b[independent] * scale[independent], lower=1)
            parameters[independent] = solution * scale[independent]
        squares = equations.c[j] - 2.0 * (b @ parameters) + parameters @ (a @ parameters)
        sigma[j] = np.sqrt(max(float(squares), 0.0) / dof)
    largest = np.nanmax(sigma, initial=0.0)
    if not largest > 0.0:
        return np.ones(n)
    return np.maximum(np.nan_to_num(sigma, nan=largest), 1e-8 * largest)
