"""The official ROBOTIS SDK, as bus master, talks to the virtual servo over its pseudo-terminal."""

from __future__ import annotations

import threading
import time

import pytest

from frictionsim.hw.dynamixel import control_tables as ct
from frictionsim.hw.serialbus import registers as rg
from frictionsim.hw.virtual_servo.pty_link import PtyLink
from tests.dynamixel_fakes import virtual_xl330

sdk = pytest.importorskip("dynamixel_sdk")


@pytest.fixture(autouse=True)
def patient_sdk(monkeypatch):
    """The SDK waits 2 × LATENCY_TIMER + 2 ms (34 ms: a USB adapter's latency) for a reply; a
    loaded machine may not schedule the serving thread that soon. What is tested here is the
    protocol, not the time: half a second per transaction."""
    monkeypatch.setattr(sdk.port_handler, "LATENCY_TIMER", 250)


@pytest.fixture
def served():
    """Start a virtual servo of a given table on a pty; yields (device, path)."""
    running = []

    def start(table: rg.ControlTable, servo_id: int = 1):
        device = virtual_xl330(time.perf_counter, table, noise=0.0, servo_id=servo_id)
        link = PtyLink()
        stop = threading.Event()
        thread = threading.Thread(target=link.serve, args=(device, stop), daemon=True)
        thread.start()
        running.append((link, stop, thread))
        return device, link.path

    yield start
    for link, stop, thread in running:
        stop.set()
        thread.join(timeout=5)
        link.close()


def open_port(path: str) -> object:
    port = sdk.PortHandler(path)
    assert port.openPort()
    assert port.setBaudRate(57600)
    return port


def test_sdk_protocol2_ping_read_write(served):
    device, path = served(ct.XL330_M288, servo_id=3)
    port = open_port(path)
    ph = sdk.PacketHandler(2.0)
    try:
        assert ph.ping(port, 3) == (1200, sdk.COMM_SUCCESS, 0)
        assert ph.ping(port, 4)[1] == sdk.COMM_RX_TIMEOUT
        assert ph.read2ByteTxRx(port, 3, 84) == (400, sdk.COMM_SUCCESS, 0)  # Position P gain
        assert ph.write4ByteTxRx(port, 3, 116, 2048 + 512) == (sdk.COMM_SUCCESS, 0)
        assert device.joint.goal == pytest.approx(rg.counts_to_rad(ct.XL330_M288, 2560))
        assert ph.write1ByteTxRx(port, 3, 64, 1) == (sdk.COMM_SUCCESS, 0)
        time.sleep(0.5)
        position, result, error = ph.read4ByteTxRx(port, 3, 132)
        assert (result, error) == (sdk.COMM_SUCCESS, 0)
        assert 2048 + 100 < position <= 2560 + 5  # the arm moved towards the goal
        volts, result, _ = ph.read2ByteTxRx(port, 3, 144)
        assert (volts, result) == (74, sdk.COMM_SUCCESS)
        # an error status reaches the SDK as the servo's error byte (access: EEPROM locked)
        result, error = ph.write1ByteTxRx(port, 3, 11, 3)
        assert (result, error) == (sdk.COMM_SUCCESS, 7)
        # SYNC READ and SYNC WRITE through the SDK's group helpers
        reader = sdk.GroupSyncRead(port, ph, 132, 4)
        assert reader.addParam(3)
        assert reader.txRxPacket() == sdk.COMM_SUCCESS
        assert abs(reader.getData(3, 132, 4) - position) < 20
        writer = sdk.GroupSyncWrite(port, ph, 116, 4)
        assert writer.addParam(3, list((2048).to_bytes(4, "little")))
        assert writer.txPacket() == sdk.COMM_SUCCESS
        time.sleep(0.05)
        assert device.joint.goal == 0.0
        assert ph.reboot(port, 3) == (sdk.COMM_SUCCESS, 0)
        assert device.joint.enable == 0.0
    finally:
        port.closePort()


@pytest.mark.parametrize("table", [ct.MX64_P1, ct.MX106_P1], ids=lambda t: t.model)
def test_sdk_protocol1_ping_read_write(served, table):
    device, path = served(table)
    port = open_port(path)
    ph = sdk.PacketHandler(1.0)
    try:
        assert ph.ping(port, 1)[1:] == (sdk.COMM_SUCCESS, 0)
        assert ph.read2ByteTxRx(port, 1, 0) == (table.model_number, sdk.COMM_SUCCESS, 0)
        assert ph.write2ByteTxRx(port, 1, 30, 2048 - 256) == (sdk.COMM_SUCCESS, 0)
        assert device.joint.goal == pytest.approx(-256 * 2 * 3.141592653589793 / 4096)
        assert ph.write1ByteTxRx(port, 1, 24, 1) == (sdk.COMM_SUCCESS, 0)
        time.sleep(0.3)
        position, result, _ = ph.read2ByteTxRx(port, 1, 36)
        assert result == sdk.COMM_SUCCESS and 2048 - 256 - 5 <= position < 2048 - 50
        # out-of-table read: the range error bit
        assert ph.read1ByteTxRx(port, 1, 255)[1:] == (sdk.COMM_SUCCESS, 0)
        assert ph.read4ByteTxRx(port, 1, 254)[2] == 0x08
    finally:
        port.closePort()


def test_xl320_protocol2_model_number(served):
    _, path = served(ct.XL320)
    port = open_port(path)
    try:
        assert sdk.PacketHandler(2.0).ping(port, 1) == (350, sdk.COMM_SUCCESS, 0)
    finally:
        port.closePort()


@pytest.mark.parametrize("actuator,protocol", [("xl330", 2), ("mx64", 1), ("mx106", 2),
                                               ("sts3215", None)])
def test_official_sdks_talk_to_the_virtual_servo_command(tmp_path, actuator, protocol):
    """``frictionsim virtual-servo`` as a process, mastered by the official SDK."""
    import subprocess
    import sys

    from frictionsim.params import ParameterSet, save_params

    params = save_params(tmp_path / "p.json", ParameterSet("m1", actuator, {}))
    argv = [sys.executable, "-m", "frictionsim.experiments.runner.cli", "virtual-servo",
            "--params", str(params),
            "--mass", "0.2", "--length", "0.1", "--id", "5"]
    if protocol:
        argv += ["--protocol", str(protocol)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        banner = proc.stdout.readline()
        path = proc.stdout.readline().strip()
        assert path.startswith("/dev/"), banner
        if actuator == "sts3215":
            scs = pytest.importorskip("scservo_sdk")
            port, ph = scs.PortHandler(path), scs.PacketHandler(0)
            goal_address, torque_address, position_address, model = 42, 40, 56, 777
            ok = scs.COMM_SUCCESS
            scs_or_sdk = scs
        else:
            port, ph = sdk.PortHandler(path), sdk.PacketHandler(float(protocol))
            table = ct.table_for({"xl330": "XL330-M288", "mx64": "MX-64",
                                  "mx106": "MX-106"}[actuator], protocol)
            goal_address, torque_address = table.goal_position.address, table.torque_enable.address
            position_address, model = table.present_position.address, table.model_number
            ok = sdk.COMM_SUCCESS
            scs_or_sdk = sdk
        assert port.openPort()

        def patient(call, *args):
            """The SDK gives up on an answer after a few tens of ms; a busy machine can take
            longer to schedule the servo's process, so a timed-out transaction is repeated
            (as a master on a real bus would). Anything but a time-out is returned at once."""
            for _ in range(50):
                answer = call(port, *args)
                if answer[-2] != scs_or_sdk.COMM_RX_TIMEOUT:
                    return answer
            return answer

        try:
            number, result, error = patient(ph.ping, 5)
            assert (result, error) == (ok, 0)
            if protocol != 1:
                assert number == model
            write = ph.write4ByteTxRx if protocol == 2 else ph.write2ByteTxRx
            read = ph.read4ByteTxRx if protocol == 2 else ph.read2ByteTxRx
            assert patient(write, 5, goal_address, 2048 + 200) == (ok, 0)
            assert patient(ph.write1ByteTxRx, 5, torque_address, 1) == (ok, 0)
            time.sleep(0.5)  # the servo integrates by its clock: any wait lets it move
            position, result, error = patient(read, 5, position_address)
            assert (result, error) == (ok, 0) and 2048 + 50 < position < 2048 + 210
        finally:
            port.closePort()
    finally:
        proc.terminate()
        # stopped cleanly (the link closed), then ended as every command a signal ends
        assert proc.wait(timeout=10) == 143
    assert "stopped after" in proc.stdout.read()
