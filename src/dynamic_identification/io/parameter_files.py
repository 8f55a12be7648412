"""Parameter files of identification results: offline (``dynid identify``) and in-process (one window update).

Both build the self-contained parameter YAML of :mod:`~dynamic_identification.io.parameters`
with the same ``quality`` keys: condition number after and before reduction, ``‖ρ‖/‖Y‖``,
per-joint ``e_j`` and ``e*_j`` ([Volkmann2020] eq. (11)-(12); ``null`` for a joint without
a usable equation), samples and window length; an offline file adds the plausibility
verdict, an update its reason.
"""

from __future__ import annotations

import math
import time as wall_clock
from typing import Any

import numpy as np

from dynamic_identification.core.closed_loop import ClosedLoopModel
from dynamic_identification.core.errors import DataError
from dynamic_identification.core.identification.in_process import WindowUpdate
from dynamic_identification.core.identification.solve import IdentificationResult
from dynamic_identification.core.model import DriveChain, DriveTerms, RobotModel
from dynamic_identification.core.regressors import BaseParameters
from dynamic_identification.io.parameters import ParameterFile

IDIM_REGRESSION = "idim"
"""``model.regression`` of a file identified with the IDIM (the regression model ``dynamic``)."""


def finite_or_none(value: float) -> float | None:
    """``value`` as a float, or ``None`` (YAML/JSON ``null``) when it is not finite."""
    number = float(value)
    return number if math.isfinite(number) else None


def per_joint(joints: tuple[str, ...], values: np.ndarray) -> dict[str, float | None]:
    """``{joint: value}`` with non-finite values as ``None``; empty when the sizes differ."""
    if values.size != len(joints):
        return {}
    return {joint: finite_or_none(value) for joint, value in zip(joints, values.tolist(), strict=True)}


def quality_section(
    joints: tuple[str, ...],
    figures: tuple[float, float, float],
    joint_errors: np.ndarray,
    joint_relative_errors: np.ndarray,
    *,
    samples: int,
    window_s: float,
) -> dict[str, Any]:
    """The ``quality`` keys every parameter file has.

    ``figures`` are the condition number after and before reduction and ``‖ρ‖/‖Y‖``;
    ``joint_errors`` (N·m) and ``joint_relative_errors`` are ``e_j`` and ``e*_j`` per joint;
    ``samples`` the samples (or rows) used and ``window_s`` the data time they span, s.
    """
    condition, condition_full, relative = figures
    return {
        "condition_number": finite_or_none(condition),
        "condition_number_full": finite_or_none(condition_full),
        "relative_error": finite_or_none(relative),
        "joint_errors": per_joint(joints, joint_errors),
        "joint_relative_errors": per_joint(joints, joint_relative_errors),
        "samples": int(samples),
        "window": float(window_s),
    }


def identified_parameter_file(
    robot: RobotModel,
    terms: DriveTerms,
    drive_chain: DriveChain,
    result: IdentificationResult,
    *,
    window_s: float,
    closed_loop: ClosedLoopModel | None = None,
) -> ParameterFile:
    """The parameter YAML content of an offline identification with any regression model.

    ``window_s`` is the recording's duration, s. ``quality.plausibility`` holds the
    verdict of the plausibility gates (``ok`` and every problem). For a closed-loop robot
    ``robot`` is its opened tree and ``closed_loop`` the model: the file's joints are the
    actuated ones and its ``robot`` section holds the loop closures.
    """
    estimate = result.estimate
    joints = robot.joint_names if closed_loop is None else closed_loop.actuated_joint_names
    errors = result.judged.joint_errors
    return ParameterFile.create(
        urdf=robot.urdf_path,
        joints=joints,
        drive_terms=terms,
        drive_chain=drive_chain,
        names=result.names,
        values=estimate.parameters,
        std_percent=estimate.relative_std_percent,
        expressions=result.expressions,
        removed=tuple(name for name, _ in result.removed),
        regression=IDIM_REGRESSION if result.model == "dynamic" else result.model,
        quality={
            **quality_section(
                joints,
                (estimate.condition_number, result.condition_number_full, estimate.relative_error),
                errors.errors,
                errors.relative_errors,
                samples=result.observations.input_samples,
                window_s=window_s,
            ),
            "plausibility": {"ok": result.judged.plausible, "problems": list(result.judged.problems)},
        },
        stamp=wall_clock.time(),
        closed_loop=closed_loop,
    )


def window_parameter_file(
    robot: RobotModel,
    terms: DriveTerms,
    drive_chain: DriveChain,
    base: BaseParameters,
    update: WindowUpdate,
    *,
    stamp: float | None = None,
    closed_loop: ClosedLoopModel | None = None,
) -> ParameterFile:
    """The parameter YAML content of one sliding-window update.

    Parameters
    ----------
    robot, terms, drive_chain
        The identified model, as given to the estimator.
    base
        The estimator's base parameters; the expressions of the kept names come from it.
    update
        An update with an estimate (normally a publishable one).
    stamp
        ``stamp`` of the file, s; default the update's data time ``update.time_s``.
    closed_loop
        The closed-loop model when ``robot`` is its opened tree (see :func:`identified_parameter_file`).

    Raises
    ------
    DataError
        When the update carries no estimate (or a non-finite value).
    """
    if not update.names:
        raise DataError(f"the update at {update.time_s:.6g} s has no estimate: {update.reason}")
    expression = dict(zip(base.names, base.expressions, strict=True))
    joints = robot.joint_names if closed_loop is None else closed_loop.actuated_joint_names
    return ParameterFile.create(
        urdf=robot.urdf_path,
        joints=joints,
        drive_terms=terms,
        drive_chain=drive_chain,
        names=update.names,
        values=update.values,
        std_percent=update.std_percent,
        expressions=[expression[name] for name in update.names],
        removed=tuple(name for name, _ in update.removed),
        quality={
            **quality_section(
                joints,
                (update.condition_number, update.condition_number_full, update.relative_error),
                update.joint_errors,
                update.joint_relative_errors,
                samples=update.samples,
                window_s=update.window_s,
            ),
            "reason": update.reason,
        },
        stamp=update.time_s if stamp is None else stamp,
        closed_loop=closed_loop,
    )


def update_record(update: WindowUpdate, joints: tuple[str, ...], *, restarted: bool = False) -> dict[str, Any]:
    """One ``dynid stream`` JSON line of an update; non-finite numbers become ``None`` (JSON ``null``)."""
    return {
        "time": finite_or_none(update.time_s),
        "publishable": bool(update.publishable),
        "reason": update.reason,
        "parameters": {name: finite_or_none(v) for name, v in zip(update.names, update.values.tolist(), strict=True)},
        "removed": [name for name, _ in update.removed],
        "condition_number": finite_or_none(update.condition_number),
        "condition_number_full": finite_or_none(update.condition_number_full),
        "relative_error": finite_or_none(update.relative_error),
        "joint_relative_errors": per_joint(joints, update.joint_relative_errors),
        "samples": int(update.samples),
        "window_s": float(update.window_s),
        "seconds": float(update.seconds),
        "position_cutoff_hz": finite_or_none(update.position_cutoff_hz),
        "restarted": bool(restarted),
    }


__all__ = [
    "IDIM_REGRESSION",
    "finite_or_none",
    "identified_parameter_file",
    "per_joint",
    "quality_section",
    "update_record",
    "window_parameter_file",
]
