"""The excitation tests' robot: the shipped 6-axis arm, and its URDF limits without margins."""

from __future__ import annotations

from pathlib import Path

import pytest

from dynamic_identification.core.excitation.safety import JointLimits
from dynamic_identification.core.mechanism.robot import RobotModel, load_robot


@pytest.fixture(scope="module")
def robot(arm6_urdf: Path) -> RobotModel:
    return load_robot(arm6_urdf)


@pytest.fixture(scope="module")
def limits(robot: RobotModel) -> JointLimits:
    return JointLimits.from_robot(robot)
