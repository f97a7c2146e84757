"""Every command that writes meets a real full disk and a real read-only folder: one line
naming the file (or the folder it cannot write beside), exit 1, no traceback, nothing left
behind. The disk is a 64 KiB tmpfs filled to the last block, the read-only folder a tmpfs
mounted read-only (as root, where a permission is no obstacle) or a folder of mode 0555 (as
any other user); where neither can be made the cases are skipped, saying why.

test_output_folders.py covers the same promise by failing the writer's fsync at every
point of a folder command's output; this module checks that the real file systems' errors
take the same road."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from frictionsim.experiments.runner.cli import main

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
XL330 = DATA / "xl330"
SO101 = DATA / "so101" / "recordings"


def _mount_tmpfs(where: Path, *options: str) -> bool:
    """Mount a 64 KiB tmpfs at ``where``; False where this process may not mount."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(("size=64k", *options)),
                           "tmpfs", str(where)], capture_output=True)
    return done.returncode == 0


def _unmount(where: Path) -> None:
    subprocess.run(["umount", str(where)], capture_output=True)


@pytest.fixture
def full_disk(tmp_path):
    """A folder on a file system with no free block."""
    where = tmp_path / "full"
    where.mkdir()
    if not _mount_tmpfs(where):
        pytest.skip("a full disk needs a tmpfs of its own: mounting one needs root")
    fd = os.open(where / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as e:
        assert e.errno == errno.ENOSPC
    finally:
        os.close(fd)
    yield where
    _unmount(where)


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder nothing can be written in."""
    where = tmp_path / "read-only"
    where.mkdir()
    if os.geteuid() != 0:
        where.chmod(0o555)
        yield where
        where.chmod(0o755)
        return
    if not _mount_tmpfs(where, "ro"):
        pytest.skip("as root a read-only folder needs a read-only mount, which was refused")
    yield where
    _unmount(where)


@pytest.fixture(scope="module")
def so101_servos(tmp_path_factory) -> Path:
    """A robot parameter file for the SO-101 (a short fit: only its format matters here)."""
    out = tmp_path_factory.mktemp("so101-fit") / "fit"
    assert main(["robot", "identify", "--robot", "so101", "--recordings", str(_recording()),
                 "--model", "m1", "--budget", "12", "--out", str(out), "--no-progress",
                 "--no-joint-scales"]) == 0
    return out / "m1.json"


def _log() -> Path:
    return sorted((XL330 / "processed").glob("*.json"))[0]


def _recording() -> Path:
    return sorted(p for p in SO101.iterdir() if p.is_dir())[0]


#: (case, argv with ``{D}`` for the unwritable folder and ``{S}`` for the SO-101's servos).
COMMANDS = [
    ("process", ["process", "{raw}", "{D}/processed"]),
    ("simulate --json", ["simulate", "--params", "{m6}", "{log}", "--json", "{D}/o.json"]),
    ("simulate --plot", ["simulate", "--params", "{m6}", "{log}", "--plot", "{D}/o.png"]),
    ("compare --json", ["compare", "--params", "{m6}", "--logs", "{log}", "--json",
                        "{D}/o.json"]),
    ("compare --plot", ["compare", "--params", "{m6}", "--logs", "{log}", "--plot",
                        "{D}/o.png"]),
    ("identify --out", ["identify", "--actuator", "xl330", "--model", "m1", "--budget", "12",
                        "--logs", "{log}", "--out", "{D}/fit", "--no-progress"]),
    ("bench --json", ["bench", "--models", "m1", "--repeats", "1", "--candidates", "2",
                      "--json", "{D}/o.json"]),
    ("export-mjcf --out", ["export-mjcf", "--params", "{m1}", "--out", "{D}/o.xml"]),
    ("robot simulate --json", ["robot", "simulate", "--robot", "so101", "--params", "{S}",
                               "{rec}", "--json", "{D}/o.json"]),
    ("robot identify --out", ["robot", "identify", "--robot", "so101", "--recordings",
                              "{rec}", "--model", "m1", "--budget", "12", "--out", "{D}/fit",
                              "--no-progress", "--no-joint-scales"]),
    ("robot synthesize --out", ["robot", "synthesize", "--robot", "so101", "--params", "{S}",
                                "--motions", "1", "--seconds", "2", "--out", "{D}/syn",
                                "--no-progress"]),
    ("robot export-mjcf --out", ["robot", "export-mjcf", "--robot", "so101", "--params", "{S}",
                                 "--out", "{D}/mjcf"]),
    ("run drive-backdrive --json", ["run", "drive-backdrive", "--params", "{m6}", "--json",
                                    "{D}/o.json"]),
    ("run jitter --plot", ["run", "jitter", "{raw}", "--plot", "{D}/o.png"]),
]


def _argv(template: list[str], folder: Path, request) -> list[str]:
    if not XL330.is_dir() or not SO101.is_dir():
        pytest.skip("shared data not found")
    values = {"D": str(folder), "raw": str(sorted((XL330 / "raw").glob("*.json"))[0]),
              "log": str(_log()), "m1": str(XL330 / "params" / "m1.json"),
              "m6": str(XL330 / "params" / "m6.json"), "rec": str(_recording())}
    if any("{S}" in a for a in template):
        values["S"] = str(request.getfixturevalue("so101_servos"))
    return [a.format(**values) for a in template]


def _one_line_naming(folder: Path, err: str, reason: str) -> str:
    assert "Traceback" not in err and "internal error" not in err, err
    said = [line for line in err.splitlines() if str(folder) in line]
    assert len(said) == 1, err
    assert reason in said[0] and ("not written" in said[0] or "cannot write" in said[0]), err
    return said[0]


@pytest.mark.parametrize("case,template", COMMANDS, ids=[c for c, _ in COMMANDS])
def test_a_full_disk_is_one_line_naming_the_file(case, template, full_disk, request, capsys):
    argv = _argv(template, full_disk, request)
    capsys.readouterr()
    assert main(argv) == 1
    _one_line_naming(full_disk, capsys.readouterr().err, "No space left on device")
    left = [p.name for p in full_disk.rglob("*") if p.is_file() and p.name != "filler"]
    assert left == []  # no temporary or half-written file


@pytest.mark.parametrize("case,template", COMMANDS, ids=[c for c, _ in COMMANDS])
def test_a_read_only_folder_is_one_line_naming_it(case, template, read_only_folder, request,
                                                  capsys):
    argv = _argv(template, read_only_folder, request)
    capsys.readouterr()
    assert main(argv) == 1
    reason = "read-only file system" if os.geteuid() == 0 else "permission denied"
    line = _one_line_naming(read_only_folder, capsys.readouterr().err, "")
    assert reason in line.lower(), line


@pytest.mark.parametrize("case,template", COMMANDS, ids=[c for c, _ in COMMANDS])
def test_a_missing_parent_is_created_or_named(case, template, tmp_path, request, capsys):
    """An output whose parent folders do not exist yet is written there (they are made)."""
    where = tmp_path / "not" / "yet"
    argv = _argv(template, where, request)
    assert main(argv) == 0, capsys.readouterr().err
    assert any(p.is_file() for p in where.rglob("*"))
