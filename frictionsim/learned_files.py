"""Learned actuator files: a network (``net``) or a physical model plus a learned residual
(``hybrid``), as written by ``identify --model net|hybrid``.

A JSON object::

    {"model": "net" | "hybrid", "actuator": NAME,
     "physics": {a parameter file's object}      # hybrid only: the physical model under it
     "inputs": [...], "hidden": [32, 32], "authority": null | N·m,
     "armature": kg·m²                            # net only (optional, default 0)
     "net": [the flat vector of frictionsim.actuator_net], "training": {...}}

``net``: the network is the actuator (``authority`` null: unbounded); the joint has only its
load and the rotor's reflected inertia ``armature`` (kg·m², optional, default 0; what
``identify`` writes is the rotor inertia of the richest physical model of the same run: a
torque computed from the error and velocity history cannot carry an inertial torque, and a
light joint driven by a held torque without it is unstable); no motor, no friction: the
network's torque carries them.
``hybrid``: the physical model runs as always and the network adds a residual torque of at
most ``authority`` N·m (0: none, the physical model alone), trained on what the physical
model leaves unexplained (docs/model.md §13).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from frictionsim import atomic, schema
from frictionsim.actuator_net import INPUT_NAMES, N_INPUTS, net_size
from frictionsim.errors import ConfigurationError
from frictionsim.jsonfile import read_json
from frictionsim.params import ParameterFileError, ParameterSet, from_dict

#: The kinds of learned actuator model.
LEARNED_MODELS = schema.LEARNED_MODELS


@dataclass(frozen=True)
class LearnedActuator:
    """A learned actuator model (module docstring). ``net``: the flat network vector;
    ``physics``: the physical model under a hybrid (None for ``net``); ``training``: what it
    was trained on and how (free-form, kept in the file)."""

    model: str
    actuator: str
    net: np.ndarray
    hidden: tuple[int, ...]
    authority: float | None = None
    physics: ParameterSet | None = None
    training: dict = field(default_factory=dict)
    source: str | None = None
    armature: float = 0.0
    """A net's joint: the rotor's reflected inertia it keeps (kg·m²; a hybrid's is its
    physics')."""

    def __post_init__(self) -> None:
        where = self.source or f"learned {self.model} model"
        if self.model not in LEARNED_MODELS:
            raise ParameterFileError(f"{where}: model {self.model!r} is not a learned one "
                                     f"({', '.join(LEARNED_MODELS)})")
        try:
            schema.get_actuator(self.actuator)
        except ValueError as e:
            raise ParameterFileError(f"{where}: {e}") from None
        if (self.model == "hybrid") != (self.physics is not None):
            raise ParameterFileError(f"{where}: a hybrid has a 'physics' model under it, a net "
                                     "has none")
        if self.physics is not None and self.physics.actuator != self.actuator:
            raise ParameterFileError(f"{where}: its physics is for {self.physics.actuator}, "
                                     f"not {self.actuator}")
        if len(self.net) != net_size(N_INPUTS, self.hidden) or not np.all(np.isfinite(self.net)):
            raise ParameterFileError(f"{where}: 'net' must hold {net_size(N_INPUTS, self.hidden)} "
                                     f"finite numbers for hidden layers {list(self.hidden)}, "
                                     f"not {len(self.net)}")
        header = [N_INPUTS, len(self.hidden), *self.hidden]
        if list(self.net[:len(header)]) != header:
            raise ParameterFileError(f"{where}: 'net' describes another network than {N_INPUTS} "
                                     f"inputs and hidden layers {list(self.hidden)}")
        if self.model == "hybrid" and not (self.authority is not None
                                           and math.isfinite(self.authority)
                                           and self.authority >= 0):
            raise ParameterFileError(f"{where}: a hybrid's authority = {self.authority!r} N·m "
                                     "must be a number ≥ 0")
        if self.model == "net" and self.authority is not None:
            raise ParameterFileError(f"{where}: a net's torque is unbounded (authority null)")
        if not (math.isfinite(self.armature) and 0 <= self.armature <= 10.0):
            raise ParameterFileError(f"{where}: armature = {self.armature!r} kg·m² must be from 0 "
                                     "to 10")
        if self.model == "hybrid" and self.armature != 0:
            raise ParameterFileError(f"{where}: a hybrid's rotor inertia is its physics' "
                                     "armature, not a key of its own")
        bound = -1.0 if self.authority is None else self.authority
        if self.net[2 + len(self.hidden)] != bound:
            raise ParameterFileError(f"{where}: 'net' carries authority "
                                     f"{self.net[2 + len(self.hidden)]:g}, the file {bound:g}")

    @property
    def scheme(self) -> str:
        return self.physics.scheme if self.physics is not None else "semi_implicit"

    def with_scheme(self, scheme: str | None) -> LearnedActuator:
        """Itself (``scheme`` None or its own); ValueError for another: a learned model runs the
        position update it was trained with."""
        if scheme is not None and scheme != self.scheme:
            raise ConfigurationError(f"{self.source or self.model}: a learned model runs the scheme it "
                                     f"was trained with ({self.scheme}), not --scheme {scheme}")
        return self

    def to_dict(self) -> dict:
        out = {"model": self.model, "actuator": self.actuator}
        if self.physics is not None:
            out["physics"] = self.physics.to_dict()
        out.update(inputs=list(INPUT_NAMES), hidden=list(self.hidden), authority=self.authority)
        if self.model == "net":
            out["armature"] = self.armature
        out.update(net=[float(x) for x in self.net], training=self.training)
        return out


def learned_from_dict(data: dict, source: str | None = None) -> LearnedActuator:
    """Parse a learned actuator object; ParameterFileError naming ``source`` and the key."""
    where = source or "learned actuator model"
    if not isinstance(data, dict):
        raise ParameterFileError(f"{where}: expected a JSON object")
    unknown = set(data) - {"model", "actuator", "physics", "inputs", "hidden", "authority", "net",
                           "training", "armature"}
    if unknown:
        raise ParameterFileError(f"{where}: unknown key {sorted(unknown)[0]!r}")
    for key in ("model", "actuator", "hidden", "net"):
        if key not in data:
            raise ParameterFileError(f"{where}: no {key!r}")
    if data.get("inputs", list(INPUT_NAMES)) != list(INPUT_NAMES):
        raise ParameterFileError(f"{where}: its network takes the inputs {data['inputs']}; this "
                                 f"frictionsim computes {list(INPUT_NAMES)}")
    hidden = data["hidden"]
    if not (isinstance(hidden, list) and hidden
            and all(isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in hidden)):
        raise ParameterFileError(f"{where}: hidden = {hidden!r} must be a list of layer widths")
    net = data["net"]
    if not (isinstance(net, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                          for x in net)):
        raise ParameterFileError(f"{where}: 'net' must be a list of numbers")
    authority = data.get("authority")
    if authority is not None and (isinstance(authority, bool)
                                  or not isinstance(authority, (int, float))):
        raise ParameterFileError(f"{where}: authority = {authority!r} must be a number (N·m) "
                                 "or null")
    physics = None
    if "physics" in data:
        physics = from_dict(data["physics"], f"{where} (its physics)")
    training = data.get("training", {})
    if not isinstance(training, dict):
        raise ParameterFileError(f"{where}: 'training' must be an object")
    armature = data.get("armature", 0.0)
    if isinstance(armature, bool) or not isinstance(armature, (int, float)):
        raise ParameterFileError(f"{where}: armature = {armature!r} must be a number (kg·m²)")
    return LearnedActuator(data["model"], data["actuator"], np.array(net, dtype=float),
                           tuple(hidden), None if authority is None else float(authority),
                           physics, training, source, float(armature))


def is_learned(data: dict) -> bool:
    """Whether a parsed parameter-file object is a learned actuator's."""
    return isinstance(data, dict) and data.get("model") in LEARNED_MODELS


def load_learned(path: str | os.PathLike) -> LearnedActuator:
    return learned_from_dict(read_json(path, ParameterFileError, "learned actuator file"),
                             str(path))


def save_learned(path: str | os.PathLike, model: LearnedActuator) -> Path:
    """Write a learned actuator file atomically."""
    return atomic.write_json(path, model.to_dict())


def load_servo_model(path: str | os.PathLike, extensions=None) -> ParameterSet | LearnedActuator:
    """A parameter file (docs/model.md §7; ``extensions`` as in
    :func:`frictionsim.params.from_dict`) or a learned actuator file, whichever ``path`` holds.
    A learned file carries its own physics: ``extensions`` do not apply to it."""
    data = read_json(path, ParameterFileError, "parameter file")
    if is_learned(data):
        return learned_from_dict(data, str(path))
    return from_dict(data, str(path), extensions)
