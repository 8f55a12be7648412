"""``dynid``'s progress on stderr (:mod:`dynamic_identification.progress_display`): a bar on a terminal, else lines."""

from __future__ import annotations

import io
import logging
import sys

import pytest

from dynamic_identification.core.progress import Progress
from dynamic_identification.progress_display import stderr_progress


class Terminal(io.StringIO):
    """What stderr is when a person watches: a terminal."""

    def isatty(self) -> bool:
        return True


def feed(stream: io.StringIO | None, *, quiet: bool = False) -> None:
    with stderr_progress("dynid identify", quiet=quiet, stream=stream) as progress:
        progress(Progress("reading rec.csv"))
        for done in range(0, 60001, 10000):
            progress(Progress("observation matrix rows", done, 60000.0, "samples"))
        logging.getLogger("dynamic_identification.test").warning("a warning while the bar is drawn")
        progress(Progress("least squares"))


def test_on_a_terminal_each_stage_is_a_bar_left_complete_and_warnings_go_above_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    logger = logging.getLogger("dynamic_identification")
    handler = logging.StreamHandler(sys.stderr)  # what dynid installs for its warnings
    logger.addHandler(handler)
    try:
        feed(None)
    finally:
        logger.removeHandler(handler)
    text = terminal.getvalue()
    assert "\r" in text  # redrawn in place
    final = [line.split("\r")[-1] for line in text.split("\n") if line]
    rows = next(line for line in final if "observation matrix rows" in line)
    assert rows.startswith("dynid identify: observation matrix rows: 100%|") and "60.0k/60.0k samples" in rows
    assert final[-1] == "dynid identify: least squares"
    warning = next(i for i, line in enumerate(final) if line == "a warning while the bar is drawn")
    assert warning < len(final) - 1  # on a line of its own, above the bar of the next stage


def test_in_a_log_the_stages_are_plain_lines() -> None:
    log = io.StringIO()
    feed(log)
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue()
    assert lines[:2] == ["dynid identify: reading rec.csv", "dynid identify: observation matrix rows (60000 samples)"]
    assert "dynid identify: observation matrix rows: 100 % (60000 of 60000 samples)" in lines
    assert lines[-1] == "dynid identify: least squares"


def test_quiet_writes_nothing() -> None:
    for stream in (Terminal(), io.StringIO()):
        feed(stream, quiet=True)
        assert stream.getvalue() == ""
