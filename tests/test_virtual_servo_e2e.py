"""End to end over the wire: ``virtual-servo`` → ``record-campaign`` → ``process`` → ``identify``.

Four virtual XL330s (two masses × two gains) run as separate processes in real
time on pseudo-terminals, each recorded by a ``frictionsim record-campaign``
process over Dynamixel protocol 2.0, so the logs carry real timing jitter,
encoder quantisation and noise. Identification must recover the simulated
servo and validate as well as the ground truth itself does (the noise floor).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from frictionsim import trajectories
from frictionsim.experiments.runner.cli import main
from frictionsim.logs import json_files, load_log, process
from frictionsim.params import load_params
from frictionsim.solvers.rollouts import simulate

TRUTH = Path(__file__).resolve().parents[2] / "shared" / "data" / "xl330" / "params" / "m1.json"
pytestmark = pytest.mark.skipif(not TRUTH.exists(), reason="../shared/data is absent")
FRICTIONSIM = [sys.executable, "-m", "frictionsim.experiments.runner.cli"]
SETUPS = [(0.3, 0.1, 300), (0.3, 0.1, 600), (0.5, 0.12, 300), (0.5, 0.12, 600)]


def start_virtual_servo(mass: float, length: float, seed: int) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [*FRICTIONSIM, "virtual-servo", "--params", str(TRUTH), "--mass", str(mass),
         "--length", str(length), "--vin", "7.4", "--seed", str(seed)],
        stdout=subprocess.PIPE, text=True)
    banner = proc.stdout.readline()
    device = proc.stdout.readline().strip()
    assert device.startswith("/dev/"), banner + device
    return proc, device


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bench")
    servers, recorders = [], []
    try:
        for n, (mass, length, kp) in enumerate(SETUPS):
            server, device = start_virtual_servo(mass, length, seed=n)
            servers.append(server)
            recorders.append(subprocess.Popen(
                [*FRICTIONSIM, "record-campaign", "--motor", "xl330", "--port", device,
                 "--setup", f"{mass}:{length}", "--kp", str(kp), "--vin", "7.4", "--rest", "0.2",
                 # eight real-time processes share the cores with the rest of the suite
                 "--reply-timeout", "1",
                 "--logdir", str(root / "raw")],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        for recorder in recorders:
            out, _ = recorder.communicate(timeout=300)
            assert recorder.returncode == 0, out
    finally:
        for p in servers + recorders:
            p.terminate()
            p.wait(timeout=30)
    return root


def test_campaign_logs_are_complete_and_timed(campaign):
    files = json_files([campaign / "raw"])
    assert len(files) == len(SETUPS) * len(trajectories.IDENTIFICATION)
    for path in files:
        header = json.loads(path.read_text())
        assert "incomplete" not in header, path
        log = load_log(path)
        t = np.array([e["timestamp"] for e in log.entries])
        assert t[-1] > 5.9
        assert abs(np.median(np.diff(t)) - 0.005) < 0.0015  # the 200 Hz tick
        q = np.array([e["position"] for e in log.entries])
        goal = np.array([e["goal_position"] for e in log.entries])
        on = np.array([e["torque_enable"] for e in log.entries])
        # the servo follows its goal while the torque is on (sagging under gravity)
        assert np.corrcoef(q[on], goal[on])[0, 1] > 0.6, path  # chirps lag at high frequency
        assert np.ptp(q) > 0.5, path


def test_identify_recovers_the_virtual_servo(campaign):
    raw, processed = campaign / "raw", campaign / "processed"
    assert main(["process", str(raw), str(processed)]) == 0
    rc = main(["identify", "--actuator", "xl330", "--model", "m1", "--logs", str(processed),
               "--validation-kp", "600", "--budget", "2000", "--out", str(campaign / "fit"),
               "--json", str(campaign / "fit.json"), "--no-progress"])
    assert rc == 0
    truth = load_params(TRUTH)
    fitted = load_params(campaign / "fit" / "m1.json")
    # viscous friction is a tenth of the back-EMF damping k_t²/R here: loosely determined
    tolerance = {"kt": 0.1, "R": 0.1, "friction_base": 0.15, "armature": 0.2,
                 "friction_viscous": 0.4}
    for name, rel in tolerance.items():
        assert fitted.values[name] == pytest.approx(truth.values[name], rel=rel), name
    assert fitted.values["q_offset"] == pytest.approx(truth.values["q_offset"], abs=0.01)
    validation = [process(load_log(p)) for p in json_files([raw]) if "_kp600_" in p.name]
    floor = np.mean([simulate(log, truth).mae for log in validation])
    summary = json.loads((campaign / "fit.json").read_text())["models"]["m1"]
    assert summary["validation_mae"] < 1.2 * floor + 1e-3, (summary, floor)
