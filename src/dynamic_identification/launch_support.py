"""What the launch files in ``launch/`` share: paths into the installed package's share folder and the check of
their ``config`` argument.

``ros2 launch`` runs those files from the install's share folder, where they cannot import
each other; what they share lives here, in the installed package. ``launch`` and
``launch_ros`` are imported when a function is called: only ``ros2 launch`` needs them,
neither the library nor its tests. The checks themselves (:func:`resolve_config`,
:func:`config_problem`) take plain paths and are tested without launch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from dynamic_identification.core.errors import IdentificationError, brief
from dynamic_identification.core.settings_schema import NODES, setting
from dynamic_identification.io.config import NODE_PARAMETERS, ros_parameters
from dynamic_identification.io.urdf_location import PACKAGE_SCHEME, resolve_urdf
from dynamic_identification.resources import shipped_path

if TYPE_CHECKING:
    from launch.action import Action
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.events.process import ProcessExited
    from launch.launch_context import LaunchContext
    from launch.substitutions import PathJoinSubstitution

PACKAGE = "dynamic_identification"
"""The ROS package whose share folder holds ``config/``, ``launch/`` and ``urdf/``."""

INPUT_FILES: tuple[str, ...] = (
    "urdf",
    "file",
    "parameters_file",
    "payload_file",
    "payload.prior_file",
    "collision_srdf",
)
"""Settings naming a file a node reads at start (the estimator's ``parameters_file`` is one it writes)."""


def share_file(*parts: str) -> PathJoinSubstitution:
    """The substitution of ``<share of dynamic_identification>/<parts…>`` (e.g. ``"launch", "sim.launch.py"``)."""
    from launch.substitutions import PathJoinSubstitution
    from launch_ros.substitutions import FindPackageShare

    return PathJoinSubstitution([FindPackageShare(PACKAGE), *parts])


def default_config() -> PathJoinSubstitution:
    """``config/dynid_arm6.yaml`` of the package: the default of every launch file's ``config`` argument."""
    return share_file("config", "dynid_arm6.yaml")


def config_argument(description: str) -> DeclareLaunchArgument:
    """The ``config`` launch argument: the nodes' parameter YAML, by default :func:`default_config`."""
    from launch.actions import DeclareLaunchArgument

    return DeclareLaunchArgument("config", default_value=default_config(), description=description)


def resolve_config(value: str) -> Path:
    """The parameter file ``config:=value`` names: a path, or the name of a configuration the package ships
    (``config:=five_bar.yaml``).

    Raises
    ------
    ValueError
        One line, when neither exists.
    """
    path = Path(value).expanduser()
    if path.is_file():
        return path.resolve()
    if path.name == value:
        try:
            return shipped_path("config", value)
        except FileNotFoundError:
            pass
    raise ValueError(f"config:={value}: no such file, nor a configuration of {PACKAGE} (config/{value})")


def config_problem(path: Path) -> str | None:
    """What keeps the nodes from starting on the parameter file ``path``, on one line; ``None`` when nothing does.

    Every block is read as the nodes read it (unknown keys, another node's keys in a node's block), and each
    file a node would read at start (:data:`INPUT_FILES`) must exist: a placeholder such as
    ``urdf: /path/to/ur5.urdf`` is named with what to set, before any node starts.
    """
    missing: dict[tuple[str, str], list[str]] = {}
    for node in NODES:
        try:
            parameters = ros_parameters(path, node)
        except IdentificationError as error:
            return str(error)
        for key in INPUT_FILES:
            value = parameters.get(key)
            if key not in NODE_PARAMETERS[node] or (key == "parameters_file" and node == "estimator"):
                continue
            if isinstance(value, str) and value and _missing(key, value):
                missing.setdefault((key, value), []).append(node)
    if not missing:
        return None
    (key, value), nodes = next(iter(missing.items()))
    item = setting(key, nodes[0])
    return (
        f"{path.name}: set {key} to an existing file ({item.description}; read by {', '.join(nodes)}):"
        f" {brief(value)} does not exist"
    )


def _missing(key: str, value: str) -> bool:
    """Whether the file ``value`` of setting ``key`` cannot be found (a URDF may be a ``package://`` URI)."""
    if key == "urdf" and value.startswith(PACKAGE_SCHEME):
        try:
            resolve_urdf(value)
        except IdentificationError:
            return True
        return False
    return not Path(value).expanduser().is_file()


def checked_config() -> OpaqueFunction:
    """The first action of a launch file: resolve its ``config`` argument and refuse, on one line, a file the nodes
    would refuse (:func:`config_problem`), before any node starts."""
    from launch.actions import OpaqueFunction

    return OpaqueFunction(function=_check_config)


def _check_config(context: LaunchContext) -> list[Action]:
    from launch.actions import SetLaunchConfiguration
    from launch.substitutions import LaunchConfiguration

    path = resolve_config(LaunchConfiguration("config").perform(context))
    problem = config_problem(path)
    if problem is not None:
        raise RuntimeError(problem)
    return [SetLaunchConfiguration("config", str(path))]


def stop_on_exit(node: str) -> Callable[[ProcessExited, LaunchContext], list[Action]]:
    """``on_exit`` of every node of a launch file: the launch stops with the node (a node that refused its
    parameters would otherwise leave the others running without it).

    A node that fails — exits with a code other than 0 while the launch is not stopping: it refused its
    parameters, it crashed — also makes ``ros2 launch`` exit with code 1, on one line naming the node and its
    code: an exception in an event handler is what launch counts as a failed launch (``LaunchService.run``),
    while its ``Shutdown`` alone exits 0, and a script or CI could not tell. Exits during the launch's own
    shutdown (Ctrl-C, another node's end) only stop it.
    """
    return functools.partial(_node_exited, node)


def _node_exited(node: str, event: ProcessExited, context: LaunchContext) -> list[Action]:
    if event.returncode != 0 and not context.is_shutdown:
        raise RuntimeError(f"{node} failed (exit code {event.returncode}): the launch stops; the node's lines say why")
    from launch.actions import Shutdown

    return [Shutdown(reason=f"{node} exited")]
