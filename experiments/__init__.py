"""frictionsim's experiments and the ``frictionsim`` command, in rooms with one-way imports.

- :mod:`frictionsim.experiments.runner`: the command line (lazy table of commands, shared arguments);
- :mod:`frictionsim.experiments.commands`: one thin module per command (parse arguments, make plain
  calls, print);
- :mod:`frictionsim.experiments.identification`: search space, CMA runs and their schedule, the
  identification pipeline, its reports, Dask;
- :mod:`frictionsim.experiments.analysis`: comparisons, the cross-check, the oscillator, speed;
- :mod:`frictionsim.experiments.synthetic`: the virtual bench and the built-in data set;
- :mod:`frictionsim.experiments.common`: output files, progress display, figures, loading inputs.

Imports go ``runner → commands → identification | analysis | synthetic → common``
(then ``solvers``, ``hw``, ``frictionsim``); the runner imports a command module only
when that command runs. A new command is a module in ``commands/`` and one line in
:data:`frictionsim.experiments.runner.registry.COMMANDS`.
"""
