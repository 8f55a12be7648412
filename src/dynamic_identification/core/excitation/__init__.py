"""Excitation: trajectories the robot follows while it is identified, and their safety.

* :mod:`.fourier` — periodic finite Fourier series ([Volkmann2020] eq. (6), [Swevers2002] eq. (15)-(17));
* :mod:`.trajectory` — sampled trajectories, what is streamed and written;
* :mod:`.safety` — the one limit check every commanded motion passes, and C² ramps;
* :mod:`.optimisation` — Fourier coefficients of the controlled joints optimised for the condition number
  ([Volkmann2020] §II.C), one search for serial and closed-loop robots ([Briot2012] §2);
* :mod:`.segmented` — segment ``k`` holds joints ``1..k-1`` still ([Gautier2013] §IV.B);
* :mod:`.process` — pick-and-place and square process trajectories ([Volkmann2020] §III.B);
* :mod:`.settings`, :mod:`.plan` — from configured settings to a checked trajectory.
* :mod:`.constraints` — what a mechanism's motion must keep (passive joints, singularities, torques,
  self-collision), what a candidate design uses of it, and the one check of the motion its controller executes.
"""

from typing import TYPE_CHECKING

from dynamic_identification.core.exports import lazy_exports

if TYPE_CHECKING:
    from dynamic_identification.core.excitation.fourier import (
        FourierTrajectory,
        random_fourier_trajectory,
    )
    from dynamic_identification.core.excitation.optimisation import (
        ExcitationDesign,
        Workspace,
        condition_number,
        fit_to_limits,
        optimise_fourier,
        random_fourier,
    )
    from dynamic_identification.core.excitation.process import (
        default_process_areas,
        inverse_kinematics,
        pick_and_place,
        pick_and_place_targets,
        square,
        square_corners,
    )
    from dynamic_identification.core.excitation.safety import (
        JointLimits,
        LimitViolationError,
        check_trajectory,
        limit_usage,
        ramp,
        stop_ramp,
    )
    from dynamic_identification.core.excitation.segmented import (
        Segment,
        SegmentedTrajectory,
        default_segmented_trajectory,
        fit_motion,
        segmented_trajectory,
    )
    from dynamic_identification.core.excitation.trajectory import (
        SampledTrajectory,
        concatenate,
        sample,
    )

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "fourier": ("FourierTrajectory", "random_fourier_trajectory"),
        "optimisation": (
            "ExcitationDesign",
            "Workspace",
            "condition_number",
            "fit_to_limits",
            "optimise_fourier",
            "random_fourier",
        ),
        "process": (
            "default_process_areas",
            "inverse_kinematics",
            "pick_and_place",
            "pick_and_place_targets",
            "square",
            "square_corners",
        ),
        "safety": ("JointLimits", "LimitViolationError", "check_trajectory", "limit_usage", "ramp", "stop_ramp"),
        "segmented": (
            "Segment",
            "SegmentedTrajectory",
            "default_segmented_trajectory",
            "fit_motion",
            "segmented_trajectory",
        ),
        "trajectory": ("SampledTrajectory", "concatenate", "sample"),
    },
)
