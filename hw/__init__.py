"""Hardware: serial servo protocols (Dynamixel, Feetech), EtherCAT drives (eRob over pysoem).

Imports only :mod:`frictionsim` (never :mod:`solvers` or :mod:`experiments`), so
the hardware stack runs without matplotlib or the compiled simulators.
"""
