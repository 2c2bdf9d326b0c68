"""GPU compute of diag and _backward_diag with the semantics of
diag_cpu.h: the DiagParam block mx_ops.ops.diag.diag packs for the CPU
kernel (nine int64, passed as the kernel's arguments), one thread per
diagonal entry (embed first zeroes the matrix unless req is 'add').
Importing this module without CuPy raises ImportError."""
import numpy

from mx_ops.core._cuda import CTYPES, launch, raw_module
from mx_ops.core._device_code import INT_ARITH

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>

#define MX_GRID_STRIDE(i, n)                                                       \
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n);    \
       i += (long long)blockDim.x * gridDim.x)

""" + INT_ARITH + r"""
// Diagonal entry i = (p, q, r, l) of (P, Q, R, L) and its matrix offset
// in (P, n_lo, Q, n_hi, R) (diag_at of diag_cpu.h).
template <typename T>
__global__ void mx_diag(const T *in, T *out, long long mode, long long P, long long Q,
                        long long R, long long n_lo, long long n_hi, long long L,
                        long long off_lo, long long off_hi, int add) {
  MX_GRID_STRIDE(i, P * Q * R * L) {
    const long long l = i % L, row = i / L;
    const long long r = row % R, q = row / R % Q, p = row / R / Q;
    const long long m = (((p * n_lo + off_lo + l) * Q + q) * n_hi + off_hi + l) * R + r;
    const long long src = mode == 0 ? m : i, dst = mode == 0 ? i : m;
    out[dst] = add ? mx_wrap_add(out[dst], in[src]) : in[src];
  }
}
"""
_NAMES = [f"mx_diag<{t}>" for t in CTYPES.values()]
_kernel = raw_module(_SOURCE, _NAMES)


def compile_cases():
    """The kernel source of this module, for the NVRTC check."""
    return [("raw", "mx_diag", _SOURCE, tuple(_NAMES))]


def diag(pack):
    """diag's (and _backward_diag's) compute; ``pack`` is the op's pack_params."""
    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        d = numpy.frombuffer(pack(params, [a.shape for a in inputs]), numpy.int64)
        mode, P, Q, R, _, _, L, _, _ = (int(v) for v in d)
        out, add = outputs[0], reqs[0] == "add"
        if mode == 1 and not add:
            out.fill(0)
        launch(_kernel(f"mx_diag<{CTYPES[out.dtype.name]}>"), P * Q * R * L,
               (inputs[0], out, *d, numpy.int32(add)))
    return run
