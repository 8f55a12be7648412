"""Start-up objects out of the cyclic garbage collector's way: the choice of the long-running entry points.

CPython's cyclic collector runs a full collection (generation 2) whenever the objects that
survived its younger generations reach a quarter of the ones it already holds, and a full
collection visits every container object the process holds. A node holds tens of thousands of
them before its first message (the modules of NumPy, SciPy, Pinocchio and rclpy, their functions
and classes), almost none of which will ever be garbage, and its steady work (a sliding
window's update every second, messages at the robot's rate) allocates enough to trigger such a
collection now and then: a pause of tens of milliseconds at an arbitrary call, in the middle of
an update or between two torque commands.

:func:`freeze_startup_objects` collects once, then moves every object alive at that moment into
the collector's permanent generation (``gc.freeze``), which no later collection visits; the
objects created afterwards are collected as before. Frozen objects are still freed by reference
counting when they are no longer used; only a reference cycle among them that becomes garbage
later is kept, which at start-up is none of the process's lasting work.
``bench/bench_stream.py`` measures the window's updates with it.
"""

from __future__ import annotations

import gc


def freeze_startup_objects() -> int:
    """Collect the garbage of the start-up, then exempt every object alive now from later collections.

    Call it once the entry point's lasting objects exist (a node built, a window created), before
    its steady work. Returns the number of objects frozen.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
