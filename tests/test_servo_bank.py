"""One servo bank: every engine runs the control period the same way, for every combination.

The reference is a loop written from the bank's own functions (as docs/python.md shows a
user's ``@njit`` loop): at each control period ``learned_period``, at each physics step
``step_servo``, then the bench's step with the held control and network torque. Every engine
is a physics driver around that bank and must reproduce it:

============================  =================================================  ============
engine                        what is compared                                   tolerance
============================  =================================================  ============
rollout, rollout_substeps(1)  reported positions                                 bit for bit
learned_run                   reported positions (learned and hybrid servos)     bit for bit
lock-step (both kernels),     MAE against the reference's reported positions     exactly 0
scalar batch, learned_errors
C ABI: bank_* and step_with   reported positions                                 bit for bit
C ABI: servo_step             a firmware at the physics rate, against servo_step bit for bit
virtual servo                 positions, against servo_step                      bit for bit
torque trace                  positions (the physical ones)                      bit for bit
teacher_forced labels         the residual torque of the reference's own motion  1e-9 N·m
Robot.fixed_step              reported and physical positions (MuJoCo's gravity  1e-9 rad
                              on the bench as MJCF, its own order of operations)
MuJoCo adapter                reported positions                                 1e-9 rad
robot labels                  the residual of Robot.fixed_step's own motion      1e-9 N·m
event-driven bench, robot     its reported positions against the bank replayed   bit for bit
                              on its own states (period logic), and its motion   5e-3 rad
                              against the fixed step at 1/20 of the period
                              (physics; without ``supply``, whose current this
                              engine draws once per period by design)
============================  =================================================  ============

Combinations: every subset of ``supply``, ``current_limit``, ``latency``,
``observation_delay``, on the XL330 (plain firmware) and on the STS3215 with the Feetech
position loop (D term, dead band, torque limit, acceleration limit); each with the physical
model alone, a learned ``net`` and a ``hybrid``. With no supply logged, ``supply`` is the
source model E − R_s·|i| in all.
"""

from __future__ import annotations

import ctypes
import itertools
import math

import numpy as np
import pytest
from numba import njit

from frictionsim import layout
from frictionsim.actuator_laws import firmware_control
from frictionsim.actuator_net import N_INPUTS, pack_net
from frictionsim.firmware import firmware_settings
from frictionsim.learned_files import LearnedActuator
from frictionsim.params import ParameterSet
from frictionsim.servo_bank import (
    WORK_SIZE,
    learned_period,
    new_bank,
    period_servo,
    record_view,
    reset_servo,
    step_servo,
)
from frictionsim.servo_unit import (
    NO_LOG,
    servo_control,
    servo_draw,
    servo_reset,
    servo_state,
    share_supply,
)
from frictionsim.solvers import c_abi
from frictionsim.solvers.batch import batched_errors
from frictionsim.solvers.fixed_step import bench_step_with, rollout, rollout_substeps, servo_step
from frictionsim.solvers.learned_rollout import (
    learned_errors,
    learned_run,
    physics_theta,
    teacher_forced,
)
from frictionsim.solvers.lockstep import interleaved_errors, lockstep_errors
from frictionsim.solvers.torque_trace import COLUMNS, rollout_torques

EXTENSIONS = ("supply", "current_limit", "latency", "observation_delay")
SUBSETS = [c for r in range(len(EXTENSIONS) + 1) for c in itertools.combinations(EXTENSIONS, r)]
FIRMWARES = ("xl330", "feetech")
KINDS = ("physics", "net", "hybrid")
N = 400
DT = 0.005
MASS, LENGTH = 0.3, 0.12


def name(extensions) -> str:
    return "+".join(extensions) or "none"


# a pure network drives a bare joint (no motor, no friction, no firmware): the extensions
# have nothing to act on there
CASES = [pytest.param(e, f, k, id=f"{f}-{k}-{name(e)}")
         for f in FIRMWARES for k in KINDS for e in (SUBSETS if k != "net" else [()])]


# ------------------------------------------------------------------------------- the servos

def physics(extensions, firmware="xl330") -> ParameterSet:
    """An M6 servo with every extension of ``extensions`` switched on at a value that moves
    the trajectory, semi-implicit (MuJoCo's step)."""
    actuator = "xl330" if firmware == "xl330" else "sts3215_12v"
    values = {"friction_base": 0.03, "friction_stribeck": 0.02, "load_friction_motor": 0.1,
              "load_friction_external": 0.08}
    if firmware == "feetech":
        values.update(kt=0.9, R=4.0, armature=0.004, derivative_time=0.002)
    params = ParameterSet("m6", actuator, values).with_extensions(extensions)
    extra = {}
    if "supply" in extensions:
        extra.update(supply_emf=7.4 if firmware == "xl330" else 12.0, supply_resistance=1.5)
    if "current_limit" in extensions:
        extra["max_current_limit"] = 0.6
    if "latency" in extensions:
        extra["latency_steps"] = 2.0
    if "observation_delay" in extensions:
        extra["observation_delay"] = 3.46 * DT  # between two periods: the interpolation counts
    return params.with_values(**extra).with_scheme("semi_implicit")


def settings(firmware: str) -> dict:
    """The firmware set-up of the bench: the XL330's gain, or the STS3215's P/D loop with a
    torque limit and an acceleration limit."""
    if firmware == "xl330":
        return {"kp": 400.0, "vin": 7.4}
    return {"kp": 32.0, "vin": 12.0, "kd": 32.0, "torque_limit": 0.8, "acceleration": 60.0}


def network(kind: str, seed: int = 3) -> np.ndarray:
    """A small random network: unbounded (a net) or within ±0.05 N·m (a hybrid's residual)."""
    rng = np.random.default_rng(seed)
    hidden = 6
    weights = [rng.normal(0, 0.6, (N_INPUTS, hidden)), rng.normal(0, 0.6, (hidden, 1))]
    biases = [rng.normal(0, 0.1, hidden), rng.normal(0, 0.1, 1)]
    mean = np.zeros(N_INPUTS)
    std = np.array([0.3, 0.3, 0.3, 3.0, 3.0, 3.0, 100.0, 1.0])
    return pack_net(weights, biases, mean, std, np.full(N_INPUTS, -4.0), np.full(N_INPUTS, 4.0),
                    0.0, 0.08 if kind == "net" else 0.03,
                    authority=None if kind == "net" else 0.05)


class Case:
    """A servo of one combination: its physics ``theta``, firmware settings, network row
    (zeros: none) and what the robot engines take (``params``)."""

    def __init__(self, extensions, firmware: str, kind: str) -> None:
        self.physics = physics(extensions, firmware)
        self.settings = settings(firmware)
        self.kind = kind
        actuator = self.physics.actuator
        if kind == "physics":
            self.params = self.physics
            self.net = np.zeros(1)
        else:
            net = network(kind)
            learned = LearnedActuator(kind, actuator, net, (6,),
                                      None if kind == "net" else 0.05,
                                      self.physics if kind == "hybrid" else None,
                                      armature=0.004 if kind == "net" else 0.0)
            self.params = learned.with_scheme("semi_implicit")
            self.net = net
        self.theta = physics_theta(self.params) if kind != "physics" else self.physics.theta()
        self.bench = firmware_settings(actuator, {**self.settings, "mass": MASS,
                                                  "length": LENGTH}, DT)


def goals() -> tuple[np.ndarray, np.ndarray]:
    t = np.arange(N) * DT
    goal = 0.9 * np.sign(np.sin(2 * np.pi * t / 1.1)) + 0.2 * np.sin(7 * t)
    enable = (t < 1.6).astype(float)
    return goal, enable


# -------------------------------------------------------------------------- the reference

@njit
def bank_loop(theta, bench, net, goal, enable, q, v, substeps):
    """The bank's definition of a bench run: reported and physical positions, velocities."""
    n = goal.shape[0]
    reported, physical, velocity = np.empty(n), np.empty(n), np.empty(n)
    servo = np.empty(layout.SERVO_STATE_SIZE)
    work = np.empty(WORK_SIZE)
    reset_servo(servo, q, v)
    dt = bench[layout.DT] / substeps
    for k in range(n):
        u = learned_period(servo, theta, bench, net, work, goal[k], q, v, enable[k], NO_LOG,
                           bench[layout.DT], False)
        reported[k] = servo[layout.SERVO_REPORTED]
        physical[k] = q
        velocity[k] = v
        for _ in range(substeps):
            step_servo(servo, theta, v)
            q, v = bench_step_with(q, v, u, enable[k], servo[layout.SERVO_EXTRA], dt, theta,
                                   bench)
    return reported, physical, velocity


def replay(theta, bench, net, goal, enable, physical, velocity, draw_at_period) -> np.ndarray:
    """The positions a bank of one servo reports when fed an engine's own states at each
    period (``draw_at_period``: as an event-driven engine draws the current)."""
    servo = servo_state(physical[0], velocity[0])
    work = np.empty(WORK_SIZE)
    out = np.empty(len(goal))
    for k in range(len(goal)):
        learned_period(servo, theta, bench, net, work, goal[k], physical[k], velocity[k],
                       enable[k], NO_LOG, bench[layout.DT], draw_at_period)
        out[k] = servo[layout.SERVO_REPORTED]
    return out


@pytest.fixture(scope="module")
def inputs():
    return goals()


# ------------------------------------------------------------------------------ bit for bit

def _ptr(a: np.ndarray):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))


def c_bank_loop(case: Case, goal, enable) -> np.ndarray:
    """The reference loop written against the C ABI: the bank's three entry points and the
    bench step with the network torque."""
    P, D, L = ctypes.POINTER(ctypes.c_double), ctypes.c_double, ctypes.c_long
    head = (L, P, P, P, P, L, P)
    reset = ctypes.CFUNCTYPE(None, *head, P, P)(c_abi.bank_reset_c.address)
    period = ctypes.CFUNCTYPE(None, *head, P, P, P, P, D, D, L, L)(c_abi.bank_period_c.address)
    step = ctypes.CFUNCTYPE(None, *head, P, P, P)(c_abi.bank_step_c.address)
    step_with = ctypes.CFUNCTYPE(None, P, D, D, D, D, P, P)(c_abi.step_with_c.address)
    bank = new_bank(case.theta, case.bench, case.net[None, :])
    work = np.zeros(WORK_SIZE)
    arrays = (bank.thetas, bank.firmware, bank.records, bank.nets)
    args = (1, *(_ptr(a) for a in arrays), bank.nets.shape[1], _ptr(work))
    state = np.zeros(2)
    one = [np.zeros(1) for _ in range(6)]
    g, q, v, en, motor, extra = one
    reset(*args, _ptr(q), _ptr(v))
    out = np.empty(N)
    for k in range(N):
        g[0], q[0], v[0], en[0] = goal[k], state[0], state[1], enable[k]
        period(*args, _ptr(g), _ptr(q), _ptr(v), _ptr(en), math.nan, DT, 1, 0)
        out[k] = bank.records[0, layout.SERVO_REPORTED]
        step(*args, _ptr(v), _ptr(motor), _ptr(extra))
        step_with(_ptr(state), bank.records[0, layout.SERVO_U], enable[k], extra[0], DT,
                  _ptr(case.theta), _ptr(case.bench))
    return out


@pytest.mark.parametrize("extensions,firmware,kind", CASES)
def test_every_compiled_engine_runs_the_bank_bit_for_bit(extensions, firmware, kind, inputs):
    case = Case(extensions, firmware, kind)
    goal, enable = inputs
    reported, physical, velocity = bank_loop(case.theta, case.bench, case.net, goal, enable,
                                             0.0, 0.0, 1)
    assert np.isfinite(reported).all() and np.ptp(physical) > 0.2
    none = np.full(N, NO_LOG)
    positions = np.array([0, N])
    if kind == "physics":
        q, v = np.empty(N), np.empty(N)
        rollout(goal, enable, none, 0.0, 0.0, case.theta, case.bench, DT, q, v)
        np.testing.assert_array_equal(q, reported)
        np.testing.assert_array_equal(v, velocity)
        rollout_substeps(goal, enable, none, 0.0, 0.0, case.theta, case.bench, DT, 1, q, v)
        np.testing.assert_array_equal(q, reported)
        thetas = np.array([case.theta, case.theta])
        args = (thetas, goal, enable, none, reported, positions, np.zeros(1), case.bench[None])
        for kernel in (interleaved_errors, lockstep_errors, batched_errors):
            out = np.full((2, 1), np.nan)
            kernel(*args, out)
            assert (out == 0.0).all(), (kernel.__name__, out)
        trace = np.empty((N, len(COLUMNS)))
        rollout_torques(goal, enable, none, 0.0, 0.0, case.theta, case.bench, DT, trace)
        np.testing.assert_array_equal(trace[:, 0], physical)
    q, v = np.empty(N), np.empty(N)
    learned_run(goal, enable, none, 0.0, 0.0, case.theta, case.bench, case.net, q, v)
    np.testing.assert_array_equal(q, reported)
    out = np.full(1, np.nan)
    learned_errors(goal, enable, none, reported, positions, np.zeros(1), case.bench[None],
                   case.theta, case.net, out)
    assert out[0] == 0.0
    np.testing.assert_array_equal(c_bank_loop(case, goal, enable), reported)


@pytest.mark.parametrize("extensions,firmware", [(e, f) for f in FIRMWARES for e in SUBSETS],
                         ids=[f"{f}-{name(e)}" for f in FIRMWARES for e in SUBSETS])
def test_the_firmware_at_the_physics_rate_in_c_and_in_the_virtual_servo(extensions, firmware,
                                                                        inputs):
    from frictionsim.hw.virtual_servo.joint import SimulatedJoint

    case = Case(extensions, firmware, "physics")
    goal, enable = inputs
    reference, servo, q, v = np.empty(N), servo_state(0.0, 0.0), 0.0, 0.0
    for k in range(N):
        reference[k] = q
        q, v = servo_step(servo, goal[k], q, v, enable[k], NO_LOG, DT, case.theta, case.bench)
    P, D = ctypes.POINTER(ctypes.c_double), ctypes.c_double
    step_c = ctypes.CFUNCTYPE(None, P, P, D, D, D, D, P, P)(c_abi.servo_step_c.address)
    servo, state, out = servo_state(0.0, 0.0), np.zeros(2), np.empty(N)
    for k in range(N):
        out[k] = state[0]
        step_c(_ptr(servo), _ptr(state), goal[k], enable[k], math.nan, DT, _ptr(case.theta),
               _ptr(case.bench))
    np.testing.assert_array_equal(out, reference)
    clock = [0.0]
    joint = SimulatedJoint(case.params, MASS, LENGTH, vin=case.settings["vin"], physics_dt=DT,
                           noise=0.0, clock=lambda: clock[0])
    joint.bench[:] = case.bench  # the bench's own firmware settings, the D term included
    for k in range(N):
        out[k] = joint.q
        joint.goal, joint.enable = goal[k], enable[k]
        clock[0] += DT
        joint.advance()
    np.testing.assert_array_equal(out, reference)


@pytest.mark.parametrize("extensions,firmware", [(e, f) for f in FIRMWARES for e in SUBSETS],
                         ids=[f"{f}-{name(e)}" for f in FIRMWARES for e in SUBSETS])
def test_the_bench_labels_of_the_banks_own_motion_are_zero(extensions, firmware, inputs):
    """Inverse dynamics through the bank (teacher_forced, one period) of the motion the bank
    made: no residual torque is left (the semi-implicit step inverts exactly from the logged
    positions; a held joint's residual is the one nearest 0)."""
    case = Case(extensions, firmware, "physics")
    goal, enable = inputs
    _, physical, velocity = bank_loop(case.theta, case.bench, case.net, goal, enable, 0.0, 0.0,
                                      1)
    features, residual = np.empty((N, N_INPUTS)), np.empty(N)
    teacher_forced(goal, enable, np.full(N, NO_LOG), physical, 0.0, case.theta, case.bench, 1,
                   features, residual)
    assert np.nanmax(np.abs(residual)) < 1e-9


# -------------------------------------------------------------- MuJoCo's dynamics, to 1e-9

@pytest.mark.parametrize("extensions,firmware,kind", CASES)
def test_the_robot_engines_run_the_bank(extensions, firmware, kind, inputs):
    pytest.importorskip("mujoco")
    import mujoco

    from frictionsim.solvers.mujoco_adapter import ServoModel, bench_mjcf
    from frictionsim.solvers.robot import JointServo, Robot
    from frictionsim.solvers.robot_labels import residual_labels

    case = Case(extensions, firmware, kind)
    goal, enable = inputs
    reported, physical, velocity = bank_loop(case.theta, case.bench, case.net, goal, enable,
                                             0.0, 0.0, 1)
    servo = JointServo("servo", case.params, **case.settings)
    mjcf = bench_mjcf(MASS, LENGTH, 0.0, DT)
    robot = Robot(mjcf, [servo], control_period=DT)
    run = robot.fixed_step(goal[:, None], enable[:, None])
    np.testing.assert_allclose(run.q[:, 0], reported, rtol=0, atol=1e-9)
    np.testing.assert_allclose(run.physical[:, 0], physical, rtol=0, atol=1e-9)
    sm = ServoModel(mjcf, [servo], control_period=DT)
    data = sm.make_data()
    q = np.empty(N)
    for k in range(N):
        sm.set_goals(data, [goal[k]])
        sm.set_enable(data, enable[k] > 0.5)
        mujoco.mj_step(sm.model, data)
        q[k] = sm.reported_positions(data)[0]
    sm.check(data)
    np.testing.assert_allclose(q, reported, rtol=0, atol=1e-9)
    if kind == "physics":  # the labels of the robot's own motion: nothing left
        counts = np.ones(N, dtype=np.int64)
        labels = residual_labels(robot, goal[:, None], counts, run.physical, run.v)
        assert np.nanmax(np.abs(labels[enable[:-1] > 0])) < 1e-9


# ------------------------------------------------------------------------ event-driven

EVENT_N = 120
EVENT_CASES = [pytest.param(e, f, k, id=f"{f}-{k}-{name(e)}")
               for f in FIRMWARES for k in KINDS
               for e in (SUBSETS if k == "physics" else [(), EXTENSIONS] if k == "hybrid"
                         else [()])]


@pytest.mark.parametrize("extensions,firmware,kind", EVENT_CASES)
def test_the_event_driven_engines_run_the_bank(extensions, firmware, kind, inputs):
    pytest.importorskip("mujoco")
    from frictionsim.solvers.event_driven import Tolerances
    from frictionsim.solvers.mujoco_adapter import bench_mjcf
    from frictionsim.solvers.one_joint import simulate_log_events
    from frictionsim.solvers.robot import JointServo, Robot

    case = Case(extensions, firmware, kind)
    goal, enable = (a[:EVENT_N] for a in inputs)
    tolerances = Tolerances(rtol=1e-8, atol=1e-10)
    net = case.net if kind != "physics" else None
    bench = simulate_log_events(goal, enable, 0.0, 0.0, case.theta, case.bench, DT, tolerances,
                                net=net)
    np.testing.assert_array_equal(
        bench.q, replay(case.theta, case.bench, case.net, goal, enable, bench.physical, bench.v,
                        True))
    servo = JointServo("servo", case.params, **case.settings)
    robot = Robot(bench_mjcf(MASS, LENGTH, 0.0, DT / 20), [servo], control_period=DT)
    run = robot.event_driven(goal[:, None], enable[:, None], tolerances=tolerances)
    np.testing.assert_array_equal(
        run.q[:, 0], replay(case.theta, case.bench, case.net, goal, enable, run.physical[:, 0],
                            run.v[:, 0], True))
    fine = robot.fixed_step(goal[:, None], enable[:, None])
    if "supply" not in extensions:
        assert np.max(np.abs(bench.q - fine.q[:, 0])) < 5e-3
        assert np.max(np.abs(run.q[:, 0] - fine.q[:, 0])) < 5e-3
    assert np.max(np.abs(run.q[:, 0] - bench.q)) < 1e-6  # the two event engines: one solution


# ------------------------------------------------------------------------------ the pieces

@pytest.mark.parametrize("extensions", SUBSETS, ids=name)
def test_the_extensions_change_the_trajectory(extensions, inputs):
    """The comparisons above would prove nothing if an extension changed nothing."""
    goal, enable = inputs
    plain = Case((), "xl330", "physics")
    ref = bank_loop(plain.theta, plain.bench, plain.net, goal, enable, 0.0, 0.0, 1)[0]
    if extensions:
        case = Case(extensions, "xl330", "physics")
        moved = bank_loop(case.theta, case.bench, case.net, goal, enable, 0.0, 0.0, 1)[0]
        assert np.max(np.abs(moved - ref)) > 1e-3


@pytest.mark.parametrize("kind", ["net", "hybrid"])
def test_a_network_changes_the_trajectory(kind, inputs):
    goal, enable = inputs
    plain, learned = Case((), "xl330", "physics"), Case((), "xl330", kind)
    ref = bank_loop(plain.theta, plain.bench, plain.net, goal, enable, 0.0, 0.0, 1)[0]
    moved = bank_loop(learned.theta, learned.bench, learned.net, goal, enable, 0.0, 0.0, 1)[0]
    assert np.max(np.abs(moved - ref)) > 1e-3


def test_the_feetech_loop_changes_the_trajectory(inputs):
    goal, enable = inputs
    case = Case((), "feetech", "physics")
    with_d = bank_loop(case.theta, case.bench, case.net, goal, enable, 0.0, 0.0, 1)[0]
    bench = case.bench.copy()
    bench[layout.KD] = bench[layout.TORQUE_LIMIT] = bench[layout.ACCELERATION] = 0.0
    plain = bank_loop(case.theta, bench, case.net, goal, enable, 0.0, 0.0, 1)[0]
    assert np.max(np.abs(with_d - plain)) > 1e-3


def test_the_event_driven_engine_draws_the_current_at_the_period_by_argument():
    """draw_at_period is the one scheduling difference: the supply sags in the period itself."""
    case = Case(("supply",), "xl330", "physics")
    a, b = servo_state(0.0, 0.0), servo_state(0.0, 0.0)
    period_servo(a, case.theta, case.bench, 0.5, 0.0, 0.0, 1.0, NO_LOG, DT, False)
    period_servo(b, case.theta, case.bench, 0.5, 0.0, 0.0, 1.0, NO_LOG, DT, True)
    assert a[layout.SERVO_CURRENT] == 0.0 < b[layout.SERVO_CURRENT]
    step_servo(a, case.theta, 0.0)
    assert a[layout.SERVO_CURRENT] == b[layout.SERVO_CURRENT]


def test_servos_on_one_supply_see_the_sum_of_their_currents():
    theta = physics(("supply",)).theta()
    b = firmware_settings("xl330", {"kp": 400.0, "vin": 7.4, "mass": MASS, "length": LENGTH}, DT)
    servos = np.array([servo_state(0.0, 0.0), servo_state(0.0, 0.0)])
    for j, target in enumerate((0.5, 0.2)):
        servo_control(servos[j], target, 0.0, 0.0, NO_LOG, theta, b)
        servo_draw(servos[j], 1.0, 0.0, theta)
    alone = [servos[j, layout.SERVO_CURRENT] for j in range(2)]
    share_supply(servos)
    assert servos[0, layout.SERVO_DRAWN] == servos[1, layout.SERVO_DRAWN] == sum(alone)
    u = servo_control(servos[0], 0.5, 0.0, 0.0, NO_LOG, theta, b)
    emf, rs = theta[layout.SUPPLY_EMF], theta[layout.SUPPLY_RESISTANCE]
    assert servos[0, layout.SERVO_VIN] == emf - rs * abs(sum(alone))
    assert sum(alone) > 0.1 and servos[0, layout.SERVO_VIN] < emf
    duty = 0.5 * 400.0 * theta[layout.ERROR_GAIN] * theta[layout.ERROR_GAIN_RATIO]
    assert u == pytest.approx(servos[0, layout.SERVO_VIN] * duty, rel=1e-14)
    # a logged supply wins over the model
    servo_reset(servos[1], 0.0, 0.0)
    servo_control(servos[1], 0.5, 0.0, 0.0, 6.1, theta, b)
    assert servos[1, layout.SERVO_VIN] == 6.1


@pytest.mark.parametrize("extension,key,value", [("latency", "latency_steps", 1.0),
                                                 ("supply", "supply_resistance", 0.1)])
def test_the_stateless_firmware_law_refuses_what_it_cannot_honour(extension, key, value):
    b = firmware_settings("xl330", {"kp": 400.0, "mass": MASS, "length": LENGTH}, DT)
    theta = physics((extension,)).with_values(**{key: value}).theta()
    with pytest.raises(ValueError, match=extension):
        firmware_control(0.5, 0.0, 0.0, 0.0, theta, b)
    assert math.isfinite(firmware_control(0.5, 0.0, 0.0, 0.0, physics(()).theta(), b)[0])


def test_the_observation_delay_reports_the_position_of_that_long_ago(inputs):
    goal, enable = inputs
    plain = Case((), "xl330", "physics")
    ref = bank_loop(plain.theta, plain.bench, plain.net, goal, enable, 0.0, 0.0, 1)[0]
    for periods in (3.0, 3.25):
        theta = physics(()).with_extensions(("observation_delay",)).with_values(
            observation_delay=periods * DT).theta()
        reported = bank_loop(theta, plain.bench, plain.net, goal, enable, 0.0, 0.0, 1)[0]
        # the physics is untouched: the report is the plain trajectory, late
        m, f = int(periods), periods - int(periods)
        late = np.concatenate([np.full(m, ref[0]), ref[:N - m]])
        early = np.concatenate([np.full(m + 1, ref[0]), ref[:N - m - 1]])
        np.testing.assert_allclose(reported, (1 - f) * late + f * early, rtol=0, atol=1e-15)


def test_the_records_are_named_over_the_same_memory():
    bank = new_bank(physics(()).theta(), firmware_settings("xl330", {"kp": 400.0}, DT))
    view = record_view(bank.records)
    period_servo(bank.records[0], bank.thetas[0], bank.firmware[0], 0.3, 0.1, 0.0, 1.0, NO_LOG,
                 DT, False)
    assert view["u"][0] == bank.records[0, layout.SERVO_U] != 0.0
    assert view["reported"][0] == 0.1 and view["enable"][0] == 1.0
    view["enable"][0] = 0.0  # a view: writes reach the record
    assert bank.records[0, layout.SERVO_ENABLE] == 0.0
    assert record_view(bank.records[0])["periods"] == 1.0
