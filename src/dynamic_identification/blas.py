"""One BLAS thread per process: the choice every entry point makes (``dynid``, the nodes).

The package's linear algebra is small and dense (normal matrices of tens of columns, QR of
tall matrices of a few hundred columns, Cholesky and eigenvalues of 4×4 to 100×100 blocks).
OpenBLAS's threads do not speed these up, and on a machine whose cores are busy with other
work (the nodes beside a robot driver, a build) they spin and wait for one another: on 2 shared
cores, ``scipy.linalg.null_space`` of a 58×84 matrix took 150 ms with 2 threads and 1.5 ms with
one, and a 600 k-sample ``dynid identify`` 29 s at load 3 and 116 s at load 10 (issue 26).

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
