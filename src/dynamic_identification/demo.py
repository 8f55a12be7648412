"""``dynid demo``: the ROS suite on the shipped 6-axis arm, in one process.

:func:`run_node_demo` (``dynid demo``, ``make demo``) runs ``sim_robot``,
``recorder``, ``excitation``, ``estimator`` and ``feedforward`` on one executor
(:func:`~dynamic_identification.nodes.runner.node_executor`) over real rclpy topics
on loopback, faster than real time as far as the nodes keep up, and tells [Volkmann2020]'s
story: the arm runs a pick-and-place process while the estimator identifies it
in-process with sensitivity reduction; then feedforward from the published
parameters is switched on and the same process runs again, with lower tracking
error. Then the arm picks an unknown load; the estimator re-identifies it in-process
from the next 10 s of the job (``~/identify_payload``, [Swevers2002]), the feedforward
adds it, and the process runs again with the payload-aware model.

:func:`identify_simulated_arm` (``dynid demo --offline``) is the offline path: the
simulated arm (Pinocchio forward dynamics, rotor inertia, viscous and Coulomb
friction, drive gains, current noise, encoder quantisation, PD tracking) follows
a periodic Fourier excitation; the run is written as a recording CSV and
identified through the same code path as ``dynid identify``. A second run on a
different trajectory validates the model through ``dynid predict``, and, since
the simulator's parameters are known, every identified base parameter is
compared with its true value.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import rclpy
from rclpy.client import Client
from rclpy.clock import Clock, ClockType
from rclpy.context import Context
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

from dynamic_identification import api
from dynamic_identification.cli_format import identify_text
from dynamic_identification.core.errors import DataError, IdentificationError, InsufficientExcitationError
from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.mechanism.payload import Payload
from dynamic_identification.core.mechanism.robot import RobotModel, load_robot, standard_parameters
from dynamic_identification.core.regressors.idim import base_parameters
from dynamic_identification.core.signal.stamps import StampGaps
from dynamic_identification.core.simulation import (
    RobotSimulator,
    SimulationSettings,
    simulate_tracking,
)
from dynamic_identification.demo_plots import plot_torques, plot_tracking
from dynamic_identification.io.config import load_config, ros_parameters
from dynamic_identification.io.config import simulated_robot as simulated_robot_config
from dynamic_identification.io.documents import parse_yaml
from dynamic_identification.io.parameters import load_parameters
from dynamic_identification.io.payload import parse_payload, write_payload_atomic
from dynamic_identification.io.recording import Recording, recording_from_arrays, write_recording_csv
from dynamic_identification.network import network_environment, process_domain_id
from dynamic_identification.nodes.conversions import NS_PER_S, arrays_from_joint_state, stamp_to_ns
from dynamic_identification.nodes.estimator import EstimatorNode
from dynamic_identification.nodes.excitation import ExcitationNode
from dynamic_identification.nodes.feedforward import FeedforwardNode
from dynamic_identification.nodes.follower import DesiredMotion, next_motion
from dynamic_identification.nodes.lockstep import LEAD_S, Acknowledger
from dynamic_identification.nodes.qos import COMMAND_QOS, LATCHED_QOS, SENSOR_QOS, latched_qos
from dynamic_identification.nodes.recorder import RecorderNode
from dynamic_identification.nodes.runner import node_executor
from dynamic_identification.nodes.sim_robot import SimRobotNode
from dynamic_identification.resources import shipped_path

SIMULATION_RATE_HZ = 1000.0


def simulated_robot(config: Path, robot: RobotModel, *, seed: int) -> RobotSimulator:
    """The simulator configured by the ``sim_robot`` block of ``config``."""
    simulated = simulated_robot_config(config, robot.n_joints)
    settings = SimulationSettings(dt_s=1.0 / SIMULATION_RATE_HZ, sensor=simulated.sensor)
    return RobotSimulator(robot, simulated.drive_chain, simulated.drive, settings, seed=seed)


def simulated_recording(simulator: RobotSimulator, *, duration_s: float, seed: int) -> tuple[Recording, np.ndarray]:
    """Track a random Fourier excitation (0.1 Hz, 5 harmonics) and record it like the recorder node would.

    Returns the recording and the noise-free joint torques the motors applied (N·m).
    """
    robot = simulator.robot
    trajectory = random_fourier_trajectory(
        robot, fundamental_hz=0.1, harmonics=5, margin=0.2, velocity_fraction=0.5, seed=seed
    )
    time = np.arange(0.0, duration_s, simulator.settings.dt_s)
    q, dq, ddq = trajectory.evaluate(time)
    simulator.reset(q[0], dq[0], time_s=0.0)
    run = simulate_tracking(simulator, time, q, dq, ddq)
    recording = recording_from_arrays(
        time=run.time_s, joint_names=robot.joint_names, position=run.q, velocity=run.dq, current=run.currents_a
    )
    return recording, run.applied_torques_nm


@dataclass(frozen=True)
class Validation:
    """Prediction quality of the identified model on a fresh run of another trajectory.

    ``moving_errors`` (per joint) and ``overall_error`` are relative norms against
    the noise-free motor torques; ``moving_errors`` only counts samples where the
    joint moves faster than ``min_speed_rad_s`` (at a velocity reversal the joint
    sticks and no ``Fc sign(q̇)`` model predicts its friction).
    """

    samples: int
    min_speed_rad_s: float
    moving_errors: np.ndarray
    overall_error: float
    recorded_error: float
    noise_level: float


@dataclass(frozen=True)
class DemoResult:
    """What ``dynid demo`` found: the identification report, validation and truth comparison."""

    identification_report: str
    validation: Validation
    names: tuple[str, ...]
    true_values: np.ndarray
    identified_values: np.ndarray
    std: np.ndarray

    @property
    def deviations_in_sigma(self) -> np.ndarray:
        """``(identified − true) / σ`` per parameter."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return (self.identified_values - self.true_values) / self.std


def run(*, out_dir: Path, duration_s: float = 60.0, seed: int = 1) -> str:
    """Simulate, identify, validate; write CSV and YAML files to ``out_dir`` and return the report."""
    return format_result(identify_simulated_arm(out_dir=out_dir, duration_s=duration_s, seed=seed), duration_s)


def identify_simulated_arm(*, out_dir: Path, duration_s: float = 60.0, seed: int = 1) -> DemoResult:
    """Simulate the shipped arm, identify it through ``dynid identify`` and validate it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    urdf = shipped_path("urdf", "dynid_arm6.urdf")
    config = shipped_path("config", "dynid_arm6.yaml")
    robot = load_robot(urdf, load_config(str(config)).joints)
    simulator = simulated_robot(config, robot, seed=seed)

    excitation = out_dir / "excitation.csv"
    write_recording_csv(excitation, simulated_recording(simulator, duration_s=duration_s, seed=seed)[0])
    parameters_path = out_dir / "parameters.yaml"
    report = identify_text(api.identify_file(urdf=urdf, data=excitation, config=config, out=parameters_path))
    validation = _validation(robot, simulator, parameters_path, config, out_dir, seed=seed + 1000)

    identified = load_parameters(parameters_path)
    terms = identified.drive_terms()
    base = base_parameters(robot, simulator.drive_chain, terms)
    truth = dict(zip(base.names, base.from_standard(standard_parameters(robot, terms, simulator.drive)), strict=True))
    values = np.array([entry.value for entry in identified.parameters])
    percent = np.array([np.inf if entry.std_percent is None else entry.std_percent for entry in identified.parameters])
    return DemoResult(
        identification_report=report,
        validation=validation,
        names=tuple(entry.name for entry in identified.parameters),
        true_values=np.array([truth[entry.name] for entry in identified.parameters]),
        identified_values=values,
        std=np.abs(values) * percent / 100.0,
    )


def _validation(
    robot: RobotModel, simulator: RobotSimulator, parameters_path: Path, config: Path, out_dir: Path, *, seed: int
) -> Validation:
    """Predict a fresh 30 s run on another trajectory; compare with recorded and noise-free torques."""
    recording, noise_free = simulated_recording(simulator, duration_s=30.0, seed=seed)
    write_recording_csv(out_dir / "validation.csv", recording)
    signal = load_config(str(config)).identification_settings().signal
    predicted, covered = api.predicted_recording(robot, load_parameters(parameters_path), recording, signal)
    write_recording_csv(out_dir / "validation_predicted.csv", predicted)
    measured = recording.joint_torques(simulator.drive_chain)[covered]
    truth = noise_free[covered]
    error = predicted.joint_torques() - truth
    if recording.velocity is None:
        raise DataError("the simulated validation run has no velocities")
    moving = np.abs(recording.velocity[covered]) >= signal.min_speed_rad_s
    return Validation(
        samples=int(predicted.time.shape[0]),
        min_speed_rad_s=signal.min_speed_rad_s,
        moving_errors=np.array(
            [
                np.linalg.norm(error[moving[:, j], j]) / np.linalg.norm(truth[moving[:, j], j])
                for j in range(robot.n_joints)
            ]
        ),
        overall_error=float(np.linalg.norm(error) / np.linalg.norm(truth)),
        recorded_error=float(np.linalg.norm(predicted.effort - measured) / np.linalg.norm(measured)),
        noise_level=float(np.linalg.norm(measured - truth) / np.linalg.norm(truth)),
    )


def format_result(result: DemoResult, duration_s: float) -> str:
    """The demo's printed report."""
    validation = result.validation
    lines = [
        f"simulated {duration_s:g} s of excitation at {SIMULATION_RATE_HZ:g} Hz",
        result.identification_report,
        "",
        f"validation on a different trajectory (30 s, {validation.samples} samples):",
        "  relative error against the noise-free torques where the joint moves faster than"
        f" {validation.min_speed_rad_s} rad/s:",
        "    " + ", ".join(f"joint {j + 1} {value:.4f}" for j, value in enumerate(validation.moving_errors)),
        f"  all samples, stick phases at velocity reversals included: {validation.overall_error:.4f}",
        f"  against the recorded torques: {validation.recorded_error:.4f}"
        f" (current noise alone: {validation.noise_level:.4f})",
        "",
        "identified vs true base parameters (simulation):",
        f"{'parameter':<10} {'true':>12} {'identified':>12} {'dev/σ':>7}",
    ]
    for name, true, value, deviation in zip(
        result.names, result.true_values, result.identified_values, result.deviations_in_sigma, strict=True
    ):
        lines.append(f"{name:<10} {true:>12.5g} {value:>12.5g} {deviation:>7.2f}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# The node demo: the ROS suite in one process (what `make demo` runs).

PICK_AND_PLACE_CYCLE_S = 3.0
"""Approximate length of one pick-and-place cycle on the shipped arm, s (sets the cycles from a duration)."""
SETTLE_S = 1.0
"""Simulated time the arm is left to settle at rest before each phase, s; the demo holds simulated time there
(:class:`SimulatedClock`), so it must notice the previous phase's end within it."""
SETTLE_NS = round(SETTLE_S * NS_PER_S)
STALL_S = 60.0
"""Wall time without simulated time advancing after which the node demo gives up, s (the message names the node
simulated time waits for); a loaded machine only slows simulated time down."""
PROGRESS_PERIOD_S = 10.0
"""Wall time between two progress lines of the node demo, s."""
PLAN_TIMEOUT_S = 600.0
"""Longest wall time the node demo waits for the excitation plan, s (planning is computation, not simulated time:
about 4 s on an idle core here)."""
LOCKSTEP_TIMEOUT_S = 30.0
"""``sim_robot``'s ``lockstep_timeout_s`` in the demo, s of wall time: its nodes share one executor, so a consumer
that does not acknowledge within it is gone, not slow (then sim_robot goes on and the report counts what it lost)."""
MONITOR = "demo_monitor"
"""The node name of the demo's probe, one of ``sim_robot``'s ``lockstep_consumers``."""
LEAD_NS = round(LEAD_S * NS_PER_S)
HOLD_RENEWAL_S = 1.0
"""Wall time between two acknowledgements of a hold by the demo's monitor, s (well within ``lockstep_timeout_s``)."""
FIRST_HOLD_S = 1.0
"""Simulated time from the simulator's start to the first phase's start, s (the arm rests, every node connects)."""
MOVING_RANGE_RAD = 0.05
"""A joint whose desired position spans less than this (rad) counts as not moving in the tracking figures."""
SIM_SUBSTEPS = 4
"""``sim_robot``'s ``substeps`` in the demo: it publishes at ``sim_rate_hz`` and integrates at four times that.
At 250 Hz the integrator's own error left 0.5 mrad on joint 1 with an exact feedforward (0.13 at 1 kHz): as
large as a 4.5 kg load's effect there."""


def apply_network_rule(*, domain_id: int | None = None) -> dict[str, str]:
    """Set the DDS network rule in ``os.environ``; call it before ``rclpy.init``.

    Discovery on loopback only (``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``,
    ``ROS_LOCALHOST_ONLY=1``) in a domain of this process: ``domain_id``, by default
    :func:`~dynamic_identification.network.process_domain_id` (1..101, the range the ROS 2
    docs recommend on Linux), so two demos (or a demo and the tests) never cross-talk.

    Returns
    -------
    dict
        The variables set.
    """
    domain = process_domain_id() if domain_id is None else domain_id
    if not 0 <= domain <= 232:
        raise IdentificationError(f"domain_id must lie in 0..232, got {domain}")
    rule = network_environment(domain)
    os.environ.update(rule)
    return rule


STOP_MARGIN_PERIODS = 3
"""``window.stick_periods`` of the node demo's estimator (see ``WindowSettings.stick_periods``)."""

TOOL_TILT_RAD = 0.3
"""``tool_tilt`` of the demo's pick and place, rad: the parts lie askew, so the wrist turns at every pick and
place; with the tool held vertical the forearm roll (joint 4) never moved and got no feedforward."""

PROCESS_POSITION_MARGIN_RAD = 0.05
"""``position_margin_rad`` of the demo's pick and place, rad (the shipped configuration's 0.2 rad is room for a
Fourier excitation's ramp in from rest)."""

SIMULATED_STAMPS = "recorded"
"""``signal.stamps`` of the node demo's estimators: ``sim_robot`` stamps each sample with its simulated instant,
exactly, so the stamps are used as they are (recovering them from the sample order is for real drivers)."""


@dataclass(frozen=True)
class NodeDemoSettings:
    """Settings of :func:`run_node_demo`.

    ``duration_s`` is the length of the pick-and-place process of each phase, s
    (rounded to whole cycles of about :data:`PICK_AND_PLACE_CYCLE_S`); the run simulates
    about twice that plus the start-up. ``sim_rate_hz`` is the simulator's step and
    ``/joint_states`` rate: at 250 Hz an 18 s window identifies joint 1 (validation error
    0.04 in repeated runs here), at 100 Hz it had too few equations (0.04-0.67).
    ``payload_phase`` adds phase (c): the unknown load :data:`UNKNOWN_LOAD` is picked and
    re-identified in-process; the process runs until the feedforward has it, then once
    more with it (about 2 × 13 s more). ``timeout_s`` bounds each wait beyond the motion in
    *simulated* seconds (a node's answer, the estimator's update at the end of the process);
    ``stall_s`` is the wall time simulated time may stand still before the demo gives up.
    ``real_time_factor`` is ``sim_robot``'s: simulated time runs at most that much faster than
    the wall, and in lockstep it waits for every consumer of the samples, so the nodes' speed
    (not the wall) sets the pace and a busy machine loses no sample.
    """

    duration_s: float = 45.0
    window_s: float = 30.0
    sim_rate_hz: float = 250.0
    seed: int = 1
    timeout_s: float = 60.0
    payload_phase: bool = True
    stall_s: float = STALL_S
    real_time_factor: float = 4.0

    @property
    def cycles(self) -> int:
        return max(1, round(self.duration_s / PICK_AND_PLACE_CYCLE_S))


@dataclass(frozen=True)
class PhaseRecord:
    """What the arm did in one phase: ``/joint_states`` samples and the commanded state at each stamp.

    ``time_s`` from the start of the playback; ``q``, ``dq``, ``effort`` (N·m, measured
    joint torque) and ``q_desired`` are ``(N, n)``.
    """

    time_s: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    effort: np.ndarray
    q_desired: np.ndarray
    start_ns: int = 0
    """Simulated time of the playback's start, ns (``time_s`` counts from it)."""
    end_ns: int = 0
    """Simulated time of the playback's last commanded instant, ns."""

    @property
    def end_s(self) -> float:
        """:attr:`end_ns` in s."""
        return self.end_ns / NS_PER_S

    @property
    def tracking_error(self) -> np.ndarray:
        """``q_desired − q``, rad."""
        return self.q_desired - self.q

    @property
    def rate_hz(self) -> float:
        """Mean rate of the received joint states, Hz."""
        return float((self.time_s.shape[0] - 1) / (self.time_s[-1] - self.time_s[0]))


UNKNOWN_LOAD = Payload.create(
    "tool0",
    mass_kg=4.5,
    com_m=[0.05, -0.04, 0.07],
    inertia_kg_m2={"ixx": 0.016, "ixy": 0.001, "ixz": -0.002, "iyy": 0.02, "iyz": 0.001, "izz": 0.013},
)
"""The load the arm picks in phase (c): 4.5 kg, its centre of mass 10 cm from the flange and off its axis."""

PAYLOAD_MAX_COM_STD_M = 0.01
"""The demo estimator's ``payload.max_com_std_m``, m (see :func:`run_node_demo`)."""

PAYLOAD_REFERENCE_RUN_S = 14.0
"""Simulated time the arm does its job without the load before the grasp in phase (c), s; the demo
estimator's ``payload.reference_s`` too: the whole run, not the default 10 s of it, corrects the robot
model (more motion, less noise in the correction that the load's centre of mass inherits)."""


@dataclass(frozen=True)
class PayloadDemoResult:
    """Phase (c): the load re-identified in-process and the tracking with the old and the payload-aware model.

    ``identified`` is the payload the estimator published (``None`` when it refused:
    ``reason``); ``data_s`` the motion it used; ``window_s`` the time from the start of the
    run until the feedforward had the payload, over which both runs are compared:
    ``rms_old`` (the model without the load) and ``rms_payload`` (the same model with
    it), RMS tracking errors per joint, rad.
    """

    truth: Payload
    identified: Payload | None
    method: str
    reason: str
    data_s: float
    window_s: float
    rms_old: np.ndarray
    rms_payload: np.ndarray
    payload_yaml: str = ""
    inertia_fixed: bool = False
    prior_correction: Mapping[str, Any] = field(default_factory=dict)

    @property
    def note(self) -> str:
        """``; inertia …`` when the job did not determine the inertia, else empty."""
        return "; the job does not turn the load enough for its inertia: a solid sphere's" if self.inertia_fixed else ""

    @property
    def correction_text(self) -> str:
        """What the job before the grasp corrected in the robot model (``identification.prior_correction``)."""
        correction = self.prior_correction
        if not correction.get("applied"):
            return f"robot model used as published: {correction.get('reason', 'no correction reported')}"
        moment = np.round(1e3 * np.asarray(correction["first_moment_kg_m"], dtype=float), 1).tolist()
        return (
            f"robot model corrected at {self.truth.frame} by the job before the grasp (PriorCorrection): first moment"
            f" {moment} g·m, mass {1e3 * float(correction['mass_kg']):.1f} g"
        )

    @property
    def reduction_percent(self) -> np.ndarray:
        """How much lower the RMS tracking error is with the payload, % per joint."""
        return 100.0 * (1.0 - self.rms_payload / self.rms_old)


@dataclass(frozen=True)
class SampleAccount:
    """The joint states of the node demo: how many ``sim_robot`` published and what each consumer lost.

    ``lost`` maps each consumer (``recorder``, ``estimator``, the demo's monitor) to the samples
    it found missing between stamps (lost on the way: a queue that overflowed); in lockstep
    there are none. ``lockstep_timeouts`` maps what ``sim_robot`` waited for (a consumer, or
    ``trajectory``) to its waits that hit ``lockstep_timeout_s``.
    """

    published: int
    lost: Mapping[str, int]
    lockstep_timeouts: Mapping[str, int]

    @property
    def total_lost(self) -> int:
        return sum(self.lost.values())

    def describe(self) -> str:
        """One line for the report."""
        lost = ", ".join(f"{name} {count}" for name, count in self.lost.items())
        waits = ", ".join(f"{what} {count}x" for what, count in self.lockstep_timeouts.items()) or "none"
        return (
            f"samples: sim_robot published {self.published} joint states; lost on the way: {self.total_lost}"
            f" ({lost}); lockstep waits that hit their bound: {waits}"
        )


@dataclass(frozen=True)
class NodeDemoResult:
    """What ``dynid demo`` found: the published identification, its validation, tracking without/with feedforward.

    ``validation_errors`` is ``‖τ̂ − τ‖ / ‖τ‖`` per joint on the feedforward run's
    measured torques where the joint moves (``|q̇| ≥ min_speed_rad_s``; NaN for a
    joint that never does); ``rms_without`` and ``rms_with`` are the RMS tracking
    errors per joint, rad; ``moving`` marks the joints the process moves.
    """

    joint_names: tuple[str, ...]
    parameters_yaml: str
    kept: tuple[str, ...]
    removed: tuple[str, ...]
    condition_number_full: float
    condition_number: float
    relative_error: float
    window_s: float
    published: int
    process_s: float
    cycles: int
    min_speed_rad_s: float
    validation_errors: np.ndarray
    rms_without: np.ndarray
    rms_with: np.ndarray
    moving: np.ndarray
    sample_rate_hz: float
    sim_rate_hz: float
    wall_time_s: float
    samples: SampleAccount
    payload: PayloadDemoResult | None = None

    @property
    def reduction_percent(self) -> np.ndarray:
        """How much lower the RMS tracking error is with feedforward, % per joint."""
        return 100.0 * (1.0 - self.rms_with / self.rms_without)


class _Monitor(Node):
    """The demo's probe: records ``/joint_states`` with the commanded state, keeps every published estimate.

    It is one of ``sim_robot``'s lockstep consumers: it acknowledges each joint state it takes
    and counts those missing between stamps (:attr:`missing`). So it can also hold simulated
    time (:meth:`hold_at`): it then acknowledges nothing later than the hold less the lockstep
    lead, and ``sim_robot`` stops at the hold's instant until :meth:`release`.
    """

    def __init__(self, joint_names: Sequence[str], **kwargs: Any) -> None:
        super().__init__(MONITOR, **kwargs)
        self._names = list(joint_names)
        self._lock = threading.Lock()
        self._motion: DesiredMotion | None = None
        self._recording = False
        self._samples: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []
        self._motions: list[DesiredMotion] = []
        self._gaps = StampGaps()
        self._acknowledger = Acknowledger(self)
        self._hold_ns: int | None = None
        self._newest_ns: int | None = None
        # A hold is renewed on the wall clock: sim_robot's lockstep bound applies to a consumer that falls silent.
        self.create_timer(HOLD_RENEWAL_S, self._renew_hold, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.parameter_texts: list[str] = []
        self.payload_text = ""
        self.payload_received_ns = 0
        self.create_subscription(JointState, "/joint_states", self._on_joint_state, SENSOR_QOS)
        self.create_subscription(JointTrajectory, "/joint_trajectory", self._on_trajectory, COMMAND_QOS)
        # Every estimate, not only the latest: the demo takes the one of the process's end, by its data time.
        self.create_subscription(String, "/estimator/parameters", self._on_parameters, latched_qos(1000))
        self.create_subscription(String, "/estimator/payload", self._on_payload, LATCHED_QOS)
        self.trigger_clients: dict[str, Client] = {
            service: self.create_client(Trigger, service)
            for service in ("/excitation/start", "/excitation/stop", "/estimator/reset", "/estimator/identify_payload")
        }
        self.grasp_client: Client = self.create_client(SetBool, "/sim_robot/grasp")

    @property
    def missing(self) -> int:
        """Joint states missing between the stamps of those taken (lost on the way)."""
        return self._gaps.missing

    def hold_at(self, stamp_ns: int) -> None:
        """Hold simulated time at ``stamp_ns`` (the last step at or before it) until :meth:`release`."""
        with self._lock:
            self._hold_ns = stamp_ns
            self._acknowledge_hold()

    def release(self) -> None:
        """Let simulated time run on: acknowledge the newest joint state taken."""
        with self._lock:
            self._hold_ns = None
            if self._newest_ns is not None:
                self._acknowledger.acknowledge(self._newest_ns)

    def _acknowledge_hold(self) -> bool:
        """With the lock held: acknowledge the hold's instant less the lead once the samples reach it; whether
        they did (sim_robot then publishes nothing later than the hold)."""
        hold, newest = self._hold_ns, self._newest_ns
        if hold is None or newest is None or newest < hold - LEAD_NS:
            return False
        self._acknowledger.acknowledge(hold - LEAD_NS)
        return True

    def _renew_hold(self) -> None:
        with self._lock:
            self._acknowledge_hold()

    def _on_joint_state(self, message: JointState) -> None:
        stamp_ns = stamp_to_ns(message.header.stamp)
        self._gaps.add(stamp_ns)
        with self._lock:
            self._newest_ns = stamp_ns
            if not self._acknowledge_hold():
                self._acknowledger.taken(stamp_ns)
        if not self._recording:
            return
        _, q, dq, effort = arrays_from_joint_state(message, self._names)
        if q is None or dq is None or effort is None:
            return
        with self._lock:
            self._samples.append((stamp_ns, q, dq, effort))

    def _on_trajectory(self, message: JointTrajectory) -> None:
        motion = next_motion(self._motion, message, int(self.get_clock().now().nanoseconds))
        with self._lock:
            self._motion = motion
            if self._recording:
                self._motions.append(motion)

    def _on_parameters(self, message: String) -> None:
        self.parameter_texts.append(message.data)

    def _on_payload(self, message: String) -> None:
        self.payload_text = message.data
        self.payload_received_ns = int(self.get_clock().now().nanoseconds)

    def start_ns(self) -> int:
        """Start of the recording phase's first trajectory (simulated time, ns); 0 before it."""
        with self._lock:
            return min((m.start_ns for m in self._motions), default=0)

    def begin(self) -> None:
        with self._lock:
            self._samples, self._motions = [], []
            self._recording = True

    def end(self) -> PhaseRecord:
        """Stop recording; the samples from the playback's first to its last commanded instant."""
        with self._lock:
            self._recording = False
            samples, motions = self._samples, self._motions
        if not motions or len(samples) < 2:
            raise DataError(f"the phase recorded {len(samples)} joint states and {len(motions)} trajectories")
        start_ns = min(motion.start_ns for motion in motions)
        end_ns = max(motion.end_ns for motion in motions)
        inside = [sample for sample in samples if start_ns <= sample[0] <= end_ns]
        stamps = np.array([sample[0] for sample in inside], dtype=np.int64)
        # The commanded state at a stamp: the latest chunk started by then (chunks overlap by the horizon).
        starts = np.array([motion.start_ns for motion in motions], dtype=np.int64)
        which = np.clip(np.searchsorted(starts, stamps, side="right") - 1, 0, len(motions) - 1)
        q_desired = np.empty((stamps.shape[0], len(self._names)))
        for k in np.unique(which):
            motion, rows = motions[k], which == k
            order = [motion.joints.index(name) for name in self._names]
            q_all = np.tile(motion.held, (int(rows.sum()), 1))
            way_points = motion.way_points
            if way_points is not None:
                q_all[:, motion.moving] = way_points.motion((stamps[rows] - motion.start_ns) / NS_PER_S)[0]
            q_desired[rows] = q_all[:, order]
        return PhaseRecord(
            time_s=(stamps - start_ns) / NS_PER_S,
            q=np.array([sample[1] for sample in inside]),
            dq=np.array([sample[2] for sample in inside]),
            effort=np.array([sample[3] for sample in inside]),
            q_desired=q_desired,
            start_ns=start_ns,
            end_ns=end_ns,
        )


def node_overrides(config: Path, node_name: str, *, omit: Sequence[str] = (), **extra: Any) -> list[Parameter]:
    """ROS parameter overrides of ``node_name`` from ``config`` (``/**`` and its block), then ``extra``.

    Every demo node runs on ``use_sim_time``: ``sim_robot`` is the clock (``publish_clock``,
    ``lockstep``), so what the demo shows does not depend on the machine's load. Names
    starting with a prefix in ``omit`` are left out; ``extra`` keys use ``__`` for the
    dots of nested names (``window__window_s``).
    """
    values = {
        name: value
        for name, value in ros_parameters(config, node_name).items()
        if not any(name.startswith(prefix) for prefix in omit)
    }
    values["use_sim_time"] = True
    values.update({key.replace("__", "."): value for key, value in extra.items()})
    return [Parameter(name, value=value) for name, value in values.items()]


def process_excitation_overrides(config: Path, cycles: int) -> list[Parameter]:
    """The excitation node's parameters of the demo's pick-and-place process of ``cycles`` cycles."""
    return node_overrides(
        config,
        "excitation",
        omit=("drive_chain.", "drive_terms."),  # only the Fourier optimisation uses them
        mode="process",
        process="pick_and_place",
        cycles=cycles,
        periods=1,  # the configuration repeats sim.launch.py's Fourier excitation; the process runs once
        # The configuration's margin leaves room for a Fourier excitation's ramp in from rest; the process's
        # rest-to-rest moves need none, and some tilted tool points are out of reach within 0.2 rad.
        position_margin_rad=PROCESS_POSITION_MARGIN_RAD,
        tool_tilt=TOOL_TILT_RAD,
        seed=0,
    )


class SimulatedClock:
    """The node demo's clock: waits in simulated time with a wall-time watchdog, holds, progress lines.

    A wait ends when its condition holds, fails when ``timeout_s`` of *simulated* time pass
    first (a loaded machine slows both down alike), and fails early only when simulated time
    stands still for ``stall_s`` of wall time: then the message names what ``sim_robot`` waits
    for (:attr:`SimRobotNode.lockstep_waiting_for`), or says that the demo holds it.

    The demo acts on the process only while it holds simulated time: :meth:`arm` plans a hold
    at an instant, :meth:`hold` waits until simulated time (and the clocks of the nodes it
    names) stand there, :meth:`release` lets it run on. The monitor, a lockstep consumer,
    holds it by withholding its acknowledgement, so every ``~/start``, ``~/stop``, ``~/reset``,
    ``~/grasp`` and ``~/identify_payload`` happens at a planned simulated instant, whatever the
    load. Every :data:`PROGRESS_PERIOD_S` of wall time a waiting demo reports its phase and the
    simulated seconds done through ``progress``.
    """

    def __init__(
        self,
        monitor: _Monitor,
        sim_robot: SimRobotNode,
        *,
        timeout_s: float,
        stall_s: float,
        progress: Callable[[str], None] | None,
    ) -> None:
        self.monitor = monitor
        self.timeout_s = timeout_s
        self._sim_robot = sim_robot
        self._stall_s = stall_s
        self._progress = progress
        self._phase, self._phase_start_s, self._phase_s = "starting", 0.0, 0.0
        self._reported_wall_s = time.monotonic()
        self._armed_ns: int | None = None
        self._held_ns: int | None = None

    def now_s(self) -> float:
        """Simulated time, s (the monitor's clock follows ``sim_robot``'s ``/clock``)."""
        return self._now_ns() / NS_PER_S

    def _now_ns(self) -> int:
        return int(self.monitor.get_clock().now().nanoseconds)

    def begin(self, phase: str, duration_s: float = 0.0) -> None:
        """A new phase of the demo, about ``duration_s`` of simulated time long (0: unknown); reported at once."""
        self._phase, self._phase_start_s, self._phase_s = phase, self.now_s(), duration_s
        self._report()

    def say(self, line: str) -> None:
        """A progress line of its own."""
        if self._progress is not None:
            self._progress(line)

    def _report(self) -> None:
        self._reported_wall_s = time.monotonic()
        done = max(self.now_s() - self._phase_start_s, 0.0)
        total = f" of about {self._phase_s:.0f}" if self._phase_s > 0.0 else ""
        self.say(f"{self._phase}: {done:.1f}{total} s simulated")

    def stalled(self) -> str:
        """What simulated time waits for, in words."""
        if self._held_ns is not None:
            return f"the demo holds simulated time at {self._held_ns / NS_PER_S:.3f} s"
        waiting = self._sim_robot.lockstep_waiting_for
        if waiting == "trajectory":
            return "sim_robot waits for the next trajectory chunk of the excitation node"
        if waiting:
            return f"sim_robot waits for {waiting} to take its samples (lockstep)"
        return "sim_robot takes no step: the executor runs none of its timers"

    def wait_until(
        self,
        condition: Callable[[], bool],
        what: str,
        timeout_s: float | None = None,
        *,
        progress: Callable[[], float] | None = None,
    ) -> None:
        """Return once ``condition()`` holds; ``TimeoutError`` after ``timeout_s`` (default :attr:`timeout_s`) of
        simulated time, or after ``stall_s`` of wall time in which neither simulated time nor ``progress()`` (the
        data time of a computation waited for, s) advanced."""
        limit_s = self.timeout_s if timeout_s is None else timeout_s
        deadline_s: float | None = None  # from the first reading of simulated time (0 until the first /clock)

        def position() -> tuple[float, float]:
            return self.now_s(), (progress() if progress is not None else 0.0)

        last, advanced_wall_s = position(), time.monotonic()
        while not condition():
            now, wall_s = position(), time.monotonic()
            if deadline_s is None and now[0] > 0.0:
                deadline_s = now[0] + limit_s
            if now != last:
                last, advanced_wall_s = now, wall_s
            elif wall_s - advanced_wall_s > self._stall_s:
                raise TimeoutError(
                    f"simulated time stood still at {now[0]:.3f} s for {self._stall_s:g} s of wall time while"
                    f" waiting for {what}: {self.stalled()}"
                )
            if deadline_s is not None and now[0] > deadline_s:
                raise TimeoutError(f"no {what} within {limit_s:g} s of simulated time")
            if wall_s - self._reported_wall_s >= PROGRESS_PERIOD_S:
                self._report()
            time.sleep(0.02)

    def arm(self, at_ns: int) -> None:
        """Hold simulated time at ``at_ns`` (its last step at or before it) once it gets there, until
        :meth:`release`. Instants are integer ns: absolute stamps as float seconds are exact to 0.24 µs only."""
        self._armed_ns = at_ns
        self.monitor.hold_at(at_ns)

    def hold(self, *nodes: Node) -> int:
        """Wait until simulated time stands at the armed hold and the clock of each of ``nodes`` shows it; the
        instant, ns.

        A hold armed too late (simulated time had run past it: a demo thread starved of CPU) holds
        simulated time where it is, and says so in a progress line.
        """
        armed = self._armed_ns
        if armed is None:
            raise ValueError("no hold armed: call arm() first")
        step_ns = self._sim_robot.step_ns
        self.wait_until(lambda: self._now_ns() > armed - step_ns, f"simulated time at {armed / NS_PER_S:.3f} s")
        held = self._now_ns()
        if held > armed:
            self.say(f"simulated time held at {held / NS_PER_S:.3f} s, {(held - armed) / NS_PER_S:.3f} s late")
        self._held_ns = held
        self.wait_until(
            lambda: all(node.get_clock().now().nanoseconds >= held for node in nodes),
            f"the clocks of {[node.get_name() for node in nodes]}",
        )
        return held

    def release(self) -> None:
        """Let simulated time run on."""
        self._armed_ns = self._held_ns = None
        self.monitor.release()

    def settle_after(self, action: Callable[[], object], connections: Mapping[Node, Sequence[str]]) -> None:
        """At the armed hold: ``action()`` (a node joins the demo), then, once every node of ``connections`` has a
        publisher on each of its topics (:func:`_unconnected`), simulated time runs on to the next hold,
        :data:`SETTLE_S` later. A node that joins while simulated time is held would otherwise miss the samples
        published before its subscriptions matched: on a loaded machine, seconds of them."""
        held_ns = self.hold()
        action()
        self.wait_until(lambda: not _unconnected(connections), f"publishers for {_unconnected(connections)}")
        self.release()
        self.arm(held_ns + SETTLE_NS)


def _unconnected(connections: Mapping[Node, Sequence[str]]) -> dict[str, list[str]]:
    """Of ``connections`` (node → resolved topic names), the topics on which no subscription of the node is matched
    with a publisher yet, by node name."""
    found = {}
    for node, topics in connections.items():
        matched = {sub.topic_name for sub in node.subscriptions if sub.get_publisher_count() > 0}
        if missing := [topic for topic in topics if topic not in matched]:
            found[node.get_name()] = missing
    return found


def _wait_connected(connections: Mapping[Node, Sequence[str]]) -> None:
    """Before simulated time starts: wait until every node of ``connections`` has a publisher on each of its topics,
    so each consumer takes the samples from the first (DDS discovery is not instantaneous on a loaded machine).
    Raises ``TimeoutError`` naming the unconnected ones after :data:`STALL_S` of wall time."""
    deadline = time.monotonic() + STALL_S
    while unconnected := _unconnected(connections):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no publisher matched within {STALL_S:g} s of wall time: {unconnected}")
        time.sleep(0.02)


def _call(clock: SimulatedClock, service: str, request: Any = None) -> Any:
    """The answer of ``service`` (a ``Trigger``, or the monitor's client's type with ``request``)."""
    monitor = clock.monitor
    client = monitor.grasp_client if service == "/sim_robot/grasp" else monitor.trigger_clients[service]
    clock.wait_until(client.service_is_ready, f"service {service}")
    future = client.call_async(Trigger.Request() if request is None else request)
    clock.wait_until(future.done, f"answer from {service}")
    response = future.result()
    if response is None:
        raise TimeoutError(f"service {service} gave no answer")
    return response


def _play_process(
    clock: SimulatedClock,
    excitation: ExcitationNode,
    phase: str,
    *,
    on_hold: Callable[[], None] | None = None,
    on_start: Callable[[], None] | None = None,
    stop_after_s: float | None = None,
    stop_when: Callable[[], bool] | None = None,
    length_s: float = 0.0,
) -> PhaseRecord:
    """Start the excitation node's process at the armed hold of simulated time and record it to its end.

    Simulated time stands at the hold (:meth:`SimulatedClock.hold`) while ``on_hold`` runs (a
    window reset), ``~/start`` is called and then ``on_start`` (``~/identify_payload``), so the
    process starts at the same simulated instant in every run. It is stopped (``~/stop``: a ramp
    to rest) ``stop_after_s`` after its start, simulated time held there again, or as soon as
    ``stop_when`` holds. The next hold is armed :data:`SETTLE_S` after its end. ``phase`` and
    ``length_s`` (simulated s, default the whole process) are what the progress lines say.
    """
    monitor = clock.monitor
    clock.hold(excitation)
    monitor.begin()
    if on_hold is not None:
        on_hold()
    response = _call(clock, "/excitation/start")
    if not response.success:
        raise TimeoutError(f"the excitation node refused to start: {response.message}")
    if on_start is not None:
        on_start()
    clock.wait_until(lambda: monitor.start_ns() > 0, "the process's first trajectory chunk in the monitor")
    duration = excitation.plan.trajectory.duration_s if excitation.plan is not None else 0.0
    clock.begin(phase, length_s or duration)
    clock.release()
    if stop_after_s is not None:
        clock.arm(monitor.start_ns() + round(stop_after_s * NS_PER_S))
        clock.hold(excitation)
        _call(clock, "/excitation/stop")
        clock.release()
    elif stop_when is not None:
        clock.wait_until(
            lambda: stop_when() or excitation.state == "idle", "the stop condition", duration + clock.timeout_s
        )
        if excitation.state != "idle":
            _call(clock, "/excitation/stop")
    clock.wait_until(lambda: excitation.state == "idle", "end of the process", duration + clock.timeout_s)
    record = monitor.end()
    clock.arm(record.end_ns + SETTLE_NS)
    return record


def _reset_window(clock: SimulatedClock, estimator: EstimatorNode) -> None:
    """While simulated time is held: the estimator's window restarts from the next sample (``~/reset``).

    Its updates fall every ``window.update_period_s`` of data from its first sample, so the
    process's estimates see the same data in every run.
    """
    held_s = clock.now_s()
    clock.wait_until(lambda: estimator.input_counts().latest_s >= held_s, "the held sample in the estimator")
    if not _call(clock, "/estimator/reset").success:
        raise TimeoutError("the estimator refused ~/reset")


def _estimate_until(texts: Sequence[str], end_s: float) -> str | None:
    """The parameter YAML among ``texts`` from the latest data (its ``stamp``) at or before ``end_s``, s; ``None``
    when none is."""
    chosen, chosen_s = None, -np.inf
    for text in texts:
        stamp_s = load_parameters(text).stamp
        if chosen_s < stamp_s <= end_s:
            chosen, chosen_s = text, stamp_s
    return chosen


def _grasp(clock: SimulatedClock) -> None:
    """``sim_robot``'s gripper closes on the load: the simulated arm carries it from now on."""
    response = _call(clock, "/sim_robot/grasp", SetBool.Request(data=True))
    if not response.success:
        raise TimeoutError(f"/sim_robot/grasp failed: {response.message}")


RAMP_BOUND_S = 10.0
"""Longest ramp from rest into the process the demo waits for, s (they take a few seconds)."""


def _process_start_s(record: PhaseRecord, first: np.ndarray) -> float:
    """When a run's ramp from rest has reached the process's first state ``first`` (rad), s from the run's start.

    Runs start from wherever the arm rests, so their ramps differ in length: runs are compared
    over the same time of the process, counted from here.
    """
    arrived = np.flatnonzero(np.max(np.abs(record.q_desired - first), axis=1) < 1e-4)
    return float(record.time_s[arrived[0]]) if arrived.size else 0.0


def _rms(record: PhaseRecord, start_s: float, window_s: float) -> np.ndarray:
    """RMS tracking error per joint over ``[start_s, start_s + window_s]`` of a run, rad."""
    inside = (record.time_s >= start_s) & (record.time_s <= start_s + window_s)
    return np.sqrt(np.mean(record.tracking_error[inside] ** 2, axis=0))


def _payload_phase(
    clock: SimulatedClock,
    excitation: ExcitationNode,
    feedforward: FeedforwardNode,
    estimator: EstimatorNode,
) -> PayloadDemoResult:
    """Phase (c): grasp the unknown load, re-identify it in-process, run the process with the payload-aware model.

    The first run carries the load with the old feedforward until the estimator has published the
    payload and the feedforward uses it; the second has it from the start. Both are compared over
    the same time of the process, from its start (after the ramp from rest) to the end of the data
    the payload was identified from.
    """
    monitor = clock.monitor
    first = excitation.plan.trajectory.q[0] if excitation.plan is not None else np.zeros(0)
    clock.wait_until(estimator.payload_prior_known, "the robot model in the restarted estimator")
    # The job without the load before the gripper closes: the estimator's window takes it, and its last
    # payload.reference_s of motion correct the robot model where the load would absorb its error
    # (PriorCorrection); the rest of the grasp does not count.
    _play_process(
        clock,
        excitation,
        "(c) the job without the load",
        on_hold=lambda: _reset_window(clock, estimator),
        stop_after_s=PAYLOAD_REFERENCE_RUN_S,
        length_s=PAYLOAD_REFERENCE_RUN_S,
    )
    clock.settle_after(lambda: _grasp(clock), {})  # the arm takes the load's weight before the job goes on

    def identify_payload() -> None:
        # The gripper has closed and the job goes on: the next seconds of its motion identify the load, from the
        # request's instant on the estimator's clock (the held one).
        clock.hold(estimator)
        response = _call(clock, "/estimator/identify_payload")
        if not response.success:
            raise InsufficientExcitationError(f"~/identify_payload refused: {response.message}")

    refused = lambda: estimator.payload_state() == "refused"  # noqa: E731 - a one-line condition
    old = _play_process(
        clock,
        excitation,
        "(c) the job with the load, until the feedforward has it",
        on_start=identify_payload,
        stop_when=lambda: feedforward.payload is not None or refused(),
        length_s=estimator.payload_settings.duration_s,
    )
    old_start_ns = monitor.start_ns()
    clock.wait_until(
        lambda: (feedforward.payload is not None and bool(monitor.payload_text)) or refused(),
        "the payload in the feedforward",
    )
    if feedforward.payload is None:
        return PayloadDemoResult(
            truth=UNKNOWN_LOAD,
            identified=None,
            method="",
            reason=estimator.payload_reason(),
            data_s=0.0,
            window_s=0.0,
            rms_old=_rms(old, 0.0, np.inf),
            rms_payload=np.full(old.q.shape[1], np.nan),
        )
    document = parse_yaml(monitor.payload_text, "the published payload")
    identification = document.get("identification", {}) if isinstance(document, dict) else {}
    # Compared up to the end of the data the payload was identified from: the feedforward had it only later.
    old_process_s = _process_start_s(old, first)
    ended_s = float(identification.get("ended_s", 0.0))
    window_s = min(ended_s - old_start_ns / NS_PER_S, float(old.time_s[-1])) - old_process_s
    with_payload = _play_process(
        clock,
        excitation,
        "(c) the job with the payload-aware feedforward",
        stop_after_s=window_s + RAMP_BOUND_S,
        length_s=window_s + RAMP_BOUND_S,
    )
    new_process_s = _process_start_s(with_payload, first)
    window_s = max(min(window_s, float(with_payload.time_s[-1]) - new_process_s), 0.0)
    return PayloadDemoResult(
        truth=UNKNOWN_LOAD,
        identified=parse_payload(monitor.payload_text, source="/estimator/payload"),
        method=str(identification.get("method", "")),
        reason="",
        data_s=float(identification.get("ended_s", 0.0)) - float(identification.get("started_s", 0.0)),
        window_s=window_s,
        rms_old=_rms(old, old_process_s, window_s),
        rms_payload=_rms(with_payload, new_process_s, window_s),
        payload_yaml=monitor.payload_text,
        inertia_fixed=bool(identification.get("inertia_fixed", False)),
        prior_correction=dict(identification.get("prior_correction", {})),
    )


def run_node_demo(
    *,
    out_dir: Path,
    settings: NodeDemoSettings = NodeDemoSettings(),
    progress: Callable[[str], None] | None = None,
) -> NodeDemoResult:
    """[Volkmann2020]'s story with the package's nodes in one process, over real rclpy topics on loopback.

    (a) ``sim_robot`` (Pinocchio forward dynamics with friction, rotor inertia, noise
    and quantisation, PD tracking) runs a pick-and-place process streamed by
    ``excitation``; ``recorder`` turns its currents into joint torques and
    ``estimator`` identifies it on a sliding window with sensitivity reduction
    ([Volkmann2020] Algorithm 1), publishing ``/estimator/parameters``; the estimate of the
    process is the last published from data up to its end. (b) The estimator is stopped
    (phase b validates exactly that estimate), ``feedforward`` starts with it
    (``parameters_file``), and the same process is run again. Parameters for every node
    come from ``config/dynid_arm6.yaml``; the demo overrides the process, window length,
    simulation rate and seeds.

    Every node runs on ``sim_robot``'s simulated clock in lockstep: simulated time waits for
    the trajectory chunks and for the recorder, the estimator and the demo's monitor to take
    each sample (``lockstep_consumers``), so none is lost and a loaded machine only slows the
    demo down; :attr:`NodeDemoResult.samples` accounts for them. The demo acts only while it
    holds simulated time (:class:`SimulatedClock`): each run starts (and the estimator's window
    restarts) at a planned simulated instant, :data:`SETTLE_S` after the previous run ended, so
    phase (a) sees the same samples in every run and on any machine. Waits are bounded in
    simulated time (``settings.timeout_s``); a wall-time watchdog fails the demo only when
    simulated time stands still for ``settings.stall_s``, naming what it waits for.
    ``progress`` receives a line per phase and every :data:`PROGRESS_PERIOD_S` of wall time.

    (c) With ``settings.payload_phase``: the estimator restarts with the published model as its
    robot prior (``payload.prior_file``), the arm does its job without the load for
    :data:`PAYLOAD_REFERENCE_RUN_S` (the reference that corrects the prior), grasps
    :data:`UNKNOWN_LOAD` (``sim_robot``'s ``~/grasp``), the process starts and
    ``~/identify_payload`` is called; the run with the old feedforward goes on until the
    feedforward has the payload from ``/estimator/payload``, then the process runs again with
    it, as long ([Swevers2002]).

    Writes ``parameters.yaml``, ``unknown_load.yaml`` (the truth), ``payload.yaml`` (what the
    estimator published), ``torques.png``, ``tracking.png`` and ``report.txt`` to ``out_dir``.

    Raises
    ------
    TimeoutError
        When a node does not answer or the process does not end within ``settings.timeout_s`` of
        simulated time, or simulated time stands still for ``settings.stall_s`` of wall time.
    InsufficientExcitationError
        When the estimator published no parameters during phase (a).
    """
    wall_start = time.monotonic()
    apply_network_rule()
    out_dir.mkdir(parents=True, exist_ok=True)
    config = shipped_path("config", "dynid_arm6.yaml")
    context = Context()
    rclpy.init(context=context)
    # One executor, the events executor where rclpy has it: the estimator and the excitation planner compute in
    # threads of their own, and rclpy's MultiThreadedExecutor delivered /joint_states at 30-40 Hz of 250-500 Hz
    # here (2 cores). spin_once in a loop: the Kilted wheels' EventsExecutor.spin() runs no callback (runner.py).
    executor = node_executor(context)
    # No parameter services: every service is one more entity the executor polls at the simulation rate.
    common: dict[str, Any] = {"context": context, "start_parameter_services": False}
    nodes: list[Node] = []
    spinning = threading.Event()
    spinning.set()

    def spin() -> None:
        while spinning.is_set() and context.ok():
            executor.spin_once(timeout_sec=0.1)

    spinner = threading.Thread(target=spin, name="demo_executor", daemon=True)
    try:
        excitation = ExcitationNode(**common, parameter_overrides=process_excitation_overrides(config, settings.cycles))
        nodes.append(excitation)
        if progress is not None:
            progress("planning the pick-and-place process")
        if not excitation.wait_for_plan(PLAN_TIMEOUT_S) or excitation.plan is None:
            raise TimeoutError(f"no excitation plan within {PLAN_TIMEOUT_S:g} s ({excitation.state})")
        plan = excitation.plan
        load_file = out_dir / "unknown_load.yaml"
        write_payload_atomic(load_file, UNKNOWN_LOAD)
        sim_robot = SimRobotNode(
            **common,
            parameter_overrides=node_overrides(
                config,
                "sim_robot",
                rate_hz=float(settings.sim_rate_hz),
                substeps=SIM_SUBSTEPS,
                seed=settings.seed,
                # One step a tick: when the shared executor falls behind, simulated time (the demo's clock) slows
                # down instead of stepping in bursts, and the feedforward's timer runs between any two steps (in
                # bursts of 10 it lagged them: tracking 77-93 % better with feedforward instead of 95-99 %).
                max_catch_up_s=1.0 / settings.sim_rate_hz,
                publish_clock=True,  # the clock itself: not on use_sim_time
                real_time_factor=settings.real_time_factor,
                use_sim_time=False,
                lockstep=True,
                # Simulated time waits for every consumer of the samples: none is lost, whatever the load.
                lockstep_consumers=["recorder", "estimator", MONITOR],
                lockstep_timeout_s=LOCKSTEP_TIMEOUT_S,
                initial_positions=plan.trajectory.q[0].tolist(),  # both phases start where the process does
                payload_file=str(load_file),  # what ~/grasp takes in phase (c)
            ),
        )
        recorder = RecorderNode(**common, parameter_overrides=node_overrides(config, "recorder", acknowledge=True))
        # A pick-and-place stops at every pick and place: a margin of three decimation periods around
        # the stops keeps the accelerations out of and into them (window.stick_periods); with the
        # default ten, an 18 s window's reduced model sometimes stayed above max_condition_number.
        estimator = EstimatorNode(
            **common,
            parameter_overrides=node_overrides(
                config,
                "estimator",
                acknowledge=True,
                window__window_s=float(settings.window_s),
                window__reduction="sensitivity",
                window__stick_periods=STOP_MARGIN_PERIODS,
                signal__stamps=SIMULATED_STAMPS,
            ),
        )
        monitor = _Monitor(sim_robot.joint_names, **common, parameter_overrides=[Parameter("use_sim_time", value=True)])
        nodes += [sim_robot, recorder, estimator, monitor]
        for node in nodes:
            executor.add_node(node)
        clock = SimulatedClock(
            monitor, sim_robot, timeout_s=settings.timeout_s, stall_s=settings.stall_s, progress=progress
        )
        clock.arm(sim_robot.simulated_start_ns + round(FIRST_HOLD_S * NS_PER_S))  # before the first step
        _wait_connected(
            {
                sim_robot: [
                    "/joint_trajectory",
                    "/recorder/acknowledged",
                    "/estimator/acknowledged",
                    f"/{MONITOR}/acknowledged",
                ],
                recorder: ["/joint_states", "/motor_currents"],
                estimator: ["/recorder/samples"],
                excitation: ["/joint_states"],
                monitor: ["/joint_states", "/joint_trajectory", "/estimator/parameters"],
            }
        )
        spinner.start()

        without = _play_process(
            clock, excitation, "(a) the process, identified in-process", on_hold=lambda: _reset_window(clock, estimator)
        )
        clock.begin("(a) the estimator's update at the end of the process")
        clock.wait_until(
            lambda: (update := estimator.last_update) is not None and update.time_s >= without.end_s,
            "estimator update at the end of the process",
            progress=lambda: update.time_s if (update := estimator.last_update) is not None else 0.0,
        )
        clock.wait_until(
            lambda: len(monitor.parameter_texts) >= estimator.input_counts().published,
            "the estimator's parameters in the monitor",
        )
        # The estimate of the process: the last published from data up to its end (data time, not arrival).
        parameters_text = _estimate_until(monitor.parameter_texts, without.end_s)
        if parameters_text is None:
            update = estimator.last_update
            reason = update.reason if update is not None else "no update"
            raise InsufficientExcitationError(f"the estimator published no parameters during the process: {reason}")
        published = len(monitor.parameter_texts)
        parameters_file = out_dir / "parameters.yaml"
        parameters_file.write_text(parameters_text, encoding="utf-8")
        estimator_counts = [estimator.input_counts()]
        executor.remove_node(estimator)  # freeze the identification: phase (b) validates what was published
        estimator.destroy_node()
        nodes.remove(estimator)
        # The feedforward of exactly that estimate (its file, no topic: a later estimate cannot replace it).
        feedforward = FeedforwardNode(
            **common,
            parameter_overrides=node_overrides(
                config,
                "feedforward",
                rate_hz=float(settings.sim_rate_hz),
                parameters_file=str(parameters_file),
                parameters_topic="",
            ),
        )
        nodes.append(feedforward)
        # The arm settles with it before the run.
        clock.settle_after(
            lambda: executor.add_node(feedforward),
            {feedforward: ["/joint_trajectory"], sim_robot: ["/feedforward/effort"]},
        )
        with_feedforward = _play_process(clock, excitation, "(b) the process with feedforward")
        payload_result = None
        if settings.payload_phase:
            # (c) The estimator restarts with the published model as the robot prior, the arm picks the load.
            reidentifier = EstimatorNode(
                **common,
                parameter_overrides=node_overrides(
                    config,
                    "estimator",
                    acknowledge=True,
                    window__window_s=float(settings.window_s),
                    window__stick_periods=STOP_MARGIN_PERIODS,
                    signal__stamps=SIMULATED_STAMPS,
                    payload__prior_file=str(parameters_file),
                    # The load's centre of mass along the tool axis is the least determined coordinate (the tool
                    # is tilted by 0.3 rad at most): σ about 2-3 mm from 10 s here, mass and lateral COM σ ≈ 1 mm.
                    payload__max_com_std_m=PAYLOAD_MAX_COM_STD_M,
                    payload__reference_s=PAYLOAD_REFERENCE_RUN_S,
                ),
            )
            nodes.append(reidentifier)
            # Added while simulated time is held: it takes samples for SETTLE_S before its window restarts at (c).
            clock.settle_after(
                lambda: executor.add_node(reidentifier),
                {
                    reidentifier: ["/recorder/samples"],
                    sim_robot: ["/estimator/acknowledged"],
                    monitor: ["/estimator/parameters", "/estimator/payload"],
                },
            )
            payload_result = _payload_phase(clock, excitation, feedforward, reidentifier)
            estimator_counts.append(reidentifier.input_counts())
        losses = recorder.losses()
        samples = SampleAccount(
            published=sim_robot.steps,
            lost={
                "recorder": losses.samples + losses.currents_missing,
                "estimator": sum(counts.missing for counts in estimator_counts),
                MONITOR: monitor.missing,
            },
            lockstep_timeouts={wait.what: wait.timeouts for wait in sim_robot.lockstep_waits},
        )
    finally:
        spinning.clear()
        if spinner.is_alive():
            spinner.join(5.0)
        executor.shutdown(timeout_sec=5.0)
        for node in nodes:
            node.destroy_node()
        context.try_shutdown()

    if payload_result is not None and payload_result.payload_yaml:
        (out_dir / "payload.yaml").write_text(payload_result.payload_yaml, encoding="utf-8")
    parameters = load_parameters(out_dir / "parameters.yaml")
    robot = load_robot(parameters.urdf_path(), parameters.joints)
    signal = load_config(str(config)).identification_settings().signal
    recording = recording_from_arrays(
        time=with_feedforward.time_s,
        joint_names=robot.joint_names,
        position=with_feedforward.q,
        velocity=with_feedforward.dq,
        effort=with_feedforward.effort,
    )
    predicted, covered = api.predicted_recording(robot, parameters, recording, signal)
    measured = with_feedforward.effort[covered]
    moving_samples = np.abs(with_feedforward.dq[covered]) >= signal.min_speed_rad_s
    with np.errstate(invalid="ignore", divide="ignore"):
        validation = np.array(
            [
                np.linalg.norm((predicted.effort - measured)[moving_samples[:, j], j])
                / np.linalg.norm(measured[moving_samples[:, j], j])
                for j in range(robot.n_joints)
            ]
        )
    quality = parameters.quality
    result = NodeDemoResult(
        joint_names=robot.joint_names,
        parameters_yaml=parameters_text,
        kept=tuple(entry.name for entry in parameters.parameters),
        removed=parameters.removed,
        condition_number_full=float(quality.get("condition_number_full") or np.nan),
        condition_number=float(quality.get("condition_number") or np.nan),
        relative_error=float(quality.get("relative_error") or np.nan),
        window_s=float(quality.get("window") or np.nan),
        published=published,
        process_s=float(plan.trajectory.duration_s),
        cycles=settings.cycles,
        min_speed_rad_s=signal.min_speed_rad_s,
        validation_errors=validation,
        rms_without=np.sqrt(np.mean(without.tracking_error**2, axis=0)),
        rms_with=np.sqrt(np.mean(with_feedforward.tracking_error**2, axis=0)),
        moving=np.ptp(plan.trajectory.q, axis=0) >= MOVING_RANGE_RAD,
        sample_rate_hz=min(without.rate_hz, with_feedforward.rate_hz),
        sim_rate_hz=float(settings.sim_rate_hz),
        wall_time_s=time.monotonic() - wall_start,
        samples=samples,
        payload=payload_result,
    )
    plot_torques(
        out_dir / "torques.png",
        result.joint_names,
        result.validation_errors,
        recording.time[covered],
        measured,
        predicted.joint_torques(),
    )
    plot_tracking(
        out_dir / "tracking.png",
        result.joint_names,
        (result.rms_without, result.rms_with),
        (without.time_s, without.tracking_error),
        (with_feedforward.time_s, with_feedforward.tracking_error),
    )
    (out_dir / "report.txt").write_text(format_node_result(result) + "\n", encoding="utf-8")
    return result


def format_node_result(result: NodeDemoResult) -> str:
    """The node demo's printed report."""
    lines = [
        f"pick-and-place process: {result.cycles} cycles, {result.process_s:.1f} s per run;"
        f" sim_robot at {result.sim_rate_hz:g} Hz, joint states received at {result.sample_rate_hz:.0f} Hz",
        result.samples.describe(),
        "",
        f"(a) in-process identification, sensitivity reduction ([Volkmann2020] Algorithm 1),"
        f" {result.window_s:.1f} s window,"
        f" {result.published} parameter messages published:",
        f"  condition number {result.condition_number_full:.4g} before reduction,"
        f" {result.condition_number:.4g} after; ||rho||/||Y|| = {result.relative_error:.4f}",
        f"  kept ({len(result.kept)}): {' '.join(result.kept)}",
        f"  removed ({len(result.removed)}): {' '.join(result.removed)}",
        "",
        "(b) the same process with feedforward from the published parameters:",
        f"  validation, relative error of predicted vs measured torques where |dq| >= {result.min_speed_rad_s} rad/s:",
        "    "
        + ", ".join(
            f"{name} {value:.4f}" if np.isfinite(value) else f"{name} (not moved)"
            for name, value in zip(result.joint_names, result.validation_errors, strict=True)
        ),
        "  RMS tracking error per joint (mrad), PD only -> PD + feedforward:",
    ]
    for name, before, after, reduction, moving in zip(
        result.joint_names,
        result.rms_without,
        result.rms_with,
        result.reduction_percent,
        result.moving,
        strict=True,
    ):
        note = f"{reduction:5.1f} % lower" if moving else "(not moved by the process)"
        lines.append(f"    {name:<10} {1e3 * before:8.3f} -> {1e3 * after:8.3f}  {note}")
    moved = result.moving
    lines.append(
        f"  moving joints: {np.mean(result.reduction_percent[moved]):.1f} % lower on average"
        " ([Volkmann2020] Table VII, real robot: about 40-50 %; the simulator has exactly the model's structure)"
    )
    if result.payload is not None:
        lines += ["", *_payload_report(result.payload, result.joint_names, result.moving)]
    lines.append(f"wall time {result.wall_time_s:.1f} s")
    return "\n".join(lines)


def _payload_report(payload: PayloadDemoResult, joint_names: Sequence[str], moving: np.ndarray) -> list[str]:
    """Phase (c) of the node demo's report."""
    truth = payload.truth
    lines = [
        f"(c) the arm picks an unknown {truth.mass_kg:g} kg load (centre of mass"
        f" {np.round(1e3 * truth.com_m).astype(int).tolist()} mm in {truth.frame}); ~/identify_payload after the grasp",
        " ([Swevers2002], the robot's published parameters held fixed):",
    ]
    found = payload.identified
    if found is None:
        return [*lines, f"  refused: {payload.reason}"]
    lines.append(f"  {payload.correction_text}")
    std = found.std
    sigma = f" ± {std.mass_kg:.2g}" if std is not None else ""
    lines += [
        f"  from {payload.data_s:.1f} s of the process ({payload.method}): mass {found.mass_kg:.4g}{sigma} kg"
        f" ({100.0 * (found.mass_kg / truth.mass_kg - 1.0):+.2f} %), centre of mass"
        f" {np.round(1e3 * found.com_m, 1).tolist()} mm"
        f" ({1e3 * float(np.linalg.norm(found.com_m - truth.com_m)):.1f} mm off){payload.note}",
        f"  RMS tracking error per joint (mrad) over the first {payload.window_s:.1f} s of the process with the load,"
        " feedforward without the payload -> with it:",
    ]
    for name, before, after, reduction, flag in zip(
        joint_names, payload.rms_old, payload.rms_payload, payload.reduction_percent, moving, strict=True
    ):
        change = f"{reduction:5.1f} % lower" if reduction >= 0.0 else f"{-reduction:5.1f} % higher"
        note = change if flag else "(not moved by the process)"
        lines.append(f"    {name:<10} {1e3 * before:8.3f} -> {1e3 * after:8.3f}  {note}")
    return lines


def run_nodes(
    *, out_dir: Path, duration_s: float = 45.0, seed: int = 1, progress: Callable[[str], None] | None = None
) -> str:
    """``dynid demo``: run :func:`run_node_demo` and return its report (``progress`` takes its progress lines)."""
    settings = NodeDemoSettings(duration_s=duration_s, seed=seed)
    return format_node_result(run_node_demo(out_dir=out_dir, settings=settings, progress=progress))
