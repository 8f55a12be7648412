"""Example identification report of the shipped 6-axis arm on realistic recordings, and its timing.

Generates a realistic training recording (a random Fourier excitation tracked by the
simulated arm with stiction, drive noise, offset drift, jittered stamps and gaps:
:mod:`dynamic_identification.testing.realistic`) and two validation recordings (another
Fourier excitation; pick-and-place cycles with dwells, [Volkmann2020] §III.B),
identifies the training recording with the code behind ``dynid identify``
(:func:`dynamic_identification.api.identify_recording`, configuration
``config/dynid_arm6.yaml``), predicts and judges every recording
(:func:`dynamic_identification.io.outcome.validate`, what ``--validate`` does), checks
physical consistency ([Wensing2018], the consistent WLS estimate) and plausibility, and
writes the report with :func:`dynamic_identification.io.report.write_report` from
:func:`dynamic_identification.io.report_data.identification_report` (what ``dynid
identify --report`` does).

With ``--timing`` it also times ``write_report`` on the training data (60 k samples
at 1 kHz for 60 s) and on that data repeated to 600 k samples, 6 joints each.

Run: ``.venv/bin/python bench/report_example.py [--out report_example] [--train-s 60] [--timing]``
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np
from _common import fourier_recording, pick_and_place_recording

from dynamic_identification import api
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.io.config import load_config
from dynamic_identification.io.outcome import consistent_model, identification_warnings, validate
from dynamic_identification.io.report import DataSeries, write_report
from dynamic_identification.io.report_data import identification_report
from dynamic_identification.resources import shipped_path
from dynamic_identification.testing.realistic import arm6_preset
from dynamic_identification.testing.recordings import as_recording


def repeated(series: DataSeries, times: int) -> DataSeries:
    """``series`` played ``times`` times in a row (for timing on long data)."""
    period = float(series.time[-1] - series.time[0]) + float(np.median(np.diff(series.time)))
    return DataSeries(
        name=f"{series.name} ×{times}",
        time=np.concatenate([series.time + k * period for k in range(times)]),
        measured=np.tile(series.measured, (times, 1)),
        predicted=np.tile(series.predicted, (times, 1)),
        q=np.tile(series.q, (times, 1)),
        dq=np.tile(series.dq, (times, 1)),
        moving=np.tile(series.moving, (times, 1)),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("report_example"), help="report directory")
    parser.add_argument("--train-s", type=float, default=60.0, help="training recording length, s")
    parser.add_argument("--validation-s", type=float, default=30.0, help="Fourier validation length, s")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timing", action="store_true", help="also time write_report on 60 k and 600 k samples")
    arguments = parser.parse_args()

    started = time.perf_counter()
    preset = arm6_preset(shipped_path("urdf", "dynid_arm6.urdf"))
    robot = preset.robot()
    seed = arguments.seed
    recordings = {
        "training (Fourier excitation)": fourier_recording(robot, preset, seed=seed, duration_s=arguments.train_s),
        "validation: another Fourier excitation": fourier_recording(
            robot, preset, seed=seed + 100, duration_s=arguments.validation_s
        ),
        "validation: pick-and-place": pick_and_place_recording(robot, preset, seed=seed + 200),
    }
    generated = time.perf_counter() - started
    config = load_config(str(shipped_path("config", "dynid_arm6.yaml")))
    chain, terms, settings = config.drive_chain(robot.n_joints), config.drive_terms, config.identification_settings()
    training = as_recording(next(iter(recordings.values())))
    started = time.perf_counter()
    result = api.identify_recording(robot, config, chain, training)
    identified = time.perf_counter() - started
    dynamic_model = DynamicModel.create(robot, chain, terms, result.base)
    judged = [
        validate(dynamic_model, result, as_recording(recording), settings, name=name)
        for name, recording in recordings.items()
    ]
    consistent = consistent_model(dynamic_model, settings, result)
    data = identification_report(
        dynamic_model=dynamic_model,
        settings=settings,
        result=result,
        training=judged[0],
        validations=judged[1:],
        consistent=consistent,
        warnings=identification_warnings(robot, result, settings, consistent),
        urdf=str(robot.urdf_path),
        stamp=float(training.time[-1]),
    )
    data = dataclasses.replace(data, title="Identification of dynid_arm6 (realistic simulated data)")
    datasets = list(data.datasets)
    started = time.perf_counter()
    page = write_report(arguments.out, data)
    written = time.perf_counter() - started
    print(
        f"recordings generated in {generated:.1f} s, identified in {identified:.1f} s,"
        f" report written in {written:.2f} s ({sum(s.time.shape[0] for s in datasets)} samples in"
        f" {len(datasets)} data sets)"
    )
    print(f"report written to {page.resolve()}")

    if arguments.timing:
        for times in (1, 10):
            series = repeated(datasets[0], times)
            single = dataclasses.replace(data, datasets=[series])
            started, cpu = time.perf_counter(), time.process_time()
            write_report(arguments.out.with_name(f"{arguments.out.name}_timing_{times}"), single)
            print(
                f"write_report, one data set of {series.time.shape[0]} samples × {robot.n_joints} joints:"
                f" {time.perf_counter() - started:.2f} s wall, {time.process_time() - cpu:.2f} s CPU"
            )


if __name__ == "__main__":
    main()
