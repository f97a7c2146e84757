"""Robots: identified servos on the 2R arms of docs/model.md §10
(:mod:`~frictionsim.experiments.robots.arm2r`), and a real robot's recordings replayed
(:mod:`~frictionsim.experiments.robots.recorded`) and its servos identified from them
(:mod:`~frictionsim.experiments.robots.identify`, reusing the bench's fitter)."""
