"""eRob over EtherCAT against a fake pysoem master (no network card needed).

The fake slave implements what a CiA 402 drive does: it reads the PDO mapping
from the SDO writes of the configuration hook and packs/unpacks its process
data by that mapping (independently of :mod:`frictionsim.hw.ethercat.pdo`'s struct
formats), runs the power state machine on the controlword, integrates a
simple joint in CST mode and can fault on enable.
"""

from __future__ import annotations

import json
import struct

import pytest

from frictionsim.hw.ethercat import cia402, pdo
from frictionsim.hw.ethercat.cia402 import State
from frictionsim.hw.ethercat.drive import INIT_STATE, OP_STATE, SAFEOP_STATE, Cia402Drive, EthercatError
from frictionsim.hw.ethercat.servo import ErobServo
from frictionsim.hw.recorder import BenchSetup, Clock, record

STATUSWORD = {State.NOT_READY_TO_SWITCH_ON: 0x00, State.SWITCH_ON_DISABLED: 0x40,
              State.READY_TO_SWITCH_ON: 0x21, State.SWITCHED_ON: 0x23,
              State.OPERATION_ENABLED: 0x27, State.QUICK_STOP_ACTIVE: 0x07, State.FAULT: 0x08}
FMT = {(8, True): "b", (16, True): "h", (32, True): "i", (8, False): "B", (16, False): "H",
       (32, False): "I"}
SIGNED = {0x6060, 0x6061, 0x607A, 0x6064, 0x606C, 0x6071, 0x6077}


class FakeSlave:
    """A CiA 402 drive behind a fake pysoem slave."""

    def __init__(self, faults_on_enable: int = 0, rated_current_ma: int = 8000) -> None:
        self.name = "eRob80 (fake)"
        self.al_status = 0
        self.od: dict[tuple[int, int], bytes] = {(0x6075, 0): struct.pack("<I", rated_current_ma)}
        self.sdo_log: list[tuple[int, int, bytes]] = []
        self.config_func = None
        self.output = b""
        self.input = b""
        self.state = State.SWITCH_ON_DISABLED
        self.faults_on_enable = faults_on_enable
        self.error_code = 0
        self.previous_cw = 0
        self.controlwords: list[int] = []
        self.position = 1000.0  # counts
        self.velocity = 0.0  # counts/s
        self.torque = 0
        self.mode = 0

    # -- mailbox ---------------------------------------------------------------
    def sdo_write(self, index: int, sub: int, data: bytes) -> None:
        self.sdo_log.append((index, sub, bytes(data)))
        self.od[(index, sub)] = bytes(data)

    def sdo_read(self, index: int, sub: int) -> bytes:
        if (index, sub) == (0x603F, 0):
            return struct.pack("<H", self.error_code)
        return self.od[(index, sub)]

    def mapping(self, pdo_index: int) -> list[tuple[int, int]]:
        n = self.od[(pdo_index, 0)][0]
        entries = [struct.unpack("<I", self.od[(pdo_index, k)])[0] for k in range(1, n + 1)]
        return [(e >> 16, e & 0xFF) for e in entries]

    def layout(self, assign: int) -> str:
        assert self.od[(assign, 0)] == b"\x01"
        (pdo_index,) = struct.unpack("<H", self.od[(assign, 1)])
        return "<" + "".join(FMT[bits, index in SIGNED] for index, bits in self.mapping(pdo_index))

    # -- the drive ---------------------------------------------------------------
    def process(self, dt: float = 0.001) -> None:
        rx = self.mapping(0x1600)
        values = dict(zip((i for i, _ in rx), struct.unpack(self.layout(0x1C12), self.output)))
        cw = values[0x6040]
        self.controlwords.append(cw)
        self.mode = values[0x6060]
        self.torque = values[0x6071]
        rising_reset = cw & 0x80 and not self.previous_cw & 0x80
        self.previous_cw = cw
        s = self.state
        if s is State.FAULT:
            if rising_reset:
                self.state, self.error_code = State.SWITCH_ON_DISABLED, 0
        elif cw & 0x02 == 0:  # disable voltage
            self.state = State.SWITCH_ON_DISABLED
        elif cw & 0x04 == 0 and s in (State.OPERATION_ENABLED, State.SWITCHED_ON,
                                      State.READY_TO_SWITCH_ON):
            self.state = State.QUICK_STOP_ACTIVE if s is State.OPERATION_ENABLED \
                else State.SWITCH_ON_DISABLED
        elif cw & 0x0F == 0x06 and s in (State.SWITCH_ON_DISABLED, State.SWITCHED_ON,
                                         State.OPERATION_ENABLED):
            self.state = State.READY_TO_SWITCH_ON
        elif cw & 0x0F == 0x07 and s in (State.READY_TO_SWITCH_ON, State.OPERATION_ENABLED):
            self.state = State.SWITCHED_ON
        elif cw & 0x0F == 0x0F and s is State.SWITCHED_ON:
            if self.faults_on_enable:
                self.faults_on_enable -= 1
                self.state, self.error_code = State.FAULT, 0x2310  # over-current
            else:
                self.state = State.OPERATION_ENABLED
        if self.state is State.OPERATION_ENABLED and self.mode == pdo.CST:
            self.velocity += 2000.0 * self.torque * dt  # a joint without load or friction
        else:
            self.velocity = 0.0
        self.position += self.velocity * dt
        tx = [0x6041, 0x6061, 0x6064, 0x606C, 0x6077, 0x6079, 0x603F]
        report = {0x6041: STATUSWORD[self.state], 0x6061: self.mode, 0x6064: round(self.position),
                  0x606C: round(self.velocity), 0x6077: self.torque if self.state is
                  State.OPERATION_ENABLED else 0, 0x6079: 48000, 0x603F: self.error_code}
        assert [i for i, _ in self.mapping(0x1A00)] == tx
        self.input = struct.pack(self.layout(0x1C13), *(report[i] for i in tx))


class FakeMaster:
    """pysoem.Master's interface over fake slaves."""

    def __init__(self, slaves: list[FakeSlave], interfaces=("eth0",)) -> None:
        self._slaves = slaves
        self.slaves: list[FakeSlave] = []
        self.interfaces = interfaces
        self.state = INIT_STATE
        self._reached = INIT_STATE
        self.closed = False
        self.opened = None
        self.lose_cycles = 0
        self.states_written: list[int] = []

    def open(self, ifname: str) -> None:
        if ifname not in self.interfaces:
            raise ConnectionError(f"could not open interface {ifname}")
        self.opened = ifname

    def config_init(self) -> int:
        self.slaves = list(self._slaves)
        self._reached = 0x02  # PRE-OP
        return len(self.slaves) if self.slaves else -1

    def config_map(self) -> int:
        for position, slave in enumerate(self.slaves):
            slave.config_func(position)
        self._reached = SAFEOP_STATE
        return 9 + 21

    @property
    def expected_wkc(self) -> int:
        return 3 * len(self.slaves)

    def state_check(self, expected: int, timeout: int) -> int:
        return self._reached

    def read_state(self) -> int:
        return self._reached

    def write_state(self) -> None:
        self.states_written.append(self.state)
        self._reached = self.state

    def send_processdata(self) -> None:
        for slave in self.slaves:
            slave.process()

    def receive_processdata(self, timeout: int) -> int:
        if self.lose_cycles:
            self.lose_cycles -= 1
            return 0
        return self.expected_wkc

    def close(self) -> None:
        self.closed = True


def bring_up(slave: FakeSlave | None = None) -> tuple[Cia402Drive, FakeMaster, FakeSlave]:
    slave = slave or FakeSlave()
    master = FakeMaster([slave])
    drive = Cia402Drive(master, sleep=lambda dt: None)
    drive.bring_up("eth0")
    return drive, master, slave


# ---------------------------------------------------------------------- state machine ---
@pytest.mark.parametrize("state,word", list(STATUSWORD.items()))
def test_statusword_decoding(state, word):
    assert cia402.decode_statusword(word | 0x0210) is state  # remote, target reached bits


def test_power_up_path_and_fault_reset():
    nxt = cia402.next_controlword
    assert nxt(State.SWITCH_ON_DISABLED, State.OPERATION_ENABLED) == cia402.SHUTDOWN
    assert nxt(State.READY_TO_SWITCH_ON, State.OPERATION_ENABLED) == cia402.SWITCH_ON
    assert nxt(State.SWITCHED_ON, State.OPERATION_ENABLED) == cia402.ENABLE_OPERATION
    assert nxt(State.OPERATION_ENABLED, State.SWITCHED_ON) == cia402.DISABLE_OPERATION
    assert nxt(State.QUICK_STOP_ACTIVE, State.OPERATION_ENABLED) == cia402.DISABLE_VOLTAGE
    assert nxt(State.FAULT, State.OPERATION_ENABLED, previous=0) == cia402.FAULT_RESET
    assert nxt(State.FAULT, State.OPERATION_ENABLED, previous=0x80) == 0
    with pytest.raises(ValueError):
        nxt(State.FAULT, State.FAULT)
    with pytest.raises(ValueError):
        cia402.decode_statusword(0x01)


# --------------------------------------------------------------------------- bring-up ---
def test_bring_up_maps_pdos_and_reaches_op():
    drive, master, slave = bring_up()
    assert master.opened == "eth0" and master.states_written[-1] == OP_STATE
    assert slave.mapping(0x1600) == [(0x6040, 16), (0x6060, 8), (0x607A, 32), (0x6071, 16)]
    assert slave.mapping(0x1A00)[:3] == [(0x6041, 16), (0x6061, 8), (0x6064, 32)]
    # assignment cleared before the PDO is rewritten, and set last
    rx_writes = [(i, s) for i, s, _ in slave.sdo_log if i in (0x1C12, 0x1600)]
    assert rx_writes[0] == (0x1C12, 0) and rx_writes[-1] == (0x1C12, 0)
    assert drive.units.rated_current == 8.0  # read from 0x6075
    assert drive.inputs is not None and drive.inputs.position == slave.position


def test_no_slave_and_bad_interface_are_clear_errors():
    master = FakeMaster([])
    with pytest.raises(EthercatError, match="no EtherCAT slave found on 'eth0'"):
        Cia402Drive(master).bring_up("eth0")
    assert master.closed
    with pytest.raises(EthercatError, match="cannot open EtherCAT interface 'eth7'"):
        Cia402Drive(FakeMaster([FakeSlave()])).bring_up("eth7")
    with pytest.raises(EthercatError, match="slave 1 requested, 1 found"):
        Cia402Drive(FakeMaster([FakeSlave()]), slave=1).bring_up("eth0")


def test_enable_walks_the_state_machine():
    drive, _, slave = bring_up()
    drive.enable(pdo.CST)
    assert slave.state is State.OPERATION_ENABLED and drive.state() is State.OPERATION_ENABLED
    assert slave.mode == pdo.CST
    assert [0x06, 0x07, 0x0F] == [c for c in dict.fromkeys(slave.controlwords) if c][:3]


def test_fault_during_enable_is_reset():
    drive, _, slave = bring_up(FakeSlave(faults_on_enable=1))
    drive.enable(pdo.CST)
    assert slave.state is State.OPERATION_ENABLED
    assert 0x80 in slave.controlwords


def test_persistent_fault_reports_its_error_code():
    drive, _, _ = bring_up(FakeSlave(faults_on_enable=100))
    with pytest.raises(EthercatError, match=r"fault 0x2310 persists after 3 fault reset"):
        drive.enable(pdo.CST)


def test_lost_cycles_are_tolerated_then_reported():
    drive, master, _ = bring_up()
    master.lose_cycles = 3
    for _ in range(4):
        drive.exchange()
    master.lose_cycles = 100
    with pytest.raises(EthercatError, match="process-data cycles lost"):
        for _ in range(20):
            drive.exchange()


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_safe_stop_on_error_and_ctrl_c(error):
    drive, master, slave = bring_up()
    drive.enable(pdo.CST)
    with pytest.raises(type(error)):
        with drive:
            drive.set_targets(torque=300)
            drive.exchange()
            raise error
    words = slave.controlwords
    first_quick_stop = words.index(cia402.QUICK_STOP)
    assert cia402.DISABLE_VOLTAGE in words[first_quick_stop:]
    assert slave.state is State.SWITCH_ON_DISABLED
    assert master.states_written[-1] == INIT_STATE and master.closed
    drive.safe_stop()  # idempotent


def test_units():
    drive, _, _ = bring_up()
    u = drive.units
    assert u.counts_to_rad(u.counts_per_rev // 4) == pytest.approx(1.5707963, rel=1e-6)
    assert u.rad_to_counts(u.counts_to_rad(12345)) == 12345
    assert u.amps_to_per_mille(4.0) == 500  # rated current 8 A
    assert u.per_mille_to_amps(-250) == pytest.approx(-2.0)


# ------------------------------------------------------------------------ the servo ---
def test_servo_law_moves_the_joint_and_torque_off_powers_down():
    drive, _, slave = bring_up()
    servo = ErobServo(drive, "erob80_100", start=False)
    servo.configure(20.0)
    goal = drive.units.counts_to_rad(slave.position) + 0.05
    servo.goal(goal)
    servo.torque(True)
    for _ in range(5):
        servo.cycle()
    assert slave.state is State.OPERATION_ENABLED and slave.torque > 0
    start = slave.position
    for _ in range(50):
        servo.cycle()
    assert slave.position > start  # pushed towards the goal
    sample = servo.read()
    assert sample["input_volts"] == 48.0
    servo.torque(False)
    for _ in range(3):
        servo.cycle()
    assert slave.state is State.SWITCHED_ON and slave.torque == 0
    servo.close()
    assert slave.state is State.SWITCH_ON_DISABLED


def test_fault_while_recording_stops_with_code(tmp_path):
    drive, _, slave = bring_up()
    servo = ErobServo(drive, "erob80_100", start=False)
    servo.torque(True)
    servo.cycle()
    slave.state, slave.error_code = State.FAULT, 0x7500
    servo.cycle()
    with pytest.raises(EthercatError, match="0x7500"):
        servo.cycle()


def test_recorder_drives_the_erob(tmp_path):
    drive, master, slave = bring_up()
    servo = ErobServo(drive, "erob80_100", start=False)
    now = [0.0]

    def sleep(dt: float) -> None:
        for _ in range(max(1, round(dt / drive.cycle))):
            servo.cycle()
        now[0] += dt

    servo.cycle()
    path = record(servo, "steps", BenchSetup(1.0, 0.2, 30.0), tmp_path / "erob.json",
                  clock=Clock(now=lambda: now[0], sleep=sleep), duration=0.5)
    log = json.loads(path.read_text())
    assert log["motor"] == "erob80_100" and "incomplete" not in log
    assert len(log["entries"]) == pytest.approx(100, abs=2)
    assert {e["input_volts"] for e in log["entries"]} == {48.0}
    servo.close()
    assert master.closed and slave.state is State.SWITCH_ON_DISABLED


def test_open_servo_needs_only_an_interface_name(monkeypatch):
    pysoem = pytest.importorskip("pysoem")
    slave = FakeSlave()
    master = FakeMaster([slave], interfaces=("enp3s0",))
    monkeypatch.setattr(pysoem, "Master", lambda: master)
    from frictionsim.hw.connect import open_servo

    servo = open_servo("erob80_50", "enp3s0")
    try:
        assert servo.motor == "erob80_50"
        assert servo.read(timeout=2.0)["input_volts"] == 48.0  # the cyclic thread runs
    finally:
        servo.close()
    assert master.closed and slave.state is State.SWITCH_ON_DISABLED
