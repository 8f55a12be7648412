"""A payload rigidly attached to a frame of the robot: its inertial parameters and joint torques.

A payload (a tool, a gripped part, a test load) is a rigid body fixed to a named
Pinocchio frame of a :class:`~dynamic_identification.core.mechanism.robot.RobotModel`, e.g.
``tool0``. It is described by

* its mass ``m`` in kg;
* its centre of mass ``c`` in m, in the frame;
* its inertia tensor ``I_c`` about the centre of mass, in kg·m², in the frame's axes
  (the tensor entries, as in a URDF ``<inertia ixx ixy ixz iyy iyz izz/>``).

Identification works with the 10 inertial parameters about the frame origin,
linear in the dynamics ([Swevers2002] eq. (3); [Briot2012] eq. (11)), in
Pinocchio's ``toDynamicParameters()`` order
``φ = [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]`` with
``I = I_c + m (‖c‖² 1 − c cᵀ)`` (parallel-axis theorem).

The payload adds to the joint torques ([Briot2012] eq. (6), the payload as a link
``m + 1`` fixed to the platform)

``τ_p = J(q)ᵀ Y_b(v, a − g) φ``,

where ``v``, ``a`` are the spatial velocity and acceleration of the frame in its own
coordinates, ``Y_b`` Pinocchio's body regressor (``pin.frameBodyRegressor`` after
``pin.rnea``, whose accelerations carry gravity) and ``J`` the frame Jacobian in
local coordinates (``pin.computeFrameJacobian(..., pin.LOCAL)``).

A physically consistent payload has ``m > 0`` and a positive-definite second moment
of mass about its centre of mass, ``Σ_c = ½ tr(I_c) 1 − I_c``, which is the same as a
positive-definite ``I_c`` whose principal moments satisfy the triangle inequalities
(each is smaller than the sum of the other two).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pinocchio as pin

from dynamic_identification.core.checks import motion_samples
from dynamic_identification.core.errors import IdentificationError, ModelError
from dynamic_identification.core.mechanism.robot import RobotModel

INERTIA_KEYS: tuple[str, ...] = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
"""Keys of the six independent inertia-tensor entries, URDF order."""

_INERTIA_INDEX: dict[str, tuple[int, int]] = {
    "ixx": (0, 0),
    "ixy": (0, 1),
    "ixz": (0, 2),
    "iyy": (1, 1),
    "iyz": (1, 2),
    "izz": (2, 2),
}

_SYMMETRY_TOLERANCE = 1e-9
"""Largest asymmetry of an inertia matrix, relative to its largest entry."""

_TRIANGLE_TOLERANCE = 1e-9
"""Slack of the triangle inequalities, relative to the trace (a flat plate meets them with equality)."""

_FRAMES_LISTED = 6
"""How many valid frame names an unknown-frame error lists."""


class PayloadError(IdentificationError):
    """A payload description is not physical (mass, inertia) or does not fit the robot."""


def inertia_matrix(value: np.ndarray | Sequence[float] | Sequence[Sequence[float]] | Mapping[str, float]) -> np.ndarray:
    """A ``(3, 3)`` inertia tensor from a matrix, six entries or a mapping, kg·m².

    Parameters
    ----------
    value
        A ``(3, 3)`` matrix; six numbers ``ixx, ixy, ixz, iyy, iyz, izz`` (URDF order,
        :data:`INERTIA_KEYS`); or a mapping with those six keys.

    Raises
    ------
    PayloadError
        If the shape or the keys are wrong, or an entry is not finite.
    """
    if isinstance(value, Mapping):
        missing = [key for key in INERTIA_KEYS if key not in value]
        unknown = sorted(set(value) - set(INERTIA_KEYS))
        if missing or unknown:
            raise PayloadError(f"inertia needs the keys {list(INERTIA_KEYS)}; missing {missing}, unknown {unknown}")
        entries = np.array([_real(value[key], f"inertia {key}") for key in INERTIA_KEYS])
    else:
        array = np.asarray(value, dtype=float)
        if array.shape == (3, 3):
            if not np.all(np.isfinite(array)):
                raise PayloadError(f"inertia must be finite, got {array.tolist()}")
            return array.copy()
        if array.shape != (6,):
            raise PayloadError(f"inertia must be a 3×3 matrix or 6 entries {list(INERTIA_KEYS)}, got {array.shape}")
        entries = array
    if not np.all(np.isfinite(entries)):
        raise PayloadError(f"inertia must be finite, got {entries.tolist()}")
    matrix = np.empty((3, 3))
    for entry, (row, column) in zip(entries, _INERTIA_INDEX.values(), strict=True):
        matrix[row, column] = matrix[column, row] = entry
    return matrix


def inertia_entries(matrix: np.ndarray) -> dict[str, float]:
    """The six entries of a symmetric ``(3, 3)`` tensor by :data:`INERTIA_KEYS` key."""
    return {key: float(matrix[index]) for key, index in _INERTIA_INDEX.items()}


def _real(value: Any, name: str) -> float:
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.integer | np.floating):
        raise PayloadError(f"{name} must be a number, got {value!r}")
    return float(value)


def check_inertia(inertia_kg_m2: np.ndarray, *, name: str = "inertia_kg_m2") -> np.ndarray:
    """Validate an inertia tensor about the centre of mass; returns its principal moments (ascending).

    Raises
    ------
    PayloadError
        If it is not symmetric, not positive definite, or its principal moments
        violate the triangle inequalities (one-line message with the moments).
    """
    matrix = np.asarray(inertia_kg_m2, dtype=float)
    scale = float(np.max(np.abs(matrix))) if matrix.size else 0.0
    if matrix.shape != (3, 3) or not np.all(np.isfinite(matrix)):
        raise PayloadError(f"{name} must be a finite 3×3 matrix, got {matrix.tolist()}")
    if np.max(np.abs(matrix - matrix.T)) > _SYMMETRY_TOLERANCE * max(scale, 1e-300):
        raise PayloadError(f"{name} must be symmetric, got {matrix.tolist()}")
    moments = np.linalg.eigvalsh(0.5 * (matrix + matrix.T))
    if moments[0] <= 0.0:
        raise PayloadError(
            f"{name} is not positive definite about the centre of mass: principal moments {moments.tolist()} kg·m²"
        )
    if moments[0] + moments[1] < moments[2] - _TRIANGLE_TOLERANCE * float(np.sum(moments)):
        raise PayloadError(
            f"{name} violates the triangle inequality: principal moments {moments.tolist()} kg·m²"
            f" ({moments[0]:.6g} + {moments[1]:.6g} < {moments[2]:.6g})"
        )
    return moments


def _store_description(description: PayloadStd | Payload, mass: float, com: np.ndarray, inertia: np.ndarray) -> None:
    """Set the validated ``mass_kg``, ``com_m`` and ``inertia_kg_m2`` of a frozen description, the arrays read-only.

    :class:`PayloadStd` and :class:`Payload` normalise their fields in ``__post_init__``
    (a float mass, a ``(3,)`` centre of mass, a ``(3, 3)`` inertia); being frozen, they set
    them through ``object.__setattr__``.
    """
    com.setflags(write=False)
    inertia.setflags(write=False)
    object.__setattr__(description, "mass_kg", mass)
    object.__setattr__(description, "com_m", com)
    object.__setattr__(description, "inertia_kg_m2", inertia)


@dataclass(frozen=True)
class PayloadStd:
    """Standard deviations of a payload's description, same units as :class:`Payload`.

    Attributes
    ----------
    mass_kg
        σ of the mass, kg.
    com_m
        σ of each centre-of-mass coordinate, m, shape ``(3,)``.
    inertia_kg_m2
        σ of each inertia-tensor entry about the centre of mass, kg·m², a symmetric
        ``(3, 3)`` array (entry ``[0, 1]`` is the σ of ``ixy``).
    """

    mass_kg: float
    com_m: np.ndarray
    inertia_kg_m2: np.ndarray

    def __post_init__(self) -> None:
        mass = _real(self.mass_kg, "std of mass_kg")
        com = np.array(self.com_m, dtype=float)
        inertia = inertia_matrix(self.inertia_kg_m2)
        if com.shape != (3,):
            raise PayloadError(f"std of com_m must have 3 entries, got shape {com.shape}")
        for name, values in (("mass_kg", np.array([mass])), ("com_m", com), ("inertia_kg_m2", inertia)):
            if not np.all(np.isfinite(values)) or np.any(values < 0.0):
                raise PayloadError(f"std of {name} must be finite and >= 0, got {values.tolist()}")
        _store_description(self, mass, com, inertia)


@dataclass(frozen=True)
class Payload:
    """A rigid payload fixed to a robot frame (see the module docstring).

    Attributes
    ----------
    frame
        Name of the Pinocchio frame it is attached to (e.g. ``"tool0"``).
    mass_kg
        Mass, kg, > 0.
    com_m
        Centre of mass in the frame, m, shape ``(3,)``.
    inertia_kg_m2
        Inertia tensor about the centre of mass in the frame's axes, kg·m², ``(3, 3)``,
        symmetric positive definite, principal moments meeting the triangle inequalities.
        The constructor also takes six entries ``ixx, ixy, ixz, iyy, iyz, izz`` or a
        mapping with those keys.
    std
        Standard deviations of the above, when the payload was identified.

    Raises
    ------
    PayloadError
        On a non-positive mass, a non-finite value, or a non-physical inertia.
    """

    frame: str
    mass_kg: float
    com_m: np.ndarray
    inertia_kg_m2: np.ndarray
    std: PayloadStd | None = field(default=None)

    def __post_init__(self) -> None:
        if not isinstance(self.frame, str) or not self.frame:
            raise PayloadError(f"payload frame must be a non-empty name, got {self.frame!r}")
        mass = _real(self.mass_kg, "payload mass_kg")
        if not (np.isfinite(mass) and mass > 0.0):
            raise PayloadError(f"payload mass_kg must be finite and > 0, got {mass!r}")
        com = np.array(self.com_m, dtype=float)
        if com.shape != (3,) or not np.all(np.isfinite(com)):
            raise PayloadError(f"payload com_m must be 3 finite coordinates (m), got {np.asarray(self.com_m).tolist()}")
        inertia = inertia_matrix(self.inertia_kg_m2)
        check_inertia(inertia, name="payload inertia_kg_m2")
        inertia = 0.5 * (inertia + inertia.T)
        if self.std is not None and not isinstance(self.std, PayloadStd):
            raise PayloadError(f"payload std must be a PayloadStd, got {type(self.std).__name__}")
        _store_description(self, mass, com, inertia)

    @classmethod
    def create(
        cls,
        frame: str,
        *,
        mass_kg: float,
        com_m: Sequence[float] | np.ndarray,
        inertia_kg_m2: np.ndarray | Sequence[float] | Sequence[Sequence[float]] | Mapping[str, float],
        std: PayloadStd | None = None,
    ) -> Payload:
        """Validated payload from plain numbers: ``com_m`` 3 coordinates, ``inertia_kg_m2`` as
        :func:`inertia_matrix` takes it (a 3×3 matrix, six entries or a mapping by :data:`INERTIA_KEYS`)."""
        return cls(
            frame=frame,
            mass_kg=mass_kg,
            com_m=np.asarray(com_m, dtype=float),
            inertia_kg_m2=inertia_matrix(inertia_kg_m2),
            std=std,
        )

    @classmethod
    def from_dynamic_parameters(
        cls, frame: str, parameters: np.ndarray | Sequence[float], *, std: PayloadStd | None = None
    ) -> Payload:
        """The payload of 10 inertial parameters about the frame origin (Pinocchio order).

        ``m = φ_0``, ``c = φ_{1:4} / m``, ``I_c = I − m (‖c‖² 1 − c cᵀ)``.

        Raises
        ------
        PayloadError
            If the parameters are not those of a physical body.
        """
        phi = np.asarray(parameters, dtype=float)
        if phi.shape != (10,) or not np.all(np.isfinite(phi)):
            raise PayloadError(f"dynamic parameters must be 10 finite numbers, got {phi.tolist()}")
        mass = float(phi[0])
        if mass <= 0.0:
            raise PayloadError(
                f"payload mass_kg must be finite and > 0, got {mass!r} (dynamic parameters {phi.tolist()})"
            )
        com = phi[1:4] / mass
        return cls(frame=frame, mass_kg=mass, com_m=com, inertia_kg_m2=com_inertia(phi), std=std)

    def dynamic_parameters(self) -> np.ndarray:
        """``φ`` (10,) about the frame origin in Pinocchio's ``toDynamicParameters()`` order."""
        return np.asarray(self.pinocchio_inertia().toDynamicParameters(), dtype=float).copy()

    def pinocchio_inertia(self) -> pin.Inertia:
        """The spatial inertia about the frame origin, in frame coordinates."""
        return pin.Inertia(self.mass_kg, np.array(self.com_m), np.array(self.inertia_kg_m2))

    def principal_moments(self) -> np.ndarray:
        """Principal moments of inertia about the centre of mass, ascending, kg·m²."""
        return np.linalg.eigvalsh(self.inertia_kg_m2)

    def inertia_entries(self) -> dict[str, float]:
        """``ixx, ixy, ixz, iyy, iyz, izz`` of :attr:`inertia_kg_m2`, kg·m²."""
        return inertia_entries(self.inertia_kg_m2)


def com_inertia(parameters: np.ndarray) -> np.ndarray:
    """Inertia tensor about the centre of mass of 10 dynamic parameters, ``(3, 3)``, kg·m².

    ``I_c = I − (‖h‖² 1 − h hᵀ) / m`` with ``h = m c`` (parallel-axis theorem); the
    parameters must have ``m > 0``.
    """
    phi = np.asarray(parameters, dtype=float)
    first = np.array([phi[4], phi[5], phi[7]])
    inertia = np.array([first, [phi[5], phi[6], phi[8]], [phi[7], phi[8], phi[9]]])
    h = phi[1:4]
    return inertia - (float(h @ h) * np.eye(3) - np.outer(h, h)) / phi[0]


def parameters_from_log_cholesky(theta: np.ndarray) -> np.ndarray:
    """Dynamic parameters ``φ`` (10,) of a log-Cholesky vector ``θ`` (10,): physical for every ``θ``.

    ``θ = [α, c_x, c_y, c_z, l_0 … l_5]`` with ``m = exp(α)``, ``c`` the centre of mass
    (m), ``Σ_c = L Lᵀ`` the second moment of mass about it,
    ``L = [[e^{l_0}, 0, 0], [l_1, e^{l_2}, 0], [l_3, l_4, e^{l_5}]]``, and
    ``I_c = tr(Σ_c) 1 − Σ_c``. Any real ``θ`` gives ``m > 0`` and a positive-definite
    ``Σ_c``, i.e. a positive-definite ``I_c`` meeting the triangle inequalities (the
    log-Cholesky parametrisation of physically consistent bodies). Analytic, so it
    accepts complex ``θ`` (complex-step derivatives).
    """
    return parameters_from_com_inertia(
        np.exp(theta[0]), theta[1:4], com_inertia_from_log_cholesky(theta), dtype=theta.dtype
    )


def com_inertia_from_log_cholesky(theta: np.ndarray) -> np.ndarray:
    """Inertia about the centre of mass ``I_c = tr(Σ_c) 1 − Σ_c`` of a log-Cholesky vector ``θ`` (10,), ``(3, 3)``.

    ``Σ_c = L Lᵀ`` with ``L = [[e^{l_0}, 0, 0], [l_1, e^{l_2}, 0], [l_3, l_4, e^{l_5}]]``
    from ``θ[4:10]`` (see :func:`parameters_from_log_cholesky`). Analytic, so it accepts
    complex ``θ`` (complex-step derivatives).
    """
    lower = np.array(
        [
            [np.exp(theta[4]), 0.0, 0.0],
            [theta[5], np.exp(theta[6]), 0.0],
            [theta[7], theta[8], np.exp(theta[9])],
        ],
        dtype=theta.dtype,
    )
    second = lower @ lower.T
    return np.trace(second) * np.eye(3) - second


def parameters_from_com_inertia(
    mass: float | complex, com: np.ndarray, inertia: np.ndarray, *, dtype: np.dtype[Any]
) -> np.ndarray:
    """Dynamic parameters ``φ`` (10,) of a body of ``mass``, centre of mass ``com`` and inertia ``inertia`` about it.

    ``φ = [m, m c, I]`` in Pinocchio's order with ``I = I_c + m (‖c‖² 1 − c cᵀ)`` about the
    frame origin (parallel-axis theorem). Analytic, so real or complex numbers (complex-step
    derivatives) alike; ``dtype`` is the result's.
    """
    about_origin = inertia + mass * ((com @ com) * np.eye(3) - np.outer(com, com))
    return np.array(
        [
            mass,
            mass * com[0],
            mass * com[1],
            mass * com[2],
            about_origin[0, 0],
            about_origin[0, 1],
            about_origin[1, 1],
            about_origin[0, 2],
            about_origin[1, 2],
            about_origin[2, 2],
        ],
        dtype=dtype,
    )


def log_cholesky_from_parameters(parameters: np.ndarray) -> np.ndarray:
    """The log-Cholesky vector ``θ`` of physical dynamic parameters (inverse of :func:`parameters_from_log_cholesky`).

    Raises
    ------
    PayloadError
        If ``φ`` is not a physical body with a positive-definite ``Σ_c`` (strict
        triangle inequalities).
    """
    phi = np.asarray(parameters, dtype=float)
    if phi.shape != (10,) or not np.all(np.isfinite(phi)) or not phi[0] > 0.0:
        raise PayloadError(f"dynamic parameters must be 10 finite numbers with a mass > 0, got {phi.tolist()}")
    inertia = com_inertia(phi)
    second = 0.5 * np.trace(inertia) * np.eye(3) - inertia
    try:
        lower = np.linalg.cholesky(0.5 * (second + second.T))
    except np.linalg.LinAlgError:
        moments = np.linalg.eigvalsh(0.5 * (inertia + inertia.T)).tolist()
        raise PayloadError(f"the body is on or beyond the physical bound (principal moments {moments} kg·m²)") from None
    return np.array(
        [
            np.log(phi[0]),
            *(phi[1:4] / phi[0]),
            np.log(lower[0, 0]),
            lower[1, 0],
            np.log(lower[1, 1]),
            lower[2, 0],
            lower[2, 1],
            np.log(lower[2, 2]),
        ]
    )


def frame_id(robot: RobotModel, frame: str) -> int:
    """Index of the Pinocchio frame ``frame`` of ``robot``.

    Raises
    ------
    ModelError
        If the model has no such frame; the message lists a few valid names
        (the last frames of the chain, where payloads are attached).
    """
    model = robot.model
    if isinstance(frame, str) and frame and model.existFrame(frame):
        return int(model.getFrameId(frame))
    names = [model.frames[i].name for i in range(model.nframes) if model.frames[i].name != "universe"]
    listed = ", ".join(names[-_FRAMES_LISTED:])
    raise ModelError(f"unknown frame {frame!r} in {robot.urdf_path}; its last frames are: {listed}")


def attach_payload(robot: RobotModel, payload: Payload) -> RobotModel:
    """A copy of ``robot`` whose frame-parent body carries the payload's inertia too.

    ``model.inertias[parent] += placement.act(inertia)``: the payload becomes part of
    the body of the frame's parent joint ([Swevers2002] §2: the load is part of the
    last link). Used as the ground truth of :func:`payload_regressor` and by
    simulations of the loaded robot.
    """
    index = frame_id(robot, payload.frame)
    model = robot.model.copy()
    frame = model.frames[index]
    parent = frame.parentJoint
    model.inertias[parent] = model.inertias[parent] + frame.placement.act(payload.pinocchio_inertia())
    return RobotModel(
        model=model, joint_names=robot.joint_names, urdf_path=robot.urdf_path, continuous=robot.continuous
    )


class PayloadDynamics:
    """Joint torques of a payload on a named frame, sample by sample, reusing one Pinocchio ``Data``.

    ``regressor(q, q̇, q̈)`` is ``Y_p = J(q)ᵀ Y_b`` of shape ``(n, 10)`` and
    ``torques(q, q̇, q̈, φ) = Y_p φ`` (module docstring; [Briot2012] eq. (6)), for one
    sample of joint positions (rad), velocities (rad/s) and accelerations (rad/s²)
    in model joint order. Cheap enough for a feedforward loop (a few µs per call).
    Not thread-safe: one instance per thread.

    Raises
    ------
    ModelError
        If ``frame`` is not a frame of ``robot``.
    """

    def __init__(self, robot: RobotModel, frame: str) -> None:
        self._robot = robot
        self._frame = frame
        self._frame_id = frame_id(robot, frame)
        self._data = robot.model.createData()

    @property
    def robot(self) -> RobotModel:
        return self._robot

    @property
    def frame(self) -> str:
        return self._frame

    def regressor(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """``Y_p`` of one sample, shape ``(n, 10)``: N·m per unit of each dynamic parameter."""
        model, data = self._robot.model, self._data
        configuration = self._robot.configuration(np.asarray(q, dtype=float))
        velocity = np.asarray(dq, dtype=float)
        acceleration = np.asarray(ddq, dtype=float)
        # rnea leaves the frame-parent velocity and the acceleration with gravity (a − g) in data.
        pin.rnea(model, data, configuration, velocity, acceleration)
        body = pin.frameBodyRegressor(model, data, self._frame_id)
        jacobian = pin.computeFrameJacobian(model, data, configuration, self._frame_id, pin.LOCAL)
        return np.asarray(jacobian.T @ body)

    def torques(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, parameters: np.ndarray) -> np.ndarray:
        """Joint torques ``Y_p φ`` of one sample, N·m, shape ``(n,)``."""
        return self.regressor(q, dq, ddq) @ np.asarray(parameters, dtype=float)


def payload_regressor(robot: RobotModel, frame: str, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
    """Payload observation matrix ``Y_p(q, q̇, q̈)``, shape ``(N, n, 10)``.

    Joint torques of a payload with dynamic parameters ``φ`` on ``frame`` are
    ``payload_regressor(...) @ φ`` ([Briot2012] eq. (6), (11): the columns ``φ_kL``,
    ``φ_uL``; [Swevers2002] eq. (1)-(3) for the load).

    Raises
    ------
    ModelError
        Unknown frame.
    DataError
        Motion of the wrong shape or not finite.
    """
    dynamics = PayloadDynamics(robot, frame)
    q, dq, ddq = motion_samples(q, dq, ddq, robot.n_joints)
    out = np.empty((q.shape[0], robot.n_joints, 10))
    for k in range(q.shape[0]):
        out[k] = dynamics.regressor(q[k], dq[k], ddq[k])
    return out


def payload_torques(robot: RobotModel, payload: Payload, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
    """Joint torques of ``payload`` along a motion, N·m, shape ``(N, n)``."""
    return payload_regressor(robot, payload.frame, q, dq, ddq) @ payload.dynamic_parameters()
