"""The HTML report's data of an identification (``dynid identify --report DIR``).

:func:`identification_report` fills :class:`~dynamic_identification.io.report.ReportData`
from the seam's result, the training recording and every held-out recording
(:class:`~dynamic_identification.io.outcome.Validation`): measured against predicted
torques (NaN where the model predicts nothing: stretches too short between gaps, joints
without equations), the parameter table with ``%σ``, the removed parameters, the quality
figures, physical consistency ([Wensing2018]), plausibility, warnings, every setting
used and the joints' limits for the coverage table.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

import numpy as np

from dynamic_identification.core.identification.settings import IdentificationSettings, settings_record
from dynamic_identification.core.identification.solve import IdentificationResult
from dynamic_identification.core.mechanism.seam import Mechanism
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.io.outcome import (
    NOT_CONSISTENT,
    ConsistencyCost,
    ConsistentModel,
    Validation,
    link_comparisons,
)
from dynamic_identification.io.report import (
    Consistency,
    DataSeries,
    ParameterRow,
    Plausibility,
    Quality,
    ReportData,
)

EPOCH_AFTER_S = 1e8
"""A stamp later than this (s, about 1973) is read as Unix time and printed as a UTC date."""


def data_time_text(stamp: float) -> str:
    """How ``dynid`` prints a data-time stamp (s): a UTC date for Unix time, else seconds of the recording's clock
    (a simulation's)."""
    if stamp > EPOCH_AFTER_S:
        moment = datetime.datetime.fromtimestamp(stamp, tz=datetime.timezone.utc)
        return f"{moment:%Y-%m-%d %H:%M:%S} UTC"
    return f"{stamp:.6g} s of the recording's clock"


def stamp_text(stamp: float) -> str:
    """How the report prints the parameter file's stamp (:func:`data_time_text`)."""
    return f"{data_time_text(stamp)} (data time of the last sample)"


def data_series(validation: Validation, baseline: Validation | None = None) -> DataSeries:
    """Measured and predicted torques of one recording, with its motion, the joint samples its errors count
    (:attr:`Validation.moving`, so the page's figures are ``quality.validation``'s) and the URDF's own model's
    torques (``baseline``'s prediction of the same recording)."""
    recording = validation.recording
    velocity = recording.velocity
    if velocity is None:
        velocity = np.gradient(recording.position, recording.time, axis=0)
    return DataSeries(
        name=validation.name,
        time=recording.time,
        measured=validation.torques,
        predicted=validation.predicted,
        q=recording.position,
        dq=velocity,
        moving=validation.moving,
        baseline=None if baseline is None else baseline.predicted,
    )


def identification_report(
    *,
    dynamic_model: DynamicModel,
    settings: IdentificationSettings,
    result: IdentificationResult,
    training: Validation,
    validations: Sequence[Validation],
    consistent: ConsistentModel,
    warnings: Sequence[str],
    urdf: str,
    stamp: float,
    costs: Sequence[ConsistencyCost] = (),
    baselines: Sequence[Validation] = (),
    model_choices: Sequence[str] = (),
) -> ReportData:
    """The report of one identification of ``dynamic_model``: training first, then each held-out recording.

    ``urdf`` is the URDF as the parameter file names it; ``stamp`` the file's data time, s;
    ``costs`` what publishing the consistent model cost on each data set; ``baselines`` the URDF's own model
    (:func:`~dynamic_identification.io.outcome.urdf_result`) on the training and each held-out recording, in
    that order (empty: not shown); ``model_choices`` the one-line reasons of the choices of the model the data
    made (drive terms dropped, passive friction).
    """
    mechanism, drive_chain, terms = dynamic_model.mechanism, dynamic_model.drive_chain, dynamic_model.terms
    robot, controlled = mechanism.robot, mechanism.actuated
    estimate = result.estimate
    observations = result.observations
    errors = result.judged.joint_errors
    estimate_consistent = consistent.estimate
    series = [training, *validations]
    urdf_models: Sequence[Validation | None] = list(baselines) if baselines else [None] * len(series)
    # A published consistent value held at a sign bound ("Fc3 >= 0"): its %σ is σ / 0.
    bounds = (
        {constraint.split(" >= ")[0]: constraint for constraint in estimate_consistent.active if " >= " in constraint}
        if estimate_consistent is not None and consistent.enforced
        else {}
    )
    if estimate_consistent is None:
        consistency = Consistency(ok=False, problems=[f"not checked: {consistent.error}"], checked="")
    else:
        published = bool(consistent.published_consistent)
        consistency = Consistency(
            ok=published,
            problems=(
                []
                if published or not estimate_consistent.active
                else ["at their bound in the nearest consistent model: " + ", ".join(estimate_consistent.active)]
            ),
            cost_increase=None if published else estimate_consistent.cost_increase,
            shift_sigma=None if published else estimate_consistent.shift_sigma,
            checked="the identified parameters of the table; standard_parameters and --urdf-out hold the nearest"
            " physically consistent model",
            costs=tuple(costs),
            bodies=link_comparisons(robot, terms, consistent),
        )
    return ReportData(
        title=f"Identification of {robot.model.name}{_mechanism_title(mechanism)}",
        robot_name=robot.model.name,
        urdf=urdf,
        joints=mechanism.actuated_joint_names,
        body_joints=robot.joint_names,
        parameters=[
            ParameterRow(
                name=name,
                value=float(value),
                std_percent=float(percent),
                expression=expression,
                std=float(std),
                bound=bounds.get(name, ""),
            )
            for name, value, percent, std, expression in zip(
                result.names,
                estimate.parameters,
                estimate.relative_std_percent,
                estimate.std,
                result.expressions,
                strict=True,
            )
        ],
        removed=list(result.removed),
        datasets=[data_series(data, baseline) for data, baseline in zip(series, urdf_models, strict=True)],
        quality=Quality(
            condition_number=float(estimate.condition_number),
            relative_error=float(estimate.relative_error),
            joint_errors=errors.errors,
            joint_relative_errors=errors.relative_errors,
            samples=int(observations.input_samples),
            rate_hz=float(observations.rate_hz),
            decimation=int(observations.decimation),
            equations=int(observations.observation_matrix.shape[0]),
            window_s=float(training.recording.time[-1] - training.recording.time[0]),
        ),
        settings={
            "regression_model": result.model,
            **settings_record(settings),
            "drive_chain": {
                "gear_ratios": drive_chain.gear_ratios.tolist(),
                "drive_gains": drive_chain.drive_gains.tolist(),
            },
            "drive_terms": {name: True for name in terms.names},
        },
        consistency=consistency,
        plausibility=Plausibility(ok=result.judged.plausible, problems=list(result.judged.problems)),
        # The page says "not physically consistent" itself, pointing to its section.
        warnings=[warning for warning in warnings if not warning.startswith(NOT_CONSISTENT)],
        lower_limits=robot.lower_position_limits[controlled],
        upper_limits=robot.upper_position_limits[controlled],
        velocity_limits=robot.velocity_limits[controlled],
        min_speed_rad_s=settings.signal.min_speed_rad_s,
        stamp=stamp_text(stamp),
        model_choices=tuple(model_choices),
    )


def _mechanism_title(mechanism: Mechanism) -> str:
    """`` (closed loop: …)`` naming the loop closures of the opened tree ([Briot2012] §2); empty without any."""
    if not mechanism.closures:
        return ""
    closures = ", ".join(f"{c.frame_a}-{c.frame_b} ({c.type})" for c in mechanism.closures)
    return f" (closed loop, closures {closures} from the configuration)"


__all__ = ["EPOCH_AFTER_S", "data_series", "data_time_text", "identification_report", "stamp_text"]
