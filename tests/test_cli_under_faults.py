"""The command line under faults: nothing a user had is lost or replaced unasked, nothing
non-finite is reported as a result, every wait is bounded, bad input never ends in a traceback."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import threading
import time
from pathlib import Path

import pytest

from frictionsim.bench_setup import BenchSetup
from frictionsim.experiments.common.output import fresh_directory
from frictionsim.experiments.identification.fitter import FitSettings, loss_of
from frictionsim.experiments.identification.pipeline import IdentifySettings, identify, prepare_out
from frictionsim.experiments.runner.cli import main
from frictionsim.experiments.synthetic.dataset import GROUND_TRUTH, restrict
from frictionsim.experiments.synthetic.virtual_bench import SensorModel, record
from frictionsim.logs import Log, process, save_log
from frictionsim.params import ParameterSet, load_params, save_params
from frictionsim.solvers.batch import PackedLogs
from frictionsim.solvers.errors import SimulationError
from frictionsim.solvers.event_driven import EventSolver, Tolerances
from frictionsim.solvers.one_joint import CoulombOscillator

TRUTH = restrict(GROUND_TRUTH, "m1")


@pytest.fixture(scope="module")
def logs():
    """Four short noise-free processed logs of the virtual MX-64 (two gains)."""
    out = []
    for kp in (16.0, 32.0):
        for trajectory in ("up_and_down", "sin_sin"):
            log = process(record(TRUTH, BenchSetup(0.5, 0.1, kp, 0.05), trajectory,
                                 SensorModel.ideal(), duration=2.0))
            log.path = Path(f"{trajectory}_kp{kp:g}.json")
            out.append(log)
    return out


@pytest.fixture
def folder(logs, tmp_path):
    path = tmp_path / "logs"
    path.mkdir()
    for log in logs:
        save_log(path / log.name, log)
    return path


@pytest.fixture
def params_file(tmp_path):
    return save_params(tmp_path / "truth.json", TRUTH)


def snapshot(*folders: Path) -> dict[Path, str]:
    """SHA-256 of every file under ``folders``."""
    return {p: hashlib.sha256(p.read_bytes()).hexdigest()
            for f in folders for p in sorted(Path(f).rglob("*")) if p.is_file()}


# ------------------------------------------------------------------ no data lost

def test_process_into_its_own_input_directory_is_refused(tmp_path, logs, capsys):
    raw = tmp_path / "raw"
    for i, log in enumerate(logs):
        save_log(raw / f"r{i}.json", Log({k: v for k, v in log.header.items() if k != "dt"},
                                         log.entries, None))
    before = snapshot(raw)
    assert main(["process", str(raw), str(raw)]) == 1
    assert main(["process", str(raw), str(raw), "--overwrite"]) == 1
    assert main(["process", str(raw / "r0.json"), str(raw), "--overwrite"]) == 1
    err = capsys.readouterr().err
    assert "would overwrite the input log" in err and "r0.json" in err
    assert snapshot(raw) == before


def test_process_never_replaces_an_existing_log_unless_asked(tmp_path, logs, capsys):
    raw = tmp_path / "raw"
    save_log(raw / "a.json", Log({k: v for k, v in logs[0].header.items() if k != "dt"},
                                 logs[0].entries, None))
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.json").write_text("an earlier result")
    assert main(["process", str(raw), str(out)]) == 1
    assert "--overwrite" in capsys.readouterr().err
    assert (out / "a.json").read_text() == "an earlier result"
    assert main(["process", str(raw), str(out), "--overwrite"]) == 0
    assert json.loads((out / "a.json").read_text())["dt"] == 0.005


def identify_argv(folder, out, *extra):
    return ["identify", "--actuator", "mx64", "--logs", str(folder), "--out", str(out),
            "--no-progress", *extra]


def test_second_identify_into_the_same_out_is_refused(folder, tmp_path, capsys):
    out = tmp_path / "ident"
    assert main(identify_argv(folder, out, "--model", "m1", "m3", "--budget", "200")) == 0
    before = snapshot(out)
    capsys.readouterr()
    assert main(identify_argv(folder, out, "--model", "m1", "--budget", "20")) == 1
    err = capsys.readouterr().err
    assert "not empty" in err and "--resume" in err and "--overwrite" in err
    assert snapshot(out) == before


def test_resume_keeps_the_better_fit_and_reports_models_not_refitted(folder, logs, tmp_path,
                                                                       capsys):
    out = tmp_path / "ident"
    assert main(identify_argv(folder, out, "--model", "m1", "m3", "--budget", "300")) == 0
    packed = PackedLogs.from_logs(logs, "mx64")
    first = loss_of(packed, load_params(out / "m1.json").theta()[None, :])[0]
    m3_before = (out / "m3.json").read_bytes()
    # A much smaller budget from a poor start would do worse on its own; resumed, it cannot.
    assert main(identify_argv(folder, out, "--model", "m1", "--budget", "5", "--seed", "9",
                              "--resume")) == 0
    second = loss_of(packed, load_params(out / "m1.json").theta()[None, :])[0]
    assert second <= first
    assert (out / "m3.json").read_bytes() == m3_before
    report = json.loads((out / "report.json").read_text())
    assert set(report["models"]) == {"m1", "m3"}
    assert report["models"]["m3"]["kept_from_earlier_run"] is True
    assert report["models"]["m1"]["kept_from_earlier_run"] is False
    assert "(kept)" in (out / "report.md").read_text()


def test_overwrite_removes_the_earlier_identification_only(folder, tmp_path, capsys):
    out = tmp_path / "ident"
    assert main(identify_argv(folder, out, "--model", "m1", "m3", "--budget", "100")) == 0
    (out / "notes.txt").write_text("mine")
    assert main(identify_argv(folder, out, "--model", "m1", "--budget", "50", "--overwrite")) == 0
    assert "is replaced once this one is done" in capsys.readouterr().out
    assert not (out / "m3.json").exists()  # no stale model beside a report that omits it
    assert set(json.loads((out / "report.json").read_text())["models"]) == {"m1"}
    assert (out / "notes.txt").read_text() == "mine"


def test_overwrite_never_deletes_what_is_not_a_parameter_file(logs, tmp_path):
    out = tmp_path / "logs"
    save_log(out / "m1.json", logs[0])  # a log that happens to be called m1.json
    before = snapshot(out)
    with pytest.raises(ValueError, match="m1.json is not a parameter file"):
        prepare_out(out, "mx64", overwrite=True)
    assert snapshot(out) == before


def test_resume_refuses_parameter_files_of_another_actuator(folder, tmp_path):
    out = tmp_path / "ident"
    out.mkdir()
    save_params(out / "m1.json", ParameterSet.defaults("m1", "xl330"))
    with pytest.raises(ValueError, match="actuator xl330, not mx64"):
        prepare_out(out, "mx64", resume=True)


@pytest.mark.parametrize("command", ["simulate", "compare", "crosscheck", "bench", "oscillator"])
def test_existing_json_or_figure_is_never_replaced_unasked(command, folder, params_file, tmp_path,
                                                           capsys):
    log = str(folder / "up_and_down_kp16.json")
    argv = {"simulate": ["simulate", "--params", str(params_file), log],
            "compare": ["compare", "--params", str(params_file), "--logs", log],
            "crosscheck": ["crosscheck", "--params", str(params_file), "--logs", log,
                           "--dts", "0.005"],
            "bench": ["bench", "--models", "m1", "--repeats", "1", "--candidates", "1"],
            "oscillator": ["run", "oscillator"]}[command]
    for flag, name in (("--json", "r.json"), ("--plot", "r.png")):
        if command == "bench" and flag == "--plot":
            continue
        earlier = tmp_path / name
        earlier.write_text("an earlier result")
        assert main(argv + [flag, str(earlier)]) == 1
        assert "--overwrite" in capsys.readouterr().err
        assert earlier.read_text() == "an earlier result"
    assert main(argv + ["--json", str(tmp_path / "r.json"), "--overwrite"]) == 0
    assert json.loads((tmp_path / "r.json").read_text())


def test_demo_never_replaces_an_earlier_demo(tmp_path, monkeypatch, capsys):
    earlier = tmp_path / "frictionsim-demo"
    (earlier / "identification").mkdir(parents=True)
    (earlier / "identification" / "m1.json").write_text("earlier")
    assert fresh_directory(earlier) == tmp_path / "frictionsim-demo-2"
    assert main(["demo", "--out", str(earlier), "--budget", "10"]) == 1
    assert "not empty" in capsys.readouterr().err
    assert (earlier / "identification" / "m1.json").read_text() == "earlier"


# --------------------------------------------------------- nothing silently wrong

@pytest.fixture
def overflowing_params(tmp_path):
    data = {**TRUTH.to_dict(), "kt": 1e300}
    path = tmp_path / "overflow.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("command", ["simulate", "compare", "crosscheck"])
def test_a_parameter_that_would_overflow_the_simulation_is_refused_naming_file_and_key(
        command, folder, overflowing_params, tmp_path, capsys):
    # k_t = 1e300 once overflowed the kernels mid-run; such a value is refused at load now
    log = str(folder / "up_and_down_kp16.json")
    argv = {"simulate": ["simulate", "--params", str(overflowing_params), log],
            "compare": ["compare", "--params", str(overflowing_params), "--logs", log],
            "crosscheck": ["crosscheck", "--params", str(overflowing_params), "--logs", log]}[command]
    assert main(argv + ["--json", str(tmp_path / "r.json")]) == 1
    err = capsys.readouterr().err
    assert "overflow.json: kt = 1e+300 is implausibly large" in err
    assert not (tmp_path / "r.json").exists()


def test_identify_names_a_log_that_cannot_be_simulated_and_saves_nothing(logs, tmp_path):
    broken = Log({**logs[0].header, "length": 1e200}, logs[0].entries, Path("broken.json"))
    with pytest.raises(SimulationError, match="broken.json"):
        identify([logs[1], broken], [],
                 IdentifySettings(("m1",), "mx64", FitSettings(budget=50), progress=False),
                 tmp_path / "out")
    assert not (tmp_path / "out" / "m1.json").exists()


def test_validation_on_training_logs_is_refused(folder, tmp_path, capsys):
    assert main(identify_argv(folder, tmp_path / "o", "--model", "m1", "--validation",
                              str(folder / "sin_sin_kp16.json"))) == 1
    err = capsys.readouterr().err
    assert "sin_sin_kp16.json is the training log" in err and "same recording" in err


def test_init_values_outside_the_bounds_are_named(folder, tmp_path, capsys):
    init = tmp_path / "init.json"
    init.write_text(json.dumps({**TRUTH.to_dict(), "friction_base": 0.5, "kt": 20.0}))
    assert main(identify_argv(folder, tmp_path / "o", "--model", "m1", "--budget", "20",
                              "--init", str(init))) == 0
    err = capsys.readouterr().err
    for name in ("friction_base = 0.5", "kt = 20"):
        assert name in err
    assert err.count("outside its search bounds") == 2


# ------------------------------------------------------------------- bounded work

def test_event_solver_gives_up_instead_of_running_for_ever():
    solver = EventSolver(Tolerances(max_nfev=30))
    with pytest.raises(SimulationError, match="more than 30 right-hand-side evaluations"):
        solver.advance(CoulombOscillator(), 0.0, 10.0, 2.75, 0.0, 1, False)


def test_event_solver_refuses_a_non_finite_right_hand_side():
    class Exploding(CoulombOscillator):
        def slip_acceleration(self, q, v, sign):
            return float("nan")

    with pytest.raises(SimulationError, match="non-finite derivative"):
        EventSolver().advance(Exploding(), 0.0, 1.0, 1.0, 0.5, 1, True)


def test_dask_address_that_is_not_a_scheduler_times_out():
    pytest.importorskip("distributed")
    from frictionsim.experiments.identification.distributed import connect

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
    started = time.perf_counter()
    with pytest.raises(TimeoutError, match="no answer as a Dask scheduler"):
        connect(f"tcp://127.0.0.1:{server.getsockname()[1]}", timeout=1.0)
    assert time.perf_counter() - started < 30
    server.close()


def test_dask_scheduler_without_workers_times_out(logs, tmp_path):
    distributed = pytest.importorskip("distributed")
    from frictionsim.experiments.identification.distributed import fit_on_dask

    with distributed.LocalCluster(n_workers=0, dashboard_address=None, processes=False) as cluster:
        with pytest.raises(TimeoutError, match="no worker joined"):
            fit_on_dask(cluster.scheduler_address, ["m1"], "mx64", {},
                        PackedLogs.from_logs(logs, "mx64"), FitSettings(budget=20), tmp_path,
                        None, worker_timeout=1.0)


# ------------------------------------------------------------------ no tracebacks

@pytest.mark.parametrize("argv, culprit", [
    (["crosscheck", "--params", "{params}", "--logs", "{log}", "--dts", "0"], "--dts 0"),
    (["crosscheck", "--params", "{params}", "--logs", "{log}", "--dts", "0.003"], "--dts 0.003"),
    (["crosscheck", "--params", "{params}", "--logs", "{log}", "--dts", "1e-9"], "--dts 1e-09"),
    (["crosscheck", "--params", "{params}", "--logs", "{log}", "--dts", "1e-300"],
     "--dts 1e-300: 5e+297 steps per log period; at most"),
    (["crosscheck", "--params", "{params}", "--logs", "{log}", "--rtol", "1e-300"],
     "rtol=1e-300 is below 2.22e-14"),
    (["export-mjcf", "--target", "dcmotor", "--params", "{params}", "--logs", "{log}", "--budget",
      "0"], "--budget"),
    (["bench", "--budget", "0"], "--budget"),
    (["virtual-servo", "--params", "{params}", "--physics-dt", "0"], "physics_dt"),
    (["virtual-servo", "--params", "{params}", "--mass", "-1"], "mass"),
    (["simulate", "--params", "{params}", "{log}", "--plot", "{tmp}/figure"], "no suffix"),
    (["simulate", "--params", "{params}", "{log}", "--plot", "{tmp}/figure.xyz"], "suffix .xyz"),
    (["simulate", "--params", "{tmp}/nested.json", "{log}"], "nested too deeply"),
    (["simulate", "--params", "{params}", "{log}", "--json", "{tmp}/r.png", "--plot",
      "{tmp}/r.png"], "is also the --plot output"),
    (["process", "{tmp}/nonfinite", "{tmp}/out"], "nan.json"),
])
def test_bad_input_is_one_line_naming_the_culprit(argv, culprit, folder, params_file, tmp_path,
                                                  capsys):
    (tmp_path / "nested.json").write_text("[" * 50_000 + "]" * 50_000)
    nonfinite = tmp_path / "nonfinite"
    nonfinite.mkdir()
    (nonfinite / "nan.json").write_text(
        '{"mass": 0.5, "length": 0.1, "kp": 32, "note": {"offset": NaN}, "entries": []}')
    fill = {"params": str(params_file), "log": str(folder / "sin_sin_kp32.json"),
            "tmp": str(tmp_path)}
    assert main([a.format(**fill) for a in argv]) == 1
    err = capsys.readouterr().err
    assert culprit in err and "Traceback" not in err


@pytest.mark.parametrize("value", ["-1", "99999999999999", "1.5", "abc"])
def test_unusable_seed_is_refused_by_the_parser(value, folder, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(identify_argv(folder, tmp_path / "o", "--model", "m1", "--seed", value))
    assert e.value.code == 2
    assert "--seed" in capsys.readouterr().err


def test_ctrl_c_during_start_up(monkeypatch, capsys):
    from frictionsim.experiments.runner.registry import Command

    def interrupted(self):
        raise KeyboardInterrupt  # while the command's module is being imported

    monkeypatch.setattr(Command, "load", interrupted)
    assert main(["simulate", "--help"]) == 130
    assert "interrupted" in capsys.readouterr().err


def test_an_unexpected_error_is_one_line_not_a_traceback(monkeypatch, params_file, folder, capsys):
    import frictionsim.solvers.rollouts as simulate_command

    def broken(log, params):
        raise RuntimeError("something unforeseen")

    monkeypatch.setattr(simulate_command, "simulate", broken)
    monkeypatch.delenv("FRICTIONSIM_DEBUG", raising=False)
    assert main(["simulate", "--params", str(params_file), str(folder)]) == 2
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: something unforeseen" in err and "Traceback" not in err


# --------------------------------------------------------- readable output files

def test_outputs_are_readable_like_the_figures(folder, params_file, tmp_path):
    old = os.umask(0o022)
    try:
        assert main(["simulate", "--params", str(params_file), str(folder), "--json",
                     str(tmp_path / "s.json"), "--plot", str(tmp_path / "s.png")]) == 0
        assert main(identify_argv(folder, tmp_path / "o", "--model", "m1", "--budget", "20")) == 0
    finally:
        os.umask(old)
    for path in (tmp_path / "s.json", tmp_path / "s.png", tmp_path / "o" / "m1.json",
                 tmp_path / "o" / "report.json", tmp_path / "o" / "report.md"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path


def test_report_md_says_the_run_was_interrupted(folder, tmp_path, monkeypatch):
    calls = {"n": 0}
    original = PackedLogs.errors

    def interrupted_errors(self, thetas):
        calls["n"] += 1
        if calls["n"] == 8:
            raise KeyboardInterrupt
        return original(self, thetas)

    monkeypatch.setattr(PackedLogs, "errors", interrupted_errors)
    out = tmp_path / "o"
    assert main(identify_argv(folder, out, "--model", "m1", "m3", "--budget", "3000")) == 130
    monkeypatch.setattr(PackedLogs, "errors", original)
    report = (out / "report.md").read_text()
    assert "Interrupted" in report and "m1 stopped" in report
    assert json.loads((out / "report.json").read_text())["interrupted"] is True


def test_a_ctrl_c_right_after_the_temporary_file_is_made_leaves_nothing(tmp_path, monkeypatch):
    from frictionsim import atomic

    real_open = os.open

    def open_then_interrupted(*args, **kwargs):
        os.close(real_open(*args, **kwargs))  # the file exists; the interrupt comes first
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "open", open_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic.write_json(tmp_path / "out.json", {"a": 1})
    assert list(tmp_path.iterdir()) == []


def test_an_interrupt_held_by_a_compile_past_the_grace_leaves_with_the_folders_settled(
        tmp_path, monkeypatch, capsys):
    """A signal that lands while Numba compiles is held back (an exception raised in the
    compiler crashes the process later); once it has waited COMPILE_GRACE the program leaves
    at once, never re-entering the compiler: the folders being written are settled as an
    interrupt settles them, and one line is said. In-process (a test), it never leaves."""
    import signal

    from frictionsim.experiments.common import staging
    from frictionsim.experiments.runner import cli

    out = tmp_path / "fit"
    out.mkdir()
    (out / "m1.json").write_text("earlier")
    staged = staging.StagedFolder(out, overwrite=True)
    stage = staged.__enter__()
    (stage / "m1.json").write_text("best so far")
    left = {}

    def leave(code):
        left["code"] = code
        raise SystemExit(code)

    monkeypatch.setattr(cli.os, "_exit", leave)
    monkeypatch.setattr(cli, "_deliver_later", lambda signum: None)
    monkeypatch.setattr(cli, "_inside_the_compiler", lambda frame: True)
    monkeypatch.setattr(cli, "_SIGNALLED", None)
    monkeypatch.setattr(cli, "_PENDING", [])
    monkeypatch.setattr(cli, "_COMMAND", ["frictionsim identify"])
    clock = {"t": 100.0}
    monkeypatch.setattr(cli.time, "monotonic", lambda: clock["t"])
    # in-process (main called by a test): held back however long the compile takes
    monkeypatch.setattr(cli, "_MAY_LEAVE", {"program": False, "command": True})
    cli._on_signal(signal.SIGINT, None)
    clock["t"] += 10.0
    cli._on_signal(signal.SIGINT, None)
    assert not left and len(cli._PENDING) == 2
    # the program, a command that holds no servo: within the grace still held ...
    monkeypatch.setattr(cli, "_MAY_LEAVE", {"program": True, "command": True})
    monkeypatch.setattr(cli, "_PENDING", [])
    cli._on_signal(signal.SIGINT, None)
    clock["t"] += 0.2
    cli._on_signal(signal.SIGINT, None)
    assert not left
    # ... past it, it leaves: 130, the earlier result kept, the partial one beside it
    clock["t"] += cli.COMPILE_GRACE
    with pytest.raises(SystemExit):
        cli._on_signal(signal.SIGINT, None)
    assert left["code"] == 130
    assert (out / "m1.json").read_text() == "earlier"
    assert (tmp_path / "fit.interrupted" / "m1.json").read_text() == "best so far"
    assert not staging.ACTIVE and not any(".new-" in p.name for p in tmp_path.iterdir())
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"frictionsim identify: interrupted; {out} keeps the earlier result; this run's partial "
        f"one is in {tmp_path / 'fit.interrupted'}")
    # a command that holds a servo's torque always unwinds
    monkeypatch.setattr(cli, "_MAY_LEAVE", {"program": True, "command": False})
    monkeypatch.setattr(cli, "_PENDING", [])
    left.clear()
    cli._on_signal(signal.SIGINT, None)
    clock["t"] += 60.0
    cli._on_signal(signal.SIGINT, None)
    assert not left
