"""The callback guard of every node: a failing callback is counted, refused and reported, never fatal."""

from __future__ import annotations

import pathlib
import re

import pytest
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import String
from std_srvs.srv import Trigger

from dynamic_identification.nodes.guarded import GuardedNode, RecurringWarning
from dynamic_identification.nodes.runner import node_executor
from ros_graph import spin_until

NODES_DIR = pathlib.Path(__file__).resolve().parents[2] / "src" / "dynamic_identification" / "nodes"


class Fragile(GuardedNode):
    """Fails on the message ``"bad"``, on every ``~/fail`` call and on its first timer tick."""

    def __init__(self, context: Context) -> None:
        super().__init__("fragile", context=context)
        self.accepted: list[str] = []
        self.ticks = 0
        self.create_subscription(String, "input", self._on_message, 10)
        self.create_service(Trigger, "~/fail", self._on_fail)
        self.create_timer(0.01, self._on_timer)

    def _on_message(self, message: String) -> None:
        if message.data == "bad":
            raise OverflowError("cannot convert float infinity to integer")
        self.accepted.append(message.data)

    def _on_fail(self, _request: Trigger.Request, _response: Trigger.Response) -> Trigger.Response:
        raise MemoryError("Unable to allocate 388. GiB")

    def _on_timer(self) -> None:
        self.ticks += 1
        if self.ticks == 1:
            raise ZeroDivisionError("float division by zero")


@pytest.mark.parametrize("make_executor", [SingleThreadedExecutor, node_executor], ids=["single", "events"])
def test_failing_callbacks_are_counted_and_the_node_goes_on(context: Context, make_executor) -> None:  # type: ignore[no-untyped-def]
    node = Fragile(context)
    user = Node("user", context=context)
    executor = make_executor(context=context)
    executor.add_node(node)
    executor.add_node(user)
    publisher = user.create_publisher(String, "input", 10)
    client = user.create_client(Trigger, "/fragile/fail")
    try:
        assert spin_until(executor, lambda: publisher.get_subscription_count() > 0 and client.service_is_ready())
        for text in ("one", "bad", "two", "bad", "three"):
            publisher.publish(String(data=text))
        future = client.call_async(Trigger.Request())
        assert spin_until(executor, lambda: len(node.accepted) == 3 and future.done() and node.ticks >= 3)
        response = future.result()
        failures = node.callback_failures()
        status = node.guard_report(DiagnosticStatus(level=DiagnosticStatus.OK, name="x", message="ok"))
    finally:
        executor.shutdown()
        user.destroy_node()
        node.destroy_node()
    assert node.accepted == ["one", "two", "three"]
    assert failures["subscription input"].count == 2
    assert "OverflowError" in failures["subscription input"].last_error
    assert response is not None and not response.success and "MemoryError" in response.message
    assert failures["timer _on_timer"].count == 1
    assert status.level == DiagnosticStatus.ERROR and status.name == "fragile"
    assert {kv.key: kv.value for kv in status.values}["callback_failures"] == "4"


def test_a_node_that_fails_to_build_is_freed_at_once(context: Context) -> None:
    class Failing(GuardedNode):
        def __init__(self) -> None:
            super().__init__("failing", context=context)
            self.create_timer(1.0, lambda: None)
            raise ValueError("parameter 'x' is invalid")

    with pytest.raises(ValueError, match="parameter 'x'"):
        Failing()
    context.try_shutdown()  # destroys the nodes still alive: none may be half-built


@pytest.mark.parametrize("path", sorted(NODES_DIR.glob("*.py")), ids=lambda path: path.name)
def test_no_node_attribute_shadows_one_of_rclpy_node(context: Context, path: pathlib.Path) -> None:
    """``self._parameters = publisher`` in a node broke rclpy's parameter services (``ros2 param list``)."""
    node = Node("bare", context=context)
    try:
        reserved = set(vars(node)) | set(dir(Node))
    finally:
        node.destroy_node()
    assigned = set(re.findall(r"self\.(\w+)\s*(?::[^=\n]+)?=(?!=)", path.read_text(encoding="utf-8")))
    assert assigned & reserved == set()


def test_a_refused_input_is_counted_and_reported_at_warn_while_recent(context: Context) -> None:
    node = Fragile(context)
    try:
        node.count_refusal("joint_states", "position of joint_2 is 1e+09 rad, outside its limits")
        status = node.guard_report(DiagnosticStatus(level=DiagnosticStatus.OK, name="x", message="ok"))
    finally:
        node.destroy_node()
    assert status.level == DiagnosticStatus.WARN and "1e+09 rad" in status.message
    assert {kv.key: kv.value for kv in status.values}["refused/joint_states"] == "1"


def test_a_recurring_warning_is_logged_once_then_once_a_period_with_how_often_it_occurred() -> None:
    """52 "feedforward is older than 0.1 s" lines in 9 minutes, none saying how often (issue 23): now the first at
    once, then one a period that counts the occurrences."""
    recurring = RecurringWarning(period_s=30.0)
    occurrences = [0.0, 0.5, 1.0, 10.0, 29.9, 30.0, 31.0, 95.0]  # s, monotonic
    lines = [recurring.line("feedforward is late", now_s) for now_s in occurrences]
    assert lines == [
        "feedforward is late",
        None,
        None,
        None,
        None,
        "feedforward is late (5 times since the last report, 6 in all)",
        None,
        "feedforward is late (2 times since the last report, 8 in all)",
    ]
    assert recurring.count == len(occurrences)
