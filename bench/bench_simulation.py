"""The simulated robot's cost per step: the shipped 6-axis arm tracking a Fourier excitation at 1 kHz.

:class:`~dynamic_identification.core.simulation.RobotSimulator` is what ``sim_robot`` steps (four
steps per published sample in ``make demo``), what the offline demo and most test fixtures run
through :func:`~dynamic_identification.core.simulation.simulate_tracking`, so its cost bounds how
fast the demos and the suite go. Printed, never asserted, with the machine's load average:

- ``simulate_tracking`` of 10 s (10 000 steps of 1 ms, PD plus the inverse-dynamics feedforward, the
  shipped configuration's sensors): CPU time per step, best and median of ``--repeats`` runs, and
  how many times faster than real time that is;
- ``sim_robot``'s pattern along the same run: :meth:`RobotSimulator.step` every 1 ms and a sensor
  reading (:meth:`RobotSimulator.measure`) every fourth step, CPU time per step.

One BLAS thread, as the nodes and ``dynid`` use. A checksum of the run's last recorded sample lets
two versions be compared (equal to about 1e-12).

Run: ``.venv/bin/python bench/bench_simulation.py [--seconds 10] [--repeats 5]``
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from dynamic_identification.blas import use_one_blas_thread
from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.mechanism.robot import load_robot
from dynamic_identification.core.simulation import inverse_dynamics, simulate_tracking
from dynamic_identification.demo import simulated_robot
from dynamic_identification.resources import shipped_path


def _load_average() -> str:
    """The 1, 5 and 15 minute load averages of the machine."""
    return " ".join(Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="simulated time of one run, s")
    parser.add_argument("--repeats", type=int, default=5)
    arguments = parser.parse_args()
    use_one_blas_thread()

    robot = load_robot(shipped_path("urdf", "dynid_arm6.urdf"))
    config = shipped_path("config", "dynid_arm6.yaml")
    simulator = simulated_robot(config, robot, seed=1)
    dt = simulator.settings.dt_s
    trajectory = random_fourier_trajectory(
        robot, fundamental_hz=0.1, harmonics=5, margin=0.2, velocity_fraction=0.5, seed=3
    )
    times = np.arange(0.0, arguments.seconds, dt)
    q, dq, ddq = trajectory.evaluate(times)
    feedforward = inverse_dynamics(robot, simulator.drive_chain, simulator.drive, q, dq, ddq)
    print(f"load average {_load_average()}; {times.size - 1} steps of {1e3 * dt:g} ms, 6 joints")

    per_step = []
    for _ in range(arguments.repeats):
        simulator = simulated_robot(config, robot, seed=1)
        simulator.reset(q[0], dq[0], time_s=0.0)
        start = time.process_time()
        run = simulate_tracking(simulator, times, q, dq, ddq, feedforward)
        per_step.append(1e6 * (time.process_time() - start) / (times.size - 1))
    best, median = min(per_step), float(np.median(per_step))
    print(
        f"simulate_tracking: {best:.1f} µs per step (median {median:.1f}), {1e6 * dt / best:.1f}x real time;"
        f" checksum {run.q[-1].sum():.12f} {run.currents_a[-1].sum():.12f}"
    )

    per_step = []
    for _ in range(arguments.repeats):
        simulator = simulated_robot(config, robot, seed=1)
        simulator.reset(q[0], dq[0], time_s=0.0)
        start = time.process_time()
        for k in range(times.size - 1):
            simulator.step(q[k], dq[k], ddq[k], feedforward[k])
            if k % 4 == 3:
                simulator.measure()
        per_step.append(1e6 * (time.process_time() - start) / (times.size - 1))
    print(
        f"sim_robot's pattern (a step every 1 ms, a reading every 4): {min(per_step):.1f} µs per step"
        f" (median {np.median(per_step):.1f}); load average {_load_average()}"
    )


if __name__ == "__main__":
    main()
