"""``frictionsim run mjlab-actuators`` refuses what it cannot time, by name, before it builds
anything (its timings themselves need mjlab and a checkout of the reference project, and are
a benchmark: docs/results.md)."""

from __future__ import annotations

import importlib.util

import pytest

from frictionsim.experiments.runner.cli import main


def fake_bam(root):
    """A directory laid out as a checkout of Rhoban/bam (the two files the command reads)."""
    (root / "bam" / "params" / "feetech_sts3215_7_4V").mkdir(parents=True)
    (root / "bam" / "mjlab.py").write_text("raise ImportError('not the real BAM')\n")
    (root / "bam" / "params" / "feetech_sts3215_7_4V" / "m1.json").write_text("{}")
    return root


@pytest.mark.parametrize("extra,message", [
    ([], "no bam/mjlab.py there"),
    (["--threads", "two"], "--threads: a whole number"),
    (["--rounds", "0"], "--rounds"),
    (["--height", "-1"], "--height must be in"),
    (["--mjcf", "missing.xml"], "--mjcf missing.xml: no such file"),
])
def test_bad_arguments_are_named(tmp_path, capsys, extra, message):
    bam = tmp_path / "nothing" if not extra else fake_bam(tmp_path / "bam-checkout")
    assert main(["run", "mjlab-actuators", "--bam", str(bam), *extra, "--no-progress"]) == 1
    assert message in capsys.readouterr().err


@pytest.mark.skipif(importlib.util.find_spec("mjlab") is not None,
                    reason="mjlab is installed here: the refusal is for an environment without it")
def test_without_mjlab_it_names_the_extra(tmp_path, capsys):
    bam = fake_bam(tmp_path / "bam-checkout")
    assert main(["run", "mjlab-actuators", "--bam", str(bam), "--no-progress"]) == 1
    assert "pip install 'frictionsim[mjlab]'" in capsys.readouterr().err
