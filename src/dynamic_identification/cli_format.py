"""The text ``dynid`` prints for the results of :mod:`dynamic_identification.api`.

The api's verbs return what they found and wrote (frozen dataclasses); this module
turns each into the lines of the report on stdout, so that the api serves other
callers (the demo, benches, scripts) with values rather than text.
"""

from __future__ import annotations

from dynamic_identification.api import IdentifyFileResult, mechanism_summary
from dynamic_identification.core.identification import IdentificationResult
from dynamic_identification.core.identification.report import format_result
from dynamic_identification.io.outcome import Validation, consistency_cost_line, link_lines


def identify_text(identified: IdentifyFileResult) -> str:
    """The report of ``dynid identify``: the closed-loop robot, the passive friction model chosen, the
    identification, its plausibility, each validation, the cost of physical consistency, the bodies
    against the URDF's, the warnings and the files written."""
    mechanism, result = identified.mechanism, identified.result
    joints = mechanism.actuated_joint_names
    lines = mechanism_summary(mechanism, passive_recorded=identified.passive_recorded)
    lines += [f"model: {identified.passive_friction.reason}"] if identified.passive_friction is not None else []
    lines += [format_result(result, joints), _plausibility_line(result)]
    lines += [_validation_line(v, joints) for v in identified.validations]
    lines += [consistency_cost_line(identified.costs)] if identified.costs else []
    lines += link_lines(mechanism.robot.joint_names, identified.links)
    lines += [f"warning: {warning}" for warning in identified.warnings]
    exported = identified.urdf_export
    if exported is not None:
        kept = (
            f"; links zeroed (merged into an identified body): {', '.join(exported.zeroed)}" if exported.zeroed else ""
        )
        lines.append(
            f"URDF with the physically consistent inertias of {', '.join(exported.inertials)} and the friction of"
            f" {len(exported.dynamics)} joints written to {identified.urdf_out}{kept}"
        )
    lines.append(f"parameters written to {identified.out}")
    if identified.report is not None:
        lines.append(f"report written to {identified.report}")
    return "\n".join(lines)


def _plausibility_line(result: IdentificationResult) -> str:
    if result.judged.plausible:
        return "plausibility: ok (torques within the effort limits, physically possible values)"
    return "WARNING: implausible model written (--accept-implausible): " + "; ".join(result.judged.problems)


def _validation_line(validation: Validation, joints: tuple[str, ...]) -> str:
    """One output line per held-out recording: e_j / e*_j on its equations, then against the recorded torques."""
    entry = validation.entry(joints)

    def percent(values: dict[str, float | None]) -> str:
        return ", ".join(f"{joint} {100 * v:.2f}" if v is not None else f"{joint} -" for joint, v in values.items())

    overall = entry["recorded_relative_error"]
    total = f"{overall:.4g}" if overall is not None else "-"
    return (
        f"validation {validation.name}: e*_j [%] on its equations (as above):"
        f" {percent(entry['joint_relative_errors'])};"
        f" against the recorded torques at {entry['predicted']} of {entry['samples']} rows: e*_j [%]"
        f" {percent(entry['recorded_joint_relative_errors'])}, ||predicted - recorded|| / ||recorded|| {total}"
    )
