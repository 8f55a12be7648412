"""``dynid stream``: the estimator's sliding window run offline on a recording, one JSON line per update.

The recordings are synthesised from the exact inverse dynamics of the shipped 6-axis arm
(drive chain and true drive parameters from ``config/dynid_arm6.yaml``) along a random
Fourier excitation at 1 kHz, with jittered stamps, quantised encoders and noisy motor
currents; ``dynid`` runs in-process through :func:`dynamic_identification.cli.main`.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from dynamic_identification import cli
from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.identification import torque_delay
from dynamic_identification.core.mechanism.robot import load_robot
from dynamic_identification.core.signal.stamps import BACKWARD_JUMP_S, stream_chunks
from dynamic_identification.core.simulation import synthesize_measurements
from dynamic_identification.io.config import load_config, simulated_robot
from dynamic_identification.io.parameters import FORMAT, load_parameters
from dynamic_identification.io.recording import recording_from_arrays, write_recording_csv
from repo_paths import ARM6_CONFIG, ARM6_URDF

RATE_HZ = 1000.0
SECONDS = 25.0
SEED = 3


def synthesize(seconds: float, *, moving: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    """Stamps (s), measured positions (rad), motor currents (A) and joint names."""
    robot = load_robot(ARM6_URDF)
    sim = simulated_robot(ARM6_CONFIG, robot.n_joints)
    rng = np.random.default_rng(SEED)
    samples = int(round(seconds * RATE_HZ))
    stamps = np.arange(samples) / RATE_HZ + rng.uniform(-2e-4, 2e-4, samples)
    if moving:
        trajectory = random_fourier_trajectory(robot, margin=0.2, velocity_fraction=0.5, seed=SEED)
        q, dq, ddq = trajectory.evaluate(stamps)
    else:
        q = np.broadcast_to(np.array([0.1, -0.3, 0.4, 0.0, 0.2, 0.0]), (samples, robot.n_joints)).copy()
        dq = ddq = np.zeros_like(q)
    q_measured, currents = synthesize_measurements(
        robot, sim.drive_chain, sim.drive, stamps, q, dq, ddq, sim.sensor, seed=SEED
    )
    return stamps, q_measured, currents, robot.joint_names


def write_csv(path: Path, stamps: np.ndarray, q: np.ndarray, currents: np.ndarray, joints: tuple[str, ...]) -> Path:
    write_recording_csv(path, recording_from_arrays(time=stamps, joint_names=joints, position=q, current=currents))
    return path


def stream(data: Path, out: Path, *extra: str | Path, config: Path = ARM6_CONFIG) -> int:
    argv = ["stream", "--urdf", ARM6_URDF, "--data", data, "--config", config, "--out", out, *extra]
    return cli.main([str(arg) for arg in argv])


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("stream")


@pytest.fixture(scope="module")
def moving() -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    return synthesize(SECONDS)


@pytest.fixture(scope="module")
def streamed(moving: tuple[Any, ...], folder: Path) -> tuple[int, list[dict[str, Any]], Path]:
    data = write_csv(folder / "excitation.csv", *moving)
    out, params = folder / "updates.jsonl", folder / "window.yaml"
    code = stream(data, out, "--params-out", params)
    return code, lines(out), params


def test_stream_writes_one_line_per_second_of_data(streamed: tuple[int, list[dict[str, Any]], Path]) -> None:
    code, updates, _ = streamed
    assert code == 0
    assert len(updates) == pytest.approx(SECONDS / load_config(str(ARM6_CONFIG)).window.update_period_s, abs=1)
    times = np.array([update["time"] for update in updates])
    assert np.all(np.abs(np.diff(times) - 1.0) < 0.01)
    keys = {"time", "publishable", "reason", "parameters", "removed", "condition_number", "condition_number_full"}
    keys |= {"relative_error", "joint_relative_errors", "samples", "window_s", "seconds"}
    assert all(keys <= set(update) for update in updates)
    assert all(update["seconds"] > 0.0 for update in updates)


def test_later_updates_are_publishable_with_a_reduced_well_conditioned_model(
    streamed: tuple[int, list[dict[str, Any]], Path],
) -> None:
    _, updates, _ = streamed
    late = [update for update in updates if update["time"] > 12.0]
    assert late and all(update["publishable"] and update["reason"] == "ok" for update in late)
    for update in late:
        assert math.isfinite(update["condition_number"]) and update["condition_number"] <= 100.0
        assert update["condition_number"] < update["condition_number_full"]
        assert update["removed"], "sensitivity reduction removes some base parameters"
        assert update["relative_error"] < 0.05  # 2 % current noise on the synthesised torques
        assert 9.0 < update["window_s"] <= 11.0  # the 10 s window is full and slides
        assert all(math.isfinite(value) for value in update["parameters"].values())
        assert set(update["joint_relative_errors"]) == {f"joint_{k}" for k in range(1, 7)}
    # The stamps jitter (a sampler that stamps exactly): the window judges whether to recover the sample instants
    # (signal.stamps: auto) from its first 5 s of data, and publishes nothing before.
    assert not updates[0]["publishable"] and "waiting for data" in updates[0]["reason"]
    # It says what it waits for (it said "the window holds no rows yet" with 4.9 s of data).
    assert "decided from the first 5 s of data between gaps (0.999 s so far)" in updates[0]["reason"]


FREEZE_PROBE = textwrap.dedent(
    """
    import gc, sys
    from dynamic_identification import cli
    code = cli.main(sys.argv[1:])
    import scipy.signal
    visited = any(tracked is scipy.signal.sosfiltfilt for tracked in gc.get_objects())
    print(code, gc.get_freeze_count(), visited)
    """
)


def test_the_stream_s_updates_visit_neither_the_start_up_s_objects_nor_the_window_s_filters(
    moving: tuple[Any, ...], folder: Path
) -> None:
    """As in the estimator node, the full collections of the garbage collector do not visit the modules; the
    window's filter module, which the window loads when ``stream_file`` builds it, is frozen with the others."""
    data = write_csv(folder / "frozen.csv", *moving)
    argv = ["stream", "--urdf", ARM6_URDF, "--data", data, "--config", ARM6_CONFIG, "--out", folder / "frozen.jsonl"]
    done = subprocess.run(
        [sys.executable, "-c", FREEZE_PROBE, *map(str, argv)], capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 0, done.stderr
    code, frozen, visited = done.stdout.split()[-3:]
    assert code == "0"
    assert int(frozen) > 50_000  # NumPy, SciPy with its signal module, Pinocchio and the package
    assert visited == "False"


def test_params_out_holds_the_last_publishable_estimate(streamed: tuple[int, list[dict[str, Any]], Path]) -> None:
    _, updates, params = streamed
    loaded = load_parameters(params)
    last = [update for update in updates if update["publishable"]][-1]
    assert yaml.safe_load(params.read_text(encoding="utf-8"))["format"] == FORMAT
    assert loaded.values() == pytest.approx(last["parameters"], rel=1e-12)
    assert list(loaded.removed) == last["removed"]
    assert loaded.quality["condition_number"] == pytest.approx(last["condition_number"])
    assert loaded.stamp == pytest.approx(last["time"])
    assert all(entry.expression for entry in loaded.parameters)


def test_params_out_stores_the_window_settings_and_the_signal_settings_they_imply(
    streamed: tuple[int, list[dict[str, Any]], Path],
) -> None:
    """``dynid predict`` of a streamed file filters as the window did, without the configuration; physical model."""
    _, _, params = streamed
    loaded = load_parameters(params)
    window = load_config(str(ARM6_CONFIG)).window_settings()
    assert loaded.settings["window"]["window_s"] == window.window_s
    signal = loaded.signal_settings()
    assert signal is not None and signal.position_cutoff_hz == window.position_cutoff_hz
    assert signal.gap_factor == window.signal.gap_factor and signal.min_speed_rad_s == window.signal.min_speed_rad_s
    # The window publishes the physically consistent estimate by default ([Wensing2018]).
    assert loaded.standard_parameters["source"] == "consistent"
    assert loaded.standard_parameters["physically_consistent"] is True


def test_standstill_is_never_publishable(folder: Path) -> None:
    # Past the first 5 s of jittered stamps, from which the window judges whether to recover them.
    data = write_csv(folder / "standstill.csv", *synthesize(10.0, moving=False))
    out = folder / "standstill.jsonl"
    assert stream(data, out) == 0
    updates = lines(out)
    assert len(updates) >= 5
    assert not any(update["publishable"] for update in updates)
    assert sum("standstill" in update["reason"] for update in updates) >= 4
    assert all(update["parameters"] == {} for update in updates)


def test_stamps_jumping_back_restart_the_window(moving: tuple[Any, ...], folder: Path) -> None:
    stamps, q, currents, joints = moving
    first = int(15 * RATE_HZ)  # 15 s, then the recording loops back to its start for 5 s
    looped = [np.concatenate([array, array[: int(5 * RATE_HZ)]]) for array in (stamps[:first], q[:first])]
    data = write_csv(
        folder / "looped.csv",
        looped[0],
        looped[1],
        np.concatenate([currents[:first], currents[: int(5 * RATE_HZ)]]),
        joints,
    )
    out = folder / "looped.jsonl"
    assert stream(data, out) == 0
    updates = lines(out)
    restart = next(k for k, update in enumerate(updates) if update["restarted"])
    before, after = updates[restart - 1], updates[restart]
    assert before["time"] > 14.0 and after["time"] < 1.5
    assert before["window_s"] > 9.0 and after["window_s"] < 1.5
    assert after["samples"] < before["samples"] / 5
    assert len(updates) == pytest.approx(20, abs=1)


def test_the_output_prints_a_unix_stamp_as_a_date_and_says_what_its_wall_time_counts(
    moving: tuple[Any, ...], folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A robot's Unix stamps printed as "at 1.79606e+09 s", and "97.3 s of data in 0.62 s wall time" of a command
    that took 10 s did not say it counts the window's updates only."""
    stamps, q, currents, joints = moving
    start = 1_796_060_000.0  # 2026-11-30 17:33:20 UTC
    data = write_csv(folder / "unix.csv", start + stamps, q, currents, joints)
    out, params = folder / "unix.jsonl", folder / "unix.yaml"
    capsys.readouterr()
    assert stream(data, out, "--params-out", params) == 0
    printed = capsys.readouterr().out
    last = [update for update in lines(out) if update["publishable"]][-1]
    after = last["time"] - (start + stamps[0])
    assert 24.0 < after < 25.0  # the last update, at the recording's end: 17:33:44.99…
    expected = f"last publishable estimate (data time 2026-11-30 17:33:44 UTC, {after:.6g} s after the recording's"
    assert f"{expected} first sample) written to {params}" in printed
    assert "(the window's updates and their lines; reading the recording and building the model not counted)" in printed


def test_the_stream_measures_the_torques_delay_on_its_first_rows_and_says_what_it_found(
    moving: tuple[Any, ...], folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torque_delay, "MEASURED_DATA_S", 15.0)  # a minute of rows in a real stream
    data = write_csv(folder / "delay.csv", *moving)
    out, params = folder / "delay.jsonl", folder / "delay.yaml"
    capsys.readouterr()
    assert stream(data, out, "--params-out", params) == 0
    found = [update["torque_delay"] for update in lines(out)]
    assert found[0] is None and found[-1] is not None  # measuring, then measured
    assert not found[-1]["aligned"] and found[-1]["reason"].startswith("torque delay: none (")
    assert f"{found[-1]['reason']}, measured on the window's first 15 s of motion\n" in capsys.readouterr().out
    assert load_parameters(params.read_text(encoding="utf-8")).quality["torque_delay"] == found[-1]


def test_rows_stamped_slightly_back_are_left_out_and_the_stream_says_how_many(
    moving: tuple[Any, ...], folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stamps, q, currents, joints = moving
    rows = int(6 * RATE_HZ)
    back = stamps[:rows].copy()
    back[3000:] -= 0.3  # the driver's clock steps back by 0.3 s: 0.3 s of rows repeat stamps already fed
    data = write_csv(folder / "back.csv", back, q[:rows], currents[:rows], joints)
    assert stream(data, folder / "back.jsonl") == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    stale = int(np.count_nonzero(back[3000:] <= back[2999]))
    assert len(warnings) == 1 and warnings[0].startswith(f"dynid stream: warning: {stale} of {rows} rows left out: ")
    assert "stale" in warnings[0] and not any(update["restarted"] for update in lines(folder / "back.jsonl"))


def test_chunks_follow_the_node_rule_for_stamps() -> None:
    stamps = np.array([0.0, 0.4, 0.4, 0.3, 0.9, 1.2, 2.5, 0.5, 0.6, 1.7])
    chunks = list(stream_chunks(stamps, 1.0))
    # Duplicate 0.4 and out-of-order 0.3 are dropped; 0.5 is more than BACKWARD_JUMP_S back: a restart.
    assert 2.5 - 0.5 > BACKWARD_JUMP_S
    assert [(chunk.tolist(), restart) for chunk, restart in chunks] == [
        ([0, 1, 4], False),
        ([5], False),
        ([6], False),
        ([7, 8], True),
        ([9], False),
    ]


def test_bad_config_is_a_one_line_error(moving: tuple[Any, ...], folder: Path, capsys: pytest.CaptureFixture) -> None:
    stamps, q, currents, joints = moving
    data = write_csv(folder / "short.csv", stamps[:3000], q[:3000], currents[:3000], joints)
    document = yaml.safe_load(ARM6_CONFIG.read_text(encoding="utf-8"))
    document["/**/estimator"]["ros__parameters"]["window"]["update_period_s"] = 20.0  # longer than the 10 s window
    config = folder / "bad.yaml"
    config.write_text(yaml.safe_dump(document), encoding="utf-8")
    capsys.readouterr()
    assert stream(data, folder / "bad.jsonl", config=config) != 0
    captured = capsys.readouterr()
    assert captured.out == ""
    errors = captured.err.splitlines()
    assert len(errors) == 1 and errors[0].startswith("dynid stream: error: ")
    assert "update_period_s" in errors[0]
    assert not (folder / "bad.jsonl").exists()


def test_a_forward_gap_restarts_the_window_never_interpolated(moving: tuple[Any, ...], folder: Path) -> None:
    """Before the gap rule, updates after a 30 s gap reported windows of 31-41 s and friction off by tens of %."""
    stamps, q, currents, joints = moving
    resumed = 12.0 + 30.0
    data = write_csv(folder / "gap.csv", np.where(stamps < 12.0, stamps, stamps + 30.0), q, currents, joints)
    out = folder / "gap.jsonl"
    assert stream(data, out) == 0
    updates = lines(out)
    settings = load_config(str(ARM6_CONFIG)).window_settings()
    assert all(u["window_s"] <= settings.window_s + settings.update_period_s + 1e-6 for u in updates)
    assert all(u["window_s"] <= u["time"] - resumed + 1e-6 for u in updates if u["time"] > resumed)
    true_fc1 = simulated_robot(ARM6_CONFIG, 6).drive.coulomb[0]
    after = [u["parameters"]["Fc1"] for u in updates if u["publishable"] and u["time"] > resumed]
    assert after, [u["reason"] for u in updates]
    assert np.all(np.abs(np.array(after) - true_fc1) < 0.2 * true_fc1), after
