"""Exceptions of the numerical core.

Every error the core raises on bad input is a :class:`IdentificationError` (a
``ValueError``), so callers can catch one type and print its one-line message.
"""

from __future__ import annotations

import reprlib


class IdentificationError(ValueError):
    """Base class: the input cannot be identified; the message names the problem."""


class DataError(IdentificationError):
    """A recording is unusable: missing columns, NaN, bad stamps, too few samples."""


class InsufficientExcitationError(IdentificationError):
    """The robot did not move enough for the requested identification."""


class RankDeficientError(IdentificationError):
    """The observation matrix does not determine every requested parameter."""


class ModelError(IdentificationError):
    """The robot description or drive-chain configuration is inconsistent."""


class PlanningCancelled(Exception):
    """The caller withdrew a long computation before it finished (:class:`~.cancellation.Cancellation`).

    Not an :class:`IdentificationError`: nothing was wrong with the input, so the handlers
    that refuse bad input (and the loops that retry after one) must let it through.
    """


MESSAGE_LIMIT = 400
"""Longest error message (characters) the package prints or logs: a value is never printed whole."""


def brief(value: object, limit: int = 120) -> str:
    """A bounded ``repr`` of ``value`` for error messages, at most ``limit`` characters.

    Work and output stay bounded whatever the value: nested containers are shown to
    three levels and six items each, strings and bytes are cut before ``repr``, huge
    integers are described by their size. A YAML "billion laughs" list, a 2 GB line
    or a 10⁶-digit integer cost microseconds and print as a short summary.
    """
    return shorten(_BRIEF.repr(value), limit)


def shorten(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` on one line, cut to ``limit`` characters with ``…`` (keeps its start, where the cause is)."""
    line = " ".join(text[: 4 * limit].split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class _BriefRepr(reprlib.Repr):
    """``reprlib.Repr`` whose string, bytes and integer forms never build the full ``repr`` first."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxtuple = self.maxlist = self.maxarray = self.maxdict = self.maxset = self.maxfrozenset = 6
        self.maxdeque = 6
        self.maxstring = self.maxother = 80
        self.maxlong = 40

    def repr_str(self, x: str, level: int) -> str:
        cut = x[: self.maxstring]
        return repr(cut) + ("…" if len(x) > self.maxstring else "")

    def repr_bytes(self, x: bytes, level: int) -> str:
        cut = x[: self.maxstring]
        return repr(cut) + ("…" if len(x) > self.maxstring else "")

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 128:
            return f"<integer of {x.bit_length()} bits>"
        return repr(x)


_BRIEF = _BriefRepr()
