"""Python API of the feedforward: identified parameter YAML → joint torques.

::

    from dynamic_identification.feedforward import FeedforwardModel

    model = FeedforwardModel.from_yaml("params.yaml")   # written by `dynid identify --out`
    tau = model.torques(q, dq, ddq)                     # (n,) or (N, n), N·m, joints in model.joint_names order

    model = load_feedforward("params.yaml")             # a serial or a closed-loop robot's file

:class:`FeedforwardModel` here is the numerical
:class:`dynamic_identification.core.feedforward.FeedforwardModel` with constructors
that read a parameter file. The split keeps the core free of file IO: the core
class takes a robot model and parameter values, this one adds
:meth:`~FeedforwardModel.from_yaml` and :meth:`~FeedforwardModel.from_parameters`
(the io layer's :class:`~dynamic_identification.io.parameters.ParameterFile`).

A closed-loop robot's file (``robot.loop_closures``, [Briot2012] §2) gives the same
:class:`FeedforwardModel` on its mechanism: desired **actuated** ``q, q̇, q̈`` in, actuated torques
``J_tᵀ τ_tree`` plus drive terms out, the passive motion completed from the closures
(:mod:`dynamic_identification.core.feedforward`). :func:`load_feedforward` and
:func:`feedforward_from_parameters` are :meth:`FeedforwardModel.from_yaml` and
:meth:`FeedforwardModel.from_parameters` as functions.

Every constructor here takes the core model's tuning keywords, :class:`FeedforwardOptions`
(``friction_smoothing``, ``effort_limits``, ``acceleration_limits``, and the ``effort_factor`` and
``mass_factor`` of the plausibility gates a model must pass), and hands them on unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

from dynamic_identification.core import feedforward as core
from dynamic_identification.core.errors import ModelError
from dynamic_identification.core.feedforward import DEFAULT_FRICTION_SMOOTHING
from dynamic_identification.core.mechanism.payload import Payload
from dynamic_identification.core.mechanism.plausibility import (
    DEFAULT_EFFORT_FACTOR,
    DEFAULT_MASS_FACTOR,
    ImplausibleModelError,
)
from dynamic_identification.core.mechanism.robot import DriveChain, DriveTerms, RobotModel
from dynamic_identification.core.mechanism.seam import Mechanism, mechanism_of
from dynamic_identification.io.parameters import (
    ParameterFile,
    file_mechanism,
    load_parameters,
    parameter_file_mechanism,
)
from dynamic_identification.io.payload import load_payload

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "DEFAULT_FRICTION_SMOOTHING",
    "FeedforwardModel",
    "FeedforwardOptions",
    "feedforward_from_parameters",
    "load_feedforward",
]


class FeedforwardOptions(TypedDict, total=False):
    """The core model's tuning keywords, as every constructor of this module takes them.

    Attributes
    ----------
    friction_smoothing
        ``k`` of ``tanh(k q̇)``, s/rad (default :data:`DEFAULT_FRICTION_SMOOTHING`).
    effort_limits, acceleration_limits
        Torque clamp (N·m) and desired-acceleration bound (rad/s², a sample beyond it is taken
        at it) per joint (actuated joint of a closed-loop robot); default the URDF's effort
        limits and ``10 /s`` times its velocity limits
        (:data:`~dynamic_identification.core.feedforward.FEEDFORWARD_ACCELERATION_PER_VELOCITY_HZ`).
        The plausibility gates take them as the estimator does (``limits.effort``, ``limits.acceleration``).
    effort_factor, mass_factor
        ``plausibility.effort_factor`` and ``plausibility.mass_factor``: a model that fails the gates
        is refused (:func:`~dynamic_identification.core.feedforward.check_plausible`).
    """

    friction_smoothing: float
    effort_limits: Sequence[float] | None
    acceleration_limits: Sequence[float] | None
    effort_factor: float
    mass_factor: float


def _file_terms(parameters: ParameterFile) -> tuple[DriveChain, DriveTerms, tuple[str, ...], tuple[float, ...]]:
    """The drive chain, drive terms, parameter names and values of a parsed file, in the core constructors' order."""
    values = parameters.values()
    return parameters.drive_chain(), parameters.drive_terms(), tuple(values), tuple(values.values())


def _identified(parameters: ParameterFile) -> list[bool]:
    """Per joint of the file: whether the identification had equations for it."""
    return [joint in parameters.identified_joints() for joint in parameters.joints]


def _resolved_payload(payload: str | os.PathLike[str] | Payload | None) -> Payload | None:
    """A payload argument as a :class:`~dynamic_identification.core.mechanism.payload.Payload`: a path or
    YAML text (``dynid payload --out``, ``/estimator/payload``) is read, a ``Payload`` or ``None`` kept."""
    return payload if payload is None or isinstance(payload, Payload) else load_payload(payload)


def _require_joints(described: str, joints: Sequence[str], parameters: ParameterFile) -> None:
    """Refuse a given robot model whose joints are not the file's: ``described`` names what it has."""
    if joints != parameters.joints:
        raise ModelError(f"{described} {list(joints)}, the file {list(parameters.joints)}")


class FeedforwardModel(core.FeedforwardModel):
    """The identified model's feedforward torques, loadable from a parameter YAML file.

    See :class:`dynamic_identification.core.feedforward.FeedforwardModel` for the
    model (``tanh(k q̇)`` Coulomb friction, [Volkmann2020] §IV.C; a closed-loop robot's
    passive motion completed from the closures, ``τ_a = J_tᵀ τ_tree`` plus drive terms,
    [Briot2012] eq. (6)) and :meth:`torques`.
    """

    @classmethod
    def from_yaml(
        cls,
        path: str | os.PathLike[str],
        *,
        urdf: str | os.PathLike[str] | None = None,
        payload: str | os.PathLike[str] | Payload | None = None,
        **options: Unpack[FeedforwardOptions],
    ) -> FeedforwardModel:
        """The model of a parameter YAML file (or YAML text, as published on ``/estimator/parameters``).

        A relative URDF name in the file is taken relative to the file's folder (then
        to the working directory, as files written before names were relative need),
        ``package://`` through ``AMENT_PREFIX_PATH``; the URDF's content must match the
        hash the file records. ``payload`` is a payload YAML (path or text, ``dynid
        payload --out`` or ``/estimator/payload``) or a
        :class:`~dynamic_identification.core.mechanism.payload.Payload`. The other arguments are
        those of :meth:`from_parameters`.
        """
        return cls.from_parameters(load_parameters(path), urdf=urdf, payload=_resolved_payload(payload), **options)

    @classmethod
    def from_parameters(
        cls,
        parameters: ParameterFile,
        *,
        urdf: str | os.PathLike[str] | None = None,
        robot: RobotModel | Mechanism | None = None,
        payload: Payload | None = None,
        **options: Unpack[FeedforwardOptions],
    ) -> FeedforwardModel:
        """The model of a parsed parameter file, a serial robot's or a closed-loop robot's
        (``robot.loop_closures``, ``robot.actuated_joints``: desired states and torques per actuated joint).

        Parameters
        ----------
        parameters
            Parsed parameter YAML (``robot``, ``model`` and ``parameters`` are used).
        urdf
            URDF to use instead of the one the file names (a file identified on
            another machine, whose URDF lives elsewhere here); the joints are still
            those of the file. Either URDF, this one or the file's
            (:meth:`~dynamic_identification.io.parameters.ParameterFile.urdf_path`:
            relative to the file, ``package://``, or absolute), must have the content
            hash the file records.
        robot
            The robot model of the file's joints (the closed-loop mechanism of a closed-loop
            file), already built (a node that receives new parameters for the same robot
            reuses it); ``urdf`` is then not read.
        payload
            A carried load (``io.payload.load_payload``) whose torques are added.
        **options
            ``friction_smoothing`` (``k`` of ``tanh(k q̇)``, s/rad), ``effort_limits``,
            ``acceleration_limits``, ``effort_factor`` and ``mass_factor`` (:class:`FeedforwardOptions`).

        Raises
        ------
        dynamic_identification.core.errors.IdentificationError
            If the URDF cannot be loaded, changed since the identification, lacks a
            joint of the file, does not fit the closures, a parameter is not a standard
            parameter of the model, a base parameter is neither in the file's ``parameters`` nor in
            its ``removed``, or the model fails the plausibility gates, here or where it was identified
            (``quality.plausibility``): :class:`~dynamic_identification.core.mechanism.plausibility.\
ImplausibleModelError`.
        """
        _require_plausible(parameters)
        if robot is None:
            robot = parameter_file_mechanism(parameters, urdf)
        else:
            _require_joints("the robot model controls joints", mechanism_of(robot).actuated_joint_names, parameters)
            robot = file_mechanism(mechanism_of(robot), parameters)
        try:
            return cls(robot, *_file_terms(parameters), identified=_identified(parameters), payload=payload, **options)
        except ImplausibleModelError as error:
            differing = _writer_factors(parameters, options)
            if not differing:
                raise
            raise ImplausibleModelError(
                error.problems,
                hint=f"{error.hint}; its writer gated it with {differing}: set plausibility.* under /** so that the"
                " estimator and the feedforward read the same",
            ) from error


def _writer_factors(parameters: ParameterFile, options: FeedforwardOptions) -> str:
    """The plausibility factors the estimator that wrote ``parameters`` gated them with (its ``settings.window``)
    where they differ from the feedforward's, ``"plausibility.effort_factor 3 (the feedforward's: 1.5)"``; empty
    when they agree or the file does not say (``dynid identify`` stores none)."""
    window = parameters.settings.get("window")
    if not isinstance(window, dict):
        return ""
    ours = {
        "effort_factor": options.get("effort_factor", DEFAULT_EFFORT_FACTOR),
        "mass_factor": options.get("mass_factor", DEFAULT_MASS_FACTOR),
    }
    return ", ".join(
        f"plausibility.{key} {window[key]:g} (the feedforward's: {value:g})"
        for key, value in ours.items()
        if isinstance(window.get(key), int | float) and float(window[key]) != float(value)
    )


def _require_plausible(parameters: ParameterFile) -> None:
    """Refuse a file its writer judged implausible (``quality.plausibility.ok: false``: ``dynid identify
    --accept-implausible`` wrote it for inspection): the gates on its identification data, the predicted peak
    torque among them, are not repeated here (:func:`~dynamic_identification.core.feedforward.check_plausible`)."""
    verdict = parameters.quality.get("plausibility")
    if isinstance(verdict, dict) and verdict.get("ok") is False:
        raise ImplausibleModelError(
            [str(problem) for problem in verdict.get("problems") or ["no reason recorded"]],
            hint=f"{parameters.source} says so in quality.plausibility (written with --accept-implausible)",
        )


def feedforward_from_parameters(
    parameters: ParameterFile,
    *,
    urdf: str | os.PathLike[str] | None = None,
    payload: Payload | None = None,
    **options: Unpack[FeedforwardOptions],
) -> FeedforwardModel:
    """The feedforward of a parsed parameter file: a serial robot's or a closed-loop robot's
    (:meth:`FeedforwardModel.from_parameters`)."""
    return FeedforwardModel.from_parameters(parameters, urdf=urdf, payload=payload, **options)


def load_feedforward(
    path: str | os.PathLike[str],
    *,
    urdf: str | os.PathLike[str] | None = None,
    payload: str | os.PathLike[str] | Payload | None = None,
    **options: Unpack[FeedforwardOptions],
) -> FeedforwardModel:
    """The feedforward of a parameter YAML file or text, serial or closed-loop (``robot.loop_closures``)."""
    return feedforward_from_parameters(load_parameters(path), urdf=urdf, payload=_resolved_payload(payload), **options)
