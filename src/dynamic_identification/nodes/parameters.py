"""ROS parameters of the nodes: each declared once with a descriptor and read once.

A node lists its parameters as :class:`ParameterSpec` (name, default, type,
description with units, allowed range); :func:`declare_and_read` declares them
read-only and returns the values that are set, ready for a frozen config dataclass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.exceptions import ParameterUninitializedException
from rclpy.node import Node
from rclpy.parameter import Parameter


@dataclass(frozen=True)
class ParameterSpec:
    """One node parameter; ``default=None`` declares it without a value (typed, unset)."""

    name: str
    default: object
    kind: Parameter.Type
    description: str
    floating: tuple[float, float] | None = None
    integer: tuple[int, int] | None = None

    def descriptor(self) -> ParameterDescriptor:
        """Read-only descriptor with the description and the allowed range."""
        descriptor = ParameterDescriptor(description=self.description, read_only=True)
        if self.floating is not None:
            descriptor.floating_point_range = [
                FloatingPointRange(from_value=self.floating[0], to_value=self.floating[1], step=0.0)
            ]
        if self.integer is not None:
            descriptor.integer_range = [IntegerRange(from_value=self.integer[0], to_value=self.integer[1], step=0)]
        return descriptor


def declare_and_read(node: Node, specs: Sequence[ParameterSpec]) -> dict[str, object]:
    """Declare ``specs`` on ``node``; the values that are set, arrays as tuples.

    rclpy rejects an override outside a declared range here, with an error naming
    the parameter.
    """
    values: dict[str, object] = {}
    for spec in specs:
        if spec.default is None:
            node.declare_parameter(spec.name, spec.kind, spec.descriptor())
        else:
            node.declare_parameter(spec.name, spec.default, spec.descriptor())
        try:
            value = node.get_parameter(spec.name).value
        except ParameterUninitializedException:
            value = None
        if value is not None:
            values[spec.name] = tuple(value) if isinstance(value, (list, tuple, np.ndarray)) else value
    return values


LOOP_CLOSURE_PREFIX = "robot.loop_closures."

CLOSED_LOOP_PARAMETERS = (
    ParameterSpec(
        "robot.actuated_joints",
        None,
        Parameter.Type.STRING_ARRAY,
        "closed-loop robots: the motorised joints of the opened tree (with robot.loop_closures.<name>.*)",
    ),
)
"""The closed-loop description ([Briot2012] §2) a node reads besides ``robot.loop_closures.<name>.<key>``."""


def declare_closed_loop(node: Node, specs: Sequence[ParameterSpec] = CLOSED_LOOP_PARAMETERS) -> dict[str, object]:
    """Declare and read a closed-loop robot's description: ``specs`` (:data:`CLOSED_LOOP_PARAMETERS`) and every
    ``robot.loop_closures.<name>.{frame_a, frame_b, type}`` the node was given (strings).

    A parameter file cannot hold a list of closures (rcl refuses lists of mappings), so each
    closure is a named group of parameters whose names only the overrides tell; they are
    declared read-only, with a description, as the node finds them. Empty for a serial robot.
    """
    values = declare_and_read(node, specs)
    # rclpy keeps a node's overrides (parameter file, launch, constructor) here; it has no public accessor.
    overrides = getattr(node, "_parameter_overrides", None) or {}
    closures = [
        ParameterSpec(
            name,
            None,
            Parameter.Type.STRING,
            "closed-loop robots: frame_a, frame_b (frames of the opened tree) or type (point | planar | 6d)"
            " of a loop closure",
        )
        for name in sorted(overrides)
        if name.startswith(LOOP_CLOSURE_PREFIX)
    ]
    values.update(declare_and_read(node, closures))
    return {key: list(value) if isinstance(value, tuple) else value for key, value in values.items()}
