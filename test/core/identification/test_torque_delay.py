"""The torques' delay behind the positions: measured by the IDIM fit, the torques aligned only when the data say so."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from arm6_drives import GEAR_RATIOS, IDENTIFICATION_DRIVE, IDENTIFICATION_GAINS, rnea_torques
from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.identification import (
    IdentificationSettings,
    SignalSettings,
    predict_torques,
    torque_delay,
)
from dynamic_identification.core.identification.observations import prepare_observations
from dynamic_identification.core.identification.solve import IdentificationResult, identify
from dynamic_identification.core.identification.torque_delay import LateRows
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.signal.filters import ParallelDecimator, linear_resampling
from dynamic_identification.io.outcome import validate
from dynamic_identification.io.recording import recording_from_arrays

RATE_HZ = 1000.0
DURATION_S = 20.0
CURRENT_NOISE_A = 0.02
ENCODER_COUNTS = 2**16
DRIVE_DELAY_S = 0.003
"""A drive's current filter and a bus cycle: the torques read 3 ms after the positions they belong to."""


@pytest.fixture(scope="module")
def dynamic_model(arm6: RobotModel) -> DynamicModel:
    return DynamicModel.create(
        arm6, DriveChain.create(6, gear_ratios=GEAR_RATIOS, drive_gains=IDENTIFICATION_GAINS), DriveTerms()
    )


def _recording(
    dynamic_model: DynamicModel, *, delay_s: float, seed: int, current_noise_a: float = CURRENT_NOISE_A
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Quantised positions at the stamps and noisy currents (``current_noise_a`` RMS, A), converted to torques, of
    the motion ``delay_s`` earlier."""
    robot, chain = dynamic_model.mechanism.robot, dynamic_model.drive_chain
    rng = np.random.default_rng(seed)
    trajectory = random_fourier_trajectory(robot, fundamental_hz=0.1, harmonics=5, seed=seed, margin=0.15)
    time = np.arange(0.0, DURATION_S, 1.0 / RATE_HZ)
    q, _, _ = trajectory.evaluate(time)
    exact = rnea_torques(robot, IDENTIFICATION_DRIVE, *trajectory.evaluate(time - delay_s))
    currents = chain.motor_currents(exact) + rng.normal(0.0, current_noise_a, exact.shape)
    step = 2.0 * np.pi / (ENCODER_COUNTS * chain.gear_ratios)
    return time, np.round(q / step) * step, chain.joint_torques(currents)


def _settings(torque_delay: str) -> IdentificationSettings:
    return IdentificationSettings(signal=SignalSettings(position_cutoff_hz=20.0, torque_delay=torque_delay))


def test_torques_read_late_are_found_late_by_the_fit(dynamic_model: DynamicModel) -> None:
    time, q, torques = _recording(dynamic_model, delay_s=DRIVE_DELAY_S, seed=5)
    observations = prepare_observations(dynamic_model, time, q, torques, settings=_settings("auto"))
    delay = observations.torque_delay
    assert delay is not None and delay.applied, observations.signal_reasons
    assert delay.std_s < 0.5e-3  # half a sample period
    assert abs(delay.delay_s - DRIVE_DELAY_S) < 3.0 * delay.std_s, delay
    assert any(reason.startswith("torque delay: 3 ± ") for reason in observations.signal_reasons), (
        observations.signal_reasons
    )


def test_torques_ahead_of_the_positions_are_said_to_be_ahead(dynamic_model: DynamicModel) -> None:
    """A command logged for the next period: the torques of the motion 2 ms later ("-2 ms behind" read as a riddle)."""
    time, q, torques = _recording(dynamic_model, delay_s=-0.002, seed=5)
    delay = prepare_observations(dynamic_model, time, q, torques, settings=_settings("auto")).torque_delay
    assert delay is not None and delay.applied and abs(delay.delay_s + 0.002) < 3.0 * delay.std_s, delay
    assert delay.reason().startswith(f"torque delay: {1e3 * abs(delay.delay_s):.2g} ± ")
    assert "ahead of the positions, the torques aligned" in delay.reason()


def test_aligned_torques_identify_a_model_that_predicts_better(dynamic_model: DynamicModel) -> None:
    time, q, torques = _recording(dynamic_model, delay_s=DRIVE_DELAY_S, seed=5)
    robot = dynamic_model.mechanism.robot
    other = random_fourier_trajectory(robot, fundamental_hz=0.1, harmonics=5, seed=99, margin=0.2)
    motion = other.evaluate(np.arange(0.0, 10.0, 1.0 / RATE_HZ))
    exact = rnea_torques(robot, IDENTIFICATION_DRIVE, *motion)

    def error(torque_delay: str) -> float:
        values = identify(dynamic_model, time, q, torques, settings=_settings(torque_delay)).values
        predicted = predict_torques(robot, dynamic_model.drive_chain, dynamic_model.terms, values, *motion)
        return float(np.linalg.norm(predicted - exact) / np.linalg.norm(exact))

    aligned, as_recorded = error("auto"), error("none")
    assert aligned < 0.5 * as_recorded, (aligned, as_recorded)


def test_a_held_out_recording_is_judged_with_its_torques_as_late_as_the_trainings(dynamic_model: DynamicModel) -> None:
    """`dynid identify --validate`: the aligned model predicts the torque of the motion at each row; against the
    held-out file's torques as recorded (3 ms late; noise-free here, so that the timing shows) its error read
    several times what it is."""
    time, q, torques = _recording(dynamic_model, delay_s=DRIVE_DELAY_S, seed=5)
    result = identify(dynamic_model, time, q, torques, settings=_settings("auto"))
    assert result.observations.torque_delay is not None and result.observations.torque_delay.applied
    held_time, held_q, held_torques = _recording(dynamic_model, delay_s=DRIVE_DELAY_S, seed=6, current_noise_a=0.0)
    joints = list(dynamic_model.mechanism.actuated_joint_names)
    held = recording_from_arrays(time=held_time, joint_names=joints, position=held_q, effort=held_torques)

    def error(judged: IdentificationResult) -> float:
        errors = validate(dynamic_model, judged, held, _settings("auto"), name="held.csv").errors
        return float(np.sum(errors.absolute) / np.sum(errors.measured))

    as_recorded = dataclasses.replace(result, observations=dataclasses.replace(result.observations, torque_delay=None))
    assert error(result) < 0.5 * error(as_recorded), (error(result), error(as_recorded))


def test_torques_in_time_with_the_positions_are_taken_as_recorded_and_it_says_so(
    dynamic_model: DynamicModel,
) -> None:
    time, q, torques = _recording(dynamic_model, delay_s=0.0, seed=5)
    auto = prepare_observations(dynamic_model, time, q, torques, settings=_settings("auto"))
    assert auto.torque_delay is not None and not auto.torque_delay.applied
    assert any(
        reason.startswith("torque delay: none (") and "within 3 σ of 0" in reason for reason in auto.signal_reasons
    ), auto.signal_reasons
    recorded = prepare_observations(dynamic_model, time, q, torques, settings=_settings("none"))
    assert recorded.torque_delay is None
    assert_allclose(auto.torques, recorded.torques, rtol=0, atol=0)


def test_a_recording_that_starts_at_rest_is_measured_on_its_motion(dynamic_model: DynamicModel) -> None:
    """A log begins before the job: 5 s at the first pose, where no equation is kept, then the motion. Blocks of rows
    in time held none there, and the delay went unmeasured ("too few equations in a tenth of the rows")."""
    time, q, torques = _recording(dynamic_model, delay_s=DRIVE_DELAY_S, seed=5)
    rest = int(5.0 * RATE_HZ)
    q = np.concatenate([np.repeat(q[:1], rest, axis=0), q])
    torques = np.concatenate([np.repeat(torques[:1], rest, axis=0), torques])
    time = np.arange(q.shape[0]) / RATE_HZ
    delay = prepare_observations(dynamic_model, time, q, torques, settings=_settings("auto")).torque_delay
    assert delay is not None and delay.applied and abs(delay.delay_s - DRIVE_DELAY_S) < 3.0 * delay.std_s, delay


def test_the_delay_measured_on_the_first_data_aligns_every_row(
    dynamic_model: DynamicModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long recording is measured on its first minute (here 8 s of 20) and its torques are read late whole."""
    time, q, torques = _recording(dynamic_model, delay_s=DRIVE_DELAY_S, seed=5)
    whole = prepare_observations(dynamic_model, time, q, torques, settings=_settings("auto")).torques
    as_recorded = prepare_observations(dynamic_model, time, q, torques, settings=_settings("none")).torques
    monkeypatch.setattr(torque_delay, "MEASURED_DATA_S", 8.0)
    observations = prepare_observations(dynamic_model, time, q, torques, settings=_settings("auto"))
    delay = observations.torque_delay
    assert delay is not None and delay.applied and abs(delay.delay_s - DRIVE_DELAY_S) < 3.0 * delay.std_s, delay
    late = whole.shape[0] // 2  # rows from 10 s on, beyond the measured 8 s
    moved = np.linalg.norm(observations.torques[late:] - whole[late:])
    assert moved < 0.1 * np.linalg.norm(as_recorded[late:] - whole[late:])


def test_rows_read_late_are_the_rows_of_the_signal_a_fraction_of_a_sample_later() -> None:
    decimator = ParallelDecimator.create(10)
    grid = np.arange(3000) / RATE_HZ
    frequency = np.array([1.0, 7.0])

    def signal(delay_s: float) -> np.ndarray:
        return np.sin(2.0 * np.pi * (grid[:, None] + delay_s) * frequency)

    read = LateRows(decimator, [signal(0.0)])
    assert_allclose(read(0.0), decimator.decimate(signal(0.0))[0], rtol=0, atol=1e-12)
    assert_allclose(read(2.5), decimator.decimate(signal(2.5 / RATE_HZ))[0], rtol=0, atol=1e-6)


def test_rows_read_late_a_few_at_a_time_are_those_of_the_whole_segment_held_at_its_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decimator = ParallelDecimator.create(10)
    segments = [np.random.default_rng(4).normal(size=(length, 2)) for length in (3000, 1234)]
    whole = {shift: LateRows(decimator, segments).whole(shift) for shift in (-4, 0, 12)}
    monkeypatch.setattr(torque_delay, "BLOCK_OUTPUTS", 7)
    blocks = LateRows(decimator, segments)
    for shift, rows in whole.items():
        held = [
            np.pad(segment, ((4, 12), (0, 0)), mode="edge")[4 + shift : 4 + shift + len(segment)]
            for segment in segments
        ]
        expected = np.concatenate([decimator.decimate(signal)[0] for signal in held])
        assert_allclose(rows, expected, rtol=0, atol=1e-12)
        assert_allclose(blocks.whole(shift), rows, rtol=0, atol=1e-12)


def test_rows_read_late_from_torques_resampled_where_they_are_read_are_those_of_the_resampled_array() -> None:
    # An identification's segments hold their torques as recorded (LinearResampling): the delay's reads, the ends
    # held, are those of the torques resampled whole, bit for bit.
    rng = np.random.default_rng(6)
    time = np.arange(3000) / RATE_HZ + rng.uniform(-2e-4, 2e-4, 3000)
    values = rng.normal(size=(3000, 2))
    resampling = linear_resampling(time, values, RATE_HZ)
    whole = resampling.whole()
    for block, shift in ((slice(0, 40), -4), (slice(100, 900), 3), (slice(2950, resampling.shape[0]), 12)):
        assert_array_equal(
            torque_delay.read_shifted(resampling, block, shift), torque_delay.read_shifted(whole, block, shift)
        )
    decimator = ParallelDecimator.create(10)
    assert_array_equal(LateRows(decimator, [resampling])(2.5), LateRows(decimator, [whole])(2.5))


def test_the_filtered_reads_at_every_whole_shift_are_the_shifted_reads_decimated_held_at_the_ends() -> None:
    # What the window sums for the delay: the decimator's outputs of the reads at every whole shift, at the outputs
    # with an equation only; near the ends of the values the reads hold the end samples.
    values = np.random.default_rng(3).normal(size=(90, 2))
    decimator = ParallelDecimator(factor=3, taps=np.random.default_rng(4).normal(size=13))
    block, start = slice(2, 85), 300  # the block's first sample is global index 300
    reads = [torque_delay.read_shifted(values, block, int(shift)) for shift in torque_delay.WHOLE_SHIFTS]
    expected = np.stack([decimator.decimate(read, start=start)[0] for read in reads], axis=2)
    index = decimator.output_indices(block.stop - block.start, start=start)
    chosen = np.array([0, 3, 4, index.size - 1])  # the first and last read beyond the values' ends (held)
    found = torque_delay.filtered_whole_shifts(values, block.start + index[chosen] - start, decimator.taps)
    assert_allclose(found, expected[chosen], rtol=0, atol=1e-12)
    assert_allclose(torque_delay.read_shifted(values, block, 12)[-1], values[-1], rtol=0, atol=0)  # held


def test_the_setting_refuses_an_unknown_choice() -> None:
    with pytest.raises(ValueError, match="torque_delay"):
        dataclasses.replace(SignalSettings(), torque_delay="late")
