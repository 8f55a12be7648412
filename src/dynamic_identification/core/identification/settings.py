"""Settings of identification: signal processing and estimation, validated once.

The choices are those of [Gautier2013] §IV.A (band-pass derivative, parallel decimation,
OLS or per-joint WLS, essential parameters) and [Volkmann2020] §III.D (sensitivity
reduction, friction forced essential when every joint moves enough).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.signal import DEFAULT_GAP_FACTOR

METHODS: tuple[str, ...] = ("ols", "wls")
"""Least-squares methods: ordinary, or weighted per joint ([Gautier2013] eq. (20))."""

REDUCTIONS: tuple[str, ...] = ("sensitivity", "essential", "none")
"""Model reductions: [Volkmann2020] Algorithm 1, [Gautier2013] §V.B essential parameters, or the rank check only."""

UNCERTAINTIES: tuple[str, ...] = ("hac", "white")
"""How σ and %σ are computed: autocorrelation-consistent (Newey & West 1987, Andrews 1991, Kiefer & Vogelsang 2005;
:mod:`~dynamic_identification.core.estimation.uncertainty`) or as if the residuals were white ([Gautier2013]
eq. (17)-(18))."""

AUTO_CUTOFF_HZ = 0.0
"""``position_cutoff_hz`` that asks for a cut-off chosen from the data's spectrum."""

VELOCITY_SOURCES: tuple[str, ...] = ("auto", "measured", "differentiated")
"""Where joint velocities come from: decided from the data, the recorded ones, or the differentiated positions."""

STAMP_SOURCES: tuple[str, ...] = ("auto", "recorded", "recovered")
"""How sample instants are taken: decided from the data, the recorded stamps as they are, or recovered from the
sample order (jittered, quantised or bunched stamps)."""


@dataclass(frozen=True)
class SignalSettings:
    """Signal-processing choices ([Gautier2013] §IV.A).

    Attributes
    ----------
    position_cutoff_hz
        Cut-off of the zero-phase Butterworth low-pass applied to positions before
        differentiation, Hz. It must lie well above the motion's bandwidth (a few
        Hz for excitation and process trajectories) and below the encoder and
        torque noise; :data:`AUTO_CUTOFF_HZ` (0, the default) chooses it from the data
        (:func:`~dynamic_identification.core.identification.motion.resolve_signal`);
        ``None`` skips the filter.
    decimation
        Parallel-decimation factor ``n_d``; 0 chooses
        :func:`~dynamic_identification.core.signal.default_decimation`.
    rate_hz
        Uniform resampling rate, Hz; ``None`` uses the recording's median rate.
    velocity
        ``"measured"``: the recorded velocities (filtered like positions);
        ``"differentiated"``: the derivative of the filtered positions; ``"auto"`` (the
        default): the recorded ones when the recording has them and they agree with the
        differentiated positions, else the derivative.
    stamps
        ``"recorded"``: the stamps as they are; ``"recovered"``: the sample instants
        recovered from the sample order (a median-filtered fit of stamp against sample
        index: quantised, jittered and bunched stamps of a driver, real gaps kept);
        ``"auto"`` (the default): recovered when the stamps jitter by more than 1 % of a
        period, else recorded.
    gap_factor
        A stamp step longer than this many nominal periods is a gap: the recording is
        split there into segments that are filtered apart (offline) and the sliding
        window restarts its grid there (in-process). Never interpolated across. > 1.
    min_speed_rad_s
        Equations of a joint whose motor speed drops below this (rad/s, joint side)
        within the decimation filter's support are left out when the
        model has Coulomb friction: near a velocity reversal the joint sticks and
        ``Fc sign(q̇)`` does not describe its friction. 0 keeps every equation.
    """

    position_cutoff_hz: float | None = AUTO_CUTOFF_HZ
    decimation: int = 0
    rate_hz: float | None = None
    velocity: str = "auto"
    stamps: str = "auto"
    gap_factor: float = DEFAULT_GAP_FACTOR
    min_speed_rad_s: float = 0.05

    def __post_init__(self) -> None:
        if not (np.isfinite(self.gap_factor) and self.gap_factor > 1.0):
            raise IdentificationError(f"gap_factor must be finite and > 1, got {self.gap_factor}")
        if self.velocity not in VELOCITY_SOURCES:
            raise IdentificationError(f"velocity must be one of {', '.join(VELOCITY_SOURCES)}, got {self.velocity!r}")
        if self.stamps not in STAMP_SOURCES:
            raise IdentificationError(f"stamps must be one of {', '.join(STAMP_SOURCES)}, got {self.stamps!r}")
        cutoff = self.position_cutoff_hz
        if cutoff is not None and not (np.isfinite(cutoff) and cutoff >= 0.0):
            raise IdentificationError(f"position_cutoff_hz must be finite and >= 0 (0: auto), got {cutoff}")

    @property
    def resolved(self) -> bool:
        """Whether every choice is made (no ``auto`` left): what a parameter file stores."""
        return self.position_cutoff_hz != AUTO_CUTOFF_HZ and self.velocity != "auto" and self.stamps != "auto"


@dataclass(frozen=True)
class IdentificationSettings:
    """How to estimate: method, model reduction and data requirements.

    Attributes
    ----------
    signal
        Signal processing.
    method
        One of :data:`METHODS`.
    reduction
        One of :data:`REDUCTIONS`.
    r_sigma
        Essential parameters: stop when ``max %σ / min %σ < r_sigma`` ([Gautier2013] §V.B).
    e_tol
        Sensitivity reduction: allowed relative growth of each joint's error ([Volkmann2020] Algorithm 1).
    friction_motion_rad
        When every joint travels at least this far, rad, the friction parameters are
        forced essential ([Volkmann2020] §III.D), for the sensitivity and essential reductions.
    min_samples
        Fewest recorded samples to identify from.
    min_motion_rad
        Some joint must travel this far, rad, or the robot is standing still.
    block_samples
        Samples per block when building observation matrices (memory bound).
    uncertainty
        One of :data:`UNCERTAINTIES`: how the published σ, covariance and %σ
        ([Gautier2013] eq. (19)) of the final estimate are computed. ``"hac"`` (the
        default) accounts for the correlation in time of the residuals of filtered,
        decimated rows (Newey & West 1987 with Andrews' 1991 bandwidth and the fixed-b
        widening of Kiefer & Vogelsang 2005), so ``χ̂ ± 2σ`` holds the truth about 95 % of
        the time; ``"white"`` is eq. (17)-(18), which assumes independent residuals and
        is several times too small on such data. The model reduction uses eq. (18)
        either way (:func:`~dynamic_identification.core.identification.solve.identify_observations`).
    """

    signal: SignalSettings = field(default_factory=SignalSettings)
    method: str = "wls"
    reduction: str = "none"
    r_sigma: float = 20.0
    e_tol: float = 0.05
    friction_motion_rad: float = 0.1
    min_samples: int = 200
    min_motion_rad: float = 0.01
    block_samples: int = 10_000
    uncertainty: str = "hac"

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise IdentificationError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.uncertainty not in UNCERTAINTIES:
            raise IdentificationError(
                f"uncertainty must be one of {', '.join(UNCERTAINTIES)}, got {self.uncertainty!r}"
            )
        if self.reduction not in REDUCTIONS:
            raise IdentificationError(f"reduction must be one of {', '.join(REDUCTIONS)}, got {self.reduction!r}")


__all__ = [
    "AUTO_CUTOFF_HZ",
    "DEFAULT_GAP_FACTOR",
    "METHODS",
    "REDUCTIONS",
    "STAMP_SOURCES",
    "UNCERTAINTIES",
    "VELOCITY_SOURCES",
    "IdentificationSettings",
    "SignalSettings",
]
