"""The in-process window on a 7-axis arm: a Franka Emika Panda at its driver's 978 Hz, consistent estimate on.

The mission's case: the estimator keeps up with 1 kHz data from a 7-axis arm on one core, physically consistent
estimate included. The recording is the Panda preset of :mod:`dynamic_identification.testing.realistic` (its
driver's stamps, its sensors' noise, link-side torques) along a random Fourier excitation of ``--seconds``; the
window is the default configuration's with the preset's drive chain (:func:`~dynamic_identification.io.outcome.
configured_window_parts`, consistency on as in the estimator node), fed one update period at a time as ``dynid
stream`` feeds it, with one BLAS thread as the node has.

Printed, never asserted: the updates and the publishable ones, times faster than real time (wall and CPU), the
update latency mean / p95 / max and the median CPU time of an update, and the cost per sample beside a bare
``pinocchio.computeJointTorqueRegressor`` loop over the same samples (issue 26's ratio, whose target of 2× is the
6-axis ``bench_stream.py``'s).

Run: ``.venv/bin/python bench/bench_window_7axis.py [--seconds 120] [--seed 1] [--estimates-out FILE]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from _common import bare_regressor_s, fourier_recording
from bench_realistic import robot_preset

from dynamic_identification.blas import use_one_blas_thread
from dynamic_identification.core.identification import SlidingWindowEstimator
from dynamic_identification.core.signal.stamps import stream_chunks
from dynamic_identification.io.config import load_config
from dynamic_identification.io.outcome import configured_window_parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--estimates-out", help="write the publishable updates' (time, names, values) as JSON there")
    arguments = parser.parse_args()
    use_one_blas_thread()
    preset = robot_preset("panda")
    robot = preset.robot()
    data = fourier_recording(robot, preset, seed=arguments.seed, duration_s=arguments.seconds)
    stamps, positions, torques = data.time, data.position, data.measured_torque_nm
    settings, bounds, dynamic_model, consistency = configured_window_parts(load_config(None), robot, data.drive_chain)
    estimator = SlidingWindowEstimator(dynamic_model, settings, bounds=bounds, consistency=consistency)
    updates, update_cpu = [], []
    start, cpu_start = time.perf_counter(), time.process_time()
    for chunk, restart in stream_chunks(stamps, settings.update_period_s):
        if restart:
            estimator.reset()
        estimator.add_samples(stamps[chunk], positions[chunk], torques[chunk])
        update_start = time.process_time()
        updates.append(estimator.update())
        update_cpu.append(time.process_time() - update_start)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    duration, samples = float(stamps[-1] - stamps[0]), stamps.size
    published = [update for update in updates if update.publishable]
    latency_ms = 1e3 * np.array([update.seconds for update in updates])
    kept = f", kept {int(np.median([len(u.names) for u in published]))}" if published else ""
    print(
        f"{robot.n_joints} joints, {samples} samples in {duration:.0f} s ({samples / duration:.0f} Hz):"
        f" {len(updates)} updates, {len(published)} publishable{kept} of {dynamic_model.base.count} base parameters"
    )
    print(f"  real-time factor: {duration / wall:.1f}x ({duration / cpu:.1f}x of CPU time)")
    print(
        f"  update latency: mean {latency_ms.mean():.1f} ms, p95 {np.percentile(latency_ms, 95):.1f} ms,"
        f" max {latency_ms.max():.1f} ms; update CPU time: median {1e3 * np.median(update_cpu):.2f} ms"
    )
    velocities = np.gradient(positions, axis=0)
    accelerations = np.gradient(velocities, axis=0)
    bare = 1e6 * bare_regressor_s(robot, positions, velocities, accelerations) / samples
    per_sample = 1e6 * wall / samples
    print(
        f"  per-sample cost: estimator {per_sample:.2f} µs, bare computeJointTorqueRegressor loop {bare:.2f} µs"
        f" -> ratio {per_sample / bare:.2f}"
    )
    if arguments.estimates_out:
        estimates = [[u.time_s, list(u.names), u.values.tolist()] for u in published]
        Path(arguments.estimates_out).write_text(json.dumps(estimates), encoding="utf-8")


if __name__ == "__main__":
    main()
