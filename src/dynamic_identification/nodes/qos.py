"""Quality-of-service profiles of every topic of the package, defined once.

``SENSOR_QOS`` (joint states, motor currents, recorder samples) is *reliable*,
keep-last depth 100, rather than ROS's best-effort ``qos_profile_sensor_data``:
identification differentiates positions and fits every sample, so a dropped
sample costs more than the small latency of reliability, and 100 samples (0.1 s
at 1 kHz) absorb a subscriber that is briefly late. A reliable publisher also
serves best-effort subscribers (``ros2 topic echo``, plotting tools). The one
incompatible case is a best-effort *publisher* (a driver using sensor-data QoS)
with this reliable subscription: then subscribe with
``rclpy.qos.qos_profile_sensor_data`` instead.
"""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy


def _reliable(depth: int, durability: DurabilityPolicy = DurabilityPolicy.VOLATILE) -> QoSProfile:
    """A reliable keep-last profile of ``depth`` messages: every topic of the package is reliable."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=durability,
    )


SENSOR_QOS = _reliable(100)
"""Joint states, motor currents and time-aligned samples: reliable, keep last 100."""


def sensor_qos(depth: int) -> QoSProfile:
    """``SENSOR_QOS`` keeping the last ``depth`` samples, for a subscriber of 1 kHz streams."""
    return _reliable(depth)


COMMAND_QOS = _reliable(10)
"""Trajectories and feedforward efforts: reliable, keep last 10."""

LATCHED_QOS = _reliable(1, DurabilityPolicy.TRANSIENT_LOCAL)
"""Identified parameters: the last message is delivered to late subscribers."""


def latched_qos(depth: int) -> QoSProfile:
    """``LATCHED_QOS`` keeping the last ``depth`` messages, for a subscriber that wants each estimate, not only the
    newest (the reader keeps them until taken)."""
    return _reliable(depth, DurabilityPolicy.TRANSIENT_LOCAL)


CLOCK_QOS = _reliable(1)
"""``/clock``: keep last 1; reliable, so it serves the best-effort subscription of ROS time sources
(``rclcpp::ClockQoS``) and reliable ones (``ros2 topic echo``, tools) alike."""

ACKNOWLEDGEMENT_QOS = _reliable(1)
"""A consumer's ``~/acknowledged`` stamp for a simulator in lockstep (:mod:`~dynamic_identification.nodes.lockstep`):
only the newest counts."""
