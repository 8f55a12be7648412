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
:func:`~dynamic_identification.core.errors.brief`).

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
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dynamic_identification.core.closed_loop import ClosedLoopModel, LoopClosure, loop_closures_from_config
from dynamic_identification.core.closed_loop_identification import closed_loop_bounds
from dynamic_identification.core.errors import DataError, IdentificationError, brief
from dynamic_identification.core.excitation.settings import MODES, PROCESSES, ExcitationSettings
from dynamic_identification.core.identification.in_process import WindowSettings
from dynamic_identification.core.identification.settings import (
    AUTO_CUTOFF_HZ,
    DEFAULT_GAP_FACTOR,
    METHODS,
    REDUCTIONS,
    STAMP_SOURCES,
    UNCERTAINTIES,
    VELOCITY_SOURCES,
    IdentificationSettings,
    SignalSettings,
)
from dynamic_identification.core.model import DriveChain, DriveParameters, DriveTerms, RobotModel
from dynamic_identification.core.plausibility import (
    DEFAULT_EFFORT_FACTOR,
    DEFAULT_MASS_FACTOR,
    PlausibilityBounds,
)
from dynamic_identification.core.regression_models import MODELS
from dynamic_identification.core.simulation import SensorModel

CONFIG_KEYS: dict[str, str] = {
    "joints": "identified joints, in any order (empty: every joint of the recording)",
    "drive_chain.gear_ratios": "gear ratio per joint, motor rad per joint rad (empty: 1)",
    "drive_chain.drive_gains": "motor torque constant per joint in N·m/A, motor side (empty: 1)",
    "drive_chain.coupling": "n×n dimensionless coupling matrix, row by row (empty: identity)",
    "drive_terms.rotor_inertia": "identify the rotor inertia Ia per joint",
    "drive_terms.viscous_friction": "identify the viscous friction Fv per joint",
    "drive_terms.coulomb_friction": "identify the Coulomb friction Fc per joint",
    "drive_terms.offset": "identify the torque offset per joint",
    "signal.position_cutoff_hz": "cut-off of the zero-phase position low-pass filter in Hz (0: from the data)",
    "signal.decimation": "parallel decimation factor (0: automatic)",
    "signal.velocity": "velocity source: 'auto' (recorded when they agree with the differentiated positions),"
    " 'measured' or 'differentiated'",
    "signal.stamps": "sample instants: 'auto' (recovered from the sample order when the stamps jitter), 'recorded'"
    " or 'recovered'",
    "signal.use_measured_velocity": "deprecated: true is signal.velocity 'measured', false 'differentiated'",
    "signal.rate_hz": "sample rate in Hz (0: from the median time step of the data)",
    "signal.min_speed_rad_s": "leave out a joint's equations near its velocity reversals, rad/s (0: keep all)",
    "signal.gap_factor": "a stamp step longer than this many periods splits the data, never interpolated (> 1)",
    "estimation.model": "regression model ([DirectDrive2012]): 'dynamic' (IDIM), 'filtered_dynamic', 'supplied_energy',"
    " 'power' or 'filtered_power'",
    "estimation.method": "least-squares method: 'ols' or 'wls' ([Gautier2013] eq. (20))",
    "estimation.reduction": "parameter reduction: 'sensitivity' ([Volkmann2020] Algorithm 1),"
    " 'essential' ([Gautier2013] §V.B) or 'none'",
    "estimation.e_tol": "sensitivity reduction: allowed growth of each joint's relative error (> 0, 0.05 = 5 %)",
    "estimation.r_sigma": "essential parameters: largest allowed %σ ratio (> 0)",
    "estimation.min_samples": "fewest recorded samples to identify from (>= 1)",
    "estimation.consistency": "publish the physically consistent estimate nearest to the data ([Wensing2018]:"
    " link pseudo-inertias positive definite, Ia, Fv, Fc >= 0); false publishes the unconstrained one",
    "estimation.prior": "half-width of a box around the URDF's link inertias in parameter scales, for the consistent"
    " estimate (0: none; 0.5 keeps masses within ±50 %)",
    "estimation.uncertainty": "σ and %σ: 'hac' (correlated residuals, Newey & West 1987) or 'white'"
    " ([Gautier2013] eq. (18), several times too small on filtered, decimated rows)",
    "topics.joint_states": "sensor_msgs/JointState topic of positions, velocities (and efforts)",
    "topics.motor_currents": "sensor_msgs/JointState topic whose effort field holds motor currents in A",
    "topics.effort_is_torque": "take joint torques from JointState.effort of topics.joint_states",
    "window.window_s": "in-process estimation: window length, s of data (> 0)",
    "window.reduction": "in-process reduction: 'sensitivity' ([Volkmann2020] Algorithm 1), 'essential' or 'none'",
    "window.update_period_s": "in-process estimation: data time between updates, s (> 0, <= window_s)",
    "window.max_condition_number": "quality gate: largest condition number of the reduced model (> 0)",
    "window.max_relative_error": "quality gate: largest relative error ||rho||/||Y|| (> 0)",
    "window.min_motion_rad": "quality gate: some joint must travel this far in the window, rad (>= 0)",
    "window.friction_motion_rad": "friction forced essential when every joint travels this far, rad (>= 0)",
    "window.refactor_every": "updates between recomputing the normal equations from the rows (>= 1)",
    "window.stick_periods": "decimation periods left out around a slow sample (>= 0; 10: the filter's support)",
    "limits.effort": "joint torque limits per joint, N·m (empty: the URDF's)",
    "limits.acceleration": "acceleration limits per joint, rad/s² (empty: 4 /s × the URDF velocity limit)",
    "limits.jerk": "jerk limits per joint, rad/s³ (empty: 50 /s × the acceleration limit)",
    "plausibility.effort_factor": "gate: predicted torques within this many effort limits (>= 1)",
    "plausibility.mass_factor": "gate: inertial parameters within what this many URDF masses produce (>= 1)",
    "robot.actuated_joints": "closed-loop robots: the actuated joints of the opened tree",
    "robot.loop_closures": "closed-loop robots: list of {frame_a, frame_b, type: point|planar|6d} (outside ROS;"
    " in a ROS parameter file robot.loop_closures.<name>.{frame_a, frame_b, type})",
}
"""Dotted parameter names understood by :func:`load_config`, with their meaning and units."""

SECTIONS: tuple[str, ...] = (
    "drive_chain",
    "drive_terms",
    "signal",
    "estimation",
    "topics",
    "window",
    "limits",
    "plausibility",
)
"""Parameter prefixes owned by this configuration: unknown keys under them are typos."""

NODE_PARAMETERS: dict[str, tuple[str, ...]] = {
    "recorder": (
        "current_polynomial",
        "output_topic",
        "output_dir",
        "output_file",
        "tolerance_s",
        "max_delay_s",
        "silent_timeout_s",
        "joints",
        "drive_chain.gear_ratios",
        "drive_chain.drive_gains",
        "drive_chain.coupling",
        "topics.joint_states",
        "topics.motor_currents",
        "topics.effort_is_torque",
    ),
    "excitation": (
        "urdf",
        "joints",
        "mode",
        "file",
        "fundamental_hz",
        "harmonics",
        "periods",
        "rate_hz",
        "position_margin_rad",
        "velocity_scale",
        "acceleration_scale",
        "acceleration_limits",
        "jerk_scale",
        "effort_scale",
        "interpolation_tolerance_rad",
        "parameters_file",
        "limits.effort",
        "limits.acceleration",
        "limits.jerk",
        "optimise",
        "time_budget_s",
        "seed",
        "workspace_lower",
        "workspace_upper",
        "box_min",
        "box_max",
        "frame",
        "process",
        "cycles",
        "output_topic",
        "stream_rate_hz",
        "horizon_s",
        "stale_timeout_s",
        "autostart",
        "drive_chain.gear_ratios",
        "drive_chain.drive_gains",
        "drive_chain.coupling",
        "drive_terms.rotor_inertia",
        "drive_terms.viscous_friction",
        "drive_terms.coulomb_friction",
        "drive_terms.offset",
        "robot.actuated_joints",
    ),
    "estimator": (
        "urdf",
        "joints",
        "input_topic",
        "parameters_topic",
        "parameters_file",
        "drive_chain.gear_ratios",
        "drive_chain.drive_gains",
        "drive_chain.coupling",
        "drive_terms.rotor_inertia",
        "drive_terms.viscous_friction",
        "drive_terms.coulomb_friction",
        "drive_terms.offset",
        "signal.position_cutoff_hz",
        "signal.decimation",
        "signal.rate_hz",
        "signal.min_speed_rad_s",
        "signal.gap_factor",
        "estimation.e_tol",
        "estimation.r_sigma",
        "estimation.consistency",
        "estimation.prior",
        "estimation.uncertainty",
        "window.window_s",
        "window.update_period_s",
        "window.reduction",
        "window.max_condition_number",
        "window.max_relative_error",
        "window.min_motion_rad",
        "window.friction_motion_rad",
        "window.refactor_every",
        "window.stick_periods",
        "limits.effort",
        "limits.acceleration",
        "plausibility.effort_factor",
        "plausibility.mass_factor",
        "robot.actuated_joints",
    ),
    "feedforward": (
        "parameters_file",
        "parameters_topic",
        "trajectory_topic",
        "output_topic",
        "rate_hz",
        "enabled",
        "friction_smoothing",
        "urdf",
        "limits.effort",
        "limits.acceleration",
    ),
    "sim_robot": (
        "urdf",
        "joints",
        "rate_hz",
        "gear_ratios",
        "drive_gains",
        "coupling",
        "rotor_inertia",
        "viscous_friction",
        "coulomb_friction",
        "offset",
        "current_noise_std",
        "velocity_noise_std",
        "encoder_counts",
        "kp",
        "kd",
        "initial_positions",
        "max_catch_up_s",
        "seed",
        "publish_clock",
        "real_time_factor",
        "lockstep",
        "lockstep_timeout_s",
        "robot.actuated_joints",
    ),
}
"""The ROS parameters each node of the package declares (``test/nodes`` checks the nodes against it).

With :data:`CONFIG_KEYS` (``dynid``'s keys, shared with the estimator and recorder blocks),
:data:`EXCITATION_KEYS` and :data:`ROS_PARAMETERS` it is the set of valid keys of a
configuration file: the ``/**`` block applies to every node, so a key there must be known
to one of them."""

ROS_PARAMETERS: tuple[str, ...] = ("use_sim_time", "start_type_description_service")
"""Parameters rclpy declares on every node."""

ROS_PARAMETER_PREFIXES: tuple[str, ...] = ("qos_overrides.",)
"""Prefixes of parameters rclpy or a launch file may set on any node (QoS overrides)."""

LOOP_CLOSURE_PREFIX = "robot.loop_closures."
"""Closed-loop robots: ``robot.loop_closures.<name>.{frame_a, frame_b, type}`` (a ROS parameter file cannot
hold a list of mappings, so each closure is a named mapping; see ``docs/closed_loop.md``)."""


def known_keys() -> frozenset[str]:
    """Every key a configuration block of this package may hold."""
    keys = set(CONFIG_KEYS) | set(EXCITATION_KEYS) | set(ROS_PARAMETERS)
    for names in NODE_PARAMETERS.values():
        keys.update(names)
    return frozenset(keys)


def is_known_key(key: str) -> bool:
    """Whether ``key`` is a parameter of some node of the package, of ``dynid`` or of rclpy."""
    return key in known_keys() or key.startswith((*ROS_PARAMETER_PREFIXES, LOOP_CLOSURE_PREFIX))


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


@dataclass(frozen=True)
class IdentificationConfig:
    """Settings of an identification run (defaults suit the demo robot).

    Attributes
    ----------
    joints
        Identified joints; ``None`` takes every joint of the data.
    gear_ratios, drive_gains, coupling
        Drive chain (see :class:`~dynamic_identification.core.model.DriveChain`);
        ``None`` means a direct drive (ones, identity).
    drive_terms
        Which drive-chain parameters are identified.
    position_cutoff_hz
        Cut-off of the position low-pass filter in Hz; 0 chooses it from the data.
    decimation
        Parallel decimation factor; 0 chooses it from the rate and the cut-off.
    velocity, stamps
        Velocity source and sample instants (``auto`` decides from the data; see
        :class:`~dynamic_identification.core.identification.settings.SignalSettings`).
    model
        Regression model of offline identification ([DirectDrive2012] §3, one of
        :data:`~dynamic_identification.core.regression_models.MODELS`): ``"dynamic"``
        is the IDIM of [Gautier2013]; the others identify the same base parameters.
    method
        ``"ols"`` or ``"wls"`` ([Gautier2013] eq. (20)).
    reduction
        ``"sensitivity"`` ([Volkmann2020] Algorithm 1), ``"essential"`` ([Gautier2013] §V.B) or ``"none"``.
    r_sigma
        Essential-parameter stopping ratio of the largest to smallest %σ.
    e_tol
        Sensitivity reduction: allowed relative growth of each joint's error.
    consistency, prior
        Publish the physically consistent estimate ([Wensing2018]), offline and for every
        publishable window update; ``prior`` > 0 bounds the link inertias to a box of that
        half-width (parameter scales) around the URDF's.
    uncertainty
        ``"hac"`` or ``"white"``: how σ and %σ are computed, offline and in the window
        (:attr:`~dynamic_identification.core.identification.settings.IdentificationSettings.uncertainty`).
    rate_hz
        Sample rate in Hz; 0 takes it from the median time step of the data.
    min_speed_rad_s
        A joint's equations are left out where its motor is slower than this,
        rad/s, since Coulomb friction ``Fc sign(q̇)`` fails while it sticks.
    gap_factor
        A stamp step longer than this many periods is a gap: offline the recording is
        split there, in-process the window's grid restarts; never interpolated.
    min_samples
        Fewest recorded samples an identification may use.
    joint_states_topic, currents_topic, effort_is_torque
        Where a rosbag holds the joint states and the motor currents; with
        ``effort_is_torque`` the joint torques come from ``JointState.effort``.
    window_s, window_reduction, update_period_s, max_condition_number, max_relative_error,
    min_motion_rad, friction_motion_rad, refactor_every, stick_periods
        In-process estimation (see :meth:`window_settings`); ``window_reduction`` is the
        reduction of the sliding window, ``reduction`` that of offline identification.
    effort_limits, acceleration_limits, jerk_limits
        The robot's limits where the URDF has none or the wrong ones (``limits.*``),
        N·m, rad/s², rad/s³; ``None``: the URDF's and the defaults.
    effort_factor, mass_factor
        Plausibility gates (:mod:`~dynamic_identification.core.plausibility`).
    """

    joints: tuple[str, ...] | None = None
    gear_ratios: tuple[float, ...] | None = None
    drive_gains: tuple[float, ...] | None = None
    coupling: tuple[tuple[float, ...], ...] | None = None
    drive_terms: DriveTerms = field(default_factory=DriveTerms)
    position_cutoff_hz: float = AUTO_CUTOFF_HZ
    decimation: int = 0
    velocity: str = "auto"
    stamps: str = "auto"
    model: str = "dynamic"
    method: str = "wls"
    reduction: str = "none"
    r_sigma: float = 20.0
    e_tol: float = 0.05
    consistency: bool = True
    prior: float = 0.0
    uncertainty: str = "hac"
    rate_hz: float = 0.0
    min_speed_rad_s: float = 0.05
    gap_factor: float = DEFAULT_GAP_FACTOR
    min_samples: int = 200
    joint_states_topic: str = "/joint_states"
    currents_topic: str = "/motor_currents"
    effort_is_torque: bool = False
    window_s: float = 10.0
    window_reduction: str = "sensitivity"
    update_period_s: float = 1.0
    max_condition_number: float = 100.0
    max_relative_error: float = 0.5
    min_motion_rad: float = 0.05
    friction_motion_rad: float = 0.1
    refactor_every: int = 20
    stick_periods: int = 10
    effort_limits: tuple[float, ...] | None = None
    acceleration_limits: tuple[float, ...] | None = None
    jerk_limits: tuple[float, ...] | None = None
    effort_factor: float = DEFAULT_EFFORT_FACTOR
    mass_factor: float = DEFAULT_MASS_FACTOR
    loop_closures: tuple[LoopClosure, ...] = ()
    actuated_joints: tuple[str, ...] = ()

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

    def closed_loop_bounds(self, model: ClosedLoopModel) -> PlausibilityBounds:
        """The plausibility gates of the closed-loop ``model`` with these limits and factors."""
        try:
            return closed_loop_bounds(
                model,
                effort_limits=self.effort_limits,
                acceleration_limits=self.acceleration_limits,
                effort_factor=self.effort_factor,
                mass_factor=self.mass_factor,
            )
        except IdentificationError as error:
            raise DataError(f"limits.* / plausibility.*: {error}") from error

    def plausibility_bounds(self, robot: RobotModel) -> PlausibilityBounds:
        """The plausibility gates of ``robot`` with these limits and factors."""
        try:
            return PlausibilityBounds.from_robot(
                robot,
                effort_limits=self.effort_limits,
                acceleration_limits=self.acceleration_limits,
                effort_factor=self.effort_factor,
                mass_factor=self.mass_factor,
            )
        except IdentificationError as error:
            raise DataError(f"limits.* / plausibility.*: {error}") from error

    def identification_settings(self) -> IdentificationSettings:
        """Settings of offline identification (``dynid identify``, ``predict``)."""
        try:
            return IdentificationSettings(
                signal=SignalSettings(
                    position_cutoff_hz=self.position_cutoff_hz,
                    decimation=self.decimation,
                    rate_hz=self.rate_hz or None,
                    velocity=self.velocity,
                    stamps=self.stamps,
                    gap_factor=self.gap_factor,
                    min_speed_rad_s=self.min_speed_rad_s,
                ),
                method=self.method,
                reduction=self.reduction,
                r_sigma=self.r_sigma,
                e_tol=self.e_tol,
                friction_motion_rad=self.friction_motion_rad,
                min_samples=self.min_samples,
                uncertainty=self.uncertainty,
            )
        except IdentificationError as error:
            raise DataError(f"identification settings: {error}") from error

    def window_settings(self) -> WindowSettings:
        """Settings of the in-process sliding-window estimator."""
        try:
            return WindowSettings(
                window_s=self.window_s,
                update_period_s=self.update_period_s,
                rate_hz=self.rate_hz,
                position_cutoff_hz=self.position_cutoff_hz,
                decimation=self.decimation,
                min_speed_rad_s=self.min_speed_rad_s,
                gap_factor=self.gap_factor,
                reduction=self.window_reduction,
                e_tol=self.e_tol,
                r_sigma=self.r_sigma,
                friction_motion_rad=self.friction_motion_rad,
                min_motion_rad=self.min_motion_rad,
                max_condition_number=self.max_condition_number,
                max_relative_error=self.max_relative_error,
                refactor_every=self.refactor_every,
                stick_periods=self.stick_periods,
                effort_factor=self.effort_factor,
                mass_factor=self.mass_factor,
                uncertainty=self.uncertainty,
            )
        except IdentificationError as error:
            raise DataError(f"window settings: {error}") from error

    def drive_chain(self, n_joints: int) -> DriveChain:
        """The drive chain for ``n_joints`` joints (raises ``ModelError`` on a size mismatch)."""
        return DriveChain.create(
            n_joints, gear_ratios=self.gear_ratios, drive_gains=self.drive_gains, coupling=self.coupling
        )


MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""Largest configuration file read (bytes): a parameter file is a few kilobytes."""


class _RosLoader(yaml.SafeLoader):
    """PyYAML's safe loader with the scalars ROS's parameter parser reads as numbers: ``1e9`` is a float."""


_RosLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def parse_yaml(text: str, source: str) -> Any:
    """The YAML document of ``text`` (safe: no Python objects), scalars resolved as ROS resolves them."""
    try:
        return yaml.load(text, Loader=_RosLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as error:
        raise DataError(f"{source} is not valid YAML: {shorten_yaml_error(error)}") from None
    except RecursionError:
        raise DataError(f"{source} nests too deeply to be a configuration") from None


def shorten_yaml_error(error: yaml.YAMLError) -> str:
    """PyYAML's message on one line, at most 300 characters (it may quote a long line)."""
    text = " ".join(str(error).split())
    return text if len(text) <= 300 else text[:299] + "…"


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


@dataclass(frozen=True)
class SimulatedRobot:
    """The simulated robot of a configuration's ``sim_robot`` block: its drive chain, true drive terms and sensors.

    ``drive_chain`` from ``gear_ratios`` and ``drive_gains``; ``drive`` the rotor inertia
    (kg·m²), viscous (N·m·s/rad) and Coulomb friction (N·m) and offsets (N·m) per joint;
    ``sensor`` the current noise (A) and encoder resolution (counts per revolution).
    """

    drive_chain: DriveChain
    drive: DriveParameters
    sensor: SensorModel


def simulated_robot(path: str | os.PathLike[str], n_joints: int) -> SimulatedRobot:
    """The ``sim_robot`` block of the configuration file ``path`` for a robot of ``n_joints`` joints."""
    parameters = ros_parameters(path, "sim_robot")
    return SimulatedRobot(
        drive_chain=DriveChain.create(
            n_joints, gear_ratios=parameters["gear_ratios"], drive_gains=parameters["drive_gains"]
        ),
        drive=DriveParameters.create(
            n_joints,
            rotor_inertia=parameters["rotor_inertia"],
            viscous=parameters["viscous_friction"],
            coulomb=parameters["coulomb_friction"],
            offset=parameters["offset"],
        ),
        sensor=SensorModel(
            current_noise_std_a=float(parameters["current_noise_std"]),
            encoder_counts_per_rev=int(parameters["encoder_counts"]),
        ),
    )


def ros_parameters(path: str | os.PathLike[str], node_name: str | None = None) -> dict[str, Any]:
    """Flat parameters of ``node_name`` in a ROS 2 parameter YAML file.

    The ``/**`` block is merged with the node's block (matched by its name, with or
    without a leading ``/``, namespace or ``/**/`` prefix); the node's values win.
    With ``node_name=None`` only ``/**`` is read. A file without ``ros__parameters``
    blocks is taken as the parameters themselves. Nested mappings become dotted
    names: ``{"signal": {"decimation": 4}}`` → ``{"signal.decimation": 4}``.

    Every key of the ``/**`` block, of a block of one of :data:`NODE_PARAMETERS`'s
    nodes and of a plain mapping must be known (:func:`is_known_key`); a block name
    close to a node name (a typo) is refused too.

    Raises
    ------
    DataError
        If the file is missing, is not valid YAML, is not a mapping of blocks, or holds
        an unknown key (named with the closest valid one).
    """
    file, text = read_config_text(path)
    document = parse_yaml(text, f"configuration file {file}")
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise DataError(f"configuration file {file} must be a YAML mapping, got {type(document).__name__}")
    if not any(isinstance(block, dict) and "ros__parameters" in block for block in document.values()):
        flat = _flatten(document, "", str(file))
        _check_known(flat, str(file))
        return flat
    wildcard: dict[str, Any] = {}
    own: dict[str, Any] = {}
    for key, block in document.items():
        if not isinstance(block, dict) or "ros__parameters" not in block:
            raise DataError(f"block {brief(key)} of {file} has no 'ros__parameters' mapping")
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
        if name == "/**":
            wildcard.update(flat)
        elif node_name is not None and _matches(name, node_name):
            own.update(flat)
    return {**wildcard, **own}


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
    if unknown:
        raise DataError(unknown_keys_message(unknown, source))


def load_config(
    path: str | os.PathLike[str] | None,
    *,
    node_name: str = "estimator",
    extra_keys: Iterable[str] = (),
) -> IdentificationConfig:
    """Identification settings from a ROS 2 parameter YAML file (``None``: defaults).

    Reads :func:`ros_parameters` of ``node_name`` and converts them with
    :func:`config_from_parameters`; keys are listed in :data:`CONFIG_KEYS`.

    Raises
    ------
    DataError
        Naming the file and the offending key and value.
    """
    if path is None:
        return IdentificationConfig()
    parameters = ros_parameters(path, node_name)
    return config_from_parameters(parameters, source=str(path), extra_keys=extra_keys)


def _velocity_default(reader: _Reader, default: str) -> str:
    """``signal.velocity``'s default: the deprecated ``signal.use_measured_velocity`` when a file still sets it."""
    if "signal.use_measured_velocity" not in reader.parameters:
        return default
    return "measured" if reader.flag("signal.use_measured_velocity", False) else "differentiated"


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
    unknown = sorted(key for key in parameters if key.split(".", 1)[0] in SECTIONS and key not in allowed)
    if unknown:
        raise DataError(unknown_keys_message(unknown, source, known=allowed))
    reader = _Reader(parameters, source)
    joints = reader.names("joints")
    closures, actuated = _closed_loop(parameters, reader, source)
    if closures and joints is not None and sorted(joints) != sorted(actuated):
        raise DataError(
            f"joints in {source} must be the actuated joints {list(actuated)} of the closed-loop robot, or unset;"
            f" got {list(joints)} (recorded passive joints are used when a recording has them)"
        )
    gear_ratios = reader.numbers("drive_chain.gear_ratios")
    drive_gains = reader.numbers("drive_chain.drive_gains")
    coupling = reader.matrix("drive_chain.coupling")
    _check_sizes(source, joints or (actuated or None), gear_ratios, drive_gains, coupling)
    defaults = IdentificationConfig()
    terms = DriveTerms(
        rotor_inertia=reader.flag("drive_terms.rotor_inertia", defaults.drive_terms.rotor_inertia),
        viscous_friction=reader.flag("drive_terms.viscous_friction", defaults.drive_terms.viscous_friction),
        coulomb_friction=reader.flag("drive_terms.coulomb_friction", defaults.drive_terms.coulomb_friction),
        offset=reader.flag("drive_terms.offset", defaults.drive_terms.offset),
    )
    return IdentificationConfig(
        joints=joints,
        gear_ratios=gear_ratios,
        drive_gains=drive_gains,
        coupling=coupling,
        drive_terms=terms,
        position_cutoff_hz=reader.real(
            "signal.position_cutoff_hz", defaults.position_cutoff_hz, minimum=0.0, inclusive=True, maximum=10000.0
        ),
        decimation=reader.integer("signal.decimation", defaults.decimation, minimum=0, maximum=1000),
        velocity=reader.choice("signal.velocity", _velocity_default(reader, defaults.velocity), VELOCITY_SOURCES),
        stamps=reader.choice("signal.stamps", defaults.stamps, STAMP_SOURCES),
        rate_hz=reader.real("signal.rate_hz", defaults.rate_hz, minimum=0.0, inclusive=True, maximum=100000.0),
        min_speed_rad_s=reader.real(
            "signal.min_speed_rad_s", defaults.min_speed_rad_s, minimum=0.0, inclusive=True, maximum=100.0
        ),
        gap_factor=reader.real("signal.gap_factor", defaults.gap_factor, minimum=1.0, maximum=1e6),
        model=reader.choice("estimation.model", defaults.model, MODELS),
        method=reader.choice("estimation.method", defaults.method, METHODS),
        reduction=reader.choice("estimation.reduction", defaults.reduction, REDUCTIONS),
        r_sigma=reader.real("estimation.r_sigma", defaults.r_sigma, minimum=0.0, maximum=1e6),
        e_tol=reader.real("estimation.e_tol", defaults.e_tol, minimum=0.0, maximum=10.0),
        consistency=reader.flag("estimation.consistency", defaults.consistency),
        prior=reader.real("estimation.prior", defaults.prior, minimum=0.0, inclusive=True, maximum=1e3),
        uncertainty=reader.choice("estimation.uncertainty", defaults.uncertainty, UNCERTAINTIES),
        window_s=reader.real("window.window_s", defaults.window_s, minimum=0.0, maximum=3600.0),
        window_reduction=reader.choice("window.reduction", defaults.window_reduction, REDUCTIONS),
        update_period_s=reader.real("window.update_period_s", defaults.update_period_s, minimum=0.0, maximum=3600.0),
        max_condition_number=reader.real(
            "window.max_condition_number", defaults.max_condition_number, minimum=0.0, maximum=1e12
        ),
        max_relative_error=reader.real("window.max_relative_error", defaults.max_relative_error, minimum=0.0),
        min_motion_rad=reader.real("window.min_motion_rad", defaults.min_motion_rad, minimum=0.0, inclusive=True),
        friction_motion_rad=reader.real(
            "window.friction_motion_rad", defaults.friction_motion_rad, minimum=0.0, inclusive=True
        ),
        refactor_every=reader.integer("window.refactor_every", defaults.refactor_every, minimum=1, maximum=100000),
        stick_periods=reader.integer("window.stick_periods", defaults.stick_periods, minimum=0, maximum=1000),
        min_samples=reader.integer("estimation.min_samples", defaults.min_samples, minimum=1, maximum=10**9),
        joint_states_topic=reader.text("topics.joint_states", defaults.joint_states_topic),
        currents_topic=reader.text("topics.motor_currents", defaults.currents_topic),
        effort_is_torque=reader.flag("topics.effort_is_torque", defaults.effort_is_torque),
        effort_limits=reader.numbers("limits.effort"),
        acceleration_limits=reader.numbers("limits.acceleration"),
        jerk_limits=reader.numbers("limits.jerk"),
        effort_factor=reader.real("plausibility.effort_factor", defaults.effort_factor, minimum=1.0, inclusive=True),
        mass_factor=reader.real("plausibility.mass_factor", defaults.mass_factor, minimum=1.0, inclusive=True),
        loop_closures=closures,
        actuated_joints=actuated,
    )


def _closed_loop(
    parameters: Mapping[str, Any], reader: _Reader, source: str
) -> tuple[tuple[LoopClosure, ...], tuple[str, ...]]:
    """``robot.loop_closures`` and ``robot.actuated_joints``; both empty for a serial robot.

    The closures come as dotted parameters ``robot.loop_closures.<name>.<key>`` (what a ROS
    parameter file holds) or as one list ``robot.loop_closures`` (a plain YAML file).
    """
    listed = parameters.get("robot.loop_closures")
    named: dict[str, dict[str, Any]] = {}
    for key, value in parameters.items():
        if not key.startswith(LOOP_CLOSURE_PREFIX):
            continue
        name, dot, field_name = key[len(LOOP_CLOSURE_PREFIX) :].rpartition(".")
        if not dot or not name:
            raise DataError(
                f"{key} in {source} must be a closure {{frame_a, frame_b, type}}, got {brief(value)}"
                " (robot.loop_closures.<name>.frame_a, …)"
            )
        named.setdefault(name, {})[field_name] = value
    if listed not in (None, []) and named:
        raise DataError(f"robot.loop_closures in {source} is given both as a list and as named closures")
    actuated = reader.names("robot.actuated_joints") or ()
    if not named and listed in (None, []):
        if actuated:
            raise DataError(
                f"robot.actuated_joints in {source} describes a closed-loop robot: give robot.loop_closures too"
            )
        return (), ()
    try:
        closures = loop_closures_from_config(named or listed)
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


@dataclass(frozen=True)
class _Reader:
    """Typed access to flat parameters with errors naming the source, key and value."""

    parameters: Mapping[str, Any]
    source: str

    def _fail(self, key: str, value: Any, expected: str) -> DataError:
        return DataError(f"{key} in {self.source} must be {expected}, got {brief(value)}")

    def flag(self, key: str, default: bool) -> bool:
        value = self.parameters.get(key, default)
        if not isinstance(value, bool):
            raise self._fail(key, value, "true or false")
        return value

    def real(
        self,
        key: str,
        default: float,
        *,
        minimum: float,
        inclusive: bool = False,
        maximum: float = math.inf,
        least: float = -math.inf,
    ) -> float:
        value = self.parameters.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self._fail(key, value, "a number")
        try:
            number = float(value)
        except OverflowError:
            raise self._fail(key, value, f"at most {maximum:g}") from None
        below = number < minimum if inclusive else number <= minimum
        if not math.isfinite(number) or below:
            raise self._fail(key, value, f"finite and {'>=' if inclusive else '>'} {minimum:g}")
        if number > maximum:
            raise self._fail(key, value, f"at most {maximum:g}")
        if number < least:
            raise self._fail(key, value, f"at least {least:g}")
        return number

    def integer(self, key: str, default: int, *, minimum: int, maximum: int | None = None) -> int:
        value = self.parameters.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._fail(key, value, "an integer")
        if value < minimum:
            raise self._fail(key, value, f">= {minimum}")
        if maximum is not None and value > maximum:
            raise self._fail(key, value, f"at most {maximum}")
        return value

    def choice(self, key: str, default: str, choices: Sequence[str]) -> str:
        value = self.parameters.get(key, default)
        if not isinstance(value, str) or value not in choices:
            raise self._fail(key, value, f"one of {list(choices)}")
        return str(value)

    def text(self, key: str, default: str) -> str:
        value = self.parameters.get(key, default)
        if not isinstance(value, str) or not value.strip():
            raise self._fail(key, value, "a non-empty string")
        return value

    def names(self, key: str) -> tuple[str, ...] | None:
        value = self.parameters.get(key)
        if value is None or value == [] or value == [""]:
            return None
        if not isinstance(value, list) or not all(isinstance(name, str) and name for name in value):
            raise self._fail(key, value, "a list of joint names")
        if len(set(value)) != len(value):
            raise self._fail(key, value, "a list of distinct joint names")
        return tuple(value)

    def numbers(self, key: str) -> tuple[float, ...] | None:
        value = self.parameters.get(key)
        if value is None or value == []:
            return None
        if not isinstance(value, list) or not all(_is_real(item) for item in value):
            raise self._fail(key, value, "a list of finite numbers")
        return tuple(float(item) for item in value)

    def matrix(self, key: str) -> tuple[tuple[float, ...], ...] | None:
        value = self.parameters.get(key)
        if value is None or value == []:
            return None
        expected = "a square matrix: n×n finite numbers, row by row, or a list of rows"
        if not isinstance(value, list):
            raise self._fail(key, value, expected)
        if all(isinstance(row, list) for row in value):
            rows = value
        else:
            size = math.isqrt(len(value))
            if size * size != len(value):
                raise self._fail(key, value, expected)
            rows = [value[i * size : (i + 1) * size] for i in range(size)]
        if any(len(row) != len(rows) or not all(_is_real(item) for item in row) for row in rows):
            raise self._fail(key, value, expected)
        return tuple(tuple(float(item) for item in row) for row in rows)


def _is_real(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


EXCITATION_KEYS: dict[str, str] = {
    "mode": "fourier | segmented | process",
    "fundamental_hz": "Fourier fundamental frequency, Hz (> 0)",
    "harmonics": "number of Fourier harmonics n_h (>= 1)",
    "periods": "repetitions of the trajectory (>= 1)",
    "rate_hz": "sampling of the planned trajectory, Hz (> 0)",
    "position_margin_rad": "distance kept from the URDF position limits, rad (>= 0)",
    "velocity_scale": "fraction of the URDF velocity limits allowed, (0, 1]",
    "acceleration_scale": "fraction of the acceleration limits allowed, (0, 1]",
    "acceleration_limits": "acceleration limits per joint, rad/s² (default 4 /s × velocity limit)",
    "jerk_scale": "fraction of the jerk limits allowed, (0, 1]",
    "effort_scale": "fraction of the effort limits a planned motion may need, (0, 1]",
    "interpolation_tolerance_rad": "largest distance of the controller's interpolation from the plan, rad (> 0)",
    "parameters_file": "identified parameter YAML whose torques are checked (default the URDF's nominal model)",
    "optimise": "optimise the Fourier coefficients for the condition number",
    "time_budget_s": "wall-time budget of the optimisation, s (> 0)",
    "max_evaluations": "most cost evaluations of the optimisation (0: the time budget alone)",
    "seed": "random seed (>= 0)",
    "workspace_lower": "restricted workspace: lower joint positions, rad",
    "workspace_upper": "restricted workspace: upper joint positions, rad",
    "box_min": "end-effector box lower corner x, y, z in the base frame, m",
    "box_max": "end-effector box upper corner x, y, z in the base frame, m",
    "frame": "end-effector frame for the box and the process trajectories",
    "process": "pick_and_place | square",
    "cycles": "pick-and-place cycles or square laps (>= 1)",
}
"""Excitation settings: parameters of the ``excitation`` node block of a configuration file,
read by the node and by ``dynid excite``."""


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
    reader = _Reader(parameters, source)
    defaults = ExcitationSettings()
    frame = parameters.get("frame")
    try:
        settings = ExcitationSettings(
            mode=mode or reader.choice("mode", defaults.mode, MODES),  # type: ignore[arg-type]
            fundamental_hz=reader.real(
                "fundamental_hz", defaults.fundamental_hz, minimum=0.0, least=1e-4, maximum=100.0
            ),
            harmonics=reader.integer("harmonics", defaults.harmonics, minimum=1, maximum=100),
            periods=reader.integer("periods", defaults.periods, minimum=1, maximum=10000),
            rate_hz=reader.real("rate_hz", defaults.rate_hz, minimum=0.0, least=1.0, maximum=10000.0),
            position_margin_rad=reader.real(
                "position_margin_rad", defaults.position_margin_rad, minimum=0.0, inclusive=True
            ),
            velocity_scale=reader.real("velocity_scale", defaults.velocity_scale, minimum=0.0),
            acceleration_scale=reader.real("acceleration_scale", defaults.acceleration_scale, minimum=0.0),
            acceleration_limits=reader.numbers("acceleration_limits") or reader.numbers("limits.acceleration"),
            jerk_scale=reader.real("jerk_scale", defaults.jerk_scale, minimum=0.0),
            jerk_limits=reader.numbers("limits.jerk"),
            effort_scale=reader.real("effort_scale", defaults.effort_scale, minimum=0.0),
            effort_limits=reader.numbers("limits.effort"),
            interpolation_tolerance_rad=reader.real(
                "interpolation_tolerance_rad", defaults.interpolation_tolerance_rad, minimum=0.0
            ),
            optimise=reader.flag("optimise", defaults.optimise),
            time_budget_s=reader.real("time_budget_s", defaults.time_budget_s, minimum=0.0, maximum=3600.0),
            max_evaluations=reader.integer("max_evaluations", defaults.max_evaluations, minimum=0, maximum=10**9),
            seed=reader.integer("seed", defaults.seed, minimum=0, maximum=2**31 - 1),
            workspace_lower=reader.numbers("workspace_lower"),
            workspace_upper=reader.numbers("workspace_upper"),
            box_min=reader.numbers("box_min"),
            box_max=reader.numbers("box_max"),
            frame=None if frame in (None, "") else reader.text("frame", ""),
            process=reader.choice("process", defaults.process, PROCESSES),  # type: ignore[arg-type]
            cycles=reader.integer("cycles", defaults.cycles, minimum=1, maximum=10000),
        )
    except IdentificationError as error:
        if isinstance(error, DataError):
            raise
        raise DataError(f"excitation settings in {source}: {error}") from error
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
    if path is None:
        return ExcitationSettings() if mode is None else ExcitationSettings(mode=mode)  # type: ignore[arg-type]
    return excitation_settings_from_parameters(ros_parameters(path, "excitation"), source=str(path), mode=mode)
