"""The five regression models of [DirectDrive2012] §3, all in the IDIM base parameters.

[DirectDrive2012] compares five linear regression models ``y = Φ θ + e`` of one robot,
estimated by the same (recursive) least squares:

``dynamic``
    the IDIM ``τ = W(q, q̇, q̈) θ`` ([DirectDrive2012] eq. (9)-(10); [Gautier2013] eq. (6)); here
    :func:`~dynamic_identification.core.identification.prepare_observations`.
``filtered_dynamic``
    both sides through the first-order filter ``f(s) = λ / (s + λ)`` ([DirectDrive2012] eq.
    (11)-(14), Hsu). The acceleration is avoided by Lagrange's form
    ``τ = ṗ + β`` with the generalised momentum ``p = M(q) q̇`` and
    ``β = W(q, q̇, 0) − Ṁ(q) q̇``: ``f(s)[ṗ] = λ (p − f(s)[p])``, so
    ``f τ = λ (W_p − f W_p) + f W_β`` with the momentum columns
    ``W_p = W(q, 0, q̇) − W(q, 0, 0)`` and ``Ṁ q̇`` by a central difference of
    ``W_p`` along ``q ± ε q̇``. No ``q̈`` enters.
``supplied_energy``
    the work of the joint torques over an interval equals the change of the
    total energy plus the friction work ([DirectDrive2012] eq. (15)-(17), Gautier & Khalil):
    ``∫ q̇ᵀτ dt = h(t_b) − h(t_a) + ∫ h_f dt``, integrals by the trapezoid rule
    ([DirectDrive2012] §4.3). [DirectDrive2012] integrates from the start of the record; here the
    record is cut into consecutive intervals of ``energy_interval_s`` so that the
    equation errors are independent (one interval spanning the record is seed
    003's last equation).
``power``
    its time derivative ``q̇ᵀτ = dh/dt + h_f`` ([DirectDrive2012] eq. (18)-(19); [Gautier2013] eq.
    (10)-(12)); here :func:`~dynamic_identification.core.regressors.power.power_observations`.
``filtered_power``
    the power through ``f(s)`` ([DirectDrive2012] eq. (20)-(21), Reyes & Kelly):
    ``f[q̇ᵀτ] = λ (h − f h) + f h_f``, again without ``q̈``.

The energy ``h`` and friction power ``h_f`` are those of
:mod:`dynamic_identification.core.regressors.power`: in the IDIM base columns the energy
differs from the full model's by a constant only, which every difference and
derivative removes, so all five models estimate the same base parameters and
compare parameter by parameter.

Filters are discretised by the bilinear (Tustin) transform and run causally
(``scipy.signal.lfilter``), as [DirectDrive2012] §4.2 implements them in discrete form. With
Tustin ``λ (1 − F(z))`` *is* ``F(z)`` times the trapezoidal derivative, so the identity
``f(s)[ṗ] = λ (p − f p)`` holds to second order in the sample period. The filters
start in the steady state of a consistent history, so no start-up transient spoils
the first equations: torques, ``β``, power and friction power as if constant before
the first sample, momentum and energy as if ramping with their initial slope (which
is what a constant ``ṗ = τ − β`` means). The filtered rows are then sampled every
``n_d`` samples (the decimation factor of the IDIM settings); the filter has already
removed the noise a decimation filter would.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

import numpy as np

from dynamic_identification.core.cancellation import NEVER, Cancellation
from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.estimation.consistency import ConsistentEstimator
from dynamic_identification.core.identification.completion import (
    CompletedSegment,
    complete_recording,
    controlled_positions,
)
from dynamic_identification.core.identification.motion import decimation_factor, resolve_signal
from dynamic_identification.core.identification.observations import PreparedObservations, prepare_observations
from dynamic_identification.core.identification.prediction import Samples, stamp_torque_check
from dynamic_identification.core.identification.settings import IdentificationSettings
from dynamic_identification.core.identification.solve import (
    IdentificationResult,
    RecursiveSettings,
    identify_recording,
)
from dynamic_identification.core.mechanism.plausibility import PlausibilityBounds
from dynamic_identification.core.mechanism.seam import Mechanism, TreeMotion
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.regressors.power import (
    mechanism_energy_matrix,
    mechanism_friction_power,
    power_observations,
)
from dynamic_identification.core.settings_schema import REGRESSION_MODELS

RegressionModel = Literal["dynamic", "filtered_dynamic", "supplied_energy", "power", "filtered_power"]

MODELS: tuple[str, ...] = REGRESSION_MODELS
"""The regression models of [DirectDrive2012] §3, in the paper's order."""

DEFAULT_FILTER_LAMBDA_RAD_S = 9.11
"""``λ`` of ``f(s) = λ / (s + λ)``, rad/s: the value [DirectDrive2012] §5 found best on its arm."""

DEFAULT_ENERGY_INTERVAL_S = 0.2
"""Length of the integration intervals of the supplied-energy model, s."""

_MOMENTUM_STEP_S = 1e-5
"""``ε`` of the central difference ``Ṁ q̇ ≈ (M(q + ε q̇) − M(q − ε q̇)) q̇ / 2ε``, s."""


def first_order_filter(lambda_rad_s: float, rate_hz: float) -> tuple[np.ndarray, np.ndarray]:
    """``(b, a)`` of ``f(s) = λ / (s + λ)`` ([DirectDrive2012] eq. (11)) discretised by the bilinear transform.

    ``F(z) = λT (1 + z⁻¹) / ((2 + λT) + (λT − 2) z⁻¹)`` with ``T = 1 / rate_hz``; unit
    gain at DC, as ``f(0) = 1``.
    """
    if not (np.isfinite(lambda_rad_s) and lambda_rad_s > 0.0):
        raise IdentificationError(f"filter_lambda must be finite and > 0 rad/s, got {lambda_rad_s}")
    if not (np.isfinite(rate_hz) and rate_hz > 0.0):
        raise IdentificationError(f"rate_hz must be finite and > 0, got {rate_hz}")
    if lambda_rad_s >= np.pi * rate_hz:
        raise IdentificationError(
            f"filter_lambda={lambda_rad_s} rad/s must be below the Nyquist frequency {np.pi * rate_hz:.6g} rad/s"
        )
    lt = lambda_rad_s / rate_hz
    return np.array([lt, lt]) / (2.0 + lt), np.array([1.0, (lt - 2.0) / (2.0 + lt)])


def _filtered(
    signal: np.ndarray, coefficients: tuple[np.ndarray, np.ndarray], *, lambda_rad_s: float, rate_hz: float, ramp: bool
) -> np.ndarray:
    """Causal Tustin filter along time (axis 0) started in steady state.

    The history before the first sample is constant (``ramp=False``) or a ramp of the
    initial slope (``ramp=True``, slope by a second-order one-sided difference); the
    steady-state output of a ramp lags it by ``1/λ``, which sets the filter state
    ``z = b₁ x₋₁ − a₁ y₋₁`` of the transposed direct form.
    """
    b, a = coefficients
    first = signal[0]
    slope = (-3.0 * signal[0] + 4.0 * signal[1] - signal[2]) * (0.5 * rate_hz) if ramp else np.zeros_like(first)
    previous_input = first - slope / rate_hz
    previous_output = previous_input - slope / lambda_rad_s
    state = (b[1] * previous_input - a[1] * previous_output)[None]
    # Imported here, as below: the feedforward node reads parameter files of every model but filters none (issue 26).
    import scipy.signal

    out, _ = scipy.signal.lfilter(b, a, signal, axis=0, zi=state)
    return out


def _controlled(mechanism: Mechanism, values: np.ndarray) -> np.ndarray:
    """The controlled joints' columns of tree values ``(N, n_t)`` (all of them without closures: no copy)."""
    return values if not mechanism.closures else values[:, mechanism.actuated]


def filtered_dynamic_rows(
    dynamic_model: DynamicModel,
    segment: CompletedSegment,
    *,
    filter_lambda: float,
    step: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Filtered-dynamic rows of one segment ([DirectDrive2012] eq. (12)-(14)): ``W`` ``(r, n_a, b)``, ``Y = f τ``.

    ``segment`` holds the tree's motion and the controlled joints' torques
    (:func:`~dynamic_identification.core.identification.completion.complete_recording`). ``q̈`` is not used:
    ``f τ = λ (W_p − f W_p) + f (W(q, q̇, 0) − W_Ṁq̇)``, see the module docstring; a closed-loop robot is a
    Lagrangian system in its controlled joints' coordinates (away from singularities), whose momentum and
    ``W`` are those of its completed motion ([Briot2012] eq. (6)). Rows are taken every ``step`` samples.
    """
    mechanism, motion = dynamic_model.mechanism, segment.motion
    data = mechanism.robot.model.createData()
    q, dq = _controlled(mechanism, motion.q), _controlled(mechanism, motion.dq)
    guess = motion.q[0] if mechanism.closures else None
    zero = np.zeros_like(dq)

    def idim(tree: TreeMotion) -> np.ndarray:
        return mechanism.observation_matrix(dynamic_model.drive_chain, dynamic_model.terms, tree, data=data)[
            ..., dynamic_model.base.independent
        ]

    def momentum(tree: TreeMotion) -> np.ndarray:
        """Columns of the momentum ``M(q_t) J_t q̇_a`` at the positions of ``tree``:
        ``W(q_t, 0, J_t q̇_a) − W(q_t, 0, 0)``."""
        rest = replace(tree, dq=np.zeros_like(tree.q), ddq=np.zeros_like(tree.q))
        return idim(replace(rest, ddq=tree.tree_rates(dq))) - idim(rest)

    def completed(at: np.ndarray, velocity: np.ndarray) -> TreeMotion:
        """The tree's motion at controlled positions ``at`` and velocities ``velocity``, at rest in acceleration:
        one completion of the positions ([Briot2012] eq. (2)-(4)) serves every signal evaluated there."""
        return mechanism.complete_motion(at, velocity, zero, q_guess=guess)

    eps = _MOMENTUM_STEP_S
    moving = completed(q, dq)
    p = momentum(moving)
    m_dot_dq = (momentum(completed(q + eps * dq, zero)) - momentum(completed(q - eps * dq, zero))) / (2.0 * eps)
    beta = idim(moving) - m_dot_dq
    options = {"lambda_rad_s": filter_lambda, "rate_hz": segment.rate_hz}
    coefficients = first_order_filter(filter_lambda, segment.rate_hz)
    w = filter_lambda * (p - _filtered(p, coefficients, ramp=True, **options))
    w += _filtered(beta, coefficients, ramp=False, **options)
    y = _filtered(segment.signals.whole(), coefficients, ramp=False, **options)
    return w[::step], y[::step]


def _energy_signals(
    dynamic_model: DynamicModel, segment: CompletedSegment
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Base energy ``h`` ``(N, b)``, friction power ``h_f`` ``(N, b)`` and supplied power ``q̇_aᵀτ_a`` ``(N,)``.

    The controlled joints' power is the tree's, ``τ_aᵀ q̇_a = τ_treeᵀ J_t q̇_a = τ_treeᵀ q̇_t`` ([Briot2012]
    eq. (3), (6)): the tree's energy on the completed motion balances it.
    """
    motion = segment.motion
    controlled = _controlled(dynamic_model.mechanism, motion.dq)
    independent = dynamic_model.base.independent
    energy = mechanism_energy_matrix(dynamic_model, motion.q, motion.dq)[:, independent]
    friction = mechanism_friction_power(dynamic_model, motion.dq)[:, independent]
    return energy, friction, np.sum(controlled * segment.signals.whole(), axis=1)


def supplied_energy_rows(
    dynamic_model: DynamicModel,
    segment: CompletedSegment,
    *,
    interval_samples: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Supplied-energy rows of one segment ([DirectDrive2012] eq. (16)-(17)): ``W`` ``(r, b)``, ``Y`` ``(r,)`` in J.

    Row ``i`` covers samples ``[i L, (i + 1) L]``: ``Y = ∫ q̇ᵀτ dt``,
    ``W = h(t_b) − h(t_a) + ∫ h_f dt`` (trapezoid rule, [DirectDrive2012] §4.3).
    """
    if interval_samples < 1:
        raise IdentificationError(f"the energy interval must hold at least one sample period, got {interval_samples}")
    energy, friction, power = _energy_signals(dynamic_model, segment)
    dt = 1.0 / segment.rate_hz
    import scipy.integrate

    work = scipy.integrate.cumulative_trapezoid(power, dx=dt, initial=0.0)
    friction_work = scipy.integrate.cumulative_trapezoid(friction, dx=dt, axis=0, initial=0.0)
    bounds = np.arange(0, power.shape[0], interval_samples)
    start, stop = bounds[:-1], bounds[1:]
    w = energy[stop] - energy[start] + friction_work[stop] - friction_work[start]
    return w, work[stop] - work[start]


def filtered_power_rows(
    dynamic_model: DynamicModel,
    segment: CompletedSegment,
    *,
    filter_lambda: float,
    step: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Filtered-power rows of one segment ([DirectDrive2012] eq. (20)-(21)): ``W`` ``(r, b)``, ``Y = f[q̇ᵀτ]`` in W.

    ``W = λ (h − f h) + f h_f``; no ``q̈``. Rows every ``step`` samples.
    """
    energy, friction, power = _energy_signals(dynamic_model, segment)
    options = {"lambda_rad_s": filter_lambda, "rate_hz": segment.rate_hz}
    coefficients = first_order_filter(filter_lambda, segment.rate_hz)
    w = filter_lambda * (energy - _filtered(energy, coefficients, ramp=True, **options))
    w += _filtered(friction, coefficients, ramp=False, **options)
    return w[::step], _filtered(power, coefficients, ramp=False, **options)[::step]


def model_observations(
    dynamic_model: DynamicModel,
    time: np.ndarray,
    q: np.ndarray,
    torques: np.ndarray,
    *,
    model: str,
    settings: IdentificationSettings | None = None,
    filter_lambda: float = DEFAULT_FILTER_LAMBDA_RAD_S,
    energy_interval_s: float = DEFAULT_ENERGY_INTERVAL_S,
    dq_measured: np.ndarray | None = None,
    cancellation: Cancellation = NEVER,
) -> PreparedObservations:
    """Observations of one recording under one of the :data:`MODELS` ([DirectDrive2012] §3): the builder of each model.

    Parameters
    ----------
    time, q, torques
        Stamps (s) ``(N,)``, joint positions (rad) and joint torques (N·m) ``(N, n)``,
        joints in model order.
    model
        One of :data:`MODELS`.
    settings
        Signal processing (position filter, differentiation, decimation factor).
    filter_lambda
        ``λ`` of the filtered models, rad/s.
    energy_interval_s
        Integration interval of the supplied-energy model, s.
    dq_measured
        Measured velocities (rad/s) ``(N, n)``, used by the IDIM with
        ``settings.signal.velocity`` is ``"measured"``.
    cancellation
        Polled, and told the progress, by the IDIM's rows
        (:func:`~dynamic_identification.core.identification.observations.prepare_observations`);
        the other models report their stage.

    Returns
    -------
    PreparedObservations
        ``observation_matrix`` ``(r, k, b)`` and ``torques`` ``(r, k)`` with ``k = n``
        joint equations for the dynamic models and ``k = 1`` scalar equation for the
        energy and power models (``torques`` then holds J or W); ``valid`` marks usable
        equations.

    Raises
    ------
    IdentificationError
        An unknown model or a bad filter or interval; :class:`DataError` for bad data.
    """
    if model not in MODELS:
        raise IdentificationError(f"model must be one of {', '.join(MODELS)}; got {model!r}")
    settings = settings or IdentificationSettings()
    mechanism = dynamic_model.mechanism
    if model == "dynamic":
        return prepare_observations(
            dynamic_model,
            time,
            q,
            torques,
            dq_measured=dq_measured,
            settings=settings,
            cancellation=cancellation,
        )
    cancellation.report(f"{model} model observations")
    if model == "power":
        return power_observations(dynamic_model, [(time, q, torques)], settings=settings)
    if not (np.isfinite(energy_interval_s) and energy_interval_s > 0.0):
        raise IdentificationError(f"energy_interval_s must be finite and > 0, got {energy_interval_s}")
    velocities = None
    if dq_measured is not None:
        measured = np.asarray(dq_measured, dtype=float)
        velocities = measured if measured.shape[1] == mechanism.n_actuated else measured[:, mechanism.actuated]
    choice = resolve_signal(time, controlled_positions(mechanism, q), settings.signal, dq_measured=velocities)
    settings = replace(settings, signal=choice.signal)
    completed = complete_recording(mechanism, time, q, np.asarray(torques, dtype=float), settings=settings.signal)
    segments = completed.segments
    rate = segments[0].rate_hz
    first_order_filter(filter_lambda, rate)
    factor = decimation_factor(settings.signal, rate)
    matrices, targets = [], []
    for segment in segments:
        if model == "filtered_dynamic":
            w, y = filtered_dynamic_rows(dynamic_model, segment, filter_lambda=filter_lambda, step=factor)
        elif model == "filtered_power":
            w, y = filtered_power_rows(dynamic_model, segment, filter_lambda=filter_lambda, step=factor)
            w, y = w[:, None, :], y[:, None]
        else:
            interval = max(int(round(energy_interval_s * rate)), 1)
            w, y = supplied_energy_rows(dynamic_model, segment, interval_samples=interval)
            w, y = w[:, None, :], y[:, None]
        matrices.append(w)
        targets.append(y)
    matrix = np.concatenate(matrices)
    target = np.concatenate(targets)
    return PreparedObservations(
        observation_matrix=matrix,
        torques=target,
        valid=np.ones(target.shape, dtype=bool),
        input_samples=int(np.shape(time)[0]),
        duplicates_dropped=completed.duplicates_dropped,
        segments=len(segments),
        rate_hz=rate,
        decimation=factor,
        model=model,
    )


def identify_model(
    dynamic_model: DynamicModel,
    time: np.ndarray,
    q: np.ndarray,
    torques: np.ndarray,
    *,
    model: str,
    settings: IdentificationSettings | None = None,
    filter_lambda: float = DEFAULT_FILTER_LAMBDA_RAD_S,
    energy_interval_s: float = DEFAULT_ENERGY_INTERVAL_S,
    dq_measured: np.ndarray | None = None,
    bounds: PlausibilityBounds | None = None,
    recursive: bool = False,
    forgetting: float = 1.0,
    initial_covariance: float = 1e8,
    consistency: ConsistentEstimator | None = None,
    cancellation: Cancellation = NEVER,
) -> IdentificationResult:
    """Identify the base parameters from one recording with one regression model ([DirectDrive2012] §3).

    The model's builder (:func:`model_observations`) makes the observations; the
    estimate, reduction (``settings.reduction``) and quality are the identification
    seam's (:func:`~dynamic_identification.core.identification.solve.identify_observations`),
    the same for every model. ``recursive`` runs the recursive least squares of
    [DirectDrive2012] §3.1 (one sample per update, the per-equation-column weights of
    ``settings.method == "wls"``) for the final estimate instead of the batch QR
    solution (:class:`~dynamic_identification.core.identification.solve.RecursiveSettings`).
    ``consistency`` publishes the physically consistent estimate fitted to the model's own
    normal equations ([Wensing2018]; step 5 of the seam). ``cancellation`` is polled and told
    the progress of each stage (:mod:`~dynamic_identification.core.progress`).

    Raises
    ------
    DataError, InsufficientExcitationError
        Too few samples, a robot standing still, too few equations.
    """
    settings = settings or IdentificationSettings()

    def observe(samples: Samples) -> PreparedObservations:
        """The model's observations of the checked recording."""
        return model_observations(
            dynamic_model,
            *samples.signals,
            model=model,
            settings=settings,
            filter_lambda=filter_lambda,
            energy_interval_s=energy_interval_s,
            dq_measured=samples.dq_measured,
            cancellation=cancellation,
        )

    return identify_recording(
        dynamic_model,
        Samples(time, q, torques, dq_measured),
        observe,
        settings=settings,
        bounds=bounds,
        consistency=consistency,
        # The IDIM's own equations are the joint torques; the other models are judged by their torque prediction.
        torque_check=None
        if model == "dynamic"
        else lambda samples: stamp_torque_check(dynamic_model, [samples], settings.signal),
        recursive=RecursiveSettings(forgetting, initial_covariance) if recursive else None,
        cancellation=cancellation,
    )


__all__ = [
    "DEFAULT_ENERGY_INTERVAL_S",
    "DEFAULT_FILTER_LAMBDA_RAD_S",
    "MODELS",
    "RegressionModel",
    "filtered_dynamic_rows",
    "filtered_power_rows",
    "first_order_filter",
    "identify_model",
    "model_observations",
    "supplied_energy_rows",
]
