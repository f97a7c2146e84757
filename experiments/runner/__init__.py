"""The command line: the table of commands (:mod:`~frictionsim.experiments.runner.registry`), the parser
and error handling (:mod:`~frictionsim.experiments.runner.cli`), shared arguments
(:mod:`~frictionsim.experiments.runner.arguments`)."""
