"""One module per ``frictionsim`` command: ``DESCRIPTION``, ``add_arguments(parser)`` and
``run(args) -> int``. They parse, call the library, print and write; the work is in
:mod:`frictionsim.experiments.identification`, :mod:`frictionsim.experiments.analysis`,
:mod:`frictionsim.experiments.synthetic`, :mod:`frictionsim.solvers` and :mod:`frictionsim.hw`.
Heavy imports happen inside ``run`` so that a command's
``--help`` is quick."""
