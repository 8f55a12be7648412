"""What ``dynid identify`` adds around the seam's result: consistent link parameters, held-out validation, warnings.

* :func:`consistent_model` — the physically consistent standard parameters nearest to
  the data ([Wensing2018], :class:`~dynamic_identification.core.estimation.consistency.ConsistentEstimator`
  with the URDF's attached parts), for ``standard_parameters`` and ``--urdf-out``;
* :func:`validate` — the identified model on a held-out recording, for
  ``quality.validation``: ``e_j``, ``e*_j`` ([Volkmann2020] eq. (11)-(12)) on the
  recording's IDIM equations, filtered and decimated exactly as the identification's own
  (so they compare directly with ``quality.joint_relative_errors``: a model that only
  fits its training data shows here), and the torques at every recorded stamp with their
  errors against the recorded torques where the joint moves (these include the torque
  sensor's or current's noise, which the decimation filter removes from the equations),
  for a closed-loop robot on its actuated joints;
* :func:`identification_warnings` — what a user must read, one sentence each, for the
  output and ``quality.warnings``: parameters physically impossible as identified,
  reductions the guard refused, joints whose ``e*_j`` the reduction raised beyond
  ``e_tol``, joints the model does not predict (``e*_j`` above
  ``estimation.joint_error_warning``), parameters the recording left unexcited, and a URDF
  whose nominal model does not fit the recorded torques
  (:mod:`~dynamic_identification.core.identification.urdf_agreement`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dynamic_identification.core.errors import IdentificationError, shorten
from dynamic_identification.core.estimation.consistency import (
    DEFAULT_PRIOR_WEIGHT,
    ConsistencySettings,
    ConsistentEstimate,
    ConsistentEstimator,
    LinkComparison,
    NotSearched,
    link_comparison,
    mechanism_estimator,
)
from dynamic_identification.core.estimation.quality import JointErrors
from dynamic_identification.core.estimation.reduction import NOT_IDENTIFIABLE
from dynamic_identification.core.identification.in_process import WindowSettings
from dynamic_identification.core.identification.observations import prepare_observations
from dynamic_identification.core.identification.passive_friction import with_offered_passive_friction
from dynamic_identification.core.identification.prediction import (
    Samples,
    StampPrediction,
    predict_at_stamps,
    torque_errors,
)
from dynamic_identification.core.identification.settings import IdentificationSettings
from dynamic_identification.core.identification.solve import NOT_EXCITED, IdentificationResult, joint_weights
from dynamic_identification.core.identification.torque_delay import read_late
from dynamic_identification.core.identification.urdf_agreement import urdf_agreement
from dynamic_identification.core.mechanism.plausibility import PlausibilityBounds
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel, standard_parameters
from dynamic_identification.core.mechanism.seam import Mechanism, mechanism_of
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.io.config import IdentificationConfig
from dynamic_identification.io.parameter_files import finite_or_none, per_joint
from dynamic_identification.io.recording import Recording
from dynamic_identification.io.urdf_export import attached_inertias

_LISTED = 8
"""Names listed in one warning before ``…``."""

NOT_CONSISTENT = "the identified parameters are physically impossible as they stand"
"""How the warning about parameters no physically consistent model reproduces begins."""

CONDITION_NUMBER_WARNING = 1000.0
"""A model whose condition number (of the weighted, column-scaled observation matrix) exceeds this is warned about: the
recording excites its parameters too little to tell them apart. An optimised excitation of the shipped arm gives
4-40; its pick-and-place job about 600 before [Volkmann2020]'s reduction; the first 2 s of a 60 s excitation 3983,
with 32 of 52 base parameters' σ above their value and held-out torques 15-20 % off (1.3-1.4 % from the whole
recording), which the training fit (e*_j 0.5-3.7 %) did not show."""


@dataclass(frozen=True)
class ConsistentModel:
    """The physically consistent estimate of an identification, or why there is none.

    ``estimate`` is ``None`` when it could not be computed; ``error`` then says why.
    ``published_consistent`` says whether the published base values are those of a
    physically consistent model (within the estimator's shift tolerance); ``enforced``
    whether the identification published the consistent estimate (``estimation.consistency``,
    the default) rather than only checking the unconstrained one.
    """

    estimate: ConsistentEstimate | None
    error: str = ""
    published_consistent: bool | None = None
    enforced: bool = False


def consistent_estimator(
    dynamic_model: DynamicModel,
    *,
    prior: float | None = None,
    prior_weight: float = DEFAULT_PRIOR_WEIGHT,
) -> ConsistentEstimator:
    """The physically consistent estimator of ``dynamic_model`` ([Wensing2018]).

    Every link of its tree (a closed-loop robot's opened tree, [Briot2012] §2) is a body whose
    pseudo-inertia must be positive definite, the controlled joints' ``Ia, Fv, Fc`` non-negative.
    The URDF's inertias are the prior of the directions no data determine: the log-det
    divergence to its link pseudo-inertias with weight ``prior_weight`` ([Lee2020],
    ``estimation.prior_weight``) and, with ``prior``, the centre of a box of that half-width
    in parameter scales (``estimation.prior``); the URDF's parts merged into a body (a
    gripper) are kept as they are. Its estimate's ``standard`` has the tree's layout
    (:func:`~dynamic_identification.core.mechanism.seam.tree_standard`); ``base_values`` are those of its base
    parameters.
    """
    return mechanism_estimator(
        dynamic_model,
        settings=ConsistencySettings(box=prior, prior_weight=prior_weight),
        attached=attached_inertias(dynamic_model.mechanism.robot),
    )


def configured_consistency(dynamic_model: DynamicModel, config: IdentificationConfig) -> ConsistentEstimator | None:
    """The consistent estimator ``config`` asks for (``estimation.consistency``, ``estimation.prior``,
    ``estimation.prior_weight``; :func:`consistent_estimator`), or ``None``."""
    if not config.consistency:
        return None
    return consistent_estimator(dynamic_model, prior=config.prior or None, prior_weight=config.prior_weight)


def configured_window_parts(
    config: IdentificationConfig, mechanism: RobotModel | Mechanism, drive_chain: DriveChain
) -> tuple[WindowSettings, PlausibilityBounds, DynamicModel, ConsistentEstimator | None]:
    """What the sliding window of ``config`` takes for ``mechanism`` driven through ``drive_chain``.

    Its settings, plausibility gates (judged on the controlled joints), the model in base parameters with the
    configured drive terms and the consistent estimator ``config`` asks for (:func:`configured_consistency`).
    With ``estimation.passive_friction`` and a reduction (``window.reduction`` not ``none``) a closed-loop
    robot's model has its passive joints' bearing-friction columns: the reduction keeps each only when the data
    need it, the window's way of letting the data choose. Raises ``IdentificationError``.
    """
    settings = config.window_settings()
    if config.passive_friction and settings.reduction.method != "none":
        mechanism = with_offered_passive_friction(mechanism_of(mechanism), config.drive_terms)
    dynamic_model = DynamicModel.create(mechanism, drive_chain, config.drive_terms)
    return (
        settings,
        config.plausibility_bounds(dynamic_model.mechanism),
        dynamic_model,
        configured_consistency(dynamic_model, config),
    )


def consistent_model(
    dynamic_model: DynamicModel,
    settings: IdentificationSettings,
    result: IdentificationResult,
    *,
    search: bool = True,
) -> ConsistentModel:
    """The physically consistent standard parameters nearest to the data of ``result``, identified with
    ``dynamic_model`` ([Wensing2018]).

    When the identification enforced consistency (step 5 of the seam) that estimate;
    otherwise it is computed here, to check the unconstrained values and to give
    ``standard_parameters`` and ``--urdf-out`` a physical model: fitted to the seam's
    weighted normal equations with the identification's weights ([Gautier2013] eq. (20)),
    by :func:`consistent_estimator` of ``dynamic_model`` (whose equations are its controlled
    joints'). Without ``search`` (``dynid
    identify --no-consistency`` without ``--urdf-out``) the unconstrained values are only
    checked, without a conic solve: when they are not consistent there is no estimate and
    ``published_consistent`` is ``False``.
    """
    if result.consistency is not None:
        physical = result.consistency
        return ConsistentModel(physical.estimate, physical.error, published_consistent=physical.applied, enforced=True)
    equations = result.equations
    if equations is None or equations.n_joints != dynamic_model.mechanism.n_actuated:
        return ConsistentModel(None, f"not available for the {result.model} model's equations")
    try:
        # The seam's own weights; computed again only for a result assembled by hand.
        weights = result.joint_std
        if weights is None:
            weights = joint_weights(result.observations, settings.method)
        estimate = consistent_estimator(dynamic_model).solve(
            equations, weights, result.base.subset(result.names), search=search
        )
    except NotSearched as error:
        return ConsistentModel(None, str(error), published_consistent=False)
    except IdentificationError as error:
        return ConsistentModel(None, shorten(str(error), 200))
    published = result.estimate.parameters
    same = bool(np.allclose(estimate.kept_values, published, rtol=1e-9, atol=0.0))
    return ConsistentModel(estimate, published_consistent=same or estimate.unconstrained_consistent)


def physical_consistency_section(
    model: ConsistentModel, robot: RobotModel, costs: Sequence[ConsistencyCost] = ()
) -> dict[str, Any]:
    """``quality.physical_consistency``: whether the published parameters are physically possible.

    ``ok`` is ``null`` when it could not be decided (``error`` says why), ``false`` with an ``error`` when the
    published values are not consistent and the nearest consistent model was not searched for. ``enforced``:
    the published values are the consistent estimate's, and ``shift_sigma`` (distance
    from the unconstrained estimate, in the standard deviations of [Gautier2013] eq. (18):
    a Mahalanobis distance, larger than in the published HAC σ), ``cost_increase`` (relative
    growth of the weighted residual) and ``relative_error`` against
    ``relative_error_unconstrained`` say what the constraint cost the fit. Not enforced:
    the same figures of the nearest consistent model, 0 when the published values are
    already consistent. ``active``: the constraints at their bound. ``cost``
    (:func:`consistency_costs`, when enforced): the relative torque error unconstrained and
    consistent, and their ratio, on the training equations and on each held-out recording.
    """
    if model.estimate is None:
        # False: the unconstrained values were checked and are not consistent (the nearest model not searched for).
        return {"ok": model.published_consistent, "enforced": model.enforced, "error": model.error}
    estimate = model.estimate
    links = [robot.joint_names[index] for index in estimate.report.inconsistent_links]
    costless = model.published_consistent and not model.enforced
    return {
        "ok": bool(model.published_consistent),
        "enforced": model.enforced,
        "checked": "the published parameters: does a physically consistent model ([Wensing2018]) reproduce them",
        "shift_sigma": finite_or_none(0.0 if costless else estimate.shift_sigma),
        "cost_increase": finite_or_none(0.0 if costless else estimate.cost_increase),
        "relative_error": finite_or_none(estimate.relative_error),
        "relative_error_unconstrained": finite_or_none(estimate.relative_error_unconstrained),
        "active": list(estimate.active),
        "solver": estimate.solver_status,
        "solve_time_s": finite_or_none(estimate.solve_time_s),
        "standard_parameters_consistent": bool(estimate.report.consistent),
        "inconsistent_links": links,
        **({"cost": [cost.entry() for cost in costs]} if costs else {}),
    }


def moving_samples(prediction: StampPrediction, identified: np.ndarray, min_speed_rad_s: float) -> np.ndarray:
    """``(N, n)`` booleans: the joint samples a prediction is judged at against recorded torques, those of an
    ``identified`` joint (``(n,)`` booleans) that move (:meth:`StampPrediction.moving`, rad/s). The one rule of
    ``--validate``, the report and ``dynid predict``.
    """
    return prediction.moving(min_speed_rad_s) & np.asarray(identified, dtype=bool)[None, :]


def relative_error_over(torques: np.ndarray, predicted: np.ndarray, counted: np.ndarray) -> float | None:
    """``‖τ − τ̂‖/‖τ‖`` over the ``counted`` joint samples (``(N, n)`` booleans; torques in N·m, ``(N, n)``, NaN
    allowed outside ``counted``); ``None`` when the counted torques are all zero or none is counted."""
    norm = float(np.linalg.norm(np.where(counted, torques, 0.0)))
    if norm <= 0.0:
        return None
    return float(np.linalg.norm(np.where(counted, torques - predicted, 0.0))) / norm


@dataclass(frozen=True)
class Validation:
    """The identified model on one held-out recording.

    Attributes
    ----------
    name
        The recording as the user named it.
    recording
        The recording in model joint order.
    torques
        Its joint torques, N·m, ``(N, n)``.
    prediction
        The model's torques at its stamps (:func:`~dynamic_identification.core.identification.predict_at_stamps`).
    errors
        [Volkmann2020] eq. (11)-(12) sums of the prediction at the stamps where the joint moves.
    equation_errors
        The same sums on the recording's filtered, decimated IDIM equations (the
        identification's scale).
    identified
        ``(n,)`` booleans: joints the model predicts (the others had no equation when identified).
    min_speed_rad_s
        The errors count samples where the joint moves at least this fast, rad/s.
    """

    name: str
    recording: Recording
    torques: np.ndarray
    prediction: StampPrediction
    errors: JointErrors
    equation_errors: JointErrors
    identified: np.ndarray
    min_speed_rad_s: float

    @property
    def predicted(self) -> np.ndarray:
        """Predicted torques, N·m, ``(N, n)``, NaN where the model has no prediction (edges, gaps, joints)."""
        torques = np.where(self.prediction.covered[:, None], self.prediction.torques, np.nan)
        torques[:, ~self.identified] = np.nan
        return torques

    @property
    def moving(self) -> np.ndarray:
        """``(N, n)`` booleans: the joint samples the figures against the recorded torques are over
        (:func:`moving_samples`)."""
        return moving_samples(self.prediction, self.identified, self.min_speed_rad_s)

    @property
    def recorded_relative_error(self) -> float | None:
        """``‖τ − τ̂‖/‖τ‖`` against the recorded torques over the joint samples :attr:`moving` (the headline figure
        of a held-out recording, :func:`relative_error_over`); ``None`` when no joint moves there."""
        return relative_error_over(self.torques, self.prediction.torques, self.moving)

    def entry(self, joints: Sequence[str]) -> dict[str, Any]:
        """The ``quality.validation`` entry.

        ``file``; ``samples`` and ``predicted`` rows; ``joint_errors`` ``e_j`` (N·m) and
        ``joint_relative_errors`` ``e*_j`` on the equations (the identification's scale);
        ``recorded_relative_error`` ``‖τ − τ̂‖/‖τ‖`` and ``recorded_joint_relative_errors``
        ``e*_j`` against the recorded torques where the joint moves: over ``moving`` joint samples (:attr:`moving`,
        a joint at a row), not over every predicted row.
        """
        covered = self.prediction.covered
        names = tuple(joints)
        return {
            "file": self.name,
            "samples": int(covered.shape[0]),
            "predicted": int(covered.sum()),
            "moving": int(self.moving.sum()),
            "joint_errors": per_joint(names, np.where(self.identified, self.equation_errors.errors, np.nan)),
            "joint_relative_errors": per_joint(
                names, np.where(self.identified, self.equation_errors.relative_errors, np.nan)
            ),
            "recorded_relative_error": finite_or_none(self.recorded_relative_error),
            "recorded_joint_relative_errors": per_joint(
                names, np.where(self.identified, self.errors.relative_errors, np.nan)
            ),
        }


def validate(
    dynamic_model: DynamicModel,
    result: IdentificationResult,
    recording: Recording,
    settings: IdentificationSettings,
    *,
    name: str,
) -> Validation:
    """Predict a held-out recording with the model ``result`` identified in ``dynamic_model``'s base parameters and
    judge it.

    The equations are built with the identification's ``settings`` (filter, decimation,
    the stick rule ``signal.min_speed_rad_s``); the errors at the stamps count the samples
    where the joint moves at least ``signal.min_speed_rad_s``. When the identification aligned
    its torques with the motion (``signal.torque_delay``), the held-out torques are read as late
    (:func:`~dynamic_identification.core.identification.torque_delay.read_late`), and
    ``torques`` are those.

    ``recording`` holds the controlled joints (torques or currents) and, for a closed-loop robot
    ([Briot2012] eq. (6)), optionally every passive joint of the opened tree, in the tree's
    kinematic order; the motion is completed as in the identification
    (:func:`~dynamic_identification.core.identification.prepare_observations`), and the
    validation's recording and torques are those of the controlled joints.
    """
    mechanism, drive_chain = dynamic_model.mechanism, dynamic_model.drive_chain
    signal = settings.signal
    joints = mechanism.actuated_joint_names
    judged = recording if recording.joint_names == joints else recording.select(joints)
    torques = judged.joint_torques(drive_chain)
    delay = result.observations.torque_delay
    if delay is not None:
        # The model predicts the torque of the motion at each row: its driver's torques come as late as the fit
        # found the training's.
        torques = read_late(recording.time, torques, delay.applied_delay_s)
    samples = Samples(time=recording.time, q=recording.position, torques=torques, dq_measured=recording.velocity)
    prediction = predict_at_stamps(mechanism, drive_chain, dynamic_model.terms, result.values, samples, signal)
    errors = torque_errors(prediction, torques, min_speed_rad_s=signal.min_speed_rad_s)
    observations = prepare_observations(
        dynamic_model,
        recording.time,
        recording.position,
        torques,
        dq_measured=recording.velocity,
        settings=settings,
    )
    kept = result.base.subset(result.names)
    equation_errors = JointErrors.of(
        observations.torques,
        observations.observation_matrix[..., kept] @ result.estimate.parameters,
        observations.valid,
    )
    identified = np.isfinite(result.judged.joint_errors.errors)
    return Validation(name, judged, torques, prediction, errors, equation_errors, identified, signal.min_speed_rad_s)


CONSISTENCY_COST_WARNING = 1.2
"""A consistent model whose relative torque error on a held-out recording exceeds the unconstrained one's by more than
this factor is warned about (issue 25)."""


@dataclass(frozen=True)
class ConsistencyCost:
    """What publishing the physically consistent estimate cost on one data set.

    Attributes
    ----------
    data
        ``"training"`` or the held-out recording's name.
    held_out
        Whether ``data`` is a held-out (validation) recording.
    unconstrained, consistent
        Relative torque error of the unconstrained and of the consistent model, dimensionless: on the training
        recording ``‖ρ‖/‖Y‖`` of its equations ([Gautier2013] eq. (17)), on a held-out one ``‖τ − τ̂‖/‖τ‖`` against
        the recorded torques where the joints move; ``None`` when not computable (no moving sample).
    """

    data: str
    held_out: bool
    unconstrained: float | None
    consistent: float | None

    @property
    def ratio(self) -> float | None:
        """``consistent / unconstrained`` (1.2: 20 % worse), ``None`` when either is missing or zero."""
        if self.unconstrained is None or self.consistent is None or not self.unconstrained > 0.0:
            return None
        return self.consistent / self.unconstrained

    def entry(self) -> dict[str, Any]:
        """The entry of ``quality.physical_consistency.cost``."""
        return {
            "data": self.data,
            "relative_error_unconstrained": finite_or_none(self.unconstrained),
            "relative_error": finite_or_none(self.consistent),
            "ratio": finite_or_none(self.ratio),
        }


def unconstrained_result(result: IdentificationResult) -> IdentificationResult | None:
    """``result`` with the unconstrained estimate's values instead of the published consistent ones (σ unchanged),
    ``None`` when the identification did not publish a consistent estimate."""
    physical = result.consistency
    if physical is None or physical.estimate is None:
        return None
    estimate = dataclasses.replace(result.estimate, parameters=np.asarray(physical.estimate.unconstrained))
    return dataclasses.replace(result, estimate=estimate)


def urdf_result(dynamic_model: DynamicModel, result: IdentificationResult) -> IdentificationResult:
    """``result`` with every base parameter at the URDF's value: its link inertias, no rotor inertia, friction or
    offset (a URDF gives none a controller uses). The model a user has without identification, the report's
    baseline."""
    base = result.base
    values = base.from_standard(dynamic_model.mechanism.standard_parameters(dynamic_model.terms))
    estimate = dataclasses.replace(result.estimate, parameters=values)
    return dataclasses.replace(result, names=base.names, expressions=base.expressions, estimate=estimate)


def link_comparisons(
    robot: RobotModel, terms: DriveTerms, model: ConsistentModel, *, nominal: np.ndarray | None = None
) -> tuple[LinkComparison, ...]:
    """Each identified body of the consistent estimate against the URDF's (``nominal``: its standard parameters,
    default :func:`~dynamic_identification.core.mechanism.robot.standard_parameters` of ``robot``); empty without
    one."""
    if model.estimate is None:
        return ()
    reference = standard_parameters(robot, terms) if nominal is None else nominal
    return link_comparison(model.estimate, reference, robot.n_joints, terms)


def link_text(link: LinkComparison) -> str:
    """One body, identified against the URDF, with what determines each quantity (the output, ``--urdf-out``)."""

    def vector(values: np.ndarray) -> str:
        # Round-off of an exact zero (a centre of mass on the axis) printed as 0, not 6.5e-20.
        return "(" + ", ".join(f"{0.0 if abs(v) < 1e-12 else v:.4g}" for v in values) + ")"

    return (
        f"mass {link.mass:.4g} kg (URDF {link.mass_urdf:.4g}; {link.mass_source}), centre of mass"
        f" {vector(link.com)} m (URDF {vector(link.com_urdf)}; {link.com_source}), principal moments"
        f" {vector(link.moments)} kg·m² (URDF {vector(link.moments_urdf)}; {link.moments_source})"
        + (
            "; held at the physical-consistency bound (a degenerate body: the bound, not the data)"
            if link.at_bound
            else ""
        )
    )


def link_lines(joints: Sequence[str], links: Sequence[LinkComparison]) -> list[str]:
    """The output's lines of :func:`link_comparisons`, one per body, named by its joint."""
    if not links:
        return []
    return [
        "identified bodies against the URDF (data: the recording determines it; URDF: the data say nothing about it"
        " and the URDF prior gives it, [Lee2020]; data + URDF: the data determine it in part):",
        *(f"  {joints[link.index]}: {link_text(link)}" for link in links),
    ]


def consistency_costs(
    dynamic_model: DynamicModel,
    result: IdentificationResult,
    settings: IdentificationSettings,
    held_out: Sequence[tuple[Recording, Validation]] = (),
) -> tuple[ConsistencyCost, ...]:
    """The relative torque error of the unconstrained and of the published consistent model, on the training
    equations and on each held-out recording (its :func:`validate`, with the validation of the consistent model);
    empty when the identification did not publish a consistent estimate."""
    free = unconstrained_result(result)
    physical = result.consistency
    if free is None or physical is None or physical.estimate is None:
        return ()
    estimate = physical.estimate
    costs = [ConsistencyCost("training", False, estimate.relative_error_unconstrained, estimate.relative_error)]
    for recording, validation in held_out:
        before = validate(dynamic_model, free, recording, settings, name=validation.name)
        costs.append(
            ConsistencyCost(validation.name, True, before.recorded_relative_error, validation.recorded_relative_error)
        )
    return tuple(costs)


def consistency_cost_line(costs: Sequence[ConsistencyCost]) -> str:
    """One output line: the relative torque errors before and after physical consistency on each data set."""

    def figure(value: float | None) -> str:
        return "-" if value is None else f"{value:.4g}"

    parts = [
        f"{cost.data} {figure(cost.unconstrained)} -> {figure(cost.consistent)}"
        + ("" if cost.ratio is None else f" (x{cost.ratio:.3f})")
        for cost in costs
    ]
    return "cost of physical consistency, relative torque error unconstrained -> consistent: " + "; ".join(parts)


def consistency_cost_warnings(costs: Sequence[ConsistencyCost]) -> list[str]:
    """A warning per held-out recording the consistent model predicts over :data:`CONSISTENCY_COST_WARNING` times worse
    than the unconstrained one."""
    return [
        f"the physically consistent model predicts {cost.data} {cost.ratio:.3g} times worse than the unconstrained"
        f" one (relative torque error {cost.consistent:.4g} against {cost.unconstrained:.4g}): the data and a"
        " physical body disagree (a drive or friction term the model lacks, a URDF far off); --no-consistency"
        " publishes the unconstrained model"
        for cost in costs
        if cost.held_out and cost.ratio is not None and cost.ratio > CONSISTENCY_COST_WARNING
    ]


def _listed(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_LISTED])
    return shown + (f" … ({len(names)} in all)" if len(names) > _LISTED else "")


def _equation_names(result: IdentificationResult, joints: Sequence[str]) -> list[str]:
    """Names of the seam's equation columns: the joints for the IDIM models, else numbered columns."""
    columns = result.observations.torques.shape[1]
    if columns == len(joints):
        return list(joints)
    return [f"{result.model} equation column {k + 1}" for k in range(columns)]


def identification_warnings(
    robot: RobotModel,
    result: IdentificationResult,
    settings: IdentificationSettings,
    consistent: ConsistentModel,
    *,
    joints: Sequence[str] | None = None,
) -> list[str]:
    """What a user must read about an identification, one sentence each (module docstring).

    ``joints`` name the equations' joints when they are not ``robot``'s (a closed-loop
    robot's actuated joints, ``robot`` being its opened tree).
    """
    serial = joints is None
    joints = tuple(robot.joint_names if joints is None else joints)
    warnings: list[str] = []
    agreement = urdf_agreement(robot, result) if serial else None
    mismatch = agreement.warning(Path(robot.urdf_path).name) if agreement is not None else None
    if mismatch is not None:
        warnings.append(mismatch)
    estimate = consistent.estimate
    if consistent.enforced and estimate is None:
        warnings.append(
            f"physical consistency could not be enforced ({consistent.error}): the published values are the"
            " unconstrained estimate"
        )
    if estimate is None and consistent.published_consistent is False:
        warnings.append(
            f"{NOT_CONSISTENT}: no physically consistent model ([Wensing2018]) with the URDF's null-space"
            " component reproduces them; the nearest one was not searched for (estimation.consistency is false:"
            " --urdf-out or estimation.consistency: true compute it), standard_parameters hold the base values"
        )
    if estimate is not None and not consistent.published_consistent:
        active = _listed(list(estimate.active)) or "none"
        warnings.append(
            f"{NOT_CONSISTENT}: no physically consistent model ([Wensing2018]) reproduces them; the nearest one"
            f" is {estimate.shift_sigma:.3g} σ away"
            f" (weighted residual +{100 * estimate.cost_increase:.3g} %, at the bound: {active})"
            " and is what standard_parameters and --urdf-out hold"
        )
    negative = [
        f"{name} = {value:.3g}"
        for name, value, expression in zip(result.names, result.estimate.parameters, result.expressions, strict=True)
        if name.startswith(("Fv", "Fc", "Ia")) and expression.strip() == name and value < 0.0
    ]
    if negative:
        warnings.append(
            f"negative friction or rotor inertia (physically impossible): {_listed(negative)}; the data do not"
            " determine them (check the drive gains, the sign of the torques, the excitation of those joints)"
        )
    columns = _equation_names(result, joints)
    reduction = result.reduction
    if reduction is not None:
        for column, equation in reduction.refused:
            warnings.append(
                f"the {reduction.method} reduction did not remove {result.base.names[column]}: it is the last"
                f" parameter acting on {columns[equation]}, whose every equation would otherwise go unexplained"
            )
        if reduction.method != "none":
            before, after = reduction.reference.relative_errors, reduction.solution.relative_errors
            for name, old, new in zip(columns, before, after, strict=True):
                if np.isfinite(old) and old > 0.0 and new > (1.0 + settings.reduction.e_tol) * old:
                    warnings.append(
                        f"{name}: the {reduction.method} reduction raised its relative error ‖ρ_j‖/‖y_j‖"
                        f" ([Volkmann2020] Algorithm 1's e*_j) from {old:.3g}"
                        f" to {new:.3g} (+{100 * (new / old - 1.0):.3g} %, more than"
                        f" e_tol = {100 * settings.reduction.e_tol:g} %)"
                    )
    errors = result.judged.joint_errors.errors
    for joint, relative in zip(joints, result.judged.joint_errors.relative_errors, strict=True):
        if relative > settings.joint_error_warning:  # NaN (no equation) is warned about below
            warnings.append(
                f"{joint}: e*_j = {relative:.3g} ([Volkmann2020] eq. (12): mean |τ − τ̂| / mean |τ| on its"
                f" equations) is above estimation.joint_error_warning = {settings.joint_error_warning:g}: the model"
                " does not predict this joint (check its torques or currents, its drive gain and coupling, and"
                " whether the recording moves it)"
            )
    silent = [joint for joint, error in zip(joints, errors, strict=True) if np.isnan(error)]
    if silent:
        warnings.append(
            f"{', '.join(silent)} had no usable equation (never moved, or only slower than"
            f" signal.min_speed_rad_s = {settings.signal.min_speed_rad_s:g} rad/s): the model gives no torque there"
        )
    condition = result.estimate.condition_number
    if condition > CONDITION_NUMBER_WARNING:
        vague = int(np.count_nonzero(~(result.estimate.relative_std_percent <= 100.0)))
        warnings.append(
            f"condition number {condition:.4g} (above {CONDITION_NUMBER_WARNING:g}): the recording excites the"
            f" {len(result.names)} parameters too little to tell them apart ({vague} have σ above their value); the"
            " model may fit this motion and not others: validate it on another recording (--validate), record a"
            " longer or richer motion (dynid excite), or let a reduction keep what this one determines"
            " (estimation.reduction)"
        )
    unexcited = [name for name, why in result.removed if why in (NOT_EXCITED, NOT_IDENTIFIABLE)]
    if unexcited:
        warnings.append(
            f"the recording leaves {len(unexcited)} base parameter(s) unexcited: {_listed(unexcited)} (removed:"
            " their torques are missing from the model); excite the joints they belong to over more of their range"
        )
    return warnings


def validation_names(paths: Sequence[Path]) -> list[str]:
    """Names of held-out recordings as the user gave them (unique: repeated names get ``#2``, ``#3``)."""
    names: list[str] = []
    for path in paths:
        name = str(path)
        count = sum(1 for existing in names if existing == name or existing.startswith(f"{name} #"))
        names.append(name if count == 0 else f"{name} #{count + 1}")
    return names


__all__ = [
    "CONDITION_NUMBER_WARNING",
    "CONSISTENCY_COST_WARNING",
    "NOT_CONSISTENT",
    "ConsistencyCost",
    "ConsistentModel",
    "configured_consistency",
    "consistent_estimator",
    "Validation",
    "consistency_cost_line",
    "consistency_cost_warnings",
    "consistency_costs",
    "consistent_model",
    "identification_warnings",
    "link_comparisons",
    "link_lines",
    "link_text",
    "moving_samples",
    "physical_consistency_section",
    "relative_error_over",
    "unconstrained_result",
    "urdf_result",
    "validate",
    "validation_names",
]
