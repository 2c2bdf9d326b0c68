"""Native (Cython) operators of the OperatorProperty style: the base class
users derive from, and the trampolines through which the engine's workers
call their forward and backward without the GIL.

A call's packed parameters start with a Header naming the operator
instance (a borrowed reference: mx_ops.ext.operator keeps the instance alive
for as long as the operator is registered) and how the call's inputs split
into arguments, auxiliary states and, for a backward call, the out_grad /
in_data / out_data entries its property declared as dependencies."""
from cpython.ref cimport PyObject
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport calloc, free

import struct

from mx_ops.core._types cimport MXTBlob, MXOpCall, MXFCompute, mx_random_state, MX_MAX_DIM

_HEADER = struct.Struct("=Q6i")


cdef struct Header:
    PyObject* op
    int32_t nargs
    int32_t naux
    int32_t nout          # outputs of the forward
    int32_t ndeps         # backward: inputs before the aux states
    int32_t own_size      # bytes of the header and deps; the random state follows
    int32_t has_random
    # then int32_t deps[ndeps]: the slot of each dependency in
    # [out_grad (nout), in_data (nargs), out_data (nout)]


cdef class NativeOperator:
    """Base of native operators: override the cdef methods forward and
    backward (``noexcept nogil``) in a cdef class of your own.  See
    mx_ops/ext/_operator.pxd for their signatures and mx_ops.ops.norm._lrn_cpu for an
    operator written this way."""

    cdef int forward(self, MXOpContext* ctx, MXBlobs in_data, const int32_t* req,
                     MXBlobs out_data, MXBlobs aux_states) noexcept nogil:
        ctx.error = "the native operator does not implement forward"
        return -1

    cdef int backward(self, MXOpContext* ctx, MXBlobs out_grad, MXBlobs in_data,
                      MXBlobs out_data, const int32_t* req, MXBlobs in_grad,
                      MXBlobs aux_states) noexcept nogil:
        ctx.error = "the native operator does not implement backward"
        return -1


# The methods are reached from a raw pointer without the GIL: these take
# the instance as a borrowed argument (no reference counting), and are
# called through function pointer types that take it as PyObject*.
cdef int _forward(NativeOperator op, MXOpContext* ctx, MXBlobs in_data, const int32_t* req,
                  MXBlobs out_data, MXBlobs aux) noexcept nogil:
    return op.forward(ctx, in_data, req, out_data, aux)


cdef int _backward(NativeOperator op, MXOpContext* ctx, MXBlobs out_grad, MXBlobs in_data,
                   MXBlobs out_data, const int32_t* req, MXBlobs in_grad,
                   MXBlobs aux) noexcept nogil:
    return op.backward(ctx, out_grad, in_data, out_data, req, in_grad, aux)


ctypedef int (*forward_t)(PyObject*, MXOpContext*, MXBlobs, const int32_t*, MXBlobs,
                          MXBlobs) noexcept nogil
ctypedef int (*backward_t)(PyObject*, MXOpContext*, MXBlobs, MXBlobs, MXBlobs,
                           const int32_t*, MXBlobs, MXBlobs) noexcept nogil


cdef inline MXBlobs _blobs(int32_t n, const MXTBlob* data) noexcept nogil:
    cdef MXBlobs b
    b.size = n
    b.data = data
    return b


cdef void _context(MXOpContext* ctx, MXOpCall* c, const Header* h) noexcept nogil:
    ctx.is_train = c.is_train
    ctx.dev_type = c.outputs[0].dev_type if c.nout > 0 else 1
    ctx.dev_id = c.outputs[0].dev_id if c.nout > 0 else 0
    ctx.stream = c.stream
    ctx.workspace = c.workspace
    ctx.workspace_size = c.workspace_size
    ctx.has_random = h.has_random
    if h.has_random:
        ctx.random = mx_random_state(c.params, <size_t>h.own_size)
    else:
        ctx.random.seed = 0
        ctx.random.offset = 0
    ctx.error = NULL


cdef int native_forward(MXOpCall* c) noexcept nogil:
    cdef const Header* h = <const Header*>c.params
    cdef MXOpContext ctx
    cdef int rc
    _context(&ctx, c, h)
    rc = (<forward_t>_forward)(h.op, &ctx, _blobs(h.nargs, c.inputs), c.req,
                               _blobs(c.nout, c.outputs), _blobs(h.naux, c.inputs + h.nargs))
    if rc != 0:
        c.error = ctx.error
        if c.error == NULL:
            c.error = "forward failed"
    return rc


cdef int native_backward(MXOpCall* c) noexcept nogil:
    cdef const Header* h = <const Header*>c.params
    cdef const int32_t* deps = <const int32_t*>(<const char*>c.params + sizeof(Header))
    cdef int32_t nout = h.nout, nargs = h.nargs, k
    cdef MXOpContext ctx
    cdef int rc
    # Undeclared dependencies stay empty blobs (calloc: dptr NULL, ndim 0).
    cdef MXTBlob* slots = <MXTBlob*>calloc(2 * nout + nargs + 1, sizeof(MXTBlob))
    if slots == NULL:
        c.error = "cannot allocate the backward's tensor lists"
        return -1
    for k in range(h.ndeps):
        slots[deps[k]] = c.inputs[k]
    _context(&ctx, c, h)
    rc = (<backward_t>_backward)(h.op, &ctx, _blobs(nout, slots), _blobs(nargs, slots + nout),
                                 _blobs(nout, slots + nout + nargs), c.req,
                                 _blobs(c.nout, c.outputs),
                                 _blobs(h.naux, c.inputs + h.ndeps))
    free(slots)
    if rc != 0:
        c.error = ctx.error
        if c.error == NULL:
            c.error = "backward failed"
    return rc


def forward_address():
    """The MXFCompute that runs a native operator's forward."""
    return <size_t><MXFCompute>native_forward


def backward_address():
    """The MXFCompute that runs a native operator's backward."""
    return <size_t><MXFCompute>native_backward


def pack(NativeOperator op not None, int nargs, int naux, int nout, deps=(),
         bint has_random=False):
    """The parameter block of one call of ``op``: a borrowed pointer to it
    (the caller keeps ``op`` alive until the call has run), the split of
    the inputs, and for a backward call the slot of each dependency."""
    deps = [int(d) for d in deps]
    for d in deps:
        if not 0 <= d < 2 * nout + nargs:
            raise ValueError(f"pack: dependency slot {d} is out of range")
    size = _HEADER.size + 4 * len(deps)
    return (_HEADER.pack(<size_t><PyObject*>op, nargs, naux, nout, len(deps), size,
                         has_random) + struct.pack(f"={len(deps)}i", *deps))
