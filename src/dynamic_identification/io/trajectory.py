"""Trajectory CSV files: what ``dynid excite`` writes and the excitation node plays (mode ``file``).

A header row, then one row per sample: ``time`` in s and, per joint ``J``,
``J/position`` (rad), ``J/velocity`` (rad/s) and ``J/acceleration`` (rad/s²), all
three required. Numbers round-trip exactly (see :mod:`dynamic_identification.io.table`).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from dynamic_identification.core.errors import DataError, IdentificationError, brief
from dynamic_identification.core.excitation.trajectory import SampledTrajectory
from dynamic_identification.io.table import check_finite_cells, read_body, read_header, write_table

KINDS: tuple[str, ...] = ("position", "velocity", "acceleration")


def write_trajectory_csv(path: str | os.PathLike[str], trajectory: SampledTrajectory) -> None:
    """Write ``trajectory`` so that :func:`read_trajectory_csv` returns it exactly."""
    header = ["time"] + [f"{joint}/{kind}" for joint in trajectory.joint_names for kind in KINDS]
    columns = [trajectory.time[:, None]]
    for j in range(trajectory.n_joints):
        columns += [trajectory.q[:, j : j + 1], trajectory.dq[:, j : j + 1], trajectory.ddq[:, j : j + 1]]
    write_table(path, header, np.concatenate(columns, axis=1))


def is_trajectory_csv(path: str | os.PathLike[str]) -> bool:
    """Whether the CSV file at ``path`` is a trajectory (``dynid excite``'s: a ``J/acceleration`` column), not a
    recording (:mod:`~dynamic_identification.io.recording`, which has none)."""
    file = Path(path)
    return file.is_file() and any(name.rpartition("/")[2] == "acceleration" for name in read_header(file))


def read_trajectory_csv(path: str | os.PathLike[str]) -> SampledTrajectory:
    """Read a trajectory CSV; a one-line :class:`DataError` names any problem."""
    file = Path(path)
    if not file.is_file():
        raise DataError(f"trajectory file not found: {file}")
    header = read_header(file)
    if "time" not in header:
        raise DataError(f"{file} has no 'time' column (header: {brief(header)})")
    joints: list[str] = []
    for name in header:
        if name == "time":
            continue
        joint, _, kind = name.rpartition("/")
        if not joint or kind not in KINDS:
            raise DataError(f"unknown column {name!r} in {file}: expected 'JOINT/{{{','.join(KINDS)}}}'")
        if joint not in joints:
            joints.append(joint)
    index = {name: i for i, name in enumerate(header)}
    missing = [f"{joint}/{kind}" for joint in joints for kind in KINDS if f"{joint}/{kind}" not in index]
    if missing or not joints:
        raise DataError(f"{file} lacks columns {missing or ['JOINT/position']}")
    data = read_body(file, len(header))
    if data.shape[0] < 2:
        raise DataError(f"{file} has {data.shape[0]} data rows, a trajectory needs at least 2")
    check_finite_cells(data, header, file)

    def block(kind: str) -> np.ndarray:
        return data[:, [index[f"{joint}/{kind}"] for joint in joints]]

    try:
        return SampledTrajectory(
            data[:, index["time"]], block("position"), block("velocity"), block("acceleration"), tuple(joints)
        )
    except IdentificationError as error:
        raise DataError(f"{file}: {error}") from error
