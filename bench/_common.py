"""Set-up shared by the benchmarks: the shipped five-bar, its Fourier motions and simulated recordings, and the
print-out of an excitation's limit usage.

The benchmarks run as scripts (``.venv/bin/python bench/NAME.py``), so this folder is on ``sys.path`` and
``import _common`` finds this module.
"""

from __future__ import annotations

import numpy as np

from dynamic_identification.core.closed_loop import ClosedLoopModel
from dynamic_identification.core.closed_loop_identification import identify_closed_loop_drive_gains
from dynamic_identification.core.closed_loop_simulation import (
    ClosedLoopSimulationSettings,
    ClosedLoopSimulator,
    ClosedLoopTrackingRun,
    constrained_inverse_dynamics,
    simulate_tracking,
)
from dynamic_identification.core.drive_gains import CurrentRecording, DriveGainsResult
from dynamic_identification.core.excitation.safety import LimitUsage
from dynamic_identification.core.identification import IdentificationSettings
from dynamic_identification.core.model import DriveChain, DriveParameters, DriveTerms
from dynamic_identification.core.payload import Payload
from dynamic_identification.core.regressors import BaseParameters
from dynamic_identification.core.simulation import SensorModel
from dynamic_identification.io.config import simulated_robot
from dynamic_identification.resources import shipped_path

FIVE_BAR_DRIVE = simulated_robot(shipped_path("config", "five_bar.yaml"), 2).drive
"""The drive terms of config/five_bar.yaml's sim_robot: rotor inertia, viscous and Coulomb friction, offsets."""
TIP_PAYLOAD = Payload.create(
    "tip_1", mass_kg=0.06, com_m=[0.01, -0.005, 0.02], inertia_kg_m2=[1.2e-5, 1e-6, 0.0, 1.5e-5, 0.0, 8e-6]
)
"""A 60 g weight clamped on the pen holder at the five-bar's distal tip (its platform)."""


def load_five_bar() -> ClosedLoopModel:
    """The shipped ``urdf/five_bar.urdf`` closed at its distal tip (a point closure), driven by its proximal joints."""
    return ClosedLoopModel.from_config(
        shipped_path("urdf", "five_bar.urdf"),
        loop_closures=[{"frame_a": "tip_1", "frame_b": "tip_2", "type": "point"}],
        actuated_joints=["proximal_joint_1", "proximal_joint_2"],
    )


def fourier(seed: int, duration_s: float, dt: float = 1e-3) -> tuple[np.ndarray, ...]:
    """0.2 Hz, 5-harmonic Fourier motion of the two motors around the home pose: t (s), q, q̇, q̈ (rad, /s, /s²).

    Each harmonic ``h`` has random sine and cosine amplitudes of σ = 0.5 / (h √5) rad drawn from ``seed``.
    """
    rng = np.random.default_rng(seed)
    t = np.arange(0.0, duration_s + dt / 2, dt)
    q, dq, ddq = (np.zeros((t.size, 2)) for _ in range(3))
    for j in range(2):
        for h in range(1, 6):
            omega = 2.0 * np.pi * 0.2 * h
            a, b = rng.normal(0.0, 1.0, 2) * 0.5 / (h * np.sqrt(5.0))
            q[:, j] += a * np.sin(omega * t) + b * (np.cos(omega * t) - 1.0)
            dq[:, j] += omega * (a * np.cos(omega * t) - b * np.sin(omega * t))
            ddq[:, j] -= omega**2 * (a * np.sin(omega * t) + b * np.cos(omega * t))
    return t, q, dq, ddq


def track(
    model: ClosedLoopModel,
    chain: DriveChain,
    drive: DriveParameters,
    motion: tuple[np.ndarray, ...],
    *,
    seed: int,
    current_noise_a: float | None = None,
) -> ClosedLoopTrackingRun:
    """``model`` tracking ``(t, q, q̇, q̈)`` of its motors by PD + the exact feedforward, with 14-bit encoders.

    Current noise σ ``current_noise_a`` (A), by default 1 % of the RMS feedforward current; ``seed`` seeds
    the simulator's noise.
    """
    time_s, q, dq, ddq = motion
    desired = model.complete_motion(q, dq, ddq)
    feedforward = constrained_inverse_dynamics(model, chain, drive, desired.q, desired.dq, desired.ddq)
    if current_noise_a is None:
        current_noise_a = 0.01 * float(np.sqrt(np.mean((feedforward / chain.drive_gains) ** 2)))
    settings = ClosedLoopSimulationSettings(
        sensor=SensorModel(current_noise_std_a=current_noise_a, encoder_counts_per_rev=2**14)
    )
    simulator = ClosedLoopSimulator(model, chain, drive, settings, seed=seed)
    return simulate_tracking(simulator, time_s, q, dq, ddq, feedforward)


def identify_gains_from_runs(
    model: ClosedLoopModel,
    chain: DriveChain,
    *,
    unloaded: ClosedLoopTrackingRun,
    loaded: ClosedLoopTrackingRun,
    payload: Payload,
    base: BaseParameters,
    settings: IdentificationSettings,
) -> DriveGainsResult:
    """IDIM-TLS drive gains ([Briot2012] eq. (6)-(13)) of ``model`` from its tracking runs without and with
    ``payload``: their stamps, actuated positions and motor currents, nominal gains ``chain``."""
    return identify_closed_loop_drive_gains(
        model,
        chain,
        DriveTerms(),
        unloaded=CurrentRecording.create(unloaded.time_s, unloaded.q, unloaded.currents_a, name="unloaded"),
        loaded=CurrentRecording.create(loaded.time_s, loaded.q, loaded.currents_a, name="loaded"),
        payload=payload,
        base=base,
        settings=settings,
    )


def print_limit_usage(usage: LimitUsage) -> None:
    """One line per kind of limit: the fraction of each joint's position span, velocity and acceleration used."""
    for name, values in (
        ("position span", usage.position),
        ("velocity", usage.velocity),
        ("acceleration", usage.acceleration),
    ):
        print(f"  {name:<14} use " + " ".join(f"{value:5.2f}" for value in values))
