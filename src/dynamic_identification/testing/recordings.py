"""Realistic simulated recordings (:mod:`dynamic_identification.testing.realistic`) as recordings and CSV files."""

from __future__ import annotations

import os

from dynamic_identification.io.recording import Recording, recording_from_arrays, write_recording_csv
from dynamic_identification.testing.realistic import RealisticRecording


def as_recording(data: RealisticRecording) -> Recording:
    """The :class:`~dynamic_identification.io.recording.Recording` of a realistic recording (ground truth dropped).

    Rows, stamps and values are kept as generated: duplicates, gaps and late stamps
    included, as a recorder would have written them.
    """
    return recording_from_arrays(
        data.time,
        data.joint_names,
        data.position,
        velocity=data.velocity,
        effort=data.effort,
        current=data.current,
    )


def write_realistic_csv(path: str | os.PathLike[str], data: RealisticRecording) -> None:
    """Write a realistic recording as a recording CSV.

    Columns ``time``, then per joint ``J/position``, ``J/velocity`` and ``J/effort`` or ``J/current``.
    """
    write_recording_csv(path, as_recording(data))
