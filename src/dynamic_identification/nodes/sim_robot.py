"""``sim_robot``: the simulated robot as a ROS node.

Subscribes ``joint_trajectory`` (``trajectory_msgs/JointTrajectory``) and
``feedforward/effort`` (``std_msgs/Float64MultiArray``, N·m in the node's joint
order); publishes ``joint_states`` (quantised position, velocity, effort = joint
torque measured through the drive chain, N·m) and ``motor_currents``
(``sensor_msgs/JointState`` with the same stamp, ``effort`` = current in A), relative
names that a namespace moves, and ``/diagnostics`` at 1 Hz (steps, refused inputs:
non-finite or out-of-limit trajectory points, efforts beyond the URDF limits).

A gripper: ``payload_file`` names the load (payload YAML: frame, mass, centre of
mass, inertia) the arm can take; ``~/grasp`` (``std_srvs/SetBool``) makes it carry the
load (``data: true``) or put it down (``false``), and ``payload_attached`` carries it
from the start. The carried load is part of the simulated dynamics, so the measured
torques and currents include it.

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
  until the next one arrives, so a commanding node starved of CPU cannot leave the robot
  without a reference; and for the consumers of its samples named in ``lockstep_consumers``
  (:mod:`~dynamic_identification.nodes.lockstep`): it runs at most 50 ms of samples ahead of
  what each has acknowledged on ``<name>/acknowledged`` (before its first acknowledgement, of
  where it came up), so no sample queue overflows however slowly they take them. Each wait
  lasts at most ``lockstep_timeout_s`` of wall time (for a consumer, from its last
  acknowledgement: one that renews it holds simulated time on purpose);
  a wait that hits the bound is logged and counted on ``/diagnostics`` (``lockstep_timeouts``),
  and ``lockstep_waiting_for`` names what simulated time waits for.

A closed-loop robot (``robot.loop_closures.<name>.*`` and ``robot.actuated_joints``,
[Briot2012] §2) is simulated by
:class:`~dynamic_identification.core.simulation.RobotSimulator`
(constrained dynamics of the opened tree, drives on the actuated joints): the node's
joints are then the actuated ones, which it commands, measures and publishes; the per-joint
parameters hold one value per actuated joint (or per URDF joint), built by the same
:meth:`~dynamic_identification.core.simulation.SimulatedArm.build`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.publisher import Publisher
from rosgraph_msgs.msg import Clock as ClockMessage
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory

from dynamic_identification.core.errors import IdentificationError, ModelError
from dynamic_identification.core.mechanism.payload import Payload, frame_id
from dynamic_identification.core.mechanism.robot import DriveChain, RobotModel, load_robot
from dynamic_identification.core.settings_schema import setting_field
from dynamic_identification.core.simulation import RobotSimulator, SimulatedArm, SimulationSettings
from dynamic_identification.io.config import config_from_parameters, is_closed_loop_key
from dynamic_identification.io.payload import load_payload
from dynamic_identification.io.sanity import position_problem
from dynamic_identification.nodes.conversions import (
    NS_PER_S,
    float64_array,
    joint_state_message,
    time_message,
    trajectory_points,
)
from dynamic_identification.nodes.follower import DesiredMotion, follow
from dynamic_identification.nodes.guarded import GuardedNode, status_message
from dynamic_identification.nodes.lockstep import (
    FIRST_ACKNOWLEDGEMENT_PACE_S,
    FIRST_ACKNOWLEDGEMENT_TIMEOUT_S,
    ConsumerAcknowledgements,
    LockstepWait,
)
from dynamic_identification.nodes.parameters import node_parameters, read_parameters, urdf_or_shipped
from dynamic_identification.nodes.qos import CLOCK_QOS, COMMAND_QOS, SENSOR_QOS
from dynamic_identification.nodes.runner import run_node

FEEDFORWARD_TIMEOUT_S = 0.1
"""A feedforward older than this (node clock) is ignored."""


NODE = "sim_robot"


@dataclass(frozen=True)
class SimRobotConfig(SimulatedArm):
    """The node's parameters, read once at start (units and ranges: the settings schema).

    The simulated robot's drive chain, drive terms and sensors are those of
    :class:`~dynamic_identification.core.simulation.SimulatedArm` (its factory builds
    them, as for the demo, the tests and the benchmarks). ``urdf`` empty means the shipped
    arm; unset arrays mean "automatic": all joints, identity coupling, gains from the mass
    matrix (see :class:`~dynamic_identification.core.simulation.SimulationSettings`),
    initial positions 0 (or mid-range when 0 is outside the limits).
    """

    urdf: str = setting_field("urdf", NODE)
    joints: tuple[str, ...] | None = setting_field("joints", NODE)
    rate_hz: float = setting_field("rate_hz", NODE)
    kp: tuple[float, ...] | None = setting_field("kp", NODE)
    kd: tuple[float, ...] | None = setting_field("kd", NODE)
    initial_positions: tuple[float, ...] | None = setting_field("initial_positions", NODE)
    max_catch_up_s: float = setting_field("max_catch_up_s", NODE)
    seed: int = setting_field("seed", NODE)
    publish_clock: bool = setting_field("publish_clock", NODE)
    real_time_factor: float = setting_field("real_time_factor", NODE)
    lockstep: bool = setting_field("lockstep", NODE)
    lockstep_timeout_s: float = setting_field("lockstep_timeout_s", NODE)
    lockstep_consumers: tuple[str, ...] | None = setting_field("lockstep_consumers", NODE)
    payload_file: str = setting_field("payload_file", NODE)
    payload_attached: bool = setting_field("payload_attached", NODE)
    substeps: int = setting_field("substeps", NODE)
    closed_loop: tuple[tuple[str, object], ...] = ()
    """``robot.actuated_joints`` and ``robot.loop_closures.*`` as set (empty: a serial robot)."""


_PARAMETERS = node_parameters(NODE)


def declare_and_read(node: Node) -> SimRobotConfig:
    """Declare every parameter with its descriptor and read them once into a config."""
    reader = read_parameters(node, NODE, _PARAMETERS)
    config = reader.build(SimRobotConfig)
    return replace(
        config,
        urdf=urdf_or_shipped(config.urdf),
        closed_loop=reader.set_among(is_closed_loop_key),
    )


@dataclass(frozen=True)
class SimRobotSetup:
    """What a validated configuration builds."""

    robot: RobotModel
    drive_chain: DriveChain
    simulator: RobotSimulator
    dt_ns: int
    initial: np.ndarray
    """Initial positions of the node's joints, rad (rest)."""
    payload: Payload | None = None


def build_simulation(config: SimRobotConfig) -> SimRobotSetup:
    """Validate ``config`` and build the simulator; ``ValueError`` names the bad parameter."""
    model = None
    try:
        if config.closed_loop:
            model = config_from_parameters(
                {"joints": list(config.joints or ()), **dict(config.closed_loop)}, source="sim_robot parameters"
            ).closed_loop_model(config.urdf)
            robot = load_robot(config.urdf, model.actuated_joint_names)
        else:
            robot = load_robot(config.urdf, list(config.joints or ()) or None)
        all_joints = load_robot(config.urdf).joint_names
    except IdentificationError as error:
        raise ValueError(f"parameter 'urdf'/'joints'/'robot.*': {error}") from error
    n, m = robot.n_joints, len(all_joints)
    selected = np.array([all_joints.index(name) for name in robot.joint_names], dtype=int)
    dt_ns = round(NS_PER_S / config.rate_hz)
    try:
        simulated = config.build(n, selected=selected, urdf_joints=m)
        gains = {name: config.per_joint(name, n, selected, m, allow_scalar=True) for name in ("kp", "kd")}
        for name, value in gains.items():
            if value is not None and np.any(value < 0.0):
                raise ModelError(f"'{name}' must be >= 0, got {value.tolist()}")
        initial = config.per_joint("initial_positions", n, selected, m)
        if initial is None and model is not None:
            initial = model.reference_configuration[model.actuated]
        if initial is None:
            lower, upper = robot.lower_position_limits, robot.upper_position_limits
            initial = np.where((lower <= 0.0) & (upper >= 0.0), 0.0, 0.5 * (lower + upper))
        settings = SimulationSettings(
            dt_s=dt_ns / NS_PER_S / config.substeps, kp=gains["kp"], kd=gains["kd"], sensor=simulated.sensor
        )
        simulator = RobotSimulator(
            robot if model is None else model,
            simulated.drive_chain,
            simulated.drive,
            settings,
            q0=initial,
            seed=config.seed,
        )
    except IdentificationError as error:
        raise ValueError(f"invalid sim_robot parameter {error}") from error
    payload = None
    if config.payload_file:
        try:
            if model is not None:
                raise ModelError("a payload is not available for a closed-loop robot (robot.loop_closures)")
            payload = load_payload(config.payload_file)
            frame_id(robot, payload.frame)
        except IdentificationError as error:
            raise ValueError(f"parameter 'payload_file': {error}") from error
    elif config.payload_attached:
        raise ValueError("parameter 'payload_attached' is true but no payload_file names the load")
    if payload is not None and config.payload_attached:
        simulator.carry(payload)
    return SimRobotSetup(
        robot=robot,
        drive_chain=simulated.drive_chain,
        simulator=simulator,
        dt_ns=dt_ns,
        initial=initial,
        payload=payload,
    )


class SimRobotNode(GuardedNode):
    """The simulated robot: PD + feedforward tracking of ``/joint_trajectory``, sensors on topics."""

    def __init__(self, *, node_name: str = "sim_robot", **kwargs: object) -> None:
        super().__init__(node_name, **kwargs)
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
        self._payload = setup.payload
        self._names = list(self.robot.joint_names)
        n = self.robot.n_joints
        self._reference = DesiredMotion.holding(self._names, np.array(setup.initial, dtype=float))
        self._feedforward: tuple[np.ndarray, int] | None = None
        self._anchor_ns: int | None = None
        self._steps = 0
        self._max_steps = max(1, round(self.config.max_catch_up_s * NS_PER_S / self._dt_ns))
        self._joint_states = self.create_publisher(JointState, "joint_states", SENSOR_QOS)
        self._currents = self.create_publisher(JointState, "motor_currents", SENSOR_QOS)
        self.create_subscription(JointTrajectory, "joint_trajectory", self._on_trajectory, COMMAND_QOS)
        self.create_subscription(Float64MultiArray, "feedforward/effort", self._on_feedforward, COMMAND_QOS)
        self.create_service(SetBool, "~/grasp", self._on_grasp)
        self._clock_publisher: Publisher | None = None
        # Lockstep: what simulated time waits for (and since when, wall ns), the waits that hit the bound.
        self._waiting: tuple[str, int] | None = None
        self._timed_out = False
        self._paced_ns = 0
        self._pace_ns = round(FIRST_ACKNOWLEDGEMENT_PACE_S * NS_PER_S)
        self._lockstep_waits: dict[str, LockstepWait] = {}
        consumers = self.config.lockstep_consumers or ()
        if consumers and not (self.config.lockstep and self.config.publish_clock):
            raise ValueError("parameter 'lockstep_consumers' needs 'lockstep' and 'publish_clock' true")
        self._wall = Clock(clock_type=ClockType.STEADY_TIME)
        self._consumers = ConsumerAcknowledgements(
            self, consumers, step_ns=self._dt_ns, wall_ns=lambda: int(self._wall.now().nanoseconds)
        )
        if self.config.publish_clock:
            # Simulated time starts at the wall time, so stamps look like a real driver's.
            self._sim_origin_ns = int(Clock(clock_type=ClockType.SYSTEM_TIME).now().nanoseconds)
            self._wall_anchor_ns: int | None = None
            self._clock_publisher = self.create_publisher(ClockMessage, "/clock", CLOCK_QOS)
            self.create_timer(
                self._dt_ns / NS_PER_S / self.config.real_time_factor, self._on_wall_timer, clock=self._wall
            )
            self.start_diagnostics(self.diagnostic_status, stamp_ns=self._now_ns, clock=self._wall)
        else:
            self.create_timer(self._dt_ns / NS_PER_S, self._on_timer)
            self.start_diagnostics(self.diagnostic_status, stamp_ns=self._now_ns)
        mode = f", publishing /clock at {self.config.real_time_factor:g}× real time" if self._clock_publisher else ""
        if consumers:
            mode += f", in lockstep with {list(consumers)}"
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
        self._reference = follow(self._reference, points, self._sim_stamp_ns())

    def _on_grasp(self, request: SetBool.Request, _response: SetBool.Response) -> SetBool.Response:
        """Carry the ``payload_file`` load (``data: true``) or put it down (``false``) from the next step on."""
        if request.data and self._payload is None:
            reason = "no payload_file names a load to grasp"
            self.count_refusal("~/grasp", reason)
            return SetBool.Response(success=False, message=reason)
        if not isinstance(self.simulator, RobotSimulator):
            reason = "a payload is not available for a closed-loop robot"
            self.count_refusal("~/grasp", reason)
            return SetBool.Response(success=False, message=reason)
        self.simulator.carry(self._payload if request.data else None)
        if request.data and self._payload is not None:
            message = f"carrying {self._payload.mass_kg:.4g} kg on {self._payload.frame}"
        else:
            message = "carrying no payload"
        self.get_logger().info(f"~/grasp: {message}")
        return SetBool.Response(success=True, message=message)

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
            self.warn_recurring(
                "feedforward_stale", f"feedforward is older than {FEEDFORWARD_TIMEOUT_S} s; running on PD alone"
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
            self._step(self._sim_stamp_ns(), feedforward)
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
            if self._held(stamp_ns + self._dt_ns, wall_ns):
                return
            self._step(stamp_ns, self._current_feedforward(stamp_ns))
            self._steps += 1
            stamp_ns = self._now_ns()
            if self._clock_publisher is not None:
                self._clock_publisher.publish(ClockMessage(clock=time_message(stamp_ns)))
            self._publish(stamp_ns)

    def _step(self, stamp_ns: int, feedforward: np.ndarray | None) -> None:
        """Advance one published sample from ``stamp_ns``: ``substeps`` integration steps along the reference."""
        substeps = self.config.substeps
        for k in range(substeps):
            q, dq, ddq = self._reference.at(stamp_ns + (k * self._dt_ns) // substeps)
            self.simulator.step(q, dq, ddq, feedforward)

    def _held(self, next_ns: int, wall_ns: int) -> bool:
        """Lockstep: whether simulated time waits before the step to ``next_ns``.

        It waits for the next trajectory chunk when the reference ends moving before ``next_ns``,
        and for a consumer that ``next_ns`` would leave more than the lead behind (one that has not
        acknowledged anything yet is paced, a step per ``FIRST_ACKNOWLEDGEMENT_PACE_S``, for at least
        ``FIRST_ACKNOWLEDGEMENT_TIMEOUT_S``). A wait longer
        than ``lockstep_timeout_s`` of wall time is counted and logged, and the step goes on: past
        the chunk's end (the last point held), or without that consumer until it acknowledges again.
        While waiting, the wall-time anchor moves with the wall, so simulated time resumes at
        ``real_time_factor`` from where it stopped instead of racing to catch up.
        """
        if not self.config.lockstep:
            return False
        what: str | None = "trajectory"
        if not self._reference.ends_moving_before(next_ns):
            self._timed_out = False  # a reference again: the next chunk's wait starts afresh
            what = self._consumers.lagging(next_ns)
        if what is None or (what == "trajectory" and self._timed_out):
            self._waiting = None
            return False
        if self._waiting is None or self._waiting[0] != what:
            self._waiting = (what, wall_ns)
        since_ns = self._waiting[1] if what == "trajectory" else max(self._waiting[1], self._consumers.heard_ns(what))
        waited_s = (wall_ns - since_ns) / NS_PER_S
        silent = what != "trajectory" and self._consumers.silent(what)
        timeout_s = self.config.lockstep_timeout_s
        if silent:
            timeout_s = max(timeout_s, FIRST_ACKNOWLEDGEMENT_TIMEOUT_S)
        if waited_s > timeout_s:
            self._count_timeout(what, waited_s)
            self._waiting = None
            return False
        if silent and wall_ns - self._paced_ns >= self._pace_ns:
            self._paced_ns = wall_ns  # before its first acknowledgement a consumer is paced, not stopped
            return False
        self._wall_anchor_ns = wall_ns - int(self._steps * self._dt_ns / self.config.real_time_factor)
        return True

    def _count_timeout(self, what: str, waited_s: float) -> None:
        """A lockstep wait hit its bound: count it, say it, and go on without what it waited for."""
        earlier = self._lockstep_waits.get(what)
        self._lockstep_waits[what] = LockstepWait(
            what=what, timeouts=(earlier.timeouts if earlier else 0) + 1, last_wait_s=waited_s
        )
        if what == "trajectory":
            self._timed_out = True
            self.get_logger().warning(
                f"lockstep: no trajectory chunk for {waited_s:.2f} s of wall time (lockstep_timeout_s); holding the"
                " last point"
            )
            return
        first = self._consumers.silent(what)
        self._consumers.release(what)
        self.get_logger().warning(
            f"lockstep: {what} acknowledged no sample for {waited_s:.2f} s of wall time"
            + (" since it came up (does it receive its input?)" if first else " (lockstep_timeout_s)")
            + "; going on without it until it does (it counts the samples it misses)"
        )

    @property
    def lockstep_waiting_for(self) -> str:
        """What simulated time waits for now: ``trajectory`` (the next chunk), a consumer's name, or empty."""
        waiting = self._waiting
        return "" if waiting is None else waiting[0]

    @property
    def lockstep_waits(self) -> tuple[LockstepWait, ...]:
        """The lockstep waits that hit ``lockstep_timeout_s``, by what they waited for."""
        return tuple(self._lockstep_waits.values())

    @property
    def step_ns(self) -> int:
        """Simulated time between two published samples, ns (``1 / rate_hz``)."""
        return self._dt_ns

    @property
    def simulated_start_ns(self) -> int:
        """With ``publish_clock``: simulated time at the start, before the first step, ns (the wall time then)."""
        return self._sim_origin_ns if self._clock_publisher is not None else 0

    @property
    def steps(self) -> int:
        """Samples published on ``joint_states`` (one per simulated step)."""
        return self._steps

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
            "payload": _carried(getattr(self.simulator, "payload", None)),
            **{label: str(count) for label, count in self.recurring_counts().items()},
        }
        if self.config.lockstep:
            waits = self.lockstep_waits
            values["lockstep_waiting_for"] = self.lockstep_waiting_for
            values["lockstep_timeouts"] = str(sum(wait.timeouts for wait in waits))
            for wait in waits:
                values[f"lockstep_timeouts/{wait.what}"] = str(wait.timeouts)
            for name in self._consumers.names:
                acknowledged = self._consumers.acknowledged_ns(name)
                values[f"acknowledged/{name}"] = "" if acknowledged is None else f"{acknowledged / NS_PER_S:.6f}"
            if waits:
                level = DiagnosticStatus.WARN
                message = "lockstep waits hit lockstep_timeout_s: " + ", ".join(
                    f"{wait.what} {wait.timeouts}x (last {wait.last_wait_s:.2f} s)" for wait in waits
                )
        return status_message(level, "sim_robot", message, values)


def _carried(payload: Payload | None) -> str:
    """``3.5 kg on tool0``, or ``none``."""
    return "none" if payload is None else f"{payload.mass_kg:.6g} kg on {payload.frame}"


def main(args: Sequence[str] | None = None) -> None:
    """Entry point of ``ros2 run dynamic_identification sim_robot``."""
    run_node("sim_robot", SimRobotNode, args)


if __name__ == "__main__":
    main()
