"""Identification: the search space (:mod:`~frictionsim.experiments.identification.search_space`), one CMA
run (:mod:`~frictionsim.experiments.identification.cma_run`) and the schedule of runs
(:mod:`~frictionsim.experiments.identification.schedule`) that the fitter
(:mod:`~frictionsim.experiments.identification.fitter`) drives, where each model starts
(:mod:`~frictionsim.experiments.identification.starts`), the pipeline on a plain settings dataclass
(:mod:`~frictionsim.experiments.identification.pipeline`), its reports
(:mod:`~frictionsim.experiments.identification.report`) and Dask
(:mod:`~frictionsim.experiments.identification.distributed`).

Imports go pipeline → distributed → starts → fitter → schedule → cma_run.
"""
