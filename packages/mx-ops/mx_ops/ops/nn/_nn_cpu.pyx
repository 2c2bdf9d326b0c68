"""The CPU kernels of Activation, LeakyReLU, softmax / log_softmax and
Pooling, forward and backward (activation_cpu.h, leaky_relu_cpu.h,
softmax_cpu.h, pool_cpu.h), as addresses.  LeakyReLU's forward
draws rrelu's training slopes from mx_storage's Philox stream
(fill_uniform_f32), handed to the C++ code as a function pointer.  Also the
vectorized exp, tanh and sigmoid of src/vexp.h and its sum-only exp for
tests (``exp``, ``tanh``, ``sigmoid``, ``sum_exp``) and the instruction set
their copies run (``isa``, ``set_isa``)."""
from libc.stdint cimport int64_t, uint64_t

import numpy as np

from mx_ops.core._types cimport MXFCompute, MXOpCall
from mx_storage._philox cimport fill_uniform_f32

cdef extern from "activation_cpu.h" namespace "mxop" nogil:
    int activation_forward(MXOpCall* c)
    int activation_backward(MXOpCall* c)

cdef extern from "leaky_relu_cpu.h" namespace "mxop" nogil:
    ctypedef void (*UniformFill)(uint64_t, uint64_t, uint64_t, float*, size_t, float,
                                 float) noexcept nogil
    int leaky_forward(MXOpCall* c, UniformFill fill)
    int leaky_backward(MXOpCall* c)

cdef extern from "softmax_cpu.h" namespace "mxop" nogil:
    int softmax_forward(MXOpCall* c)
    int softmax_backward(MXOpCall* c)

cdef extern from "vexp.h" namespace "mxop" nogil:
    void vexp[A](const A* x, A* y, int64_t n)
    void vtanh[A](const A* x, A* y, int64_t n)
    void vsigmoid[A](const A* x, A* y, int64_t n)
    ctypedef unsigned short half_t "::mxop::half_t"
    float vsum_exp_below_h "mxop::vsum_exp_below<::mxop::half_t, float>"(
        const half_t* x, int64_t n, float shift, float scale)
    A vsum_exp_below[T, A](const T* x, int64_t n, A shift, A scale)

cdef extern from "pool_cpu.h" namespace "mxop" nogil:
    int pool_forward(MXOpCall* c)
    int pool_backward(MXOpCall* c)


cdef int _leaky(MXOpCall* c) noexcept nogil:
    return leaky_forward(c, <UniformFill>fill_uniform_f32)


include "mx_ops/core/_isa.pxi"


def kernels():
    """{name: address} of each kernel."""
    return {"activation": <size_t><MXFCompute>activation_forward,
            "activation_backward": <size_t><MXFCompute>activation_backward,
            "leaky": <size_t><MXFCompute>_leaky,
            "leaky_backward": <size_t><MXFCompute>leaky_backward,
            "softmax": <size_t><MXFCompute>softmax_forward,
            "softmax_backward": <size_t><MXFCompute>softmax_backward,
            "pool": <size_t><MXFCompute>pool_forward,
            "pool_backward": <size_t><MXFCompute>pool_backward}


ctypedef void (*VecF)(const float*, float*, int64_t) noexcept nogil
ctypedef void (*VecD)(const double*, double*, int64_t) noexcept nogil


cdef _vector(str name, x, VecF ff, VecD fd):
    a = np.ascontiguousarray(x)
    out = np.empty_like(a)
    cdef float[::1] af, of
    cdef double[::1] ad, od
    cdef int64_t n = a.size
    if n == 0:
        return out
    if a.dtype == np.float32:
        af, of = a.reshape(-1), out.reshape(-1)
        with nogil:
            ff(&af[0], &of[0], n)
    elif a.dtype == np.float64:
        ad, od = a.reshape(-1), out.reshape(-1)
        with nogil:
            fd(&ad[0], &od[0], n)
    else:
        raise TypeError(f"{name}: float32 or float64 arrays only, got {a.dtype}")
    return out


def exp(x):
    """exp of a float32 or float64 array by the kernels' vectorized exp
    (src/vexp.h), into a new array: for tests against NumPy."""
    return _vector("exp", x, vexp[float], vexp[double])


def tanh(x):
    """tanh of a float32 or float64 array by src/vexp.h's vtanh (for tests)."""
    return _vector("tanh", x, vtanh[float], vtanh[double])


def sigmoid(x):
    """1 / (1 + exp(-x)) of a float32 or float64 array by src/vexp.h's
    vsigmoid (for tests)."""
    return _vector("sigmoid", x, vsigmoid[float], vsigmoid[double])


def sum_exp(x, shift, double scale):
    """Each row's sum of exp((x - shift) * scale) by src/vexp.h's sum-only
    exp, for tests: x a 2-D float16, float32 or float64 array, shift one
    value per row (the row's maximum for scale > 0, its minimum for
    scale < 0).  Returns the sums in the compute type (float32 for
    float16)."""
    a = np.ascontiguousarray(x)
    if a.ndim != 2:
        raise ValueError(f"sum_exp: a 2-D array, got shape {a.shape}")
    if a.dtype not in (np.float16, np.float32, np.float64):
        raise TypeError(f"sum_exp: float16, float32 or float64 arrays only, got {a.dtype}")
    acc = np.float64 if a.dtype == np.float64 else np.float32
    sh = np.ascontiguousarray(np.broadcast_to(np.asarray(shift, acc), (a.shape[0],)))
    out = np.zeros(a.shape[0], acc)
    cdef int64_t rows = a.shape[0], n = a.shape[1], r
    if rows == 0 or n == 0:
        return out
    cdef const unsigned short[:, ::1] ah
    cdef const float[:, ::1] af
    cdef const double[:, ::1] ad
    cdef const float[::1] sf
    cdef const double[::1] sd
    cdef float[::1] of
    cdef double[::1] od
    if a.dtype == np.float64:
        ad, sd, od = a, sh, out
        with nogil:
            for r in range(rows):
                od[r] = vsum_exp_below[double, double](&ad[r, 0], n, sd[r], scale)
    elif a.dtype == np.float32:
        af, sf, of = a, sh, out
        with nogil:
            for r in range(rows):
                of[r] = vsum_exp_below[float, float](&af[r, 0], n, sf[r], <float>scale)
    else:
        ah, sf, of = a.view(np.uint16), sh, out
        with nogil:
            for r in range(rows):
                of[r] = vsum_exp_below_h(<const half_t*>&ah[r, 0], n, sf[r], <float>scale)
    return out
