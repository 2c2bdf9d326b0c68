"""GPU compute of RNN and _backward_RNN: the steps of rnn_cpu.h with the
GEMMs through cuBLAS (cupy.matmul) and each step's gate nonlinearities
(forward and backward) as one RawKernel per mode and dtype, one thread per
(batch row, unit).  The reserve output has the CPU's layout (rnn_cpu.h's
RnnLayout, read here through the sizes of _rnn_cpu), so a reserve written by
either device serves the other's backward.  Dropout masks come from CuPy's
Philox stream as on the CPU (element j of layer l's mask from
(seed, offset + l * T*N*D*P + j)), so both devices drop the same elements.  Importing this module
without CuPy raises ImportError."""
import cupy
import numpy

from mx_ops.core._device_code import PHILOX_UNIFORM
from mx_ops.ops.rnn import rnn as _rnn

_MODES = {"rnn_relu": 0, "rnn_tanh": 1, "lstm": 2, "gru": 3}

# One thread per (n, j): n < N rows, j < H units.  a: the step's gate rows
# (N, G*H), input side, overwritten with the activated gates; s: the
# recurrent side (N, G*H); cp/ldcp: c_{t-1} (LSTM) or h_{t-1} (GRU);
# extra: the new c (LSTM) or hn (GRU); h/ldh: where h goes (o*tanh(c)
# with projection); lens: valid steps per row or NULL.
_SOURCE = PHILOX_UNIFORM.replace("{", "{{").replace("}", "}}") + r"""
__device__ __forceinline__ {T} sig({T} x) {{ return {T}(1) / ({T}(1) + exp(-x)); }}

extern "C" __global__ void rnn_fwd_{T}(
    int mode, long long N, long long H, {T}* a, const {T}* s, const {T}* cp, long long ldcp,
    {T}* extra, {T}* h, long long ldh, const long long* lens, long long t,
    int clip, int clip_nan, double cmin, double cmax) {{
  long long id = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (id >= N * H) return;
  long long n = id / H, j = id % H, G = (mode == 2 ? 4 : mode == 3 ? 3 : 1) * H;
  {T}* an = a + n * G;
  const {T}* sn = s + n * G;
  if (lens && t >= lens[n]) {{
    for (long long k = j; k < G; k += H) an[k] = {T}(0);
    if (mode == 2) extra[n * H + j] = cp[n * ldcp + j];
    if (mode == 3) extra[n * H + j] = {T}(0);
    h[n * ldh + j] = {T}(0);           // projection input; the carry follows the GEMM
    return;
  }}
  if (mode == 2) {{
    {T} i = sig(an[j] + sn[j]), f = sig(an[H + j] + sn[H + j]);
    {T} g = tanh(an[2 * H + j] + sn[2 * H + j]), o = sig(an[3 * H + j] + sn[3 * H + j]);
    {T} c = f * cp[n * ldcp + j] + i * g;
    if (clip) {{
      if (isnan(c)) {{ if (clip_nan) c = {T}(cmin); }}
      else c = c < {T}(cmin) ? {T}(cmin) : (c > {T}(cmax) ? {T}(cmax) : c);
    }}
    an[j] = i; an[H + j] = f; an[2 * H + j] = g; an[3 * H + j] = o;
    extra[n * H + j] = c;
    h[n * ldh + j] = o * tanh(c);
  }} else if (mode == 3) {{
    {T} r = sig(an[j] + sn[j]), z = sig(an[H + j] + sn[H + j]), hn = sn[2 * H + j];
    {T} nn = tanh(an[2 * H + j] + r * hn);
    an[j] = r; an[H + j] = z; an[2 * H + j] = nn;
    extra[n * H + j] = hn;
    h[n * ldh + j] = ({T}(1) - z) * nn + z * cp[n * ldcp + j];
  }} else {{
    {T} v = an[j] + sn[j];
    v = mode == 1 ? tanh(v) : (v > {T}(0) ? v : {T}(0));
    an[j] = v;
    h[n * ldh + j] = v;
  }}
}}

// dh: the gradient reaching h (or o*tanh(c)), (N, H); dc in/out (LSTM);
// writes dai, dah (GRU) and the direct part of dh_{{t-1}} (GRU) into dhp.
extern "C" __global__ void rnn_bwd_{T}(
    int mode, long long N, long long H, const {T}* a, const {T}* cst, const {T}* cp,
    long long ldcp, const {T}* hn, const {T}* dh, {T}* dc, {T}* dai, {T}* dah, {T}* dhp,
    const long long* lens, long long t, int clip, double cmin, double cmax) {{
  long long id = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (id >= N * H) return;
  long long n = id / H, j = id % H, G = (mode == 2 ? 4 : mode == 3 ? 3 : 1) * H;
  const {T}* an = a + n * G;
  {T}* di = dai + n * G;
  {T} d = dh[n * H + j];
  if (lens && t >= lens[n]) {{
    for (long long k = j; k < G; k += H) {{ di[k] = {T}(0); if (mode == 3) dah[n * G + k] = {T}(0); }}
    if (mode == 3) dhp[n * H + j] = {T}(0);
    return;
  }}
  if (mode == 2) {{
    {T} i = an[j], f = an[H + j], g = an[2 * H + j], o = an[3 * H + j];
    {T} ct = cst[n * H + j], tc = tanh(ct);
    {T} dct = dc[n * H + j] + d * o * ({T}(1) - tc * tc);
    if (clip && (ct <= {T}(cmin) || ct >= {T}(cmax))) dct = {T}(0);
    di[j] = dct * g * i * ({T}(1) - i);
    di[H + j] = dct * cp[n * ldcp + j] * f * ({T}(1) - f);
    di[2 * H + j] = dct * i * ({T}(1) - g * g);
    di[3 * H + j] = d * tc * o * ({T}(1) - o);
    dc[n * H + j] = dct * f;
  }} else if (mode == 3) {{
    {T} r = an[j], z = an[H + j], nn = an[2 * H + j];
    {T} dn = d * ({T}(1) - z) * ({T}(1) - nn * nn);
    {T} dr = dn * hn[n * H + j] * r * ({T}(1) - r);
    {T} dz = d * (cp[n * ldcp + j] - nn) * z * ({T}(1) - z);
    di[j] = dr; di[H + j] = dz; di[2 * H + j] = dn;
    dah[n * G + j] = dr; dah[n * G + H + j] = dz; dah[n * G + 2 * H + j] = dn * r;
    dhp[n * H + j] = d * z;
  }} else {{
    {T} v = an[j];
    di[j] = mode == 1 ? d * ({T}(1) - v * v) : (v > {T}(0) ? d : {T}(0));
  }}
}}

// Dropout after a layer: mask 1/pkeep or 0 from the Philox stream, xn = y * mask.
extern "C" __global__ void rnn_drop_{T}(const {T}* y, {T}* mask, {T}* xn, long long n,
                                       unsigned long long seed, unsigned long long offset,
                                       float pkeep) {{
  long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (j >= n) return;
  {T} m = mx_philox_uniform(seed, offset + (unsigned long long)j) < pkeep
              ? {T}(pkeep > 0.0f ? 1.0f / pkeep : 0.0f) : {T}(0);
  mask[j] = m;
  xn[j] = y[j] * m;
}}
"""

_TYPES = {numpy.dtype("float32"): "float", numpy.dtype("float64"): "double"}
_MODULES = {}


def compile_cases():
    """The kernel source for each dtype (tests/test_gpu_sources.py compiles them)."""
    return [("raw", f"rnn {t}", _SOURCE.format(T=t), ("rnn_fwd_" + t, "rnn_bwd_" + t,
                                                     "rnn_drop_" + t))
            for t in _TYPES.values()]


def _kernels(dtype):
    t = _TYPES[numpy.dtype(dtype)]
    if t not in _MODULES:
        _MODULES[t] = cupy.RawModule(code=_SOURCE.format(T=t))
    m = _MODULES[t]
    return [m.get_function(f"rnn_{k}_{t}") for k in ("fwd", "bwd", "drop")]


class _Layout:
    """rnn_cpu.h's RnnLayout: offsets in the parameter vector and reserve."""

    def __init__(self, params, T, N, I):
        self.L, self.D, self.H, self.P = _rnn._dims(params)
        self.G = _rnn.GATES[params["mode"]]
        self.T, self.N, self.I = T, N, I
        self.mode = params["mode"]
        self.proj = params["projection_size"] is not None
        self.pdrop = params["p"]
        self.gh = self.G * self.H
        self.rows = T * N
        self.y_size = self.rows * self.D * self.P

    def inp(self, l):
        return self.I if l == 0 else self.D * self.P

    def w_block(self, l):
        return self.gh * (self.inp(l) + self.P) + (self.P * self.H if self.proj else 0)

    def w_i(self, l, d):
        return sum(self.D * self.w_block(k) for k in range(l)) + d * self.w_block(l)

    def w_h(self, l, d):
        return self.w_i(l, d) + self.gh * self.inp(l)

    def w_r(self, l, d):
        return self.w_h(l, d) + self.gh * self.P

    def b_i(self, l, d):
        return self.w_i(self.L, 0) + (l * self.D + d) * 2 * self.gh

    def dropout(self, l):
        return l > 0 and self.pdrop > 0

    def y(self, l):
        return sum(self.y_size * (3 if self.dropout(k + 1) else 1) for k in range(l))

    def extras(self):
        return (1 if self.mode in ("lstm", "gru") else 0) + (1 if self.proj else 0)

    def gates(self, l, d):
        block = self.rows * (self.gh + self.extras() * self.H)
        return self.y(self.L) + (l * self.D + d) * block

    def extra(self, l, d, k):
        return self.gates(l, d) + self.rows * (self.gh + k * self.H)


def _views(lo, flat, l, d):
    """W_i2h, W_h2h, W_h2r (or None), b_i2h, b_h2h of flat (or its gradient)."""
    gh, inp, P, H = lo.gh, lo.inp(l), lo.P, lo.H
    wi = flat[lo.w_i(l, d):lo.w_i(l, d) + gh * inp].reshape(gh, inp)
    wh = flat[lo.w_h(l, d):lo.w_h(l, d) + gh * P].reshape(gh, P)
    wr = flat[lo.w_r(l, d):lo.w_r(l, d) + P * H].reshape(P, H) if lo.proj else None
    b = lo.b_i(l, d)
    return wi, wh, wr, flat[b:b + gh], flat[b + gh:b + 2 * gh]


def _launch(fn, total, args):
    if total == 0:
        return
    block = 256
    fn(((total + block - 1) // block,), (block,), args)


def _lengths(params, lo, args, lstm):
    """The sequence_length argument (after data, parameters, state and, for
    an LSTM, the cell state) clipped to [0, T], or None when not used."""
    if not params["use_sequence_length"]:
        return None
    arr = args[4 if lstm else 3]
    return cupy.clip(cupy.nan_to_num(arr.astype(cupy.float64), nan=0.0), 0,
                     lo.T).astype(cupy.int64)


def _ptr(a):
    return 0 if a is None else a


def _clip_args(params):
    clip = params["lstm_state_clip_min"] is not None and params["mode"] == "lstm"
    return (numpy.int32(clip), numpy.float64(params["lstm_state_clip_min"] if clip else 0),
            numpy.float64(params["lstm_state_clip_max"] if clip else 0))


def _put(out, value, req):
    if req == "add":
        out += value
    elif req != "null":
        out[...] = value


def _padded(lo, lens):
    """(T, N) bool: the padded steps."""
    return cupy.arange(lo.T)[:, None] >= lens[None, :]


def forward(params, inputs, outputs, reqs):
    data, flat, hx = inputs[0], inputs[1], inputs[2]
    lstm = params["mode"] == "lstm"
    cx = inputs[3] if lstm else None
    T, N, I = data.shape
    lo = _Layout(params, T, N, I)
    res = outputs[-1]
    fwd, _, drop = _kernels(data.dtype)
    lens = _lengths(params, lo, inputs, lstm)
    L, D, H, P, gh = lo.L, lo.D, lo.H, lo.P, lo.gh
    DP, NH = D * P, N * H
    clip, cmin, cmax = _clip_args(params)
    train = params.get("_is_train", False)
    x = data.reshape(lo.rows, I)
    for l in range(L):
        y = res[lo.y(l):lo.y(l) + lo.y_size].reshape(T, N, DP)
        for d in range(D):
            wi, wh, wr, bi, bh = _views(lo, flat, l, d)
            a = res[lo.gates(l, d):lo.gates(l, d) + lo.rows * gh].reshape(T, N, gh)
            ext = res[lo.extra(l, d, 0):lo.extra(l, d, 0) + lo.rows * H].reshape(T, N, H) \
                if lstm or params["mode"] == "gru" else None
            rb = res[lo.extra(l, d, 1 if lstm else 0):][:lo.rows * H].reshape(T, N, H) \
                if lo.proj else None
            a[...] = (x @ wi.T + bi).reshape(T, N, gh)
            k = l * D + d
            hp, cp = hx[k], cx[k] if lstm else None
            for s in range(T):
                t = s if d == 0 else T - 1 - s
                sb = cupy.ascontiguousarray(hp @ wh.T + bh)
                cprev = cupy.ascontiguousarray(cp if lstm else hp)
                target = rb[t] if lo.proj else cupy.empty((N, H), data.dtype)
                _launch(fwd, NH, (numpy.int32(_MODES[params["mode"]]), numpy.int64(N),
                                  numpy.int64(H), a[t], sb, cprev, numpy.int64(cprev.shape[1]),
                                  _ptr(ext[t] if ext is not None else None), target,
                                  numpy.int64(H), _ptr(lens), numpy.int64(t), clip,
                                  numpy.int32(params["lstm_state_clip_nan"]), cmin, cmax))
                h = target @ wr.T if lo.proj else target
                if lens is not None:
                    pad = (t >= lens)[:, None]
                    h = cupy.where(pad, hp, h)
                y[t, :, d * P:(d + 1) * P] = h
                hp = y[t, :, d * P:(d + 1) * P]
                cp = ext[t] if lstm else None
        if lo.dropout(l + 1):
            base = lo.y(l)
            mask = res[base + lo.y_size:base + 2 * lo.y_size].reshape(T, N, DP)
            xn = res[base + 2 * lo.y_size:base + 3 * lo.y_size].reshape(T, N, DP)
            if train:
                seed, offset = params["_random_state"]
                _launch(drop, lo.y_size, (y, mask, xn, numpy.int64(lo.y_size),
                                          numpy.uint64(seed),
                                          numpy.uint64(int(offset) + l * lo.y_size),
                                          numpy.float32(1.0 - numpy.float32(params["p"]))))
            else:
                mask.fill(1)
                xn[...] = y
            x = xn.reshape(lo.rows, DP)
        else:
            x = y.reshape(lo.rows, DP)
    ylast = res[lo.y(L - 1):lo.y(L - 1) + lo.y_size].reshape(T, N, DP)
    out = ylast if lens is None else cupy.where(_padded(lo, lens)[:, :, None], 0, ylast)
    _put(outputs[0], out, reqs[0])
    if params["state_outputs"]:
        for l in range(L):
            y = res[lo.y(l):lo.y(l) + lo.y_size].reshape(T, N, DP)
            for d in range(D):
                k, t = l * D + d, (T - 1 if d == 0 else 0)
                _put(outputs[1][k], y[t, :, d * P:(d + 1) * P] if T else hx[k], reqs[1])
                if lstm:
                    c = res[lo.extra(l, d, 0):][:lo.rows * H].reshape(T, N, H)[t] if T \
                        else cx[k]
                    _put(outputs[2][k], c, reqs[2])


def backward(params, inputs, outputs, reqs):
    lstm, gru = params["mode"] == "lstm", params["mode"] == "gru"
    nvis = len(_rnn._visible(params))
    heads = inputs[:nvis]
    rest = inputs[nvis:]
    data, flat, hx = rest[0], rest[1], rest[2]
    cx = rest[3] if lstm else None
    res = inputs[-1]
    T, N, I = data.shape
    lo = _Layout(params, T, N, I)
    _, bwd, _ = _kernels(data.dtype)
    lens = _lengths(params, lo, rest, lstm)
    L, D, H, P, gh = lo.L, lo.D, lo.H, lo.P, lo.gh
    DP, NH = D * P, N * H
    clip, cmin, cmax = _clip_args(params)
    dw = cupy.zeros_like(flat)
    dhx = cupy.empty_like(hx)
    dcx = cupy.empty_like(cx) if lstm else None
    dy = heads[0].copy()
    if lens is not None:
        dy[_padded(lo, lens)] = 0
    dx = None
    for l in range(L - 1, -1, -1):
        xin = data.reshape(lo.rows, I) if l == 0 else \
            res[(lo.y(l - 1) + 2 * lo.y_size) if lo.dropout(l) else lo.y(l - 1):][
                :lo.y_size].reshape(lo.rows, DP)
        y = res[lo.y(l):lo.y(l) + lo.y_size].reshape(T, N, DP)
        dx = cupy.zeros((lo.rows, lo.inp(l)), data.dtype)
        for d in range(D):
            k = l * D + d
            wi, wh, wr, _, _ = _views(lo, flat, l, d)
            gwi, gwh, gwr, gbi, gbh = _views(lo, dw, l, d)
            a = res[lo.gates(l, d):lo.gates(l, d) + lo.rows * gh].reshape(T, N, gh)
            ext = res[lo.extra(l, d, 0):][:lo.rows * H].reshape(T, N, H) \
                if lstm or gru else None
            rb = res[lo.extra(l, d, 1 if lstm else 0):][:lo.rows * H].reshape(T, N, H) \
                if lo.proj else None
            dai = cupy.empty((T, N, gh), data.dtype)
            dah = cupy.empty((T, N, gh), data.dtype) if gru else dai
            dhall = cupy.empty((T, N, P), data.dtype) if lo.proj else None
            dhp = cupy.zeros((N, H), data.dtype)
            dhn = heads[1][k].copy() if params["state_outputs"] else \
                cupy.zeros((N, P), data.dtype)
            dc = (heads[2][k].copy() if params["state_outputs"] else
                  cupy.zeros((N, H), data.dtype)) if lstm else cupy.zeros((1,), data.dtype)
            for s in range(T - 1, -1, -1):
                t = s if d == 0 else T - 1 - s
                tp = t - 1 if d == 0 else t + 1
                hp = hx[k] if s == 0 else y[tp, :, d * P:(d + 1) * P]
                dh = cupy.ascontiguousarray(dy[t, :, d * P:(d + 1) * P] + dhn)
                dg = dh
                if lo.proj:
                    dhall[t] = dh
                    dg = cupy.ascontiguousarray(dh @ wr)
                cprev = cupy.ascontiguousarray(
                    (cx[k] if s == 0 else ext[tp]) if lstm else hp)
                _launch(bwd, NH, (numpy.int32(_MODES[params["mode"]]), numpy.int64(N),
                                  numpy.int64(H), a[t], _ptr(ext[t] if lstm else None), cprev,
                                  numpy.int64(cprev.shape[1]),
                                  _ptr(ext[t] if gru else None), dg, dc, dai[t], dah[t], dhp,
                                  _ptr(lens), numpy.int64(t), clip, cmin, cmax))
                dhn = dah[t] @ wh
                if gru:
                    dhn += dhp
                if lens is not None:
                    dhn = cupy.where((t >= lens)[:, None], dh, dhn)
            dhx[k] = dhn
            if lstm:
                dcx[k] = dc
            flat_dai, flat_dah = dai.reshape(lo.rows, gh), dah.reshape(lo.rows, gh)
            dx += flat_dai @ wi
            gwi += flat_dai.T @ xin
            ys = y[:, :, d * P:(d + 1) * P]
            if T > 1:
                cur, prev = (slice(1, T), slice(0, T - 1)) if d == 0 else \
                    (slice(0, T - 1), slice(1, T))
                gwh += dah[cur].reshape(-1, gh).T @ ys[prev].reshape(-1, P)
            if T > 0:
                gwh += dah[0 if d == 0 else T - 1].T @ hx[k]
            if lo.proj:
                gwr += dhall.reshape(-1, P).T @ rb.reshape(-1, H)
            gbi += flat_dai.sum(axis=0)
            gbh += flat_dah.sum(axis=0)
        if l > 0:
            dy = dx.reshape(T, N, DP)
            if lo.dropout(l):
                base = lo.y(l - 1)
                dy = dy * res[base + lo.y_size:base + 2 * lo.y_size].reshape(T, N, DP)
    _put(outputs[0], dx.reshape(data.shape), reqs[0])
    _put(outputs[1], dw, reqs[1])
    _put(outputs[2], dhx, reqs[2])
    if lstm:
        _put(outputs[3], dcx, reqs[3])
