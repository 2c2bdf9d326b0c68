"""The CPU kernels of the optimizer update operators: the dense one
(optimizer_cpu.h) as an address, one kernel for every optimizer, the kind
in its parameters; and the row_sparse-gradient update (optimizer_rsp_cpu.h)
as a function over NumPy arrays that runs without the GIL."""
from libc.stdint cimport int32_t, int64_t

from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "optimizer_cpu.h" namespace "mxop" nogil:
    int optimizer_update(MXOpCall* c)
    ctypedef struct OptParam:
        double lr, wd, rescale_grad, clip_gradient, a, b, c
        int32_t kind, pad_

cdef extern from "optimizer_rsp_cpu.h" namespace "mxop" nogil:
    ctypedef struct RspUpdate:
        void* weight
        void* s0
        void* s1
        const void* grad
        const int64_t* idx
        int64_t rows, width, nnz
        int32_t dtype, lazy
    int optimizer_rsp_update(const OptParam* p, const RspUpdate* u)


def kernels():
    """{name: address} of each kernel."""
    return {"update": <size_t><MXFCompute>optimizer_update}


cdef inline void* _ptr(a):
    return NULL if a is None else <void*><size_t>a.__array_interface__["data"][0]


def rsp_update(int kind, values, int dtype, weight, grad_data, grad_indices, states,
               bint lazy):
    """Updates C-contiguous ``weight`` (rows, ...) and its ``states`` (0 to
    2 arrays like it) in place with the row_sparse gradient (``grad_data``
    (nnz, ...), ``grad_indices`` (nnz,) int64, sorted and unique: the
    caller checks).  ``values``: the seven OptParam numbers; ``dtype``:
    the arrays' dtype code."""
    cdef OptParam p
    p.lr, p.wd, p.rescale_grad, p.clip_gradient, p.a, p.b, p.c = values
    p.kind = kind
    p.pad_ = 0
    cdef RspUpdate u
    states = list(states) + [None] * (2 - len(states))
    u.weight = _ptr(weight)
    u.s0 = _ptr(states[0])
    u.s1 = _ptr(states[1])
    u.grad = _ptr(grad_data)
    u.idx = <const int64_t*>_ptr(grad_indices)
    u.rows = weight.shape[0] if weight.ndim else 1
    u.width = weight.size // u.rows if u.rows else 0
    u.nnz = grad_indices.shape[0]
    u.dtype = dtype
    u.lazy = lazy
    cdef int rc
    with nogil:
        rc = optimizer_rsp_update(&p, &u)
    if rc:
        raise TypeError(f"row_sparse optimizer update: kind {kind} with dtype code {dtype} "
                        f"has no kernel")
