"""The simulated closed-loop robot against Pinocchio's constrained dynamics, and its sensors."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_allclose

from dynamic_identification.core.errors import ModelError
from dynamic_identification.core.mechanism.closed_loop import ClosedLoopModel, random_motion
from dynamic_identification.core.mechanism.robot import DriveChain, DriveParameters
from dynamic_identification.core.simulation import (
    RobotSimulator,
    SensorModel,
    SimulationSettings,
    TrackingRun,
    constraint_models,
    inverse_dynamics,
    simulate_tracking,
)
from five_bar import load_five_bar, load_four_bar

NOISE_A = 0.01
GAINS = np.array([0.08, 0.09])


@pytest.fixture(scope="module")
def mechanisms() -> dict[str, ClosedLoopModel]:
    """The shipped five-bar (point closure) and the four-bar of the tests (planar closure, continuous crank)."""
    return {
        "five_bar": load_five_bar(),
        "four_bar": load_four_bar(),
    }


@pytest.fixture(params=["five_bar", "four_bar"])
def model(request: pytest.FixtureRequest, mechanisms: dict[str, ClosedLoopModel]) -> ClosedLoopModel:
    """Each of the :func:`mechanisms` in turn."""
    return mechanisms[request.param]


def _forward_dynamics(model: ClosedLoopModel, q: np.ndarray, dq: np.ndarray, torques: np.ndarray) -> np.ndarray:
    """``pinocchio.constraintDynamics`` of the tree with the closures welded, torques on the actuated joints."""
    constraints, _ = constraint_models(model, planar_as_6d=True)
    datas = pin.StdVec_RigidConstraintData()
    for constraint in constraints:
        datas.append(constraint.createData())
    data = model.robot.model.createData()
    pin.initConstraintDynamics(model.robot.model, data, constraints, datas)
    tree_torques = np.zeros(model.n_tree)
    tree_torques[model.actuated] = torques
    configuration = model.robot.configurations(q[None])[0]
    settings = pin.ProximalSettings(1e-14, 1e-10, 50)
    return pin.constraintDynamics(
        model.robot.model, data, configuration, dq, tree_torques, constraints, datas, settings
    )


def test_completed_accelerations_equal_pinocchio_constrained_forward_dynamics(model: ClosedLoopModel) -> None:
    """The passive accelerations of [Briot2012] eq. (4) are those Pinocchio's constraint solver produces."""
    rng = np.random.default_rng(1)
    state = random_motion(model, 8, rng)
    for q, dq in zip(state.q, state.dq, strict=True):
        expected = _forward_dynamics(model, q, dq, rng.uniform(-0.2, 0.2, model.n_actuated))
        actuated = model.actuated
        completed = model.complete_motion(q[actuated][None], dq[actuated][None], expected[actuated][None], q_guess=q)
        assert_allclose(completed.ddq[0], expected, rtol=0.0, atol=1e-9)


def test_inverse_dynamics_inverts_pinocchio_constrained_forward_dynamics(model: ClosedLoopModel) -> None:
    rng = np.random.default_rng(2)
    state = random_motion(model, 8, rng)
    torques = rng.uniform(-0.2, 0.2, (8, model.n_actuated))
    accelerations = np.stack([_forward_dynamics(model, *args) for args in zip(state.q, state.dq, torques, strict=True)])
    chain, no_drive = DriveChain.create(model.n_actuated), DriveParameters.create(model.n_actuated)
    recovered = inverse_dynamics(model, chain, no_drive, state.q, state.dq, accelerations)
    assert_allclose(recovered, torques, rtol=0.0, atol=1e-9)


def _five_bar_run(model: ClosedLoopModel, *, coulomb: float, feedforward: bool) -> TrackingRun:
    """2 s of the five-bar following sines of 0.3 and 0.4 rad at 0.5 and 0.7 Hz."""
    chain = DriveChain.create(2, drive_gains=GAINS)
    drive = DriveParameters.create(
        2, rotor_inertia=[3e-5, 3.5e-5], viscous=[2e-4, 3e-4], coulomb=[coulomb, coulomb], offset=[1e-3, -1e-3]
    )
    settings = SimulationSettings(sensor=SensorModel(current_noise_std_a=NOISE_A, encoder_counts_per_rev=2**14))
    time_s = np.arange(0.0, 2.0, 1e-3)
    amplitude, omega = np.array([0.3, 0.4]), 2.0 * np.pi * np.array([0.5, 0.7])
    q = amplitude * np.sin(omega * time_s[:, None])
    dq = amplitude * omega * np.cos(omega * time_s[:, None])
    ddq = -amplitude * omega**2 * np.sin(omega * time_s[:, None])
    simulator = RobotSimulator(model, chain, drive, settings, seed=3)
    simulator.reset(q[0], dq[0])
    torques = None
    if feedforward:
        desired = model.complete_motion(q, dq, ddq)
        torques = inverse_dynamics(model, chain, drive, desired.q, desired.dq, desired.ddq)
    return simulate_tracking(simulator, time_s, q, dq, ddq, torques)


@pytest.fixture(scope="module")
def five_bar_run(mechanisms: dict[str, ClosedLoopModel]) -> TrackingRun:
    return _five_bar_run(mechanisms["five_bar"], coulomb=0.0, feedforward=False)


def test_applied_torques_equal_inverse_dynamics_of_the_simulated_motion(
    mechanisms: dict[str, ClosedLoopModel], five_bar_run: TrackingRun
) -> None:
    """The simulator is ground truth: what its motors applied is the inverse dynamics of how it moved,
    up to the O(dt) of the integration (accelerations as forward differences of the true velocities)."""
    model = mechanisms["five_bar"]
    run = five_bar_run
    accelerations = np.diff(run.dq_tree, axis=0) / 1e-3
    chain = DriveChain.create(2, drive_gains=GAINS)
    drive = DriveParameters.create(2, rotor_inertia=[3e-5, 3.5e-5], viscous=[2e-4, 3e-4], offset=[1e-3, -1e-3])
    expected = inverse_dynamics(model, chain, drive, run.q_tree[:-1], run.dq_tree[:-1], accelerations)
    applied = run.applied_torques_nm[:-1]
    assert np.linalg.norm(applied - expected) / np.linalg.norm(expected) < 1e-3


def test_simulated_motion_keeps_the_loops_closed(
    mechanisms: dict[str, ClosedLoopModel], five_bar_run: TrackingRun
) -> None:
    model = mechanisms["five_bar"]
    residuals = [np.max(np.abs(model.residual(q))) for q in five_bar_run.q_tree[::50]]
    velocity_errors = [
        np.max(np.abs(model.constraint_jacobian(q) @ dq))
        for q, dq in zip(five_bar_run.q_tree[::50], five_bar_run.dq_tree[::50], strict=True)
    ]
    assert max(residuals) < 1e-12 and max(velocity_errors) < 1e-12


def test_measured_torques_carry_the_current_noise_through_the_drive_gains(five_bar_run: TrackingRun) -> None:
    noise = five_bar_run.joint_torques_nm - five_bar_run.applied_torques_nm
    assert_allclose(np.std(noise, axis=0), NOISE_A * GAINS, rtol=0.1)


def test_measured_positions_lie_on_the_encoder_grid(five_bar_run: TrackingRun) -> None:
    counts = five_bar_run.q / (2.0 * np.pi / 2**14)
    assert_allclose(counts, np.round(counts), rtol=0.0, atol=1e-6)


def test_pd_with_model_feedforward_tracks_within_a_few_encoder_counts(mechanisms: dict[str, ClosedLoopModel]) -> None:
    run = _five_bar_run(mechanisms["five_bar"], coulomb=4e-3, feedforward=True)
    assert np.max(np.abs(run.tracking_error)) < 5 * 2.0 * np.pi / 2**14


def test_coupled_drive_chain_is_refused(mechanisms: dict[str, ClosedLoopModel]) -> None:
    chain = DriveChain.create(2, coupling=[[1.0, 0.0], [1.0, 1.0]])
    with pytest.raises(ModelError, match="uncoupled drive chain"):
        RobotSimulator(mechanisms["five_bar"], chain, DriveParameters.create(2), SimulationSettings())
