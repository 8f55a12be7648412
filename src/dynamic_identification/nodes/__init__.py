"""The ROS 2 nodes: thin adapters between ROS and the numerical core.

A node started as its executable (``ros2 run dynamic_identification NODE``, the launch files, ``.venv/bin/NODE``)
imports rclpy, NumPy, Pinocchio and the package's core before its ``main`` installs the shutdown handlers of
:mod:`~dynamic_identification.nodes.runner`: seconds on a loaded machine. A SIGINT meanwhile (Ctrl-C, ``ros2 launch``
stopping its processes while they start) raised ``KeyboardInterrupt`` in the middle of an import, a traceback and exit
code -2 from every node, and a SIGTERM killed the process (-15). Nothing needs a cleanup then (no ROS context has a
node, no DDS participant exists), so this package, imported before any node module, ends such a process at once with
exit code 0 on either signal until ``main`` puts its own handlers in place. Any other program importing the nodes
(tests, a user's own script) keeps its handlers.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

NODE_EXECUTABLES = ("recorder", "sim_robot", "excitation", "estimator", "feedforward")
"""The executables (setup.py ``console_scripts``), each named after its node's module."""


def _exit_before_start(_number: int, _frame: FrameType | None) -> None:
    os._exit(0)


def started_as_node_executable() -> bool:
    """Whether this process runs one of :data:`NODE_EXECUTABLES` (its main script is named after it)."""
    script = getattr(sys.modules.get("__main__"), "__file__", None) or ""
    return os.path.basename(script) in NODE_EXECUTABLES


def _end_on_signals_until_started() -> None:
    if started_as_node_executable() and threading.current_thread() is threading.main_thread():
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, _exit_before_start)


_end_on_signals_until_started()
