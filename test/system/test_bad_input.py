"""The worst messages of the adversarial corpus, sent to the node processes: each is refused, none ends a node.

Issue: a JointTrajectory with NaN ended the feedforward process; a NaN, inf or 1e9 rad
joint state before ``~/start`` ended the excitation (OverflowError, a 388 GiB
allocation). Here every node runs as its own process with the shipped configuration,
receives them, reports the refusals on ``/diagnostics`` and keeps running.
"""

from __future__ import annotations

import math
import pathlib

from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from dynamic_identification.nodes.conversions import joint_state_message
from dynamic_identification.nodes.qos import COMMAND_QOS, LATCHED_QOS, SENSOR_QOS

from .processes import NodeProcesses, Probe

JOINTS = [f"joint_{k}" for k in range(1, 7)]


PROBE_NAME = "attacker"
"""Name of this module's probe node (the ``probe`` fixture of ``conftest.py``)."""


def nan_trajectory() -> JointTrajectory:
    message = JointTrajectory()
    message.joint_names = JOINTS
    point = JointTrajectoryPoint()
    point.positions = [math.nan] * 6
    point.time_from_start.sec = 1
    message.points.append(point)
    return message


def refused(probe: Probe, name: str, label: str) -> int:
    statuses = probe.diagnostics.get(name, [])
    if not statuses:
        return 0
    return int({kv.key: kv.value for kv in statuses[-1][1].values}.get(f"refused/{label}", "0"))


def test_the_node_processes_refuse_the_worst_messages_and_keep_running(
    probe: Probe, ros_domain_id: int, tmp_path: pathlib.Path, namespace: str
) -> None:
    node = probe.node
    trajectories = node.create_publisher(JointTrajectory, "joint_trajectory", COMMAND_QOS)
    states = node.create_publisher(JointState, "joint_states", SENSOR_QOS)
    parameters = node.create_publisher(String, "estimator/parameters", LATCHED_QOS)
    efforts = node.create_publisher(Float64MultiArray, "feedforward/effort", COMMAND_QOS)
    with NodeProcesses(ros_domain_id, tmp_path, namespace=namespace) as nodes:
        nodes.start("feedforward", rate_hz=20.0)
        nodes.start("excitation", optimise=False, harmonics=2)
        nodes.start("sim_robot", rate_hz=50.0)
        connected = probe.spin_until(
            lambda: (
                trajectories.get_subscription_count() >= 2
                and states.get_subscription_count() >= 1
                and efforts.get_subscription_count() >= 1
                and parameters.get_subscription_count() >= 1
            ),
            60.0,
        )
        assert connected, nodes.report()
        probe.spin_until(lambda: all(name in probe.diagnostics for name in ("feedforward", "excitation")), 10.0)
        for bad in (math.nan, math.inf, 1e9):
            states.publish(joint_state_message(JOINTS, 10**9, [bad] * 6, [0.0] * 6))
            probe.spin_for(0.1)
        trajectories.publish(nan_trajectory())  # the feedforward and the simulated robot
        parameters.publish(String(data="format: [\n"))
        efforts.publish(Float64MultiArray(data=[1e300] * 6))
        counted = probe.spin_until(
            lambda: (
                refused(probe, "excitation", "joint_states") == 3
                and refused(probe, "feedforward", "trajectory") == 1
                and refused(probe, "feedforward", "parameters") == 1
                and refused(probe, "sim_robot", "joint_trajectory") == 1
                and refused(probe, "sim_robot", "feedforward/effort") == 1
            ),
            20.0,
        )
        alive = not nodes.dead()
        report = nodes.report()
    assert alive, report
    assert counted, {name: statuses[-1][1].values for name, statuses in probe.diagnostics.items()}
    for process in nodes.started:
        assert "Traceback" not in process.output(limit=100_000)
