"""GPU compute of im2col and col2im (im2col_cpu.h): one thread per column
element for im2col; one thread per image element for col2im, which sums
the taps that read it in increasing order, as the CPU kernel adds them, so
both devices give the same sums.  Both read the very block im2col.py packs
for the CPU kernel.  Importing this module without CuPy raises ImportError."""
import numpy

from mx_ops.core._cuda import FLOAT_CTYPES, launch, raw_module

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>

// mxop::Im2colParam: spatial axes padded to 3 in front.
struct Geom { long long n, c, in[3], out[3], k[3], s[3], d[3], p[3]; };

template <typename T>
__global__ void mx_im2col(const T *img, T *col, Geom g, long long total, int add) {
  const long long K = g.k[0] * g.k[1] * g.k[2], L = g.out[0] * g.out[1] * g.out[2];
  const long long plane = g.in[0] * g.in[1] * g.in[2];
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)blockDim.x * gridDim.x) {
    const long long l = i % L, r = i / L, nc = r / K;
    long long src = 0;
    bool inside = true;
    long long lrest = l, krest = r % K;
    for (int a = 2; a >= 0; --a) {
      const long long o = lrest % g.out[a], k = krest % g.k[a];
      lrest /= g.out[a];
      krest /= g.k[a];
      const long long x = o * g.s[a] - g.p[a] + k * g.d[a];
      inside = inside && x >= 0 && x < g.in[a];
      long long step = 1;
      for (int b = a + 1; b < 3; ++b) step *= g.in[b];
      src += x * step;
    }
    const T v = inside ? img[nc * plane + src] : T(0);
    col[i] = add ? T(col[i] + v) : v;
  }
}

template <typename T>
__global__ void mx_col2im(const T *col, T *img, Geom g, long long total, int add) {
  const long long K = g.k[0] * g.k[1] * g.k[2], L = g.out[0] * g.out[1] * g.out[2];
  const long long plane = g.in[0] * g.in[1] * g.in[2];
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)blockDim.x * gridDim.x) {
    const long long nc = i / plane, x2 = i % g.in[2], x1 = i / g.in[2] % g.in[1],
                    x0 = i / (g.in[1] * g.in[2]) % g.in[0];
    T acc = add ? img[i] : T(0);
    for (long long k = 0; k < K; ++k) {
      const long long kk[3] = {k / (g.k[1] * g.k[2]), k / g.k[2] % g.k[1], k % g.k[2]};
      const long long xx[3] = {x0, x1, x2};
      long long l = 0;
      bool hit = true;
      for (int a = 0; a < 3 && hit; ++a) {
        const long long t = xx[a] + g.p[a] - kk[a] * g.d[a];
        hit = t >= 0 && t % g.s[a] == 0 && t / g.s[a] < g.out[a];
        l = l * g.out[a] + t / g.s[a];
      }
      if (hit) acc = T(acc + col[(nc * K + k) * L + l]);
    }
    img[i] = acc;
  }
}
"""
_NAMES = [f"{k}<{t}>" for k in ("mx_im2col", "mx_col2im")
          for t in FLOAT_CTYPES.values()]
_kernel = raw_module(_SOURCE, _NAMES)
_GEOM_T = numpy.dtype([("f", "<i8", (20,))])        # mxop::Im2colParam, as one struct


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_im2col", _SOURCE, tuple(_NAMES))]


def _run(name, pack):
    def run(params, inputs, outputs, reqs):
        out = outputs[0]
        if reqs[0] == "null" or out.size == 0:
            return
        block = pack(params, [x.shape for x in inputs])
        geom = numpy.frombuffer(block, _GEOM_T)[0]
        fn = _kernel(f"{name}<{FLOAT_CTYPES[out.dtype.name]}>")
        launch(fn, out.size, (inputs[0], out, geom, numpy.int64(out.size),
                              numpy.int32(reqs[0] == "add")))
    return run


def im2col(pack):
    """im2col's compute; ``pack`` is its pack_params."""
    return _run("mx_im2col", pack)


def col2im(pack):
    """col2im's (and _backward_im2col's) compute."""
    return _run("mx_col2im", pack)
