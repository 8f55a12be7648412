"""One table of every setting: key, type, default, bounds, unit, one-line description, who reads it.

Each :class:`Setting` of :data:`SETTINGS` is defined here once, and everything else is
produced from it:

* :mod:`dynamic_identification.io.config` reads configuration files and node parameters
  through it (types, bounds, the closest valid key of an unknown one);
* :mod:`dynamic_identification.nodes.parameters` declares the ROS parameters of each node
  with a ``ParameterDescriptor`` built from it (description, unit, range, choices);
* the core's settings dataclasses take their defaults from it (:func:`setting_field`),
  which also tells the readers which key fills which field;
* the README's configuration table is generated from it
  (``python -m dynamic_identification.settings_table``), and a test compares the two.

A setting belongs to the consumers listed in :attr:`Setting.nodes`: the nodes that declare
it as a ROS parameter, :data:`DYNID` (``dynid``'s identification configuration: the ``/**``
and ``estimator`` blocks, and the recorder's block for how a rosbag makes a recording) and
:data:`DYNID_EXCITE` (``dynid excite``: the ``/**`` and ``excitation`` blocks). Dotted keys
(``window.window_s``) mean the same for every consumer; a plain key may mean different things
to different nodes (``rate_hz``), so the table may hold it more than once, for disjoint
consumers.

This module imports nothing from the package but :mod:`~dynamic_identification.core.errors`: it is the
lowest layer.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from enum import Enum
from typing import Any

from dynamic_identification.core.errors import IdentificationError

DYNID = "dynid"
"""Consumer: ``dynid``'s identification configuration (``identify``, ``predict``, ``stream``, …)."""

DYNID_EXCITE = "dynid excite"
"""Consumer: the excitation settings ``dynid excite`` reads."""

NODES: tuple[str, ...] = ("recorder", "excitation", "estimator", "feedforward", "sim_robot")
"""The package's nodes."""

CONSUMERS: tuple[str, ...] = (*NODES, DYNID, DYNID_EXCITE)


class Kind(Enum):
    """Type of a setting's value (and of the ROS parameter that holds it)."""

    BOOL = "bool"
    INTEGER = "integer"
    DOUBLE = "double"
    STRING = "string"
    NAMES = "string[]"
    NUMBERS = "double[]"
    MATRIX = "double[] (n×n, row by row)"
    CLOSURES = "closures"
    """Named groups of strings: a configuration file gives a list of mappings under the key, or one
    mapping per name; ROS parameters (which hold no list of mappings) one string parameter per
    member, ``<key>.<name>.<field>`` (:func:`group_member`)."""


Value = bool | int | float | str | tuple[str, ...] | tuple[float, ...] | None

CLOSURE_FIELDS: tuple[str, ...] = ("frame_a", "frame_b", "type")
"""The fields of one loop closure (:attr:`Kind.CLOSURES`)."""

CLOSURE_TYPES: tuple[str, ...] = ("point", "planar", "6d")
"""Loop closures ([Briot2012] §2): coincident origins, in-plane placement, coincident placements."""


@dataclass(frozen=True)
class Setting:
    """One setting.

    Attributes
    ----------
    key
        Dotted parameter name (``signal.decimation``).
    kind
        Type of the value.
    default
        Value when unset; ``None`` for an array or optional string that is unset.
    description
        One line saying what the setting does (units go to :attr:`unit`).
    unit
        SI unit of a number (``Hz``, ``rad/s²``), empty for none.
    minimum, maximum
        Bounds of a number, inclusive, except :attr:`minimum` when :attr:`exclusive`.
    exclusive
        The value must exceed :attr:`minimum` (``> 0`` rather than ``>= 0``).
    choices
        The values a string may take; empty: any.
    nonempty
        A string that must not be empty (a topic name).
    nodes
        Its consumers (see the module docstring).
    """

    key: str
    kind: Kind
    default: Value
    description: str
    unit: str = ""
    minimum: float | None = None
    maximum: float | None = None
    exclusive: bool = False
    choices: tuple[str, ...] = ()
    nonempty: bool = False
    nodes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = set(self.nodes) - set(CONSUMERS)
        if not self.nodes or unknown:
            raise ValueError(f"setting {self.key!r}: nodes must be some of {list(CONSUMERS)}, got {list(self.nodes)}")
        if self.kind in (Kind.INTEGER, Kind.DOUBLE) and (self.minimum is None or self.maximum is None):
            raise ValueError(f"setting {self.key!r}: a number needs a minimum and a maximum")

    @property
    def numeric(self) -> bool:
        return self.kind in (Kind.INTEGER, Kind.DOUBLE)

    def range_text(self) -> str:
        """The allowed values in interval notation (``(0, 3600]``) or as choices; empty when any."""
        if self.choices:
            return " | ".join(self.choices)
        if self.minimum is None or self.maximum is None:
            return ""
        return f"{'(' if self.exclusive else '['}{self.number(self.minimum)}, {self.number(self.maximum)}]"

    def number(self, value: float) -> str:
        """``value`` as messages and tables print it: integers whole, reals with ``:g``."""
        return str(int(value)) if self.kind is Kind.INTEGER else f"{float(value):g}"

    def bound_problem(self, value: float) -> str | None:
        """What ``value`` must be when it lies outside the bounds (``"finite and > 0"``); ``None`` inside.

        A quantity with a positive lower bound says ``at least`` for a positive value below
        it and ``> 0`` for a value that is not positive, as the readers always did.
        """
        if self.minimum is None or self.maximum is None:
            return None
        lower, upper = self.minimum, self.maximum
        if self.kind is Kind.DOUBLE and not math.isfinite(value):
            return f"finite and {'>' if self.exclusive else '>='} {self.number(lower)}"
        if value < lower or (self.exclusive and value <= lower):
            if self.kind is Kind.INTEGER:
                return f">= {self.number(lower)}"
            if self.exclusive:
                return f"finite and > {self.number(lower)}"
            if lower > 0.0:
                return f"at least {self.number(lower)}" if value > 0.0 else "finite and > 0"
            return f"finite and >= {self.number(lower)}"
        if value > upper:
            return f"at most {self.number(upper)}"
        return None


# -- choices (the core's tuples of allowed strings are these) ----------------------------------------------------

REGRESSION_MODELS: tuple[str, ...] = ("dynamic", "filtered_dynamic", "supplied_energy", "power", "filtered_power")
"""The regression models of [DirectDrive2012] §3, in the paper's order."""

METHODS: tuple[str, ...] = ("ols", "wls")
"""Least-squares methods: ordinary, or weighted per joint ([Gautier2013] eq. (20))."""

REDUCTIONS: tuple[str, ...] = ("sensitivity", "essential", "none")
"""Model reductions: [Volkmann2020] Algorithm 1, [Gautier2013] §V.B essential parameters, or the rank check only."""

EXCITATION_MODES: tuple[str, ...] = ("fourier", "segmented", "process", "payload")
"""Planned excitations: optimised Fourier series, segmented per-joint-fixed, process trajectories, the wrist for a
payload ([Swevers2002] §4)."""

NODE_EXCITATION_MODES: tuple[str, ...] = (*EXCITATION_MODES, "file")
"""What the excitation node plays: a planned excitation or a trajectory file."""

PROCESSES: tuple[str, ...] = ("pick_and_place", "square")
"""Process trajectories ([Volkmann2020] §III.B)."""

PAYLOAD_METHODS: tuple[str, ...] = ("ml", "linear")
"""Payload identification: maximum likelihood ([Swevers2002] eq. (18)) or the linear estimate."""

UNCERTAINTIES: tuple[str, ...] = ("hac", "white")
"""How σ and %σ are computed: autocorrelation-consistent (Newey & West 1987, Andrews 1991, Kiefer & Vogelsang 2005;
:mod:`~dynamic_identification.core.estimation.uncertainty`) or as if the residuals were white ([Gautier2013]
eq. (17)-(18))."""

VELOCITY_SOURCES: tuple[str, ...] = ("auto", "measured", "differentiated")
"""Where joint velocities come from: decided from the data, the recorded ones, or the differentiated positions."""

REGRESSOR_SAMPLES: tuple[str, ...] = ("decimated", "all")
"""Where offline identification evaluates the observation matrix: at the decimated instants only, on the low-passed
motion, or at every sample, low-passed and decimated like the torques ([Gautier2013] eq. (13)-(14))."""

TORQUE_DELAYS: tuple[str, ...] = ("auto", "none")
"""Whether the torques' delay behind the positions is measured and the torques aligned when the data say so, or the
torques are taken as recorded (:mod:`~dynamic_identification.core.identification.torque_delay`)."""

STAMP_SOURCES: tuple[str, ...] = ("auto", "recorded", "recovered")
"""How sample instants are taken: decided from the data, the recorded stamps as they are, or recovered from the
sample order (jittered, quantised or bunched stamps)."""

AUTO_CUTOFF_HZ = 0.0
"""``signal.position_cutoff_hz`` that asks for a cut-off chosen from the data's spectrum."""

JOINT_ERROR_WARNING = 0.3
"""``estimation.joint_error_warning``: the e*_j ([Volkmann2020] eq. (12)) above which a joint is warned about. A
model that fits a joint has e*_j of a few percent (the IDIM of the shipped arm: 0.03-0.10); at 0.3 the mean error
is a third of the mean torque, which no feedforward should rely on (the power models on the same data: 0.5-2.7,
[Gautier2013] Table IV's finding; a joint whose torque channel is buried in noise: 0.64 in the tests, 0.94 in the
log of issue 21)."""

# -- the shipped arm's simulated drive chain (joint side, joints 1..6) --------------------------------------------
# Friction is the URDF's <dynamics> (rounded from [Gautier2013] Table II); rotor inertia Ia3..Ia6 are of the order
# of [Gautier2013] Table II, Ia1, Ia2 (not given there) plausible for this class.

ARM6_GEAR_RATIOS = (100.0, 100.0, 80.0, 60.0, 60.0, 50.0)
ARM6_DRIVE_GAINS = (0.45, 0.45, 0.4, 0.35, 0.3, 0.3)
ARM6_ROTOR_INERTIA = (0.5, 0.4, 0.2, 0.1, 0.08, 0.05)
ARM6_VISCOUS = (6.9, 4.5, 1.6, 0.85, 1.6, 0.5)
ARM6_COULOMB = (6.7, 7.9, 6.3, 2.6, 2.7, 1.8)
ARM6_OFFSET = (0.3, -0.5, 0.2, 0.1, -0.1, 0.05)

_B, _I, _D, _S = Kind.BOOL, Kind.INTEGER, Kind.DOUBLE, Kind.STRING
_CHAIN = ("recorder", "excitation", "estimator", DYNID)
_TERMS = ("excitation", "estimator", DYNID)
_ESTIMATION = ("estimator", DYNID)
_EXCITE = ("excitation", DYNID_EXCITE)
_PLAUSIBILITY = ("estimator", "feedforward", DYNID)
"""The plausibility gates judge a model where it is made and where it is used."""
_CLOSED_LOOP = ("excitation", "estimator", "sim_robot", DYNID)
_INT32 = 2**31 - 1

SETTINGS: tuple[Setting, ...] = (
    # -- robot and drive chain (the /** block: every node that needs them) --
    Setting("joints", Kind.NAMES, None, "joints in the node's order; unset: every 1-DoF joint of the URDF (the"
            " recorder: of the first joint state)", nodes=("recorder", "excitation", "estimator", "sim_robot", DYNID)),
    # -- closed-loop (parallel) robots ([Briot2012] §2, docs/closed_loop.md): the /** block --
    Setting("robot.loop_closures", Kind.CLOSURES, None, "closed-loop robots: the closures of the opened tree,"
            f" each {{{', '.join(CLOSURE_FIELDS[:2])}, type: {' | '.join(CLOSURE_TYPES)}}}; a list, or by name (ROS"
            " parameters: robot.loop_closures.NAME.frame_a, …); unset: a serial robot", nodes=_CLOSED_LOOP),
    Setting("robot.actuated_joints", Kind.NAMES, None, "closed-loop robots: the actuated (motorised) joints of the"
            " opened tree, with robot.loop_closures; joints and the drive chain are then theirs", nodes=_CLOSED_LOOP),
    Setting("drive_chain.gear_ratios", Kind.NUMBERS, None, "gear ratio per joint, motor rad per joint rad; unset: 1",
            nodes=_CHAIN),
    Setting("drive_chain.drive_gains", Kind.NUMBERS, None, "motor torque constant per joint, motor side; unset: 1",
            unit="N·m/A", nodes=_CHAIN),
    Setting("drive_chain.coupling", Kind.MATRIX, None, "dimensionless n×n coupling matrix ([Gautier2013] eq. (25));"
            " unset: identity", nodes=_CHAIN),
    Setting("drive_terms.rotor_inertia", _B, True, "identify the rotor inertia Ia per joint", nodes=_TERMS),
    Setting("drive_terms.viscous_friction", _B, True, "identify the viscous friction Fv per joint", nodes=_TERMS),
    Setting("drive_terms.coulomb_friction", _B, True, "identify the Coulomb friction Fc per joint", nodes=_TERMS),
    Setting("drive_terms.offset", _B, True, "identify the torque offset per joint", nodes=_TERMS),
    Setting("limits.effort", Kind.NUMBERS, None, "joint torque limits per joint; unset: the URDF's", unit="N·m",
            nodes=("excitation", "estimator", "feedforward", DYNID, DYNID_EXCITE)),
    Setting("limits.acceleration", Kind.NUMBERS, None, "acceleration limits per joint; unset: 4 /s × the URDF"
            " velocity limit (a planning margin; the feedforward: 10 /s ×)", unit="rad/s²",
            nodes=("excitation", "estimator", "feedforward", DYNID, DYNID_EXCITE)),
    Setting("limits.jerk", Kind.NUMBERS, None, "jerk limits per joint; unset: 50 /s × the acceleration limit",
            unit="rad/s³", nodes=("excitation", DYNID, DYNID_EXCITE)),
    # -- signal processing ([Gautier2013] §IV.A) --
    Setting("signal.position_cutoff_hz", _D, AUTO_CUTOFF_HZ, "cut-off of the zero-phase position low-pass filter;"
            " 0: from the data's spectrum (20 × the motion's bandwidth, 2-20 Hz; the window: from its first seconds)",
            unit="Hz", minimum=0.0, maximum=10000.0, nodes=_ESTIMATION),
    Setting("signal.decimation", _I, 0, "parallel decimation factor; 0: automatic", minimum=0, maximum=1000,
            nodes=_ESTIMATION),
    Setting("signal.velocity", _S, "auto", "velocity source; auto: the recorded velocities when they agree with the"
            " differentiated positions, else the derivative", choices=VELOCITY_SOURCES, nodes=(DYNID,)),
    Setting("signal.torque_delay", _S, "auto", "the torques' (currents') delay behind the positions; auto: measured by"
            " the IDIM fit's residual over −3…10 sample periods, the torques aligned when it lies 3 σ from 0; none: as"
            " recorded (the window: on its first minute of motion)", choices=TORQUE_DELAYS, nodes=_ESTIMATION),
    Setting("signal.stamps", _S, "auto", "sample instants; auto: recovered from the sample order when the stamps"
            " jitter by more than 1 % of a period, else as recorded (the window: decided from its first seconds)",
            choices=STAMP_SOURCES, nodes=_ESTIMATION),
    Setting("signal.regressor_samples", _S, "decimated", "where identify evaluates the observation matrix: decimated:"
            " at the decimated instants, on the low-passed motion (as the estimator's window always does); all: at"
            " every sample, then low-passed and decimated like the torques ([Gautier2013] eq. (13)-(14))",
            choices=REGRESSOR_SAMPLES, nodes=(DYNID,)),
    Setting("signal.use_measured_velocity", _B, False, "deprecated, when set: true is signal.velocity measured,"
            " false differentiated", nodes=(DYNID,)),
    Setting("signal.rate_hz", _D, 0.0, "uniform sample rate; 0: the median time step of the data", unit="Hz",
            minimum=0.0, maximum=100000.0, nodes=_ESTIMATION),
    Setting("signal.min_speed_rad_s", _D, 0.05, "leave out a joint's equations near its velocity reversals; 0: keep"
            " all", unit="rad/s", minimum=0.0, maximum=100.0, nodes=_ESTIMATION),
    Setting("signal.gap_factor", _D, 5.0, "a stamp step longer than this many periods and than a quarter period of"
            " the position cut-off (a driver's hiccup of a few samples is bridged) splits the data, never"
            " interpolated", minimum=1.0, exclusive=True, maximum=1e6, nodes=_ESTIMATION),
    # -- estimation --
    Setting("estimation.model", _S, "dynamic", "regression model of offline identification ([DirectDrive2012])",
            choices=REGRESSION_MODELS, nodes=(DYNID,)),
    Setting("estimation.method", _S, "wls", "least squares: ordinary or per-joint weighted ([Gautier2013] eq. (20))",
            choices=METHODS, nodes=(DYNID,)),
    Setting("estimation.reduction", _S, "none", "offline parameter reduction: [Volkmann2020] Algorithm 1,"
            " [Gautier2013] §V.B essential parameters, or none", choices=REDUCTIONS, nodes=(DYNID,)),
    Setting("estimation.e_tol", _D, 0.05, "sensitivity reduction: allowed growth of each joint's relative error"
            " (0.05: 5 %)", minimum=0.0, exclusive=True, maximum=10.0, nodes=_ESTIMATION),
    Setting("estimation.r_sigma", _D, 20.0, "essential parameters: largest allowed ratio of the largest to the"
            " smallest %σ", minimum=1.0, maximum=1e6, nodes=_ESTIMATION),
    Setting("estimation.consistency", _B, True, "publish the physically consistent estimate nearest to the data"
            " ([Wensing2018]: link pseudo-inertias positive definite, Ia, Fv, Fc >= 0); false: the unconstrained one",
            nodes=_ESTIMATION),
    Setting("estimation.prior", _D, 0.0, "consistent estimate: half-width of a box around the URDF's link inertias,"
            " in parameter scales; 0: none (0.5 keeps masses within ±50 %)", minimum=0.0, maximum=1000.0,
            nodes=_ESTIMATION),
    Setting("estimation.prior_weight", _D, 0.3, "consistent estimate: weight γ of the log-det divergence to the"
            " URDF's link pseudo-inertias ([Lee2020]), in observations of each link (the fit's squared σ): where the"
            " data are silent the links are the URDF's, where they speak they move less than their σ; 0: none (the"
            " undetermined directions are then arbitrary)", minimum=0.0, maximum=1e6, nodes=_ESTIMATION),
    Setting("estimation.uncertainty", _S, "hac", "σ and %σ: hac (residuals correlated in time, Newey & West 1987)"
            " or white ([Gautier2013] eq. (18), several times too small on filtered, decimated rows)",
            choices=UNCERTAINTIES, nodes=_ESTIMATION),
    Setting("estimation.efficiency", _B, True, "dynid gains: identify each motor's transmission efficiency with its"
            " drive gain ([Swevers2002] eq. (8): one gain while the motor drives, one while it brakes), published"
            " when the data determine it and it fits significantly better than one gain; false: one lossless gain"
            " per motor", nodes=(DYNID,)),
    Setting("estimation.passive_friction", _B, True, "closed-loop robot: viscous and Coulomb friction in each"
            " passive joint's bearing, mapped to the motors by J_t ([Briot2012] eq. (6)); dynid identify publishes"
            " it when the data determine it and it fits significantly better than frictionless bearings, the window"
            " offers it to its reduction (window.reduction not none); false: never", nodes=_ESTIMATION),
    Setting("estimation.choose_drive_terms", _B, True, "dynid identify: publish each kind of drive_terms only when"
            " the data choose it (the Wald test of \"zero on every joint\" rejects; else identified again without"
            " it, saying so in one line); false: every kind drive_terms offers", nodes=(DYNID,)),
    Setting("estimation.min_samples", _I, 200, "fewest recorded samples to identify from", minimum=1,
            maximum=10**9, nodes=(DYNID,)),
    Setting("estimation.joint_error_warning", _D, JOINT_ERROR_WARNING, "warn about each joint whose relative"
            " error e*_j ([Volkmann2020] eq. (12): mean |τ − τ̂| / mean |τ|) on its equations exceeds this (0.3:"
            " 30 %): the model does not predict that joint", minimum=0.0, exclusive=True, maximum=1000.0,
            nodes=(DYNID,)),
    # -- in-process estimation (the sliding window, [Volkmann2020]) --
    Setting("window.window_s", _D, 10.0, "in-process estimation: window length, in data time", unit="s",
            minimum=0.0, exclusive=True, maximum=3600.0, nodes=_ESTIMATION),
    Setting("window.update_period_s", _D, 1.0, "in-process estimation: data time between updates (<= window_s)",
            unit="s", minimum=0.0, exclusive=True, maximum=3600.0, nodes=_ESTIMATION),
    Setting("window.min_fill", _D, 0.25, "quality gate: the window's rows must cover this fraction of window_s"
            " (gaps and filter margins hold none)", minimum=0.0, exclusive=True, maximum=1.0, nodes=_ESTIMATION),
    Setting("window.reduction", _S, "sensitivity", "in-process reduction: [Volkmann2020] Algorithm 1, essential"
            " parameters or none", choices=REDUCTIONS, nodes=_ESTIMATION),
    Setting("window.keep_model", _B, True, "sensitivity reduction: keep the last published model while Algorithm 1"
            " still accepts it on the window, for at most window_s of data; false: choose at every update",
            nodes=_ESTIMATION),
    Setting("window.max_condition_number", _D, 100.0, "quality gate: largest condition number of the reduced model",
            minimum=1.0, maximum=1e12, nodes=_ESTIMATION),
    Setting("window.max_relative_error", _D, 0.5, "quality gate: largest relative error ‖ρ‖/‖Y‖", minimum=0.0,
            exclusive=True, maximum=1000.0, nodes=_ESTIMATION),
    Setting("window.min_motion_rad", _D, 0.05, "quality gate: some joint must travel this far in the window",
            unit="rad", minimum=0.0, maximum=100.0, nodes=_ESTIMATION),
    Setting("window.friction_motion_rad", _D, 0.1, "friction forced essential when every joint travels this far",
            unit="rad", minimum=0.0, maximum=100.0, nodes=_ESTIMATION),
    Setting("window.refactor_every", _I, 20, "updates between recomputing the normal equations from the rows",
            minimum=1, maximum=100000, nodes=_ESTIMATION),
    Setting("window.stick_periods", _I, 10, "decimation periods left out around a slow sample (10: the filter's"
            " support)", minimum=0, maximum=1000, nodes=_ESTIMATION),
    # -- plausibility gates --
    Setting("plausibility.effort_factor", _D, 1.5, "gate: predicted torques and drive terms within this many effort"
            " limits", minimum=1.0, maximum=1e6, nodes=_PLAUSIBILITY),
    Setting("plausibility.mass_factor", _D, 10.0, "gate: inertial parameters within what this many URDF masses"
            " produce", minimum=1.0, maximum=1e6, nodes=_PLAUSIBILITY),
    # -- where the data comes from --
    Setting("topics.joint_states", _S, "joint_states", "sensor_msgs/JointState of positions, velocities (and"
            " efforts); a rosbag's names are absolute", nonempty=True, nodes=("recorder", DYNID)),
    Setting("topics.motor_currents", _S, "motor_currents", "sensor_msgs/JointState whose effort holds motor"
            " currents in A; the topics.joint_states topic itself when the driver publishes the currents in its"
            " JointState.effort (positions and currents in one message: nothing to align)", nonempty=True,
            nodes=("recorder", DYNID)),
    Setting("topics.effort_is_torque", _B, False, "joint torques are JointState.effort of topics.joint_states"
            " (gz_ros2_control); no currents", nodes=("recorder", DYNID)),
    # -- recorder --
    Setting("current_polynomial", Kind.NUMBERS, None, "current to motor torque, [Swevers2002] eq. (4): c0 N·m,"
            " c1 N·m/A, c2 N·m/A², c3 N·m/A³ per motor; unset: linear", nodes=("recorder",)),
    Setting("output_topic", _S, "recorder/samples", "aligned samples (effort: joint torque, N·m)", nonempty=True,
            nodes=("recorder",)),
    Setting("output_dir", _S, "", "directory of the recording_<YYYYmmdd_HHMMSS>.csv files; empty:"
            " $ROS_HOME/dynamic_identification/recordings (ROS_HOME: ~/.ros when unset)", nodes=("recorder",)),
    Setting("output_file", _S, "", "recording file name inside output_dir (no '..'); empty: dated",
            nodes=("recorder",)),
    Setting("tolerance_s", _D, 0.005, "largest distance of each bracketing current sample from a joint-state stamp"
            " (dynid: aligning a rosbag's topics as the recorder does)", unit="s", minimum=1e-6, maximum=1.0,
            nodes=("recorder", DYNID)),
    Setting("max_delay_s", _D, 0.5, "longest wait of a joint state for its currents, in stamp time (dynid: as"
            " tolerance_s)", unit="s", minimum=1e-3, maximum=10.0, nodes=("recorder", DYNID)),
    Setting("silent_timeout_s", _D, 0.5, "an input topic without messages this long is reported silent", unit="s",
            minimum=0.01, maximum=3600.0, nodes=("recorder",)),
    Setting("acknowledge", _B, False, "publish ~/acknowledged (builtin_interfaces/Time), the newest sample stamp"
            " taken, for a sim_robot in lockstep that waits for this node (lockstep_consumers)",
            nodes=("recorder", "estimator")),
    # -- the robot's URDF --
    Setting("urdf", _S, "", "URDF of the robot; empty: the shipped dynid_arm6.urdf",
            nodes=("excitation", "estimator", "sim_robot")),
    Setting("urdf", _S, "", "URDF instead of the one the parameter file names, with its content (robot.urdf_sha256);"
            " empty: theirs", nodes=("feedforward",)),
    # -- excitation: the plan (the excitation node and dynid excite) --
    Setting("mode", _S, "fourier", "what to play: a planned excitation or the trajectory file",
            choices=NODE_EXCITATION_MODES, nodes=("excitation",)),
    Setting("mode", _S, "fourier", "excitation to plan (dynid excite --mode overrides it)", choices=EXCITATION_MODES,
            nodes=(DYNID_EXCITE,)),
    Setting("file", _S, "", "trajectory CSV played in mode file (dynid excite --out)", nodes=("excitation",)),
    Setting("fundamental_hz", _D, 0.1, "Fourier fundamental frequency ([Volkmann2020]: 0.1 Hz)", unit="Hz",
            minimum=1e-4, maximum=100.0, nodes=_EXCITE),
    Setting("harmonics", _I, 5, "Fourier harmonics n_h ([Volkmann2020]: 5)", minimum=1, maximum=100, nodes=_EXCITE),
    Setting("periods", _I, 1, "repetitions of the trajectory", minimum=1, maximum=10000, nodes=_EXCITE),
    Setting("rate_hz", _D, 100.0, "sampling of the planned trajectory (point spacing)", unit="Hz", minimum=1.0,
            maximum=10000.0, nodes=_EXCITE),
    Setting("position_margin_rad", _D, 0.05, "distance kept from each URDF position limit", unit="rad", minimum=0.0,
            maximum=3.2, nodes=_EXCITE),
    Setting("velocity_scale", _D, 0.8, "fraction of the URDF velocity limits allowed", minimum=0.0, exclusive=True,
            maximum=1.0, nodes=_EXCITE),
    Setting("acceleration_scale", _D, 0.8, "fraction of the acceleration limits allowed", minimum=0.0,
            exclusive=True, maximum=1.0, nodes=_EXCITE),
    Setting("acceleration_limits", Kind.NUMBERS, None, "acceleration limits per joint (wins over"
            " limits.acceleration); unset: 4 /s × the velocity limit", unit="rad/s²", nodes=_EXCITE),
    Setting("jerk_scale", _D, 0.8, "fraction of the jerk limits allowed", minimum=0.0, exclusive=True, maximum=1.0,
            nodes=_EXCITE),
    Setting("effort_scale", _D, 0.9, "fraction of the effort limits a planned motion may need", minimum=0.0,
            exclusive=True, maximum=1.0, nodes=_EXCITE),
    Setting("interpolation_tolerance_rad", _D, 1e-3, "largest distance of the controller's interpolation from the"
            " plan", unit="rad", minimum=0.0, exclusive=True, maximum=0.1, nodes=_EXCITE),
    Setting("parameters_file", _S, "", "identified parameter YAML whose torques are checked against the effort"
            " limits; empty: the URDF's nominal model", nodes=_EXCITE),
    Setting("self_collision", _B, True, "check the executed motion for self-collision when the URDF has <collision>"
            " geometry", nodes=_EXCITE),
    Setting("collision_margin_m", _D, 0.01, "self-collision check: closest two links may come", unit="m", minimum=0.0,
            maximum=0.5, nodes=_EXCITE),
    Setting("collision_srdf", _S, "", "SRDF whose <disable_collisions> pairs the self-collision check leaves out;"
            " empty: none (links joined by one joint are always left out)", nodes=_EXCITE),
    Setting("optimise", _B, True, "fourier: optimise the coefficients for the condition number", nodes=_EXCITE),
    Setting("time_budget_s", _D, 300.0, "fourier, payload: wall-time cap of the optimisation; a plan the cap ends"
            " before max_evaluations depends on the machine's load, and says so", unit="s", minimum=0.0,
            exclusive=True, maximum=3600.0, nodes=_EXCITE),
    Setting("max_evaluations", _I, 5000, "fourier, payload: cost evaluations of the optimisation, so a plan is the"
            " same at any load; 0: the wall-time budget alone", minimum=0, maximum=10**9, nodes=_EXCITE),
    Setting("seed", _I, 0, "seed of random coefficients and process targets", minimum=0, maximum=_INT32,
            nodes=_EXCITE),
    Setting("workspace_lower", Kind.NUMBERS, None, "restricted workspace: lower joint positions; unset: the URDF's",
            unit="rad", nodes=_EXCITE),
    Setting("workspace_upper", Kind.NUMBERS, None, "restricted workspace: upper joint positions; unset: the URDF's",
            unit="rad", nodes=_EXCITE),
    Setting("box_min", Kind.NUMBERS, None, "end-effector box: lower corner x, y, z in the base frame; unset: none",
            unit="m", nodes=_EXCITE),
    Setting("box_max", Kind.NUMBERS, None, "end-effector box: upper corner x, y, z in the base frame; unset: none",
            unit="m", nodes=_EXCITE),
    Setting("frame", _S, None, "end-effector frame of the box and the process trajectories; empty: the last link",
            nodes=_EXCITE),
    Setting("process", _S, "pick_and_place", "process mode: pick-and-place cycles or square laps", choices=PROCESSES,
            nodes=_EXCITE),
    Setting("cycles", _I, 3, "process mode: pick-and-place cycles or square laps", minimum=1, maximum=10000,
            nodes=_EXCITE),
    Setting("tool_tilt", _D, 0.0, "process mode, pick and place: largest tilt of the tool at a pick or place point,"
            " drawn per point (parts lying askew: the wrist turns too); 0: one orientation", unit="rad", minimum=0.0,
            maximum=1.5, nodes=_EXCITE),
    # -- excitation: the node's streaming --
    Setting("output_topic", _S, "joint_trajectory", "JointTrajectory command topic", nonempty=True,
            nodes=("excitation",)),
    Setting("stream_rate_hz", _D, 10.0, "rate of the published trajectory chunks", unit="Hz", minimum=0.1,
            maximum=1000.0, nodes=("excitation",)),
    Setting("horizon_s", _D, 1.0, "duration of the points of one chunk", unit="s", minimum=0.01, maximum=60.0,
            nodes=("excitation",)),
    Setting("stale_timeout_s", _D, 0.5, "joint states older than this by their stamp or arrival refuse ~/start",
            unit="s", minimum=0.001, maximum=60.0, nodes=("excitation",)),
    Setting("autostart", _B, False, "start once the plan is ready and joint states arrive", nodes=("excitation",)),
    # -- estimator --
    Setting("input_topic", _S, "recorder/samples", "JointState samples (effort: joint torque, N·m)", nonempty=True,
            nodes=("estimator",)),
    Setting("parameters_topic", _S, "estimator/parameters", "std_msgs/String parameter YAML output (latched)",
            nonempty=True, nodes=("estimator",)),
    Setting("parameters_file", _S, "", "parameter YAML written atomically on every update; empty: none",
            nodes=("estimator",)),
    Setting("payload_topic", _S, "estimator/payload", "std_msgs/String payload YAML output of ~/identify_payload"
            " (latched)", nonempty=True, nodes=("estimator",)),
    # -- in-process payload re-identification (the estimator's ~/identify_payload, [Swevers2002]) --
    Setting("payload.frame", _S, "", "frame the payload is attached to; empty: the URDF's last frame",
            nodes=("estimator",)),
    Setting("payload.duration_s", _D, 10.0, "data collected after ~/identify_payload", unit="s", minimum=0.5,
            maximum=600.0, nodes=("estimator",)),
    Setting("payload.reference_s", _D, 10.0, "motion without the load before ~/identify_payload (the last the window"
            " took, rests not counted) that corrects the robot model where the load would absorb its error; 0: none",
            unit="s", minimum=0.0, maximum=600.0, nodes=("estimator",)),
    Setting("payload.method", _S, "ml", "maximum likelihood ([Swevers2002] eq. (18)) after the linear estimate, or"
            " the linear estimate alone", choices=PAYLOAD_METHODS, nodes=("estimator",)),
    Setting("payload.max_mass_std_percent", _D, 2.0, "refuse the payload when σ of its mass exceeds this, % of the"
            " mass", minimum=0.0, exclusive=True, maximum=1000.0, nodes=("estimator",)),
    Setting("payload.max_com_std_m", _D, 0.005, "refuse the payload when σ of a centre-of-mass coordinate exceeds"
            " this", unit="m", minimum=0.0, exclusive=True, maximum=10.0, nodes=("estimator",)),
    Setting("payload.prior_file", _S, "", "parameter YAML of the robot without load; empty: the latest published"
            " estimate", nodes=("estimator",)),
    # -- feedforward --
    Setting("parameters_file", _S, "", "parameter YAML loaded at start; empty: none", nodes=("feedforward",)),
    Setting("parameters_topic", _S, "estimator/parameters", "std_msgs/String parameter YAML input (latched); empty:"
            " parameters_file only", nodes=("feedforward",)),
    Setting("trajectory_topic", _S, "joint_trajectory", "desired JointTrajectory input", nonempty=True,
            nodes=("feedforward",)),
    Setting("output_topic", _S, "feedforward/effort", "Float64MultiArray torque output", nonempty=True,
            nodes=("feedforward",)),
    Setting("rate_hz", _D, 500.0, "publishing rate", unit="Hz", minimum=1.0, maximum=10000.0,
            nodes=("feedforward",)),
    Setting("enabled", _B, True, "publish from the start (~/enable, ~/disable switch it)", nodes=("feedforward",)),
    Setting("payload_file", _S, "", "payload YAML of a carried load loaded at start (dynid payload --out); empty:"
            " none", nodes=("feedforward",)),
    Setting("payload_topic", _S, "estimator/payload", "std_msgs/String payload YAML input (latched); empty:"
            " payload_file only", nodes=("feedforward",)),
    Setting("friction_smoothing", _D, 1000.0, "k of the Coulomb feedforward Fc tanh(k q̇) ([Volkmann2020]: 1000)",
            unit="s/rad", minimum=1e-3, maximum=1e9, nodes=("feedforward",)),
    # -- sim_robot: the simulated robot's true drive chain and sensors --
    Setting("rate_hz", _D, 1000.0, "simulation and publishing rate", unit="Hz", minimum=1.0, maximum=10000.0,
            nodes=("sim_robot",)),
    Setting("gear_ratios", Kind.NUMBERS, ARM6_GEAR_RATIOS, "true gear ratios, motor rad per joint rad, per joint",
            nodes=("sim_robot",)),
    Setting("drive_gains", Kind.NUMBERS, ARM6_DRIVE_GAINS, "true motor torque constants per joint", unit="N·m/A",
            nodes=("sim_robot",)),
    Setting("coupling", Kind.NUMBERS, None, "n×n coupling matrix, row by row; unset: identity",
            nodes=("sim_robot",)),
    Setting("rotor_inertia", Kind.NUMBERS, ARM6_ROTOR_INERTIA, "true rotor inertia Ia per joint (joint side)",
            unit="kg·m²", nodes=("sim_robot",)),
    Setting("viscous_friction", Kind.NUMBERS, ARM6_VISCOUS, "true viscous friction Fv per joint (joint side)",
            unit="N·m·s/rad", nodes=("sim_robot",)),
    Setting("coulomb_friction", Kind.NUMBERS, ARM6_COULOMB, "true Coulomb friction Fc per joint (joint side)",
            unit="N·m", nodes=("sim_robot",)),
    Setting("offset", Kind.NUMBERS, ARM6_OFFSET, "true torque offset per joint (joint side)", unit="N·m",
            nodes=("sim_robot",)),
    Setting("current_noise_std", _D, 0.02, "standard deviation of the current noise", unit="A", minimum=0.0,
            maximum=100.0, nodes=("sim_robot",)),
    Setting("velocity_noise_std", _D, 0.0, "standard deviation of the velocity noise", unit="rad/s", minimum=0.0,
            maximum=100.0, nodes=("sim_robot",)),
    Setting("encoder_counts", _I, 2**16, "motor encoder counts per revolution", minimum=1, maximum=_INT32,
            nodes=("sim_robot",)),
    Setting("kp", Kind.NUMBERS, None, "PD stiffness, 1 or n values; unset: a 10 Hz loop", unit="N·m/rad",
            nodes=("sim_robot",)),
    Setting("kd", Kind.NUMBERS, None, "PD damping, 1 or n values; unset: critical", unit="N·m·s/rad",
            nodes=("sim_robot",)),
    Setting("initial_positions", Kind.NUMBERS, None, "initial joint positions; unset: 0, or mid-range where 0 is"
            " outside the limits", unit="rad", nodes=("sim_robot",)),
    Setting("max_catch_up_s", _D, 0.25, "largest clock lag simulated in one tick", unit="s", minimum=0.001,
            maximum=10.0, nodes=("sim_robot",)),
    Setting("seed", _I, 0, "seed of the sensor noise", minimum=0, maximum=_INT32, nodes=("sim_robot",)),
    Setting("publish_clock", _B, False, "be the clock: publish /clock after every step (the other nodes run with"
            " use_sim_time)", nodes=("sim_robot",)),
    Setting("real_time_factor", _D, 1.0, "with publish_clock: most simulated seconds per wall second", minimum=0.01,
            maximum=100.0, nodes=("sim_robot",)),
    Setting("lockstep", _B, False, "with publish_clock: wait for the next trajectory chunk instead of running past"
            " one that ends moving", nodes=("sim_robot",)),
    Setting("lockstep_timeout_s", _D, 1.0, "with lockstep: longest wall-time wait for the next chunk or a consumer's"
            " acknowledgement (at least 10 s for a consumer's first; reported when hit)", unit="s", minimum=0.001,
            maximum=60.0, nodes=("sim_robot",)),
    Setting("lockstep_consumers", Kind.NAMES, None, "with lockstep: nodes whose ~/acknowledged sim_robot waits for"
            " before running more than 50 ms of samples ahead of them (recorder, estimator with acknowledge: true);"
            " unset: none", nodes=("sim_robot",)),
    Setting("payload_file", _S, "", "payload YAML of the load ~/grasp takes; empty: none", nodes=("sim_robot",)),
    Setting("payload_attached", _B, False, "carry the payload_file load from the start", nodes=("sim_robot",)),
    Setting("substeps", _I, 1, "integration steps per published sample: the integrator steps 1 / (rate_hz ×"
            " substeps)", minimum=1, maximum=100, nodes=("sim_robot",)),
)  # fmt: skip
"""Every setting of the package, once (see the module docstring)."""


def settings_of(consumer: str) -> tuple[Setting, ...]:
    """The settings ``consumer`` (a node, :data:`DYNID` or :data:`DYNID_EXCITE`) reads, in table order."""
    if consumer not in CONSUMERS:
        raise ValueError(f"consumer must be one of {list(CONSUMERS)}, got {consumer!r}")
    return tuple(setting for setting in SETTINGS if consumer in setting.nodes)


def setting(key: str, consumer: str | None = None) -> Setting:
    """The setting ``key`` of ``consumer``; without a consumer the key must name one setting only.

    Raises
    ------
    KeyError
        When no setting, or more than one without a consumer, has that key.
    """
    found = [item for item in SETTINGS if item.key == key and (consumer is None or consumer in item.nodes)]
    if len(found) != 1:
        owner = f" of {consumer}" if consumer else ""
        raise KeyError(f"{'no' if not found else 'more than one'} setting {key!r}{owner}")
    return found[0]


def default(key: str, consumer: str | None = None) -> Any:
    """The default of :func:`setting` ``(key, consumer)``."""
    return setting(key, consumer).default


def group_member(key: str) -> Setting | None:
    """The setting of :attr:`Kind.CLOSURES` whose member ``key`` is (``robot.loop_closures.<name>.<field>``), or
    ``None``."""
    for item in SETTINGS:
        if item.kind is Kind.CLOSURES and key.startswith(f"{item.key}.") and "." in key[len(item.key) + 1 :]:
            return item
    return None


SETTING = "setting"
"""Metadata key of a dataclass field filled from a setting (:func:`setting_field`)."""


def setting_field(key: str, consumer: str | None = None) -> Any:
    """A dataclass field whose default is the setting's and whose metadata names it.

    ``window_s: float = setting_field("window.window_s")``: the readers of
    :mod:`~dynamic_identification.io.config` fill every such field from its key.
    """
    item = setting(key, consumer)
    return dataclasses.field(default=item.default, metadata={SETTING: item})


NESTED = "nested"
"""Metadata key of a dataclass field holding settings of its own (:func:`nested_field`)."""

KEYS = "keys"
"""Metadata key of a nested field's settings read from other keys than its class's (:func:`nested_field`)."""


def nested_field(cls: type, **keys: str) -> Any:
    """A dataclass field holding the settings dataclass ``cls``, which the readers build too.

    ``keys`` maps a field of ``cls`` to the setting it is read from here instead of its own,
    default included: the window's ``reduction = nested_field(ReductionSettings, method="window.reduction")``
    reads its method from ``window.reduction`` (default ``sensitivity``), the offline one from
    ``estimation.reduction`` (default ``none``).
    """
    overrides = {name: setting(key) for name, key in keys.items()}
    defaults = {name: item.default for name, item in overrides.items()}
    return dataclasses.field(default_factory=lambda: cls(**defaults), metadata={NESTED: cls, KEYS: overrides})


def nested_fields(cls: type) -> dict[str, type]:
    """Field name → settings dataclass, for the fields of ``cls`` made with :func:`nested_field`."""
    return {item.name: item.metadata[NESTED] for item in dataclasses.fields(cls) if NESTED in item.metadata}


def nested_keys(cls: type, name: str) -> dict[str, Setting]:
    """Field of the nested settings → the setting it is read from instead of its own, for the field ``name`` of
    ``cls`` made with :func:`nested_field` (empty when it reads its class's own keys)."""
    overrides: dict[str, Setting] = next(item for item in dataclasses.fields(cls) if item.name == name).metadata[KEYS]
    return overrides


def field_settings(cls: type) -> dict[str, Setting]:
    """Field name → setting, for the fields of dataclass ``cls`` made with :func:`setting_field`."""
    return {item.name: item.metadata[SETTING] for item in dataclasses.fields(cls) if SETTING in item.metadata}


def check_fields(instance: object) -> None:
    """``IdentificationError`` naming the first field made with :func:`setting_field` whose number is out of bounds
    or whose string is not one of its choices, or made with :func:`nested_field` that does not hold its settings
    class (``reduction="sensitivity"`` for ``ReductionSettings(method="sensitivity")``: refused where it is made,
    not at the first use)."""
    for name, nested in nested_fields(type(instance)).items():
        value = getattr(instance, name)
        if not isinstance(value, nested):
            raise IdentificationError(
                f"{name} must be a {nested.__name__} (e.g. {nested.__name__}(...)), got {value!r}"
            )
    for name, item in field_settings(type(instance)).items():
        value = getattr(instance, name)
        if item.choices and value not in item.choices:
            raise IdentificationError(f"{name} must be one of {', '.join(item.choices)}, got {value!r}")
        if item.numeric and not isinstance(value, bool) and isinstance(value, (int, float)):
            problem = item.bound_problem(value)
            if problem is not None:
                raise IdentificationError(f"{name} must be {problem}, got {value!r}")


__all__ = [
    "AUTO_CUTOFF_HZ",
    "CLOSURE_FIELDS",
    "CLOSURE_TYPES",
    "CONSUMERS",
    "DYNID",
    "DYNID_EXCITE",
    "EXCITATION_MODES",
    "JOINT_ERROR_WARNING",
    "METHODS",
    "NODES",
    "NODE_EXCITATION_MODES",
    "PAYLOAD_METHODS",
    "PROCESSES",
    "REDUCTIONS",
    "REGRESSION_MODELS",
    "SETTINGS",
    "STAMP_SOURCES",
    "UNCERTAINTIES",
    "TORQUE_DELAYS",
    "VELOCITY_SOURCES",
    "Kind",
    "Setting",
    "check_fields",
    "default",
    "field_settings",
    "group_member",
    "nested_field",
    "nested_fields",
    "nested_keys",
    "setting",
    "setting_field",
    "settings_of",
]
