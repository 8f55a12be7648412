"""Physically consistent by default: how the published model extrapolates, and what it costs.

Issue 12 benchmark (item 2). On the realistic simulator (:mod:`~dynamic_identification.testing.realistic`:
jittered stamps, coloured noise, stiction, offsets, recorded velocities) of the chosen robots:

* **extrapolation**: identify a slow, narrow motion
  (:func:`~dynamic_identification.testing.realistic.slow_trajectory`, 30 % of each joint's range
  and of its speed limits) with ``estimation.consistency`` false and true (the default), then
  predict a fast, wide excitation of the same robot and compare with its noise-free measured
  torque ‖τ̂ − τ‖/‖τ‖. Also the same on a wide training excitation, where both should agree;
* **cost**: ``identify_recording`` wall time without consistency on recordings of
  ``--short-s`` and ``--long-s`` seconds (60 000 and 600 000 samples at 1 kHz by default),
  and what the consistent step adds, timed by itself (building the estimator, the first
  solve that compiles the conic problem, a repeated solve) [target: < 1 s added]. It works
  on the normal equations, so it does not grow with the samples.

The window's update latency with consistency is in ``bench/bench_stream.py`` (on by default
there, ``--no-consistency`` to compare). Printed, never asserted.

Run: ``.venv/bin/python bench/bench_extrapolation.py [--robots arm6,ur5,panda] [--seeds 6]
[--short-s 60] [--long-s 600]``
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np
from _common import fourier_recording
from bench_realistic import relative, robot_preset

from dynamic_identification.api import identify_recording
from dynamic_identification.core.identification import IdentificationResult, predict_torques
from dynamic_identification.core.identification.solve import consistent_step
from dynamic_identification.core.mechanism.robot import RobotModel
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.io.config import IdentificationConfig, load_config
from dynamic_identification.io.outcome import configured_consistency
from dynamic_identification.testing.realistic import (
    RealisticRecording,
    RobotPreset,
    excitation_trajectory,
    generate_recording,
    slow_trajectory,
)
from dynamic_identification.testing.recordings import as_recording

TRAIN_S = 20.0
VALIDATE_S = 20.0


def _config(preset: RobotPreset, *, consistency: bool) -> IdentificationConfig:
    """The default configuration with the preset's drive chain, as a user's file would give it."""
    return dataclasses.replace(
        load_config(None),
        gear_ratios=tuple(preset.drive_chain.gear_ratios.tolist()),
        drive_gains=tuple(preset.drive_chain.drive_gains.tolist()),
        consistency=consistency,
    )


def _identify(
    robot: RobotModel, preset: RobotPreset, train: RealisticRecording, *, consistency: bool
) -> tuple[IdentificationResult, float]:
    started = time.perf_counter()
    result = identify_recording(robot, _config(preset, consistency=consistency), train.drive_chain, as_recording(train))
    return result, time.perf_counter() - started


def _validation_error(
    robot: RobotModel, preset: RobotPreset, result: IdentificationResult, validation: RealisticRecording
) -> float:
    truth = validation.truth
    terms = _config(preset, consistency=True).drive_terms
    predicted = predict_torques(robot, validation.drive_chain, terms, result.values, truth.q, truth.dq, truth.ddq)
    return relative(predicted, truth.torque_nm)


def _extrapolation(name: str, seeds: int) -> None:
    preset = robot_preset(name)
    robot = preset.robot()
    print(f"\n{name}: train {TRAIN_S:g} s, validate on a {VALIDATE_S:g} s wide excitation (error against the truth)")
    print("  seed  training    unconstrained  consistent  shift σ  unconstrained consistent?  solver")
    rows: dict[str, list[tuple[float, float, bool]]] = {"slow": [], "wide": []}
    for seed in range(seeds):
        validation = fourier_recording(robot, preset, seed=seed + 100, duration_s=VALIDATE_S)
        trainings = {
            "slow": slow_trajectory(robot, preset, seed=seed),
            "wide": excitation_trajectory(robot, preset, seed=seed),
        }
        for label, trajectory in trainings.items():
            train = generate_recording(robot, preset, trajectory, duration_s=TRAIN_S, seed=seed)
            free, _ = _identify(robot, preset, train, consistency=False)
            physical, _ = _identify(robot, preset, train, consistency=True)
            step = physical.consistency
            estimate = None if step is None else step.estimate
            free_error = _validation_error(robot, preset, free, validation)
            physical_error = _validation_error(robot, preset, physical, validation)
            was_consistent = estimate is not None and estimate.unconstrained_consistent
            rows[label].append((free_error, physical_error, was_consistent))
            shift = "   -" if estimate is None else f"{estimate.shift_sigma:6.2f}"
            status = (step.error if step is not None else "off") if estimate is None else estimate.solver_status
            print(
                f"  {seed:4d}  {label:10s}  {free_error:13.4f}  {physical_error:10.4f}  {shift}"
                f"  {str(was_consistent):26s}  {status}"
            )
    for label, entries in rows.items():
        free_errors = np.array([entry[0] for entry in entries])
        physical_errors = np.array([entry[1] for entry in entries])
        print(
            f"  {label} training: median error unconstrained {np.median(free_errors):.4f}, consistent"
            f" {np.median(physical_errors):.4f}; consistent better on {int(np.sum(physical_errors < free_errors))}"
            f" of {len(entries)}; unconstrained estimate already consistent on"
            f" {sum(entry[2] for entry in entries)} of {len(entries)}"
        )


def _cost(name: str, durations_s: tuple[float, ...]) -> None:
    """What the consistency step adds to ``identify_recording``: building the estimator from the URDF, then its
    conic solve on the identification's normal equations (timed by itself, so a loaded machine does not blur it)."""
    preset = robot_preset(name)
    robot = preset.robot()
    config = _config(preset, consistency=True)
    print(f"\n{name}: identify_recording without physical consistency, and what the consistent step adds")
    for duration in durations_s:
        started = time.perf_counter()
        train = fourier_recording(robot, preset, seed=7, duration_s=duration)
        generated = time.perf_counter() - started
        free, free_s = _identify(robot, preset, train, consistency=False)
        started = time.perf_counter()
        estimator = configured_consistency(
            DynamicModel.create(robot, config.drive_chain(robot.n_joints), config.drive_terms, free.base), config
        )
        assert estimator is not None
        built_s = time.perf_counter() - started
        assert free.equations is not None
        kept = free.base.subset(free.names)
        solves = []
        for _ in range(3):
            started = time.perf_counter()
            step = consistent_step(estimator, free.equations, free.estimate.joint_std, kept)
            solves.append(time.perf_counter() - started)
        status = step.error if step.estimate is None else step.estimate.solver_status
        print(
            f"  {train.time.size:7d} samples ({duration:g} s, generated in {generated:.0f} s): identify {free_s:.2f} s;"
            f" consistency adds {built_s:.2f} s (estimator) + {solves[0]:.2f} s (first solve, compiles;"
            f" then {min(solves[1:]):.2f} s) = {built_s + solves[0]:.2f} s [{status}]   [target < +1 s]"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", default="arm6,ur5,panda", help="comma-separated presets: arm6, ur5, panda")
    parser.add_argument("--seeds", type=int, default=6, help="seeded training/validation pairs per robot")
    parser.add_argument("--short-s", type=float, default=60.0, help="short recording for the cost, s")
    parser.add_argument("--long-s", type=float, default=600.0, help="long recording for the cost, s (0: skip)")
    arguments = parser.parse_args()
    names = [name.strip() for name in arguments.robots.split(",") if name.strip()]
    for name in names:
        _extrapolation(name, arguments.seeds)
    durations = tuple(d for d in (arguments.short_s, arguments.long_s) if d > 0.0)
    _cost(names[0], durations)


if __name__ == "__main__":
    main()
