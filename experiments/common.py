"""Helpers shared by the commands: loading inputs, warnings."""

from __future__ import annotations

import sys

from frictionsim.logs import Log


def warn_motor_mismatch(logs: list[Log], actuator: str) -> None:
    """Warn (stderr) about logs whose informative ``motor`` field names another actuator."""
    for log in logs:
        motor = log.header.get("motor")
        if motor is not None and motor != actuator:
            print(
                f"warning: {log.name} was recorded with motor {motor!r}; "
                f"simulating it as {actuator!r} (from the parameter file)",
                file=sys.stderr,
            )
