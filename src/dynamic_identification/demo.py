"""``dynid demo``: identify the shipped 6-axis arm from a simulated excitation run.

The simulated arm (Pinocchio forward dynamics, rotor inertia, viscous and Coulomb
friction, drive gains, current noise, encoder quantisation, PD tracking) follows
a periodic Fourier excitation; the run is written as a recording CSV and
identified through the same code path as ``dynid identify``. A second run on a
different trajectory validates the model through ``dynid predict``, and, since
the simulator's parameters are known, every identified base parameter is
compared with its true value.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dynamic_identification import api
from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.model import DriveChain, DriveParameters, RobotModel, load_robot, standard_parameters
from dynamic_identification.core.regressors import base_parameters
from dynamic_identification.core.simulation import RobotSimulator, SensorModel, SimulationSettings, simulate_tracking
from dynamic_identification.io.config import load_config, ros_parameters
from dynamic_identification.io.parameters import load_parameters
from dynamic_identification.io.recording import Recording, recording_from_arrays, write_recording_csv
from dynamic_identification.resources import shipped_path

SIMULATION_RATE_HZ = 1000.0


def simulated_robot(config: Path, robot: RobotModel, *, seed: int) -> RobotSimulator:
    """The simulator configured by the ``sim_robot`` block of ``config``."""
    parameters = ros_parameters(config, "sim_robot")
    n = robot.n_joints
    chain = DriveChain.create(n, gear_ratios=parameters["gear_ratios"], drive_gains=parameters["drive_gains"])
    drive = DriveParameters.create(
        n,
        rotor_inertia=parameters["rotor_inertia"],
        viscous=parameters["viscous_friction"],
        coulomb=parameters["coulomb_friction"],
        offset=parameters["offset"],
    )
    sensor = SensorModel(
        current_noise_std_a=float(parameters["current_noise_std"]),
        encoder_counts_per_rev=int(parameters["encoder_counts"]),
    )
    settings = SimulationSettings(dt_s=1.0 / SIMULATION_RATE_HZ, sensor=sensor)
    return RobotSimulator(robot, chain, drive, settings, seed=seed)


def simulated_recording(simulator: RobotSimulator, *, duration_s: float, seed: int) -> tuple[Recording, np.ndarray]:
    """Track a random Fourier excitation (0.1 Hz, 5 harmonics) and record it like the recorder node would.

    Returns the recording and the noise-free joint torques the motors applied (N·m).
    """
    robot = simulator.robot
    trajectory = random_fourier_trajectory(
        robot, fundamental_hz=0.1, harmonics=5, margin=0.2, velocity_fraction=0.5, seed=seed
    )
    time = np.arange(0.0, duration_s, simulator.settings.dt_s)
    q, dq, ddq = trajectory.evaluate(time)
    simulator.reset(q[0], dq[0], time_s=0.0)
    run = simulate_tracking(simulator, time, q, dq, ddq)
    recording = recording_from_arrays(
        time=run.time_s, joint_names=robot.joint_names, position=run.q, velocity=run.dq, current=run.currents_a
    )
    return recording, run.applied_torques_nm


@dataclass(frozen=True)
class Validation:
    """Prediction quality of the identified model on a fresh run of another trajectory.

    ``moving_errors`` (per joint) and ``overall_error`` are relative norms against
    the noise-free motor torques; ``moving_errors`` only counts samples where the
    joint moves faster than ``min_speed_rad_s`` (at a velocity reversal the joint
    sticks and no ``Fc sign(q̇)`` model predicts its friction).
    """

    samples: int
    min_speed_rad_s: float
    moving_errors: np.ndarray
    overall_error: float
    recorded_error: float
    noise_level: float


@dataclass(frozen=True)
class DemoResult:
    """What ``dynid demo`` found: the identification report, validation and truth comparison."""

    identification_report: str
    validation: Validation
    names: tuple[str, ...]
    true_values: np.ndarray
    identified_values: np.ndarray
    std: np.ndarray

    @property
    def deviations_in_sigma(self) -> np.ndarray:
        """``(identified − true) / σ`` per parameter."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return (self.identified_values - self.true_values) / self.std


def run(*, out_dir: Path, duration_s: float = 60.0, seed: int = 1) -> str:
    """Simulate, identify, validate; write CSV and YAML files to ``out_dir`` and return the report."""
    return format_result(identify_simulated_arm(out_dir=out_dir, duration_s=duration_s, seed=seed), duration_s)


def identify_simulated_arm(*, out_dir: Path, duration_s: float = 60.0, seed: int = 1) -> DemoResult:
    """Simulate the shipped arm, identify it through ``dynid identify`` and validate it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    urdf = shipped_path("urdf", "dynid_arm6.urdf")
    config = shipped_path("config", "dynid_arm6.yaml")
    robot = load_robot(urdf, load_config(str(config)).joints)
    simulator = simulated_robot(config, robot, seed=seed)

    excitation = out_dir / "excitation.csv"
    write_recording_csv(excitation, simulated_recording(simulator, duration_s=duration_s, seed=seed)[0])
    parameters_path = out_dir / "parameters.yaml"
    report = api.identify_file(urdf=urdf, data=excitation, config=config, out=parameters_path)
    validation = _validation(robot, simulator, parameters_path, config, out_dir, seed=seed + 1000)

    identified = load_parameters(parameters_path)
    terms = identified.drive_terms()
    base = base_parameters(robot, simulator.drive_chain, terms)
    truth = dict(zip(base.names, base.from_standard(standard_parameters(robot, terms, simulator.drive)), strict=True))
    values = np.array([entry.value for entry in identified.parameters])
    percent = np.array([np.inf if entry.std_percent is None else entry.std_percent for entry in identified.parameters])
    return DemoResult(
        identification_report=report,
        validation=validation,
        names=tuple(entry.name for entry in identified.parameters),
        true_values=np.array([truth[entry.name] for entry in identified.parameters]),
        identified_values=values,
        std=np.abs(values) * percent / 100.0,
    )


def _validation(
    robot: RobotModel, simulator: RobotSimulator, parameters_path: Path, config: Path, out_dir: Path, *, seed: int
) -> Validation:
    """Predict a fresh 30 s run on another trajectory; compare with recorded and noise-free torques."""
    recording, noise_free = simulated_recording(simulator, duration_s=30.0, seed=seed)
    write_recording_csv(out_dir / "validation.csv", recording)
    signal = api.settings_from_config(load_config(str(config))).signal
    predicted, covered = api.predicted_recording(robot, load_parameters(parameters_path), recording, signal)
    write_recording_csv(out_dir / "validation_predicted.csv", predicted)
    measured = recording.joint_torques(simulator.drive_chain)[covered]
    truth = noise_free[covered]
    error = predicted.effort - truth
    moving = np.abs(recording.velocity[covered]) >= signal.min_speed_rad_s
    return Validation(
        samples=int(predicted.time.shape[0]),
        min_speed_rad_s=signal.min_speed_rad_s,
        moving_errors=np.array(
            [
                np.linalg.norm(error[moving[:, j], j]) / np.linalg.norm(truth[moving[:, j], j])
                for j in range(robot.n_joints)
            ]
        ),
        overall_error=float(np.linalg.norm(error) / np.linalg.norm(truth)),
        recorded_error=float(np.linalg.norm(predicted.effort - measured) / np.linalg.norm(measured)),
        noise_level=float(np.linalg.norm(measured - truth) / np.linalg.norm(truth)),
    )


def format_result(result: DemoResult, duration_s: float) -> str:
    """The demo's printed report."""
    validation = result.validation
    lines = [
        f"simulated {duration_s:g} s of excitation at {SIMULATION_RATE_HZ:g} Hz",
        result.identification_report,
        "",
        f"validation on a different trajectory (30 s, {validation.samples} samples):",
        "  relative error against the noise-free torques where the joint moves faster than"
        f" {validation.min_speed_rad_s} rad/s:",
        "    " + ", ".join(f"joint {j + 1} {value:.4f}" for j, value in enumerate(validation.moving_errors)),
        f"  all samples, stick phases at velocity reversals included: {validation.overall_error:.4f}",
        f"  against the recorded torques: {validation.recorded_error:.4f}"
        f" (current noise alone: {validation.noise_level:.4f})",
        "",
        "identified vs true base parameters (simulation):",
        f"{'parameter':<10} {'true':>12} {'identified':>12} {'dev/σ':>7}",
    ]
    for name, true, value, deviation in zip(
        result.names, result.true_values, result.identified_values, result.deviations_in_sigma, strict=True
    ):
        lines.append(f"{name:<10} {true:>12.5g} {value:>12.5g} {deviation:>7.2f}")
    return "\n".join(lines)
