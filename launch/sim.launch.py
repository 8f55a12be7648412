"""The embedded default: the simulated 6-axis arm with the identification nodes, running on its own.

ros2 launch dynamic_identification sim.launch.py
ros2 launch dynamic_identification sim.launch.py namespace:=arm1 with_feedforward:=true

The excitation starts by itself (``autostart:=false`` to start it with
``ros2 service call /excitation/start std_srvs/srv/Trigger``). By default the simulator runs
on simulated time, as a Gazebo setup does: it publishes its time on ``clock`` and steps in
lockstep with the streamed trajectory, and the other nodes run on it (``use_sim_time``), so a
busy machine slows the simulation down instead of tearing gaps into its data. The simulator
also waits for the consumers of its samples, the recorder and the estimator (``lockstep_consumers``;
they acknowledge the newest sample they took), as Gazebo's lockstep waits for ros2_control, so
their queues never overflow.
``use_sim_time:=false`` runs it on the wall clock instead (a backlog it cannot keep up with
is dropped). The clock is the stack's own: ``/clock`` is remapped to ``clock`` in the
stack's namespace (``/arm1/clock``), so several simulated arms run side by side in one
ROS domain, each on its own time.
"""

from launch import LaunchContext, LaunchDescription
from launch.action import Action
from launch.actions import DeclareLaunchArgument, GroupAction, IncludeLaunchDescription, OpaqueFunction
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node, SetRemap

from dynamic_identification.launch_support import checked_config, config_argument, share_file, stop_on_exit


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
            default_value="true",
            description="The simulator is the clock (its namespace's clock topic, lockstep with the trajectory)"
            " and the identification nodes run on it; false: the simulator runs on the wall clock.",
        ),
        DeclareLaunchArgument(
            "namespace", default_value="", description="Namespace of the simulated arm and its nodes (e.g. arm1)."
        ),
    ]
    config = LaunchConfiguration("config")
    use_sim_time = LaunchConfiguration("use_sim_time")
    identification = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(share_file("launch", "identification.launch.py")),
        launch_arguments={
            "config": config,
            "use_sim_time": use_sim_time,
            "with_feedforward": LaunchConfiguration("with_feedforward"),
            "autostart": LaunchConfiguration("autostart"),
            "namespace": LaunchConfiguration("namespace"),
            "acknowledge": use_sim_time,
        }.items(),
    )
    # The stack's own clock: a relative name, so a namespace moves it with the stack.
    stack = GroupAction(
        [SetRemap(src="/clock", dst="clock"), OpaqueFunction(function=_simulated_robot), identification]
    )
    return LaunchDescription([*declared_arguments, checked_config(), stack])


def _simulated_robot(context: LaunchContext) -> list[Action]:
    """``sim_robot``: on simulated time the clock, in lockstep with the trajectory and the samples' consumers."""
    # launch's own reading of a boolean argument (true/false/1/0; anything else stops the launch naming it).
    simulated_time = IfCondition(LaunchConfiguration("use_sim_time")).evaluate(context)
    clock: dict[str, object] = {"publish_clock": simulated_time, "lockstep": simulated_time}
    if simulated_time:
        # The nodes that take every sample; relative names, so a namespace moves them with the stack.
        clock["lockstep_consumers"] = ["recorder", "estimator"]
    return [
        Node(
            package="dynamic_identification",
            executable="sim_robot",
            name="sim_robot",
            namespace=LaunchConfiguration("namespace"),
            on_exit=stop_on_exit("sim_robot"),
            parameters=[LaunchConfiguration("config"), clock],
        )
    ]
