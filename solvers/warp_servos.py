"""Servos on the joints of a MuJoCo Warp model, thousands of worlds at once (optional extra
``mjlab``, or ``warp-lang`` and ``mujoco-warp``).

:class:`WarpServos` is the batched servos' memory on a Warp device, E worlds × J servos, and
their step: one launch of :func:`frictionsim.solvers.batched.engine.servo_step_kernel` per
physics step (the world's control period when it is due, the bank's step, friction by
docs/model.md §10's exact solve on the world's own M(q); backlash by the gear step). It is
what frictionsim's mjlab actuator (:mod:`frictionsim.solvers.mjlab`) and its own MuJoCo Warp
engine (:class:`WarpRobot`, ``--engine mjlab``) both run.

:class:`WarpRobot` splits MuJoCo Warp's step as MuJoCo's C engine calls its control callback:
``mjwarp.step1`` (M(q), bias and passive forces of this step), the servos' kernel,
``mjwarp.step2`` (actuation, constraints, Euler). On a CUDA device the three are captured
into one CUDA graph and replayed: physics and servos in one launch per physics step. Inside
mjlab the actuator runs before ``mjwarp.step``, so it reads M and the forces the previous
step computed: for a joint held at rest they are this step's exactly (it has not moved),
for a moving one a step old.

**Why not MuJoCo's friction rows.** The reference project writes each world's friction budget
into ``dof_frictionloss`` and stiffens the rows; MuJoCo Warp has no noslip solver, so a joint
held against a load creeps (docs/results.md measures it). A budget clipped on M(q) holds the
joint: the torque that would move it in the step is cancelled, up to round-off.

Per-world randomisation (:class:`~frictionsim.solvers.batched.setup.Randomisation`): the
servos' parameters within their ``ranges``, the supply voltage and its drop, a command delay
in physics steps; drawn again on reset when asked (:meth:`WarpServos.parameters` gives each
world's draw). What each servo reports, :attr:`WarpServos.reported`, lies on its encoder's
grid (4096 counts a turn on the STS3215 and the XL330) unless built with ``encoder=False``.
"""

from __future__ import annotations

import time

import numpy as np

from frictionsim.errors import ConfigurationError, MissingExtra
from frictionsim.layout import SERVO_CURRENT, SERVO_REPORTED, SERVO_STATE_SIZE
from frictionsim.solvers.batched import import_warp
from frictionsim.solvers.batched.setup import Randomisation, ServoSetup

__all__ = ["Randomisation", "WarpRobot", "WarpServos", "check_device"]


def import_mujoco_warp():
    """(warp, mujoco_warp), or MissingExtra naming the install."""
    wp = import_warp()
    try:
        import mujoco_warp
    except ImportError:
        raise MissingExtra("MuJoCo Warp is not installed: pip install 'frictionsim[mjlab]' "
                           "(or warp-lang and mujoco-warp)") from None
    return wp, mujoco_warp


def check_device(device: str) -> str:
    """``device`` ("cpu", "cuda", "cuda:N") if Warp has it here; ConfigurationError otherwise
    (a CUDA device asked for on a machine without a GPU)."""
    wp = import_warp()
    if not isinstance(device, str) or not (device == "cpu" or device.startswith("cuda")):
        raise ConfigurationError(f"device {device!r}: expected cpu, cuda or cuda:N")
    if device == "cpu":
        return device
    if not wp.is_cuda_available():
        raise ConfigurationError(f"device {device!r}: no CUDA GPU is available to Warp here; use "
                                 "--device cpu")
    try:
        wp.get_device(device)
    except (RuntimeError, ValueError) as error:
        raise ConfigurationError(f"device {device!r}: {error}") from None
    return device


def world_ids(env_ids, nworld: int) -> np.ndarray | object:
    """The worlds ``env_ids`` names (None: all; an empty list: none): a sequence or array of
    distinct indices in [0, nworld), or a boolean mask of nworld entries; a CUDA tensor is taken
    as it is (checking it would stop the GPU). ConfigurationError for anything else."""
    if env_ids is None:
        return np.arange(nworld, dtype=np.int32)
    if isinstance(env_ids, slice):
        return np.arange(nworld, dtype=np.int32)[env_ids]
    if hasattr(env_ids, "is_cuda") and env_ids.is_cuda:
        import torch

        if env_ids.dtype == torch.bool:
            if env_ids.shape != (nworld,):
                raise ConfigurationError(f"a mask of worlds must have {nworld} entries, got "
                                         f"{tuple(env_ids.shape)}")
            return torch.nonzero(env_ids).reshape(-1).to(torch.int32)
        if env_ids.dtype not in (torch.int32, torch.int64):
            raise ConfigurationError(f"world ids must be integers, got {env_ids.dtype}")
        return env_ids.reshape(-1).to(torch.int32)
    ids = np.asarray(env_ids.cpu() if hasattr(env_ids, "cpu") else env_ids)
    if ids.dtype == bool:
        if ids.shape != (nworld,):
            raise ConfigurationError(f"a mask of worlds must have {nworld} entries, got "
                                     f"{ids.shape}")
        return np.flatnonzero(ids).astype(np.int32)
    ids = ids.reshape(-1)
    if ids.size and not np.issubdtype(ids.dtype, np.integer):
        raise ConfigurationError(f"world ids must be integers, got {ids.dtype}")
    if ids.size and (ids.min() < 0 or ids.max() >= nworld):
        raise ConfigurationError(f"world ids must be in [0, {nworld}), got "
                                 f"{ids[(ids < 0) | (ids >= nworld)][:5].tolist()}")
    unique, counts = np.unique(ids, return_counts=True)
    if np.any(counts > 1):
        # a world named twice would be reset twice in one launch, its threads racing
        raise ConfigurationError(f"world ids must name each world once, got "
                                 f"{unique[counts > 1][:5].tolist()} more than once")
    return ids.astype(np.int32)


class WarpServos:
    """The servos of a :class:`~frictionsim.solvers.batched.setup.ServoSetup` in ``nworld``
    worlds on a Warp ``device`` at ``dtype`` (MuJoCo Warp's float32 by default), their records
    and scratch allocated once. ``step`` launches their physics step on the engine's arrays."""

    def __init__(self, setup: ServoSetup, nworld: int, device: str = "cpu", dtype=None) -> None:
        wp = import_warp()
        from frictionsim.solvers.batched.memory import (
            MATRICES,
            PER_SERVO,
            VECTORS,
            clip_work_size,
            net_work_size,
        )

        if isinstance(nworld, bool) or not isinstance(nworld, (int, np.integer)) or nworld < 1:
            raise ConfigurationError(f"nworld must be a whole number ≥ 1, got {nworld!r}")
        self.wp = wp
        self.setup = setup
        self.nworld = int(nworld)
        self.device = check_device(device)
        self.dtype = dtype or wp.float32
        self.servos = setup.servos
        self.schedule = setup.schedule
        self.substeps = setup.schedule.substeps
        self.dt = setup.schedule.timestep
        self.period = setup.schedule.period
        self.rng = np.random.default_rng(setup.randomisation.seed)
        ns, nv, E = len(setup.servos), int(setup.model.nv), self.nworld
        with wp.ScopedDevice(self.device):
            def floats(*shape, fill=0.0):
                return wp.array(np.full(shape, fill), dtype=self.dtype)

            def ints(*shape, fill=0):
                return wp.array(np.full(shape, fill, dtype=np.int32), dtype=wp.int32)

            self.qadr = wp.array(setup.qadr, dtype=wp.int32)
            self.dofs = wp.array(setup.dofs, dtype=wp.int32)
            self.mass_index = wp.array(setup.mass_index, dtype=wp.int32)
            thetas, firmware, delay = setup.draw(E, self.rng)
            self.thetas = wp.array(thetas, dtype=self.dtype)
            self.firmware = wp.array(firmware, dtype=self.dtype)
            self.delay = wp.array(delay, dtype=wp.int32)
            self.nets = wp.array(setup.nets, dtype=self.dtype)
            self.encoder = wp.array(setup.encoder, dtype=self.dtype)
            self.goals = floats(E, ns)
            self.enable = floats(E, ns, fill=1.0)
            self.records = floats(E, ns, SERVO_STATE_SIZE)
            self.steps = ints(E)
            self.fresh = ints(E, fill=1)
            self.goal_ring = floats(E, setup.lags, ns)
            self.clip_work = floats(E, clip_work_size(nv))
            self.failures = ints(E)
            self.reported = floats(E, ns)
            self.mats = floats(E, MATRICES, nv, nv)
            self.vec = floats(E, VECTORS, nv)
            self.per_servo = floats(E, PER_SERVO, ns)
            self.net_work = floats(E, ns, net_work_size(setup.nets))
            self.torque = floats(E, ns)
            self._nowhere = floats(1, 1)
        self._launches: dict = {}

    # ------------------------------------------------------------------ inputs and resets

    def set_goals(self, goals) -> None:
        """Every servo's goal position (rad, worlds × servos, or one row for all; a torch
        tensor, a Warp or numpy array), read at each world's next control period."""
        self._assign(self.goals, goals, "goals")

    def set_enable(self, flags) -> None:
        """Torque enable of each servo (worlds × servos, or broadcastable), latched at the next
        control period."""
        self._assign(self.enable, flags, "torque enable flags")

    def _assign(self, target, values, what: str) -> None:
        wp = self.wp
        if isinstance(values, wp.array):
            if values.shape != target.shape or values.dtype != target.dtype:
                raise ConfigurationError(f"{what}: a Warp array of shape {target.shape} and "
                                         f"{target.dtype.__name__} expected, got {values.shape}")
            wp.copy(target, values)
            return
        if hasattr(values, "is_cuda") or hasattr(values, "__torch_function__"):
            import torch

            tensor = torch.as_tensor(values)
            try:
                wp.to_torch(target).copy_(torch.broadcast_to(tensor, target.shape))
            except RuntimeError:
                raise ConfigurationError(f"{what}: expected shape {target.shape} (worlds × "
                                         f"servos) or one that broadcasts to it, got "
                                         f"{tuple(tensor.shape)}") from None
            return
        array = np.asarray(values, dtype=float)
        try:
            array = np.broadcast_to(array, target.shape)
        except ValueError:
            raise ConfigurationError(f"{what}: expected shape {target.shape} (worlds × servos) "
                                     f"or one that broadcasts to it, got {array.shape}") from None
        target.assign(np.ascontiguousarray(array))

    def reset(self, env_ids=None) -> None:
        """The servos of these worlds (all: None; indices or a boolean mask) start afresh at
        the next step, at the state their joints then have: records, control-period phase,
        command delay (drawn again with ``Randomisation.on_reset``, as are the parameters)."""
        wp = self.wp
        ids = world_ids(env_ids, self.nworld)
        if len(ids) == 0:
            return
        with wp.ScopedDevice(self.device):
            if isinstance(ids, np.ndarray):
                marked = wp.array(ids, dtype=wp.int32)
            else:
                marked = wp.from_torch(ids, dtype=wp.int32)
            wp.launch(_mark_fresh, dim=len(ids), inputs=[self.fresh, marked])
            if self.setup.randomisation.on_reset:
                worlds = ids if isinstance(ids, np.ndarray) else ids.cpu().numpy()
                thetas, firmware, delay = self.setup.draw(len(worlds), self.rng)
                self._write_rows(self.thetas, worlds, thetas)
                self._write_rows(self.firmware, worlds, firmware)
                self._write_rows(self.delay, worlds, delay)

    def _write_rows(self, target, worlds: np.ndarray, rows: np.ndarray) -> None:
        host = target.numpy()
        host[worlds] = rows
        target.assign(host)

    # --------------------------------------------------------------------------- a step

    def step(self, mass, bias, passive, qpos, qvel, qfrc=None) -> None:
        """Launch one physics step of the servos on the engine's arrays (Warp, worlds first):
        M in MuJoCo's packed form (``d.M``), the bias and passive forces, qpos and qvel (which
        a gear's impact writes); each servo's torque into :attr:`torque` and, when given, at
        its dof into ``qfrc`` (``d.qfrc_applied``)."""
        key = (id(mass), id(bias), id(passive), id(qpos), id(qvel), id(qfrc))
        launch = self._launches.get(key)
        if launch is None:
            launch = self._record(mass, bias, passive, qpos, qvel, qfrc)
            self._launches = {key: launch}
        launch.launch()

    def _record(self, mass, bias, passive, qpos, qvel, qfrc):
        """The kernel's launch with these arrays, recorded once (a relaunch costs a few µs)."""
        from frictionsim.solvers.batched.engine import servo_step_kernel

        wp = self.wp
        for name, array in (("M", mass), ("qfrc_bias", bias), ("qfrc_passive", passive),
                            ("qpos", qpos), ("qvel", qvel)):
            if array.dtype != self.dtype:
                raise ConfigurationError(f"the engine's {name} is {array.dtype.__name__}, the "
                                         f"servos' {self.dtype.__name__}: build them alike")
        write = qfrc is not None
        inputs = [self.qadr, self.dofs, self.mass_index, self.thetas, self.firmware, self.nets,
                  self.encoder, self.substeps, self.dtype(self.dt), self.dtype(self.period),
                  self.setup.gear, write, False, self.goals, self.enable, self.delay, mass,
                  bias, passive, qpos, qvel, self.records, self.steps, self.fresh,
                  self.goal_ring, self.clip_work, self.failures, self.reported, self.mats,
                  self.vec, self.per_servo, self.net_work, self.torque,
                  qfrc if write else self._nowhere]
        with wp.ScopedDevice(self.device):
            return wp.launch(servo_step_kernel, dim=self.nworld, inputs=inputs,
                             record_cmd=True)

    # ------------------------------------------------------------------------- outputs

    def torch(self, array):
        """A torch view (no copy) of one of the servos' Warp arrays."""
        return self.wp.to_torch(array)

    @property
    def current(self) -> np.ndarray:
        """The motor current (worlds × servos, A) each servo drew at the last step (with the
        ``supply`` extension; 0 otherwise)."""
        return self.records.numpy()[:, :, SERVO_CURRENT]

    def parameters(self, world: int | None = None) -> list:
        """The parameters each world drew (by name, a dict per servo), or world ``world``'s."""
        if world is not None and (isinstance(world, bool)
                                  or not isinstance(world, (int, np.integer))
                                  or not 0 <= world < self.nworld):
            raise ConfigurationError(f"world must be a whole number in [0, {self.nworld}), got "
                                     f"{world!r}")
        drawn = self.setup.drawn_parameters(self.thetas.numpy())
        return drawn if world is None else drawn[int(world)]

    def check(self) -> None:
        """SimulationError when a world's friction solve did not converge since its reset
        (its friction then feasible but maybe not optimal)."""
        from frictionsim.solvers.errors import SimulationError

        failed = self.failures.numpy()
        if failed.any():
            worlds = np.flatnonzero(failed)
            raise SimulationError(f"the friction solve did not converge in {int(failed.sum())} "
                                  f"steps of worlds {worlds[:8].tolist()}: check that the "
                                  "model's mass matrix is positive definite")


def _mark_fresh_kernel():
    wp = import_warp()

    @wp.kernel
    def mark_fresh(fresh: wp.array(dtype=wp.int32), ids: wp.array(dtype=wp.int32)):
        fresh[ids[wp.tid()]] = 1

    return mark_fresh


_mark_fresh = _mark_fresh_kernel()


class WarpRobot:
    """frictionsim's MuJoCo Warp engine: servos on an MJCF model (path, text or ``MjSpec``) in
    ``nworld`` worlds on ``device``, the step split for exact friction and captured into one
    CUDA graph on a GPU (module docstring)."""

    def __init__(self, mjcf, servos: list, control_period: float, nworld: int = 1,
                 device: str = "cpu", randomisation: Randomisation | None = None,
                 encoder: bool | float = True) -> None:
        import mujoco

        wp, mjwarp = import_mujoco_warp()
        self.wp, self.mjwarp = wp, mjwarp
        self.setup = ServoSetup.build(mjcf, servos, control_period, randomisation, encoder)
        self.model = self.setup.model
        self.device = check_device(device)
        self.servos = WarpServos(self.setup, nworld, self.device)
        self.qadr, self.dofs = self.setup.qadr, self.setup.dofs
        self.nworld = self.servos.nworld
        self.period = control_period
        with wp.ScopedDevice(self.device):
            self.wp_model = mjwarp.put_model(self.model)
            self.wp_data = mjwarp.put_data(self.model, mujoco.MjData(self.model),
                                           nworld=self.nworld)
        self._graph = None

    def bare_seconds(self, steps: int, goals) -> float:
        """Seconds per physics step of every world of the model as shipped (its own actuators
        holding ``goals``, one per servo; :meth:`ServoSetup.shipped`), MuJoCo Warp's own step,
        captured as one CUDA graph on a GPU as the servos' step is: what the servos' cost is
        compared with."""
        import mujoco

        wp, mjwarp = self.wp, self.mjwarp
        if getattr(self, "_shipped", None) is None:
            model, ctrl = self.setup.shipped()
            with wp.ScopedDevice(self.device):
                data = mjwarp.put_data(model, mujoco.MjData(model), nworld=self.nworld)
                self._shipped = (mjwarp.put_model(model), data, ctrl, [None])
        wp_model, data, ctrl, graph = self._shipped
        held = data.ctrl.numpy()
        on = ctrl >= 0
        held[:, ctrl[on]] = np.asarray(goals, dtype=float)[on]
        data.ctrl.assign(held)
        with wp.ScopedDevice(self.device):
            if wp.get_device(self.device).is_cuda and graph[0] is None:
                mjwarp.step(wp_model, data)
                with wp.ScopedCapture() as capture:
                    mjwarp.step(wp_model, data)
                graph[0] = capture.graph

            def step():
                if graph[0] is not None:
                    wp.capture_launch(graph[0])
                else:
                    mjwarp.step(wp_model, data)

            step()
            wp.synchronize()
            start = time.perf_counter()
            for _ in range(steps):
                step()
            wp.synchronize()
        return (time.perf_counter() - start) / steps

    def _physics_step(self) -> None:
        d = self.wp_data
        self.mjwarp.step1(self.wp_model, d)
        self.servos.step(d.M, d.qfrc_bias, d.qfrc_passive, d.qpos, d.qvel, d.qfrc_applied)
        self.mjwarp.step2(self.wp_model, d)

    def _step_once(self) -> None:
        wp = self.wp
        if not wp.get_device(self.device).is_cuda:
            self._physics_step()
            return
        if self._graph is None:  # physics and servos in one graph, captured once
            self._physics_step()  # loads every module before the capture
            with wp.ScopedCapture() as capture:
                self._physics_step()
            self._graph = capture.graph
        wp.capture_launch(self._graph)

    def set_state(self, qpos, qvel) -> None:
        """Every world's positions and velocities (E, nq), (E, nv) (or one row for all); the
        servos start afresh from them."""
        d = self.wp_data
        for target, values, what in ((d.qpos, qpos, "qpos"), (d.qvel, qvel, "qvel")):
            array = np.asarray(values, dtype=float)
            try:
                array = np.broadcast_to(array, target.shape)
            except ValueError:
                raise ConfigurationError(f"{what}: expected {target.shape} or one row, got "
                                         f"{array.shape}") from None
            if not np.all(np.isfinite(array)):
                raise ConfigurationError(f"{what}: finite values, got NaN or inf")
            target.assign(np.ascontiguousarray(array, dtype=np.float32))
        d.time.zero_()
        self.servos.reset()

    def step(self, goals, steps: int = 1) -> None:
        """``steps`` physics steps with the goals (E × J, or one row for all) held."""
        self.servos.set_goals(goals)
        with self.wp.ScopedDevice(self.device):
            for _ in range(steps):
                self._step_once()

    def run_batch(self, goals, enable=None, q0=None, v0=None):
        """:meth:`run` with the worlds first whatever their number (a
        :class:`~frictionsim.solvers.robot.RobotRun` of worlds × periods × ·)."""
        return self.run(goals, enable, q0, v0, batch=True)

    def run(self, goals, enable=None, q0=None, v0=None, batch: bool = False):
        """Goals (periods × J, the same in every world, or E × periods × J), torque enable
        flags likewise (default on), the initial qpos and qvel (one row, or a row per world)
        → a :class:`~frictionsim.solvers.robot.RobotRun`, worlds first for several worlds (or
        ``batch``). Its reports are the servos' own, off the encoder's grid, as every engine's
        run gives them."""
        goals = check_goals(goals, self.nworld, len(self.servos.servos))
        n = goals.shape[1]
        q0 = self.model.qpos0 if q0 is None else q0
        v0 = np.zeros(self.model.nv) if v0 is None else v0
        self.set_state(np.broadcast_to(q0, (self.nworld, self.model.nq)),
                       np.broadcast_to(v0, (self.nworld, self.model.nv)))
        substeps = self.servos.substeps
        ns = len(self.servos.servos)
        reported = np.empty((self.nworld, n, ns))
        physical = np.empty((self.nworld, n, self.model.nq))
        velocity = np.empty((self.nworld, n, self.model.nv))
        flags = None if enable is None else np.broadcast_to(
            np.asarray(enable, dtype=float), (self.nworld, n, ns))
        d = self.wp_data
        start = time.perf_counter()
        for k in range(n):
            physical[:, k] = d.qpos.numpy()
            velocity[:, k] = d.qvel.numpy()
            if flags is not None:
                self.servos.set_enable(flags[:, k])
            self.step(goals[:, k], substeps)
            # the report itself, as every engine's run gives it (the encoder's grid is what a
            # policy observes: WarpServos.reported)
            reported[:, k] = self.servos.records.numpy()[:, :, SERVO_REPORTED]
        seconds = time.perf_counter() - start
        self.servos.check()
        return batched_run(self.period, reported, physical, velocity, seconds, self.qadr,
                           batch or self.nworld > 1)


def check_goals(goals, nworld: int, nservo: int) -> np.ndarray:
    """Goals (periods × servos, the same in every world, or worlds × periods × servos) as a
    float array worlds × periods × servos; ConfigurationError for another shape or a goal that
    is not finite (the servos would hold their last target and hide it)."""
    array = np.asarray(goals, dtype=float)
    if array.ndim == 2:
        array = np.broadcast_to(array, (nworld, *array.shape))
    if array.ndim != 3 or array.shape[0] != nworld or array.shape[2] != nservo:
        raise ConfigurationError(f"goals must be (periods, {nservo}) or ({nworld}, periods, "
                                 f"{nservo}): one column per servo, got {np.shape(goals)}")
    bad = ~np.isfinite(array)
    if bad.any():
        world, period, servo = (int(i) for i in np.argwhere(bad)[0])
        raise ConfigurationError(f"goals[{world}, {period}, {servo}] = {array[world, period, servo]}: "
                                 "goal positions must be finite (rad)")
    return array


def batched_run(period: float, reported, physical, velocity, seconds: float, qadr,
                batch: bool):
    """The :class:`~frictionsim.solvers.robot.RobotRun` of a batched engine's worlds × periods
    arrays: the servos' joints as they reported them, the worlds first (``batch``) or world
    0's run."""
    from frictionsim.solvers.robot import RobotRun

    q = np.array(physical, dtype=float)
    q[:, :, qadr] = reported
    n = q.shape[1]
    run = RobotRun(np.arange(n) * period, q, np.asarray(velocity), seconds,
                   physical=np.asarray(physical))
    return run if batch else run.world(0)
