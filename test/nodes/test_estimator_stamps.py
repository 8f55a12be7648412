"""The estimator node never hangs on stamps: its diagnostics never wait for the worker, a far stamp costs nothing.

Before the gap rule one stamp 1e6 s in the future hung the node: the worker interpolated
the gap while holding its lock, and the diagnostics timer, on the executor, waited for it.
"""

from __future__ import annotations

import os

# The network rule, before rclpy is imported (test/conftest.py sets the same values).
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ["ROS_LOCALHOST_ONLY"] = "1"
os.environ["ROS_DOMAIN_ID"] = str(100 + os.getpid() % 100)

import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import rclpy  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from dynamic_identification.io.config import ros_parameters  # noqa: E402
from dynamic_identification.nodes.conversions import NS_PER_S, joint_state_message  # noqa: E402
from dynamic_identification.nodes.estimator import SAMPLES_QOS, EstimatorNode  # noqa: E402

ARM6_CONFIG = Path(__file__).resolve().parents[2] / "config" / "dynid_arm6.yaml"
RATE_HZ = 200.0
START_S = 1000.0
FAR_S = 1e6
"""How far in the future the one bad stamp lies, s."""
CHAIN = ros_parameters(ARM6_CONFIG, "estimator")
OVERRIDES = [
    Parameter("drive_chain.gear_ratios", value=[float(x) for x in CHAIN["drive_chain.gear_ratios"]]),
    Parameter("drive_chain.drive_gains", value=[float(x) for x in CHAIN["drive_chain.drive_gains"]]),
    Parameter("window.update_period_s", value=0.5),
]


@pytest.fixture
def context() -> Iterator[Context]:
    ros_context = Context()
    rclpy.init(context=ros_context)
    try:
        yield ros_context
    finally:
        ros_context.try_shutdown()


def _spin(executor: SingleThreadedExecutor, seconds: float, until: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if until():
            return True
        executor.spin_once(timeout_sec=0.01)
    return until()


def test_diagnostics_never_wait_for_the_worker(context: Context) -> None:
    node = EstimatorNode(context=context, parameter_overrides=OVERRIDES)
    try:
        answered = threading.Event()

        def read() -> None:
            node.diagnostic_status()
            _ = node.last_update
            answered.set()

        # The worker holds this lock for a whole update; the diagnostics must not need it.
        with node._estimator_lock:
            reader = threading.Thread(target=read, daemon=True)
            reader.start()
            reader.join(5.0)
            assert answered.is_set(), "diagnostic_status() waited for the worker's lock"
    finally:
        node.destroy_node()


def test_a_stamp_far_in_the_future_restarts_the_window_and_the_node_keeps_reporting(
    context: Context, arm6_run: Callable
) -> None:
    node = EstimatorNode(context=context, parameter_overrides=OVERRIDES)
    probe = Node("stamps_probe", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(probe)
    statuses: list[DiagnosticStatus] = []
    probe.create_subscription(
        DiagnosticArray, "/diagnostics", lambda m: statuses.extend(s for s in m.status if s.name == "estimator"), 100
    )
    publisher = probe.create_publisher(JointState, "/recorder/samples", SAMPLES_QOS)
    try:
        assert _spin(executor, 20.0, lambda: publisher.get_subscription_count() > 0)
        run = arm6_run(12.0, rate_hz=RATE_HZ, seed=2)
        stamps, q, torques = START_S + run.stamps, run.q, run.torques
        stamps[int(4.0 * RATE_HZ)] += FAR_S
        names = node.joint_names
        values = lambda: {kv.key: kv.value for kv in node.diagnostic_status().values}  # noqa: E731
        for k in range(stamps.size):
            publisher.publish(joint_state_message(names, round(stamps[k] * NS_PER_S), q[k], None, torques[k]))
            if k % 100 == 99:
                assert _spin(executor, 10.0, lambda k=k: int(values()["samples_received"]) >= k + 1)
        count = len(statuses)
        # The diagnostics timer (1 Hz, on the executor) keeps firing while the worker runs.
        assert _spin(executor, 10.0, lambda: len(statuses) >= count + 2)
        assert int(values()["window_restarts"]) >= 1
        # The window restarted at the first stamp after the far one and went on updating on the data after it.
        assert _spin(executor, 10.0, lambda: (u := node.last_update) is not None and u.time_s > START_S + 8.0)
    finally:
        executor.shutdown()
        probe.destroy_node()
        node.destroy_node()
