"""A recording of a mechanism's controlled joints made into filtered tree motion, segment by segment.

The first steps of every regression model, prediction and drive-gain identification, for
any :class:`~dynamic_identification.core.mechanism.seam.Mechanism`:

1. stamps cleaned, each contiguous segment resampled on a uniform grid, the positions of the
   **controlled** joints low-passed (zero phase) and differentiated
   (:func:`~dynamic_identification.core.identification.motion.estimate_motion`,
   [Gautier2013] §IV.A);
2. that motion completed to the tree's (:meth:`Mechanism.complete_motion`): for a serial
   robot it is the tree's motion (``J_t = I``); for a closed-loop robot the passive positions
   come from the loop closures ([Briot2012] eq. (2)), ``q̇_t = J_t q̇_a`` (eq. (3)) and the
   accelerations from eq. (4), so the motion that enters the model closes the loops exactly.

What the positions may hold
---------------------------
* **The controlled joints only** ``(N, n_a)``: a closed-loop robot's passive joints follow
  from the closures, in the assembly mode reached by walking from its reference configuration.
* **Every joint of the opened tree** ``(N, n_t)`` (passive joints with encoders): each
  recorded sample is checked against the closures first — the passive positions must lie
  within ``passive_tolerance_rad`` of the closed configuration of the recorded actuated
  positions (:meth:`Mechanism.passive_correction`), otherwise the recording is refused
  naming the first sample and joint (a slipped encoder, a wrong offset or joint order, or a
  URDF whose geometry is not the robot's). The measured passive positions then choose the
  assembly mode (they start the completion of each segment), but the motion used is still
  the one completed from the filtered actuated positions: measured passive positions carry
  their own noise and would break the consistency ``A_t q̇_t = 0`` that eliminates the
  closure forces in eq. (6). So both forms of a recording give the same estimate.

A recording that reaches a parallel singularity, or leaves the workspace, is refused with
the :class:`~dynamic_identification.core.mechanism.closed_loop.LoopClosureError` of the completion,
whose message and ``sample`` name the recorded sample (index into the given arrays) and
its time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from dynamic_identification.core.errors import DataError
from dynamic_identification.core.identification.motion import Motion, estimate_motion, resolve_signal, row_instants
from dynamic_identification.core.identification.settings import SignalSettings
from dynamic_identification.core.mechanism.closed_loop import LoopClosureError
from dynamic_identification.core.mechanism.seam import Mechanism, TreeMotion
from dynamic_identification.core.signal.filters import LinearResampling

PASSIVE_TOLERANCE_RAD = 0.01
"""Default largest distance (rad, or m for a prismatic joint) of a recorded passive position
from the closed configuration of the recorded actuated positions."""

_SAMPLE_PREFIX = re.compile(r"^sample \d+: ")


@dataclass(frozen=True)
class CompletedSegment:
    """One contiguous segment of a recording: filtered controlled motion completed to the tree.

    Attributes
    ----------
    time
        Uniform grid, s (stamps of the recording's clock), shape ``(N,)``.
    motion
        Tree motion and ``J_t`` on the grid (:class:`~dynamic_identification.core.mechanism.seam.TreeMotion`; for a
        robot without closures, or a segment whose :attr:`loops` are open, the filtered controlled
        :class:`~dynamic_identification.core.identification.motion.Motion`, whose derivatives are computed for the
        rows asked of :meth:`~.TreeMotion.rows`).
    signals
        The recording's other signals (torques in N·m, or currents in A) on the grid, ``(N, m)``, read where they
        are used (:class:`~dynamic_identification.core.signal.filters.LinearResampling`: by a slice of rows, or whole).
    rate_hz
        Grid rate, Hz.
    loops
        A closed-loop segment not completed yet (``complete_recording(complete=False)``), else ``None``.
    """

    time: np.ndarray
    motion: TreeMotion | Motion
    signals: LinearResampling
    rate_hz: float
    loops: OpenLoops | None = None

    def tree_motion_at(self, index: np.ndarray) -> TreeMotion:
        """The tree's motion (and ``J_t``) at the grid samples ``index`` (increasing).

        The rows of :attr:`motion` when it is the tree's; for a segment whose :attr:`loops` are still open, the
        loops solved at those samples only, walked from the segment's first sample in its assembly mode
        (:meth:`Mechanism.complete_motion`). Where they cannot be closed at one of them, they are solved at every
        sample instead: the error then names the first recorded sample that fails, as a sample-by-sample walk
        does, and a step between two of them too long for Newton is walked in samples.

        Raises
        ------
        LoopClosureError
            At the first sample where the loops cannot be closed or the mechanism is singular; its message and
            ``sample`` name the recorded sample.
        """
        index = np.asarray(index, dtype=np.int64)
        if self.loops is None:
            motion = self.motion
            if isinstance(motion, TreeMotion):
                return motion.rows(index)
            return TreeMotion(q=motion.q[index], dq=motion.dq[index], ddq=motion.ddq[index])
        loops = self.loops
        walked = index if index.size and index[0] == 0 else np.concatenate([[0], index])
        every = np.arange(self.time.shape[0])
        try:
            tree = self._walked(loops, every if walked.size == every.size else walked)
        except LoopClosureError:
            if walked.size == every.size:
                raise
            tree = self._walked(loops, every).rows(walked)
        return tree.rows(slice(walked.size - index.size, None))

    def _walked(self, loops: OpenLoops, samples: np.ndarray) -> TreeMotion:
        """The ``loops`` closed at the grid ``samples`` (increasing, from 0), walked in that order."""
        motion = self.motion
        # Every sample: the whole arrays, not a copy of them.
        rows: slice | np.ndarray = slice(None) if samples.size == self.time.shape[0] else samples
        try:
            return loops.mechanism.complete_motion(
                motion.q[rows], motion.dq[rows], motion.ddq[rows], q_guess=loops.guess
            )
        except LoopClosureError as error:
            grid_sample = int(samples[error.sample]) if error.sample is not None else 0
            raise _at_recorded_sample(error, grid_sample, loops.recorded_time, self.time, loops.where) from error


@dataclass(frozen=True)
class OpenLoops:
    """What a closed-loop segment of :func:`complete_recording` (``complete=False``) needs to be completed where it
    is used (:meth:`CompletedSegment.tree_motion_at`): the decimated rows of the dynamic model need the loops solved
    at the decimated instants only, a factor fewer Newton solves than every sample.

    Attributes
    ----------
    mechanism
        The closed-loop robot.
    guess
        Tree configuration at the segment's first sample (from recorded passive positions), or ``None`` to walk
        from the reference configuration.
    recorded_time
        The recording's stamps, s, to name a failing sample.
    where
        Prefix of error messages (the recording's name).
    """

    mechanism: Mechanism
    guess: np.ndarray | None
    recorded_time: np.ndarray
    where: str


@dataclass(frozen=True)
class CompletedRecording:
    """The segments of :func:`complete_recording`, their provenance and the signal settings used (every ``auto``
    decided from the controlled joints' motion, with the reasons)."""

    segments: tuple[CompletedSegment, ...]
    input_samples: int
    duplicates_dropped: int
    signal: SignalSettings
    signal_reasons: tuple[str, ...] = ()
    instants: np.ndarray | None = None
    """Each input row's instant on the segments' clock, s ``(N,)``: its stamp, or its recovered sample instant when
    the stamps were recovered (a repeated stamp's row takes the instant of the row it repeats); ``None`` when not
    known."""

    @property
    def rate_hz(self) -> float:
        """Grid rate of the segments, Hz."""
        return self.segments[0].rate_hz


def controlled_positions(mechanism: Mechanism, q: np.ndarray) -> np.ndarray:
    """The controlled joints' columns of positions ``(N, n_a)`` or ``(N, n_t)``, with the ±π jumps of continuous
    joints removed (they are filtered and differentiated), rad (m); read-only (:func:`unwrapped`)."""
    positions = np.asarray(q, dtype=float)
    if positions.shape[1] != mechanism.n_actuated:
        positions = positions[:, mechanism.actuated]
    continuous = mechanism.robot.continuous
    return unwrapped(positions, [i for i, j in enumerate(mechanism.actuated) if continuous[int(j)]])


def unwrapped(positions: np.ndarray, columns: Sequence[int]) -> np.ndarray:
    """``positions`` ``(N, m)``, rad, with the ±π jumps of the continuous joints' ``columns`` removed, read-only.

    Without a column to unwrap it is a view rather than a copy: a whole recording's positions (29 MB at 600 k
    samples of 6 joints) are not held twice, beside the spline that resamples them.
    """
    out = np.array(positions, dtype=float) if len(columns) else np.asarray(positions, dtype=float).view()
    for i in columns:
        out[:, i] = np.unwrap(out[:, i])
    out.flags.writeable = False
    return out


def complete_recording(
    mechanism: Mechanism,
    time: np.ndarray,
    q: np.ndarray,
    signals: np.ndarray,
    *,
    settings: SignalSettings,
    dq_measured: np.ndarray | None = None,
    passive_tolerance_rad: float = PASSIVE_TOLERANCE_RAD,
    name: str | None = None,
    edges: bool = False,
    complete: bool = True,
) -> CompletedRecording:
    """Filtered, differentiated and completed tree motion of a recording, segment by segment (module docstring).

    Parameters
    ----------
    time
        Stamps, s, shape ``(N,)``.
    q
        Positions of the controlled joints ``(N, n_a)`` or of every tree joint ``(N, n_t)``,
        rad (m), kinematic order; continuous joints may be wrapped.
    signals
        Other signals to resample on the same grid, shape ``(N, m)`` (torques, currents).
    settings
        Signal processing ([Gautier2013] §IV.A).
    dq_measured
        Measured velocities ``(N, n_a)`` or ``(N, n_t)`` (only the controlled ones are used),
        when ``settings.velocity`` is ``"measured"``.
    passive_tolerance_rad
        With every joint recorded: largest accepted distance of a passive position from
        the closed configuration of the recorded actuated positions, rad (m).
    name
        The recording's name, prefixed to error messages.
    edges
        Keep each segment whole, its ends filtered on extrapolated edges (a prediction of every
        row; see :func:`~dynamic_identification.core.identification.motion.estimate_motion`).
    complete
        ``False``: a closed-loop robot's segments keep the filtered controlled motion and their
        :attr:`~CompletedSegment.loops`, completed only where they are used
        (:meth:`CompletedSegment.tree_motion_at`); a singularity or a motion out of the workspace is then found
        at those samples only.

    Raises
    ------
    DataError
        Bad shapes, a non-finite value (naming sample and joint), passive positions that
        contradict the closure (naming sample and joint), bad stamps.
    LoopClosureError
        A recorded sample at a singularity or out of the workspace; message and
        ``sample`` name the recorded sample.
    """
    where = f"recording {name!r}: " if name else ""
    t, positions, values = _validated(mechanism, time, q, signals, where)
    if not (np.isfinite(passive_tolerance_rad) and passive_tolerance_rad > 0.0):
        raise DataError(f"passive_tolerance_rad must be finite and > 0, got {passive_tolerance_rad}")
    all_joints = positions.shape[1] != mechanism.n_actuated
    actuated = controlled_positions(mechanism, positions)
    if all_joints:
        _check_passive(mechanism, t, positions, passive_tolerance_rad, where)
    velocities = None
    if dq_measured is not None:
        measured = np.asarray(dq_measured, dtype=float)
        if measured.shape not in ((t.shape[0], mechanism.n_actuated), (t.shape[0], mechanism.n_tree)):
            raise DataError(
                f"{where}dq_measured must have shape ({t.shape[0]}, {mechanism.n_actuated}) or"
                f" ({t.shape[0]}, {mechanism.n_tree}), got {measured.shape}"
            )
        velocities = measured if measured.shape[1] == mechanism.n_actuated else measured[:, mechanism.actuated]
    choice = resolve_signal(t, actuated, settings, dq_measured=velocities)
    motions, duplicates = estimate_motion(t, actuated, choice, torques=values, dq_measured=velocities, edges=edges)
    segments = []
    for motion in motions:
        if motion.torques is None:  # estimate_motion resamples every signal it is given
            raise DataError(f"{where}the signals were lost in resampling")
        segment = CompletedSegment(time=motion.time, motion=motion, signals=motion.torques, rate_hz=motion.rate_hz)
        if mechanism.closures:  # without them the motion is differentiated block by block where it is used
            guess = None
            if all_joints:
                guess = np.array(positions[_input_sample(t, motion.time[0])], dtype=float)
                guess[mechanism.actuated] = motion.q[0]
            segment = replace(segment, loops=OpenLoops(mechanism=mechanism, guess=guess, recorded_time=t, where=where))
            if complete:
                segment = replace(segment, motion=segment.tree_motion_at(np.arange(motion.time.shape[0])), loops=None)
        segments.append(segment)
    return CompletedRecording(
        segments=tuple(segments),
        input_samples=int(t.shape[0]),
        duplicates_dropped=duplicates,
        signal=choice.signal,
        signal_reasons=choice.reasons,
        instants=row_instants(t, choice),
    )


def completed_at(mechanism: Mechanism, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, index: np.ndarray) -> TreeMotion:
    """The tree motion of filtered controlled motion ``(r, n_a)`` at grid indices ``index`` (the sliding window's
    decimated instants), walked from the mechanism's reference configuration (so in its assembly mode).

    Raises
    ------
    LoopClosureError
        When the motion reaches a singularity or leaves the workspace (``sample`` is the grid index).
    """
    if not mechanism.closures:
        return TreeMotion(q=q, dq=dq, ddq=ddq)
    try:
        return mechanism.complete_motion(q, dq, ddq)
    except LoopClosureError as error:
        grid = None if error.sample is None else int(index[error.sample])
        raise LoopClosureError(
            f"grid sample {grid}: {_SAMPLE_PREFIX.sub('', str(error))}",
            sample=grid,
            residual=error.residual,
            condition_number=error.condition_number,
        ) from error


def _validated(
    mechanism: Mechanism, time: np.ndarray, q: np.ndarray, signals: np.ndarray, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = np.asarray(time, dtype=float)
    positions = np.asarray(q, dtype=float)
    values = np.asarray(signals, dtype=float)
    if t.ndim != 1:
        raise DataError(f"{where}time must have shape (N,), got {t.shape}")
    samples = t.shape[0]
    n_a, n_t = mechanism.n_actuated, mechanism.n_tree
    if positions.ndim != 2 or positions.shape[0] != samples or positions.shape[1] not in (n_a, n_t):
        shapes = f"({samples}, {n_a})" if n_a == n_t else f"({samples}, {n_a}) (actuated joints) or ({samples}, {n_t})"
        raise DataError(
            f"{where}q must have shape {shapes}{'' if n_a == n_t else ' (every tree joint)'}, got {positions.shape}"
        )
    if values.ndim != 2 or values.shape[0] != samples:
        raise DataError(f"{where}signals must have shape ({samples}, m), got {values.shape}")
    if not np.all(np.isfinite(t)):
        raise DataError(f"{where}time is not finite at sample {int(np.argwhere(~np.isfinite(t))[0, 0])}")
    names = mechanism.actuated_joint_names if positions.shape[1] == n_a else mechanism.joint_names
    for label, array, columns in (
        ("position", positions, names),
        ("torque or current", values, mechanism.actuated_joint_names),
    ):
        bad = ~np.isfinite(array)
        if bad.any():
            row, column = (int(i) for i in np.argwhere(bad)[0])
            joint = f" of {columns[column]}" if column < len(columns) else f" in column {column}"
            raise DataError(f"{where}{label}{joint} is not finite at sample {row}")
    return t, positions, values


def _check_passive(mechanism: Mechanism, time: np.ndarray, q: np.ndarray, tolerance: float, where: str) -> None:
    """Refuse recorded passive positions farther than ``tolerance`` from closing the loops (first sample, joint)."""
    try:
        correction = np.abs(mechanism.passive_correction(q))
    except LoopClosureError as error:
        raise LoopClosureError(
            f"{where}{_with_time(str(error), error.sample, time)}",
            sample=error.sample,
            residual=error.residual,
            condition_number=error.condition_number,
        ) from error
    beyond = correction > tolerance
    if not beyond.any():
        return
    sample = int(np.argmax(beyond.any(axis=1)))
    column = int(np.argmax(correction[sample]))
    joint = mechanism.passive_joint_names[column]
    raise DataError(
        f"{where}recorded passive positions contradict the loop closure at sample {sample}"
        f" (t = {time[sample] - time[0]:.4f} s): {joint} is {correction[sample, column]:.4g} rad from the closed"
        f" configuration of the recorded actuated positions (passive_tolerance_rad = {tolerance:g}); check that"
        " joint's encoder offset, the joint order and the URDF geometry"
    )


def _with_time(message: str, sample: int | None, time: np.ndarray) -> str:
    """``sample k (t = … s): …`` for a message of the closed-loop model that starts with ``sample k: ``."""
    if sample is None:
        return message
    return f"sample {sample} (t = {time[sample] - time[0]:.4f} s): {_SAMPLE_PREFIX.sub('', message)}"


def _input_sample(time: np.ndarray, stamp: float) -> int:
    """Index of the recorded sample nearest to ``stamp`` (s)."""
    right = int(np.clip(np.searchsorted(time, stamp), 1, time.shape[0] - 1))
    return right if abs(time[right] - stamp) < abs(stamp - time[right - 1]) else right - 1


def _at_recorded_sample(
    error: LoopClosureError, grid_sample: int, time: np.ndarray, grid: np.ndarray, where: str
) -> LoopClosureError:
    """The completion's error at ``grid_sample`` of the filtered grid, re-expressed at the recorded sample nearest in
    time."""
    sample = _input_sample(time, float(grid[grid_sample]))
    message = _SAMPLE_PREFIX.sub("", str(error))
    # Walking from the reference configuration failed: the pipeline has no q_guess argument to offer.
    message = message.removesuffix("; pass q_guess") + (
        "; if the robot works in another assembly mode, record the passive joints too, so that they give it"
        if message.endswith("; pass q_guess")
        else ""
    )
    return LoopClosureError(
        f"{where}sample {sample} (t = {time[sample] - time[0]:.4f} s): {message}",
        sample=sample,
        residual=error.residual,
        condition_number=error.condition_number,
    )


__all__ = [
    "PASSIVE_TOLERANCE_RAD",
    "CompletedRecording",
    "CompletedSegment",
    "OpenLoops",
    "complete_recording",
    "completed_at",
    "controlled_positions",
    "unwrapped",
]
