"""One BLAS thread per process: the choice every entry point makes (``dynid``, the nodes).

The package's linear algebra is small and dense (normal matrices of tens of columns, QR of
tall matrices of a few hundred columns, Cholesky and eigenvalues of 4×4 to 100×100 blocks).
OpenBLAS's threads do not speed these up, and on a machine whose cores are busy with other
work (the nodes beside a robot driver, a build) they spin and wait for one another. Measured on
2 shared cores at load 6: ``scipy.linalg.null_space`` of a 58×84 matrix took 23 ms (14 ms of CPU)
with 2 threads and 0.8 ms with one; ``bench/bench_identify.py`` (600 k samples) 56 s wall and 31 s
of CPU with 2 threads, 18.5 s and 12.8 s with one at load 4-9, and beside two more busy processes
106 s and 25 s against 84 s and 14 s.

:func:`use_one_blas_thread` limits every BLAS library the process has loaded (NumPy's and
SciPy's OpenBLAS are separate libraries, so both are loaded first) with ``threadpoolctl``,
unless the user chose a thread count with ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` or
``MKL_NUM_THREADS``, which is then left as it is.
"""

from __future__ import annotations

import os

THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
"""Environment variables by which a user chooses the BLAS threads; when one is set, it is obeyed."""


def use_one_blas_thread() -> bool:
    """Limit the process's BLAS libraries to one thread each, unless a :data:`THREAD_VARIABLES` is set.

    Returns whether the limit was applied. Imports NumPy and SciPy's linear algebra (so their
    libraries are loaded and limited); call it from an entry point before the work starts.
    """
    if any(os.environ.get(name) for name in THREAD_VARIABLES):
        return False
    import numpy  # noqa: F401 - loads NumPy's BLAS so the limit reaches it
    import scipy.linalg  # noqa: F401 - SciPy's BLAS is another library
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
    return True
