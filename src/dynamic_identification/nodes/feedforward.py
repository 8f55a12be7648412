"""``feedforward``: joint torques of the identified model along the desired trajectory.

Subscribes ``parameters_topic`` (default ``/estimator/parameters``, ``std_msgs/String``
holding the parameter YAML; reliable + transient local, so a node started late
still receives the last model) and ``trajectory_topic`` (default
``/joint_trajectory``, ``trajectory_msgs/JointTrajectory``: the commands the robot's
trajectory controller follows); publishes ``output_topic`` (default
``/feedforward/effort``, ``std_msgs/Float64MultiArray``, one torque in N·m per joint
in the parameter file's joint order) at ``rate_hz`` and ``diagnostic_msgs/DiagnosticArray``
on ``/diagnostics``; serves ``~/enable`` and ``~/disable`` (``std_srvs/Trigger``).

The model is :class:`dynamic_identification.feedforward.FeedforwardModel`: the
identified IDIM with ``tanh(k q̇)`` Coulomb friction ([Volkmann2020] §IV.C). A closed-loop
robot's parameters (``robot.loop_closures``, [Briot2012] §2) give a
:class:`~dynamic_identification.feedforward.ClosedLoopFeedforwardModel`: its joints are the
actuated ones, whose desired motion is completed through the closures to give
``τ_act = J_tᵀ τ_tree`` plus the drive terms (a trajectory may also name the passive
joints; their points are ignored). It is loaded
from ``parameters_file`` at start, and every message on ``parameters_topic``
replaces it (the topic carries the latest estimate). The desired ``q, q̇, q̈`` are
interpolated from the trajectory's points at the node clock's time
(:func:`~dynamic_identification.core.excitation.trajectory.interpolate_trajectory`, from
``header.stamp``; 0 means "on receipt"), the way ``joint_trajectory_controller``
does; after the last point the node keeps publishing the feedforward of that point
at rest (gravity and offsets), as the controller keeps holding it. Joints a
trajectory leaves out hold their previous desired position.

Nothing is published while disabled, before the first parameters, or before the
first trajectory; ``/diagnostics`` says which.

The output is bounded: never non-finite, each torque clamped to the effort limit
(``limits.effort``, default the URDF's; clamped torques are counted and reported at
WARN), and a desired velocity or acceleration beyond its limit (``limits.acceleration``,
default ``4 /s`` times the URDF velocity limit) is refused, not extrapolated: nothing is
published for it and the refusal is counted. A parameter file whose values would
overflow is refused on load.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from dynamic_identification.core.closed_loop import ClosedLoopModel
from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.trajectory import interpolate_trajectory
from dynamic_identification.core.feedforward import DEFAULT_FRICTION_SMOOTHING
from dynamic_identification.core.model import RobotModel, load_robot
from dynamic_identification.feedforward import ClosedLoopFeedforwardModel, FeedforwardModel
from dynamic_identification.io.parameters import ParameterFile, closed_loop_model_of, load_parameters, parse_parameters
from dynamic_identification.nodes.conversions import (
    NS_PER_S,
    float64_multi_array,
    require_known_joints,
    time_message,
    trajectory_points,
)
from dynamic_identification.nodes.guarded import GuardedNode
from dynamic_identification.nodes.parameters import ParameterSpec
from dynamic_identification.nodes.parameters import declare_and_read as declare_parameters
from dynamic_identification.nodes.qos import COMMAND_QOS, LATCHED_QOS
from dynamic_identification.nodes.runner import run_node

DIAGNOSTICS_PERIOD_S = 1.0


@dataclass(frozen=True)
class FeedforwardConfig:
    """The node's parameters, read once at start (units as in the ROS parameter descriptions)."""

    parameters_file: str = ""
    parameters_topic: str = "estimator/parameters"
    trajectory_topic: str = "joint_trajectory"
    output_topic: str = "feedforward/effort"
    rate_hz: float = 500.0
    enabled: bool = True
    friction_smoothing: float = DEFAULT_FRICTION_SMOOTHING
    urdf: str = ""
    effort_limits: tuple[float, ...] | None = None
    acceleration_limits: tuple[float, ...] | None = None


_PARAMETERS = (
    ParameterSpec("parameters_file", "", Parameter.Type.STRING, "parameter YAML loaded at start; empty = none"),
    ParameterSpec(
        "parameters_topic",
        "estimator/parameters",
        Parameter.Type.STRING,
        "std_msgs/String parameter YAML input (latched); empty = use parameters_file only",
    ),
    ParameterSpec("trajectory_topic", "joint_trajectory", Parameter.Type.STRING, "desired JointTrajectory input"),
    ParameterSpec("output_topic", "feedforward/effort", Parameter.Type.STRING, "Float64MultiArray torque output"),
    ParameterSpec("rate_hz", 500.0, Parameter.Type.DOUBLE, "publishing rate, Hz", floating=(1.0, 10000.0)),
    ParameterSpec("enabled", True, Parameter.Type.BOOL, "publish at start (~/enable, ~/disable switch it)"),
    ParameterSpec(
        "friction_smoothing",
        DEFAULT_FRICTION_SMOOTHING,
        Parameter.Type.DOUBLE,
        "k of the Coulomb feedforward Fc tanh(k dq), s/rad ([Volkmann2020]: 1000)",
        floating=(1e-3, 1e9),
    ),
    ParameterSpec("urdf", "", Parameter.Type.STRING, "URDF instead of the one the parameters name; empty = theirs"),
)

_LIMIT_PARAMETERS = (
    ParameterSpec(
        "limits.effort", None, Parameter.Type.DOUBLE_ARRAY, "torque clamp per joint, N.m; unset = the URDF's effort"
    ),
    ParameterSpec(
        "limits.acceleration",
        None,
        Parameter.Type.DOUBLE_ARRAY,
        "desired accelerations beyond these are refused, rad/s^2; unset = 4/s times the URDF velocity limit",
    ),
)


def declare_and_read(node: Node) -> FeedforwardConfig:
    """Declare every parameter with its descriptor and read them once into a config."""
    values = declare_parameters(node, _PARAMETERS)
    limits = declare_parameters(node, _LIMIT_PARAMETERS)
    return replace(
        FeedforwardConfig(),
        **values,
        effort_limits=limits.get("limits.effort"),
        acceleration_limits=limits.get("limits.acceleration"),
    )


def validate(config: FeedforwardConfig) -> None:
    """``ValueError`` naming the parameter when ``config`` cannot work."""
    if not config.trajectory_topic:
        raise ValueError("parameter 'trajectory_topic' must not be empty")
    if not config.output_topic:
        raise ValueError("parameter 'output_topic' must not be empty")
    if not config.rate_hz > 0.0:
        raise ValueError(f"parameter 'rate_hz' must be > 0, got {config.rate_hz}")
    if not config.friction_smoothing > 0.0:
        raise ValueError(f"parameter 'friction_smoothing' must be > 0, got {config.friction_smoothing}")


@dataclass(frozen=True)
class DesiredMotion:
    """The motion being commanded: held positions and the latest trajectory, by joint name.

    ``times_s``, ``positions``, ... are the trajectory's points for the joints
    ``moving`` (indices into ``joints``); other joints hold ``held``.
    """

    joints: tuple[str, ...]
    held: np.ndarray
    start_ns: int
    moving: np.ndarray
    times_s: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray | None
    accelerations: np.ndarray | None

    def at(self, stamp_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Desired ``q, q̇, q̈`` of every joint of :attr:`joints` at ``stamp_ns``."""
        q = self.held.copy()
        dq = np.zeros_like(q)
        ddq = np.zeros_like(q)
        t = (stamp_ns - self.start_ns) / NS_PER_S
        q[self.moving], dq[self.moving], ddq[self.moving] = interpolate_trajectory(
            self.times_s, self.positions, self.velocities, self.accelerations, t
        )
        return q, dq, ddq

    def ended(self, stamp_ns: int) -> bool:
        return (stamp_ns - self.start_ns) / NS_PER_S >= float(self.times_s[-1])


def next_motion(previous: DesiredMotion | None, message: JointTrajectory, now_ns: int) -> DesiredMotion:
    """The motion after receiving ``message`` at ``now_ns`` (node clock).

    Joints the message leaves out hold their desired position of ``previous``;
    when the first point lies after ``time_from_start`` 0, the trajectory starts
    from the desired state of ``previous`` at the start time, as
    ``joint_trajectory_controller`` does.

    Raises
    ------
    DataError
        If the message is malformed (names, times, sizes).
    """
    known = previous.joints if previous is not None else ()
    joints = known + tuple(name for name in message.joint_names if name not in known)
    points = trajectory_points(message, joints)
    start_ns = points.start_ns if points.start_ns > 0 else now_ns
    held = np.zeros(len(joints))
    q0 = dq0 = ddq0 = None
    if previous is not None:
        old_q, old_dq, old_ddq = previous.at(start_ns)
        held[: len(known)] = old_q
        q0, dq0, ddq0 = (np.concatenate([x, np.zeros(len(joints) - len(known))]) for x in (old_q, old_dq, old_ddq))
    held[points.joints] = points.positions[-1]
    times, positions = points.times_s, points.positions
    velocities, accelerations = points.velocities, points.accelerations
    if times[0] > 0.0 and previous is not None and np.all(points.joints < len(known)):
        index = points.joints
        times = np.concatenate([[0.0], times])
        positions = np.vstack([q0[index], positions])
        velocities = None if velocities is None else np.vstack([dq0[index], velocities])
        accelerations = None if accelerations is None else np.vstack([ddq0[index], accelerations])
    return DesiredMotion(
        joints=joints,
        held=held,
        start_ns=start_ns,
        moving=points.joints,
        times_s=times,
        positions=positions,
        velocities=velocities,
        accelerations=accelerations,
    )


class FeedforwardNode(GuardedNode):
    """Publishes the identified model's torques for the desired trajectory."""

    def __init__(self, *, node_name: str = "feedforward", **kwargs: object) -> None:
        super().__init__(node_name, **kwargs)  # type: ignore[arg-type]
        self.config = declare_and_read(self)
        validate(self.config)
        self._model: FeedforwardModel | ClosedLoopFeedforwardModel | None = None
        self._source = ""
        self._stamp = 0.0
        self._robots: dict[tuple[str, tuple[str, ...]], RobotModel] = {}
        self._mechanisms: dict[tuple[str, str], ClosedLoopModel] = {}
        self._parameters_error = ""
        self._trajectory_error = ""
        self._motion: DesiredMotion | None = None
        self._enabled = self.config.enabled
        self._published = 0
        self._clamped = 0
        self._refused = 0
        self._output_error = ""
        if self.config.parameters_file:
            try:
                self._use(load_parameters(self.config.parameters_file), f"file {self.config.parameters_file}")
            except IdentificationError as error:
                raise ValueError(f"parameter 'parameters_file': {error}") from error
        self._effort = self.create_publisher(Float64MultiArray, self.config.output_topic, COMMAND_QOS)
        self._diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        if self.config.parameters_topic:
            self.create_subscription(String, self.config.parameters_topic, self._on_parameters, LATCHED_QOS)
        self.create_subscription(JointTrajectory, self.config.trajectory_topic, self._on_trajectory, COMMAND_QOS)
        self.create_service(Trigger, "~/enable", self._on_enable)
        self.create_service(Trigger, "~/disable", self._on_disable)
        self.create_timer(1.0 / self.config.rate_hz, self._on_timer)
        self.create_timer(DIAGNOSTICS_PERIOD_S, self._publish_diagnostics)
        sources = " and ".join(s for s in (self.config.parameters_file, self.config.parameters_topic) if s)
        state = "enabled" if self._enabled else "disabled"
        self.get_logger().info(
            f"feedforward of the model from {sources or 'nowhere'} along {self.config.trajectory_topic}"
            f" to {self.config.output_topic} at {self.config.rate_hz:g} Hz ({state})"
        )

    @property
    def model(self) -> FeedforwardModel | ClosedLoopFeedforwardModel | None:
        """The model in use, ``None`` before the first parameters."""
        return self._model

    @property
    def enabled(self) -> bool:
        return self._enabled

    @property
    def motion(self) -> DesiredMotion | None:
        """The desired motion, ``None`` before the first trajectory."""
        return self._motion

    def _now_ns(self) -> int:
        return int(self.get_clock().now().nanoseconds)

    def _use(self, parameters: ParameterFile, source: str) -> FeedforwardModel | ClosedLoopFeedforwardModel:
        """Build and switch to the model of ``parameters``; raises ``IdentificationError``."""
        urdf = self.config.urdf or str(parameters.urdf_path())
        model: FeedforwardModel | ClosedLoopFeedforwardModel
        if parameters.closed_loop:
            described = repr((parameters.loop_closures, parameters.actuated_joints))
            if (urdf, described) not in self._mechanisms:
                self._mechanisms = {(urdf, described): closed_loop_model_of(parameters, urdf)}
            model = ClosedLoopFeedforwardModel.from_parameters(
                parameters,
                model=self._mechanisms[(urdf, described)],
                friction_smoothing=self.config.friction_smoothing,
                effort_limits=self.config.effort_limits,
                acceleration_limits=self.config.acceleration_limits,
            )
        else:
            key = (urdf, parameters.joints)
            if key not in self._robots:
                self._robots = {key: load_robot(urdf, parameters.joints)}
            model = FeedforwardModel.from_parameters(
                parameters,
                robot=self._robots[key],
                friction_smoothing=self.config.friction_smoothing,
                effort_limits=self.config.effort_limits,
                acceleration_limits=self.config.acceleration_limits,
            )
        unidentified = sorted(set(model.joint_names) - set(model.identified_joints))
        if unidentified:
            self.get_logger().warning(
                f"no feedforward for {unidentified}: the identification had no equation for them (never moved)",
                throttle_duration_sec=60.0,
            )
        if self._model is not None and self._model.joint_names != model.joint_names:
            self.get_logger().warning(
                f"the joints change from {list(self._model.joint_names)} to {list(model.joint_names)}"
            )
        self._model, self._source, self._stamp = model, source, parameters.stamp
        self._parameters_error = ""
        return model

    def _on_parameters(self, message: String) -> None:
        source = f"topic {self.config.parameters_topic}"
        try:
            model = self._use(parse_parameters(message.data, source=source), source)
        except IdentificationError as error:
            self._parameters_error = f"refused parameters from {source}: {error}"
            self.count_refusal("parameters", self._parameters_error)
            self.get_logger().error(self._parameters_error + "; keeping the previous model")
            return
        self.get_logger().info(f"using {len(model.names)} parameters from {source}", throttle_duration_sec=5.0)

    def _on_trajectory(self, message: JointTrajectory) -> None:
        model = self._model
        known: tuple[str, ...] | None = None
        if model is not None:
            known = model.mechanism.joint_names if isinstance(model, ClosedLoopFeedforwardModel) else model.joint_names
        try:
            require_known_joints(message.joint_names, known, "trajectory")
            self._motion = next_motion(self._motion, message, self._now_ns())
        except IdentificationError as error:
            self._trajectory_error = f"ignoring {self.config.trajectory_topic}: {error}"
            self.count_refusal("trajectory", self._trajectory_error)
            self.get_logger().error(self._trajectory_error, throttle_duration_sec=1.0)
            return
        self._trajectory_error = ""

    def _switch(self, enabled: bool) -> Trigger.Response:
        changed = enabled != self._enabled
        self._enabled = enabled
        state = "enabled" if enabled else "disabled"
        if changed:
            self.get_logger().info(f"feedforward {state}")
        self._publish_diagnostics()
        return Trigger.Response(success=True, message=state if changed else f"already {state}")

    def _on_enable(self, _request: Trigger.Request, _response: Trigger.Response) -> Trigger.Response:
        return self._switch(True)

    def _on_disable(self, _request: Trigger.Request, _response: Trigger.Response) -> Trigger.Response:
        return self._switch(False)

    def why_not_publishing(self) -> str:
        """Why nothing is published now; empty when publishing."""
        if not self._enabled:
            return "disabled (call ~/enable)"
        if self._model is None:
            topic = self.config.parameters_topic
            return f"no parameters: waiting for them on {topic}" if topic else "no parameters: none given"
        if self._motion is None:
            return f"waiting for a trajectory on {self.config.trajectory_topic}"
        missing = [name for name in self._model.joint_names if name not in self._motion.joints]
        if missing:
            return f"the trajectories never commanded joints {missing} of the model"
        return ""

    def torques_now(self, now_ns: int) -> np.ndarray | None:
        """The feedforward at ``now_ns`` in the model's joint order, ``None`` when nothing is to be published.

        Torques beyond the effort limits are clamped and counted; a desired state the
        model refuses (beyond the velocity or acceleration limits) publishes nothing and
        is counted.
        """
        model, motion = self._model, self._motion
        if self.why_not_publishing() or model is None or motion is None:
            return None
        q, dq, ddq = motion.at(now_ns)
        order = np.array([motion.joints.index(name) for name in model.joint_names], dtype=int)
        try:
            output = model.evaluate(q[order], dq[order], ddq[order])
        except IdentificationError as error:
            self._refused += 1
            self._output_error = str(error)
            self.get_logger().warning(f"no feedforward: {error}", throttle_duration_sec=1.0)
            return None
        if output.clamped.any():
            self._clamped += 1
            joints = [name for name, flag in zip(model.joint_names, output.clamped, strict=True) if flag]
            self._output_error = f"torques of {joints} clamped to their effort limits"
            self.get_logger().warning(self._output_error, throttle_duration_sec=1.0)
        return output.torques

    def _on_timer(self) -> None:
        torques = self.torques_now(self._now_ns())
        if torques is None:
            return
        self._effort.publish(float64_multi_array(torques))
        self._published += 1

    def diagnostic_status(self) -> DiagnosticStatus:
        """One ``DiagnosticStatus`` named ``feedforward``: publishing or why not, model source, counts."""
        reason = self.why_not_publishing()
        model, motion = self._model, self._motion
        values = {
            "enabled": str(self._enabled).lower(),
            "source": self._source,
            "parameters_stamp": f"{self._stamp:.6f}",
            "joints": " ".join(model.joint_names) if model is not None else "",
            "parameters": str(len(model.names)) if model is not None else "0",
            "published": str(self._published),
            "clamped": str(self._clamped),
            "refused_desired_states": str(self._refused),
            "reason": reason,
            "parameters_error": self._parameters_error,
            "trajectory_error": self._trajectory_error,
        }
        if motion is not None:
            values["trajectory_active"] = str(not motion.ended(self._now_ns())).lower()
        problems = [error for error in (self._parameters_error, self._trajectory_error) if error]
        if self._clamped or self._refused:
            problems.append(
                f"{self._clamped} outputs clamped to the effort limits, {self._refused} desired states refused"
                f" (last: {self._output_error})"
            )
        if reason:
            level = DiagnosticStatus.ERROR if problems else DiagnosticStatus.WARN
            message = "; ".join([f"not publishing: {reason}", *problems])
        elif problems:
            level, message = DiagnosticStatus.WARN, "; ".join(["publishing", *problems])
        else:
            level, message = DiagnosticStatus.OK, "publishing"
        return DiagnosticStatus(
            level=level,
            name="feedforward",
            message=message,
            hardware_id="",
            values=[KeyValue(key=key, value=value) for key, value in values.items()],
        )

    def _publish_diagnostics(self) -> None:
        array = DiagnosticArray()
        array.header.stamp = time_message(max(self._now_ns(), 0))
        array.status = [self.guard_report(self.diagnostic_status())]
        self._diagnostics.publish(array)


def main(args: Sequence[str] | None = None) -> None:
    """Entry point of ``ros2 run dynamic_identification feedforward``."""
    run_node("feedforward", FeedforwardNode, args)


if __name__ == "__main__":
    main()
