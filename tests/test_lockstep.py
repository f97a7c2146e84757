"""The lock-step evaluator (frictionsim.solvers.lockstep) against the scalar reference kernel: the same
losses to 1e-12 relative (the vector kernel's polynomial sin/exp/log) or bit for bit (the
interleaved kernel, libm), in every configuration, and the kernel choice."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from synthetic_logs import random_values, rng_for, synthetic_log

from frictionsim import MODELS, layout
from frictionsim.params import ParameterSet
from frictionsim.solvers.batch import PackedLogs
from frictionsim.solvers.lockstep import LANES, interleaved_errors, lockstep_errors, vector_errors


def population(actuator: str, models, rng, size: int, extensions=(), scheme="reference"):
    """``size`` candidates of several models (a mixed population exercises every branch)."""
    sets = []
    for i in range(size):
        model = models[i % len(models)]
        values = random_values(model, actuator, rng, 0.25)
        sets.append(ParameterSet(model, actuator, values, scheme=scheme).with_extensions(
            extensions) if extensions else ParameterSet(model, actuator, values, scheme=scheme))
    return sets


def logs_for(actuator: str, sets, rng, lengths=(150, 233, 300, 411)):
    """Logs of different lengths, with and without speed and torque-off windows, on a bench
    heavy enough for every candidate."""
    biggest = max(sets, key=lambda p: p.values["kt"] ** 2 / p.values["R"]).values
    return [synthetic_log(actuator, rng, biggest, n=n, with_speed=n % 2 == 0, disabled=n > 200)
            for n in lengths]


#: The lock-step losses' bound relative to the scalar kernel's (frictionsim.solvers.vector_math).
RTOL = 1e-12


def both(packed: PackedLogs, thetas: np.ndarray):
    return packed.errors(thetas, "scalar"), packed.errors(thetas, "lockstep")


def interleaved(packed: PackedLogs, thetas: np.ndarray) -> np.ndarray:
    out = np.empty((thetas.shape[0], packed.offsets.shape[0] - 1))
    interleaved_errors(thetas, packed.goal, packed.enable, packed.supply, packed.position,
                       packed.offsets, packed.v0, packed.bench, out)
    return out


@pytest.mark.parametrize("actuator", ["xl330", "mx64", "sts3215", "erob80_100"])
@pytest.mark.parametrize("scheme", ["reference", "semi_implicit"])
def test_the_same_losses_as_the_scalar_kernel(actuator, scheme):
    rng = rng_for("lockstep", actuator, scheme)
    sets = population(actuator, tuple(MODELS), rng, LANES + 13, scheme=scheme)  # partial block
    logs = logs_for(actuator, sets, rng)
    packed = PackedLogs.from_logs(logs, actuator)
    thetas = np.array([p.theta() for p in sets])
    scalar, lockstep = both(packed, thetas)
    assert np.isfinite(scalar).all()
    np.testing.assert_allclose(lockstep, scalar, rtol=RTOL, atol=0.0)
    np.testing.assert_array_equal(interleaved(packed, thetas), scalar)


@pytest.mark.parametrize("extensions", [("supply",), ("current_limit",), ("latency",),
                                        ("supply", "current_limit", "latency")])
def test_extensions_give_the_same_losses(extensions):
    rng = rng_for("lockstep", *extensions)
    sets = population("xl330", ("m1", "m4", "m6"), rng, 21, extensions)
    if "latency" in extensions:
        for i, p in enumerate(sets):
            sets[i] = p.with_values(latency_steps=float(i % (layout.MAX_LATENCY + 1)))
    logs = logs_for("xl330", sets, rng)
    for log in logs:  # a sagging supply around the nominal one
        for k, e in enumerate(log.entries):
            e["input_volts"] = 7.4 - 0.8 * np.sin(0.05 * k) ** 2
    packed = PackedLogs.from_logs(logs, "xl330")
    thetas = np.array([p.theta() for p in sets])
    scalar, lockstep = both(packed, thetas)
    np.testing.assert_allclose(lockstep, scalar, rtol=RTOL, atol=0.0)
    np.testing.assert_array_equal(interleaved(packed, thetas), scalar)


def test_overflowing_candidates_give_the_same_non_finite_losses():
    rng = rng_for("lockstep", "overflow")
    sets = population("xl330", ("m1", "m6"), rng, 9)
    logs = logs_for("xl330", sets, rng, lengths=(200, 260))
    thetas = np.array([p.theta() for p in sets])
    thetas[3, layout.KT] = 1e200  # the motor torque overflows
    thetas[5, layout.K_V] = -1e3  # "friction" that pumps energy in
    packed = PackedLogs.from_logs(logs, "xl330")
    scalar, lockstep = both(packed, thetas)
    assert not np.isfinite(scalar[3]).all()
    np.testing.assert_array_equal(np.isnan(lockstep), np.isnan(scalar))
    np.testing.assert_array_equal(np.isinf(lockstep), np.isinf(scalar))
    finite = np.isfinite(scalar)
    np.testing.assert_allclose(lockstep[finite], scalar[finite], rtol=RTOL, atol=0.0)


def test_the_vector_kernel_takes_the_voltage_law_without_current_limit_or_latency():
    rng = rng_for("lockstep", "choice")
    args = {}
    for name, actuator, extensions in (("vector", "xl330", ("supply",)),
                                       ("interleaved", "xl330", ("current_limit",)),
                                       ("interleaved", "erob80_100", ())):
        sets = population(actuator, ("m1", "m6"), rng, 5, extensions)
        packed = PackedLogs.from_logs(logs_for(actuator, sets, rng, lengths=(120,)), actuator)
        if "supply" in extensions:  # the vector kernel takes a logged supply only
            packed = dataclasses.replace(packed, supply=7.2 + 0.1 * np.sin(packed.goal))
        thetas = np.array([p.theta() for p in sets])
        out = np.empty((5, 1))
        args = (thetas, packed.goal, packed.enable, packed.supply, packed.position,
                packed.offsets, packed.v0, packed.bench, out)
        assert lockstep_errors(*args) == name
        chosen = out.copy()
        (vector_errors if name == "vector" else interleaved_errors)(*args)
        np.testing.assert_array_equal(out, chosen)


def test_an_unknown_kernel_is_refused():
    rng = rng_for("lockstep", "unknown")
    sets = population("xl330", ("m1",), rng, 1)
    packed = PackedLogs.from_logs(logs_for("xl330", sets, rng, lengths=(50,)), "xl330")
    with pytest.raises(ValueError, match="lockstep"):
        packed.errors(sets[0].theta(), "simd")
