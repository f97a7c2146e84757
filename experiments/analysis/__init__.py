"""Analyses of parameter sets and solvers: comparisons on logs
(:mod:`~frictionsim.experiments.analysis.comparison`), the fixed step against the event-driven solver
(:mod:`~frictionsim.experiments.analysis.crosscheck`), the Coulomb oscillator
(:mod:`~frictionsim.experiments.analysis.oscillator`) and the compiled simulator's speed
(:mod:`~frictionsim.experiments.analysis.speed`)."""
