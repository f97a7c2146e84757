"""Integration of the frictionsim physics.

- :mod:`frictionsim.solvers.fixed_step`: the compiled step and rollout, a public API;
- :mod:`frictionsim.solvers.c_abi`: the step and the servo unit as C function pointers;
- :mod:`frictionsim.solvers.batch`, :mod:`frictionsim.solvers.lockstep`: many parameter
  vectors × many logs in parallel threads;
- :mod:`frictionsim.solvers.rollouts`: whole-log simulation with named parameter sets;
- :mod:`frictionsim.solvers.event_driven`: exact stick–slip with solve_ivp and located events,
  for one joint or n (:mod:`frictionsim.solvers.robot`);
- :mod:`frictionsim.solvers.robot`, :mod:`frictionsim.solvers.mujoco_adapter`: servos on the
  joints of MJCF models.
"""

#: The integrators of scipy's ``solve_ivp`` the event-driven solvers accept (DOP853 by default).
METHODS = ("RK45", "DOP853", "LSODA", "Radau")
