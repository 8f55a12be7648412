"""The node demo's figures: measured against predicted joint torques, tracking error without and with feedforward.

Plain arrays in, a PNG out (matplotlib, Agg backend, imported only when a figure is drawn).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def _figure(n: int) -> tuple[Any, np.ndarray]:
    """A figure with one panel per joint, two columns."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    rows = (n + 1) // 2
    figure, axes = pyplot.subplots(rows, 2, figsize=(12, 2.6 * rows), sharex=True, squeeze=False)
    return figure, axes.ravel()


def _save(figure: Any, axes: np.ndarray, path: Path, title: str) -> None:
    from matplotlib import pyplot

    axes[0].legend(loc="upper right", fontsize=8)
    for axis in axes[-2:]:
        axis.set_xlabel("time (s)")
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)


def plot_torques(
    path: Path,
    joint_names: tuple[str, ...],
    relative_errors: np.ndarray,
    time_s: np.ndarray,
    measured: np.ndarray,
    predicted: np.ndarray,
) -> None:
    """Measured against predicted joint torques (N·m) of the run with feedforward, one panel per joint.

    ``relative_errors`` are the per-joint validation errors shown in the panel titles.
    """
    figure, axes = _figure(len(joint_names))
    for j, (axis, name) in enumerate(zip(axes, joint_names, strict=False)):
        axis.plot(time_s, measured[:, j], color="0.6", linewidth=0.6, label="measured")
        axis.plot(time_s, predicted[:, j], color="C3", linewidth=1.0, label="predicted")
        axis.set_title(f"{name}: relative error {relative_errors[j]:.3f} (moving)", fontsize=9)
        axis.set_ylabel("torque (N·m)")
    _save(figure, axes, path, "Published model vs measured joint torques (run with feedforward)")


def plot_tracking(
    path: Path,
    joint_names: tuple[str, ...],
    rms: tuple[np.ndarray, np.ndarray],
    without: tuple[np.ndarray, np.ndarray],
    with_feedforward: tuple[np.ndarray, np.ndarray],
) -> None:
    """Tracking error (rad, drawn in mrad) of each joint without and with feedforward, one panel per joint.

    ``rms`` is the RMS error per joint without and with feedforward; ``without`` and
    ``with_feedforward`` are ``(time_s, tracking_error)`` of the two runs.
    """
    figure, axes = _figure(len(joint_names))
    for j, (axis, name) in enumerate(zip(axes, joint_names, strict=False)):
        axis.plot(without[0], 1e3 * without[1][:, j], color="C0", linewidth=0.7, label="PD only")
        axis.plot(
            with_feedforward[0], 1e3 * with_feedforward[1][:, j], color="C2", linewidth=0.7, label="PD + feedforward"
        )
        axis.set_title(f"{name}: RMS {1e3 * rms[0][j]:.3g} → {1e3 * rms[1][j]:.3g} mrad", fontsize=9)
        axis.set_ylabel("q_d − q (mrad)")
    _save(figure, axes, path, "Tracking error of the pick-and-place process")


__all__ = ["plot_torques", "plot_tracking"]
