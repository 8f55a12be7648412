"""Checks of scalar arguments shared by the signal-processing modules (:mod:`.signal`, :mod:`.periodic`).

Each returns the value converted (``float`` or ``int``) or raises ``ValueError`` naming the
argument and quoting the value it got.
"""

from __future__ import annotations

import numpy as np


def positive_finite(name: str, value: float) -> float:
    """Return ``value`` as a float, or raise ``ValueError`` naming ``name`` if it is not finite and > 0."""
    v = float(value)
    if not np.isfinite(v) or v <= 0.0:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return v


def integer_at_least(name: str, value: int, minimum: int) -> int:
    """Return ``value`` as an int, or raise ``ValueError`` naming ``name`` if it is not an integer >= ``minimum``.

    ``bool`` is refused although it is an ``int``: ``True`` is not a count.
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)
