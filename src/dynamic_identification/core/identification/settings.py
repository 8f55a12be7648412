"""Settings of identification: signal processing and estimation, validated once.

The choices are those of [Gautier2013] §IV.A (band-pass derivative, parallel decimation,
OLS or per-joint WLS, essential parameters) and [Volkmann2020] §III.D (sensitivity
reduction, friction forced essential when every joint moves enough).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from dynamic_identification.core.errors import IdentificationError
from dynamic_identification.core.settings_schema import (
    AUTO_CUTOFF_HZ,
    METHODS,
    REDUCTIONS,
    REGRESSOR_SAMPLES,
    STAMP_SOURCES,
    UNCERTAINTIES,
    VELOCITY_SOURCES,
    check_fields,
    nested_field,
    setting_field,
)
from dynamic_identification.core.signal.filters import DEFAULT_GAP_FACTOR


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
        :func:`~dynamic_identification.core.signal.filters.default_decimation`.
    rate_hz
        Uniform resampling rate, Hz; 0 or ``None`` uses the recording's median rate.
    velocity
        ``"measured"``: the recorded velocities (filtered like positions);
        ``"differentiated"``: the derivative of the filtered positions; ``"auto"`` (the
        default): the recorded ones when the recording has them and they agree with the
        differentiated positions, else the derivative.
    torque_delay
        ``"auto"`` (the default): the torques' delay behind the positions is measured by the IDIM fit and the
        torques aligned when the data say so
        (:mod:`~dynamic_identification.core.identification.torque_delay`; the sliding window measures it on its first
        :data:`~dynamic_identification.core.identification.torque_delay.MEASURED_DATA_S` of rows); ``"none"``: as
        recorded.
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
    regressor_samples
        Where offline identification evaluates the observation matrix ``W``:
        ``"decimated"`` (the default) at the decimated instants only, on the low-passed
        motion; ``"all"`` at every sample, then low-passed and decimated like the torques
        ([Gautier2013] eq. (13)-(14)). The position filter's cut-off lies below the
        decimation filter's passband, so ``W`` of the filtered motion is band-limited
        and the two agree to the passband ripple, while ``"decimated"`` evaluates the
        regressor on one sample in ``decimation``. The estimator's window always
        evaluates it at the decimated instants.
    """

    position_cutoff_hz: float | None = setting_field("signal.position_cutoff_hz")
    decimation: int = setting_field("signal.decimation")
    rate_hz: float | None = setting_field("signal.rate_hz")
    velocity: str = setting_field("signal.velocity")
    torque_delay: str = setting_field("signal.torque_delay")
    stamps: str = setting_field("signal.stamps")
    gap_factor: float = setting_field("signal.gap_factor")
    min_speed_rad_s: float = setting_field("signal.min_speed_rad_s")
    regressor_samples: str = setting_field("signal.regressor_samples")

    def __post_init__(self) -> None:
        check_fields(self)  # the schema's bounds and choices: cut-off >= 0 (0: automatic), gap_factor > 1, …

    @property
    def resolved(self) -> bool:
        """Whether every choice is made (no ``auto`` left): what a parameter file stores."""
        return self.position_cutoff_hz != AUTO_CUTOFF_HZ and self.velocity != "auto" and self.stamps != "auto"


@dataclass(frozen=True)
class ReductionSettings:
    """Which parameters are kept and how sure the published estimate is: offline and in the window alike.

    Read from the ``estimation.*`` settings, the method offline from ``estimation.reduction``
    (default ``none``) and in the window from ``window.reduction`` (default ``sensitivity``:
    :class:`~dynamic_identification.core.identification.in_process.WindowSettings` nests it so).

    Attributes
    ----------
    method
        One of :data:`REDUCTIONS`: ``sensitivity`` ([Volkmann2020] Algorithm 1), ``essential``
        ([Gautier2013] §V.B) or ``none``.
    e_tol
        Sensitivity reduction: allowed relative growth of each joint's error ([Volkmann2020] Algorithm 1).
    r_sigma
        Essential parameters: stop when ``max %σ / min %σ < r_sigma`` ([Gautier2013] §V.B).
    friction_motion_rad
        When every joint travels at least this far, rad, the friction parameters are
        forced essential ([Volkmann2020] §III.D), for the sensitivity and essential reductions.
    uncertainty
        One of :data:`UNCERTAINTIES`: how the published σ, covariance and %σ
        ([Gautier2013] eq. (19)) of the final estimate are computed. ``"hac"`` (the
        default) accounts for the correlation in time of the residuals of filtered,
        decimated rows (Newey & West 1987 with Andrews' 1991 bandwidth and the fixed-b
        widening of Kiefer & Vogelsang 2005), so ``χ̂ ± 2σ`` holds the truth about 95 % of
        the time; ``"white"`` is eq. (17)-(18), which assumes independent residuals and
        is several times too small on such data. The reduction uses eq. (18)
        either way (:func:`~dynamic_identification.core.identification.solve.identify_observations`).
    """

    method: str = setting_field("estimation.reduction")
    e_tol: float = setting_field("estimation.e_tol")
    r_sigma: float = setting_field("estimation.r_sigma")
    friction_motion_rad: float = setting_field("window.friction_motion_rad")
    uncertainty: str = setting_field("estimation.uncertainty")

    def __post_init__(self) -> None:
        try:
            check_fields(self)
        except IdentificationError as error:
            raise IdentificationError(f"reduction {error}") from error


def settings_record(settings: Any) -> dict[str, Any]:
    """``dataclasses.asdict(settings)`` with its :class:`ReductionSettings` flat, as parameter files store them:
    ``reduction`` the method, ``e_tol``, ``r_sigma``, ``friction_motion_rad`` and ``uncertainty`` beside it.

    ``settings`` is an :class:`IdentificationSettings` or a
    :class:`~dynamic_identification.core.identification.in_process.WindowSettings`.
    """
    flat = dataclasses.asdict(settings.reduction)
    flat["reduction"] = flat.pop("method")
    record: dict[str, Any] = {}
    for key, value in dataclasses.asdict(settings).items():
        record.update({"reduction": flat.pop("reduction"), **flat} if key == "reduction" else {key: value})
    return record


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
        Model reduction and the published uncertainty (``estimation.reduction``, ``e_tol``, …).
    min_samples
        Fewest recorded samples to identify from.
    min_motion_rad
        Some joint must travel this far, rad, or the robot is standing still.
    block_samples
        Samples per block when building observation matrices (memory bound).
    joint_error_warning
        A joint whose relative error e*_j ([Volkmann2020] eq. (12)) on its equations exceeds
        this is warned about: the model does not predict it (a fraction, not percent).
    """

    signal: SignalSettings = field(default_factory=SignalSettings)
    method: str = setting_field("estimation.method")
    reduction: ReductionSettings = nested_field(ReductionSettings)
    min_samples: int = setting_field("estimation.min_samples")
    joint_error_warning: float = setting_field("estimation.joint_error_warning")
    min_motion_rad: float = 0.01
    block_samples: int = 10_000

    def __post_init__(self) -> None:
        check_fields(self)


__all__ = [
    "AUTO_CUTOFF_HZ",
    "DEFAULT_GAP_FACTOR",
    "METHODS",
    "REDUCTIONS",
    "REGRESSOR_SAMPLES",
    "STAMP_SOURCES",
    "UNCERTAINTIES",
    "VELOCITY_SOURCES",
    "IdentificationSettings",
    "ReductionSettings",
    "SignalSettings",
    "settings_record",
]
