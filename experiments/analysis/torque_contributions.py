"""Torque contributions along real motions (seed 002, section 4: model analysis).

Along each simulated log, the terms of the bench's equation of motion

    I·a = τ_m + τ_e + τ_f

and, inside the applied friction τ_f, each term of the model's budget
(:data:`frictionsim.friction.BUDGET_TERMS`), the applied friction being shared among
them in proportion to their part of the budget (τ_f,i = τ_f·b_i/τ_fm, which sum to τ_f).
A term's *share* is its RMS over the log divided by the sum of the RMS of the four
equation terms (I·a, τ_e, τ_m, τ_f): the part of the torque balance it carries. A term
whose share is below :data:`NEGLIGIBLE` on every log can be dropped from the model
(the paper's step 3); a term the model does not have is *absent*, not negligible.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from frictionsim import MODELS
from frictionsim.friction import BUDGET_TERMS
from frictionsim.logs import Log
from frictionsim.params import ParameterSet
from frictionsim.solvers.torque_trace import COLUMNS, trace_torques

#: Terms of the equation of motion, named as in the outputs.
EQUATION_TERMS = ("inertia", "external", "motor", "friction")
#: Terms inside the friction, named as in the outputs ("friction.coulomb", …).
FRICTION_TERMS = tuple(f"friction.{name}" for name in BUDGET_TERMS)
#: The share under which a term is negligible (seed 002: "below 5 %").
NEGLIGIBLE = 0.05
_LABELS = {"inertia": "inertia I·a", "external": "gravity τ_e", "motor": "motor τ_m",
           "friction": "friction τ_f"}


@dataclass(frozen=True)
class Contributions:
    """The torque series (N·m) of one simulated log and their RMS and shares."""

    log: Log
    t: np.ndarray
    series: dict[str, np.ndarray]  # EQUATION_TERMS, then FRICTION_TERMS
    rms: dict[str, float]
    shares: dict[str, float]

    @property
    def residual(self) -> float:
        """max |I·a − (τ_m + τ_e + τ_f)| (N·m): zero up to rounding."""
        s = self.series
        return float(np.max(np.abs(s["inertia"] - (s["motor"] + s["external"] + s["friction"]))))


def contributions(log: Log, params: ParameterSet) -> Contributions:
    """The torque contributions of ``log`` simulated with ``params``."""
    trace = trace_torques(log, params)
    col = {name: trace[:, i] for i, name in enumerate(COLUMNS)}
    series = {name: col[name] for name in EQUATION_TERMS}
    budget = col["budget"]
    held = np.where(budget > 0.0, col["friction"] / np.where(budget > 0.0, budget, 1.0), 0.0)
    for name, key in zip(BUDGET_TERMS, FRICTION_TERMS):
        series[key] = held * col[name]
    rms = {k: float(np.sqrt(np.mean(v**2))) for k, v in series.items()}
    scale = sum(rms[k] for k in EQUATION_TERMS)
    shares = {k: (r / scale if scale > 0 else 0.0) for k, r in rms.items()}
    return Contributions(log, np.arange(len(trace)) * log.dt, series, rms, shares)


#: The parameters behind each friction term (docs/model.md §2's names).
TERM_PARAMETERS = {
    "coulomb": ("friction_base",),
    "stribeck": ("friction_stribeck",),
    "load": ("load_friction_base", "load_friction_stribeck"),
    "directional": ("load_friction_motor", "load_friction_external",
                    "load_friction_motor_stribeck", "load_friction_external_stribeck"),
    "quadratic": ("load_friction_motor_quad", "load_friction_external_quad"),
    "viscous": ("friction_viscous",),
}


def model_terms(params: ParameterSet) -> set[str]:
    """The friction terms ``params``' model has (docs/model.md §2's table), as "friction.NAME"."""
    own = set(MODELS[params.model].friction)
    return {f"friction.{term}" for term, names in TERM_PARAMETERS.items() if own & set(names)}


def summarise(results: list[Contributions], params: ParameterSet) -> dict:
    """Per term: the share on every log, the largest, and its verdict: ``"negligible"``
    (under NEGLIGIBLE on every log), ``"absent"`` (not in the model) or ``"kept"``."""
    present = set(EQUATION_TERMS) | model_terms(params)
    terms = {}
    for name in EQUATION_TERMS + FRICTION_TERMS:
        shares = [r.shares[name] for r in results]
        if name not in present:
            verdict = "absent"
        elif max(shares) < NEGLIGIBLE:
            verdict = "negligible"
        else:
            verdict = "kept"
        terms[name] = {"max_share": max(shares), "verdict": verdict,
                       "per_log": {r.log.name: {"rms": r.rms[name], "share": r.shares[name]}
                                   for r in results}}
    return terms


def plot_contributions(results: list[Contributions], path: str | os.PathLike,
                       title: str = "") -> None:
    """Per log, the right-hand side τ_m + τ_e + Σ τ_f,i as signed stacked areas (positive
    parts stacked up, negative parts down) and their sum I·a as a line."""
    from frictionsim.experiments.common.plots import finish_panels, panels, shade_torque_off

    fig, axes = panels(len(results))
    parts = ("motor", "external") + FRICTION_TERMS
    colours = {name: f"C{i}" for i, name in enumerate(parts)}
    for ax, r in zip(axes.flat, results):
        shade_torque_off(ax, r.t, r.log.column("torque_enable"))
        up = np.zeros_like(r.t)
        down = np.zeros_like(r.t)
        for name in parts:
            y = r.series[name]
            if not np.any(y):
                continue
            label = _LABELS.get(name, name.replace("friction.", "friction: "))
            pos, neg = np.clip(y, 0, None), np.clip(y, None, 0)
            ax.fill_between(r.t, up, up + pos, color=colours[name], alpha=0.75, lw=0,
                            label=label)
            ax.fill_between(r.t, down, down + neg, color=colours[name], alpha=0.75, lw=0)
            up, down = up + pos, down + neg
        ax.plot(r.t, r.series["inertia"], "k", lw=0.8, label="I·a (sum)")
        ax.set_title(f"{r.log.name} ({r.log.trajectory}, kp={r.log.kp:g})", fontsize=9)
    finish_panels(fig, axes, len(results), title, path, ylabel="torque (N·m)")
