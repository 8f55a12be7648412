"""``sim_robot``: the simulated robot as a ROS node.

Subscribes ``joint_trajectory`` (``trajectory_msgs/JointTrajectory``) and
``feedforward/effort`` (``std_msgs/Float64MultiArray``, N·m in the node's joint
order); publishes ``joint_states`` (quantised position, velocity, effort = joint
torque measured through the drive chain, N·m) and ``motor_currents``
(``sensor_msgs/JointState`` with the same stamp, ``effort`` = current in A), relative
names that a namespace moves, and ``/diagnostics`` at 1 Hz (steps, refused inputs:
non-finite or out-of-limit trajectory points, efforts beyond the URDF limits).

The physics is :class:`dynamic_identification.core.simulation.RobotSimulator`;
this node only reads parameters, converts messages, publishes ``/diagnostics`` at 1 Hz
(steps, refused inputs: non-finite or out-of-limit trajectory points, efforts beyond
the URDF limits) and keeps simulated time in one of two ways:

* ``publish_clock: false`` (default) — on the node clock (wall clock, or ``/clock``
  from elsewhere with ``use_sim_time``): each timer tick steps as many ``1 / rate_hz``
  steps as the clock advanced, so simulated time does not drift; when the process
  falls more than ``max_catch_up_s`` behind, the backlog is dropped with a warning
  instead of being replayed;
* ``publish_clock: true`` — the simulator *is* the clock, like Gazebo: it publishes
  ``/clock`` (``rosgraph_msgs/Clock``) after every step and stamps everything with it,
  advancing at most ``real_time_factor`` simulated seconds per wall second. A loaded
  machine slows simulated time down instead of dropping steps, so every node started
  with ``use_sim_time: true`` sees the same motion whatever the CPU load (the demo and
  the system tests run this way). With ``lockstep`` it also waits for its commands:
  it never steps past the end of a trajectory that ends in motion (a streamed chunk)
  until the next one arrives, at most ``lockstep_timeout_s`` of wall time, so a
  commanding node starved of CPU cannot leave the robot without a reference.

A closed-loop robot (``robot.loop_closures.<name>.*`` and ``robot.actuated_joints``,
[Briot2012] §2) is simulated by
:class:`~dynamic_identification.core.closed_loop_simulation.ClosedLoopSimulator`
(constrained dynamics of the opened tree, drives on the actuated joints): the node's
joints are then the actuated ones, which it commands, measures and publishes; the per-joint
parameters hold one value per actuated joint (or per URDF joint).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.publisher import Publisher
from rosgraph_msgs.msg import Clock as ClockMessage
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from dynamic_identification.core.closed_loop_simulation import ClosedLoopSimulationSettings, ClosedLoopSimulator
from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.trajectory import interpolate_trajectory
from dynamic_identification.core.model import DriveChain, DriveParameters, RobotModel, load_robot
from dynamic_identification.core.simulation import (
    RobotSimulator,
    SensorModel,
    SimulationSettings,
)
from dynamic_identification.io.config import config_from_parameters
from dynamic_identification.io.sanity import position_problem
from dynamic_identification.nodes.conversions import (
    NS_PER_S,
    float64_array,
    joint_state_message,
    time_message,
    trajectory_points,
)
from dynamic_identification.nodes.guarded import GuardedNode
from dynamic_identification.nodes.parameters import CLOSED_LOOP_PARAMETERS, ParameterSpec, declare_closed_loop
from dynamic_identification.nodes.parameters import declare_and_read as declare_parameters
from dynamic_identification.nodes.qos import CLOCK_QOS, COMMAND_QOS, SENSOR_QOS
from dynamic_identification.nodes.runner import run_node
from dynamic_identification.resources import shipped_path

DEFAULT_URDF_NAME = "dynid_arm6.urdf"

# Drive chain of the shipped dynid_arm6 (joint side, per joint 1..6). Friction is the
# URDF's <dynamics> (rounded from [Gautier2013] Table II); rotor inertia Ia3..Ia6 are of the
# order of [Gautier2013] Table II, Ia1, Ia2 (not given there) plausible for this class.
DEFAULT_GEAR_RATIOS = (100.0, 100.0, 80.0, 60.0, 60.0, 50.0)
DEFAULT_DRIVE_GAINS = (0.45, 0.45, 0.4, 0.35, 0.3, 0.3)
DEFAULT_ROTOR_INERTIA = (0.5, 0.4, 0.2, 0.1, 0.08, 0.05)
DEFAULT_VISCOUS = (6.9, 4.5, 1.6, 0.85, 1.6, 0.5)
DEFAULT_COULOMB = (6.7, 7.9, 6.3, 2.6, 2.7, 1.8)
DEFAULT_OFFSET = (0.3, -0.5, 0.2, 0.1, -0.1, 0.05)

DIAGNOSTICS_PERIOD_S = 1.0

FEEDFORWARD_TIMEOUT_S = 0.1
"""A feedforward older than this (node clock) is ignored."""


@dataclass(frozen=True)
class SimRobotConfig:
    """The node's parameters, read once at start (units as in the ROS parameter descriptions).

    Empty tuples mean "automatic": all joints, identity coupling, gains from the
    mass matrix (see :class:`~dynamic_identification.core.simulation.SimulationSettings`),
    initial positions 0 (or mid-range when 0 is outside the limits).
    """

    urdf: str
    joints: tuple[str, ...] = ()
    rate_hz: float = 1000.0
    gear_ratios: tuple[float, ...] = DEFAULT_GEAR_RATIOS
    drive_gains: tuple[float, ...] = DEFAULT_DRIVE_GAINS
    coupling: tuple[float, ...] = ()
    rotor_inertia: tuple[float, ...] = DEFAULT_ROTOR_INERTIA
    viscous_friction: tuple[float, ...] = DEFAULT_VISCOUS
    coulomb_friction: tuple[float, ...] = DEFAULT_COULOMB
    offset: tuple[float, ...] = DEFAULT_OFFSET
    current_noise_std: float = 0.02
    velocity_noise_std: float = 0.0
    encoder_counts: int = 2**16
    kp: tuple[float, ...] = ()
    kd: tuple[float, ...] = ()
    initial_positions: tuple[float, ...] = ()
    max_catch_up_s: float = 0.25
    seed: int = 0
    publish_clock: bool = False
    real_time_factor: float = 1.0
    lockstep: bool = False
    lockstep_timeout_s: float = 1.0
    closed_loop: tuple[tuple[str, object], ...] = ()
    """``robot.actuated_joints`` and ``robot.loop_closures.*`` as set (empty: a serial robot)."""


_PARAMETERS = (
    ParameterSpec("urdf", "", Parameter.Type.STRING, "URDF of the robot; empty = the shipped dynid_arm6.urdf"),
    ParameterSpec("joints", None, Parameter.Type.STRING_ARRAY, "joints to simulate, kinematic order; unset = all"),
    ParameterSpec(
        "rate_hz", 1000.0, Parameter.Type.DOUBLE, "simulation and publishing rate, Hz", floating=(1.0, 10000.0)
    ),
    ParameterSpec(
        "gear_ratios", list(DEFAULT_GEAR_RATIOS), Parameter.Type.DOUBLE_ARRAY, "motor rad per joint rad, per joint"
    ),
    ParameterSpec(
        "drive_gains", list(DEFAULT_DRIVE_GAINS), Parameter.Type.DOUBLE_ARRAY, "motor torque constants, N.m/A"
    ),
    ParameterSpec("coupling", None, Parameter.Type.DOUBLE_ARRAY, "n x n coupling matrix, row-major; unset = identity"),
    ParameterSpec("rotor_inertia", list(DEFAULT_ROTOR_INERTIA), Parameter.Type.DOUBLE_ARRAY, "Ia (joint side), kg.m^2"),
    ParameterSpec("viscous_friction", list(DEFAULT_VISCOUS), Parameter.Type.DOUBLE_ARRAY, "Fv (joint side), N.m.s/rad"),
    ParameterSpec("coulomb_friction", list(DEFAULT_COULOMB), Parameter.Type.DOUBLE_ARRAY, "Fc (joint side), N.m"),
    ParameterSpec("offset", list(DEFAULT_OFFSET), Parameter.Type.DOUBLE_ARRAY, "torque offsets (joint side), N.m"),
    ParameterSpec("current_noise_std", 0.02, Parameter.Type.DOUBLE, "current noise std, A", floating=(0.0, 100.0)),
    ParameterSpec("velocity_noise_std", 0.0, Parameter.Type.DOUBLE, "velocity noise std, rad/s", floating=(0.0, 100.0)),
    ParameterSpec(
        "encoder_counts", 2**16, Parameter.Type.INTEGER, "motor encoder counts per rev", integer=(1, 2**31 - 1)
    ),
    ParameterSpec("kp", None, Parameter.Type.DOUBLE_ARRAY, "PD stiffness, N.m/rad, 1 or n values; unset = 10 Hz loop"),
    ParameterSpec("kd", None, Parameter.Type.DOUBLE_ARRAY, "PD damping, N.m.s/rad, 1 or n values; unset = critical"),
    ParameterSpec("initial_positions", None, Parameter.Type.DOUBLE_ARRAY, "initial joint positions, rad; unset = 0"),
    ParameterSpec(
        "max_catch_up_s",
        0.25,
        Parameter.Type.DOUBLE,
        "largest clock lag simulated in one tick, s",
        floating=(0.001, 10.0),
    ),
    ParameterSpec("seed", 0, Parameter.Type.INTEGER, "seed of the sensor noise", integer=(0, 2**31 - 1)),
    ParameterSpec(
        "publish_clock",
        False,
        Parameter.Type.BOOL,
        "be the clock: publish /clock after every step (other nodes run with use_sim_time)",
    ),
    ParameterSpec(
        "real_time_factor",
        1.0,
        Parameter.Type.DOUBLE,
        "with publish_clock: most simulated seconds per wall second",
        floating=(0.01, 100.0),
    ),
    ParameterSpec(
        "lockstep",
        False,
        Parameter.Type.BOOL,
        "with publish_clock: wait for the next trajectory chunk instead of running past one that ends moving",
    ),
    ParameterSpec(
        "lockstep_timeout_s",
        1.0,
        Parameter.Type.DOUBLE,
        "with lockstep: longest wall-time wait for the next chunk, s",
        floating=(0.001, 60.0),
    ),
)


def declare_and_read(node: Node) -> SimRobotConfig:
    """Declare every parameter with its descriptor and read them once into a config."""
    values = declare_parameters(node, _PARAMETERS)
    closed_loop = declare_closed_loop(node, CLOSED_LOOP_PARAMETERS)
    urdf = str(values.pop("urdf", "") or "") or str(shipped_path("urdf", DEFAULT_URDF_NAME))
    return replace(SimRobotConfig(urdf=urdf), **values, closed_loop=tuple(sorted(closed_loop.items())))


@dataclass(frozen=True)
class SimRobotSetup:
    """What a validated configuration builds."""

    robot: RobotModel
    drive_chain: DriveChain
    simulator: RobotSimulator | ClosedLoopSimulator
    dt_ns: int
    initial: np.ndarray
    """Initial positions of the node's joints, rad (rest)."""


def _per_joint(
    config: SimRobotConfig, name: str, selected: np.ndarray, n_urdf: int, *, allow_scalar: bool = False
) -> np.ndarray | None:
    """Values of a per-joint parameter for the simulated joints.

    One value per simulated joint, or one per joint of the URDF (then the
    simulated joints' entries are taken: the defaults stay valid for a subset of
    the shipped arm), or, where allowed, one value for all.
    """
    values = getattr(config, name)
    if len(values) == 0:
        return None
    array = np.asarray(values, dtype=float)
    n = selected.shape[0]
    if not np.all(np.isfinite(array)):
        raise ValueError(f"parameter '{name}' must be finite, got {list(values)}")
    if len(values) == n:
        return array
    if len(values) == n_urdf:
        return array[selected]
    if allow_scalar and len(values) == 1:
        return np.full(n, array[0])
    counts = sorted({n, n_urdf} | ({1} if allow_scalar else set()))
    raise ValueError(
        f"parameter '{name}' needs {' or '.join(map(str, counts))} values ({n} simulated joints,"
        f" {n_urdf} in the URDF), got {len(values)}: {list(values)}"
    )


def build_simulation(config: SimRobotConfig) -> SimRobotSetup:
    """Validate ``config`` and build the simulator; ``ValueError`` names the bad parameter."""
    if not config.rate_hz > 0.0:
        raise ValueError(f"parameter 'rate_hz' must be > 0, got {config.rate_hz}")
    model = None
    try:
        if config.closed_loop:
            model = config_from_parameters(
                {"joints": list(config.joints), **dict(config.closed_loop)}, source="sim_robot parameters"
            ).closed_loop_model(config.urdf)
            robot = load_robot(config.urdf, model.actuated_joint_names)
        else:
            robot = load_robot(config.urdf, list(config.joints) or None)
        all_joints = load_robot(config.urdf).joint_names
    except IdentificationError as error:
        raise ValueError(f"parameter 'urdf'/'joints'/'robot.*': {error}") from error
    n = robot.n_joints
    selected = np.array([all_joints.index(name) for name in robot.joint_names], dtype=int)
    arrays = {
        name: _per_joint(config, name, selected, len(all_joints))
        for name in ("gear_ratios", "drive_gains", "rotor_inertia", "viscous_friction", "coulomb_friction", "offset")
    }
    for name in ("rotor_inertia", "viscous_friction", "coulomb_friction"):
        value = arrays[name]
        if value is not None and np.any(value < 0.0):
            raise ValueError(f"parameter '{name}' must be >= 0, got {value.tolist()}")
    gains = {name: _per_joint(config, name, selected, len(all_joints), allow_scalar=True) for name in ("kp", "kd")}
    for name, value in gains.items():
        if value is not None and np.any(value < 0.0):
            raise ValueError(f"parameter '{name}' must be >= 0, got {value.tolist()}")
    coupling = None
    if config.coupling:
        m = len(all_joints)
        if len(config.coupling) == n * n:
            coupling = np.asarray(config.coupling, dtype=float).reshape(n, n)
        elif len(config.coupling) == m * m:
            coupling = np.asarray(config.coupling, dtype=float).reshape(m, m)[np.ix_(selected, selected)]
        else:
            raise ValueError(
                f"parameter 'coupling' needs {n * n} or {m * m} values (row-major), got {len(config.coupling)}"
            )
    initial = _per_joint(config, "initial_positions", selected, len(all_joints))
    if initial is None and model is not None:
        initial = model.reference_configuration[model.actuated]
    if initial is None:
        lower, upper = robot.lower_position_limits, robot.upper_position_limits
        initial = np.where((lower <= 0.0) & (upper >= 0.0), 0.0, 0.5 * (lower + upper))
    dt_ns = round(NS_PER_S / config.rate_hz)
    try:
        chain = DriveChain.create(
            n,
            gear_ratios=arrays["gear_ratios"],
            drive_gains=arrays["drive_gains"],
            coupling=coupling,
        )
        drive = DriveParameters.create(
            n,
            rotor_inertia=arrays["rotor_inertia"],
            viscous=arrays["viscous_friction"],
            coulomb=arrays["coulomb_friction"],
            offset=arrays["offset"],
        )
        sensor = SensorModel(
            current_noise_std_a=config.current_noise_std,
            encoder_counts_per_rev=config.encoder_counts,
            velocity_noise_std_rad_s=config.velocity_noise_std,
        )
        simulator: RobotSimulator | ClosedLoopSimulator
        if model is not None:
            closed = ClosedLoopSimulationSettings(dt_s=dt_ns / NS_PER_S, kp=gains["kp"], kd=gains["kd"], sensor=sensor)
            simulator = ClosedLoopSimulator(model, chain, drive, closed, q0=initial, seed=config.seed)
        else:
            settings = SimulationSettings(dt_s=dt_ns / NS_PER_S, kp=gains["kp"], kd=gains["kd"], sensor=sensor)
            simulator = RobotSimulator(robot, chain, drive, settings, q0=initial, seed=config.seed)
    except IdentificationError as error:
        raise ValueError(f"invalid sim_robot parameters: {error}") from error
    return SimRobotSetup(robot=robot, drive_chain=chain, simulator=simulator, dt_ns=dt_ns, initial=initial)


@dataclass(frozen=True)
class _Reference:
    """The motion being followed: a held state and, optionally, a trajectory of some joints."""

    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    start_ns: int = 0
    joints: np.ndarray | None = None
    times_s: np.ndarray | None = None
    positions: np.ndarray | None = None
    velocities: np.ndarray | None = None
    accelerations: np.ndarray | None = None

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

    def at(self, stamp_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.joints is None or self.times_s is None or self.positions is None:
            return self.q, self.dq, self.ddq
        q, dq, ddq = self.q.copy(), self.dq.copy(), self.ddq.copy()
        t = (stamp_ns - self.start_ns) / NS_PER_S
        q[self.joints], dq[self.joints], ddq[self.joints] = interpolate_trajectory(
            self.times_s, self.positions, self.velocities, self.accelerations, t
        )
        return q, dq, ddq


class SimRobotNode(GuardedNode):
    """The simulated robot: PD + feedforward tracking of ``/joint_trajectory``, sensors on topics."""

    def __init__(self, *, node_name: str = "sim_robot", **kwargs: object) -> None:
        super().__init__(node_name, **kwargs)  # type: ignore[arg-type]
        self.config = declare_and_read(self)
        if self.config.publish_clock and self.get_parameter("use_sim_time").value:
            raise ValueError(
                "parameters 'publish_clock' and 'use_sim_time' are both true: the simulator would wait for the clock"
                " it publishes; set use_sim_time for the other nodes only"
            )
        setup = build_simulation(self.config)
        self.robot = setup.robot
        self.drive_chain = setup.drive_chain
        self.simulator = setup.simulator
        self._dt_ns = setup.dt_ns
        self._names = list(self.robot.joint_names)
        n = self.robot.n_joints
        self._reference = _Reference(q=np.array(setup.initial, dtype=float), dq=np.zeros(n), ddq=np.zeros(n))
        self._feedforward: tuple[np.ndarray, int] | None = None
        self._anchor_ns: int | None = None
        self._steps = 0
        self._max_steps = max(1, round(self.config.max_catch_up_s * NS_PER_S / self._dt_ns))
        self._joint_states = self.create_publisher(JointState, "joint_states", SENSOR_QOS)
        self._currents = self.create_publisher(JointState, "motor_currents", SENSOR_QOS)
        self.create_subscription(JointTrajectory, "joint_trajectory", self._on_trajectory, COMMAND_QOS)
        self.create_subscription(Float64MultiArray, "feedforward/effort", self._on_feedforward, COMMAND_QOS)
        self._diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._clock_publisher: Publisher | None = None
        if self.config.publish_clock:
            # Simulated time starts at the wall time, so stamps look like a real driver's.
            self._sim_origin_ns = int(Clock(clock_type=ClockType.SYSTEM_TIME).now().nanoseconds)
            self._wall = Clock(clock_type=ClockType.STEADY_TIME)
            self._wall_anchor_ns: int | None = None
            self._waiting_since_ns: int | None = None
            self._clock_publisher = self.create_publisher(ClockMessage, "/clock", CLOCK_QOS)
            self.create_timer(
                self._dt_ns / NS_PER_S / self.config.real_time_factor, self._on_wall_timer, clock=self._wall
            )
            self.create_timer(DIAGNOSTICS_PERIOD_S, self._publish_diagnostics, clock=self._wall)
        else:
            self.create_timer(self._dt_ns / NS_PER_S, self._on_timer)
            self.create_timer(DIAGNOSTICS_PERIOD_S, self._publish_diagnostics)
        mode = f", publishing /clock at {self.config.real_time_factor:g}× real time" if self._clock_publisher else ""
        self.get_logger().info(
            f"simulating {n} joints {self._names} of {self.config.urdf} at {self.config.rate_hz:g} Hz{mode}"
        )

    @property
    def joint_names(self) -> list[str]:
        return list(self._names)

    def _now_ns(self) -> int:
        """Simulated time when this node is the clock, else the node clock, ns."""
        if self._clock_publisher is not None:
            return self._sim_origin_ns + self._steps * self._dt_ns
        return int(self.get_clock().now().nanoseconds)

    def _sim_stamp_ns(self) -> int:
        if self._clock_publisher is not None:
            return self._now_ns()
        return (self._anchor_ns if self._anchor_ns is not None else self._now_ns()) + self._steps * self._dt_ns

    def _on_trajectory(self, message: JointTrajectory) -> None:
        try:
            points = trajectory_points(message, self._names)
        except IdentificationError as error:
            self._refuse_input("joint_trajectory", str(error))
            return
        joints = [self._names[j] for j in points.joints]
        lower, upper = self.robot.lower_position_limits, self.robot.upper_position_limits
        problem = position_problem(joints, points.positions, lower[points.joints], upper[points.joints])
        if problem is not None:
            self._refuse_input("joint_trajectory", f"a trajectory point's {problem}")
            return
        now_ns = self._sim_stamp_ns()
        q, dq, ddq = self._reference.at(now_ns)
        start_ns = points.start_ns if points.start_ns > 0 else now_ns
        times, positions = points.times_s, points.positions
        velocities, accelerations = points.velocities, points.accelerations
        if times[0] > 0.0:
            # Start from the current desired state, as joint_trajectory_controller does.
            times = np.concatenate([[0.0], times])
            positions = np.vstack([q[points.joints], positions])
            velocities = None if velocities is None else np.vstack([dq[points.joints], velocities])
            accelerations = None if accelerations is None else np.vstack([ddq[points.joints], accelerations])
        self._reference = _Reference(
            q=q,
            dq=np.zeros_like(dq),
            ddq=np.zeros_like(ddq),
            start_ns=start_ns,
            joints=points.joints,
            times_s=times,
            positions=positions,
            velocities=velocities,
            accelerations=accelerations,
        )

    def _refuse_input(self, topic: str, reason: str) -> None:
        self.count_refusal(topic, reason)
        self.get_logger().error(f"ignoring {topic}: {reason}", throttle_duration_sec=1.0)

    def _on_feedforward(self, message: Float64MultiArray) -> None:
        values = float64_array(message)
        if values.shape != (len(self._names),) or not np.all(np.isfinite(values)):
            self._refuse_input(
                "feedforward/effort",
                f"{values.size} values; need {len(self._names)} finite efforts in the order {self._names}",
            )
            return
        limits = self.robot.effort_limits
        beyond = np.abs(values) > limits * (1.0 + 1e-9)
        if np.any(limits > 0.0) and np.any(beyond & (limits > 0.0)):
            j = int(np.argmax(beyond & (limits > 0.0)))
            self._refuse_input(
                "feedforward/effort",
                f"effort of {self._names[j]} is {values[j]:.6g} N.m, beyond its limit {limits[j]:.6g} N.m",
            )
            return
        self._feedforward = (values, self._now_ns())

    def _current_feedforward(self, now_ns: int) -> np.ndarray | None:
        if self._feedforward is None:
            return None
        values, received_ns = self._feedforward
        if now_ns - received_ns > FEEDFORWARD_TIMEOUT_S * NS_PER_S:
            self.get_logger().warning(
                f"feedforward is older than {FEEDFORWARD_TIMEOUT_S} s; running on PD alone", throttle_duration_sec=1.0
            )
            self._feedforward = None
            return None
        return values

    def _on_timer(self) -> None:
        now_ns = self._now_ns()
        if now_ns <= 0:
            return
        if self._anchor_ns is None or now_ns < self._sim_stamp_ns() - self._dt_ns:
            self._anchor_ns, self._steps = now_ns, 0  # first tick, or the clock jumped back
        due = (now_ns - self._anchor_ns) // self._dt_ns - self._steps
        if due > self._max_steps:
            self.get_logger().warning(
                f"simulation is {due * self._dt_ns / NS_PER_S:.3f} s behind the clock; dropping the backlog",
                throttle_duration_sec=1.0,
            )
            self._anchor_ns += (due - self._max_steps) * self._dt_ns
            due = self._max_steps
        if due <= 0:
            return
        feedforward = self._current_feedforward(now_ns)
        # One sample per simulated step: under load the stream arrives in bursts but keeps rate_hz.
        for _ in range(due):
            q, dq, ddq = self._reference.at(self._sim_stamp_ns())
            self.simulator.step(q, dq, ddq, feedforward)
            self._steps += 1
            self._publish(self._sim_stamp_ns())

    def _on_wall_timer(self) -> None:
        """Be the clock: step as far as ``real_time_factor`` allows since the first tick, never more than
        ``max_catch_up_s`` of simulated time per tick (a loaded machine slows simulated time down)."""
        wall_ns = int(self._wall.now().nanoseconds)
        if self._wall_anchor_ns is None:
            self._wall_anchor_ns = wall_ns
        due = int((wall_ns - self._wall_anchor_ns) * self.config.real_time_factor) // self._dt_ns - self._steps
        if due > self._max_steps:
            # Simulated time is the clock: it falls behind the wall instead of skipping steps.
            self._wall_anchor_ns += int((due - self._max_steps) * self._dt_ns / self.config.real_time_factor)
            due = self._max_steps
        for _ in range(max(due, 0)):
            stamp_ns = self._now_ns()
            if self._must_wait(stamp_ns + self._dt_ns, wall_ns):
                return
            q, dq, ddq = self._reference.at(stamp_ns)
            self.simulator.step(q, dq, ddq, self._current_feedforward(stamp_ns))
            self._steps += 1
            stamp_ns = self._now_ns()
            if self._clock_publisher is not None:
                self._clock_publisher.publish(ClockMessage(clock=time_message(stamp_ns)))
            self._publish(stamp_ns)

    def _must_wait(self, next_ns: int, wall_ns: int) -> bool:
        """Lockstep: whether to hold simulated time until the next trajectory chunk arrives.

        While waiting, the wall-time anchor moves with the wall, so simulated time resumes at
        ``real_time_factor`` from where it stopped instead of racing to catch up.
        """
        if not self.config.lockstep or not self._reference.ends_moving_before(next_ns):
            self._waiting_since_ns = None
            return False
        if self._waiting_since_ns is None:
            self._waiting_since_ns = wall_ns
        waited_s = (wall_ns - self._waiting_since_ns) / NS_PER_S
        if waited_s > self.config.lockstep_timeout_s:
            self.get_logger().warning(
                f"no trajectory chunk for {waited_s:.2f} s of wall time; holding the last point",
                throttle_duration_sec=1.0,
            )
            return False
        self._wall_anchor_ns = wall_ns - int(self._steps * self._dt_ns / self.config.real_time_factor)
        return True

    def _publish(self, stamp_ns: int) -> None:
        q, dq, torques, currents = self.simulator.measure()
        self._joint_states.publish(joint_state_message(self._names, stamp_ns, q, dq, torques))
        self._currents.publish(joint_state_message(self._names, stamp_ns, None, None, currents))

    def diagnostic_status(self) -> DiagnosticStatus:
        """One ``DiagnosticStatus``: simulated steps, whether a feedforward is applied (refusals: ``guard_report``)."""
        level, message = DiagnosticStatus.OK, "simulating"
        values = {
            "steps": str(self._steps),
            "rate_hz": f"{self.config.rate_hz:g}",
            "feedforward": "true" if self._feedforward is not None else "false",
        }
        return DiagnosticStatus(
            level=level,
            name="sim_robot",
            message=message,
            hardware_id="",
            values=[KeyValue(key=key, value=value) for key, value in values.items()],
        )

    def _publish_diagnostics(self) -> None:
        array = DiagnosticArray()
        array.header.stamp = time_message(max(self._now_ns(), 0))
        array.status = [self.guard_report(self.diagnostic_status())]
        self._diagnostics.publish(array)


def main(args: Sequence[str] | None = None) -> None:
    """Entry point of ``ros2 run dynamic_identification sim_robot``."""
    run_node("sim_robot", SimRobotNode, args)


if __name__ == "__main__":
    main()
