"""An eRob joint as the bench recorder sees it (:class:`frictionsim.hw.servo.BenchServo`).

The eRob is modelled (docs/model.md §3) as a current-controlled servo whose "firmware"
is the proportional-derivative law ``i = clip(kp·(q_target − q) − d·√kp·v, ±12 A)``.
The drive's own position loop is not that law, so the joint runs in cyclic
synchronous torque (CST) mode and this adapter computes the law on the host, one
control period of the servo bank each cycle (:func:`frictionsim.servo_bank.period_servo`,
the one place a period is written), in a background thread at the EtherCAT cycle rate (1 kHz by
default): each cycle it reads position and velocity, computes the current,
sends it as target torque (‰ of the rated current) and keeps the CiA 402 state
machine where the torque flag wants it (operation enabled, or switched on with
the power stage off). The recorder's calls only exchange values with that
thread. ``input_volts`` is the DC-link voltage (0x6079); the eRob has no
standard temperature object, so ``temp`` is logged as 0.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from frictionsim import layout, schema
from frictionsim.errors import ConfigurationError
from frictionsim.firmware import firmware_settings
from frictionsim.hw.ethercat import cia402, pdo
from frictionsim.hw.ethercat.cia402 import State
from frictionsim.hw.ethercat.drive import Cia402Drive, EthercatError
from frictionsim.params import ParameterSet
from frictionsim.servo_bank import period_servo
from frictionsim.servo_unit import NO_LOG, servo_state


class ErobServo:
    """A CiA 402 ``drive`` (already in OP) driven by the host-side eRob law.

    ``start=False`` leaves the cyclic thread off; the caller then runs :meth:`cycle`
    itself (tests, or a user's own real-time loop).
    """

    def __init__(self, drive: Cia402Drive, motor: str = "erob80_100",
                 clock: Callable[[], float] = time.perf_counter, start: bool = True) -> None:
        act = schema.get_actuator(motor)
        if act.law != "current":
            raise ConfigurationError(f"{motor} is not an eRob (current-controlled) actuator")
        self.motor = motor
        self.drive = drive
        self.clock = clock
        self.theta = ParameterSet("m1", motor, {}).theta()
        self.bench = firmware_settings(act, {"kp": act.kp}, drive.cycle)
        self.record = servo_state(0.0, 0.0)  # the law keeps no state; the bank's record
        self._goal = 0.0
        self._enable = False
        self._sample: dict | None = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._fresh = threading.Event()
        self._law(0.0, 0.0, 0.0)  # compile before the loop
        drive.enable(pdo.CST)
        self._thread = threading.Thread(target=self._run, name=f"{motor} cyclic", daemon=True)
        if start:
            self._thread.start()

    # -- the cyclic loop ------------------------------------------------------------------
    def cycle(self) -> None:
        """One control cycle: exchange, law, state machine (the thread calls it every period)."""
        drive, units = self.drive, self.drive.units
        inputs = drive.inputs
        with self._lock:
            goal, enable = self._goal, self._enable
        target = State.OPERATION_ENABLED if enable else State.SWITCHED_ON
        torque = 0
        if inputs is not None:
            q = units.counts_to_rad(inputs.position)
            v = units.counts_s_to_rad_s(inputs.velocity)
            if enable and drive.state() is State.OPERATION_ENABLED:
                amps = self._law(goal, q, v)
                torque = units.amps_to_per_mille(amps)
        state = drive.state()
        if state is State.FAULT:
            raise EthercatError(f"{drive.ifname}: drive fault 0x{drive.error_code():04X} "
                                f"while recording")
        drive.set_targets(torque=torque, controlword=cia402.next_controlword(
            state, target, drive.outputs.controlword))
        inputs = drive.exchange()
        if inputs is not None:
            sample = {"position": units.counts_to_rad(inputs.position),
                      "speed": units.counts_s_to_rad_s(inputs.velocity),
                      "load": inputs.torque, "input_volts": inputs.dc_link_mv / 1000.0,
                      "temp": 0.0}
            with self._lock:
                self._sample = sample
            self._fresh.set()

    def _law(self, goal: float, q: float, v: float) -> float:
        """The eRob law's current (A) for goal, position q (rad) and velocity v (rad/s)."""
        return period_servo(self.record, self.theta, self.bench, goal, q, v, 1.0, NO_LOG,
                            self.drive.cycle, False)

    def _run(self) -> None:
        period = self.drive.cycle
        tick = self.clock()
        try:
            while not self._stop.is_set():
                self.cycle()
                tick += period
                delay = tick - self.clock()
                if delay > 0:
                    time.sleep(delay)
                else:
                    tick = self.clock()
        except BaseException as error:  # reported to the recorder by the next call
            self._error = error
            self._fresh.set()

    def _check(self) -> None:
        if self._error is not None:
            raise EthercatError(f"eRob cyclic loop stopped: {self._error}") from self._error

    # -- the BenchServo interface ----------------------------------------------------------------
    def configure(self, kp: float) -> None:
        """Set the gain ``kp`` (A/rad) of the host-side law."""
        if not kp >= 0:
            raise ConfigurationError(f"kp = {kp!r} must be >= 0")
        self._check()
        with self._lock:
            self.bench[layout.KP] = kp

    def torque(self, enable: bool) -> None:
        """Torque on: operation enabled with the law; off: power stage off (switched on)."""
        self._check()
        with self._lock:
            self._enable = bool(enable)

    def goal(self, position: float) -> None:
        self._check()
        with self._lock:
            self._goal = float(position)

    def read(self, timeout: float = 0.1) -> dict:
        """The latest sample of the cyclic loop (waits for the first one)."""
        if not self._fresh.wait(timeout):
            raise EthercatError(f"{self.drive.ifname}: no process data for {timeout:g} s")
        self._check()
        with self._lock:
            return dict(self._sample)

    def __enter__(self) -> ErobServo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the loop, then quick stop, disable and release the network."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=1.0)
        self.drive.safe_stop()


def open_erob(ifname: str, motor: str = "erob80_100", slave: int = 0) -> ErobServo:
    """Bring up the eRob at ``slave`` on network interface ``ifname`` and start its loop."""
    drive = Cia402Drive.open(ifname, slave)
    try:
        return ErobServo(drive, motor)
    except BaseException:
        drive.safe_stop()
        raise
