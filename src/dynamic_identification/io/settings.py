"""Settings read through the schema: typed, bounded, and named in every error.

:class:`SettingsReader` reads flat, dotted parameters (a configuration file's block, or the
values a node's ROS parameters hold) for one consumer of
:data:`~dynamic_identification.core.settings_schema.SETTINGS`: each value is checked against
its setting's type, choices and bounds, and an unset one takes the setting's default.
:meth:`SettingsReader.build` fills a settings dataclass whose fields were made with
:func:`~dynamic_identification.core.settings_schema.setting_field` (and the nested
dataclasses among them), so adding a setting to a dataclass needs no reader code.

Errors are one bounded line naming the key, the source and the value:
``window.window_s in robot.yaml must be finite and > 0, got -1.0``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from dynamic_identification.core.errors import DataError, brief
from dynamic_identification.core.settings_schema import (
    DYNID,
    Kind,
    Setting,
    field_settings,
    nested_fields,
    nested_keys,
    setting,
)

T = TypeVar("T")


def describe(item: Setting) -> str:
    """The setting's description with its unit and range, on one line (``CONFIG_KEYS``' text)."""
    unit = f", {item.unit}" if item.unit else ""
    allowed = f" ({item.range_text()})" if item.range_text() else ""
    return f"{item.description}{unit}{allowed}"


@dataclass(frozen=True)
class SettingsReader:
    """Typed access to flat parameters of ``consumer`` (see the module docstring).

    Attributes
    ----------
    parameters
        Flat, dotted parameters; a missing key takes its setting's default.
    source
        Where they come from, for error messages (a file name, ``estimator parameters``).
    consumer
        Whose settings these are: a node name or ``dynid`` / ``dynid excite``.
    ros
        The parameters are a node's: errors say ``parameter 'key' must be …`` (the node's
        start-up error names the node).
    """

    parameters: Mapping[str, Any]
    source: str
    consumer: str = DYNID
    ros: bool = False

    def setting(self, key: str) -> Setting:
        return setting(key, self.consumer)

    def _fail(self, key: str, value: Any, expected: str) -> DataError:
        subject = f"parameter {key!r}" if self.ros else f"{key} in {self.source}"
        return DataError(f"{subject} must be {expected}, got {brief(value)}")

    def value(self, item: Setting, *, bounds: bool = True) -> Any:
        """The value of ``item``: typed, within its bounds (unless ``bounds`` is false), else its default."""
        value = self.parameters.get(item.key, item.default)
        reader = _READERS[item.kind]
        result = reader(self, item, value)
        if bounds:
            self.check_bounds(item, result)
        return result

    def check_bounds(self, item: Setting, value: Any) -> None:
        """``DataError`` when a number of ``item`` lies outside its bounds."""
        if item.numeric and value is not None:
            problem = item.bound_problem(value)
            if problem is not None:
                raise self._fail(item.key, value, problem)

    def build(self, cls: type[T], *, core_first: bool = False, keys: Mapping[str, Setting] | None = None) -> T:
        """The dataclass ``cls`` with every field made by ``setting_field`` read, nested dataclasses built too.

        With ``core_first`` the dataclass checks its values before the bounds of the
        schema are checked, so its own message (``velocity_scale must be in (0, 1]``)
        speaks first. ``keys`` reads some fields from other settings than their own
        (:func:`~dynamic_identification.core.settings_schema.nested_field`).
        """
        items = {**field_settings(cls), **(keys or {})}
        values: dict[str, Any] = {name: self.value(item, bounds=not core_first) for name, item in items.items()}
        values.update(
            {name: self.build(nested, keys=nested_keys(cls, name)) for name, nested in nested_fields(cls).items()}
        )
        built = cls(**values)
        if core_first:
            for name, item in items.items():
                self.check_bounds(item, values[name])
        return built

    def set_among(self, keep: Callable[[str], bool]) -> tuple[tuple[str, Any], ...]:
        """The parameters set whose key ``keep`` accepts, sorted by key (a frozen dataclass can hold them)."""
        return tuple(sorted((key, value) for key, value in self.parameters.items() if keep(key)))

    # -- typed access by key, for settings that no dataclass field holds ---------------------------

    def flag(self, key: str) -> bool:
        return bool(self.value(self.setting(key)))

    def real(self, key: str) -> float:
        return float(self.value(self.setting(key)))

    def integer(self, key: str) -> int:
        return int(self.value(self.setting(key)))

    def text(self, key: str) -> str:
        value = self.value(self.setting(key))
        return "" if value is None else str(value)

    def names(self, key: str) -> tuple[str, ...] | None:
        value: tuple[str, ...] | None = self.value(self.setting(key))
        return value

    def numbers(self, key: str) -> tuple[float, ...] | None:
        value: tuple[float, ...] | None = self.value(self.setting(key))
        return value

    def matrix(self, key: str) -> tuple[tuple[float, ...], ...] | None:
        value: tuple[tuple[float, ...], ...] | None = self.value(self.setting(key))
        return value

    def closures(self, key: str) -> list[Any] | dict[str, dict[str, Any]] | None:
        """The closures of a :attr:`~dynamic_identification.core.settings_schema.Kind.CLOSURES` setting as given:
        the list under ``key``, or name → fields of the members ``key.<name>.<field>``; ``None`` when unset."""
        value: list[Any] | dict[str, dict[str, Any]] | None = self.value(self.setting(key))
        return value


def _flag(reader: SettingsReader, item: Setting, value: Any) -> bool:
    if not isinstance(value, bool):
        raise reader._fail(item.key, value, "true or false")
    return value


def _integer(reader: SettingsReader, item: Setting, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise reader._fail(item.key, value, "an integer")
    return value


def _real(reader: SettingsReader, item: Setting, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise reader._fail(item.key, value, "a number")
    try:
        return float(value)
    except OverflowError:
        raise reader._fail(item.key, value, f"at most {item.number(item.maximum or 0.0)}") from None


def _text(reader: SettingsReader, item: Setting, value: Any) -> str | None:
    if item.choices:
        if not isinstance(value, str) or value not in item.choices:
            raise reader._fail(item.key, value, f"one of {list(item.choices)}")
        return value
    if item.default is None and value in (None, ""):
        return None
    if not isinstance(value, str) or (item.nonempty and not value.strip()):
        raise reader._fail(item.key, value, "a non-empty string" if item.nonempty else "a string")
    return value


def _names(reader: SettingsReader, item: Setting, value: Any) -> tuple[str, ...] | None:
    if value is None or _empty(value) or (isinstance(value, (list, tuple)) and list(value) == [""]):
        return None
    if not isinstance(value, (list, tuple)) or not all(isinstance(name, str) and name for name in value):
        raise reader._fail(item.key, value, "a list of joint names")
    if len(set(value)) != len(value):
        raise reader._fail(item.key, value, "a list of distinct joint names")
    return tuple(value)


def _numbers(reader: SettingsReader, item: Setting, value: Any) -> tuple[float, ...] | None:
    if value is None or _empty(value):
        return None
    if not isinstance(value, (list, tuple)) or not all(_is_real(number) for number in value):
        raise reader._fail(item.key, value, "a list of finite numbers")
    return tuple(float(number) for number in value)


def _matrix(reader: SettingsReader, item: Setting, value: Any) -> tuple[tuple[float, ...], ...] | None:
    if value is None or _empty(value):
        return None
    expected = "a square matrix: n×n finite numbers, row by row, or a list of rows"
    if not isinstance(value, (list, tuple)):
        raise reader._fail(item.key, value, expected)
    if all(isinstance(row, (list, tuple)) for row in value):
        rows = list(value)
    else:
        size = math.isqrt(len(value))
        if size * size != len(value):
            raise reader._fail(item.key, value, expected)
        rows = [value[i * size : (i + 1) * size] for i in range(size)]
    if any(len(row) != len(rows) or not all(_is_real(number) for number in row) for row in rows):
        raise reader._fail(item.key, value, expected)
    return tuple(tuple(float(number) for number in row) for row in rows)


def _closures(reader: SettingsReader, item: Setting, value: Any) -> list[Any] | dict[str, dict[str, Any]] | None:
    """A list of closures under the key, or the members ``<key>.<name>.<field>`` by name (what ROS parameters
    hold); their fields are checked where they are used
    (:func:`~dynamic_identification.core.mechanism.closed_loop.loop_closures_from_config`)."""
    prefix = f"{item.key}."
    named: dict[str, dict[str, Any]] = {}
    for key, member in reader.parameters.items():
        if not key.startswith(prefix):
            continue
        name, dot, field = key[len(prefix) :].rpartition(".")
        if not dot or not name:
            raise reader._fail(key, member, f"a field of a named closure ({item.key}.<name>.frame_a, …)")
        named.setdefault(name, {})[field] = member
    listed = None if value is None or _empty(value) else value
    if listed is not None and named:
        raise reader._fail(item.key, listed, "given once: as a list or as named closures, not both")
    if named:
        return named
    if listed is None:
        return None
    if not isinstance(listed, (list, tuple)):
        raise reader._fail(item.key, listed, "a list of closures {frame_a, frame_b, type}, or named closures")
    return list(listed)


def _empty(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == 0


def _is_real(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


_READERS = {
    Kind.BOOL: _flag,
    Kind.INTEGER: _integer,
    Kind.DOUBLE: _real,
    Kind.STRING: _text,
    Kind.NAMES: _names,
    Kind.NUMBERS: _numbers,
    Kind.MATRIX: _matrix,
    Kind.CLOSURES: _closures,
}

__all__ = ["SettingsReader", "describe"]
