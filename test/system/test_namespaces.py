"""Two full stacks in two namespaces of one ROS domain, each identifying its own arm.

``sim_robot``, ``recorder``, ``excitation`` and ``estimator`` run twice as separate
processes, once under ``/arm1`` and once under ``/arm2`` (``-r __ns:=``, what
``PushROSNamespace`` or ``namespace:=`` of the launch files does), all with the shipped
``config/dynid_arm6.yaml`` whose ``/**/node`` blocks apply in any namespace. The second
arm has twice the viscous friction of the first: each estimator must find its own arm's,
which it can only do if no topic of one stack reaches the other.

Each stack runs on its simulator's time, in lockstep with its recorder and estimator, on a clock
of its own (``/clock`` remapped into the namespace): on wall time eight processes beside the
suite's other workers starved the simulators, whose skipped steps left the estimators gaps every
fraction of a second and no usable window (a run at load 7 on 2 cores published nothing in 90 s).
"""

from __future__ import annotations

import pathlib

import numpy as np
from trajectory_msgs.msg import JointTrajectory

from dynamic_identification.io.config import simulated_robot
from dynamic_identification.nodes.conversions import stamp_to_seconds
from repo_paths import ARM6_CONFIG

from .processes import NodeProcesses, Probe, ReceivedParameters

WINDOW_S = 10.0
RAMP_S = 1.5
"""Upper bound of the excitation's ramp from rest to the trajectory's first state, s."""
SIM_RATE_HZ = 250.0
TIMEOUT_S = 240.0
"""Wall time for both estimates: simulated time slows down on a loaded machine instead of losing samples."""
VISCOUS = np.asarray(simulated_robot(ARM6_CONFIG, 6).drive.viscous, dtype=float)
"""Fv of the first arm, N·m·s/rad; the second arm has twice these."""
ARMS = {"arm1": VISCOUS, "arm2": 2.0 * VISCOUS}


def viscous_friction(document: object) -> dict[int, float]:
    """``{joint index: Fv}`` of the parameters a parameter file keeps (``Fv1``, ``Fv2``, … alone, not regrouped)."""
    values = document.values()  # type: ignore[attr-defined]
    return {int(name[2:]) - 1: value for name, value in values.items() if name.startswith("Fv") and name[2:].isdigit()}


def _losses(values: dict[str, str]) -> dict[str, str]:
    """The values of a node's last diagnostics that say what it lost or waited for, by cause."""
    causes = ("missing", "lost", "lockstep", "rejected", "refused", "unaligned", "before_currents")
    return {key: value for key, value in values.items() if any(cause in key for cause in causes)}


def test_two_namespaced_stacks_in_one_domain_each_identify_their_own_arm(
    probe: Probe, ros_domain_id: int, tmp_path: pathlib.Path, namespace: str
) -> None:
    received: dict[str, list[ReceivedParameters]] = {}
    playback: dict[str, list[float]] = {}
    stacks: dict[str, NodeProcesses] = {}
    for arm in ARMS:
        received[arm] = probe.subscribe_parameters(f"{arm}/estimator/parameters")
        playback[arm] = []
        probe.node.create_subscription(
            JointTrajectory,
            f"{arm}/joint_trajectory",
            lambda message, arm=arm: playback[arm].append(stamp_to_seconds(message.header.stamp)),
            10,
        )

    def estimate(arm: str) -> ReceivedParameters | None:
        """The first estimate of ``arm`` whose window lies in its excitation."""
        if not playback[arm]:
            return None
        first = playback[arm][0] + RAMP_S + WINDOW_S
        return next((item for item in received[arm] if item.document.stamp >= first), None)

    try:
        for arm, viscous in ARMS.items():
            nodes = stacks[arm] = NodeProcesses(
                ros_domain_id,
                tmp_path,
                namespace=f"{namespace}/{arm}",
                sim_time=True,
                clock=f"/{namespace}/{arm}/clock",
            )
            nodes.start("recorder")
            nodes.start_with("estimator", {"window.window_s": WINDOW_S, "window.update_period_s": 1.0})
            nodes.start("excitation", mode="fourier", optimise=False, fundamental_hz=0.1, periods=3, autostart=True)
            nodes.start_with("sim_robot", {"rate_hz": SIM_RATE_HZ, "viscous_friction": viscous.tolist()})
        done = probe.spin_until(
            lambda: all(estimate(arm) is not None for arm in ARMS) or any(n.dead() for n in stacks.values()),
            TIMEOUT_S,
        )
        report = "\n".join(nodes.report() for nodes in stacks.values())
        assert done and not any(nodes.dead() for nodes in stacks.values()), report
        statuses = dict(probe.diagnostics)
    finally:
        for nodes in stacks.values():
            nodes.stop_all()

    estimates = {arm: viscous_friction(estimate(arm).document) for arm in ARMS}  # type: ignore[union-attr]
    figures = {arm: {j: round(v, 3) for j, v in values.items()} for arm, values in estimates.items()}
    print(f"Fv estimated {figures}; true arm1 {VISCOUS.tolist()}, arm2 twice")
    compared = 0
    for arm, own in ARMS.items():
        other = ARMS["arm2" if arm == "arm1" else "arm1"]
        for joint, value in estimates[arm].items():
            if own[joint] >= 1.5:  # joints 1-3 and 5: friction well above the noise of a 10 s window
                assert abs(value - own[joint]) < abs(value - other[joint]), (arm, joint, figures)
                compared += 1
    assert compared >= 4, figures
    assert {"arm1/recorder", "arm2/recorder", "arm1/estimator", "arm2/estimator"} <= set(statuses)
    # Each simulator waited for its own stack's acknowledgements, on its own clock: nothing lost in either.
    last = {name: {kv.key: kv.value for kv in status_list[-1][1].values} for name, status_list in statuses.items()}
    lost = {arm: (last[f"{arm}/recorder"]["lost_samples"], last[f"{arm}/estimator"]["samples_missing"]) for arm in ARMS}
    assert lost == {arm: ("0", "0") for arm in ARMS}, {name: _losses(values) for name, values in last.items()}
    topics = {name: values.get("joint_states_topic") for name, values in last.items() if name.endswith("recorder")}
    assert topics == {f"{arm}/recorder": f"/{namespace}/{arm}/joint_states" for arm in ARMS}
