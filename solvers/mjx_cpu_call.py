"""A Warp kernel called from JAX on the CPU by a compiled XLA FFI handler (MJX's servo step).

Warp's JAX FFI (``warp.jax_kernel``) calls a kernel from a jitted computation through a Python
callback: on the CPU each call takes the GIL and packs the kernel's arguments in Python, about
50 µs, which is more than MJX's whole step of a one-joint bench for 64 worlds. Here the same
compiled Warp kernel (its CPU entry point, ``forward(bounds, args)``) is called from a handler
compiled by Numba against XLA's FFI C API (``xla/ffi/api/c_api.h``, shipped with jaxlib):

- :func:`kernel_call` (the call in a traced computation) makes, once per kernel, shapes and
  static values, a :class:`Plan` from Warp's recorded launch: the kernel's argument block as
  Warp packs it (its arrays' shapes and strides, its scalars), the word where each buffer's
  data pointer goes, and the launch bounds;
- the handler, one per plan, copies that block, writes the data pointers of the buffers XLA
  hands it (inputs in the kernel's order; the pure outputs after the aliased in-outs) and calls
  the entry point: no Python, no lock, thread-safe (every call packs its own block);
- the FFI target's name carries the plan's fingerprint, so an executable from JAX's persistent
  compilation cache finds this process's handler for the same layout or none (an error).

The handler answers XLA's metadata query (the FFI API version it was built for) and refuses,
with an FFI error, a call whose buffer counts are not the plan's. A plan reads Warp's recorded
launch (its packed parameters and the kernel's CPU entry point): where a Warp release changes
those, :class:`NativeCallUnavailable` says so and the caller takes Warp's own FFI.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib

import numpy as np

# XLA's FFI C API, the fields the handler reads (xla/ffi/api/c_api.h).


class _ExtensionBase(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("type", ctypes.c_int),
                ("next", ctypes.c_void_p)]


class _ApiVersion(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("major_version", ctypes.c_int), ("minor_version", ctypes.c_int)]


class _Metadata(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("api_version", _ApiVersion),
                ("traits", ctypes.c_uint32)]


class _MetadataExtension(ctypes.Structure):
    _fields_ = [("extension_base", _ExtensionBase), ("metadata", ctypes.c_void_p)]


class _Buffers(ctypes.Structure):  # XLA_FFI_Args and XLA_FFI_Rets
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("size", ctypes.c_int64), ("types", ctypes.c_void_p),
                ("buffers", ctypes.c_void_p)]


class _Attrs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("size", ctypes.c_int64), ("types", ctypes.c_void_p),
                ("names", ctypes.c_void_p), ("attrs", ctypes.c_void_p)]


class _CallFrame(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("api", ctypes.c_void_p), ("ctx", ctypes.c_void_p), ("stage", ctypes.c_int),
                ("args", _Buffers), ("rets", _Buffers), ("attrs", _Attrs),
                ("future", ctypes.c_void_p)]


class _Buffer(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("dtype", ctypes.c_int), ("data", ctypes.c_void_p), ("rank", ctypes.c_int64),
                ("dims", ctypes.c_void_p)]


class _Api(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("api_version", _ApiVersion), ("internal_api", ctypes.c_void_p),
                ("error_create", ctypes.c_void_p)]


class _ErrorCreateArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("message", ctypes.c_char_p), ("errc", ctypes.c_int)]


_METADATA_EXTENSION = 1          # XLA_FFI_Extension_Metadata
_EXECUTE = 3                     # XLA_FFI_ExecutionStage_EXECUTE
_INVALID_ARGUMENT = 3            # XLA_FFI_Error_Code_INVALID_ARGUMENT
_API_VERSION = (0, 1)            # the FFI API this handler speaks (its call frame is 0.1's)

_FRAME_EXTENSION = _CallFrame.extension_start.offset
_FRAME_API = _CallFrame.api.offset
_FRAME_STAGE = _CallFrame.stage.offset
_FRAME_ARGS_SIZE = _CallFrame.args.offset + _Buffers.size.offset
_FRAME_ARGS = _CallFrame.args.offset + _Buffers.buffers.offset
_FRAME_RETS_SIZE = _CallFrame.rets.offset + _Buffers.size.offset
_FRAME_RETS = _CallFrame.rets.offset + _Buffers.buffers.offset
_EXTENSION_TYPE = _ExtensionBase.type.offset
_EXTENSION_METADATA = _MetadataExtension.metadata.offset
_METADATA_MAJOR = _Metadata.api_version.offset + _ApiVersion.major_version.offset
_METADATA_MINOR = _Metadata.api_version.offset + _ApiVersion.minor_version.offset
_METADATA_TRAITS = _Metadata.traits.offset
_BUFFER_DATA = _Buffer.data.offset
_API_ERROR_CREATE = _Api.error_create.offset


class NativeCallUnavailable(RuntimeError):
    """This Warp cannot give a plan (its launch record is not the one this module reads, or
    its CPU kernels run in blocks)."""


class Plan:
    """A kernel's call as the handler makes it: the forward entry point, the argument block
    (words of 8 bytes) and launch bounds as Warp packs them, and where each FFI buffer's data
    pointer goes (``inputs[i]``, ``outputs[j]``: a word index into the block; −1: none, an
    aliased in-out the inputs already placed)."""

    def __init__(self, forward: int, block: np.ndarray, bounds: np.ndarray, inputs: np.ndarray,
                 outputs: np.ndarray, keep: tuple) -> None:
        self.forward, self.block, self.bounds = forward, block, bounds
        self.inputs, self.outputs = inputs, outputs
        self._keep = keep  # Warp's module executable and the packed values stay loaded

    @functools.cached_property
    def fingerprint(self) -> str:
        """The layout's digest (not the entry point's address, which is this process's)."""
        digest = hashlib.sha256()
        for part in (self.block, self.bounds, self.inputs, self.outputs):
            digest.update(part.tobytes())
        digest.update(self._keep[1].encode())
        return digest.hexdigest()[:24]


def _words(structure) -> np.ndarray:
    raw = bytes(structure)
    raw += b"\0" * (-len(raw) % 8)
    return np.frombuffer(raw, dtype=np.int64).copy()


def plan(kernel, dim: int, args: list, in_out: int, outputs: int) -> Plan:
    """The plan of ``kernel`` (a concrete Warp kernel) over ``dim`` threads with ``args`` in
    its order: Warp arrays (their shapes and dtypes; the data is XLA's at each call) and
    scalars (static), the last ``outputs`` pure outputs, the ``in_out`` before them aliased.
    The FFI inputs are the array arguments but the pure outputs, in order; its outputs the
    in-outs then the pure outputs."""
    import warp as wp

    launch = wp.launch(kernel, dim=dim, inputs=args[:len(args) - outputs],
                       outputs=args[len(args) - outputs:], device="cpu", record_cmd=True)
    try:
        from warp._src.types import array_t

        block_dim = launch.module_exec.block_dim
        bounds, *params = launch.params
        entry = launch.hooks.forward
    except (ImportError, AttributeError, ValueError) as error:
        raise NativeCallUnavailable(f"Warp {wp.__version__}'s launch record: {error}") from None
    if block_dim != 1:
        raise NativeCallUnavailable("Warp's CPU kernels run in blocks "
                                    "(warp.config.enable_cpu_blocks)")
    if len(params) != len(kernel.adj.args):
        raise NativeCallUnavailable(f"Warp {wp.__version__} packs {len(params)} parameters for "
                                    f"{len(kernel.adj.args)} arguments")
    labels = [a.label for a in kernel.adj.args]
    block_type = type("ServoKernelArgs", (ctypes.Structure,),
                      {"_fields_": [(label, type(p)) for label, p in zip(labels, params)]})
    block = block_type(*params)
    data = array_t.data.offset
    slots = [getattr(block_type, label).offset + data if isinstance(p, array_t) else None
             for label, p in zip(labels, params)]
    if any(s is not None and s % 8 for s in slots):
        raise NativeCallUnavailable("a Warp array's data pointer is not on a word boundary")
    first_output = len(params) - outputs
    arrays = [k for k, s in enumerate(slots) if s is not None and k < first_output]
    inputs = np.array([slots[k] // 8 for k in arrays], dtype=np.int64)
    outs = np.array([-1] * in_out + [slots[k] // 8 for k in range(first_output, len(params))],
                    dtype=np.int64)
    forward = ctypes.cast(entry, ctypes.c_void_p).value
    return Plan(forward, _words(block), _words(bounds), inputs, outs,
                (launch.module_exec, f"{kernel.key}:{kernel.module.name}"))


def _intrinsics():
    """Loads, stores and an indirect call on raw addresses, for the handler (Numba)."""
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    i64, i32, i8p = ir.IntType(64), ir.IntType(32), ir.IntType(8).as_pointer()

    @intrinsic
    def load64(typingctx, address):
        def codegen(context, builder, signature, args):
            return builder.load(builder.inttoptr(args[0], i64.as_pointer()))
        return types.int64(types.int64), codegen

    @intrinsic
    def load32(typingctx, address):
        def codegen(context, builder, signature, args):
            return builder.sext(builder.load(builder.inttoptr(args[0], i32.as_pointer())), i64)
        return types.int64(types.int64), codegen

    @intrinsic
    def store32(typingctx, address, value):
        def codegen(context, builder, signature, args):
            builder.store(builder.trunc(args[1], i32), builder.inttoptr(args[0], i32.as_pointer()))
            return context.get_dummy_value()
        return types.none(types.int64, types.int64), codegen

    @intrinsic
    def call2(typingctx, function, first, second):
        """``void function(void*, void*)``."""
        def codegen(context, builder, signature, args):
            fn_type = ir.FunctionType(ir.VoidType(), [i8p, i8p])
            fn = builder.inttoptr(args[0], fn_type.as_pointer())
            builder.call(fn, [builder.inttoptr(args[1], i8p), builder.inttoptr(args[2], i8p)])
            return context.get_dummy_value()
        return types.none(types.int64, types.int64, types.int64), codegen

    @intrinsic
    def call1(typingctx, function, first):
        """``void* function(void*)``, its result as an address."""
        def codegen(context, builder, signature, args):
            fn_type = ir.FunctionType(i8p, [i8p])
            fn = builder.inttoptr(args[0], fn_type.as_pointer())
            return builder.ptrtoint(builder.call(fn, [builder.inttoptr(args[1], i8p)]), i64)
        return types.int64(types.int64, types.int64), codegen

    return load64, load32, store32, call2, call1


_HANDLERS: dict[str, tuple] = {}


def register(plan: Plan) -> str:
    """The FFI target's name for ``plan``, its handler compiled and registered with JAX on the
    CPU (once per process and layout)."""
    name = f"frictionsim_warp_kernel_{plan.fingerprint}"
    if name in _HANDLERS:
        return name
    import jax
    from numba import cfunc, types

    load64, load32, store32, call2, call1 = _intrinsics()
    forward, block, bounds = plan.forward, plan.block, plan.bounds
    inputs, outputs = plan.inputs, plan.outputs
    n_in, n_out = len(inputs), len(outputs)
    message = ctypes.create_string_buffer(
        f"{name}: XLA passed buffers this plan does not take (expected {n_in} inputs, "
        f"{n_out} outputs)".encode())
    error_args = _ErrorCreateArgs(ctypes.sizeof(_ErrorCreateArgs) - 4, None,
                                  ctypes.cast(message, ctypes.c_char_p), _INVALID_ARGUMENT)
    error_address = ctypes.addressof(error_args)
    major, minor = _API_VERSION

    @cfunc(types.int64(types.int64), nopython=True)
    def handler(frame):
        extension = load64(frame + _FRAME_EXTENSION)
        if extension != 0 and load32(extension + _EXTENSION_TYPE) == _METADATA_EXTENSION:
            metadata = load64(extension + _EXTENSION_METADATA)
            store32(metadata + _METADATA_MAJOR, major)
            store32(metadata + _METADATA_MINOR, minor)
            store32(metadata + _METADATA_TRAITS, 0)
            return 0
        if load32(frame + _FRAME_STAGE) != _EXECUTE:
            return 0
        if load64(frame + _FRAME_ARGS_SIZE) != n_in or load64(frame + _FRAME_RETS_SIZE) != n_out:
            api = load64(frame + _FRAME_API)
            return call1(load64(api + _API_ERROR_CREATE), error_address)
        args = block.copy()
        given = load64(frame + _FRAME_ARGS)
        for i in range(n_in):
            args[inputs[i]] = load64(load64(given + 8 * i) + _BUFFER_DATA)
        given = load64(frame + _FRAME_RETS)
        for j in range(n_out):
            if outputs[j] >= 0:
                args[outputs[j]] = load64(load64(given + 8 * j) + _BUFFER_DATA)
        limits = bounds.copy()
        call2(forward, limits.ctypes.data, args.ctypes.data)
        return 0

    jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(handler.address), platform="cpu")
    _HANDLERS[name] = (handler, plan, message, error_args)
    return name


_TARGETS: dict = {}


def _target(kernel, dim: int, layout: tuple, in_out: int, outputs: int) -> str:
    """The registered FFI target of ``kernel`` over ``dim`` threads for arguments of this
    ``layout`` (per argument: (shape, numpy dtype) of an array, or a static scalar)."""
    key = (kernel.key, id(kernel), dim, layout, in_out, outputs)
    name = _TARGETS.get(key)
    if name is None:
        import warp as wp

        args = [wp.empty(entry[1], dtype=wp.dtype_from_numpy(entry[2]), device="cpu")
                if isinstance(entry, tuple) and entry[0] == "array" else entry
                for entry in layout]
        name = register(plan(kernel, dim, args, in_out, outputs))
        _TARGETS[key] = (name, kernel)
    return _TARGETS[key][0]



def kernel_call(kernel, dim: int, args: list, in_out: int, output_shapes: list) -> list:
    """``kernel`` (a concrete Warp kernel) over ``dim`` threads inside a jitted computation on
    the CPU: ``args`` in the kernel's order but its pure outputs (JAX arrays, whose data the
    kernel reads and, for the ``in_out`` last ones, writes in place; Python scalars, static);
    ``output_shapes`` the pure outputs' (shape, dtype). The in-outs' new values then the pure
    outputs, as JAX arrays."""
    import jax

    def is_array(x) -> bool:
        return getattr(x, "ndim", 0) >= 1

    layout = tuple(("array", tuple(x.shape), np.dtype(x.dtype)) if is_array(x)
                   else x.item() if hasattr(x, "item") else x for x in args)
    arrays = [x for x in args if is_array(x)]
    name = _target(kernel, dim, layout + tuple(("array", tuple(s), np.dtype(d))
                                                for s, d in output_shapes),
                   in_out, len(output_shapes))
    first = len(arrays) - in_out
    results = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in arrays[first:]]
    results += [jax.ShapeDtypeStruct(tuple(s), d) for s, d in output_shapes]
    call = jax.ffi.ffi_call(name, results,
                            input_output_aliases={first + k: k for k in range(in_out)})
    return call(*arrays)
