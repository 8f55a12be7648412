"""Robot model: URDF → Pinocchio, joint selection, drive chain and standard parameters.

The identified joints are chosen by name (normally the joints present in a
recording); every other joint of the URDF is locked with
``pinocchio.buildReducedModel`` so that its bodies are merged into their parents,
as for the Panda's finger joints.

Drive chain ([Gautier2013] eq. (7), (25)-(26); [Swevers2002] eq. (9)-(11))
-----------------------------------------------------------------
Motor ``m`` turns at ``q̇r = G q̇`` with the transmission matrix
``G = diag(gear_ratios) · coupling``; ``coupling`` is dimensionless with ones on its
diagonal (identity for independent axes; the TX-40 wrist has ``[[1, 0], [1, 1]]``).
The electromagnetic torque of motor ``m`` is ``drive_gains[m] · current[m]`` and, by
power conservation, the joint torques are ``τ = Gᵀ τ_r``.

Drive-chain standard parameters are defined per motor and expressed on the joint
side ([Gautier2013] eq. (3), (26)): ``Ia_m = gear_ratios[m]² · Ja_m`` (rotor and gear
inertia, kg·m²), viscous ``Fv_m`` (N·m·s/rad), Coulomb ``Fc_m`` (N·m) and offset
``off_m`` (N·m) acting on the joint-side motor velocity ``v_m = (coupling q̇)_m``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pinocchio as pin

from dynamic_identification.core.errors import ModelError, brief
from dynamic_identification.core.settings_schema import setting_field

INERTIAL_PARAMETER_NAMES: tuple[str, ...] = ("M", "MX", "MY", "MZ", "XX", "XY", "YY", "XZ", "YZ", "ZZ")
"""Khalil-Dombre names of Pinocchio's ``toDynamicParameters()`` entries, in that order."""

DRIVE_PARAMETER_NAMES: tuple[str, ...] = ("Ia", "Fv", "Fc", "off")
"""Drive-chain standard parameters per joint, in this order when enabled."""


@dataclass(frozen=True)
class DriveTerms:
    """Which drive-chain standard parameters the model contains ([Gautier2013] eq. (3))."""

    rotor_inertia: bool = setting_field("drive_terms.rotor_inertia")
    viscous_friction: bool = setting_field("drive_terms.viscous_friction")
    coulomb_friction: bool = setting_field("drive_terms.coulomb_friction")
    offset: bool = setting_field("drive_terms.offset")

    @property
    def names(self) -> tuple[str, ...]:
        """Enabled drive-chain parameter names, in :data:`DRIVE_PARAMETER_NAMES` order."""
        flags = (self.rotor_inertia, self.viscous_friction, self.coulomb_friction, self.offset)
        return tuple(name for name, on in zip(DRIVE_PARAMETER_NAMES, flags, strict=True) if on)

    @property
    def per_joint(self) -> int:
        """Number of standard parameters per joint: 10 inertial plus the enabled terms."""
        return len(INERTIAL_PARAMETER_NAMES) + len(self.names)


def standard_parameter_names(n_joints: int, terms: DriveTerms) -> tuple[str, ...]:
    """Names of the standard parameters, e.g. ``("M1", "MX1", …, "ZZ1", "Ia1", …)``.

    Joint indices are 1-based in the robot's identified-joint order.
    """
    per_joint = INERTIAL_PARAMETER_NAMES + terms.names
    return tuple(f"{name}{j + 1}" for j in range(n_joints) for name in per_joint)


def _numbers(value: object, name: str) -> np.ndarray:
    """``value`` as a float array; a ragged or non-numeric value raises ``ModelError`` naming ``name``."""
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ModelError(f"{name} must be numbers in a regular array, got {brief(value)}") from None


def _as_vector(value: Sequence[float] | np.ndarray, n: int, name: str) -> np.ndarray:
    array = _numbers(value, name)
    if array.shape != (n,):
        raise ModelError(f"{name} must have {n} entries (one per joint), got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ModelError(f"{name} must be finite, got {array.tolist()}")
    return array


@dataclass(frozen=True)
class DriveChain:
    """Current → joint-torque conversion and motor-side kinematics.

    Attributes
    ----------
    gear_ratios
        ``N_m``, motor radians per joint radian, shape ``(n,)``.
    drive_gains
        Motor torque constants ``k_m`` in N·m/A (motor side), shape ``(n,)``.
    coupling
        Dimensionless coupling ``C`` with ``G = diag(N) C``, shape ``(n, n)``.
    """

    gear_ratios: np.ndarray
    drive_gains: np.ndarray
    coupling: np.ndarray

    @classmethod
    def create(
        cls,
        n_joints: int,
        *,
        gear_ratios: Sequence[float] | np.ndarray | None = None,
        drive_gains: Sequence[float] | np.ndarray | None = None,
        coupling: Sequence[Sequence[float]] | np.ndarray | None = None,
    ) -> DriveChain:
        """Validated drive chain; omitted entries default to a direct drive (ones, identity)."""
        ratios = _as_vector(np.ones(n_joints) if gear_ratios is None else gear_ratios, n_joints, "gear_ratios")
        gains = _as_vector(np.ones(n_joints) if drive_gains is None else drive_gains, n_joints, "drive_gains")
        if np.any(ratios == 0.0):
            raise ModelError(f"gear_ratios must be non-zero, got {ratios.tolist()}")
        if np.any(gains == 0.0):
            raise ModelError(f"drive_gains must be non-zero, got {gains.tolist()}")
        matrix = np.eye(n_joints) if coupling is None else _numbers(coupling, f"coupling ({n_joints}×{n_joints})")
        if matrix.size == n_joints * n_joints and matrix.ndim == 1:
            matrix = matrix.reshape(n_joints, n_joints)
        if matrix.shape != (n_joints, n_joints):
            raise ModelError(f"coupling must be {n_joints}×{n_joints}, got shape {matrix.shape}")
        if not np.all(np.isfinite(matrix)) or abs(np.linalg.det(matrix)) < 1e-12:
            raise ModelError(f"coupling must be finite and invertible, got {brief(matrix.tolist())}")
        for array in (ratios, gains, matrix):
            array.setflags(write=False)
        return cls(gear_ratios=ratios, drive_gains=gains, coupling=matrix)

    @property
    def n_joints(self) -> int:
        return int(self.gear_ratios.shape[0])

    @property
    def uncoupled(self) -> bool:
        """Whether each motor drives its own joint alone (``C`` is the identity)."""
        return bool(np.array_equal(self.coupling, np.eye(self.n_joints)))

    @property
    def transmission(self) -> np.ndarray:
        """``G = diag(N) C``: motor velocities are ``G q̇`` ([Gautier2013] eq. (25))."""
        return self.gear_ratios[:, None] * self.coupling

    def joint_torques(self, currents_a: np.ndarray) -> np.ndarray:
        """Joint torques in N·m from motor currents in A, ``τ = Gᵀ (k ⊙ i)``, rows are samples."""
        currents = np.asarray(currents_a, dtype=float)
        return (currents * self.drive_gains) @ self.transmission

    def motor_currents(self, joint_torques_nm: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`joint_torques`: the currents that produce the given joint torques."""
        torques = np.asarray(joint_torques_nm, dtype=float)
        motor_torques = np.linalg.solve(self.transmission.T, torques.T).T
        return motor_torques / self.drive_gains


@dataclass(frozen=True)
class DriveParameters:
    """Values of the drive-chain standard parameters per motor (joint side).

    ``rotor_inertia`` Ia in kg·m², ``viscous`` Fv in N·m·s/rad, ``coulomb`` Fc in
    N·m, ``offset`` in N·m; each of shape ``(n,)``.
    """

    rotor_inertia: np.ndarray
    viscous: np.ndarray
    coulomb: np.ndarray
    offset: np.ndarray

    @classmethod
    def create(
        cls,
        n_joints: int,
        *,
        rotor_inertia: Sequence[float] | np.ndarray | None = None,
        viscous: Sequence[float] | np.ndarray | None = None,
        coulomb: Sequence[float] | np.ndarray | None = None,
        offset: Sequence[float] | np.ndarray | None = None,
    ) -> DriveParameters:
        """Validated values; omitted terms are zero."""
        zeros = np.zeros(n_joints)
        return cls(
            rotor_inertia=_as_vector(zeros if rotor_inertia is None else rotor_inertia, n_joints, "rotor_inertia"),
            viscous=_as_vector(zeros if viscous is None else viscous, n_joints, "viscous"),
            coulomb=_as_vector(zeros if coulomb is None else coulomb, n_joints, "coulomb"),
            offset=_as_vector(zeros if offset is None else offset, n_joints, "offset"),
        )

    def values(self, terms: DriveTerms) -> np.ndarray:
        """Per-joint values of the enabled terms, shape ``(n, len(terms.names))``."""
        columns = {"Ia": self.rotor_inertia, "Fv": self.viscous, "Fc": self.coulomb, "off": self.offset}
        return (
            np.stack([columns[name] for name in terms.names], axis=1)
            if terms.names
            else np.zeros((self.rotor_inertia.shape[0], 0))
        )


@dataclass(frozen=True)
class RobotModel:
    """A Pinocchio model reduced to the identified joints, all of one degree of freedom.

    Attributes
    ----------
    model
        The reduced ``pinocchio.Model``; its joint ``j + 1`` is ``joint_names[j]``.
    joint_names
        Identified joints in kinematic (model) order.
    urdf_path
        The URDF the model was built from.
    continuous
        For each joint, whether it is a continuous (unbounded, ``nq = 2``) joint.
    """

    model: pin.Model
    joint_names: tuple[str, ...]
    urdf_path: str
    continuous: tuple[bool, ...] = field(default=())

    @property
    def n_joints(self) -> int:
        return len(self.joint_names)

    @property
    def lower_position_limits(self) -> np.ndarray:
        """Lower joint limits in rad (or m); ``-inf`` for continuous joints."""
        return self._position_limits[0].copy()

    @property
    def upper_position_limits(self) -> np.ndarray:
        """Upper joint limits in rad (or m); ``+inf`` for continuous joints."""
        return self._position_limits[1].copy()

    @cached_property
    def _position_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """The lower and upper limits, read from the model once: the nodes check every joint state against them, and
        reading them joint by joint from Pinocchio is slow beside that check."""
        return (
            self._per_joint(self.model.lowerPositionLimit, -np.inf),
            self._per_joint(self.model.upperPositionLimit, np.inf),
        )

    def sampling_position_range(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper positions to draw or centre motion in, rad (or m): the joint limits, and ``±π`` for a
        continuous joint (one turn covers every configuration it has)."""
        lower = np.where(np.isfinite(self.lower_position_limits), self.lower_position_limits, -np.pi)
        upper = np.where(np.isfinite(self.upper_position_limits), self.upper_position_limits, np.pi)
        return lower, upper

    @property
    def velocity_limits(self) -> np.ndarray:
        """Velocity limits in rad/s from the URDF."""
        return np.asarray(self.model.velocityLimit, dtype=float).copy()

    @property
    def effort_limits(self) -> np.ndarray:
        """Effort limits in N·m from the URDF."""
        return np.asarray(self.model.effortLimit, dtype=float).copy()

    def _per_joint(self, limits: np.ndarray, unbounded: float) -> np.ndarray:
        values = np.empty(self.n_joints)
        for j in range(self.n_joints):
            index = self.model.joints[j + 1].idx_q
            values[j] = unbounded if self.continuous[j] else float(limits[index])
        return values

    def configurations(self, q: np.ndarray) -> np.ndarray:
        """Pinocchio configuration vectors for joint positions ``q`` of shape ``(N, n)`` (:meth:`configuration`)."""
        return self.configuration(np.atleast_2d(np.asarray(q, dtype=float)))

    def configuration(self, q: np.ndarray) -> np.ndarray:
        """Pinocchio's configuration(s) of joint positions ``q`` of shape ``(..., n)`` (one sample: ``(n,)``).

        Continuous joints take ``(cos q, sin q)``; other joints take ``q`` itself, and without a continuous
        joint the configuration is ``q`` itself.
        """
        plain, plain_index, continuous, cos_index = self._configuration_layout
        if not continuous.size:
            return q
        configs = np.empty(q.shape[:-1] + (self.model.nq,))
        configs[..., plain_index] = q[..., plain]
        angles = q[..., continuous]
        configs[..., cos_index] = np.cos(angles)
        configs[..., cos_index + 1] = np.sin(angles)
        return configs

    @cached_property
    def _configuration_layout(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Joints that are not continuous and their ``idx_q``; continuous joints and the ``idx_q`` of their cosine."""
        index = np.array([self.model.joints[j + 1].idx_q for j in range(self.n_joints)], dtype=int)
        continuous = np.asarray(self.continuous, dtype=bool)
        return np.flatnonzero(~continuous), index[~continuous], np.flatnonzero(continuous), index[continuous]

    def unwrap_positions(self, q: np.ndarray) -> np.ndarray:
        """Positions with the ±π jumps of continuous joints removed, so they can be filtered and differentiated."""
        positions = np.array(q, dtype=float)
        for j, is_continuous in enumerate(self.continuous):
            if is_continuous:
                positions[:, j] = np.unwrap(positions[:, j])
        return positions

    def standard_inertial_parameters(self) -> np.ndarray:
        """The URDF's inertial parameters, shape ``(n, 10)``, Pinocchio order."""
        return np.stack([self.model.inertias[j + 1].toDynamicParameters() for j in range(self.n_joints)])

    def order_of(self, names: Sequence[str]) -> np.ndarray:
        """Column indices that put data with joints ``names`` into model order.

        Raises :class:`ModelError` naming any identified joint missing from ``names``.
        Extra names are ignored.
        """
        position = {name: i for i, name in enumerate(names)}
        missing = [name for name in self.joint_names if name not in position]
        if missing:
            raise ModelError(f"joints {missing} of the robot model are missing from the data (has {list(names)})")
        return np.array([position[name] for name in self.joint_names], dtype=int)


def limit_bounds(limits: Sequence[float] | np.ndarray) -> np.ndarray:
    """Per-joint limits (effort, velocity, acceleration) as bounds: ``∞`` where a limit is not positive and
    finite, which is how a URDF (``effort="0"``) or a configuration says the limit is unknown."""
    array = np.asarray(limits, dtype=float)
    return np.where(np.isfinite(array) & (array > 0.0), array, np.inf)


def load_robot(
    urdf_path: str | os.PathLike[str],
    joint_names: Sequence[str] | None = None,
    *,
    locked_positions: Mapping[str, float] | None = None,
) -> RobotModel:
    """Build the identification model of a URDF.

    Parameters
    ----------
    urdf_path
        Path to the URDF file.
    joint_names
        Joints to identify, in any order (the model keeps kinematic order); every
        other moving joint is locked. ``None`` keeps all one-degree-of-freedom joints.
    locked_positions
        Positions (rad or m) at which locked joints are held; default 0 (or the
        middle of the joint range when 0 lies outside it).

    Raises
    ------
    ModelError
        If the file cannot be parsed, a name is unknown, or a kept joint is not a
        one-degree-of-freedom joint.
    """
    path = Path(urdf_path)
    if not path.is_file():
        raise ModelError(f"URDF file not found: {path}")
    try:
        root = ElementTree.parse(path).getroot()
    except ElementTree.ParseError as error:
        raise ModelError(f"{path} is not a URDF: not well-formed XML ({error})") from error
    if root.tag != "robot":
        raise ModelError(f"{path} is not a URDF: its root element is <{root.tag}>, not <robot>")
    try:
        full = pin.buildModelFromUrdf(str(path))
    except (RuntimeError, ValueError) as error:
        raise ModelError(f"cannot parse URDF {path}: {error}") from error
    moving = [full.names[i] for i in range(1, full.njoints)]
    if joint_names is None:
        wanted = [name for name in moving if full.joints[full.getJointId(name)].nv == 1]
    else:
        unknown = [name for name in joint_names if name not in moving]
        if unknown:
            raise ModelError(f"unknown joints {unknown} in {path.name}; its moving joints are {moving}")
        if len(set(joint_names)) != len(joint_names):
            raise ModelError(f"joint names repeat: {list(joint_names)}")
        wanted = list(joint_names)
    if not wanted:
        raise ModelError(f"{path.name} has no joint to identify")
    locked = [name for name in moving if name not in wanted]
    reference = _locked_reference(full, locked, locked_positions or {})
    model = pin.buildReducedModel(full, [full.getJointId(name) for name in locked], reference) if locked else full
    names = tuple(model.names[i] for i in range(1, model.njoints))
    continuous = []
    for i in range(1, model.njoints):
        joint = model.joints[i]
        if joint.nv != 1:
            raise ModelError(
                f"joint {model.names[i]} has {joint.nv} degrees of freedom; only 1-DoF joints are identified"
            )
        continuous.append(joint.nq == 2)
    return RobotModel(model=model, joint_names=names, urdf_path=str(path.resolve()), continuous=tuple(continuous))


def _locked_reference(full: pin.Model, locked: Sequence[str], positions: Mapping[str, float]) -> np.ndarray:
    unknown = [name for name in positions if name not in locked]
    if unknown:
        raise ModelError(f"locked_positions names joints that are not locked: {unknown}")
    reference = pin.neutral(full)
    for name in locked:
        joint = full.joints[full.getJointId(name)]
        if joint.nq != 1:
            continue
        lower, upper = full.lowerPositionLimit[joint.idx_q], full.upperPositionLimit[joint.idx_q]
        default = 0.0 if lower <= 0.0 <= upper else 0.5 * (lower + upper)
        reference[joint.idx_q] = float(positions.get(name, default))
    return reference


def standard_parameters(robot: RobotModel, terms: DriveTerms, drive: DriveParameters | None = None) -> np.ndarray:
    """Full standard-parameter vector: URDF inertial parameters and drive-chain values.

    Ordered as :func:`standard_parameter_names`; shape ``(n * terms.per_joint,)``.
    """
    drive = drive if drive is not None else DriveParameters.create(robot.n_joints)
    inertial = robot.standard_inertial_parameters()
    return np.concatenate([inertial, drive.values(terms)], axis=1).ravel()
