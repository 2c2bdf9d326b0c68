"""The elementwise CPU kernels (elemwise_cpu.h), as addresses of their
compute functions for the registry: unary, binary (same shapes or
broadcasting) and scalar (array op scalar, and scalar op array).  tanh and
sigmoid run src/vexp.h's per-instruction-set copies (``isa``, ``set_isa``)."""
from mx_ops.core._types cimport MXFCompute

cdef extern from "elemwise_cpu.h" namespace "mxop" nogil:
    cdef struct NamedKernel:
        const char* name
        MXFCompute fn
    const NamedKernel kUnaryKernels[]
    const NamedKernel kBinaryKernels[]
    const NamedKernel kScalarKernels[]
    const NamedKernel kRScalarKernels[]
    const NamedKernel kBackwardKernels[]
    const NamedKernel kFloatOnlyUnary[]


include "mx_ops/core/_isa.pxi"


cdef dict _table(const NamedKernel* table):
    out = {}
    cdef int i = 0
    while table[i].name != NULL:
        out[table[i].name.decode()] = <size_t>table[i].fn
        i += 1
    return out


def kernels():
    """{'unary' | 'binary' | 'scalar' | 'rscalar' | 'backward': {name: address}};
    'backward' holds the _backward_<op> kernels of unary ops (gamma,
    gammaln) that need a function of their own."""
    return {"unary": _table(kUnaryKernels), "binary": _table(kBinaryKernels),
            "scalar": _table(kScalarKernels), "rscalar": _table(kRScalarKernels),
            "backward": _table(kBackwardKernels)}


def float_only_unary():
    """Unary ops defined for floating-point dtypes only."""
    out = set()
    cdef int i = 0
    while kFloatOnlyUnary[i].name != NULL:
        out.add(kFloatOnlyUnary[i].name.decode())
        i += 1
    return out
