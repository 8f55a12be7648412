"""Each system test runs its node processes in a namespace of its own.

Tests of one pytest process share a ROS domain, and two pytest processes may draw the
same one: a node process still shutting down from an earlier test, or another run's,
could otherwise hand a latched ``estimator/parameters`` or a diagnostics status to the
wrong test. The probe lives in the same namespace, subscribes to relative names and
ignores diagnostics of nodes outside it.
"""

from __future__ import annotations

import itertools
import os

import pytest

_COUNTER = itertools.count()


@pytest.fixture
def namespace() -> str:
    """A namespace no other test, run or process uses: ``t<pid>_<n>``."""
    return f"t{os.getpid()}_{next(_COUNTER)}"
