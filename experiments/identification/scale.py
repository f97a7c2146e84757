"""How rollouts and identification scale with the number of logs (``frictionsim bench --scale``).

A campaign of virtual-bench logs like the public ones (4 masses × 2 lengths × 3 gains ×
4 trajectories, repeated with fresh sensor noise until there are enough), written as
processed log files and loaded back as ``identify`` loads them. For each size: the time
and peak memory of loading and packing, the rollout throughput of the scalar and the
lock-step kernels (ns per log·step, all threads), and the time of ``identify``'s fit of
M1 and M6 (budget evaluations, seed 0) with the lock-step kernel.
"""

from __future__ import annotations

import itertools
import resource
import tempfile
import time
import tracemalloc
from pathlib import Path

from frictionsim import trajectories
from frictionsim.bench_setup import BenchSetup
from frictionsim.experiments.common.loading import load_logs
from frictionsim.experiments.common.progress import progress
from frictionsim.experiments.common.timing import batched_ns_per_log_step
from frictionsim.experiments.identification.fitter import FitSettings, fit
from frictionsim.experiments.identification.search_space import SearchSpace
from frictionsim.experiments.synthetic.dataset import GROUND_TRUTH, population
from frictionsim.experiments.synthetic.virtual_bench import SensorModel, record
from frictionsim.logs import Log, process, save_log
from frictionsim.params import ParameterSet
from frictionsim.solvers.batch import PackedLogs

MASSES = (0.5, 1.0, 1.5, 2.0)
LENGTHS = (0.10, 0.15)
GAINS = (16.0, 32.0, 64.0)


def campaign(n_logs: int, duration: float = 6.0, show_progress: bool = True,
             truth: ParameterSet = GROUND_TRUTH, masses: tuple[float, ...] = MASSES,
             lengths: tuple[float, ...] = LENGTHS, gains: tuple[float, ...] = GAINS
             ) -> list[Log]:
    """``n_logs`` processed virtual-bench logs of ``duration`` s of the servo ``truth`` (by
    default the demo's M6), cycling through ``masses`` (kg) × ``lengths`` (m) × ``gains``
    (firmware units) × identification trajectories, each repetition with its own sensor
    noise."""
    combos = list(itertools.product(masses, lengths, gains, trajectories.IDENTIFICATION))
    logs = []
    for n in progress(range(n_logs), desc="virtual bench", unit="log", enabled=show_progress):
        mass, length, kp, trajectory = combos[n % len(combos)]
        raw = record(truth, BenchSetup(mass, length, kp, 0.05), trajectory,
                     SensorModel(), seed=n, duration=duration)
        log = process(raw)
        log.path = Path(f"m{mass:g}_l{length:g}_kp{kp:g}_{trajectory}_r{n // len(combos)}.json")
        logs.append(log)
    return logs


def measure_size(logs: list[Log], folder: Path, models: tuple[str, ...], budget: int,
                 candidates: int = 16, repeats: int = 3, show_progress: bool = True) -> dict:
    """Every figure of one size (module docstring); the logs are written to ``folder``."""
    for log in logs:
        save_log(folder / log.name, log)

    def load() -> PackedLogs:
        return PackedLogs.from_logs(load_logs([folder], show_progress=show_progress),
                                    GROUND_TRUTH.actuator)

    t0 = time.perf_counter()
    packed = load()
    load_seconds = time.perf_counter() - t0
    tracemalloc.start()  # a second load for the memory: tracing slows Python down
    load()
    _, load_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    row = {"logs": packed.n_logs, "steps": packed.n_steps, "load_seconds": load_seconds,
           "load_peak_mb": load_peak / 2**20,
           "packed_mb": sum(a.nbytes for a in (packed.goal, packed.enable, packed.supply,
                                               packed.position, packed.bench)) / 2**20,
           "models": {}}
    for model in models:
        speed = batched_ns_per_log_step(packed, population(model, candidates), repeats)
        space = SearchSpace(model, GROUND_TRUTH.actuator, {})
        t0 = time.perf_counter()
        result = fit(space, packed, FitSettings(budget=budget, seed=0), progress=show_progress,
                     label=f"{model}, {packed.n_logs} logs")
        row["models"][model] = {
            "scalar_ns_per_log_step": speed["scalar"],
            "lockstep_ns_per_log_step": speed["lockstep"],
            "identify_seconds": time.perf_counter() - t0,
            "rollout_seconds": result.rollout_seconds,
            "optimizer_seconds": result.optimizer_seconds,
            "train_mae": result.loss,
        }
    row["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return row


def scale_rows(sizes: tuple[int, ...] = (12, 100, 400), models: tuple[str, ...] = ("m1", "m6"),
               budget: int = 3000, show_progress: bool = True) -> list[dict]:
    """:func:`measure_size` for each size, in increasing order (the process's peak RSS only
    grows), on one campaign of the largest size."""
    sizes = tuple(sorted(sizes))
    logs = campaign(sizes[-1], show_progress=show_progress)
    rows = []
    with tempfile.TemporaryDirectory(prefix="frictionsim-scale-") as tmp:
        for n in sizes:
            folder = Path(tmp) / f"logs_{n}"
            folder.mkdir()
            rows.append(measure_size(logs[:n], folder, models, budget,
                                     show_progress=show_progress))
    return rows
