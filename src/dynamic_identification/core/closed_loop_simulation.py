"""The simulated closed-loop robot: constrained dynamics, drive terms and sensors.

The ground truth for the closed-loop identification of [Briot2012] §2, written from
physics and from Pinocchio's own constraint models, independently of the projected
regressor of :mod:`dynamic_identification.core.closed_loop`:

* :func:`constrained_inverse_dynamics` — the actuated torques of a consistent motion by
  Lagrange multipliers ([Briot2012] eq. (5)): the tree's virtual torques
  ``τ_tree = rnea(q_t, q̇_t, q̈_t)`` must be produced by the motors and the closure
  forces, ``τ_tree = S τ_act + A_cᵀ λ``, with ``A_c`` the Jacobian of Pinocchio's
  ``RigidConstraintModel`` of each closure; solved for ``(τ_act, λ)``, plus the drive
  terms ``Ia q̈ + Fv q̇ + Fc sign(q̇) + off`` of the actuated joints. The passive joints'
  bearing friction ``Fv_p q̇_p + Fc_p sign(q̇_p)``, when given, is a torque their bearings
  take from the tree: it joins ``rnea``'s on the left-hand side.
* :class:`ClosedLoopSimulator` — forward dynamics by ``pinocchio.constraintDynamics``
  (proximal solver, so redundant closure equations are fine), with rotor inertia and
  friction on the actuated joints, bearing friction on the passive ones (when set) and a
  PD (+ feedforward) tracking controller; the
  measured actuated positions are quantised and the motor currents noisy, through
  the sensor model of :mod:`dynamic_identification.core.simulation`.

Closures map onto Pinocchio's constraint models as: ``point`` → ``CONTACT_3D``,
``6d`` → ``CONTACT_6D``, ``planar`` → the in-plane rows (x, y and rotation about z of
frame_a) of a ``CONTACT_6D`` for the inverse dynamics, and a ``CONTACT_6D`` that keeps
the relative placement (offset along the normal included) in the forward simulation —
exact when the loop moves in a plane, which a planar closure describes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
import scipy.linalg

from dynamic_identification.core.checks import motion_rows, motion_samples
from dynamic_identification.core.closed_loop import (
    ClosedLoopModel,
    LoopClosure,
    passive_friction_torques,
    passive_joint_values,
)
from dynamic_identification.core.errors import ModelError
from dynamic_identification.core.model import DriveChain, DriveParameters, limit_bounds
from dynamic_identification.core.simulation import (
    PDSimulationSettings,
    PDTrackingSimulator,
    drive_torques,
    measure,
    tracking_inputs,
)

_PLANAR_ROWS = np.array([0, 1, 5])
"""Rows of a LOCAL ``CONTACT_6D`` constraint that a planar closure keeps: x, y and rotation about z."""

_PROXIMAL_MU = 1e-8
"""Proximal damping of ``constraintDynamics``: makes redundant closure equations solvable."""


def constraint_models(
    model: ClosedLoopModel, *, planar_as_6d: bool = False
) -> tuple[pin.StdVec_RigidConstraintModel, list[np.ndarray]]:
    """Pinocchio's ``RigidConstraintModel`` of each closure and the rows of its Jacobian that apply.

    Frames are given to Pinocchio as the parent joints of the closure frames with their
    placements; the constraints are expressed in frame_a's local axes (``LOCAL``).
    A planar closure is a ``CONTACT_6D`` of which only rows ``(0, 1, 5)`` apply, or all
    of them with ``planar_as_6d`` (the forward simulation).
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


def _check_drive(model: ClosedLoopModel, drive_chain: DriveChain, drive: DriveParameters) -> None:
    if drive_chain.n_joints != model.n_actuated or drive.rotor_inertia.shape[0] != model.n_actuated:
        raise ModelError(
            f"the mechanism has {model.n_actuated} actuated joints but the drive chain has"
            f" {drive_chain.n_joints} and the drive parameters {drive.rotor_inertia.shape[0]}"
        )


def constrained_inverse_dynamics(
    model: ClosedLoopModel,
    drive_chain: DriveChain,
    drive: DriveParameters,
    q: np.ndarray,
    dq: np.ndarray,
    ddq: np.ndarray,
    *,
    passive_viscous: np.ndarray | None = None,
    passive_coulomb: np.ndarray | None = None,
) -> np.ndarray:
    """Actuated joint torques ``(N, n_a)`` in N·m of a consistent tree motion, by Lagrange multipliers.

    ``rnea(q_t, q̇_t, q̈_t) + F_p = S τ_rigid + A_cᵀ λ`` ([Briot2012] eq. (5)) is solved for
    ``(τ_rigid, λ)`` by least squares (exact for a consistent, non-singular motion;
    redundant closure rows only make ``λ`` non-unique), with ``S`` the selection of
    the actuated joints, ``A_c`` Pinocchio's constraint Jacobian
    (``getConstraintsJacobian``) and ``F_p`` the passive joints' bearing friction
    ``Fv_p q̇_p + Fc_p sign(q̇_p)`` (``passive_viscous`` in N·m·s/rad and ``passive_coulomb``
    in N·m, one per passive joint; none when omitted); the drive terms of
    :func:`~dynamic_identification.core.simulation.drive_torques` are added.
    Independent of :func:`~dynamic_identification.core.closed_loop.observation_matrix`.
    """
    _check_drive(model, drive_chain, drive)
    n_t = model.n_tree
    q, dq, ddq = motion_samples(q, dq, ddq, n_t)
    bearing = passive_friction_torques(model, dq[:, model.passive], viscous=passive_viscous, coulomb=passive_coulomb)
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
        tree_torques = pin.rnea(pinocchio_model, data, configurations[k], dq[k], ddq[k])
        tree_torques[model.passive] += bearing[k]
        pin.computeJointJacobians(pinocchio_model, data, configurations[k])
        for constraint, constraint_data in zip(constraints, datas, strict=True):
            constraint.calc(pinocchio_model, data, constraint_data)
        jacobian = pin.getConstraintsJacobian(pinocchio_model, data, constraints, datas)[selected]
        system = np.hstack([selection, jacobian.T])
        rigid[k] = scipy.linalg.lstsq(system, tree_torques)[0][: model.n_actuated]
    actuated = model.actuated
    return rigid + drive_torques(drive_chain, drive, dq[:, actuated], ddq[:, actuated])


@dataclass(frozen=True)
class ClosedLoopSimulationSettings(PDSimulationSettings):
    """Settings of :class:`ClosedLoopSimulator`.

    The attributes are those of
    :class:`~dynamic_identification.core.simulation.PDSimulationSettings`, and the passive
    joints' bearing friction. The controlled joints are the actuated ones; the default
    gains are those on the diagonal of the projected inertia ``J_tᵀ M J_t + diag(Ia)`` at
    the start configuration.

    Attributes
    ----------
    passive_viscous, passive_coulomb
        Viscous (N·m·s/rad) and Coulomb (N·m) friction of each passive joint's bearing,
        kinematic order; ``None``: frictionless.
    """

    coulomb_smoothing_rad_s: float = 1e-2
    passive_viscous: np.ndarray | None = None
    passive_coulomb: np.ndarray | None = None


class ClosedLoopSimulator(PDTrackingSimulator[ClosedLoopModel, ClosedLoopSimulationSettings]):
    """Forward dynamics of a closed-loop robot under PD + feedforward control of its actuated joints.

    Each step solves the constrained dynamics with ``pinocchio.constraintDynamics``:

    ``(M + S diag(Ia + dt kd + dt² kp + dt ∂f/∂q̇) Sᵀ) q̈ + b = S (τ_cmd − f(q̇_a)) + A_cᵀ λ``,
    ``A_c q̈ + Ȧ_c q̇ = 0``,

    the linearised backward-Euler step of the PD and of the friction
    ``f = Fv q̇ + Fc tanh(q̇/ε) + off`` (the diagonal terms ride on Pinocchio's
    ``armature`` of the actuated joints, so stiff gains and friction stay stable; the
    passive joints' bearing friction ``Fv_p q̇_p + Fc_p tanh(q̇_p/ε)`` of the settings is
    a torque on the passive joints, linearised the same way on their ``armature``), then
    semi-implicit Euler, ``q̇⁺ = q̇ + dt q̈``, ``q⁺ = q + dt q̇⁺``. The drift of the
    closure is removed after each step by projecting the state back onto the closed
    configurations (passive positions solved for the actuated ones, passive velocities
    ``J_t q̇_a``). The motor torque reported by :meth:`measure` is the one the step
    applied, ``τ_cmd − (dt kd + dt² kp) q̈_a`` (the PD at the end of the step).

    Parameters
    ----------
    model
        The closed-loop mechanism.
    drive_chain, drive
        Drive chain (must be uncoupled: identity coupling) and true drive parameters of
        the actuated joints.
    settings
        Step, gains, friction smoothing and sensors.
    q0
        Actuated positions to start at, rad (rest); default those of
        ``model.reference_configuration``, whose assembly mode the simulation keeps.
    seed
        Seed of the sensor noise.
    """

    def _set_up(self, model: ClosedLoopModel) -> None:
        _check_drive(model, self._chain, self._drive)
        if not np.array_equal(self._chain.coupling, np.eye(model.n_actuated)):
            raise ModelError("the closed-loop simulator needs an uncoupled drive chain (identity coupling)")
        self._model = model
        self._pinocchio = pin.Model(model.robot.model)
        self._data = self._pinocchio.createData()
        self._constraints, _ = constraint_models(model, planar_as_6d=True)
        self._constraint_datas = pin.StdVec_RigidConstraintData()
        for constraint in self._constraints:
            self._constraint_datas.append(constraint.createData())
        pin.initConstraintDynamics(self._pinocchio, self._data, self._constraints, self._constraint_datas)
        self._proximal = pin.ProximalSettings(1e-12, _PROXIMAL_MU, 20)
        self._velocity_index = np.array([model.robot.model.joints[int(j) + 1].idx_v for j in model.actuated])
        self._passive_index = np.array([model.robot.model.joints[int(j) + 1].idx_v for j in model.passive], dtype=int)
        self._passive_armature = np.array(self._pinocchio.armature[self._passive_index], dtype=float)
        self._passive_viscous = passive_joint_values(model, "passive_viscous", self._settings.passive_viscous)
        self._passive_coulomb = passive_joint_values(model, "passive_coulomb", self._settings.passive_coulomb)
        self._effort_limits = limit_bounds(model.robot.effort_limits[model.actuated])
        self._q = np.array(model.reference_configuration, dtype=float)
        self._dq = np.zeros(model.n_tree)

    def _rest_positions(self) -> np.ndarray:
        return self._q[self._model.actuated]

    def _motor_inertia(self) -> np.ndarray:
        return self.actuated_inertia()

    @property
    def model(self) -> ClosedLoopModel:
        return self._model

    def reset(
        self, q_actuated: np.ndarray, dq_actuated: np.ndarray | None = None, *, time_s: float | None = None
    ) -> None:
        """Put the mechanism at actuated positions ``q_actuated`` (rad), velocity ``dq_actuated`` (default rest).

        The actuated joints are walked there from the current configuration in steps of
        at most 0.05 rad, solving the passive joints on the way (same assembly mode).
        """
        model = self._model
        n_a = model.n_actuated
        qa = motion_rows("q_actuated", q_actuated, n_a)[0]
        dqa = np.zeros(n_a) if dq_actuated is None else motion_rows("dq_actuated", dq_actuated, n_a)[0]
        start = self._q[model.actuated]
        steps = max(1, int(np.ceil(np.max(np.abs(qa - start)) / 0.05)))
        path = start + np.linspace(0.0, 1.0, steps + 1)[:, None] * (qa - start)
        motion = model.complete_motion(path, np.zeros_like(path), np.zeros_like(path), q_guess=self._q)
        self._q = motion.q[-1]
        self._dq = motion.jacobians[-1] @ dqa
        if time_s is not None:
            self._time_s = float(time_s)
        self._applied = np.zeros(n_a)

    def actuated_inertia(self) -> np.ndarray:
        """``J_tᵀ M(q_t) J_t + diag(Ia)`` at the current state: the inertia the motors see, kg·m²."""
        configuration = self._model.robot.configurations(self._q[None])[0]
        upper = np.triu(pin.crba(self._model.robot.model, self._model.robot.model.createData(), configuration))
        mass = upper + np.triu(upper, 1).T
        projection = self._model.projection(self._q)
        return projection.T @ mass @ projection + np.diag(self._drive.rotor_inertia)

    def step(
        self,
        q_desired: np.ndarray,
        dq_desired: np.ndarray,
        ddq_desired: np.ndarray | None = None,
        feedforward_nm: np.ndarray | None = None,
    ) -> None:
        """Advance by ``dt_s`` towards the desired actuated motion given at the current time.

        As :meth:`~dynamic_identification.core.simulation.RobotSimulator.step`: the PD acts
        on the state at the end of the step, the desired state being carried there by a
        Taylor step; ``feedforward_nm`` (N·m per actuated joint) is added.
        """
        model, settings = self._model, self._settings
        dt = settings.dt_s
        qa, dqa = self._q[model.actuated], self._dq[model.actuated]
        command, gains = self._pd_command(qa, dqa, q_desired, dq_desired, ddq_desired, feedforward_nm)
        eps = settings.coulomb_smoothing_rad_s
        tanh = np.tanh(dqa / eps)
        friction = self._drive.viscous * dqa + self._drive.coulomb * tanh + self._drive.offset
        slope = self._drive.viscous + self._drive.coulomb * (1.0 - tanh**2) / eps
        self._pinocchio.armature[self._velocity_index] = self._drive.rotor_inertia + gains + dt * slope
        torques = np.zeros(model.n_tree)
        torques[self._velocity_index] = command - friction
        if self._passive_index.size:
            dqp = self._dq[model.passive]
            tanh_p = np.tanh(dqp / eps)
            bearing = self._passive_viscous * dqp + self._passive_coulomb * tanh_p
            bearing_slope = self._passive_viscous + self._passive_coulomb * (1.0 - tanh_p**2) / eps
            self._pinocchio.armature[self._passive_index] = self._passive_armature + dt * bearing_slope
            torques[self._passive_index] = -bearing
        configuration = model.robot.configurations(self._q[None])[0]
        acceleration = pin.constraintDynamics(
            self._pinocchio,
            self._data,
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
        self._time_s += dt

    def measure(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """What the actuated joints report now: ``(q, q̇, τ, i)``, each ``(n_a,)``.

        The current state and the torque of the last step, through :meth:`sense`.
        """
        q, dq, torques, currents = self.sense(self._q[None], self._dq[None], self._applied[None])
        return q[0], dq[0], torques[0], currents[0]

    def sense(
        self, q_tree: np.ndarray, dq_tree: np.ndarray, motor_torques_nm: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Sensor readings of true states ``(N, n_t)`` and motor torques ``(N, n_a)``: ``(q, q̇, τ, i)``.

        ``q`` (rad) of the actuated joints through the encoders
        (:func:`~dynamic_identification.core.simulation.quantize_positions`), ``q̇``
        (rad/s) the true velocity plus noise, ``i`` (A) the currents of the motor
        torques plus noise, ``τ`` (N·m) the joint torques those noisy currents mean;
        each ``(N, n_a)``. Draws from the simulator's random generator.
        """
        sensor = self._settings.sensor
        actuated = self._model.actuated
        positions = motion_rows("q_tree", q_tree, self._model.n_tree)[:, actuated]
        velocities = motion_rows("dq_tree", dq_tree, self._model.n_tree)[:, actuated]
        torques = motion_rows("motor_torques_nm", motor_torques_nm, self._model.n_actuated)
        q_measured, currents = measure(self._chain, sensor, positions, torques, self._rng)
        if sensor.velocity_noise_std_rad_s:
            velocities = velocities + self._rng.normal(0.0, sensor.velocity_noise_std_rad_s, size=velocities.shape)
        return q_measured, velocities, self._chain.joint_torques(currents), currents


@dataclass(frozen=True)
class ClosedLoopTrackingRun:
    """Result of :func:`simulate_tracking`, one row per step (``N − 1`` rows).

    Row ``k`` is sampled as a drive samples it: the state at ``time_s[k]`` and the
    motor torque (current) applied from ``time_s[k]`` to the next sample, so that the
    torques match the inverse dynamics of the recorded motion without a one-sample lag.

    Attributes
    ----------
    time_s
        Instants of the samples, s (``time_s[:-1]`` of the input).
    q_desired
        Desired actuated positions at those instants, rad.
    q, dq
        Measured actuated positions (rad, quantised) and velocities (rad/s).
    currents_a
        Measured motor currents, A.
    joint_torques_nm
        Actuated joint torques from the measured currents, N·m.
    applied_torques_nm
        Motor torques applied, without measurement noise, N·m.
    tracking_error
        True actuated position minus desired position, rad.
    q_tree, dq_tree
        True tree positions and velocities, rad and rad/s, ``(N − 1, n_t)``.
    """

    time_s: np.ndarray
    q_desired: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    currents_a: np.ndarray
    joint_torques_nm: np.ndarray
    applied_torques_nm: np.ndarray
    tracking_error: np.ndarray
    q_tree: np.ndarray
    dq_tree: np.ndarray


def simulate_tracking(
    simulator: ClosedLoopSimulator,
    time_s: np.ndarray,
    q_des: np.ndarray,
    dq_des: np.ndarray,
    ddq_des: np.ndarray,
    feedforward_nm: np.ndarray | None = None,
) -> ClosedLoopTrackingRun:
    """Step ``simulator`` along a desired actuated trajectory sampled every ``dt_s``.

    Step ``k`` goes from ``time_s[k]`` to ``time_s[k + 1]`` with the desired motion (and
    feedforward, N·m) of sample ``k``; row ``k`` holds the state at ``time_s[k]`` and the
    torque of step ``k`` (see :class:`ClosedLoopTrackingRun`). Reset the simulator to
    the start of the trajectory first for a run without initial transient.
    """
    n_a = simulator.model.n_actuated
    time, q_des, dq_des, ddq_des, ff = tracking_inputs(
        n_a, simulator.settings.dt_s, time_s, q_des, dq_des, ddq_des, feedforward_nm
    )
    samples = time.shape[0] - 1
    n_t = simulator.model.n_tree
    q_tree, dq_tree = np.empty((samples, n_t)), np.empty((samples, n_t))
    applied = np.empty((samples, n_a))
    for k in range(samples):
        q_tree[k], dq_tree[k] = simulator.q, simulator.dq
        simulator.step(q_des[k], dq_des[k], ddq_des[k], None if ff is None else ff[k])
        applied[k] = simulator.applied_torques
    q, dq, torques, currents = simulator.sense(q_tree, dq_tree, applied)
    actuated = simulator.model.actuated
    return ClosedLoopTrackingRun(
        time_s=time[:-1].copy(),
        q_desired=q_des[:-1].copy(),
        q=q,
        dq=dq,
        currents_a=currents,
        joint_torques_nm=torques,
        applied_torques_nm=applied,
        tracking_error=q_tree[:, actuated] - q_des[:-1],
        q_tree=q_tree,
        dq_tree=dq_tree,
    )
