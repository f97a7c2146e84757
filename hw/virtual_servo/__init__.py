"""The virtual servo: a simulated servo on a simulated bench that answers like the real one.

The only part of :mod:`hw` that imports :mod:`solvers` (DESIGN.md): it
integrates the physics with the compiled step.
"""
