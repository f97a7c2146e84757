"""The pendulum bench as a one-hinge robot: frictionsim's n-joint fixed step on a bench log, to
hold it to the bench's own rollout (tests/test_robots.py, test_backlash.py, test_ripple.py)."""

from __future__ import annotations

import numpy as np


def pendulum_robot_run(log, params) -> tuple:
    """(the Robot, its joint angles in the log's encoder frame, one per control period) of
    ``params`` on ``log``'s pendulum MJCF, from the log's first state and with its goals."""
    from frictionsim.solvers.mujoco_adapter import bench_mjcf
    from frictionsim.solvers.robot import JointServo, Robot

    offset = params.values["q_offset"]
    robot = Robot(bench_mjcf(log.mass, log.length, log.arm_mass, log.dt),
                  [JointServo("servo", params, log.kp, float(log.header["vin"]))],
                  control_period=log.dt)
    run = robot.fixed_step(log.column("goal_position")[:, None] + offset,
                           log.column("torque_enable")[:, None],
                           q0=[log.entries[0]["position"] + offset],
                           v0=[log.entries[0]["speed"]])
    return robot, np.asarray(run.q[:, 0] - offset)
