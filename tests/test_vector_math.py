"""The vectorisable sin, exp, log and Stribeck factor (frictionsim.solvers.vector_math) against libm:
within a few ulps on the ranges the lock-step kernel uses, the same special cases."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from frictionsim.friction import stribeck_factor
from frictionsim.solvers.vector_math import (
    SIN_EXACT_LIMIT,
    vector_exp,
    vector_log,
    vector_sin,
    vector_stribeck_factor,
)


@njit(error_model="numpy")
def _apply(kind, x):
    out = np.empty_like(x)
    for i in range(x.size):
        if kind == 0:
            out[i] = vector_sin(x[i])
        elif kind == 1:
            out[i] = vector_exp(x[i])
        else:
            out[i] = vector_log(x[i])
    return out


@njit(error_model="numpy")
def _stribeck(v, v_s, alpha):
    vector = np.empty_like(v)
    libm = np.empty_like(v)
    for i in range(v.size):
        vector[i] = vector_stribeck_factor(v[i], v_s[i], alpha[i])
        libm[i] = stribeck_factor(v[i], v_s[i], alpha[i])
    return vector, libm


def ulps(value: np.ndarray, exact: np.ndarray) -> float:
    """The largest error in units of the last place of the exact value."""
    return float(np.max(np.abs(value - exact) / np.spacing(np.abs(exact))))


def test_sine_within_two_ulps_where_it_is_not_near_zero():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-50.0, 50.0, 200_000),
                        rng.uniform(-SIN_EXACT_LIMIT, SIN_EXACT_LIMIT, 20_000),
                        [0.0, math.pi / 4, -math.pi / 2, 3 * math.pi / 4, 7.0]])
    exact = np.sin(x)
    away = np.abs(exact) > 1e-3  # relative error near the zeros is the reduction's, absolute
    assert ulps(_apply(0, x[away]), exact[away]) <= 2.0
    assert np.max(np.abs(_apply(0, x) - exact)) < 1e-15
    assert _apply(0, np.array([0.0]))[0] == 0.0
    assert np.isnan(_apply(0, np.array([np.inf, -np.inf, np.nan]))).all()


def test_exp_within_one_ulp_over_the_normal_range_and_its_limits():
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.uniform(-708.0, 709.0, 200_000), rng.uniform(-2.0, 2.0, 100_000)])
    assert ulps(_apply(1, x), np.exp(x)) <= 1.0
    special = _apply(1, np.array([0.0, -800.0, -np.inf, 800.0, np.inf, np.nan]))
    assert special[0] == 1.0 and special[1] == 0.0 and special[2] == 0.0
    assert special[3] == np.inf and special[4] == np.inf and np.isnan(special[5])


def test_log_within_two_ulps_subnormals_included():
    rng = np.random.default_rng(3)
    y = np.concatenate([np.exp(rng.uniform(-700.0, 700.0, 200_000)),
                        rng.uniform(0.5, 2.0, 100_000), [1.0, 2.0, 5e-324, 1e-310, 1.7e308]])
    assert ulps(_apply(2, y), np.log(y)) <= 2.0
    assert _apply(2, np.array([1.0]))[0] == 0.0


def test_stribeck_factor_as_the_friction_model_defines_it():
    rng = np.random.default_rng(4)
    n = 200_000
    v = rng.normal(0.0, 1.0, n) * 10.0 ** rng.uniform(-9.0, 1.0, n)
    v[:100] = 0.0
    v[100:110] = np.inf
    v_s = np.where(rng.uniform(size=n) < 0.05, 0.0, 10.0 ** rng.uniform(-3.0, 0.0, n))
    alpha = rng.uniform(0.3, 3.0, n)
    vector, libm = _stribeck(v, v_s, alpha)
    assert np.max(np.abs(vector - libm)) <= 4.0 * np.finfo(float).eps
    exact = (v == 0.0) | (v_s == 0.0) | np.isinf(v)  # 1 at rest, 0 without v_s or at ∞
    np.testing.assert_array_equal(vector[exact], libm[exact])
