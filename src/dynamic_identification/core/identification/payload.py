"""Payload identification with the identified robot as a-priori knowledge ([Swevers2002]).

The robot without load has been identified (its base or standard parameter values
and drive terms, as :func:`~dynamic_identification.core.identification.identify`
produces them); a recording with the load gives the load's 10 inertial parameters
``φ`` about its frame (:mod:`~dynamic_identification.core.mechanism.payload`).

Model, in the motor-torque domain ([Swevers2002] §2, eq. (4)-(13))
------------------------------------------------------------------
Per motor ``m`` (joint-side units, as :class:`~dynamic_identification.core.mechanism.robot.DriveParameters`),
with ``v = C q̇`` the motor velocities and ``C`` the coupling (``V = C⁻¹`` of eq. (9)):

* measured: ``u = N ⊙ h(i)``, the current polynomial of eq. (4) (or ``N ⊙ k ⊙ i`` with
  the drive gains) times the gear ratio;
* link torques: ``τ_G = τ_robot(q, q̇, q̈) + Y_p(q, q̇, q̈) φ`` (robot a priori, load unknown);
* each transmission delivers ``τ'_G = C⁻ᵀ τ_G`` (eq. (10));
* efficiency ``R_z`` (eq. (8)): the transmission input is ``τ_T = τ'_G / R_z`` when the
  motor drives the load (``τ'_G v > 0``) and ``τ'_G R_z`` when the load drives the
  motor (``τ'_G v < 0``), i.e. ``τ_T = τ'_G R_z^(−s)``, ``s = sign(τ'_G v)``;
* motor side (eq. (5)-(7)): ``u = τ_T + Ia ⊙ (C q̈) + Fv ⊙ v + Fc ⊙ sign(v) + off``.

What is estimated and what is fixed ([Swevers2002] §3.2, §4.4)
--------------------------------------------------------------
The link inertial parameters, the rotor inertias ``Ia``, the offsets, the coupling and
the current polynomial (or drive gains) are properties of the robot type, identified
before, and are **fixed** a priori (fewer unknowns, smaller uncertainty on the load,
[Swevers2002] Remark 4.1). Viscous and Coulomb friction and the efficiencies depend on
the individual robot and its temperature and are **estimated** with the load, for the
motors that move (the set ``D`` of eq. (18)):

* :func:`identify_payload_linear` — the linear estimate: ``R_z = 1``, unknowns ``φ`` and
  ``Fv, Fc`` of ``D``; weighted least squares of
  ``u − u_robot = C⁻ᵀ Y_p φ + ΔFv ⊙ v + ΔFc ⊙ sign(v)`` (the joint-torque equation
  ``τ − τ_robot = Y_p φ`` premultiplied by ``C⁻ᵀ``, so each row carries one motor's
  current noise). This is [Swevers2002] Approach 1 restricted to the load (their
  Approach 1 also re-estimates the links, which only makes it worse, Table 2), and
  the initial guess of the iterative search (§3.2).
* :func:`identify_payload_ml` — the maximum-likelihood estimate, eq. (18): nonlinear
  least squares (Levenberg-Marquardt, ``scipy.optimize.least_squares(method="lm")``)
  of the residuals ``(u − F(θ)) / σ_u`` with the noise σ of each motor, unknowns
  ``φ``, ``Fv, Fc`` and, with ``efficiency=True``, ``R_z`` of ``D`` (Approach 3;
  ``efficiency=False`` is Approach 2).

Physical consistency by construction: the load is parametrised by
``m = exp(α)``, a free centre of mass ``c`` and the log-Cholesky factor ``L`` of its
second moment of mass about the centre of mass, ``Σ_c = L Lᵀ`` (diagonal of ``L`` =
``exp`` of free numbers), ``I_c = tr(Σ_c) 1 − Σ_c``. Every iterate has ``m > 0`` and a
positive-definite ``Σ_c``, i.e. a positive-definite ``I_c`` meeting the triangle
inequalities. ``R_z = exp(ρ)`` stays positive.

Noise and weights: with a periodic excitation the data are averaged over the periods
and the noise variance of each motor's averaged torque is estimated from the scatter
between periods ([Swevers2002] §4.3, after eq. (17);
:func:`~dynamic_identification.core.signal.periodic.mean_noise_variance`); the motion is
filtered and differentiated exactly in the frequency domain (eq. (15)-(17),
:func:`~dynamic_identification.core.signal.periodic.fourier_filter`). Without periods
(:func:`recording_observations`), the weights are the per-motor residual σ of the
linear estimate.

Uncertainty: ``cov(θ) = s² (JᵀJ)⁻¹`` from the Jacobian ``J`` of the weighted residuals at
the optimum, ``s² = ‖r‖² / (K − p)`` (K equations, p unknowns), propagated to ``φ`` and
to mass, centre of mass and inertia entries with the exact (complex-step) Jacobians of
the parametrisation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Literal, NamedTuple

import numpy as np
import scipy.linalg
import scipy.ndimage
import scipy.optimize

from dynamic_identification.core.errors import DataError, InsufficientExcitationError, ModelError, RankDeficientError
from dynamic_identification.core.estimation import weighted_least_squares
from dynamic_identification.core.identification import SignalSettings, estimate_motion, resolve_signal
from dynamic_identification.core.identification.torque_delay import read_late
from dynamic_identification.core.mechanism.payload import (
    Payload,
    PayloadError,
    PayloadStd,
    com_inertia,
    com_inertia_from_log_cholesky,
    log_cholesky_from_parameters,
    parameters_from_com_inertia,
    parameters_from_log_cholesky,
    payload_regressor,
)
from dynamic_identification.core.mechanism.robot import (
    INERTIAL_PARAMETER_NAMES,
    DriveChain,
    DriveParameters,
    DriveTerms,
    RobotModel,
    standard_parameter_names,
)
from dynamic_identification.core.regressors.idim import inertial_observation_matrix
from dynamic_identification.core.signal.alignment import current_polynomial, motor_torques
from dynamic_identification.core.signal.filters import ParallelDecimator, default_decimation
from dynamic_identification.core.signal.periodic import (
    PeriodicStretch,
    average_periods,
    fourier_filter,
    mean_noise_variance,
    periodic_stretch,
    split_periods,
)

PAYLOAD_PARAMETER_NAMES: tuple[str, ...] = tuple(f"{name}L" for name in INERTIAL_PARAMETER_NAMES)
"""Names of the load's dynamic parameters (``ML, MXL, …, ZZL``), Pinocchio order."""

MIN_ACTUATED_FRACTION = 0.25
"""A motor belongs to the actuated set ``D`` when at least this fraction of its samples is fast enough."""

_MASS_FLOOR_KG = 1e-3
"""Smallest mass of the physical projection of a linear estimate (the ML start), kg."""

_SECOND_MOMENT_FLOOR = 0.05
"""Smallest eigenvalue of ``Σ_c`` of the projected start, relative to its largest (and at least 1e-9 kg·m²).

A start on the boundary (a flat or thin body) would leave a log-Cholesky diagonal at −∞,
where its derivative vanishes and the search cannot leave it; 5 % keeps it inside."""

_NOISE_FLOOR = 1e-9
"""Smallest noise σ of a motor, relative to its RMS torque (noise-free data would give infinite weight)."""

_BOUND_RATIO = 1e-8
"""A load whose smallest eigenvalue of ``Σ_c`` is below this fraction of the largest is at the physical bound."""

_SINGULAR_TOLERANCE = 1e-10
"""Singular values of the weighted Jacobian below this fraction of the largest are undetermined directions."""

_COMPLEX_STEP = 1e-30
"""Step of the complex-step derivatives of the parametrisation (exact to rounding)."""


# --------------------------------------------------------------------------- robot prior


CORRECTED_PARAMETERS = 4
"""The prior correction estimates the first :data:`CORRECTED_PARAMETERS` of ``φ``: mass and first moment."""


@dataclass(frozen=True)
class PriorCorrection:
    """What the robot prior lacks at the load's frame, estimated from the robot's motion without the load.

    The load's equations are those of the link it is attached to ([Swevers2002] eq. (1)-(3):
    its parameters add to that link's), so wherever the robot prior is wrong in the span of the
    load's columns, the load's estimate absorbs the error. An identified model reduced by
    sensitivity ([Volkmann2020] Algorithm 1) drops a wrist's small first moments because they
    change the robot's own torques by less than ``e_tol``; a load of kilograms then shows the
    dropped moment as centimetres of centre of mass. Fitting the prior's residual of motion
    *without* the load to the load's mass and first-moment columns measures that part of the
    prior's error; :meth:`RobotPrior.corrected` adds it back.

    Attributes
    ----------
    frame
        The load's frame.
    dynamic_parameters
        ``φ₀`` (10,) about the frame origin, Pinocchio order: mass (kg) and first moment
        (kg·m) estimated, the inertia entries zero (a job does not determine them).
    covariance
        Covariance of ``φ₀``, ``(10, 10)`` (zero outside the estimated block); it adds to the
        load's (:func:`add_correction_uncertainty`).
    equations
        Motor equations of the motion without the load that were used.
    """

    frame: str
    dynamic_parameters: np.ndarray
    covariance: np.ndarray
    equations: int


@dataclass(frozen=True)
class RobotPrior:
    """The identified robot, split into its rigid-body and drive-chain parts.

    Attributes
    ----------
    robot
        The robot model (the load is attached to one of its frames).
    drive_chain
        Gear ratios, coupling and drive gains (the gains convert currents when no
        current polynomial is given).
    inertial
        Inertial parameter values in the standard layout ``(10 n,)`` (zeros at the
        standard columns a base-parameter model does not keep): the link torques are
        ``inertial_observation_matrix(q, q̇, q̈) @ inertial``.
    drive
        Rotor inertia, viscous and Coulomb friction and offset per motor (joint side).
    correction
        What the motion without the load showed missing at the load's frame
        (:func:`identify_prior_correction`); ``None``: the identified values as they are.
    """

    robot: RobotModel
    drive_chain: DriveChain
    inertial: np.ndarray
    drive: DriveParameters
    correction: PriorCorrection | None = None

    @classmethod
    def from_parameters(
        cls, robot: RobotModel, drive_chain: DriveChain, terms: DriveTerms, parameters: Mapping[str, float]
    ) -> RobotPrior:
        """The prior of identified parameter values by standard-column name.

        ``parameters`` are base parameters (named after their independent standard
        column, as ``IdentificationResult.values`` or the parameter YAML) or standard
        parameters. A base parameter that regroups a drive term into a link parameter
        (``ZZ1 + Ia1``) counts as a link parameter: the efficiency then applies to it.

        Raises
        ------
        ModelError
            If a name is not a standard parameter of ``robot`` and ``terms``.
        """
        n = robot.n_joints
        if drive_chain.n_joints != n:
            raise ModelError(f"drive chain has {drive_chain.n_joints} joints, robot has {n}")
        names = standard_parameter_names(n, terms)
        position = {name: i for i, name in enumerate(names)}
        unknown = [name for name in parameters if name not in position]
        if unknown:
            raise ModelError(f"parameters {unknown} are not standard parameters of this model ({n} joints, {terms})")
        inertial = np.zeros((n, 10))
        drive = {term: np.zeros(n) for term in ("Ia", "Fv", "Fc", "off")}
        for name, value in parameters.items():
            joint, local = divmod(position[name], terms.per_joint)
            if local < 10:
                inertial[joint, local] = float(value)
            else:
                drive[terms.names[local - 10]][joint] = float(value)
        return cls(
            robot=robot,
            drive_chain=drive_chain,
            inertial=inertial.ravel(),
            drive=DriveParameters.create(
                n, rotor_inertia=drive["Ia"], viscous=drive["Fv"], coulomb=drive["Fc"], offset=drive["off"]
            ),
        )

    @classmethod
    def from_standard(cls, robot: RobotModel, drive_chain: DriveChain, drive: DriveParameters) -> RobotPrior:
        """The prior of the URDF's inertial parameters and known drive parameters (e.g. a simulator's truth)."""
        return cls(
            robot=robot, drive_chain=drive_chain, inertial=robot.standard_inertial_parameters().ravel(), drive=drive
        )

    def corrected(self, correction: PriorCorrection) -> RobotPrior:
        """This prior with ``correction`` added at its frame."""
        return replace(self, correction=correction)

    def link_torques(
        self,
        q: np.ndarray,
        dq: np.ndarray,
        ddq: np.ndarray,
        *,
        frame_regressor: tuple[str, np.ndarray] | None = None,
    ) -> np.ndarray:
        """Joint torques of the links (with the :attr:`correction`), N·m, ``(N, n)``.

        ``frame_regressor``: a frame and its :func:`~dynamic_identification.core.mechanism.payload.payload_regressor`
        along this motion, which the caller already has; the correction on that frame uses it
        instead of computing it again.
        """
        torques = inertial_observation_matrix(self.robot, q, dq, ddq) @ self.inertial
        correction = self.correction
        if correction is None:
            return torques
        if frame_regressor is not None and frame_regressor[0] == correction.frame:
            regressor = frame_regressor[1]
        else:
            regressor = payload_regressor(self.robot, correction.frame, q, dq, ddq)
        return torques + regressor @ correction.dynamic_parameters


# --------------------------------------------------------------------------- observations


@dataclass(frozen=True)
class PayloadObservations:
    """Motion and measured motor torques of a recording with the load.

    Attributes
    ----------
    q, dq, ddq
        Joint positions (rad), velocities (rad/s), accelerations (rad/s²), ``(M, n)``.
    motor_torques
        Measured joint-side motor torques ``u = N ⊙ h(i)``, N·m, ``(M, n)``.
    noise_std
        σ of the noise on each motor's ``u``, N·m, ``(n,)``; ``None`` when unknown
        (then the residual σ of the linear estimate is used).
    valid
        ``(M, n)``: equations to use (the motor is fast enough for ``sign(v)``).
    periods
        Periods averaged (0: not a periodic excitation).
    stretch
        Of a periodic excitation: the stretch of the recording whose periods were averaged.
    """

    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    motor_torques: np.ndarray
    noise_std: np.ndarray | None
    valid: np.ndarray
    periods: int = 0
    stretch: PeriodicStretch | None = None


def measured_motor_torques(
    drive_chain: DriveChain, currents_a: np.ndarray, *, polynomial: np.ndarray | None = None
) -> np.ndarray:
    """Joint-side motor torques ``u = N ⊙ h(i)`` in N·m of currents in A ([Swevers2002] eq. (4)).

    ``h`` is the third-order polynomial ``sign(I)(c0 + c1|I| + c2 I² + c3|I|³)`` per
    motor (``polynomial`` ``(n, 4)`` or ``4 n`` numbers) or, when ``None``, ``k I`` with
    the drive gains. Joint torques are ``Cᵀ u``.
    """
    currents = np.asarray(currents_a, dtype=float)
    if polynomial is None:
        return currents * drive_chain.drive_gains * drive_chain.gear_ratios
    return motor_torques(currents, current_polynomial(polynomial, drive_chain.n_joints)) * drive_chain.gear_ratios


def _recording_arrays(
    robot: RobotModel, time: np.ndarray, q: np.ndarray, currents: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if currents is None:
        raise DataError("payload identification needs motor currents (J/current columns), the recording has none")
    t = np.asarray(time, dtype=float)
    positions = np.asarray(q, dtype=float)
    amps = np.asarray(currents, dtype=float)
    n = robot.n_joints
    if t.ndim != 1 or positions.shape != (t.shape[0], n) or amps.shape != positions.shape:
        raise DataError(
            f"time (N,), q and currents (N, {n}) must agree, got {t.shape}, {positions.shape}, {amps.shape}"
        )
    for name, array in (("q", positions), ("currents", amps)):
        if not np.all(np.isfinite(array)):
            raise DataError(f"{name} is not finite at sample {int(np.argwhere(~np.isfinite(array))[0, 0])}")
    return t, robot.unwrap_positions(positions), amps


def periodic_observations(
    robot: RobotModel,
    drive_chain: DriveChain,
    time: np.ndarray,
    q: np.ndarray,
    currents: np.ndarray | None,
    *,
    period_s: float,
    harmonics: int,
    start_s: float | None = None,
    polynomial: np.ndarray | None = None,
    min_speed_rad_s: float = 0.05,
    torque_delay_s: float = 0.0,
) -> PayloadObservations:
    """Observations of a periodic excitation, averaged over its periods ([Swevers2002] §4.3).

    Positions and motor torques are put on a per-period grid
    (:func:`~dynamic_identification.core.signal.periodic.split_periods`) and averaged;
    positions are filtered and differentiated in the frequency domain keeping
    ``harmonics`` lines (eq. (15)-(17)); the noise variance of each motor's averaged
    torque is the scatter between periods divided by their number (the estimate after
    eq. (17)). Equations of a motor slower than ``min_speed_rad_s`` (rad/s, joint side)
    are left out: ``sign(v)`` does not describe friction at a velocity reversal.

    Only the stretch of the recording that repeats with the period is averaged
    (:func:`~dynamic_identification.core.signal.periodic.periodic_stretch`, from ``start_s`` when given): the rest
    before and after the excitation and its ramps are left out. Torques ``torque_delay_s`` late (s; the delay the
    robot's identification aligned them with) are read so.

    Raises
    ------
    DataError
        No currents, shapes disagree, no 2 whole periods that repeat.
    """
    t, positions, amps = _recording_arrays(robot, time, q, currents)
    torques = read_late(t, measured_motor_torques(drive_chain, amps, polynomial=polynomial), torque_delay_s)
    after = slice(None) if start_s is None else t >= start_s
    stretch = periodic_stretch(t[after], positions[after], period_s=period_s)
    # The stretch and a sample more at either end: its first instant is on a grid, and its last period must count
    # whole whatever the stamps' jitter.
    first = max(int(np.searchsorted(t, stretch.start_s, side="right")) - 1, 0)
    inside = slice(first, int(np.searchsorted(t, stretch.stop_s, side="right")) + 1)
    motion = split_periods(t[inside], positions[inside], period_s=period_s, start_s=stretch.start_s, kind="cubic")
    measured = split_periods(
        t[inside],
        torques[inside],
        period_s=period_s,
        start_s=stretch.start_s,
        samples_per_period=motion.samples_per_period,
        kind="linear",
    )
    q_f, dq_f, ddq_f = fourier_filter(average_periods(motion), period_s=period_s, harmonics=harmonics)
    averaged = average_periods(measured)
    noise = np.sqrt(mean_noise_variance(measured))
    floor = _NOISE_FLOOR * np.sqrt(np.mean(averaged**2, axis=0))
    velocity = dq_f @ drive_chain.coupling.T
    return PayloadObservations(
        q=q_f,
        dq=dq_f,
        ddq=ddq_f,
        motor_torques=averaged,
        noise_std=np.maximum(noise, np.maximum(floor, 1e-300)),
        valid=np.abs(velocity) >= min_speed_rad_s,
        periods=motion.periods,
        stretch=stretch,
    )


def recording_observations(
    robot: RobotModel,
    drive_chain: DriveChain,
    time: np.ndarray,
    q: np.ndarray,
    currents: np.ndarray | None,
    *,
    settings: SignalSettings | None = None,
    polynomial: np.ndarray | None = None,
    stick_periods: int | None = None,
    torque_delay_s: float = 0.0,
) -> PayloadObservations:
    """Observations of any motion (e.g. ~10 s of normal operation), filtered and decimated.

    The signal pipeline of :func:`~dynamic_identification.core.identification.identify`
    ([Gautier2013] §IV.A): stamps cleaned, resampled, positions low-passed and
    differentiated (:func:`~dynamic_identification.core.identification.estimate_motion`);
    the motor torques are low-passed and decimated by the parallel-decimation filter
    and the motion is taken at the decimated instants (the model is nonlinear in the
    motion, so it is evaluated on the band-limited motion rather than filtered).
    Equations of a motor slower than ``settings.min_speed_rad_s`` within the
    decimation filter's support (or within ``stick_periods`` decimation periods, as the
    in-process estimator's ``window.stick_periods``: a job that stops often keeps the
    accelerations out of and into its stops) are left out. The noise σ is left unknown.
    Torques ``torque_delay_s`` late (s; the delay the robot's identification aligned them with) are read so.
    """
    settings = settings or SignalSettings()
    t, positions, amps = _recording_arrays(robot, time, q, currents)
    torques = measured_motor_torques(drive_chain, amps, polynomial=polynomial)
    settings = resolve_signal(t, positions, settings).signal
    motions, _ = estimate_motion(t, positions, settings, torques=torques)
    rate = motions[0].rate_hz
    cutoff = settings.position_cutoff_hz or 0.25 * rate
    decimator = ParallelDecimator.create(settings.decimation or default_decimation(rate, position_cutoff_hz=cutoff))
    parts: list[list[np.ndarray]] = [[], [], [], [], []]
    for motion in motions:
        if motion.torques is None:
            raise DataError("the motor torques were lost in resampling")
        decimated, index = decimator.decimate(read_late(motion.time, motion.torques.whole(), torque_delay_s))
        slow = np.abs(motion.dq @ drive_chain.coupling.T) < settings.min_speed_rad_s
        reach = (
            decimator.half_length
            if stick_periods is None
            else min(decimator.half_length, stick_periods * decimator.factor)
        )
        slow = scipy.ndimage.maximum_filter1d(slow, size=2 * reach + 1, axis=0, mode="nearest")
        for part, values in zip(
            parts, (motion.q[index], motion.dq[index], motion.ddq[index], decimated, ~slow[index]), strict=True
        ):
            part.append(values)
    q_d, dq_d, ddq_d, u_d, valid = (np.concatenate(part) for part in parts)
    return PayloadObservations(q=q_d, dq=dq_d, ddq=ddq_d, motor_torques=u_d, noise_std=None, valid=valid, periods=0)


# --------------------------------------------------------------------------- parametrisation


def _description(theta: np.ndarray) -> np.ndarray:
    """``[m, c (3), ixx, ixy, ixz, iyy, iyz, izz]`` about the centre of mass of ``θ``; complex-step safe."""
    inertia = com_inertia_from_log_cholesky(theta)
    entries = [inertia[0, 0], inertia[0, 1], inertia[0, 2], inertia[1, 1], inertia[1, 2], inertia[2, 2]]
    return np.concatenate([[np.exp(theta[0])], theta[1:4], np.array(entries, dtype=theta.dtype)])


def _complex_step(function: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """Exact Jacobian of an analytic ``function`` by complex steps, ``(len(f(x)), len(x))``."""
    columns = []
    for i in range(x.size):
        shifted = x.astype(complex)
        shifted[i] += 1j * _COMPLEX_STEP
        columns.append(np.imag(function(shifted)) / _COMPLEX_STEP)
    return np.stack(columns, axis=1)


def _theta_of(payload_parameters: np.ndarray) -> np.ndarray:
    """Log-Cholesky ``θ`` of ``φ``, or of a physical body near it when ``φ`` is not physical enough to start from.

    The mass is raised to :data:`_MASS_FLOOR_KG` and the eigenvalues of ``Σ_c`` to
    :data:`_SECOND_MOMENT_FLOOR` times the largest.
    """
    phi = np.asarray(payload_parameters, dtype=float)
    mass = max(float(phi[0]), _MASS_FLOOR_KG)
    com = phi[1:4] / phi[0] if phi[0] > 0.0 else np.zeros(3)
    inertia = com_inertia(np.concatenate([[mass], mass * com, phi[4:]]))
    values, vectors = np.linalg.eigh(0.5 * np.trace(inertia) * np.eye(3) - inertia)
    values = np.maximum(values, max(_SECOND_MOMENT_FLOOR * float(np.max(np.abs(values))), 1e-9))
    second = (vectors * values) @ vectors.T
    start = Payload("start", mass, com, np.trace(second) * np.eye(3) - second)
    return log_cholesky_from_parameters(start.dynamic_parameters())


def _payload_std(description_jacobian: np.ndarray, covariance: np.ndarray) -> PayloadStd:
    variance = np.einsum("ij,jk,ik->i", description_jacobian, covariance, description_jacobian)
    std = np.sqrt(np.maximum(variance, 0.0))
    return PayloadStd(mass_kg=float(std[0]), com_m=std[1:4], inertia_kg_m2=std[4:10])


# --------------------------------------------------------------------------- estimation


@dataclass(frozen=True)
class PayloadEstimate:
    """An identified payload, the robot-side quantities estimated with it, and the fit quality.

    Attributes
    ----------
    payload
        The load (mass, centre of mass, inertia about it) with standard deviations.
    dynamic_parameters
        ``φ`` (10,) about the frame origin, Pinocchio order (for the linear estimate,
        the unconstrained solution even when :attr:`projected`).
    covariance
        Covariance of ``φ``, ``(10, 10)``.
    method
        ``"linear"`` or ``"ml"`` (maximum likelihood, [Swevers2002] eq. (18)).
    efficiency, efficiency_std
        ``R_z`` per motor and its σ (eq. (8)); 1 and NaN where not estimated.
    viscous, viscous_std, coulomb, coulomb_std
        ``Fv`` (N·m·s/rad) and ``Fc`` (N·m) per motor and their σ (eq. (5)); the prior
        values and NaN where not estimated.
    actuated
        ``(n,)``: the motors whose equations were used (the set ``D`` of eq. (18)).
    noise_std
        σ of each motor's torque noise used as weights, N·m.
    residual_std
        ``s``, RMS of the weighted residuals corrected for the unknowns (≈ 1 when the
        model explains the data down to the noise).
    relative_error
        ``‖u − û‖ / ‖u‖`` over the used equations.
    motor_rms_error
        RMS of ``u − û`` per motor, N·m (NaN for motors not used).
    equations
        Number of equations used.
    iterations, evaluations
        Levenberg-Marquardt iterations (Jacobian evaluations) and residual evaluations (0 for the linear estimate).
    converged
        Whether the search met its tolerance (always true for the linear estimate).
    projected
        The linear ``φ`` was not physical and :attr:`payload` is a physical body near it.
    at_bound
        The maximum-likelihood load is at the physical bound (a flat or thin body,
        ``Σ_c`` singular): the data, or errors of the a-priori robot, ask for a
        non-physical inertia, which is then unreliable; mass and centre of mass are
        usually still good.
    inertia_fixed
        The inertia about the centre of mass was not estimated but fixed a priori
        (:func:`identify_payload_mass_and_centre`); its σ is then its own size.
    stretch
        Of a periodic excitation (:func:`identify_payload` with ``period_s``): the stretch of the recording whose
        periods were averaged.
    torque_delay_s
        The delay (s, positive: late) the recorded torques were read with, that of the robot's own identification
        (0: as recorded).
    """

    payload: Payload
    dynamic_parameters: np.ndarray
    covariance: np.ndarray
    method: Literal["linear", "ml"]
    efficiency: np.ndarray
    efficiency_std: np.ndarray
    viscous: np.ndarray
    viscous_std: np.ndarray
    coulomb: np.ndarray
    coulomb_std: np.ndarray
    actuated: np.ndarray
    noise_std: np.ndarray
    residual_std: float
    relative_error: float
    motor_rms_error: np.ndarray
    equations: int
    iterations: int
    evaluations: int
    converged: bool
    projected: bool
    at_bound: bool = False
    inertia_fixed: bool = False
    stretch: PeriodicStretch | None = None
    torque_delay_s: float = 0.0


@dataclass(frozen=True)
class _Problem:
    """Arrays of the motor-domain model over the used equations (flattened ``(K,)`` rows)."""

    motor: np.ndarray  # motor index of each equation
    measured: np.ndarray  # u
    sigma: np.ndarray  # σ of the motor of each equation
    delivered_robot: np.ndarray  # C⁻ᵀ τ_robot
    load_columns: np.ndarray  # C⁻ᵀ Y_p, (K, 10)
    fixed: np.ndarray  # Ia ⊙ (C q̈) + off
    velocity: np.ndarray  # v
    actuated: np.ndarray  # (n,) bool
    noise_std: np.ndarray  # (n,)


def _problem(prior: RobotPrior, frame: str, observations: PayloadObservations, noise_std: np.ndarray) -> _Problem:
    robot, chain = prior.robot, prior.drive_chain
    n = robot.n_joints
    q, dq, ddq = observations.q, observations.dq, observations.ddq
    if q.ndim != 2 or q.shape[1] != n or not q.shape == dq.shape == ddq.shape == observations.motor_torques.shape:
        raise DataError(
            f"observations must all have shape (M, {n}), got {q.shape} and {observations.motor_torques.shape}"
        )
    valid = np.asarray(observations.valid, dtype=bool)
    actuated = valid.mean(axis=0) >= MIN_ACTUATED_FRACTION
    if not actuated.any():
        raise InsufficientExcitationError(
            f"no motor moves faster than the friction threshold in {MIN_ACTUATED_FRACTION:.0%} of the samples"
        )
    used = valid & actuated[None, :]
    inverse_transpose = np.linalg.inv(chain.coupling.T)
    load_regressor = payload_regressor(robot, frame, q, dq, ddq)
    delivered = prior.link_torques(q, dq, ddq, frame_regressor=(frame, load_regressor)) @ inverse_transpose.T
    columns = np.einsum("mj,kjp->kmp", inverse_transpose, load_regressor)
    velocity = dq @ chain.coupling.T
    fixed = prior.drive.rotor_inertia * (ddq @ chain.coupling.T) + prior.drive.offset
    motor = np.broadcast_to(np.arange(n), q.shape)[used]
    return _Problem(
        motor=motor,
        measured=observations.motor_torques[used],
        sigma=noise_std[motor],
        delivered_robot=delivered[used],
        load_columns=columns[used],
        fixed=fixed[used],
        velocity=velocity[used],
        actuated=actuated,
        noise_std=noise_std,
    )


def _motor_errors(problem: _Problem, residual: np.ndarray, n: int) -> np.ndarray:
    errors = np.full(n, np.nan)
    for m in np.flatnonzero(problem.actuated):
        rows = problem.motor == m
        if rows.any():
            errors[m] = float(np.sqrt(np.mean(residual[rows] ** 2)))
    return errors


class _DriveEstimate(NamedTuple):
    """Efficiency, viscous and Coulomb friction per motor with their σ, as :class:`PayloadEstimate` reports them."""

    efficiency: np.ndarray
    efficiency_std: np.ndarray
    viscous: np.ndarray
    viscous_std: np.ndarray
    coulomb: np.ndarray
    coulomb_std: np.ndarray

    @classmethod
    def without_efficiency(
        cls, viscous: np.ndarray, viscous_std: np.ndarray, coulomb: np.ndarray, coulomb_std: np.ndarray
    ) -> _DriveEstimate:
        """Friction only: the efficiency is not estimated (1, σ NaN)."""
        n = viscous.size
        return cls(np.ones(n), np.full(n, np.nan), viscous, viscous_std, coulomb, coulomb_std)


class _SearchOutcome(NamedTuple):
    """Levenberg-Marquardt iterations (Jacobian evaluations), residual evaluations and convergence of a search."""

    iterations: int
    evaluations: int
    converged: bool


_NO_SEARCH = _SearchOutcome(iterations=0, evaluations=0, converged=True)
"""The outcome reported for the linear estimate, which does not iterate."""


def _payload_estimate(
    problem: _Problem,
    residual: np.ndarray,
    payload: Payload,
    load: tuple[np.ndarray, np.ndarray],
    drive: _DriveEstimate,
    *,
    method: Literal["linear", "ml"],
    noise_std: np.ndarray,
    residual_std: float,
    search: _SearchOutcome = _NO_SEARCH,
    projected: bool = False,
    at_bound: bool = False,
    inertia_fixed: bool = False,
) -> PayloadEstimate:
    """The estimate of ``payload``, its ``load = (φ, cov(φ))`` and ``drive``, with the fit quality of ``residual``.

    ``residual`` is ``u − û`` of every used equation (motor torques, N·m, ``(K,)``): it gives
    the relative error, each motor's RMS error and the number of equations. The other
    arguments are the :class:`PayloadEstimate` fields of the same names.
    """
    dynamic_parameters, covariance = load
    efficiency, efficiency_std, viscous, viscous_std, coulomb, coulomb_std = drive
    return PayloadEstimate(
        payload=payload,
        dynamic_parameters=dynamic_parameters,
        covariance=covariance,
        method=method,
        efficiency=efficiency,
        efficiency_std=efficiency_std,
        viscous=viscous,
        viscous_std=viscous_std,
        coulomb=coulomb,
        coulomb_std=coulomb_std,
        actuated=problem.actuated.copy(),
        noise_std=noise_std,
        residual_std=residual_std,
        relative_error=float(np.linalg.norm(residual) / max(float(np.linalg.norm(problem.measured)), 1e-300)),
        motor_rms_error=_motor_errors(problem, residual, problem.noise_std.size),
        equations=int(residual.size),
        iterations=search.iterations,
        evaluations=search.evaluations,
        converged=search.converged,
        projected=projected,
        at_bound=at_bound,
        inertia_fixed=inertia_fixed,
    )


def _noise(prior: RobotPrior, observations: PayloadObservations) -> np.ndarray | None:
    if observations.noise_std is None:
        return None
    noise = np.asarray(observations.noise_std, dtype=float)
    n = prior.robot.n_joints
    if noise.shape != (n,) or not np.all(np.isfinite(noise)) or np.any(noise <= 0.0):
        raise DataError(f"noise_std must be {n} finite values > 0 (N·m), got {noise.tolist()}")
    return noise


def identify_payload_linear(
    prior: RobotPrior, frame: str, observations: PayloadObservations, *, estimate_friction: bool = True
) -> PayloadEstimate:
    """Linear (weighted least-squares) payload estimate, efficiency 1 (module docstring).

    Parameters
    ----------
    prior
        The identified robot.
    frame
        Frame the load is attached to.
    observations
        From :func:`periodic_observations` or :func:`recording_observations`.
    estimate_friction
        Re-estimate ``Fv``, ``Fc`` of the moving motors with the load (else fixed a priori).

    Raises
    ------
    ModelError
        Unknown frame.
    RankDeficientError
        The motion does not determine the load (e.g. only the wrist moves: no mass,
        [Swevers2002] §4.2); the message names the parameters.
    InsufficientExcitationError
        No motor moves.
    """
    n = prior.robot.n_joints
    noise = _noise(prior, observations)
    problem = _problem(prior, frame, observations, noise if noise is not None else np.ones(n))
    friction_motors = np.flatnonzero(problem.actuated) if estimate_friction else np.empty(0, dtype=int)
    design, target, names = _linear_design(prior, problem, 10, friction_motors)
    # Each motor equation is a sample of its own for weighted_least_squares: W (K, 1, p), per-equation σ.
    try:
        result = weighted_least_squares(
            design[:, None, :],
            target[:, None],
            sample_std=(problem.sigma if noise is not None else _residual_sigma(design, target, problem, n))[:, None],
            parameter_names=names,
        )
    except RankDeficientError as error:
        raise RankDeficientError(
            f"the motion does not determine the payload ({error}); with the wrist centre still the mass is not"
            " identifiable: move a joint before the wrist too ([Swevers2002] §4.2)"
        ) from error
    phi = result.parameters[:10]
    covariance = result.covariance[:10, :10]
    try:
        body = Payload.from_dynamic_parameters(frame, phi)
        physical, projected = phi, False
    except PayloadError:
        physical, projected = parameters_from_log_cholesky(_theta_of(phi)), True
        body = Payload.from_dynamic_parameters(frame, physical)
    # σ of mass, centre of mass and inertia entries: first-order propagation through φ → description.
    std = _payload_std(_complex_step(_description_of_phi, physical), covariance)
    payload = Payload(frame=frame, mass_kg=body.mass_kg, com_m=body.com_m, inertia_kg_m2=body.inertia_kg_m2, std=std)
    viscous, coulomb = prior.drive.viscous.copy(), prior.drive.coulomb.copy()
    viscous_std, coulomb_std = np.full(n, np.nan), np.full(n, np.nan)
    for i, m in enumerate(friction_motors):
        viscous[m] += result.parameters[10 + 2 * i]
        coulomb[m] += result.parameters[11 + 2 * i]
        viscous_std[m], coulomb_std[m] = result.std[10 + 2 * i], result.std[11 + 2 * i]
    residual = target - design @ result.parameters
    return _payload_estimate(
        problem,
        residual,
        payload,
        (phi.copy(), covariance.copy()),
        _DriveEstimate.without_efficiency(viscous, viscous_std, coulomb, coulomb_std),
        method="linear",
        noise_std=_motor_errors(problem, residual, n) if noise is None else noise.copy(),
        residual_std=float(result.residual_std),
        projected=projected,
    )


def _linear_design(
    prior: RobotPrior, problem: _Problem, load_parameters: int, friction_motors: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Design, target and unknown names of the linear equations ``u − u_robot = C⁻ᵀ Y_p φ + ΔFv v + ΔFc sign(v)``.

    The load's unknowns are the first ``load_parameters`` of ``φ``; friction changes are
    estimated for ``friction_motors``.
    """
    columns = [problem.load_columns[:, :load_parameters]]
    names = list(PAYLOAD_PARAMETER_NAMES[:load_parameters])
    sign = np.sign(problem.velocity)
    for m in friction_motors:
        rows = (problem.motor == m).astype(float)
        columns += [(rows * problem.velocity)[:, None], (rows * sign)[:, None]]
        names += [f"Fv{m + 1}", f"Fc{m + 1}"]
    target = (
        problem.measured
        - problem.delivered_robot
        - problem.fixed
        - prior.drive.viscous[problem.motor] * problem.velocity
        - prior.drive.coulomb[problem.motor] * sign
    )
    return np.concatenate(columns, axis=1), target, names


def identify_prior_correction(prior: RobotPrior, frame: str, observations: PayloadObservations) -> PriorCorrection:
    """What ``prior`` lacks at ``frame``, from a recording of the robot *without* the load (:class:`PriorCorrection`).

    Weighted least squares of the prior's residual on the load's mass and first-moment
    columns and the friction changes of the moving motors (the equations of
    :func:`identify_payload_linear` with four load unknowns; per-motor σ from the residual).
    The inertia entries are left out: a job barely turns the wrist and leaves them undetermined.

    Raises
    ------
    ModelError
        Unknown frame.
    RankDeficientError, InsufficientExcitationError
        The motion does not determine the mass and first moment at ``frame`` (e.g. the robot stood still).
    """
    n = prior.robot.n_joints
    problem = _problem(prior, frame, observations, np.ones(n))
    design, target, names = _linear_design(prior, problem, CORRECTED_PARAMETERS, np.flatnonzero(problem.actuated))
    result = weighted_least_squares(
        design[:, None, :],
        target[:, None],
        sample_std=_residual_sigma(design, target, problem, n)[:, None],
        parameter_names=names,
    )
    estimated = slice(0, CORRECTED_PARAMETERS)
    phi = np.zeros(10)
    phi[estimated] = result.parameters[estimated]
    covariance = np.zeros((10, 10))
    covariance[estimated, estimated] = result.covariance[estimated, estimated]
    return PriorCorrection(frame, dynamic_parameters=phi, covariance=covariance, equations=int(problem.motor.size))


def add_correction_uncertainty(estimate: PayloadEstimate, correction: PriorCorrection) -> PayloadEstimate:
    """``estimate`` with the covariance of ``correction`` added to its ``φ``'s and its σ propagated again.

    An error ``δφ₀`` of the correction shifts the load's estimate by ``−δφ₀`` (the two share
    their columns), so the covariances add. The σ of an inertia that was held fixed
    (:attr:`PayloadEstimate.inertia_fixed`) stays the statement of ignorance it was.
    """
    covariance = estimate.covariance + correction.covariance
    payload = estimate.payload
    std = _payload_std(_complex_step(_description_of_phi, estimate.dynamic_parameters), covariance)
    if estimate.inertia_fixed and payload.std is not None:
        std = replace(std, inertia_kg_m2=payload.std.inertia_kg_m2)
    return replace(estimate, covariance=covariance, payload=replace(payload, std=std))


def _description_of_phi(phi: np.ndarray) -> np.ndarray:
    """``[m, c, ixx, ixy, ixz, iyy, iyz, izz]`` of ``φ``; complex-step safe."""
    mass = phi[0]
    h = phi[1:4]
    first = [phi[4], phi[5], phi[7]]
    inertia = np.array([first, [phi[5], phi[6], phi[8]], [phi[7], phi[8], phi[9]]], dtype=phi.dtype)
    inertia = inertia - ((h @ h) * np.eye(3) - np.outer(h, h)) / mass
    entries = [inertia[0, 0], inertia[0, 1], inertia[0, 2], inertia[1, 1], inertia[1, 2], inertia[2, 2]]
    return np.concatenate([[mass], h / mass, np.array(entries, dtype=phi.dtype)])


def _residual_sigma(design: np.ndarray, target: np.ndarray, problem: _Problem, n: int) -> np.ndarray:
    """Per-equation σ from the per-motor residual of an unweighted fit (noise unknown)."""
    solution = scipy.linalg.lstsq(design, target)[0]
    errors = _motor_errors(problem, target - design @ solution, n)
    largest = float(np.nanmax(errors))
    errors = np.where(np.isfinite(errors) & (errors > 0.0), errors, largest if largest > 0.0 else 1.0)
    return np.maximum(errors, _NOISE_FLOOR * max(largest, 1e-300))[problem.motor]


def identify_payload_ml(
    prior: RobotPrior,
    frame: str,
    observations: PayloadObservations,
    *,
    efficiency: bool = True,
    estimate_friction: bool = True,
    initial: PayloadEstimate | None = None,
    max_evaluations: int = 200,
) -> PayloadEstimate:
    """Maximum-likelihood payload estimate by Levenberg-Marquardt ([Swevers2002] eq. (18)).

    Parameters
    ----------
    prior
        The identified robot (links, rotor inertias, offsets, coupling fixed).
    frame
        Frame the load is attached to.
    observations
        From :func:`periodic_observations` (noise σ from the periods) or
        :func:`recording_observations` (noise unknown: σ of each motor from the
        residuals, re-estimated once after a first search).
    efficiency
        Estimate ``R_z`` of the moving motors (Approach 3) or fix it to 1 (Approach 2).
    estimate_friction
        Estimate ``Fv``, ``Fc`` of the moving motors.
    initial
        Start of the search; default :func:`identify_payload_linear` on the same data
        ([Swevers2002] §3.2). A start that is not physical enough is moved inside
        (mass at least 1 g, eigenvalues of ``Σ_c`` at least 5 % of the largest).
    max_evaluations
        Most residual evaluations of each search.

    Raises
    ------
    ModelError, RankDeficientError, InsufficientExcitationError
        As :func:`identify_payload_linear`; also when the Jacobian at the optimum is
        singular although the load stays away from the physical boundary.
    """
    start = initial or identify_payload_linear(prior, frame, observations, estimate_friction=estimate_friction)
    noise = _noise(prior, observations)
    known_noise = noise is not None
    if noise is None:
        noise = np.where(np.isfinite(start.noise_std), start.noise_std, np.nanmax(start.noise_std))
    problem = _problem(prior, frame, observations, noise)
    moving = np.flatnonzero(problem.actuated)
    search = _Search(
        prior=prior,
        problem=problem,
        friction_motors=moving if estimate_friction else np.empty(0, dtype=int),
        efficiency_motors=moving if efficiency else np.empty(0, dtype=int),
    )
    x = search.start(start)
    if search.problem.motor.size <= x.size:
        raise DataError(f"only {search.problem.motor.size} usable equations for {x.size} unknowns")
    iterations = evaluations = 0
    converged = False
    for _ in range(1 if known_noise else 2):
        # A direction the data leave open lets a trial step overflow the log-Cholesky factor: such a step is
        # rejected by the search; an end that is not finite is refused below.
        with np.errstate(over="ignore", invalid="ignore"):
            solution = scipy.optimize.least_squares(
                search.residuals,
                x,
                jac=search.jacobian,
                method="lm",
                x_scale="jac",
                max_nfev=max_evaluations,
                xtol=1e-10,
                ftol=1e-12,
            )
        x, converged = solution.x, bool(solution.status > 0)
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(search.residuals(x)))):
            raise InsufficientExcitationError(
                "the motion does not determine the payload: the maximum-likelihood search diverged"
            )
        iterations += int(solution.njev or 0)
        evaluations += int(solution.nfev)
        if not known_noise:
            # The linear estimate's residuals hold the losses it cannot model: re-weight with the ML residuals.
            errors = _motor_errors(search.problem, search.residuals(x) * search.problem.sigma, problem.noise_std.size)
            noise = np.where(np.isfinite(errors), np.maximum(errors, _NOISE_FLOOR * np.nanmax(errors)), noise)
            search = replace(
                search, problem=replace(search.problem, sigma=noise[search.problem.motor], noise_std=noise)
            )
    return search.estimate(frame, x, _SearchOutcome(iterations, evaluations, converged))


@dataclass(frozen=True)
class _Search:
    """The unknowns ``θ = [θ_load (10), Fv (f), Fc (f), log R_z (e)]`` and the weighted residuals of eq. (18)."""

    prior: RobotPrior
    problem: _Problem
    friction_motors: np.ndarray
    efficiency_motors: np.ndarray

    def start(self, estimate: PayloadEstimate) -> np.ndarray:
        return np.concatenate(
            [
                _theta_of(estimate.payload.dynamic_parameters()),
                estimate.viscous[self.friction_motors],
                estimate.coulomb[self.friction_motors],
                np.log(estimate.efficiency[self.efficiency_motors]),
            ]
        )

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``φ``, ``Fv``, ``Fc`` and ``log R_z`` (zeros where fixed) of ``θ``."""
        f = self.friction_motors.size
        viscous, coulomb = self.prior.drive.viscous.copy(), self.prior.drive.coulomb.copy()
        viscous[self.friction_motors] = x[10 : 10 + f]
        coulomb[self.friction_motors] = x[10 + f : 10 + 2 * f]
        log_efficiency = np.zeros(viscous.size)
        log_efficiency[self.efficiency_motors] = x[10 + 2 * f :]
        return parameters_from_log_cholesky(x[:10]), viscous, coulomb, log_efficiency

    def model(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Predicted ``u``, the power-flow sign ``s`` and the transmission input ``τ_T`` of every equation."""
        problem = self.problem
        phi, viscous, coulomb, log_efficiency = self.unpack(x)
        delivered = problem.delivered_robot + problem.load_columns @ phi
        flow = np.sign(delivered * problem.velocity)
        entering = delivered * np.exp(-flow * log_efficiency[problem.motor])
        friction = viscous[problem.motor] * problem.velocity + coulomb[problem.motor] * np.sign(problem.velocity)
        return entering + problem.fixed + friction, flow, entering

    def residuals(self, x: np.ndarray) -> np.ndarray:
        return (self.problem.measured - self.model(x)[0]) / self.problem.sigma

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        problem = self.problem
        _, flow, entering = self.model(x)
        log_efficiency = self.unpack(x)[3]
        factor = np.exp(-flow * log_efficiency[problem.motor])
        friction_rows = problem.motor[:, None] == self.friction_motors[None, :]
        efficiency_rows = problem.motor[:, None] == self.efficiency_motors[None, :]
        blocks = [
            (factor[:, None] * problem.load_columns) @ _complex_step(parameters_from_log_cholesky, x[:10]),
            friction_rows * problem.velocity[:, None],
            friction_rows * np.sign(problem.velocity)[:, None],
            efficiency_rows * (-flow * entering)[:, None],
        ]
        return -np.concatenate(blocks, axis=1) / problem.sigma[:, None]

    def estimate(self, frame: str, x: np.ndarray, outcome: _SearchOutcome) -> PayloadEstimate:
        """The result at ``θ = x``, with ``cov(θ) = s² (JᵀJ)⁻¹`` propagated to the load's description."""
        problem = self.problem
        n = problem.noise_std.size
        weighted = self.residuals(x)
        count, unknowns = weighted.size, x.size
        residual_std = float(np.linalg.norm(weighted) / np.sqrt(count - unknowns))
        _, singular, vt = scipy.linalg.svd(self.jacobian(x), full_matrices=False)
        description = _description(x[:10])
        second_moment = np.exp(2.0 * x[[4, 6, 9]])
        at_bound = bool(second_moment.min() < _BOUND_RATIO * second_moment.max())
        determined = singular > _SINGULAR_TOLERANCE * singular[0]
        if not determined.all() and not at_bound:
            raise InsufficientExcitationError(
                f"the motion does not determine the payload and drive unknowns"
                f" (Jacobian condition {singular[0] / singular[-1]:.3g})"
            )
        # At the bound a log-Cholesky direction has no effect: its variance is left out (pseudo-inverse).
        covariance = residual_std**2 * (vt[determined].T / singular[determined] ** 2) @ vt[determined]
        std = np.sqrt(np.diag(covariance))
        phi, viscous, coulomb, log_efficiency = self.unpack(x)
        load_jacobian = _complex_step(parameters_from_log_cholesky, x[:10])
        payload = Payload(
            frame=frame,
            mass_kg=float(description[0]),
            com_m=description[1:4],
            inertia_kg_m2=description[4:10],
            std=_payload_std(_complex_step(_description, x[:10]), covariance[:10, :10]),
        )
        f, friction, losses = self.friction_motors.size, self.friction_motors, self.efficiency_motors
        viscous_std, coulomb_std, efficiency_std = (np.full(n, np.nan) for _ in range(3))
        viscous_std[friction] = std[10 : 10 + f]
        coulomb_std[friction] = std[10 + f : 10 + 2 * f]
        rates = np.exp(log_efficiency)
        efficiency_std[losses] = rates[losses] * std[10 + 2 * f :]
        return _payload_estimate(
            problem,
            weighted * problem.sigma,
            payload,
            (phi, load_jacobian @ covariance[:10, :10] @ load_jacobian.T),
            _DriveEstimate(rates, efficiency_std, viscous, viscous_std, coulomb, coulomb_std),
            method="ml",
            noise_std=problem.noise_std.copy(),
            residual_std=residual_std,
            search=outcome,
            at_bound=at_bound,
        )


ASSUMED_DENSITY_KG_M3 = 1000.0
"""Density of the solid sphere whose inertia stands for a load's when the motion does not determine it, kg/m³."""


def sphere_inertia(mass_kg: float, *, density_kg_m3: float = ASSUMED_DENSITY_KG_M3) -> np.ndarray:
    """Inertia about its centre of a solid sphere of ``mass_kg`` and ``density_kg_m3``, ``(3, 3)``, kg·m².

    ``I = 2/5 m r²`` with ``r = (3 m / (4 π ρ))^(1/3)``: for 4.5 kg of water 0.019 kg·m², the
    order of a gripped part's.
    """
    if not (np.isfinite(mass_kg) and mass_kg > 0.0 and np.isfinite(density_kg_m3) and density_kg_m3 > 0.0):
        raise ModelError(f"mass_kg and density_kg_m3 must be finite and > 0, got {mass_kg}, {density_kg_m3}")
    radius = (3.0 * mass_kg / (4.0 * np.pi * density_kg_m3)) ** (1.0 / 3.0)
    return 0.4 * mass_kg * radius**2 * np.eye(3)


def _phi_of(x: np.ndarray, inertia: np.ndarray) -> np.ndarray:
    """``φ`` of mass ``x[0]``, centre of mass ``x[1:4]`` and a fixed inertia about it; complex-step safe."""
    return parameters_from_com_inertia(x[0], x[1:4], inertia, dtype=x.dtype)


def identify_payload_mass_and_centre(
    prior: RobotPrior,
    frame: str,
    observations: PayloadObservations,
    *,
    inertia_kg_m2: np.ndarray | None = None,
    initial: PayloadEstimate | None = None,
) -> PayloadEstimate:
    """Mass and centre of mass of a load whose inertia about its centre of mass is fixed a priori.

    [Swevers2002] §3.2 fixes what is known to shrink the uncertainty of the rest. A job that
    barely turns the load (a pick-and-place keeps the tool vertical) determines its mass and
    centre of mass but not its rotational inertia: the full estimate then ends at the physical
    bound with an arbitrary inertia that drags the centre of mass along. Here the inertia
    about the centre of mass is held at ``inertia_kg_m2`` (default :func:`sphere_inertia` of
    the start's mass) and the mass, centre of mass and the friction of the moving motors are
    estimated by Levenberg-Marquardt on the weighted residuals of eq. (18) without
    efficiency. The reported σ of the inertia entries is their own size.

    Raises
    ------
    ModelError, RankDeficientError, InsufficientExcitationError
        As :func:`identify_payload_linear`; also when the mass or centre of mass is undetermined.
    """
    start = initial or identify_payload_linear(prior, frame, observations)
    mass0 = max(float(start.payload.mass_kg), _MASS_FLOOR_KG)
    inertia = sphere_inertia(mass0) if inertia_kg_m2 is None else np.asarray(inertia_kg_m2, dtype=float)
    noise = np.where(np.isfinite(start.noise_std), start.noise_std, np.nanmax(start.noise_std))
    problem = _problem(prior, frame, observations, noise)
    moving = np.flatnonzero(problem.actuated)
    n = problem.noise_std.size
    sign = np.sign(problem.velocity)
    rows = problem.motor[:, None] == moving[None, :]

    def residuals(x: np.ndarray) -> np.ndarray:
        viscous, coulomb = prior.drive.viscous.copy(), prior.drive.coulomb.copy()
        viscous[moving], coulomb[moving] = x[4 : 4 + moving.size], x[4 + moving.size :]
        model = (
            problem.delivered_robot
            + problem.load_columns @ _phi_of(x[:4], inertia)
            + problem.fixed
            + viscous[problem.motor] * problem.velocity
            + coulomb[problem.motor] * sign
        )
        return (problem.measured - model) / problem.sigma

    def jacobian(x: np.ndarray) -> np.ndarray:
        load = problem.load_columns @ _complex_step(lambda y: _phi_of(y, inertia), x[:4])
        return (
            -np.concatenate([load, rows * problem.velocity[:, None], rows * sign[:, None]], axis=1)
            / problem.sigma[:, None]
        )

    x0 = np.concatenate([[mass0], start.payload.com_m, start.viscous[moving], start.coulomb[moving]])
    if problem.motor.size <= x0.size:
        raise DataError(f"only {problem.motor.size} usable equations for {x0.size} unknowns")
    solution = scipy.optimize.least_squares(residuals, x0, jac=jacobian, method="lm", x_scale="jac", xtol=1e-10)
    x = solution.x
    weighted = residuals(x)
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(weighted))):
        raise InsufficientExcitationError("the motion does not determine the payload's mass and centre of mass")
    residual_std = float(np.linalg.norm(weighted) / np.sqrt(weighted.size - x.size))
    _, singular, vt = scipy.linalg.svd(jacobian(x), full_matrices=False)
    if not x[0] > 0.0 or singular[-1] <= _SINGULAR_TOLERANCE * singular[0]:
        raise InsufficientExcitationError(
            f"the motion does not determine the payload's mass and centre of mass (mass {x[0]:.4g} kg,"
            f" Jacobian condition {singular[0] / max(singular[-1], 1e-300):.3g})"
        )
    covariance = residual_std**2 * (vt.T / singular**2) @ vt
    std = np.sqrt(np.diag(covariance))
    # Not estimated: σ of every entry is the size of the assumed inertia, a statement of ignorance.
    payload_std = PayloadStd(mass_kg=float(std[0]), com_m=std[1:4], inertia_kg_m2=np.full(6, np.max(np.abs(inertia))))
    payload = Payload.create(frame, mass_kg=float(x[0]), com_m=x[1:4], inertia_kg_m2=inertia, std=payload_std)
    phi_jacobian = _complex_step(lambda y: _phi_of(y, inertia), x[:4])
    viscous, coulomb = prior.drive.viscous.copy(), prior.drive.coulomb.copy()
    viscous_std, coulomb_std = np.full(n, np.nan), np.full(n, np.nan)
    f = moving.size
    viscous[moving], coulomb[moving] = x[4 : 4 + f], x[4 + f :]
    viscous_std[moving], coulomb_std[moving] = std[4 : 4 + f], std[4 + f :]
    return _payload_estimate(
        problem,
        weighted * problem.sigma,
        payload,
        (_phi_of(x[:4], inertia), phi_jacobian @ covariance[:4, :4] @ phi_jacobian.T),
        _DriveEstimate.without_efficiency(viscous, viscous_std, coulomb, coulomb_std),
        method="ml",
        noise_std=problem.noise_std.copy(),
        residual_std=residual_std,
        search=_SearchOutcome(int(solution.njev or 0), int(solution.nfev), bool(solution.status > 0)),
        inertia_fixed=True,
    )


def identify_payload(
    prior: RobotPrior,
    frame: str,
    time: np.ndarray,
    q: np.ndarray,
    currents: np.ndarray | None,
    *,
    period_s: float | None = None,
    harmonics: int = 5,
    method: Literal["linear", "ml"] = "ml",
    efficiency: bool = True,
    polynomial: np.ndarray | None = None,
    settings: SignalSettings | None = None,
    stick_periods: int | None = None,
    torque_delay_s: float = 0.0,
) -> PayloadEstimate:
    """Identify a payload from a recording with it (``dynid payload``, the estimator's re-identification).

    With ``period_s`` the recording is a periodic excitation of ``harmonics`` lines
    (:func:`periodic_observations`, noise from the periods, [Swevers2002] §4.3; only the stretch that repeats with
    the period, :attr:`PayloadEstimate.stretch`);
    without, any motion (:func:`recording_observations`, with ``stick_periods``). ``method`` chooses
    :func:`identify_payload_linear` or :func:`identify_payload_ml`. The torques are read ``torque_delay_s`` (s) late,
    the delay the robot's own identification aligned them with (``quality.torque_delay`` of its parameter file).

    Raises
    ------
    DataError
        No currents, bad shapes, too few periods or samples, no 2 periods that repeat with ``period_s``.
    ModelError
        Unknown frame.
    InsufficientExcitationError, RankDeficientError
        The motion does not determine the load.
    """
    robot, chain = prior.robot, prior.drive_chain
    if period_s is not None:
        observations = periodic_observations(
            robot,
            chain,
            time,
            q,
            currents,
            period_s=period_s,
            harmonics=harmonics,
            polynomial=polynomial,
            min_speed_rad_s=(settings or SignalSettings()).min_speed_rad_s,
            torque_delay_s=torque_delay_s,
        )
    else:
        observations = recording_observations(
            robot,
            chain,
            time,
            q,
            currents,
            settings=settings,
            polynomial=polynomial,
            stick_periods=stick_periods,
            torque_delay_s=torque_delay_s,
        )
    if method == "linear":
        estimate = identify_payload_linear(prior, frame, observations)
    elif method == "ml":
        estimate = identify_payload_ml(prior, frame, observations, efficiency=efficiency)
    else:
        raise ModelError(f"method must be 'linear' or 'ml', got {method!r}")
    return replace(estimate, stretch=observations.stretch, torque_delay_s=torque_delay_s)
