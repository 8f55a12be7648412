"""A URDF that does not describe the recorded robot is told apart from one that does (its nominal torques)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.identification import IdentificationSettings, ReductionSettings, identify
from dynamic_identification.core.identification.urdf_agreement import urdf_agreement
from dynamic_identification.core.mechanism.robot import DriveChain, DriveParameters, DriveTerms, RobotModel, load_robot
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.regressors.idim import base_parameters
from dynamic_identification.core.simulation import inverse_dynamics
from repo_paths import example_robot_file

RATE_HZ = 200.0
DRIVE = DriveParameters.create(6, rotor_inertia=[0.05] * 6, viscous=[1.0] * 6, coulomb=[2.0] * 6, offset=[0.1] * 6)
"""Drive terms of the recorded robot, which no URDF holds: the test must see past them."""


def recorded(robot: RobotModel, *, seed: int = 4, seconds: float = 20.0) -> tuple[np.ndarray, ...]:
    """Stamps (s), positions (rad) and joint torques (N·m, 1 % noise) of ``robot`` along a random Fourier motion."""
    trajectory = random_fourier_trajectory(robot, fundamental_hz=0.1, harmonics=5, seed=seed, margin=0.2)
    time = np.arange(0.0, seconds, 1.0 / RATE_HZ)
    q, dq, ddq = trajectory.evaluate(time)
    torques = inverse_dynamics(robot, DriveChain.create(6), DRIVE, q, dq, ddq)
    noise = np.random.default_rng(seed).normal(0.0, 0.01 * torques.std(axis=0), torques.shape)
    return time, q, torques + noise


def agreement_of(urdf: Path, data: tuple[np.ndarray, ...]) -> tuple[float, str | None]:
    robot = load_robot(urdf)
    chain, terms = DriveChain.create(6), DriveTerms()
    result = identify(
        DynamicModel.create(robot, chain, terms, base_parameters(robot, chain, terms)),
        *data,
        settings=IdentificationSettings(reduction=ReductionSettings(uncertainty="white")),
    )
    agreement = urdf_agreement(robot, result)
    assert agreement is not None
    return agreement.scale, agreement.warning(urdf.name)


@pytest.fixture(scope="module")
def ur5_recording() -> tuple[np.ndarray, ...]:
    return recorded(load_robot(example_robot_file("ur5_robot.urdf")))


def test_the_robots_own_urdf_agrees_and_gets_no_warning(ur5_recording: tuple[np.ndarray, ...]) -> None:
    scale, warning = agreement_of(example_robot_file("ur5_robot.urdf"), ur5_recording)
    assert scale == pytest.approx(1.0, abs=0.05)
    assert warning is None


def test_another_arms_urdf_with_the_same_joint_names_is_named_in_one_warning(
    ur5_recording: tuple[np.ndarray, ...],
) -> None:
    """A UR10's URDF for a UR5's recording: the joint names match, the geometry and masses do not."""
    scale, warning = agreement_of(example_robot_file("ur10_robot.urdf"), ur5_recording)
    assert scale < 0.6
    assert warning is not None and warning.startswith("the URDF ur10_robot.urdf does not look like the recorded robot")
    assert "times the recorded torques" in warning and "\n" not in warning


def test_masses_three_times_too_large_are_seen(ur5_recording: tuple[np.ndarray, ...], tmp_path: Path) -> None:
    text = example_robot_file("ur5_robot.urdf").read_text(encoding="utf-8")

    def tripled(match: re.Match[str]) -> str:
        return f'{match.group(1)}="{3.0 * float(match.group(2))!r}"'

    heavy = tmp_path / "ur5_heavy.urdf"
    heavy.write_text(re.sub(r'\b(value|ixx|ixy|ixz|iyy|iyz|izz)="([^"]+)"', tripled, text), encoding="utf-8")
    scale, warning = agreement_of(heavy, ur5_recording)
    assert scale == pytest.approx(1.0 / 3.0, rel=0.1)
    assert warning is not None and "times the recorded torques" in warning
