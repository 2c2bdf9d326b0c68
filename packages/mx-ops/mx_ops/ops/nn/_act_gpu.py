"""GPU compute of Activation and LeakyReLU, forward and backward: the
functors of activation_cpu.h and leaky_relu_cpu.h as RawKernels,
reading the very parameter block mx_ops.ops.nn.activation packs for the CPU
kernels.  Every backward but PReLU's and rrelu's is computed from the
forward output; PReLU's gamma gradient is one block per slope summing in
double in a fixed order (no atomics), as the CPU sums each slope serially.
rrelu's training slopes come from the very Philox stream the CPU kernel
draws from (mx_ops.core._device_code), so a GPU call with the same (seed,
offset) gives the CPU's mask bit for bit.  float16 computes in float.
Importing this module without CuPy raises ImportError."""
import numpy

from mx_ops.core._cuda import FLOAT_CTYPES, NN_HEAD, launch, launch_blocks, raw_module
from mx_ops.core._device_code import PHILOX_UNIFORM, PHILOX_UNIFORM_RANGE

_SOURCE = NN_HEAD + PHILOX_UNIFORM + PHILOX_UNIFORM_RANGE + r"""
// Codes of activation_cpu.h (mx_ops.ops.nn.activation ACT_TYPES / LEAKY_TYPES).
enum { kRelu = 0, kSigmoid = 1, kTanh = 2, kSoftRelu = 3, kSoftSign = 4,
       kLeaky = 5, kElu = 6, kSelu = 7, kGelu = 9 };
#define MX_SELU_ALPHA 1.6732632423543772848170429916717
#define MX_SELU_LAMBDA 1.0507009873554804934193349852946
// gelu in float, as gelu_f / gelu_grad_f of activation_cpu.h.
__device__ inline float mx_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f)); }
__device__ inline float mx_gelu_grad(float x) {
  return 0.5f * (1.0f + erff(x * 0.70710678118654752440f))
         + x * 0.39894228040143267794f * expf(-0.5f * x * x);
}

// act_fwd of activation_cpu.h, with the code as a (block-uniform) value.
template <typename A>
__device__ inline A act_fwd(int act, A x, A s) {
  switch (act) {
    case kRelu: return x > A(0) ? x : A(0);
    case kSigmoid: return A(1) / (A(1) + exp(-x));
    case kTanh: return tanh(x);
    // log(1 + e^x) overflows for large x, where it equals x (MXNet's threshold 20).
    case kSoftRelu: return x > A(20) ? x : log1p(exp(x));
    case kSoftSign: return x / (A(1) + fabs(x));
    case kLeaky: return x > A(0) ? x : A(s * x);
    case kElu: return x > A(0) ? x : A(s * expm1(x));
    case kGelu: return A(mx_gelu(float(x)));
    default: return A(MX_SELU_LAMBDA) * (x > A(0) ? x : A(A(MX_SELU_ALPHA) * expm1(x)));
  }
}

// d act / dx from the output y (act_grad of activation_cpu.h; gelu: from
// the input x, passed as y).
template <typename A>
__device__ inline A act_grad(int act, A y, A s) {
  switch (act) {
    case kRelu: return y > A(0) ? A(1) : A(0);
    case kSigmoid: return y * (A(1) - y);
    case kTanh: return A(1) - y * y;
    case kSoftRelu: return -expm1(-y);
    case kSoftSign: { A t = A(1) - fabs(y); return t * t; }
    case kLeaky: return y > A(0) ? A(1) : s;
    case kElu: return y > A(0) ? A(1) : A(y + s);
    case kGelu: return A(mx_gelu_grad(float(y)));
    // MXNet's selu_grad: lambda * (alpha + y) below 0
    default: return y > A(0) ? A(MX_SELU_LAMBDA) : A(A(MX_SELU_LAMBDA) * (A(MX_SELU_ALPHA) + y));
  }
}

// y = act(x); x and y may be one buffer (each item is read, then written,
// by one thread).
template <typename T>
__global__ void mx_act_fwd(const T *x, T *y, long long n, int act, double slope, int add) {
  typedef typename Acc<T>::type A;
  const A s = A(slope);
  MX_GRID_STRIDE(i, n) nn_store(y, i, act_fwd<A>(act, A(x[i]), s), add);
}

// dx = og * act'(y).
template <typename T>
__global__ void mx_act_bwd(const T *og, const T *y, T *dx, long long n, int act, double slope,
                           int add) {
  typedef typename Acc<T>::type A;
  const A s = A(slope);
  MX_GRID_STRIDE(i, n) nn_store(dx, i, A(og[i]) * act_grad<A>(act, A(y[i]), s), add);
}

// out[i] = v, out[i] += v or nothing by req (0 null, 1 write, 2 inplace,
// 3 add): rrelu's two outputs have a req each (nn_put of src/nn_common.h).
template <typename T, typename A> __device__ inline void nn_put(T *out, long long i, A v,
                                                                int req) {
  if (req == 3) out[i] = T(A(out[i]) + v);
  else if (req != 0) out[i] = T(v);
}

// rrelu (leaky_relu_cpu.h): in training slope i is element i of the
// call's uniform stream on [lower, upper) (lower itself when the bounds are
// equal), taken as the mask stores it (in T); in inference it is the mean.
// The output never reads the mask back.  x and y may be one buffer.
template <typename T>
__global__ void mx_rrelu_fwd(const T *x, T *y, T *mask, long long n, unsigned long long seed,
                             unsigned long long offset, float lower, float upper, double mean,
                             int train, int ry, int rm) {
  typedef typename Acc<T>::type A;
  MX_GRID_STRIDE(i, n) {
    const float u = lower < upper
        ? mx_philox_uniform_range(seed, offset + (unsigned long long)i, lower, upper) : lower;
    const A s = train ? A(T(u)) : A(mean);
    nn_put(mask, i, s, rm);
    nn_put(y, i, act_fwd<A>(kLeaky, A(x[i]), s), ry);
  }
}

// dx = og * (y > 0 ? 1 : mask).
template <typename T>
__global__ void mx_rrelu_bwd(const T *og, const T *mask, const T *y, T *dx, long long n,
                             int add) {
  typedef typename Acc<T>::type A;
  MX_GRID_STRIDE(i, n) nn_store(dx, i, A(og[i]) * act_grad<A>(kLeaky, A(y[i]), A(mask[i])),
                                add);
}

// PReLU over data seen as (outer, chans, inner); the slope of item i is
// g[channel * gstride] (gstride 0: one shared slope), PreluView of the CPU.
template <typename T>
__global__ void mx_prelu_fwd(const T *x, const T *g, T *y, long long n, long long chans,
                             long long inner, long long gstride, int add) {
  typedef typename Acc<T>::type A;
  MX_GRID_STRIDE(i, n) {
    const A s = A(g[((i / inner) % chans) * gstride]);
    const A xv = A(x[i]);
    nn_store(y, i, xv > A(0) ? xv : A(s * xv), add);
  }
}

template <typename T>
__global__ void mx_prelu_bwd_data(const T *og, const T *x, const T *g, T *dx, long long n,
                                  long long chans, long long inner, long long gstride,
                                  int add) {
  typedef typename Acc<T>::type A;
  MX_GRID_STRIDE(i, n) {
    const A s = A(g[((i / inner) % chans) * gstride]);
    nn_store(dx, i, A(og[i]) * (A(x[i]) > A(0) ? A(1) : s), add);
  }
}

// dg[k] = sum of og * x where x <= 0 over the items of slope k, in double:
// block k sums them (every item when there is one slope, ng == 1).
template <typename T>
__global__ void mx_prelu_bwd_gamma(const T *og, const T *x, T *dg, long long outer,
                                   long long chans, long long inner, long long ng, int add) {
  typedef typename Acc<T>::type A;
  const long long count = ng == 1 ? outer * chans * inner : outer * inner;
  for (long long k = blockIdx.x; k < ng; k += gridDim.x) {
    double sum = 0.0;
    for (long long m = threadIdx.x; m < count; m += blockDim.x) {
      const long long i = ng == 1 ? m : ((m / inner) * chans + k) * inner + m % inner;
      if (A(x[i]) <= A(0)) sum += double(og[i]) * double(x[i]);
    }
    sum = block_reduce(sum, SumOp(), 0.0);
    if (threadIdx.x == 0) nn_store(dg, k, A(sum), add);
  }
}
"""
_KERNELS = ("mx_act_fwd", "mx_act_bwd", "mx_rrelu_fwd", "mx_rrelu_bwd", "mx_prelu_fwd",
            "mx_prelu_bwd_data", "mx_prelu_bwd_gamma")
_NAMES = [f"{k}<{t}>" for k in _KERNELS for t in FLOAT_CTYPES.values()]
_kernel = raw_module(_SOURCE, _NAMES)
# mxop::LeakyParam, which starts with Activation's mxop::ActParam.
_PARAM_T = numpy.dtype([("act", "<i4"), ("pad", "<i4"), ("slope", "<f8"), ("lower", "<f4"),
                        ("upper", "<f4")])
_REQ = {"null": 0, "write": 1, "inplace": 2, "add": 3}
_GAMMA_THREADS = 256


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_act", _SOURCE, tuple(_NAMES))]


def _fn(name, x):
    return _kernel(f"{name}<{FLOAT_CTYPES[x.dtype.name]}>")


def _param(pack, params, inputs):
    """The packed parameter block as a record (lower and upper are zero in
    Activation's shorter block)."""
    packed = pack(params, [a.shape for a in inputs]).ljust(_PARAM_T.itemsize, b"\0")
    return numpy.frombuffer(packed, _PARAM_T, count=1)[0]


def _act_param(pack, params, inputs):
    p = _param(pack, params, inputs)
    return numpy.int32(p["act"]), numpy.float64(p["slope"])


def _prelu_view(x, g):
    """(outer, chans, inner, gstride) of prelu_view in activation_cpu.h."""
    if x.ndim >= 2:
        outer, chans = x.shape[0], x.shape[1]
        inner = x.size // (outer * chans) if outer * chans else 0
    else:
        outer, chans, inner = 1, 1, x.size
    return outer, chans, inner, 0 if g.size == 1 else 1


def _act_forward(pack, params, inputs, outputs, reqs):
    if reqs[0] == "null":
        return
    x, y = inputs[0], outputs[0]
    act, slope = _act_param(pack, params, inputs)
    launch(_fn("mx_act_fwd", x), x.size,
           (x, y, numpy.int64(x.size), act, slope, numpy.int32(reqs[0] == "add")))


def _act_backward(pack, params, inputs, outputs, reqs):
    if reqs[0] == "null":
        return
    og, y, dx = inputs[0], inputs[1], outputs[0]
    act, slope = _act_param(pack, params, inputs)
    launch(_fn("mx_act_bwd", og), og.size,
           (og, y, dx, numpy.int64(og.size), act, slope, numpy.int32(reqs[0] == "add")))


def _rrelu_forward(pack, params, inputs, outputs, reqs):
    if reqs[0] == "null" and reqs[1] == "null":
        return
    x, (y, mask) = inputs[0], outputs
    p = _param(pack, params, inputs)
    train = bool(params["_is_train"])
    seed, offset = params.get("_random_state") or (0, 0)
    launch(_fn("mx_rrelu_fwd", x), x.size,
           (x, y, mask, numpy.int64(x.size), numpy.uint64(seed), numpy.uint64(offset),
            p["lower"], p["upper"], numpy.float64(p["slope"]), numpy.int32(train),
            numpy.int32(_REQ[reqs[0]]), numpy.int32(_REQ[reqs[1]])))


def _rrelu_backward(inputs, outputs, reqs):
    if reqs[0] == "null":
        return
    og, mask, y = inputs
    launch(_fn("mx_rrelu_bwd", og), og.size,
           (og, mask, y, outputs[0], numpy.int64(og.size), numpy.int32(reqs[0] == "add")))


def _prelu_forward(inputs, outputs, reqs):
    if reqs[0] == "null":
        return
    x, g, y = inputs[0], inputs[1], outputs[0]
    _, chans, inner, gstride = _prelu_view(x, g)
    launch(_fn("mx_prelu_fwd", x), x.size,
           (x, g, y, numpy.int64(x.size), numpy.int64(chans), numpy.int64(inner),
            numpy.int64(gstride), numpy.int32(reqs[0] == "add")))


def _prelu_backward(inputs, outputs, reqs):
    og, x, g = inputs
    outer, chans, inner, gstride = _prelu_view(x, g)
    if reqs[0] != "null":
        launch(_fn("mx_prelu_bwd_data", x), x.size,
               (og, x, g, outputs[0], numpy.int64(x.size), numpy.int64(chans),
                numpy.int64(inner), numpy.int64(gstride), numpy.int32(reqs[0] == "add")))
    if reqs[1] != "null":
        launch_blocks(_fn("mx_prelu_bwd_gamma", x), g.size, _GAMMA_THREADS,
                      (og, x, outputs[1], numpy.int64(outer), numpy.int64(chans),
                       numpy.int64(inner), numpy.int64(g.size),
                       numpy.int32(reqs[1] == "add")))


def activation(pack):
    """Activation's compute; ``pack`` is the op's pack_params."""
    return lambda params, inputs, outputs, reqs: _act_forward(pack, params, inputs, outputs,
                                                              reqs)


def activation_backward(pack):
    """_backward_Activation's compute."""
    return lambda params, inputs, outputs, reqs: _act_backward(pack, params, inputs,
                                                               outputs, reqs)


def leaky(pack):
    """LeakyReLU's compute: PReLU (inputs data, gamma), rrelu (outputs
    output, mask) or an act functor, as the CPU kernel tells them apart."""
    def run(params, inputs, outputs, reqs):
        if len(inputs) == 2:
            _prelu_forward(inputs, outputs, reqs)
        elif params["act_type"] == "rrelu":
            _rrelu_forward(pack, params, inputs, outputs, reqs)
        else:
            _act_forward(pack, params, inputs, outputs, reqs)
    return run


def leaky_backward(pack):
    """_backward_LeakyReLU's compute: (out_grad, data, gamma) for PReLU,
    (out_grad, mask, out_data) for rrelu, else (out_grad, out_data)."""
    def run(params, inputs, outputs, reqs):
        if params["act_type"] == "rrelu":
            _rrelu_backward(inputs, outputs, reqs)
        elif len(inputs) == 3:
            _prelu_backward(inputs, outputs, reqs)
        else:
            _act_backward(pack, params, inputs, outputs, reqs)
    return run
