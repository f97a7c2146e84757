"""``frictionsim process``: resample raw logs at a fixed dt (SPEC §6)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tqdm import tqdm

from experiments.registry import register
from frictionsim.logs import DEFAULT_DT, LogError, json_files, load_log, process, save_log


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("raw_dir", type=Path, help="directory of raw logs (*.json) or one raw log")
    p.add_argument("out_dir", type=Path, help="directory to write the processed logs to")
    p.add_argument("--dt", type=float, default=DEFAULT_DT,
                   help=f"resampling period in seconds (default {DEFAULT_DT})")


def run(args: argparse.Namespace) -> int:
    if not args.dt > 0:
        raise ValueError(f"--dt must be positive, got {args.dt}")
    files = json_files([args.raw_dir])
    failed = []
    for path in tqdm(files, desc="processing", unit="log", disable=len(files) < 2):
        try:
            out = save_log(args.out_dir / path.name, process(load_log(path), args.dt))
        except LogError as e:
            failed.append(str(e))
            tqdm.write(f"error: {e}", file=sys.stderr)
            continue
        tqdm.write(f"{path} -> {out}")
    print(f"processed {len(files) - len(failed)} of {len(files)} logs at dt = {args.dt} s")
    return 1 if failed else 0


register(
    "process",
    "resample raw logs at a fixed dt",
    "Resample every raw log of RAW_DIR at a fixed period (SPEC §6: sample times "
    "numpy.arange(0, t_last, dt), linear interpolation, torque_enable thresholded at 0.5) "
    "and write them, same file names, to OUT_DIR. Bad logs are reported and skipped; "
    "the exit code is 1 if any failed.",
    add_arguments,
    run,
    subcommand=True,
)
