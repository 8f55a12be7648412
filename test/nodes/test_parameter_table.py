"""One table of every node's parameters (io.config.NODE_PARAMETERS): what dynid and the nodes accept as keys."""

from __future__ import annotations

import importlib

import pytest
from rclpy.context import Context
from rclpy.parameter import Parameter

from dynamic_identification.core.settings_schema import Kind
from dynamic_identification.io.config import NODE_PARAMETERS
from dynamic_identification.nodes.estimator import EstimatorNode
from dynamic_identification.nodes.overrides import unknown_parameters
from dynamic_identification.nodes.parameters import ParameterSpec, node_parameters
from dynamic_identification.nodes.recorder import RecorderNode


@pytest.mark.parametrize("name", sorted(NODE_PARAMETERS))
def test_the_table_lists_exactly_the_parameters_the_node_declares(name: str) -> None:
    module = importlib.import_module(f"dynamic_identification.nodes.{name}")
    declared = {
        spec.name
        for value in vars(module).values()
        if isinstance(value, tuple) and value and all(isinstance(item, ParameterSpec) for item in value)
        for spec in value
    }
    assert declared == set(NODE_PARAMETERS[name])


def test_a_misspelled_override_is_refused_naming_the_closest_key(context: Context) -> None:
    expected = r"unknown configuration keys \['tolerence_s'\].*did you mean 'tolerance_s'"
    with pytest.raises(ValueError, match=expected):
        RecorderNode(context=context, parameter_overrides=[Parameter("tolerence_s", value=0.002)])


def test_a_key_another_node_declares_is_accepted_from_the_shared_block(context: Context) -> None:
    """``/**`` reaches every node: the recorder gets the excitation's and the estimator's keys too."""
    overrides = [Parameter("harmonics", value=3), Parameter("window.window_s", value=5.0)]
    node = RecorderNode(context=context, parameter_overrides=overrides)
    try:
        assert unknown_parameters(node) == []
    finally:
        node.destroy_node()


@pytest.mark.parametrize("name", sorted(NODE_PARAMETERS))
def test_descriptors_carry_the_schemas_description_unit_and_range(name: str) -> None:
    for spec in node_parameters(name):
        item, descriptor = spec.setting, spec.descriptor()
        assert descriptor.read_only and descriptor.description.startswith(item.description)
        assert item.unit in descriptor.description
        if item.kind is Kind.DOUBLE:
            bounds = descriptor.floating_point_range[0]
            assert (bounds.from_value, bounds.to_value) == (item.minimum, item.maximum)
        elif item.kind is Kind.INTEGER:
            bounds = descriptor.integer_range[0]
            assert (bounds.from_value, bounds.to_value) == (item.minimum, item.maximum)
        for choice in item.choices:
            assert choice in descriptor.additional_constraints


@pytest.mark.parametrize("key", ["estimation.method", "estimation.reduction", "estimation.model"])
def test_a_dynid_setting_in_the_estimators_block_is_checked_by_the_estimator(context: Context, key: str) -> None:
    """``dynid`` reads the estimator's block: a value it would refuse stops the node at start, naming the key and
    the choices, instead of passing silently (the node does not use these settings)."""
    with pytest.raises(ValueError, match=rf"parameter '{key}' must be one of .*got 'bogus'.*dynid"):
        EstimatorNode(context=context, parameter_overrides=[Parameter(key, value="bogus")])


def test_a_valid_dynid_setting_in_the_estimators_block_starts_the_estimator(context: Context) -> None:
    node = EstimatorNode(context=context, parameter_overrides=[Parameter("estimation.method", value="ols")])
    node.destroy_node()
