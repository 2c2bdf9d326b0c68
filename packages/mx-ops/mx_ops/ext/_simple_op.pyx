"""The trampoline through which the engine's workers call a native SimpleOp
function (include/mx_ops/simple_op.h) without the GIL.

A call's packed parameters start with a header (the function's address and
kind, the scalar, the keyword arguments' count), then for each keyword
argument the offsets of its key and value, then the NUL-terminated
strings; the random state, if any, follows at the first 8-byte boundary
after all that (tblob.h)."""
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, free

import struct

from mx_ops.core._types cimport MXTBlob, MXOpCall, MXFCompute, mx_random_state

# Function kinds, as mx_ops.ext.simple_op numbers them.
cdef enum:
    K_UNARY = 0
    K_BINARY = 1
    K_UNARY_T0 = 2
    K_UNARY_T1 = 3
    K_UNARY_T2 = 4
    K_BINARY_T0 = 5
    K_BINARY_T1 = 6
    K_BINARY_T2 = 7
    FEW_KWARGS = 16

_HEADER = struct.Struct("=Qiidii")


cdef struct Header:
    uint64_t fn
    int32_t kind
    int32_t has_random
    double scalar
    int32_t nkw
    int32_t own_size      # bytes before the random state


cdef int _dispatch(const Header* h, MXOpCall* c, const MXEnvArguments* env,
                   MXRunContext* ctx) noexcept nogil:
    cdef const MXTBlob* i = c.inputs
    cdef const MXTBlob* o = c.outputs
    cdef const int32_t* r = c.req
    if h.kind == K_UNARY:
        return (<MXUnaryFunction>h.fn)(&i[0], env, &o[0], r[0], ctx)
    if h.kind == K_BINARY:
        return (<MXBinaryFunction>h.fn)(&i[0], &i[1], env, &o[0], r[0], ctx)
    if h.kind == K_UNARY_T0:
        return (<MXUnaryGradFunctionT0>h.fn)(&i[0], env, &o[0], r[0], ctx)
    if h.kind == K_UNARY_T1:
        return (<MXUnaryGradFunctionT1>h.fn)(&i[0], &i[1], env, &o[0], r[0], ctx)
    if h.kind == K_UNARY_T2:
        return (<MXUnaryGradFunctionT2>h.fn)(&i[0], &i[1], env, &o[0], r[0], ctx)
    if h.kind == K_BINARY_T0:
        return (<MXBinaryGradFunctionT0>h.fn)(&i[0], env, &o[0], &o[1], r[0], r[1], ctx)
    if h.kind == K_BINARY_T1:
        return (<MXBinaryGradFunctionT1>h.fn)(&i[0], &i[1], env, &o[0], &o[1], r[0], r[1],
                                              ctx)
    if h.kind == K_BINARY_T2:
        return (<MXBinaryGradFunctionT2>h.fn)(&i[0], &i[1], &i[2], env, &o[0], &o[1], r[0],
                                              r[1], ctx)
    ctx.error = "unknown SimpleOp function kind"
    return -1


cdef int simple_call(MXOpCall* c) noexcept nogil:
    cdef const Header* h = <const Header*>c.params
    cdef const char* base = <const char*>c.params
    cdef const int32_t* offsets = <const int32_t*>(base + sizeof(Header))
    cdef const char* few[2 * FEW_KWARGS]
    cdef const char** strs = few
    cdef MXEnvArguments env
    cdef MXRunContext ctx
    cdef int k, rc
    if h.nkw > FEW_KWARGS:
        strs = <const char**>malloc(2 * h.nkw * sizeof(char*))
        if strs == NULL:
            c.error = "cannot allocate the keyword arguments"
            return -1
    for k in range(2 * h.nkw):
        strs[k] = base + offsets[k]
    env.scalar = h.scalar
    env.num_kwargs = h.nkw
    env.kwarg_keys = strs
    env.kwarg_values = strs + h.nkw
    env.workspace = c.workspace
    env.workspace_size = c.workspace_size
    env.has_random = h.has_random
    if h.has_random:
        env.random = mx_random_state(c.params, <size_t>h.own_size)
    else:
        env.random.seed = 0
        env.random.offset = 0
    ctx.dev_type = c.outputs[0].dev_type
    ctx.dev_id = c.outputs[0].dev_id
    ctx.stream = c.stream
    ctx.is_train = c.is_train
    ctx.reserved = 0
    ctx.error = NULL
    rc = _dispatch(h, c, &env, &ctx)
    if strs != few:
        free(strs)
    if rc != 0:
        c.error = ctx.error
        if c.error == NULL:
            c.error = "failed"
    return rc


def call_address():
    """The MXFCompute that runs a native SimpleOp function."""
    return <size_t><MXFCompute>simple_call


def pack(size_t fn, int kind, double scalar, kwargs=(), bint has_random=False):
    """The parameter block of one call of native function ``fn`` of
    ``kind``; ``kwargs`` is a sequence of (key, value) strings."""
    kwargs = [(str(k).encode(), str(v).encode()) for k, v in kwargs]
    n = len(kwargs)
    strings = [k for k, _ in kwargs] + [v for _, v in kwargs]
    at = _HEADER.size + 8 * n
    offsets, blob = [], b""
    for s in strings:
        offsets.append(at + len(blob))
        blob += s + b"\0"
    size = at + len(blob)
    return (_HEADER.pack(fn, kind, has_random, scalar, n, size)
            + struct.pack(f"={2 * n}i", *offsets) + blob)
