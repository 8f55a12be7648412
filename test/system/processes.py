"""Node processes for the system tests: each node as its own OS process on loopback DDS.

A node is started from its console script (``.venv/bin/NAME``, what ``ros2 run`` runs)
or, when the script is missing, as ``python -m dynamic_identification.nodes.NAME``,
with ``--ros-args --params-file config/dynid_arm6.yaml`` and per-node overrides in a
second parameter file under the same ``/**/NAME`` key, which wins (a plain ``-p KEY:=VALUE``
would lose to the node's own block, and ``-p NODE:KEY:=VALUE`` names a node of the root
namespace only), optionally in a namespace (``-r __ns:=/NS``). Every process gets the
network rule (loopback discovery only, the test's ``ROS_DOMAIN_ID``), writes stdout and
stderr to files, and is always ended:
SIGINT (the nodes shut down cleanly), then SIGKILL after a grace period.

:class:`Probe` is the test process's own node (a :class:`ros_graph.RosGraph`, as the node tests'
graphs): it records what the node processes publish (parameter YAML, aligned samples,
diagnostics) while the test spins it.
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.context import Context
from rclpy.task import Future
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from dynamic_identification.io.parameters import ParameterFile, load_parameters
from dynamic_identification.nodes.conversions import arrays_from_joint_state, stamp_to_ns
from dynamic_identification.nodes.qos import CLOCK_QOS, LATCHED_QOS
from dynamic_identification.nodes.recorder import STREAM_QOS
from repo_paths import ARM6_CONFIG, REPO_ROOT
from ros_graph import RosGraph

NODES = ("sim_robot", "recorder", "excitation", "estimator", "feedforward")
STOP_GRACE_S = 5.0
"""Seconds a node has to exit after SIGINT before it is killed."""
LOCKSTEP_CONSUMERS = ("recorder", "estimator")
"""Nodes that acknowledge the samples they take on simulated time, and that sim_robot waits for."""
STALL_S = 60.0
"""Wall time simulated time may stand still before a test on simulated time gives up, s."""
LOCKSTEP_TIMEOUT_S = 30.0
"""sim_robot's ``lockstep_timeout_s`` on simulated time, s of wall time: a consumer process starved this long."""

ParameterValue = bool | int | float | str | Sequence[float] | Sequence[str]


def ros_environment(domain_id: int) -> dict[str, str]:
    """The environment of a node process: this one's, the network rule and ``src`` on the path."""
    environment = dict(os.environ)
    environment.update(
        ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
        ROS_LOCALHOST_ONLY="1",
        ROS_DOMAIN_ID=str(domain_id),
        PYTHONUNBUFFERED="1",
    )
    source = str(REPO_ROOT / "src")
    path = environment.get("PYTHONPATH", "")
    environment["PYTHONPATH"] = source if not path else f"{source}{os.pathsep}{path}"
    return environment


def node_command(name: str) -> list[str]:
    """The command starting node ``name``: its console script next to this Python, else ``python -m``."""
    if name not in NODES:
        raise ValueError(f"name must be one of {list(NODES)}, got {name!r}")
    script = pathlib.Path(sys.executable).parent / name
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", f"dynamic_identification.nodes.{name}"]


def overrides_file(path: pathlib.Path, node: str, overrides: Mapping[str, ParameterValue]) -> pathlib.Path:
    """A parameter file setting ``overrides`` of ``node`` in any namespace (``/**/node``)."""
    import yaml

    parameters: dict[str, object] = {}
    for key, value in overrides.items():
        level = parameters
        *sections, name = key.split(".")
        for section in sections:
            level = level.setdefault(section, {})  # type: ignore[assignment]
        level[name] = list(value) if isinstance(value, (list, tuple)) else value
    path.write_text(yaml.safe_dump({f"/**/{node}": {"ros__parameters": parameters}}), encoding="utf-8")
    return path


def ros_arguments(
    node: str,
    overrides: Mapping[str, ParameterValue],
    *,
    params_files: Sequence[pathlib.Path] = (ARM6_CONFIG,),
    overrides_path: pathlib.Path | None = None,
    namespace: str = "",
    remaps: Mapping[str, str] | None = None,
) -> list[str]:
    """``--ros-args`` with the namespace and the topic ``remaps``, the parameter files, then the overrides' file."""
    arguments = ["--ros-args"]
    if namespace:
        arguments += ["-r", f"__ns:=/{namespace.strip('/')}"]
    for source, target in (remaps or {}).items():
        arguments += ["-r", f"{source}:={target}"]
    for path in params_files:
        arguments += ["--params-file", str(path)]
    if overrides:
        if overrides_path is None:
            raise ValueError("overrides_path must be given with overrides")
        arguments += ["--params-file", str(overrides_file(overrides_path, node, overrides))]
    return arguments


@dataclass
class NodeProcess:
    """One running node: its process and the files holding its output."""

    name: str
    process: subprocess.Popen[bytes]
    stdout: pathlib.Path
    stderr: pathlib.Path

    def running(self) -> bool:
        return self.process.poll() is None

    def output(self, limit: int = 4000) -> str:
        """The end of the node's stdout and stderr, for assertion messages."""
        texts = []
        for path in (self.stdout, self.stderr):
            text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
            texts.append(f"--- {path.name} ---\n{text[-limit:]}")
        return "\n".join(texts)

    def shared_memory(self) -> list[pathlib.Path]:
        """The Fast DDS shared-memory segments the node's DDS participant owns (Linux).

        A participant locks its segment ``/dev/shm/fastdds_<id>`` by holding ``fastdds_<id>_el`` open and removes
        both when it is destroyed; the receive queues ``fastdds_port<N>`` are shared with other participants. A
        segment left after the exit means the process ended with its participant's threads running
        (``nodes/runner.py`` says what that risks).
        """
        owned = []
        for descriptor in pathlib.Path(f"/proc/{self.process.pid}/fd").iterdir():
            try:
                target = pathlib.Path(os.readlink(descriptor))
            except OSError:  # closed meanwhile
                continue
            name = target.name
            if target.parent == pathlib.Path("/dev/shm") and name.startswith("fastdds_") and name.endswith("_el"):
                if not name.startswith("fastdds_port"):
                    owned.append(target.with_name(name.removesuffix("_el")))
        return owned

    def stop(self, grace_s: float = STOP_GRACE_S) -> int:
        """SIGINT, then SIGKILL when the node has not exited within ``grace_s``; the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(grace_s)
        return int(self.process.returncode)


@dataclass
class NodeProcesses:
    """Starts node processes in one ROS domain and ends all of them on exit (a context manager).

    With ``sim_time`` every node runs on ``use_sim_time`` and ``sim_robot`` publishes the clock
    (``publish_clock``) in lockstep with the trajectory it follows and with the recorder and
    estimator started before it, which acknowledge the samples they take (``lockstep_consumers``,
    ``acknowledge``): no sample is lost and the run's results do not depend on the machine's load.
    ``clock`` is the clock topic of the stack: ``/clock`` is remapped to it in every node, so that
    two simulated robots in one domain each keep their own time.
    """

    domain_id: int
    log_dir: pathlib.Path
    params_files: Sequence[pathlib.Path] = (ARM6_CONFIG,)
    namespace: str = ""
    started: list[NodeProcess] = field(default_factory=list)
    sim_time: bool = False
    clock: str = "/clock"

    def start(self, name: str, **overrides: ParameterValue) -> NodeProcess:
        """Start node ``name`` with ``overrides`` of its parameters (dotted keys: use :meth:`start_with`)."""
        return self.start_with(name, overrides)

    def start_with(self, name: str, overrides: Mapping[str, ParameterValue]) -> NodeProcess:
        """:meth:`start` with the overrides as a mapping (keys with dots cannot be keyword arguments)."""
        index = sum(1 for item in self.started if item.name == name)
        stem = name if index == 0 else f"{name}_{index}"
        if self.namespace:
            stem = f"{self.namespace.strip('/').replace('/', '_')}_{stem}"
        stdout, stderr = self.log_dir / f"{stem}.stdout.log", self.log_dir / f"{stem}.stderr.log"
        if self.sim_time:
            overrides = {**self._sim_time_overrides(name), **overrides}
        arguments = ros_arguments(
            name,
            overrides,
            params_files=self.params_files,
            overrides_path=self.log_dir / f"{stem}.overrides.yaml",
            namespace=self.namespace,
            remaps=None if self.clock == "/clock" else {"/clock": self.clock},
        )
        command = [*node_command(name), *arguments]
        with stdout.open("wb") as out, stderr.open("wb") as err:
            process = subprocess.Popen(  # noqa: S603 - fixed executables, arguments from the test
                command, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=ros_environment(self.domain_id)
            )
        node = NodeProcess(name=name, process=process, stdout=stdout, stderr=stderr)
        self.started.append(node)
        return node

    def _sim_time_overrides(self, name: str) -> dict[str, ParameterValue]:
        """On simulated time: sim_robot is the clock, in lockstep with the consumers started before it."""
        if name != "sim_robot":
            consumer = {"acknowledge": True} if name in LOCKSTEP_CONSUMERS else {}
            return {"use_sim_time": True, **consumer}
        lockstep: dict[str, ParameterValue] = {
            "publish_clock": True,
            "lockstep": True,
            "lockstep_timeout_s": LOCKSTEP_TIMEOUT_S,
        }
        consumers = [item.name for item in self.started if item.name in LOCKSTEP_CONSUMERS]
        if consumers:
            lockstep["lockstep_consumers"] = consumers
        return lockstep

    def dead(self) -> list[NodeProcess]:
        """Started nodes that exited before being stopped."""
        return [node for node in self.started if not node.running()]

    def report(self) -> str:
        """Exit state and output of every node, for assertion messages."""
        lines = []
        for node in self.started:
            state = "running" if node.running() else f"exited {node.process.returncode}"
            lines.append(f"=== {node.name} ({state})\n{node.output()}")
        return "\n".join(lines)

    def stop_all(self) -> None:
        """Stop every started node (SIGINT to all, then wait, then SIGKILL the stragglers)."""
        for node in self.started:
            if node.running():
                node.process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + STOP_GRACE_S
        for node in self.started:
            try:
                node.process.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                node.process.kill()
                node.process.wait(STOP_GRACE_S)

    def __enter__(self) -> NodeProcesses:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop_all()


@dataclass(frozen=True)
class ReceivedParameters:
    """One message of ``/estimator/parameters``: when it arrived (monotonic s) and its parsed YAML."""

    received_s: float
    text: str
    document: ParameterFile


@dataclass
class SampleLog:
    """Aligned samples of ``/recorder/samples`` in a fixed joint order: stamps (s), q (rad), effort (N·m)."""

    joints: tuple[str, ...]
    stamps: list[float] = field(default_factory=list)
    positions: list[np.ndarray] = field(default_factory=list)
    efforts: list[np.ndarray] = field(default_factory=list)

    def add(self, message: JointState) -> None:
        stamp, q, _, effort = arrays_from_joint_state(message, self.joints)
        if q is not None and effort is not None:
            self.stamps.append(stamp)
            self.positions.append(q)
            self.efforts.append(effort)

    def between(self, start_s: float, stop_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Stamps, positions and efforts of the samples with ``start_s < stamp <= stop_s``."""
        stamps = np.asarray(self.stamps)
        inside = (stamps > start_s) & (stamps <= stop_s)
        return stamps[inside], np.asarray(self.positions)[inside], np.asarray(self.efforts)[inside]


ANSWER_S = 20.0
"""Longest wait for a node's answer to one request, s."""
RESEND_S = 5.0
"""Interval at which an unanswered request is sent again, s.

A server drops its response when it has not yet discovered the client's response reader
(rmw_fastrtps waits 100 ms for it), although ``services_are_ready()`` already holds on the
client's side: on a loaded machine the first request can be lost in DDS discovery, not
refused by the node. Sending a request again is what a user of ``ros2 param`` or ``ros2 service call``
does: the parameter requests are idempotent, and a second ``~/start`` answers "already recording". The node
still has to answer within :data:`ANSWER_S`.
"""


def answer(probe: Probe, send: Callable[[], Future], what: str) -> Any:
    """Send a request with ``send()`` every :data:`RESEND_S` until it is answered or :data:`ANSWER_S` passed; the
    answer."""
    deadline = time.monotonic() + ANSWER_S
    while True:
        future = send()
        wait_s = max(deadline - time.monotonic(), 0.0)
        if probe.spin_until(future.done, min(RESEND_S, wait_s)):
            return future.result()
        future.cancel()
        assert time.monotonic() < deadline, f"no answer to {what} within {ANSWER_S} s"


class Probe(RosGraph):
    """The test's node: subscriptions that record, and a spin loop with a deadline (:class:`ros_graph.RosGraph`).

    In ``namespace`` (the test's, see ``conftest.py``) its relative topic names are the
    node processes' of the same namespace, and :attr:`diagnostics` holds only the
    statuses of those nodes, keyed by their names without the namespace (``recorder``).
    """

    def __init__(self, context: Context, name: str = "system_probe", namespace: str = "") -> None:
        super().__init__(context, name=name, namespace=namespace)
        self.namespace = namespace.strip("/")
        self.node = self.probe
        self.diagnostics: dict[str, list[tuple[float, DiagnosticStatus]]] = {}
        self.simulated_ns: int | None = None
        """The newest ``/clock`` of a sim_robot on simulated time, ns (``None`` before one)."""
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 100)
        self.node.create_subscription(Clock, "/clock", self._on_clock, CLOCK_QOS)

    def _on_clock(self, message: Clock) -> None:
        self.simulated_ns = stamp_to_ns(message.clock)

    def spin_until_simulated(
        self, predicate: Callable[[], bool], timeout_s: float, what: str, *, stall_s: float = STALL_S
    ) -> str:
        """Spin until ``predicate()`` holds; why not when ``timeout_s`` of simulated time pass first, or simulated
        time (``/clock``) stands still for ``stall_s`` of wall time (then naming what sim_robot waits for).

        Returns an empty string when ``predicate()`` holds: ``assert not probe.spin_until_simulated(…)``.
        """
        deadline_ns: int | None = None
        last_ns, advanced_s = self.simulated_ns, time.monotonic()
        while not predicate():
            now_ns = self.simulated_ns
            if now_ns is not None and deadline_ns is None:
                deadline_ns = now_ns + round(timeout_s * 1e9)
            if now_ns != last_ns:
                last_ns, advanced_s = now_ns, time.monotonic()
            elif time.monotonic() - advanced_s > stall_s:
                return f"no {what}: simulated time stood still for {stall_s:g} s of wall time; {self.stalled()}"
            if now_ns is not None and deadline_ns is not None and now_ns > deadline_ns:
                return f"no {what} within {timeout_s:g} s of simulated time"
            self.executor.spin_once(timeout_sec=0.01)
        return ""

    def stalled(self) -> str:
        """What sim_robot's last ``/diagnostics`` say simulated time waits for."""
        if self.simulated_ns is None:
            return "sim_robot publishes no /clock"
        statuses = self.diagnostics.get("sim_robot")
        if not statuses:
            return "sim_robot publishes no diagnostics"
        values = {item.key: item.value for item in statuses[-1][1].values}
        waiting = values.get("lockstep_waiting_for", "")
        if waiting == "trajectory":
            return "sim_robot waits for the next trajectory chunk of the excitation node"
        if waiting:
            return f"sim_robot waits for {waiting} to take its samples (lockstep)"
        return "sim_robot takes no step (its process gets no CPU?)"

    def subscribe_parameters(self, topic: str = "estimator/parameters") -> list[ReceivedParameters]:
        """A new reliable, transient-local subscription; the list fills as messages arrive."""
        return self.record(
            String,
            topic,
            LATCHED_QOS,
            convert=lambda message: ReceivedParameters(time.monotonic(), message.data, load_parameters(message.data)),
        )

    def subscribe_samples(self, joints: Sequence[str], topic: str = "recorder/samples") -> SampleLog:
        """Record the aligned samples of ``topic`` in the order ``joints``."""
        log = SampleLog(tuple(joints))
        self.node.create_subscription(JointState, topic, log.add, STREAM_QOS)
        return log

    def _on_diagnostics(self, message: DiagnosticArray) -> None:
        now = time.monotonic()
        prefix = f"{self.namespace}/" if self.namespace else ""
        for status in message.status:
            if status.name.startswith(prefix):
                self.diagnostics.setdefault(status.name[len(prefix) :], []).append((now, status))
