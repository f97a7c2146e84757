"""sin, exp and log as straight-line arithmetic, so a loop over lanes vectorises.

LLVM cannot vectorise a loop that calls libm (and this build has no SVML), so the
lock-step kernel's transcendental calls ran lane by lane and cost more than the rest of
the step together. These versions are branch-free polynomials (Cody–Waite range
reduction, Taylor series to below half an ulp of truncation error, the exponent handled
by bit operations), accurate to about one ulp of libm's results; every ``if`` is a select.

They are *not* bit-identical to libm: a rollout through them differs from the scalar
kernel's in the last bits of the state, which moves a log's MAE by about 1e-15 relative
(tests/test_lockstep.py bounds it at 1e-12). The scalar kernel, the reference-exact one,
keeps libm.

Domain: :func:`vector_sin` reduces exactly for |x| ≤ :data:`SIN_EXACT_LIMIT` (callers
recompute larger arguments with ``math.sin``); :func:`vector_exp` returns 0 below
−708.39 where libm would return a subnormal (< 2.3e-308), ∞ above 709.78;
:func:`vector_log` takes positive finite arguments, subnormals included.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: |x| up to which vector_sin's three-part reduction by π/2 is exact (n·P1 and n·P2 are
#: exact products while n < 2^27).
SIN_EXACT_LIMIT = 1.0e6

_TWO_OVER_PI = 2.0 / math.pi
# π/2 in three parts with trailing zero bits (Cephes' DP1–DP3 for π/4, doubled exactly).
_PIO2_1 = 1.57079625129699707031
_PIO2_2 = 7.54978941586159635336e-08
_PIO2_3 = 5.39030285815811905290e-15

_LOG2E = 1.0 / math.log(2.0)
# ln 2 in two parts (fdlibm's ln2_hi has 32 trailing zero bits: n·LN2_HI is exact).
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_EXP_UNDERFLOW = -708.3964185322641  # below: exp(x) < 2^-1022, returned as 0
_EXP_OVERFLOW = 709.782712893384
_SQRT2 = math.sqrt(2.0)
_TWO_POW_64 = 2.0**64
_MANTISSA = 0x000FFFFFFFFFFFFF
_ONE_BITS = 0x3FF0000000000000


def _inverse_factorials(first: int, last: int, step: int) -> tuple:
    """1/k! for k = first, first+step, …, last (the polynomials write the signs)."""
    return tuple(1.0 / math.factorial(k) for k in range(first, last + 1, step))


# sin r = r − r³/3! + … + r¹⁷/17!, cos r = 1 − r²/2! + … + r¹⁸/18! on |r| ≤ π/4; the first
# omitted terms are below 1e-19 (exp: r¹⁴/14! < 4e-18 on |r| ≤ ln2/2).
_S3, _S5, _S7, _S9, _S11, _S13, _S15, _S17 = _inverse_factorials(3, 17, 2)
_C4, _C6, _C8, _C10, _C12, _C14, _C16, _C18 = _inverse_factorials(4, 18, 2)
_E2, _E3, _E4, _E5, _E6, _E7, _E8, _E9, _E10, _E11, _E12, _E13 = _inverse_factorials(2, 13, 1)
# log(1+f) = f − f²/2 + s·(f²/2 + R), s = f/(2+f), R = Σ 2·s^(2k)/(2k+1); |s| ≤ 0.172.
_L = tuple(2.0 / (2 * k + 1) for k in range(1, 12))


@njit(cache=True, inline="always")
def vector_sin(x: float) -> float:
    """sin x for |x| ≤ SIN_EXACT_LIMIT, to about one ulp; NaN for ±∞ and NaN."""
    n = np.floor(x * _TWO_OVER_PI + 0.5)
    r = ((x - n * _PIO2_1) - n * _PIO2_2) - n * _PIO2_3
    z = r * r
    sine = r + r * z * (-_S3 + z * (_S5 + z * (-_S7 + z * (_S9 + z * (
        -_S11 + z * (_S13 + z * (-_S15 + z * _S17)))))))
    cosine = 1.0 - 0.5 * z + z * z * (_C4 + z * (-_C6 + z * (_C8 + z * (-_C10 + z * (
        _C12 + z * (-_C14 + z * (_C16 - z * _C18)))))))
    quadrant = n - 4.0 * np.floor(0.25 * n)  # 0, 1, 2 or 3
    value = sine if quadrant == 0.0 else cosine
    value = sine if quadrant == 2.0 else value
    return -value if quadrant >= 2.0 else value


@njit(cache=True, inline="always")
def vector_exp(x: float) -> float:
    """e^x to about one ulp; 0 below −708.39, ∞ above 709.78, NaN for NaN."""
    n = np.floor(x * _LOG2E + 0.5)
    r = (x - n * _LN2_HI) - n * _LN2_LO
    p = 1.0 + r + r * r * (_E2 + r * (_E3 + r * (_E4 + r * (_E5 + r * (_E6 + r * (
        _E7 + r * (_E8 + r * (_E9 + r * (_E10 + r * (_E11 + r * (_E12 + r * _E13)))))))))))
    e = min(max(n, -1022.0), 1023.0)  # keeps the bits valid where the selects below win
    scale = np.int64((np.int64(e) + 1023) << 52).view(np.float64)
    value = p * scale
    value = 0.0 if x < _EXP_UNDERFLOW else value
    return math.inf if x > _EXP_OVERFLOW else value


@njit(cache=True, inline="always")
def vector_log(y: float) -> float:
    """ln y for positive finite y (subnormals included), to about one ulp."""
    tiny = y < 2.2250738585072014e-308
    y = y * _TWO_POW_64 if tiny else y
    bits = np.float64(y).view(np.int64)
    e = np.float64((bits >> 52) - 1023) - (64.0 if tiny else 0.0)
    m = np.int64((bits & _MANTISSA) | _ONE_BITS).view(np.float64)  # y = m·2^e, 1 ≤ m < 2
    big = m > _SQRT2
    m = 0.5 * m if big else m
    e = e + 1.0 if big else e
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    r = z * (_L[0] + z * (_L[1] + z * (_L[2] + z * (_L[3] + z * (_L[4] + z * (
        _L[5] + z * (_L[6] + z * (_L[7] + z * (_L[8] + z * (_L[9] + z * _L[10]))))))))))
    half_f2 = 0.5 * f * f
    return e * _LN2_HI + ((f - half_f2 + s * (half_f2 + r)) + e * _LN2_LO)


@njit(cache=True, inline="always")
def vector_stribeck_factor(v: float, v_s: float, alpha: float) -> float:
    """s(v) = exp(−|v/v_s|^α) of :func:`frictionsim.friction.stribeck_factor` (the same
    cases: 0 when v_s ≤ 0, exactly 1 at rest when α > 0), by exp(−exp(α·ln|v/v_s|))."""
    y = abs(v / v_s) if v_s > 0.0 else 1.0
    y = y if y > 0.0 else 1.0  # v = 0: the select below answers
    # |v/v_s| = ∞ reads as 2^1024 in vector_log: e^(α·709.8) still sends s to 0 as libm does
    value = vector_exp(-vector_exp(alpha * vector_log(y)))
    value = 1.0 if v == 0.0 and alpha > 0.0 else value
    return 0.0 if v_s <= 0.0 else value
