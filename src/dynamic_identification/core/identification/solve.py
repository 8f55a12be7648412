"""The identification seam: observations → estimate → reduce → quality, the same for every regression model.

Every model's observations (:class:`~dynamic_identification.core.identification.observations.PreparedObservations`
of the IDIM, the filtered IDIM, the supplied-energy, power and filtered-power models of
[DirectDrive2012] §3, and the segmented power model of [Gautier2013] §IV.B) go through:

1. **estimate** — at least one more valid equation than base parameters; the weights
   ``1/σ_j`` of each equation column: ones for OLS, the residual standard deviation of
   the column's own OLS fit for WLS ([Gautier2013] eq. (20)); the per-column normal
   equations of the rows (:class:`~dynamic_identification.core.estimation.normal_equations.NormalEquations`);
2. **reduce** — on the normal equations
   (:func:`~dynamic_identification.core.estimation.reduction.reduce_parameters`): first the
   rank check, the one rank detector of the package — pivoted Cholesky of the weighted
   normal matrix scaled to unit diagonal, which is column-pivoted QR of the weighted rows
   with unit-norm columns carried out on ``WᵀW``: a column whose part independent of the
   columns pivoted before it is below ``1e-5`` of its norm (pivot below ``1e-10``) is not
   identifiable from this data. Forming ``WᵀW`` squares the condition number, so a
   detector on the normal equations cannot resolve dependencies finer than about
   ``sqrt(eps)``; ``1e-5`` keeps a margin of three decades, and the sliding window, which
   keeps only normal equations, decides exactly as offline identification does. Then the
   reduction: ``none``, ``essential`` ([Gautier2013] §V.B) or ``sensitivity``
   ([Volkmann2020] Algorithm 1), with the friction parameters forced essential when every
   joint travels at least ``friction_motion_rad`` ([Volkmann2020] §III.D);
3. the estimate of the kept columns by QR on the rows (accuracy of ``cond(W)``, not
   ``cond(W)²``; [Gautier2013] eq. (15)-(20)), optionally by recursive least squares
   ([DirectDrive2012] §3.1); its σ, covariance and %σ ([Gautier2013] eq. (19)) by
   default autocorrelation-consistent
   (:func:`~dynamic_identification.core.estimation.uncertainty.hac_covariance`: Newey &
   West 1987, Andrews 1991, Kiefer & Vogelsang 2005) from the weighted rows of the final
   estimate, since the residuals of filtered, decimated rows are correlated in time and
   eq. (17)-(18) understates σ several times there (``settings.reduction.uncertainty``);
4. **quality** — [Volkmann2020] eq. (11)-(12) of the joint torques
   (:class:`~dynamic_identification.core.estimation.quality.JointErrors`): on the IDIM's
   own rows, or, for a model whose equations are not the joint torques, of its torque
   prediction at the recorded stamps where the joint moves; then the plausibility gates
   (:mod:`~dynamic_identification.core.mechanism.plausibility`). Whether an implausible model is
   used anyway is the caller's decision.

The sliding window (:mod:`~dynamic_identification.core.identification.in_process`) keeps
normal equations and blocks of rows: it runs steps 2 and 4 with the same functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from dynamic_identification.core.cancellation import NEVER, Cancellation
from dynamic_identification.core.errors import DataError, IdentificationError, RankDeficientError, shorten
from dynamic_identification.core.estimation.consistency import ConsistentEstimate, ConsistentEstimator
from dynamic_identification.core.estimation.least_squares import (
    JointFits,
    LeastSquaresResult,
    joint_fits,
    ordinary_least_squares,
    weighted_least_squares,
)
from dynamic_identification.core.estimation.normal_equations import (
    NormalEquations,
    NormalSolution,
)
from dynamic_identification.core.estimation.quality import JointErrors, relative_norm, relative_std_percent
from dynamic_identification.core.estimation.recursive import RecursiveHistory, recursive_estimate
from dynamic_identification.core.estimation.reduction import (
    NOT_IDENTIFIABLE,
    ReductionResult,
    recheck_reduction,
    reduce_parameters,
)
from dynamic_identification.core.estimation.uncertainty import RobustCovariance, hac_covariance
from dynamic_identification.core.identification.completion import controlled_positions, unwrapped
from dynamic_identification.core.identification.motion import check_motion, check_samples
from dynamic_identification.core.identification.observations import PreparedObservations, prepare_observations
from dynamic_identification.core.identification.prediction import Samples, TorqueCheck
from dynamic_identification.core.identification.settings import IdentificationSettings, ReductionSettings
from dynamic_identification.core.mechanism.plausibility import PlausibilityBounds, mechanism_bounds, model_problems
from dynamic_identification.core.mechanism.robot import RobotModel
from dynamic_identification.core.mechanism.seam import Mechanism, mechanism_of
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.regressors.idim import BaseParameters

NOT_EXCITED = f"{NOT_IDENTIFIABLE}: not excited by this data"
"""Why a base parameter the rank check removed is gone, as reported to users."""

FRICTION_PREFIXES = ("Fv", "Fc")
"""Names of the friction parameters forced essential when every joint moves enough."""

RLS_FORGETTING_FALLBACK = (
    "recursive least squares with forgetting: σ is that of the RLS covariance, independent residuals assumed"
)
"""Why an RLS estimate with a forgetting factor keeps the white σ.

With forgetting ``λ < 1`` the estimate weighs row ``t`` by ``λ^(N−t)``; its sandwich
would need those weights in ``A`` and in the scores, and the fixed-b and
degrees-of-freedom corrections of :mod:`~dynamic_identification.core.estimation.uncertainty`
are derived (and checked) for a uniformly weighted record only. Without forgetting the
RLS estimate is the batch one to about 1e-7 and gets the same HAC σ."""


@dataclass(frozen=True)
class RecursiveSettings:
    """Recursive least squares instead of the batch QR solution ([DirectDrive2012] §3.1).

    RLS works on unit-norm weighted columns, where ``initial_covariance`` ``p₀`` pulls the
    estimate towards zero by at most ``1 / (p₀ σ_min²)`` relative (``σ_min`` the smallest
    singular value of the normalised weighted matrix): without forgetting the default
    ``p₀ = 1e8`` agrees with batch LS to about 1e-7 on a well-excited trajectory.
    """

    forgetting: float = 1.0
    initial_covariance: float = 1e8


@dataclass(frozen=True)
class Quality:
    """How well the identified model explains the joint torques, and whether it is plausible.

    Attributes
    ----------
    joint_errors
        Sums of [Volkmann2020] eq. (11)-(12) and the peak predicted torque per joint.
    problems
        Every plausibility gate the model fails, one line each; empty when plausible.
    """

    joint_errors: JointErrors
    problems: tuple[str, ...]

    @property
    def plausible(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class PhysicalConsistency:
    """Step 5 of the seam: the physically consistent estimate ([Wensing2018]) and what it cost.

    ``estimate`` is ``None`` when it could not be computed (``error`` says why; the
    published values are then the unconstrained ones). Otherwise the published base
    values are ``estimate.base_values`` of the consistent standard parameters, and
    ``estimate.cost_increase`` / ``estimate.shift_sigma`` say how much fit that cost.
    """

    estimate: ConsistentEstimate | None
    error: str = ""

    @property
    def applied(self) -> bool:
        """Whether the published values are those of the consistent standard parameters."""
        return self.estimate is not None


@dataclass(frozen=True)
class IdentificationResult:
    """Identified base parameters, how the model was reduced and its quality; one type for every model.

    ``names``/``expressions`` list the kept base parameters in the order of
    ``estimate.parameters``; ``removed`` maps each dropped base parameter to why, in the
    order they were dropped. ``quality`` is the seam's verdict (``None`` for a result
    assembled by hand); ``condition_number_full`` is the condition number of the
    identifiable model before the reduction; ``history`` the recursive estimator's
    ([DirectDrive2012] Figs. 2-3), ``None`` for the batch solution; ``equations`` the
    per-column normal equations of the valid rows in every base column, for the steps that
    start from them (physical consistency, further reductions); ``reduction`` the rank check
    and reduction step itself (its reference and reduced per-column errors, and the removals
    its guard refused), ``None`` for a result assembled by hand; ``consistency`` the physically
    consistent step ([Wensing2018]), ``None`` when it was not asked for. ``uncertainty`` is the
    autocorrelation-consistent covariance ``estimate.std``/``covariance``/``relative_std_percent``
    were taken from (with the white σ of [Gautier2013] eq. (18) beside it), ``None`` when
    they are eq. (18)'s: ``settings.reduction.uncertainty == "white"``, or
    ``uncertainty_fallback`` says why HAC could not be computed. ``joint_std`` holds the
    ``σ_j`` the equations were weighted with (:func:`joint_weights`), ``None`` for a result
    assembled by hand.
    """

    base: BaseParameters
    names: tuple[str, ...]
    expressions: tuple[str, ...]
    estimate: LeastSquaresResult
    removed: tuple[tuple[str, str], ...]
    observations: PreparedObservations
    quality: Quality | None = None
    condition_number_full: float = math.nan
    history: RecursiveHistory | None = None
    equations: NormalEquations | None = None
    reduction: ReductionResult | None = None
    consistency: PhysicalConsistency | None = None
    uncertainty: RobustCovariance | None = None
    uncertainty_fallback: str = ""
    joint_std: np.ndarray | None = None

    @property
    def uncertainty_method(self) -> str:
        """``"hac"`` when σ is autocorrelation-consistent, ``"white"`` when it is [Gautier2013] eq. (18)."""
        return "white" if self.uncertainty is None else "hac"

    @property
    def white_std(self) -> np.ndarray:
        """σ of [Gautier2013] eq. (17)-(18) (independent residuals assumed), in ``estimate`` order, ``(k,)``."""
        return self.estimate.std if self.uncertainty is None else self.uncertainty.white_std

    @property
    def judged(self) -> Quality:
        """:attr:`quality`, which a result of the seam always has."""
        if self.quality is None:
            raise DataError("this identification result was not judged: identify through the identification seam")
        return self.quality

    @property
    def model(self) -> str:
        """The regression model."""
        return self.observations.model

    @property
    def values(self) -> dict[str, float]:
        """The kept base parameters by name."""
        return dict(zip(self.names, self.estimate.parameters.tolist(), strict=True))

    @property
    def excited(self) -> np.ndarray:
        """``(b,)`` booleans in :class:`BaseParameters` order: whether each base parameter was estimated
        (neither unidentifiable from this data nor removed by the reduction)."""
        mask = np.zeros(self.base.count, dtype=bool)
        mask[self.base.subset(self.names)] = True
        return mask

    @property
    def parameters(self) -> np.ndarray:
        """Every base parameter in :class:`BaseParameters` order, ``(b,)``; 0 for a removed one."""
        values = np.zeros(self.base.count)
        values[self.base.subset(self.names)] = self.estimate.parameters
        return values

    @property
    def std(self) -> np.ndarray:
        """Standard deviations in :class:`BaseParameters` order, ``(b,)``; NaN for a removed parameter."""
        deviations = np.full(self.base.count, np.nan)
        deviations[self.base.subset(self.names)] = self.estimate.std
        return deviations

    @property
    def relative_error(self) -> float:
        """``‖Y − Wχ̂‖ / ‖Y‖`` of the model's own equations."""
        return self.estimate.relative_error


def friction_columns(names: Sequence[str]) -> np.ndarray:
    """Indices of the viscous and Coulomb friction parameters among ``names``."""
    return np.array([i for i, name in enumerate(names) if name.startswith(FRICTION_PREFIXES)], dtype=int)


def reduce_model(
    equations: NormalEquations,
    joint_std: np.ndarray,
    *,
    names: Sequence[str],
    travel: np.ndarray,
    settings: ReductionSettings,
) -> ReductionResult:
    """The rank check and the reduction (step 2 of the seam) on normal equations, by ``settings.method``.

    The friction parameters are forced essential when every joint travels at least
    ``settings.friction_motion_rad`` rad (``travel`` per joint, rad): a joint that moves has
    friction, whatever its sensitivity ([Volkmann2020] §III.D).
    """
    return reduce_parameters(
        equations,
        joint_std,
        method=settings.method,
        e_tol=settings.e_tol,
        r_sigma=settings.r_sigma,
        forced=_forced_friction(names, travel, settings),
        names=names,
    )


def recheck_model(
    previous: ReductionResult,
    equations: NormalEquations,
    joint_std: np.ndarray,
    *,
    names: Sequence[str],
    travel: np.ndarray,
    settings: ReductionSettings,
) -> ReductionResult | None:
    """``previous`` (a ``'sensitivity'`` :func:`reduce_model`) on these equations if Algorithm 1 still accepts it
    (:func:`~dynamic_identification.core.estimation.reduction.recheck_reduction`), with the friction forced as
    :func:`reduce_model` forces it; ``None`` when it must be chosen again."""
    return recheck_reduction(
        previous,
        equations,
        joint_std,
        e_tol=settings.e_tol,
        forced=_forced_friction(names, travel, settings),
        names=names,
    )


def _forced_friction(names: Sequence[str], travel: np.ndarray, settings: ReductionSettings) -> list[int]:
    """The friction columns when every joint travels at least ``settings.friction_motion_rad``, else none."""
    moving = travel.size > 0 and bool(np.all(travel >= settings.friction_motion_rad))
    return friction_columns(names).tolist() if moving else []


def removed_reasons(names: Sequence[str], reduction: ReductionResult) -> tuple[tuple[str, str], ...]:
    """``(name, why)`` of each parameter the reduction removed, in removal order, as reported to users."""
    return tuple((names[i], NOT_EXCITED if why == NOT_IDENTIFIABLE else why) for i, why in reduction.removed)


def joint_weights(observations: PreparedObservations, method: str) -> np.ndarray:
    """``σ_j`` of each equation column: ones for OLS, the column's own OLS residual std for WLS
    ([Gautier2013] eq. (20)), computed once from the full model."""
    return _weights(_own_fits(observations, method), observations.torques.shape[1])


def _own_fits(observations: PreparedObservations, method: str) -> JointFits | None:
    """Each equation column's own OLS fit on the full model for WLS (its σ weight the equations, its R factors give
    the QR of the weighted rows); ``None`` for OLS."""
    if method == "ols":
        return None
    return joint_fits(observations.observation_matrix, observations.torques, valid=observations.valid)


def _weights(fits: JointFits | None, columns: int) -> np.ndarray:
    """``σ_j`` of the ``columns`` equation columns: those of ``fits``, ones without (OLS)."""
    return np.ones(columns) if fits is None else fits.std


def plausibility_problems(
    bounds: PlausibilityBounds, names: Sequence[str], values: np.ndarray, errors: JointErrors
) -> tuple[str, ...]:
    """The plausibility gates of a model given its values and the peak torque it predicts on its own data."""
    return model_problems(bounds, names, values, predicted_peak=errors.peak)


def identify_observations(
    base: BaseParameters,
    observations: PreparedObservations,
    *,
    settings: IdentificationSettings,
    travel: np.ndarray,
    bounds: PlausibilityBounds,
    torque_check: TorqueCheck | None = None,
    recursive: RecursiveSettings | None = None,
    consistency: ConsistentEstimator | None = None,
    cancellation: Cancellation = NEVER,
) -> IdentificationResult:
    """Estimate, reduce and judge a model from its observations (the seam, see the module docstring).

    Parameters
    ----------
    base
        The base parameters the observations' columns stand for.
    observations
        The model's rows, from the model's builder.
    settings
        Method, reduction and their tolerances.
    travel
        How far each joint moved in the data, rad, ``(n,)``: the friction rule's input.
    bounds
        The plausibility gates.
    torque_check
        How to judge the model's joint torques when its own equations are not the joint
        torques (:func:`~dynamic_identification.core.identification.prediction.stamp_torque_check`);
        ``None`` judges the equations themselves (the IDIM). A model judged by a check
        that leaves base parameters undetermined is unusable: the torques of its missing
        parameters are simply absent from its prediction.
    recursive
        Recursive least squares for the final estimate instead of the batch solution.
    consistency
        Publish the physically consistent estimate nearest to the data ([Wensing2018]),
        fitted by this estimator to the same weighted normal equations; the quality and
        the plausibility gates judge it. ``None``: the unconstrained estimate. A model that leaves
        base parameters undetermined is refused as it is: no constraint may fill them in. When
        the consistent estimate cannot be computed (an infeasible ``estimation.prior``, a solver
        failure) the model fails the plausibility gates rather than go out unconstrained.
    cancellation
        Polled, and told the stage (reduction, least squares, physical consistency),
        between the steps.

    Notes
    -----
    ``settings.reduction.uncertainty`` decides only the σ published with the final estimate. The
    reduction (step 2) always compares the %σ of [Gautier2013] eq. (18) computed from the
    normal equations: the essential-parameter rule's ``r_σ`` ([Gautier2013] §V.B, 10-30)
    is a ratio calibrated on that σ, the sensitivity rule ([Volkmann2020] Algorithm 1)
    uses no σ at all, and the sliding window, which reduces from its normal equations
    only, must decide exactly as offline identification does. The HAC inflation differs
    from one parameter to the next (it follows how slowly each column varies), so
    reducing on HAC %σ would change which parameters are kept without anyone asking.

    Raises
    ------
    DataError
        Too few valid equations for the base parameters.
    """
    matrix, target, valid = observations.observation_matrix, observations.torques, observations.valid
    if valid.sum() <= base.count:
        raise DataError(
            f"too few {observations.model} equations after decimation by {observations.decimation}:"
            f" {int(valid.sum())} usable ({matrix.shape[0]} rows × {matrix.shape[1]} equation columns)"
            f" for {base.count} base parameters (record longer)"
        )
    cancellation.check()
    cancellation.report(f"normal equations, reduction ({settings.reduction.method})")
    fits = _own_fits(observations, settings.method)
    joint_std = _weights(fits, target.shape[1])
    equations = (
        NormalEquations.from_rows(matrix, target, valid)
        if fits is None
        else NormalEquations.from_triangles(fits.triangles, matrix, target, valid)
    )
    reduction = reduce_model(
        equations,
        joint_std,
        names=base.names,
        travel=travel,
        settings=settings.reduction,
    )
    kept = reduction.kept
    names = tuple(base.names[i] for i in kept)
    # The kept columns once (every step below reads them; a column selection copies W, 139 MB at 600 k samples).
    kept_matrix = matrix if np.array_equal(kept, np.arange(matrix.shape[2])) else matrix[..., kept]
    cancellation.check()
    cancellation.report(f"least squares ({settings.method}, σ {settings.reduction.uncertainty})")
    estimate = _least_squares(
        kept_matrix, target, valid, joint_std, names, None if fits is None else fits.columns(kept)
    )
    history = None
    if recursive is not None:
        estimate, history = _recursive(estimate, kept_matrix, target, valid, joint_std, recursive)
    uncertainty, fallback = None, ""
    if settings.reduction.uncertainty == "hac":
        if recursive is not None and recursive.forgetting != 1.0:
            fallback = RLS_FORGETTING_FALLBACK
        else:
            try:
                # The bread from the normal equations, as the sliding window's: the rows are read for the scores only.
                normal = reduction.solution.normal_matrix
                estimate, uncertainty = robust_estimate(estimate, kept_matrix, target, valid, joint_std, normal)
            except (DataError, RankDeficientError) as error:
                fallback = f"HAC σ not computable: {error}"
    unusable: tuple[str, ...] = () if torque_check is None else _undetermined(observations.model, base, reduction)
    physical = None
    fitted = None
    if consistency is not None and not unusable:
        # The σ stay the data's (HAC about the unconstrained estimate): the constraint adds no information.
        cancellation.check()
        cancellation.report("physical consistency ([Wensing2018])")
        physical = consistent_step(consistency, equations, joint_std, kept)
        if physical.estimate is not None:
            values = physical.estimate.base_values[kept]
            fitted = kept_matrix @ values
            estimate = with_values(estimate, values, fitted, target, valid)
    if torque_check is None:
        errors = JointErrors.of(target, kept_matrix @ estimate.parameters if fitted is None else fitted, valid)
    else:
        errors = torque_check(dict(zip(names, estimate.parameters.tolist(), strict=True)))
    return IdentificationResult(
        base=base,
        names=names,
        expressions=tuple(base.expressions[i] for i in kept),
        estimate=estimate,
        removed=removed_reasons(base.names, reduction),
        observations=observations,
        quality=Quality(
            errors,
            unusable + _inconsistent(physical) + plausibility_problems(bounds, names, estimate.parameters, errors),
        ),
        condition_number_full=reduction.reference.condition_number,
        history=history,
        equations=equations,
        reduction=reduction,
        consistency=physical,
        uncertainty=uncertainty,
        uncertainty_fallback=fallback,
        joint_std=joint_std,
    )


def consistent_step(
    estimator: ConsistentEstimator,
    equations: NormalEquations,
    joint_std: np.ndarray,
    kept: np.ndarray,
    *,
    unconstrained: NormalSolution | None = None,
) -> PhysicalConsistency:
    """The consistent estimate of the ``kept`` columns, or why there is none (the unconstrained one stays);
    ``unconstrained``: their WLS, when the caller holds it (:meth:`ConsistentEstimator.solve`)."""
    try:
        return PhysicalConsistency(estimator.solve(equations, joint_std, kept, unconstrained=unconstrained))
    except IdentificationError as error:
        return PhysicalConsistency(None, shorten(str(error), 200))


def with_values(
    estimate: LeastSquaresResult, values: np.ndarray, fitted: np.ndarray, target: np.ndarray, valid: np.ndarray
) -> LeastSquaresResult:
    """``estimate`` with other parameter values: its fit statistics recomputed, its covariance kept.

    The covariance describes the data's information about the parameters; the relative
    standard deviations ([Gautier2013] eq. (19)) and the errors are those of ``values``, whose
    torques ``W values`` are ``fitted`` ``(r, n)`` (N·m).
    """
    errors = JointErrors.of(target, fitted, valid)
    residual = np.where(valid, target - fitted, 0.0)
    return replace(
        estimate,
        parameters=np.asarray(values, dtype=float),
        relative_std_percent=relative_std_percent(estimate.std, values),
        relative_error=relative_norm(
            float(np.linalg.norm(residual)), float(np.linalg.norm(np.where(valid, target, 0.0)))
        ),
        joint_errors=errors.errors,
        joint_relative_errors=errors.relative_errors,
    )


def robust_estimate(
    estimate: LeastSquaresResult,
    matrix: np.ndarray,
    target: np.ndarray,
    valid: np.ndarray,
    joint_std: np.ndarray,
    normal: np.ndarray | None = None,
) -> tuple[LeastSquaresResult, RobustCovariance]:
    """``estimate`` with the autocorrelation-consistent σ, covariance and %σ of its weighted rows.

    ``matrix`` ``(r, n, k)`` holds the kept columns of the decimated rows in time order, which the least squares
    of ``estimate`` checked (they are not checked again), ``joint_std`` the WLS weights ``σ_j`` (ones for OLS);
    ``normal`` their weighted normal matrix when the caller holds it (the sandwich's bread, not summed over the
    rows again). Everything else (the estimate, ``σ̂_ρ`` of eq. (17), the errors) is unchanged.

    Raises
    ------
    DataError
        When there are no more time steps with a valid equation than parameters.
    RankDeficientError
        When the weighted normal matrix of ``matrix`` is singular.
    """
    robust = hac_covariance(
        matrix, target, estimate.parameters, joint_std=joint_std, valid=valid, normal=normal, check_finite=False
    )
    return (
        replace(
            estimate,
            std=robust.std,
            covariance=robust.covariance,
            relative_std_percent=robust.relative_std_percent(estimate.parameters),
        ),
        robust,
    )


def _inconsistent(physical: PhysicalConsistency | None) -> tuple[str, ...]:
    """The problem of a model whose physically consistent estimate was asked for and could not be computed."""
    if physical is None or physical.estimate is not None:
        return ()
    return (f"no physically consistent estimate ({physical.error}); --no-consistency publishes the unconstrained one",)


def _undetermined(model: str, base: BaseParameters, reduction: ReductionResult) -> tuple[str, ...]:
    """The problem of a model that leaves base parameters undetermined on its data, or none."""
    missing = [base.names[i] for i, why in reduction.removed if why == NOT_IDENTIFIABLE]
    if not missing:
        return ()
    listed = f"{', '.join(missing[:6])}{' …' if len(missing) > 6 else ''}"
    return (
        f"the {model} model determines only {base.count - len(missing)} of {base.count} base parameters on this"
        f" data ({listed}): it is unusable here, use --model dynamic",
    )


def _least_squares(
    matrix: np.ndarray,
    target: np.ndarray,
    valid: np.ndarray,
    joint_std: np.ndarray,
    names: tuple[str, ...],
    triangles: np.ndarray | None,
) -> LeastSquaresResult:
    """OLS (``triangles`` ``None``) or WLS of the kept columns by QR ([Gautier2013] eq. (15)-(20)); WLS factorises
    the R factors of each joint's rows (``triangles``, :meth:`JointFits.columns`) that its weights came from, and
    does not check the rows again (:func:`~dynamic_identification.core.estimation.least_squares.joint_fits` did)."""
    if triangles is None:
        return ordinary_least_squares(matrix, target, parameter_names=names, valid=valid)
    return weighted_least_squares(
        matrix, target, joint_std=joint_std, parameter_names=names, valid=valid, triangles=triangles, check_finite=False
    )


def _recursive(
    batch: LeastSquaresResult,
    matrix: np.ndarray,
    target: np.ndarray,
    valid: np.ndarray,
    joint_std: np.ndarray,
    settings: RecursiveSettings,
) -> tuple[LeastSquaresResult, RecursiveHistory]:
    """RLS of the kept columns ([DirectDrive2012] §3.1), one sample per update, on unit-norm weighted columns.

    Normalising the columns lets one ``p₀`` suit parameters of any unit (kg·m² next to
    N·m): the prior's pull is ``1 / (p₀ σ_min²)`` of the scaled matrix. The covariance and
    ``%σ`` are those of the RLS (white, [Gautier2013] eq. (18)); the other statistics are
    the batch solution's. The seam replaces that σ by the HAC one when there is no
    forgetting (:data:`RLS_FORGETTING_FALLBACK`).
    """
    scale = np.linalg.norm(np.where(valid[..., None], matrix / joint_std[None, :, None], 0.0), axis=(0, 1))
    scale = np.where(scale > 0.0, scale, 1.0)
    rls = recursive_estimate(
        matrix / scale,
        target,
        valid=valid,
        joint_std=joint_std,
        forgetting=settings.forgetting,
        initial_covariance=settings.initial_covariance,
    )
    parameters = rls.parameters / scale
    weighted = np.where(valid, (target - matrix @ parameters) / joint_std, 0.0)
    variance = float(np.sum(weighted**2)) / max(int(valid.sum()) - parameters.size, 1)
    covariance = variance * rls.covariance / np.outer(scale, scale)
    std = np.sqrt(np.diag(covariance))
    residual = np.where(valid, target - matrix @ parameters, 0.0)
    errors = JointErrors.of(target, matrix @ parameters, valid)
    percent = relative_std_percent(std, parameters)
    estimate = replace(
        batch,
        parameters=parameters,
        std=std,
        relative_std_percent=percent,
        covariance=covariance,
        relative_error=relative_norm(
            float(np.linalg.norm(residual)), float(np.linalg.norm(np.where(valid, target, 0.0)))
        ),
        joint_errors=errors.errors,
        joint_relative_errors=errors.relative_errors,
    )
    history = RecursiveHistory(
        rows_seen=rls.history.rows_seen,
        parameters=rls.history.parameters / scale,
        covariance_diagonal=rls.history.covariance_diagonal / scale**2,
        covariance_trace=rls.history.covariance_trace,
        covariance_eigenvalues=rls.history.covariance_eigenvalues,
    )
    return estimate, history


def checked_samples(
    mechanism: RobotModel | Mechanism,
    time: np.ndarray,
    q: np.ndarray,
    torques: np.ndarray,
    settings: IdentificationSettings,
    *,
    dq_measured: np.ndarray | None = None,
) -> tuple[Samples, np.ndarray]:
    """A recording fit to identify from (enough samples, finite values, positions unwrapped, some motion), and the
    controlled joints' travel (rad, :func:`~.motion.joint_travel`) that the motion check measured.

    ``q`` holds the controlled joints ``(N, n_a)`` or every tree joint ``(N, n_t)`` (a closed-loop robot
    with passive encoders), ``torques`` the controlled joints' ``(N, n_a)``.

    Raises
    ------
    DataError
        Fewer than ``settings.min_samples`` samples, positions or torques of the wrong shape, or a
        non-finite position or torque.
    InsufficientExcitationError
        No controlled joint travelled ``settings.min_motion_rad``.
    """
    mechanism = mechanism_of(mechanism)
    samples = int(np.shape(time)[0])
    if samples < settings.min_samples:
        raise DataError(f"too few samples: {samples} < min_samples={settings.min_samples}")
    positions = np.asarray(q, dtype=float)
    names = mechanism.joint_names if np.shape(positions)[-1:] == (mechanism.n_tree,) else mechanism.actuated_joint_names
    if positions.ndim != 2 or positions.shape[1] != len(names) or np.shape(torques)[-1:] != (mechanism.n_actuated,):
        raise DataError(
            f"positions of the {mechanism.n_actuated} controlled joints (or of every one of the {mechanism.n_tree}"
            f" tree joints) and torques of the controlled joints needed, got shapes {positions.shape} and"
            f" {np.shape(torques)}"
        )
    check_samples(names, positions, np.zeros((samples, 0)))
    check_samples(mechanism.actuated_joint_names, np.zeros((samples, 0)), torques)
    continuous = [
        j for j, name in enumerate(names) if mechanism.robot.continuous[mechanism.robot.joint_names.index(name)]
    ]
    unwrapped_q = unwrapped(positions, continuous)
    travel = check_motion(
        controlled_positions(mechanism, unwrapped_q),
        mechanism.actuated_joint_names,
        min_motion_rad=settings.min_motion_rad,
    )
    checked = Samples(
        time=np.asarray(time, dtype=float),
        q=unwrapped_q,
        torques=np.asarray(torques, dtype=float),
        dq_measured=dq_measured,
    )
    return checked, travel


def identify(
    dynamic_model: DynamicModel,
    time: np.ndarray,
    q: np.ndarray,
    torques: np.ndarray,
    *,
    dq_measured: np.ndarray | None = None,
    settings: IdentificationSettings | None = None,
    bounds: PlausibilityBounds | None = None,
    consistency: ConsistentEstimator | None = None,
    cancellation: Cancellation = NEVER,
) -> IdentificationResult:
    """Identify the base parameters from a recording in model joint order with the IDIM ([Gautier2013] §IV.A;
    a closed-loop robot's, [Briot2012] §2-3.1).

    ``q``: the controlled joints' positions ``(N, n_a)`` or every tree joint's ``(N, n_t)``;
    ``torques``: the controlled joints' ``(N, n_a)``.
    :func:`~dynamic_identification.core.identification.regression_models.identify_model` does the same
    with any regression model. ``consistency``: publish the physically consistent
    estimate (:func:`identify_observations`); ``cancellation`` is polled and told the
    progress of each stage (:mod:`~dynamic_identification.core.progress`).

    Raises
    ------
    DataError
        Bad stamps, NaN, too few samples or equations after decimation.
    InsufficientExcitationError
        The robot stood still.
    LoopClosureError
        The recording reaches a singularity or leaves the workspace (names the sample).
    """
    settings = settings or IdentificationSettings()
    return identify_recording(
        dynamic_model,
        Samples(time, q, torques, dq_measured),
        lambda samples: prepare_observations(
            dynamic_model,
            *samples.signals,
            dq_measured=samples.dq_measured,
            settings=settings,
            cancellation=cancellation,
        ),
        settings=settings,
        bounds=bounds,
        consistency=consistency,
        cancellation=cancellation,
    )


def identify_recording(
    dynamic_model: DynamicModel,
    recording: Samples,
    observe: Callable[[Samples], PreparedObservations],
    *,
    settings: IdentificationSettings,
    bounds: PlausibilityBounds | None,
    consistency: ConsistentEstimator | None,
    torque_check: Callable[[Samples], TorqueCheck] | None = None,
    recursive: RecursiveSettings | None = None,
    cancellation: Cancellation = NEVER,
) -> IdentificationResult:
    """Identify from one raw ``recording`` with ``dynamic_model`` and any regression model's builder ``observe``.

    The recording is checked (:func:`checked_samples`), its observations made by ``observe``
    and put through the seam (:func:`identify_observations`) with the controlled joints' travel and
    ``bounds`` (``None``: :func:`~dynamic_identification.core.mechanism.plausibility.mechanism_bounds`);
    ``torque_check`` makes the seam's torque check from the checked samples (``None``: the IDIM's own
    rows judge); ``cancellation`` goes to the seam (``observe`` takes its own).
    """
    mechanism = dynamic_model.mechanism
    samples, travel = checked_samples(
        mechanism, recording.time, recording.q, recording.torques, settings, dq_measured=recording.dq_measured
    )
    return identify_observations(
        dynamic_model.base,
        observe(samples),
        settings=settings,
        travel=travel,
        bounds=bounds if bounds is not None else mechanism_bounds(mechanism),
        torque_check=None if torque_check is None else torque_check(samples),
        recursive=recursive,
        consistency=consistency,
        cancellation=cancellation,
    )


__all__ = [
    "FRICTION_PREFIXES",
    "NOT_EXCITED",
    "RLS_FORGETTING_FALLBACK",
    "IdentificationResult",
    "PhysicalConsistency",
    "Quality",
    "RecursiveSettings",
    "checked_samples",
    "consistent_step",
    "friction_columns",
    "identify",
    "identify_observations",
    "identify_recording",
    "joint_weights",
    "plausibility_problems",
    "reduce_model",
    "removed_reasons",
    "with_values",
    "robust_estimate",
]
