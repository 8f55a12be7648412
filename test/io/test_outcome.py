"""What an identification's outcome says about the cost of physical consistency (issue 25 finding 3)."""

from __future__ import annotations

from dynamic_identification.io.outcome import (
    CONSISTENCY_COST_WARNING,
    ConsistencyCost,
    consistency_cost_line,
    consistency_cost_warnings,
)

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
