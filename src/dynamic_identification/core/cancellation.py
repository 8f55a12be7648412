"""Cancellation of long computations: a request the caller sets, polled by the computation between its steps.

A planner runs for as long as its budget allows (minutes for a long Fourier period or a
large ``time_budget_s``); its caller (a node being destroyed, a user pressing Ctrl-C) may
no longer want the result. The caller passes a :class:`Cancellation` whose ``requested``
it can make true from anywhere (``threading.Event().is_set``); the computation polls it
through :meth:`Cancellation.check` at the few places every long loop passes — a search's
cost evaluation (:meth:`~.excitation.optimisation.BudgetedSearch.spend`), a bisection
step, a chunk of a limit or torque check — and ends with
:class:`~.errors.PlanningCancelled`. A poll is one call of ``requested`` (0.15 µs for an
``Event`` on a loaded 2-core machine), against a millisecond per cost evaluation: the
check costs nothing measurable, and a computation that is not cancelled returns exactly
what it returned without it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dynamic_identification.core.errors import PlanningCancelled


def _never() -> bool:
    return False


@dataclass(frozen=True)
class Cancellation:
    """A caller's request to stop a computation, polled between its steps.

    Attributes
    ----------
    requested
        True once the caller wants the computation to stop, e.g. ``threading.Event().is_set``.
        Called from the computing thread at every poll: it must be cheap and thread-safe.
    """

    requested: Callable[[], bool] = _never

    def check(self) -> None:
        """Return while the computation may go on; raise :class:`~.errors.PlanningCancelled` once asked to stop."""
        if self.requested():
            raise PlanningCancelled("planning cancelled by its caller")


NEVER = Cancellation()
"""The default of every computation that takes one: never cancelled."""
