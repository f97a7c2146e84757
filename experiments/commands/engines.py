"""``frictionsim run engines``: every engine on the bench pendulum, the SO-101 and a biped:
deviation from the Numba fixed step, drift of a held joint, cost per environment-step with and
without the servos, kernel launches, compile time."""

from __future__ import annotations

import argparse

from frictionsim.experiments.robots.engines import ENGINES, SETUPS, engines_table
from frictionsim.experiments.runner.arguments import JSON, add_output_argument, add_progress_argument

#: The numbers of worlds the batched engines are timed at unless --envs says.
DEFAULT_ENVS = (1, 64)

DESCRIPTION = (
    "Run each engine (fixed_step, mujoco: the CPU adapter, mjlab: MuJoCo Warp, mjx: MJX, both "
    "with the servos' Warp kernel) on the bench pendulum, the SO-101 arm and a 20-dof biped "
    "(batched engines only): how far its motion lands from the Numba fixed step, how far a "
    "joint the friction budget holds drifts in 2 s, the time per environment-step with and "
    "without the servos (alternated in one process) for each number of worlds, the kernel "
    "launches of a physics step, and the compile time. mjlab needs MuJoCo Warp (the extra "
    "mjlab, or warp-lang and mujoco-warp), mjx the extra jax; --device cuda needs a GPU."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES),
                   help="engines to run (default all)")
    p.add_argument("--setups", nargs="+", choices=SETUPS, default=None,
                   help="the bench pendulum, the SO-101 arm, the built-in 20-dof biped (batched "
                        "engines only: it stands on a floor) (default all)")
    p.add_argument("--device", default="cpu", metavar="cpu|cuda",
                   help="where the batched engines run (default cpu): MuJoCo Warp's device; "
                        "MJX runs on JAX's default device, which must be this one")
    p.add_argument("--envs", nargs="+", type=int, default=None, metavar="N",
                   help="numbers of worlds to time the batched engines at (default "
                        f"{' '.join(map(str, DEFAULT_ENVS))})")
    p.add_argument("--seconds", type=float, default=2.0,
                   help="simulated seconds of each motion and hold (default 2)")
    p.add_argument("--params", default=None, metavar="FILE",
                   help="the SO-101's servos: a robot parameter file (robot identify); default "
                        "the sts3215_12v's default M6")
    add_output_argument(p, "--json", JSON, 'write {"rows": [{"engine", "setup", "deviation_max_rad", '
                        '"hold_drift_rad", "compile_seconds", "timing": [{"worlds", '
                        '"with_servos_s", "without_servos_s"}]}]} here')
    add_progress_argument(p)


def run(args: argparse.Namespace) -> int:
    from frictionsim.errors import ConfigurationError
    from frictionsim.experiments.common.output import table, write_json
    from frictionsim.limits import check_count
    from frictionsim.solvers.engines import get_engine

    for n in args.envs or ():
        check_count("--envs", n, 1, 100_000)
    if not 0.1 <= args.seconds <= 60:
        raise ConfigurationError(f"--seconds must be in [0.1, 60], got {args.seconds:g}")
    batched = [e for e in args.engines if get_engine(e).batched]
    if args.device != "cpu" and not batched:
        raise ConfigurationError(f"--device {args.device}: only the batched engines (mjlab, mjx) "
                                 "run off the CPU, and none is among --engines")
    if args.envs is not None and not batched:
        raise ConfigurationError("--envs: only the batched engines (mjlab, mjx) run several "
                                 "worlds, and none is among --engines")
    if args.setups is not None and "biped" in args.setups and not batched:
        raise ConfigurationError("--setups biped: the biped runs on the batched engines only "
                                 "(mjlab, mjx: it stands on a floor), and none is among --engines")
    setups = list(SETUPS) if args.setups is None else list(args.setups)
    if args.params is not None and "so101" not in setups:
        raise ConfigurationError("--params gives the SO-101's servos: add so101 to --setups")
    rows = engines_table(list(args.engines), setups, sorted(set(args.envs or DEFAULT_ENVS)),
                         args.device, args.seconds, args.params,
                         progress=(lambda m: print(m, flush=True)) if not args.no_progress
                         else (lambda m: None))
    lines = []
    for r in rows:
        deviation = r.get("deviation_max_rad")
        fixed = [r["setup"], r["engine"], r["device"]]
        accuracy = ["–" if deviation is None else f"{1e3 * deviation:.4f}",
                    f"{r['hold_drift_rad']:.2e}"]
        # an engine of one world is not timed at other numbers of worlds: its accuracy stands
        for t in r["timing"] or [None]:
            bare = None if t is None else t["without_servos_s"]
            timing = ["–"] * 3 if t is None else [
                f"{1e6 * t['with_servos_s']:.2f}", "–" if bare is None else f"{1e6 * bare:.2f}",
                "–" if bare is None else f"{t['with_servos_s'] / bare:.2f}"]
            lines.append([*fixed, "–" if t is None else t["worlds"], *accuracy, *timing,
                          f"{r['compile_seconds']:.1f}"])
    print(table(["set-up", "engine", "device", "worlds", "vs fixed step, max (mrad)",
                 "held joint drift (rad)", "µs/env-step", "without servos", "ratio",
                 "first run (s)"], lines, "<<<>>>>>>>"))
    for r in rows:
        if r.get("launches"):
            launches = r["launches"]
            print(f"{r['setup']}, {r['engine']}: {launches['servos']} kernel launch(es) of the "
                  f"servos per physics step, {launches['engine']} of the engine's own step")
    if args.json:
        write_json(args.json, {"rows": rows, "device": args.device})
    return 0
