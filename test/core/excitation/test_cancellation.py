"""Excitation planning stops at the first step after its caller cancels it, and is unchanged otherwise."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from dynamic_identification.core.cancellation import Cancellation
from dynamic_identification.core.errors import PlanningCancelled
from dynamic_identification.core.excitation.constraints import MechanismLimits
from dynamic_identification.core.excitation.optimisation import SEARCH_STAGE, ExcitationDesign, optimise_fourier
from dynamic_identification.core.excitation.payload import optimise_payload_excitation
from dynamic_identification.core.excitation.plan import plan_excitation
from dynamic_identification.core.excitation.safety import JointLimits, TorqueModel
from dynamic_identification.core.excitation.settings import ExcitationSettings
from dynamic_identification.core.mechanism.closed_loop import ClosedLoopModel
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel
from dynamic_identification.core.mechanism.seam import SerialMechanism
from dynamic_identification.core.progress import Progress
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.io.config import load_excitation_settings
from five_bar import FIVE_BAR_CHAIN, FIVE_BAR_CONFIG, load_five_bar

BUDGET_S = 10.0
"""Time budget of the searches under test: far longer than they run when cancelled (a few milliseconds)."""


class _CancelAfter:
    """``requested`` of a :class:`Cancellation` that turns true at poll ``polls + 1``, counting every poll."""

    def __init__(self, polls: int) -> None:
        self.limit, self.polls = polls, 0

    def __call__(self) -> bool:
        self.polls += 1
        return self.polls > self.limit


@pytest.fixture(scope="module")
def chain(robot: RobotModel) -> DriveChain:
    return DriveChain.create(robot.n_joints)


@pytest.fixture(scope="module")
def dynamic_model(robot: RobotModel, chain: DriveChain) -> DynamicModel:
    return DynamicModel.create(robot, chain, DriveTerms())


@pytest.fixture(scope="module")
def five_bar() -> ClosedLoopModel:
    return load_five_bar()


def test_a_search_cancelled_after_25_evaluations_evaluates_no_further_candidate(
    dynamic_model: DynamicModel,
    limits: JointLimits,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    evaluated = [0]
    real = SerialMechanism.observation_matrix

    def counted(*args: Any, **kwargs: Any) -> np.ndarray:  # one call per candidate without box or torques
        evaluated[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(SerialMechanism, "observation_matrix", counted)
    cancellation = Cancellation(lambda: evaluated[0] >= 25)
    with pytest.raises(PlanningCancelled):
        optimise_fourier(
            dynamic_model,
            limits,
            time_budget_s=BUDGET_S,
            cancellation=cancellation,
        )
    assert evaluated[0] == 25


Design = Callable[[Cancellation], object]
"""A designer's search, with everything but the cancellation given."""


@pytest.fixture(scope="module")
def designs(
    robot: RobotModel, dynamic_model: DynamicModel, limits: JointLimits, five_bar: ClosedLoopModel
) -> dict[str, Design]:
    """The three searches (serial, payload, closed-loop five-bar), each with an evaluation budget of a million."""
    frame = robot.model.frames[robot.model.nframes - 1].name
    settings = load_excitation_settings(FIVE_BAR_CONFIG)
    planning = MechanismLimits.from_settings(five_bar, settings).planning(settings.interpolation_tolerance_rad)
    torques = TorqueModel.nominal(five_bar, FIVE_BAR_CHAIN, DriveTerms())
    budget_s, evaluations = BUDGET_S, 10**6
    return {
        "serial": lambda cancellation: optimise_fourier(
            dynamic_model,
            limits,
            time_budget_s=budget_s,
            max_evaluations=evaluations,
            cancellation=cancellation,
        ),
        "payload": lambda cancellation: optimise_payload_excitation(
            robot, frame, limits, time_budget_s=budget_s, max_evaluations=evaluations, cancellation=cancellation
        ),
        "closed_loop": lambda cancellation: optimise_fourier(
            DynamicModel.create(five_bar, FIVE_BAR_CHAIN, DriveTerms()),
            planning,
            torque_model=torques,
            time_budget_s=budget_s,
            max_evaluations=evaluations,
            cancellation=cancellation,
        ),
    }


@pytest.mark.parametrize("designer", ["serial", "payload", "closed_loop"])
@pytest.mark.parametrize("polls", [0, 20], ids=["already_cancelled", "cancelled_while_searching"])
def test_every_designer_stops_at_its_first_poll_after_the_request(
    designs: dict[str, Design], designer: str, polls: int
) -> None:
    requested = _CancelAfter(polls)
    with pytest.raises(PlanningCancelled):
        designs[designer](Cancellation(requested))
    assert requested.polls == polls + 1  # nothing polled, so nothing evaluated, after the request


def test_a_long_period_plan_is_cancelled_in_its_final_checks_too(robot: RobotModel) -> None:
    """A 100 s period is fitted, shrunk and checked on 10⁵ samples: those loops poll as well."""
    settings = ExcitationSettings(fundamental_hz=0.01, optimise=False)
    requested = _CancelAfter(3)
    with pytest.raises(PlanningCancelled):
        plan_excitation(
            robot, DriveChain.create(robot.n_joints), DriveTerms(), settings, cancellation=Cancellation(requested)
        )
    assert requested.polls == 4


@pytest.mark.parametrize("mode", ["segmented", "process", "payload"])
def test_every_mode_of_the_plan_is_cancellable(robot: RobotModel, mode: str) -> None:
    settings = ExcitationSettings(mode=mode, time_budget_s=BUDGET_S)
    with pytest.raises(PlanningCancelled):
        plan_excitation(
            robot, DriveChain.create(robot.n_joints), DriveTerms(), settings, cancellation=Cancellation(lambda: True)
        )


def test_a_design_that_is_not_cancelled_is_the_design_without_cancellation(
    dynamic_model: DynamicModel, limits: JointLimits
) -> None:
    def design(cancellation: Cancellation | None) -> ExcitationDesign:
        polled = {} if cancellation is None else {"cancellation": cancellation}  # None: the default argument
        common = {"time_budget_s": math.inf, "max_evaluations": 200, "seed": 5}
        return optimise_fourier(dynamic_model, limits, **common, **polled)

    reports: list[Progress] = []
    plain, polled = design(None), design(Cancellation(lambda: False, progress=reports.append))
    assert_array_equal(polled.trajectory.sine, plain.trajectory.sine)
    assert_array_equal(polled.trajectory.cosine, plain.trajectory.cosine)
    assert_array_equal(polled.trajectory.offsets, plain.trajectory.offsets)
    assert polled.evaluations == plain.evaluations
    # Watched, the search reported every evaluation against its budget (evaluations: the time is unbounded).
    search = [report for report in reports if report.stage == SEARCH_STAGE]
    assert [report.done for report in search] == [*range(1, polled.evaluations + 1), 200]
    assert {(report.total, report.unit) for report in search} == {(200, "evaluations")}


def test_a_cancellation_is_not_refused_as_bad_input() -> None:
    """Handlers that refuse bad input (``except IdentificationError``, a ``ValueError``) let a cancellation through."""
    with pytest.raises(PlanningCancelled, match="cancelled"):
        try:
            Cancellation(lambda: True).check()
        except ValueError:
            pytest.fail("a cancellation was caught as bad input")
