"""Physical consistency of standard parameters and the physically consistent WLS estimate.

Pseudo-inertia ([Wensing2018])
------------------------------
The ten inertial parameters of a link in Pinocchio order
``φ = [m, h_x, h_y, h_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]`` (mass in kg, first
moment ``h = m c`` in kg·m, rotational inertia ``I`` in kg·m² about the joint frame
origin, in joint-frame axes) are those of a mass distribution with non-negative
density if and only if the 4×4 pseudo-inertia matrix

``J(φ) = [[Σ, h], [hᵀ, m]]``,  ``Σ = ½ tr(I) 1₃ − I``  (the second moment ``∫ρ r rᵀ``)

is positive semi-definite (Wensing, Kim & Slotine, *Linear Matrix Inequalities for
Physically Consistent Inertial Parameter Identification: A Statistical Perspective
on the Mass Distribution*, IEEE RA-L 3(1), 2018, Theorem 1). ``J`` is linear in
``φ``, so ``J ⪰ 0`` is a linear matrix inequality. It implies ``m ≥ 0``, ``I`` about
the centre of mass positive semi-definite and the triangle inequalities of its
principal moments. The drive-chain terms must dissipate and store energy the right
way round: rotor inertia ``Ia ≥ 0``, viscous ``Fv ≥ 0`` and Coulomb ``Fc ≥ 0``
friction; the offset is free.

Consistent estimate
-------------------
The data enter through the weighted normal equations of the base parameters
([Gautier2013] eq. (15)-(20)): for the kept base columns ``A = Wᵀ Σ⁻¹ W``, the
unconstrained WLS estimate ``χ̂_b`` and ``σ̂²`` (eq. (17)). For any ``θ``,
``‖Y − Wθ‖²_Σ = ‖Y − Wχ̂_b‖²_Σ + (θ − χ̂_b)ᵀ A (θ − χ̂_b)``, so minimising the weighted
residual over standard parameters ``χ_st`` is minimising

``‖R (K_kept χ_st − χ̂_b)‖² / σ̂²``  with ``RᵀR = A``

— the squared Mahalanobis distance between the base values of ``χ_st`` and the
unconstrained estimate under its covariance ``σ̂² A⁻¹`` (eq. (18)). The cost does not
depend on the number of samples (``σ̂`` is floored at 1e-6 of the weighted RMS torque
so that noise-free data keep a finite metric). It is minimised subject to the scaled
``J̃_i ⪰ ε_i 1`` per link (below) and the drive-term signs, with cvxpy and the
Clarabel interior-point solver. The cvxpy problem is compiled once per number of
kept parameters and re-solved with new data as parameters (DPP), which is what makes
repeated solves cheap; Clarabel itself has no warm start. It is solved in a folded but
equal form (:meth:`ConsistentEstimator._folded`: the null-space pull written as a pull of
every direction, the fitted ones' share folded into the fit), whose conic form needs ``k``
auxiliary variables instead of ``p``: half of Clarabel's time (22 → 10 ms a solve on the
shipped arm's sliding window, load 6 on 2 cores).

``χ_st`` has ``p − b`` directions that no data determine (the null space of
``K_kept``): every point along them fits the data equally.

Prior ([Lee2020])
-----------------
Among them the estimate is the one nearest to the URDF's inertias in the geometry of
pseudo-inertias (T. Lee, P. M. Wensing, F. C. Park, *Geometric Robot Dynamic
Identification: A Convex Programming Approach*, IEEE T-RO 2020): the objective adds

``γ Σᵢ d(J̃ᵢ ‖ J̃₀ᵢ)``,  ``d(J ‖ J₀) = tr(J₀⁻¹ J) − log det(J₀⁻¹ J) − 4``,

the log-det (Bregman) divergence of each link's scaled pseudo-inertia ``J̃ᵢ`` (less its
attached parts) from the URDF's ``J̃₀ᵢ``. It is convex in ``χ_st``, zero at the URDF,
invariant to the units and to the frame of the link, and infinite as ``J̃ᵢ`` becomes
singular, so it keeps every link a physical body of the URDF's size and shape. Along the
identified directions the fit dominates: ``γ``
(:data:`DEFAULT_PRIOR_WEIGHT` = 0.3, ``estimation.prior_weight``) is in units of the fit's
squared Mahalanobis distance (σ of [Gautier2013] eq. (18)), i.e. the URDF counts as 0.3
observations of each link, and the shift it causes in a direction the data determine with
relative σ ``s`` is about ``γ s²`` of the distance between data and URDF: at most
``Δ sqrt(γ)/2`` σ for a relative disagreement ``Δ``, 0.14 σ where the URDF is 50 % off. Where
the unconstrained estimate is not consistent, the best consistent fit is a degenerate body
(a pseudo-inertia on its bound), and the divergence, infinite there, moves the estimate
inside. Along the directions no data determine the fit is flat, and the divergence alone
would complete each link from its identified part: where that part is off the URDF's (real
data: unmodelled friction, a URDF's rough inertias) it carries a mass the data do not see
with it. So in a model that keeps every base parameter, the directions no data determine that
involve inertial parameters alone (a link's mass entering only regrouped combinations) are
also pulled toward the URDF's values with weight :data:`DEFAULT_PRIOR_PULL`
(:meth:`ConsistentEstimator._pull`, which says why a reduced model is not); the pull depends on
``χ_st`` through its null-space part only, so it never moves the fit, and the divergence
still keeps every link a body. ``bench/bench_prior.py`` measures both on realistic recordings
of the arm6, a UR5 and a Panda, whose true links are the URDF's.
The problem is solved by damped Newton steps
(smooth, strictly convex: a few iterations, a millisecond), and when their optimum breaks a
constraint (a margin, a sign, the box) by the conic solver with the same objective
(``log_det``: Clarabel's exponential and PSD cones). ``λ ‖Nᵀ S⁻¹ (χ_st − χ_nom)‖²`` below
still fixes the null-space directions of the drive terms (``Ia1`` regrouped with ``ZZ1``),
which have no pseudo-inertia. With ``γ = 0`` the objective is the one below alone.
An estimator re-used on successive windows starts Newton from its last solution as well:
on the shipped arm's sliding window (``bench/bench_stream.py --minutes 2``, 120 updates)
the prior then costs nothing (1.8 s CPU with it, 2.3 s with ``γ = 0``); from the URDF
alone each update took 165 Newton steps and half fell to the conic solver (14.7 s CPU).
It also starts from its last solution for the same kept base parameters: after the sliding
window's reduction changes the kept set, the previous update's solution can be too far for
Newton (the barrier cuts every step), and the sets of a repeated process recur.

Without a prior, the null space is fixed by the regulariser
``λ ‖Nᵀ S⁻¹ (χ_st − χ_nom)‖²``, the distance to the nominal (URDF) parameters in the null
space only (``N`` an orthonormal basis of ``null(K_kept S)``): it is zero along every
identified direction, so when the unconstrained estimate completed by the nominal
null-space component is consistent the solution is exactly that (no solver call), and
the base values equal ``χ̂_b``. Otherwise ``λ`` (default 1e-3) trades the fit against the
distance to the nominal: one parameter scale of null-space distance costs as much as a
``√λ ≈ 0.03`` σ shift of the estimate, so the fit dominates — and the null-space
directions may go anywhere the constraints allow (a 0.2 kg upper arm of a UR10 whose URDF
says 12.9 kg, with its centre of mass a metre away), which is why the prior is the default.

Base parameters removed by model reduction (or not excited) do not enter the fit:
their values in :attr:`ConsistentEstimate.base_values` are those of the consistent
``χ_st``, i.e. the URDF's as far as the prior (or, without it, the regulariser) and the
constraints take them, since the data did not determine them.

Scaling: the unknowns are ``x = S⁻¹ χ_st`` with, per link, the nominal mass ``M``
and radius of gyration ``L = sqrt(tr Σ_nom / M)`` giving scales ``M``, ``M L``,
``M L²`` for mass, first and second moments, so the pseudo-inertia of ``x`` is
``J̃ = diag(1/L, 1/L, 1/L, 1) J diag(…) / M``, of order one, and ``J̃ ⪰ ε 1`` is a
margin relative to the nominal link; ``ε_i`` is the settings' margin, or half the
nominal link's own smallest eigenvalue of ``J̃`` when that is smaller (a nearly flat
URDF body stays feasible). A drive term's scale is the largest of its nominal
magnitude and of the base estimates it enters (so the null-space metric that splits,
say, ``ZZ1 + Ia1`` between its two terms follows the data). The unknowns are then of
order one instead of spanning 1e4, and Clarabel converges in 10-20 iterations.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import scipy.linalg

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.estimation.normal_equations import (
    NormalEquations,
    NormalSolution,
    residual_norms_squared,
    solve_weighted,
)
from dynamic_identification.core.mechanism.robot import (
    INERTIAL_PARAMETER_NAMES,
    DriveTerms,
    standard_parameters,
)
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.regressors.idim import BaseParameters

if TYPE_CHECKING:
    import cvxpy as cp  # imported when a problem is solved: it takes ~1.5 s to import

SIGNED_DRIVE_TERMS: tuple[str, ...] = ("Ia", "Fv", "Fc")
"""Drive-chain terms that must be non-negative; the offset ``off`` is free."""

_INERTIAL = len(INERTIAL_PARAMETER_NAMES)

_GAP_TOLERANCE = 1e-9
"""Clarabel's duality-gap tolerance (absolute and relative). The fit is a squared Mahalanobis distance, so the
identified directions are exact to far below a σ; the null-space directions, whose curvature is only ``λ``, are
resolved to about ``sqrt(1e-9 · cost / λ)`` parameter scales (1e-3 for a 40 σ projection)."""

_EXACT_FIT = 1e-6
"""Smallest ``σ̂ / RMS(Y)`` (weighted) used to scale the fit, so noise-free data keep a finite Mahalanobis metric."""

_DRIVE_SCALE_FLOOR = 1e-2
"""Smallest drive-term scale, as a fraction of the joint's RMS torque (N·m, and per rad/s or rad/s²)."""

_DEFAULT_LENGTH_M = 0.1
"""Length scale of a link whose nominal mass or second moment is zero, m."""

DEFAULT_PRIOR_WEIGHT = 0.3
"""``γ`` of :class:`ConsistencySettings` (module docstring, "Prior"): the URDF counts as 0.3 observations of each
link's pseudo-inertia."""

DEFAULT_PRIOR_PULL = 10.0
"""``λ_p`` of :class:`ConsistencySettings` (module docstring, "Prior"): with the prior, a parameter scale of distance
from the URDF along the directions no data determine costs as much as a ``√λ_p ≈ 3`` σ shift of the fit."""

_PRIOR_FLOOR = 1e-2
"""Smallest eigenvalue of a prior pseudo-inertia, scaled: 1 % of its link's mass and second moment."""

_NEWTON_ITERATIONS = 300
"""Most Newton iterations of the prior problem before the conic solver takes over. From a start far from the minimum
(a window whose reduction changed its kept set) the damped phase can take more than a hundred; an iteration costs a
fraction of a millisecond, the conic solver tens of them and, the first time, cvxpy's import and compilation."""

_PATH_FACTOR = 2.0
"""Ratio of the prior weights of consecutive solves on the path of the prior problem's minimum
(:meth:`ConsistentEstimator._newton_path`). Each solve starts from the last one's minimum; a smaller ratio keeps
it within a few Newton steps of its own. With 10, the last solve of a 7-axis arm whose window keeps 50 base
parameters started more than a hundred steps away, and stalled into the conic solver in a third of the updates
(``bench/HISTORY.md``)."""

_NEWTON_TOLERANCE = 1e-14
"""Newton decrement, relative to the objective, at which the prior problem is solved."""

_FINAL_STEP_GAP = 1e-6
"""Bound on ``f − f*`` (the objective's units, σ² of the fit) below which the point after a full Newton step is the
minimum: within about a thousandth of a σ of it, far below what the data determine.

``f / γ`` is self-concordant (a convex quadratic over ``γ`` plus log-det barriers and a linear trace), so from a
Newton decrement ``d = −∇fᵀΔ`` of ``f``, ``λ² = d / γ`` of ``f / γ``, a full step leaves ``λ⁺ ≤ λ² / (1 − λ)²`` and
``f − f* ≤ γ ω*(λ⁺) ≤ γ λ⁺²`` for ``λ⁺ ≤ ½`` (Nesterov, *Introductory Lectures on Convex Optimization*, 2004,
§4.1.5): :func:`_final_step_gap`. Steps beyond it would only confirm the point."""


_KEPT_SETS_REMEMBERED = 16
"""Sets of kept base parameters whose last solution a :class:`ConsistentEstimator` keeps as a start of Newton's
method, and sets with their scales whose row space it keeps (the least recently used one is forgotten first)."""

_Remembered = TypeVar("_Remembered")

_QR_BLOCK = 8
"""Block size of LAPACK's ``tpqrt`` in a Newton step (:meth:`_PriorObjective.step`)."""


class ConsistencyError(IdentificationError):
    """The physically consistent estimate cannot be computed (bad input, infeasible prior, solver failure)."""


class NotSearched(ConsistencyError):
    """The unconstrained estimate is not physically consistent and the nearest consistent one was not searched for
    (:meth:`ConsistentEstimator.solve` with ``search=False``)."""


def _pseudo_inertia_basis() -> np.ndarray:
    """``E`` of shape ``(10, 4, 4)`` with ``J(φ) = Σ_k φ_k E_k`` ([Wensing2018] eq. (7))."""
    basis = np.zeros((_INERTIAL, 4, 4))
    basis[0, 3, 3] = 1.0
    for axis in range(3):
        basis[1 + axis, axis, 3] = basis[1 + axis, 3, axis] = 1.0
    # Σ = ½ tr(I) 1 − I for I = [[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]].
    diagonal = {4: 0, 6: 1, 9: 2}  # index of I_xx, I_yy, I_zz in φ → axis
    for k, axis in diagonal.items():
        basis[k] += 0.5 * np.diag([1.0, 1.0, 1.0, 0.0])
        basis[k, axis, axis] -= 1.0
    for k, (row, column) in {5: (0, 1), 7: (0, 2), 8: (1, 2)}.items():
        basis[k, row, column] = basis[k, column, row] = -1.0
    return basis


_BASIS = _pseudo_inertia_basis()
_BASIS_ROWS = _BASIS.reshape(_INERTIAL, 16)
"""``E`` as ``(10, 16)``: row ``k`` the row-major entries of ``E_k``."""


def pseudo_inertia(inertial: np.ndarray) -> np.ndarray:
    """Pseudo-inertia matrices ``J(φ)`` of inertial parameters ([Wensing2018] eq. (7)).

    Parameters
    ----------
    inertial
        ``φ`` in Pinocchio order, shape ``(..., 10)``: kg, kg·m, kg·m² about the joint
        frame origin.

    Returns
    -------
    numpy.ndarray
        ``(..., 4, 4)``: ``[[Σ, h], [hᵀ, m]]`` with ``Σ = ½ tr(I) 1 − I`` in kg·m², ``h`` in kg·m.
    """
    phi = np.asarray(inertial, dtype=float)
    if phi.shape[-1:] != (_INERTIAL,):
        raise ConsistencyError(f"inertial must have shape (..., {_INERTIAL}), got {phi.shape}")
    return (phi @ _BASIS_ROWS).reshape(*phi.shape[:-1], 4, 4)


def _split(standard: np.ndarray, n_joints: int, terms: DriveTerms) -> tuple[np.ndarray, np.ndarray]:
    """``(n, 10)`` inertial and ``(n, len(terms.names))`` drive blocks of a standard vector."""
    values = np.asarray(standard, dtype=float)
    if values.shape != (n_joints * terms.per_joint,):
        raise ConsistencyError(
            f"standard must have {n_joints * terms.per_joint} entries ({n_joints} joints ×"
            f" {terms.per_joint}), got shape {values.shape}"
        )
    if not np.all(np.isfinite(values)):
        raise ConsistencyError(
            f"standard must be finite, got NaN/inf at {np.flatnonzero(~np.isfinite(values)).tolist()}"
        )
    blocks = values.reshape(n_joints, terms.per_joint)
    return blocks[:, :_INERTIAL], blocks[:, _INERTIAL:]


@dataclass(frozen=True)
class LinkConsistency:
    """Physical consistency of one link's inertial parameters.

    Attributes
    ----------
    index
        0-based joint (body) index in model order.
    mass
        ``m`` in kg.
    com
        Centre of mass ``h / m`` in the joint frame, m (NaN when ``m ≤ 0``).
    min_eigenvalue
        Smallest eigenvalue of ``J(φ)`` in SI units (kg·m², kg·m and kg mixed:
        only its sign is unit-free).
    relative_min_eigenvalue
        ``min eig J / max eig J``; ``≥ −tolerance`` is the consistency test.
    central_moments
        Principal moments of inertia about the centre of mass, kg·m², increasing
        (NaN when ``m ≤ 0``).
    consistent
        ``J(φ) ⪰ 0`` up to the tolerance, and ``m > 0``.
    """

    index: int
    mass: float
    com: np.ndarray
    min_eigenvalue: float
    relative_min_eigenvalue: float
    central_moments: np.ndarray
    consistent: bool


@dataclass(frozen=True)
class ConsistencyReport:
    """Physical consistency of a standard-parameter vector ([Wensing2018] Theorem 1).

    Attributes
    ----------
    links
        One :class:`LinkConsistency` per joint, model order.
    negative_drive_terms
        Names (``"Fc2"``, …) of rotor inertias and friction coefficients below zero.
    """

    links: tuple[LinkConsistency, ...]
    negative_drive_terms: tuple[str, ...]

    @property
    def consistent(self) -> bool:
        """Every link's pseudo-inertia is PSD with positive mass and no drive term is negative."""
        return all(link.consistent for link in self.links) and not self.negative_drive_terms

    @property
    def inconsistent_links(self) -> tuple[int, ...]:
        """0-based indices of the links that fail."""
        return tuple(link.index for link in self.links if not link.consistent)


def consistency_report(
    standard: np.ndarray, n_joints: int, terms: DriveTerms, *, tolerance: float = 1e-9
) -> ConsistencyReport:
    """Per-link and drive-term physical consistency of standard parameters.

    Parameters
    ----------
    standard
        ``χ_st`` of shape ``(n_joints * terms.per_joint,)`` in
        :func:`~dynamic_identification.core.mechanism.robot.standard_parameter_names` order.
    n_joints
        Number of joints (links) ``n``.
    terms
        The drive-chain terms present after the 10 inertial parameters of each joint.
    tolerance
        Relative tolerance: a link is consistent when ``m > 0`` and
        ``min eig J ≥ −tolerance · max eig J``; a drive term ``Ia``, ``Fv``, ``Fc`` is
        negative when below ``−tolerance`` times the largest magnitude of that term
        over the joints.

    Returns
    -------
    ConsistencyReport
    """
    if not (np.isfinite(tolerance) and tolerance >= 0.0):
        raise ConsistencyError(f"tolerance must be finite and >= 0, got {tolerance}")
    inertial, drive = _split(standard, n_joints, terms)
    # Every link at once: a batch of eigenvalue problems costs about one.
    eigenvalues = np.linalg.eigvalsh(pseudo_inertia(inertial))
    masses = inertial[:, 0]
    relative = eigenvalues[:, 0] / np.maximum(eigenvalues[:, -1], np.finfo(float).tiny)
    massive = masses > 0.0
    com = np.where(massive[:, None], inertial[:, 1:4] / np.where(massive, masses, 1.0)[:, None], 0.0)
    central = _rotational_inertia(inertial) - masses[:, None, None] * _skew_square(com)
    moments = np.linalg.eigvalsh(np.where(massive[:, None, None], central, np.eye(3)))
    consistent = massive & (relative >= -tolerance)
    links = [
        LinkConsistency(
            index=index,
            mass=mass,
            com=com[index] if has_mass else np.full(3, np.nan),
            min_eigenvalue=lowest,
            relative_min_eigenvalue=ratio,
            central_moments=moments[index] if has_mass else np.full(3, np.nan),
            consistent=body,
        )
        for index, (mass, has_mass, lowest, ratio, body) in enumerate(
            zip(
                masses.tolist(),
                massive.tolist(),
                eigenvalues[:, 0].tolist(),
                relative.tolist(),
                consistent.tolist(),
                strict=True,
            )
        )
    ]
    names = terms.names
    signed = [t for t, name in enumerate(names) if name in SIGNED_DRIVE_TERMS]
    values = drive[:, signed].T
    below = values < -tolerance * np.abs(values).max(axis=1, initial=0.0)[:, None]
    negative = tuple(f"{names[signed[t]]}{j + 1}" for t, j in zip(*np.nonzero(below), strict=True))
    return ConsistencyReport(links=tuple(links), negative_drive_terms=negative)


def is_physically_consistent(
    standard: np.ndarray, n_joints: int, terms: DriveTerms, *, tolerance: float = 1e-9
) -> bool:
    """Whether standard parameters are physically consistent ([Wensing2018] Theorem 1).

    ``J(φ_i) ⪰ 0`` with ``m_i > 0`` for every link and ``Ia, Fv, Fc ≥ 0``; see
    :func:`consistency_report` for ``tolerance`` and the per-link details.
    """
    return consistency_report(standard, n_joints, terms, tolerance=tolerance).consistent


DETERMINED_SHARE = 0.05
"""A quantity whose null-space share (:attr:`ConsistentEstimate.null_share`) is below this is the data's alone;
above ``1 − DETERMINED_SHARE`` the data say nothing about it and the URDF prior gives it."""


def determined_by(shares: float | np.ndarray) -> str:
    """What determines a quantity of the standard parameters of null-space shares ``shares``: ``"data"`` when the
    data determine every one of them, ``"URDF"`` when the data say nothing about any of them (the URDF prior gives
    them), ``"data + URDF"`` otherwise (identified combinations, or some of them determined and others free)."""
    values = np.atleast_1d(np.asarray(shares, dtype=float))
    if np.all(values < DETERMINED_SHARE):
        return "data"
    if np.all(values > 1.0 - DETERMINED_SHARE):
        return "URDF"
    return "data + URDF"


@dataclass(frozen=True)
class LinkComparison:
    """One identified body against the URDF's: mass, centre of mass, principal moments, and who determines them.

    Attributes
    ----------
    index
        0-based joint (body) index in model order.
    mass, mass_urdf
        kg.
    com, com_urdf
        Centre of mass in the joint frame, m (NaN without mass).
    moments, moments_urdf
        Principal moments of inertia about the centre of mass, kg·m², increasing.
    mass_source, com_source, moments_source
        :func:`determined_by` the null-space shares of the standard parameters each depends on: the mass; the mass
        and first moments; all ten.
    at_bound
        Its pseudo-inertia is held at the consistency bound (``J̃ ⪰ ε 1`` active, :attr:`ConsistentEstimate.active`):
        the data pushed this body to the edge of physical consistency, where its values are the bound's, not the
        data's (a degenerate body; a URDF prior keeps it inside).
    """

    index: int
    mass: float
    mass_urdf: float
    com: np.ndarray
    com_urdf: np.ndarray
    moments: np.ndarray
    moments_urdf: np.ndarray
    mass_source: str
    com_source: str
    moments_source: str
    at_bound: bool = False


def link_comparison(
    estimate: ConsistentEstimate, nominal: np.ndarray, n_joints: int, terms: DriveTerms
) -> tuple[LinkComparison, ...]:
    """Each body of the consistent ``estimate`` against the nominal (URDF) standard parameters ``nominal``."""
    identified = consistency_report(estimate.standard, n_joints, terms, tolerance=0.0).links
    urdf = consistency_report(nominal, n_joints, terms, tolerance=0.0).links
    share = (
        np.asarray(estimate.null_share, dtype=float).reshape(n_joints, terms.per_joint)[:, :_INERTIAL]
        if np.size(estimate.null_share) == n_joints * terms.per_joint
        else np.zeros((n_joints, _INERTIAL))
    )
    return tuple(
        LinkComparison(
            index=i,
            mass=mine.mass,
            mass_urdf=theirs.mass,
            com=mine.com,
            com_urdf=theirs.com,
            moments=mine.central_moments,
            moments_urdf=theirs.central_moments,
            mass_source=determined_by(share[i, 0]),
            com_source=determined_by(share[i, :4]),
            moments_source=determined_by(share[i]),
            at_bound=f"link {i + 1} pseudo-inertia" in estimate.active,
        )
        for i, (mine, theirs) in enumerate(zip(identified, urdf, strict=True))
    )


_ROTATIONAL_ENTRIES = np.array([[4, 5, 7], [5, 6, 8], [7, 8, 9]])
"""Where ``I = [[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]``'s entries sit in ``φ``."""


def _rotational_inertia(phi: np.ndarray) -> np.ndarray:
    """The rotational inertias ``(..., 3, 3)`` of inertial parameters ``(..., 10)``."""
    return phi[..., _ROTATIONAL_ENTRIES]


def _skew_square(vector: np.ndarray) -> np.ndarray:
    """``−[c]ₓ²`` = ``|c|² 1 − c cᵀ`` (parallel-axis term per unit mass) of vectors ``(..., 3)``."""
    squares = np.sum(vector * vector, axis=-1)
    return squares[..., None, None] * np.eye(3) - vector[..., :, None] * vector[..., None, :]


@dataclass(frozen=True)
class ConsistencySettings:
    """Choices of the physically consistent estimate.

    Attributes
    ----------
    margin
        ``ε`` of ``J̃_i ⪰ ε 1`` where ``J̃_i`` is link ``i``'s pseudo-inertia scaled
        by its nominal mass ``M`` and radius of gyration ``L`` (module docstring): the
        mass stays above ``ε M`` and the second moment along any direction above
        ``ε M L²``, so the result is strictly consistent despite solver round-off. A
        link whose nominal (minus its attached parts) has a smaller scaled eigenvalue
        gets half of that instead, so a nearly flat URDF body stays feasible.
    regularization
        ``λ`` of the null-space pull toward the nominal parameters, in units of the
        squared Mahalanobis distance of the fit per squared parameter scale.
    box
        ``None`` or the half-width of a box around the nominal inertial parameters, in
        parameter scales: ``|m − m_nom| ≤ box · M``, ``|h − h_nom| ≤ box · M L``,
        ``|I − I_nom| ≤ box · M L²`` per link (e.g. 0.5 keeps masses within ±50 % of
        the URDF's). A hard prior for when the URDF is trusted; it can make the
        problem infeasible, which raises :class:`ConsistencyError`.
    shift_tolerance
        The unconstrained estimate counts as already consistent when the consistent
        base values lie within this Mahalanobis distance (in σ) of it.
    max_iterations
        Clarabel's iteration limit.
    prior_weight
        ``γ`` of the log-det divergence to the URDF's link pseudo-inertias ([Lee2020], module
        docstring "Prior"), in units of the fit's squared Mahalanobis distance: the URDF counts
        as ``γ`` observations of each link. With ``prior_pull`` it chooses the directions no data
        determine; :data:`DEFAULT_PRIOR_WEIGHT` moves the identified base parameters by less than their σ.
        0: no divergence (the nearest consistent fit, the undetermined directions pulled toward
        the URDF by ``regularization`` only, i.e. anywhere the constraints allow).
    prior_pull
        ``λ_p`` of the pull toward the URDF's values along the directions that no data determine and that
        involve inertial parameters alone (a mass that only regrouped combinations contain), in the units of
        ``regularization``, with the prior only (module docstring "Prior").
    """

    margin: float = 1e-4
    regularization: float = 1e-3
    box: float | None = None
    shift_tolerance: float = 1e-2
    max_iterations: int = 200
    prior_weight: float = DEFAULT_PRIOR_WEIGHT
    prior_pull: float = DEFAULT_PRIOR_PULL

    def __post_init__(self) -> None:
        if not (np.isfinite(self.margin) and 0.0 <= self.margin < 1.0):
            raise ConsistencyError(f"margin must be in [0, 1), got {self.margin}")
        if not (np.isfinite(self.regularization) and self.regularization > 0.0):
            raise ConsistencyError(f"regularization must be finite and > 0, got {self.regularization}")
        if self.box is not None and not (np.isfinite(self.box) and self.box > 0.0):
            raise ConsistencyError(f"box must be None or finite and > 0, got {self.box}")
        if not (np.isfinite(self.shift_tolerance) and self.shift_tolerance >= 0.0):
            raise ConsistencyError(f"shift_tolerance must be finite and >= 0, got {self.shift_tolerance}")
        if self.max_iterations < 1:
            raise ConsistencyError(f"max_iterations must be >= 1, got {self.max_iterations}")
        if not (np.isfinite(self.prior_weight) and self.prior_weight >= 0.0):
            raise ConsistencyError(f"prior_weight must be finite and >= 0, got {self.prior_weight}")
        if not (np.isfinite(self.prior_pull) and self.prior_pull > 0.0):
            raise ConsistencyError(f"prior_pull must be finite and > 0, got {self.prior_pull}")


@dataclass(frozen=True)
class ConsistentEstimate:
    """Physically consistent standard parameters fitted to the weighted base normal equations.

    Attributes
    ----------
    standard
        Consistent ``χ_st``, shape ``(p,)``, standard-parameter order.
    base_values
        ``K χ_st`` for all ``b`` base parameters, shape ``(b,)``: drop-in base values
        for prediction and feedforward.
    kept
        Indices (into the base parameters) of the ones fitted, shape ``(k,)``.
    unconstrained
        The WLS estimate ``χ̂_b`` of the kept base parameters ([Gautier2013] eq. (20)).
    unconstrained_consistent
        Whether ``χ̂_b`` is reproduced by consistent standard parameters (shift below
        :attr:`ConsistencySettings.shift_tolerance`).
    shift_sigma
        Mahalanobis distance ``sqrt((θ_c − χ̂_b)ᵀ A (θ_c − χ̂_b) / σ̂²)`` between the
        consistent and the unconstrained kept base values, in standard deviations.
    cost_increase
        Relative increase of the weighted residual sum of squares
        ``‖Y − Wθ_c‖²_Σ / ‖Y − Wχ̂_b‖²_Σ − 1``.
    relative_error_unconstrained, relative_error
        ``‖Y − Wθ‖ / ‖Y‖`` (unweighted, all joints) of ``χ̂_b`` and of ``θ_c``.
    active
        Constraints at their bound, e.g. ``("link 3 pseudo-inertia", "Fc2 >= 0", "M4 box")``.
    terms
        The drive-chain terms of :attr:`standard` (for :attr:`report`).
    solver_status
        ``"newton"`` when the prior's Newton iterations found the optimum inside every constraint,
        else the cvxpy status; without a prior ``"not needed"`` when the nominal completion of
        ``χ̂_b`` was consistent.
    solve_time_s
        Wall time of the whole call, s.
    null_share
        ``(p,)``: the share of each standard parameter (its scaled unit vector) in the directions
        the kept base parameters do not see: 0 when the data determine it alone, 1 when they say
        nothing about it (the prior decides), in between when it enters combinations.
    prior_weight
        ``γ`` of the log-det divergence used (0: none).
    """

    standard: np.ndarray
    base_values: np.ndarray
    kept: np.ndarray
    unconstrained: np.ndarray
    unconstrained_consistent: bool
    shift_sigma: float
    cost_increase: float
    relative_error_unconstrained: float
    relative_error: float
    active: tuple[str, ...]
    terms: DriveTerms
    solver_status: str
    solve_time_s: float
    null_share: np.ndarray = field(default_factory=lambda: np.zeros(0))
    prior_weight: float = 0.0

    @property
    def kept_values(self) -> np.ndarray:
        """Consistent values of the kept base parameters, ordered like :attr:`kept`."""
        return self.base_values[self.kept]

    @cached_property
    def report(self) -> ConsistencyReport:
        """:func:`consistency_report` of :attr:`standard` (at no tolerance), computed when first asked: a sliding
        window's update publishes the estimate without it."""
        return consistency_report(self.standard, self.standard.size // self.terms.per_joint, self.terms, tolerance=0.0)


@dataclass(frozen=True)
class _FixedRows:
    """``[F; G]`` of :class:`_PriorObjective` in the free unknowns ``order`` (the ones no link involves first, then
    the free ones of ``links.ravel()``, ``link_free`` of them) as ``Q₀ R₀``: ``triangle`` ``R₀`` =
    ``[[R₁₁, R₁₂], [0, R₂₂]]`` with ``R₁₁`` of the first ``solo`` unknowns, ``link_triangle`` ``R₂₂``, and
    ``offset`` ``Q₀ᵀ`` of the rows' residual at ``x = 0`` but for the held unknowns' values, so that ``Q₀ᵀ`` of the
    residual at ``x`` is ``R₀ x[order] + offset``."""

    order: np.ndarray
    link_free: np.ndarray
    solo: int
    offset: np.ndarray
    triangle: np.ndarray
    link_triangle: np.ndarray


@dataclass(frozen=True)
class _PriorObjective:
    """``f(x) = ½ ‖F x − a‖² + ½ ‖G x − c‖² + γ Σᵢ (tr(P₀ᵢ J̃ᵢ(x)) − log det J̃ᵢ(x))`` in the scaled unknowns ``x``.

    ``F = √2 R K`` and ``a = √2 R χ̂`` hold the fit ``‖K x − χ̂‖²_M`` (``RᵀR = M``), ``G = √2 P``
    and ``c = G x_nom`` the null-space pull ``‖P (x − x_nom)‖²``
    (:meth:`ConsistentEstimator._pull`); ``P₀ᵢ = J̃₀ᵢ⁻¹``; ``J̃ᵢ(x)`` the pseudo-inertia of link
    ``i``'s unknowns ``links[i]`` less its attached parts. Strictly convex on ``J̃ᵢ ≻ 0``: ``J`` is
    one-to-one in a link's ten parameters, and every drive direction is seen by the fit or the
    pull. The divergence's gradient in ``φ`` is ``⟨P₀ − J̃⁻¹, E_k⟩``, its Hessian
    ``H = tr(J̃⁻¹ E_k J̃⁻¹ E_l)`` (``E_k`` the pseudo-inertia basis, [Lee2020]).
    """

    fit: np.ndarray
    fit_target: np.ndarray
    pull: np.ndarray
    pull_target: np.ndarray
    weight: float
    prior_inverse: np.ndarray
    attached: np.ndarray
    links: np.ndarray

    def value(self, x: np.ndarray) -> float | None:
        """``f(x)``, or ``None`` outside the domain (a pseudo-inertia not positive definite)."""
        matrices = pseudo_inertia(x[self.links] - self.attached)
        try:
            factors = np.linalg.cholesky(matrices)
        except np.linalg.LinAlgError:
            return None
        log_det = 2.0 * float(np.log(np.diagonal(factors, axis1=1, axis2=2)).sum())
        # tr(P₀ J̃) of symmetric matrices: the sum of their entries' products.
        trace = float(np.vdot(self.prior_inverse, matrices))
        fit = self.fit @ x - self.fit_target
        pull = self.pull @ x - self.pull_target
        return 0.5 * float(fit @ fit + pull @ pull) + self.weight * (trace - log_det)

    def fit_value(self, x: np.ndarray) -> float:
        """The fit alone, ``‖K x − χ̂‖²_M``: a squared Mahalanobis distance, in σ² of eq. (18)."""
        fit = self.fit @ x - self.fit_target
        return 0.5 * float(fit @ fit)

    def gradient(self, x: np.ndarray) -> np.ndarray:
        """``∇f(x)`` (inside the domain)."""
        return self._terms(x)[0]

    def _terms(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The gradient, the divergence's gradient per link ``(n, 10)`` and its Hessian per link ``(n, 10, 10)``.

        ``tr(J̃⁻¹ E_k J̃⁻¹ E_l) = vec(E_k)ᵀ (J̃⁻¹ ⊗ J̃⁻¹) vec(E_l)`` (``J̃⁻¹`` symmetric): one product per link.
        """
        inverse = np.linalg.inv(pseudo_inertia(x[self.links] - self.attached))
        links = inverse.shape[0]
        divergence = (self.prior_inverse - inverse).reshape(links, 16) @ _BASIS_ROWS.T
        kronecker = (inverse[:, :, None, :, None] * inverse[:, None, :, None, :]).reshape(links, 16, 16)
        curvature = _BASIS_ROWS @ kronecker @ _BASIS_ROWS.T
        gradient = self.fit.T @ (self.fit @ x - self.fit_target) + self.pull.T @ (self.pull @ x - self.pull_target)
        gradient[self.links] += self.weight * divergence
        return gradient, divergence, curvature

    def fixed_rows(self, x: np.ndarray, free: np.ndarray) -> _FixedRows:
        """The QR factors of the rows ``[F; G]`` of the ``free`` unknowns, which no Newton step changes, the others
        held at their values in ``x``.

        The free unknowns no link involves (drive terms) come first, so a step's link rows, zero
        in their columns, leave the first rows of the triangle as they are (:meth:`step`). ``Q₀``
        itself is never formed: the residual's column beside the free ones gives ``Q₀ᵀ`` of it.
        """
        linked = np.zeros(free.size, dtype=bool)
        linked[self.links.ravel()] = True
        solo = np.flatnonzero(free & ~linked)
        link_free = free[self.links.ravel()]
        order = np.concatenate([solo, self.links.ravel()[link_free]])
        rows = np.concatenate([self.fit, self.pull])
        held = np.concatenate([self.fit_target, self.pull_target]) - rows[:, ~free] @ x[~free]
        (triangle,) = scipy.linalg.qr(np.column_stack([rows[:, order], -held]), mode="r", check_finite=False)
        first, count = solo.size, order.size
        return _FixedRows(
            order=order,
            link_free=link_free,
            solo=first,
            offset=triangle[:count, count],
            triangle=triangle[:count, :count],
            link_triangle=np.asfortranarray(triangle[first:count, first:count]),
        )

    def step(self, x: np.ndarray, rows: _FixedRows) -> tuple[np.ndarray, float]:
        """The Newton step of the free unknowns of ``rows`` and the decrement ``−∇fᵀ step``.

        Solved as the least-squares problem ``A s ≈ −b`` with ``AᵀA`` the Hessian and ``Aᵀb``
        the gradient (rows ``F``, ``G`` and ``√γ Lᵢᵀ`` with ``Lᵢ Lᵢᵀ = Hᵢ``), by QR: forming the
        Hessian would square a condition number of up to 1e9 (a fit of noise-free data
        beside a prior of weight 0.1). ``[F; G] = Q₀ R₀`` once per set of free unknowns
        (:meth:`fixed_rows`): with ``R₀ = [[R₁₁, R₁₂], [0, R₂₂]]`` (the unknowns no link involves
        first), the link rows only meet ``R₂₂``, so a step is the QR of ``[R₂₂; √γ Lᵢᵀ]`` for the link
        unknowns, two triangles when every link unknown is free (LAPACK's triangular-pentagonal
        ``tpqrt``), and a triangular solve with ``R₁₁`` for the others, which zero their rows exactly.
        """
        gradient, divergence, curvature = self._terms(x)
        factors = np.linalg.cholesky(curvature)
        links = factors.shape[0]
        lower = np.zeros((links, _INERTIAL, links, _INERTIAL))
        lower[np.arange(links), :, np.arange(links), :] = np.sqrt(self.weight) * factors
        # The blocks √γ Lᵢᵀ, upper triangular, in LAPACK's (Fortran) order.
        blocks = lower.reshape(links * _INERTIAL, links * _INERTIAL).T
        link_rows = blocks if rows.link_free.all() else blocks[:, rows.link_free]
        # √γ Lᵢ⁻¹ dᵢ = (√γ Lᵢ)⁻¹ γ dᵢ.
        link_right = _upper_solve(blocks, self.weight * divergence.reshape(-1, 1), transposed=True)
        fixed_right = rows.triangle @ x[rows.order] + rows.offset
        solo, linked = rows.solo, rows.link_triangle.shape[0]
        # The link rows' upper-triangular part: all of them when every link unknown is free (blocks Lᵢᵀ).
        trapezoid = linked if rows.link_free.all() else 0
        triangle, reflectors, factor, _ = scipy.linalg.lapack.dtpqrt(
            trapezoid, min(_QR_BLOCK, linked), rows.link_triangle, link_rows
        )
        projected, _, _ = scipy.linalg.lapack.dtpmqrt(
            trapezoid, reflectors, factor, fixed_right[solo:, None], link_right, trans="T"
        )
        solution = np.empty(rows.order.size)
        solution[solo:] = _upper_solve(triangle, projected[:, 0])
        if solo:
            solution[:solo] = _upper_solve(
                rows.triangle[:solo, :solo], fixed_right[:solo] - rows.triangle[:solo, solo:] @ solution[solo:]
            )
        step = np.zeros_like(x)
        step[rows.order] = -solution
        return step, float(-gradient @ step)

    def minimise(self, start: np.ndarray, held: np.ndarray) -> np.ndarray | None:
        """Damped Newton from ``start`` (inside the domain) with the unknowns ``held`` fixed; ``None`` if it stalls.

        Steps are halved until every pseudo-inertia stays positive definite and ``f`` falls by a
        quarter of the Newton decrement's prediction (Armijo); it stops when the decrement is
        below :data:`_NEWTON_TOLERANCE` of ``f``, or after a full step that leaves ``f`` within
        :data:`_FINAL_STEP_GAP` of its minimum (:func:`_final_step_gap`).
        """
        x = start.copy()
        current = self.value(x)
        if current is None:
            return None
        rows = self.fixed_rows(x, ~held)
        for _ in range(_NEWTON_ITERATIONS):
            try:
                step, decrement = self.step(x, rows)
            except (np.linalg.LinAlgError, ValueError):
                return None
            if decrement <= _NEWTON_TOLERANCE * max(1.0, abs(current)):
                return x
            length = 1.0
            while True:
                candidate = x + length * step
                trial = self.value(candidate)
                if trial is not None and trial <= current - 0.25 * length * decrement:
                    break
                length *= 0.5
                if length < 1e-10:
                    # Round-off: the decrement no longer shows in f; accept a converged point.
                    return x if decrement <= 1e-8 * max(1.0, abs(current)) else None
            x, current = candidate, trial
            if length == 1.0 and _final_step_gap(decrement, self.weight) <= _FINAL_STEP_GAP:
                return x
        return None


_ROW_SPACE_RECIPROCAL_CONDITION = 1e-8
"""Reciprocal condition number of the QR's triangle (LAPACK's estimate in the 1-norm) above which :func:`_row_space`
keeps the QR. The SVD's rank threshold, ``max(k, p) · eps`` (about 1e-14 here), would keep every row too: the estimate
and the change of norm are each off by at most a factor ``k``, so the 2-norm reciprocal condition is above ~1e-11."""


@dataclass(frozen=True)
class _RowSpace:
    """A ``k × p`` matrix ``A`` of numerical rank ``r`` by an orthonormal basis of its row space and the coordinates
    of its minimum-norm least-squares solutions in that basis (:func:`_row_space`).

    Attributes
    ----------
    basis
        ``(p, r)``: an orthonormal basis ``V`` of the row space.
    coordinates
        ``(r, k)``: ``C`` with ``V C t`` the minimum-norm least-squares solution of ``A y ≈ t``.
    null_space
        ``(p, p − r)``: an orthonormal basis of the null space of ``A``.
    """

    basis: np.ndarray
    coordinates: np.ndarray
    null_space: np.ndarray

    def least_squares(self, target: np.ndarray) -> np.ndarray:
        """The minimum-norm least-squares solution ``y`` of ``A y ≈ target``, ``V C target``."""
        return self.basis @ (self.coordinates @ target)


def _row_space(matrix: np.ndarray) -> _RowSpace:
    """The :class:`_RowSpace` of ``matrix``: what ``numpy.linalg.lstsq`` and ``scipy.linalg.null_space`` would each
    compute, from one factorisation.

    A matrix of full row rank (base columns are independent combinations of the standard parameters, so the
    consistent estimate's always are) takes the QR of its transpose, ``Aᵀ = [Q₁ Q₂] [R; 0]``: ``V = Q₁``,
    ``C = R⁻ᵀ``, the null space ``Q₂``, for fewer operations than the SVD. One that the triangle's condition does not
    show to have full rank takes the SVD ``A = U diag(s) Vᵀ`` truncated at the rank of ``numpy.linalg.lstsq``
    (singular values above ``max(k, p) · eps`` of the largest): ``C = diag(1/s) Uᵀ``.
    """
    rows = matrix.shape[0]
    if 0 < rows <= matrix.shape[1]:
        orthogonal, triangle = scipy.linalg.qr(matrix.T, check_finite=False)
        square = triangle[:rows]
        reciprocal, info = scipy.linalg.lapack.dtrcon(square, norm="1", uplo="U")
        if info == 0 and reciprocal > _ROW_SPACE_RECIPROCAL_CONDITION:
            coordinates = scipy.linalg.solve_triangular(square, np.eye(rows), trans="T", check_finite=False)
            return _RowSpace(basis=orthogonal[:, :rows], coordinates=coordinates, null_space=orthogonal[:, rows:])
    left, values, right = scipy.linalg.svd(matrix, full_matrices=True)
    threshold = max(matrix.shape) * np.finfo(float).eps * (values[0] if values.size else 0.0)
    rank = int(np.count_nonzero(values > threshold))
    return _RowSpace(
        basis=right[:rank].T, coordinates=left[:, :rank].T / values[:rank, None], null_space=right[rank:].T
    )


@dataclass(frozen=True)
class _Layout:
    """Where each kind of unknown sits in a standard vector of ``n_joints`` joints of ``per_joint`` parameters.

    Attributes
    ----------
    links
        ``(n_joints, 10)`` indices of each link's inertial parameters.
    signed
        Indices of the sign-constrained drive terms (:data:`SIGNED_DRIVE_TERMS`).
    drive
        Indices of every drive term.
    """

    n_joints: int
    links: np.ndarray
    signed: np.ndarray
    drive: np.ndarray

    @property
    def inertial(self) -> np.ndarray:
        """Indices of the inertial parameters, link by link."""
        return self.links.ravel()


def _layout(n_joints: int, terms: DriveTerms) -> _Layout:
    """The :class:`_Layout` of the standard parameters of ``n_joints`` joints with drive terms ``terms``."""
    per_joint = terms.per_joint
    first = np.arange(n_joints)[:, None] * per_joint
    signed = [_INERTIAL + t for t, name in enumerate(terms.names) if name in SIGNED_DRIVE_TERMS]
    indices = (
        first + np.arange(_INERTIAL)[None, :],
        first + np.array(signed, dtype=int)[None, :],
        first + np.arange(_INERTIAL, per_joint)[None, :],
    )
    for index in indices:
        index.setflags(write=False)
    links, signed_terms, drive = indices
    return _Layout(n_joints, links, signed_terms.ravel(), drive.ravel())


@dataclass(frozen=True)
class _Scaling:
    """Unknowns ``x = χ_st / scale`` and the per-link margins of ``J(x) ⪰ margin 1``."""

    scale: np.ndarray
    margins: np.ndarray


@dataclass(frozen=True)
class _Pull:
    """The pull ``‖P (x − x_nom)‖²`` toward the URDF's values (:meth:`ConsistentEstimator._pull`): ``matrix`` is
    ``P``; ``null_space_only`` when it is ``√λ Nᵀ`` alone, the form :meth:`ConsistentEstimator._folded` folds."""

    matrix: np.ndarray
    null_space_only: bool


@dataclass
class _Problem:
    """A compiled cvxpy problem for one number of kept columns (re-solved with new data by DPP)."""

    problem: cp.Problem
    x: cp.Variable
    data_matrix: cp.Parameter
    data_vector: cp.Parameter
    pull: cp.Parameter | None
    pull_target: cp.Parameter | None
    lower: cp.Parameter | None
    upper: cp.Parameter | None
    nominal: cp.Parameter | None = None
    weight: cp.Parameter | None = None


@dataclass
class ConsistentEstimator:
    """Physically consistent WLS of standard parameters from base normal equations ([Wensing2018]).

    Holds the nominal parameters and the compiled cvxpy problem, so repeated calls
    (the in-process estimator's every update) skip the problem construction while
    the number of kept base parameters stays the same (the data, the kept set and
    the scales enter as cvxpy parameters).

    Parameters
    ----------
    base
        Base parameters with the regrouping ``K`` (``χ_b = K χ_st``).
    terms
        Drive-chain terms of the standard parameters.
    nominal
        ``χ_nom`` of shape ``(p,)``: the URDF's inertial parameters and a drive-term
        prior (zeros when unknown), e.g.
        :func:`~dynamic_identification.core.mechanism.robot.standard_parameters`.
    settings
        :class:`ConsistencySettings`.
    attached
        ``(n, 10)`` inertial parameters (Pinocchio order, joint frame) of parts known to
        be rigidly part of each body, e.g. a gripper merged into the last body
        (:func:`dynamic_identification.io.urdf_export.attached_inertias`): the
        constraint becomes ``J(φ_i − attached_i) ⪰ ε``, so the identified body minus
        its attachments is itself a physical body and the URDF export can keep the
        attachments' own inertias. Zeros (no attachment) by default.
    equation_joints
        The standard joint (0-based) of each equation column of the normal equations,
        when they are not one per standard joint in order: a closed-loop robot's
        equations are those of its actuated joints, its standard parameters those of the
        opened tree ([Briot2012] eq. (6)). Only the drive terms' scales use it.
    """

    base: BaseParameters
    terms: DriveTerms
    nominal: np.ndarray
    settings: ConsistencySettings = field(default_factory=ConsistencySettings)
    attached: np.ndarray | None = None
    equation_joints: tuple[int, ...] | None = None
    _problems: dict[tuple[int, int, bool], _Problem] = field(default_factory=dict, repr=False)
    _inertial_scale: np.ndarray = field(init=False, repr=False)
    _attached_scaled: np.ndarray = field(init=False, repr=False)
    _prior_inverse: np.ndarray = field(init=False, repr=False)
    _prior_start: np.ndarray = field(init=False, repr=False)
    _layout: _Layout = field(init=False, repr=False)
    _margins: np.ndarray = field(init=False, repr=False)
    _prior_solutions: dict[bytes, np.ndarray] = field(default_factory=dict, init=False, repr=False)
    """The last solutions of :meth:`_solve_prior` by kept set, least recently solved first: the last one is the
    previous update's."""
    _row_spaces: dict[bytes, _RowSpace] = field(default_factory=dict, init=False, repr=False)
    """:func:`_row_space` of the scaled regrouping by kept set and scales, least recently used first: a sliding
    window keeps its model over several updates, and the drive terms' scales are powers of two
    (:meth:`_scaling`), so it factorises the same matrix again only when either changes."""

    def __post_init__(self) -> None:
        p = len(self.base.standard_names)
        if p % self.terms.per_joint:
            raise ConsistencyError(
                f"terms has {self.terms.per_joint} parameters per joint, which does not divide p={p}"
            )
        n = p // self.terms.per_joint
        self._layout = _layout(n, self.terms)
        nominal = np.array(self.nominal, dtype=float)
        _split(nominal, n, self.terms)
        nominal.setflags(write=False)
        self.nominal = nominal
        attached = np.zeros((n, _INERTIAL)) if self.attached is None else np.array(self.attached, dtype=float)
        if attached.shape != (n, _INERTIAL) or not np.all(np.isfinite(attached)):
            raise ConsistencyError(f"attached must hold ({n}, {_INERTIAL}) finite values, got shape {attached.shape}")
        attached.setflags(write=False)
        self.attached = attached
        if self.equation_joints is not None:
            joints = tuple(int(j) for j in self.equation_joints)
            if not all(0 <= j < n for j in joints) or len(set(joints)) != len(joints):
                raise ConsistencyError(f"equation_joints must be distinct joints in [0, {n}), got {list(joints)}")
            self.equation_joints = joints
        self._inertial_scale = self._structural_scales()
        self._attached_scaled = attached / self._inertial_scale
        self._prior_inverse, self._prior_start = self._prior()
        self._margins = self._nominal_margins()
        self._margins.setflags(write=False)
        self._unseen_inertial = self._unseen_inertial_directions()

    @property
    def n_joints(self) -> int:
        return self._layout.n_joints

    def solve(
        self,
        equations: NormalEquations,
        joint_std: np.ndarray,
        kept: Sequence[int] | np.ndarray | None = None,
        *,
        search: bool = True,
        unconstrained: NormalSolution | None = None,
    ) -> ConsistentEstimate:
        """The consistent estimate for these normal equations.

        Parameters
        ----------
        equations
            Per-joint normal equations over all ``b`` base columns
            (:meth:`NormalEquations.from_rows` of the decimated rows ``(r, n, b)`` and
            valid mask, or the sliding window's).
        joint_std
            ``σ_j`` per joint, N·m, the WLS weights ([Gautier2013] eq. (20)).
        kept
            Base-parameter indices fitted (after model reduction); all by default.
        search
            ``False``: only check the unconstrained estimate completed by the nominal
            null-space component (no conic solve, no cvxpy import; ``J ⪰ 0`` without the
            margin), which is then the estimate; raise :class:`NotSearched` when it is not
            consistent.
        unconstrained
            The WLS of these equations, ``joint_std`` and ``kept`` (:func:`solve_weighted`) when the caller holds it
            (the sliding window's reduction solved it): not solved again.

        Raises
        ------
        ConsistencyError
            Bad shapes, infeasible box prior, or the solver failed; :class:`NotSearched`.
        RankDeficientError, DataError
            From the unconstrained WLS on ``kept``.
        """
        started = time.perf_counter()
        b = self.base.count
        if equations.n_parameters != b:
            raise ConsistencyError(f"equations have {equations.n_parameters} columns, base parameters {b}")
        sigma = np.asarray(joint_std, dtype=float)
        if sigma.shape != (equations.n_joints,) or not np.all(np.isfinite(sigma) & (sigma > 0.0)):
            raise ConsistencyError(f"joint_std must be {equations.n_joints} positive values, got {sigma.tolist()}")
        columns = np.arange(b) if kept is None else np.unique(np.asarray(kept, dtype=int))
        if columns.size == 0 or columns[0] < 0 or columns[-1] >= b:
            raise ConsistencyError(f"kept must be indices in [0, {b}), got {np.asarray(kept).tolist()}")
        if unconstrained is None:
            solution = solve_weighted(equations, sigma, columns, names=self.base.names)
        elif np.array_equal(unconstrained.columns, columns):
            solution = unconstrained
        else:
            raise ConsistencyError(
                f"unconstrained is the WLS of columns {unconstrained.columns.tolist()}, not of {columns.tolist()}"
            )
        estimate = solution.parameters
        matrix = solution.normal_matrix
        weights = 1.0 / sigma**2
        ssr = float(weights @ solution.residual_norms**2)
        dof = float(equations.count.sum()) - columns.size
        # σ̂² of [Gautier2013] eq. (17), floored at a 1e-6 relative residual so exact data stay well scaled.
        sigma_squared = max(ssr / dof, _EXACT_FIT**2 * float(weights @ equations.c) / float(equations.count.sum()))
        regrouping = self.base.regrouping[columns]
        rms_torque = np.sqrt(equations.c / np.maximum(equations.count, 1.0))
        scaling = self._scaling(regrouping, estimate, rms_torque)
        nominal_scaled = self.nominal / scaling.scale
        reduced = regrouping * scaling.scale

        # One factorisation gives the completions below and the null space.
        space = self._reduced_row_space(columns, scaling.scale, reduced)
        # χ̂_b completed by the nominal null-space component: without a prior, the solution whenever it is feasible.
        completion = nominal_scaled + space.least_squares(estimate - reduced @ nominal_scaled)
        # Checked only, the estimate needs no margin: J ⪰ 0 is what physical consistency means.
        margins = scaling.margins if search else np.zeros_like(scaling.margins)
        completion_eigenvalues = self._link_min_eigenvalues(completion)
        reproduced = self._feasible(completion, nominal_scaled, margins, completion_eigenvalues)
        if not search and not reproduced:
            raise NotSearched(
                "the unconstrained estimate is not physically consistent; the nearest consistent model was not"
                " searched for"
            )
        # The directions no data determine: the prior's pull, and who determines each link quantity (null_share).
        basis = space.null_space
        pull = self._pull(basis, reduced_model=columns.size < b)
        metric = matrix / sigma_squared
        if search and self.settings.prior_weight > 0.0:
            bodies = bool(np.all(completion_eigenvalues > 0.0))
            scaled, status = self._solve_prior(
                reduced, metric, estimate, nominal_scaled, scaling, pull, completion if bodies else None, columns
            )
            # χ̂_b itself is reproduced when the solution, moved onto it, stays consistent.
            moved = scaled + space.least_squares(estimate - reduced @ scaled)
            reproduced = reproduced or self._feasible(moved, nominal_scaled, scaling.margins)
        elif reproduced:
            scaled, status = completion, "not needed"
        else:
            scaled, status = self._solve_conic(
                reduced, _cholesky(metric), estimate, nominal_scaled, scaling.margins, pull
            )
        standard = scaled * scaling.scale
        base_values = self.base.regrouping @ standard
        fitted = base_values[columns]
        difference = fitted - estimate
        shift = float(np.sqrt(max(difference @ matrix @ difference, 0.0) / sigma_squared))
        residual = residual_norms_squared(equations, columns, fitted)
        increase = float(weights @ residual) - ssr
        total = float(np.sqrt(equations.c.sum()))
        return ConsistentEstimate(
            standard=standard,
            base_values=base_values,
            kept=columns,
            unconstrained=estimate,
            unconstrained_consistent=bool(reproduced or shift <= self.settings.shift_tolerance),
            shift_sigma=shift,
            cost_increase=increase / ssr if ssr > 0.0 else (0.0 if increase <= 0.0 else float("inf")),
            relative_error_unconstrained=solution.relative_error,
            relative_error=float(np.sqrt(residual.sum())) / total if total else 0.0,
            active=self._active(scaled, nominal_scaled, scaling.margins),
            terms=self.terms,
            solver_status=status,
            solve_time_s=time.perf_counter() - started,
            null_share=np.sqrt(np.sum(basis**2, axis=1)) if basis.size else np.zeros(scaled.size),
            prior_weight=self.settings.prior_weight,
        )

    # -- scaling and constraints -------------------------------------------------------------

    def _reduced_row_space(self, columns: np.ndarray, scale: np.ndarray, reduced: np.ndarray) -> _RowSpace:
        """:func:`_row_space` of ``reduced``, the regrouping's ``columns`` rows at ``scale``, from the cache when
        it holds them (:attr:`_row_spaces`)."""
        key = columns.tobytes() + scale.tobytes()
        space = self._row_spaces.get(key)
        if space is None:
            space = _row_space(reduced)
        _remember(self._row_spaces, key, space)
        return space

    def _structural_scales(self) -> np.ndarray:
        """``(n, 10)`` scales of the inertial parameters from the nominal masses and radii of gyration."""
        nominal = self.nominal.reshape(self.n_joints, self.terms.per_joint)[:, :_INERTIAL]
        masses = nominal[:, 0]
        positive = masses[masses > 0.0]
        fallback_mass = float(positive.mean()) if positive.size else 1.0
        scale = np.empty((self.n_joints, _INERTIAL))
        for i, phi in enumerate(nominal):
            mass = masses[i] if masses[i] > 0.0 else fallback_mass
            second_moment = float(np.trace(pseudo_inertia(phi)[:3, :3]))
            length = np.sqrt(second_moment / masses[i]) if masses[i] > 0.0 and second_moment > 0.0 else 0.0
            length = float(np.clip(length, 1e-2, 10.0)) if length > 0.0 else _DEFAULT_LENGTH_M
            scale[i] = [mass] + [mass * length] * 3 + [mass * length**2] * 6
        return scale

    def _scaling(self, regrouping: np.ndarray, estimate: np.ndarray, rms_torque: np.ndarray) -> _Scaling:
        """Structural scales per link, data-driven ones for drive terms; margins within the nominal's.

        A drive term's scale is the largest of its nominal magnitude, the base estimates
        it enters and 1 % of its joint's RMS torque (in SI units, as if at 1 rad/s; 0 for
        a joint without an equation, see ``equation_joints``), rounded up to a power of two:
        exact to scale by, and the same from one update of a sliding window to the next
        unless the estimate moves by a good part of that factor (:attr:`_row_spaces`).
        """
        n, per_joint = self.n_joints, self.terms.per_joint
        per_equation = np.asarray(rms_torque, dtype=float)
        # Joint equations map to their joints; the one scalar equation of an energy or power model applies to all.
        if self.equation_joints is not None and per_equation.shape != (1,):
            if per_equation.shape != (len(self.equation_joints),):
                raise ConsistencyError(
                    f"the equations have {per_equation.shape[0]} joints, equation_joints {len(self.equation_joints)}"
                )
            rms_torque = np.zeros(n)
            rms_torque[list(self.equation_joints)] = per_equation
        nominal = self.nominal.reshape(n, per_joint)
        contribution = np.abs(regrouping * estimate[:, None]).max(axis=0).reshape(n, per_joint)
        scale = np.empty((n, per_joint))
        scale[:, :_INERTIAL] = self._inertial_scale
        drive = np.maximum(np.abs(nominal[:, _INERTIAL:]), contribution[:, _INERTIAL:])
        drive = np.maximum(drive, _DRIVE_SCALE_FLOOR * rms_torque[:, None])
        positive = drive > 0.0
        scale[:, _INERTIAL:] = np.where(positive, np.exp2(np.ceil(np.log2(np.where(positive, drive, 1.0)))), 1.0)
        return _Scaling(scale=scale.ravel(), margins=self._margins)

    def _nominal_margins(self) -> np.ndarray:
        """``ε_i`` of ``J̃_i ⪰ ε_i 1``: the settings' margin, or half the scaled nominal link's smallest eigenvalue when
        that is smaller. The link scales are fixed, so the margins are too."""
        nominal_eigenvalues = self._link_min_eigenvalues(self.nominal / self._scale_of_nominal())
        return np.where(
            nominal_eigenvalues > 0.0,
            np.minimum(self.settings.margin, 0.5 * nominal_eigenvalues),
            self.settings.margin,
        )

    def _link_min_eigenvalues(self, scaled: np.ndarray) -> np.ndarray:
        """Smallest eigenvalue of each ``J̃(x_i − attached_i)``, scaled units."""
        return np.linalg.eigvalsh(pseudo_inertia(scaled[self._layout.links] - self._attached_scaled))[:, 0]

    def _feasible(
        self,
        scaled: np.ndarray,
        nominal_scaled: np.ndarray,
        margins: np.ndarray,
        eigenvalues: np.ndarray | None = None,
    ) -> bool:
        """Whether ``scaled`` keeps every constraint: ``J̃_i ⪰ margins_i 1`` (``eigenvalues``: its
        :meth:`_link_min_eigenvalues`, when known), the drive-term signs and the box."""
        if eigenvalues is None:
            eigenvalues = self._link_min_eigenvalues(scaled)
        if np.any(eigenvalues < margins):
            return False
        if np.any(scaled[self._layout.signed] < 0.0):
            return False
        if self.settings.box is not None:
            inertial = self._layout.inertial
            if np.any(np.abs(scaled[inertial] - nominal_scaled[inertial]) > self.settings.box):
                return False
        return True

    def _active(
        self, scaled: np.ndarray, nominal_scaled: np.ndarray, margins: np.ndarray, slack: float = 1e-6
    ) -> tuple[str, ...]:
        names = self.base.standard_names
        eigenvalues = self._link_min_eigenvalues(scaled)
        active = [f"link {i + 1} pseudo-inertia" for i in np.flatnonzero(eigenvalues <= margins + slack)]
        signed = self._layout.signed
        active += [f"{names[k]} >= 0" for k in signed[scaled[signed] <= slack]]
        if self.settings.box is not None:
            inertial = self._layout.inertial
            distance = np.abs(scaled[inertial] - nominal_scaled[inertial])
            active += [
                f"{names[k]} box" for k, d in zip(inertial, distance, strict=True) if d >= self.settings.box - slack
            ]
        return tuple(active)

    # -- the URDF prior ([Lee2020]) -------------------------------------------------------------

    def _prior(self) -> tuple[np.ndarray, np.ndarray]:
        """``(n, 4, 4)`` inverses of the prior pseudo-inertias ``J̃₀ᵢ`` and the standard vector (scaled) that has them.

        ``J̃₀ᵢ`` is the scaled pseudo-inertia of the URDF's link less its attached parts, raised to at least
        :data:`_PRIOR_FLOOR` in every direction (a point mass, a rod or a massless URDF link has a singular one)
        by adding a multiple of the identity pseudo-inertia (mass ``c``, second moment ``c 1``, i.e. ``I = 2c 1``).
        The start of the Newton iterations is the URDF with those additions: the divergence's minimum.
        """
        per_joint = self.terms.per_joint
        start = self.nominal / self._scale_of_nominal()
        own = start.reshape(self.n_joints, per_joint)[:, :_INERTIAL] - self._attached_scaled
        inverses = np.empty((self.n_joints, 4, 4))
        identity = np.zeros(_INERTIAL)
        identity[[0, 4, 6, 9]] = [1.0, 2.0, 2.0, 2.0]
        for i, phi in enumerate(own):
            lowest = float(np.linalg.eigvalsh(pseudo_inertia(phi))[0])
            raise_by = max(_PRIOR_FLOOR - lowest, 0.0)
            start[i * per_joint : i * per_joint + _INERTIAL] += raise_by * identity
            inverses[i] = np.linalg.inv(pseudo_inertia(phi + raise_by * identity))
        return inverses, start

    def _scale_of_nominal(self) -> np.ndarray:
        """The scales of :meth:`_scaling` for the inertial parameters, 1 for the drive terms (scaled per solve)."""
        scale = np.ones((self.n_joints, self.terms.per_joint))
        scale[:, :_INERTIAL] = self._inertial_scale
        return scale.ravel()

    def _solve_prior(
        self,
        reduced: np.ndarray,
        metric: np.ndarray,
        estimate: np.ndarray,
        nominal_scaled: np.ndarray,
        scaling: _Scaling,
        pull: _Pull,
        completion: np.ndarray | None,
        kept: np.ndarray,
    ) -> tuple[np.ndarray, str]:
        """The fit plus ``γ`` times the log-det divergence to the URDF (module docstring, "Prior"), constrained.

        Newton's method from the best (the lowest objective) of the URDF, ``completion`` (the unconstrained
        estimate completed by the URDF's null-space part; ``None`` when its links are not bodies), this estimator's
        last solution (a sliding window's previous update: a few steps from the next optimum,
        which is unique, so the start changes the time, and the result within the tolerance of
        :data:`_NEWTON_TOLERANCE`, only) and its last solution with the same
        ``kept`` base parameters (:data:`_KEPT_SETS_REMEMBERED` of them): a window whose reduction
        keeps another set than the update before it has an optimum far from that update's in the
        directions the newly kept parameters see, and the reduction of a process that repeats
        alternates between a few sets; should it stall (the
        barrier cuts every step when the start is far from the minimum in the fit's metric: a
        weak prior, or noise-free data), it follows the path of the minimum from a prior as
        strong as the fit at the start down to ``γ`` by factors of :data:`_PATH_FACTOR`, each solve starting from
        the last. When Newton stalls anyway, or its optimum breaks a margin or the box, the
        conic problem with the same objective decides (when it keeps every constraint it is the
        constrained optimum: the problem is convex).
        """
        margins = scaling.margins
        objective = replace(
            self._prior_objective(reduced, metric, estimate, nominal_scaled, pull), weight=self.settings.prior_weight
        )
        start = self._prior_start.copy()
        drive = self._layout.drive
        start[drive] = nominal_scaled[drive]
        candidates = [start]
        if completion is not None:
            completed = completion.copy()
            completed[self._layout.signed] = np.maximum(completed[self._layout.signed], 0.0)
            candidates.append(completed)
        key = kept.tobytes()
        last = next(reversed(self._prior_solutions.values()), None)
        same_kept = self._prior_solutions.get(key)
        # The last solution is usually the one with the same kept set too: one start, evaluated once.
        for solution in (last, None if same_kept is last else same_kept):
            if solution is not None and solution.shape == scaling.scale.shape:
                candidates.append(solution / scaling.scale)
        start = _lowest(objective, candidates)
        scaled = self._newton(objective, start)
        if scaled is None:
            scaled = self._newton_path(objective, start)
        if scaled is not None and self._feasible(scaled, nominal_scaled, margins):
            status = "newton"
        else:
            scaled, status = self._solve_conic(
                reduced, _cholesky(metric), estimate, nominal_scaled, margins, pull, weight=objective.weight
            )
        _remember(self._prior_solutions, key, scaled * scaling.scale)
        return scaled, status

    def _newton_path(self, objective: _PriorObjective, start: np.ndarray) -> np.ndarray | None:
        """:meth:`_newton` of ``objective`` reached through stronger priors, from one as strong as the fit at
        ``start`` down by factors of :data:`_PATH_FACTOR`."""
        strongest = max(_PATH_FACTOR * objective.weight, objective.fit_value(start))
        steps = int(np.ceil(np.log(strongest / objective.weight) / np.log(_PATH_FACTOR)))
        for weight in objective.weight * _PATH_FACTOR ** np.arange(steps, 0, -1):
            point = self._newton(replace(objective, weight=float(weight)), start)
            if point is None:
                return None
            start = point
        return self._newton(objective, start)

    def _unseen_inertial_directions(self) -> np.ndarray:
        """An orthonormal basis ``(p, m)`` of the scaled unknowns' directions that no base parameter sees and that
        hold inertial parameters alone: the null space of every base column (kept or not) with the drive terms
        held at zero. It depends on the link scales only, which are fixed."""
        inertial = self._layout.inertial
        unseen = scipy.linalg.null_space(self.base.regrouping[:, inertial] * self._scale_of_nominal()[inertial])
        directions = np.zeros((self.nominal.size, unseen.shape[1]))
        directions[inertial] = unseen
        return directions

    def _pull(self, basis: np.ndarray, *, reduced_model: bool) -> _Pull:
        """``P`` of the pull ``‖P (x − x_nom)‖²`` toward the URDF's values along the directions no data determine.

        ``√λ Nᵀ`` (``N`` = ``basis``, an orthonormal basis of the kept columns' null space; ``λ`` =
        ``regularization``), and with the prior ``√(λ_p − λ) N_iᵀ`` more, ``N_i`` the directions that no base
        parameter sees and that hold inertial parameters alone (:meth:`_unseen_inertial_directions`: a link's
        mass that enters only regrouped combinations). Both depend on ``x`` through its null-space part only, so
        the fit is untouched. The log-det divergence alone would complete a link from its identified part: where
        that part is off the URDF (model errors of real data) it moved a mass the data do not see with it
        (``bench/bench_prior.py``). The drive terms get ``λ``
        only: their nominal values (none in a URDF: no rotor inertia) are no prior, and a rotor inertia
        regrouped with its link's ``ZZ`` must follow the link. A ``reduced_model`` (base parameters left out
        by a model reduction, as the sliding window's) gets ``λ`` only too: its kept parameters take over what
        the left-out ones would explain, so its identified links are not the robot's, and completing them with
        the URDF's unseen values can leave no body near the fit, which then moves far from the data (the
        consistent estimate's shift that ``bench/bench_stream.py`` prints); the divergence completes them alone.
        """
        null_space = np.sqrt(self.settings.regularization) * basis.T
        extra = self.settings.prior_pull - self.settings.regularization
        if self.settings.prior_weight > 0.0 and extra > 0.0 and self._unseen_inertial.size and not reduced_model:
            return _Pull(np.vstack([null_space, np.sqrt(extra) * self._unseen_inertial.T]), null_space_only=False)
        return _Pull(null_space, null_space_only=True)

    def _prior_objective(
        self,
        reduced: np.ndarray,
        metric: np.ndarray,
        estimate: np.ndarray,
        nominal_scaled: np.ndarray,
        pull: _Pull,
    ) -> _PriorObjective:
        """:class:`_PriorObjective` of these data, of weight ``prior_weight`` (replaced per ``γ``)."""
        fit = np.sqrt(2.0) * _cholesky(metric)
        return _PriorObjective(
            fit=fit @ reduced,
            fit_target=fit @ estimate,
            pull=np.sqrt(2.0) * pull.matrix,
            pull_target=np.sqrt(2.0) * (pull.matrix @ nominal_scaled),
            weight=self.settings.prior_weight,
            prior_inverse=self._prior_inverse,
            attached=self._attached_scaled,
            links=self._layout.links,
        )

    def _newton(self, objective: _PriorObjective, start: np.ndarray) -> np.ndarray | None:
        """The minimum of ``objective`` with ``Ia, Fv, Fc ≥ 0`` by Newton steps from ``start``; ``None`` if stalled.

        The signs are bounds on single unknowns that no pseudo-inertia involves, so they are
        kept by an active set: the unknowns that come out negative are held at 0, and released
        again when the gradient says the objective would fall by raising them (its KKT
        multiplier is negative), until neither happens.
        """
        signed = self._layout.signed
        x = start.copy()
        held = np.zeros(x.size, dtype=bool)
        held[signed] = x[signed] <= 0.0
        x[held] = 0.0
        for _ in range(2 * signed.size + 2):
            minimum = objective.minimise(x, held)
            if minimum is None:
                return None
            x = minimum
            gradient = objective.gradient(x)
            negative = signed[~held[signed] & (x[signed] < 0.0)]
            release = signed[held[signed] & (gradient[signed] < -1e-9 * max(1.0, float(np.abs(gradient).max())))]
            if not negative.size and not release.size:
                return x
            held[negative], x[negative] = True, 0.0
            held[release] = False
        return None

    # -- conic problem ------------------------------------------------------------------------

    def _compile(self, kept: int, pulled: int, margins: np.ndarray, *, folded: bool = False) -> _Problem:
        """The conic problem for ``kept`` rows of the fit and ``pulled`` rows of the pull.

        Fit ``‖R (K x − χ̂)‖²``, the null-space pull ``‖P (x − x_nom)‖²`` (:meth:`_pull`), and with a prior
        ``γ Σᵢ (tr(J̃₀ᵢ⁻¹ J̃ᵢ(x)) − log det J̃ᵢ(x))`` ([Lee2020]; Clarabel's exponential and PSD cones);
        subject to ``J̃ᵢ(x) ⪰ εᵢ 1``, the drive-term signs and the optional box. The data enter as
        cvxpy parameters (DPP), so the problem is compiled once per ``(kept, pulled, folded)``.

        ``folded`` (the pull ``λ ‖Nᵀ(x − x_nom)‖²`` alone): the fit and pull written as
        ``‖F x − e‖² + λ ‖x‖² − 2 λ x_nomᵀ x`` (:meth:`_folded`), the same
        function up to a constant, whose conic form has ``kept`` auxiliary variables and equalities instead of
        ``p`` (the problem of the shipped arm: 110 × 104 instead of 168 × 162, half the solve time).
        """
        import cvxpy as cp

        p = len(self.base.standard_names)
        x = cp.Variable(p)
        data_matrix = cp.Parameter((kept, p))
        data_vector = cp.Parameter(kept)
        objective = cp.sum_squares(data_matrix @ x - data_vector)
        pull = pull_target = nominal = None
        if folded:
            # ‖x‖² of the variable itself is a quadratic objective without auxiliary variables.
            regularization = self.settings.regularization
            nominal = cp.Parameter(p)
            objective = objective + regularization * cp.sum_squares(x) - 2.0 * regularization * (nominal @ x)
        elif pulled:
            pull, pull_target = cp.Parameter((pulled, p)), cp.Parameter(pulled)
            objective = objective + cp.sum_squares(pull @ x - pull_target)
        per_joint = self.terms.per_joint
        entries = _BASIS.reshape(_INERTIAL, 16).T  # (16, 10): row-major entries of J
        constraints: list[cp.Constraint] = []
        floor = pseudo_inertia(self._attached_scaled)
        weight = cp.Parameter(nonneg=True) if self.settings.prior_weight > 0.0 else None
        for i in range(self.n_joints):
            own = cp.reshape(entries @ x[i * per_joint : i * per_joint + _INERTIAL], (4, 4), order="C") - floor[i]
            constraints.append(own - margins[i] * np.eye(4) >> 0)
            if weight is not None:
                objective = objective + weight * (cp.trace(self._prior_inverse[i] @ own) - cp.log_det(own))
        signed = self._layout.signed
        if signed.size:
            constraints.append(x[signed] >= 0.0)
        lower = upper = None
        if self.settings.box is not None:
            inertial = self._layout.inertial
            lower, upper = cp.Parameter(inertial.size), cp.Parameter(inertial.size)
            constraints += [x[inertial] >= lower, x[inertial] <= upper]
        problem = cp.Problem(cp.Minimize(objective), constraints)
        return _Problem(
            problem, x, data_matrix, data_vector, pull, pull_target, lower, upper, nominal=nominal, weight=weight
        )

    def _folded(
        self, reduced: np.ndarray, whitened: np.ndarray, estimate: np.ndarray, nominal_scaled: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """``(F, e)`` of the folded objective, or ``None`` when it does not exist.

        With ``reduced = Cᵀ Qᵀ`` (``Q`` an orthonormal basis of its rows, ``NNᵀ = 1 − QQᵀ``) and
        ``G = R Cᵀ`` (``R`` = ``whitened``), the objective ``‖R (reduced x − χ̂)‖² + λ ‖Nᵀ (x − x_nom)‖²``
        is, up to a constant, ``‖L Qᵀ x − e‖² + λ ‖x‖² − 2 λ x_nomᵀ x`` with ``LᵀL = GᵀG − λ 1`` and
        ``Lᵀ e = Gᵀ R χ̂ − λ Qᵀ x_nom``: the null-space pull becomes a pull in every direction minus the one
        of the fitted directions, which the fit absorbs. ``L`` exists when the data determine every
        fitted direction to better than ``1/√λ`` parameter scales (``GᵀG ≻ λ``, with a margin of 1e-3 λ);
        otherwise (a kept parameter the data hardly determine, dependent rows) the null-space form is solved.
        """
        regularization = self.settings.regularization
        basis, triangle = scipy.linalg.qr(reduced.T, mode="economic")
        fit = whitened @ triangle.T
        folded = fit.T @ fit - regularization * np.eye(fit.shape[1])
        if np.linalg.eigvalsh(folded)[0] <= 1e-3 * regularization:
            return None
        factor = scipy.linalg.cholesky(folded, lower=False)
        target = scipy.linalg.solve_triangular(
            factor, fit.T @ (whitened @ estimate) - regularization * (basis.T @ nominal_scaled), trans="T"
        )
        return factor @ basis.T, target

    def _solve_conic(
        self,
        reduced: np.ndarray,
        whitened: np.ndarray,
        estimate: np.ndarray,
        nominal_scaled: np.ndarray,
        margins: np.ndarray,
        pull: _Pull,
        *,
        weight: float = 0.0,
    ) -> tuple[np.ndarray, str]:
        """The conic problem of :meth:`_compile` for these data, ``pull`` and prior weight ``weight``, with its
        cvxpy status; folded when the pull is the null space's alone."""
        import cvxpy as cp

        kept = reduced.shape[0]
        folded = self._folded(reduced, whitened, estimate, nominal_scaled) if pull.null_space_only else None
        if folded is not None:
            # Rows of zeros up to every base parameter: one problem, compiled once (0.3-0.4 s for a 7-axis arm),
            # serves every kept set of a sliding window's reduction.
            rows = self.base.count
            key = (rows, 0, True)
            if key not in self._problems:
                self._problems[key] = self._compile(rows, 0, margins, folded=True)
            compiled = self._problems[key]
            matrix, vector = np.zeros((rows, reduced.shape[1])), np.zeros(rows)
            matrix[:kept], vector[:kept] = folded
            compiled.data_matrix.value, compiled.data_vector.value = matrix, vector
            if compiled.nominal is not None:
                compiled.nominal.value = nominal_scaled
        else:
            key = (kept, pull.matrix.shape[0], False)
            if key not in self._problems:
                self._problems[key] = self._compile(kept, pull.matrix.shape[0], margins)
            compiled = self._problems[key]
            compiled.data_matrix.value = whitened @ reduced
            compiled.data_vector.value = whitened @ estimate
            if compiled.pull is not None and compiled.pull_target is not None:
                compiled.pull.value = pull.matrix
                compiled.pull_target.value = pull.matrix @ nominal_scaled
        if compiled.weight is not None:
            compiled.weight.value = weight
        if compiled.lower is not None and compiled.upper is not None and self.settings.box is not None:
            inertial = self._layout.inertial
            compiled.lower.value = nominal_scaled[inertial] - self.settings.box
            compiled.upper.value = nominal_scaled[inertial] + self.settings.box
        try:
            with warnings.catch_warnings():
                # "Solution may be inaccurate": the status is checked and reported below.
                warnings.filterwarnings("ignore", message="Solution may be inaccurate", category=UserWarning)
                compiled.problem.solve(
                    solver=cp.CLARABEL,
                    max_iter=self.settings.max_iterations,
                    tol_gap_abs=_GAP_TOLERANCE,
                    tol_gap_rel=_GAP_TOLERANCE,
                    # Single-threaded: Clarabel's multi-threaded faer backend, which it picks
                    # for the Panda-sized problem, was no faster and stalls beside the nodes.
                    direct_solve_method="qdldl",
                )
        except cp.SolverError as error:
            raise ConsistencyError(f"Clarabel failed on the consistent estimate: {error}") from error
        status = str(compiled.problem.status)
        if status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
            raise ConsistencyError(
                f"no physically consistent parameters within box={self.settings.box} of the nominal ones"
            )
        if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or compiled.x.value is None:
            raise ConsistencyError(f"Clarabel did not solve the consistent estimate: status {status}")
        scaled = np.array(compiled.x.value, dtype=float)
        signed = self._layout.signed
        scaled[signed] = np.maximum(scaled[signed], 0.0)  # interior-point round-off below zero
        worst = self._link_min_eigenvalues(scaled)
        if np.any(worst < 0.0):
            raise ConsistencyError(
                f"Clarabel's {status} solution is not consistent: scaled pseudo-inertia eigenvalues {worst.tolist()}"
            )
        return scaled, status


def _remember(store: dict[bytes, _Remembered], key: bytes, value: _Remembered) -> None:
    """``store[key] = value`` as its most recently used entry, the least recently used one forgotten beyond
    :data:`_KEPT_SETS_REMEMBERED` (a dict keeps its keys in insertion order)."""
    store.pop(key, None)
    store[key] = value
    if len(store) > _KEPT_SETS_REMEMBERED:
        del store[next(iter(store))]


def _final_step_gap(decrement: float, weight: float) -> float:
    """Bound on ``f − f*`` after a full Newton step from ``decrement`` (σ²) of an objective with prior weight
    ``weight`` (:data:`_FINAL_STEP_GAP`); infinite outside the region where the bound holds (``λ⁺ > ½``)."""
    if weight <= 0.0:
        return float("inf")
    newton = float(np.sqrt(max(decrement, 0.0) / weight))
    after = (newton / (1.0 - newton)) ** 2 if newton < 1.0 else float("inf")
    return weight * after**2 if after <= 0.5 else float("inf")


def _lowest(objective: _PriorObjective, points: Sequence[np.ndarray]) -> np.ndarray:
    """The first of ``points`` where ``objective`` is lowest, each evaluated once (outside its domain: infinite)."""
    values = [objective.value(point) for point in points]
    return points[int(np.argmin([np.inf if value is None else value for value in values]))]


def _upper_solve(triangle: np.ndarray, right: np.ndarray, *, transposed: bool = False) -> np.ndarray:
    """``triangle⁻¹ right`` (``transposed``: ``triangle⁻ᵀ right``) for an upper-triangular ``triangle`` (only its
    upper triangle is read).

    LAPACK's ``trtrs`` directly: ``scipy.linalg.solve_triangular``'s checks cost several times the solve of a
    Newton step's triangle.
    """
    solution, info = scipy.linalg.lapack.dtrtrs(triangle, right, trans=int(transposed))
    if info:
        raise np.linalg.LinAlgError(f"singular triangle: zero diagonal entry {info}")
    return solution


def _cholesky(matrix: np.ndarray) -> np.ndarray:
    """Upper ``R`` with ``RᵀR = matrix`` (symmetric positive definite), computed on the unit-diagonal scaling."""
    diagonal = np.sqrt(np.diag(matrix))
    try:
        factor = scipy.linalg.cholesky(matrix / diagonal[:, None] / diagonal[None, :], lower=False)
    except np.linalg.LinAlgError as error:
        raise ConsistencyError(
            "the weighted normal matrix of the kept base parameters is not positive definite"
        ) from error
    return factor * diagonal[None, :]


def consistent_estimate(
    equations: NormalEquations,
    joint_std: np.ndarray,
    base: BaseParameters,
    terms: DriveTerms,
    nominal: np.ndarray,
    *,
    kept: Sequence[int] | np.ndarray | None = None,
    settings: ConsistencySettings | None = None,
    attached: np.ndarray | None = None,
) -> ConsistentEstimate:
    """Physically consistent WLS estimate of the standard parameters ([Wensing2018], [Gautier2013] eq. (20)).

    One-shot form of :meth:`ConsistentEstimator.solve`; see the module docstring for
    the problem solved.

    Parameters
    ----------
    equations
        Per-joint normal equations over all base columns, e.g.
        ``NormalEquations.from_rows(obs.observation_matrix, obs.torques, obs.valid)``.
    joint_std
        ``σ_j`` per joint, N·m (``IdentificationResult.estimate.joint_std``).
    base
        Base parameters (regrouping ``K``).
    terms
        Drive-chain terms of the model.
    nominal
        Nominal standard parameters ``(p,)`` (URDF inertias, drive prior).
    kept
        Indices of the fitted base parameters; all by default.
    settings
        :class:`ConsistencySettings`.
    attached
        Known parts of each body, see :class:`ConsistentEstimator`.
    """
    estimator = ConsistentEstimator(base, terms, nominal, settings or ConsistencySettings(), attached)
    return estimator.solve(equations, joint_std, kept)


def mechanism_estimator(
    dynamic_model: DynamicModel,
    *,
    settings: ConsistencySettings | None = None,
    attached: np.ndarray | None = None,
) -> ConsistentEstimator:
    """The physically consistent estimator ([Wensing2018]) of a model's base parameters.

    Every link of its tree (a closed-loop robot's opened tree, [Briot2012] §2) is a body whose
    pseudo-inertia must be positive definite, the controlled joints' ``Ia, Fv, Fc`` non-negative;
    the URDF's inertias are the prior of the directions no data determine, a closed-loop robot's
    passive joints' drive terms (in no equation) 0. Its estimate's ``standard`` has the tree's layout
    (:func:`~dynamic_identification.core.mechanism.seam.tree_standard`); ``base_values`` are those of the model's
    base parameters.
    """
    mechanism, terms = dynamic_model.mechanism, dynamic_model.terms
    return ConsistentEstimator(
        dynamic_model.tree_base_parameters(),
        terms,
        standard_parameters(mechanism.robot, terms),
        settings=settings or ConsistencySettings(),
        attached=attached,
        equation_joints=tuple(int(j) for j in mechanism.actuated) if mechanism.closures else None,
    )
