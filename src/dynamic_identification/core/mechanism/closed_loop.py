"""Closed-loop (parallel) robots: loop closures, actuated joints and the projected IDIM.

[Briot2012] §2 identifies a parallel robot by virtually opening its closed loops into a
tree structure whose joints are all treated as if actuated, writing the tree's IDIM
linearly in its standard parameters (eq. (1)), and closing the loops again with the
loop-closure equations (eq. (2)-(4)) and Lagrange multipliers (eq. (5)). The actuated
joint torques are the tree's virtual joint torques projected onto the actuated joints,

``τ_act = J_tᵀ τ_tree(q_t, q̇_t, q̈_t) = J_tᵀ φ_tree χ_tree``  ([Briot2012] eq. (6)),

with ``J_t`` the ``(n_t × n_a)`` matrix of ``q̇_t = J_t q̇_a`` (eq. (3)). Here the
platform is not a separate free body: it is a link of the tree (one leg carries it), so
``J_p`` of eq. (3)-(6) is part of ``J_t``.

Description of a mechanism
--------------------------
* The URDF of the opened tree: every joint a 1-DoF joint of Pinocchio (revolute,
  continuous, prismatic); loaded with ``load_robot(urdf, None)``.
* ``loop_closures``: pairs of frames of the tree (links, or joints, or frames of fixed
  joints) that coincide when the loop is closed, with the constraint type:

  ``point``
      The frame origins coincide (3 equations, world axes): the cut joint is a
      spherical joint, or a revolute joint of a planar loop (one equation is then
      redundant, which is allowed).
  ``planar``
      A planar rigid closure about frame_a's z axis, the plane normal: frame_b's
      origin lies on frame_a's z axis (2 in-plane translations, in frame_a's axes) and
      frame_b does not rotate relative to frame_a about that axis (1 rotation). The z
      axes of both frames must be parallel in the closed mechanism; an offset along
      the normal (links on different layers) is allowed.
  ``6d``
      The placements coincide (3 translations, world axes, and 3 rotations).

* ``actuated_joints``: the motorised joints (a subset of the tree joints); their
  number must equal the mobility of the closed mechanism (non-redundant actuation,
  [Briot2012] §2); the other tree joints are passive.

Conventions
-----------
Tree joints are in kinematic (Pinocchio model) order, actuated joints in that same
order. The constraint residual ``f_t(q_t)`` stacks the closures in the order given;
its Jacobian ``A_t`` (``m × n_t``) satisfies ``A_t q̇_t = 0`` on consistent motion
(the ``A_t``, ``B_t`` of [Briot2012] eq. (3) are its passive and actuated column
blocks). Redundant constraint rows are allowed: passive velocities are solved in the
least-squares sense, which is exact when the loop closure is consistent.

Standard parameters of the closed-loop IDIM: for each tree joint ``j`` (1-based) the
10 inertial parameters of its link in Pinocchio's order (``M3``, ``MX3``, … ``ZZ3``),
followed, for an actuated joint, by its drive-chain terms (``Ia3``, ``Fv3``,
``Fc3``, ``off3``) and, for a passive joint of a model with
:attr:`ClosedLoopModel.passive_friction`, by its bearing friction (``Fv3``, ``Fc3``: the
viscous and Coulomb terms the drive terms enable; a passive joint has no motor, so no
rotor inertia and no current offset). The bearing friction of passive joint ``p`` is a
virtual tree torque ``Fv_p q̇_p + Fc_p sign(q̇_p)``, projected onto the actuated joints like
the tree's rigid-body torques (``J_tᵀ``, [Briot2012] eq. (6)). A drive chain
(:class:`~dynamic_identification.core.mechanism.robot.DriveChain`) and drive parameters
(:class:`~dynamic_identification.core.mechanism.robot.DriveParameters`) describe the actuated
joints, in their kinematic order.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import numpy as np
import pinocchio as pin
import scipy.linalg

from dynamic_identification.core.checks import require_finite_samples
from dynamic_identification.core.errors import DataError, ModelError
from dynamic_identification.core.mechanism.robot import (
    INERTIAL_PARAMETER_NAMES,
    DriveChain,
    DriveParameters,
    DriveTerms,
    RobotModel,
    load_robot,
)
from dynamic_identification.core.mechanism.seam import WALK_STEP_RAD, LoopClosure, TreeMotion
from dynamic_identification.core.mechanism.seam import tree_values as tree_values
from dynamic_identification.core.regressors.idim import (
    BaseParameters,
    base_parameters_from_samples,
    drive_observation_matrix,
    inertial_observation_matrix,
)

PASSIVE_FRICTION_TERMS = ("Fv", "Fc")
"""The drive terms a passive joint's bearing can have: viscous and Coulomb friction (no motor: no ``Ia``, no
``off``)."""

RESIDUAL_TOLERANCE = 1e-12
"""Largest constraint residual (m, rad) accepted as closed by the Newton solver."""

SINGULAR_TOLERANCE = 1e-6
"""Default smallest ``σ_min / σ_max`` of the passive block of ``A_t`` (below: a singularity)."""

_CONSISTENCY_TOLERANCE = 1e-6
"""Largest residual (m, rad) of a tree configuration given to :func:`observation_matrix`."""

_RANK_TOLERANCE = 1e-8
"""Relative singular-value threshold for the rank of ``A_t`` at assembled configurations."""

_MAX_ITERATIONS = 50
_MAX_STEP_RAD = 0.5
"""Largest joint change of one Newton step (rad or m): keeps the solver on its branch."""

_CONTINUATION_STEP_RAD = 0.05
"""Largest actuated-joint change between two solves when walking from the reference configuration."""

_MEMO_BYTES = 256 * 2**20
"""Largest memory (bytes) :class:`_CompletionMemo` keeps; a larger completion is not kept."""

_MEMO_ENTRIES = 16
"""Completions :class:`_CompletionMemo` keeps. One filtered-dynamic identification completes five motions (the
recording's, three of its filtered signals, the torque check's at the stamps), and a model choice identifies the
same recording again: with fewer entries than one identification uses, least-recently-used eviction misses every
time (measured on a four-bar: 8 completions instead of 5, 14.4 s instead of 4.5 s). Twice that, as the memo is the
process's: two mechanisms, or two recordings, identified in turn still find theirs."""


class _CompletionMemo:
    """The last completions of mechanisms' motions (:meth:`ClosedLoopModel.complete_motion`), by their inputs.

    Completing a recording solves the loops at every sample, the most expensive step of a closed-loop
    identification; the same recording is completed again when its identification is compared without and with
    the bearing-friction columns, for each model built on it, and for each identification of it in the same
    process (``dynid`` verbs called from Python, one after the other, each loading the mechanism again). The key
    is the mechanism's kinematics (:attr:`ClosedLoopModel.kinematics_digest`), not the object, so all of these
    find it. Kept least-recently used, at most :data:`_MEMO_ENTRIES` and :data:`_MEMO_BYTES`; handed out as
    copies, so no caller sees another's changes. Thread-safe.
    """

    def __init__(self) -> None:
        self._entries: OrderedDict[bytes, TreeMotion] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(*parts: object, arrays: Sequence[np.ndarray | None]) -> bytes:
        """A digest of ``parts`` (their ``repr``) and of the ``arrays``' shapes and values."""
        digest = hashlib.blake2b(repr(parts).encode(), digest_size=20)
        for array in arrays:
            if array is None:
                digest.update(b"none")
                continue
            digest.update(repr(array.shape).encode())
            digest.update(np.ascontiguousarray(array, dtype=float).tobytes())
        return digest.digest()

    def get(self, key: bytes) -> TreeMotion | None:
        with self._lock:
            motion = self._entries.get(key)
            if motion is None:
                return None
            self._entries.move_to_end(key)
        return _copied(motion)

    def put(self, key: bytes, motion: TreeMotion) -> None:
        size = _bytes(motion)
        if size > _MEMO_BYTES:
            return
        with self._lock:
            self._entries[key] = _copied(motion)
            while len(self._entries) > _MEMO_ENTRIES or sum(map(_bytes, self._entries.values())) > _MEMO_BYTES:
                self._entries.popitem(last=False)


_COMPLETIONS = _CompletionMemo()
"""The process's completions (:class:`_CompletionMemo`)."""


def _copied(motion: TreeMotion) -> TreeMotion:
    return TreeMotion(
        q=motion.q.copy(),
        dq=motion.dq.copy(),
        ddq=motion.ddq.copy(),
        projection=None if motion.projection is None else motion.projection.copy(),
        passive_condition=None if motion.passive_condition is None else motion.passive_condition.copy(),
    )


def _bytes(motion: TreeMotion) -> int:
    arrays = (motion.q, motion.dq, motion.ddq, motion.projection, motion.passive_condition)
    return sum(array.nbytes for array in arrays if array is not None)


_SAMPLING_CONDITION = 1e2
"""Largest condition number of the passive block accepted for the random states of :func:`base_parameters`."""


def _newton_step(jacobian: np.ndarray, residual: np.ndarray) -> np.ndarray:
    """The least-squares ``s`` of ``jacobian s ≈ residual`` (a vector, or columns solved together), the minimum-norm
    one when ``jacobian`` has more columns.

    With at least as many constraints as free joints and full column rank (a mechanism away from a singularity,
    redundant planar closures included) LAPACK's QR solver ``gels`` gives it directly; otherwise the SVD (singular
    values below 1e-12 of the largest dropped). ``gels`` costs a fifth of numpy's SVD-based ``lstsq`` and its wrapper,
    which were most of a Newton iteration on a mechanism of a few joints.
    """
    rows, columns = jacobian.shape
    if rows >= columns:
        _, solution, info = scipy.linalg.lapack.dgels(jacobian, residual)
        if info == 0 and np.isfinite(solution[:columns]).all():
            return np.asarray(solution[:columns])
    return np.linalg.lstsq(jacobian, residual, rcond=1e-12)[0]


def _svd(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The thin SVD ``U, σ, Vᵀ`` of a small matrix by LAPACK's ``gesdd`` (numpy's on failure, which raises)."""
    u, singular, vt, info = scipy.linalg.lapack.dgesdd(matrix, full_matrices=0)
    if info != 0:
        return np.linalg.svd(matrix, full_matrices=False)
    return u, singular, vt


class LoopClosureError(DataError):
    """The loop closures cannot be solved for a sample: no convergence, or a singularity.

    Attributes
    ----------
    sample
        Index of the sample (row of the recording), or ``None`` for a single configuration.
    residual
        Largest constraint residual reached, m or rad (0 when the closure converged).
    condition_number
        ``σ_max / σ_min`` of the passive block of ``A_t`` at the last iterate (``inf``
        when it is singular).
    """

    def __init__(self, message: str, *, sample: int | None, residual: float, condition_number: float) -> None:
        super().__init__(message)
        self.sample = sample
        self.residual = residual
        self.condition_number = condition_number


def loop_closures_from_config(loop_closures: object) -> tuple[LoopClosure, ...]:
    """The closures of the configuration key ``robot.loop_closures``.

    Two forms are accepted: a list of ``{frame_a, frame_b, type}`` mappings, or a mapping
    from a closure name to such a mapping (the form a ROS 2 parameter file can hold:
    ``robot.loop_closures.<name>.frame_a`` …, since rcl refuses lists of mappings).

    Raises
    ------
    ModelError
        Naming the entry and the bad key or value.
    """
    if isinstance(loop_closures, Mapping):
        return tuple(
            LoopClosure.from_dict(entry, where=f"robot.loop_closures.{name}") for name, entry in loop_closures.items()
        )
    if isinstance(loop_closures, str) or not isinstance(loop_closures, Sequence):
        raise ModelError(f"robot.loop_closures must be a list or a mapping of closures, got {loop_closures!r}")
    return tuple(
        LoopClosure.from_dict(entry, where=f"robot.loop_closures[{i}]") for i, entry in enumerate(loop_closures)
    )


ClosedLoopMotion = TreeMotion
"""A closed-loop mechanism's tree motion: a :class:`~dynamic_identification.core.mechanism.seam.TreeMotion` with its
``projection`` ``J_t`` (and ``passive_condition`` where computed)."""


@dataclass(frozen=True)
class _PassiveBlock:
    """Passive velocities of one configuration: ``q̇_p = −A_p⁺ A_a q̇_a`` (eq. (3))."""

    pseudo_inverse: np.ndarray
    projection: np.ndarray
    condition_number: float


_ALIGNED = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
"""The frame of every closure Jacobian, velocity and acceleration: the frame's origin, the world's axes."""


@dataclass(frozen=True)
class _ClosureFrames:
    """The two frames of each closure at ``N`` configurations (``LOCAL_WORLD_ALIGNED``): Jacobians
    ``(N, c, 2, 6, n_t)``, origins ``(N, c, 2, 3)`` (m) and orientations ``(N, c, 2, 3, 3)``; side 0 is
    ``frame_a``."""

    jacobians: np.ndarray
    translations: np.ndarray
    rotations: np.ndarray

    def head(self, samples: int) -> _ClosureFrames:
        """The first ``samples`` samples."""
        return _ClosureFrames(self.jacobians[:samples], self.translations[:samples], self.rotations[:samples])


class _Kinematics:
    """Constraint residual, Jacobian and drift of a tree model, on one reusable ``pin.Data``.

    ``poses`` are Pinocchio's references to the closure frames' placements in ``data.oMf``, not copies: they
    follow every :meth:`place`, so a Newton iteration reads them without looking the frames up again.
    """

    def __init__(self, model: ClosedLoopModel) -> None:
        self.robot = model.robot
        self.model = model.robot.model
        self.data = self.model.createData()
        self.closures = model.closures
        self.frames = model.frame_ids
        self.rows = model.n_constraints
        self.points_only = all(closure.type == "point" for closure in model.closures)
        placements = self.data.oMf
        self.poses = tuple((placements[a], placements[b]) for a, b in self.frames)

    def place(self, q: np.ndarray) -> None:
        """Kinematics and joint Jacobians at the positions ``q`` (rad, m)."""
        pin.computeJointJacobians(self.model, self.data, self.robot.configuration(q))
        pin.updateFramePlacements(self.model, self.data)

    def residual(self) -> np.ndarray:
        """``f_t(q_t)`` of [Briot2012] eq. (2), stacked over closures (m, rad)."""
        if self.points_only:  # the most common closures, in one expression: a residual is most of a Newton step
            return np.concatenate([pose_a.translation - pose_b.translation for pose_a, pose_b in self.poses])
        out = np.empty(self.rows)
        row = 0
        for closure, (pose_a, pose_b) in zip(self.closures, self.poses, strict=True):
            difference = pose_a.translation - pose_b.translation
            if closure.type == "point":
                out[row : row + 3] = difference
            elif closure.type == "6d":
                out[row : row + 3] = difference
                out[row + 3 : row + 6] = pose_a.rotation @ pin.log3(pose_b.rotation.T @ pose_a.rotation)
            else:
                rotation_a = pose_a.rotation
                out[row : row + 2] = (rotation_a.T @ difference)[:2]
                out[row + 2] = pin.log3(pose_b.rotation.T @ rotation_a)[2]
            row += closure.rows
        return out

    def _jacobian(self, frame_id: int) -> np.ndarray:
        """The frame's Jacobian ``(6, n_t)`` in ``LOCAL_WORLD_ALIGNED`` at the configuration placed last."""
        return pin.getFrameJacobian(self.model, self.data, frame_id, _ALIGNED)

    def jacobian(self) -> np.ndarray:
        """``A_t`` (``m × n_t``): ``A_t q̇_t`` is the time derivative of the residual on consistent motion."""
        if self.points_only:
            return np.concatenate([(self._jacobian(a) - self._jacobian(b))[:3] for a, b in self.frames])
        out = np.empty((self.rows, self.model.nv))
        row = 0
        for closure, (a, b), (pose_a, pose_b) in zip(self.closures, self.frames, self.poses, strict=True):
            jacobian_a, jacobian_b = self._jacobian(a), self._jacobian(b)
            if closure.type == "point":
                out[row : row + 3] = jacobian_a[:3] - jacobian_b[:3]
            elif closure.type == "6d":
                out[row : row + 6] = jacobian_a - jacobian_b
            else:
                offset = pose_a.translation - pose_b.translation
                # d/dt Rₐᵀδ = Rₐᵀ(δ̇ − ωₐ × δ) = Rₐᵀ(δ̇ + [δ]× ωₐ)
                linear = jacobian_a[:3] - jacobian_b[:3] + pin.skew(offset) @ jacobian_a[3:]
                inverse_a = pose_a.rotation.T
                out[row : row + 2] = (inverse_a @ linear)[:2]
                out[row + 2] = (inverse_a @ (jacobian_a[3:] - jacobian_b[3:]))[2]
            row += closure.rows
        return out

    def closure_frames(self, samples: int) -> _ClosureFrames:
        """Empty :class:`_ClosureFrames` for ``samples`` configurations of this tree's closures."""
        pairs = (samples, len(self.closures), 2)
        return _ClosureFrames(
            jacobians=np.empty(pairs + (6, self.model.nv)),
            translations=np.empty(pairs + (3,)),
            rotations=np.empty(pairs + (3, 3)),
        )

    def record(self, frames: _ClosureFrames, k: int) -> None:
        """Store the closure frames' Jacobians and placements of the configuration placed last as sample ``k``."""
        for c, (pair, poses) in enumerate(zip(self.frames, self.poses, strict=True)):
            for side in (0, 1):
                frames.jacobians[k, c, side] = self._jacobian(pair[side])
                frames.translations[k, c, side] = poses[side].translation
                frames.rotations[k, c, side] = poses[side].rotation

    def stacked_jacobian(self, frames: _ClosureFrames) -> np.ndarray:
        """:meth:`jacobian` of every recorded sample at once, ``(N, m, n_t)``."""
        out = np.empty((frames.jacobians.shape[0], self.rows, self.model.nv))
        row = 0
        for c, closure in enumerate(self.closures):
            jacobian_a, jacobian_b = frames.jacobians[:, c, 0], frames.jacobians[:, c, 1]
            if closure.type == "point":
                out[:, row : row + 3] = jacobian_a[:, :3] - jacobian_b[:, :3]
            elif closure.type == "6d":
                out[:, row : row + 6] = jacobian_a - jacobian_b
            else:
                offset = frames.translations[:, c, 0] - frames.translations[:, c, 1]
                inverse_a = np.swapaxes(frames.rotations[:, c, 0], 1, 2)
                linear = jacobian_a[:, :3] - jacobian_b[:, :3] + np.cross(offset[:, :, None], jacobian_a[:, 3:], axis=1)
                out[:, row : row + 2] = (inverse_a @ linear)[:, :2]
                out[:, row + 2] = (inverse_a @ (jacobian_a[:, 3:] - jacobian_b[:, 3:]))[:, 2]
            row += closure.rows
        return out

    def stacked_drift(self, configurations: np.ndarray, dq: np.ndarray, frames: _ClosureFrames) -> np.ndarray:
        """``Ȧ_t q̇_t`` of every recorded sample, ``(N, m)``: the acceleration of the residual at ``q̈_t = 0``
        ([Briot2012] eq. (4)), at the Pinocchio ``configurations`` and tree velocities ``dq`` ``(N, n_t)`` of the
        samples ``frames`` recorded.

        The frames' classical accelerations at ``q̈_t = 0`` in ``LOCAL_WORLD_ALIGNED`` (``J̇ q̇``)
        and velocities come from one ``forwardKinematics`` a sample.
        """
        samples = dq.shape[0]
        rest = np.zeros(self.model.nv)
        accelerations = np.empty((samples, len(self.closures), 2, 6))
        velocities = np.empty_like(accelerations)
        for k in range(samples):
            pin.forwardKinematics(self.model, self.data, configurations[k], dq[k], rest)
            for c, pair in enumerate(self.frames):
                for side, frame_id in enumerate(pair):
                    accelerations[k, c, side] = pin.getFrameClassicalAcceleration(
                        self.model, self.data, frame_id, _ALIGNED
                    ).vector
                    velocities[k, c, side] = pin.getFrameVelocity(self.model, self.data, frame_id, _ALIGNED).vector
        out = np.empty((samples, self.rows))
        row = 0
        for c, closure in enumerate(self.closures):
            rate_a, rate_b = accelerations[:, c, 0], accelerations[:, c, 1]
            if closure.type == "point":
                out[:, row : row + 3] = rate_a[:, :3] - rate_b[:, :3]
            elif closure.type == "6d":
                out[:, row : row + 6] = rate_a - rate_b
            else:
                twist_a, twist_b = velocities[:, c, 0], velocities[:, c, 1]
                omega_a = twist_a[:, 3:]
                offset = frames.translations[:, c, 0] - frames.translations[:, c, 1]
                offset_rate = twist_a[:, :3] - twist_b[:, :3]
                # d²/dt² Rₐᵀδ = Rₐᵀ(δ̈ − αₐ × δ − 2 ωₐ × δ̇ + ωₐ × (ωₐ × δ))
                linear = (
                    rate_a[:, :3]
                    - rate_b[:, :3]
                    - np.cross(rate_a[:, 3:], offset)
                    - 2.0 * np.cross(omega_a, offset_rate)
                    + np.cross(omega_a, np.cross(omega_a, offset))
                )
                angular = rate_a[:, 3:] - rate_b[:, 3:] + np.cross(omega_a, twist_b[:, 3:])
                inverse_a = np.swapaxes(frames.rotations[:, c, 0], 1, 2)
                out[:, row : row + 2] = np.einsum("kij,kj->ki", inverse_a, linear)[:, :2]
                out[:, row + 2] = np.einsum("kj,kj->k", inverse_a[:, 2], angular)
            row += closure.rows
        return out

    def drift(self, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        """``Ȧ_t q̇_t`` at ``(q, q̇)``, the acceleration of the residual at ``q̈_t = 0``: :meth:`stacked_drift` of one
        sample (``self`` is left at ``q``)."""
        self.place(q)
        frames = self.closure_frames(1)
        self.record(frames, 0)
        return self.stacked_drift(self.robot.configuration(q)[None], dq[None], frames)[0]


class _KinematicsPerThread:
    """One :class:`_Kinematics` (its ``pin.Data``) per thread for a mechanism's single solves (:meth:`ClosedLoopModel.
    solve_passive`, :meth:`ClosedLoopModel.project_state`): a ``pin.Data`` costs tens of µs to create, a sixth of a
    solve, and the simulator projects its state at every step. Not pickled (a copy builds its own)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def __getstate__(self) -> dict[str, object]:
        return {}

    def __setstate__(self, state: dict[str, object]) -> None:
        self._local = threading.local()

    def get(self, model: ClosedLoopModel) -> _Kinematics:
        """This thread's kinematics of ``model``."""
        kinematics: _Kinematics | None = getattr(self._local, "kinematics", None)
        if kinematics is None:
            kinematics = _Kinematics(model)
            self._local.kinematics = kinematics
        return kinematics


@dataclass(frozen=True, eq=False)
class ClosedLoopModel:
    """A closed-loop mechanism: the opened tree, its loop closures and its actuated joints.

    Build it with :meth:`create` or :meth:`from_config`, which validate the description
    and check the mobility; the fields are read-only results of that validation.

    Attributes
    ----------
    robot
        The opened tree (every 1-DoF joint of the URDF, kinematic order).
    closures
        The loop closures, in the order their equations are stacked.
    actuated
        Indices of the actuated joints among the tree joints, increasing, shape ``(n_a,)``.
    passive
        Indices of the passive joints, increasing, shape ``(n_p,)``.
    frame_ids
        Pinocchio frame indices ``(frame_a, frame_b)`` of each closure.
    reference_configuration
        An assembled (closed) tree configuration, shape ``(n_t,)``, found from the URDF's
        zero configuration: the start of :meth:`complete_motion` when no guess is given.
    singular_tolerance
        Smallest ``σ_min / σ_max`` of the passive block of ``A_t`` accepted; below, the
        configuration is treated as a singularity and refused.
    passive_friction
        The IDIM has bearing-friction columns for the passive joints (module docstring):
        ``Fv`` and ``Fc`` of each passive joint, those of them the drive terms enable.
        :meth:`with_passive_friction` switches it.
    """

    robot: RobotModel
    closures: tuple[LoopClosure, ...]
    actuated: np.ndarray
    passive: np.ndarray
    frame_ids: tuple[tuple[int, int], ...]
    reference_configuration: np.ndarray
    singular_tolerance: float = SINGULAR_TOLERANCE
    passive_friction: bool = False
    _kinematics_per_thread: _KinematicsPerThread = field(
        default_factory=_KinematicsPerThread, init=False, compare=False, repr=False
    )

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_config(
        cls,
        urdf_path: str | Path,
        *,
        loop_closures: Sequence[Mapping[str, object]] | Mapping[str, Mapping[str, object]],
        actuated_joints: Sequence[str],
        singular_tolerance: float = SINGULAR_TOLERANCE,
    ) -> ClosedLoopModel:
        """A model from the configuration keys ``robot.loop_closures`` and ``robot.actuated_joints``.

        Parameters
        ----------
        urdf_path
            URDF of the opened tree.
        loop_closures
            ``[{frame_a: str, frame_b: str, type: point|planar|6d}, …]``, or
            ``{name: {frame_a, frame_b, type}, …}`` (see :func:`loop_closures_from_config`).
        actuated_joints
            Names of the motorised joints.

        Raises
        ------
        ModelError
            On an unreadable URDF, a malformed closure entry, an unknown frame or
            joint, or a number of actuated joints that differs from the mobility.
        """
        closures = loop_closures_from_config(loop_closures)
        if isinstance(actuated_joints, str) or not isinstance(actuated_joints, Sequence):
            raise ModelError(f"robot.actuated_joints must be a list of joint names, got {actuated_joints!r}")
        robot = load_robot(urdf_path, None)
        return cls.create(robot, closures, actuated_joints, singular_tolerance=singular_tolerance)

    @classmethod
    def create(
        cls,
        robot: RobotModel,
        closures: Sequence[LoopClosure],
        actuated_joints: Sequence[str],
        *,
        singular_tolerance: float = SINGULAR_TOLERANCE,
        seed: int = 0,
    ) -> ClosedLoopModel:
        """Validated model of the tree ``robot`` closed by ``closures``.

        The loops are assembled by Newton's method from the tree's zero configuration
        (joint-range middle when 0 is out of range) and from a few random ones
        (``seed``); the mobility is ``n_t − rank A_t`` at these assembled
        configurations and must equal the number of actuated joints, whose
        complement must be determined by them (full-column-rank passive block).

        Raises
        ------
        ModelError
            Naming the bad closure, frame or joint, or stating the mobility.
        """
        if not closures:
            raise ModelError("loop_closures is empty: a closed-loop model needs at least one closure")
        if not (np.isfinite(singular_tolerance) and 0.0 < singular_tolerance < 1.0):
            raise ModelError(f"singular_tolerance must be in (0, 1), got {singular_tolerance}")
        model = robot.model
        name = Path(robot.urdf_path).name
        frame_ids = []
        for i, closure in enumerate(closures):
            ids = []
            for key in ("frame_a", "frame_b"):
                frame = getattr(closure, key)
                if not model.existFrame(frame):
                    frames = [model.frames[f].name for f in range(1, model.nframes)]
                    raise ModelError(
                        f"robot.loop_closures[{i}].{key}: {frame!r} is not a frame of {name}; its frames are {frames}"
                    )
                ids.append(model.getFrameId(frame))
            if model.frames[ids[0]].parentJoint == model.frames[ids[1]].parentJoint:
                raise ModelError(
                    f"robot.loop_closures[{i}]: {closure.frame_a!r} and {closure.frame_b!r} move with the same"
                    " joint, so the closure constrains nothing"
                )
            frame_ids.append((ids[0], ids[1]))
        actuated = _actuated_indices(robot, actuated_joints, name)
        passive = np.setdiff1d(np.arange(robot.n_joints), actuated)
        for array in (actuated, passive):
            array.setflags(write=False)
        provisional = cls(
            robot=robot,
            closures=tuple(closures),
            actuated=actuated,
            passive=passive,
            frame_ids=tuple(frame_ids),
            reference_configuration=np.zeros(robot.n_joints),
            singular_tolerance=float(singular_tolerance),
        )
        reference = provisional._checked_reference(np.random.default_rng(seed))
        reference.setflags(write=False)
        return cls(
            robot=robot,
            closures=tuple(closures),
            actuated=actuated,
            passive=passive,
            frame_ids=tuple(frame_ids),
            reference_configuration=reference,
            singular_tolerance=float(singular_tolerance),
        )

    def _checked_reference(self, rng: np.random.Generator) -> np.ndarray:
        """Assemble the loops, check the mobility and the actuation; return the reference configuration."""
        kinematics = _Kinematics(self)
        starts = [_neutral_positions(self.robot)] + [_random_positions(self.robot, rng) for _ in range(30)]
        assembled: list[tuple[np.ndarray, int, int]] = []
        for start in starts:
            q = self._newton(kinematics, start, np.arange(self.n_tree), _MAX_ITERATIONS * 2)
            if q is None:
                continue
            kinematics.place(q)
            jacobian = kinematics.jacobian()
            assembled.append((q, _rank(jacobian), _rank(jacobian[:, self.passive])))
            if len(assembled) >= 6:
                break
        if not assembled:
            raise ModelError(
                f"the loop closures of {Path(self.robot.urdf_path).name} cannot be closed from the zero"
                " configuration nor from 30 random ones: check that frame_a and frame_b can coincide"
            )
        constraints = max(rank for _, rank, _ in assembled)
        mobility = self.n_tree - constraints
        if self.n_actuated != mobility:
            raise ModelError(
                f"robot.actuated_joints has {self.n_actuated} joints {list(self.actuated_joint_names)} but the"
                f" mechanism's mobility is {mobility} ({self.n_tree} tree joints, {constraints} independent"
                " closure equations)"
            )
        usable = [q for q, rank, passive_rank in assembled if rank == constraints and passive_rank == self.n_passive]
        if not usable:
            raise ModelError(
                f"robot.actuated_joints {list(self.actuated_joint_names)} do not determine the passive joints"
                f" {list(self.passive_joint_names)}: their block of the constraint Jacobian is rank-deficient"
                " at every assembled configuration tried"
            )
        return usable[0]

    @cached_property
    def kinematics_digest(self) -> bytes:
        """A digest of all that the completion of a motion depends on besides the motion: the tree (Pinocchio's
        serialisation of the model), its continuous joints, the closures and their frames, the actuated joints.
        Two loads of the same description have the same digest; the completion memo is keyed by it."""
        digest = hashlib.blake2b(self.robot.model.saveToString().encode(), digest_size=20)
        digest.update(
            repr(
                (self.robot.continuous, self.closures, self.frame_ids, self.actuated.tolist(), self.passive.tolist())
            ).encode()
        )
        return digest.digest()

    # ----------------------------------------------------------------- sizes and names
    @property
    def n_tree(self) -> int:
        """Number of tree joints ``n_t``."""
        return self.robot.n_joints

    @property
    def n_actuated(self) -> int:
        """Number of actuated joints ``n_a`` (the mobility)."""
        return int(self.actuated.shape[0])

    @property
    def n_passive(self) -> int:
        """Number of passive joints ``n_t − n_a``."""
        return int(self.passive.shape[0])

    @property
    def n_constraints(self) -> int:
        """Number of closure equations ``m`` (rows of ``A_t``, redundant ones included)."""
        return sum(closure.rows for closure in self.closures)

    @property
    def joint_names(self) -> tuple[str, ...]:
        """Tree joints, kinematic order."""
        return self.robot.joint_names

    @property
    def actuated_joint_names(self) -> tuple[str, ...]:
        """Actuated joints, kinematic order (the order of rows of the closed-loop IDIM)."""
        return tuple(self.robot.joint_names[j] for j in self.actuated)

    @property
    def passive_joint_names(self) -> tuple[str, ...]:
        """Passive joints, kinematic order."""
        return tuple(self.robot.joint_names[j] for j in self.passive)

    @property
    def closure_joints(self) -> tuple[tuple[int, int], ...]:
        """Per closure, the Pinocchio joint indices of the bodies that carry ``frame_a`` and ``frame_b``: the two
        bodies the cut joint joins in the closed mechanism (their geometry meets there by design)."""
        frames = self.robot.model.frames
        return tuple((int(frames[a].parentJoint), int(frames[b].parentJoint)) for a, b in self.frame_ids)

    def with_passive_friction(self, passive_friction: bool = True) -> ClosedLoopModel:
        """This mechanism with (or without) the passive joints' bearing-friction columns (:attr:`passive_friction`)."""
        if passive_friction == self.passive_friction:
            return self
        return replace(self, passive_friction=bool(passive_friction))

    def passive_terms(self, terms: DriveTerms) -> tuple[str, ...]:
        """The bearing-friction terms of each passive joint: those of :data:`PASSIVE_FRICTION_TERMS` that ``terms``
        enables, or none without :attr:`passive_friction`."""
        if not self.passive_friction:
            return ()
        return tuple(name for name in terms.names if name in PASSIVE_FRICTION_TERMS)

    def passive_friction_names(self, terms: DriveTerms) -> tuple[str, ...]:
        """Names of the passive joints' bearing-friction parameters, e.g. ``("Fv2", "Fc2", "Fv4", "Fc4")`` (tree
        joint index, 1-based); empty without :attr:`passive_friction`."""
        return tuple(f"{name}{int(j) + 1}" for j in self.passive for name in self.passive_terms(terms))

    # ----------------------------------------------------------------- the mechanism seam
    def standard_parameter_names(self, terms: DriveTerms) -> tuple[str, ...]:
        """:func:`standard_parameter_names` of this mechanism."""
        return standard_parameter_names(self, terms)

    def standard_parameters(self, terms: DriveTerms, drive: DriveParameters | None = None) -> np.ndarray:
        """:func:`standard_parameters` of this mechanism."""
        return standard_parameters(self, terms, drive)

    def observation_matrix(
        self, drive_chain: DriveChain, terms: DriveTerms, motion: TreeMotion, *, data: pin.Data | None = None
    ) -> np.ndarray:
        """:func:`observation_matrix` at a completed ``motion`` (its ``J_t`` computed and checked when absent)."""
        return observation_matrix(
            self, drive_chain, terms, motion.q, motion.dq, motion.ddq, projection=motion.projection
        )

    def base_parameters(
        self, drive_chain: DriveChain, terms: DriveTerms, *, samples: int = 200, seed: int = 0, tolerance: float = 1e-8
    ) -> BaseParameters:
        """:func:`base_parameters` of this mechanism."""
        return base_parameters(self, drive_chain, terms, samples=samples, seed=seed, tolerance=tolerance)

    # ----------------------------------------------------------------- kinematics
    def residual(self, q: np.ndarray) -> np.ndarray:
        """Closure residual ``f_t(q_t)`` ([Briot2012] eq. (2)), shape ``(m,)``, m and rad."""
        kinematics = _Kinematics(self)
        kinematics.place(self._configuration("q", q))
        return kinematics.residual()

    def constraint_jacobian(self, q: np.ndarray) -> np.ndarray:
        """Constraint Jacobian ``A_t(q_t)``, shape ``(m, n_t)``, with ``A_t q̇_t = 0`` on consistent motion."""
        kinematics = _Kinematics(self)
        kinematics.place(self._configuration("q", q))
        return kinematics.jacobian()

    def constraint_drift(self, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        """``Ȧ_t q̇_t``, shape ``(m,)``: consistent accelerations satisfy ``A_t q̈_t + Ȧ_t q̇_t = 0`` (eq. (4))."""
        return _Kinematics(self).drift(self._configuration("q", q), self._configuration("dq", dq))

    def projection(self, q: np.ndarray) -> np.ndarray:
        """``J_t`` of [Briot2012] eq. (3): ``q̇_t = J_t q̇_a`` and ``τ_act = J_tᵀ τ_tree`` (eq. (6)).

        Parameters
        ----------
        q
            A consistent tree configuration ``(n_t,)`` or one per sample ``(N, n_t)``.

        Returns
        -------
        numpy.ndarray
            ``(n_t, n_a)`` or ``(N, n_t, n_a)``; the actuated rows are the identity and
            the passive rows ``−A_p⁺ A_a``.

        Raises
        ------
        LoopClosureError
            At a singular configuration (the passive block of ``A_t`` ill-conditioned),
            naming the sample.
        """
        positions = np.asarray(q, dtype=float)
        single = positions.ndim == 1
        samples = self._motion("q", positions[None] if single else positions, self.n_tree)
        kinematics = _Kinematics(self)
        out = np.empty((samples.shape[0], self.n_tree, self.n_actuated))
        for k, configuration in enumerate(samples):
            kinematics.place(configuration)
            out[k] = self._passive_block(kinematics.jacobian(), None if single else k, 0.0).projection
        return out[0] if single else out

    def passive_correction(self, q: np.ndarray) -> np.ndarray:
        """How far measured passive positions are from closing the loops: ``Δq_p = −A_p⁺ f_t(q_t)``.

        The first Newton step of :meth:`solve_passive` from ``q`` ([Briot2012] eq. (2)):
        to first order, the change of the passive positions (rad or m) that closes the
        loops with the actuated positions of ``q`` held. Zero on a closed configuration;
        exact to second order in the deviation.

        Parameters
        ----------
        q
            Tree positions ``(N, n_t)``, e.g. a recording of every joint, rad or m.

        Returns
        -------
        numpy.ndarray
            ``(N, n_p)``, passive joints in kinematic order.

        Raises
        ------
        LoopClosureError
            At the first sample whose passive block of ``A_t`` is singular, naming it.
        """
        samples = self._motion("q", q, self.n_tree)
        kinematics = _Kinematics(self)
        out = np.empty((samples.shape[0], self.n_passive))
        for k, configuration in enumerate(samples):
            kinematics.place(configuration)
            residual = kinematics.residual()
            block = self._passive_block(kinematics.jacobian(), k, float(np.max(np.abs(residual))))
            out[k] = -block.pseudo_inverse @ residual
        return out

    # ----------------------------------------------------------------- solving the loops
    def solve_passive(self, q_actuated: np.ndarray, q_guess: np.ndarray) -> np.ndarray:
        """Tree configuration closing the loops for given actuated positions (eq. (2)).

        Newton's method on the passive joints, from ``q_guess``'s passive entries
        (its actuated entries are replaced by ``q_actuated``); steps are bounded to
        0.5 rad so that it stays on the assembly mode of the guess.

        Parameters
        ----------
        q_actuated
            Actuated joint positions ``(n_a,)``, rad or m.
        q_guess
            A tree configuration ``(n_t,)`` near the solution.

        Returns
        -------
        numpy.ndarray
            The tree configuration ``(n_t,)``.

        Raises
        ------
        LoopClosureError
            When Newton does not converge within 50 iterations (no closed configuration
            near the guess) or the solution is singular.
        """
        actuated = self._configuration("q_actuated", q_actuated, self.n_actuated)
        guess = self._configuration("q_guess", q_guess).copy()
        guess[self.actuated] = actuated
        q, _ = self._solve(self._kinematics_per_thread.get(self), guess, None)
        return q

    def project_state(self, q: np.ndarray, dq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The closed state keeping the actuated part of a nearly closed tree state ``(q, q̇)``.

        Passive positions by :meth:`solve_passive` from ``q``, passive velocities
        ``J_t q̇_a`` (eq. (3)): removes the drift of a numerical integration.

        Raises
        ------
        LoopClosureError
            As :meth:`solve_passive`.
        """
        guess = self._configuration("q", q)
        velocity = self._configuration("dq", dq)
        closed, block = self._solve(self._kinematics_per_thread.get(self), guess, None)
        return closed, block.projection @ velocity[self.actuated]

    def assemble(self, q_guess: np.ndarray) -> np.ndarray:
        """A closed tree configuration near ``q_guess`` (``(n_t,)``), every joint free to move.

        Minimum-norm Newton steps on all tree joints; use it to find a starting point
        in a chosen assembly mode, then :meth:`solve_passive` or :meth:`complete_motion`.

        Raises
        ------
        LoopClosureError
            When the loops cannot be closed near ``q_guess``.
        """
        guess = self._configuration("q_guess", q_guess)
        kinematics = _Kinematics(self)
        q = self._newton(kinematics, guess, np.arange(self.n_tree), _MAX_ITERATIONS * 2)
        if q is None:
            kinematics.place(guess)
            raise LoopClosureError(
                f"the loops cannot be closed near q_guess={guess.tolist()}"
                f" (residual {np.max(np.abs(kinematics.residual())):.3g})",
                sample=None,
                residual=float(np.max(np.abs(kinematics.residual()))),
                condition_number=float("nan"),
            )
        return q

    def complete_motion(
        self,
        q_actuated: np.ndarray,
        dq_actuated: np.ndarray,
        ddq_actuated: np.ndarray,
        *,
        q_guess: np.ndarray | None = None,
    ) -> ClosedLoopMotion:
        """Tree motion of a recorded actuated motion ([Briot2012] eq. (2)-(4)).

        For each sample: passive positions by :meth:`solve_passive`, warm-started from
        the previous sample extrapolated with its ``J_t``; velocities
        ``q̇_t = J_t q̇_a`` (eq. (3)); accelerations ``q̈_p = −A_p⁺ (A_a q̈_a + Ȧ_t q̇_t)``
        (eq. (4)).

        Parameters
        ----------
        q_actuated, dq_actuated, ddq_actuated
            Actuated joint motion ``(N, n_a)``: rad, rad/s, rad/s² (or m, m/s, m/s²).
        q_guess
            Tree configuration ``(n_t,)`` near the first sample, choosing the assembly
            mode. By default the actuated joints are walked from
            :attr:`reference_configuration` to the first sample, solving the loops on
            the way (the assembly mode of the URDF's zero configuration).

        Returns
        -------
        ClosedLoopMotion
            ``q, dq, ddq`` of shape ``(N, n_t)``, ``projection`` ``(N, n_t, n_a)`` and
            ``passive_condition`` ``(N,)``.

        Raises
        ------
        LoopClosureError
            At the first sample where the loops cannot be closed or the mechanism is
            singular; its message and :attr:`LoopClosureError.sample` name the sample.
        """
        n_a = self.n_actuated
        qa = self._motion("q_actuated", q_actuated, n_a)
        dqa = self._motion("dq_actuated", dq_actuated, n_a)
        ddqa = self._motion("ddq_actuated", ddq_actuated, n_a)
        if not qa.shape == dqa.shape == ddqa.shape:
            raise DataError(
                f"q_actuated, dq_actuated, ddq_actuated differ in shape: {qa.shape}, {dqa.shape}, {ddqa.shape}"
            )
        start = None if q_guess is None else self._configuration("q_guess", q_guess)
        key = _COMPLETIONS.key(
            self.kinematics_digest, self.singular_tolerance, arrays=(qa, dqa, ddqa, start, self.reference_configuration)
        )
        known = _COMPLETIONS.get(key)
        if known is not None:
            return known
        motion = self._completed(qa, dqa, ddqa, start)
        _COMPLETIONS.put(key, motion)
        return motion

    def _completed(
        self, qa: np.ndarray, dqa: np.ndarray, ddqa: np.ndarray, start: np.ndarray | None
    ) -> ClosedLoopMotion:
        """:meth:`complete_motion` of checked inputs.

        The loops are solved sample by sample: Newton from the previous sample moved along its
        ``J_t``, plus what that first-order step missed at the previous sample (the path's curvature,
        which changes little from one sample to the next: a step of a decimated grid then needs one
        Newton iteration rather than two or three). The passive blocks, velocities and accelerations
        of all samples then follow at once from the closure frames recorded at each solution.
        """
        samples = qa.shape[0]
        kinematics = _Kinematics(self)
        guess = self._walk_to(kinematics, qa[0]) if start is None else start.copy()
        guess[self.actuated] = qa[0]
        q = np.empty((samples, self.n_tree))
        frames = kinematics.closure_frames(samples)
        changes = self._actuated_change(qa[:-1], qa[1:])
        slope = np.zeros((self.n_passive, self.n_actuated))
        predicted = missed = np.zeros(self.n_passive)
        for k in range(samples):
            if k:
                guess = q[k - 1].copy()
                predicted = guess[self.passive] + slope @ changes[k - 1]
                guess[self.passive] = predicted + missed
                guess[self.actuated] = qa[k]
            try:
                q[k], slope = self._close(kinematics, guess, k, slope)
            except LoopClosureError:
                # A singular sample before this one is the first failure (the sample-by-sample order).
                self._passive_blocks(kinematics.stacked_jacobian(frames.head(k)))
                raise
            if k:
                missed = q[k, self.passive] - predicted
            kinematics.record(frames, k)
        jacobians = kinematics.stacked_jacobian(frames)
        pseudo_inverse, projection, condition = self._passive_blocks(jacobians)
        dq = np.einsum("kij,kj->ki", projection, dqa)
        ddq = np.einsum("kij,kj->ki", projection, ddqa)
        drift = kinematics.stacked_drift(self.robot.configuration(q), dq, frames)
        ddq[:, self.passive] -= np.einsum("kij,kj->ki", pseudo_inverse, drift)
        return ClosedLoopMotion(q=q, dq=dq, ddq=ddq, projection=projection, passive_condition=condition)

    def _close(
        self, kinematics: _Kinematics, guess: np.ndarray, sample: int, slope: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Newton on the passive joints from ``guess`` and the predictor of the next sample
        (:meth:`_newton_with_slope`); raises :class:`LoopClosureError` naming ``sample``."""
        q, predictor = self._newton_with_slope(kinematics, guess, self.passive, _MAX_ITERATIONS, slope)
        if q is None:
            raise self._unclosed(kinematics, guess, sample)
        assert predictor is not None  # given a slope, one is returned
        return q, predictor

    def follow(self, q_actuated: np.ndarray, *, start: np.ndarray) -> np.ndarray:
        """The closed configuration at actuated ``q_actuated`` in ``start``'s assembly mode: the loops solved at
        every :data:`~dynamic_identification.core.mechanism.seam.WALK_STEP_RAD` of the straight actuated path from
        ``start`` ([Briot2012] eq. (2)).

        Raises
        ------
        LoopClosureError
            At the first step (its ``sample``) where the loops cannot be closed.
        """
        origin = self._configuration("start", start)
        target = self._configuration("q_actuated", q_actuated, self.n_actuated)
        change = target - origin[self.actuated]
        steps = max(1, int(np.ceil(float(np.max(np.abs(change), initial=0.0)) / WALK_STEP_RAD)))
        path = origin[self.actuated] + np.linspace(0.0, 1.0, steps + 1)[1:, None] * change
        zeros = np.zeros_like(path)
        return self.complete_motion(path, zeros, zeros, q_guess=origin).q[-1]

    # ----------------------------------------------------------------- internals
    def _tree_rates(
        self, kinematics: _Kinematics, q: np.ndarray, block: _PassiveBlock, dqa: np.ndarray, ddqa: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Tree velocities ``q̇_t = J_t q̇_a`` (eq. (3)) and accelerations ``q̈_p = −A_p⁺ (A_a q̈_a + Ȧ_t q̇_t)``
        (eq. (4)) at the closed configuration ``q`` of passive block ``block``; ``kinematics`` is left there."""
        dq = block.projection @ dqa
        ddq = block.projection @ ddqa
        ddq[self.passive] -= block.pseudo_inverse @ kinematics.drift(q, dq)
        return dq, ddq

    def _actuated_change(self, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """``end − start`` of actuated positions ``(..., n_a)``, continuous joints taken the short way round (±π)."""
        change = end - start
        continuous = np.array([self.robot.continuous[j] for j in self.actuated], dtype=bool)
        change[..., continuous] = np.mod(change[..., continuous] + np.pi, 2.0 * np.pi) - np.pi
        return change

    def _walk_to(self, kinematics: _Kinematics, target: np.ndarray) -> np.ndarray:
        """Solve the loops along a straight actuated path from the reference configuration to ``target``."""
        start = np.array(self.reference_configuration, dtype=float)
        change = self._actuated_change(start[self.actuated], target)
        span = float(np.max(np.abs(change), initial=0.0))
        steps = max(1, int(np.ceil(span / _CONTINUATION_STEP_RAD)))
        q = start
        for fraction in np.linspace(0.0, 1.0, steps + 1)[1:]:
            guess = q.copy()
            guess[self.actuated] = start[self.actuated] + fraction * change
            try:
                q, _ = self._solve(kinematics, guess, None)
            except LoopClosureError as error:
                raise LoopClosureError(
                    f"sample 0: the loops cannot be followed from the reference configuration to the first"
                    f" sample q_actuated={target.tolist()} ({error}); pass q_guess",
                    sample=0,
                    residual=error.residual,
                    condition_number=error.condition_number,
                ) from error
        return q

    def _solve(
        self, kinematics: _Kinematics, guess: np.ndarray, sample: int | None
    ) -> tuple[np.ndarray, _PassiveBlock]:
        """Newton on the passive joints, then the passive block at the solution (raises with ``sample``)."""
        q = self._newton(kinematics, guess, self.passive, _MAX_ITERATIONS)
        if q is None:
            raise self._unclosed(kinematics, guess, sample)
        return q, self._passive_block(kinematics.jacobian(), sample, 0.0)

    def _unclosed(self, kinematics: _Kinematics, guess: np.ndarray, sample: int | None) -> LoopClosureError:
        """The error of a Newton solve from ``guess`` that did not close the loops (``kinematics`` is moved there)."""
        kinematics.place(guess)
        residual = float(np.max(np.abs(kinematics.residual())))
        where = "" if sample is None else f"sample {sample}: "
        return LoopClosureError(
            f"{where}the loops cannot be closed for q_actuated={guess[self.actuated].tolist()}"
            f" (Newton on the passive joints does not converge within {_MAX_ITERATIONS} iterations, residual"
            f" {residual:.3g} at the guess): the motion leaves the workspace or crosses a singularity",
            sample=sample,
            residual=residual,
            condition_number=float("nan"),
        )

    def _newton(
        self, kinematics: _Kinematics, start: np.ndarray, free: np.ndarray, iterations: int
    ) -> np.ndarray | None:
        """Newton's method on the joints ``free``; ``None`` if the residual stays above tolerance
        (:meth:`_newton_with_slope` without the slope)."""
        return self._newton_with_slope(kinematics, start, free, iterations, None)[0]

    def _newton_with_slope(
        self,
        kinematics: _Kinematics,
        start: np.ndarray,
        free: np.ndarray,
        iterations: int,
        slope: np.ndarray | None,
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Newton's method on the joints ``free`` from ``start``: the closed configuration, ``None`` if the residual
        stays above tolerance. Given a ``slope``, also ``∂q_free/∂q_a = −A_free⁺ A_a`` at the last step taken
        (``slope`` itself when the start needed none), solved with the step: the predictor of the next sample.

        On success the kinematics of ``kinematics`` are those of the returned configuration.
        """
        q = np.array(start, dtype=float)
        actuated = self.actuated
        for _ in range(iterations + 1):
            kinematics.place(q)
            residual = kinematics.residual()
            largest = np.abs(residual).max()
            if largest <= RESIDUAL_TOLERANCE:
                return q, slope
            if not largest < np.inf:  # NaN or infinite: the maximum is one of them
                return None, slope
            jacobian = kinematics.jacobian()
            if slope is None:
                step = -_newton_step(jacobian[:, free], residual)
            else:
                right = np.empty((residual.size, 1 + actuated.size))
                right[:, 0], right[:, 1:] = residual, jacobian[:, actuated]
                solution = _newton_step(jacobian[:, free], right)
                step, slope = -solution[:, 0], -solution[:, 1:]
            largest = float(abs(step).max())
            if largest > _MAX_STEP_RAD:
                step *= _MAX_STEP_RAD / largest
            q[free] += step
        return None, slope

    def _passive_block(self, jacobian: np.ndarray, sample: int | None, residual: float) -> _PassiveBlock:
        """``A_p⁺`` and ``J_t`` from ``A_t``; refuses a singular passive block (eq. (3) needs ``A_p`` invertible)."""
        u, singular, vt = _svd(jacobian[:, self.passive])
        condition = float(singular[0] / singular[-1]) if singular[-1] > 0.0 else float("inf")
        if not singular[-1] > self.singular_tolerance * singular[0]:
            raise self._singular(condition, sample, residual)
        pseudo_inverse, projection = self._projections(u, singular, vt, jacobian)
        return _PassiveBlock(pseudo_inverse=pseudo_inverse, projection=projection, condition_number=condition)

    def _passive_blocks(self, jacobians: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`_passive_block` of every sample of ``jacobians`` ``(N, m, n_t)`` at once: ``A_p⁺`` ``(N, n_p, m)``,
        ``J_t`` ``(N, n_t, n_a)`` and the condition numbers ``(N,)``; refuses the first singular sample."""
        u, singular, vt = np.linalg.svd(jacobians[:, :, self.passive], full_matrices=False)
        with np.errstate(divide="ignore"):
            condition = np.where(singular[:, -1] > 0.0, singular[:, 0] / singular[:, -1], np.inf)
        regular = singular[:, -1] > self.singular_tolerance * singular[:, 0]
        if not regular.all():
            sample = int(np.argmin(regular))
            raise self._singular(float(condition[sample]), sample, 0.0)
        pseudo_inverse, projection = self._projections(u, singular, vt, jacobians)
        return pseudo_inverse, projection, condition

    def _projections(
        self, u: np.ndarray, singular: np.ndarray, vt: np.ndarray, jacobian: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``A_p⁺`` from the thin SVD ``u, singular, vt`` of the passive block(s) of ``jacobian`` (``A_t``, one
        ``(m, n_t)`` or a stack ``(N, m, n_t)``), and ``J_t`` = ``[I; −A_p⁺ A_a]`` in tree order (eq. (3))."""
        pseudo_inverse = (np.swapaxes(vt, -1, -2) / singular[..., None, :]) @ np.swapaxes(u, -1, -2)
        projection = np.zeros(jacobian.shape[:-2] + (self.n_tree, self.n_actuated))
        projection[..., self.actuated, np.arange(self.n_actuated)] = 1.0
        projection[..., self.passive, :] = -pseudo_inverse @ jacobian[..., self.actuated]
        return pseudo_inverse, projection

    def _singular(self, condition: float, sample: int | None, residual: float) -> LoopClosureError:
        """The error of a passive block of condition number ``condition`` beyond :attr:`singular_tolerance`."""
        where = "" if sample is None else f"sample {sample}: "
        return LoopClosureError(
            f"{where}the mechanism is at a singularity: the passive joints' block of the constraint"
            f" Jacobian has condition number {condition:.3g} (limit {1.0 / self.singular_tolerance:.3g})",
            sample=sample,
            residual=residual,
            condition_number=condition,
        )

    def _configuration(self, name: str, value: np.ndarray, n: int | None = None) -> np.ndarray:
        size = self.n_tree if n is None else n
        array = np.asarray(value, dtype=float)
        if array.shape != (size,):
            raise DataError(f"{name} must have shape ({size},), got {array.shape}")
        if not np.all(np.isfinite(array)):
            raise DataError(f"{name} must be finite, got {array.tolist()}")
        return array

    @staticmethod
    def _motion(name: str, value: np.ndarray, n: int) -> np.ndarray:
        array = np.asarray(value, dtype=float)
        if array.ndim != 2 or array.shape[1] != n or array.shape[0] == 0:
            raise DataError(f"{name} must have shape (N, {n}) with N >= 1, got {array.shape}")
        require_finite_samples(name, array)
        return array


def _actuated_indices(robot: RobotModel, actuated_joints: Sequence[str], urdf_name: str) -> np.ndarray:
    names = list(actuated_joints)
    if not names:
        raise ModelError("robot.actuated_joints is empty: name the motorised joints")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ModelError(f"robot.actuated_joints repeats {repeated}")
    model = robot.model
    for name in names:
        if not isinstance(name, str):
            raise ModelError(f"robot.actuated_joints must hold joint names, got {name!r}")
        if name in robot.joint_names:
            continue
        if model.existFrame(name) and model.frames[model.getFrameId(name)].type == pin.FrameType.FIXED_JOINT:
            raise ModelError(
                f"robot.actuated_joints: {name!r} is a fixed joint of {urdf_name}, not a joint of the tree"
            )
        raise ModelError(
            f"robot.actuated_joints: {name!r} is not a 1-DoF joint of the tree {urdf_name}; its joints are"
            f" {list(robot.joint_names)}"
        )
    position = {name: j for j, name in enumerate(robot.joint_names)}
    return np.array(sorted(position[name] for name in names), dtype=int)


def _rank(matrix: np.ndarray) -> int:
    singular = scipy.linalg.svdvals(matrix)
    if singular.size == 0 or singular[0] == 0.0:
        return 0
    return int(np.count_nonzero(singular > _RANK_TOLERANCE * singular[0]))


def _neutral_positions(robot: RobotModel) -> np.ndarray:
    lower, upper = robot.sampling_position_range()
    return np.where((lower <= 0.0) & (0.0 <= upper), 0.0, 0.5 * (lower + upper))


def _random_positions(robot: RobotModel, rng: np.random.Generator) -> np.ndarray:
    lower, upper = robot.sampling_position_range()
    return rng.uniform(lower, upper)


# --------------------------------------------------------------------- the closed-loop IDIM
@dataclass(frozen=True)
class _Columns:
    """Column indices of the closed-loop standard parameters (:func:`standard_parameter_names`)."""

    inertial: np.ndarray
    """``(n_t, 10)``: the inertial parameters of each tree joint's link."""
    drive: np.ndarray
    """``(n_a, t)``: the drive terms of each actuated joint."""
    passive: np.ndarray
    """``(n_p, f)``: the bearing friction of each passive joint (``f = 0`` without it)."""
    count: int
    """Number of standard parameters."""


def _columns(model: ClosedLoopModel, terms: DriveTerms) -> _Columns:
    """Column indices of the inertial parameters, the drive terms and the passive joints' bearing friction."""
    per_drive = len(terms.names)
    per_bearing = len(model.passive_terms(terms))
    inertial = np.empty((model.n_tree, len(INERTIAL_PARAMETER_NAMES)), dtype=int)
    drive = np.empty((model.n_actuated, per_drive), dtype=int)
    passive = np.empty((model.n_passive, per_bearing), dtype=int)
    motor = {int(j): m for m, j in enumerate(model.actuated)}
    bearing = {int(j): p for p, j in enumerate(model.passive)}
    column = 0
    for j in range(model.n_tree):
        inertial[j] = np.arange(column, column + len(INERTIAL_PARAMETER_NAMES))
        column += len(INERTIAL_PARAMETER_NAMES)
        if j in motor:
            drive[motor[j]] = np.arange(column, column + per_drive)
            column += per_drive
        else:
            passive[bearing[j]] = np.arange(column, column + per_bearing)
            column += per_bearing
    return _Columns(inertial=inertial, drive=drive, passive=passive, count=column)


def standard_parameter_names(model: ClosedLoopModel, terms: DriveTerms) -> tuple[str, ...]:
    """Standard parameters of the closed-loop IDIM, e.g. ``("M1", …, "ZZ1", "Ia1", …, "Fc1", "M2", …)``.

    Per tree joint ``j`` (1-based, kinematic order): the 10 inertial parameters of its
    link, then its drive-chain terms if it is actuated ([Briot2012] eq. (6): ``χ_st``), or its
    bearing friction (:meth:`ClosedLoopModel.passive_terms`) if it is passive.
    """
    actuated = {int(j) for j in model.actuated}
    bearing = model.passive_terms(terms)
    names: list[str] = []
    for j in range(model.n_tree):
        names.extend(f"{name}{j + 1}" for name in INERTIAL_PARAMETER_NAMES)
        names.extend(f"{name}{j + 1}" for name in (terms.names if j in actuated else bearing))
    return tuple(names)


def standard_parameters(
    model: ClosedLoopModel,
    terms: DriveTerms,
    drive: DriveParameters | None = None,
    *,
    passive_viscous: Sequence[float] | np.ndarray | None = None,
    passive_coulomb: Sequence[float] | np.ndarray | None = None,
) -> np.ndarray:
    """Standard-parameter vector: the URDF's inertial parameters, the actuated joints' drive terms and the passive
    joints' bearing friction.

    Ordered as :func:`standard_parameter_names`; ``drive`` holds one value per actuated
    joint (kinematic order), ``passive_viscous`` (N·m·s/rad) and ``passive_coulomb`` (N·m)
    one per passive joint; zero when omitted.
    """
    drive = drive if drive is not None else DriveParameters.create(model.n_actuated)
    if drive.rotor_inertia.shape[0] != model.n_actuated:
        raise ModelError(
            f"drive has {drive.rotor_inertia.shape[0]} joints, the mechanism has {model.n_actuated} actuated joints"
        )
    bearing = {
        "Fv": passive_joint_values(model, "passive_viscous", passive_viscous),
        "Fc": passive_joint_values(model, "passive_coulomb", passive_coulomb),
    }
    columns = _columns(model, terms)
    out = np.empty(columns.count)
    out[columns.inertial] = model.robot.standard_inertial_parameters()
    out[columns.drive] = drive.values(terms)
    for t, name in enumerate(model.passive_terms(terms)):
        out[columns.passive[:, t]] = bearing[name]
    return out


def passive_joint_values(model: ClosedLoopModel, name: str, value: Sequence[float] | np.ndarray | None) -> np.ndarray:
    """``value`` as one finite number per passive joint, kinematic order (zeros when ``None``).

    Raises
    ------
    ModelError
        Naming ``name`` when ``value`` has another length or a non-finite entry.
    """
    if value is None:
        return np.zeros(model.n_passive)
    array = np.asarray(value, dtype=float)
    if array.shape != (model.n_passive,) or not np.all(np.isfinite(array)):
        raise ModelError(
            f"{name} must hold {model.n_passive} finite values (passive joints {list(model.passive_joint_names)}),"
            f" got {np.asarray(value).tolist()}"
        )
    return array


def passive_friction_torques(
    model: ClosedLoopModel,
    dq_passive: np.ndarray,
    *,
    viscous: Sequence[float] | np.ndarray | None,
    coulomb: Sequence[float] | np.ndarray | None,
    coulomb_smoothing_rad_s: float = 0.0,
) -> np.ndarray:
    """Bearing-friction torques of the passive joints, ``Fv q̇_p + Fc sign(q̇_p)`` in N·m, shape ``(N, n_p)``.

    ``viscous`` (N·m·s/rad) and ``coulomb`` (N·m) per passive joint; with
    ``coulomb_smoothing_rad_s`` ``ε > 0`` the sign is ``tanh(q̇_p / ε)`` (a simulation's).
    """
    velocity = np.asarray(dq_passive, dtype=float)
    fv = passive_joint_values(model, "viscous", viscous)
    fc = passive_joint_values(model, "coulomb", coulomb)
    sign = np.tanh(velocity / coulomb_smoothing_rad_s) if coulomb_smoothing_rad_s > 0.0 else np.sign(velocity)
    return fv * velocity + fc * sign


def observation_matrix(
    model: ClosedLoopModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    q: np.ndarray,
    dq: np.ndarray,
    ddq: np.ndarray,
    *,
    projection: np.ndarray | None = None,
) -> np.ndarray:
    """Closed-loop IDIM in the standard parameters, shape ``(N, n_a, p)`` ([Briot2012] eq. (6)).

    ``J_tᵀ`` times the tree's inertial IDIM (``computeJointTorqueRegressor``, eq. (1)),
    plus the drive-chain columns (rotor inertia, viscous and Coulomb friction, offset)
    of the actuated joints and, with :attr:`ClosedLoopModel.passive_friction`, ``J_tᵀ`` times
    the passive joints' bearing-friction columns (``q̇_p`` and ``sign(q̇_p)`` in the passive
    joint's row of the tree, zero elsewhere); columns follow :func:`standard_parameter_names`.

    Parameters
    ----------
    q, dq, ddq
        Consistent tree motion ``(N, n_t)`` (rad, rad/s, rad/s²), e.g. from
        :meth:`ClosedLoopModel.complete_motion`.
    projection
        ``J_t`` per sample ``(N, n_t, n_a)`` when already known (``complete_motion``
        returns it); computed otherwise, and then positions and velocities are checked
        against the loop closures.

    Raises
    ------
    DataError
        On bad shapes, or (without ``projection``) at the first sample whose motion does
        not satisfy the loop closures.
    LoopClosureError
        At a singular sample.
    """
    if drive_chain.n_joints != model.n_actuated:
        raise ModelError(
            f"drive chain has {drive_chain.n_joints} joints, the mechanism has {model.n_actuated} actuated joints"
        )
    n_t, n_a = model.n_tree, model.n_actuated
    q = ClosedLoopModel._motion("q", q, n_t)
    dq = ClosedLoopModel._motion("dq", dq, n_t)
    ddq = ClosedLoopModel._motion("ddq", ddq, n_t)
    if not q.shape == dq.shape == ddq.shape:
        raise DataError(f"q, dq, ddq differ in shape: {q.shape}, {dq.shape}, {ddq.shape}")
    samples = q.shape[0]
    if projection is None:
        matrices = _checked_projection(model, q, dq)
    else:
        matrices = np.asarray(projection, dtype=float)
        if matrices.shape != (samples, n_t, n_a):
            raise DataError(f"projection must have shape {(samples, n_t, n_a)}, got {matrices.shape}")
    tree = inertial_observation_matrix(model.robot, q, dq, ddq)
    columns = _columns(model, terms)
    out = np.zeros((samples, n_a, columns.count))
    out[:, :, columns.inertial.ravel()] = np.einsum("kta,ktp->kap", matrices, tree)
    if terms.names:
        actuated = model.actuated
        out[:, :, columns.drive.ravel()] = drive_observation_matrix(
            drive_chain, terms, dq[:, actuated], ddq[:, actuated]
        )
    passive_velocity = dq[:, model.passive]
    bearing = {"Fv": passive_velocity, "Fc": np.sign(passive_velocity)}
    for t, name in enumerate(model.passive_terms(terms)):
        # The passive joint's virtual torque, projected: J_t[p]ᵀ signal_p per passive joint p.
        out[:, :, columns.passive[:, t]] = matrices[:, model.passive, :].transpose(0, 2, 1) * bearing[name][:, None, :]
    return out


def _checked_projection(model: ClosedLoopModel, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
    kinematics = _Kinematics(model)
    out = np.empty((q.shape[0], model.n_tree, model.n_actuated))
    for k in range(q.shape[0]):
        kinematics.place(q[k])
        residual = float(np.max(np.abs(kinematics.residual())))
        if residual > _CONSISTENCY_TOLERANCE:
            raise DataError(
                f"q at sample {k} does not close the loops (residual {residual:.3g} > {_CONSISTENCY_TOLERANCE:g}):"
                " complete the actuated motion with ClosedLoopModel.complete_motion"
            )
        jacobian = kinematics.jacobian()
        velocity_error = float(np.max(np.abs(jacobian @ dq[k])))
        scale = 1.0 + float(np.max(np.abs(jacobian))) * float(np.max(np.abs(dq[k])))
        if velocity_error > _CONSISTENCY_TOLERANCE * scale:
            raise DataError(
                f"dq at sample {k} violates the loop closures (|A_t dq| = {velocity_error:.3g}):"
                " complete the actuated motion with ClosedLoopModel.complete_motion"
            )
        out[k] = model._passive_block(jacobian, k, residual).projection
    return out


def random_motion(model: ClosedLoopModel, samples: int, rng: np.random.Generator) -> ClosedLoopMotion:
    """Random consistent states: assembled positions, actuated ``q̇ ∈ [−2, 2]``, ``q̈ ∈ [−5, 5]`` completed.

    Positions are assembled from uniform draws in the joint ranges (±π where
    unbounded) with minimum-norm Newton steps, so they need not lie within the joint
    ranges. Configurations whose passive block has a condition number of at most 100
    are preferred; when too few of them are found in ``20 · samples`` draws, the best
    conditioned of the others (still non-singular) complete the set. Used for the base
    parameters and for tests.

    Raises
    ------
    ModelError
        When fewer than ``samples`` non-singular configurations are found.
    """
    if isinstance(samples, bool) or not isinstance(samples, int | np.integer) or samples < 1:
        raise ModelError(f"samples must be an integer >= 1, got {samples!r}")
    kinematics = _Kinematics(model)
    good: list[tuple[float, np.ndarray, _PassiveBlock]] = []
    fallback: list[tuple[float, np.ndarray, _PassiveBlock]] = []
    for _ in range(20 * samples):
        if len(good) == samples:
            break
        configuration = model._newton(
            kinematics, _random_positions(model.robot, rng), np.arange(model.n_tree), _MAX_ITERATIONS
        )
        if configuration is None:
            continue
        try:
            block = model._passive_block(kinematics.jacobian(), None, 0.0)
        except LoopClosureError:
            continue
        bucket = good if block.condition_number <= _SAMPLING_CONDITION else fallback
        bucket.append((block.condition_number, configuration, block))
    chosen = good + sorted(fallback, key=lambda entry: entry[0])[: samples - len(good)]
    if len(chosen) < samples:
        raise ModelError(
            f"only {len(chosen)} of {samples} random configurations could be assembled away from singularities"
        )
    n_a = model.n_actuated
    q = np.empty((samples, model.n_tree))
    dq = np.empty_like(q)
    ddq = np.empty_like(q)
    projection = np.empty((samples, model.n_tree, n_a))
    for k, (_, configuration, block) in enumerate(chosen):
        q[k] = configuration
        projection[k] = block.projection
        dqa = rng.uniform(-2.0, 2.0, n_a)
        dq[k], ddq[k] = model._tree_rates(kinematics, configuration, block, dqa, rng.uniform(-5.0, 5.0, n_a))
    return ClosedLoopMotion(q=q, dq=dq, ddq=ddq, projection=projection)


def base_parameters(
    model: ClosedLoopModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    *,
    samples: int = 200,
    seed: int = 0,
    tolerance: float = 1e-8,
) -> BaseParameters:
    """Numerical base parameters of the closed-loop IDIM ([Briot2012] eq. (7)).

    The closed-loop observation matrix of ``samples`` random consistent states
    (:func:`random_motion`) is factorised by
    :func:`~dynamic_identification.core.regressors.idim.base_parameters_from_samples`
    (QR in a preferred column order, regrouping of the dependent columns). The loop
    closures add dependencies the tree does not have, so these differ from the base
    parameters of the opened tree. The result applies to the estimators of
    :mod:`dynamic_identification.core.estimation` unchanged.
    """
    motion = random_motion(model, samples, np.random.default_rng(seed))
    sampled = observation_matrix(
        model, drive_chain, terms, motion.q, motion.dq, motion.ddq, projection=motion.projection
    )
    return base_parameters_from_samples(sampled, standard_parameter_names(model, terms), tolerance=tolerance)
