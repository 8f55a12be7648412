"""The settings schema: one consistent definition per setting, and the dataclasses that take their defaults from it."""

from __future__ import annotations

import dataclasses

import pytest

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.settings import ExcitationSettings
from dynamic_identification.core.identification.in_process import WindowSettings
from dynamic_identification.core.identification.settings import IdentificationSettings, SignalSettings
from dynamic_identification.core.mechanism.robot import DriveTerms
from dynamic_identification.core.settings_schema import (
    CONSUMERS,
    SETTINGS,
    Kind,
    Setting,
    check_fields,
    field_settings,
    setting,
    settings_of,
)

PYTHON_TYPES = {
    Kind.BOOL: (bool,),
    Kind.INTEGER: (int,),
    Kind.DOUBLE: (float,),
    Kind.STRING: (str,),
    Kind.NAMES: (tuple,),
    Kind.NUMBERS: (tuple,),
    Kind.MATRIX: (tuple,),
}


@pytest.mark.parametrize("item", SETTINGS, ids=lambda item: f"{item.key}@{item.nodes[0]}")
def test_a_default_has_its_kind_and_lies_within_its_bounds(item: Setting) -> None:
    if item.default is not None:
        assert isinstance(item.default, PYTHON_TYPES[item.kind])
        assert not isinstance(item.default, bool) or item.kind is Kind.BOOL
    if item.numeric:
        assert item.bound_problem(item.default) is None  # type: ignore[arg-type]
    if item.choices:
        assert item.default in item.choices
    assert item.description and "\n" not in item.description


@pytest.mark.parametrize("consumer", CONSUMERS)
def test_a_consumer_reads_each_key_once(consumer: str) -> None:
    keys = [item.key for item in settings_of(consumer)]
    assert len(keys) == len(set(keys))


def test_a_dotted_key_means_the_same_for_every_consumer() -> None:
    dotted = [item.key for item in SETTINGS if "." in item.key]
    assert len(dotted) == len(set(dotted))


def test_an_ambiguous_key_needs_its_consumer() -> None:
    with pytest.raises(KeyError, match="more than one setting 'rate_hz'"):
        setting("rate_hz")
    assert setting("rate_hz", "feedforward").default == 500.0


@pytest.mark.parametrize(
    "cls", [DriveTerms, SignalSettings, IdentificationSettings, WindowSettings, ExcitationSettings], ids=str
)
def test_dataclass_defaults_are_the_schemas(cls: type) -> None:
    items = field_settings(cls)
    assert items
    instance = cls()
    for name, item in items.items():
        assert getattr(instance, name) == item.default, name


def test_check_fields_names_the_field_and_the_bound() -> None:
    with pytest.raises(IdentificationError, match="refactor_every must be >= 1, got 0"):
        WindowSettings(refactor_every=0)
    with pytest.raises(IdentificationError, match="max_condition_number must be at most 1e"):
        WindowSettings(max_condition_number=1e20)
    check_fields(WindowSettings())


def test_window_settings_take_the_shared_signal_settings() -> None:
    window = WindowSettings(signal=SignalSettings(position_cutoff_hz=8.0))
    assert window.position_cutoff_hz == 8.0
    assert dataclasses.fields(WindowSettings)[2].name == "signal"
    with pytest.raises(IdentificationError, match=r"position_cutoff_hz must be >= 0 \(0: from the data\)"):
        WindowSettings(signal=SignalSettings(position_cutoff_hz=None))


def test_a_string_for_nested_settings_is_refused_when_the_settings_are_made_not_at_their_first_use() -> None:
    with pytest.raises(IdentificationError, match=r"reduction must be a ReductionSettings .*got 'sensitivity'"):
        WindowSettings(window_s=10.0, reduction="sensitivity")  # type: ignore[arg-type]
    with pytest.raises(IdentificationError, match="signal must be a SignalSettings"):
        WindowSettings(signal={"position_cutoff_hz": 8.0})  # type: ignore[arg-type]


def test_check_fields_checks_the_choices_of_a_string() -> None:
    with pytest.raises(IdentificationError, match="velocity must be one of auto, measured, differentiated"):
        SignalSettings(velocity="fused")
    with pytest.raises(IdentificationError, match="method must be one of ols, wls, got 'tls'"):
        IdentificationSettings(method="tls")
    with pytest.raises(IdentificationError, match="position_cutoff_hz must be finite and >= 0, got -1.0"):
        SignalSettings(position_cutoff_hz=-1.0)
    assert SignalSettings(position_cutoff_hz=None).position_cutoff_hz is None  # offline: no filter
