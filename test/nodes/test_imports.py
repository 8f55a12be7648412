"""What a node process loads before it starts: only what it uses (issue 26)."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("scipy.signal", "scipy.stats", "scipy.interpolate", "cvxpy")


@pytest.mark.parametrize("node", ["recorder", "sim_robot", "feedforward"])
def test_a_node_that_never_filters_starts_without_scipy_signal_stats_or_cvxpy(node: str) -> None:
    # Half a second of imports (scipy.signal loads scipy.stats) that these nodes never use: each start paid it.
    code = (
        f"import sys, dynamic_identification.nodes.{node};"
        f" print(','.join(name for name in {HEAVY!r} if name in sys.modules))"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert completed.stdout.strip() == ""
