"""Robots: identified servos on the 2R arms of docs/model.md §10
(:mod:`~frictionsim.experiments.robots.arm2r`)."""
