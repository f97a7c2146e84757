"""A stand-in for the fitter's logs whose loss is an analytic function of theta: the fitter's
and the identifiability analysis's behaviour on losses whose optima and flat directions are
known."""

from __future__ import annotations

import numpy as np

from frictionsim import layout


class AnalyticLogs:
    """Stands in for PackedLogs: one 'log' whose error is an analytic function of theta."""

    names = ["analytic"]
    n_logs = 1

    def __init__(self, loss):
        self.loss = loss

    def errors(self, thetas: np.ndarray) -> np.ndarray:
        return np.array([[self.loss(t)] for t in np.atleast_2d(thetas)])


def at(theta: np.ndarray, name: str) -> float:
    """The value of parameter ``name`` in a theta vector."""
    return float(theta[layout.THETA_INDEX[name]])
