"""Bench log files (docs/model.md §6): read and validate, write, resample raw → processed.

A log is one JSON object: header fields (``mass``, ``length``, ``kp`` required;
``vin``, ``motor``, ``trajectory``, ``arm_mass``/``arm-mass``, ``damping``
optional; ``dt`` in processed logs) and ``entries``, a list of samples with
``position``, ``goal_position``, ``torque_enable``, ``timestamp`` (required) and
``speed``, ``load``, ``input_volts``, ``temp`` (optional, recorded).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from frictionsim import atomic, jsonfile, plausibility
from frictionsim.errors import FrictionsimError
from frictionsim.firmware import firmware_settings
from frictionsim.jsonfile import first_non_finite, read_json
from frictionsim.limits import is_number

REQUIRED_HEADER = ("mass", "length", "kp")
REQUIRED_ENTRY = ("position", "goal_position", "torque_enable", "timestamp")
DEFAULT_DT = 0.005


class LogError(FrictionsimError, ValueError):
    """A log that cannot be used; the message names the file, the entry, the field and the value."""


@dataclass
class Log:
    """One bench recording: its header fields and its entries (as read, key order kept)."""

    header: dict
    entries: list[dict]
    path: Path | None = None
    alias: str | None = None
    """The name to show when another loaded log has the same file name (:func:`disambiguate`)."""

    @property
    def name(self) -> str:
        """The file name, or the alias that tells it from a namesake in another folder."""
        if self.alias:
            return self.alias
        return self.path.name if self.path else "<log>"

    @property
    def processed(self) -> bool:
        return "dt" in self.header

    @property
    def dt(self) -> float:
        if "dt" not in self.header:
            raise LogError(f"{self.name}: raw log has no 'dt'; process it first (frictionsim process)")
        return float(self.header["dt"])

    @property
    def mass(self) -> float:
        return float(self.header["mass"])

    @property
    def length(self) -> float:
        return float(self.header["length"])

    @property
    def arm_mass(self) -> float:
        """``arm_mass``, else ``arm-mass``, else 0 (kg)."""
        if "arm_mass" in self.header:
            return float(self.header["arm_mass"])
        return float(self.header.get("arm-mass", 0.0))

    @property
    def kp(self) -> float:
        return float(self.header["kp"])

    @property
    def trajectory(self) -> str:
        return str(self.header.get("trajectory", "?"))

    def column(self, key: str, default: float | None = None) -> np.ndarray:
        """One entry field as a float64 array (booleans as 0/1)."""
        if default is not None:
            return np.array([float(e.get(key, default)) for e in self.entries])
        return np.array([float(e[key]) for e in self.entries])

    def supply(self) -> np.ndarray:
        """The logged supply ``input_volts`` per entry (V); NaN where an entry has none."""
        return np.array([float(e.get("input_volts", math.nan)) for e in self.entries])

    def bench(self, actuator: str) -> np.ndarray:
        """The bench vector (:mod:`frictionsim.layout`) of this log for an actuator.

        ``kp`` always comes from the log; ``vin`` from the log when present, else
        the actuator default; the eRob's damping from the log's ``damping`` when present; a
        Feetech D coefficient from the log's ``kd``, else the actuator's (with a D term).
        """
        return firmware_settings(actuator, self.header, self.dt, arm_mass=self.arm_mass)

    def to_dict(self) -> dict:
        return {**self.header, "entries": self.entries}


def _number(value, where: str, allow_bool: bool = False) -> float:
    if isinstance(value, bool) and not allow_bool:
        raise LogError(f"{where} = {value!r} is not a number")
    if not isinstance(value, (int, float)):
        raise LogError(f"{where} = {value!r} is not a number")
    if not math.isfinite(value):
        raise LogError(f"{where} = {value!r} is not finite")
    return float(value)


_NUMBER_TYPES = (int, float, bool)


def _uniform_numeric_keys(entries: list):
    """The entries' keys when every entry is an object with the same keys, the required ones
    among them, every value a finite number and the timestamps increasing; else None (the
    entry-by-entry check then names the first problem). One pass over the values in bulk:
    loading hundreds of logs is bound by this check."""
    first = entries[0]
    if type(first) is not dict or any(k not in first for k in REQUIRED_ENTRY):
        return None
    keys = first.keys()
    if not all(type(e) is dict and e.keys() == keys for e in entries):
        return None
    names = list(keys)
    flat = [e[k] for e in entries for k in names]
    if not all(type(v) in _NUMBER_TYPES for v in flat):
        return None
    table = np.array(flat, dtype=float).reshape(len(entries), len(names))
    if not np.isfinite(table).all():
        return None
    if not (np.diff(table[:, names.index("timestamp")]) > 0).all():
        return None
    return keys


def validate(data, name: str, processed: bool | None = None) -> Log:
    """Check a parsed log object and return it as a :class:`Log`.

    ``processed``: True requires ``dt``, False forbids nothing; None accepts both.
    Beyond types: header values and the positions, goals and speeds must lie in
    the plausible ranges of :mod:`frictionsim.plausibility` (errors outside the
    hard ones, warnings outside the soft ones), and the timestamps must make a
    recording (:func:`check_timeline`). Raises :class:`LogError` naming the file,
    entry index, field and value.
    """
    if not isinstance(data, dict):
        raise LogError(f"{name}: expected a JSON object, got {type(data).__name__}")
    for key in REQUIRED_HEADER:
        if key not in data:
            raise LogError(f"{name}: missing header field {key!r}")
    header = {k: v for k, v in data.items() if k != "entries"}
    bad = first_non_finite(header, name)
    if bad:
        raise LogError(f"{bad} is not finite (JSON has no NaN or infinity)")
    for key, limit in plausibility.HEADER.items():
        if key in data:
            value = _number(data[key], f"{name}: {key}")
            limit.check(value, f"{name}: {key}", LogError)
    if "arm_mass" in data and "arm-mass" in data and data["arm_mass"] != data["arm-mass"]:
        raise LogError(f"{name}: the header has both arm_mass = {data['arm_mass']!r} and "
                       f"arm-mass = {data['arm-mass']!r}; keep one")
    if processed and "dt" not in data:
        raise LogError(f"{name}: a processed log needs 'dt' (process the raw log first)")
    entries = data.get("entries")
    if not isinstance(entries, list):
        raise LogError(f"{name}: 'entries' must be a list, got {type(entries).__name__}")
    if len(entries) < 2:
        raise LogError(f"{name}: 'entries' has {len(entries)} entries, at least 2 are needed")
    keys = _uniform_numeric_keys(entries)
    last_t = math.inf if keys is not None else -math.inf  # the loop below only names errors
    for i, entry in enumerate(entries if keys is None else ()):
        where = f"{name}: entries[{i}]"
        if not isinstance(entry, dict):
            raise LogError(f"{where} is not an object")
        for key in REQUIRED_ENTRY:
            if key not in entry:
                raise LogError(f"{where}: missing field {key!r}")
        if keys is None:
            keys = entry.keys()
        elif entry.keys() != keys:
            odd = sorted(set(keys) ^ set(entry.keys()))
            raise LogError(f"{where}: fields differ from entries[0] ({', '.join(odd)})")
        for key, value in entry.items():
            _number(value, f"{where}.{key}", allow_bool=True)
        t = entry["timestamp"]
        if t <= last_t:
            raise LogError(
                f"{where}.timestamp = {t!r} is not after the previous one ({last_t!r})"
            )
        last_t = t
    log = Log(header, entries, Path(name))
    for key, limit in plausibility.ENTRY.items():
        if key in keys:
            _check_column(log, key, limit)
    enable = log.column("torque_enable")
    odd = np.flatnonzero((enable != 0.0) & (enable != 1.0))
    if odd.size:  # the flag multiplies the motor torque: 7 or −1 would scale it
        k = int(odd[0])
        raise LogError(f"{name}: entries[{k}].torque_enable = {entries[k]['torque_enable']!r} "
                       "must be true/false (or 1/0)")
    check_timeline(log)
    return log


def _check_column(log: Log, key: str, limit: plausibility.Limit) -> None:
    """Errors for the first entry outside ``limit``'s hard range, one warning for its soft range."""
    col = log.column(key)
    hard = (col < limit.lower) | (col > limit.upper)
    if hard.any():
        i = int(np.argmax(hard))
        limit.check(float(col[i]), f"{log.name}: entries[{i}].{key}", LogError)
    soft = (col < limit.warn_lower) | (col > limit.warn_upper)
    if soft.any():
        i = int(np.argmax(soft))
        plausibility.warn(f"{log.name}: entries[{i}].{key} = {float(col[i])!r} {limit.unit} is unusual "
                          f"on a bench ({int(soft.sum())} entries beyond ±{limit.warn_upper:g} "
                          f"{limit.unit}); used as given")


def check_timeline(log: Log) -> None:
    """Refuse timestamps that no recording makes; :class:`LogError` naming the entry.

    Every log: the first timestamp at most
    :data:`~frictionsim.plausibility.MAX_FIRST_TIMESTAMP` (processing samples from
    t = 0). A processed log: entry k at t_0 + k·dt (to 0.1 % of dt), so a gap or a
    ``dt`` that disagrees with the timestamps is caught. A raw log: no gap longer
    than :data:`~frictionsim.plausibility.MAX_GAP` s and
    :data:`~frictionsim.plausibility.MAX_GAP_PERIODS` median periods (resampling
    would invent the data inside it); shorter gaps beyond
    :data:`~frictionsim.plausibility.WARN_GAP_PERIODS` periods are warned about.
    """
    t = log.column("timestamp")
    if t[0] > plausibility.MAX_FIRST_TIMESTAMP:
        raise LogError(
            f"{log.name}: entries[0].timestamp = {float(t[0])!r} s: timestamps must count from the start "
            f"of the recording (at most {plausibility.MAX_FIRST_TIMESTAMP:g} s in; processing "
            "samples from t = 0 and would extrapolate back to it). Subtract the first timestamp "
            "(Unix-epoch times?)"
        )
    gaps = np.diff(t)
    if t[0] < -float(np.median(gaps)):
        plausibility.warn(
            f"{log.name}: entries[0].timestamp = {float(t[0])!r} s is before 0: processing samples "
            f"from t = 0, so the first {-float(t[0]):.3g} s of the recording are dropped"
        )
    if log.processed:
        dt = log.dt
        k = np.arange(len(t))
        off = np.abs(t - (t[0] + k * dt)) > 1e-3 * dt
        if off.any():
            i = int(np.argmax(off))
            step = float(gaps[i - 1])
            what = (f"the timestamps step by {step:g} s, not dt = {dt:g} s" if i == 1
                    else f"a gap of {step:g} s before it")
            raise LogError(
                f"{log.name}: entries[{i}].timestamp = {float(t[i])!r} s, but dt = {dt:g} s puts entry "
                f"{i} at {t[0] + i * dt:.6g} s: {what} (a processed log is sampled every dt)"
            )
        return
    period = float(np.median(gaps))
    limit = max(plausibility.MAX_GAP, plausibility.MAX_GAP_PERIODS * period)
    i = int(np.argmax(gaps))
    if gaps[i] > limit:
        raise LogError(
            f"{log.name}: entries[{i + 1}].timestamp = {float(t[i + 1])!r} s comes {gaps[i]:.6g} s after "
            f"entries[{i}] (the recording's median period is {1e3 * period:.3g} ms): a gap that "
            f"long (over {limit:g} s) cannot be resampled; fix the timestamp or trim the log"
        )
    warn_at = max(0.1, plausibility.WARN_GAP_PERIODS * period)
    if gaps[i] > warn_at:
        plausibility.warn(
            f"{log.name}: a gap of {gaps[i]:.3g} s before entries[{i + 1}] "
            f"({gaps[i] / period:.0f} median periods); processing interpolates across it"
        )


def load_log(path: str | os.PathLike, processed: bool | None = None) -> Log:
    """Read and validate a log file (raw or processed)."""
    _check_processed(processed)
    path = jsonfile.as_path(path, LogError, "log file")
    log = validate(read_json(path, LogError, "log file"), str(path), processed)
    log.path = path
    return log


def _check_processed(processed) -> None:
    if processed is not True and processed is not False and processed is not None:
        raise LogError(f"processed = {processed!r}: True (processed logs), False (raw) or None "
                       "(either)")


def save_log(path: str | os.PathLike, log: Log) -> Path:
    """Write a log atomically (compact JSON, as recorded logs are)."""
    if not isinstance(log, Log):
        raise LogError(f"save_log: a Log to write to {path}, not {type(log).__name__}")
    return atomic.write_json(path, log.to_dict(), indent=None)


def json_files(paths: list[str | os.PathLike]) -> list[Path]:
    """Expand directories to their ``*.json`` files (sorted); keep files as given."""
    return jsonfile.json_files(paths, LogError)


def load_logs(paths: list[str | os.PathLike], processed: bool | None = True) -> list[Log]:
    """Load every log named (a directory stands for its ``*.json`` files); namesakes from
    different folders get distinct names (:func:`disambiguate`)."""
    _check_processed(processed)
    return disambiguate([load_log(p, processed) for p in json_files(paths)])


def disambiguate(logs: list[Log]) -> list[Log]:
    """Give logs that share a file name (from different folders) names that tell them apart,
    ``folder/name`` with as many folders as it takes, so that results keyed by log name keep
    one entry per log. The same file named twice is one log: LogError."""
    seen: dict[Path, Path] = {}
    for log in logs:
        if log.path is None:
            continue
        key = log.path.resolve()
        if key in seen:
            raise LogError(f"{log.path}: the same log is named twice ({seen[key]})")
        seen[key] = log.path
    by_name: dict[str, list[Log]] = {}
    for log in logs:
        if log.path is not None:
            by_name.setdefault(log.path.name, []).append(log)
    for group in by_name.values():
        if len(group) < 2:
            continue
        parts = [log.path.resolve().parts for log in group]
        depth = 2
        while depth <= max(len(p) for p in parts) and \
                len({p[-depth:] for p in parts}) < len(group):
            depth += 1
        for log, p in zip(group, parts):
            log.alias = "/".join(p[-depth:])
    return logs


def process(raw: Log, dt: float = DEFAULT_DT) -> Log:
    """Resample a raw log at a fixed ``dt`` (docs/model.md §6).

    Sample times are ``numpy.arange(0, t_last, dt)``; each is interpolated on
    the raw pair (a, b) = (entries[i], entries[i+1]) where i is the smallest
    index with t ≤ t_{i+1} (before the first timestamp the first pair
    extrapolates), every field as ``a + (((b − a)·(t − t_a)) / (t_b − t_a))``;
    then ``torque_enable = value > 0.5`` and ``timestamp = t``.
    """
    if not isinstance(raw, Log):
        raise LogError(f"process: a raw Log (frictionsim.load_log), not {type(raw).__name__}")
    if not is_number(dt) or not (dt > 0 and math.isfinite(dt)):
        raise LogError(f"dt = {dt!r} must be a positive number")
    plausibility.HEADER["dt"].check(dt, "dt", LogError)
    raw_t = raw.column("timestamp")
    check_resampling(raw, raw_t, dt)
    ts = np.arange(0.0, raw_t[-1], dt)
    if len(ts) == 0:
        raise LogError(f"{raw.name}: last timestamp {raw_t[-1]!r} leaves no sample at dt = {dt}")
    # The reference's single forward pointer, advanced while t > t_{i+1}, lands on
    # the number of t_{j≥1} strictly below t: a left-sided search.
    i = np.minimum(np.searchsorted(raw_t[1:], ts, side="left"), len(raw_t) - 2)
    t_a, t_b = raw_t[i], raw_t[i + 1]
    columns = {}
    for key in raw.entries[0]:
        if key == "timestamp":
            continue
        col = raw.column(key)
        a, b = col[i], col[i + 1]
        columns[key] = a + (((b - a) * (ts - t_a)) / (t_b - t_a))
        if not np.isfinite(columns[key]).all():
            k = int(np.argmax(~np.isfinite(columns[key])))
            raise LogError(f"{raw.name}: resampling {key!r} overflows at t = {ts[k]:g} s (values "
                           f"{a[k]!r} and {b[k]!r} are too large to interpolate)")
    keys = list(columns)
    rows = np.column_stack([columns[k] for k in keys]).tolist()
    enable_at = keys.index("torque_enable")
    entries = []
    for row, t in zip(rows, ts.tolist()):
        entry = dict(zip(keys, row))
        entry["torque_enable"] = row[enable_at] > 0.5
        entry["timestamp"] = t
        entries.append(entry)
    header = {**raw.header, "dt": dt}
    return Log(header, entries, raw.path)


def check_resampling(raw: Log, raw_t: np.ndarray, dt: float) -> None:
    """Refuse, before allocating, a resampling the raw log does not justify.

    At most :data:`~frictionsim.plausibility.MAX_UPSAMPLING` samples per raw entry
    (a ``dt`` far below the recording's period invents data) and
    :data:`~frictionsim.plausibility.MAX_PROCESSED_ENTRIES` entries in all.
    """
    n_out = math.ceil(raw_t[-1] / dt) if raw_t[-1] > 0 else 0
    n_raw = len(raw_t)
    most = min(plausibility.MAX_UPSAMPLING * n_raw, plausibility.MAX_PROCESSED_ENTRIES)
    if n_out > most:
        period = float(np.median(np.diff(raw_t)))
        raise LogError(
            f"{raw.name}: dt = {dt:g} s would make {n_out:.4g} samples over {raw_t[-1]:.6g} s from "
            f"{n_raw} raw entries (median period {1e3 * period:.3g} ms); refused: at most "
            f"{plausibility.MAX_UPSAMPLING} samples per raw entry and "
            f"{plausibility.MAX_PROCESSED_ENTRIES:,} in all"
        )
