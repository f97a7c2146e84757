"""The servo bank: the one owner of the control period, for N servos.

Every engine — the bench's fixed step and its batched and lock-step evaluators, the
event-driven bench and robot, the robot's fixed step, the MuJoCo adapter, the virtual
servo, the torque trace, the inverse-dynamics labels and the C ABI — is a physics driver
around this bank. The driver integrates the joints; the bank does everything the servos do:

- :func:`bank_reset` (one servo: :func:`reset_servo`), before the first period, from each
  servo's initial position q0 (rad) and velocity v0 (rad/s);
- :func:`bank_period` (one servo: :func:`period_servo`), once per control period, in this
  order: the servos on one supply share it (``shared_supply``: each then sees the sum of
  the currents drawn at the last physics step); then per servo, the position it reports
  (``observation_delay``), the torque-enable flag latched for the period, a learned
  actuator's network on its error and velocity history (its torque held, N·m), and the
  firmware law (:func:`frictionsim.servo_unit.servo_period`: ``latency``, the supply of the
  moment, the limiter, the Feetech P/D, dead band and torque limit), whose control u (V or
  A) is held;
- :func:`bank_step` (one servo: :func:`step_servo`), once per physics step at the joint
  velocities v: the motor current each servo draws from the supply (``supply``), and the
  torques the physics applies: τ_m of the held control (:func:`held_torque`,
  ``current_limit``) and the held network torque.

The motor torque law is the plant's line of the step (docs/model.md §4: a one-joint loop
computes it from the control :func:`period_servo` returned, the bank's drivers of many
servos through :func:`held_torque`); the friction budget, the plant and the integration are
the driver's: the budget sees τ_m (not the network torque), friction clips τ_m + extra like
any other torque.

**One difference of scheduling, an argument.** An event-driven engine has no physics
steps: it integrates between periods with the torque of the held control at any velocity
(:func:`held_torque`, pure). It draws the supply current once per period, at the period's
start, with ``bank_period(..., draw_at_period=True)``. Fixed-step engines leave it False
and draw at every physics step through :func:`bank_step`.

**Memory.** A bank is a :class:`ServoBank` of flat float64 arrays, one row per servo,
their columns named by :mod:`frictionsim.layout`: ``thetas`` (THETA_SIZE), ``firmware``
(the firmware settings, BENCH_SIZE, built by :func:`frictionsim.firmware.firmware_settings`),
``records`` (SERVO_STATE_SIZE: what a servo carries from one period to the next), ``nets``
(each servo's network vector, :mod:`frictionsim.actuator_net`, zero-padded; a row starting
with 0: none) and ``work`` (scratch for the network's evaluation). The same memory is
what the C ABI passes (:mod:`frictionsim.solvers.c_abi`), what the MuJoCo adapter keeps in
``model`` and ``MjData.userdata``, and what the batched kernels (:mod:`frictionsim.solvers.batched`)
read on their device, a row per world and servo.
Python reads the records by name through :data:`RECORD_DTYPE` (:func:`record_view`).

The functions of one servo take its rows (``record``, ``theta``, ``firmware``, ``net``)
rather than the bank, so a one-joint loop compiles to the code it had before the bank, with
no array view per period; :func:`period_servo` is the period of a servo without a network,
:func:`learned_period` adds the network.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from frictionsim.actuator_laws import motor_torque, supply_voltage, voltage_control, voltage_motor_torque
from frictionsim.actuator_net import MAX_WIDTH, N_INPUTS, net_torque
from frictionsim.errors import ConfigurationError
from frictionsim.layout import (
    BACKLASH,
    BENCH_SIZE,
    HISTORY_SIZE,
    KP,
    NET_HISTORY,
    NET_RING,
    NET_STRIDE,
    OBSERVED_SIZE,
    SERVO_CONTACT,
    SERVO_ENABLE,
    SERVO_ERRORS,
    SERVO_EXTRA,
    SERVO_MOTOR_SPEED,
    SERVO_PERIODS,
    SERVO_STATE_SIZE,
    SERVO_U,
    SERVO_VELOCITIES,
    THETA_SIZE,
)
from frictionsim.servo_unit import draw_current, observe, reset_record, servo_period, share_supply

#: Scratch doubles a bank with networks needs (:func:`frictionsim.actuator_net.net_torque`'s
#: layers, then the input).
WORK_SIZE = 2 * MAX_WIDTH + N_INPUTS



class ServoBank(NamedTuple):
    """N servos' flat memory (module docstring): one row per servo."""

    thetas: np.ndarray    # (N, THETA_SIZE): parameters and firmware constants
    firmware: np.ndarray  # (N, BENCH_SIZE): firmware settings (gain, supply, D, limits, period)
    records: np.ndarray   # (N, SERVO_STATE_SIZE): what each servo carries between periods
    nets: np.ndarray      # (N, width): network vectors, zero rows for servos without one
    work: np.ndarray      # (WORK_SIZE,) scratch, or (0,) when no servo has a network


#: The fields of a servo record, named over the same memory (``records.view(RECORD_DTYPE)``).
RECORD_DTYPE = np.dtype([
    ("u", "f8"), ("q_smooth", "f8"), ("periods", "f8"), ("current", "f8"), ("drawn", "f8"),
    ("vin", "f8"), ("error", "f8"), ("rate", "f8"), ("enable", "f8"), ("extra", "f8"),
    ("history", "f8", (HISTORY_SIZE,)), ("reported", "f8"), ("observed", "f8", (OBSERVED_SIZE,)),
    ("errors", "f8", (NET_RING,)),
    ("velocities", "f8", (NET_RING,)),
    ("gap", "f8"), ("motor_speed", "f8"), ("contact", "f8"),
])
assert RECORD_DTYPE.itemsize == 8 * SERVO_STATE_SIZE


def record_view(records: np.ndarray) -> np.ndarray:
    """The records (N × SERVO_STATE_SIZE float64, or one record) as a structured array whose
    fields are named (``view["u"]``, ``view["reported"]``…): a view, no copy."""
    records = np.ascontiguousarray(records)
    if records.shape[-1] != SERVO_STATE_SIZE or records.dtype != np.float64:
        raise ConfigurationError(f"servo records are float64 rows of {SERVO_STATE_SIZE} doubles")
    return records.view(RECORD_DTYPE)[..., 0]


def new_bank(thetas: np.ndarray, firmware: np.ndarray, nets: np.ndarray | None = None
             ) -> ServoBank:
    """A bank of N servos from their ``thetas`` (N × THETA_SIZE), ``firmware`` settings
    (N × BENCH_SIZE, or one row for all) and network vectors (N rows, None: no network),
    its records reset at rest at 0 (reset them with :func:`bank_reset` at the initial state
    before the first period).
    ValueError when the shapes disagree."""
    thetas = np.array(np.atleast_2d(thetas), dtype=np.float64, order="C")
    n = thetas.shape[0]
    firmware = np.array(np.broadcast_to(np.atleast_2d(firmware), (n, BENCH_SIZE)),
                        dtype=np.float64, order="C") \
        if np.atleast_2d(firmware).shape[-1] == BENCH_SIZE else None
    if thetas.shape[1] != THETA_SIZE or firmware is None:
        raise ConfigurationError(f"a bank takes thetas of {THETA_SIZE} and firmware settings of "
                                 f"{BENCH_SIZE} doubles per servo")
    if nets is None:
        nets = np.zeros((n, 1))
    nets = np.array(np.atleast_2d(nets), dtype=np.float64, order="C")
    if nets.shape[0] != n:
        raise ConfigurationError(f"{nets.shape[0]} network rows for {n} servos")
    work = np.zeros(WORK_SIZE) if (nets[:, 0] > 0).any() else np.zeros(0)
    bank = ServoBank(thetas, firmware, np.zeros((n, SERVO_STATE_SIZE)), nets, work)
    bank_reset(bank, np.zeros(n), np.zeros(n))
    return bank


# ----------------------------------------------------------------------------- one servo

@njit(cache=True, inline="always")
def reset_servo(record: np.ndarray, q: float, v: float) -> None:
    """Reset a servo's record at position q (rad) and velocity v (rad/s): no control, the
    limiter at q, the measurement and report histories full of the initial state, torque
    enabled, no network torque and an empty network history."""
    reset_record(record, q, v)


@njit(cache=True, inline="always")
def network_torque(record: np.ndarray, net: np.ndarray, error: float, velocity: float,
                   kp: float, enable: float, work: np.ndarray) -> float:
    """A learned actuator's torque (N·m) this period: ``error`` = goal − q (rad) and
    ``velocity`` (rad/s) pushed into the record's rings, the network's input built from the
    samples NET_STRIDE periods apart (the first period's standing in for those before it),
    then ``kp`` and ``enable`` (:func:`frictionsim.actuator_net.net_features`' order),
    evaluated in ``work`` (:data:`WORK_SIZE` doubles). The rings are indexed by the periods
    the record counted before this one's firmware law."""
    k = int(record[SERVO_PERIODS])
    record[SERVO_ERRORS + k % NET_RING] = error
    record[SERVO_VELOCITIES + k % NET_RING] = velocity
    x = work[2 * MAX_WIDTH: 2 * MAX_WIDTH + N_INPUTS]
    for h in range(NET_HISTORY):
        i = max(k - h * NET_STRIDE, 0) % NET_RING
        x[h] = record[SERVO_ERRORS + i]
        x[NET_HISTORY + h] = record[SERVO_VELOCITIES + i]
    x[2 * NET_HISTORY] = kp
    x[2 * NET_HISTORY + 1] = enable
    return net_torque(net, x, work)


@njit(cache=True, inline="always")
def period_servo(record: np.ndarray, theta: np.ndarray, firmware: np.ndarray, goal: float,
                 q: float, v: float, enable: float, logged_vin: float, period: float,
                 draw_at_period: bool) -> float:
    """One control period of one servo without a network (module docstring); returns the
    control u (V or A) it holds, ``record[SERVO_U]``.

    goal: its goal position (rad); q, v: the joint's position (rad, in the convention the
    firmware sees) and velocity (rad/s) now; enable: torque enable (0/1), latched; logged_vin:
    the logged supply (V) or :data:`frictionsim.servo_unit.NO_LOG`; period: the control period
    (s), which ``observation_delay`` counts in; ``draw_at_period``: draw the supply current now
    (event-driven engines: module docstring)."""
    observe(record, q, period, theta)
    record[SERVO_ENABLE] = enable
    u = servo_period(record, goal, q, v, logged_vin, theta, firmware)
    if draw_at_period:
        draw_current(record, enable, v, theta)
    return u


@njit(cache=True, inline="always")
def learned_period(record: np.ndarray, theta: np.ndarray, firmware: np.ndarray,
                   net: np.ndarray, work: np.ndarray, goal: float, q: float, v: float,
                   enable: float, logged_vin: float, period: float, draw_at_period: bool) -> float:
    """:func:`period_servo` of a servo that may carry a learned network ``net`` (a row of
    ``ServoBank.nets``; first entry 0: none): its torque on the error and velocity history
    is computed and held (``record[SERVO_EXTRA]``, N·m), then the period runs as
    :func:`period_servo`. (Physics-only loops call :func:`period_servo` itself: the network's
    branch costs them about 8 ns a period.)"""
    if net[0] > 0.0:
        record[SERVO_EXTRA] = network_torque(record, net, goal - q, v, firmware[KP], enable,
                                             work)
    return period_servo(record, theta, firmware, goal, q, v, enable, logged_vin, period,
                        draw_at_period)


@njit(cache=True, inline="always")
def step_servo(record: np.ndarray, theta: np.ndarray, v: float) -> None:
    """One physics step of one servo at joint velocity v (rad/s): the motor current it draws
    from its supply (``supply``; nothing otherwise). The step's motor torque is
    :func:`held_torque` (the plant computes it from the held control, docs/model.md §4). With
    ``backlash`` and its gap open the rotor turns at the motor side's speed, not v."""
    if theta[BACKLASH] > 0.0 and record[SERVO_CONTACT] == 0.0:
        v = record[SERVO_MOTOR_SPEED]
    draw_current(record, record[SERVO_ENABLE], v, theta)


@njit(cache=True, inline="always")
def held_torque(record: np.ndarray, theta: np.ndarray, v: float) -> float:
    """The motor torque τ_m (N·m) of the held control at velocity v (rad/s) with the latched
    enable flag (``current_limit`` when on); changes nothing. The held network torque, which
    acts beside it, is ``record[SERVO_EXTRA]``."""
    return motor_torque(record[SERVO_U], record[SERVO_ENABLE], v, theta)


# -------------------------------------------------------------------------- the whole bank

@njit(cache=True)
def bank_reset(bank: ServoBank, q: np.ndarray, v: np.ndarray) -> None:
    """Reset every servo of the bank at q[j] (rad), v[j] (rad/s)."""
    for j in range(bank.records.shape[0]):
        reset_servo(bank.records[j], q[j], v[j])


@njit(cache=True, inline="always")
def bank_period(bank: ServoBank, goals: np.ndarray, q: np.ndarray, v: np.ndarray,
                enable: np.ndarray, logged_vin: float, period: float, shared_supply: bool,
                draw_at_period: bool) -> None:
    """One control period of every servo (module docstring): goals, q, v, enable one per
    servo; ``shared_supply``: the servos draw from one supply (a robot's; a bench's
    candidates each have their own). Servo j's report is then ``records[j, SERVO_REPORTED]``,
    its held control ``records[j, SERVO_U]``, its network torque ``records[j, SERVO_EXTRA]``."""
    if shared_supply:
        share_supply(bank.records)
    for j in range(bank.records.shape[0]):
        learned_period(bank.records[j], bank.thetas[j], bank.firmware[j], bank.nets[j],
                       bank.work, goals[j], q[j], v[j], enable[j], logged_vin, period,
                       draw_at_period)


@njit(cache=True, inline="always")
def bank_step(bank: ServoBank, v: np.ndarray, motor: np.ndarray, extra: np.ndarray) -> None:
    """One physics step of every servo at joint velocities v (rad/s, one per servo): the
    currents drawn (:func:`step_servo`), and the torques the physics applies: motor[j] = τ_m
    of the held control, extra[j] = the held network torque (N·m)."""
    for j in range(bank.records.shape[0]):
        step_servo(bank.records[j], bank.thetas[j], v[j])
        motor[j] = held_torque(bank.records[j], bank.thetas[j], v[j])
        extra[j] = bank.records[j, SERVO_EXTRA]


@njit(cache=True, inline="always")
def bank_held_torques(bank: ServoBank, v: np.ndarray, motor: np.ndarray,
                      extra: np.ndarray) -> None:
    """:func:`held_torque` of every servo at v (one per servo) into motor, the held network
    torques into extra; changes nothing (an event-driven right-hand side)."""
    for j in range(bank.records.shape[0]):
        motor[j] = held_torque(bank.records[j], bank.thetas[j], v[j])
        extra[j] = bank.records[j, SERVO_EXTRA]


# ------------------------------------------------- the plain voltage law, lane by lane (SIMD)

@njit(cache=True, inline="always")
def plain_lane_period(goal: float, q: float, q_smooth: float, logged_vin: float,
                      supply_on: float, emf: float, resistance: float, vin: float, kp: float,
                      error_gain: float, ratio: float, max_pwm: float, max_velocity: float,
                      dt: float) -> tuple:
    """:func:`period_servo` for a servo of the plain voltage law
    (:func:`frictionsim.servo_unit.lockstep_compatible`: no ``latency``,
    ``observation_delay``, ``current_limit``, network or Feetech term; a logged supply at
    most), on scalars so that a loop over lanes vectorises: (u, q_smooth). The report is q,
    nothing is drawn. The lock-step vector kernel calls it lane by lane."""
    volts = supply_voltage(logged_vin, 0.0, supply_on, emf, resistance, vin)
    return voltage_control(goal, q, q_smooth, volts, kp, error_gain, ratio, max_pwm,
                           max_velocity, dt)


@njit(cache=True, inline="always")
def plain_lane_torque(u: float, enable: float, v: float, kt: float, resistance: float) -> float:
    """:func:`step_servo`'s τ_m for a lane of the plain voltage law (N·m)."""
    return voltage_motor_torque(u, enable, v, kt, resistance, 0.0)


__all__ = ["RECORD_DTYPE", "ServoBank", "WORK_SIZE", "bank_held_torques", "bank_period",
           "bank_reset", "bank_step", "held_torque", "learned_period", "new_bank",
           "period_servo", "record_view", "reset_servo", "step_servo"]
