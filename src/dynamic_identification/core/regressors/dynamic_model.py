"""A robot's inverse dynamic identification model in base parameters, as one value.

``τ = W(q, q̇, q̈) χ_b`` ([Gautier2013] eq. (4), (7)): the mechanism whose rigid-body dynamics
``W`` is written on (a closed-loop robot's projected by ``J_tᵀ``, [Briot2012] eq. (6)-(7)), the
drive chain its controlled joints are driven through, the drive-chain terms of its standard
parameters ([Gautier2013] eq. (3)) and the base parameters ``χ_b`` that regroup them. Every
stage that builds rows, solves or reports takes the four together as a :class:`DynamicModel`,
checked once to belong together. Predicting torques from named base-parameter values
(:func:`~dynamic_identification.core.identification.prediction.predict_torques`) needs no base
parameters and takes the mechanism, drive chain and terms alone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from dynamic_identification.core.errors import ModelError
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel, standard_parameter_names
from dynamic_identification.core.mechanism.seam import Mechanism, mechanism_of, tree_columns
from dynamic_identification.core.regressors.idim import BaseParameters


@dataclass(frozen=True, eq=False)
class DynamicModel:
    """A robot's IDIM in base parameters: ``W(q, q̇, q̈) χ_b`` with its mechanism, drive chain, drive terms and base
    parameters ([Gautier2013] eq. (4), (7); [Briot2012] eq. (6)-(7)).

    Attributes
    ----------
    mechanism
        The robot: its tree, closures and controlled joints (a serial robot is a
        :class:`~dynamic_identification.core.mechanism.seam.SerialMechanism`).
    drive_chain
        Gear ratios, drive gains and coupling of the ``n_a`` controlled joints.
    terms
        The drive-chain terms (rotor inertia, friction, offset) of the standard parameters.
    base
        The base parameters regrouping the mechanism's standard parameters with ``terms``
        (:meth:`~dynamic_identification.core.mechanism.seam.Mechanism.base_parameters`).

    Raises
    ------
    TypeError
        ``mechanism`` is a :class:`~dynamic_identification.core.mechanism.robot.RobotModel`: use :meth:`create`.
    ModelError
        A drive chain of another size than the controlled joints, or base parameters that regroup other
        standard parameters.
    """

    mechanism: Mechanism
    drive_chain: DriveChain
    terms: DriveTerms
    base: BaseParameters

    def __post_init__(self) -> None:
        if isinstance(self.mechanism, RobotModel):
            raise TypeError("mechanism must be a Mechanism, got a RobotModel: use DynamicModel.create")
        if self.drive_chain.n_joints != self.mechanism.n_actuated:
            raise ModelError(
                f"drive chain has {self.drive_chain.n_joints} joints, the mechanism has"
                f" {self.mechanism.n_actuated} controlled joints"
            )
        expected = self.mechanism.standard_parameter_names(self.terms)
        if self.base.standard_names != expected:
            raise ModelError(
                "base parameters do not regroup the standard parameters of this mechanism and drive terms"
                f" ({len(self.base.standard_names)} standard parameters, expected {len(expected)}):"
                " use mechanism.base_parameters(drive_chain, terms)"
            )

    @classmethod
    def create(
        cls,
        robot: RobotModel | Mechanism,
        drive_chain: DriveChain,
        terms: DriveTerms,
        base: BaseParameters | None = None,
    ) -> DynamicModel:
        """The model of ``robot`` (a serial robot's :class:`RobotModel` or any mechanism), with the numerical base
        parameters of its IDIM when ``base`` is ``None`` (:meth:`Mechanism.base_parameters` with its defaults;
        [Gautier2013] ref. [11], [Briot2012] eq. (7)).

        Raises
        ------
        ModelError
            When the parts do not belong together (see the class).
        """
        mechanism = mechanism_of(robot)
        if base is None:
            base = mechanism.base_parameters(drive_chain, terms)
        return cls(mechanism=mechanism, drive_chain=drive_chain, terms=terms, base=base)

    def tree_base_parameters(self) -> BaseParameters:
        """The base parameters over the tree's standard layout
        (:func:`~dynamic_identification.core.mechanism.seam.tree_standard`).

        The same base parameters (names, expressions, equations' structure), their regrouping
        ``K`` with a zero column for each standard parameter of the tree that no equation holds (a
        closed-loop robot's passive joints' drive terms); :attr:`base` itself for a serial robot.
        """
        base = self.base
        names = standard_parameter_names(self.mechanism.n_tree, self.terms)
        if base.standard_names == names:
            return base
        columns = tree_columns(self.mechanism, self.terms)
        regrouping = np.zeros((base.count, len(names)))
        regrouping[:, columns] = base.regrouping
        return replace(base, standard_names=names, independent=columns[base.independent], regrouping=regrouping)


__all__ = ["DynamicModel"]
