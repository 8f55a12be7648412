"""Write a URDF with identified, physically consistent link inertias and joint friction.

The output is the robot's own URDF with only these edits, everything else kept byte
for byte (comments, formatting, attribute order, other elements):

* per identified joint, the ``<inertial>`` of its child link (mass, centre of mass
  ``<origin xyz>`` and rotational inertia about the centre of mass in link axes,
  ``rpy="0 0 0"``), from :meth:`pinocchio.Inertia.FromDynamicParameters` of the
  identified standard parameters (Pinocchio order, about the joint frame; the child
  link frame of a URDF joint is the joint frame);
* per identified joint, ``<dynamics damping="Fv" friction="Fc">`` (other attributes of
  an existing ``<dynamics>`` element are kept).

Bodies merged by the model
--------------------------
:func:`~dynamic_identification.core.mechanism.robot.load_robot` merges the links behind fixed
joints, and behind joints it locks (``pinocchio.buildReducedModel``), into the body of
the identified joint they hang from: the Panda's joint 7 body is ``panda_link7`` plus
hand, fingers and flange. The identified parameters are those of the whole body. The
child link receives the identified body minus the URDF inertias of the other links of
that body (placed by the reduced model's frames, so at the locked positions the model
was built with), and those links stay as they are, when that difference is itself
physically consistent ([Wensing2018] pseudo-inertia ``⪰ 0``, positive mass): a
simulator keeps the gripper's own mass. Otherwise the whole body goes on the child
link and the other links of the body get zero mass and inertia
(:attr:`UrdfExport.zeroed` lists them). An estimate made with
``attached=attached_inertias(robot)``
(:class:`~dynamic_identification.core.estimation.consistency.ConsistentEstimator`)
guarantees the first case: a wrist body identified without that constraint is often
"lighter" than its URDF gripper in some direction within its noise. Either way, reloading the output with the same
identified joints (and locked positions) gives the identified body inertias.

Friction
--------
The drive-chain friction of motor ``m`` acts on ``v_m = (C q̇)_m`` (coupling ``C``,
:mod:`dynamic_identification.core.mechanism.robot`), Fv and Fc already on the joint side of the
gears. With an identity coupling, joint ``j`` gets ``damping = Fv_j`` and
``friction = Fc_j`` exactly. A URDF cannot express friction shared between joints, so
with a coupling joint ``j`` gets the friction it feels when it moves alone:
``damping_j = Σ_m C[m, j]² Fv_m`` (the diagonal of ``Cᵀ diag(Fv) C``) and
``friction_j = Σ_m |C[m, j]| Fc_m``; the cross terms are lost. Rotor inertias ``Ia``
and offsets have no URDF element and are not written (they stay in the parameter
YAML).
"""

from __future__ import annotations

import os
import xml.parsers.expat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pinocchio as pin

from dynamic_identification.core.errors import ModelError
from dynamic_identification.core.estimation.consistency import is_physically_consistent
from dynamic_identification.core.mechanism.robot import INERTIAL_PARAMETER_NAMES, DriveChain, DriveTerms, RobotModel
from dynamic_identification.io.atomic import write_text_atomic

_INERTIAL = len(INERTIAL_PARAMETER_NAMES)
_MASS_FLOOR_KG = 1e-12
"""A body lighter than this is written as massless (its centre of mass is undefined)."""


@dataclass(frozen=True)
class UrdfExport:
    """The edited URDF and what was changed.

    Attributes
    ----------
    text
        The URDF document.
    inertials
        Links whose ``<inertial>`` was written, one per identified joint, model order.
    zeroed
        Links merged into an identified body whose inertia was set to zero because the
        identified body minus their URDF inertia was not physically consistent.
    dynamics
        Joints whose ``<dynamics>`` damping and friction were written.
    """

    text: str
    inertials: tuple[str, ...]
    zeroed: tuple[str, ...] = ()
    dynamics: tuple[str, ...] = field(default=())


@dataclass
class _Element:
    """Byte offsets of an element in the source: ``start`` of its start tag, ``content`` after it, ``end`` after it."""

    name: str
    attributes: list[str]
    start: int
    content: int
    end: int = -1
    self_closing: bool = False
    children: list[_Element] = field(default_factory=list)


def _tag_end(data: bytes, start: int) -> int:
    """Offset just after the ``>`` closing the tag that starts at ``start`` (quotes may hold ``>``)."""
    quote = 0
    for index in range(start, len(data)):
        byte = data[index]
        if quote:
            if byte == quote:
                quote = 0
        elif byte in (0x22, 0x27):
            quote = byte
        elif byte == 0x3E:
            return index + 1
    raise ModelError("unterminated tag in the URDF")


def _parse_positions(data: bytes, source: str) -> _Element:
    """The element tree of ``data`` with byte offsets (``xml.parsers.expat``)."""
    parser = xml.parsers.expat.ParserCreate()
    parser.ordered_attributes = True
    stack: list[_Element] = []
    root: list[_Element] = []

    def start(name: str, attributes: list[str]) -> None:
        begin = parser.CurrentByteIndex
        after = _tag_end(data, begin)
        element = _Element(name, attributes, begin, after, self_closing=data[after - 2 : after] == b"/>")
        (stack[-1].children if stack else root).append(element)
        stack.append(element)

    def end(name: str) -> None:
        element = stack.pop()
        element.end = element.content if element.self_closing else _tag_end(data, parser.CurrentByteIndex)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as error:
        raise ModelError(f"{source} is not a URDF: not well-formed XML ({error})") from error
    if not root or root[0].name != "robot":
        raise ModelError(f"{source} is not a URDF: its root element is not <robot>")
    return root[0]


def _attribute(element: _Element, key: str) -> str | None:
    pairs = dict(zip(element.attributes[::2], element.attributes[1::2], strict=True))
    return pairs.get(key)


def _indent(data: bytes, offset: int) -> bytes:
    """Whitespace between the line start and ``offset``."""
    line = data.rfind(b"\n", 0, offset) + 1
    prefix = data[line:offset]
    return prefix if not prefix.strip() else b""


def _number(value: float) -> str:
    """Shortest text that reads back to the same double (``repr``), ``0`` for zeros."""
    return "0" if value == 0.0 else repr(float(value))


def _urdf_inertia(element: ElementTree.Element | None) -> pin.Inertia:
    """A link's ``<inertial>`` as a Pinocchio inertia in the link frame (zero when absent)."""
    if element is None:
        return pin.Inertia.Zero()
    origin = element.find("origin")
    xyz = np.array([float(v) for v in (origin.get("xyz", "0 0 0") if origin is not None else "0 0 0").split()])
    rpy = np.array([float(v) for v in (origin.get("rpy", "0 0 0") if origin is not None else "0 0 0").split()])
    mass_element = element.find("mass")
    mass = float(mass_element.get("value", "0")) if mass_element is not None else 0.0
    inertia_element = element.find("inertia")
    keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    values = [float(inertia_element.get(key, "0")) if inertia_element is not None else 0.0 for key in keys]
    xx, xy, xz, yy, yz, zz = values
    rotation = pin.rpy.rpyToMatrix(*rpy)
    central = rotation @ np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]) @ rotation.T
    return pin.Inertia(mass, xyz, central)


def _inertial_text(inertia: pin.Inertia, indent: bytes, unit: bytes, note: str = "") -> bytes:
    """An ``<inertial>`` element (first line unindented) for an inertia in the link frame; ``note`` goes into its
    comment."""
    mass = float(inertia.mass)
    if mass < _MASS_FLOOR_KG:
        lever, central, mass = np.zeros(3), np.zeros((3, 3)), 0.0
    else:
        lever, central = np.asarray(inertia.lever), np.asarray(inertia.inertia)
    inner = indent + unit
    xyz = " ".join(_number(v) for v in lever)
    tensor = " ".join(
        f'{key}="{_number(central[row, column])}"'
        for key, (row, column) in (
            ("ixx", (0, 0)),
            ("ixy", (0, 1)),
            ("ixz", (0, 2)),
            ("iyy", (1, 1)),
            ("iyz", (1, 2)),
            ("izz", (2, 2)),
        )
    )
    lines = [
        b"<inertial>",
        inner + f"<!-- identified by dynamic_identification{': ' + note if note else ''} -->".encode(),
        inner + f'<origin xyz="{xyz}" rpy="0 0 0"/>'.encode(),
        inner + f'<mass value="{_number(mass)}"/>'.encode(),
        inner + f"<inertia {tensor}/>".encode(),
        indent + b"</inertial>",
    ]
    return b"\n".join(lines)


def _joint_friction(
    standard: np.ndarray, n_joints: int, terms: DriveTerms, drive_chain: DriveChain | None, driven: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """Joint-side ``(damping, friction)`` per driven joint, or ``None`` when the model has no friction terms."""
    if not (terms.viscous_friction or terms.coulomb_friction):
        return None
    blocks = standard.reshape(n_joints, terms.per_joint)[driven, _INERTIAL:]
    names = terms.names
    viscous = blocks[:, names.index("Fv")] if terms.viscous_friction else np.zeros(driven.size)
    coulomb = blocks[:, names.index("Fc")] if terms.coulomb_friction else np.zeros(driven.size)
    coupling = np.eye(driven.size) if drive_chain is None else drive_chain.coupling
    return coupling.T**2 @ viscous, np.abs(coupling.T) @ coulomb


@dataclass(frozen=True)
class _Body:
    """The URDF links that make up the body of one identified joint."""

    child: str
    child_placement: pin.SE3
    others: tuple[str, ...]
    has_inertial: dict[str, bool]
    attached: pin.Inertia


def _bodies(robot: RobotModel) -> tuple[bytes, _Element, list[_Body]]:
    """The URDF bytes, their element positions and, per identified joint, the links of its body.

    A link belongs to the body of the joint its ``BODY`` frame hangs from in the
    reduced model; the frame's placement (at the locked positions) places the link's
    ``<inertial>`` in the joint frame.
    """
    path = Path(robot.urdf_path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ModelError(f"cannot read URDF {path}: {error}") from error
    root = _parse_positions(data, str(path))
    links = {element.get("name"): element for element in ElementTree.fromstring(data).findall("link")}
    joints = {_attribute(e, "name"): e for e in root.children if e.name == "joint"}
    members: dict[int, dict[str, pin.SE3]] = {j: {} for j in range(1, robot.n_joints + 1)}
    for frame in robot.model.frames:
        if frame.type == pin.FrameType.BODY and frame.parentJoint > 0 and frame.name in links:
            members[frame.parentJoint][frame.name] = frame.placement
    bodies = []
    for j, joint_name in enumerate(robot.joint_names, start=1):
        joint = joints.get(joint_name)
        child_element = next((c for c in joint.children if c.name == "child"), None) if joint else None
        child = _attribute(child_element, "link") if child_element else None
        placements = members[j]
        if child is None or child not in placements:
            raise ModelError(f"joint {joint_name} of the model has no child link in {path.name}")
        others = tuple(name for name in placements if name != child)
        attached = sum(
            (placements[name].act(_urdf_inertia(links[name].find("inertial"))) for name in others),
            pin.Inertia.Zero(),
        )
        bodies.append(
            _Body(
                child=child,
                child_placement=placements[child],
                others=others,
                has_inertial={name: links[name].find("inertial") is not None for name in others},
                attached=attached,
            )
        )
    return data, root, bodies


def attached_inertias(robot: RobotModel) -> np.ndarray:
    """URDF inertial parameters of the links merged into each identified body besides its child link.

    Returns
    -------
    numpy.ndarray
        ``(n, 10)`` in Pinocchio order about each joint frame (zeros for a body that is
        its child link alone): the Panda's joint 7 row holds hand, fingers and flange.
        Pass it as ``attached`` to
        :class:`~dynamic_identification.core.estimation.consistency.ConsistentEstimator`
        so that the export can keep those links' inertias.

    Raises
    ------
    ModelError
        When the URDF cannot be read or does not match the model.
    """
    _, _, bodies = _bodies(robot)
    return np.stack([body.attached.toDynamicParameters() for body in bodies])


def export_urdf(
    robot: RobotModel,
    standard: np.ndarray,
    terms: DriveTerms,
    *,
    drive_chain: DriveChain | None = None,
    tolerance: float = 1e-9,
    notes: Sequence[str] = (),
    driven: Sequence[int] | np.ndarray | None = None,
    comment: str = "",
) -> UrdfExport:
    """The robot's URDF with the identified link inertias and joint friction.

    Parameters
    ----------
    robot
        The identification model; its :attr:`~RobotModel.urdf_path` is the source.
    standard
        Standard parameters ``(n · terms.per_joint,)`` in
        :func:`~dynamic_identification.core.mechanism.robot.standard_parameter_names` order:
        per joint the 10 inertial parameters (Pinocchio order, about the joint frame)
        and the drive terms. They should be physically consistent
        (:func:`~dynamic_identification.core.estimation.consistency.consistent_estimate`);
        an inconsistent body is refused.
    terms
        The drive-chain terms of ``standard``.
    drive_chain
        For its coupling (module docstring); identity when omitted.
    tolerance
        Relative tolerance of the consistency checks
        (:func:`~dynamic_identification.core.estimation.consistency.consistency_report`).
    notes
        Per joint, a text for the comment of its body's ``<inertial>`` (the identified body
        against the URDF's, :func:`~dynamic_identification.io.outcome.link_text`); none by default.
    driven
        Indices of the joints the drive chain drives, whose friction is written (a closed-loop
        robot's actuated joints of its opened tree); every joint when omitted.
    comment
        A text put in a comment at the top of the ``<robot>`` element (e.g. that a closed-loop
        robot's loop closures live in its configuration, not in the URDF); none by default.

    Raises
    ------
    ModelError
        When the URDF cannot be read, ``standard`` has the wrong size, or a body's
        inertial parameters are not physically consistent.
    """
    n = robot.n_joints
    values = np.asarray(standard, dtype=float)
    if values.shape != (n * terms.per_joint,) or not np.all(np.isfinite(values)):
        raise ModelError(f"standard must hold {n * terms.per_joint} finite values, got shape {values.shape}")
    inertial = values.reshape(n, terms.per_joint)[:, :_INERTIAL]
    body_only = DriveTerms(False, False, False, False)
    for j, phi in enumerate(inertial):
        if not is_physically_consistent(phi, 1, body_only, tolerance=tolerance):
            raise ModelError(f"the identified inertia of joint {robot.joint_names[j]} is not physically consistent")
    data, root, bodies = _bodies(robot)
    link_positions = {_attribute(e, "name"): e for e in root.children if e.name == "link"}
    edits: list[tuple[int, int, bytes]] = []
    written, zeroed = [], []
    notes = list(notes) or [""] * n
    if len(notes) != n:
        raise ModelError(f"notes must name {n} bodies, got {len(notes)}")
    for body, phi, note in zip(bodies, inertial, notes, strict=True):
        remainder = phi - body.attached.toDynamicParameters()
        if body.others and not (
            remainder[0] > 0.0 and is_physically_consistent(remainder, 1, body_only, tolerance=tolerance)
        ):
            remainder = phi
            for name in body.others:
                if body.has_inertial[name]:
                    edits.append(_inertial_edit(data, link_positions[name], pin.Inertia.Zero()))
                    zeroed.append(name)
        in_link = body.child_placement.actInv(pin.Inertia.FromDynamicParameters(remainder))
        edits.append(_inertial_edit(data, link_positions[body.child], in_link, note))
        written.append(body.child)

    rows = np.arange(n) if driven is None else np.asarray(driven, dtype=int)
    friction = _joint_friction(values, n, terms, drive_chain, rows)
    joints = {_attribute(e, "name"): e for e in root.children if e.name == "joint"}
    dynamics = []
    if friction is not None:
        for j, joint_name in enumerate(robot.joint_names[int(i)] for i in rows):
            updates = {}
            if terms.viscous_friction:
                updates["damping"] = _number(friction[0][j])
            if terms.coulomb_friction:
                updates["friction"] = _number(friction[1][j])
            edits.append(_dynamics_edit(data, joints[joint_name], updates))
            dynamics.append(joint_name)

    if comment:
        unit = _indent_unit(data, root)
        edits.append(
            (root.content, root.content, b"\n" + _indent(data, root.start) + unit + f"<!-- {comment} -->".encode())
        )
    for start, stop, replacement in sorted(edits, key=lambda edit: edit[0], reverse=True):
        data = data[:start] + replacement + data[stop:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ModelError(f"URDF {robot.urdf_path} is not UTF-8: {error}") from error
    return UrdfExport(text=text, inertials=tuple(written), zeroed=tuple(zeroed), dynamics=tuple(dynamics))


def _indent_unit(data: bytes, parent: _Element) -> bytes:
    """Indentation step of ``parent``'s children (two spaces when it has none on their own line)."""
    outer = _indent(data, parent.start)
    for child in parent.children:
        inner = _indent(data, child.start)
        if inner.startswith(outer) and len(inner) > len(outer):
            return inner[len(outer) :]
    return b"  "


def _inertial_edit(data: bytes, link: _Element, inertia: pin.Inertia, note: str = "") -> tuple[int, int, bytes]:
    """Replace (or insert) the ``<inertial>`` of ``link`` (``note`` in its comment)."""
    indent = _indent(data, link.start)
    unit = _indent_unit(data, link)
    existing = next((c for c in link.children if c.name == "inertial"), None)
    if existing is not None:
        inner_unit = _indent_unit(data, existing)
        return existing.start, existing.end, _inertial_text(inertia, _indent(data, existing.start), inner_unit, note)
    element = _inertial_text(inertia, indent + unit, unit, note)
    if link.self_closing:
        opening = data[link.start : link.end - 2].rstrip() + b">"
        return link.start, link.end, opening + b"\n" + indent + unit + element + b"\n" + indent + b"</link>"
    return link.content, link.content, b"\n" + indent + unit + element


def _dynamics_edit(data: bytes, joint: _Element, updates: dict[str, str]) -> tuple[int, int, bytes]:
    """Set attributes of the joint's ``<dynamics>`` (created before ``</joint>`` when missing)."""
    existing = next((c for c in joint.children if c.name == "dynamics"), None)
    if existing is not None:
        pairs = list(zip(existing.attributes[::2], existing.attributes[1::2], strict=True))
        keys = [key for key, _ in pairs]
        pairs = [(key, updates.get(key, value)) for key, value in pairs]
        pairs += [(key, value) for key, value in updates.items() if key not in keys]
        text = "<dynamics " + " ".join(f'{key}="{value}"' for key, value in pairs) + "/>"
        if not existing.self_closing:
            text = text[:-2] + ">" + data[existing.content : existing.end].decode("utf-8")
        return existing.start, existing.end, text.encode()
    unit = _indent_unit(data, joint)
    closing = data.rfind(b"</", joint.start, joint.end)
    line = data.rfind(b"\n", 0, closing) + 1
    attributes = " ".join(f'{key}="{value}"' for key, value in updates.items())
    return line, line, _indent(data, joint.start) + unit + f"<dynamics {attributes}/>\n".encode()


def write_urdf(
    path: str | os.PathLike[str],
    robot: RobotModel,
    standard: np.ndarray,
    terms: DriveTerms,
    *,
    drive_chain: DriveChain | None = None,
    notes: Sequence[str] = (),
    driven: Sequence[int] | np.ndarray | None = None,
    comment: str = "",
) -> UrdfExport:
    """:func:`export_urdf` written atomically to ``path`` (:func:`~.atomic.write_text_atomic`)."""
    export = export_urdf(robot, standard, terms, drive_chain=drive_chain, notes=notes, driven=driven, comment=comment)
    write_text_atomic(path, export.text)
    return export
