"""Every numeric parameter of every node at the bounds its descriptor announces.

A value inside the range ``ros2 param describe`` shows must start the node; the only refusals
are of a value that contradicts another setting, at start, in one line naming that setting.
"""

from __future__ import annotations

import importlib
import pathlib

import numpy as np
import pytest
from rclpy.context import Context
from rclpy.parameter import Parameter

from dynamic_identification.core.excitation.trajectory import SampledTrajectory
from dynamic_identification.core.mechanism.robot import RobotModel
from dynamic_identification.core.settings_schema import Kind, Setting
from dynamic_identification.io.trajectory import write_trajectory_csv
from dynamic_identification.nodes.parameters import node_parameters

NODE_CLASSES = {
    "estimator": "EstimatorNode",
    "excitation": "ExcitationNode",
    "feedforward": "FeedforwardNode",
    "recorder": "RecorderNode",
    "sim_robot": "SimRobotNode",
}

CONFLICTS = {
    ("recorder", "tolerance_s", 1.0): "max_delay_s",
    ("recorder", "max_delay_s", 0.001): "tolerance_s",
    ("estimator", "window.update_period_s", 3600.0): "window_s",
    ("excitation", "periods", 10000): "fundamental_hz",
    ("excitation", "position_margin_rad", 3.2): "position range is empty after margins",
    ("excitation", "stream_rate_hz", 0.1): "horizon_s",
    ("excitation", "horizon_s", 0.01): "stream_rate_hz",
}
"""Bound values that contradict another setting's default, and what the refusal names."""


def _at_rest(robot: RobotModel, path: pathlib.Path) -> list[Parameter]:
    """Overrides that make an excitation node play a 1 s file at rest instead of planning.

    The bounds under test are checked at start; ``destroy_node`` cancels a plan at its next poll, but a plan
    begins with a QR of the base parameters that polls nothing (milliseconds on an idle machine, seconds when
    BLAS threads compete on a loaded one), which destroying a node per bound would wait for: 30 s instead of
    half a second here. The settings are still declared, read and checked at start."""
    time_s = np.linspace(0.0, 1.0, 11)
    rest = np.zeros((time_s.size, robot.n_joints))
    write_trajectory_csv(path, SampledTrajectory(time_s, rest, rest, rest, robot.joint_names))
    return [Parameter("mode", value="file"), Parameter("file", value=str(path))]


def _bounds(setting: Setting) -> list[int | float]:
    """The finite bounds a value may take (an exclusive minimum may not)."""
    bounds = [setting.minimum] if setting.minimum is not None and not setting.exclusive else []
    bounds += [setting.maximum] if setting.maximum is not None else []
    cast = int if setting.kind is Kind.INTEGER else float
    return [cast(bound) for bound in bounds if abs(bound) != float("inf")]


@pytest.mark.parametrize("name", sorted(NODE_CLASSES))
def test_every_numeric_parameter_at_its_announced_bounds_starts_the_node_or_names_the_conflict(
    name: str, context: Context, arm6: RobotModel, tmp_path: pathlib.Path
) -> None:
    node_class = getattr(importlib.import_module(f"dynamic_identification.nodes.{name}"), NODE_CLASSES[name])
    others = _at_rest(arm6, tmp_path / "rest.csv") if name == "excitation" else []
    tried, unexpected = 0, []
    for spec in node_parameters(name):
        if spec.setting.kind not in (Kind.DOUBLE, Kind.INTEGER):
            continue
        for value in _bounds(spec.setting):
            tried += 1
            conflict = CONFLICTS.get((name, spec.name, value))
            try:
                node = node_class(context=context, parameter_overrides=[Parameter(spec.name, value=value), *others])
                node.destroy_node()
            except ValueError as error:
                message = str(error)
                if conflict is None or conflict not in message or "\n" in message:
                    unexpected.append(f"{spec.name}={value} refused: {message}")
                continue
            if conflict is not None:
                unexpected.append(f"{spec.name}={value} started although it contradicts {conflict}")
    assert tried > 0
    assert unexpected == []
