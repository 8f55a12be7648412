"""Checks of arguments shared across the core.

The scalar checks of the signal-processing modules (:mod:`.signal`, :mod:`.periodic`) return
the value converted (``float`` or ``int``) or raise ``ValueError`` naming the argument and
quoting the value it got. The checks of motion samples (rows are samples, columns joints)
return them as float arrays or raise :class:`~dynamic_identification.core.errors.DataError`
naming the argument and the first bad sample.
"""

from __future__ import annotations

import numpy as np

from dynamic_identification.core.errors import DataError


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


def require_finite_samples(name: str, array: np.ndarray) -> None:
    """Raise ``DataError`` naming ``name`` and the first sample (row) of ``array`` with a non-finite value."""
    finite = np.isfinite(array)
    if not finite.all():
        raise DataError(f"{name} has a non-finite value at sample {int(np.argwhere(~finite)[0, 0])}")


def motion_rows(name: str, value: np.ndarray, n: int) -> np.ndarray:
    """``value`` as finite samples ``(N, n)`` (one sample ``(n,)`` becomes one row).

    Raises
    ------
    DataError
        Naming ``name`` and its shape, or the first sample with a non-finite value.
    """
    array = np.asarray(value, dtype=float)
    array = array.reshape(1, -1) if array.ndim == 1 else np.atleast_2d(array)
    if array.ndim != 2 or array.shape[1] != n:
        raise DataError(f"{name} must have shape (N, {n}), got {np.shape(value)}")
    require_finite_samples(name, array)
    return array


def motion_samples(q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions, velocities and accelerations as finite samples ``(N, n)`` of the same length (:func:`motion_rows`).

    Raises
    ------
    DataError
        If one is not finite samples ``(N, n)`` (naming it), or their shapes differ.
    """
    q, dq, ddq = motion_rows("q", q, n), motion_rows("dq", dq, n), motion_rows("ddq", ddq, n)
    if not q.shape == dq.shape == ddq.shape:
        raise DataError(f"q, dq, ddq differ in shape: {q.shape}, {dq.shape}, {ddq.shape}")
    return q, dq, ddq
