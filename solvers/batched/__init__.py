"""The servo physics for batched engines: frictionsim's one copy beside the Numba kernels, in Warp.

MuJoCo keeps its physics in C and holds MJX and MuJoCo Warp to it by tests; frictionsim keeps
its servo physics in the Numba kernels (:mod:`frictionsim.servo_bank` and the modules it
calls) and in this one batched implementation, which every batched engine runs: MuJoCo Warp
(:mod:`frictionsim.solvers.warp_servos`), mjlab (:mod:`frictionsim.solvers.mjlab`), MJX
(:mod:`frictionsim.solvers.mjx_servos`, a custom call in its jitted step) and the training of a learned
actuator through its rollout (:mod:`~frictionsim.solvers.batched.rollout`, torch autograd over
Warp's reverse mode). ``tests/test_batched_bank.py`` holds it to the Numba kernels to 1e-12
in float64 on every combination of extensions.

Its modules mirror the Numba ones, one to one:

========================  ===========================================================
module                    mirrors
========================  ===========================================================
:mod:`.laws`              :mod:`frictionsim.actuator_laws` (firmware laws, motor)
:mod:`.unit`              :mod:`frictionsim.servo_unit` (a record's pieces)
:mod:`.net`               :mod:`frictionsim.actuator_net` (a learned network)
:mod:`.bank`              :mod:`frictionsim.servo_bank` (the control period, the step)
:mod:`.friction`          :mod:`frictionsim.friction` (the budget, the ripple)
:mod:`.joint_friction`    :mod:`frictionsim.solvers.joint_friction` (n coupled joints)
:mod:`.gear`              :mod:`frictionsim.solvers.robot_gear` (backlash)
:mod:`.rollout`           the bench's fixed step (:mod:`frictionsim.solvers.fixed_step`)
:mod:`.engine`            the MuJoCo adapter's step (:mod:`frictionsim.solvers.mujoco_adapter`)
========================  ===========================================================

and :mod:`.memory` names the engines' arrays. A world is a thread: its servos' period, their
step and its coupled friction solve run in one kernel with no host synchronisation and fixed
buffers, so that a GPU engine captures physics and servos into one CUDA graph. Every function
is generic over float32 and float64 (MuJoCo Warp's precision, and the equivalence tests').
"""

from __future__ import annotations

from frictionsim.errors import MissingExtra


def import_warp():
    """The ``warp`` module, quiet (a line per kernel module loaded would bury the caller's own
    output); MissingExtra naming the install when it is absent."""
    try:
        import warp
    except ImportError:
        raise MissingExtra("the batched engines need Warp: pip install 'frictionsim[jax]', "
                           "'frictionsim[torch]' or 'frictionsim[mjlab]'") from None
    warp.config.quiet = True
    if hasattr(warp, "LOG_WARNING"):  # warp >= 1.19 logs module loads at INFO
        warp.config.log_level = max(warp.config.log_level, warp.LOG_WARNING)
    warp.init()  # once; the interop (from_torch, from_jax) needs the runtime up
    return warp


try:  # quiet before the first kernel module loads; without Warp, import_warp says what to install
    import_warp()
except MissingExtra:
    pass
