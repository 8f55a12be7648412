"""Time alignment of joint states with motor currents, and current → torque conversion."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from dynamic_identification.core.errors import DataError
from dynamic_identification.core.mechanism.robot import DriveChain
from dynamic_identification.core.signal.alignment import (
    AlignedSample,
    StreamAligner,
    current_polynomial,
    current_to_torque,
)

N_JOINTS = 3
SLOPE = np.array([0.5, -1.2, 2.0])  # A/s
OFFSET = np.array([0.1, 0.3, -0.7])  # A


def linear_currents(t: float | np.ndarray) -> np.ndarray:
    """Currents linear in time: interpolation between any two samples is exact."""
    return OFFSET + np.multiply.outer(t, SLOPE)


def jittered(rate_hz: float, count: int, *, offset_s: float, jitter_s: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return offset_s + np.arange(count) / rate_hz + rng.uniform(-jitter_s, jitter_s, count)


def joint_state(t: float) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    return t, np.sin(t + np.arange(N_JOINTS)), np.cos(t + np.arange(N_JOINTS)), np.full(N_JOINTS, 9.0)


def feed(aligner: StreamAligner, events: list[tuple[str, float]]) -> list[AlignedSample]:
    emitted: list[AlignedSample] = []
    for kind, t in events:
        if kind == "js":
            emitted += aligner.add_joint_state(*joint_state(t))
        else:
            emitted += aligner.add_currents(t, linear_currents(t))
    return emitted


def by_arrival(js: np.ndarray, cur: np.ndarray, *, js_delay_s: float, cur_delay_s: float) -> list[tuple[str, float]]:
    """Both streams merged in the order they would arrive after the given transport delays."""
    events = [(t + js_delay_s, "js", t) for t in js] + [(t + cur_delay_s, "cur", t) for t in cur]
    return [(kind, t) for _, kind, t in sorted(events)]


@pytest.mark.parametrize(("js_delay_s", "cur_delay_s"), [(0.0, 0.004), (0.004, 0.0), (0.001, 0.001)])
def test_jittered_joint_states_get_currents_interpolated_at_their_stamps(js_delay_s: float, cur_delay_s: float) -> None:
    js = jittered(500.0, 400, offset_s=0.01, jitter_s=2e-4, seed=1)
    cur = jittered(500.0, 410, offset_s=0.0093, jitter_s=2e-4, seed=2)
    aligner = StreamAligner(N_JOINTS)
    emitted = feed(aligner, by_arrival(js, cur, js_delay_s=js_delay_s, cur_delay_s=cur_delay_s))

    stamps = np.array([sample.stamp_s for sample in emitted])
    assert_allclose(stamps, js)  # every joint state, once, in order, at its own stamp
    currents = np.array([sample.current for sample in emitted])
    assert_allclose(currents, linear_currents(js), rtol=0.0, atol=1e-12)
    assert_allclose(emitted[5].position, joint_state(js[5])[1])
    assert_allclose(emitted[5].velocity, joint_state(js[5])[2])
    stats = aligner.stats
    assert (stats.aligned, stats.unaligned, stats.pending) == (400, 0, 0)
    assert stats.joint_states.accepted == 400 and stats.currents.accepted == 410


def test_equal_stamps_are_paired_without_waiting_for_the_next_current() -> None:
    aligner = StreamAligner(N_JOINTS)
    assert aligner.add_currents(1.0, linear_currents(1.0)) == []
    (sample,) = aligner.add_joint_state(*joint_state(1.0))
    assert_allclose(sample.current, linear_currents(1.0), rtol=0.0, atol=0.0)
    assert aligner.add_joint_state(*joint_state(1.001)) == []  # the joint state came first: it waits
    (sample,) = aligner.add_currents(1.001, linear_currents(1.001))
    assert sample.stamp_s == 1.001


def test_a_gap_in_the_currents_wider_than_the_tolerance_counts_joint_states_unaligned() -> None:
    js = np.arange(100) * 0.001
    cur = js[(js < 0.030) | (js > 0.060)]  # 30 ms without currents
    aligner = StreamAligner(N_JOINTS, tolerance_s=0.002)
    emitted = feed(aligner, by_arrival(js, cur, js_delay_s=0.0, cur_delay_s=0.0005))
    stamps = np.array([sample.stamp_s for sample in emitted])
    # Inside the gap no joint state has currents within 2 ms on both sides.
    lost = js[(js > 0.029 + 1e-9) & (js < 0.061 - 1e-9)]
    assert aligner.stats.unaligned == lost.size
    assert_allclose(stamps, np.setdiff1d(js, lost))
    assert_allclose(np.array([s.current for s in emitted]), linear_currents(stamps), atol=1e-12)


def test_joint_states_without_currents_are_dropped_after_max_delay_and_memory_stays_bounded() -> None:
    aligner = StreamAligner(N_JOINTS, max_delay_s=0.1)
    emitted = feed(aligner, [("js", t) for t in np.arange(1000) * 0.001])
    assert emitted == []
    stats = aligner.stats
    assert stats.pending <= 101
    # No current ever came: the currents had not begun, none was lost.
    assert (stats.unaligned, stats.before_currents + stats.pending) == (0, 1000)
    # Currents alone never pile up either.
    feed(aligner, [("cur", t) for t in 2.0 + np.arange(5000) * 0.001])
    assert len(aligner._buffer) <= 102


def test_a_joint_state_before_the_first_current_is_counted_apart_not_unaligned() -> None:
    # A recorder started while the robot runs: its joint-state subscription took a sample its currents subscription
    # had not yet (the currents had not begun for it). No current is missing, so nothing counts as unaligned.
    aligner = StreamAligner(N_JOINTS)
    feed(aligner, [("cur", 0.0101), ("cur", 0.0111), ("js", 0.0100), ("js", 0.0105)])
    stats = aligner.stats
    assert (stats.aligned, stats.unaligned, stats.before_currents) == (1, 0, 1)


def test_a_joint_state_the_currents_skip_after_they_began_is_unaligned() -> None:
    aligner = StreamAligner(N_JOINTS, tolerance_s=0.002)
    feed(aligner, [("cur", 0.000), ("js", 0.000), ("cur", 0.010), ("js", 0.005), ("cur", 0.011), ("js", 0.011)])
    stats = aligner.stats
    assert (stats.aligned, stats.unaligned, stats.before_currents) == (2, 1, 0)


def test_after_a_reset_the_currents_begin_again() -> None:
    aligner = StreamAligner(N_JOINTS)
    feed(aligner, [("cur", 0.0), ("js", 0.0), ("cur", 0.001), ("js", 0.001)])
    aligner.reset()
    feed(aligner, [("js", 0.0), ("cur", 0.0005), ("js", 0.001), ("cur", 0.0015)])
    stats = aligner.stats
    assert (stats.aligned, stats.unaligned, stats.before_currents) == (3, 0, 1)


def test_nan_duplicate_and_out_of_order_samples_are_counted_per_stream_and_not_emitted() -> None:
    aligner = StreamAligner(N_JOINTS)
    nan = np.full(N_JOINTS, np.nan)
    assert aligner.add_currents(0.0, linear_currents(0.0)) == []
    assert aligner.add_currents(0.001, nan) == []
    assert aligner.add_currents(0.0, linear_currents(0.0)) == []  # duplicate
    assert aligner.add_currents(0.002, linear_currents(0.002)) == []
    assert aligner.add_currents(0.0015, linear_currents(0.0015)) == []  # out of order
    assert aligner.add_joint_state(0.001, nan) == []
    emitted = aligner.add_joint_state(*joint_state(0.001))
    assert aligner.add_joint_state(*joint_state(0.001)) == []  # duplicate
    assert aligner.add_joint_state(*joint_state(0.0005)) == []  # out of order
    assert aligner.add_joint_state(float("nan"), np.zeros(N_JOINTS)) == []
    t, q, dq, _ = joint_state(0.0012)
    assert aligner.add_joint_state(t, q, dq, nan) == []  # a NaN effort is refused too

    assert [s.stamp_s for s in emitted] == [0.001]
    assert_allclose(emitted[0].current, linear_currents(0.001), atol=1e-12)
    stats = aligner.stats
    assert (stats.currents.received, stats.currents.accepted) == (5, 2)
    assert (stats.currents.rejected_nan, stats.currents.rejected_duplicate, stats.currents.rejected_out_of_order) == (
        1,
        1,
        1,
    )
    assert (stats.joint_states.received, stats.joint_states.accepted) == (6, 1)
    js = stats.joint_states
    assert (js.rejected_nan, js.rejected_duplicate, js.rejected_out_of_order, js.rejected) == (3, 1, 1, 5)
    assert (stats.aligned, stats.unaligned) == (1, 0)


def test_a_joint_state_stamped_again_with_new_positions_is_a_sample_and_only_a_repeat_is_refused() -> None:
    """A driver that stamps a sample with its predecessor's stamp (a stall, a millisecond counter): the recording
    keeps it for offline identification to place by its order; the same message twice is still a duplicate."""
    aligner = StreamAligner(N_JOINTS)
    t, q, dq, effort = joint_state(0.001)
    emitted = feed(aligner, [("cur", 0.0), ("cur", 0.002)]) + aligner.add_joint_state(t, q, dq, effort)
    emitted += aligner.add_joint_state(t, q + 1e-3, dq, effort)
    assert aligner.add_joint_state(t, q + 1e-3, dq, effort) == []
    assert [sample.stamp_s for sample in emitted] == [0.001, 0.001]
    assert_allclose(emitted[1].position, q + 1e-3)
    assert_allclose(emitted[1].current, linear_currents(0.001), atol=1e-12)
    states = aligner.stats.joint_states
    assert (states.accepted, states.rejected_duplicate) == (2, 1)


def test_effort_is_torque_passes_efforts_through_without_currents() -> None:
    aligner = StreamAligner(N_JOINTS, effort_is_torque=True)
    effort = np.array([1.5, -2.0, 0.25])
    (sample,) = aligner.add_joint_state(0.5, np.zeros(N_JOINTS), None, effort)
    assert sample.stamp_s == 0.5 and sample.current is None and sample.velocity is None
    assert_allclose(sample.effort, effort, rtol=0.0, atol=0.0)
    assert aligner.add_currents(0.5, np.ones(N_JOINTS)) == []
    with pytest.raises(DataError, match="effort"):
        aligner.add_joint_state(0.6, np.zeros(N_JOINTS))
    assert aligner.stats.aligned == 1


def test_reset_forgets_the_last_stamps_so_a_replayed_bag_aligns_again() -> None:
    aligner = StreamAligner(N_JOINTS)
    events = [("cur", 0.0), ("js", 0.0), ("cur", 0.001), ("js", 0.001)]
    assert len(feed(aligner, events)) == 2
    aligner.reset()
    assert len(feed(aligner, events)) == 2
    assert aligner.stats.joint_states.rejected == 0


def test_invalid_settings_and_shapes_are_refused_naming_them() -> None:
    with pytest.raises(DataError, match="tolerance_s"):
        StreamAligner(2, tolerance_s=0.0)
    with pytest.raises(DataError, match="max_delay_s"):
        StreamAligner(2, max_delay_s=float("nan"))
    with pytest.raises(DataError, match="n_joints"):
        StreamAligner(0)
    with pytest.raises(DataError, match=r"currents must have shape \(2,\)"):
        StreamAligner(2).add_currents(0.0, np.zeros(3))


@pytest.fixture
def chain() -> DriveChain:
    return DriveChain.create(2, gear_ratios=[100.0, 50.0], drive_gains=[0.4, 0.3], coupling=[[1.0, 0.0], [0.2, 1.0]])


def test_linear_conversion_is_the_drive_chain_gt_k_i(chain: DriveChain) -> None:
    currents = np.array([[1.0, -2.0], [0.5, 0.25]])
    expected = np.array(
        [
            [100.0 * 0.4 * 1.0 + 0.2 * 50.0 * 0.3 * -2.0, 50.0 * 0.3 * -2.0],
            [100.0 * 0.4 * 0.5 + 0.2 * 50.0 * 0.3 * 0.25, 50.0 * 0.3 * 0.25],
        ]
    )
    assert_allclose(current_to_torque(currents, chain), expected, rtol=1e-14)


def test_polynomial_conversion_matches_seed_002_eq_4_by_hand(chain: DriveChain) -> None:
    # [Swevers2002] eq. (4): τ_M = sign(I) (c0 + c1 |I| + c2 I² + c3 |I|³), then τ = Gᵀ τ_M.
    coefficients = [0.05, 0.4, -0.01, 0.002, 0.0, 0.3, 0.02, -0.001]
    currents = np.array([2.0, -3.0])
    tau_m1 = 0.05 + 0.4 * 2.0 - 0.01 * 4.0 + 0.002 * 8.0
    tau_m2 = -(0.3 * 3.0 + 0.02 * 9.0 - 0.001 * 27.0)
    expected = np.array([100.0 * tau_m1 + 0.2 * 50.0 * tau_m2, 50.0 * tau_m2])
    assert_allclose(current_to_torque(currents, chain, coefficients), expected, rtol=1e-14)
    # Odd in the current: reversing every current reverses every torque.
    assert_allclose(current_to_torque(-currents, chain, coefficients), -expected, rtol=1e-14)


def test_polynomial_with_only_c1_equal_to_the_gains_is_the_linear_model(chain: DriveChain) -> None:
    currents = np.random.default_rng(4).normal(scale=3.0, size=(50, 2))
    linear = current_polynomial(np.column_stack([np.zeros(2), chain.drive_gains, np.zeros(2), np.zeros(2)]), 2)
    assert_allclose(current_to_torque(currents, chain, linear), chain.joint_torques(currents), rtol=1e-13)


def test_a_polynomial_of_the_wrong_size_is_refused(chain: DriveChain) -> None:
    with pytest.raises(DataError, match="8 for 2 motors"):
        current_to_torque(np.zeros(2), chain, [0.0, 1.0, 0.0])
    with pytest.raises(DataError, match=r"currents must have shape"):
        current_to_torque(np.zeros(3), chain)
