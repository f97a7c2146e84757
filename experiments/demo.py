"""``frictionsim demo``: the main job on built-in data.

Records a data set on the virtual bench (MX-64-like servo, M6 ground truth,
two mass/length set-ups, three gains, the four identification trajectories),
then simulates it with the ground truth and with a naive Coulomb–viscous (M1)
parameter set and compares them.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from experiments.compare import compare, print_comparison
from experiments.output import write_json
from experiments.plots import mae_boxplot, rollouts_figure
from experiments.registry import register
from experiments.synthetic import GROUND_TRUTH, NAIVE_M1, dataset, write_dataset
from frictionsim.params import save_params
from solvers.rollouts import simulate


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=Path("frictionsim-demo"),
                   help="output directory (default ./frictionsim-demo)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sensor noise (default 0)")


def run(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    out: Path = args.out
    raw = dataset(seed=args.seed, progress=True)
    logs = write_dataset(raw, out)
    print(f"virtual bench: {len(logs)} logs in {out / 'raw'} (processed: {out / 'processed'})")
    params = {"ground_truth_m6": GROUND_TRUTH, "naive_m1": NAIVE_M1}
    for label, p in params.items():
        save_params(out / "params" / f"{label}.json", p)
    results = compare(params, logs)
    print_comparison(results)
    write_json(out / "compare.json", results)
    mae_boxplot({k: list(r["per_log"].values()) for k, r in results.items()},
                out / "compare.png", "Virtual MX-64: MAE per log")
    shown = [log for log in logs if log.name.startswith("m1_l0.15_kp32")]
    for label, p in params.items():
        rollouts_figure([simulate(log, p) for log in shown], out / f"simulate_{label}.png",
                        f"{label} on the virtual MX-64 (1 kg, 0.15 m, kp 32)")
    print(f"demo done in {time.perf_counter() - start:.1f} s; results in {out}")
    return 0


register(
    "demo",
    "virtual-bench data set, simulated with the ground truth and a naive M1",
    "The main job on built-in data: record a synthetic data set on the virtual bench "
    "(MX-64-like servo with M6 friction as ground truth, two mass/length set-ups, gains "
    "16/32/64, the four identification trajectories, realistic sensor noise), process it, "
    "simulate it with the ground truth and with a naive Coulomb-viscous (M1) set, print the "
    "comparison and write the figures.",
    add_arguments,
    run,
    subcommand=True,
)
