"""Physically consistent estimate, HAC σ and URDF export: wall time per call and what they cost.

Issue 12 benchmark. For the shipped 6-axis arm (p = 84 standard parameters) and the Panda's
7 arm joints (p = 98, fingers locked) it identifies a noisy Fourier recording with
``identify`` (WLS, [Gautier2013] eq. (20)) and then times:

* ``ConsistentEstimator.solve`` ([Wensing2018] LMIs, cvxpy + Clarabel): the first call
  (compiles the problem) and the median of repeated calls (the in-process estimator's case);
* the fit cost of the constraint when the unconstrained estimate is not consistent
  (a short, noisy recording, and one with a negative Coulomb friction in the data);
* ``hac_covariance`` on the decimated rows;
* ``export_urdf`` and the largest torque error of the reloaded URDF.

Run: ``.venv/bin/python bench/bench_consistency.py [--repeats 20]``
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile
import time

import numpy as np
import pinocchio as pin
from _common import example_robot_file

from dynamic_identification.core.estimation import NormalEquations
from dynamic_identification.core.estimation.consistency import ConsistentEstimator
from dynamic_identification.core.estimation.uncertainty import hac_covariance
from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.identification import identify
from dynamic_identification.core.mechanism.robot import (
    DriveChain,
    DriveParameters,
    DriveTerms,
    RobotModel,
    load_robot,
    standard_parameters,
)
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.regressors.idim import base_parameters, observation_matrix, random_motion
from dynamic_identification.io.urdf_export import attached_inertias, write_urdf
from dynamic_identification.resources import shipped_path


def _case(robot: RobotModel, *, duration_s: float, noise_nm: float, coulomb: float, repeats: int) -> None:
    n = robot.n_joints
    chain = DriveChain.create(n, gear_ratios=np.full(n, 100.0))
    terms = DriveTerms()
    base = base_parameters(robot, chain, terms)
    drive = DriveParameters.create(
        n,
        rotor_inertia=np.full(n, 0.1),
        viscous=np.full(n, 2.0),
        coulomb=np.r_[coulomb, np.full(n - 1, 3.0)],
        offset=np.zeros(n),
    )
    truth = standard_parameters(robot, terms, drive)
    trajectory = random_fourier_trajectory(robot, fundamental_hz=0.1, harmonics=5, seed=1, margin=0.15)
    time_s = np.arange(0.0, duration_s, 1e-3)
    q, dq, ddq = trajectory.evaluate(time_s)
    rng = np.random.default_rng(0)
    torques = observation_matrix(robot, chain, terms, q, dq, ddq) @ truth + rng.normal(0.0, noise_nm, q.shape)
    started = time.perf_counter()
    result = identify(DynamicModel.create(robot, chain, terms, base), time_s, q, torques)
    identify_s = time.perf_counter() - started
    observations = result.observations
    equations = NormalEquations.from_rows(observations.observation_matrix, observations.torques, observations.valid)
    kept = base.subset(result.names)
    estimator = ConsistentEstimator(base, terms, standard_parameters(robot, terms), attached=attached_inertias(robot))
    first = estimator.solve(equations, result.estimate.joint_std, kept)
    times = [estimator.solve(equations, result.estimate.joint_std, kept).solve_time_s for _ in range(repeats)]
    started = time.perf_counter()
    covariance = hac_covariance(
        observations.observation_matrix[..., kept],
        observations.torques,
        result.estimate.parameters,
        joint_std=result.estimate.joint_std,
        valid=observations.valid,
    )
    hac_s = time.perf_counter() - started
    print(
        f"  {duration_s:4.0f} s, noise {noise_nm} N·m, Fc1 {coulomb:+.1f}: identify {identify_s:.2f} s;"
        f" p = {truth.size}, kept {kept.size}/{base.count}; consistent solve first {first.solve_time_s * 1e3:.0f} ms,"
        f" then median {np.median(times) * 1e3:.1f} ms (min {np.min(times) * 1e3:.1f}) [{first.solver_status}]"
    )
    print(
        f"        shift {first.shift_sigma:.3g} σ, weighted-residual increase {100 * first.cost_increase:.3g} %,"
        f" ‖ρ‖/‖Y‖ {first.relative_error_unconstrained:.5f} → {first.relative_error:.5f};"
        f" active: {', '.join(first.active) or 'none'}"
    )
    print(
        f"        HAC {hac_s * 1e3:.0f} ms, bandwidth {covariance.bandwidth} rows,"
        f" median σ inflation over eq. (18) {np.median(covariance.inflation):.2f}"
    )
    with tempfile.TemporaryDirectory() as folder:
        out = pathlib.Path(folder) / "identified.urdf"
        started = time.perf_counter()
        export = write_urdf(out, robot, first.standard, terms, drive_chain=chain)
        export_s = time.perf_counter() - started
        reloaded = load_robot(out, robot.joint_names)
        q_r, dq_r, ddq_r = random_motion(robot, 200, np.random.default_rng(5))
        rigid = DriveTerms(False, False, False, False)
        inertial = first.standard.reshape(robot.n_joints, -1)[:, :10].ravel()
        expected = observation_matrix(robot, chain, rigid, q_r, dq_r, ddq_r) @ inertial
        data = reloaded.model.createData()
        configurations = reloaded.configurations(q_r)
        actual = np.array([pin.rnea(reloaded.model, data, configurations[k], dq_r[k], ddq_r[k]) for k in range(200)])
        error = np.abs(actual - expected).max()
        print(
            f"        URDF export {export_s * 1e3:.0f} ms, reloaded rnea error {error:.2g} N·m"
            f" (max torque {np.abs(expected).max():.3g}); zeroed links: {', '.join(export.zeroed) or 'none'}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20, help="repeated solves timed per case")
    arguments = parser.parse_args()
    robots = {
        "dynid_arm6": load_robot(shipped_path("urdf", "dynid_arm6.urdf")),
        "panda (7 arm joints)": load_robot(example_robot_file("panda.urdf"), [f"panda_joint{i}" for i in range(1, 8)]),
    }
    for name, robot in robots.items():
        print(name)
        _case(robot, duration_s=20.0, noise_nm=0.5, coulomb=3.0, repeats=arguments.repeats)
        _case(robot, duration_s=5.0, noise_nm=3.0, coulomb=3.0, repeats=arguments.repeats)
        _case(robot, duration_s=20.0, noise_nm=0.5, coulomb=-1.0, repeats=arguments.repeats)


if __name__ == "__main__":
    main()
