"""In-process payload re-identification on the robot's job: the load from the 10 s after the trigger."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from numpy.testing import assert_allclose

from arm6_drives import ARM6_DRIVE, ARM6_UNCOUPLED_CHAIN, PROCESS_LOAD
from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.plan import plan_excitation
from dynamic_identification.core.excitation.settings import ExcitationSettings
from dynamic_identification.core.excitation.trajectory import interpolate_trajectory
from dynamic_identification.core.identification.payload import (
    RobotPrior,
    identify_payload_mass_and_centre,
    recording_observations,
    sphere_inertia,
)
from dynamic_identification.core.identification.payload_in_process import (
    MOTION_BASELINE_S,
    MOTION_MARGIN_S,
    REFERENCE_MAX_REST_S,
    PayloadReidentification,
    PayloadReidentificationSettings,
    RecentMotion,
    moving_samples,
)
from dynamic_identification.core.mechanism.payload import Payload, attach_payload
from dynamic_identification.core.mechanism.robot import DriveTerms, RobotModel
from dynamic_identification.core.simulation import inverse_dynamics
from dynamic_identification.io.payload import format_payload_estimate, payload_identification_record

RATE_HZ = 500.0


def _job(robot: RobotModel, *, carried: Payload | None, seconds: float, seed: int, hold: int | None = None):
    """The pick-and-place process, torques from the robot carrying ``carried`` with 1 % current noise."""
    plan = plan_excitation(
        robot, ARM6_UNCOUPLED_CHAIN, DriveTerms(), ExcitationSettings(mode="process", cycles=4, seed=seed)
    )
    time = np.arange(0.0, min(seconds, plan.trajectory.duration_s), 1.0 / RATE_HZ)
    q, dq, ddq = interpolate_trajectory(
        plan.trajectory.time, plan.trajectory.q, plan.trajectory.dq, plan.trajectory.ddq, time
    )
    if hold is not None:  # every joint but the wrist held still
        q[:, :hold], dq[:, :hold], ddq[:, :hold] = q[0, :hold], 0.0, 0.0
    model = robot if carried is None else attach_payload(robot, carried)
    torques = inverse_dynamics(model, ARM6_UNCOUPLED_CHAIN, ARM6_DRIVE, q, dq, ddq)
    rng = np.random.default_rng(seed)
    currents = ARM6_UNCOUPLED_CHAIN.motor_currents(torques)
    noisy = ARM6_UNCOUPLED_CHAIN.joint_torques(
        currents + rng.normal(0.0, 0.01 * np.abs(currents).max(axis=0), currents.shape)
    )
    return time, q, noisy


def test_the_load_is_identified_from_ten_seconds_of_the_job_after_the_trigger(arm6) -> None:
    prior = RobotPrior.from_standard(arm6, ARM6_UNCOUPLED_CHAIN, ARM6_DRIVE)
    estimator = PayloadReidentification(prior, PayloadReidentificationSettings(frame="tool0", duration_s=10.0))
    time, q, torques = _job(arm6, carried=PROCESS_LOAD, seconds=12.0, seed=2)
    assert estimator.add_samples(time, q, torques) is None  # no trigger yet: nothing is kept
    estimator.trigger()
    outcome = None
    for start in range(0, time.size, 250):  # the node's worker feeds blocks
        outcome = outcome or estimator.add_samples(
            time[start : start + 250], q[start : start + 250], torques[start : start + 250]
        )
    assert outcome is not None and outcome.accepted, outcome.reason if outcome else "no outcome"
    assert outcome.ended_s - outcome.started_s <= 10.0 + 1e-9
    found = outcome.estimate.payload
    assert abs(found.mass_kg - PROCESS_LOAD.mass_kg) / PROCESS_LOAD.mass_kg < 0.02
    assert np.max(np.abs(found.com_m - PROCESS_LOAD.com_m)) < 0.005


def test_torques_read_with_the_window_s_delay_give_the_load_as_torques_in_time(arm6) -> None:
    # A driver's torques 9 ms late: read as recorded the load came out 2.0 % light, its centre 5.0 mm off
    # (in time: 0.06 %, 1.3 mm); read with the delay the window measured and aligned its own with, as in time.
    prior = RobotPrior.from_standard(arm6, ARM6_UNCOUPLED_CHAIN, ARM6_DRIVE)
    time, q, torques = _job(arm6, carried=PROCESS_LOAD, seconds=12.0, seed=2)
    late = np.column_stack([np.interp(time - 0.009, time, column) for column in torques.T])
    estimator = PayloadReidentification(
        prior, PayloadReidentificationSettings(frame="tool0", duration_s=10.0), torque_delay_s=0.009
    )
    estimator.trigger()
    outcome = estimator.add_samples(time, q, late)
    assert outcome is not None and outcome.accepted, outcome.reason if outcome else "no outcome"
    found = outcome.estimate.payload
    assert abs(found.mass_kg - PROCESS_LOAD.mass_kg) / PROCESS_LOAD.mass_kg < 0.005
    assert np.max(np.abs(found.com_m - PROCESS_LOAD.com_m)) < 0.002
    assert payload_identification_record(outcome.estimate, arm6.joint_names)["torque_delay_s"] == 0.009
    assert "torques: read 9 ms later than recorded" in format_payload_estimate(outcome.estimate, arm6.joint_names)


def test_a_job_that_keeps_the_tool_vertical_fixes_the_inertia_and_says_so(arm6) -> None:
    # The pick-and-place barely turns the load: its inertia is left open, the full search ends at the physical
    # bound or fails, and mass and centre of mass are estimated with a solid sphere's inertia held fixed.
    prior = RobotPrior.from_standard(arm6, ARM6_UNCOUPLED_CHAIN, ARM6_DRIVE)
    estimator = PayloadReidentification(prior, PayloadReidentificationSettings(frame="tool0", duration_s=10.0))
    time, q, torques = _job(arm6, carried=PROCESS_LOAD, seconds=12.0, seed=3)
    estimator.trigger()
    outcome = estimator.add_samples(time, q, torques)
    assert outcome is not None and outcome.accepted, outcome.reason if outcome else "no outcome"
    estimate = outcome.estimate
    found = estimate.payload
    assert estimate.inertia_fixed and not estimate.at_bound
    assert_allclose(found.inertia_kg_m2, sphere_inertia(found.mass_kg), rtol=0.01)
    assert np.all(found.std.inertia_kg_m2 >= np.max(np.abs(found.inertia_kg_m2)))  # σ says: not identified
    # Measured: mass 0.1 %, centre of mass within 0.6 mm; σ of the mass and COM stay those of the data.
    assert abs(found.mass_kg / PROCESS_LOAD.mass_kg - 1.0) < 0.01
    assert np.max(np.abs(found.com_m - PROCESS_LOAD.com_m)) < 0.003
    assert found.std.mass_kg < 0.01 * found.mass_kg and np.max(found.std.com_m) < 0.003
    assert payload_identification_record(estimate, arm6.joint_names)["inertia_fixed"] is True
    assert "does not determine the inertia" in format_payload_estimate(estimate, arm6.joint_names)


def test_mass_and_centre_do_not_depend_on_the_inertia_held_fixed(arm6) -> None:
    # Whatever inertia is assumed (a 10 cm cube's or the truth's), the job gives the same mass and centre of mass.
    prior = RobotPrior.from_standard(arm6, ARM6_UNCOUPLED_CHAIN, ARM6_DRIVE)
    time, q, torques = _job(arm6, carried=PROCESS_LOAD, seconds=10.0, seed=4)
    observations = recording_observations(
        arm6, ARM6_UNCOUPLED_CHAIN, time, q, ARM6_UNCOUPLED_CHAIN.motor_currents(torques), stick_periods=3
    )
    cube = np.eye(3) * PROCESS_LOAD.mass_kg * 0.1**2 / 6.0
    truth = identify_payload_mass_and_centre(prior, "tool0", observations, inertia_kg_m2=PROCESS_LOAD.inertia_kg_m2)
    other = identify_payload_mass_and_centre(prior, "tool0", observations, inertia_kg_m2=cube)
    assert_allclose(other.payload.inertia_kg_m2, cube)
    # Measured: they differ by 1e-8 kg and 0.03 µm.
    assert abs(other.payload.mass_kg - truth.payload.mass_kg) < 1e-4 * PROCESS_LOAD.mass_kg
    assert np.max(np.abs(other.payload.com_m - truth.payload.com_m)) < 1e-4
    assert np.max(np.abs(truth.payload.com_m - PROCESS_LOAD.com_m)) < 0.003


def test_a_motion_of_the_wrist_alone_is_refused_with_the_reason(arm6) -> None:
    prior = RobotPrior.from_standard(arm6, ARM6_UNCOUPLED_CHAIN, ARM6_DRIVE)
    estimator = PayloadReidentification(prior, PayloadReidentificationSettings(frame="tool0", duration_s=6.0))
    time, q, torques = _job(arm6, carried=PROCESS_LOAD, seconds=8.0, seed=2, hold=3)
    estimator.trigger()
    outcome = estimator.add_samples(time, q, torques)
    assert outcome is not None and not outcome.accepted
    assert "payload" in outcome.reason


def test_settings_name_what_is_wrong() -> None:
    with pytest.raises(IdentificationError, match="frame"):
        PayloadReidentificationSettings(frame="")
    with pytest.raises(IdentificationError, match="duration_s"):
        PayloadReidentificationSettings(frame="tool0", duration_s=0.0)
    with pytest.raises(IdentificationError, match="reference_s"):
        PayloadReidentificationSettings(frame="tool0", reference_s=-1.0)


def _reduced_prior(robot: RobotModel) -> RobotPrior:
    """The true robot without the wrist's small first moments (MX5, MX6, MY6, MZ6), as a sensitivity reduction
    drops them ([Volkmann2020] Algorithm 1: they change the robot's own torques by less than e_tol)."""
    truth = RobotPrior.from_standard(robot, ARM6_UNCOUPLED_CHAIN, ARM6_DRIVE)
    inertial = truth.inertial.reshape(6, 10).copy()
    inertial[4, 1] = 0.0
    inertial[5, 1:4] = 0.0
    return replace(truth, inertial=inertial.ravel())


def _reidentify(prior: RobotPrior, robot: RobotModel, reference: tuple | None, settings=None):
    settings = settings or PayloadReidentificationSettings(frame="tool0", duration_s=10.0)
    estimator = PayloadReidentification(prior, settings, reference=reference)
    estimator.trigger()
    outcome = estimator.add_samples(*_job(robot, carried=PROCESS_LOAD, seconds=12.0, seed=5))
    assert outcome is not None and outcome.accepted, outcome.reason if outcome else "no outcome"
    return outcome


def test_the_motion_before_the_trigger_corrects_what_a_reduced_robot_model_lacks_at_the_wrist(arm6) -> None:
    # The moments the reduction dropped (0.035 kg·m) show as centimetres of the load's centre of mass when the
    # prior is used as it is; the job's motion without the load before the trigger measures and restores them.
    prior = _reduced_prior(arm6)
    unloaded = _job(arm6, carried=None, seconds=12.0, seed=4)
    plain = _reidentify(prior, arm6, None)
    corrected = _reidentify(prior, arm6, unloaded)
    # Measured: 15.0 mm off along the tool axis without the correction, 0.6 mm with it (σ 0.6 mm).
    assert plain.correction is None and "no motion without the load" in plain.correction_note
    assert np.max(np.abs(plain.estimate.payload.com_m - PROCESS_LOAD.com_m)) > 0.01
    assert corrected.correction is not None and corrected.correction_note == ""
    found = corrected.estimate.payload
    assert np.max(np.abs(found.com_m - PROCESS_LOAD.com_m)) < 0.003
    assert abs(found.mass_kg / PROCESS_LOAD.mass_kg - 1.0) < 0.01
    assert np.all(np.abs(found.com_m - PROCESS_LOAD.com_m) < 3.0 * found.std.com_m + 1e-4)
    # The correction's own uncertainty is part of the load's.
    assert np.all(found.std.com_m >= plain.estimate.payload.std.com_m)
    # What it restored is the dropped moment seen from tool0 (MZ6 and MX5 regroup along the tool axis).
    restored = corrected.correction.dynamic_parameters
    assert np.all(restored[4:] == 0.0) and abs(restored[0]) < 0.05


def test_with_the_true_robot_model_the_correction_changes_nothing_that_matters(arm6) -> None:
    prior = RobotPrior.from_standard(arm6, ARM6_UNCOUPLED_CHAIN, ARM6_DRIVE)
    corrected = _reidentify(prior, arm6, _job(arm6, carried=None, seconds=12.0, seed=4))
    plain = _reidentify(prior, arm6, None)
    assert corrected.correction is not None
    assert np.max(np.abs(corrected.correction.dynamic_parameters[1:4])) < 2e-3  # kg·m: the noise of the fit
    assert_allclose(corrected.estimate.payload.com_m, plain.estimate.payload.com_m, atol=1e-3)


def test_a_reference_at_rest_or_turned_off_leaves_the_prior_as_it_is_and_says_why(arm6) -> None:
    prior = _reduced_prior(arm6)
    time, q, torques = _job(arm6, carried=None, seconds=4.0, seed=4)
    at_rest = (time, np.repeat(q[:1], time.size, axis=0), np.repeat(torques[:1], time.size, axis=0))
    still = _reidentify(prior, arm6, at_rest)
    assert still.correction is None and "does not determine" in still.correction_note
    off = PayloadReidentificationSettings(frame="tool0", duration_s=10.0, reference_s=0.0)
    turned_off = _reidentify(prior, arm6, _job(arm6, carried=None, seconds=12.0, seed=4), off)
    assert turned_off.correction is None and turned_off.correction_note == "reference_s is 0"
    assert_allclose(still.estimate.payload.com_m, turned_off.estimate.payload.com_m)


def test_a_rest_before_the_trigger_leaves_the_job_before_it_in_the_reference(arm6) -> None:
    # A cell waits for its part: 12 s of job, then 8 s at rest, then the grasp. The last 10 s of samples would be
    # 80 % rest (no correction); the last 10 s of motion reach back over the rest into the job.
    prior = _reduced_prior(arm6)
    time, q, torques = _job(arm6, carried=None, seconds=12.0, seed=4)
    rest_time = time[-1] + np.arange(1, int(8.0 * RATE_HZ) + 1) / RATE_HZ
    resting_torque = inverse_dynamics(arm6, ARM6_UNCOUPLED_CHAIN, ARM6_DRIVE, q[-1:], 0.0 * q[-1:], 0.0 * q[-1:])
    recent = RecentMotion(10.0)
    recent.add(time, q, torques)
    recent.add(rest_time, np.repeat(q[-1:], rest_time.size, axis=0), np.repeat(resting_torque, rest_time.size, axis=0))
    reference = recent.motion()
    assert reference is not None and reference[0][0] < time[-1] - 9.0
    assert time[-1] < reference[0][-1] <= time[-1] + MOTION_MARGIN_S + MOTION_BASELINE_S  # the rest is cut short
    corrected = _reidentify(prior, arm6, reference)
    assert corrected.correction is not None and corrected.correction_note == ""
    assert np.max(np.abs(corrected.estimate.payload.com_m - PROCESS_LOAD.com_m)) < 0.003


def test_samples_before_the_trigger_that_arrive_after_it_are_part_of_the_reference(arm6) -> None:
    # A loaded machine: when the trigger comes, the worker has taken 1 s of the job before it; the other 11 s
    # are still queued. The reference is read when the load is identified, not when the trigger came.
    prior = _reduced_prior(arm6)
    time, q, torques = _job(arm6, carried=None, seconds=12.0, seed=4)
    queued = time >= 1.0
    recent = RecentMotion(10.0)
    recent.add(time[~queued], q[~queued], torques[~queued])
    settings = PayloadReidentificationSettings(frame="tool0", duration_s=10.0)
    estimator = PayloadReidentification(prior, settings, reference=recent)
    estimator.trigger()
    recent.add(time[queued], q[queued], torques[queued])
    outcome = estimator.add_samples(*_job(arm6, carried=PROCESS_LOAD, seconds=12.0, seed=5))
    assert outcome is not None and outcome.accepted and outcome.correction is not None
    assert np.max(np.abs(outcome.estimate.payload.com_m - PROCESS_LOAD.com_m)) < 0.003


def test_recent_motion_memory_is_bounded_by_the_span_and_a_minute_of_rest() -> None:
    recent = RecentMotion(2.0)
    moving = np.arange(0.0, 3.0, 0.01)
    recent.add(moving, np.tile(moving[:, None], (1, 6)), np.zeros((moving.size, 6)))
    resting = 3.0 + np.arange(0.0, REFERENCE_MAX_REST_S + 5.0, 0.01)
    recent.add(resting, np.full((resting.size, 6), 3.0), np.zeros((resting.size, 6)))
    assert recent.motion() is None  # the job is gone, not kept forever; a rest alone is no motion
    every_sample = RecentMotion(2.0, min_speed_rad_s=0.0)  # signal.min_speed_rad_s: 0 counts rests as motion
    every_sample.add(resting, np.full((resting.size, 6), 3.0), np.zeros((resting.size, 6)))
    assert every_sample.motion()[0][0] == pytest.approx(resting[-1] - 2.0)


def test_encoder_noise_at_rest_is_not_motion_and_a_slow_move_is() -> None:
    time = np.arange(0.0, 2.0, 0.001)  # 1 kHz
    rng = np.random.default_rng(0)
    noisy_rest = np.round(rng.normal(0.0, 2e-4, (time.size, 6)) / 1e-5) * 1e-5  # 0.2 mrad noise, 10 µrad counts
    assert not moving_samples(time, noisy_rest, 0.05).any()
    slow = noisy_rest + 0.08 * time[:, None] * (np.arange(6) == 2)  # 0.08 rad/s on joint 3 only
    assert moving_samples(time, slow, 0.05).all()


def test_recent_motion_keeps_the_last_span_and_starts_over_when_time_steps_back() -> None:
    recent = RecentMotion(2.0)
    assert recent.motion() is None
    time = np.arange(0.0, 5.0, 0.01)
    q, torques = np.tile(time[:, None], (1, 6)), -np.tile(time[:, None], (1, 6))
    for start in range(0, time.size, 37):  # blocks as the node's worker feeds them
        block = slice(start, start + 37)
        recent.add(time[block], q[block], torques[block])
    kept_time, kept_q, kept_torques = recent.motion()
    assert kept_time[0] >= time[-1] - 2.0 - 1e-12 and kept_time[-1] == time[-1]
    assert kept_time.size == 201
    assert np.all(kept_q[:, 0] == kept_time) and np.all(kept_torques[:, 0] == -kept_time)  # rows of those stamps
    recent.add(time[:50], q[:50], torques[:50])  # a restarted recording
    assert recent.motion()[0].tolist() == time[:50].tolist()
    recent.clear()
    assert recent.motion() is None
    nothing = RecentMotion(0.0)
    nothing.add(time, q, torques)
    assert nothing.motion() is None
