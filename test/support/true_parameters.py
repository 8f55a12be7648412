"""The base parameters of a robot at their true values, and the parameter file an exact identification writes.

The feedforward, payload and drive-gain tests need an identified model without identifying one: the
base parameters ([Gautier2013]) of the robot's URDF inertias and of known drive terms, in the
``dynamic_identification/parameters/v1`` document ``dynid identify`` and the estimator write. This
module says once how that document is built.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from dynamic_identification.core.mechanism.robot import (
    DriveChain,
    DriveParameters,
    DriveTerms,
    RobotModel,
    standard_parameters,
)
from dynamic_identification.core.regressors.idim import BaseParameters, base_parameters
from dynamic_identification.io.parameters import ParameterFile


def true_base_parameters(
    robot: RobotModel, chain: DriveChain, terms: DriveTerms, drive: DriveParameters
) -> tuple[BaseParameters, np.ndarray]:
    """The base parameters of ``robot`` with ``chain`` and ``terms``, and their values for the URDF's inertias
    and the drive terms ``drive`` (rotor inertia, friction, offsets)."""
    base = base_parameters(robot, chain, terms)
    return base, base.from_standard(standard_parameters(robot, terms, drive))


def true_parameter_file(
    robot: RobotModel,
    chain: DriveChain,
    terms: DriveTerms,
    drive: DriveParameters,
    *,
    urdf: str | os.PathLike[str],
    scale: float = 1.0,
    **document: Any,
) -> ParameterFile:
    """The parameter file of an exact identification: :func:`true_base_parameters` with their expressions.

    Parameters
    ----------
    urdf
        The file's ``urdf`` entry (a path, or a name relative to the file).
    scale
        Factor on every value: an estimate other than the truth, told apart from it by the tests.
    document
        Further fields of :meth:`ParameterFile.create` (``stamp``, ``quality``...).
    """
    base, values = true_base_parameters(robot, chain, terms, drive)
    return ParameterFile.create(
        urdf=urdf,
        joints=robot.joint_names,
        drive_terms=terms,
        drive_chain=chain,
        names=base.names,
        values=scale * values,
        expressions=base.expressions,
        **document,
    )
