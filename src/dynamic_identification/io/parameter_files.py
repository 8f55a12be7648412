"""Parameter files of identification results: offline (``dynid identify``) and in-process (one window update).

Both build the self-contained parameter YAML of :mod:`~dynamic_identification.io.parameters`
with the same ``quality`` keys: condition number after and before reduction, ``‖ρ‖/‖Y‖``,
per-joint ``e_j`` and ``e*_j`` ([Volkmann2020] eq. (11)-(12); ``null`` for a joint without
a usable equation), samples and window length, and how the ``std_percent`` of the
parameters was computed (``uncertainty``, :func:`uncertainty_section`); an offline file
adds the plausibility verdict (and what the caller adds: validation, physical
consistency, warnings), an update its reason. Both store every setting the identification
used (``settings``, generically: the fields of the settings dataclasses), the URDF's content
hash, the standard parameters per link (``standard_parameters``) and, as ``stamp``, the data
time of the last sample used.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pinocchio as pin

from dynamic_identification.core.errors import DataError
from dynamic_identification.core.estimation.consistency import consistency_report
from dynamic_identification.core.estimation.uncertainty import RobustCovariance
from dynamic_identification.core.identification.in_process import WindowSettings, WindowUpdate
from dynamic_identification.core.identification.settings import IdentificationSettings, SignalSettings, settings_record
from dynamic_identification.core.identification.solve import IdentificationResult
from dynamic_identification.core.identification.torque_delay import TorqueDelay
from dynamic_identification.core.mechanism.robot import INERTIAL_PARAMETER_NAMES, DriveTerms, RobotModel
from dynamic_identification.core.mechanism.seam import Mechanism, mechanism_of, tree_standard
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.regressors.idim import BaseParameters
from dynamic_identification.io.parameters import ParameterFile
from dynamic_identification.io.urdf_location import urdf_name, urdf_sha256

IDIM_REGRESSION = "idim"
"""``model.regression`` of a file identified with the IDIM (the regression model ``dynamic``)."""


def finite_or_none(value: float | None) -> float | None:
    """``value`` as a float, or ``None`` (YAML/JSON ``null``) when it is ``None`` or not finite."""
    if value is None:
        return None
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


UNCERTAINTY_MEANINGS: dict[str, str] = {
    "hac": "autocorrelation-consistent σ (Newey & West 1987, Andrews 1991 bandwidth, Kiefer & Vogelsang 2005"
    " fixed-b widening): value ± 2σ holds the truth about 95 % of the time",
    "white": "σ of [Gautier2013] eq. (18), residuals assumed independent in time: too small when they are not",
}
"""Values of ``quality.uncertainty.method`` and what each means (written beside it as ``meaning``)."""


def uncertainty_section(uncertainty: RobustCovariance | None, fallback: str = "") -> dict[str, Any]:
    """``quality.uncertainty``: how ``std_percent`` was computed.

    ``method`` (``hac`` or ``white``) and its ``meaning``; for HAC the Bartlett bandwidth
    in decimated rows (``bandwidth_rows``), the median over the parameters of the HAC σ
    over the white σ of eq. (18) (``hac_over_white_median``: how much eq. (18) would
    have understated σ) and the fewest effectively independent time steps of any
    parameter (``effective_steps_min``); for ``white`` where HAC was asked, ``why`` not.
    """
    if uncertainty is None:
        section: dict[str, Any] = {"method": "white", "meaning": UNCERTAINTY_MEANINGS["white"]}
        if fallback:
            section["why"] = fallback
        return section
    ratio = uncertainty.inflation
    ratio = ratio[np.isfinite(ratio)]
    steps = uncertainty.effective_steps
    return {
        "method": "hac",
        "meaning": UNCERTAINTY_MEANINGS["hac"],
        "bandwidth_rows": int(uncertainty.bandwidth),
        "hac_over_white_median": finite_or_none(np.median(ratio)) if ratio.size else None,
        "effective_steps_min": finite_or_none(np.min(steps)) if steps.size else None,
    }


def torque_delay_section(delay: TorqueDelay) -> dict[str, Any]:
    """``quality.torque_delay``: the torques' delay behind the positions the fit found (``delay_s``, s, positive:
    late; ``std_s`` its σ, ``None`` when undetermined), whether the torques were aligned with it (``aligned``), and
    the reason line that said so (``signal.torque_delay: auto``)."""
    return {
        "delay_s": finite_or_none(delay.delay_s),
        "std_s": finite_or_none(delay.std_s),
        "aligned": bool(delay.applied),
        "reason": delay.reason(),
    }


def aligned_torque_delay_s(parameters: ParameterFile) -> float:
    """The delay, s, the identification of a parameter file read its torques with (``quality.torque_delay`` aligned:
    its ``delay_s``), 0 when they were taken as recorded or the file says nothing: a recording of the same driver
    is judged against its torques read as late, since the model predicts the torque of the motion at each row."""
    section = parameters.quality.get("torque_delay")
    if not isinstance(section, dict) or not section.get("aligned"):
        return 0.0
    delay = section.get("delay_s")
    return float(delay) if isinstance(delay, int | float) and math.isfinite(delay) else 0.0


STANDARD_SOURCES: dict[str, str] = {
    "consistent": "the physically consistent standard parameters nearest to the data ([Wensing2018])",
    "base": "the base values on their independent standard columns, zeros elsewhere: reproduces the torques,"
    " not a physical model of each link",
}
"""Values of ``standard_parameters.source`` and what each means (written beside it as ``meaning``)."""

_INERTIA_KEYS = ("xx", "xy", "yy", "xz", "yz", "zz")
"""Rotational-inertia entries in Pinocchio's ``toDynamicParameters()`` order."""

_DRIVE_KEYS = {"Ia": "Ia_kg_m2", "Fv": "Fv_N_m_s_per_rad", "Fc": "Fc_N_m", "off": "off_N_m"}
"""Keys (with units, joint side of the gears) of the drive-chain terms of a link."""


def standard_from_base(base: BaseParameters, values: Mapping[str, float]) -> np.ndarray:
    """Standard parameters ``(p,)`` with each base value on its independent column and zeros elsewhere.

    Base parameters are named after their independent standard columns, so ``W_st χ``
    of this vector is the base model's prediction ``W_b χ_b`` ([Gautier2013] eq. (4)):
    it reproduces the torques, but is not a physical link model (masses regrouped away are 0).
    """
    standard = np.zeros(len(base.standard_names))
    names = tuple(values)
    standard[base.independent[base.subset(names)]] = [values[name] for name in names]
    return standard


def child_links(robot: RobotModel) -> tuple[str, ...]:
    """Name of the body of each identified joint (its child link, the first body frame on the joint)."""
    links = []
    for j in range(1, robot.n_joints + 1):
        frame = next(
            (f.name for f in robot.model.frames if f.type == pin.FrameType.BODY and f.parentJoint == j),
            robot.joint_names[j - 1],
        )
        links.append(frame)
    return tuple(links)


def standard_parameters_section(
    mechanism: RobotModel | Mechanism,
    terms: DriveTerms,
    standard: np.ndarray,
    *,
    source: str,
) -> dict[str, Any]:
    """The ``standard_parameters`` section of a parameter file.

    Parameters
    ----------
    mechanism, terms
        The identified model (its tree's joints in model order) and drive-chain terms.
    standard
        Standard parameters of the tree ``(n_t · terms.per_joint,)`` in
        :func:`~dynamic_identification.core.mechanism.robot.standard_parameter_names` order: per joint
        ``[m, mc_x, mc_y, mc_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]`` (kg, kg·m, kg·m²; the
        inertia about the joint frame origin in joint-frame axes, Pinocchio's
        ``toDynamicParameters()``), then the drive terms (joint side).
        ``toDynamicParameters()``), then the drive terms (joint side); a closed-loop robot's in its opened
        tree's layout (:func:`~dynamic_identification.core.mechanism.seam.tree_standard`).
    source
        A key of :data:`STANDARD_SOURCES`.

    A passive joint's ``drive`` is ``null``: it has none.

    Returns
    -------
    dict
        ``source`` and its ``meaning``, ``physically_consistent`` ([Wensing2018] per link and
        ``Ia, Fv, Fc >= 0``) and per link ``joint``, ``link``, ``m_kg``, ``mc_kg_m``,
        ``com_m`` (``null`` when ``m <= 0``), ``inertia_kg_m2`` and ``drive``.
    """
    if source not in STANDARD_SOURCES:
        raise DataError(f"standard_parameters source must be one of {list(STANDARD_SOURCES)}, got {source!r}")
    mechanism = mechanism_of(mechanism)
    robot = mechanism.robot
    values = np.asarray(standard, dtype=float)
    driven = np.zeros(robot.n_joints, dtype=bool)
    driven[np.asarray(mechanism.actuated, dtype=int)] = True
    n = robot.n_joints
    if values.shape != (n * terms.per_joint,) or not np.all(np.isfinite(values)):
        raise DataError(f"standard parameters must be {n * terms.per_joint} finite values, got shape {values.shape}")
    report = consistency_report(values, n, terms)
    blocks = values.reshape(n, terms.per_joint)
    inertial = len(INERTIAL_PARAMETER_NAMES)
    links = []
    for j, (joint, link) in enumerate(zip(robot.joint_names, child_links(robot), strict=True)):
        block = blocks[j]
        mass = float(block[0])
        links.append(
            {
                "joint": joint,
                "link": link,
                "m_kg": mass,
                "mc_kg_m": [float(v) for v in block[1:4]],
                "com_m": [float(v) / mass for v in block[1:4]] if mass > 0.0 else None,
                "inertia_kg_m2": {key: float(v) for key, v in zip(_INERTIA_KEYS, block[4:inertial], strict=True)},
                "drive": (
                    {_DRIVE_KEYS[name]: float(v) for name, v in zip(terms.names, block[inertial:], strict=True)}
                    if driven[j]
                    else None
                ),
            }
        )
    return {
        "source": source,
        "meaning": STANDARD_SOURCES[source],
        "physically_consistent": bool(report.consistent),
        "frame": "mc and inertia about the joint frame origin, joint-frame axes (Pinocchio toDynamicParameters);"
        " drive terms on the joint side",
        "links": links,
    }


def window_signal_settings(
    settings: WindowSettings, *, position_cutoff_hz: float = math.nan, recovered_stamps: bool = False
) -> SignalSettings:
    """The :class:`SignalSettings` the sliding window filters with: its ``signal`` settings as the window uses them.

    What the window decides or does not is fixed to what it does: the stamps recovered
    (``recovered_stamps``) or as recorded, the velocities differentiated, ``rate_hz`` 0 (the
    window's "median rate") ``None``, and ``position_cutoff_hz`` (when finite) the cut-off it
    chose from its first data.
    """
    signal = settings.signal
    return dataclasses.replace(
        signal,
        stamps="recovered" if recovered_stamps else "recorded",
        velocity="differentiated",
        rate_hz=signal.rate_hz or None,
        position_cutoff_hz=position_cutoff_hz if math.isfinite(position_cutoff_hz) else signal.position_cutoff_hz,
    )


def _model_keys(dynamic_model: DynamicModel) -> dict[str, Any]:
    """The keys of :meth:`ParameterFile.create` that describe the identified model.

    ``urdf`` (``package://`` or absolute: a file names it relative to itself when written) and
    its hash, the file's joints (the controlled ones), the drive terms and chain, and the
    mechanism (whose closures and actuated joints a closed-loop robot's file names).
    """
    mechanism = dynamic_model.mechanism
    return {
        "urdf": urdf_name(mechanism.robot.urdf_path),
        "urdf_sha256": urdf_sha256(mechanism.robot.urdf_path),
        "joints": mechanism.actuated_joint_names,
        "drive_terms": dynamic_model.terms,
        "drive_chain": dynamic_model.drive_chain,
        "closed_loop": mechanism,
    }


def identified_parameter_file(
    dynamic_model: DynamicModel,
    result: IdentificationResult,
    *,
    window_s: float,
    stamp: float,
    settings: IdentificationSettings,
    standard: np.ndarray | None = None,
    standard_source: str = "base",
    quality: Mapping[str, Any] | None = None,
) -> ParameterFile:
    """The parameter YAML content of an offline identification with any regression model.

    Parameters
    ----------
    dynamic_model, result
        The identified model and the seam's result in its base parameters: the file's joints are the controlled
        ones, and a closed-loop robot's ``robot`` section holds its loop closures.
    window_s
        The recording's duration, s.
    stamp
        Data time of the last sample used, s (the recording's clock).
    settings
        The settings the identification used, stored whole
        (:func:`~dynamic_identification.core.identification.settings.settings_record`).
    standard, standard_source
        Standard parameters for ``standard_parameters`` and what they are (a key of
        :data:`STANDARD_SOURCES`); default the base values on their independent columns.
    quality
        More ``quality`` keys (``validation``, ``physical_consistency``, ``warnings``).

    ``quality.plausibility`` holds the verdict of the plausibility gates (``ok`` and every problem).
    """
    mechanism, terms = dynamic_model.mechanism, dynamic_model.terms
    estimate = result.estimate
    joints = mechanism.actuated_joint_names
    errors = result.judged.joint_errors
    if standard is None:
        standard, standard_source = _base_standard(dynamic_model, result.values), "base"
    return ParameterFile.create(
        **_model_keys(dynamic_model),
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
            "uncertainty": uncertainty_section(result.uncertainty, result.uncertainty_fallback),
            "plausibility": {"ok": result.judged.plausible, "problems": list(result.judged.problems)},
            **(
                {}
                if result.observations.torque_delay is None
                else {"torque_delay": torque_delay_section(result.observations.torque_delay)}
            ),
            **(quality or {}),
        },
        stamp=stamp,
        settings=settings_record(settings),
        standard_parameters=standard_parameters_section(mechanism, terms, standard, source=standard_source),
    )


def _base_standard(dynamic_model: DynamicModel, values: Mapping[str, float]) -> np.ndarray:
    """:func:`standard_from_base` of the model's base parameters in the tree's layout
    (:func:`~dynamic_identification.core.mechanism.seam.tree_standard`)."""
    return tree_standard(dynamic_model.mechanism, dynamic_model.terms, standard_from_base(dynamic_model.base, values))


def window_parameter_file(
    dynamic_model: DynamicModel,
    update: WindowUpdate,
    *,
    stamp: float | None = None,
    settings: WindowSettings | None = None,
) -> ParameterFile:
    """The parameter YAML content of one sliding-window update.

    Parameters
    ----------
    dynamic_model
        The identified model, as given to the estimator (see :func:`identified_parameter_file`); the
        expressions of the kept names come from its base parameters.
    update
        An update with an estimate (normally a publishable one).
    stamp
        ``stamp`` of the file, s; default the update's data time ``update.time_s``.
    settings
        The window's settings, stored whole: its signal settings as the window used them
        (``settings.signal``, :func:`window_signal_settings`), the others as ``settings.window``;
        ``None`` stores none.

    Raises
    ------
    DataError
        When the update carries no estimate (or a non-finite value).
    """
    if not update.names:
        raise DataError(f"the update at {update.time_s:.6g} s has no estimate: {update.reason}")
    mechanism, terms, base = dynamic_model.mechanism, dynamic_model.terms, dynamic_model.base
    expression = dict(zip(base.names, base.expressions, strict=True))
    joints = mechanism.actuated_joint_names
    values = dict(zip(update.names, update.values.tolist(), strict=True))
    stored = (
        {}
        if settings is None
        else {
            "signal": dataclasses.asdict(
                window_signal_settings(
                    settings,
                    position_cutoff_hz=update.position_cutoff_hz,
                    recovered_stamps=update.recovered_stamps,
                )
            ),
            "window": {key: value for key, value in settings_record(settings).items() if key != "signal"},
        }
    )
    return ParameterFile.create(
        **_model_keys(dynamic_model),
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
            "uncertainty": uncertainty_section(update.uncertainty, update.uncertainty_fallback),
            **({} if update.torque_delay is None else {"torque_delay": torque_delay_section(update.torque_delay)}),
            "reason": update.reason,
        },
        stamp=update.time_s if stamp is None else stamp,
        settings=stored,
        standard_parameters=(
            standard_parameters_section(mechanism, terms, update.consistent_standard, source="consistent")
            if update.consistent_standard.size
            else standard_parameters_section(mechanism, terms, _base_standard(dynamic_model, values), source="base")
        ),
    )


def update_record(update: WindowUpdate, joints: tuple[str, ...], *, restarted: bool = False) -> dict[str, Any]:
    """One ``dynid stream`` JSON line of an update; non-finite numbers become ``None`` (JSON ``null``)."""
    return {
        "time": finite_or_none(update.time_s),
        "publishable": bool(update.publishable),
        "reason": update.reason,
        "parameters": {name: finite_or_none(v) for name, v in zip(update.names, update.values.tolist(), strict=True)},
        "removed": [name for name, _ in update.removed],
        "model_chosen_s": finite_or_none(update.model_chosen_s),
        "condition_number": finite_or_none(update.condition_number),
        "condition_number_full": finite_or_none(update.condition_number_full),
        "relative_error": finite_or_none(update.relative_error),
        "joint_relative_errors": per_joint(joints, update.joint_relative_errors),
        "samples": int(update.samples),
        "window_s": float(update.window_s),
        "data_s": float(update.data_s),
        "seconds": float(update.seconds),
        "position_cutoff_hz": finite_or_none(update.position_cutoff_hz),
        "consistency_shift_sigma": finite_or_none(update.consistency_shift_sigma),
        "consistency_cost": finite_or_none(update.consistency_cost),
        "torque_delay": None if update.torque_delay is None else torque_delay_section(update.torque_delay),
        "restarted": bool(restarted),
        "note": update.note,
    }


__all__ = [
    "IDIM_REGRESSION",
    "aligned_torque_delay_s",
    "STANDARD_SOURCES",
    "UNCERTAINTY_MEANINGS",
    "child_links",
    "finite_or_none",
    "identified_parameter_file",
    "per_joint",
    "quality_section",
    "standard_from_base",
    "standard_parameters_section",
    "uncertainty_section",
    "update_record",
    "window_parameter_file",
    "window_signal_settings",
]
