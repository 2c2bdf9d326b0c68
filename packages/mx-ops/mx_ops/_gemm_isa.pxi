# The GEMM core's instruction set (src/gemm_cpu.h), included by every
# extension module built on it: the choice is a static of each module.
cdef extern from "gemm_cpu.h" namespace "mxop" nogil:
    int c_gemm_isa "mxop::gemm_isa"()
    int c_gemm_isa_detected "mxop::gemm_isa_detected"()
    int c_gemm_set_isa "mxop::gemm_set_isa"(int isa)

ISAS = ("generic", "avx2", "avx512")


def gemm_isa():
    """The instruction set the kernels' GEMM runs: generic, avx2 or avx512."""
    return ISAS[c_gemm_isa()]


def available_isas():
    """The instruction sets this CPU runs, lowest first."""
    return ISAS[:c_gemm_isa_detected() + 1]


def set_gemm_isa(name):
    """Makes this module's GEMM run instruction set ``name`` (at most the
    detected one; for tests); returns the previous one."""
    old = c_gemm_set_isa(ISAS.index(name)) if name in ISAS else -1
    if old < 0:
        raise ValueError(f"instruction set {name!r} is not available here; available: "
                         f"{', '.join(available_isas())}")
    return ISAS[old]
