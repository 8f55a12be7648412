"""Progress of long computations: what a computation reports at its stages, and plain lines for logs.

An identification or an excitation plan runs for seconds to minutes (reading, the
observation rows, the solve; a search's budget, the checks). It reports where it is to a
:data:`ProgressCallback` its caller passes in with the
:class:`~dynamic_identification.core.cancellation.Cancellation` it polls: the long loops
that poll for a cancellation between their steps are the ones that report progress, so
one handle reaches both. A report is a :class:`Progress`: the stage by name, and how far
it is in a unit of its own (samples, seconds of a search budget) when it has a length.

The core only reports; how it is shown is the caller's: :class:`ThrottledLines` turns the
reports into plain text lines (a line when a stage begins, then one at most every
``fraction`` of its length or ``period_s`` of wall time), what a log file or the ROS log
wants; ``dynid`` draws a bar on a terminal (:mod:`dynamic_identification.progress_display`).
A callback must be cheap: the search calls it at every cost evaluation (about a millisecond
each), the observation rows at every block.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Progress:
    """One report of a long computation.

    Attributes
    ----------
    stage
        What the computation does now, e.g. ``"observation matrix rows"``; a new name
        begins a new stage.
    done
        How much of the stage is done, in ``unit``; 0 when it begins.
    total
        The stage's length in ``unit``; ``None`` for a stage of unknown length (reported
        once, when it begins).
    unit
        Unit of ``done`` and ``total``: ``"samples"``, ``"s"`` (of a wall-time budget),
        ``"evaluations"``.
    """

    stage: str
    done: float = 0.0
    total: float | None = None
    unit: str = ""

    @property
    def fraction(self) -> float | None:
        """``done / total`` within [0, 1]; ``None`` without a length."""
        if self.total is None or not self.total > 0.0:
            return None
        return min(max(self.done / self.total, 0.0), 1.0)


ProgressCallback = Callable[[Progress], None]
"""Where a computation sends its :class:`Progress` reports; called from the computing thread."""


def ignore_progress(_report: Progress) -> None:
    """The default callback: nobody watches."""


def _amount(value: float) -> str:
    """``value`` as a person reads it: whole numbers without decimals, others with 3 significant digits."""
    return f"{value:.0f}" if float(value).is_integer() or abs(value) >= 100 else f"{value:.3g}"


def progress_line(report: Progress) -> str:
    """The report as one line: ``stage``, ``stage (N unit)`` when it begins, ``stage: 40 % (400 of 1000 unit)``."""
    unit = f" {report.unit}" if report.unit else ""
    fraction = report.fraction
    if fraction is None:
        return report.stage
    if report.done <= 0.0:
        return f"{report.stage} ({_amount(report.total or 0.0)}{unit})"
    return f"{report.stage}: {100.0 * fraction:.0f} % ({_amount(report.done)} of {_amount(report.total or 0.0)}{unit})"


class ThrottledLines:
    """A :data:`ProgressCallback` that writes plain lines, few enough for a log.

    A line when a stage begins (its name and length), then, within the stage, a line when
    it has advanced by ``fraction`` of its length or ``period_s`` of wall time has passed
    since the last line, whichever comes first, and one when it is done; never a carriage
    return, so a log file or the ROS log reads them as they are.

    Parameters
    ----------
    emit
        Writes one line (``print`` to stderr, a logger's ``info``).
    fraction
        Advance of the stage between two lines, of its length (0.1: every 10 %).
    period_s
        Longest wall time between two lines of a stage that advances, s.
    clock
        Wall clock, s (``time.monotonic``; a test passes its own).
    """

    def __init__(
        self,
        emit: Callable[[str], None],
        *,
        fraction: float = 0.1,
        period_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not (0.0 < fraction <= 1.0):
            raise ValueError(f"fraction must be in (0, 1], got {fraction}")
        if not (math.isfinite(period_s) and period_s > 0.0):
            raise ValueError(f"period_s must be finite and > 0, got {period_s}")
        self.emit, self.fraction, self.period_s, self.clock = emit, fraction, period_s, clock
        self._stage: str | None = None
        self._last_fraction = 0.0
        self._last_time = 0.0
        self._finished = False

    def __call__(self, report: Progress) -> None:
        now = self.clock()
        if report.stage != self._stage:
            self._stage, self._last_fraction, self._last_time, self._finished = report.stage, 0.0, now, False
            self.emit(progress_line(Progress(report.stage, 0.0, report.total, report.unit)))
            if report.done <= 0.0:
                return
        fraction = report.fraction
        if fraction is None or self._finished or fraction <= self._last_fraction:
            return
        # 1e-9: the tenths of a float stage (0.3 - 0.2 < 0.1) still get their line.
        step = fraction - self._last_fraction >= self.fraction - 1e-9
        if fraction >= 1.0 or step or now - self._last_time >= self.period_s:
            self._last_fraction, self._last_time, self._finished = fraction, now, fraction >= 1.0
            self.emit(progress_line(report))


__all__ = ["Progress", "ProgressCallback", "ThrottledLines", "ignore_progress", "progress_line"]
