"""Borrowed arrays: views that hold no reference, for the hot loops of the compiled engines.

Numba counts references to an array's memory: every view it makes (a servo's row
``thetas[j]``, a slice of a scratch vector) adds one and drops it again, each an atomic
read-modify-write of a counter that every view of that memory shares. In the robot's fixed
step these made about 290 locked instructions per control period, a quarter of its time
(``perf``: ``NRT_incref``/``NRT_decref``), and threads that make views of one array (the
joints' addresses) write to the same counter. A view of a borrowed array carries
no counter (Numba's runtime skips a null one), so it costs nothing of the kind, and the
numbers computed are the same to the bit.

A borrowed array is valid only while the array it was made from is alive: borrow a
function's arguments, or locals the function still uses after the loop that reads the
borrowed copies.
"""

from __future__ import annotations

from numba import njit, types
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

from frictionsim.servo_bank import ServoBank


@intrinsic
def borrowed(typingctx, array):
    """The same array (data, shape, strides) without its reference count (see the module
    docstring: only while ``array`` is alive)."""
    if not isinstance(array, types.Array):
        return None

    def codegen(context, builder, signature, args):
        source = make_array(array)(context, builder, value=args[0])
        view = make_array(array)(context, builder)
        populate_array(view, data=source.data, shape=source.shape, strides=source.strides,
                       itemsize=source.itemsize, meminfo=None)
        return view._getvalue()

    return array(array), codegen


@njit(cache=True, inline="always")
def borrowed_bank(bank: ServoBank) -> ServoBank:
    """The servo bank with every array borrowed (:func:`borrowed`)."""
    return ServoBank(borrowed(bank.thetas), borrowed(bank.firmware), borrowed(bank.records),
                     borrowed(bank.nets), borrowed(bank.work))


@njit(cache=True)
def hold(*arrays) -> None:
    """Nothing: called after the last use of borrowed views of ``arrays``, it keeps them alive
    to there (Numba frees a local after its last use; a real call, so never optimised away
    before the reference counts are placed)."""
