"""The estimator node over real rclpy on loopback: samples in, latched parameter YAML and diagnostics out.

Samples are synthesised from the exact inverse dynamics of the shipped 6-axis arm (true
drive parameters of ``config/dynid_arm6.yaml``, quantised encoders, noisy currents
converted to joint torques) and published as ``sensor_msgs/JointState`` in bursts, with
increasing stamps, as fast as the executor takes them.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import pathlib
import threading
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.context import Context
from rclpy.parameter import Parameter
from std_msgs.msg import String

from dynamic_identification import cli
from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.identification import torque_delay
from dynamic_identification.core.mechanism.robot import load_robot
from dynamic_identification.core.simulation import synthesize_measurements
from dynamic_identification.io.config import load_config, ros_parameters, simulated_robot
from dynamic_identification.io.parameters import FORMAT, load_parameters
from dynamic_identification.io.recording import recording_from_arrays, write_recording_csv
from dynamic_identification.nodes.conversions import NS_PER_S, joint_state_message, stamp_to_ns
from dynamic_identification.nodes.estimator import SAMPLES_QOS, EstimatorNode
from dynamic_identification.nodes.lockstep import ACKNOWLEDGE_PERIOD_S
from dynamic_identification.nodes.qos import ACKNOWLEDGEMENT_QOS, LATCHED_QOS
from repo_paths import ARM6_CONFIG, ARM6_URDF
from ros_graph import RosGraph, graphs

RATE_HZ = 250.0
START_S = 1000.0
"""Stamp of the first sample, s (any ROS time works; not 0, so a jump back stays positive)."""
BURST = 250
NAMESPACE = f"estimator_test_{os.getpid()}"
"""The nodes and probe of these tests run in a namespace of this process: another run sharing the
ROS domain cannot hand them a latched message."""
CHAIN = ros_parameters(ARM6_CONFIG, "estimator")
DRIVE_CHAIN = [
    Parameter("drive_chain.gear_ratios", value=[float(x) for x in CHAIN["drive_chain.gear_ratios"]]),
    Parameter("drive_chain.drive_gains", value=[float(x) for x in CHAIN["drive_chain.drive_gains"]]),
]


def synthesize(seconds: float, *, moving: bool, seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stamps (s, from 0), measured positions (rad) and joint torques (N·m) in model order."""
    robot = load_robot(ARM6_URDF)
    sim = simulated_robot(ARM6_CONFIG, robot.n_joints)
    drive, sensor = sim.drive, sim.sensor
    chain = load_config(str(ARM6_CONFIG)).drive_chain(robot.n_joints)
    stamps = np.arange(int(round(seconds * RATE_HZ))) / RATE_HZ
    if moving:
        trajectory = random_fourier_trajectory(robot, margin=0.2, velocity_fraction=0.5, seed=seed)
        q, dq, ddq = trajectory.evaluate(stamps)
    else:
        q = np.tile([0.1, -0.3, 0.4, 0.0, 0.2, 0.0], (stamps.size, 1))
        dq = ddq = np.zeros_like(q)
    q_measured, currents = synthesize_measurements(robot, chain, drive, stamps, q, dq, ddq, sensor, seed=seed)
    return stamps, q_measured, chain.joint_torques(currents)


@pytest.fixture(scope="module")
def moving() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return synthesize(10.0, moving=True)


class _Graph(RosGraph):
    """The estimator plus a probe publishing samples and recording its outputs, in one executor."""

    def __init__(self, context: Context, overrides: list[Parameter] | None = None) -> None:
        super().__init__(context, name="estimator_probe", namespace=NAMESPACE)
        self.estimator = self.add(
            EstimatorNode(context=context, namespace=NAMESPACE, parameter_overrides=[*DRIVE_CHAIN, *(overrides or [])])
        )
        self.parameters: list[String] = self.record(String, "estimator/parameters", LATCHED_QOS)
        self.diagnostics = self.record_diagnostics(f"{NAMESPACE}/estimator")
        self.samples = self.probe.create_publisher(
            type(joint_state_message(["a"], 0, [0.0])), "recorder/samples", SAMPLES_QOS
        )
        self.spin(20.0, until=lambda: self.samples.get_subscription_count() > 0)

    def received(self) -> int:
        return int(self.values()["samples_received"])

    def values(self) -> dict[str, str]:
        return {kv.key: kv.value for kv in self.estimator.diagnostic_status().values}

    def publish(self, stamps: np.ndarray, q: np.ndarray, effort: np.ndarray, *, order: list[int] | None = None) -> None:
        """Publish samples in bursts, letting the estimator take each burst before the next."""
        names = self.estimator.joint_names
        order = order or list(range(len(names)))
        for first in range(0, stamps.size, BURST):
            expected = self.received() + min(BURST, stamps.size - first)
            for k in range(first, min(first + BURST, stamps.size)):
                self.samples.publish(
                    joint_state_message(
                        [names[j] for j in order],
                        round((START_S + stamps[k]) * NS_PER_S),
                        q[k, order],
                        None,
                        effort[k, order],
                    )
                )
            self.spin(20.0, until=lambda expected=expected: self.received() >= expected)


@pytest.fixture
def graph(context: Context) -> Iterator[Callable[..., _Graph]]:
    with graphs(functools.partial(_Graph, context)) as make:
        yield make


def test_publishes_latched_parameters_and_writes_the_file(
    graph: Callable[..., _Graph],
    moving: tuple[np.ndarray, np.ndarray, np.ndarray],
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(torque_delay, "MEASURED_DATA_S", 2.0)  # the torques' delay on 2 s of rows, not a minute
    target = tmp_path / "estimated.yaml"
    g = graph([Parameter("parameters_file", value=str(target))])
    stamps, q, effort = moving
    g.publish(stamps, q, effort, order=[3, 0, 5, 1, 4, 2])  # joints matched by name, in any order
    end_s = START_S + stamps[-1]
    # The last update ends its chunk a sample before 9 s: the samples after it wait for the next chunk's end.
    g.spin(20.0, until=lambda: end_s - float(g.values().get("data_time_s", 0.0)) < 1.5)
    g.spin(20.0, until=lambda: len(g.parameters) >= int(g.values()["published"]) > 0)

    values = g.values()
    assert values["samples_received"] == str(stamps.size) and values["samples_refused"] == "0"
    assert int(values["published"]) >= 3 and g.parameters
    document = load_parameters(g.parameters[-1].data)
    assert document.joints == tuple(f"joint_{k}" for k in range(1, 7))
    assert all(math.isfinite(value) for value in document.values().values())
    assert document.removed, "sensitivity reduction removes some base parameters"
    assert document.quality["condition_number"] <= 100.0
    assert document.quality["relative_error"] < 0.05
    assert set(document.quality["joint_relative_errors"]) == set(document.joints)
    # The simulated torques are in time with the positions: measured (on too few rows to tell here), taken as recorded.
    assert values["torque_delay_s"] == "0" and not document.quality["torque_delay"]["aligned"]
    assert document.quality["torque_delay"]["reason"].startswith("torque delay: none (")
    assert START_S + 4.0 < document.stamp <= end_s  # the data time of the update
    assert g.parameters[-1].data.startswith(f"format: {FORMAT}")

    written = load_parameters(target)
    assert written.values() == document.values()

    # A subscriber that comes after the publication still gets the last parameters (transient local).
    late: list[String] = []
    g.probe.create_subscription(String, "estimator/parameters", late.append, LATCHED_QOS)
    g.spin(20.0, until=lambda: bool(late))
    assert len(late) == 1 and late[0].data == g.parameters[-1].data

    # The status of the update whose parameters were published last: on a busy machine the statuses of the updates
    # before it can be the last ones received when its parameters are in.
    def last_published_status() -> dict[str, str] | None:
        statuses = ({kv.key: kv.value for kv in s.values} for s in g.diagnostics if s.level == DiagnosticStatus.OK)
        return next((v for v in statuses if v.get("data_time_s") == f"{document.stamp:.6f}"), None)

    g.spin(20.0, until=lambda: last_published_status() is not None)
    published = last_published_status()
    assert published is not None, "no OK status of the update whose parameters were published last"
    assert float(published["condition_number"]) < float(published["condition_number_full"])
    assert float(published["window_fill"]) > 0.8
    assert {f"e_star/joint_{k}" for k in range(1, 7)} <= set(published)
    assert int(published["kept_count"]) + int(published["removed_count"]) == g.estimator._estimator.base.count


def test_standstill_publishes_nothing_and_reset_clears_the_window(graph: Callable[..., _Graph]) -> None:
    g = graph()
    stamps, q, effort = synthesize(7.0, moving=False)
    g.publish(stamps, q, effort)
    g.spin(20.0, until=lambda: int(g.values()["updates"]) >= 6 and float(g.values()["window_fill"]) > 0.2)
    values = g.values()
    # One update per second of data (the last sample is 6.996 s after the first, and starts no chunk), however the
    # worker batched them; the automatic cut-off is chosen at the sixth, the first with 5 s between its samples.
    assert values["updates"] == "6" and values["published"] == "0"
    assert "standstill" in values["reason"] and float(values["window_fill"]) > 0.2
    g.spin(20.0, until=lambda: any("standstill" in s.message for s in g.diagnostics))
    assert any(s.level == DiagnosticStatus.WARN and "standstill" in s.message for s in g.diagnostics)
    assert g.parameters == []

    response = g.call("estimator/reset")
    assert response.success, response.message
    g.spin(20.0, until=lambda: "reset" in g.diagnostics[-1].message)
    after = {kv.key: kv.value for kv in g.diagnostics[-1].values}
    assert float(after["window_fill"]) == 0.0 and "reset" in after["reason"]
    assert g.parameters == []


def test_a_torque_no_drive_produces_or_a_position_beyond_the_limits_is_refused_and_the_window_goes_on(
    graph: Callable[..., _Graph], moving: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> None:
    # The user-acceptance run: one sample of 1e300 N·m (finite) overflowed the window's sums and no estimate was
    # published for the remaining 48 s of data; a position of 100 rad went in unnoticed.
    g = graph()
    stamps, q, effort = moving
    corrupt_effort, corrupt_q = effort.copy(), q.copy()
    corrupt_effort[400, 1] = 1e300
    corrupt_q[600, 2] = 100.0
    g.publish(stamps[:401], q[:401], corrupt_effort[:401])
    status = g.estimator.diagnostic_status()
    assert status.level == DiagnosticStatus.ERROR and "torque of joint_2 is 1e+300 N·m" in status.message
    g.publish(stamps[401:601], q[401:601], effort[401:601])
    g.publish(stamps[600:601], corrupt_q[600:601], effort[600:601])
    assert "position of joint_3 is 100 rad" in g.estimator.diagnostic_status().message
    g.publish(stamps[601:], q[601:], effort[601:])
    end_s = START_S + stamps[-1]
    g.spin(20.0, until=lambda: end_s - float(g.values().get("data_time_s", 0.0)) < 1.5)
    values = g.values()
    assert values["samples_refused_invalid"] == "2" and int(values["published"]) >= 3
    document = load_parameters(g.parameters[-1].data)
    assert all(math.isfinite(value) for value in document.values().values())
    assert document.quality["relative_error"] < 0.05


def test_refuses_bad_samples_and_restarts_on_a_jump_back(
    graph: Callable[..., _Graph], moving: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> None:
    g = graph([Parameter("signal.position_cutoff_hz", value=20.0)])  # a window from its first samples
    stamps, q, effort = moving
    names = g.estimator.joint_names
    g.publish(stamps[:750], q[:750], effort[:750])  # 3 s
    g.spin(20.0, until=lambda: int(g.values()["updates"]) >= 2)
    before = g.values()
    assert float(before["window_s"]) > 1.0

    stamp_ns = round((START_S + stamps[749]) * NS_PER_S)
    # A sample stamped again with the last stamp (a stall, a millisecond counter), its positions new: accepted;
    # the same message again: refused.
    again = joint_state_message(names, stamp_ns, q[749] + 1e-4, None, effort[749])
    g.samples.publish(again)
    g.samples.publish(again)
    bad_q = q[750].copy()
    bad_q[2] = np.nan
    g.samples.publish(joint_state_message(names, stamp_ns + 10**7, bad_q, None, effort[750]))
    g.samples.publish(joint_state_message(names[:-1], stamp_ns + 10**7, q[750, :-1], None, effort[750, :-1]))
    g.spin(20.0, until=lambda: g.received() >= 754)
    refused = g.values()
    assert refused["samples_refused_invalid"] == "2" and refused["samples_refused_out_of_order"] == "1"
    status = g.estimator.diagnostic_status()
    assert status.level == DiagnosticStatus.ERROR and names[-1] in status.message

    # The recording loops back to its start (a bag replayed in a loop): the window restarts.
    updates = int(refused["updates"])
    g.publish(stamps[:300], q[:300], effort[:300])
    g.spin(20.0, until=lambda: g.values()["window_restarts"] == "1" and int(g.values()["updates"]) >= updates + 2)
    restarted = g.values()
    # First an update on the samples before the jump (as `dynid stream` does), then the restarted window's first.
    assert restarted["window_restarts"] == "1" and restarted["updates"] == str(updates + 2)
    assert "jumped back" in restarted["last_event"]
    assert float(restarted["data_time_s"]) < START_S + 1.5 < float(before["data_time_s"])
    assert float(restarted["window_s"]) < float(before["window_s"])
    assert g.estimator.diagnostic_status().level != DiagnosticStatus.ERROR  # good samples clear the input error


def test_counts_samples_lost_on_the_way_and_acknowledges_what_it_buffered(
    graph: Callable[..., _Graph], moving: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> None:
    # Samples that never arrive (a queue that overflowed upstream) leave gaps in the stamps: counted, reported at WARN.
    g = graph([Parameter("acknowledge", value=True)])
    acknowledged = g.record(Time, "estimator/acknowledged", ACKNOWLEDGEMENT_QOS, convert=stamp_to_ns)
    stamps, q, effort = moving
    kept = np.r_[0:200, 220:300]  # 20 samples lost after the first 200
    g.publish(stamps[kept], q[kept], effort[kept])
    assert g.values()["samples_missing"] == "20" and g.estimator.input_counts().missing == 20
    status = g.estimator.diagnostic_status()
    assert status.level >= DiagnosticStatus.WARN and "lost 20 samples" in status.message, status.message
    # Acknowledged up to the last sample, within one acknowledgement period (they are throttled to it).
    last_ns, period_ns = round((START_S + stamps[299]) * NS_PER_S), round(ACKNOWLEDGE_PERIOD_S * NS_PER_S)
    assert g.spin_until(lambda: bool(acknowledged) and acknowledged[-1] > last_ns - period_ns, 20.0), acknowledged[-3:]
    assert acknowledged[-1] <= last_ns


def test_an_update_ends_before_the_sample_that_ends_its_chunk_when_a_batch_of_samples_starts_there(
    graph: Callable[..., _Graph], moving: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> None:
    # The worker takes what has arrived: a batch that starts with the first sample of the next chunk (one update
    # period after the window's first) must update on the samples before it, as when it came alone.
    g = graph([Parameter("signal.position_cutoff_hz", value=20.0)])
    stamps, q, effort = moving
    g.publish(stamps[:250], q[:250], effort[:250])  # 0.996 s of data: no update due yet
    assert g.spin_until(lambda: g.values()["samples_buffered"] == "0", 20.0)
    assert g.values()["updates"] == "0"
    with g.estimator._estimator_lock:  # the worker busy (with an update, on a loaded machine) while samples arrive
        g.publish(stamps[250:300], q[250:300], effort[250:300])  # one batch from the chunk's end (1.000 s) on
    assert g.spin_until(lambda: "data_time_s" in g.values(), 20.0)
    assert float(g.values()["data_time_s"]) == START_S + stamps[249]
    assert g.values()["updates"] == "1"


def test_a_recording_replayed_into_the_node_gives_the_estimates_of_dynid_stream(
    graph: Callable[..., _Graph], moving: tuple[np.ndarray, np.ndarray, np.ndarray], tmp_path: pathlib.Path
) -> None:
    # The same recording, in batches the load decides (some held back by a busy worker) and looped back to its start
    # (a bag replayed in a loop): the node updates on the chunks `dynid stream` updates on, and publishes its
    # estimates. `dynid stream` also estimates the chunk the recording ends in, which the node waits on.
    stamps, q, effort = moving
    replay = np.r_[0 : stamps.size, 0:750]  # 10 s, then its first 3 s again
    seconds = np.round((START_S + stamps[replay]) * NS_PER_S) / NS_PER_S  # as the node reads the stamps back
    data, out = tmp_path / "replay.csv", tmp_path / "stream.jsonl"
    recording = recording_from_arrays(seconds, [f"joint_{k}" for k in range(1, 7)], q[replay], effort=effort[replay])
    write_recording_csv(data, recording)
    argv = ["stream", "--urdf", ARM6_URDF, "--data", data, "--config", ARM6_CONFIG, "--out", out]
    assert cli.main([str(arg) for arg in argv]) == 0
    streamed = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()][:-1]
    assert sum(line["restarted"] for line in streamed) == 1 and sum(line["publishable"] for line in streamed) >= 3

    g = graph([Parameter(key, value=value) for key, value in ros_parameters(ARM6_CONFIG, "estimator").items()])
    for batch, busy in ((slice(0, 400), False), (slice(400, 1500), True), (slice(1500, None), False)):
        with g.estimator._estimator_lock if busy else contextlib.nullcontext():  # a batch of 1100 samples
            g.publish(stamps[replay[batch]], q[replay[batch]], effort[replay[batch]])
    g.spin(60.0, until=lambda: int(g.values()["updates"]) >= len(streamed))
    assert int(g.values()["updates"]) == len(streamed) and g.values()["window_restarts"] == "1"
    g.spin(20.0, until=lambda: len(g.parameters) >= int(g.values()["published"]))
    published = [load_parameters(message.data) for message in g.parameters]
    expected = [line for line in streamed if line["publishable"]]
    assert [document.stamp for document in published] == [line["time"] for line in expected]
    for document, line in zip(published, expected, strict=True):
        assert document.values() == pytest.approx(line["parameters"], rel=1e-9, abs=0.0)


def test_refuses_bad_parameters_naming_them(context: Context) -> None:
    with pytest.raises(ValueError, match="update_period_s"):
        EstimatorNode(
            context=context,
            parameter_overrides=[
                Parameter("window.window_s", value=1.0),
                Parameter("window.update_period_s", value=2.0),
            ],
        )
    with pytest.raises(ValueError, match="window.reduction"):
        EstimatorNode(context=context, parameter_overrides=[Parameter("window.reduction", value="magic")])
    with pytest.raises(ValueError, match="'urdf'/'joints'"):
        EstimatorNode(context=context, parameter_overrides=[Parameter("joints", value=["no_such_joint"])])


def test_diagnostics_never_wait_for_the_worker(graph: Callable[..., _Graph]) -> None:
    """The worker holds its lock for a whole update; the diagnostics timer and ``last_update`` must not need it."""
    g = graph()
    answered = threading.Event()

    def read() -> None:
        g.estimator.diagnostic_status()
        _ = g.estimator.last_update
        answered.set()

    with g.estimator._estimator_lock:
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(5.0)
        assert answered.is_set(), "diagnostic_status() waited for the worker's lock"


def test_a_stamp_far_in_the_future_restarts_the_window_and_the_node_keeps_reporting(
    graph: Callable[..., _Graph], moving: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> None:
    """One stamp 1e6 s ahead used to hang the node: the worker interpolated the gap under its lock."""
    g = graph([Parameter("window.update_period_s", value=0.5)])
    stamps, q, effort = moving
    far = stamps.copy()
    far[1000] += 1e6
    g.publish(far, q, effort)
    count = len(g.diagnostics)
    g.spin(10.0, until=lambda: len(g.diagnostics) >= count + 2)  # the 1 Hz timer keeps firing
    assert len(g.diagnostics) >= count + 2
    assert g.values()["window_restarts"] == "1"
    # The window restarted at the first stamp after the far one and went on updating on the data after it.
    g.spin(10.0, until=lambda: (u := g.estimator.last_update) is not None and u.time_s > START_S + 8.0)
    update = g.estimator.last_update
    assert update is not None and START_S + 8.0 < update.time_s < START_S + 10.0
