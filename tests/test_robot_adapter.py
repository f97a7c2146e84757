"""The MuJoCo adapter and the standalone simulator on real robots: a floating base, more dofs
than servos, the caller's spec left alone, the integrator warning, a joint's own armature
treated alike by both. Needs the mujoco extra."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from frictionsim.errors import ConfigurationError  # noqa: E402
from frictionsim.params import ParameterSet  # noqa: E402
from frictionsim.solvers.errors import SimulationError  # noqa: E402
from frictionsim.solvers.mujoco_adapter import IntegratorWarning, ServoModel  # noqa: E402
from frictionsim.solvers.robot import JointServo, Robot  # noqa: E402

#: A floating torso with a two-link arm, no contacts, no gravity: the arm's motion turns the
#: torso (the free joint's 6 dofs are coupled to the servos' through M(q)).
FLOATING = """
<mujoco>
  <option timestep="0.002" gravity="0 0 0"{integrator}>
    <flag contact="disable"/>  <!-- frictionsim's own engines refuse a model with contacts -->
  </option>
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
    xml = ('<mujoco><option timestep="0.002"><flag contact="disable"/></option>'
           f'<worldbody><body pos="0 0 1"><freejoint/>'
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


def test_any_number_of_servo_models_may_be_alive_and_each_drives_its_own_servos():
    # per-environment randomisation: every environment its own adapted model (the table of
    # registered models grows past its first 64 rows while the earlier models keep running)
    base = ParameterSet.defaults("m1", "sts3215_12v").with_scheme("semi_implicit")

    def model(kt: float) -> ServoModel:
        return ServoModel(floating(), [JointServo(j, base.with_values(kt=kt), kp=16.0)
                                       for j in ("shoulder", "elbow")], control_period=0.002)

    def final_arm(sm: ServoModel) -> np.ndarray:
        d = sm.make_data()
        for g in goals(150):
            sm.set_goals(d, g)
            mujoco.mj_step(sm.model, d)
        sm.check(d)
        return d.qpos[7:].copy()

    kt = np.linspace(1.5, 3.5, 150)
    models = [model(k) for k in kt]
    picked = [0, 37, 63, 64, 100, 149]
    finals = [final_arm(models[i]) for i in picked]
    del models
    for i, final in zip(picked, finals):
        np.testing.assert_array_equal(final, final_arm(model(kt[i])))
    # the motors differ: no two models shared servos
    assert len({tuple(f) for f in finals}) == len(finals)


def test_an_rl_style_reset_equals_a_fresh_episode():
    sm = ServoModel(floating(), servos(), control_period=0.004)
    rows = goals(300)
    q0 = sm.model.qpos0.copy()
    q0[7:9] = (0.3, -0.2)

    def episode(data) -> np.ndarray:
        out = []
        for g in rows:
            sm.set_goals(data, g)
            mujoco.mj_step(sm.model, data)
            out.append(data.qpos.copy())
        return np.array(out)

    fresh = sm.make_data()
    fresh.qpos[:] = q0
    first = episode(fresh)

    # 1. mj_resetData, then the initial state: the adapter's state is zeroed with userdata
    data = sm.make_data()
    episode(data)
    mujoco.mj_resetData(sm.model, data)
    data.qpos[:] = q0
    np.testing.assert_array_equal(episode(data), first)

    # 2. only qpos and qvel written back (time runs on): the servos keep their records
    # (limiter target, D-term history) unless reset
    data = sm.make_data()
    episode(data)
    data.qpos[:], data.qvel[:] = q0, 0.0
    stale = episode(data)
    assert np.abs(stale - first).max() > 1e-3
    data = sm.make_data()
    episode(data)
    data.qpos[:], data.qvel[:] = q0, 0.0
    sm.reset(data)
    np.testing.assert_array_equal(episode(data), first)


def test_the_servo_methods_name_what_they_were_given_wrong():
    sm = ServoModel(floating(), servos(), control_period=0.004)
    data = sm.make_data()
    other = mujoco.MjData(mujoco.MjModel.from_xml_string("<mujoco/>"))
    for call in (sm.reset, sm.motor_torques, sm.check, lambda d: sm.set_goals(d, [0.0, 0.0])):
        with pytest.raises(ConfigurationError, match="an MjData of this ServoModel's model"):
            call(other)
        with pytest.raises(ConfigurationError, match="got NoneType"):
            call(None)
    with pytest.raises(ConfigurationError, match=r"goals: one value per servo \(2, .*shape \(3,\)"):
        sm.set_goals(data, [0.0] * 3)
    with pytest.raises(ConfigurationError, match="goals: one number per servo"):
        sm.set_goals(data, ["a", "b"])
    with pytest.raises(ConfigurationError, match="flags: True/False"):
        sm.set_enable(data, [2, 1])
    # a state MuJoCo resets by itself (it only prints a warning) is a diverged simulation
    bad = sm.make_data()
    bad.qvel[:] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mujoco.mj_step(sm.model, bad)
    with pytest.raises(SimulationError, match="diverged: MuJoCo found a non-finite or huge "
                                              "velocity 1 time"):
        sm.check(bad)
    mujoco.mj_resetData(sm.model, bad)
    sm.check(bad)
    sm.set_goals(data, 0.1)  # one value stands for every servo
    sm.set_enable(data, [True, 0])
    assert list(data.ctrl[sm.ctrl_index]) == [0.1, 0.1]
    assert list(sm._registers(data)[:, 0]) == [0.0, 1.0]  # the second servo disabled


def test_frictionsims_own_engines_refuse_a_model_with_contacts_naming_the_geoms():
    # a biped-like body over a floor: the fixed step has no contact solver and would let it
    # fall through the floor
    xml = FLOATING.format(integrator="", armature="").replace(
        '<flag contact="disable"/>', "").replace(
        "<worldbody>", '<worldbody><geom name="floor" type="plane" size="5 5 0.1"/>')
    with pytest.raises(ValueError, match=r"contacts \(floor with geom 1 \(body torso\), floor with "):
        Robot(xml, servos(), control_period=0.002)
    # the same model with contacts off is taken, and the adapter takes it with them on
    Robot(xml.replace('gravity="0 0 0">', 'gravity="0 0 0"><flag contact="disable"/>'),
          servos(), control_period=0.002)
    ServoModel(xml, servos(), control_period=0.002)


def test_servos_on_a_robot_in_one_call(tmp_path):
    from pathlib import Path

    from frictionsim.params import ParameterFileError, load_params
    from frictionsim.robot_files import get_robot
    from frictionsim.robot_params import RobotParameters
    from frictionsim.solvers.robot_servos import joint_servos, robot_spec

    params = ParameterSet.defaults("m1", "sts3215_12v").with_scheme("semi_implicit")
    # a bare MJCF: joints by pattern, the period the model's step, the joint's own armature
    # replaced by the servo's (unless asked to keep it)
    sm = ServoModel.from_robot(floating(armature=0.01), params, "sh*")
    assert [s.joint for s in sm.servos] == ["shoulder"] and sm.period == 0.002
    dof = sm.dofs[0]
    kept = ServoModel.from_robot(floating(armature=0.01), params, "sh*", replace_dynamics=False)
    assert kept.model.dof_armature[dof] == pytest.approx(sm.model.dof_armature[dof] + 0.01)
    assert sm.servos[0].kp == 32  # the actuator's factory gain
    with pytest.raises(ValueError, match="'knee' matches none"):
        ServoModel.from_robot(floating(), params, "knee")
    # with actuators in the MJCF, a hinge none drives is passive (Open Duck's backlash hinges)
    driven = floating().replace("</worldbody>", '</worldbody><actuator><position '
                                'joint="elbow" kp="5"/></actuator>')
    assert [s.joint for s in ServoModel.from_robot(driven, params).servos] == ["elbow"]
    assert [s.joint for s in ServoModel.from_robot(driven, params, "*").servos] == ["elbow"]
    with pytest.raises(ValueError, match="'shoulder' matches none of the model's hinge joints "
                                         "an actuator drives"):
        ServoModel.from_robot(driven, params, "shoulder")
    # a robot file: its joints, firmware and period, as the robot commands build them
    data = Path(__file__).resolve().parents[2] / "shared" / "data"
    if not data.is_dir():
        pytest.skip("shared data not found")
    fit = RobotParameters("so101", {"sts3215_12v": params})
    so101 = ServoModel.from_robot("so101", fit, data=data)
    robot = get_robot("so101")
    by_hand = ServoModel(robot_spec(robot, robot.mjcf_path(data)),
                         joint_servos(robot, {"sts3215_12v": params}), control_period=0.002)
    assert so101.servos == by_hand.servos and so101.period == robot.control_period
    np.testing.assert_array_equal(so101.model.dof_armature, by_hand.model.dof_armature)
    wrists = ServoModel.from_robot("so101", fit, "wrist_*", data=data)
    assert [s.joint for s in wrists.servos] == ["wrist_flex", "wrist_roll"]
    # a robot fit read as a plain parameter file names its loader
    from frictionsim import atomic

    atomic.write_json(tmp_path / "fit.json", fit.to_dict())
    with pytest.raises(ParameterFileError, match="load_robot_params"):
        load_params(tmp_path / "fit.json")
    assert isinstance(ServoModel.from_robot("so101", tmp_path / "fit.json", data=data),
                      ServoModel)


def test_servos_sharing_a_parameter_set_warn_once_and_robot_takes_a_spec():
    params = ParameterSet.defaults("m1", "sts3215_12v")  # the reference scheme
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ServoModel(floating(), [JointServo(j, params, 16.0) for j in ("shoulder", "elbow")],
                   control_period=0.002)
    assert len([w for w in caught if "reference scheme" in str(w.message)]) == 1
    spec = mujoco.MjSpec.from_string(floating())
    robot = Robot(spec, servos(), control_period=0.002)
    assert robot.nv == 8 and spec.compile().nv == 8  # the caller's spec is left as it was


def test_the_adapter_cost_study_steps_a_biped_on_its_floor(tmp_path):
    import json

    from frictionsim.experiments.robots.adapter_cost import biped_mjcf
    from frictionsim.experiments.runner.cli import main

    xml, joints = biped_mjcf()
    model = mujoco.MjModel.from_xml_string(xml)
    assert model.nv == 20 and len(joints) == 14 and model.nu == 14
    out = tmp_path / "cost.json"
    assert main(["run", "adapter-cost", "--seconds", "0.3", "--rounds", "1", "--json", str(out),
                 "--no-progress"]) == 0
    cost = json.loads(out.read_text())
    assert (cost["dofs"], cost["servos"]) == (20, 14)
    assert cost["contacts"] >= 4  # both feet stand on the floor
    assert all(cost[k] > 0 for k in ("shipped_us", "bare_us", "adapter_us"))
