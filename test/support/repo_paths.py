"""Where the tests find the files of this checkout: the repository root and the shipped 6-axis arm's URDF and
configuration (``urdf/dynid_arm6.urdf``, ``config/dynid_arm6.yaml``).

The tests read the checkout's own files, not an installed share directory
(:func:`dynamic_identification.resources.shipped_path` prefers that one after ``colcon build``).
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
ARM6_URDF = REPO_ROOT / "urdf" / "dynid_arm6.urdf"
ARM6_CONFIG = REPO_ROOT / "config" / "dynid_arm6.yaml"
