"""The physics behind the virtual servo: firmware, motor, friction and pendulum in real time.

The joint is advanced in steps of ``physics_dt`` by
:func:`frictionsim.solvers.fixed_step.servo_step`: a control period of the servo bank (the
firmware runs at that rate on the last goal received) and one fixed step of the bench.
Reads return what a real servo reports: the encoder angle quantised to its resolution with
a little noise, and the velocity at the servo's velocity resolution.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from frictionsim import layout, plausibility, schema
from frictionsim.errors import ConfigurationError
from frictionsim.firmware import firmware_settings
from frictionsim.params import ParameterSet
from frictionsim.servo_unit import NO_LOG, reported_supply, servo_state
from frictionsim.solvers.fixed_step import servo_step

MAX_PHYSICS_DT = 0.01  # s: a servo's firmware runs at 1 kHz or so; 100 Hz is already coarse
#: Finer physics could not keep up with real time (a step costs about a microsecond in Python).
MIN_PHYSICS_DT = 1e-5


class SimulatedJoint:
    """A servo on a pendulum bench, simulated as time passes on ``clock``."""

    def __init__(self, params: ParameterSet, mass: float, length: float, arm_mass: float = 0.0,
                 vin: float | None = None, physics_dt: float = 0.001, noise: float = 0.0005,
                 seed: int = 0, clock: Callable[[], float] = time.perf_counter):
        act = schema.get_actuator(params.actuator)
        vin = act.vin if vin is None else vin
        for name, value in (("mass", mass), ("length", length), ("arm_mass", arm_mass)):
            plausibility.HEADER[name].check(value, name, ConfigurationError)
        if act.law == "voltage":
            plausibility.HEADER["vin"].check(vin, "vin", ConfigurationError)
        if not (math.isfinite(physics_dt) and MIN_PHYSICS_DT <= physics_dt <= MAX_PHYSICS_DT):
            raise ConfigurationError(f"physics_dt = {physics_dt!r} s must be in [{MIN_PHYSICS_DT:g}, "
                                     f"{MAX_PHYSICS_DT:g}] (the firmware and physics period; a finer one "
                                     "cannot keep up with real time)")
        if not (math.isfinite(noise) and 0 <= noise <= 1.0):
            raise ConfigurationError(f"noise = {noise!r} rad must be in [0, 1] (a standard deviation)")
        self.params = params
        self.theta = params.theta()
        self.bench = firmware_settings(act, {"mass": mass, "length": length,
                                             "arm_mass": arm_mass, "kp": act.kp, "vin": vin},
                                       physics_dt)
        self.hardware = act.hardware
        self.physics_dt = physics_dt
        self.noise = noise
        self.rng = np.random.default_rng(seed)
        self.clock = clock
        self.t = clock()
        self.q = 0.0
        self.v = 0.0
        self.goal = 0.0
        self.enable = 0.0
        # The firmware's state (limiter, measurement history, supply current): the servo unit's.
        self.servo = servo_state(0.0, 0.0)
        # Compile (or load from cache) the kernels now: a first request must not wait for Numba.
        servo_step(self.servo, 0.0, 0.0, 0.0, 0.0, NO_LOG, physics_dt, self.theta, self.bench)
        self.servo = servo_state(0.0, 0.0)

    @property
    def u(self) -> float:
        """The control the firmware holds (V or A)."""
        return float(self.servo[layout.SERVO_U])

    @property
    def vin(self) -> float:
        """The supply voltage at present (V): constant, or sagging under the motor current
        with the ``supply`` extension."""
        return float(reported_supply(self.servo, self.theta, self.bench))

    @property
    def bench_kp(self) -> float:
        """The firmware proportional gain in use (raw register units)."""
        return float(self.bench[layout.KP])

    @property
    def max_control(self) -> float:
        """Saturation of the control signal (V or A), to report the load as a fraction."""
        act = schema.get_actuator(self.params.actuator)
        return act.max_pwm * self.vin if act.law == "voltage" else act.max_current

    def set_kp(self, kp: float) -> None:
        self.advance()
        self.bench[layout.KP] = kp

    def set_goal(self, position: float) -> None:
        self.advance()
        self.goal = position

    def set_torque(self, enable: bool) -> None:
        self.advance()
        self.enable = 1.0 if enable else 0.0

    def advance(self) -> None:
        """Integrate up to the clock's present time."""
        now = self.clock()
        n = int((now - self.t) / self.physics_dt + 1e-9)
        for _ in range(min(n, 100_000)):
            self.q, self.v = servo_step(self.servo, self.goal, self.q, self.v, self.enable,
                                        NO_LOG, self.physics_dt, self.theta, self.bench)
        self.t = now if n > 100_000 else self.t + n * self.physics_dt

    def position_reading(self, resolution: float | None = None) -> float:
        """Encoder angle (rad) with noise of ``noise`` rad, quantised to ``resolution`` rad
        (default: one count of the actuator's encoder)."""
        self.advance()
        resolution = resolution or self.hardware.position_resolution
        noisy = self.q + self.noise * self.rng.normal() if self.noise else self.q
        return round(noisy / resolution) * resolution

    def velocity_reading(self, resolution: float | None = None) -> float:
        """Velocity (rad/s) quantised to ``resolution`` rad/s (default: one unit of the
        actuator's present-velocity register)."""
        self.advance()
        resolution = resolution or self.hardware.velocity_resolution
        return round(self.v / resolution) * resolution

    def load_reading(self) -> float:
        """The control signal as a fraction of its saturation, in [−1, 1] (0 with torque off)."""
        self.advance()
        return self.enable * self.u / self.max_control if self.max_control else 0.0

