"""Test-wide setup: the DDS network rule, one BLAS thread per process, nothing left frozen from the garbage collector
after a test, robot-model fixtures, and the fatal-error dumps of crashed pytest-xdist workers in the run's summary.

The environment is set at import time, before any test module can import rclpy, and again
before every test: every ROS context created by the suite discovers on loopback only, in a
domain of its own (one per test process, so parallel runs never cross-talk). Under pytest-xdist
(``make test`` runs ``-n 3``) the workers of one run take consecutive domains from their
controller's, so two workers never share one.
"""

from __future__ import annotations

import faulthandler
import gc
import os
import pathlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np
import pytest

from dynamic_identification.blas import use_one_blas_thread
from dynamic_identification.network import network_environment, process_domain_id  # noqa: E402 - no rclpy
from repo_paths import ARM6_CONFIG, ARM6_URDF, example_robot_file
from shared_runs import CACHE_ENV


def worker_domain_id() -> int:
    """The ROS domain of this test process (1..101, the range the ROS 2 docs recommend on Linux).

    Alone: :func:`process_domain_id` of its own process id. As pytest-xdist worker ``gwK`` (started by the
    controller, its parent): the controller's domain plus K, modulo the range, so the workers of one run have
    different domains (pids of two workers may be equal modulo 101).
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        return process_domain_id()
    return process_domain_id(os.getppid() + int(worker.removeprefix("gw")))


ROS_DOMAIN_ID = worker_domain_id()
"""This test process's ROS domain (:func:`worker_domain_id`)."""

ROS_NETWORK_ENV = network_environment(ROS_DOMAIN_ID)
os.environ.update(ROS_NETWORK_ENV)

# The BLAS threads of every entry point (``dynid``, the nodes): one per process. The tests call the core in-process,
# and without this their BLAS ran on two threads until the first in-process ``dynid`` of the worker limited it, so a
# test's linear algebra depended on which tests ran before it; beside the other pytest-xdist worker the two threads
# also spun waiting for each other. Subprocesses take their own entry point's choice.
use_one_blas_thread()


_SHARED_RUNS = pytest.StashKey[str]()
FAULTS_ENV = "DYNID_TEST_FAULTS"
"""The directory where each pytest-xdist worker's ``faulthandler`` writes (:func:`pytest_configure`)."""
FAULT_FRAMES = 20
"""Innermost frames of the crashed thread shown in the run's summary."""
_FAULT_FILES: list[TextIO] = []


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """The run's directory of shared simulated recordings (``shared_runs``), made by the process that starts the
    run, and its directory of fatal-error dumps; pytest-xdist workers inherit both through the environment.

    A worker that dies (a segmentation fault in a C library) is reported by the controller as "crashed" and
    nothing more; pytest's ``faulthandler`` dump went to the worker's stderr, in the middle of the run's
    output. Each worker writes it to a file of its own instead (after pytest's plugin enabled it on stderr:
    ``trylast``), which :func:`pytest_terminal_summary` shows at the end of the run.
    """
    if hasattr(config, "workerinput"):
        directory = os.environ.get(FAULTS_ENV)
        if directory:
            worker = os.environ.get("PYTEST_XDIST_WORKER", "worker")
            _FAULT_FILES.append(open(pathlib.Path(directory, f"{worker}-{os.getpid()}.log"), "w"))  # noqa: SIM115
            faulthandler.enable(file=_FAULT_FILES[-1], all_threads=True)
        return
    os.environ[FAULTS_ENV] = tempfile.mkdtemp(prefix="dynid-test-faults-")
    if os.environ.get(CACHE_ENV):
        return
    directory = tempfile.mkdtemp(prefix="dynid-shared-runs-")
    config.stash[_SHARED_RUNS] = directory
    os.environ[CACHE_ENV] = directory


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The fatal-error dumps of crashed pytest-xdist workers (:func:`pytest_configure`), if any."""
    directory = os.environ.get(FAULTS_ENV)
    if not directory or hasattr(terminalreporter.config, "workerinput"):
        return
    for path in sorted(pathlib.Path(directory).glob("*.log")):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        if lines:
            terminalreporter.write_sep("=", f"fatal error in test process {path.stem}")
            terminalreporter.write_line("\n".join(crashed_thread(lines)))


def crashed_thread(dump: list[str]) -> list[str]:
    """The error line of a ``faulthandler`` dump and the innermost :data:`FAULT_FRAMES` frames of the thread that
    crashed (the dump lists every thread, that one marked ``Current thread``)."""
    start = next((k for k, line in enumerate(dump) if line.startswith("Current thread")), 1)
    return [dump[0], *dump[start : start + 1 + FAULT_FRAMES]]


def pytest_unconfigure(config: pytest.Config) -> None:
    if _FAULT_FILES:
        faulthandler.disable()
        for file in _FAULT_FILES:
            file.close()
    directory = config.stash.get(_SHARED_RUNS, None)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)
        os.environ.pop(CACHE_ENV, None)
    if not hasattr(config, "workerinput") and FAULTS_ENV in os.environ:
        shutil.rmtree(os.environ.pop(FAULTS_ENV), ignore_errors=True)


LONGEST_FIRST = (
    "test_demo.py",
    "cli/test_closed_loop.py",
    "system/test_ros_interfaces.py",
    "system/test_faults.py",
    "system/test_end_to_end.py",
    "system/test_namespaces.py",
    "core/identification/test_passive_friction.py",
)
"""The test files of 25-65 s each, longest first, run before the others: pytest-xdist hands each file to one worker
in collection order (``make pytest`` passes ``--no-loadscope-reorder``; by default xdist starts with the files of most
tests), and one of them collected late was the last to finish while the other workers stood idle. The system tests
among them run node processes in real time and leave their worker's core mostly free for the others."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Items of :data:`LONGEST_FIRST` first, every file's items otherwise in their order (a stable sort)."""

    def rank(item: pytest.Item) -> int:
        path = item.path.as_posix()
        return next((k for k, name in enumerate(LONGEST_FIRST) if path.endswith(f"/test/{name}")), len(LONGEST_FIRST))

    items.sort(key=rank)


@pytest.fixture(autouse=True)
def _ros_localhost_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Re-apply the network rule before each test, whatever an earlier test changed."""
    for name, value in ROS_NETWORK_ENV.items():
        monkeypatch.setenv(name, value)
    yield


@pytest.fixture(autouse=True)
def _collected_as_before() -> Iterator[None]:
    """After each test, the test process's objects back in the garbage collector's full collections: a test that
    runs an entry point in-process (``cli.main(["stream", …])``) froze them as the entry point does
    (:func:`~dynamic_identification.collector.freeze_startup_objects`), and the tests after it must not inherit that."""
    yield
    gc.unfreeze()


@pytest.fixture
def context() -> Iterator[Any]:
    """A ROS context of this test's own, shut down after it (``ros_graph.ros_context``)."""
    from ros_graph import ros_context

    with ros_context() as ros:
        yield ros


@pytest.fixture(scope="session")
def ros_domain_id() -> int:
    """The ROS domain of this test process, for tests that start subprocesses."""
    return ROS_DOMAIN_ID


@pytest.fixture(scope="session")
def example_urdf() -> Callable[[str], pathlib.Path]:
    """Finder of robot files in ``example-robot-data``: ``example_urdf("ur5_robot.urdf")``, ``…("ur5.srdf")``."""
    return example_robot_file


@pytest.fixture(scope="session")
def arm6_urdf() -> pathlib.Path:
    """Path of the shipped 6-axis arm ``urdf/dynid_arm6.urdf`` (the embedded default robot)."""
    return ARM6_URDF


@pytest.fixture(scope="module")
def arm6(arm6_urdf: pathlib.Path) -> Any:
    """The shipped 6-axis arm as a ``RobotModel``, loaded once per test module (a module may define its own
    ``arm6``)."""
    from dynamic_identification.core.mechanism.robot import load_robot

    return load_robot(arm6_urdf)


@dataclass(frozen=True)
class Arm6Run:
    """A simulated run of the shipped arm: stamps (s), measured positions (rad), motor currents (A) and the
    joint torques they give (N·m), with the robot, its drive chain and the true drive terms (``sim_robot`` block
    of ``config/dynid_arm6.yaml``)."""

    robot: Any
    chain: Any
    coulomb_friction: tuple[float, ...]
    stamps: np.ndarray
    q: np.ndarray
    currents: np.ndarray
    torques: np.ndarray


@pytest.fixture(scope="session")
def arm6_run() -> Callable[..., Arm6Run]:
    """Runs of the shipped arm along a random Fourier excitation: ``arm6_run(seconds, rate_hz=…, seed=…)``.

    Exact inverse dynamics with the true rotor inertia, friction and offsets, quantised
    encoders and noisy currents as the simulator configures them.
    """
    from dynamic_identification.core.excitation import random_fourier_trajectory
    from dynamic_identification.core.mechanism.robot import load_robot
    from dynamic_identification.core.simulation import synthesize_measurements
    from dynamic_identification.io.config import simulated_robot

    robot = load_robot(ARM6_URDF)
    sim = simulated_robot(ARM6_CONFIG, robot.n_joints)
    chain = sim.drive_chain

    def run(seconds: float, *, rate_hz: float, seed: int) -> Arm6Run:
        stamps = np.arange(int(round(seconds * rate_hz))) / rate_hz
        trajectory = random_fourier_trajectory(robot, margin=0.2, velocity_fraction=0.5, seed=seed)
        q, dq, ddq = trajectory.evaluate(stamps)
        measured, currents = synthesize_measurements(robot, chain, sim.drive, stamps, q, dq, ddq, sim.sensor, seed=seed)
        coulomb = tuple(float(value) for value in sim.drive.coulomb)
        return Arm6Run(robot, chain, coulomb, stamps, measured, currents, chain.joint_torques(currents))

    return run
