"""The URDF prior of the physically consistent estimate on realistic recordings: plausible links, same fit.

Issue 25 benchmark. For the realistic shipped arm6, UR5 and Panda (``dynamic_identification.testing.realistic``:
stiction, Stribeck friction, coloured noise, offsets, jittered stamps; the true links are the URDF's), each of
two 60 s Fourier recordings is identified by ``dynid identify`` (:func:`~dynamic_identification.api.identify_file`,
a configuration holding only the joints and the drive chain, the other recording as ``--validate``) with the
default prior and with ``estimation.prior_weight: 0``. Printed per robot and seed:

* each link's identified mass over its URDF's (the truth here), their range;
* the held-out relative torque error (recorded torques) of the published model;
* the largest and median shift of the published base parameters from those without the prior, in their σ
  (the issue asks for the fit unchanged within σ).

Run: ``.venv/bin/python bench/bench_prior.py [--robots arm6 ur5 panda] [--seeds 1 2] [--train-s 60]``
(about 20 s per robot and seed).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import yaml
from _common import fourier_recording
from bench_real_logs import write_config
from bench_realistic import robot_preset

from dynamic_identification.api import IdentifyFileResult, identify_file
from dynamic_identification.testing.recordings import write_realistic_csv


def identified(urdf: str, data: Path, validate: Path, config: Path, out: Path) -> IdentifyFileResult:
    return identify_file(urdf=Path(urdf), data=data, config=config, out=out, validate_data=[validate])


def base_values(result: IdentifyFileResult) -> dict[str, tuple[float, float]]:
    """Published base parameters: name -> (value, σ)."""
    estimate = result.result
    return {
        name: (float(value), float(std))
        for name, value, std in zip(estimate.names, estimate.estimate.parameters, estimate.std, strict=True)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", nargs="+", default=["arm6", "ur5", "panda"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--train-s", type=float, default=60.0)
    arguments = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench_prior_"))
    for name in arguments.robots:
        preset = robot_preset(name)
        robot = preset.robot()
        config = folder / f"{name}.yaml"
        write_config(config, preset, robot.joint_names, None)
        parameters = yaml.safe_load(config.read_text())
        parameters["/**"]["ros__parameters"]["estimation"] = {"prior_weight": 0.0}
        without_prior = folder / f"{name}_no_prior.yaml"
        without_prior.write_text(yaml.safe_dump(parameters))
        recordings = {}
        for seed in arguments.seeds:
            recordings[seed] = folder / f"{name}{seed}.csv"
            data = fourier_recording(robot, preset, seed=seed, duration_s=arguments.train_s)
            write_realistic_csv(recordings[seed], data)
        for seed, data in recordings.items():
            validate = recordings[next(other for other in arguments.seeds if other != seed)]
            result = identified(preset.urdf, data, validate, config, folder / f"{name}{seed}_params.yaml")
            plain = identified(preset.urdf, data, validate, without_prior, folder / f"{name}{seed}_plain.yaml")
            ratios = np.array([link.mass / link.mass_urdf for link in result.links if link.mass_urdf > 0.0])
            published, reference = base_values(result), base_values(plain)
            shifts = np.array(
                [
                    abs(value - reference[key][0]) / reference[key][1]
                    for key, (value, _) in published.items()
                    if key in reference and np.isfinite(reference[key][1]) and reference[key][1] > 0.0
                ]
            )
            errors = [v.recorded_relative_error for v in result.validations]
            plain_errors = [v.recorded_relative_error for v in plain.validations]
            print(
                f"{name} seed {seed}: link mass / URDF {' '.join(f'{r:.2f}' for r in ratios)}"
                f" (range {ratios.min():.2f}-{ratios.max():.2f}; without the prior"
                f" {min(link.mass / link.mass_urdf for link in plain.links if link.mass_urdf > 0.0):.2f}-"
                f"{max(link.mass / link.mass_urdf for link in plain.links if link.mass_urdf > 0.0):.2f});"
                f" held-out error {errors[0]:.5f} (without the prior {plain_errors[0]:.5f});"
                f" base shift from the estimate without the prior: max {shifts.max():.2f} σ,"
                f" median {np.median(shifts):.3f} σ",
                flush=True,
            )


if __name__ == "__main__":
    main()
