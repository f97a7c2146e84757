"""The output folder of ``robot identify``: what may be replaced, and the report.

``OUT/<model>.json`` (robot parameter files), ``OUT/report.md``, ``OUT/report.json`` and
``OUT/validation_per_joint.png``; with ``--cross-validate motion`` the folds in
``OUT/cross_validation/``. As with ``identify``, a non-empty OUT is refused unless
``--resume`` (each model also starts from its saved fit) or ``--overwrite`` (the files a
robot identification writes are removed, nothing else).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from frictionsim.atomic import shown, write_json, write_text
from frictionsim.errors import ConfigurationError
from frictionsim.experiments.common.output import counted, marked_on_interrupt
from frictionsim.experiments.identification.pipeline import check_resumable, existing_outputs
from frictionsim.experiments.robots.fit_defaults import START_VELOCITIES
from frictionsim.experiments.robots.identify import (
    RobotFitSettings,
    RobotLearnedFit,
    RobotModelFit,
)
from frictionsim.experiments.robots.recorded import joint_means, mean_mae
from frictionsim.params import ParameterFileError, ParameterSet
from frictionsim.robot_params import RobotParameters, load_robot_params
from frictionsim.robot_recordings import Recording

OUTPUT_FILES = re.compile(r"^((m[1-6]|net|hybrid)\.json|report\.(md|json)|validation_per_joint\.png)$")
FOLDS_DIR = "cross_validation"
#: The largest difference (rad) the reused dynamics may make to a window's error of a fit's
#: best before the report flags it (docs/results.md: the goal the reuse is held to).
REUSE_TOLERANCE = 5e-5


def not_ours(entry: Path) -> bool:
    """Whether an entry of a robot identification's folder is not one it writes: kept when
    the folder is replaced."""
    return not (OUTPUT_FILES.match(entry.name) or entry.name == FOLDS_DIR)


def prepare_robot_out(out: Path, robot: str, resume: bool = False, overwrite: bool = False,
                      extensions: tuple[str, ...] | None = None) -> dict[str, RobotParameters]:
    """Check ``out``; the saved fits to resume from (model → robot parameters). With
    ``overwrite`` nothing is removed: the run replaces the folder when it is done
    (:class:`~frictionsim.experiments.common.staging.StagedFolder`)."""
    present, ours = existing_outputs(out, OUTPUT_FILES)
    if not present:
        return {}
    saved = {}
    for p in ours:
        if p.suffix == ".json" and re.match(r"m[1-6]\.json$", p.name) and (resume or overwrite):
            try:
                params = load_robot_params(p)
            except ParameterFileError as e:
                raise ConfigurationError(f"{'--resume' if resume else '--overwrite'}: {e}; it is not "
                                         "replaced (choose another --out)") from None
            if params.robot != robot:
                raise ConfigurationError(f"{p} holds a fit of robot {params.robot or '(none)'}, not "
                                         f"{robot}; choose another --out")
            if resume:  # a fit continued with other extensions would be misreported
                for servo in params.servos.values():
                    if isinstance(servo, ParameterSet):
                        check_resumable(p, servo, None, extensions)
            saved[p.stem] = params
    if resume:
        print(f"resuming from {out}: saved {', '.join(sorted(saved)) or 'no model'}; each model "
              "keeps the better of its saved and its new parameters")
        return saved
    if overwrite:
        print(f"--overwrite: the earlier robot identification in {out} is replaced once this "
              "one is done")
        return {}
    shown = ", ".join(p.name for p in present[:6]) + (" …" if len(present) > 6 else "")
    raise ConfigurationError(f"--out {out} is not empty ({shown}): refusing to replace what it holds. "
                             "Pass --resume to continue from the fits there, --overwrite to replace "
                             "them, or another --out")


def goal_errors(recordings: list[Recording], joints: tuple[str, ...]) -> dict:
    """The goal taken as the prediction: {name: {joint: MAE (rad)}}."""
    out = {}
    for rec in recordings:
        cols = [rec.column(j) for j in joints]
        err = np.abs(rec.goal[:, cols] - rec.position[:, cols]).mean(axis=0)
        out[rec.name] = dict(zip(joints, err.tolist()))
    return out


def write_robot_report(out: Path, robot: str, fits: dict[str, RobotModelFit | RobotLearnedFit],
                       settings: RobotFitSettings, train: list[Recording],
                       validation: list[Recording], cost: dict, joints: tuple[str, ...],
                       cross_validation: dict | None = None, interrupted: bool = False) -> dict:
    """report.md, report.json and the per-joint figure; returns the summary (report.json)."""
    from frictionsim.experiments.common.output import table

    goal = goal_errors(validation, joints) if validation else {}
    summary = {
        "robot": robot, "interrupted": interrupted, "cost": cost,
        "training_recordings": [r.name for r in train],
        "validation_recordings": [r.name for r in validation],
        "goal_as_prediction": {"mean_mae_rad": mean_mae(goal),
                               "joint_mae_rad": joint_means(goal) if goal else None},
        "models": {m: _model_summary(f) for m, f in fits.items()},
        "cross_validation": cross_validation,
        "settings": {"window_s": settings.window, "stride": settings.stride,
                     "budget": settings.fit.budget, "seed": settings.fit.seed,
                     "extensions": list(settings.extensions), "per_joint": settings.per_joint,
                     "joint_scales": settings.joint_scales,
                     "search_stride": settings.search_stride,
                     "start_velocity": settings.start_velocity},
    }
    write_json(out / "report.json", summary)

    with marked_on_interrupt(out / "report.json", summary):
        lines = [f"# Robot identification: {robot}", "",
                 f"{counted(len(train), 'training recording')}, fitted on "
                 f"{counted(cost['windows'], 'window')} of "
                 f"{settings.window:g} s (one in {settings.stride}) restarted from the recorded "
                 f"positions and {START_VELOCITIES[settings.start_velocity]}; {len(validation)} "
                 "recordings held out and replayed whole in closed loop.",
                 f"Fit: {cost['fit_seconds']:.0f} s on {counted(cost['threads'], 'thread')}, peak memory "
                 f"{cost['peak_memory_mib']:.0f} MiB."
                 + (" **Interrupted**: the fits are the best so far." if interrupted else ""), ""]
        lines += _reuse_lines(fits, cost)
        rows = [[m, f"{1e3 * f.result.loss:.2f}", f.result.evaluations, f.result.restarts,
                 f"{f.result.seconds:.0f}", f.per_joint + (" + scales" if f.joint_scales else ""),
                 "" if f.validation_mae is None else f"{1e3 * f.validation_mae:.2f}"]
                if isinstance(f, RobotModelFit) else
                [f"{m} (learned)", f"{1e3 * f.window_loss:.2f}",
                 f.learned.training.get("closed_loop_evaluations", "–"), "–", f"{f.seconds:.0f}",
                 "as m6" if f.model == "hybrid" else "–",
                 "" if f.validation_mae is None else f"{1e3 * f.validation_mae:.2f}"]
                for m, f in fits.items()]
        lines += [table(["model", "window loss (mrad)", "evaluations", "restarts", "seconds",
                         "per joint", "held-out MAE (mrad)"], rows), ""]
        for m, f in fits.items():
            if isinstance(f, RobotModelFit) and f.joint_scales:
                lines += [f"{m}: joint scales, friction / armature: " + ", ".join(
                    f"{j} {v['friction']:.2f} / {v['armature']:.2f}" for j, v in f.joint_scales.items())
                    + f" (window loss {1e3 * f.shared_loss:.2f} mrad with the shared set alone)", ""]
        if validation:
            lines += ["## Held-out recordings, MAE per joint (mrad)", ""]
            cols = [["goal as prediction", *(f"{1e3 * v:.1f}" for v in joint_means(goal).values()),
                     f"{1e3 * mean_mae(goal):.1f}"]]
            for m, f in fits.items():
                if f.validation:
                    cols.append([m, *(f"{1e3 * v:.1f}" for v in joint_means(f.validation).values()),
                                 f"{1e3 * f.validation_mae:.1f}"])
            lines += [table(["", *joints, "mean"], cols), ""]
            if interrupted:  # drawing it would hold the exit back (an interrupt takes < 1 s)
                (out / "validation_per_joint.png").unlink(missing_ok=True)  # an earlier run's
                lines += ["The figure is not drawn: the run was interrupted.", ""]
            else:
                _figure(out / "validation_per_joint.png", joints, goal, fits)
                lines += ["![held-out MAE per joint](validation_per_joint.png)", ""]
        if cross_validation:
            lines += ["## Cross-validation by motion (held-out MAE, mrad)", ""]
            rows = [[variant, *(f"{1e3 * v:.2f}" for v in entry["per_fold"]),
                     f"{1e3 * entry['mean']:.2f}"]
                    for variant, entry in cross_validation["variants"].items()]
            folds = len(next(iter(cross_validation["variants"].values()))["per_fold"])
            lines += [table(["per joint", *(f"fold {k + 1}" for k in range(folds)), "mean"], rows),
                      "", f"Chosen: **{cross_validation['chosen']}** (lowest mean held-out MAE of "
                      f"{cross_validation['model']}).", ""]
        write_text(out / "report.md", "\n".join(lines))
    return summary


def _reuse_lines(fits: dict, cost: dict) -> list[str]:
    """What the reused dynamics moved (:class:`~frictionsim.solvers.robot_windows.RobotWindows`):
    the largest difference they made to a window's error of each physical model's best, said
    beside the exact losses the table gives, and flagged above :data:`REUSE_TOLERANCE`."""
    physical = {m: f for m, f in fits.items() if isinstance(f, RobotModelFit)}
    moved = {m: f.reuse_error for m, f in physical.items() if f.reuse_error is not None}
    # an interrupt before a model's exact replay leaves it the loss the search ranked it by
    unchecked = [m for m in physical if m not in moved]
    if not cost.get("reused_dynamics") or not physical:
        return []
    line = (f"MuJoCo's dynamics terms reused along {cost.get('references', 0)} reference runs; "
            "every window loss here is the exact fixed step's"
            + (f", except {' '.join(unchecked)}'s (interrupted before its exact replay: the "
               "loss with the reused terms)" if unchecked else "") + ".")
    if moved:
        line += (" The reuse moved a window's error of each model's best by at most "
                 + ", ".join(f"{m} {1e3 * e:.3f} mrad" for m, e in moved.items()) + ".")
    over = [m for m, e in moved.items() if e > REUSE_TOLERANCE]
    if over:
        line += (f" **Above {1e3 * REUSE_TOLERANCE:g} mrad** for {' '.join(over)}: the search "
                 "ranked its candidates on terms that far from theirs; compare a fit with "
                 "--exact-dynamics.")
    return [line, ""]


def _model_summary(f: RobotModelFit | RobotLearnedFit) -> dict:
    """A model's entry in report.json."""
    common = {"file": str(shown(f.path)), "validation_mae_rad": f.validation_mae,
              "validation_joint_mae_rad": joint_means(f.validation) if f.validation else None}
    if isinstance(f, RobotLearnedFit):
        return {**common, "learned": True, "window_loss_rad": f.window_loss,
                "seconds": f.seconds, "training": f.learned.training}
    return {**common, "window_loss_rad": f.result.loss, "evaluations": f.result.evaluations,
            "seconds": f.result.seconds, "restarts": f.result.restarts,
            "fit_losses_rad": list(f.result.fit_losses) or None,
            "per_joint": f.per_joint, "joint_offsets_rad": dict(f.result.params.offsets),
            "joint_scales": dict(f.joint_scales), "shared_window_loss_rad": f.shared_loss,
            "parameters": dict(f.result.params.params.values),
            "reuse_error_rad": f.reuse_error,
            "interrupted": f.result.interrupted}


def _figure(path: Path, joints, goal: dict, fits: dict[str, RobotModelFit]) -> None:
    import matplotlib.pyplot as plt

    from frictionsim.experiments.common.output import save_figure

    series = {"goal as prediction": joint_means(goal)}
    series.update({m: joint_means(f.validation) for m, f in fits.items() if f.validation})
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    width = 0.8 / len(series)
    for k, (label, errs) in enumerate(series.items()):
        x = np.arange(len(joints)) + (k - (len(series) - 1) / 2) * width
        ax.bar(x, [1e3 * errs[j] for j in joints], width, label=label)
    ax.set_xticks(np.arange(len(joints)), joints)
    ax.set_ylabel("held-out MAE (mrad)")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
