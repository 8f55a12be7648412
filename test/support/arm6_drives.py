"""The drive chain, drive terms, tool loads and simulated current recordings of the shipped 6-axis arm in the
drive-gain, payload, feedforward and identification tests.

The core, CLI and node tests of drive gains ([Briot2012] §3.2) and payloads ([Swevers2002]) give
``urdf/dynid_arm6.urdf`` the gear ratios and data-sheet torque constants of ``config/dynid_arm6.yaml``,
the TX-40's coupled wrist ([Gautier2013] eq. (25)), the rotor inertia, friction and offsets of its
simulator (the ``sim_robot`` block of ``config/dynid_arm6.yaml``) and a few-kilogram load on ``tool0``;
the in-process tests use the simulator's uncoupled chain; the identification tests recover drive terms
of their own (``IDENTIFICATION_DRIVE``). This module says them once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pinocchio as pin
from scipy.spatial.transform import Rotation

from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.identification.drive_gains import CurrentRecording
from dynamic_identification.core.mechanism.payload import Payload
from dynamic_identification.core.mechanism.robot import DriveChain, DriveParameters, RobotModel
from dynamic_identification.io.config import simulated_robot
from dynamic_identification.testing.payload_simulation import simulate_current_recording
from repo_paths import ARM6_CONFIG

GEAR_RATIOS = np.array([100.0, 100.0, 80.0, 60.0, 60.0, 50.0])
NOMINAL_GAINS = np.array([0.45, 0.45, 0.4, 0.35, 0.3, 0.3])
"""What the manufacturer says (config/dynid_arm6.yaml), N·m/A."""
TRUE_GAINS = NOMINAL_GAINS * np.array([1.08, 0.93, 1.05, 0.9, 1.1, 0.95])
"""The motors' actual torque constants: within the ~10 % a data sheet promises ([Briot2012] §3.2)."""
EFFICIENCY = np.array([0.9, 0.9, 0.88, 0.85, 0.85, 0.82])
"""Transmission efficiencies R_z ([Swevers2002] eq. (8)): 10-18 % loss, typical of harmonic drives."""
POLYNOMIAL = np.stack([np.zeros(6), NOMINAL_GAINS, -0.03 * NOMINAL_GAINS, 0.004 * NOMINAL_GAINS], axis=1)
"""Current → motor torque of [Swevers2002] eq. (4), known a priori: a few % below linear at 1-2 A."""
ARM6_SIMULATED = simulated_robot(ARM6_CONFIG, 6)
ARM6_DRIVE = ARM6_SIMULATED.drive
"""The drive terms of config/dynid_arm6.yaml's sim_robot: rotor inertia, viscous and Coulomb friction, offsets."""
ARM6_UNCOUPLED_CHAIN = ARM6_SIMULATED.drive_chain
"""The drive chain of config/dynid_arm6.yaml's sim_robot: ``GEAR_RATIOS``, ``NOMINAL_GAINS``, no coupling."""
IDENTIFICATION_DRIVE = DriveParameters.create(
    6,
    rotor_inertia=[0.6, 0.55, 0.09, 0.035, 0.042, 0.011],
    viscous=[6.9, 4.5, 1.6, 0.85, 1.5, 0.5],
    coulomb=[6.7, 7.9, 6.3, 2.5, 2.7, 1.8],
    offset=[0.3, -0.5, 0.2, 0.05, -0.1, 0.02],
)
"""The true drive terms the identification, physical-consistency and uncertainty tests recover: rotor inertia
(kg·m², joint side), viscous (N·m·s/rad) and Coulomb (N·m) friction and offsets (N·m), of the order of
``ARM6_DRIVE`` but other values."""
IDENTIFICATION_GAINS = np.array([0.4, 0.4, 0.3, 0.15, 0.1, 0.08])
"""The torque constants (N·m/A) of the identification tests' uncoupled chain on ``GEAR_RATIOS``."""


def rnea_torques(
    robot: RobotModel, drive: DriveParameters, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray
) -> np.ndarray:
    """Ground truth of the identification tests (N·m, ``(N, n)``): Pinocchio's RNEA plus the drive terms, independent
    of the regressor."""
    data = robot.model.createData()
    rigid = np.array([pin.rnea(robot.model, data, q[k], dq[k], ddq[k]) for k in range(q.shape[0])])
    return rigid + drive.rotor_inertia * ddq + drive.viscous * dq + drive.coulomb * np.sign(dq) + drive.offset


def wrist_coupling() -> np.ndarray:
    """TX-40 wrist: motor 6 turns with joints 5 and 6 ([Gautier2013] eq. (25))."""
    coupling = np.eye(6)
    coupling[5, 4] = 1.0
    return coupling


def arm6_chain(drive_gains: np.ndarray) -> DriveChain:
    """The arm's drive chain (gear ratios, coupled wrist) with torque constants ``drive_gains`` (N·m/A)."""
    return DriveChain.create(6, gear_ratios=GEAR_RATIOS, drive_gains=drive_gains, coupling=wrist_coupling())


def _tool_payload(
    *, mass_kg: float, com_m: Sequence[float], moments_kg_m2: Sequence[float], euler_xyz_rad: Sequence[float]
) -> Payload:
    """A tool on ``tool0``: principal moments ``moments_kg_m2`` about axes turned by ``euler_xyz_rad`` (xyz)."""
    rotation = Rotation.from_euler("xyz", euler_xyz_rad).as_matrix()
    return Payload.create(
        "tool0", mass_kg=mass_kg, com_m=com_m, inertia_kg_m2=rotation @ np.diag(moments_kg_m2) @ rotation.T
    )


KNOWN_LOAD = _tool_payload(
    mass_kg=4.0, com_m=[0.03, -0.02, 0.08], moments_kg_m2=[0.015, 0.025, 0.03], euler_xyz_rad=[0.2, 0.5, -0.3]
)
"""The calibrated test load of the drive-gain experiments."""
UNKNOWN_LOAD = _tool_payload(
    mass_kg=3.5, com_m=[0.04, -0.02, 0.09], moments_kg_m2=[0.012, 0.02, 0.026], euler_xyz_rad=[0.3, -0.2, 0.5]
)
"""The load the payload identification estimates."""
PROCESS_LOAD = Payload.create(
    "tool0",
    mass_kg=3.5,
    com_m=[0.03, -0.02, 0.06],
    inertia_kg_m2={"ixx": 0.012, "ixy": 0.0, "ixz": 0.0, "iyy": 0.015, "iyz": 0.0, "izz": 0.009},
)
"""The load the robot grasps during its process in the in-process payload re-identification tests."""


def fourier_current_recording(
    robot: RobotModel, chain: DriveChain, *, trajectory_seed: int, fundamental_hz: float = 0.1, **recording: Any
) -> CurrentRecording:
    """The arm with the drive terms ``ARM6_DRIVE`` and drive chain ``chain`` following a random Fourier
    excitation (fundamental ``fundamental_hz``, seed ``trajectory_seed``, 20 % of each joint range kept free).

    ``recording`` are the keyword arguments of ``simulate_current_recording``: ``duration_s``, ``payload``,
    ``efficiency``, ``polynomial``, the noise ``seed``, ``name``...
    """
    trajectory = random_fourier_trajectory(robot, fundamental_hz=fundamental_hz, seed=trajectory_seed, margin=0.2)
    return simulate_current_recording(robot, chain, ARM6_DRIVE, trajectory, **recording)


def unknown_load_recording(
    robot: RobotModel, chain: DriveChain, *, fundamental_hz: float = 0.1, **recording: Any
) -> CurrentRecording:
    """The payload-identification experiment: the arm carrying ``UNKNOWN_LOAD`` along the random Fourier
    excitation of seed 3, with the transmission losses ``EFFICIENCY`` ([Swevers2002] eq. (8)) and the current
    law ``POLYNOMIAL`` (eq. (4)); ``recording``: ``duration_s``, the noise ``seed``... as
    :func:`fourier_current_recording` takes them."""
    return fourier_current_recording(
        robot,
        chain,
        trajectory_seed=3,
        fundamental_hz=fundamental_hz,
        payload=UNKNOWN_LOAD,
        efficiency=EFFICIENCY,
        polynomial=POLYNOMIAL,
        **recording,
    )
