"""MuJoCo's own servo model against frictionsim's, on the same logs (``frictionsim run vs-mujoco``).

MuJoCo's side is its ``<dcmotor>`` configured as the servo's firmware
(:func:`frictionsim.solvers.mjcf_export.dcmotor_attributes`: exact, the firmware needs no
frictionsim code) with each of its stock frictions, fitted by ``mujoco.sysid`` (box-bounded
least squares with finite-difference Jacobians): ``joint`` (the joint's ``frictionloss`` and
``damping``) and ``lugre`` (the dcmotor's LuGre friction, bristle stiffness and damping,
Coulomb, static and Stribeck terms, plus the actuator's viscous damping). The free parameters
are the motor's k_t and R, the rotor's armature, the encoder offset and the friction's; the
firmware's gains follow from k_t, R and each log's gain and supply. frictionsim's side is M1,
M6 and M6 with the current limit, fitted by ``identify``'s pipeline.

Every model is scored the same way: each log rolled out whole in closed loop from its first
state, the mean of the per-log MAE (rad). Three things the measurement had to take care of:
``mujoco.sysid``'s own sensors are stamped one step late, so its residual here reads the
joint position itself, before each step (the rollout of
:func:`frictionsim.solvers.native_mujoco.dcmotor_rollout`); a torque-off stretch of a log
needs the actuator group disabled (``opt.disableactuator``), which that rollout switches per
step; LuGre's bristle model diverges as its Coulomb term goes to 0, so that bound is kept
away from 0 (:data:`LUGRE_MIN_COULOMB`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from frictionsim import schema
from frictionsim.experiments.common.output import counted
from frictionsim.logs import Log
from frictionsim.params import ParameterSet

#: MuJoCo's stock frictions on a ``<dcmotor>`` servo.
NATIVE = ("dcmotor_joint", "dcmotor_lugre")
#: frictionsim's models in the comparison: (name, model, extensions).
OURS = (("m1", "m1", ()), ("m6", "m6", ()), ("m6_current_limit", "m6", ("current_limit",)))
#: The physical models fitted per fold (M4: M6's start).
CHAIN = ("m1", "m4", "m6")
#: The Coulomb bound LuGre is held above (N·m): its bristle model diverges towards 0.
LUGRE_MIN_COULOMB = 1e-3
#: LuGre's bristle stiffness bounds (N·m/rad) and damping (N·m·s/rad).
LUGRE_STIFFNESS = (1.0, 1000.0)
LUGRE_DAMPING = (0.0, 5.0)


@dataclass
class Scored:
    """A fitted model: per-log MAE (rad) on the training and held-out logs, the fit's seconds,
    ns per simulated step, and its parameters."""

    name: str
    train: dict[str, float]
    validation: dict[str, float]
    fit_seconds: float
    ns_per_step: float
    parameters: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict:
        def mean(d):
            return float(np.mean(list(d.values()))) if d else None

        return {"train_mae": mean(self.train), "validation_mae": mean(self.validation),
                "fit_seconds": self.fit_seconds, "ns_per_step": self.ns_per_step,
                "per_log": {"train": self.train, "validation": self.validation},
                "parameters": self.parameters}


def _native_space(actuator: str, option: str) -> list[tuple[str, float, float, float]]:
    """(name, start, lower, upper) of each parameter ``mujoco.sysid`` fits: the actuator's
    defaults and search bounds, as frictionsim's M1 fit starts from."""
    spec = schema.parameters("m1", actuator)
    out = [(n, spec[n].default, spec[n].lower, spec[n].upper)
           for n in ("kt", "R", "armature", "q_offset")]
    fmax = spec["friction_base"].upper
    out.append(("friction_viscous", spec["friction_viscous"].default,
                spec["friction_viscous"].lower, spec["friction_viscous"].upper))
    if option == "dcmotor_joint":
        out.append(("friction_base", spec["friction_base"].default, 0.0, fmax))
    else:
        out += [("lugre_stiffness", 100.0, *LUGRE_STIFFNESS),
                ("lugre_damping", 0.5, *LUGRE_DAMPING),
                ("lugre_coulomb", max(spec["friction_base"].default, LUGRE_MIN_COULOMB),
                 LUGRE_MIN_COULOMB, fmax),
                ("lugre_static", max(spec["friction_base"].default, LUGRE_MIN_COULOMB),
                 LUGRE_MIN_COULOMB, fmax),
                ("dtheta_stribeck", 0.2, 0.01, 3.0)]
    return out


def _native(actuator: str, option: str, values: dict[str, float]
            ) -> tuple[ParameterSet, tuple[float, ...] | None]:
    """The M1 set and the LuGre tuple of a native candidate."""
    m1 = {k: values[k] for k in ("kt", "R", "armature", "q_offset", "friction_viscous")}
    m1["friction_base"] = values.get("friction_base", 0.0)
    params = ParameterSet("m1", actuator, m1, "mujoco.sysid", "semi_implicit")
    if option == "dcmotor_joint":
        return params, None
    return params, (values["lugre_stiffness"], values["lugre_damping"], values["lugre_coulomb"],
                    max(values["lugre_static"], values["lugre_coulomb"]),
                    values["dtheta_stribeck"])


def native_errors(actuator: str, option: str, values: dict[str, float],
                  logs: list[Log]) -> dict[str, float]:
    """Per-log MAE (rad) of a native candidate rolled out in plain MuJoCo (+inf if it diverged)."""
    from frictionsim.solvers.errors import SimulationError
    from frictionsim.solvers.native_mujoco import dcmotor_rollout

    params, lugre = _native(actuator, option, values)
    out = {}
    for log in logs:
        try:
            out[log.name] = dcmotor_rollout(params, log, lugre).mae
        except SimulationError:
            out[log.name] = float("inf")
    return out


def fit_native(actuator: str, option: str, train: list[Log], max_iters: int = 60,
               progress: bool = False) -> tuple[dict[str, float], float]:
    """``mujoco.sysid``'s fit of one native option on ``train``: (values, seconds). The residual
    of a log is its position error at every entry over √entries (each log weighs alike)."""
    from frictionsim.experiments.common.sysid_run import sysid_fit
    from frictionsim.solvers.errors import SimulationError
    from frictionsim.solvers.native_mujoco import dcmotor_rollout

    space = _native_space(actuator, option)
    names = [n for n, *_ in space]
    sizes = [len(log.entries) for log in train]

    def residual_of(x: np.ndarray) -> np.ndarray:
        model, lugre = _native(actuator, option, dict(zip(names, x)))
        parts = []
        for log, n in zip(train, sizes):
            try:
                error = dcmotor_rollout(model, log, lugre).error
            except SimulationError:
                error = np.full(n, 10.0)  # a diverged candidate: a large, finite residual
            parts.append(np.clip(error, -10.0, 10.0) / np.sqrt(n))
        return np.concatenate(parts)

    best, seconds = sysid_fit(space, residual_of, max_iters, progress)
    return dict(zip(names, best.tolist())), seconds


def native_ns_per_step(actuator: str, option: str, values: dict[str, float], log: Log,
                       repeats: int = 3) -> float:
    """ns per step of MuJoCo's own ``mujoco.rollout`` of the native model through ``log``'s
    goals (its fastest path, torque on throughout)."""
    from mujoco import rollout

    from frictionsim.experiments.common.timing import best_time
    from frictionsim.solvers.mujoco_dynamics import mujoco
    from frictionsim.solvers.native_mujoco import dcmotor_model

    params, lugre = _native(actuator, option, values)
    model = dcmotor_model(params, log, lugre)
    data = mujoco.MjData(model)
    goals = np.tile(log.column("goal_position"), 10)[:, None]
    state = np.empty(mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_FULLPHYSICS))
    mujoco.mj_getState(model, data, state, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    seconds = best_time(lambda: rollout.rollout(model, data, state, goals), repeats)
    return 1e9 * seconds / len(goals)


def ours_ns_per_step(params: ParameterSet, log: Log, repeats: int = 3) -> float:
    """ns per step of frictionsim's compiled rollout kernel through ``log`` (its inputs read
    once: the kernel's cost, as ``mujoco.rollout``'s is MuJoCo's)."""
    from frictionsim.experiments.common.timing import best_time
    from frictionsim.solvers.fixed_step import rollout
    from frictionsim.solvers.rollouts import rollout_inputs

    x = rollout_inputs(log, params)
    q, v = np.empty_like(x.goal), np.empty_like(x.goal)

    def run() -> None:
        for _ in range(10):
            rollout(x.goal, x.enable, x.supply, x.position[0], x.v0, x.theta, x.bench, log.dt,
                    q, v)

    run()
    return 1e9 * best_time(run, repeats) / (10 * len(x.goal))


def compare_fold(train: list[Log], validation: list[Log], actuator: str, out: Path,
                 budget: int = 3000, seed: int = 0, max_iters: int = 60,
                 progress: bool = False) -> dict[str, Scored]:
    """Every model of the comparison fitted on ``train`` and scored on both sets; frictionsim's
    fits written to ``out`` (``out/m6_current_limit`` for the current limit's)."""
    from frictionsim.experiments.identification.fitter import FitSettings
    from frictionsim.experiments.identification.pipeline import IdentifySettings, identify

    scored: dict[str, Scored] = {}
    for option in NATIVE:
        if progress:
            print(f"{option}: mujoco.sysid on {counted(len(train), 'log')}", flush=True)
        values, seconds = fit_native(actuator, option, train, max_iters, progress)
        scored[option] = Scored(option, native_errors(actuator, option, values, train),
                                native_errors(actuator, option, values, validation), seconds,
                                native_ns_per_step(actuator, option, values, train[0]), values)
    for extensions in ((), ("current_limit",)):
        folder = out / ("m6_current_limit" if extensions else "")
        settings = IdentifySettings(CHAIN, actuator, FitSettings(budget, seed),
                                    progress=progress, extensions=extensions)
        fits, interrupted = identify(train, validation, settings, folder)
        if interrupted:
            raise KeyboardInterrupt
        wanted = ("m1", "m6") if not extensions else ("m6",)
        for model in wanted:
            f = fits[model]
            name = model if not extensions else "m6_current_limit"
            # M6's seconds include the M1 and M4 fits it starts from
            seconds = sum(fits[m].result.seconds for m in CHAIN[:CHAIN.index(model) + 1])
            scored[name] = Scored(name, dict(f.train), dict(f.validation), seconds,
                                  ours_ns_per_step(f.result.params, train[0]),
                                  dict(f.result.params.values))
    return scored


def plot_comparison(section: dict, mean: dict, path: Path) -> Path:
    """Held-out MAE per model and fold (bars), training MAE (dots), and the fits' seconds."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    from frictionsim.experiments.common.output import save_figure

    models = list(mean)
    folds = list(section)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10.0, 4.0),
                                 gridspec_kw={"width_ratios": [3, 1.2]})
    width = 0.8 / max(1, len(folds))
    colours = ["tab:red" if m.startswith("dcmotor") else "tab:blue" for m in models]
    for i, fold in enumerate(folds):
        xs = np.arange(len(models)) + (i - (len(folds) - 1) / 2) * width
        held = [1e3 * section[fold][m]["validation_mae"] for m in models]
        ax.bar(xs, held, width, color=colours, alpha=0.45 + 0.5 * (i + 1) / len(folds),
               edgecolor="black", linewidth=0.3)
        ax.plot(xs, [1e3 * section[fold][m]["train_mae"] for m in models], "o", color="black",
                markersize=3, label="training MAE" if i == 0 else None)
        for x, v in zip(xs, held):
            ax.annotate(f"{v:.0f}", (x, v), ha="center", va="bottom", fontsize=6)
    ax.set_xticks(range(len(models)), [m.replace("_", "\n") for m in models], fontsize=8)
    ax.set_ylabel("held-out MAE (mrad)")
    ax.set_title("MuJoCo's dcmotor (red, mujoco.sysid) vs frictionsim (blue, identify); "
                 f"bars light to dark: {', '.join(folds)}", fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    seconds = [mean[m]["fit_seconds"] for m in models]
    bx.barh(range(len(models)), seconds, color=colours)
    for y, x in enumerate(seconds):
        bx.annotate(f"{x:.3g} s", (x, y), va="center", fontsize=7)
    bx.set_yticks(range(len(models)), models, fontsize=8)
    bx.set_xlabel("seconds per fit (mean)")
    bx.set_xscale("log")
    bx.xaxis.set_minor_formatter(NullFormatter())
    bx.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    save_figure(fig, path)
    return path
