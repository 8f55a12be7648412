"""Recording CSV: exact round trip, column layout, and one-line errors for bad files."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from dynamic_identification.core.errors import DataError
from dynamic_identification.core.mechanism.robot import DriveChain
from dynamic_identification.io.recording import (
    Recording,
    read_recording_csv,
    recording_from_arrays,
    write_recording_csv,
)

JOINTS = ("shoulder", "arm/elbow", "wrist")


def _recording(*, velocity: bool = True, effort: bool = True, current: bool = False, samples: int = 50) -> Recording:
    rng = np.random.default_rng(7)
    shape = (samples, len(JOINTS))
    # Irregular stamps and values with many significant digits, tiny and huge magnitudes.
    time = 1.7e9 + np.cumsum(rng.uniform(0.9e-3, 1.1e-3, samples))
    position = rng.standard_normal(shape) * np.array([1.0, 1e-12, 1e6])
    return recording_from_arrays(
        time,
        JOINTS,
        position,
        velocity=rng.standard_normal(shape) / 3.0 if velocity else None,
        effort=rng.standard_normal(shape) * 1e-7 if effort else None,
        current=rng.standard_normal(shape) * 7.0 if current else None,
    )


def _assert_same(actual: Recording, expected: Recording) -> None:
    assert actual.joint_names == expected.joint_names
    assert_array_equal(actual.time, expected.time)
    for kind in ("position", "velocity", "effort", "current"):
        a, e = getattr(actual, kind), getattr(expected, kind)
        assert (a is None) == (e is None), kind
        if e is not None:
            assert_array_equal(a, e)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rec.csv"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("velocity", "effort", "current"),
    [(True, True, False), (False, True, False), (True, False, True), (False, False, True), (True, True, True)],
)
def test_round_trip_is_bit_exact(tmp_path: Path, velocity: bool, effort: bool, current: bool) -> None:
    recording = _recording(velocity=velocity, effort=effort, current=current)
    path = tmp_path / "rec.csv"
    write_recording_csv(path, recording)
    _assert_same(read_recording_csv(path), recording)
    assert [p.name for p in tmp_path.iterdir()] == ["rec.csv"]


def test_header_lists_time_then_joint_columns(tmp_path: Path) -> None:
    path = tmp_path / "rec.csv"
    write_recording_csv(path, _recording(velocity=False, effort=False, current=True, samples=3))
    header = path.read_text().splitlines()[0]
    assert (
        header
        == "time,shoulder/position,shoulder/current,arm/elbow/position,arm/elbow/current,wrist/position,wrist/current"
    )


def test_columns_in_any_order_and_joint_names_with_slash(tmp_path: Path) -> None:
    path = _write(tmp_path, "ns/j2/effort,time,j1/position,ns/j2/position,j1/effort\n1,0.0,2,3,4\n5,0.5,6,7,8\n")
    recording = read_recording_csv(path)
    assert recording.joint_names == ("ns/j2", "j1")
    assert_array_equal(recording.time, [0.0, 0.5])
    assert_array_equal(recording.position, [[3, 2], [7, 6]])
    assert_array_equal(recording.effort, [[1, 4], [5, 8]])
    assert recording.velocity is None and recording.current is None


def test_time_stamps_are_kept_as_recorded(tmp_path: Path) -> None:
    path = _write(tmp_path, "time,a/position,a/effort\n0.2,1,1\n0.1,1,1\n0.1,1,1\n")
    assert_array_equal(read_recording_csv(path).time, [0.2, 0.1, 0.1])


def test_read_selects_requested_joints_in_order(tmp_path: Path) -> None:
    recording = _recording()
    path = tmp_path / "rec.csv"
    write_recording_csv(path, recording)
    selected = read_recording_csv(path, joint_names=["wrist", "shoulder"])
    assert selected.joint_names == ("wrist", "shoulder")
    assert_array_equal(selected.position, recording.position[:, [2, 0]])
    assert_array_equal(selected.velocity, recording.velocity[:, [2, 0]])


def test_select_reorders_columns_by_name() -> None:
    recording = _recording(current=True)
    selected = recording.select(["wrist", "arm/elbow"])
    assert selected.joint_names == ("wrist", "arm/elbow")
    for kind in ("position", "velocity", "effort", "current"):
        assert_array_equal(getattr(selected, kind), getattr(recording, kind)[:, [2, 1]])
    assert_array_equal(selected.time, recording.time)


def test_select_names_missing_joints() -> None:
    with pytest.raises(DataError, match=r"\['knee'\] are not in the recording"):
        _recording().select(["shoulder", "knee"])


def test_rows_subsets_samples() -> None:
    recording = _recording()
    head = recording.rows(slice(0, 10))
    assert head.n_samples == 10
    assert_array_equal(head.position, recording.position[:10])
    mask = recording.time > recording.time[39]
    assert_array_equal(recording.rows(mask).effort, recording.effort[40:])
    assert recording.rows(3).n_samples == 1


def test_arrays_are_read_only_copies() -> None:
    position = np.zeros((3, 1))
    recording = recording_from_arrays([0.0, 1.0, 2.0], ["a"], position, effort=np.ones((3, 1)))
    position[0, 0] = 5.0
    assert recording.position[0, 0] == 0.0
    with pytest.raises(ValueError, match="read-only"):
        recording.position[0, 0] = 1.0


def test_a_recording_made_from_another_shares_its_read_only_arrays() -> None:
    # A 600 k-sample recording's arrays are 29 MB each: converting currents or selecting joints copies none again.
    recording = _recording(effort=False, current=True)
    chain = DriveChain.create(3, gear_ratios=[100.0, 50.0, 20.0], drive_gains=[0.1, 0.2, 0.05])
    converted = dataclasses.replace(recording, effort=recording.joint_torques(chain), current=None)
    assert converted.time is recording.time and converted.position is recording.position
    assert recording.select(list(reversed(recording.joint_names))).time is recording.time
    with pytest.raises(ValueError, match="read-only"):
        converted.effort[0, 0] = 1.0


def test_joint_torques_convert_currents_with_the_drive_chain() -> None:
    recording = _recording(effort=False, current=True)
    chain = DriveChain.create(3, gear_ratios=[100.0, 50.0, 20.0], drive_gains=[0.1, 0.2, 0.05])
    expected = recording.current * np.array([10.0, 10.0, 1.0])
    np.testing.assert_allclose(recording.joint_torques(chain), expected, rtol=1e-15)
    with pytest.raises(DataError, match="drive_chain is needed"):
        recording.joint_torques()


def test_joint_torques_prefer_measured_effort() -> None:
    recording = _recording(effort=True, current=True)
    assert_array_equal(recording.joint_torques(DriveChain.create(3)), recording.effort)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"position": np.zeros((5, 2))}, r"position must have shape \(5, 1\)"),
        ({"effort": None}, "needs effort .* or current"),
        ({"velocity": np.full((5, 1), np.nan)}, "velocity of joint 'a' at sample 0 is not finite"),
    ],
)
def test_recording_from_arrays_validates(kwargs: dict, message: str) -> None:
    arguments = {"time": np.arange(5.0), "joint_names": ["a"], "position": np.zeros((5, 1)), "effort": np.zeros((5, 1))}
    arguments.update(kwargs)
    with pytest.raises(DataError, match=message):
        recording_from_arrays(**arguments)


def test_recording_from_arrays_needs_two_samples() -> None:
    with pytest.raises(DataError, match="at least 2 samples, got 1"):
        recording_from_arrays([0.0], ["a"], [[0.0]], effort=[[0.0]])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "file is empty"),
        ("a/position,a/effort\n1,2\n3,4\n", "has no 'time' column"),
        (
            "time,a/velocity,a/effort\n0,1,2\n1,1,2\n",
            r"joint 'a' .* has \['effort', 'velocity'\] columns but no 'a/position'",
        ),
        ("time,a/position,a/velocity\n0,1,2\n1,1,2\n", "joint 'a' .* has neither 'a/effort' nor 'a/current'"),
        (  # one column's joint name mistyped: said, not only that 'joint2' has no torque
            "time,joint2/position,joint_2/velocity,joint_2/effort\n0,1,2,3\n1,1,2,3\n",
            r"joint 'joint2' .* has neither 'joint2/effort' nor 'joint2/current'; 'joint_2' has \['effort',"
            r" 'velocity'\]: is one of the two names mistyped\?",
        ),
        (
            "time,a/position,a/effort,b/position,b/current\n0,1,2,3,4\n1,1,2,3,4\n",
            r"different columns: 'a' has \['effort', 'position'\], 'b' has \['current', 'position'\]",
        ),
        ("time,a/position,a/effort,a/position\n0,1,2,3\n1,1,2,3\n", "column 'a/position' appears twice"),
        ("time,a/position,a/torque\n0,1,2\n1,1,2\n", "unknown column 'a/torque'"),
        (
            "time,a/position,a/effort\n0,1,2\n1,oops,2\n",
            "line 3 of .*rec.csv, column 'a/position': 'oops' is not a number",
        ),
        ("time,a/position,a/effort\n0,1,2\n\n1,1,nan\n", "line 4 of .*rec.csv, column 'a/effort': nan is not finite"),
        ("time,a/position,a/effort\n0,1,2\n1,inf,2\n", "line 3 of .*, column 'a/position': inf is not finite"),
        ("time,a/position,a/effort\n0,1,2\n", "has 1 data rows, a recording needs at least 2"),
        ("time,a/position,a/effort\n", "has 0 data rows"),
        ("time,a/position,a/effort\n0,1,2\n1,2\n2,3,4\n", "line 3 of .*rec.csv has 2 cells, the header has 3"),
        ("time,a/position,a/effort\n0,1,2,9\n1,2,3,9\n", "4 cells|has 3 columns"),
    ],
)
def test_bad_files_raise_one_line_data_errors(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(DataError, match=message) as caught:
        read_recording_csv(path)
    assert "\n" not in str(caught.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="recording file not found: .*nope.csv"):
        read_recording_csv(tmp_path / "nope.csv")


def test_unknown_requested_joints_are_named(tmp_path: Path) -> None:
    path = _write(tmp_path, "time,a/position,a/effort\n0,1,2\n1,1,2\n")
    with pytest.raises(DataError, match=r"joints \['b'\] are not in .*rec.csv \(it has \['a'\]\)"):
        read_recording_csv(path, joint_names=["a", "b"])


def test_a_utf8_byte_order_mark_is_ignored(tmp_path: Path) -> None:
    """A spreadsheet's "CSV UTF-8" export starts with a byte order mark."""
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbftime,a/position,a/effort\n0,1,2\n1,1,3\n")
    assert read_recording_csv(path).joint_names == ("a",)


@pytest.mark.parametrize("cells", [0, 1, 4, 8])
def test_a_recording_cut_mid_line_loads_every_whole_line_and_warns(
    tmp_path: Path, cells: int, caplog: pytest.LogCaptureFixture
) -> None:
    """What a killed writer leaves: the file ends inside a line; the lines before it are data."""
    recording = _recording(samples=20)
    path = tmp_path / "rec.csv"
    write_recording_csv(path, recording)
    lines = path.read_bytes().splitlines(keepends=True)
    whole = b"".join(lines[:-3])  # header + 17 rows
    row = lines[-3].split(b",")
    path.write_bytes(whole + b",".join(row[:cells]) + b"," + row[cells][:3])  # cut inside cell `cells`
    with caplog.at_level("WARNING", logger="dynamic_identification"):
        loaded = read_recording_csv(path)
    _assert_same(loaded, recording.rows(slice(0, 17)))
    messages = [record.getMessage() for record in caplog.records]
    assert any("cut off mid-write" in message and "line 19" in message for message in messages)


def test_nul_padding_at_the_end_is_dropped_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A crash can leave the file's last blocks allocated and zero-filled: NUL bytes after (or inside) the last line."""
    recording = _recording(samples=10)
    path = tmp_path / "rec.csv"
    write_recording_csv(path, recording)
    text = path.read_bytes()
    last = text.rstrip(b"\n").rfind(b"\n") + 1
    torn = text[: last + 12]  # the last line cut short, then NUL padding
    path.write_bytes(torn + b"\x00" * 4096)
    with caplog.at_level("WARNING", logger="dynamic_identification"):
        loaded = read_recording_csv(path)
    _assert_same(loaded, recording.rows(slice(0, 9)))
    messages = " ".join(record.getMessage() for record in caplog.records)
    assert "dropped 4096 NUL bytes" in messages and "cut off mid-write" in messages


def test_a_sparse_file_is_read_as_the_nul_bytes_its_holes_stand_for(tmp_path: Path) -> None:
    """The padding a crash leaves is often a hole (a file extended, never written): it is found without reading it,
    and a hole inside the rows is still the NUL bytes it reads as."""
    recording = _recording(samples=10)
    path = tmp_path / "rec.csv"
    write_recording_csv(path, recording)
    size = path.stat().st_size
    with path.open("r+b") as stream:
        stream.truncate(size + 64 * 1024**2)
    _assert_same(read_recording_csv(path), recording)
    text = path.read_bytes()[:size]
    with path.open("wb") as stream:
        stream.write(text[: text.index(b"\n") + 1])
        stream.seek(64 * 1024, 1)
        stream.write(text[text.index(b"\n") + 1 :])
    with pytest.raises(DataError, match="line 2 of .* holds NUL bytes"):
        read_recording_csv(path)


def test_a_last_line_without_newline_that_parses_is_kept(tmp_path: Path) -> None:
    path = _write(tmp_path, "time,a/position,a/effort\n0,1,2\n1,1,3")
    assert read_recording_csv(path).n_samples == 2


def test_nul_bytes_inside_the_file_are_refused_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "rec.csv"
    path.write_bytes(b"time,a/position,a/effort\n0,1,2\n1,\x00\x00,3\n2,1,3\n")
    with pytest.raises(DataError, match="line 3 of .* holds NUL bytes"):
        read_recording_csv(path)


# --- issue 21, finding 9: messages that said the wrong thing -------------------------------------------------


@pytest.mark.parametrize(("separator", "name"), [(";", "';'"), ("\t", "tab")])
def test_a_semicolon_or_tab_separated_file_is_named_as_such(tmp_path: Path, separator: str, name: str) -> None:
    """Before: "has no 'time' column (header: ['time;a/position;a/effort'])"; refused rather than guessed: such files
    often write decimal commas too."""
    path = _write(tmp_path, "time,a/position,a/effort\n0,1,2\n1,1,2\n".replace(",", separator))
    with pytest.raises(DataError, match=f"the header of .* looks {name}-separated .*: dynid reads comma-separated"):
        read_recording_csv(path)


@pytest.mark.parametrize("column", ["time [s]", "timestamp", "t", "time_ns"])
def test_a_time_column_under_another_name_is_pointed_at(tmp_path: Path, column: str) -> None:
    path = _write(tmp_path, f"{column},a/position,a/effort\n0,1,2\n1,1,2\n")
    with pytest.raises(DataError, match=f"is '{re.escape(column)}' the time\\? name it 'time' \\(seconds\\)"):
        read_recording_csv(path)


@pytest.mark.parametrize(("kind", "meant"), [("torque", "effort"), ("pos", "position"), ("vel", "velocity")])
def test_a_column_kind_in_other_words_names_the_column_meant(tmp_path: Path, kind: str, meant: str) -> None:
    path = _write(tmp_path, f"time,a/position,a/{kind}\n0,1,2\n1,1,2\n")
    with pytest.raises(DataError, match=f"unknown column 'a/{kind}' .*did you mean 'a/{meant}'"):
        read_recording_csv(path)


@pytest.mark.parametrize(
    ("first", "kind"), [("/**:", "YAML"), ('<?xml version="1.0"?>', r"XML \(a URDF\?\)")], ids=["yaml", "urdf"]
)
def test_a_configuration_or_urdf_given_as_recording_says_what_it_looks_like(
    tmp_path: Path, first: str, kind: str
) -> None:
    """Before: "has no 'time' column (header: ['/**:'])"."""
    path = _write(tmp_path, f"{first}\n  ros__parameters: {{}}\n")
    with pytest.raises(DataError, match=f"is not a recording CSV: its first line .* looks like {kind}"):
        read_recording_csv(path)
