"""Wall-clock timing for the benchmarks: the best of several runs."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_time(fn: Callable[[], object], repeats: int) -> float:
    """The shortest of ``repeats`` calls of ``fn`` (s): the least disturbed by other work."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def batched_ns_per_log_step(packed, thetas, repeats: int) -> dict[str, float]:
    """ns per (log × step) of ``packed.errors(thetas, kernel)`` (a
    :class:`frictionsim.solvers.batch.PackedLogs`) for the ``"scalar"`` and ``"lockstep"`` kernels, each
    compiled and warm before it is timed."""
    work = packed.n_steps * len(thetas)
    speeds = {}
    for kernel in ("scalar", "lockstep"):
        packed.errors(thetas, kernel)
        speeds[kernel] = 1e9 * best_time(lambda k=kernel: packed.errors(thetas, k), repeats) / work
    return speeds
