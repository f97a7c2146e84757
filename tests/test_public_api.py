"""The front door (``import frictionsim``) and the public compiled kernels called badly.

Every public kernel checks sizes before compiled code indexes an array: wrong lengths give a
ValueError naming what is wrong, never a crash, garbage or a write past an array.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from synthetic_logs import synthetic_log

import frictionsim as fs
from frictionsim import layout
from frictionsim.errors import ConfigurationError, FrictionsimError
from frictionsim.params import ParameterSet, save_params
from frictionsim.servo_bank import period_servo
from frictionsim.servo_unit import (
    NO_LOG,
    servo_control,
    servo_draw,
    servo_reset,
    servo_state,
    servo_torque,
    share_supply,
)
from frictionsim.solvers.fixed_step import rollout, rollout_error, rollout_substeps, servo_step, step
from frictionsim.solvers.joint_friction import (
    BAD_SIZES,
    MAX_JOINTS,
    WORK_SIZE,
    clip_friction,
    clip_friction_into,
)
from frictionsim.solvers.one_joint import simulate_log_events

THETA = ParameterSet.defaults("m6", "xl330").theta()
BENCH = layout.bench_vector(mass=0.3, length=0.1, kp=400, vin=7.4, dt=0.005)


def test_import_frictionsim_is_light_and_the_compiled_core_needs_no_plotting():
    code = ("import sys\nimport frictionsim\nprint(' '.join(m for m in ('numpy', 'numba', "
            "'matplotlib', 'nevergrad', 'tqdm', 'scipy') if m in sys.modules))\n"
            "import frictionsim.servo_unit, frictionsim.solvers.fixed_step, "
            "frictionsim.solvers.c_abi, frictionsim.solvers.batch\n"
            "print(' '.join(m for m in ('matplotlib', 'nevergrad', 'tqdm') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    front, core = out.stdout.split("\n")[:2]
    assert front == "" and core == ""


def test_the_front_door_names_are_there():
    for name in ("load_log", "load_logs", "load_params", "load_actuator", "simulate", "identify",
                 "Servo", "ParameterSet", "Log"):
        assert name in dir(fs) and getattr(fs, name) is not None
    with pytest.raises(AttributeError):
        fs.no_such_thing  # noqa: B018


@pytest.fixture(scope="module")
def logs():
    rng = np.random.default_rng(3)
    params = ParameterSet("m1", "xl330", {"friction_base": 0.03, "friction_viscous": 0.02})
    out = []
    for k in range(4):
        log = synthetic_log("xl330", rng, params.values, n=300)
        out.append(fs.Log(log.header, log.entries, Path(f"l{k}.json")))
    return params, out


def test_simulate_takes_one_log_or_several_and_every_engine(logs):
    params, logs = logs
    one = fs.simulate(logs[0], params)
    many = fs.simulate(logs, params)
    assert isinstance(many, list) and len(many) == 4
    np.testing.assert_array_equal(one.q, many[0].q)
    exact = fs.simulate(logs[0], params, engine="event_driven")
    direct = simulate_log_events(logs[0].column("goal_position"), logs[0].column("torque_enable"),
                                 logs[0].entries[0]["position"], logs[0].entries[0]["speed"],
                                 params.theta(), logs[0].bench("xl330"), logs[0].dt,
                                 supply=logs[0].supply())
    np.testing.assert_array_equal(exact.q, direct.q)
    assert exact.mae > 0 and np.mean(np.abs(exact.q - one.q)) < exact.mae
    with pytest.raises(ValueError, match="engine"):
        fs.simulate(logs, params, engine="ode45")
    with pytest.raises(FrictionsimError, match="must be Log objects .* got str"):
        fs.simulate(["not a log"], params)


def test_identify_returns_fits_and_writes_nothing(logs, tmp_path, monkeypatch):
    params, logs = logs
    monkeypatch.chdir(tmp_path)
    found = fs.identify(logs[:3], actuator="xl330", models=["m1"], validation=logs[3:],
                        budget=60, seed=1)
    fit = found.fits["m1"]
    assert fit.params.model == "m1" and fit.evaluations >= 60
    assert math.isfinite(fit.train_mae) and math.isfinite(fit.validation_mae)
    assert set(fit.train) == {"l0.json", "l1.json", "l2.json"}
    assert list(tmp_path.iterdir()) == []
    found.figure().savefig(tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 1000
    with pytest.raises(ValueError, match="also a training log"):
        fs.identify(logs[:2], actuator="xl330", models=["m1"], validation=logs[1:2], budget=60)
    with pytest.raises(ValueError, match="m7"):
        fs.identify(logs, actuator="xl330", models=["m7"], budget=60)
    with pytest.raises(ValueError, match="budget"):
        fs.identify(logs, actuator="xl330", models=["m1"], budget=0)
    assert fit.fit_losses == ()
    two = fs.identify(logs[:3], actuator="xl330", models=["m1"], budget=60, seed=1, fits=2)
    m1 = two.fits["m1"]
    assert len(m1.fit_losses) == 2 and m1.evaluations == 2 * fit.evaluations
    # the first fit is the one seed 1 gives alone
    assert m1.fit_losses[0] == pytest.approx(fit.train_mae)
    assert m1.train_mae == pytest.approx(min(m1.fit_losses))
    with pytest.raises(ValueError, match="fits"):
        fs.identify(logs, actuator="xl330", models=["m1"], budget=60, fits=0)


BAD_IDENTIFY = {
    "a negative seed": ({"seed": -1}, "seed must be an integer"),
    "a seed as text": ({"seed": "a"}, "seed must be an integer"),
    "a fractional seed": ({"seed": 1.5}, "seed must be an integer"),
    "a held parameter of no model": ({"fixed": {"bogus": 1.0}}, "fixed bogus: not a parameter"),
    "a held value as text": ({"fixed": {"kt": "a"}}, "fixed kt='a': the value must be a finite"),
    "a held value outside its bounds": ({"fixed": {"kt": -1.0}}, "fixed kt=-1: outside its bounds"),
    "held values not a dict": ({"fixed": [("kt", 1.0)]}, "fixed: a dict"),
    "a start file that is not there": ({"init": "nowhere/m1.json"}, "no such parameter file"),
    "a start of another servo": ({"init": ParameterSet.defaults("m1", "mx64")},
                                 "actuator mx64, not xl330"),
    "a start that is a number": ({"init": 42}, "a ParameterSet or a parameter file's path"),
}


@pytest.mark.parametrize("case", list(BAD_IDENTIFY), ids=list(BAD_IDENTIFY))
def test_identify_names_an_argument_it_cannot_take(logs, case):
    params, logs = logs
    options, message = BAD_IDENTIFY[case]
    with pytest.raises(FrictionsimError, match=re.escape(message)):
        fs.identify(logs, actuator="xl330", models=["m1"], budget=10, **options)


def test_identify_and_simulate_name_logs_they_cannot_take(logs):
    params, logs = logs
    for function in (lambda x: fs.identify(x, actuator="xl330", models=["m1"], budget=10),
                     lambda x: fs.simulate(x, params)):
        with pytest.raises(FrictionsimError, match="is a path; read the logs with "
                                                   "frictionsim.load_logs"):
            function("some/log.json")
        with pytest.raises(FrictionsimError, match="must be Log objects .* not int"):
            function(42)
        with pytest.raises(FrictionsimError, match="must be Log objects .* got int"):
            function([logs[0], 42])
    for call in (lambda: fs.simulate(logs, 42), lambda: fs.Servo(42, kp=400)):
        with pytest.raises(FrictionsimError, match="a ParameterSet or a parameter file's path, "
                                                   "not int"):
            call()
    with pytest.raises(FrictionsimError, match="kt = 'a' is not a number"):
        params.with_values(kt="a")
    with pytest.raises(FrictionsimError, match="values must map parameter names to numbers"):
        ParameterSet("m1", "xl330", [1.0, 2.0])


def test_files_named_by_what_is_not_a_path_are_refused_by_name(logs, tmp_path):
    params, logs = logs
    for call, message in (
            (lambda: fs.load_log(42), "log file: a path (a str or os.PathLike), not int"),
            (lambda: fs.load_logs([42]), "a path (a str or os.PathLike), not int"),
            (lambda: fs.load_logs(tmp_path, processed="yes"), "processed = 'yes'"),
            (lambda: fs.load_actuator(42), "actuator file: a path"),
            (lambda: fs.save_params(42, params), "output file: a path"),
            (lambda: fs.save_params(tmp_path / "p.json", logs[0]), "a ParameterSet to write"),
            (lambda: fs.save_log(tmp_path / "l.json", params), "a Log to write"),
            (lambda: fs.process(42), "process: a raw Log"),
            (lambda: fs.process(logs[0], dt="a"), "dt = 'a' must be a positive number"),
            (lambda: fs.identify(logs, actuator="xl330", models=42, budget=10), "models 42")):
        with pytest.raises(FrictionsimError, match=re.escape(message)):
            call()
    assert list(tmp_path.iterdir()) == []
    # one extension by its name, as one model is
    found = fs.identify(logs[:1], actuator="xl330", models="m1", budget=10,
                        extensions="current_limit")
    assert found.fits["m1"].params.extensions == ("current_limit",)


def test_identify_takes_one_log_a_start_file_and_held_values(logs, tmp_path):
    params, logs = logs
    start = tmp_path / "start.json"
    save_params(start, params)
    found = fs.identify(logs[0], actuator="xl330", models=["m1"], budget=10, init=start,
                        fixed={"q_offset": 0})
    fit = found.fits["m1"]
    assert set(fit.train) == {"l0.json"}
    assert fit.params.values["q_offset"] == 0.0
    # the start file's own point is the search's first candidate: the fit is no worse
    assert fit.train_mae <= fs.simulate(logs[0], params).mae + 1e-12


@pytest.mark.parametrize("start", [{"q0": "a"}, {"q0": math.nan}, {"v0": math.inf}],
                         ids=["text", "nan", "inf"])
def test_servo_rollout_refuses_a_start_that_is_not_a_finite_number(start):
    servo = fs.Servo(ParameterSet.defaults("m1", "xl330"), kp=400, mass=0.4, length=0.12)
    with pytest.raises(FrictionsimError, match=f"Servo.rollout: {next(iter(start))} = "):
        servo.rollout(np.zeros(10), **start)


def test_servo_rollout_checks_its_inputs_and_matches_the_kernel():
    servo = fs.Servo(ParameterSet.defaults("m4", "sts3215"), kp=32, mass=0.4, length=0.12)
    goal = 0.5 * np.sin(np.linspace(0, 6, 500))
    q, v = servo.rollout(goal)
    q2, v2 = np.empty(500), np.empty(500)
    rollout(goal, np.ones(500), np.full(500, NO_LOG), 0.0, 0.0, servo.theta, servo.bench,
            0.005, q2, v2)
    np.testing.assert_array_equal(q, q2)
    assert np.ptp(q) > 0.1
    with pytest.raises(ValueError, match="enable has 3 values"):
        servo.rollout(goal, enable=[1, 1, 1])
    with pytest.raises(ValueError, match="goal"):
        servo.rollout([[0.1, 0.2]])
    with pytest.raises(ValueError, match="not finite"):
        servo.rollout([0.1, math.nan])
    with pytest.raises(ValueError, match="kp"):
        fs.Servo(ParameterSet.defaults("m1", "xl330"), kp=-4)
    with pytest.raises(ValueError, match="read-only"):
        servo.theta[0] = 1.0
    assert servo.kernels.period_servo is period_servo


@pytest.mark.parametrize("bad", [np.zeros(13), np.zeros(layout.THETA_SIZE + 5)],
                         ids=["short", "long"])
def test_kernels_refuse_a_theta_of_the_wrong_length(bad):
    servo = servo_state(0.0, 0.0)
    for call in (lambda: step(0.0, 0.0, 1.0, 1.0, 0.005, bad, BENCH),
                 lambda: servo_control(servo, 0.5, 0.0, 0.0, NO_LOG, bad, BENCH),
                 lambda: servo_torque(servo, 1.0, 0.0, bad),
                 lambda: servo_draw(servo, 1.0, 0.0, bad),
                 lambda: servo_step(servo, 0.5, 0.0, 0.0, 1.0, NO_LOG, 0.005, bad, BENCH)):
        with pytest.raises(ValueError, match="THETA_SIZE"):
            call()
    with pytest.raises(ValueError, match="BENCH_SIZE"):
        step(0.0, 0.0, 1.0, 1.0, 0.005, THETA, BENCH[:4].copy())


@pytest.mark.parametrize("size", [3, layout.SERVO_STATE_SIZE + 1])
def test_kernels_refuse_a_servo_record_of_the_wrong_length(size):
    bad = np.zeros(size)
    for call in (lambda: servo_reset(bad, 0.0, 0.0),
                 lambda: servo_control(bad, 0.5, 0.0, 0.0, NO_LOG, THETA, BENCH),
                 lambda: servo_torque(bad, 1.0, 0.0, THETA)):
        with pytest.raises(ValueError, match="SERVO_STATE_SIZE"):
            call()
    with pytest.raises(ValueError, match="SERVO_STATE_SIZE"):
        share_supply(np.zeros((2, 5)))


def test_rollouts_refuse_short_outputs_and_mismatched_columns_before_writing():
    n = 200
    goal = np.full(n, 0.3)
    sentinel = np.full(n + 10, 7.0)
    out_q, out_v = sentinel[:n // 2].copy(), sentinel[:n // 2].copy()
    with pytest.raises(ValueError, match="out_q"):
        rollout(goal, np.ones(n), np.full(n, NO_LOG), 0.0, 0.0, THETA, BENCH, 0.005, out_q, out_v)
    assert (out_q == 7.0).all() and (out_v == 7.0).all()
    q, v = np.empty(n), np.empty(n)
    with pytest.raises(ValueError, match="enable"):
        rollout(goal, np.ones(n - 1), np.full(n, NO_LOG), 0.0, 0.0, THETA, BENCH, 0.005, q, v)
    with pytest.raises(ValueError, match="supply"):
        rollout(goal, np.ones(n), np.full(3, NO_LOG), 0.0, 0.0, THETA, BENCH, 0.005, q, v)
    with pytest.raises(ValueError, match="dt"):
        rollout(goal, np.ones(n), np.full(n, NO_LOG), 0.0, 0.0, THETA, BENCH, 0.0, q, v)
    with pytest.raises(ValueError, match="substeps"):
        rollout_substeps(goal, np.ones(n), np.full(n, NO_LOG), 0.0, 0.0, THETA, BENCH, 0.005,
                         0, q, v)
    with pytest.raises(ValueError, match="no entry"):
        rollout_error(goal[:0], goal[:0], goal[:0], goal[:0], 0.0, THETA, BENCH, 0.005)
    with pytest.raises(ValueError, match="position"):
        rollout_error(goal, np.ones(n), np.full(n, 7.4), goal[:5], 0.0, THETA, BENCH, 0.005)


@pytest.mark.parametrize("n", [MAX_JOINTS + 1, 40])
def test_clip_friction_refuses_too_many_joints(n):
    with pytest.raises(ValueError, match=str(MAX_JOINTS)):
        clip_friction(np.eye(n), np.ones(n), np.zeros(n), np.ones(n), 0.001)


def test_clip_friction_refuses_mismatched_sizes_and_the_into_form_reports_them():
    with pytest.raises(ValueError, match="n × n"):
        clip_friction(np.eye(3), np.ones(2), np.zeros(2), np.ones(2), 0.001)
    with pytest.raises(ValueError, match="n × n"):
        clip_friction(np.eye(2), np.ones(2), np.zeros(3), np.ones(2), 0.001)
    out, work = np.full(4, 9.0), np.empty(WORK_SIZE)
    assert clip_friction_into(np.eye(2), np.ones(2), np.zeros(2), np.ones(3), 0.001, out,
                              work) == BAD_SIZES
    assert clip_friction_into(np.eye(2), np.ones(2), np.zeros(2), np.ones(2), 0.001, out,
                              np.empty(10)) == BAD_SIZES
    assert (out == 9.0).all()
    big = MAX_JOINTS + 1
    assert clip_friction_into(np.eye(big), np.ones(big), np.zeros(big), np.ones(big), 0.001,
                              np.empty(big), work) == BAD_SIZES


def test_bench_vector_requires_gain_supply_and_period():
    with pytest.raises(TypeError):
        layout.bench_vector(mass=0.5, length=0.1, kp=400, dt=0.005)  # no vin
    with pytest.raises(TypeError):
        layout.bench_vector(mass=0.5, length=0.1, kp=400, vin=7.4)  # no dt
    with pytest.raises(ValueError, match="dt must be positive"):
        layout.bench_vector(kp=400, vin=7.4, dt=0.0)
    with pytest.raises(ValueError, match="vin"):
        layout.bench_vector(kp=400, vin=math.nan, dt=0.005)
    with pytest.raises(ValueError, match="mass"):
        layout.bench_vector(mass=-1.0, kp=400, vin=7.4, dt=0.005)


def test_reference_fitter_files_load_with_their_metadata_set_aside(tmp_path):
    path = tmp_path / "best.json"
    path.write_text(json.dumps({"model": "m1", "actuator": "xl330", "friction_base": 0.04,
                                "friction_viscous": 0.1, "kt": 1.5, "R": 2.6,
                                "armature": 0.005, "q_offset": 0.0, "score": 0.0612,
                                "trial_number": 417}))
    params = fs.load_params(path)
    assert params.values["friction_base"] == 0.04
    assert "score" not in params.values and "trial_number" not in params.values


@pytest.mark.parametrize("dtype", [np.int64, np.float32])
def test_kernels_refuse_arrays_that_are_not_float64(dtype):
    n = 20
    good = {"goal": np.ones(n), "enable": np.ones(n), "supply": np.full(n, 7.4),
            "out_q": np.zeros(n), "out_v": np.zeros(n)}
    # Each refusal is a failed compilation (seconds): an input and an output of each type, other
    # arguments for integers (whose outputs would be truncated) than for float32.
    for name in ("enable", "out_v") if dtype is np.int64 else ("goal", "out_q"):
        args = {**good, name: good[name].astype(dtype)}
        with pytest.raises(Exception, match="float64 arrays"):
            rollout(args["goal"], args["enable"], args["supply"], 0.0, 0.0, THETA, BENCH, 0.005,
                    args["out_q"], args["out_v"])
    with pytest.raises(Exception, match="float64 arrays"):
        step(0.0, 0.0, 1.0, 1.0, 0.005, THETA.astype(dtype), BENCH)
    with pytest.raises(Exception, match="float64 arrays"):
        servo_control(np.zeros(layout.SERVO_STATE_SIZE, dtype), 0.5, 0.0, 0.0, NO_LOG, THETA,
                      BENCH)
    # from Python, named in one line (a user's @njit code gets the compiled solve)
    with pytest.raises(ConfigurationError, match=r"clip_friction: mass_matrix: frictionsim's "
                                                 r"kernels take float64 arrays.*got"):
        clip_friction(np.eye(2).astype(dtype), np.ones(2), np.zeros(2), np.ones(2), 0.001)
