"""What ``run_node`` leaves behind when a node refuses its parameters: nothing that fails afterwards; what it does
before a built node spins: the start-up's objects out of the garbage collector's full collections.

rclpy tracks every node of a context from the start of ``Node.__init__`` and destroys the ones
still alive when the context shuts down, a node whose constructor raised among them. The
recorder's ``destroy_node`` then failed on attributes its constructor never set, and a
30-line traceback followed the one ``FATAL`` line (issue 23, finding 6).
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap

import pytest
import rclpy
from rclpy.context import Context
from rclpy.exceptions import ParameterException
from rclpy.parameter import Parameter

REFUSED = [
    ("recorder", "RecorderNode", "tolerance_s", -1.0),
    ("recorder", "RecorderNode", "tolerance_s", "abc"),
    ("estimator", "EstimatorNode", "window.window_s", -1.0),
    ("excitation", "ExcitationNode", "harmonics", 0),
    ("feedforward", "FeedforwardNode", "rate_hz", 0.0),
    ("sim_robot", "SimRobotNode", "rate_hz", 0.0),
]


@pytest.mark.parametrize(("module", "name", "key", "value"), REFUSED, ids=[f"{m}-{k}={v}" for m, _, k, v in REFUSED])
def test_a_node_that_refused_its_parameters_is_destroyed_by_the_context_without_error(
    module: str, name: str, key: str, value: object
) -> None:
    node_class = getattr(importlib.import_module(f"dynamic_identification.nodes.{module}"), name)
    context = Context()
    rclpy.init(context=context)
    try:
        with pytest.raises((ValueError, ParameterException), match=key.replace(".", r"\.")) as refused:
            node_class(context=context, parameter_overrides=[Parameter(key, value=value)])
        # The error's traceback keeps the half-built node alive, as it does in run_node while it logs and exits.
        assert refused.value.__traceback__ is not None
    finally:
        context.try_shutdown()  # destroys the half-built node, as run_node's shutdown does


FREEZE_PROBE = textwrap.dedent(
    """
    import gc, os, signal
    from rclpy.node import Node
    from dynamic_identification.nodes.runner import run_node

    def create():
        node = Node("freeze_probe")
        def probe():
            print(gc.get_freeze_count(), flush=True)
            os.kill(os.getpid(), signal.SIGINT)
        node.create_timer(0.01, probe)
        return node

    run_node("freeze_probe", create, args=[])
    """
)


def test_a_spinning_node_left_its_start_up_objects_out_of_the_full_collections() -> None:
    """A full collection visited every module object, a pause of tens of milliseconds in a callback."""
    done = subprocess.run([sys.executable, "-c", FREEZE_PROBE], capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    frozen = int(done.stdout.split()[0])
    assert frozen > 10_000  # rclpy, NumPy and the package's modules


@pytest.mark.parametrize("argv", [["sim_robot", "--help"], ["sim_robot", "-h", "--ros-args", "-p", "rate_hz:=500.0"]])
def test_asking_a_node_for_help_prints_its_usage_and_starts_nothing(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from dynamic_identification.nodes.runner import run_node

    def create() -> rclpy.node.Node:
        raise AssertionError("the node was built")

    with pytest.raises(SystemExit) as caught:
        run_node("sim_robot", create, args=argv)
    assert caught.value.code == 0
    printed = capsys.readouterr().out
    assert printed.startswith("usage: sim_robot [--ros-args") and "ros2 param list /sim_robot" in printed
    assert not rclpy.ok()
