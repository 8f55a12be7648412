"""The one ``main()`` body of every node (STYLE.md form, valid on Humble, Jazzy and Kilted)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import rclpy
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node


def run_node(name: str, create: Callable[[], Node], args: Sequence[str] | None = None) -> None:
    """Initialise rclpy, spin the node ``create`` builds, shut down cleanly.

    Invalid parameters (``ValueError`` or ``ParameterException`` while building the
    node) are logged as fatal and end the process with exit code 1.
    """
    rclpy.init(args=args)
    node: Node | None = None
    try:
        node = create()
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except (ValueError, ParameterException) as error:
        rclpy.logging.get_logger(name).fatal(f"refusing to start: {error}")
        raise SystemExit(1) from error
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
