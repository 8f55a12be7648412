"""Identification on a real or Gazebo robot: recorder, excitation, estimator and optionally feedforward.

    ros2 launch dynamic_identification identification.launch.py config:=/path/to/robot.yaml
    ros2 launch dynamic_identification identification.launch.py with_feedforward:=true

Every node reads its parameters from ``config`` (one ``node_name: ros__parameters:``
block per node plus the shared ``/**`` block; see config/dynid_arm6.yaml).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def generate_launch_description() -> LaunchDescription:
    declared_arguments = [
        DeclareLaunchArgument(
            "config",
            default_value=PathJoinSubstitution(
                [FindPackageShare("dynamic_identification"), "config", "dynid_arm6.yaml"]
            ),
            description="Parameter YAML of the robot (joints, drive chain, excitation, estimation).",
        ),
        DeclareLaunchArgument(
            "use_sim_time", default_value="false", description="Use /clock (Gazebo or ros2 bag play --clock)."
        ),
        DeclareLaunchArgument(
            "with_feedforward", default_value="false", description="Also start the feedforward node."
        ),
    ]
    config = LaunchConfiguration("config")
    use_sim_time = LaunchConfiguration("use_sim_time")
    parameters = [config, {"use_sim_time": use_sim_time}]

    nodes = [
        Node(package="dynamic_identification", executable="recorder", name="recorder", parameters=parameters),
        Node(package="dynamic_identification", executable="excitation", name="excitation", parameters=parameters),
        Node(package="dynamic_identification", executable="estimator", name="estimator", parameters=parameters),
        Node(
            package="dynamic_identification",
            executable="feedforward",
            name="feedforward",
            parameters=parameters,
            condition=IfCondition(LaunchConfiguration("with_feedforward")),
        ),
    ]
    return LaunchDescription(declared_arguments + nodes)
