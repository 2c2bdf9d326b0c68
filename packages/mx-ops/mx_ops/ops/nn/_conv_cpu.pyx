"""The CPU kernels of Convolution, Deconvolution and their backward ops
(conv_ops_cpu.h), as addresses, and the size of the workspace
(TEMP_SPACE) a call of each needs."""
from libc.stdint cimport int64_t

from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "conv_ops_cpu.h" namespace "mxop" nogil:
    ctypedef struct ConvParam:
        pass
    int convolution_forward(MXOpCall* c)
    int convolution_backward(MXOpCall* c)
    int deconvolution_forward(MXOpCall* c)
    int deconvolution_backward(MXOpCall* c)
    int64_t conv_workspace_bytes(int op, const ConvParam& p, const int64_t* img,
                                 const int64_t* out, int ndim, int threads)
    ctypedef struct ConvPlan:
        int nt
        int64_t items, chunk, cb, wcols, shared
        bint split_k, f_major, direct, dot
    ConvPlan conv_pass_plan(int pass_, const ConvParam& p, const int64_t* img,
                            const int64_t* out, int ndim, int threads, int dtype)
    int c_max_threads "mxop::max_threads"()
    int c_set_max_threads "mxop::set_max_threads"(int n)

include "mx_ops/core/_isa.pxi"

# conv_ops_cpu.h's ConvOp numbering.
OPS = {"Convolution": 0, "_backward_Convolution": 1, "Deconvolution": 2,
       "_backward_Deconvolution": 3}


def kernels():
    """{operator name: address of its MXFCompute}."""
    return {"Convolution": <size_t><MXFCompute>convolution_forward,
            "_backward_Convolution": <size_t><MXFCompute>convolution_backward,
            "Deconvolution": <size_t><MXFCompute>deconvolution_forward,
            "_backward_Deconvolution": <size_t><MXFCompute>deconvolution_backward}


def max_threads():
    """The most threads a kernel called from this thread may use (the
    thread pool's max-threads, mx_ops.core._pool)."""
    return c_max_threads()


def set_max_threads(n):
    """Sets the calling thread's max-threads in the thread pool (the
    threads kernels invoked from it may use; for tests); returns the
    previous value."""
    if n < 1:
        raise ValueError(f"max threads must be at least 1, got {n}")
    return c_set_max_threads(n)


cdef int _shapes(image_shape, output_shape, int64_t* img, int64_t* out) except -1:
    cdef int i, nd = len(image_shape)
    if nd not in (3, 4, 5) or len(output_shape) != nd:
        raise ValueError(f"two 3-d, 4-d or 5-d shapes are needed, got {tuple(image_shape)} and "
                         f"{tuple(output_shape)}")
    for i in range(nd):
        img[i] = image_shape[i]
        out[i] = output_shape[i]
    return nd


def plan(pass_name, bytes packed, image_shape, output_shape, threads, dtype="float32"):
    """How one pass ('fwd', 'dgrad' or 'wgrad') splits its work (for tests):
    {threads, items, chunk, cb, wcols, split_k, f_major, direct, dot, shared}."""
    cdef int64_t img[5]
    cdef int64_t out[5]
    cdef int nd = _shapes(image_shape, output_shape, img, out)
    cdef ConvPlan pl = conv_pass_plan(("fwd", "dgrad", "wgrad").index(pass_name),
                                      (<const ConvParam*><const char*>packed)[0], img, out, nd,
                                      threads, {"float32": 0, "float64": 1, "float16": 2}[dtype])
    return dict(threads=pl.nt, items=pl.items, chunk=pl.chunk, cb=pl.cb, wcols=pl.wcols,
                split_k=bool(pl.split_k), f_major=bool(pl.f_major), direct=bool(pl.direct),
                dot=bool(pl.dot), shared=pl.shared)


def workspace_bytes(op, bytes packed, image_shape, output_shape, threads=None):
    """Bytes of workspace one call of operator ``op`` needs with ``threads``
    threads (default: max_threads()), for any float dtype.  ``image_shape``
    and ``output_shape`` are the convolution geometry's two sides: data and
    output of Convolution, output and data of Deconvolution."""
    cdef int64_t img[5]
    cdef int64_t out[5]
    cdef int nd = _shapes(image_shape, output_shape, img, out)
    return conv_workspace_bytes(OPS[op], (<const ConvParam*><const char*>packed)[0], img, out,
                                nd, c_max_threads() if threads is None else threads)
