"""The simulated robot: ground-truth inverse dynamics, forward dynamics and sensors.

The robot is the rigid-body model of a URDF (Pinocchio) driven through the drive
chain of :mod:`dynamic_identification.core.mechanism.robot`: joint torques are

``τ = M(q) q̈ + b(q, q̇) + Cᵀ (Ia ⊙ (C q̈) + Fv ⊙ v + Fc ⊙ sign(v) + off)``, ``v = C q̇``

([Gautier2013] eq. (1)-(3), (9), (26)), and the motors see currents
``i = (Gᵀ)⁻¹ τ / k`` ([Gautier2013] eq. (7)). Everything here is written from these
physical formulas, independently of the regressors, so that it can serve as the
ground truth the identification is tested against.

A closed-loop robot ([Briot2012] §2) is its opened tree with closures: its ground truth
:func:`inverse_dynamics` solves the tree's torques for the motors' and the
closure forces by Lagrange multipliers, and :class:`RobotSimulator` integrates
Pinocchio's constrained forward dynamics; one simulator, one settings class and one
tracking record serve both kinds of :class:`~dynamic_identification.core.mechanism.seam.Mechanism`.

The Pinocchio model's own ``armature`` must stay zero (a URDF has none): rotor
inertia is carried by :class:`~dynamic_identification.core.mechanism.robot.DriveParameters`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
import scipy.linalg

from dynamic_identification.core.checks import motion_rows, motion_samples
from dynamic_identification.core.errors import DataError, ModelError
from dynamic_identification.core.mechanism.closed_loop import (
    ClosedLoopModel,
    passive_friction_torques,
    passive_joint_values,
)
from dynamic_identification.core.mechanism.payload import Payload, attach_payload
from dynamic_identification.core.mechanism.robot import DriveChain, DriveParameters, RobotModel, limit_bounds
from dynamic_identification.core.mechanism.seam import LoopClosure, Mechanism, mechanism_of
from dynamic_identification.core.settings_schema import setting_field

DEFAULT_BANDWIDTH_HZ = 10.0
"""Closed-loop bandwidth of the default per-joint PD gains, Hz."""


def _coulomb_sign(velocity: np.ndarray, smoothing_rad_s: float) -> np.ndarray:
    return np.tanh(velocity / smoothing_rad_s) if smoothing_rad_s > 0.0 else np.sign(velocity)


def drive_torques(
    drive_chain: DriveChain,
    drive: DriveParameters,
    dq: np.ndarray,
    ddq: np.ndarray,
    *,
    coulomb_smoothing_rad_s: float = 0.0,
) -> np.ndarray:
    """Joint torques of rotor inertia, friction and offset, shape ``(N, n)`` in N·m.

    ``τ_d = Cᵀ (Ia ⊙ (C q̈) + Fv ⊙ v + Fc ⊙ sign(v) + off)`` with ``v = C q̇``
    ([Gautier2013] eq. (3), (9), (26)); rows are samples.

    Parameters
    ----------
    coulomb_smoothing_rad_s
        ``ε`` > 0 replaces ``sign(v)`` by ``tanh(v / ε)`` (what the forward
        simulation integrates); 0 keeps the discontinuous sign of the IDIM.
    """
    if coulomb_smoothing_rad_s < 0.0:
        raise ModelError(f"coulomb_smoothing_rad_s must be >= 0, got {coulomb_smoothing_rad_s}")
    n = drive_chain.n_joints
    coupling = drive_chain.coupling
    velocity = motion_rows("dq", dq, n) @ coupling.T
    motor_acceleration = motion_rows("ddq", ddq, n) @ coupling.T
    motor_side = (
        drive.rotor_inertia * motor_acceleration
        + drive.viscous * velocity
        + drive.coulomb * _coulomb_sign(velocity, coulomb_smoothing_rad_s)
        + drive.offset
    )
    return motor_side @ coupling


def rigid_body_torques(robot: RobotModel, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
    """Rigid-body joint torques ``(N, n)``, N·m, of validated samples ``(N, n)``: ``pinocchio.rnea`` per sample.

    The links' dynamics only (the URDF's inertias, with whatever load is attached to ``robot``):
    no drive chain.
    """
    data = robot.model.createData()
    configurations = robot.configurations(q)
    return np.stack([pin.rnea(robot.model, data, configurations[k], dq[k], ddq[k]) for k in range(q.shape[0])])


@dataclass(frozen=True)
class SensorModel:
    """What the robot's sensors report.

    Attributes
    ----------
    current_noise_std_a
        Standard deviation of the white Gaussian noise on each motor current, A.
    encoder_counts_per_rev
        Counts per revolution of the encoder on the motor shaft; the joint-side
        resolution is ``2π / (counts · N)`` for gear ratio ``N``.
    velocity_noise_std_rad_s
        Standard deviation of the white Gaussian noise on reported joint
        velocities, rad/s (the true velocity otherwise).
    """

    current_noise_std_a: float = 0.02
    encoder_counts_per_rev: int = 2**16
    velocity_noise_std_rad_s: float = 0.0

    def __post_init__(self) -> None:
        if not (np.isfinite(self.current_noise_std_a) and self.current_noise_std_a >= 0.0):
            raise ModelError(f"current_noise_std_a must be finite and >= 0, got {self.current_noise_std_a}")
        if int(self.encoder_counts_per_rev) < 1:
            raise ModelError(f"encoder_counts_per_rev must be >= 1, got {self.encoder_counts_per_rev}")
        if not (np.isfinite(self.velocity_noise_std_rad_s) and self.velocity_noise_std_rad_s >= 0.0):
            raise ModelError(f"velocity_noise_std_rad_s must be finite and >= 0, got {self.velocity_noise_std_rad_s}")


@dataclass(frozen=True)
class SimulatedRobot:
    """A simulated robot's true drive chain, drive terms and sensors.

    ``drive_chain`` the gear ratios, drive gains (N·m/A) and coupling; ``drive`` the rotor
    inertia (kg·m²), viscous (N·m·s/rad) and Coulomb friction (N·m) and offsets (N·m) per
    joint; ``sensor`` the current noise (A), velocity noise (rad/s) and encoder resolution.
    """

    drive_chain: DriveChain
    drive: DriveParameters
    sensor: SensorModel


@dataclass(frozen=True)
class SimulatedArm:
    """The ``sim_robot`` settings of a simulated robot (defaults: the shipped arm), and the one factory of it.

    The ``sim_robot`` node, the demo, the tests and the benchmarks all build the simulated
    robot with :meth:`build` from these settings (``io.config.simulated_robot`` reads them
    from a configuration file). Per-joint values are given for the simulated joints or for
    every joint of the URDF (then the simulated joints' entries are taken, so the shipped
    arm's defaults stay valid for a subset of its joints); ``coupling`` is n×n row by row.
    """

    gear_ratios: tuple[float, ...] | None = setting_field("gear_ratios", "sim_robot")
    drive_gains: tuple[float, ...] | None = setting_field("drive_gains", "sim_robot")
    coupling: tuple[float, ...] | None = setting_field("coupling", "sim_robot")
    rotor_inertia: tuple[float, ...] | None = setting_field("rotor_inertia", "sim_robot")
    viscous_friction: tuple[float, ...] | None = setting_field("viscous_friction", "sim_robot")
    coulomb_friction: tuple[float, ...] | None = setting_field("coulomb_friction", "sim_robot")
    offset: tuple[float, ...] | None = setting_field("offset", "sim_robot")
    current_noise_std: float = setting_field("current_noise_std", "sim_robot")
    velocity_noise_std: float = setting_field("velocity_noise_std", "sim_robot")
    encoder_counts: int = setting_field("encoder_counts", "sim_robot")

    def per_joint(
        self,
        name: str,
        n_joints: int,
        selected: np.ndarray | None = None,
        urdf_joints: int | None = None,
        *,
        allow_scalar: bool = False,
    ) -> np.ndarray | None:
        """The values of the per-joint field ``name`` for the ``n_joints`` simulated joints, ``None`` when unset.

        ``selected`` are the simulated joints' indices among the ``urdf_joints`` joints of
        the URDF: values may be given for all of those; ``allow_scalar`` accepts one value
        for every joint.

        Raises
        ------
        ModelError
            Naming the field, the counts it accepts and what it got.
        """
        values = getattr(self, name)
        if not values:
            return None
        array = np.asarray(values, dtype=float)
        if not np.all(np.isfinite(array)):
            raise ModelError(f"'{name}' must be finite, got {list(values)}")
        n_urdf = n_joints if urdf_joints is None or selected is None else urdf_joints
        if len(values) == n_joints:
            return array
        if len(values) == n_urdf and selected is not None:
            return array[selected]
        if allow_scalar and len(values) == 1:
            return np.full(n_joints, array[0])
        counts = sorted({n_joints, n_urdf} | ({1} if allow_scalar else set()))
        raise ModelError(
            f"'{name}' needs {' or '.join(map(str, counts))} values ({n_joints} simulated joints,"
            f" {n_urdf} in the URDF), got {len(values)}: {list(values)}"
        )

    def build(
        self, n_joints: int, *, selected: np.ndarray | None = None, urdf_joints: int | None = None
    ) -> SimulatedRobot:
        """The simulated robot of ``n_joints`` joints (``selected`` of the URDF's ``urdf_joints``: :meth:`per_joint`).

        Raises
        ------
        ModelError
            Naming the field that does not fit.
        """
        names = ("gear_ratios", "drive_gains", "rotor_inertia", "viscous_friction", "coulomb_friction", "offset")
        values = {name: self.per_joint(name, n_joints, selected, urdf_joints) for name in names}
        for name in ("rotor_inertia", "viscous_friction", "coulomb_friction"):
            value = values[name]
            if value is not None and np.any(value < 0.0):
                raise ModelError(f"'{name}' must be >= 0, got {value.tolist()}")
        return SimulatedRobot(
            drive_chain=DriveChain.create(
                n_joints,
                gear_ratios=values["gear_ratios"],
                drive_gains=values["drive_gains"],
                coupling=self._coupling(n_joints, selected, urdf_joints),
            ),
            drive=DriveParameters.create(
                n_joints,
                rotor_inertia=values["rotor_inertia"],
                viscous=values["viscous_friction"],
                coulomb=values["coulomb_friction"],
                offset=values["offset"],
            ),
            sensor=SensorModel(
                current_noise_std_a=self.current_noise_std,
                encoder_counts_per_rev=self.encoder_counts,
                velocity_noise_std_rad_s=self.velocity_noise_std,
            ),
        )

    def _coupling(self, n: int, selected: np.ndarray | None, urdf_joints: int | None) -> np.ndarray | None:
        if not self.coupling:
            return None
        m = urdf_joints if urdf_joints is not None else n
        if len(self.coupling) == n * n:
            return np.asarray(self.coupling, dtype=float).reshape(n, n)
        if len(self.coupling) == m * m and selected is not None:
            return np.asarray(self.coupling, dtype=float).reshape(m, m)[np.ix_(selected, selected)]
        raise ModelError(f"'coupling' needs {n * n} or {m * m} values (row-major), got {len(self.coupling)}")


def quantize_positions(drive_chain: DriveChain, sensor: SensorModel, q: np.ndarray) -> np.ndarray:
    """Joint positions seen through motor-side encoders, same shape as ``q``.

    Motor angles ``θ = G q`` (``G = diag(N) C``) are rounded to ``2π / counts`` and
    mapped back to the joints, ``q_m = G⁻¹ θ_quantised``.
    """
    resolution = 2.0 * np.pi / int(sensor.encoder_counts_per_rev)
    transmission = drive_chain.transmission
    motor_angles = np.asarray(q, dtype=float) @ transmission.T
    quantised = np.round(motor_angles / resolution) * resolution
    return np.linalg.solve(transmission, quantised.T).T


def measure(
    drive_chain: DriveChain,
    sensor: SensorModel,
    q: np.ndarray,
    joint_torques: np.ndarray,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Measured positions (rad) and motor currents (A) of true positions and joint torques.

    Positions are quantised by :func:`quantize_positions`; currents are
    ``drive_chain.motor_currents(τ)`` plus white Gaussian noise of
    ``sensor.current_noise_std_a`` ([Gautier2013] eq. (7), the noise the WLS weights).
    """
    draws = rng.standard_normal(np.shape(joint_torques)) if sensor.current_noise_std_a else None
    return _sensed(drive_chain, sensor, q, joint_torques, draws)


def _sensed(
    drive_chain: DriveChain,
    sensor: SensorModel,
    q: np.ndarray,
    joint_torques: np.ndarray,
    current_draws: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`measure` with the current noise's standard-normal draws given (``None`` without current noise), so a
    caller can interleave them with other draws."""
    currents = drive_chain.motor_currents(joint_torques)
    if current_draws is not None:
        currents = currents + sensor.current_noise_std_a * current_draws
    return quantize_positions(drive_chain, sensor, q), currents


def synthesize_measurements(
    robot: RobotModel,
    drive_chain: DriveChain,
    drive: DriveParameters,
    time_s: np.ndarray,
    q: np.ndarray,
    dq: np.ndarray,
    ddq: np.ndarray,
    sensor: SensorModel,
    *,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Inverse-dynamics data for tests: exact torques at the exact motion, then :func:`measure`.

    Returns measured positions ``(N, n)`` in rad and currents ``(N, n)`` in A at
    the instants ``time_s`` (used only to check the shapes: the data is the exact
    model, there is no integration error).
    """
    time = np.asarray(time_s, dtype=float)
    if time.ndim != 1 or time.shape[0] != np.atleast_2d(q).shape[0]:
        raise DataError(f"time_s must have shape ({np.atleast_2d(q).shape[0]},), got {time.shape}")
    torques = inverse_dynamics(robot, drive_chain, drive, q, dq, ddq)
    return measure(drive_chain, sensor, np.atleast_2d(q), torques, np.random.default_rng(seed))


def per_joint_values(name: str, value: float | tuple[float, ...] | np.ndarray, n: int) -> np.ndarray:
    """``value`` as a new ``(n,)`` array, one entry per joint: a scalar (or one value) is repeated.

    Raises
    ------
    ModelError
        Naming ``name`` and the value when it is neither one nor ``n`` values, or one is not
        finite and >= 0.
    """
    array = np.asarray(value, dtype=float)
    if array.size not in (1, n) or not np.all(np.isfinite(array)) or np.any(array < 0.0):
        raise ModelError(f"{name} must be a scalar or {n} finite values >= 0, got {array.tolist()}")
    return np.broadcast_to(array.ravel(), (n,)).copy() if array.size == 1 else array.ravel().copy()


def _one_sample(name: str, value: np.ndarray, n: int) -> np.ndarray:
    """``value`` as one sample ``(n,)``: as it is when it has that shape, through :func:`motion_rows` (which
    names a wrong shape) otherwise. Not checked finite: the caller checks what it computes from it."""
    array = np.asarray(value, dtype=float)
    return array if array.shape == (n,) else motion_rows(name, value, n)[0]


_NEWTON_ITERATIONS = 30
"""Most damped-Newton iterations of the implicit friction per step (two or three are usual)."""

SERIAL_COULOMB_SMOOTHING_RAD_S = 1e-3
"""Default ``ε`` of the Coulomb friction of a serial robot, rad/s (its step is implicit in the friction)."""

CLOSED_LOOP_COULOMB_SMOOTHING_RAD_S = 1e-2
"""Default ``ε`` of the Coulomb friction of a closed-loop robot, rad/s: its constrained step linearises the
friction, which a wider ``tanh`` band keeps stable."""

_PLANAR_ROWS = np.array([0, 1, 5])
"""Rows of a LOCAL ``CONTACT_6D`` constraint that a planar closure keeps: x, y and rotation about z."""

_PROXIMAL_MU = 1e-8
"""Proximal damping of ``constraintDynamics``: makes redundant closure equations solvable."""


@dataclass(frozen=True)
class SimulationSettings:
    """Settings of :class:`RobotSimulator`, serial or closed-loop.

    Attributes
    ----------
    dt_s
        Integration step, s.
    kp, kd
        PD gains of the controlled (actuated) joints, N·m/rad and N·m·s/rad, a scalar or
        one per joint; ``None`` chooses, per joint, the gains of a critically damped
        second-order loop of ``bandwidth_hz`` (:func:`critically_damped_gains`) on the
        diagonal of the inertia the motors see at the start
        (:meth:`RobotSimulator.mass_matrix`).
    bandwidth_hz
        Bandwidth of the default gains, Hz.
    coulomb_smoothing_rad_s
        ``ε`` of the ``tanh(v / ε)`` Coulomb friction integrated, rad/s; ``None``: that of
        the mechanism (:data:`SERIAL_COULOMB_SMOOTHING_RAD_S` without closures,
        :data:`CLOSED_LOOP_COULOMB_SMOOTHING_RAD_S` with).
    sensor
        Encoder resolution, current and velocity noise of the controlled joints.
    saturate_effort
        Clip the motor torques to the URDF effort limits (non-positive or non-finite
        limits mean unlimited); saturated steps are counted.
    passive_viscous, passive_coulomb
        Viscous (N·m·s/rad) and Coulomb (N·m) friction of each passive joint's bearing,
        kinematic order; ``None``: frictionless (a serial robot has no passive joint).
    """

    dt_s: float = 1e-3
    kp: float | np.ndarray | None = None
    kd: float | np.ndarray | None = None
    bandwidth_hz: float = DEFAULT_BANDWIDTH_HZ
    coulomb_smoothing_rad_s: float | None = None
    sensor: SensorModel = field(default_factory=SensorModel)
    saturate_effort: bool = True
    passive_viscous: np.ndarray | None = None
    passive_coulomb: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in ("dt_s", "bandwidth_hz", "coulomb_smoothing_rad_s"):
            value = getattr(self, name)
            if value is None and name == "coulomb_smoothing_rad_s":
                continue
            if not (np.isfinite(value) and value > 0.0):
                raise ModelError(f"{name} must be finite and > 0, got {value}")

    def coulomb_smoothing(self, closed_loop: bool) -> float:
        """``ε`` in rad/s of the Coulomb friction integrated for a serial or a closed-loop robot."""
        if self.coulomb_smoothing_rad_s is not None:
            return self.coulomb_smoothing_rad_s
        return CLOSED_LOOP_COULOMB_SMOOTHING_RAD_S if closed_loop else SERIAL_COULOMB_SMOOTHING_RAD_S

    def pd_gains(self, inertia: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(kp, kd)`` of the controlled joints: :attr:`kp` and :attr:`kd` where given, else those of
        :func:`critically_damped_gains` for the diagonal ``inertia`` (kg·m², one per controlled joint).

        Raises
        ------
        ModelError
            If ``kp`` or ``kd`` is neither a scalar nor one finite value >= 0 per controlled joint.
        """
        n = inertia.shape[0]
        default_kp, default_kd = critically_damped_gains(inertia, self.bandwidth_hz)
        kp = default_kp if self.kp is None else per_joint_values("kp", self.kp, n)
        kd = default_kd if self.kd is None else per_joint_values("kd", self.kd, n)
        return kp, kd


def critically_damped_gains(inertia: np.ndarray, bandwidth_hz: float) -> tuple[np.ndarray, np.ndarray]:
    """PD gains ``(kp, kd)`` of a critically damped second-order loop of ``bandwidth_hz`` (Hz) per joint.

    ``kp = m ω²`` (N·m/rad), ``kd = 2 m ω`` (N·m·s/rad) with ``ω = 2π bandwidth_hz`` and
    ``m`` (kg·m²) the diagonal inertia each motor sees.
    """
    omega = 2.0 * np.pi * bandwidth_hz
    return inertia * omega**2, 2.0 * inertia * omega


class SimulatedJointState:
    """A simulator's true joint state, read as copies.

    A subclass keeps the positions ``_q`` (rad) and velocities ``_dq`` (rad/s) of all its
    joints (the opened tree's for a closed-loop robot).
    """

    _q: np.ndarray
    _dq: np.ndarray

    @property
    def q(self) -> np.ndarray:
        """True joint positions, rad (a copy)."""
        return self._q.copy()

    @property
    def dq(self) -> np.ndarray:
        """True joint velocities, rad/s (a copy)."""
        return self._dq.copy()


def constraint_models(
    model: ClosedLoopModel, *, planar_as_6d: bool = False
) -> tuple[pin.StdVec_RigidConstraintModel, list[np.ndarray]]:
    """Pinocchio's ``RigidConstraintModel`` of each closure and the rows of its Jacobian that apply.

    Closures map onto Pinocchio's constraint models as: ``point`` → ``CONTACT_3D``,
    ``6d`` → ``CONTACT_6D``, ``planar`` → the in-plane rows ``(0, 1, 5)`` (x, y and
    rotation about z of frame_a) of a ``CONTACT_6D``, or all of them with ``planar_as_6d``
    (the forward simulation keeps the relative placement, offset along the normal
    included: exact when the loop moves in a plane, which a planar closure describes).
    Frames are given to Pinocchio as the parent joints of the closure frames with their
    placements; the constraints are expressed in frame_a's local axes (``LOCAL``).
    """
    pinocchio_model = model.robot.model
    constraints = pin.StdVec_RigidConstraintModel()
    rows = []
    for closure, (a, b) in zip(model.closures, model.frame_ids, strict=True):
        frame_a, frame_b = pinocchio_model.frames[a], pinocchio_model.frames[b]
        kind = pin.ContactType.CONTACT_3D if closure.type == "point" else pin.ContactType.CONTACT_6D
        constraints.append(
            pin.RigidConstraintModel(
                kind,
                pinocchio_model,
                frame_a.parentJoint,
                frame_a.placement,
                frame_b.parentJoint,
                frame_b.placement,
                pin.ReferenceFrame.LOCAL,
            )
        )
        rows.append(_PLANAR_ROWS if closure.type == "planar" and not planar_as_6d else np.arange(_size(closure)))
    return constraints, rows


def _size(closure: LoopClosure) -> int:
    return 3 if closure.type == "point" else 6


def _check_drive(mechanism: Mechanism, drive_chain: DriveChain, drive: DriveParameters) -> None:
    if drive_chain.n_joints != mechanism.n_actuated or drive.rotor_inertia.shape[0] != mechanism.n_actuated:
        raise ModelError(
            f"the mechanism has {mechanism.n_actuated} actuated joints but the drive chain has"
            f" {drive_chain.n_joints} and the drive parameters {drive.rotor_inertia.shape[0]}"
        )


def _constrained_model(mechanism: Mechanism) -> ClosedLoopModel | None:
    """The closed-loop model of a mechanism with closures, ``None`` without closures (a serial robot)."""
    if not mechanism.closures:
        return None
    if not isinstance(mechanism, ClosedLoopModel):
        raise ModelError(f"simulating closures needs a ClosedLoopModel, got {type(mechanism).__name__}")
    return mechanism


def inverse_dynamics(
    mechanism: RobotModel | Mechanism,
    drive_chain: DriveChain,
    drive: DriveParameters,
    q: np.ndarray,
    dq: np.ndarray,
    ddq: np.ndarray,
    *,
    passive_viscous: np.ndarray | None = None,
    passive_coulomb: np.ndarray | None = None,
) -> np.ndarray:
    """Exact torques of the controlled joints ``(N, n_a)`` in N·m of a tree motion ``(N, n_t)`` consistent with
    the closures: the ground truth of the IDIM, independent of the regressors.

    The tree's torques are ``pinocchio.rnea`` per sample (:func:`rigid_body_torques`) plus the passive joints'
    bearing friction ``F_p = Fv_p q̇_p + Fc_p sign(q̇_p)`` (``passive_viscous`` in N·m·s/rad and
    ``passive_coulomb`` in N·m, one per passive joint; none when omitted). Without closures they are the
    motors' ([Gautier2013] eq. (1)); with closures ``rnea(q_t, q̇_t, q̈_t) + F_p = S τ_rigid + A_cᵀ λ``
    ([Briot2012] eq. (5)) is solved for ``(τ_rigid, λ)`` by least squares (exact for a consistent,
    non-singular motion; redundant closure rows only make ``λ`` non-unique), with ``S`` the selection of the
    actuated joints and ``A_c`` Pinocchio's constraint Jacobian (``getConstraintsJacobian``,
    :func:`constraint_models`), independently of the projected regressor of
    :mod:`dynamic_identification.core.mechanism.closed_loop`. The drive terms of :func:`drive_torques` are
    added.
    """
    mechanism = mechanism_of(mechanism)
    _check_drive(mechanism, drive_chain, drive)
    q, dq, ddq = motion_samples(q, dq, ddq, mechanism.n_tree)
    tree_torques = rigid_body_torques(mechanism.robot, q, dq, ddq)
    actuated = np.asarray(mechanism.actuated, dtype=int)
    model = _constrained_model(mechanism)
    rigid = (
        tree_torques[:, actuated]
        if model is None
        else _closure_solve(model, q, dq, tree_torques, passive_viscous, passive_coulomb)
    )
    return rigid + drive_torques(drive_chain, drive, dq[:, actuated], ddq[:, actuated])


def _closure_solve(
    model: ClosedLoopModel,
    q: np.ndarray,
    dq: np.ndarray,
    tree_torques: np.ndarray,
    passive_viscous: np.ndarray | None,
    passive_coulomb: np.ndarray | None,
) -> np.ndarray:
    """The motors' rigid-body torques ``τ_rigid`` ``(N, n_a)`` of :func:`inverse_dynamics` with closures."""
    n_t = model.n_tree
    bearing = passive_friction_torques(model, dq[:, model.passive], viscous=passive_viscous, coulomb=passive_coulomb)
    tree_torques = tree_torques.copy()
    tree_torques[:, model.passive] += bearing
    pinocchio_model = model.robot.model
    data = pinocchio_model.createData()
    constraints, rows = constraint_models(model)
    datas = pin.StdVec_RigidConstraintData()
    for constraint in constraints:
        datas.append(constraint.createData())
    offsets = np.cumsum([0] + [_size(closure) for closure in model.closures])[:-1]
    selected = np.concatenate([offset + r for offset, r in zip(offsets, rows, strict=True)])
    selection = np.zeros((n_t, model.n_actuated))
    selection[model.actuated, np.arange(model.n_actuated)] = 1.0
    configurations = model.robot.configurations(q)
    rigid = np.empty((q.shape[0], model.n_actuated))
    for k in range(q.shape[0]):
        pin.computeJointJacobians(pinocchio_model, data, configurations[k])
        for constraint, constraint_data in zip(constraints, datas, strict=True):
            constraint.calc(pinocchio_model, data, constraint_data)
        jacobian = pin.getConstraintsJacobian(pinocchio_model, data, constraints, datas)[selected]
        system = np.hstack([selection, jacobian.T])
        rigid[k] = np.linalg.lstsq(system, tree_torques[k], rcond=-1)[0][: model.n_actuated]
    return rigid


def tracking_inputs(
    n: int,
    dt_s: float,
    time_s: np.ndarray,
    q_des: np.ndarray,
    dq_des: np.ndarray,
    ddq_des: np.ndarray,
    feedforward_nm: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """The checked inputs of a tracking run of ``n`` controlled joints: ``(time, q, q̇, q̈, feedforward)``.

    Raises
    ------
    DataError
        If a motion is not finite ``(N, n)``, ``time_s`` not ``(N,)`` with ``N >= 2``
        samples spaced by the simulator step ``dt_s``, or the feedforward not ``(N, n)``.
    """
    time = np.asarray(time_s, dtype=float)
    q_des, dq_des, ddq_des = (
        motion_rows("q_des", q_des, n),
        motion_rows("dq_des", dq_des, n),
        motion_rows("ddq_des", ddq_des, n),
    )
    if (
        time.ndim != 1
        or time.shape[0] < 2
        or not time.shape[0] == q_des.shape[0] == dq_des.shape[0] == ddq_des.shape[0]
    ):
        raise DataError(f"time_s must have shape ({q_des.shape[0]},) with at least 2 samples, got {time.shape}")
    if not np.allclose(np.diff(time), dt_s, rtol=1e-6, atol=1e-12):
        raise DataError(f"time_s must be spaced by the simulator step {dt_s} s")
    ff = None if feedforward_nm is None else motion_rows("feedforward_nm", feedforward_nm, n)
    if ff is not None and ff.shape != q_des.shape:
        raise DataError(f"feedforward_nm must have shape {q_des.shape}, got {ff.shape}")
    return time, q_des, dq_des, ddq_des, ff


class RobotSimulator(SimulatedJointState):
    """Forward dynamics of a mechanism and its drive chain under PD + feedforward control of its actuated joints.

    The state ``q``, ``dq`` is the tree's (all joints); the controlled joints are the
    actuated ones, with gains ``kp``, ``kd`` (:meth:`SimulationSettings.pd_gains`) and
    motor torque ``τ_m = kp (q_d⁺ − q⁺) + kd (q̇_d⁺ − q̇⁺) + τ_ff`` clipped to the effort
    limits (:meth:`_pd_command`). Integration is semi-implicit Euler
    (``q̇⁺ = q̇ + dt q̈``, ``q⁺ = q + dt q̇⁺``) in which the friction and the PD terms are
    taken at the new state (backward Euler), so neither the stiff smoothed Coulomb
    friction nor high gains make it chatter. The motor torque reported by :meth:`measure`
    is the one the step applied.

    A serial robot (no closures, :class:`~dynamic_identification.core.mechanism.seam.SerialMechanism`)
    solves ``(M(q) + Cᵀ diag(Ia) C + dt kd + dt² kp) Δq̇ = dt (τ_m − b − τ_f(q̇ + Δq̇))``
    with ``M`` from ``pinocchio.crba``, ``b`` from ``pinocchio.nonLinearEffects`` and the
    friction ``τ_f = Cᵀ (Fv ⊙ v + Fc ⊙ tanh(v/ε) + off)``, ``v = C q̇``, by damped Newton
    (a joint at rest stays at rest).

    A closed-loop robot (a :class:`~dynamic_identification.core.mechanism.closed_loop.ClosedLoopModel`
    with closures; uncoupled drive chain) solves the constrained dynamics with
    ``pinocchio.constraintDynamics`` (proximal solver, so redundant closure equations are fine):

    ``(M + S diag(Ia + dt kd + dt² kp + dt ∂f/∂q̇) Sᵀ) q̈ + b = S (τ_cmd − f(q̇_a)) + A_cᵀ λ``,
    ``A_c q̈ + Ȧ_c q̇ = 0``,

    the linearised backward-Euler step of the PD and of the friction
    ``f = Fv q̇ + Fc tanh(q̇/ε) + off`` (the diagonal terms ride on Pinocchio's
    ``armature`` of the actuated joints; the passive joints' bearing friction
    ``Fv_p q̇_p + Fc_p tanh(q̇_p/ε)`` of the settings is a torque on the passive joints,
    linearised the same way on their ``armature``). The drift of the closure is removed
    after each step by projecting the state back onto the closed configurations (passive
    positions solved for the actuated ones, passive velocities ``J_t q̇_a``).

    Parameters
    ----------
    mechanism
        The robot: a serial :class:`~dynamic_identification.core.mechanism.robot.RobotModel` or any
        :class:`~dynamic_identification.core.mechanism.seam.Mechanism`.
    drive_chain, drive
        Drive chain and true drive parameters of the actuated joints.
    settings
        Step, gains, friction smoothing, sensors and passive-joint friction.
    q0
        Actuated positions to start at, rad (rest); default those of the mechanism's
        ``reference_configuration`` (zero for a serial robot), whose assembly mode the
        simulation keeps.
    seed
        Seed of the sensor noise.

    Raises
    ------
    ModelError
        If the drive chain or the drive parameters do not fit the mechanism, or a closed-loop
        robot's drive chain is coupled.
    """

    saturated_steps: int
    """Number of steps in which at least one motor torque was clipped to its effort limit."""

    def __init__(
        self,
        mechanism: RobotModel | Mechanism,
        drive_chain: DriveChain,
        drive: DriveParameters,
        settings: SimulationSettings,
        *,
        q0: np.ndarray | None = None,
        seed: int = 0,
    ) -> None:
        self._chain = drive_chain
        self._drive = drive
        self._settings = settings
        self._rng = np.random.default_rng(seed)
        self._mechanism = mechanism_of(mechanism)
        self._closed = _constrained_model(self._mechanism)
        _check_drive(self._mechanism, drive_chain, drive)
        self._smoothing_rad_s = settings.coulomb_smoothing(self._closed is not None)
        robot = self._mechanism.robot
        self._unloaded = robot
        self._payload: Payload | None = None
        self._robot = robot
        self._data = robot.model.createData()
        self._lower_triangle = np.tril_indices(robot.model.nv, -1)
        self._diagonal = np.diag_indices(robot.model.nv)
        self._actuated = np.asarray(self._mechanism.actuated, dtype=int)
        self._passive = np.asarray(self._mechanism.passive, dtype=int)
        self._effort_limits = limit_bounds(robot.effort_limits[self._actuated])
        self._rotor_inertia = drive_chain.coupling.T @ (drive.rotor_inertia[:, None] * drive_chain.coupling)
        # Each motor drives its own joint: the friction needs no product with the coupling (the same values).
        self._uncoupled = drive_chain.uncoupled
        if self._closed is not None:
            self._set_up_constraints(self._closed)
        self._q = np.array(self._mechanism.reference_configuration, dtype=float)
        self._dq = np.zeros(self._mechanism.n_tree)
        self._time_s = 0.0
        self._applied = np.zeros(self._mechanism.n_actuated)
        self.saturated_steps = 0
        self.reset(self._q[self._actuated] if q0 is None else q0)
        self._kp, self._kd = settings.pd_gains(np.diag(self.mass_matrix()))

    def _set_up_constraints(self, model: ClosedLoopModel) -> None:
        if not self._chain.uncoupled:
            raise ModelError("the closed-loop simulator needs an uncoupled drive chain (identity coupling)")
        self._pinocchio = pin.Model(model.robot.model)
        self._constraint_data = self._pinocchio.createData()
        self._constraints, _ = constraint_models(model, planar_as_6d=True)
        self._constraint_datas = pin.StdVec_RigidConstraintData()
        for constraint in self._constraints:
            self._constraint_datas.append(constraint.createData())
        pin.initConstraintDynamics(self._pinocchio, self._constraint_data, self._constraints, self._constraint_datas)
        self._proximal = pin.ProximalSettings(1e-12, _PROXIMAL_MU, 20)
        self._velocity_index = np.array([model.robot.model.joints[int(j) + 1].idx_v for j in model.actuated])
        self._passive_index = np.array([model.robot.model.joints[int(j) + 1].idx_v for j in model.passive], dtype=int)
        self._passive_armature = np.array(self._pinocchio.armature[self._passive_index], dtype=float)
        self._passive_viscous = passive_joint_values(model, "passive_viscous", self._settings.passive_viscous)
        self._passive_coulomb = passive_joint_values(model, "passive_coulomb", self._settings.passive_coulomb)

    @property
    def mechanism(self) -> Mechanism:
        """The simulated mechanism (a serial robot is a ``SerialMechanism``)."""
        return self._mechanism

    @property
    def settings(self) -> SimulationSettings:
        return self._settings

    @property
    def time_s(self) -> float:
        """Simulated time, s."""
        return self._time_s

    @property
    def kp(self) -> np.ndarray:
        """Proportional gains in use, N·m/rad."""
        return self._kp.copy()

    @property
    def kd(self) -> np.ndarray:
        """Derivative gains in use, N·m·s/rad."""
        return self._kd.copy()

    @property
    def applied_torques(self) -> np.ndarray:
        """Motor torques of the actuated joints over the last step, N·m."""
        return self._applied.copy()

    @property
    def payload(self) -> Payload | None:
        """The load the robot carries, ``None`` without one."""
        return self._payload

    def carry(self, payload: Payload | None) -> None:
        """Carry ``payload`` from the next step on (``None``: put it down), e.g. when the gripper closes.

        The load becomes part of the body of its frame's parent joint
        (:func:`~dynamic_identification.core.mechanism.payload.attach_payload`); the PD gains stay
        those tuned for the robot without it, as a real controller's would.

        Raises
        ------
        ModelError
            If the payload's frame is not a frame of the robot, or the robot has closures.
        """
        if self._closed is not None:
            raise ModelError("a payload is not available for a closed-loop robot (robot.loop_closures)")
        robot = self._unloaded if payload is None else attach_payload(self._unloaded, payload)
        self._robot, self._data, self._payload = robot, robot.model.createData(), payload

    @property
    def robot(self) -> RobotModel:
        """The kinematic tree simulated (with the payload carried, if any)."""
        return self._robot

    @property
    def drive_chain(self) -> DriveChain:
        return self._chain

    @property
    def drive(self) -> DriveParameters:
        """The true drive-chain parameters (rotor inertia, friction, offset)."""
        return self._drive

    def reset(self, q: np.ndarray, dq: np.ndarray | None = None, *, time_s: float | None = None) -> None:
        """Put the actuated joints at ``q`` (rad) with velocity ``dq`` (rad/s, default rest).

        The tree follows them from the current configuration
        (:meth:`~dynamic_identification.core.mechanism.seam.Mechanism.follow`: a closed-loop robot's passive
        joints are solved on the way, keeping its assembly mode) and its velocities are ``J_t q̇_a``.
        """
        n = self._mechanism.n_actuated
        qa = motion_rows("q", q, n)[0]
        dqa = np.zeros(n) if dq is None else motion_rows("dq", dq, n)[0]
        tree = self._mechanism.follow(qa, start=self._q)
        motion = self._mechanism.complete_motion(qa[None], dqa[None], np.zeros((1, n)), q_guess=tree)
        self._q, self._dq = motion.q[0].copy(), motion.dq[0].copy()
        if time_s is not None:
            self._time_s = float(time_s)
        self._applied = np.zeros(n)

    def mass_matrix(self) -> np.ndarray:
        """The inertia the motors see at the current state, kg·m²: ``J_tᵀ M(q_t) J_t + Cᵀ diag(Ia) C``
        ([Briot2012] eq. (7); ``J_t = I`` without closures, ``C = I`` with them)."""
        configuration = self._robot.configuration(self._q)
        mass = pin.crba(self._robot.model, self._data, configuration).copy()
        lower = self._lower_triangle
        mass[lower] = mass.T[lower]  # crba fills the upper triangle only
        if self._closed is not None:
            projection = self._closed.projection(self._q)
            mass = projection.T @ mass @ projection
        return mass + self._rotor_inertia

    def _pd_command(
        self,
        q: np.ndarray,
        dq: np.ndarray,
        q_desired: np.ndarray,
        dq_desired: np.ndarray,
        ddq_desired: np.ndarray | None,
        feedforward_nm: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Motor torques of the next step at the actuated joints' state ``q``, ``dq``, and the implicit PD gains.

        The PD acts on the state at the end of the step, so the desired state is carried
        there by a Taylor step: ``q_d⁺ = q_d + dt q̇_d + dt²/2 q̈_d``, ``q̇_d⁺ = q̇_d + dt q̈_d``
        (``q̈_d`` = 0 when omitted), and taken at the predicted state ``q + dt q̇``;
        ``feedforward_nm`` (N·m, per joint) is added. The torque is clipped to the effort
        limits when the settings' ``saturate_effort`` (the step is counted in
        ``saturated_steps``). The part of the PD that depends on the step's ``Δq̇`` is left
        to the integrator: returned are the torque and its gains ``dt kd + dt² kp``
        (0 on the clipped joints).
        """
        settings = self._settings
        n, dt = q.shape[0], settings.dt_s
        qd = _one_sample("q_desired", q_desired, n)
        dqd = _one_sample("dq_desired", dq_desired, n)
        q_target, dq_target = qd + dt * dqd, dqd
        if ddq_desired is not None:
            ddqd = _one_sample("ddq_desired", ddq_desired, n)
            q_target, dq_target = q_target + 0.5 * dt**2 * ddqd, dqd + dt * ddqd
        command = self._kp * (q_target - q - dt * dq) + self._kd * (dq_target - dq)
        if feedforward_nm is not None:
            command = command + _one_sample("feedforward_nm", feedforward_nm, n)
        if not np.isfinite(command).all():
            for name, value in (
                ("q_desired", q_desired),
                ("dq_desired", dq_desired),
                ("ddq_desired", ddq_desired),
                ("feedforward_nm", feedforward_nm),
            ):
                if value is not None:
                    motion_rows(name, value, n)
        implicit_gains = dt * self._kd + dt**2 * self._kp
        if settings.saturate_effort:
            saturated = np.abs(command) > self._effort_limits
            if saturated.any():
                self.saturated_steps += 1
                command = np.clip(command, -self._effort_limits, self._effort_limits)
                implicit_gains = np.where(saturated, 0.0, implicit_gains)
        return command, implicit_gains

    def step(
        self,
        q_desired: np.ndarray,
        dq_desired: np.ndarray,
        ddq_desired: np.ndarray | None = None,
        feedforward_nm: np.ndarray | None = None,
    ) -> None:
        """Advance by ``dt_s`` towards the desired actuated motion given at the current time.

        The PD + feedforward torque of :meth:`_pd_command` (per actuated joint), its
        ``Δq̇``-dependent part implicit in the step.
        """
        if self._closed is None:
            self._step_serial(q_desired, dq_desired, ddq_desired, feedforward_nm)
        else:
            self._step_constrained(self._closed, q_desired, dq_desired, ddq_desired, feedforward_nm)
        self._time_s += self._settings.dt_s

    def _step_serial(
        self,
        q_desired: np.ndarray,
        dq_desired: np.ndarray,
        ddq_desired: np.ndarray | None,
        feedforward_nm: np.ndarray | None,
    ) -> None:
        dt = self._settings.dt_s
        command, gains = self._pd_command(self._q, self._dq, q_desired, dq_desired, ddq_desired, feedforward_nm)
        configuration = self._robot.configuration(self._q)
        bias = pin.nonLinearEffects(self._robot.model, self._data, configuration, self._dq)
        inertia = self.mass_matrix()
        inertia[self._diagonal] += gains
        delta_dq = self._implicit_velocity_step(inertia, dt * (command - bias))
        self._applied = command - gains / dt * delta_dq
        self._dq = self._dq + delta_dq
        self._q = self._q + dt * self._dq

    def _step_constrained(
        self,
        model: ClosedLoopModel,
        q_desired: np.ndarray,
        dq_desired: np.ndarray,
        ddq_desired: np.ndarray | None,
        feedforward_nm: np.ndarray | None,
    ) -> None:
        dt = self._settings.dt_s
        qa, dqa = self._q[self._actuated], self._dq[self._actuated]
        command, gains = self._pd_command(qa, dqa, q_desired, dq_desired, ddq_desired, feedforward_nm)
        eps = self._smoothing_rad_s
        tanh = np.tanh(dqa / eps)
        friction = self._drive.viscous * dqa + self._drive.coulomb * tanh + self._drive.offset
        slope = self._drive.viscous + self._drive.coulomb * (1.0 - tanh**2) / eps
        self._pinocchio.armature[self._velocity_index] = self._drive.rotor_inertia + gains + dt * slope
        torques = np.zeros(model.n_tree)
        torques[self._velocity_index] = command - friction
        if self._passive_index.size:
            dqp = self._dq[self._passive]
            tanh_p = np.tanh(dqp / eps)
            bearing = self._passive_viscous * dqp + self._passive_coulomb * tanh_p
            bearing_slope = self._passive_viscous + self._passive_coulomb * (1.0 - tanh_p**2) / eps
            self._pinocchio.armature[self._passive_index] = self._passive_armature + dt * bearing_slope
            torques[self._passive_index] = -bearing
        configuration = model.robot.configuration(self._q)
        acceleration = pin.constraintDynamics(
            self._pinocchio,
            self._constraint_data,
            configuration,
            self._dq,
            torques,
            self._constraints,
            self._constraint_datas,
            self._proximal,
        )
        self._applied = command - gains * acceleration[self._velocity_index]
        velocity = self._dq + dt * acceleration
        positions = self._q + dt * velocity
        self._q, self._dq = model.project_state(positions, velocity)

    def _friction(self, dq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Joint friction torques at ``dq`` and their derivative ``∂τ_f/∂q̇``: a matrix, or, when each motor
        drives its own joint, the vector of its diagonal."""
        coupling = self._chain.coupling
        drive = self._drive
        eps = self._smoothing_rad_s
        velocity = dq if self._uncoupled else coupling @ dq
        tanh = np.tanh(velocity / eps)
        motor_torque = drive.viscous * velocity + drive.coulomb * tanh + drive.offset
        motor_slope = drive.viscous + drive.coulomb * (1.0 - tanh**2) / eps
        if self._uncoupled:
            return motor_torque, motor_slope
        return coupling.T @ motor_torque, coupling.T @ (motor_slope[:, None] * coupling)

    def _implicit_velocity_step(self, inertia: np.ndarray, impulse: np.ndarray) -> np.ndarray:
        """``Δq̇`` solving ``inertia Δq̇ = impulse − dt τ_f(q̇ + Δq̇)`` (backward Euler in the friction).

        The friction is monotone in ``q̇`` and ``inertia`` is positive definite, so the
        residual is the gradient of a strictly convex function and damped Newton
        converges; unlike a linearisation it cannot jump across the narrow ``tanh``
        band at a velocity reversal, so a joint at rest stays at rest (no chatter).
        Each Newton direction is one LAPACK ``dgesv`` (NumPy's ``solve`` around the same call cost
        several times its 6 × 6 arithmetic).
        """
        dt = self._settings.dt_s
        delta = np.zeros_like(impulse)
        torque, slope = self._friction(self._dq)
        current = inertia @ delta - impulse + dt * torque
        tolerance = (1e-12 * (1.0 + float(impulse @ impulse) ** 0.5)) ** 2
        for _ in range(_NEWTON_ITERATIONS):
            size = float(current @ current)
            if size <= tolerance:
                break
            if slope.ndim == 1:
                jacobian = inertia.copy()
                jacobian[self._diagonal] += dt * slope
            else:
                jacobian = inertia + dt * slope
            _, _, direction, info = scipy.linalg.lapack.dgesv(jacobian, -current)
            if info != 0:
                raise np.linalg.LinAlgError(f"the implicit step's matrix is singular (LAPACK dgesv info {info})")
            fraction = 1.0
            while True:
                candidate = delta + fraction * direction
                torque, slope = self._friction(self._dq + candidate)
                trial = inertia @ candidate - impulse + dt * torque
                if float(trial @ trial) < size or fraction < 1e-4:
                    break
                fraction *= 0.5
            delta, current = candidate, trial
        return delta

    def record_step(
        self,
        q_desired: np.ndarray,
        dq_desired: np.ndarray,
        ddq_desired: np.ndarray | None = None,
        feedforward_nm: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`step`, and the sample a drive records at the step's start: ``(q, q̇, τ, i)``, each ``(n_a,)``.

        The sensors' view (:meth:`sense`) of the actuated joints' state before the step and of the motor
        torque applied over it (zero-order hold): the sampling rule of :class:`TrackingRun`.
        """
        q, dq = self._q[None, self._actuated], self._dq[None, self._actuated]
        self.step(q_desired, dq_desired, ddq_desired, feedforward_nm)
        positions, velocities, torques, currents = self._sense(q, dq, self._applied[None])
        return positions[0], velocities[0], torques[0], currents[0]

    def measure(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """What the actuated joints report now: ``(q, q̇, τ, i)``, each ``(n_a,)``.

        The current state and the motor torques of the last step, through :meth:`sense`.
        """
        q, dq, torques, currents = self._sense(
            self._q[None, self._actuated], self._dq[None, self._actuated], self._applied[None]
        )
        return q[0], dq[0], torques[0], currents[0]

    def sense(
        self, q_tree: np.ndarray, dq_tree: np.ndarray, motor_torques_nm: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Sensor readings of true states ``(N, n_t)`` and motor torques ``(N, n_a)``: ``(q, q̇, τ, i)``.

        ``q`` (rad) of the actuated joints through the motor encoders
        (:func:`quantize_positions`), ``q̇`` (rad/s) the true velocity plus
        ``sensor.velocity_noise_std_rad_s`` noise (as a drive's observer would give),
        ``i`` (A) the currents of the motor torques plus noise, ``τ`` (N·m) the joint
        torques those noisy currents mean, ``drive_chain.joint_torques(i)``; each
        ``(N, n_a)``. Draws from the simulator's random generator, sample by sample, as ``N`` calls of
        :meth:`measure` would.
        """
        n_t = self._mechanism.n_tree
        return self._sense(
            motion_rows("q_tree", q_tree, n_t)[:, self._actuated],
            motion_rows("dq_tree", dq_tree, n_t)[:, self._actuated],
            motion_rows("motor_torques_nm", motor_torques_nm, self._mechanism.n_actuated),
        )

    def _sense(
        self, positions: np.ndarray, velocities: np.ndarray, torques: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`sense` of checked actuated positions, velocities and motor torques ``(N, n_a)``, the noise drawn
        sample by sample (its currents, then its velocities) in one draw: ``N`` samples read at once get the
        values ``N`` readings of one sample (:meth:`measure`, :meth:`record_step`) get."""
        sensor = self._settings.sensor
        scales = [scale for scale in (sensor.current_noise_std_a, sensor.velocity_noise_std_rad_s) if scale]
        draws = self._rng.standard_normal((positions.shape[0], len(scales), positions.shape[1]))
        current_draws = draws[:, 0] if sensor.current_noise_std_a else None
        q_measured, currents = _sensed(self._chain, sensor, positions, torques, current_draws)
        if sensor.velocity_noise_std_rad_s:
            velocities = velocities + sensor.velocity_noise_std_rad_s * draws[:, -1]
        return q_measured, velocities, self._chain.joint_torques(currents), currents


@dataclass(frozen=True)
class TrackingRun:
    """Result of :func:`simulate_tracking`, one row per step (``N − 1`` rows), sampled as a drive records.

    Row ``k`` is the sample stamped ``time_s[k]``: the state the sensors see at that instant
    and the motor torque (current) the drive applies from it to the next sample (zero-order
    hold), the same rule for every mechanism. So the torques are the inverse dynamics of the
    recorded motion with the accelerations the recorded positions give at the stamp (their
    central difference equals the step's acceleration); a rule pairing the state after a step
    with the torque of that step lags the torques by one sample (measured on the UR5 and the
    five-bar of the tests while they move: 0.96 % and 0.55 % of the torques instead of 0.014 % and 0.003 %).

    Attributes
    ----------
    time_s
        Instants of the samples, s.
    q_desired
        Desired actuated positions at those instants, rad.
    q, dq
        Measured actuated positions (rad, quantised) and velocities (rad/s).
    currents_a
        Measured motor currents, A.
    joint_torques_nm
        Actuated joint torques from the measured currents, N·m.
    tracking_error
        True actuated position minus desired position, rad.
    applied_torques_nm
        Motor torques applied, without measurement noise, N·m.
    q_tree, dq_tree
        True positions and velocities of all the tree's joints at those instants, rad and
        rad/s, ``(N − 1, n_t)``.
    """

    time_s: np.ndarray
    q_desired: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    currents_a: np.ndarray
    joint_torques_nm: np.ndarray
    tracking_error: np.ndarray
    applied_torques_nm: np.ndarray
    q_tree: np.ndarray
    dq_tree: np.ndarray


def simulate_tracking(
    simulator: RobotSimulator,
    time_s: np.ndarray,
    q_des: np.ndarray,
    dq_des: np.ndarray,
    ddq_des: np.ndarray,
    feedforward_nm: np.ndarray | None = None,
) -> TrackingRun:
    """Step ``simulator`` along a desired actuated trajectory sampled every ``dt_s``.

    Step ``k`` goes from ``time_s[k]`` to ``time_s[k + 1]`` with the desired motion (and
    feedforward, N·m) of sample ``k``; row ``k`` is sampled at ``time_s[k]`` as :class:`TrackingRun`
    says (:meth:`RobotSimulator.record_step`), its sensor noise drawn sample by sample (currents, then
    velocities) as :meth:`RobotSimulator.measure` draws it.
    The simulator's state is used as it is (reset it to the start of the trajectory first
    for a run without initial transient).
    """
    mechanism = simulator.mechanism
    n_a, n_t = mechanism.n_actuated, mechanism.n_tree
    time, q_des, dq_des, ddq_des, ff = tracking_inputs(
        n_a, simulator.settings.dt_s, time_s, q_des, dq_des, ddq_des, feedforward_nm
    )
    samples = time.shape[0] - 1
    q_tree, dq_tree = np.empty((samples, n_t)), np.empty((samples, n_t))
    applied = np.empty((samples, n_a))
    for k in range(samples):
        q_tree[k], dq_tree[k] = simulator.q, simulator.dq
        simulator.step(q_des[k], dq_des[k], ddq_des[k], None if ff is None else ff[k])
        applied[k] = simulator.applied_torques
    actuated = np.asarray(mechanism.actuated, dtype=int)
    q, dq, torques, currents = simulator._sense(q_tree[:, actuated], dq_tree[:, actuated], applied)
    return TrackingRun(
        time_s=time[:samples].copy(),
        q_desired=q_des[:samples].copy(),
        q=q,
        dq=dq,
        currents_a=currents,
        joint_torques_nm=torques,
        tracking_error=q_tree[:, actuated] - q_des[:samples],
        applied_torques_nm=applied,
        q_tree=q_tree,
        dq_tree=dq_tree,
    )
