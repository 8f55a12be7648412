"""One ROS graph for the node and system tests: a context, an executor, a probe node, spin-until.

Every test that runs real rclpy (on loopback, in the test process's ROS domain: ``conftest.py``)
builds on this module: :func:`ros_context` (the ``context`` fixture of ``conftest.py``) gives a
context of its own, :class:`RosGraph` the nodes under test and a probe node in one
single-threaded executor, with the probe's recordings of topics and ``/diagnostics``, service
calls, and :meth:`RosGraph.spin_until` with a deadline. Node tests subclass it with their
publishers; the system tests' ``Probe`` is one, listening to node processes.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.context import Context
from rclpy.executors import Executor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from std_srvs.srv import Trigger

N = TypeVar("N", bound=Node)
G = TypeVar("G", bound="RosGraph")

SERVICE_TIMEOUT_S = 20.0
"""Longest wait for a service to appear and answer, s."""


@contextmanager
def ros_context(arguments: Sequence[str] = ()) -> Iterator[Context]:
    """A ROS context of its own, shut down on exit (the network rule is ``conftest.py``'s).

    ``arguments`` are a command line's (``["--ros-args", "--params-file", path]``), read by rcl as a node
    process reads its own.
    """
    context = Context()
    rclpy.init(args=["test", *arguments] if arguments else None, context=context)
    try:
        yield context
    finally:
        context.try_shutdown()


def spin_until(executor: Executor, predicate: Callable[[], bool], timeout_s: float = SERVICE_TIMEOUT_S) -> bool:
    """Spin ``executor`` until ``predicate()`` holds or ``timeout_s`` passed; whether it holds."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        executor.spin_once(timeout_sec=0.01)
    return True


class RosGraph:
    """Nodes under test and a probe node, spun together by one executor.

    Parameters
    ----------
    context
        The test's ROS context.
    name, namespace
        The probe's name and namespace (relative topics are the namespace's).
    probe_parameters
        Parameter overrides of the probe (``use_sim_time``).
    probe_arguments
        Command-line ROS arguments of the probe alone (``["--ros-args", "-r", "/clock:=clock"]``).
    """

    def __init__(
        self,
        context: Context,
        *,
        name: str = "probe",
        namespace: str = "",
        probe_parameters: Sequence[Parameter] = (),
        probe_arguments: Sequence[str] = (),
    ) -> None:
        self.context = context
        self.executor = SingleThreadedExecutor(context=context)
        self.probe = Node(
            name,
            namespace=f"/{namespace.strip('/')}",
            context=context,
            parameter_overrides=list(probe_parameters),
            cli_args=list(probe_arguments) or None,
        )
        self.executor.add_node(self.probe)
        self.nodes: list[Node] = []

    def add(self, node: N) -> N:
        """Spin ``node`` with the probe (destroyed by :meth:`close`)."""
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def record(
        self, msg_type: Any, topic: str, qos: QoSProfile | int, convert: Callable[[Any], Any] | None = None
    ) -> list[Any]:
        """A list that fills with the messages of ``topic`` (through ``convert`` when given)."""
        received: list[Any] = []
        append = received.append if convert is None else (lambda message: received.append(convert(message)))
        self.probe.create_subscription(msg_type, topic, append, qos)
        return received

    def record_diagnostics(self, name: str) -> list[DiagnosticStatus]:
        """A list that fills with the ``/diagnostics`` statuses named ``name``."""
        statuses: list[DiagnosticStatus] = []
        self.probe.create_subscription(
            DiagnosticArray, "/diagnostics", lambda m: statuses.extend(s for s in m.status if s.name == name), 100
        )
        return statuses

    def spin_until(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Spin until ``predicate()`` holds or ``timeout_s`` passed; whether it holds."""
        return spin_until(self.executor, predicate, timeout_s)

    def spin(self, seconds: float, until: Callable[[], bool] | None = None) -> None:
        """Spin for ``seconds``, or until ``until()`` holds."""
        self.spin_until(until if until is not None else (lambda: False), seconds)

    def spin_for(self, seconds: float) -> None:
        """Spin for ``seconds``."""
        self.spin(seconds)

    def call(self, service: str, srv_type: Any = Trigger, request: Any = None) -> Any:
        """The answer of ``service`` to ``request`` (default an empty request of ``srv_type``)."""
        client = self.probe.create_client(srv_type, service)
        self.spin_until(client.service_is_ready, SERVICE_TIMEOUT_S)
        future = client.call_async(srv_type.Request() if request is None else request)
        self.spin_until(future.done, SERVICE_TIMEOUT_S)
        response = future.result()
        assert response is not None, f"no answer from {service}"
        return response

    def close(self) -> None:
        """Stop the executor and destroy the probe and the nodes (newest first)."""
        self.executor.shutdown()
        for node in (self.probe, *reversed(self.nodes)):
            node.destroy_node()


@contextmanager
def graphs(build: Callable[..., G]) -> Iterator[Callable[..., G]]:
    """A factory of graphs (``build(*args)``), each closed on exit.

    Start-up objects (Pinocchio, rclpy, message types) are frozen meanwhile: a full garbage
    collection of the test process's large heap stalls the one-threaded executor for ~0.1 s,
    long enough to drop a burst of samples or a simulated robot's backlog.
    """
    made: list[G] = []
    gc.collect()
    gc.freeze()

    def make(*args: Any, **kwargs: Any) -> G:
        made.append(build(*args, **kwargs))
        return made[-1]

    try:
        yield make
    finally:
        for graph in made:
            graph.close()
        gc.unfreeze()
