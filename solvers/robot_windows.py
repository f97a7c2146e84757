"""Windows of a robot's recordings, each restarted from its recorded state: the loss of many
candidate servo parameter sets at once, on several threads.

A robot recording is minutes long; simulated whole, an early error (a joint that sticks
one period later than the real one) carries on to the end and the loss measures that
drift more than the servo. A window of a few seconds restarted from the recorded
positions and velocities measures what the servo does from a known state, and windows are
independent, so a candidate's loss is split over threads (the n-joint fixed step,
:func:`~frictionsim.solvers.robot.fixed_step_run`, releases the GIL).

What a window approximates: the servo's internal state (its filtered velocity, last error,
internal target) starts as if the joint had been at rest at the recorded state
(:func:`~frictionsim.servo_bank.reset_servo`); the first tenth of a second of each window
carries that transient.

A candidate is one row ``[theta | δ]``: the kernel vector shared by every servo of the
fitted actuator type (on a robot of several types, the others' servos keep theirs:
``held``) and a calibration offset δ_j (rad) per servo: the physical joint angle is
the recorded one plus δ_j, for the recorded state and the goals alike (the firmware sees
the encoder, gravity sees the joint). The error of a window is the mean absolute
difference between predicted and recorded positions over its rows after the first and
its joints.

With ``reuse`` the windows keep MuJoCo's dynamics terms along the exact run of a reference
candidate (:mod:`frictionsim.solvers.reused_dynamics`) and every other candidate reuses
them: the reference is the first candidate evaluated, then each candidate whose loss beats
the reference's by more than :data:`REFRESH`, or at all once :data:`REFRESH_EVERY`
candidates went by without a new reference (run exactly then, and its exact errors
returned). What the reuse moved is measured at each refresh, on a candidate the old
reference did not follow (:attr:`RobotWindows.refresh_errors`). The reused runs go through
each window in lock-step blocks of candidates (:mod:`frictionsim.solvers.robot_lockstep`,
SIMD across them, bit for bit the one-candidate run's errors) wherever the candidates'
configuration allows (:func:`~frictionsim.solvers.robot_lockstep.lockstep_laws`), one
candidate at a time otherwise.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from frictionsim import layout
from frictionsim.errors import ConfigurationError
from frictionsim.joint_scales import SCALES, scale_thetas
from frictionsim.servo_bank import new_bank
from frictionsim.solvers.mujoco_dynamics import mujoco
from frictionsim.solvers.reused_dynamics import NO_PATH, width
from frictionsim.solvers.robot import Robot, fixed_step_run
from frictionsim.solvers.robot_lockstep import (
    LANES,
    lockstep_laws,
    lockstep_window,
)

#: fixed_step_run's out_gap when the windows do not ask for the gears' gaps
NO_GAP = np.empty((0, 1))
#: A candidate whose loss beats the reference's by more than this fraction becomes the
#: reference (its run exact, the terms recorded along it).
REFRESH = 0.05
#: ... and, after this many candidates without a new reference, the best of a batch that
#: beats the reference at all (a search refining away from it by less than REFRESH).
REFRESH_EVERY = 200


@dataclass(frozen=True)
class RecordedWindow:
    """A stretch of a recording, in the model's joint convention (servo order).

    ``goals``: the goal of every control period (steps × servos, rad); ``q0``, ``v0``: the
    recorded state at its start (servos); ``rows``: the control period at which each
    recorded row was read; ``measured``: the recorded positions of those rows (rad)."""

    name: str
    goals: np.ndarray
    q0: np.ndarray
    v0: np.ndarray
    rows: np.ndarray
    measured: np.ndarray

    def __post_init__(self) -> None:
        ns = self.goals.shape[1] if self.goals.ndim == 2 else -1
        if ns < 1 or self.q0.shape != (ns,) or self.v0.shape != (ns,) \
                or self.measured.shape != (len(self.rows), ns):
            raise ConfigurationError(f"window {self.name}: goals (steps × servos), q0, v0 (servos) and "
                                     "measured (rows × servos) disagree in shape")
        if len(self.rows) < 2 or self.rows[0] != 0 or np.any(np.diff(self.rows) < 1) \
                or self.rows[-1] >= len(self.goals):
            raise ConfigurationError(f"window {self.name}: rows must start at 0, increase, and fall "
                                     "inside the goals")


class RobotWindows:
    """The windows' errors for candidate rows ``[theta | δ]`` (see the module docstring), on
    ``robot``'s model, firmware settings and scheme, with ``threads`` threads (each its own
    ``MjData``): an :class:`~frictionsim.experiments.identification.fitter.Evaluator` of the
    fitter, as the bench's :class:`~frictionsim.solvers.batch.PackedLogs` is."""

    def __init__(self, robot: Robot, windows: list[RecordedWindow], threads: int = 2,
                 reuse: bool = False, held: dict[int, np.ndarray] | None = None,
                 lockstep: bool = True) -> None:
        if not windows:
            raise ConfigurationError("no windows to fit on")
        ns = len(robot.servos)
        #: servo index → the kernel vector it keeps whatever the candidate (another
        #: actuator type's servos, fitted before or given)
        self.held = {int(k): np.asarray(v, dtype=float) for k, v in (held or {}).items()}
        if any(not 0 <= k < ns or v.shape != (layout.THETA_SIZE,)
               for k, v in self.held.items()):
            raise ConfigurationError(f"held servos: indices in 0..{ns - 1} with a kernel vector "
                                     f"of {layout.THETA_SIZE} each")
        for w in windows:
            if w.goals.shape[1] != ns:
                raise ConfigurationError(f"window {w.name}: {w.goals.shape[1]} servo columns, the robot "
                                         f"has {ns} servos")
        self.robot = robot
        self.windows = list(windows)
        self.threads = max(1, int(threads))
        self._data = [mujoco.MjData(robot.dynamics) for _ in range(self.threads)]
        self.width = layout.THETA_SIZE + ns
        if reuse and robot.nq != robot.nv:
            raise ConfigurationError("reused dynamics need hinge or slide joints only (nq = nv)")
        self.reuse = reuse
        #: whether reused runs may go in lock-step blocks (robot_lockstep): positions that
        #: are the servos' dofs, each servo the same law for every candidate
        self.lockstep = lockstep and reuse and bool(np.array_equal(robot.qadr, robot.dofs))
        self._paths: list[np.ndarray] | None = None
        #: the candidate row the paths follow, and its exact errors per window
        self.reference: np.ndarray | None = None
        self.reference_scales: np.ndarray | None = None
        self.reference_errors: np.ndarray | None = None
        #: references made so far, and per refresh after the first, the largest |reused −
        #: exact| of a window's error of the new reference (rad), under the one before it
        self.references = 0
        self.refresh_errors: list[float] = []
        self._since = 0  # candidates evaluated since the last reference

    @property
    def names(self) -> list[str]:
        return [w.name for w in self.windows]

    @property
    def n_logs(self) -> int:
        return len(self.windows)

    @property
    def n_steps(self) -> int:
        return sum(len(w.goals) for w in self.windows)

    def errors(self, candidates: np.ndarray, nets: np.ndarray | None = None,
               scales: np.ndarray | None = None) -> np.ndarray:
        """Mean absolute position error (rad) of each candidate (row) on each window:
        (candidates, windows); +inf where the simulation failed or diverged. ``nets``: a
        learned actuator's network per candidate (rows: flat vectors of
        :mod:`frictionsim.actuator_net`), on every servo, its torque beside the candidate's
        physics (a hybrid; for a pure network, candidates of the bare joint); None: none.
        With ``reuse``, physics candidates without a gear gap reuse the reference's terms
        (the module docstring), the one that becomes the reference its exact errors.
        ``scales``: per candidate, each servo's friction and armature scales (candidates ×
        servos × 2, :mod:`frictionsim.joint_scales`), reused like the rest (a scaled
        candidate may become the reference)."""
        candidates = np.atleast_2d(np.asarray(candidates, dtype=float))
        if candidates.shape[1] != self.width:
            raise ConfigurationError(f"candidates need {self.width} columns (theta and one offset per "
                                     f"servo), got {candidates.shape[1]}")
        if nets is None:
            nets = np.zeros((len(candidates), 1))
        nets = np.atleast_2d(np.asarray(nets, dtype=float))
        if len(nets) != len(candidates):
            raise ConfigurationError(f"{len(nets)} networks for {len(candidates)} candidates")
        scales = self._checked_scales(scales, len(candidates))
        if not self._reusable(candidates, nets):
            return self._errors(candidates, nets, "exact", scales)

        def one(i: int) -> np.ndarray | None:
            return None if scales is None else scales[i:i + 1]

        if self.reference is None:
            self._refresh(candidates[:1], nets[:1], one(0))
        out = self._errors(candidates, nets, "reuse", scales)
        best = int(np.argmin(out.mean(axis=1)))
        self._since += len(candidates)
        reference = self.reference_errors.mean()
        if out[best].mean() < (1.0 - REFRESH) * reference or (
                self._since >= REFRESH_EVERY and out[best].mean() < reference):
            reused = out[best].copy()
            out[best] = self._refresh(candidates[best:best + 1], nets[best:best + 1], one(best))
            finite = np.isfinite(reused) & np.isfinite(out[best])
            if finite.any():
                self.refresh_errors.append(float(np.abs(reused - out[best])[finite].max()))
        return out

    def _reusable(self, candidates: np.ndarray, nets: np.ndarray | None = None) -> bool:
        """Whether these candidates may reuse a reference's terms: physics without a
        network and without a gear gap (theirs or a held servo's)."""
        return self.reuse and not (nets is not None and np.any(nets)) \
            and not np.any(candidates[:, layout.BACKLASH] > 0.0) \
            and not any(v[layout.BACKLASH] > 0.0 for v in self.held.values())

    def reference_at(self, candidate: np.ndarray, scales: np.ndarray | None = None) -> None:
        """Make ``candidate`` (one row, physics, with its joint ``scales`` if any) the
        reference, unless it is already, or it may not reuse (:meth:`errors`'s rule)."""
        candidate = np.atleast_2d(np.asarray(candidate, dtype=float))
        scales = self._checked_scales(scales, 1)
        same_scales = (scales is None) == (self.reference_scales is None) and (
            scales is None or np.array_equal(scales[0], self.reference_scales))
        if not self._reusable(candidate) or (
                self.reference is not None and np.array_equal(self.reference, candidate[0])
                and same_scales):
            return
        self._refresh(candidate, np.zeros((1, 1)), scales)

    def exact_errors(self, candidates: np.ndarray, nets: np.ndarray | None = None,
                     scales: np.ndarray | None = None) -> np.ndarray:
        """:meth:`errors` with MuJoCo's terms at every physics step, whatever ``reuse``."""
        candidates = np.atleast_2d(np.asarray(candidates, dtype=float))
        nets = np.zeros((len(candidates), 1)) if nets is None else np.atleast_2d(nets)
        return self._errors(candidates, nets, "exact",
                            self._checked_scales(scales, len(candidates)))

    def reused_errors(self, candidates: np.ndarray, scales: np.ndarray | None = None
                      ) -> np.ndarray:
        """:meth:`errors` with the terms of the present reference, whatever the losses (no
        refresh); physics candidates only (no networks)."""
        if self.reference is None:
            raise ConfigurationError("no reference yet: evaluate candidates with errors() first")
        candidates = np.atleast_2d(np.asarray(candidates, dtype=float))
        return self._errors(candidates, np.zeros((len(candidates), 1)), "reuse",
                            self._checked_scales(scales, len(candidates)))

    def _checked_scales(self, scales: np.ndarray | None, n: int) -> np.ndarray | None:
        if scales is None:
            return None
        scales = np.asarray(scales, dtype=float)
        if scales.shape != (n, len(self.robot.servos), len(SCALES)):
            raise ConfigurationError(f"scales must be (candidates, servos, {len(SCALES)}), "
                                     f"got {scales.shape}")
        return scales

    def _refresh(self, candidate: np.ndarray, net: np.ndarray,
                 scales: np.ndarray | None = None) -> np.ndarray:
        """Make ``candidate`` (one row, with its joint ``scales`` if any) the reference: its
        exact run, the terms recorded along it; its errors."""
        if self._paths is None:
            rows = [len(w.goals) * self.robot.substeps for w in self.windows]
            self._paths = [np.empty((n, width(self.robot.nv))) for n in rows]
        out = self._errors(candidate, net, "record", scales)
        self._since = 0
        self.references += 1
        self.reference = candidate[0].copy()
        self.reference_scales = None if scales is None else scales[0].copy()
        self.reference_errors = out[0].copy()
        return out[0]

    def _path(self, w: int, mode: str) -> np.ndarray:
        """Window ``w``'s path for a run in ``mode``: none (MuJoCo's terms every step) when
        exact, or when the reference failed or diverged there (its rows stop short)."""
        if mode == "exact" or (mode == "reuse" and not np.isfinite(self.reference_errors[w])):
            return NO_PATH
        return self._paths[w]

    def joint_errors(self, candidates: np.ndarray, scales: np.ndarray | None = None,
                     exact: bool = False) -> np.ndarray:
        """Each candidate's (with its joint ``scales``, as :meth:`errors` takes them) mean
        absolute position error (rad) per window and servo joint: (candidates, windows,
        servos), +inf where the run failed; with the present reference's terms where there is
        one (no refresh), else (or ``exact``) MuJoCo's. The residuals of a local polish
        (:mod:`frictionsim.experiments.identification.polish`): the mean over the last two
        axes is :meth:`errors`'s mean over windows."""
        candidates = np.atleast_2d(np.asarray(candidates, dtype=float))
        reuse = not exact and self.reference is not None and self._reusable(candidates)
        return self._errors(candidates, np.zeros((len(candidates), 1)),
                            "reuse" if reuse else "exact",
                            self._checked_scales(scales, len(candidates)), per_joint=True)

    def _errors(self, candidates: np.ndarray, nets: np.ndarray, mode: str,
                scales: np.ndarray | None = None, per_joint: bool = False) -> np.ndarray:
        shape = (len(candidates), len(self.windows))
        out = np.full(shape + ((len(self.robot.servos),) if per_joint else ()), np.inf)
        thetas = self._thetas(candidates, scales)
        blocks = []  # (window, first candidate, last + 1, the servos' laws) in lock-step
        scalar = [(c, w) for c in range(len(candidates)) for w in range(len(self.windows))]
        laws = lockstep_laws(thetas, self.robot.benches) \
            if mode == "reuse" and self.lockstep and not np.any(nets) else None
        if laws is not None:
            reusable = {w for w in range(len(self.windows)) if self._path(w, mode).shape[0]}
            blocks = [(w, a, min(a + LANES, len(candidates)), laws) for w in sorted(reusable)
                      for a in range(0, len(candidates), LANES)]
            # the windows where the reference failed run exactly, one candidate at a time
            scalar = [(c, w) for c, w in scalar if w not in reusable]
        jobs = [("block", b) for b in blocks] + [("scalar", j) for j in scalar]
        if self.threads == 1:
            self._run(self._data[0], candidates, thetas, nets, jobs, out, mode)
            return out
        with ThreadPoolExecutor(self.threads) as pool:
            done = [pool.submit(self._run, self._data[t], candidates, thetas, nets,
                                jobs[t::self.threads], out, mode)
                    for t in range(self.threads)]
            for f in done:
                f.result()
        return out

    def _thetas(self, candidates: np.ndarray, scales: np.ndarray | None) -> np.ndarray:
        """Each candidate's servo vectors (candidates × servos × THETA_SIZE): its theta on
        every servo of the fitted type, the held servos' their own, scaled by its joint
        ``scales``."""
        ns = len(self.robot.servos)
        thetas = np.repeat(candidates[:, None, :layout.THETA_SIZE], ns, axis=1)
        for k, kept in self.held.items():
            thetas[:, k] = kept
        if scales is not None:
            for c in range(len(candidates)):
                scale_thetas(thetas[c], scales[c])
        return thetas

    def _run(self, data, candidates: np.ndarray, thetas: np.ndarray, nets: np.ndarray,
             jobs: list, out: np.ndarray, mode: str) -> None:
        r = self.robot
        ns = len(r.servos)
        nv = r.nv
        semi = r.scheme == "semi_implicit"
        for kind, job in jobs:
            if kind == "block":
                self._run_block(*job, candidates, thetas, out)
                continue
            c, w = job
            window = self.windows[w]
            offsets = candidates[c, layout.THETA_SIZE:]
            servo_nets = np.ascontiguousarray(np.broadcast_to(nets[c], (ns, nets.shape[1])))
            goals = window.goals + offsets
            q0, v0 = r.model.qpos0.copy(), np.zeros(nv)
            q0[r.qadr] = window.q0 + offsets
            v0[r.dofs] = window.v0
            out_q = np.empty((len(goals), r.nq))
            out_v = np.empty((len(goals), nv))
            failed = fixed_step_run(r.dynamics._address, data._address, data.qpos, data.qvel,
                                    r.qadr, r.dofs, new_bank(thetas[c], r.benches, servo_nets),
                                    goals, np.ones_like(goals), q0, v0, r.substeps, r.dt, semi,
                                    out_q, out_v, np.empty_like(out_q), NO_GAP,
                                    self._path(w, mode), mode == "record")
            if failed >= 0:
                continue
            predicted = out_q[window.rows[1:]][:, r.qadr] - offsets
            _store(out, c, w, np.abs(predicted - window.measured[1:]).mean(axis=0))

    def _run_block(self, w: int, first: int, end: int, laws: np.ndarray,
                   candidates: np.ndarray, thetas: np.ndarray, out: np.ndarray) -> None:
        """Candidates ``first`` … ``end − 1`` on window ``w`` in lock-step, along the
        reference's path, each servo's law ``laws`` (:mod:`frictionsim.solvers.robot_lockstep`)."""
        r = self.robot
        window = self.windows[w]
        errors = np.empty((end - first, len(r.servos)))
        lockstep_window(np.ascontiguousarray(thetas[first:end]), laws, r.benches,
                        window.goals, np.ascontiguousarray(candidates[first:end,
                                                                      layout.THETA_SIZE:]),
                        r.model.qpos0, window.q0, window.v0, r.dofs, window.rows,
                        window.measured, self._paths[w], r.substeps, r.dt,
                        r.scheme == "semi_implicit", errors)
        for i, err in enumerate(errors):
            _store(out, first + i, w, err)


def _store(out: np.ndarray, c: int, w: int, err: np.ndarray) -> None:
    """Candidate ``c``'s errors per joint on window ``w`` into ``out`` (per joint, or their
    mean), left at +inf unless all finite (a diverged run)."""
    if np.all(np.isfinite(err)):
        out[c, w] = err if out.ndim == 3 else float(err.mean())
