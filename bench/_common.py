"""Set-up shared by the benchmarks: the closed-loop tests' five-bar, the drive-gain and payload tests' 6-axis arm,
the realistic recordings of a robot preset, the print-out of an excitation's limit usage, the files of
example-robot-data (:func:`example_robot_file`, the tests' own finder) and the speed benchmarks' measure of the
machine (:func:`bare_regressor_s`), the load beside them (:func:`busy_loops`), a process's CPU time
(:func:`stat_cpu_s`) and the shipped arm's process recording that the window's and the node's benchmarks stream
(:func:`process_recording`).

The benchmarks run as scripts (``.venv/bin/python bench/NAME.py``), so this folder is on ``sys.path`` and
``import _common`` finds this module. The five-bar scenarios are the closed-loop tests' own
(``test/support/five_bar.py``: the mechanism, its drive terms, the tip payload, the Fourier motions, the
simulated tracking runs and the IDIM-TLS gains of two runs), the arm's drive chain, transmission losses and
tool loads the drive-gain and payload tests' own (``test/support/arm6_drives.py``): the benchmarks measure
what the tests assert, from the same set-up rather than a copy of it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from dynamic_identification.core.excitation.plan import plan_excitation
from dynamic_identification.core.excitation.safety import LimitUsage
from dynamic_identification.core.excitation.settings import ExcitationSettings
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel
from dynamic_identification.core.simulation import synthesize_measurements
from dynamic_identification.io.config import SimulatedRobot
from dynamic_identification.testing.realistic import (
    RealisticRecording,
    RobotPreset,
    excitation_trajectory,
    generate_recording,
    process_trajectory,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "support"))

from arm6_drives import (  # noqa: E402 - found on the path inserted above
    ARM6_DRIVE,
    ARM6_UNCOUPLED_CHAIN,
    EFFICIENCY,
    KNOWN_LOAD,
    NOMINAL_GAINS,
    PROCESS_LOAD,
    TRUE_GAINS,
    UNKNOWN_LOAD,
    arm6_chain,
)
from five_bar import (  # noqa: E402 - found on the path inserted above
    FIVE_BAR_ACTUATED,
    FIVE_BAR_CHAIN,
    FIVE_BAR_CLOSURES,
    FIVE_BAR_CONFIG,
    FIVE_BAR_DRIVE,
    TIP_PAYLOAD,
    five_bar_with_collision_geometry,
    fourier,
    identify_gains_from_runs,
    load_five_bar,
    track,
)
from repo_paths import example_robot_file  # noqa: E402 - found on the path inserted above
from ur5_collision import touching  # noqa: E402 - found on the path inserted above

__all__ = [
    "ARM6_DRIVE",
    "ARM6_UNCOUPLED_CHAIN",
    "EFFICIENCY",
    "KNOWN_LOAD",
    "NOMINAL_GAINS",
    "PROCESS_LOAD",
    "TRUE_GAINS",
    "UNKNOWN_LOAD",
    "FIVE_BAR_ACTUATED",
    "FIVE_BAR_CHAIN",
    "FIVE_BAR_CLOSURES",
    "FIVE_BAR_CONFIG",
    "FIVE_BAR_DRIVE",
    "TIP_PAYLOAD",
    "arm6_chain",
    "bare_regressor_s",
    "example_robot_file",
    "five_bar_with_collision_geometry",
    "fourier",
    "fourier_recording",
    "identify_gains_from_runs",
    "load_five_bar",
    "pick_and_place_recording",
    "print_limit_usage",
    "touching",
    "track",
]


def bare_regressor_s(robot: RobotModel, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> float:
    """Wall time, s, of ``pinocchio.computeJointTorqueRegressor`` at each sample of ``q``, ``dq``, ``ddq`` ``(N, n)``
    (rad, rad/s, rad/s²), one after the other.

    What any IDIM of these samples must at least spend, and the speed benchmarks' measure of the machine: the
    same code takes from 3.5 to more than 6 µs a sample on the same 2-core machine from one day to another, so
    their figures are quoted beside it (issue 26).
    """
    model = robot.model
    data = model.createData()
    configurations = robot.configurations(q)
    start = time.perf_counter()
    for k in range(configurations.shape[0]):
        pin.computeJointTorqueRegressor(model, data, configurations[k], dq[k], ddq[k])
    return time.perf_counter() - start


def print_limit_usage(usage: LimitUsage) -> None:
    """One line per kind of limit: the fraction of each joint's position span, velocity and acceleration used."""
    for name, values in (
        ("position span", usage.position),
        ("velocity", usage.velocity),
        ("acceleration", usage.acceleration),
    ):
        print(f"  {name:<14} use " + " ".join(f"{value:5.2f}" for value in values))


def fourier_recording(robot: RobotModel, preset: RobotPreset, *, seed: int, duration_s: float) -> RealisticRecording:
    """``duration_s`` of the preset's realistic recording along its random Fourier excitation of seed ``seed``
    (:func:`~dynamic_identification.testing.realistic.excitation_trajectory`), the noise drawn with the same seed."""
    trajectory = excitation_trajectory(robot, preset, seed=seed)
    return generate_recording(robot, preset, trajectory, duration_s=duration_s, seed=seed)


def pick_and_place_recording(robot: RobotModel, preset: RobotPreset, *, seed: int) -> RealisticRecording:
    """The preset's realistic recording of its pick-and-place cycles with dwells ([Volkmann2020] §III.B,
    :func:`~dynamic_identification.testing.realistic.process_trajectory` of seed ``seed``), as long as the cycles,
    the noise drawn with the same seed: the validation that extrapolates to the robot's job."""
    return generate_recording(robot, preset, process_trajectory(robot, preset, seed=seed), seed=seed)


def stat_cpu_s(stat: Path) -> float:
    """User + system CPU time, s, of the process or thread whose ``/proc/…/stat`` file is ``stat``."""
    fields = stat.read_text(encoding="utf-8").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def busy_loops(count: int) -> Iterator[list[int]]:
    """``count`` processes spinning on a core each while the block runs; their PIDs. Each is killed by its PID."""
    processes = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])  # noqa: S603 - this interpreter, fixed code
        for _ in range(count)
    ]
    try:
        yield [process.pid for process in processes]
    finally:
        for process in processes:
            process.kill()
            process.wait()


PROCESS_RATE_HZ = 1000.0
"""Sample rate of :func:`process_recording`, Hz."""


@dataclass(frozen=True)
class ProcessRecording:
    """:func:`process_recording`: what the plan was, the stamps (s), the true velocities and accelerations (rad/s,
    rad/s², for the bare regressor loop) and the measured positions (rad) and joint torques (N·m)."""

    description: str
    cycle_s: float
    closure_rad: float
    stamps: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    q_measured: np.ndarray
    torques: np.ndarray


def process_recording(
    robot: RobotModel, chain: DriveChain, terms: DriveTerms, simulated: SimulatedRobot, *, minutes: float, seed: int
) -> ProcessRecording:
    """``minutes`` of the arm's planned pick-and-place process at :data:`PROCESS_RATE_HZ`, repeated back to back (it
    starts and ends at rest at the same pose), stamps jittered by ±0.2 ms, measured through ``simulated``'s drive
    and sensor (quantised encoders, noisy motor currents) and converted to joint torques by ``chain``."""
    plan = plan_excitation(robot, chain, terms, ExcitationSettings(mode="process", cycles=3, rate_hz=PROCESS_RATE_HZ))
    cycle = plan.trajectory
    samples = int(minutes * 60.0 * PROCESS_RATE_HZ)
    index = np.arange(samples) % (cycle.time.shape[0] - 1)
    q, dq, ddq = cycle.q[index], cycle.dq[index], cycle.ddq[index]
    rng = np.random.default_rng(seed)
    stamps = np.arange(samples) / PROCESS_RATE_HZ + rng.uniform(-2e-4, 2e-4, samples)
    q_measured, currents = synthesize_measurements(
        robot, chain, simulated.drive, stamps, q, dq, ddq, simulated.sensor, seed=seed
    )
    return ProcessRecording(
        description=plan.description,
        cycle_s=cycle.duration_s,
        closure_rad=float(np.abs(cycle.q[-1] - cycle.q[0]).max()),
        stamps=stamps,
        dq=dq,
        ddq=ddq,
        q_measured=q_measured,
        torques=chain.joint_torques(currents),
    )
