"""The CPU kernels of RNN and _backward_RNN (rnn_cpu.h), as addresses, and
the sizes the registration needs from the same layout code: the parameter
vector's length, the hidden reserve output's and the workspace's."""
from libc.stdint cimport int32_t, int64_t, uint64_t

from mx_ops.core._types cimport MXFCompute, MXOpCall
from mx_storage._philox cimport fill_uniform_f32

cdef extern from "rnn_cpu.h" namespace "mxop" nogil:
    ctypedef void (*UniformFill)(uint64_t, uint64_t, uint64_t, float*, size_t, float,
                                 float) noexcept nogil
    ctypedef struct RNNParam:
        int32_t mode, L, D, G
        int64_t T, N, I, H, P
        int32_t proj, state_outputs, use_seq_len, clip
        int32_t clip_nan, pad_
        float pdrop, pad2_
        double clip_min, clip_max
    cdef cppclass RnnLayout:
        RnnLayout(const RNNParam& p)
        int64_t param_size()
        int64_t reserve_size()
    int rnn_forward(MXOpCall* c, UniformFill fill)
    int rnn_backward(MXOpCall* c)
    int64_t rnn_workspace_bytes(const RNNParam& p, bint backward, int threads)
    int c_max_threads "mxop::max_threads"()

include "mx_ops/core/_isa.pxi"


cdef int _forward(MXOpCall* c) noexcept nogil:
    return rnn_forward(c, <UniformFill>fill_uniform_f32)


def kernels():
    """{'forward': address, 'backward': address}."""
    return {"forward": <size_t><MXFCompute>_forward,
            "backward": <size_t><MXFCompute>rnn_backward}


def sizes(bytes packed, threads=None):
    """(parameter vector length, reserve length, forward workspace bytes,
    backward workspace bytes) for a packed RNNParam block."""
    cdef RNNParam p
    if len(packed) != sizeof(RNNParam):
        raise ValueError(f"RNNParam block of {len(packed)} bytes, expected {sizeof(RNNParam)}")
    p = (<const RNNParam*><const char*>packed)[0]
    cdef RnnLayout* lo = new RnnLayout(p)
    cdef int nt = c_max_threads() if threads is None else threads
    try:
        return (lo.param_size(), lo.reserve_size(), rnn_workspace_bytes(p, False, nt),
                rnn_workspace_bytes(p, True, nt))
    finally:
        del lo
