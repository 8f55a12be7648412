"""What an identification's outcome says: the cost of physical consistency (issue 25 finding 3), a held-out
recording's figures and the joint samples they are over."""

from __future__ import annotations

import numpy as np
import pytest

from dynamic_identification.core.estimation.quality import JointErrors
from dynamic_identification.core.identification.prediction import StampPrediction
from dynamic_identification.io.outcome import (
    CONSISTENCY_COST_WARNING,
    ConsistencyCost,
    Validation,
    consistency_cost_line,
    consistency_cost_warnings,
)
from dynamic_identification.io.recording import recording_from_arrays

COSTS = (
    ConsistencyCost("training", False, 0.01724, 0.01781),
    ConsistencyCost("slow.csv", True, 0.055, 0.0572),
    ConsistencyCost("fast.csv", True, 0.05, 0.0625),
)


def test_the_cost_is_the_ratio_of_the_relative_torque_errors() -> None:
    assert [round(cost.ratio or 0.0, 4) for cost in COSTS] == [1.0331, 1.04, 1.25]
    assert ConsistencyCost("empty.csv", True, None, 0.1).ratio is None
    assert ConsistencyCost("exact", False, 0.0, 0.0).ratio is None


def test_one_line_gives_every_data_set_before_and_after() -> None:
    assert consistency_cost_line(COSTS) == (
        "cost of physical consistency, relative torque error unconstrained -> consistent: training 0.01724 -> 0.01781"
        " (x1.033); slow.csv 0.055 -> 0.0572 (x1.040); fast.csv 0.05 -> 0.0625 (x1.250)"
    )


def test_a_held_out_file_predicted_over_1_2_times_worse_is_warned_about_naming_it() -> None:
    warnings = consistency_cost_warnings(COSTS)
    assert CONSISTENCY_COST_WARNING == 1.2
    assert len(warnings) == 1
    assert warnings[0].startswith("the physically consistent model predicts fast.csv 1.25 times worse")
    assert "0.0625 against 0.05" in warnings[0]
    # The training data alone never warn: the constraint costs the fit by construction.
    assert not consistency_cost_warnings([ConsistencyCost("training", False, 0.01, 0.02)])


def test_a_held_out_recordings_figures_say_how_many_joint_samples_they_are_over() -> None:
    """Two joints, four rows, the last not predicted: the figure against the recorded torques is over the 4 joint
    samples where the joint moves, not over the 6 of the 3 predicted rows (the misses at rest are stiction)."""
    torques = np.array([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0], [1.0, 2.0]])
    predicted = np.array([[1.5, 2.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    speed = np.array([[0.01, 1.0], [1.0, 0.01], [1.0, 1.0], [0.0, 0.0]])
    zeros = JointErrors.zeros(2)
    validation = Validation(
        "held_out.csv",
        recording_from_arrays(time=np.arange(4.0), joint_names=["a", "b"], position=np.zeros((4, 2)), effort=torques),
        torques,
        StampPrediction(torques=predicted, speed=speed, covered=np.array([True, True, True, False])),
        zeros,
        zeros,
        np.ones(2, dtype=bool),
        0.05,
    )
    entry = validation.entry(["a", "b"])
    assert (entry["samples"], entry["predicted"], entry["moving"]) == (4, 3, 4)
    # Moving: b at row 0, a at row 1, both at row 2, where b misses by 1 N·m.
    assert entry["recorded_relative_error"] == pytest.approx(np.sqrt(1.0 / (2.0 * 1.0 + 2.0 * 4.0)))
