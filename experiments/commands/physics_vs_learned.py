"""``frictionsim run physics-vs-learned``: M1, M6, a learned network and a hybrid on held-out
repetitions, gains and masses of the user's logs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from frictionsim.experiments.runner.arguments import (
    FIGURE,
    JSON,
    add_actuator_arguments,
    add_extensions_argument,
    add_output_argument,
    add_progress_argument,
    seed,
)

DESCRIPTION = (
    "Compare identified physical models (M1, M6) with a learned actuator network (an MLP on "
    "the error and velocity history, the gain and the enable flag, trained on torques from "
    "inverse dynamics through the bench) and a hybrid (M6 plus a learned residual of bounded "
    "authority) on held-out sets chosen from the logs' headers: repetitions of trained "
    "conditions, higher gains (trained on the lower ones), lower gains (trained on the higher "
    "ones), the heaviest mass (trained on the others); those the logs allow. Each split is "
    "fitted and trained on its own training logs only; its files go to OUT/<split>/."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_actuator_arguments(p, actuator=True)
    p.add_argument("--logs", nargs="+", required=True, type=Path, metavar="LOG",
                   help="processed logs, or directories of them")
    p.add_argument("--out", type=Path, default=Path("physics-vs-learned"),
                   help="where each split's fits and learned files go (OUT/<split>/; default "
                        "./physics-vs-learned); an earlier run there is replaced only with "
                        "--overwrite")
    p.add_argument("--budget", type=int, default=3000,
                   help="loss evaluations per physical model and split (default 3000)")
    p.add_argument("--hybrid-budget", type=int, default=2000, metavar="N",
                   help="closed-loop evaluations of the hybrid's residual search per split "
                        "(default 2000)")
    p.add_argument("--seed", type=seed, default=0,
                   help="random seed of the fits and the training (default 0)")
    add_extensions_argument(p)
    add_output_argument(p, "--json", JSON, 'write {SPLIT: {MODEL: {"train_mae", '
                        '"validation_mae"}}} here (rad)')
    add_output_argument(p, "--plot", FIGURE, "held-out MAE per split and model")
    add_progress_argument(p)


def run(args: argparse.Namespace) -> int:
    from frictionsim.experiments.common.loading import load_logs, warn_motor_mismatch
    from frictionsim.experiments.common.output import table, write_json
    from frictionsim.experiments.identification.fitter import FitSettings
    from frictionsim.experiments.identification.learned import NetSettings
    from frictionsim.experiments.identification.physics_vs_learned import (
        MODELS,
        PHYSICAL_CHAIN,
        compare_split,
        describe,
        held_out_splits,
        plot_splits,
    )
    from frictionsim.experiments.identification.pipeline import IdentifySettings, prepare_out
    from frictionsim.experiments.runner.arguments import actuator_name

    actuator = actuator_name(args)
    for flag, value in (("--budget", args.budget), ("--hybrid-budget", args.hybrid_budget)):
        if not 1 <= value <= 1_000_000:
            raise ValueError(f"{flag} must be in [1, 1,000,000] evaluations, got {value}")
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise ValueError("the learned models need scikit-learn: pip install "
                         "'frictionsim[learn]'") from None
    logs = load_logs(args.logs, processed=True, show_progress=not args.no_progress)
    warn_motor_mismatch(logs, actuator)
    splits, why = held_out_splits(logs)
    for name, reason in why.items():
        print(f"{name}: not possible with these logs ({reason})")
    if not splits:
        raise ValueError("these logs allow no held-out split: they need repeated conditions, "
                         "two gains or two masses")
    folders = {name: args.out / name for name in splits}
    for folder in folders.values():
        if folder.is_dir() and any(folder.iterdir()) and not args.overwrite:
            raise ValueError(f"--out {args.out}: {folder} holds an earlier run; pass "
                             "--overwrite to replace it, or another --out")
        prepare_out(folder, actuator, overwrite=args.overwrite)
    settings = IdentifySettings(PHYSICAL_CHAIN, actuator, FitSettings(args.budget, args.seed),
                                progress=not args.no_progress,
                                extensions=tuple(args.extensions))
    net_settings = NetSettings(closed_loop_budget=args.hybrid_budget, seed=args.seed)
    section: dict[str, dict] = {}
    interrupted = False
    for name, (train, held) in splits.items():
        print(f"{name}: {describe(train, held)}")
        section[name], interrupted = compare_split(train, held, settings, folders[name],
                                                   net_settings)
        if interrupted:
            break
    rows = [[name] + [f"{1e3 * r[m]['validation_mae']:.1f} ({1e3 * r[m]['train_mae']:.1f})"
                      if m in r else "–" for m in MODELS] for name, r in section.items()]
    print("held-out MAE in mrad (training MAE in parentheses)")
    print(table(["held-out set", *MODELS], rows))
    if args.json:
        write_json(args.json, section)
    if args.plot:
        plot_splits(section, args.plot)
    if interrupted:
        print(f"interrupted: the fits so far are saved in {args.out}", file=sys.stderr)
        return 130
    return 0
