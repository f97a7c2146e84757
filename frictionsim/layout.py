"""The flat vectors the compiled kernels work on: the one place their layout is defined.

Two float64 vectors travel into every kernel:

``theta`` (length :data:`THETA_SIZE`) describes the servo: its identified
parameters and its firmware constants. Friction terms that the parameter set's
model does not use are exactly 0, so one budget kernel serves M1–M6.

=====  ===================  ===========================================  ==========
index  name                 meaning                                      unit
=====  ===================  ===========================================  ==========
0      Q_OFFSET             encoder offset, q_physical = q + q_offset    rad
1      KT                   torque constant k_t                          N·m/A
2      RESISTANCE           winding resistance R                         Ω
3      ARMATURE             apparent (reflected) rotor inertia           kg·m²
4      K_C                  Coulomb friction                             N·m
5      K_CS                 Stribeck (static) friction                   N·m
6      K_L                  load friction, non-directional (M3, M4)      –
7      K_LS                 Stribeck load friction, non-directional      –
8      K_M                  load friction on motor torque (M5, M6)       –
9      K_E                  load friction on external torque             –
10     K_MS                 Stribeck load friction on motor torque       –
11     K_ES                 Stribeck load friction on external torque    –
12     K_MQ                 quadratic friction on motor torque (M6)      1/(N·m)
13     K_EQ                 quadratic friction on external torque (M6)   1/(N·m)
14     V_S                  Stribeck velocity v_s (0: no Stribeck term)  rad/s
15     ALPHA                Stribeck exponent α                          –
16     K_V                  viscous friction                             N·m·s/rad
17     MAX_VELOCITY         firmware target-speed limit ω_max (0: none)  rad/s
18     ERROR_GAIN_RATIO     multiplies ERROR_GAIN (sts3215)              –
19     LAW                  :data:`VOLTAGE_LAW` or :data:`CURRENT_LAW`   –
20     ERROR_GAIN           duty per (firmware gain × rad)               1/rad
21     MAX_PWM              duty-cycle saturation                        –
22     MAX_CURRENT          current saturation (current law)             A
23     MAX_VOLTAGE          supply limit of the back-EMF window          V
24     SCHEME               :data:`REFERENCE` or :data:`SEMI_IMPLICIT`   –
25     SUPPLY               1: the ``supply`` extension is on (docs/model.md §9)  –
26     SUPPLY_EMF           supply source voltage (no log)               V
27     SUPPLY_RESISTANCE    supply internal resistance (no log)          Ω
28     CURRENT_LIMIT        motor current saturation i_lim (0:           A
                            ``current_limit`` off)
29     LATENCY              control computed from the position measured  periods
                            this many control periods earlier (0–3)
30     DERIVATIVE_TIME      Feetech D term: seconds of error rate per    s
                            unit of the D coefficient (0: no D term)
31     DEAD_BAND            firmware dead band: |error| at or below it   rad
                            gives no output (0: none)
32     OBSERVATION_DELAY    the reported (logged) position is the        s
                            physical one this long ago (0: none;
                            ``observation_delay``)
33     BACKLASH             full gap of the gear train between the       rad
                            motor side and the output (0: none;
                            ``backlash``, docs/model.md §14)
34     RIPPLE_AMPLITUDE     A1, position ripple of the friction budget   N·m
                            (0: none; ``ripple``, docs/model.md §15)
35     RIPPLE_FREQUENCY     Ω1 = ω1·N, its frequency on the output       1/rad
                            angle
36     RIPPLE_PHASE         φ1                                           rad
37     MESHING_AMPLITUDE    A2, meshing friction at rest (0: none)       N·m
38     MESHING_DECAY        B = β·N, its decay with the output speed     s/rad
39     MESHING_FREQUENCY    Ω2 = ω2·N                                    1/rad
40     MESHING_PHASE        φ2                                           rad
=====  ===================  ===========================================  ==========

The extensions of docs/model.md §9, §14 and §15 (entries 25–29, 32–40) and the Feetech firmware
terms (30–31) are off when 0: the kernels then compute exactly what they compute without them, bit for bit.

``SCHEME`` selects the position update of the fixed step (docs/model.md §4): the reference
``q ← q + v·dt + ½·a·dt²``, or MuJoCo's semi-implicit Euler ``q ← q + v·dt``.

``bench`` (length :data:`BENCH_SIZE`) describes one recording: the pendulum
and the firmware settings of that log.

=====  ===========  ==============================================  =====
index  name         meaning                                         unit
=====  ===========  ==============================================  =====
0      MASS         point mass at the tip                           kg
1      LENGTH       arm length                                      m
2      ARM_MASS     mass of the rod                                 kg
3      KP           firmware proportional gain (from the log)       –
4      VIN          supply voltage (voltage law)                    V
5      DAMPING      firmware damping d (current law)                –
6      DT           sample period of the processed log              s
                    (the firmware's control period)
7      KD           firmware derivative coefficient, register       –
                    units (Feetech ``D_Coefficient``; 0: none)
8      TORQUE_LIMIT firmware torque limit, fraction of the full     –
                    duty cycle (Feetech ``Max_Torque_Limit``/1000;
                    0: no limit beyond ``max_pwm``)
9      ACCELERATION acceleration limit of the firmware's internal   rad/s²
                    target (Feetech ``Acceleration``; 0: none)
=====  ===========  ==============================================  =====

Build one with :func:`bench_vector` rather than by index.

``servo`` (length :data:`SERVO_STATE_SIZE`) is the state record of one servo's firmware and
motor (:mod:`frictionsim.servo_unit`), carried from one control period to the next:

=====  ==================  ===============================================  =======
index  name                meaning                                          unit
=====  ==================  ===============================================  =======
0      SERVO_U             control held over the period                     V or A
1      SERVO_Q_SMOOTH      the sts3215 limiter's internal target            rad
2      SERVO_PERIODS       control periods computed so far                  –
3      SERVO_CURRENT       motor current at the last physics step           A
                           (kept with the ``supply`` extension only)
4      SERVO_DRAWN         current drawn from the servo's supply: its own,  A
                           or the sum over servos sharing it
5      SERVO_VIN           supply voltage the last period used              V
6      SERVO_ERROR         position error of the last period (D term)       rad
7      SERVO_RATE          velocity of the internal target (acceleration    rad/s
                           limit)
8      SERVO_ENABLE        torque enable latched at the last period (0/1)   –
9      SERVO_EXTRA         a learned actuator's network torque, held over   N·m
                           the period (0 without a network)
10–17  SERVO_HISTORY       (q, v) measured in the last MAX_LATENCY + 1      rad,
                           periods, for ``latency``                         rad/s
18     SERVO_REPORTED      the position reported at the last period         rad
                           (``observation_delay``)
19–82  SERVO_OBSERVED      ring of the positions of the last                rad
                           OBSERVED_SIZE periods (``observation_delay``)
83–87  SERVO_ERRORS        ring of the position errors goal − q of the      rad
                           last NET_RING periods (the network's history)
88–92  SERVO_VELOCITIES    ring of the velocities of the last NET_RING      rad/s
                           periods
93     SERVO_GAP           ``backlash``: where the motor side sits in the   rad
                           gap, δ = p − q (p: motor angle / N), |δ| ≤ gap/2
94     SERVO_MOTOR_SPEED   ``backlash``: the motor side's velocity ṗ        rad/s
95     SERVO_CONTACT       ``backlash``: +1 engaged at δ = +gap/2, −1 at    –
                           −gap/2, 0 apart; NaN until the first physics
                           step rests the load on the gear train
=====  ==================  ===============================================  =======

The servo bank (:mod:`frictionsim.servo_bank`) is the code that reads and writes these
records; its :data:`~frictionsim.servo_bank.RECORD_DTYPE` names their fields over the same memory for Python
(``records.view(RECORD_DTYPE)["u"]``).
"""

Q_OFFSET = 0
KT = 1
RESISTANCE = 2
ARMATURE = 3
K_C = 4
K_CS = 5
K_L = 6
K_LS = 7
K_M = 8
K_E = 9
K_MS = 10
K_ES = 11
K_MQ = 12
K_EQ = 13
V_S = 14
ALPHA = 15
K_V = 16
MAX_VELOCITY = 17
ERROR_GAIN_RATIO = 18
LAW = 19
ERROR_GAIN = 20
MAX_PWM = 21
MAX_CURRENT = 22
MAX_VOLTAGE = 23
SCHEME = 24
SUPPLY = 25
SUPPLY_EMF = 26
SUPPLY_RESISTANCE = 27
CURRENT_LIMIT = 28
LATENCY = 29
DERIVATIVE_TIME = 30
DEAD_BAND = 31
OBSERVATION_DELAY = 32
BACKLASH = 33
RIPPLE_AMPLITUDE = 34
RIPPLE_FREQUENCY = 35
RIPPLE_PHASE = 36
MESHING_AMPLITUDE = 37
MESHING_DECAY = 38
MESHING_FREQUENCY = 39
MESHING_PHASE = 40
THETA_SIZE = 41
#: Most control periods of ``latency`` (docs/model.md §9); the firmware's measurement history holds
#: this many past samples and the current one.
MAX_LATENCY = 3
HISTORY_SIZE = 2 * (MAX_LATENCY + 1)
#: The identified motor and friction entries of ``theta`` (Q_OFFSET … K_V).
MOTOR_AND_FRICTION = slice(Q_OFFSET, K_V + 1)

VOLTAGE_LAW = 0.0
CURRENT_LAW = 1.0

#: SCHEME values, and their names in parameter files and on the command line.
REFERENCE = 0.0
SEMI_IMPLICIT = 1.0
SCHEMES = {"reference": REFERENCE, "semi_implicit": SEMI_IMPLICIT}

SERVO_U = 0
SERVO_Q_SMOOTH = 1
SERVO_PERIODS = 2
SERVO_CURRENT = 3
SERVO_DRAWN = 4
SERVO_VIN = 5
SERVO_ERROR = 6
SERVO_RATE = 7
SERVO_ENABLE = 8
SERVO_EXTRA = 9
SERVO_HISTORY = 10
SERVO_REPORTED = SERVO_HISTORY + HISTORY_SIZE
SERVO_OBSERVED = SERVO_REPORTED + 1
#: Positions the ring of ``observation_delay`` keeps: a delay reaches back at most
#: OBSERVED_SIZE − 2 control periods (it interpolates between two of them).
OBSERVED_SIZE = 64
MAX_OBSERVATION_PERIODS = OBSERVED_SIZE - 2
#: A learned actuator's input history (:mod:`frictionsim.actuator_net`): NET_HISTORY samples
#: NET_STRIDE control periods apart, kept in rings of NET_RING periods.
NET_HISTORY = 3
NET_STRIDE = 2
NET_RING = (NET_HISTORY - 1) * NET_STRIDE + 1
SERVO_ERRORS = SERVO_OBSERVED + OBSERVED_SIZE
SERVO_VELOCITIES = SERVO_ERRORS + NET_RING
SERVO_GAP = SERVO_VELOCITIES + NET_RING
SERVO_MOTOR_SPEED = SERVO_GAP + 1
SERVO_CONTACT = SERVO_MOTOR_SPEED + 1
SERVO_STATE_SIZE = SERVO_CONTACT + 1

MASS = 0
LENGTH = 1
ARM_MASS = 2
KP = 3
VIN = 4
DAMPING = 5
DT = 6
KD = 7
TORQUE_LIMIT = 8
ACCELERATION = 9
BENCH_SIZE = 10

def bench_vector(*, mass: float = 0.0, length: float = 0.0, arm_mass: float = 0.0, kp: float,
                 vin: float, dt: float, damping: float = 0.0, kd: float = 0.0,
                 torque_limit: float = 0.0, acceleration: float = 0.0):
    """A ``bench`` vector (a float64 numpy array) from named values (SI units; see the table
    above). ``kp``, ``vin`` and ``dt`` have no default: a servo without supply never moves
    and a step of 0 s divides by zero (a current-law drive ignores ``vin``: pass its
    actuator's). ValueError naming a value that is not finite, a negative one, or dt ≤ 0."""
    import math

    import numpy as np  # here: importing the layout's constants needs no numpy

    from frictionsim.errors import ConfigurationError
    from frictionsim.limits import is_number

    named = {"mass": mass, "length": length, "arm_mass": arm_mass, "kp": kp, "vin": vin,
             "damping": damping, "dt": dt, "kd": kd, "torque_limit": torque_limit,
             "acceleration": acceleration}
    for name, value in named.items():
        if not is_number(value) \
                or not math.isfinite(value) or value < 0:
            raise ConfigurationError(f"bench_vector: {name} = {value!r} must be a finite number ≥ 0")
    if dt == 0:
        raise ConfigurationError("bench_vector: dt must be positive (the control period, s)")
    if torque_limit > 1:
        raise ConfigurationError(f"bench_vector: torque_limit = {torque_limit!r} is a fraction of the "
                                 "full duty cycle, at most 1")
    bench = np.zeros(BENCH_SIZE)
    bench[MASS] = mass
    bench[LENGTH] = length
    bench[ARM_MASS] = arm_mass
    bench[KP] = kp
    bench[VIN] = vin
    bench[DAMPING] = damping
    bench[DT] = dt
    bench[KD] = kd
    bench[TORQUE_LIMIT] = torque_limit
    bench[ACCELERATION] = acceleration
    return bench


#: Parameter-file name -> index in ``theta``.
THETA_INDEX: dict[str, int] = {
    "q_offset": Q_OFFSET,
    "kt": KT,
    "R": RESISTANCE,
    "armature": ARMATURE,
    "friction_base": K_C,
    "friction_stribeck": K_CS,
    "load_friction_base": K_L,
    "load_friction_stribeck": K_LS,
    "load_friction_motor": K_M,
    "load_friction_external": K_E,
    "load_friction_motor_stribeck": K_MS,
    "load_friction_external_stribeck": K_ES,
    "load_friction_motor_quad": K_MQ,
    "load_friction_external_quad": K_EQ,
    "dtheta_stribeck": V_S,
    "alpha": ALPHA,
    "friction_viscous": K_V,
    "max_velocity": MAX_VELOCITY,
    "error_gain_ratio": ERROR_GAIN_RATIO,
    "supply_emf": SUPPLY_EMF,
    "supply_resistance": SUPPLY_RESISTANCE,
    "max_current_limit": CURRENT_LIMIT,
    "latency_steps": LATENCY,
    "derivative_time": DERIVATIVE_TIME,
    "observation_delay": OBSERVATION_DELAY,
    "backlash": BACKLASH,
    "ripple_amplitude": RIPPLE_AMPLITUDE,
    "ripple_frequency": RIPPLE_FREQUENCY,
    "ripple_phase": RIPPLE_PHASE,
    "meshing_amplitude": MESHING_AMPLITUDE,
    "meshing_decay": MESHING_DECAY,
    "meshing_frequency": MESHING_FREQUENCY,
    "meshing_phase": MESHING_PHASE,
}
