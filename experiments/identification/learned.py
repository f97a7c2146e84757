"""Training learned actuators from bench logs: a network (``net``) and a hybrid (a physical model
plus a learned residual of bounded authority).

The training set is the inverse dynamics of every log through the known bench
(:func:`frictionsim.solvers.learned_rollout.teacher_forced`): at each control period the
constant torque that takes the logged state to the logged position :attr:`NetSettings.horizon`
periods later beyond what the physical model gives (for ``net``, beyond the bare joint:
the whole actuator torque), and the network's input then (error and velocity history,
gain, enable). Over one period the labels are mostly encoder quantisation, and share its
noise with the velocity input, which teaches the network a damping that is not there; over
4 periods (20 ms at 5 ms) they do far less of either. The network is a scikit-learn
``MLPRegressor`` (tanh, Adam, early stopping on a tenth of the samples), trained on
standardised inputs with Gaussian input noise (:attr:`NetSettings.noise` of each input's
spread, :attr:`NetSettings.copies` noisy copies): a network trained on clean logged states
only meets its own slightly wrong states in closed loop and drifts (Hwangbo et al. 2019).
Its inputs are clipped to the range trained on, in the compiled evaluation
(:mod:`frictionsim.actuator_net`). A hybrid's residual is clipped to ``authority`` N·m,
chosen among 0 and quantiles of the residual torques it was trained on
(:data:`AUTHORITY_QUANTILES`) by the closed-loop MAE on the *training* logs: 0 is the
physical model alone, so a hybrid is never worse than its physics on what it was trained
on, and where the residual does not help in closed loop it is switched off rather than
trusted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from frictionsim.actuator_net import N_INPUTS, pack_net, with_authority
from frictionsim.learned_files import LearnedActuator
from frictionsim.logs import Log
from frictionsim.params import ParameterSet
from frictionsim.solvers.batch import PackedLogs
from frictionsim.solvers.learned_rollout import bare_theta, learned_mae, teacher_forced


@dataclass(frozen=True)
class NetSettings:
    """How a learned actuator is trained: hidden layer widths, the label horizon (periods;
    :func:`~frictionsim.solvers.learned_rollout.teacher_forced`), input noise (fraction of each
    input's standard deviation) and noisy copies, the hybrid's authority (N·m; None: chosen
    on the training logs, module docstring), epochs at most, the seed."""

    hidden: tuple[int, ...] = (32, 32)
    horizon: int = 4
    noise: float = 0.05
    copies: int = 3
    authority: float | None = None
    max_epochs: int = 200
    seed: int = 0


#: Quantiles of |residual| a hybrid's authority is chosen among (with 0: no residual).
AUTHORITY_QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)


def training_set(logs: list[Log], actuator: str, theta: np.ndarray, horizon: int = 1
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The network's inputs (samples × N_INPUTS) and residual torques (N·m) of ``logs`` over
    the physical model ``theta`` (module docstring); periods without a label are left out."""
    packed = PackedLogs.from_logs(logs, actuator)
    rows, labels = [], []
    for j in range(packed.n_logs):
        a, b = packed.offsets[j], packed.offsets[j + 1]
        x = np.empty((b - a, N_INPUTS))
        y = np.empty(b - a)
        teacher_forced(packed.goal[a:b], packed.enable[a:b], packed.supply[a:b],
                       packed.position[a:b], packed.v0[j], theta, packed.bench[j], horizon, x, y)
        rows.append(x[np.isfinite(y)])
        labels.append(y[np.isfinite(y)])
    return np.concatenate(rows), np.concatenate(labels)


def train_learned(kind: str, logs: list[Log], actuator: str, physics: ParameterSet | None = None,
                  settings: NetSettings = NetSettings()) -> LearnedActuator:
    """A ``net`` or ``hybrid`` (over ``physics``) trained on ``logs``. ValueError for a hybrid
    without physics or a net with, or logs too short to learn from."""
    from sklearn.neural_network import MLPRegressor

    if (kind == "hybrid") != (physics is not None):
        raise ValueError("a hybrid is trained over a physical model, a net over none")
    theta = physics.theta() if physics is not None else bare_theta(actuator)
    x, y = training_set(logs, actuator, theta, settings.horizon)
    keep = np.isfinite(y) & np.all(np.isfinite(x), axis=1)
    x, y = x[keep], y[keep]
    if len(y) < 50:
        raise ValueError(f"{len(y)} samples: too few to train a network on")
    start = time.perf_counter()
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    std = np.where(std > 1e-12 * np.maximum(1.0, np.abs(mean)), std, 1.0)  # a constant input
    z = (x - mean) / std
    low, high = z.min(axis=0), z.max(axis=0)
    rng = np.random.default_rng(settings.seed)
    noisy = np.concatenate([z] + [z + settings.noise * rng.standard_normal(z.shape)
                                  for _ in range(settings.copies)])
    targets = np.tile(y, settings.copies + 1)
    mean_out = float(targets.mean())
    scale_out = float(targets.std()) or 1.0
    mlp = MLPRegressor(hidden_layer_sizes=settings.hidden, activation="tanh", solver="adam",
                       alpha=1e-4, batch_size=256, learning_rate_init=1e-3,
                       max_iter=settings.max_epochs, early_stopping=True,
                       validation_fraction=0.1, n_iter_no_change=10,
                       random_state=settings.seed)
    mlp.fit(np.clip(noisy, low, high), (targets - mean_out) / scale_out)
    net = pack_net(mlp.coefs_, mlp.intercepts_, mean, std, low, high, mean_out, scale_out)
    training = {"logs": [log.name for log in logs], "samples": int(len(y)),
                "horizon": settings.horizon,
                "epochs": int(mlp.n_iter_), "seconds": round(time.perf_counter() - start, 2),
                "noise": settings.noise, "copies": settings.copies, "seed": settings.seed}
    if kind == "net":
        return LearnedActuator(kind, actuator, net, tuple(settings.hidden), None, None, training)
    tries = [settings.authority] if settings.authority is not None else \
        sorted({0.0, *np.quantile(np.abs(y), AUTHORITY_QUANTILES).tolist()})
    scored = []
    for authority in tries:
        model = LearnedActuator(kind, actuator, with_authority(net, authority),
                                tuple(settings.hidden), authority, physics, training)
        scored.append((float(np.mean(list(learned_mae(model, logs).values()))), authority, model))
    loss, authority, best = min(scored, key=lambda t: (t[0], t[1]))
    best.training["authority_tried"] = {f"{a:.6g}": e for e, a, _ in scored}
    return best


@dataclass
class LearnedFit:
    """A learned actuator trained by an identification: its file and per-log MAE (rad) on the
    training and validation logs, and the seconds training took."""

    model: str
    params_file: Path
    train: dict[str, float]
    validation: dict[str, float]
    seconds: float
    samples: int

    @property
    def train_mae(self) -> float:
        return float(np.mean(list(self.train.values())))

    @property
    def validation_mae(self) -> float | None:
        return float(np.mean(list(self.validation.values()))) if self.validation else None


def fit_learned(kinds: tuple[str, ...], train: list[Log], validation: list[Log],
                physics: dict[str, ParameterSet], actuator: str, out: Path, seed: int = 0,
                progress: bool = True) -> dict[str, LearnedFit]:
    """Train the learned ``kinds`` (``net``, ``hybrid``) on ``train``, a hybrid over
    ``physics["m6"]``; write ``out/<kind>.json`` and score them on both sets."""
    from frictionsim.learned_files import save_learned

    fits = {}
    for kind in kinds:
        start = time.perf_counter()
        if progress:
            print(f"{kind}: training on {len(train)} logs", flush=True)
        model = train_learned(kind, train, actuator, physics["m6"] if kind == "hybrid" else None,
                              NetSettings(seed=seed))
        path = save_learned(out / f"{kind}.json", model)
        fits[kind] = LearnedFit(kind, path, learned_mae(model, train),
                                learned_mae(model, validation), time.perf_counter() - start,
                                int(model.training["samples"]))
    return fits


__all__ = ["AUTHORITY_QUANTILES", "LearnedFit", "NetSettings", "fit_learned", "learned_mae",
           "train_learned", "training_set"]
