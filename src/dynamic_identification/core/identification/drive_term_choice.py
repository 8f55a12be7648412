"""Which drive-chain terms an identification publishes: the data choose each kind the configuration offers.

The drive terms of [Gautier2013] eq. (3) (rotor inertia ``Ia``, viscous ``Fv`` and Coulomb ``Fc``
friction, torque offset ``off``; ``drive_terms``, all on by default) add one unknown per joint and
kind. By the house rule of :mod:`~dynamic_identification.core.estimation.model_selection` a kind is
published only when the data choose it: the Wald test of "this kind is zero on every controlled joint"
with the estimate's covariance (autocorrelation-consistent by default) rejects at
:data:`~dynamic_identification.core.estimation.model_selection.SIGNIFICANCE`. A kind the test does not
reject is dropped and the recording identified once more without it; :class:`DriveTermChoice` says which
and why in one line.

Only the kind's base parameters of its own are tested: one whose regrouping mixes in other standard
parameters (``Ia1`` with ``ZZ1`` on a vertical first axis) does not determine the kind alone. A kind
with no such parameter is not determined by the data, and it is kept as offered: dropping it would
change the regrouped parameters it is part of, not the torques the model predicts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace

import numpy as np

from dynamic_identification.core.errors import RankDeficientError
from dynamic_identification.core.estimation.model_selection import WaldTest, unit_restrictions, wald_test
from dynamic_identification.core.identification.solve import IdentificationResult
from dynamic_identification.core.mechanism.robot import DRIVE_PARAMETER_NAMES, DriveTerms
from dynamic_identification.core.mechanism.seam import Mechanism

DRIVE_TERM_FIELDS: dict[str, str] = dict(
    zip(DRIVE_PARAMETER_NAMES, (flag.name for flag in fields(DriveTerms)), strict=True)
)
"""The :class:`~dynamic_identification.core.mechanism.robot.DriveTerms` flag of each kind of
:data:`~dynamic_identification.core.mechanism.robot.DRIVE_PARAMETER_NAMES` (both in the same order)."""

DRIVE_TERM_WORDS: dict[str, str] = {
    "Ia": "rotor inertias",
    "Fv": "viscous friction",
    "Fc": "Coulomb friction",
    "off": "torque offsets",
}
"""What each kind is, in the one-line reason."""


@dataclass(frozen=True)
class DriveTermTest:
    """The test of one drive-term kind: its base parameters of its own and the Wald test of "all zero".

    ``test`` is ``None`` when the kind has no base parameter of its own (not determined alone).
    """

    kind: str
    names: tuple[str, ...]
    test: WaldTest | None

    @property
    def chosen(self) -> bool:
        """The kind is kept: not determined alone (nothing to choose), or significantly non-zero."""
        return self.test is None or self.test.significant


@dataclass(frozen=True)
class DriveTermChoice:
    """The drive terms :func:`choose_drive_terms` took among those offered, and why.

    Attributes
    ----------
    offered, terms
        The drive terms offered (the configuration's) and those chosen.
    tests
        One test per offered kind, in :data:`DRIVE_PARAMETER_NAMES` order.
    """

    offered: DriveTerms
    terms: DriveTerms
    tests: tuple[DriveTermTest, ...]

    @property
    def dropped(self) -> tuple[str, ...]:
        """The kinds offered and not chosen."""
        return tuple(test.kind for test in self.tests if not test.chosen)

    @property
    def reason(self) -> str:
        """One line: which kinds were dropped and each one's test, or that every offered kind was kept."""
        if not self.dropped:
            kept = ", ".join(self.offered.names) or "none offered"
            return f"drive terms {kept}: each explains the data significantly better or is not determined alone"
        parts = []
        for test in self.tests:
            if not test.chosen and test.test is not None:
                words = f"{DRIVE_TERM_WORDS[test.kind]} ({', '.join(test.names)})"
                parts.append(test.test.describe(f"no {words}"))
        return (
            f"no {', '.join(DRIVE_TERM_WORDS[kind] for kind in self.dropped)}: they do not explain the data"
            f" significantly better ({'; '.join(parts)})"
        )


def kind_parameters(mechanism: Mechanism, result: IdentificationResult, kind: str) -> tuple[str, ...]:
    """The kept base parameters of ``result`` that are drive-term ``kind`` of a controlled joint alone (their
    regrouping has no other standard parameter)."""
    base = result.base
    own = {f"{kind}{int(j) + 1}" for j in mechanism.actuated}
    columns = np.array([name in own for name in base.standard_names])
    names = []
    for name in result.names:
        row = base.regrouping[base.names.index(name)]
        if name in own and not np.any(row[~columns]):
            names.append(name)
    return tuple(names)


def least_squares_values(result: IdentificationResult) -> np.ndarray:
    """The least-squares estimate of ``result``'s kept base parameters: the unconstrained one when the published
    values are the physically consistent ones (the Wald test is about the data's estimate, not a projection)."""
    physical = result.consistency
    if physical is None or physical.estimate is None:
        return result.estimate.parameters
    consistent = physical.estimate
    by_column = dict(zip(consistent.kept.tolist(), consistent.unconstrained.tolist(), strict=True))
    return np.array([by_column[int(i)] for i in result.base.subset(result.names)])


def choose_drive_terms(mechanism: Mechanism, offered: DriveTerms, result: IdentificationResult) -> DriveTermChoice:
    """The drive terms to publish among ``offered``, from the identification ``result`` with all of them
    (module docstring)."""
    values, covariance = least_squares_values(result), result.estimate.covariance
    tests = []
    for kind in offered.names:
        names = kind_parameters(mechanism, result, kind)
        test = None
        if names:
            restrictions = unit_restrictions(values.size, [result.names.index(name) for name in names])
            try:
                test = wald_test(values, covariance, restrictions)
            except RankDeficientError:
                test = None
        tests.append(DriveTermTest(kind, names, test))
    dropped = {DRIVE_TERM_FIELDS[test.kind]: False for test in tests if not test.chosen}
    return DriveTermChoice(offered=offered, terms=replace(offered, **dropped), tests=tuple(tests))


def identify_choosing_drive_terms(
    identify: Callable[[DriveTerms], IdentificationResult],
    mechanism: Mechanism,
    offered: DriveTerms,
    *,
    choose: bool = True,
) -> tuple[DriveTerms, IdentificationResult, DriveTermChoice | None]:
    """Identify with the ``offered`` drive terms and, with ``choose``, when the data drop a kind
    (:func:`choose_drive_terms`), once more without it. ``identify`` identifies the recording with given drive
    terms. Returns the chosen terms, their identification and the choice (``None`` without ``choose``: every
    kind offered is published)."""
    result = identify(offered)
    if not choose:
        return offered, result, None
    choice = choose_drive_terms(mechanism, offered, result)
    if not choice.dropped:
        return offered, result, choice
    return choice.terms, identify(choice.terms), choice
