"""Freed arrays go back to the system: the choice of ``dynid``'s verbs that hold a whole recording.

glibc's ``malloc`` serves a request above its mmap threshold (128 KiB at start) with ``mmap``
and gives it back to the system when it is freed, but freeing such a block raises the
threshold to its size (up to 32 MiB on 64-bit systems): the next arrays of that size come
from the heap, where freed memory stays in the process. An identification allocates arrays
of 1 to 30 MB in turn (a block of rows, a resampled or filtered signal), so its resident
memory grew by what fragmentation kept. Measured on ``bench/bench_identify.py`` (600 k
samples of a 6-axis arm): a peak of 722-738 MB with glibc's moving threshold, 594-598 MB with
a fixed one (128 KiB, 1 MiB or 4 MiB alike), in the same time. The sliding window's
``dynid stream`` is left as it is: its arrays of a few MB are allocated at every update, and
``mmap`` for each of them cost it 8 % of its time.

:func:`return_freed_memory` fixes the threshold (any explicit setting stops glibc moving it),
with ``mallopt``; elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import sys

M_MMAP_THRESHOLD = -3
"""``mallopt``'s parameter for the mmap threshold (glibc's ``malloc.h``)."""

MMAP_THRESHOLD_BYTES = 1 << 20
"""Arrays from 1 MiB up are mapped on their own and given back to the system when freed."""


def return_freed_memory() -> bool:
    """Fix glibc's mmap threshold at :data:`MMAP_THRESHOLD_BYTES`; whether it was set (``False`` off glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
