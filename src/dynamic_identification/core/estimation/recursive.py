"""Recursive least squares (RLS) with an optional forgetting factor ([DirectDrive2012] §3.1).

[DirectDrive2012] estimates every one of its five regression models with the same recursive
least-squares algorithm and judges convergence by the evolution of the parameter
vector and of the covariance matrix ``P`` (its Figs. 2-3). For rows ``A`` (``k``
equations at once, row weights ``w``) and observations ``y`` the update is

``S = Ã P Ãᵀ + μ I``, ``K = P Ãᵀ S⁻¹``, ``θ ← θ + K (ỹ − Ã θ)``,
``P ← ((I − K Ã) P (I − K Ã)ᵀ + μ K Kᵀ) / μ``

with ``Ã = √w A``, ``ỹ = √w y`` and the forgetting factor ``μ ∈ (0, 1]`` (``μ = 1``:
no forgetting). The covariance is updated in Joseph form, which stays symmetric and
positive definite in floating point, also with a very large initial covariance.

Relation to batch least squares: started from ``θ₀`` and ``P₀ = p₀ I`` without
forgetting, RLS gives *exactly* the regularised solution
``θ = (AᵀWA + I/p₀)⁻¹ (AᵀWy + θ₀/p₀)``; it differs from the batch solution by
``(AᵀWA + I/p₀)⁻¹ (θ₀ − θ_LS)/p₀``, of relative size at most
``1 / (p₀ λ_min(AᵀWA))``, so a large ``p₀`` makes RLS converge to batch LS. A ``p₀``
far larger than needed costs accuracy instead: the first updates cancel terms of
size ``p₀``, with a relative round-off of about ``ε p₀ ‖A‖²``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynamic_identification.core.errors import DataError, IdentificationError


@dataclass(frozen=True)
class RecursiveHistory:
    """Evolution of a :class:`RecursiveLeastSquares` estimate, one row per update.

    Attributes
    ----------
    rows_seen
        Number of equations used after each update, shape ``(u,)``.
    parameters
        Estimate after each update, shape ``(u, b)`` ([DirectDrive2012] Fig. 2).
    covariance_diagonal
        Diagonal of ``P`` after each update, shape ``(u, b)``.
    covariance_trace
        ``trace P`` after each update, shape ``(u,)``.
    covariance_eigenvalues
        Eigenvalues of ``P`` (ascending) after each update, shape ``(u, b)`` ([DirectDrive2012]
        Fig. 3), or shape ``(0, b)`` unless requested.
    """

    rows_seen: np.ndarray
    parameters: np.ndarray
    covariance_diagonal: np.ndarray
    covariance_trace: np.ndarray
    covariance_eigenvalues: np.ndarray


class RecursiveLeastSquares:
    """Recursive least squares on blocks of rows, with forgetting factor.

    Parameters
    ----------
    n_parameters
        Number of parameters ``b``.
    forgetting
        Forgetting factor ``μ`` in ``(0, 1]``; 1 weighs all equations alike.
    initial_covariance
        ``p₀`` of ``P₀ = p₀ I`` (units of parameter² per unit of weighted
        observation⁻²): the prior's weight is ``1/p₀``.
    initial_parameters
        ``θ₀``, default zeros.
    history
        Record the estimate and covariance after every update (:attr:`history`).
    eigenvalues
        Also record the eigenvalues of ``P`` (an ``O(b³)`` cost per update).

    Examples
    --------
    >>> rls = RecursiveLeastSquares(2)
    >>> rls.update(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), np.array([1.0, 2.0, 3.0]))
    >>> np.round(rls.parameters, 6)
    array([1., 2.])
    """

    def __init__(
        self,
        n_parameters: int,
        *,
        forgetting: float = 1.0,
        initial_covariance: float = 1e6,
        initial_parameters: np.ndarray | None = None,
        history: bool = True,
        eigenvalues: bool = False,
    ) -> None:
        if int(n_parameters) < 1:
            raise IdentificationError(f"n_parameters must be >= 1, got {n_parameters}")
        if not (np.isfinite(forgetting) and 0.0 < forgetting <= 1.0):
            raise IdentificationError(f"forgetting must be in (0, 1], got {forgetting}")
        if not (np.isfinite(initial_covariance) and initial_covariance > 0.0):
            raise IdentificationError(f"initial_covariance must be finite and > 0, got {initial_covariance}")
        b = int(n_parameters)
        self._forgetting = float(forgetting)
        self._theta = np.zeros(b)
        if initial_parameters is not None:
            theta0 = np.asarray(initial_parameters, dtype=float)
            if theta0.shape != (b,) or not np.all(np.isfinite(theta0)):
                raise IdentificationError(f"initial_parameters must be {b} finite values, got shape {theta0.shape}")
            self._theta = theta0.copy()
        self._covariance = float(initial_covariance) * np.eye(b)
        self._rows = 0
        self._record = bool(history)
        self._record_eigenvalues = bool(eigenvalues)
        self._log: dict[str, list[np.ndarray | float | int]] = {
            "rows": [],
            "parameters": [],
            "diagonal": [],
            "trace": [],
            "eigenvalues": [],
        }

    @property
    def n_parameters(self) -> int:
        return int(self._theta.shape[0])

    @property
    def parameters(self) -> np.ndarray:
        """Current estimate ``θ``, shape ``(b,)`` (a copy)."""
        return self._theta.copy()

    @property
    def covariance(self) -> np.ndarray:
        """Current ``P``, shape ``(b, b)`` (a copy). Times the weighted error variance, the estimate's covariance."""
        return self._covariance.copy()

    @property
    def rows_seen(self) -> int:
        """Number of equations used so far."""
        return self._rows

    @property
    def history(self) -> RecursiveHistory:
        """What was recorded after each update (empty arrays when ``history=False``)."""
        b = self.n_parameters
        log = self._log
        return RecursiveHistory(
            rows_seen=np.asarray(log["rows"], dtype=int),
            parameters=np.asarray(log["parameters"], dtype=float).reshape(-1, b),
            covariance_diagonal=np.asarray(log["diagonal"], dtype=float).reshape(-1, b),
            covariance_trace=np.asarray(log["trace"], dtype=float),
            covariance_eigenvalues=np.asarray(log["eigenvalues"], dtype=float).reshape(-1, b),
        )

    def update(self, rows: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None) -> None:
        """Add ``k`` equations ``rows θ ≈ y``.

        Parameters
        ----------
        rows
            ``A``, shape ``(k, b)`` (a single row of shape ``(b,)`` is accepted).
        y
            Observations, shape ``(k,)``.
        weights
            Row weights ``w ≥ 0`` (inverse error variances), shape ``(k,)``; default ones.
        """
        b = self.n_parameters
        a = np.atleast_2d(np.asarray(rows, dtype=float))
        target = np.atleast_1d(np.asarray(y, dtype=float))
        if a.ndim != 2 or a.shape[1] != b:
            raise DataError(f"rows must have shape (k, {b}), got {np.shape(rows)}")
        if target.shape != (a.shape[0],):
            raise DataError(f"y must have shape ({a.shape[0]},), got {np.shape(y)}")
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(target))):
            raise DataError("rows and y must be finite")
        if weights is not None:
            w = np.atleast_1d(np.asarray(weights, dtype=float))
            if w.shape != target.shape or not np.all(np.isfinite(w)) or np.any(w < 0.0):
                raise DataError(f"weights must be {target.shape[0]} finite values >= 0, got {np.shape(weights)}")
            root = np.sqrt(w)
            a, target = a * root[:, None], target * root
        mu = self._forgetting
        p = self._covariance
        pa = p @ a.T
        innovation_covariance = a @ pa + mu * np.eye(a.shape[0])
        gain = np.linalg.solve(innovation_covariance, pa.T).T
        self._theta = self._theta + gain @ (target - a @ self._theta)
        reduce = np.eye(b) - gain @ a
        p = (reduce @ p @ reduce.T + mu * gain @ gain.T) / mu
        self._covariance = 0.5 * (p + p.T)
        self._rows += a.shape[0]
        if self._record:
            self._log["rows"].append(self._rows)
            self._log["parameters"].append(self._theta.copy())
            self._log["diagonal"].append(np.diag(self._covariance).copy())
            self._log["trace"].append(float(np.trace(self._covariance)))
            if self._record_eigenvalues:
                self._log["eigenvalues"].append(np.linalg.eigvalsh(self._covariance))


def recursive_estimate(
    observation_matrix: np.ndarray,
    torques: np.ndarray,
    *,
    valid: np.ndarray | None = None,
    joint_std: np.ndarray | None = None,
    forgetting: float = 1.0,
    initial_covariance: float = 1e6,
    history: bool = True,
    eigenvalues: bool = False,
) -> RecursiveLeastSquares:
    """Run RLS over an ``(N, n, b)`` observation matrix, one sample (its ``n`` equations) per update.

    ``valid`` ``(N, n)`` drops equations; ``joint_std`` ``(n,)`` weights equation
    ``j`` by ``1 / joint_std[j]²`` (the per-joint WLS of [Gautier2013] eq. (20), applied
    recursively).
    """
    w = np.asarray(observation_matrix, dtype=float)
    y = np.asarray(torques, dtype=float)
    if w.ndim != 3 or y.shape != w.shape[:2]:
        raise DataError(f"observation_matrix (N, n, b) and torques (N, n) disagree: {w.shape}, {y.shape}")
    mask = np.ones(y.shape, dtype=bool) if valid is None else np.asarray(valid, dtype=bool)
    if mask.shape != y.shape:
        raise DataError(f"valid must have shape {y.shape}, got {mask.shape}")
    weights = np.ones(y.shape[1])
    if joint_std is not None:
        std = np.asarray(joint_std, dtype=float)
        if std.shape != (y.shape[1],) or not np.all(std > 0.0):
            raise DataError(f"joint_std must be {y.shape[1]} values > 0, got {np.shape(joint_std)}")
        weights = std**-2
    rls = RecursiveLeastSquares(
        w.shape[2],
        forgetting=forgetting,
        initial_covariance=initial_covariance,
        history=history,
        eigenvalues=eigenvalues,
    )
    for k in range(w.shape[0]):
        use = mask[k]
        if use.any():
            rls.update(w[k, use], y[k, use], weights[use])
    return rls


__all__ = ["RecursiveHistory", "RecursiveLeastSquares", "recursive_estimate"]
