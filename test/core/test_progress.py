"""Progress reports of long computations (:mod:`dynamic_identification.core.progress`) and their plain lines."""

from __future__ import annotations

import pytest

from dynamic_identification.core.cancellation import Cancellation
from dynamic_identification.core.progress import Progress, ThrottledLines, progress_line


class Clock:
    """A wall clock the test moves: lines never depend on how fast the machine runs."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def lines_of(reports: list[tuple[Progress, float]]) -> list[str]:
    """The lines :class:`ThrottledLines` writes for ``reports``, each made at its wall time (s)."""
    clock, lines = Clock(), []
    watch = ThrottledLines(lines.append, clock=clock)
    for report, at in reports:
        clock.now = at
        watch(report)
    return lines


def test_a_stage_of_many_steps_gives_its_first_line_then_one_per_10_percent() -> None:
    reports = [(Progress("rows", done, 1000.0, "samples"), 0.0) for done in range(0, 1001)]
    lines = lines_of(reports)
    assert lines[0] == "rows (1000 samples)"
    assert lines[1:] == [f"rows: {p} % ({10 * p} of 1000 samples)" for p in range(10, 101, 10)]


def test_a_slow_stage_gets_a_line_every_5_s_between_its_10_percent_steps() -> None:
    reports = [(Progress("Fourier search", 0.3 * k, 30.0, "s"), 6.0 * k) for k in range(4)]
    assert lines_of(reports) == [
        "Fourier search (30 s)",
        "Fourier search: 1 % (0.3 of 30 s)",
        "Fourier search: 2 % (0.6 of 30 s)",
        "Fourier search: 3 % (0.9 of 30 s)",
    ]


def test_a_stage_without_length_is_one_line_and_a_repeated_report_adds_none() -> None:
    reports = [(Progress("reduction (none)"), 0.0), (Progress("reduction (none)"), 10.0), (Progress("solve"), 11.0)]
    assert lines_of(reports) == ["reduction (none)", "solve"]


def test_no_line_after_a_stage_is_done_and_no_carriage_return_ever() -> None:
    reports = [(Progress("rows", done, 10.0), 7.0 * done) for done in (0, 10, 10, 10)]
    lines = lines_of(reports)
    assert lines == ["rows (10)", "rows: 100 % (10 of 10)"]
    assert not any("\r" in line for line in lines)


def test_the_line_of_a_report_names_the_stage_the_share_and_the_amounts() -> None:
    assert progress_line(Progress("observation matrix rows", 0.0, 59846.0, "samples")) == (
        "observation matrix rows (59846 samples)"
    )
    assert progress_line(Progress("Fourier search", 12.345, 30.0, "s")) == "Fourier search: 41 % (12.3 of 30 s)"


def test_a_cancellation_forwards_the_reports_of_its_computation_to_the_callers_progress() -> None:
    seen: list[Progress] = []
    Cancellation(progress=seen.append).report("rows", 5.0, 10.0, "samples")
    assert seen == [Progress("rows", 5.0, 10.0, "samples")]


@pytest.mark.parametrize(("fraction", "period_s"), [(0.0, 5.0), (1.5, 5.0), (0.1, 0.0), (0.1, float("nan"))])
def test_throttling_settings_outside_their_range_are_refused(fraction: float, period_s: float) -> None:
    with pytest.raises(ValueError, match="must be"):
        ThrottledLines(print, fraction=fraction, period_s=period_s)
