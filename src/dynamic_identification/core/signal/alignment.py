"""Time alignment of joint states and motor currents, and current → joint-torque conversion.

A robot driver publishes joint states and motor currents on two topics, each with
its own stamps, jitter and arrival order. :class:`StreamAligner` pairs them: every
joint state is emitted once, at its own stamp, with the motor currents linearly
interpolated between the two current samples that bracket that stamp. A joint
state whose bracketing currents are too far from it (a gap, a silent current
stream) is counted and dropped, never emitted with a guess.

:func:`current_to_torque` turns the aligned currents into joint torques through
the drive chain, linearly (``τ = Gᵀ (k ⊙ i)``, [Gautier2013] eq. (7)) or with the
third-order motor model of [Swevers2002] eq. (4).

Times are float seconds, samples are rows and joints columns
(:mod:`dynamic_identification.core`).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dynamic_identification.core.errors import DataError
from dynamic_identification.core.mechanism.robot import DriveChain
from dynamic_identification.core.settings_schema import default
from dynamic_identification.core.signal.stamps import Stamp, classify_stamp

POLYNOMIAL_ORDER = 3
"""Order of the current → motor-torque polynomial of [Swevers2002] eq. (4)."""

DEFAULT_TOLERANCE_S: float = default("tolerance_s", "recorder")
"""Largest distance (s) between a joint-state stamp and each bracketing current sample:
5 periods at 1 kHz, 2.5 at 500 Hz, so one lost current sample is bridged but a longer gap is not."""

DEFAULT_MAX_DELAY_S: float = default("max_delay_s", "recorder")
"""How long (s, stamp time) a joint state waits for its currents before it is dropped: the two
topics arrive through separate queues, and on a loaded machine one runs up to a few hundred
milliseconds ahead of the other (0.1 s dropped 5 % of a 1 kHz stream, ``bench/bench_recorder.py``)."""


def current_polynomial(coefficients: Sequence[float] | np.ndarray, n_joints: int) -> np.ndarray:
    """Per-motor coefficients ``[c0, c1, c2, c3]`` of [Swevers2002] eq. (4), shape ``(n, 4)``.

    Parameters
    ----------
    coefficients
        ``4 n`` numbers, motor by motor (a flat ROS parameter), or an ``(n, 4)`` array:
        ``c0`` in N·m, ``c1`` in N·m/A, ``c2`` in N·m/A², ``c3`` in N·m/A³ (motor side).
    n_joints
        Number of motors ``n``.

    Raises
    ------
    DataError
        If the size is not ``4 n`` or a value is not finite.
    """
    array = np.array(coefficients, dtype=float)
    width = POLYNOMIAL_ORDER + 1
    if array.size != width * n_joints or array.ndim not in (1, 2) or (array.ndim == 2 and array.shape[1] != width):
        raise DataError(
            f"current polynomial needs {width} coefficients [c0, c1, c2, c3] per motor ({width * n_joints} for"
            f" {n_joints} motors), got shape {array.shape}"
        )
    array = array.reshape(n_joints, width)
    if not np.all(np.isfinite(array)):
        raise DataError(f"current polynomial coefficients must be finite, got {array.tolist()}")
    array.setflags(write=False)
    return array


def motor_torques(currents_a: np.ndarray, polynomial: np.ndarray) -> np.ndarray:
    """Motor torques in N·m (motor side) of [Swevers2002] eq. (4) without its ratio ``μ``.

    ``τ_M = sign(I) (c0 + c1 |I| + c2 I² + c3 |I|³)`` per motor, an odd function of the
    current; the transmission (``μ`` in the paper) is applied by the drive chain.
    ``currents_a`` has shape ``(N, n)`` or ``(n,)``, ``polynomial`` shape ``(n, 4)``.
    """
    currents = np.asarray(currents_a, dtype=float)
    magnitude = np.abs(currents)
    c0, c1, c2, c3 = (polynomial[:, k] for k in range(POLYNOMIAL_ORDER + 1))
    return np.sign(currents) * (c0 + magnitude * (c1 + magnitude * (c2 + magnitude * c3)))


def current_to_torque(
    currents: np.ndarray | Sequence[float] | Sequence[Sequence[float]],
    drive_chain: DriveChain,
    polynomial: np.ndarray | Sequence[float] | None = None,
) -> np.ndarray:
    """Joint torques in N·m from motor currents in A, coupling applied.

    Linear, ``τ = Gᵀ (k ⊙ i)`` with the drive gains ``k`` ([Gautier2013] eq. (7),
    :meth:`~dynamic_identification.core.mechanism.robot.DriveChain.joint_torques`), or, with
    ``polynomial``, ``τ = Gᵀ h(i)`` where ``h`` is the third-order motor model of
    [Swevers2002] eq. (4), ``h_i(I) = sign(I) (c0 + c1 |I| + c2 I² + c3 |I|³)``. The
    polynomial replaces the drive gains (``c1`` plays ``k``); ``c0 = c2 = c3 = 0``,
    ``c1 = k`` gives the linear model. ``G = diag(N) C`` as in the drive chain.

    Parameters
    ----------
    currents
        Motor currents in A, shape ``(N, n)`` or ``(n,)``.
    drive_chain
        Gear ratios, drive gains and coupling of the ``n`` motors.
    polynomial
        ``None`` (linear) or coefficients accepted by :func:`current_polynomial`.

    Returns
    -------
    numpy.ndarray
        Joint torques in N·m, the shape of ``currents``.

    Raises
    ------
    DataError
        If ``currents`` does not have ``n`` columns or ``polynomial`` has the wrong size.
    """
    array = np.asarray(currents, dtype=float)
    n = drive_chain.n_joints
    if array.ndim not in (1, 2) or array.shape[-1] != n:
        raise DataError(f"currents must have shape (N, {n}) or ({n},), got shape {array.shape}")
    if polynomial is None:
        return drive_chain.joint_torques(array)
    return motor_torques(array, current_polynomial(polynomial, n)) @ drive_chain.transmission


@dataclass(frozen=True)
class StreamStats:
    """Counts of one input stream.

    ``received`` counts every sample offered; ``accepted`` those kept; the
    ``rejected_*`` counts those refused for a non-finite stamp or value, a stamp
    equal to the previous one, or a stamp earlier than it.
    """

    received: int = 0
    accepted: int = 0
    rejected_nan: int = 0
    rejected_duplicate: int = 0
    rejected_out_of_order: int = 0

    @property
    def rejected(self) -> int:
        return self.rejected_nan + self.rejected_duplicate + self.rejected_out_of_order


@dataclass(frozen=True)
class AlignmentStats:
    """Counts of a :class:`StreamAligner`.

    Attributes
    ----------
    joint_states, currents
        Per-stream counts.
    aligned
        Joint states emitted with their currents (or efforts, with ``effort_is_torque``).
    unaligned
        Accepted joint states dropped: no current sample within the tolerance on one
        side of their stamp, or none arrived within ``max_delay_s``.
    pending
        Joint states waiting for currents.
    before_currents
        Accepted joint states dropped because they are stamped before the first current since the start or the
        last :meth:`StreamAligner.reset`: the currents had not begun (a recorder started while the robot runs
        subscribes to the two topics one after the other). Not in ``unaligned``: no current was lost.
    """

    joint_states: StreamStats
    currents: StreamStats
    aligned: int
    unaligned: int
    pending: int
    before_currents: int = 0

    @property
    def dropped(self) -> int:
        """Joint states offered and not emitted: refused, unaligned, before the first current or still pending."""
        return self.joint_states.received - self.aligned

    def drop_causes(self, tolerance_s: float) -> str:
        """Why :attr:`dropped` joint states were dropped: each cause that dropped any, with its count, comma-separated
        (``tolerance_s``: the aligner's, s, named in the cause it sets)."""
        states = self.joint_states
        causes = (
            (self.unaligned, f"without motor currents within tolerance_s={tolerance_s:g} s on either side"),
            (self.before_currents, "before the first current"),
            (self.pending, "after the last current"),
            (states.rejected_duplicate, "with a repeated stamp"),
            (states.rejected_out_of_order, "with an out-of-order stamp"),
            (states.rejected_nan, "with a non-finite stamp or value"),
        )
        return ", ".join(f"{count} {cause}" for count, cause in causes if count)


@dataclass(frozen=True)
class AlignedSample:
    """One joint state with its motor currents at its stamp.

    Attributes
    ----------
    stamp_s
        The joint state's stamp, s.
    position
        Joint positions in rad, shape ``(n,)``.
    velocity
        Joint velocities in rad/s, or ``None`` when the joint state has none.
    effort
        The joint state's effort as published (joint torque in N·m with
        ``effort_is_torque``), or ``None`` (always with ``effort_is_current``).
    current
        Motor currents in A interpolated at ``stamp_s`` (the joint state's effort with
        ``effort_is_current``); ``None`` with ``effort_is_torque``.
    """

    stamp_s: float
    position: np.ndarray
    velocity: np.ndarray | None
    effort: np.ndarray | None
    current: np.ndarray | None


class _Counter:
    """Mutable counts behind a :class:`StreamStats` snapshot."""

    __slots__ = ("received", "accepted", "nan", "duplicate", "out_of_order", "last", "last_values")

    def __init__(self) -> None:
        self.received = self.accepted = self.nan = self.duplicate = self.out_of_order = 0
        self.last = -math.inf
        self.last_values: np.ndarray | None = None

    def admit(self, stamp_s: float, *arrays: np.ndarray | None, values: np.ndarray | None = None) -> bool:
        """Count a sample; whether it is finite and later than the last accepted one, or, given its ``values``
        (positions), stamped again with the last accepted stamp but with values of its own
        (:func:`~dynamic_identification.core.signal.stamps.classify_stamp`)."""
        self.received += 1
        finite = math.isfinite(stamp_s)
        for array in arrays:
            finite = finite and (array is None or bool(np.isfinite(array).all()))
        if not finite:
            self.nan += 1
            return False
        new_values = values is not None and self.last_values is not None and bool(np.any(values != self.last_values))
        if classify_stamp(stamp_s, self.last, new_values=new_values) not in (Stamp.NEW, Stamp.AGAIN):
            if stamp_s == self.last:
                self.duplicate += 1
            else:
                self.out_of_order += 1
            return False
        self.last, self.last_values = stamp_s, values
        self.accepted += 1
        return True

    def snapshot(self) -> StreamStats:
        return StreamStats(self.received, self.accepted, self.nan, self.duplicate, self.out_of_order)


class StreamAligner:
    """Pairs joint states with motor currents at the joint-state stamps.

    Feed samples with :meth:`add_joint_state` and :meth:`add_currents` in the order
    they arrive (the two streams may interleave in any order); each call returns the
    joint states that became complete, in stamp order. A joint state at ``t`` is
    emitted with

    * the current sample stamped exactly ``t``, if there is one, else
    * ``i(t) = i_a + (t - t_a) / (t_b - t_a) (i_b - i_a)`` between the last current
      sample ``t_a < t`` and the first ``t_b > t``, when ``t - t_a`` and ``t_b - t``
      are both at most ``tolerance_s``.

    It is dropped and counted ``unaligned`` when the bracketing samples are farther
    apart (a gap), when no current precedes it, or when it has waited ``max_delay_s``
    of stamp time (the newest stamp of either stream) without a later current; a joint state
    stamped before the first current (since the start or the last :meth:`reset`) is dropped and
    counted ``before_currents`` instead: the currents stream had not begun, nothing was lost.
    Per stream, samples with a non-finite stamp or value, a repeated stamp, or a
    stamp earlier than the last accepted one are refused and counted; a joint state under the
    last one's stamp with positions of its own is a sample the driver stamped again, accepted
    (offline identification places it by the sample order).

    With ``effort_is_torque`` (Gazebo's ``gz_ros2_control``: ``JointState.effort``
    already is the joint torque) no currents are needed: every accepted joint state
    is emitted at once and :meth:`add_currents` only counts. With ``effort_is_current``
    (a driver that publishes the motor currents in ``JointState.effort`` of the joint
    states) the currents come in the joint state itself, at its stamp: every accepted
    joint state is emitted at once with its effort as the currents, and
    :meth:`add_currents` only counts.

    Memory is bounded: pending joint states and buffered currents span at most
    ``max_delay_s`` (plus one sample) of stamp time, and each sample is handled in
    O(1) amortised time.

    Parameters
    ----------
    n_joints
        Joints per sample ``n``.
    tolerance_s
        Largest distance between a joint-state stamp and each bracketing current, s (> 0).
    max_delay_s
        Longest wait for currents, s of stamp time (> 0).
    effort_is_torque
        Take joint torques from the joint states' effort; no currents.
    effort_is_current
        Take the motor currents (A) from the joint states' effort; no second stream.
    """

    def __init__(
        self,
        n_joints: int,
        *,
        tolerance_s: float = DEFAULT_TOLERANCE_S,
        max_delay_s: float = DEFAULT_MAX_DELAY_S,
        effort_is_torque: bool = False,
        effort_is_current: bool = False,
    ) -> None:
        if isinstance(n_joints, bool) or not isinstance(n_joints, (int, np.integer)) or n_joints < 1:
            raise DataError(f"n_joints must be an integer >= 1, got {n_joints!r}")
        if effort_is_torque and effort_is_current:
            raise DataError("the joint states' effort is either joint torques or motor currents, not both")
        for name, value in (("tolerance_s", tolerance_s), ("max_delay_s", max_delay_s)):
            if not (math.isfinite(value) and value > 0.0):
                raise DataError(f"{name} must be finite and > 0, got {value!r}")
        self.n_joints = int(n_joints)
        self.tolerance_s = float(tolerance_s)
        self.max_delay_s = float(max_delay_s)
        self.effort_is_torque = bool(effort_is_torque)
        self.effort_is_current = bool(effort_is_current)
        self._joint_states = _Counter()
        self._currents = _Counter()
        self._aligned = 0
        self._unaligned = 0
        self._before_currents = 0
        self._first_current = math.inf
        self._pending: deque[tuple[float, np.ndarray, np.ndarray | None, np.ndarray | None]] = deque()
        self._buffer: deque[tuple[float, np.ndarray]] = deque()
        self._newest = -math.inf

    @property
    def stats(self) -> AlignmentStats:
        """A snapshot of the counts."""
        return AlignmentStats(
            joint_states=self._joint_states.snapshot(),
            currents=self._currents.snapshot(),
            aligned=self._aligned,
            unaligned=self._unaligned,
            pending=len(self._pending),
            before_currents=self._before_currents,
        )

    def reset(self) -> None:
        """Forget pending and buffered samples and the last stamps (a bag loop, a simulation reset).

        Pending joint states are counted ``unaligned`` (``before_currents`` when stamped before the first current);
        the other counts are kept.
        """
        for stamp, *_ in self._pending:
            self._drop(stamp)
        self._pending.clear()
        self._buffer.clear()
        self._joint_states.last = self._currents.last = self._newest = -math.inf
        self._first_current = math.inf

    def _drop(self, stamp: float) -> None:
        """Count a pending joint state at ``stamp`` that no current will complete."""
        if stamp < self._first_current:
            self._before_currents += 1
        else:
            self._unaligned += 1

    def _vector(self, name: str, value: np.ndarray | Sequence[float] | None) -> np.ndarray | None:
        if value is None:
            return None
        array = np.asarray(value, dtype=float)
        if array.shape != (self.n_joints,):
            raise DataError(f"{name} must have shape ({self.n_joints},), got shape {array.shape}")
        return array

    def add_joint_state(
        self,
        stamp_s: float,
        position: np.ndarray | Sequence[float],
        velocity: np.ndarray | Sequence[float] | None = None,
        effort: np.ndarray | Sequence[float] | None = None,
    ) -> list[AlignedSample]:
        """Offer a joint state (rad, rad/s, effort); the samples completed by it.

        Raises
        ------
        DataError
            If an array does not have shape ``(n,)``, or ``effort`` is ``None`` with
            ``effort_is_torque`` or ``effort_is_current``.
        """
        q = self._vector("position", position)
        dq = self._vector("velocity", velocity)
        tau = self._vector("effort", effort)
        if q is None:
            raise DataError("position is required, got None")
        if self.effort_is_torque and tau is None:
            raise DataError("effort (joint torque, N·m) is required with effort_is_torque, got None")
        if self.effort_is_current and tau is None:
            raise DataError("effort (motor currents, A) is required with effort_is_current, got None")
        stamp = float(stamp_s)
        if not self._joint_states.admit(stamp, q, dq, tau, values=q):
            return []
        if self.effort_is_torque or self.effort_is_current:
            # The torques or the currents came with the joint state, at its stamp: nothing to align.
            self._aligned += 1
            if self.effort_is_current:
                return [AlignedSample(stamp, q, dq, None, tau)]
            return [AlignedSample(stamp, q, dq, tau, None)]
        self._pending.append((stamp, q, dq, tau))
        self._newest = max(self._newest, stamp)
        return self._resolve()

    def add_currents(self, stamp_s: float, currents: np.ndarray | Sequence[float]) -> list[AlignedSample]:
        """Offer a sample of motor currents (A); the joint states completed by it.

        Raises
        ------
        DataError
            If ``currents`` does not have shape ``(n,)``.
        """
        array = self._vector("currents", currents)
        if array is None:
            raise DataError("currents are required, got None")
        stamp = float(stamp_s)
        if not self._currents.admit(stamp, array) or self.effort_is_torque or self.effort_is_current:
            return []
        self._first_current = min(self._first_current, stamp)
        self._buffer.append((stamp, array))
        self._newest = max(self._newest, stamp)
        return self._resolve()

    def _resolve(self) -> list[AlignedSample]:
        """Emit or drop pending joint states, oldest first, as far as the currents allow."""
        emitted: list[AlignedSample] = []
        buffer = self._buffer
        horizon = self._newest - self.max_delay_s
        while self._pending:
            stamp, q, dq, tau = self._pending[0]
            # Later joint states have later stamps: currents before the last one at or before `stamp` are not needed.
            while len(buffer) >= 2 and buffer[1][0] <= stamp:
                buffer.popleft()
            current = self._current_at(stamp)
            if current is None:
                if buffer and (buffer[0][0] > stamp or len(buffer) >= 2):
                    decided = True  # no current before it, or a gap around it: no later current can help
                else:
                    decided = stamp < horizon  # waited max_delay_s for the next current
                if not decided:
                    break
                self._pending.popleft()
                self._drop(stamp)
                continue
            self._pending.popleft()
            self._aligned += 1
            emitted.append(AlignedSample(stamp, q, dq, tau, current))
        if not self._pending:
            # Keep the newest current before the horizon (it may bracket a late joint state) and all after it.
            keep_from = max(horizon, self._joint_states.last)
            while len(buffer) >= 2 and buffer[1][0] <= keep_from:
                buffer.popleft()
        return emitted

    def _current_at(self, stamp: float) -> np.ndarray | None:
        """Currents interpolated at ``stamp``, or ``None`` when not (yet) bracketed within the tolerance."""
        buffer = self._buffer
        if not buffer:
            return None
        t_a, i_a = buffer[0]
        if t_a == stamp:
            return i_a
        if t_a > stamp or len(buffer) < 2:
            return None
        t_b, i_b = buffer[1]
        if stamp - t_a > self.tolerance_s or t_b - stamp > self.tolerance_s:
            return None
        return i_a + ((stamp - t_a) / (t_b - t_a)) * (i_b - i_a)
