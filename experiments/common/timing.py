"""Wall-clock timing for the benchmarks: the best of several runs, and cases alternated."""

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


def alternated(cases: dict[str, Callable[[], float]], rounds: int,
               after_round: Callable[[int, dict[str, list[float]]], None] | None = None
               ) -> dict[str, list[float]]:
    """Each case's own measurement (its callable returns it), the cases taken in turn for
    ``rounds`` rounds so that a load on the machine falls on all of them alike; per case,
    its measurements in round order. ``after_round(r, so_far)`` after each round."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for r in range(rounds):
        for name, measure in cases.items():
            times[name].append(measure())
        if after_round is not None:
            after_round(r, times)
    return times
