"""The shipped five-bar of the closed-loop tests ([Briot2012] §2): its description, motions and simulated recordings.

The closed-loop tests of the core, the CLI and the nodes all identify ``urdf/five_bar.urdf`` closed at
its distal tip (a point closure, two motors) from recordings of Pinocchio's constrained forward
dynamics (``RobotSimulator``) tracking 0.2 Hz, 5-harmonic Fourier motions of the motors. This
module says once what that mechanism, its drive terms (``sim_robot`` of ``config/five_bar.yaml``), the
60 g tip payload, the motion and a simulated recording are, and the IDIM-WLS pipeline the core tests
run on such a recording; the same five-bar with collision geometry and a post between its motors, the
self-collision tests' closed-loop robot; and the tests' four-bar (a planar closure, one motor on a continuous
crank), the second mechanism of the core and CLI tests.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.ndimage

from dynamic_identification.core.estimation.least_squares import LeastSquaresResult, weighted_least_squares
from dynamic_identification.core.identification import IdentificationSettings
from dynamic_identification.core.identification.drive_gains import (
    CurrentRecording,
    DriveGainsResult,
    identify_drive_gains,
)
from dynamic_identification.core.mechanism.closed_loop import (
    ClosedLoopModel,
    base_parameters,
    observation_matrix,
    standard_parameters,
)
from dynamic_identification.core.mechanism.payload import Payload, attach_payload
from dynamic_identification.core.mechanism.robot import DriveChain, DriveParameters, DriveTerms
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.core.regressors.idim import BaseParameters
from dynamic_identification.core.signal.filters import ParallelDecimator, differentiate
from dynamic_identification.core.simulation import (
    RobotSimulator,
    SensorModel,
    SimulationSettings,
    TrackingRun,
    inverse_dynamics,
    simulate_tracking,
)
from dynamic_identification.io.config import simulated_robot
from repo_paths import REPO_ROOT
from shared_runs import shared_run

FIVE_BAR_URDF = REPO_ROOT / "urdf" / "five_bar.urdf"
FOUR_BAR_URDF = REPO_ROOT / "test" / "core" / "data" / "four_bar.urdf"
"""The tests' four-bar: the tree opened by cutting its coupler in the middle."""
FIVE_BAR_CLOSURES = [{"frame_a": "tip_1", "frame_b": "tip_2", "type": "point"}]
"""The five-bar's loop closure: the two distal tips meet at a point."""
FIVE_BAR_ACTUATED = ["proximal_joint_1", "proximal_joint_2"]
"""The five-bar's motors."""
FIVE_BAR_CHAIN = DriveChain.create(2, drive_gains=[0.08, 0.08])
"""The data sheet's torque constants of the five-bar's motors (config/five_bar.yaml), N·m/A."""
FIVE_BAR_CONFIG = REPO_ROOT / "config" / "five_bar.yaml"
FIVE_BAR_DRIVE = simulated_robot(FIVE_BAR_CONFIG, 2).drive
"""The drive terms of config/five_bar.yaml's sim_robot: rotor inertia, viscous and Coulomb friction, offsets."""
TIP_PAYLOAD = Payload.create(
    "tip_1", mass_kg=0.06, com_m=[0.01, -0.005, 0.02], inertia_kg_m2=[1.2e-5, 1e-6, 0.0, 1.5e-5, 0.0, 8e-6]
)
"""A 60 g weight clamped on the pen holder at the distal tip (the five-bar's platform)."""
ENCODER_COUNTS = 2**14
"""Counts per revolution of the simulated 14-bit encoders."""


def load_five_bar() -> ClosedLoopModel:
    """The shipped five-bar, closed at its distal tip, driven by its two proximal joints."""
    return ClosedLoopModel.from_config(
        FIVE_BAR_URDF, loop_closures=FIVE_BAR_CLOSURES, actuated_joints=FIVE_BAR_ACTUATED
    )


POST_TOP_M = 0.10
"""Height above the motor axes of the post :func:`five_bar_with_collision_geometry` puts between the motors, m: the
distal links reach down to 0.08 m within the five-bar's limits."""


def five_bar_with_collision_geometry(folder: Path) -> Path:
    """``urdf/five_bar.urdf`` with collision geometry, written into ``folder``: each link's visual box as its
    ``<collision>`` box, and a 2 cm wide post on the plate midway between the motors, :data:`POST_TOP_M` tall (a
    camera mount, say), which a motion within the joint limits can drive the distal links into."""
    text = FIVE_BAR_URDF.read_text(encoding="utf-8")

    def with_collision(visual: re.Match[str]) -> str:
        geometry = re.sub(r"\s*<material[^>]*/>", "", visual.group(1))
        return f"{visual.group(0)}\n    <collision>{geometry}</collision>"

    height = POST_TOP_M - 0.03
    post = (
        '<link name="plate">\n    <collision>\n'
        f'      <origin xyz="0 {0.03 + height / 2} 0.006" rpy="0 0 0"/>\n'
        f'      <geometry><box size="0.02 {height} 0.03"/></geometry>\n'
        "    </collision>\n  </link>"
    )
    text = re.sub(r"<visual>(.*?)</visual>", with_collision, text, flags=re.S).replace('<link name="plate"/>', post)
    path = folder / "five_bar_collision.urdf"
    path.write_text(text, encoding="utf-8")
    return path


def load_four_bar() -> ClosedLoopModel:
    """The tests' four-bar (:data:`FOUR_BAR_URDF`): the coupler's cut as a planar closure, the continuous crank
    as the one motor."""
    return ClosedLoopModel.from_config(
        FOUR_BAR_URDF,
        loop_closures=[{"frame_a": "cut_1", "frame_b": "cut_2", "type": "planar"}],
        actuated_joints=["crank_joint"],
    )


def fourier_motion(
    time_s: np.ndarray, n_motors: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A 0.2 Hz, 5-harmonic Fourier motion of ``n_motors`` motors around the home pose at ``time_s`` (s).

    Each harmonic ``h`` of each motor has random sine and cosine amplitudes of σ = 0.5 / (h √5) rad,
    drawn from ``rng`` motor by motor; the motion starts at rest at the home pose (q(0) = 0).
    Returns q, q̇, q̈ (rad, rad/s, rad/s²), each ``(N, n_motors)``.
    """
    q, dq, ddq = (np.zeros((time_s.size, n_motors)) for _ in range(3))
    for j in range(n_motors):
        for h in range(1, 6):
            omega = 2.0 * np.pi * 0.2 * h
            a, b = rng.normal(0.0, 1.0, 2) * 0.5 / (h * np.sqrt(5.0))
            q[:, j] += a * np.sin(omega * time_s) + b * (np.cos(omega * time_s) - 1.0)
            dq[:, j] += omega * (a * np.cos(omega * time_s) - b * np.sin(omega * time_s))
            ddq[:, j] -= omega**2 * (a * np.sin(omega * time_s) + b * np.cos(omega * time_s))
    return q, dq, ddq


def fourier(seed: int, duration_s: float, n_motors: int = 2, dt: float = 1e-3) -> tuple[np.ndarray, ...]:
    """:func:`fourier_motion` of seed ``seed`` sampled every ``dt`` s from 0 to ``duration_s``: t, q, q̇, q̈."""
    time_s = np.arange(0.0, duration_s + dt / 2, dt)
    return (time_s, *fourier_motion(time_s, n_motors, np.random.default_rng(seed)))


def track(
    model: ClosedLoopModel,
    chain: DriveChain,
    drive: DriveParameters,
    motion: tuple[np.ndarray, ...],
    *,
    seed: int,
    counts: int = ENCODER_COUNTS,
    current_noise_a: float | None = None,
    q0: np.ndarray | None = None,
) -> TrackingRun:
    """``model`` tracking ``(t, q, q̇, q̈)`` of its motors by PD + the exact feedforward at the rate of ``t``.

    Encoders of ``counts`` per revolution; current noise σ ``current_noise_a`` (A), by default 1 % of the
    RMS feedforward current; ``seed`` seeds the simulator's noise. The tree starts at ``q0`` (rad), by
    default the simulator's own start.
    """
    time_s, q, dq, ddq = motion
    desired = model.complete_motion(q, dq, ddq)
    feedforward = inverse_dynamics(model, chain, drive, desired.q, desired.dq, desired.ddq)
    if current_noise_a is None:
        current_noise_a = 0.01 * float(np.sqrt(np.mean((feedforward / chain.drive_gains) ** 2)))
    sensor = SensorModel(current_noise_std_a=current_noise_a, encoder_counts_per_rev=counts)
    settings = SimulationSettings(sensor=sensor)
    simulator = RobotSimulator(model, chain, drive, settings, q0=q0, seed=seed)
    return simulate_tracking(simulator, time_s, q, dq, ddq, feedforward)


def identify_gains_from_runs(
    dynamic_model: DynamicModel,
    *,
    unloaded: TrackingRun,
    loaded: TrackingRun,
    payload: Payload,
    settings: IdentificationSettings,
) -> DriveGainsResult:
    """IDIM-TLS drive gains ([Briot2012] eq. (6)-(13)) of ``dynamic_model`` (nominal gains in its drive chain) from
    its tracking runs without and with ``payload``: their stamps, actuated positions and motor currents."""
    return identify_drive_gains(
        dynamic_model,
        unloaded=CurrentRecording.create(unloaded.time_s, unloaded.q, unloaded.currents_a, name="unloaded"),
        loaded=CurrentRecording.create(loaded.time_s, loaded.q, loaded.currents_a, name="loaded"),
        payload=payload,
        settings=settings,
    )


@dataclass(frozen=True)
class WlsIdentification:
    """IDIM-WLS of a closed-loop recording: the base parameters, their true values and the estimate."""

    base: BaseParameters
    truth: np.ndarray
    result: LeastSquaresResult


def identify_wls(
    model: ClosedLoopModel,
    chain: DriveChain,
    drive: DriveParameters,
    run: TrackingRun,
) -> WlsIdentification:
    """IDIM-WLS ([Briot2012] §3.1) on a 1 kHz recording ``run`` of ``model`` with true drive terms ``drive``.

    Band-pass derivatives (10 Hz), completion of the tree motion, parallel decimation by 10,
    500 samples of filter edge cut at both ends, and equations within 0.05 rad/s of a velocity
    reversal (over the decimation filter's support) left out.
    """
    terms = DriveTerms()
    q, dq, ddq = differentiate(run.q, rate_hz=1000.0, cutoff_hz=10.0)
    motion = model.complete_motion(q, dq, ddq, q_guess=run.q_tree[0])
    base = base_parameters(model, chain, terms)
    w = base.select(
        observation_matrix(model, chain, terms, motion.q, motion.dq, motion.ddq, projection=motion.projection)
    )
    decimator = ParallelDecimator.create(10)
    slowest = scipy.ndimage.minimum_filter1d(np.abs(dq), size=2 * decimator.half_length + 1, axis=0)
    edge = 500  # filter edge effects, samples
    w_decimated, kept = decimator.decimate(w[edge:-edge])
    y_decimated, _ = decimator.decimate(run.joint_torques_nm[edge:-edge])
    valid = slowest[edge:-edge][kept] > 0.05
    result = weighted_least_squares(w_decimated, y_decimated, parameter_names=base.names, valid=valid)
    truth = base.from_standard(standard_parameters(model, terms, drive))
    return WlsIdentification(base=base, truth=truth, result=result)


FIVE_BAR_TRUE_GAINS = DriveChain.create(2, drive_gains=[0.08 * 1.075, 0.08 * 0.94])
"""The simulated motors' actual torque constants: 7.5 % and −6 % off the data sheet's 0.08 N·m/A of the
configuration (:data:`FIVE_BAR_CHAIN`), within the ~10 % a data sheet promises ([Briot2012] §3.2)."""


@dataclass(frozen=True)
class FiveBarRuns:
    """The five-bar's reference recordings: 10 s tracking :func:`fourier` seed 3 without load (noise seed 4) and
    seed 5 with :data:`TIP_PAYLOAD` (noise seed 6), motors of :data:`FIVE_BAR_TRUE_GAINS`, drives of
    :data:`FIVE_BAR_DRIVE`; arrays read-only (they are shared)."""

    unloaded: TrackingRun
    loaded: TrackingRun


def five_bar_runs() -> FiveBarRuns:
    """:class:`FiveBarRuns`, simulated once per test run (about 10 s of simulation each, :func:`shared_run`): the
    core and CLI identification tests of the five-bar read the same recordings."""
    return _read_only_five_bar_runs()


@functools.cache
def _read_only_five_bar_runs() -> FiveBarRuns:
    runs = shared_run("five_bar_runs_fourier3_seed4_fourier5_seed6", _simulate_five_bar_runs)
    for run in (runs.unloaded, runs.loaded):
        for value in vars(run).values():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
    return runs


def _simulate_five_bar_runs() -> FiveBarRuns:
    model = load_five_bar()
    loaded_model = ClosedLoopModel.create(attach_payload(model.robot, TIP_PAYLOAD), model.closures, FIVE_BAR_ACTUATED)
    return FiveBarRuns(
        unloaded=track(model, FIVE_BAR_TRUE_GAINS, FIVE_BAR_DRIVE, fourier(3, 10.0), seed=4),
        loaded=track(loaded_model, FIVE_BAR_TRUE_GAINS, FIVE_BAR_DRIVE, fourier(5, 10.0), seed=6),
    )
