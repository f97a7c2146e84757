"""Cross-validation by firmware gain: does a model predict a gain it was not fitted on?

For each gain G among the logs, the models are fitted on the logs of every other gain
and validated on the logs of G (leave-one-gain-out); each fold is a whole
identification (:func:`~frictionsim.experiments.identification.pipeline.identify`) written to
``OUT/cross_validation/kp_<G>/``, so nothing of a fold is lost on Ctrl-C either. The
result, per model::

    {"per_gain": {G: {"train_mae", "validation_mae"}}, "mean_validation_mae"}

(MAE in rad; G as text, the gain as the logs give it). The mean over the held-out
gains is the figure of merit for choosing a model and its docs/model.md §9 extensions: a
training error can always be lowered by a richer model, a held-out gain cannot be
fitted to.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.common.output import counted
from frictionsim.experiments.identification.pipeline import (
    FOLDS_DIR,
    IdentifySettings,
    identify,
    prepare_out,
)
from frictionsim.logs import Log


def gain_label(kp: float) -> str:
    """A gain as text: ``400`` for 400.0, ``12.5`` for 12.5."""
    return f"{kp:g}"


def cross_validate_by_gain(logs: list[Log], settings: IdentifySettings, out: Path,
                           resume: bool = False, overwrite: bool = False
                           ) -> tuple[dict, bool]:
    """Leave-one-gain-out over the gains of ``logs``: (the cross-validation section, whether a
    fold was interrupted). Each fold's files go to ``out/cross_validation/kp_<G>/``."""
    gains = sorted({log.kp for log in logs})
    if len(gains) < 2:
        raise ConfigurationError(f"--cross-validate kp needs logs of at least two firmware gains; "
                                 f"these {counted(len(logs), 'log')} all have kp {gains[0]:g}")
    section: dict[str, dict] = {}
    for gain in gains:
        train = [log for log in logs if log.kp != gain]
        held = [log for log in logs if log.kp == gain]
        fold = out / FOLDS_DIR / f"kp_{gain_label(gain)}"
        print(f"cross-validation: fit on kp {', '.join(gain_label(g) for g in gains if g != gain)}"
              f" ({counted(len(train), 'log')}), validate on kp {gain_label(gain)} "
              f"({counted(len(held), 'log')})")
        earlier = prepare_out(fold, settings.actuator, resume, overwrite, settings.scheme,
                              settings.extensions)
        fits, interrupted = identify(train, held, settings, fold, earlier) if settings.models \
            else ({}, False)
        if settings.learned and not interrupted:
            from frictionsim.experiments.identification.learned import NetSettings, fit_learned

            learn = settings.net or NetSettings(seed=settings.fit.seed)
            learned, interrupted = fit_learned(settings.learned, train, held,
                                               {m: f.result.params for m, f in fits.items()},
                                               settings.actuator, fold, learn,
                                               settings.progress)
            fits = {**fits, **learned}
        for model, fit in fits.items():
            entry = section.setdefault(model, {"per_gain": {}})
            entry["per_gain"][gain_label(gain)] = {"train_mae": fit.train_mae,
                                                   "validation_mae": fit.validation_mae}
        if interrupted:
            _means(section)
            return section, True
    _means(section)
    return section, False


def _means(section: dict) -> None:
    for entry in section.values():
        entry["mean_validation_mae"] = float(np.mean(
            [g["validation_mae"] for g in entry["per_gain"].values()]))


def plot_cross_validation(section: dict, path: Path) -> Path:
    """Validation MAE per held-out gain (x) and model (one line each), the mean in the legend."""
    import matplotlib.pyplot as plt

    from frictionsim.experiments.common.output import save_figure

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for model, entry in section.items():
        gains = sorted(entry["per_gain"], key=float)
        ax.plot([float(g) for g in gains],
                [1e3 * entry["per_gain"][g]["validation_mae"] for g in gains], "o-",
                label=f"{model} (mean {1e3 * entry['mean_validation_mae']:.1f} mrad)")
    ax.set_xscale("log")
    ax.set_xlabel("held-out firmware gain kp")
    ax.set_ylabel("validation MAE (mrad)")
    ax.set_title("Leave-one-gain-out cross-validation")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
    return path
