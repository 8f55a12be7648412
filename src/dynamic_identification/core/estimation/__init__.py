"""Estimation: least squares on observation matrices, and their sliding-window form.

* :mod:`.least_squares` — OLS and per-joint WLS on ``(N, n, p)`` observation
  matrices with the statistics of seed 000 eq. (15)-(20) and seed 004 eq. (11)-(12),
  rank checks and essential parameters;
* :mod:`.normal_equations` — per-joint weighted normal equations that add and
  subtract blocks of rows, the basis of the in-process sliding window.
"""

from dynamic_identification.core.estimation.least_squares import (
    EssentialParametersResult,
    LeastSquaresResult,
    essential_parameters,
    joint_error_std,
    ordinary_least_squares,
    rank_deficient_columns,
    weighted_least_squares,
)

__all__ = [
    "EssentialParametersResult",
    "LeastSquaresResult",
    "essential_parameters",
    "joint_error_std",
    "ordinary_least_squares",
    "rank_deficient_columns",
    "weighted_least_squares",
]
