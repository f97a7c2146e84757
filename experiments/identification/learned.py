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
standardised inputs and :attr:`NetSettings.copies` more copies of them, each with Gaussian
input noise of :attr:`NetSettings.noise` of each input's spread. The noise is Hwangbo et al.'s
cure for a network that only meets its own slightly wrong states in closed loop; chosen by
held-back training logs on five bench data sets (docs/results.md), a net on bench logs that
is not trained through the rollout after takes none (:data:`BENCH_NET_NOISE`): the copies
are then the samples repeated, which its early stopping (on rows whose twins it trains on)
lets train longer. A net trained through the rollout after keeps 5 %
(:data:`ROLLOUT_NET_NOISE`: without noise it was not better there), as does a net on a robot
(without noise it diverged) and a hybrid (:attr:`NetSettings.hybrid_noise`, not validated).
The network's inputs are clipped to the range trained on, in the compiled evaluation
(:mod:`frictionsim.actuator_net`).

A hybrid's residual learned that way alone made the closed loop worse on the XL330 logs
at every authority tried, even where its one-step labels fit: an error a step makes is
carried by the next ones, which one-step training never sees. So a hybrid is trained in
two stages: the supervised network above (one hidden layer, :attr:`NetSettings.hybrid_hidden`)
gives the features, then every weight is searched by CMA-ES (nevergrad) for the lowest
closed-loop MAE on the *training* logs (:func:`closed_loop_residual`), starting from the
output layer at 0, the physical model itself. Its residual is clipped to ``authority``
N·m, the :data:`AUTHORITY_QUANTILE` of the residual torques.
"""

from __future__ import annotations

import itertools
import time
import warnings
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from frictionsim.actuator_net import GAIN_INPUT, N_INPUTS, pack_net, with_authority, zero_output
from frictionsim.errors import ConfigurationError
from frictionsim.experiments.common.output import counted
from frictionsim.experiments.identification.pipeline import PerLogScores
from frictionsim.learned_files import LearnedActuator
from frictionsim.logs import Log
from frictionsim.params import ParameterSet
from frictionsim.solvers.batch import PackedLogs
from frictionsim.solvers.learned_rollout import (
    bare_theta,
    learned_mae,
    packed_errors,
    teacher_forced,
)

#: The control periods of each window of the training through the rollout, by default (1 s at
#: 5 ms). Against 50 periods, four times the compute, the hybrid went from 12.6 to 10.4 mrad
#: held out on a campaign's repetitions, from 20.8 to 18.9 on its higher gains (M6: 24.5) and
#: from 8.9 to 4.2 on a Feetech-like campaign (docs/results.md).
ROLLOUT_HORIZON = 200


@dataclass(frozen=True)
class NetSettings:
    """How a learned actuator is trained: the network's and the hybrid's hidden layer widths,
    the closed-loop evaluations of a hybrid's search, the label horizon (periods;
    :func:`~frictionsim.solvers.learned_rollout.teacher_forced`), input noise (fraction of each
    input's standard deviation; a net's, then a hybrid's) and copies, the hybrid's authority
    (N·m; None: the :data:`AUTHORITY_QUANTILE` of its residual torques), epochs at most, the
    seed."""

    hidden: tuple[int, ...] = (32, 32)
    hybrid_hidden: tuple[int, ...] = (16,)
    closed_loop_budget: int = 2000
    horizon: int = 4
    noise: float | None = None
    """A net's input noise; None: the default of how it is trained, on bench logs
    :data:`BENCH_NET_NOISE` (supervised only) or :data:`ROLLOUT_NET_NOISE` (through the rollout
    after), on a robot's recordings
    :data:`~frictionsim.experiments.robots.learned.ROBOT_NET_NOISE`."""
    hybrid_noise: float = 0.05
    copies: int = 3
    authority: float | None = None
    max_epochs: int = 200
    seed: int = 0
    max_samples: int = 200_000
    """Training samples at most (a seeded random subset of a larger campaign's)."""
    hybrid_sees_gain: bool = True
    """Whether a hybrid's residual takes the gain as an input; without it, the gain acts only
    through the physical firmware law and the residual is a function of the motion alone."""
    closed_loop_logs: int = 48
    """Training logs the hybrid's closed-loop search rolls out at most: a subset that keeps
    every condition (trajectory, gain, mass, length) of a larger campaign
    (:func:`closed_loop_subset`)."""
    rollout_epochs: int | None = None
    """Epochs of training through closed-loop rollouts of the bench logs after the supervised
    stage, the epoch kept by held-back training logs
    (:mod:`~frictionsim.experiments.identification.rollout_training`, torch); 0: none; None:
    :func:`auto_rollout_epochs`. A hybrid so trained skips the closed-loop search: its
    residual (of the network's width, :attr:`hidden`) starts from the supervised one, its
    authority the largest |label| (unless :attr:`authority`), and its physics alone stays a
    candidate."""
    rollout_horizon: int = ROLLOUT_HORIZON
    """The control periods of each window of that training."""


#: A network's input noise on bench logs (:attr:`NetSettings.noise`) when it is not trained
#: through the rollout after. On five data sets (the XL330's three gain folds, two virtual
#: campaigns' repetitions) the supervised network rolled out closer to held-back training logs
#: without noise than with 5 % on every one; none was the best noise on four and 2 % on the
#: fifth, by 0.15 mrad (docs/results.md). The width and the L2 penalty the same logs chose
#: differed from set to set: they stay.
BENCH_NET_NOISE = 0.0
#: ... and when it is: the 5 % its figures through the rollout were measured with. Without
#: noise, 34 epochs through the rollout left it at 11.3 and 10.0 mrad on two campaigns'
#: repetitions, against 7.16 and 8.08 after 60 with 5 % (docs/results.md).
ROLLOUT_NET_NOISE = 0.05

#: Epochs through the rollout when they are left to :func:`auto_rollout_epochs`.
AUTO_ROLLOUT_EPOCHS = 60


def condition(log: Log) -> tuple:
    """What a log repeats: trajectory, gain, mass and arm length."""
    return (log.trajectory, log.kp, log.mass, log.length)


def auto_rollout_epochs(logs: list[Log]) -> tuple[int, str]:
    """(epochs through the rollout, why) when :attr:`NetSettings.rollout_epochs` is None:
    :data:`AUTO_ROLLOUT_EPOCHS` when the training logs repeat a condition (:func:`condition`)
    and torch is installed, else 0. The epoch is chosen on training logs held back for it,
    which speak for held-out data only where these repeat what was trained on: on a campaign
    with repetitions the network went from 25.1 to 12.4 mrad held out after 30 epochs and to
    9.9 after 60; on the XL330's unrepeated gain folds it did not move and a hybrid got worse
    (docs/results.md)."""
    # a log whose header names no trajectory repeats nothing we know of
    known = [condition(log) for log in logs if log.trajectory != "?"]
    if len(set(known)) == len(known):
        return 0, "no condition (trajectory, kp, mass, length) of the training logs repeats"
    if not torch_installed():
        return 0, "torch or Warp is not installed (pip install 'frictionsim[torch]')"
    return AUTO_ROLLOUT_EPOCHS, "the training logs repeat conditions"


def torch_installed() -> bool:
    """Whether torch and Warp can be imported (training through the rollout needs both: the
    servos' Warp kernels under torch's autograd, the extra ``torch``)."""
    try:
        import torch  # noqa: F401
        import warp  # noqa: F401
    except ImportError:
        return False
    return True


def decide_rollout(settings: NetSettings, kind: str, default, progress: bool = False
                   ) -> tuple[NetSettings, dict | None]:
    """(``settings`` with its epochs through the rollout decided, what the default decided:
    {"epochs", "why"}, None where the user chose): ``default()`` gives (epochs, why) when
    ``settings.rollout_epochs`` is None (:func:`auto_rollout_epochs` on bench logs,
    :func:`~frictionsim.experiments.robots.learned.robot_rollout_epochs` on a robot)."""
    if settings.rollout_epochs is not None:
        return settings, None
    epochs, why = default()
    if progress:
        print(f"{kind}: {epochs} epochs through the rollout ({why})", flush=True)
    return replace(settings, rollout_epochs=epochs), {"epochs": epochs, "why": why}


def rollout_epochs(settings: NetSettings) -> int:
    """The epochs through the rollout ``settings`` ask for, None (not yet decided) as 0."""
    return settings.rollout_epochs or 0


#: A hybrid's authority: this quantile of the |residual torques| it is trained on.
AUTHORITY_QUANTILE = 0.5
#: The closed-loop search of a hybrid's weights: CMA's initial step (the weights of a
#: standardised tanh network are O(1)) and its population.
CLOSED_LOOP_STEP = 0.05
CLOSED_LOOP_POPULATION = 12


def training_sequences(logs: list[Log], actuator: str, theta: np.ndarray, horizon: int = 1
                       ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per log, in order: the network's inputs (periods × N_INPUTS) and residual torques
    (N·m, NaN where a period has no label) over the physical model ``theta`` (module
    docstring)."""
    packed = PackedLogs.from_logs(logs, actuator)
    out = []
    for j in range(packed.n_logs):
        a, b = packed.offsets[j], packed.offsets[j + 1]
        x = np.empty((b - a, N_INPUTS))
        y = np.empty(b - a)
        teacher_forced(packed.goal[a:b], packed.enable[a:b], packed.supply[a:b],
                       packed.position[a:b], packed.v0[j], theta, packed.bench[j], horizon, x, y)
        out.append((x, y))
    return out


def training_set(logs: list[Log], actuator: str, theta: np.ndarray, horizon: int = 1
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The network's inputs (samples × N_INPUTS) and residual torques (N·m) of ``logs`` over
    the physical model ``theta`` (:func:`training_sequences`); periods without a label are
    left out."""
    pairs = training_sequences(logs, actuator, theta, horizon)
    return (np.concatenate([x[np.isfinite(y)] for x, y in pairs]),
            np.concatenate([y[np.isfinite(y)] for _, y in pairs]))


def closed_loop_subset(logs: list[Log], limit: int) -> list[Log]:
    """At most ``limit`` of ``logs``, spread over the conditions (trajectory, gain, mass, arm
    length): every condition once before any twice, and among those, the one whose pairs of
    factors (mass and length, gain and trajectory…), then single factors, the subset holds
    least so far. A subset of a campaign with more conditions than ``limit`` thus still holds
    every mass with every length and every gain with every trajectory in nearly equal
    numbers (balancing single factors alone left out the heavy mass on the long arm); all
    of the logs when there are no more than ``limit``."""
    if len(logs) <= limit:
        return list(logs)
    groups: dict[tuple, list[Log]] = {}
    for log in sorted(logs, key=lambda lg: lg.name):
        groups.setdefault(condition(log), []).append(log)
    taken = dict.fromkeys(groups, 0)
    factors = range(4)
    pairs = list(itertools.combinations(factors, 2))
    held: Counter = Counter()  # how often the subset holds each value of a factor or a pair

    def singles(c: tuple) -> list[tuple]:
        return [(i, c[i]) for i in factors]

    def doubles(c: tuple) -> list[tuple]:
        return [(i, j, c[i], c[j]) for i, j in pairs]

    out: list[Log] = []
    while len(out) < limit:
        pick = min((c for c in groups if groups[c]),
                   key=lambda c: (taken[c], sum(held[f] for f in doubles(c)),
                                  sum(held[f] for f in singles(c))))
        out.append(groups[pick].pop(0))
        taken[pick] += 1
        held.update(singles(pick) + doubles(pick))
    return out


#: What scikit-learn's MLP warns when a Ctrl-C (or SIGTERM, raised as one by the command line)
#: landed in its epochs: it swallows the interrupt and returns its best weights so far.
SKLEARN_INTERRUPTED = "Training interrupted by user."


def input_scale(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mean and standard deviation of each column of the inputs ``x`` that a learned
    model standardises them by; a constant column keeps a unit spread."""
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    return mean, np.where(std > 1e-12 * np.maximum(1.0, np.abs(mean)), std, 1.0)


def supervised_net(x: np.ndarray, y: np.ndarray, hidden: tuple[int, ...],
                   settings: NetSettings, blind: tuple[int, ...] = ()
                   ) -> tuple[np.ndarray, int, bool, bool]:
    """A network trained on inputs ``x`` and torques ``y`` (module docstring; at most
    :attr:`NetSettings.max_samples` of them, a seeded random subset): its flat vector
    (authority unbounded), the epochs it took, whether it converged before
    :attr:`NetSettings.max_epochs`, and whether a Ctrl-C cut the training short (the best
    epoch so far returned; the caller stops once it is saved). The inputs ``blind`` (indices)
    are clipped to [0, 0] once standardised: the network does not see them."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPRegressor

    if len(y) > settings.max_samples:
        pick = np.random.default_rng(settings.seed).choice(len(y), settings.max_samples,
                                                            replace=False)
        x, y = x[np.sort(pick)], y[np.sort(pick)]
    mean, std = input_scale(x)
    z = (x - mean) / std
    low, high = z.min(axis=0), z.max(axis=0)
    low[list(blind)] = high[list(blind)] = 0.0
    rng = np.random.default_rng(settings.seed)
    noisy = np.concatenate([z] + [z + settings.noise * rng.standard_normal(z.shape)
                                  for _ in range(settings.copies)])
    targets = np.tile(y, settings.copies + 1)
    mean_out = float(targets.mean())
    scale_out = float(targets.std()) or 1.0
    mlp = MLPRegressor(hidden_layer_sizes=hidden, activation="tanh", solver="adam",
                       alpha=1e-4, batch_size=256, learning_rate_init=1e-3,
                       max_iter=settings.max_epochs, early_stopping=True,
                       validation_fraction=0.1, n_iter_no_change=10,
                       random_state=settings.seed)
    with warnings.catch_warnings(record=True) as caught:
        # a stop at the epoch cap is recorded in the file (``converged``), not shouted
        warnings.simplefilter("always", ConvergenceWarning)
        mlp.fit(np.clip(noisy, low, high), (targets - mean_out) / scale_out)
    # scikit-learn's MLP catches KeyboardInterrupt itself: without this the command would
    # go on training (through the rollout: up to an hour) deaf to any further Ctrl-C
    interrupted = any(str(w.message) == SKLEARN_INTERRUPTED for w in caught)
    converged = not interrupted and not any(issubclass(w.category, ConvergenceWarning)
                                            for w in caught)
    for w in caught:
        if not issubclass(w.category, ConvergenceWarning) and \
                str(w.message) != SKLEARN_INTERRUPTED:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return pack_net(mlp.coefs_, mlp.intercepts_, mean, std, low, high, mean_out,
                    scale_out), int(mlp.n_iter_), converged, interrupted


def rotor_inertia(physics: dict[str, ParameterSet], actuator: str) -> float:
    """The rotor inertia (kg·m²) a net's joint keeps: the richest fitted physical model's
    ``armature`` (``physics``: model → its fit), else the actuator's default."""
    from frictionsim import MODELS

    fitted = [m for m in MODELS if m in physics]
    if fitted:
        return float(physics[fitted[-1]].values["armature"])
    return float(ParameterSet.defaults("m1", actuator).values["armature"])


def train_learned(kind: str, logs: list[Log], actuator: str, physics: ParameterSet | None = None,
                  settings: NetSettings = NetSettings(), progress: bool = False,
                  armature: float = 0.0) -> LearnedActuator:
    """A ``net`` (its joint keeping the rotor inertia ``armature``, kg·m²) or a ``hybrid``
    (over ``physics``) trained on bench ``logs``. ValueError for a hybrid without physics or a
    net with, or logs too short to learn from. A Ctrl-C during a hybrid's closed-loop search
    keeps the best residual found so far."""
    if (kind == "hybrid") != (physics is not None):
        raise ConfigurationError("a hybrid is trained over a physical model, a net over none")
    settings, auto = decide_rollout(settings, kind, lambda: auto_rollout_epochs(logs), progress)
    if settings.noise is None:
        settings = replace(settings, noise=ROLLOUT_NET_NOISE if rollout_epochs(settings) > 0
                           else BENCH_NET_NOISE)
    theta = physics.theta() if physics is not None else bare_theta(actuator, armature)
    x, y = training_set(logs, actuator, theta, settings.horizon)
    subset = closed_loop_subset(logs, settings.closed_loop_logs)
    # packed once: a hybrid's search rolls them out thousands of times
    packed = PackedLogs.from_logs(subset, actuator) if kind == "hybrid" else None

    def closed_loop_loss(net: np.ndarray) -> float:
        return float(packed_errors(packed, theta, net).mean())

    info = {"logs": [log.name for log in logs]}
    if auto is not None:
        info["rollout_auto"] = auto
    if kind == "hybrid" and len(subset) < len(logs):
        info["closed_loop_logs"] = [log.name for log in subset]
    model = train_network(kind, x, y, actuator, physics, settings, closed_loop_loss, info,
                          progress, armature)
    if rollout_epochs(settings) > 0 and not model.training.get("interrupted"):
        from frictionsim.experiments.identification.rollout_training import (
            RolloutTraining,
            fine_tune,
        )

        model = fine_tune(model, logs, RolloutTraining(horizon=settings.rollout_horizon,
                                                       epochs=settings.rollout_epochs),
                          settings.seed, progress)
    return model


def train_network(kind: str, x: np.ndarray, y: np.ndarray, actuator: str,
                  physics: ParameterSet | None, settings: NetSettings, closed_loop_loss,
                  info: dict, progress: bool = False, armature: float = 0.0) -> LearnedActuator:
    """A ``net`` or ``hybrid`` trained on inputs ``x`` and torque labels ``y`` (from a bench's
    or a robot's inverse dynamics, over ``physics`` or a net's bare joint of rotor inertia
    ``armature``); a hybrid's weights then searched in closed loop for the lowest
    ``closed_loop_loss(net)`` (the MAE of the training rollouts with that network, rad).
    ``info``: what it was trained on, kept in the file's ``training``."""
    keep = np.isfinite(y) & np.all(np.isfinite(x), axis=1)
    x, y = x[keep], y[keep]
    if len(y) < 50:
        raise ConfigurationError(f"{len(y)} samples: too few to train a network on")
    start = time.perf_counter()
    # a hybrid trained through the rollout has the network's width: gradients are not held
    # back by the number of weights as the CMA search is (16 units learned nothing there)
    through = rollout_epochs(settings) > 0
    hidden = settings.hidden if kind == "net" or through \
        else settings.hybrid_hidden
    blind = (GAIN_INPUT,) if kind == "hybrid" and not settings.hybrid_sees_gain else ()
    if kind == "hybrid":
        settings = replace(settings, noise=settings.hybrid_noise)
    elif settings.noise is None:  # the callers know what it is trained on; this one did not say
        raise ConfigurationError("a network's input noise was left undecided")
    net, epochs, converged, interrupted = supervised_net(x, y, hidden, settings, blind)
    training = {"samples": int(len(y)), "horizon": settings.horizon, "epochs": epochs,
                "sees_gain": not blind,
                "converged": converged, "noise": settings.noise, "copies": settings.copies,
                "seed": settings.seed, **info}
    if interrupted:  # neither the search nor the rollout runs: the caller stops next
        training["interrupted"] = True
    if kind == "net":
        training["seconds"] = round(time.perf_counter() - start, 2)
        return LearnedActuator(kind, actuator, net, tuple(hidden), None, None, training,
                               armature=armature)
    # trained through the rollout next, the residual may reach the largest torque the labels
    # ever asked for (the search's median authority would cap what it can learn)
    quantile = 1.0 if through else AUTHORITY_QUANTILE
    authority = settings.authority if settings.authority is not None else \
        float(np.quantile(np.abs(y), quantile))
    if through or interrupted:  # from the supervised residual, no search
        training.update(seconds=round(time.perf_counter() - start, 2))
        net = with_authority(net, authority)
        # cut short, a hybrid keeps its physics alone: the one candidate the search and the
        # rollout both keep unless a residual does better, and none was tried
        return LearnedActuator(kind, actuator, zero_output(net) if interrupted else net,
                               tuple(hidden), authority, physics, training)
    net, search = closed_loop_residual(with_authority(net, authority), hidden, closed_loop_loss,
                                       settings, progress)
    training.update(search, seconds=round(time.perf_counter() - start, 2))
    return LearnedActuator(kind, actuator, net, tuple(hidden), authority, physics, training)


def open_loop_torque(model: LearnedActuator, logs: list[Log]) -> dict[str, float]:
    """The network's open-loop error on ``logs``: {"torque_mae": mean |network − label|,
    "torque_spread": mean |label − its mean|} (N·m), the labels the inverse dynamics of the
    logs through the model's own physics at its training horizon (:func:`training_set`).
    Against the closed-loop MAE it separates what the network gets wrong in one prediction
    from what its errors become once it drives the joint on its own."""
    from frictionsim.solvers.learned_rollout import physics_theta

    x, y = training_set(logs, model.actuator, physics_theta(model),
                        int(model.training.get("horizon", 1)))
    return torque_errors(model.net, x, y)


def torque_errors(net: np.ndarray, x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """{"torque_mae": mean |net(x) − y|, "torque_spread": mean |y − mean y|} (N·m) over the
    rows where the inputs ``x`` and the label ``y`` are finite."""
    from frictionsim.actuator_net import MAX_WIDTH, net_torque

    keep = np.isfinite(y) & np.all(np.isfinite(x), axis=1)
    x, y = x[keep], y[keep]
    work = np.empty(2 * MAX_WIDTH)
    return label_errors(np.array([net_torque(net, row, work) for row in x]), y)


def label_errors(predicted: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """{"torque_mae": mean |predicted − y|, "torque_spread": mean |y − mean y|} (N·m)."""
    return {"torque_mae": float(np.mean(np.abs(predicted - y))),
            "torque_spread": float(np.mean(np.abs(y - np.mean(y))))}


def stop_if_interrupted(model) -> None:
    """Raise the Ctrl-C (or SIGTERM) a learned model's training caught to keep its best so
    far (``model.training["interrupted"]``): called once that model is saved, so the command
    stops as for any interrupt instead of going on to its next model or split."""
    if model.training.get("interrupted"):
        raise KeyboardInterrupt


def closed_loop_residual(net: np.ndarray, hidden: tuple[int, ...], loss_of_net,
                         settings: NetSettings, progress: bool) -> tuple[np.ndarray, dict]:
    """The hybrid's weights searched by CMA-ES (nevergrad) for the lowest closed-loop loss
    ``loss_of_net(net)`` on the training data, from the supervised network with its output
    layer at 0: the search starts at the physical model itself and keeps the best candidate
    it evaluates, so the hybrid is never worse than its physics on what it is trained on."""
    import nevergrad as ng

    from frictionsim.experiments.common.progress import progress as progress_display

    head = 3 + len(hidden) + 4 * N_INPUTS
    net = zero_output(net)  # a zero residual: the physical model itself
    w0 = net[head + 2:].copy()

    def loss(w: np.ndarray) -> float:
        trial = net.copy()
        trial[head + 2:] = w
        return loss_of_net(trial)

    best_loss, best_w = loss(w0), w0
    physics_loss = best_loss
    optimizer = ng.optimizers.CMA(
        parametrization=ng.p.Array(init=w0).set_mutation(sigma=CLOSED_LOOP_STEP),
        budget=settings.closed_loop_budget, num_workers=CLOSED_LOOP_POPULATION)
    optimizer.parametrization.random_state = np.random.RandomState(settings.seed)
    bar = progress_display(total=settings.closed_loop_budget, desc="hybrid", unit="eval",
                           enabled=progress)
    interrupted = False
    try:
        for _ in range(settings.closed_loop_budget):
            candidate = optimizer.ask()
            value = loss(candidate.value)
            optimizer.tell(candidate, value if np.isfinite(value) else 1e9)
            if value < best_loss:
                best_loss, best_w = value, candidate.value.copy()
                bar.set_postfix_str(f"best {1e3 * best_loss:.2f} mrad")
            bar.update(1)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
    net[head + 2:] = best_w
    return net, {"closed_loop_evaluations": settings.closed_loop_budget,
                 "physics_train_mae": physics_loss, "train_mae": best_loss,
                 "interrupted": interrupted}


@dataclass
class LearnedFit(PerLogScores):
    """A learned actuator trained by an identification: its file and per-log MAE (rad) on the
    training and validation logs, and the seconds training took."""

    model: str
    params_file: Path
    train: dict[str, float]
    validation: dict[str, float]
    seconds: float
    samples: int


def fit_learned(kinds: tuple[str, ...], train: list[Log], validation: list[Log],
                physics: dict[str, ParameterSet], actuator: str, out: Path,
                settings: NetSettings = NetSettings(), progress: bool = True
                ) -> tuple[dict[str, LearnedFit], bool]:
    """Train the learned ``kinds`` (``net``, ``hybrid``) on ``train``, a hybrid over
    ``physics["m6"]``; write ``out/<kind>.json`` and score them on both sets. Returns the
    fits and whether Ctrl-C ended the training: the model in training then kept at its best
    so far, saved and scored like the others, and the kinds after it not trained."""
    from frictionsim.learned_files import save_learned

    fits = {}
    for kind in kinds:
        start = time.perf_counter()
        if progress:
            print(f"{kind}: training on {counted(len(train), 'log')}", flush=True)
        model = train_learned(kind, train, actuator, physics["m6"] if kind == "hybrid" else None,
                              settings, progress, rotor_inertia(physics, actuator))
        path = save_learned(out / f"{kind}.json", model)
        # scored even when interrupted (a second of closed-loop replays): the report gives
        # what the saved file does
        fits[kind] = LearnedFit(kind, path, learned_mae(model, train),
                                learned_mae(model, validation), time.perf_counter() - start,
                                int(model.training["samples"]))
        if model.training.get("interrupted"):
            return fits, True
    return fits, False


__all__ = ["AUTHORITY_QUANTILE", "AUTO_ROLLOUT_EPOCHS", "LearnedFit", "NetSettings",
           "auto_rollout_epochs", "closed_loop_subset", "condition", "decide_rollout",
           "fit_learned",
           "input_scale",
           "learned_mae", "open_loop_torque", "rotor_inertia", "stop_if_interrupted",
           "label_errors", "torch_installed", "torque_errors", "train_learned", "train_network",
           "training_set", "training_sequences"]
