"""``frictionsim run jitter``: the recorder's timing quality from raw logs."""

from __future__ import annotations

import argparse
from pathlib import Path

from frictionsim.experiments.runner.arguments import FIGURE, JSON, add_output_argument, add_progress_argument

DESCRIPTION = (
    "The period between consecutive entries of raw logs (as recorded, before processing): "
    "mean, standard deviation, percentiles, the longest gaps and where they happen, and the "
    "late periods (over 1.5 × the median), per log and over all of them; --plot a histogram."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("raw", nargs="+", type=Path, metavar="RAW",
                   help="raw logs (with their recorded timestamps), or directories of them")
    add_output_argument(p, "--json", JSON, 'write {"per_log": {LOG: stats}, "overall": stats} '
                        "here (periods in ms)")
    add_output_argument(p, "--plot", FIGURE, "histogram of the periods")
    add_progress_argument(p)


def run(args: argparse.Namespace) -> int:
    from frictionsim.experiments.analysis.jitter import LATE, jitter_report
    from frictionsim.experiments.common.loading import load_logs
    from frictionsim.experiments.common.output import table, write_json

    logs = load_logs(args.raw, processed=False, show_progress=not args.no_progress)
    report = jitter_report(logs)
    headers = ["log", "periods", "mean (ms)", "σ (ms)", "p1", "p50", "p99", "max (ms)",
               f"late (> {LATE:g}× median)", "worst gap at (s)"]

    def row(name: str, s: dict) -> list:
        worst = s.get("worst_gaps", [])
        return [name, s["periods"], f"{s['mean_ms']:.3f}", f"{s['std_ms']:.3f}",
                f"{s['p1_ms']:.2f}", f"{s['p50_ms']:.2f}", f"{s['p99_ms']:.2f}",
                f"{s['max_ms']:.2f}", s["late"], f"{worst[0]['at_s']:.3f}" if worst else ""]

    rows = [row(name, s) for name, s in report["per_log"].items()]
    rows.append(row("all", report["overall"]))
    print(table(headers, rows))
    if args.json:
        write_json(args.json, report)
    if args.plot:
        from frictionsim.experiments.analysis.jitter import plot_jitter

        plot_jitter(logs, args.plot)
    return 0
