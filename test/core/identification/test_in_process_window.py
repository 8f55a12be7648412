"""The in-process estimator: equals batch WLS on its window, gates what it publishes, resets on time jumps."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import threadpoolctl
from numpy.testing import assert_allclose

from arm6_drives import ARM6_DRIVE, ARM6_UNCOUPLED_CHAIN
from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.estimation import weighted_least_squares
from dynamic_identification.core.estimation.normal_equations import (
    NormalEquations,
    joint_error_std_from_normal_equations,
    solve_weighted,
)
from dynamic_identification.core.estimation.reduction import reduce_parameters
from dynamic_identification.core.estimation.uncertainty import hac_covariance
from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.identification import ReductionSettings, in_process, torque_delay
from dynamic_identification.core.identification.in_process import (
    SlidingWindowEstimator,
    WindowSettings,
    WindowUpdate,
)
from dynamic_identification.core.identification.torque_delay import window_reason
from dynamic_identification.core.mechanism.robot import DriveChain, DriveParameters, DriveTerms, RobotModel, load_robot
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.signal.stamps import stream_chunks
from dynamic_identification.core.simulation import SensorModel, synthesize_measurements

RATE_HZ = 1000.0


@pytest.fixture(scope="module")
def arm(arm6_urdf: Path) -> tuple[RobotModel, DriveChain, DriveParameters]:
    robot = load_robot(arm6_urdf)
    chain, drive = ARM6_UNCOUPLED_CHAIN, ARM6_DRIVE
    return robot, chain, drive


def _fourier_data(arm, *, seconds: float, seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    robot, chain, drive = arm
    time = np.arange(0.0, seconds, 1.0 / RATE_HZ)
    trajectory = random_fourier_trajectory(robot, margin=0.2, velocity_fraction=0.5, seed=seed)
    q, dq, ddq = trajectory.evaluate(time)
    measured, currents = synthesize_measurements(robot, chain, drive, time, q, dq, ddq, SensorModel(), seed=seed)
    return time, measured, chain.joint_torques(currents)


def _feed(estimator: SlidingWindowEstimator, time, q, tau, *, chunk: int = 1000) -> list[WindowUpdate]:
    updates = []
    for start in range(0, time.size, chunk):
        estimator.add_samples(time[start : start + chunk], q[start : start + chunk], tau[start : start + chunk])
        updates.append(estimator.update())
    return updates


@pytest.fixture(scope="module")
def dynamic_model(arm) -> DynamicModel:
    robot, chain, _ = arm
    return DynamicModel.create(robot, chain, DriveTerms())


def test_sliding_window_equals_batch_wls_on_the_same_window(arm, dynamic_model: DynamicModel) -> None:
    robot, chain, _ = arm
    estimator = SlidingWindowEstimator(
        dynamic_model,
        WindowSettings(reduction=ReductionSettings(method="none"), window_s=8.0, refactor_every=1000),
    )
    time, q, tau = _fourier_data(arm, seconds=25.0)
    updates = _feed(estimator, time, q, tau)
    last = updates[-1]
    assert last.publishable, last.reason
    w, y, valid = estimator.window_rows()
    sigma = joint_error_std_from_normal_equations(estimator.window_equations())
    batch = weighted_least_squares(w, y, joint_std=sigma, valid=valid)
    assert_allclose(last.values, batch.parameters, rtol=1e-8, atol=1e-10 * np.abs(batch.parameters).max())
    assert 7.0 <= last.window_s <= 9.0
    # %σ by default accounts for the window's residuals correlated in time, as offline.
    robust = hac_covariance(w, y, batch.parameters, joint_std=sigma, valid=valid)
    assert last.uncertainty is not None and last.uncertainty.bandwidth == robust.bandwidth
    assert_allclose(last.std_percent, robust.relative_std_percent(batch.parameters), rtol=1e-6)
    assert np.median(last.std_percent / batch.relative_std_percent) > 1.0


def _data_with_stops(arm, *, seconds: float, seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Fourier excitation played with a rest of 1 s after every 2 s of motion (cosine speed ramps of 0.5 s):
    a process that stops, whose window holds rows without a valid equation."""
    robot, chain, drive = arm
    time = np.arange(0.0, seconds, 1.0 / RATE_HZ)
    phase = np.mod(time, 4.0)
    speed = np.select(
        [phase < 0.5, phase < 2.5, phase < 3.0],
        [0.5 - 0.5 * np.cos(np.pi * phase / 0.5), np.ones_like(phase), 0.5 + 0.5 * np.cos(np.pi * (phase - 2.5) / 0.5)],
        np.zeros_like(phase),
    )
    slope = np.gradient(speed, time)
    warped = np.concatenate([[0.0], np.cumsum(0.5 * (speed[1:] + speed[:-1]) * np.diff(time))])
    trajectory = random_fourier_trajectory(robot, margin=0.2, velocity_fraction=0.5, seed=seed)
    q, dq_warped, ddq_warped = trajectory.evaluate(warped)
    dq = dq_warped * speed[:, None]
    ddq = ddq_warped * speed[:, None] ** 2 + dq_warped * slope[:, None]
    measured, currents = synthesize_measurements(robot, chain, drive, time, q, dq, ddq, SensorModel(), seed=seed)
    return time, measured, chain.joint_torques(currents)


def test_a_window_with_stops_equals_batch_wls_and_hac_on_its_rows(arm, dynamic_model: DynamicModel) -> None:
    # The window keeps only the rows with a valid equation; the rows of the stops come back as zeros, masked, in
    # their place in time, so a batch WLS and HAC on window_rows() see the window's own estimate and σ.
    estimator = SlidingWindowEstimator(
        dynamic_model,
        WindowSettings(reduction=ReductionSettings(method="none"), window_s=8.0, refactor_every=1000),
    )
    time, q, tau = _data_with_stops(arm, seconds=16.0)
    last = _feed(estimator, time, q, tau)[-1]
    assert last.publishable, last.reason
    w, y, valid = estimator.window_rows()
    stopped = ~valid.any(axis=1)
    assert stopped.mean() > 0.15
    assert not w[stopped].any() and not y[stopped].any()
    sigma = joint_error_std_from_normal_equations(estimator.window_equations())
    batch = weighted_least_squares(w, y, joint_std=sigma, valid=valid)
    assert_allclose(last.values, batch.parameters, rtol=1e-8, atol=1e-10 * np.abs(batch.parameters).max())
    robust = hac_covariance(w, y, last.values, joint_std=sigma, valid=valid)
    assert last.uncertainty is not None and last.uncertainty.bandwidth == robust.bandwidth
    assert_allclose(last.std_percent, robust.relative_std_percent(last.values), rtol=1e-9)
    assert_allclose(last.joint_errors, batch.joint_errors, rtol=1e-9)


def test_the_rows_the_window_holds_are_the_ones_its_normal_equations_sum(arm, dynamic_model: DynamicModel) -> None:
    # 40 s of rows through a 3 s window: its rows are kept in one buffer that blocks expire from and that is
    # compacted and grown as they come; the rows it hands out must stay the ones its equations were summed from.
    estimator = SlidingWindowEstimator(
        dynamic_model,
        WindowSettings(reduction=ReductionSettings(method="none"), window_s=3.0, refactor_every=1000),
    )
    time, q, tau = _data_with_stops(arm, seconds=40.0)
    for start in range(0, time.size, 1000):
        estimator.add_samples(time[start : start + 1000], q[start : start + 1000], tau[start : start + 1000])
        estimator.update()
        w, y, valid = estimator.window_rows()
        held = estimator.window_equations()
        summed = NormalEquations.from_rows(w, y, valid)
        assert_allclose(summed.count, held.count)
        assert_allclose(summed.a, held.a, rtol=1e-9, atol=1e-9 * np.abs(held.a).max())
        assert_allclose(summed.b, held.b, rtol=1e-9, atol=1e-9 * np.abs(held.b).max())
    assert estimator.update().window_s <= 4.5
    assert not valid.any(axis=1).all()


def test_an_update_runs_blas_on_one_thread_and_gives_the_threads_back(
    arm, dynamic_model: DynamicModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small matrices: BLAS threads only spin on a busy machine. The caller's own choice is restored after the update.
    estimator = SlidingWindowEstimator(dynamic_model, WindowSettings(reduction=ReductionSettings(method="none")))
    time, q, tau = _fourier_data(arm, seconds=3.0)
    seen: list[list[int]] = []
    estimate = SlidingWindowEstimator._estimate

    def spying(self: SlidingWindowEstimator) -> WindowUpdate:
        seen.append(_blas_threads())
        return estimate(self)

    monkeypatch.setattr(SlidingWindowEstimator, "_estimate", spying)
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        # A library built single-threaded (one that another test loaded) stays at one: the caller's choice is what
        # the libraries hold here.
        before = _blas_threads()
        estimator.add_samples(time, q, tau)
        estimator.update()
        after = _blas_threads()
    assert 2 in before
    assert seen and set(seen[0]) == {1}
    assert after == before


def _blas_threads() -> list[int]:
    return [int(info["num_threads"]) for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]


def test_white_uncertainty_publishes_the_sigma_of_independent_residuals(arm, dynamic_model: DynamicModel) -> None:
    robot, chain, _ = arm
    settings = WindowSettings(
        reduction=ReductionSettings(method="none", uncertainty="white"), window_s=8.0, refactor_every=1000
    )
    estimator = SlidingWindowEstimator(dynamic_model, settings)
    time, q, tau = _fourier_data(arm, seconds=12.0)
    last = _feed(estimator, time, q, tau)[-1]
    assert last.publishable and last.uncertainty is None
    w, y, valid = estimator.window_rows()
    sigma = joint_error_std_from_normal_equations(estimator.window_equations())
    batch = weighted_least_squares(w, y, joint_std=sigma, valid=valid)
    assert_allclose(last.std_percent, batch.relative_std_percent, rtol=1e-6)


def test_standstill_is_never_published(arm, dynamic_model: DynamicModel) -> None:
    robot, chain, drive = arm
    estimator = SlidingWindowEstimator(dynamic_model, WindowSettings())
    time = np.arange(0.0, 12.0, 1.0 / RATE_HZ)
    q = np.tile(np.array([0.1, 0.3, -0.4, 0.2, 0.5, 0.0]), (time.size, 1))
    tau = np.tile(np.array([1.0, 20.0, 5.0, 0.5, 1.0, 0.1]), (time.size, 1))
    updates = _feed(estimator, time, q, tau)
    assert not any(update.publishable for update in updates)
    assert "standstill" in updates[-1].reason


def test_a_creeping_robot_says_why_it_gives_no_equation(arm, dynamic_model: DynamicModel) -> None:
    # Travel beyond min_motion_rad, speeds below signal.min_speed_rad_s throughout: every equation is a stick
    # phase. The reason said "estimation failed: no equations to evaluate the empty model on".
    estimator = SlidingWindowEstimator(dynamic_model, WindowSettings())
    time = np.arange(0.0, 12.0, 1.0 / RATE_HZ)
    rest = np.array([0.1, 0.3, -0.4, 0.2, 0.5, 0.0])
    q = rest + 0.1 * np.sin(2.0 * np.pi * 0.04 * time)[:, None]  # 0.025 rad/s at most
    tau = np.tile(np.array([1.0, 20.0, 5.0, 0.5, 1.0, 0.1]), (time.size, 1))
    updates = _feed(estimator, time, q, tau)
    assert not any(update.publishable for update in updates)
    assert updates[-1].reason.startswith("no usable equation: every joint moved slower than signal.min_speed_rad_s")


def test_rank_deficient_window_is_not_published_without_reduction(arm, dynamic_model: DynamicModel) -> None:
    robot, chain, _ = arm
    time, q, tau = _fourier_data(arm, seconds=15.0)
    q[:, 5] = 0.3  # joint 6 never moves: its parameters are not identifiable
    estimator = SlidingWindowEstimator(
        dynamic_model,
        WindowSettings(reduction=ReductionSettings(method="none")),
    )
    last = _feed(estimator, time, q, tau)[-1]
    assert not last.publishable
    assert "not identifiable" in last.reason


def test_sensitivity_reduction_publishes_a_full_rank_model_of_what_moved(arm, dynamic_model: DynamicModel) -> None:
    robot, chain, _ = arm
    time, q, tau = _fourier_data(arm, seconds=15.0)
    q[:, 5] = 0.3
    estimator = SlidingWindowEstimator(dynamic_model, WindowSettings())
    last = _feed(estimator, time, q, tau)[-1]
    assert last.publishable, last.reason
    assert not any(name.endswith("6") and name.startswith(("Fv", "Fc")) for name in last.names)
    assert last.condition_number < last.condition_number_full
    # Joint 6 has no equation in the window (it never moved): its errors are unknown, not zero.
    assert np.isnan(last.joint_errors[5]) and np.isnan(last.joint_relative_errors[5])
    assert np.all(np.isfinite(last.joint_relative_errors[:5]))


def test_a_clock_jump_back_clears_the_window(arm, dynamic_model: DynamicModel) -> None:
    robot, chain, _ = arm
    time, q, tau = _fourier_data(arm, seconds=14.0)
    estimator = SlidingWindowEstimator(
        dynamic_model,
        WindowSettings(reduction=ReductionSettings(method="none")),
    )
    before = _feed(estimator, time, q, tau)[-1]
    assert before.samples > 0
    assert estimator.add_samples(time[:1000], q[:1000], tau[:1000]) is True
    after = estimator.update()
    assert after.samples < before.samples
    assert not after.publishable


def test_samples_fed_one_by_one_update_where_the_chunks_of_a_whole_recording_end(
    arm, dynamic_model: DynamicModel
) -> None:
    # A node receives samples one at a time; `dynid stream` cuts a whole recording into chunks (stream_chunks). With
    # jittered stamps, a gap and a jump back, asking `update_due` before each sample gives the same updates.
    time, q, tau = _fourier_data(arm, seconds=12.0)
    time = time + np.random.default_rng(5).uniform(-2e-4, 2e-4, time.size)
    time[8000:] += 2.5  # the driver stopped for 2.5 s
    order = np.r_[0 : time.size, 0:2500]  # then the recording loops back to its start
    time, q, tau = time[order], q[order], tau[order]
    settings = WindowSettings(window_s=5.0)

    whole = SlidingWindowEstimator(dynamic_model, settings)
    chunked = []
    for chunk, restart in stream_chunks(time, settings.update_period_s):
        if restart:
            whole.reset()
        whole.add_samples(time[chunk], q[chunk], tau[chunk])
        chunked.append(whole.update())

    single = SlidingWindowEstimator(dynamic_model, settings)
    one_by_one = []
    for k in range(time.size):
        if single.update_due(float(time[k])):
            one_by_one.append(single.update())
        single.add_samples(time[k : k + 1], q[k : k + 1], tau[k : k + 1])
    assert single.chunk_end_s is not None and time[-1] < single.chunk_end_s  # the last chunk waits for its end

    assert len(one_by_one) == len(chunked) - 1 > 10
    assert sum(update.publishable for update in one_by_one) > 3
    for fed, cut in zip(one_by_one, chunked, strict=False):
        assert (fed.time_s, fed.samples, fed.publishable) == (cut.time_s, cut.samples, cut.publishable)
        assert_allclose(fed.values, cut.values, rtol=1e-12, atol=0.0)


def test_non_finite_samples_are_refused(arm, dynamic_model: DynamicModel) -> None:
    robot, chain, _ = arm
    estimator = SlidingWindowEstimator(dynamic_model, WindowSettings())
    q = np.zeros((3, 6))
    q[1, 2] = np.nan
    with pytest.raises(IdentificationError, match="finite"):
        estimator.add_samples(np.arange(3) * 1e-3, q, np.zeros((3, 6)))


def test_settings_are_validated() -> None:
    with pytest.raises(IdentificationError, match="reduction"):
        WindowSettings(reduction=ReductionSettings(method="pca"))
    with pytest.raises(IdentificationError, match="update_period_s"):
        WindowSettings(window_s=1.0, update_period_s=2.0)


def test_a_window_of_torques_in_the_wrong_unit_is_never_published(arm, dynamic_model: DynamicModel) -> None:
    robot, chain, _ = arm
    time, q, tau = _fourier_data(arm, seconds=20.0)
    estimator = SlidingWindowEstimator(dynamic_model, WindowSettings(window_s=10.0))
    updates = _feed(estimator, time, q, 1000.0 * tau)  # mN·m recorded as N·m
    assert not any(update.publishable for update in updates)
    assert any(update.reason.startswith("implausible model:") and "effort limit" in update.reason for update in updates)
    # The same data in N·m is published.
    estimator.reset()
    assert any(update.publishable for update in _feed(estimator, time, q, tau))


def test_the_window_loads_its_filters_when_created_not_in_its_first_update(arm6_urdf: Path) -> None:
    # SciPy's signal module takes most of a second to import: in the first update, that update's latency.
    code = (
        "import sys\n"
        "from dynamic_identification.core.identification.in_process import SlidingWindowEstimator, WindowSettings\n"
        "from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, load_robot\n"
        "from dynamic_identification.core.regressors.dynamic_model import DynamicModel\n"
        f"robot = load_robot({str(arm6_urdf)!r})\n"
        "model = DynamicModel.create(robot, DriveChain.create(robot.n_joints), DriveTerms())\n"
        "before = 'scipy.signal' in sys.modules\n"
        "SlidingWindowEstimator(model, WindowSettings())\n"
        "print(before, 'scipy.signal' in sys.modules)\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert completed.stdout.split() == ["False", "True"]


def _feed_counting_reductions(
    estimator: SlidingWindowEstimator, time, q, tau, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[WindowUpdate], list[int]]:
    """The updates of one second of data each, and the update (0-based) of each call of the reduction."""
    updates: list[WindowUpdate] = []
    chosen: list[int] = []
    reduce = in_process.reduce_model
    monkeypatch.setattr(
        in_process, "reduce_model", lambda *args, **kwargs: chosen.append(len(updates)) or reduce(*args, **kwargs)
    )
    for start in range(0, time.size, 1000):
        estimator.add_samples(time[start : start + 1000], q[start : start + 1000], tau[start : start + 1000])
        updates.append(estimator.update())
    return updates, chosen


def test_the_window_keeps_a_model_algorithm_1_still_accepts_and_chooses_again_within_a_window_of_data(
    arm, dynamic_model: DynamicModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = WindowSettings()
    estimator = SlidingWindowEstimator(dynamic_model, settings)
    names = dynamic_model.base.names
    time, q, tau = _fourier_data(arm, seconds=36.0)
    accepted = []

    def checked(update: WindowUpdate) -> None:
        if update.publishable:  # the published model meets [Volkmann2020] Algorithm 1 line 10 on its window
            equations = estimator.window_equations()
            sigma = joint_error_std_from_normal_equations(equations)
            reference = reduce_parameters(equations, sigma, method="none").reference.relative_errors
            model = solve_weighted(equations, sigma, [names.index(name) for name in update.names]).relative_errors
            accepted.append(bool(np.all(model <= (1.0 + settings.reduction.e_tol) * np.maximum(reference, 1e-6))))

    update = estimator.update
    monkeypatch.setattr(estimator, "update", lambda: (result := update(), checked(result))[0])
    updates, chosen = _feed_counting_reductions(estimator, time, q, tau, monkeypatch)

    published = [i for i, update in enumerate(updates) if update.publishable]
    assert len(published) >= 25 and all(accepted) and len(accepted) == len(published)
    kept_from = [i for i in published if i not in chosen]
    assert len(kept_from) >= 10  # most updates keep the model: the trials of Algorithm 1 are not run again
    assert all(updates[i].names == updates[i - 1].names for i in kept_from)
    assert all(updates[i].model_chosen_s == updates[i - 1].model_chosen_s for i in kept_from)
    assert all(updates[i].model_chosen_s == updates[i].time_s for i in chosen if updates[i].publishable)
    # Chosen again at the latest once window_s of new data has come.
    choices = [i for i in chosen if i >= published[0]]
    assert np.max(np.diff([*choices, len(updates)])) <= round(settings.window_s / settings.update_period_s)


def test_an_update_that_is_not_published_makes_the_next_one_choose_its_model_afresh(
    arm, dynamic_model: DynamicModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    estimator = SlidingWindowEstimator(dynamic_model, WindowSettings())
    time, q, tau = _fourier_data(arm, seconds=20.0)
    gate = in_process._gate
    monkeypatch.setattr(
        in_process,
        "_gate",
        lambda update, settings: "refused" if update.time_s == time[13999] else gate(update, settings),
    )
    updates, chosen = _feed_counting_reductions(estimator, time, q, tau, monkeypatch)

    assert updates[12].publishable and 12 not in chosen
    # The kept model failed a gate: the update tried a model chosen afresh, which failed it too.
    assert not updates[13].publishable and chosen.count(13) == 1
    assert updates[14].publishable and 14 in chosen


def test_without_keep_model_the_reduction_chooses_at_every_update(
    arm, dynamic_model: DynamicModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    estimator = SlidingWindowEstimator(dynamic_model, WindowSettings(keep_model=False))
    time, q, tau = _fourier_data(arm, seconds=16.0)
    updates, chosen = _feed_counting_reductions(estimator, time, q, tau, monkeypatch)

    published = [i for i, update in enumerate(updates) if update.publishable]
    assert len(published) >= 8 and set(published) <= set(chosen)


DRIVE_DELAY_S = 0.003
"""A drive's current filter and a bus cycle: the torques of the motion 3 ms before their stamp."""


def _late_torques(arm, time: np.ndarray, *, delay_s: float, seed: int = 3) -> np.ndarray:
    """The torques of :func:`_fourier_data`'s motion ``delay_s`` before each stamp (the same noise)."""
    robot, chain, drive = arm
    trajectory = random_fourier_trajectory(robot, margin=0.2, velocity_fraction=0.5, seed=seed)
    q, dq, ddq = trajectory.evaluate(time - delay_s)
    _, currents = synthesize_measurements(robot, chain, drive, time, q, dq, ddq, SensorModel(), seed=seed)
    return chain.joint_torques(currents)


def _window_run(dynamic_model: DynamicModel, time, q, tau, torque_delay: str) -> list[WindowUpdate]:
    settings = WindowSettings(signal=dataclasses.replace(WindowSettings().signal, torque_delay=torque_delay))
    return _feed(SlidingWindowEstimator(dynamic_model, settings), time, q, tau)


def test_the_window_measures_the_torques_delay_on_its_first_rows_and_reads_them_late_from_then_on(
    arm, dynamic_model: DynamicModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Measured on the first minute as offline (here 8 s, so that the test stays short); a window of rows that
    all came after the decision fits the aligned torques as well as torques in time with the positions."""
    monkeypatch.setattr(torque_delay, "MEASURED_DATA_S", 8.0)
    time, q, in_time = _fourier_data(arm, seconds=22.0)
    late = _late_torques(arm, time, delay_s=DRIVE_DELAY_S)
    aligned = _window_run(dynamic_model, time, q, late, "auto")
    measuring = [update for update in aligned if update.torque_delay is None]
    assert 8 <= len(measuring) <= 10  # 8 s of rows, which trail the samples by the filter margins
    delay = aligned[-1].torque_delay
    assert delay is not None and delay.applied and delay.std_s < 1.5e-3, delay  # 8 s of rows: a minute's 2.5 times
    assert abs(delay.delay_s - DRIVE_DELAY_S) < 3.0 * delay.std_s, delay
    assert all(update.torque_delay is delay for update in aligned[len(measuring) :])
    as_recorded = _window_run(dynamic_model, time, q, late, "none")[-1]
    reference = _window_run(dynamic_model, time, q, in_time, "none")[-1]
    assert aligned[-1].publishable and as_recorded.publishable and reference.publishable
    assert as_recorded.torque_delay is None
    excess = aligned[-1].relative_error - reference.relative_error
    assert abs(excess) < 0.2 * (as_recorded.relative_error - reference.relative_error), (
        aligned[-1].relative_error,
        as_recorded.relative_error,
        reference.relative_error,
    )


def test_a_window_of_torques_in_time_says_so_and_publishes_what_it_would_without_measuring(
    arm, dynamic_model: DynamicModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torque_delay, "MEASURED_DATA_S", 8.0)
    time, q, tau = _fourier_data(arm, seconds=14.0)
    measured, as_recorded = (
        _window_run(dynamic_model, time, q, tau, "auto"),
        _window_run(dynamic_model, time, q, tau, "none"),
    )
    delay = measured[-1].torque_delay
    assert delay is not None and not delay.applied and "within 3 σ of 0" in delay.reason(), delay
    assert window_reason(delay).endswith(", measured on the window's first 8 s of motion")
    for auto, none in zip(measured, as_recorded, strict=True):
        assert (auto.publishable, auto.names) == (none.publishable, none.names)
        assert_allclose(auto.values, none.values, rtol=0.0, atol=0.0)
