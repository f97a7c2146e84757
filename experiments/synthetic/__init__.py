"""Synthetic data: the virtual bench (:mod:`~experiments.synthetic.virtual_bench`) and the
built-in data set of the demo and the benchmarks (:mod:`~experiments.synthetic.dataset`)."""
