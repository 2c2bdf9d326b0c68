"""The CPU kernels of the fused updates beyond sgd/adam/rmsprop/ftrl
(fused_cpu.h: nag, signum, ftml, rmspropalex, lamb, the mp_ variants) and of
the aggregated ones (multi_cpu.h: multi_* and preloaded_multi_* SGD,
multi_sum_sq, multi_lars), as addresses of MXFCompute functions that run
without the GIL."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "fused_cpu.h" namespace "mxop" nogil:
    int nag_mom_update(MXOpCall* c)
    int mp_nag_mom_update(MXOpCall* c)
    int mp_sgd_update(MXOpCall* c)
    int mp_sgd_mom_update(MXOpCall* c)
    int signsgd_update(MXOpCall* c)
    int signum_update(MXOpCall* c)
    int ftml_update(MXOpCall* c)
    int rmspropalex_update(MXOpCall* c)
    int lamb_update_phase1(MXOpCall* c)
    int mp_lamb_update_phase1(MXOpCall* c)
    int lamb_update_phase2(MXOpCall* c)
    int mp_lamb_update_phase2(MXOpCall* c)

cdef extern from "multi_cpu.h" namespace "mxop" nogil:
    int multi_sgd_update(MXOpCall* c)
    int multi_sum_sq(MXOpCall* c)
    int multi_lars(MXOpCall* c)


def kernels():
    """{name: address} of each kernel (one multi-SGD kernel for all eight
    multi_ and preloaded_multi_ operators: the parameters say which)."""
    return {
        "nag_mom_update": <size_t><MXFCompute>nag_mom_update,
        "mp_nag_mom_update": <size_t><MXFCompute>mp_nag_mom_update,
        "mp_sgd_update": <size_t><MXFCompute>mp_sgd_update,
        "mp_sgd_mom_update": <size_t><MXFCompute>mp_sgd_mom_update,
        "signsgd_update": <size_t><MXFCompute>signsgd_update,
        "signum_update": <size_t><MXFCompute>signum_update,
        "ftml_update": <size_t><MXFCompute>ftml_update,
        "rmspropalex_update": <size_t><MXFCompute>rmspropalex_update,
        "lamb_update_phase1": <size_t><MXFCompute>lamb_update_phase1,
        "mp_lamb_update_phase1": <size_t><MXFCompute>mp_lamb_update_phase1,
        "lamb_update_phase2": <size_t><MXFCompute>lamb_update_phase2,
        "mp_lamb_update_phase2": <size_t><MXFCompute>mp_lamb_update_phase2,
        "multi_sgd": <size_t><MXFCompute>multi_sgd_update,
        "multi_sum_sq": <size_t><MXFCompute>multi_sum_sq,
        "multi_lars": <size_t><MXFCompute>multi_lars,
    }
