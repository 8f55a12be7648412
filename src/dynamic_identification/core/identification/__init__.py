"""Identification: from recorded samples to base parameters with their quality, offline and in-process.

* :mod:`.settings` — signal-processing and estimation settings;
* :mod:`.motion` — stamps, resampling, band-pass derivatives ([Gautier2013] §IV.A);
* :mod:`.observations` — the IDIM's decimated rows (one builder per regression model; the
  others are in :mod:`~dynamic_identification.core.regressors.power` and
  :mod:`~dynamic_identification.core.identification.regression_models`);
* :mod:`.solve` — the seam every model goes through: estimate, reduce, quality;
* :mod:`.prediction` — torques of an identified model and their errors against a recording;
* :mod:`.in_process` — the sliding-window estimator, which runs the seam's reduction and
  quality steps on normal equations ([Volkmann2020]).
"""

from dynamic_identification.core.identification.in_process import SlidingWindowEstimator, WindowSettings, WindowUpdate
from dynamic_identification.core.identification.motion import (
    Motion,
    check_motion,
    check_samples,
    decimation_factor,
    edge_samples,
    estimate_motion,
    resolve_signal,
)
from dynamic_identification.core.identification.observations import (
    DecimatedRows,
    PreparedObservations,
    RowBuilder,
    prepare_observations,
    slow_equations,
)
from dynamic_identification.core.identification.prediction import (
    Samples,
    TorqueCheck,
    predict_at_stamps,
    predict_torques,
    stamp_torque_check,
    torque_errors,
    torques_along,
)
from dynamic_identification.core.identification.settings import (
    METHODS,
    REDUCTIONS,
    UNCERTAINTIES,
    IdentificationSettings,
    ReductionSettings,
    SignalSettings,
)
from dynamic_identification.core.identification.solve import (
    IdentificationResult,
    Quality,
    RecursiveSettings,
    checked_samples,
    identify,
    identify_observations,
)

__all__ = [
    "METHODS",
    "REDUCTIONS",
    "UNCERTAINTIES",
    "DecimatedRows",
    "IdentificationResult",
    "IdentificationSettings",
    "Motion",
    "PreparedObservations",
    "Quality",
    "RecursiveSettings",
    "ReductionSettings",
    "RowBuilder",
    "Samples",
    "SignalSettings",
    "SlidingWindowEstimator",
    "TorqueCheck",
    "WindowSettings",
    "WindowUpdate",
    "check_motion",
    "check_samples",
    "checked_samples",
    "decimation_factor",
    "edge_samples",
    "estimate_motion",
    "resolve_signal",
    "identify",
    "identify_observations",
    "predict_at_stamps",
    "predict_torques",
    "torques_along",
    "prepare_observations",
    "slow_equations",
    "stamp_torque_check",
    "torque_errors",
]
