"""Drive gains of a closed-loop (parallel) robot identified from motor currents ([Briot2012] eq. (8)-(13)).

The recordings go through the pipeline every mechanism shares
(:func:`~dynamic_identification.core.identification.completion.complete_recording`, the
:class:`~dynamic_identification.core.identification.observations.RowBuilder`).

Drive gains ([Briot2012] eq. (8)-(13))
--------------------------------------
:func:`identify_closed_loop_drive_gains` builds the same decimated rows from motor
currents for a recording without load and one with a known payload on a frame of the
opened tree (a platform frame, e.g. the five-bar's distal tip), whose actuated torques are
``J_tᵀ Y_p φ_payload`` (:func:`closed_loop_payload_regressor`), and solves them with the
IDIM-TLS of :func:`~dynamic_identification.core.drive_gains.drive_gains_from_rows`: scale
fixed by ``δ = 1``, per-joint weights, σ for every gain and base parameter.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dynamic_identification.core.closed_loop import ClosedLoopModel, ClosedLoopMotion, base_parameters
from dynamic_identification.core.drive_gains import (
    CurrentRecording,
    DriveGainsResult,
    GainRows,
    current_columns,
    drive_gains_from_rows,
)
from dynamic_identification.core.errors import DataError, ModelError
from dynamic_identification.core.identification import IdentificationSettings, SignalSettings, decimation_factor
from dynamic_identification.core.identification.completion import (
    PASSIVE_TOLERANCE_RAD,
    CompletedRecording,
    CompletedSegment,
    check_travel,
    complete_recording,
)
from dynamic_identification.core.identification.observations import DecimatedRows, RowBuilder, output_blocks
from dynamic_identification.core.model import DriveChain, DriveTerms
from dynamic_identification.core.payload import Payload, PayloadDynamics, frame_id
from dynamic_identification.core.regressors import BaseParameters


def closed_loop_payload_regressor(model: ClosedLoopModel, frame: str, motion: ClosedLoopMotion) -> np.ndarray:
    """Actuated torques per unit payload parameter, ``J_tᵀ Y_p(q_t, q̇_t, q̈_t)``, shape ``(N, n_a, 10)``.

    A payload fixed to ``frame`` (a frame of the opened tree, e.g. the platform's) is a
    link ``m + 1`` of the tree ([Briot2012] eq. (11)); its virtual tree torques ``Y_p φ``
    (:class:`~dynamic_identification.core.payload.PayloadDynamics`, Pinocchio's frame body
    regressor) are projected onto the actuated joints like the tree's own (eq. (6)).
    ``φ`` in Pinocchio's ``toDynamicParameters()`` order, about the frame origin.

    Raises
    ------
    ModelError
        Unknown frame.
    """
    dynamics = PayloadDynamics(model.robot, frame)
    out = np.empty((motion.q.shape[0], model.n_actuated, 10))
    for k in range(motion.q.shape[0]):
        out[k] = motion.jacobians[k].T @ dynamics.regressor(motion.q[k], motion.dq[k], motion.ddq[k])
    return out


def identify_closed_loop_drive_gains(
    model: ClosedLoopModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    *,
    unloaded: CurrentRecording,
    loaded: CurrentRecording,
    payload: Payload,
    base: BaseParameters | None = None,
    settings: IdentificationSettings | None = None,
    passive_tolerance_rad: float = PASSIVE_TOLERANCE_RAD,
) -> DriveGainsResult:
    """Drive gains of the actuated motors and closed-loop base parameters by IDIM-TLS ([Briot2012] eq. (11)-(13)).

    ``W_tot = [[−W_a, V_τa, 0], [−W_b, V_τb, −W_kL χ_kL]]`` with the closed-loop ``W``
    (eq. (6)-(7)), the current columns ``V_τ`` of the actuated motors (eq. (8)) and the
    known payload's actuated torques ``W_kL χ_kL = J_tᵀ Y_p φ_payload``; solved by
    :func:`~dynamic_identification.core.drive_gains.drive_gains_from_rows` (scale by
    ``δ = 1``, per-joint weights, σ).

    Parameters
    ----------
    model
        The closed-loop mechanism (its URDF inertial values are not used).
    drive_chain
        Gear ratios and coupling of the actuated motors; its drive gains are the nominal
        ones (first weights, reported), not a constraint.
    terms
        Drive terms of the base-parameter model.
    unloaded, loaded
        Recordings without and with the payload: positions of the actuated joints or of
        every tree joint, currents of the actuated motors ``(N, n_a)``.
    payload
        The known payload (all 10 inertial parameters) and the tree frame it is fixed to.
    base
        Closed-loop base parameters (computed when omitted).
    settings
        Signal processing and data requirements (``settings.signal``, ``min_samples``,
        ``min_motion_rad``, ``block_samples``).
    passive_tolerance_rad
        See :func:`complete_recording`.

    Returns
    -------
    DriveGainsResult
        Motor-side gains (N·m/A) with σ, base parameters with σ, fit quality; per-joint
        quantities are per actuated joint.

    Raises
    ------
    DataError
        A recording of the wrong size, with too few samples, or whose passive positions
        contradict the closure.
    ModelError
        Sizes of the drive chain and the mechanism disagree, or the payload frame is unknown.
    InsufficientExcitationError
        The robot stood still, or the payload does not fix the scale (``δ ≈ 0``).
    LoopClosureError
        A recording reaches a singularity (names the recording and sample).
    """
    settings = settings or IdentificationSettings()
    _check_chain(model, drive_chain)
    frame_id(model.robot, payload.frame)  # refuses an unknown frame before any work
    base = base or base_parameters(model, drive_chain, terms)
    _check_base(model, terms, base)
    rows = [
        _gain_rows(model, drive_chain, terms, base, recording, settings, load, passive_tolerance_rad)
        for recording, load in ((unloaded, None), (loaded, payload))
    ]
    return drive_gains_from_rows(rows[0], rows[1], base=base, nominal_gains=drive_chain.drive_gains)


def _gain_rows(
    model: ClosedLoopModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    base: BaseParameters,
    recording: CurrentRecording,
    settings: IdentificationSettings,
    payload: Payload | None,
    passive_tolerance_rad: float,
) -> GainRows:
    """Decimated closed-loop rows of one current recording, with the currents and the payload torques."""
    where = f"recording {recording.name!r}: "
    n_a = model.n_actuated
    if recording.currents.shape[1] != n_a:
        raise DataError(f"{where}has {recording.currents.shape[1]} currents, the mechanism {n_a} actuated joints")
    _check_samples(recording.time, settings, where)
    completed = complete_recording(
        model,
        recording.time,
        recording.q,
        recording.currents,
        settings=settings.signal,
        passive_tolerance_rad=passive_tolerance_rad,
        name=recording.name,
    )
    _check_travel(model, completed, settings)
    builder = _builder(model, drive_chain, terms, base, completed.rate_hz, completed.signal)
    phi = payload.dynamic_parameters() if payload is not None else None
    segments = []
    for segment in completed.segments:
        known = np.zeros((segment.time.shape[0], n_a))
        if payload is not None and phi is not None:
            known = closed_loop_payload_regressor(model, payload.frame, segment.motion) @ phi
        segments.append(
            CompletedSegment(
                time=segment.time,
                motion=segment.motion,
                signals=np.concatenate([segment.signals, known], axis=1),
                rate_hz=segment.rate_hz,
            )
        )
    matrices, currents, torques, masks = [], [], [], []
    for rows in _segment_rows(builder, segments, settings.block_samples):
        matrices.append(rows.observation_matrix)
        currents.append(rows.torques[:, :n_a])
        torques.append(rows.torques[:, n_a:])
        masks.append(rows.valid)
    return GainRows(
        observation_matrix=np.concatenate(matrices),
        current_columns=current_columns(drive_chain, np.concatenate(currents)),
        known=np.concatenate(torques),
        valid=np.concatenate(masks),
    )


# --------------------------------------------------------------------- internals
def _check_chain(model: ClosedLoopModel, drive_chain: DriveChain) -> None:
    if drive_chain.n_joints != model.n_actuated:
        raise ModelError(
            f"drive chain has {drive_chain.n_joints} joints, the mechanism has {model.n_actuated} actuated joints"
        )


def _check_base(model: ClosedLoopModel, terms: DriveTerms, base: BaseParameters) -> None:
    expected = model.standard_parameter_names(terms)
    if base.standard_names != expected:
        raise ModelError(
            "base parameters do not regroup the standard parameters of this mechanism and drive terms"
            f" ({len(base.standard_names)} standard parameters, expected {len(expected)}):"
            " use closed_loop.base_parameters(model, drive_chain, terms)"
        )


def _check_samples(time: np.ndarray, settings: IdentificationSettings, where: str) -> None:
    samples = int(np.shape(time)[0]) if np.ndim(time) else 0
    if samples < settings.min_samples:
        raise DataError(f"{where}too few samples: {samples} < min_samples={settings.min_samples}")


def _check_travel(model: ClosedLoopModel, completed: CompletedRecording, settings: IdentificationSettings) -> None:
    """Refuse a recording whose actuated joints stood still (the serial ``check_motion``)."""
    actuated = np.concatenate([segment.motion.q[:, model.actuated] for segment in completed.segments])
    check_travel(model, actuated, min_motion_rad=settings.min_motion_rad)


def _builder(
    model: ClosedLoopModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    base: BaseParameters,
    rate_hz: float,
    signal: SignalSettings,
) -> RowBuilder:
    factor = decimation_factor(signal, rate_hz)
    return RowBuilder.create(model, drive_chain, terms, base, decimation=factor, min_speed_rad_s=signal.min_speed_rad_s)


def _segment_rows(
    builder: RowBuilder, segments: tuple[CompletedSegment, ...] | list[CompletedSegment], block_samples: int
) -> Iterator[DecimatedRows]:
    """Rows of every segment, built in blocks of about ``block_samples`` grid samples (bounded memory)."""
    for segment in segments:
        motion = segment.motion
        blocks = output_blocks(segment.time.shape[0], block_samples, builder.decimator.factor, builder.reach)
        for start, block, outputs in blocks:
            yield builder.rows(
                motion.q[block],
                motion.dq[block],
                motion.ddq[block],
                segment.signals[block],
                start=start,
                outputs=outputs,
                projection=motion.jacobians[block],
            )
