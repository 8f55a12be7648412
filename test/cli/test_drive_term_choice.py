"""``dynid identify`` publishes a drive term only when the data choose it, and the simpler model it falls back to
fits better than the configured one.

The recording is the reference recording of the shipped arm (``test/data/reference``: 24 s at 500 Hz, every drive
term present in its simulator). The power model's equations are the joint powers: 24 s of them do not determine
the rotor inertias or the torque offsets, and with them the model predicts torques 87-660 % off per joint.
"""

from __future__ import annotations

import html
from pathlib import Path

import pytest
import yaml

from dynamic_identification.io.parameters import load_parameters
from dynid_runner import dynid

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "reference" / "inputs"
URDF = Path(__file__).resolve().parents[2] / "urdf" / "dynid_arm6.urdf"


def _config(folder: Path, choose: bool) -> Path:
    """The reference configuration with ``estimation.choose_drive_terms`` set."""
    document = yaml.safe_load((REFERENCE / "config_default.yaml").read_text())
    document["/**/estimator"]["ros__parameters"]["estimation"]["choose_drive_terms"] = choose
    path = folder / f"config_{choose}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def _identify(folder: Path, model: str, choose: bool, *options: str | Path) -> tuple[str, Path]:
    out = folder / f"{model}_{choose}.yaml"
    code, printed, error = dynid(
        "identify", "--urdf", URDF, "--data", REFERENCE / "recording.csv", "--config", _config(folder, choose),
        "--model", model, "--accept-implausible", "--out", out, *options,
    )  # fmt: skip
    assert code == 0, error
    return printed, out


@pytest.fixture(scope="module")
def power(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, tuple[str, Path]]:
    folder = tmp_path_factory.mktemp("power")
    return {
        choose: _identify(folder, "power", choose, *(["--report", folder / "report"] if choose else []))
        for choose in (True, False)
    }


def test_the_power_model_drops_the_undetermined_kinds_saying_why_in_one_line(power) -> None:
    printed, out = power[True]
    (line,) = [line for line in printed.splitlines() if line.startswith("model: ")]
    assert line.startswith("model: no rotor inertias, torque offsets: they do not explain the data significantly")
    assert "Wald χ² of no torque offsets (off1, off2, off3, off4, off5, off6)" in line
    document = load_parameters(out)
    assert document.quality["model_choices"] == [line.removeprefix("model: ")]
    terms = document.drive_terms()
    assert (terms.rotor_inertia, terms.viscous_friction, terms.coulomb_friction, terms.offset) == (
        False,
        True,
        True,
        False,
    )
    assert not any(entry.name.startswith(("Ia", "off")) for entry in document.parameters)


def test_the_report_says_which_model_the_data_chose(power) -> None:
    printed, out = power[True]
    (line,) = [line for line in printed.splitlines() if line.startswith("model: ")]
    page = (out.parent / "report" / "index.html").read_text(encoding="utf-8")
    assert "<dt>model chosen by the data</dt>" in page
    assert html.escape(line.removeprefix("model: "), quote=True) in page


def test_the_chosen_model_predicts_every_joint_better_than_the_configured_one(power) -> None:
    chosen = load_parameters(power[True][1]).quality["joint_relative_errors"]
    configured = load_parameters(power[False][1]).quality["joint_relative_errors"]
    # Measured: 0.08-0.24 chosen against 0.87-6.6 with every kind.
    assert all(chosen[joint] < 0.5 * configured[joint] for joint in configured), (chosen, configured)


def test_without_the_choice_every_configured_kind_is_published_and_nothing_said(power) -> None:
    printed, out = power[False]
    assert not [line for line in printed.splitlines() if line.startswith("model: ")]
    document = load_parameters(out)
    assert document.quality["model_choices"] == []
    assert {f"off{j}" for j in range(1, 7)} <= {entry.name for entry in document.parameters}


def test_the_default_model_keeps_every_kind_the_simulator_has(tmp_path: Path) -> None:
    printed, out = _identify(tmp_path, "dynamic", True)
    assert not [line for line in printed.splitlines() if line.startswith("model: ")]
    assert load_parameters(out).quality["model_choices"] == []
