"""``recorder``: time-aligned joint states and joint torques, live and to a recording file.

Subscribes ``topics.joint_states`` (default ``joint_states``, ``sensor_msgs/JointState``)
and ``topics.motor_currents`` (default ``motor_currents``, ``sensor_msgs/JointState``
whose ``effort`` holds motor currents in A); joints are matched by name, in any order,
extra joints are ignored and a message lacking a recorded joint is refused and
reported. The two streams are paired by
:class:`~dynamic_identification.core.signal.alignment.StreamAligner` (currents interpolated
at each joint-state stamp) and the currents converted into joint torques through the
drive chain (``drive_chain.*`` of :data:`~dynamic_identification.io.config.CONFIG_KEYS`,
so the shared ``/**`` block of the configuration file applies; linear, or the
third-order model of [Swevers2002] eq. (4) with ``current_polynomial``). With
``topics.effort_is_torque`` (Gazebo's ``gz_ros2_control``) the joint states' effort
already is the joint torque and no currents are needed. When ``topics.motor_currents``
names the joint-states topic itself (a driver that publishes the motor currents in
``JointState.effort``), each joint state carries its currents: one subscription, nothing
to align.

Publishes ``output_topic`` (default ``recorder/samples``, a relative name: namespaces
move it, ``sensor_msgs/JointState``: position in rad, velocity in rad/s, effort = joint
torque in N·m, stamp = the joint state's) and ``/diagnostics`` at 1 Hz (messages
received and refused per topic, aligned, unaligned, rejected NaN/duplicate/out-of-order
samples, the recording, and a warning naming any input topic silent for
``silent_timeout_s``). Nothing is lost silently: samples missing between stamps (a
queue that overflowed: :class:`~dynamic_identification.core.signal.stamps.StampGaps`),
refused or unaligned are counted by cause (:class:`Losses`); the status is WARN while
samples are being lost or the recording lacks some (ERROR for malformed input), and
``~/stop`` names the losses of the recording. Joint states stamped before the first motor current
(``joint_states_before_currents``: the currents had not begun, as when the recorder subscribes to
the two topics of a running robot one after the other) are dropped but are no loss; so are, without
``joints`` configured, the motor currents that come before the first joint state names the joints
(``motor_currents_before_joint_states``). With
``acknowledge`` it publishes on ``~/acknowledged`` (``builtin_interfaces/Time``) the newest
stamp it has taken on every input, for a ``sim_robot`` in lockstep that waits for it
(:mod:`~dynamic_identification.nodes.lockstep`). A message stamped 0 (a driver that does
not stamp) is taken at its receive time, with a warning; a stamp of either stream
jumping back by more than a second restarts the alignment. Serves ``~/start``
and ``~/stop`` (``std_srvs/Trigger``): ``~/start`` records into
``output_dir/recording_<YYYYmmdd_HHMMSS>.csv`` (``output_dir`` by default
``$ROS_HOME/dynamic_identification/recordings``: :func:`recordings_dir`; or ``output_file``; an existing file
is never overwritten: ``_1``, ``_2``, … are appended), ``~/stop`` closes it. The file
(:class:`~dynamic_identification.io.recording.RecordingWriter`: ``time``, per joint
``J/position``, ``J/velocity``, ``J/effort`` in N·m and ``J/current`` in A when
currents are used) is written as samples arrive and flushed at least every second,
so :func:`~dynamic_identification.io.recording.read_recording_csv` loads it at any
moment and a crash loses at most the last second.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.expand_topic_name import expand_topic_name
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from dynamic_identification.core.errors import IdentificationError, brief
from dynamic_identification.core.mechanism.robot import DriveChain
from dynamic_identification.core.settings_schema import setting_field
from dynamic_identification.core.signal.alignment import (
    AlignedSample,
    StreamAligner,
    current_polynomial,
    current_to_torque,
)
from dynamic_identification.core.signal.stamps import NS_PER_S, StampGaps, jumped_back
from dynamic_identification.io.config import CONFIG_KEYS, IdentificationConfig, config_from_parameters
from dynamic_identification.io.recording import RecordingWriter
from dynamic_identification.nodes.conversions import (
    arrays_from_joint_state,
    joint_state_message,
    non_finite_field,
    stamp_to_ns,
)
from dynamic_identification.nodes.guarded import DIAGNOSTICS_PERIOD_S, GuardedNode, status_message
from dynamic_identification.nodes.lockstep import Acknowledger
from dynamic_identification.nodes.parameters import node_parameters, read_parameters
from dynamic_identification.nodes.qos import sensor_qos
from dynamic_identification.nodes.runner import run_node

STREAM_QOS = sensor_qos(1000)
"""``SENSOR_QOS`` with a 1 s history at 1 kHz, for both inputs and the aligned output."""

NODE = "recorder"


@dataclass(frozen=True)
class RecorderConfig:
    """The node's parameters, read once at start (units and ranges: the settings schema).

    ``identification`` holds the parameters set that ``dynid`` reads too (``joints``,
    ``drive_chain.*``, ``topics.*``, ``tolerance_s``, ``max_delay_s``), for
    :func:`~dynamic_identification.io.config.config_from_parameters`, which checks them as
    ``dynid`` does.
    """

    current_polynomial: tuple[float, ...] | None = setting_field("current_polynomial", NODE)
    output_topic: str = setting_field("output_topic", NODE)
    output_dir: str = setting_field("output_dir", NODE)
    output_file: str = setting_field("output_file", NODE)
    tolerance_s: float = setting_field("tolerance_s", NODE)
    max_delay_s: float = setting_field("max_delay_s", NODE)
    silent_timeout_s: float = setting_field("silent_timeout_s", NODE)
    joint_states_topic: str = setting_field("topics.joint_states", NODE)
    currents_topic: str = setting_field("topics.motor_currents", NODE)
    acknowledge: bool = setting_field("acknowledge", NODE)
    identification: tuple[tuple[str, object], ...] = ()


_PARAMETERS = node_parameters(NODE)


def declare_and_read(node: Node) -> RecorderConfig:
    """Declare every parameter with its descriptor and read them once into a config."""
    reader = read_parameters(node, NODE, _PARAMETERS)
    return replace(reader.build(RecorderConfig), identification=reader.set_among(CONFIG_KEYS.__contains__))


@dataclass(frozen=True)
class Conversion:
    """How aligned samples of ``joints`` become joint torques."""

    joints: tuple[str, ...]
    drive_chain: DriveChain
    polynomial: np.ndarray | None


@dataclass(frozen=True)
class RecorderSetup:
    """What a validated configuration builds; ``conversion`` waits for the joints when they are unset."""

    identification: IdentificationConfig
    conversion: Conversion | None


def build_conversion(config: RecorderConfig, identification: IdentificationConfig, joints: Sequence[str]) -> Conversion:
    """The drive chain and polynomial for ``joints``; ``ValueError`` names the bad parameter."""
    names = tuple(joints)
    if not names or len(set(names)) != len(names) or not all(names):
        raise ValueError(f"joints must be distinct non-empty names, got {list(names)}")
    try:
        chain = identification.drive_chain(len(names))
        polynomial = current_polynomial(config.current_polynomial, len(names)) if config.current_polynomial else None
    except IdentificationError as error:
        raise ValueError(f"invalid drive chain for joints {list(names)}: {error}") from error
    return Conversion(joints=names, drive_chain=chain, polynomial=polynomial)


def build_setup(config: RecorderConfig) -> RecorderSetup:
    """Validate ``config``; ``ValueError`` names the bad parameter."""
    if not config.output_topic:
        raise ValueError("parameter 'output_topic' must not be empty")
    output_file = Path(config.output_file)
    if config.output_file and (output_file.is_absolute() or ".." in output_file.parts or not output_file.name):
        raise ValueError(
            f"parameter 'output_file' must be a file name inside output_dir (no '..', not absolute),"
            f" got {brief(config.output_file)}"
        )
    flat = {key: list(value) if isinstance(value, tuple) else value for key, value in config.identification}
    try:
        identification = config_from_parameters(flat, source="recorder parameters")
    except IdentificationError as error:
        raise ValueError(f"invalid recorder parameter: {error}") from error
    if config.current_polynomial and identification.effort_is_torque:
        raise ValueError("parameter 'current_polynomial' is set but topics.effort_is_torque takes no currents")
    conversion = None
    if identification.joints is not None:
        conversion = build_conversion(config, identification, identification.joints)
    elif config.current_polynomial and len(config.current_polynomial) % 4:
        raise ValueError(
            f"parameter 'current_polynomial' needs 4 values per motor, got {len(config.current_polynomial)}"
        )
    return RecorderSetup(identification=identification, conversion=conversion)


def recordings_dir() -> Path:
    """Where recordings go without ``output_dir``: ``$ROS_HOME/dynamic_identification/recordings``.

    ``ros2 launch`` runs the nodes in the caller's working directory, wherever that is; ROS keeps
    what its nodes write under ``ROS_HOME`` (``~/.ros`` when unset), as rcl its logs.
    """
    ros_home = os.environ.get("ROS_HOME") or str(Path("~", ".ros"))
    return Path(ros_home).expanduser() / "dynamic_identification" / "recordings"


def recording_path(output_dir: str, output_file: str, now: datetime) -> Path:
    """The file ``~/start`` creates: ``output_file`` (relative to ``output_dir``, default :func:`recordings_dir`)
    or a dated name, with ``_1``, ``_2``, … appended while the name exists."""
    directory = Path(output_dir).expanduser() if output_dir else recordings_dir()
    path = directory / (output_file or f"recording_{now:%Y%m%d_%H%M%S}.csv")
    candidate, index = path, 0
    while candidate.exists():
        index += 1
        candidate = path.with_name(f"{path.stem}_{index}{path.suffix}")
    return candidate


@dataclass
class _Input:
    """Receipt counts of one input topic.

    ``gaps`` counts the samples missing between stamps (lost on the way: a queue that
    overflowed); ``unstamped`` the messages stamped 0, recorded at their receive time;
    ``restarts`` the jumps of its stamps back by more than ``BACKWARD_JUMP_S``.
    """

    topic: str
    received: int = 0
    refused: int = 0
    last_receipt: float | None = None
    error: str = ""
    gaps: StampGaps = field(default_factory=StampGaps)
    unstamped: int = 0
    restarts: int = 0
    last_stamp_ns: int | None = None

    def receive(self) -> None:
        """Count a message of this topic as received now (monotonic clock, for the silence check)."""
        self.received += 1
        self.last_receipt = time.monotonic()


@dataclass(frozen=True)
class Losses:
    """Joint-state samples that did not reach the output, by cause, since the node started.

    ``missing`` joint states never arrived (gaps in their stamps), ``refused`` arrived
    unusable (a malformed message, NaN, a repeated or out-of-order stamp),
    ``unaligned`` found no motor current within ``tolerance_s``; ``currents_missing``
    counts motor-current samples missing from their stream (they cost joint states only
    when they leave a gap wider than the tolerance). ``before_currents`` joint states came
    before the first motor current: not output, but no loss (not in :attr:`samples`).
    """

    missing: int = 0
    refused: int = 0
    unaligned: int = 0
    currents_missing: int = 0
    aligned: int = 0
    received: int = 0
    before_currents: int = 0

    @property
    def samples(self) -> int:
        """Joint states lost: missing, refused or unaligned."""
        return self.missing + self.refused + self.unaligned

    def since(self, earlier: Losses) -> Losses:
        return Losses(
            missing=self.missing - earlier.missing,
            refused=self.refused - earlier.refused,
            unaligned=self.unaligned - earlier.unaligned,
            currents_missing=self.currents_missing - earlier.currents_missing,
            aligned=self.aligned - earlier.aligned,
            received=self.received - earlier.received,
            before_currents=self.before_currents - earlier.before_currents,
        )

    def describe(self) -> str:
        """``"12 joint states missing (gaps in their stamps), 3 unaligned (…)"``; empty without loss."""
        parts = []
        if self.missing:
            parts.append(f"{self.missing} joint states missing (gaps in their stamps: lost on the way)")
        if self.refused:
            parts.append(f"{self.refused} refused (malformed, NaN, repeated or out-of-order stamps)")
        if self.unaligned:
            parts.append(f"{self.unaligned} unaligned (no motor current within tolerance_s)")
        if self.currents_missing:
            parts.append(f"{self.currents_missing} motor-current samples missing")
        return ", ".join(parts)


class RecorderNode(GuardedNode):
    """Aligns joint states with motor currents, publishes joint torques and records them (module docstring)."""

    def __init__(self, *, node_name: str = "recorder", **kwargs: object) -> None:
        super().__init__(node_name, **kwargs)
        # Before anything can fail: rclpy destroys a node whose constructor raised when its context shuts down.
        self._recording: Path | None = None
        self._writer: RecordingWriter | None = None
        self.config = declare_and_read(self)
        setup = build_setup(self.config)
        self.identification = setup.identification
        self.effort_is_torque = setup.identification.effort_is_torque
        self.currents_in_joint_states = False
        """Whether the motor currents are the joint states' effort (``topics.motor_currents`` names that topic)."""
        self._conversion: Conversion | None = None
        self._aligner: StreamAligner | None = None
        self._base_ns: int | None = None
        self._published = 0
        self._overflowed = 0
        self._currents_before_joints = 0
        self._started = time.monotonic()
        self._joint_states = _Input(self.config.joint_states_topic)
        self._currents = _Input(self.config.currents_topic)
        self._recording_refused = 0
        self._recording_error = ""
        self._last_path = ""
        self._losses_at_start = Losses()
        self._losses_reported = Losses()
        self._samples = self.create_publisher(JointState, self.config.output_topic, STREAM_QOS)
        self._acknowledger = Acknowledger(self) if self.config.acknowledge else None
        self.start_diagnostics(self.diagnostic_status, period_s=None)
        # Names as resolved in the node's namespace, for the logs and diagnostics, and to tell when the two topics
        # are one (a relative and an absolute name, or a remapping, may name the same topic).
        subscription = self.create_subscription(JointState, self._joint_states.topic, self._on_joint_state, STREAM_QOS)
        self._joint_states.topic = subscription.topic_name
        currents_topic = _resolved_topic(self, self._currents.topic)
        self.currents_in_joint_states = not self.effort_is_torque and currents_topic == self._joint_states.topic
        if self._separate_currents:
            subscription = self.create_subscription(JointState, self._currents.topic, self._on_currents, STREAM_QOS)
            currents_topic = subscription.topic_name
        self._currents.topic = currents_topic
        if setup.conversion is not None:
            self._use(setup.conversion)
        self.create_service(Trigger, "~/start", self._on_start)
        self.create_service(Trigger, "~/stop", self._on_stop)
        self.create_timer(DIAGNOSTICS_PERIOD_S, self._on_timer)
        source = (
            "joint-state efforts"
            if self.effort_is_torque
            else f"currents in the efforts of {self._currents.topic}"
            if self.currents_in_joint_states
            else f"currents on {self._currents.topic}"
        )
        joints = list(self._conversion.joints) if self._conversion else "the joints of the first message"
        self.get_logger().info(
            f"recording {joints} from {self._joint_states.topic} with torques from {source};"
            f" publishing {self._samples.topic_name}"
        )

    @property
    def joint_names(self) -> list[str] | None:
        return None if self._conversion is None else list(self._conversion.joints)

    @property
    def _separate_currents(self) -> bool:
        """Whether the motor currents come on a topic of their own, to be aligned with the joint states."""
        return not (self.effort_is_torque or self.currents_in_joint_states)

    @property
    def aligner(self) -> StreamAligner | None:
        return self._aligner

    @property
    def recording(self) -> Path | None:
        """The file being recorded, or ``None``."""
        return self._recording

    def destroy_node(self) -> None:
        self._close_recording()
        super().destroy_node()

    def _use(self, conversion: Conversion) -> None:
        self._conversion = conversion
        self._aligner = StreamAligner(
            len(conversion.joints),
            tolerance_s=self.config.tolerance_s,
            max_delay_s=self.config.max_delay_s,
            effort_is_torque=self.effort_is_torque,
            effort_is_current=self.currents_in_joint_states,
        )

    def _seconds(self, stamp_ns: int) -> float:
        """Stamp relative to the first one seen, s: exact to the nanosecond for years of data."""
        if self._base_ns is None:
            self._base_ns = stamp_ns
        return (stamp_ns - self._base_ns) / NS_PER_S

    def _refuse(self, source: _Input, reason: str) -> None:
        source.refused += 1
        if source.error != reason:
            self.get_logger().error(f"refusing {source.topic}: {reason}")
        source.error = reason

    def _arrays(
        self, source: _Input, message: JointState, joints: Sequence[str]
    ) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None] | None:
        """``(q, dq, effort)`` of ``message`` in the order of ``joints``, ``None`` when it is refused (a joint missing,
        a field whose length is not the names')."""
        try:
            _, q, dq, effort = arrays_from_joint_state(message, joints)
        except IdentificationError as error:
            self._refuse(source, str(error))
            return None
        # Refused here, said and counted as every bad message is, not only dropped by the alignment.
        non_finite = non_finite_field(joints, position=q, velocity=dq, effort=effort)
        if non_finite is not None:
            self._refuse(source, non_finite)
            return None
        return q, dq, effort

    def _on_joint_state(self, message: JointState) -> None:
        source = self._joint_states
        source.receive()
        if self._conversion is None:
            try:
                self._use(build_conversion(self.config, self.identification, list(message.name)))
            except ValueError as error:
                self._refuse(source, str(error))
                return
        conversion, aligner = self._conversion, self._aligner
        if conversion is None or aligner is None:
            return
        arrays = self._arrays(source, message, conversion.joints)
        if arrays is None:
            return
        q, dq, effort = arrays
        if q is None:
            self._refuse(source, "the message carries no positions")
            return
        if self.effort_is_torque and effort is None:
            self._refuse(source, "the message carries no effort (joint torque, N.m) and topics.effort_is_torque is set")
            return
        if self.currents_in_joint_states and effort is None:
            self._refuse(source, "the message carries no effort (motor currents, A) and topics.motor_currents names it")
            return
        source.error = ""
        stamp_ns = self._stamp(source, message, aligner)
        carried = effort if not self._separate_currents else None
        self._emit(aligner.add_joint_state(self._seconds(stamp_ns), q, dq, carried))

    def _on_currents(self, message: JointState) -> None:
        source = self._currents
        source.receive()
        conversion, aligner = self._conversion, self._aligner
        if conversion is None or aligner is None:  # the joints, and their order, come with the first joint state
            self._currents_before_joints += 1
            return
        arrays = self._arrays(source, message, conversion.joints)
        if arrays is None:
            return
        currents = arrays[2]
        if currents is None:
            self._refuse(source, "the message carries no effort (motor currents, A)")
            return
        source.error = ""
        self._emit(aligner.add_currents(self._seconds(self._stamp(source, message, aligner)), currents))

    def _stamp(self, source: _Input, message: JointState, aligner: StreamAligner) -> int:
        """The message's stamp, ns: its receive time when it is unstamped (0); gaps and jumps back are counted.

        A stamp earlier than the stream's last by more than ``BACKWARD_JUMP_S`` (a bag
        loop, a simulation reset, a device clock reset) restarts the alignment; the
        other stream's jump detection starts afresh, so a bag loop restarts it once.
        """
        stamp_ns = stamp_to_ns(message.header.stamp)
        if stamp_ns == 0:
            source.unstamped += 1
            stamp_ns = max(int(self.get_clock().now().nanoseconds), 1)
        last = source.last_stamp_ns
        if last is not None and jumped_back(stamp_ns, last):
            self.get_logger().warning(
                f"{source.topic} stamps jumped back by {(last - stamp_ns) / NS_PER_S:.3f} s: alignment restarted"
            )
            aligner.reset()
            source.restarts += 1
            for stream in (self._joint_states, self._currents):
                stream.gaps.reset()
                stream.last_stamp_ns = None
            last = None
        if last is None or stamp_ns > last:
            source.last_stamp_ns = stamp_ns
            source.gaps.add(stamp_ns)
            self._acknowledge()
        return stamp_ns

    def _acknowledge(self) -> None:
        """With ``acknowledge``: the newest stamp taken on every input (a simulator in lockstep waits for it)."""
        if self._acknowledger is None:
            return
        inputs = (self._joint_states,) if self.effort_is_torque else (self._joint_states, self._currents)
        stamps = [source.last_stamp_ns for source in inputs]
        if None not in stamps:
            self._acknowledger.taken(min(stamp for stamp in stamps if stamp is not None))

    def _emit(self, samples: list[AlignedSample]) -> None:
        conversion = self._conversion
        if not samples or conversion is None or self._base_ns is None:
            return
        for sample in samples:
            if sample.current is None:
                torque = sample.effort
            else:
                torque = current_to_torque(sample.current, conversion.drive_chain, conversion.polynomial)
                if not np.isfinite(torque).all():  # finite currents, absurd ones: 1e308 A
                    reason = f"motor currents {brief(sample.current.tolist())} A overflow the joint torque"
                    self._refuse(self._currents, reason)
                    self._overflowed += 1
                    continue
            stamp_ns = self._base_ns + round(sample.stamp_s * NS_PER_S)
            self._samples.publish(
                joint_state_message(conversion.joints, stamp_ns, sample.position, sample.velocity, torque)
            )
            self._published += 1
            if self._recording is not None:
                self._record(stamp_ns, sample, torque)

    def _record(self, stamp_ns: int, sample: AlignedSample, torque: np.ndarray | None) -> None:
        path, conversion = self._recording, self._conversion
        if path is None or conversion is None:
            return
        try:
            if self._writer is None:
                kinds = ["position", "effort"]
                if sample.velocity is not None:
                    kinds.append("velocity")
                if sample.current is not None:
                    kinds.append("current")
                self._writer = RecordingWriter(path, conversion.joints, kinds, flush_period_s=DIAGNOSTICS_PERIOD_S)
            self._writer.append(
                stamp_ns / NS_PER_S,
                position=sample.position,
                velocity=sample.velocity,
                effort=torque,
                current=sample.current,
            )
        except IdentificationError as error:
            self._recording_refused += 1
            if self._recording_error != str(error):
                self.get_logger().error(f"not recording a sample: {error}")
            self._recording_error = str(error)

    def _on_start(self, _request: Trigger.Request, _response: Trigger.Response) -> Trigger.Response:
        if self._recording is not None:
            return Trigger.Response(success=False, message=f"already recording to {self._recording}")
        path = recording_path(self.config.output_dir, self.config.output_file, datetime.now())
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            return Trigger.Response(success=False, message=f"cannot create {path.parent}: {error}")
        if not os.access(path.parent, os.W_OK):
            return Trigger.Response(success=False, message=f"cannot write to {path.parent}")
        self._recording = path
        self._last_path = str(path)
        self._recording_refused = 0
        self._recording_error = ""
        self._losses_at_start = self.losses()
        message = f"recording to {path}"
        self.get_logger().info(message)
        return Trigger.Response(success=True, message=message)

    def _on_stop(self, _request: Trigger.Request, _response: Trigger.Response) -> Trigger.Response:
        path = self._recording
        if path is None:
            return Trigger.Response(success=True, message="not recording")
        lost = self.losses().since(self._losses_at_start)
        samples = self._close_recording()
        if samples == 0:
            message = f"stopped: no aligned sample arrived, {path} not written"
        else:
            message = f"stopped: {samples} samples in {path}"
        if lost.before_currents:
            message += f"; {lost.before_currents} joint states before the first motor current, not recorded"
        if lost.samples or lost.currents_missing:
            message += f"; lost during the recording: {lost.describe()}"
            self.get_logger().warning(message)
        else:
            self.get_logger().info(message)
        return Trigger.Response(success=True, message=message)

    def _close_recording(self) -> int:
        writer, self._writer, self._recording = self._writer, None, None
        if writer is None:
            return 0
        writer.close()
        return writer.n_samples

    def _on_timer(self) -> None:
        if self._writer is not None:
            self._writer.flush()
        self.publish_diagnostics()
        self._losses_reported = self.losses()  # the next report's "recent" starts here

    def losses(self) -> Losses:
        """Joint states lost so far, by cause (:class:`Losses`)."""
        stats = self._aligner.stats if self._aligner is not None else None
        rejected = stats.joint_states.rejected if stats is not None else 0
        return Losses(
            missing=self._joint_states.gaps.missing,
            refused=self._joint_states.refused + rejected + self._overflowed,
            unaligned=stats.unaligned if stats is not None else 0,
            currents_missing=self._currents.gaps.missing if self._separate_currents else 0,
            aligned=stats.aligned if stats is not None else 0,
            received=self._joint_states.received,
            before_currents=stats.before_currents if stats is not None else 0,
        )

    def _skew_s(self) -> float | None:
        """Newest motor-current stamp minus newest joint-state stamp, s (``None`` before both)."""
        currents, states = self._currents.last_stamp_ns, self._joint_states.last_stamp_ns
        if currents is None or states is None or not self._separate_currents:
            return None
        return (currents - states) / NS_PER_S

    def silent_topics(self) -> list[tuple[str, float]]:
        """Input topics with no message for ``silent_timeout_s``, with the seconds since the last (or start)."""
        now = time.monotonic()
        sources = [self._joint_states, self._currents] if self._separate_currents else [self._joint_states]
        silent = []
        for source in sources:
            since = now - (source.last_receipt if source.last_receipt is not None else self._started)
            if since > self.config.silent_timeout_s:
                silent.append((source.topic, since))
        return silent

    def diagnostic_status(self) -> DiagnosticStatus:
        """One ``DiagnosticStatus`` named ``recorder``: counts, recording state and problems."""
        problems: list[str] = []
        level = DiagnosticStatus.OK
        for source in (self._joint_states, self._currents):
            if source.error:
                level = DiagnosticStatus.ERROR
                problems.append(f"refusing {source.topic}: {source.error}")
        silent = self.silent_topics()
        for topic, since in silent:
            received = "nothing received" if self._source(topic).last_receipt is None else "nothing"
            problems.append(f"silent: {topic} ({received} for {since:.1f} s)")
        if silent and level == DiagnosticStatus.OK:
            level = DiagnosticStatus.WARN
        if self._recording_error and self._recording is not None:
            level = DiagnosticStatus.ERROR
            problems.append(f"recording refuses samples: {self._recording_error}")
        losses = self.losses()
        recent = losses.since(self._losses_reported)
        if recent.samples or recent.currents_missing:
            cause = recent.describe()
            skew = self._skew_s()
            if recent.unaligned and skew is not None and abs(skew) > self.config.max_delay_s:
                side = "behind" if skew < 0 else "ahead of"
                cause += f"; the motor currents' stamps are {abs(skew):.3f} s {side} the joint states' (another clock?)"
            problems.append(f"lost {recent.samples} samples since the last report: {cause}")
            level = max(level, DiagnosticStatus.WARN)
        if self._recording is not None:
            during = losses.since(self._losses_at_start)
            if during.samples:
                problems.append(f"the recording lacks {during.samples} samples: {during.describe()}")
                level = max(level, DiagnosticStatus.WARN)
        for source in (self._joint_states, self._currents):
            if source.unstamped and source.received:
                problems.append(f"{source.topic} is unstamped (stamp 0): {source.unstamped} recorded at receipt time")
                level = max(level, DiagnosticStatus.WARN)
        recording = self._recording
        writer = self._writer
        values: dict[str, str] = {
            "joints": " ".join(self._conversion.joints) if self._conversion else "",
            "torque_source": "effort"
            if self.effort_is_torque
            else (
                ("current in the joint states' effort, " if self.currents_in_joint_states else "current, ")
                + (
                    "polynomial ([Swevers2002] eq. 4)"
                    if self._conversion is not None and self._conversion.polynomial is not None
                    else "linear"
                )
            ),
            "joint_states_topic": self._joint_states.topic,
            "joint_states_received": str(self._joint_states.received),
            "joint_states_refused": str(self._joint_states.refused),
            "motor_currents_topic": "" if self.effort_is_torque else self._currents.topic,
            "motor_currents_received": str(self._currents.received),
            "motor_currents_before_joint_states": str(self._currents_before_joints),
            "motor_currents_refused": str(self._currents.refused),
            "silent_topics": " ".join(topic for topic, _ in silent),
        }
        stats = self._aligner.stats if self._aligner is not None else None
        if stats is not None:
            for label, stream in (("joint_states", stats.joint_states), ("motor_currents", stats.currents)):
                values[f"{label}_rejected_nan"] = str(stream.rejected_nan)
                values[f"{label}_rejected_duplicate"] = str(stream.rejected_duplicate)
                values[f"{label}_rejected_out_of_order"] = str(stream.rejected_out_of_order)
            values.update(aligned=str(stats.aligned), unaligned=str(stats.unaligned), pending=str(stats.pending))
            values["joint_states_before_currents"] = str(stats.before_currents)
        for label, source in (("joint_states", self._joint_states), ("motor_currents", self._currents)):
            period = source.gaps.period_s
            values[f"{label}_period_ms"] = "" if period is None else f"{period * 1e3:.6g}"
            values[f"{label}_missing"] = str(source.gaps.missing)
            values[f"{label}_interruptions"] = str(source.gaps.interruptions)
            values[f"{label}_unstamped"] = str(source.unstamped)
            values[f"{label}_restarts"] = str(source.restarts)
        values["lost_samples"] = str(losses.samples)
        values["published"] = str(self._published)
        values["recording"] = "true" if recording is not None else "false"
        values["recording_path"] = str(recording) if recording is not None else self._last_path
        values["recording_samples"] = str(writer.n_samples if writer is not None else 0)
        values["recording_refused"] = str(self._recording_refused)
        values["recording_lost_samples"] = str(losses.since(self._losses_at_start).samples if recording else 0)
        if problems:
            message = "; ".join(problems)
        elif recording is not None:
            message = f"recording to {recording}"
        else:
            message = "ok"
        return status_message(level, "recorder", message, values)

    def _source(self, topic: str) -> _Input:
        return self._joint_states if topic == self._joint_states.topic else self._currents


def _resolved_topic(node: Node, topic: str) -> str:
    """``topic`` as the node resolves it: remapped on Jazzy and later (``resolve_topic_name``), only expanded in
    the node's namespace on Humble."""
    if hasattr(node, "resolve_topic_name"):
        return str(node.resolve_topic_name(topic))
    return str(expand_topic_name(topic, node.get_name(), node.get_namespace()))


def main(args: Sequence[str] | None = None) -> None:
    """Entry point of ``ros2 run dynamic_identification recorder``."""
    run_node("recorder", RecorderNode, args)


if __name__ == "__main__":
    main()
