"""GPU compute of fused.py's and multi.py's operators: fused_cpu.h's and
multi_cpu.h's element steps as templated RawKernels (one per operator kind
and dtype, float16 computing in float, the mp_ kinds in float on weight32),
states written in place, the output (which may be the weight) stored per
req.  A multi_* update is one launch over all its weights (a device table
of their pointers and sizes); multi_sum_sq one block-reduction launch per
array (float64 partial sums, as the CPU's), multi_lars an elementwise
kernel.  Importing this module without CuPy raises ImportError."""
import cupy
import numpy

from mx_ops.core._cuda import CTYPES, launch, raw_module
from mx_ops.ops.optimizer.fused import SPECS, values
from mx_ops.ops.optimizer.multi import MULTI
from mx_ops.ops.optimizer.multi_adam import SPECS as ADAM_SPECS

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>

template <typename T> struct Acc { typedef T type; };
template <> struct Acc<float16> { typedef float type; };

template <bool B, typename X, typename Y> struct mx_cond { typedef X type; };
template <typename X, typename Y> struct mx_cond<false, X, Y> { typedef Y type; };

template <typename A> __device__ A f_clip(A v, A b) { return v > b ? b : (v < -b ? -b : v); }
template <typename A> __device__ A f_sign(A v) { return A(int(v > A(0)) - int(v < A(0))); }

// fused_cpu.h's functors, by KIND (FUSED_KINDS below).  w, g: the weight
// and gradient of type T; s0..s2: the states (T, or float for the mp_
// kinds; lamb phase 2: r1, r2, weight32).  p: lr, wd, rescale, clip, a, b,
// c, d.  Returns the new weight (lamb phase 1: its step).
template <int KIND, typename T, typename A>
__device__ A fused_step(const double *p, int t, int flag, bool in_place, const T *w,
                        const T *g, void *s0, void *s1, void *s2, long long i) {
  const A lr = A(p[0]), wd = A(p[1]), rescale = A(p[2]), clip = A(p[3]);
  const bool clipping = p[3] >= 0;
  A gr = rescale * A(g[i]);
  if (clipping && KIND != 6 && KIND != 7) gr = f_clip(gr, clip);
  if (KIND == 0) {                       // nag_mom_update (see NagMom for in_place)
    T *mom = (T *)s0;
    const A wv = A(w[i]), m = A(p[4]), om = A(mom[i]), step = lr * (gr + wd * wv);
    const A nw = wv + m * (m * om - step) - step;
    const A decayed = in_place ? A(T(nw)) : wv;
    mom[i] = T(m * om - lr * (gr + wd * decayed));
    return nw;
  } else if (KIND == 1) {                // mp_nag_mom_update
    float *mom = (float *)s0, *w32 = (float *)s1;
    const A wv = w32[i], m = A(p[4]), om = mom[i], step = lr * (gr + wd * wv);
    const A nw = wv + m * (m * om - step) - step;
    w32[i] = nw;
    mom[i] = m * om - lr * (gr + wd * nw);
    return nw;
  } else if (KIND == 3) {                // mp_sgd_mom_update
    float *mom = (float *)s0, *w32 = (float *)s1;
    const A wv = w32[i], m = A(p[4]);
    mom[i] = m * mom[i] - lr * wd * wv - lr * gr;
    w32[i] = wv + mom[i];
    return wv + mom[i];
  } else if (KIND == 2) {                // mp_sgd_update
    float *w32 = (float *)s0;
    const A nw = (A(1) - lr * wd) * w32[i] - lr * gr;
    w32[i] = nw;
    return nw;
  } else if (KIND == 4) {                // signsgd_update
    return (A(1) - lr * wd) * A(w[i]) - lr * f_sign(A(g[i]));
  } else if (KIND == 5) {                // signum_update
    T *mom = (T *)s0;
    const A wv = A(w[i]), m = A(p[4]), keep = A(1) - m;
    mom[i] = T(m * A(mom[i]) - keep * wd * wv - keep * gr);
    return (A(1) - lr * A(p[5])) * wv + lr * f_sign(A(mom[i]));
  } else if (KIND == 6) {                // ftml_update
    T *d = (T *)s0, *v = (T *)s1, *z = (T *)s2;
    // beta1, beta2 in the weight's dtype, as MXNet's kernel takes them
    const A wv = A(w[i]), b1 = A(T(p[4])), b2 = A(T(p[5]));
    A g2 = rescale * A(g[i]) + wd * wv;
    if (clipping) g2 = f_clip(g2, clip);
    v[i] = T(b2 * A(v[i]) + (A(1) - b2) * g2 * g2);
    const A keep1 = A(1) - A(pow(b1, A(t))), keep2 = A(1) - A(pow(b2, A(t)));
    const A d_t = keep1 / lr * (sqrt(A(v[i]) / keep2) + A(p[6]));
    z[i] = T(b1 * A(z[i]) + (A(1) - b1) * g2 - (d_t - b1 * A(d[i])) * wv);
    d[i] = T(d_t);
    return -A(z[i]) / d_t;
  } else if (KIND == 7) {                // rmspropalex_update
    T *n = (T *)s0, *gs = (T *)s1, *delta = (T *)s2;
    const A wv = A(w[i]), g1 = A(p[4]);
    A g2 = rescale * A(g[i]) + wd * wv;
    if (clipping) g2 = f_clip(g2, clip);
    n[i] = T((A(1) - g1) * g2 * g2 + g1 * A(n[i]));
    gs[i] = T((A(1) - g1) * g2 + g1 * A(gs[i]));
    const A nv = A(n[i]), gv = A(gs[i]);
    delta[i] = T(A(p[5]) * A(delta[i]) - lr * (g2 / sqrt(nv - gv * gv + A(p[6]))));
    const A nw = wv + A(delta[i]);
    return p[7] >= 0 ? f_clip(nw, A(p[7])) : nw;
  } else if (KIND == 8 || KIND == 9) {   // lamb_update_phase1, mp_ (float states, weight32)
    const A b1 = A(p[4]), b2 = A(p[5]);
    const A keep1 = A(1) - A(pow(A(p[4]), A(t))), keep2 = A(1) - A(pow(A(p[5]), A(t)));
    A m, v, wv;
    if (KIND == 8) {
      T *mean = (T *)s0, *var = (T *)s1;
      mean[i] = T(b1 * A(mean[i]) + (A(1) - b1) * gr);
      var[i] = T(b2 * A(var[i]) + (A(1) - b2) * gr * gr);
      m = A(mean[i]), v = A(var[i]), wv = A(w[i]);
    } else {
      float *mean = (float *)s0, *var = (float *)s1, *w32 = (float *)s2;
      mean[i] = b1 * mean[i] + (A(1) - b1) * gr;
      var[i] = b2 * var[i] + (A(1) - b2) * gr * gr;
      m = mean[i], v = var[i], wv = w32[i];
    }
    if (flag) {
      m = m / keep1;
      v = v / keep2;
    }
    return m / (sqrt(v) + A(p[6])) + wd * wv;
  } else if (KIND == 12 || KIND == 13) { // _adamw_update, _mp_adamw_update
    const A b1 = A(p[4]), b2 = A(p[5]);
    A m, v, wv;
    if (KIND == 12) {   // MXNet leaves the scaled, clipped gradient in grad
      ((T *)g)[i] = T(gr);
      gr = A(g[i]);
      T *mean = (T *)s0, *var = (T *)s1;
      mean[i] = T(b1 * A(mean[i]) + (A(1) - b1) * gr);
      var[i] = T(b2 * A(var[i]) + (A(1) - b2) * gr * gr);
      m = A(mean[i]), v = A(var[i]), wv = A(w[i]);
    } else {
      float *mean = (float *)s0, *var = (float *)s1;
      mean[i] = b1 * mean[i] + (A(1) - b1) * gr;
      var[i] = b2 * var[i] + (A(1) - b2) * gr * gr;
      m = mean[i], v = var[i], wv = ((float *)s2)[i];
    }
    const A nw = wv - A(p[7]) * (lr * m / (sqrt(v) + A(p[6])) + wd * wv);
    if (KIND == 13) ((float *)s2)[i] = nw;
    return nw;
  }
  return A(0);
}

template <typename A, typename S>
__device__ A lamb_ratio_lr(const double *p, const S *r1p, const S *r2p) {
  A r1 = A(r1p[0]);
  const A r2 = A(r2p[0]);
  if (p[4] >= 0) r1 = r1 > A(p[4]) ? r1 : A(p[4]);
  if (p[5] >= 0) r1 = r1 < A(p[5]) ? r1 : A(p[5]);
  return (r1 == A(0) || r2 == A(0)) ? A(p[0]) : A(p[0]) * r1 / r2;
}

// store: 0 discards the new weight (req 'null'), 1 writes it, 3 adds it.
// O: the output's type (float for mp_lamb_update_phase1).
// s3: adamw's rescale_grad when mixed precision (s2 otherwise).
template <int KIND, typename T, typename O>
__global__ void mx_fused(const T *w, const T *g, void *s0, void *s1, void *s2, void *s3,
                         O *out, long long n, double lr, double wd, double rescale,
                         double clip, double a, double b, double c, double d, int t, int flag,
                         int store) {
  if (KIND == 12 || KIND == 13) {   // AdamW's rescale_grad, an input: NaN, Inf, 0 skip
    const float r = *(const float *)(KIND == 12 ? s2 : s3);
    if (!isfinite(r) || r == 0.0f) return;
    rescale = r;
  }
  // the output is the weight itself (nag_mom_update's momentum reads it back)
  const bool in_place = (const void *)out == (const void *)w && (store == 1);
  const bool mp = KIND == 1 || KIND == 2 || KIND == 3 || KIND == 9 || KIND == 11 || KIND == 13;
  typedef typename Acc<T>::type A0;
  typedef typename Acc<O>::type A;
  const double p[8] = {lr, wd, rescale, clip, a, b, c, d};
  A lamb_lr = A(0);
  if (KIND == 10) lamb_lr = lamb_ratio_lr<A, T>(p, (const T *)s0, (const T *)s1);
  if (KIND == 11) lamb_lr = lamb_ratio_lr<A, float>(p, (const float *)s0, (const float *)s1);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    A v;
    if (KIND == 10) {
      v = A(w[i]) - lamb_lr * A(g[i]);
    } else if (KIND == 11) {             // g is float32; weight32 is only read (MXNet's)
      v = ((const float *)s2)[i] - lamb_lr * ((const float *)g)[i];
    } else if (mp) {
      v = A(fused_step<KIND, T, float>(p, t, flag, in_place, w, g, s0, s1, s2, i));
    } else {
      v = A(fused_step<KIND, T, A0>(p, t, flag, in_place, w, g, s0, s1, s2, i));
    }
    if (store == 3) out[i] = O(A(out[i]) + v);
    else if (store != 0) out[i] = O(v);
  }
}

// multi_cpu.h's multi-SGD over a table of weights: ptrs[k*per + j] is input
// j of weight k, outs[k] its output, starts[k] its first element in the
// concatenation (starts[num] the total), rates[k] / rates[num + k] its lr /
// wd (float32), stores[k] its req code.
// MP_ARG: a multi_mp_ operator; it is mixed precision unless T is float
// (MXNet's MultiSGD ignores weight32 for float32 weights).
template <typename T, bool MOM, bool MP_ARG>
__global__ void mx_multi_sgd(void *const *ptrs, void *const *outs, const long long *starts,
                             const float *rates, const int *stores, int num, int per,
                             double momentum, double rescale, double clip) {
  const bool MP = MP_ARG && sizeof(T) != sizeof(float);
  typedef typename Acc<T>::type A0;
  typedef typename mx_cond<MP_ARG && sizeof(T) != sizeof(float), float, A0>::type A;
  typedef typename mx_cond<MP_ARG && sizeof(T) != sizeof(float), float, T>::type M;
  const long long total = starts[num];
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
       e += (long long)blockDim.x * gridDim.x) {
    int k = 0;
    while (starts[k + 1] <= e) ++k;
    const long long i = e - starts[k];
    const T *w = (const T *)ptrs[k * per], *g = (const T *)ptrs[k * per + 1];
    const A lr = A(rates[k]), wd = A(rates[num + k]);
    A wv = MP ? A(((float *)ptrs[k * per + per - 1])[i]) : A(w[i]);
    A gr = A(rescale) * A(g[i]);
    if (clip >= 0) gr = f_clip(gr, A(clip));
    if (MOM) {
      M *mom = (M *)ptrs[k * per + 2];
      mom[i] = M(A(momentum) * A(mom[i]) - lr * wd * wv - lr * gr);
      wv = wv + A(mom[i]);
    } else {
      wv = wv - lr * (wd * wv + gr);
    }
    if (MP) ((float *)ptrs[k * per + per - 1])[i] = wv;
    T *out = (T *)outs[k];
    if (stores[k] == 3) out[i] = T(A(out[i]) + wv);
    else if (stores[k] != 0) out[i] = T(wv);
  }
}

// One block per array chunk of the sum of squares: partial[blockIdx.x] over
// elements [blockIdx.x * chunk, ...) of x, in double.
template <typename T>
__global__ void mx_sum_sq(const T *x, long long n, long long chunk, double *partial) {
  __shared__ double s[256];
  double acc = 0;
  const long long lo = blockIdx.x * chunk, hi = lo + chunk < n ? lo + chunk : n;
  for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
    const double v = double(typename Acc<T>::type(x[i]));
    acc += v * v;
  }
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int h = blockDim.x / 2; h > 0; h /= 2) {
    if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

// One weight of _multi_adamw_update (LAMB=0) or LAMB's phase 1 (LAMB=1:
// the step into st) over n elements; MP: in float on w32 with float moments.
// p: beta1, beta2, epsilon, clip, rescale, lr, wd, eta (AdamW) / t (LAMB),
// bias_correction.
template <typename T, bool MP, bool LAMB>
__global__ void mx_adam_weight(const T *w, const T *g, void *mean_v, void *var_v, float *w32,
                               T *out, typename mx_cond<MP, float, T>::type *st, long long n,
                               double beta1, double beta2, double eps, double clip,
                               double rescale, double lr, double wd, double eta_or_t, int bias,
                               int store) {
  typedef typename Acc<T>::type A0;
  typedef typename mx_cond<MP, float, A0>::type A;
  typedef typename mx_cond<MP, float, T>::type M;
  M *mean = (M *)mean_v, *var = (M *)var_v;
  const A b1 = A(beta1), b2 = A(beta2);
  const A keep1 = A(1) - A(pow(A(beta1), A(eta_or_t))), keep2 = A(1) - A(pow(A(beta2), A(eta_or_t)));
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    A gr = A(rescale) * A(g[i]);
    if (clip >= 0) gr = f_clip(gr, A(clip));
    mean[i] = M(b1 * A(mean[i]) + (A(1) - b1) * gr);
    var[i] = M(b2 * A(var[i]) + (A(1) - b2) * gr * gr);
    const A wv = MP ? A(w32[i]) : A(w[i]);
    if (LAMB) {
      A m = A(mean[i]), v = A(var[i]);
      if (bias) {
        m = m / keep1;
        v = v / keep2;
      }
      st[i] = M(m / (sqrt(v) + A(eps)) + A(wd) * wv);
    } else {
      const A nw = wv - A(eta_or_t) * (A(lr) * A(mean[i]) / (sqrt(A(var[i])) + A(eps)) + A(wd) * wv);
      if (MP) w32[i] = nw;
      if (store == 3) out[i] = T(A(out[i]) + nw);
      else if (store != 0) out[i] = T(nw);
    }
  }
}

// LAMB's phase 2 on one weight: w - lr*st (lr already scaled by the ratio).
template <typename T, bool MP>
__global__ void mx_lamb_apply(const T *w, float *w32, const typename mx_cond<MP, float, T>::type *st,
                              T *out, long long n, double lr, int store) {
  typedef typename Acc<T>::type A0;
  typedef typename mx_cond<MP, float, A0>::type A;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    const A nw = (MP ? A(w32[i]) : A(w[i])) - A(lr) * A(st[i]);
    if (MP) w32[i] = nw;
    if (store == 3) out[i] = T(A(out[i]) + nw);
    else if (store != 0) out[i] = T(nw);
  }
}

__global__ void mx_lars(const float *lrs, const float *wss, const float *gss, const float *wds,
                        float *out, long long n, float eta, float eps, float rescale,
                        int store) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    float v = lrs[i];
    if (wss[i] > 0 && gss[i] > 0) {
      const float wn = sqrtf(wss[i]);
      v = lrs[i] * eta * wn / (sqrtf(gss[i]) * rescale + wds[i] * wn + eps);
    }
    if (store == 3) out[i] += v;
    else if (store != 0) out[i] = v;
  }
}
"""
FUSED_KINDS = {"nag_mom_update": 0, "mp_nag_mom_update": 1, "mp_sgd_update": 2,
               "mp_sgd_mom_update": 3, "signsgd_update": 4, "signum_update": 5,
               "ftml_update": 6, "rmspropalex_update": 7, "lamb_update_phase1": 8,
               "mp_lamb_update_phase1": 9, "lamb_update_phase2": 10,
               "mp_lamb_update_phase2": 11, "_adamw_update": 12,
               "_mp_adamw_update": 13}
_FLOATS = ("float16", "float32", "float64")
_STORE = {"null": 0, "write": 1, "inplace": 1, "add": 3}
_SUM_SQ_CHUNK = 1 << 14


def _fused_name(op, dtype):
    t = CTYPES[dtype]
    out = "float" if SPECS[op].out_fp32 else t
    return f"mx_fused<{FUSED_KINDS[op]}, {t}, {out}>"


def _multi_name(op, dtype):
    spec = MULTI[op]
    return (f"mx_multi_sgd<{CTYPES[dtype]}, {str(spec.mom).lower()}, "
            f"{str(spec.mp).lower()}>")


def _b(v):
    return "true" if v else "false"


def _adam_names(t, mp):
    mp = mp and t != "float32"           # MXNet ignores weight32 for float32 weights
    c = CTYPES[t]
    return [f"mx_adam_weight<{c}, {_b(mp)}, {_b(lamb)}>" for lamb in (False, True)] + \
        [f"mx_lamb_apply<{c}, {_b(mp)}>"]


_NAMES = sorted({_fused_name(op, t) for op in FUSED_KINDS for t in SPECS[op].weight_dtypes}
                | {_multi_name(op, t) for op in MULTI for t in _FLOATS}
                | {n for t in _FLOATS for mp in (False, True) for n in _adam_names(t, mp)}
                | {f"mx_sum_sq<{CTYPES[t]}>" for t in _FLOATS} | {"mx_lars"})
_kernel = raw_module(_SOURCE, _NAMES)


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_fused", _SOURCE, tuple(_NAMES))]


def compute(name):
    """The GPU compute of fused update ``name``: ``fn(params, inputs,
    outputs, reqs)`` over CuPy arrays, on the current stream."""
    def run(params, inputs, outputs, reqs):
        w, g = inputs[0], inputs[1]
        states = list(inputs[2:]) + [w] * (6 - len(inputs))     # unused slots: any pointer
        v = values(name, params)
        launch(_kernel(_fused_name(name, w.dtype.name)), w.size,
               (w, g, *states, outputs[0], numpy.int64(w.size),
                *[numpy.float64(x) for x in v[:8]], numpy.int32(v[8]), numpy.int32(v[9]),
                numpy.int32(_STORE[reqs[0]])))
    return run


def multi_compute(name):
    """The GPU compute of aggregated update ``name``: one launch for all
    weights."""
    spec = MULTI[name]
    per = len(spec.per_weight)

    def run(params, inputs, outputs, reqs):
        n = params["num_weights"]
        sizes = [inputs[k * per].size for k in range(n)]
        starts = cupy.asarray(numpy.concatenate([[0], numpy.cumsum(sizes)]).astype(numpy.int64))
        ptrs = cupy.asarray(numpy.array([x.data.ptr for x in inputs[:n * per]], numpy.uint64))
        outs = cupy.asarray(numpy.array([o.data.ptr for o in outputs], numpy.uint64))
        if spec.preloaded:
            rates = cupy.concatenate([inputs[n * per], inputs[n * per + 1]]).astype(cupy.float32)
        else:
            rates = cupy.asarray(numpy.array([*params["lrs"], *params["wds"]], numpy.float32))
        stores = cupy.asarray(numpy.array([_STORE[r] for r in reqs], numpy.int32))
        launch(_kernel(_multi_name(name, inputs[0].dtype.name)), int(sum(sizes)),
               (ptrs, outs, starts, rates, stores, numpy.int32(n), numpy.int32(per),
                *[numpy.float64(numpy.float32(params.get(k, d))) for k, d in
                  (("momentum", 0.0), ("rescale_grad", 1.0), ("clip_gradient", -1.0))]))
    return run


def sum_sq_compute(params, inputs, outputs, reqs):
    """multi_sum_sq: per array, chunk partial sums in float64, summed in order."""
    sums = []
    for x in inputs:
        blocks = max(1, (x.size + _SUM_SQ_CHUNK - 1) // _SUM_SQ_CHUNK)
        partial = cupy.zeros(blocks, cupy.float64)
        if x.size:
            _kernel(f"mx_sum_sq<{CTYPES[x.dtype.name]}>")(
                (blocks,), (256,), (x, numpy.int64(x.size), numpy.int64(_SUM_SQ_CHUNK), partial))
        sums.append(partial.sum())
    total = cupy.stack(sums).astype(cupy.float32)
    if reqs[0] == "add":
        outputs[0] += total
    elif reqs[0] != "null":
        outputs[0][...] = total


def lars_compute(params, inputs, outputs, reqs):
    """multi_lars, elementwise in float."""
    n = inputs[0].size
    launch(_kernel("mx_lars"), n,
           (*inputs, outputs[0], numpy.int64(n),
            *[numpy.float32(params[k]) for k in ("eta", "eps", "rescale_grad")],
            numpy.int32(_STORE[reqs[0]])))


def multi_adam_compute(name):
    """The GPU compute of _multi_adamw_update / _multi_lamb_update (and mp_):
    a launch per weight; LAMB's norms as CuPy reductions in float64."""
    spec = ADAM_SPECS[name]
    per = len(spec.per_weight)

    def run(params, inputs, outputs, reqs):
        n, dtype = params[spec.count], inputs[0].dtype.name
        mp = spec.mp and dtype != "float32"
        c = CTYPES[dtype]
        f = {k: numpy.float64(numpy.float32(params.get(k, d))) for k, d in (
            ("beta1", 0.9), ("beta2", 0.999), ("epsilon", 0.0), ("clip_gradient", -1.0),
            ("rescale_grad", 1.0))}
        if spec.lamb:
            rescale = f["rescale_grad"]
        else:
            rescale = float(inputs[-1].reshape(-1)[0].get())
            if not numpy.isfinite(rescale) or rescale == 0:
                return                                  # MXNet skips the update
        lrs, wds, third = (params[k] for k in spec.rates)
        weights = []
        for k in range(n):
            w, g, mean, var = inputs[k * per:k * per + 4]
            w32 = inputs[k * per + 4] if mp else w
            st = cupy.empty(w.shape, cupy.float32 if mp else w.dtype) if spec.lamb else w
            launch(_kernel(f"mx_adam_weight<{c}, {_b(mp)}, {_b(spec.lamb)}>"), w.size,
                   (w, g, mean, var, w32, outputs[k], st, numpy.int64(w.size), f["beta1"],
                    f["beta2"], f["epsilon"], f["clip_gradient"], numpy.float64(rescale),
                    numpy.float64(numpy.float32(lrs[k])), numpy.float64(numpy.float32(wds[k])),
                    numpy.float64(third[k] if spec.lamb else numpy.float32(third[k])),
                    numpy.int32(params.get("bias_correction", True)),
                    numpy.int32(_STORE[reqs[k]])))
            weights.append((w, w32, st))
        if not spec.lamb:
            return
        for k, (w, w32, st) in enumerate(weights):
            r1 = numpy.float32(numpy.sqrt(float(cupy.sum((w32 if mp else w).astype(cupy.float64) ** 2))))
            r2 = numpy.float32(numpy.sqrt(float(cupy.sum(st.astype(cupy.float64) ** 2))))
            if params["lower_bound"] >= 0:
                r1 = max(r1, numpy.float32(params["lower_bound"]))
            if params["upper_bound"] >= 0:
                r1 = min(r1, numpy.float32(params["upper_bound"]))
            lr = numpy.float32(lrs[k])
            lr = lr if r1 == 0 or r2 == 0 else lr * r1 / r2
            launch(_kernel(f"mx_lamb_apply<{c}, {_b(mp)}>"), w.size,
                   (w, w32, st, outputs[k], numpy.int64(w.size), numpy.float64(lr),
                    numpy.int32(_STORE[reqs[k]])))
    return run
