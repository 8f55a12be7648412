"""Progress of ``dynid``'s long verbs on stderr: a bar on a terminal, plain lines in a log.

The core reports stages and how far each is (:mod:`dynamic_identification.core.progress`);
this adapter shows them on stderr only, since stdout carries the verb's report, which
scripts parse. On a terminal each stage is a `tqdm <https://tqdm.github.io>`_ bar (rate and
time left), left on screen when the stage ends, and the package's warnings are printed
above the bar rather than through it; when stderr is a file or a pipe (CI, ``2> log``) the
same reports are plain lines (:class:`~dynamic_identification.core.progress.ThrottledLines`:
a line per stage, then at most one per 10 % or 5 s), never a carriage return.
"""

from __future__ import annotations

import logging
import shutil
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, TextIO

from tqdm import tqdm

from dynamic_identification.core.progress import Progress, ProgressCallback, ThrottledLines, ignore_progress

_LENGTH_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} {unit} [{elapsed}<{remaining}]"
_STAGE_FORMAT = "{desc}"


class StageBars:
    """A :data:`~dynamic_identification.core.progress.ProgressCallback` drawing one tqdm bar per stage on ``stream``.

    A stage of unknown length is one line with its name; the bar of the previous stage is
    closed (left on screen, complete or not) when the next begins, and by :meth:`close`.
    """

    def __init__(self, prefix: str, stream: TextIO) -> None:
        self.prefix, self.stream = prefix, stream
        self._stage: str | None = None
        self._bar: Any = None

    def __call__(self, report: Progress) -> None:
        if report.stage != self._stage:
            self.close()
            self._stage = report.stage
            size = shutil.get_terminal_size()
            self._bar = tqdm(
                total=report.total,
                desc=f"{self.prefix}: {report.stage}",
                unit=report.unit,
                unit_scale=report.unit == "samples",
                bar_format=_STAGE_FORMAT if report.total is None else _LENGTH_FORMAT,
                file=self.stream,
                # A pseudo-terminal may report a size of 0 (tqdm then draws nothing): shutil falls back to 80 × 24.
                ncols=size.columns,
                nrows=size.lines,
                leave=True,
            )
        if self._bar is not None and report.total is not None and report.done > self._bar.n:
            self._bar.update(report.done - self._bar.n)

    def close(self) -> None:
        """Close the current stage's bar (it stays on screen)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


@contextmanager
def stderr_progress(prefix: str, *, quiet: bool = False, stream: TextIO | None = None) -> Iterator[ProgressCallback]:
    """The progress callback of a ``dynid`` verb whose lines begin with ``prefix`` (``dynid identify``).

    ``quiet``: none. On a terminal (``stream.isatty()``): :class:`StageBars`, with the
    package's warnings written above the bars while they are drawn; otherwise
    :class:`~dynamic_identification.core.progress.ThrottledLines` ``prefix: line`` on
    ``stream`` (default ``sys.stderr``). Leaving the context closes the last bar, so the
    verb's report or error is printed on a line of its own.
    """
    target = sys.stderr if stream is None else stream
    if quiet:
        yield ignore_progress
    elif target.isatty():
        bars = StageBars(prefix, target)
        try:
            with _warnings_above_bars():
                yield bars
        finally:
            bars.close()
    else:
        yield ThrottledLines(lambda line: print(f"{prefix}: {line}", file=target, flush=True))


def _warnings_above_bars() -> AbstractContextManager[object]:
    """The package's log lines written above the bars (``tqdm.write``) while they are drawn."""
    try:
        from tqdm.contrib.logging import logging_redirect_tqdm
    except ImportError:  # tqdm < 4.60 (Ubuntu 22.04's python3-tqdm): warnings may cut a bar, nothing worse
        return nullcontext()
    return logging_redirect_tqdm(loggers=[logging.getLogger("dynamic_identification")])


__all__ = ["StageBars", "stderr_progress"]
