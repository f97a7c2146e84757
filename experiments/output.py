"""Writing results: JSON of the numbers, figures to files, tables to the terminal."""

from __future__ import annotations

import math
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # figures go to files, never a blocking window

from frictionsim import atomic  # noqa: E402


def json_safe(data):
    """``data`` with non-finite floats (NaN: "not reached", inf) as null, which JSON allows."""
    if isinstance(data, float) and not math.isfinite(data):
        return None
    if isinstance(data, dict):
        return {k: json_safe(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [json_safe(v) for v in data]
    return data


def write_json(path: str | os.PathLike, data) -> Path:
    """Write a result JSON atomically (non-finite numbers as null) and say where it went."""
    path = atomic.write_json(path, json_safe(data))
    print(f"wrote {path}")
    return path


def save_figure(fig, path: str | os.PathLike) -> Path:
    """Save a matplotlib figure (format from the suffix) atomically and close it."""
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    fig.savefig(tmp, dpi=120, bbox_inches="tight")
    os.replace(tmp, path)
    plt.close(fig)
    print(f"wrote {path}")
    return path


def table(headers: list[str], rows: list[list], align: str | None = None) -> str:
    """A plain-text table; ``align`` holds one of '<' '>' per column (default: first left)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    align = align or "<" + ">" * (len(headers) - 1)
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(f"{c:{a}{w}}" for c, a, w in zip(row, align, widths)))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
