"""Friction-budget clipping for n coupled joints (docs/model.md §10), a world per thread: the
primal active set of :mod:`frictionsim.solvers.joint_friction`, step for step.

    τ_f = argmin over |τ_f,i| ≤ b_i of ½·v⁺ᵀ·M·v⁺,   v⁺ = v + dt·M⁻¹·(τ + τ_f)

With s = (M/dt)·v + τ, held joints W at a bound (τ_f,W = σ_W·b_W) and v⁺ = 0 on the others,
each face's optimum solves M_WW·ν_W = s_W + σ_W·b_W by a Cholesky factor kept row by row from
face to face; a face optimum outside the box is approached up to the first bound it hits, and
at a face optimum the held joint whose friction pushes most along ν is released. The start is
the box projection of −s, or the last step's active set (``warm``: the same optimum, fewer
iterations when the joints that slip stay the same). One joint: docs/model.md §4's
:func:`stop_friction`.

Memory: one world's rows (views of the engine's arrays): M (nv, nv), τ, v, budget and the
answer (nv), and ``work`` (:func:`~frictionsim.solvers.batched.memory.clip_work_size`): the
factor, s, σ, ν, the face's optimum, the right-hand side, the held flags and their order,
the active set kept for the next step and its size.
"""

from __future__ import annotations

from typing import Any

import warp as wp

from frictionsim.solvers.batched.laws import sign

#: :func:`clip_friction`'s result when the active set cycled (the answer feasible, maybe not
#: optimal); a count of iterations otherwise.
NOT_CONVERGED = -1


@wp.func
def stop_friction(inertia: Any, tau: Any, v: Any, budget: Any, dt: Any):
    """One joint: −sign(τ_stop)·min(|τ_stop|, b), τ_stop = (I/dt)·v + τ (N·m)."""
    tau_stop = (inertia / dt) * v + tau
    return -sign(tau_stop) * wp.min(wp.abs(tau_stop), budget)


@wp.func
def _cholesky_rows(mass: wp.array2d(dtype=Any), work: wp.array(dtype=Any), nv: int, idx: int,
                   first: int, k: int):
    """Rows ``first`` … k−1 of the factor L of M restricted to the held joints work[idx:idx+k]
    (row-major, rows of nv, at work[0:]); the rows before ``first`` are kept."""
    for a in range(first, k):
        ia = int(work[idx + a])
        for c in range(a + 1):
            total = mass[ia, int(work[idx + c])]
            for f in range(c):
                total = total - work[a * nv + f] * work[c * nv + f]
            if a == c:
                work[a * nv + a] = wp.sqrt(total)
            else:
                work[a * nv + c] = total / work[c * nv + c]


@wp.func
def _cholesky_solve(work: wp.array(dtype=Any), nv: int, k: int, x: int):
    """work[x:x+k] ← A⁻¹·work[x:x+k] with A's factor at work[0:]."""
    for a in range(k):
        total = work[x + a]
        for f in range(a):
            total = total - work[a * nv + f] * work[x + f]
        work[x + a] = total / work[a * nv + a]
    for step in range(k):
        a = k - 1 - step
        total = work[x + a]
        for f in range(a + 1, k):
            total = total - work[f * nv + a] * work[x + f]
        work[x + a] = total / work[a * nv + a]


@wp.func
def clip_friction(mass: wp.array2d(dtype=Any), tau: wp.array(dtype=Any),
                  v: wp.array(dtype=Any), budget: wp.array(dtype=Any), dt: Any,
                  out: wp.array(dtype=Any), work: wp.array(dtype=Any), nv: int, warm: bool):
    """One world's friction torques into ``out`` (its rows of the arrays above):
    :func:`frictionsim.solvers.joint_friction.clip_friction_into`, or ``clip_friction_warm_into``
    when ``warm``; the iterations it took (0 for one joint),
    :data:`NOT_CONVERGED` when the active set cycled. ν is left in work for
    :func:`stepped_velocity`."""
    if nv == 1:
        out[0] = stop_friction(mass[0, 0], tau[0], v[0], budget[0], dt)
        return 0
    zero = dt * type(dt)(0.0)
    one = type(dt)(1.0)
    base = nv * nv
    s = base
    side = base + nv
    nu = base + 2 * nv
    target = base + 3 * nv
    rhs = base + 4 * nv
    held = base + 5 * nv
    idx = base + 6 * nv
    last = base + 7 * nv
    kept = base + 8 * nv
    use_last = warm and int(work[kept]) == nv
    work[kept] = zero
    for i in range(nv):
        row = zero
        for c in range(nv):
            row = row + mass[i, c] * v[c]
        work[s + i] = row / dt + tau[i]
        minus_s = -work[s + i]
        b = budget[i]
        if use_last and b > zero:
            if work[last + i] != zero:
                work[held + i] = one
                work[side + i] = work[last + i]
                out[i] = work[last + i] * b
            else:
                work[held + i] = zero
                work[side + i] = zero
                out[i] = wp.min(wp.max(minus_s, -b), b)
        elif minus_s > b:
            work[held + i] = one
            work[side + i] = one
            out[i] = b
        elif minus_s < -b:
            work[held + i] = one
            work[side + i] = -one
            out[i] = -b
        else:
            work[held + i] = zero
            work[side + i] = zero
            out[i] = minus_s
    # the held joints in the factor's order: those without a budget (never released) first
    k = int(0)
    for i in range(nv):
        if work[held + i] != zero and budget[i] == zero:
            work[idx + k] = type(dt)(i)
            k += 1
    for i in range(nv):
        if work[held + i] != zero and budget[i] != zero:
            work[idx + k] = type(dt)(i)
            k += 1
    factored = int(0)
    for iteration in range(1, 10 * nv + 20):
        # the face optimum: ν_W = M_WW⁻¹·(s_W + σ_W·b_W), τ_f,F = (M·ν − s)_F
        _cholesky_rows(mass, work, nv, idx, factored, k)
        for a in range(k):
            i = int(work[idx + a])
            work[rhs + a] = work[s + i] + work[side + i] * budget[i]
        _cholesky_solve(work, nv, k, rhs)
        for i in range(nv):
            work[nu + i] = zero
        for a in range(k):
            work[nu + int(work[idx + a])] = work[rhs + a]
        for i in range(nv):
            if work[held + i] != zero:
                work[target + i] = work[side + i] * budget[i]
            else:
                r = zero
                for a in range(k):
                    r = r + mass[i, int(work[idx + a])] * work[rhs + a]
                work[target + i] = r - work[s + i]
        factored = k
        # from out towards the face optimum, up to the first bound it crosses
        step = one
        block = int(-1)
        for i in range(nv):
            if work[held + i] == zero:
                d = work[target + i] - out[i]
                alpha = one
                crosses = bool(False)
                if work[target + i] > budget[i] and d > zero:
                    alpha = (budget[i] - out[i]) / d
                    crosses = True
                elif work[target + i] < -budget[i] and d < zero:
                    alpha = (-budget[i] - out[i]) / d
                    crosses = True
                if crosses and alpha < step:
                    step = alpha
                    block = i
        if block >= 0:
            for i in range(nv):
                if work[held + i] == zero:
                    out[i] = out[i] + step * (work[target + i] - out[i])
            work[held + block] = one
            if work[target + block] > budget[block]:
                work[side + block] = one
            else:
                work[side + block] = -one
            out[block] = work[side + block] * budget[block]
            work[idx + k] = type(dt)(block)
            k += 1
            continue
        for i in range(nv):
            out[i] = work[target + i]
        # at the face optimum: release the held joint whose friction most pushes along ν
        worst = int(-1)
        excess = zero
        for i in range(nv):
            push = work[side + i] * work[nu + i]
            if work[held + i] != zero and budget[i] > zero and push > excess:
                excess = push
                worst = i
        if worst < 0:
            for i in range(nv):
                if work[held + i] != zero:
                    work[last + i] = work[side + i]
                else:
                    work[last + i] = zero
            work[kept] = type(dt)(nv)
            return iteration
        work[held + worst] = zero
        work[side + worst] = zero
        place = int(0)
        while int(work[idx + place]) != worst:
            place += 1
        for a in range(place, k - 1):
            work[idx + a] = work[idx + a + 1]
        k -= 1
        factored = place
    return NOT_CONVERGED


@wp.func
def stepped_velocity(work: wp.array(dtype=Any), nv: int, i: int, dt: Any):
    """v⁺_i = dt·ν_i (rad/s) of the last converged :func:`clip_friction` on ``work`` with
    nv ≥ 2 joints: exactly 0 for a joint it leaves at rest."""
    return dt * work[nv * nv + 2 * nv + i]


@wp.func
def forget_active_set(work: wp.array(dtype=Any), nv: int):
    """The next warm :func:`clip_friction` on ``work`` starts cold."""
    work[nv * nv + 8 * nv] = type(work[0])(0.0)
