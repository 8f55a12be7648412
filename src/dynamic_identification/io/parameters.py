"""Identified-parameter YAML (``format: dynamic_identification/parameters/v1``).

The file is self-contained: with the URDF it names, it reproduces joint torques. It
is published on ``/estimator/parameters`` (as the text of a ``std_msgs/String``) and
written by ``dynid identify --out``. Keys, in this order::

    format: dynamic_identification/parameters/v1
    robot:
      urdf: ../urdf/robot.urdf               # relative to this file, package://pkg/…, or absolute
      urdf_sha256: 3f2a…                     # SHA-256 of the URDF's bytes, checked on load
      joints: [joint1, joint2, ...]          # identified joints, model order
      loop_closures: [{frame_a: tip_1, frame_b: tip_2, type: point}]   # closed-loop robots only
      actuated_joints: [joint1, joint2]      # closed-loop robots only: the joints above
    model:
      regression: idim
      drive_terms: {rotor_inertia: true, viscous_friction: true, coulomb_friction: true, offset: true}
      drive_chain:
        gear_ratios: [...]                   # motor rad per joint rad
        drive_gains: [...]                   # N·m/A, motor side
        coupling: [[...], ...]               # dimensionless, n×n
    parameters:                              # base (or essential) parameters
      - {name: XX1R, value: 0.0123, std_percent: 1.8, expression: "XX1 + YY2 + ..."}
    removed: [MX3, ...]                      # removed by reduction / essential / unidentifiable
    quality:
      condition_number: ...
      relative_error: ...                    # ‖ρ‖/‖Y‖ ([Gautier2013] §IV.A)
      joint_errors: {joint1: ...}            # e_j in N·m ([Volkmann2020] eq. (11))
      joint_relative_errors: {joint1: ...}   # e*_j ([Volkmann2020] eq. (12)); null: no usable equation
      samples: ...
      window: ...                            # s
      validation: [...]                      # per held-out recording (dynid identify --validate)
      physical_consistency: {...}            # [Wensing2018]
      warnings: [...]                        # what a user must read, one sentence each
    stamp: 1700000000.0                      # s, data time: the stamp of the last sample used
    settings:                                # every setting the identification used
      signal: {position_cutoff_hz: 20.0, ...}  # what dynid predict filters with when given no --config
      ...
    standard_parameters:                     # per link, Pinocchio order, with units
      source: consistent                     # or 'base': base values on their independent columns
      links:
        - {joint: joint1, link: link1, m_kg: ..., mc_kg_m: [...], com_m: [...],
           inertia_kg_m2: {xx: ..., xy: ..., yy: ..., xz: ..., yz: ..., zz: ...}, drive: {Ia_kg_m2: ..., ...}}

``stamp`` is data time for every writer (``dynid identify``, ``dynid stream``, the
estimator node): the stamp of the last sample the estimate used, in the recording's
clock (ROS time of the messages), never the wall time of the computer that ran it.
``settings`` and ``standard_parameters`` are absent from files written before they
existed; such files still load (``dynid predict`` then uses the default settings).

A closed-loop (parallel) robot ([Briot2012] §2, ``docs/closed_loop.md``) is the URDF of its
opened tree plus ``robot.loop_closures`` and ``robot.actuated_joints``: its ``joints`` are the
actuated joints (one equation, drive chain entry and ``quality`` entry each) and its
parameters are named by tree joint (``ZZ2`` is the inertia of the second joint of the tree),
so the file rebuilds the closed-loop model for ``dynid predict`` and the feedforward. A file
without these keys is a serial robot's.

Floats are written with :func:`repr` (PyYAML's float representer), so every value
reads back bit-identical. ``std_percent`` is ``null`` when unknown (or NaN) and
``.inf`` when the parameter is not identifiable.
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from dynamic_identification.core.errors import DataError, IdentificationError, brief
from dynamic_identification.core.excitation.safety import TorqueModel
from dynamic_identification.core.identification.regression_models import MODELS
from dynamic_identification.core.identification.settings import SignalSettings
from dynamic_identification.core.mechanism.closed_loop import ClosedLoopModel, LoopClosure, loop_closures_from_config
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel, load_robot
from dynamic_identification.core.mechanism.seam import Mechanism, SerialMechanism, mechanism_of
from dynamic_identification.io.atomic import atomic_output
from dynamic_identification.io.documents import document_text, parse_yaml, plain_values, yaml_text
from dynamic_identification.io.urdf_location import PACKAGE_SCHEME, resolve_urdf, urdf_name

FORMAT = "dynamic_identification/parameters/v1"
"""Value of the ``format`` key this module reads and writes."""

REGRESSIONS: tuple[str, ...] = ("idim", *MODELS)
"""Values of ``model.regression``: ``idim`` (the IDIM of [Gautier2013]) or one of the regression
models of [DirectDrive2012]."""

_DRIVE_TERM_KEYS: tuple[str, ...] = ("rotor_inertia", "viscous_friction", "coulomb_friction", "offset")
_DRIVE_CHAIN_KEYS: tuple[str, ...] = ("gear_ratios", "drive_gains", "coupling")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class ParameterEntry:
    """One identified parameter.

    Attributes
    ----------
    name
        Base-parameter name, e.g. ``"ZZ1R"``.
    value
        Estimated value in SI units of the regrouped standard parameters.
    std_percent
        Relative standard deviation ``%σ`` ([Gautier2013] eq. (19)); ``None`` if unknown,
        ``inf`` if the parameter is not identifiable.
    expression
        Which standard parameters the base parameter regroups, e.g. ``"ZZ1 + YY2"``.
    """

    name: str
    value: float
    std_percent: float | None = None
    expression: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise DataError(f"parameter name must be a non-empty string, got {brief(self.name)}")
        value = _number(self.value, f"value of parameter {self.name}")
        if not math.isfinite(value):
            raise DataError(f"value of parameter {self.name} must be finite, got {value!r}")
        std = None if self.std_percent is None else _number(self.std_percent, f"std_percent of {self.name}")
        if std is not None and math.isnan(std):
            std = None
        if not isinstance(self.expression, str):
            raise DataError(f"expression of parameter {self.name} must be a string, got {brief(self.expression)}")
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "std_percent", std)


@dataclass(frozen=True)
class ParameterFile:
    """Contents of a parameter YAML file (see the module docstring).

    ``path`` is the file it was loaded from (``None`` for a parsed text); it is not
    part of the contents (two equal files loaded from two places compare equal) and
    is what a relative ``urdf`` is resolved against (:meth:`urdf_path`).
    """

    urdf: str
    joints: tuple[str, ...]
    model: dict[str, Any]
    parameters: tuple[ParameterEntry, ...]
    removed: tuple[str, ...] = ()
    quality: dict[str, Any] = field(default_factory=dict)
    stamp: float = 0.0
    loop_closures: tuple[LoopClosure, ...] = ()
    """Closed-loop robots: the closures of the opened tree (empty: a serial robot)."""
    actuated_joints: tuple[str, ...] = ()
    """Closed-loop robots: the actuated joints, the same as :attr:`joints` (empty: a serial robot)."""
    urdf_sha256: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    standard_parameters: dict[str, Any] = field(default_factory=dict)
    path: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        joints = tuple(self.joints)
        if not joints or not all(isinstance(name, str) and name for name in joints):
            raise DataError(f"robot.joints must be a non-empty list of names, got {list(joints)}")
        if len(set(joints)) != len(joints):
            raise DataError(f"robot.joints repeat: {list(joints)}")
        entries = list(self.loop_closures)
        try:
            closures = (
                tuple(entries)
                if all(isinstance(entry, LoopClosure) for entry in entries)
                else loop_closures_from_config(entries)
            )
        except IdentificationError as error:
            raise DataError(str(error)) from error
        actuated = tuple(self.actuated_joints)
        if bool(closures) != bool(actuated):
            raise DataError(
                "robot.loop_closures and robot.actuated_joints describe a closed-loop robot together: give both"
                f" or neither, got {len(closures)} closures and actuated joints {list(actuated)}"
            )
        if actuated and sorted(actuated) != sorted(joints):
            raise DataError(
                f"robot.actuated_joints {list(actuated)} must be the identified joints {list(joints)} of a"
                " closed-loop robot (one equation per actuated joint)"
            )
        object.__setattr__(self, "loop_closures", closures)
        object.__setattr__(self, "actuated_joints", actuated)
        parameters = tuple(self.parameters)
        names = [entry.name for entry in parameters]
        if len(set(names)) != len(names):
            raise DataError(f"parameter names repeat: {names}")
        object.__setattr__(self, "urdf", str(self.urdf))
        object.__setattr__(self, "joints", joints)
        object.__setattr__(self, "model", plain_values(self.model))
        object.__setattr__(self, "parameters", parameters)
        object.__setattr__(self, "removed", tuple(str(name) for name in self.removed))
        object.__setattr__(self, "quality", plain_values(self.quality))
        object.__setattr__(self, "stamp", _number(self.stamp, "stamp"))
        if self.urdf_sha256 is not None and not (isinstance(self.urdf_sha256, str) and _SHA256.match(self.urdf_sha256)):
            raise DataError(f"robot.urdf_sha256 must be 64 lower-case hex digits, got {brief(self.urdf_sha256)}")
        object.__setattr__(self, "settings", plain_values(_mapping(self.settings, "settings")))
        object.__setattr__(
            self, "standard_parameters", plain_values(_mapping(self.standard_parameters, "standard_parameters"))
        )
        self.drive_terms()
        self.drive_chain()
        self.signal_settings()

    @classmethod
    def create(
        cls,
        *,
        urdf: str | os.PathLike[str],
        joints: Sequence[str],
        drive_terms: DriveTerms,
        drive_chain: DriveChain,
        names: Sequence[str],
        values: Sequence[float] | np.ndarray,
        std_percent: Sequence[float | None] | np.ndarray | None = None,
        expressions: Sequence[str] | None = None,
        removed: Sequence[str] = (),
        quality: Mapping[str, Any] | None = None,
        stamp: float = 0.0,
        regression: str = "idim",
        closed_loop: Mechanism | None = None,
        urdf_sha256: str | None = None,
        settings: Mapping[str, Any] | None = None,
        standard_parameters: Mapping[str, Any] | None = None,
    ) -> ParameterFile:
        """Build a file from identification results (numpy arrays welcome).

        With ``closed_loop`` (a mechanism with closures; one without describes a serial robot) the file
        describes that closed-loop robot: its loop closures and actuated joints (which must be ``joints``)
        are stored in ``robot``. ``settings`` are
        every setting the identification used (``settings.signal``: the
        :class:`~dynamic_identification.core.identification.SignalSettings` fields),
        ``standard_parameters`` the section of
        :func:`~dynamic_identification.io.parameter_files.standard_parameters_section`.
        """
        count = len(names)
        stds = [None] * count if std_percent is None else list(std_percent)
        texts = [""] * count if expressions is None else list(expressions)
        value_list = list(np.asarray(values, dtype=float).ravel())
        for label, items in (("values", value_list), ("std_percent", stds), ("expressions", texts)):
            if len(items) != count:
                raise DataError(f"{label} has {len(items)} entries, names has {count}")
        entries = tuple(
            ParameterEntry(name=name, value=value, std_percent=std, expression=text)
            for name, value, std, text in zip(names, value_list, stds, texts, strict=True)
        )
        return cls(
            urdf=str(urdf),
            joints=tuple(joints),
            model=model_section(drive_terms, drive_chain, regression=regression),
            parameters=entries,
            removed=tuple(removed),
            quality=dict(quality or {}),
            stamp=stamp,
            loop_closures=() if closed_loop is None else closed_loop.closures,
            actuated_joints=() if closed_loop is None or not closed_loop.closures else closed_loop.actuated_joint_names,
            urdf_sha256=urdf_sha256,
            settings=dict(settings or {}),
            standard_parameters=dict(standard_parameters or {}),
        )

    @property
    def closed_loop(self) -> bool:
        """Whether the file describes a closed-loop robot (``robot.loop_closures``)."""
        return bool(self.loop_closures)

    def drive_terms(self) -> DriveTerms:
        """The drive-chain terms of ``model.drive_terms``."""
        terms = _mapping(self.model.get("drive_terms"), "model.drive_terms")
        unknown = sorted(set(terms) - set(_DRIVE_TERM_KEYS))
        if unknown:
            raise DataError(f"unknown keys {unknown} in model.drive_terms (known: {list(_DRIVE_TERM_KEYS)})")
        flags = {}
        for key in _DRIVE_TERM_KEYS:
            if key not in terms:
                raise DataError(f"missing key model.drive_terms.{key}")
            if not isinstance(terms[key], bool):
                raise DataError(f"model.drive_terms.{key} must be true or false, got {brief(terms[key])}")
            flags[key] = terms[key]
        return DriveTerms(**flags)

    def drive_chain(self) -> DriveChain:
        """The drive chain of ``model.drive_chain``; omitted entries are a direct drive."""
        chain = _mapping(self.model.get("drive_chain", {}), "model.drive_chain")
        unknown = sorted(set(chain) - set(_DRIVE_CHAIN_KEYS))
        if unknown:
            raise DataError(f"unknown keys {unknown} in model.drive_chain (known: {list(_DRIVE_CHAIN_KEYS)})")
        try:
            return DriveChain.create(len(self.joints), **{key: chain.get(key) for key in _DRIVE_CHAIN_KEYS})
        except (TypeError, ValueError) as error:
            raise DataError(f"model.drive_chain: {error}") from error

    @property
    def source(self) -> str:
        """How messages name this file: its path, or ``parameter text``."""
        return self.path if self.path is not None else "parameter text"

    def urdf_path(self, override: str | os.PathLike[str] | None = None) -> Path:
        """The URDF this file names, or ``override``, resolved and checked against ``robot.urdf_sha256``.

        See :func:`~dynamic_identification.io.urdf_location.resolve_urdf`: ``package://``
        through ``AMENT_PREFIX_PATH``, a relative name against the file's folder (then the
        working directory), an absolute path as it is. An ``override`` (a path or a ``package://`` URI, e.g. the
        feedforward node's ``urdf`` parameter on a machine where the named file lives
        elsewhere) must hold the same content: the base parameters are only valid with
        the kinematics they were identified on.

        Raises
        ------
        DataError
            When the URDF is not found, or its content is not the one identified.
        """
        if override is not None:
            return resolve_urdf(str(override), sha256=self.urdf_sha256, source=self.source)
        folder = Path(self.path).parent if self.path is not None else None
        return resolve_urdf(self.urdf, folder=folder, sha256=self.urdf_sha256, source=self.source)

    def named_for(self, folder: str | os.PathLike[str]) -> ParameterFile:
        """This file with its URDF named as a file in ``folder`` names it (relative when possible).

        A ``package://`` name stays; an absolute path becomes relative to ``folder`` when
        the two share a folder below the root; a relative name is re-based from the
        folder it was loaded from.
        """
        if self.urdf.startswith(PACKAGE_SCHEME):
            return self
        current = Path(self.urdf)
        if not current.is_absolute():
            if self.path is None:
                return self
            current = Path(self.path).parent / current
        return replace(self, urdf=urdf_name(current, folder=folder))

    def signal_settings(self) -> SignalSettings | None:
        """The signal settings the identification used (``settings.signal``); ``None`` when the file has none.

        Read generically: every key of ``settings.signal`` is a field of
        :class:`~dynamic_identification.core.identification.SignalSettings`; a field the
        file lacks takes its default (a file written before the field existed).

        Raises
        ------
        DataError
            A key this version does not know, or a value the settings refuse.
        """
        signal = self.settings.get("signal")
        if signal is None:
            return None
        values = _mapping(signal, "settings.signal")
        known = [item.name for item in fields(SignalSettings)]
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise DataError(f"settings.signal has keys {unknown} that this version does not know (known: {known})")
        for key, value in values.items():
            if value is not None and not isinstance(value, (bool, int, float, str)):
                raise DataError(f"settings.signal.{key} must be a number, true/false or null, got {brief(value)}")
        try:
            return SignalSettings(**values)
        except (TypeError, ValueError) as error:
            raise DataError(f"settings.signal: {error}") from error

    def values(self) -> dict[str, float]:
        """Parameter values by name, in file order."""
        return {entry.name: entry.value for entry in self.parameters}

    def identified_joints(self) -> tuple[str, ...]:
        """The joints the identification had equations for, in file order.

        A joint whose ``quality.joint_relative_errors`` entry is ``null`` had no usable
        equation (it never moved, or only at stick speeds); a file without the entry
        names every joint.
        """
        errors = self.quality.get("joint_relative_errors")
        if not isinstance(errors, Mapping):
            return self.joints
        return tuple(joint for joint in self.joints if not (joint in errors and errors[joint] is None))


def model_section(drive_terms: DriveTerms, drive_chain: DriveChain, *, regression: str = "idim") -> dict[str, Any]:
    """The ``model`` mapping of a parameter file for the given drive terms and chain."""
    return {
        "regression": regression,
        "drive_terms": {key: bool(getattr(drive_terms, key)) for key in _DRIVE_TERM_KEYS},
        "drive_chain": {
            "gear_ratios": [float(x) for x in drive_chain.gear_ratios],
            "drive_gains": [float(x) for x in drive_chain.drive_gains],
            "coupling": [[float(x) for x in row] for row in drive_chain.coupling],
        },
    }


def dump_parameters(pf: ParameterFile) -> str:
    """YAML text of ``pf``; :func:`load_parameters` of it returns an equal object."""
    robot: dict[str, Any] = {"urdf": pf.urdf}
    if pf.urdf_sha256 is not None:
        robot["urdf_sha256"] = pf.urdf_sha256
    robot["joints"] = list(pf.joints)
    document: dict[str, Any] = {
        "format": FORMAT,
        "robot": {**robot, **closed_loop_section(pf)},
        "model": pf.model,
        "parameters": [
            {
                "name": entry.name,
                "value": entry.value,
                "std_percent": entry.std_percent,
                "expression": entry.expression,
            }
            for entry in pf.parameters
        ],
        "removed": list(pf.removed),
        "quality": pf.quality,
        "stamp": pf.stamp,
    }
    if pf.settings:
        document["settings"] = pf.settings
    if pf.standard_parameters:
        document["standard_parameters"] = pf.standard_parameters
    return yaml_text(document)


def closed_loop_section(pf: ParameterFile) -> dict[str, Any]:
    """``robot.loop_closures`` (a list of ``{frame_a, frame_b, type}``) and ``robot.actuated_joints`` of a
    closed-loop robot's file; empty for a serial robot."""
    if not pf.closed_loop:
        return {}
    return {
        "loop_closures": [
            {"frame_a": closure.frame_a, "frame_b": closure.frame_b, "type": closure.type}
            for closure in pf.loop_closures
        ],
        "actuated_joints": list(pf.actuated_joints),
    }


def file_mechanism(model: Mechanism, pf: ParameterFile) -> Mechanism:
    """``model`` as the file's model: with the passive joints' bearing friction when the file has any of its
    parameters (a mechanism without passive joints as it is), checked to give every base parameter
    (:func:`require_base_parameters`).

    Every reader that meets a file with the robot it describes comes through here (the feedforward,
    ``dynid predict``, ``dynid payload``, the estimator's payload prior, the excitation's torque check).

    Raises
    ------
    DataError
        When the file leaves out a base parameter of its model (:func:`require_base_parameters`).
    """
    if isinstance(model, ClosedLoopModel):
        bearings = set(model.with_passive_friction().passive_friction_names(pf.drive_terms()))
        model = model.with_passive_friction(bool(bearings & set(pf.values())))
    require_base_parameters(pf, model)
    return model


def require_base_parameters(pf: ParameterFile, mechanism: Mechanism) -> None:
    """Refuse a file in which a base parameter of its model is neither in ``parameters`` nor in ``removed``.

    A base parameter left out is taken as zero by every consumer, which is right only when the
    identification removed it (``removed``: reduction, essential parameters, not excited); a parameter
    deleted from the file by hand, or lost on the way, would silently take that joint's friction or
    inertia out of every predicted torque. The base parameters are those of the mechanism with the file's
    drive terms and chain ([Gautier2013] ref. [11]; [Briot2012] eq. (7)), the set every writer
    identifies from (``DynamicModel.create``).

    Raises
    ------
    DataError
        Naming the missing base parameters (and the file's names that are no parameter of the model,
        a misspelling's other half), on one line.
    """
    chain = pf.drive_chain()
    terms = pf.drive_terms()
    given = set(pf.values())
    base = _base_names(
        # Mechanisms are dataclasses with eq=False: hashable by identity, so one robot model is one cache entry.
        cast(Hashable, mechanism),
        terms,
        tuple(chain.gear_ratios.tolist()),
        tuple(chain.drive_gains.tolist()),
        tuple(map(tuple, chain.coupling.tolist())),
    )
    missing = [name for name in base if name not in given and name not in pf.removed]
    if not missing:
        return
    standard = set(mechanism.standard_parameter_names(terms))
    unknown = [name for name in pf.values() if name not in standard]
    # The names that are not the model's first: a misspelling explains the missing name it stands for.
    wrong = f"has parameters {_some(unknown)} that are not of its model and " if unknown else ""
    raise DataError(
        f"{pf.source} {wrong}leaves out base parameters {_some(missing)} of its model: each must be in parameters,"
        " or in removed when the identification removed it"
    )


def _some(names: Sequence[str], shown: int = 8) -> str:
    """``['a', 'b']``, or the first ``shown`` names and how many more: an error message stays one short line."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f"{list(names[:shown])}{more}"


@functools.lru_cache(maxsize=4)
def _base_names(
    mechanism: Mechanism,
    terms: DriveTerms,
    gear_ratios: tuple[float, ...],
    drive_gains: tuple[float, ...],
    coupling: tuple[tuple[float, ...], ...],
) -> tuple[str, ...]:
    """The names of the base parameters of ``mechanism`` with ``terms`` and the drive chain given by its arrays,
    computed once per mechanism (a third of a second for six joints; a node receives new values for the same
    robot at every estimator update)."""
    chain = DriveChain.create(len(gear_ratios), gear_ratios=gear_ratios, drive_gains=drive_gains, coupling=coupling)
    return mechanism.base_parameters(chain, terms).names


def parameter_file_mechanism(pf: ParameterFile, urdf: str | os.PathLike[str] | None = None) -> Mechanism:
    """The mechanism a file describes: its URDF (or ``urdf``) restricted to its joints, or, with
    ``robot.loop_closures``, the closed-loop model of its URDF, loop closures and actuated joints (with the passive
    joints' bearing friction when the file has it).

    Without ``urdf`` the file's URDF is :meth:`ParameterFile.urdf_path` (relative to the
    file, ``package://`` or absolute), checked against ``robot.urdf_sha256``.

    Raises
    ------
    DataError
        When the URDF is not found or changed, the file leaves out a base parameter of its model
        (:func:`require_base_parameters`), or a closed-loop file does not list its actuated joints in the
        tree's kinematic order.
    ModelError
        When the URDF cannot be loaded or does not fit the closures (named).
    """
    if not pf.closed_loop:
        return file_mechanism(SerialMechanism(load_robot(pf.urdf_path(urdf), pf.joints)), pf)
    closures = [{"frame_a": c.frame_a, "frame_b": c.frame_b, "type": c.type} for c in pf.loop_closures]
    model = file_mechanism(
        ClosedLoopModel.from_config(pf.urdf_path(urdf), loop_closures=closures, actuated_joints=pf.actuated_joints), pf
    )
    if model.actuated_joint_names != pf.joints:
        raise DataError(
            f"robot.joints {list(pf.joints)} must list the actuated joints in the tree's kinematic order"
            f" {list(model.actuated_joint_names)}"
        )
    return model


def parse_parameters(text: str, *, source: str = "parameter text") -> ParameterFile:
    """Parse parameter YAML ``text``; ``source`` names it in error messages."""
    document = parse_yaml(text, source)
    if not isinstance(document, dict):
        raise DataError(f"{source} must be a YAML mapping, got {type(document).__name__}")
    for key in ("format", "robot", "model", "parameters"):
        if key not in document:
            raise DataError(f"{source} misses the key {key!r}")
    if document["format"] != FORMAT:
        raise DataError(f"{source} has format {brief(document['format'])}, expected {FORMAT!r}")
    robot = _mapping(document["robot"], f"robot in {source}")
    for key in ("urdf", "joints"):
        if key not in robot:
            raise DataError(f"{source} misses the key 'robot.{key}'")
    model = _mapping(document["model"], f"model in {source}")
    for key in ("regression", "drive_terms"):
        if key not in model:
            raise DataError(f"{source} misses the key 'model.{key}'")
    if not isinstance(document["parameters"], list):
        raise DataError(f"parameters in {source} must be a list, got {brief(document['parameters'])}")
    if not document["parameters"]:
        raise DataError(f"parameters in {source} is empty: the file holds no identified parameter")
    regression = model["regression"]
    if regression not in REGRESSIONS:
        raise DataError(f"model.regression in {source} must be one of {list(REGRESSIONS)}, got {brief(regression)}")
    entries = []
    for index, item in enumerate(document["parameters"]):
        entry = _mapping(item, f"parameters[{index}] in {source}")
        for key in ("name", "value"):
            if key not in entry:
                raise DataError(f"{source} misses the key 'parameters[{index}].{key}'")
        unknown = sorted(set(entry) - {"name", "value", "std_percent", "expression"})
        if unknown:
            raise DataError(f"unknown keys {unknown} in parameters[{index}] of {source}")
        entries.append(
            ParameterEntry(
                name=entry["name"],
                value=entry["value"],
                std_percent=entry.get("std_percent"),
                expression=entry.get("expression") or "",
            )
        )
    removed = document.get("removed") or []
    if not isinstance(removed, list):
        raise DataError(f"removed in {source} must be a list of names, got {brief(removed)}")
    joints = robot["joints"]
    if not isinstance(joints, list):
        raise DataError(f"robot.joints in {source} must be a list of names, got {brief(joints)}")
    closures = robot.get("loop_closures") or []
    actuated = robot.get("actuated_joints") or []
    if not isinstance(closures, list):
        raise DataError(f"robot.loop_closures in {source} must be a list of closures, got {brief(closures)}")
    if not isinstance(actuated, list) or not all(isinstance(name, str) for name in actuated):
        raise DataError(f"robot.actuated_joints in {source} must be a list of names, got {brief(actuated)}")
    try:
        return ParameterFile(
            urdf=robot["urdf"],
            joints=tuple(joints),
            model=model,
            parameters=tuple(entries),
            removed=tuple(removed),
            quality=_mapping(document.get("quality") or {}, f"quality in {source}"),
            stamp=document.get("stamp", 0.0),
            loop_closures=tuple(closures),
            actuated_joints=tuple(actuated),
            urdf_sha256=robot.get("urdf_sha256"),
            settings=_mapping(document.get("settings") or {}, f"settings in {source}"),
            standard_parameters=_mapping(document.get("standard_parameters") or {}, f"standard_parameters in {source}"),
        )
    except DataError as error:
        raise DataError(f"{source}: {error}") from error


def load_parameters(path_or_text: str | os.PathLike[str]) -> ParameterFile:
    """Load a parameter file from a path, or parse YAML text.

    A :class:`os.PathLike` or a one-line string is a path; a string containing a
    newline is YAML text (the payload of ``/estimator/parameters``).

    Raises
    ------
    DataError
        If the file is missing or unreadable, the ``format`` is not :data:`FORMAT`,
        or a required key is missing (the message names it).
    """
    text, path = document_text(path_or_text, "parameter")
    if path is None:
        return parse_parameters(text)
    return replace(parse_parameters(text, source=str(path)), path=str(path))


def write_parameters_atomic(path: str | os.PathLike[str], pf: ParameterFile) -> None:
    """Write ``pf`` to ``path`` atomically (:func:`~dynamic_identification.io.atomic.atomic_output`).

    A reader (the feedforward node, a user's editor) sees either the old file or the
    new one, never a partial write. The URDF is named as seen from the file's folder
    (:meth:`ParameterFile.named_for`: relative when possible, or ``package://``).
    """
    text = dump_parameters(pf.named_for(Path(path).resolve().parent))
    with atomic_output(path) as stream:
        stream.write(text)


def _number(value: Any, name: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise DataError(f"{name} must be a number, got {brief(value)}")
    return float(value)


def _mapping(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise DataError(f"{name} must be a mapping, got {brief(value)}")
    return dict(value)


def identified_torque_model(path: str | os.PathLike[str], robot: RobotModel | Mechanism) -> TorqueModel:
    """The torque model of the parameter file at ``path`` for ``robot`` (the same controlled joints; a closed-loop
    robot's with the bearing friction the file has), for safety checks: the identified base parameters at their
    independent standard columns, the others zero ([Gautier2013] eq. (4); [Briot2012] eq. (6)-(7)).

    Raises
    ------
    DataError
        If the file cannot be read, identifies other joints or another kind of robot, or holds a parameter that is
        not a standard parameter of its model.
    """
    identified = load_parameters(path)
    mechanism = file_mechanism(mechanism_of(robot), identified)
    if identified.joints != mechanism.actuated_joint_names or identified.closed_loop != bool(mechanism.closures):
        kind = "closed-loop" if identified.closed_loop else "serial"
        raise DataError(
            f"{path} identifies joints {list(identified.joints)} of a {kind} robot, the robot model controls"
            f" {list(mechanism.actuated_joint_names)}{' through loop closures' if mechanism.closures else ''}"
        )
    try:
        return TorqueModel.identified(
            mechanism,
            identified.drive_chain(),
            identified.drive_terms(),
            identified.values(),
            source=f"the identified model {path}",
        )
    except IdentificationError as error:
        raise DataError(str(error)) from error
