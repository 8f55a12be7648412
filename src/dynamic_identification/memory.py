"""Freed large arrays go back to the system: the choice of ``dynid``'s verbs that hold a whole recording.

glibc's ``malloc`` serves a request above its mmap threshold (128 KiB at start) with ``mmap``
and gives it back to the system when it is freed, but freeing such a block raises the
threshold to its size (up to 32 MiB on 64-bit systems): the next arrays of that size come
from the heap, where freed memory stays in the process. An identification holds signals of
the whole recording (tens of MB each: 29 MB for 600 k samples of 6 joints) and allocates
smaller arrays in turn (a block of rows, a joint's column, a per-stage temporary), so with the
moving threshold its resident memory grew by what fragmentation kept of the large ones.

:func:`return_freed_memory` fixes the threshold at :data:`MMAP_THRESHOLD_BYTES` (any explicit
setting stops glibc moving it), with ``mallopt``; elsewhere than glibc it does nothing. The
threshold sits between the two kinds of array: the whole-recording signals are mapped and given
back, while the blocks are reused from the heap. A lower threshold mapped every block of a few
MB afresh, and the kernel zero-filled its pages at each first touch, in page faults that cost the
identification system time (figures in the README's ``bench_identify.py`` row). The sliding
window's ``dynid stream`` is left as it is: its arrays of a few MB are allocated at every update.
"""

from __future__ import annotations

import ctypes
import sys

M_MMAP_THRESHOLD = -3
"""``mallopt``'s parameter for the mmap threshold (glibc's ``malloc.h``)."""

MMAP_THRESHOLD_BYTES = 16 << 20
"""Arrays from 16 MiB up are mapped on their own and given back to the system when freed. The blocks an
identification works through stay below for arms of up to 7 joints: its decimated rows (1-4 MB at a time), the
observation matrix at every sample (``PACKED_CHUNK_SAMPLES``, 14 standard columns a joint: 8.3 MB for 6 joints, 11 MB
for 7) and the pivoted QR's weighted rows (``QR_BLOCK_SAMPLES`` of the kept base columns: 11 MB for the shipped arm's
58, 16 MB for 69 of a 7-axis arm)."""


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
