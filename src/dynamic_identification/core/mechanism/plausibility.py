"""Plausibility gates: a model no real robot could have is never published.

Least squares returns *some* numbers for any data: torques recorded in mN·m as if
they were N·m, a constant 1e300, a regression model that cannot determine the
parameters. Before a model leaves the package (``dynid identify``, ``dynid stream``,
the estimator node) it must pass these gates, derived from the robot's own
description:

* the torques it predicts on its own data stay within ``effort_factor`` times the
  effort limits;
* every drive-chain parameter is physically possible: ``|Fc|``, ``|off|``,
  ``|Fv| v_max`` and ``|Ia| a_max`` within ``effort_factor`` times the effort limit (a
  Coulomb friction beyond the motor's peak torque would never let the joint move; the
  factor leaves room for a reduced model, whose offset absorbs the gravity of a joint
  that barely moves);
* every inertial base parameter stays within what ``mass_factor`` times the URDF's
  total mass can produce at the robot's reach: ``|M| <= m``, ``|MX| <= m r``,
  ``|XX| <= m r²`` (base parameters regroup standard ones of the same dimension, so
  the bound holds for them too);
* every value is finite.

Joints of unknown effort limit (URDF ``effort="0"`` or none, no ``limits.effort``)
skip the torque gates; a URDF without masses skips the inertial gates.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.excitation.safety import DEFAULT_ACCELERATION_PER_VELOCITY_HZ
from dynamic_identification.core.mechanism.closed_loop import tree_values
from dynamic_identification.core.mechanism.robot import RobotModel, limit_bounds
from dynamic_identification.core.mechanism.seam import Mechanism, mechanism_of
from dynamic_identification.core.settings_schema import default

DEFAULT_EFFORT_FACTOR: float = default("plausibility.effort_factor")
"""Predicted torques, viscous and inertial drive torques may reach this many effort limits."""

DEFAULT_MASS_FACTOR: float = default("plausibility.mass_factor")
"""Inertial base parameters may reach what this many times the URDF's total mass produces."""

_NAME = re.compile(r"^(M|MX|MY|MZ|XX|XY|YY|XZ|YZ|ZZ|Ia|Fv|Fc|off)(\d+)$")
_DIMENSION = {"M": 0, "MX": 1, "MY": 1, "MZ": 1, "XX": 2, "XY": 2, "YY": 2, "XZ": 2, "YZ": 2, "ZZ": 2}
_UNITS = ("kg", "kg·m", "kg·m²")


class ImplausibleModelError(IdentificationError):
    """An identified model fails a plausibility gate; ``problems`` lists every failure."""

    def __init__(self, problems: Sequence[str], *, hint: str = "") -> None:
        self.problems = tuple(problems)
        self.hint = hint
        shown = "; ".join(self.problems[:4]) + (
            f"; and {len(self.problems) - 4} more" if len(self.problems) > 4 else ""
        )
        # The hint goes first: bounded one-line messages may shorten the list of problems.
        super().__init__(f"implausible model{f' ({hint})' if hint else ''}: {shown}")


@dataclass(frozen=True)
class PlausibilityBounds:
    """What a real model of this robot can look like.

    Attributes
    ----------
    joint_names
        Joints, in model order.
    effort
        Effort limits, N·m; ``∞`` where unknown.
    velocity, acceleration
        Velocity (rad/s) and acceleration (rad/s²) limits.
    mass_kg
        Bound on mass-like parameters (``mass_factor`` × the URDF's total mass), kg;
        ``∞`` when the URDF has no masses.
    reach_m
        Bound on the distance of any body's centre of mass from the base, m.
    effort_factor
        How many effort limits predicted, viscous and inertial drive torques may reach.
    equations
        Index in :attr:`joint_names` of the joint of each equation column (of the
        predicted peak torques); ``None``: one column per joint, in order. A closed-loop
        robot's equations are its actuated joints' ([Briot2012] eq. (6)) while its
        parameter names number every joint of the opened tree.
    """

    joint_names: tuple[str, ...]
    effort: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    mass_kg: float
    reach_m: float
    effort_factor: float = DEFAULT_EFFORT_FACTOR
    equations: tuple[int, ...] | None = None

    @property
    def equation_joints(self) -> tuple[int, ...]:
        """Index in :attr:`joint_names` of the joint of each equation column (:attr:`equations`, or every joint)."""
        return tuple(range(len(self.joint_names))) if self.equations is None else self.equations

    @property
    def equation_effort(self) -> np.ndarray:
        """The effort limit of each equation column's joint, N·m (``∞`` where unknown): what a measured torque of
        that column is judged against."""
        return self.effort[list(self.equation_joints)]

    @classmethod
    def from_robot(
        cls,
        robot: RobotModel,
        *,
        effort_limits: Sequence[float] | np.ndarray | None = None,
        acceleration_limits: Sequence[float] | np.ndarray | None = None,
        effort_factor: float = DEFAULT_EFFORT_FACTOR,
        mass_factor: float = DEFAULT_MASS_FACTOR,
    ) -> PlausibilityBounds:
        """Bounds from the URDF (and configured limits that replace the URDF's).

        Raises
        ------
        IdentificationError
            When a factor is not finite and >= 1, or a limit list has the wrong length.
        """
        for name, value in (("effort_factor", effort_factor), ("mass_factor", mass_factor)):
            if not (np.isfinite(value) and value >= 1.0):
                raise IdentificationError(f"{name} must be finite and >= 1, got {value}")
        n = robot.n_joints
        effort = robot.effort_limits if effort_limits is None else np.asarray(effort_limits, dtype=float)
        velocity = robot.velocity_limits
        if acceleration_limits is None:
            acceleration = DEFAULT_ACCELERATION_PER_VELOCITY_HZ * velocity
        else:
            acceleration = np.asarray(acceleration_limits, dtype=float)
        for name, limits in (("effort_limits", effort), ("acceleration_limits", acceleration)):
            if limits.shape != (n,):
                raise IdentificationError(f"{name} must have {n} entries, got {limits.tolist()}")
        model = robot.model
        masses = [model.inertias[j].mass for j in range(1, model.njoints)]
        total = float(sum(masses))
        return cls(
            joint_names=robot.joint_names,
            effort=limit_bounds(effort),
            velocity=limit_bounds(velocity),
            acceleration=limit_bounds(acceleration),
            mass_kg=mass_factor * total if total > 0.0 else np.inf,
            reach_m=_reach(robot),
            effort_factor=float(effort_factor),
        )


def _reach(robot: RobotModel) -> float:
    """Upper bound on any centre of mass's distance from the base, m: the joint offsets along the chain to the
    body plus its centre-of-mass offset, at least 0.1 m."""
    model = robot.model
    along = np.zeros(model.njoints)
    reach = 0.1
    for j in range(1, model.njoints):
        along[j] = along[model.parents[j]] + float(np.linalg.norm(model.jointPlacements[j].translation))
        reach = max(reach, along[j] + float(np.linalg.norm(model.inertias[j].lever)))
    return reach


@functools.lru_cache(maxsize=1024)
def _parameter_kind(name: str) -> tuple[str, int] | None:
    """The kind (``ZZ``, ``Fc`` …) and the 0-based joint of a parameter named as :data:`_NAME` says, else ``None``;
    parsed once per name (a sliding window checks the same names at every update)."""
    match = _NAME.match(name)
    return None if match is None else (match.group(1), int(match.group(2)) - 1)


def model_problems(
    bounds: PlausibilityBounds,
    names: Sequence[str],
    values: Sequence[float] | np.ndarray,
    *,
    predicted_peak: np.ndarray | None = None,
) -> tuple[str, ...]:
    """Every plausibility gate ``(names, values)`` fails, as one-line texts; empty when plausible.

    Parameters
    ----------
    names, values
        Base- or standard-parameter names (``ZZ1``, ``Fc3`` …; a base parameter is
        named after its independent column) and values in SI units.
    predicted_peak
        Largest ``|τ̂_j|`` (N·m) the model predicts on its own data, per equation
        column (:attr:`PlausibilityBounds.equations`); ``None`` skips that gate.
    """
    problems: list[str] = []
    array = np.asarray(values, dtype=float).ravel()
    effort, factor = bounds.effort, bounds.effort_factor
    for name, value in zip(names, array, strict=True):
        if not np.isfinite(value):
            problems.append(f"{name} = {value} is not finite")
            continue
        parsed = _parameter_kind(name)
        if parsed is None:
            continue
        kind, index = parsed
        if not 0 <= index < len(bounds.joint_names):
            continue
        joint = bounds.joint_names[index]
        if kind in ("Fc", "off") and abs(value) > factor * effort[index]:
            problems.append(
                f"{name} = {value:.4g} N·m exceeds {factor:g} × the effort limit {effort[index]:.4g} N·m of {joint}"
            )
        elif kind == "Fv" and abs(value) * bounds.velocity[index] > factor * effort[index]:
            problems.append(
                f"{name} = {value:.4g} N·m·s/rad needs {abs(value) * bounds.velocity[index]:.4g} N·m at the velocity"
                f" limit, more than {factor:g} × the effort limit {effort[index]:.4g} N·m of {joint}"
            )
        elif kind == "Ia" and abs(value) * bounds.acceleration[index] > factor * effort[index]:
            problems.append(
                f"{name} = {value:.4g} kg·m² needs {abs(value) * bounds.acceleration[index]:.4g} N·m at the"
                f" acceleration limit, more than {factor:g} × the effort limit {effort[index]:.4g} N·m of {joint}"
            )
        elif kind in _DIMENSION:
            power = _DIMENSION[kind]
            limit = bounds.mass_kg * bounds.reach_m**power
            if abs(value) > limit:
                problems.append(
                    f"{name} = {value:.4g} {_UNITS[power]} is beyond {limit:.4g} {_UNITS[power]}, what"
                    f" {bounds.mass_kg:.4g} kg at {bounds.reach_m:.3g} m can produce"
                )
    if predicted_peak is not None:
        peak = np.asarray(predicted_peak, dtype=float)
        for column, j in enumerate(bounds.equation_joints):
            joint = bounds.joint_names[j]
            if not np.isfinite(peak[column]):
                problems.append(f"the predicted torque of {joint} is not finite")
            elif peak[column] > factor * effort[j]:
                problems.append(
                    f"the predicted torque of {joint} reaches {peak[column]:.4g} N·m on its own data, more than"
                    f" {factor:g} × its effort limit {effort[j]:.4g} N·m (torques in the wrong unit?)"
                )
    return tuple(problems)


def check_model(
    bounds: PlausibilityBounds,
    names: Sequence[str],
    values: Sequence[float] | np.ndarray,
    *,
    predicted_peak: np.ndarray | None = None,
    hint: str = "",
) -> None:
    """Raise :class:`ImplausibleModelError` listing every gate :func:`model_problems` finds failed."""
    problems = model_problems(bounds, names, values, predicted_peak=predicted_peak)
    if problems:
        raise ImplausibleModelError(problems, hint=hint)


def mechanism_bounds(
    mechanism: RobotModel | Mechanism,
    *,
    effort_limits: Sequence[float] | np.ndarray | None = None,
    acceleration_limits: Sequence[float] | np.ndarray | None = None,
    effort_factor: float = DEFAULT_EFFORT_FACTOR,
    mass_factor: float = DEFAULT_MASS_FACTOR,
) -> PlausibilityBounds:
    """The plausibility gates of a mechanism: those of its tree (:meth:`PlausibilityBounds.from_robot`: URDF
    limits, total mass, reach), with the predicted torques judged on the controlled joints, whose equations the
    IDIM has ([Briot2012] eq. (6)).

    ``effort_limits`` (N·m) and ``acceleration_limits`` (rad/s²) replace the URDF's, one value per
    controlled joint or per tree joint.

    Raises
    ------
    IdentificationError
        A limit list of another length, or a factor below 1.
    """
    mechanism = mechanism_of(mechanism)
    robot = mechanism.robot
    if not mechanism.closures:
        return PlausibilityBounds.from_robot(
            robot,
            effort_limits=effort_limits,
            acceleration_limits=acceleration_limits,
            effort_factor=effort_factor,
            mass_factor=mass_factor,
        )
    bounds = PlausibilityBounds.from_robot(
        robot,
        effort_limits=tree_values(mechanism, "limits.effort", effort_limits, robot.effort_limits),
        acceleration_limits=tree_values(
            mechanism,
            "limits.acceleration",
            acceleration_limits,
            DEFAULT_ACCELERATION_PER_VELOCITY_HZ * robot.velocity_limits,
        ),
        effort_factor=effort_factor,
        mass_factor=mass_factor,
    )
    return replace(bounds, equations=tuple(int(j) for j in mechanism.actuated))
