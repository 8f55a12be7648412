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
:class:`~dynamic_identification.core.closed_loop.ClosedLoopModel`. Observations, solve,
reduction, consistency, prediction, report, URDF export, excitation, simulation and the
feedforward take a :class:`Mechanism`, not a type switch.

Standard parameters of a mechanism: per tree joint ``j`` (1-based, kinematic order) the 10
inertial parameters of its link (``M{j}``, ``MX{j}``, … ``ZZ{j}``), then, for a controlled
joint, its drive-chain terms (``Ia{j}``, ``Fv{j}``, ``Fc{j}``, ``off{j}``; [Gautier2013]
eq. (3)). For a serial robot this is
:func:`~dynamic_identification.core.model.standard_parameter_names`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import pinocchio as pin

from dynamic_identification.core import model as serial_model
from dynamic_identification.core import regressors
from dynamic_identification.core.checks import motion_samples
from dynamic_identification.core.model import DriveChain, DriveParameters, DriveTerms, RobotModel

if TYPE_CHECKING:
    from dynamic_identification.core.closed_loop import LoopClosure
    from dynamic_identification.core.regressors import BaseParameters


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
    def actuated_joint_names(self) -> tuple[str, ...]:
        """Controlled joints, kinematic order: the joints a recording holds and the drive chain drives."""
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

    def passive_correction(self, q: np.ndarray) -> np.ndarray:
        """How far recorded passive positions ``q`` ``(N, n_t)`` are from closing the loops, ``(N, n_t − n_a)``
        (rad or m): the first Newton step that closes them ([Briot2012] eq. (2))."""
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

    def passive_correction(self, q: np.ndarray) -> np.ndarray:
        """No passive joint: ``(N, 0)``."""
        return np.zeros((np.shape(q)[0], 0))

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


def mechanism_of(robot: RobotModel | Mechanism) -> Mechanism:
    """``robot`` as a mechanism: a serial robot's :class:`RobotModel` becomes a :class:`SerialMechanism`."""
    return SerialMechanism(robot) if isinstance(robot, RobotModel) else robot
