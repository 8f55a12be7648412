"""Identification configuration from ROS 2 parameter YAML files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from numpy.testing import assert_array_equal

from dynamic_identification.core.errors import DataError
from dynamic_identification.core.mechanism.robot import DriveTerms
from dynamic_identification.io.config import (
    IdentificationConfig,
    config_from_parameters,
    is_closed_loop_key,
    is_known_key,
    load_config,
    load_excitation_settings,
    ros_parameters,
    unread_keys,
)

EXAMPLE = """\
/**:
  ros__parameters:
    joints: [shoulder, elbow]
    drive_chain:
      gear_ratios: [100.0, 80.0]     # motor rad / joint rad
      drive_gains: [0.11, 0.07]      # N·m/A
      coupling: [1.0, 0.0, 1.0, 1.0] # row by row
    signal:
      position_cutoff_hz: 10.0       # Hz
estimator:
  ros__parameters:
    drive_terms:
      offset: false
    signal:
      position_cutoff_hz: 15.0       # Hz, wins over /**
      decimation: 4
      use_measured_velocity: true
    estimation:
      method: ols
      reduction: none
      r_sigma: 30.0
      min_samples: 500
    topics:
      effort_is_torque: true
    parameters_file: estimate.yaml   # the node's own parameter, not ours
recorder:
  ros__parameters:
    tolerance_s: 0.004
    output_dir: /tmp
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "dynid.yaml"
    path.write_text(text)
    return path


def test_flattening_merges_wildcard_and_node_blocks(tmp_path: Path) -> None:
    parameters = ros_parameters(_write(tmp_path, EXAMPLE), "estimator")
    assert parameters["signal.position_cutoff_hz"] == 15.0
    assert parameters["drive_chain.gear_ratios"] == [100.0, 80.0]
    assert parameters["signal.decimation"] == 4
    assert "output_dir" not in parameters
    recorder = ros_parameters(_write(tmp_path, EXAMPLE), "/recorder")
    assert (recorder["tolerance_s"], recorder["signal.position_cutoff_hz"]) == (0.004, 10.0)
    assert ros_parameters(_write(tmp_path, EXAMPLE))["signal.position_cutoff_hz"] == 10.0


def test_plain_mapping_is_accepted_and_flattened(tmp_path: Path) -> None:
    path = _write(tmp_path, "signal: {decimation: 2}\nestimation:\n  method: ols\n")
    assert ros_parameters(path, "estimator") == {"signal.decimation": 2, "estimation.method": "ols"}
    assert load_config(path).decimation == 2


def test_example_config_is_read(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, EXAMPLE))
    assert config.joints == ("shoulder", "elbow")
    assert config.drive_terms == DriveTerms(offset=False)
    assert (config.position_cutoff_hz, config.decimation, config.velocity) == (15.0, 4, "measured")
    assert (config.method, config.reduction.method, config.reduction.r_sigma, config.min_samples) == (
        "ols",
        "none",
        30.0,
        500,
    )
    assert config.effort_is_torque and config.joint_states_topic == "/joint_states"
    chain = config.drive_chain(2)
    assert_array_equal(chain.transmission, [[100.0, 0.0], [80.0, 80.0]])
    assert_array_equal(chain.drive_gains, [0.11, 0.07])


def test_defaults_without_a_file() -> None:
    config = load_config(None)
    assert config == IdentificationConfig()
    assert (config.method, config.reduction.method, config.decimation) == ("wls", "none", 0)
    assert_array_equal(config.drive_chain(3).transmission, [[1, 0, 0], [0, 1, 0], [0, 0, 1]])


def test_empty_file_gives_defaults(tmp_path: Path) -> None:
    assert load_config(_write(tmp_path, "")) == IdentificationConfig()


def test_typo_in_an_owned_section_is_named(tmp_path: Path) -> None:
    path = _write(tmp_path, "estimator:\n  ros__parameters:\n    signal:\n      positon_cutoff_hz: 5.0\n")
    with pytest.raises(DataError, match=r"unknown configuration keys \['signal.positon_cutoff_hz'\] in .*dynid.yaml"):
        load_config(path)


@pytest.mark.parametrize(
    ("block", "key", "readers"),
    [("/**/recorder", "harmonics: 3", "excitation"), ("/**/sim_robot", "window:\n        window_s: 5.0", "estimator")],
)
def test_another_nodes_key_in_a_nodes_block_is_refused_naming_who_reads_it(
    tmp_path: Path, block: str, key: str, readers: str
) -> None:
    """A key only another node reads reaches no one from this block: refused, not silently ignored."""
    path = _write(tmp_path, f"{block}:\n  ros__parameters:\n    {key}\n")
    node = block.rsplit("/", 1)[-1]
    with pytest.raises(DataError, match=rf"keys the {node} does not read .* in block '{re.escape(block)}'.*{readers}"):
        ros_parameters(path, node)


def test_dynids_keys_in_the_estimators_block_and_shared_keys_in_any_block_are_placed(tmp_path: Path) -> None:
    text = (
        "/**/estimator:\n  ros__parameters:\n    estimation:\n      method: ols\n    use_sim_time: true\n"
        "/**/excitation:\n  ros__parameters:\n    max_evaluations: 100\n    joints: [a, b]\n"
    )
    assert ros_parameters(_write(tmp_path, text), "estimator")["estimation.method"] == "ols"


def test_extra_keys_declared_by_the_caller_are_accepted() -> None:
    config = config_from_parameters({"estimation.window_s": 20.0}, extra_keys=["estimation.window_s"])
    assert config == IdentificationConfig()


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("signal.position_cutoff_hz", -1.0, "signal.position_cutoff_hz in test must be finite and >= 0, got -1.0"),
        ("signal.position_cutoff_hz", "fast", "must be a number, got 'fast'"),
        ("signal.decimation", 2.5, "signal.decimation in test must be an integer, got 2.5"),
        ("signal.decimation", -1, "must be >= 0, got -1"),
        ("signal.use_measured_velocity", "yes", "must be true or false, got 'yes'"),
        ("signal.velocity", "fused", r"one of \['auto', 'measured', 'differentiated'\]"),
        ("signal.stamps", "smoothed", r"one of \['auto', 'recorded', 'recovered'\]"),
        ("signal.rate_hz", -100.0, "must be finite and >= 0, got -100.0"),
        ("estimation.method", "tls", r"estimation.method in test must be one of \['ols', 'wls'\], got 'tls'"),
        ("estimation.reduction", "sinus", r"one of \['sensitivity', 'essential', 'none'\]"),
        ("estimation.min_samples", 0, "must be >= 1, got 0"),
        ("drive_terms.offset", 1, "drive_terms.offset in test must be true or false, got 1"),
        ("drive_chain.gear_ratios", [1.0, "x"], "must be a list of finite numbers"),
        ("drive_chain.coupling", [1.0, 0.0, 1.0], "must be a square matrix"),
        ("joints", ["a", "a"], "distinct joint names"),
        ("topics.joint_states", "", "must be a non-empty string"),
    ],
)
def test_bad_values_are_named(key: str, value: object, message: str) -> None:
    with pytest.raises(DataError, match=message):
        config_from_parameters({key: value}, source="test")


def test_the_deprecated_velocity_flag_means_a_velocity_source_unless_one_is_given() -> None:
    assert config_from_parameters({"signal.use_measured_velocity": True}).velocity == "measured"
    assert config_from_parameters({"signal.use_measured_velocity": False}).velocity == "differentiated"
    both = {"signal.use_measured_velocity": True, "signal.velocity": "auto"}
    assert config_from_parameters(both).velocity == "auto"


def test_overrides_by_key_are_checked_like_the_file() -> None:
    config = IdentificationConfig().overridden(
        {"signal.position_cutoff_hz": 12.0, "signal.velocity": "measured", "estimation.consistency": False},
        source="the command line",
    )
    assert (config.position_cutoff_hz, config.velocity, config.consistency) == (12.0, "measured", False)
    reduced = IdentificationConfig().overridden(
        {"estimation.reduction": "essential", "estimation.r_sigma": 30.0}, source="the command line"
    )
    assert (reduced.reduction.method, reduced.reduction.r_sigma, reduced.window.reduction.method) == (
        "essential",
        30.0,
        "sensitivity",
    )
    with pytest.raises(DataError, match="signal.position_cutoff_hz in the command line must be finite and >= 0"):
        IdentificationConfig().overridden({"signal.position_cutoff_hz": -1.0}, source="the command line")
    with pytest.raises(DataError, match=r"one of \['auto', 'recorded', 'recovered'\]"):
        IdentificationConfig().overridden({"signal.stamps": "smoothed"}, source="the command line")
    with pytest.raises(DataError, match="unknown configuration keys .*signal.cutoff_hz"):
        IdentificationConfig().overridden({"signal.cutoff_hz": 12.0}, source="the command line")


def test_sizes_must_agree() -> None:
    with pytest.raises(DataError, match="sizes disagree"):
        config_from_parameters({"joints": ["a", "b"], "drive_chain.gear_ratios": [1.0, 2.0, 3.0]})


def test_loop_closures_are_read_through_the_schema_as_a_list_or_by_name() -> None:
    """``robot.loop_closures`` is one setting of the schema: a list in a plain file, named groups of ROS parameters."""
    closure = {"frame_a": "tip_1", "frame_b": "tip_2", "type": "point"}
    listed = config_from_parameters({"robot.loop_closures": [closure], "robot.actuated_joints": ["m1", "m2"]})
    members = {f"robot.loop_closures.distal_tip.{key}": value for key, value in closure.items()}
    named = config_from_parameters({**members, "robot.actuated_joints": ["m1", "m2"]})
    assert listed.closed_loop and listed.loop_closures == named.loop_closures
    assert (listed.loop_closures[0].frame_a, listed.actuated_joints) == ("tip_1", ("m1", "m2"))
    assert not config_from_parameters({}).closed_loop
    assert is_known_key("robot.loop_closures.distal_tip.frame_a") and is_closed_loop_key("robot.actuated_joints")
    assert not is_known_key("robot.loop_closures.frame_a")
    with pytest.raises(DataError, match="robot.loop_closures in p must be given once"):
        config_from_parameters({"robot.loop_closures": [closure], "robot.loop_closures.cut.frame_a": "a"}, source="p")
    with pytest.raises(DataError, match=r"unknown configuration keys \['robot.loop_closures.frame_a'\] in p"):
        config_from_parameters({"robot.loop_closures.frame_a": "a"}, source="p")
    with pytest.raises(DataError, match="robot.loop_closures in p must be a list of closures"):
        config_from_parameters({"robot.loop_closures": "tip_1-tip_2"}, source="p")
    with pytest.raises(DataError, match="robot.loop_closures in p needs robot.actuated_joints"):
        config_from_parameters({"robot.loop_closures": [closure]}, source="p")
    with pytest.raises(DataError, match=r"robot.actuated_joints in p .* give robot.loop_closures too"):
        config_from_parameters({"robot.actuated_joints": ["m1"]}, source="p")


def test_coupling_accepts_rows() -> None:
    config = config_from_parameters({"drive_chain.coupling": [[1.0, 0.0], [-1.0, 1.0]]})
    assert config.coupling == ((1.0, 0.0), (-1.0, 1.0))


def test_unreadable_yaml_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="dynid.yaml is not valid YAML"):
        ros_parameters(_write(tmp_path, "estimator: [\n"))
    with pytest.raises(DataError, match="configuration file not found: .*missing.yaml"):
        load_config(tmp_path / "missing.yaml")


def test_a_parameter_file_written_by_launch_ros_reads_its_lists(tmp_path: Path) -> None:
    """launch_ros writes a launch file's list parameters as ``!!python/tuple``: sim.launch.py's sim_robot refused
    its own parameter file ("could not determine a constructor for the tag …python/tuple")."""
    text = (
        "/sim_robot:\n  ros__parameters:\n    lockstep: true\n"
        "    lockstep_consumers: !!python/tuple\n    - recorder\n    - estimator\n"
    )
    assert ros_parameters(_write(tmp_path, text), "sim_robot")["lockstep_consumers"] == ["recorder", "estimator"]


def test_block_without_ros_parameters_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, "estimator:\n  ros__parameters: {}\nrecorder:\n  ros_parameters: {}\n")
    with pytest.raises(DataError, match="block 'recorder' of .* has no 'ros__parameters'"):
        ros_parameters(path, "estimator")


def test_excitation_settings_come_from_the_excitation_block(tmp_path: Path) -> None:
    path = tmp_path / "robot.yaml"
    path.write_text(
        "/**:\n  ros__parameters:\n    joints: [a, b]\n"
        "excitation:\n  ros__parameters:\n    mode: segmented\n    harmonics: 3\n    box_min: [0.1, -0.2, 0.3]\n"
        "    output_topic: /joint_trajectory\n",
        encoding="utf-8",
    )
    settings = load_excitation_settings(path)
    assert (settings.mode, settings.harmonics, settings.box_min) == ("segmented", 3, (0.1, -0.2, 0.3))
    assert load_excitation_settings(path, mode="process").mode == "process"
    assert load_excitation_settings(None).mode == "fourier"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("mode: sinus", r"mode .* one of \['fourier', 'segmented', 'process', 'payload'\]"),
        ("harmonics: 0", "harmonics .* >= 1"),
        ("velocity_scale: 1.5", "velocity_scale must be in"),
        ("fundamental_hz: -1", "fundamental_hz .* > 0"),
    ],
)
def test_bad_excitation_settings_name_the_key(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "robot.yaml"
    path.write_text(f"excitation:\n  ros__parameters:\n    {line}\n", encoding="utf-8")
    with pytest.raises(DataError, match=message):
        load_excitation_settings(path)


@pytest.mark.parametrize("path", sorted(Path(__file__).resolve().parents[2].joinpath("config").glob("*.yaml")), ids=str)
def test_every_shipped_configuration_loads(path: Path) -> None:
    config = load_config(path)
    assert config.window_settings().window_s > 0.0
    assert load_excitation_settings(path).harmonics >= 1
    assert set(ros_parameters(path, "recorder")) >= set(ros_parameters(path, None))


# --- issue 21, finding 9: messages that said the wrong thing -------------------------------------------------

DRIVE_CHAIN = "      gear_ratios: [100.0, 80.0]\n      drive_gains: [0.1, 0.1]\n"


def test_a_drive_chain_left_empty_above_its_keys_says_to_indent_them_not_did_you_mean(tmp_path: Path) -> None:
    """Before: "unknown configuration keys ['drive_chain'] … (did you mean 'drive_gains'?)"."""
    text = "/**:\n  ros__parameters:\n    joints: [a, b]\n    drive_chain:\n" + DRIVE_CHAIN.replace("      ", "    ")
    with pytest.raises(DataError) as caught:
        load_config(_write(tmp_path, text))
    message = str(caught.value)
    assert "'drive_chain' in block '/**' of" in message and "is empty" in message
    assert "'gear_ratios', 'drive_gains' sit beside it: indent them one level more, under drive_chain" in message
    assert "did you mean" not in message


def test_a_drive_chain_beside_ros_parameters_is_refused_not_ignored(tmp_path: Path) -> None:
    """Before: read without it (gear ratios 1, gains 1), without a word."""
    text = "/**:\n  ros__parameters:\n    joints: [a, b]\n  drive_chain:\n" + DRIVE_CHAIN.replace("      ", "    ")
    with pytest.raises(DataError, match=r"'drive_chain' in block '/\*\*' of .* sits beside 'ros__parameters'"):
        load_config(_write(tmp_path, text))


def test_a_drive_chain_at_the_top_level_is_called_a_parameter_not_a_block(tmp_path: Path) -> None:
    """Before: "block 'drive_chain' of … has no 'ros__parameters' mapping"."""
    text = "/**:\n  ros__parameters:\n    joints: [a, b]\ndrive_chain:\n" + DRIVE_CHAIN.replace("      ", "  ")
    with pytest.raises(DataError, match="'drive_chain' at the top level of .* is a parameter, not a node block"):
        load_config(_write(tmp_path, text))


def test_a_drive_gains_count_that_is_not_the_joints_names_file_key_and_joints(tmp_path: Path) -> None:
    """Before: "drive_gains must have 3 entries (one per joint), got shape (2,)"."""
    path = _write(tmp_path, "/**:\n  ros__parameters:\n    drive_chain:\n" + DRIVE_CHAIN)
    with pytest.raises(DataError) as caught:
        load_config(path).drive_chain(3, ("j1", "j2", "j3"))
    message = str(caught.value)
    assert message.startswith(f"drive_chain.gear_ratios in {path} has 2 entries, but the 3 joints ['j1', 'j2', 'j3']")
    assert "joints unset" in message


def test_a_urdf_given_as_configuration_is_called_xml(tmp_path: Path) -> None:
    """Before: "… is not valid YAML: mapping values are not allowed here …"."""
    path = _write(tmp_path, '<?xml version="1.0"?>\n<robot name="arm">\n  <link name="base: a"/>\n</robot>\n')
    with pytest.raises(DataError, match=r"configuration file .* is XML \(a URDF\?\), not a ROS 2 parameter YAML"):
        load_config(path)


def test_dynid_reads_the_recorders_alignment_settings_from_the_wildcard_and_the_recorder_block(tmp_path: Path) -> None:
    wildcard = _write(tmp_path, "/**:\n  ros__parameters:\n    tolerance_s: 0.02\n    max_delay_s: 0.8\n")
    assert (load_config(wildcard).tolerance_s, load_config(wildcard).max_delay_s) == (0.02, 0.8)
    recorder = tmp_path / "recorder.yaml"
    recorder.write_text(
        "/**:\n  ros__parameters:\n    tolerance_s: 0.02\n"
        "/**/recorder:\n  ros__parameters:\n    tolerance_s: 0.01\n    topics: {motor_currents: joint_states}\n"
    )
    config = load_config(recorder)
    assert config.tolerance_s == 0.01  # the recorder's block wins, as the recorder reads it
    assert config.currents_topic == config.joint_states_topic == "/joint_states"  # currents in the joint states


def test_currents_in_the_joint_states_cannot_also_be_joint_torques() -> None:
    with pytest.raises(DataError, match="topics.motor_currents .* names the joint-states topic /js.*effort_is_torque"):
        config_from_parameters(
            {"topics.joint_states": "js", "topics.motor_currents": "/js", "topics.effort_is_torque": True}
        )


def test_a_key_set_where_dynid_does_not_read_it_is_named_with_who_reads_it(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
/**:
  ros__parameters:
    current_polynomial: [0.0, 0.4, 0.0, 0.0]
/**/recorder:
  ros__parameters:
    drive_chain: {drive_gains: [0.4]}
    tolerance_s: 0.01
/**/estimator:
  ros__parameters:
    parameters_file: estimate.yaml
other_package_node:
  ros__parameters:
    tolerance_s: 3.0
""",
    )

    warnings = unread_keys(path, verb="identify")

    assert warnings == [
        f"current_polynomial in block '/**' of {path} has no effect on dynid identify: it is read by the recorder"
        " node only",
        f"drive_chain.drive_gains in block '/**/recorder' of {path} has no effect on dynid identify, which reads it"
        " from the '/**' and estimator blocks only (unset there: its default)",
    ]
    # dynid payload converts currents with the recorder's current_polynomial
    assert unread_keys(path, verb="payload") == [line.replace("identify", "payload") for line in warnings[1:]]


def test_a_recording_setting_the_estimator_and_recorder_blocks_disagree_on_is_named(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "/**/estimator:\n  ros__parameters:\n    topics: {motor_currents: currents}\n"
        "/**/recorder:\n  ros__parameters:\n    topics: {motor_currents: joint_states}\n",
    )
    assert load_config(path).currents_topic == "/joint_states"
    assert unread_keys(path, verb="stream") == [
        f"topics.motor_currents is 'currents' in block '/**/estimator' of {path} and 'joint_states' in block"
        " '/**/recorder': dynid stream reads the recorder's, the one the recorder records with"
    ]


@pytest.mark.parametrize("name", ["dynid_arm6.yaml", "five_bar.yaml"])
def test_the_shipped_configurations_set_nothing_dynid_ignores(name: str) -> None:
    """Run as documented (``--urdf urdf/<robot>.urdf``): the five-bar's ``/**`` ``urdf`` names that very file."""
    root = Path(__file__).resolve().parents[2]
    path, urdf = root / "config" / name, root / "urdf" / name.replace(".yaml", ".urdf")
    assert unread_keys(path, verb="identify", urdf=urdf) == unread_keys(path, verb="excite", urdf=urdf) == []


def test_a_urdf_for_the_nodes_is_said_like_any_key_dynid_does_not_read(tmp_path: Path) -> None:
    """``urdf`` in ``/**`` is the nodes' robot; ``dynid`` takes its URDF from ``--urdf`` (or the parameter file), so
    one naming another file has no effect on it, as ``current_polynomial`` there has none on ``dynid identify``."""
    root = Path(__file__).resolve().parents[2]
    path = _write(
        tmp_path,
        "/**:\n  ros__parameters:\n    urdf: package://dynamic_identification/urdf/five_bar.urdf\n"
        "    current_polynomial: [0.0, 0.4, 0.0, 0.0]\n",
    )
    arm = root / "urdf" / "dynid_arm6.urdf"
    readers = "the estimator, excitation, feedforward and sim_robot nodes"
    assert unread_keys(path, verb="identify", urdf=arm) == [
        f"urdf in block '/**' of {path} has no effect on dynid identify: it is read by {readers} only (dynid identify"
        f" uses {arm})",
        f"current_polynomial in block '/**' of {path} has no effect on dynid identify: it is read by the recorder"
        " node only",
    ]
    assert unread_keys(path, verb="predict")[0].endswith("(dynid predict uses the URDF its parameter file names)")
    assert unread_keys(path, verb="identify", urdf=root / "urdf" / "five_bar.urdf")[0].startswith("current_")
