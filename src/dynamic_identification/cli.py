"""``dynid``: offline identification from the command line (DESIGN.md CLI contract).

Thin adapter: argparse, files and printing; the work happens in
:mod:`dynamic_identification.api` and the core, whose results
:mod:`dynamic_identification.cli_format` turns into the text printed.

Every error is one line on stderr, ``dynid VERB: error: …`` (never a traceback, never a
value printed whole), with exit code 2 for bad input (arguments, files, settings) and
130 when interrupted (SIGINT, SIGTERM: temporary files are removed); warnings (a torn
last line dropped, …) are one line ``dynid VERB: warning: …``. Set ``DYNID_DEBUG=1``
to get the traceback of an unexpected error (exit code 1).
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType, ModuleType
from typing import NoReturn, TypeVar

from dynamic_identification.blas import use_one_blas_thread
from dynamic_identification.collector import freeze_startup_objects
from dynamic_identification.core.errors import IdentificationError, shorten
from dynamic_identification.core.settings_schema import (
    EXCITATION_MODES,
    REGRESSION_MODELS,
    STAMP_SOURCES,
    VELOCITY_SOURCES,
)
from dynamic_identification.memory import return_freed_memory
from dynamic_identification.progress_display import stderr_progress

T = TypeVar("T")
"""What an api verb returns."""

BAD_INPUT = 2
INTERRUPTED = 130

WHOLE_RECORDING_VERBS = ("identify", "predict", "gains", "payload")
"""Verbs that hold a whole recording and its rows: their freed arrays go back to the system
(:func:`~dynamic_identification.memory.return_freed_memory`)."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (argparse prints the usage first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(BAD_INPUT, f"{self.prog}: error: {shorten(message)} (see {self.prog} --help)\n")


def _output(text: str) -> Path:
    """An output path argument; an empty one is refused (``Path("")`` would be the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty path: give the file to write")
    return Path(text)


class _OneConfig(argparse.Action):
    """``--config`` given once: a second one would silently replace the first (``dynid`` reads one configuration;
    the nodes merge their ``--params-file`` files, ``dynid`` does not)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        if getattr(namespace, self.dest, None) is not None:
            parser.error(
                f"{option_string} given twice: dynid reads one configuration file; put the second one's keys (e.g."
                " the drive_chain.drive_gains of 'dynid gains') into the first"
            )
        setattr(namespace, self.dest, values)


def _positive(text: str) -> float:
    """A finite number > 0 (a duration, a period); refused on the command line, in one line, like a wrong type."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(value) and value > 0.0):
        raise argparse.ArgumentTypeError(f"must be finite and > 0, got {text!r}")
    return value


def _count(text: str) -> int:
    """A whole number >= 1 (a number of harmonics)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text!r}")
    return value


def _add_unit_checks(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-unit-checks",
        action="store_true",
        help="read the recording even when its time steps or positions look like another unit than s and rad"
        " (time in nanoseconds, positions in degrees: refused by default, checked against the URDF limits)",
    )


def _add_recording_source(parser: argparse.ArgumentParser) -> None:
    """``--data CSV`` or ``--bag DIR`` (exactly one): where the recording comes from."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", type=Path, help="recording CSV")
    source.add_argument(
        "--bag",
        type=Path,
        help="rosbag2 directory (sqlite3 or MCAP), read without ROS as the recorder records: topics.joint_states and"
        " topics.motor_currents (the joint-states topic itself when its JointState.effort holds the currents; joint"
        " torques there with topics.effort_is_torque) aligned within tolerance_s, and joints from --config",
    )


def _add_urdf(parser: argparse.ArgumentParser) -> None:
    """``--urdf FILE``, required: the robot's URDF."""
    parser.add_argument("--urdf", required=True, type=Path, help="robot URDF")


def _add_quiet(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress on stderr (by default each stage is reported there: a bar on a terminal, plain lines"
        " at most every 10 %% or 5 s otherwise; stdout holds only the report)",
    )


def _add_output(parser: argparse.ArgumentParser, what: str) -> None:
    """``--out FILE``, required: the file the verb writes, described by ``what``."""
    parser.add_argument("--out", required=True, type=_output, help=what)


def _add_verb(
    verbs: argparse._SubParsersAction[_Parser],
    name: str,
    run: Callable[[argparse.Namespace], str],
    *,
    summary: str,
) -> argparse.ArgumentParser:
    """The parser of the verb ``name``, which ``run`` carries out.

    ``summary`` is its line in ``dynid --help``; its own ``--help`` describes it with
    ``run``'s docstring (argparse folds the docstring's line breaks and indentation).
    """
    verb = verbs.add_parser(name, help=summary, description=run.__doc__)
    verb.set_defaults(func=run)
    return verb


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dynid",
        description="Identify a robot's inverse-dynamics model (IDIM, base parameters) from recordings.",
    )
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    identify = _add_verb(verbs, "identify", _identify, summary="identify base parameters from a recording")
    _add_urdf(identify)
    _add_recording_source(identify)
    identify.add_argument(
        "--config", type=Path, action=_OneConfig, help="ROS 2 parameter YAML (joints, drive chain, filters, method)"
    )
    _add_output(
        identify,
        "parameter YAML to write: self-contained (every setting used, the URDF named relative to it or as"
        " package:// with its SHA-256, physically consistent link parameters, stamp = data time of the last sample)",
    )
    identify.add_argument(
        "--urdf-out",
        type=_output,
        help="also write the URDF with the identified physically consistent link inertias ([Wensing2018]: mass,"
        " centre of mass, inertia) and <dynamics damping friction> of each identified joint",
    )
    identify.add_argument(
        "--validate",
        type=Path,
        action="append",
        default=[],
        metavar="REC.csv",
        help="held-out recording to predict and judge (per-joint e_j, e*_j [Volkmann2020] into quality.validation);"
        " repeatable",
    )
    identify.add_argument(
        "--report",
        type=_output,
        metavar="DIR",
        help="write an HTML report there (index.html and PNGs): measured vs predicted torques of the training and"
        " --validate recordings, residual spectra, parameters with %%σ, physical consistency, condition number,"
        " the range and speed of each joint the data covered",
    )
    identify.add_argument(
        "--model",
        choices=REGRESSION_MODELS,
        help="regression model ([DirectDrive2012]; overrides estimation.model of --config; default 'dynamic': IDIM)",
    )
    identify.add_argument(
        "--accept-implausible",
        action="store_true",
        help="write a model that fails the plausibility gates (torques beyond plausibility.effort_factor effort"
        " limits, impossible friction or masses, an unusable regression model) instead of refusing it;"
        " the file records the problems under quality.plausibility",
    )
    _add_unit_checks(identify)
    identify.add_argument(
        "--velocity",
        choices=VELOCITY_SOURCES,
        help="velocity source (default auto: the recorded velocities when they agree with the differentiated"
        " positions, else the derivative; overrides signal.velocity of --config)",
    )
    identify.add_argument(
        "--cutoff-hz",
        type=float,
        help="position low-pass cut-off in Hz, 0 = from the data's spectrum (20 × the motion's bandwidth,"
        " 2-20 Hz; overrides signal.position_cutoff_hz of --config)",
    )
    identify.add_argument(
        "--no-consistency",
        action="store_true",
        help="publish the unconstrained weighted least-squares values instead of the physically consistent"
        " estimate nearest to them ([Wensing2018]; overrides estimation.consistency of --config)",
    )
    identify.add_argument(
        "--stamps",
        choices=STAMP_SOURCES,
        help="sample instants (default auto: recovered from the sample order when the stamps jitter by more"
        " than 1 %% of a period; overrides signal.stamps of --config)",
    )
    _add_quiet(identify)

    predict = _add_verb(
        verbs, "predict", _predict, summary="predict joint torques of a recording from identified parameters"
    )
    predict.add_argument("--params", required=True, type=Path, help="parameter YAML from 'dynid identify'")
    predict.add_argument(
        "--data",
        required=True,
        type=Path,
        help="recording CSV (positions; torques optional), or a trajectory CSV of 'dynid excite' (positions,"
        " velocities, accelerations: the torques the planned motion needs, every row, nothing filtered)",
    )
    predict.add_argument(
        "--config",
        type=Path,
        action=_OneConfig,
        help="ROS 2 parameter YAML whose signal.* settings replace those stored in --params (default: the stored ones)",
    )
    predict.add_argument(
        "--urdf",
        type=Path,
        help="URDF instead of the one --params names (identified where the URDF lay elsewhere); its content must"
        " be the one identified (robot.urdf_sha256)",
    )
    _add_output(predict, "CSV of predicted torques to write")
    _add_unit_checks(predict)

    excite = _add_verb(verbs, "excite", _excite, summary="plan an excitation trajectory within the joint limits")
    _add_urdf(excite)
    excite.add_argument(
        "--config", type=Path, action=_OneConfig, help="ROS 2 parameter YAML (joints, excitation.* settings)"
    )
    excite.add_argument(
        "--mode",
        required=True,
        choices=EXCITATION_MODES,
        help="trajectory kind; payload: only the last joints move, optimised for the load's parameters"
        " ([Swevers2002] §4.2), frame from the excitation block's 'frame' (default the last frame)",
    )
    _add_output(excite, "trajectory CSV to write")
    _add_quiet(excite)

    stream = _add_verb(
        verbs,
        "stream",
        _stream,
        summary="run the estimator node's sliding-window identification offline on a recording",
    )
    _add_urdf(stream)
    _add_recording_source(stream)
    stream.add_argument(
        "--config", type=Path, action=_OneConfig, help="ROS 2 parameter YAML (joints, drive chain, signal, window.*)"
    )
    _add_output(stream, "JSON-lines file of updates to write")
    stream.add_argument("--params-out", type=_output, help="also write the last publishable estimate as parameter YAML")
    _add_unit_checks(stream)

    gains = _add_verb(
        verbs, "gains", _gains, summary="identify the drive gains (N·m/A) by IDIM-TLS with a known payload"
    )
    _add_urdf(gains)
    gains.add_argument("--data", required=True, type=Path, help="recording CSV without load (J/current in A)")
    gains.add_argument("--data-loaded", required=True, type=Path, help="recording CSV with the payload (J/current)")
    gains.add_argument("--payload", required=True, type=Path, help="payload YAML of the known load")
    gains.add_argument("--frame", help="frame the payload is attached to (default: the payload file's frame)")
    gains.add_argument(
        "--config",
        type=Path,
        action=_OneConfig,
        help="ROS 2 parameter YAML (joints, gear ratios, coupling, nominal gains, filters)",
    )
    _add_output(gains, "drive-gains parameter YAML to write")
    gains.add_argument(
        "--no-efficiency",
        action="store_true",
        help="one lossless gain per motor ([Briot2012]); by default each motor's transmission efficiency"
        " ([Swevers2002] eq. (8)) is identified with its gain (overrides estimation.efficiency of --config)",
    )
    _add_unit_checks(gains)

    payload = _add_verb(
        verbs,
        "payload",
        _payload,
        summary="identify a payload's mass, centre of mass and inertia with the robot's model known",
    )
    payload.add_argument("--params", required=True, type=Path, help="parameter YAML of the robot without load")
    payload.add_argument("--data", required=True, type=Path, help="recording CSV with the load (J/current or J/effort)")
    payload.add_argument("--frame", required=True, help="frame the load is attached to (e.g. tool0)")
    payload.add_argument(
        "--config",
        type=Path,
        action=_OneConfig,
        help="ROS 2 parameter YAML: filters, drive gains, recorder.current_polynomial ([Swevers2002] eq. (4))",
    )
    _add_output(payload, "payload YAML to write")
    payload.add_argument(
        "--method",
        choices=("ml", "linear"),
        default="ml",
        help="ml: maximum likelihood, [Swevers2002] eq. (18) (default); linear: the weighted least-squares start",
    )
    payload.add_argument(
        "--no-efficiency",
        action="store_true",
        help="ml without the transmission efficiencies ([Swevers2002] eq. (8), Approach 2)",
    )
    payload.add_argument(
        "--period",
        type=_positive,
        help="the recording is a periodic excitation of this period (s, e.g. 'dynid excite --mode payload'):"
        " averaged over its periods, noise from their scatter ([Swevers2002] §4.3)",
    )
    payload.add_argument("--harmonics", type=_count, default=5, help="with --period: Fourier lines kept (default 5)")
    _add_unit_checks(payload)

    demo = _add_verb(
        verbs,
        "demo",
        _demo,
        summary="the ROS nodes on the simulated 6-axis arm in one process: in-process identification, feedforward",
    )
    demo.add_argument("--out-dir", type=Path, default=Path("demo_output"), help="folder for the outputs")
    demo.add_argument(
        "--duration",
        type=_positive,
        help="process duration of each phase in s (default 45); --offline: excitation duration (default 60)",
    )
    demo.add_argument("--seed", type=int, default=1, help="random seed")
    demo.add_argument("--offline", action="store_true", help="the offline demo: no ROS nodes")
    return parser


def _signal_overrides(arguments: argparse.Namespace) -> dict[str, object]:
    """The signal settings given on the command line, by their setting keys."""
    given = {
        "signal.velocity": arguments.velocity,
        "signal.position_cutoff_hz": arguments.cutoff_hz,
        "signal.stamps": arguments.stamps,
    }
    return {name: value for name, value in given.items() if value is not None}


def _unit_checks(arguments: argparse.Namespace) -> bool:
    return not getattr(arguments, "no_unit_checks", False)


def _api() -> ModuleType:
    """:mod:`dynamic_identification.api`, imported when a verb runs: ``dynid --help`` and a refused argument import
    no numerics (NumPy, SciPy, Pinocchio: 1.3 s of CPU before the parser answered)."""
    from dynamic_identification import api

    return api


def _text() -> ModuleType:
    """:mod:`dynamic_identification.cli_format` (the reports printed), imported when a verb runs, as :func:`_api`."""
    from dynamic_identification import cli_format

    return cli_format


def _forward(verb: Callable[..., T], arguments: argparse.Namespace, names: Sequence[str], **derived: object) -> T:
    """Run the api ``verb`` with the command-line values of ``names`` and the ``derived`` keywords.

    ``names`` are argparse destinations that are also the api's keyword names (``--data-loaded``
    → ``data_loaded``); ``derived`` are the keywords computed from other options.
    """
    return verb(**{name: getattr(arguments, name) for name in names}, **derived)


def _identify(arguments: argparse.Namespace) -> str:
    """Identify the base dynamic parameters ([Gautier2013]: IDIM, OLS or per-joint WLS, essential parameters)
    from a recording CSV (time, J/position, optional J/velocity, J/effort in N·m or J/current in A)
    or a rosbag2 directory (motor currents aligned to the joint-state stamps).
    With robot.loop_closures and robot.actuated_joints in --config, a closed-loop (parallel) robot whose
    --urdf is the opened tree ([Briot2012] §2): the recording holds its actuated joints (or every tree
    joint), the file names the closures.
    """
    with stderr_progress("dynid identify", quiet=arguments.quiet) as progress:
        identified = _forward(
            _api().identify_file,
            arguments,
            ("urdf", "data", "bag", "config", "out", "model", "accept_implausible", "urdf_out", "report"),
            unit_checks=_unit_checks(arguments),
            signal=_signal_overrides(arguments),
            consistency=False if arguments.no_consistency else None,
            validate_data=arguments.validate,
            progress=progress,
        )
    return str(_text().identify_text(identified))


def _predict(arguments: argparse.Namespace) -> str:
    """Write the torques (J/effort, N·m) the identified model predicts for a recording's motion:
    one row per recorded row (time, J/position, J/effort), every segment between gaps to its ends; nan only
    where the model has no prediction (a stretch of fewer than 4 samples between two gaps, a joint identified
    without equations). Filters with the signal settings stored in the parameter file unless --config is given.
    A trajectory of 'dynid excite' gives the torques its planned motion needs, at every row.
    """
    predicted = _forward(
        _api().predict_file,
        arguments,
        ("params", "data", "config", "out", "urdf"),
        unit_checks=_unit_checks(arguments),
    )
    return str(_text().predict_text(predicted))


def _excite(arguments: argparse.Namespace) -> str:
    """Plan an excitation trajectory (Fourier series optimised for the condition number, segmented
    per-joint-fixed, a pick-and-place / square process, or a Fourier series of the last joints optimised
    for a payload's parameters) that keeps the URDF limits with the
    configured margins, and write it as CSV (time, J/position, J/velocity, J/acceleration).
    A closed-loop robot (robot.loop_closures in --config): a Fourier series of the actuated joints that
    keeps the passive joints' limits and a distance to singularities ([Briot2012], [Volkmann2020]).
    """
    with stderr_progress("dynid excite", quiet=arguments.quiet) as progress:
        excited = _api().excite_file(
            urdf=arguments.urdf, config=arguments.config, mode=arguments.mode, out=arguments.out, progress=progress
        )
    return str(_text().excite_text(excited))


def _stream(arguments: argparse.Namespace) -> str:
    """Feed a recording CSV to the in-process estimator (sliding-window WLS with sensitivity reduction,
    [Volkmann2020]) as fast as possible, one update per window.update_period_s of data, and write one JSON
    line per update: time, publishable, reason, parameters kept, removed, condition number before and
    after reduction, relative error, per-joint e*_j, samples, window span (s), seconds spent.
    A stamp more than 1 s earlier than the last restarts the window.
    """
    api = _api()
    from dynamic_identification.core.identification.in_process import load_window_modules

    # Its modules imported, the window's filters among them (the window is built inside stream_file), the stream's
    # work starts: as in the estimator node, the window's updates do not visit the start-up's objects.
    load_window_modules()
    freeze_startup_objects()
    streamed = _forward(
        api.stream_file,
        arguments,
        ("urdf", "data", "bag", "config", "out", "params_out"),
        unit_checks=_unit_checks(arguments),
    )
    return str(_text().stream_text(streamed))


def _gains(arguments: argparse.Namespace) -> str:
    """Identify the motor torque constants (drive gains) and the base parameters together by IDIM-TLS
    ([Briot2012] eq. (11)-(13)) from a recording without load and one with a payload whose inertial
    parameters are known (payload YAML, fixes the scale). Both recordings need J/current columns (A).
    Writes a ROS parameter file whose drive_chain.drive_gains the recorder, the estimator and
    'dynid identify --config' use as they are.
    """
    gains = _forward(
        _api().gains_file,
        arguments,
        ("urdf", "data", "data_loaded", "payload", "frame", "config", "out"),
        efficiency=False if arguments.no_efficiency else None,
        unit_checks=_unit_checks(arguments),
    )
    return str(_text().gains_text(gains))


def _payload(arguments: argparse.Namespace) -> str:
    """Identify the 10 inertial parameters of a load from a recording with it, the robot's identified
    parameters (--params, from 'dynid identify') held fixed as a-priori knowledge: maximum likelihood by
    Levenberg-Marquardt with the friction and transmission efficiencies of the moving motors
    ([Swevers2002] eq. (18), Approach 3). Writes payload YAML {frame, mass_kg, com_m, inertia_kg_m2, std}:
    centre of mass in the frame, inertia about it in frame axes; prints them with their σ.
    """
    identified = _forward(
        _api().payload_file,
        arguments,
        ("params", "data", "frame", "config", "out", "method", "harmonics"),
        efficiency=not arguments.no_efficiency,
        period_s=arguments.period,
        unit_checks=_unit_checks(arguments),
    )
    return str(_text().payload_text(identified))


def _demo(arguments: argparse.Namespace) -> str:
    """What 'make demo' runs: sim_robot, recorder, excitation, estimator and feedforward in one
    process over rclpy topics on loopback (own ROS_DOMAIN_ID). (a) A pick-and-place process is identified
    in-process with sensitivity reduction; (b) feedforward from the published parameters is switched on and
    the process runs again; (c) the arm picks an unknown load, the estimator re-identifies it from 10 s of
    the process (~/identify_payload, [Swevers2002]) and the feedforward adds it. Writes parameters.yaml,
    payload.yaml, unknown_load.yaml, torques.png, tracking.png and report.txt.
    --offline: simulated Fourier excitation identified through 'dynid identify' instead (no ROS).
    """
    # Imported here: the demo needs rclpy, which the other verbs do not.
    from dynamic_identification import demo

    if arguments.offline:
        duration = 60.0 if arguments.duration is None else arguments.duration
        return demo.run(out_dir=arguments.out_dir, duration_s=duration, seed=arguments.seed)
    duration = 45.0 if arguments.duration is None else arguments.duration
    return demo.run_nodes(out_dir=arguments.out_dir, duration_s=duration, seed=arguments.seed, progress=_demo_progress)


def _demo_progress(line: str) -> None:
    """A progress line of a long verb, on stderr so that stdout holds only the report."""
    print(f"dynid demo: {line}", file=sys.stderr, flush=True)


def _interrupt(number: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(number).name)


class _OneLine(logging.Formatter):
    """``dynid VERB: warning: …`` on one bounded line."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def format(self, record: logging.LogRecord) -> str:
        return f"{self.prefix}: warning: {shorten(record.getMessage())}"


def _report_warnings(prefix: str) -> logging.Handler:
    """Warnings of the package and of Python, one line each on stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine(prefix))
    handler.setLevel(logging.WARNING)
    logger = logging.getLogger("dynamic_identification")
    logger.addHandler(handler)
    logger.propagate = False

    def show(message: Warning | str, category: type[Warning], *_args: object, **_kwargs: object) -> None:
        print(f"{prefix}: warning: {category.__name__}: {shorten(str(message))}", file=sys.stderr)

    warnings.showwarning = show
    return handler


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``dynid``; returns the process exit code."""
    arguments = _parser().parse_args(argv)
    prefix = f"dynid {arguments.verb}"
    use_one_blas_thread()
    if arguments.verb in WHOLE_RECORDING_VERBS:
        return_freed_memory()
    handler = _report_warnings(prefix)
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        report = arguments.func(arguments)
    except (IdentificationError, OSError) as error:
        print(f"{prefix}: error: {shorten(str(error))}", file=sys.stderr)
        return BAD_INPUT
    except (MemoryError, OverflowError, RecursionError) as error:
        print(f"{prefix}: error: the input is too large or deep to process ({type(error).__name__})", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt:
        print(f"{prefix}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception as error:
        if os.environ.get("DYNID_DEBUG"):
            raise
        print(
            f"{prefix}: unexpected error: {type(error).__name__}: {shorten(str(error), 300)}"
            " (DYNID_DEBUG=1 shows the traceback; please report it)",
            file=sys.stderr,
        )
        return 1
    finally:
        logging.getLogger("dynamic_identification").removeHandler(handler)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
