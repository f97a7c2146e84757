"""The one set-up of servos in a batched engine (MuJoCo Warp, mjlab, MJX): what is built once,
on the host, before the first step, in numpy; each engine then puts it into its own arrays.

:class:`ServoSetup` holds the prepared model (:func:`~frictionsim.solvers.mujoco_adapter.servo_spec`:
the servos' armature, no joint damping or friction of their own, Euler), the servos' joints,
M's index, the bank's rows (a world's parameters, firmware settings and networks), the
control schedule, the encoder grid each servo reports on, and what each world draws
(:class:`Randomisation`): its parameters within their ``ranges``, its supply and its drop,
its command delay.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from frictionsim.errors import ConfigurationError
from frictionsim.layout import SUPPLY, SUPPLY_EMF, SUPPLY_RESISTANCE, VIN
from frictionsim.limits import is_number
from frictionsim.schedule import ControlSchedule
from frictionsim.solvers.batched.memory import net_work_size


@dataclass(frozen=True)
class Randomisation:
    """What each world draws: the servos' parameters within their files' ``ranges``
    (``identify --uncertainty``); the supply voltage uniformly in ``vin`` (V); its drop, a
    supply resistance uniformly in ``drop`` (Ω) with every servo of a world on it
    (docs/model.md §9's ``supply``: E − R_s·Σ|i|); a command delay uniformly in ``delay``
    (whole physics steps). ``on_reset``: draw again at each reset of a world. ``seed``: the
    draws' seed. ConfigurationError for a range that is empty or reversed, a negative
    resistance or delay, a supply that is not positive, a seed that is not a whole number
    ≥ 0."""

    parameters: bool = False
    vin: tuple[float, float] | None = None
    drop: tuple[float, float] | None = None
    delay: tuple[int, int] | None = None
    on_reset: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) \
                or self.seed < 0:
            raise ConfigurationError(f"Randomisation(seed={self.seed!r}): a whole number ≥ 0")
        for name, low_limit in (("vin", 0.0), ("drop", 0.0), ("delay", 0.0)):
            span = getattr(self, name)
            if span is None:
                continue
            try:
                low, high = (float(x) for x in span)
            except (TypeError, ValueError):
                raise ConfigurationError(f"Randomisation({name}={span!r}): expected a (low, "
                                         "high) pair of numbers") from None
            if not (math.isfinite(low) and math.isfinite(high) and low <= high):
                raise ConfigurationError(f"Randomisation({name}={span!r}): low must not exceed "
                                         "high, both finite")
            if low < low_limit or (name == "vin" and low <= 0.0):
                what = {"vin": "a supply voltage must be positive (V)",
                        "drop": "a supply resistance cannot be negative (Ω)",
                        "delay": "a command delay cannot be negative (physics steps)"}[name]
                raise ConfigurationError(f"Randomisation({name}={span!r}): {what}")
            if name == "delay" and not all(float(x).is_integer() for x in span):
                raise ConfigurationError(f"Randomisation(delay={span!r}): whole physics steps")


def mass_index(model) -> np.ndarray:
    """For a compiled MuJoCo model, the position of each element (r, c) of M in a world's row
    of its packed form (``d.M``, which MuJoCo Warp keeps per world in the same layout: rows
    ``M_rowadr``, their ``M_rownnz`` columns ``M_colind``), symmetrised; −1 where M is
    structurally zero (int32, nv × nv)."""
    nv = int(model.nv)
    full = np.full((nv, nv), -1, dtype=np.int32)
    for r in range(nv):
        start = int(model.M_rowadr[r])
        for t in range(int(model.M_rownnz[r])):
            c = int(model.M_colind[start + t])
            full[r, c] = full[c, r] = start + t
    return full


def dense_index(nv: int) -> np.ndarray:
    """:func:`mass_index` of a dense M flattened row by row (MJX's ``full_m``)."""
    return np.arange(nv * nv, dtype=np.int32).reshape(nv, nv)


def encoder_step(servo, grid: bool | float = True) -> float:
    """The encoder's count (rad) a servo reports its position on: its actuator's declared
    ``counts_per_turn`` (4096 a turn for the STS3215 and the XL330) where the actuator is a
    real servo (a declared bus family), 0 (no grid) otherwise or with ``grid`` False; a
    number: that count itself."""
    from frictionsim import schema

    if grid is False:
        return 0.0
    if grid is not True:
        if not is_number(grid) \
                or not (math.isfinite(grid) and grid >= 0.0):
            raise ConfigurationError(f"encoder grid {grid!r}: a count in rad, ≥ 0")
        return float(grid)
    act = schema.get_actuator(servo.params.actuator)
    return act.hardware.position_resolution if act.hardware.family else 0.0


@dataclass
class ServoSetup:
    """Servos on a MuJoCo model, ready for a batched engine (module docstring). ``thetas``,
    ``firmware`` (nservo × ·) are one world's rows before any draw; ``nets`` (nservo × net
    width); ``encoder`` (nservo,) rad a count; ``lags`` the goal ring's slots (the longest
    command delay + 1)."""

    model: object
    servos: list
    schedule: ControlSchedule
    qadr: np.ndarray
    dofs: np.ndarray
    mass_index: np.ndarray
    thetas: np.ndarray
    firmware: np.ndarray
    nets: np.ndarray
    encoder: np.ndarray
    randomisation: Randomisation
    source: object = None

    @classmethod
    def build(cls, mjcf, servos: list, control_period: float,
              randomisation: Randomisation | None = None, encoder: bool | float = True
              ) -> ServoSetup:
        """The set-up of ``servos`` (:class:`~frictionsim.solvers.robot.JointServo`) on an MJCF
        model (a path, a text or an ``MjSpec``; copied, never edited)."""
        from frictionsim.solvers.mujoco_adapter import SchemeWarning, servo_spec
        from frictionsim.solvers.robot import check_servos

        servos = check_servos(servos)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SchemeWarning)
            spec, _ = servo_spec(mjcf, servos)
        setup = cls.on_model(spec.compile(), servos, control_period, randomisation, encoder)
        setup.source = mjcf
        return setup

    @classmethod
    def on_model(cls, model, servos: list, control_period: float,
                 randomisation: Randomisation | None = None, encoder: bool | float = True
                 ) -> ServoSetup:
        """The set-up on a model already prepared for the servos (mjlab's, whose actuators
        edited the spec themselves)."""
        from frictionsim.solvers.mujoco_adapter import semi_implicit_theta
        from frictionsim.solvers.mujoco_dynamics import check_hinges
        from frictionsim.solvers.robot import check_delay_reach, check_servos, servo_nets

        servos = check_servos(servos)

        if randomisation is not None and not isinstance(randomisation, Randomisation):
            raise ConfigurationError(f"randomisation: a Randomisation (frictionsim.solvers."
                                     f"batched.setup), got {type(randomisation).__name__}")
        schedule = ControlSchedule.of(control_period, float(model.opt.timestep))
        check_delay_reach(servos, control_period)
        qadr, dofs = check_hinges(model, [s.joint for s in servos])
        thetas = np.array([semi_implicit_theta(s) for s in servos])
        firmware = np.array([s.firmware(control_period) for s in servos])
        nets = servo_nets(servos)
        net_work_size(nets)  # refuses a network deeper than the kernels unroll
        setup = cls(model, list(servos), schedule, np.asarray(qadr, dtype=np.int32),
                    np.asarray(dofs, dtype=np.int32), mass_index(model), thetas, firmware, nets,
                    np.array([encoder_step(s, encoder) for s in servos]),
                    randomisation or Randomisation())
        setup.draw_table()  # a draw from parameters without ranges: refused here, not at reset
        return setup

    @property
    def gear(self) -> bool:
        """Whether a servo has backlash (the kernel's gear step), before or after a draw."""
        from frictionsim.layout import BACKLASH

        return bool(np.any(self.thetas[:, BACKLASH] > 0.0)) or (
            self.randomisation.parameters and any(
                "backlash" in getattr(_physics(s), "ranges", {}) for s in self.servos))

    @property
    def lags(self) -> int:
        delay = self.randomisation.delay
        return int(delay[1]) + 1 if delay else 1

    @property
    def has_nets(self) -> bool:
        return bool((self.nets[:, 0] > 0).any())

    def draw_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """What a world draws within the parameters' ranges: (servo, theta column, low,
        high), one entry per ranged parameter of each servo (empty without
        ``Randomisation.parameters``). ConfigurationError for a servo whose parameters have
        no ranges to draw within."""
        from frictionsim.layout import THETA_INDEX
        from frictionsim.params import ParameterSet

        rows: list[tuple[int, int, float, float]] = []
        if self.randomisation.parameters:
            for j, s in enumerate(self.servos):
                params = _physics(s)
                if not (isinstance(params, ParameterSet) and params.ranges):
                    # a world drawn from nothing would pass for a randomised one
                    raise ConfigurationError(
                        f"joint {s.joint!r}: Randomisation(parameters=True) needs parameter "
                        f"ranges, and its parameters have none (identify with --uncertainty, "
                        f"or robot identify --uncertainty)")
                for name in sorted(params.ranges):
                    low, high = params.ranges[name]
                    rows.append((j, THETA_INDEX[name], float(low), float(high)))
        table = np.array(rows, dtype=float).reshape(-1, 4)
        return table[:, 0].astype(int), table[:, 1].astype(int), table[:, 2], table[:, 3]

    @property
    def draws(self) -> int:
        """Uniform numbers a world's draw takes (:func:`draw_rows`)."""
        return len(self.draw_table()[0]) + 3

    def draw(self, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray,
                                                                   np.ndarray]:
        """(thetas, firmware, delay) of ``count`` worlds: (count, nservo, ·) rows and each
        world's command delay (physics steps), drawn per the randomisation (:func:`draw_rows`)."""
        return draw_rows(np, self, rng.random((count, self.draws)))

    def shipped(self):
        """(the model as shipped: its own actuators, Euler as the servos' model, no collision
        masks where the servos' model has contacts off; the index in ctrl of each servo joint's
        own actuator, −1 where it has none): what the servos' cost is compared with."""
        import mujoco

        from frictionsim.solvers.mjcf_files import read_spec

        if self.source is None:
            raise ConfigurationError("the servos were set up on a prepared model: the model as "
                                     "shipped is not known")
        spec = read_spec(self.source)
        spec.option.integrator = int(mujoco.mjtIntegrator.mjINT_EULER)
        if self.model.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_CONTACT):
            spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
            for geom in spec.geoms:
                geom.contype = geom.conaffinity = 0
        model = spec.compile()
        joints = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, s.joint)
                  for s in self.servos]
        ctrl = np.full(len(joints), -1)
        for a in range(model.nu):
            if model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT:
                for j, jid in enumerate(joints):
                    if model.actuator_trnid[a, 0] == jid and ctrl[j] < 0:
                        ctrl[j] = a
        return model, ctrl

    def drawn_parameters(self, thetas: np.ndarray) -> list[list[dict]]:
        """Each world's drawn parameters by name (a list per world, a dict per servo), from its
        rows ``thetas`` (nworld × nservo × THETA_SIZE)."""
        from frictionsim.layout import THETA_INDEX

        return [[{name: float(row[index]) for name, index in THETA_INDEX.items()}
                 for row in world] for world in np.asarray(thetas)]


def _physics(servo):
    from frictionsim.solvers.mujoco_adapter import _physics as physics

    return physics(servo)


def draw_rows(xp, setup: ServoSetup, uniform):
    """(thetas, firmware, delay) of worlds whose draws are ``uniform`` (…, ``setup.draws``
    numbers in [0, 1), leading dimensions any), in the array namespace ``xp`` (numpy on the
    host, ``jax.numpy`` inside a jitted reset): each ranged parameter low + (high − low)·u; the
    supply low + (high − low)·u on every servo (firmware ``vin`` and the source's EMF); its
    drop a resistance likewise, with ``supply`` on; the delay ⌊low + (high − low + 1)·u⌋ whole
    steps, at most high."""
    r = setup.randomisation
    servo, column, low, high = setup.draw_table()
    lead = tuple(uniform.shape[:-1])
    ns, nt = setup.thetas.shape
    thetas = xp.broadcast_to(xp.asarray(setup.thetas), (*lead, ns, nt)) * 1.0
    firmware = xp.broadcast_to(xp.asarray(setup.firmware), (*lead, *setup.firmware.shape)) * 1.0
    rows = np.arange(ns)[:, None]

    def at(table_rows, columns, width):
        return xp.asarray((rows == table_rows) & (np.arange(width)[None, :] == columns))

    for k in range(len(servo)):
        value = low[k] + (high[k] - low[k]) * uniform[..., k]
        thetas = xp.where(at(servo[k], column[k], nt), value[..., None, None], thetas)
    every = np.arange(ns)[:, None]
    if r.vin is not None:
        vin = r.vin[0] + (r.vin[1] - r.vin[0]) * uniform[..., -3]
        firmware = xp.where(at(every, VIN, firmware.shape[-1]), vin[..., None, None], firmware)
        thetas = xp.where(at(every, SUPPLY_EMF, nt), vin[..., None, None], thetas)
    if r.drop is not None:
        resistance = r.drop[0] + (r.drop[1] - r.drop[0]) * uniform[..., -2]
        thetas = xp.where(at(every, SUPPLY, nt), 1.0, thetas)
        if r.vin is None:
            thetas = xp.where(at(every, SUPPLY_EMF, nt), firmware[..., VIN:VIN + 1], thetas)
        thetas = xp.where(at(every, SUPPLY_RESISTANCE, nt), resistance[..., None, None], thetas)
    delay = xp.zeros(lead, dtype=xp.int32)
    if r.delay is not None:
        low_lag, high_lag = int(r.delay[0]), int(r.delay[1])
        steps = xp.floor(low_lag + (high_lag - low_lag + 1) * uniform[..., -1])
        delay = xp.minimum(steps, high_lag).astype(xp.int32)
    return thetas, firmware, delay
