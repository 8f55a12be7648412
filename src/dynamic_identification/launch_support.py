"""What the launch files in ``launch/`` share: paths into the installed package's share folder.

``ros2 launch`` runs those files from the install's share folder, where they cannot import
each other; what they share lives here, in the installed package. ``launch`` and
``launch_ros`` are imported when a function is called: only ``ros2 launch`` needs them,
neither the library nor its tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from launch.actions import DeclareLaunchArgument
    from launch.substitutions import PathJoinSubstitution

PACKAGE = "dynamic_identification"
"""The ROS package whose share folder holds ``config/``, ``launch/`` and ``urdf/``."""


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
