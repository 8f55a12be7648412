"""``estimator``: in-process identification on a sliding window ([Volkmann2020], [Gautier2013] IDIM-WLS).

Subscribes ``input_topic`` (default ``/recorder/samples``, ``sensor_msgs/JointState``:
position in rad, velocity in rad/s, effort = joint torque in N·m; joints matched by
name, in any order). Publishes the parameter YAML
(``format: dynamic_identification/parameters/v1``) as ``std_msgs/String`` on
``parameters_topic`` (default ``/estimator/parameters``, reliable + transient local,
depth 1) for every publishable update only, and writes it atomically to
``parameters_file`` when set; publishes ``diagnostic_msgs/DiagnosticArray`` on
``/diagnostics`` (condition number before and after reduction, ‖ρ‖/‖Y‖, per-joint
e*_j, parameters kept and removed, window fill, why no update, samples received and
refused, and samples missing between stamps: lost on the way, a queue that overflowed);
serves ``~/reset`` (``std_srvs/Trigger``), which clears the window. With ``acknowledge`` it
publishes on ``~/acknowledged`` (``builtin_interfaces/Time``) the newest stamp it has buffered,
for a ``sim_robot`` in lockstep that waits for it (:mod:`~dynamic_identification.nodes.lockstep`):
a buffered sample is never lost, however far the window's updates run behind.

In-process payload re-identification ([Swevers2002]): ``~/identify_payload``
(``std_srvs/Trigger``, e.g. when the gripper has closed) answers at once and collects the
next ``payload.duration_s`` of the robot's motion; the load on ``payload.frame`` is then
identified with the robot's parameters fixed — the node's latest published estimate, or
``payload.prior_file`` —, its torques read with the delay the window aligns its own with
(``signal.torque_delay``; as recorded until the window decided)
(:class:`~dynamic_identification.core.identification.payload_in_process.PayloadReidentification`) and published
as payload YAML (``frame, mass_kg, com_m, inertia_kg_m2, std`` and an
``identification`` section with the fit's quality) on ``payload_topic`` (default
``/estimator/payload``, reliable + transient local, depth 1). When the motion does not
determine the load (the σ of its mass or centre of mass beyond ``payload.max_*``) the
result is refused with the reason on ``/diagnostics``. From the trigger on, the sliding
window is paused: it cannot tell a load from the robot's last links, so the robot model
stays the one the load was identified against until ``~/reset`` (the load was put down)
clears the window and resumes.

The subscription callback only converts a message and appends it to a locked
buffer; a worker thread drains the buffer every :data:`WORKER_POLL_S` into
:class:`~dynamic_identification.core.identification.in_process.SlidingWindowEstimator`
and updates before each sample that ends a chunk of ``window.update_period_s`` of data (the chunks
``dynid stream`` cuts, :func:`~dynamic_identification.core.signal.stamps.chunk_end_s`), so a slow
update delays the estimate but never drops a sample. Samples with NaN, a missing joint,
no effort, a position outside the URDF limits or a torque no drive produces
(:func:`~dynamic_identification.io.sanity.torque_problem`: one 1e300 N·m overflowed the window's sums) are
refused, as are stamps not later than the last accepted one; a stamp
earlier than the last by more than :data:`~dynamic_identification.core.signal.stamps.BACKWARD_JUMP_S`
(a bag loop, a simulation reset) clears the window and starts a new one; forward, a
driver's hiccup is bridged and a longer gap restarts the window's grid, never its rows
(the one stamp-and-gap rule, :mod:`~dynamic_identification.core.identification.in_process`);
what an update leaves out or adapts is logged at WARN and shown as the last event.
The diagnostics timer and ``last_update`` read a snapshot the worker leaves under a
lock of their own, never the lock the worker holds while it computes, so a slow update
never blocks the executor.

The identification settings are the ``drive_chain.*``, ``drive_terms.*``,
``signal.*``, ``estimation.e_tol``/``r_sigma`` and ``window.*`` parameters of
:data:`~dynamic_identification.io.config.CONFIG_KEYS`, so the ``estimator`` block of
the configuration file (``--params-file``) configures the node and ``dynid stream``
alike.

A closed-loop robot (``robot.loop_closures.<name>.*`` and ``robot.actuated_joints``,
[Briot2012] §2) is estimated from its actuated joints' samples (other joints of a message
are ignored) with the closed-loop IDIM
(:class:`~dynamic_identification.core.identification.SlidingWindowEstimator` of the mechanism), publishing
the physically consistent estimate as for a serial robot (``estimation.consistency``); the
published parameter YAML then names its closures.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.estimation.consistency import ConsistentEstimator
from dynamic_identification.core.identification import SignalSettings
from dynamic_identification.core.identification.in_process import (
    SlidingWindowEstimator,
    WindowSettings,
    WindowUpdate,
)
from dynamic_identification.core.identification.payload import RobotPrior
from dynamic_identification.core.identification.payload_in_process import (
    PayloadOutcome,
    PayloadReidentification,
    PayloadReidentificationSettings,
    RecentMotion,
)
from dynamic_identification.core.identification.settings import AUTO_CUTOFF_HZ
from dynamic_identification.core.identification.torque_delay import TorqueDelay, window_reason
from dynamic_identification.core.mechanism.closed_loop import ClosedLoopModel
from dynamic_identification.core.mechanism.payload import frame_id
from dynamic_identification.core.mechanism.plausibility import PlausibilityBounds
from dynamic_identification.core.mechanism.robot import DriveChain, RobotModel
from dynamic_identification.core.mechanism.seam import Mechanism, SerialMechanism
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.settings_schema import setting_field
from dynamic_identification.core.signal.stamps import Stamp, StampGaps, classify_stamp
from dynamic_identification.io.config import (
    CONFIG_KEYS,
    config_from_parameters,
    is_closed_loop_key,
)
from dynamic_identification.io.outcome import configured_window_parts
from dynamic_identification.io.parameter_files import window_parameter_file
from dynamic_identification.io.parameters import (
    ParameterFile,
    dump_parameters,
    file_mechanism,
    load_parameters,
    write_parameters_atomic,
)
from dynamic_identification.io.payload import dump_payload, payload_identification_record, prior_correction_record
from dynamic_identification.io.sanity import SampleLimits
from dynamic_identification.nodes.conversions import NS_PER_S, arrays_from_joint_state, stamp_to_ns
from dynamic_identification.nodes.guarded import RECENT_S, GuardedNode, status_message
from dynamic_identification.nodes.lockstep import Acknowledger
from dynamic_identification.nodes.parameters import node_parameters, node_robot, read_parameters, urdf_or_shipped
from dynamic_identification.nodes.qos import LATCHED_QOS, sensor_qos
from dynamic_identification.nodes.runner import run_node

WORKER_POLL_S = 0.05
"""How often (s) the worker wakes to take the buffered samples into the window, and to notice a stop.

A sample does not wake it: when each did, at 1 kHz the worker took one sample at a time, and those wake-ups
cost eight times the window's updates (``bench/bench_estimator_node.py``). Woken this often it takes about fifty
at a time, and an update starts at most this long after the sample that completes its period arrived."""

WORKER_STOP_S = 1.0
"""Longest wait of ``destroy_node`` for the worker thread (s): ``ros2 launch`` escalates after 5 s."""

SAMPLES_QOS = sensor_qos(2000)
"""``SENSOR_QOS`` with a 2 s history at 1 kHz, so a briefly busy executor loses no sample."""

NODE = "estimator"


@dataclass(frozen=True)
class EstimatorConfig:
    """The node's parameters, read once at start.

    ``urdf`` empty means the shipped arm, ``joints`` unset every 1-DoF joint of the URDF;
    ``identification`` holds the ``drive_chain.*``, ``drive_terms.*``, ``signal.*``,
    ``estimation.*``, ``window.*``, ``limits.*`` and ``plausibility.*`` parameters as set
    (units as in :data:`~dynamic_identification.io.config.CONFIG_KEYS`).
    """

    urdf: str = setting_field("urdf", NODE)
    joints: tuple[str, ...] | None = setting_field("joints", NODE)
    input_topic: str = setting_field("input_topic", NODE)
    parameters_topic: str = setting_field("parameters_topic", NODE)
    parameters_file: str = setting_field("parameters_file", NODE)
    identification: tuple[tuple[str, object], ...] = ()
    payload_topic: str = setting_field("payload_topic", NODE)
    acknowledge: bool = setting_field("acknowledge", NODE)
    payload: tuple[tuple[str, object], ...] = ()
    closed_loop: tuple[tuple[str, object], ...] = ()
    """``robot.actuated_joints`` and ``robot.loop_closures.*`` as set (empty: a serial robot)."""


_PAYLOAD_DEFAULTS = PayloadReidentificationSettings(frame="unset")

_PARAMETERS = node_parameters(NODE)


def declare_and_read(node: Node) -> EstimatorConfig:
    """Declare every parameter with its descriptor and read them once into a config."""
    reader = read_parameters(node, NODE, _PARAMETERS)
    config = reader.build(EstimatorConfig)
    return replace(
        config,
        urdf=urdf_or_shipped(config.urdf),
        identification=reader.set_among(
            lambda key: key in CONFIG_KEYS and key != "joints" and not is_closed_loop_key(key)
        ),
        payload=reader.set_among(lambda key: key.startswith("payload.")),
        closed_loop=reader.set_among(is_closed_loop_key),
    )


@dataclass(frozen=True)
class EstimatorSetup:
    """What a validated configuration builds."""

    robot: RobotModel
    dynamic_model: DynamicModel
    settings: WindowSettings
    bounds: PlausibilityBounds
    payload: PayloadReidentificationSettings
    payload_prior: RobotPrior | None
    consistency: ConsistentEstimator | None
    closed_loop: ClosedLoopModel | None = None
    """The closed-loop model (``robot`` is then its opened tree), ``None`` for a serial robot."""


def _identification_parameters(config: EstimatorConfig) -> dict[str, object]:
    """The identification parameters as set, arrays as lists (as :func:`config_from_parameters` reads a YAML file)."""
    return {key: list(value) if isinstance(value, tuple) else value for key, value in config.identification}


def build_setup(config: EstimatorConfig) -> EstimatorSetup:
    """Validate ``config``; ``ValueError`` names the bad parameter."""
    for name in ("input_topic", "parameters_topic", "payload_topic"):
        if not getattr(config, name):
            raise ValueError(f"parameter '{name}' must not be empty")
    flat = _identification_parameters(config)
    closed = bool(config.closed_loop)
    # A serial robot is the URDF's chain of the configured joints; a closed-loop robot the opened tree, its closures
    # and actuated joints (robot.loop_closures.*, robot.actuated_joints).
    robot = None if closed else node_robot(config.urdf, config.joints)
    try:
        if robot is None:
            parsed = config_from_parameters(
                {"joints": list(config.joints or ()), **flat, **dict(config.closed_loop)},
                source="estimator parameters",
            )
            mechanism: Mechanism = parsed.closed_loop_model(config.urdf)
        else:
            parsed = config_from_parameters({"joints": list(robot.joint_names), **flat}, source="estimator parameters")
            mechanism = SerialMechanism(robot)
        drive_chain = parsed.drive_chain(mechanism.n_actuated)
        settings, bounds, dynamic_model, consistency = configured_window_parts(parsed, mechanism, drive_chain)
    except IdentificationError as error:
        raise ValueError(f"invalid {'closed-loop ' if closed else ''}estimator parameter: {error}") from error
    tree = mechanism.robot
    if robot is None:
        # ~/identify_payload is refused for a closed-loop robot: its payload regressor is the serial one.
        # No reference motion kept either (reference_s = 0): nothing would use it.
        payload = replace(_PAYLOAD_DEFAULTS, frame=tree.model.frames[tree.model.nframes - 1].name, reference_s=0.0)
        prior = None
    else:
        payload, prior = _payload_setup(dict(config.payload), robot, drive_chain)
    return EstimatorSetup(
        robot=tree,
        dynamic_model=dynamic_model,
        settings=settings,
        bounds=bounds,
        payload=payload,
        payload_prior=prior,
        consistency=consistency,
        closed_loop=mechanism if isinstance(mechanism, ClosedLoopModel) else None,
    )


def _payload_setup(
    values: Mapping[str, Any], robot: RobotModel, chain: DriveChain
) -> tuple[PayloadReidentificationSettings, RobotPrior | None]:
    """The payload re-identification settings and the robot prior of ``payload.prior_file``; ``ValueError`` names
    the bad parameter."""
    frame = str(values.get("payload.frame") or "") or robot.model.frames[robot.model.nframes - 1].name
    try:
        frame_id(robot, frame)
    except IdentificationError as error:
        raise ValueError(f"parameter 'payload.frame': {error}") from error
    try:
        settings = PayloadReidentificationSettings(
            frame=frame,
            duration_s=float(values.get("payload.duration_s", _PAYLOAD_DEFAULTS.duration_s)),
            method=str(values.get("payload.method", _PAYLOAD_DEFAULTS.method)),
            max_mass_std_percent=float(
                values.get("payload.max_mass_std_percent", _PAYLOAD_DEFAULTS.max_mass_std_percent)
            ),
            max_com_std_m=float(values.get("payload.max_com_std_m", _PAYLOAD_DEFAULTS.max_com_std_m)),
            reference_s=float(values.get("payload.reference_s", _PAYLOAD_DEFAULTS.reference_s)),
        )
    except IdentificationError as error:
        raise ValueError(f"invalid payload.* parameter: {error}") from error
    path = str(values.get("payload.prior_file") or "")
    if not path:
        return settings, None
    try:
        prior = load_parameters(path)
        if list(prior.joints) != list(robot.joint_names):
            raise IdentificationError(f"it names joints {list(prior.joints)}, the node {list(robot.joint_names)}")
        file_mechanism(SerialMechanism(robot), prior)
        robot_prior = file_prior(robot, chain, prior)
    except IdentificationError as error:
        raise ValueError(f"parameter 'payload.prior_file' {path}: {error}") from error
    return settings, robot_prior


def file_prior(robot: RobotModel, chain: DriveChain, parameters: ParameterFile) -> RobotPrior:
    """The robot prior of a parameter file's values, read with the file's own drive terms (what its names mean: a
    file identified with rotor inertias is read as one even when the node's configuration has none) and the node's
    drive chain (the samples' transmissions, as the recorder converted them).

    Raises
    ------
    ModelError
        When a name of the file is not a standard parameter of ``robot`` with the file's terms.
    """
    return RobotPrior.from_parameters(robot, chain, parameters.drive_terms(), parameters.values())


@dataclass
class InputCounts:
    """The estimator's counts since it started (samples on ``input_topic``, updates, publications).

    ``missing`` counts samples that never arrived: gaps in the accepted stamps
    (:class:`~dynamic_identification.core.signal.stamps.StampGaps`), lost on the way; ``latest_s`` is
    the stamp of the newest sample accepted, s.
    """

    received: int = 0
    accepted: int = 0
    refused_invalid: int = 0
    refused_order: int = 0
    missing: int = 0
    restarts: int = 0
    updates: int = 0
    published: int = 0
    payloads_published: int = 0
    payloads_refused: int = 0
    latest_s: float = -math.inf


@dataclass(frozen=True)
class _PayloadStatus:
    """The re-identification's state for the diagnostics: ``idle``, ``collecting``, ``accepted`` or ``refused``."""

    state: str = "idle"
    message: str = ""
    started_s: float = math.nan
    outcome: PayloadOutcome | None = None


class EstimatorNode(GuardedNode):
    """Sliding-window identification of the samples on ``input_topic`` (see the module docstring)."""

    def __init__(self, *, node_name: str = "estimator", **kwargs: object) -> None:
        super().__init__(node_name, **kwargs)
        # Created first, started last: destroy_node works even when a parameter error stops __init__.
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._worker = threading.Thread(target=self._run_worker, name="estimator_worker", daemon=True)
        self.config = declare_and_read(self)
        setup = build_setup(self.config)
        self.robot = setup.robot
        self.dynamic_model = setup.dynamic_model
        self.settings = setup.settings
        self.closed_loop = setup.closed_loop
        # One window for every mechanism: its samples are the controlled joints'.
        mechanism = self.dynamic_model.mechanism
        self._names = list(mechanism.actuated_joint_names)
        # What a sample of them can hold: positions within the URDF limits, torques a drive produces.
        actuated = list(mechanism.actuated)
        self._sample_limits = SampleLimits(
            tuple(self._names),
            mechanism.robot.lower_position_limits[actuated],
            mechanism.robot.upper_position_limits[actuated],
            setup.bounds.equation_effort,
        )
        self._estimator = SlidingWindowEstimator(
            self.dynamic_model, self.settings, bounds=setup.bounds, consistency=setup.consistency
        )
        self.payload_settings = setup.payload
        # Payload re-identification: the trigger is left under its own lock by ~/identify_payload (answered at
        # once); the worker takes it, owns the collection and, from the trigger on, pauses the window.
        self._payload_lock = threading.Lock()
        self._payload_trigger: float | None = None
        self._prior = setup.payload_prior
        self._prior_from_file = setup.payload_prior is not None
        self._reidentification: PayloadReidentification | None = None
        # The last payload.reference_s of motion the window took: the robot without the load (worker only).
        self._recent_motion = RecentMotion(
            self.payload_settings.reference_s, min_speed_rad_s=_signal_settings(self.settings).min_speed_rad_s
        )
        self._payload_from = -math.inf  # data time from which the collection takes samples (worker only)
        self._window_paused = False
        self._payload_status = _PayloadStatus()
        # The buffer lock guards what the callback writes; the estimator lock what the worker and ~/reset share
        # (held for a whole update); the status lock the worker's results, which the diagnostics timer reads
        # without ever waiting for an update to finish.
        self._buffer_lock = threading.Lock()
        self._buffer: deque[tuple[float, np.ndarray, np.ndarray]] = deque()
        self._last_stamp = -math.inf
        self._last_q: np.ndarray | None = None  # the latest accepted sample's positions: a repeated stamp's are new?
        self._gaps = StampGaps()
        self._missing_s = -math.inf  # when samples were last found missing (monotonic s)
        self._counters = InputCounts()
        self._input_error = ""
        self._estimator_lock = threading.Lock()
        self._status_lock = threading.Lock()
        self._last_update: WindowUpdate | None = None
        self._cutoff_logged = False
        self._logged_delay: TorqueDelay | None = None
        self._event = ""
        self._failure = ""
        self._parameters_publisher = self.create_publisher(String, self.config.parameters_topic, LATCHED_QOS)
        self._payload_publisher = self.create_publisher(String, self.config.payload_topic, LATCHED_QOS)
        self._acknowledger = Acknowledger(self) if self.config.acknowledge else None
        self._republish_previous()
        self.create_subscription(JointState, self.config.input_topic, self._on_samples, SAMPLES_QOS)
        self.create_service(Trigger, "~/reset", self._on_reset)
        self.create_service(Trigger, "~/identify_payload", self._on_identify_payload)
        self.start_diagnostics(self.diagnostic_status)
        self._worker.start()
        self.get_logger().info(
            f"estimating {len(self._names)} joints of {self.config.urdf} from {self.config.input_topic}:"
            f" {self.settings.window_s:g} s window, update every {self.settings.update_period_s:g} s,"
            f" reduction {self.settings.reduction.method}"
        )

    def _republish_previous(self) -> None:
        """After a restart, offer the last estimate of ``parameters_file`` to late subscribers (latched)."""
        path = self.config.parameters_file
        if not path or not os.path.isfile(path):
            return
        try:
            previous = load_parameters(path)
        except IdentificationError as error:
            self.get_logger().warning(f"parameters_file {path} is not republished: {error}")
            return
        if list(previous.joints) != self._names:
            self.get_logger().warning(f"parameters_file {path} names joints {list(previous.joints)}; not republished")
            return
        self._parameters_publisher.publish(String(data=dump_parameters(previous)))
        self._take_prior(previous, f"parameters_file {path}")
        self.get_logger().info(f"republished the last parameters of {path} (stamp {previous.stamp:.3f})")

    def _take_prior(self, parameter_file: ParameterFile, what: str) -> None:
        """Make the estimate this node (re)publishes the robot model ``~/identify_payload`` identifies a load
        against, unless ``payload.prior_file`` gives it or the robot is closed-loop; one WARN line, never an end of
        the node, when its names are not the robot's (``what`` names it)."""
        if self._prior_from_file or self.closed_loop is not None:
            return
        try:
            prior = file_prior(self.robot, self.dynamic_model.drive_chain, parameter_file)
        except IdentificationError as error:
            self.get_logger().warning(f"{what} is not the payload's robot model: {error}")
            return
        with self._payload_lock:
            self._prior = prior

    @property
    def joint_names(self) -> list[str]:
        return list(self._names)

    def input_counts(self) -> InputCounts:
        """A copy of the counts so far (samples received, accepted, refused, missing; updates, publications)."""
        with self._buffer_lock:
            return replace(self._counters)

    @property
    def last_update(self) -> WindowUpdate | None:
        with self._status_lock:
            return self._last_update

    def payload_prior_known(self) -> bool:
        """Whether ``~/identify_payload`` has a robot model to identify a load against."""
        with self._payload_lock:
            return self._prior is not None

    def payload_state(self) -> str:
        """The re-identification's state: ``idle``, ``collecting``, ``accepted`` or ``refused``."""
        with self._status_lock:
            return self._payload_status.state

    def payload_reason(self) -> str:
        """Why the last re-identification was refused (empty when it was not)."""
        with self._status_lock:
            outcome = self._payload_status.outcome
        return outcome.reason if outcome is not None else ""

    def destroy_node(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._worker.is_alive():
            # An update in progress (a conic solve on a loaded machine) is not waited for: it writes parameters_file
            # atomically and publishes nothing once stopped, and the worker is a daemon.
            self._worker.join(WORKER_STOP_S)
        super().destroy_node()

    def _on_samples(self, message: JointState) -> None:
        try:
            stamp, q, _, effort = arrays_from_joint_state(message, self._names)
            if q is None or effort is None:
                raise IdentificationError("the sample needs position and effort (joint torque, N·m) for every joint")
            if not (math.isfinite(stamp) and np.all(np.isfinite(q)) and np.all(np.isfinite(effort))):
                raise IdentificationError("the sample holds NaN or inf")
            problem = self._sample_limits.problem(q, effort)
            if problem is not None:
                raise IdentificationError(problem)
        except IdentificationError as error:
            with self._buffer_lock:
                self._counters.received += 1
                self._counters.refused_invalid += 1
                first = not self._input_error
                self._input_error = str(error)
            if first:
                self.get_logger().error(f"refusing samples on {self.config.input_topic}: {error}")
            return
        stamp_ns = stamp_to_ns(message.header.stamp)
        with self._buffer_lock:
            self._counters.received += 1
            new_values = self._last_q is None or bool(np.any(q != self._last_q))
            kind = classify_stamp(stamp, self._last_stamp, new_values=new_values)
            if kind is Stamp.STALE:
                self._counters.refused_order += 1
                return
            if kind is Stamp.RESTART:
                self._gaps.reset()
            missing = self._gaps.add(stamp_ns)
            if missing:
                self._counters.missing += missing
                self._missing_s = time.monotonic()
            self._last_stamp = self._counters.latest_s = stamp
            self._last_q = q
            self._counters.accepted += 1
            self._input_error = ""
            self._buffer.append((stamp, q, effort))
        if self._acknowledger is not None:
            self._acknowledger.taken(stamp_ns)

    def _on_reset(self, _request: Trigger.Request, _response: Trigger.Response) -> Trigger.Response:
        with self._estimator_lock:
            with self._buffer_lock:
                self._buffer.clear()
                self._last_stamp = -math.inf
                self._last_q = None
            self._estimator.reset()
            with self._payload_lock:
                self._payload_trigger = None
                self._window_paused = False
            if self._reidentification is not None:
                self._reidentification.cancel()
            self._recent_motion.clear()
            self._set_status(None, event="window cleared by ~/reset", failure="")
        self.get_logger().info("window cleared by ~/reset")
        self.publish_diagnostics()
        return Trigger.Response(success=True, message="window cleared")

    def _on_identify_payload(self, _request: Trigger.Request, _response: Trigger.Response) -> Trigger.Response:
        """Arm the payload re-identification on the samples taken after the request; answers at once.

        The start is :func:`payload_trigger_stamp` of the last sample received and the node's clock.
        """
        if self.closed_loop is not None:
            reason = "payload re-identification is not available for a closed-loop robot (robot.loop_closures)"
            self.count_refusal("identify_payload", reason)
            return Trigger.Response(success=False, message=reason)
        now_s = self.get_clock().now().nanoseconds / NS_PER_S
        with self._buffer_lock:
            last = payload_trigger_stamp(self._last_stamp, now_s, self.payload_settings.duration_s)
        with self._payload_lock:
            prior_known = self._prior is not None
            if prior_known:
                self._payload_trigger = last
                self._window_paused = True
        if not prior_known:
            reason = (
                "no robot model to identify the payload against yet: wait for the first published estimate"
                " or set payload.prior_file"
            )
            self.count_refusal("identify_payload", reason)
            return Trigger.Response(success=False, message=reason)
        start = f"t = {last:.3f} s" if math.isfinite(last) else "the next sample"
        duration = self.payload_settings.duration_s
        message = (
            f"collecting {duration:g} s of motion from {start} for the payload on {self.payload_settings.frame};"
            f" the result comes on {self.config.payload_topic} and /diagnostics"
        )
        with self._status_lock:
            earlier = self._payload_status
            if earlier.state == "collecting":
                # A second request restarts the collection, and says so: the samples since the first are dropped.
                dropped = f"t = {earlier.started_s:.3f} s" if math.isfinite(earlier.started_s) else "the first sample"
                message = f"restarted: the collection from {dropped} is dropped; {message}"
            self._payload_status = _PayloadStatus(state="collecting", message=message, started_s=last)
        self.get_logger().info(f"~/identify_payload: {message}")
        self._wake.set()
        return Trigger.Response(success=True, message=message)

    def _drain(self) -> list[tuple[float, np.ndarray, np.ndarray]]:
        with self._buffer_lock:
            samples = list(self._buffer)
            self._buffer.clear()
        return samples

    def _run_worker(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(WORKER_POLL_S)
            self._wake.clear()
            try:
                self._process()
            except Exception as error:  # noqa: BLE001 - a worker that dies silently would stop every estimate
                self.get_logger().error(f"estimator worker: {error}")

    def _process(self) -> None:
        """Feed buffered samples to the estimator, updating before each sample that ends a chunk of data.

        Before each sample the estimator says whether the samples it holds are due for an update
        (:meth:`SlidingWindowEstimator.update_due`: the sample ends their chunk of ``update_period_s``, or
        jumps back). So a worker that fell behind (a bag played fast, a loaded machine) still updates once per
        ``update_period_s`` of data, at the data times ``dynid stream`` updates at on the same recording.
        """
        updated = False
        with self._estimator_lock:
            samples = self._drain()
            stamps = np.array([sample[0] for sample in samples])
            q = np.array([sample[1] for sample in samples])
            effort = np.array([sample[2] for sample in samples])
            stamps, q, effort = self._payload_samples(stamps, q, effort)
            start = 0
            while start < stamps.size:
                if self._estimator.update_due(float(stamps[start])):
                    updated = self._update() or updated
                else:
                    start = self._feed_chunk(stamps, q, effort, start)
        if updated:
            self.publish_diagnostics()

    def _update(self) -> bool:
        """Update the window and publish; whether an update came (the worker holds the estimator lock)."""
        try:
            update = self._estimator.update()
        except IdentificationError as error:
            # The window reports what it cannot use in the update itself; this is a bug, not data: the
            # window and its rows stay, and the next update goes on.
            failure = f"estimation failed (window kept): {error}"
            self._set_status(self.last_update, failure=failure)
            self.get_logger().error(failure)
            return False
        if update.note:
            self.get_logger().warning(f"window update at {update.time_s:.3f} s: {update.note}")
        # Published and written before it shows in the diagnostics; ~/reset waits for it.
        self._publish_update(update)
        event = f"update at {update.time_s:.3f} s: {update.note}" if update.note else None
        self._set_status(update, event=event, failure="")
        return True

    def _payload_samples(
        self, stamps: np.ndarray, q: np.ndarray, effort: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Hand the samples after a trigger to the payload re-identification; those the window still takes.

        Called by the worker with the estimator lock held. The identification itself runs here, in the
        worker: the diagnostics never wait for it.
        """
        with self._payload_lock:
            trigger, self._payload_trigger = self._payload_trigger, None
            paused = self._window_paused
        if trigger is not None and self._prior is not None:
            # The torques read with the delay the window aligns its own with (0 before it decided).
            delay = self._estimator.torque_delay
            self._reidentification = PayloadReidentification(
                self._prior,
                self.payload_settings,
                signal=_signal_settings(self.settings),
                reference=self._recent_motion,
                torque_delay_s=0.0 if delay is None else delay.applied_delay_s,
            )
            self._reidentification.trigger()
            self._payload_from = trigger
        # Samples taken before the trigger that arrive after it (late, on a loaded machine) are the robot's
        # without the load: the window takes them, the collection never does.
        after = stamps > self._payload_from if paused else np.zeros(stamps.shape, dtype=bool)
        keep = ~after
        if keep.any():  # before the collection: a reference read now has this batch's samples before the trigger
            self._recent_motion.add(stamps[keep], q[keep], effort[keep])
        reidentification = self._reidentification
        if reidentification is not None and reidentification.collecting and after.any():
            outcome = reidentification.add_samples(stamps[after], q[after], effort[after])
            if outcome is not None:
                self._payload_outcome(outcome)
        if not after.any():
            return stamps, q, effort
        return stamps[keep], q[keep], effort[keep]

    def _payload_outcome(self, outcome: PayloadOutcome) -> None:
        """Publish an accepted payload (latched) or report why it was refused."""
        span = f"{outcome.ended_s - outcome.started_s:.3g} s of motion ({outcome.samples} samples)"
        estimate = outcome.estimate
        if estimate is None:
            message = f"payload refused after {span}: {outcome.reason}"
            self.count_refusal("identify_payload", outcome.reason)
            self.get_logger().warning(message)
            with self._buffer_lock:
                self._counters.payloads_refused += 1
        else:
            payload = estimate.payload
            record = payload_identification_record(estimate, self._names)
            record.update(started_s=outcome.started_s, ended_s=outcome.ended_s, samples=outcome.samples)
            record.update(prior_correction=prior_correction_record(outcome))
            if not self._stop.is_set() and self.context.ok():
                self._payload_publisher.publish(String(data=dump_payload(payload, identification=record)))
            with self._buffer_lock:
                self._counters.payloads_published += 1
            std = payload.std
            sigma = f" (σ {std.mass_kg:.2g} kg, COM σ ≤ {1e3 * float(np.max(std.com_m)):.2g} mm)" if std else ""
            message = (
                f"payload on {payload.frame} from {span}: {payload.mass_kg:.4g} kg{sigma}, centre of mass"
                f" {np.round(1e3 * payload.com_m, 1).tolist()} mm, published on {self.config.payload_topic}"
            )
            self.get_logger().info(message)
        with self._status_lock:
            self._payload_status = replace(
                self._payload_status,
                state="refused" if estimate is None else "accepted",
                message=message,
                outcome=outcome,
            )
        self.publish_diagnostics()

    def _feed_chunk(self, stamps: np.ndarray, q: np.ndarray, effort: np.ndarray, start: int) -> int:
        """Feed samples from ``start`` up to the first that ends their chunk; the index of the first not fed.

        The chunk's end is the window's :attr:`SlidingWindowEstimator.chunk_end_s`.

        A feed never spans a step back in time: the callback admitted one only as a jump of
        more than ``BACKWARD_JUMP_S`` (:mod:`~dynamic_identification.core.signal.stamps`), and the estimator
        restarts its window on it.
        """
        backward = np.flatnonzero(np.diff(stamps[start:]) < 0.0)
        run_end = start + int(backward[0]) + 1 if backward.size else stamps.size
        first = slice(start, start + 1)
        if self._estimator.add_samples(stamps[first], q[first], effort[first]):
            with self._buffer_lock:
                self._counters.restarts += 1
            event = f"stamps jumped back to {stamps[start]:.3f} s: window restarted"
            self._set_status(self.last_update, event=event)
            self.get_logger().warning(event)
        end = self._estimator.chunk_end_s
        if end is None:  # the window dropped the sample (a repeated stamp): no chunk to end yet
            return start + 1
        stop = start + 1 + int(np.searchsorted(stamps[start + 1 : run_end], end, side="left"))
        if stop > start + 1:
            part = slice(start + 1, stop)
            self._estimator.add_samples(stamps[part], q[part], effort[part])
        return stop

    def _set_status(self, update: WindowUpdate | None, *, event: str | None = None, failure: str | None = None) -> None:
        """Leave the worker's results for the diagnostics (``None``: unchanged event or failure)."""
        if update is not None and math.isfinite(update.position_cutoff_hz) and not self._cutoff_logged:
            self._cutoff_logged = True
            automatic = self.settings.position_cutoff_hz == AUTO_CUTOFF_HZ
            chosen = "chosen from the first data" if automatic else "configured"
            # Decided with the cut-off, from the same first data (signal.stamps).
            instants = "recovered from the sample order" if self._estimator.recovers_stamps else "the stamps"
            self.get_logger().info(
                f"position cut-off {update.position_cutoff_hz:.3g} Hz ({chosen}); sample instants: {instants}"
            )
        if update is not None and update.torque_delay is not None and update.torque_delay is not self._logged_delay:
            # Decided once per window, on its first minute of motion.
            self._logged_delay = update.torque_delay
            self.get_logger().info(window_reason(update.torque_delay))
        with self._status_lock:
            self._last_update = update
            if event is not None:
                self._event = event
            if failure is not None:
                self._failure = failure

    def _publish_update(self, update: WindowUpdate) -> None:
        with self._buffer_lock:
            self._counters.updates += 1
        if not update.publishable:
            return
        parameter_file = window_parameter_file(self.dynamic_model, update, settings=self.settings)
        if self.config.parameters_file:
            try:
                write_parameters_atomic(self.config.parameters_file, parameter_file)
            except OSError as error:
                self.get_logger().error(f"cannot write parameters_file {self.config.parameters_file}: {error}")
        if self._stop.is_set() or not self.context.ok():
            return  # shutting down: the file holds the estimate, the publisher may be gone
        self._parameters_publisher.publish(String(data=dump_parameters(parameter_file)))
        self._take_prior(parameter_file, "the published estimate")
        with self._buffer_lock:
            self._counters.published += 1

    def diagnostic_status(self) -> DiagnosticStatus:
        """One ``DiagnosticStatus`` named ``estimator``: quality of the last update, window fill, input counts."""
        with self._status_lock:
            update, event, failure = self._last_update, self._event, self._failure
            payload_status = self._payload_status
        with self._buffer_lock:
            counters = replace(self._counters)
            input_error = self._input_error
            pending = len(self._buffer)
            missing_since_s = self._missing_s
        window_s = update.window_s if update is not None else 0.0
        values = {
            "joints": " ".join(self._names),
            "samples_received": str(counters.received),
            "samples_accepted": str(counters.accepted),
            "samples_refused": str(counters.refused_invalid + counters.refused_order),
            "samples_refused_invalid": str(counters.refused_invalid),
            "samples_refused_out_of_order": str(counters.refused_order),
            "samples_missing": str(counters.missing),
            "samples_buffered": str(pending),
            "window_restarts": str(counters.restarts),
            "updates": str(counters.updates),
            "published": str(counters.published),
            "window_s": f"{window_s:.3f}",
            "window_fill": f"{min(window_s / self.settings.window_s, 1.0):.4f}",
            "last_event": event,
            "input_error": input_error,
        }
        if update is None:
            reason = failure or event or "no update yet: waiting for samples"
        else:
            reason = failure or update.reason
            values.update(
                publishable=str(update.publishable).lower(),
                data_time_s=f"{update.time_s:.6f}",
                condition_number=f"{update.condition_number:.6g}",
                condition_number_full=f"{update.condition_number_full:.6g}",
                relative_error=f"{update.relative_error:.6g}",
                kept_count=str(len(update.names)),
                removed_count=str(len(update.removed)),
                kept=" ".join(update.names),
                removed=" ".join(name for name, _ in update.removed),
                model_chosen_s=f"{update.model_chosen_s:.6f}",
                rows=str(update.samples),
                update_seconds=f"{update.seconds:.6f}",
                position_cutoff_hz=f"{update.position_cutoff_hz:.4g}",
                consistency_shift_sigma=f"{update.consistency_shift_sigma:.4g}",
                consistency_cost=f"{update.consistency_cost:.4g}",
                torque_delay_s=_torque_delay_value(update, self.settings),
            )
            if update.joint_relative_errors.size == len(self._names):
                for joint, value in zip(self._names, update.joint_relative_errors.tolist(), strict=True):
                    values[f"e_star/{joint}"] = f"{value:.6g}"
        values["reason"] = reason
        values.update(_payload_values(payload_status, self.payload_settings, counters))
        if input_error or failure:
            level, message = DiagnosticStatus.ERROR, failure or f"refusing samples: {input_error}"
        elif update is not None and update.publishable:
            level, message = DiagnosticStatus.OK, "publishing"
        else:
            level, message = DiagnosticStatus.WARN, f"no update: {reason}"
        if counters.missing and time.monotonic() - missing_since_s <= RECENT_S:
            level = max(level, DiagnosticStatus.WARN)
            message += f"; lost {counters.missing} samples on the way (gaps in their stamps), the last recently"
        if payload_status.state == "refused":
            # Until the next ~/identify_payload: the load the user asked for was not identified.
            level = max(level, DiagnosticStatus.WARN)
            message += f"; payload refused: {payload_status.outcome.reason if payload_status.outcome else ''}"
        return status_message(level, "estimator", message, values)


def payload_trigger_stamp(last_s: float, now_s: float, duration_s: float) -> float:
    """Data time from which ``~/identify_payload`` collects: the request's instant when the samples follow the clock.

    ``last_s`` is the stamp of the last sample received, ``now_s`` the node's clock at the request
    (both s). When the samples are stamped on the node's clock (a robot's driver, ``sim_robot`` with
    ``use_sim_time``) those received lag behind it, the more so on a loaded machine: samples still
    on their way were taken before the request, before the gripper closed, and are not the load's
    (seconds of them in the node demo on 2 busy cores, which cost 10 % of the mass). The request's
    instant then starts the collection. Samples on another clock (a bag's, a test's: more than
    ``duration_s`` behind it, or ahead of it) start after the last one received; before any sample
    (``-inf``), from the first.
    """
    if math.isfinite(last_s) and last_s <= now_s <= last_s + duration_s:
        return now_s
    return last_s


def _signal_settings(settings: WindowSettings) -> SignalSettings:
    """The window's signal processing, for the payload re-identification of the same samples."""
    return settings.signal


def _torque_delay_value(update: WindowUpdate, settings: WindowSettings) -> str:
    """The diagnostics' ``torque_delay_s``: the delay the window reads its torques with, s (0 when in time with the
    positions), or why there is none yet."""
    if update.torque_delay is not None:
        return f"{update.torque_delay.applied_delay_s:.6g}"
    if settings.signal.torque_delay == "auto":
        return "measuring"
    return "0 (signal.torque_delay: none)"


def _payload_values(
    status: _PayloadStatus, settings: PayloadReidentificationSettings, counters: InputCounts
) -> dict[str, str]:
    """``payload/…`` keys of the diagnostics: state, frame, the last outcome and its reason."""
    values = {
        "payload/state": status.state,
        "payload/frame": settings.frame,
        "payload/message": status.message,
        "payload/published": str(counters.payloads_published),
        "payload/refused": str(counters.payloads_refused),
    }
    outcome = status.outcome
    if outcome is not None:
        values["payload/reason"] = outcome.reason
        values["payload/data_s"] = f"{outcome.ended_s - outcome.started_s:.3f}"
        if outcome.estimate is not None:
            payload = outcome.estimate.payload
            values["payload/mass_kg"] = f"{payload.mass_kg:.6g}"
            values["payload/com_m"] = " ".join(f"{value:.6g}" for value in payload.com_m)
            if payload.std is not None:
                values["payload/mass_std_kg"] = f"{payload.std.mass_kg:.3g}"
                values["payload/com_std_m"] = " ".join(f"{value:.3g}" for value in payload.std.com_m)
            values["payload/residual_std"] = f"{outcome.estimate.residual_std:.4g}"
    return values


def main(args: Sequence[str] | None = None) -> None:
    """Entry point of ``ros2 run dynamic_identification estimator``."""
    run_node("estimator", EstimatorNode, args)


if __name__ == "__main__":
    main()
