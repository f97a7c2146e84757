"""Figures of a robot's simulated recordings."""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import numpy as np

from frictionsim.experiments.common.output import save_figure
from frictionsim.experiments.robots.recorded import RecordedRun


def recordings_figure(runs: list[RecordedRun], path: str | os.PathLike, title: str = "",
                      span: tuple[float, float] | None = None) -> None:
    """A row per recording, a column per joint: measured, goal and simulated position (rad),
    each panel titled with its mean absolute error (over the whole recording); with
    ``backlash``, the simulated motor side of the gear's gap too. ``span``: the seconds
    (start, end) shown, to look at a reversal through the gap."""
    joints = runs[0].joints
    fig, axes = plt.subplots(len(runs), len(joints), figsize=(3.6 * len(joints), 2.4 * len(runs)),
                             squeeze=False, sharex="row")
    for r, run in enumerate(runs):
        shown = np.ones(run.t.shape, bool) if span is None else \
            (run.t >= span[0]) & (run.t <= span[1])
        t = run.t[shown]
        for c, joint in enumerate(joints):
            ax = axes[r, c]
            ax.plot(t, run.goal[shown, c], color="0.6", lw=0.8, label="goal")
            ax.plot(t, run.measured[shown, c], color="k", lw=1.0, label="measured")
            ax.plot(t, run.predicted[shown, c], color="tab:red", lw=1.0,
                    label="simulated (output)" if run.motor_side is not None else "simulated")
            if run.motor_side is not None:
                ax.plot(t, run.motor_side[shown, c], color="tab:blue", lw=0.8, ls="--",
                        label="simulated motor side (θm/N)")
            ax.set_title(f"{run.name}: {joint} ({1e3 * run.joint_mae[joint]:.1f} mrad)",
                         fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
            if c == 0:
                ax.set_ylabel("position (rad)", fontsize=8)
            if r == len(runs) - 1:
                ax.set_xlabel("time (s)", fontsize=8)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout()
    if title:
        fig.suptitle(title, y=1.01)
    save_figure(fig, path)
