"""Robot recordings: what a robot was told and what it did (docs/model.md §12).

The ``sage`` format (isaac-sim2real/sage, recorded with LeRobot's Feetech bus), one folder
per motion:

- ``joint_list.txt``: the joints, one per line, in column order;
- ``control.csv``: ``type,timestamp,positions`` — the goal positions sent (rad);
- ``state_motor.csv``: ``type,timestamp,positions,velocities,torques`` — the present
  position (rad), velocity (rad/s) and a torque estimate (N·m) read back;
- ``event.csv`` (optional): ``type,timestamp,event``.

Each list column is a JSON-style list with one number per joint. The recorder's timestamp
quirk: the first row holds the motion's start in seconds (on its own clock), every later
row the microseconds since that start; :func:`read_recording` returns seconds since the
start (0 for the first row). One bus cycle writes the goals and reads the state, so the two
files have the same timestamps row by row; the state of row k was read before the goal of
row k took effect.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from frictionsim.errors import ConfigurationError, FrictionsimError
from frictionsim.jsonfile import check_regular_file

#: Largest plausible joint angle (rad) and speed (rad/s) in a recording.
MAX_ANGLE = 4 * math.pi
MAX_SPEED = 100.0
#: Largest bus period (s) a recording may show between rows before it is refused as broken.
MAX_GAP = 1.0
#: How far (a factor either way) the median row spacing may stray from the robot's bus period:
#: timestamps written in ms or s instead of µs are 1000 times off, a busy bus a little slow.
BUS_PERIOD_FACTOR = 3.0


class RecordingError(FrictionsimError, ValueError):
    """A recording that cannot be used; the message names the file and the row."""


@dataclass
class Recording:
    """One recorded motion: time since its start (s) and, per recorded joint (``joints``,
    column order), the goal (rad), position (rad), velocity (rad/s) and torque estimate (N·m)."""

    name: str
    joints: tuple[str, ...]
    t: np.ndarray
    goal: np.ndarray
    position: np.ndarray
    velocity: np.ndarray
    torque: np.ndarray
    path: Path | None = None

    @property
    def duration(self) -> float:
        return float(self.t[-1])

    def column(self, joint: str) -> int:
        """The column of a recorded joint; ``ValueError`` listing the recorded ones."""
        try:
            return self.joints.index(joint)
        except ValueError:
            where = self.path / "joint_list.txt" if self.path is not None else self.name
            raise ConfigurationError(f"{where}: no joint {joint!r} recorded (joints: "
                                     f"{', '.join(self.joints)})") from None


def differenced_velocity(position: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The velocity (rad/s) the positions (rows × joints, rad) at times ``t`` (s) imply:
    numpy's central difference over the timestamps (second order on uneven rows, one-sided
    at the ends). What a recording without velocities (a LeRobot dataset) is given, and what
    ``robot identify --start-velocity difference`` starts its windows from."""
    return np.gradient(position, t, axis=0)


def _rows(path: Path, header: tuple[str, ...], kind: str) -> list[list[str]]:
    check_regular_file(path, RecordingError, "recording file")
    try:
        # utf-8-sig: a spreadsheet's byte-order mark before the header is not part of it
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise RecordingError(f"{path}: cannot read it ({e})") from None
    if not rows or tuple(c.strip() for c in rows[0]) != header:
        got = ",".join(rows[0]) if rows else "an empty file"
        raise RecordingError(f"{path}: the header must be {','.join(header)}, got {got}")
    rows = rows[1:]
    for i, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise RecordingError(f"{path}: row {i} has {len(row)} fields, expected {len(header)}")
        if row[0] != kind:
            raise RecordingError(f"{path}: row {i}: type {row[0]!r}, expected {kind!r}")
    if len(rows) < 2:
        raise RecordingError(f"{path}: {len(rows)} rows; a recording needs at least 2")
    return rows


def _times(path: Path, rows: list[list[str]]) -> np.ndarray:
    """Seconds since the start: the first row in seconds (the start itself), later rows in µs."""
    t = np.empty(len(rows))
    for i, row in enumerate(rows):
        try:
            t[i] = float(row[1])
        except ValueError:
            raise RecordingError(f"{path}: row {i + 2}: timestamp {row[1]!r} is not a number"
                                 ) from None
        if not math.isfinite(t[i]) or t[i] < 0:
            raise RecordingError(f"{path}: row {i + 2}: timestamp {row[1]!r} must be finite "
                                 "and ≥ 0")
    t[0] = 0.0
    t[1:] *= 1e-6
    steps = np.diff(t)
    bad = np.flatnonzero(~(steps > 0))
    if bad.size:
        i = int(bad[0]) + 1
        raise RecordingError(f"{path}: row {i + 2}: timestamp {rows[i][1]} is not after the "
                             f"previous row's (the first row is seconds, later rows µs since it)")
    big = np.flatnonzero(steps > MAX_GAP)
    if big.size:
        i = int(big[0]) + 1
        raise RecordingError(f"{path}: row {i + 2}: {steps[i - 1]:.3f} s after the previous row; "
                             "a gap this long is not a recording at a fixed bus rate")
    return t


#: A column of nothing but numbers in lists: what :func:`_vectors` parses in one go.
_PLAIN_NUMBERS = re.compile(r"[-+0-9.eE,\[\] ]*")


def _vectors(path: Path, rows: list[list[str]], column: int, name: str, n: int,
             limit: float) -> np.ndarray:
    cells = [row[column] for row in rows]
    out = _vectors_at_once(cells, n)
    if out is None:
        out = _vectors_row_by_row(path, cells, name, n)
    bad = ~np.isfinite(out) | (np.abs(out) > limit)
    if bad.any():
        i, j = (int(x) for x in np.argwhere(bad)[0])
        raise RecordingError(f"{path}: row {i + 2}: {name}[{j}] = {float(out[i, j])!r} is not a "
                             f"plausible value (finite, |x| ≤ {limit:g})")
    return out


def _vectors_at_once(cells: list[str], n: int) -> np.ndarray | None:
    """The column's lists in one parse (rows × n), or None where it is anything but lists of
    n numbers (JSON's true, null, NaN or strings cannot pass the pattern): the row-by-row
    reader then names the row."""
    joined = ",".join(cells)
    if not _PLAIN_NUMBERS.fullmatch(joined):
        return None
    try:
        out = np.array(json.loads("[" + joined + "]"), dtype=float)
    except (ValueError, OverflowError):
        return None
    return out if out.shape == (len(cells), n) else None


def _vectors_row_by_row(path: Path, cells: list[str], name: str, n: int) -> np.ndarray:
    """The column's lists one row at a time, naming the first row that is not a list of
    ``n`` numbers."""
    out = np.empty((len(cells), n))
    for i, cell in enumerate(cells):
        try:
            values = json.loads(cell)
        except json.JSONDecodeError:
            raise RecordingError(f"{path}: row {i + 2}: {name} {cell!r} is not a list of "
                                 "numbers") from None
        if (not isinstance(values, list) or len(values) != n
                or any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in values)):
            raise RecordingError(f"{path}: row {i + 2}: {name} must be a list of {n} numbers "
                                 f"(one per joint of joint_list.txt), got {cell}")
        try:
            out[i] = values
        except OverflowError:  # an integer beyond any double
            raise RecordingError(f"{path}: row {i + 2}: {name} {cell} holds a number beyond "
                                 "any plausible value") from None
    return out


def _check_bus_period(path: Path, t: np.ndarray, bus_period: float, robot: str = "") -> None:
    """The rows must come at the robot's bus period: a recording whose later timestamps are
    in seconds or milliseconds, not µs, would otherwise replay 10⁶ or 10³ times too fast. A
    spacing a few times off (not a power of 1000) is the robot file's bus period to fix."""
    spacing = float(np.median(np.diff(t)))
    if bus_period / BUS_PERIOD_FACTOR <= spacing <= bus_period * BUS_PERIOD_FACTOR:
        return
    ratio = spacing / bus_period
    if 1.0 / 300.0 < ratio < 300.0:
        raise RecordingError(
            f"{path}: rows {1e3 * spacing:.4g} ms apart (median), but the robot's bus period "
            f"is {1e3 * bus_period:g} ms: set bus_period in the robot file{robot} to the rate "
            "the recording was made at")
    raise RecordingError(
        f"{path}: rows {1e3 * spacing:.4g} ms apart (median), but the robot's bus period "
        f"is {1e3 * bus_period:g} ms: after the first row (the start, in seconds) the "
        "timestamps must be µs since the start, not seconds or milliseconds")


def _joint_names(path: Path) -> tuple[str, ...]:
    check_regular_file(path, RecordingError, "joint list")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise RecordingError(f"{path}: not UTF-8 text (byte {e.start}: {e.reason}); the joint "
                             "list names one joint per line") from None
    except OSError as e:
        raise RecordingError(f"{path}: cannot read the joint list ({e.strerror or e})") from None
    return tuple(line.strip() for line in text.splitlines() if line.strip())


def read_recording(folder: str | os.PathLike, bus_period: float | None = None,
                   robot_file: str = "") -> Recording:
    """Read one ``sage`` recording folder; :class:`RecordingError` naming file and row. With
    ``bus_period`` (s, the robot file's: ``robot_file``) the rows' median spacing must be
    within a factor :data:`BUS_PERIOD_FACTOR` of it."""
    folder = Path(folder)
    if not folder.is_dir():
        raise RecordingError(f"{folder}: not a recording folder (joint_list.txt, control.csv, "
                             "state_motor.csv)")
    names = folder / "joint_list.txt"
    joints = _joint_names(names)
    if not joints or len(set(joints)) != len(joints):
        raise RecordingError(f"{names}: must name each joint once, one per line")
    n = len(joints)
    control_path, state_path = folder / "control.csv", folder / "state_motor.csv"
    control = _rows(control_path, ("type", "timestamp", "positions"), "CONTROL")
    state = _rows(state_path, ("type", "timestamp", "positions", "velocities", "torques"),
                  "STATE_MOTOR")
    if len(control) != len(state):
        raise RecordingError(f"{folder}: control.csv has {len(control)} rows and "
                             f"state_motor.csv {len(state)}; one bus cycle writes one of each")
    t = _times(state_path, state)
    if bus_period is not None:
        _check_bus_period(state_path, t, bus_period, f" ({robot_file})" if robot_file else "")
    tc = _times(control_path, control)
    apart = np.flatnonzero(np.abs(tc - t) > 1e-6)
    if apart.size:
        i = int(apart[0])
        raise RecordingError(f"{control_path}: row {i + 2}: timestamp {control[i][1]} differs "
                             f"from state_motor.csv's {state[i][1]} (one bus cycle, one time)")
    return Recording(
        name=folder.name, joints=joints, t=t,
        goal=_vectors(control_path, control, 2, "positions", n, MAX_ANGLE),
        position=_vectors(state_path, state, 2, "positions", n, MAX_ANGLE),
        velocity=_vectors(state_path, state, 3, "velocities", n, MAX_SPEED),
        torque=_vectors(state_path, state, 4, "torques", n, 1e3),
        path=folder)


def write_recording(folder: str | os.PathLike, recording: Recording) -> Path:
    """Write ``recording`` as a ``sage`` recording folder (created; its files written
    atomically), the format :func:`read_recording` reads back: the first row's timestamp
    0 s, later rows µs since it (back to 1e-12 s), every value as Python's shortest repr (back
    to the last bit)."""
    from frictionsim.atomic import write_text

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)

    def row(values) -> str:
        return "[" + ", ".join(repr(float(x)) for x in values) + "]"

    stamps = [repr(0.0)] + [repr(float(t) * 1e6) for t in recording.t[1:]]
    control = ["type,timestamp,positions"] + [
        f'CONTROL,{s},"{row(g)}"' for s, g in zip(stamps, recording.goal)]
    state = ["type,timestamp,positions,velocities,torques"] + [
        f'STATE_MOTOR,{s},"{row(q)}","{row(v)}","{row(tau)}"'
        for s, q, v, tau in zip(stamps, recording.position, recording.velocity,
                                recording.torque)]
    write_text(folder / "joint_list.txt", "\n".join(recording.joints) + "\n")
    write_text(folder / "control.csv", "\n".join(control) + "\n")
    write_text(folder / "state_motor.csv", "\n".join(state) + "\n")
    return folder


def recording_folders(paths) -> list[Path]:
    """The recording folders among ``paths``: each path that is a recording (it holds
    ``control.csv``), or the recordings directly inside it, sorted by name; ``RecordingError``
    for a path that is neither."""
    out = []
    def holds_recording(p: Path) -> bool:
        # lexists: a broken or looping link is still a recording, reported by its reader
        return os.path.lexists(p / "control.csv")

    for p in map(Path, paths):
        if holds_recording(p):
            out.append(p)
            continue
        inside = sorted(q for q in p.iterdir() if holds_recording(q)) if p.is_dir() else []
        if not inside:
            raise RecordingError(f"{p}: neither a recording folder nor a folder of recordings "
                                 "(no control.csv)")
        out.extend(inside)
    names = [p.name for p in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise RecordingError(f"two recordings are named {twice[0]!r}: motions are reported by "
                             "folder name")
    return out
