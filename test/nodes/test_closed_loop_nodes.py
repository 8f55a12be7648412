"""The nodes on a closed-loop robot ([Briot2012] §2) over real rclpy on loopback: the shipped five-bar.

The nodes get the configuration ``config/five_bar.yaml`` as ROS parameters, as ``--params-file``
gives it: the closure as ``robot.loop_closures.distal_tip.{frame_a, frame_b, type}`` and the
motors as ``robot.actuated_joints``. sim_robot simulates the constrained dynamics
(``RobotSimulator``); the excitation node plans and streams the actuated joints; the
estimator identifies the closed-loop IDIM from samples that carry every joint of the opened
tree (the passive ones are ignored); the feedforward node turns desired actuated motion into
actuated torques.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import TypeVar

import numpy as np
import pytest
from numpy.testing import assert_allclose
from rclpy.context import Context
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from dynamic_identification.core.excitation.collision import SelfCollisionError
from dynamic_identification.core.excitation.constraints import MechanismLimits
from dynamic_identification.core.excitation.safety import TorqueModel, executed_motion
from dynamic_identification.core.excitation.trajectory import SampledTrajectory
from dynamic_identification.core.mechanism.closed_loop import ClosedLoopModel, base_parameters, standard_parameters
from dynamic_identification.core.mechanism.robot import DriveTerms
from dynamic_identification.core.settings_schema import setting
from dynamic_identification.core.simulation import inverse_dynamics
from dynamic_identification.feedforward import FeedforwardModel
from dynamic_identification.io.config import load_config, load_excitation_settings, ros_parameters, simulated_robot
from dynamic_identification.io.parameters import ParameterFile, parse_parameters, write_parameters_atomic
from dynamic_identification.io.trajectory import write_trajectory_csv
from dynamic_identification.nodes.conversions import arrays_from_joint_state, joint_state_message
from dynamic_identification.nodes.estimator import SAMPLES_QOS, EstimatorNode
from dynamic_identification.nodes.excitation import ExcitationNode, checked_playback
from dynamic_identification.nodes.feedforward import FeedforwardNode
from dynamic_identification.nodes.qos import COMMAND_QOS, LATCHED_QOS, SENSOR_QOS
from dynamic_identification.nodes.sim_robot import SimRobotNode
from five_bar import FIVE_BAR_ACTUATED as ACTUATED
from five_bar import (
    FIVE_BAR_CHAIN,
    FIVE_BAR_CLOSURES,
    FIVE_BAR_CONFIG,
    FIVE_BAR_URDF,
    five_bar_with_collision_geometry,
    fourier_motion,
)
from ros_graph import RosGraph, graphs
from ur5_collision import rest_to_rest

_N = TypeVar("_N", bound=Node)

NAMESPACE = f"closed_loop_test_{os.getpid()}"
"""The nodes and probe run in a namespace of this process: no latched message of another run reaches them."""


def overrides(node: str, **extra: object) -> list[Parameter]:
    """The ``/**`` and ``node`` blocks of ``config/five_bar.yaml`` as parameter overrides, plus ``extra``."""
    values = {**ros_parameters(FIVE_BAR_CONFIG, node), "urdf": str(FIVE_BAR_URDF), **extra}
    return [Parameter(name, value=value) for name, value in values.items()]


def five_bar_node(node_type: Callable[..., _N], context: Context, block: str, **extra: object) -> _N:
    """A node of ``node_type`` in this process's namespace with the :func:`overrides` of ``block`` and ``extra``."""
    return node_type(context=context, namespace=NAMESPACE, parameter_overrides=overrides(block, **extra))


def _holds_state_stamped(node: ExcitationNode, stamp_ns: int) -> bool:
    """Whether the joint state ``node`` received last is the one stamped ``stamp_ns``."""
    return node._joint_state is not None and node._joint_state[1] == stamp_ns


def quick_excitation(context: Context) -> ExcitationNode:
    """The five-bar's excitation node with a plan made in seconds: 2 harmonics of 0.5 Hz, one period, not optimised."""
    return five_bar_node(
        ExcitationNode,
        context,
        "excitation",
        optimise=False,
        fundamental_hz=0.5,
        harmonics=2,
        periods=1,
        seed=3,
        rate_hz=100.0,
    )


@pytest.fixture
def graph(context: Context) -> Iterator[Callable[..., RosGraph]]:
    """Graphs of the nodes under test and a probe in this process's namespace (``ros_graph``), closed after the
    test: ``graph(node, …)``."""

    def build(*nodes: Node) -> RosGraph:
        made = RosGraph(context, name="closed_loop_probe", namespace=NAMESPACE)
        for node in nodes:
            made.add(node)
        return made

    with graphs(build) as make:
        yield make


def test_the_excitation_node_plays_a_closed_loop_excitation_the_simulated_five_bar_follows(
    context: Context, graph: Callable[..., RosGraph]
) -> None:
    excitation = quick_excitation(context)
    sim = five_bar_node(SimRobotNode, context, "sim_robot", rate_hz=250.0)
    g = graph(excitation, sim)
    states: list[JointState] = g.record(JointState, "joint_states", SENSOR_QOS)
    commands: list[JointTrajectory] = g.record(JointTrajectory, "joint_trajectory", COMMAND_QOS)
    assert excitation.joint_names == ACTUATED and sim.joint_names == ACTUATED
    assert excitation.wait_for_plan(60.0), "planning did not finish"
    g.spin(20.0, until=lambda: len(states) > 20 and excitation.state == "ready")
    assert excitation.state == "ready", excitation.diagnostic_status().message
    plan = excitation.plan
    assert plan is not None and "closure σ_min/σ_max" in plan.description
    assert plan.self_collision == "self-collision not checked: the URDF has no <collision> geometry"
    response = g.call(f"/{NAMESPACE}/excitation/start")
    assert response.success, response.message
    playback = excitation._playback
    assert playback is not None
    g.spin(playback.trajectory.duration_s + 5.0, until=lambda: excitation.state == "idle")
    assert excitation.state == "idle"
    assert commands and all(list(c.joint_names) == ACTUATED for c in commands)
    measured = np.array([arrays_from_joint_state(m, ACTUATED)[1] for m in states])
    amplitude = np.ptp(playback.trajectory.q, axis=0)
    assert np.all(amplitude > 0.1)
    assert np.all(np.ptp(measured, axis=0) > 0.8 * amplitude)  # the mechanism really moved
    assert sim.simulator.saturated_steps == 0


def test_a_closed_loop_start_refuses_a_ramp_from_a_pose_near_the_singularity(
    context: Context, graph: Callable[..., RosGraph]
) -> None:
    """The played motion, ramps included, is checked against the closure: the robot resting 0.05 rad before the
    distal links align (both motors opened by 0.59 rad) is too close to the singularity to start from."""
    excitation = quick_excitation(context)
    g = graph(excitation)
    states = g.probe.create_publisher(JointState, "joint_states", SENSOR_QOS)
    assert excitation.wait_for_plan(60.0)
    g.spin(20.0, until=lambda: states.get_subscription_count() > 0)
    # Stamped by the node's clock when sent, and sent again until one arrived: the start finds it fresh
    # (stale_timeout_s) however slowly a loaded machine delivered it.
    for _ in range(20):
        stamp = excitation.get_clock().now().nanoseconds
        states.publish(joint_state_message(ACTUATED, stamp, [0.59, -0.59], [0.0, 0.0]))
        if g.spin_until(partial(_holds_state_stamped, excitation, stamp), 0.25):
            break
    response = g.call(f"/{NAMESPACE}/excitation/start")
    assert not response.success
    assert "singularity margin" in response.message or "closure at t =" in response.message, response.message


def test_a_closed_loop_file_that_drives_a_link_into_the_robot_is_refused_naming_the_links(
    context: Context, graph: Callable[..., RosGraph], tmp_path: Path
) -> None:
    """The five-bar with collision geometry and a post between its motors: a file from home to a pose within every
    limit and the singularity margin whose distal link lies on the post."""
    urdf = five_bar_with_collision_geometry(tmp_path)
    points = rest_to_rest(tuple(ACTUATED), [(0.0, 0.0), (0.9, -0.3)], interval_s=2.0)
    motion = executed_motion(points, check_rate_hz=100.0)
    path = tmp_path / "into_the_post.csv"
    write_trajectory_csv(path, SampledTrajectory(motion.time, motion.q, motion.dq, motion.ddq, points.joint_names))
    excitation = five_bar_node(ExcitationNode, context, "excitation", urdf=str(urdf), mode="file", file=str(path))
    g = graph(excitation)
    assert excitation.wait_for_plan(60.0)
    assert excitation.state == "failed" and excitation.plan is None
    response = g.call(f"/{NAMESPACE}/excitation/start")
    assert not response.success
    assert "self-collision" in response.message and "plate_0" in response.message, response.message


def test_a_closed_loop_ramp_in_from_the_robots_position_is_checked_for_self_collision(tmp_path: Path) -> None:
    """Holding home, ramped in from a pose whose distal link lies on the post of the five-bar with collision
    geometry: refused with the collision model, played without it."""
    model = ClosedLoopModel.from_config(
        five_bar_with_collision_geometry(tmp_path), loop_closures=FIVE_BAR_CLOSURES, actuated_joints=ACTUATED
    )
    settings = load_excitation_settings(FIVE_BAR_CONFIG)
    collision = settings.collision_model(model.robot, joined=model.closure_joints)
    limits = MechanismLimits.from_settings(model, settings)
    torques = TorqueModel.nominal(model, FIVE_BAR_CHAIN, DriveTerms())
    held = rest_to_rest(tuple(ACTUATED), [(0.0, 0.0), (0.0, 0.0)], interval_s=1.0)
    on_the_post = np.array([0.9, -0.3])
    played = checked_playback(held, on_the_post, model, limits, rate_hz=100.0, torque_model=torques)
    assert_allclose(played.q[0], on_the_post)
    with pytest.raises(SelfCollisionError, match="plate_0"):
        checked_playback(held, on_the_post, model, limits, rate_hz=100.0, torque_model=torques, collision=collision)


def _five_bar_samples(seconds: float, rate_hz: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stamps (s), every tree joint's positions, the motors' velocities and joint torques of a Fourier motion.

    Torques: constrained inverse dynamics with the sim_robot drive terms plus 1 % noise; positions
    quantised to 14 bits.
    """
    config = load_config(str(FIVE_BAR_CONFIG))
    model = config.closed_loop_model(FIVE_BAR_URDF)
    sim = simulated_robot(FIVE_BAR_CONFIG, 2)
    rng = np.random.default_rng(5)
    t = np.arange(0.0, seconds, 1.0 / rate_hz)
    q, dq, ddq = fourier_motion(t, 2, rng)
    motion = model.complete_motion(q, dq, ddq)
    torques = inverse_dynamics(model, sim.drive_chain, sim.drive, motion.q, motion.dq, motion.ddq)
    torques = torques + rng.normal(0.0, 0.01 * float(np.sqrt(np.mean(torques**2))), torques.shape)
    step = 2.0 * np.pi / 2**14
    return t, np.round(motion.q / step) * step, dq, torques


def test_the_estimator_node_identifies_the_five_bar_from_samples_of_every_tree_joint(
    context: Context, graph: Callable[..., RosGraph]
) -> None:
    estimator = five_bar_node(
        EstimatorNode,
        context,
        "estimator",
        **{"window.max_condition_number": 1e4, "window.update_period_s": 2.0, "signal.decimation": 5},
    )
    g = graph(estimator)
    published: list[String] = g.record(String, "estimator/parameters", LATCHED_QOS)
    samples = g.probe.create_publisher(JointState, "recorder/samples", SAMPLES_QOS)
    assert estimator.joint_names == ACTUATED
    g.spin(20.0, until=lambda: samples.get_subscription_count() > 0)
    stamps, q, _, torques = _five_bar_samples(10.0, 250.0)
    model = estimator.closed_loop
    assert model is not None
    effort = np.zeros_like(q)
    effort[:, model.actuated] = torques
    names = list(model.joint_names)
    for first in range(0, stamps.size, 250):
        last = min(first + 250, stamps.size)
        for k in range(first, last):
            samples.publish(joint_state_message(names, int((1000.0 + stamps[k]) * 1e9), q[k], None, effort[k]))
        g.spin(5.0, until=lambda last=last: int(diagnostic_values(estimator)["samples_received"]) >= last)
    g.spin(60.0, until=lambda: bool(published))
    assert published, estimator.diagnostic_status().message
    parameters = parse_parameters(published[-1].data)
    assert parameters.closed_loop and parameters.joints == tuple(ACTUATED)
    assert parameters.loop_closures[0].frame_a == "tip_1"


def diagnostic_values(node: EstimatorNode | FeedforwardNode) -> dict[str, str]:
    return {kv.key: kv.value for kv in node.diagnostic_status().values}


def test_the_feedforward_node_publishes_the_actuated_torques_of_a_closed_loop_file(
    context: Context, graph: Callable[..., RosGraph], tmp_path: Path
) -> None:
    config = load_config(str(FIVE_BAR_CONFIG))
    model = config.closed_loop_model(FIVE_BAR_URDF)
    sim = simulated_robot(FIVE_BAR_CONFIG, 2)
    base = base_parameters(model, sim.drive_chain, config.drive_terms)
    truth = base.from_standard(standard_parameters(model, config.drive_terms, sim.drive))
    path = tmp_path / "five_bar_true.yaml"
    write_parameters_atomic(
        path,
        ParameterFile.create(
            urdf=FIVE_BAR_URDF,
            joints=model.actuated_joint_names,
            drive_terms=config.drive_terms,
            drive_chain=sim.drive_chain,
            names=base.names,
            values=truth,
            closed_loop=model,
        ),
    )
    node = FeedforwardNode(
        context=context,
        namespace=NAMESPACE,
        parameter_overrides=[Parameter("parameters_file", value=str(path)), Parameter("parameters_topic", value="")],
    )
    g = graph(node)
    outputs: list[Float64MultiArray] = g.record(Float64MultiArray, "feedforward/effort", COMMAND_QOS)
    trajectory = g.probe.create_publisher(JointTrajectory, "joint_trajectory", COMMAND_QOS)
    assert node.model is not None and node.model.mechanism.closures
    g.spin(20.0, until=lambda: trajectory.get_subscription_count() > 0)
    pose = [0.3, -0.2]
    message = JointTrajectory(joint_names=ACTUATED)
    message.points = [JointTrajectoryPoint(positions=pose, velocities=[0.0, 0.0], accelerations=[0.0, 0.0])]
    trajectory.publish(message)
    g.spin(10.0, until=lambda: len(outputs) > 5)
    assert outputs, node.diagnostic_status().message
    expected = FeedforwardModel.from_yaml(path).torques(np.array(pose), np.zeros(2), np.zeros(2))
    assert_allclose(np.array(outputs[-1].data), expected, rtol=1e-9, atol=1e-12)
    # A trajectory naming the passive joints too is accepted; their points are ignored.
    message = JointTrajectory(joint_names=list(model.joint_names))
    message.points = [JointTrajectoryPoint(positions=[0.3, 0.0, -0.2, 0.0])]
    trajectory.publish(message)
    g.spin(1.0)
    assert diagnostic_values(node)["trajectory_error"] == ""


def test_the_closures_are_declared_read_only_with_the_schemas_description(context: Context) -> None:
    """Each ``robot.loop_closures.<name>.<field>`` given is declared with the descriptor of the schema's setting."""
    node = five_bar_node(SimRobotNode, context, "sim_robot")
    try:
        names = sorted(name for name in node.list_parameters([], 0).names if name.startswith("robot."))
        expected = [f"robot.loop_closures.distal_tip.{field}" for field in ("frame_a", "frame_b", "type")]
        assert names == ["robot.actuated_joints", *expected]
        for descriptor in node.describe_parameters(expected):
            assert descriptor.read_only and descriptor.description == setting("robot.loop_closures").description
        assert node.get_parameter(expected[0]).value == "tip_1"
    finally:
        node.destroy_node()


def test_actuated_joints_without_loop_closures_are_refused_at_start(context: Context) -> None:
    with pytest.raises(ValueError, match=r"robot.actuated_joints .* give robot.loop_closures too"):
        EstimatorNode(
            context=context,
            namespace=NAMESPACE,
            parameter_overrides=[
                Parameter("urdf", value=str(FIVE_BAR_URDF)),
                Parameter("robot.actuated_joints", value=ACTUATED),
                Parameter("drive_chain.drive_gains", value=[0.08, 0.08]),
            ],
        )
