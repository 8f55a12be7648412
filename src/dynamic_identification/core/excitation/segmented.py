"""Segmented per-joint-fixed excitation ([Gautier2013] §IV.B).

For a serial robot, the power-model (PIM) observation columns of the parameters of
links ``1..j`` vanish while joints ``1..j`` stand still ([Gautier2013] §III, ``h^j = 0``).
Running ``n`` kinds of trajectory — all joints moving, then joint 1 fixed, then joints
1 and 2 fixed, …, finally joint ``n`` moving alone — therefore makes the PIM
observation matrix block-triangular, so the wrist parameters are no longer drowned
by the large shoulder power terms ([Gautier2013] §IV.B, eq. (21)-(24)). The power model
itself lives in the regressors; this module only builds the motion.

Segment ``k`` (0-based) holds joints ``0..k-1`` *exactly* still (``q`` constant,
``q̇ = q̈ = 0.0``) and moves joints ``k..n-1`` along a Fourier motion. Between two
segments a C² quintic transition (:func:`.safety.ramp`) takes joint ``k`` to its hold
position and joints ``k+1..n-1`` to the start of the next motion while the already
held joints stay exactly still. The trajectory starts and ends at rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.fourier import FourierTrajectory
from dynamic_identification.core.excitation.safety import JointLimits, check_trajectory, ramp
from dynamic_identification.core.excitation.trajectory import SampledTrajectory, concatenate
from dynamic_identification.core.mechanism.robot import RobotModel

State = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Segment:
    """One per-joint-fixed segment of a :class:`SegmentedTrajectory`.

    Attributes
    ----------
    start, stop
        Sample index range ``[start, stop)`` of the segment proper (transitions excluded).
    first_moving_joint
        ``k`` (0-based): joints ``0..k-1`` are held still during the segment.
    """

    start: int
    stop: int
    first_moving_joint: int


@dataclass(frozen=True)
class SegmentedTrajectory:
    """A segmented per-joint-fixed trajectory ([Gautier2013] §IV.B).

    Attributes
    ----------
    trajectory
        The whole motion, segments and transitions, starting and ending at rest.
    segments
        The ``n`` segments in order; segment ``k`` has ``first_moving_joint == k``.
    hold_positions
        Where held joints stay, rad, shape ``(n,)``.
    """

    trajectory: SampledTrajectory
    segments: tuple[Segment, ...]
    hold_positions: np.ndarray


def fit_motion(
    motion: FourierTrajectory,
    limits: JointLimits,
    *,
    moving: Sequence[int] | np.ndarray | None = None,
    position_margin: float = 0.1,
    velocity_fraction: float = 0.8,
    acceleration_fraction: float = 0.8,
    samples_per_period: int | None = None,
    rest_at_start: bool = True,
) -> FourierTrajectory:
    """Scale a Fourier motion per joint so that it keeps ``limits`` with margins.

    With ``rest_at_start`` the coefficients are first projected (least change) onto
    ``Σ_k a_k = 0`` and ``Σ_k k b_k = 0``, so ``q̇(0) = q̈(0) = 0``: the motion is at
    rest at every whole period, and segments of whole periods join by rest-to-rest
    quintics, which never leave the limits. Offsets are clipped into the shrunk
    position range; each joint's oscillation is then multiplied by the largest factor
    (at most 1, never enlarged) for which, on a dense grid over one period, positions
    stay in the range shrunk by ``position_margin``
    (fraction of the half-range on each side), speeds within ``velocity_fraction`` of
    the velocity limit and accelerations within ``acceleration_fraction`` of the
    acceleration limit. The margins leave room for the sampled trajectory and for
    the C² transitions between segments.

    Parameters
    ----------
    motion
        Fourier motion over all ``n`` joints of ``limits``.
    limits
        Joint limits the motion must keep.
    moving
        Indices of the joints that move; the others get zero coefficients (they stand
        still at their offset). ``None``: all joints.
    position_margin, velocity_fraction, acceleration_fraction
        Margins: ``position_margin`` in ``[0, 1)``, fractions in ``(0, 1]``.
    samples_per_period
        Grid density; default ``max(2000, 100 · harmonics)``.
    rest_at_start
        Make the motion start (and end each period) at rest; needs ``harmonics >= 2``.

    Raises
    ------
    IdentificationError
        On a shape mismatch or a margin out of range.
    """
    n = len(limits.joint_names)
    if motion.offsets.shape != (n,) or motion.sine.shape[1:] != (n,) or motion.cosine.shape != motion.sine.shape:
        raise IdentificationError(
            f"motion must cover the {n} joints of the limits, got offsets of shape {motion.offsets.shape}"
        )
    if not 0.0 <= position_margin < 1.0:
        raise IdentificationError(f"position_margin must be in [0, 1), got {position_margin}")
    for name, value in (("velocity_fraction", velocity_fraction), ("acceleration_fraction", acceleration_fraction)):
        if not 0.0 < value <= 1.0:
            raise IdentificationError(f"{name} must be in (0, 1], got {value}")
    if rest_at_start and motion.harmonics < 2:
        raise IdentificationError(f"rest_at_start needs at least 2 harmonics, got {motion.harmonics}")
    mask = np.ones(n, dtype=bool) if moving is None else np.isin(np.arange(n), np.asarray(moving, dtype=int))
    bounded = np.isfinite(limits.lower) & np.isfinite(limits.upper)
    half_margin = np.where(bounded, 0.5 * (limits.upper - limits.lower) * position_margin, 0.0)
    lower, upper = limits.lower + half_margin, limits.upper - half_margin
    offsets = np.clip(motion.offsets, lower, upper)
    sine = np.where(mask, motion.sine, 0.0)
    cosine = np.where(mask, motion.cosine, 0.0)
    if rest_at_start:
        order = np.arange(1, motion.harmonics + 1, dtype=float)[:, None]
        sine = sine - sine.mean(axis=0)
        cosine = cosine - order * (order * cosine).sum(axis=0) / (order**2).sum()
    centred = FourierTrajectory(motion.fundamental_hz, np.zeros(n), sine, cosine)
    grid_size = samples_per_period or max(2000, 100 * motion.harmonics)
    oscillation, dq, ddq = centred.evaluate(np.linspace(0.0, motion.period_s, grid_size, endpoint=False))
    with np.errstate(divide="ignore", invalid="ignore"):
        bounds = np.stack(
            [
                np.where(oscillation.max(axis=0) > 0.0, (upper - offsets) / oscillation.max(axis=0), np.inf),
                np.where(oscillation.min(axis=0) < 0.0, (lower - offsets) / oscillation.min(axis=0), np.inf),
                np.where(
                    np.abs(dq).max(axis=0) > 0.0, velocity_fraction * limits.velocity / np.abs(dq).max(axis=0), np.inf
                ),
                np.where(
                    np.abs(ddq).max(axis=0) > 0.0,
                    acceleration_fraction * limits.acceleration / np.abs(ddq).max(axis=0),
                    np.inf,
                ),
            ]
        )
    scale = np.minimum(1.0, np.nan_to_num(bounds.min(axis=0), nan=0.0, posinf=1.0))
    return FourierTrajectory(motion.fundamental_hz, offsets, sine * scale, cosine * scale)


def segmented_trajectory(
    motions: Sequence[FourierTrajectory],
    limits: JointLimits,
    *,
    hold_positions: Sequence[float] | np.ndarray,
    segment_duration_s: float,
    rate_hz: float,
    start_state: State | None = None,
) -> SegmentedTrajectory:
    """Segments with joints ``0..k-1`` held and ``k..n-1`` moving, joined by C² transitions ([Gautier2013] §IV.B).

    Segment ``k`` plays ``segment_duration_s`` of ``motions[k]`` (only its columns
    ``k..n-1``) in ``round(segment_duration_s · rate_hz)`` samples — time is stretched
    by less than half a sample so that the segment ends exactly where the motion does;
    the transition after it starts at the motion's state at ``segment_duration_s``, one
    sample after the segment's last sample, so position, velocity and acceleration are
    continuous (C²). Transitions are the shortest quintics within the limits
    (:func:`.safety.ramp`); the held joints' arrays are exactly constant (``q``) and
    exactly ``0.0`` (``q̇``, ``q̈``), in segments and transitions. The trajectory starts
    at ``start_state`` (default: at rest at the first motion's start position) and ends
    at rest at ``hold_positions``.

    With motions at rest at ``t = 0`` (:func:`fit_motion`'s default) and segments of
    whole periods, every transition is a rest-to-rest quintic, which stays between
    its end points and so never leaves the position limits. Other motions work too,
    but a transition from a fast state near a limit may be impossible
    (:class:`~.safety.LimitViolationError`).

    With this trajectory the power-model observation matrix becomes block-triangular
    ([Gautier2013] §IV.B): the rows of segment ``k`` have zero columns for the parameters
    of links ``0..k-1``.

    Parameters
    ----------
    motions
        ``n`` Fourier motions over all ``n`` joints; they must keep ``limits`` —
        scale them with :func:`fit_motion` first.
    limits
        Joint limits of the ``n`` joints, margins applied.
    hold_positions
        Positions of held joints, rad, shape ``(n,)``, inside the limits.
    segment_duration_s
        Duration of each segment, s (e.g. a whole number of motion periods).
    rate_hz
        Sample rate, Hz.
    start_state
        ``(q, q̇, q̈)`` the trajectory starts from, e.g. the robot's current state.

    Raises
    ------
    IdentificationError
        On a bad argument (count of motions, hold outside the limits, durations).
    LimitViolationError
        When a motion or a transition cannot keep the limits (names the violation).
    """
    n = len(limits.joint_names)
    if len(motions) != n:
        raise IdentificationError(f"motions must hold one Fourier motion per joint ({n}), got {len(motions)}")
    if not (np.isfinite(rate_hz) and rate_hz > 0.0):
        raise IdentificationError(f"rate_hz must be > 0, got {rate_hz}")
    steps = int(round(segment_duration_s * rate_hz))
    if not np.isfinite(segment_duration_s) or steps < 2:
        raise IdentificationError(
            f"segment_duration_s must span at least 2 samples at {rate_hz} Hz, got {segment_duration_s}"
        )
    hold = np.array(hold_positions, dtype=float)
    if hold.shape != (n,) or np.any(hold < limits.lower) or np.any(hold > limits.upper):
        raise IdentificationError(f"hold_positions must be {n} positions inside the limits, got {hold.tolist()}")
    hold.setflags(write=False)
    names = limits.joint_names
    local_time = np.arange(steps + 1) / rate_hz
    stretch = segment_duration_s * rate_hz / steps
    pieces: list[SampledTrajectory] = []
    segment_lengths: list[tuple[int, int]] = []
    zero = np.zeros(n)
    if start_state is None:
        previous_end: State = (motions[0].evaluate(np.zeros(1))[0][0], zero, zero)
    else:
        if len(start_state) != 3 or any(np.shape(x) != (n,) for x in start_state):
            raise IdentificationError(f"start_state must be (q, q̇, q̈), each of {n} values")
        previous_end = (
            np.asarray(start_state[0], dtype=float),
            np.asarray(start_state[1], dtype=float),
            np.asarray(start_state[2], dtype=float),
        )
    for k, motion in enumerate(motions):
        q, dq, ddq = (np.array(x, dtype=float) for x in motion.evaluate(stretch * local_time))
        dq *= stretch
        ddq *= stretch**2
        q[:, :k] = hold[:k]
        dq[:, :k] = 0.0
        ddq[:, :k] = 0.0
        begin: State = (q[0], dq[0], ddq[0])
        # joints 0..k-2 are already held; joint k-1 travels to its hold position now
        transition = _transition(previous_end, begin, limits, rate_hz=rate_hz, held=max(k - 1, 0))
        if transition is not None:
            pieces.append(transition)
        segment = SampledTrajectory(local_time[:-1], q[:-1], dq[:-1], ddq[:-1], names)
        check_trajectory(segment, limits)
        pieces.append(segment)
        segment_lengths.append((0 if transition is None else transition.time.shape[0], steps))
        previous_end = (q[-1], dq[-1], ddq[-1])
    final = ramp(previous_end, (hold, zero, zero), limits, rate_hz=rate_hz)
    final_q, final_dq, final_ddq = final.q.copy(), final.dq.copy(), final.ddq.copy()
    final_q[-1], final_dq[-1], final_ddq[-1] = hold, zero, zero  # at rest exactly, not to round-off
    pieces.append(_held_exactly(SampledTrajectory(final.time, final_q, final_dq, final_ddq, names), n - 1))
    trajectory = concatenate(pieces)
    check_trajectory(trajectory, limits)
    segments = []
    index = 0
    for k, (transition_length, segment_length) in enumerate(segment_lengths):
        index += transition_length
        segments.append(Segment(start=index, stop=index + segment_length, first_moving_joint=k))
        index += segment_length
    return SegmentedTrajectory(trajectory=trajectory, segments=tuple(segments), hold_positions=hold)


def _transition(
    start: State, end: State, limits: JointLimits, *, rate_hz: float, held: int
) -> SampledTrajectory | None:
    """Quintic from ``start`` to ``end`` without its last sample (the next segment's first); ``None`` if no move."""
    if all(np.array_equal(a, b) for a, b in zip(start, end, strict=True)):
        return None
    path = _held_exactly(ramp(start, end, limits, rate_hz=rate_hz), held)
    return SampledTrajectory(path.time[:-1], path.q[:-1], path.dq[:-1], path.ddq[:-1], path.joint_names)


def _held_exactly(path: SampledTrajectory, held: int) -> SampledTrajectory:
    """Pin the first ``held`` joints to their first position with exactly zero rates (round-off free)."""
    q, dq, ddq = path.q.copy(), path.dq.copy(), path.ddq.copy()
    q[:, :held] = q[0, :held]
    dq[:, :held] = 0.0
    ddq[:, :held] = 0.0
    return SampledTrajectory(path.time, q, dq, ddq, path.joint_names)


def default_segmented_trajectory(
    robot: RobotModel,
    limits: JointLimits,
    *,
    rate_hz: float,
    seed: int,
    fundamental_hz: float = 0.1,
    harmonics: int = 5,
    periods_per_segment: int = 1,
    position_margin: float = 0.1,
) -> SegmentedTrajectory:
    """A ready-to-run segmented trajectory: random Fourier motions fitted into ``limits``.

    Motion ``k`` oscillates joints ``k..n-1`` about the centres of their ranges with
    random coefficients (seeded), scaled by :func:`fit_motion`; held joints stay at
    the range centres; each segment lasts ``periods_per_segment`` periods. Not
    optimised for identifiability.

    Raises
    ------
    IdentificationError
        When ``robot`` and ``limits`` name different joints, or a setting is out of range.
    """
    if robot.joint_names != limits.joint_names:
        raise IdentificationError(
            f"limits joints {list(limits.joint_names)} differ from the robot's {list(robot.joint_names)}"
        )
    if not fundamental_hz > 0.0 or harmonics < 1 or periods_per_segment < 1:
        raise IdentificationError(
            "need fundamental_hz > 0, harmonics >= 1 and periods_per_segment >= 1,"
            f" got {fundamental_hz}, {harmonics}, {periods_per_segment}"
        )
    rng = np.random.default_rng(seed)
    n = robot.n_joints
    centre = limits.centre
    motions = [
        fit_motion(
            FourierTrajectory(fundamental_hz, centre, rng.normal(size=(harmonics, n)), rng.normal(size=(harmonics, n))),
            limits,
            moving=np.arange(k, n),
            position_margin=position_margin,
        )
        for k in range(n)
    ]
    return segmented_trajectory(
        motions,
        limits,
        hold_positions=centre,
        segment_duration_s=periods_per_segment / fundamental_hz,
        rate_hz=rate_hz,
    )


__all__ = [
    "Segment",
    "SegmentedTrajectory",
    "default_segmented_trajectory",
    "fit_motion",
    "segmented_trajectory",
]
