"""Signals at any moment, with both cores busy: one line, exit 128 + signal, outputs complete
or absent, the next run works; a recording ended by SIGTERM or SIGHUP releases the torque
and closes its log.

The moments are drawn at random (seeded) over the start-up, kernel loading, compilation and
work of each command; the test asserts what must hold whenever the signal lands, so it
does not depend on where it lands.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
XL330 = DATA / "xl330"
FRICTIONSIM = [sys.executable, "-m", "frictionsim.experiments.runner.cli"]


@pytest.fixture(scope="module")
def busy_cores():
    """Two processes keeping both cores busy for at most 10 minutes."""
    spin = "import time\nend = time.time() + 600\nwhile time.time() < end:\n    pass\n"
    procs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(2)]
    yield
    for p in procs:
        p.kill()
        p.wait()


def commands(out: Path) -> dict[str, list[str]]:
    return {
        "demo": ["demo", "--out", str(out / "demo"), "--budget", "50", "--models", "m1"],
        "identify": ["identify", "--actuator", "xl330", "--model", "m1", "m4", "--logs",
                     str(XL330 / "processed"), "--budget", "400", "--out", str(out / "fit"),
                     "--json", str(out / "fit.json"), "--no-progress"],
        "bench": ["bench", "--json", str(out / "bench.json"), "--repeats", "1"],
        "simulate": ["simulate", "--params", str(XL330 / "params" / "m6.json"),
                     str(XL330 / "processed"), "--json", str(out / "sim.json")],
        "robot identify": ["robot", "identify", "--robot", "so101", "--data", str(DATA),
                           "--recordings",
                           str(DATA / "so101" / "recordings"), "--model", "m1", "--budget",
                           "60", "--out", str(out / "robot"), "--json", str(out / "robot.json"),
                           "--no-progress"],
    }


def handlers_in_place(proc: subprocess.Popen) -> None:
    """Wait until frictionsim handles the signals: its SIGTERM bit in /proc's SigCgt, which
    only frictionsim's own handlers set (the interpreter catches SIGINT alone). They are in
    place from the first line of ``frictionsim/__init__.py`` (frictionsim.startup), before
    the package's imports; before that, in the interpreter's own start, no program can handle
    a signal (on a busy machine those milliseconds can stretch)."""
    status = Path(f"/proc/{proc.pid}/status")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            caught = next(line for line in status.read_text().splitlines()
                          if line.startswith("SigCgt:"))
        except (OSError, StopIteration):
            return  # no /proc: the random delays start at 0.2 s anyway
        if int(caught.split()[1], 16) & (1 << (signal.SIGTERM - 1)):
            return
        time.sleep(0.001)


def check_outputs(folder: Path) -> None:
    """Every JSON output parses; no temporary file of an atomic write is left behind."""
    for path in folder.rglob("*"):
        assert not path.name.endswith(".tmp"), path
        if path.suffix == ".json" and path.is_file():
            json.loads(path.read_text())


@pytest.mark.skipif(not XL330.is_dir(), reason="shared data not found")
@pytest.mark.parametrize("name", ["demo", "identify", "bench", "simulate", "robot identify"])
def test_an_interrupt_at_any_moment_exits_130_with_one_line(name, busy_cores, tmp_path):
    rng = random.Random(f"signals-{name}")
    for trial in range(3):
        out = tmp_path / f"t{trial}"
        out.mkdir()
        proc = subprocess.Popen([*FRICTIONSIM, *commands(out)[name]], cwd=out,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        handlers_in_place(proc)
        # the robot's fit spends its first seconds reading 35 recordings: later moments too
        time.sleep(rng.uniform(0.0, 20.0 if name == "robot identify" else 3.0))
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        lines = [line for line in err.splitlines() if line.strip() and
                 not line.startswith("warning:")]
        if proc.returncode == 0:  # it finished before the signal: a normal, complete run
            assert not [line for line in lines if "error" in line], err
        else:
            assert proc.returncode == 130, err
            # one line: the interrupt, and what the command kept where it says
            assert len(lines) == 1, err
            assert lines[0] == f"frictionsim {name}: interrupted" or \
                lines[0].startswith(f"frictionsim {name}: interrupted; "), err
        check_outputs(out)
    again = subprocess.run([*FRICTIONSIM, "simulate", "--params",
                            str(XL330 / "params" / "m1.json"),
                            str(XL330 / "processed" / "2026-01-15_10h28m42.json")],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)],
                         ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_frictionsim_is_still_importing_exits_with_one_line(sig, code,
                                                                           busy_cores):
    """The signal lands as soon as frictionsim's start-up handlers are in place, while
    ``import frictionsim`` is still loading (numpy, the kernel cache's check, the actuator
    declarations): one line and 128 + signal, not a traceback and −2. The handlers come
    before every import of the package but ``sys`` and the stdlib-only start-up module."""
    import ast

    import frictionsim

    body = ast.parse(Path(frictionsim.__file__).read_text()).body
    first_if = next(i for i, node in enumerate(body) if isinstance(node, ast.If))
    before = [node for node in body[:first_if] if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert [ast.unparse(n) for n in before] == ["import sys as _sys",
                                                "from frictionsim import startup as _startup"]
    assert "_startup.guard" in ast.unparse(body[first_if])
    for _ in range(3):
        proc = subprocess.Popen([*FRICTIONSIM, "demo", "--budget", "10"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        handlers_in_place(proc)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == code, err
        assert [line for line in err.splitlines() if line.strip()] == [
            f"frictionsim demo: {'interrupted' if sig == signal.SIGINT else 'terminated (SIGTERM)'}"
        ], err


@pytest.mark.skipif(not XL330.is_dir(), reason="shared data not found")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_terminated_recording_releases_the_torque_and_closes_its_log(sig, tmp_path):
    from frictionsim.hw.connect import open_servo

    server = subprocess.Popen(
        [*FRICTIONSIM, "virtual-servo", "--params", str(XL330 / "params" / "m1.json"),
         "--mass", "0.3", "--length", "0.1", "--vin", "7.4"], stdout=subprocess.PIPE, text=True)
    try:
        server.stdout.readline()
        device = server.stdout.readline().strip()
        assert device.startswith("/dev/")
        recorder = subprocess.Popen(
            [*FRICTIONSIM, "record", "--motor", "xl330", "--port", device, "--mass", "0.3",
             "--length", "0.1", "--kp", "400", "--trajectory", "sin_sin", "--logdir",
             str(tmp_path), "--reply-timeout", "1"],  # a real-time servo on a busy machine
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob("*.json")) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # recording in progress
        recorder.send_signal(sig)
        _, err = recorder.communicate(timeout=120)
        assert recorder.returncode == 128 + sig, err
        name = "SIGTERM" if sig == signal.SIGTERM else "SIGHUP"
        assert f"frictionsim record: terminated ({name})" in err
        log = json.loads(next(tmp_path.glob("*.json")).read_text())
        assert log["incomplete"] is True
        assert log["reason"] != "recording in progress" and "Terminated" in log["reason"]
        assert len(log["entries"]) > 10
        with open_servo("xl330", device, reply_timeout=1.0) as servo:
            register = servo.table.torque_enable
            assert servo.bus.read(servo.id, register.address, register.size) == b"\x00"
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_compile_in_a_worker_thread_holds_the_signal_back_like_one_in_the_main_thread():
    # the robot fit's evaluator threads compile its kernels while the main thread waits on
    # them: a signal raised in the main thread then waited for the whole compile (46-68 s)
    import threading

    from numba.core.compiler_lock import global_compiler_lock

    from frictionsim.experiments.runner.cli import _inside_the_compiler

    assert not _inside_the_compiler(None)
    held, release = threading.Event(), threading.Event()

    def compiling() -> None:
        with global_compiler_lock:
            held.set()
            release.wait(10)

    worker = threading.Thread(target=compiling)
    worker.start()
    try:
        assert held.wait(10)
        assert _inside_the_compiler(None)
    finally:
        release.set()
        worker.join()
    assert not _inside_the_compiler(None)


def test_a_signal_during_numbas_own_import_is_held_back_not_an_error(monkeypatch):
    # seen under load: the signal landed while numba.core.compiler_lock was half imported,
    # and reading its lock raised AttributeError out of the handler (exit 2, "internal error")
    import types

    from frictionsim.experiments.runner import cli

    half = types.ModuleType("numba.core.compiler_lock")
    monkeypatch.setitem(sys.modules, "numba.core.compiler_lock", half)
    assert not cli._inside_the_compiler(None)
    frame = types.SimpleNamespace(f_code=types.SimpleNamespace(
        co_filename=f"{os.sep}site-packages{os.sep}numba{os.sep}core{os.sep}compiler_lock.py"),
        f_back=None)
    assert cli._inside_the_compiler(frame)


STUCK_MAIN_THREAD = """
import sys
import numba
from frictionsim.experiments.runner import cli

@numba.njit(cache=False, nogil=True)
def spin(n):  # Python runs no signal handler inside; the GIL is free, as Warp's compiler's is
    x = 0.0
    for i in range(n):
        x += (i % 7) * 1e-9
    return x

spin(10)
cli._MAY_LEAVE["program"] = True  # as the frictionsim program sets it
cli._COMMAND[0] = "frictionsim spin"
cli._install_signals()
print("ready", flush=True)
spin(int(sys.argv[1]))
print("the kernel returned", flush=True)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_main_thread_inside_a_long_native_call_still_leaves_on_a_signal(sig):
    """Warp compiling a module (through ctypes), or a nogil kernel that runs for seconds,
    holds the main thread where Python runs no handler: the watchdog sees the signal through
    the wakeup pipe and leaves with the one line (without it: a traceback once the kernel
    returns)."""
    proc = subprocess.Popen([sys.executable, "-c", STUCK_MAIN_THREAD, str(4 * 10**9)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.2)  # inside the kernel
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=600)
    name = "interrupted" if sig == signal.SIGINT else "terminated (SIGTERM)"
    assert proc.returncode == 128 + sig, err
    assert err.strip().splitlines() == [f"frictionsim spin: {name}"], err
    assert "the kernel returned" not in out
