"""GPU compute of the layout family: the table gather of layout_cpu.h as
one RawKernel (each thread sums one table entry per axis of its output
item) and the scatter-add as the same index computation followed by
cupyx's scatter_add (atomic adds).  Both read the very block
mx_ops.ops.layout.tables packs for the CPU kernel.  Importing this module
without CuPy raises ImportError."""
import cupy
import cupyx
import numpy

from mx_ops.core._cuda import CTYPES, launch, raw_module
from mx_ops.core._device_code import INT_ARITH
from mx_ops.ops.layout.tables import unpack

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>
""" + INT_ARITH + r"""

struct Dims { long long d[16]; };
#define MX_FILL (-9223372036854775807LL - 1)

// The source offset of output item i: base + sum over axes of the table
// entry of its index there, or MX_FILL.
__device__ long long mx_source(long long i, int nd, const Dims &shape,
                               const long long *tables, long long base) {
  long long off = base, start = 0;
  for (int d = 0; d < nd; ++d) start += shape.d[d];
  for (int d = nd - 1; d >= 0; --d) {
    start -= shape.d[d];
    const long long k = i % shape.d[d];
    i /= shape.d[d];
    const long long t = tables[start + k];
    if (t == MX_FILL) return MX_FILL;
    off += t;
  }
  return off;
}

template <typename T>
__global__ void mx_table_gather(const T *src, T *dst, long long n, int nd, Dims shape,
                                const long long *tables, long long base, double value,
                                int add) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    const long long off = mx_source(i, nd, shape, tables, base);
    const T v = off == MX_FILL ? mx_convert<T>(value) : src[off];
    dst[i] = add ? mx_wrap_add(dst[i], v) : v;
  }
}

__global__ void mx_table_index(long long *dst, long long n, int nd, Dims shape,
                               const long long *tables, long long base) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x)
    dst[i] = mx_source(i, nd, shape, tables, base);
}
"""
_NAMES = [f"mx_table_gather<{t}>" for t in CTYPES.values()] + ["mx_table_index"]
_kernel = raw_module(_SOURCE, _NAMES)
_DIMS_T = numpy.dtype([("d", "<i8", (16,))])


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    f64, i64, i32 = numpy.dtype("float64"), numpy.dtype("int64"), numpy.dtype("int32")
    return [("raw", "mx_table_gather", _SOURCE, tuple(_NAMES))] + [
        ("elementwise", "mx_arange_like", _ARANGE_LIKE, (f64, f64, i64, i32), (numpy.dtype(t),))
        for t in CTYPES]


def _block(pack, params, inputs):
    shape, tables, base, value = unpack(pack(params, [x.shape for x in inputs]))
    dims = numpy.zeros((), _DIMS_T)
    dims["d"][:len(shape)] = shape
    return len(shape), dims, cupy.asarray(tables), numpy.int64(base), value


def gather(pack):
    """The forward's compute; ``pack`` is the op's pack_params."""
    def run(params, inputs, outputs, reqs):
        out = outputs[0]
        if reqs[0] == "null" or out.size == 0:
            return
        nd, dims, tables, base, value = _block(pack, params, inputs)
        fn = _kernel(f"mx_table_gather<{CTYPES[out.dtype.name]}>")
        launch(fn, out.size, (inputs[0], out, numpy.int64(out.size), numpy.int32(nd), dims,
                              tables, base, numpy.float64(value), numpy.int32(reqs[0] == "add")))
    return run


def scatter(pack):
    """The gradient's compute (inputs: the output gradient, then the forward's)."""
    def run(params, inputs, outputs, reqs):
        g, out = inputs[0], outputs[0]
        if reqs[0] == "null":
            return
        if reqs[0] != "add":
            out.fill(0)
        if g.size == 0:
            return
        nd, dims, tables, base, _ = _block(pack, params, inputs)
        index = cupy.empty(g.size, cupy.int64)
        launch(_kernel("mx_table_index"), g.size, (index, numpy.int64(g.size), numpy.int32(nd),
                                                   dims, tables, base))
        keep = index != numpy.iinfo(numpy.int64).min
        cupyx.scatter_add(out.reshape(-1), index[keep], g.reshape(-1)[keep])
    return run


_ARANGE_LIKE = cupy.ElementwiseKernel(
    "float64 start, float64 step, int64 repeat, int32 add", "T out",
    "const T a = mx_convert<T>(start), b = mx_convert<T>(step); "
    "const T v = T(a + T(i / repeat) * b); out = add ? mx_wrap_add(out, v) : v;",
    "mx_arange_like", preamble=INT_ARITH)


def arange_like(params, inputs, outputs, reqs):
    """_contrib_arange_like's compute (arange_like_cpu.h)."""
    if reqs[0] != "null":
        _ARANGE_LIKE(params["start"], params["step"], params["repeat"],
                     numpy.int32(reqs[0] == "add"), outputs[0])
