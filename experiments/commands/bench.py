"""``frictionsim bench``: rollout throughput of the compiled simulator, every model."""

from __future__ import annotations

import argparse

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.runner.arguments import (
    JSON,
    add_output_argument,
    add_progress_argument,
    add_workers_argument,
)
from frictionsim.limits import check_budget, check_count
from frictionsim.schema import MODELS

DESCRIPTION = (
    "Time the compiled fixed-step rollout on the synthetic data set for every model: "
    "nanoseconds per step for one log on one thread, and per (log × step) for many logs × "
    "parameter vectors in parallel threads (the fitter's workload), by the lock-step and the "
    "scalar kernels. --scale: throughput, identification time and memory for hundreds of "
    "virtual-bench logs."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_output_argument(p, "--json", JSON, 'write {MODEL: {"ns_per_step", '
                        '"batched_ns_per_log_step", "scalar_batched_ns_per_log_step"}} here '
                        '(and "scale": [rows] with --scale)')
    p.add_argument("--candidates", type=int, default=64,
                   help="parameter vectors per batched call (default 64)")
    p.add_argument("--repeats", type=int, default=7, help="timing repeats, best kept (default 7)")
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS),
                   help="models to measure (default all)")
    p.add_argument("--engines", action="store_true",
                   help="also time MuJoCo with the servo adapter, a bare mj_step and the "
                        "standalone n-joint fixed step, per physics step (needs the mujoco extra)")
    p.add_argument("--scale", nargs="*", type=int, metavar="N",
                   help="also measure 12, 100 and 400 (or the N given) six-second virtual-bench "
                        "logs: loading time and peak memory, ns per log·step of both kernels "
                        "and the time of identifying M1 and M6 (--budget evaluations)")
    p.add_argument("--budget", type=int, default=None,
                   help="evaluations per identification with --scale (default 3000)")
    add_workers_argument(p)
    add_progress_argument(p)


def run(args: argparse.Namespace) -> int:
    import numba

    from frictionsim.experiments.analysis.speed import MAX_CANDIDATES, MAX_REPEATS, measure, synthetic_logs
    from frictionsim.experiments.common.output import table, write_json

    if not (1 <= args.candidates <= MAX_CANDIDATES and 1 <= args.repeats <= MAX_REPEATS):
        raise ConfigurationError(f"--candidates must be 1 … {MAX_CANDIDATES} and --repeats 1 … "
                                 f"{MAX_REPEATS} (got {args.candidates} and {args.repeats})")
    if args.budget is not None and args.scale is None:
        raise ConfigurationError("--budget is the --scale identifications' evaluations, and no "
                                 "--scale is given")
    args.budget = 3000 if args.budget is None else args.budget
    check_budget(args.budget)  # refused before minutes of timing
    if args.scale is not None:
        for size in args.scale:
            check_count("--scale", size, 1, 5000, "logs")
    packed = synthetic_logs()
    print(f"{packed.n_logs} synthetic logs, {packed.n_steps} steps; "
          f"{numba.get_num_threads()} threads")
    results = {m: measure(m, packed, args.candidates, args.repeats) for m in args.models}
    rows = [[m, f"{r['ns_per_step']:.1f}", f"{r['batched_ns_per_log_step']:.1f}",
             f"{r['scalar_batched_ns_per_log_step']:.1f}"]
            for m, r in results.items()]
    print(table(["model", "ns/step (1 log, 1 thread)",
                 f"ns/(log·step) lock-step ({args.candidates} vectors, all threads)",
                 "ns/(log·step) scalar kernel"], rows))
    if args.engines:
        from frictionsim.experiments.analysis.speed import engine_rows

        engines = engine_rows(repeats=max(3, min(args.repeats, 7)))
        print("\nper physics step (1 ms), one core:")
        print(table(["setup", "engine", "servo model", "ns/step"],
                    [[r["setup"], r["engine"], r["model"], f"{r['ns_per_step']:.0f}"]
                     for r in engines], "<<<>"))
        results = {**results, "engines": engines}
    if args.scale is not None:
        from frictionsim.experiments.identification.scale import scale_rows

        sizes = tuple(args.scale) or (12, 100, 400)
        models = tuple(m for m in args.models if m in ("m1", "m6")) or ("m1", "m6")
        scale = scale_rows(sizes, models, args.budget, show_progress=not args.no_progress)
        print(f"\nscale: six-second virtual-bench logs, identify --budget {args.budget}, "
              f"{numba.get_num_threads()} threads")
        print(table(["logs", "model", "load (s)", "load peak (MB)", "ns/(log·step) lock-step",
                     "scalar", "identify (s)", "of which rollouts (s)", "process peak RSS (MB)"],
                    [[r["logs"], m, f"{r['load_seconds']:.2f}", f"{r['load_peak_mb']:.0f}",
                      f"{e['lockstep_ns_per_log_step']:.1f}", f"{e['scalar_ns_per_log_step']:.1f}",
                      f"{e['identify_seconds']:.1f}", f"{e['rollout_seconds']:.1f}",
                      f"{r['peak_rss_mb']:.0f}"]
                     for r in scale for m, e in r["models"].items()]))
        results = {**results, "scale": scale}
    if args.json:
        write_json(args.json, results)
    return 0
