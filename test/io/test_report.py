"""HTML identification report: page structure, escaping, links, gaps, coverage, refusals, determinism."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.testing import assert_allclose

from dynamic_identification.core.errors import DataError
from dynamic_identification.core.estimation.consistency import LinkComparison
from dynamic_identification.io import report
from dynamic_identification.io.report import (
    Consistency,
    DataSeries,
    LinkStatus,
    ParameterRow,
    Plausibility,
    Quality,
    ReportData,
    amplitude_spectrum,
    coverage,
    envelope,
    joint_errors,
    parameter_unit,
    write_report,
)

MALICIOUS = "<script>alert('x')</script>"
JOINTS = ("shoulder", "elbow", "wrist")
LOWER = np.array([-2.0, -1.0, -np.inf])
UPPER = np.array([2.0, 1.0, np.inf])
VELOCITY = np.array([2.0, 4.0, 5.0])
GAP = slice(600, 900)
MIN_SPEED_RAD_S = 0.05
"""The stick-phase speed of the report's data sets, rad/s."""


def _series(name: str, seed: int, samples: int = 3000, rate_hz: float = 500.0, *, baseline: bool = False) -> DataSeries:
    """Joint 1 and 2 move (joint 1's prediction has a gap), joint 3 stands still and has no prediction."""
    rng = np.random.default_rng(seed)
    time = 100.0 + np.arange(samples) / rate_hz
    q = np.column_stack([np.sin(0.5 * time), 0.5 * np.sin(0.8 * time), np.full(samples, 0.3)])
    dq = np.column_stack([0.5 * np.cos(0.5 * time), 0.4 * np.cos(0.8 * time), np.zeros(samples)])
    measured = np.column_stack([20.0 * q[:, 0], 5.0 * dq[:, 1], np.full(samples, 1.0)])
    measured += 0.1 * rng.standard_normal(measured.shape)
    predicted = measured - 0.1 * rng.standard_normal(measured.shape)
    predicted[GAP, 0] = np.nan
    predicted[:, 2] = np.nan
    # The URDF's own model: 30 % too much torque on every joint.
    urdf = 1.3 * measured if baseline else None
    moving = np.abs(dq) >= MIN_SPEED_RAD_S
    return DataSeries(
        name=name, time=time, measured=measured, predicted=predicted, q=q, dq=dq, moving=moving, baseline=urdf
    )


def _body(index: int, *, at_bound: bool) -> LinkComparison:
    """A body of 2 kg (URDF 2.5 kg), the data determining its mass and the URDF its moments."""
    com, moments = np.array([0.0, 0.0, 0.1]), np.array([0.01, 0.02, 0.02])
    return LinkComparison(
        index=index,
        mass=2.0,
        mass_urdf=2.5,
        com=com,
        com_urdf=com,
        moments=moments,
        moments_urdf=moments,
        mass_source="data",
        com_source="data + URDF",
        moments_source="URDF",
        at_bound=at_bound,
    )


def _data(**changes: Any) -> ReportData:
    values: dict[str, Any] = {
        "title": "Identification of the test arm",
        "robot_name": "test_arm",
        "urdf": "package://test/urdf/arm.urdf",
        "joints": JOINTS,
        "parameters": [
            ParameterRow("ZZ1", 1.25, 0.8, "ZZ1 + Ia1 + ZZ2", std=0.01),
            ParameterRow("MX2", 0.1, 45.0, "MX2 + 0.3 M3"),
            ParameterRow("Fc2", 2.0, None, "Fc2"),
            ParameterRow("XY3", 1e-4, float("inf"), "XY3"),
            ParameterRow(MALICIOUS, 3.0, 1.0, "a < b & c", unit="kg"),
            ParameterRow("Fc3", 0.0, 1.67e11, "Fc3", std=0.05, bound="Fc3 >= 0"),
        ],
        "datasets": [_series("training", 1, baseline=True), _series(f"validation: {MALICIOUS}.csv", 2)],
        "removed": [("YZ3", "not excited"), ("off3", "essential parameters (r_sigma 20)")],
        "quality": Quality(
            condition_number=42.5,
            relative_error=0.031,
            joint_errors=[0.1, 0.05, np.nan],
            joint_relative_errors=[0.02, 0.03, np.nan],
            samples=3000,
            rate_hz=500.0,
            decimation=5,
            equations=600,
            window_s=6.0,
        ),
        "settings": {"signal": {"position_cutoff_hz": 20.0, "velocity": "differentiated"}, "method": "wls"},
        "consistency": Consistency(
            ok=False,
            links=[LinkStatus("link_1", True, 0.01, 3.0), LinkStatus("link_2", False, -0.2, 1.5)],
            bodies=[_body(0, at_bound=False), _body(1, at_bound=True)],
            problems=["Fc2 < 0"],
            cost_increase=0.012,
            shift_sigma=2.5,
        ),
        "plausibility": Plausibility(ok=False, problems=["Fc2 = 250 N·m beyond 1.5 × the effort limit"]),
        "warnings": [f"a warning naming {MALICIOUS}"],
        "lower_limits": LOWER,
        "upper_limits": UPPER,
        "velocity_limits": VELOCITY,
        "min_speed_rad_s": MIN_SPEED_RAD_S,
        "stamp": "2025-01-02 03:04:05",
    }
    values.update(changes)
    return ReportData(**values)


@dataclass
class _Page(HTMLParser):
    """What a browser would see: tags, text, image sources, link targets and table rows (class, cell texts)."""

    tags: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    rows: list[tuple[str, list[str]]] = field(default_factory=list)
    in_cell: bool = False

    def __post_init__(self) -> None:
        super().__init__(convert_charrefs=True)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        attributes = dict(attrs)
        if tag == "img":
            self.images.append(attributes["src"] or "")
        if tag == "a":
            self.links.append(attributes["href"] or "")
        if tag == "tr":
            self.rows.append((attributes.get("class") or "", []))
        if tag in ("td", "th") and self.rows:
            self.rows[-1][1].append("")
            self.in_cell = True

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th"):
            self.in_cell = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self.in_cell:
            self.rows[-1][1][-1] += data

    def row(self, first: str, index: int = 0) -> tuple[str, list[str]]:
        """The ``index``-th table row whose first cell is ``first``."""
        return [row for row in self.rows if row[1] and row[1][0] == first][index]


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The report of :func:`_data`, and the matplotlib figures it saved by file name."""
    figures: dict[str, Any] = {}
    save = report._save

    def keep(figure: Any, path: Path) -> None:
        figures[path.name] = figure
        save(figure, path)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report, "_save", keep)
        page = write_report(tmp_path_factory.mktemp("report") / "out", _data())
    return page, figures


def test_page_parses_and_names_every_parameter_joint_and_data_set(written: tuple[Path, dict[str, Any]]) -> None:
    page = _parse(written[0])
    text = "".join(page.text)
    assert page.tags[:2] == ["html", "head"] and "body" in page.tags
    for name in [row.name for row in _data().parameters] + list(JOINTS) + ["training", "YZ3", "off3"]:
        assert name in text
    assert "2025-01-02 03:04:05" in text
    assert "kg·m²" in text and "N·m" in text


def test_links_only_png_files_beside_the_page(written: tuple[Path, dict[str, Any]]) -> None:
    path = written[0]
    page = _parse(path)
    assert page.images, "the page shows figures"
    for target in page.images + [link for link in page.links if not link.startswith("#")]:
        assert target.endswith(".png") and "/" not in target and ":" not in target
        assert (path.parent / target).is_file()
    assert {"torques_1.png", "torques_2.png", "spectra.png", "coverage.png"} <= set(page.images)
    assert not {"script", "link", "iframe", "object"} & set(page.tags)
    assert "url(" not in path.read_text(encoding="utf-8")


def test_escapes_user_strings(written: tuple[Path, dict[str, Any]]) -> None:
    source = written[0].read_text(encoding="utf-8")
    page = _parse(written[0])
    assert "<script>" not in source
    assert "&lt;script&gt;" in source
    assert "script" not in page.tags
    assert MALICIOUS in "".join(page.text)
    assert "a &lt; b &amp; c" in source


def test_missing_predictions_are_gaps_not_zeros(written: tuple[Path, dict[str, Any]]) -> None:
    figure = written[1]["torques_1.png"]
    top = figure.axes[0]
    full = [line for line in top.get_lines() if line.get_color() == report._PREDICTED and line.get_alpha() is None]
    time, values = (np.asarray(array, dtype=float) for array in full[0].get_data())
    inside = (time > 600 / 500.0) & (time < 899 / 500.0)
    assert inside.any() and np.all(np.isnan(values[inside]))
    assert np.all(values[np.isfinite(values)] != 0.0)


def test_joint_without_prediction_is_said_so(written: tuple[Path, dict[str, Any]]) -> None:
    page = _parse(written[0])
    _, errors = page.row("wrist")
    assert errors[1] == "no equation (never moved, or only at stick speeds)"
    assert errors[2:] == ["no prediction (did not move)"] * 2
    titles = [axis.get_title(loc="left") for axis in written[1]["torques_1.png"].axes]
    assert "wrist: no prediction (did not move)" in titles


def test_parameters_coloured_by_relative_std(written: tuple[Path, dict[str, Any]]) -> None:
    page = _parse(written[0])
    rows = {cells[1]: (css, cells) for css, cells in page.rows if cells[0].isdigit()}
    assert {name: rows[name][0] for name in ("ZZ1", "MX2", "Fc2", "XY3")} == {
        "ZZ1": "",
        "MX2": "high",
        "Fc2": "",
        "XY3": "unidentifiable",
    }
    assert rows["ZZ1"][1][2:] == ["1.25", "kg·m²", "0.01", "0.8", "ZZ1 + Ia1 + ZZ2"]
    assert rows["Fc2"][1][4:6] == ["–", "unknown"]
    assert rows["XY3"][1][5] == "∞ (not identifiable)"


def test_a_parameter_held_at_its_bound_shows_the_bound_and_its_sigma_not_a_huge_relative_sigma(
    written: tuple[Path, dict[str, Any]],
) -> None:
    """Issue 25 finding 4: a friction the consistent estimate holds at 0 showed %σ 1.67e+11."""
    page = _parse(written[0])
    css, cells = next((css, cells) for css, cells in page.rows if cells[1:2] == ["Fc3"])
    assert css == "bound"
    assert cells[4:6] == ["0.05", "at its bound (Fc3 >= 0)"]


def test_a_body_held_at_the_consistency_bound_is_marked_in_the_bodies_table(
    written: tuple[Path, dict[str, Any]],
) -> None:
    """Issue 25 finding 3: a body the data pushed onto its pseudo-inertia bound shows it, beside its values."""
    page = _parse(written[0])
    bodies = [cells for _, cells in page.rows if len(cells) == 7]  # joint, then (identified, determined by) × 3
    first, second = (next(cells for cells in bodies if cells[0].startswith(joint)) for joint in JOINTS[:2])
    assert "bound" not in first[0]
    assert second[0] == f"{JOINTS[1]}pseudo-inertia at its bound"
    assert second[1:3] == ["2URDF 2.5", "data"]


def test_the_summary_gives_one_torque_error_per_data_set_beside_the_urdf_model_s(
    written: tuple[Path, dict[str, Any]],
) -> None:
    """Issue 25 finding 4: a headline figure per data set, and the URDF's own model as the baseline (in the summary,
    the error table and as a third curve)."""
    page = _parse(written[0])
    text = "".join(page.text)
    training = report.joint_errors(_data().datasets[0])
    assert f"torque error ‖τ − τ̂‖/‖τ‖, training{100 * training.overall:.3g} %" in text.replace("\n", "")
    assert "(the URDF's model: 30 %)" in text
    assert "e*_j of the URDF's model" in text
    top = written[1]["torques_1.png"].axes[0]
    assert len(top.lines) == 3 + (1 if _data().min_speed_rad_s > 0 else 0)  # measured, URDF, predicted


def test_coverage_fractions_of_the_limits() -> None:
    time = np.linspace(0.0, 10.0, 1001)
    q = np.column_stack([-1.0 + 1.5 * time / 10.0, np.full(time.size, 0.2), 3.0 * time])
    dq = np.column_stack([np.full(time.size, 0.15), np.zeros(time.size), np.full(time.size, -3.0)])
    dq[500, 0] = -1.0
    zeros = np.zeros_like(q)
    series = DataSeries(name="synthetic", time=time, measured=zeros, predicted=zeros, q=q, dq=dq, moving=dq != 0.0)
    result = coverage(series, LOWER, UPPER, VELOCITY)
    assert_allclose(result.q_min, [-1.0, 0.2, 0.0])
    assert_allclose(result.q_max, [0.5, 0.2, 30.0])
    assert_allclose(result.range_fraction[:2], [1.5 / 4.0, 0.0])
    assert np.isnan(result.range_fraction[2])  # continuous joint: no range
    assert_allclose(result.speed_max, [1.0, 0.0, 3.0])
    assert_allclose(result.speed_fraction, [0.5, 0.0, 0.6])
    assert result.moved.tolist() == [True, False, True]


def test_coverage_table_in_the_page(written: tuple[Path, dict[str, Any]]) -> None:
    page = _parse(written[0])
    _, shoulder = page.row("shoulder", 1)
    q = np.sin(0.5 * _series("x", 1).time)
    assert shoulder[1:3] == ["-2 … 2", "2"]
    assert shoulder[4] == f"{100 * np.ptp(q) / 4.0:.0f} %"
    assert shoulder[6] == f"{100 * 0.5 / 2.0:.0f} %"
    _, wrist = page.row("wrist", 1)
    assert wrist[1] == "none" and wrist[3].endswith("(did not move)")


def test_joint_errors_of_known_residuals() -> None:
    time = np.arange(4.0)
    measured = np.array([[2.0, 1.0], [-2.0, 1.0], [4.0, 1.0], [4.0, 1.0]])
    predicted = np.array([[1.0, np.nan], [-1.0, np.nan], [np.nan, np.nan], [4.0, np.nan]])
    dq = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [0.0, 1.0]])
    series = DataSeries(name="x", time=time, measured=measured, predicted=predicted, q=dq, dq=dq, moving=dq >= 0.5)
    errors = joint_errors(series)
    assert errors.counted.tolist() == [2, 0]
    assert_allclose(errors.e[0], 1.0)
    assert_allclose(errors.rms[0], 1.0)
    assert_allclose(errors.relative[0], 2.0 / 4.0)
    assert np.isnan(errors.e[1]) and np.isnan(errors.relative[1])


def test_envelope_keeps_extremes_and_gaps_with_few_points() -> None:
    rng = np.random.default_rng(0)
    time = np.arange(600_000) * 1e-3
    values = rng.standard_normal(time.size).cumsum()
    values[100_000:100_050] = np.nan
    values[250_000] = 1e6
    kept_time, kept = envelope(time, values, buckets=1000)
    assert kept.size <= 3000
    assert np.all(np.diff(kept_time) >= 0.0)
    assert np.nanmax(kept) == 1e6 and np.nanmin(kept) == np.nanmin(values)
    gap = (kept_time >= 100.0) & (kept_time < 100.05)
    assert gap.any() and np.all(np.isnan(kept[gap]))
    assert np.isfinite(kept[~gap]).all()


def test_envelope_of_a_short_curve_is_the_curve() -> None:
    time = np.arange(10.0)
    kept_time, kept = envelope(time, time**2, buckets=5)
    assert kept_time is time
    assert np.array_equal(kept, time**2)


def test_amplitude_spectrum_of_white_noise_and_a_sine() -> None:
    rate = 1000.0
    time = np.arange(200_000) / rate
    rng = np.random.default_rng(4)
    noise = 0.5 * rng.standard_normal(time.size)
    spectrum = amplitude_spectrum(time, noise)
    assert spectrum is not None
    # one-sided PSD of white noise: 2 σ² / fs
    assert_allclose(np.median(spectrum.amplitude), 0.5 * np.sqrt(2.0 / rate), rtol=0.1)
    sine = amplitude_spectrum(time, np.sin(2 * np.pi * 12.5 * time) + 1e-3 * noise)
    assert sine is not None
    assert_allclose(sine.frequency[np.argmax(sine.amplitude)], 12.5, rtol=0.02)


def test_amplitude_spectrum_needs_a_stretch_of_values() -> None:
    time = np.arange(100.0)
    values = np.full(100, np.nan)
    values[::2] = 1.0
    assert amplitude_spectrum(time, values) is None


def test_refuses_a_file_as_directory(tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    path.write_text("not a directory", encoding="utf-8")
    with pytest.raises(DataError, match="report directory .*report.html exists and is not a directory") as caught:
        write_report(path, _data())
    assert "\n" not in str(caught.value)
    assert path.read_text(encoding="utf-8") == "not a directory"


def test_refuses_mismatched_joints() -> None:
    with pytest.raises(DataError, match="has 3 joints, the report names 2"):
        _data(joints=("a", "b"))
    with pytest.raises(DataError, match=r"predicted of data set 'x' must have shape \(3, n\)"):
        DataSeries(
            name="x",
            time=np.arange(3.0),
            measured=np.zeros((3, 2)),
            predicted=np.zeros((2, 2)),
            q=np.zeros((3, 2)),
            dq=np.zeros((3, 2)),
            moving=np.ones((3, 2), dtype=bool),
        )


def test_same_data_same_files(tmp_path: Path) -> None:
    series = _series("training", 3, samples=400)
    one = DataSeries(
        name="training",
        time=series.time,
        measured=series.measured[:, :1],
        predicted=series.predicted[:, :1],
        q=series.q[:, :1],
        dq=series.dq[:, :1],
        moving=series.moving[:, :1],
    )
    data = _data(
        joints=("shoulder",),
        consistency=replace(_data().consistency, bodies=[_body(0, at_bound=False)]),
        datasets=[one],
        quality=Quality(condition_number=3.0),
        lower_limits=[-2.0],
        upper_limits=[2.0],
        velocity_limits=[2.0],
    )
    first, second = write_report(tmp_path / "first", data), write_report(tmp_path / "second", data)
    assert first.read_bytes() == second.read_bytes()
    names = sorted(path.name for path in first.parent.iterdir())
    assert names == ["coverage.png", "index.html", "spectra.png", "torques_1.png"]
    for name in names:
        assert (first.parent / name).read_bytes() == (second.parent / name).read_bytes()


@pytest.mark.parametrize(
    ("name", "unit"),
    [("ZZ1", "kg·m²"), ("MX12", "kg·m"), ("M3", "kg"), ("Fv2", "N·m·s/rad"), ("off6", "N·m"), ("what", "")],
)
def test_parameter_units(name: str, unit: str) -> None:
    assert parameter_unit(name) == unit


def test_amplitude_spectrum_stretches_end_at_stamp_gaps() -> None:
    rate = 1000.0
    time = np.arange(40_000) / rate
    time[20_000:] += 5.05  # 5 s of dropped messages: half a period of the sine
    values = np.sin(2 * np.pi * 10.0 * time)
    spectrum = amplitude_spectrum(time, values)
    joined = amplitude_spectrum(np.arange(40_000) / rate, values)
    assert spectrum is not None and joined is not None
    # across the gap the sine's phase jumps: joined, that leaks energy beside the 10 Hz line
    leak = (spectrum.frequency > 20.0) & (spectrum.frequency < 100.0)
    assert np.median(spectrum.amplitude[leak]) < 0.2 * np.median(joined.amplitude[leak])
