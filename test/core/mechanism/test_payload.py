"""The payload model: inertial parameters, validation, and its joint torques against Pinocchio's RNEA."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.spatial.transform import Rotation

from dynamic_identification.core.errors import IdentificationError, ModelError
from dynamic_identification.core.mechanism.payload import (
    Payload,
    PayloadDynamics,
    PayloadError,
    attach_payload,
    log_cholesky_from_parameters,
    parameters_from_log_cholesky,
    payload_regressor,
    payload_torques,
)
from dynamic_identification.core.mechanism.robot import RobotModel, load_robot
from dynamic_identification.core.regressors.idim import random_motion

PANDA_ARM = tuple(f"panda_joint{i}" for i in range(1, 8))


def _payload(frame: str) -> Payload:
    """3.2 kg off-centre box turned in the frame: products of inertia are non-zero."""
    rotation = Rotation.from_euler("xyz", [0.4, -0.3, 0.7]).as_matrix()
    return Payload.create(
        frame,
        mass_kg=3.2,
        com_m=[0.03, -0.05, 0.11],
        inertia_kg_m2=rotation @ np.diag([0.011, 0.018, 0.024]) @ rotation.T,
    )


@pytest.fixture(
    params=[("arm6", "tool0"), ("ur5", "tool0"), ("panda", "panda_hand_tcp"), ("continuous_pendulum", "link2")]
)
def robot_and_frame(request: pytest.FixtureRequest, example_urdf, arm6_urdf: Path) -> tuple[RobotModel, str]:
    name, frame = request.param
    if name == "ur5":
        return load_robot(example_urdf("ur5_robot.urdf")), frame
    if name == "panda":
        return load_robot(example_urdf("panda.urdf"), PANDA_ARM), frame
    if name == "continuous_pendulum":
        return load_robot(example_urdf("double_pendulum_continuous.urdf")), frame
    return load_robot(arm6_urdf), frame


def test_payload_torques_equal_rnea_of_the_model_with_the_load_on_the_frame_parent(robot_and_frame) -> None:
    robot, frame = robot_and_frame
    payload = _payload(frame)
    q, dq, ddq = random_motion(robot, 50, np.random.default_rng(7))
    loaded = attach_payload(robot, payload)
    configurations = robot.configurations(q)
    bare_data, loaded_data = robot.model.createData(), loaded.model.createData()
    expected = np.array(
        [
            pin.rnea(loaded.model, loaded_data, configurations[k], dq[k], ddq[k])
            - pin.rnea(robot.model, bare_data, configurations[k], dq[k], ddq[k])
            for k in range(q.shape[0])
        ]
    )
    assert_allclose(
        payload_regressor(robot, frame, q, dq, ddq) @ payload.dynamic_parameters(), expected, atol=1e-9, rtol=0
    )


def test_one_sample_dynamics_reusing_its_data_match_the_batch_regressor(arm6_urdf: Path) -> None:
    robot = load_robot(arm6_urdf)
    payload = _payload("tool0")
    q, dq, ddq = random_motion(robot, 5, np.random.default_rng(1))
    dynamics = PayloadDynamics(robot, "tool0")
    one_by_one = np.array([dynamics.torques(q[k], dq[k], ddq[k], payload.dynamic_parameters()) for k in range(5)])
    assert_allclose(one_by_one, payload_torques(robot, payload, q, dq, ddq), atol=1e-12, rtol=0)


def test_dynamic_parameters_round_trip_to_mass_com_and_inertia_about_the_com() -> None:
    payload = _payload("tool0")
    again = Payload.from_dynamic_parameters("tool0", payload.dynamic_parameters())
    assert_allclose(
        [again.mass_kg, *again.com_m, *again.inertia_kg_m2.ravel()],
        [payload.mass_kg, *payload.com_m, *payload.inertia_kg_m2.ravel()],
        rtol=1e-12,
        atol=1e-15,
    )


def test_dynamic_parameters_are_pinocchios_about_the_frame_origin() -> None:
    # Point mass of 2 kg at (0.1, 0, 0) with a small sphere's inertia: I_yy about the origin gains m x².
    payload = Payload.create("tool0", mass_kg=2.0, com_m=[0.1, 0.0, 0.0], inertia_kg_m2=np.eye(3) * 1e-3)
    assert_allclose(payload.dynamic_parameters(), [2.0, 0.2, 0, 0, 1e-3, 0, 1e-3 + 0.02, 0, 0, 1e-3 + 0.02], atol=1e-15)


def test_inertia_given_as_six_urdf_entries_equals_the_matrix() -> None:
    entries = {"ixx": 0.02, "ixy": -0.001, "ixz": 0.002, "iyy": 0.03, "iyz": 0.0005, "izz": 0.025}
    payload = Payload.create("tool0", mass_kg=1.0, com_m=[0.0, 0.0, 0.05], inertia_kg_m2=entries)
    assert payload.inertia_entries() == pytest.approx(entries, abs=1e-15)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"inertia_kg_m2": np.diag([0.02, 0.01, -0.001])}, "not positive definite"),
        ({"inertia_kg_m2": np.diag([0.01, 0.01, 0.03])}, "triangle inequality"),
        ({"inertia_kg_m2": [[0.02, 0.001, 0.0], [0.0, 0.02, 0.0], [0.0, 0.0, 0.02]]}, "symmetric"),
        ({"mass_kg": 0.0}, "mass_kg must be finite and > 0"),
        ({"com_m": [0.0, np.nan, 0.0]}, "com_m"),
    ],
)
def test_a_non_physical_payload_is_a_one_line_error(change: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {"mass_kg": 2.0, "com_m": [0.0, 0.0, 0.1], "inertia_kg_m2": np.eye(3) * 0.01}
    arguments.update(change)
    with pytest.raises(PayloadError, match=message) as error:
        Payload.create("tool0", **arguments)
    assert isinstance(error.value, IdentificationError)
    assert "\n" not in str(error.value)


def test_an_unknown_frame_is_a_one_line_error_listing_valid_frames(arm6_urdf: Path) -> None:
    robot = load_robot(arm6_urdf)
    with pytest.raises(ModelError, match=r"unknown frame 'gripper'.*tool0") as error:
        PayloadDynamics(robot, "gripper")
    assert "\n" not in str(error.value)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=-6.0, max_value=6.0), min_size=10, max_size=10))
def test_every_log_cholesky_vector_is_a_physical_body_and_round_trips(values: list[float]) -> None:
    # The maximum-likelihood search moves freely in θ: each iterate must be a valid Payload.
    theta = np.array(values)
    theta[1:4] *= 0.1  # centre of mass within ±0.6 m
    parameters = parameters_from_log_cholesky(theta)
    Payload.from_dynamic_parameters("tool0", parameters)
    lower = np.array(
        [[np.exp(theta[4]), 0, 0], [theta[5], np.exp(theta[6]), 0], [theta[7], theta[8], np.exp(theta[9])]]
    )
    # Nearly flat bodies (Σ_c nearly singular) lose their smallest moment to rounding on the way back.
    assume(np.linalg.cond(lower) < 1e3)
    again = parameters_from_log_cholesky(log_cholesky_from_parameters(parameters))
    assert_allclose(again, parameters, rtol=1e-9, atol=1e-12 * np.max(np.abs(parameters)))
