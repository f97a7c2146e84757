"""Python-level rollouts of whole logs: names at the edges, compiled kernels inside."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from frictionsim.layout import BACKLASH, SUPPLY
from frictionsim.logs import Log
from frictionsim.params import ParameterSet
from frictionsim.solvers.errors import SimulationError, check_inertia
from frictionsim.solvers.fixed_step import check_log_arrays, rollout, rollout_loop


@dataclass(frozen=True)
class Rollout:
    """A simulated log: time (s), simulated and logged position (rad), simulated velocity."""

    log: Log
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    q_logged: np.ndarray
    #: with ``backlash``: the motor side of the gear's gap, p = q + δ (rad, q the physical
    #: angle); None otherwise
    motor_side: np.ndarray | None = None

    @property
    def error(self) -> np.ndarray:
        return self.q - self.q_logged

    @property
    def mae(self) -> float:
        """Mean absolute position error (rad), docs/model.md §5."""
        return float(np.mean(np.abs(self.error)))


class RolloutInputs(NamedTuple):
    """A log's columns and the flat vectors, as the compiled rollouts take them."""

    goal: np.ndarray
    enable: np.ndarray
    supply: np.ndarray
    position: np.ndarray
    v0: float
    theta: np.ndarray
    bench: np.ndarray
    what: str  # the parameters, for messages


def rollout_inputs(log: Log, params: ParameterSet) -> RolloutInputs:
    """The inputs of a rollout of ``log`` with ``params``; SimulationError naming both when
    the joint has no inertia or the supply extension lacks the logged supply."""
    bench = log.bench(params.actuator)
    theta = params.theta()
    what = params.source or f"{params.model}/{params.actuator}"
    check_inertia(theta, bench, f"{log.name} with {what}")
    supply = log.supply()
    if theta[SUPPLY] > 0 and not (np.isfinite(supply) & (supply > 0)).all():
        k = int(np.argmax(~(np.isfinite(supply) & (supply > 0))))
        raise SimulationError(f"{log.name}: the supply extension needs a positive input_volts "
                              f"in every entry; entry {k} has "
                              f"{'none' if not np.isfinite(supply[k]) else supply[k]}")
    return RolloutInputs(log.column("goal_position"), log.column("torque_enable"), supply,
                         log.column("position"), float(log.entries[0].get("speed", 0.0)),
                         theta, bench, what)


def check_finite(log: Log, q: np.ndarray, what: str) -> None:
    """SimulationError when the simulated positions overflowed, with where it began."""
    if not np.isfinite(q).all():
        k = int(np.argmax(~np.isfinite(q)))
        raise SimulationError(f"{log.name}: simulating it with {what} gives a non-finite position "
                              f"from t = {k * log.dt:g} s on (the state overflowed); check the "
                              "log's header and the parameters for absurd values")


def simulate(log: Log, params: ParameterSet) -> Rollout:
    """Roll a processed log out with a parameter set (docs/model.md §5).

    Raises :class:`~frictionsim.solvers.errors.SimulationError` naming the log and the
    parameters when the joint has no inertia or the state overflows.
    """
    x = rollout_inputs(log, params)
    q = np.empty_like(x.goal)
    v = np.empty_like(x.goal)
    motor_side = None
    if x.theta[BACKLASH] > 0.0:  # the same pass keeps the motor side too (for figures)
        motor_side = np.empty_like(x.goal)
        check_log_arrays(x.goal, x.enable, x.supply, x.theta, x.bench, log.dt)
        rollout_loop(x.goal, x.enable, x.supply, x.position[0], x.v0, x.theta, x.bench, log.dt,
                     1, q, v, motor_side)
    else:
        rollout(x.goal, x.enable, x.supply, x.position[0], x.v0, x.theta, x.bench, log.dt, q, v)
    check_finite(log, q, x.what)
    t = np.arange(len(x.goal)) * log.dt
    return Rollout(log, t, q, v, x.position, motor_side)
