"""Recordings from rosbag2 bags (sqlite3 or MCAP), read offline with the ``rosbags`` library.

``dynid identify --bag DIR`` reads the two topics the recorder node subscribes to,
without ROS running:

* the joint states (``sensor_msgs/msg/JointState``: position in rad, velocity in
  rad/s and, with ``effort_is_torque``, effort = joint torque in N·m), and
* the motor currents (``sensor_msgs/msg/JointState`` whose ``effort`` holds the
  current in A), unless ``effort_is_torque``. When the currents topic is the joint-states
  topic itself (a driver that publishes the currents in ``JointState.effort``), each joint
  state carries its currents: one topic, nothing to align.

Joints are matched by name in every message, so their order may change from message
to message and extra joints are ignored. The storage plugin (sqlite3 or MCAP) comes
from the bag's ``metadata.yaml``; messages are deserialised with the type definitions
the bag carries, or with those of ROS 2 Humble when it carries none (a ``JointState``
is the same in every ROS 2 distribution).

The messages are replayed in the order the bag holds them (receive time) through the
recorder node's :class:`~dynamic_identification.core.signal.alignment.StreamAligner`, with the
recorder's time base and restart rule, so the recording is the one the recorder would
have written had it been running when the bag was recorded.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dynamic_identification.core.errors import DataError, IdentificationError
from dynamic_identification.core.signal.alignment import (
    DEFAULT_MAX_DELAY_S,
    DEFAULT_TOLERANCE_S,
    AlignedSample,
    AlignmentStats,
    StreamAligner,
)
from dynamic_identification.core.signal.stamps import NS_PER_S, jumped_back
from dynamic_identification.io.recording import Recording, recording_from_arrays

JOINT_STATE_TYPE = "sensor_msgs/msg/JointState"
"""The message type both topics must have."""

MAX_DROPPED_FRACTION = 0.05
"""Largest fraction of the joint states that may be dropped (no aligned current, bad stamp)."""

_Message = tuple[str, int, Any]
"""``(topic, receive time in ns, deserialised message)``."""


@dataclass(frozen=True)
class BagReading:
    """A bag's recording and what aligning its joint states dropped.

    Attributes
    ----------
    recording
        The recording.
    stats
        The aligner's counts: joint states offered, aligned and dropped by cause.
    tolerance_s
        The alignment tolerance, s.
    what
        The joint states as the messages name them: ``"joint states on TOPIC in BAG"``.
    """

    recording: Recording
    stats: AlignmentStats
    tolerance_s: float
    what: str

    @property
    def dropped_text(self) -> str:
        """``"D of N joint states on … were dropped: causes"``; empty when none was (a user reads every drop)."""
        return _dropped_text(self.stats, self.tolerance_s, self.what) if self.stats.dropped else ""


def _dropped_text(stats: AlignmentStats, tolerance_s: float, what: str) -> str:
    """``"D of N what were dropped: causes"`` (:meth:`AlignmentStats.drop_causes`)."""
    return f"{stats.dropped} of {stats.joint_states.received} {what} were dropped: {stats.drop_causes(tolerance_s)}"


def read_bag(
    path: str | os.PathLike[str],
    *,
    joint_states_topic: str = "/joint_states",
    currents_topic: str = "/motor_currents",
    effort_is_torque: bool = False,
    joint_names: Sequence[str] | None = None,
    tolerance_s: float = DEFAULT_TOLERANCE_S,
    max_delay_s: float = DEFAULT_MAX_DELAY_S,
) -> BagReading:
    """The recording a rosbag2 bag holds, what the recorder node would have recorded, and what aligning it dropped.

    Parameters
    ----------
    path
        The bag directory (with its ``metadata.yaml``), sqlite3 or MCAP storage.
    joint_states_topic
        ``sensor_msgs/msg/JointState`` topic of positions (rad), velocities (rad/s) and,
        with ``effort_is_torque``, joint torques (N·m) in ``effort``.
    currents_topic
        ``sensor_msgs/msg/JointState`` topic whose ``effort`` holds motor currents in A;
        not read with ``effort_is_torque``. ``joint_states_topic`` itself: the joint states'
        ``effort`` holds the currents, at their stamps.
    effort_is_torque
        Take joint torques from the joint states' ``effort`` (Gazebo's ``gz_ros2_control``)
        instead of currents from ``currents_topic``.
    joint_names
        Joints to read, in this order; ``None`` takes the joints of the first joint-state
        message, in its order (and, as the recorder does, ignores currents that come
        before it). Extra joints in the messages are ignored.
    tolerance_s, max_delay_s
        Alignment settings of the recorder node (see
        :class:`~dynamic_identification.core.signal.alignment.StreamAligner`), s: a joint state
        is kept with currents interpolated at its stamp when the current samples before
        and after it are each within ``tolerance_s`` of it (or one has its exact stamp).

    Returns
    -------
    BagReading
        The recording: ``time`` in s from each joint state's ``header.stamp``; where a header stamp is
        zero (a driver that does not stamp) the bag's receive time of that message is
        used instead. Rows in stamp order as the aligner emits them. ``velocity`` when
        every joint-state message has velocities, else ``None``; ``effort`` (N·m) with
        ``effort_is_torque``, otherwise ``current`` (A; the recorder also writes their
        drive-chain torques as ``effort``, which ``dynid`` computes from the same
        configuration). And the aligner's counts: every joint state dropped, by cause
        (:attr:`BagReading.dropped_text`), for the output to say.

    Raises
    ------
    DataError
        With a one-line message: the bag is missing or unreadable, a topic is not in the
        bag (naming the topics it has), has another message type or no messages, a
        message lacks a joint (named, with the message's index and stamp) or the values
        a field needs, more than :data:`MAX_DROPPED_FRACTION` of the joint states are
        dropped (counted by cause), or fewer than 2 samples remain.
    """
    bag = Path(path)
    if not bag.exists():
        raise DataError(f"rosbag2 directory not found: {bag}")
    joint_states_topic, currents_topic = _absolute(joint_states_topic), _absolute(currents_topic)
    currents_in_effort = currents_topic == joint_states_topic and not effort_is_torque
    topics = (joint_states_topic,) if effort_is_torque or currents_in_effort else (joint_states_topic, currents_topic)
    messages = _read_messages(bag, topics)
    if joint_names is None:
        first = next(message for topic, _, message in messages if topic == joint_states_topic)
        names = tuple(first.name)
    else:
        names = tuple(joint_names)
    try:
        aligner = StreamAligner(
            len(names),
            tolerance_s=tolerance_s,
            max_delay_s=max_delay_s,
            effort_is_torque=effort_is_torque,
            effort_is_current=currents_in_effort,
        )
    except IdentificationError as error:
        raise DataError(f"reading {bag}: {error}") from error
    samples: list[AlignedSample] = []
    indices: dict[tuple[str, ...], np.ndarray] = {}
    counts = {topic: 0 for topic in topics}
    base_ns: int | None = None
    last_ns: int | None = None
    all_velocities = True
    for topic, received_ns, message in messages:
        k = counts[topic]
        counts[topic] += 1
        stamp_ns = int(message.header.stamp.sec) * NS_PER_S + int(message.header.stamp.nanosec) or received_ns
        if topic != joint_states_topic and joint_names is None and last_ns is None:
            continue
        index = indices.get(tuple(message.name))
        if index is None:
            index = indices[tuple(message.name)] = _joint_index(tuple(message.name), names, topic, k, stamp_ns)
        where = f"message {k} on {topic} (stamp {stamp_ns / NS_PER_S:.9f} s)"
        if base_ns is None:
            base_ns = stamp_ns
        stamp_s = (stamp_ns - base_ns) / NS_PER_S
        if topic == joint_states_topic:
            position = _required_field(message, "position", index, where, "positions (rad)")
            velocity = _field(message, "velocity", index, where)
            held = "joint torques (N·m)" if effort_is_torque else "motor currents (A)" if currents_in_effort else ""
            effort = _field(message, "effort", index, where, required=held)
            all_velocities = all_velocities and velocity is not None
            if jumped_back(stamp_ns, last_ns):  # a bag loop, a simulation reset: the recorder node's rule
                aligner.reset()
            last_ns = stamp_ns
            samples += aligner.add_joint_state(stamp_s, position, velocity, effort if held else None)
        else:
            currents = _required_field(message, "effort", index, where, "motor currents (A)")
            samples += aligner.add_currents(stamp_s, currents)
    what = f"joint states on {joint_states_topic} in {bag}"
    _check_dropped(aligner, what)
    if base_ns is None or not samples:
        raise DataError(f"no joint state on {joint_states_topic} in {bag} could be aligned")
    time = [(base_ns + round(sample.stamp_s * NS_PER_S)) / NS_PER_S for sample in samples]
    recording = recording_from_arrays(
        time,
        names,
        np.array([sample.position for sample in samples]),
        velocity=np.array([sample.velocity for sample in samples]) if all_velocities else None,
        effort=np.array([sample.effort for sample in samples]) if effort_is_torque else None,
        current=None if effort_is_torque else np.array([sample.current for sample in samples]),
    )
    return BagReading(recording, aligner.stats, aligner.tolerance_s, what)


def _absolute(topic: str) -> str:
    """A topic name as a bag stores it: a relative name (``joint_states``, the nodes' default) from the root."""
    return topic if topic.startswith("/") else "/" + topic


def _check_dropped(aligner: StreamAligner, what: str) -> None:
    """Refuse a bag whose alignment dropped more than :data:`MAX_DROPPED_FRACTION` of the joint states (``what``)."""
    stats = aligner.stats
    total = stats.joint_states.received
    if stats.dropped <= MAX_DROPPED_FRACTION * total:
        return
    raise DataError(
        f"{_dropped_text(stats, aligner.tolerance_s, what)}; at most {MAX_DROPPED_FRACTION:.0%} may be: do the two"
        " topics cover the same time, with matching stamps?"
    )


def _read_messages(bag: Path, topics: Sequence[str]) -> list[_Message]:
    """The messages of ``topics``, deserialised, in the bag's order (receive time)."""
    # Imported here so that the rest of the package does not need rosbags installed.
    from rosbags.highlevel import AnyReader, AnyReaderError
    from rosbags.rosbag2 import ReaderError
    from rosbags.typesys import Stores, get_typestore

    errors = (AnyReaderError, ReaderError, FileNotFoundError, KeyError, ValueError)
    messages: list[_Message] = []
    try:
        with AnyReader([bag], default_typestore=get_typestore(Stores.ROS2_HUMBLE)) as reader:
            available = reader.topics
            for topic in topics:
                if topic not in available:
                    have = ", ".join(f"{name} ({info.msgtype})" for name, info in sorted(available.items()))
                    raise DataError(f"topic {topic} is not in {bag} (it has: {have or 'no topics'})")
                msgtype = available[topic].msgtype
                if msgtype != JOINT_STATE_TYPE:
                    raise DataError(f"topic {topic} in {bag} has type {msgtype}, expected {JOINT_STATE_TYPE}")
            connections = [connection for connection in reader.connections if connection.topic in topics]
            for connection, received_ns, data in reader.messages(connections=connections):
                messages.append((connection.topic, int(received_ns), _deserialize(reader, data, connection.msgtype)))
    except errors as error:
        text = " ".join(str(error).split())
        raise DataError(f"cannot read rosbag2 {bag}: {type(error).__name__}: {text}") from error
    for topic in topics:
        if not any(name == topic for name, _, _ in messages):
            raise DataError(f"topic {topic} in {bag} has no messages")
    return messages


def _deserialize(reader: Any, data: bytes, msgtype: str) -> Any:
    """A message of the bag; CDR with trailing bytes is accepted.

    ``rclpy.serialization.serialize_message`` (what the rosbag2_py tutorial writes bags
    with) returns its buffer with a few bytes past the message, which ROS ignores and
    ``rosbags`` refuses ("CDR message size mismatch"): the message is decoded up to its
    end, as ROS does.
    """
    from rosbags.highlevel import AnyReaderError

    try:
        return reader.deserialize(data, msgtype)
    except AnyReaderError as error:
        if "size mismatch" not in str(error) or len(data) < 4:
            raise
    typestore = reader.typestore
    msgdef = typestore.get_msgdef(msgtype)
    decode = msgdef.deserialize_cdr_le if data[1] else msgdef.deserialize_cdr_be
    try:
        message, _ = decode(memoryview(data)[4:], 0, msgdef.cls, typestore)
    except Exception as error:  # noqa: BLE001 - a damaged message, whatever the decoder raises
        raise DataError(f"cannot decode a {msgtype} message: {type(error).__name__}") from None
    return message


def _joint_index(
    message_names: tuple[str, ...], joint_names: tuple[str, ...], topic: str, k: int, stamp_ns: int
) -> np.ndarray:
    """Indices into a message's names of each wanted joint; raises naming the first missing one."""
    column = {name: i for i, name in enumerate(message_names)}
    missing = [name for name in joint_names if name not in column]
    if missing:
        raise DataError(
            f"joint {missing[0]!r} is missing from message {k} on {topic} (stamp {stamp_ns / NS_PER_S:.9f} s),"
            f" which names {list(message_names)}"
        )
    return np.array([column[name] for name in joint_names], dtype=int)


def _required_field(message: Any, field: str, index: np.ndarray, where: str, what: str) -> np.ndarray:
    """:func:`_field` of a field the recording cannot do without (``what`` says what it holds)."""
    values = _field(message, field, index, where, required=what)
    if values is None:  # _field raises first; kept for the type checker
        raise DataError(f"{where} has no {field} values ({what})")
    return values


def _field(message: Any, field: str, index: np.ndarray, where: str, *, required: str = "") -> np.ndarray | None:
    """A ``JointState`` field in the wanted joint order; ``None`` when empty, unless ``required`` says what it holds."""
    values = np.asarray(getattr(message, field), dtype=float)
    if values.size == 0:
        if required:
            raise DataError(f"{where} has no {field} values ({required})")
        return None
    if values.size != len(message.name):
        raise DataError(f"{where} has {values.size} {field} values for {len(message.name)} joint names")
    return values[index]
