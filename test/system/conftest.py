"""Each system test runs its node processes in a namespace of its own.

Tests of one pytest process share a ROS domain, and two pytest processes may draw the
same one: a node process still shutting down from an earlier test, or another run's,
could otherwise hand a latched ``estimator/parameters`` or a diagnostics status to the
wrong test. The probe lives in the same namespace, subscribes to relative names and
ignores diagnostics of nodes outside it.
"""

from __future__ import annotations

import gc
import itertools
import os
from collections.abc import Iterator

import pytest
from rclpy.context import Context

from .processes import Probe

_COUNTER = itertools.count()


@pytest.fixture
def namespace() -> str:
    """A namespace no other test, run or process uses: ``t<pid>_<n>``."""
    return f"t{os.getpid()}_{next(_COUNTER)}"


@pytest.fixture
def probe(context: Context, namespace: str, request: pytest.FixtureRequest) -> Iterator[Probe]:
    """The test's probe node in its namespace, named by the module's ``PROBE_NAME`` (default ``system_probe``).

    Start-up objects are frozen, so garbage collections stay short while samples stream into this process.
    """
    gc.collect()
    gc.freeze()
    item = Probe(context, name=getattr(request.module, "PROBE_NAME", "system_probe"), namespace=namespace)
    try:
        yield item
    finally:
        item.close()
        gc.unfreeze()
