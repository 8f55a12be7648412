"""Inverse dynamic identification model (IDIM) and base parameters.

The IDIM ([Gautier2013] eq. (2), (6)) writes the joint torques linearly in the
standard parameters, ``τ = IDM_st(q, q̇, q̈) χ_st``. The inertial columns come from
``pinocchio.computeJointTorqueRegressor``; the drive-chain columns (rotor inertia,
viscous and Coulomb friction, offset) follow the motor-side model of
:mod:`dynamic_identification.core.mechanism.robot`.

Base parameters ([Gautier2013] eq. (4), ref. [11], Gautier 1991) are found
numerically: a QR factorisation of the observation matrix of random samples tells
which standard columns are linear combinations of earlier ones; those parameters
are regrouped into the independent ones, ``χ = χ_1 + β χ_2``, and every base
parameter keeps a readable expression such as ``XX3 - YY3`` or ``ZZ1 + Ia1``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
import scipy.linalg

from dynamic_identification.core.checks import motion_samples
from dynamic_identification.core.errors import ModelError
from dynamic_identification.core.mechanism.robot import (
    DriveChain,
    DriveTerms,
    RobotModel,
    standard_parameter_names,
)

_PREFERENCE = ("XX", "XY", "XZ", "YZ", "ZZ", "MX", "MY", "MZ", "M", "YY", "Ia", "Fv", "Fc", "off")
"""Order in which columns of one joint are offered to the QR: earlier names stay
independent, so regrouping reads as in Khalil & Dombre (``M``, ``MZ``, ``YY`` of a
link regrouped into the links before it)."""

_PARAMETER_NAME = re.compile(r"([A-Za-z]+)(\d+)")
"""A standard-parameter name: its kind (one of :data:`_PREFERENCE`) and its 1-based joint index."""


def inertial_observation_matrix(
    robot: RobotModel, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, *, data: pin.Data | None = None
) -> np.ndarray:
    """Rigid-body part of the IDIM: ``(N, n, 10 n)`` from ``computeJointTorqueRegressor``.

    One Pinocchio ``Data`` is reused for all samples (pass ``data`` to reuse it
    across calls).
    """
    q, dq, ddq = motion_samples(q, dq, ddq, robot.n_joints)
    n = robot.n_joints
    out = np.empty((q.shape[0], n, n, 10))
    _fill_inertial_columns(robot, q, dq, ddq, data if data is not None else robot.model.createData(), out)
    return out.reshape(q.shape[0], n, 10 * n)


def _fill_inertial_columns(
    robot: RobotModel, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, data: pin.Data, out: np.ndarray
) -> None:
    """Write ``computeJointTorqueRegressor`` into ``out[k, joint, body, 10]`` (a view may be passed)."""
    model = robot.model
    n = robot.n_joints
    regressor = pin.computeJointTorqueRegressor
    for k, (configuration, velocity, acceleration) in enumerate(zip(robot.configurations(q), dq, ddq, strict=True)):
        out[k] = regressor(model, data, configuration, velocity, acceleration).reshape(n, n, 10)


def drive_observation_matrix(drive_chain: DriveChain, terms: DriveTerms, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
    """Drive-chain part of the IDIM: ``(N, n, n · len(terms.names))``.

    Motor ``m`` adds ``C[m]ᵀ f_m`` to the joint torques, with ``v_m = C[m] · q̇`` and
    ``f_m = Ia_m C[m]·q̈ + Fv_m v_m + Fc_m sign(v_m) + off_m`` ([Gautier2013] eq. (9), (26)).
    Columns are grouped by motor, then by term in ``terms.names`` order.
    """
    samples, n = np.shape(dq)[0], drive_chain.n_joints
    out = np.zeros((samples, n, n, len(terms.names)))
    _fill_drive_columns(drive_chain, terms, dq, ddq, out)
    return out.reshape(samples, n, n * len(terms.names))


def _fill_drive_columns(
    drive_chain: DriveChain, terms: DriveTerms, dq: np.ndarray, ddq: np.ndarray, out: np.ndarray
) -> None:
    """Write the drive-chain columns into ``out[k, joint, motor, term]``, which must hold zeros.

    ``out`` may be a view into a larger observation matrix.
    """
    if not terms.names:
        return
    coupling = drive_chain.coupling
    velocity = np.asarray(dq, dtype=float) @ coupling.T
    signals = {
        "Ia": lambda: np.asarray(ddq, dtype=float) @ coupling.T,
        "Fv": lambda: velocity,
        "Fc": lambda: np.sign(velocity),
        "off": lambda: np.ones_like(velocity),
    }
    motor_signals = np.stack([signals[name]() for name in terms.names], axis=-1)
    if drive_chain.uncoupled:
        diagonal = np.arange(drive_chain.n_joints)
        out[:, diagonal, diagonal, :] = motor_signals
    else:
        out[...] = motor_signals[:, None, :, :] * coupling.T[None, :, :, None]


def observation_matrix(
    robot: RobotModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    q: np.ndarray,
    dq: np.ndarray,
    ddq: np.ndarray,
    *,
    data: pin.Data | None = None,
) -> np.ndarray:
    """IDIM observation matrix in the standard parameters, shape ``(N, n, n · terms.per_joint)``.

    ``observation_matrix(...) @ standard_parameters(...)`` equals
    ``pinocchio.rnea`` plus the drive-chain torques ([Gautier2013] eq. (2)). Columns
    follow :func:`~dynamic_identification.core.mechanism.robot.standard_parameter_names`.
    """
    if drive_chain.n_joints != robot.n_joints:
        raise ModelError(f"drive chain has {drive_chain.n_joints} joints, robot has {robot.n_joints}")
    q, dq, ddq = motion_samples(q, dq, ddq, robot.n_joints)
    n = robot.n_joints
    samples = q.shape[0]
    out = np.zeros((samples, n, n * terms.per_joint))
    blocks = out.reshape(samples, n, n, terms.per_joint)
    _fill_inertial_columns(robot, q, dq, ddq, data if data is not None else robot.model.createData(), blocks[..., :10])
    _fill_drive_columns(drive_chain, terms, dq, ddq, blocks[..., 10:])
    return out


@dataclass(frozen=True)
class BaseParameters:
    """Base parameters and how they regroup the standard parameters.

    Attributes
    ----------
    standard_names
        Names of all standard parameters (columns of the standard IDIM).
    independent
        Indices of the standard columns kept as base columns, shape ``(b,)``.
    regrouping
        ``K`` of shape ``(b, p)`` with ``χ_base = K χ_st`` (identity on the
        independent columns plus the regrouping coefficients ``β``).
    names
        Base-parameter names: the names of their independent columns.
    expressions
        Readable regrouping of each base parameter, e.g. ``"XX2 - YY2 + 0.18 M3"``.
    structure
        ``(n, b)``: whether base parameter ``i`` can appear in joint ``j``'s
        equation at all (False for the zeros of the block-triangular IDIM, seed
        000 eq. (5)); lets long recordings skip work on structural zeros.
    """

    standard_names: tuple[str, ...]
    independent: np.ndarray
    regrouping: np.ndarray
    names: tuple[str, ...]
    expressions: tuple[str, ...]
    structure: np.ndarray

    @property
    def count(self) -> int:
        return int(self.independent.shape[0])

    def from_standard(self, standard: np.ndarray) -> np.ndarray:
        """Base-parameter values of a standard-parameter vector."""
        return self.regrouping @ np.asarray(standard, dtype=float)

    def select(self, standard_observation_matrix: np.ndarray) -> np.ndarray:
        """Base observation matrix: the independent columns of a standard one."""
        return standard_observation_matrix[..., self.independent]

    def subset(self, names: tuple[str, ...] | list[str]) -> np.ndarray:
        """Indices (into these base parameters) of the given base-parameter names."""
        position = {name: i for i, name in enumerate(self.names)}
        unknown = [name for name in names if name not in position]
        if unknown:
            raise ModelError(f"{unknown} are not base parameters of this model")
        return np.array([position[name] for name in names], dtype=int)


def random_motion(
    robot: RobotModel, samples: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random positions within the joint limits (±π where unbounded), velocities and accelerations."""
    lower, upper = robot.sampling_position_range()
    q = rng.uniform(lower, upper, size=(samples, robot.n_joints))
    dq = rng.uniform(-2.0, 2.0, size=(samples, robot.n_joints))
    ddq = rng.uniform(-5.0, 5.0, size=(samples, robot.n_joints))
    return q, dq, ddq


def base_parameters(
    robot: RobotModel,
    drive_chain: DriveChain,
    terms: DriveTerms,
    *,
    samples: int = 200,
    seed: int = 0,
    tolerance: float = 1e-8,
) -> BaseParameters:
    """Numerical base parameters of the IDIM ([Gautier2013] ref. [11]).

    The standard observation matrix of ``samples`` random states is column-scaled
    and factorised by QR in a preferred column order (joint by joint,
    :data:`_PREFERENCE` within a joint). A column whose diagonal entry of ``R`` is
    below ``tolerance`` (relative to the largest) lies in the span of the columns
    before it and is regrouped into them: solving ``W_2 = W_1 β`` gives
    ``χ_base = χ_1 + β χ_2``. The count is cross-checked against the numerical
    rank from QR with column pivoting.
    """
    rng = np.random.default_rng(seed)
    names = standard_parameter_names(robot.n_joints, terms)
    q, dq, ddq = random_motion(robot, samples, rng)
    sampled = observation_matrix(robot, drive_chain, terms, q, dq, ddq)
    return base_parameters_from_samples(sampled, names, tolerance=tolerance)


def base_parameters_from_samples(
    sampled: np.ndarray, names: tuple[str, ...], *, tolerance: float = 1e-8
) -> BaseParameters:
    """Base parameters of a sampled standard observation matrix ``(N, n, p)`` ([Gautier2013] ref. [11]).

    The QR and regrouping step of :func:`base_parameters`, for any model whose
    standard parameters are named like :func:`standard_parameter_names` (a kind
    from :data:`_PREFERENCE` followed by a 1-based joint index, e.g. ``"ZZ3"``,
    ``"Fc1"``), such as the closed-loop models of
    :mod:`dynamic_identification.core.mechanism.closed_loop`. Columns are offered to the
    QR joint by joint, :data:`_PREFERENCE` within a joint.
    """
    if sampled.ndim != 3 or sampled.shape[2] != len(names):
        raise ModelError(f"sampled must have shape (N, n, {len(names)}), got {sampled.shape}")
    stacked = sampled.reshape(-1, len(names))
    norms = np.linalg.norm(stacked, axis=0)
    structurally_zero = norms <= 1e-9 * norms.max()
    scale = np.where(structurally_zero, 1.0, norms)
    normalised = np.where(structurally_zero, 0.0, stacked / scale)
    order = _preference_order_of(names)
    _, r_factor = scipy.linalg.qr(normalised[:, order], mode="economic")
    diagonal = np.abs(np.diag(r_factor))
    independent_in_order = diagonal > tolerance * max(diagonal.max(), 1.0)
    independent = np.sort(order[independent_in_order])
    dependent = np.setdiff1d(np.arange(len(names)), independent)
    _, pivoted_r, _ = scipy.linalg.qr(normalised, mode="economic", pivoting=True)
    pivoted_diagonal = np.abs(np.diag(pivoted_r))
    rank = int(np.sum(pivoted_diagonal > tolerance * pivoted_diagonal[0]))
    if rank != independent.size:
        raise ModelError(
            f"base-parameter rank is ambiguous: ordered QR finds {independent.size}, pivoted QR {rank};"
            " try another tolerance"
        )
    beta_scaled, *_ = np.linalg.lstsq(normalised[:, independent], normalised[:, dependent], rcond=None)
    beta = beta_scaled * scale[independent][:, None] ** -1 * scale[dependent][None, :]
    beta[np.abs(beta) < 1e-10 * max(1.0, np.abs(beta).max(initial=0.0))] = 0.0
    regrouping = np.zeros((independent.size, len(names)))
    regrouping[np.arange(independent.size), independent] = 1.0
    regrouping[:, dependent] = beta
    base_names = tuple(names[i] for i in independent)
    expressions = tuple(_expression(row, names) for row in regrouping)
    structure = np.any(sampled[..., independent] != 0.0, axis=0)
    for array in (independent, regrouping, structure):
        array.setflags(write=False)
    return BaseParameters(
        standard_names=names,
        independent=independent,
        regrouping=regrouping,
        names=base_names,
        expressions=expressions,
        structure=structure,
    )


def _preference_order_of(names: tuple[str, ...]) -> np.ndarray:
    """Column order joint by joint (the trailing index), :data:`_PREFERENCE` within a joint."""
    keys = []
    for column, name in enumerate(names):
        match = _PARAMETER_NAME.fullmatch(name)
        if match is None or match.group(1) not in _PREFERENCE:
            raise ModelError(f"standard parameter name {name!r} is not a kind of {_PREFERENCE} and a joint index")
        keys.append((int(match.group(2)), _PREFERENCE.index(match.group(1)), column))
    return np.array([column for *_, column in sorted(keys)], dtype=int)


def _expression(row: np.ndarray, names: tuple[str, ...], digits: int = 4) -> str:
    terms = []
    for index in np.flatnonzero(row):
        coefficient = float(row[index])
        # Rounded to 12 digits first: a coefficient on a rounding boundary of the display (0.050625) then reads the
        # same whatever the last bits the linear algebra's kernel left on it.
        magnitude = float(f"{abs(coefficient):.12g}")
        text = names[index] if np.isclose(magnitude, 1.0, rtol=1e-9) else f"{magnitude:.{digits}g} {names[index]}"
        sign = "-" if coefficient < 0 else "+"
        terms.append((sign, text))
    if not terms:
        return "0"
    first_sign, first_text = terms[0]
    head = f"-{first_text}" if first_sign == "-" else first_text
    return " ".join([head] + [f"{sign} {text}" for sign, text in terms[1:]])
