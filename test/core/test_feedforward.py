"""Feedforward of the identified model: equal to the IDIM prediction away from q̇ = 0, smooth through it,
loadable from a parameter file, and worth it: it cuts the simulated closed loop's tracking error."""

from __future__ import annotations

import dataclasses
import pathlib
import re
import shutil

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from arm6_drives import ARM6_DRIVE
from dynamic_identification import demo
from dynamic_identification.core.errors import DataError, ModelError
from dynamic_identification.core.excitation.plan import plan_excitation
from dynamic_identification.core.excitation.settings import ExcitationSettings
from dynamic_identification.core.excitation.trajectory import interpolate_trajectory
from dynamic_identification.core.feedforward import DEFAULT_FRICTION_SMOOTHING, DESIRED_STATE_TOLERANCE
from dynamic_identification.core.feedforward import FeedforwardModel as CoreFeedforwardModel
from dynamic_identification.core.identification import IdentificationSettings, identify, predict_torques
from dynamic_identification.core.mechanism.payload import Payload, attach_payload
from dynamic_identification.core.mechanism.plausibility import ImplausibleModelError, mechanism_bounds, model_problems
from dynamic_identification.core.mechanism.robot import (
    DriveChain,
    DriveParameters,
    DriveTerms,
    RobotModel,
    load_robot,
)
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.regressors.idim import BaseParameters, base_parameters
from dynamic_identification.core.simulation import simulate_tracking
from dynamic_identification.feedforward import FeedforwardModel
from dynamic_identification.io.config import load_config
from dynamic_identification.io.parameters import ParameterFile, dump_parameters, write_parameters_atomic
from dynamic_identification.io.urdf_location import urdf_sha256
from dynamic_identification.resources import shipped_path
from true_parameters import true_base_parameters, true_parameter_file

GEAR_RATIOS = [100.0, 100.0, 80.0, 60.0, 60.0, 50.0]
COUPLED = np.eye(6)
COUPLED[5, 4] = 1.0  # a wrist whose last motor also turns with joint 5 (TX-40-like)


def _drive(robot: RobotModel) -> DriveParameters:
    """``ARM6_DRIVE`` of the robot's joints (the first ``robot.n_joints``)."""
    n = robot.n_joints
    return DriveParameters.create(
        n,
        rotor_inertia=ARM6_DRIVE.rotor_inertia[:n],
        viscous=ARM6_DRIVE.viscous[:n],
        coulomb=ARM6_DRIVE.coulomb[:n],
        offset=ARM6_DRIVE.offset[:n],
    )


def _true_base(robot: RobotModel, chain: DriveChain, terms: DriveTerms) -> tuple[BaseParameters, np.ndarray]:
    return true_base_parameters(robot, chain, terms, _drive(robot))


def _states(robot: RobotModel, samples: int, *, seed: int, min_speed: float) -> tuple[np.ndarray, ...]:
    """Random states whose joint speeds all exceed ``min_speed`` (rad/s)."""
    rng = np.random.default_rng(seed)
    q = rng.uniform(robot.lower_position_limits, robot.upper_position_limits, size=(samples, robot.n_joints))
    dq = rng.uniform(min_speed, 2.0, size=q.shape) * rng.choice([-1.0, 1.0], size=q.shape)
    ddq = rng.uniform(-5.0, 5.0, size=q.shape)
    return q, dq, ddq


@pytest.mark.parametrize("coupling", [None, COUPLED], ids=["direct", "coupled"])
def test_torques_equal_the_idim_prediction_where_joints_move(arm6_urdf: pathlib.Path, coupling: np.ndarray) -> None:
    robot = load_robot(arm6_urdf)
    chain = DriveChain.create(6, gear_ratios=GEAR_RATIOS, coupling=coupling)
    terms = DriveTerms()
    base, values = _true_base(robot, chain, terms)
    kept = np.arange(base.count) % 5 != 3  # a reduced model: some base parameters removed
    names = tuple(np.array(base.names)[kept])
    model = CoreFeedforwardModel(robot, chain, terms, names, values[kept])
    # Motor speeds |C q̇| ≥ 0.05 rad/s give |k v| ≥ 50: tanh(k v) = sign(v) in double precision.
    q, dq, ddq = _states(robot, 40, seed=3, min_speed=0.1)
    dq[:, 5] = np.sign(dq[:, 4]) * np.abs(dq[:, 5])  # keep the coupled motor 6 (q̇5 + q̇6) away from zero
    expected = predict_torques(robot, chain, terms, dict(zip(names, values[kept], strict=True)), q, dq, ddq)
    assert_allclose(model.torques(q, dq, ddq), expected, rtol=0.0, atol=1e-9)


def test_torques_are_continuous_through_zero_velocity_with_slope_k_fc(arm6_urdf: pathlib.Path) -> None:
    robot = load_robot(arm6_urdf)
    chain = DriveChain.create(6, gear_ratios=GEAR_RATIOS)
    terms = DriveTerms()
    base, values = _true_base(robot, chain, terms)
    model = CoreFeedforwardModel(robot, chain, terms, base.names, values)
    q, _, ddq = _states(robot, 1, seed=5, min_speed=0.1)
    delta = 1e-7
    for j in range(robot.n_joints):
        step = np.zeros(robot.n_joints)
        step[j] = delta
        plus, minus = model.torques(q[0], step, ddq[0]), model.torques(q[0], -step, ddq[0])
        # Coriolis terms are quadratic in q̇, so the central difference at rest is the friction slope
        # Fv + k Fc of joint j ([Volkmann2020] §IV.C tanh(1000 q̇)), and zero on the other joints.
        slope = np.zeros(robot.n_joints)
        slope[j] = ARM6_DRIVE.viscous[j] + DEFAULT_FRICTION_SMOOTHING * ARM6_DRIVE.coulomb[j]
        assert_allclose((plus - minus) / (2.0 * delta), slope, rtol=1e-6, atol=1e-3)
        # The IDIM's sign(q̇) jumps by 2 Fc there; the feedforward moves by micro-N·m.
        assert np.abs(plus - minus).max() < 2e-3 < 2.0 * ARM6_DRIVE.coulomb[j]
    at_rest = model.torques(q[0], np.zeros(6), np.zeros(6))
    gravity_and_offset = predict_torques(
        robot, chain, terms, dict(zip(base.names, values, strict=True)), q, np.zeros((1, 6)), np.zeros((1, 6))
    )[0]
    assert_allclose(at_rest, gravity_and_offset, rtol=0.0, atol=1e-9)


def test_single_sample_and_batch_shapes_agree(arm6_urdf: pathlib.Path) -> None:
    robot = load_robot(arm6_urdf)
    chain = DriveChain.create(6, gear_ratios=GEAR_RATIOS)
    terms = DriveTerms(offset=False)
    base, values = _true_base(robot, chain, terms)
    model = CoreFeedforwardModel(robot, chain, terms, base.names, values)
    q, dq, ddq = _states(robot, 7, seed=11, min_speed=0.0)
    batch = model.torques(q, dq, ddq)
    assert batch.shape == (7, 6)
    single = model.torques(q[2], dq[2], ddq[2])
    assert single.shape == (6,)
    assert_allclose(single, batch[2], rtol=0.0, atol=0.0)
    assert model.torques(q[:1], dq[:1], ddq[:1]).shape == (1, 6)
    assert model.joint_names == robot.joint_names and model.names == base.names


def test_a_joint_the_identification_never_saw_move_gets_no_feedforward(arm6_urdf: pathlib.Path) -> None:
    robot = load_robot(arm6_urdf)
    chain = DriveChain.create(6, gear_ratios=GEAR_RATIOS)
    terms = DriveTerms()
    base, values = _true_base(robot, chain, terms)
    document = true_parameter_file(
        robot,
        chain,
        terms,
        _drive(robot),
        urdf=str(arm6_urdf),
        quality={"joint_relative_errors": {**{name: 0.02 for name in robot.joint_names}, "joint_4": None}},
    )
    assert document.identified_joints() == ("joint_1", "joint_2", "joint_3", "joint_5", "joint_6")
    model = FeedforwardModel.from_yaml(dump_parameters(document))
    assert model.identified_joints == document.identified_joints()
    q, dq, ddq = _states(robot, 5, seed=6, min_speed=0.1)
    full = CoreFeedforwardModel(robot, chain, terms, base.names, values).torques(q, dq, ddq)
    torques = model.torques(q, dq, ddq)
    assert np.all(torques[:, 3] == 0.0)
    assert_allclose(np.delete(torques, 3, axis=1), np.delete(full, 3, axis=1), rtol=0.0, atol=1e-12)
    assert_allclose(model.torques(q[0], dq[0], ddq[0]), torques[0], rtol=0.0, atol=0.0)
    with pytest.raises(ModelError, match="identified"):
        CoreFeedforwardModel(robot, chain, terms, base.names, values, identified=[True] * 5)
    # A robot model already loaded is reused only for the file's own joints.
    reused = FeedforwardModel.from_parameters(document, robot=robot)
    assert_allclose(reused.torques(q, dq, ddq), torques, rtol=0.0, atol=0.0)
    with pytest.raises(ModelError, match="joints"):
        FeedforwardModel.from_parameters(document, robot=load_robot(arm6_urdf, ["joint_1", "joint_2"]))


def test_bad_inputs_are_refused_naming_them(arm6_urdf: pathlib.Path) -> None:
    robot = load_robot(arm6_urdf)
    chain = DriveChain.create(6)
    terms = DriveTerms(rotor_inertia=False)
    with pytest.raises(ModelError, match="Ia1"):
        CoreFeedforwardModel(robot, chain, terms, ("ZZ1", "Ia1"), (1.0, 2.0))
    with pytest.raises(ModelError, match="friction_smoothing"):
        CoreFeedforwardModel(robot, chain, terms, ("ZZ1",), (1.0,), friction_smoothing=0.0)
    with pytest.raises(ModelError, match="values has 1 entries"):
        CoreFeedforwardModel(robot, chain, terms, ("ZZ1", "Fv1"), (1.0,))
    model = CoreFeedforwardModel(robot, chain, terms, ("ZZ1", "Fv1"), (1.0, 2.0))
    with pytest.raises(DataError, match=r"\(6,\) or \(N, 6\)"):
        model.torques(np.zeros(5), np.zeros(5), np.zeros(5))
    with pytest.raises(DataError, match="dq has a non-finite value at sample 1"):
        model.torques(np.zeros((2, 6)), np.array([np.zeros(6), np.full(6, np.nan)]), np.zeros((2, 6)))


def _parameter_file(robot: RobotModel, urdf: str, chain: DriveChain, terms: DriveTerms) -> ParameterFile:
    return true_parameter_file(robot, chain, terms, _drive(robot), urdf=urdf)


def test_from_yaml_round_trip_reproduces_the_model(arm6_urdf: pathlib.Path, tmp_path: pathlib.Path) -> None:
    robot = load_robot(arm6_urdf, ["joint_1", "joint_2", "joint_3"])
    chain = DriveChain.create(3, gear_ratios=GEAR_RATIOS[:3], drive_gains=[0.45, 0.45, 0.4])
    terms = DriveTerms(rotor_inertia=False)
    base, values = _true_base(robot, chain, terms)
    reference = CoreFeedforwardModel(robot, chain, terms, base.names, values, friction_smoothing=300.0)
    path = tmp_path / "params.yaml"
    write_parameters_atomic(path, _parameter_file(robot, str(arm6_urdf), chain, terms))
    q, dq, ddq = _states(robot, 20, seed=2, min_speed=0.0)
    expected = reference.torques(q, dq, ddq)

    loaded = FeedforwardModel.from_yaml(path, friction_smoothing=300.0)
    assert isinstance(loaded, CoreFeedforwardModel)
    assert loaded.joint_names == ("joint_1", "joint_2", "joint_3")
    assert_allclose(loaded.torques(q, dq, ddq), expected, rtol=0.0, atol=1e-12)
    # The payload of /estimator/parameters (YAML text) loads the same model.
    text = dump_parameters(_parameter_file(robot, str(arm6_urdf), chain, terms))
    assert_allclose(
        FeedforwardModel.from_yaml(text, friction_smoothing=300.0).torques(q, dq, ddq), expected, atol=1e-12
    )


def test_from_yaml_urdf_gives_a_urdf_the_file_names_where_this_machine_cannot_find_it(
    arm6_urdf: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    robot = load_robot(arm6_urdf)
    chain, terms = DriveChain.create(6, gear_ratios=GEAR_RATIOS), DriveTerms()
    named = "package://robot_pc_description/urdf/arm6.urdf"  # identified on a machine that had the package
    path = tmp_path / "params.yaml"
    identified = _parameter_file(robot, named, chain, terms)
    write_parameters_atomic(path, dataclasses.replace(identified, urdf_sha256=urdf_sha256(arm6_urdf)))
    with pytest.raises(DataError, match=r"package 'robot_pc_description' has no such file .*from_yaml\(urdf="):
        FeedforwardModel.from_yaml(path)

    model = FeedforwardModel.from_yaml(path, urdf=arm6_urdf)

    base, values = _true_base(robot, chain, terms)
    q, dq, ddq = _states(robot, 3, seed=4, min_speed=0.1)
    expected = CoreFeedforwardModel(robot, chain, terms, base.names, values).torques(q, dq, ddq)
    assert_allclose(model.torques(q, dq, ddq), expected, rtol=0.0, atol=0.0)
    edited = tmp_path / "edited.urdf"
    edited.write_text(arm6_urdf.read_text(encoding="utf-8").replace("</robot>", "<!-- edited --></robot>"), "utf-8")
    with pytest.raises(DataError, match=f"not the one {path} was identified from .* is {urdf_sha256(edited)[:16]}"):
        FeedforwardModel.from_yaml(path, urdf=edited)


def test_from_yaml_finds_a_relative_urdf_beside_the_file(arm6_urdf: pathlib.Path, tmp_path: pathlib.Path) -> None:
    robot = load_robot(arm6_urdf)
    chain = DriveChain.create(6, gear_ratios=GEAR_RATIOS)
    terms = DriveTerms()
    shutil.copy(arm6_urdf, tmp_path / "arm.urdf")
    path = tmp_path / "params.yaml"
    write_parameters_atomic(path, _parameter_file(robot, "arm.urdf", chain, terms))
    model = FeedforwardModel.from_yaml(path)
    q, dq, ddq = _states(robot, 3, seed=4, min_speed=0.1)
    base, values = _true_base(robot, chain, terms)
    expected = predict_torques(robot, chain, terms, dict(zip(base.names, values, strict=True)), q, dq, ddq)
    assert_allclose(model.torques(q, dq, ddq), expected, rtol=0.0, atol=1e-9)


def test_feedforward_cuts_the_closed_loop_tracking_error_by_40_percent_on_every_moving_joint(
    arm6_urdf: pathlib.Path,
) -> None:
    """The issue's "Must show", on the demo's simulated arm: identify from 30 s of excitation, then track a
    pick-and-place cycle with PD alone and with PD + feedforward of the desired motion ([Volkmann2020] §IV.C)."""
    config = shipped_path("config", "dynid_arm6.yaml")
    robot = load_robot(arm6_urdf, load_config(str(config)).joints)
    simulator = demo.simulated_robot(config, robot, seed=1)
    chain = simulator.drive_chain
    terms = DriveTerms()
    recording, _ = demo.simulated_recording(simulator, duration_s=30.0, seed=1)
    result = identify(
        DynamicModel.create(robot, chain, terms, base_parameters(robot, chain, terms)),
        recording.time,
        recording.position,
        recording.joint_torques(chain),
        dq_measured=recording.velocity,
        settings=IdentificationSettings(),
    )
    model = CoreFeedforwardModel(robot, chain, terms, result.names, result.estimate.parameters)

    plan = plan_excitation(robot, chain, terms, ExcitationSettings(mode="process", process="pick_and_place", cycles=1))
    path = plan.trajectory
    time_s = np.arange(0.0, path.time[-1], simulator.settings.dt_s)
    q, dq, ddq = interpolate_trajectory(path.time, path.q, path.dq, path.ddq, time_s)
    rms = {}
    for label, feedforward in (("pd", None), ("pd+ff", model.torques(q, dq, ddq))):
        simulator.reset(q[0], dq[0], time_s=0.0)
        run = simulate_tracking(simulator, time_s, q, dq, ddq, feedforward)
        rms[label] = np.sqrt(np.mean(run.tracking_error**2, axis=0))
    moving = np.ptp(q, axis=0) > 5e-3
    assert moving.sum() >= 4, f"the process moves only joints {np.flatnonzero(moving) + 1}"
    reduction = 1.0 - rms["pd+ff"] / rms["pd"]
    report = ", ".join(f"{name} {r:.1%}" for name, r in zip(robot.joint_names, reduction, strict=True))
    assert np.all(reduction[moving] >= 0.4), f"RMS tracking error reduction per joint: {report}"


@pytest.fixture(scope="module")
def arm6_model(arm6_urdf: pathlib.Path) -> tuple[RobotModel, DriveChain, DriveTerms, BaseParameters, np.ndarray]:
    robot = load_robot(arm6_urdf)
    chain, terms = DriveChain.create(6, gear_ratios=GEAR_RATIOS), DriveTerms()
    base, values = _true_base(robot, chain, terms)
    return robot, chain, terms, base, values


def test_a_parameter_that_would_overflow_is_refused_on_load(arm6_model) -> None:
    robot, chain, terms, base, values = arm6_model
    values = values.copy()
    values[base.names.index("Fc1")] = 1.7e308
    with pytest.raises(ModelError, match=r"Fc1 = 1\.7e\+308 is beyond"):
        CoreFeedforwardModel(robot, chain, terms, base.names, values)


@pytest.mark.parametrize(("quantity", "index"), [("velocity", 1), ("acceleration", 2)])
def test_a_sample_beyond_the_limits_gets_the_torques_of_its_clamped_state_and_the_others_their_own(
    arm6_model, quantity, index
) -> None:
    robot, chain, terms, base, values = arm6_model
    model = CoreFeedforwardModel(robot, chain, terms, base.names, values)
    q, dq, ddq = _states(robot, 50, seed=13, min_speed=0.1)
    state = [q, np.clip(dq, -0.5, 0.5), np.clip(ddq, -1.0, 1.0)]  # within every limit
    within = model.evaluate(*state)
    state[index][20, 2] = 1e6  # one runaway sample in the batch
    limit = model.velocity_limits[2] if index == 1 else model.acceleration_limits[2]

    output = model.evaluate(*state)

    assert output.limited.shape == (50, 6) and np.argwhere(output.limited).tolist() == [[20, 2]]
    others = np.arange(50) != 20
    assert_allclose(output.torques[others], within.torques[others], rtol=0.0, atol=0.0)
    clamped = [array[20].copy() for array in state]
    clamped[index][2] = (1.0 + DESIRED_STATE_TOLERANCE) * limit  # not extrapolated beyond what is accepted
    assert_allclose(output.torques[20], model.torques(*clamped), rtol=0.0, atol=0.0)
    assert np.all(np.abs(output.torques) <= robot.effort_limits)
    assert output.problem.startswith(f"desired {quantity} of joint_3 is 1e+06 at sample 20, beyond its limit")


def test_the_default_acceleration_limit_is_generous_and_a_configured_one_is_kept(example_urdf) -> None:
    # Issue 21 finding 6: a Panda joint whose maker allows 10 rad/s² (panda_joint3, velocity limit 2.175 rad/s)
    # refused 9 rad/s² for the whole batch: 4 /s × 2.175 = 8.7 rad/s² is the excitation's planning margin.
    robot = load_robot(example_urdf("panda.urdf"), [f"panda_joint{k}" for k in range(1, 8)])
    chain, terms = DriveChain.create(7), DriveTerms()
    base, values = true_base_parameters(robot, chain, terms, DriveParameters.create(7))
    q, dq, ddq = np.zeros((1000, 7)), np.zeros((1000, 7)), np.zeros((1000, 7))
    q[:, 3] = -1.5
    ddq[500, 2] = 9.0

    default = CoreFeedforwardModel(robot, chain, terms, base.names, values).evaluate(q, dq, ddq)
    maker = [15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0]  # rad/s², Franka's datasheet: limits.acceleration
    configured = CoreFeedforwardModel(robot, chain, terms, base.names, values, acceleration_limits=maker)
    tighter = CoreFeedforwardModel(robot, chain, terms, base.names, values, acceleration_limits=[8.0] * 7)

    assert not default.limited.any() and np.isfinite(default.torques).all()
    assert_allclose(configured.evaluate(q, dq, ddq).torques, default.torques, rtol=0.0, atol=0.0)
    assert np.argwhere(tighter.evaluate(q, dq, ddq).limited).tolist() == [[500, 2]]


def test_torques_beyond_the_effort_limits_are_clamped_and_flagged(arm6_model) -> None:
    robot, chain, terms, base, values = arm6_model
    values = values.copy()
    values[base.names.index("Fc2")] = 200.0  # N·m: within the gates' 1.5 × 150 N·m, beyond the limit when moving
    model = CoreFeedforwardModel(robot, chain, terms, base.names, values)
    output = model.evaluate(np.zeros(6), np.full(6, 0.5), np.zeros(6))
    assert output.torques[1] == pytest.approx(robot.effort_limits[1])
    assert output.clamped.tolist() == [False, True, False, False, False, False]
    configured = [120.0, 140.0, 60.0, 20.0, 15.0, 8.0]
    limited = CoreFeedforwardModel(robot, chain, terms, base.names, values, effort_limits=configured)
    assert np.all(np.abs(limited.torques(np.zeros(6), np.full(6, 0.5), np.zeros(6))) <= configured)


@pytest.mark.parametrize(
    ("changes", "problems"),
    [
        ({"Fc2": 5e6}, [r"Fc2 = 5e\+06 N·m exceeds 1\.5 × the effort limit 150 N·m of joint_2"]),
        ({"Fv3": -300.0}, [r"Fv3 = -300 N·m·s/rad needs 1650 N·m at the velocity limit"]),
        ({"Fc2": 5e6, "Fv3": -300.0}, [r"Fc2 = 5e\+06", r"Fv3 = -300"]),
    ],
    ids=["coulomb", "negative-viscous", "both"],
)
def test_a_model_that_fails_the_plausibility_gates_is_refused_naming_every_problem(
    arm6_model, changes: dict[str, float], problems: list[str]
) -> None:
    robot, chain, terms, base, values = arm6_model
    values = values.copy()
    for name, value in changes.items():
        values[base.names.index(name)] = value
    with pytest.raises(ImplausibleModelError) as refused:
        CoreFeedforwardModel(robot, chain, terms, base.names, values)
    assert len(refused.value.problems) == len(problems)
    for pattern, problem in zip(problems, refused.value.problems, strict=True):
        assert re.search(pattern, problem), problem
    assert "\n" not in str(refused.value)


def test_the_gates_are_those_of_the_estimator_with_the_same_limits_and_factors(arm6_model) -> None:
    robot, chain, terms, base, values = arm6_model
    values = values.copy()
    # 3 kg·m² needs 66 N·m at the estimator's default 22 rad/s² (within 1.5 × 60 N·m) but 165 N·m at the
    # feedforward's own, more generous, clamp of 55 rad/s²: a model the estimator publishes is accepted.
    values[base.names.index("Ia3")] = 3.0
    assert model_problems(mechanism_bounds(robot), base.names, values) == ()
    accepted = CoreFeedforwardModel(robot, chain, terms, base.names, values)
    assert accepted.acceleration_limits[2] == pytest.approx(55.0)
    # plausibility.effort_factor and limits.effort are the estimator's settings, and tighten the gates as there.
    with pytest.raises(ImplausibleModelError, match=r"Ia3 = 3 kg·m² needs 66 N·m .* more than 1\.2 ×"):
        CoreFeedforwardModel(robot, chain, terms, base.names, values, effort_factor=1.2, effort_limits=[50.0] * 6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    scale=st.floats(-1e9, 1e9, allow_nan=False),
    index=st.integers(0, 57),
    fractions=st.lists(st.floats(-1.0, 1.0), min_size=18, max_size=18),
)
def test_the_output_is_finite_and_within_the_effort_limits_for_any_accepted_model_and_state(
    arm6_model, scale, index, fractions
) -> None:
    robot, chain, terms, base, values = arm6_model
    values = values.copy()
    values[index % base.count] = scale
    try:
        model = CoreFeedforwardModel(robot, chain, terms, base.names, values)
    except ImplausibleModelError:
        return  # refused: nothing is fed forward
    f = np.reshape(fractions, (3, 6))
    q = 0.5 * (robot.lower_position_limits + robot.upper_position_limits) + 0.5 * f[0] * np.ptp(
        [robot.lower_position_limits, robot.upper_position_limits], axis=0
    )
    torques = model.torques(q, f[1] * robot.velocity_limits, f[2] * 4.0 * robot.velocity_limits)
    assert np.all(np.isfinite(torques)) and np.all(np.abs(torques) <= robot.effort_limits)


def test_a_payload_adds_exactly_the_rigid_body_torques_of_the_carried_load(arm6_model) -> None:
    robot, chain, terms, base, values = arm6_model
    load = Payload.create(
        "joint_6",
        mass_kg=3.0,
        com_m=[0.02, -0.01, 0.08],
        inertia_kg_m2={"ixx": 0.02, "ixy": 0.0, "ixz": 0.001, "iyy": 0.03, "iyz": 0.0, "izz": 0.015},
    )
    bare = CoreFeedforwardModel(robot, chain, terms, base.names, values)
    loaded = bare.with_payload(load)
    carried = attach_payload(robot, load)
    q, dq, ddq = _states(robot, 20, seed=9, min_speed=0.1)
    ddq = 0.1 * ddq  # within the default acceleration limits of the wrist
    assert loaded.payload is load and bare.payload is None
    difference = loaded.torques(q, dq, ddq) - bare.torques(q, dq, ddq)
    assert_allclose(difference, expected_at(carried, robot, q, dq, ddq), atol=1e-9)


def expected_at(carried: RobotModel, robot: RobotModel, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
    """RNEA of the robot carrying the load minus that of the bare robot: the load's joint torques, N·m."""
    with_load, without = carried.model.createData(), robot.model.createData()
    return np.array(
        [
            pin.rnea(carried.model, with_load, q[k], dq[k], ddq[k])
            - pin.rnea(robot.model, without, q[k], dq[k], ddq[k])
            for k in range(q.shape[0])
        ]
    )
