"""The identification report: report.md (tables), report.json (every number) and figures."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np

from frictionsim import ACTUATORS, atomic
from frictionsim.experiments.common.output import (
    counted,
    marked_on_interrupt,
    save_figure,
    table,
    write_json,
)
from frictionsim.experiments.common.plots import figure_legend, mae_boxplot, shade_torque_off
from frictionsim.experiments.identification.schedule import FitSettings
from frictionsim.logs import Log
from frictionsim.plausibility import warn
from frictionsim.solvers.rollouts import simulate

if TYPE_CHECKING:
    from frictionsim.experiments.identification.pipeline import ModelFit


DEFAULTS = FitSettings()


#: The figures a report draws (:func:`_figures`, and the cross-validation's).
FIGURE_FILES = ("mae_per_model.png", "convergence.png", "best_worst.png", "cross_validation.png")


def _mrad(x: float | None) -> str:
    return "–" if x is None else f"{1e3 * x:.2f}"


def _plain(value):
    """Command-line values as JSON: paths as strings, lists element-wise."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def summary_of(fits: dict[str, ModelFit], interrupted: bool = False) -> dict:
    """The --json summary: per model train/validation MAE (rad), seconds, evaluations, file,
    whether the independent restarts confirmed the result (None for a kept model), and with
    ``--fits`` the training loss (rad) of each fit."""
    return {"interrupted": interrupted, "models": {
        m: {
            "train_mae": f.train_mae,
            "validation_mae": f.validation_mae,
            "seconds": f.result.seconds,
            "evaluations": f.result.evaluations,
            "params_file": str(atomic.shown(f.params_file)),
            "restarts_confirmed": None if f.kept or not f.result.exploration.runs
            else f.result.exploration.confirmed(),
            "at_start": None if f.kept else f.result.at_start,
            "fit_losses": None if f.kept else list(f.result.fit_losses) or None,
        } for m, f in fits.items()
    }}


def restarts_cell(f: ModelFit) -> str:
    """How many of the independent exploration runs reached the best run within the agreement,
    e.g. ``3/4``; ``!`` marks a best result no second run or exact start confirmed."""
    e = f.result.exploration
    if f.kept or not e.runs:
        return "–"
    return f"{e.agreeing()}/{len(e.runs)}" + ("" if e.confirmed() else " !")


def restarts_warning(model: str, f: ModelFit) -> str | None:
    """A sentence for a model whose best exploration run no other run confirmed, else None."""
    e = f.result.exploration
    if f.kept or not e.runs or e.confirmed():
        return None
    if len(e.runs) == 1:
        return (f"{model}: the budget left room for one exploration run only ({1e3 * e.runs[0]:.1f} "
                f"mrad): no independent restart confirms the result. Raise --budget (each run "
                f"takes {DEFAULTS.start_budget} evaluations, all of them at most "
                f"{100 * DEFAULTS.exploration_share:.0f} % of the budget).")
    runs = ", ".join(f"{1e3 * r:.1f}" for r in sorted(e.runs))
    return (f"{model}: the independent restarts disagree (their best losses {runs} mrad; no two "
            f"within {100 * e.agreement:.0f} %): the result depends on which basin the search "
            f"found. Compare with another --seed, or raise --budget (more restarts).")


def start_warning(model: str, f: ModelFit) -> str | None:
    """A sentence for a model whose fit is the exact point it started from, else None."""
    if f.kept or not f.result.at_start:
        return None
    return (f"{model}: its fit is its start point (the simpler model's optimum, a saved fit or "
            f"the defaults): none of the {f.result.evaluations} candidates tried did better, so "
            "its extra terms are not supported by these logs or the search did not find where "
            "they help. Compare with another --seed or a larger --budget before using it.")


def write_report(out: Path, fits: dict[str, ModelFit], train: list[Log],
                 validation: list[Log], settings: dict | None = None,
                 interrupted: bool = False, cross_validation: dict | None = None,
                 learned: dict | None = None, identifiability: dict | None = None,
                 uncertainty: dict | None = None) -> dict:
    """Write report.json, report.md and the figures to ``out``; return the summary.

    ``identifiability``: per model, its identifiable combinations and the directions the
    training logs do not determine
    (:func:`~frictionsim.experiments.identification.identifiability.analyse`).
    ``learned``: the learned actuators trained after the physical models
    (:class:`~frictionsim.experiments.identification.learned.LearnedFit` by name), reported
    beside them.

    ``uncertainty``: the bootstrap's summary
    (:meth:`~frictionsim.experiments.identification.uncertainty.Uncertainty.summary`): each
    model's parameter ranges, in all three outputs.

    ``settings``: how the run was configured (names → plain values), recorded as is.
    ``interrupted``: the run was stopped (Ctrl-C) before every model was fitted;
    both reports say so, and which models are incomplete or missing; its figures are not
    drawn (they would hold the exit back by about a second).
    ``cross_validation``: the section of
    :func:`~frictionsim.experiments.identification.cross_validation.cross_validate_by_gain`, reported
    in all three outputs with its figure.
    """
    summary = summary_of(fits, interrupted)
    learned = learned or {}
    for m, f in learned.items():
        summary["models"][m] = {"train_mae": f.train_mae, "validation_mae": f.validation_mae,
                                "seconds": f.seconds, "evaluations": None,
                                "params_file": str(atomic.shown(f.params_file)),
                                "restarts_confirmed": None, "at_start": None, "learned": True}
    if cross_validation:
        summary["cross_validation"] = cross_validation
    detail = {
        "interrupted": interrupted,
        "models": {m: dict(v) for m, v in summary["models"].items()},
        "train_logs": [log.name for log in train],
        "validation_logs": [log.name for log in validation],
        "settings": {k: _plain(v) for k, v in (settings or {}).items()},
    }
    if cross_validation:
        detail["cross_validation"] = cross_validation
    if uncertainty:
        summary["uncertainty"] = detail["uncertainty"] = uncertainty
    for m, f in fits.items():
        detail["models"][m].update({
            "optimizer_seconds": f.result.optimizer_seconds,
            "rollout_seconds": f.result.rollout_seconds,
            "restarts": f.result.restarts,
            "exploration": f.result.exploration.summary(),
            "interrupted": f.result.interrupted,
            "kept_from_earlier_run": f.kept,
            "train_per_log": f.train,
            "validation_per_log": f.validation,
            "convergence": f.result.history,
            "params": f.result.params.values,
        })
        reflected = ACTUATORS[f.result.params.actuator].reflected_inertia
        if reflected is not None:
            detail["models"][m]["reflected_inertia"] = reflected
    for m, f in learned.items():
        detail["models"][m].update({"training_samples": f.samples, "train_per_log": f.train,
                                    "validation_per_log": f.validation})
    identifiability = identifiability or {}
    for m, entry in identifiability.items():
        detail["models"][m]["identifiable_combinations"] = entry["combinations"]
        detail["models"][m]["undetermined"] = entry["undetermined"]
        summary["models"][m]["undetermined"] = [sorted(d["parameters"])
                                                for d in entry["undetermined"]]
    write_json(out / "report.json", detail)

    with marked_on_interrupt(out / "report.json", detail):
        rows = [[m + (" (kept)" if f.kept else " (interrupted)" if f.result.interrupted else ""),
                 _mrad(f.train_mae), _mrad(f.validation_mae), f.result.evaluations,
                 f"{f.result.seconds:.1f}", f"{f.result.rollout_seconds:.1f}",
                 f"{f.result.optimizer_seconds:.1f}", restarts_cell(f)]
                for m, f in fits.items()]
        rows += [[m + " (learned)", _mrad(f.train_mae), _mrad(f.validation_mae), "–",
                  f"{f.seconds:.1f}", "–", "–", "–"] for m, f in learned.items()]
        headers = ["model", "train MAE (mrad)", "validation MAE (mrad)", "evaluations",
                   "seconds", "rollouts (s)", "optimizer (s)", "restarts agreeing"]
        print(table(headers, rows))
        warnings = [w for m, f in fits.items() for w in (restarts_warning(m, f), start_warning(m, f))
                    if w]
        for w in warnings:
            warn(w)
        # an interrupted run leaves its figures undrawn: they take about a second on a busy
        # machine, and an interrupt is honoured within one; --resume finishes them. Those an
        # earlier run left in the folder (--resume) would pass for this run's: removed
        if interrupted:
            for name in FIGURE_FILES:
                (out / name).unlink(missing_ok=True)
            figures = []
        else:
            figures = _figures(out, fits, train, validation)
        md = ["# Identification report", ""]
        if cross_validation:
            from frictionsim.experiments.identification.cross_validation import plot_cross_validation

            cv_md = _cross_validation_table(cross_validation)
            print("\n".join(cv_md))
            if not interrupted:
                figures.insert(0, plot_cross_validation(cross_validation,
                                                        out / "cross_validation.png"))
            md += cv_md
        if interrupted:
            stopped = [m for m, f in fits.items() if f.result.interrupted]
            md += ["**Interrupted (Ctrl-C):** " + (f"{', '.join(stopped)} stopped before its budget "
                   "was spent; " if stopped else "") + "models after it were not fitted. Every "
                   "parameter file holds the best found before the interrupt.", ""]
        if any(f.kept for f in fits.values()):
            md += ["Models marked *(kept)* were not refitted in this run: their parameter files "
                   "come from an earlier run in this folder (`--resume`) and are evaluated on "
                   "this run's logs.", ""]
        md.append(f"{counted(len(train), 'training log')}, "
                  f"{counted(len(validation), 'validation log')}.")
        md += ["", "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        md += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
        md += ["", "*Restarts agreeing*: of the independent exploration runs (each from the start "
               "point with its own seed), how many reached the best run's loss within the agreement "
               "(10 % by default). The fitter adds runs until two agree or no run beats an "
               "exact start (a simpler model's optimum); `!` marks a result they did not confirm."]
        if learned:
            md += ["", "*(learned)*: trained after the physical models on the same training logs "
                   "(docs/model.md §13): `net` an MLP actuator, `hybrid` M6 plus a learned residual "
                   "of bounded authority; their seconds are the training and scoring time."]
        md += [""] + [f"**Warning:** {w}" for w in warnings]
        md += _identifiability_lines(identifiability)
        md += ["", "Parameter files: " + ", ".join(f"`{f.params_file.name}`"
                                                   for f in (*fits.values(), *learned.values())),
               ""]
        ranges = (uncertainty or {}).get("ranges", {})
        if ranges:
            md += [f"Parameter ranges: where another fit of this servo lands "
                   f"{100 * uncertainty['level']:g} % of the time, from {uncertainty['replicates']} "
                   "bootstrap identifications on the training logs drawn with replacement "
                   "(written into the parameter files as `ranges`).", ""]
        for m, f in fits.items():
            own = ranges.get(m, {})
            md += [f"## {m}", "", "| parameter | value |" + (" range |" if own else ""),
                   "|---|---|" + ("---|" if own else "")]
            md += [f"| {k} | {v:.6g}{_reflected_note(k, f)} |"
                   + (f" {own[k][0]:.4g} … {own[k][1]:.4g} |" if k in own else " – |" if own else "")
                   for k, v in f.result.params.values.items()]
            combined = (uncertainty or {}).get("combinations", {}).get(m, {})
            if combined:
                md += ["", "Identifiable combinations, ranges: " + "; ".join(
                    f"{k} {lo:.4g} … {hi:.4g}" for k, (lo, hi) in combined.items())]
            md.append("")
        for kind, logs in (("Validation", validation), ("Training", train)):
            md += _per_log_table(kind, logs, {**fits, **learned})
        md += ["## Figures", ""] + ([f"![{p.stem}]({p.name})" for p in figures] if figures else
                                    ["Not drawn: the run was interrupted. The same command with "
                                     "`--resume` finishes it and draws them."])
        atomic.write_text(out / "report.md", "\n".join(md) + "\n")
        print(f"wrote {atomic.shown(out / 'report.md')}")
    return summary


def _reflected_note(name: str, f: ModelFit) -> str:
    """Beside the fitted armature: the actuator's reflected rotor inertia J_rotor·N², if it
    declares one (the armature's default), and the ratio of the two."""
    if name != "armature":
        return ""
    actuator = ACTUATORS[f.result.params.actuator]
    reflected = actuator.reflected_inertia
    if reflected is None:
        return ""
    fitted = f.result.params.values["armature"]
    return (f" (reflected rotor inertia J_rotor·N² = {actuator.rotor_inertia:g} × "
            f"{actuator.gear_ratio:g}² = {reflected:.6g} kg·m²; fitted/reflected "
            f"{fitted / reflected:.2f})")


def _identifiability_lines(identifiability: dict) -> list[str]:
    """report.md lines: the identifiable combinations per model, and what the logs leave
    undetermined."""
    from frictionsim.experiments.identification.identifiability import FLAT, PROBE, describe

    if not identifiability:
        return []
    md = ["", "## What the logs determine", ""]
    names = sorted({n for e in identifiability.values() for n in e["combinations"]})
    if names:
        md += ["Under the voltage law k_t and R reach the joint only as these combinations "
               "(docs/model.md §3); compare fits (seeds, folds) on them:", "",
               "| model | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
        md += [f"| {m} | " + " | ".join(f"{e['combinations'][n]:.4g}" if n in e["combinations"]
                                         else "–" for n in names) + " |"
               for m, e in identifiability.items()]
        md.append("")
    md.append(f"Directions the training logs do not determine (a move of {PROBE:g} of the "
              f"search ranges along them changes the loss by less than {100 * FLAT:g} %):")
    md.append("")
    for m, e in identifiability.items():
        lines = [describe(d) for d in e["undetermined"]]
        md.append(f"- {m}: " + ("; ".join(lines) if lines else "none"))
    return md


def _cross_validation_table(section: dict) -> list[str]:
    """report.md lines: validation (training) MAE per held-out gain and model, and the mean."""
    gains = sorted({g for e in section.values() for g in e["per_gain"]}, key=float)
    md = ["## Cross-validation by gain", "",
          "Each column: fitted on the other gains' logs, validated on this gain's (mrad; the "
          "training MAE in parentheses). The folds are in `cross_validation/`.", "",
          "| model | " + " | ".join(f"kp {g}" for g in gains) + " | mean validation |",
          "|---|" + "---|" * (len(gains) + 1)]
    for model, entry in section.items():
        cells = []
        for g in gains:
            r = entry["per_gain"].get(g)
            cells.append("–" if r is None else
                         f"{_mrad(r['validation_mae'])} ({_mrad(r['train_mae'])})")
        md.append(f"| {model} | " + " | ".join(cells)
                  + f" | **{_mrad(entry['mean_validation_mae'])}** |")
    return md + [""]


def _per_log_table(kind: str, logs: list[Log], fits: dict[str, ModelFit]) -> list[str]:
    """A Markdown table of every log's MAE (mrad) under each model."""
    if not logs or not fits:
        return []
    which = "validation" if kind == "Validation" else "train"
    models = list(fits)
    lines = [f"## {kind} MAE per log (mrad)", "",
             "| log | trajectory | kp | " + " | ".join(models) + " |",
             "|---|---|---|" + "---|" * len(models)]
    for log in logs:
        cells = [_mrad(getattr(fits[m], which).get(log.name)) for m in models]
        lines.append(f"| {log.name} | {log.trajectory} | {log.kp:g} | " + " | ".join(cells) + " |")
    return lines + [""]


def _figures(out: Path, fits: dict[str, ModelFit], train: list[Log],
             validation: list[Log]) -> list[Path]:
    if not fits:
        return []
    paths = []
    kind = "validation" if validation else "training"
    per_model = {m: list((f.validation or f.train).values()) for m, f in fits.items()}
    mae_boxplot(per_model, out / "mae_per_model.png", f"{kind.capitalize()} MAE per log")
    paths.append(out / "mae_per_model.png")

    fig, ax = plt.subplots(figsize=(7, 4))
    for m, f in fits.items():
        if f.kept or not f.result.history:
            continue  # not fitted in this run: no convergence to show
        ev, loss = zip(*f.result.history)
        ax.step(ev, 1e3 * np.array(loss), where="post", label=m)
    ax.set_xlabel("evaluations")
    ax.set_ylabel("best training loss (mrad)")
    ax.set_yscale("log")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    ax.set_title("Convergence")
    save_figure(fig, out / "convergence.png")
    paths.append(out / "convergence.png")

    logs = validation or train
    best_model = min(fits, key=lambda m: np.mean(per_model[m]))
    errors = fits[best_model].validation or fits[best_model].train
    by_name = {log.name: log for log in logs}
    picks = [min(errors, key=errors.get), max(errors, key=errors.get)]
    fig, axes = plt.subplots(2, 1, figsize=(9, 6.5), squeeze=False)
    for ax, name, what in zip(axes[:, 0], picks, ("best", "worst")):
        log = by_name[name]
        t = np.arange(len(log.entries)) * log.dt
        shade_torque_off(ax, t, log.column("torque_enable"))
        ax.plot(t, log.column("goal_position"), "k--", lw=0.8, label="goal")
        ax.plot(t, log.column("position"), "k", lw=1.6, label="logged")
        for m, f in fits.items():
            ax.plot(t, simulate(log, f.result.params).q, lw=1.0, label=m)
        ax.set_title(f"{what} {kind} log of {best_model}: {name} ({log.trajectory}, "
                     f"kp={log.kp:g}), {1e3 * errors[name]:.1f} mrad", fontsize=9)
        ax.set_ylabel("position (rad)")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time (s)")
    fig.tight_layout()
    figure_legend(fig, axes[:, 0])
    save_figure(fig, out / "best_worst.png")
    paths.append(out / "best_worst.png")
    return paths
