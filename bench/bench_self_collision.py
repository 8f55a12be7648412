"""Self-collision of planned excitations on real arms: how often, what the check costs, how dense it checks.

For the UR5 and the Panda of example-robot-data (collision meshes, each with its SRDF), this plans
Fourier excitations with the shipped defaults (0.1 Hz, 5 harmonics, one 10 s period), random and
optimised (``--evaluations`` cost evaluations), for ``--seeds`` seeds, once with the self-collision
check off and once on (:func:`~dynamic_identification.core.excitation.plan.plan_excitation`).
Printed per robot, never asserted:

* how many plans of the unchecked planner touch (Pinocchio's collision test with no margin at
  every sample of the executed motion at 2 kHz: ground truth, independent of the check's
  choice of instants) or come within the margin;
* with the check: the amplitude scale it kept, the condition number before and after, and
  whether the result touches anything (ground truth as above);
* the cost of :func:`~dynamic_identification.core.excitation.collision.check_self_collision` on
  one plan and the number of instants it checks, beside checking every sample at 1 kHz.

A closed-loop robot is checked on its opened tree, the passive joints where the loop closure puts
them (:func:`~dynamic_identification.core.excitation.plan.plan_excitation`): the
tests' five-bar with collision boxes and a post between its motors that the distal links can reach
(``five_bar_with_collision_geometry`` of ``test/support/five_bar.py``), planned with the settings of
``config/five_bar.yaml`` (0.2 Hz, random and optimised with ``--evaluations``), same figures and
the planning time with and without the check.

Run: ``.venv/bin/python bench/bench_self_collision.py [--seeds 6] [--evaluations 300]``
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from _common import (
    FIVE_BAR_ACTUATED,
    FIVE_BAR_CHAIN,
    FIVE_BAR_CLOSURES,
    FIVE_BAR_CONFIG,
    example_robot_file,
    five_bar_with_collision_geometry,
    touching,
)

from dynamic_identification.core.excitation.collision import (
    SelfCollisionError,
    SelfCollisionModel,
    check_self_collision,
)
from dynamic_identification.core.excitation.plan import plan_excitation
from dynamic_identification.core.excitation.safety import CHECK_RATE_HZ, executed_motion
from dynamic_identification.core.excitation.settings import ExcitationSettings
from dynamic_identification.core.excitation.trajectory import SampledTrajectory
from dynamic_identification.core.mechanism.closed_loop import ClosedLoopModel
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel, load_robot
from dynamic_identification.io.config import load_excitation_settings

ROBOTS = {
    "ur5": ("ur5_robot.urdf", "ur5.srdf", None),
    "panda": ("panda.urdf", "panda.srdf", tuple(f"panda_joint{j}" for j in range(1, 8))),
}


def run(name: str, seeds: int, evaluations: int) -> None:
    urdf, srdf, joints = ROBOTS[name]
    robot: RobotModel = load_robot(example_robot_file(urdf), joints)
    srdf_path = str(example_robot_file(srdf))
    model = SelfCollisionModel.from_urdf(robot, srdf=srdf_path)
    assert model is not None
    chain, terms = DriveChain.create(robot.n_joints), DriveTerms()
    print(
        f"\n{name}: {robot.n_joints} joints, {len(model.pair_names)} pairs checked ({srdf}),"
        f" margin {model.margin_m:g} m, joint reach {np.round(model.joint_reach_m, 2).tolist()} m"
    )
    print("  optimised  seed  unchecked: touches / within margin   checked: scale  cond before -> after  touches")
    costs, instants, samples = [], [], []
    for optimise in (False, True):
        for seed in range(seeds):
            common = {"optimise": optimise, "seed": seed, "collision_srdf": srdf_path, "max_evaluations": evaluations}
            free = plan_excitation(robot, chain, terms, ExcitationSettings(self_collision=False, **common))
            dense = executed_motion(free.trajectory, check_rate_hz=2000.0).q
            touched = touching(model, dense)
            started = time.perf_counter()
            try:
                check_self_collision(free.trajectory, model)
                within = False
            except SelfCollisionError:
                within = True
            costs.append(time.perf_counter() - started)
            motion = executed_motion(free.trajectory, check_rate_hz=CHECK_RATE_HZ).q
            instants.append(model.checked_instants(motion).size)
            samples.append(motion.shape[0])
            try:
                checked = plan_excitation(robot, chain, terms, ExcitationSettings(**common))
            except Exception as error:  # noqa: BLE001 - a refusal is a result here, printed
                print(f"  {optimise!s:9}  {seed:4}  {touched!s:7} / {within!s:5}   refused: {error}")
                continue
            scale = _scale(checked.description)
            after = touching(model, executed_motion(checked.trajectory, check_rate_hz=2000.0).q)
            print(
                f"  {optimise!s:9}  {seed:4}  {touched!s:7} / {within!s:5}                 {scale}"
                f"  {free.condition_number:6.3g} -> {checked.condition_number:6.3g}    {after}"
            )
    print(
        f"  check of one plan ({free.trajectory.duration_s:g} s): median {1e3 * np.median(costs):.0f} ms,"
        f" max {1e3 * np.max(costs):.0f} ms; {np.median(instants):.0f} checked instants of"
        f" {np.median(samples):.0f} executed samples at {CHECK_RATE_HZ:g} Hz (median)"
    )


def _scale(description: str) -> str:
    """The amplitude scale a plan's description states, ``1.00`` when it was not scaled."""
    if "scaled to" not in description:
        return "1.00"
    return f"{float(description.split('scaled to ')[1].split('%')[0]) / 100:.2f}"


def run_closed_loop(seeds: int, evaluations: int) -> None:
    settings = replace(load_excitation_settings(FIVE_BAR_CONFIG), time_budget_s=float("inf"))
    with tempfile.TemporaryDirectory() as folder:
        urdf = five_bar_with_collision_geometry(Path(folder))
        model = ClosedLoopModel.from_config(urdf, loop_closures=FIVE_BAR_CLOSURES, actuated_joints=FIVE_BAR_ACTUATED)
        collision = settings.collision_model(model.robot, joined=model.closure_joints)
    assert collision is not None

    def tree(points: SampledTrajectory) -> np.ndarray:
        executed = executed_motion(points, check_rate_hz=2000.0)
        return model.complete_motion(executed.q, executed.dq, executed.ddq).q

    print(
        f"\nfive-bar with a post between its motors (closed loop, {model.n_tree} tree joints, 2 motors):"
        f" {len(collision.pair_names)} pairs checked, margin {collision.margin_m:g} m"
    )
    print("  optimised  seed  unchecked: touches   checked: scale  cond before -> after  touches   plan s: off / on")
    for optimise in (False, True):
        for seed in range(seeds):
            common = replace(settings, optimise=optimise, seed=seed, max_evaluations=evaluations)
            started = time.perf_counter()
            unchecked = replace(common, self_collision=False)
            free = plan_excitation(model, FIVE_BAR_CHAIN, DriveTerms(), unchecked)
            free_s = time.perf_counter() - started
            touched = touching(collision, tree(free.trajectory))
            started = time.perf_counter()
            try:
                checked = plan_excitation(model, FIVE_BAR_CHAIN, DriveTerms(), common, collision=collision)
            except Exception as error:  # noqa: BLE001 - a refusal is a result here, printed
                print(f"  {optimise!s:9}  {seed:4}  {touched!s:7}              refused: {error}")
                continue
            checked_s = time.perf_counter() - started
            after = touching(collision, tree(checked.trajectory))
            print(
                f"  {optimise!s:9}  {seed:4}  {touched!s:7}              {_scale(checked.description)}"
                f"  {free.condition_number:6.3g} -> {checked.condition_number:6.3g}    {after!s:5}"
                f"   {free_s:5.1f} / {checked_s:5.1f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--evaluations", type=int, default=300, help="cost evaluations of an optimised design")
    parser.add_argument("--robots", nargs="+", default=[*ROBOTS, "five_bar"], choices=[*ROBOTS, "five_bar"])
    arguments = parser.parse_args()
    for name in arguments.robots:
        if name == "five_bar":
            run_closed_loop(arguments.seeds, arguments.evaluations)
        else:
            run(name, arguments.seeds, arguments.evaluations)


if __name__ == "__main__":
    main()
