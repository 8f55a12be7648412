"""Identification: from recorded samples to base parameters with their quality, offline and in-process.

* :mod:`.settings` — signal-processing and estimation settings;
* :mod:`.motion` — stamps, resampling, band-pass derivatives ([Gautier2013] §IV.A);
* :mod:`.observations` — the IDIM's decimated rows (one builder per regression model; the
  others are in :mod:`~dynamic_identification.core.regressors.power` and
  :mod:`~dynamic_identification.core.identification.regression_models`);
* :mod:`.torque_delay` — the torques' delay behind the positions, measured by the IDIM fit;
* :mod:`.solve` — the seam every model goes through: estimate, reduce, quality;
* :mod:`.prediction` — torques of an identified model and their errors against a recording;
* :mod:`.in_process` — the sliding-window estimator, which runs the seam's reduction and
  quality steps on normal equations ([Volkmann2020]).
"""

from typing import TYPE_CHECKING

from dynamic_identification.core.exports import lazy_exports

if TYPE_CHECKING:
    from dynamic_identification.core.identification.in_process import (
        SlidingWindowEstimator,
        WindowSettings,
        WindowUpdate,
    )
    from dynamic_identification.core.identification.motion import (
        Motion,
        check_motion,
        check_samples,
        decimation_factor,
        edge_samples,
        estimate_motion,
        joint_travel,
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

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "in_process": ("SlidingWindowEstimator", "WindowSettings", "WindowUpdate"),
        "motion": (
            "Motion",
            "check_motion",
            "check_samples",
            "decimation_factor",
            "edge_samples",
            "estimate_motion",
            "joint_travel",
            "resolve_signal",
        ),
        "observations": (
            "DecimatedRows",
            "PreparedObservations",
            "RowBuilder",
            "prepare_observations",
            "slow_equations",
        ),
        "prediction": (
            "Samples",
            "TorqueCheck",
            "predict_at_stamps",
            "predict_torques",
            "stamp_torque_check",
            "torque_errors",
            "torques_along",
        ),
        "settings": (
            "METHODS",
            "REDUCTIONS",
            "UNCERTAINTIES",
            "IdentificationSettings",
            "ReductionSettings",
            "SignalSettings",
        ),
        "solve": (
            "IdentificationResult",
            "Quality",
            "RecursiveSettings",
            "checked_samples",
            "identify",
            "identify_observations",
        ),
    },
)
