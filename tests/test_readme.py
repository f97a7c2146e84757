"""The README's code example runs as documented."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_quick_start_has_exactly_two_commands():
    text = README.read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"```bash\n(.*?)```", section, re.S)[0]
    commands = [line for line in block.splitlines() if line.strip()]
    assert len(commands) == 2
    assert "frictionsim demo" in commands[0] and "pytest" in commands[1]
    ci = (README.parent / ".ci" / "run").read_text()
    assert commands[1] in ci


def example(marker: str) -> str:
    """The README's Python block that contains ``marker``."""
    blocks = [b for b in re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
              if marker in b]
    assert len(blocks) == 1, marker
    return blocks[0]


def test_readme_njit_example_runs(capsys):
    code = example("def hold(")
    namespace: dict = {}
    exec(compile(code, str(README), "exec"), namespace)
    q, v = namespace["q"], namespace["v"]
    assert 0.3 < q < 0.5 and abs(v) < 1e-3  # held near the 0.5 rad target against gravity
    assert "after 2 s" in capsys.readouterr().out


def test_readme_robot_example_runs(monkeypatch, capsys):
    """The robots example: the fixed step and MuJoCo both within a mrad of the exact run."""
    import warnings

    import pytest

    pytest.importorskip("mujoco")
    if not (README.parent.parent / "shared" / "data" / "arm2r").is_dir():
        pytest.skip("shared data not found")
    code = example("ServoModel(")
    monkeypatch.chdir(README.parent)  # the example's paths are relative to the project
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the published files' scheme warning
        namespace: dict = {}
        exec(compile(code, str(README), "exec"), namespace)
    np = namespace["np"]
    exact = namespace["exact"].q
    assert np.abs(namespace["fast"].q - exact).mean() < 1e-3
    assert np.abs(namespace["in_mujoco"] - exact).mean() < 1e-3
    assert np.ptp(exact[:, 0]) > 0.3  # it followed the goals
    assert "MuJoCo vs exact" in capsys.readouterr().out
