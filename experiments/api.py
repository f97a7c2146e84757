"""frictionsim's front door for Python users: load, simulate, identify, and a servo's kernels.

Every name here is re-exported by ``import frictionsim`` (lazily: importing the package
stays light). Arguments after the first are keyword-only; shapes are inferred and checked
before any compiled code runs; results are named.

    >>> import frictionsim as fs
    >>> params = fs.load_params("m6.json")
    >>> logs = fs.load_logs(["processed/"])
    >>> runs = fs.simulate(logs, params)                  # one Rollout per log
    >>> found = fs.identify(logs[:8], actuator="xl330", models=("m1", "m6"),
    ...                     validation=logs[8:], budget=1000)
    >>> found.fits["m6"].params, found.fits["m6"].validation_mae
    >>> servo = fs.Servo(params, kp=400, mass=0.5, length=0.1)
    >>> q, v = servo.rollout(goal)                        # compiled, checked

This module sits on top of every room, beside the command line it serves as a library
(it uses ``frictionsim.solvers`` and the identification room); ``frictionsim/__init__``
re-exports its names by name, on first use, so the physics package imports nothing above
it.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from frictionsim import layout, schema
from frictionsim.errors import ConfigurationError
from frictionsim.firmware import firmware_settings
from frictionsim.limits import check_budget, is_number
from frictionsim.logs import Log, load_log
from frictionsim.params import ParameterSet, load_params
from frictionsim.solvers.engines import engine_names

#: The engines that simulate a bench log (:data:`frictionsim.solvers.engines.ENGINES`).
ENGINES = engine_names("bench")


def load_logs(paths: Sequence[str | os.PathLike] | str | os.PathLike, *,
              processed: bool | None = True) -> list[Log]:
    """Every log named (a folder stands for its ``*.json`` files), checked: LogError naming
    the file, entry and field of anything wrong. ``processed``: True (default) requires
    resampled logs, False raw ones, None either."""
    from frictionsim.logs import load_logs as _load_logs

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return _load_logs(list(paths), processed)


def load_actuator(path: str | os.PathLike) -> schema.Actuator:
    """Read an actuator declaration (TOML) and register it, so that parameter files naming it
    load; ActuatorFileError naming the file and key of anything wrong."""
    return schema.ACTUATORS.load(path)


def simulate(logs: Log | Sequence[Log], params: ParameterSet | str | os.PathLike, *,
             scheme: str | None = None, engine: str = "fixed_step", other_motor: bool = False):
    """Simulate processed logs with a parameter set (a ParameterSet or a file's path).

    ``scheme``: ``"reference"`` or ``"semi_implicit"`` (default: the parameter set's);
    ``engine``: a bench engine of :data:`frictionsim.solvers.engines.ENGINES`:
    ``"fixed_step"`` (the compiled rollout), ``"event_driven"`` (exact stick–slip, slower),
    ``"mujoco"`` or ``"mujoco_frictionloss"`` (the bench as an MJCF model stepped by MuJoCo
    with the servo adapter; needs the ``mujoco`` extra, semi-implicit scheme). Returns a
    :class:`~frictionsim.solvers.rollouts.Rollout` (``.q``, ``.v``, ``.mae``…) for one log, a
    list of them for several; SimulationError naming the log when a rollout diverges.
    Logs recorded with another motor than the parameters' actuator are refused
    (ConfigurationError) unless ``other_motor`` takes them on purpose (then warned about),
    as on the command line.
    """
    from frictionsim.solvers.engines import get_engine

    if not isinstance(params, ParameterSet):
        params = load_params(params)
    if scheme is not None:
        params = params.with_scheme(scheme)
    chosen = get_engine(engine, "bench")
    single = isinstance(logs, Log)
    items = _logs("simulate", logs)
    _motor_check(items, params.actuator, "the parameters", other_motor)
    runs = [chosen.bench(log, params) for log in items]
    return runs[0] if single else runs


def _logs(function: str, logs, what: str = "logs") -> list[Log]:
    """``logs`` (one Log or an iterable of them) as a list; ConfigurationError naming
    :func:`load_logs` for paths or anything else."""
    if isinstance(logs, Log):
        return [logs]
    if isinstance(logs, (str, os.PathLike)):
        raise ConfigurationError(f"{function}: {what} {str(logs)!r} is a path; read the logs with "
                                 "frictionsim.load_logs first")
    try:
        items = list(logs)
    except TypeError:
        raise ConfigurationError(f"{function}: {what} must be Log objects (frictionsim.load_logs), "
                                 f"not {type(logs).__name__}") from None
    for item in items:
        if not isinstance(item, Log):
            raise ConfigurationError(f"{function}: {what} must be Log objects "
                                     f"(frictionsim.load_logs), got {type(item).__name__} "
                                     f"({item!r:.40})")
    return items


def _motor_check(logs: list[Log], actuator: str, what: str, other_motor: bool) -> None:
    """Logs of another motor than ``actuator``: refused as the command line refuses them,
    or with ``other_motor`` taken and warned about (a PlausibilityWarning)."""
    from frictionsim.experiments.common.loading import check_motor_match, other_motors

    def say(logs: list[Log], actuator: str) -> None:
        motors = sorted(other_motors(logs, actuator))
        if motors:
            from frictionsim.plausibility import warn

            warn(f"logs recorded with motor {', '.join(map(repr, motors))} are taken as "
                 f"{actuator!r}: that servo's law on another servo's data")

    check_motor_match(logs, actuator, what, other_motor, "other_motor=True", say)


@dataclass(frozen=True)
class ModelResult:
    """One identified model: its parameters, its MAE (rad) on the training and validation
    logs (mean, and per log name), and what the fit cost."""

    params: ParameterSet
    train_mae: float
    validation_mae: float | None
    train: dict[str, float]
    validation: dict[str, float]
    evaluations: int
    seconds: float
    history: list[tuple[int, float]]
    restarts_confirmed: bool
    fit_losses: tuple[float, ...] = ()
    """With ``fits`` > 1, the training loss (rad) each fit ended at; this one is the lowest."""


@dataclass(frozen=True)
class Identification:
    """What :func:`identify` found: one :class:`ModelResult` per model, in chain order, and
    whether it was interrupted (Ctrl-C: each model holds its best so far)."""

    fits: dict[str, ModelResult]
    interrupted: bool

    def figure(self):
        """A matplotlib Figure: each model's training and validation MAE, and the loss against
        evaluations (convergence). Nothing is written; ``fig.savefig(path)`` if wanted."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(10, 4), layout="constrained")
        bars, conv = fig.subplots(1, 2)
        names = list(self.fits)
        x = np.arange(len(names))
        bars.bar(x - 0.2, [1e3 * f.train_mae for f in self.fits.values()], 0.4, label="training")
        if any(f.validation_mae is not None for f in self.fits.values()):
            bars.bar(x + 0.2, [1e3 * (f.validation_mae or math.nan) for f in self.fits.values()],
                     0.4, label="validation")
        bars.set_xticks(x, names)
        bars.set_ylabel("mean absolute error (mrad)")
        bars.legend()
        for name, f in self.fits.items():
            if f.history:
                evals, losses = zip(*f.history)
                conv.plot(evals, 1e3 * np.asarray(losses), label=name)
        conv.set_xlabel("loss evaluations")
        conv.set_ylabel("best training loss (mrad)")
        conv.legend()
        return fig


def identify(logs: Sequence[Log], *, actuator: str, models: Sequence[str] = ("m1", "m6"),
             validation: Sequence[Log] = (), budget: int = 3000, seed: int = 0, fits: int = 1,
             extensions: Sequence[str] = (), scheme: str = "reference",
             fixed: dict[str, float] | None = None,
             init: ParameterSet | str | os.PathLike | None = None,
             progress: bool = False, other_motor: bool = False) -> Identification:
    """Identify friction models from processed bench logs (the fitter of ``frictionsim
    identify``: independent CMA-ES explorations, refinement, each richer model started from
    the simpler one it contains).

    ``actuator``: a built-in name or a registered declaration (:func:`load_actuator`);
    ``models``: some of m1–m6; ``validation``: held-out logs (never training ones);
    ``budget``: loss evaluations per model; ``fits``: fits of each model, each with the whole
    budget and its own seed (the first with ``seed``), the lowest training loss kept;
    ``extensions``: electrical extensions to fit with
    (``supply``, ``current_limit``, ``latency``…); ``fixed``: parameters held at a value
    (inside their search bounds); ``init``: a ParameterSet or parameter file of ``actuator`` to
    start the search from; ``logs``: Log objects (:func:`load_logs`), or one;
    ``other_motor``: take logs recorded with another motor than ``actuator`` on purpose
    (warned about; refused otherwise, ConfigurationError, as on the command line).
    Returns an :class:`Identification`; writes nothing (the command line writes files).
    """
    from frictionsim.experiments.identification.pipeline import IdentifySettings, content_digest
    from frictionsim.experiments.identification.pipeline import identify as run_pipeline
    from frictionsim.experiments.identification.schedule import FitSettings
    from frictionsim.experiments.identification.starts import check_fixed, start_file

    schema.get_actuator(actuator)
    try:
        asked = [models] if isinstance(models, str) else list(models)
    except TypeError:
        raise ConfigurationError(f"models {models!r}: expected some of "
                                 f"{', '.join(schema.MODELS)}") from None
    unknown = sorted(set(asked) - set(schema.MODELS))
    if not asked or unknown:
        raise ConfigurationError(f"models {unknown or asked}: expected some of {', '.join(schema.MODELS)}")
    models = tuple(m for m in schema.MODELS if m in asked)
    check_budget(budget, "budget", low=10)
    logs, validation = _logs("identify", logs), _logs("identify", validation, "validation")
    if not logs:
        raise ConfigurationError("identify needs at least one training log")
    _motor_check(logs + validation, actuator, f"actuator={actuator!r}", other_motor)
    extensions = schema.check_extensions(extensions)
    fixed = {} if fixed is None else fixed
    check_fixed(fixed, list(models), actuator, extensions, "fixed")
    fixed = {name: float(value) for name, value in fixed.items()}
    if init is not None:
        init = start_file(init, actuator, list(models), extensions, "init")
    trained = {content_digest(log) for log in logs}  # by content: a copy is the same log
    for log in validation:
        if content_digest(log) in trained:
            raise ConfigurationError(f"validation log {log.name} is also a training log; a validation "
                                     "error must come from logs the fit has not seen")
    settings = IdentifySettings(models, actuator, FitSettings(budget, seed, fits),
                                fixed=fixed, init=init, progress=progress,
                                scheme=scheme, extensions=extensions)
    with tempfile.TemporaryDirectory(prefix="frictionsim-identify-") as folder:
        fits, interrupted = run_pipeline(logs, validation, settings, Path(folder))
    results = {
        m: ModelResult(f.result.params, f.train_mae, f.validation_mae, dict(f.train),
                       dict(f.validation), f.result.evaluations, f.result.seconds,
                       list(f.result.history), f.result.exploration.confirmed(),
                       f.result.fit_losses)
        for m, f in fits.items()}
    return Identification(results, interrupted)


class ServoKernels(NamedTuple):
    """The compiled functions of a servo, for your own ``@njit`` loop (see :class:`Servo`): the
    servo bank's (:mod:`frictionsim.servo_bank`) reset, control period and physics step of one
    servo, its held torque, and the bench's fixed step."""

    servo_state: object
    reset_servo: object
    period_servo: object
    step_servo: object
    held_torque: object
    step: object
    servo_step: object


class Servo:
    """A servo ready to simulate: an identified parameter set on its bench (or robot joint)
    with its firmware settings, as the flat vectors the compiled kernels take.

    ``params``: a ParameterSet or a parameter file; ``kp``: the firmware gain (register units,
    required); ``vin``/``damping``: defaults from the actuator; ``mass``, ``length``,
    ``arm_mass``: the pendulum (kg, m; 0 on a robot joint, where the model supplies the
    dynamics); ``dt``: the control period (s).

    ``servo.theta`` and ``servo.bench`` are the vectors; ``servo.kernels`` the compiled
    functions (:class:`ServoKernels`) to call from your own ``@njit`` code with them;
    :meth:`rollout` runs a goal trajectory through the compiled rollout.
    """

    def __init__(self, params: ParameterSet | str | os.PathLike, *, kp: float,
                 vin: float | None = None, damping: float | None = None, mass: float = 0.0,
                 length: float = 0.0, arm_mass: float = 0.0, dt: float = 0.005) -> None:
        if not isinstance(params, ParameterSet):
            params = load_params(params)
        act = schema.get_actuator(params.actuator)
        vin = act.vin if vin is None else vin
        # the firmware settings refuse what is not finite or is negative; a servo needs more:
        self.bench = firmware_settings(act, {"mass": mass, "length": length, "arm_mass": arm_mass,
                                             "kp": kp, "vin": vin, "damping": damping}, dt)
        if not kp > 0:
            raise ConfigurationError(f"Servo: kp = {kp!r} must be positive (the firmware gain)")
        if not dt <= 1.0:
            raise ConfigurationError(f"Servo: dt = {dt!r} s must be in (0, 1]")
        if act.law == "voltage" and not vin > 0:
            raise ConfigurationError(f"Servo: vin = {vin!r} V must be positive")
        self.params = params
        self.theta = params.theta()
        self.theta.flags.writeable = False
        self.bench.flags.writeable = False

    @property
    def kernels(self) -> ServoKernels:
        """The compiled servo bank functions and step (imported on first use)."""
        from frictionsim import servo_bank as sb
        from frictionsim.servo_unit import servo_state
        from frictionsim.solvers import fixed_step as fs

        return ServoKernels(servo_state, sb.reset_servo, sb.period_servo, sb.step_servo,
                            sb.held_torque, fs.step, fs.servo_step)

    def rollout(self, goal, *, enable=None, q0: float = 0.0, v0: float = 0.0,
                supply=None) -> tuple[np.ndarray, np.ndarray]:
        """The joint's position (rad) and velocity (rad/s) before each control period for the
        goal positions ``goal`` (rad, one per period); ``enable`` (0/1 per period, default all
        on); ``supply``: logged supply voltages (V) for the ``supply`` extension, else the
        source model. Needs a pendulum with inertia (``mass``, ``length``)."""
        from frictionsim.solvers.errors import check_inertia
        from frictionsim.solvers.fixed_step import rollout

        for name, value, unit in (("q0", q0, "rad"), ("v0", v0, "rad/s")):
            if not is_number(value) \
                    or not math.isfinite(value):
                raise ConfigurationError(f"Servo.rollout: {name} = {value!r} must be a finite "
                                         f"number ({unit})")

        goal = _vector("goal", goal)
        n = goal.shape[0]
        enable = np.ones(n) if enable is None else _vector("enable", enable, n)
        if not np.isin(enable, (0.0, 1.0)).all():
            raise ConfigurationError("enable must hold 0 or 1 per period")
        supply = np.full(n, math.nan) if supply is None else _vector("supply", supply, n)
        check_inertia(self.theta, self.bench, "Servo.rollout")
        q, v = np.empty(n), np.empty(n)
        rollout(goal, enable, supply, float(q0), float(v0), self.theta, self.bench,
                float(self.bench[layout.DT]), q, v)
        return q, v


def _vector(name: str, values, n: int | None = None) -> np.ndarray:
    """A contiguous float64 vector of finite values (of length n), or ValueError naming it."""
    try:
        array = np.ascontiguousarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigurationError(f"{name} must be numbers") from None
    if array.ndim != 1 or array.shape[0] == 0:
        raise ConfigurationError(f"{name} must be a non-empty 1-D sequence, got shape {array.shape}")
    if n is not None and array.shape[0] != n:
        raise ConfigurationError(f"{name} has {array.shape[0]} values; goal has {n}")
    if name != "supply" and not np.isfinite(array).all():
        raise ConfigurationError(f"{name}[{int(np.argmax(~np.isfinite(array)))}] is not finite")
    return array


__all__ = ["ENGINES", "Identification", "ModelResult", "Servo", "ServoKernels", "identify",
           "load_actuator", "load_log", "load_logs", "load_params", "simulate"]
