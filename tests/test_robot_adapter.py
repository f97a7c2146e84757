"""The MuJoCo adapter and the standalone simulator on real robots: a floating base, more dofs
than servos, the caller's spec left alone, the integrator warning, a joint's own armature
treated alike by both. Needs the mujoco extra."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from frictionsim.params import ParameterSet  # noqa: E402
from frictionsim.solvers.mujoco_adapter import IntegratorWarning, ServoModel  # noqa: E402
from frictionsim.solvers.robot import JointServo, Robot  # noqa: E402

#: A floating torso with a two-link arm, no contacts, no gravity: the arm's motion turns the
#: torso (the free joint's 6 dofs are coupled to the servos' through M(q)).
FLOATING = """
<mujoco>
  <option timestep="0.002" gravity="0 0 0"{integrator}/>
  <worldbody>
    <body name="torso" pos="0 0 1">
      <freejoint name="root"/>
      <geom type="box" size="0.1 0.08 0.05" mass="1.5"/>
      <body name="upper" pos="0.1 0 0">
        <joint name="shoulder" type="hinge" axis="0 1 0"{armature}/>
        <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02" mass="0.4"/>
        <body name="lower" pos="0.2 0 0">
          <joint name="elbow" type="hinge" axis="0 0 1"/>
          <geom type="capsule" fromto="0 0 0 0.15 0 0" size="0.02" mass="0.25"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def floating(integrator: str = "", armature: float = 0.0) -> str:
    return FLOATING.format(integrator=f' integrator="{integrator}"' if integrator else "",
                           armature=f' armature="{armature}"' if armature else "")


def servos(joints=("shoulder", "elbow")) -> list[JointServo]:
    params = ParameterSet.defaults("m1", "sts3215_12v").with_scheme("semi_implicit")
    return [JointServo(j, params, kp=16.0) for j in joints]


def goals(steps: int, n: int = 2) -> np.ndarray:
    t = np.arange(steps) * 0.002
    return np.column_stack([0.6 * np.sin(2.0 * t + k) for k in range(n)])


def adapter_run(mjcf, servo_list, goal_rows, q0=None) -> np.ndarray:
    """MuJoCo's step with the servo adapter: qpos before each control period."""
    sm = ServoModel(mjcf, servo_list, control_period=0.002)
    d = sm.make_data()
    if q0 is not None:
        d.qpos[:] = q0
    out = np.empty((len(goal_rows), sm.model.nq))
    for k, g in enumerate(goal_rows):
        out[k] = d.qpos
        sm.set_goals(d, g)
        mujoco.mj_step(sm.model, d)
    sm.check(d)
    return out


def test_a_floating_base_is_simulated_alike_by_the_standalone_simulator_and_the_adapter():
    rows = goals(1500)
    robot = Robot(floating(), servos(), control_period=0.002)
    assert (robot.nq, robot.nv) == (9, 8)
    run = robot.fixed_step(rows)
    mj = adapter_run(floating(), servos(), rows)
    assert run.q.shape == mj.shape == (1500, 9)
    # the servos follow their goals (a P-only servo lags a little) and the torso turns in
    # reaction
    assert np.ptp(run.q[:, robot.qadr], axis=0).min() > 0.8
    assert np.abs(run.q[-200:, robot.qadr] - rows[-201:-1]).mean() < 0.15
    quat = run.q[:, 3:7]
    assert np.allclose(np.linalg.norm(quat, axis=1), 1.0, atol=1e-9)
    assert np.abs(quat[-1] - [1, 0, 0, 0]).max() > 1e-3
    np.testing.assert_allclose(run.q, mj, rtol=0, atol=1e-6)


def test_the_event_driven_engine_refuses_a_floating_base_by_name():
    robot = Robot(floating(), servos(), control_period=0.002)
    with pytest.raises(ValueError, match="free or ball joints"):
        robot.event_driven(goals(10))


def test_more_model_dofs_than_servos_and_beyond_twelve():
    chain = "".join(f'<body pos="0.05 0 0"><joint name="j{i}" type="hinge" axis="0 {i % 2} '
                    f'{1 - i % 2}"/><geom type="capsule" fromto="0 0 0 0.05 0 0" size="0.01" '
                    f'mass="0.05"/>' for i in range(14)) + "</body>" * 14
    xml = (f'<mujoco><option timestep="0.002"/><worldbody><body pos="0 0 1"><freejoint/>'
           f'<geom type="box" size=".05 .05 .05" mass="1"/>{chain}</body></worldbody></mujoco>')
    two = servos(("j0", "j7"))
    robot = Robot(xml, two, control_period=0.002)
    assert robot.nv == 20
    rows = goals(400)
    np.testing.assert_allclose(robot.fixed_step(rows).q, adapter_run(xml, two, rows),
                               rtol=0, atol=1e-6)


def test_the_callers_spec_is_left_untouched():
    spec = mujoco.MjSpec.from_string(floating(armature=0.01))
    spec.add_actuator(name="shoulder_pos", target="shoulder", trntype=mujoco.mjtTrn.mjTRN_JOINT,
                      gainprm=[5.0] + [0.0] * 9)
    before = spec.to_xml()
    nuser = spec.nuserdata
    sm = ServoModel(spec, servos(), control_period=0.002)
    assert spec.to_xml() == before
    assert spec.nuserdata == nuser
    assert sm.model.nuserdata > nuser
    # the spec still compiles into the plain model, and a second adapter can be built from it
    plain = spec.compile()
    assert plain.actuator_gainprm[0, 0] == 5.0
    ServoModel(spec, servos(), control_period=0.002)


def test_another_integrator_is_replaced_with_a_warning():
    with pytest.warns(IntegratorWarning, match="RK4"):
        sm = ServoModel(floating("RK4"), servos(), control_period=0.002)
    assert int(sm.model.opt.integrator) == int(mujoco.mjtIntegrator.mjINT_EULER)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IntegratorWarning)
        ServoModel(floating(), servos(), control_period=0.002)  # Euler already: no warning


def test_a_joints_own_armature_counts_alike_in_both_simulators():
    xml = floating(armature=0.02)
    rows = goals(1000)
    robot = Robot(xml, servos(), control_period=0.002)
    sm = ServoModel(xml, servos(), control_period=0.002)
    dof = robot.dofs[0]
    assert sm.model.dof_armature[dof] == pytest.approx(0.02 + servos()[0].params.values["armature"])
    np.testing.assert_allclose(robot.fixed_step(rows).q, adapter_run(xml, servos(), rows),
                               rtol=0, atol=1e-6)
