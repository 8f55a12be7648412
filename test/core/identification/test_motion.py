"""What the recording decides: stamps, cut-off and velocity source (:func:`resolve_signal`)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from dynamic_identification.core.errors import DataError, InsufficientExcitationError
from dynamic_identification.core.identification import SignalSettings
from dynamic_identification.core.identification.motion import (
    AUTO_CUTOFF_RANGE_HZ,
    automatic_cutoff_hz,
    check_motion,
    estimate_motion,
    joint_travel,
    motion_bandwidth_hz,
    resolve_signal,
    row_instants,
    sample_instants,
)
from dynamic_identification.core.signal.filters import (
    differentiate,
    lowpass_to_edges,
    lowpass_zero_phase,
    recover_stamps,
    recovered_instants,
    resample_uniform,
    roughness,
)

RATE_HZ = 1000.0
PERIOD_S = 1.0 / RATE_HZ


def motion_derivatives(time: np.ndarray, fundamental_hz: float = 0.1, harmonics: int = 5) -> tuple[np.ndarray, ...]:
    """Positions, velocities and accelerations of :func:`motion`, in closed form."""
    rng = np.random.default_rng(0)
    q, dq, ddq = (np.zeros((time.size, 2)) for _ in range(3))
    for harmonic in range(1, harmonics + 1):
        omega = 2.0 * np.pi * fundamental_hz * harmonic
        a, b = rng.uniform(-0.3, 0.3, size=(2, 2)) / harmonic
        sin, cos = np.sin(omega * time)[:, None], np.cos(omega * time)[:, None]
        q += sin * a + cos * b
        dq += omega * (cos * a - sin * b)
        ddq -= omega**2 * (sin * a + cos * b)
    return q, dq, ddq


def motion(time: np.ndarray, fundamental_hz: float = 0.1, harmonics: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Positions (rad) and velocities (rad/s) of two joints moving on a band-limited Fourier series."""
    q, dq, _ = motion_derivatives(time, fundamental_hz, harmonics)
    return q, dq


def late_stamps(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Samples taken every millisecond, stamped when the driver's thread runs: 0-0.6 ms late."""
    instants = np.arange(count) * PERIOD_S
    delay = np.random.default_rng(seed).exponential(0.15e-3, size=count).clip(max=0.6e-3)
    return instants, instants + delay


def test_recover_stamps_returns_exact_stamps_unchanged() -> None:
    time = 3.0 + np.arange(5000) * PERIOD_S
    recovered = recover_stamps(time)
    assert_allclose(recovered.time, time, atol=1e-12)
    assert recovered.jitter < 1e-6


def test_recover_stamps_undoes_a_millisecond_counter_on_a_978_hz_stream() -> None:
    instants = np.arange(20_000) / 978.0
    stamps = np.floor(instants * 1e3) / 1e3
    recovered = recover_stamps(stamps)
    # The counter's stamps are up to a whole millisecond off; the recovered instants are off by
    # a constant (the counter's mean truncation, half a tick) and a tenth of a millisecond besides.
    error = np.abs((recovered.time - instants) - np.median(recovered.time - instants))
    assert np.abs(stamps - instants).max() > 0.9e-3
    assert np.percentile(error, 99) < 0.1e-3
    assert error.max() < 0.2e-3
    assert recovered.period_s == pytest.approx(1.0 / 978.0, rel=1e-5)


def test_recover_stamps_keeps_a_gap_of_lost_samples() -> None:
    instants, stamps = late_stamps(10_000, seed=1)
    kept = np.r_[0:4000, 4200:10_000]
    recovered = recover_stamps(stamps[kept])
    steps = np.diff(recovered.time)
    assert steps[3999] == pytest.approx(201 * PERIOD_S, rel=0.01)
    error = recovered.time - instants[kept]
    assert np.abs(error - np.median(error)).max() < 0.05e-3


@pytest.mark.parametrize("kept", [np.r_[0:2995, 2998:3000], np.r_[0:2, 5:3000]], ids=["at the end", "at the start"])
def test_samples_lost_near_an_end_move_the_instants_beyond_them(kept: np.ndarray) -> None:
    """Three samples lost two samples from a recording's end (a UR5 log at 100 Hz): the running median, which sees
    no more than those two beyond the step, kept them three periods early, and `dynid predict` gave their rows
    torques up to 4.6 times the RMS torque off."""
    instants, stamps = late_stamps(3000, seed=5)
    error = recover_stamps(stamps[kept]).time - instants[kept]
    assert np.abs(error - np.median(error)).max() < 0.1 * PERIOD_S


def test_a_stall_at_the_end_stays_outvoted() -> None:
    """The last samples stamped together when a stalled driver thread resumes: late, not samples lost before them."""
    instants = np.arange(3000) * PERIOD_S
    stamps = instants.copy()
    stamps[-4:] = instants[-1] + 1e-5 * np.arange(4)
    error = recover_stamps(stamps).time - instants
    assert np.abs(error).max() < 0.1 * PERIOD_S


def test_recovered_instants_are_those_of_recover_stamps_and_fail_alike() -> None:
    # What a sliding window recovers every update, without the diagnostics the decision needed.
    _, stamps = late_stamps(3000, seed=4)
    kept = stamps[np.r_[0:1200, 1260:3000]]  # with a gap
    assert np.array_equal(recovered_instants(kept), recover_stamps(kept).time)
    bunched = np.r_[np.arange(40) * PERIOD_S, 0.0395 + np.arange(1, 40) * 1e-6, 0.05 + np.arange(40) * PERIOD_S]
    for stamps_s in (kept[::-1], bunched):
        with pytest.raises(DataError) as expected:
            recover_stamps(stamps_s)
        with pytest.raises(DataError, match=str(expected.value)):
            recovered_instants(stamps_s)


def test_positions_are_smoother_against_the_instants_they_were_taken_at() -> None:
    instants, stamps = late_stamps(5000, seed=2)
    q, _ = motion(instants)
    right = roughness(instants, q, rate_hz=RATE_HZ, cutoff_hz=20.0)
    wrong = roughness(stamps, q, rate_hz=RATE_HZ, cutoff_hz=20.0)
    assert np.all(right < 0.1 * wrong)


def test_late_stamps_of_regular_samples_are_recovered_with_the_reason() -> None:
    instants, stamps = late_stamps(30_000, seed=3)
    q, _ = motion(instants)
    choice = resolve_signal(stamps, q, SignalSettings())
    assert choice.signal.stamps == "recovered"
    assert "recovered from the sample order" in choice.reasons[0]
    assert "smoother" in choice.reasons[0]
    assert choice.rate_hz == pytest.approx(RATE_HZ, rel=1e-4)


def test_each_row_is_predicted_at_its_recovered_instant_not_at_its_late_stamp() -> None:
    """``dynid predict`` read its prediction at each row's stamp: up to 0.6 ms late here, tens of ms after a driver's
    stall, and beyond the last grid point at the end (a Panda log's last row went without a torque)."""
    instants, stamps = late_stamps(30_000, seed=3)
    stamps[100] = stamps[99]  # a sample stamped again with its predecessor's stamp: placed by its order
    q, _ = motion(instants)
    # A repeated message (stamp and positions of row 200 again): dropped, it takes the instant of the row it repeats.
    repeated = np.insert(np.arange(instants.size), 201, 200)
    choice = resolve_signal(stamps[repeated], q[repeated], SignalSettings())
    rows = row_instants(stamps[repeated], choice)
    assert rows[201] == rows[200]
    rows = np.delete(rows, 201)

    def rms_s(times: np.ndarray) -> float:
        """RMS distance from the true instants but for a constant (the recovered instants keep the stamps' clock)."""
        off = times - instants
        return float(np.sqrt(np.mean((off - np.median(off)) ** 2)))

    # Measured: 17.6 µs against the stamps' 144 µs.
    assert rms_s(rows) < 0.05 * PERIOD_S and rms_s(rows) < 0.2 * rms_s(stamps)
    assert rows[100] - rows[99] == pytest.approx(PERIOD_S, rel=0.05)
    assert_allclose(row_instants(instants, resolve_signal(instants, q, SignalSettings())), instants)


def test_a_millisecond_counter_on_a_coarse_encoder_is_recovered() -> None:
    """A Panda-like stream: 978 Hz, stamped by a 1 ms counter, 14-bit encoders (0.38 mrad steps)."""
    instants = np.arange(30_000) / 978.0
    stamps = np.floor(instants * 1e3) / 1e3
    step = 2.0 * np.pi / 2**14
    q = np.round(motion(instants)[0] / step) * step
    choice = resolve_signal(stamps, q, SignalSettings())
    assert choice.signal.stamps == "recovered"
    assert choice.rate_hz == pytest.approx(978.0, rel=1e-4)


def counter_stamps_with_collisions_dropped(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A Panda-like stream whose samples jitter by 20 µs under a 1 ms counter: two samples sometimes read the same
    millisecond, and the second is dropped as a repeated stamp (as every stream here drops it). The instants and
    stamps of the samples kept."""
    instants = np.arange(count) / 978.0
    jitter = np.random.default_rng(seed).normal(0.0, 2e-5, count)
    stamps = np.floor((instants + jitter) * 1e3) / 1e3
    kept = np.concatenate(([True], np.diff(np.maximum.accumulate(stamps)) > 0.0))
    return instants[kept], stamps[kept]


def test_recover_stamps_counts_the_missing_samples_it_spreads() -> None:
    """A sample missing from the order of stamps that scatter by a whole tick becomes a ramp, not a step."""
    instants, stamps = counter_stamps_with_collisions_dropped(20_000, seed=6)
    assert instants.size < 20_000 - 20
    recovered = recover_stamps(stamps)
    error = (recovered.time - instants) - np.median(recovered.time - instants)
    # The ramps misplace the samples by up to half a period: worse than the counter's own tick in the band.
    assert np.abs(error).max() > 0.4e-3
    assert recovered.smeared_steps > 20
    clean = np.arange(20_000) / 978.0
    assert recover_stamps(np.floor(clean * 1e3) / 1e3).smeared_steps == 0
    assert recover_stamps(late_stamps(10_000, seed=1)[1]).smeared_steps == 0


def test_a_millisecond_counter_that_lost_colliding_samples_keeps_its_stamps() -> None:
    instants, stamps = counter_stamps_with_collisions_dropped(30_000, seed=7)
    q, _ = motion(instants)
    choice = resolve_signal(stamps, q, SignalSettings())
    assert choice.signal.stamps == "recorded"
    assert "the sample order slips" in choice.reasons[0]


def test_samples_stamped_again_are_recovered_in_their_order() -> None:
    """A driver log as an independent simulator wrote it (a Panda at 1 kHz, stamps up to 0.6 ms late, a sample in
    2000 stamped again with its predecessor's stamp, a message in 3000 sent twice): the stamped-again samples were
    dropped with the repeated messages, each left a sample missing from the order, and the stamps were kept ("the
    sample order slips 15 times"), each position misplaced by its stamp's delay."""
    count = 30_000
    instants, stamps = late_stamps(count, seed=8)
    rng = np.random.default_rng(8)
    again = rng.choice(np.arange(10, count - 10), size=count // 2000, replace=False)
    stamps[again] = stamps[again - 1]
    rows = np.sort(np.concatenate([np.arange(count), rng.choice(np.arange(10, count - 10), size=count // 3000)]))
    q, _ = motion(instants)
    choice = resolve_signal(stamps[rows], q[rows], SignalSettings())
    assert choice.signal.stamps == "recovered"
    placed = f"{again.size} samples stamped again with their predecessor's stamp are placed by their order"
    assert placed in choice.reasons[0]
    read = row_instants(stamps[rows], choice)
    error = read - instants[rows] - np.median(read - instants[rows])
    # Every row within a tenth of a period of the instant its sample was taken at (the stamps: up to 0.6 periods).
    assert np.abs(error).max() < 0.1 * PERIOD_S


def test_exact_stamps_of_a_jittering_sampler_are_kept() -> None:
    """A sampler that jitters but stamps each sample exactly: the stamps scatter, the positions say keep them."""
    rng = np.random.default_rng(4)
    stamps = np.arange(30_000) * PERIOD_S + rng.uniform(-0.3e-3, 0.3e-3, size=30_000)
    q, _ = motion(stamps)
    choice = resolve_signal(stamps, q, SignalSettings())
    assert choice.signal.stamps == "recorded"
    assert "no smoother" in choice.reasons[0]


def test_regular_stamps_are_kept_without_comparing() -> None:
    stamps = np.arange(30_000) * PERIOD_S
    q, _ = motion(stamps)
    choice = resolve_signal(stamps, q, SignalSettings())
    assert choice.signal.stamps == "recorded"
    assert "regular" in choice.reasons[0]


def test_recovered_stamps_give_better_accelerations_than_late_ones() -> None:
    """What the recovery is for: accelerations of the filtered positions, compared with the truth."""
    instants, stamps = late_stamps(30_000, seed=5)
    q, _ = motion(instants)
    errors = {}
    for source in ("recorded", "recovered"):
        settings = SignalSettings(stamps=source, position_cutoff_hz=10.0)
        (segment,), _ = estimate_motion(stamps, q, settings)
        grid = segment.time
        # Differentiate the true motion twice on the grid, away from the filter's edges.
        step = 1e-4
        truth = (motion(grid + step)[0] - 2.0 * motion(grid)[0] + motion(grid - step)[0]) / step**2
        inner = slice(2000, -2000)
        errors[source] = np.linalg.norm(segment.ddq[inner] - truth[inner]) / np.linalg.norm(truth[inner])
    assert errors["recovered"] < 0.5 * errors["recorded"], errors


def test_automatic_cutoff_is_twenty_times_the_motion_bandwidth_within_its_range() -> None:
    low, high = AUTO_CUTOFF_RANGE_HZ
    assert automatic_cutoff_hz(0.5, RATE_HZ) == pytest.approx(10.0)
    assert automatic_cutoff_hz(0.01, RATE_HZ) == low
    assert automatic_cutoff_hz(5.0, RATE_HZ) == high
    assert automatic_cutoff_hz(5.0, 100.0) == pytest.approx(10.0)  # a tenth of a 100 Hz rate


def test_the_automatic_cutoff_is_stored_as_decided_without_the_rates_float_noise() -> None:
    """A 1 Hz Welch bin of a rate measured from the stamps' median period came out 0.9999999999999991 Hz: 20 times
    it was stored and printed as 19.999999999999982 Hz."""
    assert automatic_cutoff_hz(0.9999999999999991, RATE_HZ) == 20.0
    assert automatic_cutoff_hz(5.0, 124.99999999999989) == 12.5  # a tenth of a 125 Hz rate from its stamps
    assert automatic_cutoff_hz(0.13333333333333333, RATE_HZ) == 2.666666667  # every digit the decision made
    time = np.arange(3750) / 125.0
    choice = resolve_signal(time, motion(time, fundamental_hz=0.2)[0], SignalSettings())
    assert choice.rate_hz != 125.0 and choice.signal.position_cutoff_hz == 12.5


@pytest.mark.parametrize(("fundamental_hz", "fastest_hz"), [(0.1, 0.5), (0.2, 1.0)])
def test_motion_bandwidth_is_near_the_fastest_harmonic_despite_encoder_noise(
    fundamental_hz: float, fastest_hz: float
) -> None:
    time = np.arange(60_000) * PERIOD_S
    q, _ = motion(time, fundamental_hz=fundamental_hz)
    noisy = q + np.random.default_rng(6).normal(0.0, 1e-4, size=q.shape)
    bandwidth = motion_bandwidth_hz(noisy, RATE_HZ)
    assert 0.6 * fastest_hz <= bandwidth <= 1.3 * fastest_hz


def test_the_cutoff_follows_the_motion() -> None:
    time = np.arange(60_000) * PERIOD_S
    slow = resolve_signal(time, motion(time, fundamental_hz=0.05)[0], SignalSettings())
    fast = resolve_signal(time, motion(time, fundamental_hz=0.2)[0], SignalSettings())
    assert slow.signal.position_cutoff_hz < fast.signal.position_cutoff_hz
    assert "bandwidth" in slow.reasons[2]


def test_recorded_velocities_are_used_when_they_agree_and_not_when_they_lag() -> None:
    time = np.arange(30_000) * PERIOD_S
    q, dq = motion(time)
    agreeing = resolve_signal(time, q, SignalSettings(), dq_measured=dq)
    assert agreeing.signal.velocity == "measured"
    assert agreeing.reasons[-1].endswith("differentiated positions, in time with them)")
    # A driver's backward difference agrees as well and lags half a period: said, with what to do about it.
    backward = np.vstack([dq[:1], np.diff(q, axis=0) / PERIOD_S])
    lagging = resolve_signal(time, q, SignalSettings(), dq_measured=backward)
    assert "lagging them by 0.5 ms, 0.5 sample periods: signal.velocity differentiated" in lagging.reasons[-1]
    _, lagging = motion(time - 0.05)  # a 50 ms filter lag in the drive's velocity estimate
    lagged = resolve_signal(time, q, SignalSettings(), dq_measured=lagging)
    assert lagged.signal.velocity == "differentiated"
    assert "differ by" in lagged.reasons[-1]
    none = resolve_signal(time, q, SignalSettings())
    assert none.signal.velocity == "differentiated"


def test_explicit_settings_are_kept_and_not_explained() -> None:
    instants, stamps = late_stamps(30_000, seed=7)
    q, dq = motion(instants)
    settings = SignalSettings(
        stamps="recorded", position_cutoff_hz=15.0, velocity="measured", rate_hz=RATE_HZ, decimation=10
    )
    choice = resolve_signal(stamps, q, settings, dq_measured=dq)
    assert choice.signal == settings
    assert choice.reasons == ()


def stall_then_gap_stamps() -> np.ndarray:
    """1 kHz stamps that no running median can order: a 20-period stall, its catch-up, then a gap of 7 periods."""
    residual = np.zeros(1200)
    residual[400:460] = 20 * PERIOD_S
    residual[460:481] = 20 * PERIOD_S - 0.95 * PERIOD_S * np.arange(1, 22)
    residual[481:] = residual[480] + 6 * PERIOD_S
    return np.arange(1200) * PERIOD_S + residual


def test_stamps_auto_keeps_stamps_the_recovery_cannot_order() -> None:
    # Before, "the recovered sample instants do not increase" ended the identification (and the demo's phase c).
    stamps = stall_then_gap_stamps()
    with pytest.raises(DataError, match="do not increase"):
        recover_stamps(stamps)
    instants = sample_instants(stamps, motion(stamps)[0], SignalSettings(stamps="auto"))
    assert not instants.recovered
    assert_allclose(instants.time, stamps)
    with pytest.raises(DataError, match="do not increase"):
        sample_instants(stamps, motion(stamps)[0], SignalSettings(stamps="recovered"))


@pytest.mark.parametrize(("hiccup_samples", "segments"), [(7, 1), (30, 2)])
def test_a_hiccup_is_bridged_and_only_a_gap_that_matters_for_the_filter_splits(
    hiccup_samples: int, segments: int
) -> None:
    # 1 kHz, cut-off 20 Hz: steps up to a quarter of its period (12.5 ms) are bridged, not the 5 periods of
    # gap_factor alone (before, the 8 ms step of a 7-sample hiccup split the data and cost 2 × 0.2 s of edges).
    time = np.arange(6000) * PERIOD_S
    keep = np.ones(time.size, dtype=bool)
    keep[3000 : 3000 + hiccup_samples] = False
    q, _ = motion(time)
    settings = SignalSettings(position_cutoff_hz=20.0, stamps="recorded", velocity="differentiated")
    motions, _ = estimate_motion(time[keep], q[keep], settings)
    assert len(motions) == segments
    _, _, ddq = motion_derivatives(time)
    for piece in motions:
        rows = np.rint(piece.time / PERIOD_S).astype(int)
        assert_allclose(piece.ddq, ddq[rows], atol=0.01 * np.abs(ddq).max())


def test_a_prediction_keeps_every_row_of_a_segment_with_its_edges_extrapolated() -> None:
    time = np.arange(3000) * PERIOD_S
    q, _ = motion(time)
    _, _, ddq = motion_derivatives(time)
    settings = SignalSettings(position_cutoff_hz=20.0, stamps="recorded", velocity="differentiated")
    trimmed, _ = estimate_motion(time, q, settings)
    whole, _ = estimate_motion(time, q, settings, edges=True)
    assert trimmed[0].time.size == time.size - 2 * 200
    assert_allclose(whole[0].time, time)
    # The acceleration to the last sample, where odd padding was off by the full acceleration.
    assert_allclose(whole[0].ddq, ddq, atol=0.02 * np.abs(ddq).max())


@pytest.mark.parametrize("edges", [False, True])
@pytest.mark.parametrize("velocity", ["differentiated", "measured"])
def test_a_motion_differentiates_any_block_of_rows_as_the_whole_recording(edges: bool, velocity: str) -> None:
    """A long recording's velocities and accelerations are never held whole: each block of rows, first and last
    included, is differentiated on its own and must equal, bit for bit, the band-pass derivatives of the whole
    resampled positions (or the whole filtered measured velocities and their derivatives)."""
    time = np.arange(3000) * PERIOD_S
    q, dq_recorded = motion(time)
    settings = SignalSettings(position_cutoff_hz=20.0, stamps="recorded", velocity=velocity)
    (segment,), _ = estimate_motion(time, q, settings, dq_measured=dq_recorded, edges=edges)
    rate = segment.rate_hz  # from the stamps
    _, q_uniform = resample_uniform(time, q, rate)
    q_filtered, dq, ddq = differentiate(
        q_uniform, rate_hz=rate, cutoff_hz=20.0, edges="extrapolated" if edges else "odd"
    )
    if velocity == "measured":
        _, dq_uniform = resample_uniform(time, dq_recorded, rate)
        dq = (lowpass_to_edges if edges else lowpass_zero_phase)(dq_uniform, cutoff_hz=20.0, rate_hz=rate)
        ddq = np.gradient(dq, 1.0 / rate, axis=0, edge_order=2)
    inner = slice(0, None) if edges else slice(200, -200)
    assert_array_equal(segment.q, q_filtered[inner])
    assert_array_equal(segment.dq, dq[inner])
    assert_array_equal(segment.ddq, ddq[inner])
    rows = segment.time.size
    for block in (slice(0, 1), slice(0, 50), slice(700, 1300), slice(rows - 3, rows)):
        part = segment.rows(block)
        assert_array_equal(part.q, segment.q[block])
        assert_array_equal(part.dq, segment.dq[block])
        assert_array_equal(part.ddq, segment.ddq[block])
    assert segment.projection is None


def test_a_motions_torques_are_read_on_its_grid_from_the_recorded_ones_not_held_again() -> None:
    # A 600 k-sample recording's torques on the grid are 29 MB at the peak of an identification's memory: the motion
    # reads them from the recorded ones where it is asked, bit for bit the rows of the whole linear resampling.
    rng = np.random.default_rng(8)
    time = np.arange(3000) * PERIOD_S + np.concatenate([[0.0], rng.uniform(-1e-4, 1e-4, 2999)])
    q, _ = motion(time)
    torques = rng.normal(size=q.shape)
    settings = SignalSettings(position_cutoff_hz=20.0, stamps="recorded", velocity="differentiated")
    (segment,), _ = estimate_motion(time, q, settings, torques=torques)
    assert segment.torques is not None
    _, expected = resample_uniform(time, torques, segment.rate_hz, kind="linear")
    assert_array_equal(segment.torques.whole(), expected[200:-200])
    assert_array_equal(segment.torques[700:1300], expected[900:1500])
    assert np.shares_memory(segment.torques.values, torques)


def test_each_joints_travel_is_its_largest_position_less_its_smallest() -> None:
    rng = np.random.default_rng(4)
    q = np.cumsum(rng.normal(size=(5000, 6)), axis=0)
    expected = q.max(axis=0) - q.min(axis=0)
    assert_array_equal(joint_travel(q), expected)
    assert_array_equal(joint_travel(np.asfortranarray(q)), expected)
    assert_array_equal(joint_travel(q[:1]), np.zeros(6))
    with pytest.raises(InsufficientExcitationError, match="largest joint travel"):
        check_motion(q[:1], tuple("abcdef"), min_motion_rad=0.01)
    assert_array_equal(check_motion(q, tuple("abcdef"), min_motion_rad=0.01), expected)
