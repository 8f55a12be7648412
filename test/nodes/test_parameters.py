"""The nodes' ROS parameters as ``ros2 param`` sees them: every declared parameter answers a get.

rclpy's GetParameters service answers an *empty* list for the whole request when one of the
names is a statically typed parameter without a value, so ``ros2 param dump`` printed
``ros__parameters: {}`` for every node (issue 23, finding 3). Each node is built with the
shipped configuration, as ``ros2 launch`` starts it, and asked by a parameter client for
every name it lists, in one request, as ``ros2 param dump`` does.
"""

from __future__ import annotations

import importlib
import pathlib

import numpy as np
import pytest
import yaml
from rcl_interfaces.msg import ParameterType, ParameterValue
from rclpy.context import Context
from rclpy.node import Node
from rclpy.parameter import Parameter, parameter_value_to_python
from rclpy.parameter_client import AsyncParameterClient

from dynamic_identification.core.excitation.trajectory import SampledTrajectory
from dynamic_identification.core.mechanism.robot import RobotModel
from dynamic_identification.io.config import ros_parameters
from dynamic_identification.io.trajectory import write_trajectory_csv
from dynamic_identification.nodes.sim_robot import SimRobotNode
from repo_paths import ARM6_CONFIG, REPO_ROOT
from ros_graph import RosGraph, ros_context

NODE_CLASSES = {
    "estimator": "EstimatorNode",
    "excitation": "ExcitationNode",
    "feedforward": "FeedforwardNode",
    "recorder": "RecorderNode",
    "sim_robot": "SimRobotNode",
}
UNSET = {
    "estimator": "limits.effort",
    "excitation": "box_min",
    "feedforward": "limits.effort",
    "recorder": "current_polynomial",
    "sim_robot": "kp",
}
"""An optional parameter of each node that the shipped configuration leaves unset."""


def shipped_overrides(name: str, config: pathlib.Path = ARM6_CONFIG) -> list[Parameter]:
    """A shipped configuration's parameters of node ``name`` (``/**`` and ``/**/name``), as rcl hands them over."""
    return [Parameter(key, value=value) for key, value in ros_parameters(config, name).items()]


def at_rest(robot: RobotModel, path: pathlib.Path) -> list[Parameter]:
    """An excitation that plays a 1 s file at rest instead of planning for 30 s."""
    time_s = np.linspace(0.0, 1.0, 11)
    rest = np.zeros((time_s.size, robot.n_joints))
    write_trajectory_csv(path, SampledTrajectory(time_s, rest, rest, rest, robot.joint_names))
    return [Parameter("mode", value="file"), Parameter("file", value=str(path))]


def dump(graph: RosGraph, node: Node) -> tuple[list[str], list[ParameterValue]]:
    """What ``ros2 param dump`` asks: the names the node lists, then their values in one GetParameters request."""
    client = AsyncParameterClient(graph.probe, node.get_fully_qualified_name())
    assert graph.spin_until(client.services_are_ready, 20.0)
    listed = client.list_parameters()
    assert graph.spin_until(listed.done, 20.0)
    names = sorted(listed.result().result.names)
    got = client.get_parameters(names)
    assert graph.spin_until(got.done, 20.0)
    return names, list(got.result().values)


@pytest.mark.parametrize("name", sorted(NODE_CLASSES))
def test_one_get_request_naming_every_listed_parameter_answers_each_of_them(
    name: str, context: Context, arm6: RobotModel, tmp_path: pathlib.Path
) -> None:
    node_class = getattr(importlib.import_module(f"dynamic_identification.nodes.{name}"), NODE_CLASSES[name])
    extra = at_rest(arm6, tmp_path / "rest.csv") if name == "excitation" else []
    graph = RosGraph(context, name=f"{name}_parameter_user")
    node = graph.add(node_class(context=context, parameter_overrides=[*shipped_overrides(name), *extra]))
    try:
        names, values = dump(graph, node)
    finally:
        graph.close()
    assert len(names) > 10
    assert len(values) == len(names), f"{name} answered {len(values)} values for {len(names)} names"
    by_name = dict(zip(names, values, strict=True))
    assert by_name["use_sim_time"].type == ParameterType.PARAMETER_BOOL
    # A parameter the configuration sets answers its value, one it leaves unset answers "not set".
    if name != "feedforward":
        assert by_name["joints"].string_array_value == [f"joint_{k}" for k in range(1, 7)]
    assert by_name[UNSET[name]].type == ParameterType.PARAMETER_NOT_SET


def test_a_dump_of_the_parameters_loads_back_as_a_parameter_file(context: Context, tmp_path: pathlib.Path) -> None:
    """``ros2 param dump /sim_robot > f.yaml`` then ``--params-file f.yaml``: an unset parameter dumps as YAML's
    null (rcl reads it back as the text ``null``), which must leave it unset rather than refuse the file."""
    graph = RosGraph(context, name="sim_robot_dumper")
    node = graph.add(SimRobotNode(context=context, parameter_overrides=shipped_overrides("sim_robot")))
    try:
        names, values = dump(graph, node)
    finally:
        graph.close()
    dumped = {name: parameter_value_to_python(value) for name, value in zip(names, values, strict=True)}
    assert dumped["kp"] is None and dumped["rate_hz"] == 1000.0
    path = tmp_path / "sim_robot.yaml"
    path.write_text(yaml.safe_dump({"/sim_robot": {"ros__parameters": dumped}}), encoding="utf-8")
    with ros_context(["--ros-args", "--params-file", str(path)]) as loading:
        again = SimRobotNode(context=loading)
        try:
            assert again.config.kp is None and again.config.rate_hz == 1000.0
            assert again.get_parameter("kp").type_ is Parameter.Type.NOT_SET
        finally:
            again.destroy_node()


LAUNCHED = [(config, name) for config in ("dynid_arm6.yaml", "five_bar.yaml") for name in sorted(NODE_CLASSES)]


@pytest.mark.parametrize(("config", "name"), LAUNCHED, ids=[f"{c}-{n}" for c, n in LAUNCHED])
def test_every_node_starts_on_the_shipped_configurations_of_the_simulated_robots(config: str, name: str) -> None:
    """What ``ros2 launch dynamic_identification sim.launch.py config:=…`` starts: five_bar.yaml named no URDF
    and used plain ``recorder:`` blocks, so the excitation and the estimator refused it ("'tip_1' is not a frame
    of dynid_arm6.urdf") and no block applied in a namespace."""
    node_class = getattr(importlib.import_module(f"dynamic_identification.nodes.{name}"), NODE_CLASSES[name])
    # rcl reads the file and matches its blocks to the node, in a namespace, as for a launched node.
    with ros_context(["--ros-args", "--params-file", str(REPO_ROOT / "config" / config)]) as context:
        node = node_class(context=context, namespace="/arm1")
        try:
            expected = ros_parameters(REPO_ROOT / "config" / config, name)
            applied = {key: node.get_parameter(key).value for key in expected if node.has_parameter(key)}
            assert applied == {key: value for key, value in expected.items() if key in applied}
            assert len(applied) >= (1 if name == "feedforward" else 3)
        finally:
            node.destroy_node()
