"""Servos on the joints of a MuJoCo Warp model, thousands of worlds at once: the array bank in
torch, and friction held exactly (optional extra ``mjlab``).

:class:`WarpServos` is what frictionsim's mjlab actuator (:mod:`frictionsim.solvers.mjlab`) and
its own MuJoCo Warp engine (:class:`WarpRobot`, ``--engine mjlab``) both run each physics step,
E worlds × J servos: each world's control period when it is due (its own phase, restarted by
its reset), the servo bank's period and step (:mod:`frictionsim.solvers.array_bank`: the
firmware, the motor, a learned network, the supply), then friction by docs/model.md §10's
problem on the world's own mass matrix M(q) and bias forces, solved exactly
(:func:`~frictionsim.solvers.array_bank.clip_friction`) and applied as a torque with the motor's,
as the CPU adapter does (:mod:`frictionsim.solvers.mujoco_adapter`). Servos with ``backlash``
take the gear step (:mod:`frictionsim.solvers.array_gear`), whose impacts write the worlds'
``qpos`` and ``qvel`` in place before MuJoCo Warp integrates.

**Why not MuJoCo's friction rows.** The reference project writes each world's friction budget
into ``dof_frictionloss`` and stiffens the rows; MuJoCo Warp has no noslip solver, so a joint
held against a load creeps (docs/results.md measures it). A budget clipped on M(q) holds the
joint: the torque that would move it in the step is cancelled, up to round-off.

**Where M(q) comes from.** :class:`WarpRobot` splits the step as MuJoCo's C engine does for
its control callback: ``mjwarp.step1`` (positions and velocities: M, bias and passive forces
of this step), the servos and the friction, ``mjwarp.step2`` (actuation, constraints,
integration). Inside mjlab the actuator runs before ``mjwarp.step``, so it reads M and the
forces the previous step computed: for a joint held at rest they are this step's exactly (it
has not moved), for a moving one a step old.

Per-environment randomisation (:class:`Randomisation`): the servos' parameters drawn within
their ``ranges`` (``identify --uncertainty``, ``robot identify --uncertainty``), the supply
voltage and its drop, a command delay in physics steps; redrawn on reset when asked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from frictionsim.errors import ConfigurationError, MissingExtra
from frictionsim.layout import SUPPLY, SUPPLY_EMF, SUPPLY_RESISTANCE, VIN
from frictionsim.limits import control_substeps
from frictionsim.solvers import array_bank as ab
from frictionsim.solvers.array_gear import gear_layout, gear_step
from frictionsim.solvers.robot_gear import has_backlash


def import_torch():
    try:
        import torch
    except ImportError:
        raise MissingExtra("batched servos need torch: pip install 'frictionsim[mjlab]' (see "
                           "the README for a CPU-only torch)") from None
    return torch


def import_warp():
    try:
        import mujoco_warp
        import warp
    except ImportError:
        raise MissingExtra("MuJoCo Warp is not installed: pip install 'frictionsim[mjlab]'") \
            from None
    # a line per kernel module loaded would bury the caller's own output
    warp.config.quiet = True
    if hasattr(warp, "LOG_WARNING"):  # warp >= 1.19 logs module loads at INFO
        warp.config.log_level = max(warp.config.log_level, warp.LOG_WARNING)
    return warp, mujoco_warp


def check_device(device: str) -> str:
    """``device`` ("cpu", "cuda", "cuda:N") if this machine has it; ConfigurationError otherwise
    (a CUDA device asked for without a GPU or a CUDA build of torch)."""
    torch = import_torch()
    if device == "cpu":
        return device
    if not device.startswith("cuda"):
        raise ConfigurationError(f"device {device!r}: expected cpu, cuda or cuda:N")
    if not torch.cuda.is_available():
        raise ConfigurationError(f"device {device!r}: no CUDA GPU is available to torch here "
                                 f"(torch {torch.__version__}); use --device cpu")
    return device


@dataclass(frozen=True)
class Randomisation:
    """What each environment draws (BAM's actuator randomises the last three): the servos'
    parameters within their files' ``ranges``; the supply voltage uniformly in ``vin`` (V); its
    drop, a supply resistance uniformly in ``drop`` (Ω) with every servo of a world on it
    (docs/model.md §9's ``supply``: E − R_s·Σ|i|); a command delay uniformly in ``delay``
    (whole physics steps). ``on_reset``: draw again at each reset of an environment."""

    parameters: bool = False
    vin: tuple[float, float] | None = None
    drop: tuple[float, float] | None = None
    delay: tuple[int, int] | None = None
    on_reset: bool = False
    seed: int = 0


def mass_index(model) -> np.ndarray:
    """For a compiled MuJoCo model, the index of each element (r, c) of M in its packed form
    (``d.M``, which MuJoCo Warp keeps per world in the same layout: rows ``M_rowadr``, their
    ``M_rownnz`` columns ``M_colind``), symmetrised; −1 where M is structurally zero."""
    nv = int(model.nv)
    full = np.full((nv, nv), -1, dtype=np.int64)
    for r in range(nv):
        start = int(model.M_rowadr[r])
        for t in range(int(model.M_rownnz[r])):
            c = int(model.M_colind[start + t])
            full[r, c] = full[c, r] = start + t
    return full


class WarpServos:
    """J servos (:class:`~frictionsim.solvers.robot.JointServo`) on the hinge joints of a
    compiled model (``mj_model``, prepared by :func:`~frictionsim.solvers.mujoco_adapter.servo_spec`),
    in ``nworld`` worlds, in torch on ``device`` at ``dtype`` (MuJoCo Warp's float32 by
    default). ``control_period`` (s) a multiple of the model's timestep."""

    def __init__(self, mj_model, servos: list, control_period: float, nworld: int,
                 device: str = "cpu", dtype=None, randomisation: Randomisation | None = None
                 ) -> None:
        torch = import_torch()
        from frictionsim.solvers.mujoco_adapter import semi_implicit_theta
        from frictionsim.solvers.mujoco_dynamics import check_hinges
        from frictionsim.solvers.robot import check_delay_reach, servo_nets

        self.torch = torch
        self.device = check_device(device)
        self.dtype = dtype or torch.float32
        self.nworld = int(nworld)
        self.servos = list(servos)
        self.dt = float(mj_model.opt.timestep)
        self.substeps = control_substeps(control_period, self.dt)
        self.period = control_period
        check_delay_reach(self.servos, control_period)
        qadr, dofs = check_hinges(mj_model, [s.joint for s in self.servos])
        self.nv = int(mj_model.nv)
        self.qadr = torch.as_tensor(np.asarray(qadr), device=device, dtype=torch.long)
        self.dofs = torch.as_tensor(np.asarray(dofs), device=device, dtype=torch.long)
        self.mass_index = torch.as_tensor(mass_index(mj_model), device=device)
        self.randomisation = randomisation or Randomisation()
        self.rng = np.random.default_rng(self.randomisation.seed)
        self.thetas = np.array([semi_implicit_theta(s) for s in self.servos])
        self.firmware = np.array([s.firmware(control_period) for s in self.servos])
        nets = servo_nets(self.servos)
        self.xp = ab.namespace(torch.zeros(1))
        thetas, firmware = self._draw(np.arange(self.nworld))
        self.bank = ab.servos(thetas, firmware, nets if (nets[:, 0] > 0).any() else None,
                              xp=self.xp, dtype=self.dtype, device=self.device)
        # the gear path when some servo may have a gap (a drawn world, or on a later reset)
        self.gear = gear_layout(qadr, dofs, int(mj_model.nq), self.nv, self.xp, self.dtype,
                                self.device) if has_backlash(thetas.reshape(-1, thetas.shape[-1])) else None
        zeros = torch.zeros((self.nworld, len(self.servos)), dtype=self.dtype, device=device)
        self.state = ab.reset(zeros, zeros, self.xp)
        self.fresh = torch.ones(self.nworld, dtype=torch.bool, device=device)
        self.steps = torch.zeros(self.nworld, dtype=torch.long, device=device)
        # Known on the host, so that a step asks the device nothing (a GPU would stall on the
        # question): whether some world was reset, and the physics step of a phase every
        # world shares (None once some worlds were reset on their own).
        self._fresh_any = True
        self._shared_step: int | None = 0
        self.enable = torch.ones_like(zeros)
        self.delay = torch.zeros(self.nworld, dtype=torch.long, device=device)
        self._draw_delay(np.arange(self.nworld))
        most = self.randomisation.delay[1] if self.randomisation.delay else 0
        self.goal_ring = torch.zeros((self.nworld, most + 1, len(self.servos)),
                                     dtype=self.dtype, device=device)

    # --------------------------------------------------------------- randomisation

    def _draw(self, worlds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(thetas, firmware) of the given worlds: (len, J, ·) drawn per the randomisation."""
        r = self.randomisation
        thetas = np.repeat(self.thetas[None], len(worlds), axis=0)
        firmware = np.repeat(self.firmware[None], len(worlds), axis=0)
        if r.parameters:
            from frictionsim.params import ParameterSet
            from frictionsim.solvers.mujoco_adapter import _physics

            for j, s in enumerate(self.servos):
                params = _physics(s)
                if not (isinstance(params, ParameterSet) and params.ranges):
                    # a world drawn from nothing would pass for a randomised one
                    raise ConfigurationError(
                        f"joint {s.joint!r}: Randomisation(parameters=True) needs parameter "
                        f"ranges, and its parameters have none (identify with --uncertainty, "
                        f"or robot identify --uncertainty)")
                for w, drawn in enumerate(params.with_scheme("semi_implicit").variants(
                        len(worlds), int(self.rng.integers(2**63)))):
                    thetas[w, j, :] = drawn.theta()
        if r.vin is not None:
            vin = self.rng.uniform(*r.vin, size=len(worlds))
            firmware[:, :, VIN] = vin[:, None]
            thetas[:, :, SUPPLY_EMF] = vin[:, None]
        if r.drop is not None:
            thetas[:, :, SUPPLY] = 1.0
            if r.vin is None:
                thetas[:, :, SUPPLY_EMF] = firmware[:, :, VIN]
            thetas[:, :, SUPPLY_RESISTANCE] = self.rng.uniform(*r.drop, size=len(worlds))[:, None]
        return thetas, firmware

    def _draw_delay(self, worlds: np.ndarray) -> None:
        if self.randomisation.delay is not None:
            low, high = self.randomisation.delay
            lags = self.rng.integers(low, high + 1, size=len(worlds))
            self.delay[self.torch.as_tensor(worlds, device=self.device)] = \
                self.torch.as_tensor(lags, device=self.device)

    def reset(self, env_ids=None) -> None:
        """The servos of these worlds (all: None) start afresh at the next step, at the state
        their joints then have: records, control-period phase, command delay (drawn again with
        ``Randomisation.on_reset``, as are the parameters)."""
        torch = self.torch
        ids = torch.arange(self.nworld, device=self.device) if env_ids is None \
            else torch.as_tensor(env_ids, device=self.device).reshape(-1)
        if ids.dtype == torch.bool:
            ids = torch.nonzero(ids).reshape(-1)
        self.fresh[ids] = True
        self.steps[ids] = 0
        self.goal_ring[ids] = math.nan
        self._fresh_any = True
        self._shared_step = 0 if env_ids is None else None
        if self.randomisation.on_reset:
            worlds = ids.cpu().numpy()
            thetas, firmware = self._draw(worlds)
            self.bank.theta[ids] = torch.as_tensor(thetas, dtype=self.dtype, device=self.device)
            self.bank.firmware[ids] = torch.as_tensor(firmware, dtype=self.dtype,
                                                      device=self.device)
            self._draw_delay(worlds)

    def set_enable(self, flags) -> None:
        """Torque enable of each servo, (E, J) or broadcastable, read at the next period."""
        self.enable = self.torch.broadcast_to(
            self.torch.as_tensor(flags, dtype=self.dtype, device=self.device),
            self.enable.shape).clone()

    # ------------------------------------------------------------------------- a step

    def delayed(self, goals):
        """The goals as each world's servos receive them, ``delay`` physics steps late (before
        the first, the first)."""
        torch = self.torch
        size = self.goal_ring.shape[1]
        if size == 1:
            return goals
        slot = self.steps % size
        worlds = torch.arange(self.nworld, device=self.device)
        self.goal_ring[worlds, slot] = goals
        first = torch.isnan(self.goal_ring)
        self.goal_ring = torch.where(first, goals[:, None, :], self.goal_ring)
        return self.goal_ring[worlds, (self.steps - self.delay) % size]

    def torques(self, goals, qpos, qvel, mass_packed, bias, passive):
        """The torque (E, nv) the servos apply this physics step, friction included: goals
        (E, J) in the joints' angles; the world's qpos, qvel, packed M(q) (``d.M``), bias and
        passive forces, all torch tensors (E, ·). The servos' own dofs carry τ_m + network +
        friction; the others 0 (they are passive and frictionless)."""
        torch, xp = self.torch, self.xp
        dtype = self.dtype
        q = qpos[:, self.qadr].to(dtype)
        v = qvel[:, self.dofs].to(dtype)
        goals = self.delayed(goals.to(dtype))
        if self._fresh_any:
            self.state = ab.reset_where(self.state, self.fresh, q, v, xp)
            self.fresh[:] = False
            self._fresh_any = False
        if self._shared_step is None:  # each world its own phase: a period where due
            due = (self.steps % self.substeps) == 0
            self.state = ab.period(self.state, self.bank, goals, q, v, self.enable, math.nan,
                                   self.period, shared_supply=True, where=due)
        elif self._shared_step % self.substeps == 0:  # every world's period, at once
            self.state = ab.period(self.state, self.bank, goals, q, v, self.enable, math.nan,
                                   self.period, shared_supply=True)
        tau = (passive - bias).to(dtype)
        mass = self.full_mass(mass_packed.to(dtype))
        if self.gear is not None:
            # a gear's impact writes the state the step goes on from (in place: MuJoCo Warp's)
            self.state, applied, q_after, v_after = gear_step(
                self.state, self.bank, self.gear, qpos.to(dtype), qvel.to(dtype), mass, tau,
                self.dt)
            qpos[:] = q_after.to(qpos.dtype)
            qvel[:] = v_after.to(qvel.dtype)
        else:
            self.state, tau_m, extra = ab.step(self.state, self.bank, v)
            budget = torch.zeros_like(tau)
            budget[:, self.dofs] = ab.servo_budget(v, tau_m, tau[:, self.dofs], q, self.bank)
            tau[:, self.dofs] = tau[:, self.dofs] + tau_m + extra
            tau_f = ab.clip_friction(mass, tau, qvel.to(dtype), budget, self.dt)
            applied = torch.zeros_like(tau)
            applied[:, self.dofs] = tau_m + extra + tau_f[:, self.dofs]
        self.steps += 1
        if self._shared_step is not None:
            self._shared_step += 1
        return applied

    def full_mass(self, packed):
        """M (E, nv, nv) from MuJoCo's packed form (E, nM)."""
        index = self.mass_index
        gathered = packed[:, index.clamp(min=0)]
        return self.torch.where(index >= 0, gathered, self.torch.zeros_like(gathered))

    @property
    def reported(self):
        """The position (E, J) each servo reported at its last period (``observation_delay``)."""
        return self.state.reported


class WarpRobot:
    """frictionsim's MuJoCo Warp engine: servos on an MJCF model (path, text or ``MjSpec``) in
    ``nworld`` worlds on ``device``, the step split for exact friction (module docstring)."""

    def __init__(self, mjcf, servos: list, control_period: float, nworld: int = 1,
                 device: str = "cpu", randomisation: Randomisation | None = None) -> None:
        import warnings

        import mujoco

        from frictionsim.solvers.mujoco_adapter import SchemeWarning, servo_spec

        wp, mjwarp = import_warp()
        self.wp, self.mjwarp = wp, mjwarp
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SchemeWarning)
            spec, self.ctrl_index = servo_spec(mjcf, servos)
        self.model = spec.compile()
        self.device = check_device(device)
        self.servos = WarpServos(self.model, servos, control_period, nworld, device,
                                 randomisation=randomisation)
        self.qadr, self.dofs = self.servos.qadr.cpu().numpy(), self.servos.dofs.cpu().numpy()
        self.nworld = nworld
        self.period = control_period
        with wp.ScopedDevice(self.device):
            self.wp_model = mjwarp.put_model(self.model)
            self.wp_data = mjwarp.put_data(self.model, mujoco.MjData(self.model), nworld=nworld)
        self.torch = self.servos.torch
        self._views()

    def _views(self) -> None:
        to = self.wp.to_torch
        d = self.wp_data
        self.qpos, self.qvel = to(d.qpos), to(d.qvel)
        self.mass, self.bias, self.passive = to(d.M), to(d.qfrc_bias), to(d.qfrc_passive)
        self.applied = to(d.qfrc_applied)

    def set_state(self, qpos, qvel) -> None:
        """Every world's positions and velocities (E, nq), (E, nv) (or one row for all); the
        servos start afresh from them."""
        torch = self.torch
        self.qpos[:] = torch.as_tensor(np.array(qpos, dtype=float), dtype=self.qpos.dtype,
                                       device=self.qpos.device)
        self.qvel[:] = torch.as_tensor(np.array(qvel, dtype=float), dtype=self.qvel.dtype,
                                       device=self.qvel.device)
        self.servos.reset()

    def step(self, goals, steps: int = 1) -> None:
        """``steps`` physics steps with the goals (E, J) held."""
        goals = self.torch.as_tensor(np.asarray(goals) if not self.torch.is_tensor(goals)
                                     else goals, device=self.servos.device)
        with self.wp.ScopedDevice(self.device):
            for _ in range(steps):
                self.mjwarp.step1(self.wp_model, self.wp_data)
                self.applied[:] = self.servos.torques(goals, self.qpos, self.qvel, self.mass,
                                                      self.bias, self.passive)
                self.mjwarp.step2(self.wp_model, self.wp_data)

    def run_batch(self, goals, enable=None, q0=None, v0=None):
        """:meth:`run` answering per world whatever their number: (reported, physical,
        velocity, seconds), numpy (worlds × periods × ·)."""
        return self.run(goals, enable, q0, v0, batch=True)

    def run(self, goals, enable=None, q0=None, v0=None, batch: bool = False):
        """Goals (periods × J, the same in every world, or E × periods × J) → the reported
        positions (E × periods × J, before each period) and the physical qpos (E × periods ×
        nq), as numpy; one world: a :class:`~frictionsim.solvers.robot.RobotRun`."""
        import time

        torch = self.torch
        goals = np.array(goals, dtype=float)
        if goals.ndim == 2:
            goals = np.repeat(goals[None], self.nworld, axis=0)
        n = goals.shape[1]
        q0 = self.model.qpos0 if q0 is None else q0
        v0 = np.zeros(self.model.nv) if v0 is None else v0
        self.set_state(np.broadcast_to(q0, (self.nworld, self.model.nq)),
                       np.broadcast_to(v0, (self.nworld, self.model.nv)))
        substeps = self.servos.substeps
        reported = np.empty((self.nworld, n, len(self.servos.servos)))
        physical = np.empty((self.nworld, n, self.model.nq))
        velocity = np.empty((self.nworld, n, self.model.nv))
        goal_t = torch.as_tensor(goals, dtype=self.servos.dtype, device=self.servos.device)
        start = time.perf_counter()
        for k in range(n):
            physical[:, k] = self.qpos.cpu().numpy()
            velocity[:, k] = self.qvel.cpu().numpy()
            if enable is not None:
                self.servos.set_enable(np.asarray(enable, dtype=float)[..., k, :])
            self.step(goal_t[:, k], substeps)
            reported[:, k] = self.servos.reported.cpu().numpy()
        seconds = time.perf_counter() - start
        if batch or self.nworld > 1:
            return reported, physical, velocity, seconds
        from frictionsim.solvers.robot import RobotRun

        q = physical[0].copy()
        q[:, self.qadr] = reported[0]
        return RobotRun(np.arange(n) * self.period, q, velocity[0], seconds,
                        physical=physical[0])

