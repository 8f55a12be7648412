"""The embedded default: the simulated 6-axis arm with the identification nodes, running on its own.

ros2 launch dynamic_identification sim.launch.py
ros2 launch dynamic_identification sim.launch.py with_feedforward:=true use_sim_time:=true namespace:=arm1

The excitation starts by itself (``autostart:=false`` to start it with
``ros2 service call /excitation/start std_srvs/srv/Trigger``). With ``use_sim_time:=true``
the simulator publishes its time on ``/clock`` and the other nodes run on it.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from dynamic_identification.launch_support import config_argument, share_file


def generate_launch_description() -> LaunchDescription:
    declared_arguments = [
        config_argument("Parameter YAML of the simulated robot and of the identification nodes."),
        DeclareLaunchArgument(
            "with_feedforward", default_value="false", description="Also start the feedforward node."
        ),
        DeclareLaunchArgument(
            "autostart",
            default_value="true",
            description="Start the excitation once planned (false: wait for ~/start).",
        ),
        DeclareLaunchArgument(
            "use_sim_time",
            default_value="false",
            description="The simulator publishes /clock and the identification nodes run on it.",
        ),
        DeclareLaunchArgument(
            "namespace", default_value="", description="Namespace of the simulated arm and its nodes (e.g. arm1)."
        ),
    ]
    config = LaunchConfiguration("config")
    use_sim_time = LaunchConfiguration("use_sim_time")
    simulated_robot = Node(
        package="dynamic_identification",
        executable="sim_robot",
        name="sim_robot",
        namespace=LaunchConfiguration("namespace"),
        # The simulator keeps wall-clock ticks and publishes the clock the others use.
        parameters=[config, {"publish_clock": ParameterValue(use_sim_time, value_type=bool)}],
    )
    identification = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(share_file("launch", "identification.launch.py")),
        launch_arguments={
            "config": config,
            "use_sim_time": use_sim_time,
            "with_feedforward": LaunchConfiguration("with_feedforward"),
            "autostart": LaunchConfiguration("autostart"),
            "namespace": LaunchConfiguration("namespace"),
        }.items(),
    )
    return LaunchDescription(declared_arguments + [simulated_robot, identification])
