"""Self-collision test set-up: a UR5 motion that collides with itself between two clear poses, and the ground truth
of a contact (the self-collision tests of core and node, and ``bench/bench_self_collision.py``)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from dynamic_identification.core.excitation.collision import SelfCollisionModel
from dynamic_identification.core.excitation.trajectory import SampledTrajectory

CLEAR_A: tuple[float, ...] = (0.0, -1.71, -1.29, 2.53, 2.82, 0.0)
CLEAR_B: tuple[float, ...] = (0.0, -1.79, -0.62, 1.83, 1.94, 0.0)
"""Two poses of the UR5 of example-robot-data within its limits, 2 cm clear of any collision pair its
``ur5.srdf`` leaves, with a collision half-way along the straight line between them (found by a seeded
search), rad."""


def rest_to_rest(joint_names: tuple[str, ...], poses: list[tuple[float, ...]], interval_s: float) -> SampledTrajectory:
    """Published points at ``poses``, ``interval_s`` apart, at rest: the controller's quintic between two of them
    follows the straight line in joint space."""
    q = np.array(poses, dtype=float)
    time = interval_s * np.arange(q.shape[0])
    return SampledTrajectory(time, q, np.zeros_like(q), np.zeros_like(q), joint_names)


def touching(model: SelfCollisionModel, q: np.ndarray) -> bool:
    """Whether two objects of a pair ``model`` checks touch (no margin) at some sample of ``q`` ``(N, n)``, rad:
    Pinocchio's collision test directly, the ground truth the check's choice of instants is judged against."""
    robot = model.robot
    data, geometry_data = robot.model.createData(), pin.GeometryData(model.geometry)
    return any(
        pin.computeCollisions(robot.model, data, model.geometry, geometry_data, configuration, True)
        for configuration in robot.configurations(q)
    )
