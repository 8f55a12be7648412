"""The start-up's objects leave the garbage collector's full collections; its garbage is collected first."""

from __future__ import annotations

import gc
import weakref

from dynamic_identification.collector import freeze_startup_objects


class _Node:
    """A container the collector tracks."""

    partner: _Node | None = None


def test_the_objects_alive_at_start_up_are_frozen_and_its_garbage_cycles_are_freed() -> None:
    kept = [_Node() for _ in range(100)]
    garbage = _Node()
    garbage.partner = _Node()
    garbage.partner.partner = garbage  # a cycle: only the cyclic collector frees it
    dead = weakref.ref(garbage)
    del garbage

    frozen = freeze_startup_objects()

    assert dead() is None, "a garbage cycle of the start-up stayed in memory for the process's life"
    assert frozen == gc.get_freeze_count() >= len(kept)
    # Left out of every generation a collection visits.
    visited = {id(item) for item in gc.get_objects()}
    assert gc.is_tracked(kept[0]) and not any(id(node) in visited for node in kept)


def test_objects_created_after_the_freeze_are_still_collected() -> None:
    freeze_startup_objects()
    later = _Node()
    later.partner = _Node()
    later.partner.partner = later
    dead = weakref.ref(later)
    del later

    gc.collect()

    assert dead() is None
