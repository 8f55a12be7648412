"""Power identification model (PIM) and its block-triangular identification ([Gautier2013] §III-IV).

The total energy of the robot is linear in the standard parameters,
``H(q, q̇) = h(q, q̇) χ_st`` ([Gautier2013] eq. (8)-(10)): the rigid-body columns of ``h``
come from ``pinocchio.computeKineticEnergyRegressor`` and
``pinocchio.computePotentialEnergyRegressor`` (their sum times Pinocchio's dynamic
parameters is ``½ q̇ᵀ M q̇ + U(q)``, ``U`` the potential energy of gravity), and the
rotor column of motor ``m`` is its kinetic energy ``½ v_m²`` per unit ``Ia_m``, with
``v_m = C[m] · q̇`` (see :mod:`dynamic_identification.core.mechanism.robot`). Friction is not an
energy: its power ``q̇ᵀ τ_f = Σ_m v_m (Fv_m v_m + Fc_m sign(v_m) + off_m)`` adds the
columns ``v_m²``, ``|v_m|`` and ``v_m`` ([Gautier2013] eq. (8)-(9)). The PIM is then

``P = q̇ᵀ τ = (dh/dt + h_f) χ + e`` ([Gautier2013] eq. (10)-(12)),

one scalar equation per sample. ``d(h χ)/dt = q̇ᵀ τ_rigid+rotor`` along any motion, so
its columns are ``q̇ᵀ`` times the IDIM columns and the PIM has exactly the IDIM base
parameters: the base columns of the energy model are the IDIM's independent
columns, and the regrouped energy differs from the full one by a constant only
(which the derivative removes).

Identification ([Gautier2013] §IV.A-B): positions are low-passed and differentiated as
for the IDIM (:func:`~dynamic_identification.core.identification.estimate_motion`),
``h`` is evaluated on the filtered motion and differentiated by central
differences, and ``P`` and every column of ``W`` are decimated in parallel. Each
trajectory (recording, or segment of a segmented trajectory) is a group of
equations weighted by the inverse standard deviation of its own OLS residual.
To reuse the per-joint estimation code unchanged, trajectory ``k``'s equations are
placed in "equation column" ``k`` of an ``(r, T, b)`` observation matrix with a
validity mask that is true in that column only: per-joint weighting is then
exactly [Gautier2013]'s per-trajectory weighting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pinocchio as pin

from dynamic_identification.core.errors import DataError, ModelError
from dynamic_identification.core.excitation import Segment
from dynamic_identification.core.identification.completion import (
    CompletedSegment,
    complete_recording,
    controlled_positions,
)
from dynamic_identification.core.identification.motion import (
    check_motion,
    check_samples,
    decimation_factor,
    resolve_signal,
)
from dynamic_identification.core.identification.observations import PreparedObservations, output_blocks
from dynamic_identification.core.identification.prediction import Samples, stamp_torque_check
from dynamic_identification.core.identification.settings import IdentificationSettings
from dynamic_identification.core.identification.solve import IdentificationResult, identify_observations
from dynamic_identification.core.mechanism.plausibility import PlausibilityBounds
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel, standard_parameter_names
from dynamic_identification.core.mechanism.seam import Mechanism
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.signal.filters import ParallelDecimator

Recording = tuple[np.ndarray, np.ndarray, np.ndarray]
"""``(time (N,) s, q (N, n) rad, joint torques (N, n) N·m)``, joints in model order."""


def _validated_state(robot: RobotModel, q: np.ndarray, dq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    arrays = []
    for name, value in (("q", q), ("dq", dq)):
        array = np.atleast_2d(np.asarray(value, dtype=float))
        if array.ndim != 2 or array.shape[1] != robot.n_joints:
            raise DataError(f"{name} must have shape (N, {robot.n_joints}), got {np.shape(value)}")
        if not np.all(np.isfinite(array)):
            raise DataError(f"{name} has a non-finite value at sample {int(np.argwhere(~np.isfinite(array))[0, 0])}")
        arrays.append(array)
    if arrays[0].shape != arrays[1].shape:
        raise DataError(f"q and dq differ in shape: {arrays[0].shape}, {arrays[1].shape}")
    return arrays[0], arrays[1]


def _check_chain(robot: RobotModel, drive_chain: DriveChain) -> None:
    if drive_chain.n_joints != robot.n_joints:
        raise ModelError(f"drive chain has {drive_chain.n_joints} joints, robot has {robot.n_joints}")


def energy_matrix(
    robot: RobotModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    q: np.ndarray,
    dq: np.ndarray,
    *,
    data: pin.Data | None = None,
) -> np.ndarray:
    """Energy regressor ``h(q, q̇)`` in the standard parameters, shape ``(N, n · terms.per_joint)``.

    ``energy_matrix(...) @ standard_parameters(...)`` is the total energy in J,
    ``½ q̇ᵀ (M(q) + Cᵀ diag(Ia) C) q̇ + U(q)`` ([Gautier2013] eq. (8), (10)). Columns
    follow :func:`~dynamic_identification.core.mechanism.robot.standard_parameter_names`;
    the friction and offset columns are zero (see :func:`friction_power_matrix`).

    Parameters
    ----------
    q, dq
        Joint positions (rad) and velocities (rad/s), shape ``(N, n)``.
    data
        A Pinocchio ``Data`` of ``robot.model`` to reuse.
    """
    _check_chain(robot, drive_chain)
    q, dq = _validated_state(robot, q, dq)
    n, samples = robot.n_joints, q.shape[0]
    out = np.zeros((samples, n, terms.per_joint))
    model = robot.model
    data = data if data is not None else model.createData()
    kinetic, potential = pin.computeKineticEnergyRegressor, pin.computePotentialEnergyRegressor
    for k, (configuration, velocity) in enumerate(zip(robot.configurations(q), dq, strict=True)):
        rigid = kinetic(model, data, configuration, velocity) + potential(model, data, configuration)
        out[k, :, :10] = rigid.reshape(n, 10)
    if terms.rotor_inertia:
        out[:, :, 10 + terms.names.index("Ia")] = 0.5 * (dq @ drive_chain.coupling.T) ** 2
    return out.reshape(samples, n * terms.per_joint)


def friction_power_matrix(drive_chain: DriveChain, terms: DriveTerms, dq: np.ndarray) -> np.ndarray:
    """Power of friction and offset per standard parameter, shape ``(N, n · terms.per_joint)``, W per unit.

    ``q̇ᵀ τ_f = Σ_m v_m (Fv_m v_m + Fc_m sign(v_m) + off_m)`` with ``v = C q̇``
    ([Gautier2013] eq. (8)-(9)): columns ``v_m²``, ``|v_m|``, ``v_m``; the inertial and
    rotor-inertia columns are zero.
    """
    velocity = np.atleast_2d(np.asarray(dq, dtype=float))
    n = drive_chain.n_joints
    if velocity.ndim != 2 or velocity.shape[1] != n:
        raise DataError(f"dq must have shape (N, {n}), got {np.shape(dq)}")
    motor = velocity @ drive_chain.coupling.T
    out = np.zeros((motor.shape[0], n, terms.per_joint))
    signals = {"Fv": motor**2, "Fc": np.abs(motor), "off": motor}
    for index, name in enumerate(terms.names):
        if name in signals:
            out[:, :, 10 + index] = signals[name]
    return out.reshape(motor.shape[0], n * terms.per_joint)


def _drive_columns(mechanism: Mechanism, terms: DriveTerms) -> np.ndarray:
    """``(n_a, len(terms.names))``: the mechanism's column of each controlled joint's drive term."""
    position = {name: i for i, name in enumerate(mechanism.standard_parameter_names(terms))}
    return np.array(
        [[position[f"{name}{int(j) + 1}"] for name in terms.names] for j in mechanism.actuated], dtype=int
    ).reshape(mechanism.n_actuated, len(terms.names))


def mechanism_energy_matrix(
    dynamic_model: DynamicModel,
    q: np.ndarray,
    dq: np.ndarray,
    *,
    data: pin.Data | None = None,
) -> np.ndarray:
    """Energy regressor of a mechanism at tree motion ``q``, ``dq`` ``(N, n_t)`` in its standard parameters, ``(N, p)``.

    A closed-loop robot's energy is its tree's (the motion closes the loops; [Briot2012] §2): the tree's
    kinetic and potential energy regressors in the inertial columns, the controlled motors' ``½ v_m²`` in
    their ``Ia`` columns (:func:`energy_matrix` of a serial robot). Since the actuated joints' power is the
    tree's, ``τ_aᵀ q̇_a = τ_treeᵀ J_t q̇_a = τ_treeᵀ q̇_t``, this energy and the friction power of the
    controlled joints and the bearings (:func:`mechanism_friction_power`) give the energy and power models of the
    mechanism.
    """
    mechanism, drive_chain, terms = dynamic_model.mechanism, dynamic_model.drive_chain, dynamic_model.terms
    if not mechanism.closures:
        return energy_matrix(mechanism.robot, drive_chain, terms, q, dq, data=data)
    n_t, samples = mechanism.n_tree, np.shape(q)[0]
    rigid = energy_matrix(
        mechanism.robot, DriveChain.create(n_t), DriveTerms(False, False, False, False), q, dq, data=data
    )
    out = np.zeros((samples, len(mechanism.standard_parameter_names(terms))))
    out[:, tree_columns_of_inertia(mechanism, terms)] = rigid
    if terms.rotor_inertia:
        motor = np.asarray(dq, dtype=float)[:, mechanism.actuated] @ drive_chain.coupling.T
        out[:, _drive_columns(mechanism, terms)[:, terms.names.index("Ia")]] = 0.5 * motor**2
    return out


def mechanism_friction_power(dynamic_model: DynamicModel, dq: np.ndarray) -> np.ndarray:
    """Friction and offset power at the tree's velocities ``dq`` ``(N, n_t)`` in the mechanism's standard
    parameters, ``(N, p)``: the controlled joints' drive terms (:func:`friction_power_matrix`) and, for a
    closed-loop robot with bearing friction, each passive joint's ``Fv_p q̇_p² + Fc_p |q̇_p|`` ([Briot2012]
    eq. (6): the power of the virtual torque ``Fv_p q̇_p + Fc_p sign(q̇_p)`` along the tree's motion)."""
    mechanism, terms = dynamic_model.mechanism, dynamic_model.terms
    velocity = np.asarray(dq, dtype=float)
    if not mechanism.closures:
        return friction_power_matrix(dynamic_model.drive_chain, terms, velocity)
    serial = friction_power_matrix(dynamic_model.drive_chain, terms, velocity[:, mechanism.actuated])
    position = {name: i for i, name in enumerate(mechanism.standard_parameter_names(terms))}
    out = np.zeros((serial.shape[0], len(position)))
    columns = _drive_columns(mechanism, terms)
    blocks = serial.reshape(serial.shape[0], mechanism.n_actuated, terms.per_joint)[:, :, 10:]
    out[:, columns.ravel()] = blocks.reshape(serial.shape[0], -1)
    for joint in mechanism.passive:
        speed = velocity[:, int(joint)]
        # A passive joint has no drive: a friction column of its own is its bearing's.
        for name, power in ((f"Fv{int(joint) + 1}", speed**2), (f"Fc{int(joint) + 1}", np.abs(speed))):
            if name in position:
                out[:, position[name]] = power
    return out


def tree_columns_of_inertia(mechanism: Mechanism, terms: DriveTerms) -> np.ndarray:
    """The mechanism's columns of its tree's inertial parameters, in the tree's order (``M1, MX1, …, ZZ{n_t}``)."""
    position = {name: i for i, name in enumerate(mechanism.standard_parameter_names(terms))}
    names = standard_parameter_names(mechanism.n_tree, DriveTerms(False, False, False, False))
    return np.array([position[name] for name in names], dtype=int)


def power_rows(
    dynamic_model: DynamicModel,
    segment: CompletedSegment,
    decimator: ParallelDecimator,
    *,
    block_samples: int = 10_000,
) -> tuple[np.ndarray, np.ndarray]:
    """Decimated PIM rows of one filtered segment ([Gautier2013] eq. (10)-(14)).

    ``segment`` holds the tree's motion and the controlled joints' torques
    (:func:`~dynamic_identification.core.identification.completion.complete_recording`).
    ``W = dh/dt + h_f`` in the base columns (``h`` of the filtered ``q̂, q̂̇``,
    differentiated by central differences) and ``Y = P = q̂̇ᵀ τ`` are decimated in
    parallel. The work runs in blocks of ``block_samples`` that carry the
    decimation filter's support plus one sample (for the differences) on each side,
    so the rows equal those of the whole motion.

    Returns
    -------
    observation_matrix
        ``W``, shape ``(r, b)``, W per unit of each base parameter.
    power
        ``P``, shape ``(r,)``, W.
    """
    mechanism, base = dynamic_model.mechanism, dynamic_model.base
    independent = base.independent
    data = mechanism.robot.model.createData()
    dt = 1.0 / segment.rate_hz
    matrices, powers = [], []
    for start, block, outputs in output_blocks(
        segment.time.shape[0], block_samples, decimator.factor, decimator.half_length + 1
    ):
        motion = segment.motion.rows(block)
        q, dq = motion.q, motion.dq
        if q.shape[0] < 3:
            continue
        controlled = dq if not mechanism.closures else dq[:, mechanism.actuated]
        energy = mechanism_energy_matrix(dynamic_model, q, dq, data=data)[:, independent]
        columns = np.gradient(energy, dt, axis=0, edge_order=2)
        columns += mechanism_friction_power(dynamic_model, dq)[:, independent]
        power = np.sum(controlled * segment.signals[block], axis=1)
        w_out, index = decimator.decimate(columns, start=start)
        y_out, _ = decimator.decimate(power, start=start)
        inside = (index >= outputs[0]) & (index < outputs[1])
        matrices.append(w_out[inside])
        powers.append(y_out[inside])
    if not matrices:
        return np.empty((0, base.count)), np.empty(0)
    return np.concatenate(matrices), np.concatenate(powers)


def power_observations(
    dynamic_model: DynamicModel,
    recordings: Sequence[Recording],
    *,
    settings: IdentificationSettings | None = None,
) -> PreparedObservations:
    """PIM observations of one or several trajectories, one equation column per trajectory.

    Trajectory ``k`` (a recording, split at stamp gaps into contiguous pieces that
    stay in the same group) fills column ``k`` of the ``(r, T, b)`` observation
    matrix and of the ``(r, T)`` power "torques" (W); ``valid[:, k]`` marks its
    ``r_k`` rows (``r = max r_k``). [Gautier2013] eq. (13)-(14), (21); the decimation
    factor and filters are those of the IDIM settings.

    Raises
    ------
    DataError
        An empty list, bad shapes or stamps, a trajectory too short to differentiate.
    """
    settings = settings or IdentificationSettings()
    mechanism = dynamic_model.mechanism
    if not recordings:
        raise DataError("recordings is empty: give at least one (time, q, torques) trajectory")
    groups: list[tuple[np.ndarray, np.ndarray]] = []
    rate, factor, duplicates, segments, samples = 0.0, 0, 0, 0, 0
    n_a, n_t = mechanism.n_actuated, mechanism.n_tree
    for number, recording in enumerate(recordings):
        if len(recording) != 3:
            raise DataError(f"recordings[{number}] must be (time, q, torques), got {len(recording)} items")
        time, q, torques = (np.asarray(x, dtype=float) for x in recording)
        if (
            q.ndim != 2
            or q.shape[1] not in (n_a, n_t)
            or torques.shape != (q.shape[0], n_a)
            or time.shape != q.shape[:1]
        ):
            raise DataError(
                f"recordings[{number}] must hold time (N,), q and torques (N, {n_a}),"
                f" got {time.shape}, {q.shape}, {torques.shape}"
            )
        names = mechanism.actuated_joint_names if q.shape[1] == n_a else mechanism.joint_names
        check_samples(names, q, np.zeros((q.shape[0], 0)), where=f"recordings[{number}]: ")
        check_samples(mechanism.actuated_joint_names, q[:, :0], torques, where=f"recordings[{number}]: ")
        if not settings.signal.resolved:  # the first trajectory decides for all: one grid, one decimation
            positions = controlled_positions(mechanism, q)
            settings = replace(settings, signal=resolve_signal(time, positions, settings.signal).signal)
        completed = complete_recording(mechanism, time, q, torques, settings=settings.signal)
        first = completed.segments[0]
        if not factor:
            rate = first.rate_hz
            factor = decimation_factor(settings.signal, rate)
            decimator = ParallelDecimator.create(factor)
        elif not np.isclose(first.rate_hz, rate, rtol=1e-6):
            raise DataError(f"recordings[{number}] is sampled at {first.rate_hz:.6g} Hz, the first at {rate:.6g}")
        pieces = [
            power_rows(dynamic_model, segment, decimator, block_samples=settings.block_samples)
            for segment in completed.segments
        ]
        groups.append((np.concatenate([w for w, _ in pieces]), np.concatenate([y for _, y in pieces])))
        duplicates += completed.duplicates_dropped
        segments += len(completed.segments)
        samples += int(time.shape[0])
    rows = max(w.shape[0] for w, _ in groups)
    matrix = np.zeros((rows, len(groups), dynamic_model.base.count))
    power = np.zeros((rows, len(groups)))
    valid = np.zeros((rows, len(groups)), dtype=bool)
    for k, (w, y) in enumerate(groups):
        matrix[: w.shape[0], k] = w
        power[: y.shape[0], k] = y
        valid[: y.shape[0], k] = True
    return PreparedObservations(
        observation_matrix=matrix,
        torques=power,
        valid=valid,
        input_samples=samples,
        duplicates_dropped=duplicates,
        segments=segments,
        rate_hz=rate,
        decimation=factor,
        model="power",
    )


def split_segments(
    time: np.ndarray, q: np.ndarray, torques: np.ndarray, segments: Sequence[Segment]
) -> list[Recording]:
    """The recorded samples of each segment of a segmented trajectory ([Gautier2013] §IV.B).

    ``segments`` index the recorded samples (record the trajectory sample by sample,
    as the simulator and the excitation node do); transitions are left out, so
    each returned recording is one trajectory type of [Gautier2013] §IV.B.
    """
    time, q, torques = (np.asarray(x, dtype=float) for x in (time, q, torques))
    out = []
    for segment in segments:
        if not 0 <= segment.start < segment.stop <= time.shape[0]:
            raise DataError(f"segment [{segment.start}, {segment.stop}) is outside the {time.shape[0]} samples")
        window = slice(segment.start, segment.stop)
        out.append((time[window], q[window], torques[window]))
    return out


def identify_power(
    dynamic_model: DynamicModel,
    recordings: Sequence[Recording],
    *,
    settings: IdentificationSettings | None = None,
    bounds: PlausibilityBounds | None = None,
) -> IdentificationResult:
    """PIM-OLS or PIM-WLS identification of a serial robot's IDIM base parameters ([Gautier2013] §IV.A-B).

    With ``settings.method == "wls"`` the equations of each trajectory are weighted
    by the inverse standard deviation of that trajectory's own OLS residual
    ([Gautier2013] §IV.A). Giving the segments of a segmented trajectory
    (:func:`split_segments`) makes the observation matrix block-triangular
    ([Gautier2013] §IV.B). The estimate, reduction and quality are the identification
    seam's (:func:`~dynamic_identification.core.identification.solve.identify_observations`),
    as for every regression model.

    Returns
    -------
    IdentificationResult
        ``observations`` are the PIM's (:func:`power_observations`): one equation
        column per trajectory, "torques" are powers in W; ``estimate.joint_std``,
        ``joint_errors`` and ``relative_error`` are per trajectory and of the power;
        ``quality`` judges the torques the model predicts for the recordings
        (:func:`~dynamic_identification.core.identification.prediction.stamp_torque_check`).

    Raises
    ------
    DataError
        Bad recordings or too few equations after decimation.
    InsufficientExcitationError
        The robot stood still in every recording.
    """
    settings = settings or IdentificationSettings()
    robot = dynamic_model.mechanism.robot
    samples = sum(int(np.shape(recording[0])[0]) for recording in recordings)
    if samples < settings.min_samples:
        raise DataError(f"too few samples: {samples} < min_samples={settings.min_samples}")
    if recordings:
        positions = np.concatenate([robot.unwrap_positions(np.asarray(r[1], dtype=float)) for r in recordings])
        travel = check_motion(positions, robot.joint_names, min_motion_rad=settings.min_motion_rad)
    observations = power_observations(dynamic_model, recordings, settings=settings)
    judged = [Samples(*(np.asarray(x, dtype=float) for x in recording)) for recording in recordings]
    return identify_observations(
        dynamic_model.base,
        observations,
        settings=settings,
        travel=travel,
        bounds=bounds if bounds is not None else PlausibilityBounds.from_robot(robot),
        torque_check=stamp_torque_check(dynamic_model, judged, settings.signal),
    )


def torque_relative_error(
    result: IdentificationResult, validation: PreparedObservations, *, valid: np.ndarray | None = None
) -> float:
    """``‖ρ‖ / ‖Y‖`` of the joint torques reconstructed by an identified model ([Gautier2013] Table IV).

    ``validation`` is an IDIM observation set in the same base parameters
    (:func:`~dynamic_identification.core.identification.prepare_observations`);
    removed base parameters count as zero, so a model identified from the PIM or
    from some joints only is judged on every joint's torques. ``valid`` defaults to
    the validation set's own mask.
    """
    matrix = validation.observation_matrix
    if matrix.ndim != 3 or matrix.shape[2] != result.base.count:
        raise DataError(f"validation must have {result.base.count} base columns, got shape {matrix.shape}")
    values = np.zeros(result.base.count)
    values[result.base.subset(result.names)] = result.estimate.parameters
    mask = validation.valid if valid is None else np.asarray(valid, dtype=bool)
    if mask.shape != validation.torques.shape:
        raise DataError(f"valid must have shape {validation.torques.shape}, got {mask.shape}")
    residual = np.where(mask, validation.torques - matrix @ values, 0.0)
    measured = np.where(mask, validation.torques, 0.0)
    return float(np.linalg.norm(residual) / np.linalg.norm(measured))


__all__ = [
    "Recording",
    "energy_matrix",
    "friction_power_matrix",
    "identify_power",
    "power_observations",
    "power_rows",
    "split_segments",
    "torque_relative_error",
]
