"""Identified servos inside MuJoCo: the firmware, the motor and frictionsim's friction, compiled
into MuJoCo's step (optional ``mujoco`` extra).

:class:`ServoModel` compiles an MJCF model (path, text or ``MjSpec``; a given spec is copied,
never edited) with servos on named hinge joints: each joint gets its servo's ``armature``
added to its own (as frictionsim's own simulators do), no damping or friction of its
own, and an actuator whose force is 0 and whose ``ctrl`` is the servo's goal position
(physical joint angle, rad). The model's other joints may be anything, a floating base
included; its integrator becomes Euler (with an :class:`IntegratorWarning` if it was
another). Then every ``mj_step`` (or ``mujoco.rollout``) of that
model runs, in a compiled control callback, a physics driver around the servo bank
(:mod:`frictionsim.servo_bank`, its records kept per ``MjData``): the bank's control period
at the servos' period (zero-order hold), its physics step at every step (the currents drawn,
the motor torques), and the friction:

- ``budget`` (default): frictionsim's friction-budget clipping exactly, docs/model.md §10's
  problem solved by :func:`frictionsim.solvers.joint_friction.clip_friction_warm_into` (from
  the last step's active set) with the mass
  matrix MuJoCo just computed, applied with the motor torque through ``qfrc_applied``.
  MuJoCo's Euler step then makes it docs/model.md §4/§10's ``semi_implicit`` scheme: on the
  one-joint bench it reproduces frictionsim's own rollout with ``--scheme
  semi_implicit``. The alternative, writing the budget into MuJoCo's own friction
  constraint rows (``efc_frictionloss`` with stop-in-one-step solref/solimp), is exact
  for one joint, but for coupled joints only as close as the solver's noslip iterations
  get (``../shared/notes/mujoco-callbacks.md`` records 1.4e-3 on random rest states),
  while ``clip_friction`` is exact by construction (KKT to 1e-10 in the tests) and
  skips MuJoCo's friction rows altogether, so a step costs less than a bare ``mj_step``
  with those rows (see ``frictionsim bench``);
- ``frictionloss``: the reference project's method, for comparison: the budget F and
  K_v computed from the current step's torques are written to the model's
  ``dof_frictionloss`` and ``dof_damping``, which MuJoCo's soft friction rows and
  damping use from the next step on.

A servo with ``backlash`` (docs/model.md §14, ``budget`` mode) takes
:func:`frictionsim.solvers.robot_gear.adapter_gear_step`: the step solved as the robot's
geared fixed step solves it, its forces written so that MuJoCo's Euler step lands there.

A learned actuator (``net``, or a ``hybrid``'s residual; docs/model.md §13) runs in the same
bank: its network is evaluated once per control period, from the servo's error and velocity
history kept in its record, and its torque held until the next, as in frictionsim's own
fixed step (:func:`frictionsim.solvers.robot.fixed_step_run`).

**Why a control callback.** The per-step work must not run Python. MuJoCo's
``mjcb_control`` accepts a C function pointer; a Numba ``cfunc`` is one, so MuJoCo
calls compiled code directly (about 30 ns for an empty callback). It runs after
MuJoCo computed M(q), the bias forces and the constraint rows and before the
actuation and the constraint solve: exactly where the friction of this step belongs.

**Process-global callback.** MuJoCo has one ``mjcb_control`` for every model. The one
callback installed here looks the model up in a table of registered ServoModels (by
the ``mjModel`` address) and returns at once for any other model, so other models in
the process are untouched; a model is removed from the table when it is garbage
collected. Another control callback installed by someone else is refused, not
silently replaced.

**Threads.** ``mujoco.rollout`` steps several ``MjData`` in threads: all the state
and scratch memory of the callback lives in each ``MjData``'s ``userdata`` (the
ServoModel sizes it), the table is read-only while stepping, and the callback
allocates nothing; so any number of threads may step their own ``MjData``. The
``frictionloss`` mode writes the *model*'s arrays, as the reference project does:
with threads, give each thread its own model.

The fields of ``mjData`` the callback reads are pointers at fixed offsets of the
struct, the same for every ``MjData`` of the installed MuJoCo build; they are found
once per process by scanning a small ``MjData`` for the known addresses of its arrays
(and for a known ``time``), never hard-coded.
"""

from __future__ import annotations

import ctypes
import secrets
import warnings
import weakref

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import carray, cfunc, types
from numba.extending import intrinsic

from frictionsim import schema
from frictionsim.errors import ConfigurationError
from frictionsim.friction import friction_budget, rippled_static
from frictionsim.gear_gap import refuse_backlash, refuse_ripple
from frictionsim.layout import (
    ARMATURE,
    BENCH_SIZE,
    SERVO_Q_SMOOTH,
    SERVO_REPORTED,
    SERVO_STATE_SIZE,
    THETA_SIZE,
)
from frictionsim.learned_files import LearnedActuator
from frictionsim.params import ParameterSet
from frictionsim.schedule import ControlSchedule, period_due, steps_between
from frictionsim.servo_bank import WORK_SIZE as BANK_WORK_SIZE
from frictionsim.servo_bank import ServoBank, bank_period, bank_reset, bank_step
from frictionsim.servo_unit import NO_LOG
from frictionsim.solvers.errors import SimulationError
from frictionsim.solvers.joint_friction import (
    MAX_JOINTS,
    WORK_SIZE,
    clip_friction_warm_into,
    forget_active_set,
)
from frictionsim.solvers.learned_rollout import bare_theta
from frictionsim.solvers.mjcf_export import SchemeWarning, reference_scheme_note
from frictionsim.solvers.mjcf_files import read_spec
from frictionsim.solvers.mujoco_dynamics import check_hinges, mj_fullM, mujoco
from frictionsim.solvers.robot import JointServo, check_delay_reach, check_servos, servo_nets
from frictionsim.solvers.robot_gear import adapter_gear_scratch, adapter_gear_step, has_backlash
from frictionsim.solvers.rollouts import Rollout

MODES = ("budget", "frictionloss")
#: Rows of the table of registered models at first; it doubles whenever every row is taken,
#: so any number of ServoModels may be alive at once.
INITIAL_MODELS = 64

# The table of registered models: one row of doubles per model, a header, one block of
# addresses per servo, then the servo bank's thetas and firmware settings (rows of
# layout.THETA_SIZE and layout.BENCH_SIZE doubles, one per servo, contiguous: the compiled
# callback views them as the bank's arrays). The callback and the Python side index it by
# these names only.
CFG_ACTIVE = 0          # 1 while the model is registered
CFG_FRICTIONLOSS = 1    # 1: the "frictionloss" mode, 0: "budget"
CFG_SERVOS = 2          # number of servos
CFG_NV = 3              # the model's dofs
CFG_PERIOD = 4          # the firmware's control period (s)
CFG_TIMESTEP = 5        # the model's timestep (s)
CFG_USER_OFFSET = 6     # where the adapter's state starts in userdata
CFG_STATE_SIZE = 7      # doubles of that state
CFG_NU = 8              # the model's actuators (length of ctrl)
CFG_TOKEN = 9           # a random number the model carries too: its copies find their row
CFG_NQ = 10             # the model's positions (nq > nv with a floating base)
CFG_NET_WIDTH = 11      # doubles per row of the model's network table
CFG_SUBSTEPS = 12       # physics steps per control period (frictionsim.schedule)
HEADER = 13
SB_DOF = 0              # servo block: the joint's dof address
SB_QPOS = 1             # its qpos address
SB_CTRL = 2             # the ctrl index of its goal
SERVO_BLOCK = 3
CFG_THETAS = HEADER + MAX_JOINTS * SERVO_BLOCK
CFG_FIRMWARE = CFG_THETAS + MAX_JOINTS * THETA_SIZE
CONFIG_SIZE = CFG_FIRMWARE + MAX_JOINTS * BENCH_SIZE

# The state in each MjData's userdata: a header, two registers per servo, the servo bank's
# records (rows of layout.SERVO_STATE_SIZE, contiguous), then scratch memory.
ST_STARTED = 0          # 0 until the first step after a reset
ST_STEPS = 1            # physics steps since the reset (its control periods' schedule)
ST_LAST_TIME = 2        # time of the last step (s), to notice time going back
ST_FAILURES = 3         # steps whose friction solve did not converge
ST_FIRST_FAILURE = 4    # time of the first of them (s)
ST_BAD_GOALS = 5        # control periods whose goal was not finite (the servo held instead)
ST_FIRST_BAD_GOAL = 6   # time of the first of them (s)
ST_UNSERVED_COPY = 7    # 1: a copy of a frictionloss-mode model was stepped (not served)
STATE_HEAD = 8
SL_DISABLED = 0         # servo register: 1 when its torque is disabled (default 0: enabled)
SL_TORQUE = 1           # the actuator's torque at the last step, τ_m + network (N·m)
REGISTERS = 2
# Scratch after the records: M (nv²), τ, b, v, τ_f (nv each), then per servo its goal,
# position, velocity, enable, motor and network torque (ns each), then the friction solver's
# work, which the bank's network evaluation uses first, once per control period.
PER_SERVO_SCRATCH = 6
# The network reads the start of the friction solve's scratch, the Cholesky factor each solve
# writes anew, never the active set a solve keeps for the next step's.
assert BANK_WORK_SIZE <= MAX_JOINTS * MAX_JOINTS


class IntegratorWarning(UserWarning):
    """A model whose integrator the adapter replaced by Euler."""


def state_size(servos: int, nv: int) -> int:
    """Doubles of ``userdata`` a ServoModel needs per MjData (the last
    :func:`~frictionsim.solvers.robot_gear.adapter_gear_scratch` of them for gear gaps)."""
    return (STATE_HEAD + (REGISTERS + SERVO_STATE_SIZE + PER_SERVO_SCRATCH) * servos
            + nv * nv + 4 * nv + WORK_SIZE + adapter_gear_scratch(nv, servos))


# ------------------------------------------------------------ raw memory from compiled code

def _pointer_intrinsic(numba_type):
    """An intrinsic turning an int64 address into a pointer to ``numba_type``."""
    pointer = types.CPointer(numba_type)

    @intrinsic
    def at(typingctx, address):
        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(pointer))

        return pointer(types.int64), codegen

    return at


_f64_at = _pointer_intrinsic(types.float64)  # float64* at an address
_i64_at = _pointer_intrinsic(types.int64)
_i32_at = _pointer_intrinsic(types.int32)


@intrinsic
def _address(typingctx, pointer):
    """The int64 address of a void pointer."""
    sig = types.int64(types.voidptr)

    def codegen(context, builder, signature, args):
        return builder.ptrtoint(args[0], context.get_value_type(types.int64))

    return sig, codegen


_TINY = """<mujoco><size nuserdata="5"/><worldbody><body><joint name="j" type="hinge"/>
<geom type="sphere" size="0.1" mass="1"/></body></worldbody>
<actuator><motor joint="j"/></actuator></mujoco>"""
_FIELDS = ("qpos", "qvel", "ctrl", "qfrc_applied", "qfrc_bias", "qfrc_passive", "userdata")


def data_offsets() -> dict[str, int]:
    """Byte offsets, inside an ``mjData``, of the array pointers the callback reads and of
    ``time``; found on a private MjData (the scan never leaves the struct: it stops at the
    last field it looks for)."""
    model = mujoco.MjModel.from_xml_string(_TINY)
    data = mujoco.MjData(model)
    wanted = {name: getattr(data, name).ctypes.data for name in _FIELDS}
    if len(set(wanted.values())) != len(wanted):
        raise RuntimeError("MuJoCo data arrays share addresses; cannot locate them")
    base, found, offset = data._address, {}, 0
    while len(found) < len(wanted):
        if offset > 1 << 22:
            raise RuntimeError("could not locate MuJoCo's data arrays in mjData")
        word = ctypes.c_uint64.from_address(base + offset).value
        for name, address in wanted.items():
            if word == address and name not in found:
                found[name] = offset
        offset += 8
    data.time = 7654.321
    limit = min(found.values())
    times = [o for o in range(0, limit, 8)
             if ctypes.c_double.from_address(base + o).value == 7654.321]
    data.time = 1234.5
    times = [o for o in times if ctypes.c_double.from_address(base + o).value == 1234.5]
    if len(times) != 1:
        raise RuntimeError("could not locate mjData.time")
    found["time"] = times[0]
    return found


#: The model's own mark (a custom numeric): [MARK, table row, token]. A copy of the compiled
#: model (``copy.copy``, or the models ``mujoco.rollout`` is given) has another address but
#: the same mark, which leads the callback to its servos.
MARK = 7.0368744177664e13 + 0.8125  # 2^46 + 13/16: no model holds it by chance
MARK_NAME = "frictionsim_servo_model"


def _numeric_model(sizes: list[int]):
    nums = "".join(f'<numeric name="n{i}" size="{s}"/>' for i, s in enumerate(sizes))
    return mujoco.MjModel.from_xml_string(
        f"<mujoco><custom>{nums}</custom><worldbody><body><joint type='hinge'/>"
        "<geom type='sphere' size='0.1' mass='1'/></body></worldbody></mujoco>")


def model_offsets() -> dict[str, int] | None:
    """Byte offsets in ``mjModel`` of ``nnumericdata`` (int) and of the ``numeric_data``
    pointer, found on private models of known sizes; None if they cannot be told apart (the
    callback then serves registered models only)."""
    models = [_numeric_model(s) for s in ([1, 1, 1], [2, 3], [4])]
    sizes = [int(m.nnumericdata) for m in models]
    counts = [o for o in range(0, 1 << 14, 4)
              if all(ctypes.c_int32.from_address(m._address + o).value == n
                     for m, n in zip(models, sizes))]
    pointers = [o for o in range(0, 1 << 16, 8)
                if all(ctypes.c_uint64.from_address(m._address + o).value
                       == m.numeric_data.ctypes.data for m in models)]
    if len(counts) != 1 or len(pointers) != 1:
        return None
    return {"nnumericdata": counts[0], "numeric_data": pointers[0]}


# ------------------------------------------------------------------- the table and callback

class _Table:
    """The registered models: one row per model (its config, ``config``) and its addresses
    (``keys``: model, dof_frictionloss, dof_damping, network table). The compiled callback
    finds them through ``directory`` ([config address, keys address, rows]), whose own
    address it reads from the anchor (:data:`ANCHOR_SYMBOL`): growing the table writes the
    new addresses before the new row count, and the callback reads the count first, so a
    callback running meanwhile sees either table whole. Outgrown tables stay allocated
    (``retired``): a callback on another thread may still be reading one."""

    def __init__(self, rows: int) -> None:
        self.directory = np.zeros(3, dtype=np.int64)
        self.retired: list[tuple[np.ndarray, np.ndarray]] = []
        self.config = np.zeros((rows, CONFIG_SIZE))
        self.keys = np.zeros((rows, 4), dtype=np.int64)
        self._publish()

    def _publish(self) -> None:
        self.directory[0] = self.config.ctypes.data
        self.directory[1] = self.keys.ctypes.data
        self.directory[2] = len(self.keys)

    def free_row(self) -> int:
        """A free row, the table doubled first when every row is taken."""
        free = np.nonzero(self.keys[:, 0] == 0)[0]
        if len(free):
            return int(free[0])
        rows = len(self.keys)
        config = np.zeros((2 * rows, CONFIG_SIZE))
        keys = np.zeros((2 * rows, 4), dtype=np.int64)
        config[:rows], keys[:rows] = self.config, self.keys
        self.retired.append((self.config, self.keys))
        self.config, self.keys = config, keys
        self._publish()
        return rows


_TABLE = _Table(INITIAL_MODELS)
_CALLBACK = None
_C_POINTER = None


# The constants the callback needs from this process (the table's directory, the struct
# offsets found at run time) sit in an array the linker knows by name: the compiled callback
# refers to the symbol, not to an address, so it is cached to disk like every other kernel and
# a later process binds it to its own array.
ANCHOR_SYMBOL = "frictionsim_servo_adapter_anchor_v1"
(A_DIRECTORY, A_QPOS, A_QVEL, A_CTRL, A_APPLIED, A_BIAS, A_PASSIVE, A_USERDATA, A_TIME,
 A_ADOPT, A_NNUMERIC, A_NUMERIC, A_SET) = range(13)
ANCHOR_SIZE = 13
_ANCHOR = np.zeros(ANCHOR_SIZE, dtype=np.int64)
llvm.add_symbol(ANCHOR_SYMBOL, _ANCHOR.ctypes.data)


@intrinsic
def _anchor_address(typingctx):
    """The address of the array published as :data:`ANCHOR_SYMBOL` (resolved at load)."""
    def codegen(context, builder, signature, args):
        module = builder.module
        anchor = module.globals.get(ANCHOR_SYMBOL)
        if anchor is None:
            anchor = ir.GlobalVariable(module, ir.IntType(64), ANCHOR_SYMBOL)
        return builder.ptrtoint(anchor, context.get_value_type(types.int64))

    return types.int64(), codegen


def _fill_anchor() -> None:
    """Write this process's offsets and the table's directory into the anchor (once)."""
    if _ANCHOR[A_SET]:
        return
    off = data_offsets()
    model_off = model_offsets()
    for slot, name in ((A_QPOS, "qpos"), (A_QVEL, "qvel"), (A_CTRL, "ctrl"),
                       (A_APPLIED, "qfrc_applied"), (A_BIAS, "qfrc_bias"),
                       (A_PASSIVE, "qfrc_passive"), (A_USERDATA, "userdata"), (A_TIME, "time")):
        _ANCHOR[slot] = off[name]
    _ANCHOR[A_ADOPT] = model_off is not None
    if model_off is not None:
        _ANCHOR[A_NNUMERIC] = model_off["nnumericdata"]
        _ANCHOR[A_NUMERIC] = model_off["numeric_data"]
    _ANCHOR[A_DIRECTORY] = _TABLE.directory.ctypes.data
    _ANCHOR[A_SET] = 1


def servo_callback(m, d):  # pragma: no cover - runs inside mj_step as machine code
    """MuJoCo's ``mjcb_control`` (``mjModel*``, ``mjData*``), compiled as a C function by
    :func:`_install`: the servos of a registered model (the module docstring)."""
    ma = _address(m)
    anchor = carray(_i64_at(_anchor_address()), (ANCHOR_SIZE,))
    o_qpos, o_qvel, o_ctrl = anchor[A_QPOS], anchor[A_QVEL], anchor[A_CTRL]
    o_applied, o_bias, o_passive = anchor[A_APPLIED], anchor[A_BIAS], anchor[A_PASSIVE]
    o_userdata, o_time = anchor[A_USERDATA], anchor[A_TIME]
    directory = carray(_i64_at(anchor[A_DIRECTORY]), (3,))
    rows = directory[2]  # read before the addresses: see _Table
    config_address = directory[0]
    keys = carray(_i64_at(directory[1]), (rows, 4))
    row = -1
    copy = False
    if anchor[A_ADOPT]:  # every registered model and its copies carry its mark: the row at once
        nd = carray(_i32_at(ma + anchor[A_NNUMERIC]), (1,))[0]
        if nd >= 3:
            nums = carray(_f64_at(carray(_i64_at(ma + anchor[A_NUMERIC]), (1,))[0]), (nd,))
            # from the end: the mark is added after the model's own numerics
            for i in range(nd - 3, -1, -1):
                if nums[i] == MARK:
                    r = int(nums[i + 1])
                    if 0 <= r < rows:
                        c = carray(_f64_at(config_address + 8 * r * CONFIG_SIZE),
                                   (CONFIG_SIZE,))
                        if c[CFG_ACTIVE] != 0.0 and c[CFG_TOKEN] == nums[i + 2]:
                            row = r
                            copy = keys[r, 0] != ma
                    break
    else:
        for i in range(rows):
            if keys[i, 0] == ma:
                row = i
                break
    if row < 0:
        return
    cfg = carray(_f64_at(config_address + 8 * row * CONFIG_SIZE), (CONFIG_SIZE,))
    if cfg[CFG_ACTIVE] == 0.0:
        return
    da = _address(d)
    frictionloss = cfg[CFG_FRICTIONLOSS] == 1.0
    ns = int(cfg[CFG_SERVOS])
    nv = int(cfg[CFG_NV])
    period = cfg[CFG_PERIOD]
    dt = cfg[CFG_TIMESTEP]
    qpos = carray(_f64_at(carray(_i64_at(da + o_qpos), (1,))[0]), (int(cfg[CFG_NQ]),))
    qvel = carray(_f64_at(carray(_i64_at(da + o_qvel), (1,))[0]), (nv,))
    ctrl = carray(_f64_at(carray(_i64_at(da + o_ctrl), (1,))[0]), (int(cfg[CFG_NU]),))
    applied = carray(_f64_at(carray(_i64_at(da + o_applied), (1,))[0]), (nv,))
    bias = carray(_f64_at(carray(_i64_at(da + o_bias), (1,))[0]), (nv,))
    passive = carray(_f64_at(carray(_i64_at(da + o_passive), (1,))[0]), (nv,))
    user = carray(_f64_at(carray(_i64_at(da + o_userdata), (1,))[0]
                          + 8 * int(cfg[CFG_USER_OFFSET])), (int(cfg[CFG_STATE_SIZE]),))
    now = carray(_f64_at(da + o_time), (1,))[0]
    if copy and frictionloss:  # its friction would be written into the original model
        user[ST_UNSERVED_COPY] = 1.0
        return
    registers = user[STATE_HEAD: STATE_HEAD + REGISTERS * ns].reshape((ns, REGISTERS))
    base = STATE_HEAD + REGISTERS * ns
    records = user[base: base + SERVO_STATE_SIZE * ns].reshape((ns, SERVO_STATE_SIZE))
    base += SERVO_STATE_SIZE * ns
    mass = user[base: base + nv * nv].reshape((nv, nv))
    base += nv * nv
    tau = user[base: base + nv]
    budget = user[base + nv: base + 2 * nv]
    vel = user[base + 2 * nv: base + 3 * nv]
    tau_f = user[base + 3 * nv: base + 4 * nv]
    base += 4 * nv
    goals = user[base: base + ns]
    gq = user[base + ns: base + 2 * ns]
    gv = user[base + 2 * ns: base + 3 * ns]
    on = user[base + 3 * ns: base + 4 * ns]
    motor = user[base + 4 * ns: base + 5 * ns]
    extra = user[base + 5 * ns: base + 6 * ns]
    base += PER_SERVO_SCRATCH * ns
    work = user[base: base + WORK_SIZE]
    gear = user[base + WORK_SIZE: base + WORK_SIZE + adapter_gear_scratch(nv, ns)]
    blocks = cfg[HEADER: HEADER + SERVO_BLOCK * ns].reshape((ns, SERVO_BLOCK))
    bank = ServoBank(
        cfg[CFG_THETAS: CFG_THETAS + THETA_SIZE * ns].reshape((ns, THETA_SIZE)),
        cfg[CFG_FIRMWARE: CFG_FIRMWARE + BENCH_SIZE * ns].reshape((ns, BENCH_SIZE)),
        records,
        carray(_f64_at(keys[row, 3]), (ns, int(cfg[CFG_NET_WIDTH]))),
        work[:BANK_WORK_SIZE])
    # A new run (reset, or time going back as rollouts set their initial state).
    advanced = now > user[ST_LAST_TIME] + 0.5 * dt
    fresh = user[ST_STARTED] == 0.0 or now < user[ST_LAST_TIME] - 0.5 * dt
    if fresh:
        user[ST_STARTED] = 1.0
        user[ST_STEPS] = 0.0
        user[ST_FAILURES] = 0.0
        user[ST_BAD_GOALS] = 0.0
        for j in range(ns):
            gq[j] = qpos[int(blocks[j, SB_QPOS])]
            gv[j] = qvel[int(blocks[j, SB_DOF])]
        bank_reset(bank, gq, gv)
        forget_active_set(work)  # a run must not depend on the one before
    elif advanced:
        user[ST_STEPS] += steps_between(user[ST_LAST_TIME], now, dt)
    user[ST_LAST_TIME] = now
    # a call repeated at one time (mj_forward) runs no period again: it holds the control
    if (fresh or advanced) and period_due(int(user[ST_STEPS]), int(cfg[CFG_SUBSTEPS])):
        for j in range(ns):
            goal = ctrl[int(blocks[j, SB_CTRL])]
            if not np.isfinite(goal):
                # MuJoCo would reset the state on the NaN acceleration, hiding it: hold the
                # last target instead and let ServoModel.check report it.
                if user[ST_BAD_GOALS] == 0.0:
                    user[ST_FIRST_BAD_GOAL] = now
                user[ST_BAD_GOALS] += 1.0
                goal = records[j, SERVO_Q_SMOOTH]
            goals[j] = goal
            gq[j] = qpos[int(blocks[j, SB_QPOS])]
            gv[j] = qvel[int(blocks[j, SB_DOF])]
            on[j] = 0.0 if registers[j, SL_DISABLED] != 0.0 else 1.0
        # one supply for every servo of the model
        bank_period(bank, goals, gq, gv, on, NO_LOG, period, True, False)
    if not frictionloss and has_backlash(bank.thetas):
        index = gear[:2 * ns].view(np.int64)
        for j in range(ns):
            index[j] = int(blocks[j, SB_DOF])
            index[ns + j] = int(blocks[j, SB_QPOS])
        mj_fullM(ma, da, mass.ctypes.data)
        for i in range(nv):
            vel[i] = passive[i] - bias[i]
        if not adapter_gear_step(qpos, qvel, index[ns:], index[:ns], bank, mass, vel, applied,
                                 fresh, advanced, dt, tau, budget, tau_f, gv, motor, extra,
                                 work, gear[2 * ns:]):
            if user[ST_FAILURES] == 0.0:
                user[ST_FIRST_FAILURE] = now
            user[ST_FAILURES] += 1.0
        for j in range(ns):
            registers[j, SL_TORQUE] = motor[j] + extra[j]
        return
    for i in range(nv):
        tau[i] = passive[i] - bias[i]
        budget[i] = 0.0
        vel[i] = qvel[i]
    for j in range(ns):
        gv[j] = vel[int(blocks[j, SB_DOF])]
    bank_step(bank, gv, motor, extra)
    for j in range(ns):
        theta = bank.thetas[j]
        dof = int(blocks[j, SB_DOF])
        b = friction_budget(vel[dof], motor[j], tau[dof], theta)
        registers[j, SL_TORQUE] = motor[j] + extra[j]
        tau[dof] += registers[j, SL_TORQUE]
        if frictionloss:
            fl = carray(_f64_at(keys[row, 1]), (nv,))
            damping = carray(_f64_at(keys[row, 2]), (nv,))
            fl[dof] = max(b.static, 1e-12)  # a row must stay: MuJoCo drops zero ones
            damping[dof] = b.viscous
            applied[dof] = registers[j, SL_TORQUE]
        else:
            static = rippled_static(b.static, b.viscous, qpos[int(blocks[j, SB_QPOS])],
                                    vel[dof], theta)
            budget[dof] = static + b.viscous * abs(vel[dof])
    if frictionloss:
        return
    mj_fullM(ma, da, mass.ctypes.data)
    # From the last step's active set: on a standing biped 1 iteration a step instead of 4.5
    if clip_friction_warm_into(mass, tau, vel, budget, dt, tau_f, work) < 0:
        # Not converged: tau_f is feasible but maybe not optimal; ServoModel.check says so.
        if user[ST_FAILURES] == 0.0:
            user[ST_FIRST_FAILURE] = now
        user[ST_FAILURES] += 1.0
    for j in range(ns):
        dof = int(blocks[j, SB_DOF])
        applied[dof] = registers[j, SL_TORQUE] + tau_f[dof]



def _install() -> None:
    """Compile the callback (once per process) and make it MuJoCo's ``mjcb_control``."""
    global _CALLBACK, _C_POINTER
    if _CALLBACK is None:
        _fill_anchor()
        # compiled here, not at import: a process that never builds a ServoModel never waits
        _CALLBACK = cfunc(types.void(types.voidptr, types.voidptr), cache=True)(servo_callback)
        _C_POINTER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(_CALLBACK.address)
    if mujoco.get_mjcb_control() is None:  # a foreign one was refused before the compile
        mujoco.set_mjcb_control(_C_POINTER)


class ForeignCallbackError(ConfigurationError, RuntimeError):
    """Another ``mjcb_control`` is installed: the adapter needs MuJoCo's control callback."""


def refuse_foreign_callback() -> None:
    """ForeignCallbackError when a control callback other than the adapter's is installed (a
    C function or a Python one): checked before the model is compiled, which would call it."""
    current = mujoco.get_mjcb_control()
    if current is None:
        return
    ours = (_CALLBACK is not None and isinstance(current, ctypes._CFuncPtr)
            and ctypes.cast(current, ctypes.c_void_p).value == _CALLBACK.address)
    if not ours:
        raise ForeignCallbackError(
            "another mjcb_control callback is installed; the servo adapter needs MuJoCo's "
            "control callback (it is process-global): mujoco.set_mjcb_control(None) removes it")


def _release(row: int, nets: np.ndarray | None = None) -> None:
    """Free a model's row of the table; ``nets``, its network table, was held alive until now
    (the callback reads it by address)."""
    _TABLE.config[row, CFG_ACTIVE] = 0.0
    _TABLE.keys[row] = 0


# ----------------------------------------------------------------------------- ServoModel

class ServoModel:
    """An MJCF model (path, XML text or ``mujoco.MjSpec``) compiled with servos on its joints.

    ``friction``: ``"budget"`` (frictionsim's, exact) or ``"frictionloss"`` (the reference
    project's); ``control_period``: the firmware's period (s), a multiple of the model's
    timestep. ``model`` is the compiled ``MjModel``; step it with ``mujoco.mj_step`` or
    ``mujoco.rollout`` as usual, the goals in ``data.ctrl[servo_model.ctrl_index]``.
    """

    def __init__(self, mjcf, servos: list[JointServo], friction: str = "budget",
                 control_period: float = 0.005) -> None:
        if friction not in MODES:
            raise ConfigurationError(f"friction mode {friction!r}: expected one of {', '.join(MODES)}")
        servos = check_servos(servos)
        if len(servos) > MAX_JOINTS:
            raise ConfigurationError(f"1 to {MAX_JOINTS} servos, got {len(servos)}")
        self.servos = servos
        self.friction = friction
        refuse_foreign_callback()  # before any compile: MuJoCo would call it
        self._warn_scheme()
        self._thetas = [semi_implicit_theta(s) for s in self.servos]
        if friction == "frictionloss":
            rows = ("MuJoCo's friction rows (--friction frictionloss; robot simulate: --engine "
                    "mujoco_frictionloss)")
            refuse_backlash(np.array(self._thetas), rows)
            refuse_ripple(np.array(self._thetas), rows)
        spec, self.ctrl_index = servo_spec(mjcf, self.servos, friction)
        mark = spec.add_numeric()
        mark.name = MARK_NAME
        mark.data = [MARK, -1.0, 0.0]  # row and token set once registered
        user0 = int(spec.nuserdata)
        probe = spec.compile()
        size = state_size(len(servos), probe.nv)
        spec.nuserdata = user0 + size
        self.model = spec.compile()
        self.qpos_adr, self.dofs = check_hinges(self.model, [s.joint for s in self.servos])
        if self.model.nv > MAX_JOINTS:
            raise ConfigurationError(f"the model has {self.model.nv} dofs; the adapter takes up to "
                                     f"{MAX_JOINTS}")
        dt = float(self.model.opt.timestep)
        self.schedule = ControlSchedule.of(control_period, dt)
        self.period = control_period
        check_delay_reach(self.servos, control_period)
        self._row = self._register(user0, size, dt)
        adr = int(self.model.numeric_adr[mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_NUMERIC,
                                                           MARK_NAME)])
        self.model.numeric_data[adr + 1] = self._row
        self.model.numeric_data[adr + 2] = _TABLE.config[self._row, CFG_TOKEN]
        # the network table lives as long as the model the callback serves from it
        weakref.finalize(self.model, _release, self._row, self._nets)
        _install()

    @classmethod
    def from_robot(cls, model, params, joints=None, *, mjcf=None, data=None,
                   kp: float | None = None, control_period: float | None = None,
                   replace_dynamics: bool | None = None, friction: str = "budget"
                   ) -> ServoModel:
        """Servos on a robot in one call (:func:`frictionsim.solvers.robot_servos.servos_on_robot`
        resolves the arguments): ``model`` a robot file, a built-in robot's name or an MJCF;
        ``params`` a parameter file, a robot fit or a learned actuator (path or object);
        ``joints`` fnmatch patterns of joint names. The control period is the robot file's,
        else the model's timestep; the joints' own armature, damping and frictionloss are
        replaced by the servo's unless ``replace_dynamics=False``. For example
        ``ServoModel.from_robot("duck.xml", "fit/m6.json", ["*_hip_*", "*_knee", "*_ankle"])``
        or ``ServoModel.from_robot("so101", "so101-fit/m6.json", data="shared/data")``."""
        from frictionsim.solvers.robot_servos import servos_on_robot

        found = servos_on_robot(model, params, joints, mjcf=mjcf, data=data, kp=kp,
                                control_period=control_period, replace_dynamics=replace_dynamics)
        return cls(found.spec, found.servos, friction=friction,
                   control_period=found.control_period)

    def _warn_scheme(self) -> None:
        said = set()  # one warning per parameter set, not one per servo that shares it
        for servo in self.servos:
            if servo.params.scheme == "semi_implicit":
                continue
            source = servo.params.source or f"{servo.params.model} on {servo.params.actuator}"
            if source in said:
                continue
            said.add(source)
            if isinstance(servo.params, LearnedActuator):
                warnings.warn(
                    f"{source}: a hybrid trained on physics of the reference scheme (q += v·dt "
                    "+ ½·a·dt²) runs it with MuJoCo's Euler step: train it on a semi_implicit "
                    "file for MuJoCo", SchemeWarning, stacklevel=3)
                continue
            warnings.warn(reference_scheme_note(source), SchemeWarning, stacklevel=3)

    def _register(self, user0: int, size: int, dt: float) -> int:
        row = _TABLE.free_row()
        cfg = _TABLE.config[row]
        cfg[:] = 0.0
        cfg[CFG_FRICTIONLOSS] = 1.0 if self.friction == "frictionloss" else 0.0
        cfg[CFG_SERVOS] = len(self.servos)
        cfg[CFG_NV] = self.model.nv
        cfg[CFG_NQ] = self.model.nq
        cfg[CFG_PERIOD] = self.period
        cfg[CFG_SUBSTEPS] = self.schedule.substeps
        cfg[CFG_TIMESTEP] = dt
        cfg[CFG_USER_OFFSET] = user0
        cfg[CFG_STATE_SIZE] = size
        cfg[CFG_NU] = self.model.nu
        cfg[CFG_TOKEN] = float(secrets.randbits(52))
        for j, servo in enumerate(self.servos):
            block = cfg[HEADER + j * SERVO_BLOCK: HEADER + (j + 1) * SERVO_BLOCK]
            block[SB_DOF] = self.dofs[j]
            block[SB_QPOS] = self.qpos_adr[j]
            block[SB_CTRL] = self.ctrl_index[j]
            cfg[CFG_THETAS + j * THETA_SIZE: CFG_THETAS + (j + 1) * THETA_SIZE] = self._thetas[j]
            cfg[CFG_FIRMWARE + j * BENCH_SIZE: CFG_FIRMWARE + (j + 1) * BENCH_SIZE] = \
                servo.firmware(self.period)
        # a zero row for a servo without a network: the bank's period skips it
        self._nets = np.ascontiguousarray(servo_nets(self.servos))
        cfg[CFG_NET_WIDTH] = self._nets.shape[1]
        _TABLE.keys[row] = (self.model._address, self.model.dof_frictionloss.ctypes.data,
                      self.model.dof_damping.ctypes.data, self._nets.ctypes.data)
        cfg[CFG_ACTIVE] = 1.0
        return row

    def make_data(self) -> mujoco.MjData:
        """A new ``MjData`` of the model (any MjData of it works; this one is ready to use)."""
        return mujoco.MjData(self.model)

    def reset(self, data) -> None:
        """Start the servos of ``data`` afresh, as in a new episode: at its next step each
        servo's records (limiter target, previous error of the D term, delay lines, learned
        history, supply) restart from the joints' positions and velocities then, and its
        control period from that time. Call it after writing an episode's initial ``qpos`` and
        ``qvel`` yourself. ``mujoco.mj_resetData`` (which zeroes ``userdata``) and a rollout
        that sets time back need no call: the adapter notices both."""
        self._state(data)[ST_STARTED] = 0.0

    def set_goals(self, data, goals) -> None:
        """Goal positions (physical joint angles, rad) of the servos, in their order."""
        try:  # a call per step in an RL loop: checked only when numpy refuses the assignment
            data.ctrl[self.ctrl_index] = goals
        except (AttributeError, IndexError, TypeError, ValueError):
            self._check_data(data)
            self._per_servo("goals", goals, float)
            raise

    def _check_data(self, data) -> None:
        """ConfigurationError unless ``data`` is an ``MjData`` of this model (its sizes)."""
        m = self.model
        if not isinstance(data, mujoco.MjData) or data.qpos.shape[0] != m.nq \
                or data.ctrl.shape[0] != m.nu or data.userdata.shape[0] != m.nuserdata:
            got = "an MjData of another model" if isinstance(data, mujoco.MjData) \
                else type(data).__name__
            raise ConfigurationError(f"data: an MjData of this ServoModel's model (make_data(), "
                                     f"or mujoco.MjData(servo_model.model)), got {got}")

    def _per_servo(self, name: str, values, dtype) -> np.ndarray:
        """``values`` as one ``dtype`` value per servo, or a ConfigurationError naming ``name``."""
        n = len(self.servos)
        try:
            array = np.asarray(values, dtype=dtype)
        except (TypeError, ValueError):
            raise ConfigurationError(f"{name}: one number per servo ({n}), got {values!r:.80}") \
                from None
        if array.shape not in ((), (n,)):
            raise ConfigurationError(f"{name}: one value per servo ({n}, in the order of "
                                     f"servo_model.servos), got shape {array.shape}")
        return np.broadcast_to(array, (n,))

    def _state(self, data) -> np.ndarray:
        """The adapter's state in ``data.userdata`` (a view)."""
        self._check_data(data)
        config = _TABLE.config[self._row]
        start = int(config[CFG_USER_OFFSET])
        return data.userdata[start: start + int(config[CFG_STATE_SIZE])]

    def _registers(self, data) -> np.ndarray:
        """One row per servo: its registers in the state (a view)."""
        n = len(self.servos)
        return self._state(data)[STATE_HEAD: STATE_HEAD + REGISTERS * n].reshape((n, REGISTERS))

    def _records(self, data) -> np.ndarray:
        """The servo bank's records (:mod:`frictionsim.servo_bank`), one row per servo (a view)."""
        n = len(self.servos)
        start = STATE_HEAD + REGISTERS * n
        return self._state(data)[start: start + SERVO_STATE_SIZE * n].reshape(
            (n, SERVO_STATE_SIZE))

    def set_enable(self, data, flags) -> None:
        """Torque enable of each servo (default on; reset by ``mj_resetData``), a register the
        firmware reads at its next control period."""
        flags = self._per_servo("flags", flags, float)
        if not np.isin(flags, (0.0, 1.0)).all():
            raise ConfigurationError(f"flags: True/False (or 1/0) per servo, got {flags}")
        self._registers(data)[:, SL_DISABLED] = np.where(flags == 1.0, 0.0, 1.0)

    def motor_torques(self, data) -> np.ndarray:
        """The torque (N·m) each servo's actuator applied at the last step: the motor's τ_m,
        plus a learned actuator's network torque."""
        return self._registers(data)[:, SL_TORQUE].copy()

    def reported_positions(self, data) -> np.ndarray:
        """The joint angle (rad) each servo reported at its last control period: the physical
        one then, or with ``observation_delay`` the one of that long before, as a log or the
        servo's present-position register has it."""
        return self._records(data)[:, SERVO_REPORTED].copy()

    def servo_records(self, data) -> np.ndarray:
        """Each servo's record (:mod:`frictionsim.servo_bank`; rows of
        ``layout.SERVO_STATE_SIZE``, named by ``servo_bank.record_view``): the control it holds,
        its limiter, supply current…"""
        return self._records(data).copy()

    def check(self, data) -> None:
        """SimulationError when a step of ``data`` since its last reset could not solve the
        coupled joints' friction exactly (the solver did not converge), naming the first; when
        a goal was not finite; and when MuJoCo found a non-finite or huge position, velocity
        or acceleration and reset the state (it only prints a warning, and the episode goes
        on from ``qpos0``)."""
        state = self._state(data)
        for kind, what in ((mujoco.mjtWarning.mjWARN_BADQPOS, "position"),
                           (mujoco.mjtWarning.mjWARN_BADQVEL, "velocity"),
                           (mujoco.mjtWarning.mjWARN_BADQACC, "acceleration")):
            warning = data.warning[int(kind)]
            if warning.number > 0:
                raise SimulationError(
                    f"the simulation diverged: MuJoCo found a non-finite or huge {what} "
                    f"{warning.number} time(s) (the last at dof {warning.lastinfo}) and reset the "
                    "state to the model's qpos0 each time; check the initial state, the goals "
                    "and the model's inertias and timestep")
        if state[ST_UNSERVED_COPY]:
            raise SimulationError("a copy of a ServoModel in the frictionloss mode was stepped: "
                                  "its servos did not run (that mode writes the model's own "
                                  "arrays; build a ServoModel per model instead of copying)")
        if state[ST_BAD_GOALS] > 0:
            raise SimulationError(
                f"a servo's goal (data.ctrl) was not finite in {int(state[ST_BAD_GOALS])} "
                f"control period(s), the first at t = {state[ST_FIRST_BAD_GOAL]:g} s; the servo "
                "held its last target")
        if state[ST_FAILURES] > 0:
            raise SimulationError(
                f"the friction solve of the coupled joints did not converge in "
                f"{int(state[ST_FAILURES])} step(s), the first at t = "
                f"{state[ST_FIRST_FAILURE]:g} s")


def servo_spec(mjcf, servos: list[JointServo], friction: str = "budget"):
    """(spec, ctrl_index): a new ``MjSpec`` of the model (a given spec is copied) made ready
    for servos on the named hinge joints, as every MuJoCo engine of frictionsim takes it (the
    CPU adapter, MuJoCo Warp, MJX): each joint's armature plus its servo's reflected rotor
    inertia, no damping or friction of its own (``frictionloss`` mode: the servo's Coulomb
    term as a start), a goal actuator per servo whose force is 0 and whose ctrl is the goal
    (its index in ctrl returned), Euler integration (an :class:`IntegratorWarning` when the
    model had another)."""
    spec = read_spec(mjcf)  # a copy: the caller's own spec is never edited
    joints = {j.name: j for j in spec.joints}
    for servo in servos:
        joint = joints.get(servo.joint)
        if joint is None:
            raise ConfigurationError(f"the model has no joint {servo.joint!r} (joints: "
                                     f"{', '.join(joints)})")
        physics = _physics(servo)
        values = physics.values if physics is not None else {}
        # The servo's reflected rotor inertia adds to what the model already gives the
        # joint, as in frictionsim's own simulators (their M(q) includes dof_armature).
        joint.armature = float(joint.armature) + float(semi_implicit_theta(servo)[ARMATURE])
        joint.damping = np.zeros(3)
        joint.frictionloss = values.get("friction_base", 0.0) if friction == "frictionloss" \
            else 0.0
    ctrl_index = _goal_actuators(spec, servos)
    euler = int(mujoco.mjtIntegrator.mjINT_EULER)
    if int(spec.option.integrator) != euler:
        was = mujoco.mjtIntegrator(int(spec.option.integrator)).name
        warnings.warn(f"the servo adapter steps with MuJoCo's Euler integrator; the model's "
                      f"{was} is replaced in the compiled model (friction is applied as "
                      "a torque of the step, which Euler integrates as the servo model "
                      "does)", IntegratorWarning, stacklevel=3)
    spec.option.integrator = euler
    return spec, ctrl_index


def _goal_actuators(spec, servos: list[JointServo]) -> np.ndarray:
    """For each servo, the actuator whose ctrl is its goal: the one driving its joint (its
    force zeroed), or a new zero-force actuator. Returns their indices in ctrl."""
    by_joint = {}
    for act in spec.actuators:
        if int(act.trntype) == int(mujoco.mjtTrn.mjTRN_JOINT) and act.target:
            by_joint.setdefault(act.target, act)
    names = []
    for servo in servos:
        act = by_joint.get(servo.joint)
        if act is None:
            act = spec.add_actuator(name=f"{servo.joint}_goal", target=servo.joint,
                                    trntype=mujoco.mjtTrn.mjTRN_JOINT)
        if not act.name:
            act.name = f"{servo.joint}_goal"
        act.gainprm[:] = 0.0
        act.biasprm[:] = 0.0
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE
        names.append(act.name)
    return np.array([[a.name for a in spec.actuators].index(n) for n in names])


def _physics(servo: JointServo) -> ParameterSet | None:
    """The servo's physical parameter set (a hybrid's under its network; None for a net)."""
    return servo.params.physics if isinstance(servo.params, LearnedActuator) else servo.params


def semi_implicit_theta(servo: JointServo) -> np.ndarray:
    """The servo's kernel vector with MuJoCo's position update (Euler: ``semi_implicit``):
    its physics, or the bare joint with the rotor inertia a net keeps."""
    physics = _physics(servo)
    if physics is None:
        return bare_theta(servo.params.actuator, servo.params.armature)
    return physics.with_scheme("semi_implicit").theta()


def bench_mjcf(mass: float, length: float, arm_mass: float, dt: float) -> str:
    """The pendulum bench of docs/model.md §1 as MJCF: joint ``servo`` (a hinge, q = 0 hanging down),
    inertia m·L² + (m_arm/3)·L² about it, gravity torque (m + m_arm/2)·g·L·sin q with
    g = −9.80665, timestep ``dt``, no joint limit."""
    total = mass + arm_mass
    if not total > 0:
        raise ConfigurationError(f"the bench has no mass (mass {mass} kg, arm mass {arm_mass} kg)")
    com = (mass * length + arm_mass * length / 2) / total
    about_joint = mass * length**2 + (arm_mass / 3) * length**2
    inertia = max(about_joint - total * com**2, 1e-10 * about_joint)
    return f"""<mujoco model="bench">
  <option timestep="{dt!r}" gravity="0 0 -9.80665" integrator="Euler"/>
  <worldbody>
    <body name="arm">
      <joint name="servo" type="hinge" axis="0 1 0"/>
      <inertial pos="0 0 {-com!r}" mass="{total!r}" diaginertia="{inertia!r} {inertia!r} {inertia!r}"/>
    </body>
  </worldbody>
  <actuator><motor name="servo" joint="servo"/></actuator>
</mujoco>"""


def simulate_bench(log, params: ParameterSet, friction: str = "budget") -> Rollout:
    """A processed bench log (docs/model.md §6) simulated in MuJoCo: the encoder position (rad) before
    each entry, as :func:`frictionsim.solvers.rollouts.simulate` gives with the ``semi_implicit`` scheme
    (``q_offset`` honoured: MuJoCo's angle is the physical one, the encoder's plus q_offset).
    A parameter file of the reference scheme gives a :class:`SchemeWarning`."""
    offset = params.values["q_offset"]
    act = schema.get_actuator(params.actuator)
    servo = JointServo("servo", params, kp=log.kp, vin=float(log.header.get("vin", act.vin)),
                  damping=float(log.header.get("damping", act.damping)))
    sm = ServoModel(bench_mjcf(log.mass, log.length, log.arm_mass, log.dt), [servo], friction,
                    control_period=log.dt)
    data = sm.make_data()
    goal = log.column("goal_position")
    enable = log.column("torque_enable")
    data.qpos[0] = log.entries[0]["position"] + offset
    data.qvel[0] = float(log.entries[0].get("speed", 0.0))
    q, v = np.empty(len(goal)), np.empty(len(goal))
    for k in range(len(goal)):
        v[k] = data.qvel[0]
        sm.set_goals(data, [goal[k] + offset])
        sm.set_enable(data, enable[k] > 0.5)
        mujoco.mj_step(sm.model, data)  # its control period reports the position before it
        q[k] = sm.reported_positions(data)[0] - offset
    sm.check(data)
    if not np.all(np.isfinite(q)):
        what = params.source or f"{params.model}/{params.actuator}"
        raise SimulationError(f"{log.name}: the MuJoCo simulation with {what} diverged "
                              "(non-finite position)")
    return Rollout(log, np.arange(len(goal)) * log.dt, q, v, log.column("position"))


__all__ = ["MODES", "SchemeWarning", "JointServo", "ServoModel", "bench_mjcf", "data_offsets",
           "simulate_bench"]
