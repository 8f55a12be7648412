"""A node executable stopped while it still imports its modules exits 0, without a traceback; other programs that
import the nodes keep their own signal handling."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys

import pytest

SOURCE = pathlib.Path(__file__).resolve().parents[2] / "src"

# A program that imports the nodes and is signalled in the middle of its imports, as `ros2 launch` does when Ctrl-C
# comes while its nodes start; were the signal not handled, the import would go on and the program exit 3.
SIGNALLED_WHILE_IMPORTING = """import dynamic_identification.nodes
import os, signal, time
os.kill(os.getpid(), signal.{name})
time.sleep(20.0)
raise SystemExit(3)
"""


def _default_signal_dispositions() -> None:
    """As a program started from a terminal has them: a suite started in a shell's background (``make test &``)
    ignores SIGINT, and a child inherits that (Python then leaves SIGINT ignored)."""
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, signal.SIG_DFL)


def _run(script: pathlib.Path, number: signal.Signals) -> subprocess.CompletedProcess[str]:
    script.write_text(SIGNALLED_WHILE_IMPORTING.format(name=number.name), encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)],
        env={**os.environ, "PYTHONPATH": str(SOURCE)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=_default_signal_dispositions,
    )


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_node_executable_signalled_while_it_imports_exits_0_without_a_traceback(
    number: signal.Signals, tmp_path: pathlib.Path
) -> None:
    done = _run(tmp_path / "estimator", number)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def test_another_program_importing_the_nodes_keeps_its_own_signal_handling(tmp_path: pathlib.Path) -> None:
    done = _run(tmp_path / "my_tool", signal.SIGINT)
    assert done.returncode != 0 and "KeyboardInterrupt" in done.stderr, done.stderr
