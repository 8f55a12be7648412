"""The desired motion along commanded trajectories, as ``joint_trajectory_controller`` follows them.

One follower for every node that must know what the robot is being told to do: the
``feedforward`` node evaluates the identified model along it, ``sim_robot`` tracks it with
its PD loop, the demo's probe records it. A :class:`DesiredMotion` holds a position for each
joint and, once a trajectory arrived, interpolates its points at any stamp
(:func:`~dynamic_identification.core.excitation.trajectory.controller_motion`, from
``header.stamp``; 0 means "on receipt"), as the controller does; after the last point it
holds that point at rest. :func:`next_motion` (or :func:`follow`, for points already
converted and checked) takes the next ``JointTrajectory``: joints it leaves out hold their
desired position, and when its first point lies after ``time_from_start`` 0 the trajectory
starts from the desired state of the motion it replaces. Stamps are integer nanoseconds of
the ROS clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from trajectory_msgs.msg import JointTrajectory

from dynamic_identification.core.excitation.trajectory import WayPoints
from dynamic_identification.nodes.conversions import NS_PER_S, TrajectoryPoints, trajectory_points


@dataclass(frozen=True)
class DesiredMotion:
    """The motion being commanded: held positions and the latest trajectory, by joint name.

    ``times_s`` (s from ``start_ns``), ``positions`` (rad), ``velocities`` (rad/s) and
    ``accelerations`` (rad/s²) are the trajectory's points for the joints ``moving``
    (indices into ``joints``); the other joints hold ``held`` (rad) at rest. Without a
    trajectory every joint holds.
    """

    joints: tuple[str, ...]
    held: np.ndarray
    start_ns: int = 0
    moving: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    times_s: np.ndarray | None = None
    positions: np.ndarray | None = None
    velocities: np.ndarray | None = None
    accelerations: np.ndarray | None = None

    @classmethod
    def holding(cls, joints: Sequence[str], positions: np.ndarray) -> DesiredMotion:
        """Every joint of ``joints`` at rest at ``positions`` (rad), no trajectory."""
        return cls(joints=tuple(joints), held=np.array(positions, dtype=float))

    def at(self, stamp_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Desired ``q, q̇, q̈`` of every joint of :attr:`joints` at ``stamp_ns``."""
        q = self.held.copy()
        dq = np.zeros_like(q)
        ddq = np.zeros_like(q)
        if self.way_points is not None:
            t = (stamp_ns - self.start_ns) / NS_PER_S
            q[self.moving], dq[self.moving], ddq[self.moving], _ = self.way_points.motion(t)
        return q, dq, ddq

    @cached_property
    def way_points(self) -> WayPoints | None:
        """The trajectory's points, checked once for the evaluations of every control period (``None`` without)."""
        if self.times_s is None or self.positions is None:
            return None
        return WayPoints.create(self.times_s, self.positions, self.velocities, self.accelerations)

    @property
    def end_ns(self) -> int:
        """Stamp of the trajectory's last point, ns (:attr:`start_ns` without one)."""
        return self.start_ns + (0 if self.times_s is None else round(float(self.times_s[-1]) * NS_PER_S))

    def ended(self, stamp_ns: int) -> bool:
        """Whether ``stamp_ns`` lies at or after the trajectory's last point (true without one)."""
        return self.times_s is None or (stamp_ns - self.start_ns) / NS_PER_S >= float(self.times_s[-1])

    def ends_moving_before(self, stamp_ns: int) -> bool:
        """Whether the trajectory's last point, in motion, lies before ``stamp_ns``: a chunk of a stream whose
        next chunk is due."""
        if self.times_s is None or self.velocities is None:
            return False
        last = (stamp_ns - self.start_ns) / NS_PER_S > float(self.times_s[-1])
        moving = bool(np.any(self.velocities[-1] != 0.0)) or (
            self.accelerations is not None and bool(np.any(self.accelerations[-1] != 0.0))
        )
        return last and moving


def next_motion(previous: DesiredMotion | None, message: JointTrajectory, now_ns: int) -> DesiredMotion:
    """The motion after receiving ``message`` at ``now_ns`` (node clock); a joint new to ``previous`` is added.

    Raises
    ------
    DataError
        If the message is malformed (names, times, sizes).
    """
    known = previous.joints if previous is not None else ()
    joints = known + tuple(name for name in message.joint_names if name not in known)
    return follow(previous, trajectory_points(message, joints), now_ns, joints=joints)


def follow(
    previous: DesiredMotion | None, points: TrajectoryPoints, now_ns: int, *, joints: Sequence[str] | None = None
) -> DesiredMotion:
    """The motion after the trajectory ``points`` (indexed in ``joints``, default ``previous``'s) at ``now_ns``.

    Joints the points leave out hold their desired position of ``previous`` (new
    joints, at the end of ``joints``, hold 0 until a trajectory moves them). When the
    first point lies after ``time_from_start`` 0, the trajectory starts from the desired
    state of ``previous`` at the start time, as ``joint_trajectory_controller`` does.
    """
    names = tuple(joints) if joints is not None else previous.joints if previous is not None else ()
    start_ns = points.start_ns if points.start_ns > 0 else now_ns
    q0 = dq0 = ddq0 = np.zeros(len(names))
    known = 0 if previous is None else len(previous.joints)
    if previous is not None:
        q0, dq0, ddq0 = (np.concatenate([x, np.zeros(len(names) - known)]) for x in previous.at(start_ns))
    held = q0.copy()
    held[points.joints] = points.positions[-1]
    times, positions = points.times_s, points.positions
    velocities, accelerations = points.velocities, points.accelerations
    if times[0] > 0.0 and previous is not None and np.all(points.joints < known):
        index = points.joints
        times = np.concatenate([[0.0], times])
        positions = np.vstack([q0[index], positions])
        velocities = None if velocities is None else np.vstack([dq0[index], velocities])
        accelerations = None if accelerations is None else np.vstack([ddq0[index], accelerations])
    return DesiredMotion(
        joints=names,
        held=held,
        start_ns=start_ns,
        moving=points.joints,
        times_s=times,
        positions=positions,
        velocities=velocities,
        accelerations=accelerations,
    )


__all__ = ["DesiredMotion", "follow", "next_motion"]
