"""Faults with the nodes as separate processes: a sensor topic goes silent, the estimator restarts.

The test process plays the robot: it publishes synthetic ``/joint_states`` and
``/motor_currents`` (or, for the estimator alone, ``/recorder/samples``) in real time at
250 Hz, from the exact inverse dynamics of the shipped arm with the simulator's drive
chain, friction, rotor inertia, encoder quantisation and current noise
(:func:`~dynamic_identification.core.simulation.synthesize_measurements`), so it can
stop one topic at will. ``recorder`` and ``estimator`` run as their own processes.
"""

from __future__ import annotations

import pathlib
import time
from dataclasses import dataclass

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.context import Context
from sensor_msgs.msg import JointState

from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.mechanism.robot import (
    DriveTerms,
    load_robot,
    standard_parameter_names,
)
from dynamic_identification.core.simulation import synthesize_measurements
from dynamic_identification.io.config import load_config, simulated_robot
from dynamic_identification.io.parameters import ParameterFile, load_parameters, write_parameters_atomic
from dynamic_identification.nodes.conversions import NS_PER_S, joint_state_message
from dynamic_identification.nodes.estimator import SAMPLES_QOS
from dynamic_identification.nodes.recorder import STREAM_QOS
from repo_paths import ARM6_CONFIG, ARM6_URDF

from .processes import NodeProcesses, Probe

RATE_HZ = 250.0
DURATION_S = 60.0
"""Seconds of synthetic motion prepared (more than any test plays)."""
PUBLISH_PERIOD_S = 0.02
"""The due samples are published in bursts this often (s): real time on average."""
WINDOW_OVERRIDES = {"window.window_s": 8.0, "window.update_period_s": 1.0}
SILENCE_S = 5.0
SETTLE_S = 2.0
"""Seconds after the currents stop within which data already sent may still yield an update."""


@dataclass(frozen=True)
class Motion:
    """Synthetic measurements in model joint order: stamps (s from 0), q (rad), dq (rad/s), currents (A), τ (N·m)."""

    joints: tuple[str, ...]
    stamps: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    currents: np.ndarray
    torques: np.ndarray


@pytest.fixture(scope="module")
def motion() -> Motion:
    robot = load_robot(ARM6_URDF)
    simulated = simulated_robot(ARM6_CONFIG, robot.n_joints)
    drive, sensor = simulated.drive, simulated.sensor
    chain = load_config(str(ARM6_CONFIG)).drive_chain(robot.n_joints)
    stamps = np.arange(round(DURATION_S * RATE_HZ)) / RATE_HZ
    trajectory = random_fourier_trajectory(robot, margin=0.2, velocity_fraction=0.5, seed=3)
    q, dq, ddq = trajectory.evaluate(stamps)
    q_measured, currents = synthesize_measurements(robot, chain, drive, stamps, q, dq, ddq, sensor, seed=3)
    return Motion(robot.joint_names, stamps, q_measured, dq, currents, chain.joint_torques(currents))


class Player:
    """Publishes ``motion`` in real time from the probe's timer: sensor topics, or aligned samples directly."""

    def __init__(self, probe: Probe, motion: Motion, *, samples: bool = False) -> None:
        self.motion = motion
        self.samples = samples
        node = probe.node
        if samples:
            self.outputs = [node.create_publisher(JointState, "recorder/samples", SAMPLES_QOS)]
        else:
            self.outputs = [
                node.create_publisher(JointState, "joint_states", STREAM_QOS),
                node.create_publisher(JointState, "motor_currents", STREAM_QOS),
            ]
        self.clock = node.get_clock()
        self.start_ns: int | None = None
        self.next = 0
        self.currents_on = True
        self.last_current_stamp_s = 0.0
        self.playing = False
        node.create_timer(PUBLISH_PERIOD_S, self._on_timer)

    def connected(self) -> bool:
        return all(publisher.get_subscription_count() > 0 for publisher in self.outputs)

    def _on_timer(self) -> None:
        if not self.playing:
            return
        now_ns = int(self.clock.now().nanoseconds)
        if self.start_ns is None:
            self.start_ns = now_ns
        m = self.motion
        names = list(m.joints)
        while self.next < m.stamps.size and self.start_ns + m.stamps[self.next] * NS_PER_S <= now_ns:
            k = self.next
            stamp_ns = self.start_ns + round(m.stamps[k] * NS_PER_S)
            self.outputs[0].publish(joint_state_message(names, stamp_ns, m.q[k], m.dq[k], m.torques[k]))
            if not self.samples and self.currents_on:
                self.outputs[1].publish(joint_state_message(names, stamp_ns, None, None, m.currents[k]))
                self.last_current_stamp_s = stamp_ns / NS_PER_S
            self.next += 1


def latest(probe: Probe, name: str, since_s: float) -> DiagnosticStatus | None:
    """The last status ``name`` received after ``since_s`` (monotonic), or ``None``."""
    statuses = [status for received, status in probe.diagnostics.get(name, []) if received > since_s]
    return statuses[-1] if statuses else None


def test_silent_currents_are_reported_and_stop_the_estimates_until_they_resume(
    probe: Probe, motion: Motion, ros_domain_id: int, tmp_path: pathlib.Path, namespace: str
) -> None:
    """/motor_currents silent → recorder says so, no estimate from missing data; back → estimates resume."""
    parameters = probe.subscribe_parameters()
    player = Player(probe, motion)
    with NodeProcesses(ros_domain_id, tmp_path, namespace=namespace) as nodes:
        nodes.start("recorder")
        nodes.start_with("estimator", WINDOW_OVERRIDES)
        assert probe.spin_until(player.connected, 30.0), nodes.report()
        player.playing = True
        assert probe.spin_until(lambda: len(parameters) >= 2 or bool(nodes.dead()), 40.0), (
            f"no estimates from the streaming sensors\n{nodes.report()}"
        )
        before = len(parameters)

        player.currents_on = False
        silenced_s = time.monotonic()
        silenced_stamp = player.last_current_stamp_s
        probe.spin_for(SILENCE_S)
        during = parameters[before:]
        late = [p for p in during if p.received_s > silenced_s + SETTLE_S]
        recorder = latest(probe, "recorder", silenced_s + 1.5)
        estimator = latest(probe, "estimator", silenced_s + SETTLE_S)

        player.currents_on = True
        resumed_s = time.monotonic()
        probe.spin_for(0.1)
        resumed_stamp = player.last_current_stamp_s
        assert probe.spin_until(
            lambda: any(p.document.stamp > resumed_stamp for p in parameters) or bool(nodes.dead()), 30.0
        ), f"no estimate after the currents resumed\n{nodes.report()}"
        probe.spin_until(lambda: latest(probe, "recorder", resumed_s + 1.5) is not None, 3.0)
        recovered = latest(probe, "recorder", resumed_s + 1.5)
        assert not nodes.dead(), nodes.report()

    assert recorder is not None and recorder.level == DiagnosticStatus.WARN, recorder
    assert "silent" in recorder.message and "motor_currents" in recorder.message, recorder.message
    assert "joint_states" not in {kv.value for kv in recorder.values if kv.key == "silent_topics"}
    # Nothing estimated from data that never came, and the stamps stop advancing.
    assert all(p.document.stamp <= silenced_stamp + 1e-6 for p in during), [p.document.stamp for p in during]
    assert late == [], [p.document.stamp for p in late]
    assert estimator is not None and estimator.level != DiagnosticStatus.ERROR, estimator
    assert recovered is not None and "silent" not in recovered.message, recovered
    resumed = [p for p in parameters if p.document.stamp > resumed_stamp]
    assert resumed and resumed[0].document.joints == motion.joints
    print(
        f"{before} estimates before the silence, {len(during)} during it (none after {SETTLE_S:g} s),"
        f" first estimate {resumed[0].received_s - resumed_s:.1f} s after the currents resumed"
    )


def test_after_the_estimator_stops_the_last_parameters_stay_on_the_topic_and_in_the_file(
    probe: Probe, motion: Motion, context: Context, ros_domain_id: int, tmp_path: pathlib.Path, namespace: str
) -> None:
    """Late subscribers get the last estimate while the estimator runs; after it stops, the file holds it,
    and a feedforward node started then loads it from the file."""
    parameters_file = tmp_path / "estimated.yaml"
    early = probe.subscribe_parameters()
    player = Player(probe, motion, samples=True)
    with NodeProcesses(ros_domain_id, tmp_path, namespace=namespace) as nodes:
        estimator = nodes.start_with("estimator", {**WINDOW_OVERRIDES, "parameters_file": str(parameters_file)})
        assert probe.spin_until(player.connected, 30.0), nodes.report()
        player.playing = True
        assert probe.spin_until(lambda: len(early) >= 2 or bool(nodes.dead()), 40.0), nodes.report()
        player.playing = False
        probe.spin_for(SETTLE_S)  # an update already under way lands
        last = early[-1]

        late_probe = Probe(context, name="late_subscriber", namespace=namespace)
        try:
            late = late_probe.subscribe_parameters()
            assert late_probe.spin_until(lambda: bool(late), 10.0), nodes.report()
            late_probe.spin_for(0.5)
        finally:
            late_probe.close()
        assert [p.text for p in late] == [last.text]  # depth 1: the last estimate, once

        assert estimator.stop() == 0, nodes.report()
        stored = load_parameters(parameters_file)
        assert stored.stamp == last.document.stamp
        assert stored.values() == last.document.values()
        assert stored.joints == last.document.joints and stored.urdf_sha256 == last.document.urdf_sha256
        # The file names the URDF relative to itself when they share a folder below the root, the topic's text
        # absolutely (or as package://): the same URDF either way, wherever the checkout is.
        assert stored.urdf_path().resolve() == last.document.urdf_path().resolve()

        nodes.start("feedforward", parameters_file=str(parameters_file))
        assert probe.spin_until(lambda: latest(probe, "feedforward", 0.0) is not None, 30.0), nodes.report()
        status = latest(probe, "feedforward", 0.0)
    assert status is not None
    values = {kv.key: kv.value for kv in status.values}
    assert values["source"] == f"file {parameters_file}"
    assert float(values["parameters_stamp"]) == pytest.approx(last.document.stamp, abs=1e-6)
    assert int(values["parameters"]) == len(last.document.parameters)


def test_a_restarted_estimator_republishes_the_parameters_of_its_file(
    probe: Probe, ros_domain_id: int, tmp_path: pathlib.Path, namespace: str
) -> None:
    robot = load_robot(ARM6_URDF)
    config = load_config(str(ARM6_CONFIG))
    terms = DriveTerms()
    names = standard_parameter_names(robot.n_joints, terms)[-4:]
    parameters_file = tmp_path / "previous.yaml"
    write_parameters_atomic(
        parameters_file,
        ParameterFile.create(
            urdf=str(ARM6_URDF),
            joints=robot.joint_names,
            drive_terms=terms,
            drive_chain=config.drive_chain(robot.n_joints),
            names=names,
            values=np.arange(1.0, len(names) + 1.0),
            stamp=1234.5,
        ),
    )
    received = probe.subscribe_parameters()
    with NodeProcesses(ros_domain_id, tmp_path, namespace=namespace) as nodes:
        nodes.start_with("estimator", {**WINDOW_OVERRIDES, "parameters_file": str(parameters_file)})
        # Start-up and discovery of a node process took more than 15 s on a loaded machine (the suite runs in two
        # processes): the wait ends as soon as the parameters arrive.
        probe.spin_until(lambda: bool(received) or bool(nodes.dead()), 60.0)
        assert not nodes.dead(), nodes.report()
    assert received and received[0].document.stamp == 1234.5
