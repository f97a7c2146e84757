"""A deliberately naive plain-Python reference of docs/model.md §1–§5.

Written from the SPEC text only: no import of the package's kernels, layout or
schema. Parameters are plain dictionaries keyed by the parameter-file names;
the bench is read straight from a log's header dictionary. Slow and obvious on
purpose, so that the compiled kernels can be checked against it.
"""

from __future__ import annotations

import math

G = -9.80665  # docs/model.md §1: g is negative, part of the contract

MODELS = ("m1", "m2", "m3", "m4", "m5", "m6")

# docs/model.md §2: the friction parameters of each model.
_M1 = ("friction_base", "friction_viscous")
_M3 = ("friction_base", "load_friction_base", "friction_viscous")
_M5 = (
    "friction_base",
    "friction_stribeck",
    "load_friction_motor",
    "load_friction_external",
    "load_friction_motor_stribeck",
    "load_friction_external_stribeck",
    "dtheta_stribeck",
    "alpha",
    "friction_viscous",
)
MODEL_PARAMETERS: dict[str, tuple[str, ...]] = {
    "m1": _M1,
    "m2": _M1 + ("friction_stribeck", "dtheta_stribeck", "alpha"),
    "m3": _M3,
    "m4": _M3 + ("friction_stribeck", "load_friction_stribeck", "dtheta_stribeck", "alpha"),
    "m5": _M5,
    "m6": _M5 + ("load_friction_motor_quad", "load_friction_external_quad"),
}

# docs/model.md §3: firmware constants and log defaults of each actuator.
_XL330_GAIN = (4096 / (2 * math.pi)) / (256 * 885)
ACTUATORS: dict[str, dict] = {
    "mx64": dict(law="voltage", vin=15.0, kp=32.0, error_gain=0.158, max_pwm=0.9625),
    "mx106": dict(law="voltage", vin=15.0, kp=32.0, error_gain=0.158, max_pwm=0.9625),
    "xl320": dict(law="voltage", vin=7.5, kp=32.0, error_gain=0.05048199, max_pwm=1.0),
    "xl330": dict(law="voltage", vin=7.5, kp=400.0, error_gain=_XL330_GAIN, max_pwm=1.0),
    "xl430": dict(law="voltage", vin=11.1, kp=800.0, error_gain=_XL330_GAIN, max_pwm=1.0),
    "sts3215": dict(
        law="voltage", vin=7.4, kp=32.0, error_gain=0.166, max_pwm=0.97, limiter=True
    ),
    # docs/model.md §12: the Feetech position loop with its D term and dead band
    "sts3215_12v": dict(
        law="voltage", vin=12.0, kp=32.0, error_gain=0.16489, max_pwm=0.97, limiter=True,
        kd=32.0, dead_band=2 * math.pi / 4096,
    ),
    # and at 7.4 V (the bench sts3215's supply and gain)
    "sts3215_7v4": dict(
        law="voltage", vin=7.4, kp=32.0, error_gain=0.166, max_pwm=0.97, limiter=True,
        kd=32.0, dead_band=2 * math.pi / 4096,
    ),
    "erob80_100": dict(law="current", damping=2.0, max_current=12.0, max_voltage=48.0),
    "erob80_50": dict(law="current", damping=1.0, max_current=12.0, max_voltage=48.0),
}
ACTUATOR_PARAMETERS: dict[str, tuple[str, ...]] = {
    name: ("kt", "R", "armature")
    + (("max_velocity", "error_gain_ratio") if spec.get("limiter") else ())
    + (("derivative_time",) if "kd" in spec else ())
    for name, spec in ACTUATORS.items()
}


def sign(x: float) -> int:
    """numpy's sign on a scalar: -1, 0 or 1 (sign(0) = 0)."""
    if x > 0:
        return 1
    if x < 0:
        return -1
    return 0


def clip(x: float, lo: float, hi: float) -> float:
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


# --------------------------------------------------------------------------- §1


def bench_from_header(header: dict, actuator: str) -> dict:
    """The pendulum and firmware settings of one log, for one actuator (docs/model.md §1, §3)."""
    act = ACTUATORS[actuator]
    if "arm_mass" in header:
        arm_mass = header["arm_mass"]
    elif "arm-mass" in header:
        arm_mass = header["arm-mass"]
    else:
        arm_mass = 0.0
    bench = {
        "mass": header["mass"],
        "length": header["length"],
        "arm_mass": arm_mass,
        "kp": header["kp"],
        "dt": header["dt"],
    }
    if act["law"] == "voltage":
        bench["vin"] = header["vin"] if "vin" in header else act["vin"]
        bench["kd"] = header["kd"] if "kd" in header else act.get("kd", 0.0)
    else:
        bench["damping"] = header["damping"] if "damping" in header else act["damping"]
    return bench


def load_inertia(bench: dict) -> float:
    m, L, m_arm = bench["mass"], bench["length"], bench["arm_mass"]
    return m * L**2 + (m_arm / 3) * L**2


def gravity_torque(q: float, bench: dict) -> float:
    m, L, m_arm = bench["mass"], bench["length"], bench["arm_mass"]
    return (m + m_arm / 2) * G * L * math.sin(q)


# --------------------------------------------------------------------------- §2


def stribeck(v: float, v_s: float, alpha: float) -> float:
    return math.exp(-(abs(v / v_s) ** alpha))


def budget(model: str, p: dict, v: float, tau_m: float, tau_e: float) -> tuple[float, float]:
    """(F, K_v) of docs/model.md §2's table, one branch per model, named parameters."""
    Kc = p["friction_base"]
    Kv = p["friction_viscous"]
    if model == "m1":
        return Kc, Kv
    if model == "m3":
        return Kc + p["load_friction_base"] * abs(tau_e - tau_m), Kv
    s = stribeck(v, p["dtheta_stribeck"], p["alpha"])
    Kcs = p["friction_stribeck"]
    if model == "m2":
        return Kc + s * Kcs, Kv
    if model == "m4":
        Kl = p["load_friction_base"]
        Kls = p["load_friction_stribeck"]
        load = abs(tau_e - tau_m)
        return Kc + Kl * load + s * (Kcs + Kls * load), Kv
    Ke = p["load_friction_external"]
    Km = p["load_friction_motor"]
    Kes = p["load_friction_external_stribeck"]
    Kms = p["load_friction_motor_stribeck"]
    F = Kc + abs(Ke * tau_e - Km * tau_m) + s * (Kcs + abs(Kes * tau_e - Kms * tau_m))
    if model == "m5":
        return F, Kv
    if model == "m6":
        Q = 0.0
        if sign(tau_e) != sign(tau_m):
            if abs(tau_e) < abs(tau_m):
                Q = p["load_friction_external_quad"] * tau_e**2
            elif abs(tau_e) > abs(tau_m):
                Q = p["load_friction_motor_quad"] * tau_m**2
        return F + s * Q, Kv
    raise ValueError(model)


# --------------------------------------------------------------------------- §3


def control(
    actuator: str, p: dict, bench: dict, q_target: float, q: float, v: float, q_smooth: float,
    e_prev: float = math.nan,
) -> tuple[float, float, float]:
    """Firmware: (u, new q_smooth, error); u in V (voltage law) or A (current law). e_prev:
    the error of the last period (NaN before the first: no D term)."""
    act = ACTUATORS[actuator]
    kp = bench["kp"]
    if act["law"] == "voltage":
        error_gain = act["error_gain"]
        target = q_target
        if act.get("limiter"):
            w = p["max_velocity"]
            dt = bench["dt"]
            q_smooth = clip(q_target, q_smooth - w * dt, q_smooth + w * dt)
            target = q_smooth
            error_gain = error_gain * p["error_gain_ratio"]
        e = target - q
        drive = kp * e
        if "kd" in act:  # §12: the D term on the error's rate, and the dead band
            rate = (e - e_prev) / bench["dt"] if math.isfinite(e_prev) else 0.0
            drive = drive + bench["kd"] * p["derivative_time"] * rate
            if abs(e) <= act["dead_band"]:
                drive = 0.0
        duty = clip(error_gain * drive, -act["max_pwm"], act["max_pwm"])
        return bench["vin"] * duty, q_smooth, e
    d = bench["damping"]
    imax = act["max_current"]
    i = clip(kp * (q_target - q) - d * math.sqrt(kp) * v, -imax, imax)
    return i, q_smooth, q_target - q


def motor(actuator: str, p: dict, u: float, enable: float, v: float) -> float:
    act = ACTUATORS[actuator]
    kt, R = p["kt"], p["R"]
    if act["law"] == "voltage":
        V = u
        return enable * (kt * V / R - kt**2 * v / R)
    vmax = act["max_voltage"]
    return clip(enable * kt * u, -kt * vmax / R - kt**2 * v / R, kt * vmax / R - kt**2 * v / R)


# --------------------------------------------------------------------------- §4


def step(
    model: str, actuator: str, p: dict, bench: dict,
    q: float, v: float, u: float, enable: float, dt: float,
) -> tuple[float, float]:
    q_e = q + p["q_offset"]
    tau_e = gravity_torque(q_e, bench)
    tau_m = motor(actuator, p, u, enable, v)
    F, Kv = budget(model, p, v, tau_m, tau_e)
    inertia = load_inertia(bench) + p["armature"]
    tau = tau_m + tau_e
    tau_stop = (inertia / dt) * v + tau
    tau_f = -sign(tau_stop) * min(abs(tau_stop), F + Kv * abs(v))
    a = (tau + tau_f) / inertia
    v = clip(v + a * dt, -100.0, 100.0)
    q = q + v * dt + 0.5 * a * dt**2
    return q, v


# --------------------------------------------------------------------------- §5


def rollout(
    model: str, actuator: str, p: dict, header: dict, entries: list[dict]
) -> tuple[list[float], list[float], float]:
    """Simulated positions and velocities at every entry, and the MAE (rad)."""
    bench = bench_from_header(header, actuator)
    dt = header["dt"]
    q = entries[0]["position"]
    v = entries[0].get("speed", 0.0)
    q_smooth = entries[0]["position"]
    e_prev = math.nan
    qs: list[float] = []
    vs: list[float] = []
    for entry in entries:
        qs.append(q)
        vs.append(v)
        u, q_smooth, e_prev = control(actuator, p, bench, entry["goal_position"], q, v, q_smooth,
                                      e_prev)
        enable = 1.0 if entry["torque_enable"] else 0.0
        q, v = step(model, actuator, p, bench, q, v, u, enable, dt)
    mae = sum(abs(qk - e["position"]) for qk, e in zip(qs, entries)) / len(entries)
    return qs, vs, mae
