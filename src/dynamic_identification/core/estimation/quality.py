"""Model errors per joint, [Volkmann2020] eq. (11)-(12), accumulated over blocks of equations.

For joint ``j`` with ``N_j`` valid equations, measured torques ``τ_j,k`` and predicted
torques ``τ̂_j,k``:

``e_j = (1 / N_j) Σ_k |τ_j,k − τ̂_j,k|`` (eq. (11)), N·m, and
``e*_j = e_j / ((1 / N_j) Σ_k |τ_j,k|)`` (eq. (12)), a fraction (not in percent).

The sums add over blocks of rows, so an estimator that sees its equations block by block
(the sliding window) gets the same figures as one that sees them all at once. The one
convention of the package for the degenerate cases:

* a joint without a valid equation (``N_j = 0``: it never moved, or only at stick
  speeds) has ``e_j = e*_j = NaN``: nothing in the data validates the model for it. A
  parameter file writes ``null`` and the feedforward gives that joint no torque;
* a joint whose valid measured torques are all zero has ``e*_j = 0`` when the model
  predicts them exactly and ``inf`` otherwise (no scale to compare the error with).

The largest predicted torque ``max |τ̂_j|`` is kept alongside, for the plausibility gate
on the torques a model predicts on its own data (:mod:`~dynamic_identification.core.mechanism.plausibility`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class JointErrors:
    """Sums behind ``e_j`` and ``e*_j`` of each joint, and the largest predicted torque.

    Attributes
    ----------
    absolute
        ``Σ_k |τ_j,k − τ̂_j,k|`` over valid equations, N·m, shape ``(n,)``.
    measured
        ``Σ_k |τ_j,k|`` over valid equations, N·m, shape ``(n,)``.
    count
        ``N_j``, valid equations per joint, shape ``(n,)``.
    peak
        ``max_k |τ̂_j,k|`` over the judged equations, N·m, shape ``(n,)``; 0 without any.
    """

    absolute: np.ndarray
    measured: np.ndarray
    count: np.ndarray
    peak: np.ndarray

    @classmethod
    def zeros(cls, n_joints: int) -> JointErrors:
        """No equation yet."""
        return cls(*(np.zeros(n_joints) for _ in range(4)))

    @classmethod
    def of(
        cls,
        measured: np.ndarray,
        predicted: np.ndarray,
        valid: np.ndarray,
        *,
        judged: np.ndarray | None = None,
    ) -> JointErrors:
        """The sums of one block of equations.

        Parameters
        ----------
        measured, predicted
            ``τ`` and ``τ̂``, N·m, shape ``(r, n)``.
        valid
            ``(r, n)`` booleans: the equations the errors count.
        judged
            ``(r, n)`` booleans: the equations the peak looks at; default ``valid``.
        """
        mask = np.asarray(valid, dtype=bool)
        peak_mask = mask if judged is None else np.asarray(judged, dtype=bool)
        residual = np.where(mask, np.abs(measured - predicted), 0.0)
        judged_magnitude = np.where(peak_mask, np.abs(predicted), 0.0)
        # Sums and maxima down the rows of a tall array with a few columns: ``sum(axis=0)`` and ``max(axis=0)`` loop
        # row by row (a window's thousand rows: 3-5 times slower than einsum, or than a maximum along contiguous rows).
        return cls(
            absolute=np.einsum("kj->j", residual),
            measured=np.einsum("kj->j", np.where(mask, np.abs(measured), 0.0)),
            count=np.einsum("kj->j", mask.astype(float)),
            peak=np.ascontiguousarray(judged_magnitude.T).max(axis=1, initial=0.0),
        )

    def __add__(self, other: JointErrors) -> JointErrors:
        return JointErrors(
            absolute=self.absolute + other.absolute,
            measured=self.measured + other.measured,
            count=self.count + other.count,
            peak=np.maximum(self.peak, other.peak),
        )

    @property
    def errors(self) -> np.ndarray:
        """``e_j`` (eq. (11)), N·m; NaN for a joint without a valid equation."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.count > 0, self.absolute / self.count, np.nan)

    @property
    def relative_errors(self) -> np.ndarray:
        """``e*_j`` (eq. (12)), a fraction; NaN without a valid equation, ``inf`` for an error of zero torques."""
        errors = self.errors
        with np.errstate(divide="ignore", invalid="ignore"):
            magnitude = self.measured / np.maximum(self.count, 1.0)
            ratio = np.where(magnitude > 0.0, errors / magnitude, np.where(errors > 0.0, np.inf, 0.0))
        return np.where(self.count > 0, ratio, np.nan)


def relative_norm(residual_norm: float, measured_norm: float) -> float:
    """``‖ρ‖ / ‖Y‖`` with ``0 / 0 = 0`` and ``x / 0 = inf`` (a zero reference signal)."""
    if measured_norm == 0.0:
        return 0.0 if residual_norm == 0.0 else float("inf")
    return residual_norm / measured_norm


def relative_std_percent(std: np.ndarray, parameters: np.ndarray) -> np.ndarray:
    """``%σ = 100 σ / |χ|`` ([Gautier2013] eq. (19)); ``inf`` where ``χ == 0``."""
    absolute = np.abs(np.asarray(parameters, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(absolute > 0.0, 100.0 * np.asarray(std, dtype=float) / absolute, np.inf)


def sigma_ratio(relative_std_percent: np.ndarray) -> float:
    """``max(%σ) / min(%σ)`` of the essential-parameter rule ([Gautier2013] §V.B); 0 when every ``%σ`` is 0
    (exact fit), ``inf`` if only the smallest is."""
    largest = float(np.max(relative_std_percent))
    smallest = float(np.min(relative_std_percent))
    if largest == 0.0:
        return 0.0
    if smallest == 0.0:
        return float("inf")
    return largest / smallest


__all__ = ["JointErrors", "relative_norm", "relative_std_percent", "sigma_ratio"]
