"""A virtual pendulum bench: synthetic raw logs from a ground-truth servo.

The bench is simulated with the compiled fixed-step kernel at a fine physics
step (default 1 ms); the servo firmware runs at that rate against the last goal
the host sent. The host loop samples at a nominal rate with timestamp jitter,
and the recorded sensors carry realistic effects:

- position: encoder quantisation (2π / counts per turn of the actuator) of the encoder angle q;
- speed: Gaussian noise, then the actuator's velocity resolution (its declaration's
  ``velocity_unit_rpm``: 0.229 rpm on an XL330, 60/4096 rpm on an STS3215);
- load: the duty cycle (voltage servos) or current fraction in ‰, as an integer;
- input_volts: supply with noise at 0.1 V resolution; temp: slowly rising, integer.

A ground truth with docs/model.md §9's extensions records them: with ``supply`` the supply sags
under the motor current (vin = E − R_s·|i|, logged in ``input_volts``), with
``current_limit`` the torque levels off, with ``latency`` the firmware acts on the state
of ``latency_steps`` firmware periods earlier (the physics step here; use
``SensorModel.ideal()`` to make it the log's period).

``SensorModel.ideal()`` switches every effect off and samples exactly at the
processing step, so that a log is exactly the model's rollout (for recovery tests).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from frictionsim import schema, trajectories
from frictionsim.bench_setup import BenchSetup
from frictionsim.layout import SERVO_U
from frictionsim.logs import Log
from frictionsim.params import ParameterSet
from frictionsim.servo_unit import NO_LOG, reported_supply, servo_state
from frictionsim.solvers.fixed_step import servo_step


@dataclass(frozen=True)
class SensorModel:
    """Sensor and timing effects of the recording (see module docstring)."""

    rate: float = 200.0
    jitter: float = 0.1
    start_delay: float = 0.0035
    physics_dt: float = 0.001
    quantize: bool = True
    velocity_noise: float = 0.03
    supply_noise: float = 0.03
    temperature: float = 30.0

    @classmethod
    def ideal(cls, rate: float = 200.0) -> SensorModel:
        """No noise, no quantisation, no jitter; physics at the sample period."""
        return cls(
            rate=rate, jitter=0.0, start_delay=0.0, physics_dt=1.0 / rate, quantize=False,
            velocity_noise=0.0, supply_noise=0.0,
        )


def record(
    params: ParameterSet,
    setup: BenchSetup,
    trajectory: str,
    sensors: SensorModel = SensorModel(),
    seed: int = 0,
    duration: float = trajectories.DURATION,
) -> Log:
    """Record one raw log of ``trajectory`` on the virtual bench with the ground truth ``params``."""
    act = schema.get_actuator(params.actuator)
    target = trajectories.get_trajectory(trajectory)
    rng = np.random.default_rng(seed)
    theta = params.theta()
    vin = act.vin if setup.vin is None else setup.vin
    header = {**setup.header(), "motor": params.actuator, "trajectory": trajectory}
    if act.law == "voltage":
        header["vin"] = vin
    dt = sensors.physics_dt
    # The firmware (and its limiter) runs once per physics step.
    bench = setup.bench(params.actuator, dt)
    period = 1.0 / sensors.rate

    q = v = 0.0
    t_phys = 0.0
    goal, enable = target(0.0)
    entries = []
    t_host = sensors.start_delay
    servo = servo_state(q, v)
    while t_host < duration:
        while t_phys + 0.5 * dt <= t_host:
            q, v = servo_step(servo, goal, q, v, float(enable), NO_LOG, dt, theta, bench)
            t_phys += dt
        # What the servo reports: the control it holds and the supply it last saw.
        supply = reported_supply(servo, theta, bench)
        goal, enable = target(t_host)
        entries.append(_sensors(q, v, servo[SERVO_U], act, supply, goal, enable, t_host,
                                sensors, rng))
        t_host += period * (1.0 + sensors.jitter * float(np.clip(rng.normal(), -3, 3)))
    return Log(header, entries, None)


def _sensors(q, v, u, act, vin, goal, enable, t, sensors: SensorModel, rng) -> dict:
    if sensors.quantize:
        resolution = act.hardware.position_resolution
        position = round(q / resolution) * resolution
        unit = act.hardware.velocity_resolution
        speed = round((v + sensors.velocity_noise * rng.normal()) / unit) * unit
    else:
        position, speed = q, v
    if act.law == "voltage":
        load = round(1000 * u / vin) if enable else 0
    else:
        load = round(1000 * u / act.max_current) if enable else 0
    volts = vin + sensors.supply_noise * rng.normal()
    return {
        "position": position,
        "speed": speed,
        "load": load,
        "input_volts": round(volts, 1) if sensors.quantize else volts,
        "temp": round(sensors.temperature + t / 6.0),
        "timestamp": t,
        "goal_position": goal,
        "torque_enable": bool(enable),
    }
