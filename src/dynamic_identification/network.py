"""The DDS network rule of every ROS process this repository starts: loopback only, a domain of its own.

Discovery stays on the loopback interface (``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``,
and ``ROS_LOCALHOST_ONLY=1`` for Humble) in a ROS domain derived from the process id,
within 1..101: the ROS 2 documentation recommends domain IDs 0-101 on Linux (higher ones
can collide with the ephemeral ports of other programs), and 0, everyone's default, is
left alone. Tests, the demo, benchmarks and the Makefile all use this one rule.
"""

from __future__ import annotations

import os

FIRST_DOMAIN_ID = 1
LAST_DOMAIN_ID = 101
"""Domains the rule picks from (inclusive): the range the ROS 2 docs call safe on Linux, without 0."""


def process_domain_id(pid: int | None = None) -> int:
    """The ROS domain of process ``pid`` (default: this one), in ``FIRST_DOMAIN_ID..LAST_DOMAIN_ID``."""
    number = os.getpid() if pid is None else pid
    return FIRST_DOMAIN_ID + number % (LAST_DOMAIN_ID - FIRST_DOMAIN_ID + 1)


def network_environment(domain_id: int | None = None) -> dict[str, str]:
    """The variables of the rule for ``domain_id`` (default: :func:`process_domain_id`)."""
    domain = process_domain_id() if domain_id is None else domain_id
    return {
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
        "ROS_LOCALHOST_ONLY": "1",
        "ROS_DOMAIN_ID": str(domain),
    }
