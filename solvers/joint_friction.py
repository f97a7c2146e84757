"""Friction-budget clipping for n coupled joints (docs/model.md §10), written once, compiled.

Given the mass matrix M (symmetric positive definite, n × n), every torque but
friction τ, the velocities v, the per-joint budgets b (b_i = F_i + K_v,i·|v_i|) and
the step dt, friction is the maximal dissipation within the budgets::

    τ_f = argmin over |τ_f,i| ≤ b_i of  ½·v⁺ᵀ·M·v⁺,    v⁺ = v + dt·M⁻¹·(τ + τ_f)

In torque units, with s = (M/dt)·v + τ (the torque that would stop every joint in
one step) and r = s + τ_f, the objective is ½·rᵀ·M⁻¹·r up to a constant factor and
v⁺ = dt·M⁻¹·r. Its KKT conditions: each joint either ends the step at rest
(v⁺_i = 0, |τ_f,i| ≤ b_i) or has τ_f,i = −b_i·sign(v⁺_i).

The solver is a primal active-set method on the box, exact in finitely many
iterations. With W the joints held at a bound (τ_f,W = σ_W·b_W, σ = ±1) and F the
others, the optimum on that face has v⁺_F = 0, so r = M_{:,W}·ν_W with
ν_W = M_WW⁻¹·r_W: only principal submatrices of M are ever factorised (Cholesky),
never M⁻¹. A face optimum outside the box is approached up to the first bound it
hits (that joint joins W); at a face optimum, a joint of W whose friction would
push along its new velocity (σ_i·ν_i > 0) leaves W. The start is the box
projection of the unconstrained optimum τ_f = −s, which is already the answer
for one joint and for a diagonal M.

The velocities after the step come with the answer: v⁺ = dt·M⁻¹·r = dt·ν, with ν = ν_W on
the held joints and 0 on the others, so a joint that ends the step at rest has v⁺ exactly 0
(no round-off from a second solve with M, no creep of a stuck joint);
:func:`stepped_velocities` reads them.

For n = 1 the answer is docs/model.md §4's formula, τ_f = −sign(τ_stop)·min(|τ_stop|, b),
computed by :func:`stop_friction`, the one place it is written: the single-joint
step calls it too, so the single-joint results are bit-identical.

:func:`clip_friction` allocates its result; hot loops call :func:`clip_friction_into`
with a preallocated :class:`FrictionWork`-sized scratch array (no allocation).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.extending import overload

from frictionsim.errors import ConfigurationError
from frictionsim.vector_checks import DTYPE_MESSAGE, check_float64

#: Most joints a problem may have (scratch arrays are sized for it).
MAX_JOINTS = 32
#: Where the active set the last solve on a scratch array ended with is kept: each joint's
#: side (+1 or −1 at a bound, 0 inside), then the n it was solved for (0: none kept). Read by
#: :func:`clip_friction_warm_into` only.
_ACTIVE_SET = MAX_JOINTS * MAX_JOINTS + 7 * MAX_JOINTS
_ACTIVE_SET_N = _ACTIVE_SET + MAX_JOINTS
#: Scratch doubles :func:`clip_friction_into` needs.
WORK_SIZE = _ACTIVE_SET_N + 1
#: Where ν (rad/s², one per joint) lies in :func:`clip_friction_into`'s scratch, after the
#: Cholesky factor and two other vectors: :func:`stepped_velocities` reads it there.
_NU = MAX_JOINTS * MAX_JOINTS + 2 * MAX_JOINTS
#: :func:`clip_friction_into`'s results when it has no exact answer (a count otherwise).
NOT_CONVERGED = -1
BAD_SIZES = -2


@njit(cache=True, inline="always")
def stop_friction(inertia: float, tau: float, v: float, budget: float, dt: float) -> float:
    """One joint (docs/model.md §4): friction opposing the torque that would stop it within the step,
    up to the budget. τ_stop = (I/dt)·v + τ; τ_f = −sign(τ_stop)·min(|τ_stop|, b) (N·m)."""
    tau_stop = (inertia / dt) * v + tau
    return -np.sign(tau_stop) * min(abs(tau_stop), budget)


@njit(cache=True, inline="always")
def _cholesky_rows(M: np.ndarray, idx: np.ndarray, first: int, k: int, chol: np.ndarray) -> None:
    """Rows ``first`` … k−1 of the Cholesky factor A = L·Lᵀ of the principal submatrix
    A = M[idx[:k], idx[:k]] (SPD), L row-major in ``chol`` (rows of MAX_JOINTS). Row a reads
    only rows ≤ a, so rows before ``first``, factored for the same leading indices, stay."""
    for a in range(first, k):
        ia = int(idx[a])
        for c in range(a + 1):
            total = M[ia, int(idx[c])]
            for e in range(c):
                total -= chol[a * MAX_JOINTS + e] * chol[c * MAX_JOINTS + e]
            if a == c:
                chol[a * MAX_JOINTS + a] = np.sqrt(total)
            else:
                chol[a * MAX_JOINTS + c] = total / chol[c * MAX_JOINTS + c]


@njit(cache=True, inline="always")
def _cholesky_solve(k: int, chol: np.ndarray, x: np.ndarray) -> None:
    """x ← A⁻¹·x with A's factor L (k rows) in ``chol`` (:func:`_cholesky_rows`)."""
    for a in range(k):
        total = x[a]
        for e in range(a):
            total -= chol[a * MAX_JOINTS + e] * x[e]
        x[a] = total / chol[a * MAX_JOINTS + a]
    for a in range(k - 1, -1, -1):
        total = x[a]
        for e in range(a + 1, k):
            total -= chol[e * MAX_JOINTS + a] * x[e]
        x[a] = total / chol[a * MAX_JOINTS + a]


@njit(cache=True, inline="always")
def _solve_face(M: np.ndarray, s: np.ndarray, b: np.ndarray, held: np.ndarray,
                side: np.ndarray, n: int, out: np.ndarray, nu: np.ndarray,
                chol: np.ndarray, idx: np.ndarray, k: int, factored: int,
                rhs: np.ndarray) -> None:
    """The face optimum: out = τ_f with τ_f,W = side·b on the held joints W = idx[:k] and
    v⁺_F = 0; nu = ν (0 on F). The factor of M_WW is kept from the last face for its first
    ``factored`` rows (the joints held then and still held, in the same order)."""
    _cholesky_rows(M, idx, factored, k, chol)
    # ν_W = M_WW⁻¹·(s_W + side_W·b_W)
    for a in range(k):
        i = int(idx[a])
        rhs[a] = s[i] + side[i] * b[i]
    _cholesky_solve(k, chol, rhs)
    for i in range(n):
        nu[i] = 0.0
    for a in range(k):
        nu[int(idx[a])] = rhs[a]
    for i in range(n):
        if held[i] != 0.0:
            out[i] = side[i] * b[i]
        else:
            r = 0.0
            for a in range(k):
                r += M[i, int(idx[a])] * rhs[a]
            out[i] = r - s[i]


@njit(cache=True)
def clip_friction_into(mass_matrix: np.ndarray, tau: np.ndarray, v: np.ndarray,
                       budget: np.ndarray, dt: float, out: np.ndarray, work: np.ndarray) -> int:
    """:func:`clip_friction` into ``out`` (length n) with scratch ``work`` (≥ :data:`WORK_SIZE`
    doubles); returns the number of active-set iterations (0 for one joint), :data:`NOT_CONVERGED`
    when the active set cycled (``out`` feasible, maybe not optimal), or :data:`BAD_SIZES`
    (nothing read or written) when n is not in 1…MAX_JOINTS or an array does not fit n. It
    raises nothing, so a C callback may call it: the caller checks the result. It starts from
    the box projection of τ_f = −s, whatever ``work`` held before."""
    return _clip_friction(mass_matrix, tau, v, budget, dt, out, work, False)


@njit(cache=True)
def clip_friction_warm_into(mass_matrix: np.ndarray, tau: np.ndarray, v: np.ndarray,
                            budget: np.ndarray, dt: float, out: np.ndarray,
                            work: np.ndarray) -> int:
    """:func:`clip_friction_into`, started from the active set the last solve on ``work``
    ended with (the joints at a bound and their sides; the others from τ_f = −s clipped to
    their budgets), for a simulation that solves one problem a step with its own ``work``.
    The optimum is the same (unique: the objective is strictly convex), to round-off; the path
    is shorter where the joints that slip stay the same from step to step while the box
    projection of −s holds others that then stick: on a standing biped (a floating base,
    14 coupled hinges) 1.06 iterations a step instead of 4.5. Call :func:`forget_active_set`
    when the simulation restarts, so that a run does not depend on the one before."""
    return _clip_friction(mass_matrix, tau, v, budget, dt, out, work, True)


@njit(cache=True, inline="always")
def forget_active_set(work: np.ndarray) -> None:
    """The next :func:`clip_friction_warm_into` on ``work`` starts cold."""
    work[_ACTIVE_SET_N] = 0.0


@njit(cache=True, inline="always")
def _clip_friction(mass_matrix: np.ndarray, tau: np.ndarray, v: np.ndarray,
                   budget: np.ndarray, dt: float, out: np.ndarray, work: np.ndarray,
                   warm: bool) -> int:
    n = tau.shape[0]
    if not (1 <= n <= MAX_JOINTS and mass_matrix.shape[0] == n and mass_matrix.shape[1] == n
            and v.shape[0] == n and budget.shape[0] == n and out.shape[0] >= n
            and work.shape[0] >= WORK_SIZE):
        return BAD_SIZES
    if n == 1:
        out[0] = stop_friction(mass_matrix[0, 0], tau[0], v[0], budget[0], dt)
        return 0
    chol = work[: MAX_JOINTS * MAX_JOINTS]
    base = MAX_JOINTS * MAX_JOINTS
    s = work[base: base + n]
    side = work[base + MAX_JOINTS: base + MAX_JOINTS + n]
    nu = work[_NU: _NU + n]
    target = work[base + 3 * MAX_JOINTS: base + 3 * MAX_JOINTS + n]
    rhs = work[base + 4 * MAX_JOINTS: base + 4 * MAX_JOINTS + n]
    held = work[base + 5 * MAX_JOINTS: base + 5 * MAX_JOINTS + n]  # 1.0: at a bound
    idx = work[base + 6 * MAX_JOINTS: base + 6 * MAX_JOINTS + n]  # held joints, in order
    last = work[_ACTIVE_SET: _ACTIVE_SET + n]
    warm = warm and work[_ACTIVE_SET_N] == n
    work[_ACTIVE_SET_N] = 0.0  # kept again once this solve converges
    for i in range(n):
        row = 0.0
        for j in range(n):
            row += mass_matrix[i, j] * v[j]
        s[i] = row / dt + tau[i]
        if warm and budget[i] > 0.0:
            # From the last active set: any feasible start with its held joints at their
            # bounds leads the primal active set to the same optimum.
            if last[i] != 0.0:
                held[i], side[i], out[i] = 1.0, last[i], last[i] * budget[i]
            else:
                held[i], side[i], out[i] = 0.0, 0.0, min(max(-s[i], -budget[i]), budget[i])
        # Else from the box projection of the unconstrained optimum τ_f = −s.
        elif -s[i] > budget[i]:
            held[i], side[i], out[i] = 1.0, 1.0, budget[i]
        elif -s[i] < -budget[i]:
            held[i], side[i], out[i] = 1.0, -1.0, -budget[i]
        else:
            held[i], side[i], out[i] = 0.0, 0.0, -s[i]
    # The held joints in the order of the factor of M_WW: those without a budget (a floating
    # base, passive joints) first, as they are never released, then the others; a joint that
    # becomes held is appended (one new row), a released one invalidates the rows from its
    # place on, so each face costs O(k²) after the first instead of a new factorisation.
    k = 0
    for zero_budget in (True, False):
        for i in range(n):
            if held[i] != 0.0 and (budget[i] == 0.0) == zero_budget:
                idx[k] = i
                k += 1
    factored = 0
    for iteration in range(1, 10 * n + 20):
        _solve_face(mass_matrix, s, budget, held, side, n, target, nu, chol, idx, k, factored,
                    rhs)
        factored = k
        # Step from out towards the face optimum, up to the first bound it crosses.
        step = 1.0
        block = -1
        for i in range(n):
            if held[i] != 0.0:
                continue
            d = target[i] - out[i]
            if target[i] > budget[i] and d > 0.0:
                alpha = (budget[i] - out[i]) / d
            elif target[i] < -budget[i] and d < 0.0:
                alpha = (-budget[i] - out[i]) / d
            else:
                continue
            if alpha < step:
                step, block = alpha, i
        if block >= 0:
            for i in range(n):
                if held[i] == 0.0:
                    out[i] += step * (target[i] - out[i])
            held[block] = 1.0
            side[block] = 1.0 if target[block] > budget[block] else -1.0
            out[block] = side[block] * budget[block]
            idx[k] = block
            k += 1
            continue
        for i in range(n):
            out[i] = target[i]
        # At the face optimum: release the held joint whose friction most pushes along ν.
        worst = -1
        excess = 0.0
        for i in range(n):
            if held[i] != 0.0 and budget[i] > 0.0 and side[i] * nu[i] > excess:
                excess, worst = side[i] * nu[i], i
        if worst < 0:
            for i in range(n):
                last[i] = side[i] if held[i] != 0.0 else 0.0
            work[_ACTIVE_SET_N] = n
            return iteration
        held[worst] = 0.0
        side[worst] = 0.0
        place = 0
        while int(idx[place]) != worst:
            place += 1
        for a in range(place, k - 1):
            idx[a] = idx[a + 1]
        k -= 1
        factored = place
    return NOT_CONVERGED  # degenerate cycling: out is feasible but maybe not optimal


@njit(cache=True, inline="always")
def stepped_velocities(work: np.ndarray, n: int, dt: float, out: np.ndarray) -> None:
    """The velocities v⁺ = dt·ν (rad/s) at the end of the step of the last
    :func:`clip_friction_into` call on ``work`` that converged with n ≥ 2 joints (module
    docstring): exactly 0 for the joints it leaves at rest."""
    nu = work[_NU:]
    for i in range(n):
        out[i] = dt * nu[i]


@njit(cache=True)
def _mass_matrix_problem(mass_matrix: np.ndarray) -> int:
    """0 when ``mass_matrix`` is a mass matrix (finite, symmetric to 1e-9, positive definite by
    a Cholesky factorisation); else 1 (not finite), 2 (not symmetric), 3 (not positive
    definite). An indefinite matrix has no friction solution: the active set would return
    numbers that mean nothing."""
    n = mass_matrix.shape[0]
    scale = 0.0
    for a in range(n):
        for b in range(n):
            if not np.isfinite(mass_matrix[a, b]):
                return 1
            scale = max(scale, abs(mass_matrix[a, b]))
    for a in range(n):
        for b in range(a):
            if abs(mass_matrix[a, b] - mass_matrix[b, a]) > 1e-9 * scale:
                return 2
    factor = np.zeros((n, n))
    for a in range(n):
        for b in range(a + 1):
            total = mass_matrix[a, b]
            for k in range(b):
                total -= factor[a, k] * factor[b, k]
            if a == b:
                if not total > 0.0:
                    return 3
                factor[a, a] = np.sqrt(total)
            else:
                factor[a, b] = total / factor[b, b]
    return 0


def clip_friction(mass_matrix: np.ndarray, tau: np.ndarray, v: np.ndarray, budget: np.ndarray,
                  dt: float) -> np.ndarray:
    """Friction torques τ_f (N·m, length n ≤ MAX_JOINTS = 32) of docs/model.md §10's box-constrained problem.

    mass_matrix: M (n × n, SPD, kg·m²); tau: every torque but friction (N·m); v: joint
    velocities (rad/s); budget: b_i ≥ 0 (N·m); dt: the step (s). Exact (see the module
    docstring); for n = 1 exactly docs/model.md §4's τ_f. ValueError when the sizes do not fit
    (n > 32, M not n × n…) or dt is not positive, and when the active set does not converge.
    Called from Python, arrays other than float64 are refused by name (ConfigurationError);
    called from a user's ``@njit`` code, it is the compiled solve itself.
    """
    for name, array in (("mass_matrix", mass_matrix), ("tau", tau), ("v", v),
                        ("budget", budget)):
        if not (isinstance(array, np.ndarray) and array.dtype == np.float64):
            got = array.dtype if isinstance(array, np.ndarray) else type(array).__name__
            raise ConfigurationError(f"clip_friction: {name}: {DTYPE_MESSAGE}; got {got}")
    return _clip_friction_checked(mass_matrix, tau, v, budget, dt)


@overload(clip_friction, jit_options={"cache": True})
def _clip_friction_compiled(mass_matrix, tau, v, budget, dt):
    return lambda mass_matrix, tau, v, budget, dt: _clip_friction_checked(
        mass_matrix, tau, v, budget, dt)


@njit(cache=True)
def _clip_friction_checked(mass_matrix: np.ndarray, tau: np.ndarray, v: np.ndarray,
                           budget: np.ndarray, dt: float) -> np.ndarray:
    """:func:`clip_friction`, compiled: the float64 check at compile time, the values' at run
    time."""
    for array in (tau, v, budget):
        check_float64(array)
    check_float64(mass_matrix)
    n = tau.shape[0]
    if n > MAX_JOINTS:
        raise ConfigurationError("clip_friction takes at most MAX_JOINTS = 32 joints")
    if not (dt > 0.0 and np.isfinite(dt)):
        raise ConfigurationError("clip_friction: dt must be a positive, finite step (s)")
    for i in range(n):
        if not (np.isfinite(tau[i]) and np.isfinite(v[i]) and np.isfinite(budget[i])):
            raise ConfigurationError("clip_friction: tau, v or budget holds NaN or infinity")
        if budget[i] < 0.0:
            raise ConfigurationError("clip_friction: budget must be ≥ 0 (N·m)")
    if mass_matrix.shape[0] == n and mass_matrix.shape[1] == n:
        problem = _mass_matrix_problem(mass_matrix)
        if problem == 1:
            raise ConfigurationError("clip_friction: mass_matrix holds NaN or infinity")
        if problem == 2:
            raise ConfigurationError("clip_friction: mass_matrix is not symmetric")
        if problem == 3:
            raise ConfigurationError("clip_friction: mass_matrix is not positive definite (check "
                                     "the model's inertias and armature)")
    out = np.empty(n)
    work = np.empty(WORK_SIZE)
    status = clip_friction_into(mass_matrix, tau, v, budget, dt, out, work)
    if status == BAD_SIZES:
        raise ConfigurationError("clip_friction: mass_matrix must be n × n and v, budget of length n "
                                 "(n = len(tau), 1 to 32)")
    if status == NOT_CONVERGED:
        raise ConfigurationError("clip_friction: the active-set solve did not converge (a degenerate "
                                 "problem: check that M is symmetric positive definite)")
    return out

