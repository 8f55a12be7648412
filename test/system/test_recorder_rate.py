"""The recorder process at 5 kHz on two topics: every joint state is in the recording or reported lost.

The short version of ``bench/bench_recorder.py --rate 5000``: the test process publishes
``/joint_states`` and ``/motor_currents`` at 5 kHz for 3 s (7 joints, stamps on the 200 µs
grid, currents 50 µs after the joint states) to a ``recorder`` process that records them.
Whether a loaded machine keeps up or not, the recording plus the losses the recorder
reports must account for every joint state published, exactly, and any loss must have
been reported at WARN.
"""

from __future__ import annotations

import pathlib
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from dynamic_identification.io.recording import read_recording_csv
from dynamic_identification.nodes.conversions import joint_state_message
from dynamic_identification.nodes.recorder import STREAM_QOS

from .processes import NodeProcesses, Probe, answer

JOINTS = [f"joint_{k}" for k in range(1, 8)]
RATE_HZ = 5000.0
SECONDS = 3.0
CURRENT_DELAY_NS = 50_000


def call_once(probe: Probe, client: object, timeout_s: float = 30.0) -> Trigger.Response:
    """One request of ``client``, answered within ``timeout_s``: for ``~/stop``, whose answer reports the recording's
    losses (a second ``~/stop`` would not), sent seconds after the client's first request (:func:`answer`), when
    discovery has long made the answer's way."""
    future = client.call_async(Trigger.Request())  # type: ignore[attr-defined]
    assert probe.spin_until(future.done, timeout_s)
    return future.result()


def test_at_5_khz_every_joint_state_is_recorded_or_reported_lost(
    probe: Probe, ros_domain_id: int, tmp_path: pathlib.Path, namespace: str
) -> None:
    states = probe.node.create_publisher(JointState, "joint_states", STREAM_QOS)
    currents = probe.node.create_publisher(JointState, "motor_currents", STREAM_QOS)
    start = probe.node.create_client(Trigger, "recorder/start")
    stop = probe.node.create_client(Trigger, "recorder/stop")
    overrides = {
        "joints": JOINTS,
        "drive_chain.gear_ratios": [50.0] * 7,
        "drive_chain.drive_gains": [0.3] * 7,
        "output_dir": str(tmp_path),
        "output_file": "fast.csv",
    }
    with NodeProcesses(ros_domain_id, tmp_path, params_files=(), namespace=namespace) as nodes:
        nodes.start_with("recorder", overrides)
        ready = probe.spin_until(
            lambda: (
                states.get_subscription_count() > 0
                and currents.get_subscription_count() > 0
                and start.service_is_ready()
                and stop.service_is_ready()
            ),
            60.0,
        )
        assert ready, nodes.report()
        started = answer(probe, lambda: start.call_async(Trigger.Request()), "~/start")
        assert started.success or started.message.startswith("already recording to "), started.message
        period_ns = round(1e9 / RATE_HZ)
        count = round(SECONDS * RATE_HZ)
        first = time.time_ns()
        phases = np.arange(len(JOINTS))
        currents.publish(joint_state_message(JOINTS, first - period_ns + CURRENT_DELAY_NS, None, None, [0.0] * 7))
        began = time.monotonic_ns()
        for k in range(count):
            wait = began + k * period_ns - time.monotonic_ns()
            if wait > 0:
                time.sleep(wait / 1e9)
            stamp = first + k * period_ns
            q = 0.5 * np.sin(2.0 * np.pi * 0.2 * k / RATE_HZ + phases)
            states.publish(joint_state_message(JOINTS, stamp, q, None, None))
            currents.publish(joint_state_message(JOINTS, stamp + CURRENT_DELAY_NS, None, None, np.cos(q)))
            if k % 500 == 0:
                probe.executor.spin_once(timeout_sec=0.0)
        currents.publish(
            joint_state_message(JOINTS, first + count * period_ns + CURRENT_DELAY_NS, None, None, [0.0] * 7)
        )
        probe.spin_for(3.0)  # delivery of the queues, and a report after the last sample
        stopped = call_once(probe, stop)
        published_at = time.monotonic()
        assert probe.spin_until(
            lambda: any(received > published_at for received, _ in probe.diagnostics.get("recorder", [])), 10.0
        ), nodes.report()
        assert not nodes.dead(), nodes.report()

    statuses = [status for _, status in probe.diagnostics["recorder"]]
    final = {kv.key: kv.value for kv in statuses[-1].values}
    recorded = read_recording_csv(tmp_path / "fast.csv").n_samples
    lost = int(final["lost_samples"])
    pending = int(final["pending"])
    # Joint states before the first current the recorder took (its currents queue overflowing at once) are no loss
    # of the recording, which begins with both streams, but they are counted too.
    before = int(final["joint_states_before_currents"])
    print(f"{count} published, {recorded} recorded, {lost} reported lost ({final['joint_states_missing']} missing,"
          f" {final['unaligned']} unaligned), {before} before the first current, {pending} pending;"
          f" ~/stop: {stopped.message}")  # fmt: skip
    assert recorded + lost + before + pending == count
    if lost:
        assert any(status.level == DiagnosticStatus.WARN and "lost" in status.message for status in statuses)
        assert "lost during the recording" in stopped.message
