"""``frictionsim demo``: the main job on built-in data.

1. Records a data set on the virtual bench: an MX-64-like servo whose gearbox
   follows M6 (the ground truth), two mass/length set-ups, gains 16/32/64, the
   four identification trajectories, realistic sensors.
2. Identifies M1–M6 on the logs of gains 16 and 32, validates on gain 64.
3. Writes the identification report and figures, compares the fitted models
   with the ground truth and a naive Coulomb–viscous set on the held-out logs,
   and says how close each model's parameters came to the ground truth.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from frictionsim.experiments.common.output import counted
from frictionsim.experiments.runner.arguments import (
    add_overwrite_argument,
    add_progress_argument,
    recorded,
    seed,
)
from frictionsim.limits import check_budget
from frictionsim.schema import MODELS

DESCRIPTION = (
    "The main job on built-in data: record a synthetic data set on the virtual bench "
    "(MX-64-like servo with M6 friction as ground truth, two mass/length set-ups, gains "
    "16/32/64, the four identification trajectories, realistic sensor noise), identify "
    "M1-M6 on gains 16 and 32, validate on gain 64, write the report and figures, and show "
    "how close each model's parameters came to the ground truth."
)
HELD_OUT_KP = 64.0
DEFAULT_OUT = Path("frictionsim-demo")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=None,
                   help=f"output directory (default ./{DEFAULT_OUT}, or {DEFAULT_OUT}-2, -3 … when "
                        "that holds an earlier demo: a demo never replaces one); a non-empty "
                        "--out is refused unless --overwrite")
    add_overwrite_argument(p)
    p.add_argument("--seed", type=seed, default=0,
                   help="seed of the sensor noise and of the optimizer (default 0)")
    p.add_argument("--budget", type=int, default=3000,
                   help="loss evaluations per model (default 3000)")
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS),
                   help="models to identify (default all)")
    add_progress_argument(p)


def parameter_recovery(fits, truth) -> dict:
    """Relative error of each identified parameter that the ground truth also has."""
    out = {}
    for model, f in fits.items():
        errors = {}
        for name, value in f.result.params.values.items():
            true = truth.values.get(name)
            if true is not None and true != 0:
                errors[name] = (value - true) / abs(true)
        out[model] = errors
    return out


def run(args: argparse.Namespace) -> int:
    from frictionsim.experiments.analysis.comparison import compare, comparison_table
    from frictionsim.experiments.common.output import fresh_directory, table, write_json
    from frictionsim.experiments.common.plots import mae_boxplot, rollouts_figure
    from frictionsim.experiments.common.staging import StagedFolder
    from frictionsim.experiments.identification.fitter import FitSettings
    from frictionsim.experiments.identification.pipeline import IdentifySettings, identify, prepare_out
    from frictionsim.experiments.identification.report import write_report
    from frictionsim.experiments.synthetic.dataset import GROUND_TRUTH, NAIVE_M1, dataset, write_dataset
    from frictionsim.params import save_params
    from frictionsim.solvers.rollouts import simulate

    check_budget(args.budget)
    start = time.perf_counter()
    if args.out is None:
        out = fresh_directory(DEFAULT_OUT)
    else:
        out = args.out
    print(f"demo: results go to {out}")
    # written beside the folder and swapped in when done: an earlier demo stays intact
    final = out
    staged = StagedFolder(final, args.overwrite)
    with staged as out:
        raw = dataset(seed=args.seed, show_progress=not args.no_progress)
        logs = write_dataset(raw, out)
        train = [log for log in logs if log.kp != HELD_OUT_KP]
        validation = [log for log in logs if log.kp == HELD_OUT_KP]
        print(f"virtual bench: {counted(len(logs), 'log')} in {final / 'processed'}; training on "
              f"{len(train)}, validating on the {counted(len(validation), 'log')} of gain {HELD_OUT_KP:g}")
        save_params(out / "params" / "ground_truth_m6.json", GROUND_TRUTH)
        save_params(out / "params" / "naive_m1.json", NAIVE_M1)

        prepare_out(out / "identification", GROUND_TRUTH.actuator, overwrite=True)
        settings = IdentifySettings(tuple(m for m in MODELS if m in args.models),
                                    GROUND_TRUTH.actuator, FitSettings(args.budget, args.seed),
                                    progress=not args.no_progress)
        fits, interrupted = identify(train, validation, settings, out / "identification")
        write_report(out / "identification", fits, train, validation, recorded(args), interrupted)

        contenders = {"ground_truth_m6": GROUND_TRUTH, "naive_m1": NAIVE_M1,
                      **{f"identified_{m}": f.result.params for m, f in fits.items()}}
        results = compare(contenders, validation)
        print(f"\nvalidation (gain {HELD_OUT_KP:g}, never seen by the fitter):")
        print(comparison_table(results))
        mae_boxplot({k: list(r["per_log"].values()) for k, r in results.items()},
                    out / "validation.png", f"Virtual MX-64, held-out gain {HELD_OUT_KP:g}")
        shown = [log for log in validation if log.name.startswith("m1_l0.15")]
        best = min(fits, key=lambda m: fits[m].validation_mae) if fits else None
        for label, p in (("ground_truth_m6", GROUND_TRUTH), ("naive_m1", NAIVE_M1)) + (
                ((f"identified_{best}", fits[best].result.params),) if best else ()):
            rollouts_figure([simulate(log, p) for log in shown], out / f"simulate_{label}.png",
                            f"{label} on held-out logs (1 kg, 0.15 m, kp {HELD_OUT_KP:g})")

        recovery = parameter_recovery(fits, GROUND_TRUTH)
        names = [n for n in GROUND_TRUTH.values if any(n in r for r in recovery.values())]
        rows = [[n, f"{GROUND_TRUTH.values[n]:.4g}"]
                + [f"{100 * recovery[m][n]:+.0f}%" if n in recovery[m] else "" for m in fits]
                for n in names]
        print("\nidentified parameters vs ground truth (relative error):")
        print(table(["parameter", "truth", *fits], rows))
        write_json(out / "demo.json", {"validation": results, "parameter_error": recovery})
        staged.interrupted = interrupted
    print(f"\ndemo done in {time.perf_counter() - start:.0f} s; results in {staged.result}")
    return 130 if interrupted else 0
