"""The batched engines' memory: what each array holds, by name, and its shape.

Every array has the worlds first (MuJoCo Warp's ``array("nworld", …)``); a world's thread
reads and writes its own rows only, so that thousands of worlds step in one launch with no
synchronisation. The servo bank's own arrays are :mod:`~frictionsim.solvers.batched.bank`'s
(``records``, ``thetas``, ``firmware``, ``nets``, ``net_work``); the engine's step
(:mod:`~frictionsim.solvers.batched.engine`) adds:

====================  ===========================  ==========================================
array                 shape                        what
====================  ===========================  ==========================================
``steps``             (nworld,) int32              physics steps since the world's reset
``fresh``             (nworld,) int32              1: reset the world's servos at the next step
``goal_ring``         (nworld, lags + 1, nservo)   the goals of the last steps (command delay)
``delay``             (nworld,) int32              each world's command delay (physics steps)
``clip_work``         (nworld, clip work)          the friction solve's scratch and the
                                                   active set it keeps for the next step
``mats``              (nworld, MATRICES, nv, nv)   M and the systems the gears solve
``vec``               (nworld, VECTORS, nv)        per-dof torques and velocities
``per_servo``         (nworld, PER_SERVO, nservo)  per-servo values of the step
``failures``          (nworld,) int32              steps whose friction solve did not converge
====================  ===========================  ==========================================

The scratch of a world's friction solve and of a servo's network have the sizes below.
"""

from __future__ import annotations

import numpy as np

from frictionsim.errors import ConfigurationError

# mats: a world's matrices (nv × nv): MuJoCo's M, M without the servos' rotors, the system a
# solve solved
FULL = 0
BASE = 1
SOLVED = 2
MATRICES = 3

# vec: a world's vectors (nv): every torque but the servos' (passive − bias), the solved
# system's τ and budgets, the friction, the velocities and v⁺, an impact's impulse
EXTERNAL = 0
TAU = 1
BUDGET = 2
TAU_F = 3
VEL = 4
V_NEXT = 5
IMPULSE = 6
VECTORS = 7

# per_servo: a world's per-servo values (nservo): τ_m, the network torque, the speed the
# motor turns at, whether its gear is engaged, tried open, held engaged; the goal, position,
# velocity and enable flag of the step
MOTOR = 0
EXTRA = 1
SPEED = 2
ENGAGED = 3
TRIED = 4
HELD = 5
GOAL = 6
POSITION = 7
VELOCITY = 8
ENABLE = 9
PER_SERVO = 10

#: The deepest network the batched bank takes (its layers are unrolled:
#: :func:`frictionsim.solvers.batched.net.net_torque`).
MAX_LAYERS = 6


def net_work_size(nets: np.ndarray) -> int:
    """Scratch entries per servo a network row of ``nets`` needs (the input and its
    standardisation, every layer's sums and outputs, the output); 1 when no servo has a
    network. ConfigurationError for a network deeper than :data:`MAX_LAYERS`."""
    size = 1
    for row in np.atleast_2d(nets):
        if row[0] > 0:
            n, layers = int(row[0]), int(row[1])
            if layers > MAX_LAYERS:
                raise ConfigurationError(f"a network of {layers} hidden layers: the batched "
                                         f"engines take at most {MAX_LAYERS}")
            size = max(size, 2 * n + 2 * sum(int(h) for h in row[2:2 + layers]) + 1)
    return size


def clip_work_size(nv: int) -> int:
    """Scratch entries per world of the friction solve of nv joints
    (:func:`frictionsim.solvers.batched.joint_friction.clip_friction`): the factor (nv²), eight
    vectors and the kept active set's size."""
    return nv * nv + 8 * nv + 1
