"""Does the in-process window gain from measuring the torques' delay? ``signal.torque_delay: auto`` against ``none``.

A driver may report its torques (currents) late behind its positions: a drive's current
filter, a bus cycle, a second topic's late stamps. The window (``dynid stream``, the estimator
node) measures the delay on its first
:data:`~dynamic_identification.core.identification.torque_delay.MEASURED_DATA_S` of rows as
offline identification does (:mod:`~dynamic_identification.core.identification.torque_delay`)
and, when it lies 3 σ from 0, reads the torques of its rows that late from then on.

For each robot preset of :mod:`dynamic_identification.testing.realistic` (its driver's
jitter, stalls, dropped stretches, quantisation, coloured current noise) and each seed, a
training recording on a random Fourier excitation has its measured torques read
``--delays-ms`` late (the recorded torque at each stamp is the one of that much earlier,
linearly between the samples), and is fed to the window as ``dynid stream`` feeds it with
``torque_delay: none`` and ``auto``. Printed per delay, as ``bench_window_stamps.py`` judges
(medians over the publishable updates whose window holds only rows after the decision: from
``window_s`` and a second after it):

* ``err`` — ``‖τ_pred − τ_true‖ / ‖τ_true‖`` on a validation recording's true motion;
* ``par`` — the same against the true-parameter IDIM: the parameter error alone;
* the delay the window found, its σ, and whether it aligned the torques.

Run: ``.venv/bin/python bench/bench_window_delay.py [--robots panda ur5 arm6] [--seeds 1] [--delays-ms 0 5 9]
[--train-s 150]`` (about two minutes by default).
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np
from bench_realistic import robot_preset
from bench_window_stamps import Validation, preset_config, training_and_check

from dynamic_identification.core.identification import SlidingWindowEstimator, WindowUpdate
from dynamic_identification.core.identification.torque_delay import MEASURED_DATA_S, TorqueDelay
from dynamic_identification.core.mechanism.robot import RobotModel
from dynamic_identification.core.signal.stamps import stream_chunks
from dynamic_identification.io.config import IdentificationConfig
from dynamic_identification.io.outcome import configured_window_parts
from dynamic_identification.testing.realistic import RealisticRecording


def run_window(
    robot: RobotModel,
    config: IdentificationConfig,
    train: RealisticRecording,
    torques: np.ndarray,
    check: Validation,
    torque_delay: str,
) -> tuple[float, float, int, TorqueDelay | None]:
    """The window fed ``train`` with ``torques`` as ``dynid stream`` feeds it: median ``err`` and ``par`` over the
    publishable updates judged (module docstring), their number, and the delay it found."""
    settings, bounds, dynamic_model, consistency = configured_window_parts(config, robot, train.drive_chain)
    settings = dataclasses.replace(settings, signal=dataclasses.replace(settings.signal, torque_delay=torque_delay))
    estimator = SlidingWindowEstimator(dynamic_model, settings, bounds=bounds, consistency=consistency)
    updates: list[WindowUpdate] = []
    for chunk, restart in stream_chunks(train.time, settings.update_period_s):
        if restart:
            estimator.reset()
        estimator.add_samples(train.time[chunk], train.position[chunk], torques[chunk])
        updates.append(estimator.update())
    # Every row of the window came after the decision (the same updates judged with none).
    start = train.time[0] + MEASURED_DATA_S + settings.window_s + 1.0
    judged = [update for update in updates if update.publishable and update.time_s >= start]
    if not judged:
        return np.nan, np.nan, 0, estimator.torque_delay
    errors = np.array([check.errors(dict(zip(u.names, u.values.tolist(), strict=True))) for u in judged])
    return float(np.median(errors[:, 0])), float(np.median(errors[:, 1])), len(judged), estimator.torque_delay


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", nargs="+", default=["panda", "ur5", "arm6"], choices=["arm6", "ur5", "panda"])
    parser.add_argument("--seeds", type=int, default=1, help="training/validation pairs per robot (seeds 1..N)")
    parser.add_argument("--delays-ms", nargs="+", type=float, default=[0.0, 5.0, 9.0], help="torque delays, ms")
    parser.add_argument("--train-s", type=float, default=150.0, help="training recording length, s")
    parser.add_argument("--validation-s", type=float, default=20.0, help="validation recording length, s")
    arguments = parser.parse_args()

    columns = f"{'none err':>9} {'par':>7} {'auto err':>9} {'par':>7} {'n':>4}"
    print(f"  {'robot':<6} {'seed':>4} {'delay':>7} {columns}  found")
    for name in arguments.robots:
        robot_settings = robot_preset(name)
        robot = robot_settings.robot()
        config = preset_config(robot_settings)
        for seed in range(1, arguments.seeds + 1):
            train, check = training_and_check(
                robot, robot_settings, config, seed=seed, train_s=arguments.train_s, validation_s=arguments.validation_s
            )
            measured = train.measured_torque_nm
            for delay_ms in arguments.delays_ms:
                late = np.column_stack([np.interp(train.time - 1e-3 * delay_ms, train.time, c) for c in measured.T])
                none_err, none_par, _, _ = run_window(robot, config, train, late, check, "none")
                auto_err, auto_par, count, found = run_window(robot, config, train, late, check, "auto")
                text = "not measured" if found is None else found.reason().removeprefix("torque delay: ")
                print(
                    f"  {name:<6} {seed:>4} {delay_ms:>5.3g}ms {none_err:>9.4f} {none_par:>7.4f} {auto_err:>9.4f}"
                    f" {auto_par:>7.4f} {count:>4}  {text}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
