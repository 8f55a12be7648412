"""In-process payload re-identification: the load the robot now carries, from the next seconds of its job.

After a trigger (the estimator node's ``~/identify_payload``, e.g. when the gripper
closed), the next ``duration_s`` of the robot's normal motion are collected and the
load's ten inertial parameters are identified with the robot's own identified
parameters held fixed as a-priori knowledge ([Swevers2002] §3.2: the robot model is
known, only the load is unknown), by the linear estimate followed by the
maximum-likelihood one (:func:`~.payload_identification.identify_payload_ml`, any
motion, noise from the residuals; when the job leaves the load's inertia undetermined
and the search ends at the physical bound, the inertia about the centre of mass is fixed
to a solid sphere's and only the mass and centre of mass are estimated,
:func:`~.payload_identification.identify_payload_mass_and_centre`). The samples are joint torques (N·m, what the
recorder publishes); they are mapped back to motor currents through the drive chain
so the identification sees the motor-side equations it is written for.

The robot's identified parameters are corrected first where the load would absorb their error
(:class:`~.payload_identification.PriorCorrection`): the last ``reference_s`` of motion the
sliding window took before the trigger (:class:`RecentMotion`: rests such as waiting for the
part do not count) — the robot without the load, by the same assumption that lets the window
identify the robot — give the mass and first moment the prior lacks at the load's frame. A
model reduced by sensitivity drops a wrist's small first moments (they change the robot's own
torques by less than ``e_tol``), and a 4.5 kg load then shows them as 2-3 cm of centre of mass
along the tool axis; corrected, a few millimetres. The correction's
uncertainty adds to the load's. When the reference does not determine it (the robot stood
still, no reference yet) the prior is used as it is and the outcome says why.

The result is refused — with the reason — when the motion does not determine the load
well enough: the identification itself finds it rank-deficient (only the wrist moved,
[Swevers2002] §4.2) or the standard deviations exceed the quality bounds
(``max_mass_std_percent``, ``max_com_std_m``). Memory stays bounded by ``duration_s``
and ``reference_s`` + :data:`REFERENCE_MAX_REST_S` of samples.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from dynamic_identification.core.errors import DataError, IdentificationError
from dynamic_identification.core.identification import SignalSettings
from dynamic_identification.core.identification.payload import (
    PayloadEstimate,
    PayloadObservations,
    PriorCorrection,
    RobotPrior,
    add_correction_uncertainty,
    identify_payload_linear,
    identify_payload_mass_and_centre,
    identify_payload_ml,
    identify_prior_correction,
    recording_observations,
)
from dynamic_identification.core.settings_schema import PAYLOAD_METHODS, setting_field


@dataclass(frozen=True)
class PayloadReidentificationSettings:
    """How long to collect after a trigger and how good the estimate must be.

    Attributes
    ----------
    frame
        Frame the load is attached to (the gripper's or the flange's).
    duration_s
        Seconds of motion collected after the trigger, s of data.
    method
        ``"ml"`` (linear then maximum likelihood, [Swevers2002] eq. (18)) or ``"linear"``.
    max_mass_std_percent
        The estimate is refused when σ of the mass exceeds this percentage of the mass.
    max_com_std_m
        The estimate is refused when σ of any centre-of-mass coordinate exceeds this, m.
    stick_periods
        Decimation periods left out around a slow sample (the in-process estimator's
        ``window.stick_periods``; a job stops at every pick and place).
    reference_s
        Seconds of motion without the load before the trigger kept to correct the robot
        prior (module docstring), s; 0: the prior is used as it is.
    """

    frame: str
    duration_s: float = setting_field("payload.duration_s", "estimator")
    reference_s: float = setting_field("payload.reference_s", "estimator")
    method: str = setting_field("payload.method", "estimator")
    max_mass_std_percent: float = setting_field("payload.max_mass_std_percent", "estimator")
    max_com_std_m: float = setting_field("payload.max_com_std_m", "estimator")
    stick_periods: int = 3

    def __post_init__(self) -> None:
        if not self.frame:
            raise IdentificationError("frame must name the frame the payload is attached to")
        for name in ("duration_s", "max_mass_std_percent", "max_com_std_m"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0.0):
                raise IdentificationError(f"{name} must be finite and > 0, got {value}")
        if not (np.isfinite(self.reference_s) and self.reference_s >= 0.0):
            raise IdentificationError(f"reference_s must be finite and >= 0, got {self.reference_s}")
        if self.method not in PAYLOAD_METHODS:
            raise IdentificationError(f"method must be 'ml' or 'linear', got {self.method!r}")


@dataclass(frozen=True)
class PayloadOutcome:
    """A finished re-identification: the estimate when it passed, else why not.

    ``started_s``/``ended_s`` bound the data used (data time, s); ``estimate`` is
    ``None`` exactly when ``reason`` says why the load could not be identified.
    ``correction`` is what the motion before the trigger added to the robot prior
    (``None``: the prior as it is, and ``correction_note`` says why).
    """

    started_s: float
    ended_s: float
    samples: int
    estimate: PayloadEstimate | None
    reason: str
    correction: PriorCorrection | None = None
    correction_note: str = ""

    @property
    def accepted(self) -> bool:
        return self.estimate is not None


Motion = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Stamps (s, ``(N,)``), joint positions (rad) and joint torques (N·m), ``(N, n)``, in time order."""


REFERENCE_MAX_REST_S = 60.0
"""Rest, s, that :class:`RecentMotion` reaches back over (a robot waiting for its part); it keeps
at most ``span_s`` plus this of samples (memory bound)."""

_SUM_ROUNDING = 1e-9
"""Relative rounding of a sum of sample intervals: 200 intervals of 0.01 s make 2 s of motion."""

MOTION_MARGIN_S = 1.0
"""Samples of a rest kept on each side of motion, s: support for the filters at its start and end."""

MOTION_BASELINE_S = 0.1
"""Interval over which a joint's displacement tells motion from rest, s: long enough that encoder
quantisation and noise do not look like motion at 1 kHz, short against a move."""


def moving_samples(time_s: np.ndarray, q_rad: np.ndarray, min_speed_rad_s: float) -> np.ndarray:
    """``(N,)``: the samples at which some joint moves at ``min_speed_rad_s`` or faster.

    The speed is the mean over :data:`MOTION_BASELINE_S` centred on each sample (shorter at
    the ends), from the positions: what a reference needs is motion, whatever the recorded
    velocities say.
    """
    time = np.asarray(time_s, dtype=float)
    q = np.asarray(q_rad, dtype=float).reshape(time.size, -1)
    before = np.searchsorted(time, time - 0.5 * MOTION_BASELINE_S, side="left")
    after = np.searchsorted(time, time + 0.5 * MOTION_BASELINE_S, side="right") - 1
    span = time[after] - time[before]
    with np.errstate(divide="ignore", invalid="ignore"):
        speed = np.abs(q[after] - q[before]).max(axis=1, initial=0.0) / span
    return (span > 0.0) & (speed >= min_speed_rad_s)


class RecentMotion:
    """The robot's last ``span_s`` of motion: the reference of a payload re-identification.

    :meth:`motion` gives the shortest recent stretch of samples in which some joint moved
    (:func:`moving_samples`) for ``span_s`` in all, with the rests in between: a robot that
    waited for its part before the grasp still has the job it did before. At most ``span_s``
    plus :data:`REFERENCE_MAX_REST_S` of samples are kept (memory bound); after a longer rest
    the reference holds less motion. A step back in time starts it over (a
    restarted recording). Not thread-safe.

    Parameters
    ----------
    span_s
        Motion wanted, s; 0 keeps nothing.
    min_speed_rad_s
        Joint speed from which a sample counts as motion, rad/s (``signal.min_speed_rad_s``);
        0: every sample counts, rests included.
    """

    def __init__(self, span_s: float, *, min_speed_rad_s: float = 0.05) -> None:
        if not (np.isfinite(span_s) and span_s >= 0.0):
            raise IdentificationError(f"span_s must be finite and >= 0, got {span_s}")
        if not (np.isfinite(min_speed_rad_s) and min_speed_rad_s >= 0.0):
            raise IdentificationError(f"min_speed_rad_s must be finite and >= 0, got {min_speed_rad_s}")
        self._span_s = float(span_s)
        self._history_s = self._span_s + REFERENCE_MAX_REST_S
        self._min_speed_rad_s = float(min_speed_rad_s)
        self._parts: list[Motion] = []

    def add(self, time_s: np.ndarray, q: np.ndarray, torques_nm: np.ndarray) -> None:
        """Append samples (rows in time order, joints in model order); those older than the history are dropped."""
        time = np.atleast_1d(np.asarray(time_s, dtype=float))
        if time.size == 0 or self._span_s == 0.0:
            return
        if self._parts and time[0] < self._parts[-1][0][-1]:
            self._parts = []
        q_rad = np.atleast_2d(np.asarray(q, dtype=float))
        self._parts.append((time, q_rad, np.atleast_2d(np.asarray(torques_nm, dtype=float))))
        start = time[-1] - self._history_s
        while self._parts[0][0][-1] < start:
            self._parts.pop(0)
        first_time, first_q, first_tau = self._parts[0]
        keep = first_time >= start
        self._parts[0] = (first_time[keep], first_q[keep], first_tau[keep])

    def motion(self) -> Motion | None:
        """The last ``span_s`` of motion (all that is kept when it holds less), rests longer than
        2 × :data:`MOTION_MARGIN_S` cut out: each cut is a gap, which the signal pipeline never
        interpolates, and a rest would only dilute the motors' share of moving samples
        (``MIN_ACTUATED_FRACTION`` of the payload identification). ``None`` when nothing moved."""
        if not self._parts:
            return None
        time, q, torques = (np.concatenate(part) for part in zip(*self._parts, strict=True))
        moving = moving_samples(time, q, self._min_speed_rad_s)
        if not moving.any():
            return None
        interval = np.diff(time, prepend=time[0])
        moved_s = np.cumsum((interval * moving)[::-1])[::-1]  # motion in the intervals from each sample's on, s
        enough = np.flatnonzero(moved_s >= self._span_s * (1.0 - _SUM_ROUNDING))
        first = max(int(enough[-1]) - 1, 0) if enough.size else 0  # the sample that opens that interval
        moved_at = time[moving]
        after = np.clip(np.searchsorted(moved_at, time), 0, moved_at.size - 1)
        before = np.clip(after - 1, 0, moved_at.size - 1)
        near = np.minimum(np.abs(time - moved_at[before]), np.abs(moved_at[after] - time)) <= MOTION_MARGIN_S
        keep = near & (np.arange(time.size) >= first)
        return time[keep], q[keep], torques[keep]

    def clear(self) -> None:
        self._parts = []


class PayloadReidentification:
    """Collects samples after :meth:`trigger` and identifies the payload once enough have come.

    ``reference`` is the robot's motion without the load just before the trigger, used to
    correct ``prior`` (module docstring): the samples, or the :class:`RecentMotion` that keeps
    them, read when the payload is identified, so samples stamped before the trigger that are
    still on their way when it comes (a loaded machine) are part of it.
    The torques of both are read ``torque_delay_s`` (s) late: the delay the sliding window measured and aligned its
    own torques with (:attr:`~.in_process.SlidingWindowEstimator.torque_delay`), so the load and the robot's model
    see the same driver in time.
    Not thread-safe: feed it from one thread (the estimator node's worker).
    """

    def __init__(
        self,
        prior: RobotPrior,
        settings: PayloadReidentificationSettings,
        *,
        signal: SignalSettings | None = None,
        reference: Motion | RecentMotion | None = None,
        torque_delay_s: float = 0.0,
    ) -> None:
        self._prior = prior
        self._settings = settings
        self._signal = signal or SignalSettings()
        self._reference = reference
        self._torque_delay_s = float(torque_delay_s)
        self._time: list[np.ndarray] = []
        self._q: list[np.ndarray] = []
        self._tau: list[np.ndarray] = []
        self._start_s: float | None = None
        self._armed = False

    @property
    def settings(self) -> PayloadReidentificationSettings:
        return self._settings

    @property
    def collecting(self) -> bool:
        """Whether a trigger is pending (samples are being collected)."""
        return self._armed

    def trigger(self) -> None:
        """Start collecting with the next sample (a pending collection starts over)."""
        self._time, self._q, self._tau = [], [], []
        self._start_s = None
        self._armed = True

    def cancel(self) -> None:
        """Forget a pending collection."""
        self.trigger()
        self._armed = False

    def collected_s(self) -> float:
        """Data time collected since the trigger, s."""
        if not self._time:
            return 0.0
        return float(self._time[-1][-1] - self._time[0][0])

    def add_samples(self, time_s: np.ndarray, q: np.ndarray, torques_nm: np.ndarray) -> PayloadOutcome | None:
        """Append samples (rows in time order, joints in model order); the outcome once ``duration_s`` is covered.

        Samples beyond the duration are not kept. Returns ``None`` while collecting
        (or when no trigger is pending).
        """
        if not self._armed:
            return None
        time = np.atleast_1d(np.asarray(time_s, dtype=float))
        if time.size == 0:
            return None
        if self._start_s is None:
            self._start_s = float(time[0])
        end = self._start_s + self._settings.duration_s
        keep = time <= end
        self._time.append(time[keep])
        self._q.append(np.atleast_2d(np.asarray(q, dtype=float))[keep])
        self._tau.append(np.atleast_2d(np.asarray(torques_nm, dtype=float))[keep])
        if time[-1] < end:
            return None
        self._armed = False
        return self._identify()

    def _observations(self, time: np.ndarray, q: np.ndarray, torques: np.ndarray) -> PayloadObservations:
        """Filtered, decimated observations of joint torques mapped back to motor torques."""
        chain = self._prior.drive_chain
        return recording_observations(
            self._prior.robot,
            chain,
            time,
            q,
            chain.motor_currents(torques),
            settings=self._signal,
            stick_periods=self._settings.stick_periods,
            torque_delay_s=self._torque_delay_s,
        )

    def _correction(self) -> tuple[PriorCorrection | None, str]:
        """The prior's correction from the reference motion, or ``None`` and why not."""
        if self._settings.reference_s == 0.0:
            return None, "reference_s is 0"
        motion = self._reference.motion() if isinstance(self._reference, RecentMotion) else self._reference
        if motion is None:
            return None, "no motion without the load before the trigger"
        time, q, torques = motion
        try:
            reference = self._observations(time, q, torques)
            return identify_prior_correction(self._prior, self._settings.frame, reference), ""
        except IdentificationError as error:
            return None, f"the motion before the trigger does not determine it: {error}"

    def _maximum_likelihood(
        self, prior: RobotPrior, observations: PayloadObservations, linear: PayloadEstimate
    ) -> PayloadEstimate:
        """The maximum-likelihood load, or mass and centre of mass alone when the job leaves the inertia open.

        A job barely turns the load: the full search then ends at (or fails near) the physical
        bound with an arbitrary inertia that drags the centre of mass along; the inertia about
        the centre of mass is then fixed to a solid sphere's
        (:func:`~.payload_identification.identify_payload_mass_and_centre`).
        """
        frame = self._settings.frame
        try:
            estimate = identify_payload_ml(prior, frame, observations, efficiency=False, initial=linear)
        except IdentificationError:
            estimate = None
        if estimate is not None and not estimate.at_bound:
            return estimate
        return identify_payload_mass_and_centre(prior, frame, observations, initial=linear)

    def _identify(self) -> PayloadOutcome:
        time = np.concatenate(self._time)
        q = np.concatenate(self._q)
        torques = np.concatenate(self._tau)
        self._time, self._q, self._tau = [], [], []
        started, ended = float(time[0]), float(time[-1])
        correction, note = self._correction()
        prior = self._prior if correction is None else self._prior.corrected(correction)
        frame = self._settings.frame
        try:
            observations = self._observations(time, q, torques)
            estimate = identify_payload_linear(prior, frame, observations)
            if self._settings.method == "ml":
                estimate = self._maximum_likelihood(prior, observations, estimate)
        except IdentificationError as error:
            return PayloadOutcome(
                started,
                ended,
                time.size,
                None,
                f"the motion does not determine the payload: {error}",
                correction=correction,
                correction_note=note,
            )
        if correction is not None:
            estimate = add_correction_uncertainty(estimate, correction)
        estimate = replace(estimate, torque_delay_s=self._torque_delay_s)
        reason = _quality_problem(estimate, self._settings)
        return PayloadOutcome(
            started,
            ended,
            time.size,
            None if reason else estimate,
            reason,
            correction=correction,
            correction_note=note,
        )


def _quality_problem(estimate: PayloadEstimate, settings: PayloadReidentificationSettings) -> str:
    """Why ``estimate`` is not good enough to use, or an empty string."""
    payload = estimate.payload
    std = payload.std
    if std is None:
        raise DataError("the payload estimate carries no standard deviations")
    mass_percent = 100.0 * std.mass_kg / payload.mass_kg
    if not mass_percent <= settings.max_mass_std_percent:
        return (
            f"the motion does not excite the payload enough: σ of the mass is {mass_percent:.3g} % of"
            f" {payload.mass_kg:.4g} kg (max_mass_std_percent = {settings.max_mass_std_percent:g})"
        )
    com_std = float(np.max(std.com_m))
    if not com_std <= settings.max_com_std_m:
        return (
            f"the motion does not excite the payload enough: σ of the centre of mass reaches {1e3 * com_std:.3g} mm"
            f" (max_com_std_m = {settings.max_com_std_m:g} m)"
        )
    return ""
