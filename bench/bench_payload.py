"""Drive gains by IDIM-TLS ([Briot2012]) and payload identification ([Swevers2002]) over noise seeds.

On the shipped 6-axis arm with the TX-40 wrist coupling, 1 % current noise and a 4 kg
(gains) / 3.5 kg (payload) load on ``tool0``:

* drive gains: mean error, scatter and mean reported σ of each gain over ``--seeds``
  noise draws (two 20 s recordings at 1 kHz), and the wall time of one identification;
* drive gains on data with transmission efficiencies 0.82-0.9 ([Swevers2002] eq. (8)):
  the largest gain error of the default model (a driving and a braking gain per motor,
  giving ``k`` and ``η``) against one gain per motor (``efficiency=False``), and the
  largest ``η`` error;
* payload: mass, centre-of-mass and principal-moment errors of the linear estimate
  (efficiency 1, [Swevers2002] Approach 1 for the load) and of the maximum-likelihood
  estimate with efficiency (Approach 3) on 4 periods of a 10 s excitation with
  transmission losses, and their wall times.

Run: ``.venv/bin/python bench/bench_payload.py [--seeds 10]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import ARM6_DRIVE, EFFICIENCY, KNOWN_LOAD, NOMINAL_GAINS, TRUE_GAINS, UNKNOWN_LOAD, arm6_chain

from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.identification.drive_gains import identify_drive_gains
from dynamic_identification.core.identification.payload import (
    RobotPrior,
    identify_payload_linear,
    identify_payload_ml,
    periodic_observations,
)
from dynamic_identification.core.mechanism.robot import DriveTerms, load_robot
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.resources import shipped_path
from dynamic_identification.testing.payload_simulation import simulate_current_recording


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    arguments = parser.parse_args()
    robot = load_robot(shipped_path("urdf", "dynid_arm6.urdf"))
    nominal, truth, drive, known = arm6_chain(NOMINAL_GAINS), arm6_chain(TRUE_GAINS), ARM6_DRIVE, KNOWN_LOAD
    terms = DriveTerms()
    dynamic_model = DynamicModel.create(robot, nominal, terms)
    unloaded_trajectory = random_fourier_trajectory(robot, seed=1, margin=0.2)
    loaded_trajectory = random_fourier_trajectory(robot, seed=2, margin=0.2)
    errors, sigmas, seconds = [], [], []
    for seed in range(arguments.seeds):
        unloaded = simulate_current_recording(
            robot, truth, drive, unloaded_trajectory, duration_s=20.0, seed=100 + seed, name="unloaded"
        )
        loaded = simulate_current_recording(
            robot, truth, drive, loaded_trajectory, duration_s=20.0, payload=known, seed=200 + seed, name="loaded"
        )
        start = time.perf_counter()
        result = identify_drive_gains(dynamic_model, unloaded=unloaded, loaded=loaded, payload=known)
        seconds.append(time.perf_counter() - start)
        errors.append(result.drive_gains / TRUE_GAINS - 1.0)
        sigmas.append(result.drive_gains_std / TRUE_GAINS)
    errors_percent, sigmas_percent = 100.0 * np.array(errors), 100.0 * np.array(sigmas)
    print(f"drive gains, IDIM-TLS, {arguments.seeds} seeds (nominal gains off by 5-10 %):")
    print("  mean error %   ", np.array2string(errors_percent.mean(axis=0), precision=4))
    print("  scatter %      ", np.array2string(errors_percent.std(axis=0, ddof=1), precision=4))
    print("  mean σ %       ", np.array2string(sigmas_percent.mean(axis=0), precision=4))
    print(f"  largest |error| {np.abs(errors_percent).max():.3f} %, median time {np.median(seconds):.2f} s")

    lossy: dict[str, list[np.ndarray]] = {"efficiency": [], "single": [], "eta": []}
    for seed in range(arguments.seeds):
        unloaded, loaded = (
            simulate_current_recording(
                robot,
                truth,
                drive,
                trajectory,
                duration_s=20.0,
                payload=load_,
                efficiency=EFFICIENCY,
                seed=offset + seed,
                name=name,
            )
            for trajectory, load_, offset, name in (
                (unloaded_trajectory, None, 400, "unloaded"),
                (loaded_trajectory, known, 500, "loaded"),
            )
        )
        for label, efficiency in (("efficiency", True), ("single", False)):
            result = identify_drive_gains(
                dynamic_model,
                unloaded=unloaded,
                loaded=loaded,
                payload=known,
                efficiency=efficiency,
            )
            lossy[label].append(100.0 * np.abs(result.drive_gains / TRUE_GAINS - 1.0))
            if result.efficiency is not None:
                lossy["eta"].append(100.0 * np.abs(result.efficiency / EFFICIENCY - 1.0))
    print(f"drive gains with efficiencies {EFFICIENCY.tolist()}, {arguments.seeds} seeds (worst |error| per joint, %):")
    print("  k, with η      ", np.array2string(np.max(lossy["efficiency"], axis=0), precision=3))
    print("  η              ", np.array2string(np.max(lossy["eta"], axis=0), precision=3))
    print("  k, one gain    ", np.array2string(np.max(lossy["single"], axis=0), precision=3))

    load = UNKNOWN_LOAD
    polynomial = np.stack([np.zeros(6), TRUE_GAINS, -0.03 * TRUE_GAINS, 0.004 * TRUE_GAINS], axis=1)
    prior = RobotPrior.from_standard(robot, truth, drive)
    excitation = random_fourier_trajectory(robot, seed=3, margin=0.2)
    rows: dict[str, list[list[float]]] = {"linear": [], "ml": []}
    times: dict[str, list[float]] = {"linear": [], "ml": []}
    for seed in range(arguments.seeds):
        recording = simulate_current_recording(
            robot,
            truth,
            drive,
            excitation,
            duration_s=40.0,
            rate_hz=500.0,
            payload=load,
            efficiency=EFFICIENCY,
            polynomial=polynomial,
            seed=300 + seed,
        )
        observations = periodic_observations(
            robot,
            truth,
            recording.time,
            recording.q,
            recording.currents,
            period_s=10.0,
            harmonics=5,
            polynomial=polynomial,
        )
        start = time.perf_counter()
        linear = identify_payload_linear(prior, "tool0", observations)
        times["linear"].append(time.perf_counter() - start)
        start = time.perf_counter()
        ml = identify_payload_ml(prior, "tool0", observations, initial=linear)
        times["ml"].append(time.perf_counter() - start)
        for name, estimate in (("linear", linear), ("ml", ml)):
            payload = estimate.payload
            rows[name].append(
                [
                    100.0 * abs(payload.mass_kg / load.mass_kg - 1.0),
                    1000.0 * float(np.linalg.norm(payload.com_m - load.com_m)),
                    100.0 * float(np.max(np.abs(payload.principal_moments() / load.principal_moments() - 1.0))),
                ]
            )
    print(f"payload with transmission losses, {arguments.seeds} seeds (worst over seeds):")
    for name in ("linear", "ml"):
        worst = np.max(rows[name], axis=0)
        print(
            f"  {name:6s} mass {worst[0]:.3f} %, COM {worst[1]:.2f} mm, principal moments {worst[2]:.2f} %,"
            f" median time {np.median(times[name]):.2f} s"
        )


if __name__ == "__main__":
    main()
