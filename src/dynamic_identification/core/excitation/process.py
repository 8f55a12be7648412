"""Process trajectories: stand-ins for the robot's real job ([Volkmann2020] §III.B).

[Volkmann2020] identifies the robot while it works, on two industrial tasks:

* **process 1**, pick and place between two areas, with pick and place points drawn
  uniformly at random (validated on a new random set);
* **process 2**, the end effector tracing the edges of a horizontal square (validated
  with the square shifted in the x-y plane).

Cartesian targets become joint targets by damped least-squares inverse kinematics
(:func:`inverse_kinematics`, Pinocchio frame Jacobians); joint-space C² motions
join them and are time-scaled to keep the joint limits (:func:`.safety.check_trajectory`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.safety import JointLimits, LimitViolationError, check_trajectory, ramp
from dynamic_identification.core.excitation.trajectory import SampledTrajectory, concatenate
from dynamic_identification.core.mechanism.robot import RobotModel

if TYPE_CHECKING:
    from scipy.interpolate import CubicSpline

Area = tuple[np.ndarray, np.ndarray]
"""A box in the base frame: ``(centre xyz, half-extents xyz)``, m."""


def default_frame(robot: RobotModel) -> str:
    """The end-effector frame used when none is named: the model's last frame (``tool0`` on the shipped arm)."""
    return str(robot.model.frames[robot.model.nframes - 1].name)


def frame_placement(robot: RobotModel, frame: str, q: np.ndarray) -> pin.SE3:
    """Placement of ``frame`` in the base frame at joint positions ``q`` (rad)."""
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, robot.configurations(np.asarray(q, dtype=float))[0])
    return data.oMf[_frame_id(robot, frame)].copy()


def frame_positions(robot: RobotModel, frame: str, q: np.ndarray) -> np.ndarray:
    """Positions (m) of ``frame`` in the base frame for joint positions ``q`` of shape ``(N, n)``; ``(N, 3)``."""
    model = robot.model
    data = model.createData()
    frame_id = _frame_id(robot, frame)
    configurations = robot.configurations(np.atleast_2d(np.asarray(q, dtype=float)))
    positions = np.empty((configurations.shape[0], 3))
    for i, configuration in enumerate(configurations):
        pin.framesForwardKinematics(model, data, configuration)
        positions[i] = data.oMf[frame_id].translation
    return positions


def _frame_id(robot: RobotModel, frame: str) -> int:
    if not robot.model.existFrame(frame):
        names = [f.name for f in robot.model.frames]
        raise IdentificationError(f"frame {frame!r} is not in the robot model; its frames are {names}")
    return int(robot.model.getFrameId(frame))


def inverse_kinematics(
    robot: RobotModel,
    frame: str,
    target_xyz: np.ndarray,
    q_seed: np.ndarray,
    *,
    limits: JointLimits | None = None,
    orientation: np.ndarray | None = None,
    tolerance: float = 1e-7,
    damping: float = 1e-3,
    max_iterations: int = 500,
    max_step_rad: float = 0.2,
) -> np.ndarray:
    """Joint positions that put ``frame`` at ``target_xyz`` (closed-loop damped least squares).

    Iterates ``q ← clip(q + Jᵀ (J Jᵀ + λ² I)⁻¹ e)`` from ``q_seed``: with ``orientation``
    the error ``e`` is the frame twist ``log6(oMf⁻¹ oMd)`` and ``J`` its Jacobian
    (``Jlog6`` times the local frame Jacobian); without, ``e`` is the position error and
    ``J`` the translational rows of the world-aligned frame Jacobian. Each iterate is
    clipped into the position limits (``limits``, else the URDF's), so the result keeps them.

    Parameters
    ----------
    frame
        Name of a frame of the model.
    target_xyz
        Target position in the base frame, m.
    q_seed
        Start of the iteration, rad, shape ``(n,)``; nearby solutions are found first.
    orientation
        Target rotation matrix ``(3, 3)`` of the frame in the base frame; ``None``
        solves for the position only (redundant joints follow the least-norm steps).
    tolerance
        Convergence threshold on the error norm (m, and rad with orientation).
    damping
        ``λ``, keeps steps bounded near singularities.
    max_iterations, max_step_rad
        Iteration budget; largest change of any joint per iteration, rad.

    Raises
    ------
    IdentificationError
        When the iteration does not converge (target out of reach or blocked by the
        limits), naming the target and the residual.
    """
    model = robot.model
    data = model.createData()
    frame_id = _frame_id(robot, frame)
    target = np.asarray(target_xyz, dtype=float)
    if target.shape != (3,) or not np.all(np.isfinite(target)):
        raise IdentificationError(f"target_xyz must be 3 finite numbers, got {np.asarray(target_xyz).tolist()}")
    q = np.array(q_seed, dtype=float)
    if q.shape != (robot.n_joints,):
        raise IdentificationError(f"q_seed must have {robot.n_joints} entries, got shape {q.shape}")
    lower = limits.lower if limits is not None else robot.lower_position_limits
    upper = limits.upper if limits is not None else robot.upper_position_limits
    q = np.clip(q, lower, upper)
    desired = None
    if orientation is not None:
        rotation = np.asarray(orientation, dtype=float)
        if rotation.shape != (3, 3) or not np.allclose(rotation @ rotation.T, np.eye(3), atol=1e-6):
            raise IdentificationError(f"orientation must be a 3×3 rotation matrix, got {rotation.tolist()}")
        desired = pin.SE3(rotation, target)
    residual = np.inf
    for _ in range(max_iterations):
        configuration = robot.configurations(q)[0]
        pin.framesForwardKinematics(model, data, configuration)
        placement = data.oMf[frame_id]
        if desired is None:
            error = placement.translation - target
            jacobian = pin.computeFrameJacobian(model, data, configuration, frame_id, pin.LOCAL_WORLD_ALIGNED)[:3]
        else:
            offset = placement.actInv(desired)
            error = pin.log6(offset).vector
            local = pin.computeFrameJacobian(model, data, configuration, frame_id, pin.LOCAL)
            jacobian = -pin.Jlog6(offset.inverse()) @ local
        residual = float(np.linalg.norm(error))
        if residual < tolerance:
            return q
        step = -jacobian.T @ np.linalg.solve(jacobian @ jacobian.T + damping**2 * np.eye(jacobian.shape[0]), error)
        largest = float(np.max(np.abs(step)))
        if largest > max_step_rad:  # far from the target the linearisation is poor: keep steps short
            step *= max_step_rad / largest
        q = np.clip(q + step, lower, upper)
    raise IdentificationError(
        f"inverse kinematics of {frame} did not converge to target_xyz={target.tolist()} m"
        f" (residual {residual:.3g} after {max_iterations} iterations)"
    )


def pick_and_place_targets(*, area_a: Area, area_b: Area, cycles: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random pick points in ``area_a`` and place points in ``area_b`` (uniform, seeded; [Volkmann2020] §III.B).

    Returns
    -------
    picks, places
        Each ``(cycles, 3)``, m, in the base frame.
    """
    if cycles < 1:
        raise IdentificationError(f"cycles must be >= 1, got {cycles}")
    rng = np.random.default_rng(seed)
    points = []
    for name, (centre, half) in (("area_a", area_a), ("area_b", area_b)):
        centre_xyz, half_xyz = np.asarray(centre, dtype=float), np.asarray(half, dtype=float)
        if centre_xyz.shape != (3,) or half_xyz.shape != (3,) or np.any(half_xyz < 0.0):
            raise IdentificationError(
                f"{name} must be (centre xyz, non-negative half-extents xyz),"
                f" got {centre_xyz.tolist()}, {half_xyz.tolist()}"
            )
        points.append(centre_xyz + rng.uniform(-1.0, 1.0, size=(cycles, 3)) * half_xyz)
    return points[0], points[1]


def tool_tilts(*, cycles: int, tilt_rad: float, seed: int) -> np.ndarray:
    """Tilts of the tool at each pick and place point: rotations about random horizontal axes, seeded.

    Parts do not all lie square in their bins: at each point the tool turns by an angle drawn
    uniformly in ``[0, tilt_rad]`` about a horizontal axis of uniformly drawn direction (the base
    frame's, through the tool point). Drawn from their own stream of ``seed``, so the points of
    :func:`pick_and_place_targets` stay those of an untilted process.

    Returns
    -------
    np.ndarray
        ``(cycles, 2, 3, 3)``: the rotation at the pick and at the place point of each cycle.
    """
    if not 0.0 <= tilt_rad < 0.5 * np.pi:
        raise IdentificationError(f"tool_tilt_rad must be in [0, pi/2), got {tilt_rad}")
    rng = np.random.default_rng([seed, 1])
    azimuth = rng.uniform(0.0, 2.0 * np.pi, size=(cycles, 2))
    angle = rng.uniform(0.0, tilt_rad, size=(cycles, 2))
    axes = np.stack([np.cos(azimuth), np.sin(azimuth), np.zeros_like(azimuth)], axis=-1)
    rotations = np.empty((cycles, 2, 3, 3))
    for index in np.ndindex(cycles, 2):
        rotations[index] = pin.exp3(angle[index] * axes[index])
    return rotations


def pick_and_place(
    robot: RobotModel,
    limits: JointLimits,
    *,
    area_a: Area,
    area_b: Area,
    cycles: int,
    seed: int,
    rate_hz: float,
    frame: str | None = None,
    lift_m: float = 0.1,
    q_seed: np.ndarray | None = None,
    dwell_s: float = 0.2,
    orientation: np.ndarray | None = None,
    tool_tilt_rad: float = 0.0,
) -> SampledTrajectory:
    """Pick-and-place cycles between two areas ([Volkmann2020] §III.B, process 1).

    Each cycle moves above the pick point (``lift_m`` higher), down to it, dwells
    ``dwell_s``, goes up, moves above the place point, down, dwells, up; after the
    last cycle the robot returns above the first pick point, so the trajectory can be
    repeated ([Volkmann2020] averages 50 repetitions). Points come from
    :func:`pick_and_place_targets`; with ``orientation`` and ``tool_tilt_rad``, the tool
    is tilted at each point (and above it) by :func:`tool_tilts`, so that the wrist turns
    too: with the tool held vertical a 6-axis arm's forearm roll never moves. Every waypoint is solved by
    :func:`inverse_kinematics` seeded with the previous solution; consecutive joint
    waypoints are joined by the shortest rest-to-rest quintics within ``limits``
    (:func:`.safety.ramp`), so the motion is C², "highly dynamic" as in the paper,
    and starts and ends at rest. Between waypoints the end effector follows a joint-space
    (not a Cartesian straight) path.

    Parameters
    ----------
    area_a, area_b
        Pick and place areas, ``(centre xyz, half-extents xyz)`` in m, base frame.
    frame
        End-effector frame; default :func:`default_frame`.
    q_seed
        Start of the first inverse kinematics; default the centre of the limits.
    orientation
        Constant tool orientation (rotation matrix); ``None``: position-only inverse
        kinematics (see :func:`default_process_areas` for a tool-down orientation).
    tool_tilt_rad
        Largest tilt of the tool from ``orientation`` at a pick or place point, rad, in
        ``[0, π/2)``; 0: the same orientation everywhere. Ignored without ``orientation``.

    Raises
    ------
    IdentificationError
        When a waypoint is out of reach; :class:`~.safety.LimitViolationError` when a
        move cannot keep the limits.
    """
    _check_setup(robot, limits, rate_hz)
    if dwell_s < 0.0:
        raise IdentificationError(f"dwell_s must be >= 0, got {dwell_s}")
    if not lift_m > 0.0:
        raise IdentificationError(f"lift_m must be > 0, got {lift_m}")
    tool = frame or default_frame(robot)
    picks, places = pick_and_place_targets(area_a=area_a, area_b=area_b, cycles=cycles, seed=seed)
    tilts = tool_tilts(cycles=cycles, tilt_rad=tool_tilt_rad, seed=seed)
    up = np.array([0.0, 0.0, lift_m])
    targets: list[tuple[np.ndarray, bool, np.ndarray | None]] = []
    for pick, place, (pick_tilt, place_tilt) in zip(picks, places, tilts, strict=True):
        at_pick = None if orientation is None else pick_tilt @ orientation
        at_place = None if orientation is None else place_tilt @ orientation
        targets += [(pick + up, False, at_pick), (pick, True, at_pick), (pick + up, False, at_pick)]
        targets += [(place + up, False, at_place), (place, True, at_place), (place + up, False, at_place)]
    targets.append(targets[0])  # back above the first pick point, as it was: the process repeats
    q = limits.centre if q_seed is None else np.asarray(q_seed, dtype=float)
    waypoints = []
    for xyz, dwell, tool_orientation in targets:
        q = inverse_kinematics(robot, tool, xyz, q, limits=limits, orientation=tool_orientation)
        waypoints.append((q, dwell))
    zero = np.zeros(robot.n_joints)
    dwell_samples = int(round(dwell_s * rate_hz))
    parts = []
    for (start, _), (end, dwell) in zip(waypoints[:-1], waypoints[1:], strict=True):
        move = ramp((start, zero, zero), (end, zero, zero), limits, rate_hz=rate_hz)
        parts.append(_at_rest_end(move, end))
        if dwell and dwell_samples > 0:
            time = np.arange(1, dwell_samples + 1) / rate_hz
            still = np.zeros((dwell_samples, robot.n_joints))
            parts.append(
                SampledTrajectory(
                    time,
                    np.tile(end, (dwell_samples, 1)),
                    still,
                    still.copy(),
                    limits.joint_names,
                )
            )
    trajectory = concatenate(parts)
    check_trajectory(trajectory, limits)
    return trajectory


def _at_rest_end(move: SampledTrajectory, end: np.ndarray) -> SampledTrajectory:
    """The move with its last sample set exactly to rest at ``end`` (not to round-off)."""
    q, dq, ddq = move.q.copy(), move.dq.copy(), move.ddq.copy()
    q[-1], dq[-1], ddq[-1] = end, 0.0, 0.0
    return SampledTrajectory(move.time, q, dq, ddq, move.joint_names)


def square_corners(*, centre: np.ndarray, side_m: float, offset_xy: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
    """Corners (m), ``(4, 3)``, counter-clockwise, of the horizontal square about ``centre + offset_xy``."""
    centre_xyz = np.asarray(centre, dtype=float)
    if centre_xyz.shape != (3,) or not np.all(np.isfinite(centre_xyz)):
        raise IdentificationError(f"centre must be 3 finite numbers, got {np.asarray(centre).tolist()}")
    if not side_m > 0.0:
        raise IdentificationError(f"side_m must be > 0, got {side_m}")
    shifted = centre_xyz + np.array([offset_xy[0], offset_xy[1], 0.0])
    half = 0.5 * side_m
    return shifted + np.array([[-half, -half, 0.0], [half, -half, 0.0], [half, half, 0.0], [-half, half, 0.0]])


def square(
    robot: RobotModel,
    limits: JointLimits,
    *,
    centre: np.ndarray,
    side_m: float,
    laps: int,
    rate_hz: float,
    frame: str | None = None,
    offset_xy: tuple[float, float] = (0.0, 0.0),
    points_per_edge: int = 20,
    q_seed: np.ndarray | None = None,
    orientation: np.ndarray | None = None,
) -> SampledTrajectory:
    """The end effector traces a horizontal square ``laps`` times ([Volkmann2020] §III.B, process 2).

    Inverse kinematics at ``points_per_edge`` equally spaced points per edge (corners
    included) gives joint waypoints; a periodic cubic spline through them (C² in the
    path parameter, also across laps) is followed with a C² time law that starts and
    ends at rest (smooth speed-up over a quarter lap, cruise, slow-down) and is then
    uniformly time-scaled to the fastest motion that keeps ``limits``. The end effector
    passes exactly through every waypoint (corners included); between waypoints and
    near the corners it deviates slightly, the joint-space rounding that [Volkmann2020]
    Fig. 4 shows as overshoot. ``offset_xy`` (m) shifts the square, as [Volkmann2020] does
    for validation.

    Raises
    ------
    IdentificationError
        When a point is out of reach; :class:`~.safety.LimitViolationError` when the
        path itself leaves the position limits.
    """
    _check_setup(robot, limits, rate_hz)
    if laps < 1 or points_per_edge < 2:
        raise IdentificationError(f"need laps >= 1 and points_per_edge >= 2, got {laps}, {points_per_edge}")
    tool = frame or default_frame(robot)
    corners = square_corners(centre=centre, side_m=side_m, offset_xy=offset_xy)
    fractions = np.arange(points_per_edge) / points_per_edge
    points = np.concatenate([corners[i] + fractions[:, None] * (corners[(i + 1) % 4] - corners[i]) for i in range(4)])
    q = limits.centre if q_seed is None else np.asarray(q_seed, dtype=float)
    joints = []
    for xyz in points:
        q = inverse_kinematics(robot, tool, xyz, q, limits=limits, orientation=orientation)
        joints.append(q)
    joints.append(joints[0])
    # Imported here: the nodes that never plan a process do not load scipy.interpolate (issue 26).
    from scipy.interpolate import CubicSpline

    path = CubicSpline(np.linspace(0.0, 1.0, len(joints)), np.array(joints), bc_type="periodic")
    normalised = _SmoothTimeLaw(laps=laps)
    # ``τ`` is normalised time; real time is ``λ τ`` with the smallest λ that keeps the limits
    dense = np.linspace(0.0, normalised.duration, 50 * len(points) * laps + 1)
    _, dq, ddq = _evaluate(path, normalised, dense)
    scale = max(
        float(np.max(np.abs(dq) / limits.velocity)),
        float(np.sqrt(np.max(np.abs(ddq) / limits.acceleration))),
        1e-9,
    )
    while True:
        steps = int(np.ceil(scale * normalised.duration * rate_hz))
        time = np.arange(steps + 1) / rate_hz
        stretch = steps / rate_hz / normalised.duration
        q_s, dq_s, ddq_s = _evaluate(path, normalised, time / stretch)
        trajectory = SampledTrajectory(time, q_s, dq_s / stretch, ddq_s / stretch**2, limits.joint_names)
        try:
            check_trajectory(trajectory, limits)
            return trajectory
        except LimitViolationError as error:
            if error.quantity == "position":
                raise
        scale *= 1.02


class _SmoothTimeLaw:
    """Path parameter ``u(τ)`` in laps: ``u̇`` rises as ``3x² − 2x³`` over ``τ_a = 0.5``, cruises at 1, falls back.

    ``u``, ``u̇`` and ``ü`` are continuous, ``u̇ = ü = 0`` at both ends; ``u`` goes
    from 0 to ``laps`` in ``laps + τ_a``.
    """

    ramp = 0.5

    def __init__(self, *, laps: int) -> None:
        self.laps = float(laps)
        self.duration = self.laps + self.ramp

    def _rise(self, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x = np.clip(tau / self.ramp, 0.0, 1.0)
        return self.ramp * (x**3 - 0.5 * x**4), 3.0 * x**2 - 2.0 * x**3, (6.0 * x - 6.0 * x**2) / self.ramp

    def __call__(self, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        tau = np.clip(np.asarray(tau, dtype=float), 0.0, self.duration)
        u_up, v_up, a_up = self._rise(tau)
        u_down, v_down, a_down = self._rise(self.duration - tau)
        rising = tau < self.ramp
        falling = tau > self.duration - self.ramp
        u = np.where(rising, u_up, np.where(falling, self.laps - u_down, tau - 0.5 * self.ramp))
        v = np.where(rising, v_up, np.where(falling, v_down, 1.0))
        a = np.where(rising, a_up, np.where(falling, -a_down, 0.0))
        return u, v, a


def _evaluate(path: CubicSpline, law: _SmoothTimeLaw, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``q(u(τ))`` and its τ-derivatives by the chain rule: ``q' u̇`` and ``q'' u̇² + q' ü``."""
    u, v, a = law(tau)
    phase = np.mod(u, 1.0)
    first, second = path(phase, 1), path(phase, 2)
    return path(phase), first * v[:, None], second * (v**2)[:, None] + first * a[:, None]


def _check_setup(robot: RobotModel, limits: JointLimits, rate_hz: float) -> None:
    if robot.joint_names != limits.joint_names:
        raise IdentificationError(
            f"limits joints {list(limits.joint_names)} differ from the robot's {list(robot.joint_names)}"
        )
    if not (np.isfinite(rate_hz) and rate_hz > 0.0):
        raise IdentificationError(f"rate_hz must be > 0, got {rate_hz}")


def default_process_areas(
    robot: RobotModel, frame: str | None = None, *, limits: JointLimits | None = None
) -> dict[str, Any]:
    """Areas, square and tool orientation that suit ``robot``, from its reach, so the processes run unconfigured.

    With ``p`` the frame's position at the centre of the joint ranges, at horizontal
    distance ``r`` from the base axis: the pick and place areas lie at ``±30°`` about
    the base z axis at radius ``s r``, ``lift = 0.2 r`` below the height of ``p``, each
    ``0.15 r`` half-wide (flat); the square is centred between them at that height,
    with side ``0.3 r``. The reach factor ``s`` goes down from 1 until inverse
    kinematics reaches every area corner, every point above them and every square
    corner with the tool pointing down (the frame's z axis along ``−z``); if no
    factor works, the orientation is dropped (``None``: position-only inverse
    kinematics).

    Parameters
    ----------
    limits
        Limits the inverse kinematics keeps; default :meth:`JointLimits.from_robot`.

    Returns
    -------
    dict
        ``frame``, ``q_seed`` (rad), ``orientation`` (3×3 or ``None``), ``area_a``,
        ``area_b`` (centre, half-extents; m), ``lift_m``, ``centre`` and ``side_m``
        (square; m).

    Raises
    ------
    IdentificationError
        When not even the position-only targets are reachable.
    """
    tool = frame or default_frame(robot)
    limits = limits if limits is not None else JointLimits.from_robot(robot)
    q_centre = limits.centre
    placement = frame_placement(robot, tool, q_centre)
    p = placement.translation.copy()
    radius = max(float(np.hypot(p[0], p[1])), 0.05)
    heading = float(np.arctan2(p[1], p[0]))
    lift = 0.2 * radius
    half = np.array([0.15 * radius, 0.15 * radius, 0.0])
    down = _pointing_down(placement.rotation)
    for orientation in (down, None):
        for reach in (1.0, 0.9, 0.8, 0.7, 0.6, 0.5):
            layout = _process_layout(p, heading, reach * radius, lift, half, 0.3 * radius)
            try:
                q_ref = inverse_kinematics(
                    robot, tool, layout["centre"], q_centre, limits=limits, orientation=orientation
                )
                for point in _layout_points(layout):
                    inverse_kinematics(robot, tool, point, q_ref, limits=limits, orientation=orientation)
            except IdentificationError:
                continue
            return {"frame": tool, "q_seed": q_ref, "orientation": orientation, **layout}
    raise IdentificationError(f"no default process layout is reachable by {tool} of {robot.urdf_path}")


def _process_layout(
    p: np.ndarray, heading: float, radius: float, lift: float, half: np.ndarray, side: float
) -> dict[str, Any]:
    height = p[2] - lift

    def area(angle: float) -> Area:
        direction = np.array([np.cos(heading + angle), np.sin(heading + angle), 0.0])
        return np.array([0.0, 0.0, height]) + radius * direction, half.copy()

    centre = np.array([radius * np.cos(heading), radius * np.sin(heading), height])
    return {
        "area_a": area(np.pi / 6.0),
        "area_b": area(-np.pi / 6.0),
        "lift_m": lift,
        "centre": centre,
        "side_m": side,
    }


def _layout_points(layout: dict[str, Any]) -> list[np.ndarray]:
    """Extreme targets of a layout: area corners, the points above them and the square's corners."""
    signs = np.array([[-1.0, -1.0, 0.0], [1.0, -1.0, 0.0], [1.0, 1.0, 0.0], [-1.0, 1.0, 0.0]])
    up = np.array([0.0, 0.0, layout["lift_m"]])
    points = []
    for centre, half in (layout["area_a"], layout["area_b"]):
        for corner in centre + signs * half:
            points += [corner, corner + up]
    return points + list(square_corners(centre=layout["centre"], side_m=layout["side_m"]))


def _pointing_down(rotation: np.ndarray) -> np.ndarray:
    """``rotation`` turned by the smallest rotation that makes its z axis point along ``−z`` of the base."""
    axis = rotation[:, 2]
    turn = np.cross(axis, [0.0, 0.0, -1.0])
    angle = float(np.arctan2(np.linalg.norm(turn), -axis[2]))
    if np.linalg.norm(turn) < 1e-12:
        turn = np.array([1.0, 0.0, 0.0]) if angle > 1.0 else np.zeros(3)
    else:
        turn = turn / np.linalg.norm(turn)
    return pin.exp3(angle * turn) @ rotation
