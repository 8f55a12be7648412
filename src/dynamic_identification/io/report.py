"""HTML identification report (``dynid identify --report DIR``).

:func:`write_report` writes ``index.html`` and the PNG figures it shows into one
directory. The page is self-contained: no external CSS, scripts or fonts, and every
image is a PNG file beside ``index.html``, referenced by a relative link, so the
directory can be copied, zipped or served as it is. It shows

* the identified parameters with their relative standard deviation ``%σ``
  ([Gautier2013] eq. (19)), coloured when ``%σ`` exceeds :data:`HIGH_STD_PERCENT` or
  the parameter is not identifiable, and the removed parameters with the reason;
* the quality figures: condition number, ``‖ρ‖/‖Y‖``, per-joint ``e_j`` and ``e*_j``
  ([Volkmann2020] eq. (11)-(12)) of the estimate and of every data set;
* measured against predicted joint torques for each data set (training, validation),
  one panel per joint with the residual below it;
* amplitude spectral densities of the residuals (Welch's method, :func:`scipy.signal.welch`);
* how much of each joint's position range and velocity limit each data set covered;
* physical consistency, plausibility, warnings and the settings used.

The module depends on no identification type: the caller fills the plain dataclasses
:class:`ReportData`, :class:`DataSeries`, :class:`ParameterRow`, :class:`Quality`,
:class:`Consistency`, :class:`LinkStatus` and :class:`Plausibility` with arrays,
strings and numbers. The output is deterministic: the same data give byte-identical
files (no clock is read; the only date on the page is :attr:`ReportData.stamp`).

Long recordings are not drawn point by point: every curve is reduced to a min/max
envelope over :data:`PLOT_BUCKETS` equal runs of samples (:func:`envelope`), which
keeps every peak and every gap a 600 k-sample line would show at the figure's
resolution, with at most three points per run.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import signal as sps

from dynamic_identification.core.errors import DataError
from dynamic_identification.core.signal.filters import DEFAULT_GAP_FACTOR

if TYPE_CHECKING:
    from matplotlib.figure import Figure  # imported when a report is written: matplotlib takes ~1 s to import

    from dynamic_identification.core.estimation.consistency import LinkComparison
    from dynamic_identification.io.outcome import ConsistencyCost

HIGH_STD_PERCENT = 30.0
"""``%σ`` above which a parameter is marked as poorly identified."""

PLOT_BUCKETS = 1000
"""Runs of samples per curve in the figures (each drawn as its minimum and maximum): about one per pixel column."""

SPECTRUM_RESOLUTION_HZ = 0.1
"""Frequency resolution aimed at by the Welch segments (the fundamental of a typical excitation, [Volkmann2020])."""

SPECTRUM_BINS = 300
"""Log-spaced frequency bins the Welch PSD is averaged into for drawing (smoother, and far fewer points)."""

MOVING_RANGE_RAD = 1e-3
"""A joint whose position spans less than this (rad) in a data set did not move in it."""

_UNITS = {
    "M": "kg",
    "MX": "kg·m",
    "MY": "kg·m",
    "MZ": "kg·m",
    "XX": "kg·m²",
    "XY": "kg·m²",
    "YY": "kg·m²",
    "XZ": "kg·m²",
    "YZ": "kg·m²",
    "ZZ": "kg·m²",
    "Ia": "kg·m²",
    "Fv": "N·m·s/rad",
    "Fc": "N·m",
    "off": "N·m",
}
_NAME = re.compile(r"^([A-Za-z]+?)(\d+)")

_REFERENCES = (
    (
        "Gautier2013",
        "M. Gautier, S. Briot, Dynamic Parameter Identification of a 6 DOF Industrial Robot using Power Model, "
        "ICRA 2013.",
    ),
    (
        "Volkmann2020",
        "Volkmann et al., Sensitivity-based Model Reduction for In-Process Identification of Industrial Robots "
        "Inverse Dynamics, ICMA 2020.",
    ),
    (
        "Wensing2018",
        "P. M. Wensing, S. Kim, J.-J. E. Slotine, Linear Matrix Inequalities for Physically Consistent Inertial "
        "Parameter Identification: A Statistical Perspective on the Mass Distribution, IEEE RA-L 3(1), 2018.",
    ),
    (
        "Lee2020",
        "T. Lee, P. M. Wensing, F. C. Park, Geometric Robot Dynamic Identification: A Convex Programming Approach, "
        "IEEE T-RO, 2020.",
    ),
)


_SPEED = r"$|\dot{q}|$"
"""``|q̇|`` in the figures' text: matplotlib's fonts drop the combining dot of ``q̇``, mathtext draws it."""


def parameter_unit(name: str) -> str:
    """SI unit of a (base or standard) parameter named like ``ZZ1``, ``MX2``, ``Fv3``, ``off4`` ('' if unknown).

    Base parameters regroup standard parameters of one dimension ([Gautier2013] §II),
    so a base parameter has the unit of the standard parameter it is named after
    (revolute joints).
    """
    match = _NAME.match(name)
    return _UNITS.get(match.group(1), "") if match else ""


@dataclass(frozen=True)
class ParameterRow:
    """One identified parameter.

    Attributes
    ----------
    name
        Base-parameter name, e.g. ``"ZZ1"``.
    value
        Estimate, SI units.
    std_percent
        ``%σ`` ([Gautier2013] eq. (19)); ``None`` when unknown, ``inf`` when the
        parameter is not identifiable.
    expression
        The standard parameters it regroups, e.g. ``"ZZ1 + Ia1 + ZZ2"``.
    unit
        Its unit; empty: :func:`parameter_unit` of the name.
    std
        Absolute σ, in :attr:`unit`; ``None`` when unknown.
    bound
        The constraint the published (consistent) value is held at, e.g. ``"Fc3 >= 0"``; empty when free.
        Its %σ is then shown as the bound, not as ``σ / |value|`` (huge for a value held at 0).
    """

    name: str
    value: float
    std_percent: float | None = None
    expression: str = ""
    unit: str = ""
    std: float | None = None
    bound: str = ""


@dataclass(frozen=True)
class Quality:
    """Quality figures of the estimate; ``None`` (or an empty sequence) where not known.

    Attributes
    ----------
    condition_number
        Condition number of the (column-scaled) observation matrix.
    relative_error
        ``‖ρ‖/‖Y‖`` of the estimate ([Gautier2013] Table IV), a fraction.
    joint_errors
        ``e_j`` per joint in N·m ([Volkmann2020] eq. (11)) on the identification's
        equations; NaN for a joint without an equation.
    joint_relative_errors
        ``e*_j`` per joint as a fraction ([Volkmann2020] eq. (12)); NaN likewise.
    samples
        Recorded samples the identification read.
    rate_hz
        Sampling rate after resampling, Hz.
    decimation
        Parallel-decimation factor.
    equations
        Equations per joint after decimation.
    window_s
        Length of the data, s.
    """

    condition_number: float | None = None
    relative_error: float | None = None
    joint_errors: Sequence[float] | np.ndarray = ()
    joint_relative_errors: Sequence[float] | np.ndarray = ()
    samples: int | None = None
    rate_hz: float | None = None
    decimation: int | None = None
    equations: int | None = None
    window_s: float | None = None


@dataclass(frozen=True)
class LinkStatus:
    """Physical consistency of one link ([Wensing2018] Theorem 1).

    Attributes
    ----------
    name
        Link or joint name.
    consistent
        Its pseudo-inertia is positive semi-definite and its mass positive.
    min_eigenvalue
        Smallest eigenvalue of the pseudo-inertia divided by the largest (negative: inconsistent).
    mass_kg
        Its mass, kg, if known.
    """

    name: str
    consistent: bool
    min_eigenvalue: float
    mass_kg: float | None = None


@dataclass(frozen=True)
class Consistency:
    """Physical consistency of the identified model.

    Attributes
    ----------
    ok
        Every link consistent and no negative rotor inertia or friction coefficient.
    links
        Per-link status, model order.
    problems
        What is wrong, in words (e.g. ``"Fc2 < 0"``).
    cost_increase
        Relative increase of the weighted residual sum of squares that imposing
        consistency cost; ``None`` when no constrained fit was made.
    shift_sigma
        Distance between the constrained and the unconstrained estimate, in standard deviations.
    checked
        Which parameters were checked, e.g. ``"the WLS estimate of the parameter table"``
        or ``"the published consistent estimate"``; printed with the status.
    costs
        The relative torque error of the unconstrained and of the consistent model on each
        data set (:func:`~dynamic_identification.io.outcome.consistency_costs`), when the
        consistent model is published.
    bodies
        Each identified body of the consistent model against the URDF's, with what determines
        each quantity (:func:`~dynamic_identification.io.outcome.link_comparisons`).
    """

    ok: bool
    links: Sequence[LinkStatus] = ()
    problems: Sequence[str] = ()
    cost_increase: float | None = None
    shift_sigma: float | None = None
    checked: str = ""
    costs: Sequence[ConsistencyCost] = ()
    bodies: Sequence[LinkComparison] = ()


@dataclass(frozen=True)
class Plausibility:
    """Result of the plausibility gates: ``ok`` and the failed gates in words."""

    ok: bool
    problems: Sequence[str] = ()


@dataclass(frozen=True, eq=False)
class DataSeries:
    """One data set: measured and predicted torques with the motion, samples as rows, joints as columns.

    Attributes
    ----------
    name
        What it is, e.g. ``"training"`` or ``"validation: run2.csv"``.
    time
        Stamps, s, shape ``(N,)``, non-decreasing.
    measured
        Measured joint torques, N·m, ``(N, n)``.
    predicted
        Predicted joint torques, N·m, ``(N, n)``; NaN where there is no prediction
        (edges, gaps, a joint without equations): drawn as a gap, never as zero.
    q
        Joint positions, rad, ``(N, n)``.
    dq
        Joint velocities, rad/s, ``(N, n)``.
    moving
        ``(N, n)`` booleans: the joint samples the errors count, where the joint moves as the identification
        judges it (:attr:`~dynamic_identification.io.outcome.Validation.moving`): the report draws and scores these
        and never decides motion itself, so its figures are the parameter file's.
    baseline
        The URDF's own model's torques, N·m, ``(N, n)`` (NaN where none): what the user had
        without identification; ``None``: not shown.
    """

    name: str
    time: np.ndarray
    measured: np.ndarray
    predicted: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    moving: np.ndarray
    baseline: np.ndarray | None = None

    def __post_init__(self) -> None:
        time = np.asarray(self.time, dtype=float)
        if time.ndim != 1 or time.shape[0] < 2:
            raise DataError(f"time of data set {self.name!r} must have shape (N,) with N >= 2, got {time.shape}")
        if not np.all(np.isfinite(time)) or np.any(np.diff(time) < 0.0):
            raise DataError(f"time of data set {self.name!r} must be finite and non-decreasing")
        object.__setattr__(self, "time", time)
        for key in ("measured", "predicted", "q", "dq"):
            array = np.asarray(getattr(self, key), dtype=float)
            if array.ndim == 1:
                array = array[:, None]
            if array.ndim != 2 or array.shape[0] != time.shape[0]:
                raise DataError(
                    f"{key} of data set {self.name!r} must have shape ({time.shape[0]}, n), got {array.shape}"
                )
            object.__setattr__(self, key, array)
        if self.baseline is not None:
            baseline = np.asarray(self.baseline, dtype=float).reshape(self.measured.shape)
            object.__setattr__(self, "baseline", baseline)
        moving = np.asarray(self.moving)
        if moving.dtype != bool:
            raise DataError(f"moving of data set {self.name!r} must hold booleans, got {moving.dtype}")
        object.__setattr__(self, "moving", moving[:, None] if moving.ndim == 1 else moving)
        shapes = {getattr(self, key).shape for key in ("measured", "predicted", "q", "dq", "moving")}
        if len(shapes) != 1:
            raise DataError(
                f"measured, predicted, q, dq and moving of data set {self.name!r} differ in shape: {shapes}"
            )

    @property
    def n_joints(self) -> int:
        """Number of joints ``n``."""
        return int(self.measured.shape[1])


@dataclass(frozen=True, eq=False)
class ReportData:
    """Everything the report shows.

    Attributes
    ----------
    title
        Page title.
    robot_name
        The robot's name (URDF ``<robot name>``).
    urdf
        The URDF's path or ``package://`` URI, as text.
    joints
        Identified joints, model order; the columns of every :class:`DataSeries`.
    parameters
        The kept parameters.
    datasets
        Training and validation data; the first is taken as the training data.
    removed
        ``(name, reason)`` of every parameter removed (not excited, reduction, …).
    quality
        The estimate's quality figures.
    settings
        Every setting the identification used, printed as a table (nested mappings
        become dotted keys).
    consistency
        Physical consistency; ``None``: not checked.
    plausibility
        Plausibility gates; ``None``: not checked.
    warnings
        Anything the user must read, one sentence each.
    lower_limits, upper_limits
        Position limits per joint, rad; empty, or ``±inf`` for a joint without limits.
    velocity_limits
        Velocity limits per joint, rad/s; empty, or ``inf``/0 when unknown.
    min_speed_rad_s
        The speed, rad/s, below which the identification's stick-phase rule leaves a joint sample out of
        :attr:`DataSeries.moving`, for the page's text; 0: that rule counts every predicted sample.
    stamp
        Date of the identification as the caller wants it printed (the page reads no clock).
    body_joints
        The joints whose bodies :attr:`Consistency.bodies` index: the tree's (a closed-loop robot's opened
        tree has more joints than the identified ones); empty: :attr:`joints`.
    model_choices
        One line per choice of the model the data made (drive terms dropped, passive friction).
    """

    title: str
    robot_name: str
    urdf: str
    joints: Sequence[str]
    parameters: Sequence[ParameterRow]
    datasets: Sequence[DataSeries]
    removed: Sequence[tuple[str, str]] = ()
    quality: Quality = field(default_factory=Quality)
    settings: Mapping[str, Any] = field(default_factory=dict)
    consistency: Consistency | None = None
    plausibility: Plausibility | None = None
    warnings: Sequence[str] = ()
    lower_limits: Sequence[float] | np.ndarray = ()
    upper_limits: Sequence[float] | np.ndarray = ()
    velocity_limits: Sequence[float] | np.ndarray = ()
    min_speed_rad_s: float = 0.0
    stamp: str = ""
    body_joints: Sequence[str] = ()
    model_choices: Sequence[str] = ()

    def __post_init__(self) -> None:
        joints = tuple(str(name) for name in self.joints)
        if not joints:
            raise DataError("joints must name at least one joint")
        object.__setattr__(self, "joints", joints)
        n = len(joints)
        for series in self.datasets:
            if series.n_joints != n:
                raise DataError(f"data set {series.name!r} has {series.n_joints} joints, the report names {n}")
        for key in ("lower_limits", "upper_limits", "velocity_limits"):
            values = np.asarray(getattr(self, key), dtype=float).ravel()
            if values.size == 0:
                values = np.full(n, np.nan)
            if values.shape != (n,):
                raise DataError(f"{key} must have {n} entries (one per joint), got {values.size}")
            object.__setattr__(self, key, values)
        for label, entries in (
            ("quality.joint_errors", self.quality.joint_errors),
            ("quality.joint_relative_errors", self.quality.joint_relative_errors),
        ):
            if len(entries) not in (0, n):
                raise DataError(f"{label} must have {n} entries (one per joint) or none, got {len(entries)}")
        if not (math.isfinite(self.min_speed_rad_s) and self.min_speed_rad_s >= 0.0):
            raise DataError(f"min_speed_rad_s must be finite and >= 0, got {self.min_speed_rad_s}")


# --------------------------------------------------------------------------------------------- numbers


@dataclass(frozen=True)
class JointErrors:
    """Prediction errors of one data set, per joint (NaN where the joint has no counted sample).

    ``rms`` and ``e`` (``e_j``, [Volkmann2020] eq. (11)) in N·m, ``relative`` (``e*_j``,
    eq. (12)) and ``norm_ratio`` (``‖τ − τ̂‖ / ‖τ‖``) as fractions, ``counted`` samples;
    ``overall`` is ``‖τ − τ̂‖ / ‖τ‖`` over every joint and counted sample (the headline figure).
    """

    counted: np.ndarray
    rms: np.ndarray
    e: np.ndarray
    relative: np.ndarray
    norm_ratio: np.ndarray
    overall: float = math.nan


def joint_errors(series: DataSeries, *, predicted: np.ndarray | None = None) -> JointErrors:
    """Errors of ``series.predicted`` (or ``predicted``: another model's, the baseline) against ``series.measured``
    at the joint samples :attr:`DataSeries.moving` where both are finite."""
    residual = series.measured - (series.predicted if predicted is None else predicted)
    counted = np.isfinite(residual) & series.moving
    counts = counted.sum(axis=0)
    error = np.where(counted, residual, 0.0)
    measured = np.where(counted, series.measured, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        some = counts > 0
        e = np.where(some, np.abs(error).sum(axis=0) / counts, np.nan)
        return JointErrors(
            counted=counts,
            rms=np.where(some, np.sqrt((error**2).sum(axis=0) / counts), np.nan),
            e=e,
            relative=np.where(some, np.abs(error).sum(axis=0) / np.abs(measured).sum(axis=0), np.nan),
            norm_ratio=np.where(some, np.linalg.norm(error, axis=0) / np.linalg.norm(measured, axis=0), np.nan),
            overall=float(np.linalg.norm(error) / np.linalg.norm(measured)) if some.any() else math.nan,
        )


@dataclass(frozen=True)
class Coverage:
    """How much of each joint's limits a data set covered (NaN where a limit is unknown).

    Attributes
    ----------
    q_min, q_max
        Smallest and largest position reached, rad.
    range_fraction
        ``(q_max − q_min) / (upper − lower)``.
    speed_max
        Largest ``|q̇|``, rad/s.
    speed_fraction
        ``speed_max / velocity limit``.
    """

    q_min: np.ndarray
    q_max: np.ndarray
    range_fraction: np.ndarray
    speed_max: np.ndarray
    speed_fraction: np.ndarray

    @property
    def moved(self) -> np.ndarray:
        """Whether each joint's position spanned at least :data:`MOVING_RANGE_RAD`."""
        with np.errstate(invalid="ignore"):
            return (self.q_max - self.q_min) >= MOVING_RANGE_RAD


def coverage(series: DataSeries, lower: np.ndarray, upper: np.ndarray, velocity: np.ndarray) -> Coverage:
    """Position range and speed covered by ``series`` relative to the limits (finite samples only)."""
    n = series.n_joints
    q_min, q_max, speed = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    for j in range(n):
        q = series.q[:, j][np.isfinite(series.q[:, j])]
        if q.size:
            q_min[j], q_max[j] = q.min(), q.max()
        dq = series.dq[:, j][np.isfinite(series.dq[:, j])]
        if dq.size:
            speed[j] = np.abs(dq).max()
    span = np.asarray(upper, dtype=float) - np.asarray(lower, dtype=float)
    limit = np.asarray(velocity, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        range_fraction = np.where(np.isfinite(span) & (span > 0.0), (q_max - q_min) / span, np.nan)
        speed_fraction = np.where(np.isfinite(limit) & (limit > 0.0), speed / limit, np.nan)
    return Coverage(
        q_min=q_min, q_max=q_max, range_fraction=range_fraction, speed_max=speed, speed_fraction=speed_fraction
    )


def envelope(time: np.ndarray, values: np.ndarray, buckets: int = PLOT_BUCKETS) -> tuple[np.ndarray, np.ndarray]:
    """The points of a curve to draw: its minimum and maximum in each of ``buckets`` equal runs of samples.

    Each run contributes its minimum and its maximum in time order, and, if it holds a
    NaN, its first NaN (so a gap stays a gap, never bridged or filled). A curve of at
    most ``3 · buckets`` samples is returned as it is.

    Parameters
    ----------
    time
        Stamps, shape ``(N,)``.
    values
        Values, shape ``(N,)``; NaN marks missing samples.
    buckets
        Number of runs, about the pixel columns of the plot.

    Returns
    -------
    tuple of numpy.ndarray
        Stamps and values of the kept samples, in the original order.
    """
    count = values.shape[0]
    if count <= 3 * buckets:
        return time, values
    size = -(-count // buckets)
    runs = -(-count // size)
    padded = np.concatenate([values, np.full(runs * size - count, values[-1])]).reshape(runs, size)
    missing = np.isnan(padded)
    empty = missing.all(axis=1)
    lowest = np.where(missing, np.inf, padded).argmin(axis=1)
    highest = np.where(missing, -np.inf, padded).argmax(axis=1)
    candidates = np.stack([lowest, highest, missing.argmax(axis=1)], axis=1)
    wanted = np.stack([~empty, ~empty, missing.any(axis=1)], axis=1)
    order = np.sort(np.where(wanted, candidates, size), axis=1)
    keep = order < size
    keep[:, 1:] &= order[:, 1:] != order[:, :-1]
    rows = np.minimum((order + size * np.arange(runs)[:, None])[keep], count - 1)
    return time[rows], values[rows]


@dataclass(frozen=True)
class Spectrum:
    """Welch amplitude spectral density of one signal: ``frequency`` in Hz, ``amplitude`` in N·m/√Hz."""

    frequency: np.ndarray
    amplitude: np.ndarray


def amplitude_spectrum(time: np.ndarray, values: np.ndarray) -> Spectrum | None:
    """Welch amplitude spectral density ``√PSD`` of ``values``, averaged over its finite stretches.

    Stretches end at a NaN and at a stamp gap longer than five median steps. The
    sampling rate is that of the median step of ``time``; segments are the power
    of two nearest to ``fs / SPECTRUM_RESOLUTION_HZ`` samples, no longer than the
    longest finite stretch, Hann windowed with half overlap. Stretches shorter than one
    segment are left out; the PSD of the others is averaged weighted by their length,
    then over :data:`SPECTRUM_BINS` log-spaced frequency bins. ``None`` when nothing is
    long enough (16 samples).
    """
    steps = np.diff(time)
    steps = steps[steps > 0.0]
    if steps.size == 0:
        return None
    step = float(np.median(steps))
    rate = 1.0 / step
    finite = np.isfinite(values)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], finite.astype(np.int8), [0]])))
    cuts = np.flatnonzero(np.diff(time) > DEFAULT_GAP_FACTOR * step) + 1
    stretches = []
    for start, stop in zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True):
        bounds = [start, *cuts[(cuts > start) & (cuts < stop)].tolist(), stop]
        stretches += list(zip(bounds[:-1], bounds[1:], strict=True))
    longest = max((stop - start for start, stop in stretches), default=0)
    if longest < 16:
        return None
    target = 2 ** round(math.log2(max(16.0, rate / SPECTRUM_RESOLUTION_HZ)))
    segment = int(min(target, 2 ** int(math.log2(longest))))
    total: np.ndarray | None = None
    weight = 0
    frequency = np.zeros(0)
    for start, stop in stretches:
        length = stop - start
        if length < segment:
            continue
        frequency, density = sps.welch(values[start:stop], fs=rate, nperseg=segment, detrend="constant")
        total = density * length if total is None else total + density * length
        weight += length
    if total is None:
        return None
    return _log_binned(frequency[1:], total[1:] / weight)


def _log_binned(frequency: np.ndarray, density: np.ndarray) -> Spectrum:
    """Mean PSD in :data:`SPECTRUM_BINS` log-spaced frequency bins (a bin holding one frequency keeps it as is)."""
    edges = np.geomspace(frequency[0], frequency[-1] * (1.0 + 1e-12), SPECTRUM_BINS + 1)
    bins = np.clip(np.searchsorted(edges, frequency, side="right") - 1, 0, SPECTRUM_BINS - 1)
    counts = np.bincount(bins, minlength=SPECTRUM_BINS)
    used = counts > 0
    mean_frequency = np.bincount(bins, weights=frequency, minlength=SPECTRUM_BINS)[used] / counts[used]
    mean_density = np.bincount(bins, weights=density, minlength=SPECTRUM_BINS)[used] / counts[used]
    return Spectrum(frequency=mean_frequency, amplitude=np.sqrt(mean_density))


# --------------------------------------------------------------------------------------------- figures


def _figure(width: float, height: float) -> Figure:
    """A matplotlib figure not registered with pyplot (rendered by the Agg canvas, thread-safe, no GUI)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _save(figure: Any, path: Path) -> None:
    # No "Software" metadata: the PNG bytes depend only on the data (and matplotlib's rendering).
    figure.savefig(path, dpi=100, metadata={"Software": None})


_COLOURS = ("C0", "C1", "C2", "C4", "C5", "C6", "C8", "C9")
_MEASURED = "0.55"
_PREDICTED = "C3"
_RESIDUAL = "C0"
_SLOW_RESIDUAL = "0.78"
_BASELINE = "C2"


def _padded_limits(lowest: float, highest: float) -> tuple[float, float] | None:
    if not (math.isfinite(lowest) and math.isfinite(highest)):
        return None
    if highest <= lowest:
        half = max(abs(lowest), 1.0) * 0.05
        return lowest - half, highest + half
    pad = 0.05 * (highest - lowest)
    return lowest - pad, highest + pad


def _joint_grid(figure: Any, n: int) -> list[tuple[Any, Any]]:
    """Per joint a torque axis (tall) above a residual axis (short); two joints per row."""
    columns = 1 if n == 1 else 2
    rows = -(-n // columns)
    grid = figure.add_gridspec(2 * rows, columns, height_ratios=[3, 1] * rows)
    pairs = []
    for j in range(n):
        row, column = divmod(j, columns)
        top = figure.add_subplot(grid[2 * row, column])
        bottom = figure.add_subplot(grid[2 * row + 1, column], sharex=top)
        top.tick_params(labelbottom=False)
        pairs.append((top, bottom))
    return pairs


def _torque_figure(
    path: Path,
    data: ReportData,
    series: DataSeries,
    errors: JointErrors,
    cover: Coverage,
    torque_limits: list[tuple[float, float] | None],
    residual_limits: list[tuple[float, float] | None],
) -> None:
    """Measured vs predicted torque per joint with the residual below; slow samples drawn light."""
    from matplotlib.lines import Line2D

    n = len(data.joints)
    columns = 1 if n == 1 else 2
    rows = -(-n // columns)
    figure = _figure(13.0 if columns == 2 else 8.0, 1.0 + 3.1 * rows)
    time = series.time - series.time[0]
    speed_rule = data.min_speed_rad_s > 0.0
    slowest = f"{data.min_speed_rad_s:g} rad/s"
    pairs = _joint_grid(figure, n)
    for j, (top, bottom) in enumerate(pairs):
        measured = series.measured[:, j]
        predicted = series.predicted[:, j]
        residual = measured - predicted
        slow = ~series.moving[:, j]
        if speed_rule and slow.any():
            top.plot(*envelope(time, np.where(slow, predicted, np.nan)), color=_PREDICTED, alpha=0.3, linewidth=0.8)
            bottom.plot(*envelope(time, np.where(slow, residual, np.nan)), color=_SLOW_RESIDUAL, linewidth=0.7)
        top.plot(*envelope(time, measured), color=_MEASURED, linewidth=0.8)
        if series.baseline is not None:
            top.plot(*envelope(time, series.baseline[:, j]), color=_BASELINE, linewidth=0.7, linestyle="--")
        top.plot(*envelope(time, np.where(slow, np.nan, predicted)), color=_PREDICTED, linewidth=0.9)
        bottom.plot(*envelope(time, np.where(slow, np.nan, residual)), color=_RESIDUAL, linewidth=0.7)
        bottom.axhline(0.0, color="0.3", linewidth=0.5)
        name = data.joints[j]
        if not np.isfinite(predicted).any():
            title = f"{name}: no prediction ({'no usable equation' if cover.moved[j] else 'did not move'})"
            for axis in (top, bottom):
                axis.text(0.5, 0.5, "no prediction", transform=axis.transAxes, ha="center", va="center", color="C3")
        elif errors.counted[j] == 0:
            title = f"{name}: did not move ({_SPEED} < {slowest} throughout)"
        else:
            title = f"{name}: e*_j {100 * errors.relative[j]:.2f} %, RMS error {errors.rms[j]:.3g} N·m"
        top.set_title(title, fontsize=10, loc="left")
        top.set_ylabel("torque (N·m)")
        bottom.set_ylabel("residual\n(N·m)")
        for axis, limits in ((top, torque_limits[j]), (bottom, residual_limits[j])):
            if limits is not None:
                axis.set_ylim(*limits)
        top.grid(True, linewidth=0.3, alpha=0.6)
        bottom.grid(True, linewidth=0.3, alpha=0.6)
        if j >= n - columns:
            bottom.set_xlabel("time since the first sample (s)")
    handles = [
        Line2D([], [], color=_MEASURED, linewidth=1.2, label="measured"),
        Line2D([], [], color=_PREDICTED, linewidth=1.2, label="predicted"),
        Line2D([], [], color=_RESIDUAL, linewidth=1.2, label="residual = measured − predicted"),
    ]
    if series.baseline is not None:
        handles.insert(2, Line2D([], [], color=_BASELINE, linewidth=1.2, linestyle="--", label="the URDF's model"))
    if speed_rule:
        handles += [
            Line2D([], [], color=_PREDICTED, alpha=0.3, linewidth=1.2, label=f"predicted where {_SPEED} < {slowest}"),
            Line2D(
                [],
                [],
                color=_SLOW_RESIDUAL,
                linewidth=1.2,
                label=f"residual where {_SPEED} < {slowest} (stick: not counted)",
            ),
        ]
    figure.legend(
        handles=handles, loc="outside lower center", ncol=len(handles) if columns == 2 else 2, fontsize=9, frameon=False
    )
    figure.suptitle(f"{series.name}: measured vs predicted joint torques")
    _save(figure, path)


def _robust_range(values: list[np.ndarray]) -> tuple[float, float] | None:
    finite = [v[np.isfinite(v)] for v in values]
    finite = [v for v in finite if v.size]
    if not finite:
        return None
    return _padded_limits(min(float(v.min()) for v in finite), max(float(v.max()) for v in finite))


def _residual_range(data: ReportData, joint: int) -> tuple[float, float] | None:
    """Symmetric residual axis of a joint: ±1.3 × the 99.9th percentile of ``|residual|`` over every data set.

    Counted samples (:attr:`DataSeries.moving`) only, when there are any: the stick
    phases' friction jumps would otherwise set the scale and hide the error where the
    model applies; larger values run off the axis.
    """
    residuals = [s.measured[:, joint] - s.predicted[:, joint] for s in data.datasets]
    counted = [r[np.isfinite(r) & s.moving[:, joint]] for r, s in zip(residuals, data.datasets, strict=True)]
    values = np.concatenate(counted)
    if values.size == 0:
        values = np.concatenate([r[np.isfinite(r)] for r in residuals])
    if values.size == 0:
        return None
    bound = 1.3 * float(np.percentile(np.abs(values), 99.9))
    return (-bound, bound) if bound > 0.0 else None


def _spectra_figure(path: Path, data: ReportData) -> bool:
    """Residual amplitude spectra per joint, one line per data set; ``False`` when no residual had a spectrum."""
    n = len(data.joints)
    columns = 1 if n == 1 else 2
    rows = -(-n // columns)
    figure = _figure(13.0 if columns == 2 else 8.0, 1.0 + 2.6 * rows)
    axes = figure.subplots(rows, columns, squeeze=False, sharex=True).ravel()
    training = data.datasets[0]
    drawn = False
    for j in range(n):
        axis = axes[j]
        reference = amplitude_spectrum(training.time, training.measured[:, j])
        if reference is not None:
            axis.loglog(
                reference.frequency,
                reference.amplitude,
                color="0.7",
                linewidth=0.8,
                label=f"measured torque – {training.name}",
            )
        residuals = 0
        for index, series in enumerate(data.datasets):
            spectrum = amplitude_spectrum(series.time, series.measured[:, j] - series.predicted[:, j])
            if spectrum is None:
                continue
            residuals += 1
            axis.loglog(
                spectrum.frequency,
                spectrum.amplitude,
                color=_COLOURS[index % len(_COLOURS)],
                linewidth=0.8,
                label=f"residual – {series.name}",
            )
        drawn |= residuals > 0
        if residuals == 0:
            axis.text(
                0.5, 0.5, "no prediction: no residual", transform=axis.transAxes, ha="center", va="center", color="C3"
            )
        axis.set_title(data.joints[j], fontsize=10, loc="left")
        axis.set_ylabel("amplitude (N·m/√Hz)")
        axis.grid(True, which="both", linewidth=0.3, alpha=0.5)
    for axis in axes[n:]:
        axis.set_visible(False)
    for axis in axes[max(0, n - columns) : n]:
        axis.set_xlabel("frequency (Hz)")
        axis.tick_params(labelbottom=True)
    handles: list[Any] = []
    labels: list[str] = []
    for axis in axes[:n]:
        for handle, label in zip(*axis.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    if handles:
        figure.legend(handles, labels, loc="outside lower center", ncol=min(3, len(labels)), fontsize=9)
    figure.suptitle("Amplitude spectral density of the torque residuals (Welch)")
    _save(figure, path)
    return drawn


def _coverage_figure(path: Path, data: ReportData, covered: list[Coverage]) -> None:
    """Per joint: the position interval each data set swept within the limits, and its top speed / the limit."""
    from matplotlib.ticker import PercentFormatter

    n = len(data.joints)
    lower = np.asarray(data.lower_limits)
    span = np.asarray(data.upper_limits) - lower
    count = len(covered)
    height = 0.8 / count
    figure = _figure(13.0, 1.6 + n * (0.3 + 0.2 * count))
    left, right = figure.subplots(1, 2, sharey=True)
    limited = np.isfinite(span) & (span > 0.0)
    for j in np.flatnonzero(limited).tolist():
        left.barh(j, 1.0, height=0.92, color="0.93", edgecolor="0.6", linewidth=0.6)
    fastest = 1.0
    for index, cover in enumerate(covered):
        colour = _COLOURS[index % len(_COLOURS)]
        name = data.datasets[index].name
        offset = (index - (count - 1) / 2.0) * height
        labelled = False
        for j in range(n):
            row = j + offset
            if limited[j] and np.isfinite(cover.q_min[j]):
                start, stop = (cover.q_min[j] - lower[j]) / span[j], (cover.q_max[j] - lower[j]) / span[j]
                left.barh(
                    row,
                    max(stop - start, 0.004),
                    left=start,
                    height=height,
                    color=colour,
                    label=None if labelled else name,
                )
                labelled = True
                left.text(
                    min(max(stop, 0.0), 1.0) + 0.01,
                    row,
                    f"{100 * cover.range_fraction[j]:.0f} %" if cover.moved[j] else "did not move",
                    va="center",
                    fontsize=8,
                )
            elif np.isfinite(cover.q_min[j]):
                left.text(
                    0.01,
                    row,
                    f"no position limit: swept {cover.q_max[j] - cover.q_min[j]:.3g} rad",
                    va="center",
                    fontsize=8,
                )
            speed = cover.speed_fraction[j]
            if np.isfinite(speed):
                right.barh(row, speed, height=height, color=colour)
                right.text(
                    speed + 0.01,
                    row,
                    f"{100 * speed:.0f} %" if cover.moved[j] else "did not move",
                    va="center",
                    fontsize=8,
                )
                fastest = max(fastest, float(speed))
            elif np.isfinite(cover.speed_max[j]):
                right.text(0.01, row, f"no velocity limit: {cover.speed_max[j]:.3g} rad/s", va="center", fontsize=8)
    right.axvline(1.0, color="0.3", linestyle="--", linewidth=0.8)
    left.set_yticks(np.arange(n), list(data.joints))
    left.set_ylim(n - 0.5, -0.5)
    left.set_xlim(-0.02, 1.12)
    left.xaxis.set_major_formatter(PercentFormatter(xmax=1.0))
    right.set_xlim(0.0, 1.12 * fastest)
    right.xaxis.set_major_formatter(PercentFormatter(xmax=1.0))
    left.set_xlabel("position within the joint's range (0 % = lower limit, 100 % = upper limit)")
    right.set_xlabel("largest |velocity|, as a percentage of the velocity limit")
    left.set_title("Position range swept (grey: the limits; label: fraction of the range)", fontsize=10, loc="left")
    right.set_title("Speed reached (dashed: the velocity limit)", fontsize=10, loc="left")
    for axis in (left, right):
        axis.grid(True, axis="x", linewidth=0.3, alpha=0.6)
    handles, labels = left.get_legend_handles_labels()
    if handles:
        figure.legend(handles, labels, loc="outside lower center", ncol=min(4, len(labels)), fontsize=9)
    figure.suptitle("How much of each joint's range and speed the data covered")
    _save(figure, path)


# --------------------------------------------------------------------------------------------- HTML


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _number(value: float | int | None, form: str = ".4g", *, scale: float = 1.0, unit: str = "") -> str:
    """``value`` formatted, ``–`` when unknown (None/NaN), ``∞`` when infinite."""
    if value is None:
        return "–"
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and scale == 1.0:
        return f"{int(value):{form}}{unit}"
    number = float(value) * scale
    if math.isnan(number):
        return "–"
    if math.isinf(number):
        return "∞" if number > 0 else "−∞"
    return f"{number:{form}}{unit}"


def _flatten(settings: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for key, value in settings.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            rows += _flatten(value, f"{name}.")
        elif isinstance(value, (list, tuple, np.ndarray)):
            rows.append((name, "[" + ", ".join(_setting(item) for item in np.asarray(value).ravel().tolist()) + "]"))
        else:
            rows.append((name, _setting(value)))
    return rows


def _setting(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower() if value is not None else "null"
    if isinstance(value, (float, np.floating)):
        return _number(float(value), ".6g")
    return str(value)


_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1.5em auto; max-width: 1320px;
       padding: 0 1em; color: #1d1d1f; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 1.8em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; }
h3 { font-size: 1.05em; margin-top: 1.2em; }
div.wide { overflow-x: auto; }
table { border-collapse: collapse; margin: 0.5em 0 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #d0d0d0; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.expr { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 0.92em; }
tr.high td { background: #fff1cc; }
tr.unidentifiable td { background: #fbd5d5; }
tr.bound td { background: #e8eefc; }
td.none { color: #a33; font-style: italic; }
.ok { color: #176d2a; font-weight: 600; }
.bad { color: #b3261e; font-weight: 600; }
.unknown { color: #666; font-weight: 600; }
.warnings { background: #fff4e5; border-left: 4px solid #e08600; padding: 0.4em 1em; }
.note { color: #555; font-size: 0.9em; }
img { max-width: 100%; height: auto; border: 1px solid #e0e0e0; }
nav a { margin-right: 1em; }
dl.summary { display: grid; grid-template-columns: max-content auto; gap: 0.15em 1.2em; }
dl.summary dt { font-weight: 600; }
dl.summary dd { margin: 0; }
""".strip()


def _table(header: Sequence[str], rows: Sequence[str], *, groups: Sequence[tuple[str, int]] = ()) -> str:
    """A table from escaped header cells and already rendered ``<tr>`` rows.

    ``groups`` adds a first header row of ``(escaped title, columns spanned)`` cells.
    """
    head = "<tr>" + "".join(f"<th>{cell}</th>" for cell in header) + "</tr>"
    if groups:
        spans = "".join(
            f'<th colspan="{span}">{title}</th>' if span > 1 else f"<th>{title}</th>" for title, span in groups
        )
        head = f"<tr>{spans}</tr>\n{head}"
    body = "\n".join(rows)
    return f'<div class="wide"><table><thead>\n{head}\n</thead><tbody>\n{body}\n</tbody></table></div>'


def _status(ok: bool | None, good: str, bad: str) -> str:
    if ok is None:
        return '<span class="unknown">not checked</span>'
    return f'<span class="ok">{_e(good)}</span>' if ok else f'<span class="bad">{_e(bad)}</span>'


def _std_class(std: float | None) -> str:
    """``"unidentifiable"`` for an infinite %σ, ``"high"`` above :data:`HIGH_STD_PERCENT`, else ``""``."""
    if std is None or math.isnan(float(std)):
        return ""
    if math.isinf(float(std)):
        return "unidentifiable"
    return "high" if float(std) > HIGH_STD_PERCENT else ""


def _parameter_rows(data: ReportData) -> list[str]:
    rows = []
    for index, row in enumerate(data.parameters, start=1):
        std = row.std_percent
        kind = _std_class(std)
        css = f' class="{kind}"' if kind else ""
        unit = row.unit or parameter_unit(row.name)
        std_text = "unknown" if std is None or math.isnan(float(std)) else _number(std, ".3g")
        if std is not None and math.isinf(float(std)):
            std_text = "∞ (not identifiable)"
        if row.bound:
            # σ / |value| of a value held at its bound (0) says nothing: the bound is what holds it.
            css, std_text = ' class="bound"', f"at its bound ({row.bound})"
        rows.append(
            f'<tr{css}><td class="num">{index}</td><td>{_e(row.name)}</td>'
            f'<td class="num">{_e(_number(row.value, ".6g"))}</td><td>{_e(unit)}</td>'
            f'<td class="num">{_e(_number(row.std, ".3g"))}</td>'
            f'<td class="num">{_e(std_text)}</td><td class="expr">{_e(row.expression)}</td></tr>'
        )
    return rows


def _spread(relative: np.ndarray) -> str:
    """``min – max`` of per-joint relative errors, in percent, over the joints that have one."""
    finite = relative[np.isfinite(relative)]
    if finite.size == 0:
        return "no prediction"
    low, high = 100.0 * float(finite.min()), 100.0 * float(finite.max())
    joints = f" ({finite.size} of {relative.size} joints)" if finite.size < relative.size else ""
    return f"{low:.3g} – {high:.3g} % over the joints{joints}"


def _headline(series: DataSeries, errors: JointErrors) -> str:
    """The one figure of a data set, ``‖τ − τ̂‖/‖τ‖`` over its joints, beside the URDF's own model's."""
    text = f"<strong>{_e(_number(errors.overall, '.3g', scale=100.0, unit=' %'))}</strong>"
    if series.baseline is not None:
        urdf = joint_errors(series, predicted=series.baseline).overall
        text += f" (the URDF's model: {_e(_number(urdf, '.3g', scale=100.0, unit=' %'))})"
    return text


def _summary(data: ReportData, errors: list[JointErrors]) -> str:
    quality = data.quality
    consistency = None if data.consistency is None else data.consistency.ok
    plausibility = None if data.plausibility is None else data.plausibility.ok
    items = [
        ("robot", f"{_e(data.robot_name)} (<code>{_e(data.urdf)}</code>)"),
        ("joints", _e(", ".join(data.joints))),
    ]
    if data.stamp:
        items.append(("identified", _e(data.stamp)))
    classes = [_std_class(row.std_percent) for row in data.parameters]
    flagged = [
        f"{classes.count('high')} with %σ &gt; {HIGH_STD_PERCENT:g}" if "high" in classes else "",
        f"{classes.count('unidentifiable')} not identifiable" if "unidentifiable" in classes else "",
    ]
    detail = ", ".join(text for text in flagged if text)
    items += [
        ("parameters", f"{len(data.parameters)} kept{f' ({detail})' if detail else ''}, {len(data.removed)} removed"),
        ("condition number", _e(_number(quality.condition_number))),
        ("relative error ‖ρ‖/‖Y‖", _e(_number(quality.relative_error, ".3g", scale=100.0, unit=" %"))),
        ("samples", _e(_number(quality.samples, ",d"))),
        ("rate", _e(_number(quality.rate_hz, ".6g", unit=" Hz"))),
        ("decimation", _e(_number(quality.decimation, "d"))),
        ("equations per joint", _e(_number(quality.equations, "d"))),
        ("data length", _e(_number(quality.window_s, ".6g", unit=" s"))),
        *(
            (f"torque error ‖τ − τ̂‖/‖τ‖, {_e(series.name)}", _headline(series, error))
            for series, error in zip(data.datasets, errors, strict=True)
        ),
        *(
            (f"e*_j, {_e(series.name)}", _e(_spread(error.relative)))
            for series, error in zip(data.datasets, errors, strict=True)
        ),
        *(("model chosen by the data", _e(choice)) for choice in data.model_choices),
        ("physical consistency", _status(consistency, "consistent", "NOT physically consistent")),
        ("plausibility", _status(plausibility, "passed", "FAILED")),
    ]
    body = "\n".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in items)
    return f'<dl class="summary">\n{body}\n</dl>'


def _warnings(data: ReportData) -> str:
    messages = list(data.warnings)
    if data.plausibility is not None and not data.plausibility.ok:
        messages += [f"plausibility: {problem}" for problem in data.plausibility.problems]
    if data.consistency is not None and not data.consistency.ok:
        messages.append("the identified model is not physically consistent (see Physical consistency)")
    if not messages:
        return ""
    items = "\n".join(f"<li>{_e(message)}</li>" for message in messages)
    return f'<section id="warnings" class="warnings"><h2>Warnings</h2>\n<ul>\n{items}\n</ul></section>'


def _error_table(data: ReportData, errors: list[JointErrors], covered: list[Coverage]) -> str:
    header = ["joint", "e_j (N·m)", "e*_j"]
    groups = [("", 1), ("identification", 2)]
    baselines = [
        None if series.baseline is None else joint_errors(series, predicted=series.baseline) for series in data.datasets
    ]
    for series, baseline in zip(data.datasets, baselines, strict=True):
        extra = [] if baseline is None else ["e*_j of the URDF's model"]
        header += ["samples", "RMS (N·m)", "e_j (N·m)", "e*_j", *extra]
        groups.append((_e(series.name), 4 + len(extra)))
    quality = data.quality
    rows = []
    for j, joint in enumerate(data.joints):
        e = quality.joint_errors[j] if len(quality.joint_errors) else None
        r = quality.joint_relative_errors[j] if len(quality.joint_relative_errors) else None
        if e is not None and math.isnan(float(e)):
            cells = ['<td class="none" colspan="2">no equation (never moved, or only at stick speeds)</td>']
        else:
            cells = [
                f'<td class="num">{_e(_number(e, ".3g"))}</td>',
                f'<td class="num">{_e(_number(r, ".3g", scale=100.0, unit=" %"))}</td>',
            ]
        for index, series in enumerate(data.datasets):
            error, baseline = errors[index], baselines[index]
            span = 4 if baseline is None else 5
            if not np.isfinite(series.predicted[:, j]).any():
                why = "did not move" if not covered[index].moved[j] else "no usable equation"
                cells.append(f'<td class="none" colspan="{span}">no prediction ({why})</td>')
            elif error.counted[j] == 0:
                cells.append(
                    f'<td class="none" colspan="{span}">no sample with |q̇| ≥'
                    f" {_e(_number(data.min_speed_rad_s, 'g'))} rad/s</td>"
                )
            else:
                cells += [
                    f'<td class="num">{int(error.counted[j])}</td>',
                    f'<td class="num">{_e(_number(error.rms[j], ".3g"))}</td>',
                    f'<td class="num">{_e(_number(error.e[j], ".3g"))}</td>',
                    f'<td class="num">{_e(_number(error.relative[j], ".3g", scale=100.0, unit=" %"))}</td>',
                ]
                if baseline is not None:
                    urdf = _number(baseline.relative[j], ".3g", scale=100.0, unit=" %")
                    cells.append(f'<td class="num">{_e(urdf)}</td>')
        rows.append(f"<tr><td>{_e(joint)}</td>{''.join(cells)}</tr>")
    return _table(header, rows, groups=groups)


def _coverage_table(data: ReportData, covered: list[Coverage]) -> str:
    header = ["joint", "position (rad)", "velocity (rad/s)"]
    groups = [("", 1), ("limits", 2)]
    for series in data.datasets:
        header += ["swept (rad)", "of the range", "top speed (rad/s)", "of the limit"]
        groups.append((_e(series.name), 4))
    rows = []
    for j, joint in enumerate(data.joints):
        lower, upper = data.lower_limits[j], data.upper_limits[j]
        limits = (
            f"{_number(lower, '.4g')} … {_number(upper, '.4g')}"
            if np.isfinite(lower) and np.isfinite(upper)
            else "none"
        )
        cells = [
            f"<td>{_e(joint)}</td>",
            f'<td class="num">{_e(limits)}</td>',
            f'<td class="num">{_e(_number(data.velocity_limits[j], ".4g"))}</td>',
        ]
        for cover in covered:
            if not np.isfinite(cover.q_min[j]):
                cells.append('<td class="none" colspan="4">no position data</td>')
                continue
            swept = f"{_number(cover.q_min[j], '.3g')} … {_number(cover.q_max[j], '.3g')}"
            moved = "" if cover.moved[j] else " (did not move)"
            cells += [
                f'<td class="num">{_e(swept + moved)}</td>',
                f'<td class="num">{_e(_number(cover.range_fraction[j], ".0f", scale=100.0, unit=" %"))}</td>',
                f'<td class="num">{_e(_number(cover.speed_max[j], ".3g"))}</td>',
                f'<td class="num">{_e(_number(cover.speed_fraction[j], ".0f", scale=100.0, unit=" %"))}</td>',
            ]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return _table(header, rows, groups=groups)


def _consistency(data: ReportData) -> str:
    result = data.consistency
    if result is None:
        return '<p><span class="unknown">not checked</span></p>'
    subject = f" ({_e(result.checked)})" if result.checked else ""
    parts = [
        "<p>"
        + _status(result.ok, "physically consistent", "NOT physically consistent")
        + f"{subject}. Consistent means: every link's pseudo-inertia positive semi-definite with a positive mass,"
        " rotor inertia and friction coefficients non-negative [Wensing2018].</p>"
    ]
    if result.cost_increase is not None:
        text = (
            f"Imposing consistency increased the weighted residual sum of squares by"
            f" {_number(result.cost_increase, '.3g', scale=100.0, unit=' %')}"
        )
        if result.shift_sigma is not None:
            text += f"; the estimate moved by {_number(result.shift_sigma, '.3g')} standard deviations"
        parts.append(f"<p>{_e(text)}.</p>")
    if result.costs:
        parts.append(_consistency_costs(result.costs))
    if result.bodies:
        parts.append(_bodies(data.body_joints or data.joints, result.bodies))
    if result.links:
        rows = [
            f'<tr><td>{_e(link.name)}</td><td class="num">{_e(_number(link.mass_kg, ".4g"))}</td>'
            f'<td class="num">{_e(_number(link.min_eigenvalue, ".3g"))}</td>'
            f"<td>{_status(link.consistent, 'consistent', 'inconsistent')}</td></tr>"
            for link in result.links
        ]
        parts.append(_table(["link (joint)", "mass (kg)", "min eig / max eig of the pseudo-inertia", "status"], rows))
    if result.problems:
        parts.append("<ul>" + "".join(f"<li>{_e(problem)}</li>" for problem in result.problems) + "</ul>")
    return "\n".join(parts)


def _bodies(joints: Sequence[str], bodies: Sequence[LinkComparison]) -> str:
    """The identified bodies against the URDF's: mass, centre of mass, principal moments, and who determines each."""

    def vector(values: np.ndarray) -> str:
        # Round-off of an exact zero (a centre of mass on the axis) shown as 0.
        return ", ".join(_number(0.0 if abs(float(v)) < 1e-12 else float(v), ".3g") for v in values)

    def cell(identified: str, urdf: str, source: str) -> str:
        kind = {"data": "ok", "URDF": "unknown"}.get(source, "")
        return (
            f'<td class="num">{_e(identified)}<br><span class="note">URDF {_e(urdf)}</span></td>'
            f'<td><span class="{kind}">{_e(source)}</span></td>'
        )

    def name(body: LinkComparison) -> str:
        bound = '<br><span class="unknown">pseudo-inertia at its bound</span>' if body.at_bound else ""
        return f"<td>{_e(joints[body.index])}{bound}</td>"

    rows = [
        f"<tr>{name(body)}"
        + cell(_number(body.mass, ".4g"), _number(body.mass_urdf, ".4g"), body.mass_source)
        + cell(vector(body.com), vector(body.com_urdf), body.com_source)
        + cell(vector(body.moments), vector(body.moments_urdf), body.moments_source)
        + "</tr>"
        for body in bodies
    ]
    header = ["body of joint", *(["identified (URDF)", "determined by"] * 3)]
    groups = [("", 1), ("mass (kg)", 2), ("centre of mass (m)", 2), ("principal moments (kg·m²)", 2)]
    caption = (
        "<p>The published consistent bodies against the URDF's. Determined by <em>data</em>: the recording fixes"
        " every parameter it depends on; <em>URDF</em>: the recording says nothing about any of them and the"
        " divergence to the URDF's inertias chooses it [Lee2020]; <em>data + URDF</em>: the recording fixes it only"
        " in part (its parameters enter identified combinations, or some are fixed and others free). A body whose"
        " pseudo-inertia is <em>at its bound</em> was pushed by the data to the edge of physical consistency: its"
        " values are the bound's, not the data's.</p>"
    )
    return caption + _table(header, rows, groups=groups)


def _consistency_costs(costs: Sequence[ConsistencyCost]) -> str:
    """What publishing the consistent model cost, one row per data set; a ratio over
    :data:`~dynamic_identification.io.outcome.CONSISTENCY_COST_WARNING` on held-out data is marked."""
    from dynamic_identification.io.outcome import CONSISTENCY_COST_WARNING

    rows = []
    for cost in costs:
        worse = cost.held_out and cost.ratio is not None and cost.ratio > CONSISTENCY_COST_WARNING
        ratio = (
            f'<span class="bad">{_e(_number(cost.ratio, ".3f"))}</span>' if worse else _e(_number(cost.ratio, ".3f"))
        )
        rows.append(
            f"<tr><td>{_e(cost.data)}</td>"
            f'<td class="num">{_e(_number(cost.unconstrained, ".4g", scale=100.0, unit=" %"))}</td>'
            f'<td class="num">{_e(_number(cost.consistent, ".4g", scale=100.0, unit=" %"))}</td>'
            f'<td class="num">{ratio}</td></tr>'
        )
    caption = (
        "<p>What consistency cost: the relative torque error of the unconstrained and of the published consistent"
        " model (training: its equations; held-out files: against the recorded torques where the joints move).</p>"
    )
    header = ["data", "relative torque error, unconstrained", "consistent", "ratio"]
    return caption + _table(header, rows)


def _plausibility(data: ReportData) -> str:
    result = data.plausibility
    if result is None:
        return '<p><span class="unknown">not checked</span></p>'
    if result.ok:
        return (
            '<p><span class="ok">passed</span>: predicted torques within the effort limits, every parameter'
            " physically possible for this robot.</p>"
        )
    items = "".join(f"<li>{_e(problem)}</li>" for problem in result.problems)
    return f'<p><span class="bad">FAILED</span>:</p><ul>{items}</ul>'


def _image(name: str, alt: str) -> str:
    return f'<p><a href="{_e(name)}"><img src="{_e(name)}" alt="{_e(alt)}"></a></p>'


def _torque_note(data: ReportData) -> str:
    slow = (
        f" Light red prediction and grey residual: where |q̇_j| < {_number(data.min_speed_rad_s, 'g')} rad/s, the"
        " stick phases near velocity reversals and stops, which the model does not describe (Coulomb friction"
        " sign(q̇)) and the errors do not count."
        if data.min_speed_rad_s > 0.0
        else ""
    )
    baseline = (
        " Dashed green: the URDF's own model (its link inertias, no friction), what the torques would be without"
        " identification."
        if any(series.baseline is not None for series in data.datasets)
        else ""
    )
    return (
        '<p class="note">Grey: measured torque; red: the identified model\'s prediction on the same motion; below'
        " each joint, the residual (measured − predicted), in blue, on a symmetric scale of ±1.3 × the 99.9th"
        " percentile of |residual| where the joint moves; larger values run off it. Each joint keeps its scales"
        " in every data set, so the figures compare directly. Where the prediction is missing (edges, gaps, a"
        f" joint without usable equations) the curve has a gap.{_e(slow)} Long recordings are drawn as their"
        f" min/max envelope over {PLOT_BUCKETS} runs of samples.{_e(baseline)}</p>"
    )


def write_report(directory: str | Path, data: ReportData) -> Path:
    """Write the report of ``data`` into ``directory``: ``index.html`` and the PNG figures it links.

    The directory is created (with its parents) if needed; files of an earlier report
    in it are overwritten. Figures: ``torques_<k>.png`` per data set (``k`` from 1),
    ``spectra.png``, ``coverage.png``.

    Parameters
    ----------
    directory
        Where to write.
    data
        What to show; needs at least one data set.

    Returns
    -------
    pathlib.Path
        The path of ``index.html``.

    Raises
    ------
    DataError
        If ``directory`` exists and is not a directory, cannot be created, or ``data``
        has no data set.
    """
    target = Path(directory)
    if target.exists() and not target.is_dir():
        raise DataError(f"report directory {target} exists and is not a directory")
    if not data.datasets:
        raise DataError("the report needs at least one data set (training data)")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise DataError(f"cannot create report directory {target}: {error.strerror or error}") from error

    errors = [joint_errors(series) for series in data.datasets]
    covered = [
        coverage(series, np.asarray(data.lower_limits), np.asarray(data.upper_limits), np.asarray(data.velocity_limits))
        for series in data.datasets
    ]
    n = len(data.joints)
    torque_limits = [
        _robust_range([s.measured[:, j] for s in data.datasets] + [s.predicted[:, j] for s in data.datasets])
        for j in range(n)
    ]
    residual_limits = [_residual_range(data, j) for j in range(n)]

    sections = [
        f"<h1>{_e(data.title)}</h1>",
        _summary(data, errors),
        _warnings(data),
        '<nav><a href="#torques">torques</a><a href="#errors">errors</a><a href="#spectra">spectra</a>'
        '<a href="#coverage">coverage</a><a href="#parameters">parameters</a>'
        '<a href="#consistency">consistency</a><a href="#plausibility">plausibility</a>'
        '<a href="#settings">settings</a></nav>',
        '<section id="torques"><h2>Measured vs predicted joint torques</h2>',
        _torque_note(data),
    ]
    for index, series in enumerate(data.datasets, start=1):
        name = f"torques_{index}.png"
        _torque_figure(
            target / name, data, series, errors[index - 1], covered[index - 1], torque_limits, residual_limits
        )
        duration = float(series.time[-1] - series.time[0])
        sections.append(
            f'<h3>{_e(series.name)}</h3>\n<p class="note">{series.time.shape[0]} samples, {duration:.6g} s.</p>\n'
            + _image(name, f"measured and predicted joint torques, {series.name}")
        )
    sections.append("</section>")
    speed_rule = (
        f" where |q̇_j| ≥ {_number(data.min_speed_rad_s, 'g')} rad/s (the stick phases the model leaves out)"
        if data.min_speed_rad_s > 0.0
        else ""
    )
    sections += [
        '<section id="errors"><h2>Per-joint errors</h2>',
        '<p class="note">Identification: e_j and e*_j of the estimate on its own (decimated) equations'
        " [Volkmann2020] eq. (11)-(12). Per data set: over the samples with a prediction"
        f"{_e(speed_rule)}; RMS of the residual, e_j = mean |τ − τ̂| and e*_j = Σ|τ − τ̂| / Σ|τ|.</p>",
        _error_table(data, errors, covered),
        "</section>",
        '<section id="spectra"><h2>Residual spectra</h2>',
    ]
    if _spectra_figure(target / "spectra.png", data):
        sections += [
            '<p class="note">Amplitude spectral density √PSD of the residual measured − predicted, Welch\'s method'
            f" (Hann segments of about {1.0 / SPECTRUM_RESOLUTION_HZ:g} s, half overlap, over the stretches with a"
            " prediction, stick phases included); light grey: the measured torque of the first data set for scale."
            " A residual peak at"
            " the motion's frequencies is model error; a flat floor is sensor noise.</p>",
            _image("spectra.png", "amplitude spectra of the torque residuals"),
        ]
    else:
        (target / "spectra.png").unlink(missing_ok=True)
        sections.append('<p class="none">No residual spectrum: no stretch of predictions is long enough.</p>')
    sections += [
        "</section>",
        '<section id="coverage"><h2>Coverage of the joint ranges</h2>',
    ]
    _coverage_figure(target / "coverage.png", data, covered)
    sections += [
        '<p class="note">Which part of each joint\'s position range (URDF limits) and velocity limit each data set'
        " reached. A model is only validated where the data went.</p>",
        _image("coverage.png", "position range and speed covered per joint"),
        _coverage_table(data, covered),
        "</section>",
        '<section id="parameters"><h2>Identified parameters</h2>',
        f'<p class="note">σ: standard deviation, in the parameter\'s unit; %σ: relative standard deviation'
        " [Gautier2013] eq. (19); a value the physical consistency holds at its bound shows the bound instead."
        ' <span style="background:#fff1cc">'
        f'Amber</span>: %σ &gt; {HIGH_STD_PERCENT:g} (poorly identified); <span style="background:#fbd5d5">red'
        "</span>: not identifiable. Expression: the standard parameters a base parameter regroups.</p>",
        _table(["#", "name", "value", "unit", "σ", "%σ", "expression"], _parameter_rows(data)),
    ]
    if data.removed:
        rows = [f"<tr><td>{_e(name)}</td><td>{_e(reason)}</td></tr>" for name, reason in data.removed]
        sections += ["<h3>Removed parameters</h3>", _table(["name", "reason"], rows)]
    else:
        sections.append("<p>No parameter was removed.</p>")
    settings = _flatten(data.settings)
    sections += [
        "</section>",
        '<section id="consistency"><h2>Physical consistency</h2>',
        _consistency(data),
        "</section>",
        '<section id="plausibility"><h2>Plausibility</h2>',
        _plausibility(data),
        "</section>",
        '<section id="settings"><h2>Settings used</h2>',
        _table(["setting", "value"], [f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in settings])
        if settings
        else "<p>None given.</p>",
        "</section>",
        '<section id="references"><h2>References</h2><ul>',
        *(f"<li>[{_e(key)}] {_e(text)}</li>" for key, text in _REFERENCES),
        "</ul></section>",
    ]
    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(data.title)}</title>\n<style>\n{_CSS}\n</style>\n</head>\n<body>\n"
        + "\n".join(part for part in sections if part)
        + "\n</body>\n</html>\n"
    )
    page_path = target / "index.html"
    page_path.write_text(page, encoding="utf-8")
    return page_path
