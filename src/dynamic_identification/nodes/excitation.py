"""``excitation``: plays an excitation trajectory to the robot's trajectory controller.

Subscribes ``/joint_states`` (``sensor_msgs/JointState``); publishes
``trajectory_msgs/JointTrajectory`` on ``output_topic`` (default
``/joint_trajectory``, what ``joint_trajectory_controller`` and ``sim_robot``
take) and ``diagnostic_msgs/DiagnosticArray`` on ``/diagnostics``; serves
``~/start`` and ``~/stop`` (``std_srvs/Trigger``).

At start-up the trajectory is planned in a background thread with
:func:`~dynamic_identification.core.excitation.plan.plan_excitation` (modes
``fourier``, ``segmented``, ``process``, and ``payload``: the last joints only, for a
quick payload experiment, [Swevers2002] §4.2, load on ``frame``) or read from a trajectory CSV (mode
``file``) and checked against the limits; the executor never waits for it, and its stages
and the search's budget spent are logged at INFO (``planning: …``, a line per stage, then at
most every 10 % or 5 s: :class:`~dynamic_identification.core.progress.ThrottledLines`). Destroying
the node (``ros2 launch`` stopping it, Ctrl-C, a test or a composed process destroying it)
cancels the planning (:mod:`~dynamic_identification.core.cancellation`) and waits at most
:data:`PLANNER_STOP_S` for the thread to end; a cancelled plan is neither published nor
reported as an error (one info line says it was cancelled).
``~/start`` refuses while planning, when the joint states are stale or lack a
joint, when the robot moves, or when the motion would leave the limits.
Otherwise the played motion is a C² ramp from the measured position (at rest)
to the trajectory's first state, the trajectory (already repeated ``periods``
times), and a C² ramp to rest; it passes
:func:`~dynamic_identification.core.excitation.safety.check_trajectory` as a
whole. It is streamed in overlapping chunks of ``horizon_s`` at
``stream_rate_hz`` (``header.stamp`` = playback start + time of the chunk's
first point). ``~/stop`` replaces the rest of the motion with
:func:`~dynamic_identification.core.excitation.safety.stop_ramp` from the state
being commanded now.

A closed-loop robot (``robot.loop_closures.<name>.*`` and ``robot.actuated_joints``,
[Briot2012] §2) is excited through its actuated joints, the same planner and checks taking its
mechanism (:mod:`~dynamic_identification.core.mechanism.seam`): the plan is a Fourier series (mode
``fourier``) or a trajectory file of the actuated joints, the joint states and the streamed
trajectory are those of the actuated joints, and the played motion, ramps included, must keep the
passive joints' limits, the distance to singularities and the motors' effort limits
(:func:`~dynamic_identification.core.excitation.constraints.check_executed_motion`, which checks a
serial robot's played motion as well).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from dynamic_identification.core.cancellation import NEVER, Cancellation
from dynamic_identification.core.errors import IdentificationError, ModelError, PlanningCancelled
from dynamic_identification.core.excitation.collision import SelfCollisionModel, self_collision_summary
from dynamic_identification.core.excitation.constraints import (
    MechanismLimits,
    as_mechanism_limits,
    check_executed_motion,
)
from dynamic_identification.core.excitation.plan import ExcitationPlan, plan_excitation
from dynamic_identification.core.excitation.safety import (
    DEFAULT_INTERPOLATION_TOLERANCE_RAD,
    JointLimits,
    TorqueModel,
    check_consistency,
    check_sampling,
    check_trajectory,
    limit_usage,
    ramp,
    resample,
    stop_ramp,
)
from dynamic_identification.core.excitation.settings import ExcitationSettings
from dynamic_identification.core.excitation.trajectory import SampledTrajectory, concatenate, interpolate_trajectory
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel, load_robot
from dynamic_identification.core.mechanism.seam import Mechanism, SerialMechanism, mechanism_of
from dynamic_identification.core.progress import ThrottledLines
from dynamic_identification.core.settings_schema import NODE_EXCITATION_MODES, setting_field
from dynamic_identification.io.config import (
    IdentificationConfig,
    config_from_parameters,
    excitation_settings_from_parameters,
    is_closed_loop_key,
)
from dynamic_identification.io.parameters import identified_torque_model
from dynamic_identification.io.trajectory import read_trajectory_csv
from dynamic_identification.nodes.conversions import (
    NS_PER_S,
    arrays_from_joint_state,
    implausible_joint_state,
    joint_trajectory_message,
)
from dynamic_identification.nodes.guarded import GuardedNode, status_message
from dynamic_identification.nodes.parameters import node_parameters, node_robot, read_parameters, urdf_or_shipped
from dynamic_identification.nodes.qos import COMMAND_QOS, SENSOR_QOS
from dynamic_identification.nodes.runner import run_node

NODE_MODES: tuple[str, ...] = NODE_EXCITATION_MODES
START_LEAD_S = 0.1
"""Playback starts this long after ``~/start``, so the first chunk reaches the controller in time."""
REST_VELOCITY_FRACTION = 0.05
"""``~/start`` refuses while a joint moves faster than this fraction of its velocity limit."""
PLANNER_STOP_S = 1.0
"""``destroy_node`` waits this long (s) for a cancelled planner thread: it stops at its next poll, a
cost evaluation (milliseconds) or a chunk of a check (tenths of a second) away. Only the set-up of a
search polls nothing (a QR of the base parameters: milliseconds, seconds when BLAS threads compete on
a loaded machine); a thread still in it is said in a warning and ends at its first poll."""

NODE = "excitation"


@dataclass(frozen=True)
class ExcitationConfig:
    """The node's parameters, read once at start (units and ranges: the settings schema).

    ``urdf`` empty means the shipped arm, ``joints`` unset every 1-DoF joint of the URDF;
    ``settings`` are the planner's (the node's parameters of
    :data:`~dynamic_identification.io.config.EXCITATION_KEYS`, read as ``dynid excite`` reads
    them), ``drive_chain_parameters`` the ``drive_chain.*`` and ``drive_terms.*`` parameters
    as set (shared ``/**`` block of the config).
    """

    urdf: str = setting_field("urdf", NODE)
    joints: tuple[str, ...] | None = setting_field("joints", NODE)
    mode: str = setting_field("mode", NODE)
    file: str = setting_field("file", NODE)
    output_topic: str = setting_field("output_topic", NODE)
    stream_rate_hz: float = setting_field("stream_rate_hz", NODE)
    horizon_s: float = setting_field("horizon_s", NODE)
    stale_timeout_s: float = setting_field("stale_timeout_s", NODE)
    autostart: bool = setting_field("autostart", NODE)
    parameters_file: str = setting_field("parameters_file", NODE)
    settings: ExcitationSettings = field(default_factory=ExcitationSettings)
    drive_chain_parameters: tuple[tuple[str, object], ...] = ()
    closed_loop: tuple[tuple[str, object], ...] = ()
    """``robot.actuated_joints`` and ``robot.loop_closures.*`` as set (empty: a serial robot)."""


_PARAMETERS = node_parameters(NODE)


def declare_and_read(node: Node) -> ExcitationConfig:
    """Declare every parameter with its descriptor and read them once into a config."""
    reader = read_parameters(node, NODE, _PARAMETERS)
    config = reader.build(ExcitationConfig)
    settings = excitation_settings_from_parameters(
        reader.parameters, source=reader.source, mode="fourier" if config.mode == "file" else config.mode
    )
    drive = reader.set_among(lambda key: key.startswith(("drive_chain.", "drive_terms.")))
    return replace(
        config,
        urdf=urdf_or_shipped(config.urdf),
        settings=settings,
        drive_chain_parameters=drive,
        closed_loop=reader.set_among(is_closed_loop_key),
    )


@dataclass(frozen=True)
class ExcitationSetup:
    """What a validated configuration builds: the robot, the planner's inputs and the limits."""

    robot: RobotModel
    """The controlled joints' model: the joint states read and the trajectory streamed (a closed-loop robot's
    actuated joints)."""
    mechanism: Mechanism
    """The robot's mechanism: the serial robot itself, or the closed-loop mechanism whose passive motion the
    checks complete."""
    drive_chain: DriveChain
    drive_terms: DriveTerms
    settings: ExcitationSettings
    limits: MechanismLimits
    torque_model: TorqueModel
    collision: SelfCollisionModel | None = None
    """The self-collision check of the URDF's collision geometry, of the whole tree (``None``: none, or switched
    off)."""


def build_setup(config: ExcitationConfig) -> ExcitationSetup:
    """Validate ``config``; ``ValueError`` names the bad parameter.

    A closed-loop robot (``robot.loop_closures``, ``robot.actuated_joints``) is planned and streamed through its
    actuated joints, in mode ``fourier`` or ``file``; the rest of its tree is checked.
    """
    if config.mode == "file" and not config.file:
        raise ValueError("parameter 'file' must name a trajectory CSV in mode 'file'")
    if not config.horizon_s > 1.0 / config.stream_rate_hz:
        raise ValueError(
            f"parameter 'horizon_s' ({config.horizon_s} s) must exceed the chunk period 1 / stream_rate_hz"
            f" ({1.0 / config.stream_rate_hz:g} s), or the controller runs out of points between chunks"
        )
    settings = config.settings
    mechanism: Mechanism
    if config.closed_loop:
        if config.mode not in ("fourier", "file"):
            raise ValueError(
                f"parameter 'mode' is {config.mode!r}: a closed-loop robot is excited by a Fourier series of its"
                " actuated joints ('fourier') or a trajectory file of them ('file')"
            )
        settings = replace(settings, mode="fourier")
        try:
            shared = _drive_config(config, config.joints or ())
            mechanism = shared.closed_loop_model(config.urdf)
            robot = load_robot(config.urdf, mechanism.actuated_joint_names)
        except IdentificationError as error:
            raise ValueError(f"invalid closed-loop excitation parameter: {error}") from error
    else:
        robot = node_robot(config.urdf, config.joints)
        mechanism = SerialMechanism(robot)
    for name in (
        "workspace_lower",
        "workspace_upper",
        "acceleration_limits",
        "jerk_limits",
        "effort_limits",
        "box_min",
        "box_max",
    ):
        value = getattr(settings, name)
        sizes = (3,) if name.startswith("box") else (mechanism.n_actuated, mechanism.n_tree)
        if value is not None and len(value) not in sizes:
            raise ValueError(
                f"parameter '{name}' needs {' or '.join(map(str, sorted(set(sizes))))} values, got {list(value)}"
            )
    try:
        limits = MechanismLimits.from_settings(mechanism, settings)
        collision = settings.collision_model(mechanism.robot, joined=mechanism.closure_joints)
    except IdentificationError as error:
        raise ValueError(f"invalid excitation parameter: {error}") from error
    try:
        if not config.closed_loop:
            shared = _drive_config(config, robot.joint_names)
        drive_chain = shared.drive_chain(mechanism.n_actuated)
    except IdentificationError as error:
        raise ValueError(f"parameter 'drive_chain.*': {error}") from error
    nominal = TorqueModel.nominal(mechanism, drive_chain, shared.drive_terms)
    return ExcitationSetup(
        robot=robot,
        mechanism=mechanism,
        drive_chain=drive_chain,
        drive_terms=shared.drive_terms,
        settings=settings,
        limits=limits,
        torque_model=_torque_model(nominal, config.parameters_file, mechanism),
        collision=collision,
    )


def _drive_config(config: ExcitationConfig, joints: Sequence[str]) -> IdentificationConfig:
    """The ``drive_chain.*``, ``drive_terms.*`` and ``robot.*`` parameters (none for a serial robot) of ``joints``,
    read as ``dynid`` reads a configuration; ``IdentificationError`` when they do not fit."""
    return config_from_parameters(
        {"joints": list(joints), **dict(config.drive_chain_parameters), **dict(config.closed_loop)},
        source="excitation parameters",
    )


def _torque_model(nominal: TorqueModel, path: str, mechanism: Mechanism) -> TorqueModel:
    """The torque model the plan is checked with: ``nominal``, or that of the identified parameter file ``path``
    (parameter ``parameters_file``) when one is named; its errors name the parameter (``ValueError``)."""
    if not path:
        return nominal
    try:
        return identified_torque_model(path, mechanism)
    except IdentificationError as error:
        raise ValueError(f"parameter 'parameters_file': {error}") from error


def plan_from_file(
    path: str,
    robot: RobotModel | Mechanism,
    limits: JointLimits | MechanismLimits,
    torque_model: TorqueModel | None = None,
    *,
    tolerance_rad: float = DEFAULT_INTERPOLATION_TOLERANCE_RAD,
    collision: SelfCollisionModel | None = None,
    cancellation: Cancellation = NEVER,
) -> ExcitationPlan:
    """A trajectory CSV of ``robot``'s controlled joints, put in their order and checked as the controller will
    execute it.

    Its positions must agree with its velocities and accelerations
    (:func:`~dynamic_identification.core.excitation.safety.check_consistency`), and the
    controller's quintic through its points must keep ``limits``
    (:func:`~dynamic_identification.core.excitation.constraints.check_executed_motion`): the
    controlled joints' limits, the torques ``torque_model`` predicts (default: the URDF's
    nominal model on a direct drive) within the effort limits, a closed-loop robot's passive
    joints' limits and distance to singularities, and, with ``collision`` (the whole tree's),
    no two links closer than its margin. ``cancellation`` is polled through the checks of a
    long file.

    Raises
    ------
    IdentificationError
        When the file cannot be read or lacks a joint; ``InconsistentTrajectoryError``
        naming joint, time and sizes; ``LimitViolationError`` naming the first violation.
    PlanningCancelled
        When ``cancellation`` is requested before the file is checked.
    """
    mechanism = mechanism_of(robot)
    checked_limits = as_mechanism_limits(limits)
    loaded = read_trajectory_csv(path)
    position = {name: i for i, name in enumerate(loaded.joint_names)}
    missing = [name for name in mechanism.actuated_joint_names if name not in position]
    if missing:
        raise ModelError(
            f"joints {missing} of the robot model are missing from the data (has {list(loaded.joint_names)})"
        )
    order = [position[name] for name in mechanism.actuated_joint_names]
    trajectory = SampledTrajectory(
        loaded.time - loaded.time[0],
        loaded.q[:, order],
        loaded.dq[:, order],
        loaded.ddq[:, order],
        mechanism.actuated_joint_names,
    )
    check_consistency(trajectory, checked_limits.actuated, tolerance_rad=tolerance_rad)
    if torque_model is None:
        torque_model = TorqueModel.nominal(mechanism, DriveChain.create(mechanism.n_actuated), DriveTerms())
    check = check_executed_motion(
        mechanism, trajectory, checked_limits, torque_model=torque_model, collision=collision, cancellation=cancellation
    )
    description = f"trajectory file {path}, {trajectory.duration_s:g} s"
    if check.singularity_ratio is not None:
        description += f", closure σ_min/σ_max >= {check.singularity_ratio:.2f} of its reference value"
    return ExcitationPlan(
        trajectory=trajectory,
        limits=checked_limits.actuated,
        usage=limit_usage(trajectory, checked_limits.actuated, cancellation=cancellation),
        condition_number=None,
        description=description,
        torque_usage=check.torque_usage,
        torque_source=torque_model.source,
    )


def _part(trajectory: SampledTrajectory, start: int, stop: int | None) -> SampledTrajectory:
    index = slice(start, stop)
    return SampledTrajectory(
        trajectory.time[index],
        trajectory.q[index],
        trajectory.dq[index],
        trajectory.ddq[index],
        trajectory.joint_names,
    )


def playback_trajectory(
    trajectory: SampledTrajectory,
    q_now: np.ndarray,
    limits: JointLimits,
    *,
    rate_hz: float,
    tolerance_rad: float = DEFAULT_INTERPOLATION_TOLERANCE_RAD,
    ramp_limits: JointLimits | None = None,
) -> SampledTrajectory:
    """The motion of the controlled joints played by ``~/start``: ramp in from rest at ``q_now``, ``trajectory``,
    ramp out to rest.

    Both ramps are C² quintics (:func:`ramp`, :func:`stop_ramp`); the result is
    sampled every ``1 / rate_hz`` from 0 (the controller's quintic through the
    trajectory's points where it is sampled differently). The controller's motion
    through the result keeps ``limits`` (:func:`check_trajectory`) and stays within
    ``tolerance_rad`` of the motion through the original points when resampled
    (:func:`check_sampling`). The ramps are fitted to ``ramp_limits`` (default ``limits``).
    :func:`checked_playback` checks the rest of what the robot must keep.

    Raises
    ------
    LimitViolationError, SamplingRateError
        Naming the first violation when the motion leaves ``limits``.
    """
    first = (trajectory.q[0], trajectory.dq[0], trajectory.ddq[0])
    last = (trajectory.q[-1], trajectory.dq[-1], trajectory.ddq[-1])
    rest = np.zeros_like(q_now)
    fitted = limits if ramp_limits is None else ramp_limits
    ramp_in = ramp((np.asarray(q_now, dtype=float), rest, rest), first, fitted, rate_hz=rate_hz)
    ramp_out = stop_ramp(last, fitted, rate_hz=rate_hz)
    whole = concatenate([_part(ramp_in, 0, -1), trajectory.shifted(-trajectory.time[0]), _part(ramp_out, 1, None)])
    step = 1.0 / rate_hz
    if np.allclose(np.diff(whole.time), step, rtol=0.0, atol=1e-9):
        check_trajectory(whole, limits)
    else:
        native, whole = whole, resample(whole, rate_hz)
        check_sampling(whole, native, limits, rate_hz=rate_hz, tolerance_rad=tolerance_rad)
    return whole


RAMP_SLOWDOWNS: tuple[float, ...] = (1.0, 0.75, 0.5)
"""Fractions of the controlled joints' velocity, acceleration and jerk limits the ramps are fitted to, in turn,
until the played motion keeps every limit (a closed-loop robot's passive joints' too)."""


def checked_playback(
    trajectory: SampledTrajectory,
    q_now: np.ndarray,
    robot: RobotModel | Mechanism,
    limits: JointLimits | MechanismLimits,
    *,
    rate_hz: float,
    torque_model: TorqueModel | None = None,
    tolerance_rad: float = DEFAULT_INTERPOLATION_TOLERANCE_RAD,
    collision: SelfCollisionModel | None = None,
) -> SampledTrajectory:
    """:func:`playback_trajectory`, ramps included checked as the controller executes them
    (:func:`~dynamic_identification.core.excitation.constraints.check_executed_motion`): with ``torque_model``
    the effort limits, a closed-loop robot's passive limits and distance to singularities, and with
    ``collision`` (the whole tree's) self-collision. Ramps are fitted to the controlled joints' limits times
    each of :data:`RAMP_SLOWDOWNS` in turn.

    Raises
    ------
    IdentificationError
        The violation of the fastest ramps (time, joint or closure) when none passes.
    """
    mechanism = mechanism_of(robot)
    checked_limits = as_mechanism_limits(limits)
    failures: list[IdentificationError] = []
    for factor in RAMP_SLOWDOWNS:
        try:
            motion = playback_trajectory(
                trajectory,
                q_now,
                checked_limits.actuated,
                rate_hz=rate_hz,
                tolerance_rad=tolerance_rad,
                ramp_limits=checked_limits.actuated.slower(factor),
            )
            check_executed_motion(mechanism, motion, checked_limits, torque_model=torque_model, collision=collision)
        except IdentificationError as error:
            failures.append(error)
            continue
        return motion
    raise failures[0]


def chunk_range(times_s: np.ndarray, elapsed_s: float, horizon_s: float) -> tuple[int, int]:
    """Indices ``[k0, k1)`` of the points to publish at ``elapsed_s``: from the last point
    at or before it (the controller interpolates from there) to ``horizon_s`` ahead, at least two points."""
    n = times_s.shape[0]
    k0 = int(np.clip(np.searchsorted(times_s, elapsed_s, side="right") - 1, 0, n - 1))
    k1 = int(np.searchsorted(times_s, elapsed_s + horizon_s, side="right"))
    return k0, max(k1, min(k0 + 2, n))


@dataclass(frozen=True)
class _Playback:
    trajectory: SampledTrajectory
    start_ns: int
    stopping: bool = False

    def elapsed_s(self, now_ns: int) -> float:
        return (now_ns - self.start_ns) / NS_PER_S

    def state_at(self, now_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t = self.trajectory
        if t.time.shape[0] == 1:
            return t.q[0], t.dq[0], t.ddq[0]
        return interpolate_trajectory(t.time, t.q, t.dq, t.ddq, self.elapsed_s(now_ns))


class ExcitationNode(GuardedNode):
    """Plans an excitation trajectory and streams it to a ``JointTrajectory`` controller on request."""

    def __init__(self, *, node_name: str = "excitation", **kwargs: object) -> None:
        super().__init__(node_name, **kwargs)
        # Before anything can fail: destroy_node works whatever __init__ reached.
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._planner: threading.Thread | None = None
        self.config = declare_and_read(self)
        setup = build_setup(self.config)
        self.robot = setup.robot
        self.mechanism = setup.mechanism
        self.settings = setup.settings
        self.mechanism_limits = setup.limits
        self.limits = setup.limits.actuated
        self.torque_model = setup.torque_model
        self.collision = setup.collision
        self._names = list(self.robot.joint_names)
        self._plan: ExcitationPlan | None = None
        self._plan_error: str | None = None
        self._playback: _Playback | None = None
        self._state = "planning"
        self._refusal: str | None = None
        self._joint_state: tuple[int, int, np.ndarray, np.ndarray | None] | None = None
        """Arrival time (node clock, ns), ``header.stamp`` (ns), positions, velocities of the last joint state."""
        self._joint_state_error: str | None = None
        self._autostarted = False
        self._trajectory = self.create_publisher(JointTrajectory, self.config.output_topic, COMMAND_QOS)
        self.create_subscription(JointState, "joint_states", self._on_joint_state, SENSOR_QOS)
        self.create_service(Trigger, "~/start", self._on_start)
        self.create_service(Trigger, "~/stop", self._on_stop)
        self.create_timer(1.0 / self.config.stream_rate_hz, self._on_stream)
        self.start_diagnostics(self.diagnostic_status, stamp_ns=self._now_ns)
        # A daemon still, so that an interpreter that exits without destroy_node is not held by it.
        self._planner = threading.Thread(
            target=self._run_planner, args=(setup,), name="excitation_planner", daemon=True
        )
        self._planner.start()
        self.get_logger().info(
            f"planning a '{self.config.mode}' excitation of {self._names} ({self.config.urdf});"
            f" streaming to {self.config.output_topic}"
        )

    @property
    def joint_names(self) -> list[str]:
        return list(self._names)

    @property
    def state(self) -> str:
        """``planning``, ``ready``, ``running``, ``stopping``, ``idle`` or ``failed``."""
        with self._lock:
            return self._state

    @property
    def plan(self) -> ExcitationPlan | None:
        with self._lock:
            return self._plan

    def wait_for_plan(self, timeout_s: float) -> bool:
        """Block the caller (not the executor) until planning ended; ``True`` when it did."""
        planner = self._planner
        if planner is None:
            return True
        planner.join(timeout_s)
        return not planner.is_alive()

    def destroy_node(self) -> None:
        """Cancel the planning, wait at most :data:`PLANNER_STOP_S` for the planner thread, then destroy the node.

        After the request the planner thread touches nothing of the node: it publishes its
        result and logs only under the lock, and only while no cancellation was requested.
        """
        with self._lock:
            self._cancel.set()
        planner = self._planner
        if planner is not None and planner.is_alive():
            self.get_logger().info("destroyed while planning: planning cancelled")
            planner.join(PLANNER_STOP_S)
            if planner.is_alive():
                self.get_logger().warning(
                    f"the planner thread did not stop within {PLANNER_STOP_S:g} s; it ends at its next check and"
                    " publishes nothing"
                )
        super().destroy_node()

    def _now_ns(self) -> int:
        return int(self.get_clock().now().nanoseconds)

    def _run_planner(self, setup: ExcitationSetup) -> None:
        """Plan in the background; publish the plan or the refusal unless the node was destroyed meanwhile."""
        try:
            plan = self._planned(setup)
        except PlanningCancelled:
            return  # destroy_node asked for it and said so
        except Exception as error:  # noqa: BLE001 - a planner thread that dies silently would leave "planning" forever
            with self._lock:
                if self._cancel.is_set():
                    return
                self._plan_error = str(error)
                self._state = "failed"
                self.get_logger().error(f"refusing the '{self.config.mode}' excitation: {error}")
            return
        with self._lock:
            if self._cancel.is_set():
                return
            self._plan = plan
            if self._state == "planning":
                self._state = "ready"
            condition = "" if plan.condition_number is None else f", condition number {plan.condition_number:.4g}"
            checked = f"; {plan.self_collision}" if plan.self_collision else ""
            self.get_logger().info(f"ready: {plan.description}, {plan.trajectory.duration_s:g} s{condition}{checked}")
            for warning in plan.warnings:
                self.get_logger().warning(warning)

    def _planned(self, setup: ExcitationSetup) -> ExcitationPlan:
        """The plan of the node's mode; :class:`PlanningCancelled` once :meth:`destroy_node` asked."""
        cancellation = Cancellation(self._cancel.is_set, progress=ThrottledLines(self._log_progress))
        if self.config.mode == "file":
            plan = plan_from_file(
                self.config.file,
                setup.mechanism,
                setup.limits,
                setup.torque_model,
                tolerance_rad=setup.settings.interpolation_tolerance_rad,
                collision=setup.collision,
                cancellation=cancellation,
            )
            return replace(
                plan, self_collision=self_collision_summary(setup.collision, enabled=setup.settings.self_collision)
            )
        return plan_excitation(
            setup.mechanism,
            setup.drive_chain,
            setup.drive_terms,
            setup.settings,
            torque_model=setup.torque_model,
            collision=setup.collision,
            margin=setup.limits.singularity_margin,
            cancellation=cancellation,
        )

    def _log_progress(self, line: str) -> None:
        """A line of the planning's progress at INFO (throttled: a stage, then every 10 % or 5 s), from the planner
        thread; under the lock and only while no cancellation was requested, as the plan itself."""
        with self._lock:
            if not self._cancel.is_set():
                self.get_logger().info(f"planning: {line}")

    def _on_joint_state(self, message: JointState) -> None:
        try:
            _, q, dq, _ = arrays_from_joint_state(message, self._names)
        except IdentificationError as error:
            self._joint_state_error = str(error)
            self.count_refusal("joint_states", self._joint_state_error)
            return
        if q is None:
            self._joint_state_error = "joint_states carries no positions"
            self.count_refusal("joint_states", self._joint_state_error)
            return
        problem = implausible_joint_state(self.robot, q, dq)
        if problem is not None:
            self._joint_state_error = problem
            self.count_refusal("joint_states", problem)
            return
        self._joint_state_error = None
        stamp_ns = message.header.stamp.sec * NS_PER_S + message.header.stamp.nanosec
        self._joint_state = (self._now_ns(), stamp_ns, q, dq)

    def _refuse(self, reason: str) -> Trigger.Response:
        self._refusal = reason
        self.get_logger().warning(f"not starting: {reason}")
        self.publish_diagnostics()
        return Trigger.Response(success=False, message=reason)

    def _measured_rest_position(self, now_ns: int) -> tuple[np.ndarray | None, str]:
        """The measured position when it is fresh and the robot is at rest, else why not.

        Fresh means both received and stamped within ``stale_timeout_s`` of the node
        clock: a zero stamp, a stamp in the future or an old stamp is stale whenever it
        arrived (a driver that replays or a clock that is off must not start motion).
        """
        if self._joint_state_error is not None:
            return None, f"joint states are unusable: {self._joint_state_error}"
        if self._joint_state is None:
            return None, "joint states are stale: none received on joint_states"
        received_ns, stamp_ns, q, dq = self._joint_state
        timeout = self.config.stale_timeout_s
        age_s = (now_ns - received_ns) / NS_PER_S
        if age_s > timeout:
            return None, f"joint states are stale: the last arrived {age_s:.3f} s ago (stale_timeout_s = {timeout} s)"
        if stamp_ns == 0:
            return None, "joint states are stale: header.stamp is 0, so their age cannot be told"
        stamp_age_s = (now_ns - stamp_ns) / NS_PER_S
        if stamp_age_s > timeout:
            return (
                None,
                f"joint states are stale: the last is stamped {stamp_age_s:.3f} s before the node clock"
                f" (stale_timeout_s = {timeout} s; use_sim_time must match the driver's clock)",
            )
        if stamp_age_s < -timeout:
            return (
                None,
                f"joint states are stale: the last is stamped {-stamp_age_s:.3f} s after the node clock"
                f" (stale_timeout_s = {timeout} s; use_sim_time must match the driver's clock)",
            )
        if dq is not None:
            moving = np.abs(dq) > REST_VELOCITY_FRACTION * self.limits.velocity
            if moving.any():
                joint = int(np.argmax(moving))
                return None, f"the robot is moving: {self._names[joint]} at {dq[joint]:.3g} rad/s"
        return q, ""

    def _on_start(self, _request: Trigger.Request, _response: Trigger.Response) -> Trigger.Response:
        return self._start()

    def _start(self) -> Trigger.Response:
        with self._lock:
            plan, plan_error, state = self._plan, self._plan_error, self._state
        if plan_error is not None:
            return self._refuse(f"no trajectory: {plan_error}")
        if plan is None:
            return self._refuse("still planning the trajectory")
        if state in ("running", "stopping"):
            return Trigger.Response(success=False, message=f"already {state}")
        now_ns = self._now_ns()
        q_now, reason = self._measured_rest_position(now_ns)
        if q_now is None:
            return self._refuse(reason)
        try:
            motion = checked_playback(
                plan.trajectory,
                q_now,
                self.mechanism,
                self.mechanism_limits,
                rate_hz=self.settings.rate_hz,
                torque_model=self.torque_model,
                tolerance_rad=self.settings.interpolation_tolerance_rad,
                collision=self.collision,
            )
        except IdentificationError as error:
            return self._refuse(f"the motion fails the safety check: {error}")
        # The checks take time (a closed-loop robot's completion): playback starts from the clock after them.
        now_ns = self._now_ns()
        self._playback = _Playback(motion, now_ns + round(START_LEAD_S * NS_PER_S))
        self._refusal = None
        with self._lock:
            self._state = "running"
        self._publish_chunk(now_ns)
        self.publish_diagnostics()
        message = f"playing {plan.description}, {motion.duration_s:.3f} s with ramps"
        self.get_logger().info(message)
        return Trigger.Response(success=True, message=message)

    def _on_stop(self, _request: Trigger.Request, _response: Trigger.Response) -> Trigger.Response:
        playback = self._playback
        if playback is None:
            return Trigger.Response(success=True, message=f"nothing to stop ({self.state})")
        if playback.stopping:
            return Trigger.Response(success=True, message="already stopping")
        now_ns = self._now_ns()
        state = playback.state_at(now_ns)
        try:
            motion = stop_ramp(state, self.limits, rate_hz=self.settings.rate_hz)
        except IdentificationError as error:
            # Only a commanded state outside the limits has no stop ramp; hold it rather than keep moving.
            self.get_logger().error(f"no stop ramp within the limits ({error}); holding the commanded position")
            rest = np.zeros((1, len(self._names)))
            motion = SampledTrajectory(np.zeros(1), state[0][None], rest, rest, self.robot.joint_names)
        self._playback = _Playback(motion, now_ns, stopping=True)
        with self._lock:
            self._state = "stopping"
        self._trajectory.publish(
            joint_trajectory_message(self._names, motion.time, motion.q, motion.dq, motion.ddq, stamp_ns=now_ns)
        )
        self.publish_diagnostics()
        message = f"stopping within {motion.duration_s:.3f} s"
        self.get_logger().info(message)
        return Trigger.Response(success=True, message=message)

    def _publish_chunk(self, now_ns: int) -> None:
        playback = self._playback
        if playback is None:
            return
        trajectory = playback.trajectory
        k0, k1 = chunk_range(trajectory.time, playback.elapsed_s(now_ns), self.config.horizon_s)
        offset_s = float(trajectory.time[k0])
        self._trajectory.publish(
            joint_trajectory_message(
                self._names,
                trajectory.time[k0:k1] - offset_s,
                trajectory.q[k0:k1],
                trajectory.dq[k0:k1],
                trajectory.ddq[k0:k1],
                stamp_ns=playback.start_ns + round(offset_s * NS_PER_S),
            )
        )

    def _on_stream(self) -> None:
        now_ns = self._now_ns()
        playback = self._playback
        if playback is None:
            if self.config.autostart and not self._autostarted and self.plan is not None:
                q_now, _ = self._measured_rest_position(now_ns)
                if q_now is not None:
                    self._autostarted = True
                    self._start()
            return
        if playback.elapsed_s(now_ns) > playback.trajectory.time[-1]:
            self._playback = None
            with self._lock:
                self._state = "idle"
            self.get_logger().info("excitation finished" if not playback.stopping else "stopped at rest")
            self.publish_diagnostics()
            return
        if not playback.stopping:
            self._publish_chunk(now_ns)

    def diagnostic_status(self) -> DiagnosticStatus:
        """One ``DiagnosticStatus`` named ``excitation`` with the state, progress and limit usage."""
        with self._lock:
            state, plan, plan_error = self._state, self._plan, self._plan_error
        playback = self._playback
        level = DiagnosticStatus.OK
        message = state
        if plan_error is not None:
            level, message = DiagnosticStatus.ERROR, f"refused: {plan_error}"
        elif self._refusal is not None and playback is None:
            level, message = DiagnosticStatus.WARN, f"refused: {self._refusal}"
        values = {"mode": self.config.mode, "state": state, "joints": " ".join(self._names)}
        elapsed = duration = progress = 0.0
        if playback is not None:
            duration = playback.trajectory.duration_s
            elapsed = float(np.clip(playback.elapsed_s(self._now_ns()), 0.0, duration))
            progress = elapsed / duration if duration > 0.0 else 1.0
        elif state == "idle":
            progress = 1.0
        values.update(progress=f"{progress:.4f}", elapsed_s=f"{elapsed:.3f}", duration_s=f"{duration:.3f}")
        if plan is not None:
            values["trajectory_s"] = f"{plan.trajectory.duration_s:.3f}"
            values["description"] = plan.description
            values["condition_number"] = "" if plan.condition_number is None else f"{plan.condition_number:.6g}"
            for quantity in ("position", "velocity", "acceleration"):
                usage = getattr(plan.usage, quantity)
                values[f"max_{quantity}_usage"] = f"{float(np.max(usage)):.4f}"
        return status_message(level, "excitation", message, values)


def main(args: Sequence[str] | None = None) -> None:
    """Entry point of ``ros2 run dynamic_identification excitation``."""
    run_node("excitation", ExcitationNode, args)


if __name__ == "__main__":
    main()
