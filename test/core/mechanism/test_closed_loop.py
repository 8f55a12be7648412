"""The closed-loop IDIM ([Briot2012] eq. (1)-(7)) against Lagrange multipliers, finite differences and simulation."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
import scipy.ndimage
import yaml
from numpy.testing import assert_allclose

from dynamic_identification.core.errors import DataError, ModelError
from dynamic_identification.core.identification.drive_gains import current_columns
from dynamic_identification.core.mechanism.closed_loop import (
    ClosedLoopModel,
    LoopClosureError,
    base_parameters,
    observation_matrix,
    random_motion,
    standard_parameter_names,
    standard_parameters,
)
from dynamic_identification.core.mechanism.robot import DriveChain, DriveParameters, DriveTerms
from dynamic_identification.core.simulation import inverse_dynamics
from five_bar import (
    FIVE_BAR_ACTUATED,
    FIVE_BAR_CLOSURES,
    FIVE_BAR_URDF,
    REPO_ROOT,
    load_five_bar,
    load_four_bar,
)

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def five_bar() -> ClosedLoopModel:
    return load_five_bar()


@pytest.fixture(scope="module")
def mechanisms(five_bar: ClosedLoopModel) -> dict[str, ClosedLoopModel]:
    """The shipped five-bar (point closure), a four-bar with a continuous crank (planar closure) and two
    spatial arms holding one bar (6d closure, closure given in the ROS-parameter mapping form)."""
    return {
        "five_bar": five_bar,
        "four_bar": load_four_bar(),
        "two_arms": ClosedLoopModel.from_config(
            DATA / "two_arms.urdf",
            loop_closures={"grip": {"frame_a": "grip_a", "frame_b": "grip_b", "type": "6d"}},
            actuated_joints=["b1", "a1"],
        ),
    }


MECHANISMS = ["five_bar", "four_bar", "two_arms"]


@pytest.fixture(params=MECHANISMS)
def model(request: pytest.FixtureRequest, mechanisms: dict[str, ClosedLoopModel]) -> ClosedLoopModel:
    """Each of the :func:`mechanisms` in turn."""
    return mechanisms[request.param]


def _drive(model: ClosedLoopModel, rng: np.random.Generator) -> DriveParameters:
    n = model.n_actuated
    return DriveParameters.create(
        n,
        rotor_inertia=rng.uniform(1e-5, 1e-3, n),
        viscous=rng.uniform(1e-4, 1e-2, n),
        coulomb=rng.uniform(1e-3, 1e-2, n),
        offset=rng.uniform(-1e-3, 1e-3, n),
    )


def _smooth_actuated_motion(model: ClosedLoopModel, time_s: np.ndarray) -> tuple[np.ndarray, ...]:
    """Sines of 0.15 rad around the reference configuration; a full turn of a continuous joint."""
    start = model.reference_configuration[model.actuated]
    q, dq, ddq = (np.empty((time_s.size, model.n_actuated)) for _ in range(3))
    for i, j in enumerate(model.actuated):
        if model.robot.continuous[j]:
            omega = 2.0 * np.pi / 2.0
            q[:, i], dq[:, i], ddq[:, i] = start[i] + omega * time_s, omega, 0.0
        else:
            omega, phase = 2.0 * np.pi * (0.7 + 0.3 * i), 0.5 * i
            q[:, i] = start[i] + 0.15 * (np.sin(omega * time_s + phase) - np.sin(phase))
            dq[:, i] = 0.15 * omega * np.cos(omega * time_s + phase)
            ddq[:, i] = -0.15 * omega**2 * np.sin(omega * time_s + phase)
    return q, dq, ddq


STENCIL_STEP_S = 1e-4
"""Step of the central differences that check the completed motion, s."""


def _completed_on_stencil(model: ClosedLoopModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The completed tree motion of :func:`_smooth_actuated_motion` at ``t − h``, ``t``, ``t + h`` around six
    instants ``t`` in [0.1, 1] s (``h = STENCIL_STEP_S``): q, q̇, q̈, each ``(6, 3, n_tree)``."""
    centres = np.linspace(0.1, 1.0, 6)
    times = (centres[:, None] + np.array([-STENCIL_STEP_S, 0.0, STENCIL_STEP_S])).ravel()
    motion = model.complete_motion(*_smooth_actuated_motion(model, times))
    return tuple(values.reshape(centres.size, 3, model.n_tree) for values in (motion.q, motion.dq, motion.ddq))


def test_regressor_times_standard_parameters_equals_lagrange_multiplier_torques(model: ClosedLoopModel) -> None:
    """[Briot2012] eq. (6) (projection by J_t) against eq. (5) (Pinocchio's constraint Jacobian, multipliers)."""
    rng = np.random.default_rng(7)
    motion = random_motion(model, 30, rng)
    terms = DriveTerms()
    drive = _drive(model, rng)
    chain = DriveChain.create(model.n_actuated)
    regressor = observation_matrix(model, chain, terms, motion.q, motion.dq, motion.ddq)
    expected = inverse_dynamics(model, chain, drive, motion.q, motion.dq, motion.ddq)
    assert_allclose(regressor @ standard_parameters(model, terms, drive), expected, rtol=0.0, atol=1e-9)


def test_constraint_jacobian_is_the_derivative_of_the_residual(model: ClosedLoopModel) -> None:
    rng = np.random.default_rng(2)
    q = random_motion(model, 1, rng).q[0]
    direction = rng.normal(size=model.n_tree)
    step = 1e-6
    numerical = (model.residual(q + step * direction) - model.residual(q - step * direction)) / (2.0 * step)
    assert_allclose(model.constraint_jacobian(q) @ direction, numerical, rtol=0.0, atol=1e-8)


@pytest.mark.parametrize(
    ("kind", "actuated"),
    [("point", ["a1", "a2", "a3", "b1", "b2"]), ("planar", ["a1", "a2", "a3", "b1", "b2"]), ("6d", ["a1", "b1"])],
)
def test_constraint_drift_is_the_time_derivative_of_the_constraint_jacobian(kind: str, actuated: list[str]) -> None:
    """``Ȧ_t q̇_t`` of [Briot2012] eq. (4), on the spatial arms so that every term of every closure type moves."""
    model = ClosedLoopModel.from_config(
        DATA / "two_arms.urdf",
        loop_closures=[{"frame_a": "grip_a", "frame_b": "grip_b", "type": kind}],
        actuated_joints=actuated,
    )
    rng = np.random.default_rng(4)
    q, dq = rng.uniform(-2.0, 2.0, model.n_tree), rng.uniform(-2.0, 2.0, model.n_tree)
    step = 1e-6
    rate = (model.constraint_jacobian(q + step * dq) - model.constraint_jacobian(q - step * dq)) / (2.0 * step)
    assert_allclose(model.constraint_drift(q, dq), rate @ dq, rtol=0.0, atol=1e-7)


@pytest.mark.parametrize(
    ("order", "atol"), [pytest.param(1, 1e-6, id="velocities"), pytest.param(2, 1e-5, id="accelerations")]
)
def test_completed_derivatives_are_finite_differences_of_the_completed_motion(
    model: ClosedLoopModel, order: int, atol: float
) -> None:
    """Passive velocities of [Briot2012] eq. (3) are the derivatives of the passive positions solved from eq. (2)
    (``order`` 1); passive accelerations of eq. (4), with the drift ``Ȧ_t q̇_t``, the derivatives of eq. (3)
    (``order`` 2)."""
    motion = _completed_on_stencil(model)
    quantity, rate = motion[order - 1], motion[order]
    numerical = (quantity[:, 2] - quantity[:, 0]) / (2.0 * STENCIL_STEP_S)
    assert_allclose(rate[:, 1], numerical, rtol=0.0, atol=atol)


def test_base_parameters_reproduce_the_torques_of_the_standard_parameters(model: ClosedLoopModel) -> None:
    terms = DriveTerms()
    chain = DriveChain.create(model.n_actuated)
    base = base_parameters(model, chain, terms, samples=120)
    rng = np.random.default_rng(11)
    standard = standard_parameters(model, terms, _drive(model, rng))
    motion = random_motion(model, 40, rng)
    full = observation_matrix(model, chain, terms, motion.q, motion.dq, motion.ddq, projection=motion.projection)
    assert_allclose(base.select(full) @ base.from_standard(standard), full @ standard, rtol=0.0, atol=1e-9)


def test_five_bar_has_seventeen_base_parameters(five_bar: ClosedLoopModel) -> None:
    """Per link ZZ, MX, MY (12), one less because a mass at the shared tip belongs to either distal
    link (11); Ia regrouped with ZZ of the proximal link, Fv, Fc, off per motor (6)."""
    base = base_parameters(five_bar, DriveChain.create(2), DriveTerms())
    assert base.count == 17


def test_standard_parameter_names_put_drive_terms_on_actuated_joints_only(five_bar: ClosedLoopModel) -> None:
    names = standard_parameter_names(
        five_bar, DriveTerms(rotor_inertia=True, viscous_friction=False, coulomb_friction=True, offset=False)
    )
    assert [name for name in names if name[:2] in ("Ia", "Fc")] == ["Ia1", "Fc1", "Ia3", "Fc3"]


def test_solve_passive_keeps_the_assembly_mode_of_the_guess(five_bar: ClosedLoopModel) -> None:
    """For given motor angles the tip is above the motors (home, distal joints near 0) or below
    them (distal joints near ∓1.63 rad: distal_1 turned from −73° to −167° relative to proximal_1)."""
    tip_down_guess = np.array([0.1, -1.5, -0.1, 1.5])
    solved = five_bar.solve_passive(np.array([0.1, -0.1]), tip_down_guess)
    assert_allclose(five_bar.residual(solved), 0.0, atol=1e-12)
    assert solved[1] < -1.2 and solved[3] > 1.2


def test_wrapped_positions_of_a_continuous_actuated_joint_give_the_same_passive_motion(
    mechanisms: dict[str, ClosedLoopModel],
) -> None:
    """Encoders of continuous joints often report angles in (−π, π]: the jumps must not change the solution."""
    model = mechanisms["four_bar"]
    time_s = np.linspace(0.0, 2.0, 401)  # one full crank turn
    q, dq, ddq = _smooth_actuated_motion(model, time_s)
    unwrapped = model.complete_motion(q, dq, ddq)
    wrapped = model.complete_motion(np.angle(np.exp(1j * q)), dq, ddq)
    assert_allclose(wrapped.q[:, model.passive], unwrapped.q[:, model.passive], rtol=0.0, atol=1e-9)


def test_a_mechanism_loaded_again_finds_its_completed_motions_and_a_changed_one_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``dynid`` verbs called one after the other from Python load the mechanism each time: the loops of a recording
    are solved once for all of them, and a mechanism whose geometry differs by a millimetre solves them again."""
    solved: list[ClosedLoopModel] = []
    complete = ClosedLoopModel._completed

    def counted(self: ClosedLoopModel, *args: np.ndarray | None) -> object:
        solved.append(self)
        return complete(self, *args)

    monkeypatch.setattr(ClosedLoopModel, "_completed", counted)
    first = load_five_bar()
    motion = _smooth_actuated_motion(first, np.linspace(0.0, 0.5, 251) + 0.37)
    once = first.complete_motion(*motion)
    again = load_five_bar().complete_motion(*motion)
    assert solved == [first]
    assert_allclose(again.q, once.q, rtol=0.0, atol=0.0)
    urdf = FIVE_BAR_URDF.read_text(encoding="utf-8")
    assert urdf.count('<origin xyz="0.16 0 0"') == 1
    longer = tmp_path / "five_bar_longer.urdf"
    longer.write_text(urdf.replace('<origin xyz="0.16 0 0"', '<origin xyz="0.161 0 0"'), encoding="utf-8")
    changed = ClosedLoopModel.from_config(longer, loop_closures=FIVE_BAR_CLOSURES, actuated_joints=FIVE_BAR_ACTUATED)
    moved = changed.complete_motion(*motion)
    assert solved == [first, changed]
    assert np.max(np.abs(moved.q - once.q)) > 1e-4


def test_recording_through_a_singularity_is_refused_at_its_sample(five_bar: ClosedLoopModel) -> None:
    """Opening both proximal links symmetrically by s aligns the distal links at
    cos(60° − s) = 0.11 / 0.12 (elbows 0.32 m apart): s* = 0.6361 rad, sample 637 at 1 mrad steps."""
    opening = np.arange(0.0, 0.8, 1e-3)
    q = np.stack([opening, -opening], axis=1)
    singular = math.radians(60.0) - math.acos(0.11 / 0.12)
    with pytest.raises(LoopClosureError) as caught:
        five_bar.complete_motion(q, np.ones_like(q), np.zeros_like(q))
    assert caught.value.sample is not None
    assert math.ceil(singular / 1e-3) - 20 <= caught.value.sample <= math.ceil(singular / 1e-3)
    assert f"sample {caught.value.sample}:" in str(caught.value)


def test_observation_matrix_refuses_tree_positions_that_do_not_close_the_loops(five_bar: ClosedLoopModel) -> None:
    motion = random_motion(five_bar, 5, np.random.default_rng(3))
    q = motion.q.copy()
    q[3, 1] += 0.01
    with pytest.raises(DataError, match="q at sample 3 does not close the loops"):
        observation_matrix(five_bar, DriveChain.create(2), DriveTerms(), q, motion.dq, motion.ddq)


def test_current_columns_make_parameters_and_drive_gains_the_null_vector(five_bar: ClosedLoopModel) -> None:
    """[Briot2012] eq. (8), (13): with exact currents, [W, −V_τ] (the current columns of any robot) has the one null
    vector (χ, g_τ);
    fixing the scale by the first gain gives back the other gain and the base parameters."""
    rng = np.random.default_rng(5)
    terms = DriveTerms()
    chain = DriveChain.create(2)
    drive = _drive(five_bar, rng)
    gains = np.array([0.08, 0.11])
    base = base_parameters(five_bar, chain, terms)
    motion = random_motion(five_bar, 200, rng)
    currents = inverse_dynamics(five_bar, chain, drive, motion.q, motion.dq, motion.ddq) / gains
    standard = observation_matrix(five_bar, chain, terms, motion.q, motion.dq, motion.ddq, projection=motion.projection)
    columns = np.concatenate([base.select(standard), -current_columns(chain, currents)], axis=2)
    total = columns.reshape(-1, base.count + 2)
    null = scipy.linalg.svd(total)[2][-1]
    scaled = null * gains[0] / null[base.count]
    assert_allclose(
        scaled,
        np.concatenate([base.from_standard(standard_parameters(five_bar, terms, drive)), gains]),
        rtol=1e-6,
        atol=1e-10,
    )


# ----------------------------------------------------------------------------- configuration
def test_shipped_config_describes_the_shipped_five_bar() -> None:
    config = yaml.safe_load((REPO_ROOT / "config" / "five_bar.yaml").read_text())
    robot = config["/**"]["ros__parameters"]["robot"]
    model = ClosedLoopModel.from_config(
        FIVE_BAR_URDF, loop_closures=robot["loop_closures"], actuated_joints=robot["actuated_joints"]
    )
    assert model.actuated_joint_names == ("proximal_joint_1", "proximal_joint_2")


def test_five_bar_urdf_zero_configuration_is_the_closed_home_pose(five_bar: ClosedLoopModel) -> None:
    assert_allclose(five_bar.residual(np.zeros(4)), 0.0, atol=1e-12)


@pytest.mark.parametrize(
    ("closures", "actuated", "message"),
    [
        ([{"frame_a": "tip_1", "frame_b": "tip_9", "type": "point"}], FIVE_BAR_ACTUATED, "'tip_9' is not a frame"),
        ([{"frame_a": "tip_1", "frame_b": "tip_2", "type": "spherical"}], FIVE_BAR_ACTUATED, r"\.type must be one of"),
        ([{"frame_a": "tip_1", "frame_b": "tip_2"}], FIVE_BAR_ACTUATED, r"missing \['type'\]"),
        ([], FIVE_BAR_ACTUATED, "needs at least one closure"),
        (FIVE_BAR_CLOSURES, ["proximal_joint_1", "elbow"], "'elbow' is not a 1-DoF joint of the tree"),
        (FIVE_BAR_CLOSURES, ["proximal_joint_1", "tip_joint_1"], "'tip_joint_1' is a fixed joint"),
        (FIVE_BAR_CLOSURES, ["proximal_joint_1"], "has 1 joints .* mobility is 2"),
        (FIVE_BAR_CLOSURES, [*FIVE_BAR_ACTUATED, "distal_joint_1"], "has 3 joints .* mobility is 2"),
        ([{"frame_a": "tip_1", "frame_b": "base_link", "type": "point"}], FIVE_BAR_ACTUATED, "cannot be closed"),
    ],
    ids=[
        "unknown-frame",
        "bad-type",
        "missing-key",
        "no-closure",
        "unknown-joint",
        "fixed-joint",
        "too-few",
        "too-many",
        "never-closes",
    ],
)
def test_invalid_mechanism_descriptions_are_refused_by_name(closures, actuated, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        ClosedLoopModel.from_config(FIVE_BAR_URDF, loop_closures=closures, actuated_joints=actuated)
