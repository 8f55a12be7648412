"""Model-based feedforward: joint torques of the identified model along a desired motion.

The identified model predicts ``τ = W_st(q, q̇, q̈)[:, names] @ values`` ([Gautier2013]
eq. (4); a base parameter is named after its independent standard column, see
:func:`~dynamic_identification.core.identification.predict_torques`). For the
feedforward of a controller ([Volkmann2020] §IV.C, Fig. 3) the Coulomb column
``sign(v_m)`` is replaced by the "practically more stable" ``tanh(k v_m)`` with
``k = 1000`` s/rad, so the torque command is continuous through velocity
reversals and at rest (where it is gravity plus offsets).

:class:`FeedforwardModel` is built for one sample at a controller's rate: it
keeps one Pinocchio ``Data``, evaluates ``computeJointTorqueRegressor`` only when
an inertial parameter is present, and multiplies by a precomputed standard
parameter vector (zeros for the columns the model does not have), so one call
costs a few tens of microseconds. It is not thread-safe (the ``Data`` is shared);
use one instance per thread.

The model is built on a :class:`~dynamic_identification.core.mechanism.seam.Mechanism`. A serial robot's
(a :class:`~dynamic_identification.core.mechanism.robot.RobotModel`, every joint controlled) takes the joints'
desired states as they are. A closed-loop (parallel) robot's controller commands its actuated joints:
for desired actuated ``q_a, q̇_a, q̈_a`` the passive motion is completed from the loop closures
([Briot2012] eq. (2)-(4), :meth:`~dynamic_identification.core.mechanism.seam.Mechanism.complete_motion`,
warm-started from the previous desired sample), and the opened tree's torques are projected onto the
actuated joints, ``τ_a = J_tᵀ τ_tree`` plus the drive terms ([Briot2012] eq. (6)); the model then keeps
the last completed configuration, one more reason for one instance per thread.

A model is refused on construction when it fails the plausibility gates of ``dynid identify`` and the estimator
(:func:`check_plausible`): a
feedforward of a model no real robot could have would only push the drives to their effort limits.

File loading lives one layer up, in :mod:`dynamic_identification.feedforward`
(``FeedforwardModel.from_yaml(path)``).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pinocchio as pin

from dynamic_identification.core.errors import DataError, ModelError
from dynamic_identification.core.mechanism.closed_loop import LoopClosureError
from dynamic_identification.core.mechanism.payload import Payload, PayloadDynamics
from dynamic_identification.core.mechanism.plausibility import (
    DEFAULT_EFFORT_FACTOR,
    DEFAULT_MASS_FACTOR,
    PlausibilityBounds,
    check_model,
    mechanism_bounds,
)
from dynamic_identification.core.mechanism.robot import (
    INERTIAL_PARAMETER_NAMES,
    DriveChain,
    DriveTerms,
    RobotModel,
    limit_bounds,
)
from dynamic_identification.core.mechanism.seam import WALK_STEP_RAD, Mechanism, TreeMotion, mechanism_of, tree_values
from dynamic_identification.core.settings_schema import default

_Model = TypeVar("_Model", bound="FeedforwardModel")

DEFAULT_FRICTION_SMOOTHING: float = default("friction_smoothing", "feedforward")
"""``k`` of the Coulomb feedforward ``Fc tanh(k v)``, s/rad ([Volkmann2020] §IV.C)."""

MAX_PARAMETER_MAGNITUDE = 1e9
"""Largest ``|value|`` (SI units) of a parameter a feedforward accepts: nothing physical is larger, and
products of larger values with states within the limits can overflow."""


def checked_parameters(
    names: Sequence[str], values: Sequence[float] | np.ndarray
) -> tuple[tuple[str, ...], np.ndarray]:
    """``names`` and ``values`` of a feedforward's parameters, checked: as many values as names, finite,
    within :data:`MAX_PARAMETER_MAGNITUDE`, no name twice.

    Raises
    ------
    ModelError
        Naming the first offending parameter.
    """
    named = tuple(names)
    values_array = np.asarray(values, dtype=float).ravel()
    if values_array.shape[0] != len(named):
        raise ModelError(f"values has {values_array.shape[0]} entries, names has {len(named)}")
    if not np.all(np.isfinite(values_array)):
        raise ModelError(f"values must be finite, got {values_array.tolist()}")
    huge = np.abs(values_array) > MAX_PARAMETER_MAGNITUDE
    if huge.any():
        index = int(np.argmax(huge))
        raise ModelError(
            f"parameter {named[index]} = {values_array[index]:.6g} is beyond {MAX_PARAMETER_MAGNITUDE:g}"
            " in SI units: no physical model, and its torques would overflow"
        )
    if len(set(names)) != len(named):
        raise ModelError(f"parameter names repeat: {list(named)}")
    return named, values_array


def check_plausible(
    mechanism: RobotModel | Mechanism,
    names: Sequence[str],
    values: Sequence[float] | np.ndarray,
    *,
    effort_limits: Sequence[float] | np.ndarray | None = None,
    acceleration_limits: Sequence[float] | np.ndarray | None = None,
    effort_factor: float = DEFAULT_EFFORT_FACTOR,
    mass_factor: float = DEFAULT_MASS_FACTOR,
) -> PlausibilityBounds:
    """The plausibility gates of ``dynid identify`` and the estimator, applied to a model a feedforward is given.

    The bounds come from where the estimator takes them
    (:func:`~dynamic_identification.core.mechanism.plausibility.mechanism_bounds`): the URDF, the configured
    ``limits.effort`` and ``limits.acceleration`` (``None``: the URDF's effort limits and the estimator's
    default acceleration limits, not the feedforward's more generous clamp) and ``plausibility.*``
    (``effort_factor``, ``mass_factor``). Every parameter gate applies: ``|Fc|``, ``|off|``, ``|Fv| v_max``,
    ``|Ia| a_max`` within ``effort_factor`` effort limits (a negative viscous friction that large, or a Coulomb
    friction no drive can overcome, puts every torque at the limits) and the inertial parameters within what
    ``mass_factor`` times the URDF's mass can produce at its reach.

    The gate on the peak torque predicted on the identification data is not repeated: that data is not in the
    file, and the writers (``dynid identify`` without ``--accept-implausible``, the estimator) applied it.
    A peak over configurations of this function's choosing would judge a model where it was never identified
    (a reduced model's offset absorbs the gravity of a joint that barely moved, right only near where it
    moved) and refuse models that serve their trajectory well; the torques along the trajectory actually fed
    forward are bounded sample by sample instead (clamped to the effort limits and reported,
    :meth:`FeedforwardModel.evaluate`).

    Returns
    -------
    PlausibilityBounds
        The bounds the model passed.

    Raises
    ------
    ImplausibleModelError
        Listing every gate the model fails (an ``IdentificationError``).
    IdentificationError
        A limit list of another length, or a factor below 1.
    """
    bounds = mechanism_bounds(
        mechanism,
        effort_limits=effort_limits,
        acceleration_limits=acceleration_limits,
        effort_factor=effort_factor,
        mass_factor=mass_factor,
    )
    check_model(bounds, names, values, hint="refused by the feedforward: plausibility.* and limits.effort")
    return bounds


DESIRED_STATE_TOLERANCE = 0.01
"""Desired velocities and accelerations may exceed their limits by this fraction (the overshoot of an
interpolation between points at the limit) before they are clamped."""

FEEDFORWARD_ACCELERATION_PER_VELOCITY_HZ = 10.0
"""Default acceleration limit of the feedforward, 1/s times the URDF velocity limit (a URDF has no acceleration
limit): a joint reaching its velocity limit from rest in 0.1 s. The excitation's default, 4 /s
(:data:`~dynamic_identification.core.excitation.safety.DEFAULT_ACCELERATION_PER_VELOCITY_HZ`), is a planning
margin for motions the robot is asked to make, not what its drives can do: a Franka Panda's maker allows 3.4-7.7 /s
(7.5-20 rad/s²; panda_joint3: 10 rad/s², where 4 /s gives 8.7), which 10 /s covers. The bound only guards
against a runaway command; ``limits.acceleration`` gives the robot's own limits."""


@dataclass(frozen=True)
class FeedforwardTorques:
    """Bounded feedforward torques of desired states, sample by sample.

    Attributes
    ----------
    torques
        N·m, ``(n,)`` or ``(N, n)``: finite, within the effort limits.
    clamped
        Which torques were clamped to the effort limits (the shape of ``torques``).
    limited
        Which desired velocities or accelerations were beyond their limits (the shape of
        ``torques``, per joint): that sample's torques are those of its state clamped to the
        limits, never extrapolated; the other samples are computed as given.
    problem
        The first limited sample, described (joint, quantity, value, sample, limit); empty
        when none was.
    """

    torques: np.ndarray
    clamped: np.ndarray
    limited: np.ndarray
    problem: str = ""


class FeedforwardModel:
    """Torques of the controlled joints of an identified model for their desired ``q, q̇, q̈``.

    ``τ = J_tᵀ Y(q_t, q̇_t, q̈_t) χ_in + Cᵀ (Ia ⊙ (C q̈) + Fv ⊙ v + Fc ⊙ tanh(k v) + off)``, ``v = C q̇``,

    where ``Y`` is Pinocchio's joint-torque regressor of the mechanism's tree at its motion
    ``(q_t, q̇_t, q̈_t)`` completed from the controlled joints' (``J_t = I`` for a serial
    robot; module docstring), and ``χ_in``, ``Ia``, ``Fv``, ``Fc``, ``off`` hold the given
    base-parameter values at their standard columns and zeros elsewhere ([Gautier2013]
    eq. (2)-(4), (26); [Briot2012] eq. (6); [Volkmann2020] §IV.C). Where ``|k v| ≫ 1`` this
    equals :func:`~dynamic_identification.core.identification.predict_torques`.

    Parameters
    ----------
    robot
        The robot: a serial robot's model, joints in the order of the parameter file, or a
        :class:`~dynamic_identification.core.mechanism.seam.Mechanism` (e.g. a closed-loop
        robot's :class:`~dynamic_identification.core.mechanism.closed_loop.ClosedLoopModel`).
    drive_chain
        Drive chain of the controlled joints (its coupling defines the motor velocities ``v``).
    terms
        The drive-chain terms of the identified model.
    names
        Parameter names, each a standard parameter name of the mechanism and ``terms``
        (:meth:`~dynamic_identification.core.mechanism.seam.Mechanism.standard_parameter_names`:
        ``"ZZ1"``, ``"MX2"``, ``"Fc3"``, ...; ``ZZ2`` is the inertia of the tree's second
        joint); base parameters carry the name of their independent column.
    values
        Values of ``names`` in SI units, same length.
    friction_smoothing
        ``k`` > 0 of ``tanh(k v)``, s/rad.
    identified
        Per controlled joint, whether the identification had equations for it; ``None``: all.
        A joint it had none for (it never moved, e.g. a wrist the process holds
        still) gets no feedforward torque: nothing in the data validates the
        model's torque for it, and its PD controller holds it as before.
    effort_limits
        Each torque is clamped to ``±effort_limits`` (N·m), one per controlled joint or per
        tree joint; default the URDF's. A non-positive or non-finite entry means unknown:
        that joint is not clamped.
    acceleration_limits
        Desired accelerations beyond these (rad/s², with :data:`DESIRED_STATE_TOLERANCE`)
        are clamped to them, sample by sample (:meth:`evaluate`); one per controlled joint or
        per tree joint; default :data:`FEEDFORWARD_ACCELERATION_PER_VELOCITY_HZ` (10 /s) times
        the URDF velocity limits, generous: a URDF has no acceleration limit, and the
        excitation's 4 /s is a planning margin, not the drives' limit. Desired velocities are
        clamped to the URDF's velocity limits alike.
    payload
        A load carried on one of the tree's frames (identified by ``dynid payload`` or
        the estimator's ``~/identify_payload``, [Swevers2002]; a closed-loop robot's
        platform): its rigid-body torques ``J_tᵀ Y_p(q_t, q̇_t, q̈_t) φ_p`` are added to every
        joint the identification covers ([Briot2012] eq. (11)).
    effort_factor, mass_factor
        ``plausibility.effort_factor`` and ``plausibility.mass_factor`` of the gates the model must
        pass (:func:`check_plausible`, with ``effort_limits`` and ``acceleration_limits``).

    Raises
    ------
    ModelError
        If a name is not a standard parameter of the mechanism, names repeat, the
        sizes disagree, a value is beyond :data:`MAX_PARAMETER_MAGNITUDE`,
        ``friction_smoothing`` is not finite and positive, or a limit or the ``identified``
        mask has another size.
    ImplausibleModelError
        If the model fails a plausibility gate (:func:`check_plausible`), listing every one.
    """

    _last: np.ndarray | None = None
    """The tree configuration of the last desired sample, which warm-starts the next one (``None``: none yet)."""

    def __init__(
        self,
        robot: RobotModel | Mechanism,
        drive_chain: DriveChain,
        terms: DriveTerms,
        names: Sequence[str],
        values: Sequence[float] | np.ndarray,
        *,
        friction_smoothing: float = DEFAULT_FRICTION_SMOOTHING,
        identified: Sequence[bool] | np.ndarray | None = None,
        effort_limits: Sequence[float] | np.ndarray | None = None,
        acceleration_limits: Sequence[float] | np.ndarray | None = None,
        payload: Payload | None = None,
        effort_factor: float = DEFAULT_EFFORT_FACTOR,
        mass_factor: float = DEFAULT_MASS_FACTOR,
    ) -> None:
        mechanism = mechanism_of(robot)
        self._mechanism = mechanism
        self._closures = bool(mechanism.closures)
        joints = mechanism.n_actuated
        kind = "actuated joint" if mechanism.n_actuated < mechanism.n_tree else "joint"
        mask = np.ones(joints, dtype=bool) if identified is None else np.asarray(identified, dtype=bool).ravel()
        if mask.shape != (joints,):
            raise ModelError(f"identified must have one flag per {kind} ({joints}), got {mask.shape[0]}")
        if drive_chain.n_joints != joints:
            raise ModelError(f"drive chain has {drive_chain.n_joints} joints, the model has {joints} {kind}s")
        if not (np.isfinite(friction_smoothing) and friction_smoothing > 0.0):
            raise ModelError(f"friction_smoothing must be finite and > 0 (s/rad), got {friction_smoothing}")
        checked_names, values_array = checked_parameters(names, values)
        inertial, drive, bearing = _standard_values(mechanism, terms, checked_names, values_array)
        tree = mechanism.robot
        effort = tree_values(mechanism, "effort_limits", effort_limits, tree.effort_limits)
        acceleration = tree_values(
            mechanism,
            "acceleration_limits",
            acceleration_limits,
            FEEDFORWARD_ACCELERATION_PER_VELOCITY_HZ * tree.velocity_limits,
        )
        # The gates take the limits as configured: unset acceleration limits are the estimator's default there.
        self._plausibility = check_plausible(
            mechanism,
            checked_names,
            values_array,
            effort_limits=effort_limits,
            acceleration_limits=acceleration_limits,
            effort_factor=effort_factor,
            mass_factor=mass_factor,
        )
        self._drive_chain = drive_chain
        self._terms = terms
        self._names = checked_names
        self._values = values_array
        self._values.setflags(write=False)
        self._k = float(friction_smoothing)
        self._inertial = inertial
        self._has_inertial = bool(np.any(inertial != 0.0))
        self._rotor_inertia, self._viscous = drive["Ia"], drive["Fv"]
        self._coulomb, self._offset = drive["Fc"], drive["off"]
        self._bearing_viscous, self._bearing_coulomb = bearing["Fv"], bearing["Fc"]
        self._has_bearing = bool(np.any(bearing["Fv"] != 0.0) or np.any(bearing["Fc"] != 0.0))
        self._coupling = drive_chain.coupling
        self._direct = drive_chain.uncoupled
        self._data = tree.model.createData()
        self._identified = mask
        self._identified.setflags(write=False)
        actuated = mechanism.actuated
        self._effort = limit_bounds(effort[actuated])
        self._velocity = limit_bounds(tree.velocity_limits[actuated])
        self._acceleration = limit_bounds(acceleration[actuated])
        self._payload = payload
        self._payload_dynamics = None if payload is None else PayloadDynamics(tree, payload.frame)
        self._payload_parameters = None if payload is None else payload.dynamic_parameters()

    @property
    def mechanism(self) -> Mechanism:
        """What the model is built on: the serial robot's
        :class:`~dynamic_identification.core.mechanism.seam.SerialMechanism`, or the closed-loop mechanism."""
        return self._mechanism

    @property
    def robot(self) -> RobotModel:
        """The mechanism's kinematic tree: the serial robot itself, or the opened closed-loop mechanism."""
        return self._mechanism.robot

    @property
    def joint_names(self) -> tuple[str, ...]:
        """The controlled joints, in the order of the torque columns (the tree's kinematic order)."""
        return self._mechanism.actuated_joint_names

    @property
    def n_joints(self) -> int:
        return len(self.joint_names)

    @property
    def identified_joints(self) -> tuple[str, ...]:
        """Joints that get a feedforward torque: the others, which the identification had no equations for, get 0."""
        return tuple(name for name, flag in zip(self.joint_names, self._identified, strict=True) if flag)

    @property
    def drive_chain(self) -> DriveChain:
        return self._drive_chain

    @property
    def terms(self) -> DriveTerms:
        return self._terms

    @property
    def names(self) -> tuple[str, ...]:
        """Parameter names, in the order given."""
        return self._names

    @property
    def values(self) -> np.ndarray:
        """Parameter values (read-only), in the order of :attr:`names`."""
        return self._values

    @property
    def friction_smoothing(self) -> float:
        """``k`` of ``tanh(k v)``, s/rad."""
        return self._k

    @property
    def payload(self) -> Payload | None:
        """The load whose torques are added, ``None`` without one."""
        return self._payload

    @property
    def effort_limits(self) -> np.ndarray:
        """Torques are clamped to ``±effort_limits``, N·m (``∞``: not clamped)."""
        return self._effort.copy()

    @property
    def velocity_limits(self) -> np.ndarray:
        """Desired velocities are limited to these, rad/s (the URDF's; ``∞``: none), with
        :data:`DESIRED_STATE_TOLERANCE`."""
        return self._velocity.copy()

    @property
    def acceleration_limits(self) -> np.ndarray:
        """Desired accelerations are limited to these, rad/s² (``∞``: none), with :data:`DESIRED_STATE_TOLERANCE`."""
        return self._acceleration.copy()

    @property
    def plausibility(self) -> PlausibilityBounds:
        """The bounds of the plausibility gates the model passed (:func:`check_plausible`)."""
        return self._plausibility

    def with_payload(self: _Model, payload: Payload | None) -> _Model:
        """The same model carrying ``payload`` (``None``: no load), e.g. after the gripper took a part.

        Raises
        ------
        ModelError
            If the payload's frame is not a frame of the model's tree.
        """
        loaded = copy.copy(self)
        # Its own Pinocchio Data: the two models may be evaluated on two threads.
        loaded._data = self._mechanism.robot.model.createData()
        loaded._payload = payload
        loaded._payload_dynamics = None if payload is None else PayloadDynamics(self._mechanism.robot, payload.frame)
        loaded._payload_parameters = None if payload is None else payload.dynamic_parameters()
        return loaded

    def evaluate(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> FeedforwardTorques:
        """Feedforward torques of the controlled joints, N·m, sample by sample: clamped to the effort limits,
        and which were clamped or came from a desired state beyond the limits.

        A desired velocity or acceleration beyond its limit (:attr:`velocity_limits`,
        :attr:`acceleration_limits`, with :data:`DESIRED_STATE_TOLERANCE`) is clamped to it in
        that sample alone, whose torques are then those of the nearest state the model is
        valid for (never extrapolated) and flagged in :attr:`FeedforwardTorques.limited`; the
        other samples of the batch are computed as given.

        Parameters
        ----------
        q, dq, ddq
            Desired positions (rad), velocities (rad/s) and accelerations (rad/s²) of the
            controlled joints: one sample ``(n,)`` or samples ``(N, n)`` (rows are samples, in
            time order: a closed-loop model starts each from the configuration of the one before).

        Returns
        -------
        FeedforwardTorques
            ``(n,)`` for one sample, ``(N, n)`` for samples.

        Raises
        ------
        DataError
            If the shapes differ from ``(n,)`` / ``(N, n)``, a value is not finite, or the
            model's torque is not finite.
        LoopClosureError
            A closed-loop model's desired state where the loops cannot be closed or the
            mechanism is singular.
        """
        q, dq, ddq, single = self._desired_state(q, dq, ddq)
        dq, ddq, limited, problem = self._within_limits(dq, ddq, single)
        torques, clamped = self._bounded(self._model_torques(q, dq, ddq, single), single)
        return FeedforwardTorques(torques, clamped, limited, problem)

    def torques(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """Feedforward torques, N·m, clamped to the effort limits, a desired state beyond the velocity or
        acceleration limits taken at them (see :meth:`evaluate`, which also says which samples were)."""
        return self.evaluate(q, dq, ddq).torques

    def _desired_state(
        self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """Desired ``q, q̇, q̈`` as float arrays, checked, and whether they are one sample ``(n,)``.

        Raises
        ------
        DataError
            If the shapes differ from ``(n,)`` / ``(N, n)`` or a value is not finite, naming
            the sample.
        """
        n = len(self.joint_names)
        q = np.asarray(q, dtype=float)
        dq = np.asarray(dq, dtype=float)
        ddq = np.asarray(ddq, dtype=float)
        single = q.ndim == 1
        if not (q.shape == dq.shape == ddq.shape) or q.ndim not in (1, 2) or q.shape[-1] != n:
            raise DataError(
                f"q, dq, ddq must all have shape ({n},) or (N, {n}), got {q.shape}, {dq.shape}, {ddq.shape}"
            )
        for name, array in (("q", q), ("dq", dq), ("ddq", ddq)):
            if not np.isfinite(array).all():
                where = f": {array.tolist()}" if single else f" at sample {int(np.argwhere(~np.isfinite(array))[0, 0])}"
                raise DataError(f"{name} has a non-finite value{where}")
        return q, dq, ddq, single

    def _within_limits(
        self, dq: np.ndarray, ddq: np.ndarray, single: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
        """``q̇``, ``q̈`` clamped to their limits (with :data:`DESIRED_STATE_TOLERANCE`), which entries were (per
        joint: the shape of ``dq``) and the first of them described (empty: none)."""
        limited = np.zeros(dq.shape, dtype=bool)
        problem = ""
        clamped = []
        for name, array, limit in (("velocity", dq, self._velocity), ("acceleration", ddq, self._acceleration)):
            bound = (1.0 + DESIRED_STATE_TOLERANCE) * limit
            beyond = np.abs(array) > bound
            if beyond.any() and not problem:
                sample, joint = (0, int(np.argmax(beyond))) if single else (int(i) for i in np.argwhere(beyond)[0])
                value = float(array[joint] if single else array[sample, joint])
                where = "" if single else f" at sample {sample}"
                problem = (
                    f"desired {name} of {self.joint_names[joint]} is {value:.6g}{where}, beyond its limit"
                    f" {limit[joint]:.6g}: taken at the limit, not extrapolated"
                )
            limited |= beyond
            clamped.append(np.clip(array, -bound, bound) if beyond.any() else array)
        return clamped[0], clamped[1], limited, problem

    def _model_torques(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, single: bool) -> np.ndarray:
        """The model's torques, N·m, of desired states checked by :meth:`_desired_state`: ``(n,)`` for
        one sample (``single``), else ``(N, n)``; zero for the joints it was not identified for."""
        q_rows, dq_rows, ddq_rows = (q[None], dq[None], ddq[None]) if single else (q, dq, ddq)
        motion = self._complete(q_rows, dq_rows, ddq_rows)
        raw = np.empty(q_rows.shape)
        for k in range(q_rows.shape[0]):
            raw[k] = self._one(motion, k, dq_rows[k], ddq_rows[k])
        return raw[0] if single else raw

    def _complete(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> TreeMotion:
        """The tree motion of desired samples of the controlled joints, in the assembly mode of the last one
        (at first the mechanism's own, :meth:`~dynamic_identification.core.mechanism.seam.Mechanism.complete_motion`);
        a first sample farther than :data:`~dynamic_identification.core.mechanism.seam.WALK_STEP_RAD` from the last is
        reached by following the loops there (:meth:`~dynamic_identification.core.mechanism.seam.Mechanism.follow`)."""
        mechanism = self._mechanism
        if not self._closures:
            # J_t = I: the desired states (checked by _desired_state) are the tree's; at a controller's rate the
            # mechanism's own checks of them would double the cost of a sample.
            return TreeMotion(q=q, dq=dq, ddq=ddq)
        guess = self._last
        if guess is not None and float(np.max(np.abs(q[0] - guess[mechanism.actuated]))) > WALK_STEP_RAD:
            try:
                guess = mechanism.follow(q[0], start=guess)
            except LoopClosureError:
                guess = None
        try:
            motion = mechanism.complete_motion(q, dq, ddq, q_guess=guess)
        except LoopClosureError:
            if guess is None:
                raise
            # The last configuration is no start for this one (a jump): solve it from the mechanism's own instead.
            motion = mechanism.complete_motion(q, dq, ddq)
        self._last = motion.q[-1]
        return motion

    def _one(self, motion: TreeMotion, k: int, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """Torques of sample ``k`` of the completed motion, ``dq``, ``ddq`` the controlled joints' of that sample."""
        torque = self._drive_torques(dq, ddq)
        q_t, dq_t, ddq_t = motion.q[k], motion.dq[k], motion.ddq[k]
        projection = None if motion.projection is None else motion.projection[k].T
        if self._has_inertial:
            tree = self._mechanism.robot
            configuration = tree.configuration(q_t)
            regressor = pin.computeJointTorqueRegressor(tree.model, self._data, configuration, dq_t, ddq_t)
            inertial = regressor @ self._inertial
            torque = torque + (inertial if projection is None else projection @ inertial)
        if self._payload_dynamics is not None and self._payload_parameters is not None:
            load = self._payload_dynamics.torques(q_t, dq_t, ddq_t, self._payload_parameters)
            torque = torque + (load if projection is None else projection @ load)
        if self._has_bearing and projection is not None:
            # The passive joints' bearing friction: a torque on the tree's passive joints, projected by J_tᵀ.
            passive = self._mechanism.passive
            friction = np.zeros(self._mechanism.n_tree)
            friction[passive] = self._bearing_viscous * dq_t[passive] + self._bearing_coulomb * np.tanh(
                self._k * dq_t[passive]
            )
            torque = torque + projection @ friction
        return np.where(self._identified, torque, 0.0)

    def _drive_torques(self, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """The drive terms' torques of one sample of the controlled joints' ``q̇``, ``q̈``, N·m."""
        if self._direct:
            velocity, acceleration = dq, ddq
        else:
            velocity, acceleration = self._coupling @ dq, self._coupling @ ddq
        motor = (
            self._rotor_inertia * acceleration
            + self._viscous * velocity
            + self._coulomb * np.tanh(self._k * velocity)
            + self._offset
        )
        return motor if self._direct else self._coupling.T @ motor

    def _bounded(self, raw: np.ndarray, single: bool) -> tuple[np.ndarray, np.ndarray]:
        """The model's torques ``raw`` clamped to the effort limits, and which were clamped.

        Raises
        ------
        DataError
            If a torque is not finite.
        """
        if not np.all(np.isfinite(raw)):
            raise DataError(f"the model's torque is not finite ({raw.tolist() if single else 'a sample'})")
        return np.clip(raw, -self._effort, self._effort), np.abs(raw) > self._effort


def _standard_values(
    mechanism: Mechanism, terms: DriveTerms, names: tuple[str, ...], values: np.ndarray
) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Checked parameter ``names`` and ``values`` placed at their standard columns: the inertial parameters of
    the tree's joints ``(10 n_t,)`` (zeros where not named), the ``Ia``, ``Fv``, ``Fc`` and ``off`` of the
    controlled joints and the bearing friction ``Fv``, ``Fc`` of the passive joints
    (``ClosedLoopModel.passive_friction``).

    Raises
    ------
    ModelError
        If a name is not a standard parameter of the mechanism with ``terms``.
    """
    standard = set(mechanism.standard_parameter_names(terms))
    unknown = [name for name in names if name not in standard]
    if unknown:
        actuated = (
            f" tree joints, actuated {list(mechanism.actuated_joint_names)}"
            if mechanism.n_actuated < mechanism.n_tree
            else " joints"
        )
        raise ModelError(
            f"parameters {unknown[:6]} are not standard parameters of this model ({mechanism.n_tree}{actuated},"
            f" {terms})"
        )
    per_link = len(INERTIAL_PARAMETER_NAMES)
    inertial = np.zeros(mechanism.n_tree * per_link)
    drive = {term: np.zeros(mechanism.n_actuated) for term in ("Ia", "Fv", "Fc", "off")}
    bearing = {term: np.zeros(mechanism.passive.shape[0]) for term in ("Fv", "Fc")}
    controlled = {int(j) + 1: m for m, j in enumerate(mechanism.actuated)}
    passive = {int(j) + 1: p for p, j in enumerate(mechanism.passive)}
    for name, value in zip(names, values, strict=True):
        kind = name.rstrip("0123456789")
        joint = int(name[len(kind) :])
        if kind in INERTIAL_PARAMETER_NAMES:
            inertial[(joint - 1) * per_link + INERTIAL_PARAMETER_NAMES.index(kind)] = value
        elif joint in passive:
            bearing[kind][passive[joint]] = value
        else:
            drive[kind][controlled[joint]] = value
    return inertial, drive, bearing
