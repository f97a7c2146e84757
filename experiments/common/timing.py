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
