"""A servo as MuJoCo's own ``<dcmotor>``: the closest native model of a parameter set, and what
going native costs on the user's logs (``frictionsim export-mjcf --target dcmotor --logs``).

A ``<dcmotor>`` with the firmware's gains is the servo's firmware and motor exactly
(:func:`frictionsim.solvers.mjcf_export.dcmotor_attributes`), and M1's Coulomb and viscous
friction are joint attributes; M2–M6's friction (Stribeck, load-dependent, directional) has no
MuJoCo attribute. The closest native model is the M1 that fits the logs best, its search
starting from the file's own values (frictionsim's fitter, the ``semi_implicit`` scheme,
which is MuJoCo's Euler step, whose M1 runs as the export to a few µrad); with the current
limit, whose smooth saturation MuJoCo can only clip, fitted once with the limit and once
without, and the candidate MuJoCo rolls out closer to the logs is exported
(:func:`closest_native`). Its fidelity is then measured
where it matters, in MuJoCo: each log rolled out by the export in plain MuJoCo
(:func:`frictionsim.solvers.native_mujoco.dcmotor_rollout`) beside frictionsim's own rollout
of the original parameter set.
"""

from __future__ import annotations

import numpy as np

from frictionsim import schema
from frictionsim.experiments.identification.fitter import FitSettings, fit
from frictionsim.experiments.identification.search_space import SearchSpace
from frictionsim.logs import Log
from frictionsim.params import ParameterSet
from frictionsim.solvers.batch import PackedLogs
from frictionsim.solvers.rollouts import simulate

#: Extensions a ``<dcmotor>`` carries (as a hard clip); the others are dropped by the export.
NATIVE_EXTENSIONS = ("current_limit",)


def refit_m1(params: ParameterSet, logs: list[Log], extensions: tuple[str, ...],
             budget: int = 1000, seed: int = 0, progress: bool = False) -> ParameterSet:
    """The M1 (with ``extensions``) that fits ``logs`` best (semi-implicit), its search
    starting from ``params``' own values of M1's parameters (motor, rotor, offset, firmware
    scaling, Coulomb and viscous friction; ``max_current_limit`` held at the file's)."""
    names = schema.parameters("m1", params.actuator, extensions)
    fixed = {k: params.values[k] for k in ("max_current_limit",)
             if k in names and k in params.values}
    space = SearchSpace("m1", params.actuator, fixed, "semi_implicit", extensions)
    start = {k: params.values[k] for k in names if k in params.values and k not in fixed}
    packed = PackedLogs.from_logs(logs, params.actuator)
    result = fit(space, packed, FitSettings(budget, seed), start=start, progress=progress,
                 label=f"closest native M1{' with ' + ', '.join(extensions) if extensions else ''}")
    return result.params


def native_mae(native: ParameterSet, logs: list[Log]) -> dict[str, float]:
    """Per-log MAE (rad) of the ``<dcmotor>`` export of ``native`` in plain MuJoCo."""
    from frictionsim.solvers.native_mujoco import dcmotor_rollout

    return {log.name: dcmotor_rollout(native, log).mae for log in logs}


def closest_native(params: ParameterSet, logs: list[Log], budget: int = 1000, seed: int = 0,
                   progress: bool = False) -> tuple[ParameterSet, dict[str, dict[str, float]]]:
    """The native model (an M1 for the ``<dcmotor>`` export) that rolls ``logs`` out closest to
    the recordings in plain MuJoCo, and every candidate's per-log MAE there. Candidates: an
    M1 file as it is (its ``current_limit`` a hard saturation natively); M1 refitted on the logs
    from ``params``' values, with the current limit as a saturation when ``params`` has one,
    and without it (MuJoCo's saturation clips where frictionsim's limit is smooth, which can
    do worse than no limit)."""
    candidates: dict[str, ParameterSet] = {}
    if params.model == "m1":
        candidates["m1 as it is"] = params.with_scheme("semi_implicit").with_extensions(
            tuple(x for x in params.extensions if x in NATIVE_EXTENSIONS))
    if params.model != "m1" or any(x not in NATIVE_EXTENSIONS for x in params.extensions):
        kept = tuple(x for x in params.extensions if x in NATIVE_EXTENSIONS)
        candidates["m1 refitted" + (" with saturation" if kept else "")] = refit_m1(
            params, logs, kept, budget, seed, progress)
    if "current_limit" in params.extensions:
        candidates["m1 refitted without saturation"] = refit_m1(params, logs, (), budget,
                                                                seed, progress)
    scores = {name: native_mae(c, logs) for name, c in candidates.items()}
    best = min(scores, key=lambda n: np.mean(list(scores[n].values())))
    return candidates[best], {f"{name}{' (exported)' if name == best else ''}": s
                              for name, s in scores.items()}


def native_fidelity(params: ParameterSet, candidates: dict[str, dict[str, float]],
                    logs: list[Log]) -> dict:
    """Per-log MAE (rad) of frictionsim's rollout of ``params`` and of each native candidate
    (:func:`closest_native`), and their means."""
    ours = {log.name: simulate(log, params).mae for log in logs}
    return {"frictionsim": {"model": params.model, "scheme": params.scheme,
                            "mean_mae": float(np.mean(list(ours.values()))), "per_log": ours},
            "native": {name: {"mean_mae": float(np.mean(list(s.values()))), "per_log": s}
                       for name, s in candidates.items()}}
