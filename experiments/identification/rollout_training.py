"""Training a learned actuator through its own closed-loop rollout on bench logs (torch).

A network trained on torque labels predicts each period's torque well and still drifts once it
drives the joint: an error it makes is carried by every later period, which the labels never
show it (docs/results.md measures it: 9 mrad within 0.1 s of a logged state, 87 over a whole
log). So, after the supervised stage, its weights are trained on what it is judged on: the
position error of short closed-loop rollouts (multiple shooting). Each window of ``horizon``
control periods starts from the logged state, the servo's records reset there as at the start
of a log, and runs the learned actuator over its physics (the bare joint of a ``net``, the
physical model of a ``hybrid``) on the bench; the loss is the mean |reported − logged| position
over the window, differentiated through the whole window by backpropagation.

Each step is Adam's (learning rate 2·10⁻³), its gradient first scaled down to
:attr:`RolloutTraining.gradient_clip` times the running mean of the gradient norms when it
exceeds that: through windows of hundreds of periods an occasional batch's gradient stands
far above the rest (2–5 % of the steps were clipped on the campaigns of docs/results.md), and
without the clipping a training through 400-period windows was thrown off in one epoch and
had not recovered 50 epochs later.

The rollout is the batched servos' (:func:`frictionsim.solvers.batched.rollout.bench_rollout`,
float64, torch autograd over Warp's reverse mode): the same kernels every batched engine runs,
held to the Numba bank to 1e-12 rad (tests/test_batched_bank.py), with the bench's
semi-implicit or reference step with friction clipping (docs/model.md §1, §4), so the network
trained here is the one the compiled engines run.

The epoch kept is chosen on logs held back from the training logs (one in
:attr:`RolloutTraining.validation_every`, drawn by a seeded permutation), by the closed-loop
MAE of whole logs in the compiled engine; epoch 0 is the network it started from and, for a
hybrid, epoch −1 its physics alone (a zero residual), so the result is never worse than
either there. Never the user's held-out set.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from frictionsim.actuator_net import zero_output
from frictionsim.errors import ConfigurationError, MissingExtra
from frictionsim.layout import (
    BACKLASH,
    DT,
)
from frictionsim.learned_files import LearnedActuator
from frictionsim.logs import Log
from frictionsim.solvers.batch import PackedLogs
from frictionsim.solvers.learned_rollout import packed_errors, physics_theta


@dataclass(frozen=True)
class RolloutTraining:
    """How a network is trained through its rollout: the window (control periods) and the
    epochs, which the caller gives (the commands' defaults are ``ROLLOUT_HORIZON`` and
    ``AUTO_ROLLOUT_EPOCHS`` of :mod:`frictionsim.experiments.identification.learned`), the
    periods between two windows' starts, the windows drawn per epoch at most, Adam's learning
    rate, the windows per gradient step, every how many training logs one is held back to
    choose the epoch, and the clipping: a gradient whose norm ‖g‖ exceeds ``gradient_clip`` × m
    is scaled to that norm, m the running mean of the (clipped) norms,
    m ← 0.9 m + 0.1 min(‖g‖, gradient_clip · m), the first step's norm its start (0: never
    clipped)."""

    horizon: int
    epochs: int
    stride: int = 10
    windows_per_epoch: int = 4096
    learning_rate: float = 2e-3
    batch: int = 256
    validation_every: int = 4
    gradient_clip: float = 2.0


#: The weight of the past in the running mean of the gradient norms that clipping compares to.
NORM_MEMORY = 0.9


class StepClipping:
    """A step's gradient scaled down to ``factor`` × the running mean of the earlier steps'
    norms (:class:`RolloutTraining`); counts the steps clipped."""

    def __init__(self, factor: float):
        self.factor = float(factor)
        self.mean_norm: float | None = None
        self.clipped = 0

    def __call__(self, leaves: list) -> bool:
        """Clip the gradients of ``leaves`` in place; False (nothing changed, the running mean
        neither) when their norm is not finite: that step is not to be taken."""
        torch = import_torch()
        norm = float(torch.sqrt(sum(torch.sum(leaf.grad ** 2) for leaf in leaves
                                    if leaf.grad is not None)))
        if not math.isfinite(norm):
            return False
        limit = math.inf if self.mean_norm is None or self.factor <= 0.0 else \
            self.factor * self.mean_norm
        if norm > limit:
            for leaf in leaves:
                if leaf.grad is not None:
                    leaf.grad.mul_(limit / norm)
            self.clipped += 1
        kept = min(norm, limit)
        self.mean_norm = kept if self.mean_norm is None else \
            NORM_MEMORY * self.mean_norm + (1.0 - NORM_MEMORY) * kept
        return True


def import_torch():
    try:
        import torch
    except ImportError:
        raise MissingExtra("training through the rollout needs torch: pip install "
                           "'frictionsim[torch]' (for a CPU-only torch, first pip install torch "
                           "--index-url https://download.pytorch.org/whl/cpu)") from None
    return torch


@dataclass
class Windows:
    """A batch of windows of bench logs as float64 tensors, one row per window: goals, enable,
    logged supply (V, NaN: none) and logged positions (W × horizon), the start's velocity (W),
    each window's bench vector (W × BENCH_SIZE)."""

    goal: object
    enable: object
    supply: object
    position: object
    v0: object
    bench: object

    def __len__(self) -> int:
        return int(self.goal.shape[0])


#: The per-period columns of bench logs that :class:`LogWindows` gathers.
LOG_COLUMNS = ("goal", "enable", "supply", "position")


@dataclass
class LogWindows:
    """Windows of ``horizon`` control periods of bench logs over the logs' columns laid end to
    end (:data:`LOG_COLUMNS`, float64 tensors of every period): window w starts at period
    ``starts[w]``, in log ``logs[w]`` (bench vector ``benches[logs[w]]``), at the velocity
    ``v0[w]``. Gathered into a :class:`Windows` batch by :meth:`take`: materialised, windows of
    ``horizon`` periods every ``stride`` would hold each period horizon/stride times (462
    logs of 6 s in windows of 200 periods every 10: 289 MiB instead of 18)."""

    columns: dict
    starts: object
    logs: object
    v0: object
    benches: object
    horizon: int

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    def take(self, rows=None) -> Windows:
        """Windows ``rows`` (indices; None: all) as a :class:`Windows` batch."""
        rows = slice(None) if rows is None else rows
        periods = window_periods(self.starts[rows], self.horizon)
        return Windows(*(self.columns[name][periods] for name in LOG_COLUMNS),
                       self.v0[rows], self.benches[self.logs[rows]])


def window_periods(starts, horizon: int):
    """The periods (W × horizon, int64 tensor) of windows of ``horizon`` periods that start at
    ``starts`` (W), in columns laid end to end."""
    torch = import_torch()
    return starts[:, None] + torch.arange(horizon)[None, :]


def windows(logs: list[Log], actuator: str, horizon: int, stride: int) -> LogWindows:
    """Every window of ``horizon`` periods starting each ``stride`` periods of ``logs``; its
    start velocity the logged position's backward difference (the log's own at its start)."""
    torch = import_torch()
    packed = PackedLogs.from_logs(logs, actuator)
    starts, owners, v0 = [], [], []
    for j in range(packed.n_logs):
        a, b = int(packed.offsets[j]), int(packed.offsets[j + 1])
        dt = float(packed.bench[j][DT])
        for start in range(a, b - horizon + 1, stride):
            starts.append(start)
            owners.append(j)
            v0.append(packed.v0[j] if start == a else
                      (packed.position[start] - packed.position[start - 1]) / dt)
    if not starts:
        longest = max(int(packed.offsets[j + 1] - packed.offsets[j])
                      for j in range(packed.n_logs))
        raise ConfigurationError(f"no log is {horizon} control periods long (the longest: "
                                 f"{longest}): too short to train through the rollout on "
                                 f"windows of {horizon} periods; choose shorter ones "
                                 "(--rollout-horizon)")

    def tensor(values, dtype=torch.float64):
        return torch.as_tensor(np.asarray(values), dtype=dtype)

    return LogWindows({name: tensor(getattr(packed, name)) for name in LOG_COLUMNS},
                      tensor(starts, torch.int64), tensor(owners, torch.int64), tensor(v0),
                      tensor(packed.bench), horizon)


def rollout(theta, nets, batch: Windows):
    """The reported positions (W × horizon) of the learned actuator (physics ``theta``, the
    network vector ``nets``, 1 × width, torch) rolled out on its bench from each window's start
    (:func:`frictionsim.solvers.batched.rollout.bench_rollout`)."""
    from frictionsim.solvers.batched.rollout import bench_rollout

    return bench_rollout(theta, batch.bench, nets, batch.goal, batch.enable, batch.supply,
                         batch.position[:, 0], batch.v0)


def trainable_net(net: np.ndarray) -> tuple[object, list]:
    """The network vector as a torch float64 leaf (1 × width) that takes gradients, only its
    weights and biases trained (the standardisation, clipping and output scale fixed: their
    gradients are zeroed as they arrive), and the list of leaves."""
    torch = import_torch()
    vector = torch.as_tensor(np.asarray(net, dtype=float)[None].copy(), dtype=torch.float64)
    n, layers = int(net[0]), int(net[1])
    trained = torch.zeros_like(vector)
    trained[0, 3 + layers + 4 * n + 2:] = 1.0
    vector.requires_grad_(True)
    vector.register_hook(lambda grad: grad * trained)
    return vector, [vector]


def packed_net(template: np.ndarray, nets) -> np.ndarray:
    """The network vector ``nets`` (1 × width, torch) as the flat layout of
    :mod:`frictionsim.actuator_net` (``template``'s length)."""
    out = nets.detach().cpu().numpy()[0].astype(float)
    return out[:len(template)].copy()


def split_for_validation(logs: list, every: int, seed: int = 0) -> tuple[list, list]:
    """(logs to train on, logs that choose the epoch): one in ``every`` held back, drawn by a
    permutation of the logs (bench logs or a robot's recordings: anything with a ``name``,
    sorted by it) seeded by ``seed`` (every-k-th by name would take one trajectory of a
    campaign named by condition); at least one of each; all logs for both when there is only
    one."""
    ordered = sorted(logs, key=lambda lg: lg.name)
    if len(ordered) < 2:
        return ordered, ordered
    count = min(max(1, len(ordered) // max(every, 2)), len(ordered) - 1)
    picked = set(np.random.default_rng(seed).permutation(len(ordered))[:count].tolist())
    return ([lg for i, lg in enumerate(ordered) if i not in picked],
            [lg for i, lg in enumerate(ordered) if i in picked])


def fine_tune(model: LearnedActuator, logs: list[Log], settings: RolloutTraining,
              seed: int = 0, progress: bool = False) -> LearnedActuator:
    """``model`` with its network trained through closed-loop rollouts of ``logs`` on the
    bench (module docstring), the epoch kept by the held-back logs (:func:`train_through`).
    ConfigurationError for physics this rollout does not carry (backlash)."""
    torch = import_torch()
    theta = physics_theta(model)
    if theta[BACKLASH] > 0.0:
        raise ConfigurationError("training through the rollout does not carry backlash: train "
                                 "the hybrid over physics without it")
    start = time.perf_counter()
    fit_logs, held = split_for_validation(logs, settings.validation_every, seed)
    data = windows(fit_logs, model.actuator, settings.horizon, settings.stride)
    theta_t = torch.as_tensor(theta, dtype=torch.float64)
    held_packed = PackedLogs.from_logs(held, model.actuator)

    def window_loss(rows, nets):
        batch = data.take(rows)
        return torch.mean(torch.abs(rollout(theta_t, nets, batch) - batch.position))

    def validation(net: np.ndarray) -> float:
        return float(np.mean(packed_errors(held_packed, theta, net)))

    return train_through(model, len(data), window_loss, validation, settings, seed, progress,
                         {"validation_logs": [lg.name for lg in held]}, start)


def train_through(model: LearnedActuator, n_windows: int, window_loss, validation,
                  settings: RolloutTraining, seed: int = 0, progress: bool = False,
                  info: dict | None = None, start: float | None = None) -> LearnedActuator:
    """``model`` with its network trained by Adam on ``window_loss(rows, nets)`` (a torch
    scalar: the mean |reported − recorded| position of windows ``rows`` of ``n_windows``
    rolled out with the network vector ``nets``, rad), the epoch kept by ``validation(net)`` (the
    closed-loop MAE of the held-back recordings with that network vector, rad); epoch 0 is
    ``model``'s network and, for a hybrid, epoch −1 its physics alone (a zero residual). What
    was done goes to its ``training`` ("rollout", with ``info``). A Ctrl-C ends the training
    with the best epoch so far, ``training``["interrupted"] set
    (:func:`~frictionsim.experiments.identification.learned.stop_if_interrupted` stops the
    command once it is saved)."""
    import dataclasses

    from frictionsim.experiments.common.progress import progress as progress_display

    torch = import_torch()
    start = time.perf_counter() if start is None else start
    nets, leaves = trainable_net(model.net)
    best_net, best = model.net.copy(), validation(model.net)
    before, best_epoch, by_epoch, losses = best, 0, [best], []
    if model.model == "hybrid":  # its physics alone stays a candidate (epoch −1)
        physics_alone = zero_output(model.net)
        alone = validation(physics_alone)
        if alone < best:
            best, best_net, best_epoch = alone, physics_alone, -1
    optimizer = torch.optim.Adam(leaves, lr=settings.learning_rate)
    clip = StepClipping(settings.gradient_clip)
    generator = torch.Generator().manual_seed(seed)
    bar = progress_display(total=settings.epochs, desc=f"{model.model} rollout", unit="epoch",
                           enabled=progress)
    interrupted = False
    try:
        for epoch in range(1, settings.epochs + 1):
            order = torch.randperm(n_windows, generator=generator)[:settings.windows_per_epoch]
            for s in range(0, len(order), settings.batch):
                optimizer.zero_grad()
                loss = window_loss(order[s:s + settings.batch], nets)
                if not torch.isfinite(loss):
                    continue  # a window that diverged teaches nothing; the others go on
                loss.backward()
                if not clip(leaves):
                    continue  # a gradient that overflowed: no step, the next batch goes on
                optimizer.step()
                losses.append(float(loss.detach()))
            candidate = packed_net(model.net, nets)
            score = validation(candidate)
            by_epoch.append(score)
            if score < best:
                best, best_net, best_epoch = score, candidate, epoch
            bar.set_postfix_str(f"held back {1e3 * best:.2f} mrad")
            bar.update(1)
    except KeyboardInterrupt:
        interrupted = True  # the best epoch so far is kept; the caller stops once it is saved
    finally:
        bar.close()
    training = dict(model.training)
    if interrupted:
        training["interrupted"] = True
    training["rollout"] = {
        "horizon": settings.horizon, "stride": settings.stride, "epochs": settings.epochs,
        "learning_rate": settings.learning_rate, "gradient_clip": settings.gradient_clip,
        "steps": len(losses), "steps_clipped": clip.clipped, "windows": n_windows,
        **(info or {}), "validation_mae_before": before,
        "validation_mae_after": best, "best_epoch": best_epoch,
        "validation_mae_by_epoch": by_epoch,
        "window_loss_first_last": [losses[0], losses[-1]] if losses else [],
        "seconds": round(time.perf_counter() - start, 2)}
    if math.isfinite(best):
        return dataclasses.replace(model, net=best_net, training=training)
    return dataclasses.replace(model, training=training)
