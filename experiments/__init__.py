"""frictionsim's experiments and the ``frictionsim`` command, in rooms with one-way imports.

- :mod:`experiments.runner`: the command line (lazy table of commands, shared arguments);
- :mod:`experiments.commands`: one thin module per command (parse arguments, make plain
  calls, print);
- :mod:`experiments.identification`: search space, CMA runs and their schedule, the
  identification pipeline, its reports, Dask;
- :mod:`experiments.analysis`: comparisons, the cross-check, the oscillator, speed;
- :mod:`experiments.synthetic`: the virtual bench and the built-in data set;
- :mod:`experiments.common`: output files, progress display, figures, loading inputs.

Imports go ``runner → commands → identification | analysis | synthetic → common``
(then ``solvers``, ``hw``, ``frictionsim``); the runner imports a command module only
when that command runs. A new command is a module in ``commands/`` and one line in
:data:`experiments.runner.registry.COMMANDS`.
"""
