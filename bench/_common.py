"""Set-up shared by the benchmarks: the closed-loop tests' five-bar, and the print-out of an excitation's limit usage.

The benchmarks run as scripts (``.venv/bin/python bench/NAME.py``), so this folder is on ``sys.path`` and
``import _common`` finds this module. The five-bar scenarios are the closed-loop tests' own
(``test/support/five_bar.py``: the mechanism, its drive terms, the tip payload, the Fourier motions, the
simulated tracking runs and the IDIM-TLS gains of two runs): the benchmarks measure what the tests assert,
from the same set-up rather than a copy of it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from dynamic_identification.core.excitation.safety import LimitUsage

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "support"))

from five_bar import (  # noqa: E402 - found on the path inserted above
    FIVE_BAR_DRIVE,
    TIP_PAYLOAD,
    fourier,
    identify_gains_from_runs,
    load_five_bar,
    track,
)

__all__ = [
    "FIVE_BAR_DRIVE",
    "TIP_PAYLOAD",
    "fourier",
    "identify_gains_from_runs",
    "load_five_bar",
    "print_limit_usage",
    "track",
]


def print_limit_usage(usage: LimitUsage) -> None:
    """One line per kind of limit: the fraction of each joint's position span, velocity and acceleration used."""
    for name, values in (
        ("position span", usage.position),
        ("velocity", usage.velocity),
        ("acceleration", usage.acceleration),
    ):
        print(f"  {name:<14} use " + " ".join(f"{value:5.2f}" for value in values))
