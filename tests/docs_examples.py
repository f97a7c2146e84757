"""Run one Python example of the documentation as a user would paste it, and read back what
the page says it prints."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def run_example(page: str, marker: str, needs: str, monkeypatch, capsys,
                quiet: bool = False) -> tuple[dict, str, str]:
    """Execute the one ``python`` block of ``page`` containing ``marker``.

    ``needs`` is the shared-data folder the example reads (skipped where absent);
    ``quiet`` silences warnings the published files raise on purpose. Returns the
    example's namespace, what it printed and what the page says it prints (the first
    ``prints `…` `` after the marker)."""
    if not (DATA / needs).is_dir():
        pytest.skip("shared data not found")
    text = (ROOT / page).read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if marker in b]
    assert len(blocks) == 1, f"{page}: {len(blocks)} examples contain {marker!r}"
    monkeypatch.setenv("FRICTIONSIM_DATA", str(DATA))
    namespace: dict = {}
    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore")
        exec(compile(blocks[0], page, "exec"), namespace)
    said = re.search(r"prints `(.*?)`", text[text.index(marker):]).group(1)
    return namespace, capsys.readouterr().out.strip(), said
