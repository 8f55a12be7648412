"""The sim_robot node over real rclpy on loopback, and the message conversions it uses."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from rclpy.context import Context
from rclpy.exceptions import InvalidParameterValueException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from dynamic_identification.core.errors import DataError
from dynamic_identification.nodes.conversions import (
    arrays_from_joint_state,
    float64_array,
    float64_multi_array,
    joint_state_message,
    joint_trajectory_message,
    stamp_to_ns,
    trajectory_points,
)
from dynamic_identification.nodes.qos import COMMAND_QOS, SENSOR_QOS, sensor_qos
from dynamic_identification.nodes.sim_robot import SimRobotNode
from ros_graph import RosGraph

RATE_HZ = 250.0


@pytest.mark.parametrize("substeps", [1, 4])
def test_sim_robot_follows_a_trajectory_and_publishes_consistent_sensors(context: Context, substeps: int) -> None:
    # substeps: the integrator steps 1 / (rate_hz · substeps) s and the node still publishes at rate_hz.
    sim = SimRobotNode(
        context=context,
        parameter_overrides=[Parameter("rate_hz", value=RATE_HZ), Parameter("substeps", value=substeps)],
    )
    assert sim.simulator.settings.dt_s == pytest.approx(1.0 / (RATE_HZ * substeps))
    graph = RosGraph(context, name="sim_robot_probe")
    graph.add(sim)
    probe = graph.probe
    states: dict[int, JointState] = {}
    currents: dict[int, JointState] = {}
    probe.create_subscription(
        JointState, "/joint_states", lambda m: states.setdefault(stamp_to_ns(m.header.stamp), m), SENSOR_QOS
    )
    probe.create_subscription(
        JointState, "/motor_currents", lambda m: currents.setdefault(stamp_to_ns(m.header.stamp), m), SENSOR_QOS
    )
    publisher = probe.create_publisher(JointTrajectory, "/joint_trajectory", COMMAND_QOS)
    try:
        graph.spin(20.0, until=lambda: publisher.get_subscription_count() > 0 and len(states) > 5)
        start = sim.simulator.q
        names = sim.joint_names
        target = start[0] + 0.2
        publisher.publish(
            joint_trajectory_message(
                [names[0]], np.array([1.0]), np.array([[target]]), np.zeros((1, 1)), np.zeros((1, 1))
            )
        )
        graph.spin(2.0)
    finally:
        graph.close()

    stamps = sorted(states)
    last = states[stamps[-1]]
    assert last.name == names and len(last.position) == len(names)
    _, q, _, _ = arrays_from_joint_state(last, names)
    assert abs(q[0] - target) < 5e-3
    assert_allclose(q[3:], start[3:], atol=0.05)  # the wrist holds its place under PD alone

    common = sorted(set(states) & set(currents))
    assert len(common) >= 0.9 * len(states)
    dt_ns = round(1e9 / RATE_HZ)
    assert np.all(np.diff(stamps) > 0) and np.all(np.diff(stamps) % dt_ns == 0)
    for stamp in common[:: max(1, len(common) // 50)]:
        _, _, _, effort = arrays_from_joint_state(states[stamp], names)
        _, _, _, amps = arrays_from_joint_state(currents[stamp], names)
        assert currents[stamp].name == names
        assert_allclose(effort, sim.drive_chain.joint_torques(amps), rtol=1e-12, atol=1e-9)


def test_sim_robot_refuses_bad_parameters(context: Context) -> None:
    with pytest.raises(ValueError, match="gear_ratios"):
        SimRobotNode(context=context, parameter_overrides=[Parameter("gear_ratios", value=[100.0, 50.0])])
    with pytest.raises(ValueError, match="joints"):
        SimRobotNode(context=context, parameter_overrides=[Parameter("joints", value=["no_such_joint"])])
    with pytest.raises(InvalidParameterValueException, match="substeps out of range"):  # declared range 1..100
        SimRobotNode(context=context, parameter_overrides=[Parameter("substeps", value=0)])


def test_sim_robot_applies_fresh_feedforward_and_ignores_wrong_sizes(context: Context) -> None:
    sim = SimRobotNode(
        context=context,
        parameter_overrides=[Parameter("rate_hz", value=RATE_HZ), Parameter("joints", value=["joint_1"])],
    )
    graph = RosGraph(context, name="sim_robot_feedforward_probe")
    graph.add(sim)
    publisher = graph.probe.create_publisher(Float64MultiArray, "/feedforward/effort", COMMAND_QOS)
    try:
        graph.spin(20.0, until=lambda: publisher.get_subscription_count() > 0)
        publisher.publish(float64_multi_array([1.0, 2.0]))
        graph.spin(0.2)
        assert np.allclose(sim.simulator.applied_torques, 0.0, atol=1.0)
        for _ in range(40):  # 20 N·m on joint 1, kept fresh
            publisher.publish(float64_multi_array([20.0]))
            graph.spin(0.02)
    finally:
        graph.close()
    # The PD holds 0 against the push: the static deflection lies between the one with the joint
    # sticking on Coulomb friction and the frictionless one, (20 N·m - offset [- Fc]) / kp.
    kp, offset, coulomb = sim.simulator.kp[0], sim.config.offset[0], sim.config.coulomb_friction[0]
    assert (20.0 - offset - coulomb) / kp <= sim.simulator.q[0] <= 1.05 * (20.0 - offset) / kp


def test_joint_state_round_trip_reorders_by_name() -> None:
    message = joint_state_message(["b", "a"], 1_500_000_001, [2.0, 1.0], [20.0, 10.0], None)
    stamp, q, dq, effort = arrays_from_joint_state(message, ["a", "b"])
    assert stamp == pytest.approx(1.500000001)
    assert_allclose(q, [1.0, 2.0])
    assert_allclose(dq, [10.0, 20.0])
    assert effort is None
    with pytest.raises(DataError, match="'c'"):
        arrays_from_joint_state(message, ["a", "c"])


def test_trajectory_message_round_trip_selects_joints_in_node_order() -> None:
    message = joint_trajectory_message(["j3", "j1"], np.array([0.5, 1.0]), np.array([[3.0, 1.0], [4.0, 2.0]]))
    points = trajectory_points(message, ["j1", "j2", "j3"])
    assert points.joints.tolist() == [0, 2]
    assert_allclose(points.positions, [[1.0, 3.0], [2.0, 4.0]])
    assert_allclose(points.times_s, [0.5, 1.0])
    assert points.velocities is None
    with pytest.raises(DataError, match="joint_names"):
        trajectory_points(message, ["j1", "j2"])
    assert_allclose(float64_array(float64_multi_array([1.0, 2.0])), [1.0, 2.0])


def _clocked_graph(context: Context, *extra: Parameter) -> tuple[SimRobotNode, Node, RosGraph]:
    graph = RosGraph(context, name="clock_probe", probe_parameters=[Parameter("use_sim_time", value=True)])
    sim = graph.add(
        SimRobotNode(
            context=context,
            parameter_overrides=[Parameter("rate_hz", value=RATE_HZ), Parameter("publish_clock", value=True), *extra],
        )
    )
    return sim, graph.probe, graph


def test_as_the_clock_every_sample_is_stamped_with_the_simulated_time_it_publishes(context: Context) -> None:
    sim, probe, graph = _clocked_graph(context)
    clock: list[int] = []
    stamps: list[int] = []
    probe.create_subscription(Clock, "/clock", lambda m: clock.append(stamp_to_ns(m.clock)), sensor_qos(1000))
    # A history of 4 s of samples, as the clock's: a catch-up burst after a stall of the loaded test machine is
    # longer than SENSOR_QOS's 100 samples, and a keep-last reader would drop its oldest before they are taken.
    probe.create_subscription(
        JointState, "/joint_states", lambda m: stamps.append(stamp_to_ns(m.header.stamp)), sensor_qos(1000)
    )
    graph.spin(20.0, until=lambda: len(stamps) >= 100)
    graph.executor.shutdown()
    assert len(stamps) >= 100
    steps = np.diff(stamps)
    assert np.all(steps == round(1e9 / RATE_HZ))  # one sample per simulated step, never a dropped backlog
    assert set(stamps[:50]) <= set(clock)  # each sample's stamp was published on /clock
    assert probe.get_clock().now().nanoseconds >= stamps[0]  # a use_sim_time node follows it
    graph.close()


def test_in_lockstep_simulated_time_waits_for_the_next_chunk_of_a_moving_trajectory(context: Context) -> None:
    sim, probe, graph = _clocked_graph(context, Parameter("lockstep", value=True))
    names = sim.joint_names
    publisher = probe.create_publisher(JointTrajectory, "/joint_trajectory", COMMAND_QOS)
    graph.spin(20.0, until=lambda: publisher.get_subscription_count() > 0)
    start = sim._now_ns()
    q = np.zeros((2, len(names)))
    q[1, 0] = 0.05
    dq = np.full((2, len(names)), 0.0)
    dq[:, 0] = 0.1  # the chunk ends moving: more must follow
    publisher.publish(joint_trajectory_message(names, np.array([0.0, 0.2]), q, dq, np.zeros_like(q), stamp_ns=start))
    graph.spin(20.0, until=lambda: sim._now_ns() - start >= 0.19e9)
    graph.spin(0.4)  # twice the chunk's length more in wall time, however slowly the simulator got there
    waited_at = sim._now_ns()
    assert 0.19e9 <= waited_at - start <= 0.25e9  # simulated time stopped at the end of the chunk
    q[:, 0] += 0.02
    publisher.publish(
        joint_trajectory_message(names, np.array([0.0, 0.2]), q, np.zeros_like(q), np.zeros_like(q), stamp_ns=waited_at)
    )
    graph.spin(20.0, until=lambda: sim._now_ns() - waited_at > 0.3e9)
    graph.executor.shutdown()
    assert sim._now_ns() - waited_at > 0.3e9  # it runs again once the next chunk (ending at rest) arrived
    graph.close()


def test_publish_clock_gives_other_nodes_the_simulated_time(context: Context) -> None:
    """``sim.launch.py use_sim_time:=true``: the simulator publishes /clock, a node with use_sim_time follows it."""
    sim = SimRobotNode(
        context=context,
        parameter_overrides=[Parameter("rate_hz", value=RATE_HZ), Parameter("publish_clock", value=True)],
    )
    graph = RosGraph(context, name="follower", probe_parameters=[Parameter("use_sim_time", value=True)])
    graph.add(sim)
    follower = graph.probe
    stamps: list[int] = []
    follower.create_subscription(
        JointState, "/joint_states", lambda m: stamps.append(stamp_to_ns(m.header.stamp)), SENSOR_QOS
    )
    try:
        graph.spin(20.0, until=lambda: len(stamps) > 20 and follower.get_clock().now().nanoseconds > 0)
        clock_ns = follower.get_clock().now().nanoseconds
        latest_ns = stamps[-1]
    finally:
        graph.close()
    assert clock_ns > 0 and follower.get_clock().ros_time_is_active
    assert abs(clock_ns - latest_ns) < 0.5e9  # the follower's time is the simulator's, not 0


def test_publish_clock_with_use_sim_time_is_refused_naming_both(context: Context) -> None:
    with pytest.raises(ValueError, match="'publish_clock' and 'use_sim_time'"):
        SimRobotNode(
            context=context,
            parameter_overrides=[Parameter("publish_clock", value=True), Parameter("use_sim_time", value=True)],
        )


STACK_CLOCK = ["--ros-args", "-r", "/clock:=clock"]
"""sim.launch.py's remapping of every node of a stack (``SetRemap(src="/clock", dst="clock")``)."""


def test_two_namespaced_simulators_are_each_the_clock_of_their_own_stack_only(context: Context) -> None:
    """Two arms of sim.launch.py in one domain shared one ``/clock`` (two publishers): a node followed both clocks,
    its time jumping between them, and one arm never identified. Remapped into each stack's namespace, a node
    of ``arm1`` follows ``arm1``'s simulator alone, here beside a simulator four times slower."""
    clocked = [Parameter("rate_hz", value=RATE_HZ), Parameter("publish_clock", value=True)]
    arm1 = SimRobotNode(context=context, namespace="/arm1", cli_args=STACK_CLOCK, parameter_overrides=clocked)
    arm2 = SimRobotNode(
        context=context,
        namespace="/arm2",
        cli_args=STACK_CLOCK,
        parameter_overrides=[*clocked, Parameter("real_time_factor", value=0.25)],
    )
    graph = RosGraph(
        context,
        name="arm1_follower",
        namespace="arm1",
        probe_parameters=[Parameter("use_sim_time", value=True)],
        probe_arguments=STACK_CLOCK,
    )
    graph.add(arm1)
    graph.add(arm2)
    readings: list[int] = []

    def read() -> bool:
        readings.append(graph.probe.get_clock().now().nanoseconds)
        return arm1._now_ns() - arm2._now_ns() > 0.5e9 and len(readings) > 100

    try:
        graph.spin(30.0, until=read)
        followed, own, other = readings[-1], arm1._now_ns(), arm2._now_ns()
    finally:
        graph.close()
    assert np.all(np.diff([t for t in readings if t > 0]) >= 0)  # never back to the other simulator's time
    assert own - 0.1e9 <= followed <= own and followed > other + 0.3e9
