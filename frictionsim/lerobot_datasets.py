"""LeRobot datasets read as robot recordings (docs/robots.md, "LeRobot datasets").

A LeRobot dataset folder holds ``meta/info.json`` (``codebase_version``, ``robot_type``,
``fps``, each feature's ``names``) and parquet tables of frames: one file per episode in the
v2 layout (``meta/episodes.jsonl`` lists the episodes), chunked files of many episodes in
v3.0 (``meta/episodes/chunk-*/file-*.parquet`` lists them). Each frame holds ``action``
(the goals sent to the follower) and ``observation.state`` (the positions it read before
sending them), one value per motor, named ``<motor>.pos``.

The values are what LeRobot's calibration made of the encoder counts c (after the homing
offset the servo applies), with the calibrated range [c_min, c_max] of each motor:

- ``normalised`` (LeRobot's default): n = 200·(c − c_min)/(c_max − c_min) − 100, negated
  when the motor's ``drive_mode`` is 1 (the gripper: 0–100, 100 − n when inverted);
- ``degrees``: d = (c − c_mid)·360/(N − 1), with c_mid = (c_min + c_max)/2 and N the
  counts per turn (LeRobot divides by the largest count, 4095, not by 4096).

The robot file's ``[lerobot]`` table says which, and where its MJCF puts the zero
(``range_middle``: c_mid, or ``half_turn``: count 2047, LeRobot's homing pose); the angle
recorded is q = 2π·(c − c_zero)/N rad, as in the robot's other recordings, and the robot
file's ``sign`` and ``offset`` then take it to the MJCF's joint. Degrees from the range's
middle need no calibration; everything else needs the arm's calibration file (LeRobot's
``calibration/robots/<type>/<id>.json``: per motor ``id``, ``drive_mode``,
``homing_offset``, ``range_min``, ``range_max``).

A dataset has no velocity: the recorded velocity is the positions' central difference
(one-sided at an episode's ends), and no torque (NaN).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from frictionsim.errors import ConfigurationError, MissingExtra
from frictionsim.jsonfile import check_regular_file, read_json
from frictionsim.robot_files import RobotDescription, RobotJoint, get_robot
from frictionsim.robot_recordings import (
    MAX_ANGLE,
    Recording,
    RecordingError,
    differenced_velocity,
)

#: The layouts read: one parquet file per episode (v2.0, v2.1), or chunked files (v3.0).
LAYOUTS = ("v2.0", "v2.1", "v3.0")
#: How far (relative) the frames' median spacing may stray from 1/fps.
FPS_TOLERANCE = 0.05
#: A step between frames longer than this many frame periods is a dropped frame.
GAP_FRAMES = 1.5
#: Normalised values may exceed ±100 by this much (LeRobot clamps to the range; float32).
NORMALISED_SLACK = 0.5
STATE, ACTION = "observation.state", "action"
#: The motor LeRobot normalises to 0–100 instead of ±100.
GRIPPER = "gripper"


@dataclass(frozen=True)
class MotorCalibration:
    """One motor's LeRobot calibration (encoder counts, after the homing offset)."""

    id: int
    drive_mode: int
    homing_offset: int
    range_min: int
    range_max: int

    @property
    def middle(self) -> float:
        return 0.5 * (self.range_min + self.range_max)


@dataclass(frozen=True)
class Episode:
    """Where one episode's frames lie: its parquet file and its length in frames."""

    index: int
    length: int
    file: Path


@dataclass(frozen=True)
class DatasetInfo:
    """A dataset's layout, rate and joint names, and its episodes by index."""

    root: Path
    version: str
    fps: float
    robot_type: str
    state_names: tuple[str, ...]
    action_names: tuple[str, ...]
    episodes: dict[int, Episode]


def is_dataset(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a LeRobot dataset folder (it holds ``meta/info.json``)."""
    return (Path(path) / "meta" / "info.json").is_file()


def _pyarrow():
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingExtra("reading a LeRobot dataset needs pyarrow: pip install "
                           "'frictionsim[lerobot]'") from None
    return pq


def _names(info: dict, key: str, where: Path) -> tuple[str, ...]:
    feature = info.get("features", {}).get(key)
    if not isinstance(feature, dict):
        raise RecordingError(f"{where}: no feature {key!r}; a robot's dataset records "
                             f"{STATE!r} and {ACTION!r}")
    names = feature.get("names")
    if isinstance(names, dict):  # v2.0 wrote {"motors": [...]}
        names = next(iter(names.values()), None)
    if (not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names)
            or len(set(names)) != len(names)):
        raise RecordingError(f"{where}: feature {key!r} must name each of its values once "
                             f"(names), got {names!r}")
    return tuple(names)


def open_dataset(folder: str | os.PathLike) -> DatasetInfo:
    """Read a dataset's ``meta``: its layout, fps, robot type, joint names and episodes;
    :class:`RecordingError` naming the file at fault."""
    root = Path(folder)
    info_path = root / "meta" / "info.json"
    info = read_json(info_path, RecordingError, "LeRobot dataset description")
    if not isinstance(info, dict):
        raise RecordingError(f"{info_path}: expected a JSON object")
    version = info.get("codebase_version")
    if version not in LAYOUTS:
        raise RecordingError(f"{info_path}: codebase_version {version!r}; frictionsim reads "
                             f"LeRobot datasets {', '.join(LAYOUTS)}")
    fps = info.get("fps")
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not 0 < fps <= 1000:
        raise RecordingError(f"{info_path}: fps {fps!r} must be a number in (0, 1000]")
    template = info.get("data_path")
    if not isinstance(template, str):
        raise RecordingError(f"{info_path}: no data_path (where the frames' parquet files lie)")
    state, action = _names(info, STATE, info_path), _names(info, ACTION, info_path)
    if version == "v3.0":
        episodes = _episodes_v3(root, template)
    else:
        episodes = _episodes_v2(root, template, info.get("chunks_size", 1000))
    if not episodes:
        raise RecordingError(f"{root / 'meta'}: the dataset lists no episode")
    return DatasetInfo(root, version, float(fps), str(info.get("robot_type") or ""), state,
                       action, episodes)


def _episodes_v2(root: Path, template: str, chunks_size) -> dict[int, Episode]:
    path = root / "meta" / "episodes.jsonl"
    check_regular_file(path, RecordingError, "episode list")
    out = {}
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                index, length = int(row["episode_index"]), int(row["length"])
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                raise RecordingError(f"{path}: line {line_no} is not an episode (episode_index, "
                                     "length)") from None
            file = root / template.format(episode_chunk=index // int(chunks_size),
                                          episode_index=index)
            out[index] = Episode(index, length, file)
    return out


def _episodes_v3(root: Path, template: str) -> dict[int, Episode]:
    pq = _pyarrow()
    files = sorted((root / "meta" / "episodes").glob("chunk-*/file-*.parquet"))
    if not files:
        raise RecordingError(f"{root / 'meta' / 'episodes'}: no chunk-*/file-*.parquet (a v3.0 "
                             "dataset lists its episodes there)")
    out = {}
    columns = ["episode_index", "length", "data/chunk_index", "data/file_index"]
    for path in files:
        try:
            table = pq.read_table(path, columns=columns).to_pydict()
        except Exception as e:  # pyarrow raises its own types for a broken or partial file
            raise RecordingError(f"{path}: cannot read the episode table ({e})") from None
        for index, length, chunk, file in zip(*(table[c] for c in columns)):
            out[int(index)] = Episode(int(index), int(length),
                                      root / template.format(chunk_index=int(chunk),
                                                             file_index=int(file)))
    return out


def parse_episodes(spec: str | list[int] | None, available: list[int], where: str) -> list[int]:
    """Episode indices from ``"0-9,12"`` (ranges inclusive) or a list of them; None: every
    episode. An index the dataset lacks is refused, naming the ones it has."""
    if spec is None:
        return sorted(available)
    if isinstance(spec, list) and not spec:
        raise ConfigurationError("--episodes []: no episode chosen (None reads them all)")
    chosen: list[int] = []
    for part in (map(str, spec) if isinstance(spec, list) else str(spec).split(",")):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m or (m[2] is not None and int(m[2]) < int(m[1])):
            raise ConfigurationError(f"--episodes {spec!r}: expected indices and ranges such "
                                     "as 0-9,12")
        chosen.extend(range(int(m[1]), int(m[2] or m[1]) + 1))
    have = set(available)
    missing = [i for i in chosen if i not in have]
    if missing:
        raise ConfigurationError(f"{where}: no episode {missing[0]} (it has {len(have)}: "
                                 f"{_ranges(sorted(have))})")
    twice = next((i for k, i in enumerate(chosen) if i in chosen[:k]), None)
    if twice is not None:
        raise ConfigurationError(f"--episodes {spec!r}: episode {twice} is named twice")
    return chosen


def _ranges(indices: list[int]) -> str:
    out, start = [], None
    for k, i in enumerate(indices):
        if start is None:
            start = i
        if k + 1 == len(indices) or indices[k + 1] != i + 1:
            out.append(str(start) if start == i else f"{start}-{i}")
            start = None
    return ",".join(out)


def read_calibration(path: str | os.PathLike) -> dict[str, MotorCalibration]:
    """A LeRobot calibration file: motor name → :class:`MotorCalibration`."""
    path = Path(path)
    return parse_calibration(read_json(path, ConfigurationError, "LeRobot calibration file"),
                             str(path))


def parse_calibration(data, path: str = "the calibration") -> dict[str, MotorCalibration]:
    """A LeRobot calibration as parsed from its JSON (motor name → its ``id``, ``drive_mode``,
    ``homing_offset``, ``range_min``, ``range_max``), checked: ConfigurationError naming
    ``path``, the motor and the key of anything wrong."""
    if not isinstance(data, dict) or not data:
        raise ConfigurationError(f"{path}: a LeRobot calibration is a JSON object of motors")
    out = {}
    keys = ("id", "drive_mode", "homing_offset", "range_min", "range_max")
    for motor, entry in data.items():
        if not isinstance(entry, dict) or sorted(entry) != sorted(keys):
            raise ConfigurationError(f"{path}: motor {motor!r} must give exactly "
                                     f"{', '.join(keys)}")
        for k in keys:
            if isinstance(entry[k], bool) or not isinstance(entry[k], int):
                raise ConfigurationError(f"{path}: {motor}.{k} = {entry[k]!r} is not an integer")
        if entry["drive_mode"] not in (0, 1):
            raise ConfigurationError(f"{path}: {motor}.drive_mode = {entry['drive_mode']} must "
                                     "be 0 or 1")
        if not entry["range_min"] < entry["range_max"]:
            raise ConfigurationError(f"{path}: {motor}: range_min {entry['range_min']} must be "
                                     f"below range_max {entry['range_max']}")
        out[motor] = MotorCalibration(*(entry[k] for k in keys))
    return out


def _check_calibration(calibration: dict[str, MotorCalibration], robot: RobotDescription,
                       where: str) -> None:
    """The calibration must be this robot's: its motors, their bus ids, counts in one turn."""
    counts = robot.lerobot.counts_per_turn
    ours = {j.lerobot: j for j in robot.joints if j.lerobot}
    if set(calibration) != set(ours):
        raise ConfigurationError(
            f"{where}: a calibration of motors {', '.join(sorted(calibration)) or '(none)'}, "
            f"but the robot file {robot.name} names {', '.join(sorted(ours))}: the calibration "
            "of another arm?")
    for motor, c in calibration.items():
        j = ours[motor]
        if j.bus_id is not None and c.id != j.bus_id:
            raise ConfigurationError(f"{where}: motor {motor} has id {c.id} there, {j.bus_id} in "
                                     f"the robot file {robot.name}: the calibration of another arm?")
        if not 0 <= c.range_min < c.range_max < counts:
            raise ConfigurationError(f"{where}: motor {motor}'s range {c.range_min}–{c.range_max} "
                                     f"does not lie in one turn of {counts} counts")


def joint_angles(values: np.ndarray, joint: RobotJoint, robot: RobotDescription, units: str,
                 calibration: dict[str, MotorCalibration] | None) -> np.ndarray:
    """A joint's LeRobot values → its recorded angle (rad), q = 2π·(c − c_zero)/N (module
    docstring); LeRobot's ``gripper`` is normalised to 0–100, every other motor to ±100."""
    convention = robot.lerobot
    n = convention.counts_per_turn
    calib = calibration[joint.lerobot] if calibration is not None else None
    if units == "degrees":
        from_middle = values * (n - 1) / 360.0
        counts = from_middle if calib is None else from_middle + calib.middle
    else:
        span = calib.range_max - calib.range_min
        if joint.lerobot == GRIPPER:
            fraction = (100.0 - values if calib.drive_mode else values) / 100.0
        else:
            fraction = ((-values if calib.drive_mode else values) + 100.0) / 200.0
        counts = calib.range_min + fraction * span
    if convention.zero == "range_middle":
        zero = 0.0 if calib is None else calib.middle
    else:
        zero = float((n - 1) // 2)
    return 2 * math.pi * (counts - zero) / n


def _columns(table, key: str, width: int, where: str) -> np.ndarray:
    column = table.column(key).combine_chunks()
    flat = np.asarray(column.flatten().to_numpy(zero_copy_only=False), dtype=float)
    if flat.size != width * len(column) or column.null_count:
        raise RecordingError(f"{where}: {key} must hold {width} values in every frame")
    return flat.reshape(len(column), width)


def _frames(info: DatasetInfo, episode: Episode) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The episode's timestamps, states and actions (rows in frame order)."""
    pq = _pyarrow()
    where = f"{info.root.name} episode {episode.index} ({episode.file})"
    check_regular_file(episode.file, RecordingError, "LeRobot data file")
    try:
        filters = [("episode_index", "=", episode.index)] if info.version == "v3.0" else None
        table = pq.read_table(episode.file, columns=["episode_index", "frame_index",
                                                     "timestamp", STATE, ACTION],
                              filters=filters)
    except Exception as e:  # pyarrow raises its own types for a broken file or a missing column
        raise RecordingError(f"{where}: cannot read its frames ({e})") from None
    frame = np.asarray(table.column("frame_index").to_numpy(), dtype=np.int64)
    order = np.argsort(frame, kind="stable")
    t = np.asarray(table.column("timestamp").to_numpy(), dtype=float)[order]
    state = _columns(table, STATE, len(info.state_names), where)[order]
    action = _columns(table, ACTION, len(info.action_names), where)[order]
    frame = frame[order]
    if len(frame) < 2:
        raise RecordingError(f"{where}: {len(frame)} frames; a recording needs at least 2")
    _check_timing(where, frame, t, info.fps)
    return t - t[0], state, action


def _check_timing(where: str, frame: np.ndarray, t: np.ndarray, fps: float) -> None:
    jumps = np.flatnonzero(np.diff(frame) != 1)
    if jumps.size:
        k = int(jumps[0])
        raise RecordingError(f"{where}: frame {frame[k + 1]} follows frame {frame[k]}: dropped or "
                             "repeated frames; a replay needs every bus cycle")
    if not np.all(np.isfinite(t)):
        raise RecordingError(f"{where}: a timestamp is not finite")
    steps = np.diff(t)
    spacing = float(np.median(steps))
    if abs(spacing * fps - 1.0) > FPS_TOLERANCE:
        raise RecordingError(f"{where}: frames {1e3 * spacing:.4g} ms apart (median), but "
                             f"info.json says {fps:g} fps ({1e3 / fps:.4g} ms): the timestamps "
                             "contradict the fps")
    bad = np.flatnonzero((steps > GAP_FRAMES / fps) | (steps <= 0))
    if bad.size:
        k = int(bad[0])
        raise RecordingError(f"{where}: {1e3 * steps[k]:.4g} ms from frame {frame[k]} to frame "
                             f"{frame[k + 1]} ({1e3 / fps:.4g} ms at {fps:g} fps): a gap in the "
                             "recording (dropped frames)")


@dataclass
class LeRobotRecordings:
    """Episodes of a dataset as recordings, and the robot at the dataset's rate."""

    robot: RobotDescription
    recordings: list[Recording]
    info: DatasetInfo


def read_lerobot(folder: str | os.PathLike, robot: RobotDescription | str | os.PathLike, *,
                 episodes: str | list[int] | None = None,
                 calibration: str | os.PathLike | dict | None = None,
                 units: str | None = None) -> LeRobotRecordings:
    """Episodes of a LeRobot dataset as recordings of ``robot`` (module docstring).

    ``episodes``: indices or ``"0-9,12"`` (default: all); ``calibration``: the arm's LeRobot
    calibration file (or its parsed dict), needed for normalised values and for degrees
    about another zero than the range's middle; ``units``: ``normalised`` or ``degrees``
    (default: the robot file's). The robot returned runs at the dataset's fps
    (:meth:`RobotDescription.at_rate`). Refusals name the culprit: a robot without a
    ``[lerobot]`` table, a dataset of another robot type, a missing or foreign calibration,
    values outside the normalised range, dropped frames, timestamps that contradict the fps,
    a dataset without the robot's simulated joints (a gripper alone), an episode it lacks.
    """
    if isinstance(robot, (str, os.PathLike)):
        robot = get_robot(robot)
    elif not isinstance(robot, RobotDescription):
        raise ConfigurationError(f"robot: a RobotDescription, a built-in robot's name or a robot "
                                 f"file's path, not {type(robot).__name__}")
    if not isinstance(folder, (str, os.PathLike)):
        raise ConfigurationError(f"a LeRobot dataset folder's path, not {type(folder).__name__}")
    info = open_dataset(folder)
    where = str(info.root)
    convention = robot.lerobot
    if convention is None:
        raise ConfigurationError(f"robot file {robot.name} has no [lerobot] table: it does not "
                                 "say how LeRobot's joint names map to its MJCF "
                                 "(docs/robots.md, \"LeRobot datasets\")")
    if info.robot_type and info.robot_type not in convention.robot_types:
        raise ConfigurationError(f"{where}: a dataset of a {info.robot_type!r}, but the robot file "
                                 f"{robot.name} describes {', '.join(convention.robot_types)}")
    units = units or convention.units
    if units not in ("normalised", "degrees"):
        raise ConfigurationError(f"units {units!r}: expected normalised or degrees")
    cal_where = "the calibration"
    if isinstance(calibration, (str, os.PathLike)):
        cal_where = str(calibration)
        calibration = read_calibration(calibration)
    elif isinstance(calibration, dict):
        if not all(isinstance(c, MotorCalibration) for c in calibration.values()):
            calibration = parse_calibration(calibration)
    elif calibration is not None:
        raise ConfigurationError(f"calibration: a LeRobot calibration file's path or its parsed "
                                 f"dict, not {type(calibration).__name__}")
    needs = units == "normalised" or convention.zero != "range_middle"
    if calibration is None and needs:
        why = ("values normalised to ±100 of each joint's calibrated range" if units ==
               "normalised" else f"degrees about another zero ({convention.zero})")
        raise ConfigurationError(f"{where}: {why} need the arm's LeRobot calibration file "
                                 "(--calibration FILE: calibration/robots/<type>/<id>.json)")
    if calibration is not None:
        _check_calibration(calibration, robot, cal_where)
    simulated = list(robot.servo_joints)
    state_cols, action_cols = [], []
    for j in simulated:
        feature = f"{j.lerobot}.pos"
        if feature not in info.state_names or feature not in info.action_names:
            present = [j2.lerobot for j2 in robot.joints
                       if f"{j2.lerobot}.pos" in info.state_names]
            what = (f"only {', '.join(present)}" if present else "none of its joints")
            raise RecordingError(f"{where}: no {feature} in {STATE} and {ACTION} (names: "
                                 f"{', '.join(info.state_names)}): the dataset records {what} "
                                 f"of the robot file {robot.name}'s simulated joints")
        state_cols.append(info.state_names.index(feature))
        action_cols.append(info.action_names.index(feature))
    chosen = parse_episodes(episodes, list(info.episodes), where)
    recordings = []
    for index in chosen:
        t, state, action = _frames(info, info.episodes[index])
        ep_where = f"{info.root.name} episode {index}"
        q = np.empty((len(t), len(simulated)))
        goal = np.empty_like(q)
        for k, j in enumerate(simulated):
            for out, values, name in ((q, state[:, state_cols[k]], STATE),
                                      (goal, action[:, action_cols[k]], ACTION)):
                if not np.all(np.isfinite(values)):
                    row = int(np.flatnonzero(~np.isfinite(values))[0])
                    raise RecordingError(f"{ep_where}: {name} {j.lerobot}.pos is not finite at "
                                         f"frame {row}")
                if units == "normalised" and np.max(np.abs(values)) > 100 + NORMALISED_SLACK:
                    raise RecordingError(
                        f"{ep_where}: {name} {j.lerobot}.pos reaches {np.max(np.abs(values)):.1f}, "
                        "outside the normalised ±100: are the values degrees (--units degrees)?")
                out[:, k] = joint_angles(values, j, robot, units, calibration)
        if np.max(np.abs(q)) > MAX_ANGLE or np.max(np.abs(goal)) > MAX_ANGLE:
            raise RecordingError(f"{ep_where}: angles beyond {MAX_ANGLE:.1f} rad: not a joint's "
                                 "position (the units or the calibration?)")
        velocity = differenced_velocity(q, t)
        recordings.append(Recording(
            name=f"{info.root.name}_episode_{index:06d}", joints=tuple(j.name for j in simulated),
            t=t, goal=goal, position=q, velocity=velocity, torque=np.full_like(q, np.nan),
            path=info.episodes[index].file))
    return LeRobotRecordings(robot.at_rate(info.fps), recordings, info)
