"""The recorder node over real rclpy on loopback: alignment, torques, recording files, diagnostics."""

from __future__ import annotations

import functools
import pathlib
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticStatus
from numpy.testing import assert_allclose
from rclpy.context import Context
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from dynamic_identification.core.mechanism.robot import DriveChain
from dynamic_identification.core.signal.alignment import current_to_torque
from dynamic_identification.io.recording import read_recording_csv
from dynamic_identification.nodes.conversions import (
    arrays_from_joint_state,
    joint_state_message,
    stamp_to_ns,
)
from dynamic_identification.nodes.lockstep import ACKNOWLEDGE_PERIOD_S
from dynamic_identification.nodes.qos import ACKNOWLEDGEMENT_QOS
from dynamic_identification.nodes.recorder import STREAM_QOS, RecorderNode
from ros_graph import RosGraph, graphs

JOINTS = ("a", "b", "c")
GEAR_RATIOS = [100.0, 50.0, 20.0]
DRIVE_GAINS = [0.4, 0.3, 0.2]
COUPLING = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, -1.0, 1.0]
CHAIN = DriveChain.create(3, gear_ratios=GEAR_RATIOS, drive_gains=DRIVE_GAINS, coupling=np.reshape(COUPLING, (3, 3)))
BASE = [
    Parameter("joints", value=list(JOINTS)),
    Parameter("drive_chain.gear_ratios", value=GEAR_RATIOS),
    Parameter("drive_chain.drive_gains", value=DRIVE_GAINS),
    Parameter("drive_chain.coupling", value=COUPLING),
]
RATE_HZ = 500.0
T0_NS = 1_700_000_000 * 1_000_000_000
SLOPE = np.array([0.8, -1.5, 2.5])  # A/s
OFFSET = np.array([0.2, 0.4, -0.6])  # A


def currents_at(stamp_ns: np.ndarray | int) -> np.ndarray:
    """Motor currents linear in time, so interpolating them is exact."""
    return OFFSET + np.multiply.outer((np.asarray(stamp_ns) - T0_NS) / 1e9, SLOPE)


def motion(stamp_ns: int) -> tuple[np.ndarray, np.ndarray]:
    t = (stamp_ns - T0_NS) / 1e9
    phase = 2.0 * np.pi * 0.5 * t + np.arange(3)
    return 0.5 * np.sin(phase), 0.5 * np.pi * np.cos(phase)


class _Graph(RosGraph):
    """The recorder and a probe that publishes its inputs and records its outputs, in one executor."""

    def __init__(self, context: Context, overrides: list[Parameter]) -> None:
        super().__init__(context, name="recorder_probe")
        self.recorder = self.add(RecorderNode(context=context, parameter_overrides=overrides))
        self.samples: list[JointState] = self.record(JointState, "/recorder/samples", STREAM_QOS)
        self.diagnostics = self.record_diagnostics("recorder")
        self.joint_states = self.probe.create_publisher(JointState, "/joint_states", STREAM_QOS)
        self.currents = self.probe.create_publisher(JointState, "/motor_currents", STREAM_QOS)
        self.spin(20.0, until=self.connected)

    def connected(self) -> bool:
        return (
            self.joint_states.get_subscription_count() > 0
            and (
                self.recorder.effort_is_torque
                or getattr(self.recorder, "currents_in_joint_states", False)
                or self.currents.get_subscription_count() > 0
            )
            and self.probe.count_publishers("/recorder/samples") > 0
        )

    def call(self, service: str) -> Trigger.Response:
        return super().call(f"/recorder/{service}")

    def wait_for_diagnostics(
        self, accept: Callable[[DiagnosticStatus], bool], seconds: float = 3.0
    ) -> DiagnosticStatus:
        self.spin(seconds, until=lambda: any(accept(status) for status in self.diagnostics))
        matching = [status for status in self.diagnostics if accept(status)]
        assert matching, f"no matching diagnostics; last: {self.diagnostics[-1:]}"
        return matching[-1]


@pytest.fixture
def graph(context: Context) -> Iterator[Callable[..., _Graph]]:
    with graphs(functools.partial(_Graph, context)) as make:
        yield make


def stamps(count: int, *, first: int = 0, offset_ns: int = 0, seed: int = 0) -> np.ndarray:
    """Jittered stamps (±0.2 ms) of samples ``first .. first + count - 1`` at ``RATE_HZ``, ns."""
    rng = np.random.default_rng(seed + first)
    k = np.arange(first, first + count)
    return T0_NS + offset_ns + np.round(k * 1e9 / RATE_HZ + rng.uniform(-2e5, 2e5, count)).astype(np.int64)


def streams(count: int, *, seed: int, offset_ns: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Stamps of ``count`` joint states (``seed``) and of the motor currents around them (``seed + 1``), ns.

    The currents have their own jittered stamps, ``offset_ns`` later: one sample before
    the first joint state and one after the last, so every joint state can be aligned.
    """
    return stamps(count, seed=seed), stamps(count + 2, first=-1, offset_ns=offset_ns, seed=seed + 1)


JOINT_STATE_NAMES = ["c", "extra", "a", "b"]  # any order, with a joint the recorder does not record
CURRENT_NAMES = ["b", "c", "a"]


def joint_state(stamp_ns: int, names: list[str] = JOINT_STATE_NAMES) -> JointState:
    q, dq = motion(stamp_ns)
    value = dict(zip(JOINTS, zip(q, dq, strict=True), strict=True)) | {"extra": (9.0, 9.0)}
    return joint_state_message(
        names, int(stamp_ns), [value[n][0] for n in names], [value[n][1] for n in names], [7.0] * len(names)
    )


def current_sample(stamp_ns: int) -> JointState:
    value = dict(zip(JOINTS, currents_at(int(stamp_ns)), strict=True))
    return joint_state_message(CURRENT_NAMES, int(stamp_ns), None, None, [value[n] for n in CURRENT_NAMES])


def stream(g: _Graph, js: np.ndarray, cur: np.ndarray, *, chunk: int = 10) -> None:
    """Publish both streams in chunks, alternating which topic goes first, spinning in between."""
    for start in range(0, max(js.size, cur.size), chunk):
        pairs = [(g.joint_states, joint_state, js), (g.currents, current_sample, cur)]
        for publisher, make, stamps_ns in pairs if (start // chunk) % 2 else pairs[::-1]:
            for stamp in stamps_ns[start : start + chunk]:
                publisher.publish(make(stamp))
        g.spin(0.005)


def expected_torques(js: np.ndarray) -> np.ndarray:
    return CHAIN.joint_torques(currents_at(js))


def test_samples_carry_drive_chain_torques_of_currents_interpolated_at_joint_state_stamps(
    graph: Callable[[list[Parameter]], _Graph],
) -> None:
    g = graph(BASE)
    js, cur = streams(500, seed=1, offset_ns=700_000)  # their own stamps, 0.7 ms later, jittered
    stream(g, js, cur)
    g.spin(20.0, until=lambda: len(g.samples) >= js.size)

    assert len(g.samples) == js.size
    arrays = [arrays_from_joint_state(sample, JOINTS) for sample in g.samples]
    assert [list(sample.name) for sample in g.samples[:1]] == [list(JOINTS)]
    assert [stamp_to_ns(sample.header.stamp) for sample in g.samples] == js.tolist()
    q = np.array([a[1] for a in arrays])
    dq = np.array([a[2] for a in arrays])
    effort = np.array([a[3] for a in arrays])
    assert_allclose(q, np.array([motion(s)[0] for s in js]), rtol=0.0, atol=0.0)
    assert_allclose(dq, np.array([motion(s)[1] for s in js]), rtol=0.0, atol=0.0)
    # Torques of 10..100 N·m: interpolation of linear currents is exact up to rounding.
    assert_allclose(effort, expected_torques(js), rtol=0.0, atol=1e-9)
    stats = g.recorder.aligner.stats
    assert (stats.aligned, stats.unaligned, stats.joint_states.rejected, stats.currents.rejected) == (500, 0, 0, 0)


def test_with_acknowledge_it_acknowledges_the_newest_stamp_taken_on_both_inputs(
    graph: Callable[[list[Parameter]], _Graph],
) -> None:
    # For a sim_robot in lockstep: what the recorder took of both streams, so the simulator may run on.
    g = graph([*BASE, Parameter("acknowledge", value=True)])
    acknowledged = g.record(Time, "/recorder/acknowledged", ACKNOWLEDGEMENT_QOS, convert=stamp_to_ns)
    js, cur = streams(100, seed=1, offset_ns=700_000)
    for stamp in js:  # joint states only: no current taken yet, nothing acknowledged
        g.joint_states.publish(joint_state(stamp))
    g.spin(20.0, until=lambda: g.recorder.losses().received >= js.size)
    g.spin(0.2)
    assert not acknowledged
    for stamp in cur[:51]:  # currents up to just after the 50th joint state
        g.currents.publish(current_sample(stamp))
    period_ns = round(ACKNOWLEDGE_PERIOD_S * 1e9)
    assert g.spin_until(lambda: bool(acknowledged) and acknowledged[-1] > cur[50] - period_ns, 20.0), acknowledged
    assert acknowledged[-1] <= cur[50] < js[-1]  # the older of the two newest stamps


def test_start_and_stop_write_a_recording_that_loads_with_the_right_joints_and_samples(
    graph: Callable[[list[Parameter]], _Graph], tmp_path: pathlib.Path
) -> None:
    g = graph([*BASE, Parameter("output_dir", value=str(tmp_path))])
    js, cur = streams(400, seed=3, offset_ns=-300_000)
    stream(g, js[:100], cur[:100])  # before ~/start: published, not recorded
    # The last joint state before ~/start waits for a later current to be aligned.
    g.spin(20.0, until=lambda: len(g.samples) >= 98)
    started = g.call("start")
    assert started.success, started.message
    path = g.recorder.recording
    assert path is not None and path.parent == tmp_path and path.name.startswith("recording_")
    assert str(path) in started.message
    before = len(g.samples)
    stream(g, js[100:], cur[100:])
    g.spin(20.0, until=lambda: len(g.samples) >= js.size)
    recorded = len(g.samples) - before
    stopped = g.call("stop")
    assert stopped.success and str(path) in stopped.message and f"{recorded} samples" in stopped.message
    assert g.recorder.recording is None

    recording = read_recording_csv(path)
    assert recording.joint_names == JOINTS
    assert recording.n_samples == recorded >= 300
    times_ns = js[js.size - recorded :]
    assert_allclose(recording.time, times_ns / 1e9, rtol=0.0, atol=1e-6)
    assert_allclose(recording.position, np.array([motion(s)[0] for s in times_ns]), rtol=0.0, atol=0.0)
    assert recording.velocity is not None and recording.current is not None and recording.effort is not None
    assert_allclose(recording.current, currents_at(times_ns), rtol=0.0, atol=1e-12)
    assert_allclose(recording.effort, expected_torques(times_ns), rtol=0.0, atol=1e-9)
    assert_allclose(recording.joint_torques(), CHAIN.joint_torques(recording.current), atol=1e-9)
    assert g.call("stop").message == "not recording"


@pytest.mark.parametrize("ros_home", [True, False])
def test_without_output_dir_start_records_under_ros_home_not_the_working_directory(
    graph: Callable[[list[Parameter]], _Graph],
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    ros_home: bool,
) -> None:
    """``ros2 launch`` runs the nodes in the caller's working directory: recordings go to
    ``$ROS_HOME/dynamic_identification/recordings`` (``ROS_HOME`` defaults to ``~/.ros``), as ROS keeps its logs."""
    monkeypatch.chdir(tmp_path)
    if ros_home:
        monkeypatch.setenv("ROS_HOME", str(tmp_path / "ros_home"))
        expected = tmp_path / "ros_home" / "dynamic_identification" / "recordings"
    else:
        monkeypatch.delenv("ROS_HOME", raising=False)
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        expected = tmp_path / "home" / ".ros" / "dynamic_identification" / "recordings"
    g = graph(BASE)
    started = g.call("start")
    assert started.success, started.message
    assert g.recorder.recording is not None and g.recorder.recording.parent == expected
    assert str(expected) in started.message
    g.call("stop")
    assert list(tmp_path.glob("*.csv")) == []


def _recording_into(graph: Callable[[list[Parameter]], _Graph], path: pathlib.Path) -> _Graph:
    """A recorder writing ``path`` (``output_dir`` and ``output_file``), started."""
    g = graph([*BASE, Parameter("output_dir", value=str(path.parent)), Parameter("output_file", value=path.name)])
    assert g.call("start").success
    return g


def _lines_written(path: pathlib.Path) -> int:
    """The complete lines in ``path`` after the header's, 0 before it exists."""
    return path.read_bytes().count(b"\n") - 1 if path.exists() else 0


def test_the_file_being_written_loads_mid_recording(
    graph: Callable[[list[Parameter]], _Graph], tmp_path: pathlib.Path
) -> None:
    g = _recording_into(graph, tmp_path / "run.csv")
    js, cur = streams(600, seed=5, offset_ns=500_000)
    stream(g, js[:300], cur[:301])
    g.spin(20.0, until=lambda: len(g.samples) >= 300)
    # Flushed within the 1 s flush period of the last sample, timed by the node's own timer: on a busy machine that
    # timer's tick may come later, and whole lines are written, so the file grows until it holds every sample.
    g.spin(20.0, until=lambda: _lines_written(tmp_path / "run.csv") >= 300)
    middle = read_recording_csv(tmp_path / "run.csv")
    assert middle.n_samples == 300 and middle.joint_names == JOINTS
    assert_allclose(middle.effort, expected_torques(js[:300]), atol=1e-9)
    stream(g, js[300:], cur[301:])
    g.spin(20.0, until=lambda: len(g.samples) >= 600)
    assert "600 samples" in g.call("stop").message
    assert read_recording_csv(tmp_path / "run.csv").n_samples == 600
    assert g.call("start").success  # a second recording never overwrites the first
    assert g.recorder.recording == tmp_path / "run_1.csv"


def test_extra_joints_are_ignored_and_a_missing_joint_is_reported_and_refused(
    graph: Callable[[list[Parameter]], _Graph],
) -> None:
    g = graph(BASE)
    js = stamps(50, seed=7)
    stream(g, js[:20], stamps(22, first=-1, seed=8))  # with the extra joint: all fine
    g.spin(20.0, until=lambda: len(g.samples) >= 20)
    assert len(g.samples) == 20
    for stamp in js[20:]:
        g.joint_states.publish(joint_state(stamp, names=["c", "extra", "a"]))  # 'b' is missing
    # The first snapshot at ERROR may come before the 30th refusal: wait for a snapshot with every one counted.
    status = g.wait_for_diagnostics(
        lambda s: s.level == DiagnosticStatus.ERROR and values_of(s).get("joint_states_refused") == "30", seconds=20.0
    )
    assert "/joint_states" in status.message and "'b'" in status.message
    assert values_of(status)["aligned"] == "20"
    assert len(g.samples) == 20


def test_nan_and_duplicate_samples_are_counted_in_the_diagnostics(
    graph: Callable[[list[Parameter]], _Graph],
) -> None:
    g = graph(BASE)
    js, cur = streams(40, seed=9)
    stream(g, js[:20], cur[:21])
    nan_state = joint_state(js[20])
    nan_state.position[2] = float("nan")
    g.joint_states.publish(nan_state)
    g.joint_states.publish(joint_state(js[19]))  # duplicate stamp
    nan_current = current_sample(cur[21])
    nan_current.effort[0] = float("nan")
    g.currents.publish(nan_current)
    stream(g, js[21:], cur[22:])
    # Every message counted (the last current may come after the last alignment), then read.
    status = g.wait_for_diagnostics(lambda s: _counted(values_of(s), aligned=39, currents=cur.size))
    values = values_of(status)
    # A NaN is refused on arrival, counted and logged as every unusable message is; a duplicate by the alignment.
    assert values["joint_states_refused"] == "1" and values["motor_currents_refused"] == "1"
    assert values["joint_states_rejected_duplicate"] == "1"
    assert values["joint_states_received"] == "41" and values["motor_currents_received"] == "42"
    assert all(np.all(np.isfinite(sample.effort)) for sample in g.samples)
    assert len(g.samples) == 39  # the joint state with NaN is not emitted, the others are


def test_joint_states_before_the_first_current_are_counted_apart_and_no_loss(
    graph: Callable[[list[Parameter]], _Graph],
) -> None:
    # A recorder that subscribes to a running robot: its currents subscription takes its first sample a few joint
    # states after its joint-state subscription did. Those joint states cannot be aligned, but nothing was lost.
    g = graph([*BASE, Parameter("silent_timeout_s", value=60.0)])  # the streams end here: no silence warning
    js, cur = streams(100, seed=21, offset_ns=700_000)  # cur[k + 1] is 0.3-1.1 ms after js[k]
    stream(g, js, cur[4:])  # the first current taken: just after js[3]
    status = g.wait_for_diagnostics(lambda s: values_of(s).get("aligned") == "96", seconds=20.0)
    values = values_of(status)
    assert (values["joint_states_before_currents"], values["unaligned"], values["lost_samples"]) == ("4", "0", "0")
    assert status.level == DiagnosticStatus.OK, status.message
    assert [stamp_to_ns(sample.header.stamp) for sample in g.samples] == js[4:].tolist()


def test_currents_before_the_first_joint_state_names_the_joints_are_counted_apart_and_no_loss(
    graph: Callable[[list[Parameter]], _Graph],
) -> None:
    # Without `joints` configured the first joint state names the joints and their order: a current that comes
    # before it cannot be read yet. It is counted, so that the currents received add up.
    g = graph([*BASE[1:], Parameter("silent_timeout_s", value=60.0)])
    js, cur = streams(60, seed=23, offset_ns=700_000)
    for stamp in cur[:3]:
        g.currents.publish(current_sample(stamp))
    g.spin(0.5)
    for state, current in zip(js[3:], cur[3 : js.size], strict=True):  # cur[k] comes just before js[k]
        g.joint_states.publish(joint_state(state, names=list(JOINTS)))
        g.currents.publish(current_sample(current))
        g.spin(0.002)
    for current in cur[js.size :]:
        g.currents.publish(current_sample(current))
    # The last currents come after the last alignment: wait until every one is counted.
    status = g.wait_for_diagnostics(lambda s: _counted(values_of(s), aligned=57, currents=cur.size), seconds=20.0)
    values = values_of(status)
    assert (values["motor_currents_before_joint_states"], values["lost_samples"]) == ("3", "0")
    assert status.level == DiagnosticStatus.OK, status.message


def test_stop_names_the_joint_states_a_recording_lacks_because_the_currents_had_not_begun(
    graph: Callable[[list[Parameter]], _Graph], tmp_path: pathlib.Path
) -> None:
    g = _recording_into(graph, tmp_path / "late_currents.csv")
    js, cur = streams(100, seed=22, offset_ns=700_000)
    stream(g, js, cur[4:])  # the first current taken: just after js[3]
    g.wait_for_diagnostics(lambda s: values_of(s).get("recording_samples") == "96", seconds=20.0)
    stopped = g.call("stop")
    assert "4 joint states before the first motor current, not recorded" in stopped.message, stopped.message
    assert "lost" not in stopped.message, stopped.message
    assert read_recording_csv(tmp_path / "late_currents.csv").n_samples == 96


def test_a_silent_currents_topic_is_reported_in_the_diagnostics(graph: Callable[[list[Parameter]], _Graph]) -> None:
    g = graph([*BASE, Parameter("silent_timeout_s", value=0.3)])
    js = stamps(5000, seed=11)
    stream(g, js[:50], stamps(52, first=-1, seed=12))
    for start in range(50, js.size, 25):  # the currents stop; joint states go on in real time until reported
        for stamp in js[start : start + 25]:
            g.joint_states.publish(joint_state(stamp))
        g.spin(0.05)
        if any("silent" in status.message for status in g.diagnostics):
            break
    status = g.wait_for_diagnostics(lambda s: "silent" in s.message)
    assert status.level == DiagnosticStatus.WARN
    assert "silent: /motor_currents" in status.message and "/joint_states" not in status.message
    values = {kv.key: kv.value for kv in status.values}
    assert values["silent_topics"] == "/motor_currents"
    assert int(values["unaligned"]) > 0 and 50 <= int(values["aligned"]) <= 51


def test_effort_is_torque_publishes_the_joint_state_efforts(graph: Callable[[list[Parameter]], _Graph]) -> None:
    g = graph([Parameter("joints", value=list(JOINTS)), Parameter("topics.effort_is_torque", value=True)])
    js = stamps(30, seed=13)
    for stamp in js:
        g.joint_states.publish(joint_state(stamp))
    g.spin(20.0, until=lambda: len(g.samples) >= 30)
    assert [stamp_to_ns(s.header.stamp) for s in g.samples] == js.tolist()
    assert_allclose(np.array([s.effort for s in g.samples]), 7.0)


def test_currents_in_the_joint_states_effort_are_recorded_from_one_subscription(
    graph: Callable[[list[Parameter]], _Graph], tmp_path: pathlib.Path
) -> None:
    # A driver that publishes the motor currents in JointState.effort: topics.motor_currents names that topic.
    one_topic = Parameter("topics.motor_currents", value="joint_states")
    g = graph([*BASE, one_topic, Parameter("output_dir", value=str(tmp_path))])
    assert g.call("start").success
    js = stamps(200, seed=15)
    for stamp in js:
        message = joint_state(stamp)
        message.effort = [dict(zip(JOINTS, currents_at(int(stamp)), strict=True)).get(n, 9.0) for n in message.name]
        g.joint_states.publish(message)
    g.spin(20.0, until=lambda: len(g.samples) >= js.size)
    g.call("stop")

    assert [stamp_to_ns(sample.header.stamp) for sample in g.samples] == js.tolist()
    effort = np.array([arrays_from_joint_state(sample, JOINTS)[3] for sample in g.samples])
    assert_allclose(effort, expected_torques(js), rtol=0.0, atol=1e-9)
    recording = read_recording_csv(next(tmp_path.glob("recording_*.csv")))
    assert_allclose(recording.current, currents_at(js), rtol=0.0, atol=0.0)
    assert g.probe.count_subscribers("/joint_states") == 1  # one message: positions and currents, no alignment
    assert g.recorder.aligner.stats.currents.received == 0


def test_the_polynomial_current_model_converts_the_currents(graph: Callable[[list[Parameter]], _Graph]) -> None:
    polynomial = [0.05, 0.4, -0.01, 0.002, 0.0, 0.3, 0.02, 0.0, 0.1, 0.2, 0.0, -0.001]
    g = graph([*BASE, Parameter("current_polynomial", value=polynomial)])
    js, cur = streams(30, seed=14, offset_ns=400_000)
    stream(g, js, cur)
    g.spin(20.0, until=lambda: len(g.samples) >= 30)
    effort = np.array([arrays_from_joint_state(s, JOINTS)[3] for s in g.samples])
    assert_allclose(effort, current_to_torque(currents_at(js), CHAIN, polynomial), atol=1e-9)


@pytest.mark.parametrize(
    ("overrides", "name"),
    [
        ([Parameter("tolerance_s", value=0.5), Parameter("max_delay_s", value=0.1)], "max_delay_s"),
        ([*BASE, Parameter("current_polynomial", value=[1.0, 2.0])], "current polynomial"),
        ([Parameter("joints", value=["a", "b"]), Parameter("drive_chain.gear_ratios", value=[1.0])], "gear_ratios"),
    ],
)
def test_bad_parameters_are_refused_naming_them(context: Context, overrides: list[Parameter], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        RecorderNode(context=context, parameter_overrides=overrides)


def values_of(status: DiagnosticStatus) -> dict[str, str]:
    return {kv.key: kv.value for kv in status.values}


def _counted(values: dict[str, str], *, aligned: int, currents: int) -> bool:
    """Whether a diagnostics snapshot shows ``aligned`` samples and ``currents`` motor currents received: the
    currents after the last aligned joint state may still be on their way when it is aligned."""
    return values.get("aligned") == str(aligned) and values.get("motor_currents_received") == str(currents)


def test_joint_states_lost_on_the_way_are_reported_at_warn_with_their_exact_count(
    graph: Callable[[list[Parameter]], _Graph], tmp_path: pathlib.Path
) -> None:
    g = _recording_into(graph, tmp_path / "gap.csv")
    js, cur = streams(400, seed=16, offset_ns=300_000)
    kept = np.concatenate([js[:150], js[167:300], js[302:]])  # 17 + 2 joint states never arrive
    stream(g, kept, cur)
    # Stopped once every sample that came is in the file: the count of the lost ones is complete before the
    # last samples are aligned, and on a loaded machine they were still on their way (the file 17 short).
    status = g.wait_for_diagnostics(
        lambda s: values_of(s).get("lost_samples") == "19" and values_of(s).get("recording_samples") == "381",
        seconds=20.0,
    )
    stopped = g.call("stop")
    values = values_of(status)
    assert status.level == DiagnosticStatus.WARN and "missing" in status.message, status.message
    assert values["joint_states_missing"] == "19" and values["unaligned"] == "0"
    assert "19 joint states missing" in stopped.message
    assert read_recording_csv(tmp_path / "gap.csv").n_samples + 19 == 400


def test_a_current_clock_stepping_back_is_reported_not_refused_for_good(
    graph: Callable[[list[Parameter]], _Graph],
) -> None:
    g = graph(BASE)
    js, cur = streams(300, seed=18, offset_ns=300_000)
    cur[150:] -= 10 * 10**9  # the current sensor's clock jumps back 10 s; the joint states' does not
    stream(g, js, cur)
    status = g.wait_for_diagnostics(lambda s: "behind" in s.message, seconds=20.0)
    values = values_of(status)
    assert status.level in (DiagnosticStatus.WARN, DiagnosticStatus.ERROR)
    assert values["motor_currents_restarts"] == "1" and values["motor_currents_rejected_out_of_order"] == "0"
    assert int(values["unaligned"]) > 0 and "s behind the joint states'" in status.message


def test_unstamped_messages_are_aligned_at_their_receive_time_with_a_warning(
    graph: Callable[[list[Parameter]], _Graph],
) -> None:
    """A driver that leaves header.stamp at 0: 4999 of 5000 samples were refused as repeated stamps.

    Receive times are spread by the load of the machine, so the tolerance spans the delivery of one sample
    (each joint state is received between its two currents): what aligns is then the order, not the load.
    """
    g = graph([*BASE, Parameter("tolerance_s", value=0.5), Parameter("max_delay_s", value=2.0)])
    count = 200

    def deliver(publisher: object, message: JointState) -> None:
        message.header.stamp = Time()
        before = values_of(g.recorder.diagnostic_status())
        key = "motor_currents_received" if publisher is g.currents else "joint_states_received"
        publisher.publish(message)  # type: ignore[attr-defined]
        g.spin(20.0, until=lambda: values_of(g.recorder.diagnostic_status())[key] != before[key])

    for _ in range(count):  # each joint state between two currents, received in this order
        deliver(g.currents, current_sample(T0_NS))
        deliver(g.joint_states, joint_state(T0_NS))
        deliver(g.currents, current_sample(T0_NS))
    status = g.wait_for_diagnostics(lambda s: int(values_of(s).get("aligned", "0")) >= count - 1, seconds=20.0)
    values = values_of(status)
    assert values["joint_states_unstamped"] == str(count) and values["joint_states_rejected_duplicate"] == "0"
    assert status.level == DiagnosticStatus.WARN and "unstamped" in status.message
