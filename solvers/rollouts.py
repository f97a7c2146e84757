"""Python-level rollouts of whole logs: names at the edges, compiled kernels inside."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from frictionsim.logs import Log
from frictionsim.params import ParameterSet
from solvers.fixed_step import rollout


@dataclass(frozen=True)
class Rollout:
    """A simulated log: time (s), simulated and logged position (rad), simulated velocity."""

    log: Log
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    q_logged: np.ndarray

    @property
    def error(self) -> np.ndarray:
        return self.q - self.q_logged

    @property
    def mae(self) -> float:
        """Mean absolute position error (rad), SPEC §5."""
        return float(np.mean(np.abs(self.error)))


def simulate(log: Log, params: ParameterSet) -> Rollout:
    """Roll a processed log out with a parameter set (SPEC §5)."""
    bench = log.bench(params.actuator)
    goal = log.column("goal_position")
    enable = log.column("torque_enable")
    position = log.column("position")
    q = np.empty_like(goal)
    v = np.empty_like(goal)
    v0 = float(log.entries[0].get("speed", 0.0))
    rollout(goal, enable, position[0], v0, params.theta(), bench, log.dt, q, v)
    t = np.arange(len(goal)) * log.dt
    return Rollout(log, t, q, v, position)
