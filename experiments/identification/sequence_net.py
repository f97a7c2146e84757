"""A sequence model as a learned actuator: a GRU on the servo's error, velocity, gain and
enable, trained on bench logs as the network is (torch; a baseline for the comparison of
physics with learning, not a model the engines carry).

The network of :mod:`frictionsim.actuator_net` sees a fixed history (its error and velocity
samples); a gated recurrent unit (Cho et al. 2014) carries a state of its own instead. Each
control period k::

    x(k) = [e(k), v(k), kp, enable(k)],   z(k) = clip((x(k) − mean)/std, low, high)
    h(k) = GRU(z(k), h(k − 1)),           h = 0 before the first period
    τ(k) = mean_out + scale_out·(w_out·h(k) + b_out)        N·m, held for the period

``e = goal − q`` (rad), ``v`` the joint velocity (rad/s), the GRU torch's ``GRUCell``:
r = σ(W_r z + b_r + U_r h + c_r), u = σ(W_u z + b_u + U_u h + c_u),
n = tanh(W_n z + b_n + r ⊙ (U_n h + c_n)), h ← (1 − u) ⊙ n + u ⊙ h. As the network does, it
drives the bare joint with the rotor inertia of the physical model fitted beside it
(:func:`~frictionsim.solvers.learned_rollout.bare_theta`), on the bench's step with friction
clipping (:func:`frictionsim.solvers.batched.rollout.bench_rollout`, float64).

It is trained on the training logs less one in :attr:`RolloutTraining.validation_every` held
back (:func:`~frictionsim.experiments.identification.rollout_training.split_for_validation`),
which choose the epoch of each of two stages:

1. supervised on the network's torque labels (inverse dynamics at its label horizon,
   :func:`~frictionsim.experiments.identification.learned.training_sequences`), fed the logged
   states over windows of :data:`WINDOW` periods (h = 0 at each window's start, as the
   network's history restarts at a window's), with input noise (:data:`INPUT_NOISE`); kept: the epoch
   whose held-back logs' labels it predicts best (mean squared error over whole logs), the
   training stopped :data:`PATIENCE` epochs without a better one;
2. through its own closed-loop rollout, as the network is
   (:mod:`~frictionsim.experiments.identification.rollout_training`: the same windows, Adam,
   clipped steps; on by default where the training logs repeat a condition); kept: the epoch
   whose held-back logs it rolls out closest (epoch 0: the supervised one).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from frictionsim import atomic
from frictionsim.actuator_net import GAIN_INPUT, HISTORY
from frictionsim.errors import ConfigurationError
from frictionsim.experiments.identification import rollout_training as rt
from frictionsim.experiments.identification.learned import (
    NetSettings,
    auto_rollout_epochs,
    input_scale,
    label_errors,
    rollout_epochs,
    training_sequences,
)
from frictionsim.jsonfile import read_json
from frictionsim.logs import Log
from frictionsim.solvers.batched.rollout import bench_rollout
from frictionsim.solvers.learned_rollout import bare_theta

#: The network's inputs the sequence model takes: the error and velocity of the period, the
#: gain, the enable flag (its history is its own state).
NET_COLUMNS = (0, HISTORY, GAIN_INPUT, GAIN_INPUT + 1)
#: Width of the GRU's state.
HIDDEN = 32
#: Periods of each window of the supervised stage, and between two windows' starts.
WINDOW = 200
WINDOW_STRIDE = 100
#: Supervised epochs without a better held-back error before the stage stops.
PATIENCE = 10
#: The supervised stage's input noise (fraction of each input's spread): the network's 5 %, with
#: which the GRU's rows of docs/results.md were measured; a validation later chose none for a
#: network trained supervised only (:attr:`NetSettings.noise`), not tried on the GRU.
INPUT_NOISE = 0.05
#: Adam's learning rate and the windows per step of the supervised stage.
LEARNING_RATE = 1e-3
BATCH = 64


class GruActuator(torch.nn.Module):
    """The sequence model of the module docstring, float64; the standardisation, clipping and
    output scale are buffers (fixed), the cell's and output's weights parameters."""

    def __init__(self, hidden: int, mean, std, low, high, mean_out: float, scale_out: float):
        super().__init__()
        self.cell = torch.nn.GRUCell(len(NET_COLUMNS), hidden, dtype=torch.float64)
        self.out = torch.nn.Linear(hidden, 1, dtype=torch.float64)
        for name, value in (("mean", mean), ("std", std), ("low", low), ("high", high),
                            ("mean_out", mean_out), ("scale_out", scale_out)):
            self.register_buffer(name, torch.as_tensor(value, dtype=torch.float64))

    @property
    def hidden(self) -> int:
        return self.cell.hidden_size

    def standardised(self, x, noise: float = 0.0, generator=None):
        """z of inputs ``x`` (…, 4): standardised, ``noise`` × a standard normal added (the
        training's input noise), clipped to the trained range."""
        z = (x - self.mean) / self.std
        if noise > 0.0:
            z = z + noise * torch.randn(z.shape, generator=generator, dtype=z.dtype)
        return torch.maximum(torch.minimum(z, self.high), self.low)

    def step(self, z, h):
        """(τ (E,) N·m, the next state) of one period from standardised inputs z (E, 4)."""
        h = self.cell(z, h)
        return self.mean_out + self.scale_out * self.out(h)[:, 0], h

    def fed(self, x, noise: float = 0.0, generator=None):
        """The torques (E, n) N·m it gives fed the logged inputs ``x`` (E, n, 4), from h = 0."""
        z = self.standardised(x, noise, generator)
        h = torch.zeros(x.shape[0], self.hidden, dtype=torch.float64)
        out = []
        for k in range(x.shape[1]):
            tau, h = self.step(z[:, k], h)
            out.append(tau)
        return torch.stack(out, dim=1)

    def driver(self, environments: int):
        """The ``torque`` of :func:`~frictionsim.solvers.batched.rollout.bench_rollout` for
        ``environments`` rollouts, each from h = 0."""
        state = {"h": torch.zeros(environments, self.hidden, dtype=torch.float64)}

        def torque(error, velocity, kp, enable):
            x = torch.cat([error, velocity, kp, enable], dim=-1)
            tau, state["h"] = self.step(self.standardised(x), state["h"])
            return tau[:, None]

        return torque


@dataclass
class SequenceActuator:
    """A trained sequence model: the actuator it drives, the rotor inertia of its joint
    (kg·m²), the module, what its training did (seconds, epochs, the held-back logs…)."""

    actuator: str
    armature: float
    module: GruActuator
    training: dict
    model: str = "gru"


def _inputs(x: np.ndarray) -> np.ndarray:
    return x[:, list(NET_COLUMNS)]


def _by_length(logs: list[Log]) -> dict[int, list[Log]]:
    groups: dict[int, list[Log]] = {}
    for log in logs:
        groups.setdefault(len(log.entries), []).append(log)
    return groups


def _theta(model_actuator: str, armature: float):
    return torch.as_tensor(bare_theta(model_actuator, armature), dtype=torch.float64)


def closed_loop_mae(model: SequenceActuator, logs: list[Log]) -> dict[str, float]:
    """Per-log MAE (rad) of the sequence model's closed-loop rollouts of whole ``logs`` from
    their first logged state (+inf where one diverged), logs of one length at once."""
    theta = _theta(model.actuator, model.armature)
    out: dict[str, float] = {}
    with torch.no_grad():
        for length, group in _by_length(logs).items():
            whole = rt.windows(group, model.actuator, length, length).take()
            reported = bench_rollout(theta, whole.bench, None, whole.goal, whole.enable,
                                     whole.supply, whole.position[:, 0], whole.v0,
                                     torque=model.module.driver(len(whole)))
            mae = torch.mean(torch.abs(reported - whole.position), dim=1).numpy()
            # the windows follow the group's order, one per log
            out.update({log.name: float(e) if math.isfinite(e) else math.inf
                        for log, e in zip(group, mae)})
    return {log.name: out[log.name] for log in logs}


def open_loop_torque(model: SequenceActuator, logs: list[Log]) -> dict[str, float]:
    """The sequence model's open-loop error on ``logs`` (N·m), as the network's
    (:func:`~frictionsim.experiments.identification.learned.open_loop_torque`): fed the logged
    states from each log's start, against the labels at its training horizon."""
    pairs = training_sequences(logs, model.actuator, bare_theta(model.actuator, model.armature),
                               int(model.training["horizon"]))
    predicted, labels = [], []
    with torch.no_grad():
        for x, y in pairs:
            tau = model.module.fed(torch.as_tensor(_inputs(x)[None]))[0].numpy()
            keep = np.isfinite(y)
            predicted.append(tau[keep])
            labels.append(y[keep])
    return label_errors(np.concatenate(predicted), np.concatenate(labels))


def _windows(pairs: list[tuple[np.ndarray, np.ndarray]], length: int):
    xs, ys = [], []
    for x, y in pairs:
        for s in range(0, len(y) - length + 1, WINDOW_STRIDE):
            xs.append(_inputs(x[s:s + length]))
            ys.append(y[s:s + length])
    return torch.as_tensor(np.array(xs)), torch.as_tensor(np.array(ys))


def _new_module(pairs: list[tuple[np.ndarray, np.ndarray]], hidden: int, seed: int
                ) -> GruActuator:
    """A fresh GRU (torch's initialisation, seeded) standardised on the training inputs and
    labels (a constant input keeps a unit spread, as the network's)."""
    x = np.concatenate([_inputs(x) for x, _ in pairs])
    y = np.concatenate([y[np.isfinite(y)] for _, y in pairs])
    mean, std = input_scale(x)
    z = (x - mean) / std
    torch.manual_seed(seed)
    return GruActuator(hidden, mean, std, z.min(axis=0), z.max(axis=0), float(y.mean()),
                       float(y.std()) or 1.0)


def _label_loss(module: GruActuator, x, y, noise: float = 0.0, generator=None):
    """Mean squared error of the torques in units of the labels' spread where a label
    exists, the model fed inputs ``x`` with ``noise``."""
    keep = torch.isfinite(y)
    tau = module.fed(x, noise, generator)
    return torch.mean(((tau[keep] - y[keep]) / module.scale_out) ** 2)


def _copy(module: GruActuator) -> dict:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _keep_best_epoch(module: GruActuator, epochs: int, one_epoch, score, shown, desc: str,
                     progress: bool, patience: int | None = None
                     ) -> tuple[list[float], int, int, bool]:
    """Train ``module`` by ``one_epoch()`` up to ``epochs`` times, scoring it by ``score()``
    (lower is better) before the first and after each, and load the weights of the best
    score (epoch 0: as it was); stop ``patience`` epochs after the best (None: never) or at a
    Ctrl-C. (The scores by epoch, the epoch kept, the epochs run, whether interrupted.)"""
    from frictionsim.experiments.common.progress import progress as progress_display

    best = score()
    best_state, best_epoch, by_epoch, run, interrupted = _copy(module), 0, [best], 0, False
    bar = progress_display(total=epochs, desc=desc, unit="epoch", enabled=progress)
    try:
        for epoch in range(1, epochs + 1):
            one_epoch()
            run = epoch
            by_epoch.append(score())
            if by_epoch[-1] < best:
                best, best_state, best_epoch = by_epoch[-1], _copy(module), epoch
            bar.set_postfix_str(f"held back {shown(best)}")
            bar.update(1)
            if patience is not None and epoch - best_epoch >= patience:
                break
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
    module.load_state_dict(best_state)
    return by_epoch, best_epoch, run, interrupted


def _supervised(module: GruActuator, train, held, settings: NetSettings, progress: bool
                ) -> tuple[dict, bool]:
    """Stage 1 (module docstring) in place: the kept epoch's weights loaded; (its record,
    whether a Ctrl-C cut it short)."""
    start = time.perf_counter()
    length = min(WINDOW, min(len(y) for _, y in train))
    x, y = _windows(train, length)
    held_t = [(torch.as_tensor(_inputs(hx)[None]), torch.as_tensor(hy[None]))
              for hx, hy in held]
    optimizer = torch.optim.Adam(module.parameters(), lr=LEARNING_RATE)
    generator = torch.Generator().manual_seed(settings.seed)

    def one_epoch() -> None:
        order = torch.randperm(len(x), generator=generator)
        for s in range(0, len(order), BATCH):
            rows = order[s:s + BATCH]
            optimizer.zero_grad()
            _label_loss(module, x[rows], y[rows], INPUT_NOISE, generator).backward()
            optimizer.step()

    def held_loss() -> float:
        with torch.no_grad():
            return float(np.mean([float(_label_loss(module, hx, hy)) for hx, hy in held_t]))

    by_epoch, best_epoch, run, interrupted = _keep_best_epoch(
        module, settings.max_epochs, one_epoch, held_loss, lambda v: f"{v:.3f}",
        "gru supervised", progress, PATIENCE)
    return {"windows": len(x), "window": length, "epochs": run, "best_epoch": best_epoch,
            "held_back_label_mse_by_epoch": by_epoch,
            "seconds": round(time.perf_counter() - start, 2)}, interrupted


def _through_rollout(model: SequenceActuator, fit_logs: list[Log], held: list[Log],
                     settings: rt.RolloutTraining, seed: int, progress: bool
                     ) -> tuple[dict, bool]:
    """Stage 2 (module docstring) in place; (its record, whether a Ctrl-C cut it short)."""
    start = time.perf_counter()
    module = model.module
    data = rt.windows(fit_logs, model.actuator, settings.horizon, settings.stride)
    theta = _theta(model.actuator, model.armature)
    leaves = list(module.parameters())
    optimizer = torch.optim.Adam(leaves, lr=settings.learning_rate)
    clip = rt.StepClipping(settings.gradient_clip)
    generator = torch.Generator().manual_seed(seed)
    steps = [0]

    def one_epoch() -> None:
        order = torch.randperm(len(data), generator=generator)[:settings.windows_per_epoch]
        for s in range(0, len(order), settings.batch):
            batch = data.take(order[s:s + settings.batch])
            optimizer.zero_grad()
            reported = bench_rollout(theta, batch.bench, None, batch.goal, batch.enable,
                                     batch.supply, batch.position[:, 0], batch.v0,
                                     torque=module.driver(len(batch)))
            loss = torch.mean(torch.abs(reported - batch.position))
            if not torch.isfinite(loss):
                continue  # a window that diverged teaches nothing; the others go on
            loss.backward()
            if clip(leaves):
                optimizer.step()
                steps[0] += 1

    def validation() -> float:
        return float(np.mean(list(closed_loop_mae(model, held).values())))

    by_epoch, best_epoch, _, interrupted = _keep_best_epoch(
        module, settings.epochs, one_epoch, validation, lambda v: f"{1e3 * v:.2f} mrad",
        "gru rollout", progress)
    return {"horizon": settings.horizon, "epochs": settings.epochs,
            "learning_rate": settings.learning_rate, "gradient_clip": settings.gradient_clip,
            "steps": steps[0], "steps_clipped": clip.clipped, "windows": len(data),
            "validation_mae_before": by_epoch[0], "validation_mae_after": min(by_epoch),
            "best_epoch": best_epoch, "validation_mae_by_epoch": by_epoch,
            "seconds": round(time.perf_counter() - start, 2)}, interrupted


def train_sequence(logs: list[Log], actuator: str, armature: float,
                   settings: NetSettings = NetSettings(), hidden: int = HIDDEN,
                   progress: bool = False) -> SequenceActuator:
    """A GRU trained on bench ``logs`` (module docstring), its joint keeping the rotor inertia
    ``armature`` (kg·m²); ``settings``: the label horizon, supervised epochs at
    most, seed and the epochs and window through the rollout (None: as the network's,
    :func:`~frictionsim.experiments.identification.learned.auto_rollout_epochs`). A Ctrl-C
    keeps the best epoch so far and sets ``training["interrupted"]``."""
    start = time.perf_counter()
    if settings.rollout_epochs is None:
        settings = replace(settings, rollout_epochs=auto_rollout_epochs(logs)[0])
    fit_logs, held = rt.split_for_validation(logs, rt.RolloutTraining.validation_every,
                                             settings.seed)
    theta = bare_theta(actuator, armature)
    train = training_sequences(fit_logs, actuator, theta, settings.horizon)
    if sum(int(np.isfinite(y).sum()) for _, y in train) < 50:
        raise ConfigurationError("too few labelled periods to train a sequence model on")
    module = _new_module(train, hidden, settings.seed)
    model = SequenceActuator(actuator, armature, module,
                             {"horizon": settings.horizon, "noise": INPUT_NOISE,
                              "seed": settings.seed, "logs": [lg.name for lg in logs],
                              "validation_logs": [lg.name for lg in held]})
    supervised, interrupted = _supervised(
        module, train, training_sequences(held, actuator, theta, settings.horizon), settings,
        progress)
    model.training["supervised"] = supervised
    epochs = rollout_epochs(settings)
    if epochs > 0 and not interrupted:
        model.training["rollout"], interrupted = _through_rollout(
            model, fit_logs, held, rt.RolloutTraining(settings.rollout_horizon, epochs),
            settings.seed, progress)
    if interrupted:
        model.training["interrupted"] = True
    model.training["seconds"] = round(time.perf_counter() - start, 2)
    return model


def save_sequence(path: str | Path, model: SequenceActuator) -> Path:
    """Write the sequence model (its weights and buffers as lists) atomically."""
    from frictionsim.experiments.common.output import json_safe

    state = {k: v.tolist() for k, v in model.module.state_dict().items()}
    return atomic.write_json(path, json_safe(
        {"model": model.model, "actuator": model.actuator, "armature": model.armature,
         "hidden": model.module.hidden, "state": state, "training": model.training}))


def load_sequence(path: str | Path) -> SequenceActuator:
    """The sequence model :func:`save_sequence` wrote; ConfigurationError for another file."""
    data = read_json(path, ConfigurationError, "sequence model")
    if not isinstance(data, dict) or data.get("model") != "gru":
        raise ConfigurationError(f"{path}: not a sequence model (gru) file")
    state = {k: torch.as_tensor(v, dtype=torch.float64) for k, v in data["state"].items()}
    module = GruActuator(int(data["hidden"]), state["mean"], state["std"], state["low"],
                         state["high"], float(state["mean_out"]), float(state["scale_out"]))
    module.load_state_dict(state)
    return SequenceActuator(data["actuator"], float(data["armature"]), module, data["training"])


__all__ = ["GruActuator", "HIDDEN", "SequenceActuator", "closed_loop_mae", "load_sequence",
           "open_loop_torque", "save_sequence", "train_sequence"]
