"""Recordings from rosbag2 bags: real sqlite3 and MCAP bags written with ``rosbags``' Writer.

The bags hold a simulated run of the shipped 6-axis arm (``urdf/dynid_arm6.urdf``, drive
chain and true drive parameters from ``config/dynid_arm6.yaml``): 10 s of a random Fourier
excitation at 500 Hz with jittered stamps, quantised encoders and noisy motor currents
([Gautier2013] eq. (7)), published as the simulated robot does — joint states and motor currents
on two ``sensor_msgs/msg/JointState`` topics with their own stamps and receive times, joints
in a different order in every message, plus a gripper joint nobody identifies.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from numpy.testing import assert_allclose, assert_array_equal
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from dynamic_identification import cli
from dynamic_identification.core.errors import DataError
from dynamic_identification.core.excitation import random_fourier_trajectory
from dynamic_identification.core.mechanism.robot import load_robot
from dynamic_identification.core.simulation import synthesize_measurements
from dynamic_identification.io.config import load_config, simulated_robot
from dynamic_identification.io.parameters import load_parameters
from dynamic_identification.io.recording import Recording, recording_from_arrays, write_recording_csv
from dynamic_identification.io.rosbag import read_bag
from repo_paths import ARM6_CONFIG, ARM6_URDF

RATE_HZ = 500.0
SECONDS = 10.0
SEED = 5
START_NS = 100 * 10**9
"""Simulation time of the first sample (a Gazebo clock, not zero and not the epoch)."""
JITTER_NS = 200_000
"""Stamps are ``START_NS + k / RATE_HZ`` plus uniform jitter in ``±JITTER_NS`` ns."""
JOINT_STATES = "/arm/joint_states"
CURRENTS = "/arm/motor_currents"
EXTRA_JOINT = "gripper_joint"
STORAGES = (StoragePlugin.SQLITE3, StoragePlugin.MCAP)

TYPESTORE = get_typestore(Stores.ROS2_HUMBLE)
JointState = TYPESTORE.types["sensor_msgs/msg/JointState"]
Header = TYPESTORE.types["std_msgs/msg/Header"]
Time = TYPESTORE.types["builtin_interfaces/msg/Time"]
String = TYPESTORE.types["std_msgs/msg/String"]


def read_recording_bag(path: Path, **options: Any) -> Recording:
    """The recording :func:`read_bag` reads, without what aligning it dropped."""
    return read_bag(path, **options).recording


@dataclass(frozen=True)
class Run:
    """A simulated run: stamps in ns and the arrays in model joint order."""

    joints: tuple[str, ...]
    stamps_ns: np.ndarray
    position: np.ndarray
    velocity: np.ndarray
    current: np.ndarray
    torque: np.ndarray

    @property
    def time(self) -> np.ndarray:
        return np.array([int(stamp) / 1e9 for stamp in self.stamps_ns])


def simulate(
    *,
    seed: int = SEED,
    current_noise: bool = True,
    stamps_ns: np.ndarray | None = None,
    velocity_fraction: float = 0.5,
) -> Run:
    """The arm's measurements along one random excitation (the same motion for every seed-equal call) of
    ``velocity_fraction`` of the velocity limits."""
    robot = load_robot(ARM6_URDF)
    simulated = simulated_robot(ARM6_CONFIG, robot.n_joints)
    drive = simulated.drive
    sensor = simulated.sensor if current_noise else replace(simulated.sensor, current_noise_std_a=0.0)
    chain = load_config(str(ARM6_CONFIG)).drive_chain(robot.n_joints)
    if stamps_ns is None:
        rng = np.random.default_rng(seed)
        samples = int(round(SECONDS * RATE_HZ))
        grid = START_NS + np.arange(samples) * round(1e9 / RATE_HZ)
        stamps_ns = grid + rng.integers(-JITTER_NS, JITTER_NS, samples)
    time = (stamps_ns - START_NS) / 1e9
    trajectory = random_fourier_trajectory(robot, margin=0.2, velocity_fraction=velocity_fraction, seed=seed)
    q, dq, ddq = trajectory.evaluate(time)
    q_measured, currents = synthesize_measurements(robot, chain, drive, time, q, dq, ddq, sensor, seed=seed)
    return Run(robot.joint_names, stamps_ns, q_measured, dq, currents, chain.joint_torques(currents))


def joint_state(stamp_ns: int, names: Sequence[str], **fields: np.ndarray) -> bytes:
    """A serialised ``sensor_msgs/msg/JointState``; absent fields are empty."""
    empty = np.zeros(0)
    message = JointState(
        header=Header(stamp=Time(sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9), frame_id=""),
        name=list(names),
        position=np.ascontiguousarray(fields.get("position", empty)),
        velocity=np.ascontiguousarray(fields.get("velocity", empty)),
        effort=np.ascontiguousarray(fields.get("effort", empty)),
    )
    return TYPESTORE.serialize_cdr(message, JointState.__msgtype__)


def shuffled(run: Run, k: int, rng: np.random.Generator, values: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Row ``k`` of ``values`` with the names in a random order and an extra joint."""
    names = [*run.joints, EXTRA_JOINT]
    row = np.append(values[k], rng.uniform(-1.0, 1.0))
    order = rng.permutation(len(names))
    return [names[i] for i in order], row[order]


def write_bag(
    path: Path,
    run: Run,
    *,
    storage: StoragePlugin = StoragePlugin.MCAP,
    currents: Run | None = None,
    effort_is_torque: bool = False,
    currents_in_effort: bool = False,
    zero_stamps: bool = False,
    seed: int = SEED,
) -> Path:
    """A bag of ``run``'s joint states and (unless ``effort_is_torque``) the motor currents of ``currents``.

    ``currents`` defaults to ``run`` itself: the same stamps, as the simulated robot publishes.
    Receive times lag the stamps by 0.1 to 1 ms; with ``zero_stamps`` the joint states' header
    stamps are zero (a driver that does not stamp) and received exactly at the sample time. With
    ``currents_in_effort`` the joint states' effort holds the motor currents (A), as several robot
    drivers publish them, and there is no currents topic.
    """
    rng = np.random.default_rng(seed)
    source = run if currents is None else currents
    records: list[tuple[int, str, bytes]] = []
    for k, stamp in enumerate(run.stamps_ns.tolist()):
        names, position = shuffled(run, k, np.random.default_rng([seed, k]), run.position)
        index = [names.index(name) for name in run.joints]
        velocity = np.zeros(len(names))
        velocity[index] = run.velocity[k]
        fields = {"position": position, "velocity": velocity}
        if effort_is_torque or currents_in_effort:
            effort = np.zeros(len(names))
            effort[index] = run.torque[k] if effort_is_torque else run.current[k]
            fields["effort"] = effort
        received = stamp if zero_stamps else stamp + int(rng.integers(100_000, 1_000_000))
        records.append((received, JOINT_STATES, joint_state(0 if zero_stamps else stamp, names, **fields)))
    if not (effort_is_torque or currents_in_effort):
        for k, stamp in enumerate(source.stamps_ns.tolist()):
            names, effort = shuffled(source, k, np.random.default_rng([seed, k, 1]), source.current)
            received = stamp + int(rng.integers(100_000, 1_000_000))
            records.append((received, CURRENTS, joint_state(stamp, names, effort=effort)))
    with Writer(path, version=9, storage_plugin=storage) as writer:
        connections = {
            topic: writer.add_connection(topic, JointState.__msgtype__, typestore=TYPESTORE)
            for topic in sorted({topic for _, topic, _ in records})
        }
        for received, topic, data in sorted(records, key=lambda record: record[0]):
            writer.write(connections[topic], received, data)
    return path


def write_config(
    path: Path,
    run: Run,
    *,
    effort_is_torque: bool = False,
    currents: str = CURRENTS,
    window: dict[str, object] | None = None,
    recorder: dict[str, object] | None = None,
) -> Path:
    """A configuration naming the joints, the drive chain of the arm and the bag's topics (and ``window.*``, and
    a recorder block)."""
    shipped = load_config(str(ARM6_CONFIG))
    document: dict[str, object] = {
        "/**": {
            "ros__parameters": {
                "joints": list(run.joints),
                "drive_chain": {"gear_ratios": list(shipped.gear_ratios), "drive_gains": list(shipped.drive_gains)},
                "topics": {
                    "joint_states": JOINT_STATES,
                    "motor_currents": currents,
                    "effort_is_torque": effort_is_torque,
                },
                **({"window": window} if window else {}),
            }
        }
    }
    if recorder:
        document["/**/recorder"] = {"ros__parameters": recorder}
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def read(path: Path, run: Run, **settings: object) -> Recording:
    return read_recording_bag(
        path, joint_states_topic=JOINT_STATES, currents_topic=CURRENTS, joint_names=run.joints, **settings
    )


def dynid(*argv: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(arg) for arg in argv])
    return code, out.getvalue(), err.getvalue()


def assert_same_parameters(actual: Path, expected: Path) -> None:
    got, want = load_parameters(actual).values(), load_parameters(expected).values()
    assert list(got) == list(want)
    assert_allclose(list(got.values()), list(want.values()), rtol=1e-12, atol=0.0)


def link_values(path: Path) -> np.ndarray:
    """Every link's mass, first moment and inertia of a parameter file's ``standard_parameters``."""
    links = yaml.safe_load(path.read_text(encoding="utf-8"))["standard_parameters"]["links"]
    return np.array([[link["m_kg"], *link["mc_kg_m"], *link["inertia_kg_m2"].values()] for link in links])


@pytest.fixture(scope="module")
def run() -> Run:
    return simulate()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rosbag")


@pytest.fixture(scope="module")
def bags(run: Run, folder: Path) -> dict[StoragePlugin, Path]:
    return {storage: write_bag(folder / f"run_{storage.name.lower()}", run, storage=storage) for storage in STORAGES}


@pytest.mark.parametrize("storage", STORAGES, ids=lambda storage: storage.name.lower())
def test_bag_reads_back_as_the_recorded_arrays(
    run: Run, bags: dict[StoragePlugin, Path], storage: StoragePlugin
) -> None:
    metadata = yaml.safe_load((bags[storage] / "metadata.yaml").read_text(encoding="utf-8"))
    assert metadata["rosbag2_bagfile_information"]["storage_identifier"] == storage.name.lower()

    recording = read(bags[storage], run)

    assert recording.joint_names == run.joints
    assert_array_equal(recording.time, run.time)
    assert_array_equal(recording.position, run.position)
    assert_array_equal(recording.velocity, run.velocity)
    assert_array_equal(recording.current, run.current)
    assert recording.effort is None


def test_joints_default_to_the_first_message_and_extra_joints_can_be_read(
    run: Run, bags: dict[StoragePlugin, Path]
) -> None:
    everything = read_recording_bag(bags[StoragePlugin.MCAP], joint_states_topic=JOINT_STATES, currents_topic=CURRENTS)

    assert sorted(everything.joint_names) == sorted([*run.joints, EXTRA_JOINT])
    # As in the recorder, currents received before the first joint state (which names the joints)
    # are ignored, so the first joint state may lack its current; every later one has it.
    kept = everything.n_samples
    assert kept >= run.time.size - 1
    assert_array_equal(everything.time, run.time[-kept:])
    assert_array_equal(everything.select(run.joints).position, run.position[-kept:])
    assert_array_equal(everything.select(run.joints).current, run.current[-kept:])


def test_currents_on_their_own_stamps_are_interpolated_at_the_joint_state_stamps(run: Run, folder: Path) -> None:
    # Noise-free currents, so the only error left is that of interpolating over 2 ms.
    smooth = simulate(current_noise=False)
    offset = simulate(current_noise=False, stamps_ns=smooth.stamps_ns + 700_000)
    bag = write_bag(folder / "offset_currents", smooth, currents=offset)

    recording = read(bag, smooth)

    # The first joint state precedes every current sample: it is the only one dropped.
    assert_array_equal(recording.time, smooth.time[1:])
    assert_array_equal(recording.position, smooth.position[1:])
    # Joint state k lies between current samples k - 1 and k; where a joint's velocity changes sign
    # between them, its Coulomb friction Fc sign(q̇) jumps and no interpolation can follow.
    smooth_between = np.sign(offset.velocity[:-1]) == np.sign(offset.velocity[1:])
    error = np.abs(recording.current - smooth.current[1:])
    scale = np.max(np.abs(smooth.current), axis=0)
    for j in range(len(smooth.joints)):
        assert np.max(error[smooth_between[:, j], j]) < 1e-5 * scale[j]


def test_joint_states_in_a_gap_of_the_currents_are_dropped(run: Run, folder: Path) -> None:
    gap = (run.time > 104.0) & (run.time < 104.2)
    thinned = replace(run, stamps_ns=run.stamps_ns[~gap], current=run.current[~gap])
    bag = write_bag(folder / "current_gap", run, currents=thinned)

    recording = read(bag, run)

    # Inside the gap the currents around a joint state are 0.2 s apart, far beyond tolerance_s.
    assert_array_equal(recording.time, run.time[~gap])
    assert_array_equal(recording.position, run.position[~gap])
    assert_array_equal(recording.current, run.current[~gap])


def test_too_many_joint_states_without_currents_is_an_error_with_the_count(run: Run, folder: Path) -> None:
    gap = (run.time > 104.0) & (run.time < 105.0)
    thinned = replace(run, stamps_ns=run.stamps_ns[~gap], current=run.current[~gap])
    bag = write_bag(folder / "long_current_gap", run, currents=thinned)

    with pytest.raises(
        DataError, match=rf"{np.count_nonzero(gap)} of {run.time.size} joint states on {JOINT_STATES} .* were dropped"
    ):
        read(bag, run)


def test_identify_and_stream_name_every_joint_state_the_bag_s_alignment_dropped(
    run: Run, folder: Path, currents_config: Path
) -> None:
    """Below the 5 % refusal the drops went unsaid: 89 of 97077 joint states (55 repeated stamps, 34 without a
    current within tolerance_s) and the output said "samples 96988 (duplicates dropped 0, …)"; then the parameter
    files did not keep what the output said."""
    gap = (run.time > 104.0) & (run.time < 104.2)
    thinned = replace(run, stamps_ns=run.stamps_ns[~gap], current=run.current[~gap])
    repeated = np.arange(500, 1000, 100)  # these joint states are published twice, with the same stamp
    rows = np.sort(np.concatenate([np.arange(run.time.size), repeated]))
    states = replace(
        run,
        stamps_ns=run.stamps_ns[rows],
        position=run.position[rows],
        velocity=run.velocity[rows],
        current=run.current[rows],
        torque=run.torque[rows],
    )
    bag = write_bag(folder / "few_drops", states, currents=thinned)

    code, out, err = dynid("identify", "--urdf", ARM6_URDF, "--bag", bag, "--config", currents_config, "--out",
                           folder / "few_drops.yaml")  # fmt: skip

    assert code == 0, err
    gapped, offered = int(np.count_nonzero(gap)), rows.size
    line = next(line for line in out.splitlines() if line.startswith("samples "))
    assert line.startswith(
        f"samples {run.time.size - gapped} (read: {gapped + repeated.size} of {offered} joint states on"
        f" {JOINT_STATES} in {bag} were dropped: {gapped} without motor currents within tolerance_s=0.005 s on"
        f" either side, {repeated.size} with a repeated stamp; duplicates dropped 0,"
    ), line
    # The parameter file keeps saying it once the output is gone.
    sentence = f"{gapped + repeated.size} of {offered} joint states on {JOINT_STATES} in {bag} were dropped"
    assert load_parameters(folder / "few_drops.yaml").quality["dropped_joint_states"].startswith(sentence)
    # dynid stream reads the bag alike and says the same, on its output and in its parameter file.
    code, out, err = dynid("stream", "--urdf", ARM6_URDF, "--bag", bag, "--config", currents_config, "--out",
                           folder / "few_drops.jsonl", "--params-out", folder / "few_drops_window.yaml")  # fmt: skip
    assert code == 0, err
    assert f"read: {sentence}" in out
    assert load_parameters(folder / "few_drops_window.yaml").quality["dropped_joint_states"].startswith(sentence)


def test_zero_header_stamps_fall_back_to_the_receive_time(run: Run, folder: Path) -> None:
    bag = write_bag(folder / "unstamped", run, effort_is_torque=True, zero_stamps=True)

    recording = read(bag, run, effort_is_torque=True)

    assert_array_equal(recording.time, run.time)


@pytest.fixture(scope="module")
def currents_config(run: Run, folder: Path) -> Path:
    return write_config(folder / "bag_config.yaml", run)


@pytest.fixture(scope="module")
def from_csv(run: Run, folder: Path, currents_config: Path) -> Path:
    """Parameters identified by ``dynid identify --data`` from the run's arrays written as CSV."""
    csv = folder / "run.csv"
    write_recording_csv(
        csv,
        recording_from_arrays(run.time, run.joints, run.position, velocity=run.velocity, current=run.current),
    )
    out = folder / "from_csv.yaml"
    code, _, err = dynid("identify", "--urdf", ARM6_URDF, "--data", csv, "--config", currents_config, "--out", out)
    assert code == 0, err
    return out


@pytest.mark.parametrize("storage", STORAGES, ids=lambda storage: storage.name.lower())
def test_identify_from_a_bag_equals_identify_from_the_same_data_as_csv(
    bags: dict[StoragePlugin, Path], folder: Path, currents_config: Path, from_csv: Path, storage: StoragePlugin
) -> None:
    from_bag = folder / f"from_{storage.name.lower()}.yaml"

    code, _, err = dynid(
        "identify", "--urdf", ARM6_URDF, "--bag", bags[storage], "--config", currents_config, "--out", from_bag
    )

    assert code == 0, err
    assert_same_parameters(from_bag, from_csv)
    # Issue 25: the links too. Without the URDF prior the directions the data leave open were any point the
    # solver stopped at, and a UR10's upper arm came out 0.206 kg from a CSV and 0.086 kg from the same data as a bag
    # (this arm's recordings gave the same links either way: a guard, not a reproduction).
    assert_allclose(link_values(from_bag), link_values(from_csv), rtol=1e-6, atol=1e-9)


def test_identify_from_joint_torques_in_the_joint_states(run: Run, folder: Path) -> None:
    bag = write_bag(folder / "torques", run, storage=StoragePlugin.SQLITE3, effort_is_torque=True)
    config = write_config(folder / "torque_config.yaml", run, effort_is_torque=True)
    csv = folder / "torques.csv"
    write_recording_csv(
        csv, recording_from_arrays(run.time, run.joints, run.position, velocity=run.velocity, effort=run.torque)
    )

    recording = read(bag, run, effort_is_torque=True)
    csv_run = dynid("identify", "--urdf", ARM6_URDF, "--data", csv, "--config", config, "--out", folder / "t_csv.yaml")
    bag_run = dynid("identify", "--urdf", ARM6_URDF, "--bag", bag, "--config", config, "--out", folder / "t_bag.yaml")

    assert_array_equal(recording.effort, run.torque)
    assert recording.current is None
    assert csv_run[0] == 0 and bag_run[0] == 0, csv_run[2] + bag_run[2]
    assert_same_parameters(folder / "t_bag.yaml", folder / "t_csv.yaml")


def test_a_slow_recording_gives_the_same_links_from_a_bag_and_from_a_csv(folder: Path) -> None:
    """Issue 25: at a tenth of the speed limits the unconstrained estimate is not consistent, and the consistent
    links the data leave open come from the URDF prior, the same from the bag and from its CSV (a guard: without the
    prior this recording gave the same links too)."""
    slow = simulate(velocity_fraction=0.1)
    bag = write_bag(folder / "slow", slow, storage=StoragePlugin.SQLITE3, effort_is_torque=True)
    config = write_config(folder / "slow_config.yaml", slow, effort_is_torque=True)
    csv = folder / "slow.csv"
    write_recording_csv(
        csv, recording_from_arrays(slow.time, slow.joints, slow.position, velocity=slow.velocity, effort=slow.torque)
    )

    csv_run = dynid("identify", "--urdf", ARM6_URDF, "--data", csv, "--config", config, "--out", folder / "s_csv.yaml")
    bag_run = dynid("identify", "--urdf", ARM6_URDF, "--bag", bag, "--config", config, "--out", folder / "s_bag.yaml")

    assert csv_run[0] == 0 and bag_run[0] == 0, csv_run[2] + bag_run[2]
    consistency = yaml.safe_load((folder / "s_csv.yaml").read_text(encoding="utf-8"))["quality"]
    assert consistency["physical_consistency"]["enforced"]
    assert_allclose(link_values(folder / "s_bag.yaml"), link_values(folder / "s_csv.yaml"), rtol=1e-6, atol=1e-9)


def test_currents_in_the_joint_states_effort_are_read_from_one_topic(run: Run, folder: Path) -> None:
    bag = write_bag(folder / "currents_in_effort", run, storage=StoragePlugin.SQLITE3, currents_in_effort=True)

    recording = read_recording_bag(
        bag, joint_states_topic=JOINT_STATES, currents_topic=JOINT_STATES, joint_names=run.joints
    )

    assert_array_equal(recording.time, run.time)
    assert_array_equal(recording.position, run.position)
    assert_array_equal(recording.current, run.current)
    assert recording.effort is None


@pytest.mark.parametrize("verb", ["identify", "stream"])
def test_a_bag_with_currents_in_the_joint_states_effort_identifies_like_its_csv(
    run: Run, folder: Path, from_csv: Path, verb: str
) -> None:
    # topics.motor_currents names the joint-states topic: its effort holds the currents (issue 21, finding 4).
    bag = write_bag(folder / f"currents_in_effort_{verb}", run, currents_in_effort=True)
    window = {"update_period_s": 2.5, "reduction": "none"}  # stream: few updates, as the test below
    config = write_config(folder / f"one_topic_config_{verb}.yaml", run, currents=JOINT_STATES, window=window)
    suffix = "yaml" if verb == "identify" else "jsonl"
    outputs = {"bag": folder / f"one_topic_{verb}.{suffix}", "data": folder / f"one_topic_{verb}_csv.{suffix}"}
    sources = {"bag": bag, "data": folder / "run.csv"}  # the CSV of the same arrays (from_csv)

    for option in ("bag",) if verb == "identify" else ("bag", "data"):
        code, _, err = dynid(
            verb, "--urdf", ARM6_URDF, f"--{option}", sources[option], "--config", config, "--out", outputs[option]
        )
        assert code == 0, err

    if verb == "identify":
        assert_same_parameters(outputs["bag"], from_csv)
    else:
        bag_lines, csv_lines = (outputs[option].read_text(encoding="utf-8").splitlines() for option in ("bag", "data"))
        assert [json.loads(line)["parameters"] for line in bag_lines] == [
            json.loads(line)["parameters"] for line in csv_lines
        ]
        assert any(json.loads(line)["publishable"] for line in bag_lines)


@pytest.fixture(scope="module")
def slow_currents(run: Run, folder: Path) -> Path:
    """Motor currents at 100 Hz, joint states at 500 Hz: 10 ms between current samples, beyond the default
    tolerance_s of 5 ms on one side of most joint states."""
    every_fifth = replace(run, stamps_ns=run.stamps_ns[::5], current=run.current[::5])
    return write_bag(folder / "slow_currents", run, currents=every_fifth)


def test_tolerance_s_of_the_recorder_block_is_what_dynid_aligns_a_bag_with(
    run: Run, folder: Path, slow_currents: Path
) -> None:
    default = write_config(folder / "default_tolerance.yaml", run)
    wider = write_config(folder / "wider_tolerance.yaml", run, recorder={"tolerance_s": 0.011})
    argv = ["identify", "--urdf", ARM6_URDF, "--bag", slow_currents, "--config"]

    refused = dynid(*argv, default, "--out", folder / "refused.yaml")
    accepted = dynid(*argv, wider, "--out", folder / "slow_currents.yaml")

    assert refused[0] == 2 and "without motor currents within tolerance_s=0.005 s" in refused[2]
    assert accepted[0] == 0, accepted[2]
    last_current = run.stamps_ns[::5][-1]  # the joint states after it have no current to interpolate with
    samples = load_parameters(folder / "slow_currents.yaml").quality["samples"]
    assert samples == np.count_nonzero(run.stamps_ns <= last_current) == run.time.size - 4


def test_missing_topic_is_a_one_line_error_listing_the_topics(run: Run, folder: Path) -> None:
    bag = write_bag(folder / "torques_only", run, effort_is_torque=True)
    config = write_config(folder / "currents_config.yaml", run)

    code, out, err = dynid(
        "identify", "--urdf", ARM6_URDF, "--bag", bag, "--config", config, "--out", folder / "x.yaml", "--quiet"
    )

    assert code != 0 and out == ""
    assert len(err.splitlines()) == 1
    assert f"topic {CURRENTS} is not in" in err
    assert f"{JOINT_STATES} (sensor_msgs/msg/JointState)" in err


def test_a_joint_missing_from_a_message_is_named_with_the_message(run: Run, folder: Path) -> None:
    bag = write_bag(folder / "named", run, storage=StoragePlugin.SQLITE3)

    with pytest.raises(
        DataError, match=r"joint 'wrist_9' is missing from message 0 on /arm/\w+ \(stamp 100\.\d{9} s\)"
    ):
        read_recording_bag(
            bag, joint_states_topic=JOINT_STATES, currents_topic=CURRENTS, joint_names=[*run.joints, "wrist_9"]
        )


def test_a_topic_of_another_type_is_refused(run: Run, folder: Path) -> None:
    bag = folder / "strings"
    with Writer(bag, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        states = writer.add_connection(JOINT_STATES, JointState.__msgtype__, typestore=TYPESTORE)
        text = writer.add_connection(CURRENTS, String.__msgtype__, typestore=TYPESTORE)
        writer.write(states, START_NS, joint_state(START_NS, run.joints, position=run.position[0]))
        writer.write(text, START_NS, TYPESTORE.serialize_cdr(String(data="1.0"), String.__msgtype__))

    with pytest.raises(
        DataError, match=rf"{CURRENTS} .* has type std_msgs/msg/String, expected sensor_msgs/msg/JointState"
    ):
        read(bag, run)


def test_a_topic_without_messages_is_refused(run: Run, folder: Path) -> None:
    bag = folder / "silent"
    with Writer(bag, version=9, storage_plugin=StoragePlugin.SQLITE3) as writer:
        states = writer.add_connection(JOINT_STATES, JointState.__msgtype__, typestore=TYPESTORE)
        writer.add_connection(CURRENTS, JointState.__msgtype__, typestore=TYPESTORE)
        writer.write(states, START_NS, joint_state(START_NS, run.joints, position=run.position[0]))

    with pytest.raises(DataError, match=rf"topic {CURRENTS} in .* has no messages"):
        read(bag, run)


def test_missing_bag_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="rosbag2 directory not found"):
        read_recording_bag(tmp_path / "nowhere")
    with pytest.raises(DataError, match="cannot read rosbag2"):
        read_recording_bag(tmp_path)


def test_stream_from_a_bag_equals_stream_from_the_same_data_as_csv(
    run: Run, bags: dict[StoragePlugin, Path], folder: Path, from_csv: Path
) -> None:
    csv = folder / "run.csv"  # written by the from_csv fixture
    # Few updates without reduction: the comparison is about the data, not the window's algorithm.
    config = write_config(folder / "stream_config.yaml", run, window={"update_period_s": 2.5, "reduction": "none"})
    outputs = {"data": folder / "stream_csv.jsonl", "bag": folder / "stream_bag.jsonl"}
    sources = {"data": csv, "bag": bags[StoragePlugin.MCAP]}

    for option, out in outputs.items():
        code, _, err = dynid(
            "stream", "--urdf", ARM6_URDF, f"--{option}", sources[option], "--config", config, "--out", out
        )
        assert code == 0, err

    csv_lines, bag_lines = (
        [json.loads(line) for line in outputs[option].read_text(encoding="utf-8").splitlines()]
        for option in ("data", "bag")
    )
    assert len(bag_lines) == len(csv_lines) > 0
    for got, want in zip(bag_lines, csv_lines, strict=True):
        assert got["time"] == want["time"] and got["reason"] == want["reason"]
        assert list(got["parameters"]) == list(want["parameters"])
        assert_allclose(list(got["parameters"].values()), list(want["parameters"].values()), rtol=1e-12, atol=0.0)


def test_a_bag_of_messages_serialized_by_rclpy_is_read(tmp_path: Path) -> None:
    """rosbag2_py's tutorial writes ``rclpy.serialization.serialize_message`` bytes, a few bytes longer than the CDR."""
    from rclpy.serialization import serialize_message

    from dynamic_identification.nodes.conversions import joint_state_message

    names = ["abc", "de", "f"]
    with Writer(tmp_path / "bag", version=9, storage_plugin=StoragePlugin.SQLITE3) as writer:
        states = writer.add_connection("/joint_states", JointState.__msgtype__, typestore=TYPESTORE)
        currents = writer.add_connection("/motor_currents", JointState.__msgtype__, typestore=TYPESTORE)
        for k in range(300):
            stamp = 10**9 + k * 2_000_000
            current = joint_state_message(names, stamp - 100_000, None, None, [0.1 * k, 0.2, -0.3])
            state = joint_state_message(names, stamp, [0.01 * k, 0.5, -0.5], None, None)
            writer.write(currents, stamp, serialize_message(current))
            writer.write(states, stamp + 1, serialize_message(state))
    recording = read_recording_bag(tmp_path / "bag")
    # The first joint state has no current before it (the reader starts with it), the last none after it.
    assert recording.joint_names == tuple(names) and recording.n_samples == 298
    assert_allclose(recording.position[:, 0], 0.01 * np.arange(1, 299), rtol=0.0, atol=1e-12)
