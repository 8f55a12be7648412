"""Whether a closed-loop robot's identification publishes bearing friction in its passive joints.

Real bearings have friction; a passive joint's ``Fv_p q̇_p + Fc_p sign(q̇_p)`` reaches the motors
through ``J_tᵀ`` ([Briot2012] eq. (6);
:attr:`~dynamic_identification.core.mechanism.closed_loop.ClosedLoopModel.passive_friction`).
The term is on by default, and the data choose it by the house rule of
:mod:`~dynamic_identification.core.estimation.model_selection`: it is published only when every
bearing-friction parameter is determined (an excited base parameter of its own), the Wald test of
"frictionless bearings" of the least-squares estimate (not its physically consistent projection) with its
covariance (autocorrelation-consistent by default) rejects at
:data:`~dynamic_identification.core.estimation.model_selection.SIGNIFICANCE` and the published model with it fits
its equations better than the one without (a lower relative error); otherwise the model without it
is published, and :class:`PassiveFrictionChoice` says why in one line.

Both models' fits are compared on one scale (:func:`weighted_relative_error`): the same rows, each equation
column weighted by the same ``1/σ_j`` (the model with the bearing friction's, which its weighted least squares
minimised), in the weighted norm. On that scale the least-squares fit with the bearing-friction columns is never
worse than the one without (its columns span the other's); the published estimates can be, as reduction and the
physically consistent estimate nearest to the data and the URDF ([Lee2020]) are not least squares. Each model's
own unweighted ``‖ρ‖/‖Y‖`` is no such scale: its WLS weights are its own, and it minimised another norm.

:func:`choose_passive_friction` is the one place the decision is made: given the identification of the
same recording with and without the bearing-friction columns, it returns which to publish;
:func:`identify_choosing_passive_friction` runs both identifications and applies it (the setting
``estimation.passive_friction`` offers the term, on by default).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from dynamic_identification.core.errors import DataError, RankDeficientError
from dynamic_identification.core.estimation.model_selection import WaldTest, unit_restrictions, wald_test
from dynamic_identification.core.estimation.normal_equations import residual_norms_squared
from dynamic_identification.core.estimation.quality import relative_norm
from dynamic_identification.core.identification import IdentificationResult
from dynamic_identification.core.identification.drive_term_choice import least_squares_values
from dynamic_identification.core.mechanism.closed_loop import ClosedLoopModel
from dynamic_identification.core.mechanism.robot import DriveTerms
from dynamic_identification.core.mechanism.seam import Mechanism


@dataclass(frozen=True)
class PassiveFrictionChoice:
    """Which closed-loop model :func:`choose_passive_friction` took, and why.

    Attributes
    ----------
    passive_friction
        The model with the passive joints' bearing friction was taken.
    reason
        One line saying which model and why.
    test
        The Wald test of "frictionless bearings" (``None`` when not tested).
    relative_error_without, relative_error_with
        :func:`weighted_relative_error` of each model's least-squares fit, on the same rows and weights (NaN for a
        model not fitted).
    published_error_without, published_error_with
        The same of each model's published estimate (reduced, physically consistent).
    """

    passive_friction: bool
    reason: str
    test: WaldTest | None = None
    relative_error_without: float = math.nan
    relative_error_with: float = math.nan
    published_error_without: float = math.nan
    published_error_with: float = math.nan

    def chosen(self, without: IdentificationResult, with_friction: IdentificationResult) -> IdentificationResult:
        """The identification of the chosen model among the two given to :func:`choose_passive_friction`."""
        return with_friction if self.passive_friction else without


def weighted_relative_error(result: IdentificationResult, values: np.ndarray, joint_std: np.ndarray) -> float:
    """``‖(Y − Wθ) / σ‖ / ‖Y / σ‖`` of ``values`` ``θ`` of ``result``'s kept base parameters on its valid rows.

    Equation column ``j`` is weighted by ``1 / joint_std[j]`` (``σ_j``, N·m for the IDIM): with ones, the plain
    ``‖ρ‖ / ‖Y‖``. Computed from ``result.equations`` (:func:`residual_norms_squared`), so two results of the
    same rows weighted alike are on one scale whatever their columns.
    """
    if result.equations is None:
        raise DataError("this identification result has no normal equations: identify through the identification seam")
    equations, weights = result.equations, np.asarray(joint_std, dtype=float) ** -2
    squares = residual_norms_squared(equations, result.base.subset(result.names), values)
    return relative_norm(float(np.sqrt(squares @ weights)), float(np.sqrt(equations.c @ weights)))


def _fit_errors(
    without: IdentificationResult, with_friction: IdentificationResult
) -> tuple[float, float, float, float]:
    """:func:`weighted_relative_error` of the least-squares fits and of the published estimates of both models,
    weighted by the model with bearing friction's ``σ_j``; both must hold the same rows."""
    if without.equations is None or with_friction.equations is None or with_friction.joint_std is None:
        raise DataError("identification results without normal equations: identify through the identification seam")
    if not (
        np.array_equal(without.equations.count, with_friction.equations.count)
        and np.allclose(without.equations.c, with_friction.equations.c, rtol=1e-9, atol=0.0)
    ):
        raise DataError(
            "the identifications with and without bearing friction hold different rows"
            f" ({without.equations.count.tolist()} and {with_friction.equations.count.tolist()} equations per"
            " column): their fits cannot be compared"
        )
    std = with_friction.joint_std
    return (
        weighted_relative_error(without, least_squares_values(without), std),
        weighted_relative_error(with_friction, least_squares_values(with_friction), std),
        weighted_relative_error(without, without.estimate.parameters, std),
        weighted_relative_error(with_friction, with_friction.estimate.parameters, std),
    )


def choose_passive_friction(
    model: ClosedLoopModel,
    terms: DriveTerms,
    *,
    without: IdentificationResult,
    with_friction: IdentificationResult,
) -> PassiveFrictionChoice:
    """The closed-loop model to publish: with the passive joints' bearing friction only when the data choose it.

    Parameters
    ----------
    model
        The mechanism (with or without :attr:`~ClosedLoopModel.passive_friction`; its passive joints name the
        bearing-friction parameters).
    terms
        The drive terms of both identifications.
    without, with_friction
        The identification of the same recording without and with the bearing-friction columns.

    Returns
    -------
    PassiveFrictionChoice
        The decision (module docstring) and its one-line reason.
    """
    names = model.with_passive_friction().passive_friction_names(terms)
    without_error, with_error, published_without, published_with = _fit_errors(without, with_friction)
    choice = partial(
        PassiveFrictionChoice,
        relative_error_without=without_error,
        relative_error_with=with_error,
        published_error_without=published_without,
        published_error_with=published_with,
    )
    if not names:
        reason = (
            "no passive-joint friction: the mechanism has no passive joint"
            if model.n_passive == 0
            else "no passive-joint friction: the drive terms have no viscous or Coulomb friction"
        )
        return choice(False, reason)
    missing = [name for name in names if name not in with_friction.names]
    if missing:
        return choice(
            False,
            f"no passive-joint friction: {', '.join(missing)} not determined by the data (regrouped or not excited)",
        )
    # The test is of the data's estimate (the least-squares one), not of its physically consistent projection,
    # whose prior pulls undetermined directions toward the URDF: the drive terms' test (drive_term_choice) alike.
    values = least_squares_values(with_friction)
    restrictions = unit_restrictions(values.size, [with_friction.names.index(name) for name in names])
    try:
        test = wald_test(values, with_friction.estimate.covariance, restrictions)
    except RankDeficientError as error:
        return choice(False, f"no passive-joint friction: not determined by the data ({error})")
    summary = (
        f"{test.describe('frictionless passive joints')}; weighted relative error of the least-squares fits"
        f" {without_error:.4g} without, {with_error:.4g} with"
    )
    if not test.significant:
        return choice(
            False, f"no passive-joint friction: it does not explain the data significantly better ({summary})", test
        )
    if not published_with < published_without:
        # A Wald test on nearly collinear columns can reject while the published model with them (reduced,
        # physically consistent) fits worse, which is no better model.
        return choice(
            False,
            "no passive-joint friction: the published model with it fits its equations worse (weighted relative"
            f" error of the published estimates {published_without:.4g} without, {published_with:.4g} with;"
            f" {summary})",
            test,
        )
    return choice(
        True,
        f"passive-joint friction {', '.join(names)}: it explains the data significantly better ({summary})",
        test,
    )


def without_passive_friction(model: Mechanism) -> Mechanism:
    """``model`` without the passive joints' bearing-friction columns (a serial robot as it is)."""
    return model.with_passive_friction(False) if isinstance(model, ClosedLoopModel) else model


def with_offered_passive_friction(model: Mechanism, terms: DriveTerms) -> Mechanism:
    """``model`` with its passive joints' bearing-friction columns when it has passive joints and ``terms`` have
    friction, otherwise as it is: what a model reduction that keeps a column only when the data need it (the
    sliding window's, [Volkmann2020] Algorithm 1) is offered."""
    if not isinstance(model, ClosedLoopModel) or model.n_passive == 0:
        return model
    richer = model.with_passive_friction()
    return richer if richer.passive_friction_names(terms) else model


def identify_choosing_passive_friction(
    identify: Callable[[Mechanism], IdentificationResult],
    model: Mechanism,
    terms: DriveTerms,
    *,
    offered: bool = True,
    without: IdentificationResult | None = None,
) -> tuple[Mechanism, IdentificationResult, PassiveFrictionChoice | None]:
    """Identify ``model`` without and, when ``offered`` and it has passive joints with friction terms, with the
    bearing-friction columns, and keep the model the data choose (:func:`choose_passive_friction`).

    ``identify`` identifies the recording for a mechanism (it computes that mechanism's base parameters: the
    bearing-friction columns change them); ``without``, when given, is its identification of ``model`` without
    them. Returns the chosen mechanism, its identification and the choice (``None`` when not offered, or
    without passive joints or friction terms: nothing to choose; a serial robot is identified once).
    """
    plain = without_passive_friction(model)
    without = identify(plain) if without is None else without
    richer = with_offered_passive_friction(plain, terms)
    if not offered or richer is plain or not isinstance(plain, ClosedLoopModel):
        return plain, without, None
    with_friction = identify(richer)
    choice = choose_passive_friction(plain, terms, without=without, with_friction=with_friction)
    return (richer if choice.passive_friction else plain), choice.chosen(without, with_friction), choice
