"""The recorder's timing quality: the period between consecutive raw log entries.

A raw log's ``timestamp`` column (s) gives the periods Δt_k = t_{k+1} − t_k. Reported per
log and over all logs: count, mean, standard deviation, percentiles, the longest gaps
(where in the log) and the periods later than :data:`LATE` × the median, the late reads a
USB-serial adapter's latency timer or a busy host produce.
"""

from __future__ import annotations

import os

import numpy as np

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.common.output import counted
from frictionsim.logs import Log

#: Percentiles reported (of the periods).
PERCENTILES = (1, 5, 50, 95, 99)
#: A period longer than this multiple of the median is *late*.
LATE = 1.5
#: Longest gaps reported per log.
WORST = 3


def periods(log: Log) -> np.ndarray:
    """Δt between consecutive entries (s)."""
    return np.diff(log.column("timestamp"))


def period_statistics(dt: np.ndarray, t: np.ndarray | None = None) -> dict:
    """Statistics of the periods ``dt`` (s; reported in ms); ``t``: the timestamps (s) at
    which each period starts, for the worst gaps."""
    if dt.size == 0:
        raise ConfigurationError("a log with fewer than two entries has no period")
    median = float(np.median(dt))
    stats = {
        "periods": int(dt.size),
        "mean_ms": 1e3 * float(dt.mean()),
        "std_ms": 1e3 * float(dt.std()),
        "min_ms": 1e3 * float(dt.min()),
        "max_ms": 1e3 * float(dt.max()),
        **{f"p{p}_ms": 1e3 * float(v) for p, v in zip(PERCENTILES,
                                                         np.percentile(dt, PERCENTILES))},
        "late": int(np.count_nonzero(dt > LATE * median)),
        "late_fraction": float(np.mean(dt > LATE * median)),
        "rate_hz": 1.0 / float(dt.mean()) if dt.mean() > 0 else float("nan"),
    }
    if t is not None:
        worst = np.argsort(dt)[::-1][:WORST]
        stats["worst_gaps"] = [{"at_s": float(t[k]), "gap_ms": 1e3 * float(dt[k])}
                               for k in worst]
    return stats


def jitter_report(logs: list[Log]) -> dict:
    """``{"per_log": {NAME: stats}, "overall": stats}`` of :func:`period_statistics`."""
    per_log = {}
    for log in logs:
        if log.processed:
            raise ConfigurationError(f"{log.name} is a processed log (resampled every {log.dt:g} s): its "
                                     "timestamps are the grid, not the recording; give the raw logs")
        t = log.column("timestamp")
        dt = np.diff(t)
        if dt.size == 0:
            raise ConfigurationError(f"{log.name}: fewer than two entries, no period to measure")
        if (dt <= 0).any():
            k = int(np.argmax(dt <= 0))
            raise ConfigurationError(f"{log.name}: timestamps do not increase at entry {k + 1} "
                                     f"({t[k]:g} s then {t[k + 1]:g} s)")
        per_log[log.name] = period_statistics(dt, t[:-1])
    overall = period_statistics(np.concatenate([periods(log) for log in logs]))
    return {"per_log": per_log, "overall": overall}


def plot_jitter(logs: list[Log], path: str | os.PathLike) -> None:
    """Histogram of every period (ms, counts on a log scale) with the median, the 1st and
    99th percentiles and the late threshold marked; one outline per log when they are few."""
    import matplotlib.pyplot as plt

    from frictionsim.experiments.common.output import save_figure

    every = 1e3 * np.concatenate([periods(log) for log in logs])
    fig, ax = plt.subplots(figsize=(8, 4))
    bins = np.linspace(every.min(), every.max(), 120) if every.max() > every.min() else 10
    ax.hist(every, bins=bins, color="0.6", label=f"all {counted(len(logs), 'log')} ({every.size} periods)")
    if 1 < len(logs) <= 8:
        for log in logs:
            ax.hist(1e3 * periods(log), bins=bins, histtype="step", lw=1.0, label=log.name)
    median = float(np.median(every))
    p1, p99 = np.percentile(every, [1, 99])
    ax.axvline(median, color="k", lw=1.0, label=f"median {median:.2f} ms")
    ax.axvline(p1, color="k", ls=":", lw=1.0, label=f"1st / 99th percentile {p1:.2f} / {p99:.2f} ms")
    ax.axvline(p99, color="k", ls=":", lw=1.0)
    ax.axvline(LATE * median, color="C3", ls="--", lw=1.0, label=f"late (> {LATE:g} × median)")
    ax.set_yscale("log")
    ax.set_xlabel("period between entries (ms)")
    ax.set_ylabel("count")
    ax.set_title("recorder timing")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
