"""Every engine on the bench pendulum and the SO-101 (``frictionsim run engines``): how far it
lands from the Numba fixed step, how still it holds a joint the friction budget holds, and
what a step costs with and without the servos, for several numbers of worlds.

Set-ups:

- ``bench``: docs/model.md §1's pendulum as MJCF (0.2 kg at 0.1 m) with the published XL330
  M6 (kp 400, 7.4 V), physics at 1 ms, firmware at 5 ms; the motion a square wave of goals;
  the hold BAM's measurement's (the goal at the start, a gravity load of 0.0049 and 0.0088
  N·m, below the static budget);
- ``so101``: the SO-101 arm's MJCF (collisions off: MJX runs out of memory on its meshes at 64
  worlds, and the other engines are measured on the same model) with its robot file's
  servos (the sts3215_12v's default M6, or ``--params``) at 2 ms; the motion a sine on every
  joint; the hold: the arm settled for 1 s at its start pose, then held there for 2 s.

Drift is the largest distance of a servo joint from where the hold started; the reference
(fixed step) and the CPU adapter hold at exactly 0 on both set-ups. Times are per
environment-step (wall time / (worlds × physics steps)), after a warm-up; ``compile`` is the
first run's extra time (Numba's cache, Warp's kernels, XLA).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

from frictionsim.errors import ConfigurationError

ENGINES = ("fixed_step", "mujoco", "mjlab", "mjx")
SETUPS = ("bench", "so101")


@dataclass
class Setup:
    name: str
    mjcf: object          # a path, an MJCF text or an MjSpec
    servos: list
    period: float
    motion: np.ndarray    # goals, periods × servos
    holds: list           # (q0 of the model, goals) pairs


def bench_setup(seconds: float) -> Setup:
    from frictionsim.experiments.common.loading import shared_data
    from frictionsim.params import load_params
    from frictionsim.solvers.mujoco_adapter import bench_mjcf
    from frictionsim.solvers.robot import JointServo

    params = load_params(shared_data() / "xl330" / "params" / "m6.json")
    servo = JointServo("servo", params.with_scheme("semi_implicit"), kp=400.0, vin=7.4)
    n = int(round(seconds / 0.005))
    t = np.arange(n) * 0.005
    motion = (0.8 * np.sign(np.sin(2 * np.pi * t / 1.1)))[:, None]
    holds = [(np.array([q]), np.full((n, 1), q)) for q in (0.025, 0.045)]
    return Setup("bench", bench_mjcf(0.2, 0.1, 0.0, 0.001), [servo], 0.005, motion, holds)


def so101_setup(seconds: float, params_path=None) -> Setup:
    import mujoco

    from frictionsim.experiments.common.loading import shared_data
    from frictionsim.params import ParameterSet
    from frictionsim.robot_files import get_robot
    from frictionsim.robot_params import load_robot_params
    from frictionsim.solvers.robot_servos import joint_servos, robot_spec

    robot = get_robot("so101")
    if params_path is not None:
        robot, sets = load_robot_params(params_path).for_robot(robot)
    else:
        sets = {a: ParameterSet.defaults("m6", a) for a in robot.actuators}
    sets = {a: p.with_scheme("semi_implicit") for a, p in sets.items()}
    spec = robot_spec(robot, robot.mjcf_path(shared_data()))
    for geom in spec.geoms:
        geom.contype = 0
        geom.conaffinity = 0
    servos = joint_servos(robot, sets)
    model = spec.compile()
    n = int(round(seconds / robot.control_period))
    t = np.arange(n) * robot.control_period
    qadr = [model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, s.joint)]
            for s in servos]
    start = model.qpos0[qadr]
    motion = start + 0.3 * np.sin(2 * np.pi * 0.5 * t)[:, None] * np.ones(len(servos))
    settle = int(round(1.0 / robot.control_period))
    goals = np.repeat(start[None], settle + n, axis=0)
    return Setup("so101", spec, servos, robot.control_period, motion,
                 [(model.qpos0.copy(), goals)])


def _build(engine: str, setup: Setup, nworld: int, device: str):
    from frictionsim.solvers.engines import get_engine

    chosen = get_engine(engine)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if engine == "mjlab":
            return chosen.robot(setup.mjcf, setup.servos, setup.period, None, nworld=nworld,
                                device=device)
        if engine == "mjx":
            return chosen.robot(setup.mjcf, setup.servos, setup.period, None, nworld=nworld)
        if engine == "mujoco":  # the adapter takes a path, a text or a spec
            return chosen.robot(setup.mjcf, setup.servos, setup.period, "semi_implicit")
        # frictionsim's own simulators add the servos' armature to the model's themselves
        model = setup.mjcf.compile() if hasattr(setup.mjcf, "compile") else setup.mjcf
        return chosen.robot(model, setup.servos, setup.period, "semi_implicit")


def _servo_positions(run, sim) -> np.ndarray:
    """(periods × servos) reported positions of a one-world run."""
    if isinstance(run, tuple):
        return run[0][0]
    return run.q[:, sim.qadr]


def _physical(run, sim) -> np.ndarray:
    if isinstance(run, tuple):
        return run[1][0][:, sim.qadr]
    return run.physical[:, sim.qadr]


def measure_engine(engine: str, setup: Setup, envs: list[int], device: str,
                   reference: np.ndarray | None) -> dict:
    """One engine on one set-up (module docstring)."""
    out = {"engine": engine, "setup": setup.name, "device": device if engine == "mjlab"
           else "cpu" if engine != "mjx" else _jax_device()}
    start = time.perf_counter()
    sim = _build(engine, setup, 1, device)
    first = sim.run(setup.motion)
    out["compile_seconds"] = time.perf_counter() - start
    warm = sim.run(setup.motion)
    q = _servo_positions(warm, sim)
    out["motion_seconds"] = _seconds(warm)
    if reference is not None:
        out["deviation_max_rad"] = float(np.abs(q - reference).max())
        out["deviation_mean_rad"] = float(np.abs(q - reference).mean())
    drifts = []
    for q0, goals in setup.holds:
        held = sim.run(goals, q0=q0)
        physical = _physical(held, sim)
        start_at = len(goals) - len(setup.motion) if len(goals) > len(setup.motion) else 0
        drifts.append(float(np.abs(physical[start_at:] - physical[start_at]).max()))
    out["hold_drift_rad"] = max(drifts)
    out["timing"] = _timings(engine, setup, envs, device, sim)
    del first
    return out


def _seconds(run) -> float:
    return run[3] if isinstance(run, tuple) else run.seconds


def _jax_device() -> str:
    try:
        import jax

        return str(jax.default_backend())
    except ImportError:
        return "cpu"


def _timings(engine: str, setup: Setup, envs: list[int], device: str, single) -> list[dict]:
    """Per environment-step, with and without the servos, for each number of worlds."""
    steps = len(setup.motion) * int(round(setup.period / _timestep(single)))
    rows = []
    for n in envs:
        if engine in ("fixed_step", "mujoco") and n != 1:
            continue  # one world per process: these engines take one
        sim = single if n == 1 else _build(engine, setup, n, device)
        runs = [sim.run(setup.motion) for _ in range(2)]
        with_servos = min(_seconds(r) for r in runs) / (n * steps)
        rows.append({"worlds": n, "with_servos_s": with_servos,
                     "without_servos_s": _bare(engine, sim, setup, n, steps, device)})
    return rows


def _timestep(sim) -> float:
    model = getattr(sim, "model", None)
    return float(model.opt.timestep)


def _bare(engine: str, sim, setup: Setup, n: int, steps: int, device: str) -> float | None:
    """The engine's own step on the same model without servos, per environment-step."""
    import mujoco

    if engine == "fixed_step":
        return None
    if engine == "mujoco":
        from frictionsim.solvers.mujoco_adapter import servo_spec

        model = servo_spec(setup.mjcf, setup.servos)[0].compile()
        data = mujoco.MjData(model)
        mujoco.mj_step(model, data, nstep=min(steps, 100))
        start = time.perf_counter()
        mujoco.mj_step(model, data, nstep=steps)
        return (time.perf_counter() - start) / steps
    if engine == "mjlab":
        wp, mjwarp = sim.wp, sim.mjwarp
        with wp.ScopedDevice(sim.device):
            mjwarp.step(sim.wp_model, sim.wp_data)
            wp.synchronize()
            start = time.perf_counter()
            for _ in range(steps):
                mjwarp.step(sim.wp_model, sim.wp_data)
            wp.synchronize()
        return (time.perf_counter() - start) / (n * steps)
    if engine == "mjx":
        # the same loop as the servos' run (a scan of control periods, each a scan of
        # physics steps, the state collected every period), with MJX's own step
        jax, jnp, mjx = sim.jax, sim.jnp, sim.mjx
        substeps = sim.servos.substeps
        periods = steps // substeps

        def one(data):
            def period(d, _):
                before = (d.qpos, d.qvel)
                d, _ = jax.lax.scan(lambda x, _: (mjx.step(sim.mx, x), None), d, None,
                                    length=substeps)
                return d, before

            return jax.lax.scan(period, data, None, length=periods)[1]

        # the initial states are an argument: a state built inside the traced function
        # is a constant, and XLA folds the whole run away at compile time
        start_data = jax.vmap(lambda _: mjx.put_data(sim.model, mujoco.MjData(sim.model)))(
            jnp.arange(n))
        stepper = jax.jit(jax.vmap(one))
        jax.block_until_ready(stepper(start_data))
        start = time.perf_counter()
        jax.block_until_ready(stepper(start_data))
        return (time.perf_counter() - start) / (n * steps)
    raise ConfigurationError(f"no bare step for engine {engine!r}")


def reference_motion(setup: Setup) -> np.ndarray:
    """The Numba fixed step's reported positions of the set-up's motion (one world)."""
    sim = _build("fixed_step", setup, 1, "cpu")
    return _servo_positions(sim.run(setup.motion), sim)


def engines_table(engines: list[str], setups: list[str], envs: list[int], device: str,
                  seconds: float = 2.0, params=None, progress=print) -> list[dict]:
    """Every engine on every set-up (module docstring): a row of figures each."""
    rows = []
    for name in setups:
        setup = bench_setup(seconds) if name == "bench" else so101_setup(seconds, params)
        reference = reference_motion(setup)
        for engine in engines:
            progress(f"{setup.name}: {engine}")
            rows.append(measure_engine(engine, setup, envs, device, reference))
    return rows
