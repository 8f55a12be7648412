"""Realistic recordings: timing, stiction, coloured noise, drive velocities and ground truth."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import signal as sps

from dynamic_identification.core.mechanism.robot import DriveChain, load_robot
from dynamic_identification.core.signal.filters import clean_time_stamps
from dynamic_identification.io.recording import read_recording_csv
from dynamic_identification.testing.realistic import (
    RealisticRecording,
    RobotPreset,
    SensorSettings,
    StampSettings,
    arm6_preset,
    coloured_noise,
    excitation_trajectory,
    generate_recording,
    panda_hiccups_preset,
    panda_preset,
    plan_stamps,
    process_trajectory,
    slow_trajectory,
    ur5_100hz_preset,
    ur5_preset,
)
from dynamic_identification.testing.recordings import as_recording, write_realistic_csv
from dynamic_identification.testing.stick_slip import StickSlipSimulator, StribeckFriction

QUIET_STAMPS = StampSettings(jitter_std_s=0.0, late_bursts_per_s=0.0, gaps=0, duplicate_fraction=0.0)
"""Regular 1 kHz stamps: one row per sample, for tests of the signals themselves."""


@pytest.fixture(scope="module")
def arm6(arm6_urdf: Path) -> RobotPreset:
    return arm6_preset(arm6_urdf)


@pytest.fixture(scope="module")
def arm6_recording(arm6: RobotPreset) -> RealisticRecording:
    robot = arm6.robot()
    return generate_recording(robot, arm6, excitation_trajectory(robot, arm6, seed=3), duration_s=8.0, seed=3)


def test_the_same_seed_gives_the_same_recording_and_another_seed_another(arm6: RobotPreset) -> None:
    robot = arm6.robot()
    trajectory = excitation_trajectory(robot, arm6, seed=1)
    first, again, other = (generate_recording(robot, arm6, trajectory, duration_s=2.0, seed=s) for s in (5, 5, 6))
    for kind in ("time", "position", "velocity", "effort"):
        assert_array_equal(getattr(first, kind), getattr(again, kind))
    assert_array_equal(first.truth.torque_nm, again.truth.torque_nm)
    assert not np.array_equal(first.measured_torque_nm, other.measured_torque_nm)


def test_stamps_have_the_asked_jitter_drift_and_resolution() -> None:
    settings = StampSettings(
        nominal_rate_hz=500.0,
        jitter_std_s=1e-4,
        late_bursts_per_s=0.0,
        gaps=0,
        duplicate_fraction=0.0,
        clock_drift_ppm=200.0,
        origin_s=1000.0,
    )
    plan = plan_stamps(settings, 60.0, np.random.default_rng(0))
    clock = 1.0 + 200e-6
    error = plan.stamps_s - 1000.0 - clock * plan.true_time_s
    assert abs(np.std(error) / (clock * 1e-4) - 1.0) < 0.05
    slope = np.polyfit(plan.true_time_s, plan.stamps_s, 1)[0]
    assert abs(slope - clock) < 2e-6


def test_a_millisecond_stamp_counter_makes_a_978_hz_stream_look_like_1_khz() -> None:
    settings = StampSettings(
        true_rate_hz=978.0, jitter_std_s=0.0, late_bursts_per_s=0.0, gaps=0, duplicate_fraction=0.0, resolution_s=1e-3
    )
    plan = plan_stamps(settings, 10.0, np.random.default_rng(0))
    steps = np.diff(plan.stamps_s)
    assert set(np.round(steps * 1e3).astype(int)) == {1, 2}
    assert clean_time_stamps(plan.stamps_s).nominal_dt == pytest.approx(1e-3)
    mean_rate = (plan.stamps_s.size - 1) / (plan.stamps_s[-1] - plan.stamps_s[0])
    assert mean_rate == pytest.approx(978.0, rel=1e-3)


def test_gaps_duplicates_and_late_bursts_are_where_they_are_asked() -> None:
    settings = StampSettings(
        jitter_std_s=1e-5,
        late_bursts_per_s=0.5,
        late_burst_s=(5e-3, 5e-3),
        catch_up_s=2e-5,
        gaps=2,
        gap_s=(0.2, 0.2),
        duplicate_fraction=0.01,
    )
    plan = plan_stamps(settings, 60.0, np.random.default_rng(2))
    steps = np.diff(plan.stamps_s)
    gaps = steps[steps > 0.05]
    assert gaps.size == 2
    assert_allclose(gaps, 0.2, atol=2e-3)
    assert np.all(steps >= 0.0)
    duplicates = np.flatnonzero(plan.duplicated)
    assert_array_equal(plan.rows[duplicates], plan.rows[duplicates - 1])
    assert_array_equal(plan.stamps_s[duplicates], plan.stamps_s[duplicates - 1])
    assert abs(duplicates.size / plan.rows.size - 0.01) < 0.003
    assert clean_time_stamps(plan.stamps_s).duplicates_dropped >= duplicates.size
    # A 5 ms stall: the stamps jump by about 5 ms, then the samples taken meanwhile follow 20 µs apart.
    lateness = plan.stamps_s - plan.true_time_s
    assert plan.late.sum() >= 4 * 15  # about 30 stalls of 5 ms at 1 kHz
    assert np.all(lateness[plan.late & ~plan.duplicated] > 1e-4)
    assert np.all(np.abs(lateness[~plan.late]) < 1e-4)
    assert np.count_nonzero((steps > 4e-3) & (steps < 7e-3)) >= 15
    assert np.count_nonzero(np.abs(steps - 2e-5) < 1e-6) >= 4 * 15


def test_a_1_khz_driver_loses_5_to_10_samples_every_3_to_7_s_as_real_logs_show(example_urdf) -> None:
    # The public 1 kHz log of a 7-axis arm: steps of 0.7-8.8 ms, an 8.5 ms hiccup every few seconds.
    settings = panda_hiccups_preset(example_urdf("panda.urdf")).stamps
    plan = plan_stamps(settings, 120.0, np.random.default_rng(4))
    steps = np.diff(plan.stamps_s)
    lost = np.diff(plan.rows) - 1
    hiccups = np.flatnonzero(lost > 0)
    assert set(lost[hiccups].tolist()) <= set(range(5, 11)) and len(set(lost[hiccups].tolist())) >= 4
    intervals = np.diff(plan.true_time_s[hiccups])
    assert intervals.min() >= 3.0 - 0.011 and intervals.max() <= 7.0
    assert 120.0 / 7.0 - 1 <= hiccups.size <= 120.0 / 3.0
    regular = steps[(steps > 0.0) & (np.abs(steps - 1e-3) < 1e-3)]
    assert 0.3e-3 < regular.min() and regular.max() < 1.7e-3  # ±0.3 ms jitter (σ 0.1 ms) on both stamps
    assert steps.max() < 12e-3
    assert 0.001 < np.count_nonzero(steps == 0.0) / steps.size < 0.004  # repeated stamps


def test_a_recording_with_hiccups_is_the_one_without_them_less_the_lost_rows(example_urdf) -> None:
    settings = panda_hiccups_preset(example_urdf("panda.urdf")).stamps
    with_hiccups = plan_stamps(settings, 30.0, np.random.default_rng(1))
    without = plan_stamps(replace(settings, hiccup_interval_s=(0.0, 0.0)), 30.0, np.random.default_rng(1))
    recorded = np.isin(without.rows, with_hiccups.rows)
    assert 0 < np.count_nonzero(~recorded) <= 10 * 10
    assert_array_equal(without.rows[recorded], with_hiccups.rows)
    assert_array_equal(without.stamps_s[recorded], with_hiccups.stamps_s)


def test_a_100_hz_arm_logs_motor_currents_with_repeated_stamps(example_urdf) -> None:
    settings = ur5_100hz_preset(example_urdf("ur5_robot.urdf"))
    assert settings.signal == "current"
    plan = plan_stamps(settings.stamps, 60.0, np.random.default_rng(2))
    assert clean_time_stamps(plan.stamps_s).nominal_dt == pytest.approx(0.01, rel=1e-3)
    assert 0.005 < np.count_nonzero(np.diff(plan.stamps_s) == 0.0) / plan.rows.size < 0.02


def test_a_joint_at_rest_sticks_below_its_breakaway_torque_and_breaks_away_above(arm6_urdf: Path) -> None:
    robot = load_robot(arm6_urdf)
    chain = DriveChain.create(6, gear_ratios=[100.0] * 6)
    friction = StribeckFriction.create(
        6,
        static=[8.0, 10.0, 8.0, 3.0, 3.0, 2.0],
        coulomb=[6.0, 7.0, 6.0, 2.0, 2.0, 1.5],
        viscous=1.0,
        stribeck_velocity=0.05,
    )
    q0 = np.array([0.3, -0.4, 0.8, 0.2, 0.5, -0.3])
    gravity = pin.computeGeneralizedGravity(robot.model, robot.model.createData(), q0)
    direction = np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    steps = 500
    time = np.arange(steps + 1) * 1e-3
    hold = np.tile(q0, (steps + 1, 1))
    zero = np.zeros_like(hold)

    def push(fraction: np.ndarray) -> StickSlipSimulator:
        simulator = StickSlipSimulator(robot, chain, 0.2, friction, kp=0.0, kd=0.0, q0=q0)
        simulator.reset(q0)
        simulator.run(time, hold, zero, zero, np.tile(gravity + fraction * friction.static * direction, (steps + 1, 1)))
        return simulator

    below = push(np.full(6, 0.95))
    assert_array_equal(below.q, q0)
    assert_array_equal(below.dq, 0.0)
    above = push(np.array([0.95, 1.05, 0.95, 0.95, 0.95, 0.95]))
    assert abs(above.q[1] - q0[1]) > 1e-3
    assert np.sign(above.q[1] - q0[1]) == direction[1]


def test_sliding_friction_falls_from_the_breakaway_torque_to_coulomb_plus_viscous() -> None:
    friction = StribeckFriction.create(1, static=10.0, coulomb=6.0, viscous=2.0, stribeck_velocity=0.05)
    assert friction.magnitude(np.array([0.0]))[0] == pytest.approx(10.0)
    assert friction.sliding_torque(np.array([-1.0]))[0] == pytest.approx(-8.0)
    assert friction.sliding_torque(np.array([0.05]))[0] == pytest.approx(0.1 + 6.0 + 4.0 * np.exp(-1.0))


def test_the_stuck_flags_mark_joints_that_do_not_move(arm6: RobotPreset) -> None:
    robot = arm6.robot()
    data = generate_recording(
        robot, arm6.with_settings(stamps=QUIET_STAMPS), process_trajectory(robot, arm6, seed=1), duration_s=6.0, seed=1
    )
    stuck = data.truth.stuck
    assert stuck.mean() > 0.05  # pick-and-place dwells
    both = stuck[1:] & stuck[:-1]
    assert_array_equal(np.diff(data.truth.q, axis=0)[both], 0.0)
    assert_array_equal(data.truth.dq[stuck], 0.0)


def test_torque_noise_is_coloured_by_its_filter(arm6: RobotPreset) -> None:
    sensors = SensorSettings(
        torque_white_std_nm=0.02,
        torque_coloured_std_nm=0.5,
        torque_noise_cutoff_hz=25.0,
        offset_walk_std_nm=0.0,
        offset_sine_nm=0.0,
        ripple_nm=0.0,
    )
    robot = arm6.robot()
    data = generate_recording(
        robot,
        arm6.with_settings(stamps=QUIET_STAMPS, sensors=sensors),
        slow_trajectory(robot, arm6, seed=0),
        duration_s=20.0,
        seed=4,
    )
    noise = data.truth.noise_nm
    assert_allclose(noise.std(axis=0), np.hypot(0.5, 0.02), rtol=0.15)
    frequency, power = sps.welch(noise, fs=1000.0, nperseg=2048, axis=0)
    below = power[(frequency > 1.0) & (frequency < 20.0)].mean(axis=0)
    above = power[(frequency > 100.0) & (frequency < 400.0)].mean(axis=0)
    assert np.all(below > 100.0 * above)
    assert_array_equal(data.truth.offset_drift_nm, 0.0)


def test_coloured_noise_has_the_asked_standard_deviation() -> None:
    noise = coloured_noise(np.random.default_rng(0), 200_000, std=np.array([0.1, 2.0]), cutoff_hz=10.0, rate_hz=1000.0)
    assert_allclose(noise.std(axis=0), [0.1, 2.0], rtol=0.05)


def test_measured_torques_minus_the_disturbances_are_the_ground_truth(arm6_recording: RealisticRecording) -> None:
    truth = arm6_recording.truth
    assert arm6_recording.effort is not None
    assert_allclose(arm6_recording.effort - truth.disturbance_nm, truth.torque_nm, rtol=0, atol=1e-12)
    assert np.all(np.abs(truth.offset_drift_nm).max(axis=0) > 0.0)
    assert np.all(np.abs(truth.ripple_nm).max(axis=0) > 0.0)


def test_the_noise_free_torque_is_the_inverse_dynamics_of_the_true_motion_when_moving(
    arm6_recording: RealisticRecording, arm6: RobotPreset
) -> None:
    truth = arm6_recording.truth
    robot = arm6.robot()
    data = robot.model.createData()
    moving = np.flatnonzero(np.all(np.abs(truth.dq) > 0.5, axis=1))[:200]
    assert moving.size == 200
    friction = arm6.friction
    for k in moving:
        expected = (
            pin.rnea(robot.model, data, truth.q[k], truth.dq[k], truth.ddq[k])
            + arm6.rotor_inertia * truth.ddq[k]
            + friction.sliding_torque(truth.dq[k])
            + arm6.offset_nm
        )
        # The torque is held over the 1 ms control period: it matches to the change over one period.
        assert_allclose(truth.torque_nm[k], expected, atol=0.05 * np.abs(expected).max() + 0.2)


def test_currents_through_the_drive_chain_give_the_ground_truth_to_their_resolution(
    arm6: RobotPreset,
) -> None:
    robot = arm6.robot()
    data = generate_recording(
        robot, arm6, excitation_trajectory(robot, arm6, seed=2), duration_s=2.0, seed=2, signal="current"
    )
    assert data.effort is None and data.current is not None
    chain = arm6.drive_chain
    step = chain.drive_gains * chain.gear_ratios * arm6.sensors.current_resolution_a
    error = chain.joint_torques(data.current) - data.truth.disturbance_nm - data.truth.torque_nm
    assert np.all(np.abs(error) <= 0.5 * step + 1e-9)


def test_recorded_velocities_are_the_drive_estimate_plus_the_configured_noise(arm6: RobotPreset) -> None:
    sensors = SensorSettings(
        velocity_noise_std_rad_s=(0.001, 0.002, 0.003, 0.004, 0.005, 0.006),
        velocity_resolution_rad_s=1e-4,
        velocity_time_constant_s=3e-3,
    )
    robot = arm6.robot()
    data = generate_recording(
        robot,
        arm6.with_settings(sensors=sensors, stamps=QUIET_STAMPS),
        excitation_trajectory(robot, arm6, seed=4),
        duration_s=10.0,
        seed=4,
    )
    truth = data.truth
    deviation = data.velocity - truth.velocity_drive
    assert np.abs(deviation - truth.velocity_noise).max() <= 0.5e-4 + 1e-12
    assert_allclose(
        deviation.std(axis=0), np.hypot([0.001, 0.002, 0.003, 0.004, 0.005, 0.006], 1e-4 / np.sqrt(12)), rtol=0.05
    )
    # The drive's estimate lags: it matches the true velocity delayed by about dt + τ_v = 4 ms.
    delays = np.arange(0.0, 8.05e-3, 2.5e-4)
    rms = [np.sqrt(np.mean((truth.velocity_drive - _delayed(truth.true_time_s, truth.dq, d)) ** 2)) for d in delays]
    assert 3e-3 <= delays[int(np.argmin(rms))] <= 4.5e-3
    assert min(rms) < 0.2 * rms[0]


def _delayed(time: np.ndarray, values: np.ndarray, delay: float) -> np.ndarray:
    return np.stack([np.interp(time - delay, time, values[:, j]) for j in range(values.shape[1])], axis=1)


def test_positions_are_encoder_counts_through_the_gear_ratio(
    arm6_recording: RealisticRecording, arm6: RobotPreset
) -> None:
    chain = arm6.drive_chain
    resolution = 2.0 * np.pi / arm6.sensors.encoder_counts_per_rev / chain.gear_ratios
    counts = arm6_recording.position / resolution
    assert_allclose(counts, np.round(counts), atol=1e-6)
    assert np.all(np.abs(arm6_recording.position - arm6_recording.truth.q) <= 2.5 * resolution)


def test_a_recording_round_trips_through_the_csv_format(arm6_recording: RealisticRecording, tmp_path: Path) -> None:
    path = tmp_path / "recording.csv"
    write_realistic_csv(path, arm6_recording)
    read, written = read_recording_csv(path), as_recording(arm6_recording)
    assert read.joint_names == written.joint_names and read.current is None
    for kind in ("time", "position", "velocity", "effort"):
        assert_array_equal(getattr(read, kind), getattr(written, kind))


@pytest.mark.parametrize("name", ["arm6", "ur5", "panda"])
def test_each_robot_records_a_tracked_excitation_within_its_limits(
    name: str, arm6_urdf: Path, example_urdf: Callable[[str], Path]
) -> None:
    preset = {
        "arm6": lambda: arm6_preset(arm6_urdf),
        "ur5": lambda: ur5_preset(example_urdf("ur5_robot.urdf")),
        "panda": lambda: panda_preset(example_urdf("panda.urdf")),
    }[name]()
    robot = preset.robot()
    data = generate_recording(robot, preset, excitation_trajectory(robot, preset, seed=0), duration_s=5.0, seed=0)
    recording = as_recording(data)
    assert recording.joint_names == robot.joint_names
    assert (recording.current is not None) == (preset.signal == "current")
    truth = data.truth
    assert truth.saturated_steps == 0
    assert np.abs(truth.q - truth.q_desired).max() < 0.02
    assert truth.standard_parameters.shape == (14 * robot.n_joints,)
    if preset.sensors.torque_sensor == "link":
        assert_array_equal(truth.drive.coulomb, 0.0)
    else:
        assert_array_equal(truth.drive.coulomb, preset.friction.coulomb)
    rate = preset.stamps.rate_hz
    assert recording.n_samples == pytest.approx(5.0 * rate, rel=0.15)
