"""The shape of the house: no import cycle, imports in the allowed direction, a light CLI."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The repository's folders and the import packages they install as (one namespace).
PACKAGES = {"frictionsim": "frictionsim", "solvers": "frictionsim.solvers",
            "hw": "frictionsim.hw", "experiments": "frictionsim.experiments"}
#: DESIGN.md: which room may import which (hw/virtual_servo may also use solvers).
ALLOWED = {
    "frictionsim": {"frictionsim"},
    "solvers": {"solvers", "frictionsim"},
    "hw": {"hw", "frictionsim"},
    "experiments": {"experiments", "solvers", "hw", "frictionsim"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    parts = (*PACKAGES[parts[0]].split("."), *parts[1:])
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room(name: str) -> str:
    """The room (repository folder) of a module: solvers, hw, experiments or frictionsim."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ALLOWED and parts[1] != "frictionsim" \
        else "frictionsim"


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")}


def imports_of(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """Every project module ``name`` imports, at module level or inside functions."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            # ``from pkg import sub`` imports the submodule; ``from pkg import name`` the package
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                       for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imports_of(path, name, modules) for name, path in modules.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_among_the_projects_modules():
    assert cycles(graph()) == []


def test_packages_import_in_the_allowed_direction():
    bad = []
    for name, targets in graph().items():
        top = room(name)
        for target in targets:
            other = room(target)
            if other in ALLOWED[top]:
                continue
            if name.startswith("frictionsim.hw.virtual_servo") and other == "solvers":
                continue
            bad.append(f"{name} → {target}")
    assert bad == []


def test_experiment_rooms_import_one_way():
    """runner → commands → robots → identification | analysis → synthetic → common (a
    robot's identification reuses the bench's); nothing imports commands but the runner (by
    name), and common imports no other room."""
    order = {"common": 0, "synthetic": 1, "analysis": 2, "identification": 2, "robots": 3,
             "commands": 4, "runner": 5}
    bad = []
    for name, targets in graph().items():
        parts = name.split(".")[1:]
        if room(name) != "experiments" or len(parts) < 3:
            continue
        parts = parts[1:]
        for target in targets:
            t = target.split(".")[2:]
            if room(target) != "experiments" or len(t) < 1 or t[0] == parts[0]:
                continue
            if order[t[0]] >= order[parts[0]] and not (parts[0] == "commands" and t[0] == "runner"):
                bad.append(f"{name} → {target}")
    assert bad == []


@pytest.mark.parametrize("argv", [["--help"], ["run"], ["identify", "--help"]])
def test_the_cli_imports_nothing_heavy_to_answer(argv):
    heavy = ("numba", "scipy", "matplotlib", "nevergrad", "tqdm", "serial", "distributed")
    if argv == ["identify", "--help"]:
        heavy = ("numba", "scipy", "matplotlib", "nevergrad", "distributed")
    code = ("import sys\nfrom frictionsim.experiments.runner.cli import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            f"print('HEAVY:' + ' '.join(m for m in {heavy!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         check=True).stdout
    loaded = out[out.rindex("HEAVY:") + len("HEAVY:"):].strip()
    assert loaded == "", f"{argv} imported {loaded}"
