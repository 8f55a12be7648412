"""``dynid identify`` on a long 1 kHz recording of the 6-axis arm: wall time and peak memory.

The recording (default 10 minutes at 1 kHz, jittered stamps, quantised positions,
noisy currents) is synthesised from the exact inverse dynamics of a Fourier
excitation, written as CSV, then identified by the real ``dynid identify`` in a
child process whose wall time, CPU time (user + system) and peak resident memory (its own,
:data:`PEAK_OF_CHILD`) are printed with the machine's load average, beside the accuracy of the identified model on a
different trajectory and the machine's speed that day (:func:`_common.bare_regressor_s` over the same samples, and
the identification's wall time in those units). Targets of issue 26 (600 k samples, 6 axes): <= 4 s and <= 500 MB on a
quiet machine. ``--no-consistency`` passes the option on; ``--keep FILE`` keeps the parameter
file (to compare two runs).

Run: ``.venv/bin/python bench/bench_identify.py [--minutes 10] [--no-consistency] [--keep FILE]``
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import bare_regressor_s

from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.identification import predict_torques
from dynamic_identification.core.mechanism.robot import load_robot
from dynamic_identification.core.simulation import inverse_dynamics, synthesize_measurements
from dynamic_identification.io.config import load_config, simulated_robot
from dynamic_identification.io.parameters import load_parameters
from dynamic_identification.io.recording import recording_from_arrays, write_recording_csv
from dynamic_identification.resources import shipped_path

RATE_HZ = 1000.0

PEAK_OF_CHILD = (
    "import sys\n"
    "from dynamic_identification import cli\n"
    "code = cli.main(sys.argv[1:])\n"
    "with open('/proc/self/status', encoding='utf-8') as status:\n"
    "    print(next(line for line in status if line.startswith('VmHWM:')).split()[1], file=sys.stderr)\n"
    "sys.exit(code)\n"
)
"""``dynid`` run by a child that prints its own peak resident memory (``VmHWM``, kB) last on stderr.

The child's ``ru_maxrss`` is no measure of it: a child spawned by ``vfork`` and ``exec`` inherits the high-water
mark of the parent's memory at ``exec``, and this bench's parent holds the synthesised recording (about 530 MB)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--no-consistency", action="store_true", help="dynid identify --no-consistency")
    parser.add_argument("--keep", type=Path, help="copy the parameter file there")
    arguments = parser.parse_args()

    urdf = shipped_path("urdf", "dynid_arm6.urdf")
    config = shipped_path("config", "dynid_arm6.yaml")
    robot = load_robot(urdf)
    chain = load_config(str(config)).drive_chain(robot.n_joints)
    simulated = simulated_robot(config, robot.n_joints)
    drive, sensor = simulated.drive, simulated.sensor
    rng = np.random.default_rng(arguments.seed)
    samples = int(arguments.minutes * 60.0 * RATE_HZ)
    time_s = np.arange(samples) / RATE_HZ + rng.uniform(-2e-4, 2e-4, samples)
    trajectory = random_fourier_trajectory(robot, margin=0.2, velocity_fraction=0.5, seed=arguments.seed)
    q, dq, ddq = trajectory.evaluate(time_s)
    start = time.perf_counter()
    q_measured, currents = synthesize_measurements(robot, chain, drive, time_s, q, dq, ddq, sensor, seed=arguments.seed)
    print(
        f"synthesised {samples} samples ({arguments.minutes:g} min at {RATE_HZ:g} Hz, 6 joints) in "
        f"{time.perf_counter() - start:.1f} s"
    )

    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "recording.csv"
        out = Path(folder) / "parameters.yaml"
        recording = recording_from_arrays(
            time=time_s, joint_names=robot.joint_names, position=q_measured, current=currents
        )
        start = time.perf_counter()
        write_recording_csv(data, recording)
        print(f"CSV {data.stat().st_size / 1e6:.0f} MB written in {time.perf_counter() - start:.1f} s")
        command = [
            sys.executable,
            "-c",
            PEAK_OF_CHILD,
            "identify",
            "--urdf",
            str(urdf),
            "--data",
            str(data),
            "--config",
            str(config),
            "--out",
            str(out),
            "--quiet",
            *(["--no-consistency"] if arguments.no_consistency else []),
        ]
        load = " ".join(Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3])
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        completed = subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        peak_bytes = int(completed.stderr.split()[-1]) * 1024
        print(
            f"dynid identify: wall time {wall:.1f} s, CPU time {cpu:.1f} s, peak resident memory"
            f" {peak_bytes / 2**20:.0f} MiB ({peak_bytes / 1e6:.0f} MB, the target's unit) (load average {load})"
        )
        bare = bare_regressor_s(robot, q, dq, ddq)
        print(
            f"the machine: a bare computeJointTorqueRegressor loop over the {samples} samples takes {bare:.2f} s"
            f" ({1e6 * bare / samples:.2f} µs a sample); dynid identify took {wall / bare:.2f} times that"
        )
        if arguments.keep is not None:
            shutil.copyfile(out, arguments.keep)

        parameters = load_parameters(out)
        other = random_fourier_trajectory(robot, margin=0.2, velocity_fraction=0.5, seed=arguments.seed + 1)
        grid = np.arange(0.0, 20.0, 1.0 / RATE_HZ)
        q_val, dq_val, ddq_val = other.evaluate(grid)
        truth = inverse_dynamics(robot, chain, drive, q_val, dq_val, ddq_val)
        predicted = predict_torques(robot, chain, parameters.drive_terms(), parameters.values(), q_val, dq_val, ddq_val)
        error = np.linalg.norm(predicted - truth) / np.linalg.norm(truth)
        print(
            f"validation on a different trajectory: ||predicted - exact|| / ||exact|| = {error:.5f}, "
            f"condition number {parameters.quality['condition_number']:.3g}, "
            f"{len(parameters.parameters)} parameters"
        )


if __name__ == "__main__":
    main()
