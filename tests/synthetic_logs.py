"""Helpers for tests: random parameter values inside the schema bounds, synthetic logs."""

from __future__ import annotations

import math
import zlib

import numpy as np

from frictionsim import schema
from frictionsim.logs import Log


def rng_for(*key: str) -> np.random.Generator:
    """A reproducible generator per test case."""
    return np.random.default_rng(zlib.crc32("/".join(key).encode()))


FRICTION_SHAPE = ("dtheta_stribeck", "alpha")


def random_values(
    model: str, actuator: str, rng: np.random.Generator, friction_fraction: float = 1.0
) -> dict[str, float]:
    """Every parameter of (model, actuator), drawn inside its search bounds
    (log-uniformly when the bounds span decades).

    ``friction_fraction`` < 1 draws the friction magnitudes in the lowest part of
    their range only (still inside the bounds): with load-friction coefficients near
    their upper bounds a servo cannot move at all.
    """
    friction = set(schema.get_model(model).friction) - set(FRICTION_SHAPE)
    out = {}
    for name, p in schema.parameters(model, actuator).items():
        upper = p.upper
        if name in friction:
            upper = p.lower + friction_fraction * (p.upper - p.lower)
        if p.lower > 0 and upper / p.lower > 20:  # bounds spanning decades: log-uniform
            out[name] = float(math.exp(rng.uniform(math.log(p.lower), math.log(upper))))
        else:
            out[name] = float(rng.uniform(p.lower, upper))
    return out


def random_header(
    actuator: str, rng: np.random.Generator, values: dict[str, float] | None = None, dt=0.005
) -> dict:
    """A log header for a synthetic bench.

    With ``values`` the tip mass is made large enough that the explicit fixed-step
    scheme stays stable (motor back-EMF damping k_t²/R and firmware gains against
    the inertia): an unstable rollout amplifies rounding differences exponentially
    and would make a tolerance comparison meaningless.
    """
    act = schema.get_actuator(actuator)
    length = float(rng.uniform(0.1, 0.3))
    arm_mass = float(rng.uniform(0.0, 0.3))
    mass = float(rng.uniform(0.2, 1.5))
    if act.law == "voltage":
        kp = float(act.kp * rng.choice([0.5, 1.0, 2.0]))
    else:
        kp = float(rng.uniform(4.0, 200.0))
    header: dict = {"mass": mass, "length": length}
    spelling = rng.integers(3)
    if spelling == 0:
        header["arm_mass"] = arm_mass
    elif spelling == 1:
        header["arm-mass"] = arm_mass
    header["kp"] = kp
    if act.law == "voltage" and rng.random() < 0.5:
        header["vin"] = float(rng.uniform(6.0, 16.0))
    if act.derivative and rng.random() < 0.5:
        header["kd"] = float(rng.uniform(0.0, 64.0))
    if act.law == "current" and rng.random() < 0.5:
        header["damping"] = float(rng.uniform(0.5, 3.0))
    header["motor"] = actuator
    header["trajectory"] = "synthetic"
    header["dt"] = dt
    if values is not None:
        kt, r = values["kt"], values["R"]
        if act.law == "voltage":
            vin = header.get("vin", act.vin)
            gain = kp * act.error_gain * values.get("error_gain_ratio", 1.0)
            damping = kt**2 / r
            stiffness = kt / r * vin * gain
            if act.derivative:  # the D term damps like a stiffness times derivative_time
                damping += stiffness / kp * header.get("kd", act.kd) * values["derivative_time"]
        else:
            d = header.get("damping", act.damping)
            damping = kt**2 / r + kt * d * math.sqrt(kp)
            stiffness = kt * kp
        needed = 2.0 * (damping * dt + stiffness * dt**2)
        have = (arm_mass / 3 if spelling < 2 else 0.0) * length**2 + values["armature"]
        header["mass"] = max(mass, (needed - have) / length**2)
    return header


def synthetic_entries(
    rng: np.random.Generator, n: int, dt: float, with_speed: bool = True, disabled: bool = True
) -> list[dict]:
    """``n`` entries: a sine plus a step as goal, a noisy lagging 'measured' position,
    and (``disabled``) a window with the torque off."""
    q0 = float(rng.uniform(-0.5, 0.5))
    amp = float(rng.uniform(0.2, 1.2))
    freq = float(rng.uniform(0.5, 3.0))
    jump = float(rng.uniform(-0.8, 0.8))
    off_a, off_b = (n // 3, n // 2) if disabled else (n, n)
    entries = []
    for k in range(n):
        t = k * dt
        goal = amp * math.sin(2 * math.pi * freq * t) + (jump if k >= n // 4 else 0.0)
        lag = amp * math.sin(2 * math.pi * freq * (t - 0.02))
        position = q0 * math.exp(-t / 0.05) + 0.9 * lag + float(rng.normal(0, 0.003))
        entry = {"position": position}
        if with_speed:
            entry["speed"] = float(rng.uniform(-1.0, 1.0))
        entry["goal_position"] = goal
        entry["torque_enable"] = not (off_a <= k < off_b)
        entry["timestamp"] = t
        entries.append(entry)
    return entries


def synthetic_log(
    actuator: str,
    rng: np.random.Generator,
    values: dict[str, float] | None = None,
    n: int = 300,
    dt: float = 0.005,
    with_speed: bool = True,
    disabled: bool = True,
) -> Log:
    header = random_header(actuator, rng, values, dt)
    return Log(header, synthetic_entries(rng, n, dt, with_speed, disabled))
