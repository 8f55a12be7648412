"""Lockstep of ``sim_robot`` with the consumers of its samples: acknowledgements, waits, the bound, no sample lost."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.context import Context
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState

from dynamic_identification.nodes import sim_robot
from dynamic_identification.nodes.conversions import stamp_to_ns
from dynamic_identification.nodes.estimator import EstimatorNode
from dynamic_identification.nodes.lockstep import (
    ACKNOWLEDGE_PERIOD_S,
    FIRST_ACKNOWLEDGEMENT_PACE_S,
    LEAD_S,
    Acknowledger,
)
from dynamic_identification.nodes.qos import ACKNOWLEDGEMENT_QOS, SENSOR_QOS
from dynamic_identification.nodes.recorder import RecorderNode
from dynamic_identification.nodes.sim_robot import SimRobotNode
from repo_paths import ARM6_CONFIG
from ros_graph import RosGraph, graphs

RATE_HZ = 250.0
STEP_NS = round(1e9 / RATE_HZ)
LEAD_NS = round(LEAD_S * 1e9)


@pytest.fixture
def make_graph() -> Iterator[type[RosGraph]]:
    with graphs(RosGraph) as make:
        yield make


class _Consumer:
    """A consumer named ``consumer`` that records ``joint_states`` and acknowledges when told, or all along once
    :attr:`keeping_up`."""

    def __init__(self, context: Context) -> None:
        self.node = Node("consumer", context=context)
        self.acknowledger = Acknowledger(self.node)
        self.stamps: list[int] = []
        self.keeping_up = False
        self.node.create_subscription(JointState, "/joint_states", self._on_joint_state, SENSOR_QOS)

    def _on_joint_state(self, message: JointState) -> None:
        self.stamps.append(stamp_to_ns(message.header.stamp))
        if self.keeping_up:
            self.acknowledge_newest()

    def acknowledge_newest(self) -> int:
        self.acknowledger.taken(self.stamps[-1])
        return self.stamps[-1]


def _in_lockstep(context: Context, graph: RosGraph, *, timeout_s: float) -> tuple[SimRobotNode, _Consumer]:
    """``sim_robot`` in lockstep with a ``consumer`` (``lockstep_timeout_s``: ``timeout_s``), both spun by ``graph``."""
    sim = graph.add(_sim(context, Parameter("lockstep_timeout_s", value=timeout_s)))
    consumer = _Consumer(context)
    graph.add(consumer.node)
    return sim, consumer


def _sim(context: Context, *extra: Parameter) -> SimRobotNode:
    return SimRobotNode(
        context=context,
        parameter_overrides=[
            Parameter("rate_hz", value=RATE_HZ),
            Parameter("publish_clock", value=True),
            Parameter("lockstep", value=True),
            Parameter("lockstep_consumers", value=["consumer"]),
            *extra,
        ],
    )


class _Publisher:
    """What an acknowledger publishes, kept in a list (no DDS: every message counts)."""

    topic_name = "/consumer/acknowledged"

    def __init__(self) -> None:
        self.sent: list[int] = []

    def publish(self, message: Time) -> None:
        self.sent.append(stamp_to_ns(message))


class _PublishingNode:
    def __init__(self) -> None:
        self.publisher = _Publisher()

    def create_publisher(self, msg_type: type, topic: str, qos: object) -> _Publisher:
        assert (msg_type, topic, qos) == (Time, "~/acknowledged", ACKNOWLEDGEMENT_QOS)
        return self.publisher


def test_acknowledgements_follow_the_stamps_taken_at_most_once_per_period() -> None:
    node = _PublishingNode()
    acknowledger = Acknowledger(node)  # type: ignore[arg-type]
    for stamp in [*range(0, 100 * STEP_NS, STEP_NS), 50 * STEP_NS]:  # 0.4 s of samples, then a jump back
        acknowledger.taken(stamp)
    sent = node.publisher.sent
    steps = np.diff(sent[:-1])
    period_ns = round(ACKNOWLEDGE_PERIOD_S * 1e9)
    assert sent[0] == 0 and np.all(steps >= period_ns) and np.all(steps < period_ns + STEP_NS), steps
    assert sent[-1] == 50 * STEP_NS  # a jump back is acknowledged at once


def test_in_lockstep_simulated_time_waits_for_a_consumer_that_acknowledged_nothing_more(
    context: Context, make_graph
) -> None:
    graph = make_graph(context, name="lockstep_probe")
    sim, consumer = _in_lockstep(context, graph, timeout_s=60.0)
    assert graph.spin_until(lambda: len(consumer.stamps) > 5, 20.0)
    # The first acknowledgement: once the simulator hears it, it runs to the lead and stops there.
    first = consumer.acknowledge_newest()
    assert graph.spin_until(lambda: _at_lead(sim, first), 20.0), sim.lockstep_waiting_for
    held_first = sim._now_ns()
    graph.spin_until(lambda: False, 0.5)
    assert sim._now_ns() == held_first  # simulated time stands still while the consumer is behind
    assert consumer.stamps[-1] == held_first  # and the consumer has every sample published meanwhile
    # Held by the first, the simulator cannot step before it hears the next: from it, it runs exactly to the lead.
    acknowledged = consumer.acknowledge_newest()
    assert graph.spin_until(lambda: sim._now_ns() > held_first and sim.lockstep_waiting_for == "consumer", 20.0), (
        sim.lockstep_waiting_for
    )
    held_at = sim._now_ns()
    graph.spin_until(lambda: False, 0.5)
    assert sim._now_ns() == held_at
    assert acknowledged + LEAD_NS < held_at + STEP_NS and held_at <= acknowledged + LEAD_NS
    assert consumer.stamps[-1] == held_at
    consumer.keeping_up = True
    consumer.acknowledge_newest()
    assert graph.spin_until(lambda: sim._now_ns() > held_at + 10 * LEAD_NS, 20.0)  # it goes on once acknowledged
    assert np.all(np.diff(consumer.stamps) == STEP_NS)  # not a sample lost
    assert not sim.lockstep_waits


def test_a_consumer_that_is_up_binds_the_simulator_before_its_first_acknowledgement(
    context: Context, make_graph
) -> None:
    # On a busy machine a consumer's first acknowledgement takes a second or more to arrive while its samples already
    # do: a simulator running free meanwhile can overflow its queues. Paced, it still gives a consumer whose
    # subscription matched late samples to acknowledge, and the short bound does not apply yet.
    graph = make_graph(context, name="lockstep_first_probe")
    sim, consumer = _in_lockstep(context, graph, timeout_s=0.3)
    assert graph.spin_until(lambda: len(consumer.stamps) > 5 and sim.lockstep_waiting_for == "consumer", 20.0)
    start_ns, start_s = sim._now_ns(), time.monotonic()
    assert graph.spin_until(lambda: consumer.stamps[-1] >= start_ns + 5 * STEP_NS, 20.0)  # paced, not stopped
    graph.spin_until(lambda: False, 1.0)
    elapsed_s = time.monotonic() - start_s
    assert (sim._now_ns() - start_ns) // STEP_NS <= elapsed_s / FIRST_ACKNOWLEDGEMENT_PACE_S + 1
    assert sim.lockstep_waiting_for == "consumer" and not sim.lockstep_waits
    assert np.all(np.diff(consumer.stamps) == STEP_NS)
    # Once it acknowledges, simulated time runs at full speed again as long as it keeps acknowledging.
    consumer.keeping_up = True
    acknowledged = consumer.acknowledge_newest()
    assert graph.spin_until(lambda: sim._now_ns() > acknowledged + 10 * LEAD_NS, 20.0)
    assert np.all(np.diff(consumer.stamps) == STEP_NS) and not sim.lockstep_waits


def test_a_consumer_that_is_up_but_never_acknowledges_slows_the_simulator_only_until_its_bound(
    context: Context, make_graph, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A recorder whose currents topic is wrong, say: it takes no sample, so it never acknowledges one.
    monkeypatch.setattr(sim_robot, "FIRST_ACKNOWLEDGEMENT_TIMEOUT_S", 0.5)
    graph = make_graph(context, name="lockstep_never_probe")
    sim, consumer = _in_lockstep(context, graph, timeout_s=0.1)
    assert graph.spin_until(lambda: sim.lockstep_waits and sim.lockstep_waiting_for == "", 30.0)
    [wait] = sim.lockstep_waits
    assert wait.what == "consumer" and wait.timeouts == 1 and wait.last_wait_s > 0.5  # the longer bound, not 0.1 s
    assert np.all(np.diff(consumer.stamps) == STEP_NS)


def _at_lead(sim: SimRobotNode, stamp_ns: int) -> bool:
    """Whether the simulator has heard the consumer acknowledge ``stamp_ns`` (or later) and waits for it at the lead
    (before it hears it, it may be waiting for the consumer's first acknowledgement, paced)."""
    acknowledged = sim._consumers.acknowledged_ns("consumer")
    return (
        acknowledged is not None
        and acknowledged >= stamp_ns
        and sim.lockstep_waiting_for == "consumer"
        and sim._now_ns() + STEP_NS > acknowledged + LEAD_NS
    )


def test_a_lockstep_wait_that_hits_its_bound_is_reported_and_the_simulation_goes_on(
    context: Context, make_graph
) -> None:
    graph = make_graph(context, name="lockstep_bound_probe")
    sim, consumer = _in_lockstep(context, graph, timeout_s=0.3)
    statuses = graph.record_diagnostics("sim_robot")
    assert graph.spin_until(lambda: len(consumer.stamps) > 5, 20.0)
    acknowledged = consumer.acknowledge_newest()
    assert graph.spin_until(lambda: sim._now_ns() > acknowledged + 10 * LEAD_NS, 30.0)
    [wait] = sim.lockstep_waits
    assert wait.what == "consumer" and wait.timeouts == 1 and wait.last_wait_s > 0.3
    assert graph.spin_until(
        lambda: any(s.level == DiagnosticStatus.WARN and "consumer 1x" in s.message for s in statuses), 20.0
    ), [s.message for s in statuses]
    values = {item.key: item.value for item in statuses[-1].values}
    assert values["lockstep_timeouts/consumer"] == "1" and values["lockstep_timeouts"] == "1"


def test_a_consumer_that_keeps_acknowledging_the_same_stamp_holds_simulated_time_past_the_bound(
    context: Context, make_graph
) -> None:
    # The demo holds simulated time while it calls services: alive, it renews its acknowledgement.
    graph = make_graph(context, name="lockstep_hold_probe")
    sim, consumer = _in_lockstep(context, graph, timeout_s=0.3)
    assert graph.spin_until(lambda: len(consumer.stamps) > 5, 20.0)
    acknowledged = consumer.acknowledge_newest()
    assert graph.spin_until(lambda: _at_lead(sim, acknowledged), 20.0), sim.lockstep_waiting_for
    held_at = sim._now_ns()
    for _ in range(10):  # 1 s of wall time, three times the bound
        consumer.acknowledger.acknowledge(acknowledged)
        graph.spin_until(lambda: False, 0.1)
    assert sim._now_ns() == held_at and not sim.lockstep_waits


def test_a_consumer_that_is_gone_is_not_waited_for(context: Context, make_graph) -> None:
    sim = _sim(context, Parameter("lockstep_timeout_s", value=60.0))
    graph = make_graph(context, name="lockstep_gone_probe")
    graph.add(sim)
    consumer = _Consumer(context)
    graph.executor.add_node(consumer.node)
    assert graph.spin_until(lambda: len(consumer.stamps) > 5, 20.0)
    acknowledged = consumer.acknowledge_newest()
    graph.executor.remove_node(consumer.node)
    consumer.node.destroy_node()
    assert graph.spin_until(lambda: sim._now_ns() > acknowledged + 10 * LEAD_NS, 30.0), sim.lockstep_waiting_for
    assert not sim.lockstep_waits


def test_sim_robot_refuses_lockstep_consumers_without_lockstep(context: Context) -> None:
    with pytest.raises(ValueError, match="'lockstep_consumers' needs 'lockstep' and 'publish_clock'"):
        SimRobotNode(context=context, parameter_overrides=[Parameter("lockstep_consumers", value=["recorder"])])


def test_a_simulator_faster_than_its_consumers_loses_no_sample_in_lockstep(context: Context, make_graph) -> None:
    """The node demo's case: one executor serves each subscription once per wait, while the simulator steps up to
    ``max_catch_up_s`` per tick (here 10 steps, at 4x real time): the keep-last queues overflowed (the demo's
    estimator got 25 Hz of 250 Hz). Acknowledged by the recorder and the estimator, none is lost."""
    config = [Parameter("joints", value=[f"joint_{j}" for j in range(1, 7)])]
    sim = _sim(
        context,
        Parameter("real_time_factor", value=4.0),
        Parameter("max_catch_up_s", value=0.04),
        Parameter("lockstep_consumers", value=["recorder", "estimator"]),
        Parameter("lockstep_timeout_s", value=60.0),
    )
    acknowledge = Parameter("acknowledge", value=True)
    recorder = RecorderNode(context=context, parameter_overrides=[*config, *_drive_chain(), acknowledge])
    estimator = EstimatorNode(context=context, parameter_overrides=[acknowledge])
    graph = make_graph(context, name="lockstep_pipeline_probe")
    for node in (sim, recorder, estimator):
        graph.add(node)
    assert graph.spin_until(lambda: estimator.input_counts().accepted >= 1500, 120.0), estimator.input_counts()
    losses, counts = recorder.losses(), estimator.input_counts()
    assert losses.missing == 0 and losses.currents_missing == 0 and losses.samples == 0, losses
    assert counts.missing == 0 and counts.refused_order == 0, counts
    assert not sim.lockstep_waits


def _drive_chain() -> list[Parameter]:
    """The shipped arm's drive chain, as the recorder reads it from the ``/**`` block of its configuration."""
    import yaml

    chain = yaml.safe_load(ARM6_CONFIG.read_text())["/**"]["ros__parameters"]["drive_chain"]
    return [Parameter(f"drive_chain.{key}", value=value) for key, value in chain.items()]
