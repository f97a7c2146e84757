"""A servo as MuJoCo's own ``<dcmotor>``: the closest native model of a parameter set, and what
going native costs on the user's logs (``frictionsim export-mjcf --target dcmotor --logs``).

A ``<dcmotor>`` with the firmware's gains is the servo's firmware and motor exactly
(:func:`frictionsim.solvers.mjcf_export.dcmotor_attributes`), and M1's Coulomb and viscous
friction are joint attributes; M2–M6's friction (Stribeck, load-dependent, directional) has no
MuJoCo attribute. The closest native model of an M2–M6 set keeps its motor, rotor and firmware
parameters and refits the two friction coefficients of M1 on the logs (frictionsim's fitter,
the ``semi_implicit`` scheme, which is MuJoCo's Euler step). Its fidelity is then measured
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
#: M1's friction, what the closest native model refits.
NATIVE_FRICTION = ("friction_base", "friction_viscous")


def closest_m1(params: ParameterSet, logs: list[Log], budget: int = 400, seed: int = 0,
               progress: bool = False) -> ParameterSet:
    """M1 with ``params``' motor, rotor, firmware and offset, and the Coulomb and viscous friction
    that fit ``logs`` best (semi-implicit); ``params`` itself when it is an M1 already."""
    extensions = tuple(x for x in params.extensions if x in NATIVE_EXTENSIONS)
    if params.model == "m1" and extensions == params.extensions:
        return params.with_scheme("semi_implicit")
    names = schema.parameters("m1", params.actuator, extensions)
    fixed = {k: v for k, v in params.values.items() if k in names and k not in NATIVE_FRICTION}
    space = SearchSpace("m1", params.actuator, fixed, "semi_implicit", extensions)
    start = {k: params.values.get(k, names[k].default) for k in NATIVE_FRICTION}
    packed = PackedLogs.from_logs(logs, params.actuator)
    result = fit(space, packed, FitSettings(budget, seed), start=start, progress=progress,
                 label="closest native M1")
    return result.params


def native_fidelity(params: ParameterSet, native: ParameterSet, logs: list[Log]) -> dict:
    """Per-log MAE (rad) of frictionsim's rollout of ``params`` and of the ``<dcmotor>`` export of
    ``native`` in plain MuJoCo, and their means."""
    from frictionsim.solvers.native_mujoco import dcmotor_rollout

    ours = {log.name: simulate(log, params).mae for log in logs}
    theirs = {log.name: dcmotor_rollout(native, log).mae for log in logs}
    return {"frictionsim": {"model": params.model, "scheme": params.scheme,
                            "mean_mae": float(np.mean(list(ours.values()))), "per_log": ours},
            "native": {"model": "dcmotor + " + native.model, "mean_mae":
                       float(np.mean(list(theirs.values()))), "per_log": theirs}}
