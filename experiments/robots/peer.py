"""A robot identified by MuJoCo's own tools and by frictionsim's, on the same training and
held-out recordings (``frictionsim run vs-mujoco --robot``).

Four models, each scored on the held-out recordings replayed whole from their first recorded
state (the mean over recordings of the mean joint MAE, rad):

- ``mujoco.sysid`` on the native per-joint model and a delay
  (:mod:`~frictionsim.experiments.robots.native_sysid`), replayed in plain MuJoCo;
- frictionsim's M1 and M6 (``robot identify``, M6 started from M1), replayed by the fixed step;
- M6 exported to plain MuJoCo through the export's native refit (``robot export-mjcf
  --recordings``), replayed in plain MuJoCo;
- ``mujoco.sysid`` again, started from that export's values instead of the shipped ones (the
  native model's reach when its local search starts near a good fit).

Each tool runs in a process of its own, so that the peak memory each reports is its own
(Linux's ``ru_maxrss`` of that process); the seconds are each fit's own (the M6 row includes
the M1 fit it starts from; the export's the refit's).
"""

from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from frictionsim.experiments.common.output import counted
from frictionsim.robot_files import RobotDescription
from frictionsim.robot_recordings import Recording

#: The rows of the table, in order.
MODELS = ("mujoco_sysid_native", "m1", "m6", "m6_export_native", "mujoco_sysid_from_export")


def _peak_mib() -> float:
    from frictionsim.experiments.robots.identify import peak_memory_mib

    return peak_memory_mib()


def peer_stage(robot: RobotDescription, mjcf: Path, train: list[Recording],
               held: list[Recording], window: float, stride: int, max_iters: int,
               threads: int, progress: bool, name: str = "mujoco_sysid_native") -> dict:
    """``mujoco.sysid``'s native fit on robot identify's training windows, started from
    ``mjcf``'s values, scored on ``held``."""
    from frictionsim.experiments.robots.identify import training_windows
    from frictionsim.experiments.robots.native_sysid import fit_native, native_mae, native_model

    native = native_model(robot, mjcf)
    windows = training_windows(robot, train, window, stride)
    fit = fit_native(native, windows, threads, max_iters, progress)
    per = native_mae(native, fit.values, robot, held, threads)
    return {name: {
        "validation_mae": float(np.mean(list(per.values()))), "per_recording": per,
        "window_loss": fit.window_mae, "fit_seconds": fit.seconds,
        "peak_memory_mib": _peak_mib(), "parameters": fit.values,
        "windows": len(windows)}}


def frictionsim_stage(robot: RobotDescription, mjcf: Path, train: list[Recording],
                      held: list[Recording], budget: int, seed: int, window: float,
                      stride: int, threads: int, out: Path, progress: bool) -> dict:
    """``robot identify``'s M1 then M6 on the same windows, with its defaults (the polish,
    the joint scales: per-joint terms, as the native model has); files to ``out``."""
    from frictionsim.experiments.identification.fitter import FitSettings
    from frictionsim.experiments.robots.identify import RobotFitSettings, fit_robot

    settings = RobotFitSettings(("m1", "m6"), FitSettings(budget, seed), window=window,
                                stride=stride, threads=threads, progress=progress,
                                joint_scales=True)
    fits, interrupted, cost = fit_robot(robot, mjcf, train, held, settings, out)
    if interrupted:
        raise KeyboardInterrupt
    peak = _peak_mib()
    rows, seconds = {}, 0.0
    for model in ("m1", "m6"):
        f = fits[model]
        seconds += f.result.seconds
        per = {name: float(np.mean(list(joints.values()))) for name, joints in f.validation.items()}
        rows[model] = {"validation_mae": f.validation_mae, "per_recording": per,
                       "window_loss": f.result.loss, "fit_seconds": seconds,
                       "peak_memory_mib": peak, "parameters": dict(f.result.params.params.values),
                       "windows": cost["windows"], "path": str(f.path)}
    return rows


def export_stage(robot: RobotDescription, mjcf: Path, m6: Path, train: list[Recording],
                 held: list[Recording], budget: int, seed: int, threads: int, out: Path,
                 progress: bool) -> dict:
    """M6 exported to plain MuJoCo through the native refit, scored there."""
    from frictionsim.experiments.robots.native_refit import native_refit
    from frictionsim.experiments.robots.recorded import Replay
    from frictionsim.robot_params import load_robot_params
    from frictionsim.solvers.robot_export import export_robot, write_export
    from frictionsim.solvers.robot_servos import robot_spec

    start = time.perf_counter()
    refit, loss = native_refit(robot, mjcf, load_robot_params(m6), train, budget, seed, threads,
                               progress)
    seconds = time.perf_counter() - start
    export = export_robot(robot, mjcf, refit, "position")
    path = write_export(export, mjcf, out, robot.name,
                        f"frictionsim run vs-mujoco: {m6.name} through the native refit")
    as_exported = refit.for_robot(robot)[0]
    replay = Replay(as_exported, robot_spec(as_exported, path, plain=True), {}, "mjcf")
    per = {rec.name: replay.run(rec).mean_mae for rec in held}
    return {"m6_export_native": {
        "validation_mae": float(np.mean(list(per.values()))), "per_recording": per,
        "window_loss": loss, "fit_seconds": seconds, "peak_memory_mib": _peak_mib(),
        "parameters": dict(refit.servos[next(iter(refit.servos))].values), "mjcf": str(path)}}


def compare_robot(robot: RobotDescription, mjcf: Path, train: list[Recording],
                  held: list[Recording], out: Path, budget: int = 800, refit_budget: int = 400,
                  seed: int = 0, max_iters: int = 30, window: float | None = None,
                  stride: int | None = None, threads: int = 2, progress: bool = False) -> dict:
    """Every row of :data:`MODELS`: {model: {validation_mae, per_recording, window_loss,
    fit_seconds, peak_memory_mib, parameters, …}}; each tool in a process of its own."""
    from frictionsim.experiments.robots.fit_defaults import STRIDE, WINDOW

    window = WINDOW if window is None else window
    stride = STRIDE if stride is None else stride
    rows: dict[str, dict] = {}
    stages = [
        ("mujoco.sysid", peer_stage, (robot, mjcf, train, held, window, stride, max_iters,
                                      threads, progress)),
        ("frictionsim robot identify", frictionsim_stage,
         (robot, mjcf, train, held, budget, seed, window, stride, threads, out / "frictionsim",
          progress)),
    ]
    for label, stage, args in stages:
        if progress:
            print(f"{label}: fitting on {counted(len(train), 'recording')}", flush=True)
        rows.update(_in_child(stage, *args))
    if progress:
        print("frictionsim robot export-mjcf: the native refit of M6", flush=True)
    rows.update(_in_child(export_stage, robot, mjcf, Path(rows["m6"]["path"]), train, held,
                          refit_budget, seed, threads, out / "export", progress))
    if progress:
        print("mujoco.sysid again, started from the export's values", flush=True)
    rows.update(_in_child(peer_stage, robot, Path(rows["m6_export_native"]["mjcf"]), train, held,
                          window, stride, max_iters, threads, progress,
                          "mujoco_sysid_from_export"))
    return {m: rows[m] for m in MODELS}


def _in_child(stage, *args) -> dict:
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(stage, *args).result()
