"""Ground-truth currents with a payload and losses ([Swevers2002] §2) agree with the plain simulator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.testing import assert_allclose

from dynamic_identification.core.mechanism.payload import Payload, attach_payload
from dynamic_identification.core.mechanism.robot import DriveChain, DriveParameters, load_robot
from dynamic_identification.core.regressors.idim import random_motion
from dynamic_identification.core.signal.alignment import motor_torques
from dynamic_identification.core.simulation import inverse_dynamics
from dynamic_identification.testing.payload_simulation import (
    currents_from_motor_torques,
    motor_side_torques,
    transmission_input,
)


def _chain() -> DriveChain:
    coupling = np.eye(6)
    coupling[5, 4] = 1.0
    return DriveChain.create(
        6,
        gear_ratios=[100.0, 100.0, 80.0, 60.0, 60.0, 50.0],
        drive_gains=[0.45, 0.45, 0.4, 0.35, 0.3, 0.3],
        coupling=coupling,
    )


def test_lossless_currents_equal_the_simulators_of_the_loaded_robot(arm6_urdf: Path) -> None:
    robot = load_robot(arm6_urdf)
    chain = _chain()
    drive = DriveParameters.create(6, rotor_inertia=np.full(6, 0.1), viscous=np.ones(6), coulomb=np.ones(6))
    payload = Payload.create("tool0", mass_kg=2.0, com_m=[0.0, 0.01, 0.05], inertia_kg_m2=np.eye(3) * 0.01)
    q, dq, ddq = random_motion(robot, 20, np.random.default_rng(2))
    expected = chain.motor_currents(inverse_dynamics(attach_payload(robot, payload), chain, drive, q, dq, ddq))
    motor = motor_side_torques(robot, chain, drive, q, dq, ddq, payload=payload)
    assert_allclose(currents_from_motor_torques(chain, motor), expected, rtol=1e-10, atol=1e-12)


def test_the_polynomial_currents_produce_the_motor_torques() -> None:
    chain = _chain()
    polynomial = np.stack(
        [np.full(6, 0.02), chain.drive_gains, -0.03 * chain.drive_gains, 0.004 * chain.drive_gains], 1
    )
    rng = np.random.default_rng(4)
    # Joint-side motor torques beyond c0's dead zone (|u / N| > c0 = 0.02 N·m), both signs.
    motor = rng.choice([-1.0, 1.0], size=(50, 6)) * rng.uniform(5.0, 150.0, size=(50, 6))
    currents = currents_from_motor_torques(chain, motor, polynomial=polynomial)
    assert_allclose(motor_torques(currents, polynomial) * chain.gear_ratios, motor, rtol=1e-12)


def test_the_motor_supplies_the_losses_whichever_way_power_flows() -> None:
    # [Swevers2002] eq. (8): driving, output = R_z input; braking, output = input / R_z.
    output = np.array([10.0, 10.0, -10.0, -10.0])
    velocity = np.array([1.0, -1.0, -1.0, 1.0])
    entering = transmission_input(output, velocity, np.full(4, 0.8))
    assert_allclose(entering, [12.5, 8.0, -12.5, -8.0])
