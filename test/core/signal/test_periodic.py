"""Tests of periodic-experiment tools ([Swevers2002] §3.1, §4.3; [Volkmann2020] §III.C eq. (7)-(9))."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from dynamic_identification.core.errors import DataError
from dynamic_identification.core.estimation import weighted_least_squares
from dynamic_identification.core.excitation.safety import JointLimits, ramp, stop_ramp
from dynamic_identification.core.signal.periodic import (
    PeriodicData,
    average_periods,
    fourier_filter,
    mean_noise_variance,
    period_variance,
    periodic_stretch,
    sample_weights_from_variance,
    split_periods,
)

PERIOD_S = 2.0
RATE_HZ = 100.0
M = 200  # samples per period at RATE_HZ
P = 10
SIGMA = 0.05  # noise std, rad
# Two channels, harmonics 1..3 of PERIOD_S: offset, then (sin, cos) amplitude per harmonic.
OFFSETS = np.array([0.3, -1.2])
SIN = np.array([[0.8, -0.4], [0.2, 0.5], [-0.1, 0.05]])
COS = np.array([[0.1, 0.6], [-0.3, 0.0], [0.05, -0.2]])


def harmonic_signal(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The clean test signal and its analytic derivatives ([Swevers2002] eq. (15)-(17)), shape (N, 2)."""
    q = np.broadcast_to(OFFSETS, (t.size, 2)).copy()
    dq = np.zeros((t.size, 2))
    ddq = np.zeros((t.size, 2))
    for k in range(SIN.shape[0]):
        w = 2.0 * np.pi * (k + 1) / PERIOD_S
        s, c = np.sin(w * t)[:, None], np.cos(w * t)[:, None]
        q += SIN[k] * s + COS[k] * c
        dq += w * (SIN[k] * c - COS[k] * s)
        ddq += -(w**2) * (SIN[k] * s + COS[k] * c)
    return q, dq, ddq


def jittered_recording(seed: int, *, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """A little more than P periods from t < 0, stamps jittered by ±20 % of a step, plus noise."""
    rng = np.random.default_rng(seed)
    k = np.arange(-3, P * M + 3)
    time = k / RATE_HZ + rng.uniform(-0.2, 0.2, k.size) / RATE_HZ
    return time, harmonic_signal(time)[0] + sigma * rng.standard_normal((k.size, 2))


def on_grid_noise(seed: int, *, periods: int, samples: int, channels: int) -> PeriodicData:
    """Pure Gaussian noise of std SIGMA on an exact per-period grid (no interpolation)."""
    rng = np.random.default_rng(seed)
    return PeriodicData(
        time=np.arange(samples) * PERIOD_S / samples,
        values=SIGMA * rng.standard_normal((periods, samples, channels)),
        period_s=PERIOD_S,
    )


# ----------------------------------------------------------------------------- split_periods


def test_split_periods_finds_whole_periods_and_samples_per_period_from_jittered_stamps() -> None:
    time, values = jittered_recording(0, sigma=SIGMA)
    data = split_periods(time, values, period_s=PERIOD_S, start_s=0.0)
    assert data.values.shape == (P, M, 2)
    assert (data.periods, data.samples_per_period) == (P, M)
    assert_allclose(data.time, np.arange(M) / RATE_HZ, rtol=0, atol=1e-12)
    assert data.period_s == PERIOD_S


def test_split_periods_noise_free_periods_are_identical_to_the_clean_signal() -> None:
    time, values = jittered_recording(1, sigma=0.0)
    data = split_periods(time, values, period_s=PERIOD_S, start_s=0.0)
    clean = harmonic_signal(data.time)[0]
    # Not-a-knot cubic spline at 100 Hz of components below 1.5 Hz: error ~ h⁴ q⁽⁴⁾ / 384 ≈ 1e-6.
    assert_allclose(data.values, np.broadcast_to(clean, data.values.shape), rtol=0, atol=1e-5)


def test_split_periods_keeps_phase_when_the_rate_does_not_divide_the_period() -> None:
    period = 1.2345
    time = np.arange(0.0, 5.1, 1.0 / RATE_HZ)
    values = np.sin(2.0 * np.pi * time / period) + 0.3 * np.cos(4.0 * np.pi * time / period)
    data = split_periods(time, values, period_s=period, start_s=0.1, samples_per_period=64)
    assert data.values.shape == (4, 64)  # (5.09 - 0.1) / 1.2345 = 4.04 periods
    phase = 0.1 + data.time
    expected = np.sin(2.0 * np.pi * phase / period) + 0.3 * np.cos(4.0 * np.pi * phase / period)
    assert_allclose(data.values, np.broadcast_to(expected, (4, 64)), rtol=0, atol=1e-6)


def test_split_periods_with_linear_interpolation_is_exact_for_piecewise_linear_data() -> None:
    time = np.arange(0.0, 3.0, 0.01)
    sawtooth = np.mod(time, 1.0)
    data = split_periods(time, sawtooth, period_s=1.0, kind="linear")
    assert data.values.shape == (3, 100)
    assert_allclose(data.values, np.broadcast_to(data.time, (3, 100)), rtol=0, atol=1e-9)


def test_split_periods_drops_repeated_stamps() -> None:
    time = np.arange(0.0, 2.0, 0.01)
    time_with_repeat = np.insert(time, 50, time[50])
    values = np.sin(np.pi * time_with_repeat)
    data = split_periods(time_with_repeat, values, period_s=1.0)
    assert data.values.shape == (2, 100)


def test_fewer_than_two_whole_periods_raise_data_error() -> None:
    time = np.arange(0.0, 1.5 * PERIOD_S, 1.0 / RATE_HZ)
    with pytest.raises(DataError, match=r"1 whole period\(s\).*at least 2"):
        split_periods(time, np.sin(time), period_s=PERIOD_S)


def test_start_outside_the_recording_raises_data_error() -> None:
    time = np.arange(0.0, 5.0, 0.01)
    with pytest.raises(DataError, match="start_s=-0.5"):
        split_periods(time, np.sin(time), period_s=1.0, start_s=-0.5)


def test_values_not_matching_time_raise_data_error() -> None:
    time = np.arange(0.0, 5.0, 0.01)
    with pytest.raises(DataError, match="500 rows"):
        split_periods(time, np.zeros((499, 2)), period_s=1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"period_s": 0.0}, "period_s"),
        ({"period_s": 1.0, "samples_per_period": 1}, "samples_per_period"),
        ({"period_s": 1.0, "kind": "quadratic"}, "kind"),
    ],
)
def test_invalid_settings_raise_value_error_naming_them(kwargs: dict, message: str) -> None:
    time = np.arange(0.0, 5.0, 0.01)
    with pytest.raises(ValueError, match=message):
        split_periods(time, np.sin(time), **kwargs)


def test_periodic_data_rejects_a_single_period() -> None:
    with pytest.raises(DataError, match="at least 2 periods"):
        PeriodicData(time=np.arange(4) * 0.25, values=np.zeros((1, 4)), period_s=1.0)


# ----------------------------------------------------------------------------- averaging, variance


def test_average_recovers_the_clean_signal_to_sigma_over_sqrt_p() -> None:
    time, values = jittered_recording(2, sigma=SIGMA)
    data = split_periods(time, values, period_s=PERIOD_S, start_s=0.0)
    error = average_periods(data) - harmonic_signal(data.time)[0]
    rms = np.sqrt(np.mean(error**2))
    # Expected σ/√P ≈ 0.0158. The spline between jittered stamps (at most 0.2 steps from a knot)
    # passes 91 % to 100 % of the noise variance, and an RMS over 400 values scatters by
    # 1/√800 ≈ 3.5 %, so ±20 % is over 4 std on either side.
    assert rms == pytest.approx(SIGMA / np.sqrt(P), rel=0.2)


def test_period_variance_is_the_ddof_1_variance_of_the_repetitions() -> None:
    data = PeriodicData(
        time=np.array([0.0, 0.5]),
        values=np.array([[1.0, 4.0], [3.0, 4.0]]),
        period_s=1.0,
    )
    assert_array_equal(average_periods(data), [2.0, 4.0])
    assert_array_equal(period_variance(data), [2.0, 0.0])  # ((1-2)² + (3-2)²) / (2 - 1)


def test_period_variance_estimates_the_noise_variance() -> None:
    data = on_grid_noise(3, periods=P, samples=500, channels=2)
    variance = period_variance(data)
    assert variance.shape == (500, 2)
    # Each σ²(k) has relative std sqrt(2 / (P - 1)) = 0.47; a channel's mean of 500 has 0.021: 10 % is ~5 std.
    assert_allclose(variance.mean(axis=0), SIGMA**2, rtol=0.1)


def test_mean_noise_variance_is_the_variance_of_the_average() -> None:
    data = on_grid_noise(4, periods=P, samples=500, channels=2)
    assert_allclose(mean_noise_variance(data), SIGMA**2 / P, rtol=0.1)  # 0.47 / √500 = 2.1 %: 10 % is ~5 std
    assert_allclose(mean_noise_variance(data), period_variance(data).mean(axis=0) / P, rtol=1e-12)


def test_mean_noise_variance_is_unbiased_where_the_seed_002_divisor_is_ten_percent_low() -> None:
    data = on_grid_noise(5, periods=P, samples=200, channels=50)
    estimate = float(np.mean(mean_noise_variance(data)))
    # 50·200·9 = 90000 degrees of freedom: relative std 0.47 %, so a 2 % bound is ~4 std.
    assert estimate == pytest.approx(SIGMA**2 / P, rel=0.02)
    squares = np.sum((data.values - average_periods(data)) ** 2, axis=(0, 1))
    seed_002 = float(np.mean(squares / (P * 200 - 1) / P))  # [Swevers2002] §4.3 with 1/(10N - 1)
    assert seed_002 == pytest.approx(estimate * 200 * (P - 1) / (P * 200 - 1), rel=1e-12)
    assert seed_002 < 0.93 * SIGMA**2 / P


def test_mean_noise_variance_of_one_channel_is_a_scalar() -> None:
    data = PeriodicData(time=np.arange(3) / 3.0, values=np.arange(6.0).reshape(2, 3), period_s=1.0)
    assert mean_noise_variance(data).shape == ()


# ----------------------------------------------------------------------------- WLS weights


def test_weights_are_positive_and_finite_even_for_zero_variance() -> None:
    variance = np.array([[0.04, 0.0], [0.0, 1e-4], [0.01, 4e-4], [0.09, 0.0]])
    std = sample_weights_from_variance(variance)
    assert std.shape == variance.shape
    assert np.all(np.isfinite(1.0 / std**2))
    assert np.all(std > 0.0)
    # Non-zero variances keep their std; zeros get 0.1 × the column's median positive std.
    assert_allclose(std[[0, 2, 3], 0], [0.2, 0.1, 0.3])
    assert_allclose(std[1, 0], 0.1 * 0.2)
    assert_allclose(std[[0, 3], 1], 0.1 * 0.015)


def test_all_zero_variance_gives_equal_weights() -> None:
    assert_array_equal(sample_weights_from_variance(np.zeros((5, 2))), np.ones((5, 2)))


def test_a_column_without_noise_uses_the_median_of_all_columns() -> None:
    std = sample_weights_from_variance(np.array([[0.0, 0.04], [0.0, 0.04]]))
    assert_allclose(std, [[0.02, 0.2], [0.02, 0.2]])


def test_an_explicit_floor_bounds_the_std() -> None:
    std = sample_weights_from_variance(np.array([[0.0], [0.25]]), floor=0.01)
    assert_allclose(std, [[0.01], [0.5]])


def test_negative_variance_and_bad_floor_are_rejected() -> None:
    with pytest.raises(DataError, match=">= 0"):
        sample_weights_from_variance(np.array([[-1.0]]))
    with pytest.raises(ValueError, match="floor"):
        sample_weights_from_variance(np.array([[1.0]]), floor=0.0)


def test_weights_from_repetitions_feed_weighted_least_squares() -> None:
    # y = 2 x, noise std 0.01 on joint 0 and 0.1 on joint 1, P = 10 repetitions.
    rng = np.random.default_rng(6)
    x = np.linspace(-1.0, 1.0, 50)
    noise_std = np.array([0.01, 0.1])
    repetitions = 2.0 * x[None, :, None] + noise_std * rng.standard_normal((P, 50, 2))
    data = PeriodicData(time=np.arange(50) * 0.02, values=repetitions, period_s=1.0)
    std = sample_weights_from_variance(period_variance(data) / P)
    w = np.broadcast_to(x[:, None, None], (50, 2, 1))
    result = weighted_least_squares(w, average_periods(data), sample_std=std)
    assert result.parameters[0] == pytest.approx(2.0, abs=5 * 0.01 / np.sqrt(P * np.sum(x**2)))


# ----------------------------------------------------------------------------- fourier_filter


def test_fourier_filter_is_exact_for_harmonic_input() -> None:
    t = np.arange(M) * PERIOD_S / M
    q, dq, ddq = harmonic_signal(t)
    q_f, dq_f, ddq_f = fourier_filter(q, period_s=PERIOD_S, harmonics=3)
    assert_allclose(q_f, q, rtol=0, atol=1e-10)
    assert_allclose(dq_f, dq, rtol=0, atol=1e-8 * np.abs(dq).max())
    assert_allclose(ddq_f, ddq, rtol=0, atol=1e-8 * np.abs(ddq).max())


def test_fourier_filter_works_along_any_axis() -> None:
    t = np.arange(M) * PERIOD_S / M
    q, dq, ddq = harmonic_signal(t)
    q_f, dq_f, ddq_f = fourier_filter(q.T, period_s=PERIOD_S, harmonics=3, axis=-1)
    assert_allclose(q_f, q.T, rtol=0, atol=1e-10)
    assert_allclose(dq_f, dq.T, rtol=0, atol=1e-8 * np.abs(dq).max())
    assert_allclose(ddq_f, ddq.T, rtol=0, atol=1e-8 * np.abs(ddq).max())


def test_fourier_filter_removes_noise_outside_the_kept_lines() -> None:
    rng = np.random.default_rng(7)
    t = np.arange(M) * PERIOD_S / M
    q = harmonic_signal(t)[0]
    q_f = fourier_filter(q + SIGMA * rng.standard_normal(q.shape), period_s=PERIOD_S, harmonics=3)[0]
    rms = np.sqrt(np.mean((q_f - q) ** 2))
    # White noise spreads evenly over the M/2 lines; 2·3 + 1 of M real degrees of freedom survive.
    assert rms == pytest.approx(SIGMA * np.sqrt(7 / M), rel=0.5)
    assert rms < 0.3 * SIGMA


def test_split_average_and_fourier_filter_give_nearly_noise_free_derivatives() -> None:
    time, values = jittered_recording(8, sigma=SIGMA)
    data = split_periods(time, values, period_s=PERIOD_S, start_s=0.0)
    q_f, dq_f, ddq_f = fourier_filter(average_periods(data), period_s=PERIOD_S, harmonics=3)
    q, dq, ddq = harmonic_signal(data.time)
    # Averaging (÷√10) then keeping 7 of 200 lines (÷√28): about 1e-3 of σ left on q.
    assert np.sqrt(np.mean((q_f - q) ** 2)) < 0.05 * SIGMA
    assert np.sqrt(np.mean((ddq_f - ddq) ** 2)) < 0.02 * np.sqrt(np.mean(ddq**2))


def test_harmonics_at_or_above_half_the_samples_raise() -> None:
    fourier_filter(np.zeros(10), period_s=1.0, harmonics=4)
    with pytest.raises(ValueError, match="harmonics=5"):
        fourier_filter(np.zeros(10), period_s=1.0, harmonics=5)


def test_fourier_filter_rejects_nan() -> None:
    with pytest.raises(DataError, match="NaN"):
        fourier_filter(np.array([0.0, np.nan, 1.0]), period_s=1.0, harmonics=1)


@settings(max_examples=60, deadline=None)
@given(
    harmonics=st.integers(min_value=0, max_value=8),
    extra_samples=st.integers(min_value=1, max_value=40),
    period_s=st.floats(min_value=0.5, max_value=20.0),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_fourier_filter_is_exact_for_any_coefficients_up_to_the_kept_harmonic(
    harmonics: int, extra_samples: int, period_s: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    m = 2 * harmonics + extra_samples
    t = np.arange(m) * period_s / m
    a, b = rng.uniform(-1.0, 1.0, (2, harmonics))
    w = 2.0 * np.pi * np.arange(1, harmonics + 1) / period_s
    phase = np.outer(t, w)
    q = 0.7 + np.sin(phase) @ a + np.cos(phase) @ b
    dq = np.cos(phase) @ (a * w) - np.sin(phase) @ (b * w)
    ddq = -(np.sin(phase) @ (a * w**2) + np.cos(phase) @ (b * w**2))
    q_f, dq_f, ddq_f = fourier_filter(q, period_s=period_s, harmonics=harmonics)
    assert_allclose(q_f, q, rtol=0, atol=1e-10)
    assert_allclose(dq_f, dq, rtol=0, atol=1e-8 * max(1.0, np.abs(dq).max()))
    assert_allclose(ddq_f, ddq, rtol=0, atol=1e-8 * max(1.0, np.abs(ddq).max()))


def played_recording(seed: int, *, sigma: float, periods: int = 4) -> tuple[np.ndarray, np.ndarray, float, float]:
    """What a recorder holds of a played periodic excitation: 3 s at rest, the excitation node's C² ramp in from
    rest, ``periods`` periods, its ramp out to rest, 3 s at rest; 1 kHz, jittered stamps, position noise ``sigma``.
    Also the first and last instant of the periods, s."""
    rate = 1000.0
    limits = JointLimits(("a", "b"), np.full(2, -4.0), np.full(2, 4.0), np.full(2, 8.0), np.full(2, 40.0))
    k = np.arange(periods * int(PERIOD_S * rate))
    q, dq, ddq = harmonic_signal(k / rate)
    ramp_in = ramp((OFFSETS + 0.5, np.zeros(2), np.zeros(2)), (q[0], dq[0], ddq[0]), limits, rate_hz=rate)
    end = harmonic_signal(np.array([periods * PERIOD_S]))
    ramp_out = stop_ramp((end[0][0], end[1][0], end[2][0]), limits, rate_hz=rate)
    rest = int(3.0 * rate)
    motion = np.concatenate(
        [np.repeat(ramp_in.q[:1], rest, 0), ramp_in.q[:-1], q, ramp_out.q, np.repeat(ramp_out.q[-1:], rest, 0)]
    )
    rng = np.random.default_rng(seed)
    instants = np.arange(motion.shape[0]) / rate
    first = (rest + ramp_in.q.shape[0] - 1) / rate
    return (
        instants + rng.uniform(-0.1, 0.1, instants.size) / rate,
        motion + sigma * rng.standard_normal(motion.shape),
        first,
        first + periods * PERIOD_S,
    )


@pytest.mark.parametrize(("seed", "sigma"), [(0, 0.0), (1, 1e-4), (2, 1e-3)])
def test_the_periodic_stretch_leaves_out_the_rest_and_the_ramps_around_the_periods(seed: int, sigma: float) -> None:
    # [Swevers2002] §4.3 averages periods of the steady excitation; a recording holds rest and ramps around them.
    time, q, first, last = played_recording(seed, sigma=sigma)
    stretch = periodic_stretch(time, q, period_s=PERIOD_S)
    assert stretch.periods == 4
    assert first - 0.1 < stretch.start_s and stretch.stop_s < last + 0.1
    inside = (time >= stretch.start_s - 0.01) & (time <= stretch.stop_s + 0.01)
    data = split_periods(time[inside], q[inside], period_s=PERIOD_S, start_s=stretch.start_s)
    assert data.periods == 4
    clean = harmonic_signal(stretch.start_s - first + data.time)[0]
    assert np.max(np.abs(average_periods(data) - clean)) < 1e-3 + 3.0 * sigma


def test_the_whole_recording_is_the_stretch_of_a_recording_of_periods_only() -> None:
    time, q = jittered_recording(0, sigma=SIGMA)
    stretch = periodic_stretch(time, q, period_s=PERIOD_S)
    assert stretch.periods == P and stretch.start_s == time[0]


@pytest.mark.parametrize("period_s", [1.4, 2.6, 4.0 / 3.0])
def test_a_wrong_period_is_a_one_line_error_that_asks_for_the_excitation_s(period_s: float) -> None:
    time, q, _, _ = played_recording(3, sigma=1e-4)
    with pytest.raises(DataError, match="do not repeat every .* is the period the excitation's") as error:
        periodic_stretch(time, q, period_s=period_s)
    assert "\n" not in str(error.value)


def test_a_robot_at_rest_has_no_periodic_stretch() -> None:
    time = np.arange(0.0, 10.0, 0.001)
    q = 1e-5 * np.random.default_rng(0).standard_normal((time.size, 2))
    with pytest.raises(DataError, match="barely move"):
        periodic_stretch(time, q, period_s=PERIOD_S)
