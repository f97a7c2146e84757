"""Rollout throughput of the compiled simulator (``frictionsim bench``)."""

from __future__ import annotations

import time

import numpy as np

from experiments.synthetic.dataset import GROUND_TRUTH, dataset, restrict
from frictionsim import layout
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


def synthetic_logs() -> PackedLogs:
    """The benchmark's logs: the built-in data set (24 logs of 6 s at 5 ms), packed."""
    logs = [process(log) for log in dataset(seed=1)]
    return PackedLogs.from_logs(logs, GROUND_TRUTH.actuator)
