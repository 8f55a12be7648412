"""Closed-loop IDIM ([Briot2012] §2): timings and accuracy on the shipped five-bar.

Issue 14 benchmark. Prints, for ``urdf/five_bar.urdf`` closed at its distal tip:

* the time per 1000 samples of ``complete_motion`` (passive positions by Newton, velocities
  and accelerations by eq. (3)-(4)), of the closed-loop observation matrix (with the
  projection from ``complete_motion`` and with it recomputed and checked), of the
  Lagrange-multiplier ground truth, of the simulator, and of the identification's rows from the
  simulated recording (``prepare_observations``: filtering, the loops solved at the decimated
  instants, the decimated rows);
* the largest difference between regressor × standard parameters and the
  Lagrange-multiplier torques ([Briot2012] eq. (5) against eq. (6));
* an IDIM-WLS identification on a simulated recording (noise, quantisation, friction):
  largest deviation of the base parameters in σ, largest relative error, condition number,
  and the relative error of the predicted torques on a validation trajectory.

Run: ``.venv/bin/python bench/bench_closed_loop.py [--seconds 20]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.ndimage
from _common import FIVE_BAR_DRIVE, fourier, load_five_bar

from dynamic_identification.core.estimation.least_squares import weighted_least_squares
from dynamic_identification.core.identification import IdentificationSettings, SignalSettings, prepare_observations
from dynamic_identification.core.mechanism.closed_loop import (
    base_parameters,
    observation_matrix,
    random_motion,
    standard_parameters,
)
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.signal.filters import ParallelDecimator, differentiate
from dynamic_identification.core.simulation import (
    RobotSimulator,
    SensorModel,
    SimulationSettings,
    inverse_dynamics,
    simulate_tracking,
)


def per_thousand(seconds: float, samples: int) -> str:
    return f"{1000.0 * seconds / samples:.3f} s / 1000 samples"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the identification recording, s")
    args = parser.parse_args()
    model = load_five_bar()
    terms = DriveTerms()
    chain = DriveChain.create(2, drive_gains=[0.08, 0.08])
    drive = FIVE_BAR_DRIVE

    time_s, q_des, dq_des, ddq_des = fourier(3, args.seconds)
    start = time.perf_counter()
    desired = model.complete_motion(q_des, dq_des, ddq_des)
    print(f"complete_motion: {per_thousand(time.perf_counter() - start, time_s.size)}")
    start = time.perf_counter()
    observation_matrix(model, chain, terms, desired.q, desired.dq, desired.ddq, projection=desired.projection)
    print(f"observation matrix (projection given): {per_thousand(time.perf_counter() - start, time_s.size)}")
    start = time.perf_counter()
    observation_matrix(model, chain, terms, desired.q, desired.dq, desired.ddq)
    print(f"observation matrix (projection checked): {per_thousand(time.perf_counter() - start, time_s.size)}")
    start = time.perf_counter()
    feedforward = inverse_dynamics(model, chain, drive, desired.q, desired.dq, desired.ddq)
    print(f"Lagrange-multiplier inverse dynamics: {per_thousand(time.perf_counter() - start, time_s.size)}")

    states = random_motion(model, 1000, np.random.default_rng(0))
    regressor = observation_matrix(model, chain, terms, states.q, states.dq, states.ddq)
    truth = inverse_dynamics(model, chain, drive, states.q, states.dq, states.ddq)
    error = np.max(np.abs(regressor @ standard_parameters(model, terms, drive) - truth))
    print(f"regressor vs Lagrange multipliers, 1000 random states: max |error| {error:.2e} N·m")

    settings = SimulationSettings(sensor=SensorModel(current_noise_std_a=0.01, encoder_counts_per_rev=2**14))
    simulator = RobotSimulator(model, chain, drive, settings, seed=4)
    start = time.perf_counter()
    run = simulate_tracking(simulator, time_s, q_des, dq_des, ddq_des, feedforward)
    print(f"simulation: {per_thousand(time.perf_counter() - start, time_s.size)}")
    start = time.perf_counter()
    prepare_observations(
        DynamicModel.create(model, chain, terms, base_parameters(model, chain, terms)),
        run.time_s,
        run.q,
        run.joint_torques_nm,
        settings=IdentificationSettings(
            signal=SignalSettings(position_cutoff_hz=10.0, decimation=10, min_speed_rad_s=0.05), min_samples=2000
        ),
    )
    print(f"identification rows (prepare_observations): {per_thousand(time.perf_counter() - start, time_s.size)}")

    base = base_parameters(model, chain, terms)
    q, dq, ddq = differentiate(run.q, rate_hz=1000.0, cutoff_hz=10.0)
    motion = model.complete_motion(q, dq, ddq, q_guess=run.q_tree[0])
    w = base.select(
        observation_matrix(model, chain, terms, motion.q, motion.dq, motion.ddq, projection=motion.projection)
    )
    decimator = ParallelDecimator.create(10)
    slowest = scipy.ndimage.minimum_filter1d(np.abs(dq), size=2 * decimator.half_length + 1, axis=0)
    edge = 500
    w_decimated, kept = decimator.decimate(w[edge:-edge])
    y_decimated, _ = decimator.decimate(run.joint_torques_nm[edge:-edge])
    result = weighted_least_squares(
        w_decimated, y_decimated, parameter_names=base.names, valid=slowest[edge:-edge][kept] > 0.05
    )
    expected = base.from_standard(standard_parameters(model, terms, drive))
    deviation = np.abs(result.parameters - expected) / result.std
    relative = np.abs(result.parameters - expected) / np.abs(expected)
    print(f"identification ({args.seconds:g} s, {base.count} base parameters, cond {result.condition_number:.0f}):")
    for name, value, true, sigma in zip(base.names, result.parameters, expected, deviation, strict=True):
        print(f"  {name:6s} {value: .4e}  true {true: .4e}  |error| {sigma:.2f} σ")
    worst = int(np.argmax(relative))
    print(f"  max deviation {deviation.max():.2f} σ; max relative error {relative[worst]:.1%} ({base.names[worst]})")

    _, q_val, dq_val, ddq_val = fourier(11, 5.0)
    validation = model.complete_motion(q_val, dq_val, ddq_val)
    torques = inverse_dynamics(model, chain, drive, validation.q, validation.dq, validation.ddq)
    regressor = observation_matrix(
        model, chain, terms, validation.q, validation.dq, validation.ddq, projection=validation.projection
    )
    predicted = base.select(regressor) @ result.parameters
    print(f"validation: ‖τ̂ − τ‖ / ‖τ‖ = {np.linalg.norm(predicted - torques) / np.linalg.norm(torques):.2%}")


if __name__ == "__main__":
    main()
