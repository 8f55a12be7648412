"""Realistic recordings: what ros2_control drivers and real sensors hand to the identification.

Ideal data (exact inverse dynamics at exact instants plus white noise) flatters every
method. This module produces recordings the way a real robot does, so that the
package's defaults can be tuned and judged on them:

* **motion** — a PD + feedforward controller tracks the desired trajectory on the
  robot with rotor inertia, Stribeck friction and true stiction
  (:class:`~.stick_slip.StickSlipSimulator`): the recorded motion is what the
  controller achieved, with stick phases at velocity reversals and during dwells;
* **time stamps** (:func:`plan_stamps`) — a nominal rate and possibly a different true
  rate, a stamping clock that drifts (ppm), Gaussian jitter, late bursts (the stamping
  thread stalls and the samples taken meanwhile are stamped, bunched, on delivery),
  dropped messages (gaps of 50-500 ms), repeated rows and a finite stamp resolution
  (a millisecond counter makes the median step of a 978 Hz stream read 1 ms);
* **positions** — motor-side encoder counts through the gear ratio (with a fraction of
  a count of interpolation noise);
* **velocities** — what a drive publishes: the backward difference of the encoder at
  the control period, low-passed by a first-order filter of time constant ``τ_v``
  (``scipy.signal.lfilter``), plus white noise and a resolution; at low frequency this
  lags the true velocity by about ``dt + τ_v``;
* **torques** — the torque the motors applied (or, for link-side torque sensors, the
  torque transmitted to the link) plus a constant offset, a slowly drifting sensor
  offset (a mean-reverting random walk tared at the start, plus a slow sinusoid),
  coloured noise (white noise low-passed by a ``scipy.signal.butter`` filter) and a
  little white noise, and optionally the ripple of strain-wave gears at a multiple of
  the motor angle; **currents** are those torques through the drive chain
  (``i = (Gᵀ)⁻¹ τ / k``, [Gautier2013] eq. (7)), quantised by the current resolution.

:class:`GroundTruth` keeps everything needed to score an identification: the true
standard parameters ([Gautier2013] eq. (3): the URDF's inertial parameters and the
drive terms ``Ia, Fv, Fc, off``), the true motion and the noise-free torques at the
recorded rows, and every disturbance separately, so that
``measured torque − disturbance = noise-free torque`` exactly.

Presets (:func:`arm6_preset`, :func:`ur5_preset`, :func:`panda_preset`) give plausible
drive chains, friction, rotor inertia, noise and timing for three robots; their
figures are *invented* (of the right order for such robots, not measured on them).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
from scipy import signal as sps

from dynamic_identification.core.errors import DataError, IdentificationError, ModelError
from dynamic_identification.core.excitation.fourier import FourierTrajectory
from dynamic_identification.core.excitation.optimisation import random_fourier
from dynamic_identification.core.excitation.process import default_process_areas, pick_and_place
from dynamic_identification.core.excitation.safety import JointLimits
from dynamic_identification.core.excitation.trajectory import SampledTrajectory, interpolate_trajectory
from dynamic_identification.core.mechanism.robot import (
    DriveChain,
    DriveParameters,
    DriveTerms,
    RobotModel,
    load_robot,
    standard_parameter_names,
    standard_parameters,
)
from dynamic_identification.core.simulation import per_joint_values, rigid_body_torques
from dynamic_identification.testing.stick_slip import StickSlipSimulator, StribeckFriction

Signal = Literal["effort", "current"]
TorqueSensor = Literal["motor", "link"]

PerJoint = float | tuple[float, ...]
"""A value for every joint (scalar) or one per joint."""


def _positive(name: str, value: float) -> None:
    if not (np.isfinite(value) and value > 0.0):
        raise IdentificationError(f"{name} must be finite and > 0, got {value}")


def _non_negative(name: str, value: float) -> None:
    if not (np.isfinite(value) and value >= 0.0):
        raise IdentificationError(f"{name} must be finite and >= 0, got {value}")


def _interval(name: str, value: tuple[float, float]) -> None:
    if len(value) != 2 or not (np.isfinite(value[0]) and np.isfinite(value[1]) and 0.0 <= value[0] <= value[1]):
        raise IdentificationError(f"{name} must be (low, high) with 0 <= low <= high, got {value}")


@dataclass(frozen=True)
class StampSettings:
    """How samples are taken and stamped.

    Attributes
    ----------
    nominal_rate_hz
        The rate the driver is configured for, Hz.
    true_rate_hz
        The rate samples are really taken at (true time), Hz; ``None``: the nominal rate.
    clock_drift_ppm
        The stamping clock runs ``1 + ppm·10⁻⁶`` times faster than true time.
    jitter_std_s
        Standard deviation of the Gaussian stamp error, s.
    late_bursts_per_s
        Mean rate of stalls of the stamping thread (Poisson), 1/s.
    late_burst_s
        Range of a stall's length, s (uniform): the samples taken during it are stamped
        when it ends, ``catch_up_s`` apart. This is what a driver whose loop is paced by
        the robot's packets does (``ur_robot_driver`` reads RTDE packets and stamps each
        on reading): after a stall the buffered packets are read in a burst, their values
        from when the robot sent them, their stamps from when they were read.
    catch_up_s
        Spacing of the bunched stamps after a stall, s.
    gaps
        Number of dropped stretches of messages.
    gap_s
        Range of a gap's length, s (uniform).
    hiccup_interval_s
        Range of the time between hiccups, s (uniform); ``(0, 0)``: none. A hiccup is
        what a real driver's loop does every few seconds: it misses a few cycles, so a
        handful of consecutive samples never reach the recording (a 1 kHz log with an
        8.5 ms step every 3-7 s).
    hiccup_samples
        Range of the number of consecutive samples a hiccup loses (uniform integers).
    duplicate_fraction
        Fraction of rows published twice (same stamp, same values).
    resolution_s
        Stamp resolution, s (stamps are truncated to it, as by a counter); 0: exact.
    origin_s
        Stamp of true time 0, s (e.g. an epoch time ~1.7e9 s, as ROS stamps are).
    """

    nominal_rate_hz: float = 1000.0
    true_rate_hz: float | None = None
    clock_drift_ppm: float = 0.0
    jitter_std_s: float = 3e-5
    late_bursts_per_s: float = 0.05
    late_burst_s: tuple[float, float] = (2e-3, 1e-2)
    catch_up_s: float = 2e-5
    gaps: int = 1
    gap_s: tuple[float, float] = (0.05, 0.5)
    hiccup_interval_s: tuple[float, float] = (0.0, 0.0)
    hiccup_samples: tuple[int, int] = (5, 10)
    duplicate_fraction: float = 1e-3
    resolution_s: float = 0.0
    origin_s: float = 0.0

    def __post_init__(self) -> None:
        _positive("nominal_rate_hz", self.nominal_rate_hz)
        if self.true_rate_hz is not None:
            _positive("true_rate_hz", self.true_rate_hz)
        if not (np.isfinite(self.clock_drift_ppm) and abs(self.clock_drift_ppm) < 1e5):
            raise IdentificationError(f"clock_drift_ppm must be finite and within ±1e5, got {self.clock_drift_ppm}")
        for name in ("jitter_std_s", "late_bursts_per_s", "catch_up_s", "resolution_s"):
            _non_negative(name, getattr(self, name))
        _interval("late_burst_s", self.late_burst_s)
        _interval("gap_s", self.gap_s)
        _interval("hiccup_interval_s", self.hiccup_interval_s)
        _interval("hiccup_samples", self.hiccup_samples)
        if self.hiccup_interval_s[1] > 0.0 and self.hiccup_interval_s[0] <= 0.0:
            raise IdentificationError(
                f"hiccup_interval_s must be (0, 0) or start above 0, got {self.hiccup_interval_s}"
            )
        if self.gaps < 0:
            raise IdentificationError(f"gaps must be >= 0, got {self.gaps}")
        if not 0.0 <= self.duplicate_fraction < 1.0:
            raise IdentificationError(f"duplicate_fraction must be in [0, 1), got {self.duplicate_fraction}")
        if not np.isfinite(self.origin_s):
            raise IdentificationError(f"origin_s must be finite, got {self.origin_s}")

    @property
    def rate_hz(self) -> float:
        """The true sampling rate, Hz."""
        return float(self.true_rate_hz if self.true_rate_hz is not None else self.nominal_rate_hz)


@dataclass(frozen=True)
class StampPlan:
    """Which samples a recording holds and their stamps (:func:`plan_stamps`).

    Attributes
    ----------
    sample_time_s
        True instants of the regular sample sequence, ``k / true_rate``, s, shape ``(K,)``.
    rows
        Index into that sequence of each recorded row, shape ``(M,)`` (gaps leave some
        out, duplicates repeat some).
    stamps_s
        Recorded stamp of each row, s, non-decreasing, shape ``(M,)``.
    duplicated
        Whether a row repeats the previous one, shape ``(M,)``.
    late
        Whether a row was stamped late by a stall, shape ``(M,)``.
    """

    sample_time_s: np.ndarray
    rows: np.ndarray
    stamps_s: np.ndarray
    duplicated: np.ndarray
    late: np.ndarray

    @property
    def true_time_s(self) -> np.ndarray:
        """True instant of each row, s."""
        return self.sample_time_s[self.rows]


def plan_stamps(settings: StampSettings, duration_s: float, rng: np.random.Generator) -> StampPlan:
    """Sample instants and stamps of a recording of ``duration_s`` (true time, s).

    Samples are taken at ``t_k = k / true_rate``. A sample's stamp is
    ``origin + (1 + ppm·10⁻⁶)(t_k + e_k)`` truncated to the resolution, with Gaussian
    ``e_k``; a stall of length ``L`` starting at ``T`` stamps every sample taken in
    ``[T, T + L)`` at ``T + L + j·catch_up``. Stamps are then made non-decreasing (a
    stamp that would go back repeats its predecessor). Gaps start uniformly within the
    middle 80 % of the recording; hiccups follow each other at intervals drawn from
    ``hiccup_interval_s``, each losing ``hiccup_samples`` consecutive samples.

    Raises
    ------
    IdentificationError
        If ``duration_s`` is not finite and > 0.
    """
    _positive("duration_s", duration_s)
    rate = settings.rate_hz
    count = int(np.floor(duration_s * rate * (1.0 + 1e-12))) + 1
    time = np.arange(count) / rate
    error = rng.normal(0.0, settings.jitter_std_s, count) if settings.jitter_std_s > 0.0 else np.zeros(count)
    late = np.zeros(count, dtype=bool)
    for _ in range(int(rng.poisson(settings.late_bursts_per_s * duration_s))):
        start = rng.uniform(0.0, duration_s)
        length = rng.uniform(*settings.late_burst_s)
        stalled = np.flatnonzero((time >= start) & (time < start + length))
        error[stalled] = start + length + settings.catch_up_s * np.arange(stalled.size) - time[stalled]
        late[stalled] = True
    relative = (1.0 + 1e-6 * settings.clock_drift_ppm) * (time + error)
    if settings.resolution_s > 0.0:
        relative = np.floor(relative / settings.resolution_s) * settings.resolution_s
    stamps = np.maximum.accumulate(settings.origin_s + relative)
    keep = np.ones(count, dtype=bool)
    for _ in range(settings.gaps):
        start = rng.uniform(0.1, 0.9) * duration_s
        keep &= ~((time >= start) & (time < start + rng.uniform(*settings.gap_s)))
    kept = np.flatnonzero(keep)
    repeat = rng.random(kept.size) < settings.duplicate_fraction
    rows = np.repeat(kept, 1 + repeat.astype(int))
    duplicated = np.zeros(rows.size, dtype=bool)
    duplicated[np.cumsum(1 + repeat.astype(int))[repeat] - 1] = True
    recorded = ~_hiccups(settings, time, rng.spawn(1)[0])[rows]
    rows, duplicated = rows[recorded], duplicated[recorded]
    return StampPlan(sample_time_s=time, rows=rows, stamps_s=stamps[rows], duplicated=duplicated, late=late[rows])


def _hiccups(settings: StampSettings, time: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Which samples of the regular sequence ``time`` (s) the driver's hiccups lose.

    Drawn from their own generator (spawned, so the other draws of :func:`plan_stamps` do not
    depend on them): a recording with hiccups is the one without them less the lost rows.
    """
    lost = np.zeros(time.size, dtype=bool)
    low, high = settings.hiccup_interval_s
    if high <= 0.0:
        return lost
    at = rng.uniform(low, high)
    while at < time[-1]:
        first = int(np.searchsorted(time, at))
        lost[first : first + int(rng.integers(settings.hiccup_samples[0], settings.hiccup_samples[1] + 1))] = True
        at += rng.uniform(low, high)
    return lost


@dataclass(frozen=True)
class SensorSettings:
    """What the encoders, the drive's velocity estimate and the torque (or current) sensing add.

    Per-joint values are a scalar for every joint or one value per joint; torques are
    joint-side N·m.

    Attributes
    ----------
    encoder_counts_per_rev
        Motor-encoder counts per motor revolution; the joint resolution is
        ``2π / (counts · N)`` for gear ratio ``N``.
    position_noise_counts
        Standard deviation of the encoder's interpolation noise, counts (added before rounding).
    velocity_time_constant_s
        ``τ_v`` of the drive's first-order velocity filter, s (0: the raw backward difference).
    velocity_noise_std_rad_s
        White noise on the published velocity, rad/s.
    velocity_resolution_rad_s
        Resolution of the published velocity, rad/s (0: none).
    torque_sensor
        ``motor``: the torque the motors apply, from currents or a motor-side sensor
        (includes rotor inertia and friction); ``link``: a link-side torque sensor after
        the gear (the Panda's ``τ_J``), which sees neither.
    torque_white_std_nm
        White torque noise, N·m.
    torque_coloured_std_nm
        Standard deviation of the coloured torque noise, N·m.
    torque_noise_cutoff_hz, torque_noise_order
        Butterworth low-pass that colours white noise, Hz and order.
    offset_walk_std_nm, offset_walk_time_constant_s
        Stationary standard deviation (N·m) and time constant (s) of the mean-reverting
        random walk (Ornstein-Uhlenbeck) of the sensor offset, zero at the start (tared).
    offset_sine_nm, offset_sine_period_s
        Amplitude (N·m) and period (s) of a slow, thermal-like sinusoidal offset drift
        (random phase, zero at the start).
    ripple_nm, ripple_per_motor_rev
        Amplitude (N·m) of a torque ripple ``sin(p θ_m + φ)`` with ``θ_m`` the motor angle
        and ``p`` cycles per motor revolution (2 for strain-wave gears).
    current_resolution_a
        Resolution of recorded motor currents, A (0: none).
    """

    encoder_counts_per_rev: int = 2**17
    position_noise_counts: float = 0.3
    velocity_time_constant_s: float = 2e-3
    velocity_noise_std_rad_s: PerJoint = 2e-3
    velocity_resolution_rad_s: float = 1e-4
    torque_sensor: TorqueSensor = "motor"
    torque_white_std_nm: PerJoint = 0.05
    torque_coloured_std_nm: PerJoint = 0.1
    torque_noise_cutoff_hz: float = 30.0
    torque_noise_order: int = 2
    offset_walk_std_nm: PerJoint = 0.05
    offset_walk_time_constant_s: float = 300.0
    offset_sine_nm: PerJoint = 0.02
    offset_sine_period_s: float = 900.0
    ripple_nm: PerJoint = 0.0
    ripple_per_motor_rev: int = 2
    current_resolution_a: float = 1e-3

    def __post_init__(self) -> None:
        if int(self.encoder_counts_per_rev) < 1:
            raise IdentificationError(f"encoder_counts_per_rev must be >= 1, got {self.encoder_counts_per_rev}")
        for name in (
            "position_noise_counts",
            "velocity_time_constant_s",
            "velocity_resolution_rad_s",
            "current_resolution_a",
        ):
            _non_negative(name, getattr(self, name))
        for name in ("torque_noise_cutoff_hz", "offset_walk_time_constant_s", "offset_sine_period_s"):
            _positive(name, getattr(self, name))
        if self.torque_sensor not in ("motor", "link"):
            raise IdentificationError(f"torque_sensor must be 'motor' or 'link', got {self.torque_sensor!r}")
        if self.torque_noise_order < 1 or self.ripple_per_motor_rev < 1:
            raise IdentificationError(
                f"torque_noise_order and ripple_per_motor_rev must be >= 1,"
                f" got {self.torque_noise_order} and {self.ripple_per_motor_rev}"
            )


@dataclass(frozen=True)
class ControlSettings:
    """The joint controller that executes the trajectory.

    Attributes
    ----------
    dt_s
        Control period, s: torques are held over it, and the drive estimates velocity at it.
    bandwidth_hz
        Bandwidth of the PD loop (critically damped on the diagonal inertia), Hz.
    feedforward_drive_fraction
        The feedforward is the URDF's rigid-body inverse dynamics of the desired motion
        plus this fraction of the true rotor-inertia, viscous and Coulomb torques (with a
        ``tanh(v / 0.01 rad/s)`` sign): a controller's imperfect friction compensation.
    saturate_effort
        Clip commanded torques to the URDF effort limits.
    """

    dt_s: float = 1e-3
    bandwidth_hz: float = 10.0
    feedforward_drive_fraction: float = 0.7
    saturate_effort: bool = True

    def __post_init__(self) -> None:
        _positive("dt_s", self.dt_s)
        _positive("bandwidth_hz", self.bandwidth_hz)
        if not 0.0 <= self.feedforward_drive_fraction <= 2.0:
            raise IdentificationError(
                f"feedforward_drive_fraction must be in [0, 2], got {self.feedforward_drive_fraction}"
            )


@dataclass(frozen=True)
class MotionSettings:
    """Limits the preset's trajectories keep (see :meth:`JointLimits.from_robot`).

    ``workspace_lower`` and ``workspace_upper`` (rad) narrow the joint ranges, e.g. to
    keep a UR5 from folding into itself; ``None`` keeps the URDF ranges.
    """

    position_margin_rad: float = 0.1
    velocity_scale: float = 0.6
    acceleration_scale: float = 0.6
    workspace_lower: tuple[float, ...] | None = None
    workspace_upper: tuple[float, ...] | None = None

    def limits(self, robot: RobotModel) -> JointLimits:
        """The robot's limits with these margins and ranges."""
        limits = JointLimits.from_robot(
            robot,
            position_margin_rad=self.position_margin_rad,
            velocity_scale=self.velocity_scale,
            acceleration_scale=self.acceleration_scale,
        )
        return limits.restricted(lower=self.workspace_lower, upper=self.workspace_upper)


@dataclass(frozen=True)
class RobotPreset:
    """A robot with its drive chain, friction, sensors, timing and controller.

    Attributes
    ----------
    name
        Short name (``arm6``, ``ur5``, ``panda``).
    urdf
        Path of the URDF.
    joint_names
        Identified joints (others locked, e.g. the Panda's fingers); ``None``: all.
    drive_chain
        Gear ratios, drive gains (N·m/A) and coupling.
    rotor_inertia
        ``Ia`` per motor, joint side, kg·m².
    friction
        Stribeck friction per motor.
    offset_nm
        Constant torque-measurement offset per joint, N·m (the IDIM's ``off``).
    signal
        Whether recordings carry ``effort`` (joint torque) or ``current``.
    """

    name: str
    urdf: str
    joint_names: tuple[str, ...] | None
    drive_chain: DriveChain
    rotor_inertia: np.ndarray
    friction: StribeckFriction
    offset_nm: np.ndarray
    signal: Signal = "effort"
    sensors: SensorSettings = field(default_factory=SensorSettings)
    stamps: StampSettings = field(default_factory=StampSettings)
    control: ControlSettings = field(default_factory=ControlSettings)
    motion: MotionSettings = field(default_factory=MotionSettings)

    def __post_init__(self) -> None:
        if self.signal not in ("effort", "current"):
            raise IdentificationError(f"signal must be 'effort' or 'current', got {self.signal!r}")
        n = self.drive_chain.n_joints
        for name in ("rotor_inertia", "offset_nm"):
            value = np.asarray(getattr(self, name), dtype=float)
            if value.shape != (n,) or not np.all(np.isfinite(value)):
                raise ModelError(f"{name} must have {n} finite entries, got {value.tolist()}")
        if self.friction.n_joints != n:
            raise ModelError(f"friction has {self.friction.n_joints} motors, the drive chain {n}")

    def robot(self) -> RobotModel:
        """The preset's robot model (locked joints removed)."""
        robot = load_robot(self.urdf, self.joint_names)
        if robot.n_joints != self.drive_chain.n_joints:
            raise ModelError(f"{self.urdf} has {robot.n_joints} joints, preset {self.name} {self.drive_chain.n_joints}")
        return robot

    def with_settings(self, **changes: Any) -> RobotPreset:
        """A copy with some fields replaced, e.g. ``preset.with_settings(stamps=StampSettings(gaps=0))``."""
        return dataclasses.replace(self, **changes)

    def true_drive(self) -> DriveParameters:
        """The drive-chain standard parameters the recordings' torques contain ([Gautier2013] eq. (3)).

        With a link-side torque sensor the measured torque holds neither rotor inertia
        nor friction: those terms are zero, only the offset stays.
        """
        n = self.drive_chain.n_joints
        if self.sensors.torque_sensor == "link":
            return DriveParameters.create(n, offset=self.offset_nm)
        return DriveParameters.create(
            n,
            rotor_inertia=self.rotor_inertia,
            viscous=self.friction.viscous,
            coulomb=self.friction.coulomb,
            offset=self.offset_nm,
        )


@dataclass(frozen=True)
class GroundTruth:
    """What really happened during a :class:`RealisticRecording`, row by row.

    Attributes
    ----------
    true_time_s
        True instant of each row, s from the start of the motion, ``(M,)``.
    q, dq, ddq
        True joint positions (rad), velocities (rad/s) and accelerations (rad/s²), ``(M, n)``.
    q_desired
        Desired positions, rad, ``(M, n)``.
    torque_nm
        Noise-free measured torque: the applied (``motor``) or transmitted (``link``)
        joint torque plus the constant offset, N·m, ``(M, n)``.
    applied_torque_nm
        Joint torque the motors applied (held over the control period), N·m, ``(M, n)``.
    offset_drift_nm, ripple_nm, noise_nm
        The disturbances of the measured torque, N·m, ``(M, n)``: drifting offset,
        ripple, and coloured plus white noise. ``torque_nm`` plus their sum is the
        measured torque.
    velocity_drive
        The drive's noise-free velocity estimate (filtered encoder difference), rad/s.
    velocity_noise
        White noise added to it before rounding to the resolution, rad/s.
    stuck
        Whether the motor of each joint was stuck (at rest, held by static friction) over the
        whole control period containing the row's instant, ``(M, n)``.
    parameter_names, standard_parameters
        The true standard parameters in the package's order (:func:`~.model.standard_parameters`
        with every drive term), ``(n · 14,)``.
    drive
        Their drive-chain part.
    friction
        The true Stribeck friction (static friction and Stribeck curve are beyond the IDIM).
    saturated_steps
        Control steps in which a commanded torque was clipped to its effort limit.
    duplicated, late
        Rows that repeat their predecessor, rows stamped late by a stall.
    """

    true_time_s: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    q_desired: np.ndarray
    torque_nm: np.ndarray
    applied_torque_nm: np.ndarray
    offset_drift_nm: np.ndarray
    ripple_nm: np.ndarray
    noise_nm: np.ndarray
    velocity_drive: np.ndarray
    velocity_noise: np.ndarray
    stuck: np.ndarray
    parameter_names: tuple[str, ...]
    standard_parameters: np.ndarray
    drive: DriveParameters
    friction: StribeckFriction
    saturated_steps: int
    duplicated: np.ndarray
    late: np.ndarray

    @property
    def disturbance_nm(self) -> np.ndarray:
        """Measured minus noise-free torque, N·m, ``(M, n)``."""
        return self.offset_drift_nm + self.ripple_nm + self.noise_nm


@dataclass(frozen=True)
class RealisticRecording:
    """A realistic recording (the columns of a recording CSV) and its ground truth.

    ``time`` (s, as stamped), ``position`` (rad), ``velocity`` (rad/s) and exactly one of
    ``effort`` (N·m) or ``current`` (A), rows as recorded (duplicates, gaps and late
    stamps included), joints in ``joint_names`` order.
    """

    time: np.ndarray
    joint_names: tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray | None
    current: np.ndarray | None
    truth: GroundTruth
    drive_chain: DriveChain

    @property
    def measured_torque_nm(self) -> np.ndarray:
        """Measured joint torques, N·m: ``effort``, or the currents through the drive chain."""
        if self.effort is not None:
            return self.effort
        if self.current is None:
            raise DataError("the recording has neither effort nor current")
        return self.drive_chain.joint_torques(self.current)


def coloured_noise(
    rng: np.random.Generator,
    samples: int,
    *,
    std: np.ndarray,
    cutoff_hz: float,
    rate_hz: float,
    order: int = 2,
) -> np.ndarray:
    """Low-passed Gaussian noise ``(samples, n)`` of standard deviation ``std`` per column.

    White noise through ``scipy.signal.butter(order, cutoff_hz, fs=rate_hz)``
    (started ``10 / cutoff_hz`` seconds early so it is stationary), scaled by the
    filter's noise gain ``sqrt(Σ h_k²)`` so that ``std`` is the noise's true
    standard deviation.

    Raises
    ------
    IdentificationError
        If ``cutoff_hz`` is not below the Nyquist frequency ``rate_hz / 2``.
    """
    if not 0.0 < cutoff_hz < 0.5 * rate_hz:
        raise IdentificationError(f"cutoff_hz={cutoff_hz} must be in (0, rate_hz/2 = {0.5 * rate_hz:g}) Hz")
    sos = sps.butter(order, cutoff_hz, fs=rate_hz, output="sos")
    burn_in = int(np.ceil(10.0 * rate_hz / cutoff_hz))
    impulse = np.zeros(burn_in * 4)
    impulse[0] = 1.0
    gain = float(np.sqrt(np.sum(sps.sosfilt(sos, impulse) ** 2)))
    white = rng.standard_normal((samples + burn_in, std.shape[0]))
    return sps.sosfilt(sos, white, axis=0)[burn_in:] * (std / gain)


def offset_drift(
    rng: np.random.Generator,
    time_s: np.ndarray,
    *,
    walk_std: np.ndarray,
    time_constant_s: float,
    sine_amplitude: np.ndarray,
    sine_period_s: float,
) -> np.ndarray:
    """Sensor-offset drift at the regular instants ``time_s`` (s), ``(K, n)`` N·m, zero at ``time_s[0]``.

    An Ornstein-Uhlenbeck random walk of stationary standard deviation ``walk_std``
    and time constant ``time_constant_s`` (exact discretisation
    ``x⁺ = φ x + walk_std sqrt(1 − φ²) ξ``, ``φ = exp(−Δt / T)``) plus
    ``A (sin(2π t / P + φ_j) − sin φ_j)`` with random phases.
    """
    step = float(time_s[1] - time_s[0]) if time_s.shape[0] > 1 else 1.0
    decay = np.exp(-step / time_constant_s)
    kicks = rng.standard_normal((time_s.shape[0], walk_std.shape[0])) * (walk_std * np.sqrt(1.0 - decay**2))
    kicks[0] = 0.0
    walk = sps.lfilter([1.0], [1.0, -decay], kicks, axis=0)
    phase = rng.uniform(0.0, 2.0 * np.pi, walk_std.shape[0])
    elapsed = (time_s - time_s[0])[:, None]
    return walk + sine_amplitude * (np.sin(2.0 * np.pi * elapsed / sine_period_s + phase) - np.sin(phase))


def _encoder(
    transmission: np.ndarray, counts: int, noise_counts: float, q: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Joint positions read through motor encoders: ``G⁻¹ round(G q / res + noise) res``."""
    resolution = 2.0 * np.pi / counts
    motor = q @ transmission.T / resolution
    if noise_counts > 0.0:
        motor = motor + rng.normal(0.0, noise_counts, motor.shape)
    return np.linalg.solve(transmission, (np.round(motor) * resolution).T).T


def _desired_motion(
    trajectory: FourierTrajectory | SampledTrajectory, grid: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if isinstance(trajectory, SampledTrajectory):
        q, dq, ddq = interpolate_trajectory(
            trajectory.time - trajectory.time[0], trajectory.q, trajectory.dq, trajectory.ddq, grid
        )
        return np.asarray(q), np.asarray(dq), np.asarray(ddq)
    return trajectory.evaluate(grid)


def _feedforward(robot: RobotModel, preset: RobotPreset, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
    """Rigid-body inverse dynamics of the URDF plus a fraction of the true drive torques (smoothed sign)."""
    rigid = rigid_body_torques(robot, q, dq, ddq)
    coupling = preset.drive_chain.coupling
    velocity = dq @ coupling.T
    friction = preset.friction
    motor = (
        preset.rotor_inertia * (ddq @ coupling.T)
        + friction.viscous * velocity
        + friction.coulomb * np.tanh(velocity / 0.01)
    )
    return rigid + preset.control.feedforward_drive_fraction * (motor @ coupling)


def generate_recording(
    robot: RobotModel,
    preset: RobotPreset,
    trajectory: FourierTrajectory | SampledTrajectory,
    *,
    duration_s: float | None = None,
    seed: int = 0,
    signal: Signal | None = None,
) -> RealisticRecording:
    """Run the robot along ``trajectory`` and record it as its driver and sensors would.

    The controller starts on the desired state at the trajectory's start (``q_d(0)``,
    ``q̇_d(0)``) and steps every ``preset.control.dt_s``
    (:class:`~.stick_slip.StickSlipSimulator`); samples are taken at the true instants
    of :func:`plan_stamps` from the piecewise-quadratic simulated motion, with the
    torques held over each control period.

    Parameters
    ----------
    robot
        ``preset.robot()`` (passed in so it is loaded once).
    trajectory
        A Fourier series, or sampled way points (quintic interpolation; after the last
        one the robot holds its position).
    duration_s
        Length of the recording, s; default one period of a Fourier series or the
        sampled trajectory's duration.
    seed
        Seeds every random draw: the same seed gives the same recording, bit for bit.
    signal
        ``effort`` or ``current``; default ``preset.signal``.

    Raises
    ------
    IdentificationError
        On a robot that is not the preset's, a bad duration or signal, or a
        trajectory whose joints differ from the robot's.
    """
    n = robot.n_joints
    if n != preset.drive_chain.n_joints:
        raise ModelError(f"robot has {n} joints, preset {preset.name} {preset.drive_chain.n_joints}")
    kind = preset.signal if signal is None else signal
    if kind not in ("effort", "current"):
        raise IdentificationError(f"signal must be 'effort' or 'current', got {kind!r}")
    if isinstance(trajectory, SampledTrajectory):
        if trajectory.joint_names != robot.joint_names:
            raise IdentificationError(
                f"trajectory joints {list(trajectory.joint_names)} differ from the robot's {list(robot.joint_names)}"
            )
        default_duration = trajectory.duration_s
    else:
        if trajectory.offsets.shape != (n,):
            raise IdentificationError(f"trajectory has {trajectory.offsets.shape[0]} joints, the robot {n}")
        default_duration = trajectory.period_s
    duration = float(default_duration if duration_s is None else duration_s)
    _positive("duration_s", duration)
    rng = np.random.default_rng(seed)
    sensors, chain, control = preset.sensors, preset.drive_chain, preset.control
    plan = plan_stamps(preset.stamps, duration, rng)

    dt = control.dt_s
    steps = int(np.ceil(duration / dt)) + 1
    grid = np.arange(steps + 1) * dt
    q_d, dq_d, ddq_d = _desired_motion(trajectory, grid)
    simulator = StickSlipSimulator(
        robot,
        chain,
        preset.rotor_inertia,
        preset.friction,
        dt_s=dt,
        bandwidth_hz=control.bandwidth_hz,
        saturate_effort=control.saturate_effort,
        q0=q_d[0],
    )
    simulator.reset(q_d[0], dq_d[0])
    run = simulator.run(grid, q_d, dq_d, ddq_d, _feedforward(robot, preset, q_d, dq_d, ddq_d))

    # The true motion at the sample instants: constant acceleration within each step.
    # An instant on a grid point belongs to the step that starts there (the torque commanded then).
    sample_time = plan.sample_time_s
    step = np.minimum(np.floor(sample_time / dt + 1e-9).astype(int), steps - 1)
    offset = np.maximum(sample_time - grid[step], 0.0)[:, None]
    acceleration = run.ddq[step]
    q_true = run.q[step] + run.dq[step] * offset + 0.5 * acceleration * offset**2
    dq_true = run.dq[step] + acceleration * offset
    applied = run.applied_torques[step]
    if sensors.torque_sensor == "link":
        coupling = chain.coupling
        rotor = (acceleration @ coupling.T) * preset.rotor_inertia @ coupling
        sensed = applied - rotor - run.friction_torques[step]
    else:
        sensed = applied

    # Encoders and the drive's velocity estimate (filtered backward difference at the control period).
    transmission = chain.transmission
    counts = int(sensors.encoder_counts_per_rev)
    position = _encoder(transmission, counts, sensors.position_noise_counts, q_true, rng)
    encoder_grid = _encoder(transmission, counts, sensors.position_noise_counts, run.q, rng)
    raw = np.vstack([run.dq[:1], np.diff(encoder_grid, axis=0) / dt])
    if sensors.velocity_time_constant_s > 0.0:
        pole = np.exp(-dt / sensors.velocity_time_constant_s)
        b, a = [1.0 - pole], [1.0, -pole]
        initial = sps.lfilter_zi(b, a)[:, None] * run.dq[:1]
        drive_velocity, _ = sps.lfilter(b, a, raw, axis=0, zi=initial)
    else:
        drive_velocity = raw
    latest = np.minimum(np.floor(sample_time / dt + 1e-9).astype(int), steps)
    velocity_drive = drive_velocity[latest]
    velocity_noise = rng.normal(size=velocity_drive.shape) * per_joint_values(
        "velocity_noise_std_rad_s", sensors.velocity_noise_std_rad_s, n
    )
    velocity = velocity_drive + velocity_noise
    if sensors.velocity_resolution_rad_s > 0.0:
        velocity = np.round(velocity / sensors.velocity_resolution_rad_s) * sensors.velocity_resolution_rad_s

    # Torque disturbances on the regular sample sequence.
    samples = sample_time.shape[0]
    rate = preset.stamps.rate_hz
    noise = coloured_noise(
        rng,
        samples,
        std=per_joint_values("torque_coloured_std_nm", sensors.torque_coloured_std_nm, n),
        cutoff_hz=sensors.torque_noise_cutoff_hz,
        rate_hz=rate,
        order=sensors.torque_noise_order,
    ) + rng.normal(size=(samples, n)) * per_joint_values("torque_white_std_nm", sensors.torque_white_std_nm, n)
    drift = offset_drift(
        rng,
        sample_time,
        walk_std=per_joint_values("offset_walk_std_nm", sensors.offset_walk_std_nm, n),
        time_constant_s=sensors.offset_walk_time_constant_s,
        sine_amplitude=per_joint_values("offset_sine_nm", sensors.offset_sine_nm, n),
        sine_period_s=sensors.offset_sine_period_s,
    )
    motor_angle = q_true @ transmission.T
    ripple_phase = rng.uniform(0.0, 2.0 * np.pi, n)
    ripple = (
        per_joint_values("ripple_nm", sensors.ripple_nm, n)
        * np.sin(sensors.ripple_per_motor_rev * motor_angle + ripple_phase)
    ) @ chain.coupling

    rows = plan.rows
    torque = sensed[rows] + preset.offset_nm
    measured = torque + drift[rows] + ripple[rows] + noise[rows]
    effort: np.ndarray | None = measured
    current: np.ndarray | None = None
    if kind == "current":
        current = chain.motor_currents(measured)
        if sensors.current_resolution_a > 0.0:
            current = np.round(current / sensors.current_resolution_a) * sensors.current_resolution_a
        effort = None
    drive = preset.true_drive()
    truth = GroundTruth(
        true_time_s=plan.true_time_s,
        q=q_true[rows],
        dq=dq_true[rows],
        ddq=acceleration[rows],
        q_desired=_desired_motion(trajectory, plan.true_time_s)[0],
        torque_nm=torque,
        applied_torque_nm=applied[rows],
        offset_drift_nm=drift[rows],
        ripple_nm=ripple[rows],
        noise_nm=noise[rows],
        velocity_drive=velocity_drive[rows],
        velocity_noise=velocity_noise[rows],
        stuck=(run.stuck[step] & (run.dq[step] == 0.0))[rows],
        parameter_names=standard_parameter_names(n, DriveTerms()),
        standard_parameters=standard_parameters(robot, DriveTerms(), drive),
        drive=drive,
        friction=preset.friction,
        saturated_steps=run.saturated_steps,
        duplicated=plan.duplicated,
        late=plan.late,
    )
    return RealisticRecording(
        time=plan.stamps_s,
        joint_names=robot.joint_names,
        position=position[rows],
        velocity=velocity[rows],
        effort=effort,
        current=current,
        truth=truth,
        drive_chain=chain,
    )


def excitation_trajectory(
    robot: RobotModel, preset: RobotPreset, *, seed: int, fundamental_hz: float = 0.1, harmonics: int = 5
) -> FourierTrajectory:
    """A random Fourier excitation ([Volkmann2020] eq. (6), [Swevers2002] eq. (15)) within the preset's limits.

    :func:`~.excitation.optimisation.random_fourier` fitted into
    ``preset.motion.limits(robot)``; not optimised for the condition number (that costs
    seconds to minutes), which makes it a fair, slightly worse than best-practice excitation.
    """
    return random_fourier(
        robot, preset.motion.limits(robot), fundamental_hz=fundamental_hz, harmonics=harmonics, seed=seed
    )


def slow_trajectory(
    robot: RobotModel,
    preset: RobotPreset,
    *,
    seed: int,
    fundamental_hz: float = 0.05,
    harmonics: int = 2,
    range_fraction: float = 0.3,
    speed_fraction: float = 0.3,
) -> FourierTrajectory:
    """A slow, narrow Fourier motion for validation and extrapolation tests.

    Few harmonics of a low fundamental, within ``range_fraction`` of each joint's
    range about its centre and ``speed_fraction`` of the preset's velocity and
    acceleration limits: gentle motion in a part of the space the excitation covered.
    """
    if not (0.0 < range_fraction <= 1.0 and 0.0 < speed_fraction <= 1.0):
        raise IdentificationError(
            f"range_fraction and speed_fraction must be in (0, 1], got {range_fraction} and {speed_fraction}"
        )
    limits = preset.motion.limits(robot)
    half = 0.5 * (limits.upper - limits.lower) * range_fraction
    narrow = JointLimits(
        limits.joint_names,
        limits.centre - half,
        limits.centre + half,
        limits.velocity * speed_fraction,
        limits.acceleration * speed_fraction,
    )
    return random_fourier(robot, narrow, fundamental_hz=fundamental_hz, harmonics=harmonics, seed=seed)


def process_trajectory(robot: RobotModel, preset: RobotPreset, *, seed: int, cycles: int = 4) -> SampledTrajectory:
    """Pick-and-place cycles ([Volkmann2020] §III.B, process 1) within the preset's limits.

    Areas, lift and tool orientation from
    :func:`~.excitation.process.default_process_areas`; rest-to-rest moves with
    dwells at the pick and place points, where the joints stick.
    """
    limits = preset.motion.limits(robot)
    areas = default_process_areas(robot, limits=limits)
    return pick_and_place(
        robot,
        limits,
        area_a=areas["area_a"],
        area_b=areas["area_b"],
        cycles=cycles,
        seed=seed,
        rate_hz=100.0,
        frame=areas["frame"],
        lift_m=areas["lift_m"],
        q_seed=areas["q_seed"],
        orientation=areas["orientation"],
    )


def arm6_preset(urdf: str | Path) -> RobotPreset:
    """The shipped 6-axis arm (``urdf/dynid_arm6.urdf``), recorded as joint torques at 1 kHz.

    Drive chain, rotor inertia, Coulomb and viscous friction and offsets are those of
    the package's simulated robot (``config/dynid_arm6.yaml``, of the order of
    [Gautier2013] Table III); static friction 1.3 × Coulomb, Stribeck speed 0.05 rad/s,
    noise, drift, ripple and timing are invented: a PC-hosted driver on a
    real-time kernel (30 µs jitter, a 2-10 ms stall every 20 s, a dropped stretch,
    0.1 % repeated messages) whose clock drifts 20 ppm.
    """
    coulomb = np.array([6.7, 7.9, 6.3, 2.6, 2.7, 1.8])
    return RobotPreset(
        name="arm6",
        urdf=str(urdf),
        joint_names=None,
        drive_chain=DriveChain.create(
            6,
            gear_ratios=[100.0, 100.0, 80.0, 60.0, 60.0, 50.0],
            drive_gains=[0.45, 0.45, 0.4, 0.35, 0.3, 0.3],
        ),
        rotor_inertia=np.array([0.5, 0.4, 0.2, 0.1, 0.08, 0.05]),
        friction=StribeckFriction.create(
            6,
            static=1.3 * coulomb,
            coulomb=coulomb,
            viscous=[6.9, 4.5, 1.6, 0.85, 1.6, 0.5],
            stribeck_velocity=0.05,
        ),
        offset_nm=np.array([0.3, -0.5, 0.2, 0.1, -0.1, 0.05]),
        signal="effort",
        sensors=SensorSettings(
            encoder_counts_per_rev=2**16,
            velocity_noise_std_rad_s=2e-3,
            torque_white_std_nm=(0.3, 0.3, 0.15, 0.05, 0.05, 0.03),
            torque_coloured_std_nm=(0.6, 0.6, 0.3, 0.1, 0.1, 0.06),
            torque_noise_cutoff_hz=25.0,
            offset_walk_std_nm=(0.4, 0.4, 0.2, 0.06, 0.06, 0.03),
            offset_sine_nm=(0.2, 0.2, 0.1, 0.03, 0.03, 0.02),
            ripple_nm=(0.4, 0.4, 0.2, 0.05, 0.05, 0.03),
        ),
        stamps=StampSettings(nominal_rate_hz=1000.0, clock_drift_ppm=20.0, origin_s=1.7e9),
        control=ControlSettings(dt_s=1e-3, bandwidth_hz=10.0),
        motion=MotionSettings(position_margin_rad=0.2, velocity_scale=0.5, acceleration_scale=0.5),
    )


def ur5_preset(urdf: str | Path) -> RobotPreset:
    """A UR5 (``ur5_robot.urdf`` of example-robot-data), recorded as motor currents at 500 Hz.

    ``ur_robot_driver`` publishes the joints' *currents* in ``JointState.effort``, so
    this preset records ``J/current``. Gear ratio 101 (strain-wave gears), torque
    constants, rotor inertia, friction, noise and timing are invented but of a UR5's
    order (reflected rotor inertia 0.1-0.6 kg·m², Coulomb 2-9 N·m, current noise of
    0.6-0.8 N·m joint side). Timing: a 500 Hz loop on a non-real-time kernel (120 µs
    jitter, a 4-25 ms stall every 10 s, two dropped stretches, 0.5 % repeated
    messages), stamping clock 50 ppm slow. Joints 2 and 3 are kept in a range where
    the arm does not fold into itself.
    """
    coulomb = np.array([8.0, 9.0, 5.0, 2.0, 2.0, 1.8])
    return RobotPreset(
        name="ur5",
        urdf=str(urdf),
        joint_names=None,
        drive_chain=DriveChain.create(
            6, gear_ratios=[101.0] * 6, drive_gains=[0.125, 0.125, 0.125, 0.092, 0.092, 0.092]
        ),
        rotor_inertia=np.array([0.6, 0.6, 0.3, 0.1, 0.1, 0.1]),
        friction=StribeckFriction.create(
            6,
            static=1.25 * coulomb,
            coulomb=coulomb,
            viscous=[10.0, 10.0, 5.0, 1.5, 1.5, 1.5],
            stribeck_velocity=0.03,
        ),
        offset_nm=np.array([0.2, -0.4, 0.3, 0.05, 0.05, -0.02]),
        signal="current",
        sensors=SensorSettings(
            encoder_counts_per_rev=2**14,
            velocity_noise_std_rad_s=3e-3,
            torque_white_std_nm=(0.4, 0.4, 0.3, 0.08, 0.08, 0.08),
            torque_coloured_std_nm=(0.7, 0.8, 0.5, 0.15, 0.15, 0.12),
            torque_noise_cutoff_hz=15.0,
            offset_walk_std_nm=(0.5, 0.5, 0.3, 0.08, 0.08, 0.05),
            offset_sine_nm=(0.3, 0.3, 0.2, 0.05, 0.05, 0.03),
            ripple_nm=(0.6, 0.6, 0.4, 0.1, 0.1, 0.08),
            current_resolution_a=1e-3,
        ),
        stamps=StampSettings(
            nominal_rate_hz=500.0,
            clock_drift_ppm=-50.0,
            jitter_std_s=1.2e-4,
            late_bursts_per_s=0.1,
            late_burst_s=(4e-3, 2.5e-2),
            gaps=2,
            duplicate_fraction=5e-3,
            origin_s=1.7e9,
        ),
        control=ControlSettings(dt_s=2e-3, bandwidth_hz=8.0),
        motion=MotionSettings(
            position_margin_rad=0.1,
            velocity_scale=0.5,
            acceleration_scale=0.4,
            workspace_lower=(-2.5, -2.8, -2.5, -3.0, -3.0, -3.0),
            workspace_upper=(2.5, -0.3, 2.5, 3.0, 3.0, 3.0),
        ),
    )


PANDA_ARM_JOINTS: tuple[str, ...] = tuple(f"panda_joint{j}" for j in range(1, 8))
"""The Panda's seven arm joints; the finger joints are locked."""


def panda_preset(urdf: str | Path) -> RobotPreset:
    """A Franka Emika Panda (``panda.urdf`` of example-robot-data, fingers locked), link-side torques.

    Franka's driver publishes the link-side torque sensors ``τ_J`` in
    ``JointState.effort``: they see the link dynamics but neither rotor inertia nor
    motor friction, so the true ``Ia``, ``Fv``, ``Fc`` of the recordings are zero (the
    motion still has them). The robot's clock counts milliseconds: stamps are truncated
    to 1 ms while samples really come at 978 Hz (lost packets of a 1 kHz loop), so the
    median step reads 1 ms. Gear ratio, rotor inertia, friction (Coulomb 0.3-0.7 N·m,
    static 1.5 ×), torque-sensor noise and offset drift are invented, of a Panda's order.
    """
    coulomb = np.array([0.6, 0.7, 0.5, 0.6, 0.4, 0.3, 0.3])
    return RobotPreset(
        name="panda",
        urdf=str(urdf),
        joint_names=PANDA_ARM_JOINTS,
        drive_chain=DriveChain.create(
            7, gear_ratios=[100.0] * 7, drive_gains=[0.09, 0.09, 0.09, 0.09, 0.05, 0.05, 0.05]
        ),
        rotor_inertia=np.array([0.3, 0.3, 0.2, 0.2, 0.1, 0.1, 0.05]),
        friction=StribeckFriction.create(
            7,
            static=1.5 * coulomb,
            coulomb=coulomb,
            viscous=[0.6, 0.6, 0.5, 0.5, 0.3, 0.2, 0.2],
            stribeck_velocity=0.02,
        ),
        offset_nm=np.array([0.1, -0.3, 0.05, 0.2, 0.05, 0.05, -0.02]),
        signal="effort",
        sensors=SensorSettings(
            encoder_counts_per_rev=2**14,
            velocity_noise_std_rad_s=1e-3,
            torque_sensor="link",
            torque_white_std_nm=(0.05, 0.05, 0.05, 0.05, 0.02, 0.02, 0.02),
            torque_coloured_std_nm=(0.1, 0.1, 0.08, 0.08, 0.04, 0.04, 0.03),
            torque_noise_cutoff_hz=40.0,
            offset_walk_std_nm=(0.2, 0.2, 0.15, 0.15, 0.05, 0.05, 0.03),
            offset_sine_nm=(0.1, 0.1, 0.08, 0.08, 0.03, 0.03, 0.02),
            ripple_nm=(0.05, 0.05, 0.04, 0.04, 0.02, 0.02, 0.01),
        ),
        stamps=StampSettings(
            nominal_rate_hz=1000.0,
            true_rate_hz=978.0,
            jitter_std_s=2e-5,
            late_bursts_per_s=0.02,
            resolution_s=1e-3,
            origin_s=1.7e9,
        ),
        control=ControlSettings(dt_s=1e-3, bandwidth_hz=10.0),
        motion=MotionSettings(position_margin_rad=0.15, velocity_scale=0.5, acceleration_scale=0.4),
    )


def panda_hiccups_preset(urdf: str | Path) -> RobotPreset:
    """The Panda as a 1 kHz log of a real driver: jittered stamps with a hiccup every few seconds.

    The :func:`panda_preset` robot and sensors, stamped as the public 1 kHz logs of 7-axis arms
    with joint torque sensors are: the loop runs at 1 kHz, each sample stamped with ±0.3 ms
    of jitter (σ 0.1 ms), and every 3-7 s the loop misses 5-10 cycles, so the stamps step by
    6-11 ms there (0.7-8.8 ms steps in one such log); 0.2 % of the messages are repeated.
    """
    base = panda_preset(urdf)
    return replace(
        base,
        name="panda_hiccups",
        stamps=StampSettings(
            nominal_rate_hz=1000.0,
            jitter_std_s=1e-4,
            late_bursts_per_s=0.0,
            gaps=0,
            hiccup_interval_s=(3.0, 7.0),
            hiccup_samples=(5, 10),
            duplicate_fraction=2e-3,
            origin_s=1.7e9,
        ),
    )


def ur5_100hz_preset(urdf: str | Path) -> RobotPreset:
    """The UR5 as a 100 Hz log of motor currents: the :func:`ur5_preset` robot, sampled at 100 Hz.

    Drivers that publish ``/joint_states`` at 100 Hz with the motor currents in
    ``JointState.effort``: stamps jitter by 0.5 ms (σ), 1 % of the messages are repeated
    (the publisher ran twice on one sample), and every 5-15 s one to three samples are lost.
    """
    base = ur5_preset(urdf)
    return replace(
        base,
        name="ur5_100hz",
        stamps=StampSettings(
            nominal_rate_hz=100.0,
            jitter_std_s=5e-4,
            late_bursts_per_s=0.0,
            gaps=0,
            hiccup_interval_s=(5.0, 15.0),
            hiccup_samples=(1, 3),
            duplicate_fraction=1e-2,
            origin_s=1.7e9,
        ),
    )


PRESETS = {
    "arm6": arm6_preset,
    "ur5": ur5_preset,
    "panda": panda_preset,
    "panda_hiccups": panda_hiccups_preset,
    "ur5_100hz": ur5_100hz_preset,
}
"""Preset constructors by name; each takes the robot's URDF path."""


def preset(name: str, urdf: str | Path) -> RobotPreset:
    """The preset ``name`` (a key of :data:`PRESETS`) for the URDF at ``urdf``.

    Raises
    ------
    IdentificationError
        For an unknown name.
    """
    if name not in PRESETS:
        raise IdentificationError(f"preset must be one of {sorted(PRESETS)}, got {name!r}")
    return PRESETS[name](urdf)


__all__ = [
    "ControlSettings",
    "GroundTruth",
    "MotionSettings",
    "PANDA_ARM_JOINTS",
    "PRESETS",
    "RealisticRecording",
    "RobotPreset",
    "SensorSettings",
    "StampPlan",
    "StampSettings",
    "arm6_preset",
    "coloured_noise",
    "excitation_trajectory",
    "generate_recording",
    "offset_drift",
    "panda_hiccups_preset",
    "panda_preset",
    "plan_stamps",
    "preset",
    "process_trajectory",
    "slow_trajectory",
    "ur5_100hz_preset",
    "ur5_preset",
]
