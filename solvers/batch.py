"""Batched rollouts: many parameter vectors × many logs in parallel threads.

Logs are packed once into flat arrays (:class:`PackedLogs`).
:meth:`PackedLogs.errors` evaluates every (candidate, log) pair with the lock-step
kernels of :mod:`frictionsim.solvers.lockstep` (many candidates through one log together, SIMD where
the configuration allows), which give the losses of the scalar reference
:func:`batched_errors` (every pair one :func:`frictionsim.solvers.fixed_step.rollout_error` in a
``prange``) to about 1e-15 relative, bit for bit where they do not vectorise.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numba import njit, prange

from frictionsim.errors import ConfigurationError
from frictionsim.layout import ARMATURE, DT, SUPPLY, THETA_SIZE
from frictionsim.logs import Log
from frictionsim.pendulum import load_inertia
from frictionsim.solvers.errors import SimulationError
from frictionsim.solvers.fixed_step import log_error
from frictionsim.solvers.lockstep import lockstep_errors


@dataclass(frozen=True)
class PackedLogs:
    """Logs as contiguous arrays: log j spans ``offsets[j]:offsets[j+1]``.

    ``bench[j]`` is log j's bench vector (:mod:`frictionsim.layout`), ``v0[j]``
    its initial speed (0 when the log has no ``speed``); ``supply`` the logged
    ``input_volts`` (NaN where a log has none; used with the ``supply`` extension).
    """

    goal: np.ndarray
    enable: np.ndarray
    supply: np.ndarray
    position: np.ndarray
    offsets: np.ndarray
    v0: np.ndarray
    bench: np.ndarray
    names: tuple[str, ...]

    @property
    def n_logs(self) -> int:
        return len(self.names)

    @property
    def n_steps(self) -> int:
        return int(self.offsets[-1])

    @cached_property
    def load_inertia(self) -> np.ndarray:
        """I_load of each log's pendulum (kg·m²)."""
        return np.array([load_inertia(b) for b in self.bench])

    @classmethod
    def from_logs(cls, logs: list[Log], actuator: str) -> PackedLogs:
        """Pack processed logs for an actuator (which decides the vin/damping defaults)."""
        lengths = [len(log.entries) for log in logs]
        offsets = np.zeros(len(logs) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum(lengths)
        return cls(
            goal=np.concatenate([log.column("goal_position") for log in logs]),
            enable=np.concatenate([log.column("torque_enable") for log in logs]),
            supply=np.concatenate([log.supply() for log in logs]),
            position=np.concatenate([log.column("position") for log in logs]),
            offsets=offsets,
            v0=np.array([float(log.entries[0].get("speed", 0.0)) for log in logs]),
            bench=np.ascontiguousarray([log.bench(actuator) for log in logs]),
            names=tuple(log.name for log in logs),
        )

    def errors(self, thetas: np.ndarray, kernel: str = "lockstep") -> np.ndarray:
        """MAE (rad) of every candidate on every log: shape (n_candidates, n_logs).

        ``kernel``: ``"lockstep"`` (:mod:`frictionsim.solvers.lockstep`, the fast path) or ``"scalar"``
        (:func:`batched_errors`, one pair per thread iteration, libm exact); the two agree to
        about 1e-15 relative (:mod:`frictionsim.solvers.lockstep` says where bits differ).

        A pair whose rollout overflows gives a non-finite MAE (the caller decides);
        a joint with no positive inertia raises :class:`~frictionsim.solvers.errors.SimulationError`
        naming the log, since the step would divide by zero.
        """
        thetas = np.ascontiguousarray(np.atleast_2d(thetas), dtype=np.float64)
        if thetas.shape[1] != THETA_SIZE:
            raise ConfigurationError(f"theta vectors must have length {THETA_SIZE}, got {thetas.shape[1]}")
        inertia = self.load_inertia[None, :] + thetas[:, ARMATURE, None]
        if not (inertia > 0).all():
            j = int(np.argmax((inertia <= 0).any(axis=0)))
            raise SimulationError(
                f"{self.names[j]}: the joint's inertia m·L² + m_arm·L²/3 + armature is not "
                f"positive (load inertia {self.load_inertia[j]:g} kg·m², armature "
                f"{thetas[:, ARMATURE].min():g} kg·m²); nothing can be simulated"
            )
        if (thetas[:, SUPPLY] > 0).any():
            missing = [name for name, a, b in zip(self.names, self.offsets[:-1], self.offsets[1:])
                       if not (np.isfinite(self.supply[a:b]) & (self.supply[a:b] > 0)).all()]
            if missing:
                raise SimulationError(f"{missing[0]}: the supply extension needs a positive "
                                      "logged input_volts in every entry, and this log lacks "
                                      "some")
        out = np.empty((thetas.shape[0], self.n_logs))
        args = (thetas, self.goal, self.enable, self.supply, self.position, self.offsets,
                self.v0, self.bench, out)
        if kernel == "lockstep":
            lockstep_errors(*args)
        elif kernel == "scalar":
            batched_errors(*args)
        else:
            raise ConfigurationError(f"kernel must be 'lockstep' or 'scalar', got {kernel!r}")
        return out


@njit(cache=True, parallel=True)
def batched_errors(
    thetas: np.ndarray,
    goal: np.ndarray,
    enable: np.ndarray,
    supply: np.ndarray,
    position: np.ndarray,
    offsets: np.ndarray,
    v0: np.ndarray,
    bench: np.ndarray,
    out: np.ndarray,
) -> None:
    """out[i, j] = rollout MAE (rad) of candidate ``thetas[i]`` on packed log j."""
    n_candidates = thetas.shape[0]
    n_logs = offsets.shape[0] - 1
    for pair in prange(n_candidates * n_logs):
        i = pair // n_logs
        j = pair % n_logs
        a = offsets[j]
        b = offsets[j + 1]
        out[i, j] = log_error(
            goal[a:b], enable[a:b], supply[a:b], position[a:b], v0[j], thetas[i], bench[j],
            bench[j, DT]
        )
