"""Samples missing from a regular stream, counted from the gaps between its stamps."""

from __future__ import annotations

import numpy as np
import pytest

from dynamic_identification.core.signal.stamps import StampGaps


def jittered(count: int, period_ns: int, *, seed: int, jitter: float = 0.2) -> np.ndarray:
    """Stamps of a ``period_ns`` stream with uniform jitter of ``±jitter`` periods, ns."""
    rng = np.random.default_rng(seed)
    return (np.arange(count) * period_ns + rng.uniform(-jitter, jitter, count) * period_ns).astype(np.int64)


@pytest.mark.parametrize(("period_ns", "seed"), [(200_000, 0), (1_000_000, 1), (4_000_000, 2)])
def test_dropped_samples_are_counted_exactly(period_ns: int, seed: int) -> None:
    stamps = 1_700_000_000 * 10**9 + jittered(20_000, period_ns, seed=seed)
    rng = np.random.default_rng(seed + 10)
    dropped = rng.random(stamps.size) < 0.2  # a fifth lost, in runs of every length
    dropped[[0, -1]] = False  # a loss is seen between two stamps that arrive
    gaps = StampGaps()
    counted = sum(gaps.add(int(stamp)) for stamp in stamps[~dropped])
    assert counted == gaps.missing == int(dropped.sum())
    assert gaps.period_s == pytest.approx(period_ns / 1e9, rel=0.05)


@pytest.mark.parametrize(("lost", "jitter", "seed"), [(0.55, 0.0, 0), (0.6, 0.1, 1), (0.65, 0.1, 2)])
def test_a_subscriber_that_loses_most_messages_counts_every_one(lost: float, jitter: float, seed: int) -> None:
    """A recorder on a loaded machine taking a 5 kHz stream (`test/system/test_recorder_rate.py` lost 4 413 of
    15 000 joint states and failed to account for 542): with half the messages lost or more, most steps span two
    periods or more, and the median step, taken as the period, counted those losses as none."""
    stamps = jittered(15_000, 200_000, seed=seed, jitter=jitter)
    dropped = np.random.default_rng(seed + 20).random(stamps.size) < lost
    dropped[[0, -1]] = False
    gaps = StampGaps()
    counted = sum(gaps.add(int(stamp)) for stamp in stamps[~dropped])
    assert counted == int(dropped.sum())
    assert gaps.period_s == pytest.approx(200e-6, rel=0.01)


def test_losses_before_the_period_is_learnt_are_counted_too() -> None:
    stamps = np.delete(np.arange(100) * 1_000_000, [3, 4, 5, 40])
    gaps = StampGaps()
    for stamp in stamps:
        gaps.add(int(stamp))
    assert gaps.missing == 4 and gaps.gaps == 2


def test_a_long_pause_is_an_interruption_not_missing_samples() -> None:
    stamps = np.concatenate([np.arange(100), 5000 + np.arange(100)]) * 1_000_000  # 4.9 s of silence
    gaps = StampGaps(max_gap_s=1.0)
    for stamp in stamps:
        gaps.add(int(stamp))
    assert (gaps.missing, gaps.interruptions) == (0, 1) and gaps.interrupted_s == pytest.approx(4.901)


def test_repeated_and_out_of_order_stamps_are_not_gaps() -> None:
    gaps = StampGaps()
    for stamp in [*range(0, 100), 99, 50, *range(100, 200)]:
        gaps.add(stamp * 1_000_000)
    assert gaps.missing == 0


def test_after_a_reset_the_jump_back_is_not_a_gap() -> None:
    gaps = StampGaps()
    for stamp in range(100):
        gaps.add(stamp * 1_000_000)
    gaps.reset()
    for stamp in range(100):
        gaps.add(stamp * 1_000_000)
    assert gaps.missing == 0 and gaps.interruptions == 0


def test_a_change_of_rate_is_followed() -> None:
    """A driver switched from 500 Hz to 1 kHz: its new period is learnt, no sample is counted missing."""
    stamps = np.concatenate([np.arange(3000) * 2_000_000, 6_000_000_000 + np.arange(5000) * 1_000_000])
    gaps = StampGaps()
    for stamp in stamps:
        gaps.add(int(stamp))
    assert gaps.period_s == pytest.approx(1e-3) and gaps.missing == 0
