"""The command line: the table of commands (:mod:`~experiments.runner.registry`), the parser
and error handling (:mod:`~experiments.runner.cli`), shared arguments
(:mod:`~experiments.runner.arguments`)."""
