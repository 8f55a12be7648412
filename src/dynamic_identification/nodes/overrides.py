"""Parameter overrides no node of the package knows: refused at start, naming the closest valid key.

rclpy silently ignores an override (``--params-file``, ``-p``, a launch file's
``parameters``) that the node never declares, so a misspelled ``estimaton.method``
would leave the default in force without a word. The ``/**`` block of a
configuration file reaches every node, so an override is accepted when *some* node
of the package (or ``dynid``, or rclpy) knows the key
(:func:`~dynamic_identification.io.config.is_known_key`) and refused otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping

from rclpy.node import Node
from rclpy.parameter import Parameter

from dynamic_identification.io.config import is_known_key, known_keys, unknown_keys_message


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


def refuse_unknown_parameters(node: Node) -> None:
    """``ValueError`` naming the unknown overrides of ``node`` and the closest valid keys."""
    unknown = unknown_parameters(node)
    if unknown:
        declared = set(node.list_parameters([], 0).names)
        source = f"the parameters of {node.get_fully_qualified_name()}"
        raise ValueError(unknown_keys_message(unknown, source, known=declared | known_keys()))
