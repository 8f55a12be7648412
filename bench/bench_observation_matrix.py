"""Observation-matrix build throughput beside a bare ``computeJointTorqueRegressor`` loop.

Target (issue 2): building the full IDIM observation matrix (inertial + drive-chain
columns, 14 standard parameters per joint) runs at >= 0.5 of the bare loop's
samples/s on the 6-axis arm. Best of several repeats, one process, same samples.

Run: ``.venv/bin/python bench/bench_observation_matrix.py [--samples N]``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import pinocchio as pin

from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, load_robot
from dynamic_identification.core.regressors.idim import inertial_observation_matrix, observation_matrix, random_motion
from dynamic_identification.resources import shipped_path


def best_times(functions: list[Callable[[], object]], repeats: int) -> list[float]:
    """Best wall time of each function over ``repeats`` interleaved rounds (noise hits all alike)."""
    times = [[] for _ in functions]
    for _ in range(repeats):
        for function, record in zip(functions, times, strict=True):
            start = time.perf_counter()
            function()
            record.append(time.perf_counter() - start)
    return [min(record) for record in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=7)
    arguments = parser.parse_args()

    robot = load_robot(shipped_path("urdf", "dynid_arm6.urdf"))
    chain = DriveChain.create(robot.n_joints, gear_ratios=np.full(robot.n_joints, 100.0))
    terms = DriveTerms()
    q, dq, ddq = random_motion(robot, arguments.samples, np.random.default_rng(0))
    model = robot.model
    data = model.createData()

    def bare_loop() -> None:
        regressor = pin.computeJointTorqueRegressor
        for k in range(arguments.samples):
            regressor(model, data, q[k], dq[k], ddq[k])

    rows = [
        ("bare computeJointTorqueRegressor loop", bare_loop),
        ("inertial_observation_matrix (N, n, 10n)", lambda: inertial_observation_matrix(robot, q, dq, ddq, data=data)),
        (
            f"observation_matrix (N, n, {robot.n_joints * terms.per_joint})",
            lambda: observation_matrix(robot, chain, terms, q, dq, ddq, data=data),
        ),
    ]
    print(f"robot dynid_arm6 ({robot.n_joints} joints), {arguments.samples} samples, best of {arguments.repeats}")
    seconds = best_times([function for _, function in rows], arguments.repeats)
    bare_rate = arguments.samples / seconds[0]
    for (label, _), elapsed in zip(rows, seconds, strict=True):
        rate = arguments.samples / elapsed
        print(f"  {label:<42} {rate:>12,.0f} samples/s  {rate / bare_rate:5.2f} of bare  ({1e6 / rate:.2f} µs/sample)")


if __name__ == "__main__":
    main()
