"""Identification of robot inverse-dynamics models, in-process or from excitation.

Layers (imports point down only): ``nodes`` and ``cli`` adapt ROS and the command
line; ``io`` reads and writes recordings, parameter files and configuration;
``core`` is the pure numerical library and never imports rclpy.
"""

__version__ = "0.1.0"
