"""Writes LeRobot datasets for the tests, as LeRobot lays them out (v2.1: a parquet file per
episode and meta/episodes.jsonl; v3.0: chunked files and meta/episodes/ tables), with values
made from angles by LeRobot's own normalisation (its MotorsBus._normalize): the reader is
tested against this inverse, written from LeRobot's formulas, not against itself."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

MOTORS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")
COUNTS = 4096


def calibration(drive_modes=(0,) * 6, ids=(1, 2, 3, 4, 5, 6), motors=MOTORS) -> dict:
    """A plausible SO-101 calibration: each range about a half turn around the middle."""
    ranges = [(800, 3300), (900, 3200), (850, 3100), (870, 3150), (0, 4095), (2000, 3400)]
    return {m: {"id": i, "drive_mode": d, "homing_offset": -1000 + 100 * k,
                "range_min": lo, "range_max": hi}
            for k, (m, i, d, (lo, hi)) in enumerate(zip(motors, ids, drive_modes, ranges))}


def lerobot_values(rad: np.ndarray, cal: dict, units: str, zero: str = "range_middle",
                   gripper: bool = False) -> np.ndarray:
    """Angles (rad, zero at ``zero``) → what LeRobot writes: counts c, then normalised
    (±100, 0–100 for the gripper; drive mode inverts) or degrees from the range's middle."""
    lo, hi = cal["range_min"], cal["range_max"]
    mid = (lo + hi) / 2
    c = rad * COUNTS / (2 * math.pi) + (mid if zero == "range_middle" else (COUNTS - 1) // 2)
    if units == "degrees":
        return (c - mid) * 360 / (COUNTS - 1)
    if gripper:
        n = (c - lo) / (hi - lo) * 100
        return 100 - n if cal["drive_mode"] else n
    n = (c - lo) / (hi - lo) * 200 - 100
    return -n if cal["drive_mode"] else n


def _features(names) -> dict:
    vec = {"dtype": "float32", "shape": [len(names)], "names": list(names)}
    scalar = {"dtype": "int64", "shape": [1], "names": None}
    return {"action": vec, "observation.state": dict(vec),
            "timestamp": {"dtype": "float32", "shape": [1], "names": None},
            "frame_index": scalar, "episode_index": scalar, "index": scalar, "task_index": scalar}


def _table(rows: list[dict]) -> pa.Table:
    n = len(rows[0]["state"][0])
    cols = {"action": [], "observation.state": [], "timestamp": [], "frame_index": [],
            "episode_index": [], "index": [], "task_index": []}
    index = 0
    for ep in rows:
        for f, (t, s, a) in enumerate(zip(ep["t"], ep["state"], ep["action"])):
            cols["action"].append(np.float32(a).tolist())
            cols["observation.state"].append(np.float32(s).tolist())
            cols["timestamp"].append(float(np.float32(t)))
            cols["frame_index"].append(ep.get("frames", range(len(ep["t"])))[f])
            cols["episode_index"].append(ep["index"])
            cols["index"].append(ep.get("start", 0) + index)
            cols["task_index"].append(0)
            index += 1
    vec = pa.list_(pa.float32(), n)
    return pa.table({"action": pa.array(cols["action"], type=vec),
                     "observation.state": pa.array(cols["observation.state"], type=vec),
                     "timestamp": pa.array(cols["timestamp"], type=pa.float32()),
                     "frame_index": pa.array(cols["frame_index"], type=pa.int64()),
                     "episode_index": pa.array(cols["episode_index"], type=pa.int64()),
                     "index": pa.array(cols["index"], type=pa.int64()),
                     "task_index": pa.array(cols["task_index"], type=pa.int64())})


def write_dataset(root: Path, episodes: list[dict], *, version: str = "v3.0", fps: float = 30,
                  robot_type: str = "so101_follower", names=tuple(f"{m}.pos" for m in MOTORS),
                  per_file: int = 2) -> Path:
    """``episodes``: dicts of ``t`` (s), ``state`` and ``action`` (frames × joints, LeRobot's
    values), optional ``frames`` (frame indices; default 0, 1, …). v3.0 puts ``per_file``
    episodes in each data file."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "meta").mkdir(exist_ok=True)
    for k, ep in enumerate(episodes):
        ep.setdefault("index", k)
    info = {"codebase_version": version, "robot_type": robot_type, "fps": fps,
            "total_episodes": len(episodes), "chunks_size": 1000, "features": _features(names)}
    if version == "v3.0":
        info["data_path"] = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
        table, start = [], 0
        for k in range(0, len(episodes), per_file):
            group = episodes[k:k + per_file]
            path = root / info["data_path"].format(chunk_index=0, file_index=k // per_file)
            path.parent.mkdir(parents=True, exist_ok=True)
            for ep in group:
                ep["start"] = start
                table.append({"episode_index": ep["index"], "length": len(ep["t"]),
                              "data/chunk_index": 0, "data/file_index": k // per_file,
                              "dataset_from_index": start,
                              "dataset_to_index": start + len(ep["t"]), "tasks": ["move"]})
                start += len(ep["t"])
            pq.write_table(_table(group), path)
        meta = root / "meta" / "episodes" / "chunk-000" / "file-000.parquet"
        meta.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(table), meta)
    else:
        info["data_path"] = "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"
        lines = []
        for ep in episodes:
            path = root / info["data_path"].format(episode_chunk=0, episode_index=ep["index"])
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(_table([ep]), path)
            lines.append(json.dumps({"episode_index": ep["index"], "tasks": ["move"],
                                     "length": len(ep["t"])}))
        (root / "meta" / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=2))
    return root


def episode_from_angles(t, q_state, q_action, cal: dict, units: str, motors=MOTORS,
                        zero: str = "range_middle") -> dict:
    """An episode whose values LeRobot would have written for these angles (rad, one column
    per motor of ``motors``)."""
    state = np.column_stack([lerobot_values(q_state[:, k], cal[m], units, zero, m == "gripper")
                             for k, m in enumerate(motors)])
    action = np.column_stack([lerobot_values(q_action[:, k], cal[m], units, zero, m == "gripper")
                              for k, m in enumerate(motors)])
    return {"t": np.asarray(t, dtype=float), "state": state, "action": action}
