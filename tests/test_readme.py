"""The README is a front door that tells the truth: two set-up commands, three short examples
that run and print what it says, figures backed by docs/results.md, where every study names
the command that measures it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
DATA = ROOT.parent / "shared" / "data"


def test_readme_quick_start_has_exactly_two_commands():
    text = README.read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"```bash\n(.*?)```", section, re.S)[0]
    commands = [line for line in block.splitlines() if line.strip()]
    assert len(commands) == 2
    assert "frictionsim demo" in commands[0] and "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1] in ci


def test_readme_is_a_front_door():
    """What it is, the quick start, one example per use, the commands, the links; short."""
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    headings = re.findall(r"(?m)^## (.*)$", text)
    assert headings == ["Quick start", "Identify a servo on a bench",
                        "Identify a robot from its own recordings",
                        "Put the servo in your simulator", "Commands", "Read more"]
    for page in ("guide.md", "model.md", "python.md", "robots.md", "results.md"):
        assert f"(docs/{page}" in text and (DOCS / page).is_file(), page


def links_resolve(path: Path) -> list[str]:
    """The relative links of a markdown file whose target file does not exist."""
    broken = []
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", path.read_text()):
        if not (path.parent / target).exists():
            broken.append(target)
    return broken


@pytest.mark.parametrize("page", ["README.md", "docs/guide.md", "docs/model.md",
                                  "docs/python.md", "docs/robots.md", "docs/results.md"])
def test_the_links_of_the_docs_resolve(page):
    assert links_resolve(ROOT / page) == []


def numbers(text: str) -> set[str]:
    """Every decimal number and range a text states (``31.6``, ``112–152``)."""
    return set(re.findall(r"\d+(?:\.\d+)?(?:–\d+(?:\.\d+)?)?", text))


def test_every_figure_of_the_readme_is_one_of_the_results():
    """The README quotes (what it measured: its opening, before the quick start);
    docs/results.md holds each measurement and its command."""
    opening = README.read_text().split("## Quick start")[0]
    quoted = {n for n in numbers(opening) if "." in n or "–" in n}
    assert len(quoted) >= 5
    assert quoted <= numbers((DOCS / "results.md").read_text())


def test_every_study_of_the_results_names_its_command():
    text = (DOCS / "results.md").read_text()
    for section in re.split(r"(?m)^## ", text)[1:]:
        title = section.splitlines()[0]
        assert "frictionsim " in section or "tests/" in section, title


def example(path: Path, marker: str) -> str:
    """The Python block of ``path`` that contains ``marker``."""
    blocks = [b for b in re.findall(r"```python\n(.*?)```", path.read_text(), re.S)
              if marker in b]
    assert len(blocks) == 1, marker
    return blocks[0]


def test_the_njit_example_of_the_python_page_runs(capsys):
    code = example(DOCS / "python.md", "def hold(")
    namespace: dict = {}
    exec(compile(code, str(DOCS / "python.md"), "exec"), namespace)
    q, v = namespace["q"], namespace["v"]
    assert 0.3 < q < 0.5 and abs(v) < 1e-3  # held near the 0.5 rad target against gravity
    assert "after 2 s" in capsys.readouterr().out


def test_the_readme_simulator_example_prints_what_the_readme_says(monkeypatch, capsys):
    """The fixed step and MuJoCo both within a mrad of the exact run, to the digits the
    README states."""
    import warnings

    pytest.importorskip("mujoco")
    if not (DATA / "arm2r").is_dir():
        pytest.skip("shared data not found")
    code = example(README, "ServoModel(")
    monkeypatch.chdir(ROOT)  # the example's paths are relative to the project
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the published files' scheme warning
        namespace: dict = {}
        exec(compile(code, str(README), "exec"), namespace)
    np = namespace["np"]
    exact = namespace["exact"].q
    assert np.abs(namespace["fast"].q - exact).mean() < 1e-3
    assert np.abs(namespace["in_mujoco"] - exact).mean() < 1e-3
    assert np.ptp(exact[:, 0]) > 0.3  # it followed the goals
    printed = capsys.readouterr().out.splitlines()
    said = re.search(r"prints (`.*?`) and (`.*?`)", README.read_text(), re.S)
    assert [s.strip("`").replace("\n", " ") for s in said.groups()] == printed
