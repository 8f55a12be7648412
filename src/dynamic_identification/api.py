"""File-level operations behind ``dynid``: read, identify, predict, report.

Each function takes paths, calls the core through the io layer and returns the
text report the CLI prints; errors propagate as
:class:`~dynamic_identification.core.errors.IdentificationError`.
"""

from __future__ import annotations

import json
import time as wall_clock
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np

from dynamic_identification.core import closed_loop
from dynamic_identification.core.closed_loop import ClosedLoopModel
from dynamic_identification.core.closed_loop_identification import (
    closed_loop_window,
    identify_closed_loop,
    identify_closed_loop_drive_gains,
    predict_closed_loop_at_stamps,
)
from dynamic_identification.core.drive_gains import CurrentRecording
from dynamic_identification.core.errors import DataError
from dynamic_identification.core.excitation.closed_loop import plan_closed_loop_excitation
from dynamic_identification.core.excitation.plan import ExcitationPlan, plan_excitation
from dynamic_identification.core.identification import (
    IdentificationResult,
    Samples,
    SignalSettings,
    SlidingWindowEstimator,
    WindowUpdate,
    predict_at_stamps,
)
from dynamic_identification.core.identification.report import format_result
from dynamic_identification.core.model import DriveChain, RobotModel, load_robot
from dynamic_identification.core.plausibility import ImplausibleModelError
from dynamic_identification.core.regression_models import identify_model
from dynamic_identification.core.regressors import base_parameters
from dynamic_identification.core.stamps import stream_chunks
from dynamic_identification.io.atomic import atomic_output, check_output_path
from dynamic_identification.io.config import IdentificationConfig, load_config, load_excitation_settings, ros_parameters
from dynamic_identification.io.parameter_files import (
    identified_parameter_file,
    update_record,
    window_parameter_file,
)
from dynamic_identification.io.parameters import (
    ParameterFile,
    closed_loop_model_of,
    identified_closed_loop_torque_model,
    identified_torque_model,
    load_parameters,
    write_parameters_atomic,
)
from dynamic_identification.io.payload import load_payload, write_drive_gains_atomic
from dynamic_identification.io.recording import (
    Recording,
    read_recording_csv,
    recording_from_arrays,
    write_recording_csv,
)
from dynamic_identification.io.rosbag import read_recording_bag
from dynamic_identification.io.sanity import check_recording_units
from dynamic_identification.io.trajectory import write_trajectory_csv


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
    robot: RobotModel,
    config: IdentificationConfig,
    drive_chain: DriveChain,
    recording: Recording,
    *,
    model: str | None = None,
) -> IdentificationResult:
    """Identify a recording already in model joint order with ``model`` (default ``estimation.model``)."""
    base = base_parameters(robot, drive_chain, config.drive_terms)
    return identify_model(
        robot,
        drive_chain,
        config.drive_terms,
        base,
        recording.time,
        recording.position,
        recording.joint_torques(drive_chain),
        model=model or config.model,
        dq_measured=recording.velocity,
        settings=config.identification_settings(),
        bounds=config.plausibility_bounds(robot),
    )


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


def _plausibility_report(result: IdentificationResult) -> str:
    if result.judged.plausible:
        return "plausibility: ok (torques within the effort limits, physically possible values)"
    return "WARNING: implausible model written (--accept-implausible): " + "; ".join(result.judged.problems)


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
    signal: Mapping[str, object] | None = None,
) -> str:
    """``dynid identify``: identify a recording CSV (or rosbag2 directory ``bag``) and write the parameter YAML.

    ``signal`` overrides signal settings of the configuration by their
    :class:`~dynamic_identification.io.config.IdentificationConfig` names (``velocity``,
    ``position_cutoff_hz``, ``stamps``: the command line's ``--velocity``, ``--cutoff-hz``,
    ``--stamps``); what is left ``auto`` is decided from the data and reported.

    ``model`` (default: ``estimation.model`` of the configuration) chooses the
    regression model of [DirectDrive2012] §3; every model identifies the IDIM base
    parameters through the same seam, so the file feeds ``dynid predict`` and the
    feedforward unchanged. Its ``quality`` holds the model's own relative error (of
    energies or powers for those models) and, on one scale for every model, the
    per-joint torque errors ``e_j``, ``e*_j`` ([Volkmann2020] eq. (11)-(12)). A model that
    fails a plausibility gate (:mod:`~dynamic_identification.core.plausibility`; for a
    model other than the IDIM, also leaving base parameters undetermined) is refused
    unless ``accept_implausible``.
    """
    _check_output(out, urdf, data, config, bag)
    if load_config(str(config) if config else None).closed_loop:
        return _identify_closed_loop_file(
            urdf=urdf,
            data=data,
            config=config,
            out=out,
            bag=bag,
            model=model,
            accept_implausible=accept_implausible,
            unit_checks=unit_checks,
            signal=signal,
        )
    robot, parsed, drive_chain, recording = load_identification_inputs(
        urdf, data, config, bag=bag, unit_checks=unit_checks
    )
    if signal:
        parsed = replace(parsed, **signal)
    result = identify_recording(robot, parsed, drive_chain, recording, model=model)
    if result.judged.problems and not accept_implausible:
        raise ImplausibleModelError(result.judged.problems, hint=ACCEPT_IMPLAUSIBLE_HINT)
    window = float(recording.time[-1] - recording.time[0])
    write_parameters_atomic(
        out, identified_parameter_file(robot, parsed.drive_terms, drive_chain, result, window_s=window)
    )
    report = format_result(result, robot.joint_names)
    return f"{report}\n{_plausibility_report(result)}\nparameters written to {out}"


def predicted_recording(
    robot: RobotModel, params: ParameterFile, recording: Recording, signal: SignalSettings
) -> tuple[Recording, np.ndarray]:
    """The model's predicted torques at the recording's stamps, and which rows they cover.

    Rows outside every usable segment (edges, gaps) are left out; the mask says
    which rows of ``recording`` the prediction has.
    """
    samples = Samples(
        time=recording.time,
        q=recording.position,
        torques=np.zeros_like(recording.position),
        dq_measured=recording.velocity,
    )
    prediction = predict_at_stamps(robot, params.drive_chain(), params.drive_terms(), params.values(), samples, signal)
    covered = prediction.covered
    predicted = recording_from_arrays(
        time=recording.time[covered],
        joint_names=robot.joint_names,
        position=recording.position[covered],
        effort=prediction.torques[covered],
    )
    return predicted, covered


def predict_file(*, params: Path, data: Path, config: Path | None, out: Path, unit_checks: bool = True) -> str:
    """``dynid predict``: write predicted torques for a recording's motion."""
    _check_output(out, params, data, config)
    parameters = load_parameters(params)
    if parameters.closed_loop:
        return _predict_closed_loop_file(parameters, data=data, config=config, out=out, unit_checks=unit_checks)
    robot = load_robot(parameters.urdf, parameters.joints)
    recording = read_recording_csv(data, require_torque=False).select(robot.joint_names)
    if unit_checks:
        check_units(robot, recording, str(data))
    settings = load_config(str(config) if config else None).identification_settings().signal
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
    parameters_file = ros_parameters(str(config), "excitation").get("parameters_file") if config else None
    if identification.closed_loop:
        mechanism = identification.closed_loop_model(urdf)
        plan = plan_closed_loop_excitation(
            mechanism,
            identification.drive_chain(mechanism.n_actuated),
            identification.drive_terms,
            settings,
            torque_model=(
                identified_closed_loop_torque_model(str(parameters_file), mechanism) if parameters_file else None
            ),
        )
        joints = mechanism.actuated_joint_names
    else:
        robot = load_robot(urdf, identification.joints)
        torque_model = identified_torque_model(str(parameters_file), robot) if parameters_file else None
        plan = plan_excitation(
            robot,
            identification.drive_chain(robot.n_joints),
            identification.drive_terms,
            settings,
            torque_model=torque_model,
        )
        joints = robot.joint_names
    write_trajectory_csv(out, plan.trajectory)
    return _excitation_report(plan, joints, settings.rate_hz, out)


def _excitation_report(plan: ExcitationPlan, joints: tuple[str, ...], rate_hz: float, out: Path) -> str:
    """What ``dynid excite`` prints: the plan, its condition number, torque and limit usage."""
    usage = plan.usage
    lines = [
        f"{plan.description}: {plan.trajectory.duration_s:.6g} s at {rate_hz:g} Hz,"
        f" {plan.trajectory.time.shape[0]} samples",
        f"condition number of the base observation matrix: {plan.condition_number:.4g}",
        f"largest torque: {plan.torque_usage:.3f} of an effort limit ({plan.torque_source})",
        "the controller's quintic interpolation between the samples was checked at 1 kHz",
        f"{'joint':<16} {'range used':>10} {'velocity':>9} {'accel.':>9} {'jerk':>9}"
        "   (fractions of the limits with margins)",
    ]
    for j, joint in enumerate(joints):
        lines.append(
            f"{joint:<16} {usage.position[j]:>10.3f} {usage.velocity[j]:>9.3f} {usage.acceleration[j]:>9.3f}"
            f" {usage.jerk[j]:>9.3f}"
        )
    lines.append(f"trajectory written to {out}")
    return "\n".join(lines)


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
    mechanism: ClosedLoopModel | None = None
    if load_config(str(config) if config else None).closed_loop:
        mechanism, parsed, drive_chain, recording = load_closed_loop_inputs(
            urdf, data, config, bag=bag, unit_checks=unit_checks
        )
        robot = mechanism.robot
        recording = recording.select(mechanism.actuated_joint_names)
        settings = parsed.window_settings()
        estimator = closed_loop_window(
            mechanism, drive_chain, parsed.drive_terms, settings, bounds=parsed.closed_loop_bounds(mechanism)
        )
        joints = mechanism.actuated_joint_names
    else:
        robot, parsed, drive_chain, recording = load_identification_inputs(
            urdf, data, config, bag=bag, unit_checks=unit_checks
        )
        settings = parsed.window_settings()
        estimator = SlidingWindowEstimator(
            robot, drive_chain, parsed.drive_terms, settings, bounds=parsed.plausibility_bounds(robot)
        )
        joints = robot.joint_names
    torques = recording.joint_torques(drive_chain)
    positions = recording.position
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
                params_out,
                window_parameter_file(
                    robot, parsed.drive_terms, drive_chain, estimator.base, best, closed_loop=mechanism
                ),
            )
            lines.append(f"last publishable estimate (at {best.time_s:.6g} s) written to {params_out}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- closed-loop robots
def load_closed_loop_inputs(
    urdf: Path, data: Path | None, config_path: Path | None, *, bag: Path | None = None, unit_checks: bool = True
) -> tuple[ClosedLoopModel, IdentificationConfig, DriveChain, Recording]:
    """The closed-loop model of a configuration with ``robot.loop_closures`` ([Briot2012] §2) and its recording.

    The recording must hold the actuated joints (positions, torques or currents); when it
    also holds the position of every passive joint of the opened tree, those are kept
    (checked against the closures, they choose the assembly mode). It comes back in the
    tree's kinematic order: every tree joint, or the actuated joints only.
    """
    config = load_config(str(config_path) if config_path else None)
    recording = read_recording_input(data, bag, config)
    model = config.closed_loop_model(urdf)
    source = str(data or bag)
    if not set(model.actuated_joint_names) <= set(recording.joint_names):
        missing = [name for name in model.actuated_joint_names if name not in recording.joint_names]
        raise DataError(
            f"{source} lacks the actuated joints {missing} of the closed-loop robot (it has"
            f" {list(recording.joint_names)})"
        )
    every = set(model.joint_names) <= set(recording.joint_names)
    recording = recording.select(model.joint_names if every else model.actuated_joint_names)
    if unit_checks:
        check_closed_loop_units(model, recording, source)
    if recording.effort is None and config.drive_gains is None:
        raise DataError(
            f"{source} has motor currents but no drive gains are configured:"
            " give drive_chain.drive_gains (N·m/A) and gear_ratios of the actuated joints in --config"
        )
    return model, config, config.drive_chain(model.n_actuated), recording


def check_closed_loop_units(model: ClosedLoopModel, recording: Recording, source: str) -> None:
    """:func:`check_units` of a recording of some joints of a closed-loop robot's opened tree."""
    tree = model.robot
    index = np.array([tree.joint_names.index(name) for name in recording.joint_names], dtype=int)
    positions = np.array(recording.position, dtype=float)
    for column, joint in enumerate(index):
        if tree.continuous[int(joint)]:
            positions[:, column] = np.unwrap(positions[:, column])
    check_recording_units(
        recording.joint_names,
        recording.time,
        positions,
        lower=tree.lower_position_limits[index],
        upper=tree.upper_position_limits[index],
        velocity_limits=tree.velocity_limits[index],
        source=source,
    )


def _closed_loop_summary(model: ClosedLoopModel, recording: Recording) -> str:
    closures = ", ".join(f"{c.frame_a}-{c.frame_b} ({c.type})" for c in model.closures)
    passive = "recorded (checked against the closures)" if recording.n_joints == model.n_tree else "from the closures"
    return (
        f"closed-loop robot ([Briot2012] eq. (6)-(7)): {model.n_tree} tree joints, closures {closures},"
        f" actuated {list(model.actuated_joint_names)}; passive positions {passive}"
    )


def _identify_closed_loop_file(
    *,
    urdf: Path,
    data: Path | None,
    config: Path | None,
    out: Path,
    bag: Path | None,
    model: str | None,
    accept_implausible: bool,
    unit_checks: bool,
    signal: Mapping[str, object] | None = None,
) -> str:
    """``dynid identify`` of a closed-loop robot: the closed-loop IDIM through the identification seam."""
    mechanism, parsed, drive_chain, recording = load_closed_loop_inputs(
        urdf, data, config, bag=bag, unit_checks=unit_checks
    )
    if signal:
        parsed = replace(parsed, **signal)
    regression = model or parsed.model
    if regression != "dynamic":
        raise DataError(
            f"regression model {regression!r} is not available for a closed-loop robot: its IDIM ([Briot2012]"
            " eq. (6)) is 'dynamic'"
        )
    base = closed_loop.base_parameters(mechanism, drive_chain, parsed.drive_terms)
    actuated = recording.select(mechanism.actuated_joint_names)
    result = identify_closed_loop(
        mechanism,
        drive_chain,
        parsed.drive_terms,
        base,
        recording.time,
        recording.position,
        actuated.joint_torques(drive_chain),
        settings=parsed.identification_settings(),
        bounds=parsed.closed_loop_bounds(mechanism),
        dq_measured=recording.velocity,
    )
    if result.judged.problems and not accept_implausible:
        raise ImplausibleModelError(result.judged.problems, hint=ACCEPT_IMPLAUSIBLE_HINT)
    window = float(recording.time[-1] - recording.time[0])
    write_parameters_atomic(
        out,
        identified_parameter_file(
            mechanism.robot, parsed.drive_terms, drive_chain, result, window_s=window, closed_loop=mechanism
        ),
    )
    report = format_result(result, mechanism.actuated_joint_names)
    summary = _closed_loop_summary(mechanism, recording)
    return f"{summary}\n{report}\n{_plausibility_report(result)}\nparameters written to {out}"


def _predict_closed_loop_file(
    parameters: ParameterFile, *, data: Path, config: Path | None, out: Path, unit_checks: bool
) -> str:
    """``dynid predict`` of a closed-loop robot's parameter file: actuated torques along the completed motion."""
    mechanism = closed_loop_model_of(parameters)
    recording = read_recording_csv(data, require_torque=False)
    every = set(mechanism.joint_names) <= set(recording.joint_names)
    recording = recording.select(mechanism.joint_names if every else mechanism.actuated_joint_names)
    if unit_checks:
        check_closed_loop_units(mechanism, recording, str(data))
    signal = load_config(str(config) if config else None).identification_settings().signal
    drive_chain = parameters.drive_chain()
    prediction = predict_closed_loop_at_stamps(
        mechanism,
        drive_chain,
        parameters.drive_terms(),
        parameters.values(),
        recording.time,
        recording.position,
        signal=signal,
        dq_measured=recording.velocity,
    )
    covered = prediction.covered
    actuated = recording.select(mechanism.actuated_joint_names)
    predicted = recording_from_arrays(
        time=recording.time[covered],
        joint_names=mechanism.actuated_joint_names,
        position=actuated.position[covered],
        effort=prediction.torques[covered],
    )
    write_recording_csv(out, predicted)
    report = [
        _closed_loop_summary(mechanism, recording),
        f"predicted actuated torques for {predicted.time.shape[0]} of {recording.time.shape[0]} samples written"
        f" to {out}",
    ]
    if actuated.effort is not None or actuated.current is not None:
        measured = actuated.joint_torques(drive_chain)[covered]
        error = np.linalg.norm(predicted.effort - measured) / np.linalg.norm(measured)
        report.append(f"relative error ||predicted - recorded|| / ||recorded||: {error:.4g}")
    return "\n".join(report)


def closed_loop_gains_file(
    *,
    urdf: Path,
    data: Path,
    data_loaded: Path,
    payload: Path,
    frame: str | None,
    config: Path,
    out: Path,
    unit_checks: bool = True,
) -> str:
    """Drive gains of a closed-loop robot's motors by IDIM-TLS with a known payload ([Briot2012] eq. (8)-(13)).

    ``data`` is a recording without load, ``data_loaded`` one with the payload of the
    payload YAML ``payload`` fixed to ``frame`` (default the file's frame), a frame of the
    opened tree (the platform's); both hold ``J/current`` (A) of the actuated joints and
    the positions of the actuated (or every tree) joint. ``config`` describes the
    mechanism (``robot.loop_closures``, ``robot.actuated_joints``), the gear ratios and the
    nominal gains. Writes the drive-gains file of :mod:`~dynamic_identification.io.payload`
    (``drive_chain.drive_gains`` per actuated joint, σ, quality), read as a configuration.
    """
    _check_output(out, urdf, data, data_loaded, payload, config)
    mechanism, parsed, chain, unloaded = load_closed_loop_inputs(urdf, data, config, unit_checks=unit_checks)
    _, _, _, loaded = load_closed_loop_inputs(urdf, data_loaded, config, unit_checks=unit_checks)
    known = load_payload(payload)
    if frame is not None:
        known = replace(known, frame=frame)
    recordings = []
    for path, recording in ((data, unloaded), (data_loaded, loaded)):
        currents = recording.select(mechanism.actuated_joint_names).current
        if currents is None:
            raise DataError(f"{path} has no motor currents (J/current, A) of the actuated joints: the gains need them")
        recordings.append(CurrentRecording.create(recording.time, recording.position, currents, name=str(path)))
    result = identify_closed_loop_drive_gains(
        mechanism,
        chain,
        parsed.drive_terms,
        unloaded=recordings[0],
        loaded=recordings[1],
        payload=known,
        settings=parsed.identification_settings(),
    )
    write_drive_gains_atomic(out, result, chain, mechanism.actuated_joint_names, payload=known, stamp=wall_clock.time())
    lines = [
        _closed_loop_summary(mechanism, unloaded),
        f"drive gains by IDIM-TLS ([Briot2012] eq. (13)) with a known payload of {known.mass_kg:.6g} kg on"
        f" {known.frame}: {result.samples[0]} + {result.samples[1]} decimated samples, {len(result.names)} base"
        " parameters",
        f"{'joint':<16} {'nominal':>10} {'identified':>11} {'σ':>10} {'σ %':>7}   (N·m/A)",
    ]
    for j, joint in enumerate(mechanism.actuated_joint_names):
        gain, std, nominal = result.drive_gains[j], result.drive_gains_std[j], result.nominal_drive_gains[j]
        lines.append(f"{joint:<16} {nominal:>10.5g} {gain:>11.6g} {std:>10.3g} {100.0 * std / abs(gain):>7.3f}")
    lines.append(f"drive gains written to {out}")
    return "\n".join(lines)
