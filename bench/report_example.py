"""Example identification report of the shipped 6-axis arm on realistic recordings, and its timing.

Generates a realistic training recording (a random Fourier excitation tracked by the
simulated arm with stiction, drive noise, offset drift, jittered stamps and gaps:
:mod:`dynamic_identification.core.realistic`) and two validation recordings (another
Fourier excitation; pick-and-place cycles with dwells, [Volkmann2020] §III.B),
identifies the training recording with the code behind ``dynid identify``
(:func:`dynamic_identification.api.identify_recording`, configuration
``config/dynid_arm6.yaml``), predicts every recording with
:func:`dynamic_identification.api.predicted_recording` (the code behind ``dynid
predict``), checks physical consistency ([Wensing2018], the consistent WLS estimate)
and plausibility, and writes the report with
:func:`dynamic_identification.io.report.write_report`.

:func:`report_data` shows how an identification fills the report's dataclasses.

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

from dynamic_identification import api
from dynamic_identification.core.estimation import NormalEquations
from dynamic_identification.core.estimation.consistency import ConsistentEstimator
from dynamic_identification.core.identification import IdentificationResult
from dynamic_identification.core.model import RobotModel, standard_parameters
from dynamic_identification.core.plausibility import model_problems
from dynamic_identification.core.realistic import (
    arm6_preset,
    excitation_trajectory,
    generate_recording,
    process_trajectory,
)
from dynamic_identification.io.config import IdentificationConfig, load_config
from dynamic_identification.io.realistic import as_recording
from dynamic_identification.io.recording import Recording
from dynamic_identification.io.report import (
    Consistency,
    DataSeries,
    ParameterRow,
    Plausibility,
    Quality,
    ReportData,
    write_report,
)
from dynamic_identification.io.urdf_export import attached_inertias
from dynamic_identification.resources import shipped_path


def data_series(
    name: str, robot: RobotModel, config: IdentificationConfig, result: IdentificationResult, recording: Recording
) -> DataSeries:
    """Measured and predicted torques of one recording; NaN where the model predicts nothing."""
    chain = config.drive_chain(robot.n_joints)
    window = float(recording.time[-1] - recording.time[0])
    document = api.parameter_file(robot, config.drive_terms, chain, result, window_s=window)
    predicted, covered = api.predicted_recording(robot, document, recording, api.settings_from_config(config).signal)
    prediction = np.full((recording.time.shape[0], robot.n_joints), np.nan)
    prediction[covered] = predicted.effort
    # A joint without a usable equation gets no prediction (as in the feedforward).
    prediction[:, ~np.isfinite(result.estimate.joint_errors)] = np.nan
    velocity = recording.velocity
    if velocity is None:
        velocity = np.gradient(recording.position, recording.time, axis=0)
    return DataSeries(
        name=name,
        time=recording.time,
        measured=recording.joint_torques(chain),
        predicted=prediction,
        q=recording.position,
        dq=velocity,
    )


def report_data(
    robot: RobotModel,
    config: IdentificationConfig,
    result: IdentificationResult,
    datasets: list[DataSeries],
    *,
    title: str,
    stamp: str,
) -> ReportData:
    """Fill the report's dataclasses from an identification (what ``dynid identify --report`` does)."""
    estimate = result.estimate
    observations = result.observations
    chain = config.drive_chain(robot.n_joints)
    terms = config.drive_terms
    warnings = []

    kept = result.base.subset(result.names)
    equations = NormalEquations.from_rows(observations.observation_matrix, observations.torques, observations.valid)
    estimator = ConsistentEstimator(
        result.base, terms, standard_parameters(robot, terms), attached=attached_inertias(robot)
    )
    consistent = estimator.solve(equations, estimate.joint_std, kept)
    problems = (
        ["constraints at their bound in the nearest consistent estimate: " + ", ".join(consistent.active)]
        if consistent.active
        else []
    )

    prediction = observations.observation_matrix[..., kept] @ estimate.parameters
    peak = np.abs(prediction).max(axis=0, where=observations.valid, initial=0.0)
    implausible = model_problems(
        config.plausibility_bounds(robot), result.names, estimate.parameters, predicted_peak=peak
    )

    for joint, error in zip(robot.joint_names, estimate.joint_errors, strict=True):
        if not np.isfinite(error):
            warnings.append(f"{joint} had no usable equation: the model gives it no torque")
    if estimate.condition_number > 1e3:
        warnings.append(f"condition number {estimate.condition_number:.3g}: the excitation is poor")

    return ReportData(
        title=title,
        robot_name=robot.model.name,
        urdf=str(robot.urdf_path),
        joints=robot.joint_names,
        parameters=[
            ParameterRow(name=name, value=float(value), std_percent=float(std), expression=expression)
            for name, value, std, expression in zip(
                result.names, estimate.parameters, estimate.relative_std_percent, result.expressions, strict=True
            )
        ],
        removed=list(result.removed),
        datasets=datasets,
        quality=Quality(
            condition_number=float(estimate.condition_number),
            relative_error=float(estimate.relative_error),
            joint_errors=estimate.joint_errors,
            joint_relative_errors=estimate.joint_relative_errors,
            samples=int(observations.input_samples),
            rate_hz=float(observations.rate_hz),
            decimation=int(observations.decimation),
            equations=int(observations.observation_matrix.shape[0]),
            window_s=float(datasets[0].time[-1] - datasets[0].time[0]),
        ),
        settings={
            **dataclasses.asdict(api.settings_from_config(config)),
            "drive_chain": {"gear_ratios": chain.gear_ratios, "drive_gains": chain.drive_gains},
            "drive_terms": {name: True for name in terms.names},
        },
        consistency=Consistency(
            ok=consistent.unconstrained_consistent,
            problems=problems,
            cost_increase=consistent.cost_increase,
            shift_sigma=consistent.shift_sigma,
            checked="the WLS estimate in the parameter table",
        ),
        plausibility=Plausibility(ok=not implausible, problems=implausible),
        warnings=warnings,
        lower_limits=robot.lower_position_limits,
        upper_limits=robot.upper_position_limits,
        velocity_limits=robot.velocity_limits,
        min_speed_rad_s=config.min_speed_rad_s,
        stamp=stamp,
    )


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
        "training (Fourier excitation)": generate_recording(
            robot, preset, excitation_trajectory(robot, preset, seed=seed), duration_s=arguments.train_s, seed=seed
        ),
        "validation: another Fourier excitation": generate_recording(
            robot,
            preset,
            excitation_trajectory(robot, preset, seed=seed + 100),
            duration_s=arguments.validation_s,
            seed=seed + 100,
        ),
        "validation: pick-and-place": generate_recording(
            robot, preset, process_trajectory(robot, preset, seed=seed + 200), seed=seed + 200
        ),
    }
    generated = time.perf_counter() - started
    config = load_config(str(shipped_path("config", "dynid_arm6.yaml")))
    training = as_recording(next(iter(recordings.values())))
    started = time.perf_counter()
    result = api.identify_recording(robot, config, config.drive_chain(robot.n_joints), training)
    identified = time.perf_counter() - started
    datasets = [
        data_series(name, robot, config, result, as_recording(recording)) for name, recording in recordings.items()
    ]
    data = report_data(
        robot,
        config,
        result,
        datasets,
        title="Identification of dynid_arm6 (realistic simulated data)",
        stamp="example, seed 1",
    )
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
