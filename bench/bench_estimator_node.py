"""The estimator node at 1 kHz (issue 26): the node's CPU time, and what of it the window's updates take.

``bench_stream.py`` times the window alone; a user runs the node. Here a publisher process streams
``/recorder/samples`` (``sensor_msgs/JointState``: positions and joint torques, no velocities) on the wall
clock at the recording's own instants, stamped with them. ``--robot arm6``: the scenario of ``bench_stream.py``
(the shipped arm's pick-and-place process repeated at 1 kHz, jittered stamps, quantised encoders, noisy motor
currents through the drive chain), the node configured by the shipped configuration's ``estimator`` block;
``--robot panda``: the mission's 7-axis case, the recording of ``bench_window_7axis.py`` (a Franka Emika Panda
along a Fourier excitation, its driver's 978 Hz stamps, link-side torques), the node with its default settings
and the Panda's joints. This process runs the estimator node as its ``main`` does (one BLAS thread,
``node_executor``, the start-up's objects frozen out of the garbage collector's full collections) and prints,
over the stream:

- samples published, received, accepted and missing; updates and parameter messages published;
- the process's CPU time (user + system, every thread) per second of data and as a share of one core over
  the stream's wall time, and each thread's (``/proc/self/task``): the executor's (the samples' way in:
  rclpy's take and deserialisation, the subscription callback, the diagnostics timer), the worker's, of which
  the window's updates (:meth:`SlidingWindowEstimator.update`) and the parameter documents
  (``window_parameter_file`` and ``dump_parameters`` as the node calls them) and the rest (taking the buffered
  samples into the window), DDS's, and any other.
- a SHA-256 of the published estimates (each publishable update's names and values, in order): the same
  recording must give the same estimates whatever the machine's load (``--busy-loops``) and however the
  node's threads took the samples.

``--busy-loops N`` runs N processes spinning ``while True: pass`` beside the stream (started here, killed by
their PIDs). Printed, never asserted: timings depend on the machine.

Run: ``.venv/bin/python bench/bench_estimator_node.py [--robot arm6|panda] [--minutes 1] [--busy-loops 0]``
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import multiprocessing.synchronize
import os
import resource
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dynamic_identification.network import network_environment  # noqa: E402 - imports no rclpy

NETWORK_ENV = network_environment()
os.environ.update(NETWORK_ENV)  # before rclpy is imported, here and (inherited) in the publisher process

import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from _common import PROCESS_RATE_HZ, busy_loops, fourier_recording, process_recording, stat_cpu_s  # noqa: E402
from bench_realistic import robot_preset  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

import dynamic_identification.nodes.estimator as estimator_module  # noqa: E402
from dynamic_identification.blas import use_one_blas_thread  # noqa: E402
from dynamic_identification.collector import freeze_startup_objects  # noqa: E402
from dynamic_identification.core.identification.in_process import SlidingWindowEstimator, WindowUpdate  # noqa: E402
from dynamic_identification.core.mechanism.robot import load_robot  # noqa: E402
from dynamic_identification.io.config import load_config, ros_parameters, simulated_robot  # noqa: E402
from dynamic_identification.nodes.runner import node_executor  # noqa: E402
from dynamic_identification.resources import shipped_path  # noqa: E402

ORIGIN_NS = 1_700_000_000 * 10**9
"""The stamp of the recording's start, ns: fixed, so that every run gives the node the same stamps (their float
seconds round alike) and the same updates."""
DRAIN_S = 3.0
"""Wall time after the last sample for the worker to finish the updates still pending, s."""


def publish(
    network_env: dict[str, str],
    recording: str,
    started: multiprocessing.synchronize.Event,
    results: multiprocessing.Queue,
) -> None:
    """Publisher process: the recording's samples on ``/recorder/samples``, each at its instant on the wall clock."""
    os.environ.update(network_env)  # the parent's domain (this re-imported module computed its own)
    from rclpy.node import Node
    from sensor_msgs.msg import JointState

    from dynamic_identification.nodes.conversions import joint_state_message
    from dynamic_identification.nodes.estimator import SAMPLES_QOS

    data = np.load(recording)
    names, stamps, q, tau = list(data["names"]), data["stamps"], data["q"], data["tau"]
    context = Context()
    rclpy.init(context=context)
    node = Node("bench_samples", context=context)
    samples = node.create_publisher(JointState, "/recorder/samples", SAMPLES_QOS)
    deadline = time.monotonic() + 10.0
    while samples.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.5)  # let discovery settle on both sides
    due_ns = np.round((stamps - stamps[0]) * 1e9).astype(np.int64)
    period_ns = int(np.median(np.diff(due_ns)))
    late = 0
    started.set()
    start = time.monotonic_ns()
    for k in range(stamps.size):
        wait = start + int(due_ns[k]) - time.monotonic_ns()
        if wait > 0:
            time.sleep(wait / 1e9)
        elif wait < -period_ns:
            late += 1
        samples.publish(joint_state_message(names, ORIGIN_NS + round(stamps[k] * 1e9), q[k], None, tau[k]))
    wall_s = (time.monotonic_ns() - start) / 1e9
    time.sleep(1.0)  # reliable delivery of the tail before the publisher disappears
    results.put({"published": int(stamps.size), "late": late, "publish_wall_s": wall_s})
    node.destroy_node()
    context.try_shutdown()


class _ThreadCpu:
    """The CPU time of the thread that runs each call of a wrapped function, summed, s."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self._lock = threading.Lock()

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                with self._lock:
                    self.seconds.append(time.thread_time() - start)

        return timed

    @property
    def total_s(self) -> float:
        with self._lock:
            return float(sum(self.seconds))


def thread_cpu_s() -> dict[int, tuple[str, float]]:
    """Each thread of this process: its name and CPU time (user + system), s, from ``/proc/self/task``."""
    threads = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            threads[int(task.name)] = ((task / "comm").read_text(encoding="utf-8").strip(), stat_cpu_s(task / "stat"))
        except OSError:  # the thread ended meanwhile
            continue
    return threads


@dataclass(frozen=True)
class Scenario:
    """A recording in an ``.npz`` (``names``, ``stamps`` s, ``q`` rad, ``tau`` N·m) and the node's parameters for it."""

    path: str
    description: str
    duration_s: float
    overrides: list[Parameter]


def arm6_scenario(folder: str, minutes: float, seed: int) -> Scenario:
    """``bench_stream.py``'s recording of ``minutes`` (:func:`_common.process_recording`); the shipped configuration's
    ``estimator``."""
    urdf, config_path = shipped_path("urdf", "dynid_arm6.urdf"), shipped_path("config", "dynid_arm6.yaml")
    robot, config = load_robot(urdf), load_config(str(config_path))
    simulated = simulated_robot(config_path, robot.n_joints)
    recording = process_recording(
        robot, config.drive_chain(robot.n_joints), config.drive_terms, simulated, minutes=minutes, seed=seed
    )
    stamps = recording.stamps
    path = str(Path(folder) / "recording.npz")
    np.savez(path, names=np.array(robot.joint_names), stamps=stamps, q=recording.q_measured, tau=recording.torques)
    overrides = [Parameter(name, value=value) for name, value in ros_parameters(config_path, "estimator").items()]
    description = f"the shipped arm's pick-and-place process at {PROCESS_RATE_HZ:g} Hz (bench_stream.py's recording)"
    return Scenario(path, description, float(stamps[-1] - stamps[0]), overrides)


def panda_scenario(folder: str, minutes: float, seed: int) -> Scenario:
    """``bench_window_7axis.py``'s recording of ``minutes``; the node's defaults with the Panda's joints."""
    preset = robot_preset("panda")
    robot = preset.robot()
    data = fourier_recording(robot, preset, seed=seed, duration_s=minutes * 60.0)
    path = str(Path(folder) / "recording.npz")
    np.savez(path, names=np.array(robot.joint_names), stamps=data.time, q=data.position, tau=data.measured_torque_nm)
    overrides = [
        Parameter("urdf", value=str(preset.urdf)),
        Parameter("joints", value=list(robot.joint_names)),
        Parameter("drive_chain.gear_ratios", value=data.drive_chain.gear_ratios.tolist()),
        Parameter("drive_chain.drive_gains", value=data.drive_chain.drive_gains.tolist()),
    ]
    description = "a Franka Emika Panda along a Fourier excitation at its driver's stamps (bench_window_7axis.py's)"
    return Scenario(path, description, float(data.time[-1] - data.time[0]), overrides)


SCENARIOS = {"arm6": arm6_scenario, "panda": panda_scenario}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", choices=sorted(SCENARIOS), default="arm6")
    parser.add_argument("--minutes", type=float, default=1.0, help="data streamed, min")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--busy-loops", type=int, default=0, help="processes spinning beside the stream")
    arguments = parser.parse_args()

    updates, documents = _ThreadCpu(), _ThreadCpu()
    published = hashlib.sha256()
    publish_update = estimator_module.EstimatorNode._publish_update

    def digested(node: estimator_module.EstimatorNode, update: WindowUpdate) -> None:
        if update.publishable:
            published.update(" ".join(update.names).encode() + update.values.tobytes())
        publish_update(node, update)

    estimator_module.EstimatorNode._publish_update = digested  # type: ignore[method-assign]
    SlidingWindowEstimator.update = updates.wrap(SlidingWindowEstimator.update)  # type: ignore[method-assign]
    estimator_module.window_parameter_file = documents.wrap(estimator_module.window_parameter_file)
    estimator_module.dump_parameters = documents.wrap(estimator_module.dump_parameters)

    spawn = multiprocessing.get_context("spawn")
    started = spawn.Event()
    results: multiprocessing.Queue = spawn.Queue()
    with tempfile.TemporaryDirectory() as folder:
        synthesis_start = time.perf_counter()
        scenario = SCENARIOS[arguments.robot](folder, arguments.minutes, arguments.seed)
        print(
            f"{os.cpu_count()} CPUs; {arguments.minutes:g} min of {scenario.description}, synthesised in"
            f" {time.perf_counter() - synthesis_start:.1f} s; {arguments.busy_loops} busy loop(s) beside"
        )
        publisher = spawn.Process(target=publish, args=(NETWORK_ENV, scenario.path, started, results), daemon=True)
        context = Context()
        rclpy.init(context=context)
        # As the estimator's main() (nodes.runner.run_node): one BLAS thread, its executor, the start-up's objects
        # out of the garbage collector's full collections (else each visited them all, in the middle of an update).
        use_one_blas_thread()
        node = estimator_module.EstimatorNode(context=context, parameter_overrides=scenario.overrides)
        executor = node_executor(context)
        executor.add_node(node)
        freeze_startup_objects()
        load = busy_loops(arguments.busy_loops) if arguments.busy_loops else nullcontext([])
        with load as pids:
            if pids:
                print(f"busy loops: PIDs {pids}")
            publisher.start()
            while not started.is_set() and publisher.is_alive():
                executor.spin_once(timeout_sec=0.01)
            cpu0, threads0, wall0 = resource.getrusage(resource.RUSAGE_SELF), thread_cpu_s(), time.monotonic()
            streaming, next_check = True, wall0
            while streaming:
                executor.spin_once(timeout_sec=0.01)
                if time.monotonic() >= next_check:  # the publisher's state, checked ten times a second
                    streaming = results.empty() and publisher.is_alive()
                    next_check += 0.1
            stream_wall_s = time.monotonic() - wall0
            drain_end = time.monotonic() + DRAIN_S
            while time.monotonic() < drain_end:
                executor.spin_once(timeout_sec=0.01)
            cpu1, threads1 = resource.getrusage(resource.RUSAGE_SELF), thread_cpu_s()
            roles = {threading.main_thread().native_id: "executor", node._worker.native_id: "worker"}
        figures = results.get(timeout=10.0)
        publisher.join(10.0)
        counts = node.input_counts()
        executor.shutdown()
        node.destroy_node()
        context.try_shutdown()

    cpu_s = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    data_s = scenario.duration_s
    by_role = {"executor": 0.0, "worker": 0.0, "dds": 0.0, "other": 0.0}
    for tid, (name, seconds) in threads1.items():
        role = roles.get(tid, "dds" if name.startswith("dds.") else "other")
        by_role[role] += seconds - threads0.get(tid, (name, 0.0))[1]
    worker_rest = by_role["worker"] - updates.total_s - documents.total_s
    print(
        f"  publisher      {figures['published']} samples in {figures['publish_wall_s']:.1f} s wall,"
        f" {figures['late']} more than a period late"
    )
    print(
        f"  estimator      received {counts.received}, accepted {counts.accepted}, missing {counts.missing};"
        f" {counts.updates} updates, {counts.published} parameter messages"
    )
    print(
        f"  CPU            {cpu_s:.2f} s for {data_s:.0f} s of data: {1e3 * cpu_s / data_s:.1f} ms per second of"
        f" data, {100.0 * cpu_s / stream_wall_s:.1f} % of one core over the stream's {stream_wall_s:.1f} s"
    )
    for label, seconds in (
        ("executor thread (samples in: take, deserialise, callback; diagnostics)", by_role["executor"]),
        ("worker thread", by_role["worker"]),
        ("  the window's updates", updates.total_s),
        ("  the parameter documents", documents.total_s),
        ("  the rest: the buffered samples into the window", worker_rest),
        ("DDS threads", by_role["dds"]),
        ("other threads", by_role["other"]),
    ):
        print(f"    {label:<72} {1e3 * seconds / data_s:7.2f} ms/s ({100.0 * seconds / cpu_s:4.1f} %)")
    print(f"  published      estimates SHA-256 {published.hexdigest()[:16]}")
    if updates.seconds:
        print(
            f"  an update      median {1e3 * float(np.median(updates.seconds)):.2f} ms of CPU"
            f" ({len(updates.seconds)} calls)"
        )


if __name__ == "__main__":
    main()
