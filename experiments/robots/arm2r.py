"""The 2R arms of docs/model.md §10: paths, closed-form inverse kinematics, and every engine on them.

Paths live in the arm's vertical plane, in coordinates (x, z) relative to the
shoulder axis, z up; L is the reach (sum of the link lengths). Every segment is a
straight line (or, for the circle, an arc) travelled with a cubic time law with zero
velocity at its ends:

- *approach* (0–3 s, all paths): from the hanging pose (q = 0) to the path's first
  point P0 in 2 s, then a 1 s hold;
- ``circle`` (8 s): centre (0, −0.7·L), radius 0.14·L, one counter-clockwise turn from
  its lowest point;
- ``square`` (8 s): side 0.28·L, corners visited in order from P0 = (0.14·L, −0.56·L)
  (top right, top left, bottom left, bottom right, back), 2 s per side;
- ``square_wave`` (27 s): nine 3 s periods along x from 0.55·L to −0.55·L; every 1.5 s
  the path runs 0.75 s along x at one height, then 0.75 s up or down to the other
  (z alternating between −0.7·L and −0.56·L);
- ``triangle_wave`` (15 s): five 3 s periods along x from 0.55·L to −0.55·L, z going
  −0.7·L → −0.56·L → −0.7·L over each period (two 1.5 s strokes).

Joint targets come from the two-link inverse kinematics with the elbow always bent the
same way (the branch that unfolds continuously from the hanging pose). The servo
firmware runs at 200 Hz (zero-order hold), the physics at the model's 1 ms. Gains:
``low`` = firmware kp 8 (Dynamixel) / 10 (eRob), ``high`` = 32 / 50.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from frictionsim.errors import ConfigurationError
from frictionsim.experiments.common.loading import shared_data

PERIOD = 0.005
PATHS = ("circle", "square", "square_wave", "triangle_wave")
ENGINES = ("event_driven", "fixed_step", "mujoco_budget", "mujoco_frictionloss")
#: Each of them in the registry of engines (frictionsim.solvers.engines).
REGISTRY_NAMES = {"event_driven": "event_driven", "fixed_step": "fixed_step",
                  "mujoco_budget": "mujoco", "mujoco_frictionloss": "mujoco_frictionloss"}


@dataclass(frozen=True)
class Arm:
    """One arm: its MJCF file, the actuator of each joint, and its gains."""

    name: str
    mjcf: str
    actuators: tuple[str, str]
    gains: dict

    def path(self, data: Path | None = None) -> Path:
        return shared_data(data) / "arm2r" / self.mjcf


ARMS = {
    "mx": Arm("mx", "mx_arm.xml", ("mx106", "mx64"), {"low": 8.0, "high": 32.0}),
    "erob": Arm("erob", "erob_arm.xml", ("erob80_100", "erob80_50"), {"low": 10.0, "high": 50.0}),
}


@dataclass(frozen=True)
class Geometry:
    """Link lengths (m) and the elbow's sense: the end is at
    x = L1·sin q1 + L2·sin(q1 + s·q2), z = −L1·cos q1 − L2·cos(q1 + s·q2)."""

    l1: float
    l2: float
    elbow_sign: float

    @property
    def reach(self) -> float:
        return self.l1 + self.l2

    def forward(self, q: np.ndarray) -> np.ndarray:
        """(x, z) of the end for joint angles q (n × 2)."""
        q = np.atleast_2d(q)
        outer = q[:, 0] + self.elbow_sign * q[:, 1]
        return np.column_stack([self.l1 * np.sin(q[:, 0]) + self.l2 * np.sin(outer),
                                -self.l1 * np.cos(q[:, 0]) - self.l2 * np.cos(outer)])

    def inverse(self, xz: np.ndarray) -> np.ndarray:
        """Joint angles (n × 2) reaching the points xz (n × 2), elbow bent the positive way."""
        x, z = xz[:, 0], xz[:, 1]
        c = np.clip((x**2 + z**2 - self.l1**2 - self.l2**2) / (2 * self.l1 * self.l2), -1.0, 1.0)
        bend = np.arccos(c)
        q1 = np.arctan2(x, -z) - np.arctan2(self.l2 * np.sin(bend), self.l1 + self.l2 * np.cos(bend))
        return np.column_stack([q1, self.elbow_sign * bend])


def measure_geometry(model) -> Geometry:
    """The planar geometry of a 2R MJCF model, measured with its forward kinematics (site
    ``end``, joints R1 and R2)."""
    import mujoco

    data = mujoco.MjData(model)
    site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, "end")

    def end(q):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        return data.site_xpos[site].copy(), data.xanchor.copy()

    tip, anchors = end([0.0, 0.0])
    l1 = float(np.linalg.norm((anchors[1] - anchors[0])[[0, 2]]))
    l2 = float(np.linalg.norm((tip - anchors[1])[[0, 2]]))
    moved, _ = end([0.0, 0.3])
    return Geometry(l1, l2, 1.0 if moved[0] - anchors[0][0] > 0 else -1.0)


def _cubic(s: np.ndarray) -> np.ndarray:
    """3s² − 2s³: 0 → 1 with zero slope at both ends."""
    s = np.clip(s, 0.0, 1.0)
    return 3 * s**2 - 2 * s**3


def _segments(t: np.ndarray, waypoints: list, durations: list) -> np.ndarray:
    """Points at times t along straight segments between waypoints, each with a cubic law."""
    out = np.empty((len(t), 2))
    out[:] = waypoints[-1]
    start = 0.0
    for (a, b), d in zip(zip(waypoints, waypoints[1:]), durations):
        inside = (t >= start) & (t < start + d)
        s = _cubic((t[inside] - start) / d)[:, None]
        out[inside] = np.asarray(a) + s * (np.asarray(b) - np.asarray(a))
        start += d
    return out


def path_points(name: str, reach: float, t: np.ndarray) -> np.ndarray:
    """(x, z) of a path (approach included) at times t (s)."""
    L = reach
    if name == "circle":
        p0, duration = (0.0, -0.84 * L), 8.0
    elif name == "square":
        p0, duration = (0.14 * L, -0.56 * L), 8.0
    elif name == "square_wave":
        p0, duration = (0.55 * L, -0.7 * L), 27.0
    elif name == "triangle_wave":
        p0, duration = (0.55 * L, -0.7 * L), 15.0
    else:
        raise ConfigurationError(f"unknown path {name!r} (paths: {', '.join(PATHS)})")
    out = _segments(t, [(0.0, -L), p0, p0], [2.0, 1.0])
    later = t >= 3.0
    tp = t[later] - 3.0
    if name == "circle":
        angle = -math.pi / 2 + 2 * math.pi * _cubic(tp / duration)
        out[later] = np.column_stack([0.14 * L * np.cos(angle), -0.7 * L + 0.14 * L * np.sin(angle)])
    elif name == "square":
        h = 0.14 * L
        corners = [(h, -0.56 * L), (-h, -0.56 * L), (-h, -0.84 * L), (h, -0.84 * L), (h, -0.56 * L)]
        out[later] = _segments(tp, corners, [2.0] * 4)
    elif name == "square_wave":
        step = 1.1 * L / 18
        points, x, z = [p0], p0[0], p0[1]
        for _ in range(18):
            x -= step
            points.append((x, z))
            z = -0.56 * L if z == -0.7 * L else -0.7 * L
            points.append((x, z))
        out[later] = _segments(tp, points, [0.75] * 36)
    else:
        step = 1.1 * L / 5
        points, x = [p0], p0[0]
        for _ in range(5):
            points += [(x - step / 2, -0.56 * L), (x - step, -0.7 * L)]
            x -= step
        out[later] = _segments(tp, points, [1.5] * 10)
    return out


def duration(name: str) -> float:
    """Seconds of a path, approach included."""
    return 3.0 + {"circle": 8.0, "square": 8.0, "square_wave": 27.0, "triangle_wave": 15.0}[name]


@dataclass
class Run:
    """One simulation: which arm, path, gain, model and engine, its joint trajectory (rad) at
    the control updates, and its cost (s)."""

    arm: str
    path: str
    gain: str
    model: str
    engine: str
    q: np.ndarray
    seconds: float


def servos_of(arm: Arm, model: str, gain: str, data: Path | None = None):
    """The two servos of ``arm`` with the published parameters of ``model`` (in the data
    folder's ``params/``, :func:`~frictionsim.experiments.common.loading.shared_data`)."""
    from frictionsim.params import load_params
    from frictionsim.solvers.robot import JointServo

    params_dir = shared_data(data) / "params"
    return [JointServo(joint, load_params(params_dir / actuator / f"{model}.json"), arm.gains[gain])
            for joint, actuator in zip(("R1", "R2"), arm.actuators)]


def simulate_arm(arm: Arm, path: str, gain: str, model: str, engines=ENGINES,
                 data: Path | None = None, seconds: float | None = None,
                 tolerances=None) -> list[Run]:
    """Every engine on one (arm, path, gain, model); ``seconds`` cuts the path short."""
    import warnings

    from frictionsim.solvers.engines import get_engine
    from frictionsim.solvers.mujoco_adapter import SchemeWarning
    from frictionsim.solvers.robot import Robot

    mjcf = arm.path(data)
    servos = servos_of(arm, model, gain, data)
    robot = Robot(mjcf, servos, control_period=PERIOD)
    geometry = measure_geometry(robot.model)
    t = np.arange(0.0, seconds or duration(path), PERIOD)
    goals = geometry.inverse(path_points(path, geometry.reach, t))
    runs = []
    for engine in engines:
        if engine == "event_driven":  # its tolerances: the one engine with settings
            result = robot.event_driven(goals, tolerances=tolerances)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SchemeWarning)
                sim = get_engine(REGISTRY_NAMES[engine]).robot(mjcf, servos, PERIOD)
            result = sim.run(goals)
        runs.append(Run(arm.name, path, gain, model, engine, result.q, result.seconds))
    return runs


def errors_against(reference: Run, run: Run, geometry: Geometry) -> tuple[float, float]:
    """(joint MAE in rad over both joints, end-effector MAE in m) of ``run`` against
    ``reference``."""
    joint = float(np.mean(np.abs(run.q - reference.q)))
    tip = float(np.mean(np.linalg.norm(geometry.forward(run.q) - geometry.forward(reference.q),
                                       axis=1)))
    return joint, tip


def arm2r(arms: list[str], paths=PATHS, gains=("low", "high"), models=("m1", "m6"),
          engines=ENGINES, seconds: float | None = None, show_progress: bool = True,
          data: Path | None = None) -> dict:
    """Every (arm, path, gain, model) on every engine; errors against the event-driven run.

    Returns ``{"runs": [...], "m1_vs_m6": [...], "trajectories": {...}}``: each run with
    ``joint_mae_rad`` and ``end_effector_mae_m`` against ``event_driven`` for the same
    path, gain and model, and, per path and gain, how far M1's event-driven run lands
    from M6's (the paper's point: M1 is not enough at low gain).
    """
    import mujoco

    from frictionsim.experiments.common.progress import interactive, progress

    data = shared_data(data)
    combos = [(a, p, g, m) for a in arms for p in paths for g in gains for m in models]
    runs, gaps, kept = [], [], {}
    for i, (a, p, g, m) in enumerate(progress(combos, desc="arm2r", unit="run",
                                              enabled=show_progress)):
        if show_progress and not interactive():  # off a terminal: a line per run, no bar
            print(f"arm2r: run {i + 1}/{len(combos)}: {a} arm, {p}, {g} gain, {m}",
                  file=sys.stderr, flush=True)
        arm = ARMS[a]
        geometry = measure_geometry(mujoco.MjModel.from_xml_path(str(arm.path(data))))
        done = simulate_arm(arm, p, g, m, ("event_driven", *[e for e in engines
                                                                if e != "event_driven"]),
                            data, seconds)
        reference = done[0]
        for run in done:
            if run.engine not in engines:
                continue
            joint, tip = errors_against(reference, run, geometry)
            runs.append({"arm": a, "path": p, "gain": g, "model": m, "engine": run.engine,
                         "joint_mae_rad": joint, "end_effector_mae_m": tip,
                         "seconds": run.seconds})
            kept[(a, p, g, m, run.engine)] = run.q
    for a, p, g in {(a, p, g) for a, p, g, _ in combos}:
        if ("m1" in models and "m6" in models):
            geometry = measure_geometry(mujoco.MjModel.from_xml_path(
                str(ARMS[a].path(data))))
            m1 = Run(a, p, g, "m1", "event_driven", kept[(a, p, g, "m1", "event_driven")], 0.0)
            m6 = Run(a, p, g, "m6", "event_driven", kept[(a, p, g, "m6", "event_driven")], 0.0)
            joint, tip = errors_against(m6, m1, geometry)
            gaps.append({"arm": a, "path": p, "gain": g, "joint_mae_rad": joint,
                         "end_effector_mae_m": tip})
    gaps.sort(key=lambda r: (r["arm"], PATHS.index(r["path"]), r["gain"]))
    return {"runs": runs, "m1_vs_m6": gaps, "trajectories": kept}


def plot_arm2r(result: dict, path: Path, data: Path | None = None) -> None:
    """Per arm: the paths in the plane (target, and each engine at low gain, M6 and M1), and
    each engine's joint error over time against the event-driven run."""
    import matplotlib.pyplot as plt
    import mujoco

    from frictionsim.experiments.common.output import save_figure
    from frictionsim.experiments.common.plots import figure_legend

    trajectories = result["trajectories"]
    arms = sorted({k[0] for k in trajectories})
    paths = [p for p in PATHS if any(k[1] == p for k in trajectories)]
    fig, axes = plt.subplots(2 * len(arms), len(paths), figsize=(4.2 * len(paths),
                                                                 7.5 * len(arms)), squeeze=False)
    colours = {"event_driven": "k", "fixed_step": "C0", "mujoco_budget": "C2",
               "mujoco_frictionloss": "C3"}
    for i, a in enumerate(arms):
        geometry = measure_geometry(mujoco.MjModel.from_xml_path(
            str(ARMS[a].path(data))))
        for c, p in enumerate(paths):
            gain = "low" if any(k[:3] == (a, p, "low") for k in trajectories) else "high"
            ax = axes[2 * i, c]
            n = len(next(v for k, v in trajectories.items() if k[:3] == (a, p, gain)))
            target = path_points(p, geometry.reach, np.arange(n) * PERIOD)
            ax.plot(target[:, 0], target[:, 1], color="0.6", lw=3, label="target")
            for (a2, p2, g2, m, engine), q in trajectories.items():
                if (a2, p2, g2) != (a, p, gain):
                    continue
                xz = geometry.forward(q)
                ax.plot(xz[:, 0], xz[:, 1], color=colours[engine], lw=1.0,
                        ls="-" if m == "m6" else "--", label=f"{engine} {m}")
            ax.set_aspect("equal", adjustable="datalim")
            ax.set_title(f"{a} arm, {p}, {gain} gain", fontsize=9)
            ax.set_xlabel("x (m)")
            ax.set_ylabel("z (m)")
            ax.grid(alpha=0.3)
            err = axes[2 * i + 1, c]
            for (a2, p2, g2, m, engine), q in trajectories.items():
                if (a2, p2, g2) != (a, p, gain) or engine == "event_driven" or m != "m6":
                    continue
                ref = trajectories[(a, p, gain, m, "event_driven")]
                t = np.arange(len(q)) * PERIOD
                err.semilogy(t, 1e3 * np.abs(q - ref).sum(axis=1) + 1e-9, color=colours[engine],
                             lw=0.8, label=f"{engine} {m}")
            err.set_xlabel("time (s)")
            err.set_ylabel("|Δq1| + |Δq2| vs event-driven (mrad)")
            err.set_ylim(bottom=1e-4)
            err.grid(alpha=0.3, which="both")
    fig.tight_layout()
    figure_legend(fig, axes.flat)
    save_figure(fig, path)
