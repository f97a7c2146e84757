"""What the logs determine: the identifiable combinations of a fit, and the directions of its
parameters the loss does not see.

**Combinations.** Under the voltage law the motor torque is
``τ_m = (k_t/R)·V·duty − (k_t²/R)·v`` (docs/model.md §3): k_t and R reach the joint only
through the torque per volt ``k_t/R`` and the back-EMF damping ``k_t²/R``, which itself adds
to the viscous friction ``K_v``; the sts3215's ``error_gain_ratio`` multiplies the duty, so
``k_t·ratio/R`` is what a gain sees. Two fits that differ in k_t and R but agree on these
are the same servo. :func:`combinations` gives them, so fits (seeds, folds) can be compared
where they can agree.

**Undetermined directions.** At the fit, the loss's curvature in the search's normalised
coordinates (each free parameter's range mapped to [0, 1], docs/model.md §2's scales) is
estimated by central differences, every point in one batched evaluation. An eigenvector
along which a move of :data:`PROBE` (a tenth of the ranges) raises the loss by less than
:data:`FLAT` of its value is a direction the logs do not determine; the parameters that
make it up are reported with their signs (``kt +0.71, R +0.70``: they move together). The
loss is not smooth everywhere (friction sticks), so the curvature is that of the loss
averaged over the step ``h``, which is what a fit can feel.
"""

from __future__ import annotations

import numpy as np

from frictionsim import schema
from frictionsim.params import ParameterSet

#: Finite-difference step, in normalised coordinates.
STEP = 0.02
#: A direction is probed by a move of this size (normalised coordinates)…
PROBE = 0.1
#: …and called undetermined when that move raises the loss by less than this fraction.
FLAT = 0.005
#: Components smaller than this are not named in a direction.
NAMED = 0.3


def combinations(params: ParameterSet) -> dict[str, float]:
    """The identifiable combinations of a voltage-law parameter set (module docstring): name
    → value; empty for a current-law drive."""
    if schema.get_actuator(params.actuator).law != "voltage":
        return {}
    v = params.values
    kt, r = v["kt"], v["R"]
    out = {"kt/R (N·m/V)": kt / r, "kt²/R (N·m·s/rad)": kt * kt / r}
    if "friction_viscous" in v:
        out["kt²/R + friction_viscous (N·m·s/rad)"] = kt * kt / r + v["friction_viscous"]
    if "error_gain_ratio" in v:
        out["kt·error_gain_ratio/R (N·m/V)"] = kt * v["error_gain_ratio"] / r
    return out


def curvature(space, packed, params: ParameterSet, step: float = STEP
              ) -> tuple[np.ndarray, float]:
    """(the Hessian of the loss in ``space``'s normalised coordinates at ``params``, the loss
    there), by central differences evaluated in one batch of ``packed``."""
    x0 = space.point(params.values)
    d = len(x0)
    points = [x0]
    for i in range(d):
        for s in (1, -1):
            p = x0.copy()
            p[i] += s * step
            points.append(p)
    pairs = [(i, j) for i in range(d) for j in range(i + 1, d)]
    for i, j in pairs:
        for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
            p = x0.copy()
            p[i] += si * step
            p[j] += sj * step
            points.append(p)
    thetas = space.thetas(np.array(points))
    # the start: the fit itself, exactly (point() folds nothing inside the bounds)
    thetas[0] = params.theta()
    losses = packed.errors(thetas).mean(axis=1)
    base = float(losses[0])
    h = np.empty((d, d))
    for i in range(d):
        h[i, i] = (losses[1 + 2 * i] - 2 * base + losses[2 + 2 * i]) / step**2
    k = 1 + 2 * d
    for i, j in pairs:
        pp, pm, mp, mm = losses[k:k + 4]
        h[i, j] = h[j, i] = (pp - pm - mp + mm) / (4 * step**2)
        k += 4
    return h, base


def undetermined(space, packed, params: ParameterSet) -> list[dict]:
    """The directions the training logs do not determine at a fit (module docstring), flattest
    first: ``{"rise": relative loss rise of a PROBE move, "parameters": {name: component}}``."""
    if space.dimension == 0:
        return []
    h, base = curvature(space, packed, params)
    if not np.all(np.isfinite(h)) or not base > 0:
        return []
    values, vectors = np.linalg.eigh(0.5 * (h + h.T))
    out = []
    for value, vector in sorted(zip(values, vectors.T), key=lambda t: t[0]):
        rise = 0.5 * max(value, 0.0) * PROBE**2 / base
        if rise >= FLAT:
            break
        named = {space.free[i]: round(float(c), 2) for i, c in enumerate(vector)
                 if abs(c) >= NAMED}
        out.append({"rise": rise, "parameters": dict(sorted(named.items(),
                                                            key=lambda t: -abs(t[1])))})
    return out


def describe(direction: dict) -> str:
    """The parameters of a direction with their components, and the loss a PROBE move along
    it adds, e.g. ``kt +0.71, R +0.70 (loss +0.02 %)``."""
    parts = ", ".join(f"{n} {c:+.2f}" for n, c in direction["parameters"].items())
    return (f"{parts or 'many parameters, none dominant'} "
            f"(loss +{100 * direction['rise']:.2f} %)")


def analyse(fits: dict, train: list, settings) -> dict[str, dict]:
    """Per fitted model (not a kept one): ``{"combinations": {…}, "undetermined": [...]}`` on
    the training logs, in the search space the fit used (``settings``: its
    :class:`~frictionsim.experiments.identification.pipeline.IdentifySettings`)."""
    from frictionsim.experiments.identification.search_space import SearchSpace
    from frictionsim.solvers.batch import PackedLogs

    if not fits or not train:
        return {}
    packed = PackedLogs.from_logs(train, settings.actuator)
    out = {}
    for model, fit in fits.items():
        if fit.kept:
            continue
        spec = schema.parameters(model, settings.actuator, settings.extensions)
        fixed = {k: v for k, v in settings.fixed.items() if k in spec}
        space = SearchSpace(model, settings.actuator, fixed, fit.result.params.scheme,
                            settings.extensions)
        out[model] = {"combinations": combinations(fit.result.params),
                      "undetermined": undetermined(space, packed, fit.result.params)}
    return out
