"""A servo rolled out on its bench or on one robot joint, many windows at once, differentiable:
what a learned actuator is trained through (docs/model.md §13).

Each control period is one launch of :func:`period_kernel`, a thread per window: the servo
bank's period and step (:mod:`~frictionsim.solvers.batched.bank`, records in and records out)
and the bench's fixed step with friction clipping, one physics step per period
(:func:`frictionsim.solvers.learned_rollout.learned_run`, formula for formula: the semi-implicit
or reference position update, docs/model.md §1, §4). The load is the pendulum of each window's
bench vector, or a robot's joint seen from its servo
(:mod:`frictionsim.experiments.robots.joint_loads`): per period an inertia I and a torque
τ_e = τ_rec − K·(q − q_rec) linear in the joint's angle.

:func:`bench_rollout` runs a whole window in torch: each period a ``torch.autograd.Function``
whose backward is the kernel's adjoint (Warp's reverse mode), so that torch trains the
network's weights (and a sequence model's, whose torque joins the network's) through every
period of the window.
"""

from __future__ import annotations

from typing import Any

import warp as wp

from frictionsim.layout import (
    ARM_MASS,
    ARMATURE,
    DT,
    LENGTH,
    MASS,
    Q_OFFSET,
    SCHEME,
    SEMI_IMPLICIT,
    SERVO_DRAWN,
    SERVO_REPORTED,
    SERVO_STATE_SIZE,
)
from frictionsim.pendulum import GRAVITY
from frictionsim.solvers.batched.bank import reset_record, servo_period, servo_step
from frictionsim.solvers.batched.friction import servo_budget
from frictionsim.solvers.batched.gear import clipped_step


@wp.func
def pendulum_inertia(firmware: wp.array3d(dtype=Any), e: int):
    """I_load = m·L² + (m_arm/3)·L² (kg·m²) of window e's bench
    (:func:`frictionsim.pendulum.load_inertia`)."""
    length = firmware[e, 0, LENGTH]
    return firmware[e, 0, MASS] * (length * length) \
        + (firmware[e, 0, ARM_MASS] / type(length)(3.0)) * (length * length)


@wp.func
def gravity_coefficient(firmware: wp.array3d(dtype=Any), e: int):
    """(m + m_arm/2)·g·L (N·m) of window e's bench (:func:`frictionsim.pendulum.gravity_coefficient`)."""
    mass = firmware[e, 0, MASS] + firmware[e, 0, ARM_MASS] / type(firmware[e, 0, MASS])(2.0)
    return mass * type(mass)(GRAVITY) * firmware[e, 0, LENGTH]


@wp.kernel
def reset_kernel(records: wp.array3d(dtype=Any), q: wp.array(dtype=Any),
                 v: wp.array(dtype=Any)):
    """Each window's record reset at its start (q, v)."""
    e = wp.tid()
    reset_record(records, e, 0, q[e], v[e])


@wp.kernel
def period_kernel(thetas: wp.array3d(dtype=Any), firmware: wp.array3d(dtype=Any),
                  nets: wp.array2d(dtype=Any), joint_load: bool,
                  load_inertia: wp.array(dtype=Any), load_torque: wp.array(dtype=Any),
                  load_stiffness: wp.array(dtype=Any), load_angle: wp.array(dtype=Any),
                  goal: wp.array(dtype=Any), enable: wp.array(dtype=Any),
                  supply: wp.array(dtype=Any), learned: wp.array(dtype=Any),
                  rin: wp.array3d(dtype=Any), q: wp.array(dtype=Any), v: wp.array(dtype=Any),
                  mid: wp.array3d(dtype=Any), work: wp.array3d(dtype=Any),
                  rout: wp.array3d(dtype=Any), q_out: wp.array(dtype=Any),
                  v_out: wp.array(dtype=Any), reported: wp.array(dtype=Any)):
    """One control period of every window (a thread each): the servo's period and step, then
    one physics step of its load; ``learned`` a torque (N·m) held beside the network's for
    the period, clipped by friction as it is."""
    e = wp.tid()
    dt = firmware[e, 0, DT]
    q_e = q[e]
    v_e = v[e]
    servo_period(rin, mid, e, 0, thetas, firmware, nets, work, goal[e], q_e, v_e, enable[e],
                 supply[e], dt, rin[e, 0, SERVO_DRAWN], True)
    reported[e] = mid[e, 0, SERVO_REPORTED]
    tau_m, held = servo_step(mid, rout, e, 0, thetas, v_e, True)
    extra = held + learned[e]
    angle = q_e + thetas[e, 0, Q_OFFSET]
    inertia = pendulum_inertia(firmware, e) + thetas[e, 0, ARMATURE]
    tau_e = gravity_coefficient(firmware, e) * wp.sin(angle)
    if joint_load:  # a robot's joint: its angle is q itself, as the robot's servos read it
        angle = q_e
        inertia = load_inertia[e] + thetas[e, 0, ARMATURE]
        tau_e = load_torque[e] - load_stiffness[e] * (q_e - load_angle[e])
    budget = servo_budget(v_e, tau_m, tau_e, angle, thetas, e, 0)
    q_next, v_next = clipped_step(q_e, v_e, tau_m + tau_e + extra, inertia, budget, dt,
                                  thetas[e, 0, SCHEME] == type(dt)(SEMI_IMPLICIT))
    q_out[e] = q_next
    v_out[e] = v_next


def import_torch():
    from frictionsim.errors import MissingExtra

    try:
        import torch
    except ImportError:
        raise MissingExtra("training through the rollout needs torch: pip install "
                           "'frictionsim[torch]'") from None
    return torch


def _period_function():
    """The torch autograd function of one period (:func:`period_kernel` forward, its adjoint
    backward), made once torch is imported."""
    torch = import_torch()

    class Period(torch.autograd.Function):
        @staticmethod
        def forward(ctx, nets, learned, records, q, v, constants):
            (thetas, firmware, joint_load, load, goal, enable, supply) = constants
            W = q.shape[0]
            mid = torch.empty_like(records)
            work = torch.zeros((W, 1, constants_work(nets)), dtype=q.dtype)
            rout, q_out, v_out, reported = (torch.empty_like(records), torch.empty_like(q),
                                            torch.empty_like(q), torch.empty_like(q))
            inputs = [thetas, firmware, nets, joint_load, *load, goal, enable, supply, learned,
                      records, q, v]
            outputs = [mid, work, rout, q_out, v_out, reported]
            wp.launch(period_kernel, dim=W, inputs=_warp(inputs), outputs=_warp(outputs),
                      device="cpu")
            ctx.save_for_backward(nets, learned, records, q, v, mid, work, rout, q_out, v_out,
                                  reported)
            ctx.constants = constants
            return rout, q_out, v_out, reported

        @staticmethod
        def backward(ctx, adj_rout, adj_q_out, adj_v_out, adj_reported):
            (nets, learned, records, q, v, mid, work, rout, q_out, v_out,
             reported) = ctx.saved_tensors
            (thetas, firmware, joint_load, load, goal, enable, supply) = ctx.constants
            grads = [torch.zeros_like(x) for x in (nets, learned, records, q, v)]
            adj_nets, adj_learned, adj_records, adj_q, adj_v = grads

            def given(adj, like):
                return torch.zeros_like(like) if adj is None else adj.contiguous()

            inputs = [thetas, firmware, nets, joint_load, *load, goal, enable, supply, learned,
                      records, q, v]
            outputs = [mid, work, rout, q_out, v_out, reported]
            adj_inputs = [None, None, adj_nets, joint_load, None, None, None, None, None, None,
                          None, adj_learned, adj_records, adj_q, adj_v]
            adj_outputs = [torch.zeros_like(mid), torch.zeros_like(work),
                           given(adj_rout, rout), given(adj_q_out, q_out),
                           given(adj_v_out, v_out), given(adj_reported, reported)]
            wp.launch(period_kernel, dim=q.shape[0], inputs=_warp(inputs),
                      outputs=_warp(outputs), adj_inputs=_warp(adj_inputs),
                      adj_outputs=_warp(adj_outputs), adjoint=True, device="cpu")
            return adj_nets, adj_learned, adj_records, adj_q, adj_v, None

    return Period


def constants_work(nets) -> int:
    from frictionsim.solvers.batched.memory import net_work_size

    return net_work_size(nets.detach().cpu().numpy())


def _warp(values: list) -> list:
    """torch tensors as Warp arrays (views, no copy), the rest as they are."""
    torch = import_torch()
    out = []
    for x in values:
        if isinstance(x, torch.Tensor):
            dtype = {torch.float64: wp.float64, torch.float32: wp.float32}[x.dtype]
            out.append(wp.from_torch(x.detach().contiguous(), dtype=dtype, requires_grad=False))
        else:
            out.append(x)
    return out


_PERIOD = None


def bench_rollout(thetas, bench, nets, goal, enable, supply, q0, v0, torque=None, load=None):
    """The reported positions (W × n, torch) of a servo rolled out from (q0, v0) (W) over n
    control periods in W windows at once (module docstring), differentiable in torch.

    ``thetas`` the servo's physics (THETA_SIZE, or W × THETA_SIZE); ``bench`` each window's
    bench vector (W × BENCH_SIZE: its firmware settings and pendulum, ``DT`` the period);
    ``nets`` the network vector (1 × width; None: none), whose gradient the rollout gives;
    ``goal``, ``enable``, ``supply`` (a logged supply, V, NaN: none) W × n.

    The rollout runs on the CPU in float64 (an identification's precision; its windows are
    too short and few for a GPU to pay): CUDA tensors are refused.

    ``torque``: a learned torque the bank does not hold (a sequence model), called at every
    period with the error goal − q, the velocity v, the gain and the enable flag (each W × 1):
    its torque (W × 1, N·m) joins the network's. ``load``: a robot joint in place of the
    pendulum, a dict of W × n tensors ``inertia`` (the load's, without the rotor), ``torque``,
    ``stiffness`` and ``angle`` (τ_e = torque − stiffness·(q − angle))."""
    global _PERIOD
    torch = import_torch()
    from frictionsim.layout import BENCH_SIZE, KP, THETA_SIZE

    if _PERIOD is None:
        _PERIOD = _period_function()
    dtype = torch.float64
    W, n = goal.shape
    for name, x in (("goal", goal), ("nets", nets), ("q0", q0)):
        if isinstance(x, torch.Tensor) and x.device.type != "cpu":
            from frictionsim.errors import ConfigurationError

            raise ConfigurationError(f"bench_rollout runs on the CPU: {name} is on {x.device}")
    thetas = torch.as_tensor(thetas, dtype=dtype).reshape(-1, THETA_SIZE)
    thetas = torch.broadcast_to(thetas, (W, THETA_SIZE)).reshape(W, 1, THETA_SIZE).contiguous()
    firmware = torch.as_tensor(bench, dtype=dtype).reshape(W, 1, BENCH_SIZE).contiguous()
    if nets is None:
        nets = torch.zeros((1, 1), dtype=dtype)
    records = torch.empty((W, 1, SERVO_STATE_SIZE), dtype=dtype)
    q = torch.as_tensor(q0, dtype=dtype).reshape(W).contiguous()
    v = torch.as_tensor(v0, dtype=dtype).reshape(W).contiguous()
    wp.launch(reset_kernel, dim=W, inputs=_warp([records, q.detach(), v.detach()]),
              device="cpu")
    nothing = torch.zeros(W, dtype=dtype)
    kp = firmware[:, :, KP]
    reported = []
    for k in range(n):
        learned = nothing
        if torque is not None:
            learned = torque(goal[:, k:k + 1] - q[:, None], v[:, None], kp,
                             enable[:, k:k + 1]).reshape(W)
        columns = (tuple(load[name][:, k].contiguous() for name in
                         ("inertia", "torque", "stiffness", "angle"))
                   if load is not None else (nothing, nothing, nothing, nothing))
        constants = (thetas, firmware, load is not None, columns, goal[:, k].contiguous(),
                     enable[:, k].contiguous(), supply[:, k].contiguous())
        records, q, v, report = _PERIOD.apply(nets, learned.contiguous(), records, q, v,
                                              constants)
        reported.append(report)
    return torch.stack(reported, dim=1)


__all__ = ["bench_rollout", "period_kernel", "reset_kernel"]
