"""Bring-up and cyclic exchange of one CiA 402 drive (eRob) over EtherCAT with pysoem.

:class:`Cia402Drive` works on any object with pysoem's ``Master`` interface, so
tests run it against a fake master; the real path needs only an interface name
(:meth:`Cia402Drive.open`). Bring-up: open the interface, discover the slaves,
install the PDO mapping from the slave's configuration hook (PRE-OP → SAFE-OP),
map the process image, go to OP while exchanging process data. Then
:meth:`Cia402Drive.walk` steps the CiA 402 state machine to a target state with
fault resets, and :meth:`Cia402Drive.safe_stop` (quick stop, disable voltage,
INIT, close) runs on exit, error or Ctrl-C when the drive is used as a context
manager.
"""

from __future__ import annotations

import math
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from frictionsim.errors import MissingExtra
from frictionsim.hw.ethercat import cia402, pdo
from frictionsim.hw.ethercat.cia402 import State
from frictionsim.hw.servo import ServoError

# pysoem's EtherCAT state constants (ec_state), so that this module imports without pysoem.
INIT_STATE, PREOP_STATE, SAFEOP_STATE, OP_STATE = 0x01, 0x02, 0x04, 0x08
RATED_CURRENT, RATED_TORQUE, ERROR_CODE = 0x6075, 0x6076, 0x603F


class EthercatError(ServoError):
    """The EtherCAT network or the drive failed: no slave, a state not reached, a fault."""


@dataclass(frozen=True)
class DriveUnits:
    """How raw drive values map to SI units.

    ``counts_per_rev``: encoder counts per output turn (eRob: 2^19 by default);
    ``home_counts``: the count where the bench arm hangs down (angle 0);
    ``direction``: +1 if counts grow counter-clockwise, −1 otherwise;
    ``rated_current``: A behind 1000 ‰ of target/actual torque (read from 0x6075
    at bring-up when the drive has it).
    """

    counts_per_rev: int = 1 << 19
    home_counts: int = 0
    direction: int = 1
    rated_current: float = 1.0

    def counts_to_rad(self, counts: int) -> float:
        return self.direction * (counts - self.home_counts) * 2.0 * math.pi / self.counts_per_rev

    def rad_to_counts(self, angle: float) -> int:
        return round(self.direction * angle * self.counts_per_rev / (2.0 * math.pi)) + self.home_counts

    def counts_s_to_rad_s(self, velocity: int) -> float:
        return self.direction * velocity * 2.0 * math.pi / self.counts_per_rev

    def amps_to_per_mille(self, current: float) -> int:
        """Current (A, counter-clockwise positive) → target torque (‰ of rated)."""
        return max(-32768, min(32767, round(self.direction * 1000.0 * current / self.rated_current)))

    def per_mille_to_amps(self, torque: int) -> float:
        return self.direction * torque * self.rated_current / 1000.0


class Cia402Drive:
    """One CiA 402 drive, slave number ``slave`` (0-based) on ``master``.

    ``cycle`` is the process-data period in s; ``max_missed`` consecutive cycles
    with a low working counter are tolerated before :class:`EthercatError`.
    """

    def __init__(self, master: Any, slave: int = 0, units: DriveUnits | None = None,
                 cycle: float = 0.001, max_missed: int = 10,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.master = master
        self.slave_index = slave
        self.units = units or DriveUnits()
        self.cycle = cycle
        self.max_missed = max_missed
        self.sleep = sleep
        self.outputs = pdo.Outputs(controlword=cia402.DISABLE_VOLTAGE, mode=pdo.CST)
        self.inputs: pdo.Inputs | None = None
        self.missed = 0
        self.is_open = False
        self.ifname = "?"

    @property
    def slave(self) -> Any:
        return self.master.slaves[self.slave_index]

    @classmethod
    def open(cls, ifname: str, slave: int = 0, **kwargs: Any) -> Cia402Drive:
        """Bring up slave ``slave`` on network interface ``ifname`` (e.g. ``eth0``) with pysoem."""
        try:
            import pysoem  # optional dependency: only needed for real hardware
        except ImportError:
            raise MissingExtra("an EtherCAT drive needs pysoem: pip install 'frictionsim[hw]'") \
                from None

        drive = cls(pysoem.Master(), slave, **kwargs)
        drive.bring_up(ifname)
        return drive

    # -- bring-up -----------------------------------------------------------------------
    def bring_up(self, ifname: str) -> None:
        """Discover, map the PDOs, read the rated current, reach OP. Closes on failure."""
        self.ifname = ifname
        try:
            self.master.open(ifname)
        except Exception as error:
            raise EthercatError(f"cannot open EtherCAT interface {ifname!r}: {error} "
                                f"(wrong name, or no raw-socket permission: run as root or "
                                f"grant CAP_NET_RAW)") from error
        self.is_open = True
        try:
            found = self.master.config_init()
            if found <= 0:
                raise EthercatError(f"no EtherCAT slave found on {ifname!r}: drive powered, "
                                    f"cable in the IN port?")
            if self.slave_index >= len(self.master.slaves):
                raise EthercatError(f"{ifname}: slave {self.slave_index} requested, "
                                    f"{len(self.master.slaves)} found")
            slave = self.slave
            slave.config_func = lambda position: pdo.apply_mapping(slave.sdo_write)
            self.master.config_map()
            if self.master.state_check(SAFEOP_STATE, 50_000) != SAFEOP_STATE:
                self.master.read_state()
                raise EthercatError(f"{ifname}: slave {self.slave_index} ({slave.name}) did not "
                                    f"reach SAFE-OP (AL status 0x{slave.al_status:04X})")
            self._read_rated_current()
            self.master.state = OP_STATE
            self.exchange()
            self.master.write_state()
            for _ in range(200):
                self.exchange()
                if self.master.state_check(OP_STATE, 5_000) == OP_STATE:
                    break
            else:
                self.master.read_state()
                raise EthercatError(f"{ifname}: slave {self.slave_index} did not reach OP "
                                    f"(AL status 0x{slave.al_status:04X})")
        except BaseException:
            self.close()
            raise

    def _read_rated_current(self) -> None:
        try:
            milliamps = struct.unpack("<I", self.slave.sdo_read(RATED_CURRENT, 0)[:4])[0]
        except Exception:  # optional object: keep the configured value
            return
        if milliamps > 0:
            self.units = replace(self.units, rated_current=milliamps / 1000.0)

    # -- cyclic exchange ------------------------------------------------------------------
    def exchange(self) -> pdo.Inputs | None:
        """One process-data cycle: send ``outputs``, receive and decode the inputs."""
        self.slave.output = self.outputs.pack()
        self.master.send_processdata()
        wkc = self.master.receive_processdata(2_000)
        if wkc < self.master.expected_wkc:
            self.missed += 1
            if self.missed > self.max_missed:
                raise EthercatError(f"{self.ifname}: {self.missed} process-data cycles lost in a "
                                    f"row (working counter {wkc} < {self.master.expected_wkc})")
            return self.inputs
        self.missed = 0
        self.inputs = pdo.Inputs.unpack(bytes(self.slave.input))
        return self.inputs

    def state(self) -> State:
        """The drive state from the last inputs."""
        if self.inputs is None:
            return State.NOT_READY_TO_SWITCH_ON
        return cia402.decode_statusword(self.inputs.statusword)

    def set_targets(self, position: int | None = None, torque: int | None = None,
                    controlword: int | None = None, mode: int | None = None) -> None:
        """Change the outputs sent from the next cycle on."""
        o = self.outputs
        self.outputs = pdo.Outputs(
            controlword=o.controlword if controlword is None else controlword,
            mode=o.mode if mode is None else mode,
            target_position=o.target_position if position is None else position,
            target_torque=o.target_torque if torque is None else torque)

    def walk(self, target: State, timeout: float = 1.0, fault_resets: int = 3,
             settle: int = 20) -> None:
        """Drive the state machine to ``target``, one transition per cycle.

        A fault gets a fault-reset pulse (bit 7 for one cycle, then ``settle``
        cycles to clear); after ``fault_resets`` pulses it raises with the error code.
        """
        pulses, hold = 0, 0
        for _ in range(max(1, int(timeout / self.cycle))):
            state = self.state()
            if state is target:
                return
            if state is State.FAULT:
                if hold > 0:
                    controlword, hold = cia402.DISABLE_VOLTAGE, hold - 1
                elif pulses >= fault_resets:
                    raise EthercatError(f"{self.ifname}: drive fault 0x{self.error_code():04X} "
                                        f"persists after {fault_resets} fault reset(s)")
                else:
                    controlword, pulses, hold = cia402.FAULT_RESET, pulses + 1, settle
            else:
                controlword = cia402.next_controlword(state, target, self.outputs.controlword)
            self.set_targets(controlword=controlword)
            self.exchange()
            self.sleep(self.cycle)
        if self.state() is target:
            return
        raise EthercatError(f"{self.ifname}: drive stuck in '{self.state().value}' on the way "
                            f"to '{target.value}' ({timeout:g} s)")

    def error_code(self) -> int:
        """The drive's error code (0x603F, from the process data, else by SDO)."""
        if self.inputs is not None and self.inputs.error_code:
            return self.inputs.error_code
        try:
            return struct.unpack("<H", self.slave.sdo_read(ERROR_CODE, 0)[:2])[0]
        except Exception:
            return 0

    def enable(self, mode: int = pdo.CST) -> None:
        """Operation enabled in ``mode`` (CST or CSP) with zero torque / the present position."""
        self.exchange()
        position = self.inputs.position if self.inputs else 0
        self.set_targets(mode=mode, torque=0, position=position)
        self.walk(State.OPERATION_ENABLED)

    # -- shutdown -------------------------------------------------------------------------
    def safe_stop(self, timeout: float = 0.5) -> None:
        """Quick stop, then disable voltage, then INIT and close; never raises."""
        if not self.is_open:
            return
        try:
            self.set_targets(torque=0, controlword=cia402.QUICK_STOP)
            for _ in range(max(1, int(timeout / self.cycle))):
                self.exchange()
                if self.state() in (State.QUICK_STOP_ACTIVE, State.SWITCH_ON_DISABLED,
                                    State.FAULT):
                    break
                self.sleep(self.cycle)
            self.set_targets(controlword=cia402.DISABLE_VOLTAGE)
            for _ in range(max(1, int(timeout / self.cycle))):
                self.exchange()
                if self.state() in (State.SWITCH_ON_DISABLED, State.FAULT):
                    break
                self.sleep(self.cycle)
        except Exception:
            pass  # the network is gone: the drive's watchdog disables it
        finally:
            self.close()

    def close(self) -> None:
        """INIT state and close the interface (idempotent)."""
        if not self.is_open:
            return
        self.is_open = False
        try:
            self.master.state = INIT_STATE
            self.master.write_state()
        except Exception:
            pass
        self.master.close()

    def __enter__(self) -> Cia402Drive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.safe_stop()
