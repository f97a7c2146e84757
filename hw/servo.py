"""What the bench recorder needs from a servo, whatever its bus.

Angles are radians, counter-clockwise positive, 0 where the bench arm hangs
down (the centre of the encoder range); velocities rad/s; voltages V;
temperatures °C. ``load`` is what the servo reports as its load or PWM, in its
own unit (logged as recorded; the simulator does not use it).
"""

from __future__ import annotations

from typing import Protocol

from frictionsim.errors import FrictionsimError


class ServoError(FrictionsimError, RuntimeError):
    """A servo that did not answer, answered garbage, or reported an error."""


class BenchServo(Protocol):
    """One servo on a bench, already opened."""

    motor: str

    def configure(self, kp: float) -> None:
        """Position-control mode with firmware proportional gain ``kp`` (its own units)."""

    def torque(self, enable: bool) -> None:
        """Enable or disable the motor torque."""

    def goal(self, position: float) -> None:
        """Send a goal position (rad)."""

    def read(self) -> dict:
        """Present state: ``position`` (rad), ``speed`` (rad/s), ``load``, ``input_volts`` (V),
        ``temp`` (°C)."""

    def close(self) -> None:
        """Release the bus."""

    def __enter__(self) -> BenchServo:
        """The servo itself; leaving the ``with`` block makes it safe (torque off) and closes it."""

    def __exit__(self, *exc: object) -> None:
        """Torque off (as far as the servo still answers), then :meth:`close`."""
