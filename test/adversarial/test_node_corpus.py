"""Adversarial corpus of the nodes: malformed, non-finite and absurd messages on every input topic.

Each node runs over real rclpy on loopback with a probe that publishes one bad message
per case. Every case must be a *counted refusal* (the node's own counter, or its
``refused/…`` count in the diagnostics, goes up by one), raise nothing out of the
executor (no callback failure either: the node saw it coming), and leave the node
working: the next valid message is taken. ``test_the_node_processes_survive`` sends the
worst of them to the node *processes* and checks they are still running.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import rclpy
import yaml
from builtin_interfaces.msg import Duration
from rclpy.context import Context
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from arm6_drives import ARM6_DRIVE
from dynamic_identification.core.mechanism.robot import DriveTerms, load_robot
from dynamic_identification.io.config import load_config
from dynamic_identification.io.parameters import dump_parameters
from dynamic_identification.nodes.conversions import joint_trajectory_message
from dynamic_identification.nodes.estimator import SAMPLES_QOS, EstimatorNode
from dynamic_identification.nodes.excitation import ExcitationNode
from dynamic_identification.nodes.feedforward import FeedforwardNode
from dynamic_identification.nodes.guarded import GuardedNode
from dynamic_identification.nodes.qos import COMMAND_QOS, LATCHED_QOS, SENSOR_QOS
from dynamic_identification.nodes.recorder import STREAM_QOS, RecorderNode
from dynamic_identification.nodes.sim_robot import SimRobotNode
from repo_paths import ARM6_CONFIG, ARM6_URDF
from ros_graph import RosGraph
from true_parameters import true_parameter_file

JOINTS = [f"joint_{k}" for k in range(1, 7)]
ZERO = [0.0] * 6
WAIT_S = 20.0


def stamped(k: int) -> int:
    """Stamps that always increase across cases, ns (1000 s + 2 ms steps)."""
    return 1_000 * 10**9 + k * 2_000_000


def trajectory(names: list[str], positions: list[list[float]], times: list[float], **fields: Any) -> JointTrajectory:
    message = JointTrajectory()
    message.joint_names = names
    for k, (q, t) in enumerate(zip(positions, times, strict=True)):
        point = JointTrajectoryPoint()
        point.positions = q
        for name, values in fields.items():
            setattr(point, name, values[k])
        seconds = math.floor(t)
        point.time_from_start = Duration(sec=int(seconds), nanosec=int(round((t - seconds) * 1e9)))
        message.points.append(point)
    return message


def joint_state(names: list[str], k: int, **fields: Any) -> JointState:
    message = JointState()
    message.header.stamp.sec, message.header.stamp.nanosec = divmod(stamped(k), 10**9)
    message.name = names
    for name, values in fields.items():
        setattr(message, name, values)
    return message


def billion_laughs_yaml() -> str:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):
        previous, name = chr(ord("a") + level - 1), chr(ord("a") + level)
        lines.append(f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]")
    return "\n".join(lines) + "\nformat: *i\n"


@dataclass
class Harness:
    """A node, a probe that publishes to it, and how to tell a refusal and a valid input apart."""

    graph: RosGraph
    node: GuardedNode
    publishers: dict[str, Any]
    refused: Callable[[str], int]
    good: dict[str, Callable[[int], Any]]
    taken: Callable[[str], int]
    sent: int = 0

    def spin_until(self, predicate: Callable[[], bool]) -> bool:
        return self.graph.spin_until(predicate, WAIT_S)

    def send(self, topic: str, message: Any) -> None:
        self.publishers[topic].publish(message)

    def takes(self, topic: str, message: Any) -> bool:
        """Publish a valid ``message``: taken."""
        taken_before = self.taken(topic)
        self.send(topic, message)
        self.sent += 1
        return self.spin_until(lambda: self.taken(topic) > taken_before)

    def refuses(self, topic: str, message: Any) -> tuple[bool, bool]:
        """Publish ``message``: (refused and counted, the next valid message taken)."""
        before, failures = self.refused(topic), self.node.callback_failure_count
        self.send(topic, message)
        counted = self.spin_until(lambda: self.refused(topic) > before) and self.refused(topic) == before + 1
        self.sent += 1
        taken_before = self.taken(topic)
        self.send(topic, self.good[topic](self.sent))
        alive = self.spin_until(lambda: self.taken(topic) > taken_before)
        return counted and self.node.callback_failure_count == failures, alive

    def close(self) -> None:
        self.graph.close()
        self.graph.context.try_shutdown()


def harness(
    make: Callable[[Context], GuardedNode],
    topics: dict[str, tuple[type, QoSProfile]],
    refused: Callable[[GuardedNode, str], int],
    good: dict[str, Callable[[int], Any]],
    taken: Callable[[GuardedNode, str], int],
) -> Harness:
    context = Context()
    rclpy.init(context=context)
    graph = RosGraph(context, name="corpus_probe")
    node = graph.add(make(context))
    publishers = {topic: graph.probe.create_publisher(kind, topic, qos) for topic, (kind, qos) in topics.items()}
    item = Harness(graph, node, publishers, lambda t: refused(node, t), good, lambda t: taken(node, t))
    ready = item.spin_until(lambda: all(p.get_subscription_count() > 0 for p in publishers.values()))
    assert ready
    return item


def refusals(node: GuardedNode, label: str) -> int:
    item = node.refusals().get(label)
    return 0 if item is None else item.count


# ----------------------------------------------------------------------------------------------------------
# recorder


def recorder_refused(node: RecorderNode, topic: str) -> int:
    values = {kv.key: kv.value for kv in node.diagnostic_status().values}
    label = "joint_states" if topic == "/joint_states" else "motor_currents"
    kinds = ("refused", "rejected_nan", "rejected_duplicate", "rejected_out_of_order")
    return sum(int(values[f"{label}_{kind}"]) for kind in kinds)


def recorder_taken(node: RecorderNode, topic: str) -> int:
    stats = node.aligner.stats if node.aligner is not None else None
    if stats is None:
        return 0
    return stats.joint_states.accepted if topic == "/joint_states" else stats.currents.accepted


@pytest.fixture(scope="module")
def recorder() -> Iterator[Harness]:
    overrides = [
        Parameter("joints", value=JOINTS),
        Parameter("drive_chain.gear_ratios", value=[100.0] * 6),
        Parameter("drive_chain.drive_gains", value=[0.4] * 6),
    ]
    item = harness(
        lambda context: RecorderNode(context=context, parameter_overrides=overrides),
        {"/joint_states": (JointState, STREAM_QOS), "/motor_currents": (JointState, STREAM_QOS)},
        recorder_refused,
        {
            "/joint_states": lambda k: joint_state(JOINTS, 10_000 + k, position=ZERO),
            "/motor_currents": lambda k: joint_state(JOINTS, 10_000 + k, effort=ZERO),
        },
        recorder_taken,
    )
    yield item
    item.close()


RECORDER_CASES: dict[str, tuple[str, Callable[[], Any]]] = {
    "js-nan-position": ("/joint_states", lambda: joint_state(JOINTS, 1, position=[math.nan, *ZERO[1:]])),
    "js-inf-velocity": ("/joint_states", lambda: joint_state(JOINTS, 2, position=ZERO, velocity=[math.inf] * 6)),
    "js-short-positions": ("/joint_states", lambda: joint_state(JOINTS, 3, position=[0.0, 0.0])),
    "js-missing-joint": ("/joint_states", lambda: joint_state(JOINTS[:5], 4, position=ZERO[:5])),
    "js-no-positions": ("/joint_states", lambda: joint_state(JOINTS, 5, velocity=ZERO)),
    "js-no-names": ("/joint_states", lambda: joint_state([], 6)),
    "js-repeated-joint": ("/joint_states", lambda: joint_state([*JOINTS, "joint_1"], 7, position=[0.0] * 7)),
    "js-empty-names": ("/joint_states", lambda: joint_state([""] * 6, 8, position=ZERO)),
    "js-stamp-back": ("/joint_states", lambda: joint_state(JOINTS, 10_000, position=ZERO)),
    "currents-nan": ("/motor_currents", lambda: joint_state(JOINTS, 9, effort=[math.nan] * 6)),
    "currents-none": ("/motor_currents", lambda: joint_state(JOINTS, 10, position=ZERO)),
    "currents-missing-joint": ("/motor_currents", lambda: joint_state(JOINTS[1:], 11, effort=ZERO[1:])),
    "currents-long-effort": ("/motor_currents", lambda: joint_state(JOINTS, 12, effort=[0.0] * 600)),
}


@pytest.mark.parametrize("name", sorted(RECORDER_CASES))
def test_recorder_counts_the_refusal_and_goes_on(recorder: Harness, name: str) -> None:
    topic, build = RECORDER_CASES[name]
    if recorder.sent == 0:  # the first valid samples set the joints and the time base
        assert recorder.takes("/joint_states", recorder.good["/joint_states"](0))
    counted, alive = recorder.refuses(topic, build())
    assert counted and alive


# ----------------------------------------------------------------------------------------------------------
# estimator


def estimator_counts(node: EstimatorNode) -> dict[str, str]:
    return {kv.key: kv.value for kv in node.diagnostic_status().values}


@pytest.fixture(scope="module")
def estimator() -> Iterator[Harness]:
    item = harness(
        lambda context: EstimatorNode(context=context),
        {"/recorder/samples": (JointState, SAMPLES_QOS)},
        lambda node, _: int(estimator_counts(node)["samples_refused"]),
        {"/recorder/samples": lambda k: joint_state(JOINTS, 10_000 + k, position=ZERO, effort=ZERO)},
        lambda node, _: int(estimator_counts(node)["samples_accepted"]),
    )
    yield item
    item.close()


ESTIMATOR_CASES: dict[str, Callable[[], Any]] = {
    "nan-position": lambda: joint_state(JOINTS, 1, position=[math.nan] * 6, effort=ZERO),
    "inf-effort": lambda: joint_state(JOINTS, 2, position=ZERO, effort=[-math.inf] * 6),
    "no-effort": lambda: joint_state(JOINTS, 3, position=ZERO),
    "no-position": lambda: joint_state(JOINTS, 4, effort=ZERO),
    "missing-joint": lambda: joint_state(JOINTS[:-1], 5, position=ZERO[:-1], effort=ZERO[:-1]),
    "short-effort": lambda: joint_state(JOINTS, 6, position=ZERO, effort=[1.0]),
    "repeated-joint": lambda: joint_state(["joint_1", *JOINTS], 7, position=[0.0] * 7, effort=[0.0] * 7),
    "stamp-slightly-back": lambda: joint_state(JOINTS, 9_990, position=ZERO, effort=ZERO),
}


@pytest.mark.parametrize("name", sorted(ESTIMATOR_CASES))
def test_estimator_counts_the_refusal_and_goes_on(estimator: Harness, name: str) -> None:
    if estimator.sent == 0:
        assert estimator.takes("/recorder/samples", estimator.good["/recorder/samples"](0))
    counted, alive = estimator.refuses("/recorder/samples", ESTIMATOR_CASES[name]())
    assert counted and alive


# ----------------------------------------------------------------------------------------------------------
# feedforward


@pytest.fixture(scope="module")
def parameters_yaml() -> str:
    robot = load_robot(ARM6_URDF)
    chain = load_config(str(ARM6_CONFIG)).drive_chain(robot.n_joints)
    return dump_parameters(true_parameter_file(robot, chain, DriveTerms(), ARM6_DRIVE, urdf=str(ARM6_URDF)))


def feedforward_taken(node: FeedforwardNode, topic: str) -> int:
    if topic == "/joint_trajectory":
        return 0 if node.motion is None else node.motion.start_ns
    return 0 if node.model is None else int(node._stamp * 1000)


@pytest.fixture(scope="module")
def feedforward(parameters_yaml: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    path = tmp_path_factory.mktemp("feedforward") / "params.yaml"
    path.write_text(parameters_yaml, encoding="utf-8")
    document = yaml.safe_load(parameters_yaml)

    def good_parameters(k: int) -> String:
        document["stamp"] = float(k)
        return String(data=yaml.safe_dump(document))

    item = harness(
        lambda context: FeedforwardNode(
            context=context,
            parameter_overrides=[Parameter("parameters_file", value=str(path)), Parameter("rate_hz", value=20.0)],
        ),
        {"/joint_trajectory": (JointTrajectory, COMMAND_QOS), "/estimator/parameters": (String, LATCHED_QOS)},
        lambda node, topic: refusals(node, "trajectory" if topic == "/joint_trajectory" else "parameters"),
        {
            "/joint_trajectory": lambda k: joint_trajectory_message(
                JOINTS, np.array([0.5, 1.0]), np.zeros((2, 6)), stamp_ns=stamped(k)
            ),
            "/estimator/parameters": good_parameters,
        },
        feedforward_taken,
    )
    yield item
    item.close()


def laughs_parameters() -> String:
    return String(data=billion_laughs_yaml())


FEEDFORWARD_CASES: dict[str, tuple[str, Callable[[str], Any]]] = {
    "trajectory-nan-position": ("/joint_trajectory", lambda _: trajectory(JOINTS, [[math.nan] * 6], [1.0])),
    "trajectory-inf-velocity": (
        "/joint_trajectory",
        lambda _: trajectory(JOINTS, [ZERO], [1.0], velocities=[[math.inf] * 6]),
    ),
    "trajectory-no-points": ("/joint_trajectory", lambda _: trajectory(JOINTS, [], [])),
    "trajectory-unknown-joint": ("/joint_trajectory", lambda _: trajectory(["elbow"], [[0.1]], [1.0])),
    "trajectory-times-backwards": ("/joint_trajectory", lambda _: trajectory(JOINTS, [ZERO, ZERO], [2.0, 1.0])),
    "trajectory-negative-time": ("/joint_trajectory", lambda _: trajectory(JOINTS, [ZERO], [-1.5])),
    "trajectory-short-point": ("/joint_trajectory", lambda _: trajectory(JOINTS, [[0.0, 0.0]], [1.0])),
    "trajectory-repeated-joint": (
        "/joint_trajectory",
        lambda _: trajectory([*JOINTS, "joint_1"], [[0.0] * 7], [1.0]),
    ),
    "parameters-not-yaml": ("/estimator/parameters", lambda _: String(data="format: [\n")),
    "parameters-billion-laughs": ("/estimator/parameters", lambda _: laughs_parameters()),
    "parameters-empty-list": (
        "/estimator/parameters",
        lambda text: String(data=text.replace("parameters:\n", "parameters: []\nunused:\n", 1)),
    ),
    "parameters-unknown-regression": (
        "/estimator/parameters",
        lambda text: String(data=text.replace("regression: idim", "regression: oracle")),
    ),
    "parameters-10MB-string": ("/estimator/parameters", lambda _: String(data="x" * 10_000_000)),
    "parameters-unknown-joint": (
        "/estimator/parameters",
        lambda text: String(data=text.replace("joint_6", "joint_9")),
    ),
    "parameters-nan-value": (
        "/estimator/parameters",
        lambda text: String(data=text.replace("value: 0.1,", "value: .nan,", 1)),
    ),
}


@pytest.mark.parametrize("name", sorted(FEEDFORWARD_CASES))
def test_feedforward_counts_the_refusal_and_goes_on(feedforward: Harness, parameters_yaml: str, name: str) -> None:
    topic, build = FEEDFORWARD_CASES[name]
    counted, alive = feedforward.refuses(topic, build(parameters_yaml))
    assert counted and alive


# ----------------------------------------------------------------------------------------------------------
# excitation


@pytest.fixture(scope="module")
def excitation() -> Iterator[Harness]:
    item = harness(
        lambda context: ExcitationNode(
            context=context, parameter_overrides=[Parameter("optimise", value=False), Parameter("harmonics", value=2)]
        ),
        {"/joint_states": (JointState, SENSOR_QOS)},
        lambda node, _: refusals(node, "joint_states"),
        {"/joint_states": lambda k: joint_state(JOINTS, 10_000 + k, position=ZERO, velocity=ZERO)},
        lambda node, _: 0 if node._joint_state is None else node._joint_state[0],
    )
    yield item
    item.close()


EXCITATION_CASES: dict[str, Callable[[], Any]] = {
    "nan-position": lambda: joint_state(JOINTS, 1, position=[math.nan] * 6),
    "inf-position": lambda: joint_state(JOINTS, 2, position=[math.inf] * 6),
    "position-1e9-rad": lambda: joint_state(JOINTS, 3, position=[1e9] * 6),
    "position-in-degrees": lambda: joint_state(JOINTS, 4, position=[90.0] * 6),
    "nan-velocity": lambda: joint_state(JOINTS, 5, position=ZERO, velocity=[math.nan] * 6),
    "missing-joint": lambda: joint_state(JOINTS[:3], 6, position=ZERO[:3]),
    "no-positions": lambda: joint_state(JOINTS, 7, velocity=ZERO),
}


@pytest.mark.parametrize("name", sorted(EXCITATION_CASES))
def test_excitation_counts_the_refusal_and_goes_on(excitation: Harness, name: str) -> None:
    counted, alive = excitation.refuses("/joint_states", EXCITATION_CASES[name]())
    assert counted and alive


def test_excitation_refuses_to_start_on_an_implausible_joint_state(excitation: Harness) -> None:
    assert excitation.node.wait_for_plan(60.0)
    excitation.send("/joint_states", joint_state(JOINTS, 50, position=[1e9] * 6))
    assert excitation.spin_until(lambda: excitation.node._joint_state_error is not None)
    response = excitation.node._start()
    assert not response.success and "1e+09" in response.message


# ----------------------------------------------------------------------------------------------------------
# sim_robot


@pytest.fixture(scope="module")
def sim_robot() -> Iterator[Harness]:
    item = harness(
        lambda context: SimRobotNode(context=context, parameter_overrides=[Parameter("rate_hz", value=100.0)]),
        {"/joint_trajectory": (JointTrajectory, COMMAND_QOS), "/feedforward/effort": (Float64MultiArray, COMMAND_QOS)},
        lambda node, topic: refusals(node, topic.strip("/")),
        {
            "/joint_trajectory": lambda k: joint_trajectory_message(
                JOINTS, np.array([0.5]), np.zeros((1, 6)), stamp_ns=stamped(k)
            ),
            "/feedforward/effort": lambda k: Float64MultiArray(data=[0.001 * k] * 6),
        },
        lambda node, topic: (
            node._reference.start_ns
            if topic == "/joint_trajectory"
            else (0 if node._feedforward is None else round(1000 * float(node._feedforward[0][0])))
        ),
    )
    yield item
    item.close()


def offset_effort() -> Float64MultiArray:
    message = Float64MultiArray(data=ZERO)
    message.layout.data_offset = 4_000_000_000
    return message


SIM_CASES: dict[str, tuple[str, Callable[[], Any]]] = {
    "trajectory-nan": ("/joint_trajectory", lambda: trajectory(JOINTS, [[math.nan] * 6], [1.0])),
    "trajectory-1e9-rad": ("/joint_trajectory", lambda: trajectory(JOINTS, [[1e9] * 6], [1.0])),
    "trajectory-unknown-joint": ("/joint_trajectory", lambda: trajectory(["wrist_9"], [[0.0]], [1.0])),
    "effort-nan": ("/feedforward/effort", lambda: Float64MultiArray(data=[math.nan] * 6)),
    "effort-too-few": ("/feedforward/effort", lambda: Float64MultiArray(data=[1.0, 2.0])),
    "effort-1e300": ("/feedforward/effort", lambda: Float64MultiArray(data=[1e300] * 6)),
    "effort-huge-offset": ("/feedforward/effort", offset_effort),
}


@pytest.mark.parametrize("name", sorted(SIM_CASES))
def test_sim_robot_counts_the_refusal_and_goes_on(sim_robot: Harness, name: str) -> None:
    topic, build = SIM_CASES[name]
    counted, alive = sim_robot.refuses(topic, build())
    assert counted and alive
