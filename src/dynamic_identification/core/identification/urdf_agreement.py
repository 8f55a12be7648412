"""Does the URDF describe the robot that was recorded? Its nominal model against the recorded torques.

Identification fits the base parameters whatever URDF it is given: the URDF of another
arm (a UR10's for a UR5, another gripper, a wrong joint axis) still gives a model, and
the error only shows later as poor predictions or a consistent estimate far from the
data. The URDF's own inertial parameters say what torques it expects; they are rarely
exact (CAD masses, missing cables), but they are of the right size and shape.

The test fits, on the identification's own rows (filtered, decimated, stick phases left
out: [Gautier2013] eq. (13)-(14)), the recorded torques ``y`` with the URDF's nominal
torques ``ŷ = W K φ_URDF`` scaled by one factor ``s``, plus the drive terms of every joint
(rotor inertia, viscous and Coulomb friction, offset: columns of ``W``, which the URDF
does not give), each joint's equations weighted by its RMS torque so that the wrist
counts as much as the shoulder. Then

* ``s`` is how the recorded load compares with the URDF's: outside
  ``[1 / MAX_SCALE, MAX_SCALE]`` the URDF's masses (or the drive gains and gear ratios that
  made the torques) are off by more than a factor :data:`MAX_SCALE`;
* ``relative_error`` (‖y − s ŷ − D d‖ / ‖y‖) is how much of the torques the URDF's model
  shape leaves unexplained: above :data:`MAX_RELATIVE_ERROR` its kinematics or mass
  distribution do not match the motion (a wrong axis, another arm's geometry).

On the realistic recordings of the shipped arm, a UR5 and a Panda
(:mod:`~dynamic_identification.testing.realistic`, their URDFs) ``s`` is 0.99-1.03 and the
error 0.04-0.27; a UR5 recording with a UR10's URDF (same joint names) gives ``s`` = 0.47.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynamic_identification.core.estimation.least_squares import column_triangle, stacked_triangle
from dynamic_identification.core.identification.solve import FRICTION_PREFIXES, IdentificationResult
from dynamic_identification.core.mechanism.robot import RobotModel

MAX_SCALE = 1.5
"""Largest factor between the recorded load and the URDF's (either way) before a warning."""

MAX_RELATIVE_ERROR = 0.5
"""Largest share of the recorded torques (norm) the URDF's nominal model with drive terms may leave unexplained."""

_DRIVE_PREFIXES = ("Ia", *FRICTION_PREFIXES, "off")


@dataclass(frozen=True)
class UrdfAgreement:
    """How the URDF's nominal model fits the recorded torques (module docstring).

    Attributes
    ----------
    scale
        ``s``: recorded torques per URDF torque, fitted with the drive terms free.
    relative_error
        ‖y − s ŷ − D d‖ / ‖y‖ on the joint-normalised equations.
    relative_error_without
        The same with the drive terms alone (no URDF): how much the URDF explained.
    """

    scale: float
    relative_error: float
    relative_error_without: float

    def warning(self, urdf: str) -> str | None:
        """One sentence when the URDF does not describe the recorded robot, else ``None``."""
        problems = []
        if not (1.0 / MAX_SCALE <= self.scale <= MAX_SCALE):
            ratio = 1.0 / self.scale if self.scale > 0.0 else np.inf
            problems.append(f"it predicts {ratio:.3g} times the recorded torques (fitted scale {self.scale:.3g})")
        if self.relative_error > MAX_RELATIVE_ERROR:
            problems.append(
                f"its nominal model with friction leaves {100 * self.relative_error:.0f} % of the recorded torques"
                f" unexplained ({100 * self.relative_error_without:.0f} % without it)"
            )
        if not problems:
            return None
        return (
            f"the URDF {urdf} does not look like the recorded robot: {'; '.join(problems)}; is it this robot's URDF"
            " (geometry, masses, joint axes), and are drive_chain.drive_gains and gear_ratios right?"
        )


def urdf_agreement(robot: RobotModel, result: IdentificationResult) -> UrdfAgreement | None:
    """The agreement of ``robot``'s URDF inertias with the torques of an IDIM identification ``result`` of it.

    ``None`` when it cannot be judged: not the IDIM (``result.observations.model``), a URDF
    without inertias, or no valid equation.
    """
    observations = result.observations
    if observations.model != "dynamic":
        return None
    base = result.base
    inertial = robot.standard_inertial_parameters()  # (n, 10); the URDF gives no drive term: zeros
    drive_terms = len(base.standard_names) // robot.n_joints - inertial.shape[1]
    urdf_standard = np.concatenate([inertial, np.zeros((robot.n_joints, drive_terms))], axis=1).ravel()
    nominal = base.from_standard(urdf_standard)
    drive = np.array([i for i, name in enumerate(base.names) if name.startswith(_DRIVE_PREFIXES)], dtype=int)
    matrix, torques = observations.observation_matrix, observations.torques
    nominal_torques = (matrix.reshape(-1, matrix.shape[2]) @ nominal).reshape(torques.shape)
    # The drive columns that can act on each joint's equations (its own, and those its drive couples in,
    # BaseParameters.structure): the others are zero in its rows.
    acting = base.structure[:, drive]
    # [ŷ | D | y] of every joint's normalised equations, reduced to its R one joint at a time from its non-zero
    # columns (column_triangle); the joints' triangles are then stacked and reduced to one R. The 290 k x 26 design
    # of a 600 k-sample recording is never built, and Qᵀ keeps every residual norm.
    triangles = [np.zeros((0, drive.size + 2))]
    for j in range(torques.shape[1]):
        valid = observations.valid[:, j]
        rms = float(np.sqrt(np.mean(torques[valid, j] ** 2))) if valid.any() else 0.0
        if rms > 0.0:
            columns = np.flatnonzero(acting[j])
            rows = np.empty((columns.size + 2, int(np.count_nonzero(valid))))
            rows[0] = nominal_torques[valid, j]
            rows[1:-1] = matrix[:, j, drive[columns]][valid].T
            rows[-1] = torques[valid, j]
            rows /= rms
            triangles.append(column_triangle(rows, np.append(0, 1 + columns), drive.size + 1))
    stacked = np.concatenate(triangles)
    triangle = stacked_triangle(np.zeros((0, drive.size + 2)), stacked[:, :-1], stacked[:, -1])
    if not np.any(triangle[:, 0]):
        return None
    y, design = triangle[:, -1], triangle[:, :-1]
    fitted, *_ = np.linalg.lstsq(design, y, rcond=None)
    alone, *_ = np.linalg.lstsq(design[:, 1:], y, rcond=None)
    norm = float(np.linalg.norm(y))
    return UrdfAgreement(
        scale=float(fitted[0]),
        relative_error=float(np.linalg.norm(y - design @ fitted)) / norm,
        relative_error_without=float(np.linalg.norm(y - design[:, 1:] @ alone)) / norm,
    )


__all__ = ["MAX_RELATIVE_ERROR", "MAX_SCALE", "UrdfAgreement", "urdf_agreement"]
