"""Rollout throughput of the compiled simulator (``frictionsim bench``)."""

from __future__ import annotations

import numpy as np

from frictionsim import layout
from frictionsim.experiments.common.timing import batched_ns_per_log_step, best_time
from frictionsim.experiments.synthetic.dataset import GROUND_TRUTH, dataset, population, restrict
from frictionsim.logs import process
from frictionsim.solvers.batch import PackedLogs
from frictionsim.solvers.fixed_step import rollout_error

#: Bounds of the workload: a population far beyond any fitter's, and enough repeats for a minimum.
MAX_CANDIDATES = 10_000
MAX_REPEATS = 1_000


def measure(model: str, packed: PackedLogs, candidates: int, repeats: int) -> dict:
    """ns per step of one rollout on one thread, and ns per (log × step) batched on all threads,
    by the lock-step kernels (the fitter's) and by the scalar reference kernel."""
    theta = restrict(GROUND_TRUTH, model).theta()
    thetas = population(model, candidates)
    o = packed.offsets

    def single() -> None:
        for j in range(packed.n_logs):
            a, b = o[j], o[j + 1]
            rollout_error(packed.goal[a:b], packed.enable[a:b], packed.supply[a:b],
                          packed.position[a:b],
                          packed.v0[j], theta, packed.bench[j], packed.bench[j, layout.DT])

    single()
    t_single = best_time(single, repeats)
    batched = batched_ns_per_log_step(packed, thetas, repeats)
    return {
        "ns_per_step": 1e9 * t_single / packed.n_steps,
        "batched_ns_per_log_step": batched["lockstep"],
        "scalar_batched_ns_per_log_step": batched["scalar"],
    }


def synthetic_logs() -> PackedLogs:
    """The benchmark's logs: the built-in data set (24 logs of 6 s at 5 ms), packed."""
    logs = [process(log) for log in dataset(seed=1)]
    return PackedLogs.from_logs(logs, GROUND_TRUTH.actuator)


#: The reference project's MuJoCo path, per physics step (its Python controller, M1 / M6),
#: measured on this machine class (../shared/notes/mujoco-callbacks.md); quoted for scale.
REFERENCE_MUJOCO_NS = {"m1": 27_600.0, "m6": 42_600.0}


def _mj_step_ns(model, data, steps: int, repeats: int) -> float:
    import mujoco

    mujoco.mj_step(model, data, nstep=min(steps, 1000))
    return 1e9 * best_time(lambda: mujoco.mj_step(model, data, nstep=steps), repeats) / steps


def engine_rows(repeats: int = 5, steps: int = 100_000) -> list[dict]:
    """ns per physics step of the one-joint bench and of the MX 2R arm: a bare ``mj_step`` (with
    and without a friction row per servo joint), the MuJoCo adapter in both modes, and
    frictionsim's standalone n-joint fixed step; M1 and M6 servos (published parameters)."""
    import warnings

    import mujoco

    from frictionsim.experiments.common.loading import shared_data

    DATA = shared_data()
    from frictionsim.params import load_params
    from frictionsim.solvers.mujoco_adapter import SchemeWarning, ServoModel, bench_mjcf
    from frictionsim.solvers.robot import JointServo, Robot

    def servos(setup: str, model: str) -> list:
        if setup == "bench":
            return [JointServo("servo", load_params(DATA / "xl330" / "params" / f"{model}.json"), 400,
                          7.4)]
        return [JointServo("R1", load_params(DATA / "params" / "mx106" / f"{model}.json"), 32),
                JointServo("R2", load_params(DATA / "params" / "mx64" / f"{model}.json"), 32)]

    setups = {"bench (1 joint)": bench_mjcf(0.49, 0.1, 0.0, 0.001),
              "MX 2R arm": str(DATA / "arm2r" / "mx_arm.xml")}
    rows = []
    for label, mjcf in setups.items():
        kind = "bench" if "bench" in label else "arm"
        for friction_rows in (False, True):
            spec = (mujoco.MjSpec.from_string(mjcf) if mjcf.startswith("<")
                    else mujoco.MjSpec.from_file(mjcf))
            for servo in servos(kind, "m1"):
                spec.joint(servo.joint).frictionloss = 0.05 if friction_rows else 0.0
            spec.option.integrator = int(mujoco.mjtIntegrator.mjINT_EULER)
            bare = spec.compile()
            rows.append({"setup": label, "engine": "bare mj_step" + (" with friction rows" if
                                                                      friction_rows else ""),
                         "model": "–", "ns_per_step": _mj_step_ns(bare, mujoco.MjData(bare),
                                                                  steps, repeats)})
        for model in ("m1", "m6"):
            for friction in ("budget", "frictionloss"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", SchemeWarning)
                    sm = ServoModel(mjcf, servos(kind, model), friction)
                data = sm.make_data()
                sm.set_goals(data, [0.3] * len(sm.servos))
                rows.append({"setup": label, "engine": f"adapter ({friction})", "model": model,
                             "ns_per_step": _mj_step_ns(sm.model, data, steps, repeats)})
            robot = Robot(mjcf, servos(kind, model))
            periods = steps // robot.substeps
            goals = np.full((periods, len(robot.servos)), 0.3)
            robot.fixed_step(goals[:10])
            best = min(robot.fixed_step(goals).seconds for _ in range(repeats))
            rows.append({"setup": label, "engine": "frictionsim fixed step (standalone)",
                         "model": model, "ns_per_step": 1e9 * best / (periods * robot.substeps)})
            if kind == "bench":  # the reference project measured its one-joint bench only
                rows.append({"setup": label, "engine": "reference project's MuJoCo controller "
                             "(quoted)", "model": model, "ns_per_step": REFERENCE_MUJOCO_NS[model]})
    return rows
