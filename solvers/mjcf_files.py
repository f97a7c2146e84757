"""Reading a MuJoCo model from what a user hands over: a path, MJCF text, an ``MjSpec`` or an
``MjModel``, with one kind of error naming the file.

MuJoCo's own parse errors span lines and leave out the file's path
(``Error=XML_ERROR_PARSING_TEXT ErrorID=8 … Line number=1``); a user with several MJCFs
cannot tell which one failed. Every loader of a user's model goes through here.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from frictionsim.errors import ConfigurationError
from frictionsim.jsonfile import check_regular_file
from frictionsim.solvers.mujoco_dynamics import dynamics_terms, mujoco


def _is_text(source) -> bool:
    return isinstance(source, str) and source.lstrip().startswith("<")


def _failure(source, error: Exception) -> ConfigurationError:
    what = "the MJCF text" if _is_text(source) else str(source)
    reason = " ".join(str(error).split()) or type(error).__name__
    return ConfigurationError(f"{what}: not a usable MJCF model ({reason})")


def _not_a_model(source, expected: str) -> ConfigurationError:
    return ConfigurationError(f"MJCF {source!r:.40}: {expected} (it is of type "
                              f"{type(source).__name__})")


def read_spec(source: str | os.PathLike | mujoco.MjSpec) -> mujoco.MjSpec:
    """A new ``MjSpec`` of ``source`` (a path, MJCF text or a spec, which is copied, never
    edited); :class:`ConfigurationError` naming the file and MuJoCo's reason on one line."""
    if isinstance(source, mujoco.MjSpec):
        return source.copy()
    if not isinstance(source, (str, os.PathLike)):
        raise _not_a_model(source, "a path, the MJCF's text or an MjSpec")
    if not _is_text(source):
        check_regular_file(Path(source), ConfigurationError, "MJCF file")
    try:
        if _is_text(source):
            return mujoco.MjSpec.from_string(source)
        return mujoco.MjSpec.from_file(str(source))
    except (ValueError, OSError) as e:
        raise _failure(source, e) from None


def read_model(source) -> mujoco.MjModel:
    """An ``MjModel`` from a path, MJCF text, an ``MjSpec`` (compiled from a copy) or an
    ``MjModel`` (returned as is); errors as :func:`read_spec`."""
    if isinstance(source, mujoco.MjModel):
        return source
    if not isinstance(source, (str, os.PathLike, mujoco.MjSpec)):
        raise _not_a_model(source, "a path, the MJCF's text, an MjSpec or an MjModel")
    what = "the MjSpec" if isinstance(source, mujoco.MjSpec) else source
    return compile_spec(read_spec(source), what)


def compile_spec(spec: mujoco.MjSpec, what: str) -> mujoco.MjModel:
    """``spec.compile()``, MuJoCo's compile error named after ``what`` on one line."""
    try:
        return spec.compile()
    except ValueError as e:
        raise _failure(what, e) from None


def dynamics_model(source, full: mujoco.MjModel | None = None) -> mujoco.MjModel:
    """The model of ``source`` (as :func:`read_model`; ``full``: that model, when the caller
    has compiled it already) as frictionsim's own simulators need it:
    its bodies, joints and options, without geometry.

    Those simulators ask MuJoCo for M(q) and the bias forces only
    (:func:`~frictionsim.solvers.mujoco_dynamics.dynamics_terms`); the pose of every geom,
    site and camera that ``mj_kinematics`` also computes is work they never read (on the
    SO-101, 30 mesh geoms: 0.3 of 1.05 µs per call). Each body keeps the inertia the compiler
    gave it from its geoms, written explicitly, so M and the bias are the same numbers to the
    last bit (checked here at three states). An ``MjModel`` (no spec to edit), a spec
    whose copy does not compile or keeps other inertias: the full model, unchanged."""
    full = read_model(source) if full is None else full
    if isinstance(source, mujoco.MjModel):
        return full
    spec = read_spec(source)
    for body in spec.bodies[1:]:
        b = mujoco.mj_name2id(full, mujoco.mjtObj.mjOBJ_BODY, body.name) if body.name else -1
        if b < 0:
            return full
        body.explicitinertial = True
        body.mass = full.body_mass[b]
        body.ipos = full.body_ipos[b]
        body.iquat = full.body_iquat[b]
        body.inertia = full.body_inertia[b]
        body.fullinertia = [float("nan")] * 6
    # what refers to geoms or sites goes with them; none of it enters M or the bias
    for kind in (spec.sensors, spec.actuators, spec.tendons, spec.equalities, spec.pairs,
                 spec.excludes, spec.geoms, spec.sites, spec.cameras, spec.lights,
                 spec.meshes, spec.hfields, spec.skins, spec.materials, spec.textures):
        for element in list(kind):
            spec.delete(element)
    try:
        bare = spec.compile()
    except ValueError:
        return full
    if bare.nq != full.nq or bare.nv != full.nv:
        return full
    return bare if _same_dynamics(full, bare) else full


def _same_dynamics(a: mujoco.MjModel, b: mujoco.MjModel) -> bool:
    """M and the bias forces of ``a`` and ``b`` equal to the last bit at three states (the
    reference configuration at rest, two seeded random ones moving)."""
    rng = np.random.default_rng(0)
    out = []
    for model in (a, b):
        data = mujoco.MjData(model)
        terms = []
        for k in range(3):
            q = model.qpos0.copy()
            v = np.zeros(model.nv)
            if k:
                data.qpos[:] = q
                data.qvel[:] = rng.uniform(-1.0, 1.0, model.nv)
                mujoco.mj_integratePos(model, q, data.qvel, 1.0)
                v = rng.uniform(-3.0, 3.0, model.nv)
            mass, bias = np.empty((model.nv, model.nv)), np.empty(model.nv)
            dynamics_terms(model._address, data._address, data.qpos, data.qvel, q, v, mass, bias)
            terms += [mass, bias]
        out.append(terms)
        rng = np.random.default_rng(0)
    return all(np.array_equal(x, y) for x, y in zip(*out))
