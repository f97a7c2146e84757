"""Integration of the frictionsim physics.

- :mod:`solvers.fixed_step`: the compiled step and rollout (SPEC §4–5), a public API;
- :mod:`solvers.c_abi`: the step and the firmware law as C function pointers;
- :mod:`solvers.batch`: many parameter vectors × many logs in parallel threads;
- :mod:`solvers.rollouts`: whole-log simulation with named parameter sets;
- :mod:`solvers.event_driven`: exact stick–slip with solve_ivp and located events (SPEC §8);
- :mod:`solvers.coupled_joints`: several joints coupled by an inertia matrix, with the
  stick-friction solve of SPEC §8 and the same event-driven integration.
"""

#: The integrators of scipy's ``solve_ivp`` the event-driven solvers accept (DOP853 by default).
METHODS = ("RK45", "DOP853", "LSODA", "Radau")
