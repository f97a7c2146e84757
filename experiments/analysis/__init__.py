"""Analyses of parameter sets and solvers: comparisons on logs
(:mod:`~experiments.analysis.comparison`), the fixed step against the event-driven solver
(:mod:`~experiments.analysis.crosscheck`), the Coulomb oscillator
(:mod:`~experiments.analysis.oscillator`) and the compiled simulator's speed
(:mod:`~experiments.analysis.speed`)."""
