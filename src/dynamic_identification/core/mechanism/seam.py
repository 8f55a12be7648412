"""The mechanism seam: what the identification pipeline needs of a robot, declared once.

A robot is driven through its *controlled* (actuated) joints. Its dynamics are written on
a kinematic tree: the serial chain itself, or the tree a closed-loop robot becomes when its
loops are virtually opened ([Briot2012] §2). A recorded motion of the controlled joints
completes to the tree's motion ``(q_t, q̇_t, q̈_t)`` and the map ``J_t`` (``q̇_t = J_t q̇_a``),
and the controlled joints' torques are the tree's torques projected by it,
``τ_a = J_tᵀ τ_tree`` ([Briot2012] eq. (6)).

A serial robot is the mechanism without closures: every tree joint is controlled and
``J_t = I`` (:class:`SerialMechanism`; its :class:`TreeMotion` carries no ``projection``,
the identity being implied). A closed-loop robot is
:class:`~dynamic_identification.core.mechanism.closed_loop.ClosedLoopModel`. Observations, solve,
reduction, consistency, prediction, report, URDF export, excitation, simulation and the
feedforward take a :class:`Mechanism`, not a type switch.

Standard parameters of a mechanism: per tree joint ``j`` (1-based, kinematic order) the 10
inertial parameters of its link (``M{j}``, ``MX{j}``, … ``ZZ{j}``), then, for a controlled
joint, its drive-chain terms (``Ia{j}``, ``Fv{j}``, ``Fc{j}``, ``off{j}``; [Gautier2013]
eq. (3)). For a serial robot this is
:func:`~dynamic_identification.core.mechanism.robot.standard_parameter_names`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol, cast, runtime_checkable

import numpy as np
import pinocchio as pin

from dynamic_identification.core.checks import motion_samples
from dynamic_identification.core.errors import DataError, ModelError
from dynamic_identification.core.mechanism import robot as serial_model
from dynamic_identification.core.mechanism.robot import DriveChain, DriveParameters, DriveTerms, RobotModel
from dynamic_identification.core.regressors import idim as regressors
from dynamic_identification.core.regressors.idim import BaseParameters
from dynamic_identification.core.settings_schema import CLOSURE_FIELDS, CLOSURE_TYPES

ClosureType = Literal["point", "planar", "6d"]
"""Accepted values of :attr:`LoopClosure.type` (:data:`~dynamic_identification.core.settings_schema.CLOSURE_TYPES`)."""

_CLOSURE_ROWS = {"point": 3, "planar": 3, "6d": 6}
_CLOSURE_KEYS = CLOSURE_FIELDS


@dataclass(frozen=True)
class LoopClosure:
    """Two frames of the opened tree that coincide when the loop is closed.

    Attributes
    ----------
    frame_a, frame_b
        Frame names of the tree's Pinocchio model (URDF links, joints or fixed joints).
    type
        ``"point"`` (origins coincide, 3 equations), ``"planar"`` (in-plane position
        and rotation about frame_a's z axis, 3 equations) or ``"6d"`` (placements
        coincide, 6 equations); see the module documentation.
    """

    frame_a: str
    frame_b: str
    type: ClosureType

    def __post_init__(self) -> None:
        for name in ("frame_a", "frame_b"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ModelError(f"{name} must be a non-empty frame name, got {value!r}")
        if self.type not in CLOSURE_TYPES:
            raise ModelError(f"type must be one of {list(CLOSURE_TYPES)}, got {self.type!r}")
        if self.frame_a == self.frame_b:
            raise ModelError(f"frame_a and frame_b must differ, got {self.frame_a!r} twice")

    @property
    def rows(self) -> int:
        """Number of constraint equations: 3 (point, planar) or 6 (6d)."""
        return _CLOSURE_ROWS[self.type]

    @classmethod
    def from_dict(cls, entry: object, *, where: str = "loop closure") -> LoopClosure:
        """A closure from one configuration entry ``{frame_a, frame_b, type}``.

        Raises
        ------
        ModelError
            Naming ``where`` (e.g. ``robot.loop_closures[0]``) and the bad key or value.
        """
        if not isinstance(entry, Mapping):
            raise ModelError(f"{where} must be a mapping with keys {list(_CLOSURE_KEYS)}, got {entry!r}")
        keys = {str(key) for key in entry}
        missing = [key for key in _CLOSURE_KEYS if key not in keys]
        unknown = sorted(keys - set(_CLOSURE_KEYS))
        if missing or unknown:
            raise ModelError(
                f"{where} must have exactly the keys {list(_CLOSURE_KEYS)}: missing {missing}, unknown {unknown}"
            )
        kind = entry["type"]
        if kind not in CLOSURE_TYPES:
            raise ModelError(f"{where}.type must be one of {list(CLOSURE_TYPES)}, got {kind!r}")
        try:
            return cls(
                frame_a=cast(str, entry["frame_a"]), frame_b=cast(str, entry["frame_b"]), type=cast(ClosureType, kind)
            )
        except ModelError as error:
            raise ModelError(f"{where}: {error}") from error


WALK_STEP_RAD = 0.05
"""Largest change of a controlled joint's position (rad or m) between two solves of the loop closures when a
mechanism is moved from one configuration to a far one (:meth:`Mechanism.follow`): small enough for Newton's
method to stay in the assembly mode it starts from."""


@dataclass(frozen=True)
class TreeMotion:
    """Motion of a mechanism's tree joints, one row per sample, consistent with its closures.

    Attributes
    ----------
    q, dq, ddq
        Tree joint positions (rad or m), velocities and accelerations, shape ``(N, n_t)``,
        satisfying the loop closures and their first and second time derivatives
        ([Briot2012] eq. (2)-(4)).
    projection
        ``J_t`` per sample, shape ``(N, n_t, n_a)``: ``q̇_t = J_t q̇_a`` (eq. (3)); ``None``
        for a mechanism without closures, where ``J_t`` is the identity.
    passive_condition
        ``σ_max / σ_min`` of the passive block of ``A_t`` per sample, shape ``(N,)``: the
        distance to a parallel (type 2) singularity, where it is infinite; ``None`` when
        not computed or without closures.
    """

    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    projection: np.ndarray | None = None
    passive_condition: np.ndarray | None = None

    def rows(self, rows: slice | np.ndarray) -> TreeMotion:
        """The motion of the samples ``rows`` (a slice or indices)."""
        return replace(
            self,
            q=self.q[rows],
            dq=self.dq[rows],
            ddq=self.ddq[rows],
            projection=None if self.projection is None else self.projection[rows],
            passive_condition=None if self.passive_condition is None else self.passive_condition[rows],
        )

    def tree_rates(self, controlled_rates: np.ndarray) -> np.ndarray:
        """``J_t ẋ_a`` per sample ``(N, n_t)`` of the controlled joints' rates ``(N, n_a)`` (velocities, or
        accelerations at rest, [Briot2012] eq. (3)): the rates themselves without closures."""
        if self.projection is None:
            return controlled_rates
        return np.einsum("kij,kj->ki", self.projection, controlled_rates)

    @property
    def jacobians(self) -> np.ndarray:
        """``J_t`` per sample ``(N, n_t, n_a)``: :attr:`projection`, or a read-only broadcast identity without
        closures (no memory per sample)."""
        if self.projection is not None:
            return self.projection
        samples, n = np.shape(self.q)
        return np.broadcast_to(np.eye(n), (samples, n, n))


@runtime_checkable
class Mechanism(Protocol):
    """What the pipeline needs of a robot: its tree, closures and controlled joints, how a motion of the controlled
    joints completes to the tree's, its standard parameters and its IDIM in them."""

    @property
    def robot(self) -> RobotModel:
        """The kinematic tree (the serial chain, or the opened closed-loop mechanism)."""
        ...

    @property
    def closures(self) -> tuple[LoopClosure, ...]:
        """The loop closures, in the order their equations are stacked; empty for a serial robot."""
        ...

    @property
    def actuated(self) -> np.ndarray:
        """Indices of the controlled joints among the tree joints, increasing, shape ``(n_a,)``."""
        ...

    @property
    def passive(self) -> np.ndarray:
        """Indices of the passive (unmotorised) tree joints, increasing, shape ``(n_t − n_a,)``."""
        ...

    @property
    def n_tree(self) -> int:
        """Number of tree joints ``n_t``."""
        ...

    @property
    def n_actuated(self) -> int:
        """Number of controlled joints ``n_a``: the rows of the IDIM per sample."""
        ...

    @property
    def joint_names(self) -> tuple[str, ...]:
        """Tree joints, kinematic order."""
        ...

    @property
    def reference_configuration(self) -> np.ndarray:
        """A tree configuration ``(n_t,)`` that closes the loops, in the assembly mode the robot is used in: where
        :meth:`complete_motion` starts without a guess, and the reference of the distance to singularities
        (:mod:`~dynamic_identification.core.excitation.constraints`)."""
        ...

    @property
    def closure_joints(self) -> tuple[tuple[int, int], ...]:
        """Per closure, the Pinocchio joint indices of the two bodies its cut joint joins (their geometry meets
        there by design, so a self-collision check does not pair them); empty for a serial robot."""
        ...

    @property
    def actuated_joint_names(self) -> tuple[str, ...]:
        """Controlled joints, kinematic order: the joints a recording holds and the drive chain drives."""
        ...

    @property
    def passive_joint_names(self) -> tuple[str, ...]:
        """Passive joints, kinematic order; empty for a serial robot."""
        ...

    def passive_correction(self, q: np.ndarray) -> np.ndarray:
        """How far recorded passive positions of tree positions ``q`` ``(N, n_t)`` are from closing the loops,
        ``(N, n_t − n_a)`` (rad or m; [Briot2012] eq. (2)): the check of a recording that holds every tree joint."""
        ...

    def complete_motion(
        self,
        q_actuated: np.ndarray,
        dq_actuated: np.ndarray,
        ddq_actuated: np.ndarray,
        *,
        q_guess: np.ndarray | None = None,
    ) -> TreeMotion:
        """The tree's motion of a motion of the controlled joints ``(N, n_a)`` ([Briot2012] eq. (2)-(4))."""
        ...

    def follow(self, q_actuated: np.ndarray, *, start: np.ndarray) -> np.ndarray:
        """The tree configuration ``(n_t,)`` at the controlled joints' pose ``q_actuated`` ``(n_a,)`` in the assembly
        mode of the tree configuration ``start``: the loops are followed along the straight path of the controlled
        joints from ``start``'s, in steps of at most :data:`WALK_STEP_RAD` ([Briot2012] eq. (2)). Raises a
        :class:`~dynamic_identification.core.mechanism.closed_loop.LoopClosureError` (its ``sample``: the step)
        where they cannot be; without closures the pose itself."""
        ...

    def standard_parameter_names(self, terms: DriveTerms) -> tuple[str, ...]:
        """Names of the standard parameters (module docstring)."""
        ...

    def standard_parameters(self, terms: DriveTerms, drive: DriveParameters | None = None) -> np.ndarray:
        """The URDF's inertial parameters and the controlled joints' drive terms (zero when ``drive`` is omitted)."""
        ...

    def observation_matrix(
        self, drive_chain: DriveChain, terms: DriveTerms, motion: TreeMotion, *, data: pin.Data | None = None
    ) -> np.ndarray:
        """IDIM in the standard parameters at a completed ``motion``, shape ``(N, n_a, p)``: ``J_tᵀ`` times the
        tree's inertial regressor plus the controlled joints' drive-chain columns ([Briot2012] eq. (6))."""
        ...

    def base_parameters(
        self, drive_chain: DriveChain, terms: DriveTerms, *, samples: int = 200, seed: int = 0, tolerance: float = 1e-8
    ) -> BaseParameters:
        """Numerical base parameters of the IDIM ([Gautier2013] ref. [11]; [Briot2012] eq. (7))."""
        ...


@dataclass(frozen=True, eq=False)
class SerialMechanism:
    """A serial robot as a :class:`Mechanism`: no closures, every joint controlled, ``J_t = I``."""

    robot: RobotModel

    @property
    def closures(self) -> tuple[LoopClosure, ...]:
        return ()

    @property
    def actuated(self) -> np.ndarray:
        return np.arange(self.robot.n_joints)

    @property
    def passive(self) -> np.ndarray:
        return np.arange(0)

    @property
    def n_tree(self) -> int:
        return self.robot.n_joints

    @property
    def n_actuated(self) -> int:
        return self.robot.n_joints

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.robot.joint_names

    @property
    def actuated_joint_names(self) -> tuple[str, ...]:
        return self.robot.joint_names

    @property
    def reference_configuration(self) -> np.ndarray:
        """The zero configuration: without closures any configuration is one."""
        return np.zeros(self.robot.n_joints)

    @property
    def closure_joints(self) -> tuple[tuple[int, int], ...]:
        return ()

    @property
    def passive_joint_names(self) -> tuple[str, ...]:
        return ()

    def passive_correction(self, q: np.ndarray) -> np.ndarray:
        """No passive joint: nothing to correct, ``(N, 0)``."""
        return np.zeros((np.shape(q)[0], 0))

    def complete_motion(
        self,
        q_actuated: np.ndarray,
        dq_actuated: np.ndarray,
        ddq_actuated: np.ndarray,
        *,
        q_guess: np.ndarray | None = None,
    ) -> TreeMotion:
        """The motion itself: every joint is controlled (``q_guess`` chooses no assembly mode here)."""
        q, dq, ddq = motion_samples(q_actuated, dq_actuated, ddq_actuated, self.robot.n_joints)
        return TreeMotion(q=q, dq=dq, ddq=ddq)

    def follow(self, q_actuated: np.ndarray, *, start: np.ndarray) -> np.ndarray:
        """``q_actuated`` itself: without closures every pose is reached directly."""
        return np.array(q_actuated, dtype=float)

    def standard_parameter_names(self, terms: DriveTerms) -> tuple[str, ...]:
        return serial_model.standard_parameter_names(self.robot.n_joints, terms)

    def standard_parameters(self, terms: DriveTerms, drive: DriveParameters | None = None) -> np.ndarray:
        return serial_model.standard_parameters(self.robot, terms, drive)

    def observation_matrix(
        self, drive_chain: DriveChain, terms: DriveTerms, motion: TreeMotion, *, data: pin.Data | None = None
    ) -> np.ndarray:
        return regressors.observation_matrix(self.robot, drive_chain, terms, motion.q, motion.dq, motion.ddq, data=data)

    def base_parameters(
        self, drive_chain: DriveChain, terms: DriveTerms, *, samples: int = 200, seed: int = 0, tolerance: float = 1e-8
    ) -> BaseParameters:
        return regressors.base_parameters(
            self.robot, drive_chain, terms, samples=samples, seed=seed, tolerance=tolerance
        )


def tree_values(
    mechanism: Mechanism, name: str, value: Sequence[float] | np.ndarray | None, default: np.ndarray
) -> np.ndarray:
    """A per-joint setting given for the controlled joints or for every tree joint, as ``(n_t,)`` tree values.

    ``None`` gives ``default`` (``(n_t,)``); ``n_a`` values set the controlled joints (kinematic
    order) and leave the passive ones at ``default``; ``n_t`` values are taken as they are.

    Raises
    ------
    ModelError
        Naming ``name`` when ``value`` has another length.
    """
    out = np.array(default, dtype=float)
    if value is None:
        return out
    array = np.asarray(value, dtype=float)
    if array.shape == (mechanism.n_tree,):
        return array
    if array.shape == (mechanism.n_actuated,):
        out[mechanism.actuated] = array
        return out
    if mechanism.n_actuated == mechanism.n_tree:
        raise ModelError(f"{name} must have {mechanism.n_tree} entries (one per joint), got {array.tolist()}")
    raise ModelError(
        f"{name} must have {mechanism.n_actuated} entries (actuated joints {list(mechanism.actuated_joint_names)}) or"
        f" {mechanism.n_tree} (tree joints), got {np.asarray(value).tolist()}"
    )


def mechanism_of(robot: RobotModel | Mechanism) -> Mechanism:
    """``robot`` as a mechanism: a serial robot's :class:`RobotModel` becomes a :class:`SerialMechanism`."""
    return SerialMechanism(robot) if isinstance(robot, RobotModel) else robot


def tree_columns(mechanism: Mechanism, terms: DriveTerms) -> np.ndarray:
    """Column of each of the mechanism's standard parameters in its tree's serial layout
    (:func:`~dynamic_identification.core.mechanism.robot.standard_parameter_names` of ``n_t`` joints), ``(p,)``."""
    position = {name: i for i, name in enumerate(serial_model.standard_parameter_names(mechanism.n_tree, terms))}
    return np.array([position[name] for name in mechanism.standard_parameter_names(terms)], dtype=int)


def tree_standard(mechanism: Mechanism, terms: DriveTerms, standard: np.ndarray) -> np.ndarray:
    """A mechanism's standard parameters ``(..., p)`` laid out as its tree's ``(..., n_t · per_joint)``.

    The layout of the tools that see links (physical consistency, parameter-file sections, URDF
    export): a closed-loop robot's passive joints carry no drive terms, which are 0 there; a serial
    robot's layout is its tree's (the values come back unchanged).

    Raises
    ------
    DataError
        ``standard`` of another length than the mechanism's standard parameters.
    """
    values = np.asarray(standard, dtype=float)
    columns = tree_columns(mechanism, terms)
    if values.shape[-1:] != (columns.size,):
        raise DataError(f"standard parameters must have {columns.size} entries, got shape {values.shape}")
    tree = np.zeros((*values.shape[:-1], mechanism.n_tree * terms.per_joint))
    tree[..., columns] = values
    return tree
