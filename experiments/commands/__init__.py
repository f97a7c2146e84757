"""One module per ``frictionsim`` command: ``DESCRIPTION``, ``add_arguments(parser)`` and
``run(args) -> int``. They parse, call the library, print and write; the work is in
:mod:`experiments.identification`, :mod:`experiments.analysis`, :mod:`experiments.synthetic`,
:mod:`solvers` and :mod:`hw`. Heavy imports happen inside ``run`` so that a command's
``--help`` is quick."""
