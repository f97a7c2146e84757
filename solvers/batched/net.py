"""A learned actuator's network, as a Warp function: :func:`frictionsim.actuator_net.net_torque`
on the same flat vector (one row of ``nets`` per servo, the layout of :mod:`frictionsim.actuator_net`).

Every value goes to its own place of the scratch ``work`` (world e, servo j; the input x, the
standardised input, each layer's sums and its outputs), each written once, the sums
accumulated there with ``atomic_add``: Warp's reverse mode differentiates that exactly, where a
sum carried in a local variable through a loop of data-dependent length, or a value
overwritten in place, would not be (it keeps no value per iteration). The training through the rollout
(:mod:`frictionsim.solvers.batched.rollout`) takes the network's gradient through this very
function. ``work`` needs :func:`~frictionsim.solvers.batched.memory.net_work_size` entries per
servo.
"""

from __future__ import annotations

from typing import Any

import warp as wp

from frictionsim.solvers.batched.memory import MAX_LAYERS


@wp.func
def net_torque(nets: wp.array2d(dtype=Any), j: int, work: wp.array3d(dtype=Any), e: int):
    """The torque (N·m) of servo j's network for the input x already in ``work[e, j, :n]``
    (:func:`frictionsim.actuator_net.net_torque`): standardised and clipped, through the
    tanh layers, scaled and clipped to the authority."""
    n = int(nets[j, 0])
    layers = int(nets[j, 1])
    authority = nets[j, 2 + layers]
    p = 3 + layers
    mean = p
    std = p + n
    low = p + 2 * n
    high = p + 3 * n
    p += 4 * n
    mean_out = nets[j, p]
    scale_out = nets[j, p + 1]
    p += 2
    zero = type(mean_out)(0.0)
    for i in range(n):
        z = (work[e, j, i] - nets[j, mean + i]) / nets[j, std + i]
        work[e, j, n + i] = wp.min(wp.max(z, nets[j, low + i]), nets[j, high + i])
    width = n
    src = n
    # unrolled (a constant trip count): the offsets carried from layer to layer are then
    # plain values, which the reverse mode replays correctly
    for layer in range(MAX_LAYERS):
        if layer < layers:
            h = int(nets[j, 2 + layer])
            bias = p + h * width
            sums = src + width
            for r in range(h):
                work[e, j, sums + r] = zero
            for r in range(h):
                wp.atomic_add(work, e, j, sums + r, nets[j, bias + r])
                row = p + r * width
                for c in range(width):
                    wp.atomic_add(work, e, j, sums + r, nets[j, row + c] * work[e, j, src + c])
            for r in range(h):
                work[e, j, sums + h + r] = wp.tanh(work[e, j, sums + r])
            p = bias + h
            width = h
            src = sums + h
    out = src + width
    work[e, j, out] = nets[j, p + width]
    for c in range(width):
        wp.atomic_add(work, e, j, out, nets[j, p + c] * work[e, j, src + c])
    tau = mean_out + scale_out * work[e, j, out]
    if authority >= zero:
        tau = wp.min(wp.max(tau, -authority), authority)
    return tau
