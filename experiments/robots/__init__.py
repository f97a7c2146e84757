"""Robots: identified servos on the 2R arms of SPEC §10 (:mod:`~frictionsim.experiments.robots.arm2r`)."""
