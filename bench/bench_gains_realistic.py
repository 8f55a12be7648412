"""``dynid gains`` ([Briot2012] IDIM-TLS with a known payload) on the realistic preset's motor currents.

The shipped 6-axis arm as :func:`~dynamic_identification.testing.realistic.arm6_preset` records it (stick-slip
friction, coloured torque noise, offset drift, ripple, a PC driver's stamps), with motor currents
(``signal="current"``): for each seed an unloaded run and a run carrying the drive-gain tests' 4 kg load on
``tool0`` (the robot of :func:`~dynamic_identification.core.mechanism.payload.attach_payload`: the load is part of
the last link, and the controller's feedforward knows it), ``--duration-s`` each along the preset's random Fourier
excitations of seeds ``10 s`` and ``10 s + 1``, the noise drawn with the same seeds. The nominal gains are the
preset's true ones off by 5-10 % (the tests' factors). Printed per seed: the published model, each motor's gain
error (%), the error in units of its reported σ, and the result's warnings (a gain whose total and ordinary
least-squares values differ by far more than σ: the currents' noise biases it).

Run: ``.venv/bin/python bench/bench_gains_realistic.py [--seeds 3] [--duration-s 60]``
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import KNOWN_LOAD, NOMINAL_GAINS, TRUE_GAINS

from dynamic_identification.core.identification.drive_gains import CurrentRecording, identify_drive_gains
from dynamic_identification.core.mechanism.payload import attach_payload
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel
from dynamic_identification.core.regressors.dynamic_model import DynamicModel
from dynamic_identification.resources import shipped_path
from dynamic_identification.testing.realistic import (
    RobotPreset,
    arm6_preset,
    excitation_trajectory,
    generate_recording,
)


def _current_recording(
    robot: RobotModel, preset: RobotPreset, *, seed: int, duration_s: float, name: str
) -> CurrentRecording:
    """The preset's realistic current recording of ``robot`` (with or without the load) along the random Fourier
    excitation of seed ``seed``, the noise drawn with the same seed."""
    trajectory = excitation_trajectory(preset.robot(), preset, seed=seed)
    data = generate_recording(robot, preset, trajectory, duration_s=duration_s, seed=seed)
    return CurrentRecording.create(data.time, data.position, data.current, name=name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--duration-s", type=float, default=60.0)
    arguments = parser.parse_args()
    preset = arm6_preset(shipped_path("urdf", "dynid_arm6.urdf")).with_settings(signal="current")
    robot = preset.robot()
    carrying = attach_payload(robot, KNOWN_LOAD)
    truth = preset.drive_chain.drive_gains
    nominal = DriveChain.create(
        6,
        gear_ratios=preset.drive_chain.gear_ratios,
        drive_gains=truth / (TRUE_GAINS / NOMINAL_GAINS),
        coupling=preset.drive_chain.coupling,
    )
    dynamic_model = DynamicModel.create(robot, nominal, DriveTerms())
    errors = []
    for seed in range(arguments.seeds):
        unloaded, loaded = (
            _current_recording(model, preset, seed=10 * seed + r, duration_s=arguments.duration_s, name=name)
            for r, (model, name) in enumerate(((robot, "unloaded"), (carrying, "loaded")))
        )
        result = identify_drive_gains(dynamic_model, unloaded=unloaded, loaded=loaded, payload=KNOWN_LOAD)
        error = 100.0 * (result.drive_gains / truth - 1.0)
        errors.append(error)
        model_name = result.model_choice.model if result.model_choice is not None else "one gain"
        print(f"seed {seed} ({model_name}): gain error % {np.array2string(error, precision=3)}")
        print(f"  error / σ     {np.array2string((result.drive_gains - truth) / result.drive_gains_std, precision=1)}")
        print(f"  warnings: {len(result.warnings)}" + "".join(f"\n    {line}" for line in result.warnings))
    print(f"largest |error| per motor, %: {np.array2string(np.max(np.abs(errors), axis=0), precision=3)}")


if __name__ == "__main__":
    main()
