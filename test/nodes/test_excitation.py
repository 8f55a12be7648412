"""The excitation node over real rclpy on loopback, driving the simulated robot, and its pure helpers."""

from __future__ import annotations

import functools
import pathlib
import threading
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticStatus
from numpy.testing import assert_allclose
from rcl_interfaces.msg import Log
from rclpy.context import Context
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, QoSReliabilityPolicy
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from dynamic_identification.core.excitation.collision import SelfCollisionError, SelfCollisionModel
from dynamic_identification.core.excitation.optimisation import BudgetedSearch
from dynamic_identification.core.excitation.safety import JointLimits, check_trajectory, executed_motion
from dynamic_identification.core.excitation.trajectory import SampledTrajectory, interpolate_trajectory
from dynamic_identification.core.mechanism.robot import load_robot
from dynamic_identification.io.trajectory import write_trajectory_csv
from dynamic_identification.nodes import excitation as excitation_module
from dynamic_identification.nodes.conversions import (
    arrays_from_joint_state,
    joint_state_message,
    stamp_to_ns,
    trajectory_points,
)
from dynamic_identification.nodes.excitation import (
    ExcitationNode,
    checked_playback,
    chunk_range,
    plan_from_file,
    playback_trajectory,
)
from dynamic_identification.nodes.qos import COMMAND_QOS, SENSOR_QOS
from dynamic_identification.nodes.sim_robot import SimRobotNode
from ros_graph import RosGraph, graphs
from ur5_collision import CLEAR_A, CLEAR_B, rest_to_rest

SIM_RATE_HZ = 250.0
FOURIER = [
    Parameter("mode", value="fourier"),
    Parameter("optimise", value=False),
    Parameter("fundamental_hz", value=0.5),
    Parameter("harmonics", value=2),
    Parameter("periods", value=1),
    Parameter("seed", value=3),
]


class _Graph(RosGraph):
    """Excitation (and optionally sim_robot) plus a probe recording every topic, in one executor."""

    def __init__(self, context: Context, overrides: list[Parameter], *, with_robot: bool = True) -> None:
        super().__init__(context, name="excitation_probe")
        self.excitation = self.add(ExcitationNode(context=context, parameter_overrides=overrides))
        self.sim = (
            self.add(SimRobotNode(context=context, parameter_overrides=[Parameter("rate_hz", value=SIM_RATE_HZ)]))
            if with_robot
            else None
        )
        self.states: list[JointState] = self.record(JointState, "/joint_states", SENSOR_QOS)
        self.commands: list[JointTrajectory] = self.record(JointTrajectory, "/joint_trajectory", COMMAND_QOS)
        self.diagnostics = self.record_diagnostics("excitation")

    def call(self, service: str) -> Trigger.Response:
        return super().call(f"/excitation/{service}")


@pytest.fixture
def graph(context: Context) -> Iterator[Callable[..., _Graph]]:
    with graphs(functools.partial(_Graph, context)) as make:
        yield make


def _measured(states: list[JointState], names: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    stamps, positions, velocities = [], [], []
    for message in states:
        stamp, q, dq, _ = arrays_from_joint_state(message, names)
        stamps.append(stamp)
        positions.append(q)
        velocities.append(dq)
    return np.array(stamps), np.array(positions), np.array(velocities)


def _after_samples(g: _Graph, end_ns: int, seconds: float) -> int:
    """Spin until the robot has sent ``seconds`` of samples (simulated steps) stamped after ``end_ns``, the end of
    the played motion; how many states were received then. Counted in samples, not waited in wall time: a busy
    machine delays the simulator's steps (and it drops a backlog), never the physics of the samples it sends."""
    count = round(seconds * SIM_RATE_HZ)
    g.spin(20.0, until=lambda: sum(stamp_to_ns(s.header.stamp) > end_ns for s in g.states[-count:]) >= count)
    return len(g.states)


def _ready(g: _Graph) -> None:
    assert g.excitation.wait_for_plan(10.0), "planning did not finish"
    g.spin(20.0, until=lambda: len(g.states) > 20 and g.excitation.state == "ready")
    assert g.excitation.state == "ready"


def test_start_plays_the_trajectory_that_the_robot_follows_within_limits(graph: Callable[..., _Graph]) -> None:
    g = graph(FOURIER)
    _ready(g)
    response = g.call("start")
    assert response.success, response.message
    playback = g.excitation._playback
    assert playback is not None
    motion = playback.trajectory
    g.spin(motion.duration_s + 3.0, until=lambda: g.excitation.state == "idle")
    assert g.excitation.state == "idle"
    finished_at = _after_samples(g, playback.start_ns + round(motion.duration_s * 1e9), 0.3)  # the loop settles
    _after_samples(g, playback.start_ns + round(motion.duration_s * 1e9), 0.6)

    names = g.excitation.joint_names
    robot = g.excitation.robot
    stamps, q, dq = _measured(g.states, names)
    t = stamps - playback.start_ns / 1e9
    playing = (t >= 0.0) & (t <= motion.time[-1])
    desired, _, _ = interpolate_trajectory(motion.time, motion.q, motion.dq, motion.ddq, t[playing])
    amplitude = np.ptp(motion.q, axis=0)
    assert np.all(amplitude > 0.1)  # every joint really moves
    tracking = np.abs(q[playing] - desired).max(axis=0)
    assert np.all(tracking < 0.1 * amplitude), f"tracking error {tracking} vs motion {amplitude}"
    assert np.all(q >= robot.lower_position_limits) and np.all(q <= robot.upper_position_limits)
    assert np.all(np.abs(dq) <= robot.velocity_limits)
    at_rest = q[finished_at:]  # the motion ends at rest where the played motion ends
    assert np.all(np.ptp(at_rest, axis=0) < 5e-3)
    assert_allclose(at_rest, np.broadcast_to(motion.q[-1], at_rest.shape), atol=0.02)

    # Every published chunk is a piece of the checked motion, stamped at playback start + its first point.
    chunks = [c for c in g.commands if stamp_to_ns(c.header.stamp) >= playback.start_ns]
    assert len(chunks) >= motion.duration_s * g.excitation.config.stream_rate_hz * 0.8
    for chunk in chunks:
        points = trajectory_points(chunk, names)
        assert points.times_s[0] == 0.0 and points.times_s[-1] <= g.excitation.config.horizon_s + 1e-9
        times = (points.start_ns - playback.start_ns) / 1e9 + points.times_s
        expected = interpolate_trajectory(motion.time, motion.q, motion.dq, motion.ddq, times)
        assert_allclose(points.positions, expected[0], atol=1e-9)
        assert_allclose(points.velocities, expected[1], atol=1e-9)
        assert_allclose(points.accelerations, expected[2], atol=1e-9)

    # Diagnostics report the mode and a progress that rises from 0 to 1.
    values = [{kv.key: kv.value for kv in status.values} for status in g.diagnostics]
    assert values and all(v["mode"] == "fourier" for v in values)
    running = [float(v["progress"]) for v in values if v["state"] == "running"]
    assert running and np.all(np.diff(running) >= 0.0) and 0.0 <= running[0] < 0.5
    assert float(values[-1]["progress"]) == 1.0 and g.diagnostics[-1].message == "idle"
    assert all(status.level == DiagnosticStatus.OK for status in g.diagnostics)
    assert float(values[-1]["duration_s"]) >= 0.0 and float(values[-1]["max_velocity_usage"]) <= 1.0


def test_stop_brings_the_robot_smoothly_to_rest(graph: Callable[..., _Graph]) -> None:
    g = graph(FOURIER)
    _ready(g)
    assert g.call("start").success
    start_ns = g.excitation._playback.start_ns
    g.spin(1.5)  # well inside the Fourier part
    response = g.call("stop")
    assert response.success, response.message
    stop = g.excitation._playback
    assert stop is not None and stop.stopping and g.excitation.state == "stopping"
    assert_allclose(stop.trajectory.dq[-1], 0.0, atol=1e-12)
    assert_allclose(stop.trajectory.ddq[-1], 0.0, atol=1e-12)
    g.spin(stop.trajectory.duration_s + 2.0, until=lambda: g.excitation.state == "idle")
    assert g.excitation.state == "idle"
    stopped_at = _after_samples(g, stop.start_ns + round(stop.trajectory.duration_s * 1e9), 0.3)  # the loop settles
    _after_samples(g, stop.start_ns + round(stop.trajectory.duration_s * 1e9), 0.8)

    robot = g.excitation.robot
    _, q, dq = _measured(g.states, g.excitation.joint_names)
    moving = np.abs(dq[:stopped_at]).max(axis=0)
    assert np.all(moving > 0.2), "the robot was moving before the stop"
    at_rest = q[stopped_at:]
    assert np.all(np.ptp(at_rest, axis=0) < 5e-3), "the robot still moves after the stop ramp"
    assert_allclose(at_rest, np.broadcast_to(stop.trajectory.q[-1], at_rest.shape), atol=0.02)
    assert np.all(q >= robot.lower_position_limits) and np.all(q <= robot.upper_position_limits)
    assert stop.start_ns > start_ns
    assert g.call("stop").success  # stopping an idle node succeeds trivially


def test_start_refuses_stale_or_missing_joint_states(graph: Callable[..., _Graph]) -> None:
    g = graph([*FOURIER, Parameter("stale_timeout_s", value=0.2)], with_robot=False)
    assert g.excitation.wait_for_plan(10.0)
    response = g.call("start")
    assert not response.success and "stale" in response.message and "none received" in response.message

    publisher = g.probe.create_publisher(JointState, "/joint_states", SENSOR_QOS)
    names = g.excitation.joint_names
    g.spin(20.0, until=lambda: publisher.get_subscription_count() > 0)
    publisher.publish(joint_state_message(names[:-1], 1, np.zeros(len(names) - 1), np.zeros(len(names) - 1)))
    g.spin(0.2)
    response = g.call("start")
    assert not response.success and names[-1] in response.message

    publisher.publish(joint_state_message(names, 1, np.zeros(len(names)), np.zeros(len(names))))
    g.spin(0.5)  # longer than stale_timeout_s
    response = g.call("start")
    assert not response.success and "stale" in response.message
    assert g.excitation.state == "ready"
    assert g.commands == []
    assert g.diagnostics and g.diagnostics[-1].level == DiagnosticStatus.WARN
    assert "stale" in g.diagnostics[-1].message


def _line(robot_joints: tuple[str, ...], speed: float, duration: float = 1.0) -> SampledTrajectory:
    time_s = np.linspace(0.0, duration, 101)
    n = len(robot_joints)
    q = np.zeros((time_s.size, n))
    q[:, 1] = speed * time_s
    dq = np.zeros_like(q)
    dq[:, 1] = speed
    return SampledTrajectory(time_s, q, dq, np.zeros_like(q), robot_joints)


def test_file_that_leaves_the_limits_is_refused_naming_the_violation(
    graph: Callable[..., _Graph], tmp_path: pathlib.Path, arm6_urdf: pathlib.Path
) -> None:
    robot = load_robot(arm6_urdf)
    path = tmp_path / "too_fast.csv"
    write_trajectory_csv(path, _line(robot.joint_names, speed=10.0))  # joint_2's limit is 4.5 rad/s
    g = graph([Parameter("mode", value="file"), Parameter("file", value=str(path))], with_robot=False)
    assert g.excitation.wait_for_plan(10.0)
    assert g.excitation.state == "failed" and g.excitation.plan is None
    response = g.call("start")
    assert not response.success
    assert "joint_2" in response.message and "velocity" in response.message
    g.spin(20.0, until=lambda: bool(g.diagnostics))
    assert g.diagnostics[-1].level == DiagnosticStatus.ERROR
    assert "joint_2" in g.diagnostics[-1].message and "velocity" in g.diagnostics[-1].message


def test_a_file_whose_motion_collides_with_the_robot_itself_is_refused_naming_the_links(
    graph: Callable[..., _Graph], tmp_path: pathlib.Path, example_urdf: Callable[[str], pathlib.Path]
) -> None:
    urdf, srdf = example_urdf("ur5_robot.urdf"), example_urdf("ur5.srdf")
    robot = load_robot(urdf)
    motion = executed_motion(rest_to_rest(robot.joint_names, [CLEAR_A, CLEAR_B], interval_s=2.0), check_rate_hz=100.0)
    trajectory = SampledTrajectory(motion.time, motion.q, motion.dq, motion.ddq, robot.joint_names)
    path = tmp_path / "through_the_forearm.csv"
    write_trajectory_csv(path, trajectory)
    limits = JointLimits.from_robot(robot)
    assert plan_from_file(str(path), robot, limits).trajectory.q.shape == trajectory.q.shape  # only a collision
    overrides = [("urdf", str(urdf)), ("collision_srdf", str(srdf)), ("mode", "file"), ("file", str(path))]
    g = graph([Parameter(name, value=value) for name, value in overrides], with_robot=False)
    assert g.excitation.wait_for_plan(20.0)
    assert g.excitation.state == "failed" and g.excitation.plan is None
    response = g.call("start")
    assert not response.success
    assert "self-collision" in response.message and "_link_0" in response.message


def test_the_ramp_in_from_the_current_position_is_checked_for_self_collision(
    example_urdf: Callable[[str], pathlib.Path],
) -> None:
    robot = load_robot(example_urdf("ur5_robot.urdf"))
    collision = SelfCollisionModel.from_urdf(robot, srdf=example_urdf("ur5.srdf"))
    assert collision is not None
    limits = JointLimits.from_robot(robot)
    held = rest_to_rest(robot.joint_names, [CLEAR_B, CLEAR_B], interval_s=1.0)
    motion = checked_playback(held, np.array(CLEAR_B), robot, limits, rate_hz=100.0, collision=collision)
    assert_allclose(motion.q, np.broadcast_to(CLEAR_B, motion.q.shape), atol=1e-12)
    with pytest.raises(SelfCollisionError) as raised:
        checked_playback(held, np.array(CLEAR_A), robot, limits, rate_hz=100.0, collision=collision)
    unchecked = playback_trajectory(held, np.array(CLEAR_A), limits, rate_hz=100.0)
    arrival_s = unchecked.time[np.argmax(np.all(np.abs(unchecked.q - CLEAR_B) < 1e-9, axis=1))]
    assert 0.0 < raised.value.time_s < arrival_s  # in the ramp from CLEAR_A, before the held pose is reached


def test_refuses_bad_parameters_naming_them(context: Context) -> None:
    with pytest.raises(ValueError, match="'mode'"):
        ExcitationNode(context=context, parameter_overrides=[Parameter("mode", value="random")])
    with pytest.raises(ValueError, match="'file'"):
        ExcitationNode(context=context, parameter_overrides=[Parameter("mode", value="file")])
    with pytest.raises(ValueError, match="'horizon_s'"):
        ExcitationNode(
            context=context,
            parameter_overrides=[Parameter("stream_rate_hz", value=1.0), Parameter("horizon_s", value=0.5)],
        )


def test_plan_from_file_reorders_joints_into_the_robot_order(tmp_path: pathlib.Path, arm6_urdf: pathlib.Path) -> None:
    robot = load_robot(arm6_urdf, ["joint_1", "joint_2"])
    line = _line(("joint_2", "joint_1"), speed=0.5)  # column 1 (joint_1) moves
    path = tmp_path / "line.csv"
    write_trajectory_csv(path, line.shifted(2.0))
    plan = plan_from_file(str(path), robot, JointLimits.from_robot(robot))
    assert plan.trajectory.joint_names == ("joint_1", "joint_2")
    assert_allclose(plan.trajectory.time, line.time)
    assert_allclose(plan.trajectory.q[:, 0], line.q[:, 1])
    assert_allclose(plan.trajectory.q[:, 1], 0.0)


def test_playback_ramps_in_from_rest_and_out_to_rest_within_limits(arm6_urdf: pathlib.Path) -> None:
    robot = load_robot(arm6_urdf, ["joint_1", "joint_2"])
    limits = JointLimits.from_robot(robot)
    time_s = np.arange(101) / 100.0
    omega = 2.0 * np.pi
    q = np.column_stack([0.5 * np.sin(omega * time_s), 0.3 * np.cos(omega * time_s)])
    dq = np.column_stack([0.5 * omega * np.cos(omega * time_s), -0.3 * omega * np.sin(omega * time_s)])
    ddq = -(omega**2) * q
    trajectory = SampledTrajectory(time_s, q, dq, ddq, robot.joint_names)
    q_now = np.array([-0.4, 0.2])
    motion = playback_trajectory(trajectory, q_now, limits, rate_hz=100.0)
    check_trajectory(motion, limits)
    assert_allclose(np.diff(motion.time), 0.01, atol=1e-9)
    assert_allclose(motion.q[0], q_now)
    assert_allclose(motion.dq[[0, -1]], 0.0, atol=1e-12)
    assert_allclose(motion.ddq[[0, -1]], 0.0, atol=1e-12)
    # The trajectory itself is played unchanged, sample for sample.
    start = int(np.argmin(np.abs(motion.q - q[0]).sum(axis=1) + np.abs(motion.dq - dq[0]).sum(axis=1)))
    assert_allclose(motion.q[start : start + 101], q, atol=1e-12)
    # C² joins: across a join the acceleration changes by no more than over the samples either side
    # (a step in acceleration, e.g. a ramp ending at rest, would jump by ~12 rad/s² here).
    jumps = np.abs(np.diff(motion.ddq, axis=0)).max(axis=1)
    for join in (start - 1, start + 100):
        assert jumps[join] <= 1.5 * max(jumps[join - 1], jumps[join + 1])


def test_chunk_range_starts_at_the_last_point_reached_and_spans_the_horizon() -> None:
    times = np.arange(11) * 0.1
    assert chunk_range(times, -0.5, 0.25) == (0, 2)
    assert chunk_range(times, 0.35, 0.3) == (3, 7)
    assert chunk_range(times, 0.99, 1.0) == (9, 11)
    assert chunk_range(times, 5.0, 1.0) == (10, 11)


def test_start_refuses_while_planning_and_the_executor_keeps_answering(
    graph: Callable[..., _Graph], monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    real = excitation_module.plan_excitation

    def slow_plan(*args: object, **kwargs: object) -> object:  # an optimisation that lasts until the test releases it
        assert release.wait(10.0)
        return real(*args, **kwargs)

    monkeypatch.setattr(excitation_module, "plan_excitation", slow_plan)
    g = graph(FOURIER, with_robot=False)
    response = g.call("start")
    assert not response.success and "still planning" in response.message
    assert g.excitation.state == "planning"
    assert g.diagnostics and g.diagnostics[-1].message == "refused: still planning the trajectory"
    release.set()
    assert g.excitation.wait_for_plan(10.0)
    assert g.excitation.state == "ready" and g.excitation.plan is not None


LONG_PLAN = [
    Parameter("mode", value="fourier"),
    Parameter("time_budget_s", value=3600.0),
    Parameter("max_evaluations", value=0),
]
"""An optimisation that searches for an hour (no evaluation budget): the node is destroyed long before it ends."""


def test_destroying_the_node_while_it_plans_stops_the_planner_and_it_publishes_nothing_after(
    context: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    searching = threading.Event()
    spend = BudgetedSearch.spend

    def spend_and_tell(search: BudgetedSearch) -> None:  # the test destroys the node once the search runs
        searching.set()
        spend(search)

    monkeypatch.setattr(BudgetedSearch, "spend", spend_and_tell)
    with graphs(functools.partial(RosGraph, context, name="excitation_probe")) as make:
        g = make()
        commands = g.record(JointTrajectory, "/joint_trajectory", COMMAND_QOS)
        diagnostics = g.record_diagnostics("excitation")
        logs: list[Log] = g.record(Log, "/rosout", QoSProfile(depth=100, reliability=QoSReliabilityPolicy.RELIABLE))
        before = set(threading.enumerate())
        node = ExcitationNode(context=context, parameter_overrides=LONG_PLAN)
        planners = [t for t in threading.enumerate() if t not in before and t.name == "excitation_planner"]
        assert len(planners) == 1
        g.executor.add_node(node)
        g.spin(10.0, until=lambda: bool(diagnostics))
        assert searching.wait(30.0), "the search did not start"
        assert node.state == "planning" and diagnostics[-1].message == "planning"
        g.executor.remove_node(node)
        node.destroy_node()
        planners[0].join(2.0)
        assert not planners[0].is_alive(), "the planner thread outlived destroy_node by 2 s"
        g.spin(0.5)  # what the node sent before it was destroyed arrives
        published = len(commands), len(diagnostics)
        g.spin(1.5)
        assert (len(commands), len(diagnostics)) == published
        assert commands == []
        said = [(log.level, log.msg) for log in logs if log.name == "excitation"]
        assert all(level <= Log.INFO for level, _ in said), said  # a cancelled plan is not an error
        assert sum("planning cancelled" in message for _, message in said) <= 1, said


def test_the_planning_logs_its_stages_and_the_search_budget_at_info_before_it_is_ready(context: Context) -> None:
    with graphs(functools.partial(RosGraph, context, name="excitation_probe")) as make:
        g = make()
        logs: list[Log] = g.record(Log, "/rosout", QoSProfile(depth=100, reliability=QoSReliabilityPolicy.RELIABLE))
        node = ExcitationNode(
            context=context,
            parameter_overrides=[Parameter("mode", value="fourier"), Parameter("max_evaluations", value=200)],
        )
        g.executor.add_node(node)
        try:
            assert node.wait_for_plan(60.0), "planning did not finish"
            g.spin(10.0, until=lambda: any(log.msg.startswith("ready: ") for log in logs))
        finally:
            g.executor.remove_node(node)
            node.destroy_node()
    said = [log.msg for log in logs if log.name == "excitation" and log.level == Log.INFO]
    ready = next(i for i, message in enumerate(said) if message.startswith("ready: "))
    planning = [message for message in said[:ready] if message.startswith("planning: ")]
    assert planning[0] == "planning: Fourier search (200 evaluations)", said
    search = [message for message in planning if message.startswith("planning: Fourier search: ")]
    assert 1 <= len(search) <= 10 and search[-1] == "planning: Fourier search: 100 % (200 of 200 evaluations)", planning
    assert planning[-1] == "planning: checks of the executed motion", planning


def _alternating_file(path: pathlib.Path, joints: tuple[str, ...], *, step_rad: float) -> pathlib.Path:
    """Joint 1 jumps between ±step/2 every 10 ms with zero velocity and acceleration columns: every sample is
    inside the limits, the quintic the controller draws between them is not."""
    time_s = np.arange(200) / 100.0
    q = np.zeros((time_s.size, len(joints)))
    q[:, 0] = np.where(np.arange(time_s.size) % 2 == 0, -0.5 * step_rad, 0.5 * step_rad)
    write_trajectory_csv(path, SampledTrajectory(time_s, q, np.zeros_like(q), np.zeros_like(q), joints))
    return path


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("file_alternating_1rad", ("joint_1", "contradict")),
        ("file_step_2rad", ("joint_1", "contradict")),
        ("rate_1hz", ("rate_hz = 1 Hz", "would work")),
        ("effort_limits_below_gravity", ("effort limits", "N·m")),
    ],
)
def test_a_repro_plan_is_refused_nothing_is_published_and_diagnostics_say_why(
    graph: Callable[..., _Graph], tmp_path: pathlib.Path, arm6_urdf: pathlib.Path, case: str, expected: tuple[str, str]
) -> None:
    joints = load_robot(arm6_urdf).joint_names
    overrides = {
        "file_alternating_1rad": [
            Parameter("mode", value="file"),
            Parameter("file", value=str(_alternating_file(tmp_path / "a.csv", joints, step_rad=2.0))),
        ],
        "file_step_2rad": [
            Parameter("mode", value="file"),
            Parameter("file", value=str(_alternating_file(tmp_path / "b.csv", joints, step_rad=4.0))),
        ],
        "rate_1hz": [
            Parameter("rate_hz", value=1.0),
            Parameter("fundamental_hz", value=0.33),
            Parameter("harmonics", value=3),
            Parameter("optimise", value=False),
            Parameter("horizon_s", value=3.0),
        ],
        "effort_limits_below_gravity": [*FOURIER, Parameter("limits.effort", value=[0.5] * 6)],
    }[case]
    g = graph(overrides, with_robot=False)
    assert g.excitation.wait_for_plan(60.0)
    assert g.excitation.state == "failed" and g.excitation.plan is None
    response = g.call("start")
    assert not response.success and all(text in response.message for text in expected), response.message
    g.spin(20.0, until=lambda: bool(g.diagnostics))
    assert g.diagnostics[-1].level == DiagnosticStatus.ERROR
    assert all(text in g.diagnostics[-1].message for text in expected), g.diagnostics[-1].message
    assert g.commands == []


def _now_ns(g: _Graph) -> int:
    return int(g.excitation.get_clock().now().nanoseconds)


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("zero_stamp", "header.stamp is 0"),
        ("future_stamp", "after the node clock"),
        ("old_stamp", "before the node clock"),
        ("nan_velocity", "velocity of joint_3 is nan"),
        ("nan_position", "position of joint_4 is inf"),
    ],
)
def test_start_refuses_joint_states_whose_stamp_or_values_cannot_be_trusted(
    graph: Callable[..., _Graph], case: str, expected: str
) -> None:
    g = graph(FOURIER, with_robot=False)
    assert g.excitation.wait_for_plan(10.0)
    publisher = g.probe.create_publisher(JointState, "/joint_states", SENSOR_QOS)
    names = g.excitation.joint_names
    g.spin(20.0, until=lambda: publisher.get_subscription_count() > 0)
    q, dq = np.zeros(len(names)), np.zeros(len(names))
    stamp = {"zero_stamp": 0, "future_stamp": _now_ns(g) + 10**10, "old_stamp": _now_ns(g) - 10**10}.get(
        case, _now_ns(g)
    )
    if case == "nan_velocity":
        dq[2] = np.nan
    if case == "nan_position":
        q[3] = np.inf
    received = len(g.states)
    g.probe.create_subscription(JointState, "/joint_states", g.states.append, SENSOR_QOS)
    publisher.publish(joint_state_message(names, stamp, q, dq))
    g.spin(5.0, until=lambda: len(g.states) > received)
    response = g.call("start")
    assert not response.success and expected in response.message, response.message
    assert g.excitation.state == "ready" and g.commands == []
    assert g.diagnostics and g.diagnostics[-1].level == DiagnosticStatus.WARN
    assert expected in g.diagnostics[-1].message
