"""[DirectDrive2012]'s comparison of five regression models on a 3-axis direct-drive arm, in simulation.

The arm is ``urdf/dynid_dd3.urdf`` (Rotradi-like, gear ratio 1, no rotor-inertia
term; 15 inertial base parameters + viscous and Coulomb friction = 21, [DirectDrive2012] §4).
Noisy data come from the exact inverse dynamics along a random Fourier trajectory
(torque noise, 1,024,000-count encoders as in [DirectDrive2012] §4); every model is
estimated by recursive least squares ([DirectDrive2012] §3.1) on each noise realisation.

Printed:

* parameter spread, in the style of [DirectDrive2012] Tables 3-4: the true value and, per
  model, mean ± standard deviation of the estimates over the realisations;
* validation by simulation, [DirectDrive2012] Table 2: each model's first-realisation
  estimate is simulated (RK45) from the noisy torques of a *different* trajectory,
  open loop over a short horizon (an arm under gravity diverges from any motion it
  does not reproduce exactly, so longer open-loop runs measure chaos, not the model)
  and under a PD on the measured motion over a longer one; ``‖q_error,i‖₂`` (rad,
  over the samples) and the RMS error per joint are printed.

Run: ``PYTHONPATH=src .venv/bin/python bench/bench_direct_drive.py [--realisations 10] [--noise 0.2]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.identification.regression_models import MODELS, identify_model
from dynamic_identification.core.mechanism.robot import (
    DriveChain,
    DriveParameters,
    DriveTerms,
    load_robot,
    standard_parameters,
)
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.simulation import SensorModel, inverse_dynamics, synthesize_measurements
from dynamic_identification.testing.validation import IdentifiedDynamics, PDFeedback, validate_by_simulation

URDF = Path(__file__).resolve().parents[1] / "urdf" / "dynid_dd3.urdf"
TERMS = DriveTerms(rotor_inertia=False, viscous_friction=True, coulomb_friction=True, offset=False)
SHORT = {
    "dynamic": "dyn",
    "filtered_dynamic": "f-dyn",
    "supplied_energy": "energy",
    "power": "power",
    "filtered_power": "f-power",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--realisations", type=int, default=10, help="noise realisations per model")
    parser.add_argument("--noise", type=float, default=0.2, help="torque noise std, N·m")
    parser.add_argument("--rate", type=float, default=500.0, help="sampling rate, Hz")
    parser.add_argument("--duration", type=float, default=20.0, help="identification record, s")
    parser.add_argument("--validation-duration", type=float, default=1.0, help="open-loop simulation, s")
    parser.add_argument("--pd-duration", type=float, default=3.0, help="simulation under PD on the measured motion, s")
    parser.add_argument("--filter-lambda", type=float, default=9.11, help="λ of the filtered models, rad/s")
    args = parser.parse_args()

    robot = load_robot(URDF)
    chain = DriveChain.create(robot.n_joints)
    drive = DriveParameters.create(robot.n_joints, viscous=[1.5, 0.8, 0.15], coulomb=[1.2, 1.0, 0.3])
    dynamic_model = DynamicModel.create(robot, chain, TERMS)
    base = dynamic_model.base
    truth = base.from_standard(standard_parameters(robot, TERMS, drive))
    sensor = SensorModel(current_noise_std_a=args.noise, encoder_counts_per_rev=1_024_000)
    t = np.arange(0.0, args.duration, 1.0 / args.rate)
    motion = random_fourier_trajectory(robot, fundamental_hz=0.1, harmonics=5, seed=3).evaluate(t)

    estimates = {model: np.empty((args.realisations, base.count)) for model in MODELS}
    seconds = dict.fromkeys(MODELS, 0.0)
    for realisation in range(args.realisations):
        q, torques = synthesize_measurements(robot, chain, drive, t, *motion, sensor, seed=realisation)
        for model in MODELS:
            start = time.perf_counter()
            result = identify_model(
                dynamic_model,
                t,
                q,
                torques,
                model=model,
                filter_lambda=args.filter_lambda,
                recursive=True,
            )
            seconds[model] += time.perf_counter() - start
            estimates[model][realisation] = result.parameters

    print(
        f"dynid_dd3: {base.count} base parameters, {args.duration:g} s at {args.rate:g} Hz,"
        f" torque noise {args.noise:g} N·m, {args.realisations} realisations, RLS, λ = {args.filter_lambda:g} rad/s"
    )
    print("\nParameter estimates: mean ± std over realisations (cf. [DirectDrive2012] Tables 3-4)")
    header = f"{'parameter':<24} {'true':>9} " + " ".join(f"{SHORT[m]:>19}" for m in MODELS)
    print(header)
    print("-" * len(header))
    for i, expression in enumerate(base.expressions):
        cells = [f"{estimates[m][:, i].mean():9.4f} ± {estimates[m][:, i].std():7.4f}" for m in MODELS]
        print(f"{expression[:24]:<24} {truth[i]:9.4f} " + " ".join(f"{c:>19}" for c in cells))
    print("\nRelative error of the mean, and spread relative to |true|, over all parameters (median, %)")
    for model in MODELS:
        scale = np.maximum(np.abs(truth), 1e-3)
        bias = np.median(np.abs(estimates[model].mean(axis=0) - truth) / scale) * 100
        spread = np.median(estimates[model].std(axis=0) / scale) * 100
        print(
            f"  {SHORT[model]:<8} bias {bias:6.2f} %   spread {spread:6.2f} %"
            f"   {seconds[model] / args.realisations:.2f} s per estimate"
        )

    # Validation by simulation ([DirectDrive2012] §5, Table 2) on a trajectory not used for identification.
    rows = [("true θ", truth), ("true, τ~", truth)] + [(SHORT[m], estimates[m][0]) for m in MODELS]
    for title, duration, feedback in (
        ("open-loop simulation", args.validation_duration, None),
        ("simulation under PD on the measured motion", args.pd_duration, PDFeedback(kp=[400, 400, 40], kd=[40, 40, 4])),
    ):
        t_val = np.arange(0.0, duration, 1.0 / args.rate)
        reference = random_fourier_trajectory(robot, fundamental_hz=0.2, harmonics=4, seed=11).evaluate(t_val)
        q_val, torque_val = synthesize_measurements(robot, chain, drive, t_val, *reference, sensor, seed=99)
        exact = inverse_dynamics(robot, chain, drive, *reference)
        print(f"\nValidation by {title} over {duration:g} s (cf. [DirectDrive2012] Table 2)")
        print(f"{'model':<10} " + " ".join(f"‖q_err,{j + 1}‖₂ [rad]" for j in range(robot.n_joints)) + "   RMS [mrad]")
        for name, theta in rows:
            dynamics = IdentifiedDynamics.create(dynamic_model, theta)
            torque = exact if name == "true θ" else torque_val
            result = validate_by_simulation(dynamics, t_val, q_val, torque, dq0=reference[1][0], feedback=feedback)
            norms = " ".join(f"{value:16.4f}" for value in result.error_norm)
            rms = " ".join(f"{1e3 * value:8.3f}" for value in result.error_rms)
            print(f"{name:<10} {norms}   {rms}{'' if result.success else '  (integration failed)'}")
    print(
        "('true θ': noise-free torques, the floor of integration, Coulomb smoothing and quantisation;"
        " 'true, τ~': the same noisy torques as the models.)"
    )


if __name__ == "__main__":
    main()
