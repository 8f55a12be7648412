"""One value for a robot's IDIM in base parameters: its mechanism, drive chain, drive terms and base parameters,
checked once to belong together ([Gautier2013] eq. (4), (7); [Briot2012] eq. (6)-(7))."""

from __future__ import annotations

import pytest

from dynamic_identification.core.errors import ModelError
from dynamic_identification.core.mechanism.closed_loop import ClosedLoopModel
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel
from dynamic_identification.core.mechanism.seam import SerialMechanism
from dynamic_identification.core.regressors import idim as regressors
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from five_bar import load_five_bar


@pytest.fixture(scope="module")
def five_bar() -> ClosedLoopModel:
    return load_five_bar()


def test_a_serial_robot_becomes_its_mechanism_with_the_base_parameters_of_its_idim(arm6: RobotModel) -> None:
    chain, terms = DriveChain.create(arm6.n_joints), DriveTerms()
    model = DynamicModel.create(arm6, chain, terms)
    assert isinstance(model.mechanism, SerialMechanism) and model.mechanism.robot is arm6
    expected = regressors.base_parameters(arm6, chain, terms)
    assert model.base.names == expected.names and model.base.expressions == expected.expressions


def test_given_base_parameters_are_kept_as_they_are(five_bar: ClosedLoopModel) -> None:
    chain, terms = DriveChain.create(five_bar.n_actuated), DriveTerms()
    base = five_bar.base_parameters(chain, terms)
    model = DynamicModel.create(five_bar, chain, terms, base)
    assert model.mechanism is five_bar and model.base is base


def test_a_drive_chain_of_another_size_is_refused(five_bar: ClosedLoopModel) -> None:
    terms = DriveTerms()
    base = five_bar.base_parameters(DriveChain.create(five_bar.n_actuated), terms)
    with pytest.raises(ModelError, match="drive chain has 5 joints, the mechanism has 2 controlled joints"):
        DynamicModel(five_bar, DriveChain.create(5), terms, base)


def test_base_parameters_of_other_drive_terms_are_refused(arm6: RobotModel) -> None:
    chain = DriveChain.create(arm6.n_joints)
    other = regressors.base_parameters(arm6, chain, DriveTerms(offset=False))
    with pytest.raises(ModelError, match="do not regroup the standard parameters of this mechanism and drive terms"):
        DynamicModel.create(arm6, chain, DriveTerms(), other)


def test_a_robot_model_is_refused_where_a_mechanism_is_needed(arm6: RobotModel) -> None:
    chain, terms = DriveChain.create(arm6.n_joints), DriveTerms()
    base = regressors.base_parameters(arm6, chain, terms)
    with pytest.raises(TypeError, match="use DynamicModel.create"):
        DynamicModel(arm6, chain, terms, base)  # type: ignore[arg-type]
