"""How a parameter file names its URDF (relative, ``package://``, absolute) and resolves the name."""

from __future__ import annotations

from pathlib import Path

import pytest

from dynamic_identification.core.errors import DataError
from dynamic_identification.io.urdf_location import package_uri, resolve_urdf, urdf_name, urdf_sha256
from repo_paths import example_robot_files


def _installed(prefix: Path, package: str = "my_robot_description") -> Path:
    """A URDF in the share folder of a package installed under ``prefix`` (as ``colcon build`` lays it out)."""
    share = prefix / "share" / package
    (share / "urdf").mkdir(parents=True)
    (share / "package.xml").write_text("<package format='3'><name>my_robot_description</name></package>\n")
    urdf = share / "urdf" / "arm.urdf"
    urdf.write_text("<robot name='arm'/>\n", encoding="utf-8")
    return urdf


def test_a_urdf_in_an_installed_package_is_named_package_uri(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    urdf = _installed(tmp_path / "install")
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path / "install"))
    assert urdf_name(urdf, folder=tmp_path) == "package://my_robot_description/urdf/arm.urdf"


def test_a_share_folder_the_reader_cannot_find_is_named_by_its_path_not_package_uri(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A share folder with its package.xml (a pip wheel's cmeel.prefix, a workspace not sourced): the reader
    # resolves package:// through AMENT_PREFIX_PATH only, so such a name would not be read back here.
    urdf = _installed(tmp_path / "opt" / "ros")
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    assert package_uri(urdf) is None
    assert urdf_name(urdf, folder=tmp_path / "opt") == "ros/share/my_robot_description/urdf/arm.urdf"
    assert urdf_name(urdf) == str(urdf.resolve())
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path / "opt" / "ros"))
    assert package_uri(urdf) == "package://my_robot_description/urdf/arm.urdf"


@pytest.mark.parametrize("ament", [False, True], ids=["pip_alone", "prefix_on_ament_prefix_path"])
def test_every_urdf_of_example_robot_data_is_named_so_that_the_same_environment_reads_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ament: bool
) -> None:
    urdfs = example_robot_files(".urdf")
    assert len(urdfs) > 20
    # The wheel's cmeel.prefix holds share/example-robot-data/package.xml, as a colcon install would.
    prefix = next(parent for parent in urdfs[0].parents if parent.name == "share").parent
    if ament:
        monkeypatch.setenv("AMENT_PREFIX_PATH", str(prefix))
    else:
        monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    unread = []
    for urdf in urdfs:
        for folder in (tmp_path, None):  # a parameter file, and a text published on a topic
            name = urdf_name(urdf, folder=folder)
            try:
                found = resolve_urdf(name, folder=folder, sha256=urdf_sha256(urdf))
            except DataError as error:
                unread.append(f"{urdf.name} named {name}: {error}")
                continue
            if found != urdf:
                unread.append(f"{urdf.name} named {name} reads back as {found}")
    assert unread == []
    assert urdf_name(urdfs[0], folder=tmp_path).startswith("package://example-robot-data/") is ament


def test_a_package_uri_resolves_through_ament_prefix_path_on_another_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    urdf = _installed(tmp_path / "robot_pc" / "install")
    monkeypatch.setenv("AMENT_PREFIX_PATH", f"{tmp_path / 'other'}:{tmp_path / 'robot_pc' / 'install'}")
    found = resolve_urdf("package://my_robot_description/urdf/arm.urdf", sha256=urdf_sha256(urdf))
    assert found == urdf


def test_an_unknown_package_is_named_with_where_it_was_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path))
    with pytest.raises(DataError, match="package 'no_such_pkg' has no such file .*AMENT_PREFIX_PATH"):
        resolve_urdf("package://no_such_pkg/urdf/arm.urdf", source="params.yaml")


def test_outside_any_package_the_name_is_relative_to_the_parameter_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    urdf = tmp_path / "robot" / "arm.urdf"
    urdf.parent.mkdir()
    urdf.write_text("<robot name='arm'/>\n", encoding="utf-8")
    (tmp_path / "runs" / "today").mkdir(parents=True)
    assert urdf_name(urdf, folder=tmp_path / "runs" / "today") == "../../robot/arm.urdf"
    assert urdf_name(urdf) == str(urdf.resolve())  # a published text has no folder
    assert resolve_urdf("../../robot/arm.urdf", folder=tmp_path / "runs" / "today") == urdf.resolve()


def test_a_missing_urdf_is_named(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"URDF file not found: .*arm.urdf \(params.yaml names it 'arm.urdf'\)"):
        resolve_urdf("arm.urdf", folder=tmp_path, source="params.yaml")
