"""The servo bank as array code: N environments × J servos in torch or JAX, float32 or float64.

A port of :mod:`frictionsim.servo_bank` (the Numba bank, which it follows and is tested
against: ``tests/test_array_bank.py`` holds it to 1e-12 rad in float64 on every combination
of extensions) for the engines that step thousands of environments at once: mjlab on MuJoCo
Warp (torch), MJX and MuJoCo Playground (JAX). One implementation serves both: it is written
against the Python array API standard (``array_api_compat``), and functionally (every call
returns new arrays, nothing is updated in place), so that JAX can ``jit``, ``vmap`` and
``scan`` it and torch runs it eagerly.

The formulas are the Numba bank's, in the same order of operations (docs/model.md §3, §9,
§12, §13): the report (``observation_delay``), the shared supply, a learned network, the
measured state (``latency``), the supply of the moment (``supply``), the firmware law
(voltage law with the sts3215 limiter, the Feetech P/D loop with its dead band, torque limit
and acceleration profile, the current law), the current drawn; the motor torque
(``current_limit``), the friction budget of M1–M6 and the friction that stops a joint
(docs/model.md §4, §10). A feature the port lacks is refused by name (:func:`check_supported`).

**Memory.** The records are a :class:`BankState` of named arrays, shape (E, J) (rings:
(E, J, size)), the Numba record's fields by name; :func:`to_records` lays them out as the
Numba bank's flat records (``layout.SERVO_*``) to compare them. The constants are a
:class:`ArrayServos`: ``theta`` (E or 1, J, THETA_SIZE), ``firmware`` (E or 1, J,
BENCH_SIZE), read by the layout's column names, and the networks (:class:`ArrayNets`).
Every environment may carry its own parameters (domain randomisation) and its own
control-period phase (:func:`due`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from frictionsim.errors import ConfigurationError
from frictionsim.layout import (
    ACCELERATION,
    ALPHA,
    ARMATURE,
    CURRENT_LAW,
    CURRENT_LIMIT,
    DAMPING,
    DEAD_BAND,
    DERIVATIVE_TIME,
    DT,
    ERROR_GAIN,
    ERROR_GAIN_RATIO,
    HISTORY_SIZE,
    K_C,
    K_CS,
    K_E,
    K_EQ,
    K_ES,
    K_L,
    K_LS,
    K_M,
    K_MQ,
    K_MS,
    K_V,
    KD,
    KP,
    KT,
    LATENCY,
    LAW,
    MAX_CURRENT,
    MAX_LATENCY,
    MAX_OBSERVATION_PERIODS,
    MAX_PWM,
    MAX_VELOCITY,
    MAX_VOLTAGE,
    MESHING_AMPLITUDE,
    MESHING_DECAY,
    MESHING_FREQUENCY,
    MESHING_PHASE,
    NET_HISTORY,
    NET_RING,
    NET_STRIDE,
    OBSERVATION_DELAY,
    OBSERVED_SIZE,
    Q_OFFSET,
    RESISTANCE,
    RIPPLE_AMPLITUDE,
    RIPPLE_FREQUENCY,
    RIPPLE_PHASE,
    SCHEME,
    SEMI_IMPLICIT,
    SERVO_CONTACT,
    SERVO_CURRENT,
    SERVO_DRAWN,
    SERVO_ENABLE,
    SERVO_ERROR,
    SERVO_ERRORS,
    SERVO_EXTRA,
    SERVO_GAP,
    SERVO_HISTORY,
    SERVO_MOTOR_SPEED,
    SERVO_OBSERVED,
    SERVO_PERIODS,
    SERVO_Q_SMOOTH,
    SERVO_RATE,
    SERVO_REPORTED,
    SERVO_STATE_SIZE,
    SERVO_U,
    SERVO_VELOCITIES,
    SERVO_VIN,
    SUPPLY,
    SUPPLY_EMF,
    SUPPLY_RESISTANCE,
    THETA_SIZE,
    TORQUE_LIMIT,
    V_S,
    VIN,
    VOLTAGE_LAW,
)

RING = MAX_LATENCY + 1


def namespace(*arrays):
    """The array API namespace of the arrays (torch through ``array_api_compat``, JAX's
    ``jax.numpy``, numpy)."""
    from array_api_compat import array_namespace

    return array_namespace(*arrays)


class BankState(NamedTuple):
    """The records of E × J servos, a field per name (the Numba record's, layout.SERVO_*)."""

    u: object            # held control (V or A)
    q_smooth: object     # the limiter's internal target (rad)
    periods: object      # control periods so far
    current: object      # motor current at the last physics step (A, ``supply``)
    drawn: object        # current drawn from the servo's supply (A)
    vin: object          # supply the last period used (V)
    error: object        # last period's error (rad, D term)
    rate: object         # internal target's velocity (rad/s)
    enable: object       # torque enable latched at the period
    extra: object        # a network's torque held (N·m)
    history_q: object    # (E, J, MAX_LATENCY + 1) positions measured (``latency``)
    history_v: object    # … velocities
    reported: object     # position reported at the last period (rad)
    observed: object     # (E, J, OBSERVED_SIZE) positions of the last periods
    errors: object       # (E, J, NET_RING) a network's error history (rad)
    velocities: object   # (E, J, NET_RING) … velocity history (rad/s)
    gap: object          # δ = p − q, the motor side's place in its gear's gap (rad, ``backlash``)
    motor_speed: object  # w, the motor side's velocity (rad/s)
    contact: object      # the gap's end engaged, ±1, 0 apart, NaN not yet settled


class ArrayNets(NamedTuple):
    """The servos' networks as arrays (one structure for the bank, a row per servo; a servo
    without a network has ``has_net`` 0): :mod:`frictionsim.actuator_net`'s vector unpacked."""

    has_net: object      # (J,) 1 where a servo carries a network
    authority: object    # (J,) clip of the output (N·m), < 0: none
    mean: object         # (J, n) input standardisation
    std: object
    low: object          # (J, n) input clipping range
    high: object
    mean_out: object     # (J,)
    scale_out: object
    weights: tuple       # per layer (J, out, in)
    biases: tuple        # per layer (J, out)
    w_out: object        # (J, width)
    b_out: object        # (J,)


class ArrayServos(NamedTuple):
    """The bank's constant memory: ``theta`` (E or 1, J, THETA_SIZE), ``firmware`` (E or 1,
    J, BENCH_SIZE), ``nets`` (:class:`ArrayNets` or None)."""

    theta: object
    firmware: object
    nets: ArrayNets | None = None


def check_supported(thetas: np.ndarray, firmware: np.ndarray) -> None:
    """ConfigurationError naming a feature of these servos that the array bank lacks.
    It has every feature of the Numba bank, ``backlash`` through :mod:`frictionsim.solvers.array_gear`
    and ``ripple`` through :func:`rippled_static`; a logged supply per entry (bench logs'
    ``supply`` with ``input_volts``) is passed per period as ``logged_vin``."""
    thetas = np.asarray(thetas)
    if thetas.shape[-1] != THETA_SIZE:
        raise ConfigurationError(f"the array bank takes theta rows of {THETA_SIZE} doubles")
    law = thetas[..., LAW]
    if not np.all((law == VOLTAGE_LAW) | (law == CURRENT_LAW)):
        raise ConfigurationError("the array bank runs the voltage and the current law only")


def servos(thetas, firmware, nets=None, xp=None, dtype=None, device=None) -> ArrayServos:
    """:class:`ArrayServos` from numpy rows: ``thetas`` (J, THETA_SIZE) or (E, J, THETA_SIZE),
    ``firmware`` likewise, ``nets`` (J, width) network vectors or None; as arrays of ``xp``
    (a namespace, default numpy) of ``dtype`` on ``device``."""
    thetas = np.asarray(thetas, dtype=float)
    firmware = np.asarray(firmware, dtype=float)
    check_supported(thetas, firmware)
    if thetas.ndim == 2:
        thetas = thetas[None]
    if firmware.ndim == 2:
        firmware = firmware[None]
    xp = xp or namespace(np.zeros(1))
    dtype = dtype or xp.float64

    def arr(a):
        return xp.asarray(np.ascontiguousarray(a), dtype=dtype, device=device) \
            if device is not None else xp.asarray(np.ascontiguousarray(a), dtype=dtype)

    unpacked = None
    if nets is not None and np.any(np.asarray(nets)[:, 0] > 0):
        unpacked = unpack_nets(np.asarray(nets, dtype=float), arr)
    return ArrayServos(arr(thetas), arr(firmware), unpacked)


def unpack_nets(nets: np.ndarray, arr) -> ArrayNets:
    """The network vectors of :mod:`frictionsim.actuator_net` (rows; a row of zeros: none)
    unpacked into stacked arrays (every network of the bank of one structure)."""
    rows = [r for r in nets if r[0] > 0]
    n, layers = int(rows[0][0]), int(rows[0][1])
    hidden = [int(h) for h in rows[0][2:2 + layers]]
    for r in rows:
        if int(r[0]) != n or int(r[1]) != layers or [int(h) for h in r[2:2 + layers]] != hidden:
            raise ConfigurationError("the array bank takes networks of one structure (inputs "
                                     "and hidden widths) for all its servos")
    has = np.array([1.0 if r[0] > 0 else 0.0 for r in nets])
    template = rows[0]
    parts = {k: [] for k in ("authority", "mean", "std", "low", "high", "mean_out", "scale_out",
                             "w_out", "b_out")}
    weights = [[] for _ in hidden]
    biases = [[] for _ in hidden]
    for r in nets:
        r = r if r[0] > 0 else np.where(np.arange(len(template)) < 2 + layers, template, 0.0)
        p = 2 + layers
        parts["authority"].append(r[p])
        p += 1
        for key in ("mean", "std", "low", "high"):
            parts[key].append(r[p:p + n])
            p += n
        parts["mean_out"].append(r[p])
        parts["scale_out"].append(r[p + 1])
        p += 2
        width = n
        for i, h in enumerate(hidden):
            weights[i].append(r[p:p + h * width].reshape(h, width))
            p += h * width
            biases[i].append(r[p:p + h])
            p += h
            width = h
        parts["w_out"].append(r[p:p + width])
        parts["b_out"].append(r[p + width])
    std = np.array(parts["std"])
    std[has == 0] = 1.0  # a servo without a network: a harmless standardisation
    return ArrayNets(arr(has), arr(np.array(parts["authority"])), arr(np.array(parts["mean"])),
                     arr(std), arr(np.array(parts["low"])), arr(np.array(parts["high"])),
                     arr(np.array(parts["mean_out"])), arr(np.array(parts["scale_out"])),
                     tuple(arr(np.array(w)) for w in weights),
                     tuple(arr(np.array(b)) for b in biases),
                     arr(np.array(parts["w_out"])), arr(np.array(parts["b_out"])))


# ----------------------------------------------------------------------------- the records

def reset(q, v, xp=None) -> BankState:
    """Records of E × J servos reset at positions q and velocities v (E, J): no control, the
    limiter at q, the histories full of the initial state, torque enabled, no network torque
    (:func:`frictionsim.servo_bank.reset_servo`)."""
    xp = xp or namespace(q)
    zero = xp.zeros_like(q)

    def ring(x, size):
        return xp.broadcast_to(x[..., None], (*x.shape, size)) * 1.0

    return BankState(zero, q * 1.0, zero, zero, zero, zero + math.nan, zero + math.nan, zero,
                     zero + 1.0, zero, ring(q, RING), ring(v, RING), q * 1.0,
                     ring(q, OBSERVED_SIZE), ring(zero, NET_RING), ring(zero, NET_RING),
                     zero * 1.0, v * 1.0, zero + math.nan)


def reset_where(state: BankState, mask, q, v, xp=None) -> BankState:
    """The records of the environments where ``mask`` (E,) is true reset at q, v (E, J); the
    others unchanged: an episode's reset of some environments."""
    xp = xp or namespace(q)
    fresh = reset(q, v, xp)
    return BankState(*(xp.where(_expand(xp, mask, a), f, a) for a, f in zip(state, fresh)))


def _expand(xp, mask, like):
    shape = tuple(mask.shape) + (1,) * (like.ndim - mask.ndim)
    return xp.reshape(mask, shape)


def to_records(state: BankState, xp=None) -> np.ndarray:
    """The records laid out as the Numba bank's (E, J, SERVO_STATE_SIZE) float64 numpy array."""
    xp = xp or namespace(state.u)
    E, J = state.u.shape
    out = np.zeros((E, J, SERVO_STATE_SIZE))

    def host(a):
        return np.asarray(a.cpu() if hasattr(a, "cpu") else a, dtype=float)

    for index, field in ((SERVO_U, "u"), (SERVO_Q_SMOOTH, "q_smooth"), (SERVO_PERIODS, "periods"),
                         (SERVO_CURRENT, "current"), (SERVO_DRAWN, "drawn"), (SERVO_VIN, "vin"),
                         (SERVO_ERROR, "error"), (SERVO_RATE, "rate"), (SERVO_ENABLE, "enable"),
                         (SERVO_EXTRA, "extra"), (SERVO_REPORTED, "reported"),
                         (SERVO_GAP, "gap"), (SERVO_MOTOR_SPEED, "motor_speed"),
                         (SERVO_CONTACT, "contact")):
        out[..., index] = host(getattr(state, field))
    out[..., SERVO_HISTORY:SERVO_HISTORY + HISTORY_SIZE:2] = host(state.history_q)
    out[..., SERVO_HISTORY + 1:SERVO_HISTORY + HISTORY_SIZE:2] = host(state.history_v)
    out[..., SERVO_OBSERVED:SERVO_OBSERVED + OBSERVED_SIZE] = host(state.observed)
    out[..., SERVO_ERRORS:SERVO_ERRORS + NET_RING] = host(state.errors)
    out[..., SERVO_VELOCITIES:SERVO_VELOCITIES + NET_RING] = host(state.velocities)
    return out


# -------------------------------------------------------------------------- small helpers

def _col(a, index):
    return a[..., index]


def _slot(xp, ring, k):
    """ring[..., k] for a per-servo index k (float, whole): a one-hot sum, exact."""
    size = ring.shape[-1]
    hot = xp.arange(size, dtype=ring.dtype, device=_device(ring)) == k[..., None]
    return xp.sum(xp.where(hot, ring, xp.zeros_like(ring)), axis=-1)


def _write(xp, ring, k, value, where):
    """ring with ring[..., k] = value where ``where`` (per servo); unchanged elsewhere."""
    size = ring.shape[-1]
    hot = (xp.arange(size, dtype=ring.dtype, device=_device(ring)) == k[..., None]) \
        & where[..., None]
    return xp.where(hot, value[..., None], ring)


def _device(a):
    from array_api_compat import device

    return device(a)


def _clip(xp, x, lo, hi):
    return xp.minimum(xp.maximum(x, lo), hi)


def _copysign(xp, magnitude, sign):
    """math.copysign for arrays (the sign bit of ``sign``, a −0.0 included)."""
    return xp.where(xp.signbit(sign), -xp.abs(magnitude), xp.abs(magnitude))


def _sign(xp, x):
    return xp.sign(x)


# ------------------------------------------------------------------------------- the period

def due(steps, substeps, phase):
    """Whether a control period starts at physics step ``steps`` (an int) for environments
    whose phase (E,) is ``phase`` physics steps: each environment its own phase."""
    xp = namespace(phase)
    return xp.remainder(steps + phase, substeps) == 0


def observe(xp, state: BankState, q, period, theta) -> BankState:
    """The position each servo reports this period (:func:`frictionsim.servo_unit.observe`)."""
    delay = _col(theta, OBSERVATION_DELAY)
    delayed = delay != 0.0
    k = state.periods
    observed = _write(xp, state.observed, xp.remainder(k, OBSERVED_SIZE), q, delayed)
    lag = delay / period
    m = xp.floor(lag)
    f = lag - m
    beyond = m > MAX_OBSERVATION_PERIODS
    m = xp.where(beyond, xp.zeros_like(m) + MAX_OBSERVATION_PERIODS, m)
    f = xp.where(beyond, xp.ones_like(f), f)
    late = _slot(xp, observed, xp.remainder(k - m + OBSERVED_SIZE, OBSERVED_SIZE))
    early = _slot(xp, observed, xp.remainder(k - m - 1 + OBSERVED_SIZE, OBSERVED_SIZE))
    reported = xp.where(delayed, (1.0 - f) * late + f * early, q)
    return state._replace(observed=observed, reported=reported)


def network(xp, state: BankState, nets: ArrayNets, error, velocity, kp, enable) -> BankState:
    """A learned actuator's torque held this period (:func:`frictionsim.servo_bank.network_torque`):
    the histories pushed, the standardised and clipped input through the layers."""
    has = nets.has_net != 0.0
    k = state.periods
    slot = xp.remainder(k, NET_RING)
    everywhere = xp.ones_like(k) > 0
    errors = _write(xp, state.errors, slot, error, everywhere)
    velocities = _write(xp, state.velocities, slot, velocity, everywhere)
    columns = []
    for h in range(NET_HISTORY):
        columns.append(_slot(xp, errors, xp.remainder(xp.maximum(k - h * NET_STRIDE, 0.0),
                                                      NET_RING)))
    for h in range(NET_HISTORY):
        columns.append(_slot(xp, velocities, xp.remainder(xp.maximum(k - h * NET_STRIDE, 0.0),
                                                          NET_RING)))
    columns += [kp, enable]
    x = xp.stack(columns, axis=-1)                                   # (E, J, n)
    z = _clip(xp, (x - nets.mean) / nets.std, nets.low, nets.high)
    for w, b in zip(nets.weights, nets.biases):                      # w: (J, out, in)
        z = xp.tanh(xp.matmul(w, z[..., None])[..., 0] + b)
    y = xp.sum(nets.w_out * z, axis=-1) + nets.b_out
    tau = nets.mean_out + nets.scale_out * y
    bounded = nets.authority >= 0.0
    tau = xp.where(bounded, _clip(xp, tau, -nets.authority, nets.authority), tau)
    extra = xp.where(has, tau, state.extra)
    return state._replace(errors=xp.where(has[..., None], errors, state.errors),
                          velocities=xp.where(has[..., None], velocities, state.velocities),
                          extra=extra)


def measured(xp, state: BankState, q, v, theta):
    """(state, q, v) the firmware acts on (``latency``, :func:`frictionsim.servo_unit.measured`)."""
    lag = xp.floor(_col(theta, LATENCY))
    lagging = lag != 0.0
    k = state.periods
    slot = xp.remainder(k, RING)
    history_q = _write(xp, state.history_q, slot, q, lagging)
    history_v = _write(xp, state.history_v, slot, v, lagging)
    old = xp.remainder(k - lag + RING, RING)
    q_m = xp.where(lagging, _slot(xp, history_q, old), q)
    v_m = xp.where(lagging, _slot(xp, history_v, old), v)
    return state._replace(history_q=history_q, history_v=history_v), q_m, v_m


def supply_voltage(xp, logged, drawn, theta, firmware):
    """The supply the law uses (V) (:func:`frictionsim.actuator_laws.supply_voltage`)."""
    on = _col(theta, SUPPLY) > 0.0
    source = _col(theta, SUPPLY_EMF) - _col(theta, SUPPLY_RESISTANCE) * xp.abs(drawn)
    return xp.where(on, xp.where(xp.isfinite(logged), logged, source), _col(firmware, VIN))


def limited_target(xp, q_target, q_smooth, max_velocity, dt):
    step = max_velocity * dt
    return xp.where(max_velocity <= 0.0, q_target,
                    _clip(xp, q_target, q_smooth - step, q_smooth + step))


def profiled_target(xp, q_target, q_smooth, rate, max_velocity, acceleration, dt):
    """(target, rate) of :func:`frictionsim.actuator_laws.profiled_target`."""
    limited = limited_target(xp, q_target, q_smooth, max_velocity, dt)
    remaining = q_target - q_smooth
    dv = acceleration * dt
    safe_dv = xp.where(acceleration > 0.0, dv, xp.ones_like(dv))
    stopping = _copysign(xp, safe_dv * (xp.sqrt(0.25 + 2.0 * xp.abs(remaining) / (safe_dv * dt))
                                        - 0.5), remaining)
    stopping = xp.where(max_velocity > 0.0, _clip(xp, stopping, -max_velocity, max_velocity),
                        stopping)
    new_rate = _clip(xp, stopping, rate - acceleration * dt, rate + acceleration * dt)
    q_next = q_smooth + new_rate * dt
    reached = (q_target - q_next) * remaining <= 0.0
    profiled = acceleration > 0.0
    target = xp.where(profiled, xp.where(reached, q_target, q_next), limited)
    new_rate = xp.where(profiled & ~reached, new_rate, xp.zeros_like(new_rate))
    return target, new_rate


def firmware_law(xp, q_target, q, v, q_smooth, rate, error_prev, vin, theta, firmware):
    """(u, q_smooth, rate, error) of :func:`frictionsim.actuator_laws.firmware_law`."""
    dt = _col(firmware, DT)
    kp = _col(firmware, KP)
    max_pwm = _col(theta, MAX_PWM)
    plain = ((_col(firmware, KD) * _col(theta, DERIVATIVE_TIME) == 0.0)
             & (_col(theta, DEAD_BAND) == 0.0) & (_col(firmware, TORQUE_LIMIT) == 0.0)
             & (_col(firmware, ACCELERATION) == 0.0))
    # the plain voltage law
    smooth_plain = limited_target(xp, q_target, q_smooth, _col(theta, MAX_VELOCITY), dt)
    duty_plain = _clip(xp, (smooth_plain - q) * kp * _col(theta, ERROR_GAIN)
                       * _col(theta, ERROR_GAIN_RATIO), -max_pwm, max_pwm)
    u_plain = vin * duty_plain
    # the Feetech position loop
    target, new_rate = profiled_target(xp, q_target, q_smooth, rate, _col(theta, MAX_VELOCITY),
                                       _col(firmware, ACCELERATION), dt)
    error = target - q
    error_rate = xp.where(xp.isfinite(error_prev), (error - error_prev) / dt,
                          xp.zeros_like(error))
    dead_band = _col(theta, DEAD_BAND)
    limit = _col(firmware, TORQUE_LIMIT)
    ceiling = xp.where(limit > 0.0, max_pwm * limit, max_pwm)
    gain = _col(theta, ERROR_GAIN) * _col(theta, ERROR_GAIN_RATIO)
    drive = error * kp + _col(firmware, KD) * _col(theta, DERIVATIVE_TIME) * error_rate
    duty = _clip(xp, drive * gain, -ceiling, ceiling)
    duty = xp.where((dead_band > 0.0) & (xp.abs(error) <= dead_band), xp.zeros_like(duty), duty)
    u_feetech = vin * duty
    # the current law
    amps = (q_target - q) * kp + _col(firmware, DAMPING) * xp.sqrt(kp) * (0.0 - v)
    u_current = _clip(xp, amps, -_col(theta, MAX_CURRENT), _col(theta, MAX_CURRENT))
    voltage = _col(theta, LAW) == VOLTAGE_LAW
    u = xp.where(voltage, xp.where(plain, u_plain, u_feetech), u_current)
    new_smooth = xp.where(voltage, xp.where(plain, smooth_plain, target), q_target)
    new_rate = xp.where(voltage & ~plain, new_rate, xp.zeros_like(new_rate))
    new_error = xp.where(voltage, xp.where(plain, smooth_plain - q, error), q_target - q)
    return u, new_smooth, new_rate, new_error


def motor_current(xp, u, v, theta):
    """(:func:`frictionsim.actuator_laws.motor_current`) in A."""
    i = (u - _col(theta, KT) * v) / _col(theta, RESISTANCE)
    limit = _col(theta, CURRENT_LIMIT)
    safe = xp.where(limit > 0.0, limit, xp.ones_like(limit))
    saturated = xp.where(limit > 0.0, safe * xp.tanh(i / safe), i)
    return xp.where(_col(theta, LAW) != VOLTAGE_LAW, u, saturated)


def motor_torque(xp, u, enable, v, theta):
    """τ_m (N·m) of the held control (:func:`frictionsim.actuator_laws.motor_torque`)."""
    kt = _col(theta, KT)
    r = _col(theta, RESISTANCE)
    limit = _col(theta, CURRENT_LIMIT)
    safe = xp.where(limit > 0.0, limit, xp.ones_like(limit))
    limited = enable * kt * safe * xp.tanh((u - kt * v) / (r * safe))
    plain = enable * (kt * u / r - kt**2 * v / r)
    voltage = xp.where(limit > 0.0, limited, plain)
    emf = kt**2 * v / r
    window = kt * _col(theta, MAX_VOLTAGE) / r
    current = _clip(xp, enable * kt * u, -window - emf, window - emf)
    return xp.where(_col(theta, LAW) == VOLTAGE_LAW, voltage, current)


def draw(xp, state: BankState, v, theta) -> BankState:
    """The motor current each servo draws at velocity v (``supply`` only)."""
    on = _col(theta, SUPPLY) > 0.0
    current = state.enable * motor_current(xp, state.u, v, theta)
    return state._replace(current=xp.where(on, current, state.current),
                          drawn=xp.where(on, current, state.drawn))


def share_supply(xp, state: BankState) -> BankState:
    """The servos of an environment on one supply: each sees the sum of their currents."""
    total = xp.sum(state.current, axis=-1, keepdims=True)
    return state._replace(drawn=xp.broadcast_to(total, state.drawn.shape) * 1.0)


def period(state: BankState, servos: ArrayServos, goals, q, v, enable, logged_vin=math.nan,
           period_s=None, shared_supply: bool = True, draw_at_period: bool = False,
           where=None) -> BankState:
    """One control period of every servo (:func:`frictionsim.servo_bank.bank_period`), the
    environments where ``where`` (E,) is true (default all; the others keep their records):
    goals, q, v, enable (E, J); ``logged_vin`` a logged supply (V, NaN: none) per
    environment or one; ``period_s`` the control period (default the firmware's ``DT``)."""
    xp = namespace(q)
    theta, firmware = servos.theta, servos.firmware
    if period_s is None:
        period_s = _col(firmware, DT)
    new = share_supply(xp, state) if shared_supply else state
    if servos.nets is not None:
        new = network(xp, new, servos.nets, goals - q, v, _col(firmware, KP), enable)
    new = observe(xp, new, q, period_s, theta)
    new = new._replace(enable=enable * 1.0)
    new, q_m, v_m = measured(xp, new, q, v, theta)
    logged = xp.asarray(logged_vin, dtype=q.dtype, device=_device(q))
    if logged.ndim == 1:
        logged = logged[:, None]
    vin = supply_voltage(xp, logged, new.drawn, theta, firmware)
    u, q_smooth, rate, error = firmware_law(xp, goals, q_m, v_m, new.q_smooth, new.rate,
                                            new.error, vin, theta, firmware)
    new = new._replace(u=u, q_smooth=q_smooth, rate=rate, error=error,
                       periods=new.periods + 1.0, vin=vin * xp.ones_like(u))
    if draw_at_period:
        new = draw(xp, new, v, theta)
    if where is None:
        return new
    return BankState(*(xp.where(_expand(xp, where, a), b, a) for a, b in zip(state, new)))


def step(state: BankState, servos: ArrayServos, v):
    """One physics step of every servo (:func:`frictionsim.servo_bank.bank_step`): (state with
    the currents drawn, τ_m of the held control at v, the held network torque), (E, J)."""
    xp = namespace(v)
    new = draw(xp, state, v, servos.theta)
    return new, motor_torque(xp, new.u, new.enable, v, servos.theta), new.extra


def held_torque(state: BankState, servos: ArrayServos, v):
    """τ_m (N·m) of the held control at v, E × J; changes nothing."""
    return motor_torque(namespace(v), state.u, state.enable, v, servos.theta)


# ------------------------------------------------------------------------------- friction

def stribeck_factor(xp, v, theta):
    """s(v) of :func:`frictionsim.friction.stribeck_factor`."""
    v_s = _col(theta, V_S)
    alpha = _col(theta, ALPHA)
    safe = xp.where(v_s > 0.0, v_s, xp.ones_like(v_s))
    moving = xp.exp(-(xp.abs(v / safe) ** alpha))
    s = xp.where((v == 0.0) & (alpha > 0.0), xp.ones_like(v), moving)
    return xp.where(v_s <= 0.0, xp.zeros_like(v), s)


def friction_budget(v, tau_m, tau_e, servos: ArrayServos):
    """(F, K_v) of :func:`frictionsim.friction.friction_budget`, E × J: the static part (N·m)
    and the viscous coefficient of τ_fm = F + K_v·|v|."""
    xp = namespace(v)
    theta = servos.theta
    s = stribeck_factor(xp, v, theta)
    gearbox = xp.abs(tau_e - tau_m)
    static = (_col(theta, K_C) + _col(theta, K_L) * gearbox
              + xp.abs(tau_e * _col(theta, K_E) - tau_m * _col(theta, K_M)))
    k_eq, k_mq = _col(theta, K_EQ), _col(theta, K_MQ)
    a_e, a_m = xp.abs(tau_e), xp.abs(tau_m)
    quadratic = xp.where(_sign(xp, tau_e) == _sign(xp, tau_m), xp.zeros_like(a_e),
                         xp.where(a_e < a_m, k_eq * a_e**2,
                                  xp.where(a_e > a_m, k_mq * a_m**2, xp.zeros_like(a_e))))
    with_s = static + s * _col(theta, K_CS)
    with_s = with_s + (_col(theta, K_LS) * gearbox
                       + xp.abs(tau_e * _col(theta, K_ES) - tau_m * _col(theta, K_MS))) * s
    with_s = xp.where((k_eq != 0.0) | (k_mq != 0.0), with_s + s * quadratic, with_s)
    return xp.where(s != 0.0, with_s, static), xp.broadcast_to(_col(theta, K_V), static.shape)


def ripple_friction(xp, angle, v, theta):
    """The ``ripple`` friction (N·m) of :func:`frictionsim.friction.ripple_friction` at the
    output angle (rad) and velocity (rad/s): A1·sin(Ω1·θ + φ1) + A2·exp(−B·|θ̇|)·sin(Ω2·θ + φ2)."""
    ripple = _col(theta, RIPPLE_AMPLITUDE) * xp.sin(_col(theta, RIPPLE_FREQUENCY) * angle
                                                    + _col(theta, RIPPLE_PHASE))
    meshing = (_col(theta, MESHING_AMPLITUDE) * xp.exp(-_col(theta, MESHING_DECAY) * xp.abs(v))
               * xp.sin(_col(theta, MESHING_FREQUENCY) * angle + _col(theta, MESHING_PHASE)))
    return ripple + meshing


def rippled_static(xp, static, viscous, angle, v, theta):
    """F with the ``ripple`` added, τ_fm = F + K_v·|v| kept ≥ 0
    (:func:`frictionsim.friction.rippled_static`); F itself where a servo has no ripple."""
    off = (_col(theta, RIPPLE_AMPLITUDE) == 0.0) & (_col(theta, MESHING_AMPLITUDE) == 0.0)
    rippled = xp.maximum(static + ripple_friction(xp, angle, v, theta), -viscous * xp.abs(v))
    return xp.where(off, static, rippled)


def servo_budget(v, tau_m, tau_e, angle, servos: ArrayServos):
    """τ_fm (N·m), E × J: the friction budget of each servo at velocity v, its motor torque
    τ_m, the external torque τ_e on its joint, its ``ripple`` at the joint angle."""
    xp = namespace(v)
    static, viscous = friction_budget(v, tau_m, tau_e, servos)
    return rippled_static(xp, static, viscous, angle, v, servos.theta) + viscous * xp.abs(v)


def stop_friction(inertia, tau, v, budget, dt):
    """One joint (docs/model.md §4): −sign(τ_stop)·min(|τ_stop|, b), τ_stop = (I/dt)·v + τ."""
    xp = namespace(tau)
    tau_stop = (inertia / dt) * v + tau
    return -_sign(xp, tau_stop) * xp.minimum(xp.abs(tau_stop), budget)


def clip_friction(mass, tau, v, budget, dt):
    """docs/model.md §10's friction of n coupled joints in every environment: mass (E, n, n),
    tau, v, budget (E, n) → τ_f (E, n), the maximal dissipation within the budgets. The
    Numba solver's primal active set (:func:`frictionsim.solvers.joint_friction.clip_friction_into`),
    environment by environment under masks: each iteration solves the held joints' system
    (a batched solve of M restricted to them), steps towards that face's optimum up to the
    first bound it crosses, or releases the held joint whose friction pushes most along the
    motion; it stops when every environment is at its optimum (at most 10n + 20 iterations,
    as the Numba solver; under JAX a ``lax.while_loop``). For one joint it is
    :func:`stop_friction`."""
    xp = namespace(tau)
    n = tau.shape[-1]
    if n == 1:
        return stop_friction(mass[..., 0, :], tau, v, budget, dt)
    s = xp.matmul(mass, v[..., None])[..., 0] / dt + tau
    up, down = -s > budget, -s < -budget
    held = up | down
    side = xp.where(up, xp.ones_like(s), xp.where(down, -xp.ones_like(s), xp.zeros_like(s)))
    out = xp.where(held, side * budget, -s)
    done = xp.zeros(tau.shape[:-1], dtype=xp.bool, device=_device(tau))
    constants = (xp, mass, s, budget, xp.eye(n, dtype=tau.dtype, device=_device(tau)),
                 xp.arange(n, device=_device(tau)))
    carry = (out, held, side, done)
    limit = 10 * n + 19
    if _is_jax(xp):
        import jax

        def cond(c):
            return (c[1] < limit) & ~xp.all(c[0][3])

        def body(c):
            return (_active_set_iteration(constants, c[0]), c[1] + 1)

        return jax.lax.while_loop(cond, body, (carry, 0))[0][0]
    for _ in range(limit):
        carry = _active_set_iteration(constants, carry)
        if bool(xp.all(carry[3])):
            break
    return carry[0]


def _is_jax(xp) -> bool:
    return getattr(xp, "__name__", "").startswith("jax")


def _active_set_iteration(constants, carry):
    """One iteration of :func:`clip_friction`'s active set in every environment not done."""
    xp, mass, s, budget, eye, index = constants
    out, held, side, done = carry
    h = xp.where(held, xp.ones_like(s), xp.zeros_like(s))
    restricted = h[..., :, None] * mass * h[..., None, :] + eye * (1.0 - h)[..., None, :]
    nu = xp.linalg.solve(restricted, ((s + side * budget) * h)[..., None])[..., 0]
    target = xp.where(held, side * budget, xp.matmul(mass, nu[..., None])[..., 0] - s)
    d = target - out
    going_up = (target > budget) & (d > 0.0) & ~held
    going_down = (target < -budget) & (d < 0.0) & ~held
    safe_d = xp.where(going_up | going_down, d, xp.ones_like(d))
    alpha = xp.where(going_up, (budget - out) / safe_d,
                     xp.where(going_down, (-budget - out) / safe_d, xp.full_like(d, math.inf)))
    step = xp.min(alpha, axis=-1)
    blocked = (step < 1.0) & ~done
    block = xp.argmin(alpha, axis=-1)
    at_block = (index == block[..., None]) & blocked[..., None]
    moved = xp.where(~held & blocked[..., None], out + step[..., None] * (target - out), out)
    new_side = xp.where(target > budget, xp.ones_like(s), -xp.ones_like(s))
    moved = xp.where(at_block, new_side * budget, moved)
    # at the face optimum: release the held joint whose friction most pushes along ν
    optimal = ~blocked & ~done
    push = xp.where(held & (budget > 0.0), side * nu, xp.zeros_like(nu))
    worst = xp.argmax(push, axis=-1)
    releasing = optimal & (xp.max(push, axis=-1) > 0.0)
    at_worst = (index == worst[..., None]) & releasing[..., None]
    out = xp.where(optimal[..., None], target, moved)
    held = xp.where(at_block, True, xp.where(at_worst, False, held))
    side = xp.where(at_block, new_side, xp.where(at_worst, xp.zeros_like(side), side))
    return out, held, side, done | (optimal & ~releasing)


# ---------------------------------------------------------------------------- the bench

def bench_rollout(servos: ArrayServos, goal, enable, supply, q0, v0, torque=None, load=None):
    """The pendulum bench (docs/model.md §1, §4: the semi-implicit or reference step with
    friction clipping) driven by the bank, E environments at once from (q0, v0) (E,): the
    positions reported at each control period (E, n), as
    :func:`frictionsim.solvers.learned_rollout.learned_run` gives them. ``goal``, ``enable``,
    ``supply`` (a logged supply, V, NaN: none) are (E, n); one physics step per period, the
    firmware's ``DT``. Differentiable in torch (rollout training trains through it).

    ``torque``: a learned torque the bank does not hold (a sequence model,
    :mod:`frictionsim.experiments.identification.sequence_net`), called once per period,
    before the servo's, with the error goal − q, the velocity v, the gain and the enable
    flag (each E × 1); its torque (E × 1, N·m) joins the network's, held for the period and
    clipped by friction as it is.

    ``load``: a load other than the pendulum (a robot's joint seen from its servo,
    :mod:`frictionsim.experiments.robots.joint_loads`), called at every period k with the
    positions and velocities (E × 1): (I, τ_e), the load's inertia without the rotor's
    (kg·m²) and its torque on the joint (N·m), each E × 1, in place of the bench's m·L² and
    gravity torque."""
    from frictionsim.pendulum import gravity_coefficient, load_inertia
    from frictionsim.solvers.fixed_step import MAX_SPEED

    xp = namespace(goal)
    theta, bench = servos.theta, servos.firmware
    q, v = q0[:, None] * 1.0, v0[:, None] * 1.0
    state = reset(q, v, xp)
    # the pendulum's own formulas (their Python bodies), read on the bench's columns
    columns = _Columns(bench)
    inertia = load_inertia.py_func(columns) + _col(theta, ARMATURE)
    gravity = gravity_coefficient.py_func(columns)
    dt = _col(bench, DT)
    semi = _col(theta, SCHEME) == SEMI_IMPLICIT
    reported = []
    for k in range(goal.shape[1]):
        learned = 0.0 if torque is None else \
            torque(goal[:, k:k + 1] - q, v, _col(bench, KP), enable[:, k:k + 1])
        state = period(state, servos, goal[:, k:k + 1], q, v, enable[:, k:k + 1], supply[:, k])
        reported.append(state.reported[:, 0])
        state, tau_m, extra = step(state, servos, v)
        extra = extra + learned
        if load is None:
            angle = q + _col(theta, Q_OFFSET)
            tau_e = gravity * xp.sin(angle)
        else:  # a robot's joint: its angle is q itself, as the robot's servos read it
            angle = q
            load_inertia_k, tau_e = load(k, q, v)
            inertia = load_inertia_k + _col(theta, ARMATURE)
        tau = tau_m + tau_e + extra
        budget = servo_budget(v, tau_m, tau_e, angle, servos)
        a = (tau + stop_friction(inertia, tau, v, budget, dt)) / inertia
        v = _clip(xp, v + a * dt, -MAX_SPEED, MAX_SPEED)
        q = xp.where(semi, q + v * dt, q + v * dt + 0.5 * a * dt * dt)
    return xp.stack(reported, axis=1)


class _Columns:
    """A bench array (E, 1, BENCH_SIZE) read as the bench vector the pendulum's formulas
    index: ``columns[i]`` is column i of every environment, (E, 1)."""

    def __init__(self, bench) -> None:
        self.bench = bench

    def __getitem__(self, index: int):
        return _col(self.bench, index)
