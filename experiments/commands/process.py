"""``frictionsim process``: resample raw logs at a fixed dt (SPEC §6)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from experiments.runner.arguments import add_overwrite_argument, add_progress_argument

DESCRIPTION = (
    "Resample every raw log of RAW_DIR at a fixed period (SPEC §6: sample times "
    "numpy.arange(0, t_last, dt), linear interpolation, torque_enable thresholded at 0.5) "
    "and write them, same file names, to OUT_DIR. An output never replaces an input, nor an "
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
        raise ValueError(f"{out_dir} is a file; the output must be a directory")
    outputs = [out_dir / path.name for path in inputs]
    for out in outputs:
        clash = next((i for i in inputs if _same_file(out, i)), None)
        if clash is not None:
            raise ValueError(
                f"{out} would overwrite the input log {clash}: write the processed logs to "
                "another directory (the raw logs are the recording; they are never replaced)"
            )
    names = [o.name for o in outputs]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise ValueError(f"two input logs are named {duplicate}; their outputs would collide")
    existing = [o for o in outputs if o.exists()]
    if existing and not overwrite:
        shown = ", ".join(o.name for o in existing[:5]) + (" …" if len(existing) > 5 else "")
        raise ValueError(
            f"{len(existing)} of the {len(outputs)} processed logs exist in {out_dir} ({shown}); "
            "pass --overwrite to replace them, or choose another output directory"
        )
    return outputs


def run(args: argparse.Namespace) -> int:
    from experiments.common.progress import progress
    from frictionsim.logs import LogError, json_files, load_log, process, save_log

    if not args.dt > 0:
        raise ValueError(f"--dt must be positive, got {args.dt}")
    files = json_files([args.raw_dir])
    outputs = plan_outputs(files, args.out_dir, args.overwrite)
    failed = []
    bar = progress(list(zip(files, outputs)), desc="processing", unit="log",
                   enabled=not args.no_progress, minimum=2)
    for path, target in bar:
        try:
            save_log(target, process(load_log(path), args.dt))
        except LogError as e:
            failed.append(str(e))
            bar.write(f"error: {e}", file=sys.stderr)
    print(f"processed {len(files) - len(failed)} of {len(files)} logs at dt = {args.dt} s "
          f"into {args.out_dir}")
    return 1 if failed else 0
