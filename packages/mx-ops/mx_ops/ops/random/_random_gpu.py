"""GPU compute of the random samplers and _shuffle.

The distribution samplers (every _random_<dist> but randint, the _like and
_sample_ forms, _sample_multinomial and its gradient) are samplers.h, the
CPU kernels' own code, compiled into RawKernels: a GPU call draws the CPU's
values from the same (seed, offset).

_random_randint and _shuffle use cuRAND's Philox4x32-10 through CuPy, seeded
per call from the (seed, offset) the invoker reserved
(params["_random_state"]), so a GPU call is as reproducible and as
independent of other calls as a CPU one.  The values differ from the CPU
stream (cuRAND orders its counters its own way).  Importing this module
without CuPy raises ImportError, and the GPU computes are then not
registered."""
import pathlib

import cupy
import numpy

from mx_ops.core._cuda import CTYPES, launch, raw_module

_MASK64 = (1 << 64) - 1
_FLOATS = ("float16", "float32", "float64")
_INDEX_TYPES = _FLOATS + ("int32", "uint8")      # _sample_multinomial's outputs

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>
""" + (pathlib.Path(__file__).parent / "samplers.h").read_text() + r"""
#define MX_GRID_STRIDE(i, n)                                                       \
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n);    \
       i += (long long)blockDim.x * gridDim.x)

// random_cpu.h's loops.  The direct layout: one thread per block of E
// elements (E = 4 computing in float, 2 in double), with the parameters of
// element i / per where has_a/has_b, else the scalars sa, sb.
template <typename A, typename T, typename C>
__global__ void mx_direct_dist(const A *a, const A *b, T *out, long long n, long long per,
                               unsigned long long seed, unsigned long long offset, int dist,
                               int has_a, int has_b, double sa, double sb) {
  const int E = sizeof(C) == 4 ? 4 : 2;
  MX_GRID_STRIDE(blk, (n + E - 1) / E) {
    C z[4];
    mx_direct_block(dist, seed, offset + (unsigned long long)blk, z);
    for (int e = 0; e < E && blk * E + e < n; ++e) {
      const long long i = blk * E + e, j = i / per;
      const double pa = has_a ? mx_rng_double(a[j]) : sa;
      const double pb = has_b ? mx_rng_double(b[j]) : sb;
      out[i] = T(mx_direct_value(dist, pa, pb, z[e]));
    }
  }
}

// The per-element layout: one thread per output element.
template <typename T>
__global__ void mx_random_dist(T *out, long long n, unsigned long long seed,
                               unsigned long long offset, int dist, double a, double b) {
  MX_GRID_STRIDE(i, n) {
    MXRng r = mx_rng(seed, offset + (unsigned long long)i);
    out[i] = T(mx_sample(dist, a, b, &r));
  }
}

template <typename A, typename T>
__global__ void mx_sample_dist(const A *a, const A *b, T *out, long long n, long long per,
                               unsigned long long seed, unsigned long long offset, int dist,
                               int has_b) {
  MX_GRID_STRIDE(i, n) {
    const long long j = i / per;
    MXRng r = mx_rng(seed, offset + (unsigned long long)i);
    out[i] = T(mx_sample(dist, mx_rng_double(a[j]), has_b ? mx_rng_double(b[j]) : 0.0, &r));
  }
}

template <typename P, typename T>
__global__ void mx_sample_multinomial(const P *data, T *out, P *logp, long long n,
                                      long long per, long long k, unsigned long long seed,
                                      unsigned long long offset, int prob) {
  MX_GRID_STRIDE(blk, (n + 1) / 2) {      // the float64 direct layout's uniforms
    double u[2];
    mx_direct_block(MX_DIST_UNIFORM, seed, offset + (unsigned long long)blk, u);
    for (int e = 0; e < 2 && blk * 2 + e < n; ++e) {
      const long long i = blk * 2 + e;
      const P *row = data + (i / per) * k;
      const long long j = mx_multinomial(row, k, u[e]);
      out[i] = T((double)j);
      if (prob) logp[i] = P(log(mx_rng_double(row[j])));
    }
  }
}

// One thread per row (rows own their gradient entries: no atomics).
template <typename P, typename T>
__global__ void mx_multinomial_grad(const P *og, const P *data, const T *smp, P *gd,
                                    long long rows, long long k, long long per, int add) {
  MX_GRID_STRIDE(row, rows) {
    P *g = gd + row * k;
    if (!add)
      for (long long j = 0; j < k; ++j) g[j] = P(0.0);
    for (long long m = row * per; m < (row + 1) * per; ++m) {
      const long long j = (long long)mx_rng_double(smp[m]);
      g[j] = P(mx_rng_double(g[j]) + mx_rng_double(og[m]) / mx_rng_double(data[row * k + j]));
    }
  }
}
"""
_COMPUTE = {"float16": "float", "float32": "float", "float64": "double"}
_NAMES = ([f"mx_random_dist<{CTYPES[t]}>" for t in _FLOATS]
          + [f"mx_direct_dist<{CTYPES[a]}, {CTYPES[t]}, {_COMPUTE[t]}>" for a in _FLOATS
             for t in _FLOATS]
          + [f"mx_sample_dist<{CTYPES[a]}, {CTYPES[t]}>" for a in _FLOATS for t in _FLOATS]
          + [f"mx_{k}<{CTYPES[p]}, {CTYPES[t]}>" for k in ("sample_multinomial",
                                                        "multinomial_grad")
             for p in _FLOATS for t in _INDEX_TYPES])
_kernel = raw_module(_SOURCE, _NAMES)


def compile_cases():
    """The distribution samplers' source, for the NVRTC check (the other
    draws are cuRAND's and CuPy's own, tested by CuPy)."""
    return [("raw", "mx_random_samplers", _SOURCE, tuple(_NAMES))]


def _state(params):
    """A cuRAND Philox RandomState for this call: splitmix64 of (seed,
    offset), because cuRAND takes one 64-bit seed."""
    seed, offset = params["_random_state"]
    z = (seed ^ (offset * 0x9E3779B97F4A7C15)) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return cupy.random.RandomState(z ^ (z >> 31),
                                   method=cupy.cuda.curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)




def _seed(params):
    seed, offset = params["_random_state"]
    return numpy.uint64(seed), numpy.uint64(offset)


def _ct(a):
    return CTYPES[a.dtype.name]


_DIRECT = (0, 1, 2)       # samplers.h's mx_direct_dist: uniform, normal, exponential


def _direct(dist, out, a, b, per, sa, sb, params):
    """samplers.h's direct layout: one thread per block of 4 (float) or 2
    (double) elements; the parameters a, b (arrays, or None for the scalars
    sa, sb)."""
    compute = _COMPUTE[out.dtype.name]
    pa = out if a is None else a
    pb = pa if b is None else b
    launch(_kernel(f"mx_direct_dist<{_ct(pa)}, {_ct(out)}, {compute}>"),
           (out.size + 3) // 4 if compute == "float" else (out.size + 1) // 2,
           (pa, pb, out, numpy.int64(out.size), numpy.int64(per), *_seed(params),
            numpy.int32(dist), numpy.int32(a is not None), numpy.int32(b is not None),
            numpy.float64(sa), numpy.float64(sb)))


def _dist(dist, names, params, inputs, outputs, reqs):
    out = outputs[0]
    a, b = ([params[n] for n in names] + [0.0])[:2]
    if dist in _DIRECT:
        return _direct(dist, out, None, None, 1, a, b, params)
    launch(_kernel(f"mx_random_dist<{_ct(out)}>"), out.size,
           (out, numpy.int64(out.size), *_seed(params), numpy.int32(dist), numpy.float64(a),
            numpy.float64(b)))


def _sample(dist, names, params, inputs, outputs, reqs):
    out = outputs[0]
    per = max(out.size // max(inputs[0].size, 1), 1)
    if dist in _DIRECT:
        return _direct(dist, out, inputs[0], inputs[1] if len(inputs) > 1 else None, per,
                       0.0, 0.0, params)
    launch(_kernel(f"mx_sample_dist<{_ct(inputs[0])}, {_ct(out)}>"), out.size,
           (inputs[0], inputs[-1], out, numpy.int64(out.size), numpy.int64(per),
            *_seed(params), numpy.int32(dist), numpy.int32(len(inputs) > 1)))


def _multinomial(dist, names, params, inputs, outputs, reqs):
    data, out = inputs[0], outputs[0]
    prob = len(outputs) > 1 and reqs[1] != "null"
    if prob and reqs[1] == "add":
        raise ValueError("_sample_multinomial: req 'add' is not supported by random samplers")
    k = data.shape[-1]
    per = max(out.size * k // max(data.size, 1), 1)
    launch(_kernel(f"mx_sample_multinomial<{_ct(data)}, {_ct(out)}>"), out.size,
           (data, out, outputs[1] if prob else out, numpy.int64(out.size), numpy.int64(per),
            numpy.int64(k), *_seed(params), numpy.int32(prob)))


def _multinomial_grad(params, inputs, outputs, reqs):
    og, data, smp = inputs
    if reqs[0] == "null":
        return
    k = data.shape[-1]
    rows = data.size // k if k else 0
    launch(_kernel(f"mx_multinomial_grad<{_ct(data)}, {_ct(smp)}>"), rows,
           (og, data, smp, outputs[0], numpy.int64(rows), numpy.int64(k),
            numpy.int64(og.size // max(rows, 1)), numpy.int32(reqs[0] == "add")))


_SAMPLERS = {"dist": _dist, "sample": _sample, "multinomial": _multinomial}


def compute(name, dist=None, names=()):
    """``fn(params, inputs, outputs, reqs)`` over CuPy arrays, on the current
    stream.  For the samplers.h kernels ('dist', 'sample', 'multinomial',
    'multinomial_grad'), ``dist`` is the MXDist code and ``names`` the
    parameters (a, b) of a 'dist' call."""
    if name == "multinomial_grad":
        return _multinomial_grad

    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        if reqs[0] == "add":
            raise ValueError(f"{name}: req 'add' is not supported by random samplers")
        out = outputs[0]
        if name in _SAMPLERS:
            if out.size:
                _SAMPLERS[name](dist, names, params, inputs, outputs, reqs)
            return
        if name == "shuffle":
            data = inputs[0]
            if data.ndim == 0 or data.shape[0] < 2:
                out[...] = data
                return
            perm = _state(params).permutation(data.shape[0])
            out[...] = data[perm]        # a gather copies first, so in place is safe
            return
        out[...] = _state(params).randint(params["low"], params["high"], out.shape,
                                          out.dtype)     # randint
    return run
