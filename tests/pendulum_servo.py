"""The batched engines' test servo: an XL330 with M6 friction on a light pendulum (MuJoCo's
bench model), and a square wave of goals (tests/test_batched_engines.py, test_array_gear.py)."""

from __future__ import annotations

import numpy as np

from frictionsim.params import ParameterSet
from frictionsim.solvers.mujoco_adapter import bench_mjcf
from frictionsim.solvers.robot import JointServo

PERIOD = 0.005
MJCF = bench_mjcf(0.2, 0.1, 0.0, 0.001)


def servo(extensions=(), **values) -> JointServo:
    """The pendulum's servo at kp 400, 7.4 V, with ``extensions`` and ``values`` set."""
    params = ParameterSet("m6", "xl330", {"friction_base": 0.03, "friction_stribeck": 0.02,
                                          "load_friction_motor": 0.1,
                                          "load_friction_external": 0.08})
    params = params.with_extensions(extensions).with_values(**values)
    return JointServo("servo", params.with_scheme("semi_implicit"), kp=400.0, vin=7.4)


def square(n: int = 200) -> np.ndarray:
    """±0.8 rad goals switching every 0.55 s, one per control period (n × 1)."""
    t = np.arange(n) * PERIOD
    return (0.8 * np.sign(np.sin(2 * np.pi * t / 1.1)))[:, None]
