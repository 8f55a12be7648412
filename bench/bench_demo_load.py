"""The node demo on a quiet machine and beside busy loops: the same figures, only a longer wall time.

Issue 22 benchmark. Runs :func:`~dynamic_identification.demo.run_node_demo` (the node pipeline of
``make demo``: ``sim_robot`` in lockstep with the recorder, the estimator and the demo's monitor)
once as it is, then once with ``--busy`` processes spinning ``while True: pass`` beside it (3 on
this 2-core machine: started here, and ended by their PIDs whatever happens), and prints for each
run its wall time, the samples published and lost, the kept and removed parameters, the condition
numbers, the RMS tracking improvement per joint and the identified load. Then it compares them:

* no sample lost in either run, no lockstep wait that hit its bound;
* the same kept and removed parameters;
* every joint's RMS tracking improvement with feedforward within 10 % of the quiet run's.

It exits 1 when a comparison fails. The default phases are the demo test's (21 s process, 18 s
window, about 3 min a run here); ``--duration 45 --window 30`` is ``make demo``'s.

Run: ``.venv/bin/python bench/bench_demo_load.py [--busy 3] [--duration 45 --window 30]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
from _common import busy_loops

from dynamic_identification.demo import NodeDemoResult, NodeDemoSettings, run_node_demo

IMPROVEMENT_TOLERANCE = 0.10
"""Largest relative difference of a joint's RMS tracking improvement between the runs."""


def describe(label: str, result: NodeDemoResult) -> str:
    """The figures of one run."""
    lines = [
        f"{label}: wall time {result.wall_time_s:.1f} s",
        f"  {result.samples.describe()}",
        f"  condition number {result.condition_number_full:.4g} -> {result.condition_number:.4g};"
        f" ||rho||/||Y|| {result.relative_error:.4f}",
        f"  kept ({len(result.kept)}): {' '.join(result.kept)}",
        f"  removed ({len(result.removed)}): {' '.join(result.removed)}",
        "  RMS tracking error lower with feedforward, %: "
        + ", ".join(
            f"{name} {value:.1f}" for name, value in zip(result.joint_names, result.reduction_percent, strict=True)
        ),
    ]
    payload = result.payload
    if payload is not None and payload.identified is not None:
        found, truth = payload.identified, payload.truth
        lines.append(
            f"  load: mass {found.mass_kg:.4g} kg ({100.0 * (found.mass_kg / truth.mass_kg - 1.0):+.2f} %), centre of"
            f" mass {1e3 * float(np.linalg.norm(found.com_m - truth.com_m)):.1f} mm off"
        )
    return "\n".join(lines)


def differences(quiet: NodeDemoResult, busy: NodeDemoResult) -> list[str]:
    """What the busy run does differently from the quiet one (empty: the same figures)."""
    found = []
    for label, result in (("quiet", quiet), ("busy", busy)):
        if result.samples.total_lost or result.samples.lockstep_timeouts:
            found.append(f"the {label} run lost samples: {result.samples.describe()}")
    if (quiet.kept, sorted(quiet.removed)) != (busy.kept, sorted(busy.removed)):
        found.append(
            f"kept parameters differ: only quiet {sorted(set(quiet.kept) - set(busy.kept))},"
            f" only busy {sorted(set(busy.kept) - set(quiet.kept))}"
        )
    moving = quiet.moving & busy.moving
    relative = np.abs(busy.reduction_percent - quiet.reduction_percent) / np.abs(quiet.reduction_percent)
    for name, value in zip(np.array(quiet.joint_names)[moving], relative[moving], strict=True):
        if value > IMPROVEMENT_TOLERANCE:
            found.append(f"{name}: RMS tracking improvement differs by {100.0 * value:.1f} % of the quiet run's")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=3, help="busy-loop processes beside the second run (default 3)")
    parser.add_argument("--duration", type=float, default=21.0, help="process length of each phase, s (default 21)")
    parser.add_argument("--window", type=float, default=18.0, help="estimator window, s (default 18)")
    arguments = parser.parse_args()
    settings = NodeDemoSettings(duration_s=arguments.duration, window_s=arguments.window)
    with tempfile.TemporaryDirectory(prefix="bench_demo_load_") as folder:
        quiet = run_node_demo(out_dir=Path(folder) / "quiet", settings=settings)
        print(describe("quiet", quiet), flush=True)
        with busy_loops(arguments.busy) as pids:
            print(f"busy loops beside the second run: PIDs {pids}", flush=True)
            busy = run_node_demo(out_dir=Path(folder) / "busy", settings=settings)
        print(describe(f"beside {arguments.busy} busy loops", busy))
    found = differences(quiet, busy)
    print(f"wall time x{busy.wall_time_s / quiet.wall_time_s:.2f}; " + ("; ".join(found) or "the same figures"))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
