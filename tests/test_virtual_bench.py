"""The virtual bench: raw logs with realistic sensor effects, or exact ones."""

from __future__ import annotations

import math

import numpy as np
import pytest

from frictionsim import schema
from frictionsim.bench_setup import BenchSetup
from frictionsim.experiments.synthetic.dataset import GROUND_TRUTH, restrict
from frictionsim.experiments.synthetic.virtual_bench import SensorModel, record
from frictionsim.logs import process, validate
from frictionsim.params import ParameterSet
from frictionsim.solvers.rollouts import simulate

SETUP = BenchSetup(mass=0.5, length=0.1, kp=32.0, arm_mass=0.05)


@pytest.mark.parametrize("model", ["m1", "m4", "m6"])
def test_ideal_log_is_the_model_rollout(model):
    truth = restrict(GROUND_TRUTH, model)
    raw = record(truth, SETUP, "sin_sin", SensorModel.ideal())
    log = process(raw, 0.005)
    assert simulate(log, truth).mae < 1e-9
    other = truth.with_values(friction_base=2 * truth.values["friction_base"])
    assert simulate(log, other).mae > 1e-4


def test_realistic_sensors():
    raw = record(GROUND_TRUTH, SETUP, "lift_and_drop", SensorModel(), seed=3)
    validate(raw.to_dict(), "virtual")
    t = raw.column("timestamp")
    periods = np.diff(t)
    assert periods.min() > 0
    assert abs(periods.mean() - 0.005) < 2e-4
    assert periods.std() > 1e-4  # jitter is there
    counts = raw.column("position") / (2 * math.pi / 4096)
    assert np.allclose(counts, np.round(counts), atol=1e-6)
    speed_units = raw.column("speed") / schema.get_actuator("mx64").hardware.velocity_resolution
    assert np.allclose(speed_units, np.round(speed_units), atol=1e-6)
    volts = raw.column("input_volts")
    assert np.allclose(volts * 10, np.round(volts * 10), atol=1e-9)
    assert abs(volts.mean() - 15.0) < 0.1
    enable = raw.column("torque_enable")
    assert enable[t < 1.9].all() and not enable[t > 2.1].any()
    assert raw.header["motor"] == "mx64" and raw.header["trajectory"] == "lift_and_drop"


@pytest.mark.parametrize("actuator, rpm_per_unit, counts_per_turn",
                         [("sts3215", 60 / 4096, 4096), ("xl320", 0.111, 1228.8)])
def test_sensors_use_the_actuators_own_units(actuator, rpm_per_unit, counts_per_turn):
    raw = record(ParameterSet.defaults("m1", actuator), BenchSetup(0.3, 0.1, 32.0),
                 "sin_sin", SensorModel(), seed=3)
    speed_units = raw.column("speed") / (rpm_per_unit * 2 * math.pi / 60)
    assert np.allclose(speed_units, np.round(speed_units), atol=1e-6)
    counts = raw.column("position") / (2 * math.pi / counts_per_turn)
    assert np.allclose(counts, np.round(counts), atol=1e-6)


def test_seed_reproducible_and_varies():
    a = record(GROUND_TRUTH, SETUP, "sin_time_square", SensorModel(), seed=1)
    b = record(GROUND_TRUTH, SETUP, "sin_time_square", SensorModel(), seed=1)
    c = record(GROUND_TRUTH, SETUP, "sin_time_square", SensorModel(), seed=2)
    assert a.entries == b.entries
    assert a.entries != c.entries


def test_ground_truth_fits_its_own_noisy_log_better_than_m1():
    raw = record(GROUND_TRUTH, SETUP, "up_and_down", SensorModel(), seed=0)
    log = process(raw)
    truth = simulate(log, GROUND_TRUTH).mae
    m1 = simulate(log, restrict(GROUND_TRUTH, "m1")).mae
    assert truth < 0.02
    assert truth < m1
