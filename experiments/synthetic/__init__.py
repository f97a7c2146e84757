"""Synthetic data: the virtual bench (:mod:`~frictionsim.experiments.synthetic.virtual_bench`) and the
built-in data set of the demo and the benchmarks (:mod:`~frictionsim.experiments.synthetic.dataset`)."""
