"""Reflected inertia (seed 002, Garcia et al.): a declaration's rotor inertia and gear ratio
make J_rotor·N² the armature's default, shown beside the fitted value in the report."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from frictionsim import schema
from frictionsim.actuator_files import ActuatorFileError, load_actuator_file
from frictionsim.experiments.identification.report import _reflected_note
from frictionsim.params import ParameterSet

DECLARATION = '''\
name = "geared_servo"
law = "voltage"
vin = 12.0
error_gain = 0.16489
max_pwm = 0.97
rotor_inertia = 1.5e-7
gear_ratio = 200.0
[parameters]
kt = { default = 1.0, min = 0.05, max = 5.0 }
R = { default = 5.0, min = 0.1, max = 20.0 }
armature = { min = 1e-4, max = 0.1 }
'''


@pytest.fixture
def declare(tmp_path):
    before = set(schema.ACTUATORS)

    def write(text: str):
        path = tmp_path / "servo.toml"
        path.write_text(text)
        return load_actuator_file(path)

    yield write
    for name in set(schema.ACTUATORS) - before:
        schema.ACTUATORS.unregister(name)


def test_the_armature_default_is_the_reflected_rotor_inertia(declare):
    act = declare(DECLARATION)
    assert act.reflected_inertia == pytest.approx(1.5e-7 * 200.0**2)  # 6e-3 kg·m²
    schema.ACTUATORS.register(act)
    armature = schema.parameters("m1", "geared_servo")["armature"]
    assert armature.default == act.reflected_inertia
    assert (armature.lower, armature.upper) == (1e-4, 0.1)
    assert ParameterSet.defaults("m1", "geared_servo").values["armature"] == act.reflected_inertia


def test_built_in_actuators_without_a_rotor_declare_no_reflected_inertia():
    assert all(schema.ACTUATORS[name].reflected_inertia is None for name in schema.ACTUATORS)


@pytest.mark.parametrize("edit, key", [
    (("gear_ratio = 200.0\n", ""), "gear_ratio"),
    (("rotor_inertia = 1.5e-7\n", ""), "rotor_inertia"),
    (("gear_ratio = 200.0", "gear_ratio = -3.0"), "gear_ratio"),
    (("armature = { min = 1e-4, max = 0.1 }", "armature = { default = 0.01, min = 1e-4, max = 0.1 }"),
     "parameters.armature.default"),
    (("armature = { min = 1e-4, max = 0.1 }", "armature = { min = 1e-2, max = 0.1 }"),
     "rotor_inertia"),
])
def test_a_half_or_conflicting_declaration_is_an_error(declare, edit, key):
    with pytest.raises(ActuatorFileError, match=f": {key}:"):
        declare(DECLARATION.replace(*edit))


def test_without_a_rotor_the_armature_needs_its_own_default(declare):
    text = DECLARATION.replace("rotor_inertia = 1.5e-7\n", "").replace("gear_ratio = 200.0\n", "")
    with pytest.raises(ActuatorFileError, match="parameters.armature.default"):
        declare(text)


def test_the_report_shows_the_reflected_inertia_beside_the_fitted_armature(declare):
    schema.ACTUATORS.register(declare(DECLARATION))
    params = ParameterSet.defaults("m1", "geared_servo").with_values(armature=0.009)
    fit = SimpleNamespace(result=SimpleNamespace(params=params))
    note = _reflected_note("armature", fit)
    assert "J_rotor·N²" in note and "0.006 kg·m²" in note and "fitted/reflected 1.50" in note
    assert _reflected_note("kt", fit) == ""
    plain = SimpleNamespace(result=SimpleNamespace(params=ParameterSet.defaults("m1", "xl330")))
    assert _reflected_note("armature", plain) == ""
