"""In-process identification: sliding-window WLS with model reduction ([Volkmann2020], [Gautier2013] eq. (16)-(20)).

Samples arrive in time order while the robot does its job. Every
``update_period_s`` of data, the new samples are resampled onto a uniform grid,
filtered and differentiated ([Gautier2013] §IV.A) with enough margin that the filter
transients never reach the rows produced, turned into decimated base-IDIM rows
(parallel decimation, [Gautier2013] eq. (13)-(14)) and added to the window as one block.
Blocks older than ``window_s`` leave it. The window's per-joint normal equations are
updated by adding the new block and subtracting the expired ones, and recomputed from
the stored rows every ``refactor_every`` updates so round-off never accumulates.

Each update then runs the identification seam's reduction and quality steps
(:func:`~dynamic_identification.core.identification.solve.reduce_model`,
:class:`~dynamic_identification.core.estimation.quality.JointErrors`,
:func:`~dynamic_identification.core.identification.solve.plausibility_problems`) on the
window: joints weighted by their residual variance ([Gautier2013] eq. (20)), the model
reduced ([Volkmann2020] Algorithm 1 by default), the quality gates passed; only an
estimate that passes them is marked publishable, the others carry the reason.

The model a publishable update's reduction chose serves the next updates while Algorithm 1 still
accepts it on their window
(:func:`~dynamic_identification.core.identification.solve.recheck_model`: every parameter
determined, the forced ones in it, every joint's ``e*_j`` within ``e_tol`` of the full model's)
and until ``window_s`` of data has come since it was chosen: the window then holds none of the
data that chose it. Models that Algorithm 1 accepts alike differ from update to update by the
window's noise; keeping one while it is accepted publishes the same parameter set until the data
ask for another, and saves the reduction's trials. An update that is not published, or whose kept
model fails a gate (the reduction then chooses in that update), leaves the next one to choose.

The published ``%σ`` ([Gautier2013] eq. (19)) is by default autocorrelation-consistent,
as offline (:func:`~dynamic_identification.core.estimation.uncertainty.hac_covariance`
on the window's stored rows of the kept columns at update time, Newey & West 1987 with
Andrews' 1991 bandwidth and the Kiefer & Vogelsang 2005 fixed-b widening): the
residuals of the decimated rows are correlated in time, and the white σ of
eq. (17)-(18), which the reduction still uses, understates σ several times. Its bread is
the window's weighted normal matrix of the kept columns, taken from the normal
equations; its scores cost one product of the window's ``h × n × b`` rows with a valid equation
with the weighted residuals per update, the residuals those of the joint errors
(``bench/bench_stream.py`` prints the update latency with and without it). The window keeps only
those rows: one whose every equation is masked (a stop of the process, a velocity reversal) adds
nothing to any sum, and only its place in time is kept, for the HAC's lags.

Stamps (:mod:`~dynamic_identification.core.signal.stamps`): a stamp earlier than the last one
(a bag loop, a simulation reset) clears the window. Forward, the one rule of every path
(:func:`~dynamic_identification.core.identification.motion.longest_step_s`): a driver's
hiccup of a few samples is bridged by the grid's interpolation; only a step longer than
``gap_factor`` grid periods and a quarter period of the position cut-off is a gap. A gap
never clears the window: the samples before it are turned into rows as far as their filter
margins allow, and the grid starts afresh at the first sample after it, so the window holds
the rows of its last ``window_s`` of stamp time in one or more segments, each filtered on its
own, a gap is never interpolated, and the work and memory of an update are bounded by the
samples received, whatever the stamps say. An update is publishable only when its rows cover
``window.min_fill`` of ``window_s`` (with the other quality gates); after a gap longer than the
window, the window refills with new data only.

An update never raises on its data: samples it cannot use (a stretch between two gaps too short
for the filter margins, a configured cut-off above the Nyquist frequency of the samples, which
is then lowered to the automatic rule's ceiling) are reported in the update's ``note`` and the
window goes on.

Sample instants (``signal.stamps``, the rule of offline identification,
:func:`~dynamic_identification.core.identification.motion.sample_instants`): a driver that
stamps late scatters the stamps of regularly taken samples, and positions interpolated at
those stamps and differentiated twice carry the stamp error times the acceleration. With
``auto`` the window decides once, from the data its grid is made from, whether the stamps
scatter by more than :data:`~dynamic_identification.core.identification.motion.STAMP_JITTER_LIMIT`
of a period, the recovery keeps the order of the samples and the positions are smoother
against the recovered instants; stamps that scatter that much make it wait for
:data:`AUTO_CUTOFF_DATA_S` of data to judge, their gaps being those of the recovered instants.
When recovering, every update recovers the instants of its pending samples from their order
(:func:`~dynamic_identification.core.signal.filters.recovered_instants`, a running median over
:data:`~dynamic_identification.core.signal.filters.STAMP_RECOVERY_WINDOW` samples, far fewer than
the filter margins kept pending) before the gap rule and the grid: the work stays that of
the samples received, and a gap of the recovered instants is still never interpolated.
Measured on the realistic presets (``bench/bench_window_stamps.py --seeds 3 --variants``, 60 s of
Fourier excitation, medians over the publishable updates): the UR5's stamps (120 µs jitter,
stalls) taken as recorded cost 10-12 % more parameter error than the true instants, and on
one seed 39 % more validation torque error and 2.1 times the parameter error; recovered,
they cost nothing. The arm6's 30 µs jitter costs nothing either way. The Panda's 1 ms
counter at 978 Hz, whose colliding stamps the streams drop as repeated, is kept as recorded
(up to 16 % more error than the true instants; recovered, its slipped sample order made it
1.5-3.6 times).
"""

from __future__ import annotations

import importlib
import time as wall_clock
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TypeVar

import numpy as np
from threadpoolctl import ThreadpoolController

from dynamic_identification.core.errors import DataError, IdentificationError, RankDeficientError
from dynamic_identification.core.estimation.consistency import ConsistentEstimator
from dynamic_identification.core.estimation.normal_equations import (
    NormalEquations,
    joint_error_std_from_normal_equations,
)
from dynamic_identification.core.estimation.quality import JointErrors, relative_std_percent
from dynamic_identification.core.estimation.reduction import NOT_IDENTIFIABLE, ReductionResult
from dynamic_identification.core.estimation.uncertainty import RobustCovariance, hac_covariance_of_scores
from dynamic_identification.core.identification.motion import (
    STAMP_JITTER_LIMIT,
    automatic_cutoff_hz,
    edge_samples,
    highest_automatic_cutoff_hz,
    longest_step_s,
    motion_bandwidth_hz,
    sample_instants,
)
from dynamic_identification.core.identification.observations import DecimatedRows, RowBuilder
from dynamic_identification.core.identification.settings import AUTO_CUTOFF_HZ, ReductionSettings, SignalSettings
from dynamic_identification.core.identification.solve import (
    consistent_step,
    plausibility_problems,
    recheck_model,
    reduce_model,
    removed_reasons,
)
from dynamic_identification.core.identification.torque_delay import (
    BLOCKS,
    DelaySums,
    LateRows,
    TorqueDelay,
    delay_blocks,
    filtered_whole_shifts,
    in_band,
    measured_rows,
    read_late_on_grid,
)
from dynamic_identification.core.mechanism.plausibility import PlausibilityBounds, mechanism_bounds
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.regressors.idim import BaseParameters
from dynamic_identification.core.settings_schema import check_fields, nested_field, setting_field
from dynamic_identification.core.signal.filters import (
    RecoveredStamps,
    default_decimation,
    differentiate,
    interpolate_at,
    longest_bridge_s,
    recover_stamps,
    recovered_instants,
)
from dynamic_identification.core.signal.stamps import accepted_samples, chunk_end_s

_Recovered = TypeVar("_Recovered")

AUTO_CUTOFF_DATA_S = 5.0
"""Data time, s, from which a window with the automatic cut-off chooses it, and a window with ``signal.stamps:
auto`` whose stamps scatter decides whether to recover the instants: half the default window (or the whole window
if shorter), a whole period of any excitation of 0.2 Hz or faster."""


def load_window_modules() -> None:
    """Import what every update of a window filters with, SciPy's signal module (most of a second): a window loads
    it when built, not in an update, and an entry point that freezes its start-up's objects
    (:func:`~dynamic_identification.collector.freeze_startup_objects`) before it builds its window loads it first."""
    importlib.import_module("scipy.signal")


@dataclass(frozen=True)
class WindowSettings:
    """Settings of the in-process estimator (defaults and bounds: the ``window.*`` settings of the schema).

    Attributes
    ----------
    window_s
        Length of the window, s of data.
    update_period_s
        Data time between updates, s.
    signal
        Signal processing, as for offline identification: the grid rate (0 estimates it
        from the first samples' median step), the position cut-off (0: chosen from the
        first :data:`AUTO_CUTOFF_DATA_S` of data after the last gap by the rule of
        :func:`~dynamic_identification.core.identification.motion.resolve_signal` and kept,
        so every row of the window is filtered alike), the decimation, the stick speed,
        ``gap_factor``: a step of the sample instants longer than that many grid periods
        and than a quarter period of the cut-off restarts the grid, never interpolated
        (shorter ones are bridged), and ``stamps``: the sample instants, as
        offline (``auto``: recovered from the sample order when the stamps scatter, decided
        once from the first data; see the module docstring). The window differentiates the
        positions: ``signal.velocity`` is not used.
    stick_periods
        Decimation periods on each side of a slow sample whose equations are left out;
        the default ten is the decimation filter's whole support, as offline, so no
        stick phase reaches an equation. Fewer keep more of a process that stops often
        (the accelerations out of and into every stop) at the price of some stick:
        beyond three periods the filter passes less than 3 % of a torque step. On the
        square process of the shipped arm without stick phases (inverse-dynamics
        data), ten periods masked 11 % of joint 2's moving equations and the model
        reduced at ``e_tol = 5 %`` predicted a fresh run 20 % worse than an excitation
        model on that joint, three periods 3 %; in the closed-loop simulator, whose
        joints do stick, three periods raised the error of the predicted raw torques
        from 4.0 % to 6-9 %.
    reduction
        Model reduction and the published uncertainty, as offline
        (:class:`~dynamic_identification.core.identification.settings.ReductionSettings`), but the method
        from ``window.reduction`` (default ``sensitivity``); the reduction uses the white ``%σ``
        of the normal equations whatever ``uncertainty`` says.
    keep_model
        With the ``sensitivity`` reduction, the model of the last published update serves while Algorithm 1
        still accepts it on the window, for at most ``window_s`` of data (module docstring); ``False``: the
        reduction chooses at every update.
    min_motion_rad
        Gate: some joint must travel this far in the window.
    min_fill
        Gate: the window's rows must cover this fraction of ``window_s`` (gaps, filter
        margins and the first data before the cut-off is chosen hold none).
    max_condition_number, max_relative_error
        Gates on the reduced model.
    refactor_every
        Updates between recomputing the normal equations from the stored rows.
    effort_factor, mass_factor
        Plausibility gates (:mod:`~dynamic_identification.core.mechanism.plausibility`): the
        model's torques on its own window within ``effort_factor`` effort limits, its
        inertial parameters within what ``mass_factor`` times the URDF's mass produces.
    """

    window_s: float = setting_field("window.window_s")
    update_period_s: float = setting_field("window.update_period_s")
    signal: SignalSettings = nested_field(SignalSettings)
    stick_periods: int = setting_field("window.stick_periods")
    reduction: ReductionSettings = nested_field(ReductionSettings, method="window.reduction")
    keep_model: bool = setting_field("window.keep_model")
    min_motion_rad: float = setting_field("window.min_motion_rad")
    min_fill: float = setting_field("window.min_fill")
    max_condition_number: float = setting_field("window.max_condition_number")
    max_relative_error: float = setting_field("window.max_relative_error")
    refactor_every: int = setting_field("window.refactor_every")
    effort_factor: float = setting_field("plausibility.effort_factor")
    mass_factor: float = setting_field("plausibility.mass_factor")

    def __post_init__(self) -> None:
        check_fields(self)
        if self.signal.position_cutoff_hz is None:
            raise IdentificationError("position_cutoff_hz must be >= 0 (0: from the data), got None")
        if self.update_period_s > self.window_s:
            raise IdentificationError(
                f"update_period_s={self.update_period_s} must not exceed window_s={self.window_s}"
            )

    @property
    def position_cutoff_hz(self) -> float:
        """The configured low-pass cut-off of the positions, Hz (``signal.position_cutoff_hz``, never ``None`` here;
        :data:`AUTO_CUTOFF_HZ`: chosen from the first data)."""
        return float(self.signal.position_cutoff_hz or 0.0)


@dataclass(frozen=True)
class WindowUpdate:
    """One update of the sliding window.

    ``publishable`` is true only when every quality gate passed; otherwise
    ``reason`` says why and the parameters (if any) must not be used.
    ``joint_errors`` and ``joint_relative_errors`` ([Volkmann2020] eq. (11)-(12)) are NaN for
    a joint without an equation in the window (it did not move). ``position_cutoff_hz`` is
    the cut-off in use (chosen from the first data when configured 0; NaN before), and
    ``recovered_stamps`` whether the window recovers the sample instants (``signal.stamps``).
    ``consistency_shift_sigma`` and ``consistency_cost`` say what publishing the physically
    consistent estimate cost ([Wensing2018]: its distance from the unconstrained one in σ,
    the relative growth of the weighted residual); NaN when it was not computed;
    ``consistent_standard`` its standard parameters (empty then).
    ``std_percent`` is the HAC ``%σ`` of ``uncertainty`` (which holds the white σ beside
    it) when ``uncertainty`` is set, else [Gautier2013] eq. (19) with eq. (18)'s σ
    (``WindowSettings.reduction.uncertainty == "white"``, or ``uncertainty_fallback`` says why).
    ``window_s`` is the stamp time from the window's first row to its last, ``data_s`` the
    data its rows cover (s; less after gaps), ``model_chosen_s`` the data time, s, of the update whose reduction
    chose the model (this one's, or an earlier one's whose model the window kept; NaN before a reduction ran),
    ``torque_delay`` the torques' delay behind the positions measured on the window's first
    :data:`~dynamic_identification.core.identification.torque_delay.MEASURED_DATA_S` of rows with an equation
    (``signal.torque_delay: auto``; ``None`` before and with ``none``), ``note`` what this update had to leave out or
    adapt (samples it could not use, a lowered cut-off), empty when nothing.
    """

    time_s: float
    publishable: bool
    reason: str
    names: tuple[str, ...] = ()
    values: np.ndarray = field(default_factory=lambda: np.zeros(0))
    std_percent: np.ndarray = field(default_factory=lambda: np.zeros(0))
    removed: tuple[tuple[str, str], ...] = ()
    condition_number_full: float = float("nan")
    condition_number: float = float("nan")
    relative_error: float = float("nan")
    joint_errors: np.ndarray = field(default_factory=lambda: np.zeros(0))
    joint_relative_errors: np.ndarray = field(default_factory=lambda: np.zeros(0))
    samples: int = 0
    window_s: float = 0.0
    data_s: float = 0.0
    seconds: float = 0.0
    position_cutoff_hz: float = float("nan")
    recovered_stamps: bool = False
    consistency_shift_sigma: float = float("nan")
    consistency_cost: float = float("nan")
    consistent_standard: np.ndarray = field(default_factory=lambda: np.zeros(0))
    model_chosen_s: float = float("nan")
    torque_delay: TorqueDelay | None = None
    uncertainty: RobustCovariance | None = None
    uncertainty_fallback: str = ""
    note: str = ""


@dataclass
class _Block:
    """One update's rows in the window: their stamps ``time`` (s, one per row), normal equations and joint range.

    Only its rows with a valid equation, ``held`` of them, are kept (in the window's :class:`_RowStore`): a row
    whose every equation is masked (a stop, a velocity reversal) adds nothing to the normal equations, the joint
    errors or the HAC scores, but its place in time still counts for the HAC's lags.
    """

    held: int
    time: np.ndarray
    equations: NormalEquations
    q_min: np.ndarray
    q_max: np.ndarray


@dataclass(frozen=True)
class _ChosenModel:
    """The reduced model of the last publishable update and the data time, s, of the update whose reduction chose it."""

    reduction: ReductionResult
    time_s: float


@dataclass(frozen=True)
class _HeldRows:
    """The window's rows with a valid equation, in time order: ``W`` ``(h, n, b)``, ``Y`` ``(h, n)``, ``valid``,
    and ``positions`` ``(h,)`` among all the window's ``rows``."""

    observation_matrix: np.ndarray
    torques: np.ndarray
    valid: np.ndarray
    positions: np.ndarray
    rows: int


class _RowStore:
    """The window's rows with a valid equation, oldest first, in one buffer that blocks are appended to and expire
    from by moving its start: an update reads them as views instead of joining every block's copy (a 10 s window
    of the shipped arm: a thousand rows of 6 × 58, 2.8 MB a join). The buffer is compacted in place when full, so
    the views of :meth:`held` hold only until the next :meth:`append`."""

    def __init__(self, n: int, b: int) -> None:
        self._observation_matrix = np.zeros((0, n, b))
        self._torques = np.zeros((0, n))
        self._valid = np.zeros((0, n), dtype=bool)
        # Each held row's position among every row ever appended (held or not).
        self._positions = np.zeros(0, dtype=np.int64)
        self._start = self._stop = 0
        self._appended_rows = 0
        self._first_row = 0

    def append(self, rows: DecimatedRows, held: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Keep the rows ``held`` (indices) of ``rows``; the kept rows ``(W, Y, valid)``, views of the buffer."""
        count = held.size
        if self._stop + count > self._positions.size:
            self._make_room(count)
        kept = slice(self._stop, self._stop + count)
        # "clip": the indices are the rows' own, and numpy buffers the output of a take that checks them.
        np.take(rows.observation_matrix, held, axis=0, out=self._observation_matrix[kept], mode="clip")
        np.take(rows.torques, held, axis=0, out=self._torques[kept], mode="clip")
        np.take(rows.valid, held, axis=0, out=self._valid[kept], mode="clip")
        self._positions[kept] = held + self._appended_rows
        self._stop += count
        self._appended_rows += rows.index.size
        return self._observation_matrix[kept], self._torques[kept], self._valid[kept]

    def expire(self, block: _Block) -> None:
        """Forget the oldest block, ``block``."""
        self._start += block.held
        self._first_row += block.time.size

    def held(self) -> _HeldRows:
        """The rows kept, as views of the buffer."""
        kept = slice(self._start, self._stop)
        return _HeldRows(
            observation_matrix=self._observation_matrix[kept],
            torques=self._torques[kept],
            valid=self._valid[kept],
            positions=self._positions[kept] - self._first_row,
            rows=self._appended_rows - self._first_row,
        )

    def _make_room(self, count: int) -> None:
        """Move the rows kept to the buffer's start, in a buffer grown to twice what they and ``count`` more need
        when it is too small: the copies cost a constant share of the appends."""
        kept = slice(self._start, self._stop)
        live = self._stop - self._start
        arrays = (self._observation_matrix, self._torques, self._valid, self._positions)
        if 2 * (live + count) > self._positions.size:
            capacity = 2 * (live + count)
            grown = tuple(np.empty((capacity, *array.shape[1:]), dtype=array.dtype) for array in arrays)
        else:
            grown = arrays
        for old, new in zip(arrays, grown, strict=True):
            # In place, the rows kept start at or after `live`: twice what is needed fits, so the ranges never overlap.
            new[:live] = old[kept]
        self._observation_matrix, self._torques, self._valid, self._positions = grown
        self._start, self._stop = 0, live


class SlidingWindowEstimator:
    """Sliding-window WLS on the base parameters, fed sample by sample (see the module docstring)."""

    def __init__(
        self,
        dynamic_model: DynamicModel,
        settings: WindowSettings,
        *,
        bounds: PlausibilityBounds | None = None,
        consistency: ConsistentEstimator | None = None,
    ) -> None:
        """``bounds`` of the plausibility gates default to the URDF's limits with the settings' factors
        (:func:`~dynamic_identification.core.mechanism.plausibility.mechanism_bounds`).

        The samples hold the controlled joints' positions and torques ``(N, n_a)``; a closed-loop
        robot's rows complete the tree motion at the decimated instants
        (:meth:`~.observations.RowBuilder.sampled_rows`, [Briot2012] eq. (2)-(7)).

        With ``consistency`` every update that passes the quality gates publishes the
        physically consistent estimate nearest to the window's normal equations
        ([Wensing2018], the seam's step 5); an update whose consistent estimate cannot be
        computed is not publishable.
        """
        load_window_modules()
        mechanism = dynamic_model.mechanism
        self._consistency = consistency
        self._settings = settings
        self._n = mechanism.n_actuated
        self._bounds = bounds or mechanism_bounds(
            mechanism, effort_factor=settings.effort_factor, mass_factor=settings.mass_factor
        )
        self._base = dynamic_model.base
        self._make_builder = partial(RowBuilder.create, dynamic_model)
        self._blas = [library for library in ThreadpoolController().lib_controllers if library.user_api == "blas"]
        self.reset()

    @property
    def base(self) -> BaseParameters:
        return self._base

    @property
    def settings(self) -> WindowSettings:
        return self._settings

    def reset(self) -> None:
        """Forget every sample and the window."""
        self._time: list[np.ndarray] = []
        self._q: list[np.ndarray] = []
        self._tau: list[np.ndarray] = []
        self._last_time = -np.inf
        self._last_q: np.ndarray | None = None
        self._chunk_origin: float | None = None
        self._chunk_end: float | None = None
        self._origin = 0.0
        self._dt = 0.0
        self._edge = 0
        self._cutoff = float("nan")
        self._recover = False
        self._builder: RowBuilder | None = None
        # Data (s) the decisions taken before the first rows have had so far; None: they do not wait for data.
        self._deciding_s: float | None = None
        self._next_output: int | None = None
        self._blocks: deque[_Block] = deque()
        self._store = _RowStore(self._n, self._base.count)
        self._held: _HeldRows | None = None
        self._equations = NormalEquations.zeros(self._n, self._base.count)
        self._updates = 0
        self._notes: list[str] = []
        self._model: _ChosenModel | None = None
        # signal.torque_delay auto: the sums of the rows so far until the delay is decided, and the decision.
        self._delay_sums: DelaySums | None = None
        self._delay_rows = 0
        self._torque_delay: TorqueDelay | None = None

    @property
    def chunk_end_s(self) -> float | None:
        """Data time, s, that ends the samples added since the last update; ``None`` before one is added.

        :func:`~dynamic_identification.core.signal.stamps.chunk_end_s` of the first of them,
        on the grid of ``update_period_s`` from the first sample since the window (re)started:
        a sample at or after it belongs to the next update (:meth:`update_due`).
        """
        return self._chunk_end

    def update_due(self, stamp_s: float) -> bool:
        """Whether the samples added since the last update are to be estimated before a sample stamped ``stamp_s``.

        They are when that sample ends their chunk (:attr:`chunk_end_s`), or steps back in time and
        so restarts the window. A caller that receives samples in bursts (the estimator node) asks
        this of each sample before adding it, and updates first when it says so: the updates then
        fall where ``dynid stream``'s chunks
        (:func:`~dynamic_identification.core.signal.stamps.stream_chunks`) end them, whatever the
        batches, and give the same estimates.
        """
        return self._chunk_end is not None and (stamp_s >= self._chunk_end or stamp_s < self._last_time)

    def add_samples(self, time_s: np.ndarray, q: np.ndarray, torques: np.ndarray) -> bool:
        """Append samples (rows in time order, joints in model order).

        Returns ``True`` when the stamps went backwards and the window was cleared
        (the new samples then start a fresh window). A repeated stamp is dropped unless its positions are new: a
        sample stamped again (:func:`~dynamic_identification.core.signal.stamps.accepted_samples`), which recovered
        sample instants put back in its place and stamps kept as recorded leave out.

        Raises
        ------
        IdentificationError
            On non-finite values or shapes that do not match the robot.
        """
        time = np.atleast_1d(np.asarray(time_s, dtype=float))
        positions = np.atleast_2d(np.asarray(q, dtype=float))
        efforts = np.atleast_2d(np.asarray(torques, dtype=float))
        n = self._n
        if positions.shape != (time.size, n) or efforts.shape != (time.size, n):
            raise IdentificationError(
                f"need q and torques of shape ({time.size}, {n}), got {positions.shape} and {efforts.shape}"
            )
        if not (np.all(np.isfinite(time)) and np.all(np.isfinite(positions)) and np.all(np.isfinite(efforts))):
            raise IdentificationError("samples must be finite (NaN or inf received)")
        jumped = False
        if time.size and time[0] < self._last_time:
            self.reset()
            jumped = True
        if time.size > 1 and np.any(np.diff(time) < 0.0):
            raise IdentificationError("samples of one call must be in time order")
        keep = accepted_samples(time, positions, latest_s=self._last_time, latest_values=self._last_q)
        if keep.any():
            kept = time[keep]
            first = float(kept[0])
            if self._chunk_origin is None:
                self._chunk_origin = first
            if self._chunk_end is None:
                self._chunk_end = chunk_end_s(self._chunk_origin, first, self._settings.update_period_s)
            self._time.append(kept)
            self._q.append(positions[keep])
            self._tau.append(efforts[keep])
            self._last_time = float(kept[-1])
            self._last_q = positions[keep][-1]
        return jumped

    def update(self) -> WindowUpdate:
        """Turn pending samples into rows, slide the window and estimate."""
        started = wall_clock.perf_counter()
        self._chunk_end = None  # the samples after this update start the next chunk, whatever happens here
        with self._one_blas_thread():
            try:
                self._absorb_pending()
            except IdentificationError as error:
                # Never the window's end: these samples are left out, said so, and the window goes on.
                left_out = int(sum(chunk.size for chunk in self._time))
                self._time, self._q, self._tau = [], [], []
                self._notes.append(f"{left_out} samples left out: {error}")
            # Rows trail the newest sample by the filter margins; rows older than that and the window
            # (after a gap, when no row has come yet) leave the window all the same.
            self._expire(self._last_time - self._margin_s())
            result = self._estimate()
        if not result.publishable:
            self._model = None
        self._updates += 1
        note, self._notes = "; ".join(self._notes), []
        return replace(result, seconds=wall_clock.perf_counter() - started, note=note)

    @contextmanager
    def _one_blas_thread(self) -> Iterator[None]:
        """The process's BLAS libraries at one thread each meanwhile, as they were after: the window's matrices are
        small (tens of columns), more threads only add overhead. A library at one thread already (``dynid``, the
        nodes: :mod:`dynamic_identification.blas`) is left alone; ``threadpoolctl``'s own ``limit`` goes through its
        generic selection of the libraries at every call, several times the cost."""
        changed = [(library, threads) for library in self._blas if (threads := library.num_threads) != 1]
        for library, _ in changed:
            library.set_num_threads(1)
        try:
            yield
        finally:
            for library, threads in changed:
                library.set_num_threads(threads)

    def window_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The window's rows ``(W, Y, valid)`` in time order, e.g. for a batch WLS or HAC on the same data.

        A row without a valid equation is not kept by the window: it comes back as zeros with ``valid`` false,
        which no weighted sum, residual or score sees.
        """
        held = self._held_rows()
        observation_matrix = np.zeros((held.rows, *held.observation_matrix.shape[1:]))
        torques = np.zeros((held.rows, held.torques.shape[1]))
        valid = np.zeros((held.rows, held.valid.shape[1]), dtype=bool)
        observation_matrix[held.positions] = held.observation_matrix
        torques[held.positions] = held.torques
        valid[held.positions] = held.valid
        return observation_matrix, torques, valid

    def _held_rows(self) -> _HeldRows:
        """The window's rows with a valid equation (:class:`_RowStore`), taken once per change of the window: an
        update's passes over them (the joint errors, the HAC scores) are one array operation each."""
        if self._held is None:
            self._held = self._store.held()
        return self._held

    def window_equations(self) -> NormalEquations:
        """The window's normal equations as maintained incrementally."""
        return self._equations

    def _absorb_pending(self) -> None:
        if not self._time:
            return
        time = np.concatenate(self._time)
        q = np.concatenate(self._q)
        tau = np.concatenate(self._tau)
        fresh = self._builder is None
        if fresh:
            if not self._create_builder_when_ready(time, q, tau):
                return
            time, q, tau = self._time[0], self._q[0], self._tau[0]
        # The recorded stamps stay pending; the grid, the gaps and the margins are of the sample instants.
        stamps, time = time, self._instants(time)
        stamped = accepted_samples(stamps) if time is stamps else None
        if stamped is not None and not stamped.all():
            # Samples stamped again have no instant of their own without the recovery.
            stamps, time, q, tau = stamps[stamped], stamps[stamped], q[stamped], tau[stamped]
        bridge = longest_bridge_s(self._dt, gap_factor=self._settings.signal.gap_factor, cutoff_hz=self._cutoff)
        gaps = np.flatnonzero(np.diff(time) > bridge) + 1
        starts = np.concatenate([[0], gaps])
        stops = np.concatenate([gaps, [time.size]])
        kept = slice(0, 0)
        short = 0
        for number, (start, stop) in enumerate(zip(starts.tolist(), stops.tolist(), strict=True)):
            if number > 0 or fresh:
                # After a gap the grid starts afresh at the first sample: the gap is never interpolated.
                self._origin = float(time[start])
                self._next_output = None
            piece = slice(start, stop)
            keep_from = self._absorb_segment(time[piece], q[piece], tau[piece])
            if number < starts.size - 1 and keep_from <= time[start] and self._next_output is None:
                short += stop - start
            kept = slice(start + int(np.searchsorted(time[piece], keep_from)), stop)
        if short:
            self._notes.append(
                f"{short} samples between gaps left out: each stretch too short for the filter margins"
                f" ({2 * (self._edge + self._reach()) + self._factor()} samples at {1.0 / self._dt:.4g} Hz)"
            )
        self._time, self._q, self._tau = [stamps[kept]], [q[kept]], [tau[kept]]

    def _create_builder_when_ready(self, time: np.ndarray, q: np.ndarray, tau: np.ndarray) -> bool:
        """Before the first rows: decide the sample instants, the grid and the cut-off once the pending samples
        ``time`` (stamps, s), ``q`` (rad), ``tau`` (N·m) allow it, and create the row builder; whether it was
        created. The pending samples are left as one chunk.

        The decisions are taken on the longest stretch between gaps (hiccups bridged at the automatic rule's
        shortest bridge); the automatic cut-off, and the stamp decision of scattered stamps, wait for
        :data:`AUTO_CUTOFF_DATA_S` of data between the gaps (the whole window if shorter). Stretches that end more
        than a window before the newest sample are dropped meanwhile: they would have left the window anyway.
        Gaps of scattered stamps that may be recovered are those of the recovered instants.
        """
        settings = self._settings
        self._time, self._q, self._tau = [time], [q], [tau]
        if time.size < 32:
            return False
        candidate = self._recovered(time)
        marks = time if candidate is None else time[0] + candidate.time
        step_s = 1.0 / settings.signal.rate_hz if settings.signal.rate_hz else float(np.median(np.diff(marks)))
        gaps = np.flatnonzero(np.diff(marks) > longest_step_s(settings.signal, step_s)) + 1
        starts = np.concatenate([[0], gaps])
        stops = np.concatenate([gaps, [marks.size]])
        recent = marks[stops - 1] >= marks[-1] - settings.window_s
        if not recent.all():
            first = int(starts[np.argmax(recent)])
            return self._create_builder_when_ready(time[first:], q[first:], tau[first:])
        lengths = stops - starts
        longest = int(np.argmax(lengths))
        if lengths[longest] < 32:
            return False
        scattered = settings.signal.stamps == "auto" and candidate is not None
        waiting = settings.position_cutoff_hz == AUTO_CUTOFF_HZ or scattered
        data_s = float(np.sum(marks[stops - 1] - marks[starts]))
        if waiting and data_s < min(AUTO_CUTOFF_DATA_S, settings.window_s):
            self._deciding_s = data_s
            return False
        piece = slice(int(starts[longest]), int(stops[longest]))
        self._create_builder(time[piece], q[piece])
        return True

    def _recovered(self, time: np.ndarray) -> RecoveredStamps | None:
        """Before the window decides on its sample instants: those recovered from the stamps ``time`` (s; relative
        to the first), or ``None`` when the stamps are to be taken as recorded, scatter by no more than
        :data:`STAMP_JITTER_LIMIT` of a period (the decision is then theirs at once) or cannot be recovered."""
        stamps = self._settings.signal.stamps
        if stamps == "recorded":
            return None
        candidate = self._recover_from(time, recover_stamps)
        if candidate is None or (stamps == "auto" and candidate.jitter <= STAMP_JITTER_LIMIT):
            return None
        return candidate

    def _instants(self, time: np.ndarray) -> np.ndarray:
        """The instants (s) the pending samples stamped ``time`` were taken at: the stamps, or, when recovering,
        the instants recovered from their order (without the diagnostics the decision needed); a block whose
        recovered instants would not increase keeps its stamps."""
        recovered = self._recover_from(time, recovered_instants) if self._recover else None
        return time if recovered is None else time[0] + recovered

    def _recover_from(self, time: np.ndarray, recovery: Callable[..., _Recovered]) -> _Recovered | None:
        """``recovery`` (:func:`~dynamic_identification.core.signal.filters.recover_stamps` or its instants alone) of
        the stamps ``time`` (s), taken relative to the first; ``None`` for fewer than two or when the recovered
        instants would not increase."""
        if time.size < 2:
            return None
        try:
            return recovery(time - time[0], gap_factor=self._settings.signal.gap_factor)
        except DataError:
            return None

    @property
    def torque_delay(self) -> TorqueDelay | None:
        """The torques' delay behind the positions measured on the window's first
        :data:`~dynamic_identification.core.identification.torque_delay.MEASURED_DATA_S` of rows with an equation
        (``signal.torque_delay: auto``); ``None`` before, and with ``none``."""
        return self._torque_delay

    @property
    def recovers_stamps(self) -> bool:
        """Whether the window recovers the sample instants from the sample order (``signal.stamps``; with ``auto``
        decided from the first data, ``False`` before)."""
        return self._recover

    @property
    def position_cutoff_hz(self) -> float:
        """The position cut-off in use, Hz: the configured one, or the one chosen from the first data (NaN before)."""
        return self._cutoff

    def _create_builder(self, time: np.ndarray, q: np.ndarray) -> None:
        settings = self._settings
        # Stamps relative to the first one keep full resolution for epoch-based clocks (~1.7e9 s).
        try:
            instants = sample_instants(time - time[0], q, settings.signal)
        except DataError:
            instants = sample_instants(time - time[0], q, replace(settings.signal, stamps="recorded"))
        self._recover = instants.recovered
        if instants.recovered:
            period, time = instants.period_s, time[0] + instants.time
        else:
            stamped = accepted_samples(time)
            time, q = time[stamped], q[stamped]
            period = float(np.median(np.diff(time)))
        self._origin = float(time[0])
        self._dt = 1.0 / settings.signal.rate_hz if settings.signal.rate_hz else period
        rate = 1.0 / self._dt
        if settings.position_cutoff_hz == AUTO_CUTOFF_HZ:
            grid = self._origin + np.arange(int((time[-1] - time[0]) / self._dt)) * self._dt
            self._cutoff = automatic_cutoff_hz(motion_bandwidth_hz(interpolate_at(time, q, grid), rate), rate)
        else:
            self._cutoff = settings.position_cutoff_hz
        if self._cutoff >= 0.5 * rate:
            # Samples slower than the configured filter allows (a lossy stream): the automatic rule's ceiling.
            adapted = highest_automatic_cutoff_hz(rate)
            self._notes.append(
                f"position_cutoff_hz={self._cutoff:g} is not below the Nyquist frequency {0.5 * rate:.6g} Hz of the"
                f" {rate:.6g} Hz samples: filtering at {adapted:.3g} Hz"
            )
            self._cutoff = adapted
        factor = settings.signal.decimation or default_decimation(rate, position_cutoff_hz=self._cutoff)
        self._builder = self._make_builder(
            decimation=factor, min_speed_rad_s=settings.signal.min_speed_rad_s, stick_periods=settings.stick_periods
        )
        self._edge = edge_samples(rate, self._cutoff)
        if settings.signal.torque_delay == "auto":
            self._delay_sums = DelaySums(self._n, self._base.count)
            # The torques read up to LateRows.HIGHEST samples later stay within the samples kept pending.
            self._edge = max(self._edge, LateRows.HIGHEST)

    def _absorb_segment(self, time: np.ndarray, q: np.ndarray, tau: np.ndarray) -> float:
        """Rows of one contiguous piece of pending samples on the current grid; the stamp from which samples
        must stay pending (the filter margins of the rows still to come)."""
        builder, dt, origin = self._builder, self._dt, self._origin
        assert builder is not None  # created by _absorb_pending
        factor = builder.decimator.factor
        first_grid = int(np.ceil((time[0] - origin) / dt - 1e-9))
        last_grid = int(np.floor((time[-1] - origin) / dt + 1e-9))
        if last_grid - first_grid < 2 * (self._edge + builder.reach) + factor:
            return float(time[0])
        grid = origin + np.arange(first_grid, last_grid + 1) * dt
        # Local, so a grid value never depends on where the pending block ends.
        q_grid = interpolate_at(time, q, grid, kind="local_cubic")
        tau_grid = interpolate_at(time, tau, grid, kind="linear")
        q_filtered, dq, ddq = differentiate(q_grid, rate_hz=1.0 / dt, cutoff_hz=self._cutoff)
        usable_first = first_grid + self._edge
        usable_last = last_grid - self._edge
        lowest = usable_first + builder.reach
        next_output = lowest if self._next_output is None else max(self._next_output, lowest)
        next_output += (-next_output) % factor
        last_output = usable_last - builder.reach
        if last_output < next_output:
            return float(time[0])
        block = slice(next_output - builder.reach - first_grid, last_output + builder.reach + 1 - first_grid)
        delay = self._torque_delay
        rows = builder.sampled_rows(
            q_filtered[block],
            dq[block],
            ddq[block],
            tau_grid[block]
            if delay is None or not delay.applied
            else read_late_on_grid(tau_grid, block, delay.delay_s / dt),
            start=next_output - builder.reach,
            outputs=(next_output, last_output + 1),
        )
        self._next_output = int(rows.index[-1]) + factor if rows.index.size else next_output
        if rows.index.size:
            if self._delay_sums is not None:
                self._measure_delay(rows, tau_grid, block, start=next_output - builder.reach)
            q_block = q_filtered[block]
            q_times = origin + (next_output - builder.reach + np.arange(q_block.shape[0])) * dt
            self._add_rows(rows, origin + rows.index * dt, q_block, q_times)
        return origin + (self._next_output - builder.reach - self._edge - 2) * dt

    def _measure_delay(self, rows: DecimatedRows, tau_grid: np.ndarray, block: slice, *, start: int) -> None:
        """Sum ``rows`` for the torques' delay (:class:`~.torque_delay.DelaySums`), their torques read at every whole
        shift from ``tau_grid[block]`` (the block starts at grid index ``start``), and decide it once the sums hold
        :data:`~.torque_delay.MEASURED_DATA_S` of rows with an equation: the window's rows from then on read their
        torques with it (the rows already in the window stay as they are, and leave it within ``window_s``).

        Only rows with an equation count, so a robot that waits before its job (or stops for long) still gives the
        scan a minute of motion and each of its blocks equations; offline, a recording's first minute is what it is.
        """
        sums, builder = self._delay_sums, self._builder
        assert sums is not None and builder is not None  # measuring, after the builder was created
        held = np.flatnonzero(rows.valid.any(axis=1))
        if not held.size:
            return
        needed = measured_rows(1.0 / self._dt, builder.decimator.factor)
        in_band_torques = in_band(tau_grid, cutoff_hz=self._cutoff, rate_hz=1.0 / self._dt)
        # The decimator's output at global index g is read from the block's sample g - start (``start``: the block's
        # first sample's global index), which is grid index block.start + g - start.
        positions = block.start + rows.index[held] - start
        reads = filtered_whole_shifts(in_band_torques, positions, builder.decimator.taps)
        blocks = delay_blocks(self._delay_rows + np.arange(held.size), needed)
        for number in np.unique(blocks[blocks < BLOCKS]).tolist():
            at = blocks == number
            sums.add(number, rows.observation_matrix[held[at]], rows.valid[held[at]], reads[at])
        self._delay_rows += held.size
        if self._delay_rows >= needed:
            self._torque_delay = sums.delay(rate_hz=1.0 / self._dt)
            self._delay_sums = None

    def _add_rows(self, rows: DecimatedRows, times: np.ndarray, q: np.ndarray, q_times: np.ndarray) -> None:
        """Add the rows as blocks of at most ``update_period_s`` of data each, so the window expires data in
        steps of that size even when many seconds arrive at once (a waiting automatic cut-off, a late worker)."""
        period = self._settings.update_period_s
        number = np.floor((times - times[0]) / period).astype(int)
        for part in np.unique(number):
            inside = number == part
            near = (q_times >= times[inside][0] - period) & (q_times <= times[inside][-1] + period)
            self._add_block(rows.rows(inside), times[inside], q[near] if near.any() else q)

    def _reach(self) -> int:
        return self._builder.reach if self._builder is not None else 0

    def _factor(self) -> int:
        return self._builder.decimator.factor if self._builder is not None else 1

    def _margin_s(self) -> float:
        """How far the newest row trails the newest sample, s: the filter margins kept pending."""
        builder = self._builder
        if builder is None:
            return 0.0
        return (self._edge + builder.reach + builder.decimator.factor + 2) * self._dt

    def _expire(self, now_s: float) -> None:
        """Drop the blocks that ended more than ``window_s`` of data time before ``now_s``."""
        start = now_s - self._settings.window_s
        while self._blocks and self._blocks[0].time[-1] < start:
            expired = self._blocks.popleft()
            self._store.expire(expired)
            self._held = None
            self._equations = self._equations.without(expired.equations)

    def _add_block(self, rows: DecimatedRows, times: np.ndarray, q: np.ndarray) -> None:
        held = np.flatnonzero(rows.valid.any(axis=1))
        self._held = None
        observation_matrix, torques, valid = self._store.append(rows, held)
        # Each joint's samples contiguous: min and max along the rows of q (N, n) loop row by row, several times slower.
        by_joint = np.ascontiguousarray(q.T)
        block = _Block(
            held=held.size,
            time=times,
            # A row without a valid equation adds nothing to any sum.
            equations=NormalEquations.from_rows(observation_matrix, torques, valid),
            q_min=by_joint.min(axis=1),
            q_max=by_joint.max(axis=1),
        )
        self._blocks.append(block)
        self._equations = self._equations + block.equations
        self._expire(times[-1])
        if (self._updates + 1) % self._settings.refactor_every == 0:
            total = NormalEquations.zeros(self._n, self._base.count)
            for kept in self._blocks:
                total = total + kept.equations
            self._equations = total

    def _estimate(self) -> WindowUpdate:
        settings = self._settings
        now = self._last_time
        needed_s = settings.min_fill * settings.window_s
        if not self._blocks:
            return WindowUpdate(
                time_s=now,
                publishable=False,
                reason=(
                    f"waiting for data: the window holds no rows yet (publishes from {needed_s:.3g} s of rows)"
                    if self._builder is not None or self._deciding_s is None
                    else "waiting for data: the position cut-off and the sample instants are decided from the first"
                    f" {min(AUTO_CUTOFF_DATA_S, settings.window_s):g} s of data between gaps ({self._deciding_s:.3g} s"
                    f" so far), before the first row (the window publishes from {needed_s:.3g} s of rows)"
                ),
                position_cutoff_hz=self._cutoff,
            )
        span = float(self._blocks[-1].time[-1] - self._blocks[0].time[0])
        travel = np.max([b.q_max for b in self._blocks], axis=0) - np.min([b.q_min for b in self._blocks], axis=0)
        samples = int(sum(b.time.size for b in self._blocks))
        data_s = samples * self._factor() * self._dt
        blank = WindowUpdate(
            time_s=now,
            publishable=False,
            reason="",
            samples=samples,
            window_s=span,
            data_s=data_s,
            position_cutoff_hz=self._cutoff,
            recovered_stamps=self._recover,
            torque_delay=self._torque_delay,
        )
        if data_s < needed_s * (1.0 - 1e-9):
            return replace(
                blank,
                reason=f"waiting for data: the window's rows cover {data_s:.3g} s, it publishes from {needed_s:.3g} s"
                f" (window.min_fill {settings.min_fill:g} of window_s {settings.window_s:g} s)",
            )
        if travel.max() < settings.min_motion_rad:
            return replace(blank, reason=f"standstill: largest joint travel {travel.max():.3g} rad < min_motion_rad")
        if float(self._equations.count.sum()) <= 0.0:
            return replace(
                blank,
                reason="no usable equation: every joint moved slower than signal.min_speed_rad_s"
                f" ({self._settings.signal.min_speed_rad_s:g} rad/s) throughout the window (stick phases are left out)",
            )
        try:
            joint_std = joint_error_std_from_normal_equations(self._equations)
            reduction = self._rechecked_model(joint_std, travel)
            chosen = reduction is None
            if reduction is None:
                reduction = self._reduced_model(joint_std, travel)
            update = self._estimate_with(blank, joint_std, reduction)
            if not chosen and not update.publishable:
                # The last model fails a gate here that a model chosen afresh may pass.
                chosen, reduction = True, self._reduced_model(joint_std, travel)
                update = self._estimate_with(blank, joint_std, reduction)
        except IdentificationError as error:
            return replace(blank, reason=f"estimation failed: {error}")
        chosen_s = now if chosen or self._model is None else self._model.time_s
        if update.publishable:
            self._model = _ChosenModel(reduction, time_s=chosen_s)
        return replace(update, model_chosen_s=chosen_s)

    def _reduced_model(self, joint_std: np.ndarray, travel: np.ndarray) -> ReductionResult:
        """The window's model chosen by the reduction (the identification seam's step 2)."""
        return reduce_model(
            self._equations, joint_std, names=self._base.names, travel=travel, settings=self._settings.reduction
        )

    def _rechecked_model(self, joint_std: np.ndarray, travel: np.ndarray) -> ReductionResult | None:
        """The model of the last update, when it was published, on the window if [Volkmann2020] Algorithm 1 still
        accepts it (:func:`~dynamic_identification.core.identification.solve.recheck_model`) and less than
        ``window_s`` of data has come since the reduction chose it; ``None`` when the reduction must choose again."""
        model, settings = self._model, self._settings
        if model is None or not settings.keep_model or settings.reduction.method != "sensitivity":
            return None
        if self._last_time - model.time_s >= settings.window_s * (1.0 - 1e-9):
            return None
        return recheck_model(
            model.reduction,
            self._equations,
            joint_std,
            names=self._base.names,
            travel=travel,
            settings=settings.reduction,
        )

    def _estimate_with(self, blank: WindowUpdate, joint_std: np.ndarray, reduction: ReductionResult) -> WindowUpdate:
        """The update of the reduced model ``reduction`` of the window's equations weighted by ``joint_std``: its
        quality, the consistent estimate and the gates."""
        settings, equations, names = self._settings, self._equations, self._base.names
        solution = reduction.solution
        kept_names = tuple(names[i] for i in reduction.kept)
        fitted = self._fitted(reduction.kept, solution.parameters)
        errors = self._joint_errors(fitted)
        std_percent, robust, fallback = solution.relative_std_percent, None, ""
        if settings.reduction.uncertainty == "hac":
            try:
                robust = self._robust_covariance(reduction, joint_std, fitted)
                std_percent = robust.relative_std_percent(solution.parameters)
            except (DataError, RankDeficientError) as error:
                fallback = f"HAC σ not computable: {error}"
        update = replace(
            blank,
            names=kept_names,
            values=solution.parameters,
            std_percent=std_percent,
            uncertainty=robust,
            uncertainty_fallback=fallback,
            removed=removed_reasons(names, reduction),
            condition_number_full=reduction.reference.condition_number,
            condition_number=solution.condition_number,
            relative_error=solution.relative_error,
            joint_errors=errors.errors,
            joint_relative_errors=errors.relative_errors,
        )
        reason = _gate(update, settings)
        if not reason and self._consistency is not None:
            physical = consistent_step(
                self._consistency, equations, joint_std, reduction.kept, unconstrained=reduction.solution
            )
            if physical.estimate is None:
                reason = f"no physically consistent estimate: {physical.error}"
            else:
                values = physical.estimate.base_values[reduction.kept]
                errors = self._joint_errors(self._fitted(reduction.kept, values))
                update = replace(
                    update,
                    values=values,
                    std_percent=relative_std_percent(solution.std if robust is None else robust.std, values),
                    relative_error=physical.estimate.relative_error,
                    joint_errors=errors.errors,
                    joint_relative_errors=errors.relative_errors,
                    consistency_shift_sigma=physical.estimate.shift_sigma,
                    consistency_cost=physical.estimate.cost_increase,
                    consistent_standard=physical.estimate.standard,
                )
                reason = _gate(update, settings)
        if not reason:
            problems = plausibility_problems(self._bounds, kept_names, update.values, errors)
            reason = f"implausible model: {'; '.join(problems)}" if problems else ""
        unidentifiable = [names[i] for i, why in reduction.removed if why == NOT_IDENTIFIABLE]
        if settings.reduction.method == "none" and unidentifiable and not reason:
            # Without reduction the model is the full base-parameter set: a window that
            # cannot determine it is rank-deficient, not a smaller model.
            reason = f"rank-deficient window: {unidentifiable} not identifiable (reduction is 'none')"
        return replace(update, publishable=not reason, reason=reason or "ok")

    def _robust_covariance(
        self, reduction: ReductionResult, joint_std: np.ndarray, fitted: np.ndarray
    ) -> RobustCovariance:
        """HAC covariance of the reduced estimate from the window's rows in time order, ``fitted`` its torques
        ``(h, n)`` on the rows with a valid equation (N·m, :meth:`_fitted`).

        The scores of every column come from one product with those rows and the kept ones are picked: no copy
        of the rows' kept columns; the rows without a valid equation score zero in their place. Blocks after a
        gap follow the ones before it as if contiguous: the few lags that straddle it are negligible for a window
        much longer than the bandwidth.
        """
        kept = reduction.kept
        held = self._held_rows()
        valid = held.valid
        residual = np.where(valid, held.torques - fitted, 0.0)
        weighted = np.where(valid, 1.0 / joint_std**2, 0.0) * residual
        scores = np.zeros((held.rows, kept.size))
        scores[held.positions] = np.matmul(weighted[:, None, :], held.observation_matrix)[:, 0, kept]
        return hac_covariance_of_scores(
            scores,
            # The bread is the reduced model's, already inverted: the rows are only needed for the scores.
            None,
            inverse=reduction.inverse,
            weighted_squares=float(np.sum(weighted * residual)),
            equations=int(np.count_nonzero(valid)),
            steps=held.positions.size,
        )

    def _fitted(self, kept: np.ndarray, values: np.ndarray) -> np.ndarray:
        """The torques ``(h, n)``, N·m, that the ``kept`` base parameters at ``values`` predict on the window's rows
        with a valid equation: one product with all the rows' columns, the others' values zero."""
        observation_matrix = self._held_rows().observation_matrix
        padded = np.zeros(observation_matrix.shape[2])
        padded[kept] = values
        return (observation_matrix.reshape(-1, padded.size) @ padded).reshape(observation_matrix.shape[:2])

    def _joint_errors(self, fitted: np.ndarray) -> JointErrors:
        """[Volkmann2020] eq. (11)-(12) of the predicted torques ``fitted`` (:meth:`_fitted`) on the window's valid
        equations."""
        held = self._held_rows()
        return JointErrors.of(held.torques, fitted, held.valid)


def _gate(update: WindowUpdate, settings: WindowSettings) -> str:
    """Why an estimate must not be published, or an empty string."""
    # A joint without equations in the window has NaN errors; any other non-finite figure is a failure.
    if not (np.all(np.isfinite(update.values)) and not np.any(np.isinf(update.joint_errors))):
        return "non-finite estimate"
    if update.condition_number > settings.max_condition_number:
        return (
            f"condition number {update.condition_number:.4g} > max_condition_number {settings.max_condition_number:g}"
        )
    if update.relative_error > settings.max_relative_error:
        return f"relative error {update.relative_error:.3g} > max_relative_error {settings.max_relative_error:g}"
    return ""
