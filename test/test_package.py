"""Packaging facts ``colcon build``, ``ros2 run`` and the demo rely on."""

from __future__ import annotations

import ast
import configparser
import pathlib
import re
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

import dynamic_identification

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
DESIGN_EXECUTABLES = ("recorder", "excitation", "estimator", "feedforward", "sim_robot", "dynid")
"""DESIGN.md's executables; each is declared once its module exists (the others land with their issues)."""
EXECUTABLES = ("recorder", "sim_robot", "excitation", "estimator", "feedforward", "dynid")
ENTRY_POINT = re.compile(r'"(\w+) = ([\w.]+):(\w+)"')


def console_scripts() -> dict[str, str]:
    """Executable name → ``module:function`` as written in setup.py."""
    text = (REPO_ROOT / "setup.py").read_text(encoding="utf-8")
    return {name: f"{module}:{func}" for name, module, func in ENTRY_POINT.findall(text)}


def package_xml() -> ET.Element:
    return ET.parse(REPO_ROOT / "package.xml").getroot()


def test_setup_declares_the_executables_of_the_design_that_exist() -> None:
    declared = set(console_scripts())
    assert declared <= set(DESIGN_EXECUTABLES)
    assert set(EXECUTABLES) <= declared


@pytest.mark.parametrize("name", EXECUTABLES)
def test_entry_point_names_a_module_under_src(name: str) -> None:
    target = console_scripts()[name]
    module, func = target.split(":")
    assert func == "main"
    expected = "dynamic_identification.cli" if name == "dynid" else f"dynamic_identification.nodes.{name}"
    assert module == expected, f"{name} = {target}: executable name must equal the module name"
    source = REPO_ROOT / "src" / pathlib.Path(*module.split("."))
    assert source.with_suffix(".py").is_file() or (source / "__init__.py").is_file(), f"no source for {module}"


def test_setup_cfg_installs_scripts_where_ros2_run_looks() -> None:
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(REPO_ROOT / "setup.cfg")
    assert cfg["develop"]["script_dir"] == "$base/lib/dynamic_identification"
    assert cfg["install"]["install_scripts"] == "$base/lib/dynamic_identification"


def test_package_xml_is_format_3_ament_python() -> None:
    root = package_xml()
    assert root.get("format") == "3"
    assert root.findtext("name") == "dynamic_identification"
    assert root.findtext("export/build_type") == "ament_python"


def test_package_xml_declares_runtime_and_test_dependencies() -> None:
    root = package_xml()
    exec_depends = {e.text for e in root.findall("exec_depend")}
    test_depends = {e.text for e in root.findall("test_depend")}
    assert {"rclpy", "sensor_msgs", "std_msgs", "trajectory_msgs", "std_srvs", "diagnostic_msgs"} <= exec_depends
    assert {"pinocchio", "python3-numpy", "python3-scipy", "python3-yaml", "launch_ros"} <= exec_depends
    assert "python3-pytest" in test_depends


ROSDEP_KEYS: dict[str, str] = {
    "numpy": "python3-numpy",
    "scipy": "python3-scipy",
    "yaml": "python3-yaml",
    "matplotlib": "python3-matplotlib",
    "pandas": "python3-pandas",
    "pinocchio": "pinocchio",
    "cvxpy": "python3-cvxpy-pip",
    "rosbags": "python3-rosbags-pip",
    "tqdm": "python3-tqdm",
}
"""The rosdep key of each third-party module ``src/`` imports at run time: the keys of ros/rosdistro's
``rosdep/python.yaml`` (a ``-pip`` key where no system package has one: cvxpy, which brings the Clarabel solver
``estimation.consistency`` calls, and rosbags) and ``pinocchio``, a package of every ROS 2 distribution."""

WITHOUT_ROSDEP_KEY = {"threadpoolctl"}
"""Imported modules that no rosdep key installs (package.xml and the README say to ``pip install`` them)."""


def runtime_imports() -> set[str]:
    """Top-level modules imported under ``src/`` outside ``if TYPE_CHECKING:`` blocks, the standard library's left
    out."""
    modules: set[str] = set()
    for path in (REPO_ROOT / "src").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for inner in ast.walk(node)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return modules - set(sys.stdlib_module_names) - {"dynamic_identification"}


def test_package_xml_declares_every_module_the_code_imports_by_its_rosdep_key() -> None:
    """``rosdep install`` installs what package.xml names, and fails on a key it does not know."""
    depends = [e.text for e in package_xml().findall("exec_depend")]
    assert len(depends) == len(set(depends)), f"declared twice: {sorted({d for d in depends if depends.count(d) > 1})}"
    imported = runtime_imports()
    ros_packages = {module for module in imported if module not in ROSDEP_KEYS and module not in WITHOUT_ROSDEP_KEY}
    # ROS packages go by their own name (rclpy, launch_ros, the message packages).
    assert ros_packages <= {"rclpy", "launch", "launch_ros", "ament_index_python"} | {
        module for module in ros_packages if module.endswith(("_msgs", "_srvs", "_interfaces"))
    }, sorted(ros_packages)
    expected = ros_packages | {ROSDEP_KEYS[module] for module in imported if module in ROSDEP_KEYS}
    assert expected <= set(depends), sorted(expected - set(depends))
    assert set(depends) <= expected, sorted(set(depends) - expected)
    text = (REPO_ROOT / "package.xml").read_text(encoding="utf-8") + (REPO_ROOT / "README.md").read_text("utf-8")
    for module in WITHOUT_ROSDEP_KEY & imported:
        assert f"pip install {module}" in text


def test_setup_py_has_no_deprecated_tests_require() -> None:
    """setuptools warns on ``tests_require`` (and newer versions refuse it); the test extra replaces it."""
    text = (REPO_ROOT / "setup.py").read_text(encoding="utf-8")
    assert "tests_require" not in text and '"test": ["pytest"' in text


def test_versions_agree() -> None:
    setup_version = re.search(r'version="([^"]+)"', (REPO_ROOT / "setup.py").read_text(encoding="utf-8"))
    assert setup_version is not None
    assert package_xml().findtext("version") == setup_version.group(1) == dynamic_identification.__version__


def test_resource_marker_exists() -> None:
    assert (REPO_ROOT / "resource" / "dynamic_identification").is_file()


@pytest.fixture(scope="module")
def arm6(arm6_urdf: pathlib.Path) -> pin.Model:
    return pin.buildModelFromUrdf(str(arm6_urdf))


def test_arm6_has_six_revolute_joints_in_order(arm6: pin.Model) -> None:
    assert (arm6.nq, arm6.nv) == (6, 6)
    assert list(arm6.names)[1:] == [f"joint_{i}" for i in range(1, 7)]
    assert arm6.existFrame("tool0")


@pytest.mark.parametrize("joint", range(1, 7))
def test_arm6_inertias_are_physically_consistent(arm6: pin.Model, joint: int) -> None:
    inertia = arm6.inertias[joint]
    eigenvalues = np.linalg.eigvalsh(inertia.inertia)  # about the centre of mass, kg·m²
    assert inertia.mass > 0.0
    assert eigenvalues[0] > 0.0
    # Triangle inequality of principal moments: no moment exceeds the sum of the other two.
    assert eigenvalues[2] <= eigenvalues[0] + eigenvalues[1]


def test_arm6_limits_are_finite_and_usable(arm6: pin.Model) -> None:
    lower, upper = arm6.lowerPositionLimit, arm6.upperPositionLimit
    assert np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))
    assert np.all(upper - lower > np.pi / 2)  # rad: every joint can be excited
    assert np.all(np.isfinite(arm6.velocityLimit)) and np.all(arm6.velocityLimit > 0.0)
    assert np.all(np.isfinite(arm6.effortLimit)) and np.all(arm6.effortLimit > 0.0)


def test_arm6_effort_limits_hold_the_arm_against_gravity(arm6: pin.Model) -> None:
    data = arm6.createData()
    rng = np.random.default_rng(7)
    lower, upper = arm6.lowerPositionLimit, arm6.upperPositionLimit
    for q in rng.uniform(lower, upper, size=(200, 6)):
        gravity = pin.computeGeneralizedGravity(arm6, data, q)  # N·m
        assert np.all(np.abs(gravity) < 0.5 * arm6.effortLimit)


def test_arm6_has_36_base_inertial_parameters(arm6: pin.Model) -> None:
    """A generic anthropomorphic 6R arm has 36 identifiable combinations of its 60 standard ones."""
    data = arm6.createData()
    rng = np.random.default_rng(3)
    lower, upper = arm6.lowerPositionLimit, arm6.upperPositionLimit
    rows = [
        pin.computeJointTorqueRegressor(arm6, data, q, rng.uniform(-3.0, 3.0, 6), rng.uniform(-10.0, 10.0, 6)).copy()
        for q in rng.uniform(lower, upper, size=(60, 6))
    ]
    singular_values = np.linalg.svd(np.vstack(rows), compute_uv=False)
    assert singular_values.shape == (60,)
    assert int(np.sum(singular_values > 1e-9 * singular_values[0])) == 36
