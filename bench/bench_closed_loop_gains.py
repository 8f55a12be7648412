"""Closed-loop identification from recordings and drive gains by IDIM-TLS ([Briot2012] eq. (6)-(13)) on the five-bar.

Issue 14 item 2 benchmark. The shipped five-bar (``urdf/five_bar.urdf``, drives of
``config/five_bar.yaml``) is simulated tracking 10 s Fourier motions of its motors (PD +
feedforward at 1 kHz, rotor inertia, friction, 14-bit encoders, current noise 1 % of the
RMS current); the motors' torque constants are 7.5 % above and 6 % below the nominal
0.08 N·m/A. A second recording carries a 60 g payload on the distal tip. For each noise
seed it prints:

* IDIM-WLS through ``prepare_observations`` with the true gains: the largest base-parameter
  error in σ and the relative error of the predicted noise-free actuated torques on a
  validation trajectory;
* IDIM-TLS (``identify_drive_gains`` of the five-bar mechanism): gain errors and σ in %, the largest
  base-parameter error in σ, the validation error;
* IDIM-WLS with the nominal gains on the same unloaded recording (what one gets without
  calibrating the gains): the validation error;
* run times of the simulation, the observation builder and the TLS identification.

Run: ``.venv/bin/python bench/bench_closed_loop_gains.py [--seeds 5]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import FIVE_BAR_DRIVE, TIP_PAYLOAD, fourier, identify_gains_from_runs, load_five_bar, track

from dynamic_identification.core.estimation.least_squares import weighted_least_squares
from dynamic_identification.core.identification import IdentificationSettings, SignalSettings, prepare_observations
from dynamic_identification.core.mechanism.closed_loop import (
    ClosedLoopModel,
    base_parameters,
    observation_matrix,
    standard_parameters,
)
from dynamic_identification.core.mechanism.payload import attach_payload
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.simulation import (
    TrackingRun,
    inverse_dynamics,
)

NOMINAL = DriveChain.create(2, drive_gains=[0.08, 0.08])
TRUE_GAINS = np.array([0.08 * 1.075, 0.08 * 0.94])
TRUTH = DriveChain.create(2, drive_gains=TRUE_GAINS)
DRIVE = FIVE_BAR_DRIVE
PAYLOAD = TIP_PAYLOAD
SETTINGS = IdentificationSettings(signal=SignalSettings(position_cutoff_hz=10.0, decimation=10), min_samples=2000)
TERMS = DriveTerms()


def _record(model: ClosedLoopModel, trajectory_seed: int, noise_seed: int) -> TrackingRun:
    return track(model, TRUTH, DRIVE, fourier(trajectory_seed, 10.0), seed=noise_seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="noise seeds")
    args = parser.parse_args()
    model = load_five_bar()
    loaded_model = ClosedLoopModel.create(
        attach_payload(model.robot, PAYLOAD), model.closures, model.actuated_joint_names
    )
    base = base_parameters(model, NOMINAL, TERMS)
    truth = base.from_standard(standard_parameters(model, TERMS, DRIVE))
    _, q, dq, ddq = fourier(11, 5.0)
    validation = model.complete_motion(q, dq, ddq)
    expected = inverse_dynamics(model, TRUTH, DRIVE, validation.q, validation.dq, validation.ddq)
    regressor = base.select(
        observation_matrix(
            model, NOMINAL, TERMS, validation.q, validation.dq, validation.ddq, projection=validation.projection
        )
    )

    def validation_error(names: tuple[str, ...], values: np.ndarray) -> float:
        predicted = regressor[..., base.subset(names)] @ values
        return float(np.linalg.norm(predicted - expected) / np.linalg.norm(expected))

    print(f"five-bar, {base.count} base parameters; true gains {TRUE_GAINS.tolist()} N·m/A, nominal 0.08 N·m/A")
    print(
        "seed | WLS max|e|/σ  valid. % | TLS gain err %        gain σ %        max|e|/σ  valid. %"
        " | OLS-nominal valid. % | sim s  obs s  TLS s"
    )
    rows = []
    dynamic_model = DynamicModel.create(model, NOMINAL, TERMS, base)
    for seed in range(args.seeds):
        start = time.perf_counter()
        unloaded = _record(model, 3, 100 + 2 * seed)
        loaded = _record(loaded_model, 5, 101 + 2 * seed)
        simulated = time.perf_counter() - start
        start = time.perf_counter()
        observations = prepare_observations(
            dynamic_model,
            unloaded.time_s,
            unloaded.q,
            unloaded.joint_torques_nm,
            settings=SETTINGS,
        )
        built = time.perf_counter() - start
        wls = weighted_least_squares(
            observations.observation_matrix, observations.torques, valid=observations.valid, parameter_names=base.names
        )
        start = time.perf_counter()
        gains = identify_gains_from_runs(
            dynamic_model, unloaded=unloaded, loaded=loaded, payload=PAYLOAD, settings=SETTINGS
        )
        tls_time = time.perf_counter() - start
        nominal = prepare_observations(
            dynamic_model,
            unloaded.time_s,
            unloaded.q,
            NOMINAL.joint_torques(unloaded.currents_a),
            settings=SETTINGS,
        )
        ols = weighted_least_squares(nominal.observation_matrix, nominal.torques, valid=nominal.valid)
        row = (
            float(np.max(np.abs(wls.parameters - truth) / wls.std)),
            100 * validation_error(base.names, wls.parameters),
            100 * (gains.drive_gains / TRUE_GAINS - 1.0),
            100 * gains.drive_gains_std / TRUE_GAINS,
            float(np.max(np.abs(gains.values - truth[base.subset(gains.names)]) / gains.std)),
            100 * validation_error(gains.names, gains.values),
            100 * validation_error(base.names, ols.parameters),
        )
        rows.append(row)
        print(
            f"{seed:4d} | {row[0]:12.2f} {row[1]:9.3f} | {np.array2string(row[2], precision=3):>16s}"
            f" {np.array2string(row[3], precision=3):>16s} {row[4]:9.2f} {row[5]:9.3f} | {row[6]:20.2f}"
            f" | {simulated:5.1f} {built:6.2f} {tls_time:6.2f}"
        )
    gain_errors = np.abs(np.array([row[2] for row in rows]))
    print(
        f"worst over {args.seeds} seeds: WLS {max(r[0] for r in rows):.2f} σ,"
        f" validation {max(r[1] for r in rows):.3f} %;"
        f" TLS gains {gain_errors.max():.3f} %, {max(r[4] for r in rows):.2f} σ, validation"
        f" {max(r[5] for r in rows):.3f} %; OLS with nominal gains validation {min(r[6] for r in rows):.2f} % at best"
    )


if __name__ == "__main__":
    main()
