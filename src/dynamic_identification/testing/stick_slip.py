"""Forward dynamics with Stribeck friction and true stiction, under PD + feedforward control.

The robot of :mod:`dynamic_identification.core.simulation` integrates a smoothed
Coulomb friction ``Fc tanh(v / ε)``: a joint at rest never sticks, it creeps. Real
drives stick: at rest the friction takes any value up to the breakaway (static)
torque ``Fs > Fc``, and once sliding it falls from ``Fs`` towards the Coulomb level
along the Stribeck curve (Armstrong-Hélouvry, Dupont & Canudas de Wit, *Automatica*
30(7), 1994, eq. (2.4)):

``f(v) = Fv v + sign(v) (Fc + (Fs − Fc) exp(−|v / v_s|^δ))`` for ``v ≠ 0``,
``f(0) ∈ [−Fs, Fs]`` (stick).

Time stepping (the set-valued friction is taken at the end of the step)
-----------------------------------------------------------------------
Motor velocities are ``u = C q̇`` (coupling ``C``, :class:`~.model.DriveChain`); the
joint friction torque is ``Cᵀ f(u)``. Each step of ``dt`` solves, for the new joint
velocity ``w``,

``A (w − q̇) = dt (τ_cmd − b(q, q̇)) − dt Cᵀ (Fv ⊙ u + μ ⊙ σ)``, ``u = C w``, ``σ ∈ Sign(u)``

with ``A = M(q) + Cᵀ diag(Ia) C + diag(dt kd + dt²/2 kp)`` (the PD acts at the end of the
step, as in :class:`~.simulation.RobotSimulator`) and the friction magnitude
``μ = Fc + (Fs − Fc) exp(−|u_old / v_s|^δ)`` taken at the velocity at the start of the
step (``μ = Fs`` for a motor at rest). With ``μ`` frozen the friction law is maximal
monotone, and the step is the unique minimiser of a strictly convex problem (a
small Lasso in the motor velocities),

``min_u ½ uᵀ H u − cᵀ u + dt Σ_m μ_m |u_m|``, ``H = C⁻ᵀ A C⁻¹ + dt diag(Fv)``,

solved exactly by an active-set method: a motor whose net torque stays within
``±μ`` ends the step at exactly zero velocity, so a joint at rest with an applied
torque below its breakaway torque does not move at all (no creep, no chatter).
Positions follow the trapezoidal rule ``q⁺ = q + dt (q̇ + w) / 2``, so the motion is
exactly the piecewise-quadratic motion of constant acceleration ``(w − q̇) / dt`` per
step, and the applied torque is held constant over the step (zero-order hold).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from dynamic_identification.core.errors import DataError, ModelError
from dynamic_identification.core.mechanism.robot import DriveChain, RobotModel, limit_bounds
from dynamic_identification.core.simulation import SimulatedJointState, critically_damped_gains

_ACTIVE_SET_SWEEPS = 4
"""Active-set changes allowed per motor before the coordinate-descent fallback."""

_FALLBACK_SWEEPS = 2000
"""Coordinate-descent sweeps of the fallback (it converges linearly; a few dozen are usual)."""


def _vector(name: str, value: float | Sequence[float] | np.ndarray, n: int, *, minimum: float = 0.0) -> np.ndarray:
    array = np.asarray(value, dtype=float)
    if array.ndim == 0:
        array = np.full(n, float(array))
    if array.shape != (n,) or not np.all(np.isfinite(array)) or np.any(array < minimum):
        raise ModelError(f"{name} must be a scalar or {n} finite values >= {minimum}, got {np.asarray(value).tolist()}")
    array = array.copy()
    array.setflags(write=False)
    return array


@dataclass(frozen=True)
class StribeckFriction:
    """Friction of each motor, expressed on the joint side (like :class:`~.model.DriveParameters`).

    Attributes
    ----------
    static
        Breakaway torque ``Fs`` in N·m: the largest friction a motor at rest resists.
    coulomb
        Coulomb level ``Fc`` in N·m (``Fc <= Fs``): the sliding friction once the Stribeck
        effect has died out; the ``Fc`` of the IDIM's ``Fc sign(q̇)`` term.
    viscous
        ``Fv`` in N·m·s/rad.
    stribeck_velocity
        ``v_s`` in rad/s (joint side): the speed over which friction falls from ``Fs`` to ``Fc``.
    exponent
        ``δ`` of the Stribeck curve (2: Gaussian decay, Armstrong-Hélouvry et al. 1994).
    """

    static: np.ndarray
    coulomb: np.ndarray
    viscous: np.ndarray
    stribeck_velocity: np.ndarray
    exponent: float = 2.0

    @classmethod
    def create(
        cls,
        n_joints: int,
        *,
        static: float | Sequence[float] | np.ndarray,
        coulomb: float | Sequence[float] | np.ndarray,
        viscous: float | Sequence[float] | np.ndarray,
        stribeck_velocity: float | Sequence[float] | np.ndarray = 0.05,
        exponent: float = 2.0,
    ) -> StribeckFriction:
        """Validated friction; scalars apply to every motor.

        Raises
        ------
        ModelError
            If a value is negative or not finite, ``static < coulomb`` for some motor,
            ``stribeck_velocity <= 0`` or ``exponent <= 0``.
        """
        fs = _vector("static", static, n_joints)
        fc = _vector("coulomb", coulomb, n_joints)
        fv = _vector("viscous", viscous, n_joints)
        vs = _vector("stribeck_velocity", stribeck_velocity, n_joints, minimum=1e-12)
        if np.any(fs < fc):
            raise ModelError(
                f"static must be >= coulomb for every motor, got static={fs.tolist()}, coulomb={fc.tolist()}"
            )
        if not (np.isfinite(exponent) and exponent > 0.0):
            raise ModelError(f"exponent must be finite and > 0, got {exponent}")
        return cls(static=fs, coulomb=fc, viscous=fv, stribeck_velocity=vs, exponent=float(exponent))

    @property
    def n_joints(self) -> int:
        return int(self.static.shape[0])

    def magnitude(self, speed: np.ndarray) -> np.ndarray:
        """Dry friction ``Fc + (Fs − Fc) exp(−|v / v_s|^δ)`` (N·m) at motor speeds ``|v|`` (rad/s); ``Fs`` at rest."""
        ratio = np.abs(np.asarray(speed, dtype=float)) / self.stribeck_velocity
        return self.coulomb + (self.static - self.coulomb) * np.exp(-(ratio**self.exponent))

    def sliding_torque(self, velocity: np.ndarray) -> np.ndarray:
        """``f(v)`` (N·m) of sliding motors, ``Fv v + sign(v) magnitude(v)``; 0 where ``v = 0``."""
        v = np.asarray(velocity, dtype=float)
        return self.viscous * v + np.sign(v) * self.magnitude(v)


def _lasso_step(
    hessian: np.ndarray, linear: np.ndarray, weights: np.ndarray, guess: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Minimiser ``u`` of ``½ uᵀ H u − cᵀ u + Σ λ_m |u_m|`` and the multipliers ``σ`` (``|σ| <= 1``).

    Optimality: ``H u − c + λ ⊙ σ = 0`` with ``σ_m = sign(u_m)`` where ``u_m ≠ 0`` and
    ``|σ_m| <= 1`` where ``u_m = 0`` (a stuck motor). Active set started from the
    signs ``guess`` (−1, 0 stuck, +1), changing the worst violation each time;
    motors with ``λ = 0`` are always free.
    """
    n = linear.shape[0]
    frictionless = weights <= 0.0
    sign = np.where(frictionless, 0.0, np.sign(guess))
    u = np.zeros(n)
    for _ in range(_ACTIVE_SET_SWEEPS * n + 2):
        free = frictionless | (sign != 0.0)
        u = np.zeros(n)
        if free.all():
            u = np.linalg.solve(hessian, linear - weights * sign)
        elif free.any():
            index = np.flatnonzero(free)
            u[index] = np.linalg.solve(hessian[np.ix_(index, index)], linear[index] - weights[index] * sign[index])
        residual = linear - hessian @ u
        tolerance = 1e-12 * (1.0 + np.abs(linear))
        slip = np.where(~free, np.abs(residual) - weights - tolerance, -np.inf)
        wrong = np.where(free & ~frictionless, -u * sign, -np.inf)
        if slip.max(initial=-np.inf) <= 0.0 and wrong.max(initial=-np.inf) < 0.0:
            sigma = np.where(free, sign, np.divide(residual, weights, out=np.zeros(n), where=weights > 0.0))
            return u, np.clip(sigma, -1.0, 1.0)
        if wrong.max(initial=-np.inf) >= 0.0:
            sign[int(np.argmax(wrong))] = 0.0
        else:
            worst = int(np.argmax(slip))
            sign[worst] = np.sign(residual[worst])
    return _lasso_coordinate_descent(hessian, linear, weights, u)


def _lasso_coordinate_descent(
    hessian: np.ndarray, linear: np.ndarray, weights: np.ndarray, start: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Cyclic coordinate descent with soft thresholding: the fallback of :func:`_lasso_step`."""
    u = start.copy()
    diagonal = np.diag(hessian)
    for _ in range(_FALLBACK_SWEEPS):
        previous = u.copy()
        for m in range(u.shape[0]):
            pull = linear[m] - hessian[m] @ u + diagonal[m] * u[m]
            u[m] = np.sign(pull) * max(abs(pull) - weights[m], 0.0) / diagonal[m]
        if np.max(np.abs(u - previous)) <= 1e-14 * (1.0 + np.max(np.abs(u))):
            break
    residual = linear - hessian @ u
    sigma = np.where(u != 0.0, np.sign(u), np.divide(residual, weights, out=np.zeros_like(u), where=weights > 0.0))
    return u, np.clip(sigma, -1.0, 1.0)


@dataclass(frozen=True)
class StickSlipRun:
    """Result of :meth:`StickSlipSimulator.run` on a grid of ``K + 1`` instants ``t_i = t_0 + i dt``.

    Attributes
    ----------
    time_s
        Grid instants, s, shape ``(K + 1,)``.
    q, dq
        Joint positions (rad) and velocities (rad/s) at the grid instants, ``(K + 1, n)``.
    ddq
        Constant joint acceleration of step ``i`` (from ``t_i`` to ``t_{i+1}``), rad/s², ``(K, n)``.
    applied_torques
        Joint torques the motors applied over step ``i`` (PD + feedforward, clipped), N·m, ``(K, n)``.
    friction_torques
        Joint friction torques over step ``i``, ``Cᵀ f(u)``, N·m, ``(K, n)``.
    stuck
        Whether motor ``m`` ended step ``i`` stuck (zero velocity, friction within ``±Fs``), ``(K, n)``.
    saturated_steps
        Steps in which some commanded torque was clipped to its effort limit.
    """

    time_s: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    applied_torques: np.ndarray
    friction_torques: np.ndarray
    stuck: np.ndarray
    saturated_steps: int


class StickSlipSimulator(SimulatedJointState):
    """The robot under PD + feedforward control with Stribeck friction, stiction and rotor inertia.

    See the module docstring for the time stepping. Per step the motors apply
    ``τ = kp (q_d⁺ − q⁺) + kd (q̇_d⁺ − q̇⁺) + τ_ff`` (the desired state carried to the end
    of the step by a Taylor step), clipped to the URDF effort limits when
    ``saturate_effort``; a clipped joint's torque is the constant limit.

    Parameters
    ----------
    robot, drive_chain
        Rigid-body model and drive chain (coupling ``C``).
    rotor_inertia
        ``Ia`` per motor, joint side, kg·m².
    friction
        Friction per motor.
    dt_s
        Step, s (the controller period: torques are held over it).
    kp, kd
        PD gains per joint, N·m/rad and N·m·s/rad (scalars apply to every joint); ``None``
        chooses a critically damped loop of ``bandwidth_hz`` on the diagonal of
        ``M(q0) + Cᵀ diag(Ia) C`` (as :class:`~.simulation.RobotSimulator`).
    q0
        Initial positions, rad (default zero), used for the default gains.

    Raises
    ------
    ModelError
        On sizes that disagree or invalid gains or step.
    """

    def __init__(
        self,
        robot: RobotModel,
        drive_chain: DriveChain,
        rotor_inertia: float | Sequence[float] | np.ndarray,
        friction: StribeckFriction,
        *,
        dt_s: float = 1e-3,
        kp: float | Sequence[float] | np.ndarray | None = None,
        kd: float | Sequence[float] | np.ndarray | None = None,
        bandwidth_hz: float = 10.0,
        saturate_effort: bool = True,
        q0: np.ndarray | None = None,
    ) -> None:
        n = robot.n_joints
        if drive_chain.n_joints != n or friction.n_joints != n:
            raise ModelError(f"robot has {n} joints, drive_chain {drive_chain.n_joints}, friction {friction.n_joints}")
        for name, value in (("dt_s", dt_s), ("bandwidth_hz", bandwidth_hz)):
            if not (np.isfinite(value) and value > 0.0):
                raise ModelError(f"{name} must be finite and > 0, got {value}")
        self._robot = robot
        self._friction = friction
        self._dt = float(dt_s)
        self._data = robot.model.createData()
        self._coupling = drive_chain.coupling
        self._coupling_inverse = np.linalg.inv(drive_chain.coupling)
        ia = _vector("rotor_inertia", rotor_inertia, n)
        self._rotor = drive_chain.coupling.T @ (ia[:, None] * drive_chain.coupling)
        self._limits = limit_bounds(robot.effort_limits) if saturate_effort else None
        self._lower = np.tril_indices(n, -1)
        self._diagonal = np.diag_indices(n)
        self._uncoupled = drive_chain.uncoupled
        self._q = np.zeros(n)
        self._dq = np.zeros(n)
        self.reset(np.zeros(n) if q0 is None else q0)
        default_kp, default_kd = critically_damped_gains(np.diag(self._mass_matrix(self._q)), bandwidth_hz)
        self.kp = default_kp if kp is None else _vector("kp", kp, n)
        self.kd = default_kd if kd is None else _vector("kd", kd, n)

    @property
    def dt_s(self) -> float:
        return self._dt

    def reset(self, q: np.ndarray, dq: np.ndarray | None = None) -> None:
        """Put the robot at ``q`` (rad) with velocity ``dq`` (rad/s; default rest)."""
        n = self._robot.n_joints
        position = np.asarray(q, dtype=float).reshape(-1)
        velocity = np.zeros(n) if dq is None else np.asarray(dq, dtype=float).reshape(-1)
        if position.shape != (n,) or velocity.shape != (n,):
            raise DataError(f"q and dq must have {n} entries, got shapes {position.shape} and {velocity.shape}")
        if not (np.all(np.isfinite(position)) and np.all(np.isfinite(velocity))):
            raise DataError(f"q and dq must be finite, got {position.tolist()} and {velocity.tolist()}")
        self._q, self._dq = position.copy(), velocity.copy()

    def _configuration(self, q: np.ndarray) -> np.ndarray:
        return self._robot.configuration(q)

    def _mass_matrix(self, q: np.ndarray) -> np.ndarray:
        # Pinocchio fills at least the upper triangle; mirror it (some versions leave the lower one empty).
        mass = np.array(pin.crba(self._robot.model, self._data, self._configuration(q)))
        mass[self._lower] = mass.T[self._lower]
        return mass + self._rotor

    def step(
        self, q_desired: np.ndarray, dq_desired: np.ndarray, ddq_desired: np.ndarray, feedforward_nm: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """Advance one step; returns the applied joint torques, friction torques (N·m), stuck motors, saturation."""
        dt = self._dt
        q, dq = self._q, self._dq
        q_target = q_desired + dt * dq_desired + 0.5 * dt * dt * ddq_desired
        dq_target = dq_desired + dt * ddq_desired
        command = self.kp * (q_target - q - dt * dq) + self.kd * (dq_target - dq) + feedforward_nm
        gains = dt * self.kd + 0.5 * dt * dt * self.kp
        saturated = False
        if self._limits is not None:
            clipped = np.abs(command) > self._limits
            if clipped.any():
                saturated = True
                command = np.clip(command, -self._limits, self._limits)
                gains = np.where(clipped, 0.0, gains)
        bias = pin.nonLinearEffects(self._robot.model, self._data, self._configuration(q), dq)
        inertia = self._mass_matrix(q)
        inertia[self._diagonal] += gains
        friction = self._friction
        viscous = dt * friction.viscous
        linear = inertia @ dq + dt * (command - bias)
        if self._uncoupled:
            motor_velocity = dq
            inertia[self._diagonal] += viscous
            hessian = inertia
        else:
            c_inv = self._coupling_inverse
            motor_velocity = self._coupling @ dq
            hessian = c_inv.T @ inertia @ c_inv + np.diag(viscous)
            linear = c_inv.T @ linear
        magnitude = friction.magnitude(motor_velocity)
        u, sigma = _lasso_step(hessian, linear, dt * magnitude, motor_velocity)
        w = u if self._uncoupled else self._coupling_inverse @ u
        motor_friction = friction.viscous * u + magnitude * sigma
        applied = command - gains / dt * (w - dq)
        self._q = q + 0.5 * dt * (dq + w)
        self._dq = w
        joint_friction = motor_friction if self._uncoupled else self._coupling.T @ motor_friction
        return applied, joint_friction, u == 0.0, saturated

    def run(
        self,
        time_s: np.ndarray,
        q_desired: np.ndarray,
        dq_desired: np.ndarray,
        ddq_desired: np.ndarray,
        feedforward_nm: np.ndarray | None = None,
    ) -> StickSlipRun:
        """Step along a desired motion given at the grid instants ``time_s`` (spaced by ``dt_s``).

        Step ``i`` uses the desired motion and feedforward of instant ``i``; the state is
        taken as it is (reset it first). Returns the states at all ``K + 1`` instants and
        the per-step quantities of the ``K`` steps.

        Raises
        ------
        DataError
            If the grid is not spaced by ``dt_s`` or shapes disagree.
        """
        time = np.asarray(time_s, dtype=float)
        n = self._robot.n_joints
        arrays = [np.asarray(a, dtype=float) for a in (q_desired, dq_desired, ddq_desired)]
        ff = np.zeros_like(arrays[0]) if feedforward_nm is None else np.asarray(feedforward_nm, dtype=float)
        if time.ndim != 1 or time.shape[0] < 2:
            raise DataError(f"time_s must be 1-D with at least 2 instants, got shape {time.shape}")
        for name, array in zip(
            ("q_desired", "dq_desired", "ddq_desired", "feedforward_nm"), (*arrays, ff), strict=True
        ):
            if array.shape != (time.shape[0], n):
                raise DataError(f"{name} must have shape ({time.shape[0]}, {n}), got {array.shape}")
        if not np.allclose(np.diff(time), self._dt, rtol=1e-6, atol=1e-12):
            raise DataError(f"time_s must be spaced by dt_s={self._dt} s")
        steps = time.shape[0] - 1
        q = np.empty((steps + 1, n))
        dq = np.empty((steps + 1, n))
        applied, friction = np.empty((steps, n)), np.empty((steps, n))
        stuck = np.empty((steps, n), dtype=bool)
        q[0], dq[0] = self._q, self._dq
        saturated = 0
        qd, dqd, ddqd = arrays
        for i in range(steps):
            applied[i], friction[i], stuck[i], clipped = self.step(qd[i], dqd[i], ddqd[i], ff[i])
            saturated += int(clipped)
            q[i + 1], dq[i + 1] = self._q, self._dq
        return StickSlipRun(
            time_s=time.copy(),
            q=q,
            dq=dq,
            ddq=np.diff(dq, axis=0) / self._dt,
            applied_torques=applied,
            friction_torques=friction,
            stuck=stuck,
            saturated_steps=saturated,
        )
