"""In-process payload re-identification ([Swevers2002]) against the robot prior it is given, over noise seeds.

The shipped 6-axis arm does its pick-and-place job (the excitation planner's ``process``
mode, 500 Hz, 1 % current noise); after the trigger a 3.5 kg load rides on ``tool0`` and
:class:`~dynamic_identification.core.identification.payload_in_process.PayloadReidentification` identifies
it from 10 s of the job. Three priors of the robot:

* ``true``: the simulator's parameters;
* ``reduced``: the same without the wrist's first moments MX5, MX6, MY6, MZ6, as a
  sensitivity reduction drops them ([Volkmann2020] Algorithm 1), used as it is;
* ``reduced + reference``: the same, corrected by 10 s of the job without the load before
  the trigger (:class:`~dynamic_identification.core.identification.payload.PriorCorrection`).

Prints, per prior, the worst mass error (%), the worst centre-of-mass error (mm), the
largest ratio of that error to the reported σ, and the mean wall time of one identification.

Run: ``.venv/bin/python bench/bench_payload_in_process.py [--seeds 5]``
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
from _common import ARM6_DRIVE, ARM6_UNCOUPLED_CHAIN, PROCESS_LOAD

from dynamic_identification.core.excitation.plan import plan_excitation
from dynamic_identification.core.excitation.settings import ExcitationSettings
from dynamic_identification.core.excitation.trajectory import interpolate_trajectory
from dynamic_identification.core.identification.payload import RobotPrior
from dynamic_identification.core.identification.payload_in_process import (
    PayloadReidentification,
    PayloadReidentificationSettings,
)
from dynamic_identification.core.mechanism.payload import Payload, attach_payload
from dynamic_identification.core.mechanism.robot import DriveTerms, RobotModel, load_robot
from dynamic_identification.core.simulation import inverse_dynamics
from dynamic_identification.resources import shipped_path

RATE_HZ = 500.0
CURRENT_NOISE = 0.01
"""σ of the current noise, fraction of each motor's largest current."""
CHAIN, DRIVE, LOAD = ARM6_UNCOUPLED_CHAIN, ARM6_DRIVE, PROCESS_LOAD
"""The in-process payload tests' arm (``test/support/arm6_drives.py``): the simulator's uncoupled drive chain, its
rotor inertia, friction and offsets, and the 3.5 kg load the robot grasps."""
DROPPED = ((4, 1), (5, 1), (5, 2), (5, 3))
"""(joint, standard column) of MX5, MX6, MY6 and MZ6."""


def job_motion(robot: RobotModel, *, carried: Payload | None, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """12 s of the job at :data:`RATE_HZ`: stamps (s), positions (rad), measured joint torques (N·m)."""
    plan = plan_excitation(robot, CHAIN, DriveTerms(), ExcitationSettings(mode="process", cycles=4, seed=seed))
    stamps = np.arange(0.0, min(12.0, plan.trajectory.duration_s), 1.0 / RATE_HZ)
    trajectory = plan.trajectory
    q, dq, ddq = interpolate_trajectory(trajectory.time, trajectory.q, trajectory.dq, trajectory.ddq, stamps)
    model = robot if carried is None else attach_payload(robot, carried)
    currents = CHAIN.motor_currents(inverse_dynamics(model, CHAIN, DRIVE, q, dq, ddq))
    noise = np.random.default_rng(seed).normal(0.0, CURRENT_NOISE * np.abs(currents).max(axis=0), currents.shape)
    return stamps, q, CHAIN.joint_torques(currents + noise)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    arguments = parser.parse_args()
    robot = load_robot(shipped_path("urdf", "dynid_arm6.urdf"))
    truth = RobotPrior.from_standard(robot, CHAIN, DRIVE)
    inertial = truth.inertial.reshape(robot.n_joints, 10).copy()
    for joint, column in DROPPED:
        inertial[joint, column] = 0.0
    reduced = replace(truth, inertial=inertial.ravel())
    settings = PayloadReidentificationSettings(frame="tool0", duration_s=10.0)
    cases = {"true": (truth, False), "reduced": (reduced, False), "reduced + reference": (reduced, True)}
    rows: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in cases}
    for seed in range(arguments.seeds):
        loaded = job_motion(robot, carried=LOAD, seed=2 * seed + 1)
        unloaded = job_motion(robot, carried=None, seed=2 * seed + 2)
        for name, (prior, with_reference) in cases.items():
            estimator = PayloadReidentification(prior, settings, reference=unloaded if with_reference else None)
            estimator.trigger()
            started = time.perf_counter()
            outcome = estimator.add_samples(*loaded)
            elapsed = time.perf_counter() - started
            if outcome is None or outcome.estimate is None:
                raise SystemExit(f"{name}, seed {seed}: {outcome.reason if outcome else 'no outcome'}")
            found = outcome.estimate.payload
            assert found.std is not None
            com_error = np.abs(found.com_m - LOAD.com_m)
            rows[name].append(
                (
                    100.0 * abs(found.mass_kg / LOAD.mass_kg - 1.0),
                    1e3 * float(com_error.max()),
                    float(np.max(com_error / found.std.com_m)),
                    elapsed,
                )
            )
    print(f"in-process payload, {LOAD.mass_kg:g} kg on tool0, 10 s of the job, {arguments.seeds} seeds (worst):")
    print(f"  {'robot prior':<22} {'mass %':>8} {'COM mm':>8} {'COM err/σ':>10} {'time s':>8}")
    for name, values in rows.items():
        table = np.array(values)
        mass, com, ratio = table[:, :3].max(axis=0)
        print(f"  {name:<22} {mass:8.3f} {com:8.2f} {ratio:10.2f} {table[:, 3].mean():8.2f}")


if __name__ == "__main__":
    main()
