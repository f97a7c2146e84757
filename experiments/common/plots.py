"""Figures of the experiments (matplotlib, written to files)."""

from __future__ import annotations

import math
import os

import matplotlib.pyplot as plt
import numpy as np

from frictionsim.experiments.common.output import save_figure
from frictionsim.solvers.rollouts import Rollout


def _torque_off_spans(t: np.ndarray, enable: np.ndarray) -> list[tuple[float, float]]:
    spans, start = [], None
    for ti, on in zip(t, enable):
        if not on and start is None:
            start = ti
        elif on and start is not None:
            spans.append((start, ti))
            start = None
    if start is not None:
        spans.append((start, t[-1]))
    return spans


def shade_torque_off(ax, t: np.ndarray, enable: np.ndarray) -> None:
    """Grey spans where the torque was disabled."""
    for a, b in _torque_off_spans(t, enable):
        ax.axvspan(a, b, color="0.88", label="torque off")


def figure_legend(fig, axes) -> None:
    """One legend for the whole figure, with every label that appears in any panel."""
    unique = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            unique.setdefault(label, handle)
    fig.legend(unique.values(), unique.keys(), loc="upper center", ncol=min(len(unique), 6),
               bbox_to_anchor=(0.5, 0.0))


def panels(n: int):
    """A figure with ``n`` time-series panels, two per row."""
    cols = 1 if n == 1 else 2
    rows = math.ceil(n / cols)
    return plt.subplots(rows, cols, figsize=(7 * cols, 2.8 * rows), squeeze=False)


def finish_panels(fig, axes, n: int, title: str, path: str | os.PathLike,
                  ylabel: str = "position (rad)") -> None:
    """Label the first ``n`` panels, hide the rest, one legend, title, save."""
    for ax in list(axes.flat)[:n]:
        ax.set_xlabel("time (s)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    fig.tight_layout()
    figure_legend(fig, axes.flat[:n])
    if title:
        fig.suptitle(title, y=1.02)
    save_figure(fig, path)


def rollouts_figure(rollouts: list[Rollout], path: str | os.PathLike, title: str = "",
                    span: tuple[float, float] | None = None) -> None:
    """Logged vs simulated position per log, with the goal and the torque-off spans shaded;
    with ``backlash``, the simulated motor side of the gear's gap too. ``span``: the seconds
    (start, end) shown."""
    fig, axes = panels(len(rollouts))
    for ax, r in zip(axes.flat, rollouts):
        shade_torque_off(ax, r.t, r.log.column("torque_enable"))
        ax.plot(r.t, r.log.column("goal_position"), "k--", lw=0.8, label="goal")
        ax.plot(r.t, r.q_logged, lw=1.4, label="logged")
        ax.plot(r.t, r.q, lw=1.2, label="simulated (output)" if r.motor_side is not None
                else "simulated")
        if r.motor_side is not None:
            ax.plot(r.t, r.motor_side, lw=0.9, ls=":", label="simulated motor side (θm/N)")
        if span is not None:
            ax.set_xlim(*span)
            shown = (r.t >= span[0]) & (r.t <= span[1])
            if shown.any():
                values = [r.q_logged[shown], r.q[shown]] + (
                    [r.motor_side[shown]] if r.motor_side is not None else [])
                low, high = min(map(np.min, values)), max(map(np.max, values))
                ax.set_ylim(low - 0.1 * (high - low + 1e-3), high + 0.1 * (high - low + 1e-3))
        ax.set_title(f"{r.log.name} ({r.log.trajectory}, kp={r.log.kp:g}): MAE {1e3 * r.mae:.1f} mrad",
                     fontsize=9)
    finish_panels(fig, axes, len(rollouts), title, path)


def mae_boxplot(per_label: dict[str, list[float]], path: str | os.PathLike, title: str = "") -> None:
    """Box plot of per-log MAE (mrad), one box per label (parameter file or model)."""
    fig, ax = plt.subplots(figsize=(1.3 * len(per_label) + 3, 4))
    labels = list(per_label)
    data = [1e3 * np.asarray(per_label[k]) for k in labels]
    ax.boxplot(data, showmeans=True)
    ax.set_xticks(range(1, len(labels) + 1), labels, rotation=20)
    for i, d in enumerate(data, start=1):
        ax.scatter(np.full(len(d), i) + 0.08, d, s=8, alpha=0.5, color="C0")
    ax.set_ylabel("position MAE per log (mrad)")
    ax.set_title(title or "MAE per log")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path)


def recordings_figure(logs: list, path: str | os.PathLike, title: str = "") -> None:
    """Recorded position and goal per raw log (torque-off shaded), with its control period."""
    fig, axes = panels(len(logs))
    for ax, log in zip(axes.flat, logs):
        t = log.column("timestamp")
        shade_torque_off(ax, t, log.column("torque_enable"))
        ax.plot(t, log.column("goal_position"), "k--", lw=0.8, label="goal")
        ax.plot(t, log.column("position"), lw=1.3, label="recorded")
        period = 1e3 * np.diff(t)
        ax.set_title(f"{log.name} ({log.trajectory}, kp={log.kp:g}): period "
                     f"{period.mean():.2f} ± {period.std():.2f} ms", fontsize=9)
    finish_panels(fig, axes, len(logs), title, path)
