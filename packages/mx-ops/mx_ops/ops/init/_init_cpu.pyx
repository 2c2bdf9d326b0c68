"""The CPU kernels of _full, _arange, _eye and Cast (init_cpu.h), as addresses."""
from mx_ops.core._types cimport MXFCompute, MXOpCall

cdef extern from "init_cpu.h" namespace "mxop" nogil:
    int init_full(MXOpCall* c)
    int init_cast(MXOpCall* c)
    int init_arange(MXOpCall* c)
    int init_eye(MXOpCall* c)


def kernels():
    """{'full': address, 'cast': address, 'arange': address, 'eye': address}."""
    return {"full": <size_t><MXFCompute>init_full, "cast": <size_t><MXFCompute>init_cast,
            "arange": <size_t><MXFCompute>init_arange, "eye": <size_t><MXFCompute>init_eye}
