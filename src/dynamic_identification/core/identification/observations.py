"""Observations of the IDIM: decimated base-parameter rows built block by block ([Gautier2013] eq. (13)-(14)).

One builder per regression model produces :class:`PreparedObservations`; this module
has the IDIM's (:func:`prepare_observations`) and the row builder the sliding window
shares (:class:`RowBuilder`). The other models' builders are in
:mod:`~dynamic_identification.core.regressors.power` and
:mod:`~dynamic_identification.core.identification.regression_models`; every one of them feeds the same
estimate, reduction and quality steps (:mod:`~dynamic_identification.core.identification.solve`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import numpy as np
import pinocchio as pin
import scipy.ndimage

from dynamic_identification.core.cancellation import NEVER, Cancellation
from dynamic_identification.core.errors import DataError
from dynamic_identification.core.identification.completion import (
    PASSIVE_TOLERANCE_RAD,
    CompletedRecording,
    complete_recording,
    completed_at,
)
from dynamic_identification.core.identification.motion import decimation_factor
from dynamic_identification.core.identification.settings import IdentificationSettings, SignalSettings
from dynamic_identification.core.identification.torque_delay import TorqueDelay, measured_and_aligned
from dynamic_identification.core.mechanism.robot import DriveChain
from dynamic_identification.core.mechanism.seam import TreeMotion
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.signal.filters import LinearResampling, ParallelDecimator

ROWS_STAGE = "observation matrix rows"
"""The stage of an identification that builds its rows (:mod:`~dynamic_identification.core.progress`)."""

PACKED_CHUNK_SAMPLES = 2048
"""Samples whose whole observation matrix :meth:`RowBuilder.packed` builds at a time (the 6-axis arm's: 8 MB)."""


@dataclass(frozen=True)
class PreparedObservations:
    """Observations of one regression model, ready for the estimate.

    Attributes
    ----------
    observation_matrix
        ``W`` ``(r, k, b)`` in the base parameters: ``r`` rows of ``k`` equations (the
        joints for the IDIM and the filtered IDIM, one column per trajectory for the
        power model, one for the energy models).
    torques
        ``Y`` ``(r, k)``: joint torques (N·m), or powers (W) and energies (J).
    valid
        ``(r, k)`` booleans: the equations to use.
    input_samples, duplicates_dropped, segments, rate_hz, decimation
        Provenance: recorded samples, repeated stamps dropped, contiguous segments, grid
        rate (Hz), decimation factor or row step.
    model
        The regression model (``"dynamic"`` is the IDIM, whose equations are the joint
        torques themselves).
    signal, signal_reasons
        The signal settings the recording was processed with, every ``auto`` decided
        (:func:`~dynamic_identification.core.identification.motion.resolve_signal`), and
        one line per decision saying why; ``None`` for observations assembled by hand.
    torque_delay
        The torques' delay behind the positions measured by the fit and whether the torques are aligned
        (``signal.torque_delay: auto``, :mod:`~dynamic_identification.core.identification.torque_delay`); ``None``
        when not measured.
    """

    observation_matrix: np.ndarray
    torques: np.ndarray
    valid: np.ndarray
    input_samples: int
    duplicates_dropped: int
    segments: int
    rate_hz: float
    decimation: int
    model: str = "dynamic"
    signal: SignalSettings | None = None
    signal_reasons: tuple[str, ...] = ()
    torque_delay: TorqueDelay | None = None


@dataclass(frozen=True)
class DecimatedRows:
    """Decimated rows of the base IDIM: ``W`` ``(r, n, b)``, ``Y`` ``(r, n)``, valid equations, grid indices."""

    observation_matrix: np.ndarray
    torques: np.ndarray
    valid: np.ndarray
    index: np.ndarray

    def rows(self, selection: np.ndarray) -> DecimatedRows:
        """The rows ``selection`` (a mask or indices)."""
        return DecimatedRows(
            observation_matrix=self.observation_matrix[selection],
            torques=self.torques[selection],
            valid=self.valid[selection],
            index=self.index[selection],
        )


@dataclass(frozen=True)
class RowBuilder:
    """Builds decimated base-IDIM rows of a mechanism from completed motion on a uniform grid.

    ``W = J_tᵀ φ_tree + drive terms`` ([Briot2012] eq. (6)-(7); a serial robot's IDIM where
    ``J_t = I``, [Gautier2013] eq. (4)) and the parallel decimation ([Gautier2013]
    eq. (13)-(14)) of the torques. ``W`` is evaluated at the decimated instants only, on
    the low-passed motion, or with ``every_sample`` at every sample and decimated like the
    torques (``signal.regressor_samples``,
    :class:`~dynamic_identification.core.identification.settings.SignalSettings`). Works on
    blocks that carry :attr:`reach` samples of support on each side of the outputs they
    produce, so consecutive blocks give exactly the rows of the whole signal: used by the
    offline pipeline (:meth:`rows`; :meth:`rows_at` for a closed-loop robot's motion completed
    at the output instants) and by the sliding window (:meth:`sampled_rows`) alike.
    Only the entries of ``W`` that are not structural zeros (:attr:`BaseParameters.structure`)
    are evaluated. Equations within ``stick_reach`` samples of a motor slower than
    ``min_speed_rad_s`` are marked invalid (:func:`slow_equations`).
    """

    dynamic_model: DynamicModel
    decimator: ParallelDecimator
    min_speed_rad_s: float
    stick_reach: int
    gather: np.ndarray
    data: pin.Data
    every_sample: bool = False

    @classmethod
    def create(
        cls,
        dynamic_model: DynamicModel,
        *,
        decimation: int,
        min_speed_rad_s: float,
        stick_periods: int | None = None,
        every_sample: bool = False,
    ) -> RowBuilder:
        """``stick_periods``: decimation periods masked on each side of a slow sample; ``None``
        masks the filter's whole support (:attr:`reach`), so no stick sample reaches an equation.

        The speed is ``min_speed_rad_s`` (rad/s) with Coulomb friction in ``terms``, else 0
        (nothing masked). ``every_sample``: :meth:`rows` evaluates ``W`` at every sample.
        """
        base = dynamic_model.base
        rows = np.arange(dynamic_model.mechanism.n_actuated)[:, None] * len(base.standard_names)
        decimator = ParallelDecimator.create(decimation)
        reach = decimator.half_length
        return cls(
            dynamic_model=dynamic_model,
            decimator=decimator,
            min_speed_rad_s=min_speed_rad_s if dynamic_model.terms.coulomb_friction else 0.0,
            stick_reach=reach if stick_periods is None else min(reach, stick_periods * decimator.factor),
            gather=(rows + base.independent[None, :])[base.structure],
            data=dynamic_model.mechanism.robot.model.createData(),
            every_sample=every_sample,
        )

    @property
    def reach(self) -> int:
        """Samples of support needed on each side of an output sample."""
        return self.decimator.half_length

    def stuck(self, dq: np.ndarray) -> np.ndarray:
        """``(N, n_a)``: the equations masked at the controlled joints' velocities ``dq`` (:func:`slow_equations`)."""
        return slow_equations(
            self.dynamic_model.drive_chain, dq, min_speed_rad_s=self.min_speed_rad_s, reach=self.stick_reach
        )

    def packed(self, motion: TreeMotion) -> np.ndarray:
        """``(L, s)``: the entries of ``W`` that are not structural zeros at the completed ``motion``.

        The whole ``W`` is built :data:`PACKED_CHUNK_SAMPLES` samples at a time, so its few
        megabytes are reused from chunk to chunk rather than mapped afresh for every block.
        """
        dynamic_model, chain, terms = self.dynamic_model, self.dynamic_model.drive_chain, self.dynamic_model.terms
        samples = motion.q.shape[0]
        packed = np.empty((samples, self.gather.size))
        for start in range(0, samples, PACKED_CHUNK_SAMPLES):
            chunk = slice(start, start + PACKED_CHUNK_SAMPLES)
            part = TreeMotion(
                q=motion.q[chunk],
                dq=motion.dq[chunk],
                ddq=motion.ddq[chunk],
                projection=None if motion.projection is None else motion.projection[chunk],
            )
            full = dynamic_model.mechanism.observation_matrix(chain, terms, part, data=self.data)
            np.take(full.reshape(full.shape[0], -1), self.gather, axis=1, out=packed[chunk])
        return packed

    def rows(
        self,
        q: np.ndarray,
        dq: np.ndarray,
        ddq: np.ndarray,
        torques: np.ndarray,
        *,
        start: int,
        outputs: tuple[int, int],
        projection: np.ndarray | None = None,
    ) -> DecimatedRows:
        """Rows at grid indices in ``[outputs[0], outputs[1])`` (multiples of the factor) whose
        filter support lies in this block, which covers grid indices ``[start, start + len(q))``.

        ``q``, ``dq``, ``ddq`` are the tree's completed motion ``(L, n_t)`` and ``projection`` its
        ``J_t`` ``(L, n_t, n_a)`` (``None`` without closures); ``torques`` ``(L, m)`` (torques,
        currents, payload torques) are low-passed and decimated. ``W`` is evaluated at the
        output instants, or with :attr:`every_sample` at every sample and decimated with the
        same filter as the torques.
        """
        if self.every_sample:
            packed = self.packed(TreeMotion(q=q, dq=dq, ddq=ddq, projection=projection))
            return self.decimated_rows(packed, torques, self._controlled(dq), start=start, outputs=outputs)

        def at(local: np.ndarray, _index: np.ndarray) -> TreeMotion:
            return TreeMotion(
                q=q[local], dq=dq[local], ddq=ddq[local], projection=None if projection is None else projection[local]
            )

        return self._rows_at_outputs(at, torques, self._controlled(dq), start=start, outputs=outputs)

    def rows_at(
        self,
        motion_at: Callable[[np.ndarray], TreeMotion],
        torques: np.ndarray,
        dq: np.ndarray,
        *,
        start: int,
        outputs: tuple[int, int],
    ) -> DecimatedRows:
        """:meth:`rows` with ``W`` evaluated on ``motion_at(index)``, the tree's motion at the output grid indices
        ``index`` (a closed-loop robot's, completed there only: :meth:`CompletedSegment.tree_motion_at`);
        ``dq`` ``(L, n_a)`` the controlled joints' velocities of the block, which mask the stick phases."""
        return self._rows_at_outputs(lambda _local, index: motion_at(index), torques, dq, start=start, outputs=outputs)

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
        """Rows at grid indices in ``[outputs[0], outputs[1])`` (multiples of the factor) whose filter support
        lies in this block, which covers grid indices ``[start, start + len(q))``, with ``W`` evaluated on the
        filtered motion ``q``, ``dq``, ``ddq`` of the controlled joints at the decimated instants only (completed
        to the tree there, :func:`~dynamic_identification.core.identification.completion.completed_at`).

        The torques are still low-passed and decimated; ``W`` is not. For motion
        band-limited by the position filter (cut-off below the decimation filter's
        passband) the two agree to the passband ripple, while the regressor runs on
        one sample in ``factor`` (and a closed-loop robot's loops are solved there only):
        the streaming estimator's fast path. Equations near velocity reversals, where
        ``sign(q̇)`` is not band-limited, are masked as in the rows of the whole block;
        a row whose every equation is masked (the robot stopped) is not evaluated: its ``W``
        is zero, which adds nothing to any sum over the valid equations.
        """

        def at(local: np.ndarray, index: np.ndarray) -> TreeMotion:
            return completed_at(self.dynamic_model.mechanism, q[local], dq[local], ddq[local], index)

        return self._rows_at_outputs(at, torques, dq, start=start, outputs=outputs, masked_rows=False)

    def _rows_at_outputs(
        self,
        motion_at: Callable[[np.ndarray, np.ndarray], TreeMotion],
        torques: np.ndarray,
        dq: np.ndarray,
        *,
        start: int,
        outputs: tuple[int, int],
        masked_rows: bool = True,
    ) -> DecimatedRows:
        """Rows with ``W`` evaluated at the output instants only: ``motion_at(local, index)`` is the tree's motion at
        block positions ``local`` (grid indices ``index``); ``dq`` ``(L, n_a)`` the controlled joints' velocities.
        Without ``masked_rows``, ``W`` is left zero at the rows whose every equation is masked."""
        y_out, index = self.decimator.decimate(np.asarray(torques, dtype=float), start=start)
        inside = (index >= outputs[0]) & (index < outputs[1])
        local = index[inside] - start
        valid = ~self.stuck(dq)[local]
        evaluated = None if masked_rows else np.flatnonzero(valid.any(axis=1))
        at = slice(None) if evaluated is None else evaluated
        if local[at].size:
            packed = self.packed(motion_at(local[at], index[inside][at]))
        else:
            packed = np.zeros((0, int(np.count_nonzero(self.dynamic_model.base.structure))))
        return self._assemble(packed, y_out[inside], index[inside], valid, evaluated)

    def decimated_rows(
        self, packed: np.ndarray, signals: np.ndarray, dq: np.ndarray, *, start: int, outputs: tuple[int, int]
    ) -> DecimatedRows:
        """Rows at grid indices in ``[outputs[0], outputs[1])`` from the packed non-zero entries of ``W`` ``(L, s)``
        and the ``signals`` ``(L, m)`` at every sample of a block that starts at grid index ``start``, both
        decimated with the same filter ([Gautier2013] eq. (13)-(14)); ``dq`` ``(L, n_a)`` of the controlled joints
        masks stick phases."""
        packed_out, index = self.decimator.decimate(packed, start=start)
        signals_out, _ = self.decimator.decimate(np.asarray(signals, dtype=float), start=start)
        inside = (index >= outputs[0]) & (index < outputs[1])
        valid = ~self.stuck(dq)[index[inside] - start]
        return self._assemble(packed_out[inside], signals_out[inside], index[inside], valid)

    def _controlled(self, dq: np.ndarray) -> np.ndarray:
        """The controlled joints' columns of tree velocities (all of them without closures: no copy)."""
        mechanism = self.dynamic_model.mechanism
        return dq if dq.shape[1] == mechanism.n_actuated else dq[:, mechanism.actuated]

    def _assemble(
        self,
        packed: np.ndarray,
        signals: np.ndarray,
        index: np.ndarray,
        valid: np.ndarray,
        evaluated: np.ndarray | None = None,
    ) -> DecimatedRows:
        """Rows from the packed non-zero entries of ``W`` at the rows ``evaluated`` (all by default; the others
        zero) and the mask ``valid`` of their equations (stick phases)."""
        structure = self.dynamic_model.base.structure
        w_out = np.zeros((index.size, *structure.shape))
        if evaluated is None:
            w_out[:, structure] = packed
        else:
            joints, columns = np.nonzero(structure)
            w_out[evaluated[:, None], joints, columns] = packed
        return DecimatedRows(observation_matrix=w_out, torques=signals, valid=valid, index=index)


def output_blocks(
    length: int, block_samples: int, factor: int, reach: int
) -> Iterator[tuple[int, slice, tuple[int, int]]]:
    """The blocks rows of a segment of ``length`` grid samples are built in: ``(start, block, outputs)``.

    Each block produces the outputs at grid indices ``[outputs[0], outputs[1])``, about
    ``block_samples`` of them (a multiple of the decimation ``factor``), and carries ``reach``
    samples of filter support on each side (clipped at the segment's ends): it covers
    ``block`` of the segment, which starts at grid index ``start``. Consecutive blocks give
    exactly the rows of the whole segment, with bounded memory.
    """
    step = max(block_samples - block_samples % factor, factor)
    for first_output in range(0, length, step):
        start = max(first_output - reach, 0)
        yield start, slice(start, min(first_output + step + reach, length)), (first_output, first_output + step)


def completed_row_builder(dynamic_model: DynamicModel, completed: CompletedRecording) -> RowBuilder:
    """The :class:`RowBuilder` of a completed recording by its signal settings: its decimation
    (:func:`~dynamic_identification.core.identification.motion.decimation_factor` at its rate), stick speed and
    where ``W`` is evaluated (``signal.regressor_samples``)."""
    signal = completed.signal
    return RowBuilder.create(
        dynamic_model,
        decimation=decimation_factor(signal, completed.rate_hz),
        min_speed_rad_s=signal.min_speed_rad_s,
        every_sample=signal.regressor_samples == "all",
    )


def _rows_among(tree: TreeMotion, instants: np.ndarray) -> Callable[[np.ndarray], TreeMotion]:
    """The motion at grid indices among ``instants`` (increasing) of ``tree``, the tree's motion at ``instants``."""
    return lambda index: tree.rows(np.searchsorted(instants, index))


def prepare_observations(
    dynamic_model: DynamicModel,
    time: np.ndarray,
    q: np.ndarray,
    torques: np.ndarray,
    *,
    dq_measured: np.ndarray | None = None,
    settings: IdentificationSettings | None = None,
    passive_tolerance_rad: float = PASSIVE_TOLERANCE_RAD,
    cancellation: Cancellation = NEVER,
) -> PreparedObservations:
    """Decimated base observation matrix and torques of the controlled joints ([Gautier2013] eq. (13)-(14);
    [Briot2012] eq. (6)-(7) for a closed-loop robot).

    The recording is filtered and completed to the tree
    (:func:`~dynamic_identification.core.identification.completion.complete_recording`: ``q`` holds the
    controlled joints ``(N, n_a)`` or every tree joint ``(N, n_t)``; ``torques`` the controlled joints'
    ``(N, n_a)``, N·m). The rows are built in blocks of ``settings.block_samples`` with the decimation
    filter's support on both sides, so the result equals decimating the whole recording while memory
    stays bounded; ``W`` at the decimated instants, or at every sample and decimated with the torques
    (``settings.signal.regressor_samples``, :class:`RowBuilder`). ``cancellation`` is polled, and told
    the grid samples done, at every block.

    Raises
    ------
    DataError
        Bad shapes or values, bad stamps, passive positions contradicting the closures.
    LoopClosureError
        The recording reaches a singularity or leaves the workspace (names the sample).
    """
    settings = settings or IdentificationSettings()
    # The rows come from a helper whose completed recording (the segments' filtered positions on the grid, 29 MB at
    # 600 k samples of 6 joints) is released on its return: the delay scan reads the rows and the torques only.
    rows = _recording_rows(
        dynamic_model,
        time,
        q,
        torques,
        dq_measured=dq_measured,
        settings=settings,
        passive_tolerance_rad=passive_tolerance_rad,
        cancellation=cancellation,
    )
    prepared = rows.prepared
    if settings.signal.torque_delay != "auto":
        return prepared
    assert prepared.signal is not None  # the settings the recording was completed with
    cancellation.report("torque delay")
    delay, aligned = measured_and_aligned(
        rows.decimator,
        rows.signals,
        prepared.observation_matrix,
        prepared.valid,
        prepared.torques,
        rate_hz=prepared.rate_hz,
        cutoff_hz=prepared.signal.position_cutoff_hz,
    )
    return replace(
        prepared, torques=aligned, signal_reasons=(*prepared.signal_reasons, delay.reason()), torque_delay=delay
    )


@dataclass(frozen=True)
class _RecordingRows:
    """The rows of a recording before the torques' delay is measured (:func:`_recording_rows`), with what the scan
    reads of its completion: the segments' torques on the grid and the decimator."""

    prepared: PreparedObservations
    signals: tuple[LinearResampling, ...]
    decimator: ParallelDecimator


def _recording_rows(
    dynamic_model: DynamicModel,
    time: np.ndarray,
    q: np.ndarray,
    torques: np.ndarray,
    *,
    dq_measured: np.ndarray | None,
    settings: IdentificationSettings,
    passive_tolerance_rad: float,
    cancellation: Cancellation,
) -> _RecordingRows:
    """The rows of :func:`prepare_observations` with the torques as recorded (the same arguments and errors)."""
    mechanism = dynamic_model.mechanism
    if np.ndim(torques) != 2 or np.shape(torques)[1] != mechanism.n_actuated:
        raise DataError(
            f"torques must have shape (N, {mechanism.n_actuated}), one column per controlled joint,"
            f" got {np.shape(torques)}"
        )
    cancellation.report("signal decisions (stamps, cut-off, velocities)")
    completed = complete_recording(
        mechanism,
        time,
        q,
        torques,
        settings=settings.signal,
        dq_measured=dq_measured,
        passive_tolerance_rad=passive_tolerance_rad,
        complete=False,
    )
    rate = completed.rate_hz
    builder = completed_row_builder(dynamic_model, completed)
    factor = builder.decimator.factor
    # The rows are written into arrays of their final size, not concatenated from the blocks' rows:
    # a copy of the whole W less at the peak of memory.
    n = mechanism.n_actuated
    count = sum(builder.decimator.output_indices(segment.time.shape[0]).size for segment in completed.segments)
    matrix = np.empty((count, n, dynamic_model.base.count))
    torque = np.empty((count, n))
    valid = np.empty((count, n), dtype=bool)
    total = sum(segment.time.shape[0] for segment in completed.segments)
    done = row = 0
    for segment in completed.segments:
        length = segment.time.shape[0]
        # A closed-loop robot's loops are solved where W is evaluated: at the output instants only, unless W is
        # evaluated at every sample.
        instants = np.arange(length) if builder.every_sample else builder.decimator.output_indices(length)
        tree = None if segment.loops is None else segment.tree_motion_at(instants)
        motion_at = None if tree is None or builder.every_sample else _rows_among(tree, instants)
        blocks = output_blocks(length, settings.block_samples, factor, builder.reach)
        for start, block, outputs in blocks:
            cancellation.check()
            cancellation.report(ROWS_STAGE, done + min(outputs[0], length), total, "samples")
            if motion_at is not None:
                # The controlled velocities mask the stick phases: differentiated whole where the loops were solved.
                dq = segment.motion.dq[block]
                rows = builder.rows_at(motion_at, segment.signals[block], dq, start=start, outputs=outputs)
            else:
                motion = (segment.motion if tree is None else tree).rows(block)
                rows = builder.rows(
                    motion.q,
                    motion.dq,
                    motion.ddq,
                    segment.signals[block],
                    start=start,
                    outputs=outputs,
                    projection=motion.projection,
                )
            end = row + rows.torques.shape[0]
            matrix[row:end], torque[row:end], valid[row:end] = rows.observation_matrix, rows.torques, rows.valid
            row = end
        done += segment.time.shape[0]
    cancellation.report(ROWS_STAGE, done, total, "samples")
    prepared = PreparedObservations(
        observation_matrix=matrix,
        torques=torque,
        valid=valid,
        input_samples=completed.input_samples,
        duplicates_dropped=completed.duplicates_dropped,
        segments=len(completed.segments),
        rate_hz=rate,
        decimation=factor,
        signal=completed.signal,
        signal_reasons=completed.signal_reasons,
    )
    return _RecordingRows(
        prepared, signals=tuple(segment.signals for segment in completed.segments), decimator=builder.decimator
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
    # Counts of slow coupled motors as floats: exact, and a BLAS product instead of numpy's integer loop.
    slow = (slow_motor.astype(float) @ (coupling != 0.0).astype(float)) > 0.0
    return scipy.ndimage.maximum_filter1d(slow, size=2 * reach + 1, axis=0, mode="nearest")


__all__ = [
    "ROWS_STAGE",
    "DecimatedRows",
    "PreparedObservations",
    "RowBuilder",
    "completed_row_builder",
    "output_blocks",
    "prepare_observations",
    "slow_equations",
]
