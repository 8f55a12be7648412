"""Baseline of ``dynid identify`` on realistic recordings: default settings against hand-tuned ones.

For each robot preset of :mod:`dynamic_identification.testing.realistic` (the shipped
6-axis arm, a UR5, a Panda's seven arm joints) this generates a training recording
on a random Fourier excitation and two validation recordings on other trajectories:

* ``fourier`` — another random Fourier excitation (interpolation);
* ``pick&place`` — pick-and-place cycles with dwells (extrapolation to the
  robot's job, slow moves and stick phases; [Volkmann2020] §III.B).

It identifies the training recording with the real pipeline
(:func:`dynamic_identification.api.identify_recording`, the code behind
``dynid identify``) with the DEFAULT configuration (only the drive chain, which a
user must configure, is set) and with a grid of hand-tuned signal and estimation
settings, and predicts the validation torques from the identified base parameters
on the true validation motion. Printed per robot and validation:

* ``floor`` — the error of the IDIM with the *true* standard parameters: what no
  setting can beat (static friction, the Stribeck curve and the torque hold of the
  control period are not in the model);
* ``err`` — ``‖τ_pred − τ_true‖ / ‖τ_true‖`` against the noise-free torques;
* ``vs meas`` — the same against the measured (noisy, drifting) torques;
* ``par`` — ``‖τ_pred − τ_model‖ / ‖τ_model‖`` against the true-parameter IDIM
  prediction: the parameter error alone, without the floor;

for the defaults and for the best hand-tuned setting (smallest ``err``), their ratio,
the winning setting, and the identification wall times (with ``--jobs`` identifications
in parallel, so the times are of a loaded machine); then the defaults against the best
setting by ``par``.

Run: ``.venv/bin/python bench/bench_realistic.py [--robots arm6 ur5 panda] [--train-s 60] [--grid small|full]``
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from _common import example_robot_file, fourier_recording, pick_and_place_recording

from dynamic_identification.api import identify_recording
from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.identification import predict_torques
from dynamic_identification.core.mechanism.robot import DriveTerms, RobotModel
from dynamic_identification.core.signal.filters import default_decimation
from dynamic_identification.io.config import IdentificationConfig, load_config
from dynamic_identification.resources import shipped_path
from dynamic_identification.testing.realistic import RealisticRecording, RobotPreset, preset
from dynamic_identification.testing.recordings import as_recording

CUTOFFS_HZ = (5.0, 10.0, 20.0, 40.0)
MIN_SPEEDS_RAD_S = (0.0, 0.05, 0.2)
VELOCITIES = ("differentiated", "measured")
STAMPS = ("recorded", "recovered")
METHODS = ("wls", "ols")


def robot_preset(name: str) -> RobotPreset:
    urdf = {
        "arm6": shipped_path("urdf", "dynid_arm6.urdf"),
        "ur5": example_robot_file("ur5_robot.urdf"),
        "panda": example_robot_file("panda.urdf"),
    }[name]
    return preset(name, urdf)


def relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@dataclasses.dataclass(frozen=True)
class Score:
    """Validation errors of one identification, per validation recording."""

    label: str
    errors: dict[str, tuple[float, float, float]]
    seconds: float


def grid(config: IdentificationConfig, rate_hz: float, full: bool) -> list[tuple[str, IdentificationConfig]]:
    """Hand-tuned settings: cut-off × min speed × velocity source × stamps (WLS, automatic decimation), plus, in the
    full grid, OLS and twice or half the automatic decimation for each."""
    settings = []
    for cutoff, speed, velocity, stamps in itertools.product(CUTOFFS_HZ, MIN_SPEEDS_RAD_S, VELOCITIES, STAMPS):
        if cutoff >= 0.5 * rate_hz:
            continue
        base = dataclasses.replace(
            config, position_cutoff_hz=cutoff, min_speed_rad_s=speed, velocity=velocity, stamps=stamps
        )
        auto = default_decimation(rate_hz, position_cutoff_hz=cutoff)
        label = f"fc={cutoff:g} vmin={speed:g} vel={velocity[:4]} stamps={stamps[:4]}"
        variants = [(f"{label} wls nd=auto({auto})", base)]
        if full:
            variants.append((f"{label} ols nd=auto({auto})", dataclasses.replace(base, method="ols")))
            for factor in sorted({max(1, auto // 2), 2 * auto}):
                variants.append((f"{label} wls nd={factor}", dataclasses.replace(base, decimation=factor)))
        settings.extend(variants)
    return settings


def score(
    robot: RobotModel,
    config: IdentificationConfig,
    train: RealisticRecording,
    validations: dict[str, RealisticRecording],
    label: str,
) -> Score | None:
    chain = train.drive_chain
    started = time.perf_counter()
    try:
        result = identify_recording(robot, config, chain, as_recording(train))
    except IdentificationError as error:
        print(f"    {label}: failed ({error})")
        return None
    seconds = time.perf_counter() - started
    errors = {}
    for name, data in validations.items():
        truth = data.truth
        predicted = predict_torques(robot, chain, config.drive_terms, result.values, truth.q, truth.dq, truth.ddq)
        model = true_model_torques(robot, data)
        errors[name] = (
            relative(predicted, truth.torque_nm),
            relative(predicted, data.measured_torque_nm),
            relative(predicted, model),
        )
    return Score(label=label, errors=errors, seconds=seconds)


def true_model_torques(robot: RobotModel, data: RealisticRecording) -> np.ndarray:
    """The IDIM with the true standard parameters on the true motion."""
    truth = data.truth
    values = dict(zip(truth.parameter_names, truth.standard_parameters.tolist(), strict=True))
    return predict_torques(robot, data.drive_chain, DriveTerms(), values, truth.q, truth.dq, truth.ddq)


@dataclasses.dataclass(frozen=True)
class _Inputs:
    """What every identification of one robot needs; set once per worker process."""

    robot: RobotModel
    train: RealisticRecording
    validations: dict[str, RealisticRecording]


_INPUTS: list[_Inputs] = []


def _start_worker(name: str, train: RealisticRecording, validations: dict[str, RealisticRecording]) -> None:
    _INPUTS[:] = [_Inputs(robot_preset(name).robot(), train, validations)]


def _score_in_worker(job: tuple[str, IdentificationConfig]) -> Score | None:
    label, config = job
    inputs = _INPUTS[0]
    return score(inputs.robot, config, inputs.train, inputs.validations, label)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", nargs="+", default=["arm6", "ur5", "panda"], choices=["arm6", "ur5", "panda"])
    parser.add_argument("--train-s", type=float, default=60.0, help="training recording length, s")
    parser.add_argument("--validation-s", type=float, default=30.0, help="Fourier validation length, s")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--grid", choices=["small", "full"], default="small")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="identifications run in parallel")
    arguments = parser.parse_args()

    summary = []
    for name in arguments.robots:
        robot_settings = robot_preset(name)
        robot = robot_settings.robot()
        seed = arguments.seed
        started = time.perf_counter()
        train = fourier_recording(robot, robot_settings, seed=seed, duration_s=arguments.train_s)
        generation = time.perf_counter() - started
        validations = {
            "fourier": fourier_recording(robot, robot_settings, seed=seed + 100, duration_s=arguments.validation_s),
            "pick&place": pick_and_place_recording(robot, robot_settings, seed=seed + 200),
        }
        stamps = np.diff(train.time)
        print(
            f"\n== {name}: {robot.n_joints} joints, {robot_settings.signal} at {robot_settings.stamps.rate_hz:g} Hz"
            f" (median step {1e3 * np.median(stamps[stamps > 0]):.4g} ms), {train.time.shape[0]} rows in"
            f" {arguments.train_s:g} s generated in {generation:.1f} s"
            f" ({60.0 * generation / arguments.train_s:.1f} s per simulated minute);"
            f" saturated steps {train.truth.saturated_steps}, stuck {100 * train.truth.stuck.mean():.1f} % of samples;"
            f" pick&place {validations['pick&place'].truth.true_time_s[-1]:.1f} s",
            flush=True,
        )
        config = dataclasses.replace(
            load_config(None),
            gear_ratios=tuple(robot_settings.drive_chain.gear_ratios.tolist()),
            drive_gains=tuple(robot_settings.drive_chain.drive_gains.tolist()),
        )
        floors = {
            key: relative(true_model_torques(robot, data), data.truth.torque_nm) for key, data in validations.items()
        }
        jobs = [("defaults", config), *grid(config, robot_settings.stamps.nominal_rate_hz, arguments.grid == "full")]
        started = time.perf_counter()
        with ProcessPoolExecutor(
            max_workers=arguments.jobs, initializer=_start_worker, initargs=(name, train, validations)
        ) as pool:
            results = list(pool.map(_score_in_worker, jobs))
        default, tuned = results[0], [r for r in results[1:] if r is not None]
        print(f"  {len(tuned)} hand-tuned settings identified in {time.perf_counter() - started:.0f} s", flush=True)
        for key in validations:
            summary.append((name, key, floors[key], default, tuned))
            print_rows([summary[-1]])

    print("\nAll robots (err = ||tau_pred - tau_true|| / ||tau_true|| on the validation; best = smallest err):")
    print_rows(summary, header=True)
    print("\nParameter error alone (par = ||tau_pred - tau_model|| / ||tau_model||, tau_model: the true parameters):")
    print(f"{'robot':<6} {'validation':<11} | {'default':>7} | {'best':>7} | {'ratio':>5}  best setting")
    for name, key, _, default, tuned in summary:
        best = min(tuned, key=lambda s: s.errors[key][2])
        d, b = (default.errors[key][2] if default is not None else np.nan), best.errors[key][2]
        print(f"{name:<6} {key:<11} | {d:>7.4f} | {b:>7.4f} | {d / b:>5.2f}  {best.label}")


def print_rows(rows: list[tuple[str, str, float, Score | None, list[Score]]], *, header: bool = False) -> None:
    if header:
        print(
            f"{'robot':<6} {'validation':<11} {'floor':>6} | {'default err':>11} {'vs meas':>7} {'s':>5} |"
            f" {'best err':>8} {'vs meas':>7} {'s':>5} | {'ratio':>5}  best setting"
        )
    for name, key, floor, default, tuned in rows:
        best = min(tuned, key=lambda s: s.errors[key][0])
        d = default.errors[key] if default is not None else (np.nan, np.nan, np.nan)
        b = best.errors[key]
        seconds = default.seconds if default is not None else np.nan
        print(
            f"{name:<6} {key:<11} {floor:>6.4f} | {d[0]:>11.4f} {d[1]:>7.4f} {seconds:>5.1f} |"
            f" {b[0]:>8.4f} {b[1]:>7.4f} {best.seconds:>5.1f} | {d[0] / b[0]:>5.2f}  {best.label}"
        )


if __name__ == "__main__":
    main()
