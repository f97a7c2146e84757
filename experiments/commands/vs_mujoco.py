"""``frictionsim run vs-mujoco``: MuJoCo's own servo model, fitted by ``mujoco.sysid``, against
frictionsim's, on the same training and held-out logs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.runner.arguments import (
    FIGURE,
    JSON,
    actuator_name,
    add_actuator_arguments,
    add_output_argument,
    add_progress_argument,
    seed,
)
from frictionsim.limits import check_budget, check_count

DESCRIPTION = (
    "Why not just use MuJoCo? MuJoCo's <dcmotor> configured as the servo's firmware (exact: "
    "its controller in torque space with the back-EMF compensation cancelled), with each of "
    "its stock frictions (the joint's frictionloss and damping; the dcmotor's LuGre) fitted "
    "by mujoco.sysid, against frictionsim's M1, M6 and M6 with the current limit fitted by "
    "identify, on the same training and held-out logs: the training and held-out MAE (each "
    "log rolled out whole in closed loop), the seconds of each fit and the ns per simulated "
    "step, in one table and one figure. Needs MuJoCo >= 3.12 with its sysid extra "
    "(pip install 'mujoco[sysid]')."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_actuator_arguments(p, actuator=True)
    p.add_argument("--logs", nargs="+", required=True, type=Path, metavar="LOG",
                   help="processed training logs, or folders of them")
    held = p.add_mutually_exclusive_group(required=True)
    held.add_argument("--validation", nargs="+", type=Path, metavar="LOG",
                      help="held-out processed logs (or folders)")
    held.add_argument("--cross-validate", choices=("kp",), dest="cross_validate",
                      help="kp: leave-one-gain-out over --logs: every model fitted once per gain "
                           "on the other gains' logs and validated on that gain's")
    p.add_argument("--budget", type=int, default=3000,
                   help="loss evaluations of each frictionsim fit (default 3000)")
    p.add_argument("--max-iters", type=int, default=60,
                   help="iterations of each mujoco.sysid fit (default 60)")
    p.add_argument("--seed", type=seed, default=0, help="seed of frictionsim's fits (default 0)")
    p.add_argument("--out", type=Path, default=Path("vs-mujoco"),
                   help="where frictionsim's fitted files go, one folder per fold (default "
                        "./vs-mujoco); an earlier run there is replaced only with --overwrite")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an earlier run in --out")
    add_output_argument(p, "--json", JSON, 'write {FOLD: {MODEL: {"train_mae", '
                        '"validation_mae", "fit_seconds", "ns_per_step", ...}}} and the means here')
    add_output_argument(p, "--plot", FIGURE, "held-out and training MAE and fit time per model")
    add_progress_argument(p)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from frictionsim.experiments.common.loading import load_logs, warn_motor_mismatch
    from frictionsim.experiments.common.output import table, write_json
    from frictionsim.experiments.identification.pipeline import prepare_out, split_logs
    from frictionsim.experiments.identification.vs_mujoco import compare_fold, plot_comparison

    actuator = actuator_name(args)
    if schema_law(actuator) != "voltage":
        raise ConfigurationError(f"{actuator}: vs-mujoco compares voltage servos (the dcmotor as their "
                                 "firmware); the current law has no friction of MuJoCo's to fit against")
    check_budget(args.budget)
    check_count("--max-iters", args.max_iters, 1, 100_000)
    try:
        from mujoco import sysid
        if not hasattr(sysid, "optimize"):
            raise ImportError
    except ImportError:
        raise ConfigurationError("vs-mujoco needs MuJoCo's sysid toolbox: pip install "
                                 "'mujoco[sysid]>=3.12'") from None
    show = not args.no_progress
    logs = load_logs(args.logs, processed=True, show_progress=show)
    if args.validation:
        held = load_logs(args.validation, processed=True, show_progress=show)
        split_logs(logs, held)  # refuses a validation log that is a training one
        folds = {"validation": (logs, held)}
    else:
        gains = sorted({log.kp for log in logs})
        if len(gains) < 2:
            raise ConfigurationError(f"--cross-validate kp needs two gains at least; every log has kp "
                                     f"{gains[0]:g}")
        folds = {f"kp_{g:g}": ([lg for lg in logs if lg.kp != g], [lg for lg in logs if lg.kp == g])
                 for g in gains}
    warn_motor_mismatch(logs, actuator)
    for name in folds:
        folder = args.out / name
        if folder.is_dir() and any(folder.iterdir()) and not args.overwrite:
            raise ConfigurationError(f"--out {args.out}: {folder} holds an earlier run; pass --overwrite "
                                     "to replace it, or another --out")
        prepare_out(folder, actuator, overwrite=args.overwrite)
        prepare_out(folder / "m6_current_limit", actuator, overwrite=args.overwrite)
    section: dict[str, dict] = {}
    try:
        for name, (train, held) in folds.items():
            print(f"{name}: fit on {len(train)} logs, hold out {len(held)}", flush=True)
            scored = compare_fold(train, held, actuator, args.out / name, args.budget,
                                  args.seed, args.max_iters, show)
            section[name] = {m: s.summary() for m, s in scored.items()}
    except KeyboardInterrupt:
        print(f"interrupted: the folds done so far are in the table; frictionsim's fits in "
              f"{args.out}", file=sys.stderr)
        if not section:
            return 130
    models = list(next(iter(section.values())))
    mean = {m: {k: float(np.mean([section[f][m][k] for f in section]))
                for k in ("train_mae", "validation_mae", "fit_seconds", "ns_per_step")}
            for m in models}
    rows = [[m, f"{1e3 * mean[m]['train_mae']:.1f}", f"{1e3 * mean[m]['validation_mae']:.1f}",
             " / ".join(f"{1e3 * section[f][m]['validation_mae']:.1f}" for f in section),
             f"{mean[m]['fit_seconds']:.1f}", f"{mean[m]['ns_per_step']:.0f}"] for m in models]
    print("MAE in mrad, means over the folds (held-out per fold: " + ", ".join(section) + ")")
    print(table(["model", "training", "held out", "per fold", "fit (s)", "ns/step"], rows))
    if args.json:
        write_json(args.json, {"folds": section, "mean": mean})
    if args.plot:
        plot_comparison(section, mean, args.plot)
    return 130 if len(section) < len(folds) else 0


def schema_law(actuator: str) -> str:
    from frictionsim import schema

    return schema.get_actuator(actuator).law
