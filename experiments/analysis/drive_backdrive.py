"""Drive/backdrive diagrams (seed 000, section II-C and figures 2–4).

For each parameter file and a grid of external torques τ_e, the static interval
[τ_low, τ_high] of motor torques that keep a joint at rest
(:mod:`frictionsim.static_region`), its drive and backdrive edges, and the same edges
at given non-zero velocities (the faded lines of the paper's figure 4: where the joint
moves steadily at that speed, the budget with s(v) and K_v·|v|).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from frictionsim import ACTUATORS
from frictionsim.params import ParameterSet
from frictionsim.static_region import drive_and_backdrive, static_intervals

#: How far beyond the equilibrium the edges are searched, in units of the diagram's largest
#: |τ_e| plus the friction at rest: an edge beyond it is reported as none (self-locking).
SPAN_FACTOR = 20.0


@dataclass(frozen=True)
class Edges:
    """Drive and backdrive torques (N·m) at each τ_e; NaN where friction holds whatever
    the motor does within the search span."""

    drive: np.ndarray
    backdrive: np.ndarray
    low: np.ndarray
    high: np.ndarray


@dataclass(frozen=True)
class Diagram:
    """One parameter file's diagram: at rest and at each velocity (rad/s)."""

    label: str
    params: ParameterSet
    tau_e: np.ndarray
    rest: Edges
    moving: dict[float, Edges] = field(default_factory=dict)

    def to_json(self) -> dict:
        out = {"model": self.params.model, "actuator": self.params.actuator,
               "tau_e": self.tau_e.tolist(), "drive": self.rest.drive.tolist(),
               "backdrive": self.rest.backdrive.tolist(),
               "static_low": self.rest.low.tolist(), "static_high": self.rest.high.tolist()}
        if self.moving:
            out["velocities"] = {f"{v:g}": {"drive": e.drive.tolist(),
                                            "backdrive": e.backdrive.tolist()}
                                 for v, e in self.moving.items()}
        return out


def torque_grid(limit: float, points: int) -> np.ndarray:
    """``points`` evenly spaced external torques from −limit to limit (N·m), symmetric to the
    bit (so the diagram's symmetry can be checked on it), 0 exactly when ``points`` is odd."""
    if points % 2:
        positive = np.linspace(0.0, limit, (points + 1) // 2)
        return np.concatenate([-positive[:0:-1], positive])
    positive = np.linspace(limit / (points - 1), limit, points // 2)
    return np.concatenate([-positive[::-1], positive])


def stall_torque(params: ParameterSet) -> float:
    """The largest torque the motor can produce (N·m): k_t·V_in·max_pwm/R for the voltage
    law, k_t·I_max for the current law."""
    act = ACTUATORS[params.actuator]
    kt = params.values["kt"]
    if act.law == "voltage":
        return kt * act.vin * act.max_pwm / params.values["R"]
    return kt * act.max_current


def edges(params: ParameterSet, tau_e: np.ndarray, velocity: float, span: float) -> Edges:
    """The static interval's edges and the drive/backdrive torques at ``velocity``."""
    low, high = static_intervals(np.ascontiguousarray(tau_e, dtype=float), float(velocity),
                                 params.theta(), float(span))
    drive, backdrive = drive_and_backdrive(tau_e, low, high)
    return Edges(drive, backdrive, low, high)


def diagram(label: str, params: ParameterSet, tau_e: np.ndarray,
            velocities: tuple[float, ...] = ()) -> Diagram:
    """The diagram of one parameter set over the τ_e grid (N·m)."""
    v = params.values
    at_rest = sum(abs(v.get(k, 0.0)) for k in ("friction_base", "friction_stribeck"))
    span = SPAN_FACTOR * (float(np.max(np.abs(tau_e))) + at_rest) + 1e-9
    rest = edges(params, tau_e, 0.0, span)
    moving = {float(speed): edges(params, tau_e, abs(speed),
                                  span + abs(speed) * abs(v.get("friction_viscous", 0.0)))
              for speed in velocities}
    return Diagram(label, params, np.asarray(tau_e, dtype=float), rest, moving)


def labels_for(paths: list[os.PathLike]) -> list[str]:
    """Short labels: the file names without suffix, or the paths where those repeat."""
    from pathlib import Path

    stems = [Path(p).stem for p in paths]
    if len(set(stems)) == len(stems):
        return stems
    return [str(p) for p in paths]


def plot_diagrams(diagrams: list[Diagram], path: str | os.PathLike) -> None:
    """One panel per parameter file (static area grey, drive blue, backdrive red, the
    equilibrium τ_m = −τ_e dashed, edges at speed faded) and, with several files, a last
    panel overlaying every file's edges."""
    import math

    import matplotlib.pyplot as plt

    from frictionsim.experiments.common.output import save_figure

    n = len(diagrams) + (1 if len(diagrams) > 1 else 0)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.9 * rows), squeeze=False)
    for ax, d in zip(axes.flat, diagrams):
        x = d.tau_e
        ax.fill_between(x, d.rest.low, d.rest.high, color="0.85", lw=0, label="static area")
        ax.plot(x, -x, "k--", lw=0.8, label="equilibrium τ_m = −τ_e")
        for k, e in enumerate(d.moving.values()):
            alpha = 0.55 * (1 - k / (len(d.moving) + 1))
            ax.plot(x, e.drive, color="C0", lw=0.9, alpha=alpha,
                    label=f"at speed ({', '.join(f'{v:g}' for v in d.moving)} rad/s)")
            ax.plot(x, e.backdrive, color="C3", lw=0.9, alpha=alpha)
        ax.plot(x, d.rest.drive, color="C0", lw=1.8, label="drive")
        ax.plot(x, d.rest.backdrive, color="C3", lw=1.8, label="backdrive")
        ax.set_title(f"{d.label} ({d.params.model}, {d.params.actuator})", fontsize=9)
    if len(diagrams) > 1:
        ax = axes.flat[len(diagrams)]
        x = diagrams[0].tau_e
        ax.plot(x, -x, "k--", lw=0.8)
        for k, d in enumerate(diagrams):
            ax.plot(d.tau_e, d.rest.drive, color=f"C{k}", lw=1.4, label=d.label)
            ax.plot(d.tau_e, d.rest.backdrive, color=f"C{k}", lw=1.4, ls=(0, (4, 2)))
        ax.set_title("every file (solid: drive, dashed: backdrive)", fontsize=9)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[:n]:
        ax.set_xlabel("external torque τ_e (N·m)")
        ax.set_ylabel("motor torque τ_m (N·m)")
        ax.axhline(0, color="0.5", lw=0.5)
        ax.axvline(0, color="0.5", lw=0.5)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    handles, names = axes.flat[0].get_legend_handles_labels()
    unique = dict(zip(names, handles))
    fig.tight_layout()
    fig.legend(unique.values(), unique.keys(), loc="upper center", ncol=min(len(unique), 5),
               bbox_to_anchor=(0.5, 0.0), fontsize=8)
    save_figure(fig, path)
