"""A learned actuator torque: a small multilayer perceptron, compiled (Hwangbo et al. 2019).

The network maps what the servo has seen lately to the torque it applies to its joint (N·m)::

    x = [e(k), e(k − s), …, e(k − (H − 1)·s),  v(k), v(k − s), …,  kp,  enable(k)]

``e = goal − q`` the position error (rad), ``v`` the joint velocity (rad/s), both at control
periods k, k − s, … (:data:`HISTORY` samples :data:`STRIDE` periods apart; before the first
period, the first), ``kp`` the firmware gain, ``enable`` the torque-enable flag (0/1): the
gain and the enable are inputs, not multipliers, since a disabled servo still has its
gearbox's friction. The input is standardised and then clipped to the range the network
was trained on, so a state outside it is answered as at the edge of what it knows::

    z_i = clip((x_i − mean_i)/std_i, low_i, high_i)
    h_1 = tanh(W_1·z + b_1),  …,  h_L = tanh(W_L·h_{L−1} + b_L)
    τ   = mean_out + scale_out·(w_out·h_L + b_out),   then clipped to ±authority if ≥ 0

(authority < 0: unbounded, a pure network; 0: no residual at all, the physical model alone)

The whole network is one flat float64 vector (layout below), so it travels into compiled
loops as ``theta`` does. :func:`net_features` builds x from arrays of the history, the
same code for training labels and closed-loop rollouts; :func:`net_torque` evaluates the
network without allocating.

Vector layout (``n`` inputs, ``L`` hidden layers of widths ``h_1 … h_L``)::

    [n, L, h_1 … h_L, authority,
     mean (n), std (n), low (n), high (n), mean_out, scale_out,
     W_1 (h_1 × n, row-major), b_1 (h_1), …, W_L, b_L, w_out (h_L), b_out]
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from frictionsim.errors import ConfigurationError
from frictionsim.layout import NET_HISTORY, NET_STRIDE

#: Samples of the error and velocity history, and the control periods between two of them
#: (the servo record keeps them: layout.SERVO_ERRORS, SERVO_VELOCITIES).
HISTORY = NET_HISTORY
STRIDE = NET_STRIDE
#: Inputs: the error history, the velocity history, the gain, the enable flag.
N_INPUTS = 2 * HISTORY + 2
#: Where the gain sits among the inputs.
GAIN_INPUT = 2 * HISTORY
#: Widest hidden layer the compiled evaluation takes (its scratch memory).
MAX_WIDTH = 256
INPUT_NAMES = tuple([f"error[k-{j * STRIDE}]" for j in range(HISTORY)]
                    + [f"velocity[k-{j * STRIDE}]" for j in range(HISTORY)]
                    + ["kp", "enable"])


@njit(cache=True, inline="always")
def net_features(error: np.ndarray, velocity: np.ndarray, k: int, kp: float, enable: float,
                 out: np.ndarray) -> None:
    """The network's input at control period k into ``out`` (:data:`N_INPUTS`): the error
    (rad) and velocity (rad/s) of periods k, k − STRIDE, … (index 0 before the first),
    then ``kp`` and ``enable``."""
    for j in range(HISTORY):
        i = max(k - j * STRIDE, 0)
        out[j] = error[i]
        out[HISTORY + j] = velocity[i]
    out[2 * HISTORY] = kp
    out[2 * HISTORY + 1] = enable


@njit(cache=True)
def net_torque(net: np.ndarray, x: np.ndarray, work: np.ndarray) -> float:
    """The torque (N·m) of network ``net`` (the flat vector of the module docstring) for the
    input ``x``; ``work``: scratch of at least 2·MAX_WIDTH doubles."""
    n = int(net[0])
    layers = int(net[1])
    authority = net[2 + layers]
    p = 3 + layers
    mean = p
    std = p + n
    low = p + 2 * n
    high = p + 3 * n
    p += 4 * n
    mean_out = net[p]
    scale_out = net[p + 1]
    p += 2
    # the input, standardised and held inside the trained range
    for i in range(n):
        z = (x[i] - net[mean + i]) / net[std + i]
        work[i] = min(max(z, net[low + i]), net[high + i])
    width = n
    src = 0
    dst = MAX_WIDTH
    for layer in range(layers):
        h = int(net[2 + layer])
        bias = p + h * width
        for r in range(h):
            acc = net[bias + r]
            row = p + r * width
            for c in range(width):
                acc += net[row + c] * work[src + c]
            work[dst + r] = math.tanh(acc)
        p = bias + h
        width = h
        src, dst = dst, src
    y = net[p + width]
    for c in range(width):
        y += net[p + c] * work[src + c]
    tau = mean_out + scale_out * y
    if authority >= 0.0:
        tau = min(max(tau, -authority), authority)
    return tau


def pack_net(weights: list[np.ndarray], biases: list[np.ndarray], mean: np.ndarray,
             std: np.ndarray, low: np.ndarray, high: np.ndarray, mean_out: float,
             scale_out: float, authority: float | None = None) -> np.ndarray:
    """The flat vector of a network: ``weights[i]`` (inputs × outputs of layer i, as scikit-learn
    keeps them), ``biases[i]``, the last layer of one output; the input's standardisation
    and clipping range; the output's scale; ``authority`` (N·m, None: unbounded). ValueError
    when the shapes disagree or a layer is wider than :data:`MAX_WIDTH`."""
    n = len(mean)
    if not (len(std) == len(low) == len(high) == n) or len(weights) != len(biases) \
            or len(weights) < 2:
        raise ConfigurationError("a network needs one hidden layer at least, and n-long input arrays")
    hidden = [w.shape[1] for w in weights[:-1]]
    width = n
    for w, b in zip(weights, biases):
        if w.shape[0] != width or b.shape != (w.shape[1],):
            raise ConfigurationError(f"layer shapes disagree: {w.shape} after width {width}")
        width = w.shape[1]
    if width != 1 or max(hidden + [n]) > MAX_WIDTH:
        raise ConfigurationError(f"one output and layers of at most {MAX_WIDTH} units")
    if not (np.all(np.asarray(std) > 0) and scale_out > 0
            and (authority is None or authority >= 0)):
        raise ConfigurationError("the standard deviations and the output scale must be positive, the "
                                 "authority ≥ 0")
    bound = -1.0 if authority is None else authority
    parts = [np.array([n, len(hidden), *hidden, bound], dtype=float),
             np.asarray(mean, float), np.asarray(std, float), np.asarray(low, float),
             np.asarray(high, float), np.array([mean_out, scale_out], dtype=float)]
    for w, b in zip(weights, biases):
        parts += [np.ascontiguousarray(np.asarray(w, float).T).ravel(), np.asarray(b, float)]
    return np.concatenate(parts)


def with_authority(net: np.ndarray, authority: float | None) -> np.ndarray:
    """A copy of a network vector with another authority (N·m; None: unbounded)."""
    out = net.copy()
    out[2 + int(net[1])] = -1.0 if authority is None else authority
    return out


def zero_output(net: np.ndarray) -> np.ndarray:
    """A copy of a network vector whose output is 0 for every input: its output layer
    (w_out, b_out) and mean_out at 0. A hybrid's residual so zeroed is its physics alone."""
    out = np.asarray(net, dtype=float).copy()
    n, layers = int(out[0]), int(out[1])
    width = int(out[1 + layers])
    out[3 + layers + 4 * n] = 0.0
    out[-(width + 1):] = 0.0
    return out


def net_size(n_inputs: int, hidden: tuple[int, ...]) -> int:
    """Length of the flat vector of a network with these inputs and hidden widths."""
    size = 3 + len(hidden) + 4 * n_inputs + 2
    width = n_inputs
    for h in (*hidden, 1):
        size += h * width + h
        width = h
    return size
