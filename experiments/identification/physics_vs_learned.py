"""Physics against learning on held-out bench logs: M1, M6, a learned network and a hybrid.

The held-out sets are chosen from the logs' headers (:func:`held_out_splits`), each one a
question a user of a servo model asks:

- ``repetitions``: logs of a condition (trajectory, gain, mass, arm length) recorded more
  than once; the last of each is held out, the others train: does the model reproduce
  what it has seen?
- ``higher_gains``: trained on the gains up to the median, validated above it;
- ``lower_gains``: trained on the gains from the median up, validated below it;
- ``heavier_mass``: trained without the heaviest mass, validated on it.

Per split the physical models are identified as ``identify`` does (M1 → M4 → M6, the chain
of richer models from simpler ones; M4 is only M6's stepping stone and not reported), the
network is trained on the same training logs and the hybrid over that split's M6
(:mod:`frictionsim.experiments.identification.learned`), and on request a sequence model
(``gru``, :mod:`frictionsim.experiments.identification.sequence_net`); every model is then
rolled out in closed loop on both sets. A split the logs do not allow is left out, and says
why.
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from frictionsim.experiments.common.output import counted
from frictionsim.logs import Log

SPLITS = ("repetitions", "higher_gains", "lower_gains", "heavier_mass")
#: The learned models a split may train, and those it trains unless asked for others.
LEARNED = ("net", "hybrid", "gru")
DEFAULT_LEARNED = ("net", "hybrid")
MODELS = ("m1", "m6", *LEARNED)
#: The physical models fitted per split (M4: M6's start).
PHYSICAL_CHAIN = ("m1", "m4", "m6")


def held_out_splits(logs: list[Log]) -> tuple[dict[str, tuple[list[Log], list[Log]]],
                                              dict[str, str]]:
    """(split → (training logs, held-out logs), split → why it is not possible)."""
    # imported here: the command line reads this module's names for its help
    from frictionsim.experiments.identification.learned import condition

    splits: dict[str, tuple[list[Log], list[Log]]] = {}
    why: dict[str, str] = {}
    groups: dict[tuple, list[Log]] = defaultdict(list)
    for log in logs:
        groups[condition(log)].append(log)
    repeated = [sorted(g, key=lambda lg: lg.name) for g in groups.values() if len(g) > 1]
    if repeated:
        held = {id(g[-1]) for g in repeated}
        splits["repetitions"] = ([lg for lg in logs if id(lg) not in held],
                                 [lg for lg in logs if id(lg) in held])
    else:
        why["repetitions"] = "no condition (trajectory, kp, mass, length) was recorded twice"
    gains = sorted({log.kp for log in logs})
    if len(gains) > 1:
        median = float(np.median(gains))
        splits["higher_gains"] = ([lg for lg in logs if lg.kp <= median],
                                  [lg for lg in logs if lg.kp > median])
        splits["lower_gains"] = ([lg for lg in logs if lg.kp >= median],
                                 [lg for lg in logs if lg.kp < median])
    else:
        why["higher_gains"] = why["lower_gains"] = f"every log has kp {gains[0]:g}"
    masses = sorted({log.mass for log in logs})
    if len(masses) > 1:
        splits["heavier_mass"] = ([lg for lg in logs if lg.mass < masses[-1]],
                                  [lg for lg in logs if lg.mass == masses[-1]])
    else:
        why["heavier_mass"] = f"every log has mass {masses[0]:g} kg"
    return {s: splits[s] for s in SPLITS if s in splits}, why


def describe(train: list[Log], held: list[Log]) -> str:
    def gains(logs):
        return "/".join(f"{g:g}" for g in sorted({lg.kp for lg in logs}))

    def masses(logs):
        return "/".join(f"{m:g}" for m in sorted({lg.mass for lg in logs}))

    return (f"train {counted(len(train), 'log')} (kp {gains(train)}, mass {masses(train)} kg), hold out "
            f"{len(held)} (kp {gains(held)}, mass {masses(held)} kg)")


def compare_split(train: list[Log], held: list[Log], settings, out: Path, net_settings,
                  learned: tuple[str, ...] = DEFAULT_LEARNED
                  ) -> tuple[dict[str, dict[str, float]], bool]:
    """{model: {"train_mae", "validation_mae" (rad), "fit_seconds"}} of one split, the
    ``learned`` models (of :data:`LEARNED`) after M1 and M6 (a learned model also its
    open-loop "validation_torque_mae" and "validation_torque_spread", N·m,
    :func:`~frictionsim.experiments.identification.learned.open_loop_torque`), and whether a
    fit was interrupted (Ctrl-C); fits and learned files go to ``out``."""
    from frictionsim.experiments.identification.learned import (
        learned_mae,
        open_loop_torque,
        rotor_inertia,
        stop_if_interrupted,
        train_learned,
    )
    from frictionsim.experiments.identification.pipeline import identify
    from frictionsim.learned_files import save_learned

    fits, interrupted = identify(train, held, settings, out)
    result = {m: {"train_mae": fits[m].train_mae, "validation_mae": fits[m].validation_mae,
                  "fit_seconds": fits[m].result.seconds}
              for m in ("m1", "m6") if m in fits}
    if interrupted or "m6" not in fits:
        return result, True
    armature = rotor_inertia({"m6": fits["m6"].result.params}, settings.actuator)
    for kind in (k for k in LEARNED if k in learned):
        start = time.perf_counter()
        if kind == "gru":
            from frictionsim.experiments.identification import sequence_net

            model = sequence_net.train_sequence(train, settings.actuator, armature, net_settings)
            save, mae, torque = (sequence_net.save_sequence, sequence_net.closed_loop_mae,
                                 sequence_net.open_loop_torque)
        else:
            model = train_learned(kind, train, settings.actuator,
                                  fits["m6"].result.params if kind == "hybrid" else None,
                                  net_settings, armature=armature)
            save, mae, torque = save_learned, learned_mae, open_loop_torque
        seconds = time.perf_counter() - start
        save(out / f"{kind}.json", model)
        stop_if_interrupted(model)
        held_torque = torque(model, held)
        result[kind] = {"train_mae": float(np.mean(list(mae(model, train).values()))),
                        "validation_mae": float(np.mean(list(mae(model, held).values()))),
                        "fit_seconds": seconds,
                        "validation_torque_mae": held_torque["torque_mae"],
                        "validation_torque_spread": held_torque["torque_spread"]}
    return result, False


def present_models(section: dict) -> list[str]:
    """The models of :data:`MODELS` some split of ``section`` holds, in that order."""
    return [m for m in MODELS if any(m in r for r in section.values())]


def plot_splits(section: dict, path: Path) -> Path:
    """Held-out MAE per split (groups) and model (bars), training MAE as dots."""
    import matplotlib.pyplot as plt

    from frictionsim.experiments.common.output import save_figure

    fig, ax = plt.subplots(figsize=(7.2, 4.0))
    splits = list(section)
    models = present_models(section)
    width = 0.8 / len(models)
    for i, model in enumerate(models):
        xs = [s + (i - (len(models) - 1) / 2) * width for s in range(len(splits))]
        val = [1e3 * section[s].get(model, {}).get("validation_mae", np.nan) for s in splits]
        train = [1e3 * section[s].get(model, {}).get("train_mae", np.nan) for s in splits]
        ax.bar(xs, val, width, label=model)
        ax.plot(xs, train, "o", color="black", markersize=3,
                label="training MAE" if i == 0 else None)
        for x, v in zip(xs, val):
            if np.isfinite(v):
                ax.annotate(f"{v:.0f}", (x, v), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(splits)), [s.replace("_", " ") for s in splits])
    ax.set_ylabel("held-out MAE (mrad)")
    ax.set_title("Physical models against learned actuators, by held-out set")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
    return path
