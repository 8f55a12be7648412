"""Validation by simulation: the identified model driven by the measured torques ([DirectDrive2012] §5).

[DirectDrive2012] validates each identified model by integrating its forward dynamics with
a Runge-Kutta 4/5 method from the torques applied to the real arm and comparing the
simulated joint positions with the measured ones: ``q_error = q − q_sim`` and
``‖q_error,i‖₂`` per joint (its Table 2).

The identified model is known only through its base parameters ``θ`` (any standard
vector with ``K χ = θ`` gives the same torques). The IDIM is linear in ``q̈``,
``τ = W(q, q̇, q̈) θ = M(q) q̈ + h(q, q̇)``, so the model's forward dynamics are read
from the regressor: ``h = W(q, q̇, 0) θ`` and column ``j`` of ``M`` is
``(W(q, 0, e_j) − W(q, 0, 0)) θ``; then ``q̈ = M⁻¹ (τ − h)``. Concretely ``W θ`` is
evaluated as the standard regressor times the standard vector that holds ``θ`` on
the independent columns and zeros elsewhere ([Gautier2013] eq. (4)): Pinocchio's
``computeJointTorqueRegressor`` for the links, the drive-chain formulas for rotor
inertia, friction and offset.

Coulomb friction ``Fc sign(v)`` is discontinuous and makes an explicit integrator
chatter where a joint sticks; the simulation smooths it to ``Fc tanh(v / ε)``
(:data:`DEFAULT_COULOMB_SMOOTHING_RAD_S`; ``ε = 0`` keeps the sign, fine for motions
that only cross zero velocity). An open-loop robot under gravity
drifts away from any trajectory it does not exactly reproduce, so errors grow with
the horizon; an optional PD on the measured motion keeps a long simulation near it
(the error then measures the model's torque mismatch through the PD's compliance).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
import scipy.integrate

from dynamic_identification.core.errors import DataError, ModelError
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel
from dynamic_identification.core.regressors.dynamic_model import DynamicModel

DEFAULT_COULOMB_SMOOTHING_RAD_S = 0.01
"""``ε`` of ``tanh(v / ε)`` in simulated Coulomb friction, rad/s. With the exact sign an
explicit integrator chatters without end where a joint should stick; 0.01 rad/s keeps
the friction stiffness ``Fc / ε`` within reach of RK45 at the data's sample period."""


@dataclass(frozen=True)
class IdentifiedDynamics:
    """Forward and inverse dynamics of a model given by base-parameter values.

    Create with :meth:`create`. ``coulomb_smoothing_rad_s`` ``ε`` > 0 replaces
    ``sign(v)`` by ``tanh(v / ε)`` in the friction.
    """

    robot: RobotModel
    drive_chain: DriveChain
    terms: DriveTerms
    inertial: np.ndarray
    drive: dict[str, np.ndarray]
    coulomb_smoothing_rad_s: float
    data: pin.Data

    @classmethod
    def create(
        cls,
        dynamic_model: DynamicModel,
        parameters: np.ndarray,
        *,
        coulomb_smoothing_rad_s: float = DEFAULT_COULOMB_SMOOTHING_RAD_S,
    ) -> IdentifiedDynamics:
        """The serial robot of ``dynamic_model`` with base parameters ``parameters`` ``(b,)`` in its base order."""
        robot, drive_chain, terms = dynamic_model.mechanism.robot, dynamic_model.drive_chain, dynamic_model.terms
        base = dynamic_model.base
        values = np.asarray(parameters, dtype=float)
        if values.shape != (base.count,) or not np.all(np.isfinite(values)):
            raise ModelError(f"parameters must be {base.count} finite base-parameter values, got shape {values.shape}")
        if not (np.isfinite(coulomb_smoothing_rad_s) and coulomb_smoothing_rad_s >= 0.0):
            raise ModelError(f"coulomb_smoothing_rad_s must be finite and >= 0, got {coulomb_smoothing_rad_s}")
        standard = np.zeros(len(base.standard_names))
        standard[base.independent] = values
        table = standard.reshape(robot.n_joints, terms.per_joint)
        drive = {name: table[:, 10 + k].copy() for k, name in enumerate(terms.names)}
        return cls(
            robot=robot,
            drive_chain=drive_chain,
            terms=terms,
            inertial=table[:, :10].ravel().copy(),
            drive=drive,
            coulomb_smoothing_rad_s=float(coulomb_smoothing_rad_s),
            data=robot.model.createData(),
        )

    def _rigid(self, configuration: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        regressor = pin.computeJointTorqueRegressor(self.robot.model, self.data, configuration, dq, ddq)
        return regressor @ self.inertial

    def _configuration(self, q: np.ndarray) -> np.ndarray:
        return self.robot.configuration(np.asarray(q, dtype=float))

    def _mass(self, configuration: np.ndarray) -> np.ndarray:
        n = self.robot.n_joints
        zero = np.zeros(n)
        gravity = self._rigid(configuration, zero, zero)
        mass = np.empty((n, n))
        unit = np.zeros(n)
        for j in range(n):
            unit[j] = 1.0
            mass[:, j] = self._rigid(configuration, zero, unit) - gravity
            unit[j] = 0.0
        if "Ia" in self.drive:
            coupling = self.drive_chain.coupling
            mass += coupling.T @ (self.drive["Ia"][:, None] * coupling)
        return mass

    def _bias(self, configuration: np.ndarray, dq: np.ndarray) -> np.ndarray:
        velocity = np.asarray(dq, dtype=float)
        torque = self._rigid(configuration, velocity, np.zeros_like(velocity))
        if not self.drive:
            return torque
        coupling = self.drive_chain.coupling
        motor = coupling @ velocity
        friction = np.zeros_like(motor)
        if "Fv" in self.drive:
            friction += self.drive["Fv"] * motor
        if "Fc" in self.drive:
            eps = self.coulomb_smoothing_rad_s
            friction += self.drive["Fc"] * (np.tanh(motor / eps) if eps > 0.0 else np.sign(motor))
        if "off" in self.drive:
            friction += self.drive["off"]
        return torque + coupling.T @ friction

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """``M(q)`` of the identified model, ``(n, n)`` kg·m², including rotor inertia ``Cᵀ diag(Ia) C``."""
        return self._mass(self._configuration(q))

    def bias(self, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        """``h(q, q̇) = W(q, q̇, 0) θ``: Coriolis, centrifugal, gravity, friction and offset torques, N·m."""
        return self._bias(self._configuration(q), dq)

    def forward(self, q: np.ndarray, dq: np.ndarray, torque: np.ndarray) -> np.ndarray:
        """``q̈ = M(q)⁻¹ (τ − h(q, q̇))``, rad/s².

        Raises
        ------
        ModelError
            When the identified ``M(q)`` is singular at ``q`` (a physically
            inconsistent estimate).
        """
        configuration = self._configuration(q)
        try:
            return np.linalg.solve(self._mass(configuration), np.asarray(torque) - self._bias(configuration, dq))
        except np.linalg.LinAlgError as error:
            raise ModelError(f"the identified mass matrix is singular at q={np.asarray(q).tolist()}") from error

    def inverse(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """``τ = M(q) q̈ + h(q, q̇)``, N·m, for one state ``(n,)``."""
        return self.mass_matrix(q) @ np.asarray(ddq, dtype=float) + self.bias(q, dq)


@dataclass(frozen=True)
class PDFeedback:
    """``τ = τ_measured + kp (q_measured − q) + kd (q̇_measured − q̇)``; gains N·m/rad, N·m·s/rad, scalar or per joint."""

    kp: float | np.ndarray
    kd: float | np.ndarray


@dataclass(frozen=True)
class ValidationResult:
    """Simulated response of an identified model and its position error ([DirectDrive2012] §5, Table 2).

    Attributes
    ----------
    time
        Sample instants, s, ``(N,)``.
    q_simulated
        Simulated joint positions, rad, ``(N, n)``; NaN after a failed integration.
    q_error
        ``q_measured − q_simulated``, rad, ``(N, n)``.
    error_norm
        ``‖q_error,i‖₂`` over the samples per joint, rad ([DirectDrive2012] Table 2); depends on
        the number of samples, see :attr:`error_rms`.
    error_rms
        Root mean square of ``q_error`` per joint, rad.
    error_max
        Largest ``|q_error|`` per joint, rad.
    success
        Whether the integration reached the last sample.
    message
        The integrator's message.
    """

    time: np.ndarray
    q_simulated: np.ndarray
    q_error: np.ndarray
    error_norm: np.ndarray
    error_rms: np.ndarray
    error_max: np.ndarray
    success: bool
    message: str


def _interpolator(time: np.ndarray, values: np.ndarray) -> Callable[[float], np.ndarray]:
    """Linear interpolation of ``values`` ``(N, n)`` at one instant."""

    def at(t: float) -> np.ndarray:
        k = int(np.clip(np.searchsorted(time, t, side="right") - 1, 0, time.shape[0] - 2))
        s = (t - time[k]) / (time[k + 1] - time[k])
        return (1.0 - s) * values[k] + s * values[k + 1]

    return at


def simulate(
    dynamics: IdentifiedDynamics,
    time: np.ndarray,
    torques: np.ndarray,
    q0: np.ndarray,
    dq0: np.ndarray,
    *,
    feedback: PDFeedback | None = None,
    q_reference: np.ndarray | None = None,
    method: str = "RK45",
    rtol: float = 1e-7,
    atol: float = 1e-9,
) -> tuple[np.ndarray, np.ndarray, bool, str]:
    """Integrate the model's forward dynamics under the torques ``(N, n)`` (N·m, linear between samples).

    Runge-Kutta 4/5 by default, as [DirectDrive2012] §5; the step is at most one sample
    period so that no torque sample is skipped. With ``feedback`` the PD acts on the
    error to ``q_reference`` ``(N, n)`` (its velocity by central differences).

    Returns
    -------
    q, dq
        Positions (rad) and velocities (rad/s) at ``time``, ``(N, n)``; NaN past a failure.
    success, message
        Whether the integration reached the last sample, and the integrator's message.
    """
    t = np.asarray(time, dtype=float)
    tau = np.asarray(torques, dtype=float)
    n = dynamics.robot.n_joints
    if t.ndim != 1 or t.shape[0] < 2 or np.any(np.diff(t) <= 0.0):
        raise DataError(f"time must be increasing with at least 2 samples, got shape {t.shape}")
    if tau.shape != (t.shape[0], n) or not np.all(np.isfinite(tau)):
        raise DataError(f"torques must be finite with shape ({t.shape[0]}, {n}), got {tau.shape}")
    torque_at = _interpolator(t, tau)
    reference_at = velocity_at = None
    kp = kd = np.zeros(n)
    if feedback is not None:
        if q_reference is None or np.shape(q_reference) != (t.shape[0], n):
            raise DataError(f"feedback needs q_reference of shape ({t.shape[0]}, {n})")
        reference = np.asarray(q_reference, dtype=float)
        reference_at = _interpolator(t, reference)
        velocity_at = _interpolator(t, np.gradient(reference, t, axis=0))
        kp = np.broadcast_to(np.asarray(feedback.kp, dtype=float), (n,))
        kd = np.broadcast_to(np.asarray(feedback.kd, dtype=float), (n,))

    def rhs(now: float, state: np.ndarray) -> np.ndarray:
        q, dq = state[:n], state[n:]
        command = torque_at(now)
        if reference_at is not None and velocity_at is not None:
            command = command + kp * (reference_at(now) - q) + kd * (velocity_at(now) - dq)
        return np.concatenate([dq, dynamics.forward(q, dq, command)])

    initial = np.concatenate([np.asarray(q0, dtype=float), np.asarray(dq0, dtype=float)])
    if initial.shape != (2 * n,):
        raise DataError(f"q0 and dq0 must have {n} entries each, got {np.shape(q0)}, {np.shape(dq0)}")
    solution = scipy.integrate.solve_ivp(
        rhs,
        (t[0], t[-1]),
        initial,
        method=method,
        t_eval=t,
        rtol=rtol,
        atol=atol,
        max_step=float(np.min(np.diff(t))),
    )
    states = np.full((t.shape[0], 2 * n), np.nan)
    states[: solution.y.shape[1]] = solution.y.T
    return states[:, :n], states[:, n:], bool(solution.status == 0), str(solution.message)


def validate_by_simulation(
    dynamics: IdentifiedDynamics,
    time: np.ndarray,
    q_measured: np.ndarray,
    torques: np.ndarray,
    *,
    dq0: np.ndarray | None = None,
    feedback: PDFeedback | None = None,
    method: str = "RK45",
    rtol: float = 1e-7,
    atol: float = 1e-9,
) -> ValidationResult:
    """Simulate the identified model from the measured torques and compare positions ([DirectDrive2012] §5, Table 2).

    The simulation starts at the first measured position with velocity ``dq0``
    (default: second-order one-sided difference of the first three positions).
    """
    t = np.asarray(time, dtype=float)
    q = np.asarray(q_measured, dtype=float)
    n = dynamics.robot.n_joints
    if q.shape != (t.shape[0], n) or t.shape[0] < 3:
        raise DataError(f"q_measured must have shape ({t.shape[0]}, {n}) with at least 3 samples, got {q.shape}")
    if dq0 is None:
        dq0 = (-3.0 * q[0] + 4.0 * q[1] - q[2]) / (t[2] - t[0])
    q_sim, _, success, message = simulate(
        dynamics,
        t,
        torques,
        q[0],
        np.asarray(dq0, dtype=float),
        feedback=feedback,
        q_reference=q if feedback is not None else None,
        method=method,
        rtol=rtol,
        atol=atol,
    )
    error = q - q_sim
    finite = np.all(np.isfinite(error))
    return ValidationResult(
        time=t,
        q_simulated=q_sim,
        q_error=error,
        error_norm=np.linalg.norm(error, axis=0) if finite else np.full(n, np.inf),
        error_rms=np.sqrt(np.mean(error**2, axis=0)) if finite else np.full(n, np.inf),
        error_max=np.abs(error).max(axis=0) if finite else np.full(n, np.inf),
        success=success,
        message=message,
    )


__all__ = ["IdentifiedDynamics", "PDFeedback", "ValidationResult", "simulate", "validate_by_simulation"]
