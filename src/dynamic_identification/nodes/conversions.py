"""Message ↔ numpy conversions: the one place where ROS messages meet the core's arrays.

Time is an integer of nanoseconds on the ROS side (``builtin_interfaces/Time``)
and float seconds in the core. Joint data is reordered by name into a given
joint order; a message that lacks a required joint raises
:class:`~dynamic_identification.core.errors.DataError` naming it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from builtin_interfaces.msg import Duration, Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from dynamic_identification.core.errors import DataError, brief
from dynamic_identification.core.mechanism.robot import RobotModel
from dynamic_identification.core.signal.stamps import NS_PER_S
from dynamic_identification.io.sanity import position_problem


def stamp_to_ns(stamp: Time | Duration) -> int:
    """Nanoseconds of a ``Time`` or ``Duration`` message."""
    return int(stamp.sec) * NS_PER_S + int(stamp.nanosec)


def stamp_to_seconds(stamp: Time | Duration) -> float:
    """Seconds (float) of a ``Time`` or ``Duration`` message."""
    return stamp_to_ns(stamp) / NS_PER_S


def time_message(stamp_ns: int) -> Time:
    """``builtin_interfaces/Time`` of a non-negative time in nanoseconds."""
    if stamp_ns < 0:
        raise DataError(f"stamp_ns must be >= 0, got {stamp_ns}")
    sec, nanosec = divmod(int(stamp_ns), NS_PER_S)
    return Time(sec=sec, nanosec=nanosec)


def duration_message(seconds: float) -> Duration:
    """``builtin_interfaces/Duration`` of a non-negative duration in seconds."""
    if not seconds >= 0.0:
        raise DataError(f"seconds must be >= 0, got {seconds}")
    sec, nanosec = divmod(round(seconds * NS_PER_S), NS_PER_S)
    return Duration(sec=int(sec), nanosec=int(nanosec))


def _floats(values: np.ndarray | Sequence[float] | None) -> list[float]:
    return [] if values is None else np.asarray(values, dtype=float).ravel().tolist()


def joint_state_message(
    names: Sequence[str],
    stamp_ns: int,
    position: np.ndarray | Sequence[float] | None,
    velocity: np.ndarray | Sequence[float] | None = None,
    effort: np.ndarray | Sequence[float] | None = None,
    *,
    frame_id: str = "",
) -> JointState:
    """A ``sensor_msgs/JointState``; ``None`` fields are left empty (as the message allows)."""
    message = JointState()
    message.header.stamp = time_message(stamp_ns)
    message.header.frame_id = frame_id
    message.name = list(names)
    message.position = _floats(position)
    message.velocity = _floats(velocity)
    message.effort = _floats(effort)
    for field, values in (("position", message.position), ("velocity", message.velocity), ("effort", message.effort)):
        if values and len(values) != len(message.name):
            raise DataError(f"{field} has {len(values)} values for {len(message.name)} joint names")
    return message


def _ordered(values: Sequence[float], indices: np.ndarray, field: str, n_names: int) -> np.ndarray | None:
    if len(values) == 0:
        return None
    if len(values) != n_names:
        raise DataError(f"JointState {field} has {len(values)} values for {n_names} names")
    return np.asarray(values, dtype=float)[indices]


def joint_indices(names: Sequence[str], joint_order: Sequence[str]) -> np.ndarray:
    """Indices into ``names`` of each joint of ``joint_order``; raises naming missing or repeated joints.

    Cached by the pair of name lists: a driver sends the same names in every message.
    """
    return _joint_indices(tuple(names), tuple(joint_order))


@functools.lru_cache(maxsize=64)
def _joint_indices(names: tuple[str, ...], joint_order: tuple[str, ...]) -> np.ndarray:
    position = {name: i for i, name in enumerate(names)}
    missing = [name for name in joint_order if name not in position]
    if missing:
        raise DataError(f"joints {brief(missing)} are missing from the message (it names {brief(list(names))})")
    if len(position) != len(names):
        repeated = sorted({name for name in names if names.count(name) > 1})
        raise DataError(f"the message names joints {brief(repeated)} more than once")
    indices = np.array([position[name] for name in joint_order], dtype=int)
    indices.setflags(write=False)
    return indices


def arrays_from_joint_state(
    message: JointState, joint_order: Sequence[str]
) -> tuple[float, np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """``(stamp_s, q, dq, effort)`` of a ``JointState`` in ``joint_order``.

    A field the message leaves empty is ``None`` (``/motor_currents`` carries
    ``effort`` only). Extra joints in the message are ignored.
    """
    indices = joint_indices(message.name, joint_order)
    n_names = len(message.name)
    position = _ordered(message.position, indices, "position", n_names)
    return (
        stamp_to_seconds(message.header.stamp),
        position,
        _ordered(message.velocity, indices, "velocity", n_names),
        _ordered(message.effort, indices, "effort", n_names),
    )


def float64_array(message: Float64MultiArray) -> np.ndarray:
    """The values of a ``std_msgs/Float64MultiArray`` (its layout's data offset honoured)."""
    return np.asarray(message.data, dtype=float)[int(message.layout.data_offset) :]


def float64_multi_array(values: np.ndarray | Sequence[float], *, label: str = "joints") -> Float64MultiArray:
    """A one-dimensional ``std_msgs/Float64MultiArray`` of ``values``."""
    data = _floats(values)
    message = Float64MultiArray()
    message.layout.dim = [MultiArrayDimension(label=label, size=len(data), stride=len(data))]
    message.data = data
    return message


@dataclass(frozen=True)
class TrajectoryPoints:
    """A ``JointTrajectory`` as arrays in a node's joint order.

    Attributes
    ----------
    start_ns
        ``header.stamp`` in ns; 0 means "start on receipt".
    joints
        Indices (into the node's joint order) of the joints the trajectory moves.
    times_s
        ``time_from_start`` of each point, s, shape ``(K,)``.
    positions
        ``(K, len(joints))`` in rad.
    velocities, accelerations
        Same shape, or ``None`` when the points leave them empty.
    """

    start_ns: int
    joints: np.ndarray
    times_s: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray | None
    accelerations: np.ndarray | None


def _point_field(points: Sequence[JointTrajectoryPoint], field: str, order: np.ndarray) -> np.ndarray | None:
    rows = [getattr(point, field) for point in points]
    if all(len(row) == 0 for row in rows):
        return None
    width = order.shape[0]
    for k, row in enumerate(rows):
        if len(row) != width:
            raise DataError(f"trajectory point {k} has {len(row)} {field} for {width} joints")
    values = np.asarray(rows, dtype=float)[:, order]
    bad = np.argwhere(~np.isfinite(values))
    if bad.size:
        k, j = (int(i) for i in bad[0])
        raise DataError(f"trajectory point {k} has a non-finite {field[:-1]} ({values[k, j]!r}) of joint {j}")
    return values


def require_known_joints(names: Sequence[str], known: Sequence[str] | None, what: str) -> None:
    """``DataError`` naming the joints of ``names`` not in ``known`` (``None``: nothing to check yet)."""
    if known is None:
        return
    unknown = [name for name in names if name not in known]
    if unknown:
        raise DataError(f"{what} names joints {brief(unknown)} the model does not have (it has {brief(list(known))})")


def implausible_joint_state(robot: RobotModel, q: np.ndarray, dq: np.ndarray | None = None) -> str | None:
    """Why a measured joint state (rad, rad/s, in ``robot``'s joint order) cannot be the robot's, or ``None``."""
    names = robot.joint_names
    return non_finite_field(names, position=q, velocity=dq) or position_problem(
        names, q, robot.lower_position_limits, robot.upper_position_limits
    )


def non_finite_field(names: Sequence[str], **fields: np.ndarray | None) -> str | None:
    """``"velocity of joint_2 is nan"`` for the first non-finite value of the given fields, else ``None``."""
    for field, values in fields.items():
        if values is None:
            continue
        array = np.asarray(values, dtype=float)
        bad = np.flatnonzero(~np.isfinite(array))
        if bad.size:
            return f"{field} of {names[int(bad[0])]} is {float(array[int(bad[0])])!r}"
    return None


def trajectory_points(message: JointTrajectory, joint_order: Sequence[str]) -> TrajectoryPoints:
    """Arrays of a ``trajectory_msgs/JointTrajectory`` for the joints of ``joint_order``.

    The message may move a subset of the joints (in any order) but may not name
    a joint outside ``joint_order``; times must increase strictly.
    """
    names = list(message.joint_names)
    unknown = [name for name in names if name not in joint_order]
    if unknown or not names or len(set(names)) != len(names):
        raise DataError(f"trajectory joint_names {brief(names)} must be distinct joints of {brief(list(joint_order))}")
    if not message.points:
        raise DataError("trajectory has no points")
    selected = [name for name in joint_order if name in names]
    joints = np.array([list(joint_order).index(name) for name in selected], dtype=int)
    order = joint_indices(names, selected)
    times = np.array([stamp_to_seconds(point.time_from_start) for point in message.points])
    if np.any(np.diff(times) <= 0.0) or times[0] < 0.0:
        raise DataError(f"trajectory time_from_start must be >= 0 and increase strictly, got {brief(times.tolist())}")
    positions = _point_field(message.points, "positions", order)
    if positions is None:
        raise DataError("trajectory points have no positions")
    return TrajectoryPoints(
        start_ns=stamp_to_ns(message.header.stamp),
        joints=joints,
        times_s=times,
        positions=positions,
        velocities=_point_field(message.points, "velocities", order),
        accelerations=_point_field(message.points, "accelerations", order),
    )


def joint_trajectory_message(
    names: Sequence[str],
    times_s: np.ndarray,
    positions: np.ndarray,
    velocities: np.ndarray | None = None,
    accelerations: np.ndarray | None = None,
    *,
    stamp_ns: int = 0,
) -> JointTrajectory:
    """A ``JointTrajectory`` of way points ``(K, n)``; ``stamp_ns`` 0 means "start on receipt"."""
    message = JointTrajectory()
    message.header.stamp = time_message(stamp_ns)
    message.joint_names = list(names)
    q = np.atleast_2d(np.asarray(positions, dtype=float))
    for k, t in enumerate(np.asarray(times_s, dtype=float)):
        point = JointTrajectoryPoint()
        point.positions = q[k].tolist()
        point.velocities = [] if velocities is None else _floats(np.atleast_2d(velocities)[k])
        point.accelerations = [] if accelerations is None else _floats(np.atleast_2d(accelerations)[k])
        point.time_from_start = duration_message(float(t))
        message.points.append(point)
    return message
