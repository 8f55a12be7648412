"""ROS parameters of the nodes: declared from the settings schema with a descriptor, read once.

Each node declares the settings of :data:`~dynamic_identification.core.settings_schema.SETTINGS`
that list it (:func:`node_parameters`): read-only, with a ``ParameterDescriptor`` holding the
setting's description, unit, range (``ros2 param describe`` shows them) and choices.
:func:`read_parameters` declares them and returns a
:class:`~dynamic_identification.io.settings.SettingsReader` of the values set, which checks
them against the same schema and builds the node's frozen config dataclass.

A setting of :attr:`~dynamic_identification.core.settings_schema.Kind.CLOSURES`
(``robot.loop_closures``) is a group of string parameters ``<key>.<name>.<field>`` whose
names only the node's overrides tell (rcl refuses lists of mappings): each one given is
declared, with the setting's descriptor, and read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.node import Node
from rclpy.parameter import Parameter

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.mechanism.robot import RobotModel, load_robot
from dynamic_identification.core.settings_schema import Kind, Setting, group_member, settings_of
from dynamic_identification.io.settings import SettingsReader
from dynamic_identification.io.urdf_location import PACKAGE_SCHEME, resolve_urdf
from dynamic_identification.nodes.overrides import parameter_overrides, refuse_unknown_parameters
from dynamic_identification.resources import shipped_path

DEFAULT_URDF_NAME = "dynid_arm6.urdf"
"""The shipped arm's URDF (``urdf/``), the robot of a node whose ``urdf`` parameter is empty."""

ROS_TYPES: dict[Kind, Parameter.Type] = {
    Kind.BOOL: Parameter.Type.BOOL,
    Kind.INTEGER: Parameter.Type.INTEGER,
    Kind.DOUBLE: Parameter.Type.DOUBLE,
    Kind.STRING: Parameter.Type.STRING,
    Kind.NAMES: Parameter.Type.STRING_ARRAY,
    Kind.NUMBERS: Parameter.Type.DOUBLE_ARRAY,
    Kind.MATRIX: Parameter.Type.DOUBLE_ARRAY,
    Kind.CLOSURES: Parameter.Type.STRING,
}
"""The ROS parameter type of each kind of setting (a matrix is flattened row by row, closures are strings
``<key>.<name>.<field>``)."""


@dataclass(frozen=True)
class ParameterSpec:
    """One node parameter: a setting of the schema; an unset default declares it typed, without a value."""

    setting: Setting

    @property
    def name(self) -> str:
        return self.setting.key

    @property
    def kind(self) -> Parameter.Type:
        return ROS_TYPES[self.setting.kind]

    @property
    def default(self) -> object:
        """The default as rclpy takes it (a list for an array), ``None`` when unset."""
        value = self.setting.default
        return list(value) if isinstance(value, tuple) else value

    def descriptor(self, *, dynamic_typing: bool = False) -> ParameterDescriptor:
        """Read-only descriptor with the description and unit, the allowed range and the choices.

        ``dynamic_typing`` for a parameter declared without a value (an unset optional setting).
        """
        item = self.setting
        unit = f", {item.unit}" if item.unit else ""
        descriptor = ParameterDescriptor(
            description=f"{item.description}{unit}", read_only=True, dynamic_typing=dynamic_typing
        )
        if item.choices or item.exclusive:
            descriptor.additional_constraints = f"one of {item.range_text()}" if item.choices else item.range_text()
        if item.minimum is not None and item.maximum is not None:
            if item.kind is Kind.DOUBLE:
                descriptor.floating_point_range = [
                    FloatingPointRange(from_value=float(item.minimum), to_value=float(item.maximum), step=0.0)
                ]
            elif item.kind is Kind.INTEGER:
                descriptor.integer_range = [
                    IntegerRange(from_value=int(item.minimum), to_value=int(item.maximum), step=0)
                ]
        return descriptor


def node_parameters(node_name: str) -> tuple[ParameterSpec, ...]:
    """The parameters node ``node_name`` declares: its settings of the schema, in table order."""
    return tuple(ParameterSpec(item) for item in settings_of(node_name))


def declare_and_read(node: Node, specs: Sequence[ParameterSpec]) -> dict[str, object]:
    """Declare ``specs`` on ``node``; the values that are set, arrays as tuples.

    rclpy rejects an override outside a declared range here, with an error naming
    the parameter.
    """
    overrides = parameter_overrides(node)
    values: dict[str, object] = {}
    for spec in specs:
        if spec.setting.kind is Kind.CLOSURES:
            values.update(_declare_members(node, spec))
            continue
        given = _given(overrides.get(spec.name), optional=spec.default is None)
        if spec.default is not None:
            node.declare_parameter(spec.name, spec.default, spec.descriptor(), ignore_override=not given)
        elif given:
            node.declare_parameter(spec.name, spec.kind, spec.descriptor())
        else:
            # Statically typed without a value, it would make rclpy's GetParameters answer nothing for a whole
            # request naming it (``ros2 param dump`` printed ``{}``): unset, it is declared without a type and
            # answers "not set".
            node.declare_parameter(spec.name, None, spec.descriptor(dynamic_typing=True), ignore_override=True)
        value = node.get_parameter(spec.name).value
        if value is not None:
            values[spec.name] = tuple(value) if isinstance(value, (list, tuple, np.ndarray)) else value
    return values


UNSET_TEXT = "null"
"""What ``ros2 param dump`` writes for a parameter that is not set (YAML's null), and rcl reads back as this text."""


def _given(override: Parameter | None, *, optional: bool) -> bool:
    """Whether ``override`` sets a value: ``[]`` (rcl reads an empty list as not set) does not, nor, for an
    optional setting, ``null`` (a dump of an unset one), so ``ros2 param dump`` output loads back."""
    if override is None or override.type_ is Parameter.Type.NOT_SET:
        return False
    return not (optional and override.type_ is Parameter.Type.STRING and override.value == UNSET_TEXT)


def _declare_members(node: Node, spec: ParameterSpec) -> dict[str, object]:
    """Declare and read the members ``<key>.<name>.<field>`` of the :attr:`Kind.CLOSURES` setting of ``spec`` that
    the node was given (none for a serial robot)."""
    overrides = parameter_overrides(node)
    values: dict[str, object] = {}
    for name in sorted(overrides):
        if group_member(name) == spec.setting:
            node.declare_parameter(name, spec.kind, spec.descriptor())
            values[name] = node.get_parameter(name).value
    return values


def read_parameters(node: Node, node_name: str, specs: Sequence[ParameterSpec]) -> SettingsReader:
    """Declare ``specs`` (the node's :func:`node_parameters`) and read the values set through the schema.

    Overrides no node of the package knows are refused here, before the node logs or creates anything
    (:func:`~dynamic_identification.nodes.overrides.refuse_unknown_parameters`).
    """
    values = declare_and_read(node, specs)
    refuse_unknown_parameters(node)
    return SettingsReader(values, f"the {node_name} parameters", node_name, ros=True)


def urdf_or_shipped(urdf: str) -> str:
    """A node's ``urdf`` parameter as a path: the shipped arm's URDF when it is empty, a ``package://`` URI
    resolved through ``AMENT_PREFIX_PATH`` (what a configuration shipped in a package names).

    Raises
    ------
    ValueError
        Naming the parameter, when a ``package://`` URI names no file.
    """
    if not urdf:
        return str(shipped_path("urdf", DEFAULT_URDF_NAME))
    if urdf.startswith(PACKAGE_SCHEME):
        return str(resolve_urdf(urdf, source="parameter 'urdf'"))
    return urdf


def node_robot(urdf: str, joints: Sequence[str] | None) -> RobotModel:
    """The robot model of a node's ``urdf`` and ``joints`` parameters (unset joints: every 1-DoF joint).

    Raises
    ------
    ValueError
        Naming the parameters, when the URDF cannot be loaded or lacks a joint.
    """
    try:
        return load_robot(urdf, list(joints or ()) or None)
    except IdentificationError as error:
        raise ValueError(f"parameter 'urdf'/'joints': {error}") from error
