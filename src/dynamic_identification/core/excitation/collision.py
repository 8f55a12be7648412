"""Self-collision of the executed motion, on the URDF's own ``<collision>`` geometry.

An excitation that keeps every joint limit can still drive the wrist into the upper
arm: joint ranges are set one joint at a time, and a Fourier series over the whole of
them visits every combination. When the URDF has collision geometry, the motion the
controller executes (:func:`~.safety.executed_motion`, the quintic between published
points) is checked against it with Pinocchio's collision model and its collision
library (coal; no geometry of our own):

* **Pairs.** Every pair of collision objects on different bodies of the identification
  model, except bodies joined by one joint (their meshes meet at that joint by design),
  bodies a closed-loop robot's loop closure joins (the cut joint of [Briot2012] §2, given
  as ``joined``) and the pairs an SRDF's ``<disable_collisions>`` lists (MoveIt's file of
  the robot). Locked joints are held where
  :func:`~dynamic_identification.core.mechanism.robot.load_robot` holds them, so their links belong
  to the body before them. A closed-loop robot is checked on its opened tree, every tree
  joint (actuated and passive) where the loop closure puts it
  (:func:`~.constraints.check_executed_motion`).
* **Margin.** A pair closer than ``margin_m`` at a checked instant is a collision.
* **Nothing slips between checked instants.** No point of a link moves further than
  ``Σ_j r_j |Δq_j|`` when the joints move by ``Δq`` (``r_j``: the largest distance
  from joint ``j`` to any collision geometry after it, bounded along the chain,
  :attr:`SelfCollisionModel.joint_reach_m`; 1 m/m for a prismatic joint). The checked
  instants are chosen on the executed motion (evaluated at
  :data:`~.safety.CHECK_RATE_HZ`) so that this sweep between consecutive ones stays
  below ``margin_m``: every instant lies within half of it of a checked one, two links
  approach each other by less than ``margin_m`` from there, and a motion that keeps the
  margin at the checked instants touches nothing in between. Slow stretches are
  checked rarely, fast ones densely. With ``margin_m = 0`` every instant of the
  executed motion is checked and nothing is guaranteed between them.

Environment collisions (the table, fences, cables) are not checked: the URDF does not
describe them; restrict the workspace (``workspace_lower``/``workspace_upper``,
``box_min``/``box_max``) for those.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from dynamic_identification.core.cancellation import NEVER, Cancellation
from dynamic_identification.core.errors import IdentificationError, ModelError
from dynamic_identification.core.excitation.safety import CHECK_RATE_HZ, executed_chunks
from dynamic_identification.core.excitation.trajectory import SampledTrajectory
from dynamic_identification.core.mechanism.robot import RobotModel
from dynamic_identification.core.settings_schema import DYNID_EXCITE, default

DEFAULT_MARGIN_M: float = default("collision_margin_m", DYNID_EXCITE)
"""Closest two collision objects of the robot may come, m."""


class SelfCollisionError(IdentificationError):
    """The executed motion brings two links of the robot closer than the margin.

    Attributes name the first such instant: the two collision objects, the time (s),
    their distance (m, negative when they overlap) and whether the instant lies between
    published points, in the controller's interpolation.
    """

    def __init__(
        self, *, first: str, second: str, time_s: float, distance_m: float, margin_m: float, between_points: bool
    ) -> None:
        self.first = first
        self.second = second
        self.time_s = time_s
        self.distance_m = distance_m
        self.between_points = between_points
        where = " (in the controller's quintic interpolation between published points)" if between_points else ""
        closeness = f"overlap by {-distance_m:.3g} m" if distance_m < 0.0 else f"come within {distance_m:.3g} m"
        super().__init__(
            f"self-collision at t = {time_s:.4f} s{where}: {first} and {second} {closeness} (margin {margin_m:g} m)"
        )


@dataclass(frozen=True, eq=False)
class SelfCollisionModel:
    """The robot's collision objects, the pairs checked, and how far a joint's motion can move them.

    Attributes
    ----------
    robot
        The identification model the geometry is attached to (locked joints held).
    geometry
        Pinocchio's collision model, its collision pairs those checked.
    margin_m
        Closest two objects of a pair may come, m.
    joint_reach_m
        ``r_j`` per joint: the largest distance a point of any collision object after
        joint ``j`` can have from it, m (bounded along the kinematic chain, so it holds
        in every configuration); 1 for a prismatic joint, whose points move by ``Δq``.
    """

    robot: RobotModel
    geometry: pin.GeometryModel
    margin_m: float
    joint_reach_m: np.ndarray

    @classmethod
    def from_urdf(
        cls,
        robot: RobotModel,
        *,
        margin_m: float = DEFAULT_MARGIN_M,
        srdf: str | Path | None = None,
        joined: Sequence[tuple[int, int]] = (),
    ) -> SelfCollisionModel | None:
        """The collision model of ``robot``'s URDF; ``None`` when the URDF has no ``<collision>`` element.

        Meshes named ``package://<name>/…`` are looked for in the URDF's parent folders,
        then where Pinocchio looks (``ROS_PACKAGE_PATH``, ``AMENT_PREFIX_PATH``).
        ``joined``: pairs of Pinocchio joint indices whose bodies meet by design although
        no joint of the tree joins them (a loop closure's cut joint,
        :attr:`~dynamic_identification.core.mechanism.closed_loop.ClosedLoopModel.closure_joints`).

        Raises
        ------
        ModelError
            When a mesh cannot be found or read, the SRDF cannot be read, or the margin is not finite and >= 0.
        """
        if not (np.isfinite(margin_m) and margin_m >= 0.0):
            raise ModelError(f"collision_margin_m must be finite and >= 0, got {margin_m}")
        urdf = Path(robot.urdf_path)
        if "<collision" not in urdf.read_text(encoding="utf-8", errors="replace"):
            return None
        try:
            geometry = pin.buildGeomFromUrdf(
                robot.model, str(urdf), pin.GeometryType.COLLISION, package_dirs=[str(p) for p in urdf.parents]
            )
        except (RuntimeError, ValueError) as error:
            raise ModelError(
                f"cannot load the collision geometry of {urdf.name} for the self-collision check: {error}"
                " (put its package's parent folder on ROS_PACKAGE_PATH, or set self_collision: false)"
            ) from error
        geometry.addAllCollisionPairs()
        _remove_adjacent_pairs(robot.model, geometry, joined)
        if srdf:
            if not Path(srdf).is_file():
                raise ModelError(f"collision_srdf {srdf} is not a file")
            try:
                pin.removeCollisionPairs(robot.model, geometry, str(srdf))
            except (RuntimeError, ValueError) as error:
                raise ModelError(f"cannot read the SRDF {srdf}: {error}") from error
        reach = _joint_reach(robot, geometry)
        return cls(robot=robot, geometry=geometry, margin_m=float(margin_m), joint_reach_m=reach)

    @property
    def pair_names(self) -> tuple[tuple[str, str], ...]:
        """The checked pairs, by collision object name."""
        objects = self.geometry.geometryObjects
        return tuple((objects[p.first].name, objects[p.second].name) for p in self.geometry.collisionPairs)

    def first_collision(self, q: np.ndarray) -> tuple[int, int] | None:
        """The first sample of ``q`` ``(N, n)`` (rad, m) where a pair comes closer than the margin, and that
        pair's index; ``None`` when none does."""
        model = self.robot.model
        data = model.createData()
        geometry_data = pin.GeometryData(self.geometry)
        for request in geometry_data.collisionRequests:
            request.security_margin = self.margin_m
        for k, configuration in enumerate(self.robot.configurations(q)):
            if pin.computeCollisions(model, data, self.geometry, geometry_data, configuration, True):
                pair = next(i for i, result in enumerate(geometry_data.collisionResults) if result.isCollision())
                return k, pair
        return None

    def distance_m(self, q: np.ndarray, pair: int) -> float:
        """Distance of collision pair ``pair`` at the joint positions ``q`` ``(n,)``, m (negative: overlap)."""
        model = self.robot.model
        data = model.createData()
        geometry_data = pin.GeometryData(self.geometry)
        configuration = self.robot.configurations(np.asarray(q, dtype=float)[None, :])[0]
        pin.updateGeometryPlacements(model, data, self.geometry, geometry_data, configuration)
        return float(pin.computeDistance(self.geometry, geometry_data, pair).min_distance)

    def clearance_m(
        self, q: np.ndarray, *, cutoff_m: float = np.inf, cancellation: Cancellation = NEVER
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per sample of ``q`` ``(N, n)`` (rad, m), the smallest distance between the objects of a checked pair, m
        (negative: overlap), and that pair's index: the constraint a design shrinks toward its offset pose for
        (:class:`~.constraints.LimitProbe`). ``inf`` and ``-1`` when no pair is checked.

        Exact distances between meshes cost about 0.1 ms a pair, so a pair whose bounding spheres are more than
        ``cutoff_m`` apart is not measured: its distance is the spheres' gap, a lower bound, which is all a caller
        needs of a pair that far. ``cancellation`` is polled every 100 samples.
        """
        samples = q.shape[0]
        distance, pair = np.full(samples, np.inf), np.full(samples, -1)
        pairs = self.geometry.collisionPairs
        if not pairs:
            return distance, pair
        objects = self.geometry.geometryObjects
        centres = [item.geometry.aabb_center for item in objects]
        radii = np.array([item.geometry.aabb_radius for item in objects])
        first = np.array([p.first for p in pairs])
        second = np.array([p.second for p in pairs])
        reach = radii[first] + radii[second]
        model = self.robot.model
        data = model.createData()
        geometry_data = pin.GeometryData(self.geometry)
        for k, configuration in enumerate(self.robot.configurations(q)):
            if k % 100 == 0:
                cancellation.check()
            pin.updateGeometryPlacements(model, data, self.geometry, geometry_data, configuration)
            placements = geometry_data.oMg
            world = np.array([placement.act(centre) for placement, centre in zip(placements, centres, strict=True)])
            gaps = np.linalg.norm(world[first] - world[second], axis=1) - reach
            for near in np.flatnonzero(gaps < cutoff_m):
                gaps[near] = pin.computeDistance(self.geometry, geometry_data, int(near)).min_distance
            pair[k] = int(np.argmin(gaps))
            distance[k] = gaps[pair[k]]
        return distance, pair

    def checked_instants(self, q: np.ndarray) -> np.ndarray:
        """Indices of the samples of a densely evaluated motion ``q`` ``(M, n)`` to check (see the module
        docstring): consecutive ones at most ``margin_m`` apart in the sweep ``Σ_j r_j |Δq_j|``; all of them
        when the margin is 0 or a single step already sweeps that far."""
        if q.shape[0] < 2:
            return np.arange(q.shape[0])
        sweep = np.abs(np.diff(q, axis=0)) @ self.joint_reach_m
        spacing = self.margin_m - float(sweep.max())
        if spacing <= 0.0:
            return np.arange(q.shape[0])
        travelled = np.concatenate([[0.0], np.cumsum(sweep)])
        bucket = np.floor(travelled / spacing)
        chosen = np.flatnonzero(np.diff(bucket, prepend=-1.0) != 0.0)
        return np.union1d(chosen, [q.shape[0] - 1])


def self_collision_summary(model: SelfCollisionModel | None, *, enabled: bool) -> str:
    """One line saying whether and how a plan was checked for self-collision (reports, logs): a user whose URDF
    has no collision geometry must not believe it was."""
    if not enabled:
        return "self-collision not checked (self_collision: false)"
    if model is None:
        return "self-collision not checked: the URDF has no <collision> geometry"
    return f"self-collision checked: {len(model.pair_names)} pairs of links kept {model.margin_m:g} m apart"


def _remove_adjacent_pairs(model: pin.Model, geometry: pin.GeometryModel, joined: Sequence[tuple[int, int]]) -> None:
    """Leave out the pairs of objects on bodies joined by one joint of the tree or by one of the ``joined`` pairs of
    joint indices (loop closures): their meshes meet there by design."""
    closures = {frozenset(pair) for pair in joined}
    objects = geometry.geometryObjects
    for pair in list(geometry.collisionPairs):
        a, b = objects[pair.first].parentJoint, objects[pair.second].parentJoint
        if model.parents[a] == b or model.parents[b] == a or frozenset((a, b)) in closures:
            geometry.removeCollisionPair(pair)


def _joint_reach(robot: RobotModel, geometry: pin.GeometryModel) -> np.ndarray:
    """``r_j`` of :attr:`SelfCollisionModel.joint_reach_m`: along the chain from joint ``j`` to each object,
    the lengths of the joint placements, then the object's placement and bounding sphere."""
    model = robot.model
    reach = np.zeros(robot.n_joints)
    for item in geometry.geometryObjects:
        item.geometry.computeLocalAABB()
        local = float(np.linalg.norm(item.placement.translation) + np.linalg.norm(item.geometry.aabb_center))
        distance = local + float(item.geometry.aabb_radius)
        joint = item.parentJoint
        while joint > 0:
            reach[joint - 1] = max(reach[joint - 1], distance)
            distance += float(np.linalg.norm(model.jointPlacements[joint].translation))
            joint = model.parents[joint]
    prismatic = np.array([model.joints[j + 1].shortname().startswith("JointModelP") for j in range(robot.n_joints)])
    return np.where(prismatic, 1.0, reach)


def check_self_collision(
    trajectory: SampledTrajectory, model: SelfCollisionModel, *, cancellation: Cancellation = NEVER
) -> None:
    """Refuse a trajectory whose executed motion brings two links closer than ``model.margin_m``.

    The controller's quintic through the points is evaluated at :data:`~.safety.CHECK_RATE_HZ`
    and checked at the instants :meth:`SelfCollisionModel.checked_instants` chooses;
    ``cancellation`` is polled before each piece of it.

    Raises
    ------
    SelfCollisionError
        Naming the first colliding pair and instant.
    IdentificationError
        When the trajectory's joints differ from the robot's.
    """
    if trajectory.joint_names != model.robot.joint_names:
        raise IdentificationError(
            f"trajectory joints {list(trajectory.joint_names)} differ from the robot's {list(model.robot.joint_names)}"
        )
    for motion in executed_chunks(trajectory, CHECK_RATE_HZ, cancellation):
        found = first_self_collision(model, motion.time, motion.q, motion.at_point)
        if found is not None:
            raise found[1]


def first_self_collision(
    model: SelfCollisionModel, time: np.ndarray, q: np.ndarray, at_point: np.ndarray
) -> tuple[int, SelfCollisionError] | None:
    """The first sample of a densely evaluated executed motion (``time`` s, ``q`` ``(M, n)`` rad or m of the
    model's joints, ``at_point`` whether a sample is a published point) where two links come closer than the
    margin, checked at :meth:`SelfCollisionModel.checked_instants`, and the error naming it; ``None`` when none
    does."""
    instants = model.checked_instants(q)
    found = model.first_collision(q[instants])
    if found is None:
        return None
    sample, pair = int(instants[found[0]]), found[1]
    first, second = model.pair_names[pair]
    return sample, SelfCollisionError(
        first=first,
        second=second,
        time_s=float(time[sample]),
        distance_m=model.distance_m(q[sample], pair),
        margin_m=model.margin_m,
        between_points=not bool(at_point[sample]),
    )
