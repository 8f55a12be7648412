"""Lockstep of a simulator that is the clock with the consumers of its samples, as Gazebo waits for ros2_control.

``sim_robot`` with ``publish_clock`` and ``lockstep`` decides when simulated time advances.
Its sample topics are reliable keep-last queues (``SENSOR_QOS``): a consumer that takes
fewer samples than the simulator publishes — an executor that serves each subscription once
per wait while the simulator catches up several steps per tick, a process starved of CPU —
loses the oldest ones when its queue overflows. So each consumer acknowledges what it has
taken, and the simulator waits for it:

* a consumer (``recorder``, ``estimator`` with ``acknowledge: true``; the demo's monitor)
  publishes the newest stamp it has taken on ``~/acknowledged`` (``builtin_interfaces/Time``,
  reliable, keep last 1) through an :class:`Acknowledger`, once every
  :data:`ACKNOWLEDGE_PERIOD_S` of stamps;
* ``sim_robot`` with ``lockstep_consumers: [recorder, estimator]`` follows
  ``<name>/acknowledged`` of each through :class:`ConsumerAcknowledgements` and publishes a
  step only while it is at most :data:`LEAD_S` (or one step) ahead of every consumer's
  acknowledgement it has received. A consumer that is up (its acknowledgement topic has a
  publisher) but has acknowledged nothing yet binds the simulator from the stamp at which it
  came up: its samples may already be arriving while its first acknowledgement is still on
  its way, which on a busy machine takes a second or more, and a simulator running free
  meanwhile can overflow the consumer's queues before it is ever bound. Past the
  lead it is paced, not stopped: one step per :data:`FIRST_ACKNOWLEDGEMENT_PACE_S` of wall
  time, so a consumer whose subscription matches only now still receives samples to
  acknowledge, for at least :data:`FIRST_ACKNOWLEDGEMENT_TIMEOUT_S`. A consumer that sends
  no acknowledgement for ``lockstep_timeout_s`` of wall time (that or
  :data:`FIRST_ACKNOWLEDGEMENT_TIMEOUT_S`, whichever is longer, before its first) while the
  simulator waits for it is reported and no longer waited for until it
  acknowledges again (its own gap count then shows what it missed); a consumer whose
  acknowledgement topic has no publisher (not started, or gone) is not waited for. A consumer
  may hold simulated time on purpose by acknowledging the same stamp again and again (the
  demo does while it calls services): it is alive, so the bound does not apply.

Real robots and bag replay are untouched: the acknowledgements are off unless asked for.
Only the topic of the simulator's namespace is followed: ``<name>/acknowledged`` resolves in
it, as the consumer's ``~/acknowledged`` does in the same namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from builtin_interfaces.msg import Time
from rclpy.node import Node

from dynamic_identification.nodes.conversions import NS_PER_S, stamp_to_ns, time_message
from dynamic_identification.nodes.qos import ACKNOWLEDGEMENT_QOS

ACKNOWLEDGED_TOPIC = "acknowledged"
"""A consumer's acknowledgement topic, under its node name (``~/acknowledged``)."""

ACKNOWLEDGE_PERIOD_S = 0.01
"""A consumer acknowledges at most once per this much stamp time, s (every sample when they are further apart)."""

LEAD_S = 0.05
"""The most a simulator in lockstep runs ahead of a consumer's acknowledgement, s (at least one step): 50 samples at
1 kHz, half the depth of ``SENSOR_QOS``, so no keep-last queue of a consumer overflows while it catches up."""

FIRST_ACKNOWLEDGEMENT_PACE_S = 0.05
"""Wall time between two steps of a simulator past the lead of a consumer that is up but has acknowledged nothing yet,
s: 20 samples a second, which no queue overflows from while the first acknowledgement finds its way."""

FIRST_ACKNOWLEDGEMENT_TIMEOUT_S = 10.0
"""The least wall time a simulator paces for a consumer's first acknowledgement before it goes on without it, s: on a
busy machine the first takes a second or more to arrive, longer than the default ``lockstep_timeout_s``; a consumer
up for this long that takes no sample (its input topic is wrong, say) must not slow simulated time for good."""


class Acknowledger:
    """A consumer's side: publishes on ``~/acknowledged`` the newest stamp its node has taken.

    Call :meth:`taken` with every sample's stamp once it is safe (buffered, aligned, recorded);
    a message goes out when the stamp is :data:`ACKNOWLEDGE_PERIOD_S` past the last one
    acknowledged, or earlier than it (the stamps jumped back: a simulation restarted).
    """

    def __init__(self, node: Node) -> None:
        self._publisher = node.create_publisher(Time, f"~/{ACKNOWLEDGED_TOPIC}", ACKNOWLEDGEMENT_QOS)
        self._last_ns: int | None = None
        self._period_ns = round(ACKNOWLEDGE_PERIOD_S * NS_PER_S)

    @property
    def topic(self) -> str:
        return str(self._publisher.topic_name)

    def taken(self, stamp_ns: int) -> None:
        """The node has taken every sample up to ``stamp_ns`` (ns)."""
        last = self._last_ns
        if last is not None and last <= stamp_ns < last + self._period_ns:
            return
        self.acknowledge(stamp_ns)

    def acknowledge(self, stamp_ns: int) -> None:
        """Acknowledge ``stamp_ns`` (ns) now, whatever was acknowledged before: a consumer that holds simulated time
        acknowledges ``hold - LEAD_S`` at most, and the simulator stops there."""
        self._last_ns = stamp_ns
        self._publisher.publish(time_message(max(stamp_ns, 0)))


@dataclass(frozen=True)
class LockstepWait:
    """What a simulator in lockstep waited for too long: ``what`` (a consumer's name, or the trajectory), how
    often its wait hit the wall-time bound and the last wait, s of wall time."""

    what: str
    timeouts: int
    last_wait_s: float


class ConsumerAcknowledgements:
    """A simulator's side: the acknowledgements of the consumers ``names``, and which of them a step must wait for.

    Parameters
    ----------
    node
        The simulator's node; it subscribes ``<name>/acknowledged`` for each name.
    names
        Node names of the consumers (``recorder``, ``estimator``).
    step_ns
        The simulator's step, ns: it may always run one step ahead of a consumer.
    wall_ns
        The wall clock, ns: when each acknowledgement arrived (:meth:`heard_ns`).
    """

    def __init__(self, node: Node, names: Sequence[str], *, step_ns: int, wall_ns: Callable[[], int]) -> None:
        if len(set(names)) != len(names) or not all(names):
            raise ValueError(f"parameter 'lockstep_consumers' must hold distinct node names, got {list(names)}")
        self._node = node
        self.names = tuple(names)
        self._lead_ns = max(round(LEAD_S * NS_PER_S), step_ns)
        self._wall_ns = wall_ns
        self._step_ns = step_ns
        self._acknowledged: dict[str, int | None] = dict.fromkeys(self.names)
        self._up_at: dict[str, int | None] = dict.fromkeys(self.names)
        self._heard: dict[str, int] = dict.fromkeys(self.names, 0)
        self._released: set[str] = set()
        self._topics: dict[str, str] = {}
        for name in self.names:
            subscription = node.create_subscription(
                Time, f"{name}/{ACKNOWLEDGED_TOPIC}", partial(self._on_acknowledged, name), ACKNOWLEDGEMENT_QOS
            )
            self._topics[name] = str(subscription.topic_name)

    def _on_acknowledged(self, name: str, message: Time) -> None:
        self._acknowledged[name] = stamp_to_ns(message)
        self._heard[name] = self._wall_ns()
        self._released.discard(name)

    def acknowledged_ns(self, name: str) -> int | None:
        """The stamp ``name`` acknowledged last, ns (``None`` before its first)."""
        return self._acknowledged[name]

    def heard_ns(self, name: str) -> int:
        """Wall time of ``name``'s last acknowledgement, ns (0 before its first)."""
        return self._heard[name]

    def silent(self, name: str) -> bool:
        """Whether ``name`` has acknowledged nothing yet (since it came up): a step waiting for it is paced."""
        return self._acknowledged[name] is None

    def lagging(self, next_ns: int) -> str | None:
        """The first consumer a step to ``next_ns`` must wait for, or ``None``.

        A consumer counts while its topic has a publisher and until :meth:`release`; it holds the
        step when ``next_ns`` lies more than the lead past its acknowledgement or, before its
        first, past the last stamp published when it came up.
        """
        for name in self.names:
            if name in self._released:
                continue
            bound = self._acknowledged[name]
            if bound is None:
                bound = self._up_at[name]
            if bound is None:
                if self._node.count_publishers(self._topics[name]) == 0:
                    continue  # not up (yet)
                bound = self._up_at[name] = next_ns - self._step_ns
            if next_ns - bound <= self._lead_ns:
                continue
            if self._node.count_publishers(self._topics[name]) == 0:
                self._acknowledged[name] = self._up_at[name] = None  # gone (destroyed, ended): a new one starts afresh
                continue
            return name
        return None

    def release(self, name: str) -> None:
        """Stop waiting for ``name`` until it acknowledges again (it did not within the wall-time bound)."""
        self._released.add(name)
