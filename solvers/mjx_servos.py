"""Servos in MJX (MuJoCo XLA) and MuJoCo Playground: the batched servos' kernel inside a jitted
JAX step (optional extra ``jax``).

The servos' physics step is the one kernel every batched engine runs
(:mod:`frictionsim.solvers.batched.engine`), a custom call in the jitted computation, a
thread per world: on the CPU through frictionsim's compiled FFI handler
(:mod:`frictionsim.solvers.mjx_cpu_call`, no Python in the call), on a GPU through Warp's FFI
(``warp.jax_kernel``, marked fit for XLA's CUDA command buffers). JAX carries the servos'
state from step to step (:class:`MjxServoState`, functional); the kernel reads it and writes
the next.

- :func:`servo_step` ``(state, goals, qpos, qvel, servos, mass, bias, passive) → (state,
  qfrc)``: one world's physics step of its servos (``vmap`` it over worlds: a ``vmap`` of it
  is one kernel launch for all of them), the torque of every dof (the servos' dofs: τ_m +
  network + friction; the others 0); :func:`servo_forces` the same with the positions and
  velocities it goes on from (servos with ``backlash``: a gear's impact writes them);
- :func:`mjx_step` ``(model, data, state, goals, servos) → (data, state)``: one MJX step with
  the servos where MuJoCo's C engine calls its control callback, between the velocity stage
  (M(q), bias and passive forces fresh) and the actuation;
- :func:`reset` and :func:`reset_where`: a world's servos afresh at its state, each world
  drawing its parameters, supply, drop and command delay with its own key
  (:class:`~frictionsim.solvers.batched.setup.Randomisation`); :func:`parameters`: each
  world's draw by name.

The model must be prepared as every frictionsim MuJoCo engine prepares it
(:func:`~frictionsim.solvers.mujoco_adapter.servo_spec`: the servos' armature, no joint damping
or friction of its own, zero-force goal actuators, Euler); :func:`build` does it. In float64
(``jax.config.update("jax_enable_x64", True)`` before anything else), a joint the friction
budget holds stays where it is to round-off (docs/results.md).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from frictionsim.errors import ConfigurationError, MissingExtra
from frictionsim.layout import SERVO_CURRENT, SERVO_REPORTED, SERVO_STATE_SIZE
from frictionsim.solvers.batched.memory import clip_work_size
from frictionsim.solvers.batched.setup import (
    Randomisation,
    ServoSetup,
    dense_index,
    draw_rows,
)

__all__ = ["MjxRobot", "MjxServoState", "MjxServos", "Randomisation", "build", "mjx_step",
           "parameters", "reset", "reset_where", "servo_forces", "servo_step"]


def import_jax():
    try:
        import jax
        import jax.numpy as jnp
        from mujoco import mjx
    except ImportError:
        raise MissingExtra("MJX needs JAX: pip install 'frictionsim[jax]'") from None
    return jax, jnp, mjx


class MjxServos(NamedTuple):
    """The constants of J servos on an MJX model: the set-up (:class:`ServoSetup`: the
    prepared model, the servos, the schedule, what a world draws), its arrays in JAX (the
    joints' qpos and dof addresses, M's dense index, the networks, the encoder grid) and the
    float type."""

    setup: ServoSetup
    qadr: object
    dofs: object
    mass_index: object
    nets: object
    encoder: object
    dtype: object

    @property
    def substeps(self) -> int:
        return self.setup.schedule.substeps

    @property
    def dt(self) -> float:
        return self.setup.schedule.timestep

    @property
    def period(self) -> float:
        return self.setup.schedule.period


class MjxServoState(NamedTuple):
    """What one world's servos carry from step to step (add a leading dimension for many):
    the bank's records (J × SERVO_STATE_SIZE), the physics steps since the reset (its control
    period's phase), 1 until the first step after a reset, the goals of the last steps
    (command delay), the friction solve's kept active set, the steps whose solve did not
    converge, the position each servo reported at its last period (on its encoder's grid), and
    the world's draw: its servos' parameters, firmware settings and command delay."""

    records: object
    steps: object
    fresh: object
    goal_ring: object
    clip_work: object
    failures: object
    reported: object
    thetas: object
    firmware: object
    delay: object

    @property
    def current(self):
        """The motor current (A) each servo drew at the last step (``supply`` on)."""
        return self.records[..., SERVO_CURRENT]


def build(mjcf, servos: list, control_period: float,
          randomisation: Randomisation | None = None, encoder: bool | float = True, dtype=None):
    """(mujoco.MjModel prepared for the servos, :class:`MjxServos`) for MJX: put the model
    with ``mjx.put_model``. ``dtype``: the servos' float type (default JAX's: float64 with
    x64 on)."""
    jax, jnp, _ = import_jax()
    setup = ServoSetup.build(mjcf, servos, control_period, randomisation, encoder)
    model = setup.model
    if setup.model.opt.disableflags & _contact_disabled():
        # contacts off: the geoms' collision masks change nothing, and MJX sizes its collision
        # memory by them (the SO-101's meshes would ask for hundreds of GB)
        model = _without_collisions(mjcf, servos)
        setup = ServoSetup.on_model(model, servos, control_period, randomisation, encoder)
        setup.source = mjcf
    dtype = dtype or (jnp.float64 if jax.config.jax_enable_x64 else jnp.float32)
    try:
        floating = jnp.dtype(dtype) in (jnp.dtype(jnp.float32), jnp.dtype(jnp.float64))
    except TypeError:
        floating = False
    if not floating:
        raise ConfigurationError(f"dtype {dtype!r}: the servos compute in float32 or float64")
    return model, MjxServos(setup, jnp.asarray(setup.qadr), jnp.asarray(setup.dofs),
                            jnp.asarray(dense_index(int(model.nv))),
                            jnp.asarray(setup.nets, dtype=dtype),
                            jnp.asarray(setup.encoder, dtype=dtype), dtype)


def _contact_disabled() -> int:
    import mujoco

    return int(mujoco.mjtDisableBit.mjDSBL_CONTACT)


def _without_collisions(mjcf, servos):
    import warnings

    import mujoco

    from frictionsim.solvers.mujoco_adapter import SchemeWarning, servo_spec

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SchemeWarning)
        spec, _ = servo_spec(mjcf, servos)
    for geom in spec.geoms:
        geom.contype = geom.conaffinity = 0
    # without contacts the friction cone's shape changes nothing, and MJX's solver fails on
    # an elliptic cone with no contact (an empty float index; the SO-100's and the Koch's)
    spec.option.cone = mujoco.mjtCone.mjCONE_PYRAMIDAL
    return spec.compile()


# ----------------------------------------------------------------------------- the state

def reset(qpos, qvel, servos: MjxServos, key=None) -> MjxServoState:
    """One world's servos reset at its state (qpos, qvel): their records restart at the
    next step (:func:`servo_step`); with a randomisation, its draw made with ``key`` (a JAX
    PRNG key; required then). ``vmap`` it with a key per world for many."""
    jax, jnp, _ = import_jax()
    setup = servos.setup
    _check_shapes("reset", servos, qpos=qpos, qvel=qvel)
    _check_finite("reset", qpos=qpos, qvel=qvel)
    if _draws_anything(setup):
        if key is None:
            raise ConfigurationError("these servos draw their parameters, supply or delay per "
                                     "world: give reset a PRNG key (jax.random.key)")
        if not hasattr(key, "dtype"):
            raise ConfigurationError(f"reset: key must be a JAX PRNG key (jax.random.key(seed)), "
                                     f"got {type(key).__name__}")
        uniform = jax.random.uniform(key, (setup.draws,), dtype=servos.dtype)
    else:
        uniform = jnp.zeros(setup.draws, dtype=servos.dtype)
    thetas, firmware, delay = draw_rows(jnp, setup, uniform)
    return _restart(qpos, servos, thetas, firmware, delay)


def _restart(qpos, servos: MjxServos, thetas, firmware, delay) -> MjxServoState:
    """A world's state before its first step with the draw (thetas, firmware, delay)."""
    _, jnp, _ = import_jax()

    setup = servos.setup
    ns, nv = len(setup.servos), int(setup.model.nv)
    return MjxServoState(
        records=jnp.zeros((ns, SERVO_STATE_SIZE), dtype=servos.dtype),
        steps=jnp.zeros((), dtype=jnp.int32), fresh=jnp.ones((), dtype=jnp.int32),
        goal_ring=jnp.zeros((setup.lags, ns), dtype=servos.dtype),
        clip_work=jnp.zeros(clip_work_size(nv), dtype=servos.dtype),
        failures=jnp.zeros((), dtype=jnp.int32),
        reported=jnp.asarray(qpos, dtype=servos.dtype)[servos.qadr],
        thetas=jnp.asarray(thetas, dtype=servos.dtype),
        firmware=jnp.asarray(firmware, dtype=servos.dtype),
        delay=jnp.asarray(delay, dtype=jnp.int32))


def reset_where(state: MjxServoState, mask, qpos, qvel, servos: MjxServos,
                key=None) -> MjxServoState:
    """The worlds where ``mask`` is true reset at their state (qpos, qvel), the others
    unchanged: an episode's reset of some worlds. A reset world keeps its draw, or draws again
    with ``key`` when ``Randomisation.on_reset``. One world's arrays (``vmap`` it), or worlds
    first with ``mask`` (worlds,) and one ``key`` split among them."""
    jax, jnp, _ = import_jax()
    _check_finite("reset_where", qpos=qpos, qvel=qvel)
    mask = jnp.asarray(mask)
    if mask.dtype != bool:
        raise ConfigurationError(f"reset_where: the mask must be booleans (True: reset), got "
                                 f"{mask.dtype}")
    if mask.ndim > 1 or (mask.ndim == 1 and not np.shape(state.records)[0] == mask.shape[0]
                         == np.shape(qpos)[0] == np.shape(qvel)[0]):
        # shapes are static under jit: checked once when traced, never per step
        raise ConfigurationError(
            "reset_where: a mask of one entry per world, with the state, qpos and qvel worlds "
            f"first (or one world's, unbatched); got mask {tuple(mask.shape)}, state of "
            f"{np.shape(state.records)[0]} worlds, qpos {np.shape(qpos)}, qvel {np.shape(qvel)}")
    if mask.ndim == 1:
        keys = None if key is None else jax.random.split(key, mask.shape[0])
        return jax.vmap(lambda s, m, q, v, k: reset_where(s, m, q, v, servos, k),
                        in_axes=(0, 0, 0, 0, None if keys is None else 0))(
            state, mask, qpos, qvel, keys)
    if servos.setup.randomisation.on_reset and _draws_anything(servos.setup):
        if key is None:
            raise ConfigurationError("Randomisation(on_reset=True): give reset_where a PRNG key")
        fresh = reset(qpos, qvel, servos, key)
    else:
        fresh = _restart(qpos, servos, state.thetas, state.firmware, state.delay)
    return jax.tree_util.tree_map(lambda a, b: jnp.where(mask, b, a), state, fresh)


def _check_shapes(what: str, servos: MjxServos, **arrays) -> None:
    """ConfigurationError for an array of one world whose shape is not the model's: goals
    and enable flags (servos,), qpos (nq,), qvel, bias, passive (nv,), mass (nv, nv), a
    state's records (servos, ·). Shapes are static under jit and vmap: checked once when
    traced, never per step."""
    ns, nq, nv = len(servos.setup.servos), int(servos.setup.model.nq), int(servos.setup.model.nv)
    expected = {"goals": (ns,), "enable": (ns,), "qpos": (nq,), "qvel": (nv,), "bias": (nv,),
                "passive": (nv,), "mass": (nv, nv), "records": (ns, SERVO_STATE_SIZE)}
    for name, array in arrays.items():
        shape = tuple(np.shape(array))
        if shape != expected[name]:
            raise ConfigurationError(
                f"{what}: {name} of one world must have shape {expected[name]} ({ns} servos, "
                f"nq {nq}, nv {nv}), got {shape}" + (" (vmap the call over worlds)"
                                                     if shape[1:] == expected[name] else ""))


def _check_finite(what: str, **arrays) -> None:
    """ConfigurationError for a NaN or inf in arrays whose values are known (not traced under
    jit or vmap, where values are not known until run: those pass unchecked)."""
    jax, _, _ = import_jax()
    for name, array in arrays.items():
        if isinstance(array, jax.core.Tracer):
            continue
        # numpy's isfinite: jnp's would be staged into a trace that is under way
        if not np.all(np.isfinite(np.asarray(array))):
            raise ConfigurationError(f"{what}: {name} must be finite, got NaN or inf")


def _draws_anything(setup: ServoSetup) -> bool:
    r = setup.randomisation
    return r.parameters or r.vin is not None or r.drop is not None or r.delay is not None


def parameters(state: MjxServoState, servos: MjxServos) -> list:
    """Each world's drawn parameters by name (a list per world of a dict per servo) from a
    state with worlds first; one world's list from a single world's state."""
    if not isinstance(state, MjxServoState):
        raise ConfigurationError(f"parameters: a state of mjx_servos.reset, got "
                                 f"{type(state).__name__}")
    thetas = np.asarray(state.thetas)
    if thetas.ndim == 2:
        return servos.setup.drawn_parameters(thetas[None])[0]
    return servos.setup.drawn_parameters(thetas)


# ------------------------------------------------------------------------------ the step

@functools.cache
def _kernel(dtype_name: str):
    """The servo kernel for JAX's arrays of this float type (a concrete Warp overload)."""
    from frictionsim.solvers.batched import import_warp
    from frictionsim.solvers.batched.engine import servo_step_kernel

    wp = import_warp()
    scalar = {"float32": wp.float32, "float64": wp.float64}[dtype_name]

    def a(n):
        return {1: wp.array, 2: wp.array2d, 3: wp.array3d, 4: wp.array4d}[n](dtype=scalar)

    return wp.overload(servo_step_kernel, {
        "thetas": a(3), "firmware": a(3), "nets": a(2), "encoder": a(1), "dt": scalar,
        "period": scalar, "goals": a(2), "enable": a(2), "mass": a(2), "bias": a(2),
        "passive": a(2), "qpos": a(2), "qvel": a(2), "records": a(3), "goal_ring": a(3),
        "clip_work": a(2), "reported": a(2), "mats": a(4), "vec": a(3), "per_servo": a(3),
        "net_work": a(3), "torque": a(2), "qfrc": a(2)})


_IN_OUT = ("qpos", "qvel", "records", "steps", "fresh", "goal_ring", "clip_work", "failures",
           "reported")
_OUTPUTS = ("mats", "vec", "per_servo", "net_work", "torque", "qfrc")

NATIVE_CPU = True
"""On the CPU, call the kernel through frictionsim's native FFI handler
(:mod:`frictionsim.solvers.mjx_cpu_call`) rather than Warp's Python callback (the same
kernel and results, without about 50 µs of Python a call)."""


@functools.cache
def _warp_ffi(dtype_name: str):
    """The servo kernel through Warp's JAX FFI (the GPU's path, and the CPU's without
    :data:`NATIVE_CPU`)."""
    from frictionsim.solvers.batched import import_warp

    wp = import_warp()
    return wp.jax_kernel(_kernel(dtype_name), num_outputs=len(_IN_OUT) + len(_OUTPUTS),
                         in_out_argnames=list(_IN_OUT))


def _batched_step(servos: MjxServos, state: MjxServoState, goals, enable, qpos, qvel, mass,
                  bias, passive):
    """The kernel on worlds-first arrays: (state, qfrc, qpos, qvel)."""
    jax, jnp, _ = import_jax()
    from frictionsim.solvers.batched.memory import MATRICES, PER_SERVO, VECTORS, net_work_size

    setup = servos.setup
    E = qvel.shape[0]
    nv = int(setup.model.nv)
    ns = len(setup.servos)
    dtype = servos.dtype
    name = jnp.dtype(dtype).name
    mass = jnp.reshape(mass, (E, nv * nv)).astype(dtype)
    args = (servos.qadr, servos.dofs, servos.mass_index, state.thetas, state.firmware,
            servos.nets, servos.encoder, setup.schedule.substeps, setup.schedule.timestep,
            setup.schedule.period, setup.gear, True, True, goals.astype(dtype),
            enable.astype(dtype), state.delay, mass, bias.astype(dtype), passive.astype(dtype),
            qpos.astype(dtype), qvel.astype(dtype), state.records, state.steps, state.fresh,
            state.goal_ring, state.clip_work, state.failures, state.reported)
    shapes = {"mats": (E, MATRICES, nv, nv), "vec": (E, VECTORS, nv),
              "per_servo": (E, PER_SERVO, ns), "net_work": (E, ns, net_work_size(setup.nets)),
              "torque": (E, ns), "qfrc": (E, nv)}

    def through_warp():
        return tuple(_warp_ffi(name)(*args, launch_dims=(E,), output_dims=shapes))

    def native():
        from frictionsim.solvers.mjx_cpu_call import NativeCallUnavailable, kernel_call

        try:
            return tuple(kernel_call(_kernel(name), E, list(args), len(_IN_OUT),
                                     [(shapes[k], dtype) for k in _OUTPUTS]))
        except NativeCallUnavailable as error:
            import warnings

            warnings.warn(f"MJX calls the servos through Warp's FFI on the CPU (about 50 µs a "
                          f"call more): {error}", RuntimeWarning, stacklevel=2)
            return through_warp()

    out = jax.lax.platform_dependent(cpu=native, default=through_warp) if NATIVE_CPU \
        else through_warp()
    (qpos_out, qvel_out, records, steps, fresh, goal_ring, clip_work, failures, reported,
     _mats, _vec, _per_servo, _net_work, _torque, qfrc) = out
    state = state._replace(records=records, steps=steps, fresh=fresh, goal_ring=goal_ring,
                           clip_work=clip_work, failures=failures, reported=reported)
    return state, qfrc, qpos_out, qvel_out


def _one_world(servos: MjxServos):
    """:func:`servo_forces` of one world as a ``custom_vmap`` whose batching rule calls the
    kernel once for the whole batch."""
    jax, jnp, _ = import_jax()

    @jax.custom_batching.custom_vmap
    def step(state, goals, enable, qpos, qvel, mass, bias, passive):
        lifted = jax.tree_util.tree_map(lambda x: x[None], (state, goals, enable, qpos, qvel,
                                                             mass, bias, passive))
        out = _batched_step(servos, *lifted)
        return jax.tree_util.tree_map(lambda x: x[0], out)

    @step.def_vmap
    def step_vmap(axis_size, in_batched, state, goals, enable, qpos, qvel, mass, bias, passive):
        args = (state, goals, enable, qpos, qvel, mass, bias, passive)
        flags = jax.tree_util.tree_leaves(in_batched)
        leaves, tree = jax.tree_util.tree_flatten(args)
        leaves = [x if batched else jnp.broadcast_to(x, (axis_size, *jnp.shape(x)))
                  for x, batched in zip(leaves, flags)]
        out = _batched_step(servos, *jax.tree_util.tree_unflatten(tree, leaves))
        return out, jax.tree_util.tree_map(lambda _: True, out)

    return step


_ONE_WORLD: dict = {}


def servo_forces(state: MjxServoState, goals, qpos, qvel, servos: MjxServos, mass, bias,
                 passive, enable=None):
    """One physics step of one world's servos (``vmap`` it over worlds): (state, qfrc (nv,),
    qpos, qvel). ``goals`` (J,) in the joints' angles; ``mass`` the world's M (nv, nv);
    ``bias``, ``passive`` its bias and passive forces (nv,) of this step; ``enable`` (J,) the
    torque enable flags (default all on). With ``backlash`` the gaps a step closed are
    impacts, written into the positions and velocities the step goes on from."""
    _, jnp, _ = import_jax()
    key = id(servos)
    step = _ONE_WORLD.get(key)
    if step is None or step[0] is not servos:
        _ONE_WORLD.clear()
        step = (servos, _one_world(servos))
        _ONE_WORLD[key] = step
    if enable is None:
        enable = jnp.ones_like(jnp.asarray(goals, dtype=servos.dtype))
    _check_shapes("servo_forces", servos, records=state.records, goals=goals, enable=enable,
                  qpos=qpos, qvel=qvel, mass=mass, bias=bias, passive=passive)
    return step[1](state, jnp.asarray(goals), jnp.asarray(enable), qpos, qvel, mass, bias,
                   passive)


def servo_step(state: MjxServoState, goals, qpos, qvel, servos: MjxServos, mass, bias,
               passive, enable=None):
    """:func:`servo_forces` without the positions: (state, qfrc). Servos with ``backlash``
    take :func:`servo_forces` (an impact writes the state)."""
    if servos.setup.gear:
        raise ConfigurationError("servos with backlash write the state (a gear's impact): call "
                                 "mjx_servos.servo_forces, which returns qpos and qvel too")
    state, qfrc, _, _ = servo_forces(state, goals, qpos, qvel, servos, mass, bias, passive,
                                     enable)
    return state, qfrc


def mjx_step(model, data, state: MjxServoState, goals, servos: MjxServos, enable=None):
    """One MJX step of a world with its servos (module docstring): (data, state)."""
    _, _, mjx = import_jax()
    data = mjx.sensor_pos(model, mjx.fwd_position(model, data))
    data = mjx.sensor_vel(model, mjx.fwd_velocity(model, data))
    state, qfrc, qpos, qvel = servo_forces(state, goals, data.qpos, data.qvel, servos,
                                           mjx.full_m(model, data), data.qfrc_bias,
                                           data.qfrc_passive, enable)
    data = data.replace(qfrc_applied=qfrc.astype(data.qvel.dtype),
                        qpos=qpos.astype(data.qpos.dtype), qvel=qvel.astype(data.qvel.dtype))
    data = mjx.fwd_acceleration(model, mjx.fwd_actuation(model, data))
    return mjx.euler(model, _constrained(model, data)), state


def _constrained(model, data):
    """The constraint solve and the acceleration sensors, as ``mjx.forward`` does them: a
    model without constraint rows keeps the smooth acceleration (MJX's solver loop would
    cost twice the rest of the step to find it)."""
    _, _, mjx = import_jax()
    rows = getattr(getattr(data, "_impl", data), "efc_J", None)
    if rows is not None and rows.size == 0:
        data = data.replace(qacc=data.qacc_smooth)
    else:
        data = mjx.solve(model, data)
    return mjx.sensor_acc(model, data)


class MjxRobot:
    """frictionsim's MJX engine: servos on an MJCF model, ``nworld`` worlds stepped by one
    ``jit``-compiled ``scan`` of control periods (each a ``scan`` of physics steps), MJX's
    stages ``vmap``-ed over the worlds and the servos' kernel called once per physics step
    for all of them."""

    def __init__(self, mjcf, servos: list, control_period: float, nworld: int = 1,
                 randomisation: Randomisation | None = None, encoder: bool | float = True,
                 seed: int = 0) -> None:
        jax, jnp, mjx = import_jax()
        if isinstance(nworld, bool) or not isinstance(nworld, (int, np.integer)) or nworld < 1:
            raise ConfigurationError(f"nworld must be a whole number ≥ 1, got {nworld!r}")
        self.jax, self.jnp, self.mjx = jax, jnp, mjx
        self.model, self.servos = build(mjcf, servos, control_period, randomisation, encoder)
        self.mx = mjx.put_model(self.model)
        self.nworld = int(nworld)
        self.period = control_period
        self.qadr = np.asarray(self.servos.setup.qadr)
        self.dofs = np.asarray(self.servos.setup.dofs)
        self.key = jax.random.key(seed)
        self._run = jax.jit(self._all)
        self._bare: dict = {}

    def _all(self, goals, enable, q0, v0, keys):
        import mujoco

        jax, jnp, mjx = self.jax, self.jnp, self.mjx
        servos = self.servos
        blank = mjx.put_data(self.model, mujoco.MjData(self.model))
        data = jax.vmap(lambda q, v: blank.replace(qpos=q, qvel=v))(q0, v0)
        state = jax.vmap(lambda q, v, k: reset(q, v, servos, k))(q0, v0, keys)
        stepped = jax.eval_shape(lambda d, s: self._physics(d, s, goals[:, 0], enable[:, 0]),
                                 data, state)
        # a step may return other integer widths than put_data gives (contacts in float64
        # mode): the loop's carry takes the step's own
        data = jax.tree_util.tree_map(lambda x, o: x.astype(o.dtype), data, stepped[0])

        def period(carry, inputs):
            goal, on = inputs
            data, state = carry
            before = (data.qpos, data.qvel)

            def physics(c, _):
                return self._physics(c[0], c[1], goal, on), None

            (data, state), _ = jax.lax.scan(physics, (data, state), None,
                                            length=servos.substeps)
            # the report itself, as every engine's run gives it (off the encoder's grid)
            return (data, state), (before[0], before[1], state.records[..., SERVO_REPORTED])

        (_, state), out = jax.lax.scan(period, (data, state),
                                       (jnp.swapaxes(goals, 0, 1), jnp.swapaxes(enable, 0, 1)))
        return (*(jnp.swapaxes(x, 0, 1) for x in out), state.failures)

    def _physics(self, data, state, goals, enable):
        """One physics step of every world: MJX's stages per world, the servos' kernel for all."""
        jax, mjx = self.jax, self.mjx
        mx = self.mx

        def velocity_stage(d):
            d = mjx.sensor_pos(mx, mjx.fwd_position(mx, d))
            return mjx.sensor_vel(mx, mjx.fwd_velocity(mx, d))

        def rest(d, qfrc, qpos, qvel):
            d = d.replace(qfrc_applied=qfrc.astype(d.qvel.dtype), qpos=qpos.astype(d.qpos.dtype),
                          qvel=qvel.astype(d.qvel.dtype))
            d = mjx.fwd_acceleration(mx, mjx.fwd_actuation(mx, d))
            return mjx.euler(mx, _constrained(mx, d))

        data = jax.vmap(velocity_stage)(data)
        mass = jax.vmap(lambda d: mjx.full_m(mx, d))(data)
        state, qfrc, qpos, qvel = _batched_step(self.servos, state, goals, enable, data.qpos,
                                                data.qvel, mass, data.qfrc_bias,
                                                data.qfrc_passive)
        return jax.vmap(rest)(data, qfrc, qpos, qvel), state

    def bare_seconds(self, steps: int, goals) -> float:
        """Seconds per physics step of every world of the model as shipped (its own actuators
        holding ``goals``, one per servo; :meth:`ServoSetup.shipped`), stepped by the same
        stages as :meth:`_physics` without the servos' kernel, in the same loop as
        :meth:`run` (a scan of control periods, each a scan of physics steps, the state
        collected every period): the engine's step the servos are compared with."""
        import time

        import mujoco

        jax, jnp, mjx = self.jax, self.jnp, self.mjx
        substeps = self.servos.substeps
        periods = max(1, steps // substeps)
        key = (periods, tuple(np.round(np.asarray(goals, dtype=float), 12)))
        if key not in self._bare:
            model, ctrl = self.servos.setup.shipped()
            mx = mjx.put_model(model)
            blank = mjx.put_data(model, mujoco.MjData(model))
            on = ctrl >= 0
            held = np.zeros(model.nu)
            held[ctrl[on]] = np.asarray(goals, dtype=float)[on]
            blank = blank.replace(ctrl=jnp.asarray(held))

            def physics(d):
                d = mjx.sensor_vel(mx, mjx.fwd_velocity(mx, mjx.sensor_pos(
                    mx, mjx.fwd_position(mx, d))))
                d = mjx.fwd_acceleration(mx, mjx.fwd_actuation(mx, d))
                return mjx.euler(mx, _constrained(mx, d))

            def one(data):
                def period(d, _):
                    before = (d.qpos, d.qvel)
                    d, _ = jax.lax.scan(lambda x, _: (physics(x), None), d, None,
                                        length=substeps)
                    return d, before

                return jax.lax.scan(period, data, None, length=periods)[1]

            # the initial states are an argument: a state built inside the traced function is
            # a constant, and XLA folds the whole run away at compile time
            start_data = jax.vmap(lambda _: blank)(jnp.arange(self.nworld))
            stepper = jax.jit(jax.vmap(one))  # compiled once, as the servos' run
            jax.block_until_ready(stepper(start_data))
            self._bare[key] = (stepper, start_data)
        stepper, start_data = self._bare[key]
        start = time.perf_counter()
        jax.block_until_ready(stepper(start_data))
        return (time.perf_counter() - start) / (periods * substeps)

    def run_batch(self, goals, enable=None, q0=None, v0=None):
        """:meth:`run` with the worlds first whatever their number (a
        :class:`~frictionsim.solvers.robot.RobotRun` of worlds × periods × ·)."""
        return self.run(goals, enable, q0, v0, batch=True)

    def run(self, goals, enable=None, q0=None, v0=None, batch: bool = False):
        """Goals (periods × J, the same in every world, or worlds × periods × J), torque enable
        flags likewise (default on), the initial qpos and qvel (one row, or a row per world)
        → a :class:`~frictionsim.solvers.robot.RobotRun`, worlds first for several worlds (or
        ``batch``)."""
        import time

        from frictionsim.solvers.warp_servos import batched_run, check_goals

        jax, jnp = self.jax, self.jnp
        ns = len(self.servos.setup.servos)
        goals = check_goals(goals, self.nworld, ns)
        flags = np.ones_like(goals) if enable is None else np.broadcast_to(
            np.asarray(enable, dtype=float), goals.shape)
        q0 = np.broadcast_to(self.model.qpos0 if q0 is None else q0, (self.nworld, self.model.nq))
        v0 = np.broadcast_to(np.zeros(self.model.nv) if v0 is None else v0,
                             (self.nworld, self.model.nv))
        self.key, draw = jax.random.split(self.key)
        keys = jax.random.split(draw, self.nworld)
        start = time.perf_counter()
        physical, velocity, reported, failures = (np.asarray(a) for a in self._run(
            jnp.asarray(goals), jnp.asarray(flags), jnp.asarray(np.array(q0)),
            jnp.asarray(np.array(v0)), keys))
        seconds = time.perf_counter() - start
        if failures.any():
            from frictionsim.solvers.errors import SimulationError

            raise SimulationError(f"the friction solve did not converge in {int(failures.sum())}"
                                  " steps: check that the model's mass matrix is positive "
                                  "definite")
        return batched_run(self.period, reported, physical, velocity, seconds, self.qadr,
                           batch or self.nworld > 1)
