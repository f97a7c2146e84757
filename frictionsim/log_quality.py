"""Data quality of bench logs: wrapped load readings, encoder glitches, trimming, supply.

- **load**: Dynamixel's present load / PWM is a 16-bit *signed* register that raw logs
  store as read, unsigned (65535 = −1); interpolating across the wrap invents values
  near ±32768. :func:`decode_load` maps 32768…65535 to −32768…−1 (docs/model.md §9).
- **glitches**: an encoder glitch is a sample further than :data:`GLITCH_JUMP` rad from
  the last good one, reached from the sample before it within one sample period of the
  log (its median spacing, at least :data:`GLITCH_WINDOW` and at most
  :data:`GLITCH_WINDOW_LONGEST` s, times 1.5 for jitter): 0.5 rad in 10 ms is 50 rad/s,
  which no servo on a bench makes. The glitch holds that sample and those after it that
  stay further than :data:`GLITCH_JUMP` plus what :data:`GLITCH_SPEED` allows over the
  time elapsed, at most :data:`GLITCH_LONGEST` s; a jump that never comes back is a
  glitch to the end of the log. :func:`find_glitches` reports them;
  :func:`repair_glitches` interpolates the position across them, :func:`drop_glitches`
  removes their entries (raw logs).
- **trimming**: :func:`trim` keeps a time window of a raw log, timestamps counted from
  the window's start.
- **supply**: :func:`supply_mismatch` compares a header's ``vin`` with the logged
  ``input_volts`` (a header saying 15 V over a log reading 12 V misleads the voltage law).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from frictionsim.logs import Log, LogError

GLITCH_JUMP = 0.5
GLITCH_WINDOW = 0.005
#: Longest sample period (s) over which a jump still counts as a glitch (a 0.5 rad jump in
#: 30 ms is 17 rad/s, beyond any bench servo's no-load speed).
GLITCH_WINDOW_LONGEST = 0.03
GLITCH_SPEED = 20.0
GLITCH_LONGEST = 0.5
#: Relative difference between a header's vin and the median logged supply that is warned about.
SUPPLY_TOLERANCE = 0.10


@dataclass(frozen=True)
class Glitch:
    """Entries ``first`` … ``last`` (inclusive) of a log are an encoder glitch starting at time
    ``t`` (s); ``jump`` is the largest departure from the last good position (rad)."""

    first: int
    last: int
    t: float
    jump: float

    def describe(self, name: str) -> str:
        n = self.last - self.first + 1
        return (f"{name}: encoder glitch at t = {self.t:.3f} s, entries[{self.first}"
                + (f"…{self.last}" if n > 1 else "") + f"] ({n} sample{'s' * (n > 1)}, "
                f"{self.jump:+.3f} rad from the last good position)")


def decode_load(log: Log) -> tuple[Log, int]:
    """The log with ``load`` read as signed 16-bit, and how many entries were wrapped."""
    if not log.entries or "load" not in log.entries[0]:
        return log, 0
    wrapped = 0
    entries = []
    for e in log.entries:
        value = e["load"]
        if isinstance(value, (int, float)) and 32768 <= value <= 65535:
            e = {**e, "load": value - 65536}
            wrapped += 1
        entries.append(e)
    return Log(log.header, entries, log.path), wrapped


def find_glitches(log: Log) -> list[Glitch]:
    """The encoder glitches of a log (raw or processed), in time order (see module docstring)."""
    q = log.column("position")
    t = log.column("timestamp")
    n = len(q)
    if n < 2:
        return []
    period = float(np.median(np.diff(t)))
    window = 1.5 * min(max(period, GLITCH_WINDOW), GLITCH_WINDOW_LONGEST)

    def away(k: int, good: int) -> bool:
        return abs(q[k] - q[good]) > GLITCH_JUMP + GLITCH_SPEED * (t[k] - t[good])

    glitches = []
    good = 0
    k = 1
    while k < n:
        if t[k] - t[k - 1] <= window and abs(q[k] - q[good]) > GLITCH_JUMP:
            first = k
            jump = q[k] - q[good]
            k += 1  # the sample that jumped is the glitch's first, whatever follows
            while k < n and t[k] - t[first] <= GLITCH_LONGEST and away(k, good):
                if abs(q[k] - q[good]) > abs(jump):
                    jump = q[k] - q[good]
                k += 1
            if k < n and t[k] - t[first] > GLITCH_LONGEST:
                k = n  # never came back: the rest of the log cannot be trusted
            glitches.append(Glitch(first, k - 1, float(t[first]), float(jump)))
            good = k if k < n else good
            k += 1
            continue
        good = k
        k += 1
    return glitches


def repair_glitches(log: Log, glitches: list[Glitch]) -> Log:
    """The log with each glitch's positions interpolated linearly between the good samples
    around it (held at the last good one when the glitch runs to the end)."""
    q = log.column("position")
    t = log.column("timestamp")
    for g in glitches:
        before = g.first - 1
        after = g.last + 1
        for k in range(g.first, g.last + 1):
            if after < len(q):
                w = (t[k] - t[before]) / (t[after] - t[before])
                q[k] = q[before] + w * (q[after] - q[before])
            else:
                q[k] = q[before]
    entries = [{**e, "position": float(q[k])} if any(g.first <= k <= g.last for g in glitches)
               else e for k, e in enumerate(log.entries)]
    return Log(log.header, entries, log.path)


def drop_glitches(log: Log, glitches: list[Glitch]) -> Log:
    """The log without the entries of its glitches (a raw log: processing interpolates)."""
    if log.processed:
        raise LogError(f"{log.name}: dropping entries of a processed log breaks its fixed dt; "
                       "repair instead, or drop from the raw log")
    bad = {k for g in glitches for k in range(g.first, g.last + 1)}
    entries = [e for k, e in enumerate(log.entries) if k not in bad]
    if len(entries) < 2:
        raise LogError(f"{log.name}: dropping its glitches leaves {len(entries)} entries")
    return Log(log.header, entries, log.path)


def trim(log: Log, start: float, end: float | None = None) -> Log:
    """The entries of a raw log with ``start`` ≤ timestamp ≤ ``end`` (s), timestamps shifted so
    that ``start`` is 0."""
    if log.processed:
        raise LogError(f"{log.name}: trim the raw log, then process it")
    if start < 0 or (end is not None and end <= start):
        raise LogError(f"--window {start:g} {end if end is not None else ''}: expected "
                       "0 ≤ START < END (s)")
    kept = [e for e in log.entries
            if e["timestamp"] >= start and (end is None or e["timestamp"] <= end)]
    if len(kept) < 2:
        raise LogError(f"{log.name}: the window [{start:g}, {end if end is not None else 'end'}] "
                       f"s keeps {len(kept)} entries (the log runs "
                       f"{log.entries[0]['timestamp']:g}–{log.entries[-1]['timestamp']:g} s)")
    return Log(log.header, [{**e, "timestamp": e["timestamp"] - start} for e in kept], log.path)


#: Set (to anything but empty or 0) once the logs' supply has been checked: the summary of
#: header vins the logged supply contradicts is then not printed.
ACCEPT_VIN_ENV = "FRICTIONSIM_ACCEPT_VIN"


def supply_summary(mismatches: list[str]) -> str | None:
    """One line for every :func:`supply_mismatch` of a command's logs (a campaign can have
    hundreds), or None when there is none or ``$FRICTIONSIM_ACCEPT_VIN`` acknowledges them."""
    import os

    if not mismatches or os.environ.get(ACCEPT_VIN_ENV, "") not in ("", "0"):
        return None
    if len(mismatches) == 1:
        return mismatches[0]
    return (f"{len(mismatches)} logs have a header vin their logged supply contradicts, e.g. "
            f"{mismatches[0]} (once checked, set {ACCEPT_VIN_ENV}=1 to silence this)")


def supply_mismatch(log: Log) -> str | None:
    """A warning when the header's ``vin`` and the median logged ``input_volts`` differ by more
    than :data:`SUPPLY_TOLERANCE`, else None."""
    if "vin" not in log.header or not log.entries or "input_volts" not in log.entries[0]:
        return None
    logged = float(np.median(log.column("input_volts")))
    vin = float(log.header["vin"])
    if logged <= 0 or abs(vin - logged) <= SUPPLY_TOLERANCE * logged:
        return None
    return (f"{log.name}: header vin = {vin:g} V but the logged input_volts median is "
            f"{logged:.2f} V ({100 * (vin - logged) / logged:+.0f} %): the voltage law uses the "
            "header's vin; fix the header, or fit with --with supply")
