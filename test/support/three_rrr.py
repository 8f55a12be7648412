"""A 3-RRR planar parallel robot in an inclined plane: the second closed-loop mechanism of the tests.

Three RRR legs join a fixed base triangle to a moving triangular platform. Each leg is a motor joint at
a base vertex ``B_i``, a proximal link, a passive elbow joint, a distal link and a passive joint at a
platform vertex ``P_i``. The URDF is the opened tree: leg 1 carries the platform (its joint at ``P_1``
is a tree joint), legs 2 and 3 end at tips ``tip_2``, ``tip_3`` that meet the platform's ``platform_2``,
``platform_3`` when the loops are closed (two point closures: the revolute cut joints at ``P_2``,
``P_3`` leave the rotation about the plane normal free). Tree joints, kinematic order: ``motor_1``,
``elbow_1``, ``wrist_1``, ``motor_2``, ``elbow_2``, ``motor_3``, ``elbow_3`` (7 joints, 4 independent
closure equations, mobility 3); passive: the elbows and ``wrist_1``.

The mechanism plane is the x-y plane of ``plate``, inclined by :data:`INCLINATION_RAD` about the
world x axis, so gravity acts in it (a table tilted towards the operator). Everything here is invented
for the tests (dimensions of a desktop 3-RRR, aluminium links, direct-drive motors): the URDF is written
by :func:`write_three_rrr_urdf` from the numbers of this module, independent of the package's code.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dynamic_identification.core.identification.drive_gains import CurrentRecording
from dynamic_identification.core.mechanism.closed_loop import ClosedLoopModel
from dynamic_identification.core.mechanism.payload import Payload, attach_payload
from dynamic_identification.core.mechanism.robot import DriveChain, DriveParameters
from dynamic_identification.core.mechanism.seam import TreeMotion
from dynamic_identification.core.simulation import (
    RobotSimulator,
    SensorModel,
    SimulationSettings,
    TrackingRun,
    drive_torques,
    inverse_dynamics,
    quantize_positions,
    simulate_tracking,
)
from dynamic_identification.testing.payload_simulation import transmission_input
from shared_runs import shared_run

BASE_RADIUS_M = 0.25
"""Distance of the motor axes from the centre of the base triangle, m."""
PLATFORM_RADIUS_M = 0.06
"""Distance of the platform joints from the platform's centre, m."""
PROXIMAL_M = 0.16
DISTAL_M = 0.16
"""Lengths of the proximal and distal links between joint axes, m."""
INCLINATION_RAD = 0.5
"""Inclination of the mechanism plane about the world x axis (about 29°), rad."""
ACTUATED = ("motor_1", "motor_2", "motor_3")
CLOSURES = (
    {"frame_a": "platform_2", "frame_b": "tip_2", "type": "point"},
    {"frame_a": "platform_3", "frame_b": "tip_3", "type": "point"},
)
CHAIN = DriveChain.create(3, gear_ratios=[10.0, 10.0, 10.0], drive_gains=[0.1, 0.12, 0.09])
"""Motors behind 10:1 gearboxes, torque constants N·m/A (the true ones of the simulations)."""
DRIVE = DriveParameters.create(
    3,
    rotor_inertia=[2.0e-4, 2.5e-4, 1.8e-4],
    viscous=[0.02, 0.025, 0.018],
    coulomb=[0.015, 0.02, 0.012],
    offset=[0.002, -0.003, 0.001],
)
"""The motors' rotor inertia (kg·m²), viscous (N·m·s/rad) and Coulomb (N·m) friction and current offset (N·m)."""
BEARING_SHARE = 0.05
"""The passive joints' bearing friction as a share of the motors' mean friction (5 %)."""
PASSIVE_VISCOUS = np.full(4, BEARING_SHARE * float(np.mean(DRIVE.viscous)))
PASSIVE_COULOMB = np.full(4, BEARING_SHARE * float(np.mean(DRIVE.coulomb)))
"""Bearing friction of the passive joints (elbow_1, wrist_1, elbow_2, elbow_3): N·m·s/rad and N·m."""
PLATFORM_PAYLOAD = Payload.create(
    "platform", mass_kg=0.8, com_m=[0.01, 0.02, 0.015], inertia_kg_m2=[6.0e-4, 3e-5, 0.0, 8.0e-4, 0.0, 1.0e-3]
)
"""A 250 g tool block clamped on the platform (the frame of the platform link, at its joint ``P_1``)."""

_PROXIMAL_INERTIAL = (0.12, (0.075, 0.002, 0.0), (2.0e-6, 1.0e-7, 0.0, 2.6e-4, 0.0, 2.6e-4))
_DISTAL_INERTIAL = (0.08, (0.08, -0.001, 0.0), (1.0e-6, -5.0e-8, 0.0, 1.7e-4, 0.0, 1.7e-4))
_PLATFORM_MASS_KG = 0.2


def _angles(i: int) -> float:
    """Direction of vertex ``i`` (1-based) of the base and platform triangles, rad."""
    return np.pi / 2.0 + 2.0 * np.pi * (i - 1) / 3.0


def _vertex(radius: float, i: int) -> np.ndarray:
    return radius * np.array([np.cos(_angles(i)), np.sin(_angles(i))])


def _elbow(base: np.ndarray, tip: np.ndarray) -> np.ndarray:
    """The elbow of a leg from ``base`` to ``tip`` ``(2,)`` or ``(N, 2)`` (links :data:`PROXIMAL_M`,
    :data:`DISTAL_M`), bent to the left of the base-to-tip direction (the same working mode for every leg)."""
    span = tip - base
    distance = np.sqrt(np.sum(span**2, axis=-1, keepdims=True))
    along = (PROXIMAL_M**2 - DISTAL_M**2 + distance**2) / (2.0 * distance)
    height = np.sqrt(PROXIMAL_M**2 - along**2)
    unit = span / distance
    left = np.stack([-unit[..., 1], unit[..., 0]], axis=-1)
    return base + along * unit + height * left


def _heading(vector: np.ndarray) -> np.ndarray:
    """Direction of ``vector`` ``(..., 2)``, rad."""
    return np.arctan2(vector[..., 1], vector[..., 0])


def _inertial(mass: float, com: tuple[float, ...], inertia: tuple[float, ...]) -> str:
    ixx, ixy, ixz, iyy, iyz, izz = inertia
    return (
        f'<inertial><origin xyz="{com[0]} {com[1]} {com[2]}" rpy="0 0 0"/><mass value="{mass}"/>'
        f'<inertia ixx="{ixx}" ixy="{ixy}" ixz="{ixz}" iyy="{iyy}" iyz="{iyz}" izz="{izz}"/></inertial>'
    )


def _joint(name: str, parent: str, child: str, xy: np.ndarray, yaw: float, *, motor: bool) -> str:
    limit = 'lower="-3.1" upper="3.1" velocity="10.0" effort="' + ("2.0" if motor else "0.0") + '"'
    return (
        f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xy[0]:.17g} {xy[1]:.17g} 0" rpy="0 0 {yaw:.17g}"/><axis xyz="0 0 1"/>'
        f"<limit {limit}/></joint>"
    )


def _fixed(name: str, parent: str, child: str, xy: np.ndarray) -> str:
    return (
        f'<joint name="{name}" type="fixed"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xy[0]:.17g} {xy[1]:.17g} 0" rpy="0 0 0"/></joint><link name="{child}"/>'
    )


def three_rrr_urdf() -> str:
    """The opened tree's URDF (module docstring): at ``q = 0`` the platform is centred, unrotated, and the
    loops are closed."""
    parts = [
        '<?xml version="1.0"?>\n<robot name="three_rrr">',
        '<link name="world"/>',
        f'<joint name="tilt" type="fixed"><parent link="world"/><child link="plate"/>'
        f'<origin xyz="0 0 0.1" rpy="{INCLINATION_RAD} 0 0"/></joint>',
        '<link name="plate"/>',
    ]
    for i in (1, 2, 3):
        base, tip = _vertex(BASE_RADIUS_M, i), _vertex(PLATFORM_RADIUS_M, i)
        elbow = _elbow(base, tip)
        proximal, distal = _heading(elbow - base), _heading(tip - elbow)
        parts.append(_joint(f"motor_{i}", "plate", f"proximal_{i}", base, proximal, motor=True))
        parts.append(f'<link name="proximal_{i}">{_inertial(*_PROXIMAL_INERTIAL)}</link>')
        parts.append(
            _joint(
                f"elbow_{i}",
                f"proximal_{i}",
                f"distal_{i}",
                np.array([PROXIMAL_M, 0.0]),
                distal - proximal,
                motor=False,
            )
        )
        parts.append(f'<link name="distal_{i}">{_inertial(*_DISTAL_INERTIAL)}</link>')
        end = np.array([DISTAL_M, 0.0])
        if i == 1:
            # The platform's frame sits at P_1 with the plate's axes (its centre at −P_1).
            parts.append(_joint("wrist_1", "distal_1", "platform", end, -distal, motor=False))
            centre = -tip
            inertia = (2.0e-4, 0.0, 0.0, 2.0e-4, 0.0, _PLATFORM_MASS_KG * PLATFORM_RADIUS_M**2)
            parts.append(
                f'<link name="platform">{_inertial(_PLATFORM_MASS_KG, (centre[0], centre[1], 0.0), inertia)}</link>'
            )
            for k in (2, 3):
                parts.append(
                    _fixed(f"platform_joint_{k}", "platform", f"platform_{k}", _vertex(PLATFORM_RADIUS_M, k) - tip)
                )
        else:
            parts.append(_fixed(f"tip_joint_{i}", f"distal_{i}", f"tip_{i}", end))
    parts.append("</robot>\n")
    return "\n".join(parts)


def write_three_rrr_urdf(folder: Path) -> Path:
    """:func:`three_rrr_urdf` written to ``folder/three_rrr.urdf``."""
    path = folder / "three_rrr.urdf"
    path.write_text(three_rrr_urdf(), encoding="utf-8")
    return path


def load_three_rrr(folder: Path) -> ClosedLoopModel:
    """The 3-RRR (its URDF written into ``folder``), closed at the platform, driven by its three motors."""
    return ClosedLoopModel.from_config(
        write_three_rrr_urdf(folder), loop_closures=list(CLOSURES), actuated_joints=list(ACTUATED)
    )


def three_rrr_config(folder: Path) -> Path:
    """A ``dynid`` configuration of the 3-RRR in ``folder``: its closures and motors, nominal drive gains 8 % off the
    true ones, and the estimator block of ``config/five_bar.yaml`` (10 Hz cut-off, decimation by 10, 1 kHz data)."""
    nominal = ", ".join(f"{gain:.6g}" for gain in CHAIN.drive_gains * np.array([1.08, 0.93, 1.05]))
    closures = "".join(
        f"        cut_{c['frame_a'][-1]}: {{frame_a: {c['frame_a']}, frame_b: {c['frame_b']}, type: point}}\n"
        for c in CLOSURES
    )
    text = (
        "/**:\n  ros__parameters:\n"
        f"    joints: [{', '.join(ACTUATED)}]\n"
        "    robot:\n      loop_closures:\n" + closures + f"      actuated_joints: [{', '.join(ACTUATED)}]\n"
        f"    drive_chain:\n      gear_ratios: [10.0, 10.0, 10.0]\n      drive_gains: [{nominal}]\n"
        "/**/estimator:\n  ros__parameters:\n    signal:\n      position_cutoff_hz: 10.0\n      decimation: 10\n"
        "      min_speed_rad_s: 0.05\n    estimation:\n      min_samples: 2000\n"
    )
    path = folder / "three_rrr.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def motor_positions(centre_m: np.ndarray, angle_rad: np.ndarray) -> np.ndarray:
    """Inverse kinematics: the motor positions (rad, URDF zero at home) that put the platform's centre at
    ``centre_m`` ``(N, 2)`` (m, plate axes) turned by ``angle_rad`` ``(N,)``, every leg in the home working mode."""
    centre = np.atleast_2d(np.asarray(centre_m, dtype=float))
    angle = np.atleast_1d(np.asarray(angle_rad, dtype=float))
    out = np.empty((centre.shape[0], 3))
    for i in (1, 2, 3):
        base, home = _vertex(BASE_RADIUS_M, i), _vertex(PLATFORM_RADIUS_M, i)
        zero = _heading(_elbow(base, home) - base)
        rotated = np.stack(
            [np.cos(angle) * home[0] - np.sin(angle) * home[1], np.sin(angle) * home[0] + np.cos(angle) * home[1]],
            axis=1,
        )
        out[:, i - 1] = _heading(_elbow(base, centre + rotated) - base) - zero
    return np.mod(out + np.pi, 2.0 * np.pi) - np.pi


def platform_motion(
    seed: int, duration_s: float, *, dt: float = 1e-3, reach_m: float = 0.04, turn_rad: float = 0.25
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A 0.2 Hz, 5-harmonic Fourier motion of the platform (centre within about ``reach_m``, rotation within about
    ``turn_rad`` of home; amplitudes from ``seed``), starting at rest at home, as the motors' ``t, q, q̇, q̈`` (s, rad,
    rad/s, rad/s²) sampled every ``dt``: positions by inverse kinematics, derivatives by central differences."""
    rng = np.random.default_rng(seed)
    time_s = np.arange(0.0, duration_s + dt / 2, dt)
    pose = np.zeros((time_s.size, 3))
    for axis, scale in enumerate((reach_m, reach_m, turn_rad)):
        for h in range(1, 6):
            omega = 2.0 * np.pi * 0.2 * h
            a, b = rng.normal(0.0, 1.0, 2) * scale / (h * np.sqrt(5.0))
            pose[:, axis] += a * np.sin(omega * time_s) + b * (np.cos(omega * time_s) - 1.0)
    q = motor_positions(pose[:, :2], pose[:, 2])
    dq = np.gradient(q, dt, axis=0)
    ddq = np.gradient(dq, dt, axis=0)
    return time_s, q, dq, ddq


def track(
    model: ClosedLoopModel,
    motion: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    *,
    seed: int,
    passive_viscous: np.ndarray | None = PASSIVE_VISCOUS,
    passive_coulomb: np.ndarray | None = PASSIVE_COULOMB,
    chain: DriveChain = CHAIN,
    current_noise_share: float = 0.01,
) -> TrackingRun:
    """The 3-RRR's motors tracking ``(t, q, q̇, q̈)`` by PD + the exact feedforward (bearing friction included), with
    the passive joints' bearing friction ``passive_viscous`` (N·m·s/rad), ``passive_coulomb`` (N·m) (``None``:
    frictionless), 14-bit encoders and current noise of ``current_noise_share`` of the RMS feedforward current."""
    time_s, q, dq, ddq = motion
    desired = model.complete_motion(q, dq, ddq)
    feedforward = inverse_dynamics(
        model,
        chain,
        DRIVE,
        desired.q,
        desired.dq,
        desired.ddq,
        passive_viscous=passive_viscous,
        passive_coulomb=passive_coulomb,
    )
    currents = feedforward / (chain.gear_ratios * chain.drive_gains)
    noise = current_noise_share * float(np.sqrt(np.mean(currents**2)))
    settings = SimulationSettings(
        sensor=SensorModel(current_noise_std_a=noise, encoder_counts_per_rev=2**14),
        passive_viscous=passive_viscous,
        passive_coulomb=passive_coulomb,
    )
    simulator = RobotSimulator(model, chain, DRIVE, settings, seed=seed)
    return simulate_tracking(simulator, time_s, q, dq, ddq, feedforward)


def current_recording(
    model: ClosedLoopModel,
    chain: DriveChain,
    motion: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    *,
    drive: DriveParameters = DRIVE,
    payload: Payload | None = None,
    efficiency: np.ndarray | None = None,
    noise_share: float = 0.01,
    seed: int,
    name: str,
) -> CurrentRecording:
    """The motors of a closed-loop ``model`` (the 3-RRR, the five-bar) following ``motion`` exactly (the closed-loop
    counterpart of ``simulate_current_recording``): 14-bit encoder positions of the motors and their currents, with
    noise of ``noise_share`` of each motor's RMS current (seed ``seed``).

    The motors' torques are the constrained inverse dynamics ([Briot2012] eq. (5)) of the mechanism carrying
    ``payload``, through transmissions of efficiency ``efficiency`` ([Swevers2002] eq. (8): ``τ/η`` into a
    transmission whose motor drives it, ``η τ`` when the load drives the motor), plus the motors' ``drive``
    terms; the currents are those torques over the true gains of ``chain``.
    """
    time_s, q, dq, ddq = motion
    carrying = (
        ClosedLoopModel.create(attach_payload(model.robot, payload), model.closures, model.actuated_joint_names)
        if payload is not None
        else model
    )
    tree = carrying.complete_motion(q, dq, ddq)
    motors = model.n_actuated
    rigid = inverse_dynamics(carrying, chain, DriveParameters.create(motors), tree.q, tree.dq, tree.ddq)
    entering = transmission_input(rigid, dq, np.ones(motors) if efficiency is None else efficiency)
    motor = entering + drive_torques(chain, drive, dq, ddq)
    currents = motor / (chain.gear_ratios * chain.drive_gains)
    rng = np.random.default_rng(seed)
    noisy = currents + rng.normal(size=currents.shape) * noise_share * np.sqrt(np.mean(currents**2, axis=0))
    positions = quantize_positions(chain, SensorModel(encoder_counts_per_rev=2**14), q)
    return CurrentRecording.create(time_s, positions, noisy, name=name)


def bearing_friction_run(model: ClosedLoopModel) -> TrackingRun:
    """:func:`track` of :func:`platform_motion` seed 1 for 30 s with the bearings' friction (noise seed 11),
    simulated once per test run (:func:`shared_run`): the core and CLI passive-friction tests identify it."""
    return shared_run("three_rrr_bearings_motion1_30s_seed11", lambda: track(model, platform_motion(1, 30.0), seed=11))


def true_motor_torques(model: ClosedLoopModel, motion: TreeMotion) -> np.ndarray:
    """The motors' torques (N·m) of the 3-RRR with :data:`DRIVE` and the bearings' :data:`PASSIVE_VISCOUS` and
    :data:`PASSIVE_COULOMB` friction along the completed ``motion``: the truth of its simulations."""
    return inverse_dynamics(
        model,
        CHAIN,
        DRIVE,
        motion.q,
        motion.dq,
        motion.ddq,
        passive_viscous=PASSIVE_VISCOUS,
        passive_coulomb=PASSIVE_COULOMB,
    )
