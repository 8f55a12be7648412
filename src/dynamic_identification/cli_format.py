"""The text ``dynid`` prints for the results of :mod:`dynamic_identification.api`.

The api's verbs return what they found and wrote (frozen dataclasses); this module
turns each into the lines of the report on stdout, so that the api serves other
callers (the demo, benches, scripts) with values rather than text.
"""

from __future__ import annotations

import dataclasses
import math
import statistics

from dynamic_identification.api import (
    ExciteFileResult,
    GainsFileResult,
    IdentifyFileResult,
    PayloadFileResult,
    PlanPredictionResult,
    PredictFileResult,
    StreamFileResult,
)
from dynamic_identification.core.identification import IdentificationResult, SignalSettings
from dynamic_identification.core.identification.drive_gains import DriveGainsResult, ModelChoice
from dynamic_identification.core.identification.motion import MIN_SEGMENT_SAMPLES
from dynamic_identification.core.identification.report import format_result
from dynamic_identification.core.identification.torque_delay import later_text, window_reason
from dynamic_identification.core.mechanism.seam import Mechanism
from dynamic_identification.io.outcome import Validation, consistency_cost_line, link_lines
from dynamic_identification.io.payload import format_payload_estimate
from dynamic_identification.io.report_data import data_time_text


def mechanism_summary(mechanism: Mechanism, *, passive_recorded: bool) -> list[str]:
    """The output's line on a closed-loop robot ([Briot2012] eq. (6)-(7)); none for a serial one.

    ``passive_recorded``: the recording holds the passive joints too (checked against the closures)."""
    if not mechanism.closures:
        return []
    closures = ", ".join(f"{c.frame_a}-{c.frame_b} ({c.type})" for c in mechanism.closures)
    passive = "recorded (checked against the closures)" if passive_recorded else "from the closures"
    return [
        f"closed-loop robot ([Briot2012] eq. (6)-(7)): {mechanism.n_tree} tree joints, closures {closures},"
        f" actuated {list(mechanism.actuated_joint_names)}; passive positions {passive}"
    ]


def identify_text(identified: IdentifyFileResult) -> str:
    """The report of ``dynid identify``: the closed-loop robot, the model the data chose (drive terms, passive
    friction), the identification, its plausibility, each validation, the cost of physical consistency, the
    bodies against the URDF's, the warnings and the files written."""
    mechanism, result = identified.mechanism, identified.result
    joints = mechanism.actuated_joint_names
    lines = mechanism_summary(mechanism, passive_recorded=identified.passive_recorded)
    lines += [f"model: {reason}" for reason in identified.model_choices]
    lines += [format_result(result, joints, dropped=identified.dropped), _plausibility_line(result)]
    lines += [_validation_line(v, joints) for v in identified.validations]
    lines += [consistency_cost_line(identified.costs)] if identified.costs else []
    lines += link_lines(mechanism.robot.joint_names, identified.links)
    lines += [f"warning: {warning}" for warning in identified.warnings]
    exported = identified.urdf_export
    if exported is not None:
        kept = (
            f"; links zeroed (merged into an identified body): {', '.join(exported.zeroed)}" if exported.zeroed else ""
        )
        lines.append(
            f"URDF with the physically consistent inertias of {', '.join(exported.inertials)} and the friction of"
            f" {len(exported.dynamics)} joints written to {identified.urdf_out}{kept}"
        )
    lines.append(f"parameters written to {identified.out}")
    if identified.report is not None:
        lines.append(f"report written to {identified.report}")
    return "\n".join(lines)


def _plausibility_line(result: IdentificationResult) -> str:
    if result.judged.plausible:
        return "plausibility: ok (torques within the effort limits, physically possible values)"
    return "WARNING: implausible model written (--accept-implausible): " + "; ".join(result.judged.problems)


def _validation_line(validation: Validation, joints: tuple[str, ...]) -> str:
    """One output line per held-out recording: e_j / e*_j on its equations, then against the recorded torques."""
    entry = validation.entry(joints)

    def percent(values: dict[str, float | None]) -> str:
        return ", ".join(f"{joint} {100 * v:.2f}" if v is not None else f"{joint} -" for joint, v in values.items())

    overall = entry["recorded_relative_error"]
    total = f"{overall:.4g}" if overall is not None else "-"
    return (
        f"validation {validation.name}: e*_j [%] on its equations (as above):"
        f" {percent(entry['joint_relative_errors'])};"
        f" against the recorded torques where the joint moves ({entry['moving']} of"
        f" {entry['predicted'] * int(validation.identified.sum())} joint samples of the {entry['predicted']} of"
        f" {entry['samples']} rows predicted): e*_j [%]"
        f" {percent(entry['recorded_joint_relative_errors'])}, ||predicted - recorded|| / ||recorded|| {total}"
    )


def predict_text(predicted: PredictFileResult | PlanPredictionResult) -> str:
    """The report of ``dynid predict``: rows predicted and the file written, the signal settings used, joints
    without prediction and the error against the recorded torques (a planned motion: each joint's largest torque
    against its effort limit)."""
    if isinstance(predicted, PlanPredictionResult):
        return _plan_prediction_text(predicted)
    origin = (
        f"defaults ({predicted.params} stores none: give --config to choose)"
        if predicted.signal_from is None
        else f"from {predicted.signal_from}"
    )
    lines = [
        *mechanism_summary(predicted.mechanism, passive_recorded=predicted.passive_recorded),
        f"predicted {_predicted_rows(predicted.predicted_rows, predicted.rows)}; written to {predicted.out}",
        f"signal settings {origin}: {_signal_text(predicted.signal)}",
    ]
    if predicted.unidentified:
        lines.append(_unidentified_line(predicted.unidentified))
    if predicted.relative_error is not None:
        lines.append(_prediction_error_line(predicted))
    return "\n".join(lines)


def _prediction_error_line(predicted: PredictFileResult) -> str:
    """The error against the recorded torques where the joints move (``--validate``'s figure) first, then on every
    predicted row, saying why the two differ."""
    moving = "-" if predicted.moving_relative_error is None else f"{predicted.moving_relative_error:.4g}"
    return (
        f"relative error ||predicted - recorded|| / ||recorded||: {moving} where the joint moves ({predicted.moving}"
        f" of {predicted.joint_samples} joint samples at |q̇| >= {predicted.signal.min_speed_rad_s:g} rad/s, as"
        f" --validate counts); {predicted.relative_error:.4g} on every predicted row (at rest the model gives"
        " ±Fc by the sign of the velocity's noise, not the recorded stiction)"
        + (
            f"; the recorded torques read {later_text(predicted.torque_delay_s)}, as the identification aligned them"
            " (quality.torque_delay)"
            if predicted.torque_delay_s
            else ""
        )
    )


def _plan_prediction_text(predicted: PlanPredictionResult) -> str:
    peaks = []
    for joint, peak, limit in predicted.peaks:
        if peak is None:
            peaks.append(f"{joint} -")
            continue
        share = f" ({peak / limit:.2f} of {limit:.4g})" if math.isfinite(limit) and limit > 0 else ""
        peaks.append(f"{joint} {peak:.4g}{share}")
    lines = [
        f"predicted {predicted.rows} of {predicted.rows} rows of the planned motion {predicted.plan} (its positions,"
        f" velocities and accelerations as planned: nothing filtered) written to {predicted.out}",
        f"largest torque [N·m] (of the URDF effort limit): {', '.join(peaks)}",
    ]
    if predicted.unidentified:
        lines.append(_unidentified_line(predicted.unidentified))
    return "\n".join(lines)


def _unidentified_line(joints: tuple[str, ...]) -> str:
    return f"no prediction for {list(joints)}: the identification had no equation for them (never moved)"


def _predicted_rows(count: int, rows: int) -> str:
    """How many of the ``rows`` have a prediction (``count``), and why the others have none."""
    if count == rows:
        return f"{count} of {rows} rows"
    return (
        f"{count} of {rows} rows ({rows - count} without prediction: stretches of fewer than {MIN_SEGMENT_SAMPLES}"
        " samples between gaps)"
    )


def _signal_text(signal: SignalSettings) -> str:
    return ", ".join(f"{key}={value}" for key, value in dataclasses.asdict(signal).items())


def excite_text(excited: ExciteFileResult) -> str:
    """The report of ``dynid excite``: the plan, its condition number (of the load's regressor for a payload plan),
    torque and limit usage, warnings and the file written."""
    plan, usage = excited.plan, excited.plan.usage
    lines = [
        f"{plan.description}: {plan.trajectory.duration_s:.6g} s at {excited.rate_hz:g} Hz,"
        f" {plan.trajectory.time.shape[0]} samples",
        f"condition number of the {'payload regressor' if excited.payload else 'base observation matrix'}:"
        f" {plan.condition_number:.4g}",
        f"largest torque: {plan.torque_usage:.3f} of an effort limit ({plan.torque_source})",
        "the controller's quintic interpolation between the samples was checked at 1 kHz",
        *([plan.self_collision] if plan.self_collision else []),
        f"{'joint':<16} {'range used':>10} {'velocity':>9} {'accel.':>9} {'jerk':>9}"
        "   (fractions of the limits with margins)",
    ]
    for j, joint in enumerate(excited.joints):
        lines.append(
            f"{joint:<16} {usage.position[j]:>10.3f} {usage.velocity[j]:>9.3f} {usage.acceleration[j]:>9.3f}"
            f" {usage.jerk[j]:>9.3f}"
        )
    lines += [f"warning: {warning}" for warning in plan.warnings]
    lines += _moving_ends(excited)
    lines.append(f"trajectory written to {excited.out}")
    return "\n".join(lines)


def _moving_ends(excited: ExciteFileResult) -> list[str]:
    """A note when the trajectory starts or ends moving (a Fourier excitation does both): the excitation node ramps
    in from the robot's state and out to rest, a controller that plays the file itself must too."""
    velocities = excited.plan.trajectory.dq
    ends = []
    for what, row in (("starts", velocities[0]), ("ends", velocities[-1])):
        fastest = max(range(row.shape[0]), key=lambda j: abs(row[j]))
        if abs(row[fastest]) > 1e-9:
            ends.append(f"{what} moving ({excited.joints[fastest]} at {row[fastest]:.3g} rad/s)")
    if not ends:
        return []
    return [
        f"note: the trajectory {' and '.join(ends)}: the excitation node ramps in from the robot's state and out to"
        " rest; a controller that plays this file itself must ramp too"
    ]


def stream_text(streamed: StreamFileResult) -> str:
    """The report of ``dynid stream``: updates written, what reading the recording dropped, the last one's reduction,
    time per update against real time, and the estimate written to ``--params-out``."""
    seconds = streamed.update_seconds
    lines = [f"{len(seconds)} updates ({streamed.publishable} publishable) written to {streamed.out}"]
    if streamed.dropped:
        lines.append(f"read: {streamed.dropped}")
    last = streamed.last
    if last is not None:
        lines.append(
            f"last update: {last.reason}; condition number {last.condition_number_full:.4g} before reduction,"
            f" {last.condition_number:.4g} after; {len(last.names)} parameters kept, {len(last.removed)} removed"
        )
        if last.torque_delay is not None:
            lines.append(window_reason(last.torque_delay))
        lines.append(
            f"per update: mean {1e3 * statistics.fmean(seconds):.1f} ms, max {1e3 * max(seconds):.1f} ms;"
            f" {streamed.data_s:.6g} s of data through the window in {streamed.wall_s:.3g} s wall time"
            f" = {streamed.data_s / streamed.wall_s:.3g}x real time (the window's updates and their lines; reading"
            " the recording and building the model not counted)"
        )
    if streamed.params_out is not None:
        if streamed.published is None:
            lines.append(f"no publishable estimate: {streamed.params_out} not written")
        else:
            stamp = streamed.published.time_s
            lines.append(
                f"last publishable estimate (data time {data_time_text(stamp)},"
                f" {stamp - streamed.start_s:.6g} s after the recording's first sample)"
                f" written to {streamed.params_out}"
            )
    return "\n".join(lines)


_DRIVE_GAINS_COLUMNS = f"{'joint':<16} {'nominal':>10} {'identified':>11} {'σ':>10} {'σ %':>7}"
"""The columns of the drive-gains table every ``dynid gains`` report starts with (:func:`_drive_gain_row`)."""


def gains_text(gains: GainsFileResult) -> str:
    """The report of ``dynid gains``: the fit, a table of nominal and identified drive gains (N·m/A) with σ and
    the efficiencies, the model chosen, the residual and the file written."""
    result, known = gains.drive_gains, gains.payload
    notes = (
        [f"note: the payload file names frame {gains.payload_file_frame!r}; --frame {known.frame!r} is used"]
        if gains.payload_file_frame is not None
        else []
    )
    fit = (
        f"drive gains by IDIM-TLS ([Briot2012] eq. (13)) with a known payload of {known.mass_kg:.6g} kg on"
        f" {known.frame}: {result.samples[0]} + {result.samples[1]} decimated samples, {len(result.names)} base"
        " parameters"
    )
    lines = [
        *notes,
        *mechanism_summary(gains.mechanism, passive_recorded=gains.passive_recorded),
        f"{fit} ({len(result.removed)} not excited)",
        f"{_DRIVE_GAINS_COLUMNS} {'change %':>9}   (N·m/A)"
        + (f" {'η':>8} {'σ η':>8}" if result.efficiency is not None else ""),
    ]
    for j, joint in enumerate(gains.mechanism.actuated_joint_names):
        gain, nominal = result.drive_gains[j], result.nominal_drive_gains[j]
        eta_text = ""
        if result.efficiency is not None and result.efficiency_std is not None:
            eta, eta_std = result.efficiency[j], result.efficiency_std[j]
            eta_text = (
                f"          {eta:>8.4f} {eta_std:>8.2g}" if math.isfinite(eta_std) else f"          {'—':>8} {'':>8}"
            )
        lines.append(f"{_drive_gain_row(result, j, joint)} {100.0 * (gain / nominal - 1.0):>+9.2f}{eta_text}")
    if result.efficiency is not None:
        lines.append(
            "η: transmission efficiency ([Swevers2002] eq. (8)) from the gains while each motor drives (η k) and"
            " brakes (k / η); — a motor that only drove or only braked (one gain)"
        )
    if result.model_choice is not None:
        lines.append(_model_choice_line(result.model_choice))
    lines += [f"warning: {warning}" for warning in result.warnings]
    lines += [
        f"weighted residual σ {result.residual_std:.4g}, relative error {result.relative_error:.4g},"
        f" condition number {result.condition_number:.4g}",
        f"drive gains written to {gains.out} (give it as --config, or as --params-file after the main configuration)",
    ]
    return "\n".join(lines)


def _drive_gain_row(result: DriveGainsResult, j: int, joint: str) -> str:
    """Joint ``j``'s nominal and identified drive gain, σ and σ % (N·m/A), under :data:`_DRIVE_GAINS_COLUMNS`."""
    gain, std, nominal = result.drive_gains[j], result.drive_gains_std[j], result.nominal_drive_gains[j]
    return f"{joint:<16} {nominal:>10.5g} {gain:>11.6g} {std:>10.3g} {100.0 * std / abs(gain):>7.3f}"


def _model_choice_line(choice: ModelChoice) -> str:
    """The one line of ``dynid gains`` that says which drive model it published and why."""
    left_out = f"; not determined by the data, left out: {', '.join(choice.left_out)}" if choice.left_out else ""
    return f"model: {choice.reason}{left_out}"


def payload_text(identified: PayloadFileResult) -> str:
    """The report of ``dynid payload``: the load's mass, centre of mass and inertia with σ, the fit, the file."""
    table = format_payload_estimate(identified.estimate, identified.joints, polynomial=identified.polynomial)
    return f"{table}\npayload written to {identified.out}"
