"""Running identification on a Dask distributed cluster (``identify --dask ADDRESS``).

Each model is one task; a richer model's task depends on the task of the
simpler model it starts from, so the chain M1 → M4 → M6 keeps its order while
independent models (M2 and M3, say) run on different workers. Restarts run
inside their model's task. The training logs are scattered to the workers
once. Workers save the best-so-far parameter files to the output directory,
which must therefore be on a file system they share with the client (always
true of a ``LocalCluster``).
"""

from __future__ import annotations

import uuid
from pathlib import Path

from experiments.fitter import FitResult, FitSettings
from frictionsim.params import ParameterSet
from solvers.batch import PackedLogs


def _fit_task(model: str, actuator: str, fixed: dict, packed: PackedLogs, settings: FitSettings,
              out: str, init: ParameterSet | None,
              ancestor: tuple[FitResult, Path] | None) -> tuple[FitResult, Path]:
    from experiments.identify import fit_one, start_for

    fitted = {ancestor[0].params.model: ancestor[0].params} if ancestor else {}
    return fit_one(model, actuator, fixed, packed, settings, Path(out),
                   start_for(model, fitted, init), progress=False)


def fit_on_dask(address: str, models: list[str], actuator: str, fixed: dict,
                packed: PackedLogs, settings: FitSettings, out: Path,
                init: ParameterSet | None, chain: bool = True) -> dict[str, tuple[FitResult, Path]]:
    """Fit ``models`` on the scheduler at ``address``; returns {model: (result, params file)}."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise ValueError("--dask needs the 'dask' extra: pip install 'frictionsim[dask]'") from None
    from experiments.search_space import CONTAINS

    with Client(address, timeout="10s") as client:
        data = client.scatter(packed, broadcast=True)
        run = uuid.uuid4().hex[:8]
        futures = {}
        for model in models:
            ancestor = None
            if chain:
                ancestor = next((futures[s] for s in CONTAINS[model] if s in futures), None)
            futures[model] = client.submit(
                _fit_task, model, actuator, fixed, data, settings, str(out.resolve()), init,
                ancestor, key=f"identify-{model}-{run}", pure=False,
            )
        names = {f.key: m for m, f in futures.items()}
        for future in as_completed(list(futures.values())):
            result, _ = future.result()
            print(f"{names[future.key]}: {1e3 * result.loss:.2f} mrad after "
                  f"{result.evaluations} evaluations ({result.seconds:.1f} s on a worker)")
        return {m: futures[m].result() for m in models}
