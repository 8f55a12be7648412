"""Closed-loop excitation ([Briot2012] §2): condition number, singularity margin and planning time on the five-bar.

Issue 14 item 5 benchmark. For ``urdf/five_bar.urdf`` with the excitation settings of
``config/five_bar.yaml`` (0.2 Hz, 5 harmonics, 2 periods, 100 Hz), prints:

* the condition number of the column-normalised closed-loop base observation matrix of
  :func:`~dynamic_identification.core.excitation.plan.plan_excitation` (optimised within the configuration's
  budget of cost evaluations, so the same plan at any load) beside random coefficients shrunk into the same
  constraints (median and range over seeds);
* the smallest ``σ_min / σ_max`` of the passive block of ``A_t`` met along the 1 kHz
  executed motion, relative to the home pose, against the margin, and what the plan uses
  of the actuated limits and the effort limits;
* the planning time (optimisation, final fit and the 1 kHz checks).

Run: ``.venv/bin/python bench/bench_closed_loop_excitation.py [--evaluations N] [--seeds 5]``
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
from _common import load_five_bar, print_limit_usage

from dynamic_identification.core.excitation.constraints import DEFAULT_SINGULARITY_MARGIN, MechanismLimits
from dynamic_identification.core.excitation.optimisation import condition_number, random_fourier
from dynamic_identification.core.excitation.plan import plan_excitation
from dynamic_identification.core.excitation.safety import TorqueModel
from dynamic_identification.core.mechanism.closed_loop import base_parameters
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.io.config import load_excitation_settings
from dynamic_identification.resources import shipped_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--evaluations", type=int, default=None, help="cost evaluations of the search (default the configuration's)"
    )
    parser.add_argument("--seeds", type=int, default=5, help="random-coefficient baselines")
    parser.add_argument("--margin", type=float, default=DEFAULT_SINGULARITY_MARGIN, help="singularity margin")
    arguments = parser.parse_args()
    model = load_five_bar()
    chain, terms = DriveChain.create(2, drive_gains=[0.08, 0.08]), DriveTerms()
    settings = load_excitation_settings(shipped_path("config", "five_bar.yaml"))
    if arguments.evaluations is not None:
        settings = replace(settings, max_evaluations=arguments.evaluations)
    start = time.perf_counter()
    plan = plan_excitation(model, chain, terms, settings, margin=arguments.margin)
    planning_s = time.perf_counter() - start
    limits = MechanismLimits.from_settings(model, settings, singularity_margin=arguments.margin)
    torque_model = TorqueModel.nominal(model, chain, terms)
    base = base_parameters(model, chain, terms)
    random = []
    for seed in range(arguments.seeds):
        trajectory = random_fourier(
            model,
            limits.planning(settings.interpolation_tolerance_rad),
            fundamental_hz=settings.fundamental_hz,
            harmonics=settings.harmonics,
            seed=seed,
            torque_model=torque_model,
        )
        one_period = int(np.ceil(trajectory.period_s * 1000.0))
        random.append(condition_number(DynamicModel.create(model, chain, terms, base), trajectory, samples=one_period))
    print(
        f"five_bar: {base.count} base parameters, budget {settings.max_evaluations} cost evaluations (wall-time cap"
        f" {settings.time_budget_s:g} s), margin {arguments.margin:g}"
    )
    print(f"  plan       {plan.description}")
    print(f"  optimised  cond {plan.condition_number:8.2f}  planned in {planning_s:5.1f} s")
    baseline = float(np.median(random))
    print(
        f"  random     cond {baseline:8.2f}  (median of {arguments.seeds} seeds, range {min(random):.2f}-"
        f"{max(random):.2f}) -> optimised is {baseline / float(plan.condition_number or np.inf):.1f}x lower"
    )
    print_limit_usage(plan.usage)
    print(f"  torque         use {plan.torque_usage:5.2f} of the effort limits ({plan.torque_source})")


if __name__ == "__main__":
    main()
