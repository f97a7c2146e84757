"""Drive/backdrive diagrams (frictionsim.static_region, `run drive-backdrive`): M1 against
its closed form, M3 against its own, symmetry, monotonicity and the edges' defining
property for M2-M6, self-locking, and the command's JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

from frictionsim.experiments.analysis.drive_backdrive import diagram, stall_torque, torque_grid
from frictionsim.experiments.runner.cli import main
from frictionsim.params import ParameterSet, load_params
from frictionsim.static_region import holding_margin

PUBLISHED = ("mx106", "erob80_100")


@pytest.fixture(scope="module")
def params_dir(shared):
    return shared.parent / "params"


def grid(params: ParameterSet, points: int = 161) -> np.ndarray:
    return torque_grid(stall_torque(params), points)


@pytest.mark.parametrize("points", [2, 5, 6, 201])
def test_the_grid_is_even_symmetric_and_spans_the_limit(points):
    g = torque_grid(3.0, points)
    assert len(g) == points and g[0] == -3.0 and g[-1] == 3.0
    np.testing.assert_array_equal(g[::-1], -g)
    np.testing.assert_allclose(np.diff(g), 6.0 / (points - 1), rtol=1e-12)


@pytest.mark.parametrize("servo", PUBLISHED)
def test_m1_is_minus_tau_e_plus_or_minus_coulomb(params_dir, servo):
    p = load_params(params_dir / servo / "m1.json")
    tau_e = grid(p)
    d = diagram("m1", p, tau_e)
    k_c = p.values["friction_base"]
    scale = np.max(np.abs(tau_e))
    np.testing.assert_allclose(d.rest.high, -tau_e + k_c, rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(d.rest.low, -tau_e - k_c, rtol=0, atol=1e-13 * scale)
    lifting = tau_e <= 0  # the motor holds the load up: it wins above the interval
    np.testing.assert_array_equal(d.rest.drive[lifting], d.rest.high[lifting])
    np.testing.assert_array_equal(d.rest.drive[~lifting], d.rest.low[~lifting])
    np.testing.assert_array_equal(d.rest.backdrive[lifting], d.rest.low[lifting])


@pytest.mark.parametrize("k_l", [0.3, 0.9])  # 0.9: edges 18 times the load away
def test_m3_matches_its_closed_form(k_l):
    # at rest, τ_e ≤ 0, F = K_c + K_l·|τ_e − τ_m|. Above: τ_high = −τ_e + x with
    # x = K_c + K_l·(x − 2τ_e). Below: τ_low = −τ_e − y, y = K_c + K_l·|2τ_e + y|, whose
    # root is y1 = (K_c − 2K_l·τ_e)/(1 + K_l) while y1 < −2τ_e, else (K_c + 2K_l·τ_e)/(1 − K_l)
    k_c = 0.05
    p = ParameterSet.defaults("m3", "mx106").with_values(friction_base=k_c,
                                                          load_friction_base=k_l)
    tau_e = np.linspace(-5.0, 0.0, 51)
    d = diagram("m3", p, tau_e)
    np.testing.assert_allclose(d.rest.high, -tau_e + (k_c - 2 * k_l * tau_e) / (1 - k_l),
                               rtol=1e-13, atol=1e-15)
    y1 = (k_c - 2 * k_l * tau_e) / (1 + k_l)
    y = np.where(y1 < -2 * tau_e, y1, (k_c + 2 * k_l * tau_e) / (1 - k_l))
    np.testing.assert_allclose(d.rest.low, -tau_e - y, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("servo", PUBLISHED)
@pytest.mark.parametrize("model", ["m2", "m3", "m4", "m5", "m6"])
def test_symmetric_monotonic_and_exactly_at_the_edge(params_dir, servo, model):
    p = load_params(params_dir / servo / f"{model}.json")
    tau_e = grid(p)
    d = diagram(model, p, tau_e, velocities=(1.0,))
    low, high = d.rest.low, d.rest.high
    scale = float(np.max(np.abs(tau_e)))
    # F(−τ_m, −τ_e) = F(τ_m, τ_e): the static area is point-symmetric about the origin
    np.testing.assert_allclose(low[::-1], -high, rtol=0, atol=1e-9 * scale)
    loaded = tau_e != 0  # at τ_e = 0 the drive edge is a convention (that of τ_e < 0)
    np.testing.assert_allclose(d.rest.drive[::-1][loaded], -d.rest.drive[loaded],
                               atol=1e-9 * scale)
    # the equilibrium inside; both edges fall as τ_e grows (more load, more torque to hold)
    assert np.all(low <= -tau_e) and np.all(-tau_e <= high)
    assert np.all(np.diff(high) <= 1e-9 * scale) and np.all(np.diff(low) <= 1e-9 * scale)
    moving = d.moving[1.0]  # the edges at speed share the symmetry
    np.testing.assert_allclose(moving.low[::-1], -moving.high, rtol=0, atol=1e-9 * scale)
    # the edge is where the joint breaks free: holding just inside it, not just beyond it
    theta = p.theta()
    for i in range(0, len(tau_e), 16):
        eps = 1e-9 * max(1.0, abs(high[i]))
        assert holding_margin(high[i], tau_e[i], 0.0, theta) >= 0
        assert holding_margin(high[i] + eps, tau_e[i], 0.0, theta) < 0
        assert holding_margin(low[i] - eps, tau_e[i], 0.0, theta) < 0


def directional(k_e: float, k_m: float) -> ParameterSet:
    """M5 with only Coulomb and the directional load terms K_e, K_m."""
    return ParameterSet.defaults("m5", "mx106").with_values(
        friction_base=0.05, load_friction_motor=k_m, load_friction_external=k_e,
        friction_stribeck=0.0, load_friction_motor_stribeck=0.0,
        load_friction_external_stribeck=0.0)


def test_a_self_locking_gearbox_cannot_be_backdriven():
    # K_e > 1: F = K_c + K_e·|τ_e| holds any load with the motor off; to move the load the
    # motor must push with it (a backdrive torque of the load's own sign)
    tau_e = np.linspace(-2.0, 2.0, 21)
    d = diagram("locked", directional(1.5, 0.0), tau_e)
    np.testing.assert_allclose(d.rest.backdrive, np.where(
        tau_e <= 0, -tau_e - 0.05 - 1.5 * np.abs(tau_e), -tau_e + 0.05 + 1.5 * np.abs(tau_e)),
        atol=1e-13)
    assert np.all(np.sign(d.rest.backdrive[tau_e != 0]) == np.sign(tau_e[tau_e != 0]))


def test_friction_that_outgrows_the_motor_has_no_edge(params_dir, tmp_path, capsys):
    # K_m > 1: the more the motor pushes, the more the gearbox holds: the motor never drives
    # the load, while the load backdrives it where K_c + 1.5·|τ_m| = |τ_m + τ_e|, i.e.
    # τ_m = −sign(τ_e)·(|τ_e| − K_c)/2.5
    tau_e = np.linspace(-2.0, 2.0, 21)
    d = diagram("jammed", directional(0.0, 1.5), tau_e)
    assert np.isnan(d.rest.drive).all()
    loaded = tau_e != 0
    np.testing.assert_allclose(d.rest.backdrive[loaded],
                               -np.sign(tau_e[loaded]) * (np.abs(tau_e[loaded]) - 0.05) / 2.5,
                               atol=1e-13)
    from frictionsim.params import save_params

    path = save_params(tmp_path / "jammed.json", directional(0.0, 1.5))
    out = tmp_path / "j.json"
    assert main(["run", "drive-backdrive", "--params", str(path), "--points", "5",
                 "--json", str(out)]) == 0
    assert "self-locking" in capsys.readouterr().out
    assert json.loads(out.read_text())["jammed"]["drive"] == [None] * 5


@pytest.mark.parametrize("servo", PUBLISHED)
def test_cli_json(params_dir, servo, tmp_path, capsys):
    files = [params_dir / servo / f"m{k}.json" for k in range(1, 7)]
    out = tmp_path / "db.json"
    assert main(["run", "drive-backdrive", "--params", *map(str, files), "--velocity", "1",
                 "--points", "41", "--json", str(out), "--plot", str(tmp_path / "db.png")]) == 0
    data = json.loads(out.read_text())
    assert list(data) == [f"m{k}" for k in range(1, 7)]
    m1 = data["m1"]
    tau_e = np.array(m1["tau_e"])
    k_c = load_params(files[0]).values["friction_base"]
    assert len(tau_e) == 41 and tau_e[0] == -tau_e[-1] and tau_e[20] == 0.0
    drive = np.where(tau_e <= 0, -tau_e + k_c, -tau_e - k_c)
    np.testing.assert_allclose(m1["drive"], drive, atol=1e-12 * abs(tau_e[0]))
    assert set(data["m6"]["velocities"]) == {"1"}
    assert (tmp_path / "db.png").stat().st_size > 0
    assert "drive / backdrive" in capsys.readouterr().out


def test_cli_refuses_a_bad_grid(params_dir, capsys):
    f = str(params_dir / "mx106" / "m1.json")
    assert main(["run", "drive-backdrive", "--params", f, "--points", "2"]) != 0
    assert "--points" in capsys.readouterr().err
    assert main(["run", "drive-backdrive", "--params", f, "--tau-e-max", "-1"]) != 0
    assert "--tau-e-max" in capsys.readouterr().err
    # beyond these the friction terms overflow and the NaN would read as self-locking
    for option, value in (("--velocity", "1e300"), ("--velocity", "-101"),
                          ("--tau-e-max", "1e300"), ("--tau-e-max", "2e5")):
        assert main(["run", "drive-backdrive", "--params", f, option, value]) != 0
        assert option in capsys.readouterr().err
