"""What every room of the experiments shares: output files and tables
(:mod:`~frictionsim.experiments.common.output`), the progress display
(:mod:`~frictionsim.experiments.common.progress`), figures (:mod:`~frictionsim.experiments.common.plots`) and
loading inputs (:mod:`~frictionsim.experiments.common.loading`)."""
