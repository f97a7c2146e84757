"""``frictionsim process``: resample raw logs at a fixed dt (docs/model.md §6)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.common.output import counted
from frictionsim.experiments.runner.arguments import add_overwrite_argument, add_progress_argument

DESCRIPTION = (
    "Resample every raw log of RAW_DIR at a fixed period (docs/model.md §6: sample times "
    "numpy.arange(0, t_last, dt), linear interpolation, torque_enable thresholded at 0.5) "
    "and write them, same file names, to OUT_DIR. Before resampling, the load register is "
    "decoded as signed 16-bit (--raw-load: as stored), encoder glitches are reported "
    "(--glitches drop|repair handles them) and --window trims; a header vin the logged supply "
    "contradicts is warned about. An output never replaces an input, nor an "
    "existing file unless --overwrite. Bad logs are reported and skipped; the exit code is 1 "
    "if any failed."
)
DEFAULT_DT = 0.005


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("raw_dir", type=Path, help="directory of raw logs (*.json) or one raw log")
    p.add_argument("out_dir", type=Path,
                   help="directory to write the processed logs to (not the raw logs' own)")
    p.add_argument("--dt", type=float, default=DEFAULT_DT,
                   help=f"resampling period in seconds (default {DEFAULT_DT})")
    p.add_argument("--glitches", choices=("keep", "drop", "repair"), default="keep",
                   help="encoder glitches (position jumps over 0.5 rad within 5 ms), always "
                        "reported per log and time: keep them (default), drop their raw "
                        "entries, or repair them (position interpolated across)")
    p.add_argument("--window", nargs=2, type=float, metavar=("START", "END"),
                   help="keep only the raw entries between START and END seconds (timestamps "
                        "then count from START)")
    p.add_argument("--raw-load", action="store_true", dest="raw_load",
                   help="interpolate the load field as stored (unsigned 16-bit), as the "
                        "reference tool does, instead of decoding it as signed first")
    add_overwrite_argument(p)
    add_progress_argument(p)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def plan_outputs(inputs: list[Path], out_dir: Path, overwrite: bool) -> list[Path]:
    """The processed log of each input, checked before anything is written.

    Refused, whatever ``overwrite`` says: an output that is one of the inputs (the
    raw log would be replaced by its processed version), two inputs with one file
    name, an output folder that is a file. Refused without ``overwrite``: an
    output that exists.
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigurationError(f"{out_dir} is a file; the output must be a directory")
    outputs = [out_dir / path.name for path in inputs]
    for out in outputs:
        clash = next((i for i in inputs if _same_file(out, i)), None)
        if clash is not None:
            raise ConfigurationError(
                f"{out} would overwrite the input log {clash}: write the processed logs to "
                "another directory (the raw logs are the recording; they are never replaced)"
            )
    names = [o.name for o in outputs]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise ConfigurationError(f"two input logs are named {duplicate}; their outputs would collide")
    existing = [o for o in outputs if o.exists()]
    if existing and not overwrite:
        shown = ", ".join(o.name for o in existing[:5]) + (" …" if len(existing) > 5 else "")
        raise ConfigurationError(
            f"{len(existing)} of the {len(outputs)} processed logs exist in {out_dir} ({shown}); "
            "pass --overwrite to replace them, or choose another output directory"
        )
    return outputs


def clean(raw, args: argparse.Namespace) -> tuple:
    """A raw log trimmed, its load decoded and its glitches handled (docs/model.md §9 data quality):
    (the cleaned log, the warnings to print)."""
    from frictionsim.log_quality import (
        decode_load,
        drop_glitches,
        find_glitches,
        repair_glitches,
        trim,
    )

    notes = []
    if not args.raw_load:
        raw, wrapped = decode_load(raw)
    glitches = find_glitches(raw)
    notes += [g.describe(raw.name) + {"keep": ", kept", "drop": ", dropped",
                                      "repair": ", repaired"}[args.glitches]
              for g in glitches]
    if glitches and args.glitches == "drop":
        raw = drop_glitches(raw, glitches)
    elif glitches and args.glitches == "repair":
        raw = repair_glitches(raw, glitches)
    if args.window:  # after the glitches: they are reported in the recording's own time
        raw = trim(raw, *args.window)
    return raw, notes


def run(args: argparse.Namespace) -> int:
    from frictionsim.experiments.common.progress import progress
    from frictionsim.log_quality import supply_mismatch, supply_summary
    from frictionsim.logs import LogError, json_files, load_log, process, save_log

    if not args.dt > 0:
        raise ConfigurationError(f"--dt must be positive, got {args.dt}")
    files = json_files([args.raw_dir])
    outputs = plan_outputs(files, args.out_dir, args.overwrite)
    failed = []
    bar = progress(list(zip(files, outputs)), desc="processing", unit="log",
                   enabled=not args.no_progress, minimum=2)
    mismatches = []
    for path, target in bar:
        try:
            raw, notes = clean(load_log(path), args)
            for line in notes:
                bar.write(f"warning: {line}", file=sys.stderr)
            mismatch = supply_mismatch(raw)
            if mismatch:
                mismatches.append(mismatch)
            save_log(target, process(raw, args.dt))
        except LogError as e:
            failed.append(str(e))
            bar.write(f"error: {e}", file=sys.stderr)
    summary = supply_summary(mismatches)
    if summary:
        print(f"warning: {summary}", file=sys.stderr)
    print(f"processed {len(files) - len(failed)} of {counted(len(files), 'log')} at dt = {args.dt} s "
          f"into {args.out_dir}")
    return 1 if failed else 0
