"""The virtual servo's physics: the compiled step in real time on an injected clock."""

from __future__ import annotations

import numpy as np

from frictionsim.hw.virtual_servo.joint import SimulatedJoint
from frictionsim.params import ParameterSet
from frictionsim.solvers.fixed_step import rollout_substeps


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_follows_the_compiled_rollout():
    params = ParameterSet.defaults("m4", "xl330")
    clock = Clock()
    joint = SimulatedJoint(params, mass=0.5, length=0.1, vin=7.4, noise=0.0, clock=clock)
    joint.set_kp(400)
    joint.set_torque(True)
    goals = 0.5 * np.sin(np.arange(400) * 0.005 * 3)
    q = []
    for g in goals:
        q.append(joint.q)
        joint.set_goal(g)
        clock.t += 0.005
        joint.advance()
    # The firmware runs at the physics rate (1 ms) on the goal held for 5 ms.
    ref_q = np.empty(2000)
    ref_v = np.empty(2000)
    rollout_substeps(np.repeat(goals, 5), np.ones(2000), np.zeros(2000), 0.0, 0.0,
                     params.theta(), joint.bench, 0.001, 1, ref_q, ref_v)
    assert np.allclose(q, ref_q[::5], atol=1e-12)
    assert np.ptp(q) > 0.3


def test_readings_are_quantised():
    clock = Clock()
    joint = SimulatedJoint(ParameterSet.defaults("m1", "mx64"), 1.0, 0.15, clock=clock, seed=2)
    joint.set_torque(False)
    joint.q = 0.3
    clock.t = 1e-4
    counts = joint.position_reading() / (2 * np.pi / 4096)
    assert abs(counts - round(counts)) < 1e-9
    assert joint.load_reading() == 0.0
