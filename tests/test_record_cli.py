"""``frictionsim record`` / ``record-campaign`` against a virtual servo on a pty, and their errors."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from frictionsim.experiments.runner.cli import main
from frictionsim.hw.virtual_servo.pty_link import PtyLink
from tests.dynamixel_fakes import virtual_xl330


@pytest.fixture
def virtual_port():
    device = virtual_xl330(time.perf_counter, noise=0.0005)
    link = PtyLink()
    stop = threading.Event()
    thread = threading.Thread(target=link.serve, args=(device, stop), daemon=True)
    thread.start()
    yield device, link.path
    stop.set()
    thread.join(timeout=5)
    link.close()


def test_record_writes_a_complete_raw_log_and_figure(tmp_path, virtual_port, capsys):
    device, port = virtual_port
    argv = ["record", "--motor", "xl330", "--port", port, "--reply-timeout", "1", "--mass", "0.3",
            "--length", "0.1", "--kp", "500", "--vin", "7.4", "--trajectory", "steps", "--duration", "1.0",
            "--logdir", str(tmp_path), "--plot", str(tmp_path / "rec.png")]
    assert main(argv) == 0
    path = tmp_path / "steps_kp500_m0.3_l0.1.json"
    log = json.loads(path.read_text())
    assert "incomplete" not in log
    assert (log["motor"], log["kp"], log["mass"], log["vin"]) == ("xl330", 500, 0.3, 7.4)
    assert len(log["entries"]) > 100 and log["entries"][-1]["timestamp"] > 0.95
    assert device.joint.bench_kp == 500
    assert device.joint.enable == 0.0  # torque off at the end
    assert (tmp_path / "rec.png").stat().st_size > 0
    out = capsys.readouterr().out
    assert "period" in out
    # a second recording never overwrites the first (--overwrite only lets the figure be replaced)
    assert main(argv + ["--overwrite"]) == 0
    assert (tmp_path / "steps_kp500_m0.3_l0.1_2.json").exists()


def test_campaign_records_every_trajectory_and_gain(tmp_path, virtual_port, capsys):
    _, port = virtual_port
    assert main(["record-campaign", "--motor", "xl330", "--port", port, "--reply-timeout", "1",
                 "--setup", "0.3:0.1",
                 "--kp", "300", "600", "--trajectories", "steps", "nothing", "steps",
                 "--duration", "0.5", "--rest", "0", "--logdir", str(tmp_path)]) == 0
    # a trajectory named twice is a repetition, recorded twice under its own names
    assert sorted(p.name for p in tmp_path.glob("*.json")) == [
        "nothing_kp300_m0.3_l0.1.json", "nothing_kp600_m0.3_l0.1.json",
        "steps_kp300_m0.3_l0.1.json", "steps_kp300_m0.3_l0.1_2.json",
        "steps_kp600_m0.3_l0.1.json", "steps_kp600_m0.3_l0.1_2.json"]
    assert "campaign: 1 set-up × 2 gains × 3 trajectories = 6 recordings" in capsys.readouterr().out


def test_record_on_a_silent_port_is_a_clear_error(tmp_path, capsys):
    with PtyLink() as link:  # nobody answers on it
        rc = main(["record", "--motor", "xl330", "--port", link.path, "--mass", "0.3",
                   "--length", "0.1", "--kp", "400", "--trajectory", "steps",
                   "--logdir", str(tmp_path)])
    assert rc == 1
    assert "id 1 did not answer PING" in capsys.readouterr().err


def test_the_reply_timeout_is_the_one_asked_for_and_checked(tmp_path, capsys):
    base = ["record", "--motor", "xl330", "--mass", "0.3", "--length", "0.1", "--kp", "400",
            "--trajectory", "steps", "--logdir", str(tmp_path)]
    with PtyLink() as link:  # nobody answers on it
        assert main(base + ["--port", link.path, "--reply-timeout", "0.2"]) == 1
    assert "0.2 s each" in capsys.readouterr().err
    for bad in ("0", "-1", "nan", "60"):
        assert main(base + ["--port", "/dev/null", "--reply-timeout", bad]) == 1
        assert "--reply-timeout" in capsys.readouterr().err
    # an EtherCAT drive has no serial replies to wait for
    assert main(["record", "--motor", "erob80_100", "--port", "eth9", "--mass", "0.3",
                 "--length", "0.1", "--kp", "400", "--trajectory", "steps", "--logdir",
                 str(tmp_path), "--reply-timeout", "1"]) == 1
    assert "applies to serial servos" in capsys.readouterr().err


def test_record_on_a_missing_port_is_a_clear_error(tmp_path, capsys):
    missing = str(tmp_path / "ttyNOPE")
    rc = main(["record", "--motor", "xl330", "--port", missing, "--mass", "0.3", "--length", "0.1",
               "--kp", "400", "--trajectory", "steps", "--logdir", str(tmp_path)])
    assert rc == 1
    assert missing in capsys.readouterr().err
    assert not os.path.exists(missing)


def test_record_rejects_bad_set_up(tmp_path, capsys):
    rc = main(["record", "--motor", "xl330", "--port", "/dev/null", "--mass", "-1",
               "--length", "0.1", "--kp", "400", "--trajectory", "steps", "--logdir",
               str(tmp_path)])
    assert rc == 1
    assert "mass = -1.0 kg is outside the plausible range" in capsys.readouterr().err



def test_a_set_up_that_starts_with_a_minus_says_how_to_write_it(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["record-campaign", "--setup", "-1:0.1", "--kp", "400", "--motor", "xl330",
              "--port", "/dev/null", "--logdir", str(tmp_path)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "argument --setup: expected one argument (a value that starts with '-' is written " \
           "--setup=VALUE)" in err
    # written so, the value reaches the set-up's own check
    assert main(["record-campaign", "--setup=-1:0.1", "--kp", "400", "--motor", "xl330",
                 "--port", "/dev/null", "--logdir", str(tmp_path)]) == 1
    assert "mass = -1.0 kg is outside the plausible range" in capsys.readouterr().err


def test_a_log_folder_the_system_cannot_make_is_one_line_naming_it(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    logdir = blocker / "logs"
    assert main(["record", "--motor", "xl330", "--port", "/dev/null", "--mass", "0.3",
                 "--length", "0.1", "--kp", "400", "--trajectory", "steps",
                 "--logdir", str(logdir)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"frictionsim record: error: --logdir {logdir}: a file stands on the way to it"]
    # the file itself as --logdir, for each command that records
    for command, extra in (("record", ["--mass", "0.3", "--length", "0.1", "--trajectory",
                                       "steps"]),
                           ("record-campaign", ["--setup", "0.3:0.1", "--yes"])):
        assert main([command, "--motor", "xl330", "--port", "/dev/null", "--kp", "400", *extra,
                     "--logdir", str(blocker)]) == 1
        assert capsys.readouterr().err.strip().splitlines() == [
            f"frictionsim {command}: error: --logdir {blocker}: a file, not a folder for the logs"]
    assert blocker.read_text() == "not a folder"


def test_campaign_prompts_between_set_ups(tmp_path, virtual_port, monkeypatch, capsys):
    _, port = virtual_port
    prompts = []
    monkeypatch.setattr("builtins.input", lambda text: prompts.append(text) or "")
    argv = ["record-campaign", "--motor", "xl330", "--port", port, "--reply-timeout", "1",
            "--setup", "0.3:0.1",
            "--setup", "0.5:0.12", "--kp", "400", "--trajectories", "nothing", "--duration",
            "0.2", "--rest", "0", "--logdir", str(tmp_path / "a")]
    assert main(argv) == 0
    assert len(prompts) == 1 and "mount 0.5 kg at 0.12 m" in prompts[0]
    assert len(list((tmp_path / "a").glob("*.json"))) == 2

    def no_terminal(text):
        raise EOFError

    monkeypatch.setattr("builtins.input", no_terminal)
    argv[-1] = str(tmp_path / "b")
    assert main(argv) == 1
    assert "--yes" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "b").glob("*.json")] == ["nothing_kp400_m0.3_l0.1.json"]


def _campaign(port, folder):
    return ["record-campaign", "--motor", "xl330", "--port", port, "--reply-timeout", "1",
            "--setup", "0.3:0.1", "--kp", "300", "--trajectories", "steps", "nothing",
            "--duration", "0.5", "--rest", "0", "--logdir", str(folder)]


def test_an_interrupted_campaign_keeps_the_log_it_was_recording(tmp_path, virtual_port,
                                                                monkeypatch, capsys):
    from frictionsim.hw import recorder

    append = recorder.Recording.append

    def interrupted(self, entry):  # Ctrl-C at the 30th entry of the first recording
        if len(self.entries) == 30:
            raise KeyboardInterrupt
        append(self, entry)

    monkeypatch.setattr(recorder.Recording, "append", interrupted)
    _, port = virtual_port
    assert main(_campaign(port, tmp_path)) == 130
    log = json.loads((tmp_path / "steps_kp300_m0.3_l0.1.json").read_text())
    assert log["incomplete"] is True and "KeyboardInterrupt" in log["reason"]
    assert len(log["entries"]) == 30
    err = capsys.readouterr()
    assert "partial log kept (marked incomplete)" in err.err
    assert "the arm returns to 0 (1.5 s), then its torque goes off" in err.err
    assert "campaign: 0 of 2 recordings complete" in err.out


def test_a_campaign_stopped_while_the_arm_returns_counts_the_complete_log(tmp_path, virtual_port,
                                                                        monkeypatch, capsys):
    from frictionsim.hw import recorder

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(recorder, "return_to_zero", stopped)
    _, port = virtual_port
    assert main(_campaign(port, tmp_path)) == 130
    log = json.loads((tmp_path / "steps_kp300_m0.3_l0.1.json").read_text())
    assert "incomplete" not in log and log["entries"][-1]["timestamp"] > 0.45
    err = capsys.readouterr()
    assert "log complete:" in err.err and "marked incomplete" not in err.err
    assert "campaign: 1 of 2 recordings complete" in err.out


def test_a_campaign_on_a_disk_that_fills_keeps_what_it_recorded(tmp_path, virtual_port,
                                                                 monkeypatch, capsys):
    """A campaign only adds logs (each its own name): on a disk that fills during the second
    one, the first stays complete, the earlier files untouched, and the error is one line
    naming the log that could not be written."""
    import errno

    from frictionsim import atomic

    _, port = virtual_port
    (tmp_path / "earlier.json").write_text("{}")
    real, state = atomic.os.fsync, {"full": False}

    def fsync(fd):
        if state["full"]:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd)

    def fill_when_the_first_is_done(path):
        state["full"] = True

    from frictionsim.hw import recorder

    record_new = recorder.record_new

    def recorded(*args, on_complete=None, **kwargs):
        return record_new(*args, on_complete=lambda p: (on_complete(p),
                                                        fill_when_the_first_is_done(p)),
                          **kwargs)

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    monkeypatch.setattr(recorder, "record_new", recorded)
    assert main(_campaign(port, tmp_path)) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nothing_kp300_m0.3_l0.1.json: not written (No space left on " \
        "device)" in err[0], err
    first = json.loads((tmp_path / "steps_kp300_m0.3_l0.1.json").read_text())
    assert "incomplete" not in first and len(first["entries"]) > 50
    assert (tmp_path / "earlier.json").read_text() == "{}"
    assert not list(tmp_path.glob(".*.tmp"))
