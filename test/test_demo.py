"""The demo's closed-loop simulation is identified correctly (forward dynamics, PD tracking, noise)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dynamic_identification.demo import DemoResult, format_result, identify_simulated_arm


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[DemoResult, Path]:
    out_dir = tmp_path_factory.mktemp("demo")
    return identify_simulated_arm(out_dir=out_dir, duration_s=40.0, seed=2), out_dir


def test_well_excited_parameters_lie_within_three_sigma_of_the_simulator_truth(demo) -> None:
    result, _ = demo
    relative_std = result.std / np.abs(result.identified_values)
    well_excited = relative_std < 0.10
    assert well_excited.sum() >= 0.5 * len(result.names)
    deviations = np.abs(result.deviations_in_sigma[well_excited])
    assert np.all(deviations < 3.0), dict(zip(np.array(result.names)[well_excited], deviations.round(2), strict=True))


def test_prediction_on_a_fresh_trajectory_is_within_one_percent_of_the_noise_free_torques(demo) -> None:
    result, _ = demo
    assert np.all(result.validation.moving_errors < 0.01), result.validation.moving_errors


def test_demo_writes_its_files_and_reports(demo) -> None:
    result, out_dir = demo
    for name in ("excitation.csv", "parameters.yaml", "validation.csv", "validation_predicted.csv"):
        assert (out_dir / name).is_file(), name
    report = format_result(result, 40.0)
    assert "condition number" in report and "dev/σ" in report
