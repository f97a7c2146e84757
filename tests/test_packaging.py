"""One distribution, one namespace: the built wheel installs ``frictionsim`` only, and works from
a user project that has packages of its own named ``solvers``, ``hw`` and ``experiments``.

The wheel goes into a fresh virtual environment that borrows the test environment's
dependencies (numpy, numba, …) through a path file, so nothing is downloaded; the editable
install of the test environment is not visible there (a path file does not run the path
files of the folder it adds).
"""

from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
FOLDERS = {"frictionsim": "frictionsim", "solvers": "frictionsim.solvers",
           "hw": "frictionsim.hw", "experiments": "frictionsim.experiments"}


def test_setup_cfg_lists_every_package_folder():
    """A sub-package missing from setup.cfg would be left out of the wheel silently."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    listed = set(cfg["options"]["packages"].split())
    found = set()
    for folder, package in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((package, *parts)))
    assert listed == found
    mapping = dict(line.split(" = ") for line in
                   cfg["options"]["package_dir"].strip().splitlines())
    assert mapping == {package: folder for folder, package in FOLDERS.items()}


def test_no_import_names_a_bare_solvers_hw_or_experiments():
    bare = re.compile(r"^\s*(from|import)\s+(solvers|hw|experiments)\b", re.MULTILINE)
    offenders = [str(p.relative_to(ROOT)) for folder in (*FOLDERS, "tests")
                 for p in (ROOT / folder).rglob("*.py") if bare.search(p.read_text())]
    assert offenders == []


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory):
    """(python, frictionsim command, wheel) of a fresh venv with the built wheel installed."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"  # built from a copy: setuptools writes build/ beside the sources
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc", "*.egg-info")
    for name in (*FOLDERS, "pyproject.toml", "setup.cfg", "README.md"):
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, source / name)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp / "dist"), str(source)], capture_output=True, text=True)
    if build.returncode != 0:
        pytest.fail(f"building the wheel failed:\n{build.stdout}\n{build.stderr}")
    wheel = next((tmp / "dist").glob("frictionsim-*.whl"))
    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], capture_output=True, text=True,
                               check=True).stdout.strip())
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q",
                    "--target", str(site), str(wheel)], check=True, capture_output=True)
    scripts = env_dir / "bin" / "frictionsim"
    scripts.write_text(f"#!{python}\nimport sys\nfrom frictionsim.experiments.runner.cli import "
                       "main\nsys.exit(main())\n")
    scripts.chmod(0o755)
    return python, scripts, wheel, site


@pytest.fixture()
def user_project(tmp_path):
    """A user's project with packages named like frictionsim's rooms, which break on import."""
    for name in ("solvers", "hw", "experiments"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(
            f"raise ImportError('the user project\\'s own {name} was imported')\n")
    return tmp_path


def run(args, cwd, **env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    environment.update(env)
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          env=environment, timeout=600)


def test_the_wheel_installs_one_top_level_package(wheel_env):
    _, _, wheel, _ = wheel_env
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"frictionsim"}
    names = zipfile.ZipFile(wheel).namelist()
    assert "frictionsim/solvers/fixed_step.py" in names
    # every module and data file of the four folders, at its place in the one namespace
    sources = {f"{package.replace('.', '/')}/{path.relative_to(ROOT / folder).as_posix()}"
               for folder, package in FOLDERS.items() for path in (ROOT / folder).rglob("*")
               if (path.suffix in (".py", ".toml", ".xml") or path.name in (
                   "SOURCES.md", "LICENSE-Apache-2.0")) and "__pycache__" not in path.parts}
    assert "frictionsim/actuators/xl330.toml" in sources
    # the built-in robots' MJCFs, with where they come from and their licence
    assert {"frictionsim/robots/so100/so_arm100.xml", "frictionsim/robots/SOURCES.md",
            "frictionsim/robots/LICENSE-Apache-2.0"} <= sources
    assert sources - set(names) == set()


def test_the_wheel_works_from_a_project_with_its_own_solvers_hw_experiments(wheel_env,
                                                                           user_project):
    python, command, _, site = wheel_env
    code = ("import frictionsim, frictionsim.solvers.fixed_step, frictionsim.hw.servo, "
            "frictionsim.experiments.runner.cli\n"
            "from frictionsim.solvers import METHODS\n"
            "print(frictionsim.__file__); print(frictionsim.solvers.__file__); print(METHODS)")
    out = run([python, "-c", code], user_project)
    assert out.returncode == 0, out.stderr
    assert str(site) in out.stdout and "DOP853" in out.stdout
    help_ = run([command, "--help"], user_project)
    assert help_.returncode == 0 and "identify" in help_.stdout, help_.stderr


def test_the_installed_cli_finds_data_from_the_environment_only(wheel_env, user_project):
    """Data and models come from arguments or FRICTIONSIM_DATA, never the install location."""
    if not DATA.is_dir():
        pytest.skip("shared data not found")
    python, command, _, _ = wheel_env
    log = DATA / "xl330" / "processed" / "2026-01-15_10h28m42.json"
    params = DATA / "xl330" / "params" / "m6.json"
    out = run([command, "simulate", "--params", params, log], user_project)
    assert out.returncode == 0, out.stderr
    assert "2026-01-15_10h28m42" in out.stdout
    missing = run([command, "run", "arm2r", "--seconds", "0.1", "--arm", "mx", "--paths",
                   "circle", "--gains", "low", "--engines", "fixed_step"], user_project)
    assert missing.returncode != 0 and "FRICTIONSIM_DATA" in missing.stderr


def python_blocks(page: str) -> list[str]:
    """The Python examples of a page of the documentation (README.md, docs/…)."""
    text = (ROOT / page).read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def test_the_documented_python_examples_run_as_written(user_project):
    """From a user's project, with the test environment's install: the wheel holds every module
    and data file of that install (above), and running the examples from a fresh wheel would
    compile every kernel they use once more (a minute and a half on 2 cores)."""
    if not DATA.is_dir():
        pytest.skip("shared data not found")
    python = sys.executable
    blocks = [(page, b) for page in ("README.md", "docs/python.md") for b in python_blocks(page)]
    assert len(blocks) >= 3
    for i, (page, block) in enumerate(blocks):
        script = user_project / f"example_{i}.py"
        script.write_text(block)
        out = run([python, script], user_project, FRICTIONSIM_DATA=str(DATA),
                  MPLBACKEND="Agg")
        assert out.returncode == 0, f"{page} example {i} failed:\n{block}\n{out.stderr}"
