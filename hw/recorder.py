"""The bench recorder: follow a trajectory at a fixed rate and log the servo (docs/model.md §6 raw log).

Each control tick (nominally 1/rate s) the recorder reads the servo, sends the
trajectory's goal and torque flag, and appends an entry with the time actually
elapsed, so the log carries the real period. The raw log is rewritten
atomically every ``flush_every`` entries, off the control loop: a crash, a silent servo or Ctrl-C
keeps everything recorded so far, in a valid log marked ``"incomplete": true``
with the reason. A complete log spans the whole trajectory: when the loop
stalls past the end, one late entry closes it. At the end, or on any failure, the arm is brought back slowly
to 0 when the servo still answers, and the torque is disabled.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from frictionsim import trajectories
from frictionsim.atomic import write_json
from frictionsim.bench_setup import BenchSetup
from frictionsim.errors import ConfigurationError
from frictionsim.hw.servo import BenchServo, ServoError
from frictionsim.logs import load_log


@dataclass
class Clock:
    """Time source and sleep of the control loop (injectable for tests)."""

    now: Callable[[], float] = time.perf_counter
    sleep: Callable[[float], None] = time.sleep


class Recording:
    """A raw log being recorded to ``path``; saved atomically as it grows.

    The saves every ``flush_every`` entries run on a thread of their own, so the control loop
    never waits for the disk: an atomic write ends with an fsync, which waits behind every
    other program's writes, and the log would carry that wait as a gap in its timestamps.
    :meth:`flush` writes the log at once (after a save in progress) and ends those saves."""

    def __init__(self, path: Path, header: dict, flush_every: int = 50):
        self.path = path
        self.header = header
        self.entries: list[dict] = []
        self.flush_every = flush_every
        self._due = threading.Event()
        self._one_write = threading.Lock()
        self._saver: threading.Thread | None = None
        self._closed = False
        self._save_error: BaseException | None = None

    def append(self, entry: dict) -> None:
        """Add an entry; raises what a background save met (a full disk…)."""
        if self._save_error is not None:
            raise self._save_error
        self.entries.append(entry)
        if len(self.entries) % self.flush_every == 0:
            if self._saver is None:
                self._saver = threading.Thread(target=self._save_when_due, daemon=True,
                                               name=f"saving {self.path.name}")
                self._saver.start()
            self._due.set()

    def _save_when_due(self) -> None:
        while True:
            self._due.wait()
            self._due.clear()
            with self._one_write:
                if self._closed:
                    return
                try:
                    # entries are only appended to: a slice is a consistent prefix
                    self._write(self.entries[:], True, "recording in progress")
                except BaseException as error:  # noqa: BLE001 - handed to the control loop
                    self._save_error = error
                    return

    def _write(self, entries: list[dict], incomplete: bool, reason: str | None) -> Path:
        header = dict(self.header)
        if incomplete:
            header["incomplete"] = True
            header["reason"] = reason or "interrupted"
        return write_json(self.path, {**header, "entries": entries}, indent=None)

    def flush(self, incomplete: bool = False, reason: str | None = None) -> Path:
        """Write the log now (``incomplete`` with its ``reason``), after any save in progress;
        no background save follows."""
        with self._one_write:
            self._closed = True
            out = self._write(self.entries[:], incomplete, reason)
        self._due.set()  # the saver, if any, wakes to see it is done
        return out


def return_to_zero(servo: BenchServo, start: float, duration: float = 1.5, rate: float = 100.0,
                   clock: Clock | None = None) -> None:
    """Move the goal from ``start`` to 0 along a cubic over ``duration`` seconds."""
    clock = clock or Clock()
    steps = max(1, int(duration * rate))
    for k in range(1, steps + 1):
        servo.goal(trajectories.cubic([(0.0, start, 0.0), (1.0, 0.0, 0.0)], k / steps))
        clock.sleep(1.0 / rate)


def record(servo: BenchServo, trajectory: str, setup: BenchSetup, path: Path, rate: float = 200.0,
           clock: Clock | None = None, duration: float = trajectories.DURATION,
           on_complete: Callable[[Path], None] | None = None) -> Path:
    """Record ``trajectory`` on the bench into the raw log ``path``; returns the path.

    Raises what went wrong (``ServoError``, ``KeyboardInterrupt``…) after saving
    the partial log and making the servo safe. ``on_complete(path)`` is called as soon as
    the complete log is written, before the arm returns to 0: an interruption during that
    return leaves a complete log, and the caller knows it.
    """
    if not rate > 0:
        raise ConfigurationError(f"rate = {rate!r} must be positive")
    target = trajectories.get_trajectory(trajectory)
    clock = clock or Clock()
    header = {**setup.header(), "motor": servo.motor, "trajectory": trajectory, "rate": rate}
    log = Recording(path, header)
    period = 1.0 / rate
    try:
        servo.configure(setup.kp)
        servo.goal(0.0)
        servo.torque(True)
        t0 = clock.now()
        tick = t0
        last = -np.inf
        while True:
            t = clock.now() - t0
            # a stall just before the end (a busy machine, a slow bus) still
            # closes the log with one late entry, so it always spans the motion
            if t >= duration and last >= duration - 1.5 * period:
                break
            last = t
            state = servo.read()
            goal, enable = target(t)
            servo.goal(goal)
            servo.torque(enable)
            log.append({
                "position": state["position"], "speed": state["speed"], "load": state["load"],
                "input_volts": state["input_volts"], "temp": state["temp"],
                "timestamp": t, "goal_position": goal, "torque_enable": bool(enable),
            })
            if t >= duration:
                break
            tick += period
            delay = tick - clock.now()
            if delay > 0:
                clock.sleep(delay)
            else:
                tick = clock.now()  # late: do not try to catch up with a burst
    except BaseException as error:
        # a Ctrl-C carries no message: its name alone, not "KeyboardInterrupt: "
        said = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        log.flush(incomplete=True, reason=said)
        if isinstance(error, KeyboardInterrupt):
            # the recording stopped at once; the safe return takes 1.5 s more (an arm
            # dropped with its torque off may hit the bench): say why the command has not left
            print("interrupted: the arm returns to 0 (1.5 s), then its torque goes off",
                  file=sys.stderr)
        _make_safe(servo, clock)
        raise
    out = log.flush()
    if on_complete is not None:
        on_complete(out)
    _make_safe(servo, clock)
    return out


def _make_safe(servo: BenchServo, clock: Clock) -> None:
    """Bring the arm back to 0 if the servo still answers, then disable torque."""
    try:
        position = servo.read()["position"]
        servo.torque(True)
        return_to_zero(servo, position, clock=clock)
    except (ServoError, OSError):
        pass
    finally:
        try:
            servo.torque(False)
        except (ServoError, OSError):
            pass


def new_log_path(logdir: Path, trajectory: str, setup: BenchSetup) -> Path:
    """A new file name in ``logdir`` naming the set-up; never one that exists already."""
    stem = f"{trajectory}_kp{setup.kp:g}_m{setup.mass:g}_l{setup.length:g}"
    path = logdir / f"{stem}.json"
    for n in itertools.count(2):
        if not path.exists():
            return path
        path = logdir / f"{stem}_{n}.json"
    raise AssertionError("unreachable")


def summarise(path: Path, rate: float) -> str:
    """One line on a recorded log: entries, duration and the actual control period."""
    log = load_log(path)
    t = np.array([e["timestamp"] for e in log.entries])
    period = np.diff(t) * 1e3
    late = np.mean(period > 1.5e3 / rate) * 100 if len(period) else 0.0
    return (f"{path}: {len(t)} entries over {t[-1]:.2f} s, period {period.mean():.2f} ± "
            f"{period.std():.2f} ms (max {period.max():.1f} ms, {late:.1f} % late by > 50 %)")


def record_new(servo: BenchServo, trajectory: str, setup: BenchSetup, logdir: Path,
               rate: float = 200.0, duration: float = trajectories.DURATION,
               on_complete: Callable[[Path], None] | None = None) -> Path:
    """Record ``trajectory`` into a new log of ``logdir``, saying where and how it went;
    ``on_complete`` as :func:`record`'s."""
    path = new_log_path(logdir, trajectory, setup)
    print(f"recording {trajectory} (kp {setup.kp:g}, {setup.mass:g} kg at {setup.length:g} m) "
          f"-> {path}", flush=True)
    complete: list[Path] = []

    def saved(out: Path) -> None:
        complete.append(out)
        if on_complete is not None:
            on_complete(out)

    try:
        record(servo, trajectory, setup, path, rate=rate, duration=duration, on_complete=saved)
    except BaseException:
        if complete:
            print(f"log complete: {path} (stopped while the arm returned to 0)", file=sys.stderr)
        elif path.exists():
            print(f"partial log kept (marked incomplete): {path}", file=sys.stderr)
        raise
    print(summarise(path, rate), flush=True)
    return path
