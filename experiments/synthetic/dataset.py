"""The built-in data set: virtual-bench recordings of an MX-64-like servo with M6 friction."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import numpy as np

from frictionsim import layout, schema, trajectories
from frictionsim.bench_setup import BenchSetup
from frictionsim.experiments.common.progress import progress
from frictionsim.experiments.synthetic.virtual_bench import SensorModel, record
from frictionsim.logs import Log, process, save_log
from frictionsim.params import ParameterSet

#: Ground truth of the demo: an MX-64-like servo whose gearbox follows M6.
GROUND_TRUTH = ParameterSet(
    "m6",
    "mx64",
    {
        "q_offset": 0.01,
        "kt": 2.0,
        "R": 3.0,
        "armature": 0.012,
        "friction_base": 0.04,
        "friction_stribeck": 0.06,
        "load_friction_motor": 0.06,
        "load_friction_external": 0.02,
        "load_friction_motor_stribeck": 0.1,
        "load_friction_external_stribeck": 0.05,
        "load_friction_motor_quad": 0.004,
        "load_friction_external_quad": 0.002,
        "dtheta_stribeck": 0.3,
        "alpha": 1.8,
        "friction_viscous": 0.08,
    },
    source="ground truth (mx64, m6)",
)

#: A Coulomb–viscous set as a physics engine would ship it: the true motor, the
#: friction of the servo at rest without load lumped into one Coulomb term.
NAIVE_M1 = ParameterSet(
    "m1",
    "mx64",
    {
        "q_offset": 0.0,
        "kt": 2.0,
        "R": 3.0,
        "armature": 0.012,
        "friction_base": 0.1,
        "friction_viscous": 0.08,
    },
    source="naive Coulomb-viscous (mx64, m1)",
)

GAINS = (16.0, 32.0, 64.0)
SETUPS = (BenchSetup(mass=0.5, length=0.10, kp=GAINS[0], arm_mass=0.05),
          BenchSetup(mass=1.0, length=0.15, kp=GAINS[0], arm_mass=0.08))


def restrict(params: ParameterSet, model: str) -> ParameterSet:
    """The same servo under a simpler model: the values that model has, others dropped."""
    names = schema.parameters(model, params.actuator)
    return ParameterSet(model, params.actuator, {k: v for k, v in params.values.items() if k in names})


def population(model: str, size: int) -> np.ndarray:
    """``size`` θ vectors of ``model`` spread around the ground truth as a fitter's population
    would be: every motor and friction coefficient times a uniform factor in [0.8, 1.2]
    (seed 0), for the speed measurements."""
    thetas = np.repeat(restrict(GROUND_TRUTH, model).theta()[None, :], size, axis=0)
    perturbed = layout.MOTOR_AND_FRICTION
    thetas[:, perturbed] *= np.random.default_rng(0).uniform(
        0.8, 1.2, size=(size, perturbed.stop - perturbed.start))
    return thetas


def dataset(
    params: ParameterSet = GROUND_TRUTH,
    setups: tuple[BenchSetup, ...] = SETUPS,
    gains: tuple[float, ...] = GAINS,
    trajectory_names: tuple[str, ...] = trajectories.IDENTIFICATION,
    sensors: SensorModel = SensorModel(),
    seed: int = 0,
    show_progress: bool = False,
) -> list[Log]:
    """Raw logs of every set-up × gain × trajectory, named ``m{mass}_l{length}_kp{kp}_{traj}``."""
    combos = list(itertools.product(setups, gains, trajectory_names))
    logs = []
    bar = progress(combos, desc="virtual bench", unit="log", enabled=show_progress)
    for n, (setup, kp, traj) in enumerate(bar):
        log = record(params, replace(setup, kp=kp), traj, sensors, seed=seed + n)
        log.path = Path(f"m{setup.mass:g}_l{setup.length:g}_kp{kp:g}_{traj}.json")
        logs.append(log)
    return logs


def write_dataset(raw: list[Log], out_dir: Path, dt: float = 0.005) -> list[Log]:
    """Write raw logs to ``out_dir/raw`` and their processed versions to ``out_dir/processed``."""
    processed = []
    for log in raw:
        save_log(out_dir / "raw" / log.name, log)
        p = process(log, dt)
        p.path = save_log(out_dir / "processed" / log.name, p)
        processed.append(p)
    return processed
