"""What every room of the experiments shares: output files and tables
(:mod:`~experiments.common.output`), the progress display
(:mod:`~experiments.common.progress`), figures (:mod:`~experiments.common.plots`) and
loading inputs (:mod:`~experiments.common.loading`)."""
