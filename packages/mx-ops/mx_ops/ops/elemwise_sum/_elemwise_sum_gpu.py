"""GPU compute of add_n: add_n_loop of elemwise_sum_cpu.h as one
RawKernel over all the inputs at once, which it finds through a device
array of their pointers (one small host-to-device copy per call, on the
current stream, so it is ordered before the launch).  One launch for any
number of inputs keeps the CPU's semantics: every input read once, the sum
left to right in the compute type (float for float16) and rounded once,
so float results equal the CPU's bit for bit.  Importing this module
without CuPy raises ImportError."""
import cupy
import numpy

from mx_ops.core._cuda import CTYPES, NN_HEAD, launch, raw_module

_SOURCE = NN_HEAD + r"""
// out[i] = ((in0[i] + in1[i]) + in2[i]) + ..., input k at ptrs[k]; the
// output may be input 0 (each thread reads its element before writing it).
template <typename T>
__global__ void mx_add_n(const unsigned long long *ptrs, int nin, T *out, long long n,
                         int add) {
  typedef typename Acc<T>::type A;
  MX_GRID_STRIDE(i, n) {
    A s = A(reinterpret_cast<const T *>(ptrs[0])[i]);
    for (int k = 1; k < nin; ++k) s = A(s + A(reinterpret_cast<const T *>(ptrs[k])[i]));
    nn_store(out, i, s, add);
  }
}
"""
_NAMES = [f"mx_add_n<{t}>" for t in CTYPES.values()]
_kernel = raw_module(_SOURCE, _NAMES)


def compile_cases():
    """The kernel source of this module, for the NVRTC check."""
    return [("raw", "mx_add_n", _SOURCE, tuple(_NAMES))]


def add_n(params, inputs, outputs, reqs):
    """add_n's compute: (arg0, ..., argN-1) -> output, on CuPy arrays of
    one shape and dtype (checked by mx_ops.ops.elemwise_sum.elemwise_sum)."""
    out = outputs[0]
    if reqs[0] == "null" or out.size == 0:
        return
    ptrs = cupy.asarray(numpy.array([a.data.ptr for a in inputs], numpy.uint64))
    launch(_kernel(f"mx_add_n<{CTYPES[out.dtype.name]}>"), out.size,
           (ptrs, numpy.int32(len(inputs)), out, numpy.int64(out.size),
            numpy.int32(reqs[0] == "add")))
