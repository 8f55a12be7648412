"""Offline IDIM identification: from recorded samples to base parameters with quality.

The procedure is seed 000 §IV.A:

1. clean the stamps (drop duplicates, refuse time going backwards, split at gaps)
   and resample each contiguous segment onto a uniform grid at the nominal rate;
2. band-pass derivative estimation: zero-phase low-pass of ``q`` and central
   differences for ``q̇``, ``q̈`` (or the measured velocities, filtered);
3. build the base-parameter observation matrix block by block and apply the
   parallel decimation to ``Y`` and every column of ``W`` (eq. (13)-(14)), so the
   full-rate matrix is never held in memory;
4. remove parameters the data does not excite (numerical rank, seed 004
   Algorithm 1 line 1), estimate by OLS or per-joint WLS (eq. (15)-(20)) and,
   optionally, keep the essential parameters (seed 000 §V.B, ``r_σ``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pinocchio as pin
import scipy.ndimage

from dynamic_identification.core.errors import DataError, InsufficientExcitationError
from dynamic_identification.core.estimation import (
    LeastSquaresResult,
    NormalEquations,
    essential_parameters,
    joint_error_std,
    ordinary_least_squares,
    rank_deficient_columns,
    reduce_parameters,
    weighted_least_squares,
)
from dynamic_identification.core.model import DriveChain, DriveTerms, RobotModel, standard_parameter_names
from dynamic_identification.core.regressors import BaseParameters, observation_matrix
from dynamic_identification.core.signal import (
    ParallelDecimator,
    clean_time_stamps,
    default_decimation,
    differentiate,
    lowpass_zero_phase,
    resample_uniform,
)


@dataclass(frozen=True)
class SignalSettings:
    """Signal-processing choices (seed 000 §IV.A).

    Attributes
    ----------
    position_cutoff_hz
        Cut-off of the zero-phase Butterworth low-pass applied to positions before
        differentiation, Hz. It must lie well above the motion's bandwidth (a few
        Hz for excitation and process trajectories) and below the encoder and
        torque noise; ``None`` skips the filter.
    decimation
        Parallel-decimation factor ``n_d``; 0 chooses
        :func:`~dynamic_identification.core.signal.default_decimation`.
    rate_hz
        Uniform resampling rate, Hz; ``None`` uses the recording's median rate.
    use_measured_velocity
        Use the recorded velocities (filtered like positions) instead of
        differentiating positions.
    gap_factor
        A stamp gap larger than this many nominal periods splits the recording.
    min_speed_rad_s
        Equations of a joint whose motor speed drops below this (rad/s, joint side)
        within the decimation filter's support are left out when the
        model has Coulomb friction: near a velocity reversal the joint sticks and
        ``Fc sign(q̇)`` does not describe its friction. 0 keeps every equation.
    """

    position_cutoff_hz: float | None = 20.0
    decimation: int = 0
    rate_hz: float | None = None
    use_measured_velocity: bool = False
    gap_factor: float = 5.0
    min_speed_rad_s: float = 0.05


@dataclass(frozen=True)
class IdentificationSettings:
    """How to estimate: method, model reduction and data requirements."""

    signal: SignalSettings = field(default_factory=SignalSettings)
    method: Literal["ols", "wls"] = "wls"
    reduction: Literal["sensitivity", "essential", "none"] = "none"
    r_sigma: float = 20.0
    e_tol: float = 0.05
    friction_motion_rad: float = 0.1
    min_samples: int = 200
    min_motion_rad: float = 0.01
    block_samples: int = 10_000


@dataclass(frozen=True)
class Motion:
    """Uniformly sampled, filtered motion of one contiguous segment."""

    time: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    torques: np.ndarray | None
    rate_hz: float


@dataclass(frozen=True)
class PreparedObservations:
    """Decimated base observation matrix ``(r, n, b)``, torques ``(r, n)``, the equations to use, provenance."""

    observation_matrix: np.ndarray
    torques: np.ndarray
    valid: np.ndarray
    input_samples: int
    duplicates_dropped: int
    segments: int
    rate_hz: float
    decimation: int


@dataclass(frozen=True)
class IdentificationResult:
    """Identified base parameters and the quality of the estimate.

    ``names``/``expressions`` list the kept base parameters in the order of
    ``estimate.parameters``; ``removed`` maps each dropped base parameter to why.
    """

    base: BaseParameters
    names: tuple[str, ...]
    expressions: tuple[str, ...]
    estimate: LeastSquaresResult
    removed: tuple[tuple[str, str], ...]
    observations: PreparedObservations

    @property
    def values(self) -> dict[str, float]:
        return dict(zip(self.names, self.estimate.parameters.tolist(), strict=True))


def estimate_motion(
    time: np.ndarray,
    q: np.ndarray,
    settings: SignalSettings,
    *,
    torques: np.ndarray | None = None,
    dq_measured: np.ndarray | None = None,
) -> tuple[list[Motion], int]:
    """Clean stamps, resample and differentiate; one :class:`Motion` per segment.

    Returns the motions and the number of duplicate stamps dropped.
    """
    report = clean_time_stamps(np.asarray(time, dtype=float), gap_factor=settings.gap_factor)
    rate = settings.rate_hz if settings.rate_hz else 1.0 / report.nominal_dt
    if settings.position_cutoff_hz is not None and settings.position_cutoff_hz >= 0.5 * rate:
        raise DataError(
            f"position_cutoff_hz={settings.position_cutoff_hz} must be below the Nyquist frequency {0.5 * rate:.6g} Hz"
        )
    # Stamps relative to the first one keep full resolution for epoch-based clocks (~1.7e9 s).
    origin = float(np.asarray(time, dtype=float)[0])
    kept_time = np.asarray(time, dtype=float)[report.keep] - origin
    kept_q = np.asarray(q, dtype=float)[report.keep]
    motions = []
    for start, stop in report.segments:
        if stop - start < 16:
            continue
        t = kept_time[start:stop]
        grid, q_uniform = resample_uniform(t, kept_q[start:stop], rate, kind="cubic")
        edge = _edge_samples(rate, settings.position_cutoff_hz)
        if grid.shape[0] < 2 * edge + 16:
            continue
        q_filtered, dq, ddq = differentiate(q_uniform, rate_hz=rate, cutoff_hz=settings.position_cutoff_hz)
        if settings.use_measured_velocity and dq_measured is not None:
            _, dq_uniform = resample_uniform(t, np.asarray(dq_measured, dtype=float)[report.keep][start:stop], rate)
            dq = (
                lowpass_zero_phase(dq_uniform, cutoff_hz=settings.position_cutoff_hz, rate_hz=rate)
                if settings.position_cutoff_hz is not None
                else dq_uniform
            )
            ddq = np.gradient(dq, 1.0 / rate, axis=0, edge_order=2)
        tau = None
        if torques is not None:
            _, tau = resample_uniform(t, np.asarray(torques, dtype=float)[report.keep][start:stop], rate, kind="linear")
        inner = slice(edge, grid.shape[0] - edge)
        motions.append(
            Motion(
                time=grid[inner] + origin,
                q=q_filtered[inner],
                dq=dq[inner],
                ddq=ddq[inner],
                torques=None if tau is None else tau[inner],
                rate_hz=rate,
            )
        )
    if not motions:
        raise DataError(
            f"no contiguous segment long enough to differentiate in {len(kept_time)} samples"
            f" (each needs {2 * _edge_samples(rate, settings.position_cutoff_hz) + 16} samples at {rate:.6g} Hz)"
        )
    return motions, report.duplicates_dropped


def _edge_samples(rate_hz: float, cutoff_hz: float | None) -> int:
    """Samples dropped at each end of a segment, where the zero-phase filter's transient spoils derivatives."""
    return int(np.ceil(4.0 * rate_hz / cutoff_hz)) if cutoff_hz else 1


@dataclass(frozen=True)
class DecimatedRows:
    """Decimated rows of the base IDIM: ``W`` ``(r, n, b)``, ``Y`` ``(r, n)``, valid equations, grid indices."""

    observation_matrix: np.ndarray
    torques: np.ndarray
    valid: np.ndarray
    index: np.ndarray


@dataclass(frozen=True)
class RowBuilder:
    """Builds decimated base-IDIM rows from filtered motion on a uniform grid (seed 000 eq. (13)-(14)).

    Works on blocks that carry :attr:`reach` samples of support on each side of
    the outputs they produce, so consecutive blocks give exactly the rows of the
    whole signal: used by the offline pipeline and by the sliding window alike.
    Equations within ``stick_reach`` samples of a motor slower than
    ``min_speed_rad_s`` are marked invalid (:func:`slow_equations`).
    """

    robot: RobotModel
    drive_chain: DriveChain
    terms: DriveTerms
    base: BaseParameters
    decimator: ParallelDecimator
    min_speed_rad_s: float
    stick_reach: int
    gather: np.ndarray
    data: pin.Data

    @classmethod
    def create(
        cls,
        robot: RobotModel,
        drive_chain: DriveChain,
        terms: DriveTerms,
        base: BaseParameters,
        *,
        decimation: int,
        min_speed_rad_s: float,
        stick_periods: int | None = None,
    ) -> RowBuilder:
        """``stick_periods``: decimation periods masked on each side of a slow sample; ``None``
        masks the filter's whole support (:attr:`reach`), so no stick sample reaches an equation."""
        rows = np.arange(robot.n_joints)[:, None] * len(base.standard_names)
        decimator = ParallelDecimator.create(decimation)
        reach = decimator.half_length
        return cls(
            robot=robot,
            drive_chain=drive_chain,
            terms=terms,
            base=base,
            decimator=decimator,
            min_speed_rad_s=min_speed_rad_s if terms.coulomb_friction else 0.0,
            stick_reach=reach if stick_periods is None else min(reach, stick_periods * decimator.factor),
            gather=(rows + base.independent[None, :])[base.structure],
            data=robot.model.createData(),
        )

    @property
    def reach(self) -> int:
        """Samples of support needed on each side of an output sample."""
        return self.decimator.half_length

    def rows(
        self,
        q: np.ndarray,
        dq: np.ndarray,
        ddq: np.ndarray,
        torques: np.ndarray,
        *,
        start: int,
        outputs: tuple[int, int],
    ) -> DecimatedRows:
        """Rows at grid indices in ``[outputs[0], outputs[1])`` (multiples of the factor) whose
        filter support lies in this block, which covers grid indices ``[start, start + len(q))``."""
        full = observation_matrix(self.robot, self.drive_chain, self.terms, q, dq, ddq, data=self.data)
        packed, index = self.decimator.decimate(full.reshape(full.shape[0], -1)[:, self.gather], start=start)
        y_out, _ = self.decimator.decimate(np.asarray(torques, dtype=float), start=start)
        inside = (index >= outputs[0]) & (index < outputs[1])
        w_out = np.zeros((int(inside.sum()), self.robot.n_joints, self.base.count))
        w_out[:, self.base.structure] = packed[inside]
        slow = slow_equations(self.drive_chain, dq, min_speed_rad_s=self.min_speed_rad_s, reach=self.stick_reach)
        return DecimatedRows(
            observation_matrix=w_out, torques=y_out[inside], valid=~slow[index[inside] - start], index=index[inside]
        )

    def sampled_rows(
        self,
        q: np.ndarray,
        dq: np.ndarray,
        ddq: np.ndarray,
        torques: np.ndarray,
        *,
        start: int,
        outputs: tuple[int, int],
    ) -> DecimatedRows:
        """Like :meth:`rows`, with ``W`` evaluated on the filtered motion at the decimated instants.

        The torques are still low-passed and decimated; ``W`` is not. For motion
        band-limited by the position filter (cut-off below the decimation filter's
        passband) the two agree to the passband ripple, while the regressor runs on
        one sample in ``factor``: the streaming estimator's fast path. Equations
        near velocity reversals, where ``sign(q̇)`` is not band-limited, are masked
        as in :meth:`rows`.
        """
        y_out, index = self.decimator.decimate(np.asarray(torques, dtype=float), start=start)
        inside = (index >= outputs[0]) & (index < outputs[1])
        local = index[inside] - start
        full = observation_matrix(
            self.robot, self.drive_chain, self.terms, q[local], dq[local], ddq[local], data=self.data
        )
        w_out = np.zeros((local.size, self.robot.n_joints, self.base.count))
        w_out[:, self.base.structure] = full.reshape(local.size, -1)[:, self.gather]
        slow = slow_equations(self.drive_chain, dq, min_speed_rad_s=self.min_speed_rad_s, reach=self.stick_reach)
        return DecimatedRows(observation_matrix=w_out, torques=y_out[inside], valid=~slow[local], index=index[inside])


def prepare_observations(
    robot: RobotModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    base: BaseParameters,
    time: np.ndarray,
    q: np.ndarray,
    torques: np.ndarray,
    *,
    dq_measured: np.ndarray | None = None,
    settings: IdentificationSettings | None = None,
) -> PreparedObservations:
    """Decimated base observation matrix and torques (seed 000 eq. (13)-(14)).

    ``W`` is built in blocks of ``settings.block_samples`` with the decimation
    filter's support on both sides, so the result equals decimating the whole
    full-rate matrix while memory stays bounded; only the entries that are not
    structural zeros (:attr:`BaseParameters.structure`) are filtered.
    """
    settings = settings or IdentificationSettings()
    motions, duplicates = estimate_motion(time, q, settings.signal, torques=torques, dq_measured=dq_measured)
    rate = motions[0].rate_hz
    cutoff = settings.signal.position_cutoff_hz or 0.25 * rate
    factor = settings.signal.decimation or default_decimation(rate, position_cutoff_hz=cutoff)
    builder = RowBuilder.create(
        robot,
        drive_chain,
        terms,
        base,
        decimation=factor,
        min_speed_rad_s=settings.signal.min_speed_rad_s,
    )
    matrices, targets, masks = [], [], []
    step = max(settings.block_samples - settings.block_samples % factor, factor)
    for motion in motions:
        length = motion.time.shape[0]
        for first_output in range(0, length, step):
            start = max(first_output - builder.reach, 0)
            block = slice(start, min(first_output + step + builder.reach, length))
            rows = builder.rows(
                motion.q[block],
                motion.dq[block],
                motion.ddq[block],
                motion.torques[block],
                start=start,
                outputs=(first_output, first_output + step),
            )
            matrices.append(rows.observation_matrix)
            targets.append(rows.torques)
            masks.append(rows.valid)
    matrix = np.concatenate(matrices) if matrices else np.empty((0, robot.n_joints, base.count))
    torque = np.concatenate(targets) if targets else np.empty((0, robot.n_joints))
    valid = np.concatenate(masks) if masks else np.empty((0, robot.n_joints), dtype=bool)
    return PreparedObservations(
        observation_matrix=matrix,
        torques=torque,
        valid=valid,
        input_samples=int(np.shape(time)[0]),
        duplicates_dropped=duplicates,
        segments=len(motions),
        rate_hz=rate,
        decimation=factor,
    )


def slow_equations(drive_chain: DriveChain, dq: np.ndarray, *, min_speed_rad_s: float, reach: int) -> np.ndarray:
    """``(N, n)``: whether joint ``j``'s equation sees a motor slower than ``min_speed_rad_s`` within ``±reach``.

    Motor ``m`` (speed ``|C[m] · q̇|``) acts on the equations of the joints it is
    coupled to (``C[m, j] ≠ 0``), so its stick phases spoil those equations only. A
    joint at rest is flagged too: its static friction is anywhere within ``±Fc``,
    which no ``Fc sign(q̇)`` model predicts, so its torque cannot be explained there.
    """
    samples, n = np.shape(dq)
    if min_speed_rad_s <= 0.0:
        return np.zeros((samples, n), dtype=bool)
    coupling = drive_chain.coupling
    slow_motor = np.abs(np.asarray(dq) @ coupling.T) < min_speed_rad_s
    slow = (slow_motor.astype(np.uint8) @ (coupling != 0.0).astype(np.uint8)) > 0
    return scipy.ndimage.maximum_filter1d(slow, size=2 * reach + 1, axis=0, mode="nearest")


def check_motion(q: np.ndarray, joint_names: tuple[str, ...], *, min_motion_rad: float) -> None:
    """Refuse a recording in which no joint moved more than ``min_motion_rad``."""
    travel = np.ptp(np.asarray(q, dtype=float), axis=0)
    if travel.max(initial=0.0) < min_motion_rad:
        worst = joint_names[int(np.argmax(travel))] if travel.size else "none"
        raise InsufficientExcitationError(
            f"the robot is standing still: the largest joint travel is {travel.max(initial=0.0):.3g} rad"
            f" ({worst}), below min_motion_rad={min_motion_rad}"
        )


def identify(
    robot: RobotModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    base: BaseParameters,
    time: np.ndarray,
    q: np.ndarray,
    torques: np.ndarray,
    *,
    dq_measured: np.ndarray | None = None,
    settings: IdentificationSettings | None = None,
) -> IdentificationResult:
    """Identify the base parameters from a recording in model joint order.

    Raises
    ------
    DataError
        Bad stamps, NaN, too few samples after decimation.
    InsufficientExcitationError
        The robot stood still.
    """
    settings = settings or IdentificationSettings()
    n_samples = int(np.shape(time)[0])
    if n_samples < settings.min_samples:
        raise DataError(f"too few samples: {n_samples} < min_samples={settings.min_samples}")
    for name, array in (("position", q), ("torque", torques)):
        bad = ~np.isfinite(np.asarray(array, dtype=float))
        if bad.any():
            row, column = (int(i) for i in np.argwhere(bad)[0])
            raise DataError(f"{name} of joint {robot.joint_names[column]} is not finite at sample {row}")
    q = robot.unwrap_positions(q)
    check_motion(q, robot.joint_names, min_motion_rad=settings.min_motion_rad)
    observations = prepare_observations(
        robot, drive_chain, terms, base, time, q, torques, dq_measured=dq_measured, settings=settings
    )
    matrix, target, valid = observations.observation_matrix, observations.torques, observations.valid
    if valid.sum() <= base.count:
        raise DataError(
            f"too few samples after decimation by {observations.decimation}: {int(valid.sum())} usable equations"
            f" ({matrix.shape[0]} samples × {robot.n_joints} joints) for {base.count} base parameters"
        )
    unexcited = rank_deficient_columns(matrix, valid=valid)
    kept = np.setdiff1d(np.arange(base.count), unexcited)
    removed = [(base.names[i], "not excited by this data") for i in unexcited]
    names = tuple(base.names[i] for i in kept)
    matrix = matrix[..., kept]
    if settings.method == "ols":
        estimate = ordinary_least_squares(matrix, target, parameter_names=names, valid=valid)
        joint_std = np.ones(robot.n_joints)
    else:
        joint_std = joint_error_std(matrix, target, valid=valid)
        estimate = weighted_least_squares(matrix, target, joint_std=joint_std, parameter_names=names, valid=valid)
    if settings.reduction == "essential":
        essential = essential_parameters(
            matrix,
            target,
            r_sigma=settings.r_sigma,
            joint_std=joint_std,
            parameter_names=names,
            valid=valid,
        )
        removed += [(names[i], f"not essential (r_sigma={settings.r_sigma:g})") for i in essential.removed]
        kept = kept[essential.kept]
        names = tuple(base.names[i] for i in kept)
        estimate = essential.result
    elif settings.reduction == "sensitivity":
        # Seed 004 Algorithm 1 on the normal equations; friction stays when every joint moves enough.
        travel = np.ptp(q, axis=0)
        friction = [i for i, name in enumerate(names) if name.startswith(("Fv", "Fc"))]
        reduction = reduce_parameters(
            NormalEquations.from_rows(matrix, target, valid),
            joint_std,
            method="sensitivity",
            e_tol=settings.e_tol,
            forced=friction if np.all(travel >= settings.friction_motion_rad) else (),
            names=names,
        )
        removed += [(names[i], why) for i, why in reduction.removed]
        kept = kept[reduction.kept]
        names = tuple(base.names[i] for i in kept)
        estimate = weighted_least_squares(
            matrix[..., reduction.kept], target, joint_std=joint_std, parameter_names=names, valid=valid
        )
    return IdentificationResult(
        base=base,
        names=names,
        expressions=tuple(base.expressions[i] for i in kept),
        estimate=estimate,
        removed=tuple(removed),
        observations=observations,
    )


def predict_torques(
    robot: RobotModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    parameters: dict[str, float],
    q: np.ndarray,
    dq: np.ndarray,
    ddq: np.ndarray,
) -> np.ndarray:
    """Joint torques (N·m, ``(N, n)``) of a model given by base-parameter values.

    A base parameter is named after its independent standard column, so the
    prediction is ``W_st[:, names] @ values`` (seed 000 eq. (4)).
    """
    names = standard_parameter_names(robot.n_joints, terms)
    position = {name: i for i, name in enumerate(names)}
    unknown = [name for name in parameters if name not in position]
    if unknown:
        raise DataError(f"parameters {unknown} are not standard parameters of this model")
    columns = np.array([position[name] for name in parameters], dtype=int)
    values = np.array(list(parameters.values()), dtype=float)
    return observation_matrix(robot, drive_chain, terms, q, dq, ddq)[..., columns] @ values
