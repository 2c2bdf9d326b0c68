# The vector instruction set of the kernels (src/isa.h), included by every
# extension module with per-instruction-set code: the choice is a static of
# each module.
cdef extern from "isa.h" namespace "mxop" nogil:
    int c_cpu_isa "mxop::cpu_isa"()
    int c_cpu_isa_detected "mxop::cpu_isa_detected"()
    int c_cpu_set_isa "mxop::cpu_set_isa"(int isa)

ISAS = ("generic", "avx2", "avx512")


def isa():
    """The instruction set this module's kernels run: generic, avx2 or avx512."""
    return ISAS[c_cpu_isa()]


def available_isas():
    """The instruction sets this CPU runs, lowest first."""
    return ISAS[:c_cpu_isa_detected() + 1]


def set_isa(name):
    """Makes this module's kernels run instruction set ``name`` (at most the
    detected one; for tests); returns the previous one."""
    old = c_cpu_set_isa(ISAS.index(name)) if name in ISAS else -1
    if old < 0:
        raise ValueError(f"instruction set {name!r} is not available here; available: "
                         f"{', '.join(available_isas())}")
    return ISAS[old]
