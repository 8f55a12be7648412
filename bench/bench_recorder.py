"""Recorder at 1 kHz (or 5 kHz), 7 joints, two input topics: dropped samples and how they are reported.

Issue 5 benchmark. A separate process (its own rclpy context, same ROS domain, loopback
only) publishes ``/joint_states`` and ``/motor_currents`` for 7 joints at 1 kHz, the
currents stamped 0.3 ms after the joint states; this process runs the recorder node,
recording to a temporary file, and reports

* samples published, aligned and emitted on ``/recorder/samples``, unaligned, rejected;
* dropped = joint states published − samples emitted (target 0);
* samples in the recording file (read back with ``read_recording_csv``);
* the losses the recorder reports (``RecorderNode.losses``: joint states missing from
  the gaps of their stamps, refused, unaligned) and the worst diagnostics level seen
  during the run: nothing may be lost silently, so the recording plus the reported
  losses (and the joint states before the first current taken, counted apart) must account for every joint
  state published, exactly;
* CPU time of the recorder process (all its threads, DDS included) / wall time, as a
  share of one core.

The issue's figure is for 10 minutes (``--minutes 10``); the default of 1 minute is a
routine run; ``--rate 5000 --minutes 0.5`` is the 5 kHz case (more than a Python
recorder takes on a loaded 2-core machine: the losses must then be reported). Nothing is
asserted: timings depend on the machine.

Run: ``.venv/bin/python bench/bench_recorder.py [--minutes 10] [--rate 1000]``
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import tempfile
import time
from pathlib import Path

from dynamic_identification.network import network_environment  # noqa: E402 - imports no rclpy

NETWORK_ENV = network_environment()
os.environ.update(NETWORK_ENV)  # before rclpy is imported, here and (inherited) in the publisher process

import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from dynamic_identification.io.recording import read_recording_csv  # noqa: E402
from dynamic_identification.nodes.runner import node_executor  # noqa: E402

JOINTS = [f"joint_{k}" for k in range(1, 8)]
CURRENT_DELAY_NS = 300_000


def publish(
    network_env: dict[str, str],
    duration_s: float,
    rate_hz: float,
    started: multiprocessing.synchronize.Event,
    results: multiprocessing.Queue,
) -> None:
    """Publisher process: both topics at ``rate_hz`` for ``duration_s``, stamps on a fixed grid."""
    os.environ.update(network_env)  # the parent's domain (this re-imported module computed its own)
    from rclpy.node import Node
    from sensor_msgs.msg import JointState

    from dynamic_identification.nodes.conversions import joint_state_message
    from dynamic_identification.nodes.recorder import STREAM_QOS

    context = Context()
    rclpy.init(context=context)
    node = Node("bench_publisher", context=context)
    joint_states = node.create_publisher(JointState, "/joint_states", STREAM_QOS)
    currents = node.create_publisher(JointState, "/motor_currents", STREAM_QOS)
    deadline = time.monotonic() + 10.0
    while (joint_states.get_subscription_count() == 0 or currents.get_subscription_count() == 0) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.01)
    time.sleep(0.5)  # let discovery settle on both sides
    period_ns = round(1e9 / rate_hz)
    count = round(duration_s * rate_hz)
    phases = np.arange(len(JOINTS))
    late = 0
    started.set()
    first_stamp = time.time_ns()
    # One current before the first joint state, so that every joint state is bracketed.
    currents.publish(
        joint_state_message(JOINTS, first_stamp - period_ns + CURRENT_DELAY_NS, None, None, np.zeros(len(JOINTS)))
    )
    start = time.monotonic_ns()
    for k in range(count):
        due = start + k * period_ns
        wait = due - time.monotonic_ns()
        if wait > 0:
            time.sleep(wait / 1e9)
        elif wait < -period_ns:
            late += 1
        stamp = first_stamp + k * period_ns
        t = k / rate_hz
        q = 0.5 * np.sin(2.0 * np.pi * 0.2 * t + phases)
        dq = 0.2 * np.pi * np.cos(2.0 * np.pi * 0.2 * t + phases)
        joint_states.publish(joint_state_message(JOINTS, stamp, q, dq, np.zeros(len(JOINTS))))
        currents.publish(joint_state_message(JOINTS, stamp + CURRENT_DELAY_NS, None, None, np.sin(t + phases)))
    wall_s = (time.monotonic_ns() - start) / 1e9
    # One more current so the last joint state is bracketed.
    currents.publish(
        joint_state_message(
            JOINTS, first_stamp + count * period_ns + CURRENT_DELAY_NS, None, None, np.zeros(len(JOINTS))
        )
    )
    time.sleep(1.0)  # reliable delivery of the tail before the publisher disappears
    results.put({"published": count, "late": late, "publish_wall_s": wall_s})
    node.destroy_node()
    context.try_shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=1.0, help="publishing duration, min (issue figure: 10)")
    parser.add_argument("--rate", type=float, default=1000.0, help="publishing rate of each topic, Hz")
    args = parser.parse_args()
    duration_s = args.minutes * 60.0

    from dynamic_identification.nodes.recorder import RecorderNode

    spawn = multiprocessing.get_context("spawn")
    started = spawn.Event()
    results: multiprocessing.Queue = spawn.Queue()
    publisher = spawn.Process(target=publish, args=(NETWORK_ENV, duration_s, args.rate, started, results), daemon=True)

    with tempfile.TemporaryDirectory() as directory:
        context = Context()
        rclpy.init(context=context)
        node = RecorderNode(
            context=context,
            parameter_overrides=[
                Parameter("joints", value=JOINTS),
                Parameter("drive_chain.gear_ratios", value=[100.0, 100.0, 80.0, 60.0, 60.0, 50.0, 50.0]),
                Parameter("drive_chain.drive_gains", value=[0.45, 0.45, 0.4, 0.35, 0.3, 0.3, 0.3]),
                Parameter("output_dir", value=directory),
                Parameter("output_file", value="bench.csv"),
            ],
        )
        executor = node_executor(context)  # what the recorder's main() spins on
        executor.add_node(node)
        node._on_start(None, None)  # ~/start without a client in this process
        publisher.start()
        while not started.is_set() and publisher.is_alive():
            executor.spin_once(timeout_sec=0.01)
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        wall0 = time.monotonic()
        worst = DiagnosticStatus.OK
        warnings: list[str] = []
        next_check = time.monotonic() + 1.0
        while results.empty() and publisher.is_alive():
            executor.spin_once(timeout_sec=0.01)
            if time.monotonic() >= next_check:
                status = node.diagnostic_status()
                worst = max(worst, status.level)
                if status.level != DiagnosticStatus.OK:
                    warnings.append(status.message)
                next_check += 1.0
        wall_s = time.monotonic() - wall0
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
        drain_end = time.monotonic() + 1.0
        while time.monotonic() < drain_end:
            executor.spin_once(timeout_sec=0.01)
        figures = results.get(timeout=10.0)
        publisher.join(10.0)
        status = node.diagnostic_status()
        worst = max(worst, status.level)
        stopped = node._on_stop(None, None).message
        losses = node.losses()
        stats = node.aligner.stats
        recorded = read_recording_csv(Path(directory) / "bench.csv").n_samples
        emitted = node._published
        executor.shutdown()
        node.destroy_node()
        context.try_shutdown()

    cpu_s = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    published = figures["published"]
    print(f"recorder: {len(JOINTS)} joints, {args.rate:g} Hz per topic, {duration_s:g} s")
    print(f"  published        {published} joint states, {published + 2} current samples")
    print(f"  publisher        {figures['publish_wall_s']:.1f} s wall, {figures['late']} ticks more than a period late")
    print(f"  received         {stats.joint_states.received} joint states, {stats.currents.received} currents")
    print(f"  aligned/emitted  {stats.aligned} / {emitted}   unaligned {stats.unaligned}")
    print(f"  rejected         {stats.joint_states.rejected} joint states, {stats.currents.rejected} currents")
    print(f"  dropped          {published - emitted} (target 0)")
    print(f"  recording file   {recorded} samples")
    print(
        f"  reported lost    {losses.samples} joint states: {losses.missing} missing (gaps in their stamps),"
        f" {losses.refused} refused, {losses.unaligned} unaligned; {losses.currents_missing} currents missing;"
        f" {stats.before_currents} before the first current; {stats.pending} pending"
    )
    accounted = recorded + losses.samples + stats.before_currents + stats.pending
    verdict = "exact" if accounted == published else f"off by {published - accounted}"
    print(f"  accounting       recorded + reported = {accounted} of {published} published: {verdict}")
    level = {DiagnosticStatus.OK: "OK", DiagnosticStatus.WARN: "WARN", DiagnosticStatus.ERROR: "ERROR"}[worst]
    print(f"  diagnostics      worst level {level}; ~/stop: {stopped}")
    if warnings:
        print(f"  first warning    {warnings[0][:300]}")
    print(f"  CPU              {cpu_s:.1f} s over {wall_s:.1f} s = {100.0 * cpu_s / wall_s:.1f} % of one core")


if __name__ == "__main__":
    main()
