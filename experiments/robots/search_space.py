"""The search space of a robot's servos: one actuator's parameters shared by its servos, and a
calibration offset per joint when the fit has them.

A point is :class:`~frictionsim.experiments.identification.search_space.SearchSpace`'s
point followed by one coordinate per joint offset, folded into [−MAX, MAX] rad the same
way (reflection at the bounds, linear scale). Its kernel row is ``[theta | δ]``, what
:class:`~frictionsim.solvers.robot_windows.RobotWindows` evaluates. The servo's own
``q_offset`` is held at 0: on a robot the goals are joint angles and the joint offsets
stand for the encoders' calibration.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.identification.search_space import SearchSpace
from frictionsim.params import ParameterSet

#: Bounds of a fitted joint offset (rad): a few degrees, what a calibration can miss.
MAX_JOINT_OFFSET = 0.1
PREFIX = "offset:"


@dataclass(frozen=True)
class RobotPoint:
    """Shared servo parameters and the joints' calibration offsets (rad)."""

    params: ParameterSet
    offsets: dict[str, float] = field(default_factory=dict)
    joints: tuple[str, ...] = ()

    @property
    def model(self) -> str:
        return self.params.model

    @property
    def values(self) -> dict[str, float]:
        return {**self.params.values, **{PREFIX + j: v for j, v in self.offsets.items()}}

    def theta(self) -> np.ndarray:
        return np.concatenate([self.params.theta(),
                               [self.offsets.get(j, 0.0) for j in self.joints]])


@dataclass(frozen=True)
class RobotSearchSpace:
    """``servo``'s free parameters, then the offsets of ``offset_joints`` (a subset of
    ``joints``, the robot's servo joints in order; the others stay at 0)."""

    servo: SearchSpace
    joints: tuple[str, ...]
    offset_joints: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [j for j in self.offset_joints if j not in self.joints]
        if unknown:
            raise ConfigurationError(f"offset of {unknown[0]!r}: not a servo joint "
                                     f"({', '.join(self.joints)})")

    @property
    def model(self) -> str:
        return self.servo.model

    @property
    def actuator(self) -> str:
        return self.servo.actuator

    @property
    def free(self) -> list[str]:
        return self.servo.free + [PREFIX + j for j in self.offset_joints]

    @property
    def dimension(self) -> int:
        return len(self.free)

    def defaults(self) -> dict[str, float]:
        return {**self.servo.defaults(), **{PREFIX + j: 0.0 for j in self.offset_joints}}

    def _split(self, values: dict[str, float]) -> tuple[dict, dict]:
        servo = {k: v for k, v in values.items() if not k.startswith(PREFIX)}
        offsets = {k[len(PREFIX):]: float(v) for k, v in values.items() if k.startswith(PREFIX)}
        return servo, offsets

    def exact(self, values: dict[str, float]) -> RobotPoint:
        servo, offsets = self._split(values)
        return RobotPoint(self.servo.exact(servo),
                          {j: offsets.get(j, 0.0) for j in self.offset_joints}, self.joints)

    def _offsets(self, x: np.ndarray) -> np.ndarray:
        y = np.mod(np.atleast_2d(x)[:, self.servo.dimension:], 2.0)
        u = np.where(y <= 1.0, y, 2.0 - y)
        return MAX_JOINT_OFFSET * (2.0 * u - 1.0)

    def point(self, values: dict[str, float]) -> np.ndarray:
        offsets = np.clip([values.get(PREFIX + j, 0.0) for j in self.offset_joints],
                          -MAX_JOINT_OFFSET, MAX_JOINT_OFFSET)
        return np.concatenate([self.servo.point(self._split(values)[0]),
                               (offsets / MAX_JOINT_OFFSET + 1.0) / 2.0])

    def thetas(self, x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(x)
        rows = np.zeros((x.shape[0], len(self.joints)))
        cols = [self.joints.index(j) for j in self.offset_joints]
        rows[:, cols] = self._offsets(x)
        return np.concatenate([self.servo.thetas(x[:, :self.servo.dimension]), rows], axis=1)

    def parameter_set(self, x: np.ndarray, source: str | None = None) -> RobotPoint:
        x = np.atleast_2d(x)
        offsets = dict(zip(self.offset_joints, self._offsets(x)[0].tolist()))
        return RobotPoint(self.servo.parameter_set(x[:, :self.servo.dimension], source),
                          offsets, self.joints)
