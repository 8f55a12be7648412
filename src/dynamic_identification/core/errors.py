"""Exceptions of the numerical core.

Every error the core raises on bad input is a :class:`IdentificationError` (a
``ValueError``), so callers can catch one type and print its one-line message.
"""


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
