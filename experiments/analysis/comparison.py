"""Every parameter set against every log (``frictionsim compare``)."""

from __future__ import annotations

from pathlib import Path

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.common.output import table
from frictionsim.learned_files import LearnedActuator
from frictionsim.logs import Log
from frictionsim.params import ParameterSet
from frictionsim.solvers.batch import PackedLogs
from frictionsim.solvers.errors import non_finite


def compare(params: dict[str, ParameterSet | LearnedActuator], logs: list[Log]) -> dict:
    """``{label: {"mean", "std", "per_log": {log name: MAE}}}`` (rad) of every parameter set or
    learned actuator (closed-loop rollouts of its network).

    Raises :class:`~frictionsim.solvers.errors.SimulationError` naming the log and the parameters
    when a simulation overflows.
    """
    results = {}
    packed: dict[str, PackedLogs] = {}
    for label, p in params.items():
        if p.actuator not in packed:
            packed[p.actuator] = PackedLogs.from_logs(logs, p.actuator)
        if isinstance(p, LearnedActuator):
            from frictionsim.solvers.learned_rollout import packed_errors, physics_theta

            errors = packed_errors(packed[p.actuator], physics_theta(p), p.net)
        else:
            errors = packed[p.actuator].errors(p.theta())[0]
        non_finite(errors, packed[p.actuator].names, p.source or label)
        results[label] = {
            "mean": float(errors.mean()),
            "std": float(errors.std()),
            "per_log": {name: float(e) for name, e in zip(packed[p.actuator].names, errors)},
        }
    return results


def labels(files: list[Path]) -> list[str]:
    """A distinct label per parameter file: its stem, prefixed with as many parent folders as
    it takes to tell apart files of the same name (``xl330/m1``, ``mx64/m1``)."""
    depth = {f: 0 for f in files}

    def label(f: Path) -> str:
        parts = f.resolve().with_suffix("").parts
        return "/".join(parts[len(parts) - 1 - depth[f]:])

    while True:
        names = [label(f) for f in files]
        clash = {n for n in names if names.count(n) > 1}
        if not clash:
            return names
        deeper = [f for f in files if label(f) in clash]
        if all(depth[f] >= len(f.resolve().parts) - 1 for f in deeper):
            raise ConfigurationError(f"parameter file {deeper[0]} is given twice")
        for f in deeper:
            depth[f] += 1


def comparison_table(results: dict) -> str:
    """Mean ± std, best and worst per-log MAE (mrad) of each parameter set."""
    rows = [
        [label, f"{1e3 * r['mean']:.2f} ± {1e3 * r['std']:.2f}",
         f"{1e3 * min(r['per_log'].values()):.2f}", f"{1e3 * max(r['per_log'].values()):.2f}"]
        for label, r in results.items()
    ]
    return table(["parameters", "MAE mean ± std (mrad)", "best", "worst"], rows)
