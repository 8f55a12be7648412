"""Packaging facts ``colcon build``, ``ros2 run`` and the demo rely on."""

from __future__ import annotations

import configparser
import pathlib
import re
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


def test_package_xml_declares_every_ros_package_the_code_imports() -> None:
    """rosdep installs only what package.xml names: every message package imported under src/ must be there."""
    imported = set()
    for path in (REPO_ROOT / "src").rglob("*.py"):
        imported |= set(re.findall(r"^\s*(?:from|import) (\w+_(?:msgs|srvs|interfaces))\b", path.read_text(), re.M))
    exec_depends = {e.text for e in package_xml().findall("exec_depend")}
    assert {"rcl_interfaces", "builtin_interfaces", "python3-matplotlib"} <= exec_depends
    assert imported <= exec_depends, sorted(imported - exec_depends)


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
