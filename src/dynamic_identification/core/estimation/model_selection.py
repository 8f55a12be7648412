"""The house rule for optional model terms: a default-on term is taken only when the data choose it.

A richer model (a transmission efficiency per motor, bearing friction in a closed-loop robot's
passive joints) is published by default only when its extra unknowns are determined by the data
and it explains them significantly better than the simpler model: the Wald test of "the extra
unknowns are zero" (the simpler model) with the estimate's covariance rejects at
:data:`SIGNIFICANCE`. The covariance should be the autocorrelation-consistent one
([NeweyWest1987], :func:`~dynamic_identification.core.estimation.uncertainty.hac_covariance`): the
residuals of filtered, decimated rows are correlated in time, and the white covariance would make
almost any term look significant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynamic_identification.core.errors import RankDeficientError

SIGNIFICANCE = 1e-3
"""Level of the Wald test a default-on term must pass to be taken: on data without it, it is taken in about one
identification in a thousand."""


@dataclass(frozen=True)
class WaldTest:
    """The Wald test of linear restrictions ``R x = 0`` on an estimate ``x̂`` with covariance ``Σ``.

    Attributes
    ----------
    statistic
        ``(R x̂)ᵀ (R Σ Rᵀ)⁻¹ (R x̂)``, χ²-distributed with ``dof`` degrees of freedom under the restrictions.
    dof
        Number of restrictions (the richer model's extra unknowns).
    p_value
        ``P(χ²_dof > statistic)``.
    """

    statistic: float
    dof: int
    p_value: float

    @property
    def significant(self) -> bool:
        """The restrictions are rejected at :data:`SIGNIFICANCE`: the richer model explains the data better."""
        return self.p_value < SIGNIFICANCE

    def describe(self, restrictions: str) -> str:
        """``"Wald χ² of {restrictions} 12.1 for 10 extra unknowns, p = 0.28"``."""
        return f"Wald χ² of {restrictions} {self.statistic:.4g} for {self.dof} extra unknowns, p = {self.p_value:.2g}"


def wald_test(estimate: np.ndarray, covariance: np.ndarray, restrictions: np.ndarray) -> WaldTest:
    """The Wald test of ``restrictions @ x = 0`` at ``estimate`` (``(k,)``) with ``covariance`` (``(k, k)``).

    ``restrictions`` is ``(d, k)``, one restriction a row (e.g. a unit row per extra unknown: "it is zero").

    Raises
    ------
    RankDeficientError
        When the covariance of the restricted combinations is singular or the statistic is not finite (the
        extra unknowns are not determined).
    """
    matrix = np.atleast_2d(np.asarray(restrictions, dtype=float))
    difference = matrix @ np.asarray(estimate, dtype=float)
    try:
        statistic = float(difference @ np.linalg.solve(matrix @ covariance @ matrix.T, difference))
    except np.linalg.LinAlgError as error:
        raise RankDeficientError("the covariance of the extra unknowns is singular") from error
    if not np.isfinite(statistic):
        raise RankDeficientError("the extra unknowns have no finite σ")
    dof = int(matrix.shape[0])
    # Imported here: the nodes that load the drive-gain models but never test one do not load scipy.stats (issue 26).
    import scipy.stats

    return WaldTest(statistic=statistic, dof=dof, p_value=float(scipy.stats.chi2.sf(statistic, dof)))


def unit_restrictions(size: int, indices: np.ndarray | list[int]) -> np.ndarray:
    """``(d, size)`` rows of :func:`wald_test` saying "unknown ``i`` is zero" for each of ``indices``."""
    rows = np.zeros((len(indices), size))
    rows[np.arange(len(indices)), np.asarray(indices, dtype=int)] = 1.0
    return rows
