"""The report table of an identification, the same for every regression model (``dynid identify``, the demo)."""

from __future__ import annotations

import numpy as np

from dynamic_identification.core.identification.solve import IdentificationResult


def _consistency_lines(result: IdentificationResult) -> list[str]:
    """What physical consistency ([Wensing2018]) did to the published values; nothing when it was not asked for."""
    physical = result.consistency
    if physical is None:
        return []
    if physical.estimate is None:
        return [f"physical consistency: not enforced ({physical.error}); the values are the unconstrained estimate"]
    estimate = physical.estimate
    if estimate.solver_status == "not needed":
        return ["physical consistency ([Wensing2018]): the unconstrained estimate is physically consistent"]
    active = ", ".join(estimate.active) or "none"
    errors = (
        f"relative torque error of the equations ||rho||/||Y|| {estimate.relative_error_unconstrained:.4g}"
        f" unconstrained, {estimate.relative_error:.4g} consistent"
        + _ratio(estimate.relative_error, estimate.relative_error_unconstrained)
    )
    if estimate.unconstrained_consistent:
        # [Lee2020]'s prior moved a consistent estimate toward the URDF where the data are weak.
        return [
            "physical consistency ([Wensing2018]): the unconstrained estimate is physically consistent; the values"
            f" are the consistent model nearest to the data and the URDF ([Lee2020]), {estimate.shift_sigma:.3g} σ of"
            f" eq. (18) from it; {errors}"
        ]
    return [
        "physical consistency ([Wensing2018]): the values are the nearest physically consistent model,"
        f" {estimate.shift_sigma:.3g} σ of eq. (18) from the unconstrained estimate; {errors}; at the bound: {active}"
    ]


def _ratio(after: float, before: float) -> str:
    """`` (x1.033)``: how many times the error grew; empty when ``before`` is zero."""
    return f" (x{after / before:.3f})" if before > 0.0 else ""


def format_result(result: IdentificationResult, joints: tuple[str, ...], *, dropped: str = "") -> str:
    """Human-readable table of the identified parameters and the quality figures.

    One row per kept base parameter (name, value, ``%σ``, the standard parameters it
    regroups), then what was removed and why, the data used (with ``dropped``: what reading
    the recording dropped, one phrase, on the samples line), the condition number and
    ``‖ρ‖/‖Y‖`` of the model's own equations, and the per-joint errors ``e_j``, ``e*_j`` of
    the joint torques ([Volkmann2020] eq. (11)-(12)).
    """
    estimate = result.estimate
    width = max(9, *(len(name) for name in result.names)) if result.names else 9
    observations = result.observations
    errors = result.judged.joint_errors
    lines = [
        f"regression model {result.model} ([DirectDrive2012] §3): {len(result.names)} of {result.base.count}"
        " base parameters",
        f"{'parameter':<{width}}  {'value':>13}  {'%σ':>8}  expression",
    ]
    for name, value, std, expression in zip(
        result.names, estimate.parameters, estimate.relative_std_percent, result.expressions, strict=True
    ):
        lines.append(f"{name:<{width}}  {value:>13.6g}  {std:>8.2f}  {expression}")
    lines += [
        "",
        f"kept {len(result.names)} of {result.base.count} base parameters; removed: "
        + (", ".join(f"{name} ({why})" for name, why in result.removed) or "none"),
        *(f"signal: {reason}" for reason in observations.signal_reasons),
        f"samples {observations.input_samples} ({f'read: {dropped}; ' if dropped else ''}duplicates dropped"
        f" {observations.duplicates_dropped},"
        f" segments {observations.segments}), rate {observations.rate_hz:.6g} Hz,"
        f" decimation {observations.decimation} -> {observations.observation_matrix.shape[0]} equations per"
        " equation column",
        f"condition number {estimate.condition_number:.4g} ({result.condition_number_full:.4g} before reduction),"
        f" relative error of the {result.model} equations ||rho||/||Y|| {estimate.relative_error:.4g}",
        _uncertainty_line(result),
        *_consistency_lines(result),
        "per-joint torque errors e_j [N·m] / e*_j [%]: "
        + ", ".join(
            f"{joint} {e:.3g}/{100 * r:.2f}" if np.isfinite(e) else f"{joint} no equation (never moved)"
            for joint, e, r in zip(joints, errors.errors, errors.relative_errors, strict=True)
        ),
    ]
    return "\n".join(lines)


def _uncertainty_line(result: IdentificationResult) -> str:
    """How the %σ of the table were computed, and how much the white σ would have understated them."""
    robust = result.uncertainty
    if robust is None:
        why = f" ({result.uncertainty_fallback})" if result.uncertainty_fallback else ""
        return f"%σ: [Gautier2013] eq. (18), residuals assumed independent in time{why}"
    inflation = robust.inflation[np.isfinite(robust.inflation)]
    median = f"; median σ / σ of eq. (18): {float(np.median(inflation)):.3g}" if inflation.size else ""
    return (
        f"%σ: autocorrelation-consistent (Newey & West 1987, Bartlett bandwidth {robust.bandwidth} rows,"
        f" fixed-b widening of Kiefer & Vogelsang 2005){median}"
    )


__all__ = ["format_result"]
