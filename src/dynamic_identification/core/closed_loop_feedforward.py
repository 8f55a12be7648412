"""Model-based feedforward of a closed-loop (parallel) robot: actuated torques along a desired actuated motion.

A parallel robot's controller commands its actuated joints. For desired actuated
``q_a, q̇_a, q̈_a`` the passive motion is completed from the loop closures ([Briot2012]
eq. (2)-(4): Newton on the passive positions, warm-started from the previous sample;
``q̇_t = J_t q̇_a``; ``q̈_p = −A_p⁺ (A_a q̈_a + Ȧ_t q̇_t)``), the opened tree's virtual torques
``τ_tree = φ_tree(q_t, q̇_t, q̈_t) χ_tree`` (Pinocchio's ``computeJointTorqueRegressor`` times
the identified inertial parameters; plus a carried payload's ``Y_p φ_p``) are projected onto
the motors, and the drive terms added ([Briot2012] eq. (6)):

``τ_act = J_tᵀ τ_tree + Cᵀ (Ia ⊙ (C q̈_a) + Fv ⊙ v + Fc ⊙ tanh(k v) + off)``, ``v = C q̇_a``,

with the Coulomb term smoothed as for a serial robot ([Volkmann2020] §IV.C,
:mod:`~dynamic_identification.core.feedforward`). Where ``|k v| ≫ 1`` this equals
:func:`~dynamic_identification.core.closed_loop_identification.closed_loop_torques`.

:class:`ClosedLoopFeedforwardModel` has the surface of the serial
:class:`~dynamic_identification.core.feedforward.FeedforwardModel` (joints, limits,
:meth:`~ClosedLoopFeedforwardModel.evaluate`), its joints being the actuated ones. It keeps
the last completed configuration to warm-start the next sample, so it is not thread-safe:
one instance per thread.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pinocchio as pin

from dynamic_identification.core.closed_loop import (
    ClosedLoopModel,
    ClosedLoopMotion,
    LoopClosureError,
    standard_parameter_names,
    tree_values,
)
from dynamic_identification.core.errors import ModelError
from dynamic_identification.core.feedforward import FEEDFORWARD_ACCELERATION_PER_VELOCITY_HZ, FeedforwardBase
from dynamic_identification.core.model import INERTIAL_PARAMETER_NAMES, DriveTerms, RobotModel, limit_bounds

WALK_STEP_RAD = 0.05
"""Largest change of an actuated position (rad) between two solves of the closures: a desired state farther
from the last one is reached by walking there, so the assembly mode is kept."""


class ClosedLoopFeedforwardModel(FeedforwardBase[ClosedLoopModel]):
    """Actuated torques of an identified closed-loop model for desired actuated ``q, q̇, q̈`` (module docstring).

    Parameters
    ----------
    model
        The closed-loop mechanism (opened tree, closures, actuated joints).
    drive_chain
        Drive chain of the actuated joints (its coupling defines the motor velocities ``v``).
    terms
        The drive-chain terms of the identified model.
    names, values
        Closed-loop standard-parameter names (:func:`~dynamic_identification.core.closed_loop.standard_parameter_names`:
        ``ZZ2`` is the inertia of the tree's second joint, ``Fc1`` the Coulomb friction of an
        actuated joint) and their values in SI units; base parameters carry the name of their
        independent column.
    friction_smoothing
        ``k`` > 0 of ``tanh(k v)``, s/rad.
    identified
        Per actuated joint, whether the identification had equations for it; ``None``: all.
        A joint it had none for gets no feedforward torque.
    effort_limits
        Torques are clamped to ``±effort_limits`` (N·m), one per actuated joint or per tree
        joint; default the URDF's.
    acceleration_limits
        Desired actuated accelerations beyond these (rad/s², with
        :data:`~dynamic_identification.core.feedforward.DESIRED_STATE_TOLERANCE`) are clamped to
        them, sample by sample; default
        :data:`~dynamic_identification.core.feedforward.FEEDFORWARD_ACCELERATION_PER_VELOCITY_HZ`
        (10 /s) times the URDF velocity limits.
    payload
        A load fixed to a frame of the opened tree (the platform's): its torques
        ``J_tᵀ Y_p φ_p`` are added ([Briot2012] eq. (11)).

    Raises
    ------
    ModelError
        If a name is not a standard parameter of the mechanism, names repeat, sizes disagree,
        a value is beyond :data:`~dynamic_identification.core.feedforward.MAX_PARAMETER_MAGNITUDE`,
        or ``friction_smoothing`` is not finite and positive.
    """

    _controlled_joint = "actuated joint"

    _last: np.ndarray | None = None
    """The tree configuration of the last desired sample, which warm-starts the next one (``None``: none yet)."""
    _bearing: dict[str, np.ndarray]
    """Viscous (``"Fv"``, N·m·s/rad) and Coulomb (``"Fc"``, N·m) friction of each passive joint's bearing."""

    def _controlled_joints(self) -> int:
        return self._mechanism.n_actuated

    def _tree(self) -> RobotModel:
        return self._mechanism.robot

    def _standard_values(
        self, terms: DriveTerms, names: tuple[str, ...], values: np.ndarray
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        mechanism = self._mechanism
        position = {name: i for i, name in enumerate(standard_parameter_names(mechanism, terms))}
        unknown = [name for name in names if name not in position]
        if unknown:
            raise ModelError(
                f"parameters {unknown[:6]} are not standard parameters of this closed-loop model"
                f" ({mechanism.n_tree} tree joints, actuated {list(mechanism.actuated_joint_names)}, {terms})"
            )
        inertial = np.zeros(mechanism.n_tree * len(INERTIAL_PARAMETER_NAMES))
        drive = {term: np.zeros(mechanism.n_actuated) for term in ("Ia", "Fv", "Fc", "off")}
        # The passive joints' bearing friction (ClosedLoopModel.passive_friction), a virtual tree torque.
        self._bearing = {term: np.zeros(mechanism.n_passive) for term in ("Fv", "Fc")}
        actuated_index = {int(j) + 1: m for m, j in enumerate(mechanism.actuated)}
        passive_index = {int(j) + 1: p for p, j in enumerate(mechanism.passive)}
        for name, value in zip(names, values, strict=True):
            kind = name.rstrip("0123456789")
            joint = int(name[len(kind) :])
            if kind in INERTIAL_PARAMETER_NAMES:
                inertial[(joint - 1) * len(INERTIAL_PARAMETER_NAMES) + INERTIAL_PARAMETER_NAMES.index(kind)] = value
            elif joint in passive_index:
                self._bearing[kind][passive_index[joint]] = value
            else:
                drive[kind][actuated_index[joint]] = value
        return inertial, drive

    def _joint_limits(
        self,
        effort_limits: Sequence[float] | np.ndarray | None,
        acceleration_limits: Sequence[float] | np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        mechanism = self._mechanism
        robot, actuated = mechanism.robot, mechanism.actuated
        return (
            _limits(
                tree_values(mechanism, "effort_limits", effort_limits, robot.effort_limits)[actuated], "effort_limits"
            ),
            _limits(robot.velocity_limits[actuated], "velocity_limits"),
            _limits(
                tree_values(
                    mechanism,
                    "acceleration_limits",
                    acceleration_limits,
                    FEEDFORWARD_ACCELERATION_PER_VELOCITY_HZ * robot.velocity_limits,
                )[actuated],
                "acceleration_limits",
            ),
        )

    @property
    def joint_names(self) -> tuple[str, ...]:
        """The actuated joints, in the order of the torque columns (the tree's kinematic order)."""
        return self._mechanism.actuated_joint_names

    def _model_torques(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, single: bool) -> np.ndarray:
        q_rows, dq_rows, ddq_rows = (q[None], dq[None], ddq[None]) if single else (q, dq, ddq)
        motion = self._complete(q_rows, dq_rows, ddq_rows)
        samples = int(q_rows.shape[0])
        raw = np.empty((samples, self.n_joints))
        for k in range(samples):
            raw[k] = self._one(motion, k, dq_rows[k], ddq_rows[k])
        return raw[0] if single else raw

    def _complete(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> ClosedLoopMotion:
        """The tree motion of desired actuated samples, in the assembly mode of the last one (or the reference)."""
        model = self._mechanism
        guess = self._last
        if guess is not None and float(np.max(np.abs(q[0] - guess[model.actuated]))) > WALK_STEP_RAD:
            guess = self._walk(guess, q[0])
        try:
            motion = model.complete_motion(q, dq, ddq, q_guess=guess)
        except LoopClosureError:
            if guess is None:
                raise
            # The last configuration is no start for this one (a jump): solve it from the reference instead.
            motion = model.complete_motion(q, dq, ddq)
        self._last = motion.q[-1].copy()
        return motion

    def _walk(self, start: np.ndarray, target: np.ndarray) -> np.ndarray | None:
        """The configuration at actuated ``target``, walked there from ``start``; ``None`` when that fails."""
        actuated = self._mechanism.actuated
        steps = int(np.ceil(float(np.max(np.abs(target - start[actuated]))) / WALK_STEP_RAD))
        path = start[actuated] + np.linspace(0.0, 1.0, steps + 1)[1:, None] * (target - start[actuated])
        zeros = np.zeros_like(path)
        try:
            return self._mechanism.complete_motion(path, zeros, zeros, q_guess=start).q[-1]
        except LoopClosureError:
            return None

    def _one(self, motion: ClosedLoopMotion, k: int, dq_a: np.ndarray, ddq_a: np.ndarray) -> np.ndarray:
        """Actuated torques of sample ``k`` of the completed motion."""
        torque = self._drive_torques(dq_a, ddq_a)
        q_t, dq_t, ddq_t = motion.q[k], motion.dq[k], motion.ddq[k]
        tree = np.zeros(self._mechanism.n_tree)
        if self._has_inertial:
            robot = self._mechanism.robot
            configuration = robot.configurations(q_t[None])[0] if self._continuous else q_t
            regressor = pin.computeJointTorqueRegressor(robot.model, self._data, configuration, dq_t, ddq_t)
            tree = regressor @ self._inertial
        if self._payload_dynamics is not None and self._payload_parameters is not None:
            tree = tree + self._payload_dynamics.torques(q_t, dq_t, ddq_t, self._payload_parameters)
        if self._mechanism.passive_friction:
            dq_p = dq_t[self._mechanism.passive]
            tree[self._mechanism.passive] += self._bearing["Fv"] * dq_p + self._bearing["Fc"] * np.tanh(self._k * dq_p)
        torque = torque + motion.jacobians[k].T @ tree
        return np.where(self._identified, torque, 0.0)


def _limits(values: np.ndarray, name: str) -> np.ndarray:
    """Per-joint limits as bounds (:func:`~dynamic_identification.core.model.limit_bounds`).

    Raises
    ------
    ModelError
        If they are not one value per joint.
    """
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise ModelError(f"{name} must be one value per joint, got {array.tolist()}")
    return limit_bounds(array)


__all__ = ["WALK_STEP_RAD", "ClosedLoopFeedforwardModel"]
