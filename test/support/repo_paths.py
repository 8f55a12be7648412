"""Where the tests and benchmarks find their robots: the repository root, the shipped 6-axis arm's URDF and
configuration (``urdf/dynid_arm6.urdf``, ``config/dynid_arm6.yaml``), and the files of the installed
``example-robot-data`` wheel (:func:`example_robot_file`).

The tests read the checkout's own files, not an installed share directory
(:func:`dynamic_identification.resources.shipped_path` prefers that one after ``colcon build``).
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
ARM6_URDF = REPO_ROOT / "urdf" / "dynid_arm6.urdf"
ARM6_CONFIG = REPO_ROOT / "config" / "dynid_arm6.yaml"


def example_robot_file(filename: str) -> Path:
    """The path of a robot file (URDF, SRDF) shipped by the ``example-robot-data`` wheel.

    The wheel has no Python module: its files live under
    ``cmeel.prefix/share/example-robot-data/robots/<robot>_description/...``.

    Parameters
    ----------
    filename
        Base name of the file, e.g. ``"ur5_robot.urdf"``, ``"panda.urdf"`` or ``"ur5.srdf"``.

    Raises
    ------
    FileNotFoundError
        When no file of that name is in the installed distribution.
    """
    for entry in importlib.metadata.files("example-robot-data") or []:
        if entry.name == filename and "robots" in entry.parts:
            path = Path(str(entry.locate())).resolve()
            if path.is_file():
                return path
    raise FileNotFoundError(f"filename={filename!r} is not a file of the installed example-robot-data")


def example_robot_files(suffix: str) -> list[Path]:
    """Every robot file of the ``example-robot-data`` wheel whose name ends with ``suffix`` (``".urdf"``), sorted."""
    files = {
        Path(str(entry.locate())).resolve()
        for entry in importlib.metadata.files("example-robot-data") or []
        if entry.name.endswith(suffix) and "robots" in entry.parts
    }
    return sorted(path for path in files if path.is_file())
