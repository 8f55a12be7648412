"""The one ``main()`` body of every node (STYLE.md form, valid on Humble, Jazzy and Kilted).

Shutdown is this module's: SIGINT and SIGTERM (Ctrl-C, ``ros2 launch`` stopping its
processes, ``kill``) only *request* a shutdown, which the spin loop notices within
:data:`SPIN_TIMEOUT_S`; the executor is then shut down, the node destroyed (the recorder
closes its file, the estimator joins its worker) and the context shut down, in that order,
and the process exits 0 at once, without Python's finalisation (:func:`exit_at_once`).
The executor goes first: an ``EventsExecutor`` still holding the node keeps it, and with it
the DDS participant, alive through ``destroy_node``, and the exit would then end the
participant's threads mid-work, leaving its Fast DDS shared-memory segments behind and
possibly a peer's receive queue half written (eProsima/Fast-DDS#6501: opening such a queue
faults). A second (third, …) signal during that cleanup is logged and ignored, so it can
neither abort the cleanup half-way nor crash a callback running in C++ with a
``KeyboardInterrupt``. rclpy's own signal handlers are not installed: they shut the
context down under the running executor, which then fails to create its timeout timer
(``RCLError: … the given context is not valid``, exit 1).

Errors while *building* the node (invalid parameters, an unknown parameter key or
another node's key in the node's block of a parameter file, all refused before the node
logs anything) end the process with one ``FATAL`` line and exit
code 1, and nothing after it: the nodes' ``destroy_node`` works on a node whose
constructor raised, which rclpy destroys when the context shuts down. Errors of *callbacks* never
end it: :class:`~dynamic_identification.nodes.guarded.GuardedNode` counts and reports
them, and an exception that still escapes ``spin_once`` is logged here on one line
and the loop goes on.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType
from typing import NoReturn

import rclpy
from rclpy.context import Context
from rclpy.exceptions import ParameterException
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from dynamic_identification.blas import use_one_blas_thread
from dynamic_identification.collector import freeze_startup_objects
from dynamic_identification.core.errors import shorten
from dynamic_identification.io.config import ros_parameters

SPIN_TIMEOUT_S = 0.1
"""Longest wait of one ``spin_once``: the loop notices a shutdown request at least this often."""

SHUTDOWN_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def node_executor(context: Context | None = None) -> Executor:
    """The executor of every node (:func:`run_node`): ``rclpy.experimental.EventsExecutor`` where the distribution
    has it (Jazzy and later), else ``SingleThreadedExecutor``.

    Every node meets a stream of up to 1 kHz: the recorder and the estimator take joint states and currents, the
    excitation node the joint states, the simulator and the feedforward node publish from timers that fast. The
    events executor dispatches callbacks without rebuilding a wait set each time: the recorder at 1 kHz on two
    topics (7 joints) takes 53 % of a core with it, 93 % with the single-threaded executor
    (``bench/bench_recorder.py``); the other nodes save alike (``bench/bench_node_cpu.py``).
    """
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        return SingleThreadedExecutor(context=context)
    return EventsExecutor(context=context)


class ShutdownRequest:
    """SIGINT/SIGTERM handlers that set a flag instead of raising.

    After the cleanup :meth:`ignore_further` ignores both signals until the process
    exits: one that arrives while the interpreter winds down must not turn a clean
    exit into a ``KeyboardInterrupt`` (exit status -2). Only the main thread may
    install signal handlers; elsewhere nothing is installed and the flag is only set
    by :meth:`request`.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.signals: list[int] = []
        self._event = threading.Event()
        self._installed = threading.current_thread() is threading.main_thread()
        if self._installed:
            for number in SHUTDOWN_SIGNALS:
                signal.signal(number, self._on_signal)

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    def request(self) -> None:
        self._event.set()

    def _on_signal(self, number: int, _frame: FrameType | None) -> None:
        self.signals.append(number)
        if len(self.signals) > 1:
            # Logged from the handler: the main thread may be inside the cleanup.
            rclpy.logging.get_logger(self.name).warning(
                f"{signal.Signals(number).name} again: already shutting down, finishing the cleanup"
            )
        self._event.set()

    def ignore_further(self) -> None:
        """Ignore SIGINT and SIGTERM from now on (the cleanup is done, the process exits).

        Python's finalisation puts the default handler back in place of a Python one,
        so a signal in the last milliseconds would kill the process (exit status -2);
        an ignored signal stays ignored.
        """
        if self._installed:
            for number in SHUTDOWN_SIGNALS:
                signal.signal(number, signal.SIG_IGN)


def spin_until_shutdown(node: Node, spinner: Executor, stop: ShutdownRequest) -> None:
    """Spin ``node`` on ``spinner`` until a shutdown is requested or the context ends.

    An exception escaping a callback (only possible for callbacks created outside
    :class:`~dynamic_identification.nodes.guarded.GuardedNode`) is logged on one line
    and spinning goes on.
    """
    while not stop.requested and spinner.context.ok():
        try:
            spinner.spin_once(timeout_sec=SPIN_TIMEOUT_S)
        except (KeyboardInterrupt, ExternalShutdownException):
            raise
        except Exception as error:  # noqa: BLE001 - a callback error never ends the node
            if stop.requested or not spinner.context.ok():
                break
            node.get_logger().error(
                f"a callback failed and its input was refused: {type(error).__name__}: {shorten(str(error), 300)}",
                throttle_duration_sec=5.0,
            )


def parameter_files(arguments: Sequence[str]) -> list[str]:
    """The ``--params-file`` paths of a command line (what ``ros2 launch`` passes for a launch file's
    ``parameters``)."""
    return [arguments[i + 1] for i, token in enumerate(arguments[:-1]) if token == "--params-file"]


def check_parameter_files(name: str, arguments: Sequence[str]) -> None:
    """``DataError`` when a parameter file of the command line holds, in a block of node ``name``, a key that
    no consumer of the package knows or that this node does not read (another node's setting, which would reach
    no one: :func:`~dynamic_identification.io.config.ros_parameters`).

    rcl merges the blocks before the node sees them, so only the files tell which block a key came from.
    """
    for path in parameter_files(arguments):
        ros_parameters(path, name)


def _shutdown_keeping_handlers() -> None:
    """``rclpy.try_shutdown`` without putting the default signal handlers back (Jazzy and later would)."""
    try:
        rclpy.try_shutdown(uninstall_handlers=False)
    except TypeError:  # Humble: no such argument, and no handlers to uninstall
        rclpy.try_shutdown()


def node_usage(name: str) -> str:
    """What ``NODE --help`` prints: a node takes ROS arguments only, and is not started by asking for help."""
    return (
        f"usage: {name} [--ros-args [--params-file CONFIG.yaml] [-p NAME:=VALUE] [-r __ns:=/NAMESPACE]]\n"
        f"The dynamic_identification {name} node. Its parameters are the README's configuration table"
        f" (every node's, with units and bounds); once it runs, `ros2 param list /{name}` and `ros2 param describe`"
        " name them too."
    )


def run_node(
    name: str,
    create: Callable[[], Node],
    args: Sequence[str] | None = None,
    *,
    executor: Callable[[], Executor] = node_executor,
) -> None:
    """Initialise rclpy, spin the node ``create`` builds on ``executor()``, shut down cleanly.

    BLAS runs on one thread (:func:`~dynamic_identification.blas.use_one_blas_thread`): a node's
    matrices are small and its cores shared with the driver. Once the node is built, the objects of its start-up
    are left out of the garbage collector's full collections
    (:func:`~dynamic_identification.collector.freeze_startup_objects`): each visited them all, a pause of tens of
    milliseconds in the middle of an update or between two torque commands.

    The loop calls ``spin_once`` with a timeout rather than ``spin()``: the Kilted
    wheels' ``EventsExecutor.spin()`` runs no callback at all in a node process.
    Invalid parameters (``ValueError`` or ``ParameterException`` while building the
    node, an unknown parameter key) are logged as fatal and end the process with
    exit code 1; SIGINT and SIGTERM end it with exit code 0 (module docstring).
    """
    arguments = list(sys.argv if args is None else args)
    own = arguments[: arguments.index("--ros-args")] if "--ros-args" in arguments else arguments
    if "-h" in own or "--help" in own:
        print(node_usage(name))
        raise SystemExit(0)
    use_one_blas_thread()
    try:
        rclpy.init(args=None if args is None else list(args), signal_handler_options=SignalHandlerOptions.NO)
    except Exception as error:  # noqa: BLE001 - rcl's RCLError on malformed --ros-args
        rclpy.logging.get_logger(name).fatal(
            f"refusing to start: invalid ROS arguments ({shorten(str(error), 200)}); see --ros-args --help"
        )
        raise SystemExit(1) from None
    stop = ShutdownRequest(name)
    node: Node | None = None
    spinner: Executor | None = None
    try:
        try:
            check_parameter_files(name, sys.argv if args is None else args)
            node = create()
        except (ValueError, ParameterException) as error:
            rclpy.logging.get_logger(name).fatal(f"refusing to start: {shorten(str(error))}")
            raise SystemExit(1) from None
        spinner = executor()
        spinner.add_node(node)
        freeze_startup_objects()
        spin_until_shutdown(node, spinner, stop)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        stop.request()
        if spinner is not None:
            spinner.shutdown()
        if node is not None:
            node.destroy_node()
        _shutdown_keeping_handlers()
        stop.ignore_further()
    exit_at_once()


def exit_at_once() -> NoReturn:
    """End the process with exit code 0 now that its node is destroyed and its context shut down.

    The node's files are closed and rcl's logging flushed by then; what Python's finalisation
    would still do (tear down the modules, run the static destructors of the DDS and
    Pinocchio libraries) only costs time: 1.3 s per node process on its own, 2.8 s each with a
    stack's four ending at once on two busy cores, so ``ros2 launch`` escalated to SIGTERM
    after 5 s when two stacks stopped together.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
