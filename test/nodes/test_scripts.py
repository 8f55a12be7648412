"""The nodes' console scripts: a node stopped while it still imports its modules exits 0, without a traceback."""

from __future__ import annotations

import importlib.metadata
import os
import pathlib
import signal
import subprocess
import sys

import pytest

from dynamic_identification.nodes import scripts

SOURCE = pathlib.Path(__file__).resolve().parents[2] / "src"
NODES = ("recorder", "sim_robot", "excitation", "estimator", "feedforward")


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_the_node_module_imports_ends_the_process_with_exit_code_0(
    number: signal.Signals, tmp_path: pathlib.Path
) -> None:
    # A node module that is signalled in the middle of its imports, as `ros2 launch` does when Ctrl-C comes while
    # its nodes start; were the signal not handled, the import would go on and main() exit 3.
    (tmp_path / "slow_node.py").write_text(
        f"import os, signal, time\nos.kill(os.getpid(), signal.{number.name})\ntime.sleep(20.0)\n\n\n"
        "def main():\n    raise SystemExit(3)\n",
        encoding="utf-8",
    )
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(SOURCE)])}
    done = subprocess.run(
        [sys.executable, "-c", "from dynamic_identification.nodes.scripts import run_script; run_script('slow_node')"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("name", NODES)
def test_every_node_executable_starts_through_its_script(name: str) -> None:
    entry_points = importlib.metadata.entry_points(group="console_scripts", name=name)
    ours = [entry for entry in entry_points if entry.dist is not None and entry.dist.name == "dynamic_identification"]
    values = {entry.value for entry in ours}
    assert values == {f"dynamic_identification.nodes.scripts:{name}"}, "reinstall the package (make venv)"
    assert callable(getattr(scripts, name))
