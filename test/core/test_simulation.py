"""The simulated robot against Pinocchio computed independently, and its sensors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_allclose
from scipy.integrate import solve_ivp

from arm6_drives import ARM6_DRIVE, ARM6_UNCOUPLED_CHAIN, GEAR_RATIOS
from dynamic_identification.core.errors import DataError, ModelError
from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.excitation.trajectory import interpolate_trajectory
from dynamic_identification.core.mechanism.robot import DriveChain, DriveParameters, DriveTerms, RobotModel, load_robot
from dynamic_identification.core.mechanism.seam import SerialMechanism
from dynamic_identification.core.regressors.idim import drive_observation_matrix
from dynamic_identification.core.simulation import (
    RobotSimulator,
    SensorModel,
    SimulationSettings,
    drive_torques,
    inverse_dynamics,
    measure,
    quantize_positions,
    simulate_tracking,
    synthesize_measurements,
)


@pytest.fixture(scope="module")
def ur5(example_urdf: Callable[[str], Path]) -> RobotModel:
    return load_robot(example_urdf("ur5_robot.urdf"))


@pytest.fixture(scope="module")
def chain() -> DriveChain:
    return ARM6_UNCOUPLED_CHAIN


@pytest.fixture(scope="module")
def drive() -> DriveParameters:
    return ARM6_DRIVE


def _random_states(samples: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.uniform(-3, 3, (samples, 6)), rng.uniform(-2, 2, (samples, 6)), rng.uniform(-5, 5, (samples, 6))


def test_inverse_dynamics_equals_mass_matrix_form(ur5: RobotModel, chain: DriveChain, drive: DriveParameters) -> None:
    q, dq, ddq = _random_states(20, seed=1)
    data = ur5.model.createData()
    expected = []
    for k in range(q.shape[0]):
        mass = pin.crba(ur5.model, data, q[k]).copy()
        mass = np.triu(mass) + np.triu(mass, 1).T
        nle = pin.nonLinearEffects(ur5.model, data, q[k], dq[k])
        friction = drive.viscous * dq[k] + drive.coulomb * np.sign(dq[k]) + drive.offset
        expected.append(mass @ ddq[k] + nle + drive.rotor_inertia * ddq[k] + friction)
    assert_allclose(inverse_dynamics(ur5, chain, drive, q, dq, ddq), np.array(expected), atol=1e-9)


def test_drive_torques_with_coupling_match_the_regressor_columns() -> None:
    coupling = np.eye(3)
    coupling[2, 1] = 1.0
    chain = DriveChain.create(3, gear_ratios=[50.0, 40.0, 30.0], coupling=coupling)
    drive = DriveParameters.create(
        3, rotor_inertia=[0.2, 0.1, 0.05], viscous=[2, 1, 0.5], coulomb=[3, 2, 1], offset=[0.1, -0.2, 0.3]
    )
    rng = np.random.default_rng(2)
    dq, ddq = rng.normal(size=(15, 3)), rng.normal(size=(15, 3))
    terms = DriveTerms()
    columns = drive_observation_matrix(chain, terms, dq, ddq).reshape(dq.shape[0], 3, -1)  # motor-major columns
    expected = columns @ drive.values(terms).ravel()
    assert_allclose(drive_torques(chain, drive, dq, ddq), expected, atol=1e-12)


def test_smoothed_coulomb_friction_is_tanh() -> None:
    chain = DriveChain.create(1)
    drive = DriveParameters.create(1, coulomb=[2.0])
    dq = np.array([[-0.01], [0.0], [0.001], [1.0]])
    torques = drive_torques(chain, drive, dq, np.zeros_like(dq), coulomb_smoothing_rad_s=0.001)
    assert_allclose(torques[:, 0], 2.0 * np.tanh(dq[:, 0] / 0.001))


def _armature_reference(robot: RobotModel, drive: DriveParameters) -> pin.Model:
    model = robot.model.copy()
    model.armature[:] = drive.rotor_inertia
    return model


def test_free_fall_matches_aba_with_armature(ur5: RobotModel) -> None:
    rotor = DriveParameters.create(6, rotor_inertia=[0.5, 0.4, 0.2, 0.1, 0.08, 0.05])
    settings = SimulationSettings(dt_s=1e-4, kp=0.0, kd=0.0, saturate_effort=False)
    q0 = np.array([0.3, -1.0, 0.8, -0.5, 0.6, 0.1])
    simulator = RobotSimulator(ur5, DriveChain.create(6), rotor, settings, q0=q0)
    duration = 0.3
    for _ in range(round(duration / settings.dt_s)):
        simulator.step(simulator.q, np.zeros(6))
    reference_model = _armature_reference(ur5, rotor)
    data = reference_model.createData()

    def dynamics(_: float, state: np.ndarray) -> np.ndarray:
        return np.concatenate([state[6:], pin.aba(reference_model, data, state[:6], state[6:], np.zeros(6))])

    solution = solve_ivp(dynamics, (0.0, duration), np.concatenate([q0, np.zeros(6)]), rtol=1e-10, atol=1e-12)
    assert np.abs(solution.y[:6, -1] - q0).max() > 0.05, "the arm must actually fall for this test to mean anything"
    assert_allclose(simulator.q, solution.y[:6, -1], atol=2e-4)
    assert_allclose(simulator.dq, solution.y[6:, -1], atol=2e-3)
    assert simulator.time_s == pytest.approx(duration)


def test_viscous_friction_dissipates_the_energy_it_should(ur5: RobotModel) -> None:
    """Without gravity or control, kinetic energy only decreases, by the viscous power ``Σ Fv q̇²`` integrated."""
    model = ur5.model.copy()
    model.gravity.linear[:] = 0.0
    robot = RobotModel(model=model, joint_names=ur5.joint_names, urdf_path=ur5.urdf_path, continuous=ur5.continuous)
    drive = DriveParameters.create(6, rotor_inertia=np.full(6, 0.1), viscous=np.full(6, 2.0))
    settings = SimulationSettings(dt_s=1e-4, kp=0.0, kd=0.0)
    simulator = RobotSimulator(robot, DriveChain.create(6), drive, settings, q0=np.zeros(6))
    simulator.reset(np.zeros(6), np.array([1.0, -0.5, 0.8, 1.2, -1.0, 2.0]))
    energies, dissipated = [], 0.0
    for _ in range(5000):
        energies.append(0.5 * simulator.dq @ simulator.mass_matrix() @ simulator.dq)
        simulator.step(simulator.q, np.zeros(6))
        dissipated += settings.dt_s * drive.viscous @ simulator.dq**2
    energies.append(0.5 * simulator.dq @ simulator.mass_matrix() @ simulator.dq)
    assert np.all(np.diff(energies) <= 0.0)
    assert energies[-1] < 0.5 * energies[0]
    assert_allclose(energies[0] - energies[-1], dissipated, rtol=0.01)


def _slow_ur5_motion(ur5: RobotModel, *, duration_s: float, seed: int) -> tuple[np.ndarray, ...]:
    """A 0.5 Hz, 3-harmonic random Fourier motion of the UR5 at 0.3 of its limits, sampled at 1 kHz for
    ``duration_s``: t (s), q, q̇, q̈."""
    trajectory = random_fourier_trajectory(ur5, fundamental_hz=0.5, harmonics=3, seed=seed).scaled(0.3)
    time = np.arange(0.0, duration_s, 1e-3)
    return (time, *trajectory.evaluate(time))


def test_feedforward_of_inverse_dynamics_makes_tracking_much_better(
    ur5: RobotModel, chain: DriveChain, drive: DriveParameters
) -> None:
    time, q, dq, ddq = _slow_ur5_motion(ur5, duration_s=2.0, seed=3)
    errors = []
    for feedforward in (None, inverse_dynamics(ur5, chain, drive, q, dq, ddq)):
        simulator = RobotSimulator(ur5, chain, drive, SimulationSettings(), q0=q[0])
        simulator.reset(q[0], dq[0])
        run = simulate_tracking(simulator, time, q, dq, ddq, feedforward)
        errors.append(np.sqrt(np.mean(run.tracking_error**2)))
        assert simulator.saturated_steps == 0
    assert errors[1] < 0.05 * errors[0]
    assert errors[0] > 1e-3


def test_measured_torques_follow_inverse_dynamics_along_the_run(
    ur5: RobotModel, chain: DriveChain, drive: DriveParameters
) -> None:
    time, q, dq, ddq = _slow_ur5_motion(ur5, duration_s=1.0, seed=4)
    sensor = SensorModel(current_noise_std_a=0.0)
    simulator = RobotSimulator(ur5, chain, drive, SimulationSettings(sensor=sensor), q0=q[0])
    simulator.reset(q[0], dq[0])
    run = simulate_tracking(simulator, time, q, dq, ddq, inverse_dynamics(ur5, chain, drive, q, dq, ddq))
    expected = inverse_dynamics(ur5, chain, drive, q[:-1], dq[:-1], ddq[:-1])
    moving = np.abs(dq[:-1]) > 0.05  # away from the tanh-smoothed Coulomb step
    assert np.abs(run.joint_torques_nm - expected)[moving].max() < 1.0


def test_a_serial_robot_simulates_the_same_as_its_serial_mechanism(
    ur5: RobotModel, chain: DriveChain, drive: DriveParameters
) -> None:
    time, q, dq, ddq = _slow_ur5_motion(ur5, duration_s=0.2, seed=5)
    sensor = SensorModel(current_noise_std_a=0.01, velocity_noise_std_rad_s=1e-3)
    runs = []
    for mechanism in (ur5, SerialMechanism(ur5)):
        simulator = RobotSimulator(mechanism, chain, drive, SimulationSettings(sensor=sensor), q0=q[0], seed=2)
        runs.append(simulate_tracking(simulator, time, q, dq, ddq))
    for name in ("q", "dq", "currents_a", "tracking_error", "applied_torques_nm", "q_tree", "dq_tree"):
        assert np.array_equal(getattr(runs[0], name), getattr(runs[1], name)), name
    assert_allclose(runs[0].q_tree, q[:-1] + runs[0].tracking_error, atol=1e-12)


def test_a_tracking_run_records_what_stepping_the_simulator_sample_by_sample_records(
    ur5: RobotModel, chain: DriveChain, drive: DriveParameters
) -> None:
    """simulate_tracking senses the whole run at once: the same samples, sensor noise included, as record_step
    called at each step (as a node steps it)."""
    time, q, dq, ddq = _slow_ur5_motion(ur5, duration_s=0.3, seed=6)
    sensor = SensorModel(current_noise_std_a=0.01, velocity_noise_std_rad_s=1e-3)
    simulators = [
        RobotSimulator(ur5, chain, drive, SimulationSettings(sensor=sensor), q0=q[0], seed=7) for _ in range(2)
    ]
    run = simulate_tracking(simulators[0], time, q, dq, ddq)
    stepped = np.array([simulators[1].record_step(q[k], dq[k], ddq[k]) for k in range(time.size - 1)])
    for index, name in enumerate(("q", "dq", "joint_torques_nm", "currents_a")):
        assert_allclose(getattr(run, name), stepped[:, index], rtol=1e-12, atol=1e-12, err_msg=name)


def test_a_step_names_the_desired_input_it_refuses(ur5: RobotModel, chain: DriveChain, drive: DriveParameters) -> None:
    simulator = RobotSimulator(ur5, chain, drive, SimulationSettings(), q0=np.zeros(6))
    with pytest.raises(DataError, match="dq_desired must have shape"):
        simulator.step(np.zeros(6), np.zeros(5))
    with pytest.raises(DataError, match="feedforward_nm has a non-finite value"):
        simulator.step(np.zeros(6), np.zeros(6), feedforward_nm=np.array([0.0, 0.0, np.nan, 0.0, 0.0, 0.0]))
    assert np.array_equal(simulator.q, np.zeros(6))


def test_effort_saturation_is_counted(ur5: RobotModel) -> None:
    simulator = RobotSimulator(
        ur5, DriveChain.create(6), DriveParameters.create(6), SimulationSettings(), q0=np.zeros(6)
    )
    simulator.step(np.full(6, 3.0), np.zeros(6))
    assert simulator.saturated_steps == 1
    assert np.all(np.abs(simulator.applied_torques) <= ur5.effort_limits + 1e-9)


def test_quantisation_step_is_one_motor_count_through_the_gear() -> None:
    counts = 4096
    chain = DriveChain.create(6, gear_ratios=GEAR_RATIOS)
    sensor = SensorModel(encoder_counts_per_rev=counts)
    q = np.linspace(-0.01, 0.01, 100001)[:, None] * np.ones(6)
    measured = quantize_positions(chain, sensor, q)
    step = 2.0 * np.pi / (counts * GEAR_RATIOS)
    for j in range(6):
        levels = np.unique(np.round(measured[:, j] / step[j], 6))
        assert_allclose(np.diff(levels), 1.0)
    assert np.all(np.abs(measured - q) <= 0.5 * step + 1e-15)


def test_current_noise_has_the_configured_std() -> None:
    chain = DriveChain.create(2, gear_ratios=[100.0, 50.0], drive_gains=[0.4, 0.3])
    sensor = SensorModel(current_noise_std_a=0.05)
    torques = np.tile([20.0, -5.0], (20000, 1))
    _, currents = measure(chain, sensor, np.zeros((20000, 2)), torques, np.random.default_rng(5))
    assert_allclose(currents.mean(axis=0), chain.motor_currents(torques[:1])[0], atol=0.002)
    assert_allclose(currents.std(axis=0), 0.05, rtol=0.03)
    assert_allclose(chain.joint_torques(currents).mean(axis=0), [20.0, -5.0], atol=0.1)


def test_simulator_measure_adds_configured_noise(ur5: RobotModel) -> None:
    settings = SimulationSettings(sensor=SensorModel(current_noise_std_a=0.03, velocity_noise_std_rad_s=0.01))
    simulator = RobotSimulator(
        ur5, DriveChain.create(6, gear_ratios=GEAR_RATIOS), DriveParameters.create(6), settings, seed=6
    )
    samples = np.array([simulator.measure() for _ in range(5000)])
    assert_allclose(samples[:, 3].std(axis=0), 0.03, rtol=0.06)
    assert_allclose(samples[:, 1].std(axis=0), 0.01, rtol=0.06)


def test_synthesized_measurements_are_seeded_and_exact_without_noise(
    ur5: RobotModel, chain: DriveChain, drive: DriveParameters
) -> None:
    q, dq, ddq = _random_states(10, seed=7)
    time = np.arange(10) * 1e-3
    exact = SensorModel(current_noise_std_a=0.0, encoder_counts_per_rev=2**30)
    q_measured, currents = synthesize_measurements(ur5, chain, drive, time, q, dq, ddq, exact, seed=0)
    assert_allclose(chain.joint_torques(currents), inverse_dynamics(ur5, chain, drive, q, dq, ddq), atol=1e-9)
    assert_allclose(q_measured, q, atol=1e-8)
    noisy = SensorModel()
    first = synthesize_measurements(ur5, chain, drive, time, q, dq, ddq, noisy, seed=3)
    second = synthesize_measurements(ur5, chain, drive, time, q, dq, ddq, noisy, seed=3)
    assert_allclose(first[1], second[1])


def test_default_gains_give_the_requested_bandwidth(ur5: RobotModel, drive: DriveParameters) -> None:
    settings = SimulationSettings(bandwidth_hz=5.0)
    simulator = RobotSimulator(ur5, DriveChain.create(6), drive, settings, q0=np.zeros(6))
    inertia = np.diag(simulator.mass_matrix())
    assert_allclose(np.sqrt(simulator.kp / inertia) / (2 * np.pi), 5.0)
    assert_allclose(simulator.kd / (2.0 * np.sqrt(simulator.kp * inertia)), 1.0)


def test_interpolation_quintic_hits_way_points_and_is_smooth() -> None:
    times = np.array([0.0, 1.0, 2.5])
    positions = np.array([[0.0, 1.0], [0.5, -1.0], [0.2, 0.0]])
    velocities = np.array([[0.0, 0.0], [0.3, 0.1], [0.0, 0.0]])
    accelerations = np.array([[0.0, 0.0], [-0.2, 0.4], [0.0, 0.0]])
    q, dq, ddq = interpolate_trajectory(times, positions, velocities, accelerations, times[:2] + 1e-12)
    assert_allclose(q, positions[:2], atol=1e-9)
    assert_allclose(dq, velocities[:2], atol=1e-9)
    assert_allclose(ddq, accelerations[:2], atol=1e-8)
    grid = np.linspace(0.01, 2.49, 2001)
    q, dq, ddq = interpolate_trajectory(times, positions, velocities, accelerations, grid)
    away = (np.abs(grid - 1.0) > 0.01)[1:-1]  # the jerk jumps at a way point
    assert_allclose(np.gradient(q, grid, axis=0)[1:-1], dq[1:-1], atol=1e-4)
    assert_allclose(np.gradient(dq, grid, axis=0)[1:-1][away], ddq[1:-1][away], atol=1e-3)
    left = interpolate_trajectory(times, positions, velocities, accelerations, 1.0 - 1e-9)
    right = interpolate_trajectory(times, positions, velocities, accelerations, 1.0 + 1e-9)
    assert_allclose(left, right, atol=1e-7)


def test_interpolation_holds_ends_and_is_linear_without_velocities() -> None:
    times = np.array([1.0, 2.0])
    positions = np.array([[0.0], [0.2]])
    q, dq, ddq = interpolate_trajectory(times, positions, None, None, 1.5)
    assert_allclose((q, dq, ddq), ([0.1], [0.2], [0.0]))
    q, dq, _ = interpolate_trajectory(times, positions, np.array([[0.0], [0.5]]), None, 3.0)
    assert_allclose((q, dq), ([0.2], [0.0]))
    q, _, _ = interpolate_trajectory(times, positions, None, None, 0.0)
    assert_allclose(q, [0.0])


def test_bad_inputs_name_the_argument(ur5: RobotModel) -> None:
    with pytest.raises(DataError, match="times must increase"):
        interpolate_trajectory(np.array([0.0, 0.0]), np.zeros((2, 1)), None, None, 0.0)
    with pytest.raises(ModelError, match="kp"):
        RobotSimulator(ur5, DriveChain.create(6), DriveParameters.create(6), SimulationSettings(kp=[1.0, 2.0]))
    with pytest.raises(ModelError, match="dt_s"):
        SimulationSettings(dt_s=0.0)
    with pytest.raises(DataError, match="q must have shape"):
        inverse_dynamics(
            ur5, DriveChain.create(6), DriveParameters.create(6), np.zeros((3, 5)), np.zeros((3, 6)), np.zeros((3, 6))
        )


def test_recorded_torques_are_the_inverse_dynamics_of_the_recorded_motion_without_a_lag(
    ur5: RobotModel, chain: DriveChain, drive: DriveParameters
) -> None:
    """Row k is the state at its stamp and the torque applied from it (as for the five-bar of
    test_closed_loop_simulation): the inverse dynamics at the recorded positions' central differences
    give the applied torques to O(dt), where a one-sample lag would leave about 1 %."""
    time, q, dq, ddq = _slow_ur5_motion(ur5, duration_s=1.0, seed=4)
    simulator = RobotSimulator(ur5, chain, drive, SimulationSettings(), q0=q[0])
    simulator.reset(q[0], dq[0])
    run = simulate_tracking(simulator, time, q, dq, ddq)
    positions, dt = run.q_tree, time[1] - time[0]
    velocities = (positions[2:] - positions[:-2]) / (2.0 * dt)
    accelerations = (positions[2:] - 2.0 * positions[1:-1] + positions[:-2]) / dt**2
    expected = inverse_dynamics(ur5, chain, drive, positions[1:-1], velocities, accelerations)
    moving = np.all(np.abs(velocities) > 0.05, axis=1)  # away from the tanh-smoothed Coulomb step
    applied = run.applied_torques_nm[1:-1][moving]
    assert moving.sum() > 100
    assert np.linalg.norm(applied - expected[moving]) / np.linalg.norm(expected[moving]) < 1e-3
