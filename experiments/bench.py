"""``frictionsim bench``: rollout throughput of the compiled simulator, every model."""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from experiments.output import JSON, add_output_argument, table, write_json
from experiments.registry import register
from experiments.synthetic import GROUND_TRUTH, dataset, restrict
from frictionsim import MODELS, layout
from frictionsim.logs import process
from solvers.batch import PackedLogs
from solvers.fixed_step import rollout_error

#: Bounds of the workload: a population far beyond any fitter's, and enough repeats for a minimum.
MAX_CANDIDATES = 10_000
MAX_REPEATS = 1_000


def _best_time(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure(model: str, packed: PackedLogs, candidates: int, repeats: int) -> dict:
    """ns per step of one rollout on one thread, and ns per (log × step) batched on all threads."""
    theta = restrict(GROUND_TRUTH, model).theta()
    rng = np.random.default_rng(0)
    # Candidates spread around the truth, as a fitter's population would be.
    thetas = np.repeat(theta[None, :], candidates, axis=0)
    perturbed = layout.MOTOR_AND_FRICTION
    n = perturbed.stop - perturbed.start
    thetas[:, perturbed] *= rng.uniform(0.8, 1.2, size=(candidates, n))
    o = packed.offsets

    def single() -> None:
        for j in range(packed.n_logs):
            a, b = o[j], o[j + 1]
            rollout_error(packed.goal[a:b], packed.enable[a:b], packed.position[a:b],
                          packed.v0[j], theta, packed.bench[j], packed.bench[j, layout.DT])

    single()
    packed.errors(thetas)
    t_single = _best_time(single, repeats)
    t_batched = _best_time(lambda: packed.errors(thetas), repeats)
    return {
        "ns_per_step": 1e9 * t_single / packed.n_steps,
        "batched_ns_per_log_step": 1e9 * t_batched / (packed.n_steps * candidates),
    }


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_output_argument(p, "--json", JSON, 'write {MODEL: {"ns_per_step", '
                        '"batched_ns_per_log_step"}} here')
    p.add_argument("--candidates", type=int, default=64,
                   help="parameter vectors per batched call (default 64)")
    p.add_argument("--repeats", type=int, default=7, help="timing repeats, best kept (default 7)")
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS),
                   help="models to measure (default all)")


def run(args: argparse.Namespace) -> int:
    if not (1 <= args.candidates <= MAX_CANDIDATES and 1 <= args.repeats <= MAX_REPEATS):
        raise ValueError(f"--candidates must be 1 … {MAX_CANDIDATES} and --repeats 1 … "
                         f"{MAX_REPEATS} (got {args.candidates} and {args.repeats})")
    logs = [process(log) for log in dataset(seed=1)]
    packed = PackedLogs.from_logs(logs, GROUND_TRUTH.actuator)
    print(f"{packed.n_logs} synthetic logs, {packed.n_steps} steps; "
          f"{numba.get_num_threads()} threads")
    results = {m: measure(m, packed, args.candidates, args.repeats) for m in args.models}
    rows = [[m, f"{r['ns_per_step']:.1f}", f"{r['batched_ns_per_log_step']:.1f}"]
            for m, r in results.items()]
    print(table(["model", "ns/step (1 log, 1 thread)",
                 f"ns/(log·step) batched ({args.candidates} vectors, all threads)"], rows))
    if args.json:
        write_json(args.json, results)
    return 0


register(
    "bench",
    "rollout throughput of the compiled simulator",
    "Time the compiled fixed-step rollout on the synthetic data set for every model: "
    "nanoseconds per step for one log on one thread, and per (log × step) for many logs × "
    "parameter vectors in parallel threads (the fitter's workload).",
    add_arguments,
    run,
    subcommand=True,
)
