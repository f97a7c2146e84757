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


def _borrowed_array(context, builder, array_type, value):
    source = make_array(array_type)(context, builder, value=value)
    view = make_array(array_type)(context, builder)
    populate_array(view, data=source.data, shape=source.shape, strides=source.strides,
                   itemsize=source.itemsize, meminfo=None)
    return view._getvalue()


@intrinsic
def borrowed(typingctx, value):
    """The same array (data, shape, strides) without its reference count, or a tuple (a
    named one too: a :class:`~frictionsim.servo_bank.ServoBank`, a scratch tuple) of arrays
    each so borrowed (see the module docstring: only while ``value`` is alive)."""
    if isinstance(value, types.Array):
        def codegen(context, builder, signature, args):
            return _borrowed_array(context, builder, value, args[0])

        return value(value), codegen
    if isinstance(value, types.BaseTuple) and len(value) \
            and all(isinstance(t, types.Array) for t in value.types):
        def codegen(context, builder, signature, args):
            members = [_borrowed_array(context, builder, t, builder.extract_value(args[0], i))
                       for i, t in enumerate(value.types)]
            return context.make_tuple(builder, value, members)

        return value(value), codegen
    return None


@njit(cache=True)
def hold(*arrays) -> None:
    """Nothing: called after the last use of borrowed views of ``arrays``, it keeps them alive
    to there (Numba frees a local after its last use; a real call, so never optimised away
    before the reference counts are placed)."""
