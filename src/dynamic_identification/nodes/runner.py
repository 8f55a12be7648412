"""The one ``main()`` body of every node (STYLE.md form, valid on Humble, Jazzy and Kilted)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import rclpy
from rclpy.context import Context
from rclpy.exceptions import ParameterException
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node

SPIN_TIMEOUT_S = 0.1
"""Longest wait of one ``spin_once``: the loop notices a shutdown at least this often."""


def stream_executor(context: Context | None = None) -> Executor:
    """The executor of nodes that take 1 kHz streams: ``rclpy.experimental.EventsExecutor``
    where the distribution has it (Jazzy and later), else ``SingleThreadedExecutor``.

    The events executor dispatches callbacks without rebuilding a wait set each time:
    the recorder at 1 kHz on two topics (7 joints) takes 53 % of a core with it, 93 %
    with the single-threaded executor (``bench/bench_recorder.py``, this machine).
    """
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        return SingleThreadedExecutor(context=context)
    return EventsExecutor(context=context)


def run_node(
    name: str,
    create: Callable[[], Node],
    args: Sequence[str] | None = None,
    *,
    executor: Callable[[], Executor] = SingleThreadedExecutor,
) -> None:
    """Initialise rclpy, spin the node ``create`` builds on ``executor()``, shut down cleanly.

    The loop calls ``spin_once`` with a timeout rather than ``spin()``: the Kilted
    wheels' ``EventsExecutor.spin()`` runs no callback at all in a node process.
    Invalid parameters (``ValueError`` or ``ParameterException`` while building the
    node) are logged as fatal and end the process with exit code 1.
    """
    rclpy.init(args=args)
    node: Node | None = None
    try:
        node = create()
        spinner = executor()
        spinner.add_node(node)
        while spinner.context.ok():
            spinner.spin_once(timeout_sec=SPIN_TIMEOUT_S)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except (ValueError, ParameterException) as error:
        rclpy.logging.get_logger(name).fatal(f"refusing to start: {error}")
        raise SystemExit(1) from error
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
