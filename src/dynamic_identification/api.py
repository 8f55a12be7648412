"""File-level operations behind ``dynid``: read, identify, predict, report.

Each verb takes paths, calls the core through the io layer, writes its files and
returns what it found and wrote as a frozen dataclass (``…FileResult``), as the ``api``
modules of ros2cli do; ``dynid`` prints them (:mod:`dynamic_identification.cli_format`).
Errors propagate as :class:`~dynamic_identification.core.errors.IdentificationError`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time as wall_clock
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dynamic_identification.core.cancellation import NEVER, Cancellation
from dynamic_identification.core.errors import DataError, ModelError
from dynamic_identification.core.estimation.consistency import LinkComparison
from dynamic_identification.core.excitation.safety import TorqueModel
from dynamic_identification.core.excitation.trajectory import SampledTrajectory
from dynamic_identification.core.identification import (
    IdentificationResult,
    IdentificationSettings,
    Samples,
    SignalSettings,
    SlidingWindowEstimator,
    WindowUpdate,
    joint_travel,
    predict_at_stamps,
    predict_torques,
)
from dynamic_identification.core.identification.drive_gains import (
    CurrentRecording,
    DriveGainsResult,
    identify_drive_gains,
)
from dynamic_identification.core.identification.drive_term_choice import (
    DriveTermChoice,
    identify_choosing_drive_terms,
)
from dynamic_identification.core.identification.passive_friction import (
    PassiveFrictionChoice,
    identify_choosing_passive_friction,
    without_passive_friction,
)
from dynamic_identification.core.identification.prediction import StampPrediction
from dynamic_identification.core.identification.regression_models import identify_model
from dynamic_identification.core.identification.torque_delay import read_late
from dynamic_identification.core.mechanism.payload import Payload, frame_id
from dynamic_identification.core.mechanism.plausibility import ImplausibleModelError
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel, load_robot
from dynamic_identification.core.mechanism.seam import Mechanism, SerialMechanism, mechanism_of
from dynamic_identification.core.progress import ProgressCallback, ignore_progress
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.signal.alignment import current_polynomial
from dynamic_identification.core.signal.stamps import BACKWARD_JUMP_S, stream_chunks
from dynamic_identification.io.atomic import atomic_output, check_output_path
from dynamic_identification.io.config import (
    IdentificationConfig,
    load_config,
    load_excitation_settings,
    ros_parameters,
    unread_keys,
)
from dynamic_identification.io.outcome import (
    ConsistencyCost,
    Validation,
    configured_consistency,
    configured_window_parts,
    consistency_cost_warnings,
    consistency_costs,
    consistent_model,
    identification_warnings,
    link_comparisons,
    link_text,
    moving_samples,
    physical_consistency_section,
    relative_error_over,
    urdf_result,
    validate,
    validation_names,
)
from dynamic_identification.io.parameter_files import (
    aligned_torque_delay_s,
    identified_parameter_file,
    update_record,
    window_parameter_file,
)
from dynamic_identification.io.parameters import (
    ParameterFile,
    identified_torque_model,
    load_parameters,
    parameter_file_mechanism,
    write_parameters_atomic,
)
from dynamic_identification.io.payload import (
    load_payload,
    payload_identification_record,
    write_drive_gains_atomic,
    write_payload_atomic,
)
from dynamic_identification.io.recording import (
    Recording,
    read_recording_csv,
    recording_from_arrays,
)
from dynamic_identification.io.rosbag import read_bag
from dynamic_identification.io.sanity import check_recording_torques, check_recording_units
from dynamic_identification.io.table import write_table
from dynamic_identification.io.trajectory import is_trajectory_csv, read_trajectory_csv, write_trajectory_csv
from dynamic_identification.io.urdf_export import UrdfExport, write_urdf

if TYPE_CHECKING:
    from dynamic_identification.core.excitation.plan import ExcitationPlan
    from dynamic_identification.core.identification.payload import PayloadEstimate

LOGGER = logging.getLogger(__name__)
"""Warnings about the inputs (``dynid`` prints them as ``dynid VERB: warning: …``)."""


def warn_unread_keys(config: Path | None, verb: str, *, urdf: Path | None = None) -> None:
    """Warn about each key of the configuration file ``config`` set where ``dynid verb`` does not read it
    (:func:`~dynamic_identification.io.config.unread_keys`; ``urdf``: the URDF of its command line): never
    silently ignored."""
    if config is not None:
        for warning in unread_keys(config, verb=verb, urdf=urdf):
            LOGGER.warning(warning)


def read_recording_input(data: Path | None, bag: Path | None, config: IdentificationConfig) -> tuple[Recording, str]:
    """The recording of a CSV file (``data``) or of a rosbag2 directory (``bag``: topics from ``config``), and what
    reading it dropped (a bag's joint states the alignment left out, counted by cause; empty: nothing)."""
    if data is not None and bag is None:
        return read_recording_csv(data), ""
    if bag is not None and data is None:
        reading = read_bag(
            bag,
            joint_states_topic=config.joint_states_topic,
            currents_topic=config.currents_topic,
            effort_is_torque=config.effort_is_torque,
            joint_names=config.joints,
            tolerance_s=config.tolerance_s,
            max_delay_s=config.max_delay_s,
        )
        return reading.recording, reading.dropped_text
    raise DataError(f"give exactly one of a recording CSV or a rosbag2 directory, got data={data}, bag={bag}")


def load_identification_inputs(
    urdf: Path, data: Path | None, config_path: Path | None, *, bag: Path | None = None, unit_checks: bool = True
) -> tuple[RobotModel, IdentificationConfig, DriveChain, Recording, str]:
    """Robot model restricted to the recorded (or configured) joints, the recording in model order, and what
    reading it dropped (:func:`read_recording_input`).

    The recording comes from the CSV ``data`` or from the rosbag2 directory ``bag`` (one of the two);
    with ``unit_checks`` it must be in s and rad (:func:`check_units`).
    """
    config = load_config(str(config_path) if config_path else None)
    recording, dropped = read_recording_input(data, bag, config)
    source = str(data or bag)
    in_urdf = load_robot(urdf).joint_names
    robot = load_robot(
        urdf, _known_joints(urdf.name, in_urdf, config.joints, recording, source=source, config=config_path)
    )
    if config.joints:
        unrecorded = [name for name in robot.joint_names if name not in recording.joint_names]
        if unrecorded:
            raise DataError(
                f"joints in {config_path} names {unrecorded}, which {source} has no columns for (it records"
                f" {list(recording.joint_names)}): name its columns J/position, … after the URDF's joints"
            )
        warn_locked_but_moving(in_urdf, recording, robot, source=source, config=str(config_path))
    recording = recording.select(robot.joint_names)
    if unit_checks:
        check_units(robot, recording, str(data or bag))
    if recording.effort is None and config.drive_gains is None:
        raise DataError(
            f"{data or bag} has motor currents but no drive gains are configured:"
            " give drive_chain.drive_gains (N·m/A) and gear_ratios in --config"
        )
    return robot, config, config.drive_chain(robot.n_joints, robot.joint_names), recording, dropped


def _known_joints(
    urdf: str,
    in_urdf: Sequence[str],
    joints: tuple[str, ...] | None,
    recording: Recording,
    *,
    source: str,
    config: Path | None,
) -> tuple[str, ...]:
    """The joints to identify (``joints`` of the configuration, else the recording's), all of them ``in_urdf``.

    Raises
    ------
    DataError
        Naming where the unknown names come from: the recording's columns or ``joints`` of ``config``.
    """
    wanted = joints or recording.joint_names
    unknown = [name for name in wanted if name not in in_urdf]
    if not unknown:
        return tuple(wanted)
    where = f"joints in {config} names" if joints else f"the columns of {source} (J/position, …) name joints"
    fix = "" if joints else ": rename the columns after the URDF's joints, or list the joints in --config"
    raise DataError(f"{where} {unknown} that {urdf} does not have (its joints: {list(in_urdf)}){fix}")


LOCKED_MOTION_RAD = 0.05
"""Travel (rad) of a recorded joint left out of ``joints`` above which the lock is worth a warning."""


def warn_locked_but_moving(
    in_urdf: Sequence[str], recording: Recording, robot: RobotModel, *, source: str, config: str
) -> None:
    """Warn (one line) when joints ``in_urdf`` that ``joints`` of ``config`` leaves out move in the recording.

    The model holds a joint it does not identify locked at 0 or mid-range
    (:func:`~dynamic_identification.core.mechanism.robot.load_robot`),
    so the torques its motion causes land on the identified joints' parameters: a ``joints:`` list of 3 for a
    6-axis recording gives a wrong model without a word otherwise. A recorded joint that travels less than
    :data:`LOCKED_MOTION_RAD` (a gripper, a joint held still) is left alone.
    """
    locked = [name for name in recording.joint_names if name not in robot.joint_names and name in in_urdf]
    travel = joint_travel(recording.select(locked).position) if locked else np.empty(0)
    moving = [f"{name} ({span:.2g} rad)" for name, span in zip(locked, travel, strict=True) if span > LOCKED_MOTION_RAD]
    if moving:
        LOGGER.warning(
            f"{source} records joints {', '.join(moving)} of the URDF moving, but joints in {config} leaves them out:"
            " the model holds them locked (at 0 or mid-range), so the torques of their motion corrupt the identified"
            " parameters; add them to joints (or record them at rest)"
        )


def identify_recording(
    mechanism: RobotModel | Mechanism,
    config: IdentificationConfig,
    drive_chain: DriveChain,
    recording: Recording,
    *,
    model: str | None = None,
    cancellation: Cancellation = NEVER,
) -> IdentificationResult:
    """Identify a recording of ``mechanism`` (its controlled joints, or every tree joint, in kinematic order) with
    ``model`` (default ``estimation.model``).

    With ``estimation.consistency`` (the default) the published values are the physically
    consistent estimate nearest to the data ([Wensing2018], step 5 of the seam).
    ``cancellation`` is polled and told the progress of each stage.
    """
    cancellation.report("base parameters (QR on random states)")
    dynamic_model = DynamicModel.create(mechanism, drive_chain, config.drive_terms)
    return identify_model(
        dynamic_model,
        recording.time,
        recording.position,
        controlled(dynamic_model.mechanism, recording).joint_torques(drive_chain),
        model=model or config.model,
        dq_measured=recording.velocity,
        settings=config.identification_settings(),
        bounds=config.plausibility_bounds(dynamic_model.mechanism),
        consistency=configured_consistency(dynamic_model, config),
        cancellation=cancellation,
    )


def with_joint_torques(mechanism: Mechanism, recording: Recording, drive_chain: DriveChain) -> Recording:
    """A recording of the controlled joints' currents as one of their joint torques (N·m, ``drive_chain``), which
    every identification of it reads: converted once, and not held beside the currents (29 MB each at 600 k
    samples of 6 joints). Any other recording is returned as it is."""
    if (
        recording.current is None
        or recording.effort is not None
        or recording.joint_names != mechanism.actuated_joint_names
    ):
        return recording
    return dataclasses.replace(recording, effort=recording.joint_torques(drive_chain), current=None)


def controlled(mechanism: Mechanism, recording: Recording) -> Recording:
    """The controlled joints' columns of a recording of ``mechanism`` (the recording itself when it has only those)."""
    joints = mechanism.actuated_joint_names
    return recording if recording.joint_names == joints else recording.select(joints)


def check_units(mechanism: RobotModel | Mechanism, recording: Recording, source: str) -> None:
    """Refuse a recording whose time is not in s or positions not in rad (:mod:`~dynamic_identification.io.sanity`);
    its joints are some of the mechanism's tree joints."""
    tree = mechanism_of(mechanism).robot
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
        velocities=recording.velocity,
    )


def _check_output(out: Path | None, *inputs: Path | None, option: str = "--out") -> None:
    """Refuse, before any work is done, an output path that cannot be written or would destroy an input."""
    check_output_path(out, option=option, inputs=inputs)


ACCEPT_IMPLAUSIBLE_HINT = "nothing written; --accept-implausible writes it anyway"


def _command_line_overrides(
    parsed: IdentificationConfig, signal: Mapping[str, object] | None, consistency: bool | None
) -> IdentificationConfig:
    """The configuration with the signal settings and ``estimation.consistency`` given on the command line."""
    if signal:
        parsed = parsed.overridden(signal, source="the command line")
    if consistency is not None:
        parsed = replace(parsed, consistency=consistency)
    return parsed


def _accepted_settings(
    parsed: IdentificationConfig, result: IdentificationResult, *, accept_implausible: bool
) -> IdentificationSettings:
    """The settings an identification's file stores, once its model passed the plausibility gates.

    A model that fails a gate is refused (:class:`ImplausibleModelError`) unless
    ``accept_implausible``. What the data decided (stamps, cut-off, velocities) is what the
    file stores and the held-out recordings are processed with: predict then reproduces
    identify exactly.
    """
    if result.judged.problems and not accept_implausible:
        raise ImplausibleModelError(result.judged.problems, hint=ACCEPT_IMPLAUSIBLE_HINT)
    settings = parsed.identification_settings()
    if result.observations.signal is not None:
        settings = replace(settings, signal=result.observations.signal)
    return settings


@dataclasses.dataclass(frozen=True)
class IdentifyFileResult:
    """What ``dynid identify`` (:func:`identify_file`) identified and wrote; ``dynid`` prints it
    (:func:`~dynamic_identification.cli_format.identify_text`).

    Attributes
    ----------
    mechanism
        The robot identified (the closed-loop model with passive friction when that one was chosen).
    passive_recorded
        The recording holds every tree joint (a closed-loop robot's passive joints were recorded).
    drive_terms
        The choice of the drive terms among those configured (``None`` with ``estimation.choose_drive_terms``
        false).
    passive_friction
        The choice of the passive joints' bearing friction model (``None`` for a serial robot).
    model_choices
        One line per choice of the model the data made: the drive terms when a kind was dropped, the bearing
        friction when offered (also in ``quality.model_choices``).
    result
        The identification (base parameters, quality, plausibility).
    validations
        Each held-out recording predicted and judged.
    costs
        What publishing the physically consistent estimate cost on each data set (empty without one).
    links
        Each identified body of the physically consistent estimate against the URDF's.
    warnings
        The warnings also stored in ``quality.warnings``.
    urdf_out, urdf_export
        The URDF written with the consistent inertias and friction, and what was changed (``None``: none written).
    out
        The parameter file written.
    report
        The HTML report page written (``None``: none).
    dropped
        What reading the recording dropped, one phrase: a bag's joint states the alignment left out, counted by
        cause (:attr:`~dynamic_identification.io.rosbag.BagReading.dropped_text`); empty: nothing.
    """

    mechanism: Mechanism
    passive_recorded: bool
    drive_terms: DriveTermChoice | None
    passive_friction: PassiveFrictionChoice | None
    model_choices: tuple[str, ...]
    result: IdentificationResult
    validations: tuple[Validation, ...]
    costs: tuple[ConsistencyCost, ...]
    links: tuple[LinkComparison, ...]
    warnings: tuple[str, ...]
    urdf_out: Path | None
    urdf_export: UrdfExport | None
    out: Path
    report: Path | None
    dropped: str


def model_choice_lines(
    drive_terms: DriveTermChoice | None, passive_friction: PassiveFrictionChoice | None
) -> tuple[str, ...]:
    """The one-line reasons of the model choices the data made: the drive terms' when a kind was dropped (every
    kind kept is the configuration's model, nothing to say), the bearing friction's whenever it was offered."""
    lines = [drive_terms.reason] if drive_terms is not None and drive_terms.dropped else []
    return (*lines, *([passive_friction.reason] if passive_friction is not None else []))


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
    consistency: bool | None = None,
    urdf_out: Path | None = None,
    validate_data: Sequence[Path] = (),
    report: Path | None = None,
    progress: ProgressCallback = ignore_progress,
) -> IdentifyFileResult:
    """``dynid identify``: identify a recording CSV (or rosbag2 directory ``bag``) and write the parameter YAML.

    ``signal`` overrides signal settings of the configuration by their keys
    (``signal.velocity``, ``signal.position_cutoff_hz``, ``signal.stamps``: the command
    line's ``--velocity``, ``--cutoff-hz``, ``--stamps``), checked as the schema says
    (:meth:`~dynamic_identification.io.config.IdentificationConfig.overridden`); what is
    left ``auto`` is decided from the data and reported. ``consistency`` overrides
    ``estimation.consistency`` (``--no-consistency``).

    ``model`` (default: ``estimation.model`` of the configuration) chooses the
    regression model of [DirectDrive2012] §3; every model identifies the IDIM base
    parameters through the same seam, so the file feeds ``dynid predict`` and the
    feedforward unchanged. Its ``quality`` holds the model's own relative error (of
    energies or powers for those models) and, on one scale for every model, the
    per-joint torque errors ``e_j``, ``e*_j`` ([Volkmann2020] eq. (11)-(12)). A model that
    fails a plausibility gate (:mod:`~dynamic_identification.core.mechanism.plausibility`; for a
    model other than the IDIM, also leaving base parameters undetermined) is refused
    unless ``accept_implausible``.

    The file is self-contained: every setting used (``settings``), the URDF named relative
    to the file (or ``package://``) with its SHA-256, the physically consistent standard
    parameters per link ([Wensing2018], ``standard_parameters``) and, as ``stamp``, the data
    time of the recording's last sample. ``urdf_out`` also writes the URDF with those link
    inertias and friction; each of ``validate_data`` (held-out recordings CSV) is predicted
    and judged into ``quality.validation``; ``report`` writes the HTML report there.
    Warnings (:func:`~dynamic_identification.io.outcome.identification_warnings`) go to the
    result and to ``quality.warnings``. ``progress`` is told each stage (reading, signal
    decisions, the observation rows sample by sample, reduction, least squares, physical
    consistency, validation, writing, the report) as it begins (:mod:`~dynamic_identification.core.progress`).
    """
    _check_output(out, urdf, data, config, bag, *validate_data)
    if urdf_out is not None:
        _check_output(urdf_out, urdf, data, config, bag, out, *validate_data, option="--urdf-out")
    if report is not None and report.exists() and not report.is_dir():
        raise DataError(f"--report {report} exists and is not a directory")
    warn_unread_keys(config, "identify", urdf=urdf)
    monitor = Cancellation(progress=progress)
    monitor.report(f"reading {data or bag}")
    mechanism, parsed, drive_chain, recording, dropped = load_mechanism_inputs(
        urdf, data, config, bag=bag, unit_checks=unit_checks
    )
    recording = with_joint_torques(mechanism, recording, drive_chain)
    robot, joints = mechanism.robot, mechanism.actuated_joint_names
    parsed = _command_line_overrides(parsed, signal, consistency)
    held_out = [
        _mechanism_recording_csv(mechanism, path, require_torque=True, unit_checks=unit_checks)
        for path in validate_data
    ]

    def identified(candidate: Mechanism, terms: DriveTerms) -> IdentificationResult:
        config = dataclasses.replace(parsed, drive_terms=terms)
        return identify_recording(candidate, config, drive_chain, recording, model=model, cancellation=monitor)

    plain = without_passive_friction(mechanism)
    chosen, without, drive_terms = identify_choosing_drive_terms(
        lambda terms: identified(plain, terms), plain, parsed.drive_terms, choose=parsed.choose_drive_terms
    )
    parsed = dataclasses.replace(parsed, drive_terms=chosen)
    mechanism, result, friction = identify_choosing_passive_friction(
        lambda candidate: identified(candidate, chosen),
        plain,
        chosen,
        offered=parsed.passive_friction,
        without=without,
    )
    choices = model_choice_lines(drive_terms, friction)
    settings = _accepted_settings(parsed, result, accept_implausible=accept_implausible)
    terms = parsed.drive_terms
    dynamic_model = DynamicModel(mechanism, drive_chain, terms, result.base)
    # Without consistency the nearest consistent model is only searched for (a conic solve) when --urdf-out needs it.
    consistent = consistent_model(dynamic_model, settings, result, search=urdf_out is not None)
    if urdf_out is not None and consistent.estimate is None:
        raise ModelError(f"--urdf-out needs the physically consistent link parameters: {consistent.error}")
    validations = []
    for held, name in zip(held_out, validation_names(validate_data), strict=True):
        monitor.report(f"validation on {name}")
        validations.append(validate(dynamic_model, result, held, settings, name=name))
    costs = consistency_costs(dynamic_model, result, settings, list(zip(held_out, validations, strict=True)))
    monitor.report("writing the parameter file")
    warnings = identification_warnings(
        robot, result, settings, consistent, joints=None if joints == robot.joint_names else joints
    )
    warnings += consistency_cost_warnings(costs)
    stamp = float(recording.time[-1])
    document = identified_parameter_file(
        dynamic_model,
        result,
        window_s=float(recording.time[-1] - recording.time[0]),
        stamp=stamp,
        settings=settings,
        standard=None if consistent.estimate is None else consistent.estimate.standard,
        standard_source="base" if consistent.estimate is None else "consistent",
        quality={
            "validation": [v.entry(joints) for v in validations],
            "physical_consistency": physical_consistency_section(consistent, robot, costs),
            "model_choices": list(choices),
            "warnings": warnings,
            **_dropped_quality(dropped),
        },
    )
    links = link_comparisons(robot, terms, consistent)
    exported = None
    if urdf_out is not None and consistent.estimate is not None:
        exported = write_urdf(
            urdf_out,
            robot,
            consistent.estimate.standard,
            terms,
            drive_chain=drive_chain,
            notes=[link_text(link) for link in links],
            driven=mechanism.actuated,
            comment=_opened_tree_note(mechanism, config),
        )
    write_parameters_atomic(out, document)
    page = None
    if report is not None:
        # Imported here: the report needs matplotlib, which identification alone does not.
        from dynamic_identification.io.report import write_report
        from dynamic_identification.io.report_data import identification_report

        monitor.report(f"HTML report in {report}")
        training = validate(dynamic_model, result, recording, settings, name=f"training: {data or bag}")
        urdf_model = urdf_result(dynamic_model, result)
        baselines = [
            validate(dynamic_model, urdf_model, held, settings, name=series.name)
            for held, series in zip([recording, *held_out], [training, *validations], strict=True)
        ]
        page = write_report(
            report,
            identification_report(
                dynamic_model=dynamic_model,
                settings=settings,
                result=result,
                training=training,
                validations=[dataclasses.replace(v, name=f"validation: {v.name}") for v in validations],
                consistent=consistent,
                warnings=warnings,
                urdf=document.named_for(out.resolve().parent).urdf,
                stamp=stamp,
                costs=costs,
                baselines=baselines,
                model_choices=choices,
            ),
        )
    return IdentifyFileResult(
        mechanism=mechanism,
        passive_recorded=recording.n_joints == mechanism.n_tree,
        drive_terms=drive_terms,
        passive_friction=friction,
        model_choices=choices,
        result=result,
        validations=tuple(validations),
        costs=tuple(costs),
        links=links,
        warnings=tuple(warnings),
        urdf_out=None if exported is None else urdf_out,
        urdf_export=exported,
        out=out,
        report=page,
        dropped=dropped,
    )


def _dropped_quality(dropped: str) -> dict[str, str]:
    """The parameter file's record of what reading the recording dropped (:func:`read_recording_input`), one
    ``quality.dropped_joint_states`` sentence, so the file says it after the output line is gone; none when nothing
    was."""
    return {"dropped_joint_states": dropped} if dropped else {}


def _stamp_prediction(
    mechanism: RobotModel | Mechanism, params: ParameterFile, recording: Recording, signal: SignalSettings
) -> StampPrediction:
    """The model's torques at the recording's stamps."""
    samples = Samples(
        time=recording.time,
        q=recording.position,
        torques=np.zeros((recording.time.shape[0], mechanism_of(mechanism).n_actuated)),
        dq_measured=recording.velocity,
    )
    return predict_at_stamps(mechanism, params.drive_chain(), params.drive_terms(), params.values(), samples, signal)


def predicted_recording(
    robot: RobotModel, params: ParameterFile, recording: Recording, signal: SignalSettings
) -> tuple[Recording, np.ndarray]:
    """The model's predicted torques at the recording's stamps, and which rows they cover.

    Rows outside every usable segment (edges, gaps) are left out; the mask says
    which rows of ``recording`` the prediction has. ``dynid predict`` keeps every row instead
    (NaN where there is no prediction, :func:`_predicted`).
    """
    prediction = _stamp_prediction(robot, params, recording, signal)
    covered = prediction.covered
    predicted = recording_from_arrays(
        time=recording.time[covered],
        joint_names=robot.joint_names,
        position=recording.position[covered],
        effort=prediction.torques[covered],
    )
    return predicted, covered


def _identified(mechanism: RobotModel | Mechanism, params: ParameterFile) -> np.ndarray:
    """``(n_a,)`` booleans: the controlled joints the identification had equations for."""
    identified = params.identified_joints()
    return np.array([joint in identified for joint in mechanism_of(mechanism).actuated_joint_names], dtype=bool)


def _predicted(prediction: StampPrediction, identified: np.ndarray) -> np.ndarray:
    """The prediction's torques of the controlled joints (N·m) at every row, ``(N, n_a)``.

    NaN where the model has no prediction: rows of a stretch too short to differentiate between two gaps
    (:data:`~dynamic_identification.core.identification.motion.MIN_SEGMENT_SAMPLES`; every segment is predicted to
    its ends) and joints not ``identified`` (:func:`_identified`), which the feedforward gives no torque either.
    """
    return np.where(prediction.covered[:, None] & identified[None, :], prediction.torques, np.nan)


def _prediction_signal(
    parameters: ParameterFile, params: Path, config: Path | None
) -> tuple[SignalSettings, Path | None]:
    """The signal settings ``dynid predict`` filters with, and the file they come from: ``config``'s when given,
    else those the identification stored (``params``), else the defaults (``None``)."""
    stored = parameters.signal_settings()
    if config is not None:
        return load_config(str(config)).identification_settings().signal, config
    if stored is not None:
        return stored, params
    return SignalSettings(), None


@dataclasses.dataclass(frozen=True)
class PredictFileResult:
    """What ``dynid predict`` (:func:`predict_file`) predicted for a recording and wrote.

    Attributes
    ----------
    mechanism, passive_recorded
        The robot, and whether the recording holds its passive joints too (a closed-loop robot).
    out
        The predicted torques table written.
    rows, predicted_rows
        The recording's rows, and how many of them have a prediction (the others lie in stretches
        shorter than :data:`~dynamic_identification.core.identification.motion.MIN_SEGMENT_SAMPLES`).
    signal, signal_from
        The signal settings filtered with, and the file they come from (the configuration, or the
        parameter file ``params``); ``None``: the defaults, ``params`` storing none.
    params
        The parameter file.
    unidentified
        Joints the identification had no equation for (no prediction).
    relative_error
        ``‖predicted − recorded‖ / ‖recorded‖`` on every predicted row (``None``: no torques recorded). Rows at rest
        count the model's ``±Fc`` (``sign(q̇)`` of the velocity's noise) against the stiction recorded there.
    moving_relative_error
        The same where the joint moves (:func:`~dynamic_identification.io.outcome.moving_samples`, the joint samples
        ``--validate`` judges; ``None``: no torques recorded, or no joint moves).
    moving, joint_samples
        The joint samples counted in :attr:`moving_relative_error`, and those of the identified joints on the
        predicted rows.
    torque_delay_s
        The delay, s, the recorded torques are read with for the errors: the one the parameter file's identification
        aligned its torques with (:func:`~dynamic_identification.io.parameter_files.aligned_torque_delay_s`), 0 when
        none.
    """

    mechanism: Mechanism
    passive_recorded: bool
    out: Path
    rows: int
    predicted_rows: int
    signal: SignalSettings
    signal_from: Path | None
    params: Path
    unidentified: tuple[str, ...]
    relative_error: float | None
    moving_relative_error: float | None
    moving: int
    joint_samples: int
    torque_delay_s: float = 0.0


@dataclasses.dataclass(frozen=True)
class PlanPredictionResult:
    """What ``dynid predict`` of a planned motion (:func:`_predict_plan_file`) wrote.

    Attributes
    ----------
    plan, out
        The trajectory CSV predicted, and the torques table written.
    rows
        The plan's rows (every one predicted).
    peaks
        Per controlled joint: its largest torque (N·m; ``None`` when not identified) and its URDF
        effort limit (N·m; not finite or 0: none).
    unidentified
        Joints the identification had no equation for (no prediction).
    """

    plan: Path
    out: Path
    rows: int
    peaks: tuple[tuple[str, float | None, float], ...]
    unidentified: tuple[str, ...]


def predict_file(
    *, params: Path, data: Path, config: Path | None, out: Path, urdf: Path | None = None, unit_checks: bool = True
) -> PredictFileResult | PlanPredictionResult:
    """``dynid predict``: write predicted torques for a recording's motion, one row per input row.

    The signal settings are those the identification stored (``settings.signal`` of the
    file), or ``config``'s when given; a file without them (written before they were
    stored) takes the defaults and says so. Columns: ``time``, per joint ``J/position``
    (as recorded) and ``J/effort`` (predicted, N·m; ``nan`` where the model has no
    prediction, see :func:`_predicted`). ``urdf`` replaces the URDF the file names
    (a file identified where its URDF lay elsewhere); its content must be the one the file
    records (``robot.urdf_sha256``). ``data`` may also be a planned motion (``dynid
    excite``'s trajectory CSV, :func:`_predict_plan_file`): the torques it needs.
    """
    _check_output(out, params, data, config, urdf)
    warn_unread_keys(config, "predict", urdf=urdf)
    parameters = load_parameters(params)
    if is_trajectory_csv(data):
        return _predict_plan_file(parameters, data=data, out=out, urdf=urdf, unit_checks=unit_checks)
    mechanism = parameter_file_mechanism(parameters, urdf)
    joints = mechanism.actuated_joint_names
    recording = _mechanism_recording_csv(mechanism, data, require_torque=False, unit_checks=unit_checks)
    settings, origin = _prediction_signal(parameters, params, config)
    prediction = _stamp_prediction(mechanism, parameters, recording, settings)
    identified = _identified(mechanism, parameters)
    torques = _predicted(prediction, identified)
    judged = controlled(mechanism, recording)
    rows = recording.time.shape[0]
    predicted = np.isfinite(torques).any(axis=1)
    header = ["time"] + [f"{joint}/{kind}" for joint in joints for kind in ("position", "effort")]
    table = np.empty((rows, 1 + 2 * len(joints)))
    table[:, 0] = recording.time
    table[:, 1::2] = judged.position
    table[:, 2::2] = torques
    write_table(out, header, table)
    error = moving_error = None
    moving = moving_samples(prediction, identified, settings.min_speed_rad_s)
    delay_s = aligned_torque_delay_s(parameters)
    if judged.effort is not None or judged.current is not None:
        measured = read_late(recording.time, judged.joint_torques(parameters.drive_chain()), delay_s)
        error = relative_error_over(measured, torques, np.isfinite(torques))
        moving_error = relative_error_over(measured, torques, moving)
    return PredictFileResult(
        mechanism=mechanism,
        passive_recorded=recording.n_joints == mechanism.n_tree,
        out=out,
        rows=rows,
        predicted_rows=int(np.count_nonzero(predicted)),
        signal=settings,
        signal_from=origin,
        params=params,
        unidentified=tuple(joint for joint in joints if joint not in parameters.identified_joints()),
        relative_error=error,
        moving_relative_error=moving_error,
        moving=int(np.count_nonzero(moving)),
        joint_samples=int(np.count_nonzero(np.isfinite(torques))),
        torque_delay_s=delay_s,
    )


def _predict_plan_file(
    parameters: ParameterFile, *, data: Path, out: Path, urdf: Path | None, unit_checks: bool
) -> PlanPredictionResult:
    """``dynid predict`` of a planned motion (``dynid excite``'s CSV): the model's torques at every row.

    The plan gives positions, velocities and accelerations exactly, so they are used as they
    are (no filtering, no segment edges): ``τ = W(q, q̇, q̈) χ`` ([Gautier2013] eq. (4);
    a closed-loop robot's actuated torques along its completed motion, [Briot2012] eq. (6)),
    the torques the identified model says the motion needs before it is run. Columns as for a
    recording (``time``, ``J/position``, ``J/effort``; ``nan`` for a joint identified without
    equations); the result gives each joint's largest torque against its URDF effort limit.
    """
    plan = read_trajectory_csv(data)
    values, terms, chain = parameters.values(), parameters.drive_terms(), parameters.drive_chain()
    mechanism = parameter_file_mechanism(parameters, urdf)
    joints = mechanism.actuated_joint_names
    motion, dq, ddq = _planned_motion(plan, joints, data, parameters.source)
    if unit_checks:
        check_units(mechanism, motion, str(data))
    torques = predict_torques(mechanism, chain, terms, values, motion.position, dq, ddq)
    limits = mechanism.robot.effort_limits[mechanism.actuated]
    identified = parameters.identified_joints()
    torques[:, [joint not in identified for joint in joints]] = np.nan
    rows = plan.time.shape[0]
    header = ["time"] + [f"{joint}/{kind}" for joint in joints for kind in ("position", "effort")]
    table = np.empty((rows, 1 + 2 * len(joints)))
    table[:, 0], table[:, 1::2], table[:, 2::2] = plan.time, motion.position, torques
    write_table(out, header, table)
    peaks = tuple(
        (joint, float(np.max(np.abs(torques[:, j]))) if joint in identified else None, float(limits[j]))
        for j, joint in enumerate(joints)
    )
    return PlanPredictionResult(
        plan=data,
        out=out,
        rows=rows,
        peaks=peaks,
        unidentified=tuple(joint for joint in joints if joint not in identified),
    )


def _planned_motion(
    plan: SampledTrajectory, joints: Sequence[str], data: Path, source: str
) -> tuple[Recording, np.ndarray, np.ndarray]:
    """The plan's positions and velocities of ``joints`` (in that order) as a recording (for the unit checks),
    and their velocities and accelerations.

    Raises
    ------
    DataError
        When the plan lacks one of ``joints`` (of the parameter file ``source``).
    """
    missing = [joint for joint in joints if joint not in plan.joint_names]
    if missing:
        raise DataError(f"{data} plans no motion for joints {missing} of {source} (it has {list(plan.joint_names)})")
    order = [plan.joint_names.index(joint) for joint in joints]
    dq = plan.dq[:, order]
    return (
        Recording(time=plan.time, joint_names=tuple(joints), position=plan.q[:, order], velocity=dq),
        dq,
        plan.ddq[:, order],
    )


@dataclasses.dataclass(frozen=True)
class ExciteFileResult:
    """What ``dynid excite`` (:func:`excite_file`) planned and wrote.

    Attributes
    ----------
    plan
        The excitation plan (trajectory, condition number, torque and limit usage, warnings).
    joints
        The controlled joints, in the order of the plan's usage.
    rate_hz
        The trajectory's sample rate (Hz).
    payload
        The plan is for a payload's parameters (its condition number is of the load's regressor).
    out
        The trajectory CSV written.
    """

    plan: ExcitationPlan
    joints: tuple[str, ...]
    rate_hz: float
    payload: bool
    out: Path


def excite_file(
    *, urdf: Path, config: Path | None, mode: str, out: Path, progress: ProgressCallback = ignore_progress
) -> ExciteFileResult:
    """``dynid excite``: plan an excitation trajectory within the limits and write it as CSV.

    ``progress`` is told each stage of the plan as it begins and the search's budget spent at
    every cost evaluation (:mod:`~dynamic_identification.core.progress`).
    """
    # Imported here: the planner, its search and scipy.stats' Latin hypercube are for this verb alone (issue 26).
    from dynamic_identification.core.excitation.plan import plan_excitation

    _check_output(out, urdf, config)
    warn_unread_keys(config, "excite", urdf=urdf)
    monitor = Cancellation(progress=progress)
    identification = load_config(str(config) if config else None)
    settings = load_excitation_settings(str(config) if config else None, mode=mode)
    parameters_file = ros_parameters(str(config), "excitation").get("parameters_file") if config else None
    # The mechanism and an identified torque model are read per kind of file; the plan is one.
    mechanism: Mechanism
    torque_model: TorqueModel | None = None
    if identification.closed_loop:
        mechanism = identification.closed_loop_model(urdf)
    else:
        mechanism = SerialMechanism(load_robot(urdf, identification.joints))
    if parameters_file:
        torque_model = identified_torque_model(str(parameters_file), mechanism)
    joints = mechanism.actuated_joint_names
    plan = plan_excitation(
        mechanism,
        identification.drive_chain(mechanism.n_actuated, joints),
        identification.drive_terms,
        settings,
        torque_model=torque_model,
        cancellation=monitor,
    )
    monitor.report(f"writing {out}")
    write_trajectory_csv(out, plan.trajectory)
    return ExciteFileResult(plan, joints, settings.rate_hz, settings.mode == "payload", out)


@dataclasses.dataclass(frozen=True)
class StreamFileResult:
    """What ``dynid stream`` (:func:`stream_file`) ran and wrote.

    Attributes
    ----------
    out
        The JSON lines written, one per update.
    update_seconds
        The wall time (s) of each update.
    publishable
        How many updates were publishable.
    last
        The last update (``None``: the recording gave none).
    data_s, wall_s
        The data time (s) fed, and the wall time (s) feeding it took: the window's updates and writing their lines,
        not reading the recording, building the model or starting Python.
    start_s
        The recording's first stamp, s (data time).
    params_out
        Where the last publishable estimate was asked for (``None``: not asked for).
    published
        The update written to ``params_out`` (``None``: none was publishable, nothing written).
    dropped
        What reading the recording dropped, one phrase (:func:`read_recording_input`); empty: nothing.
    """

    out: Path
    update_seconds: tuple[float, ...]
    publishable: int
    last: WindowUpdate | None
    data_s: float
    wall_s: float
    start_s: float
    params_out: Path | None
    published: WindowUpdate | None
    dropped: str = ""


def stream_file(
    *,
    urdf: Path,
    data: Path | None,
    config: Path | None,
    out: Path,
    params_out: Path | None = None,
    bag: Path | None = None,
    unit_checks: bool = True,
) -> StreamFileResult:
    """``dynid stream``: the estimator node's sliding window, run offline on a recording as fast as possible.

    Samples are fed in chunks of ``window.update_period_s`` of data time, with an
    update after each chunk; every update is one JSON line of ``out`` (see
    :func:`update_record`). With ``params_out``, the last publishable estimate is
    written there as a parameter YAML. The recording is the CSV ``data`` or the rosbag2 directory ``bag``.
    """
    _check_output(out, urdf, data, config, bag, params_out)
    if params_out is not None:
        _check_output(params_out, urdf, data, config, bag, out, option="--params-out")
    warn_unread_keys(config, "stream", urdf=urdf)
    mechanism, parsed, drive_chain, recording, dropped = load_mechanism_inputs(
        urdf, data, config, bag=bag, unit_checks=unit_checks
    )
    # The window is fed the controlled joints' samples, whatever else the recording holds.
    recording = controlled(mechanism, recording)
    joints = mechanism.actuated_joint_names
    settings, bounds, dynamic_model, consistency = configured_window_parts(parsed, mechanism, drive_chain)
    estimator = SlidingWindowEstimator(dynamic_model, settings, bounds=bounds, consistency=consistency)
    torques = recording.joint_torques(drive_chain)
    positions = recording.position
    seconds: list[float] = []
    publishable = 0
    last: WindowUpdate | None = None
    best: WindowUpdate | None = None
    duration = 0.0
    previous = np.nan
    fed = 0
    started = wall_clock.perf_counter()
    with atomic_output(out) as stream:
        for chunk, restart in stream_chunks(recording.time, settings.update_period_s, positions):
            fed += chunk.size
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
    stale = recording.time.size - fed
    if stale:
        LOGGER.warning(
            f"{stale} of {recording.time.size} rows left out: stamped no later than the row before them, and less"
            f" than {BACKWARD_JUMP_S:g} s earlier (stale or sent twice, as the estimator node drops them; a stamp"
            f" {BACKWARD_JUMP_S:g} s or more earlier restarts the window, a repeated stamp with new positions is a"
            " sample)"
        )
    if params_out is not None and best is not None:
        document = window_parameter_file(dynamic_model, best, settings=settings)
        write_parameters_atomic(
            params_out, dataclasses.replace(document, quality={**document.quality, **_dropped_quality(dropped)})
        )
    return StreamFileResult(
        out=out,
        update_seconds=tuple(seconds),
        publishable=publishable,
        last=last,
        data_s=duration,
        wall_s=wall,
        start_s=float(recording.time[0]),
        params_out=params_out,
        published=best if params_out is not None else None,
        dropped=dropped,
    )


# --------------------------------------------------------------------------- mechanisms
def load_mechanism_inputs(
    urdf: Path, data: Path | None, config_path: Path | None, *, bag: Path | None = None, unit_checks: bool = True
) -> tuple[Mechanism, IdentificationConfig, DriveChain, Recording, str]:
    """The mechanism of a configuration, its recording in the mechanism's joint order, and what reading it dropped
    (:func:`read_recording_input`).

    A serial robot (:func:`load_identification_inputs`), or a closed-loop robot when the configuration has
    ``robot.loop_closures`` ([Briot2012] §2): its recording must hold the actuated joints (positions, torques or
    currents); when it also holds the position of every passive joint of the opened tree, those are kept (checked
    against the closures, they choose the assembly mode). It comes back in the tree's kinematic order: every tree
    joint, or the actuated joints only.
    """
    config = load_config(str(config_path) if config_path else None)
    source = str(data or bag)
    mechanism: Mechanism
    if not config.closed_loop:
        robot, config, drive_chain, recording, dropped = load_identification_inputs(
            urdf, data, config_path, bag=bag, unit_checks=unit_checks
        )
        mechanism = SerialMechanism(robot)
    else:
        recording, dropped = read_recording_input(data, bag, config)
        mechanism = config.closed_loop_model(urdf)
        recording = _mechanism_recording(mechanism, recording, source, unit_checks=unit_checks)
        if recording.effort is None and config.drive_gains is None:
            raise DataError(
                f"{source} has motor currents but no drive gains are configured:"
                " give drive_chain.drive_gains (N·m/A) and gear_ratios of the actuated joints in --config"
            )
        drive_chain = config.drive_chain(mechanism.n_actuated, mechanism.actuated_joint_names)
    if unit_checks:
        check_torques(mechanism, config, drive_chain, recording, source)
    return mechanism, config, drive_chain, recording, dropped


def check_torques(
    mechanism: Mechanism, config: IdentificationConfig, drive_chain: DriveChain, recording: Recording, source: str
) -> None:
    """Refuse a recording of ``mechanism`` with a joint torque (measured, or its currents through ``drive_chain``)
    that no drive produces: beyond :data:`~dynamic_identification.io.sanity.MEASURED_TORQUE_FACTOR` times the
    controlled joint's effort limit, the configuration's ``limits.effort`` or the URDF's
    (:func:`~dynamic_identification.io.sanity.torque_problem`)."""
    effort = config.plausibility_bounds(mechanism).equation_effort
    actuated = controlled(mechanism, recording)
    check_recording_torques(
        actuated.joint_names,
        actuated.joint_torques(drive_chain),
        effort,
        source,
        from_currents=actuated.effort is None,
    )


def _opened_tree_note(mechanism: Mechanism, config: Path | None) -> str:
    """The comment ``--urdf-out`` puts at the top of a closed-loop robot's URDF: where its closures are."""
    if not mechanism.closures:
        return ""
    closures = ", ".join(f"{c.frame_a}-{c.frame_b} ({c.type})" for c in mechanism.closures)
    return (
        f"the opened tree of a closed-loop robot: its loop closures {closures} and actuated joints"
        f" {', '.join(mechanism.actuated_joint_names)} are not in this file but in the configuration {config}"
        " (robot.loop_closures, robot.actuated_joints) [Briot2012]"
    )


def _mechanism_recording_csv(mechanism: Mechanism, path: Path, *, require_torque: bool, unit_checks: bool) -> Recording:
    """A recording CSV of ``mechanism`` (:func:`_mechanism_recording`)."""
    recording = read_recording_csv(path, require_torque=require_torque)
    return _mechanism_recording(mechanism, recording, str(path), unit_checks=unit_checks)


def _mechanism_recording(mechanism: Mechanism, recording: Recording, source: str, *, unit_checks: bool) -> Recording:
    """The recording of ``mechanism`` in its tree's order: every tree joint when it has them all (a closed-loop
    robot's passive joints with encoders), else the controlled ones (refused without them); with ``unit_checks``
    in s and rad (:func:`check_units`)."""
    every = set(mechanism.joint_names) <= set(recording.joint_names)
    recording = recording.select(mechanism.joint_names if every else mechanism.actuated_joint_names)
    if unit_checks:
        check_units(mechanism, recording, source)
    return recording


# --------------------------------------------------------------------------- drive gains and payload


@dataclasses.dataclass(frozen=True)
class GainsFileResult:
    """What ``dynid gains`` (:func:`gains_file`) identified and wrote.

    Attributes
    ----------
    mechanism, passive_recorded
        The robot, and whether the recordings hold its passive joints too (a closed-loop robot).
    payload
        The known payload, on the frame used.
    payload_file_frame
        The frame the payload file named when ``--frame`` replaced it (``None``: the file's frame was used).
    drive_gains
        The identification: drive gains (N·m/A) with σ, efficiencies, model choice, fit.
    out
        The drive-gains file written.
    """

    mechanism: Mechanism
    passive_recorded: bool
    payload: Payload
    payload_file_frame: str | None
    drive_gains: DriveGainsResult
    out: Path


def gains_file(
    *,
    urdf: Path,
    data: Path,
    data_loaded: Path,
    payload: Path,
    frame: str | None,
    config: Path | None,
    out: Path,
    efficiency: bool | None = None,
    unit_checks: bool = True,
) -> GainsFileResult:
    """``dynid gains``: drive gains and base parameters by IDIM-TLS with a known payload ([Briot2012] eq. (11)-(13)).

    ``data`` is a recording without load, ``data_loaded`` one with the payload of the
    payload YAML ``payload`` on ``frame`` (default: the file's frame); both need
    ``J/current`` columns (A). The configuration gives the joints, the gear ratios and
    coupling and the nominal drive gains (only the first weights use them: TLS
    identifies the gains, the known payload fixes their scale). Writes the drive-gains
    file (:mod:`~dynamic_identification.io.payload`) whose ``drive_chain.drive_gains``
    the recorder and ``dynid identify --config`` read as they are.

    A closed-loop robot (``robot.loop_closures``, ``robot.actuated_joints`` in the configuration) is identified
    through the same mechanism seam: the recordings hold the actuated joints' currents and the positions of the
    actuated (or every tree) joint, the payload sits on a frame of the opened tree (the platform's), and its
    motors get the same models.

    With ``efficiency`` (``estimation.efficiency`` of the configuration when ``None``, on by
    default) each motor gets a driving and a braking gain, which give its drive gain and
    its transmission efficiency ([Swevers2002] eq. (8)); both are returned and written,
    when the data choose that model.
    """
    _check_output(out, urdf, data, data_loaded, payload, config)
    warn_unread_keys(config, "gains", urdf=urdf)
    parsed = load_config(str(config) if config else None)
    if efficiency is not None:
        parsed = replace(parsed, efficiency=efficiency)
    known = load_payload(payload)
    file_frame = None
    if frame is not None and frame != known.frame:
        file_frame, known = known.frame, replace(known, frame=frame)
    mechanism, chain, recordings, passive_recorded = _gain_recordings(
        urdf, (data, data_loaded), config, parsed, unit_checks
    )
    frame_id(mechanism.robot, known.frame)  # an unknown frame is refused before any work
    joints = mechanism.actuated_joint_names
    result = identify_drive_gains(
        DynamicModel.create(mechanism, chain, parsed.drive_terms),
        unloaded=recordings[0],
        loaded=recordings[1],
        payload=known,
        settings=parsed.identification_settings(),
        efficiency=parsed.efficiency,
    )
    write_drive_gains_atomic(out, result, chain, joints, payload=known, stamp=wall_clock.time())
    return GainsFileResult(
        mechanism=mechanism,
        passive_recorded=passive_recorded,
        payload=known,
        payload_file_frame=file_frame,
        drive_gains=result,
        out=out,
    )


def _gain_recordings(
    urdf: Path,
    paths: tuple[Path, Path],
    config: Path | None,
    parsed: IdentificationConfig,
    unit_checks: bool,
) -> tuple[Mechanism, DriveChain, list[CurrentRecording], bool]:
    """The mechanism, its drive chain, the current recordings of ``paths`` (unloaded, loaded) in its controlled
    joints' order, and whether the first recording holds every tree joint (a closed-loop robot's passive joints)."""
    if parsed.closed_loop and config is not None:
        model, _, chain, first, _ = load_mechanism_inputs(urdf, paths[0], config, unit_checks=unit_checks)
        second = load_mechanism_inputs(urdf, paths[1], config, unit_checks=unit_checks)[3]
        pairs = ((paths[0], first), (paths[1], second))
        recordings = []
        for path, recording in pairs:
            currents = recording.select(model.actuated_joint_names).current
            if currents is None:
                raise DataError(
                    f"{path} has no motor currents (J/current, A) of the actuated joints: the gains need them"
                )
            recordings.append(CurrentRecording.create(recording.time, recording.position, currents, name=str(path)))
        return model, chain, recordings, first.n_joints == model.n_tree
    unloaded_recording = read_recording_csv(paths[0])
    robot = load_robot(urdf, parsed.joints or unloaded_recording.joint_names)
    recordings = []
    for path, recording in ((paths[0], unloaded_recording), (paths[1], read_recording_csv(paths[1]))):
        selected = recording.select(robot.joint_names)
        if unit_checks:
            check_units(robot, selected, str(path))
        recordings.append(CurrentRecording.create(selected.time, selected.position, selected.current, name=str(path)))
    return SerialMechanism(robot), parsed.drive_chain(robot.n_joints, robot.joint_names), recordings, False


def _parameter_file_robot(parameters: ParameterFile) -> RobotModel:
    """The serial robot a parameter file names, as every reader takes it
    (:func:`~dynamic_identification.io.parameters.parameter_file_mechanism`: its URDF relative to the file,
    ``package://`` or absolute, checked against ``robot.urdf_sha256``; the file giving every base parameter). A
    closed-loop robot's file is refused: the load's model is a serial robot's ([Swevers2002])."""
    if parameters.closed_loop:
        raise DataError(
            f"{parameters.source} describes a closed-loop robot (robot.loop_closures): dynid payload identifies a"
            " load on a serial robot"
        )
    return parameter_file_mechanism(parameters).robot


@dataclasses.dataclass(frozen=True)
class PayloadFileResult:
    """What ``dynid payload`` (:func:`payload_file`) identified and wrote.

    Attributes
    ----------
    estimate
        The load's inertial parameters with σ and the fit ([Swevers2002]).
    joints
        The robot's joints, in the order of the estimate's per-joint values.
    polynomial
        The currents were converted with the current polynomial ([Swevers2002] eq. (4)), not the drive gains.
    out
        The payload YAML written.
    """

    estimate: PayloadEstimate
    joints: tuple[str, ...]
    polynomial: bool
    out: Path


def payload_file(
    *,
    params: Path,
    data: Path,
    frame: str,
    config: Path | None,
    out: Path,
    method: str = "ml",
    efficiency: bool = True,
    period_s: float | None = None,
    harmonics: int = 5,
    unit_checks: bool = True,
) -> PayloadFileResult:
    """``dynid payload``: the load's mass, centre of mass and inertia from a recording with it ([Swevers2002]).

    The robot's identified model ``params`` (``dynid identify --out``) is the a-priori
    knowledge: its link parameters, rotor inertias, offsets, drive chain are fixed;
    the load's 10 inertial parameters, the friction and (``efficiency``) the
    transmission efficiencies of the moving motors are estimated by maximum likelihood
    ([Swevers2002] eq. (18), ``method="ml"``) or the linear estimate (``"linear"``).
    Currents (``J/current``, A) are converted with the current polynomial of the
    configuration's recorder block (``current_polynomial``, [Swevers2002] eq. (4)) when
    it has one, else with the drive gains: those of the configuration when it sets
    them, else the parameter file's; a recording of joint torques (``J/effort``) is
    mapped back to currents through the same drive chain. With ``period_s`` the
    recording is a periodic excitation (``dynid excite --mode payload``) of
    ``harmonics`` lines, averaged over its periods with the noise taken from their
    scatter ([Swevers2002] §4.3). The torques are read with the delay the identification of ``params`` aligned its
    own with (``quality.torque_delay``): the load and the robot's model see the driver in time alike. Writes the
    payload YAML (with ``std``) and returns the estimate.
    """
    from dynamic_identification.core.identification.payload import RobotPrior, identify_payload

    _check_output(out, params, data, config)
    warn_unread_keys(config, "payload")
    parameters = load_parameters(params)
    robot = _parameter_file_robot(parameters)
    frame_id(robot, frame)  # an unknown frame is refused before any work
    parsed = load_config(str(config) if config else None)
    recording = read_recording_csv(data).select(robot.joint_names)
    if unit_checks:
        check_units(robot, recording, str(data))
    chain = parameters.drive_chain()
    if parsed.drive_gains is not None:
        chain = parsed.drive_chain(robot.n_joints, robot.joint_names)
    if unit_checks:
        check_torques(SerialMechanism(robot), parsed, chain, recording, str(data))
    polynomial_values = ros_parameters(str(config), "recorder").get("current_polynomial") if config else None
    polynomial = None
    if recording.current is not None and polynomial_values:
        polynomial = current_polynomial(np.asarray(polynomial_values, dtype=float), robot.n_joints)
    currents = recording.current if recording.current is not None else chain.motor_currents(recording.joint_torques())
    prior = RobotPrior.from_parameters(robot, chain, parameters.drive_terms(), parameters.values())
    if method not in ("ml", "linear"):
        raise DataError(f"method must be 'ml' or 'linear', got {method!r}")
    estimate = identify_payload(
        prior,
        frame,
        recording.time,
        recording.position,
        currents,
        period_s=period_s,
        harmonics=harmonics,
        method="ml" if method == "ml" else "linear",
        efficiency=efficiency,
        polynomial=polynomial,
        settings=parsed.identification_settings().signal,
        torque_delay_s=aligned_torque_delay_s(parameters),
    )
    identification = payload_identification_record(estimate, robot.joint_names)
    identification["robot_parameters"] = str(params)
    identification["recording"] = str(data)
    write_payload_atomic(out, estimate.payload, identification=identification)
    return PayloadFileResult(estimate=estimate, joints=robot.joint_names, polynomial=polynomial is not None, out=out)
