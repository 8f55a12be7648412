"""Cancellation of long computations: a request the caller sets, polled by the computation between its steps.

A planner runs for as long as its budget allows (minutes for a long Fourier period or a
large ``time_budget_s``); its caller (a node being destroyed, a user pressing Ctrl-C) may
no longer want the result. The caller passes a :class:`Cancellation` whose ``requested``
it can make true from anywhere (``threading.Event().is_set``); the computation polls it
through :meth:`Cancellation.check` at the few places every long loop passes — a search's
cost evaluation (:meth:`~.excitation.optimisation.BudgetedSearch.spend`), a bisection
step, a chunk of a limit or torque check, a block of identification rows — and ends with
:class:`~.errors.PlanningCancelled`. A poll is one call of ``requested`` (0.15 µs for an
``Event`` on a loaded 2-core machine), against a millisecond per cost evaluation: the
check costs nothing measurable, and a computation that is not cancelled returns exactly
what it returned without it.

The same places report how far the computation is (:meth:`Cancellation.report`) to the
caller's ``progress`` callback (:mod:`~dynamic_identification.core.progress`): the caller
that may stop a long computation is the one that wants to see it advance, so one handle
carries both, and the loops that poll one report the other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dynamic_identification.core.errors import PlanningCancelled
from dynamic_identification.core.progress import Progress, ProgressCallback, ignore_progress


def _never() -> bool:
    return False


@dataclass(frozen=True)
class Cancellation:
    """A caller's request to stop a computation, polled between its steps, and where the computation reports progress.

    Attributes
    ----------
    requested
        True once the caller wants the computation to stop, e.g. ``threading.Event().is_set``.
        Called from the computing thread at every poll: it must be cheap and thread-safe.
    progress
        Receives the computation's :class:`~.progress.Progress` reports, from the computing
        thread (default: nobody watches). It must be cheap and must not raise.
    """

    requested: Callable[[], bool] = _never
    progress: ProgressCallback = ignore_progress

    def check(self) -> None:
        """Return while the computation may go on; raise :class:`~.errors.PlanningCancelled` once asked to stop."""
        if self.requested():
            raise PlanningCancelled("planning cancelled by its caller")

    def report(self, stage: str, done: float = 0.0, total: float | None = None, unit: str = "") -> None:
        """Tell the caller: at ``stage``, ``done`` of ``total`` ``unit`` (:class:`~.progress.Progress`)."""
        self.progress(Progress(stage, done, total, unit))


NEVER = Cancellation()
"""The default of every computation that takes one: never cancelled, nobody watches its progress."""
