"""Identification from a rosbag replayed with its clock: recorder and estimator on simulated time.

ros2 launch dynamic_identification replay.launch.py config:=/path/to/robot.yaml
ros2 bag play my_bag --clock

With ``namespace:=arm1`` the nodes read ``/arm1/joint_states`` (relative topics): play a
bag of that arm with its own names, or remap.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from dynamic_identification.launch_support import checked_config, config_argument, stop_on_exit


def generate_launch_description() -> LaunchDescription:
    declared_arguments = [
        config_argument("Parameter YAML of the recorded robot."),
        DeclareLaunchArgument("namespace", default_value="", description="Namespace of the nodes and topics."),
    ]
    parameters = [LaunchConfiguration("config"), {"use_sim_time": True}]
    namespace = LaunchConfiguration("namespace")
    nodes = [
        Node(
            package="dynamic_identification",
            executable="recorder",
            name="recorder",
            namespace=namespace,
            on_exit=stop_on_exit("recorder"),
            parameters=parameters,
        ),
        Node(
            package="dynamic_identification",
            executable="estimator",
            name="estimator",
            namespace=namespace,
            on_exit=stop_on_exit("estimator"),
            parameters=parameters,
        ),
    ]
    return LaunchDescription([*declared_arguments, checked_config(), *nodes])
