"""Estimation: least squares on observation matrices and on their normal equations.

* :mod:`.least_squares` — OLS and per-joint WLS on ``(N, n, p)`` observation
  matrices by QR, with the statistics of [Gautier2013] eq. (15)-(20);
* :mod:`.normal_equations` — per-joint weighted normal equations that add and
  subtract blocks of rows, the basis of the reductions and of the sliding window;
* :mod:`.reduction` — the rank check and model reduction on normal equations:
  [Volkmann2020] Algorithm 1 (sensitivity), [Gautier2013] essential parameters, or none;
* :mod:`.quality` — the per-joint model errors of [Volkmann2020] eq. (11)-(12), accumulable over blocks;
* :mod:`.recursive` — recursive least squares ([DirectDrive2012] §3.1).

The identification seam that puts them together for every regression model, and the
sliding window, are in :mod:`dynamic_identification.core.identification`.
"""

from dynamic_identification.core.estimation.least_squares import (
    EssentialParametersResult,
    JointFits,
    LeastSquaresResult,
    essential_parameters,
    joint_error_std,
    joint_fits,
    ordinary_least_squares,
    rank_deficient_columns,
    weighted_least_squares,
)
from dynamic_identification.core.estimation.normal_equations import NormalEquations, NormalSolution, solve_weighted
from dynamic_identification.core.estimation.quality import JointErrors
from dynamic_identification.core.estimation.reduction import ReductionResult, reduce_parameters

__all__ = [
    "EssentialParametersResult",
    "JointErrors",
    "JointFits",
    "LeastSquaresResult",
    "NormalEquations",
    "NormalSolution",
    "ReductionResult",
    "essential_parameters",
    "joint_error_std",
    "joint_fits",
    "ordinary_least_squares",
    "rank_deficient_columns",
    "reduce_parameters",
    "solve_weighted",
    "weighted_least_squares",
]
