"""Parameter overrides a node does not declare: refused at start when no consumer of the package could use them.

rclpy silently ignores an override (``--params-file``, ``-p``, a launch file's
``parameters``) that the node never declares, so a misspelled ``estimaton.method``
would leave the default in force without a word. The ``/**`` block of a
configuration file reaches every node, and ``dynid`` reads the estimator's and the
excitation's blocks too, so an override the node does not declare is accepted when
*some* consumer of the package (a node, ``dynid``, or rclpy) knows the key
(:func:`~dynamic_identification.io.config.is_known_key`), refused otherwise, naming the
closest valid key, and its value is checked as that consumer would check it
(:func:`foreign_value_problem`): ``estimation.method: bogus`` in the estimator's block,
which only ``dynid`` reads, is refused at the node's start rather than when ``dynid`` reads
the file.
"""

from __future__ import annotations

import array
from collections.abc import Mapping

from rclpy.node import Node
from rclpy.parameter import Parameter

from dynamic_identification.core.errors import DataError
from dynamic_identification.core.settings_schema import SETTINGS, group_member
from dynamic_identification.io.config import ROS_PARAMETERS, is_known_key, known_keys, unknown_keys_message
from dynamic_identification.io.settings import SettingsReader


def parameter_overrides(node: Node) -> Mapping[str, Parameter]:
    """The node's parameter overrides (parameter files, ``-p``, a launch file's ``parameters``, the constructor's).

    rclpy keeps them in ``Node._parameter_overrides`` and has no public accessor; this is the one place that
    reads it.
    """
    return getattr(node, "_parameter_overrides", None) or {}


def unknown_parameters(node: Node) -> list[str]:
    """The node's parameter overrides that neither it nor any node of the package declares."""
    overrides = parameter_overrides(node)
    return sorted(name for name in overrides if not node.has_parameter(name) and not is_known_key(name))


def foreign_value_problem(key: str, value: object) -> str | None:
    """Why no consumer of setting ``key`` (which the node does not declare) accepts ``value``; ``None`` when one
    does, or when the key is not a setting of the schema (rclpy's own, a QoS override, a closure member: their
    readers check them)."""
    items = [item for item in SETTINGS if item.key == key]
    if not items or key in ROS_PARAMETERS or group_member(key) is not None:
        return None
    given = list(value) if isinstance(value, (list, tuple, array.array)) else value
    problems = []
    for item in items:
        try:
            SettingsReader({key: given}, "", item.nodes[0], ros=True).value(item)
        except DataError as error:
            problems.append(f"{error} (a setting of {', '.join(item.nodes)})")
        else:
            return None
    return problems[0]


def refuse_unknown_parameters(node: Node) -> None:
    """``ValueError`` naming the unknown overrides of ``node`` and the closest valid keys, or the first override
    the node does not declare whose value its consumers would refuse."""
    unknown = unknown_parameters(node)
    if unknown:
        declared = set(node.list_parameters([], 0).names)
        source = f"the parameters of {node.get_fully_qualified_name()}"
        raise ValueError(unknown_keys_message(unknown, source, known=declared | known_keys()))
    for name, override in sorted(parameter_overrides(node).items()):
        if node.has_parameter(name):
            continue
        problem = foreign_value_problem(name, override.value)
        if problem is not None:
            raise ValueError(problem)
