"""Payload YAML and drive-gains YAML.

Payload file (``dynid payload --out``, ``/estimator/payload``, the ``--payload`` of
``dynid gains``)::

    format: dynamic_identification/payload/v1     # optional on reading
    payload:
      frame: tool0                                 # Pinocchio frame the load is fixed to
      mass_kg: 3.5
      com_m: [0.04, -0.02, 0.09]                   # centre of mass in the frame, m
      inertia_kg_m2: {ixx: 0.014, ixy: -0.003, ixz: -0.002, iyy: 0.019, iyz: -0.003, izz: 0.025}
                                                   # about the centre of mass, frame axes (URDF entries)
      std: {mass_kg: 0.001, com_m: [...], inertia_kg_m2: {ixx: ..., ...}}   # optional
    identification: {method: ml, residual_std: 1.0, ...}                   # optional, not read

Drive-gains file (``dynid gains --out``): a ROS 2 parameter file whose ``/**`` block
holds the identified drive chain, so it can be given to the nodes
(``--params-file``, after the main configuration) and to ``dynid --config`` as is::

    /**:
      ros__parameters:
        joints: [joint_1, ...]
        drive_chain:
          gear_ratios: [...]       # motor rad per joint rad (as given)
          drive_gains: [...]       # identified motor torque constants, N·m/A
          coupling: [...]          # n×n row by row (as given)
    drive_gains_identification:    # a block no node is named after: nodes and load_config ignore it
      ros__parameters:
        method: idim-tls
        reference: "[Briot2012] eq. (13)"
        drive_gains_std: [...]     # N·m/A
        nominal_drive_gains: [...] # N·m/A
        efficiency: [...]          # transmission efficiency per motor ([Swevers2002] eq. (8)), with efficiency
        efficiency_std: [...]      #   on (the default); 1 and 0 where efficiency_identified is false
        efficiency_identified: [true, ...]
        model: {chosen: one gain, reason: "...", wald_statistic: 12.1, p_value: 0.28, ...}   # which model and why
        quality: {residual_std: ..., relative_error: ..., condition_number: ..., ...}
        payload: {frame: tool0, mass_kg: 4.0}

Files are read and written as every document of the package (:mod:`~dynamic_identification.io.documents`); a
write is atomic (a temporary file in the same directory, then :func:`os.replace`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dynamic_identification.core.errors import DataError
from dynamic_identification.core.identification.drive_gains import SIGNIFICANCE, DriveGainsResult
from dynamic_identification.core.mechanism.payload import (
    INERTIA_KEYS,
    Payload,
    PayloadError,
    PayloadStd,
    inertia_entries,
)
from dynamic_identification.core.mechanism.robot import DriveChain
from dynamic_identification.io.atomic import write_text_atomic
from dynamic_identification.io.documents import document_text, parse_yaml, yaml_text
from dynamic_identification.io.parameter_files import finite_or_none

if TYPE_CHECKING:
    from dynamic_identification.core.identification.payload import PayloadEstimate
    from dynamic_identification.core.identification.payload_in_process import PayloadOutcome
    from dynamic_identification.core.signal.periodic import PeriodicStretch

FORMAT = "dynamic_identification/payload/v1"
"""Value of the optional ``format`` key of a payload file."""

GAINS_BLOCK = "drive_gains_identification"
"""Top-level key of the drive-gains file that holds σ and quality (no node has this name)."""

_PAYLOAD_KEYS: tuple[str, ...] = ("frame", "mass_kg", "com_m", "inertia_kg_m2")
_OPTIONAL_PAYLOAD_KEYS: tuple[str, ...] = ("std",)
_STD_KEYS: tuple[str, ...] = ("mass_kg", "com_m", "inertia_kg_m2")


# --------------------------------------------------------------------------- payload


def payload_document(payload: Payload, *, identification: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The mapping written by :func:`dump_payload` (see the module docstring)."""
    body: dict[str, Any] = {
        "frame": payload.frame,
        "mass_kg": payload.mass_kg,
        "com_m": payload.com_m,
        "inertia_kg_m2": inertia_entries(payload.inertia_kg_m2),
    }
    if payload.std is not None:
        body["std"] = {
            "mass_kg": payload.std.mass_kg,
            "com_m": payload.std.com_m,
            "inertia_kg_m2": inertia_entries(payload.std.inertia_kg_m2),
        }
    document: dict[str, Any] = {"format": FORMAT, "payload": body}
    if identification:
        document["identification"] = dict(identification)
    return document


def dump_payload(payload: Payload, *, identification: Mapping[str, Any] | None = None) -> str:
    """YAML text of ``payload``; :func:`parse_payload` of it returns an equal payload.

    ``identification`` (method, residual σ, efficiencies, …) is written under its own
    key for people and logs; the reader ignores it.
    """
    return yaml_text(payload_document(payload, identification=identification))


def parse_payload(text: str, *, source: str = "payload text") -> Payload:
    """Parse payload YAML ``text``; ``source`` names it in error messages.

    Raises
    ------
    DataError
        Not YAML, not a mapping, a wrong ``format``, a missing or unknown key, a value
        of the wrong type (one line naming ``source`` and the key).
    PayloadError
        A non-physical payload: mass not > 0, inertia not positive definite about the
        centre of mass or violating the triangle inequality.
    """
    document = parse_yaml(text, source)
    if not isinstance(document, Mapping):
        raise DataError(f"{source} must be a YAML mapping with a 'payload' key, got {type(document).__name__}")
    if "format" in document and document["format"] != FORMAT:
        raise DataError(f"{source} has format {document['format']!r}, expected {FORMAT!r}")
    if "payload" not in document:
        raise DataError(f"{source} misses the key 'payload'")
    body = document["payload"]
    if not isinstance(body, Mapping):
        raise DataError(f"payload in {source} must be a mapping, got {body!r}")
    _check_keys(body, "payload", source, needed=_PAYLOAD_KEYS, known=_PAYLOAD_KEYS + _OPTIONAL_PAYLOAD_KEYS)
    if not isinstance(body["frame"], str) or not body["frame"]:
        raise DataError(f"payload.frame in {source} must be a frame name, got {body['frame']!r}")
    try:
        std = _std(body.get("std"), source)
        return Payload.create(
            body["frame"],
            mass_kg=_number(body["mass_kg"], "payload.mass_kg", source),
            com_m=_vector(body["com_m"], "payload.com_m", source),
            inertia_kg_m2=_inertia(body["inertia_kg_m2"], "payload.inertia_kg_m2", source),
            std=std,
        )
    except PayloadError as error:
        raise PayloadError(f"{source}: {error}") from error


def load_payload(path_or_text: str | os.PathLike[str]) -> Payload:
    """Load a payload file from a path, or parse YAML text (a string with a newline, e.g. ``/estimator/payload``).

    Raises
    ------
    DataError, PayloadError
        As :func:`parse_payload`; a missing or unreadable file is a :class:`DataError`.
    """
    text, path = document_text(path_or_text, "payload")
    if path is None:
        return parse_payload(text)
    return parse_payload(text, source=str(path))


def write_payload_atomic(
    path: str | os.PathLike[str], payload: Payload, *, identification: Mapping[str, Any] | None = None
) -> None:
    """Write :func:`dump_payload` of ``payload`` to ``path`` atomically."""
    write_text_atomic(path, dump_payload(payload, identification=identification))


def _check_keys(
    value: Mapping[str, Any], key: str, source: str, *, needed: Sequence[str], known: Sequence[str]
) -> None:
    """Refuse the mapping at ``key`` of ``source`` when it misses one of ``needed`` or has a key not ``known``."""
    missing = [name for name in needed if name not in value]
    if missing:
        raise DataError(f"{source} misses the key '{key}.{missing[0]}' (needs {list(needed)})")
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise DataError(f"unknown keys {unknown} in {key} of {source} (known: {list(known)})")


def _number(value: Any, key: str, source: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DataError(f"{key} in {source} must be a number, got {value!r}")
    if not math.isfinite(float(value)):
        raise DataError(f"{key} in {source} must be finite, got {value!r}")
    return float(value)


def _vector(value: Any, key: str, source: str) -> list[float]:
    if not isinstance(value, list) or len(value) != 3:
        raise DataError(f"{key} in {source} must be a list [x, y, z], got {value!r}")
    return [_number(item, f"{key}[{i}]", source) for i, item in enumerate(value)]


def _inertia(value: Any, key: str, source: str) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise DataError(f"{key} in {source} must be a mapping of {list(INERTIA_KEYS)}, got {value!r}")
    _check_keys(value, key, source, needed=INERTIA_KEYS, known=INERTIA_KEYS)
    return {name: _number(value[name], f"{key}.{name}", source) for name in INERTIA_KEYS}


def _std(value: Any, source: str) -> PayloadStd | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise DataError(f"payload.std in {source} must be a mapping, got {value!r}")
    _check_keys(value, "payload.std", source, needed=_STD_KEYS, known=_STD_KEYS)
    return PayloadStd(
        mass_kg=_number(value["mass_kg"], "payload.std.mass_kg", source),
        com_m=np.array(_vector(value["com_m"], "payload.std.com_m", source)),
        inertia_kg_m2=np.array(
            [_inertia(value["inertia_kg_m2"], "payload.std.inertia_kg_m2", source)[name] for name in INERTIA_KEYS]
        ),
    )


def _optional(value: float) -> float | None:
    """``value``, or ``None`` when it is NaN (not estimated)."""
    return None if not math.isfinite(float(value)) else float(value)


def payload_identification_record(estimate: PayloadEstimate, joints: Sequence[str]) -> dict[str, Any]:
    """The ``identification`` section of a payload file: method, fit quality and the drive terms estimated with it.

    Per-joint values are mappings by joint name; a value that was not estimated (a motor
    that did not move) is ``null``. ``torque_delay_s`` (s) is the delay the torques were read with, when not 0.
    """
    names = list(joints)

    def per_joint(values: np.ndarray) -> dict[str, float | None]:
        return {name: _optional(value) for name, value in zip(names, values, strict=True)}

    return {
        "method": estimate.method,
        "reference": "[Swevers2002] eq. (18)" if estimate.method == "ml" else "[Swevers2002] §3.2 (linear estimate)",
        "residual_std": estimate.residual_std,
        "relative_error": estimate.relative_error,
        "equations": estimate.equations,
        "converged": estimate.converged,
        "at_bound": estimate.at_bound,
        "projected": estimate.projected,
        "inertia_fixed": estimate.inertia_fixed,
        "principal_moments_kg_m2": estimate.payload.principal_moments(),
        "moving_joints": [name for name, moving in zip(names, estimate.actuated, strict=True) if moving],
        "efficiency": per_joint(estimate.efficiency),
        "efficiency_std": per_joint(estimate.efficiency_std),
        "viscous_friction": per_joint(estimate.viscous),
        "coulomb_friction": per_joint(estimate.coulomb),
        **({} if estimate.stretch is None else {"periodic_stretch": periodic_stretch_record(estimate.stretch)}),
        **({"torque_delay_s": estimate.torque_delay_s} if estimate.torque_delay_s else {}),
    }


def periodic_stretch_record(stretch: PeriodicStretch) -> dict[str, Any]:
    """The ``identification.periodic_stretch`` section: which stretch of the recording was averaged as periods."""
    return {
        "start_s": stretch.start_s,
        "stop_s": stretch.stop_s,
        "periods": stretch.periods,
        "mismatch": stretch.mismatch,
    }


def prior_correction_record(outcome: PayloadOutcome) -> dict[str, Any]:
    """The ``identification.prior_correction`` section: what the motion before the trigger added to the robot prior.

    ``applied: false`` with the ``reason`` when the prior was used as it is
    (:class:`~dynamic_identification.core.identification.payload.PriorCorrection`).
    """
    correction = outcome.correction
    if correction is None:
        return {"applied": False, "reason": outcome.correction_note}
    phi = correction.dynamic_parameters
    std = np.sqrt(np.diag(correction.covariance))
    return {
        "applied": True,
        "mass_kg": float(phi[0]),
        "first_moment_kg_m": [float(value) for value in phi[1:4]],
        "first_moment_std_kg_m": [float(value) for value in std[1:4]],
        "equations": correction.equations,
    }


def format_payload_estimate(estimate: PayloadEstimate, joints: Sequence[str], *, polynomial: bool = False) -> str:
    """A table of an identified payload: mass, centre of mass, inertia about it, each with σ; then the fit."""
    payload = estimate.payload
    std = payload.std
    method = (
        "maximum likelihood ([Swevers2002] eq. (18))"
        if estimate.method == "ml"
        else "linear estimate ([Swevers2002] §3.2)"
    )
    losses = "efficiency estimated" if np.any(np.isfinite(estimate.efficiency_std)) else "no efficiency"
    conversion = "current polynomial ([Swevers2002] eq. (4))" if polynomial else "drive gains"
    inertia = inertia_entries(payload.inertia_kg_m2)
    inertia_std = inertia_entries(std.inertia_kg_m2) if std is not None else dict.fromkeys(INERTIA_KEYS, math.nan)
    rows = [("mass", payload.mass_kg, std.mass_kg if std is not None else math.nan, "kg")]
    rows += [
        (f"com {axis}", float(payload.com_m[i]), float(std.com_m[i]) if std is not None else math.nan, "m")
        for i, axis in enumerate("xyz")
    ]
    rows += [(f"inertia {key}", inertia[key], inertia_std[key], "kg·m²") for key in INERTIA_KEYS]
    lines = [
        f"payload on {payload.frame} by {method}, {losses}, currents through the {conversion}:",
        f"{'quantity':<12} {'value':>12} {'σ':>11} {'σ %':>8}  unit",
    ]
    for name, value, sigma, unit in rows:
        percent = 100.0 * sigma / abs(value) if value != 0.0 else math.inf
        lines.append(f"{name:<12} {value:>12.6g} {sigma:>11.3g} {percent:>8.2f}  {unit}")
    moments = payload.principal_moments()
    lines.append(
        "principal moments about the centre of mass: " + ", ".join(f"{value:.6g}" for value in moments) + " kg·m²"
        " (centre of mass in the frame, inertia about it in frame axes)"
    )
    moving = [name for name, flag in zip(joints, estimate.actuated, strict=True) if flag]
    lines.append(
        f"fit: {estimate.equations} equations of the moving joints {moving}, weighted residual σ"
        f" {estimate.residual_std:.4g}, relative error {estimate.relative_error:.4g}"
    )
    if estimate.torque_delay_s:
        from dynamic_identification.core.identification.torque_delay import later_text

        lines.append(
            f"torques: read {later_text(estimate.torque_delay_s)} than recorded, as the robot's identification aligned"
            " them (quality.torque_delay)"
        )
    if estimate.stretch is not None:
        stretch = estimate.stretch
        lines.append(
            f"periods: {stretch.periods} averaged, from {stretch.start_s:.6g} s to {stretch.stop_s:.6g} s of the"
            f" recording (positions one period apart within {100.0 * stretch.mismatch:.2g} % of their travel beyond"
            " the noise)"
        )
    if np.any(np.isfinite(estimate.efficiency_std)):
        lines.append(
            "transmission efficiency R_z ([Swevers2002] eq. (8)): "
            + ", ".join(
                f"{name} {value:.4f}"
                for name, value, flag in zip(joints, estimate.efficiency, estimate.actuated, strict=True)
                if flag
            )
        )
    if estimate.inertia_fixed:
        lines.append(
            "note: the motion does not determine the inertia: it is a solid sphere's of the load's mass, its σ"
            " its own size; mass and centre of mass were estimated with it fixed ([Swevers2002] §3.2)"
        )
    if estimate.at_bound:
        lines.append(
            "warning: the inertia is at the physical bound (a flat or thin body): the data or errors of the robot's"
            " model ask for a non-physical inertia; mass and centre of mass are usually still good"
        )
    if not estimate.converged:
        lines.append("warning: the maximum-likelihood search stopped before it converged")
    return "\n".join(lines)


# --------------------------------------------------------------------------- drive gains


def drive_gains_document(
    result: DriveGainsResult,
    drive_chain: DriveChain,
    joints: Sequence[str],
    *,
    payload: Payload | None = None,
    stamp: float = 0.0,
) -> dict[str, Any]:
    """The mapping written by :func:`dump_drive_gains` (see the module docstring).

    ``drive_chain`` supplies the gear ratios and coupling the gains were identified
    with; ``joints`` the model joint order.
    """
    n = drive_chain.n_joints
    if len(joints) != n or result.drive_gains.shape != (n,):
        raise DataError(f"{len(joints)} joints and {result.drive_gains.shape[0]} gains for a {n}-joint drive chain")
    quality: dict[str, Any] = {
        "residual_std": result.residual_std,
        "relative_error": result.relative_error,
        "condition_number": result.condition_number,
        "smallest_singular_value": result.smallest_singular_value,
        "samples_unloaded": result.samples[0],
        "samples_loaded": result.samples[1],
        "base_parameters": len(result.names),
    }
    block: dict[str, Any] = {
        "method": "idim-tls",
        "reference": "[Briot2012] eq. (13)",
        "drive_gains_std": result.drive_gains_std,
        "nominal_drive_gains": result.nominal_drive_gains,
        "quality": quality,
        "stamp": float(stamp),
    }
    if result.efficiency is not None and result.efficiency_std is not None:
        # Lists of one type (ROS parameter arrays): 1 and σ 0 where not identified, said by efficiency_identified.
        identified = result.efficiency_identified
        block["efficiency"] = np.where(identified, result.efficiency, 1.0)
        block["efficiency_std"] = np.where(identified, result.efficiency_std, 0.0)
        block["efficiency_identified"] = [bool(ok) for ok in identified]
        block["reference"] = "[Briot2012] eq. (13), [Swevers2002] eq. (8)"
    choice = result.model_choice
    if choice is not None:
        block["model"] = {
            "chosen": choice.model,
            "reason": choice.reason,
            "wald_statistic": finite_or_none(choice.statistic),
            "extra_unknowns": choice.dof,
            "p_value": finite_or_none(choice.p_value),
            "significance": SIGNIFICANCE,
            "relative_error_one_gain": finite_or_none(choice.relative_error_one_gain),
            "relative_error_efficiency": finite_or_none(choice.relative_error_efficiency),
            "left_out": list(choice.left_out),
        }
    if payload is not None:
        block["payload"] = {"frame": payload.frame, "mass_kg": payload.mass_kg}
    if result.warnings:  # an empty list has no ROS parameter type
        block["warnings"] = list(result.warnings)
    return {
        "/**": {
            "ros__parameters": {
                "joints": list(joints),
                "drive_chain": {
                    "gear_ratios": drive_chain.gear_ratios,
                    "drive_gains": result.drive_gains,
                    "coupling": drive_chain.coupling.ravel(),
                },
            }
        },
        GAINS_BLOCK: {"ros__parameters": block},
    }


def dump_drive_gains(
    result: DriveGainsResult,
    drive_chain: DriveChain,
    joints: Sequence[str],
    *,
    payload: Payload | None = None,
    stamp: float = 0.0,
) -> str:
    """YAML text of the drive-gains file, with a comment line naming the method."""
    header = "# Drive gains identified by IDIM-TLS with a known payload ([Briot2012] eq. (13)); units N·m/A.\n"
    return header + yaml_text(drive_gains_document(result, drive_chain, joints, payload=payload, stamp=stamp))


def write_drive_gains_atomic(
    path: str | os.PathLike[str],
    result: DriveGainsResult,
    drive_chain: DriveChain,
    joints: Sequence[str],
    *,
    payload: Payload | None = None,
    stamp: float = 0.0,
) -> None:
    """Write :func:`dump_drive_gains` to ``path`` atomically."""
    write_text_atomic(path, dump_drive_gains(result, drive_chain, joints, payload=payload, stamp=stamp))


def load_drive_gains_std(path: str | os.PathLike[str]) -> tuple[np.ndarray, np.ndarray]:
    """The identified drive gains and their σ (N·m/A) of a drive-gains file.

    The gains themselves are read like any configuration, by
    :func:`~dynamic_identification.io.config.load_config`; this reads both for reports.

    Raises
    ------
    DataError
        Missing file, not YAML, or a missing key (named).
    """
    text, file = document_text(Path(path), "drive-gains")
    document = parse_yaml(text, f"drive-gains file {file}")
    try:
        gains = document["/**"]["ros__parameters"]["drive_chain"]["drive_gains"]
        std = document[GAINS_BLOCK]["ros__parameters"]["drive_gains_std"]
    except (KeyError, TypeError) as error:
        raise DataError(f"{file} misses the key {error} of a drive-gains file") from None
    try:
        return np.array(gains, dtype=float), np.array(std, dtype=float)
    except (TypeError, ValueError) as error:
        raise DataError(f"drive gains in {file} must be lists of numbers: {error}") from None


__all__ = [
    "FORMAT",
    "GAINS_BLOCK",
    "drive_gains_document",
    "dump_drive_gains",
    "dump_payload",
    "format_payload_estimate",
    "load_drive_gains_std",
    "load_payload",
    "parse_payload",
    "payload_identification_record",
    "payload_document",
    "write_drive_gains_atomic",
    "write_payload_atomic",
]
