"""Identifying a robot's servos from its own recordings (``frictionsim robot identify``).

The servos of one actuator type share one parameter set; each joint may add a calibration
offset (:mod:`~frictionsim.experiments.robots.search_space`). The loss of a candidate
is the mean, over windows of the training recordings restarted from their recorded state
(:class:`~frictionsim.solvers.robot_windows.RobotWindows`), of the mean absolute position
error; it is minimised by the same fitter as the bench's
(:func:`~frictionsim.experiments.identification.fitter.fit`: exact start points, CMA-ES
restarts, progress, Ctrl-C keeps the best), richer models starting from the simpler model
they contain. Each model's best is written to ``OUT/<model>.json`` (a robot parameter file,
docs/model.md §12) whenever it improves. Recordings held out are then replayed whole in
closed loop from their first state, as ``robot simulate`` does.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from frictionsim import layout, schema
from frictionsim.atomic import write_json
from frictionsim.errors import ConfigurationError
from frictionsim.experiments.common.output import counted
from frictionsim.experiments.identification.fitter import FitResult, FitSettings
from frictionsim.experiments.identification.learned import NetSettings
from frictionsim.experiments.identification.search_space import CONTAINS, SearchSpace
from frictionsim.experiments.identification.starts import (
    Start,
    fit_chain,
    fit_one_model,
    latency_tries,
    start_for,
)
from frictionsim.experiments.robots.fit_defaults import (
    MIN_WINDOWS,
    START_VELOCITIES,
    START_VELOCITY,
    STRIDE,
    WINDOW,
)
from frictionsim.experiments.robots.recorded import (
    hold_counts,
    joint_means,
    mean_mae,
    recorded_arrays,
    replay,
)
from frictionsim.experiments.robots.reference_polish import polish_on_reference
from frictionsim.experiments.robots.search_space import RobotPoint, RobotSearchSpace
from frictionsim.learned_files import LearnedActuator
from frictionsim.params import ParameterSet
from frictionsim.robot_files import RobotDescription
from frictionsim.robot_params import RobotParameters, load_robot_params
from frictionsim.robot_recordings import Recording, differenced_velocity
from frictionsim.solvers.learned_rollout import physics_theta
from frictionsim.solvers.robot import Robot
from frictionsim.solvers.robot_servos import joint_servos, robot_spec
from frictionsim.solvers.robot_windows import RecordedWindow, RobotWindows

#: What each joint may have of its own: nothing, or a calibration offset.
PER_JOINT = ("none", "offsets")
#: The robot fit's position update: MuJoCo's (semi-implicit Euler), so that the fixed step
#: and MuJoCo with the servo adapter replay the same servo.
SCHEME = "semi_implicit"


@dataclass(frozen=True)
class RobotFitSettings:
    """What to fit and on what: models in chain order, the fitter's settings, docs/model.md §9
    extensions, parameters held fixed, the per-joint terms, windows of ``window`` s taking
    one in ``stride`` of each recording, threads, progress bars."""

    models: tuple[str, ...]
    fit: FitSettings = FitSettings()
    extensions: tuple[str, ...] = ()
    fixed: dict[str, float] = field(default_factory=dict)
    per_joint: str = "none"
    window: float = WINDOW
    stride: int | None = None
    """One window in ``stride`` (None: :func:`default_stride`)."""
    threads: int = 2
    progress: bool = True
    learned: tuple[str, ...] = ()
    """Learned actuators trained after the physical models (``net``, ``hybrid`` over M6)."""
    net: NetSettings = NetSettings(closed_loop_budget=600)
    reuse: bool = True
    """Reuse MuJoCo's dynamics terms along a reference candidate's run
    (:class:`~frictionsim.solvers.robot_windows.RobotWindows`); each model's final loss is
    the exact fixed step's either way."""
    joint_scales: bool = False
    """Fit each servo joint's friction and armature scales after each physical model
    (:mod:`~frictionsim.experiments.robots.joint_scale_fit`)."""
    held: dict = field(default_factory=dict)
    """Actuator name → the ParameterSet its servos keep (a robot of several actuator types
    fits the one type not held, the others' servos simulated with these)."""
    polish: bool = True
    """Polish each physical model's result after CMA-ES
    (:mod:`~frictionsim.experiments.identification.polish`: Gauss–Newton steps on the
    residuals of each window and joint)."""
    start_velocity: str = START_VELOCITY
    """Each window's starting velocity (:func:`recording_windows`)."""
    search_stride: int | None = None
    """CMA-ES's windows: one in this many of each recording (None: ``stride``'s); the
    polish, the joint scales and every loss reported are on the fit's own windows."""
    replicate: bool = False
    """A bootstrap replicate's fit, which prints no line of its own (its results are the
    bootstrap's); ``progress`` off only hides the bars and the stages' start lines."""

    def resolved(self, robot: RobotDescription, recordings: list[Recording]
                 ) -> RobotFitSettings:
        """These settings with the stride decided (:func:`default_stride` on ``recordings``
        when it is None)."""
        if self.stride is not None:
            return self
        return dataclasses.replace(self, stride=default_stride(robot, recordings, self.window))


def actuator_of(robot: RobotDescription, held=()) -> str:
    """The actuator type a fit shares its parameters over: the one type of the robot's
    simulated servos that is not ``held`` (actuator names whose servos keep given sets)."""
    kinds = sorted({j.actuator for j in robot.servo_joints})
    foreign = [a for a in held if a not in kinds]
    if foreign:
        raise ConfigurationError(f"held servos of {foreign[0]}: robot {robot.name} has none "
                                 f"(its servos: {', '.join(kinds)})")
    free = [k for k in kinds if k not in held]
    if len(free) != 1:
        raise ConfigurationError(
            f"robot {robot.name}: its servos are of {len(kinds)} actuator types "
            f"({', '.join(kinds)}) and a fit shares its parameters over one: robot identify "
            "fits one type at a time, the others held at a set of theirs (--hold TYPE=FILE)"
            if free else
            f"robot {robot.name}: --hold holds every actuator type ({', '.join(kinds)}): "
            "nothing is left to fit")
    return free[0]


def recording_windows(robot: RobotDescription, recording: Recording, seconds: float,
                      stride: int, phase: int = 0, start_velocity: str = START_VELOCITY
                      ) -> list[RecordedWindow]:
    """Windows of ``seconds`` of the recording (whole bus rows), every ``stride``-th one
    starting with the ``phase``-th (mod ``stride``), in the model's joint convention, each
    starting at its first row's position and the velocity ``start_velocity`` says
    (:data:`~frictionsim.experiments.robots.fit_defaults.START_VELOCITIES`)."""
    if start_velocity not in START_VELOCITIES:
        raise ConfigurationError(f"start velocity {start_velocity!r}: one of "
                                 f"{', '.join(START_VELOCITIES)}")
    goal, q, v = recorded_arrays(robot, recording)
    if start_velocity == "difference":
        v = differenced_velocity(q, recording.t)
    counts = hold_counts(recording, robot.control_period)
    rows = window_rows(robot, seconds)
    out = []
    for w, a in enumerate(range(0, window_count(robot, recording, seconds) * rows, rows)):
        if (w + phase) % stride:
            continue
        held = counts[a:a + rows].copy()
        held[-1] = 1  # the last row's prediction needs one more period
        steps = np.concatenate(([0], np.cumsum(held)[:-1]))
        out.append(RecordedWindow(f"{recording.name}@{recording.t[a]:.0f}s",
                                  np.repeat(goal[a:a + rows], held, axis=0), q[a].copy(),
                                  v[a].copy(), steps, q[a:a + rows].copy()))
    return out


def window_rows(robot: RobotDescription, seconds: float) -> int:
    """Recorded rows (bus periods) in a window of ``seconds``, two at least."""
    return max(2, int(round(seconds / robot.bus_period)))


def window_count(robot: RobotDescription, recording: Recording, seconds: float) -> int:
    """How many whole windows of ``seconds`` the recording holds."""
    rows = window_rows(robot, seconds)
    return max(0, (len(recording.t) - rows) // rows + 1)


def default_stride(robot: RobotDescription, recordings: list[Recording], seconds: float) -> int:
    """One window in :data:`STRIDE`, or in fewer so that about :data:`MIN_WINDOWS` windows
    are kept where the recordings hold that many (one in 1 when they hold fewer)."""
    total = sum(window_count(robot, r, seconds) for r in recordings)
    return max(1, min(STRIDE, total // MIN_WINDOWS))


def training_windows(robot: RobotDescription, recordings: list[Recording], seconds: float,
                     stride: int, start_velocity: str = START_VELOCITY) -> list[RecordedWindow]:
    """Windows of every recording, one in ``stride``, the phase turning from one recording to
    the next so that the windows cover every part of the motions (:func:`recording_windows`)."""
    out = []
    for i, rec in enumerate(recordings):
        out += recording_windows(robot, rec, seconds, stride, i, start_velocity)
    if not out:
        raise ConfigurationError(f"no window of {seconds:g} s fits in the {len(recordings)} training "
                                 "recordings; use a shorter --window")
    return out


def servo_space(model: str, actuator: str, settings: RobotFitSettings,
                extra: dict[str, float] | None = None) -> SearchSpace:
    """The servo's search space: ``q_offset`` held at 0 (the joints' offsets stand for it)."""
    names = schema.parameters(model, actuator, settings.extensions)
    fixed = {"q_offset": 0.0, **{k: v for k, v in settings.fixed.items() if k in names},
             **(extra or {})}
    return SearchSpace(model, actuator, fixed, SCHEME, settings.extensions)


def robot_parameters(robot: RobotDescription, point: RobotPoint, fit_info: dict,
                     joint_scales: dict | None = None, held: dict | None = None
                     ) -> RobotParameters:
    """The robot parameter file of a point (docs/model.md §12), with how it was fitted;
    ``held``: the other actuator types' sets, kept as they were given."""
    return RobotParameters(robot.name, {**(held or {}), point.params.actuator: point.params},
                           dict(point.offsets), fit_info, joint_scales=dict(joint_scales or {}))


class HeldOutScores:
    """The mean over held-out recordings of the mean joint MAE (rad) of the dataclass whose
    ``validation`` ({name: {joint: MAE}}) it is."""

    validation: dict[str, dict[str, float]]

    @property
    def validation_mae(self) -> float | None:
        return mean_mae(self.validation)


@dataclass
class RobotModelFit(HeldOutScores):
    """A fitted model: the fitter's result, its file, its errors on the held-out recordings
    replayed whole ({name: {joint: MAE (rad)}}), its per-joint terms."""

    model: str
    result: FitResult
    path: Path
    validation: dict[str, dict[str, float]]
    per_joint: str
    #: the largest difference reused dynamics made to a window's error of the best (rad)
    reuse_error: float | None = None
    #: per joint, its friction and armature scales (--joint-scales), and the window loss
    #: of the shared set they scale (rad)
    joint_scales: dict[str, dict[str, float]] = field(default_factory=dict)
    shared_loss: float | None = None


@dataclass
class RobotLearnedFit(HeldOutScores):
    """A learned actuator trained on the robot: its file, its loss on the training windows
    (rad), its errors on the held-out recordings replayed whole, what training took."""

    model: str
    learned: LearnedActuator
    path: Path
    window_loss: float
    validation: dict[str, dict[str, float]]
    seconds: float


def _evaluator(robot: RobotDescription, mjcf: Path, actuator: str,
               windows: list[RecordedWindow], threads: int, reuse: bool = False,
               held: dict | None = None) -> RobotWindows:
    # the servos' firmware settings; the fitted type's parameters come with each candidate,
    # the held types' stay theirs
    held = {a: p.with_scheme(SCHEME) for a, p in (held or {}).items()}
    servos = joint_servos(robot, {**held, actuator: ParameterSet.defaults("m1", actuator)})
    sim = Robot(robot_spec(robot, mjcf), servos, control_period=robot.control_period,
                scheme=SCHEME)
    kept = {i: servo.theta() for i, (servo, joint) in enumerate(zip(servos, robot.servo_joints))
            if joint.actuator in held}
    return RobotWindows(sim, windows, threads, reuse and sim.nq == sim.nv, kept)


def exact_result(evaluator: RobotWindows, result: FitResult) -> tuple[FitResult, float | None]:
    """``result`` with its loss the exact fixed step's (MuJoCo's terms every step), and the
    largest difference the reused dynamics made to one of its windows' errors (rad; None
    where nothing was reused)."""
    row = result.params.theta()[None, :]
    exact = evaluator.exact_errors(row)[0]
    if evaluator.reference is None:
        return dataclasses.replace(result, loss=float(exact.mean())), None
    reused = evaluator.reused_errors(row)[0]
    return (dataclasses.replace(result, loss=float(exact.mean())),
            float(np.abs(reused - exact).max()))


def fit_robot(robot: RobotDescription, mjcf: Path, train: list[Recording],
              validation: list[Recording], settings: RobotFitSettings, out: Path,
              earlier: dict[str, RobotParameters] | None = None
              ) -> tuple[dict[str, RobotModelFit | RobotLearnedFit], bool, dict]:
    """Fit ``settings.models`` on windows of ``train``, then train ``settings.learned``
    (:mod:`frictionsim.experiments.robots.learned`), replay ``validation``; files to ``out``.

    Returns the fits, whether Ctrl-C ended the run (the models fitted so far are in the fits,
    each with its best so far), and the cost: seconds of window preparation and fitting,
    window count and control periods, peak memory (MiB).
    """
    actuator = actuator_of(robot, settings.held)
    t0 = time.perf_counter()
    settings = settings.resolved(robot, train)
    windows = training_windows(robot, train, settings.window, settings.stride,
                               settings.start_velocity)
    evaluator = _evaluator(robot, mjcf, actuator, windows, settings.threads, settings.reuse,
                           settings.held)
    cost = {"windows": len(windows), "control_periods": evaluator.n_steps,
            "window_seconds": settings.window, "stride": settings.stride,
            "threads": settings.threads, "reused_dynamics": evaluator.reuse}
    print(f"{counted(len(train), 'training recording')} → {counted(len(windows), 'window')} "
          f"of {settings.window:g} s ({evaluator.n_steps} control periods per evaluation); "
          f"{len(validation)} held out")
    search = None
    if settings.search_stride not in (None, settings.stride):
        # never empty: the first recording's first window is in every stride
        searched = training_windows(robot, train, settings.window, settings.search_stride,
                                    settings.start_velocity)
        search = _evaluator(robot, mjcf, actuator, searched, settings.threads, settings.reuse,
                            settings.held)
        cost["search_windows"] = len(search.windows)
        print(f"CMA-ES on {len(search.windows)} of them (one in {settings.search_stride}, "
              f"{search.n_steps} control periods)")
    out.mkdir(parents=True, exist_ok=True)
    reuse_errors: dict[str, float | None] = {}
    chain, interrupted = fit_models(robot, evaluator, settings, out, earlier, reuse_errors,
                                    search)
    fits = {model: RobotModelFit(model, result, path_of(out, model), {}, settings.per_joint,
                                 reuse_errors.get(model))
            for model, result in chain.items()}
    if evaluator.reuse:
        cost["references"] = evaluator.references
        cost["reuse_error_at_refresh_max_rad"] = max(evaluator.refresh_errors, default=None)
    if settings.joint_scales and not interrupted:
        interrupted = _fit_scales(robot, evaluator, settings, fits)
    learned: dict[str, RobotLearnedFit] = {}
    if settings.learned and not interrupted:
        try:
            learned = _train_learned(robot, mjcf, train, settings, fits, evaluator, out)
        except KeyboardInterrupt:  # the actuator in training saved its best so far first
            interrupted = True
    cost["fit_seconds"] = time.perf_counter() - t0
    cost["peak_memory_mib"] = peak_memory_mib()
    for model, f in fits.items():
        if validation and not interrupted:
            try:
                f.validation = replay(robot, mjcf,
                                      robot_parameters(robot, f.result.params, {},
                                                       f.joint_scales, settings.held),
                                      validation, "fixed_step", settings.progress,
                                      f"{model}: replaying held-out recordings")
            except KeyboardInterrupt:  # the fits are whole: saved, without held-out scores
                interrupted = True
        _save(path_of(out, model), robot, f, settings, train, cost)
    for kind, f in learned.items():
        if validation and not interrupted:
            try:
                f.validation = replay(robot, mjcf, load_robot_params(f.path), validation,
                                      "fixed_step", settings.progress,
                                      f"{kind}: replaying held-out recordings")
            except KeyboardInterrupt:
                interrupted = True
    return {**fits, **learned}, interrupted, cost


def _fit_scales(robot: RobotDescription, evaluator: RobotWindows, settings: RobotFitSettings,
                fits: dict[str, RobotModelFit]) -> bool:
    """Each physical model's joint scales (:mod:`~frictionsim.experiments.robots.joint_scale_fit`),
    its loss then the scaled one's, their evaluations and seconds added to the model's;
    whether Ctrl-C cut it short (the models without scales then keep their shared sets,
    saved as such)."""
    from frictionsim.experiments.robots.joint_scale_fit import fit_joint_scales

    for model, f in fits.items():
        start = time.perf_counter()
        try:
            scales, loss, shared, reuse_error, evaluations = fit_joint_scales(
                evaluator, f.result.params.theta())
        except KeyboardInterrupt:
            return True
        f.joint_scales = {j.name: {"friction": float(s[0]), "armature": float(s[1])}
                          for j, s in zip(robot.servo_joints, scales)}
        f.shared_loss = shared
        f.result = dataclasses.replace(
            f.result, loss=loss, evaluations=f.result.evaluations + evaluations,
            seconds=f.result.seconds + time.perf_counter() - start)
        if reuse_error is not None:  # the model's best is now the scaled one
            f.reuse_error = reuse_error
        print(f"{model}: joint scales (friction, armature) "
              + ", ".join(f"{j} {v['friction']:.2f}/{v['armature']:.2f}"
                          for j, v in f.joint_scales.items())
              + f"; window loss {1e3 * shared:.2f} → {1e3 * loss:.2f} mrad "
              f"({evaluations} evaluations, {time.perf_counter() - start:.0f} s)", flush=True)
    return False


def fit_models(robot: RobotDescription, evaluator: RobotWindows, settings: RobotFitSettings,
               out: Path, earlier: dict[str, RobotParameters] | None = None,
               reuse_errors: dict[str, float | None] | None = None,
               search: RobotWindows | None = None) -> tuple[dict[str, FitResult], bool]:
    """The chain of ``settings.models`` on the windows of ``evaluator``, each model's best
    written to ``out/<model>.json`` as it improves; whether Ctrl-C ended it. Each result's
    loss is the exact fixed step's; ``reuse_errors`` receives, per model, the largest
    difference reused dynamics made to a window's error of its best (:func:`exact_result`).
    ``search``: other windows CMA-ES runs on (``search_stride``), the polish then on
    ``evaluator``'s."""
    actuator = actuator_of(robot, settings.held)
    joints = tuple(j.name for j in robot.servo_joints)
    offset_joints = joints if settings.per_joint == "offsets" else ()

    def one(model: str, fitted: dict[str, RobotPoint]) -> FitResult:
        saved = (earlier or {}).get(model)
        start = start_for(model, {m: p.params for m, p in fitted.items()}, None,
                          saved.servos[actuator] if saved is not None else None)
        simpler = next((fitted[m] for m in CONTAINS[model] if m in fitted), None)
        offsets = {f"offset:{j}": v for j, v in
                   (simpler.offsets if simpler else {}).items()}
        saved_offsets = {f"offset:{j}": v for j, v in
                         (saved.joint_offsets if saved is not None else {}).items()}
        result = _fit_model(robot, model, actuator, joints, offset_joints, search or evaluator,
                            settings, out, start, offsets, saved_offsets)
        reuse_error = None
        try:
            result, reuse_error = exact_result(evaluator, result)
            if settings.polish and not result.interrupted:
                result, reuse_error = _polished(robot, model, actuator, joints, offset_joints,
                                                evaluator, settings, out, result, reuse_error)
        except KeyboardInterrupt:
            # between the stages that catch it themselves: the best so far is on disk, and
            # the report still gets written from it
            result = dataclasses.replace(result, interrupted=True)
        if reuse_errors is not None:
            reuse_errors[model] = reuse_error
        return result

    return fit_chain(settings.models, one)


def _train_learned(robot: RobotDescription, mjcf: Path, train: list[Recording],
                   settings: RobotFitSettings, fits: dict[str, RobotModelFit],
                   evaluator: RobotWindows, out: Path) -> dict[str, RobotLearnedFit]:
    """The learned actuators of ``settings.learned``, over the richest physical fit's point
    (M6 for a hybrid), written to ``out/<kind>.json`` as robot parameter files."""
    from frictionsim.experiments.identification.learned import stop_if_interrupted
    from frictionsim.experiments.robots.learned import train_robot_learned

    if "hybrid" in settings.learned and "m6" not in fits:
        raise ConfigurationError("--model hybrid is m6 plus a learned residual: add m6 to --model")
    if fits:
        point = fits["m6" if "m6" in fits else settings.models[-1]].result.params
    else:  # a net alone: on the bare joint with the actuator's default rotor (the bench's
        # rotor_inertia), the joints uncalibrated
        point = RobotPoint(ParameterSet.defaults("m1", actuator_of(robot, settings.held))
                           .with_scheme(SCHEME), {}, tuple(j.name for j in robot.servo_joints))
    out_fits = {}
    for kind in settings.learned:
        if settings.progress:
            print(f"{kind}: training on {counted(len(train), 'recording')}", flush=True)
        start = time.perf_counter()
        learned = train_robot_learned(kind, robot, mjcf, train, point, evaluator,
                                      settings.net, settings.progress)
        rp = RobotParameters(robot.name, {point.params.actuator: learned}, dict(point.offsets),
                             {"model": kind, "training": learned.training})
        path = path_of(out, kind)
        write_json(path, rp.to_dict())
        stop_if_interrupted(learned)
        row = point.theta()[None, :]
        if kind == "net":
            row = np.concatenate([physics_theta(learned), row[0, layout.THETA_SIZE:]])[None]
        loss = float(evaluator.errors(row, learned.net[None, :])[0].mean())
        out_fits[kind] = RobotLearnedFit(kind, learned, path, loss, {},
                                         time.perf_counter() - start)
    return out_fits


def peak_memory_mib() -> float:
    """The process's peak resident memory (MiB; Linux's ru_maxrss is in KiB), 0 where the
    platform does not say."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return 0.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def path_of(out: Path, model: str) -> Path:
    return out / f"{model}.json"


def _fit_info(f: RobotModelFit, settings: RobotFitSettings, train: list[Recording],
              cost: dict) -> dict:
    return {"model": f.model, "window_loss_rad": f.result.loss,
            "evaluations": f.result.evaluations, "seconds": f.result.seconds,
            "per_joint": f.per_joint, "training_recordings": [r.name for r in train],
            "validation_mae_rad": f.validation_mae,
            "validation_joint_mae_rad": joint_means(f.validation) if f.validation else None,
            "windows": cost["windows"], "window_seconds": settings.window,
            "stride": settings.stride, "search_stride": settings.search_stride,
            "start_velocity": settings.start_velocity,
            "seed": settings.fit.seed, "fits": settings.fit.fits,
            "fit_losses_rad": list(f.result.fit_losses) or None,
            "reuse_error_rad": f.reuse_error,
            "held": {a: p.source for a, p in settings.held.items()} or None,
            "shared_window_loss_rad": f.shared_loss,
            "interrupted": f.result.interrupted}


def _save(path: Path, robot: RobotDescription, f: RobotModelFit, settings: RobotFitSettings,
          train: list[Recording], cost: dict) -> None:
    write_json(path, robot_parameters(robot, f.result.params,
                                      _fit_info(f, settings, train, cost),
                                      f.joint_scales, settings.held).to_dict())


def _fit_model(robot, model, actuator, joints, offset_joints, evaluator, settings, out,
               start, offsets, saved_offsets) -> FitResult:
    """One model (:func:`~frictionsim.experiments.identification.starts.fit_one_model`, once
    per latency with ``latency``, as the bench's fit); the best saved to ``out/<model>.json``
    whenever it improves."""
    path = path_of(out, model)
    names = schema.parameters(model, actuator, settings.extensions)

    def space_for(extra: dict) -> RobotSearchSpace:
        return RobotSearchSpace(servo_space(model, actuator, settings, extra), joints,
                                offset_joints)

    def start_in(space: RobotSearchSpace) -> Start:
        point = _own(space, names, {**(start.point or {}), **offsets}) \
            if start.point or offsets else None
        centre = _own(space, names, {**(start.centre or {}), **offsets}) \
            if start.centre or offsets else None
        alternatives = tuple(_own(space, names, {**a, **saved_offsets})
                             for a in start.alternatives)
        return Start(point, centre, start.inherited | frozenset(offsets), alternatives)

    def save(point: RobotPoint, loss: float) -> None:
        write_json(path, robot_parameters(robot, point, {
            "model": model, "window_loss_rad": loss, "in_progress": True},
            held=settings.held).to_dict())

    return fit_one_model(model, latency_tries(settings.extensions, settings.fixed), space_for,
                         start_in, evaluator, settings.fit, save, settings.progress)


def _polished(robot, model, actuator, joints, offset_joints, evaluator: RobotWindows,
              settings: RobotFitSettings, out: Path, result: FitResult,
              reuse_error: float | None) -> tuple[FitResult, float | None]:
    """``result`` (its loss exact) polished (:func:`polish_on_reference`: from a reference
    at its point, moved where the polish ends far from it), kept only if the polished
    point's exact loss is lower; the polish's evaluations and time added, its best saved to
    ``out/<model>.json``; with the reuse error of the one kept."""
    point = result.params
    held = {k: point.params.values[k] for k in schema.DISCRETE
            if k in point.params.values and k not in settings.fixed}
    space = RobotSearchSpace(servo_space(model, actuator, settings, held), joints,
                             offset_joints)
    if settings.progress:
        print(f"{model}: polishing (Gauss-Newton steps on {evaluator.n_logs} windows × "
              f"{counted(len(joints), 'joint')})", flush=True)
    done, _, polished_error = polish_on_reference(
        evaluator, space.point(point.values), lambda xs: (space.thetas(xs), None))
    polished = dataclasses.replace(
        result, params=space.parameter_set(done.x), loss=done.loss,
        evaluations=result.evaluations + done.evaluations,
        seconds=result.seconds + done.seconds, interrupted=done.interrupted)
    if not settings.replicate and done.evaluations > 1:
        print(f"{model}: {'polish interrupted' if done.interrupted else 'polished'}, window "
              f"loss {1e3 * result.loss:.3f} → "
              f"{1e3 * polished.loss:.3f} mrad ({done.evaluations} evaluations, "
              f"{done.seconds:.0f} s)", flush=True)
    if not polished.loss < result.loss:
        return dataclasses.replace(result, evaluations=polished.evaluations,
                                   seconds=polished.seconds,
                                   interrupted=done.interrupted), reuse_error
    write_json(path_of(out, model), robot_parameters(robot, polished.params, {
        "model": model, "window_loss_rad": polished.loss, "in_progress": True},
        held=settings.held).to_dict())
    return polished, polished_error


def _own(space: RobotSearchSpace, names, values: dict) -> dict:
    """The values that are the space's to set: its model's parameters not held fixed, and
    the offsets it searches."""
    keep = set(space.free) | set(names)
    return {k: v for k, v in values.items() if k in keep and k not in space.servo.fixed}
