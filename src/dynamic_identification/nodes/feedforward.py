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
robot's parameters (``robot.loop_closures``, [Briot2012] §2) give the same model on the
closed-loop mechanism: its joints are the actuated ones, whose desired motion is completed through the closures to give
``τ_act = J_tᵀ τ_tree`` plus the drive terms (a trajectory may also name the passive
joints; their points are ignored). It is loaded
from ``parameters_file`` at start, and every message on ``parameters_topic``
replaces it (the topic carries the latest estimate). The desired ``q, q̇, q̈`` come from
the trajectories as ``joint_trajectory_controller`` follows them, at the node clock's time
(:mod:`~dynamic_identification.nodes.follower`, shared with ``sim_robot``); after the last
point the node keeps publishing the feedforward of that point at rest (gravity and
offsets), as the controller keeps holding it.

The torques of a carried load ([Swevers2002]; rigid-body torques of its 10 inertial
parameters on its frame) are added when a payload is known: from ``payload_file`` (payload
YAML, ``dynid payload --out``) at start, then from every message on ``payload_topic``
(default ``/estimator/payload``, latched: the estimator's in-process re-identification).
The payload is kept when new parameters arrive; a payload message that cannot be used
(not payload YAML, a non-physical inertia, a frame the model does not have) is refused,
counted and reported on ``/diagnostics``, and the previous payload stays.

Nothing is published while disabled, before the first parameters, or before the
first trajectory; ``/diagnostics`` says which.

The output is bounded: never non-finite, each torque clamped to the effort limit
(``limits.effort``, default the URDF's; clamped torques are counted and reported at
WARN), and a desired velocity or acceleration beyond its limit (the URDF's velocity limit;
``limits.acceleration``, default a generous 10 /s times the URDF velocity limit,
:data:`~dynamic_identification.core.feedforward.FEEDFORWARD_ACCELERATION_PER_VELOCITY_HZ`)
is taken at the limit, not extrapolated: the torques of that state are published, and the
sample is counted and reported at WARN. A desired state the model cannot evaluate (a
closed-loop robot at a singularity) publishes nothing and is counted.

A model is refused on load when its file cannot be read, leaves out a base parameter without
listing it under ``removed``, or fails the plausibility gates of ``dynid identify`` and the
estimator (:func:`~dynamic_identification.core.feedforward.check_plausible`: ``limits.*`` and
``plausibility.*`` as the estimator reads them): from ``parameters_file`` the node does not
start (one FATAL line); from ``parameters_topic`` the message is refused on one line, counted
(``refused/parameters`` on ``/diagnostics``) and the previous model stays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.mechanism.payload import Payload, PayloadDynamics
from dynamic_identification.core.mechanism.seam import Mechanism
from dynamic_identification.core.settings_schema import setting_field
from dynamic_identification.feedforward import FeedforwardModel, FeedforwardOptions
from dynamic_identification.io.parameters import (
    ParameterFile,
    load_parameters,
    parameter_file_mechanism,
    parse_parameters,
)
from dynamic_identification.io.payload import load_payload, parse_payload
from dynamic_identification.nodes.conversions import (
    float64_multi_array,
    require_known_joints,
)
from dynamic_identification.nodes.follower import DesiredMotion, next_motion
from dynamic_identification.nodes.guarded import GuardedNode, status_message
from dynamic_identification.nodes.parameters import node_parameters, read_parameters
from dynamic_identification.nodes.qos import COMMAND_QOS, LATCHED_QOS
from dynamic_identification.nodes.runner import run_node

NODE = "feedforward"


@dataclass(frozen=True)
class FeedforwardConfig:
    """The node's parameters, read once at start (units and ranges: the settings schema)."""

    parameters_file: str = setting_field("parameters_file", NODE)
    parameters_topic: str = setting_field("parameters_topic", NODE)
    trajectory_topic: str = setting_field("trajectory_topic", NODE)
    output_topic: str = setting_field("output_topic", NODE)
    rate_hz: float = setting_field("rate_hz", NODE)
    enabled: bool = setting_field("enabled", NODE)
    friction_smoothing: float = setting_field("friction_smoothing", NODE)
    urdf: str = setting_field("urdf", NODE)
    effort_limits: tuple[float, ...] | None = setting_field("limits.effort")
    acceleration_limits: tuple[float, ...] | None = setting_field("limits.acceleration")
    effort_factor: float = setting_field("plausibility.effort_factor")
    mass_factor: float = setting_field("plausibility.mass_factor")
    payload_file: str = setting_field("payload_file", NODE)
    payload_topic: str = setting_field("payload_topic", NODE)


_PARAMETERS = node_parameters(NODE)


def declare_and_read(node: Node) -> FeedforwardConfig:
    """Declare every parameter with its descriptor and read them once into a config (checked: the schema)."""
    return read_parameters(node, NODE, _PARAMETERS).build(FeedforwardConfig)


class FeedforwardNode(GuardedNode):
    """Publishes the identified model's torques for the desired trajectory."""

    def __init__(self, *, node_name: str = "feedforward", **kwargs: object) -> None:
        super().__init__(node_name, **kwargs)
        self.config = declare_and_read(self)
        self._model: FeedforwardModel | None = None
        self._source = ""
        self._stamp = 0.0
        self._mechanisms: dict[tuple[str, str], Mechanism] = {}
        self._parameters_error = ""
        self._trajectory_error = ""
        self._motion: DesiredMotion | None = None
        self._enabled = self.config.enabled
        self._published = 0
        self._clamped = 0
        self._limited = 0
        self._refused = 0
        self._output_error = ""
        self._payload: Payload | None = None
        self._payload_source = ""
        self._payload_error = ""
        if self.config.payload_file:
            try:
                self._payload = load_payload(self.config.payload_file)
                self._payload_source = f"file {self.config.payload_file}"
            except IdentificationError as error:
                raise ValueError(f"parameter 'payload_file': {error}") from error
        if self.config.parameters_file:
            try:
                self._use(load_parameters(self.config.parameters_file), f"file {self.config.parameters_file}")
            except IdentificationError as error:
                raise ValueError(f"parameter 'parameters_file': {error}") from error
        self._effort = self.create_publisher(Float64MultiArray, self.config.output_topic, COMMAND_QOS)
        if self.config.parameters_topic:
            self.create_subscription(String, self.config.parameters_topic, self._on_parameters, LATCHED_QOS)
        if self.config.payload_topic:
            self.create_subscription(String, self.config.payload_topic, self._on_payload, LATCHED_QOS)
        self.create_subscription(JointTrajectory, self.config.trajectory_topic, self._on_trajectory, COMMAND_QOS)
        self.create_service(Trigger, "~/enable", self._on_enable)
        self.create_service(Trigger, "~/disable", self._on_disable)
        self.create_timer(1.0 / self.config.rate_hz, self._on_timer)
        self.start_diagnostics(self.diagnostic_status, stamp_ns=self._now_ns)
        sources = " and ".join(s for s in (self.config.parameters_file, self.config.parameters_topic) if s)
        state = "enabled" if self._enabled else "disabled"
        self.get_logger().info(
            f"feedforward of the model from {sources or 'nowhere'} along {self.config.trajectory_topic}"
            f" to {self.config.output_topic} at {self.config.rate_hz:g} Hz ({state})"
        )

    @property
    def model(self) -> FeedforwardModel | None:
        """The model in use, ``None`` before the first parameters."""
        return self._model

    @property
    def payload(self) -> Payload | None:
        """The carried load whose torques are added, ``None`` without one."""
        return self._payload

    @property
    def enabled(self) -> bool:
        return self._enabled

    @property
    def motion(self) -> DesiredMotion | None:
        """The desired motion, ``None`` before the first trajectory."""
        return self._motion

    def _now_ns(self) -> int:
        return int(self.get_clock().now().nanoseconds)

    def _use(self, parameters: ParameterFile, source: str) -> FeedforwardModel:
        """Build and switch to the model of ``parameters``; raises ``IdentificationError``."""
        urdf = str(parameters.urdf_path(self.config.urdf or None))
        options = FeedforwardOptions(
            friction_smoothing=self.config.friction_smoothing,
            effort_limits=self.config.effort_limits,
            acceleration_limits=self.config.acceleration_limits,
            effort_factor=self.config.effort_factor,
            mass_factor=self.config.mass_factor,
        )
        # The same robot's mechanism is reused for new parameters (loading a URDF takes milliseconds).
        described = repr((parameters.joints, parameters.loop_closures, parameters.actuated_joints))
        if (urdf, described) not in self._mechanisms:
            mechanism = parameter_file_mechanism(parameters, urdf)
            self._mechanisms = {(urdf, described): mechanism}
        model = FeedforwardModel.from_parameters(parameters, robot=self._mechanisms[(urdf, described)], **options)
        if self._payload is not None:
            try:
                model = model.with_payload(self._payload)
            except IdentificationError as error:
                self._refuse_payload(f"the payload from {self._payload_source} no longer fits the model: {error}")
                self._payload = None
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

    def _on_payload(self, message: String) -> None:
        source = f"topic {self.config.payload_topic}"
        try:
            payload = parse_payload(message.data, source=source)
            if self._model is not None:
                model = self._model.with_payload(payload)
            elif self._mechanisms:
                PayloadDynamics(next(iter(self._mechanisms.values())).robot, payload.frame)
        except IdentificationError as error:
            self._refuse_payload(f"refused a payload from {source}: {error}; keeping the previous one")
            return
        if self._model is not None:
            self._model = model
        self._payload, self._payload_source, self._payload_error = payload, source, ""
        self.get_logger().info(
            f"adding the torques of a {payload.mass_kg:.4g} kg payload on {payload.frame} from {source}"
        )

    def _refuse_payload(self, reason: str) -> None:
        self._payload_error = reason
        self.count_refusal("payload", reason)
        self.get_logger().error(reason)

    def _on_trajectory(self, message: JointTrajectory) -> None:
        model = self._model
        known: tuple[str, ...] | None = None
        if model is not None:
            known = model.mechanism.joint_names
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
        self.publish_diagnostics()
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

        Torques beyond the effort limits are clamped and counted; a desired velocity or
        acceleration beyond its limit is taken at the limit and counted; a desired state the
        model cannot evaluate (a closed-loop robot's singularity) publishes nothing and is
        counted.
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
        if output.limited.any():
            self._limited += 1
            self._output_error = output.problem
            self.get_logger().warning(output.problem, throttle_duration_sec=1.0)
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
            "limited_desired_states": str(self._limited),
            "refused_desired_states": str(self._refused),
            "reason": reason,
            "parameters_error": self._parameters_error,
            "trajectory_error": self._trajectory_error,
            "payload": _payload_text(self._payload, self._payload_source),
            "payload_error": self._payload_error,
        }
        if motion is not None:
            values["trajectory_active"] = str(not motion.ended(self._now_ns())).lower()
        problems = [error for error in (self._parameters_error, self._trajectory_error, self._payload_error) if error]
        if self._clamped or self._limited or self._refused:
            problems.append(
                f"{self._clamped} outputs clamped to the effort limits, {self._limited} desired states taken at the"
                f" velocity or acceleration limits, {self._refused} refused (last: {self._output_error})"
            )
        if reason:
            level = DiagnosticStatus.ERROR if problems else DiagnosticStatus.WARN
            message = "; ".join([f"not publishing: {reason}", *problems])
        elif problems:
            level, message = DiagnosticStatus.WARN, "; ".join(["publishing", *problems])
        else:
            level, message = DiagnosticStatus.OK, "publishing"
        return status_message(level, "feedforward", message, values)


def _payload_text(payload: Payload | None, source: str) -> str:
    """``3.5 kg on tool0 (topic …)``, or empty without a payload."""
    if payload is None:
        return ""
    return f"{payload.mass_kg:.6g} kg on {payload.frame} ({source})"


def main(args: Sequence[str] | None = None) -> None:
    """Entry point of ``ros2 run dynamic_identification feedforward``."""
    run_node("feedforward", FeedforwardNode, args)


if __name__ == "__main__":
    main()
