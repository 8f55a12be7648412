"""The nodes' CPU beside a 1 kHz simulator, on rclpy's events executor against the single-threaded one.

Every node process spins its node on :func:`~dynamic_identification.nodes.runner.node_executor` (the events
executor where the distribution has it). This bench starts, for each executor, the simulator (``sim_robot``,
1 kHz joint states and currents) and an excitation node waiting to start (``autostart: false``, planning the
configuration's trajectory, then only taking the joint states), each as its own process spun by
:func:`~dynamic_identification.nodes.runner.run_node` on that executor, and prints:

- the excitation node's planning time (its own ``ready:`` line: cost evaluations in wall seconds);
- the CPU time (user + system, ``/proc/PID/stat``) of each process while a probe runs, once the plan is ready (the
  probe's start-up, a second of warm-up and ``--seconds``), in ms of CPU per second of wall time;
- the joint states the probe (a process of its own) received in its ``--seconds``, which start a second after its
  first one: the simulator's rate.

``--busy N`` runs the same beside N busy loops (``while True: pass``, started and ended by PID). Processes get the
network rule (loopback discovery only) in domain ``--domain``.

Run: ``.venv/bin/python bench/bench_node_cpu.py [--config config/five_bar.yaml] [--seconds 20] [--busy 0]
[--executor both|events|single] [--domain 76]``
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import busy_loops, stat_cpu_s

from dynamic_identification.network import network_environment
from dynamic_identification.resources import shipped_path

CHILD = (
    "import sys\n"
    "from rclpy.executors import SingleThreadedExecutor\n"
    "from dynamic_identification.nodes import runner\n"
    "from dynamic_identification.nodes.excitation import ExcitationNode\n"
    "from dynamic_identification.nodes.sim_robot import SimRobotNode\n"
    "name, choice = sys.argv[1], sys.argv[2]\n"
    "sys.argv = [name] + sys.argv[3:]\n"
    "create = {'sim_robot': SimRobotNode, 'excitation': ExcitationNode}[name]\n"
    "executor = runner.node_executor if choice == 'events' else SingleThreadedExecutor\n"
    "runner.run_node(name, create, None, executor=executor)\n"
)
"""A node process spun by ``run_node`` on the executor named by its second argument."""

PROBE = """
import sys, time
import rclpy
from sensor_msgs.msg import JointState
from dynamic_identification.nodes.qos import SENSOR_QOS
from dynamic_identification.nodes.runner import node_executor

rclpy.init()
node = rclpy.create_node("cpu_bench_probe")
count = [0]


def received(_message):
    count[0] += 1


def spin_for(seconds, until=lambda: False):
    end = time.monotonic() + seconds
    while time.monotonic() < end and not until():
        executor.spin_once(timeout_sec=0.1)


node.create_subscription(JointState, "joint_states", received, SENSOR_QOS)
executor = node_executor()
executor.add_node(node)
spin_for(10.0, until=lambda: count[0] > 0)
spin_for(1.0)
count[0] = 0
spin_for(float(sys.argv[1]))
print(count[0])
executor.shutdown()
node.destroy_node()
rclpy.shutdown()
"""
"""Counts the joint states received for ``argv[1]`` seconds, from a second after the first one (what the history held
when it connected has arrived by then), in its own process (no GIL shared with the bench); then ends its executor, node
and context in that order (:mod:`~dynamic_identification.nodes.runner`), so that no Fast DDS shared-memory segment is
left behind."""

READY = re.compile(r"ready: .*\((\d+) cost evaluations in ([0-9.]+) s\)")


def _cpu_s(pid: int) -> float:
    """User + system CPU time of process ``pid``, s."""
    return stat_cpu_s(Path(f"/proc/{pid}/stat"))


def _log(folder: Path, name: str, choice: str) -> Path:
    return folder / f"{name}_{choice}.log"


def _start(name: str, choice: str, config: Path, folder: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    arguments = ["--ros-args", "--params-file", str(config)]
    if name == "excitation":
        arguments += ["-p", "autostart:=false"]
    with _log(folder, name, choice).open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-c", CHILD, name, choice, *arguments], stdout=out, stderr=subprocess.STDOUT, env=env
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGINT)
    try:
        process.wait(10.0)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def run(choice: str, config: Path, seconds: float, env: dict[str, str], folder: Path) -> None:
    sim = _start("sim_robot", choice, config, folder, env)
    excitation = None
    try:
        time.sleep(3.0)
        excitation = _start("excitation", choice, config, folder, env)
        log = _log(folder, "excitation", choice)
        deadline = time.monotonic() + 600.0
        ready = None
        while ready is None and time.monotonic() < deadline and excitation.poll() is None:
            time.sleep(0.5)
            ready = READY.search(log.read_text(encoding="utf-8", errors="replace"))
        if ready is None:
            print(f"  {choice}: the excitation node did not plan (see {log})")
            return
        time.sleep(2.0)
        before = _cpu_s(sim.pid), _cpu_s(excitation.pid)
        start = time.monotonic()
        probe = subprocess.run(
            [sys.executable, "-c", PROBE, str(seconds)], env=env, capture_output=True, text=True, check=True
        )
        elapsed = time.monotonic() - start
        after = _cpu_s(sim.pid), _cpu_s(excitation.pid)
        sim_ms, excitation_ms = (1e3 * (a - b) / elapsed for a, b in zip(after, before, strict=True))
        print(
            f"  {choice:6s} planning {ready.group(1)} evaluations in {float(ready.group(2)):5.1f} s;"
            f" over {elapsed:.1f} s: sim_robot {sim_ms:5.0f} ms CPU/s, excitation (waiting) {excitation_ms:5.0f}"
            f" ms CPU/s; {int(probe.stdout.split()[-1]) / seconds:.0f} joint states/s received by a probe"
        )
    finally:
        for process in (excitation, sim):
            if process is not None:
                _stop(process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=shipped_path("config", "five_bar.yaml"))
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--busy", type=int, default=0)
    parser.add_argument("--executor", choices=("both", "events", "single"), default="both")
    parser.add_argument("--domain", type=int, default=76)
    arguments = parser.parse_args()
    env = {**os.environ, **network_environment(arguments.domain), "OPENBLAS_NUM_THREADS": "1"}
    choices = ("events", "single") if arguments.executor == "both" else (arguments.executor,)
    print(f"{arguments.config.name}, {os.cpu_count()} CPUs, {arguments.busy} busy loop(s)")
    with tempfile.TemporaryDirectory() as folder, busy_loops(arguments.busy):
        for choice in choices:
            run(choice, arguments.config, arguments.seconds, env, Path(folder))


if __name__ == "__main__":
    main()
