"""Identification configuration, read from a ROS 2 parameter YAML file.

The nodes and ``dynid --config`` share one file format, the one ``ros2 run … --ros-args
--params-file`` takes: one ``/**/node_name: ros__parameters: {...}`` block per node (the
``/**/`` prefix makes a block apply to the node in any namespace, so a namespace moves a
whole stack with its configuration; a plain ``node_name:`` key matches the node in the
root namespace only, as ROS reads it), with a ``/**`` block for parameters shared by
every node. Nested mappings inside ``ros__parameters`` are dotted parameter names
(``signal: {decimation: 4}`` is the parameter ``signal.decimation``). A plain mapping
without ``ros__parameters`` blocks is accepted too and read as the parameters themselves.
Scalars are read as ROS reads them: ``1e9`` is a number, not a string.

Every key of the ``/**`` block and of a block of one of this package's nodes must be a
parameter some node of the package (or ``dynid``) knows: a misspelled key
(``estimaton.method``) is refused naming the closest valid key, as is a block name close
to a node name (``estimater:``). Error messages never print a value whole (see
:func:`~dynamic_identification.core.errors.brief`). ``dynid`` reads the ``/**`` and
``estimator`` blocks, and the recorder's for how a rosbag makes a recording
(:data:`RECORDING_KEYS`); a known key set where a ``dynid`` verb does not read it is named by
:func:`unread_keys`, which ``dynid`` prints as warnings.

Every key is a setting of :data:`~dynamic_identification.core.settings_schema.SETTINGS`, read
through it (:class:`~dynamic_identification.io.settings.SettingsReader`: type, range, default);
:data:`CONFIG_KEYS`, :data:`EXCITATION_KEYS` and :data:`NODE_PARAMETERS` are its views.
Identification keys (see :data:`CONFIG_KEYS` for units and meaning)::

    /**/estimator:
      ros__parameters:
        joints: [shoulder, elbow]
        drive_chain: {gear_ratios: [100.0, 80.0], drive_gains: [0.1, 0.1], coupling: [1.0, 0.0, 0.0, 1.0]}
        drive_terms: {rotor_inertia: true, viscous_friction: true, coulomb_friction: true, offset: true}
        signal: {position_cutoff_hz: 0.0, decimation: 0, velocity: auto, stamps: auto, rate_hz: 0.0,
                 min_speed_rad_s: 0.05}
        estimation: {method: wls, reduction: none, r_sigma: 20.0, min_samples: 200, consistency: true, prior: 0.0,
                     uncertainty: hac}
        topics: {joint_states: /joint_states, motor_currents: /motor_currents, effort_is_torque: false}
    /**/recorder:
      ros__parameters:
        tolerance_s: 0.005         # s: how the recorder aligns the currents, and dynid --bag with it

ROS parameters cannot hold nested lists, so ``drive_chain.coupling`` is the n×n matrix
flattened row by row (a list of rows is accepted as well).

A closed-loop (parallel) robot ([Briot2012] §2, ``docs/closed_loop.md``) adds, in the ``/**``
block, the closures of its opened tree and its actuated joints; ``joints`` are then the
actuated joints (or unset), and the drive chain has one entry per actuated joint::

    robot:
      loop_closures:
        distal_tip: {frame_a: tip_1, frame_b: tip_2, type: point}   # ROS: a mapping per closure
      actuated_joints: [proximal_joint_1, proximal_joint_2]
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dynamic_identification.core.errors import DataError, IdentificationError, brief
from dynamic_identification.core.excitation.settings import ExcitationSettings
from dynamic_identification.core.identification.in_process import WindowSettings
from dynamic_identification.core.identification.settings import (
    IdentificationSettings,
    ReductionSettings,
    SignalSettings,
)
from dynamic_identification.core.mechanism.closed_loop import ClosedLoopModel, LoopClosure, loop_closures_from_config
from dynamic_identification.core.mechanism.plausibility import PlausibilityBounds, mechanism_bounds
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel
from dynamic_identification.core.mechanism.seam import Mechanism
from dynamic_identification.core.settings_schema import (
    DYNID,
    DYNID_EXCITE,
    NODES,
    SETTINGS,
    default,
    field_settings,
    group_member,
    nested_field,
    setting,
    setting_field,
    settings_of,
)
from dynamic_identification.core.simulation import SimulatedArm, SimulatedRobot
from dynamic_identification.io.documents import parse_yaml
from dynamic_identification.io.settings import SettingsReader, describe
from dynamic_identification.io.urdf_location import resolve_urdf

CONFIG_KEYS: dict[str, str] = {item.key: describe(item) for item in settings_of(DYNID)}
"""Dotted parameter names understood by :func:`load_config`, with their meaning, units and range
(the ``dynid`` settings of :data:`~dynamic_identification.core.settings_schema.SETTINGS`)."""

SECTIONS: tuple[str, ...] = tuple(sorted({key.split(".", 1)[0] for key in CONFIG_KEYS if "." in key}))
"""Parameter prefixes owned by this configuration: unknown keys under them are typos."""

NODE_PARAMETERS: dict[str, tuple[str, ...]] = {node: tuple(item.key for item in settings_of(node)) for node in NODES}
"""The ROS parameters each node of the package declares (the schema's settings of that node).

With :data:`CONFIG_KEYS` (``dynid``'s keys, shared with the estimator and recorder blocks),
:data:`EXCITATION_KEYS` and :data:`ROS_PARAMETERS` it is the set of valid keys of a
configuration file: the ``/**`` block applies to every node, so a key there must be known
to one of them."""

EXCITATION_KEYS: dict[str, str] = {item.key: describe(item) for item in settings_of(DYNID_EXCITE)}
"""Excitation settings: parameters of the ``excitation`` node block of a configuration file,
read by the node and by ``dynid excite``."""

ROS_PARAMETERS: tuple[str, ...] = ("use_sim_time", "start_type_description_service")
"""Parameters rclpy declares on every node."""

ROS_PARAMETER_PREFIXES: tuple[str, ...] = ("qos_overrides.",)
"""Prefixes of parameters rclpy or a launch file may set on any node (QoS overrides)."""

CLOSED_LOOP_KEYS: tuple[str, ...] = tuple(key for key in CONFIG_KEYS if key.startswith("robot."))
"""A closed-loop robot's description ([Briot2012] §2, ``docs/closed_loop.md``): ``robot.loop_closures`` (as ROS
parameters ``robot.loop_closures.<name>.{frame_a, frame_b, type}``: a parameter file cannot hold a list of
mappings) and ``robot.actuated_joints``."""


RECORDING_KEYS: tuple[str, ...] = (
    "topics.joint_states",
    "topics.motor_currents",
    "topics.effort_is_torque",
    "tolerance_s",
    "max_delay_s",
)
"""The recorder's settings of how joint states and motor currents make a recording. ``dynid`` reads
them from the recorder's block too (over ``/**`` and the estimator's), so that ``--bag`` reads a
rosbag with the settings the recorder node records with."""


def is_closed_loop_key(key: str) -> bool:
    """Whether ``key`` belongs to a closed-loop robot's description (:data:`CLOSED_LOOP_KEYS` or a closure's field)."""
    return key in CLOSED_LOOP_KEYS or group_member(key) is not None


def known_keys() -> frozenset[str]:
    """Every key a configuration block of this package may hold."""
    keys = set(CONFIG_KEYS) | set(EXCITATION_KEYS) | set(ROS_PARAMETERS)
    for names in NODE_PARAMETERS.values():
        keys.update(names)
    return frozenset(keys)


def is_known_key(key: str) -> bool:
    """Whether ``key`` is a parameter of some node of the package, of ``dynid`` or of rclpy."""
    return key in known_keys() or key.startswith(ROS_PARAMETER_PREFIXES) or group_member(key) is not None


def unknown_keys_message(keys: Sequence[str], source: str, *, known: Iterable[str] | None = None) -> str:
    """One line naming the unknown ``keys`` (the first few) and the closest valid key of each (difflib)."""
    candidates = sorted(known_keys() if known is None else set(known))
    shown = [brief(key, 60) for key in list(keys)[:5]]
    more = f" and {len(keys) - 5} more" if len(keys) > 5 else ""
    hints = []
    for key in list(keys)[:5]:
        close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6) if isinstance(key, str) else []
        if close:
            hints.append(f"{close[0]!r} for {brief(key, 60)}" if len(keys) > 1 else repr(close[0]))
    hint = f" (did you mean {', '.join(hints)}?)" if hints else ""
    return f"unknown configuration keys [{', '.join(shown)}]{more} in {source}{hint}"


def _absolute(topic: str) -> str:
    """A topic name as a rosbag stores it: a relative name is taken in the root namespace."""
    return topic if topic.startswith("/") else f"/{topic}"


@dataclass(frozen=True)
class IdentificationConfig:
    """Settings of an identification run: the ``dynid`` settings of the schema (defaults suit the demo robot).

    Every field made with :func:`~dynamic_identification.core.settings_schema.setting_field` is
    read from its key by :func:`config_from_parameters` (units, ranges and meaning in
    :data:`CONFIG_KEYS`); ``drive_terms`` and ``window`` are built from theirs.

    Attributes
    ----------
    joints
        Identified joints; ``None`` takes every joint of the data.
    gear_ratios, drive_gains, coupling
        Drive chain (see :class:`~dynamic_identification.core.mechanism.robot.DriveChain`);
        ``None`` means a direct drive (ones, identity).
    drive_terms
        Which drive-chain parameters are identified.
    position_cutoff_hz, decimation, velocity, torque_delay, stamps, rate_hz, min_speed_rad_s, gap_factor,
    regressor_samples
        Signal processing (:class:`~dynamic_identification.core.identification.settings.SignalSettings`):
        a cut-off of 0 is chosen from the data, ``auto`` velocities and stamps are decided from it.
    model
        Regression model of offline identification ([DirectDrive2012] §3): ``"dynamic"``
        is the IDIM of [Gautier2013]; the others identify the same base parameters.
    method, min_samples, joint_error_warning
        Offline estimation (:class:`~dynamic_identification.core.identification.settings.IdentificationSettings`).
    reduction
        Offline model reduction and the published uncertainty (``estimation.reduction``, ``estimation.e_tol``,
        ``estimation.r_sigma``, ``window.friction_motion_rad``, ``estimation.uncertainty``:
        :class:`~dynamic_identification.core.identification.settings.ReductionSettings`); the window nests its own,
        whose method is ``window.reduction``.
    consistency, prior, prior_weight
        Publish the physically consistent estimate ([Wensing2018]), offline and for every
        publishable window update; ``prior`` > 0 bounds the link inertias to a box of that
        half-width (parameter scales) around the URDF's; ``prior_weight`` weighs the log-det
        divergence to the URDF's link pseudo-inertias ([Lee2020]).
    efficiency
        ``dynid gains``: identify a transmission efficiency per motor with its drive gain
        (:func:`~dynamic_identification.core.identification.drive_gains.identify_drive_gains`).
    passive_friction
        ``dynid identify`` of a closed-loop robot: offer bearing friction in the passive joints
        (:func:`~dynamic_identification.core.identification.passive_friction.identify_choosing_passive_friction`).
    choose_drive_terms
        ``dynid identify``: the data choose each kind of ``drive_terms``
        (:func:`~dynamic_identification.core.identification.drive_term_choice.identify_choosing_drive_terms`).
    joint_states_topic, currents_topic, effort_is_torque
        Where a rosbag holds the joint states and the motor currents (absolute names); with
        ``effort_is_torque`` the joint torques come from ``JointState.effort``, and when the two
        topics are one the currents do (:func:`~dynamic_identification.io.rosbag.read_bag`).
    tolerance_s, max_delay_s
        How a rosbag's currents are aligned to its joint states, s
        (:class:`~dynamic_identification.core.signal.alignment.StreamAligner`, as the recorder aligns them).
    window
        In-process estimation (the ``window.*`` settings, with the signal and estimation ones).
    effort_limits, acceleration_limits, jerk_limits
        The robot's limits where the URDF has none or the wrong ones (``limits.*``),
        N·m, rad/s², rad/s³; ``None``: the URDF's and the defaults.
    effort_factor, mass_factor
        Plausibility gates (:mod:`~dynamic_identification.core.mechanism.plausibility`).
    loop_closures, actuated_joints
        A closed-loop robot's closures and actuated joints (``robot.loop_closures``,
        ``robot.actuated_joints``, read through the schema by :func:`config_from_parameters`);
        both empty for a serial robot.
    source
        Where the settings come from (the file), for the messages of what is checked later.
    """

    joints: tuple[str, ...] | None = setting_field("joints", DYNID)
    gear_ratios: tuple[float, ...] | None = setting_field("drive_chain.gear_ratios")
    drive_gains: tuple[float, ...] | None = setting_field("drive_chain.drive_gains")
    coupling: tuple[tuple[float, ...], ...] | None = setting_field("drive_chain.coupling")
    drive_terms: DriveTerms = nested_field(DriveTerms)
    position_cutoff_hz: float = setting_field("signal.position_cutoff_hz")
    decimation: int = setting_field("signal.decimation")
    velocity: str = setting_field("signal.velocity")
    torque_delay: str = setting_field("signal.torque_delay")
    stamps: str = setting_field("signal.stamps")
    model: str = setting_field("estimation.model")
    method: str = setting_field("estimation.method")
    reduction: ReductionSettings = nested_field(ReductionSettings)
    consistency: bool = setting_field("estimation.consistency")
    prior: float = setting_field("estimation.prior")
    prior_weight: float = setting_field("estimation.prior_weight")
    rate_hz: float = setting_field("signal.rate_hz")
    min_speed_rad_s: float = setting_field("signal.min_speed_rad_s")
    gap_factor: float = setting_field("signal.gap_factor")
    regressor_samples: str = setting_field("signal.regressor_samples")
    min_samples: int = setting_field("estimation.min_samples")
    joint_error_warning: float = setting_field("estimation.joint_error_warning")
    efficiency: bool = setting_field("estimation.efficiency")
    passive_friction: bool = setting_field("estimation.passive_friction")
    choose_drive_terms: bool = setting_field("estimation.choose_drive_terms")
    joint_states_topic: str = _absolute(default("topics.joint_states", DYNID))
    currents_topic: str = _absolute(default("topics.motor_currents", DYNID))
    effort_is_torque: bool = setting_field("topics.effort_is_torque", DYNID)
    tolerance_s: float = setting_field("tolerance_s", DYNID)
    max_delay_s: float = setting_field("max_delay_s", DYNID)
    window: WindowSettings = nested_field(WindowSettings)
    effort_limits: tuple[float, ...] | None = setting_field("limits.effort")
    acceleration_limits: tuple[float, ...] | None = setting_field("limits.acceleration")
    jerk_limits: tuple[float, ...] | None = setting_field("limits.jerk")
    effort_factor: float = setting_field("plausibility.effort_factor")
    mass_factor: float = setting_field("plausibility.mass_factor")
    loop_closures: tuple[LoopClosure, ...] = ()
    actuated_joints: tuple[str, ...] = ()
    source: str = field(default="the defaults", compare=False)

    @property
    def closed_loop(self) -> bool:
        """Whether the configuration describes a closed-loop robot (``robot.loop_closures``)."""
        return bool(self.loop_closures)

    def closed_loop_model(self, urdf: str | os.PathLike[str]) -> ClosedLoopModel:
        """The closed-loop model of ``urdf`` (its opened tree) with these closures and actuated joints.

        Raises
        ------
        DataError
            When the configuration describes a serial robot.
        ModelError
            When the URDF does not fit the description (unknown frame or joint, mobility).
        """
        if not self.closed_loop:
            raise DataError("the configuration has no robot.loop_closures: it describes a serial robot")
        closures = [{"frame_a": c.frame_a, "frame_b": c.frame_b, "type": c.type} for c in self.loop_closures]
        return ClosedLoopModel.from_config(Path(urdf), loop_closures=closures, actuated_joints=self.actuated_joints)

    def plausibility_bounds(self, mechanism: RobotModel | Mechanism) -> PlausibilityBounds:
        """The plausibility gates of ``mechanism`` with the ``limits.*`` (per controlled joint or per tree joint) and
        ``plausibility.*`` settings (:func:`~dynamic_identification.core.mechanism.plausibility.mechanism_bounds`);
        errors as ``DataError``."""
        try:
            return mechanism_bounds(
                mechanism,
                effort_limits=self.effort_limits,
                acceleration_limits=self.acceleration_limits,
                effort_factor=self.effort_factor,
                mass_factor=self.mass_factor,
            )
        except IdentificationError as error:
            raise DataError(f"limits.* / plausibility.*: {error}") from error

    def identification_settings(self) -> IdentificationSettings:
        """Settings of offline identification (``dynid identify``, ``predict``): the fields of the same keys."""
        try:
            return _by_key(IdentificationSettings, self, signal=_by_key(SignalSettings, self), reduction=self.reduction)
        except IdentificationError as error:
            raise DataError(f"identification settings: {error}") from error

    def window_settings(self) -> WindowSettings:
        """Settings of the in-process sliding-window estimator."""
        return self.window

    def drive_chain(self, n_joints: int, joint_names: Sequence[str] | None = None) -> DriveChain:
        """The drive chain for ``n_joints`` joints (``joint_names``, when known, name them in messages).

        Raises
        ------
        DataError
            Naming the file, the key, its count and the joints it should have one entry for.
        """
        for key, value in (
            ("drive_chain.gear_ratios", self.gear_ratios),
            ("drive_chain.drive_gains", self.drive_gains),
            ("drive_chain.coupling", self.coupling),
        ):
            if value is not None and len(value) != n_joints:
                names = f" {brief(list(joint_names), 200)}" if joint_names is not None else ""
                unset = "" if self.joints else " (joints unset: the recording's, or every joint of the URDF)"
                kind = "rows" if key.endswith("coupling") else "entries"
                raise DataError(
                    f"{key} in {self.source} has {len(value)} {kind}, but the {n_joints} joints{names}{unset} need"
                    f" one each, in the order of joints"
                )
        return DriveChain.create(
            n_joints, gear_ratios=self.gear_ratios, drive_gains=self.drive_gains, coupling=self.coupling
        )

    def overridden(self, values: Mapping[str, Any], *, source: str) -> IdentificationConfig:
        """These settings with ``values`` (setting key → value: ``{"signal.velocity": "measured"}``) instead.

        Each value is read through the schema (type, bounds, choices) into the field of its
        key, as :func:`config_from_parameters` reads it: the command line's ``--cutoff-hz``
        is ``signal.position_cutoff_hz``, checked like the one of a configuration file.

        Raises
        ------
        DataError
            Naming ``source``, the key and the bad value, or a key no field here holds.
        """
        names = {item.key: name for name, item in field_settings(IdentificationConfig).items()}
        reduction = {item.key: name for name, item in field_settings(ReductionSettings).items()}
        unknown = sorted(key for key in values if key not in names and key not in reduction)
        if unknown:
            raise DataError(unknown_keys_message(unknown, source, known=[*names, *reduction]))
        reader = SettingsReader(values, source, DYNID)
        read = {key: reader.value(reader.setting(key)) for key in values}
        nested = replace(self.reduction, **{reduction[key]: value for key, value in read.items() if key in reduction})
        return replace(
            self, reduction=nested, **{names[key]: value for key, value in read.items() if key not in reduction}
        )


def _by_key(cls: type[Any], source: object, **nested: Any) -> Any:
    """``cls`` with each field made by ``setting_field`` taken from the field of ``source`` with the same key."""
    values = {item.key: getattr(source, name) for name, item in field_settings(type(source)).items()}
    return cls(**{name: values[item.key] for name, item in field_settings(cls).items() if item.key in values}, **nested)


MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""Largest configuration file read (bytes): a parameter file is a few kilobytes."""


def read_config_text(path: str | os.PathLike[str]) -> tuple[Path, str]:
    """The text of a configuration file, refusing a missing, unreadable or oversized one."""
    file = Path(path)
    try:
        size = file.stat().st_size
        if file.is_dir():
            raise DataError(f"configuration file {file} is a directory")
        if size > MAX_CONFIG_BYTES:
            raise DataError(
                f"configuration file {file} has {size} bytes, more than a parameter file"
                f" ({MAX_CONFIG_BYTES} at most): is it the right file?"
            )
        return file, file.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DataError(f"configuration file not found: {file}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise DataError(f"cannot read configuration file {file}: {error}") from None


def simulated_robot(path: str | os.PathLike[str], n_joints: int) -> SimulatedRobot:
    """The simulated robot of the ``sim_robot`` block of the configuration file ``path``, for ``n_joints`` joints.

    Read through the settings schema (unset keys take the shipped arm's values) and built by
    :meth:`~dynamic_identification.core.simulation.SimulatedArm.build`, as the ``sim_robot``
    node builds it.

    Raises
    ------
    DataError
        Naming the file, the key and the bad value.
    """
    arm = SettingsReader(ros_parameters(path, "sim_robot"), str(path), "sim_robot").build(SimulatedArm)
    try:
        return arm.build(n_joints)
    except IdentificationError as error:
        raise DataError(f"the sim_robot block of {path}: {error}") from error


@dataclass(frozen=True)
class ConfigurationFile:
    """The blocks of a configuration file, flat (dotted keys) and checked (:func:`read_configuration`).

    Attributes
    ----------
    file
        The file.
    blocks
        ``(block key, parameters)`` in file order (``/**``, ``/**/estimator``, ``recorder``, a block
        of another package's node, …); a plain mapping without ``ros__parameters`` blocks is one
        ``/**`` block: it applies to every reader.
    """

    file: Path
    blocks: tuple[tuple[str, dict[str, Any]], ...] = ()

    def wildcard(self) -> dict[str, Any]:
        """The ``/**`` block (every node's)."""
        return {key: value for name, block in self.blocks if name == "/**" for key, value in block.items()}

    def own(self, node_name: str) -> dict[str, Any]:
        """The blocks of ``node_name`` (any namespace, later blocks winning), without ``/**``."""
        return {
            key: value for name, block in self.blocks if name != "/**" and _matches(name, node_name)
            for key, value in block.items()
        }  # fmt: skip

    def parameters(self, node_name: str | None) -> dict[str, Any]:
        """What ``node_name`` reads: ``/**`` merged with its blocks, its values winning (``None``: ``/**`` alone)."""
        return {**self.wildcard(), **({} if node_name is None else self.own(node_name))}


def read_configuration(path: str | os.PathLike[str]) -> ConfigurationFile:
    """The blocks of a ROS 2 parameter YAML file, each flat and checked.

    A file without ``ros__parameters`` blocks is taken as the parameters themselves (one
    ``/**`` block). Nested mappings become dotted names: ``{"signal": {"decimation": 4}}`` →
    ``{"signal.decimation": 4}``. Every key of the ``/**`` block, of a block of one of
    :data:`NODE_PARAMETERS`'s nodes and of a plain mapping must be known
    (:func:`is_known_key`); a block name close to a node name (a typo) is refused too.

    Raises
    ------
    DataError
        If the file is missing, is not valid YAML, is not a mapping of blocks, or holds
        an unknown key (named with the closest valid one).
    """
    file, text = read_config_text(path)
    if text.lstrip().startswith("<"):
        raise DataError(
            f"configuration file {file} is XML (a URDF?), not a ROS 2 parameter YAML: the URDF goes to --urdf"
        )
    document = parse_yaml(text, f"configuration file {file}")
    if document is None:
        return ConfigurationFile(file)
    if not isinstance(document, dict):
        raise DataError(f"configuration file {file} must be a YAML mapping, got {type(document).__name__}")
    if not any(isinstance(block, dict) and "ros__parameters" in block for block in document.values()):
        flat = _flatten(document, "", str(file))
        _check_known(flat, str(file))
        return ConfigurationFile(file, (("/**", flat),))
    blocks: list[tuple[str, dict[str, Any]]] = []
    for key, block in document.items():
        if not isinstance(block, dict) or "ros__parameters" not in block:
            if isinstance(key, str) and _is_section_or_key(key):
                raise DataError(
                    f"{key!r} at the top level of {file} is a parameter, not a node block: indent it under a"
                    f" block's ros__parameters ('/**': ros__parameters: {key}: …)"
                )
            raise DataError(f"block {brief(key)} of {file} has no 'ros__parameters' mapping")
        beside = [name for name in block if name != "ros__parameters"]
        if beside:
            raise DataError(
                f"{brief(beside[0])} in block {brief(key)} of {file} sits beside 'ros__parameters', where ROS reads"
                f" nothing: indent it one level more, under ros__parameters"
            )
        parameters = block["ros__parameters"]
        if parameters is None:
            parameters = {}
        if not isinstance(parameters, dict):
            raise DataError(f"{brief(key)}.ros__parameters in {file} must be a mapping, got {brief(parameters)}")
        name = str(key)
        flat = _flatten(parameters, "", str(file))
        node = _node_of_block(name, file)
        if name == "/**" or node is not None:
            _check_known(flat, f"block {name!r} of {file}")
        if node is not None:
            _check_placed(flat, node, f"block {name!r} of {file}")
        blocks.append((name, flat))
    return ConfigurationFile(file, tuple(blocks))


def ros_parameters(path: str | os.PathLike[str], node_name: str | None = None) -> dict[str, Any]:
    """Flat parameters of ``node_name`` in a ROS 2 parameter YAML file (:func:`read_configuration`).

    The ``/**`` block is merged with the node's block (matched by its name, with or
    without a leading ``/``, namespace or ``/**/`` prefix); the node's values win.
    With ``node_name=None`` only ``/**`` is read.

    Raises
    ------
    DataError
        As :func:`read_configuration`.
    """
    return read_configuration(path).parameters(node_name)


def _node_of_block(key: str, file: Path) -> str | None:
    """The package node a block key names (any namespace), ``None`` for ``/**`` or another package's node.

    A key close to one of the package's node names (``estimater``) is refused as a typo.
    """
    if key == "/**":
        return None
    last = key.strip("/").rsplit("/", 1)[-1]
    if last in NODE_PARAMETERS:
        return last
    close = difflib.get_close_matches(last, list(NODE_PARAMETERS), n=1, cutoff=0.8)
    if close:
        raise DataError(f"block {brief(key)} of {file} names no node of this package (did you mean {close[0]!r}?)")
    return None


def _check_known(parameters: Mapping[str, Any], source: str) -> None:
    unknown = [key for key in parameters if not is_known_key(key)]
    for key in unknown:
        problem = _nesting_problem(key, parameters, source)
        if problem is not None:
            raise DataError(problem)
    if unknown:
        raise DataError(unknown_keys_message(unknown, source))


def block_keys(node: str) -> frozenset[str]:
    """The keys a block of ``node`` (``/**/node:``) may hold: the node's parameters, rclpy's, and for the
    ``estimator`` and ``excitation`` blocks those ``dynid`` and ``dynid excite`` read there."""
    keys = set(NODE_PARAMETERS[node]) | set(ROS_PARAMETERS)
    keys |= set(CONFIG_KEYS) if node == "estimator" else set()
    keys |= set(EXCITATION_KEYS) if node == "excitation" else set()
    return frozenset(keys)


def _check_placed(parameters: Mapping[str, Any], node: str, source: str) -> None:
    """``DataError`` naming the keys of a block of ``node`` that the node does not read (another node's setting:
    ``harmonics`` under ``/**/recorder:`` reaches no one), with the closest key the node reads and who reads
    them."""
    allowed = block_keys(node)

    def placed(key: str) -> bool:
        member_of = group_member(key)
        return (
            key in allowed
            or key.startswith(ROS_PARAMETER_PREFIXES)
            or (member_of is not None and member_of.key in allowed)
        )

    misplaced = [key for key in parameters if not placed(key)]
    if not misplaced:
        return
    readers = sorted({name for key in misplaced for name, keys in NODE_PARAMETERS.items() if key in keys})
    where = f"; read by {', '.join(readers)}: move them to that block or to /**" if readers else ""
    message = unknown_keys_message(misplaced, source, known=allowed)
    raise DataError(message.replace("unknown configuration keys", f"keys the {node} does not read", 1) + where)


def _sections() -> frozenset[str]:
    """Every dotted prefix of a known key (``drive_chain``, ``window``, ``payload``): a mapping, never a value."""
    return frozenset(key.rsplit(".", depth)[0] for key in known_keys() for depth in range(1, key.count(".") + 1))


def _is_section_or_key(name: str) -> bool:
    return name in _sections() or is_known_key(name)


def _nesting_problem(key: str, parameters: Mapping[str, Any], source: str) -> str | None:
    """What is wrong with an unknown ``key`` that is a section left empty (``drive_chain:`` followed by its keys
    at its own level instead of under it), or ``None``.

    YAML reads ``drive_chain:`` with nothing indented under it as an empty value and its keys as
    siblings, where some are other nodes' parameters (``gear_ratios``, ``drive_gains`` of
    ``sim_robot``): naming the closest key would point the user at the wrong fix.
    """
    if key not in _sections() or parameters[key] not in (None, "", {}):
        return None
    prefix = f"{key}."
    siblings = [name for name in parameters if f"{prefix}{name}" in known_keys() and "." not in name]
    members = sorted({name[len(prefix) :].split(".")[0] for name in known_keys() if name.startswith(prefix)})
    keys = ", ".join(members[:8])
    if siblings:
        return (
            f"{key!r} in {source} is empty and {', '.join(repr(name) for name in siblings)} sit beside it: indent"
            f" them one level more, under {key} (its keys: {keys})"
        )
    return f"{key!r} in {source} is empty: indent its keys ({keys}) under it"


VERBS: tuple[str, ...] = ("identify", "predict", "stream", "gains", "payload", "excite")
"""The ``dynid`` verbs that read a configuration file (``--config``)."""


def _verb_reads(verb: str) -> dict[str, frozenset[str]]:
    """Block (``/**`` or a node's) → the keys ``dynid verb`` reads from it.

    Every verb reads ``dynid``'s settings (:data:`CONFIG_KEYS`) from ``/**`` and the estimator's
    block and the recording settings (:data:`RECORDING_KEYS`) from the recorder's too
    (:func:`load_config`); ``dynid payload`` also the recorder's ``current_polynomial``,
    ``dynid excite`` the excitation settings (:data:`EXCITATION_KEYS`) from ``/**`` and the
    excitation block (:func:`load_excitation_settings`).
    """
    if verb not in VERBS:
        raise ValueError(f"verb must be one of {list(VERBS)}, got {verb!r}")
    identification = frozenset(CONFIG_KEYS)
    recorder = frozenset(RECORDING_KEYS) | ({"current_polynomial"} if verb == "payload" else frozenset())
    reads = {"/**": identification | recorder, "estimator": identification, "recorder": recorder}
    if verb == "excite":
        excitation = frozenset(EXCITATION_KEYS)
        reads |= {"/**": reads["/**"] | excitation, "excitation": excitation}
    return reads


def _readers_text(key: str) -> str:
    """Who reads the setting ``key``: ``the recorder node``, ``the excitation node and dynid excite``, …"""
    consumers = {consumer for item in SETTINGS if item.key == key for consumer in item.nodes}
    nodes = sorted(consumer for consumer in consumers if consumer in NODES)
    tools = sorted(consumer for consumer in consumers if consumer not in NODES)
    parts = []
    if nodes:
        named = nodes[0] if len(nodes) == 1 else f"{', '.join(nodes[:-1])} and {nodes[-1]}"
        parts.append(f"the {named} node{'s' if len(nodes) > 1 else ''}")
    parts += tools
    return " and ".join(parts)


def _names_urdf(value: object, urdf: str | os.PathLike[str] | None) -> bool:
    """Whether a configuration's ``urdf`` (a path, relative to the working directory as the nodes read it, or a
    ``package://`` URI) names the file ``urdf`` (``None``: no file given)."""
    if urdf is None or not isinstance(value, str) or not value:
        return False
    try:
        named = resolve_urdf(value, source="the configuration's urdf")
        return named.resolve() == Path(urdf).resolve()
    except (DataError, OSError):
        return False


def unread_keys(path: str | os.PathLike[str], *, verb: str, urdf: str | os.PathLike[str] | None = None) -> list[str]:
    """One sentence for each key of a configuration file set where it has no effect on ``dynid verb``.

    A configuration file serves the nodes and ``dynid`` alike, so a key that ``dynid`` does not
    read where it is set must be said, not silently ignored (a ``/**`` ``tolerance_s`` once was):

    * a key of the ``/**`` block that only nodes (or another verb) read, naming them — among them the nodes'
      ``urdf``: ``dynid`` takes its URDF from the command line (``urdf``, its ``--urdf``) or the parameter file,
      so a ``urdf`` is said unless it names that very file (then its value is the one used);
    * a key ``dynid`` reads, set only in a block of a node from which ``dynid`` does not read it
      (``drive_chain.drive_gains`` in the recorder's block): ``dynid`` takes its default;
    * a key in a node's block that neither that node nor ``dynid`` reads there (it has no
      effect at all), naming who reads it;
    * a recording setting (:data:`RECORDING_KEYS`) the estimator's and the recorder's blocks
      give different values: ``dynid`` reads the recorder's.

    rclpy's own parameters (``use_sim_time``, ``qos_overrides.*``) and the blocks of other
    packages' nodes are not this package's to judge.

    Raises
    ------
    DataError
        As :func:`read_configuration`.
    ValueError
        When ``verb`` is not one of :data:`VERBS`.
    """
    reads = _verb_reads(verb)
    consumers = (DYNID, DYNID_EXCITE) if verb == "excite" else (DYNID,)
    configuration = read_configuration(path)
    file, subject = configuration.file, f"dynid {verb}"
    owners = {name: "/**" if name == "/**" else _node_of_block(name, file) for name, _ in configuration.blocks}
    given = {
        key
        for name, block in configuration.blocks
        if owners[name] in reads
        for key in block
        if key in reads[str(owners[name])]
    }
    warnings = []
    for name, block in configuration.blocks:
        owner = owners[name]
        if owner is None:
            continue
        for key in block:
            member = group_member(key)
            setting_key = member.key if member is not None else key
            if key in ROS_PARAMETERS or key.startswith(ROS_PARAMETER_PREFIXES):
                continue
            if owner in reads and setting_key in reads[owner]:
                continue
            where = f"{key} in block {name!r} of {file}"
            readers = _readers_text(setting_key)
            if owner == "/**":
                if key == "urdf" and _names_urdf(block[key], urdf):
                    continue
                uses = "" if key != "urdf" else f" ({subject} uses {urdf or 'the URDF its parameter file names'})"
                warnings.append(f"{where} has no effect on {subject}: it is read by {readers} only{uses}")
            elif setting_key in NODE_PARAMETERS[owner]:
                # A plain key may be another setting for the node (rate_hz): only the same setting is dynid's too.
                shared = any(consumer in setting(setting_key, owner).nodes for consumer in consumers)
                if shared and setting_key not in given:
                    blocks = " and ".join(
                        repr(block_name) if block_name == "/**" else block_name
                        for block_name, keys in reads.items()
                        if setting_key in keys
                    )
                    warnings.append(
                        f"{where} has no effect on {subject}, which reads it from the {blocks} blocks only (unset"
                        " there: its default)"
                    )
            else:
                if owner in reads:
                    nobody = f"neither the {owner} node nor {subject} reads it"
                else:
                    nobody = f"the {owner} node does not read it"
                warnings.append(f"{where} has no effect: {nobody} (read by {readers} only)")
    by_owner = {owner: name for name, owner in owners.items()}
    estimator, recorder = configuration.own("estimator"), configuration.own("recorder")
    for key in RECORDING_KEYS:
        if key in estimator and key in recorder and estimator[key] != recorder[key]:
            warnings.append(
                f"{key} is {brief(estimator[key])} in block {by_owner['estimator']!r} of {file} and"
                f" {brief(recorder[key])} in block {by_owner['recorder']!r}: {subject} reads the recorder's, the one"
                " the recorder records with"
            )
    return warnings


def load_config(
    path: str | os.PathLike[str] | None,
    *,
    node_name: str = "estimator",
    extra_keys: Iterable[str] = (),
) -> IdentificationConfig:
    """Identification settings from a ROS 2 parameter YAML file (``None``: defaults).

    Reads :func:`ros_parameters` of ``node_name`` and, where the recorder's block sets them, the
    settings of how the recorder makes a recording (:data:`RECORDING_KEYS`: a rosbag is read as
    the recorder would have recorded it), and converts them with :func:`config_from_parameters`;
    keys are listed in :data:`CONFIG_KEYS`.

    Raises
    ------
    DataError
        Naming the file and the offending key and value.
    """
    if path is None:
        return IdentificationConfig()
    configuration = read_configuration(path)
    recorder = {key: value for key, value in configuration.own("recorder").items() if key in RECORDING_KEYS}
    parameters = {**configuration.parameters(node_name), **recorder}
    return config_from_parameters(parameters, source=str(path), extra_keys=extra_keys)


def _replace_deprecated(parameters: Mapping[str, Any], source: str) -> Mapping[str, Any]:
    """``parameters`` with the deprecated ``signal.use_measured_velocity`` a file still sets read as the
    ``signal.velocity`` it means (``true``: ``measured``, ``false``: ``differentiated``) unless that is set too."""
    if "signal.use_measured_velocity" not in parameters:
        return parameters
    measured = SettingsReader(parameters, source, DYNID).flag("signal.use_measured_velocity")
    if "signal.velocity" in parameters:
        return parameters
    return {**parameters, "signal.velocity": "measured" if measured else "differentiated"}


def config_from_parameters(
    parameters: Mapping[str, Any], *, source: str = "parameters", extra_keys: Iterable[str] = ()
) -> IdentificationConfig:
    """Identification settings from flat, dotted parameters (a file or a node's ROS parameters).

    Keys under :data:`SECTIONS` that are neither in :data:`CONFIG_KEYS` nor in
    ``extra_keys`` (settings the caller reads itself, e.g. a node's window length) are
    rejected as typos; keys outside those sections belong to others and are ignored.

    Raises
    ------
    DataError
        Naming ``source``, the key and the bad value.
    """
    allowed = set(CONFIG_KEYS) | set(extra_keys)
    unknown = sorted(
        key
        for key in parameters
        if key.split(".", 1)[0] in SECTIONS and key not in allowed and group_member(key) is None
    )
    if unknown:
        raise DataError(unknown_keys_message(unknown, source, known=allowed))
    reader = SettingsReader(_replace_deprecated(parameters, source), source, DYNID)
    try:
        config = reader.build(IdentificationConfig)
    except DataError:
        raise
    except IdentificationError as error:
        raise DataError(f"settings in {source}: {error}") from error
    closures, actuated = _closed_loop(reader, source)
    if closures and config.joints is not None and sorted(config.joints) != sorted(actuated):
        raise DataError(
            f"joints in {source} must be the actuated joints {list(actuated)} of the closed-loop robot, or unset;"
            f" got {list(config.joints)} (recorded passive joints are used when a recording has them)"
        )
    _check_sizes(source, config.joints or (actuated or None), config.gear_ratios, config.drive_gains, config.coupling)
    config = replace(
        config,
        source=source,
        joint_states_topic=_absolute(reader.text("topics.joint_states")),
        currents_topic=_absolute(reader.text("topics.motor_currents")),
        loop_closures=closures,
        actuated_joints=actuated,
    )
    if config.effort_is_torque and config.currents_topic == config.joint_states_topic:
        raise DataError(
            f"topics.motor_currents in {source} names the joint-states topic {config.joint_states_topic}, whose effort"
            " topics.effort_is_torque says holds joint torques: set one of the two"
        )
    if not config.max_delay_s > config.tolerance_s:
        raise DataError(
            f"max_delay_s in {source} ({config.max_delay_s:g} s) must exceed tolerance_s ({config.tolerance_s:g} s):"
            " a joint state waits at least as long as its later current may lag"
        )
    return config


def _closed_loop(reader: SettingsReader, source: str) -> tuple[tuple[LoopClosure, ...], tuple[str, ...]]:
    """``robot.loop_closures`` and ``robot.actuated_joints``; both empty for a serial robot.

    The closures come as dotted parameters ``robot.loop_closures.<name>.<key>`` (what a ROS
    parameter file holds) or as one list ``robot.loop_closures`` (a plain YAML file); the
    settings schema reads both (:meth:`~dynamic_identification.io.settings.SettingsReader.closures`).
    """
    given = reader.closures("robot.loop_closures")
    actuated = reader.names("robot.actuated_joints") or ()
    if given is None:
        if actuated:
            raise DataError(
                f"robot.actuated_joints in {source} describes a closed-loop robot: give robot.loop_closures too"
            )
        return (), ()
    try:
        closures = loop_closures_from_config(given)
    except IdentificationError as error:
        raise DataError(f"{source}: {error}") from error
    if not actuated:
        raise DataError(f"robot.loop_closures in {source} needs robot.actuated_joints: name the motorised joints")
    return closures, actuated


def _matches(key: str, node_name: str) -> bool:
    """Whether a block key (``estimator``, ``/estimator``, ``/ns/estimator``, ``/**/estimator``) names the node."""
    wanted = node_name.strip("/").rsplit("/", 1)[-1]
    return key.strip("/").rsplit("/", 1)[-1] == wanted


def _flatten(mapping: Mapping[Any, Any], prefix: str, source: str = "parameters", depth: int = 0) -> dict[str, Any]:
    """Nested mappings as dotted names; an empty mapping contributes nothing."""
    if depth > 8:
        raise DataError(f"parameters in {source} nest deeper than 8 levels at {brief(prefix)}")
    flat: dict[str, Any] = {}
    for key, value in mapping.items():
        if not isinstance(key, str):
            raise DataError(f"parameter names in {source} must be strings, got {brief(key)} under {prefix!r}")
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f"{name}.", source, depth + 1))
        else:
            flat[name] = value
    return flat


def _check_sizes(
    source: str,
    joints: tuple[str, ...] | None,
    gear_ratios: tuple[float, ...] | None,
    drive_gains: tuple[float, ...] | None,
    coupling: tuple[tuple[float, ...], ...] | None,
) -> None:
    sizes = {
        key: len(value)
        for key, value in (
            ("joints", joints),
            ("drive_chain.gear_ratios", gear_ratios),
            ("drive_chain.drive_gains", drive_gains),
            ("drive_chain.coupling", coupling),
        )
        if value is not None
    }
    if len(set(sizes.values())) > 1:
        raise DataError(f"sizes disagree in {source}: {sizes} (one entry, or coupling row, per joint)")


def excitation_settings_from_parameters(
    parameters: Mapping[str, Any], *, source: str = "parameters", mode: str | None = None
) -> ExcitationSettings:
    """Excitation settings from the ``excitation`` node's parameters; ``mode`` overrides ``mode``.

    Keys are those of :data:`EXCITATION_KEYS`, and the robot's ``limits.effort``,
    ``limits.acceleration`` (unless ``acceleration_limits`` is given) and ``limits.jerk``
    of the shared ``/**`` block; the node's own parameters (topics, rates) may sit
    beside them and are ignored here.

    Raises
    ------
    DataError
        Naming ``source``, the key and the bad value.
    """
    reader = SettingsReader({**parameters, **({"mode": mode} if mode else {})}, source, DYNID_EXCITE)
    try:
        settings = reader.build(ExcitationSettings, core_first=True)
    except DataError:
        raise
    except IdentificationError as error:
        raise DataError(f"excitation settings in {source}: {error}") from error
    if settings.acceleration_limits is None:
        settings = replace(settings, acceleration_limits=reader.numbers("limits.acceleration"))
    check_trajectory_size(settings, source=source)
    return settings


MAX_TRAJECTORY_SAMPLES = 5_000_000
"""Most samples an excitation trajectory may have (about 1 GB of arrays for 6 joints)."""

PROCESS_CYCLE_S = 10.0
"""Upper estimate of one pick-and-place cycle or square lap, s (for the size check)."""


def check_trajectory_size(settings: ExcitationSettings, *, source: str = "parameters") -> None:
    """``DataError`` when the planned trajectory would be too long to hold (before planning it).

    Its length is ``periods / fundamental_hz`` (Fourier and segmented modes, per
    segment) or ``periods × cycles ×`` :data:`PROCESS_CYCLE_S` (process mode), sampled
    at ``rate_hz``: ``fundamental_hz: 1e-4`` at 10 kHz would be 10⁸ samples a period.
    """
    if settings.mode == "process":
        duration = settings.periods * settings.cycles * PROCESS_CYCLE_S
        formula = "periods × cycles × 10 s × rate_hz"
    else:
        duration = settings.periods / settings.fundamental_hz
        formula = "periods / fundamental_hz × rate_hz"
    samples = duration * settings.rate_hz
    if samples > MAX_TRAJECTORY_SAMPLES:
        raise DataError(
            f"the excitation in {source} would have about {samples:.3g} samples ({formula}), more than"
            f" {MAX_TRAJECTORY_SAMPLES:.0e}: lower periods, cycles or rate_hz, or raise fundamental_hz"
        )


def load_excitation_settings(path: str | os.PathLike[str] | None, *, mode: str | None = None) -> ExcitationSettings:
    """Excitation settings of a configuration file (``/**`` and ``excitation`` blocks); ``None``: defaults."""
    parameters = {} if path is None else ros_parameters(path, "excitation")
    return excitation_settings_from_parameters(parameters, source=str(path or "the defaults"), mode=mode)
