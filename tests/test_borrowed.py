"""Borrowed arrays (solvers/borrowed.py): the same memory, shape and strides without a reference
count, so the compiled engines' views cost no atomic update. (The robot's fixed step reads
everything through them: tests/test_robots.py holds it to the event-driven engine and MuJoCo.)"""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

from frictionsim.solvers.borrowed import borrowed, hold


@njit(cache=True)
def _write_rows_through_borrowed(a: np.ndarray) -> float:
    b = borrowed(a)
    total = 0.0
    for j in range(b.shape[0]):
        row = b[j]  # a view of a view: no reference count anywhere
        row[0] = 10.0 * j
        total += row[-1]
    hold(a)
    return total


@njit(cache=True)
def _shape_strides_and_data(a: np.ndarray) -> tuple:
    b = borrowed(a)
    return b.shape, b.strides, b.ctypes.data == a.ctypes.data


def test_a_borrowed_array_reads_and_writes_the_same_memory():
    a = np.arange(12.0).reshape(4, 3)
    assert _write_rows_through_borrowed(a) == 2.0 + 5.0 + 8.0 + 11.0
    np.testing.assert_array_equal(a[:, 0], [0.0, 10.0, 20.0, 30.0])
    np.testing.assert_array_equal(a[:, 1:], np.arange(12.0).reshape(4, 3)[:, 1:])


def test_a_borrowed_array_keeps_shape_and_strides_of_a_non_contiguous_view():
    a = np.arange(30.0).reshape(5, 6)[::2, 1::2]
    shape, strides, same = _shape_strides_and_data(a)
    assert shape == a.shape and strides == a.strides and same


def test_only_an_array_is_borrowed():
    @njit
    def borrow_scalar(x):
        return borrowed(x)

    with pytest.raises(TypingError):
        borrow_scalar(1.0)


def test_a_borrowed_bank_is_the_bank_memory():
    from frictionsim.layout import BENCH_SIZE
    from frictionsim.params import ParameterSet
    from frictionsim.servo_bank import new_bank

    bank = new_bank(np.stack([ParameterSet.defaults("m6", "sts3215_12v").theta()] * 2),
                    np.zeros((1, BENCH_SIZE)))

    @njit
    def touch(bank):
        b = borrowed(bank)
        b.records[1, 0] = 7.5
        out = b.thetas[0, 0] == bank.thetas[0, 0]
        hold(bank.records)
        return out

    assert touch(bank)
    assert bank.records[1, 0] == 7.5
