"""Estimation: least squares on observation matrices, and their sliding-window form.

* :mod:`.least_squares` — OLS and per-joint WLS on ``(N, n, p)`` observation
  matrices with the statistics of seed 000 eq. (15)-(20) and seed 004 eq. (11)-(12),
  rank checks and essential parameters;
* :mod:`.normal_equations` — per-joint weighted normal equations that add and
  subtract blocks of rows, the basis of the in-process sliding window;
* :mod:`.reduction` — model reduction on normal equations: seed 004 Algorithm 1
  (sensitivity), seed 000 essential parameters, or none;
* :mod:`.sliding_window` — the in-process estimator (not re-exported here: it builds
  on the identification pipeline, which itself uses this package).
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
from dynamic_identification.core.estimation.normal_equations import NormalEquations, NormalSolution, solve_weighted
from dynamic_identification.core.estimation.reduction import ReductionResult, reduce_parameters

__all__ = [
    "EssentialParametersResult",
    "LeastSquaresResult",
    "NormalEquations",
    "NormalSolution",
    "ReductionResult",
    "essential_parameters",
    "joint_error_std",
    "ordinary_least_squares",
    "rank_deficient_columns",
    "reduce_parameters",
    "solve_weighted",
    "weighted_least_squares",
]
