"""Power identification model ([Gautier2013] §III-V): energy regressor, PIM observations, block-triangular PIM-WLS."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_allclose

from dynamic_identification.core.errors import DataError
from dynamic_identification.core.estimation import rank_deficient_columns, weighted_least_squares
from dynamic_identification.core.excitation import (
    JointLimits,
    default_segmented_trajectory,
    random_fourier,
    random_fourier_trajectory,
    sample,
)
from dynamic_identification.core.excitation.trajectory import SampledTrajectory
from dynamic_identification.core.identification import (
    IdentificationResult,
    IdentificationSettings,
    PreparedObservations,
    SignalSettings,
    identify,
    prepare_observations,
)
from dynamic_identification.core.mechanism.robot import (
    DriveChain,
    DriveParameters,
    DriveTerms,
    RobotModel,
    load_robot,
    standard_parameters,
)
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.regressors.idim import (
    BaseParameters,
    base_parameters,
    observation_matrix,
    random_motion,
)
from dynamic_identification.core.regressors.power import (
    Recording,
    energy_matrix,
    friction_power_matrix,
    identify_power,
    power_observations,
    split_segments,
    torque_relative_error,
)
from dynamic_identification.core.simulation import inverse_dynamics, synthesize_measurements
from dynamic_identification.io.config import simulated_robot

CONFIG = Path(__file__).resolve().parents[3] / "config" / "dynid_arm6.yaml"
TERMS = DriveTerms()


def _coupled_chain(n: int) -> DriveChain:
    """Gear ratios with a TX-40-like wrist coupling ([Gautier2013] eq. (25)): motor n turns with joints n-1 and n."""
    coupling = np.eye(n)
    coupling[n - 1, n - 2] = 1.0
    return DriveChain.create(n, gear_ratios=np.linspace(100.0, 50.0, n), coupling=coupling)


def _drive(n: int) -> DriveParameters:
    return DriveParameters.create(
        n,
        rotor_inertia=np.linspace(0.5, 0.05, n),
        viscous=np.linspace(6.9, 0.5, n),
        coulomb=np.linspace(6.7, 1.8, n),
        offset=np.linspace(0.3, -0.2, n),
    )


@pytest.fixture(params=["arm6", "ur5"])
def robot(request: pytest.FixtureRequest, arm6_urdf: Path, example_urdf: Callable[[str], Path]) -> RobotModel:
    return load_robot(arm6_urdf if request.param == "arm6" else example_urdf("ur5_robot.urdf"))


def test_energy_regressor_times_standard_parameters_is_total_energy(robot: RobotModel) -> None:
    n = robot.n_joints
    chain, drive = _coupled_chain(n), _drive(n)
    q, dq, _ = random_motion(robot, 40, np.random.default_rng(0))
    energy = energy_matrix(robot, chain, TERMS, q, dq) @ standard_parameters(robot, TERMS, drive)
    data = robot.model.createData()
    expected = []
    for configuration, velocity in zip(robot.configurations(q), dq, strict=True):
        mass = pin.crba(robot.model, data, configuration)
        mass = np.triu(mass) + np.triu(mass, 1).T
        inertia = mass + chain.coupling.T @ np.diag(drive.rotor_inertia) @ chain.coupling
        expected.append(
            0.5 * velocity @ inertia @ velocity + pin.computePotentialEnergy(robot.model, data, configuration)
        )
    assert_allclose(energy, expected, rtol=1e-12, atol=1e-9)


def test_energy_rate_plus_friction_power_is_the_power_of_the_inverse_dynamics(robot: RobotModel) -> None:
    n = robot.n_joints
    chain, drive = _coupled_chain(n), _drive(n)
    theta = standard_parameters(robot, TERMS, drive)
    trajectory = random_fourier_trajectory(robot, margin=0.2, velocity_fraction=0.5, seed=1)
    time = np.linspace(1.0, 9.0, 25)
    dt = 1e-5

    def energy(t: np.ndarray) -> np.ndarray:
        q, dq, _ = trajectory.evaluate(t)
        return energy_matrix(robot, chain, TERMS, q, dq) @ theta

    q, dq, ddq = trajectory.evaluate(time)
    power = (energy(time + dt) - energy(time - dt)) / (2.0 * dt) + friction_power_matrix(chain, TERMS, dq) @ theta
    expected = np.sum(dq * inverse_dynamics(robot, chain, drive, q, dq, ddq), axis=1)
    # Central differences: truncation dt²/6 |H'''| ~ 1e-9 W; rounding eps |H| / dt ~ 1e-8 W for |H| ~ 100 J.
    assert_allclose(power, expected, rtol=1e-8, atol=1e-6)


def test_base_columns_give_the_energy_of_the_full_model_up_to_a_constant(robot: RobotModel) -> None:
    """The IDIM regrouping holds for the energy up to a constant (e.g. potential energy no torque sees)."""
    n = robot.n_joints
    chain, drive = _coupled_chain(n), _drive(n)
    base = base_parameters(robot, chain, TERMS)
    theta = standard_parameters(robot, TERMS, drive)
    q, dq, ddq = random_motion(robot, 40, np.random.default_rng(2))
    h = energy_matrix(robot, chain, TERMS, q, dq)
    difference = h @ theta - base.select(h) @ base.from_standard(theta)
    assert_allclose(difference - difference[0], 0.0, atol=1e-9 * np.abs(h @ theta).max())
    # Power columns are q̇ᵀ times the IDIM columns, so the PIM has the IDIM's base parameters.
    idim = observation_matrix(robot, chain, TERMS, q, dq, ddq)
    pim_of_idim = np.einsum("kj,kjp->kp", dq, idim)
    assert_allclose(pim_of_idim @ theta, base.select(pim_of_idim) @ base.from_standard(theta), atol=1e-9, rtol=1e-9)


def test_friction_power_columns_are_motor_speed_terms() -> None:
    chain = _coupled_chain(3)
    dq = np.array([[0.5, -1.0, 2.0], [0.0, 0.3, -0.3]])
    columns = friction_power_matrix(chain, TERMS, dq).reshape(2, 3, 14)
    motor = dq @ chain.coupling.T
    assert_allclose(columns[..., 11], motor**2)
    assert_allclose(columns[..., 12], np.abs(motor))
    assert_allclose(columns[..., 13], motor)
    assert not columns[..., :11].any()


def test_power_observations_of_exact_data_reproduce_the_power(arm6_urdf: Path) -> None:
    robot = load_robot(arm6_urdf)
    n = robot.n_joints
    chain, drive = _coupled_chain(n), _drive(n)
    base = base_parameters(robot, chain, TERMS)
    rate = 500.0
    trajectory = random_fourier_trajectory(robot, margin=0.2, velocity_fraction=0.5, seed=4)
    time = np.arange(0.0, 6.0, 1.0 / rate)
    q, dq, ddq = trajectory.evaluate(time)
    torques = inverse_dynamics(robot, chain, drive, q, dq, ddq)
    settings = IdentificationSettings(signal=SignalSettings(position_cutoff_hz=20.0))
    observations = power_observations(
        DynamicModel.create(robot, chain, TERMS, base), [(time, q, torques)], settings=settings
    )
    assert observations.observation_matrix.shape[1:] == (1, base.count)
    assert observations.valid.all()
    predicted = observations.observation_matrix[:, 0] @ base.from_standard(standard_parameters(robot, TERMS, drive))
    # The position filter and central differences act on P and on W alike but not identically
    # (P = q̂̇ᵀ τ with exact τ): a small relative mismatch remains.
    power = observations.torques[:, 0]
    assert np.linalg.norm(predicted - power) / np.linalg.norm(power) < 1e-3


def test_power_observations_put_each_trajectory_in_its_own_column(arm6_urdf: Path) -> None:
    robot = load_robot(arm6_urdf)
    n = robot.n_joints
    chain, drive = _coupled_chain(n), _drive(n)
    base = base_parameters(robot, chain, TERMS)
    recordings = []
    for seed, duration in ((5, 4.0), (6, 3.0)):
        trajectory = random_fourier_trajectory(robot, margin=0.2, velocity_fraction=0.5, seed=seed)
        time = np.arange(0.0, duration, 1.0 / 500.0)
        q, dq, ddq = trajectory.evaluate(time)
        recordings.append((time, q, inverse_dynamics(robot, chain, drive, q, dq, ddq)))
    observations = power_observations(DynamicModel.create(robot, chain, TERMS, base), recordings)
    assert observations.observation_matrix.shape[1] == 2
    counts = observations.valid.sum(axis=0)
    assert counts[0] > counts[1] > 0
    assert not observations.observation_matrix[counts[1] :, 1].any()


def test_power_observations_refuse_an_empty_list(arm6_urdf: Path) -> None:
    robot = load_robot(arm6_urdf)
    chain = _coupled_chain(robot.n_joints)
    with pytest.raises(DataError, match="recordings"):
        power_observations(DynamicModel.create(robot, chain, TERMS, base_parameters(robot, chain, TERMS)), [])


def _joint_one_only(observations: PreparedObservations, base: BaseParameters) -> IdentificationResult:
    """IDIM-WLS on joint 1's equations only ([Gautier2013] Case 5, eq. (24))."""
    valid = observations.valid.copy()
    valid[:, 1:] = False
    unexcited = rank_deficient_columns(observations.observation_matrix, valid=valid)
    kept = np.setdiff1d(np.arange(base.count), unexcited)
    names = tuple(base.names[i] for i in kept)
    estimate = weighted_least_squares(
        observations.observation_matrix[..., kept], observations.torques, parameter_names=names, valid=valid
    )
    return IdentificationResult(
        base=base,
        names=names,
        expressions=tuple(base.expressions[i] for i in kept),
        estimate=estimate,
        removed=tuple((base.names[i], "not in joint 1's equations") for i in unexcited),
        observations=observations,
    )


def test_seed_000_cases_block_triangular_pim_rivals_idim(arm6_urdf: Path) -> None:
    """[Gautier2013] Table IV, qualitatively: PIM on one trajectory and IDIM on joint 1 only reconstruct the
    torques poorly; PIM on the segmented (block-triangular) trajectories is close to IDIM-WLS."""
    robot = load_robot(arm6_urdf)
    n = robot.n_joints
    sim = simulated_robot(CONFIG, n)
    chain, drive, sensor = sim.drive_chain, sim.drive, sim.sensor
    base = base_parameters(robot, chain, TERMS)
    limits = JointLimits.from_robot(robot, velocity_scale=0.8, acceleration_scale=0.8)
    rate, fundamental, harmonics = 500.0, 0.1, 5
    settings = IdentificationSettings(signal=SignalSettings(position_cutoff_hz=20.0))

    def record(path: SampledTrajectory, seed: int) -> Recording:
        measured, currents = synthesize_measurements(
            robot, chain, drive, path.time, path.q, path.dq, path.ddq, sensor, seed=seed
        )
        return path.time, measured, chain.joint_torques(currents)

    def fourier(seed: int, duration_s: float) -> Recording:
        motion = random_fourier(robot, limits, fundamental_hz=fundamental, harmonics=harmonics, seed=seed)
        return record(sample(motion, np.arange(0.0, duration_s, 1.0 / rate), robot.joint_names), seed)

    single = fourier(10, n / fundamental)
    segmented = default_segmented_trajectory(
        robot, limits, rate_hz=rate, seed=11, fundamental_hz=fundamental, harmonics=harmonics
    )
    segments = split_segments(*record(segmented.trajectory, 12), segmented.segments)
    dynamic_model = DynamicModel.create(robot, chain, TERMS, base)
    validation = prepare_observations(dynamic_model, *fourier(13, 1.0 / fundamental), settings=settings)

    case_1 = identify(dynamic_model, *single, settings=settings)
    case_3 = identify_power(dynamic_model, [single], settings=settings)
    case_4 = identify_power(dynamic_model, segments, settings=settings)
    idim_single = prepare_observations(dynamic_model, *single, settings=settings)
    case_5 = _joint_one_only(idim_single, base)
    error_1, error_3, error_4, error_5 = (
        torque_relative_error(result, validation) for result in (case_1, case_3, case_4, case_5)
    )
    # [Gautier2013] Table IV: 0.073 (Case 1), 0.53 (Case 3), 0.15 (Case 4), 0.75 (Case 5). Here Case 1 sits
    # near the noise floor (~0.016); Case 5 is far worse still, its weakly excited parameters unbounded.
    assert error_1 < 0.05
    assert error_3 > 3.0 * error_1
    assert error_4 <= 2.0 * error_1
    assert error_5 > 3.0 * error_1
    # Per-segment weighting: the wrist-only segments, whose power is small, get the smallest σ.
    assert case_4.estimate.joint_std[-1] < case_4.estimate.joint_std[0]
