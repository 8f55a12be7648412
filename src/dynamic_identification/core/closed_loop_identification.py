"""Closed-loop (parallel) robots identified from recordings: observations and drive gains.

The signal pipeline of the serial IDIM ([Gautier2013] §IV.A) with the closed-loop model of
[Briot2012] §2 in place of the serial regressor:

1. stamps cleaned, each contiguous segment resampled on a uniform grid, the **actuated**
   positions low-passed (zero phase) and differentiated (band-pass derivatives), exactly as
   :func:`~dynamic_identification.core.identification.estimate_motion` does for a serial robot;
2. the tree motion completed from the filtered actuated motion
   (:meth:`~dynamic_identification.core.closed_loop.ClosedLoopModel.complete_motion`:
   passive positions from the loop closures, eq. (2); velocities ``q̇_t = J_t q̇_a``, eq. (3);
   accelerations, eq. (4)), so the motion that enters the model closes the loops exactly;
3. the closed-loop observation matrix ``J_tᵀ φ_tree`` plus the drive terms of the actuated
   joints (eq. (6)) in the closed-loop base parameters (eq. (7)), built in blocks of
   ``block_samples`` with the decimation filter's support on both sides (the full-rate ``W``
   is never held; the completed tree motion and ``J_t`` are, per segment), and the parallel
   decimation ([Gautier2013] eq. (13)-(14)) applied to ``Y`` and to every column of ``W``;
   equations within the filter's reach of an actuated motor slower than
   ``min_speed_rad_s`` are masked (the stick phases ``Fc sign(q̇)`` does not describe).

What the positions may hold
---------------------------
* **The actuated joints only** ``(N, n_a)``: the passive ones follow from the closures, in
  the assembly mode reached by walking from the model's reference configuration.
* **Every joint of the opened tree** ``(N, n_t)`` (passive joints with encoders): each
  recorded sample is checked against the closure first — the passive positions must lie
  within ``passive_tolerance_rad`` of the closed configuration of the recorded actuated
  positions (:meth:`~dynamic_identification.core.closed_loop.ClosedLoopModel.passive_correction`),
  otherwise the recording is refused naming the first sample and joint (a slipped encoder,
  a wrong offset or joint order, or a URDF whose geometry is not the robot's). The measured
  passive positions then choose the assembly mode (they start the completion of each
  segment), but the motion used is still the one completed from the filtered actuated
  positions: measured passive positions carry their own noise and would break the
  consistency ``A_t q̇_t = 0`` that eliminates the closure forces in eq. (6). So both forms
  of a recording in the same assembly mode give the same estimate.

A recording that reaches a parallel singularity, or leaves the workspace, is refused with
the :class:`~dynamic_identification.core.closed_loop.LoopClosureError` of the completion,
whose message and ``sample`` name the recorded sample (index into the given arrays) and
its time.

Drive gains ([Briot2012] eq. (8)-(13))
--------------------------------------
:func:`~dynamic_identification.core.drive_gains.identify_drive_gains` identifies a closed-loop robot's
drive gains through the same :func:`complete_recording` and :class:`ClosedLoopRowBuilder` as any
other :class:`~dynamic_identification.core.mechanism.Mechanism`: both take the seam, a serial robot
being the mechanism without closures.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from dynamic_identification.core.closed_loop import (
    ClosedLoopModel,
    ClosedLoopMotion,
    LoopClosureError,
    base_parameters,
    observation_matrix,
    standard_parameter_names,
    tree_values,
)
from dynamic_identification.core.errors import DataError, ModelError
from dynamic_identification.core.estimation.consistency import ConsistencySettings, ConsistentEstimator
from dynamic_identification.core.excitation.safety import DEFAULT_ACCELERATION_PER_VELOCITY_HZ
from dynamic_identification.core.identification import (
    IdentificationResult,
    IdentificationSettings,
    PreparedObservations,
    SignalSettings,
    SlidingWindowEstimator,
    WindowSettings,
    check_motion,
    decimation_factor,
    estimate_motion,
    identify_observations,
    resolve_signal,
)
from dynamic_identification.core.identification.observations import DecimatingRowBuilder, output_blocks
from dynamic_identification.core.identification.prediction import (
    StampPrediction,
    interpolate_at_stamps,
    parameter_columns,
    predict_in_blocks,
)
from dynamic_identification.core.mechanism import Mechanism
from dynamic_identification.core.model import DriveChain, DriveTerms
from dynamic_identification.core.model import standard_parameter_names as serial_standard_names
from dynamic_identification.core.model import standard_parameters as serial_standard_parameters
from dynamic_identification.core.plausibility import DEFAULT_EFFORT_FACTOR, DEFAULT_MASS_FACTOR, PlausibilityBounds
from dynamic_identification.core.regressors import BaseParameters

PASSIVE_TOLERANCE_RAD = 0.01
"""Default largest distance (rad, or m for a prismatic joint) of a recorded passive position
from the closed configuration of the recorded actuated positions."""

_SAMPLE_PREFIX = re.compile(r"^sample \d+: ")


@dataclass(frozen=True)
class CompletedSegment:
    """One contiguous segment of a recording: filtered actuated motion completed to the tree.

    Attributes
    ----------
    time
        Uniform grid, s (stamps of the recording's clock), shape ``(N,)``.
    motion
        Tree motion and ``J_t`` on the grid (:class:`~dynamic_identification.core.closed_loop.ClosedLoopMotion`).
    signals
        The recording's other signals (torques in N·m, or currents in A) resampled on the grid, ``(N, m)``.
    rate_hz
        Grid rate, Hz.
    """

    time: np.ndarray
    motion: ClosedLoopMotion
    signals: np.ndarray
    rate_hz: float


@dataclass(frozen=True)
class CompletedRecording:
    """The segments of :func:`complete_recording`, their provenance and the signal settings used (every ``auto``
    decided from the actuated motion, with the reasons)."""

    segments: tuple[CompletedSegment, ...]
    input_samples: int
    duplicates_dropped: int
    signal: SignalSettings
    signal_reasons: tuple[str, ...] = ()

    @property
    def rate_hz(self) -> float:
        """Grid rate of the segments, Hz."""
        return self.segments[0].rate_hz


@dataclass(frozen=True)
class ClosedLoopRows:
    """Decimated closed-loop IDIM rows: ``W`` ``(r, n_a, b)``, signals ``(r, m)``, valid equations, grid indices."""

    observation_matrix: np.ndarray
    signals: np.ndarray
    valid: np.ndarray
    index: np.ndarray


@dataclass(frozen=True)
class ClosedLoopRowBuilder(DecimatingRowBuilder):
    """Builds decimated closed-loop base-IDIM rows from completed motion on a uniform grid.

    The closed-loop counterpart of
    :class:`~dynamic_identification.core.identification.RowBuilder`
    ([Briot2012] eq. (6)-(7); [Gautier2013] eq. (13)-(14)): it works on blocks that carry
    :attr:`reach` samples of support on each side of the outputs they produce, so
    consecutive blocks give exactly the rows of the whole signal, and only the entries of
    ``W`` that are not structural zeros (:attr:`BaseParameters.structure`) are filtered.
    """

    model: Mechanism

    @classmethod
    def create(
        cls,
        model: Mechanism,
        drive_chain: DriveChain,
        terms: DriveTerms,
        base: BaseParameters,
        *,
        decimation: int,
        min_speed_rad_s: float,
        stick_periods: int | None = None,
    ) -> ClosedLoopRowBuilder:
        """``stick_periods``: decimation periods masked on each side of a slow sample; ``None``
        masks the filter's whole support (:attr:`reach`), as the serial builder does.

        Raises
        ------
        ModelError
            When the drive chain or the base parameters do not belong to ``model``.
        """
        _check_chain(model, drive_chain)
        _check_base(model, terms, base)
        decimator, min_speed, stick_reach = cls.decimation(
            terms, decimation=decimation, min_speed_rad_s=min_speed_rad_s, stick_periods=stick_periods
        )
        return cls(
            model=model,
            drive_chain=drive_chain,
            terms=terms,
            base=base,
            decimator=decimator,
            min_speed_rad_s=min_speed,
            stick_reach=stick_reach,
        )

    def rows(
        self,
        motion: ClosedLoopMotion,
        signals: np.ndarray,
        *,
        start: int,
        outputs: tuple[int, int],
    ) -> ClosedLoopRows:
        """Rows at grid indices in ``[outputs[0], outputs[1])`` (multiples of the factor) whose
        filter support lies in this block, which covers grid indices ``[start, start + len(motion.q))``.

        ``signals`` ``(L, m)`` (torques, currents, payload torques) are decimated with the
        same filter as ``W``.
        """
        model, base = self.model, self.base
        full = model.observation_matrix(self.drive_chain, self.terms, motion)
        packed = full[..., base.independent][:, base.structure]
        rows = self.decimated_rows(packed, signals, motion.dq[:, model.actuated], start=start, outputs=outputs)
        return ClosedLoopRows(
            observation_matrix=rows.observation_matrix, signals=rows.torques, valid=rows.valid, index=rows.index
        )

    def packed_at(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, *, index: np.ndarray) -> np.ndarray:
        """The non-zero entries of the closed-loop ``W`` at filtered **actuated** motion ``(r, n_a)`` on the grid.

        The sliding window's rows
        (:meth:`~dynamic_identification.core.identification.observations.DecimatingRowBuilder.sampled_rows`)
        evaluate ``W`` on the tree motion completed at these samples only ([Briot2012] eq. (2)-(4), walked
        from the model's reference configuration, so in its assembly mode).

        Raises
        ------
        LoopClosureError
            When the motion reaches a singularity or leaves the workspace (``sample`` is the grid index).
        """
        model, base = self.model, self.base
        if not index.size:
            return np.zeros((0, int(np.count_nonzero(base.structure))))
        try:
            motion = model.complete_motion(q, dq, ddq)
        except LoopClosureError as error:
            grid = None if error.sample is None else int(index[error.sample])
            raise LoopClosureError(
                f"grid sample {grid}: {_SAMPLE_PREFIX.sub('', str(error))}",
                sample=grid,
                residual=error.residual,
                condition_number=error.condition_number,
            ) from error
        full = model.observation_matrix(self.drive_chain, self.terms, motion)
        return full[..., base.independent][:, base.structure]


def complete_recording(
    model: Mechanism,
    time: np.ndarray,
    q: np.ndarray,
    signals: np.ndarray,
    *,
    settings: SignalSettings,
    dq_measured: np.ndarray | None = None,
    passive_tolerance_rad: float = PASSIVE_TOLERANCE_RAD,
    name: str | None = None,
    edges: bool = False,
) -> CompletedRecording:
    """Filtered, differentiated and completed tree motion of a recording, segment by segment.

    Steps 1-2 of the module docstring: stamps cleaned and resampled, actuated positions
    low-passed and differentiated (:func:`~dynamic_identification.core.identification.estimate_motion`),
    then completed to the tree ([Briot2012] eq. (2)-(4)).

    Parameters
    ----------
    time
        Stamps, s, shape ``(N,)``.
    q
        Positions of the actuated joints ``(N, n_a)`` or of every tree joint ``(N, n_t)``,
        rad (m), kinematic order; continuous joints may be wrapped.
    signals
        Other signals to resample on the same grid, shape ``(N, m)`` (torques, currents).
    settings
        Signal processing ([Gautier2013] §IV.A).
    dq_measured
        Measured velocities ``(N, n_a)`` or ``(N, n_t)`` (only the actuated ones are used),
        when ``settings.signal.velocity`` is ``"measured"``.
    passive_tolerance_rad
        With every joint recorded: largest accepted distance of a passive position from
        the closed configuration of the recorded actuated positions, rad (m).
    name
        The recording's name, prefixed to error messages.
    edges
        Keep each segment whole, its ends filtered on extrapolated edges (a prediction of every
        row; see :func:`~dynamic_identification.core.identification.estimate_motion`).

    Raises
    ------
    DataError
        Bad shapes, a non-finite value (naming sample and joint), passive positions that
        contradict the closure (naming sample and joint), bad stamps.
    LoopClosureError
        A recorded sample at a singularity or out of the workspace; message and
        ``sample`` name the recorded sample.
    """
    where = f"recording {name!r}: " if name else ""
    t, positions, values = _validated(model, time, q, signals, where)
    if not (np.isfinite(passive_tolerance_rad) and passive_tolerance_rad > 0.0):
        raise DataError(f"passive_tolerance_rad must be finite and > 0, got {passive_tolerance_rad}")
    all_joints = positions.shape[1] == model.n_tree
    actuated = positions[:, model.actuated] if all_joints else positions
    actuated = _unwrapped(model, actuated)
    if all_joints and model.passive.size:
        _check_passive(model, t, positions, passive_tolerance_rad, where)
    velocities = None
    if dq_measured is not None:
        measured = np.asarray(dq_measured, dtype=float)
        if measured.shape not in ((t.shape[0], model.n_actuated), (t.shape[0], model.n_tree)):
            raise DataError(
                f"{where}dq_measured must have shape ({t.shape[0]}, {model.n_actuated}) or"
                f" ({t.shape[0]}, {model.n_tree}), got {measured.shape}"
            )
        velocities = measured[:, model.actuated] if measured.shape[1] == model.n_tree else measured
    choice = resolve_signal(t, actuated, settings, dq_measured=velocities)
    settings = choice.signal
    motions, duplicates = estimate_motion(t, actuated, settings, torques=values, dq_measured=velocities, edges=edges)
    segments = []
    for motion in motions:
        if motion.torques is None:  # estimate_motion resamples every signal it is given
            raise DataError(f"{where}the signals were lost in resampling")
        guess = None
        if all_joints:
            guess = np.array(positions[_input_sample(t, motion.time[0])], dtype=float)
            guess[model.actuated] = motion.q[0]
        try:
            completed = model.complete_motion(motion.q, motion.dq, motion.ddq, q_guess=guess)
        except LoopClosureError as error:
            raise _at_recorded_sample(error, t, motion.time, where) from error
        segments.append(
            CompletedSegment(time=motion.time, motion=completed, signals=motion.torques, rate_hz=motion.rate_hz)
        )
    return CompletedRecording(
        segments=tuple(segments),
        input_samples=int(t.shape[0]),
        duplicates_dropped=duplicates,
        signal=choice.signal,
        signal_reasons=choice.reasons,
    )


def closed_loop_observations(
    model: ClosedLoopModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    base: BaseParameters,
    time: np.ndarray,
    q: np.ndarray,
    torques: np.ndarray,
    *,
    settings: IdentificationSettings,
    dq_measured: np.ndarray | None = None,
    passive_tolerance_rad: float = PASSIVE_TOLERANCE_RAD,
) -> PreparedObservations:
    """Decimated closed-loop base observation matrix and actuated torques ([Briot2012] eq. (6)-(7), (9)).

    The closed-loop counterpart of
    :func:`~dynamic_identification.core.identification.prepare_observations` (module
    docstring): its result goes to the same estimators, e.g.
    ``weighted_least_squares(obs.observation_matrix, obs.torques, joint_std=…, valid=obs.valid)``.

    Parameters
    ----------
    model
        The closed-loop mechanism.
    drive_chain, terms
        Drive chain and drive terms of the actuated joints.
    base
        Closed-loop base parameters of ``model``, ``drive_chain``, ``terms``
        (:func:`~dynamic_identification.core.closed_loop.base_parameters`).
    time
        Stamps, s, shape ``(N,)``.
    q
        Actuated joint positions ``(N, n_a)``, or every tree joint ``(N, n_t)`` (then checked
        against the closure, see the module docstring), rad (m), kinematic order.
    torques
        Actuated joint torques, N·m, ``(N, n_a)``.
    settings
        Signal processing (``settings.signal``), ``min_samples``, ``min_motion_rad`` and
        ``block_samples``.
    dq_measured
        Measured velocities, used when ``settings.signal.velocity`` is ``"measured"``.
    passive_tolerance_rad
        See :func:`complete_recording`.

    Returns
    -------
    PreparedObservations
        ``observation_matrix`` ``(r, n_a, b)``, ``torques`` ``(r, n_a)``, ``valid`` ``(r, n_a)``
        and provenance.

    Raises
    ------
    DataError
        Too few samples, bad shapes or values, passive positions contradicting the closure.
    InsufficientExcitationError
        No actuated joint moved more than ``settings.min_motion_rad``.
    LoopClosureError
        The recording reaches a singularity or leaves the workspace (names the sample).
    """
    _check_chain(model, drive_chain)
    _check_base(model, terms, base)
    _check_samples(time, settings, "")
    if np.ndim(torques) != 2 or np.shape(torques)[1] != model.n_actuated:
        raise DataError(
            f"torques must have shape (N, {model.n_actuated}), one column per actuated joint, got {np.shape(torques)}"
        )
    completed = complete_recording(
        model,
        time,
        q,
        torques,
        settings=settings.signal,
        dq_measured=dq_measured,
        passive_tolerance_rad=passive_tolerance_rad,
    )
    _check_travel(model, completed, settings)
    builder = _builder(model, drive_chain, terms, base, completed.rate_hz, completed.signal)
    matrices, targets, masks = [], [], []
    for rows in _segment_rows(builder, completed.segments, settings.block_samples):
        matrices.append(rows.observation_matrix)
        targets.append(rows.signals)
        masks.append(rows.valid)
    return PreparedObservations(
        observation_matrix=np.concatenate(matrices),
        torques=np.concatenate(targets),
        valid=np.concatenate(masks),
        input_samples=completed.input_samples,
        duplicates_dropped=completed.duplicates_dropped,
        segments=len(completed.segments),
        rate_hz=completed.rate_hz,
        decimation=builder.decimator.factor,
        signal=completed.signal,
        signal_reasons=completed.signal_reasons,
    )


def closed_loop_bounds(
    model: ClosedLoopModel,
    *,
    effort_limits: np.ndarray | tuple[float, ...] | None = None,
    acceleration_limits: np.ndarray | tuple[float, ...] | None = None,
    effort_factor: float = DEFAULT_EFFORT_FACTOR,
    mass_factor: float = DEFAULT_MASS_FACTOR,
) -> PlausibilityBounds:
    """The plausibility gates of a closed-loop robot (:mod:`~dynamic_identification.core.plausibility`).

    Those of the opened tree (its URDF limits, total mass and reach), with the predicted
    torques judged on the actuated joints, whose equations the closed-loop IDIM has
    ([Briot2012] eq. (6)). ``effort_limits`` (N·m) and ``acceleration_limits`` (rad/s²)
    replace the URDF's; one value per actuated joint or per tree joint.

    Raises
    ------
    ModelError
        A limit list of another length, or a factor below 1.
    """
    robot = model.robot
    effort = tree_values(model, "limits.effort", effort_limits, robot.effort_limits)
    acceleration = tree_values(
        model,
        "limits.acceleration",
        acceleration_limits,
        DEFAULT_ACCELERATION_PER_VELOCITY_HZ * robot.velocity_limits,
    )
    bounds = PlausibilityBounds.from_robot(
        robot,
        effort_limits=effort,
        acceleration_limits=acceleration,
        effort_factor=effort_factor,
        mass_factor=mass_factor,
    )
    return replace(bounds, equations=tuple(int(j) for j in model.actuated))


def identify_closed_loop(
    model: ClosedLoopModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    base: BaseParameters,
    time: np.ndarray,
    q: np.ndarray,
    torques: np.ndarray,
    *,
    settings: IdentificationSettings,
    bounds: PlausibilityBounds | None = None,
    dq_measured: np.ndarray | None = None,
    passive_tolerance_rad: float = PASSIVE_TOLERANCE_RAD,
    consistency: ConsistentEstimator | None = None,
) -> IdentificationResult:
    """Identify a closed-loop robot's base parameters from a recording ([Briot2012] §2-3.1, IDIM-WLS).

    The observations of :func:`closed_loop_observations` go through the identification
    seam (:func:`~dynamic_identification.core.identification.identify_observations`):
    OLS or per-joint WLS, the rank check and the configured reduction, ``σ``, the
    per-joint errors of the actuated joints and the plausibility gates
    (:func:`closed_loop_bounds` by default), exactly as for a serial robot. The friction
    rule of the reduction looks at the travel of the actuated joints.

    Parameters are those of :func:`closed_loop_observations`; ``bounds`` the plausibility gates;
    ``consistency`` (:func:`closed_loop_consistent_estimator`) publishes the physically
    consistent estimate nearest to the data ([Wensing2018], step 5 of the seam).

    Raises
    ------
    DataError, InsufficientExcitationError, LoopClosureError
        As :func:`closed_loop_observations`; too few equations for the base parameters.
    """
    observations = closed_loop_observations(
        model,
        drive_chain,
        terms,
        base,
        time,
        q,
        torques,
        settings=settings,
        dq_measured=dq_measured,
        passive_tolerance_rad=passive_tolerance_rad,
    )
    positions = np.asarray(q, dtype=float)
    actuated = positions[:, model.actuated] if positions.shape[1] == model.n_tree else positions
    return identify_observations(
        base,
        observations,
        settings=settings,
        travel=np.ptp(_unwrapped(model, actuated), axis=0),
        bounds=bounds if bounds is not None else closed_loop_bounds(model),
        consistency=consistency,
    )


def closed_loop_torques(
    model: ClosedLoopModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    parameters: Mapping[str, float],
    motion: ClosedLoopMotion,
) -> np.ndarray:
    """Actuated torques (N·m, ``(N, n_a)``) of a model given by base-parameter values along completed motion.

    A base parameter is named after its independent standard column
    (:func:`~dynamic_identification.core.closed_loop.standard_parameter_names`), so the
    prediction is ``(J_tᵀ φ_tree + drive terms)[:, names] @ values`` ([Briot2012] eq. (6)),
    evaluated in blocks of :data:`~dynamic_identification.core.identification.prediction.PREDICTION_BLOCK_SAMPLES`.

    Raises
    ------
    DataError
        A name that is not a standard parameter of this mechanism and drive terms.
    """
    columns, values, unknown = parameter_columns(parameters, standard_parameter_names(model, terms))
    if unknown:
        raise DataError(
            f"parameters {unknown[:6]} are not standard parameters of this closed-loop model"
            f" ({model.n_tree} tree joints, actuated {list(model.actuated_joint_names)})"
        )
    return predict_in_blocks(
        motion.q.shape[0],
        model.n_actuated,
        columns,
        values,
        lambda block: observation_matrix(
            model,
            drive_chain,
            terms,
            motion.q[block],
            motion.dq[block],
            motion.ddq[block],
            projection=motion.jacobians[block],
        ),
    )


def predict_closed_loop_at_stamps(
    model: ClosedLoopModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    parameters: Mapping[str, float],
    time: np.ndarray,
    q: np.ndarray,
    *,
    signal: SignalSettings,
    dq_measured: np.ndarray | None = None,
    passive_tolerance_rad: float = PASSIVE_TOLERANCE_RAD,
) -> StampPrediction:
    """The model's actuated torques along a recording's filtered, completed motion, at its stamps.

    The closed-loop counterpart of
    :func:`~dynamic_identification.core.identification.predict_at_stamps`: the recording
    goes through :func:`complete_recording` (positions of the actuated joints or of every
    tree joint), the torques of :func:`closed_loop_torques` are interpolated back onto
    the stamps, every segment to its ends (extrapolated edges, as for a serial robot); only
    rows of segments too short to differentiate are not covered; ``speed`` holds the actuated
    joints' ``|q̇|``.

    Raises
    ------
    DataError, LoopClosureError
        As :func:`complete_recording` (a singular or unreachable sample is named).
    """
    stamps = np.asarray(time, dtype=float)
    completed = complete_recording(
        model,
        stamps,
        q,
        np.zeros((stamps.shape[0], 1)),
        settings=signal,
        dq_measured=dq_measured,
        passive_tolerance_rad=passive_tolerance_rad,
        edges=True,
    )
    return interpolate_at_stamps(
        stamps,
        model.n_actuated,
        (
            (
                segment.time,
                closed_loop_torques(model, drive_chain, terms, parameters, segment.motion),
                segment.motion.dq[:, model.actuated],
            )
            for segment in completed.segments
        ),
    )


def closed_loop_window(
    model: ClosedLoopModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    settings: WindowSettings,
    *,
    base: BaseParameters | None = None,
    bounds: PlausibilityBounds | None = None,
    consistency: ConsistentEstimator | None = None,
) -> SlidingWindowEstimator:
    """The sliding-window estimator of a closed-loop robot ([Volkmann2020] with [Briot2012] eq. (6)-(7)).

    The serial window (:class:`~dynamic_identification.core.identification.SlidingWindowEstimator`:
    resampling, filtering, normal equations, reduction, gates) fed with the **actuated**
    joints' positions and torques ``(N, n_a)``; its rows come from
    :meth:`ClosedLoopRowBuilder.sampled_rows`, which completes the tree motion at the
    decimated instants. ``bounds`` default to :func:`closed_loop_bounds` with the
    settings' factors; ``consistency`` (:func:`closed_loop_consistent_estimator`) publishes
    the physically consistent estimate of every update that passes the gates.

    Raises
    ------
    ModelError
        When the drive chain or the base parameters do not belong to ``model``.
    """
    _check_chain(model, drive_chain)
    base = base or base_parameters(model, drive_chain, terms)
    _check_base(model, terms, base)
    return SlidingWindowEstimator(
        model.robot,
        drive_chain,
        terms,
        settings,
        base=base,
        bounds=bounds
        or closed_loop_bounds(model, effort_factor=settings.effort_factor, mass_factor=settings.mass_factor),
        consistency=consistency,
        row_builder=partial(ClosedLoopRowBuilder.create, model, drive_chain, terms, base),
        equations=model.n_actuated,
    )


def tree_standard(model: ClosedLoopModel, terms: DriveTerms, standard: np.ndarray) -> np.ndarray:
    """Closed-loop standard parameters laid out as the opened tree's, passive joints' drive terms 0.

    ``standard`` is in :func:`~dynamic_identification.core.closed_loop.standard_parameter_names`
    order (drive terms of the actuated joints only); the result in
    :func:`~dynamic_identification.core.model.standard_parameter_names` order of the tree's
    ``n_t`` joints, the layout of the serial tools (consistency, parameter-file sections).
    """
    values = np.asarray(standard, dtype=float)
    columns = _tree_columns(model, terms)
    if values.shape[-1:] != (columns.size,):
        raise DataError(f"standard parameters must have {columns.size} entries, got shape {values.shape}")
    tree = np.zeros((*values.shape[:-1], model.n_tree * terms.per_joint))
    tree[..., columns] = values
    return tree


def _tree_columns(model: ClosedLoopModel, terms: DriveTerms) -> np.ndarray:
    """Column of each closed-loop standard parameter in the opened tree's standard layout."""
    position = {name: i for i, name in enumerate(serial_standard_names(model.n_tree, terms))}
    return np.array([position[name] for name in standard_parameter_names(model, terms)], dtype=int)


def tree_base_parameters(model: ClosedLoopModel, terms: DriveTerms, base: BaseParameters) -> BaseParameters:
    """The closed-loop base parameters over the opened tree's standard layout (:func:`tree_standard`).

    The same base parameters (names, expressions, equations' structure), their regrouping
    ``K`` with a zero column for each passive joint's drive term, which no equation holds.
    """
    _check_base(model, terms, base)
    columns = _tree_columns(model, terms)
    regrouping = np.zeros((base.count, model.n_tree * terms.per_joint))
    regrouping[:, columns] = base.regrouping
    return BaseParameters(
        standard_names=serial_standard_names(model.n_tree, terms),
        independent=columns[base.independent],
        regrouping=regrouping,
        names=base.names,
        expressions=base.expressions,
        structure=base.structure,
    )


def closed_loop_consistent_estimator(
    model: ClosedLoopModel,
    terms: DriveTerms,
    base: BaseParameters,
    *,
    settings: ConsistencySettings | None = None,
    attached: np.ndarray | None = None,
) -> ConsistentEstimator:
    """The physically consistent estimator ([Wensing2018]) of a closed-loop robot's base parameters.

    Every link of the opened tree is a body whose pseudo-inertia must be positive definite,
    the actuated joints' ``Ia, Fv, Fc`` non-negative; the URDF's inertias are the prior of
    the directions no data determine, the passive joints' drive terms (in no equation) 0.
    Its :attr:`~dynamic_identification.core.estimation.consistency.ConsistentEstimate.standard`
    has the tree's layout (:func:`tree_standard`); ``base_values`` are those of ``base``.
    """
    return ConsistentEstimator(
        tree_base_parameters(model, terms, base),
        terms,
        serial_standard_parameters(model.robot, terms),
        settings=settings or ConsistencySettings(),
        attached=attached,
        equation_joints=tuple(int(j) for j in model.actuated),
    )


# --------------------------------------------------------------------- internals
def _validated(
    model: Mechanism, time: np.ndarray, q: np.ndarray, signals: np.ndarray, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = np.asarray(time, dtype=float)
    positions = np.asarray(q, dtype=float)
    values = np.asarray(signals, dtype=float)
    if t.ndim != 1:
        raise DataError(f"{where}time must have shape (N,), got {t.shape}")
    samples = t.shape[0]
    if (
        positions.ndim != 2
        or positions.shape[0] != samples
        or positions.shape[1] not in (model.n_actuated, model.n_tree)
    ):
        raise DataError(
            f"{where}q must have shape ({samples}, {model.n_actuated}) (actuated joints) or"
            f" ({samples}, {model.n_tree}) (every tree joint), got {positions.shape}"
        )
    if values.ndim != 2 or values.shape[0] != samples:
        raise DataError(f"{where}signals must have shape ({samples}, m), got {values.shape}")
    if not np.all(np.isfinite(t)):
        raise DataError(f"{where}time is not finite at sample {int(np.argwhere(~np.isfinite(t))[0, 0])}")
    names = model.joint_names if positions.shape[1] == model.n_tree else model.actuated_joint_names
    for label, array, columns in (
        ("position", positions, names),
        ("torque or current", values, model.actuated_joint_names),
    ):
        bad = ~np.isfinite(array)
        if bad.any():
            row, column = (int(i) for i in np.argwhere(bad)[0])
            joint = f" of {columns[column]}" if column < len(columns) else f" in column {column}"
            raise DataError(f"{where}{label}{joint} is not finite at sample {row}")
    return t, positions, values


def _unwrapped(model: Mechanism, actuated: np.ndarray) -> np.ndarray:
    """Actuated positions with the ±π jumps of continuous joints removed (they are filtered and differentiated)."""
    out = np.array(actuated, dtype=float)
    for i, j in enumerate(model.actuated):
        if model.robot.continuous[int(j)]:
            out[:, i] = np.unwrap(out[:, i])
    return out


def _check_passive(model: Mechanism, time: np.ndarray, q: np.ndarray, tolerance: float, where: str) -> None:
    """Refuse recorded passive positions farther than ``tolerance`` from closing the loops (first sample, joint)."""
    try:
        correction = np.abs(model.passive_correction(q))
    except LoopClosureError as error:
        raise LoopClosureError(
            f"{where}{_with_time(str(error), error.sample, time)}",
            sample=error.sample,
            residual=error.residual,
            condition_number=error.condition_number,
        ) from error
    beyond = correction > tolerance
    if not beyond.any():
        return
    sample = int(np.argmax(beyond.any(axis=1)))
    column = int(np.argmax(correction[sample]))
    joint = model.joint_names[int(model.passive[column])]
    raise DataError(
        f"{where}recorded passive positions contradict the loop closure at sample {sample}"
        f" (t = {time[sample] - time[0]:.4f} s): {joint} is {correction[sample, column]:.4g} rad from the closed"
        f" configuration of the recorded actuated positions (passive_tolerance_rad = {tolerance:g}); check that"
        " joint's encoder offset, the joint order and the URDF geometry"
    )


def _with_time(message: str, sample: int | None, time: np.ndarray) -> str:
    """``sample k (t = … s): …`` for a message of the closed-loop model that starts with ``sample k: ``."""
    if sample is None:
        return message
    return f"sample {sample} (t = {time[sample] - time[0]:.4f} s): {_SAMPLE_PREFIX.sub('', message)}"


def _input_sample(time: np.ndarray, stamp: float) -> int:
    """Index of the recorded sample nearest to ``stamp`` (s)."""
    right = int(np.clip(np.searchsorted(time, stamp), 1, time.shape[0] - 1))
    return right if abs(time[right] - stamp) < abs(stamp - time[right - 1]) else right - 1


def _at_recorded_sample(error: LoopClosureError, time: np.ndarray, grid: np.ndarray, where: str) -> LoopClosureError:
    """The completion's error on the filtered grid, re-expressed at the recorded sample nearest in time."""
    grid_sample = error.sample if error.sample is not None else 0
    sample = _input_sample(time, float(grid[grid_sample]))
    message = _SAMPLE_PREFIX.sub("", str(error))
    # Walking from the reference configuration failed: the builder has no q_guess argument to offer.
    message = message.removesuffix("; pass q_guess") + (
        "; if the robot works in another assembly mode, record the passive joints too, so that they give it"
        if message.endswith("; pass q_guess")
        else ""
    )
    return LoopClosureError(
        f"{where}sample {sample} (t = {time[sample] - time[0]:.4f} s): {message}",
        sample=sample,
        residual=error.residual,
        condition_number=error.condition_number,
    )


def _check_chain(model: Mechanism, drive_chain: DriveChain) -> None:
    if drive_chain.n_joints != model.n_actuated:
        raise ModelError(
            f"drive chain has {drive_chain.n_joints} joints, the mechanism has {model.n_actuated} actuated joints"
        )


def _check_base(model: Mechanism, terms: DriveTerms, base: BaseParameters) -> None:
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


def _check_travel(model: Mechanism, completed: CompletedRecording, settings: IdentificationSettings) -> None:
    """Refuse a recording whose actuated joints stood still (the serial ``check_motion``)."""
    actuated = np.concatenate([segment.motion.q[:, model.actuated] for segment in completed.segments])
    check_motion(actuated, model.actuated_joint_names, min_motion_rad=settings.min_motion_rad)


def _builder(
    model: Mechanism,
    drive_chain: DriveChain,
    terms: DriveTerms,
    base: BaseParameters,
    rate_hz: float,
    signal: SignalSettings,
) -> ClosedLoopRowBuilder:
    factor = decimation_factor(signal, rate_hz)
    return ClosedLoopRowBuilder.create(
        model, drive_chain, terms, base, decimation=factor, min_speed_rad_s=signal.min_speed_rad_s
    )


def _segment_rows(
    builder: ClosedLoopRowBuilder, segments: tuple[CompletedSegment, ...] | list[CompletedSegment], block_samples: int
) -> Iterator[ClosedLoopRows]:
    """Rows of every segment, built in blocks of about ``block_samples`` grid samples (bounded memory)."""
    for segment in segments:
        motion = segment.motion
        blocks = output_blocks(segment.time.shape[0], block_samples, builder.decimator.factor, builder.reach)
        for start, block, outputs in blocks:
            yield builder.rows(
                ClosedLoopMotion(
                    q=motion.q[block], dq=motion.dq[block], ddq=motion.ddq[block], projection=motion.jacobians[block]
                ),
                segment.signals[block],
                start=start,
                outputs=outputs,
            )
