"""Files the package ships (URDF, configuration): installed share directory or source tree."""

from __future__ import annotations

from pathlib import Path

PACKAGE = "dynamic_identification"
SOURCE_ROOT = Path(__file__).resolve().parents[2]
"""Repository root when running from a checkout (``src/dynamic_identification/..``)."""


def shipped_path(folder: str, name: str) -> Path:
    """Path of ``folder/name`` (e.g. ``urdf/dynid_arm6.urdf``).

    Looks in the package's ROS share directory first (after ``colcon build``),
    then in the source tree (editable install, ``make`` venv).

    Raises
    ------
    FileNotFoundError
        When neither location has the file.
    """
    candidates = [SOURCE_ROOT / folder / name]
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

        try:
            candidates.insert(0, Path(get_package_share_directory(PACKAGE)) / folder / name)
        except (PackageNotFoundError, OSError, ValueError):
            pass
    except ImportError:
        pass
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{folder}/{name} is not shipped with {PACKAGE} (looked in {[str(c) for c in candidates]})")
