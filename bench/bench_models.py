"""[Gautier2013] §V, Cases 1-5 on the simulated 6-axis arm: IDIM-WLS versus PIM-WLS, single versus segmented.

* Case 1 — IDIM-WLS, one Fourier trajectory with all joints moving;
* Case 2 — IDIM-WLS, the segmented trajectory (segment ``k`` holds joints ``1..k-1``);
* Case 3 — PIM-WLS, the trajectory of Case 1;
* Case 4 — PIM-WLS, the segments of Case 2, weighted per segment (block-triangular);
* Case 5 — IDIM on joint 1's equations only, the trajectory of Case 1.

Measurements are the exact inverse dynamics of the planned motion with the drive
chain, friction and rotor inertia of ``config/dynid_arm6.yaml``'s ``sim_robot`` block,
current noise and encoder quantisation. Each case is judged as in [Gautier2013] Table
IV — ``‖ρ‖/‖y‖`` of the measured joint torques of all joints reconstructed through
the IDIM — but on a common validation trajectory none of them was identified on;
[Gautier2013] Table IV reads 0.073, 0.077, 0.53, 0.15, 0.75.

Then [DirectDrive2012]'s five regression models (``dynid identify --model``) on the data of
Case 1, judged the same way: accuracy and wall time of each on the same 6-axis data.

Run: ``.venv/bin/python bench/bench_models.py [--rate 1000] [--optimise]``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dynamic_identification.core.estimation import (
    essential_parameters,
    rank_deficient_columns,
    weighted_least_squares,
)
from dynamic_identification.core.excitation import (
    JointLimits,
    default_segmented_trajectory,
    optimise_fourier,
    random_fourier,
    sample,
)
from dynamic_identification.core.excitation.trajectory import SampledTrajectory
from dynamic_identification.core.identification import (
    IdentificationResult,
    IdentificationSettings,
    PreparedObservations,
    ReductionSettings,
    SignalSettings,
    identify,
    prepare_observations,
)
from dynamic_identification.core.identification.regression_models import MODELS, identify_model
from dynamic_identification.core.mechanism.robot import DriveChain, DriveParameters, DriveTerms, RobotModel, load_robot
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.regressors.idim import BaseParameters
from dynamic_identification.core.regressors.power import identify_power, split_segments, torque_relative_error
from dynamic_identification.core.simulation import SensorModel, synthesize_measurements
from dynamic_identification.io.config import load_config, simulated_robot
from dynamic_identification.resources import shipped_path

PAPER = (0.0726, 0.0765, 0.5346, 0.1545, 0.7485)
"""[Gautier2013] Table IV, Cases 1-5."""


@dataclass(frozen=True)
class Arm:
    dynamic_model: DynamicModel
    drive: DriveParameters
    sensor: SensorModel

    @property
    def robot(self) -> RobotModel:
        return self.dynamic_model.mechanism.robot

    @property
    def chain(self) -> DriveChain:
        return self.dynamic_model.drive_chain

    @property
    def terms(self) -> DriveTerms:
        return self.dynamic_model.terms

    @property
    def base(self) -> BaseParameters:
        return self.dynamic_model.base


def shipped_arm() -> Arm:
    """The shipped arm with the simulated robot's drive chain, friction and sensors."""
    robot = load_robot(shipped_path("urdf", "dynid_arm6.urdf"))
    config = shipped_path("config", "dynid_arm6.yaml")
    chain = load_config(str(config)).drive_chain(robot.n_joints)
    simulated = simulated_robot(config, robot.n_joints)
    drive, sensor = simulated.drive, simulated.sensor
    return Arm(DynamicModel.create(robot, chain, DriveTerms()), drive, sensor)


def record(arm: Arm, trajectory: SampledTrajectory, *, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Measured ``(time, q, joint torques)`` of a planned trajectory (quantised positions, noisy currents)."""
    q, currents = synthesize_measurements(
        arm.robot,
        arm.chain,
        arm.drive,
        trajectory.time,
        trajectory.q,
        trajectory.dq,
        trajectory.ddq,
        arm.sensor,
        seed=seed,
    )
    return trajectory.time, q, arm.chain.joint_torques(currents)


def joint_subset(
    arm: Arm, observations: PreparedObservations, joints: list[int], settings: IdentificationSettings
) -> IdentificationResult:
    """IDIM-WLS on the equations of some joints only ([Gautier2013] Case 5, eq. (24))."""
    valid = observations.valid.copy()
    valid[:, np.setdiff1d(np.arange(arm.robot.n_joints), joints)] = False
    unexcited = rank_deficient_columns(observations.observation_matrix, valid=valid)
    kept = np.setdiff1d(np.arange(arm.base.count), unexcited)
    removed = [(arm.base.names[i], "not in the equations used") for i in unexcited]
    matrix = observations.observation_matrix[..., kept]
    names = tuple(arm.base.names[i] for i in kept)
    if settings.reduction.method == "essential":
        essential = essential_parameters(
            matrix, observations.torques, r_sigma=settings.reduction.r_sigma, parameter_names=names, valid=valid
        )
        removed += [(names[i], "not essential") for i in essential.removed]
        kept, estimate = kept[essential.kept], essential.result
    else:
        estimate = weighted_least_squares(matrix, observations.torques, parameter_names=names, valid=valid)
    return IdentificationResult(
        base=arm.base,
        names=tuple(arm.base.names[i] for i in kept),
        expressions=tuple(arm.base.expressions[i] for i in kept),
        estimate=estimate,
        removed=tuple(removed),
        observations=observations,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=1000.0, help="sample rate, Hz")
    parser.add_argument("--fundamental", type=float, default=0.1, help="Fourier fundamental, Hz")
    parser.add_argument("--harmonics", type=int, default=5)
    parser.add_argument(
        "--optimise", action="store_true", help="Case 1 trajectory optimised for cond (5000 cost evaluations)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--reduction",
        choices=("essential", "none"),
        default="none",
        help="essential: [Gautier2013] §V.B with r_sigma = 20",
    )
    arguments = parser.parse_args()

    arm = shipped_arm()
    robot, n = arm.robot, arm.robot.n_joints
    limits = JointLimits.from_robot(robot, velocity_scale=0.8, acceleration_scale=0.8)
    settings = IdentificationSettings(
        signal=SignalSettings(position_cutoff_hz=20.0),
        reduction=ReductionSettings(method=arguments.reduction, r_sigma=20.0),
    )
    rate, period = arguments.rate, 1.0 / arguments.fundamental
    fourier = dict(fundamental_hz=arguments.fundamental, harmonics=arguments.harmonics)

    dynamic_model = arm.dynamic_model
    start = time.perf_counter()
    if arguments.optimise:
        design = optimise_fourier(
            dynamic_model,
            limits,
            **fourier,
            seed=arguments.seed,
            time_budget_s=float("inf"),
            max_evaluations=5000,  # max_evaluations' default: the same design at any load
        )
        single_motion = design.trajectory
    else:
        single_motion = random_fourier(robot, limits, **fourier, seed=arguments.seed)
    # As much data as the segmented trajectory: one period per segment.
    single = record(arm, sample(single_motion, np.arange(0.0, n * period, 1.0 / rate), robot.joint_names), seed=1)
    segmented = default_segmented_trajectory(robot, limits, rate_hz=rate, seed=arguments.seed + 1, **fourier)
    segmented_data = record(arm, segmented.trajectory, seed=2)
    segments = split_segments(*segmented_data, segmented.segments)
    validation_motion = random_fourier(robot, limits, **fourier, seed=arguments.seed + 100)
    validation_data = record(
        arm, sample(validation_motion, np.arange(0.0, 2.0 * period, 1.0 / rate), robot.joint_names), seed=3
    )
    validation = prepare_observations(dynamic_model, *validation_data, settings=settings)
    print(
        f"data: {single[0].size} samples single, {segmented_data[0].size} segmented ({n} segments),"
        f" {validation_data[0].size} validation, at {rate:g} Hz; {arm.base.count} base parameters;"
        f" prepared in {time.perf_counter() - start:.1f} s"
    )

    cases: list[tuple[str, Callable[[], IdentificationResult]]] = [
        (
            "1 IDIM-WLS single",
            lambda: identify(dynamic_model, *single, settings=settings),
        ),
        (
            "2 IDIM-WLS segmented",
            lambda: identify(dynamic_model, *segmented_data, settings=settings),
        ),
        (
            "3 PIM-WLS single",
            lambda: identify_power(dynamic_model, [single], settings=settings),
        ),
        (
            "4 PIM-WLS segmented",
            lambda: identify_power(dynamic_model, segments, settings=settings),
        ),
        (
            "5 IDIM joint 1 only",
            lambda: joint_subset(
                arm,
                prepare_observations(dynamic_model, *single, settings=settings),
                [0],
                settings,
            ),
        ),
    ]
    truth = arm.base.from_standard(
        np.concatenate([robot.standard_inertial_parameters(), arm.drive.values(arm.terms)], axis=1).ravel()
    )
    floor = np.where(validation.valid, validation.torques - validation.observation_matrix @ truth, 0.0)
    print(
        f"noise floor (true parameters): ||rho||/||y|| = "
        f"{np.linalg.norm(floor) / np.linalg.norm(np.where(validation.valid, validation.torques, 0.0)):.4f}"
    )
    print(f"{'case':<22} {'||rho||/||y||':>13} {'[Gautier2013]':>9} {'kept':>5} {'cond':>9} {'wall s':>7}")
    for (label, run), paper in zip(cases, PAPER, strict=True):
        start = time.perf_counter()
        result = run()
        wall = time.perf_counter() - start
        error = torque_relative_error(result, validation)
        print(
            f"{label:<22} {error:>13.4g} {paper:>9.4f} {len(result.names):>5d}"
            f" {result.estimate.condition_number:>9.3g} {wall:>7.2f}"
        )

    measured = np.where(validation.valid, validation.torques, 0.0)
    print(
        "\n[DirectDrive2012]'s regression models on the data of case 1\n"
        f"{'model':<22} {'||rho||/||y||':>13} {'kept':>5} {'wall s':>7}"
    )
    for model in MODELS:
        start = time.perf_counter()
        estimate = identify_model(dynamic_model, *single, model=model, settings=settings)
        wall = time.perf_counter() - start
        residual = np.where(
            validation.valid, validation.torques - validation.observation_matrix @ estimate.parameters, 0.0
        )
        print(
            f"{model:<22} {np.linalg.norm(residual) / np.linalg.norm(measured):>13.4g}"
            f" {int(estimate.excited.sum()):>5d} {wall:>7.2f}"
        )


if __name__ == "__main__":
    main()
