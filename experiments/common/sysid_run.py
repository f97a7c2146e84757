"""One ``mujoco.sysid`` least-squares fit, as ``run vs-mujoco`` makes them on the bench and on
robots: box-bounded Levenberg–Marquardt with finite-difference Jacobians (its ``mujoco``
backend), the residual a function of the parameter vector."""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable

import numpy as np


def sysid_fit(space: list[tuple[str, float, float, float]],
              residual_of: Callable[[np.ndarray], np.ndarray], max_iters: int,
              progress: bool = False) -> tuple[np.ndarray, float]:
    """Minimise ½‖residual_of(x)‖² over ``space`` ((name, start, lower, upper) per parameter)
    from the starts; returns the best x and the seconds. ``progress``: let the backend print
    its iterations (it prints them whatever its own verbose flag says)."""
    from absl import logging as absl_logging
    from mujoco import sysid

    params = sysid.ParameterDict()
    for name, start, lower, upper in space:
        params.add(sysid.Parameter(name, nominal=start, min_value=lower, max_value=upper))

    def residual_fn(x, _params):
        if x.ndim == 1:
            return [residual_of(x)], None, None
        # the Jacobian's columns, one candidate each
        return [np.stack([residual_of(x[:, j]) for j in range(x.shape[1])], axis=1)], None, None

    absl_logging.set_verbosity(absl_logging.WARNING)
    start = time.perf_counter()
    quiet = contextlib.nullcontext() if progress else contextlib.redirect_stdout(io.StringIO())
    with quiet:
        best, _ = sysid.optimize(initial_params=params, residual_fn=residual_fn,
                                 optimizer="mujoco", verbose=False, max_iters=max_iters)
    return np.asarray(best.as_vector(), dtype=float), time.perf_counter() - start
