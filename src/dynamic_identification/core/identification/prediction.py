"""Torques of an identified model, and the model errors of those torques against a recording.

:func:`predict_torques` evaluates a model given by base-parameter values ([Gautier2013]
eq. (4)); :func:`predict_at_stamps` does it along a recording's filtered motion and
interpolates back onto its stamps (what ``dynid predict`` writes); :func:`torque_errors`
judges the prediction with [Volkmann2020] eq. (11)-(12) where the joint moves: the
quality of a regression model whose own equations are not joint torques.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dynamic_identification.core.errors import DataError
from dynamic_identification.core.estimation.quality import JointErrors
from dynamic_identification.core.identification.completion import complete_recording
from dynamic_identification.core.identification.motion import Motion
from dynamic_identification.core.identification.settings import SignalSettings
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel
from dynamic_identification.core.mechanism.seam import Mechanism, TreeMotion, mechanism_of
from dynamic_identification.core.regressors.dynamic_model import DynamicModel

TorqueCheck = Callable[[Mapping[str, float]], JointErrors]
"""Judges a model, given as base-parameter values by name, by the joint torques it predicts: the sums of
[Volkmann2020] eq. (11)-(12) and the peak predicted torque
(:class:`~dynamic_identification.core.estimation.quality.JointErrors`)."""

PREDICTION_BLOCK_SAMPLES = 10_000
"""Samples per block of the observation matrix when predicting (memory bound: about 40 MB on 6 joints)."""


@dataclass(frozen=True)
class Samples:
    """Recorded samples in model joint order.

    ``time`` (s) ``(N,)``; ``q`` (rad) and ``torques`` (N·m) ``(N, n)``; ``dq_measured``
    (rad/s) ``(N, n)`` or ``None``.
    """

    time: np.ndarray
    q: np.ndarray
    torques: np.ndarray
    dq_measured: np.ndarray | None = None

    @property
    def signals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(time, q, torques)``: the arguments a regression model's observation builder takes after the model."""
        return self.time, self.q, self.torques


@dataclass(frozen=True)
class StampPrediction:
    """Predicted torques (N·m) and filtered joint speeds ``|q̇|`` (rad/s) at a recording's stamps, ``(N, n)``
    each, and the rows a usable segment covers (elsewhere both are 0)."""

    torques: np.ndarray
    speed: np.ndarray
    covered: np.ndarray

    def moving(self, min_speed_rad_s: float) -> np.ndarray:
        """``(N, n)`` booleans: the joint samples of covered rows that move at least ``min_speed_rad_s`` (rad/s,
        ``signal.min_speed_rad_s``), those a prediction is judged at. At rest a joint's torque is stiction, which no
        model of the speed predicts (the IDIM's ``Fc sign(q̇)`` takes the sign of the velocity's noise there), and
        the identification leaves those equations out as well."""
        return (self.speed >= min_speed_rad_s) & self.covered[:, None]


def parameter_columns(
    parameters: Mapping[str, float], names: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The standard columns and the values of base parameters given by name, and the names not in ``names``.

    A base parameter is named after its independent standard column, so a model's
    prediction is ``W_st[:, columns] @ values`` ([Gautier2013] eq. (4)).
    """
    position = {name: i for i, name in enumerate(names)}
    unknown = [name for name in parameters if name not in position]
    columns = np.array([position.get(name, -1) for name in parameters], dtype=int)
    return columns, np.array(list(parameters.values()), dtype=float), unknown


def predict_in_blocks(
    samples: int,
    n: int,
    columns: np.ndarray,
    values: np.ndarray,
    observations: Callable[[slice], np.ndarray],
) -> np.ndarray:
    """Torques ``(samples, n)`` of ``observations(block)[..., columns] @ values`` in blocks of
    :data:`PREDICTION_BLOCK_SAMPLES` samples, so that the standard observation matrix is never held whole."""
    out = np.empty((samples, n))
    for start in range(0, samples, PREDICTION_BLOCK_SAMPLES):
        block = slice(start, start + PREDICTION_BLOCK_SAMPLES)
        out[block] = observations(block)[..., columns] @ values
    return out


def interpolate_at_stamps(
    stamps: np.ndarray, n: int, segments: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]]
) -> StampPrediction:
    """Torques and speeds of uniform-grid segments interpolated onto a recording's ``stamps`` (s).

    Each segment is its grid (s), the torques on it (N·m, ``(L, n)``) and the velocities
    (rad/s, ``(L, n)``); stamps outside every segment are not covered. A grid ends on or
    before its segment's last sample instant, and recovered instants differ from the stamps by
    their jitter: stamps within a grid period past either end take the end's value.
    """
    covered = np.zeros(stamps.shape[0], dtype=bool)
    effort = np.zeros((stamps.shape[0], n))
    speed = np.zeros_like(effort)
    for time, torques, velocities in segments:
        period = float(time[1] - time[0]) if time.size > 1 else 0.0
        inside = (stamps >= time[0] - period) & (stamps <= time[-1] + period)
        for j in range(n):
            effort[inside, j] = np.interp(stamps[inside], time, torques[:, j])
            speed[inside, j] = np.abs(np.interp(stamps[inside], time, velocities[:, j]))
        covered |= inside
    return StampPrediction(torques=effort, speed=speed, covered=covered)


def torques_along(
    mechanism: RobotModel | Mechanism,
    drive_chain: DriveChain,
    terms: DriveTerms,
    parameters: Mapping[str, float],
    motion: TreeMotion | Motion,
) -> np.ndarray:
    """Controlled joints' torques (N·m, ``(N, n_a)``) of a model given by base-parameter values along completed
    tree ``motion``.

    A base parameter is named after its independent standard column, so the prediction is
    ``W_st[:, names] @ values`` ([Gautier2013] eq. (4); ``W_st = J_tᵀ φ_tree + drive terms`` of a
    closed-loop robot, [Briot2012] eq. (6)), evaluated in blocks of :data:`PREDICTION_BLOCK_SAMPLES`.

    Raises
    ------
    DataError
        A name that is not a standard parameter of this mechanism and drive terms.
    """
    mechanism = mechanism_of(mechanism)
    columns, values, unknown = parameter_columns(parameters, mechanism.standard_parameter_names(terms))
    if unknown:
        raise DataError(
            f"parameters {unknown[:6]} are not standard parameters of this model"
            f" ({mechanism.n_tree} tree joints, controlled {list(mechanism.actuated_joint_names)})"
        )
    data = mechanism.robot.model.createData()
    return predict_in_blocks(
        motion.q.shape[0],
        mechanism.n_actuated,
        columns,
        values,
        lambda block: mechanism.observation_matrix(drive_chain, terms, motion.rows(block), data=data),
    )


def predict_torques(
    mechanism: RobotModel | Mechanism,
    drive_chain: DriveChain,
    terms: DriveTerms,
    parameters: Mapping[str, float],
    q: np.ndarray,
    dq: np.ndarray,
    ddq: np.ndarray,
) -> np.ndarray:
    """Controlled joints' torques (N·m, ``(N, n_a)``) of a model given by base-parameter values along a motion of
    the controlled joints ``(N, n_a)`` (rad, rad/s, rad/s²), completed to the tree first
    (:meth:`~dynamic_identification.core.mechanism.seam.Mechanism.complete_motion`): :func:`torques_along`.
    """
    mechanism = mechanism_of(mechanism)
    q, dq, ddq = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, dq, ddq))
    motion = TreeMotion(q=q, dq=dq, ddq=ddq) if not mechanism.closures else mechanism.complete_motion(q, dq, ddq)
    return torques_along(mechanism, drive_chain, terms, parameters, motion)


def predict_at_stamps(
    mechanism: RobotModel | Mechanism,
    drive_chain: DriveChain,
    terms: DriveTerms,
    parameters: Mapping[str, float],
    samples: Samples,
    signal: SignalSettings,
) -> StampPrediction:
    """The model's torques along the recording's filtered, completed motion, interpolated onto its stamps.

    ``samples.q`` holds the controlled joints or every tree joint
    (:func:`~dynamic_identification.core.identification.completion.complete_recording`). Every
    segment is predicted to its ends (``edges=True``: the filter's edges extrapolated, not
    dropped); only rows of a segment too short to differentiate (fewer than
    :data:`~.motion.MIN_SEGMENT_SAMPLES` samples between two gaps) are not covered; ``speed``
    holds the controlled joints' ``|q̇|``.

    Raises
    ------
    DataError, LoopClosureError
        As :func:`~dynamic_identification.core.identification.completion.complete_recording`.
    """
    mechanism = mechanism_of(mechanism)
    stamps = np.asarray(samples.time, dtype=float)
    completed = complete_recording(
        mechanism,
        stamps,
        samples.q,
        np.zeros((stamps.shape[0], 1)),
        settings=signal,
        dq_measured=samples.dq_measured,
        edges=True,
    )
    return interpolate_at_stamps(
        stamps if completed.instants is None else completed.instants,
        mechanism.n_actuated,
        (
            (
                segment.time,
                torques_along(mechanism, drive_chain, terms, parameters, segment.motion),
                segment.motion.dq if not mechanism.closures else segment.motion.dq[:, mechanism.actuated],
            )
            for segment in completed.segments
        ),
    )


def torque_errors(prediction: StampPrediction, torques: np.ndarray, *, min_speed_rad_s: float) -> JointErrors:
    """[Volkmann2020] eq. (11)-(12) of a prediction against the recorded torques (N·m, ``(N, n)``) where
    ``|q̇| >= min_speed_rad_s`` (rad/s); the peak is the largest predicted ``|τ̂_j|`` on every covered stamp."""
    covered = prediction.covered
    moving = prediction.moving(min_speed_rad_s)[covered]
    measured = np.asarray(torques, dtype=float)[covered]
    return JointErrors.of(measured, prediction.torques[covered], moving, judged=np.ones_like(moving))


def stamp_torque_check(
    dynamic_model: DynamicModel,
    recordings: Sequence[Samples],
    signal: SignalSettings,
) -> TorqueCheck:
    """A :data:`TorqueCheck` by the IDIM prediction at the recordings' stamps where the joint moves.

    The quality step of a regression model whose own equations are not the joint torques
    (energy, power, filtered models): its parameters are IDIM base parameters, so their
    torques can be predicted and judged on one scale with every other model's.
    """
    mechanism, drive_chain, terms = dynamic_model.mechanism, dynamic_model.drive_chain, dynamic_model.terms

    def check(parameters: Mapping[str, float]) -> JointErrors:
        errors = JointErrors.zeros(mechanism.n_actuated)
        for samples in recordings:
            prediction = predict_at_stamps(mechanism, drive_chain, terms, parameters, samples, signal)
            errors = errors + torque_errors(prediction, samples.torques, min_speed_rad_s=signal.min_speed_rad_s)
        return errors

    return check


__all__ = [
    "PREDICTION_BLOCK_SAMPLES",
    "Samples",
    "StampPrediction",
    "TorqueCheck",
    "predict_at_stamps",
    "predict_torques",
    "stamp_torque_check",
    "torques_along",
    "torque_errors",
]
