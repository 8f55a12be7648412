"""Does the in-process window need stamp recovery? It on the recorded stamps against the true sample instants.

The sliding window (:class:`~dynamic_identification.core.identification.in_process.SlidingWindowEstimator`)
interpolates the positions at the sample instants onto its uniform grid and differentiates
them twice ([Gautier2013] §IV.A). A driver's stamp jitter, seen as position error, grows
with the speed and, differentiated twice, adds acceleration noise and bias, unless the
decimation filter averages it away; offline identification, and the window with
``signal.stamps: auto``, recover the instants of regularly taken samples from jittered,
quantised or bunched stamps (:func:`~dynamic_identification.core.identification.motion.sample_instants`).

For each robot preset of :mod:`dynamic_identification.testing.realistic` (its driver's
jitter, stalls, dropped stretches, repeated rows, a 1 ms counter) and each seed, this
generates a training recording on a random Fourier excitation and a validation recording
on another, and feeds the training samples to the window as ``dynid stream`` does (chunks
of ``window.update_period_s``, the default configuration with the preset's drive chain,
physical consistency on as in the estimator node) three times:

* ``window`` — the stamps as recorded, default settings (``signal.stamps: auto``; the note
  says whether the window recovered the instants);
* ``window stamps: rec.`` — the stamps as recorded and taken as the instants
  (``signal.stamps: recorded``, what the window did before it honoured the setting);
* ``window true`` — the true sample instants the simulator took the samples at
  (:attr:`~dynamic_identification.testing.realistic.GroundTruth.true_time_s`, on the stamps' origin);
* with ``--variants``, ``window stamps: recov.`` — the stamps recovered whatever the data say
  (``signal.stamps: recovered``);

and identifies the whole training recording offline (``dynid identify``'s
:func:`~dynamic_identification.api.identify_recording`, default settings), and, with
``--variants``, with ``signal.velocity: differentiated`` (the window's velocities) on
the stamps as decided and as recorded.
Printed per preset (medians over the window's publishable updates; offline: its one estimate):

* ``pub`` — the fraction of the window's updates that were publishable;
* ``err`` — ``‖τ_pred − τ_true‖ / ‖τ_true‖`` on the validation's true motion, as ``bench_realistic.py``;
* ``par`` — ``‖τ_pred − τ_model‖ / ‖τ_model‖`` against the true-parameter IDIM: the parameter error alone;
* ``%σ`` — the median over the kept parameters of the published ``%σ`` ([Gautier2013] eq. (19), HAC);
* ``ρ/Y`` — the relative residual ``‖ρ‖/‖Y‖`` of the estimate's own equations;

then, per preset, the ratios of the window's err and par to those on the true instants (paired: same
samples, same noise), with the default settings and with the stamps taken as recorded.

Run: ``.venv/bin/python bench/bench_window_stamps.py [--robots ur5 arm6 panda] [--seeds 3] [--train-s 60]
[--variants]`` (two to three minutes by default).
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np
from _common import fourier_recording
from bench_realistic import relative, robot_preset, true_model_torques

from dynamic_identification.api import identify_recording
from dynamic_identification.core.identification import SlidingWindowEstimator, WindowUpdate
from dynamic_identification.core.identification.prediction import parameter_columns
from dynamic_identification.core.mechanism.robot import RobotModel, standard_parameter_names
from dynamic_identification.core.regressors.idim import observation_matrix
from dynamic_identification.core.signal.stamps import stream_chunks
from dynamic_identification.io.config import IdentificationConfig, load_config
from dynamic_identification.io.outcome import configured_window_parts
from dynamic_identification.testing.realistic import RealisticRecording, RobotPreset
from dynamic_identification.testing.recordings import as_recording

VALIDATION_ROWS = 6000
"""Validation rows the predictions are compared on (evenly picked), so one observation matrix serves every update."""


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What a user sees of one estimator run: medians over its publishable estimates (NaN when none)."""

    publishable: float
    err: float
    par: float
    std_percent: float
    relative_error: float
    note: str = ""


@dataclasses.dataclass(frozen=True)
class Validation:
    """The validation's standard observation matrix on its true motion and the torques predictions are judged by."""

    observation: np.ndarray
    names: tuple[str, ...]
    truth: np.ndarray
    model: np.ndarray

    def errors(self, values: dict[str, float]) -> tuple[float, float]:
        """``err`` and ``par`` of a model given by base-parameter values by name."""
        columns, parameters, unknown = parameter_columns(values, self.names)
        if unknown:
            raise SystemExit(f"parameters {unknown} are not standard parameters")
        predicted = self.observation[..., columns] @ parameters
        return relative(predicted, self.truth), relative(predicted, self.model)


def validation(robot: RobotModel, config: IdentificationConfig, data: RealisticRecording) -> Validation:
    truth = data.truth
    rows = np.linspace(0, truth.q.shape[0] - 1, min(VALIDATION_ROWS, truth.q.shape[0])).astype(int)
    terms = config.drive_terms
    return Validation(
        observation=observation_matrix(robot, data.drive_chain, terms, truth.q[rows], truth.dq[rows], truth.ddq[rows]),
        names=standard_parameter_names(robot.n_joints, terms),
        truth=truth.torque_nm[rows],
        model=true_model_torques(robot, data)[rows],
    )


def preset_config(robot_settings: RobotPreset) -> IdentificationConfig:
    """The default configuration with a preset's drive chain, as a new user of that robot writes it."""
    return dataclasses.replace(
        load_config(None),
        gear_ratios=tuple(robot_settings.drive_chain.gear_ratios.tolist()),
        drive_gains=tuple(robot_settings.drive_chain.drive_gains.tolist()),
    )


def training_and_check(
    robot: RobotModel,
    robot_settings: RobotPreset,
    config: IdentificationConfig,
    *,
    seed: int,
    train_s: float,
    validation_s: float,
) -> tuple[RealisticRecording, Validation]:
    """A training recording of ``seed`` and the judge of a validation recording of ``seed + 100`` (Fourier both)."""
    train = fourier_recording(robot, robot_settings, seed=seed, duration_s=train_s)
    check = validation(
        robot, config, fourier_recording(robot, robot_settings, seed=seed + 100, duration_s=validation_s)
    )
    return train, check


def run_window(
    robot: RobotModel,
    config: IdentificationConfig,
    train: RealisticRecording,
    stamps: np.ndarray,
    check: Validation,
    *,
    stamp_source: str = "auto",
) -> tuple[Outcome, float]:
    """The window (``signal.stamps: stamp_source``) fed ``train`` on ``stamps`` as ``dynid stream`` feeds it; its
    outcome and the wall time, s."""
    chain = train.drive_chain
    settings, bounds, dynamic_model, consistency = configured_window_parts(config, robot, chain)
    settings = dataclasses.replace(settings, signal=dataclasses.replace(settings.signal, stamps=stamp_source))
    estimator = SlidingWindowEstimator(dynamic_model, settings, bounds=bounds, consistency=consistency)
    torques = train.measured_torque_nm
    updates: list[WindowUpdate] = []
    started = time.perf_counter()
    for chunk, restart in stream_chunks(stamps, settings.update_period_s):
        if restart:
            estimator.reset()
        estimator.add_samples(stamps[chunk], train.position[chunk], torques[chunk])
        updates.append(estimator.update())
    wall = time.perf_counter() - started
    published = [update for update in updates if update.publishable]
    if not published:
        return Outcome(0.0, np.nan, np.nan, np.nan, np.nan, note=updates[-1].reason), wall
    errors = np.array([check.errors(dict(zip(u.names, u.values.tolist(), strict=True))) for u in published])
    return (
        Outcome(
            publishable=len(published) / len(updates),
            err=float(np.median(errors[:, 0])),
            par=float(np.median(errors[:, 1])),
            std_percent=float(np.median([np.median(np.abs(u.std_percent)) for u in published])),
            relative_error=float(np.median([u.relative_error for u in published])),
            note=f"cut-off {published[-1].position_cutoff_hz:.3g} Hz"
            + ("; instants recovered" if estimator.recovers_stamps else "; stamps as recorded"),
        ),
        wall,
    )


def run_offline(
    robot: RobotModel, config: IdentificationConfig, train: RealisticRecording, check: Validation
) -> tuple[Outcome, float]:
    """``dynid identify`` of the whole training recording with ``config``."""
    started = time.perf_counter()
    result = identify_recording(robot, config, train.drive_chain, as_recording(train))
    wall = time.perf_counter() - started
    err, par = check.errors(result.values)
    reason = next((line for line in result.observations.signal_reasons if line.startswith("stamps")), "")
    return (
        Outcome(
            publishable=1.0,
            err=err,
            par=par,
            std_percent=float(np.median(np.abs(result.estimate.relative_std_percent))),
            relative_error=result.relative_error,
            note=reason,
        ),
        wall,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", nargs="+", default=["ur5", "arm6", "panda"], choices=["arm6", "ur5", "panda"])
    parser.add_argument("--seeds", type=int, default=2, help="training/validation pairs per robot (seeds 1..N)")
    parser.add_argument("--train-s", type=float, default=60.0, help="training recording length, s")
    parser.add_argument("--validation-s", type=float, default=20.0, help="validation recording length, s")
    parser.add_argument(
        "--variants",
        action="store_true",
        help="also the window with stamps: recovered, and offline with differentiated velocities",
    )
    arguments = parser.parse_args()

    header = (
        f"  {'seed':>4} {'estimator':<21} {'pub':>5} {'err':>7} {'par':>7} {'%σ':>6} {'ρ/Y':>6} {'wall s':>6}  note"
    )
    ratios: dict[str, list[tuple[float, float, float, float]]] = {}
    for name in arguments.robots:
        robot_settings = robot_preset(name)
        robot = robot_settings.robot()
        stamp_settings = robot_settings.stamps
        config = preset_config(robot_settings)
        jitter = stamp_settings.jitter_std_s
        print(
            f"\n== {name}: {robot.n_joints} joints at {stamp_settings.rate_hz:g} Hz, stamp jitter"
            f" {1e6 * jitter:g} µs ({100 * jitter * stamp_settings.rate_hz:.2g}"
            f" % of a period), {stamp_settings.late_bursts_per_s:g} stalls/s, {stamp_settings.gaps} dropped"
            f" stretch(es), resolution {1e3 * stamp_settings.resolution_s:g} ms; train {arguments.train_s:g} s,"
            f" validation {arguments.validation_s:g} s (Fourier)",
            flush=True,
        )
        print(header)
        ratios[name] = []
        for seed in range(1, arguments.seeds + 1):
            train, check = training_and_check(
                robot, robot_settings, config, seed=seed, train_s=arguments.train_s, validation_s=arguments.validation_s
            )
            true_stamps = stamp_settings.origin_s + train.truth.true_time_s
            window, window_s = run_window(robot, config, train, train.time, check)
            recorded, recorded_s = run_window(robot, config, train, train.time, check, stamp_source="recorded")
            true, true_s = run_window(robot, config, train, true_stamps, check)
            rows = [
                ("window", window, window_s),
                ("window stamps: rec.", recorded, recorded_s),
                ("window true", true, true_s),
            ]
            if arguments.variants:
                forced = run_window(robot, config, train, train.time, check, stamp_source="recovered")
                rows.append(("window stamps: recov.", *forced))
            offline: list[tuple[str, dict[str, str]]] = [("offline auto", {})]
            if arguments.variants:
                offline.append(("offline auto, diff", {"velocity": "differentiated"}))
                offline.append(("offline rec., diff", {"velocity": "differentiated", "stamps": "recorded"}))
            for label, changes in offline:
                rows.append((label, *run_offline(robot, dataclasses.replace(config, **changes), train, check)))
            for label, outcome, wall in rows:
                print(
                    f"  {seed:>4} {label:<21} {outcome.publishable:>5.2f} {outcome.err:>7.4f} {outcome.par:>7.4f}"
                    f" {outcome.std_percent:>6.2f} {outcome.relative_error:>6.3f} {wall:>6.1f}  {outcome.note}",
                    flush=True,
                )
            ratios[name].append(
                (window.err / true.err, window.par / true.par, recorded.err / true.err, recorded.par / true.par)
            )

    print("\nThe window's err and par over those on the true instants, per seed (paired; > 1: worse than the truth):")
    print(f"  {'robot':<6} {'default err':<21} {'default par':<21} {'stamps: rec. err':<21} {'stamps: rec. par':<21}")
    for name, values in ratios.items():
        table = np.array(values)
        columns = (" ".join(f"{r:.3f}" for r in table[:, column]) for column in range(4))
        print(f"  {name:<6} " + " ".join(f"{column:<21}" for column in columns))


if __name__ == "__main__":
    main()
