"""Every engine on the bench pendulum, the SO-101 and a biped (``frictionsim run engines``): how
far it lands from the Numba fixed step, how still it holds a joint the friction budget holds,
and what a step costs with and without the servos, for several numbers of worlds.

Set-ups:

- ``bench``: docs/model.md §1's pendulum as MJCF (0.2 kg at 0.1 m) with the published XL330
  M6 (kp 400, 7.4 V), physics at 1 ms, firmware at 5 ms; the motion a square wave of goals;
  the hold BAM's measurement's (the goal at the start, a gravity load of 0.0049 and 0.0088
  N·m, below the static budget);
- ``so101``: the SO-101 arm's MJCF (collisions off: MJX runs out of memory on its meshes at 64
  worlds, and the other engines are measured on the same model) with its robot file's
  servos (the sts3215_12v's default M6, or ``--params``) at 2 ms; the motion a sine on every
  joint; the hold: the arm settled for 1 s at its start pose, then held there for 2 s;
- ``biped``: the built-in 20-dof biped (:func:`~frictionsim.experiments.robots.adapter_cost.biped_mjcf`:
  a floating torso, 14 hinges, feet on a floor) with the 7.4 V STS3215's default M6 on its
  hinges at 2 ms, stepped by the batched engines only (it touches its floor: frictionsim's
  own fixed step has no contact solver); the motion a sine on every hinge.

Drift is the largest distance of a servo joint from where the hold started; the reference
(fixed step) and the CPU adapter hold at exactly 0 on the bench and the arm. Times are per
environment-step (wall time / (worlds × physics steps)): the engine's step with the servos
and without them (its ``bare`` entry in the registry: the model as shipped, its own
actuators holding the goals, Euler and the same stages), alternated in rounds in one
process, each keeping its fastest round; ``compile`` is the first run's extra
time (Numba's cache, Warp's kernels, XLA). The deviation compares the physical positions
(the servos' reports lie on their encoder grids in the batched engines).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

ENGINES = ("fixed_step", "mujoco", "mjlab", "mjx")
SETUPS = ("bench", "so101", "biped")
#: Rounds of the with/without comparison, alternated, the fastest of each kept.
ROUNDS = 5


@dataclass
class Setup:
    name: str
    mjcf: object          # a path, an MJCF text or an MjSpec
    servos: list
    period: float
    motion: np.ndarray    # goals, periods × servos
    holds: list           # (q0 of the model, goals) pairs
    contacts: bool = False  # the model touches something: batched engines only


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


def biped_setup(seconds: float) -> Setup:
    from frictionsim.experiments.robots.adapter_cost import biped_mjcf
    from frictionsim.params import ParameterSet
    from frictionsim.solvers.mjcf_files import read_spec
    from frictionsim.solvers.robot import JointServo

    xml, joints = biped_mjcf()
    params = ParameterSet.defaults("m6", "sts3215_7v4").with_scheme("semi_implicit")
    servos = [JointServo(j, params, kp=32.0) for j in joints]
    model = read_spec(xml).compile()
    period = 0.006  # three physics steps of 2 ms
    n = int(round(seconds / period))
    t = np.arange(n) * period
    motion = 0.2 * np.sin(2 * np.pi * 0.5 * t)[:, None] * np.ones(len(servos))
    return Setup("biped", xml, servos, period, motion, [(model.qpos0.copy(),
                                                         np.zeros((n, len(servos))))],
                 contacts=True)


def _build(engine: str, setup: Setup, nworld: int, device: str):
    from frictionsim.solvers.engines import get_engine

    chosen = get_engine(engine)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = setup.mjcf
        if engine == "fixed_step" and hasattr(model, "compile"):
            # frictionsim's own simulators add the servos' armature to the model themselves
            model = model.compile()
        return chosen.build(model, setup.servos, setup.period, "semi_implicit", nworld=nworld,
                            device=device if chosen.batched else "cpu")


def _run(sim, goals, q0=None):
    """A run of one world, its servos' reported and physical positions (periods × servos)."""
    run = sim.run(goals, q0=q0)
    run = run.world(0)
    return run, run.q[:, sim.qadr], run.physical[:, sim.qadr]


def measure_engine(engine: str, setup: Setup, envs: list[int], device: str,
                   reference: np.ndarray | None) -> dict:
    """One engine on one set-up (module docstring)."""
    from frictionsim.solvers.engines import get_engine

    chosen = get_engine(engine)
    out = {"engine": engine, "setup": setup.name,
           "device": device if chosen.batched else "cpu"}
    start = time.perf_counter()
    sim = _build(engine, setup, 1, device)
    sim.run(setup.motion)
    out["compile_seconds"] = time.perf_counter() - start
    warm, _, physical = _run(sim, setup.motion)
    out["motion_seconds"] = warm.seconds
    if reference is not None:
        out["deviation_max_rad"] = float(np.abs(physical - reference).max())
        out["deviation_mean_rad"] = float(np.abs(physical - reference).mean())
    drifts = []
    for q0, goals in setup.holds:
        _, _, held = _run(sim, goals, q0)
        start_at = len(goals) - len(setup.motion) if len(goals) > len(setup.motion) else 0
        drifts.append(float(np.abs(held[start_at:] - held[start_at]).max()))
    out["hold_drift_rad"] = max(drifts)
    out["timing"] = _timings(chosen, setup, envs, device, sim)
    if hasattr(sim, "wp_data"):  # a MuJoCo Warp robot: its launches are countable
        out["launches"] = warp_launches(sim)
    return out


def warp_launches(sim) -> dict:
    """The Warp kernel launches of one physics step of a WarpRobot: the servos' and MuJoCo
    Warp's own (``mjwarp.step1`` and ``step2``), counted by wrapping Warp's launch entry points
    for one step (on a GPU the step replays as one captured graph)."""
    import warp

    context = warp._src.context
    counts = {"n": 0}
    plain, tiled, replay = warp.launch, warp.launch_tiled, context.Launch.launch

    def counted(function):
        def wrapper(*args, **kwargs):
            counts["n"] += 1
            return function(*args, **kwargs)
        return wrapper

    def measure(call) -> int:
        counts["n"] = 0
        warp.launch, warp.launch_tiled = counted(plain), counted(tiled)
        context.Launch.launch = counted(replay)
        try:
            call()
        finally:
            warp.launch, warp.launch_tiled, context.Launch.launch = plain, tiled, replay
        return counts["n"]

    d = sim.wp_data
    servos = measure(lambda: sim.servos.step(d.M, d.qfrc_bias, d.qfrc_passive, d.qpos, d.qvel,
                                             d.qfrc_applied))
    engine = measure(lambda: (sim.mjwarp.step1(sim.wp_model, d), sim.mjwarp.step2(sim.wp_model, d)))
    return {"servos": servos, "engine": engine}


def _timings(chosen, setup: Setup, envs: list[int], device: str, single) -> list[dict]:
    """Per environment-step, with and without the servos, for each number of worlds: the
    two alternated in rounds, each keeping its fastest."""
    from frictionsim.solvers.engines import bare_seconds

    substeps = single.servos.substeps if chosen.batched else single.substeps
    steps = len(setup.motion) * substeps
    rows = []
    for n in envs:
        if not chosen.batched and n != 1:
            continue  # one world per process: these engines take one
        sim = single if n == 1 else _build(chosen.name, setup, n, device)
        with_servos, without = np.inf, np.inf
        for _ in range(ROUNDS):
            with_servos = min(with_servos, _servo_seconds(chosen, sim, setup, steps) / n)
            bare = bare_seconds(chosen, sim, steps, setup.motion[-1])
            if bare is not None:
                without = min(without, bare / n)
        rows.append({"worlds": n, "with_servos_s": with_servos,
                     "without_servos_s": None if not np.isfinite(without) else without})
    return rows


def _servo_seconds(chosen, sim, setup: Setup, steps: int) -> float:
    """Seconds per physics step of every world of ``sim`` with its servos: a run of the
    motion, as every engine runs it (the state read at each control period)."""
    return sim.run(setup.motion).seconds / steps


def reference_motion(setup: Setup) -> np.ndarray | None:
    """The Numba fixed step's physical positions of the set-up's motion (one world); None for
    a set-up that touches something (the fixed step has no contact solver)."""
    if setup.contacts:
        return None
    sim = _build("fixed_step", setup, 1, "cpu")
    return _run(sim, setup.motion)[2]


def engines_table(engines: list[str], setups: list[str], envs: list[int], device: str,
                  seconds: float = 2.0, params=None, progress=print) -> list[dict]:
    """Every engine on every set-up (module docstring): a row of figures each."""
    from frictionsim.solvers.engines import get_engine

    for engine in engines:  # every engine's device before anything runs
        chosen = get_engine(engine)
        chosen.check(nworld=max(envs) if chosen.batched else 1,
                     device=device if chosen.batched else "cpu")
    rows = []
    for name in setups:
        setup = {"bench": lambda: bench_setup(seconds), "biped": lambda: biped_setup(seconds),
                 "so101": lambda: so101_setup(seconds, params)}[name]()
        reference = reference_motion(setup)
        for engine in engines:
            if setup.contacts and not get_engine(engine).batched:
                continue  # no contact solver in frictionsim's own engines; the adapter's cost
                # on a biped is `run adapter-cost`'s
            progress(f"{setup.name}: {engine}")
            rows.append(measure_engine(engine, setup, envs, device, reference))
    return rows
