"""``dynid excite``: every mode writes a trajectory that keeps the configured limits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dynamic_identification import cli
from dynamic_identification.core.excitation import check_trajectory
from dynamic_identification.core.mechanism.robot import load_robot
from dynamic_identification.io.config import load_excitation_settings
from dynamic_identification.io.trajectory import read_trajectory_csv

CONFIG_TEXT = """\
excitation:
  ros__parameters:
    fundamental_hz: 0.2
    harmonics: 3
    rate_hz: 50.0
    optimise: {optimise}
    time_budget_s: 60.0
    max_evaluations: 1500
    position_margin_rad: 0.1
    velocity_scale: 0.5
    cycles: 1
    process: {process}
"""


def _config(tmp_path: Path, *, optimise: bool = False, process: str = "pick_and_place") -> Path:
    path = tmp_path / "excite.yaml"
    path.write_text(CONFIG_TEXT.format(optimise=str(optimise).lower(), process=process), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("mode", "process", "optimise"),
    [
        ("fourier", "pick_and_place", False),
        ("fourier", "pick_and_place", True),
        ("segmented", "pick_and_place", False),
        ("process", "pick_and_place", False),
        ("process", "square", False),
    ],
)
def test_every_mode_writes_a_trajectory_inside_the_configured_limits(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, arm6_urdf: Path, mode: str, process: str, optimise: bool
) -> None:
    config = _config(tmp_path, optimise=optimise, process=process)
    out = tmp_path / "trajectory.csv"
    code = cli.main(["excite", "--urdf", str(arm6_urdf), "--config", str(config), "--mode", mode, "--out", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "condition number of the base observation matrix" in printed.out
    # The shipped arm's URDF has no collision geometry: the report must not let the user believe it was checked.
    assert "self-collision not checked: the URDF has no <collision> geometry" in printed.out
    trajectory = read_trajectory_csv(out)
    robot = load_robot(arm6_urdf)
    assert trajectory.joint_names == robot.joint_names
    check_trajectory(trajectory, load_excitation_settings(config, mode=mode).limits(robot))
    assert np.ptp(trajectory.q, axis=0).max() > 0.1
    # A Fourier file starts and ends moving: whoever plays it must ramp in, and the report says so; the
    # rest-to-rest modes start and end at rest and say nothing.
    moving = bool(np.abs(trajectory.dq[[0, -1]]).max() > 1e-9)
    assert moving == (mode == "fourier")
    assert ("note: the trajectory starts moving" in printed.out) == moving


def test_optimised_fourier_is_better_conditioned_than_the_process(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, arm6_urdf: Path
) -> None:
    """[Volkmann2020]'s premise: a process trajectory excites the dynamics far worse than an optimised one."""
    figures = {}
    for mode, optimise in (("fourier", True), ("process", False)):
        config = _config(tmp_path, optimise=optimise)
        argv = ["excite", "--urdf", str(arm6_urdf), "--config", str(config), "--mode", mode]
        assert cli.main([*argv, "--out", str(tmp_path / f"{mode}.csv")]) == 0
        line = next(text for text in capsys.readouterr().out.splitlines() if text.startswith("condition number"))
        figures[mode] = float(line.rsplit(":", 1)[1])
    assert figures["fourier"] < 20.0
    assert figures["process"] > 10.0 * figures["fourier"]


def test_unknown_mode_is_refused_by_the_parser(capsys: pytest.CaptureFixture[str], arm6_urdf: Path) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["excite", "--urdf", str(arm6_urdf), "--mode", "sinus", "--out", "x.csv"])
    assert caught.value.code == 2
    assert "invalid choice: 'sinus'" in capsys.readouterr().err


def test_the_search_reports_its_budget_and_the_checks_on_stderr_and_only_the_report_goes_to_stdout(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, arm6_urdf: Path
) -> None:
    config = _config(tmp_path, optimise=True)
    argv = ["excite", "--urdf", str(arm6_urdf), "--config", str(config), "--mode", "fourier"]
    assert cli.main([*argv, "--out", str(tmp_path / "fourier.csv")]) == 0
    printed = capsys.readouterr()
    stages = [line.removeprefix("dynid excite: ") for line in printed.err.splitlines()]
    assert "\r" not in printed.err and all(line.startswith("dynid excite: ") for line in printed.err.splitlines())
    search = [stage for stage in stages if stage.startswith("Fourier search")]
    # The budget is 1500 evaluations (the 60 s are a cap); it is shown in evaluations.
    assert search[0] == "Fourier search (1500 evaluations)"
    assert search[-1] == "Fourier search: 100 % (1500 of 1500 evaluations)"
    assert len(search) <= 1 + 10 + 12  # a line per 10 % or 5 s at most (the 60 s cap bounds the time lines)
    assert stages.index(search[-1]) < stages.index("checks of the executed motion")
    assert stages[-1] == f"writing {tmp_path / 'fourier.csv'}"
    assert "Fourier search" not in printed.out and "condition number" in printed.out


def test_quiet_prints_no_progress(capsys: pytest.CaptureFixture[str], tmp_path: Path, arm6_urdf: Path) -> None:
    argv = ["excite", "--urdf", str(arm6_urdf), "--config", str(_config(tmp_path)), "--mode", "segmented"]
    assert cli.main([*argv, "--out", str(tmp_path / "segmented.csv"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""
