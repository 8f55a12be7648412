"""Tests of the signal-processing core ([Gautier2013] §IV.A, eq. (13)-(14))."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.interpolate
import scipy.signal
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from dynamic_identification.core.errors import DataError
from dynamic_identification.core.signal.filters import (
    ParallelDecimator,
    clean_time_stamps,
    decimation_taps,
    default_decimation,
    derivatives_at,
    differentiate,
    interpolate_at,
    linear_resampling,
    lowpass_zero_phase,
    parallel_decimate,
    resample_uniform,
)
from dynamic_identification.core.signal.stamps import accepted_samples

RATE_HZ = 1000.0


# ----------------------------------------------------------------------------- time stamps


def test_duplicate_stamps_are_counted_and_dropped() -> None:
    time = np.array([0.0, 0.001, 0.001, 0.002, 0.002, 0.002, 0.003])
    report = clean_time_stamps(time)
    assert_array_equal(report.keep, [0, 1, 3, 6])
    assert report.duplicates_dropped == 3
    assert report.segments == ((0, 4),)
    assert report.nominal_dt == pytest.approx(0.001)


def test_a_sample_stamped_again_is_kept_and_a_repeated_message_dropped() -> None:
    time = np.array([0.0, 0.001, 0.001, 0.003, 0.003, 0.004])
    q = np.array([[0.0, 1.0], [0.1, 1.0], [0.2, 1.0], [0.3, 1.0], [0.3, 1.0], [0.4, 1.0]])
    report = clean_time_stamps(time, values=q)
    # Row 2 holds new positions under row 1's stamp: a sample. Row 4 repeats row 3 whole: a message sent twice.
    assert_array_equal(report.keep, [0, 1, 2, 3, 5])
    assert (report.repeated_stamps, report.duplicates_dropped) == (1, 1)
    assert report.segments == ((0, 5),)
    assert_array_equal(clean_time_stamps(time).keep, [0, 1, 3, 5])


def test_a_stamp_slightly_earlier_than_one_before_it_is_left_out_and_counted_as_the_streams_do() -> None:
    # Stale or out of order (a driver's late message, two stamps swapped): the streams drop it (accepted_samples).
    time = np.array([0.0, 0.001, 0.002, 0.0015, 0.003, 0.0025, 0.004])
    report = clean_time_stamps(time)
    assert_array_equal(report.keep, np.flatnonzero(accepted_samples(time)))
    assert_array_equal(report.keep, [0, 1, 2, 4, 6])
    assert (report.stale_dropped, report.duplicates_dropped, report.segments) == (2, 0, ((0, 5),))


def test_a_recording_that_starts_again_says_so_and_how_to_go_on() -> None:
    # A bag played twice: its stamps jump back by the run's length (the user run: "out-of-order stamps" named
    # neither the cause nor a way round it).
    time = np.concatenate([np.arange(0.0, 5.0, 0.001), np.arange(0.0, 5.0, 0.001)])
    with pytest.raises(DataError, match=r"the recording restarts there \(a bag played twice.*dynid stream") as error:
        clean_time_stamps(time)
    assert "\n" not in str(error.value)


def test_nan_stamp_raises_naming_its_index() -> None:
    time = np.array([0.0, 0.001, np.nan, 0.003])
    with pytest.raises(DataError, match=r"time\[2\]"):
        clean_time_stamps(time)


def test_single_sample_raises() -> None:
    with pytest.raises(DataError, match="at least 2"):
        clean_time_stamps(np.array([1.0]))


def test_gap_splits_segments_and_jitter_does_not() -> None:
    rng = np.random.default_rng(0)
    time = np.arange(300) * 0.001 + rng.uniform(-2e-4, 2e-4, 300)
    time[150:] += 0.5  # a 0.5 s drop-out, 500 nominal periods
    report = clean_time_stamps(time, gap_factor=5.0)
    assert report.duplicates_dropped == 0
    assert report.segments == ((0, 150), (150, 300))
    assert report.nominal_dt == pytest.approx(0.001, rel=0.05)


# ----------------------------------------------------------------------------- resampling


def test_cubic_resample_of_jittered_sine_matches_the_sine() -> None:
    rng = np.random.default_rng(1)
    time = np.arange(2000) * 0.001 + rng.uniform(-3e-4, 3e-4, 2000)
    f_hz = np.array([0.5, 2.0])
    values = np.sin(2 * np.pi * time[:, None] * f_hz)
    grid, out = resample_uniform(time, values, RATE_HZ, kind="cubic")
    assert_allclose(np.diff(grid), 1e-3, rtol=1e-9)
    assert grid[0] == time[0] and grid[-1] <= time[-1]
    # Cubic spline error ~ h^4 |f''''| / 384 with h ~ 1.6 ms, 2 Hz: ~1e-11; edges are looser.
    assert_allclose(out, np.sin(2 * np.pi * grid[:, None] * f_hz), atol=1e-8)


def test_linear_resample_is_exact_on_a_ramp_with_trailing_axes() -> None:
    rng = np.random.default_rng(2)
    time = np.sort(rng.uniform(0.0, 1.0, 200))
    slopes = rng.standard_normal((2, 3))
    values = 1.0 + time[:, None, None] * slopes
    grid, out = resample_uniform(time, values, 250.0, kind="linear")
    assert out.shape == (grid.size, 2, 3)
    assert_allclose(out, 1.0 + grid[:, None, None] * slopes, atol=1e-12)


def test_a_linear_resampling_read_block_by_block_is_the_whole_resampling_bit_for_bit() -> None:
    # What an identification reads its torques with: any slice of grid rows, the first and the last included,
    # from the recorded samples themselves (not a copy of them, nor the recording held again on the grid), and of a
    # resampling kept within the rows a segment's filter margins leave.
    rng = np.random.default_rng(3)
    time = np.arange(5001) * 1e-3 + rng.uniform(-3e-4, 3e-4, 5001)
    values = rng.standard_normal((5001, 3))
    grid, expected = resample_uniform(time, values, RATE_HZ, kind="linear")
    resampling = linear_resampling(time, values, RATE_HZ)
    assert resampling.shape == expected.shape
    assert np.shares_memory(resampling.values, values)
    assert_array_equal(resampling.whole(), expected)
    bounds = [0, 1, 7, 1000, 2500, 4997, grid.size]
    blocks = [resampling[start:stop] for start, stop in zip(bounds[:-1], bounds[1:], strict=True)]
    assert_array_equal(np.concatenate(blocks), expected)
    assert resampling[3:3].shape == (0, 3)
    inner = resampling.within(slice(200, grid.size - 200))
    assert inner.shape == (grid.size - 400, 3)
    assert_array_equal(inner[10:1010], expected[210:1210])
    assert_array_equal(inner.whole(), expected[200 : grid.size - 200])


def test_a_linear_resampling_refuses_what_resample_uniform_refuses() -> None:
    with pytest.raises(DataError, match="strictly increasing"):
        linear_resampling(np.array([0.0, 0.002, 0.001]), np.zeros((3, 2)), RATE_HZ)
    with pytest.raises(DataError, match="NaN"):
        linear_resampling(np.arange(3) * 1e-3, np.array([[0.0], [np.nan], [1.0]]), RATE_HZ)


def test_resample_rejects_unknown_kind() -> None:
    with pytest.raises(ValueError, match="kind"):
        resample_uniform(np.arange(5.0), np.arange(5.0), 1.0, kind="quadratic")


# ----------------------------------------------------------------------------- filtering


def test_lowpass_rejects_cutoff_at_or_above_nyquist() -> None:
    x = np.zeros(100)
    with pytest.raises(ValueError, match="cutoff_hz=500"):
        lowpass_zero_phase(x, cutoff_hz=500.0, rate_hz=RATE_HZ)
    with pytest.raises(ValueError, match="cutoff_hz=600"):
        lowpass_zero_phase(x, cutoff_hz=600.0, rate_hz=RATE_HZ)


def test_lowpass_is_zero_phase_and_removes_high_frequencies() -> None:
    t = np.arange(4000) / RATE_HZ
    slow, fast = np.sin(2 * np.pi * 1.0 * t), np.sin(2 * np.pi * 200.0 * t)
    y = lowpass_zero_phase(np.column_stack([slow + fast, 2 * slow]), cutoff_hz=20.0, rate_hz=RATE_HZ)
    inner = slice(500, -500)
    # 1 Hz is 1/20 of the cut-off: the squared 4th-order gain is 1 - 4e-11, phase 0.
    assert_allclose(y[inner, 0], slow[inner], atol=1e-6)
    assert_allclose(y[inner, 1], 2 * slow[inner], atol=2e-6)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_lowpass_equals_scipy_sosfiltfilt_along_any_axis(axis: int) -> None:
    rng = np.random.default_rng(7)
    x = np.moveaxis(rng.standard_normal((700, 3, 2)).cumsum(axis=0), 0, axis)
    padlen = int(np.ceil(3.0 * RATE_HZ / 20.0))
    expected = scipy.signal.sosfiltfilt(
        scipy.signal.butter(4, 20.0, fs=RATE_HZ, output="sos"), x, axis=axis, padlen=padlen
    )
    assert_allclose(lowpass_zero_phase(x, cutoff_hz=20.0, rate_hz=RATE_HZ, axis=axis), expected, rtol=0.0, atol=1e-12)


def test_cubic_interpolation_is_the_not_a_knot_spline() -> None:
    rng = np.random.default_rng(8)
    time = np.arange(300) * 0.001 + rng.uniform(-3e-4, 3e-4, 300)
    values = rng.standard_normal((300, 4)).cumsum(axis=0)
    grid = np.linspace(time[0], time[-1], 517)
    expected = scipy.interpolate.CubicSpline(time, values, axis=0, bc_type="not-a-knot")(grid)
    assert_allclose(interpolate_at(time, values, grid, kind="cubic"), expected, rtol=0.0, atol=1e-9)


def test_local_cubic_is_exact_for_cubics_and_independent_of_the_block() -> None:
    rng = np.random.default_rng(9)
    time = np.arange(400) * 0.001 + rng.uniform(-3e-4, 3e-4, 400)
    coefficients = rng.standard_normal((4, 3))
    values = np.polynomial.polynomial.polyval(time, coefficients).T
    grid = np.linspace(time[0], time[-1], 611)
    exact = np.polynomial.polynomial.polyval(grid, coefficients).T
    whole = interpolate_at(time, values, grid, kind="local_cubic")
    assert_allclose(whole, exact, rtol=0.0, atol=1e-9)
    # A block that holds each grid instant's four neighbours gives the same values, bit for bit.
    inner = (grid > time[100]) & (grid < time[199])
    block = interpolate_at(time[99:201], values[99:201], grid[inner], kind="local_cubic")
    assert_array_equal(block, whole[inner])


def test_differentiate_sum_of_sines_matches_analytic_derivatives() -> None:
    rng = np.random.default_rng(3)
    t = np.arange(10_000) / RATE_HZ
    amp = np.array([0.8, 0.3, 0.1])  # rad
    omega = 2 * np.pi * np.array([0.1, 0.7, 2.0])  # rad/s
    phase = np.array([0.3, 1.1, 2.0])
    arg = t[:, None] * omega + phase
    q = np.sin(arg) @ amp
    dq = (omega * np.cos(arg)) @ amp
    ddq = (-(omega**2) * np.sin(arg)) @ amp
    noise = 1e-5  # rad, about one 19-bit encoder count
    q_filtered, dq_est, ddq_est = differentiate(
        (q + noise * rng.standard_normal(t.size))[:, None], rate_hz=RATE_HZ, cutoff_hz=20.0
    )
    inner = slice(200, -200)  # drop 4 / cutoff_hz = 0.2 s of edge transient at each end

    # Signal distortion is negligible (filter gain at 2 Hz: 1 - 1e-8; central-difference error
    # (omega dt)^2 / 6 ~ 3e-5 relative at 2 Hz, less for the larger slow terms). The residual is
    # the noise passed by the band-pass derivative of order k: std ~ noise (2 pi f_c)^k
    # sqrt(2 f_c / ((2k + 1) rate)), i.e. 2e-6 rad, 1.5e-4 rad/s and 1.4e-2 rad/s^2, relative to
    # the RMS of the true signals (0.61 rad, 1.34 rad/s, 11.9 rad/s^2): 3e-6, 1.1e-4 and 1.2e-3.
    # Tolerances are about three times these.
    def rel_rms(est: np.ndarray, truth: np.ndarray) -> float:
        return float(np.sqrt(np.mean((est[inner, 0] - truth[inner]) ** 2) / np.mean(truth[inner] ** 2)))

    assert rel_rms(q_filtered, q) < 1e-5
    assert rel_rms(dq_est, dq) < 3e-4
    assert rel_rms(ddq_est, ddq) < 4e-3


def test_differentiate_without_filter_is_exact_on_a_parabola() -> None:
    t = np.arange(50) / RATE_HZ
    q = np.column_stack([3.0 * t**2 - t, -0.5 * t**2])
    q_out, dq, ddq = differentiate(q, rate_hz=RATE_HZ, cutoff_hz=None)
    assert_array_equal(q_out, q)
    assert_allclose(dq, np.column_stack([6.0 * t - 1.0, -t]), atol=1e-10)
    assert_allclose(ddq, np.broadcast_to([6.0, -1.0], ddq.shape), atol=1e-6)


@pytest.mark.parametrize(
    "rows", [slice(0, 1), slice(0, 7), slice(1, 40), slice(250, 251), slice(255, 260), slice(0, 260)]
)
def test_derivatives_of_a_block_of_rows_are_those_of_the_whole_signal_bit_for_bit(rows: slice) -> None:
    """A long recording is differentiated block by block: each block's rows, its first and last included, must be
    the rows of differentiating the whole."""
    q = np.random.default_rng(4).normal(size=(260, 3)).cumsum(axis=0)
    dq = np.gradient(q, 1.0 / RATE_HZ, axis=0, edge_order=2)
    ddq = np.gradient(dq, 1.0 / RATE_HZ, axis=0, edge_order=2)
    block_dq, block_ddq = derivatives_at(q, rows, rate_hz=RATE_HZ, count=2)
    assert_array_equal(block_dq, dq[rows])
    assert_array_equal(block_ddq, ddq[rows])
    (once,) = derivatives_at(q, rows, rate_hz=RATE_HZ, count=1)
    assert_array_equal(once, dq[rows])


def test_differentiate_gives_central_differences_of_its_filtered_positions() -> None:
    t = np.arange(400) / RATE_HZ
    q = np.column_stack([np.sin(2.0 * t), np.cos(3.0 * t)])
    q_filtered, dq, ddq = differentiate(q, rate_hz=RATE_HZ, cutoff_hz=20.0)
    assert_array_equal(dq, np.gradient(q_filtered, 1.0 / RATE_HZ, axis=0, edge_order=2))
    assert_array_equal(ddq, np.gradient(dq, 1.0 / RATE_HZ, axis=0, edge_order=2))
    with pytest.raises(ValueError, match="contiguous"):
        derivatives_at(q, slice(0, 10, 2), rate_hz=RATE_HZ, count=1)


# ----------------------------------------------------------------------------- decimation


def test_decimation_taps_match_scipy_decimate_filter() -> None:
    from scipy.signal import decimate

    assert_array_equal(decimation_taps(1), [1.0])
    taps = decimation_taps(4)
    assert taps.size == 81
    assert_allclose(taps, taps[::-1], atol=0)
    assert taps.sum() == pytest.approx(1.0)
    x = np.random.default_rng(4).standard_normal(1000)
    out, idx = parallel_decimate(x, 4)
    # scipy.signal.decimate (zero phase) agrees away from its edge padding.
    assert_allclose(out, decimate(x, 4, ftype="fir")[idx // 4], atol=1e-12)


def test_overlapping_blocks_reproduce_whole_array_decimation() -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3000, 2, 5))
    decimator = ParallelDecimator.create(6)
    whole, whole_idx = decimator.decimate(x)
    overlap = 2 * decimator.half_length
    parts, part_idx = [], []
    for start in range(0, x.shape[0] - overlap, 700):
        out, idx = decimator.decimate(x[start : start + 700 + overlap], start=start)
        parts.append(out)
        part_idx.append(idx)
    idx = np.concatenate(part_idx)
    assert_array_equal(idx, whole_idx)
    assert_allclose(np.concatenate(parts), whole, rtol=0, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    factor=st.integers(min_value=1, max_value=5),
    cuts=st.lists(st.integers(min_value=0, max_value=600), min_size=1, max_size=6),
)
def test_any_block_gives_whole_array_values_at_its_indices(factor: int, cuts: list[int]) -> None:
    x = np.random.default_rng(6).standard_normal((600, 3))
    decimator = ParallelDecimator.create(factor)
    whole, whole_idx = decimator.decimate(x)
    position = {int(g): k for k, g in enumerate(whole_idx)}
    bounds = sorted(cuts)
    for a, b in zip([0, *bounds], [*bounds, 600], strict=True):
        out, idx = decimator.decimate(x[a:b], start=a)
        assert out.shape == (idx.size, 3)
        assert np.all(idx % factor == 0)
        assert np.all(idx - decimator.half_length >= a) and np.all(idx + decimator.half_length < b)
        assert_allclose(out, whole[[position[int(g)] for g in idx]], rtol=0, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    factor=st.integers(min_value=1, max_value=7),
    length=st.integers(min_value=0, max_value=400),
    start=st.integers(min_value=0, max_value=40),
)
def test_output_indices_are_the_multiples_of_the_factor_whose_support_the_block_holds(
    factor: int, length: int, start: int
) -> None:
    decimator = ParallelDecimator.create(factor)
    h = decimator.half_length
    stop = start + length
    expected = [g for g in range(start, stop) if g % factor == 0 and start <= g - h and g + h < stop]
    assert_array_equal(decimator.output_indices(length, start=start), expected)
    assert_array_equal(decimator.decimate(np.zeros((length, 2)), start=start)[1], expected)


def test_parallel_decimation_preserves_the_linear_model() -> None:
    # [Gautier2013] eq. (13)-(14): Y = W chi at full rate => decimated Y = decimated W @ chi.
    rng = np.random.default_rng(7)
    n_samples, n_joints, n_params = 4000, 3, 7
    w = rng.standard_normal((n_samples, n_joints, n_params)).cumsum(axis=0)
    chi = rng.standard_normal(n_params)
    y = w @ chi
    w_dec, w_idx = parallel_decimate(w, 10)
    y_dec, y_idx = parallel_decimate(y, 10)
    assert_array_equal(w_idx, y_idx)
    assert_allclose(y_dec, w_dec @ chi, rtol=1e-12, atol=1e-12 * np.abs(y).max())


def test_decimation_passes_low_frequency_and_attenuates_above_new_nyquist() -> None:
    factor = 10  # 1 kHz -> 100 Hz, new Nyquist 50 Hz
    t = np.arange(20_000) / RATE_HZ
    slow, slow_idx = parallel_decimate(np.sin(2 * np.pi * 2.0 * t), factor)
    fast, _ = parallel_decimate(np.sin(2 * np.pi * 120.0 * t), factor)
    assert_allclose(slow, np.sin(2 * np.pi * 2.0 * t[slow_idx]), atol=3e-3)  # Hamming passband ripple
    assert np.abs(fast).max() < 1e-2  # > 40 dB attenuation (would alias to 20 Hz otherwise)


def test_decimating_a_short_block_returns_nothing() -> None:
    decimator = ParallelDecimator.create(3)
    out, idx = decimator.decimate(np.ones((2 * decimator.half_length, 4)), start=5)
    assert out.shape == (0, 4) and idx.size == 0


def test_default_decimation_keeps_four_times_the_position_cutoff() -> None:
    assert default_decimation(1000.0, position_cutoff_hz=20.0) == 12
    assert default_decimation(100.0, position_cutoff_hz=30.0) == 1
    with pytest.raises(ValueError, match="position_cutoff_hz"):
        default_decimation(100.0, position_cutoff_hz=60.0)
