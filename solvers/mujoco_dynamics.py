"""MuJoCo's kinematics and dynamics terms, called from compiled code (optional ``mujoco`` extra).

frictionsim's own n-joint simulators use MuJoCo for what it is best at, the rigid
body algorithms of any MJCF model, and nothing else (no ``mj_step``): the mass
matrix M(q) and the bias forces (gravity, Coriolis, centrifugal) at a state. The
functions of MuJoCo's shared library are called from Numba by their C symbols
(no Python per call): ``mj_kinematics``, ``mj_comPos``, ``mj_crb`` (M),
``mj_comVel`` and ``mj_rne`` (bias), ``mj_fullM`` (dense M). On the 2R arm the
whole pipeline costs about 0.4 µs per call, against about 2.5 µs for a
Python-loop ``mj_step``.

Pointers travel as 64-bit integers (``MjModel._address``, ``MjData._address``, a
NumPy array's ``.ctypes.data``); the x86-64 and AArch64 calling conventions pass
both in the same registers. The functions are declared by their symbol names
(Numba's ``ExternalFunction``) and the library is loaded into LLVM's symbol table,
so a compiled caller holds no address of this process: it is cached to disk like
every other kernel, and the symbols are resolved again when a later process loads it.
"""

from __future__ import annotations

import os
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
from numba import njit, types

from frictionsim.errors import ConfigurationError, MissingExtra

try:
    import mujoco
except ImportError:  # pragma: no cover - exercised only without the extra
    raise MissingExtra("MuJoCo is not installed: pip install 'frictionsim[mujoco]'") from None


def library_path() -> Path:
    """MuJoCo's shared library inside the installed ``mujoco`` package."""
    folder = Path(mujoco.__file__).parent
    for pattern in ("libmujoco.so*", "libmujoco*.dylib", "mujoco.dll"):
        found = sorted(folder.glob(pattern))
        if found:
            return found[0]
    raise MissingExtra(f"MuJoCo's shared library was not found in {folder}")


llvm.load_library_permanently(os.fspath(library_path()))
_ptr = types.uint64  # an address: mjModel*, mjData*, mjtNum*


def _function(name: str, *argtypes) -> types.ExternalFunction:
    return types.ExternalFunction(name, types.void(*argtypes))


mj_kinematics = _function("mj_kinematics", _ptr, _ptr)
mj_comPos = _function("mj_comPos", _ptr, _ptr)  # noqa: N816 - MuJoCo's names
mj_crb = _function("mj_crb", _ptr, _ptr)
mj_comVel = _function("mj_comVel", _ptr, _ptr)  # noqa: N816
mj_rne = _function("mj_rne", _ptr, _ptr, types.int32, _ptr)
mj_fullM = _function("mj_fullM", _ptr, _ptr, _ptr)  # noqa: N816
mj_integratePos = _function("mj_integratePos", _ptr, _ptr, _ptr, types.float64)  # noqa: N816


@njit(cache=True)
def bias_terms(model: int, data: int, qpos: np.ndarray, qvel: np.ndarray, q: np.ndarray,
               v: np.ndarray, bias: np.ndarray) -> None:
    """The bias forces C(q, v) + g(q) alone into ``bias`` (:func:`dynamics_terms` without M:
    no composite inertia)."""
    for i in range(q.shape[0]):
        qpos[i] = q[i]
    for i in range(v.shape[0]):
        qvel[i] = v[i]
    mj_kinematics(model, data)
    mj_comPos(model, data)
    mj_comVel(model, data)
    mj_rne(model, data, 0, bias.ctypes.data)


@njit(cache=True)
def dynamics_terms(model: int, data: int, qpos: np.ndarray, qvel: np.ndarray, q: np.ndarray,
                   v: np.ndarray, mass: np.ndarray, bias: np.ndarray) -> None:
    """Dense M(q) into ``mass`` (nv × nv) and the bias forces C(q, v) + g(q) into ``bias``.

    ``model``, ``data``: the ``_address`` of an MjModel and of an MjData of it;
    ``qpos``, ``qvel``: that MjData's arrays (written with q, nq values, and v, nv values). M
    includes the model's own ``dof_armature``; ``bias`` is MuJoCo's ``qfrc_bias``
    (τ_e = −bias). The composite inertia comes after the bias: neither reads the other.
    """
    bias_terms(model, data, qpos, qvel, q, v, bias)
    mj_crb(model, data)
    mj_fullM(model, data, mass.ctypes.data)


@njit(cache=True)
def bias_at_velocity(model: int, data: int, qvel: np.ndarray, v: np.ndarray,
                     bias: np.ndarray) -> None:
    """The bias forces at the positions the MjData's kinematics were last computed for
    (:func:`bias_terms` or :func:`dynamics_terms`) and velocity ``v``: the velocity-dependent
    stages only."""
    for i in range(v.shape[0]):
        qvel[i] = v[i]
    mj_comVel(model, data)
    mj_rne(model, data, 0, bias.ctypes.data)


@njit(cache=True)
def integrate_positions(model: int, q: np.ndarray, v: np.ndarray, dt: float) -> None:
    """q ← q ⊕ v·dt in place, MuJoCo's ``mj_integratePos``: free and ball joints' quaternions
    rotated (and normalised), every other position plus velocity × dt."""
    mj_integratePos(model, q.ctypes.data, v.ctypes.data, dt)


def contact_pairs(model) -> list[tuple[str, str]]:
    """The pairs of geoms that MuJoCo's collision detection may put in contact: explicit
    ``<pair>`` elements, and every two geoms of bodies that are not welded together nor
    parent and child (unless the model turns that filter off) whose contype and conaffinity
    match. Empty when the model disables contacts. Each geom by its name, else
    ``geom N (body B)``."""
    flags = int(model.opt.disableflags)
    if flags & int(mujoco.mjtDisableBit.mjDSBL_CONTACT):
        return []
    filter_parent = not flags & int(mujoco.mjtDisableBit.mjDSBL_FILTERPARENT)

    def name(g: int) -> str:
        body = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, int(model.geom_bodyid[g]))
        return mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, g) \
            or f"geom {g} (body {body or int(model.geom_bodyid[g])})"

    weld = model.body_weldid
    parent_weld = weld[model.body_parentid[weld]]
    body = model.geom_bodyid.astype(np.int64)
    a, b = np.triu_indices(model.ngeom, 1)
    wa, wb = weld[body[a]], weld[body[b]]
    low, high = np.minimum(body[a], body[b]), np.maximum(body[a], body[b])
    signature = model.exclude_signature.astype(np.int64)
    excluded = np.minimum(signature >> 16, signature & 0xFFFF) << 16 \
        | np.maximum(signature >> 16, signature & 0xFFFF)
    possible = (wa != wb) & ~np.isin(low << 16 | high, excluded) & (
        (model.geom_contype[a] & model.geom_conaffinity[b]
         | model.geom_contype[b] & model.geom_conaffinity[a]) != 0)
    if filter_parent:
        possible &= ~((wa != 0) & (wb != 0)
                      & ((parent_weld[wa] == wb) | (parent_weld[wb] == wa)))
    pairs = [(name(int(g1)), name(int(g2))) for g1, g2 in zip(model.pair_geom1, model.pair_geom2)]
    return pairs + [(name(int(g1)), name(int(g2))) for g1, g2 in zip(a[possible], b[possible])]


def check_hinges(model, joints: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(qpos address, dof address) of each named joint; ``ValueError`` naming a joint that is
    missing, named twice (two servos cannot drive one joint) or not a hinge joint (the
    servos are rotary: angles in rad, torques in N·m). The model's other joints may be of
    any kind (a floating base: a free joint, nq ≠ nv)."""
    qpos, dofs = [], []
    for name in joints:
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if jid < 0:
            names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, i) for i in range(model.njnt)]
            raise ConfigurationError(f"the model has no joint {name!r} (joints: "
                                     f"{', '.join(map(str, names))})")
        if int(model.jnt_type[jid]) != int(mujoco.mjtJoint.mjJNT_HINGE):
            raise ConfigurationError(f"joint {name!r} is not a hinge joint: a servo is rotary (a slide "
                                     "joint would take its torque as a force and its angle as metres)")
        if int(model.jnt_qposadr[jid]) in qpos:
            raise ConfigurationError(f"joint {name!r} has two servos; one servo drives one joint")
        qpos.append(int(model.jnt_qposadr[jid]))
        dofs.append(int(model.jnt_dofadr[jid]))
    return np.array(qpos, dtype=np.int64), np.array(dofs, dtype=np.int64)
