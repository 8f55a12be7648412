"""``recorder``: time-aligned joint states and joint torques, live and to a recording file.

Subscribes ``topics.joint_states`` (default ``/joint_states``, ``sensor_msgs/JointState``)
and ``topics.motor_currents`` (default ``/motor_currents``, ``sensor_msgs/JointState``
whose ``effort`` holds motor currents in A); joints are matched by name, in any order,
extra joints are ignored and a message lacking a recorded joint is refused and
reported. The two streams are paired by
:class:`~dynamic_identification.core.alignment.StreamAligner` (currents interpolated
at each joint-state stamp) and the currents converted into joint torques through the
drive chain (``drive_chain.*`` of :data:`~dynamic_identification.io.config.CONFIG_KEYS`,
so the shared ``/**`` block of the configuration file applies; linear, or the
third-order model of seed 002 eq. (4) with ``current_polynomial``). With
``topics.effort_is_torque`` (Gazebo's ``gz_ros2_control``) the joint states' effort
already is the joint torque and no currents are needed.

Publishes ``output_topic`` (default ``/recorder/samples``, ``sensor_msgs/JointState``:
position in rad, velocity in rad/s, effort = joint torque in N·m, stamp = the joint
state's) and ``/diagnostics`` at 1 Hz (messages received and refused per topic,
aligned, unaligned, rejected NaN/duplicate/out-of-order samples, the recording, and a
warning naming any input topic silent for ``silent_timeout_s``). Serves ``~/start``
and ``~/stop`` (``std_srvs/Trigger``): ``~/start`` records into
``output_dir/recording_<YYYYmmdd_HHMMSS>.csv`` (or ``output_file``; an existing file
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
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from dynamic_identification.core.alignment import (
    DEFAULT_MAX_DELAY_S,
    DEFAULT_TOLERANCE_S,
    AlignedSample,
    StreamAligner,
    current_polynomial,
    current_to_torque,
)
from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.model import DriveChain
from dynamic_identification.core.stamps import NS_PER_S, jumped_back
from dynamic_identification.io.config import IdentificationConfig, config_from_parameters
from dynamic_identification.io.recording import RecordingWriter
from dynamic_identification.nodes.conversions import (
    arrays_from_joint_state,
    joint_state_message,
    stamp_to_ns,
    time_message,
)
from dynamic_identification.nodes.parameters import ParameterSpec
from dynamic_identification.nodes.parameters import declare_and_read as declare_parameters
from dynamic_identification.nodes.qos import sensor_qos
from dynamic_identification.nodes.runner import run_node, stream_executor

DIAGNOSTICS_PERIOD_S = 1.0
"""Diagnostics are published, and the recording file flushed, this often (s)."""

STREAM_QOS = sensor_qos(1000)
"""``SENSOR_QOS`` with a 1 s history at 1 kHz, for both inputs and the aligned output."""

_DEFAULTS = IdentificationConfig()


@dataclass(frozen=True)
class RecorderConfig:
    """The node's parameters, read once at start (units as in the ROS parameter descriptions).

    ``identification`` holds the ``joints``, ``drive_chain.*`` and ``topics.*``
    parameters as set, for :func:`~dynamic_identification.io.config.config_from_parameters`.
    """

    current_polynomial: tuple[float, ...] = ()
    output_topic: str = "/recorder/samples"
    output_dir: str = "."
    output_file: str = ""
    tolerance_s: float = DEFAULT_TOLERANCE_S
    max_delay_s: float = DEFAULT_MAX_DELAY_S
    silent_timeout_s: float = 0.5
    identification: tuple[tuple[str, object], ...] = ()


_NODE_PARAMETERS = (
    ParameterSpec(
        "current_polynomial",
        None,
        Parameter.Type.DOUBLE_ARRAY,
        "current to motor torque, seed 002 eq. (4): [c0 N.m, c1 N.m/A, c2 N.m/A^2, c3 N.m/A^3] per motor,"
        " motor by motor; unset = linear with drive_chain.drive_gains",
    ),
    ParameterSpec("output_topic", "/recorder/samples", Parameter.Type.STRING, "aligned samples (effort in N.m)"),
    ParameterSpec("output_dir", ".", Parameter.Type.STRING, "directory of recording_<YYYYmmdd_HHMMSS>.csv files"),
    ParameterSpec("output_file", "", Parameter.Type.STRING, "recording file (relative to output_dir); empty = dated"),
    ParameterSpec(
        "tolerance_s",
        DEFAULT_TOLERANCE_S,
        Parameter.Type.DOUBLE,
        "largest distance of each bracketing current sample from a joint-state stamp, s",
        floating=(1e-6, 1.0),
    ),
    ParameterSpec(
        "max_delay_s",
        DEFAULT_MAX_DELAY_S,
        Parameter.Type.DOUBLE,
        "longest wait of a joint state for its currents, s of stamp time",
        floating=(1e-3, 10.0),
    ),
    ParameterSpec(
        "silent_timeout_s",
        0.5,
        Parameter.Type.DOUBLE,
        "an input topic without messages for this long is reported silent, s",
        floating=(0.01, 3600.0),
    ),
)

_IDENTIFICATION_PARAMETERS = (
    ParameterSpec(
        "joints", None, Parameter.Type.STRING_ARRAY, "recorded joints; unset = those of the first joint state"
    ),
    ParameterSpec(
        "drive_chain.gear_ratios", None, Parameter.Type.DOUBLE_ARRAY, "motor rad per joint rad, per joint; unset = 1"
    ),
    ParameterSpec(
        "drive_chain.drive_gains", None, Parameter.Type.DOUBLE_ARRAY, "motor torque constants, N.m/A; unset = 1"
    ),
    ParameterSpec(
        "drive_chain.coupling", None, Parameter.Type.DOUBLE_ARRAY, "n x n row-major coupling; unset = identity"
    ),
    ParameterSpec("topics.joint_states", _DEFAULTS.joint_states_topic, Parameter.Type.STRING, "JointState input"),
    ParameterSpec(
        "topics.motor_currents", _DEFAULTS.currents_topic, Parameter.Type.STRING, "JointState of currents (effort, A)"
    ),
    ParameterSpec(
        "topics.effort_is_torque",
        _DEFAULTS.effort_is_torque,
        Parameter.Type.BOOL,
        "joint states' effort is the joint torque (gz_ros2_control); no currents",
    ),
)


def declare_and_read(node: Node) -> RecorderConfig:
    """Declare every parameter with its descriptor and read them once into a config."""
    values = declare_parameters(node, _NODE_PARAMETERS)
    identification = declare_parameters(node, _IDENTIFICATION_PARAMETERS)
    return replace(RecorderConfig(), **values, identification=tuple(sorted(identification.items())))


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
    if not config.output_dir:
        raise ValueError("parameter 'output_dir' must not be empty")
    if not (config.max_delay_s > config.tolerance_s):
        raise ValueError(
            f"parameter 'max_delay_s' ({config.max_delay_s}) must exceed 'tolerance_s' ({config.tolerance_s})"
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


def recording_path(output_dir: str, output_file: str, now: datetime) -> Path:
    """The file ``~/start`` creates: ``output_file`` (relative to ``output_dir``) or a dated name,
    with ``_1``, ``_2``, … appended while the name exists."""
    directory = Path(output_dir).expanduser()
    path = directory / (output_file or f"recording_{now:%Y%m%d_%H%M%S}.csv")
    candidate, index = path, 0
    while candidate.exists():
        index += 1
        candidate = path.with_name(f"{path.stem}_{index}{path.suffix}")
    return candidate


@dataclass
class _Input:
    """Receipt counts of one input topic."""

    topic: str
    received: int = 0
    refused: int = 0
    last_receipt: float | None = None
    error: str = ""


class RecorderNode(Node):
    """Aligns joint states with motor currents, publishes joint torques and records them (module docstring)."""

    def __init__(self, *, node_name: str = "recorder", **kwargs: object) -> None:
        super().__init__(node_name, **kwargs)  # type: ignore[arg-type]
        self.config = declare_and_read(self)
        setup = build_setup(self.config)
        self.identification = setup.identification
        self.effort_is_torque = setup.identification.effort_is_torque
        self._conversion: Conversion | None = None
        self._aligner: StreamAligner | None = None
        if setup.conversion is not None:
            self._use(setup.conversion)
        self._base_ns: int | None = None
        self._last_joint_state_ns: int | None = None
        self._published = 0
        self._started = time.monotonic()
        self._joint_states = _Input(self.identification.joint_states_topic)
        self._currents = _Input(self.identification.currents_topic)
        self._recording: Path | None = None
        self._writer: RecordingWriter | None = None
        self._recording_refused = 0
        self._recording_error = ""
        self._last_path = ""
        self._samples = self.create_publisher(JointState, self.config.output_topic, STREAM_QOS)
        self._diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_subscription(JointState, self._joint_states.topic, self._on_joint_state, STREAM_QOS)
        if not self.effort_is_torque:
            self.create_subscription(JointState, self._currents.topic, self._on_currents, STREAM_QOS)
        self.create_service(Trigger, "~/start", self._on_start)
        self.create_service(Trigger, "~/stop", self._on_stop)
        self.create_timer(DIAGNOSTICS_PERIOD_S, self._on_timer)
        source = "joint-state efforts" if self.effort_is_torque else f"currents on {self._currents.topic}"
        joints = list(self._conversion.joints) if self._conversion else "the joints of the first message"
        self.get_logger().info(
            f"recording {joints} from {self._joint_states.topic} with torques from {source};"
            f" publishing {self.config.output_topic}"
        )

    @property
    def joint_names(self) -> list[str] | None:
        return None if self._conversion is None else list(self._conversion.joints)

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

    def _on_joint_state(self, message: JointState) -> None:
        source = self._joint_states
        source.received += 1
        source.last_receipt = time.monotonic()
        if self._conversion is None:
            try:
                self._use(build_conversion(self.config, self.identification, list(message.name)))
            except ValueError as error:
                self._refuse(source, str(error))
                return
        conversion, aligner = self._conversion, self._aligner
        if conversion is None or aligner is None:
            return
        try:
            _, q, dq, effort = arrays_from_joint_state(message, conversion.joints)
        except IdentificationError as error:
            self._refuse(source, str(error))
            return
        if q is None:
            self._refuse(source, "the message carries no positions")
            return
        if self.effort_is_torque and effort is None:
            self._refuse(source, "the message carries no effort (joint torque, N.m) and topics.effort_is_torque is set")
            return
        source.error = ""
        stamp_ns = stamp_to_ns(message.header.stamp)
        last = self._last_joint_state_ns
        if jumped_back(stamp_ns, last):
            self.get_logger().warning(
                f"{source.topic} stamps jumped back by {(last - stamp_ns) / NS_PER_S:.3f} s: alignment restarted"
            )
            aligner.reset()
        self._last_joint_state_ns = stamp_ns
        self._emit(aligner.add_joint_state(self._seconds(stamp_ns), q, dq, effort if self.effort_is_torque else None))

    def _on_currents(self, message: JointState) -> None:
        source = self._currents
        source.received += 1
        source.last_receipt = time.monotonic()
        conversion, aligner = self._conversion, self._aligner
        if conversion is None or aligner is None:
            return  # the joints come with the first joint state
        try:
            _, _, _, currents = arrays_from_joint_state(message, conversion.joints)
        except IdentificationError as error:
            self._refuse(source, str(error))
            return
        if currents is None:
            self._refuse(source, "the message carries no effort (motor currents, A)")
            return
        source.error = ""
        self._emit(aligner.add_currents(self._seconds(stamp_to_ns(message.header.stamp)), currents))

    def _emit(self, samples: list[AlignedSample]) -> None:
        conversion = self._conversion
        if not samples or conversion is None or self._base_ns is None:
            return
        for sample in samples:
            if sample.current is None:
                torque = sample.effort
            else:
                torque = current_to_torque(sample.current, conversion.drive_chain, conversion.polynomial)
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
        message = f"recording to {path}"
        self.get_logger().info(message)
        return Trigger.Response(success=True, message=message)

    def _on_stop(self, _request: Trigger.Request, _response: Trigger.Response) -> Trigger.Response:
        path = self._recording
        if path is None:
            return Trigger.Response(success=True, message="not recording")
        samples = self._close_recording()
        if samples == 0:
            message = f"stopped: no aligned sample arrived, {path} not written"
        else:
            message = f"stopped: {samples} samples in {path}"
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
        self._publish_diagnostics()

    def silent_topics(self) -> list[tuple[str, float]]:
        """Input topics with no message for ``silent_timeout_s``, with the seconds since the last (or start)."""
        now = time.monotonic()
        sources = [self._joint_states] if self.effort_is_torque else [self._joint_states, self._currents]
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
        recording = self._recording
        writer = self._writer
        values: dict[str, str] = {
            "joints": " ".join(self._conversion.joints) if self._conversion else "",
            "torque_source": "effort"
            if self.effort_is_torque
            else (
                "current, polynomial (seed 002 eq. 4)"
                if self._conversion is not None and self._conversion.polynomial is not None
                else "current, linear"
            ),
            "joint_states_topic": self._joint_states.topic,
            "joint_states_received": str(self._joint_states.received),
            "joint_states_refused": str(self._joint_states.refused),
            "motor_currents_topic": "" if self.effort_is_torque else self._currents.topic,
            "motor_currents_received": str(self._currents.received),
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
        values["published"] = str(self._published)
        values["recording"] = "true" if recording is not None else "false"
        values["recording_path"] = str(recording) if recording is not None else self._last_path
        values["recording_samples"] = str(writer.n_samples if writer is not None else 0)
        values["recording_refused"] = str(self._recording_refused)
        if problems:
            message = "; ".join(problems)
        elif recording is not None:
            message = f"recording to {recording}"
        else:
            message = "ok"
        return DiagnosticStatus(
            level=level,
            name="recorder",
            message=message,
            hardware_id="",
            values=[KeyValue(key=key, value=value) for key, value in values.items()],
        )

    def _source(self, topic: str) -> _Input:
        return self._joint_states if topic == self._joint_states.topic else self._currents

    def _publish_diagnostics(self) -> None:
        array = DiagnosticArray()
        array.header.stamp = time_message(max(int(self.get_clock().now().nanoseconds), 0))
        array.status = [self.diagnostic_status()]
        self._diagnostics.publish(array)


def main(args: Sequence[str] | None = None) -> None:
    """Entry point of ``ros2 run dynamic_identification recorder``."""
    run_node("recorder", RecorderNode, args, executor=stream_executor)


if __name__ == "__main__":
    main()
