"""File-level operations behind ``dynid``: read, identify, predict, report.

Each function takes paths, calls the core through the io layer and returns the
text report the CLI prints; errors propagate as
:class:`~dynamic_identification.core.errors.IdentificationError`.
"""

from __future__ import annotations

import json
import math
import time as wall_clock
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from dynamic_identification.core.errors import DataError
from dynamic_identification.core.estimation.sliding_window import SlidingWindowEstimator, WindowUpdate
from dynamic_identification.core.excitation.plan import plan_excitation
from dynamic_identification.core.identification import (
    IdentificationResult,
    IdentificationSettings,
    SignalSettings,
    estimate_motion,
    identify,
    predict_torques,
)
from dynamic_identification.core.model import DriveChain, DriveTerms, RobotModel, load_robot
from dynamic_identification.core.plausibility import ImplausibleModelError, model_problems
from dynamic_identification.core.regression_models import ModelEstimate, identify_model
from dynamic_identification.core.regressors import BaseParameters, base_parameters
from dynamic_identification.io.atomic import atomic_output, check_output_path
from dynamic_identification.io.config import IdentificationConfig, load_config, load_excitation_settings, ros_parameters
from dynamic_identification.io.parameters import (
    ParameterFile,
    identified_torque_model,
    load_parameters,
    write_parameters_atomic,
)
from dynamic_identification.io.recording import (
    Recording,
    read_recording_csv,
    recording_from_arrays,
    write_recording_csv,
)
from dynamic_identification.io.rosbag import read_recording_bag
from dynamic_identification.io.sanity import check_recording_units
from dynamic_identification.io.trajectory import write_trajectory_csv


def settings_from_config(config: IdentificationConfig) -> IdentificationSettings:
    """Core identification settings from a parsed configuration."""
    return IdentificationSettings(
        signal=SignalSettings(
            position_cutoff_hz=config.position_cutoff_hz or None,
            decimation=config.decimation,
            rate_hz=config.rate_hz or None,
            use_measured_velocity=config.use_measured_velocity,
            min_speed_rad_s=config.min_speed_rad_s,
        ),
        method=config.method,
        reduction=config.reduction,
        r_sigma=config.r_sigma,
        e_tol=config.e_tol,
        friction_motion_rad=config.friction_motion_rad,
        min_samples=config.min_samples,
    )


def read_recording_input(data: Path | None, bag: Path | None, config: IdentificationConfig) -> Recording:
    """The recording of a CSV file (``data``) or of a rosbag2 directory (``bag``: topics from ``config``)."""
    if data is not None and bag is None:
        return read_recording_csv(data)
    if bag is not None and data is None:
        return read_recording_bag(
            bag,
            joint_states_topic=config.joint_states_topic,
            currents_topic=config.currents_topic,
            effort_is_torque=config.effort_is_torque,
            joint_names=config.joints,
        )
    raise DataError(f"give exactly one of a recording CSV or a rosbag2 directory, got data={data}, bag={bag}")


def load_identification_inputs(
    urdf: Path, data: Path | None, config_path: Path | None, *, bag: Path | None = None, unit_checks: bool = True
) -> tuple[RobotModel, IdentificationConfig, DriveChain, Recording]:
    """Robot model restricted to the recorded (or configured) joints, and the recording in model order.

    The recording comes from the CSV ``data`` or from the rosbag2 directory ``bag`` (one of the two);
    with ``unit_checks`` it must be in s and rad (:func:`check_units`).
    """
    config = load_config(str(config_path) if config_path else None)
    recording = read_recording_input(data, bag, config)
    joints = config.joints or recording.joint_names
    robot = load_robot(urdf, joints)
    recording = recording.select(robot.joint_names)
    if unit_checks:
        check_units(robot, recording, str(data or bag))
    if recording.effort is None and config.drive_gains is None:
        raise DataError(
            f"{data or bag} has motor currents but no drive gains are configured:"
            " give drive_chain.drive_gains (N·m/A) and gear_ratios in --config"
        )
    return robot, config, config.drive_chain(robot.n_joints), recording


def identify_recording(
    robot: RobotModel, config: IdentificationConfig, drive_chain: DriveChain, recording: Recording
) -> IdentificationResult:
    """Identify a recording already in model joint order."""
    base = base_parameters(robot, drive_chain, config.drive_terms)
    return identify(
        robot,
        drive_chain,
        config.drive_terms,
        base,
        recording.time,
        recording.position,
        recording.joint_torques(drive_chain),
        dq_measured=recording.velocity,
        settings=settings_from_config(config),
    )


def parameter_file(
    robot: RobotModel,
    terms: DriveTerms,
    drive_chain: DriveChain,
    result: IdentificationResult,
    *,
    window_s: float,
) -> ParameterFile:
    """The self-contained parameter YAML content of an identification."""
    estimate = result.estimate
    joints = robot.joint_names
    return ParameterFile.create(
        urdf=robot.urdf_path,
        joints=joints,
        drive_terms=terms,
        drive_chain=drive_chain,
        names=result.names,
        values=estimate.parameters,
        std_percent=estimate.relative_std_percent,
        expressions=result.expressions,
        removed=tuple(name for name, _ in result.removed),
        quality={
            "condition_number": float(estimate.condition_number),
            "relative_error": float(estimate.relative_error),
            "joint_errors": _per_joint(joints, estimate.joint_errors),
            "joint_relative_errors": _per_joint(joints, estimate.joint_relative_errors),
            "samples": int(result.observations.input_samples),
            "window": float(window_s),
        },
        stamp=wall_clock.time(),
    )


def format_result(result: IdentificationResult, joints: tuple[str, ...]) -> str:
    """Human-readable table of the identified parameters and the quality figures."""
    estimate = result.estimate
    width = max(len(name) for name in result.names) if result.names else 4
    lines = [f"{'parameter':<{max(width, 9)}}  {'value':>13}  {'%σ':>8}  expression"]
    for name, value, std, expression in zip(
        result.names, estimate.parameters, estimate.relative_std_percent, result.expressions, strict=True
    ):
        lines.append(f"{name:<{max(width, 9)}}  {value:>13.6g}  {std:>8.2f}  {expression}")
    observations = result.observations
    lines += [
        "",
        f"kept {len(result.names)} of {result.base.count} base parameters; removed: "
        + (", ".join(f"{name} ({why})" for name, why in result.removed) or "none"),
        f"samples {observations.input_samples} (duplicates dropped {observations.duplicates_dropped},"
        f" segments {observations.segments}), rate {observations.rate_hz:.6g} Hz,"
        f" decimation {observations.decimation} -> {observations.observation_matrix.shape[0]} equations per joint",
        f"condition number {estimate.condition_number:.4g}, relative error ||rho||/||Y|| {estimate.relative_error:.4g}",
        "per-joint e_j [N·m] / e*_j [%]: "
        + ", ".join(
            f"{joint} {e:.3g}/{100 * r:.2f}" if np.isfinite(e) else f"{joint} no equation (never moved)"
            for joint, e, r in zip(joints, estimate.joint_errors, estimate.joint_relative_errors, strict=True)
        ),
    ]
    return "\n".join(lines)


def check_units(robot: RobotModel, recording: Recording, source: str) -> None:
    """Refuse a recording whose time is not in s or positions not in rad (:mod:`~dynamic_identification.io.sanity`)."""
    check_recording_units(
        robot.joint_names,
        recording.time,
        robot.unwrap_positions(recording.position),
        lower=robot.lower_position_limits,
        upper=robot.upper_position_limits,
        velocity_limits=robot.velocity_limits,
        source=source,
    )


def _check_output(out: Path | None, *inputs: Path | None, option: str = "--out") -> None:
    """Refuse, before any work is done, an output path that cannot be written or would destroy an input."""
    check_output_path(out, option=option, inputs=inputs)


ACCEPT_IMPLAUSIBLE_HINT = "nothing written; --accept-implausible writes it anyway"


def _plausibility(
    robot: RobotModel,
    config: IdentificationConfig,
    names: tuple[str, ...] | list[str],
    values: np.ndarray,
    predicted_peak: np.ndarray,
    *,
    accept: bool,
    unusable: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The plausibility gates of an identified model: the ``quality.plausibility`` entry, or the refusal.

    Raises
    ------
    ImplausibleModelError
        Listing every failed gate, unless ``accept``.
    """
    problems = unusable + model_problems(
        config.plausibility_bounds(robot), names, values, predicted_peak=predicted_peak
    )
    if problems and not accept:
        raise ImplausibleModelError(problems, hint=ACCEPT_IMPLAUSIBLE_HINT)
    return {"ok": not problems, "problems": list(problems)}


def _plausibility_report(plausibility: dict[str, Any]) -> str:
    if plausibility["ok"]:
        return "plausibility: ok (torques within the effort limits, physically possible values)"
    return "WARNING: implausible model written (--accept-implausible): " + "; ".join(plausibility["problems"])


def identify_file(
    *,
    urdf: Path,
    data: Path | None,
    config: Path | None,
    out: Path,
    bag: Path | None = None,
    model: str | None = None,
    accept_implausible: bool = False,
    unit_checks: bool = True,
) -> str:
    """``dynid identify``: identify a recording CSV (or rosbag2 directory ``bag``) and write the parameter YAML.

    ``model`` (default: ``estimation.model`` of the configuration) chooses the
    regression model of seed 003; ``"dynamic"`` is the IDIM with reduction and quality
    figures of seed 000, the others go through :func:`identify_model_file`. A model
    that fails a plausibility gate (:mod:`~dynamic_identification.core.plausibility`)
    is refused unless ``accept_implausible``.
    """
    _check_output(out, urdf, data, config, bag)
    robot, parsed, drive_chain, recording = load_identification_inputs(
        urdf, data, config, bag=bag, unit_checks=unit_checks
    )
    chosen = model or parsed.model
    if chosen != "dynamic":
        return identify_model_file(
            robot, parsed, drive_chain, recording, model=chosen, out=out, accept_implausible=accept_implausible
        )
    result = identify_recording(robot, parsed, drive_chain, recording)
    rows = result.observations
    predicted = rows.observation_matrix[..., result.base.subset(result.names)] @ result.estimate.parameters
    peak = np.abs(predicted).max(axis=0, where=rows.valid, initial=0.0)
    plausibility = _plausibility(
        robot, parsed, result.names, result.estimate.parameters, peak, accept=accept_implausible
    )
    window = float(recording.time[-1] - recording.time[0])
    document = parameter_file(robot, parsed.drive_terms, drive_chain, result, window_s=window)
    write_parameters_atomic(out, replace(document, quality={**document.quality, "plausibility": plausibility}))
    report = format_result(result, robot.joint_names)
    return f"{report}\n{_plausibility_report(plausibility)}\nparameters written to {out}"


def identify_model_file(
    robot: RobotModel,
    config: IdentificationConfig,
    drive_chain: DriveChain,
    recording: Recording,
    *,
    model: str,
    out: Path,
    accept_implausible: bool = False,
) -> str:
    """Identify with one of seed 003's regression models, write the parameter YAML, report.

    The parameters are the IDIM base parameters whatever the model, so the file feeds
    ``dynid predict`` and the feedforward unchanged. Its ``quality`` holds the model's own
    relative error (of energies or powers for those models) and, to compare models on
    one scale, the per-joint torque errors ``e_j``, ``e*_j`` (seed 004 eq. (11)-(12)) of
    the predicted against the recorded torques where the joint moves. A model that leaves
    base parameters undetermined on this data (the supplied-energy model on one
    trajectory) or fails a plausibility gate is refused unless ``accept_implausible``.
    """
    base = base_parameters(robot, drive_chain, config.drive_terms)
    settings = settings_from_config(config)
    estimate = identify_model(
        robot,
        drive_chain,
        config.drive_terms,
        base,
        recording.time,
        recording.position,
        recording.joint_torques(drive_chain),
        model=model,
        settings=settings,
    )
    kept = np.flatnonzero(estimate.excited)
    values = estimate.parameters[kept]
    with np.errstate(divide="ignore", invalid="ignore"):
        std_percent = np.where(values != 0.0, 100.0 * estimate.std[kept] / np.abs(values), np.inf)
    joints = robot.joint_names
    document = ParameterFile.create(
        urdf=robot.urdf_path,
        joints=joints,
        drive_terms=config.drive_terms,
        drive_chain=drive_chain,
        names=[base.names[i] for i in kept],
        values=values,
        std_percent=std_percent,
        expressions=[base.expressions[i] for i in kept],
        removed=[name for name, excited in zip(base.names, estimate.excited, strict=True) if not excited],
        regression=model,
        stamp=wall_clock.time(),
    )
    errors, relative, peak = _torque_errors(robot, document, recording, settings.signal)
    undetermined = [name for name, excited in zip(base.names, estimate.excited, strict=True) if not excited]
    unusable = (
        (
            f"the {model} model determines only {int(estimate.excited.sum())} of {base.count} base parameters on"
            f" this data ({', '.join(undetermined[:6])}{' …' if len(undetermined) > 6 else ''}): it is unusable"
            " here, use --model dynamic",
        )
        if undetermined
        else ()
    )
    plausibility = _plausibility(
        robot,
        config,
        [base.names[i] for i in kept],
        values,
        peak,
        accept=accept_implausible,
        unusable=unusable,
    )
    quality = {
        "relative_error": float(estimate.relative_error),
        "joint_errors": _per_joint(joints, errors),
        "joint_relative_errors": _per_joint(joints, relative),
        "samples": int(recording.time.shape[0]),
        "window": float(recording.time[-1] - recording.time[0]),
        "plausibility": plausibility,
    }
    write_parameters_atomic(out, replace(document, quality=quality))
    report = _format_model_estimate(estimate, base, joints, errors, relative)
    return f"{report}\n{_plausibility_report(plausibility)}\nparameters written to {out}"


def _torque_errors(
    robot: RobotModel, document: ParameterFile, recording: Recording, signal: SignalSettings
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seed 004 eq. (11)-(12) of the predicted against the recorded torques where ``|q̇| >= min_speed_rad_s``,
    and the largest predicted ``|τ̂_j|`` (N·m)."""
    effort, speed, covered = _prediction(robot, document, recording, signal)
    peak = np.abs(effort[covered]).max(axis=0, initial=0.0)
    measured = recording.joint_torques(document.drive_chain())[covered]
    moving = speed[covered] >= signal.min_speed_rad_s
    counts = moving.sum(axis=0)
    absolute = np.where(moving, np.abs(effort[covered] - measured), 0.0).sum(axis=0)
    magnitude = np.where(moving, np.abs(measured), 0.0).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        errors = np.where(counts > 0, absolute / counts, np.nan)
        return errors, np.where(counts > 0, absolute / magnitude, np.nan), peak


def _format_model_estimate(
    estimate: ModelEstimate, base: BaseParameters, joints: tuple[str, ...], errors: np.ndarray, relative: np.ndarray
) -> str:
    """Human-readable table of a seed-003 model's estimate."""
    width = max(9, *(len(name) for name in base.names))
    lines = [f"model {estimate.model} (seed 003): {int(estimate.excited.sum())} of {base.count} base parameters"]
    lines.append(f"{'parameter':<{width}}  {'value':>13}  {'%σ':>8}  expression")
    for i in np.flatnonzero(estimate.excited):
        value, std = estimate.parameters[i], estimate.std[i]
        percent = 100.0 * std / abs(value) if value != 0.0 else math.inf
        lines.append(f"{base.names[i]:<{width}}  {value:>13.6g}  {percent:>8.2f}  {base.expressions[i]}")
    lines += [
        "",
        f"relative error of the {estimate.model} equations {estimate.relative_error:.4g}",
        "torques predicted vs recorded where the joint moves, e_j [N·m] / e*_j [%]: "
        + ", ".join(
            f"{joint} {e:.3g}/{100 * r:.2f}" if np.isfinite(e) else f"{joint} (never moved)"
            for joint, e, r in zip(joints, errors, relative, strict=True)
        ),
    ]
    return "\n".join(lines)


def predicted_recording(
    robot: RobotModel, params: ParameterFile, recording: Recording, signal: SignalSettings
) -> tuple[Recording, np.ndarray]:
    """The model's predicted torques at the recording's stamps, and which rows they cover.

    Rows outside every usable segment (edges, gaps) are left out; the mask says
    which rows of ``recording`` the prediction has.
    """
    effort, _, covered = _prediction(robot, params, recording, signal)
    predicted = recording_from_arrays(
        time=recording.time[covered],
        joint_names=robot.joint_names,
        position=recording.position[covered],
        effort=effort[covered],
    )
    return predicted, covered


def _prediction(
    robot: RobotModel, params: ParameterFile, recording: Recording, signal: SignalSettings
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Predicted torques (N·m) and filtered joint speeds ``|q̇|`` (rad/s) at the recording's stamps,
    ``(N, n)`` each, and the rows a usable segment covers (elsewhere both are 0)."""
    drive_chain = params.drive_chain()
    positions = robot.unwrap_positions(recording.position)
    motions, _ = estimate_motion(recording.time, positions, signal, dq_measured=recording.velocity)
    values = params.values()
    stamps = recording.time
    covered = np.zeros(stamps.shape[0], dtype=bool)
    effort = np.zeros((stamps.shape[0], robot.n_joints))
    speed = np.zeros_like(effort)
    for motion in motions:
        torques = predict_torques(robot, drive_chain, params.drive_terms(), values, motion.q, motion.dq, motion.ddq)
        inside = (stamps >= motion.time[0]) & (stamps <= motion.time[-1])
        for j in range(robot.n_joints):
            effort[inside, j] = np.interp(stamps[inside], motion.time, torques[:, j])
            speed[inside, j] = np.abs(np.interp(stamps[inside], motion.time, motion.dq[:, j]))
        covered |= inside
    return effort, speed, covered


def predict_file(*, params: Path, data: Path, config: Path | None, out: Path, unit_checks: bool = True) -> str:
    """``dynid predict``: write predicted torques for a recording's motion."""
    _check_output(out, params, data, config)
    parameters = load_parameters(params)
    robot = load_robot(parameters.urdf, parameters.joints)
    recording = read_recording_csv(data, require_torque=False).select(robot.joint_names)
    if unit_checks:
        check_units(robot, recording, str(data))
    settings = settings_from_config(load_config(str(config) if config else None)).signal
    predicted, covered = predicted_recording(robot, parameters, recording, settings)
    write_recording_csv(out, predicted)
    report = [f"predicted torques for {predicted.time.shape[0]} of {recording.time.shape[0]} samples written to {out}"]
    if recording.effort is not None or recording.current is not None:
        measured = recording.joint_torques(parameters.drive_chain())[covered]
        error = np.linalg.norm(predicted.effort - measured) / np.linalg.norm(measured)
        report.append(f"relative error ||predicted - recorded|| / ||recorded||: {error:.4g}")
    return "\n".join(report)


def excite_file(*, urdf: Path, config: Path | None, mode: str, out: Path) -> str:
    """``dynid excite``: plan an excitation trajectory within the limits and write it as CSV."""
    _check_output(out, urdf, config)
    identification = load_config(str(config) if config else None)
    settings = load_excitation_settings(str(config) if config else None, mode=mode)
    robot = load_robot(urdf, identification.joints)
    parameters_file = ros_parameters(str(config), "excitation").get("parameters_file") if config else None
    torque_model = identified_torque_model(str(parameters_file), robot) if parameters_file else None
    plan = plan_excitation(
        robot,
        identification.drive_chain(robot.n_joints),
        identification.drive_terms,
        settings,
        torque_model=torque_model,
    )
    write_trajectory_csv(out, plan.trajectory)
    usage = plan.usage
    lines = [
        f"{plan.description}: {plan.trajectory.duration_s:.6g} s at {settings.rate_hz:g} Hz,"
        f" {plan.trajectory.time.shape[0]} samples",
        f"condition number of the base observation matrix: {plan.condition_number:.4g}",
        f"largest torque: {plan.torque_usage:.3f} of an effort limit ({plan.torque_source})",
        "the controller's quintic interpolation between the samples was checked at 1 kHz",
        f"{'joint':<16} {'range used':>10} {'velocity':>9} {'accel.':>9} {'jerk':>9}"
        "   (fractions of the limits with margins)",
    ]
    for j, joint in enumerate(robot.joint_names):
        lines.append(
            f"{joint:<16} {usage.position[j]:>10.3f} {usage.velocity[j]:>9.3f} {usage.acceleration[j]:>9.3f}"
            f" {usage.jerk[j]:>9.3f}"
        )
    lines.append(f"trajectory written to {out}")
    return "\n".join(lines)


BACKWARD_JUMP_S = 1.0
"""A stamp earlier than the last accepted one by more than this (s) restarts the window (a bag loop,
a simulation reset); a smaller step back is an out-of-order or duplicated sample and is refused."""


def window_parameter_file(
    robot: RobotModel,
    terms: DriveTerms,
    drive_chain: DriveChain,
    base: BaseParameters,
    update: WindowUpdate,
    *,
    stamp: float | None = None,
) -> ParameterFile:
    """The parameter YAML content of one sliding-window update (DESIGN.md parameter YAML).

    Parameters
    ----------
    robot, terms, drive_chain
        The identified model, as given to the estimator.
    base
        The estimator's base parameters; the expressions of the kept names come from it.
    update
        An update with an estimate (normally a publishable one).
    stamp
        ``stamp`` of the file, s; default the update's data time ``update.time_s``.

    Raises
    ------
    DataError
        When the update carries no estimate (or a non-finite value).
    """
    if not update.names:
        raise DataError(f"the update at {update.time_s:.6g} s has no estimate: {update.reason}")
    expression = dict(zip(base.names, base.expressions, strict=True))
    joints = robot.joint_names
    return ParameterFile.create(
        urdf=robot.urdf_path,
        joints=joints,
        drive_terms=terms,
        drive_chain=drive_chain,
        names=update.names,
        values=update.values,
        std_percent=update.std_percent,
        expressions=[expression[name] for name in update.names],
        removed=tuple(name for name, _ in update.removed),
        quality={
            "condition_number": _finite_or_none(update.condition_number),
            "condition_number_full": _finite_or_none(update.condition_number_full),
            "relative_error": _finite_or_none(update.relative_error),
            "joint_errors": _per_joint(joints, update.joint_errors),
            "joint_relative_errors": _per_joint(joints, update.joint_relative_errors),
            "samples": int(update.samples),
            "window": float(update.window_s),
            "reason": update.reason,
        },
        stamp=update.time_s if stamp is None else stamp,
    )


def update_record(update: WindowUpdate, joints: tuple[str, ...], *, restarted: bool = False) -> dict[str, Any]:
    """One ``dynid stream`` JSON line of an update; non-finite numbers become ``None`` (JSON ``null``)."""
    return {
        "time": _finite_or_none(update.time_s),
        "publishable": bool(update.publishable),
        "reason": update.reason,
        "parameters": {name: _finite_or_none(v) for name, v in zip(update.names, update.values.tolist(), strict=True)},
        "removed": [name for name, _ in update.removed],
        "condition_number": _finite_or_none(update.condition_number),
        "condition_number_full": _finite_or_none(update.condition_number_full),
        "relative_error": _finite_or_none(update.relative_error),
        "joint_relative_errors": _per_joint(joints, update.joint_relative_errors),
        "samples": int(update.samples),
        "window_s": float(update.window_s),
        "seconds": float(update.seconds),
        "restarted": bool(restarted),
    }


def stream_chunks(time_s: np.ndarray, period_s: float) -> Iterator[tuple[np.ndarray, bool]]:
    """Indices of consecutive chunks of ``period_s`` of data time, and whether a chunk restarts the window.

    Applies the estimator node's rule to each stamp: later than the last accepted
    one: kept; earlier by more than :data:`BACKWARD_JUMP_S`: kept, and the window
    restarts there; otherwise (out of order, duplicated): dropped. The chunks of one
    run of accepted stamps start at its first stamp; a run's last chunk may be shorter.
    """
    time = np.asarray(time_s, dtype=float)
    start = 0
    restarted = False
    while start < time.size:
        stop = _next_jump(time, start)
        run = start + np.flatnonzero(_increasing(time[start:stop]))
        stamps = time[run]
        bounds = stamps[0] + period_s * np.arange(1, int((stamps[-1] - stamps[0]) / period_s) + 1)
        for chunk in np.split(run, np.searchsorted(stamps, bounds)):
            if chunk.size:
                yield chunk, restarted
                restarted = False
        start, restarted = stop, True


def _increasing(time: np.ndarray) -> np.ndarray:
    """Which stamps are later than every earlier one (the first always is)."""
    previous = np.maximum.accumulate(np.concatenate([[-np.inf], time[:-1]]))
    return time > previous


def _next_jump(time: np.ndarray, start: int) -> int:
    """Index of the first stamp after ``start`` earlier than the running latest by more than BACKWARD_JUMP_S."""
    latest = np.maximum.accumulate(time[start:])
    jumps = np.flatnonzero(time[start + 1 :] < latest[:-1] - BACKWARD_JUMP_S)
    return start + 1 + int(jumps[0]) if jumps.size else time.size


def stream_file(
    *,
    urdf: Path,
    data: Path | None,
    config: Path | None,
    out: Path,
    params_out: Path | None = None,
    bag: Path | None = None,
    unit_checks: bool = True,
) -> str:
    """``dynid stream``: the estimator node's sliding window, run offline on a recording as fast as possible.

    Samples are fed in chunks of ``window.update_period_s`` of data time, with an
    update after each chunk; every update is one JSON line of ``out`` (see
    :func:`update_record`). With ``params_out``, the last publishable estimate is
    written there as a parameter YAML. The recording is the CSV ``data`` or the rosbag2 directory ``bag``.
    """
    _check_output(out, urdf, data, config, bag, params_out)
    if params_out is not None:
        _check_output(params_out, urdf, data, config, bag, out, option="--params-out")
    robot, parsed, drive_chain, recording = load_identification_inputs(
        urdf, data, config, bag=bag, unit_checks=unit_checks
    )
    settings = parsed.window_settings()
    torques = recording.joint_torques(drive_chain)
    positions = recording.position
    estimator = SlidingWindowEstimator(
        robot, drive_chain, parsed.drive_terms, settings, bounds=parsed.plausibility_bounds(robot)
    )
    joints = robot.joint_names
    seconds: list[float] = []
    publishable = 0
    last: WindowUpdate | None = None
    best: WindowUpdate | None = None
    duration = 0.0
    previous = np.nan
    started = wall_clock.perf_counter()
    with atomic_output(out) as stream:
        for chunk, restart in stream_chunks(recording.time, settings.update_period_s):
            if restart:
                estimator.reset()
            stamps = recording.time[chunk]
            duration += float(stamps[-1] - (stamps[0] if restart or np.isnan(previous) else previous))
            previous = float(stamps[-1])
            estimator.add_samples(stamps, positions[chunk], torques[chunk])
            update = estimator.update()
            stream.write(json.dumps(update_record(update, joints, restarted=restart), allow_nan=False) + "\n")
            seconds.append(update.seconds)
            last = update
            if update.publishable:
                publishable += 1
                best = update
    wall = wall_clock.perf_counter() - started
    lines = [f"{len(seconds)} updates ({publishable} publishable) written to {out}"]
    if last is not None:
        lines.append(
            f"last update: {last.reason}; condition number {last.condition_number_full:.4g} before reduction,"
            f" {last.condition_number:.4g} after; {len(last.names)} parameters kept, {len(last.removed)} removed"
        )
        lines.append(
            f"per update: mean {1e3 * float(np.mean(seconds)):.1f} ms, max {1e3 * float(np.max(seconds)):.1f} ms;"
            f" {duration:.6g} s of data in {wall:.3g} s wall time = {duration / wall:.3g}x real time"
        )
    if params_out is not None:
        if best is None:
            lines.append(f"no publishable estimate: {params_out} not written")
        else:
            write_parameters_atomic(
                params_out, window_parameter_file(robot, parsed.drive_terms, drive_chain, estimator.base, best)
            )
            lines.append(f"last publishable estimate (at {best.time_s:.6g} s) written to {params_out}")
    return "\n".join(lines)


def _finite_or_none(value: float) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None


def _per_joint(joints: tuple[str, ...], values: np.ndarray) -> dict[str, float | None]:
    if values.size != len(joints):
        return {}
    return {joint: _finite_or_none(value) for joint, value in zip(joints, values.tolist(), strict=True)}


def run_demo(*, out_dir: Path, duration_s: float, seed: int) -> str:
    """``dynid demo``: simulate, identify and validate the shipped arm."""
    from dynamic_identification.demo import run

    return run(out_dir=out_dir, duration_s=duration_s, seed=seed)
