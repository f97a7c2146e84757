"""Running identification on a Dask distributed cluster (``identify --dask ADDRESS``).

Each model is one task; a richer model's task depends on the task of the
simpler model it starts from, so the chain M1 → M4 → M6 keeps its order while
independent models (M2 and M3, say) run on different workers. Restarts run
inside their model's task. The training logs are scattered to the workers
once. Workers save the best-so-far parameter files to the output directory,
which must therefore be on a file system they share with the client (always
true of a ``LocalCluster``).

Nothing waits without a bound: the connection (a server that is not a Dask
scheduler never answers the handshake, and distributed's own timeout does not
cover that), the first worker, and any spell without workers while models are
pending each end in a ``TimeoutError`` saying what did not happen.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

from frictionsim import schema
from frictionsim.errors import ConfigurationError, FrictionsimError
from frictionsim.experiments.identification.fitter import FitResult, FitSettings
from frictionsim.experiments.identification.search_space import CONTAINS
from frictionsim.experiments.identification.starts import fit_model, start_for
from frictionsim.params import ParameterFileError, ParameterSet, load_params
from frictionsim.solvers.batch import PackedLogs

#: Seconds allowed for the scheduler to answer, for a first worker, and without any worker.
CONNECT_TIMEOUT = 10.0
WORKER_TIMEOUT = 60.0


def _fit_task(model: str, actuator: schema.Actuator, fixed: dict, packed: PackedLogs,
              settings: FitSettings, out: str, init: ParameterSet | None,
              saved: ParameterSet | None,
              ancestor: tuple[FitResult, Path] | None, scheme: str,
              extensions: tuple[str, ...] = ()) -> tuple[FitResult, Path]:
    # The worker is another process: it knows the built-in actuators, not the user's files.
    schema.ACTUATORS.register(actuator)
    fitted = {ancestor[0].params.model: ancestor[0].params} if ancestor else {}
    return fit_model(model, actuator.name, fixed, packed, settings, Path(out),
                     start_for(model, fitted, init, saved), progress=False, scheme=scheme,
                     extensions=extensions)


def connect(address: str, timeout: float = CONNECT_TIMEOUT):
    """A ``distributed.Client`` of the scheduler at ``address``, within ``timeout`` seconds."""
    try:
        from distributed import Client
    except ImportError:
        raise ConfigurationError("--dask needs the 'dask' extra: pip install 'frictionsim[dask]'") from None
    box: dict = {}

    def attempt() -> None:
        try:
            box["client"] = Client(address, timeout=f"{timeout}s")
        except Exception as e:  # reported below, in the caller's thread
            box["error"] = e

    thread = threading.Thread(target=attempt, name="dask-connect", daemon=True)
    thread.start()
    thread.join(timeout + 5.0)
    if thread.is_alive():
        raise TimeoutError(f"--dask {address}: no answer as a Dask scheduler within "
                           f"{timeout + 5.0:g} s (is a Dask scheduler listening there? "
                           "`dask scheduler` prints its tcp:// address)")
    if "error" in box:
        raise ConfigurationError(f"--dask {address}: cannot connect to a Dask scheduler "
                                 f"({type(box['error']).__name__}: {box['error']})")
    return box["client"]


def _wait_for_results(client, futures: dict, address: str, worker_timeout: float) -> None:
    """Print each model as it finishes; ``TimeoutError`` when no worker is left for too long."""
    from distributed import wait

    names = {f.key: m for m, f in futures.items()}
    pending = set(futures.values())
    no_worker_since = None
    while pending:
        try:
            done = wait(pending, timeout=2.0, return_when="FIRST_COMPLETED").done
        except TimeoutError:
            done = set()
        for future in done:
            result, _ = future.result()
            print(f"{names[future.key]}: {1e3 * result.loss:.2f} mrad after "
                  f"{result.evaluations} evaluations ({result.seconds:.1f} s on a worker)")
        pending -= done
        if not pending:
            break
        if client.scheduler_info().get("workers"):
            no_worker_since = None
        elif no_worker_since is None:
            no_worker_since = time.monotonic()
        elif time.monotonic() - no_worker_since > worker_timeout:
            unfinished = ", ".join(sorted(names[f.key] for f in pending))
            raise TimeoutError(f"--dask {address}: the scheduler has had no worker for "
                               f"{worker_timeout:g} s; models not finished: {unfinished} (their "
                               "best parameters so far, if any, are saved)")


class DaskLost(FrictionsimError, RuntimeError):
    """The Dask cluster failed under a fit (a killed worker or scheduler)."""


def fit_on_dask(address: str, models: list[str], actuator: str, fixed: dict,
                packed: PackedLogs, settings: FitSettings, out: Path,
                init: ParameterSet | None, chain: bool = True,
                earlier: dict[str, ParameterSet] | None = None,
                worker_timeout: float = WORKER_TIMEOUT, scheme: str = "reference",
                extensions: tuple[str, ...] = (),
                ) -> tuple[dict[str, tuple[FitResult, Path]], bool]:
    """Fit ``models`` on the scheduler at ``address``: ({model: (result, params file)},
    interrupted). On Ctrl-C, the models finished so far, and the best-so-far files the
    workers saved for the others (marked interrupted), are returned."""
    earlier = earlier or {}
    client = connect(address)
    try:
        try:
            client.wait_for_workers(1, timeout=worker_timeout)
        except TimeoutError:
            raise TimeoutError(f"--dask {address}: no worker joined the scheduler within "
                               f"{worker_timeout:g} s") from None
        data = client.scatter(packed, broadcast=True)
        run = uuid.uuid4().hex[:8]
        futures = {}
        for model in models:
            ancestor = None
            if chain:
                ancestor = next((futures[s] for s in CONTAINS[model] if s in futures), None)
            futures[model] = client.submit(
                _fit_task, model, schema.get_actuator(actuator), fixed, data, settings,
                str(out.resolve()), init,
                earlier.get(model), ancestor, scheme, extensions, key=f"identify-{model}-{run}",
                pure=False,
            )
        try:
            _wait_for_results(client, futures, address, worker_timeout)
            return {m: futures[m].result() for m in models}, False
        except KeyboardInterrupt:
            return _salvage(futures, models, out), True
        except (TimeoutError, ValueError, OSError):
            raise
        except Exception as e:  # a worker or the scheduler died: distributed's own errors
            saved = sorted(p.name for p in out.glob("m*.json")) if out.is_dir() else []
            raise DaskLost(f"--dask {address}: the cluster lost the work "
                           f"({type(e).__name__}: {e or 'no detail'}); parameters saved so far: "
                           f"{', '.join(saved) or 'none'} (rerun with --resume to continue)"
                           ) from None
    finally:
        try:
            client.close()
        except Exception:  # the scheduler is already gone
            pass


def _salvage(futures: dict, models: list[str], out: Path) -> dict[str, tuple[FitResult, Path]]:
    """After Ctrl-C: finished models as they are, unfinished ones from their saved files."""
    results = {}
    for model in models:
        future = futures[model]
        if future.status == "finished":
            results[model] = future.result()
            continue
        path = out / f"{model}.json"
        try:
            params = load_params(path)
        except ParameterFileError:
            continue
        results[model] = (FitResult(params, float("nan"), 0, 0.0, 0.0, 0, [], interrupted=True),
                          path)
    return results
