"""Identification on a real or Gazebo robot: recorder, excitation, estimator and optionally feedforward.

    ros2 launch dynamic_identification identification.launch.py config:=/path/to/robot.yaml
    ros2 launch dynamic_identification identification.launch.py with_feedforward:=true namespace:=arm1

Every node reads its parameters from ``config`` (one ``/**/node_name: ros__parameters:``
block per node plus the shared ``/**`` block; see config/dynid_arm6.yaml), so the file
applies whatever ``namespace`` the stack runs in; topics are relative names, so a
namespace moves the whole stack. ``config`` is a path or the name of a shipped
configuration (``config:=five_bar.yaml``); a file the nodes would refuse (an unknown key,
a placeholder such as ``urdf: /path/to/robot.urdf``) stops the launch on one line before
any node starts, and the launch stops when one of its nodes exits. On a robot the excitation waits for
``ros2 service call /excitation/start std_srvs/srv/Trigger`` (in the namespace, if any)
unless ``autostart:=true``: it moves the robot.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from dynamic_identification.launch_support import checked_config, default_config, stop_on_exit


def generate_launch_description() -> LaunchDescription:
    # Declared in full, not by launch_support.config_argument: test/test_launch.py reads this file's argument
    # names without running it.
    declared_arguments = [
        DeclareLaunchArgument(
            "config",
            default_value=default_config(),
            description="Parameter YAML of the robot (joints, drive chain, excitation, estimation).",
        ),
        DeclareLaunchArgument(
            "use_sim_time", default_value="false", description="Use /clock (Gazebo or ros2 bag play --clock)."
        ),
        DeclareLaunchArgument(
            "with_feedforward", default_value="false", description="Also start the feedforward node."
        ),
        DeclareLaunchArgument(
            "autostart",
            default_value="false",
            description="Start the excitation as soon as it is planned and the robot is at rest"
            " (default: wait for ~/start, since it moves the robot).",
        ),
        DeclareLaunchArgument(
            "namespace", default_value="", description="Namespace of the nodes and of their topics (e.g. arm1)."
        ),
        DeclareLaunchArgument(
            "acknowledge",
            default_value="false",
            description="The recorder and the estimator publish ~/acknowledged, the newest sample taken, for a"
            " simulator in lockstep that waits for them (sim.launch.py sets it on simulated time).",
        ),
    ]
    config = LaunchConfiguration("config")
    namespace = LaunchConfiguration("namespace")
    use_sim_time = ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)
    parameters = [config, {"use_sim_time": use_sim_time}]
    autostart = {"autostart": ParameterValue(LaunchConfiguration("autostart"), value_type=bool)}
    acknowledge = {"acknowledge": ParameterValue(LaunchConfiguration("acknowledge"), value_type=bool)}

    nodes = [
        Node(
            package="dynamic_identification",
            executable="recorder",
            name="recorder",
            namespace=namespace,
            on_exit=stop_on_exit("recorder"),
            parameters=[*parameters, acknowledge],
        ),
        Node(
            package="dynamic_identification",
            executable="excitation",
            name="excitation",
            namespace=namespace,
            on_exit=stop_on_exit("excitation"),
            parameters=[*parameters, autostart],
        ),
        Node(
            package="dynamic_identification",
            executable="estimator",
            name="estimator",
            namespace=namespace,
            on_exit=stop_on_exit("estimator"),
            parameters=[*parameters, acknowledge],
        ),
        Node(
            package="dynamic_identification",
            executable="feedforward",
            name="feedforward",
            namespace=namespace,
            on_exit=stop_on_exit("feedforward"),
            parameters=parameters,
            condition=IfCondition(LaunchConfiguration("with_feedforward")),
        ),
    ]
    return LaunchDescription([*declared_arguments, checked_config(), *nodes])
