"""Linear least-squares estimation of base parameters and its statistics.

The identification model sampled over ``N`` instants is ``Y = W χ + ρ`` ([Gautier2013]
eq. (14)) with the observation matrix ``W`` of shape ``(N, n, p)`` (sample, joint
equation, parameter) and the measured torques ``Y`` of shape ``(N, n)``. Every
estimator stacks the rows into the ``(N·n, p)`` system, optionally divides each row
by the standard deviation of its error (weighted least squares, [Gautier2013] eq. (20);
[Volkmann2020] eq. (7)-(9)) and solves it by a QR factorisation, never by the normal
equations, so the accuracy is that of ``cond(W)`` and not of ``cond(W)²``.

Statistics follow [Gautier2013] §IV.A: the error variance ``σ̂_ρ²`` of the (weighted)
system (eq. (17)), the covariance ``σ̂_ρ² (WᵀW)⁻¹`` (eq. (18)) computed as
``σ̂_ρ² R⁻¹R⁻ᵀ`` from the R factor, the relative standard deviations ``%σ`` (eq. (19)),
and the model errors per joint ``e_j`` and ``e*_j`` of [Volkmann2020] eq. (11)-(12).
Essential parameters are obtained by the iterative removal of [Gautier2013] §V.B
(Pham & Gautier).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from dynamic_identification.core.errors import DataError, IdentificationError, RankDeficientError
from dynamic_identification.core.estimation.normal_equations import NormalEquations
from dynamic_identification.core.estimation.quality import JointErrors, relative_norm, relative_std_percent
from dynamic_identification.core.estimation.reduction import reduce_parameters

_EXACT_DATA_FLOOR = float(np.sqrt(np.finfo(float).eps))
"""Smallest per-joint error std, relative to the largest one, used as a weight (≈1.5e-8)."""

_ROUNDING_LEVEL = 1e3 * float(np.finfo(float).eps)
"""Per-joint error std, relative to the RMS torque of that joint, treated as an exact fit."""

_RANK_TOLERANCE = 1e-8
"""Default relative threshold on ``|R_kk|`` below which a column is dependent."""

GATHER_ROWS = 2048
"""Rows of one joint's equations that :func:`sparse_joint_triangle` gathers, transposes and factorises at a time
(about 1 MB of ``W``)."""


@dataclass(frozen=True)
class _PivotedQR:
    """``A D P = Q R``: ``D`` scales the columns of ``A`` to unit norm, ``P`` is the pivoting.

    ``projected`` is ``Qᵀ b`` for the right-hand side given to :func:`_pivoted_qr`
    (``Q`` itself is never formed).
    """

    r: np.ndarray
    pivots: np.ndarray
    norms: np.ndarray
    projected: np.ndarray

    def dependent(self, tolerance: float) -> np.ndarray:
        """Columns pivoted after the numerical rank (``|R_kk| < tolerance · |R_00|``)."""
        diagonal = np.abs(np.diag(self.r))
        if diagonal[0] == 0.0:
            return self.pivots.copy()
        rank = int(np.count_nonzero(diagonal >= tolerance * diagonal[0]))
        return self.pivots[rank:]


def _pivoted_qr(a: np.ndarray, b: np.ndarray | None = None) -> _PivotedQR:
    """Pivoted QR of ``a`` with unit-norm columns; zero columns stay zero and pivot last."""
    norms = np.linalg.norm(a, axis=0)
    norms = np.where(norms > 0.0, norms, 1.0)
    if b is None:
        r, pivots = scipy.linalg.qr(a / norms, mode="r", pivoting=True)
        return _PivotedQR(r=r[: a.shape[1]], pivots=pivots, norms=norms, projected=np.empty(0))
    projected, r, pivots = scipy.linalg.qr_multiply(a / norms, b[None, :], mode="right", pivoting=True)
    return _PivotedQR(r=r, pivots=pivots, norms=norms, projected=projected[0])


@dataclass(frozen=True)
class LeastSquaresResult:
    """Estimate ``χ̂`` of ``Y = W χ + ρ`` with its statistics ([Gautier2013] eq. (15)-(19)).

    Attributes
    ----------
    parameters : numpy.ndarray
        Estimate ``χ̂``, shape ``(p,)``, in the units of the parameters (SI).
    std : numpy.ndarray
        Standard deviations ``σ_χ̂``, shape ``(p,)``: square roots of the diagonal of
        :attr:`covariance` ([Gautier2013] eq. (18)).
    relative_std_percent : numpy.ndarray
        ``%σ = 100 σ_χ̂ / |χ̂|`` ([Gautier2013] eq. (19)), shape ``(p,)``; ``inf`` where ``χ̂ == 0``.
    covariance : numpy.ndarray
        ``σ̂_ρ² (WᵀW)⁻¹`` of the weighted system, shape ``(p, p)`` ([Gautier2013] eq. (18)).
    residual_std : float
        ``σ̂_ρ`` of the weighted system, ``‖Y − Wχ̂‖ / sqrt(r − b)`` with ``r = N·n`` rows and
        ``b = p`` parameters ([Gautier2013] eq. (17)); close to 1 when the weights are the true
        error standard deviations, in N·m for ordinary least squares.
    joint_std : numpy.ndarray
        Standard deviation of the error per joint used for weighting, N·m, shape ``(n,)``:
        ones for ordinary least squares; the root mean square of the per-sample standard
        deviations when per-sample weights were used.
    condition_number : float
        2-norm condition number of the weighted stacked observation matrix after scaling
        each of its columns to unit Euclidean norm (so parameter units do not matter).
    relative_error : float
        ``‖Y − Wχ̂‖ / ‖Y‖`` of the unweighted system over all joints ([Gautier2013] Table IV).
    joint_errors : numpy.ndarray
        Mean absolute error ``e_j`` per joint, N·m, shape ``(n,)`` ([Volkmann2020] eq. (11)).
    joint_relative_errors : numpy.ndarray
        ``e*_j = e_j / mean|τ_j|`` per joint as a fraction, not in percent ([Volkmann2020] eq. (12)).
        Both are NaN for a joint without a valid equation (it never moved).
    samples : int
        Number of samples ``N``.
    """

    parameters: np.ndarray
    std: np.ndarray
    relative_std_percent: np.ndarray
    covariance: np.ndarray
    residual_std: float
    joint_std: np.ndarray
    condition_number: float
    relative_error: float
    joint_errors: np.ndarray
    joint_relative_errors: np.ndarray
    samples: int

    def predict(self, observation_matrix: np.ndarray) -> np.ndarray:
        """Torques ``W χ̂`` predicted by the estimate, N·m.

        Parameters
        ----------
        observation_matrix : numpy.ndarray
            Observation matrix of shape ``(N, n, p)`` with the parameters of this result.

        Returns
        -------
        numpy.ndarray
            Predicted torques, shape ``(N, n)``.
        """
        w = np.asarray(observation_matrix, dtype=float)
        p = self.parameters.shape[0]
        if w.ndim != 3 or w.shape[2] != p:
            raise DataError(f"observation_matrix must have shape (N, n, {p}), got {w.shape}")
        return w @ self.parameters


@dataclass(frozen=True)
class EssentialParametersResult:
    """Outcome of the essential-parameter reduction ([Gautier2013] §V.B).

    Attributes
    ----------
    kept : numpy.ndarray
        Indices of the kept columns of the original observation matrix, increasing.
    removed : numpy.ndarray
        Indices of the removed columns, in the order they were removed.
    result : LeastSquaresResult
        Weighted estimate of the kept parameters only, ordered like :attr:`kept`.
    """

    kept: np.ndarray
    removed: np.ndarray
    result: LeastSquaresResult


def ordinary_least_squares(
    observation_matrix: np.ndarray,
    torques: np.ndarray,
    *,
    parameter_names: Sequence[str] | None = None,
    valid: np.ndarray | None = None,
) -> LeastSquaresResult:
    """Ordinary least-squares estimate ``χ̂ = W⁺ Y`` ([Gautier2013] eq. (15)-(19)).

    Parameters
    ----------
    observation_matrix : numpy.ndarray
        ``W``, shape ``(N, n, p)``.
    torques : numpy.ndarray
        Measured torques ``Y``, N·m, shape ``(N, n)``.
    parameter_names : sequence of str, optional
        ``p`` names used in error messages.
    valid : numpy.ndarray, optional
        ``(N, n)`` booleans: the equations to use; the others are left out of the
        estimate and of every statistic (e.g. a joint too slow for the Coulomb model).

    Returns
    -------
    LeastSquaresResult
        Estimate and statistics; :attr:`~LeastSquaresResult.joint_std` is all ones.

    Raises
    ------
    DataError
        On NaN/inf, mismatched shapes or fewer equations than parameters.
    RankDeficientError
        When some parameters cannot be identified from this data (the message names them).
    """
    w, y = _validated_system(observation_matrix, torques)
    names = _validated_names(parameter_names, w.shape[2])
    return _solve(w, y, np.ones_like(y), np.ones(y.shape[1]), names, _validated_mask(valid, y.shape))


@dataclass(frozen=True)
class JointFits:
    """Each joint's own ordinary least-squares fit ([Gautier2013] §IV.A): the weights of WLS and its factors.

    Attributes
    ----------
    std
        ``σ_j`` per joint, N·m, shape ``(n,)`` (:func:`joint_error_std`).
    triangles
        ``(n, p + 1, p + 1)``: ``R_j`` of the QR of each joint's valid rows ``[W_j | y_j]``, every column of
        ``W``. ``‖[W_j | y_j] v‖ = ‖R_j v‖`` for any ``v``, so a weighted least-squares problem on any subset of
        the columns has the same solution, residuals and covariance from the stacked ``R_j / σ_j`` as from the
        rows (:func:`weighted_least_squares`'s ``triangles``); zeros for a joint without valid equations.
    """

    std: np.ndarray
    triangles: np.ndarray

    def columns(self, columns: np.ndarray) -> np.ndarray:
        """The triangles' ``columns`` of ``W`` and their torque column: ``(n, p + 1, len(columns) + 1)``."""
        return self.triangles[:, :, np.append(np.asarray(columns, dtype=int), self.triangles.shape[2] - 1)]


def joint_error_std(
    observation_matrix: np.ndarray, torques: np.ndarray, *, valid: np.ndarray | None = None
) -> np.ndarray:
    """Standard deviation of the error of each joint equation ([Gautier2013] §IV.A): :func:`joint_fits`' ``std``.

    For joint ``j``, ``σ_j² = ‖Y_j − W_j χ̂_j‖² / (N − rank(W_j))`` where ``χ̂_j`` is the
    ordinary least-squares solution of joint ``j``'s own ``N`` equations. ``rank(W_j)`` is
    the numerical rank by the rule of :func:`rank_deficient_columns` (pivoted QR), so the zero
    columns of the block-triangular IDIM matrix ([Gautier2013] eq. (20)) are handled; one QR of
    each joint's rows gives both (:func:`_joint_fit`).

    A joint without valid equations gets the largest ``σ_j`` (its rows are unused).
    A joint fitted exactly (``σ_j`` at rounding level: below ``1000 eps`` times its RMS
    torque) would get an infinite weight; its ``σ_j`` is raised to ``sqrt(eps) ≈ 1.5e-8``
    times the largest ``σ_j``, which still makes its equations quasi-constraints. When every
    joint is fitted exactly all ``σ_j`` are 1 (any common weight gives the same estimate).

    Parameters
    ----------
    observation_matrix : numpy.ndarray
        ``W``, shape ``(N, n, p)``.
    torques : numpy.ndarray
        Measured torques ``Y``, N·m, shape ``(N, n)``.
    valid : numpy.ndarray, optional
        ``(N, n)`` booleans: the equations to use (all by default).

    Returns
    -------
    numpy.ndarray
        ``σ_j`` in N·m, shape ``(n,)``, all positive.

    Raises
    ------
    DataError
        On NaN/inf, mismatched shapes, or when a joint has no more samples than the rank
        of its equations (``N <= rank(W_j)``), so its error variance is undefined.
    """
    return joint_fits(observation_matrix, torques, valid=valid).std


def joint_fits(observation_matrix: np.ndarray, torques: np.ndarray, *, valid: np.ndarray | None = None) -> JointFits:
    """Each joint's own OLS fit: ``σ_j`` (:func:`joint_error_std`) and the R factor of its rows (:class:`JointFits`).

    Raises
    ------
    DataError
        As :func:`joint_error_std`.
    """
    w, y = _validated_system(observation_matrix, torques)
    mask = _validated_mask(valid, y.shape)
    n_joints, p = w.shape[1], w.shape[2]
    sigma = np.empty(n_joints)
    triangles = np.zeros((n_joints, p + 1, p + 1))
    for j in range(n_joints):
        rows = mask[:, j]
        n_samples = int(rows.sum())
        if n_samples == 0:
            sigma[j] = np.nan
            continue
        triangles[j] = sparse_joint_triangle(w, y, np.flatnonzero(rows), j)
        rank, residual = _joint_fit(triangles[j])
        y_j = y[rows, j]
        if n_samples <= rank:
            raise DataError(
                f"joint {j} has {n_samples} samples but its equations have rank {rank}: "
                "cannot estimate its error std (need more samples)"
            )
        sigma[j] = residual / np.sqrt(n_samples - rank)
        # A residual at rounding level of the torques means an exact fit, not a noise level.
        if sigma[j] <= _ROUNDING_LEVEL * np.sqrt(np.mean(y_j**2)):
            sigma[j] = 0.0
    largest = np.nanmax(sigma, initial=0.0)
    if largest == 0.0:
        return JointFits(np.ones(n_joints), triangles)
    # A joint without valid equations gets any positive weight: none of its rows is used.
    return JointFits(np.maximum(np.nan_to_num(sigma, nan=largest), _EXACT_DATA_FLOOR * largest), triangles)


def _joint_fit(triangle: np.ndarray) -> tuple[int, float]:
    """``(rank(W_j), ‖y_j − W_j χ̂_j‖)`` of one joint's equations from ``R`` ``(p + 1, p + 1)`` of the QR of
    ``[W_j | y_j]`` (:func:`sparse_joint_triangle`), with ``χ̂_j`` the least-squares solution on the independent
    columns.

    ``R D``, with ``D`` the unit-norm column scaling of :func:`rank_deficient_columns` (the norms of ``R``'s columns
    are those of the rows'), is the R of ``W_j D``, and the pivoted QR of its first ``p`` columns has the
    pivots and the diagonal of the pivoted QR of ``W_j D`` (an orthogonal ``Q`` keeps the norms pivoting looks
    at), so it gives the rank and the independent columns at the tolerance of :func:`rank_deficient_columns`.
    ``‖Qᵀ y_j − R_S x‖ = ‖y_j − W_S x‖`` for any ``x``, so the least-squares solution of ``R``'s independent
    columns against its last column gives the residual of the rows, with no second pass over them.
    """
    p = triangle.shape[0] - 1
    norms = np.linalg.norm(triangle, axis=0)
    torque_norm = float(norms[p])
    norms = np.where(norms[:p] > 0.0, norms[:p], 1.0)
    r, pivots = scipy.linalg.qr(triangle[:, :p] / norms, mode="r", pivoting=True, check_finite=False)
    dependent = _PivotedQR(r=r[:p], pivots=pivots, norms=norms, projected=np.empty(0)).dependent(_RANK_TOLERANCE)
    independent = np.setdiff1d(np.arange(p), dependent)
    rank = independent.size
    if rank == 0:
        return 0, torque_norm
    # scipy.linalg.lstsq of the unscaled columns, as the rows would have been solved: the same singular values.
    unscaled = triangle[:, independent]
    solution = scipy.linalg.lstsq(unscaled, triangle[:, p], check_finite=False)[0]
    return rank, float(np.linalg.norm(triangle[:, p] - unscaled @ solution))


def weighted_least_squares(
    observation_matrix: np.ndarray,
    torques: np.ndarray,
    *,
    joint_std: np.ndarray | None = None,
    sample_std: np.ndarray | None = None,
    parameter_names: Sequence[str] | None = None,
    valid: np.ndarray | None = None,
    triangles: np.ndarray | None = None,
    check_finite: bool = True,
) -> LeastSquaresResult:
    """Weighted least-squares estimate (IDIM-WLS, [Gautier2013] eq. (20); [Volkmann2020] eq. (7)-(9)).

    Each equation of joint ``j`` is divided by the standard deviation of its error, then
    the stacked ``(N·n, p)`` system is solved by QR. Given each joint's R factor of its rows
    (``triangles``), the QR is that of the stacked ``R_j / σ_j`` instead, which is the rows' own
    (:class:`JointFits`): the rows are then read once only, for the fitted torques.

    Parameters
    ----------
    observation_matrix : numpy.ndarray
        ``W``, shape ``(N, n, p)``.
    torques : numpy.ndarray
        Measured torques ``Y``, N·m, shape ``(N, n)``.
    joint_std : numpy.ndarray, optional
        ``σ_j`` per joint, N·m, shape ``(n,)``, positive. Computed by
        :func:`joint_error_std` (per-joint OLS) when omitted.
    sample_std : numpy.ndarray, optional
        ``σ_{j,p}`` per sample and joint, N·m, shape ``(N, n)``, positive, e.g. from the
        variance over repetitions ([Volkmann2020] eq. (7)). Replaces per-joint weighting; give
        either this or ``joint_std``, not both.
    parameter_names : sequence of str, optional
        ``p`` names used in error messages.
    valid : numpy.ndarray, optional
        ``(N, n)`` booleans: the equations to use (all by default).
    triangles : numpy.ndarray, optional
        ``(n, m, p + 1)``: ``R_j`` of each joint's valid rows ``[W_j | y_j]`` over these ``p`` columns
        (:meth:`JointFits.columns`, of the same ``valid``); needs ``joint_std``.
    check_finite : bool, optional
        Whether to check ``W`` and ``Y`` for NaN and inf; ``False`` when the caller has (as SciPy's option of
        the name): one pass over ``W`` less.

    Returns
    -------
    LeastSquaresResult
        Estimate and statistics of the weighted system.

    Raises
    ------
    DataError
        On NaN/inf, mismatched shapes, non-positive weights or fewer equations than parameters.
    RankDeficientError
        When some parameters cannot be identified from this data (the message names them).
    IdentificationError
        When both ``joint_std`` and ``sample_std`` are given.
    """
    w, y = _validated_system(observation_matrix, torques, check_finite=check_finite)
    names = _validated_names(parameter_names, w.shape[2])
    if joint_std is not None and sample_std is not None:
        raise IdentificationError("give joint_std or sample_std, not both")
    if triangles is not None and (joint_std is None or triangles.shape[::2] != (y.shape[1], w.shape[2] + 1)):
        raise IdentificationError(
            f"triangles need joint_std and the shape (n, m, p + 1) = ({y.shape[1]}, m, {w.shape[2] + 1}),"
            f" got {None if triangles is None else triangles.shape}"
        )
    mask = _validated_mask(valid, y.shape)
    if sample_std is not None:
        per_sample = _validated_std(sample_std, y.shape, "sample_std")
        per_joint = np.sqrt(np.mean(per_sample**2, axis=0))
    else:
        per_joint = _joint_weights(w, y, mask, joint_std, names)
        per_sample = np.broadcast_to(per_joint, y.shape)
    return _solve(w, y, per_sample, per_joint, names, mask, triangles)


def rank_deficient_columns(
    observation_matrix: np.ndarray, *, tolerance: float = _RANK_TOLERANCE, valid: np.ndarray | None = None
) -> np.ndarray:
    """Columns of ``W`` that cannot be identified from this data.

    Zero columns, plus the columns a pivoted QR (``scipy.linalg.qr(pivoting=True)``) of the
    stacked ``(N·n, p)`` matrix with unit-norm columns places after its numerical rank,
    i.e. at positions ``k`` with ``|R_kk| < tolerance · |R_00|``. Which member of a set of
    dependent columns is reported is decided by the pivoting (the later, weaker one).

    Parameters
    ----------
    observation_matrix : numpy.ndarray
        ``W``, shape ``(N, n, p)``, finite.
    tolerance : float, keyword-only
        Relative threshold on the diagonal of ``R``, in ``(0, 1)``; ``1e-8`` flags columns
        dependent to about 8 significant digits.
    valid : numpy.ndarray, optional
        ``(N, n)`` booleans: the equations to use (all by default).

    Returns
    -------
    numpy.ndarray
        Integer column indices, increasing (empty when ``W`` has full column rank).
    """
    w = np.asarray(observation_matrix, dtype=float)
    if w.ndim != 3:
        raise DataError(f"observation_matrix must have shape (N, n, p), got {w.shape}")
    if not np.all(np.isfinite(w)):
        raise DataError("observation_matrix contains NaN or inf")
    if not 0.0 < tolerance < 1.0:
        raise IdentificationError(f"tolerance must be in (0, 1), got {tolerance}")
    rows = _validated_mask(valid, w.shape[:2]).reshape(-1)
    factors = _pivoted_qr(w.reshape(-1, w.shape[2])[rows])
    return np.sort(factors.dependent(tolerance)).astype(int)


def essential_parameters(
    observation_matrix: np.ndarray,
    torques: np.ndarray,
    *,
    r_sigma: float = 20.0,
    joint_std: np.ndarray | None = None,
    parameter_names: Sequence[str] | None = None,
    min_parameters: int = 1,
    valid: np.ndarray | None = None,
) -> EssentialParametersResult:
    """Essential parameters by iterative removal of the worst one ([Gautier2013] §V.B, Pham & Gautier).

    Starting from the weighted estimate of all columns, while
    ``max(%σ) / min(%σ) >= r_sigma`` and more than ``min_parameters`` remain, the parameter
    with the largest ``%σ`` is removed and the reduced model re-estimated. The removal runs
    on the normal equations of the rows (:func:`~dynamic_identification.core.estimation.reduction.reduce_parameters`,
    ``method="essential"``); the estimate of the kept columns is then the QR solution of the rows.

    The joint weights ``σ_j`` are computed once, from the full model (per-joint OLS,
    :func:`joint_error_std`), unless given, and kept fixed through the iterations: the
    errors of the reduced models include the modelling error of the removed parameters,
    which must not change the weighting the ``%σ`` are compared under.

    Parameters
    ----------
    observation_matrix : numpy.ndarray
        ``W``, shape ``(N, n, p)``, full column rank.
    torques : numpy.ndarray
        Measured torques ``Y``, N·m, shape ``(N, n)``.
    r_sigma : float, keyword-only
        Stopping ratio ``r_σ > 1``; [Gautier2013] recommends 10 to 30 and uses 20.
    joint_std : numpy.ndarray, optional
        ``σ_j`` per joint, N·m, shape ``(n,)``.
    parameter_names : sequence of str, optional
        ``p`` names used in error messages.
    min_parameters : int, keyword-only
        Never keep fewer parameters than this, in ``[1, p]``.
    valid : numpy.ndarray, optional
        ``(N, n)`` booleans: the equations to use (all by default).

    Returns
    -------
    EssentialParametersResult
        Kept and removed column indices and the estimate of the kept parameters.

    Raises
    ------
    DataError, RankDeficientError
        As :func:`weighted_least_squares` on the full model.
    IdentificationError
        On an invalid ``r_sigma`` or ``min_parameters``.
    """
    w, y = _validated_system(observation_matrix, torques)
    names = _validated_names(parameter_names, w.shape[2])
    mask = _validated_mask(valid, y.shape)
    weights = _joint_weights(w, y, mask, joint_std, names)
    reduction = reduce_parameters(
        NormalEquations.from_rows(w, y, mask),
        weights,
        method="essential",
        r_sigma=r_sigma,
        min_parameters=min_parameters,
        names=names,
    )
    kept = reduction.kept
    sub_names = None if names is None else tuple(names[i] for i in kept)
    result = _solve(w[:, :, kept], y, np.broadcast_to(weights, y.shape), weights, sub_names, mask)
    removed = np.array([column for column, _ in reduction.removed], dtype=int)
    return EssentialParametersResult(kept=kept, removed=removed, result=result)


def _joint_weights(
    w: np.ndarray, y: np.ndarray, mask: np.ndarray, joint_std: np.ndarray | None, names: tuple[str, ...] | None
) -> np.ndarray:
    """``σ_j`` as given (checked), or of each joint's own OLS fit when the full model is identifiable."""
    if joint_std is not None:
        return _validated_std(joint_std, (y.shape[1],), "joint_std")
    _raise_if_rank_deficient(rank_deficient_columns(w, valid=mask), names)
    return joint_error_std(w, y, valid=mask)


def _solve(
    w: np.ndarray,
    y: np.ndarray,
    sample_std: np.ndarray,
    joint_std: np.ndarray,
    names: tuple[str, ...] | None,
    valid: np.ndarray,
    triangles: np.ndarray | None = None,
) -> LeastSquaresResult:
    """Solve the valid equations weighted by ``1 / sample_std`` by QR and compute their statistics; with each joint's
    R factor of its rows (``triangles``, weights ``1 / joint_std``), by the QR of those."""
    n_samples, _, p = w.shape
    if triangles is None:
        factors, equations = _blocked_pivoted_qr(w, y, sample_std, valid)
    else:
        equations = int(np.count_nonzero(valid))
    if equations <= p:
        raise DataError(f"only {equations} valid equations for {p} parameters")
    if triangles is not None:
        factors = _stacked_pivoted_qr(triangles, joint_std)
    _raise_if_rank_deficient(factors.dependent(_RANK_TOLERANCE), names)
    # A D P = Q R with D the inverse column norms and P the pivoting, so
    # χ̂ = D P R⁻¹ Qᵀ b and (AᵀA)⁻¹ = D P R⁻¹ R⁻ᵀ Pᵀ D.
    scaled = np.empty(p)
    scaled[factors.pivots] = scipy.linalg.solve_triangular(factors.r, factors.projected)
    parameters = scaled / factors.norms
    fitted = w @ parameters
    weighted_residual = np.where(valid, (y - fitted) / sample_std, 0.0)
    residual_std = float(np.linalg.norm(weighted_residual) / np.sqrt(equations - p))
    r_inverse = np.empty((p, p))
    r_inverse[factors.pivots] = scipy.linalg.solve_triangular(factors.r, np.eye(p))
    r_inverse /= factors.norms[:, None]
    covariance = residual_std**2 * (r_inverse @ r_inverse.T)
    std = np.sqrt(np.diag(covariance))
    singular_values = scipy.linalg.svdvals(factors.r)
    condition_number = float(singular_values[0] / singular_values[-1])
    residual = np.where(valid, y - fitted, 0.0)
    measured = np.where(valid, y, 0.0)
    errors = JointErrors.of(y, fitted, valid)
    return LeastSquaresResult(
        parameters=parameters,
        std=std,
        relative_std_percent=relative_std_percent(std, parameters),
        covariance=covariance,
        residual_std=residual_std,
        joint_std=np.array(joint_std, dtype=float),
        condition_number=condition_number,
        relative_error=relative_norm(float(np.linalg.norm(residual)), float(np.linalg.norm(measured))),
        joint_errors=errors.errors,
        joint_relative_errors=errors.relative_errors,
        samples=n_samples,
    )


QR_BLOCK_SAMPLES = 4096
"""Samples of ``W`` weighted, scaled and factorised at a time by :func:`_blocked_pivoted_qr`."""
TPQRT_BLOCK_COLUMNS = 8
"""Columns of the blocked Householder reflections of :func:`stacked_triangle` (LAPACK ``tpqrt``'s ``nb``): the
fastest of 2 to 16 on 3 k to 50 k rows of 27 and 60 columns, one BLAS thread."""


def _blocked_pivoted_qr(
    w: np.ndarray, y: np.ndarray, sample_std: np.ndarray, valid: np.ndarray
) -> tuple[_PivotedQR, int]:
    """:func:`_pivoted_qr` of the valid weighted equations ``A = W / σ``, ``b = Y / σ`` stacked ``(r, p)``, and ``r``.

    Built block by block so that no weighted copy of the whole ``W`` is made (on a
    600 k-sample recording of 6 joints ``W`` holds 139 MB, and stacking, weighting and
    factorising made three copies): the column norms in a first pass, then the ``R`` of the
    rows seen so far stacked on the next block's rows and factorised again (a
    tall-and-skinny QR), ``Qᵀ b`` carried along. The column pivoting is that of the QR of
    the final ``R``: pivoted QR chooses its columns by the norms of their projections, which
    an orthogonal ``Q`` leaves unchanged, so the pivots and ``R`` are those of the whole
    matrix (up to round-off and the signs of ``R``'s rows).
    """
    p = w.shape[2]
    blocks = [slice(start, start + QR_BLOCK_SAMPLES) for start in range(0, w.shape[0], QR_BLOCK_SAMPLES)]

    def weighted(block: slice) -> tuple[np.ndarray, np.ndarray]:
        rows = valid[block].reshape(-1)
        a = (w[block] / sample_std[block][:, :, None]).reshape(-1, p)[rows]
        return a, (y[block] / sample_std[block]).reshape(-1)[rows]

    squares = np.zeros(p)
    equations = 0
    for block in blocks:
        a, _ = weighted(block)
        squares += np.einsum("ij,ij->j", a, a)
        equations += a.shape[0]
    norms = np.sqrt(squares)
    norms = np.where(norms > 0.0, norms, 1.0)
    if equations <= p:  # refused by the caller
        return _PivotedQR(r=np.zeros((0, p)), pivots=np.arange(p), norms=norms, projected=np.zeros(0)), equations
    triangle = np.zeros((0, p + 1))
    for block in blocks:
        a, b = weighted(block)
        if a.shape[0]:
            triangle = stacked_triangle(triangle, a / norms, b)
    return _pivoted_of_triangle(triangle, norms), equations


def _stacked_pivoted_qr(triangles: np.ndarray, joint_std: np.ndarray) -> _PivotedQR:
    """:func:`_blocked_pivoted_qr` of rows whose joints' R factors ``[W_j | y_j]`` are ``triangles``
    ``(n, m, p + 1)``, weighted by ``1 / joint_std``: the QR of the stacked ``R_j / σ_j``, whose column norms and
    least-squares problems are those of the weighted rows."""
    p = triangles.shape[2] - 1
    stacked = (triangles / joint_std[:, None, None]).reshape(-1, p + 1)
    norms = np.linalg.norm(stacked[:, :p], axis=0)
    norms = np.where(norms > 0.0, norms, 1.0)
    return _pivoted_of_triangle(stacked_triangle(np.zeros((0, p + 1)), stacked[:, :p] / norms, stacked[:, p]), norms)


def _pivoted_of_triangle(triangle: np.ndarray, norms: np.ndarray) -> _PivotedQR:
    """The pivoted QR of the scaled rows whose R factor, right-hand side last, is ``triangle`` ``(p + 1, p + 1)``."""
    p = norms.size
    product, r, pivots = scipy.linalg.qr_multiply(
        triangle[:p, :p], triangle[:p, p][None, :], mode="right", pivoting=True
    )
    return _PivotedQR(r=r, pivots=pivots, norms=norms, projected=product[0])


def stacked_triangle(triangle: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``R`` ``(p + 1, p + 1)`` of the QR of ``[triangle; [a | b]]``: the rows of a tall-and-skinny QR so far,
    ``triangle`` ``(≤ p + 1, p + 1)``, stacked on the next rows ``a`` ``(m, p)`` and right-hand sides ``b`` ``(m,)``.

    With the right-hand side as the last column, ``R``'s last column holds ``Qᵀ b`` and its last diagonal entry the
    residual norm, so ``Q`` is never applied; the least-squares residual of ``b`` on any subset of ``a``'s columns
    is that of ``R``'s last column on the same columns of ``R``. Start from ``triangle`` of shape ``(0, p + 1)``;
    rows of zeros complete a shorter ``triangle`` (and ``R`` of fewer than ``p + 1`` rows), which change no
    solution or residual. LAPACK's ``tpqrt`` (the QR of a triangle over a block of rows) factorises both in place,
    with Householder reflections in blocks of :data:`TPQRT_BLOCK_COLUMNS` columns; ``geqrf`` of the stacked rows
    took 2.4 times as long on 24 k × 60 rows (``bench/bench_identify.py`` measures the whole).
    """
    p = a.shape[1]
    rows = np.empty((p + 1, a.shape[0]))  # the transpose of [a | b] in column-major order, factorised in place
    rows[:p] = a.T
    rows[p] = b
    return _triangle_of_rows(triangle, rows)


def sparse_joint_triangle(
    observation_matrix: np.ndarray, torques: np.ndarray, rows: np.ndarray, joint: int
) -> np.ndarray:
    """``R`` ``(p + 1, p + 1)`` of the QR of joint ``joint``'s equations ``[W_j | y_j]`` at the ``rows`` (indices) of
    ``observation_matrix`` ``(N, n, p)`` and ``torques`` ``(N, n)``, N·m.

    The columns zero in every one of those rows are left out of the factorisation (:func:`column_triangle`): an IDIM
    joint's equations hold none of the links before it ([Gautier2013] eq. (5)), so the later joints' QR is a
    fraction of the whole. The rows are gathered, transposed into the layout LAPACK factorises in place and stacked
    on the triangle so far :data:`GATHER_ROWS` at a time (:func:`stacked_triangle`), so no copy of the joint's
    equations is made whole (23 MB for 600 k samples of the 6-axis arm, at the peak of ``dynid identify``'s memory).
    """
    p = observation_matrix.shape[2]
    nonzero = np.zeros(p, dtype=bool)
    for first in range(0, rows.size, GATHER_ROWS):
        nonzero |= np.any(observation_matrix[rows[first : first + GATHER_ROWS], joint, :] != 0.0, axis=0)
    columns = np.flatnonzero(nonzero)
    triangle = np.zeros((0, columns.size + 1))
    for first in range(0, rows.size, GATHER_ROWS):
        block = rows[first : first + GATHER_ROWS]
        equations = np.empty((columns.size + 1, block.size))
        equations[:-1] = observation_matrix[block, joint][:, columns].T
        equations[-1] = torques[block, joint]
        triangle = _triangle_of_rows(triangle, equations)
    return triangle if columns.size == p else _embedded(triangle, columns, p)


def column_triangle(rows: np.ndarray, columns: np.ndarray, width: int) -> np.ndarray:
    """``R`` ``(width + 1, width + 1)`` of the QR of ``[a | b]`` (``a`` ``(m, width)``) whose columns but ``columns``
    (increasing) are zero in every row, from those columns and ``b`` given transposed ``(len(columns) + 1, m)``
    (and overwritten).

    The rows and columns of ``R`` of the zero columns are zero, which is an ``R`` of the rows all the same
    (``RᵀR = [a | b]ᵀ[a | b]``, ``‖R v‖ = ‖[a | b] v‖``), for ``(c / width)²`` of the QR's cost with ``c`` columns.
    """
    return _embedded(_triangle_of_rows(np.zeros((0, len(columns) + 1)), rows), columns, width)


def _embedded(triangle: np.ndarray, columns: np.ndarray, width: int) -> np.ndarray:
    """``R`` ``(width + 1, width + 1)`` of ``triangle``, the R of the ``columns`` (increasing) and the right-hand side,
    with zero rows and columns in place of the others."""
    index = np.append(np.asarray(columns, dtype=int), width)
    whole = np.zeros((width + 1, width + 1))
    whole[np.ix_(index, index)] = triangle
    return whole


def _triangle_of_rows(triangle: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """:func:`stacked_triangle` of the next rows given transposed, ``[a | b]ᵀ`` ``(p + 1, m)`` in C order (their
    column-major layout for LAPACK), which it overwrites."""
    p = rows.shape[0] - 1
    top = np.zeros((p + 1, p + 1), order="F")
    top[: triangle.shape[0]] = triangle
    if not rows.shape[1]:
        return top
    factored, _, _, info = scipy.linalg.lapack.dtpqrt(
        0, min(TPQRT_BLOCK_COLUMNS, p + 1), top, rows.T, overwrite_a=True, overwrite_b=True
    )
    if info != 0:
        raise DataError(f"the QR factorisation of the equations failed (LAPACK info {info})")
    return np.triu(factored)


def _raise_if_rank_deficient(deficient: np.ndarray, names: tuple[str, ...] | None) -> None:
    if deficient.size:
        deficient = np.sort(deficient)
        labels = [str(i) for i in deficient] if names is None else [names[i] for i in deficient]
        raise RankDeficientError(
            f"observation_matrix is rank-deficient: parameters {', '.join(labels)} "
            f"(columns {deficient.tolist()}) cannot be identified from this data"
        )


def _validated_system(
    observation_matrix: np.ndarray, torques: np.ndarray, *, check_finite: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    w = np.asarray(observation_matrix, dtype=float)
    y = np.asarray(torques, dtype=float)
    if w.ndim != 3:
        raise DataError(f"observation_matrix must have shape (N, n, p), got {w.shape}")
    if y.shape != w.shape[:2]:
        raise DataError(f"torques must have shape {w.shape[:2]} (N, n) to match observation_matrix, got {y.shape}")
    if check_finite and not np.all(np.isfinite(w)):
        bad = np.argwhere(~np.isfinite(w))[0]
        raise DataError(
            f"observation_matrix contains NaN or inf (first at sample {bad[0]}, joint {bad[1]}, column {bad[2]})"
        )
    if check_finite and not np.all(np.isfinite(y)):
        bad = np.argwhere(~np.isfinite(y))[0]
        raise DataError(f"torques contains NaN or inf (first at sample {bad[0]}, joint {bad[1]})")
    if y.size <= w.shape[2]:
        raise DataError(f"need more equations than parameters: N*n = {y.size} <= p = {w.shape[2]}")
    return w, y


def _validated_names(parameter_names: Sequence[str] | None, p: int) -> tuple[str, ...] | None:
    if parameter_names is None:
        return None
    names = tuple(str(name) for name in parameter_names)
    if len(names) != p:
        raise IdentificationError(f"parameter_names must have {p} entries (one per column), got {len(names)}")
    return names


def _validated_mask(valid: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    """``valid`` as a boolean ``(N, n)`` array; all true when omitted."""
    if valid is None:
        return np.ones(shape, dtype=bool)
    mask = np.asarray(valid)
    if mask.shape != tuple(shape) or mask.dtype != bool:
        raise DataError(f"valid must be a boolean array of shape {tuple(shape)}, got {mask.dtype} {mask.shape}")
    return mask


def _validated_std(value: np.ndarray, shape: tuple[int, ...], name: str) -> np.ndarray:
    array = np.asarray(value, dtype=float)
    if array.shape != shape:
        raise DataError(f"{name} must have shape {shape}, got {array.shape}")
    if not np.all(np.isfinite(array) & (array > 0.0)):
        raise DataError(f"{name} must be finite and positive, got min {np.min(array)}")
    return array
