"""The published XL330 data: processing raw logs and the reference rollouts (docs/model.md §4–§6)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import SHARED

from frictionsim import load_log, load_params, process
from frictionsim.logs import Log
from frictionsim.solvers.rollouts import simulate

MODELS = ("m1", "m2", "m3", "m4", "m5", "m6")
N_LOGS = 12

if SHARED.is_dir():
    NAMES = sorted(p.name for p in (SHARED / "raw").glob("*.json"))
else:  # a single placeholder; the `shared` fixture then skips it with a clear message
    NAMES = ["<shared data absent>"]


@pytest.fixture(scope="module")
def reference(shared):
    return json.loads((shared / "reference.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def processed_logs(shared):
    paths = sorted((shared / "processed").glob("*.json"))
    return {p.name: load_log(p, processed=True) for p in paths}


@pytest.fixture(scope="module")
def param_sets(shared):
    return {m: load_params(shared / "params" / f"{m}.json") for m in MODELS}


def test_shared_folder_is_complete(shared, reference):
    raw = sorted(p.name for p in (shared / "raw").glob("*.json"))
    processed = sorted(p.name for p in (shared / "processed").glob("*.json"))
    assert len(raw) == N_LOGS
    assert raw == processed
    assert sorted(reference["logs"]) == raw
    for m in MODELS:
        assert (shared / "params" / f"{m}.json").is_file()


@pytest.mark.parametrize("name", NAMES)
def test_processing_reproduces_published_processed_log(shared, name):
    raw = load_log(shared / "raw" / name)
    assert not raw.processed
    got = process(raw, dt=0.005).to_dict()
    want = json.loads((shared / "processed" / name).read_text(encoding="utf-8"))

    got_header = {k: v for k, v in got.items() if k != "entries"}
    want_header = {k: v for k, v in want.items() if k != "entries"}
    assert got_header == want_header
    assert got_header["dt"] == 0.005

    got_entries, want_entries = got["entries"], want["entries"]
    assert len(got_entries) == len(want_entries)
    problems = []
    for i, (g, w) in enumerate(zip(got_entries, want_entries)):
        if list(g) != list(w):
            problems.append(f"entries[{i}] keys {list(g)} != {list(w)}")
            continue
        for key, w_value in w.items():
            g_value = g[key]
            if key == "torque_enable":
                if not (isinstance(g_value, bool) and g_value == w_value):
                    problems.append(f"entries[{i}].torque_enable {g_value!r} != {w_value!r}")
            elif isinstance(g_value, bool) or not math.isfinite(g_value) or abs(
                g_value - w_value
            ) > 1e-12:
                problems.append(f"entries[{i}].{key} {g_value!r} != {w_value!r}")
        if len(problems) > 10:
            break
    assert not problems, "\n".join(problems)


def naive_process(header: dict, entries: list[dict], dt: float) -> dict:
    """docs/model.md §6 as written: one forward pointer, interpolate every key but timestamp."""
    out = []
    i = 0
    for t in np.arange(0.0, entries[-1]["timestamp"], dt).tolist():
        while t > entries[i + 1]["timestamp"]:
            i += 1
        a, b = entries[i], entries[i + 1]
        entry = {}
        for key in a:
            if key == "timestamp":
                continue
            va, vb = float(a[key]), float(b[key])
            entry[key] = va + (((vb - va) * (t - a["timestamp"])) / (b["timestamp"] - a["timestamp"]))
        entry["torque_enable"] = entry["torque_enable"] > 0.5
        entry["timestamp"] = t
        out.append(entry)
    return {**header, "dt": dt, "entries": out}


@pytest.mark.parametrize("seed", range(4))
def test_processing_matches_spec_exactly_on_synthetic_raw_logs(seed):
    """Irregular timestamps, some exactly on the sample grid (where the pair (a, b)
    ending at t must be used), a first timestamp after 0 (extrapolation), toggling
    torque_enable, integer fields; the result must be bit-identical to docs/model.md §6."""
    rng = np.random.default_rng(seed)
    dt = 0.005
    grid = np.arange(0.0, 2.0, dt).tolist()
    times = sorted(
        set(grid[3::7]) | {float(t) for t in rng.uniform(0.0023, 1.99, 250)}
    )
    entries = [
        {
            "position": float(rng.normal()),
            "speed": float(rng.normal()),
            "load": int(rng.integers(-50, 50)),
            "timestamp": t,
            "goal_position": float(rng.uniform(-2, 2)),
            "torque_enable": bool((k // 40) % 3),
        }
        for k, t in enumerate(times)
    ]
    header = {"mass": 0.49, "length": 0.1, "kp": 400, "motor": "xl330", "arm-mass": 0.01}
    got = process(Log(header, entries), dt=dt).to_dict()
    want = naive_process(header, entries, dt)
    assert {k: v for k, v in got.items() if k != "entries"} == {
        k: v for k, v in want.items() if k != "entries"
    }
    assert len(got["entries"]) == len(want["entries"])
    for i, (g, w) in enumerate(zip(got["entries"], want["entries"])):
        assert list(g) == list(w), i
        assert g == w, (i, g, w)
        assert type(g["torque_enable"]) is bool


@pytest.mark.parametrize("model", MODELS)
def test_published_parameters_reproduce_reference_errors(
    model, processed_logs, param_sets, reference
):
    params = param_sets[model]
    assert params.model == model
    assert params.actuator == "xl330"
    assert len(processed_logs) == N_LOGS
    problems = []
    for name, log in processed_logs.items():
        want = reference["logs"][name]["mae_rad"][model]
        got = simulate(log, params).mae
        if not math.isclose(got, want, rel_tol=1e-9, abs_tol=0.0):
            problems.append(f"{name}: mae {got!r} != reference {want!r}")
    assert not problems, "\n".join(problems)


def test_published_parameters_reproduce_reference_trajectories(
    processed_logs, param_sets, reference
):
    checked = 0
    for name, entry in reference["logs"].items():
        for model, positions in entry.get("positions_rad", {}).items():
            log = processed_logs[name]
            want = np.asarray(positions, dtype=float)
            got = simulate(log, param_sets[model]).q
            assert got.shape == want.shape, (name, model)
            worst = float(np.max(np.abs(got - want)))
            assert worst <= 1e-9, f"{name} {model}: max |q - reference| = {worst:.3e} rad"
            checked += 1
    assert checked > 0, "reference.json carries no positions_rad trajectory"
