"""Ground-truth motor currents of a robot with a payload, transmission losses and a nonlinear motor.

Test data for drive-gain and payload identification, written from the physical
model of [Swevers2002] §2 and independently of the regressors that identify it:

1. joint torques of the links and the payload ``τ_G``: ``pinocchio.rnea`` of the
   model whose frame-parent body carries the payload
   (:func:`~dynamic_identification.core.mechanism.payload.attach_payload`);
2. coupling, [Swevers2002] eq. (9)-(10) with ``V = C⁻¹``: the torque each
   transmission delivers, joint side, ``τ'_G = C⁻ᵀ τ_G``;
3. transmission efficiency ``R_z`` per motor, [Swevers2002] eq. (8): the output
   is ``g(τ_T) = τ_T R_z`` when the motor drives the load (``τ_T v > 0``) and
   ``τ_T / R_z`` when the load drives the motor (``τ_T v < 0``); the input ``τ_T``
   delivering ``τ'_G`` is the branch that is consistent with its own sign;
4. rotor inertia, friction and offset on the motor side, [Swevers2002] eq. (5)-(7):
   ``u = τ_T + Ia ⊙ (C q̈) + Fv ⊙ v + Fc ⊙ sign(v) + off`` with ``v = C q̇`` (joint-side
   units, as :class:`~dynamic_identification.core.mechanism.robot.DriveParameters`);
5. motor current: the motor torque ``u / N`` is produced by the current ``I`` of
   the third-order polynomial of [Swevers2002] eq. (4), ``sign(I)(c0 + c1|I| + c2 I² + c3|I|³)``,
   or of the linear drive gains ``k I`` ([Briot2012] eq. (8)).

Measured currents add white Gaussian noise whose standard deviation is a fraction
of each motor's RMS current; positions pass through the motor encoders
(:func:`~dynamic_identification.core.simulation.quantize_positions`).
"""

from __future__ import annotations

import numpy as np

from dynamic_identification.core.errors import DataError, ModelError
from dynamic_identification.core.excitation.fourier import FourierTrajectory
from dynamic_identification.core.identification.drive_gains import CurrentRecording
from dynamic_identification.core.mechanism.payload import Payload, attach_payload
from dynamic_identification.core.mechanism.robot import DriveChain, DriveParameters, RobotModel
from dynamic_identification.core.signal.alignment import current_polynomial
from dynamic_identification.core.simulation import SensorModel, quantize_positions, rigid_body_torques

_NEWTON_STEPS = 50
"""Newton iterations inverting the current polynomial (quadratic convergence: a few suffice)."""


def efficiency_vector(efficiency: float | np.ndarray | None, n: int) -> np.ndarray:
    """``R_z`` per motor, shape ``(n,)``, each in ``(0, 1]``; ``None`` is lossless (ones)."""
    if efficiency is None:
        return np.ones(n)
    values = (
        np.broadcast_to(np.asarray(efficiency, dtype=float), (n,)).copy() if np.size(efficiency) in (1, n) else None
    )
    if values is None or not np.all(np.isfinite(values)) or np.any(values <= 0.0) or np.any(values > 1.0):
        raise ModelError(f"efficiency must be a scalar or {n} values in (0, 1], got {np.asarray(efficiency).tolist()}")
    return values


def transmission_input(output_nm: np.ndarray, motor_velocity: np.ndarray, efficiency: np.ndarray) -> np.ndarray:
    """Torque ``τ_T`` entering a transmission that delivers ``output_nm`` ([Swevers2002] eq. (8)).

    Eq. (8) maps the input to the output, ``g = τ_T R_z`` if ``τ_T v > 0`` else
    ``τ_T / R_z``. Both candidate inputs ``output / R_z`` and ``output R_z`` have the
    sign of the output, so exactly one branch is consistent: divide when the
    output and the motor velocity agree in sign (the motor drives the load), multiply
    when they disagree (the load drives the motor). At rest there is no power
    flow and no loss.
    """
    power = np.sign(np.asarray(output_nm) * np.asarray(motor_velocity))
    return np.where(power > 0.0, output_nm / efficiency, np.where(power < 0.0, output_nm * efficiency, output_nm))


def motor_side_torques(
    robot: RobotModel,
    drive_chain: DriveChain,
    drive: DriveParameters,
    q: np.ndarray,
    dq: np.ndarray,
    ddq: np.ndarray,
    *,
    payload: Payload | None = None,
    efficiency: float | np.ndarray | None = None,
) -> np.ndarray:
    """Joint-side motor torques ``u = N ⊙ τ_M``, N·m, shape ``(N, n)`` (module docstring, steps 1-4)."""
    n = robot.n_joints
    loaded = attach_payload(robot, payload) if payload is not None else robot
    arrays = [np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, dq, ddq)]
    if any(a.ndim != 2 or a.shape[1] != n for a in arrays) or not arrays[0].shape == arrays[1].shape == arrays[2].shape:
        raise DataError(f"q, dq, ddq must have the same shape (N, {n}), got {[a.shape for a in arrays]}")
    q, dq, ddq = arrays
    link_torques = rigid_body_torques(loaded, q, dq, ddq)
    coupling = drive_chain.coupling
    delivered = np.linalg.solve(coupling.T, link_torques.T).T
    velocity = dq @ coupling.T
    entering = transmission_input(delivered, velocity, efficiency_vector(efficiency, n))
    return (
        entering
        + drive.rotor_inertia * (ddq @ coupling.T)
        + drive.viscous * velocity
        + drive.coulomb * np.sign(velocity)
        + drive.offset
    )


def currents_from_motor_torques(
    drive_chain: DriveChain, motor_torques_nm: np.ndarray, *, polynomial: np.ndarray | None = None
) -> np.ndarray:
    """Currents in A that make the joint-side motor torques ``u`` (module docstring, step 5).

    The motor itself produces ``u / N``; linearly that takes ``u / (N k)``, with the
    polynomial of [Swevers2002] eq. (4) the root ``|I| >= 0`` of
    ``c0 + c1|I| + c2 I² + c3|I|³ = |u / N|`` found by Newton's method (the polynomial
    must increase over the range; below ``c0`` the current is 0).
    """
    motor = np.asarray(motor_torques_nm, dtype=float) / drive_chain.gear_ratios
    if polynomial is None:
        return motor / drive_chain.drive_gains
    coefficients = current_polynomial(polynomial, drive_chain.n_joints)
    c0, c1, c2, c3 = (coefficients[:, k] for k in range(4))
    target = np.abs(motor) - c0
    magnitude = np.maximum(target, 0.0) / c1
    for _ in range(_NEWTON_STEPS):
        value = magnitude * (c1 + magnitude * (c2 + magnitude * c3)) - target
        slope = c1 + magnitude * (2.0 * c2 + 3.0 * magnitude * c3)
        if np.any(slope <= 0.0):
            raise ModelError("the current polynomial decreases within the range of the motor torques")
        magnitude = np.maximum(magnitude - value / slope, 0.0)
    residual = magnitude * (c1 + magnitude * (c2 + magnitude * c3)) - np.maximum(target, 0.0)
    if np.max(np.abs(residual), initial=0.0) > 1e-9 * max(1.0, float(np.max(np.abs(motor), initial=0.0))):
        raise ModelError("the current polynomial cannot be inverted over the range of the motor torques")
    return np.sign(motor) * magnitude


def simulate_current_recording(
    robot: RobotModel,
    drive_chain: DriveChain,
    drive: DriveParameters,
    trajectory: FourierTrajectory,
    *,
    duration_s: float,
    rate_hz: float = 1000.0,
    payload: Payload | None = None,
    efficiency: float | np.ndarray | None = None,
    polynomial: np.ndarray | None = None,
    noise_fraction: float = 0.01,
    encoder_counts: int = 2**16,
    seed: int = 0,
    name: str = "recording",
) -> CurrentRecording:
    """A recording of the robot following ``trajectory`` exactly: stamps, encoder positions, noisy currents.

    Parameters
    ----------
    duration_s, rate_hz
        Length (s) and sample rate (Hz) of the recording, which starts at ``t = 0``.
    payload, efficiency, polynomial
        The load, ``R_z`` per motor and the current polynomial (module docstring);
        ``drive_chain.drive_gains`` are the true gains when ``polynomial`` is ``None``.
    noise_fraction
        Current-noise standard deviation as a fraction of each motor's RMS current
        (0.01: "1 % noise").
    encoder_counts
        Counts per revolution of the motor encoders.
    seed
        Seed of the noise.
    """
    if not (np.isfinite(noise_fraction) and noise_fraction >= 0.0):
        raise ModelError(f"noise_fraction must be finite and >= 0, got {noise_fraction}")
    time = np.arange(0.0, duration_s, 1.0 / rate_hz)
    q, dq, ddq = trajectory.evaluate(time)
    motor = motor_side_torques(robot, drive_chain, drive, q, dq, ddq, payload=payload, efficiency=efficiency)
    currents = currents_from_motor_torques(drive_chain, motor, polynomial=polynomial)
    rng = np.random.default_rng(seed)
    noise_std = noise_fraction * np.sqrt(np.mean(currents**2, axis=0))
    measured = currents + rng.normal(size=currents.shape) * noise_std
    positions = quantize_positions(drive_chain, SensorModel(encoder_counts_per_rev=encoder_counts), q)
    return CurrentRecording.create(time, positions, measured, name=name)
