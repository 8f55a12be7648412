"""The feedforward node over real rclpy on loopback: model from a file or the latched topic, torques of the
interpolated desired state, the enable switch, and its pure trajectory bookkeeping."""

from __future__ import annotations

import dataclasses
import os
import pathlib
from collections.abc import Iterator

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticStatus
from numpy.testing import assert_allclose
from rclpy.context import Context
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory

from dynamic_identification.core.excitation.trajectory import interpolate_trajectory
from dynamic_identification.core.feedforward import DESIRED_STATE_TOLERANCE
from dynamic_identification.core.mechanism.robot import (
    DriveChain,
    DriveParameters,
    DriveTerms,
    load_robot,
)
from dynamic_identification.feedforward import FeedforwardModel
from dynamic_identification.io.parameters import ParameterFile, dump_parameters, write_parameters_atomic
from dynamic_identification.io.urdf_location import urdf_sha256
from dynamic_identification.nodes.conversions import (
    NS_PER_S,
    float64_array,
    joint_trajectory_message,
    time_message,
)
from dynamic_identification.nodes.feedforward import FeedforwardNode, next_motion
from dynamic_identification.nodes.qos import COMMAND_QOS, LATCHED_QOS
from ros_graph import RosGraph
from true_parameters import true_parameter_file

JOINTS = ("joint_1", "joint_2", "joint_3", "joint_4", "joint_5", "joint_6")
NAMESPACE = f"feedforward_test_{os.getpid()}"
"""The nodes and probe of these tests run in a namespace of this process: another run sharing the
ROS domain cannot hand them a latched message."""


def _parameter_file(urdf: pathlib.Path, *, scale: float = 1.0, stamp: float = 1.0) -> ParameterFile:
    """True base parameters of the shipped arm (times ``scale``) as a parameter file."""
    robot = load_robot(urdf)
    chain = DriveChain.create(6, gear_ratios=[100.0, 100.0, 80.0, 60.0, 60.0, 50.0])
    terms = DriveTerms()
    drive = DriveParameters.create(
        6, viscous=[6.9, 4.5, 1.6, 0.85, 1.6, 0.5], coulomb=[6.7, 7.9, 6.3, 2.6, 2.7, 1.8], offset=[0.3] * 6
    )
    return true_parameter_file(robot, chain, terms, drive, urdf=str(urdf), scale=scale, stamp=stamp)


@pytest.fixture(scope="module")
def parameters(arm6_urdf: pathlib.Path) -> ParameterFile:
    return _parameter_file(arm6_urdf)


@pytest.fixture
def parameters_path(parameters: ParameterFile, tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "params.yaml"
    write_parameters_atomic(path, parameters)
    return path


class _Graph(RosGraph):
    """A probe node that commands trajectories, publishes parameters and /clock, and records the outputs."""

    def __init__(self, context: Context) -> None:
        super().__init__(context, name="feedforward_probe", namespace=NAMESPACE)
        self.efforts: list[np.ndarray] = self.record(
            Float64MultiArray, "feedforward/effort", COMMAND_QOS, convert=float64_array
        )
        self.diagnostics = self.record_diagnostics(f"{NAMESPACE}/feedforward")
        self.trajectory = self.probe.create_publisher(JointTrajectory, "joint_trajectory", COMMAND_QOS)
        self.clock = self.probe.create_publisher(Clock, "/clock", 10)

    def start(self, overrides: list[Parameter]) -> FeedforwardNode:
        return self.add(FeedforwardNode(context=self.context, namespace=NAMESPACE, parameter_overrides=overrides))

    def send(self, message: JointTrajectory) -> None:
        self.spin(20.0, until=lambda: self.trajectory.get_subscription_count() > 0)
        self.trajectory.publish(message)

    def effort_at(self, stamp_ns: int) -> np.ndarray:
        """Set the simulated clock to ``stamp_ns`` and return the next published feedforward."""
        count = len(self.efforts)
        self.clock.publish(Clock(clock=time_message(stamp_ns)))
        self.spin(20.0, until=lambda: len(self.efforts) > count)
        assert len(self.efforts) > count, f"no feedforward published at {stamp_ns} ns"
        return self.efforts[-1]


@pytest.fixture
def graph(context: Context) -> Iterator[_Graph]:
    made = _Graph(context)
    try:
        yield made
    finally:
        made.close()


def _trajectory() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Three way points over 2 s with velocities and accelerations (quintic interpolation)."""
    times = np.array([0.0, 1.0, 2.0])
    q = np.array([[0.0, 0.1, -0.2, 0.0, 0.3, 0.0], [0.4, -0.2, 0.1, 0.5, -0.1, 0.8], [0.6, 0.3, 0.3, 0.2, 0.2, 1.2]])
    dq = np.array([np.zeros(6), [0.3, -0.4, 0.5, 0.2, -0.3, 0.6], np.zeros(6)])
    ddq = np.array([np.zeros(6), [1.0, 0.5, -0.5, 0.3, 0.2, -1.0], np.zeros(6)])
    return times, q, dq, ddq


def test_publishes_the_model_torques_of_the_interpolated_desired_state(
    graph: _Graph, parameters_path: pathlib.Path
) -> None:
    node = graph.start(
        [
            Parameter("parameters_file", value=str(parameters_path)),
            Parameter("use_sim_time", value=True),
            Parameter("rate_hz", value=200.0),
        ]
    )
    expected_model = FeedforwardModel.from_yaml(parameters_path)
    graph.spin(20.0, until=lambda: graph.clock.get_subscription_count() > 0)
    graph.clock.publish(Clock(clock=time_message(NS_PER_S)))
    graph.spin(0.3)
    assert graph.efforts == [], "published before any trajectory"

    times, q, dq, ddq = _trajectory()
    start_ns = 10 * NS_PER_S
    order = [3, 0, 5, 1, 4, 2]  # joints in another order than the model's
    message = joint_trajectory_message(
        [JOINTS[j] for j in order], times, q[:, order], dq[:, order], ddq[:, order], stamp_ns=start_ns
    )
    graph.send(message)
    graph.spin(20.0, until=lambda: node.motion is not None)
    for t in (0.37, 1.0, 1.61):
        published = graph.effort_at(start_ns + round(t * NS_PER_S))
        assert published.shape == (6,)
        desired = interpolate_trajectory(times, q, dq, ddq, t)
        assert np.abs(desired[1]).max() > 0.05  # a moving state: friction, Coriolis and inertia all count
        assert_allclose(published, expected_model.torques(*desired), rtol=1e-12, atol=1e-9)
    # After the last point the robot holds it at rest: gravity and offsets.
    held = graph.effort_at(start_ns + 5 * NS_PER_S)
    assert_allclose(held, expected_model.torques(q[-1], np.zeros(6), np.zeros(6)), rtol=1e-12, atol=1e-9)
    graph.spin(20.0, until=lambda: bool(graph.diagnostics) and graph.diagnostics[-1].message == "publishing")
    assert graph.diagnostics[-1].level == DiagnosticStatus.OK


def test_a_late_node_gets_the_latched_parameters(
    graph: _Graph, parameters: ParameterFile, arm6_urdf: pathlib.Path
) -> None:
    latched = graph.probe.create_publisher(String, "estimator/parameters", LATCHED_QOS)
    published = _parameter_file(arm6_urdf, scale=1.1, stamp=2.0)
    latched.publish(String(data=dump_parameters(published)))
    graph.spin(0.3)
    node = graph.start([])  # started after the only parameter message
    graph.spin(20.0, until=lambda: node.model is not None)
    assert node.model is not None
    assert node.model.names == tuple(entry.name for entry in published.parameters)
    assert_allclose(node.model.values, [entry.value for entry in published.parameters], rtol=0.0, atol=0.0)

    times, q, dq, ddq = _trajectory()
    graph.send(joint_trajectory_message(JOINTS, times, q, dq, ddq))  # stamp 0: start on receipt
    graph.spin(20.0, until=lambda: len(graph.efforts) > 5)
    assert len(graph.efforts) > 5 and all(effort.shape == (6,) for effort in graph.efforts)


def test_a_newer_topic_message_replaces_the_file_and_a_bad_one_is_refused(
    graph: _Graph, parameters_path: pathlib.Path, arm6_urdf: pathlib.Path
) -> None:
    node = graph.start([Parameter("parameters_file", value=str(parameters_path))])
    assert node.model is not None
    from_file = node.model.values.copy()
    latched = graph.probe.create_publisher(String, "estimator/parameters", LATCHED_QOS)
    graph.spin(20.0, until=lambda: latched.get_subscription_count() > 0)
    latched.publish(String(data=dump_parameters(_parameter_file(arm6_urdf, scale=2.0))))
    graph.spin(20.0, until=lambda: node.model is not None and not np.array_equal(node.model.values, from_file))
    assert_allclose(node.model.values, 2.0 * from_file, rtol=1e-12)
    bad = dump_parameters(_parameter_file(arm6_urdf)).replace("dynamic_identification/parameters/v1", "other/v9")
    latched.publish(String(data=bad))
    graph.spin(20.0, until=lambda: bool(graph.diagnostics) and "refused" in graph.diagnostics[-1].message)
    assert_allclose(node.model.values, 2.0 * from_file, rtol=1e-12)  # the previous model stays
    assert "refused parameters" in graph.diagnostics[-1].message and "format" in graph.diagnostics[-1].message


def test_disabled_publishes_nothing_until_enabled(graph: _Graph, parameters_path: pathlib.Path) -> None:
    node = graph.start([Parameter("parameters_file", value=str(parameters_path)), Parameter("enabled", value=False)])
    times, q, dq, ddq = _trajectory()
    graph.send(joint_trajectory_message(JOINTS, times, q, dq, ddq))
    graph.spin(20.0, until=lambda: node.motion is not None)
    graph.spin(0.5)
    assert graph.efforts == []
    graph.spin(20.0, until=lambda: bool(graph.diagnostics))
    assert graph.diagnostics[-1].level == DiagnosticStatus.WARN and "disabled" in graph.diagnostics[-1].message

    assert graph.call("feedforward/enable").success
    graph.spin(20.0, until=lambda: len(graph.efforts) > 3)
    assert len(graph.efforts) > 3
    assert graph.call("feedforward/disable").success
    graph.spin(0.2)
    count = len(graph.efforts)
    graph.spin(0.5)
    assert len(graph.efforts) == count and not node.enabled


def test_without_parameters_nothing_is_published_and_diagnostics_say_why(graph: _Graph) -> None:
    node = graph.start([Parameter("parameters_topic", value="/nobody/publishes/this")])
    times, q, dq, ddq = _trajectory()
    graph.send(joint_trajectory_message(JOINTS, times, q, dq, ddq))
    graph.spin(20.0, until=lambda: node.motion is not None)
    graph.spin(20.0, until=lambda: bool(graph.diagnostics))
    assert graph.efforts == []
    assert "no parameters: waiting for them on /nobody/publishes/this" in graph.diagnostics[-1].message


def test_refuses_a_missing_parameters_file_naming_the_parameter(context: Context, tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="'parameters_file'.*not found"):
        FeedforwardNode(
            context=context, parameter_overrides=[Parameter("parameters_file", value=str(tmp_path / "none.yaml"))]
        )


def test_joints_left_out_of_a_trajectory_hold_their_desired_position() -> None:
    times, q, dq, ddq = _trajectory()
    first = next_motion(None, joint_trajectory_message(JOINTS, times, q, dq, ddq, stamp_ns=NS_PER_S), 0)
    # A second trajectory for joint_2 only, starting at 3 s after the first ended.
    second_message = joint_trajectory_message(["joint_2"], [0.5], [[-0.4]], stamp_ns=3 * NS_PER_S)
    second = next_motion(first, second_message, 0)
    assert second.joints == JOINTS
    q_mid, dq_mid, _ = second.at(round(3.25 * NS_PER_S))
    assert_allclose(np.delete(q_mid, 1), np.delete(q[-1], 1), atol=1e-12)  # the others hold the first's end
    assert_allclose(np.delete(dq_mid, 1), 0.0, atol=1e-12)
    assert_allclose(q_mid[1], 0.5 * (q[-1, 1] - 0.4), atol=1e-12)  # linear from the held position to -0.4
    q_end, dq_end, _ = second.at(4 * NS_PER_S)
    assert_allclose(q_end[1], -0.4, atol=1e-12)
    assert_allclose(dq_end, 0.0, atol=1e-12)


def test_a_desired_state_beyond_the_velocity_limit_publishes_the_torques_at_the_limit_counted_at_warn(
    graph: _Graph, parameters_path: pathlib.Path
) -> None:
    node = graph.start(
        [Parameter("parameters_file", value=str(parameters_path)), Parameter("use_sim_time", value=True)]
    )
    graph.spin(20.0, until=lambda: graph.clock.get_subscription_count() > 0)
    times = np.array([0.0, 1.0])
    q = np.zeros((2, 6))
    dq = np.zeros((2, 6))
    dq[:, 0] = 1e6  # rad/s: a runaway planner
    graph.send(joint_trajectory_message(JOINTS, times, q, dq, np.zeros((2, 6)), stamp_ns=10 * NS_PER_S))
    graph.spin(20.0, until=lambda: node.motion is not None)

    effort = graph.effort_at(10 * NS_PER_S + NS_PER_S // 2)

    model, motion = node.model, node.motion
    assert model is not None and motion is not None
    q_now, dq_now, ddq_now = motion.at(10 * NS_PER_S + NS_PER_S // 2)
    assert abs(dq_now[0]) > 1e3 * model.velocity_limits[0]
    bound = 1.0 + DESIRED_STATE_TOLERANCE  # the desired state taken at its limits, not extrapolated
    at_limits = (
        np.clip(dq_now, -bound * model.velocity_limits, bound * model.velocity_limits),
        np.clip(ddq_now, -bound * model.acceleration_limits, bound * model.acceleration_limits),
    )
    assert_allclose(effort, model.torques(q_now, *at_limits), rtol=0.0, atol=1e-9)
    assert np.all(np.isfinite(effort)) and np.all(np.abs(effort) <= model.effort_limits)
    status = node.diagnostic_status()
    values = {kv.key: kv.value for kv in status.values}
    assert int(values["limited_desired_states"]) >= 1
    assert status.level == DiagnosticStatus.WARN and "desired velocity of joint_1" in status.message


def test_torques_beyond_the_effort_limits_are_clamped_and_reported_at_warn(
    graph: _Graph, arm6_urdf: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    # 200 N·m: within the plausibility gates' 1.5 × 150 N·m, so the model is used, and beyond the limit of 150.
    path = tmp_path / "heavy.yaml"
    write_parameters_atomic(path, _edited(_parameter_file(arm6_urdf), {"off2": 200.0}))
    node = graph.start([Parameter("parameters_file", value=str(path)), Parameter("use_sim_time", value=True)])
    graph.spin(20.0, until=lambda: graph.clock.get_subscription_count() > 0)
    times, q, dq, ddq = _trajectory()
    graph.send(joint_trajectory_message(JOINTS, times, q, dq, ddq, stamp_ns=10 * NS_PER_S))
    graph.spin(20.0, until=lambda: node.motion is not None)
    effort = graph.effort_at(10 * NS_PER_S + NS_PER_S // 2)
    assert np.all(np.isfinite(effort)) and np.all(np.abs(effort) <= node.model.robot.effort_limits)
    assert effort[1] == pytest.approx(150.0)
    status = node.diagnostic_status()
    assert status.level == DiagnosticStatus.WARN and "clamped" in status.message
    assert int({kv.key: kv.value for kv in status.values}["clamped"]) >= 1


def _edited(parameters: ParameterFile, values: dict[str, float]) -> ParameterFile:
    """``parameters`` with the values of the parameters ``values`` names replaced."""
    entries = tuple(
        dataclasses.replace(entry, value=values[entry.name]) if entry.name in values else entry
        for entry in parameters.parameters
    )
    return dataclasses.replace(parameters, parameters=entries)


IMPLAUSIBLE = {"Fc2": 5e6, "Fv3": -300.0}
"""A Coulomb friction no drive overcomes and a negative viscous friction: every torque would sit at a limit."""


def test_an_implausible_parameters_file_is_refused_at_start_naming_the_gates(
    context: Context, arm6_urdf: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    path = tmp_path / "implausible.yaml"
    write_parameters_atomic(path, _edited(_parameter_file(arm6_urdf), IMPLAUSIBLE))
    with pytest.raises(ValueError, match="'parameters_file'.*implausible model") as refused:
        FeedforwardNode(context=context, parameter_overrides=[Parameter("parameters_file", value=str(path))])
    message = str(refused.value)
    assert "\n" not in message and "Fc2 = 5e+06" in message and "Fv3 = -300" in message


def test_a_model_the_estimator_gated_more_loosely_is_refused_naming_both_factors(
    context: Context, arm6_urdf: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """plausibility.* set in the estimator's block only: the estimator published what the feedforward, at its
    defaults, refuses; the refusal said "plausibility.* and limits.effort" and not that the two nodes disagree."""
    path = tmp_path / "loose.yaml"
    # 400 N·m: beyond the feedforward's 1.5 × 150 N·m, within the estimator's 3 × 150.
    loose = _edited(_parameter_file(arm6_urdf), {"off2": 400.0})
    write_parameters_atomic(path, dataclasses.replace(loose, settings={"window": {"effort_factor": 3.0}}))
    with pytest.raises(ValueError, match="'parameters_file'.*implausible model") as refused:
        FeedforwardNode(context=context, parameter_overrides=[Parameter("parameters_file", value=str(path))])
    message = str(refused.value)
    assert "\n" not in message and "off2 = 400" in message
    assert "plausibility.effort_factor 3 (the feedforward's: 1.5)" in message and "under /**" in message


def test_a_parameters_file_that_leaves_out_a_base_parameter_is_refused_at_start_naming_it(
    context: Context, arm6_urdf: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    complete = _parameter_file(arm6_urdf)
    path = tmp_path / "missing.yaml"
    entries = tuple(entry for entry in complete.parameters if entry.name != "Fc2")  # removed: [] says nothing
    write_parameters_atomic(path, dataclasses.replace(complete, parameters=entries))
    with pytest.raises(ValueError, match=r"'parameters_file'.*leaves out base parameters \['Fc2'\]"):
        FeedforwardNode(context=context, parameter_overrides=[Parameter("parameters_file", value=str(path))])


def test_an_implausible_model_on_the_topic_is_refused_counted_and_the_previous_one_kept(
    graph: _Graph, parameters_path: pathlib.Path, arm6_urdf: pathlib.Path
) -> None:
    node = graph.start([Parameter("parameters_file", value=str(parameters_path))])
    assert node.model is not None
    before = node.model
    latched = graph.probe.create_publisher(String, "estimator/parameters", LATCHED_QOS)
    graph.spin(20.0, until=lambda: latched.get_subscription_count() > 0)
    latched.publish(String(data=dump_parameters(_edited(_parameter_file(arm6_urdf, stamp=2.0), IMPLAUSIBLE))))

    def refused() -> bool:
        return bool(graph.diagnostics) and "refused parameters" in graph.diagnostics[-1].message

    graph.spin(20.0, until=refused)
    assert node.model is before  # the previous model stays in use
    status = graph.diagnostics[-1]
    assert "implausible model" in status.message and "Fc2 = 5e+06" in status.message
    values = {kv.key: kv.value for kv in status.values}
    assert values["refused/parameters"] == "1" and values["parameters_stamp"] == f"{1.0:.6f}"


@pytest.mark.parametrize("edited", [False, True], ids=["same-content-elsewhere", "other-content"])
def test_the_urdf_parameter_must_hold_the_urdf_the_parameters_were_identified_on(
    graph: _Graph, arm6_urdf: pathlib.Path, tmp_path: pathlib.Path, edited: bool
) -> None:
    identified = dataclasses.replace(_parameter_file(arm6_urdf), urdf_sha256=urdf_sha256(arm6_urdf))
    here = tmp_path / "controller" / "arm6.urdf"
    here.parent.mkdir()
    text = arm6_urdf.read_text(encoding="utf-8")
    here.write_text(text.replace("</robot>", "<link name='camera_mount'/></robot>") if edited else text, "utf-8")
    node = graph.start([Parameter("urdf", value=str(here))])
    latched = graph.probe.create_publisher(String, "estimator/parameters", LATCHED_QOS)
    graph.spin(20.0, until=lambda: latched.get_subscription_count() > 0)
    latched.publish(String(data=dump_parameters(identified)))

    def refused() -> bool:
        return bool(graph.diagnostics) and "refused parameters" in graph.diagnostics[-1].message

    graph.spin(20.0, until=lambda: node.model is not None or refused())
    if edited:
        assert node.model is None and refused()
        message = graph.diagnostics[-1].message
        assert "is not the one" in message and urdf_sha256(here)[:16] in message
        times, q, dq, ddq = _trajectory()
        graph.send(joint_trajectory_message(JOINTS, times, q, dq, ddq))
        graph.spin(0.5)
        assert graph.efforts == []
    else:
        assert node.model is not None and not refused()
