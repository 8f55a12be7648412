"""The embedded default: the simulated 6-axis arm with the identification nodes.

ros2 launch dynamic_identification sim.launch.py
ros2 launch dynamic_identification sim.launch.py with_feedforward:=true
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
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
            description="Parameter YAML of the simulated robot and of the identification nodes.",
        ),
        DeclareLaunchArgument(
            "with_feedforward", default_value="false", description="Also start the feedforward node."
        ),
    ]
    config = LaunchConfiguration("config")
    simulated_robot = Node(
        package="dynamic_identification",
        executable="sim_robot",
        name="sim_robot",
        parameters=[config],
    )
    identification = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(
            PathJoinSubstitution([FindPackageShare("dynamic_identification"), "launch", "identification.launch.py"])
        ),
        launch_arguments={
            "config": config,
            "use_sim_time": "false",
            "with_feedforward": LaunchConfiguration("with_feedforward"),
        }.items(),
    )
    return LaunchDescription(declared_arguments + [simulated_robot, identification])
