"""``frictionsim bench``: rollout throughput of the compiled simulator, every model."""

from __future__ import annotations

import argparse

from experiments.runner.arguments import JSON, add_output_argument
from frictionsim.schema import MODELS

DESCRIPTION = (
    "Time the compiled fixed-step rollout on the synthetic data set for every model: "
    "nanoseconds per step for one log on one thread, and per (log × step) for many logs × "
    "parameter vectors in parallel threads (the fitter's workload)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_output_argument(p, "--json", JSON, 'write {MODEL: {"ns_per_step", '
                        '"batched_ns_per_log_step"}} here')
    p.add_argument("--candidates", type=int, default=64,
                   help="parameter vectors per batched call (default 64)")
    p.add_argument("--repeats", type=int, default=7, help="timing repeats, best kept (default 7)")
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS),
                   help="models to measure (default all)")
    p.add_argument("--engines", action="store_true",
                   help="also time MuJoCo with the servo adapter, a bare mj_step and the "
                        "standalone n-joint fixed step, per physics step (needs the mujoco extra)")


def run(args: argparse.Namespace) -> int:
    import numba

    from experiments.analysis.speed import MAX_CANDIDATES, MAX_REPEATS, measure, synthetic_logs
    from experiments.common.output import table, write_json

    if not (1 <= args.candidates <= MAX_CANDIDATES and 1 <= args.repeats <= MAX_REPEATS):
        raise ValueError(f"--candidates must be 1 … {MAX_CANDIDATES} and --repeats 1 … "
                         f"{MAX_REPEATS} (got {args.candidates} and {args.repeats})")
    packed = synthetic_logs()
    print(f"{packed.n_logs} synthetic logs, {packed.n_steps} steps; "
          f"{numba.get_num_threads()} threads")
    results = {m: measure(m, packed, args.candidates, args.repeats) for m in args.models}
    rows = [[m, f"{r['ns_per_step']:.1f}", f"{r['batched_ns_per_log_step']:.1f}"]
            for m, r in results.items()]
    print(table(["model", "ns/step (1 log, 1 thread)",
                 f"ns/(log·step) batched ({args.candidates} vectors, all threads)"], rows))
    if args.engines:
        from experiments.analysis.speed import engine_rows

        engines = engine_rows(repeats=max(3, min(args.repeats, 7)))
        print("\nper physics step (1 ms), one core:")
        print(table(["setup", "engine", "servo model", "ns/step"],
                    [[r["setup"], r["engine"], r["model"], f"{r['ns_per_step']:.0f}"]
                     for r in engines], "<<<>"))
        results = {**results, "engines": engines}
    if args.json:
        write_json(args.json, results)
    return 0
