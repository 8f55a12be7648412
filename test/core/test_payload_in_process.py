"""In-process payload re-identification on the robot's job: the load from the 10 s after the trigger."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from arm6_drives import ARM6_DRIVE, ARM6_UNCOUPLED_CHAIN, PROCESS_LOAD
from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.plan import plan_excitation
from dynamic_identification.core.excitation.settings import ExcitationSettings
from dynamic_identification.core.excitation.trajectory import interpolate_trajectory
from dynamic_identification.core.model import DriveTerms, RobotModel
from dynamic_identification.core.payload import Payload, attach_payload
from dynamic_identification.core.payload_identification import (
    RobotPrior,
    identify_payload_mass_and_centre,
    recording_observations,
    sphere_inertia,
)
from dynamic_identification.core.payload_in_process import (
    PayloadReidentification,
    PayloadReidentificationSettings,
)
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
