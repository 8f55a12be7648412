"""Launch files: valid Python against the launch_ros API, naming executables and arguments that exist.

``ros2 launch`` is not available here (launch_ros is not on PyPI), so the files are
checked statically: what they start must be installed by setup.py, the nodes they
name must have a ``/**/name`` block in the shipped configuration (it applies in any
namespace), and each node takes the ``namespace`` launch argument.
"""

from __future__ import annotations

import ast
import pathlib
import re
import sys
from types import ModuleType, SimpleNamespace

import pytest
import yaml

from dynamic_identification.launch_support import config_problem, resolve_config, stop_on_exit

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
LAUNCH_FILES = sorted((REPO_ROOT / "launch").glob("*.launch.py"))


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == name
    ]


def _keyword(call: ast.Call, name: str) -> str | None:
    for keyword in call.keywords:
        if keyword.arg == name and isinstance(keyword.value, ast.Constant):
            return str(keyword.value.value)
    return None


def test_the_three_launch_files_of_the_design_exist() -> None:
    assert {path.name for path in LAUNCH_FILES} == {
        "identification.launch.py",
        "sim.launch.py",
        "replay.launch.py",
    }


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda path: path.name)
def test_launch_file_starts_installed_executables_configured_in_the_shipped_yaml(path: pathlib.Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert any(isinstance(node, ast.FunctionDef) and node.name == "generate_launch_description" for node in tree.body)
    scripts = set(re.findall(r'"(\w+) = dynamic_identification', (REPO_ROOT / "setup.py").read_text()))
    blocks = set(yaml.safe_load((REPO_ROOT / "config" / "dynid_arm6.yaml").read_text(encoding="utf-8")))
    for node in _calls(tree, "Node"):
        executable, name = _keyword(node, "executable"), _keyword(node, "name")
        assert executable in scripts, f"{path.name} starts {executable!r}, not an entry point of setup.py"
        assert f"/**/{name}" in blocks, f"{path.name} names node {name!r}, which has no /**/{name} block in the config"
        assert any(keyword.arg == "namespace" for keyword in node.keywords), f"{path.name}: {name} has no namespace"


def test_identification_launch_declares_its_arguments() -> None:
    tree = ast.parse((REPO_ROOT / "launch" / "identification.launch.py").read_text(encoding="utf-8"))
    declared = {call.args[0].value for call in _calls(tree, "DeclareLaunchArgument")}
    assert declared == {"config", "use_sim_time", "with_feedforward", "autostart", "namespace", "acknowledge"}


def _defaults(path: pathlib.Path) -> dict[str, str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        call.args[0].value: str(_keyword(call, "default_value"))
        for call in _calls(tree, "DeclareLaunchArgument")
        if _keyword(call, "default_value") is not None
    }


def test_sim_launch_runs_on_its_own_on_simulated_time_with_a_clock_of_its_namespace() -> None:
    """``ros2 launch … sim.launch.py`` alone moves the arm, on the simulator's time by default (the wall-clock
    simulator dropped its backlog on a busy machine and no model was published), in lockstep with the
    trajectory, on a clock of the stack's namespace (two namespaced arms shared one ``/clock``)."""
    path = REPO_ROOT / "launch" / "sim.launch.py"
    defaults = _defaults(path)
    assert defaults["autostart"] == "true" and defaults["use_sim_time"] == "true"
    text = path.read_text(encoding="utf-8")
    assert '"publish_clock": simulated_time, "lockstep": simulated_time' in text
    # Lockstep with the consumers of the samples (their keep-last queues overflowed on a busy machine).
    assert 'clock["lockstep_consumers"] = ["recorder", "estimator"]' in text and '"acknowledge": use_sim_time' in text
    assert '"use_sim_time": use_sim_time' in text and '"autostart": LaunchConfiguration("autostart")' in text
    assert 'SetRemap(src="/clock", dst="clock")' in text


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda path: path.name)
def test_every_launch_file_checks_its_config_first_and_stops_with_any_of_its_nodes(path: pathlib.Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert len(_calls(tree, "checked_config")) == 1
    for node in _calls(tree, "Node"):
        assert any(keyword.arg == "on_exit" for keyword in node.keywords), f"{path.name}: a node without on_exit"


@pytest.mark.parametrize("name", ["dynid_arm6.yaml", "five_bar.yaml"])
def test_the_shipped_configurations_of_the_simulated_robots_pass_the_launch_check(name: str) -> None:
    path = resolve_config(name)
    assert path == REPO_ROOT / "config" / name
    assert config_problem(path) is None


def test_a_placeholder_is_refused_at_launch_on_one_line_saying_what_to_set() -> None:
    """replay.launch.py config:=gazebo_ur5.yaml started and left the launch running without its estimator."""
    problem = config_problem(resolve_config("gazebo_ur5.yaml"))
    assert problem is not None and "\n" not in problem
    assert problem.startswith("gazebo_ur5.yaml: set urdf to an existing file")
    readers = "read by excitation, estimator, feedforward, sim_robot"
    assert problem.endswith(f"{readers}): '/path/to/ur5.urdf' does not exist")


def test_a_config_that_is_neither_a_file_nor_shipped_is_refused_naming_it(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match=r"config:=robot.yaml: no such file"):
        resolve_config("robot.yaml")
    (tmp_path / "robot.yaml").write_text("/**/recorder:\n  ros__parameters:\n    harmonics: 3\n", encoding="utf-8")
    problem = config_problem(resolve_config(str(tmp_path / "robot.yaml")))
    assert problem is not None and "keys the recorder does not read ['harmonics']" in problem


def test_on_a_robot_the_excitation_waits_for_its_start_service() -> None:
    assert _defaults(REPO_ROOT / "launch" / "identification.launch.py")["autostart"] == "false"


def test_a_node_that_fails_makes_the_launch_fail_on_one_line_naming_it() -> None:
    # launch's Shutdown alone exits 0 (the ros2 launch user run: a node refusing its parameters, `ros2 launch`
    # exit code 0); an exception of an on_exit handler is what LaunchService.run returns 1 for.
    failed = SimpleNamespace(returncode=1)
    running = SimpleNamespace(is_shutdown=False)
    with pytest.raises(RuntimeError, match=r"^estimator failed \(exit code 1\): the launch stops") as error:
        stop_on_exit("estimator")(failed, running)  # type: ignore[arg-type]
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("returncode", "stopping"), [(0, False), (-15, True), (1, True)])
def test_a_node_that_ends_or_is_stopped_only_stops_the_launch(
    monkeypatch: pytest.MonkeyPatch, returncode: int, stopping: bool
) -> None:
    # A node that ends (exit 0), or whose end the launch's own shutdown caused (Ctrl-C, SIGTERM of its escalation),
    # stops the launch without failing it.
    actions = ModuleType("launch.actions")
    actions.Shutdown = lambda reason: ("Shutdown", reason)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "launch", ModuleType("launch"))
    monkeypatch.setitem(sys.modules, "launch.actions", actions)
    ended = stop_on_exit("recorder")(
        SimpleNamespace(returncode=returncode),  # type: ignore[arg-type]
        SimpleNamespace(is_shutdown=stopping),  # type: ignore[arg-type]
    )
    assert ended == [("Shutdown", "recorder exited")]
