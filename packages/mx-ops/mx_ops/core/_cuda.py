"""What the GPU twins share: the C names of our dtypes, RawModules compiled
once per source (CuPy caches the binary per device and on disk) and a
grid-stride launch.  Each _*_gpu module also offers ``compile_cases()``:
its kernel sources, which tests/test_gpu_sources.py compiles with NVRTC
on machines without a GPU.  Importing this module without CuPy raises
ImportError."""
import functools

import cupy

# The C type CuPy's headers (cupy/carray.cuh) use for each dtype name; the
# raw kernels are templates instantiated with these.
CTYPES = {"float32": "float", "float64": "double", "float16": "float16",
          "uint8": "unsigned char", "int8": "signed char", "int32": "int",
          "int64": "long long"}

_BLOCK = 256
# Enough blocks to fill any current GPU; the grid-stride loop covers the rest.
_MAX_BLOCKS = 65535


def raw_module(source, names):
    """A function name -> kernel of a templated RawModule, compiled on first
    use with every instantiation in ``names`` (one NVRTC run for all)."""
    @functools.cache
    def module():
        return cupy.RawModule(code=source, name_expressions=tuple(names))

    return lambda name: module().get_function(name)


def launch(kernel, n, args):
    """Runs a grid-stride kernel over ``n`` items on the current stream."""
    if n == 0:
        return
    blocks = min((n + _BLOCK - 1) // _BLOCK, _MAX_BLOCKS)
    kernel((blocks,), (_BLOCK,), args)


# The dtypes of the neural-network operators (src/nn_common.h's MX_FLOAT_SWITCH).
FLOAT_CTYPES = {k: CTYPES[k] for k in ("float32", "float64", "float16")}

# What the neural-network kernels share, as src/nn_common.h does on the CPU:
# the compute type (float16 computes in float), the OpReqType store, a
# grid-stride loop and a block-wide reduction.
NN_HEAD = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>

#define MX_GRID_STRIDE(i, n)                                                       \
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n);    \
       i += (long long)blockDim.x * gridDim.x)

template <typename T> struct Acc { typedef T type; };
template <> struct Acc<float16> { typedef float type; };

// nn_store of src/nn_common.h: out[i] = v, or out[i] += v (in A) for req 'add'.
template <typename T, typename A>
__device__ inline void nn_store(T *out, long long i, A v, int add) {
  out[i] = add ? T(A(out[i]) + v) : T(v);
}

template <typename A> __device__ inline A mx_inf();
template <> __device__ inline float mx_inf<float>() { return __int_as_float(0x7f800000); }
template <> __device__ inline double mx_inf<double>() {
  return __longlong_as_double(0x7ff0000000000000LL);
}
template <typename A> __device__ inline A mx_nan();
template <> __device__ inline float mx_nan<float>() { return __int_as_float(0x7fc00000); }
template <> __device__ inline double mx_nan<double>() {
  return __longlong_as_double(0x7ff8000000000000LL);
}
// std::numeric_limits<A>::lowest(), which NVRTC does not offer.
template <typename A> __device__ inline A mx_lowest();
template <> __device__ inline float mx_lowest<float>() { return -3.402823466e+38f; }
template <> __device__ inline double mx_lowest<double>() { return -1.7976931348623157e+308; }

struct MaxOp { template <typename A> __device__ A operator()(A a, A b) const {
  return b > a ? b : a; } };
struct SumOp { template <typename A> __device__ A operator()(A a, A b) const {
  return a + b; } };

// Every thread of the block gets op over the block's `v`s, combined in a
// fixed tree order (so results repeat run to run).  blockDim.x must be a
// multiple of 32, at most 1024; every thread of the block must call it.
template <typename A, typename Op>
__device__ A block_reduce(A v, Op op, A identity) {
  __shared__ A part[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
  __syncthreads();               // the last call's readers of part[0] are done
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < int(blockDim.x >> 5) ? part[lane] : identity;
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
    if (lane == 0) part[0] = v;
  }
  __syncthreads();
  return part[0];
}
"""


def block_threads(n, most=512):
    """Threads for a block that reduces ``n`` items: a power of two from 32
    (one warp) up to ``most``."""
    threads = 32
    while threads < n and threads < most:
        threads *= 2
    return threads


def launch_blocks(kernel, blocks, threads, args):
    """Runs a kernel whose blocks stride over ``blocks`` work items (rows)."""
    if blocks == 0:
        return
    kernel((min(blocks, _MAX_ROW_BLOCKS),), (threads,), args)


# Blocks of a block-per-row launch; the kernels loop over the rows beyond.
_MAX_ROW_BLOCKS = 1 << 20


def scatter_add(out, where, values):
    """``out[where] += values`` with repeated positions accumulating
    (cupy.add.at), for every dtype of ours: cupy.add.at takes int32, uint64
    and the floats, so int64 adds as uint64 (the same bits in two's
    complement) and int8/uint8 through an int32 copy, cast back (wrapping
    as the CPU kernels' wrap_add does)."""
    name = out.dtype.name
    if name == "int64":
        cupy.add.at(out.view(cupy.uint64), where, values.astype(cupy.int64).view(cupy.uint64))
    elif name in ("int8", "uint8"):
        acc = out.astype(cupy.int32)
        cupy.add.at(acc, where, values.astype(cupy.int32))
        out[...] = acc.astype(out.dtype)
    else:
        cupy.add.at(out, where, values.astype(out.dtype, copy=False))
