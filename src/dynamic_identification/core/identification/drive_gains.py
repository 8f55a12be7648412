"""Drive gains and base parameters together by IDIM-TLS with a known payload ([Briot2012] §3.2).

The joint torques are not measured; the motor currents are, and
``τ = Gᵀ (k ⊙ i)`` with ``G = diag(N) C`` (:class:`~dynamic_identification.core.mechanism.robot.DriveChain`)
depends on the motor torque constants ``k`` (the drive gains ``g_τ`` of [Briot2012]
eq. (8), known from the manufacturer to about 10 %). Writing the IDIM with the gains
as unknowns,

``Gᵀ (k ⊙ i) = V_τ k``,  ``V_τ[j, m] = G[m, j] i_m``,

the model of a trajectory without load (a) and one with a payload of known
inertial parameters ``χ_kL`` (b) reads ([Briot2012] eq. (12)-(13))

``W_tot χ_tot = [[−W_a, V_τa, 0], [−W_b, V_τb, −W_kL χ_kL]] [χ; k; δ] = ρ``,

where ``W`` is the decimated base-parameter observation matrix (the same base
parameters ``χ`` in both), ``W_kL`` the payload regressor
(:func:`~dynamic_identification.core.mechanism.payload.payload_regressor`) and ``δ`` a
scalar that should be 1. Without noise ``W_tot`` is rank deficient and ``χ_tot`` is
defined up to a scale; with noise the total-least-squares solution is the right
singular vector of the smallest singular value of ``W_tot`` (the compatible system
closest in the Frobenius norm), and the known payload fixes the scale by ``δ = 1``
([Briot2012] §3.2, "Solution of the IDIM-TLS"). The columns of ``W_tot`` are scaled
to unit norm for the SVD (and the vector scaled back), so the estimate does not
depend on the units of the unknowns.

The rows of joint ``j`` of recording ``r`` are divided by the standard deviation
``σ_{r,j}`` of their error (the per-joint weighting of IDIM-WLS, [Gautier2013]
eq. (20)), so the Frobenius norm that TLS minimises counts every equation by its
noise. ``σ`` starts from per-joint OLS with the nominal gains and is re-estimated
from the TLS residuals (:data:`TLS_ITERATIONS` passes).

Standard deviations (derivation). With ``δ = 1`` the TLS solution ``x̂ = [χ̂; k̂]``
is the exact solution of the compatible system closest to ``A x + b = ρ``
(``A = [−W, V_τ]``, ``b`` the payload column, both weighted). To first order in the
noise it equals the least-squares solution of that system, whose equation error
``ρ`` has the variance ``σ_ρ²`` of the current noise times the gains (the TLS
residual is ``‖W_tot x̂‖² = s_min² ‖[x̂; 1]‖²``). Hence
``cov(x̂) ≈ σ̂_ρ² (AᵀA)⁻¹`` with ``σ̂_ρ² = ‖A x̂ + b‖² / (r − p)`` ([Gautier2013]
eq. (17)-(18) applied to the compatible system): ``r`` weighted equations,
``p`` unknowns. The TLS correction to this is of order ``s_min² / s_{p}²``.

Transmission efficiency ([Swevers2002] eq. (5)-(8)). A transmission of efficiency ``η``
delivers ``η τ_T`` while its motor drives the load (``τ_T v > 0``) and ``τ_T / η`` while
the load drives the motor, where ``τ_T = N k i − f`` is the motor torque less the
motor-side rotor inertia, friction and offset ``f``. Per motor the current then maps to
joint torque with the gain ``g_d = η k`` while driving and ``g_b = k / η`` while braking,
and the motor-side parameters ``θ`` of ``f`` appear as ``η θ`` and ``θ / η``. With
``efficiency`` (the default) each current column is split into its driving and its braking
samples (:func:`driving_samples`, decided on low-passed currents, less ``f`` of the
previous fit from the second of :data:`REGIME_PASSES` fits on; a drive term regrouped with link parameters, such
as ``Ia1`` in ``ZZ1 + Ia1 + …``, from its braking copy, whose unknown is ``θ (1/η − η)``:
:attr:`DriveGainsResult.regrouped_drive_terms`), each drive-term column
gains a braking copy (unknown ``θ_b − θ_d``), and the same TLS identifies ``g_d`` and
``g_b``; the result reports ``k = sqrt(g_d g_b)`` and ``η = sqrt(g_d / g_b)`` with σ
propagated from their covariance. Without losses ``η`` comes out 1 within its σ. Without
this split, efficiencies of 0.82-0.9 bias the gains by up to 10 %.

Model selection. The split adds unknowns (a braking gain per motor, a braking copy of each
drive term) that the data may not determine: a motor that only brakes at one sign of its
velocity makes the braking copies of its Coulomb friction and offset one column, and the
TLS of such a system has a null vector without ``δ`` (the scale is no longer fixed). So the
efficiency model is taken only when (1) its extra unknowns are determined — a braking column
that the columns before it (base parameters, one-gain currents, earlier braking columns)
reproduce to :data:`DETERMINED_TOLERANCE` is left out (a drive term: the same value in
both regimes; a braking current: one gain for that motor), and the known payload still
fixes the scale — and (2) it explains the data significantly better than one gain per
motor: the Wald test of "lossless" (``g_b = g_d`` and every braking copy zero) with the
autocorrelation-consistent covariance of the stacked equations ([NeweyWest1987], the
residuals of filtered, decimated rows are correlated in time) rejects at
:data:`SIGNIFICANCE` (the house rule of :mod:`~dynamic_identification.core.estimation.model_selection`, shared
with the bearing friction of a closed-loop robot's passive joints), and (3) it is physical: no identified ``η``
exceeds 1 by more than :data:`EFFICIENCY_BOUND_SIGMAS` of its σ (the same covariance). Condition (3) is needed
because the Wald test assumes an unbiased estimate: with many rows it rejects "lossless" for any departure the
extra columns can absorb. The one met in practice is the errors-in-variables bias of the TLS on weak currents: the
column scaling assumes each column's noise in proportion to its norm, which a current column with a poor
signal-to-noise ratio breaks; its gain is biased, the braking part (smaller currents) most, and
``η = sqrt(g_d / g_b)`` comes out above 1 (the shipped simulator's 0.02 A white noise, 10 % of its motor 6's RMS
current: ``η = 1.017 ± 0.002`` on lossless drives, Wald χ² 1007 for 30 extra unknowns). Otherwise the one-gain
model of [Briot2012] is published; :class:`ModelChoice` says which and why, in one line.

Any robot of the mechanism seam (:mod:`~dynamic_identification.core.mechanism.seam`): ``W`` is the IDIM of the
controlled joints, ``J_tᵀ`` times the tree's ([Briot2012] eq. (6); ``J_t = I`` for a serial robot), the payload's
torques ``J_tᵀ Y_p φ`` (:func:`projected_payload_regressor`, eq. (11)), and the currents those of the motors of the
controlled joints; a closed-loop robot's motors get the same models and model selection as a serial robot's.

Signal processing is the one of :func:`~dynamic_identification.core.identification.identify`
(stamp cleaning, resampling, zero-phase position filter, derivatives and parallel
decimation, [Gautier2013] eq. (13)-(14)): the currents go through it in place of
torques (decimation is linear, so decimating ``i`` and then forming ``V_τ`` equals
decimating ``V_τ``), and the payload torques ``W_kL χ_kL`` are computed on the
filtered motion and decimated with the same filter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial
from statistics import NormalDist

import numpy as np
import scipy.linalg

from dynamic_identification.core.errors import (
    DataError,
    InsufficientExcitationError,
    RankDeficientError,
)
from dynamic_identification.core.estimation import rank_deficient_columns
from dynamic_identification.core.estimation.model_selection import SIGNIFICANCE as SIGNIFICANCE
from dynamic_identification.core.estimation.model_selection import WaldTest, wald_test
from dynamic_identification.core.estimation.uncertainty import hac_covariance
from dynamic_identification.core.identification import (
    IdentificationSettings,
    check_motion,
)
from dynamic_identification.core.identification.completion import complete_recording
from dynamic_identification.core.identification.motion import Motion
from dynamic_identification.core.identification.observations import completed_row_builder, output_blocks
from dynamic_identification.core.mechanism.payload import Payload, PayloadDynamics, frame_id
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms
from dynamic_identification.core.mechanism.seam import Mechanism, TreeMotion
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.regressors.idim import BaseParameters, drive_observation_matrix
from dynamic_identification.core.signal.filters import lowpass_zero_phase

TLS_ITERATIONS = 3
"""Re-weighting passes of the weighted TLS (weights from the previous pass's residuals)."""

ERRORS_IN_VARIABLES_SIGMAS = 5.0
"""A drive gain is warned about when its total and ordinary least-squares values differ by more than this many of its
σ and by more than :data:`ERRORS_IN_VARIABLES_FRACTION` (:attr:`DriveGainsResult.warnings`)."""

ERRORS_IN_VARIABLES_FRACTION = 0.03
"""… and by more than this fraction of the gain. On the realistic arm's currents (``bench/bench_gains_realistic.py``)
the correction moved motor 1's gain by 5.4-13 % and left it 8-23 % off, while the other motors' corrections of
1.1-2.3 % left them within 0.55 %; on the shipped simulator's weak currents the largest correction was 2 %, the
largest error 1.4 %; with white current noise of 10 % of each motor's RMS current (the TLS's own noise model) motor 1's
7.4 % correction left it 1.0 % off, within its σ."""

_SCALE_TOLERANCE = 1e-9
"""Smallest ``|δ|`` of the unit singular vector accepted as fixing the scale."""

REGIME_PASSES = 3
"""Efficiency: fits of :func:`identify_drive_gains`, the first telling driving from braking samples by the
motor torque, the next by the transmission torque of the previous fit (:func:`driving_samples`). A fit that publishes
one gain per motor ends them, unless it is the first and split no motor (:attr:`ModelChoice.braking_found`)."""

MIN_REGIME_SHARE = 0.01
"""Efficiency per motor: the driving and the braking current columns must each carry at least
this share of the motor's current column (squared norm, both recordings); else one gain."""

DETERMINED_TOLERANCE = 1e-6
"""A braking column is determined when the part of it (unit norm) that the columns before it cannot reproduce
is at least this long; below, it is left out of the efficiency model."""

EFFICIENCY_BOUND_SIGMAS = NormalDist().inv_cdf(1.0 - SIGNIFICANCE)
"""How many σ an identified ``η`` may exceed 1 before the efficiency model counts as unphysical (module docstring,
"Model selection"): a transmission delivers at most its input, ``η ≤ 1`` ([Swevers2002] eq. (8)). The one-sided normal
quantile of :data:`SIGNIFICANCE` (3.09): a lossless motor's estimate crosses it in one identification in a thousand,
as often as the Wald test takes losses the data lack."""


@dataclass(frozen=True)
class ModelChoice:
    """Which drive model :func:`drive_gains_from_rows` published, and why (module docstring, "Model selection").

    Attributes
    ----------
    efficiency
        The efficiency model (a driving and a braking gain per motor) was taken; ``False``: one gain per motor.
    reason
        One line saying which model and why.
    statistic
        Wald χ² of "lossless" with the autocorrelation-consistent covariance; NaN when not tested.
    dof
        Its degrees of freedom: the efficiency model's extra unknowns.
    p_value
        ``P(χ²_dof > statistic)``; the efficiency model is taken when it is below :data:`SIGNIFICANCE`.
    relative_error_one_gain, relative_error_efficiency
        ``‖ρ‖ / ‖V_τ k̂‖`` of each model on the same equations (NaN for a model not fitted).
    left_out
        Braking copies the data did not determine (``"Fc1 braking"``, ``"gain 3 braking"``).
    braking_found
        Some motor both drove and braked measurably, with a determined braking current; ``False``: the regime
        decision split no motor, and the efficiency model was not fitted.
    """

    efficiency: bool
    reason: str
    statistic: float = math.nan
    dof: int = 0
    p_value: float = math.nan
    relative_error_one_gain: float = math.nan
    relative_error_efficiency: float = math.nan
    left_out: tuple[str, ...] = ()
    braking_found: bool = True

    @property
    def model(self) -> str:
        """``"efficiency"`` or ``"one gain"``."""
        return "efficiency" if self.efficiency else "one gain"


@dataclass(frozen=True)
class CurrentRecording:
    """One recording in model joint order: stamps (s), positions (rad), motor currents (A).

    Attributes
    ----------
    time
        Stamps, s, shape ``(N,)``.
    q
        Joint positions, rad, shape ``(N, n)``; for a closed-loop robot the actuated joints
        or all joints of the opened tree
        (:func:`identify_drive_gains` of a :class:`~dynamic_identification.core.mechanism.seam.Mechanism`).
    currents
        Motor currents, A, shape ``(N, m)`` (motor ``m`` drives joint ``m`` through the coupling;
        ``m = n`` for a serial robot, the actuated joints of a closed-loop one).
    name
        Used in error messages (``"unloaded"``, ``"loaded"``, a file name).
    """

    time: np.ndarray
    q: np.ndarray
    currents: np.ndarray
    name: str = "recording"

    @classmethod
    def create(
        cls, time: np.ndarray, q: np.ndarray, currents: np.ndarray | None, *, name: str = "recording"
    ) -> CurrentRecording:
        """Validated recording.

        Raises
        ------
        DataError
            If ``currents`` is ``None`` (a recording of joint torques only), shapes
            disagree or a value is not finite.
        """
        if currents is None:
            raise DataError(
                f"recording {name!r} has no motor currents (J/current columns): drive gains need currents, not torques"
            )
        t = np.asarray(time, dtype=float)
        positions = np.asarray(q, dtype=float)
        amps = np.asarray(currents, dtype=float)
        if (
            t.ndim != 1
            or positions.ndim != 2
            or amps.ndim != 2
            or not t.shape[0] == positions.shape[0] == amps.shape[0]
            or amps.shape[1] > positions.shape[1]
        ):
            raise DataError(
                f"recording {name!r}: time (N,), q (N, n) and currents (N, m <= n) must agree, got"
                f" {t.shape}, {positions.shape}, {amps.shape}"
            )
        for label, array in (("time", t), ("q", positions), ("currents", amps)):
            if not np.all(np.isfinite(array)):
                row = int(np.argwhere(~np.isfinite(array))[0, 0])
                raise DataError(f"recording {name!r}: {label} is not finite at sample {row}")
        return cls(time=t, q=positions, currents=amps, name=name)


@dataclass(frozen=True)
class DriveGainsResult:
    """Drive gains and base parameters identified together by IDIM-TLS ([Briot2012] eq. (13)).

    Attributes
    ----------
    drive_gains
        Motor torque constants ``k`` in N·m/A (motor side, the form of
        :attr:`DriveChain.drive_gains <dynamic_identification.core.mechanism.robot.DriveChain.drive_gains>`), ``(n,)``.
    drive_gains_std
        Their standard deviations, N·m/A (module docstring), ``(n,)``.
    nominal_drive_gains
        The gains of the drive chain given as input, N·m/A, for reporting.
    names, values, std
        Kept base parameters (named after their independent standard column, as
        :func:`~dynamic_identification.core.identification.identify`), their values (SI) and σ.
    expressions
        What each base parameter regroups.
    removed
        Base parameters the data did not excite (not identified).
    residual_std
        ``σ̂_ρ`` of the weighted system (close to 1 when the weights match the noise).
    joint_std
        Per-joint error σ (N·m) of each recording used as weights, ``(2, n)``: unloaded, loaded.
    relative_error
        ``‖ρ‖ / ‖V_τ k̂‖`` of the unweighted equations, both recordings.
    condition_number
        Of the weighted ``[−W, V_τ]`` with unit-norm columns.
    smallest_singular_value
        ``s_min`` of the weighted ``W_tot`` (the TLS residual for a unit vector).
    samples
        Decimated samples of the unloaded and loaded recordings.
    efficiency
        Transmission efficiency ``η = sqrt(g_d / g_b)`` per motor ([Swevers2002] eq. (8)), ``(n,)``;
        1 where it was not identified (one gain: efficiency off, or a motor that only drove or
        only braked).
    efficiency_std
        Its standard deviation, ``(n,)``; NaN where it was not identified.
    model_choice
        Which model was published and why, when the efficiency model was asked for (``None`` otherwise).
    least_squares_drive_gains
        The same fit by ordinary least squares, the currents taken as exact (``δ = 1``), ``(n,)`` N·m/A; ``None``
        when not computed. The TLS corrects the bias that the currents' noise puts on them (errors in variables);
        where the two differ by much more than σ the correction is large, and right only as far as the TLS's noise
        model holds (:attr:`warnings`).
    regrouped_drive_terms
        Motor-side values θ (SI, joint side) of the drive terms whose base column regroups them with link parameters
        (``Ia1`` in ``ZZ1 + Ia1 + …``), by name: their braking copy identifies ``θ_b − θ_d = θ (1/η − η)``
        ([Swevers2002] eq. (8)), so ``θ`` follows where the efficiency model is published and ``η`` is below 1 by
        more than :data:`EFFICIENCY_BOUND_SIGMAS` σ of ``1/η − η``; empty otherwise. Used to tell driving from
        braking samples (:func:`identify_drive_gains`), not a base parameter.
    """

    drive_gains: np.ndarray
    drive_gains_std: np.ndarray
    nominal_drive_gains: np.ndarray
    names: tuple[str, ...]
    values: np.ndarray
    std: np.ndarray
    expressions: tuple[str, ...]
    removed: tuple[str, ...]
    residual_std: float
    joint_std: np.ndarray
    relative_error: float
    condition_number: float
    smallest_singular_value: float
    samples: tuple[int, int]
    efficiency: np.ndarray | None = None
    efficiency_std: np.ndarray | None = None
    model_choice: ModelChoice | None = None
    regrouped_drive_terms: dict[str, float] = field(default_factory=dict)
    least_squares_drive_gains: np.ndarray | None = None

    @property
    def warnings(self) -> tuple[str, ...]:
        """One line per motor whose gain rests on a large errors-in-variables correction: total and ordinary least
        squares differ by more than :data:`ERRORS_IN_VARIABLES_SIGMAS` σ and :data:`ERRORS_IN_VARIABLES_FRACTION`.

        The column-scaled TLS ([Briot2012] eq. (13)) takes each column's noise in proportion to its size: then it
        corrects the bias of least squares and σ covers the rest, whatever the correction's size; a current whose
        noise is large against its column (coloured noise in band, a joint the payload barely loads) is
        under-corrected, by as much as the correction itself.
        """
        if self.least_squares_drive_gains is None:
            return ()
        lines = []
        for motor, (gain, std, plain) in enumerate(
            zip(self.drive_gains, self.drive_gains_std, self.least_squares_drive_gains, strict=True)
        ):
            difference = abs(plain - gain)
            if difference > ERRORS_IN_VARIABLES_SIGMAS * std and difference > ERRORS_IN_VARIABLES_FRACTION * abs(gain):
                lines.append(
                    f"motor {motor + 1}'s drive gain rests on a large errors-in-variables correction: total least"
                    f" squares gives {gain:.5g} ± {std:.2g} N·m/A, ordinary least squares {plain:.5g}"
                    f" ({100 * (plain / gain - 1):+.2g} %); the correction and σ hold only if each current's noise is"
                    " in proportion to its column, and the noise in this one is large against the torque the known"
                    " payload adds on its joint: a heavier payload, or a motion that loads that joint more, makes the"
                    " gain depend less on it"
                )
        return tuple(lines)

    @property
    def efficiency_identified(self) -> np.ndarray:
        """``(n,)`` booleans: the motors whose efficiency the data identified (module docstring)."""
        if self.efficiency_std is None:
            return np.zeros(self.drive_gains.shape[0], dtype=bool)
        return np.isfinite(self.efficiency_std)

    @property
    def parameters(self) -> dict[str, float]:
        """Base-parameter values by name, for :func:`~dynamic_identification.core.identification.predict_torques`."""
        return dict(zip(self.names, self.values.tolist(), strict=True))

    def drive_chain(self, nominal: DriveChain) -> DriveChain:
        """``nominal`` with its drive gains replaced by the identified ones."""
        return DriveChain.create(
            nominal.n_joints, gear_ratios=nominal.gear_ratios, drive_gains=self.drive_gains, coupling=nominal.coupling
        )


@dataclass(frozen=True)
class GainRows:
    """Decimated equations of one recording for IDIM-TLS ([Briot2012] eq. (12)): ``V_τ k = W χ + W_kL χ_kL + ρ``.

    The rows of any mechanism (the serial IDIM, or ``J_tᵀ`` times the opened tree's for a closed-loop robot) are
    built by :func:`_rows`; :func:`drive_gains_from_rows` solves them.

    Attributes
    ----------
    observation_matrix
        Base-parameter observation matrix ``W``, shape ``(r, n, b)`` (``n`` equations per row:
        the joints, or the actuated joints of a closed-loop robot).
    current_columns
        ``V_τ`` of [Briot2012] eq. (8), shape ``(r, n, g)``: ``V_τ @ k`` are the torques of
        drive gains ``k`` (N·m/A), see :func:`current_columns`.
    known
        Torques of the known payload ``W_kL χ_kL``, N·m, shape ``(r, n)``; zeros without load.
    valid
        ``(r, n)`` booleans: the equations to use.
    braking_columns
        With transmission efficiency (:func:`split_currents`): ``V_τ`` of the currents
        while each motor brakes, shape of ``current_columns``, which then holds the
        currents while it drives; ``None``: one gain per motor.
    braking_drive_columns
        With efficiency: the base columns of the motor-side drive terms (``Ia``, ``Fv``,
        ``Fc``, ``off`` that are base parameters on their own) restricted to the samples
        where their motor brakes, shape ``(r, n, d)``: their parameters differ by ``η²``
        between the regimes ([Swevers2002] eq. (5)-(8)), the extra unknown of each is
        ``θ_b − θ_d``.
    drive_motors, drive_columns_base
        The motor and the base parameter of each of the ``d`` braking drive columns.
    drive_names
        The drive term of each braking drive column (``"Fc2"``), for messages.
    """

    observation_matrix: np.ndarray
    current_columns: np.ndarray
    known: np.ndarray
    valid: np.ndarray
    braking_columns: np.ndarray | None = None
    braking_drive_columns: np.ndarray | None = None
    drive_motors: tuple[int, ...] = ()
    drive_columns_base: tuple[int, ...] = ()
    drive_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        r, n = self.valid.shape
        if (
            self.observation_matrix.shape[:2] != (r, n)
            or self.current_columns.shape[:2] != (r, n)
            or self.known.shape != (r, n)
            or (self.braking_columns is not None and self.braking_columns.shape != self.current_columns.shape)
        ):
            raise DataError(
                f"GainRows: observation_matrix {self.observation_matrix.shape}, current_columns"
                f" {self.current_columns.shape}, known {self.known.shape} and valid {self.valid.shape}"
                " must share (r, n)"
            )


def _rows(
    dynamic_model: DynamicModel,
    recording: CurrentRecording,
    settings: IdentificationSettings,
    payload: Payload | None,
    efficiency: bool = False,
    estimate: _DriveEstimate | None = None,
) -> GainRows:
    """The decimated IDIM rows of ``dynamic_model`` (:func:`~dynamic_identification.core.identification.completion.\
complete_recording`, :class:`~dynamic_identification.core.identification.observations.RowBuilder`: the
    filtered motion of the controlled joints completed to the tree, ``J_tᵀ`` times the tree's IDIM), with the
    currents (split by :func:`driving_samples` with ``efficiency``) and the known payload's torques ``J_tᵀ Y_p φ``
    decimated as extra signals."""
    mechanism, drive_chain, terms = dynamic_model.mechanism, dynamic_model.drive_chain, dynamic_model.terms
    n, actuated = mechanism.n_actuated, mechanism.actuated
    columns = recording.q.shape[1]
    if columns not in (n, mechanism.n_tree) or recording.currents.shape[1] != n:
        joints = f"{n} joints" if n == mechanism.n_tree else f"{n} actuated joints ({mechanism.n_tree} in the tree)"
        raise DataError(
            f"recording {recording.name!r} has {columns} joints and {recording.currents.shape[1]} currents, the"
            f" robot {joints}"
        )
    if recording.time.shape[0] < settings.min_samples:
        raise DataError(
            f"recording {recording.name!r} has too few samples: {recording.time.shape[0]} < {settings.min_samples}"
        )
    positions = recording.q[:, actuated] if columns != n else recording.q
    continuous = [mechanism.robot.continuous[int(j)] for j in actuated]
    moved = np.array(positions, dtype=float)
    moved[:, continuous] = np.unwrap(moved[:, continuous], axis=0)
    check_motion(moved, mechanism.actuated_joint_names, min_motion_rad=settings.min_motion_rad)
    completed = complete_recording(
        mechanism, recording.time, recording.q, recording.currents, settings=settings.signal, name=recording.name
    )
    rate = completed.rate_hz
    cutoff = completed.signal.position_cutoff_hz or 0.25 * rate
    builder = completed_row_builder(dynamic_model, completed)
    factor = builder.decimator.factor
    phi = payload.dynamic_parameters() if payload is not None else np.zeros(10)
    matrices, currents, known, masks, braking_drive = [], [], [], [], []
    width = 2 * n if efficiency else n
    drive = _drive_columns(dynamic_model.base, terms, actuated) if efficiency else []
    for segment in completed.segments:
        motion, amps_measured = segment.motion, segment.signals.whole()
        length = segment.time.shape[0]
        dq, ddq = motion.dq[:, actuated], motion.ddq[:, actuated]
        payload_torques = np.zeros((length, n))
        if payload is not None:
            payload_torques = projected_payload_regressor(mechanism, payload.frame, motion) @ phi
        extra = np.zeros((length, 0))
        if efficiency:
            friction = estimate.friction(drive_chain, terms, dq, ddq) if estimate is not None else None
            gains = estimate.gains if estimate is not None else None
            # The regime from low-passed currents: deciding by the noisy ones would correlate
            # the split columns with the noise (a bias of several σ on small motors).
            try:
                smooth = lowpass_zero_phase(amps_measured, cutoff_hz=min(cutoff, 0.4 * rate), rate_hz=rate)
            except DataError:  # a segment too short for the filter's padding: decide on the raw currents
                smooth = amps_measured
            driving = driving_samples(drive_chain, smooth, dq, friction=friction, gains=gains)
            amps = np.concatenate(
                [np.where(driving, amps_measured, 0.0), np.where(driving, 0.0, amps_measured)], axis=1
            )
            if drive:
                drive_matrix = drive_observation_matrix(drive_chain, terms, dq, ddq)
                extra = np.stack([drive_matrix[:, :, c] * ~driving[:, m, None] for m, c, _ in drive], axis=2).reshape(
                    length, -1
                )
        else:
            amps = amps_measured
        signals = np.concatenate([amps, payload_torques, extra], axis=1)
        for start, block, outputs in output_blocks(length, settings.block_samples, factor, builder.reach):
            part = motion.rows(block)
            rows = builder.rows(
                part.q, part.dq, part.ddq, signals[block], start=start, outputs=outputs, projection=part.projection
            )
            matrices.append(rows.observation_matrix)
            currents.append(rows.torques[:, :width])
            known.append(rows.torques[:, width : width + n])
            braking_drive.append(rows.torques[:, width + n :].reshape(rows.torques.shape[0], n, len(drive)))
            masks.append(rows.valid)
    amps = np.concatenate(currents)
    return GainRows(
        observation_matrix=np.concatenate(matrices),
        current_columns=current_columns(drive_chain, amps[:, :n]),
        known=np.concatenate(known),
        valid=np.concatenate(masks),
        braking_columns=current_columns(drive_chain, amps[:, n:]) if efficiency else None,
        braking_drive_columns=np.concatenate(braking_drive) if efficiency else None,
        drive_motors=tuple(m for m, _, _ in drive),
        drive_columns_base=tuple(i for _, _, i in drive),
        drive_names=tuple(f"{terms.names[c % len(terms.names)]}{int(actuated[m]) + 1}" for m, c, _ in drive),
    )


def projected_payload_regressor(mechanism: Mechanism, frame: str, motion: TreeMotion | Motion) -> np.ndarray:
    """Torques of the controlled joints per unit payload parameter, ``J_tᵀ Y_p(q_t, q̇_t, q̈_t)``, ``(N, n_a, 10)``.

    A payload fixed to ``frame`` (a frame of the tree: a serial robot's flange, a parallel robot's platform) is
    one more body of the tree ([Briot2012] eq. (11)); its virtual tree torques ``Y_p φ``
    (:class:`~dynamic_identification.core.mechanism.payload.PayloadDynamics`, Pinocchio's frame body regressor) are
    projected onto the controlled joints like the tree's own (eq. (6); ``J_t = I`` without closures). ``φ`` in
    Pinocchio's ``toDynamicParameters()`` order, about the frame origin.

    Raises
    ------
    ModelError
        Unknown frame.
    """
    dynamics = PayloadDynamics(mechanism.robot, frame)
    samples = motion.q.shape[0]
    tree = np.empty((samples, mechanism.n_tree, 10))
    for k in range(samples):
        tree[k] = dynamics.regressor(motion.q[k], motion.dq[k], motion.ddq[k])
    if motion.projection is None:
        return tree
    return np.einsum("kta,ktp->kap", motion.projection, tree)


def _drive_columns(base: BaseParameters, terms: DriveTerms, actuated: np.ndarray) -> list[tuple[int, int, int]]:
    """``(motor, column of the drive observation matrix, base index)`` of every drive term.

    The base index is the one of the base parameter the term is alone, ``-1`` when it is
    regrouped with link parameters (``Ia1`` in ``ZZ1 + Ia1 + …``): its braking column is
    still exact (the regrouped column is the driving value, the braking column adds
    ``θ_b − θ_d``), only its value is not reported separately.
    """
    found = []
    for m, joint in enumerate(actuated):
        for t, term in enumerate(terms.names):
            name = f"{term}{int(joint) + 1}"
            index = base.expressions.index(name) if name in base.expressions else -1
            found.append((m, m * len(terms.names) + t, index))
    return found


@dataclass(frozen=True)
class _DriveEstimate:
    """Gains and motor-side drive terms of a first fit, to tell driving from braking samples."""

    gains: np.ndarray
    drive: np.ndarray
    """``(n, len(terms.names))`` drive parameters (zero where regrouped)."""

    def friction(self, drive_chain: DriveChain, terms: DriveTerms, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """Motor-side drive torques ``f_m`` (joint-side units), ``(N, n)``."""
        velocity = dq @ drive_chain.coupling.T
        signals = {
            "Ia": ddq @ drive_chain.coupling.T,
            "Fv": velocity,
            "Fc": np.sign(velocity),
            "off": np.ones_like(velocity),
        }
        return sum(
            (signals[term] * self.drive[None, :, t] for t, term in enumerate(terms.names)),
            np.zeros_like(velocity),
        )


def driving_samples(
    drive_chain: DriveChain,
    currents_a: np.ndarray,
    dq: np.ndarray,
    *,
    friction: np.ndarray | None = None,
    gains: np.ndarray | None = None,
) -> np.ndarray:
    """``(N, m)`` booleans: the samples where each motor drives its load (else it brakes).

    [Swevers2002] eq. (8): the transmission of motor ``m`` delivers ``η`` times its input
    ``τ_T`` while the motor drives (``τ_T v_m > 0``) and ``1/η`` times it while the load
    drives the motor, as :func:`~dynamic_identification.testing.payload_simulation.transmission_input`
    decides it, with the motor velocity ``v = C q̇``. The input is the motor torque
    ``N k i`` less the motor-side drive torques ``friction`` (rotor inertia, friction,
    offset; joint-side units) when they are known, else the motor torque alone.
    Samples at zero power count as driving. Splitting the currents (and the drive
    columns) before the decimation filter is exact: the filter is linear and the parts
    add up.
    """
    currents = np.asarray(currents_a, dtype=float)
    velocity = np.asarray(dq, dtype=float) @ drive_chain.coupling.T
    k = drive_chain.drive_gains if gains is None else np.asarray(gains, dtype=float)
    torque = currents * drive_chain.gear_ratios * k
    if friction is not None:
        torque = torque - friction
    return np.asarray(torque * velocity >= 0.0)


def current_columns(drive_chain: DriveChain, currents_a: np.ndarray) -> np.ndarray:
    """``V_τ`` of [Briot2012] eq. (8), shape ``(N, n, n)``: ``V_τ[k, j, m] = G[m, j] i_m(k)``.

    ``V_τ @ k`` are the joint torques ``Gᵀ (k ⊙ i)`` of drive gains ``k``.
    """
    currents = np.asarray(currents_a, dtype=float)
    return currents[:, None, :] * drive_chain.transmission.T[None, :, :]


def _joint_std(residual: np.ndarray, valid: np.ndarray, dof_fraction: float) -> np.ndarray:
    """RMS residual per joint over the valid equations, with the share ``dof_fraction`` of degrees of freedom used."""
    counts = valid.sum(axis=0)
    sums = np.sum(np.where(valid, residual, 0.0) ** 2, axis=0)
    sigma = np.sqrt(sums / np.maximum(counts * (1.0 - dof_fraction), 1.0))
    largest = float(np.max(sigma, initial=0.0))
    if largest == 0.0:
        return np.ones_like(sigma)
    return np.maximum(np.where(counts > 0, sigma, largest), 1e-8 * largest)


def identify_drive_gains(
    dynamic_model: DynamicModel,
    *,
    unloaded: CurrentRecording,
    loaded: CurrentRecording,
    payload: Payload,
    settings: IdentificationSettings | None = None,
    efficiency: bool = True,
) -> DriveGainsResult:
    """Identify the drive gains and the base parameters by IDIM-TLS ([Briot2012] eq. (12)-(13)).

    Parameters
    ----------
    dynamic_model
        The robot's model: any mechanism (a closed-loop robot's
        :class:`~dynamic_identification.core.mechanism.closed_loop.ClosedLoopModel`, [Briot2012] eq. (6)-(13):
        its controlled joints' torques ``J_tᵀ`` times the tree's; its URDF inertial values are
        not used), the drive chain of the motors (of the controlled joints; its drive gains are the
        nominal ones, used for the first weights and reported, not as a constraint), the drive-chain
        terms and the base parameters of the model.
    unloaded, loaded
        Recordings without and with the payload, joints in model order: positions of the controlled
        joints or of every tree joint (a closed-loop robot's passive joints are then checked against the
        closures), currents of the motors.
    payload
        The known payload (all 10 inertial parameters known, ``n_kL = 10``) and its frame (a frame of
        the tree: a parallel robot's platform).
    settings
        Signal processing and data requirements (only ``settings.signal``,
        ``min_samples``, ``min_motion_rad`` and ``block_samples`` are used).
    efficiency
        Identify a transmission efficiency per motor too (:func:`split_currents`,
        :func:`drive_gains_from_rows`): two gains per motor, ``η k`` while it drives and
        ``k / η`` while it brakes. ``False``: one gain per motor, lossless transmissions.

    Returns
    -------
    DriveGainsResult
        Gains with σ, efficiencies with σ, base parameters with σ, fit quality.

    Raises
    ------
    DataError
        A recording without currents, of the wrong size, with too few samples.
    ModelError
        The payload frame is unknown.
    InsufficientExcitationError
        The robot stood still, or the payload does not fix the scale (``δ ≈ 0``).
    LoopClosureError
        A closed-loop robot's recording reaches a singularity (names the recording and sample).
    """
    settings = settings or IdentificationSettings()
    mechanism, base = dynamic_model.mechanism, dynamic_model.base
    frame_id(mechanism.robot, payload.frame)  # refuses an unknown frame before any work
    estimate: _DriveEstimate | None = None
    for _ in range(REGIME_PASSES if efficiency else 1):
        result = drive_gains_from_rows(
            _rows(dynamic_model, unloaded, settings, None, efficiency, estimate),
            _rows(dynamic_model, loaded, settings, payload, efficiency, estimate),
            base=base,
            nominal_gains=dynamic_model.drive_chain.drive_gains,
        )
        choice = result.model_choice
        if result.efficiency is None and (estimate is not None or choice is None or choice.braking_found):
            # One gain per motor stands, unless the first pass (the motor torque alone, no fit yet) saw no braking:
            # under heavy friction the motor torque has the velocity's sign nearly everywhere, and only the
            # transmission torque less the fit's friction tells the braking samples.
            break
        values = {**result.parameters, **result.regrouped_drive_terms}
        estimate = _DriveEstimate(
            gains=result.drive_gains,
            drive=np.array(
                [
                    [values.get(f"{term}{int(j) + 1}", 0.0) for term in dynamic_model.terms.names]
                    for j in mechanism.actuated
                ]
            ),
        )
    return result


def drive_gains_from_rows(
    unloaded: GainRows, loaded: GainRows, *, base: BaseParameters, nominal_gains: np.ndarray
) -> DriveGainsResult:
    """IDIM-TLS of prepared equations ([Briot2012] eq. (13)): drive gains, base parameters, scale ``δ = 1``.

    The core of :func:`identify_drive_gains`, shared by every observation builder: base
    parameters not excited by the stacked ``W`` are dropped, the per-joint weights come
    from least squares with ``nominal_gains`` and are re-estimated from the TLS residuals
    (:data:`TLS_ITERATIONS` passes, [Gautier2013] eq. (20)), and σ follows the module
    docstring.

    With ``braking_columns`` (transmission efficiency, :func:`split_currents`) a motor
    whose driving and braking columns each carry at least :data:`MIN_REGIME_SHARE` of
    its currents gets two unknowns, ``g_d = η k`` and ``g_b = k / η``, identified by the
    same TLS; the result reports ``k = sqrt(g_d g_b)`` and ``η = sqrt(g_d / g_b)`` with σ
    propagated from the covariance of ``(g_d, g_b)`` to first order. A motor that barely
    drove or barely braked, whose braking column the data do not tell from the others, or
    whose two gains come out of different signs, keeps one gain (its two columns added).
    The one-gain model is fitted too, and the efficiency model is published only when it is
    determined, significantly better and physical (module docstring, "Model selection");
    :attr:`DriveGainsResult.model_choice` says which and why.

    Parameters
    ----------
    unloaded, loaded
        Equations of the recording without load (``known`` zero) and with the known payload.
    base
        The base parameters the columns of ``observation_matrix`` stand for.
    nominal_gains
        Drive gains the first weights assume and the result reports, N·m/A, shape ``(g,)``.

    Raises
    ------
    DataError
        Fewer usable equations than unknowns, or rows of different sizes.
    InsufficientExcitationError
        The payload does not fix the scale of the one-gain model (``δ ≈ 0``).
    """
    recordings = (unloaded, loaded)
    nominal_gains = np.asarray(nominal_gains, dtype=float)
    n = unloaded.valid.shape[1]
    gains = nominal_gains.shape[0]
    for rows in recordings:
        if rows.valid.shape[1] != n or rows.observation_matrix.shape[2] != base.count:
            raise DataError(
                f"rows have {rows.valid.shape[1]} equations and {rows.observation_matrix.shape[2]} columns;"
                f" expected {n} and the {base.count} base parameters"
            )
        if rows.current_columns.shape[2] != gains:
            raise DataError(f"rows have {rows.current_columns.shape[2]} current columns for {gains} nominal gains")
    if (unloaded.braking_columns is None) != (loaded.braking_columns is None):
        raise DataError("both recordings' rows or neither must split the currents into driving and braking")
    samples = (int(unloaded.valid.shape[0]), int(loaded.valid.shape[0]))
    one_gain = _fit(recordings, np.zeros(gains, dtype=bool), base=base, nominal_gains=nominal_gains)
    if unloaded.braking_columns is None:
        return one_gain.result(np.zeros(gains, dtype=bool), samples=samples)
    split, left_out = _determined(recordings, _split_motors(recordings, gains), one_gain.kept)
    choice, fit = _efficiency_model(recordings, split, left_out, one_gain, base=base, nominal_gains=nominal_gains)
    if fit is None:
        return one_gain.result(np.zeros(gains, dtype=bool), samples=samples, choice=choice)
    return fit.result(fit.split, samples=samples, choice=choice)


def _efficiency_model(
    recordings: tuple[GainRows, ...],
    split: np.ndarray,
    left_out: frozenset[int],
    one_gain: _Fit,
    *,
    base: BaseParameters,
    nominal_gains: np.ndarray,
) -> tuple[ModelChoice, _Fit | None]:
    """The efficiency model when it is determined, significantly better than ``one_gain`` and physical (no ``η``
    above 1 by more than :data:`EFFICIENCY_BOUND_SIGMAS` σ), else ``None``; and why.

    ``split`` are the motors whose braking current is determined, ``left_out`` the braking drive columns
    that are not (:func:`_determined`).
    """
    names = _left_out_names(recordings[0], split, left_out)
    one_line = partial(ModelChoice, False, relative_error_one_gain=one_gain.relative_error, left_out=names)
    if not np.any(split):
        return one_line(
            "one gain per motor: no motor both drove and braked measurably (or its braking current"
            " cannot be told from the other columns)",
            braking_found=False,
        ), None
    try:
        while True:
            fit = _fit(recordings, split, base=base, nominal_gains=nominal_gains, left_out=left_out)
            driving, braking = fit.split_gains()
            contradictory = split & ~(driving * braking > 0.0)
            if not np.any(contradictory):
                break
            split = split & ~contradictory
            if not np.any(split):
                return one_line("one gain per motor: the driving and braking gains came out of opposite signs"), None
        covariance = _robust_covariance(recordings, fit)
        wald = _lossless_statistic(fit, covariance)
    except (InsufficientExcitationError, RankDeficientError) as error:
        return one_line(f"one gain per motor: the efficiency model is not determined by the data ({error})"), None
    test = (
        f"{wald.describe('lossless drives')};"
        f" relative error {one_gain.relative_error:.4g} with one gain, {fit.relative_error:.4g} with efficiency"
    )
    tested = partial(
        ModelChoice,
        statistic=wald.statistic,
        dof=wald.dof,
        p_value=wald.p_value,
        relative_error_one_gain=one_gain.relative_error,
        relative_error_efficiency=fit.relative_error,
        left_out=names,
    )
    if not wald.significant:
        reason = f"one gain per motor: the efficiency model does not explain the data significantly better ({test})"
        return tested(False, reason), None
    _, _, efficiency, efficiency_std = fit.gains_and_efficiencies(covariance)
    with np.errstate(invalid="ignore"):
        excess = np.where(np.isfinite(efficiency_std), (efficiency - 1.0) / efficiency_std, -np.inf)
    worst = int(np.argmax(excess))
    if excess[worst] > EFFICIENCY_BOUND_SIGMAS:
        reason = (
            f"one gain per motor: the efficiency model is not physical (motor {worst + 1}: η = {efficiency[worst]:.4f}"
            f" ± {efficiency_std[worst]:.2g}, {excess[worst]:.1f} σ above 1, the most a transmission delivers), so its"
            f" extra unknowns fit something other than losses ({test})"
        )
        return tested(False, reason), None
    return tested(True, f"efficiency model: it explains the data significantly better than one gain ({test})"), fit


def _left_out_names(rows: GainRows, split: np.ndarray, left_out: frozenset[int]) -> tuple[str, ...]:
    """Names of the braking unknowns :func:`_determined` left out, for :attr:`ModelChoice.left_out`."""
    names = [f"{rows.drive_names[i]} braking" for i in sorted(left_out) if split[rows.drive_motors[i]]]
    return tuple(names)


def _determined(
    recordings: tuple[GainRows, ...], split: np.ndarray, kept: np.ndarray
) -> tuple[np.ndarray, frozenset[int]]:
    """The motors whose braking current, and the braking drive columns (indices into ``drive_motors``), that the data
    determine.

    Columns are taken in order — the kept base columns and the one-gain currents, then per motor its braking
    current, then the braking drive columns — each with unit norm over the valid equations of both recordings;
    one whose part orthogonal to the columns taken before it is shorter than :data:`DETERMINED_TOLERANCE` is
    left out (a braking current: the motor keeps one gain, and its braking drive columns go with it).
    """
    valid = np.concatenate([rows.valid for rows in recordings])

    def stacked(columns: list[np.ndarray]) -> np.ndarray:
        matrix = np.concatenate(columns)[valid]
        norms = np.linalg.norm(matrix, axis=0)
        return matrix / np.where(norms > 0.0, norms, 1.0)

    accepted = np.linalg.qr(
        stacked(
            [
                np.concatenate(
                    [rows.observation_matrix[..., kept], rows.current_columns + rows.braking_columns], axis=2
                )
                for rows in recordings
                if rows.braking_columns is not None
            ]
        )
    )[0]

    def independent(column: np.ndarray) -> bool:
        nonlocal accepted
        remainder = column - accepted @ (accepted.T @ column)
        length = float(np.linalg.norm(remainder))
        if length < DETERMINED_TOLERANCE or not np.any(column):
            return False
        accepted = np.column_stack([accepted, remainder / length])
        return True

    split = split.copy()
    for m in np.flatnonzero(split):
        braking = stacked([rows.braking_columns[..., m] for rows in recordings])  # type: ignore[index]
        split[m] = independent(braking)
    left_out = set()
    motors = recordings[0].drive_motors
    for i, motor in enumerate(motors):
        if not split[motor]:
            continue
        column = stacked([rows.braking_drive_columns[..., i] for rows in recordings])  # type: ignore[index]
        if not independent(column):
            left_out.add(i)
    return split, frozenset(left_out)


def _robust_covariance(recordings: tuple[GainRows, ...], fit: _Fit) -> np.ndarray:
    """The autocorrelation-consistent covariance (:func:`~dynamic_identification.core.estimation.uncertainty.\
hac_covariance`, [NeweyWest1987]) of the unknowns before ``δ`` of the compatible system
    ``[−W, −W_brake, V_τ] x = W_kL χ_kL`` at the TLS solution (its least-squares form to first order, module
    docstring), each recording's rows weighted by its joints' σ and stacked in time.

    Raises
    ------
    RankDeficientError
        The weighted normal matrix of the efficiency model is singular.
    """
    design = np.concatenate(
        [rows / sigma[None, :, None] for rows, sigma in zip(fit.design, fit.joint_std, strict=True)]
    )
    known = np.concatenate([rows / sigma[None, :] for rows, sigma in zip(fit.known, fit.joint_std, strict=True)])
    valid = np.concatenate([rows.valid for rows in recordings])
    try:
        return hac_covariance(design, known, fit.solution[:-1], valid=valid).covariance
    except DataError as error:
        raise RankDeficientError(str(error)) from error


def _lossless_statistic(fit: _Fit, covariance: np.ndarray) -> WaldTest:
    """The Wald test (:func:`~dynamic_identification.core.estimation.model_selection.wald_test`) of "lossless"
    (``g_b = g_d`` per split motor, every braking drive copy zero) with ``covariance`` (:func:`_robust_covariance`).

    Raises
    ------
    RankDeficientError
        The covariance of the extra unknowns is singular.
    """
    unknowns = fit.solution[:-1]
    offset = fit.kept.size
    restrictions = []
    for e in range(len(fit.drive_split)):
        row = np.zeros(unknowns.size)
        row[offset + e] = 1.0
        restrictions.append(row)
    for driving, braking in fit.columns:
        if driving != braking:
            row = np.zeros(unknowns.size)
            row[offset + driving], row[offset + braking] = 1.0, -1.0
            restrictions.append(row)
    return wald_test(unknowns, covariance, np.array(restrictions))


def _split_motors(recordings: tuple[GainRows, ...], gains: int) -> np.ndarray:
    """``(g,)`` booleans: the motors with enough driving and braking currents for two gains.

    Each regime must carry :data:`MIN_REGIME_SHARE` of the motor's current column.
    """
    if any(rows.braking_columns is None for rows in recordings):
        return np.zeros(gains, dtype=bool)
    driving = sum(
        np.sum(np.where(rows.valid[..., None], rows.current_columns, 0.0) ** 2, axis=(0, 1)) for rows in recordings
    )
    braking = sum(
        np.sum(np.where(rows.valid[..., None], rows.braking_columns, 0.0) ** 2, axis=(0, 1))  # type: ignore[arg-type]
        for rows in recordings
    )
    total = np.maximum(np.asarray(driving + braking, dtype=float), 1e-300)
    return np.asarray((driving / total >= MIN_REGIME_SHARE) & (braking / total >= MIN_REGIME_SHARE))


def _gain_columns(rows: GainRows, split: np.ndarray) -> np.ndarray:
    """The current columns of the TLS: per motor ``[driving, braking]`` where ``split``, else their sum."""
    columns = []
    for m in range(split.shape[0]):
        driving = rows.current_columns[..., m]
        braking = rows.braking_columns[..., m] if rows.braking_columns is not None else None
        if split[m] and braking is not None:
            columns += [driving, braking]
        else:
            columns.append(driving if braking is None else driving + braking)
    return np.stack(columns, axis=2)


@dataclass(frozen=True)
class _Fit:
    """One weighted IDIM-TLS solution of :func:`drive_gains_from_rows`, before the gains are combined."""

    drive_split: tuple[int, ...]
    """Base index (−1: regrouped) of each braking drive column; their unknowns ``θ_b − θ_d``
    follow the kept base parameters."""
    drive_terms: tuple[tuple[str, int], ...]
    """Name (``"Ia1"``) and motor of each braking drive column."""
    kept: np.ndarray
    unexcited: np.ndarray
    base: BaseParameters
    nominal_gains: np.ndarray
    solution: np.ndarray
    covariance: np.ndarray
    columns: tuple[tuple[int, int], ...]
    residual_std: float
    joint_std: np.ndarray
    relative_error: float
    condition_number: float
    smallest_singular_value: float
    split: np.ndarray
    """``(g,)`` booleans: the motors with a driving and a braking gain."""
    least_squares: np.ndarray
    """The ordinary least-squares solution of the same weighted rows with ``δ = 1`` (the currents taken as exact),
    laid out as :attr:`solution`."""
    design: tuple[np.ndarray, ...]
    """Per recording, the unweighted ``[−W, −W_brake, V_τ]`` ``(r, n, k)`` of the unknowns before ``δ``."""
    known: tuple[np.ndarray, ...]
    """Per recording, the payload torques ``W_kL χ_kL`` ``(r, n)``, N·m: the right-hand side when ``δ = 1``."""

    def motor_gains(self, solution: np.ndarray) -> np.ndarray:
        """``k = sqrt(g_d g_b)`` per motor (``g`` where one gain), N·m/A, of a solution laid out as :attr:`solution`."""
        gains = solution[self.kept.size : -1]
        return np.array([np.sqrt(gains[d] * gains[b]) if d != b else gains[d] for d, b in self.columns])

    def split_gains(self) -> tuple[np.ndarray, np.ndarray]:
        """``(g_d, g_b)`` per motor (equal where one gain)."""
        gains = self.solution[self.kept.size : -1]
        return (
            np.array([gains[d] for d, _ in self.columns]),
            np.array([gains[b] for _, b in self.columns]),
        )

    def gains_and_efficiencies(self, covariance: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``k = sqrt(g_d g_b)`` (N·m/A) and ``η = sqrt(g_d / g_b)`` per motor with their σ to first order from
        ``covariance`` of the unknowns before ``δ``; a motor with one gain has ``k = g``, ``η = 1`` and σ of ``η`` NaN.
        """
        offset, motors = self.kept.size, len(self.columns)
        gains, gains_std = self.motor_gains(self.solution), np.empty(motors)
        efficiency, efficiency_std = np.ones(motors), np.full(motors, np.nan)
        for m, (d, b) in enumerate(self.columns):
            g_d, g_b = self.solution[offset + d], self.solution[offset + b]
            block = covariance[np.ix_([offset + d, offset + b], [offset + d, offset + b])]
            if d == b:
                gains_std[m] = np.sqrt(block[0, 0])
                continue
            gain, eta = gains[m], np.sqrt(g_d / g_b)
            # ∂k/∂(g_d, g_b) = (k / 2g_d, k / 2g_b); ∂η/∂(g_d, g_b) = (η / 2g_d, −η / 2g_b).
            gain_jacobian = np.array([gain / (2.0 * g_d), gain / (2.0 * g_b)])
            eta_jacobian = np.array([eta / (2.0 * g_d), -eta / (2.0 * g_b)])
            gains_std[m] = np.sqrt(gain_jacobian @ block @ gain_jacobian)
            efficiency[m], efficiency_std[m] = eta, np.sqrt(eta_jacobian @ block @ eta_jacobian)
        return gains, gains_std, efficiency, efficiency_std

    def result(
        self, split: np.ndarray, *, samples: tuple[int, int], choice: ModelChoice | None = None
    ) -> DriveGainsResult:
        """The result with ``k = sqrt(g_d g_b)``, ``η = sqrt(g_d / g_b)`` and their σ to first order."""
        offset = self.kept.size
        values, std = self.solution[:offset].copy(), np.sqrt(np.diag(self.covariance))[:offset].copy()
        for e, index in enumerate(self.drive_split):
            # θ_d (driving) and θ_b = θ_d + Δ: the motor-side value is their geometric mean.
            where = int(np.searchsorted(self.kept, index))
            if index >= 0 and where < offset and self.kept[where] == index:
                driving, braking = values[where], values[where] + self.solution[offset + e]
                if driving * braking > 0.0:
                    values[where] = np.sign(driving) * np.sqrt(driving * braking)
        drive_gains, drive_std, efficiency, efficiency_std = self.gains_and_efficiencies(self.covariance)
        return DriveGainsResult(
            drive_gains=drive_gains,
            drive_gains_std=drive_std,
            nominal_drive_gains=self.nominal_gains.copy(),
            names=tuple(self.base.names[i] for i in self.kept),
            values=values,
            std=std,
            expressions=tuple(self.base.expressions[i] for i in self.kept),
            removed=tuple(self.base.names[i] for i in self.unexcited),
            residual_std=self.residual_std,
            joint_std=self.joint_std.copy(),
            relative_error=self.relative_error,
            condition_number=self.condition_number,
            smallest_singular_value=self.smallest_singular_value,
            samples=samples,
            efficiency=efficiency if np.any(split) else None,
            efficiency_std=efficiency_std if np.any(split) else None,
            model_choice=choice,
            regrouped_drive_terms=self.regrouped_drive_terms(efficiency, efficiency_std),
            least_squares_drive_gains=self.motor_gains(self.least_squares),
        )

    def regrouped_drive_terms(self, efficiency: np.ndarray, efficiency_std: np.ndarray) -> dict[str, float]:
        """Motor-side ``θ`` of each regrouped drive term from its braking copy (``θ_b − θ_d = θ (1/η − η)``,
        [Swevers2002] eq. (8)) where ``1/η − η`` exceeds :data:`EFFICIENCY_BOUND_SIGMAS` of its σ
        (:attr:`DriveGainsResult.regrouped_drive_terms`)."""
        found = {}
        for e, (index, (name, motor)) in enumerate(zip(self.drive_split, self.drive_terms, strict=True)):
            eta, eta_std = efficiency[motor], efficiency_std[motor]
            if index >= 0 or not np.isfinite(eta_std):
                continue
            # d(1/η − η)/dη = −(1/η² + 1).
            loss, loss_std = 1.0 / eta - eta, (1.0 / eta**2 + 1.0) * eta_std
            if loss > EFFICIENCY_BOUND_SIGMAS * loss_std:
                found[name] = float(self.solution[self.kept.size + e] / loss)
        return found


def _fit(
    recordings: tuple[GainRows, ...],
    split: np.ndarray,
    *,
    base: BaseParameters,
    nominal_gains: np.ndarray,
    left_out: frozenset[int] = frozenset(),
) -> _Fit:
    """Weighted IDIM-TLS with the current columns of :func:`_gain_columns` (``split`` per motor) and the braking drive
    columns of the split motors but ``left_out`` (indices into ``drive_motors``)."""
    n = recordings[0].valid.shape[1]
    columns: list[tuple[int, int]] = []
    for m in range(split.shape[0]):
        first = len(columns) + int(np.sum(split[:m]))
        columns.append((first, first + 1) if split[m] else (first, first))
    gain_columns = [_gain_columns(rows, split) for rows in recordings]
    drive_split = [i for i, m in enumerate(recordings[0].drive_motors) if split[m] and i not in left_out]
    drive_columns = [
        rows.braking_drive_columns[..., drive_split]
        if rows.braking_drive_columns is not None
        else np.zeros((*rows.valid.shape, 0))
        for rows in recordings
    ]
    gain_columns = [
        np.concatenate([-extra, current], axis=2) for extra, current in zip(drive_columns, gain_columns, strict=True)
    ]
    extras = len(drive_split)
    columns = [(d + extras, b + extras) for d, b in columns]
    gains = gain_columns[0].shape[2]
    stacked_w = np.concatenate([rows.observation_matrix for rows in recordings])
    stacked_valid = np.concatenate([rows.valid for rows in recordings])
    unexcited = rank_deficient_columns(stacked_w, valid=stacked_valid)
    kept = np.setdiff1d(np.arange(base.count), unexcited)
    blocks = [
        np.concatenate(
            [
                -rows.observation_matrix[..., kept],
                current,
                -rows.known[..., None],
            ],
            axis=2,
        )
        for rows, current in zip(recordings, gain_columns, strict=True)
    ]
    unknowns = kept.size + gains
    total_rows = int(stacked_valid.sum())
    if total_rows <= unknowns + 1:
        raise DataError(f"only {total_rows} usable equations for {unknowns} unknowns (base parameters and gains)")
    # First weights: per-joint residuals of least squares with the nominal gains (η = 1) and δ = 1.
    nominal_columns = np.concatenate(
        [np.zeros(extras), [nominal_gains[m] for m, (d, b) in enumerate(columns) for _ in {d, b}]]
    )
    nominal = np.concatenate([np.zeros(kept.size), nominal_columns, [1.0]])
    joint_std = np.ones((2, n))
    for r, (block, rows) in enumerate(zip(blocks, recordings, strict=True)):
        target = block[..., kept.size :] @ nominal[kept.size :]
        design = block[..., : kept.size].reshape(-1, kept.size)[rows.valid.reshape(-1)]
        solution = scipy.linalg.lstsq(design, -target.reshape(-1)[rows.valid.reshape(-1)])[0]
        residual = block[..., : kept.size] @ solution + target
        joint_std[r] = _joint_std(residual, rows.valid, kept.size / max(int(rows.valid.sum()), 1))
    solution = nominal
    singular = np.nan
    for _ in range(TLS_ITERATIONS):
        matrix = _weighted(blocks, recordings, joint_std)
        solution, singular = _total_least_squares(matrix)
        dof = unknowns / total_rows
        for r, (block, rows) in enumerate(zip(blocks, recordings, strict=True)):
            joint_std[r] = _joint_std(block @ solution, rows.valid, dof)
    matrix = _weighted(blocks, recordings, joint_std)
    design, column = matrix[:, :-1], matrix[:, -1]
    residual = design @ solution[:-1] + column
    residual_std = float(np.linalg.norm(residual) / np.sqrt(matrix.shape[0] - unknowns))
    least_squares = np.append(scipy.linalg.lstsq(design, -column, check_finite=False)[0], 1.0)
    norms = np.linalg.norm(design, axis=0)
    norms = np.where(norms > 0.0, norms, 1.0)
    r_factor = scipy.linalg.qr(design / norms, mode="r")[0][:unknowns]
    r_inverse = scipy.linalg.solve_triangular(r_factor, np.eye(unknowns)) / norms[:, None]
    covariance = residual_std**2 * (r_inverse @ r_inverse.T)
    singular_values = scipy.linalg.svdvals(r_factor)
    unweighted = np.concatenate(
        [(block @ solution)[rows.valid] for block, rows in zip(blocks, recordings, strict=True)]
    )
    torques = np.concatenate(
        [
            (block[..., kept.size : -1] @ solution[kept.size : -1])[rows.valid]
            for block, rows in zip(blocks, recordings, strict=True)
        ]
    )
    return _Fit(
        drive_split=tuple(recordings[0].drive_columns_base[i] for i in drive_split),
        drive_terms=tuple((recordings[0].drive_names[i], recordings[0].drive_motors[i]) for i in drive_split),
        kept=kept,
        unexcited=unexcited,
        base=base,
        nominal_gains=nominal_gains.copy(),
        solution=solution,
        covariance=covariance,
        columns=tuple(columns),
        residual_std=residual_std,
        joint_std=joint_std.copy(),
        relative_error=float(np.linalg.norm(unweighted) / max(float(np.linalg.norm(torques)), 1e-300)),
        condition_number=float(singular_values[0] / singular_values[-1]),
        smallest_singular_value=float(singular),
        split=split.copy(),
        least_squares=least_squares,
        design=tuple(block[..., :-1] for block in blocks),
        known=tuple(-block[..., -1] for block in blocks),
    )


def _weighted(blocks: list[np.ndarray], recordings: tuple[GainRows, ...], joint_std: np.ndarray) -> np.ndarray:
    """Valid rows of every block divided by their joint's σ, stacked: the weighted ``W_tot``."""
    return np.concatenate(
        [
            (block / sigma[None, :, None])[rows.valid]
            for block, rows, sigma in zip(blocks, recordings, joint_std, strict=True)
        ]
    )


def _total_least_squares(matrix: np.ndarray) -> tuple[np.ndarray, float]:
    """TLS solution of ``matrix x ≈ 0`` with its last entry (δ) equal to 1, and ``s_min``.

    The columns are scaled to unit norm before the SVD and the singular vector is
    scaled back: TLS perturbs every column alike, so without this its answer would
    change with the units of the parameters (currents in mA instead of A, say).
    """
    norms = np.linalg.norm(matrix, axis=0)
    norms = np.where(norms > 0.0, norms, 1.0)
    _, singular, vt = scipy.linalg.svd(matrix / norms, full_matrices=False)
    unit = vt[-1]
    if abs(unit[-1]) < _SCALE_TOLERANCE:
        raise InsufficientExcitationError(
            f"the known payload does not fix the scale (δ = {unit[-1]:.3g} in the TLS solution):"
            " the loaded trajectory barely excites the payload's dynamics"
        )
    vector = unit / norms
    return vector / vector[-1], float(singular[-1])
