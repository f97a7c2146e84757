"""Identification: the search space (:mod:`~experiments.identification.search_space`), one CMA
run (:mod:`~experiments.identification.cma_run`) and the schedule of runs
(:mod:`~experiments.identification.schedule`) that the fitter
(:mod:`~experiments.identification.fitter`) drives, where each model starts
(:mod:`~experiments.identification.starts`), the pipeline on a plain settings dataclass
(:mod:`~experiments.identification.pipeline`), its reports
(:mod:`~experiments.identification.report`) and Dask
(:mod:`~experiments.identification.distributed`).

Imports go pipeline → distributed → starts → fitter → schedule → cma_run.
"""
