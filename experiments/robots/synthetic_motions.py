"""Synthetic robot recordings (``frictionsim robot synthesize``): motions of a robot made by
frictionsim's own simulation of its servos, in the recording format ``robot identify`` reads.

Each motion sends every servo joint goals that hold still and move in turn: a new set point
every 0.4–1.2 s, reached along a smoothstep of 0.15–0.5 s and then held, the set points drawn
uniformly within the middle 60 % of the joint's range (the MJCF's, or ±1 rad for a joint
without one). The holds show the servos' stiction and gravity sag, the moves their speed
and friction: what a fit needs. The robot starts at rest at its first goals; the recorded
state of each bus cycle is the simulated one (the fixed step) before that cycle's goals take
effect, as a servo reads it back; torques are not simulated (written as 0).

With the servos it was made with, every recording replays to round-off, so a fit that
recovers those servos from them (the ground truth known) tests the whole chain: recordings,
windows, search and the files.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from frictionsim.errors import ConfigurationError
from frictionsim.robot_files import RobotDescription
from frictionsim.robot_recordings import Recording

#: The share of each joint's range the set points are drawn in, around its middle.
RANGE_SHARE = 0.6
#: Set point intervals and their moves (s).
HOLD = (0.4, 1.2)
MOVE = (0.15, 0.5)
#: The range of a joint whose MJCF gives none (rad).
UNLIMITED = (-1.0, 1.0)


def joint_ranges(robot: RobotDescription, model) -> np.ndarray:
    """Each servo joint's range in the MJCF (rad), (joints × 2); :data:`UNLIMITED` for a
    joint without one."""
    out = []
    for joint in robot.servo_joints:
        j = model.joint(joint.mjcf)
        limited = bool(model.jnt_limited[j.id])
        out.append(model.jnt_range[j.id] if limited else UNLIMITED)
    return np.array(out, dtype=float)


def set_point_goals(ranges: np.ndarray, t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Goals at times ``t`` (rows × joints, rad): per joint, set points every
    :data:`HOLD` seconds within :data:`RANGE_SHARE` of its range, each reached along a
    smoothstep of :data:`MOVE` seconds and held."""
    goals = np.empty((len(t), len(ranges)))
    for j, (lo, hi) in enumerate(ranges):
        middle, half = 0.5 * (lo + hi), 0.5 * RANGE_SHARE * (hi - lo)
        start, level = 0.0, middle + rng.uniform(-half, half)
        column = np.full(len(t), level)
        while start < t[-1]:
            start += rng.uniform(*HOLD)
            target, move = middle + rng.uniform(-half, half), rng.uniform(*MOVE)
            s = np.clip((t - start) / move, 0.0, 1.0)
            ramp = s * s * (3.0 - 2.0 * s)
            column = np.where(t >= start, level + (target - level) * ramp, column)
            level = target
        goals[:, j] = column
    return goals


def synthetic_recordings(robot: RobotDescription, spec, params: dict, motions: int,
                         seconds: float, seed: int = 0, progress: bool = False
                         ) -> list[Recording]:
    """``motions`` recordings of ``seconds`` each (named ``motion_00``…), simulated by the
    fixed step with ``params`` (actuator name → ParameterSet, and joint name → its own set
    where it has one: :meth:`~frictionsim.robot_params.RobotParameters.for_robot`) on ``spec``
    (:func:`~frictionsim.solvers.robot_servos.robot_spec`). In the recorded convention of
    ``robot``'s joints (its sign and offset undone), the left-out joints absent."""
    from frictionsim.experiments.common.progress import progress as bar
    from frictionsim.experiments.robots.recorded import Replay

    if motions < 1 or seconds < 2 * robot.bus_period:
        raise ConfigurationError(f"{motions} motions of {seconds:g} s: at least one motion of "
                                 f"two bus cycles ({2 * robot.bus_period:g} s)")
    replay = Replay(robot, spec, params, "fixed_step")
    ranges = joint_ranges(robot, replay.model)
    rows = int(round(seconds / robot.bus_period)) + 1
    t = np.arange(rows) * robot.bus_period
    names = tuple(j.name for j in robot.servo_joints)
    out = []
    for k in bar(range(motions), desc="simulating motions", enabled=progress):
        rng = np.random.default_rng([seed, k])
        goal_model = set_point_goals(ranges, t, rng)
        goal = np.column_stack([j.from_model(goal_model[:, i])
                                for i, j in enumerate(robot.servo_joints)])
        at_rest = Recording(f"motion_{k:02d}", names, t, goal, np.repeat(goal[:1], rows, 0),
                            np.zeros_like(goal), np.zeros_like(goal))
        run = replay.run(at_rest)
        out.append(dataclasses.replace(at_rest, position=run.predicted, velocity=run.velocity))
    return out
