"""Excitation optimisation: wall time and condition number reached, versus random coefficients.

Issue 3 benchmark: for 6 axes (``urdf/dynid_arm6.urdf``, full ranges and a restricted
workspace like [Volkmann2020] Fig. 2.c) and 7 axes (Panda arm joints of example-robot-data),
``optimise_fourier`` with ``n_h = 5``, ``f = 0.1 Hz`` ([Volkmann2020] §II.C) within a budget of
cost evaluations (the same design at any load; its wall time printed), beside the median
condition number of random Fourier coefficients fitted to the same limits. Condition numbers are
of the column-normalised base observation matrix ([Gautier2013] convention); [Volkmann2020]
§III.B reports 6.76 (full) and 7.71 (restricted).

Run: ``.venv/bin/python bench/bench_excitation.py [--evaluations 5000] [--seeds 5]``
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import example_robot_file, print_limit_usage

from dynamic_identification.core.excitation.optimisation import (
    Workspace,
    condition_number,
    optimise_fourier,
    random_fourier,
)
from dynamic_identification.core.excitation.safety import JointLimits
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel, load_robot
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.regressors.idim import base_parameters
from dynamic_identification.resources import shipped_path

ARM6_RESTRICTED = Workspace(
    lower=np.array([-1.0, -1.0, -1.5, -2.5, -1.5, -2.5]),
    upper=np.array([1.0, 0.8, 1.5, 2.5, 1.5, 2.5]),
    box_min=np.array([0.1, -0.5, 0.15]),
    box_max=np.array([0.7, 0.5, 0.9]),
)
"""A sector in front of the 6-axis arm, above its table (the test suite's restricted workspace)."""


def run(label: str, robot: RobotModel, workspace: Workspace | None, evaluations: int, seeds: int) -> None:
    chain = DriveChain.create(robot.n_joints, gear_ratios=np.full(robot.n_joints, 100.0))
    terms = DriveTerms()
    base = base_parameters(robot, chain, terms)
    limits = JointLimits.from_robot(robot)
    dynamic_model = DynamicModel.create(robot, chain, terms, base)
    random = [
        condition_number(
            dynamic_model,
            random_fourier(robot, limits, seed=seed, workspace=workspace),
            samples=200,
        )
        for seed in range(seeds)
    ]
    design = optimise_fourier(
        dynamic_model, limits, workspace=workspace, time_budget_s=float("inf"), max_evaluations=evaluations
    )
    baseline = float(np.median(random))
    print(f"{label}: {robot.n_joints} joints, {base.count} base parameters")
    print(
        f"  optimised  cond {design.condition_number:8.2f}  in {design.wall_time_s:5.1f} s"
        f" ({design.evaluations} evaluations, {1e3 * design.wall_time_s / design.evaluations:.2f} ms each)"
    )
    print(
        f"  random     cond {baseline:8.2f}  (median of {seeds} seeds, range {min(random):.2f}-{max(random):.2f})"
        f"  -> optimised is {baseline / design.condition_number:.1f}x lower"
    )
    print_limit_usage(design.usage)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--evaluations", type=int, default=5000, help="cost evaluations per case (default: max_evaluations' default)"
    )
    parser.add_argument("--seeds", type=int, default=5, help="random-coefficient baselines per case")
    arguments = parser.parse_args()
    arm6 = load_robot(shipped_path("urdf", "dynid_arm6.urdf"))
    panda = load_robot(example_robot_file("panda.urdf"), [f"panda_joint{i}" for i in range(1, 8)])
    print(f"n_h = 5, f = 0.1 Hz, 200 samples per period, budget {arguments.evaluations} cost evaluations, seed 0")
    run("dynid_arm6, full ranges", arm6, None, arguments.evaluations, arguments.seeds)
    run("dynid_arm6, restricted workspace", arm6, ARM6_RESTRICTED, arguments.evaluations, arguments.seeds)
    run("panda (7 axes), full ranges", panda, None, arguments.evaluations, arguments.seeds)


if __name__ == "__main__":
    main()
