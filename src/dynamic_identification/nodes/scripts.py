"""The nodes' console scripts (``ros2 run dynamic_identification NODE``, the executables of the launch files).

A node's module imports rclpy, NumPy, Pinocchio and the package's core before its ``main`` installs the shutdown
handlers of :mod:`~dynamic_identification.nodes.runner`: seconds on a loaded machine. A SIGINT meanwhile (Ctrl-C,
``ros2 launch`` stopping its processes while they start) raised ``KeyboardInterrupt`` in the middle of an import, a
traceback and exit code -2 from every node, and a SIGTERM killed the process (-15). Nothing needs a cleanup then (no
ROS context has a node, no DDS participant exists), so a script ends its process at once with exit code 0 on either
signal until ``main`` puts its own handlers in place. This module imports nothing but the standard library.
"""

from __future__ import annotations

import importlib
import os
import signal
from types import FrameType


def _exit_before_start(_number: int, _frame: FrameType | None) -> None:
    os._exit(0)


def run_script(module: str) -> None:
    """Import ``module`` and run its ``main()``, SIGINT and SIGTERM ending the process with exit code 0 until
    ``main`` replaces these handlers."""
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, _exit_before_start)
    importlib.import_module(module).main()


def recorder() -> None:
    """``ros2 run dynamic_identification recorder``."""
    run_script("dynamic_identification.nodes.recorder")


def sim_robot() -> None:
    """``ros2 run dynamic_identification sim_robot``."""
    run_script("dynamic_identification.nodes.sim_robot")


def excitation() -> None:
    """``ros2 run dynamic_identification excitation``."""
    run_script("dynamic_identification.nodes.excitation")


def estimator() -> None:
    """``ros2 run dynamic_identification estimator``."""
    run_script("dynamic_identification.nodes.estimator")


def feedforward() -> None:
    """``ros2 run dynamic_identification feedforward``."""
    run_script("dynamic_identification.nodes.feedforward")
