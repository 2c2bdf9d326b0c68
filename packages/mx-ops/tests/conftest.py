"""Helpers shared by the operator tests, as fixtures (tests run with
--import-mode=importlib, so they cannot import a sibling module): ``nn``
for the neural-network operators, ``kernel_worker`` for probes that could
kill the process, ``int_rules`` for integer edge values, ``build_cxx`` for
C++ built for the host."""
import ctypes
import math
import pickle
import selectors
import shutil
import signal
import struct
import subprocess
import sys
import types

import numpy as np
import pytest

from mx_ops import invoke

TOL = {"float16": 2e-2, "float32": 2e-5, "float64": 1e-10}


def check_reqs(name, inputs, expected, params, dtype, nout=None):
    """Runs ``name`` under write, inplace-less add and null for each output
    and compares with ``expected`` (list of arrays)."""
    expected = [np.asarray(e) for e in expected]
    tol = TOL[dtype]
    got = invoke(name, inputs, **params)
    got = got if isinstance(got, list) else [got]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.astype(np.float64), e, rtol=tol, atol=tol)
    rng = np.random.default_rng(1)
    base = [rng.standard_normal(e.shape).astype(dtype) for e in expected]
    outs = [b.copy() for b in base]
    invoke(name, inputs, out=outs if len(outs) > 1 else outs[0], req="add", **params)
    for o, b, e in zip(outs, base, expected):
        np.testing.assert_allclose(o.astype(np.float64), b.astype(np.float64) + e,
                                   rtol=tol, atol=tol * 4)
    outs = [b.copy() for b in base]
    invoke(name, inputs, out=outs if len(outs) > 1 else outs[0], req="null", **params)
    for o, b in zip(outs, base):
        np.testing.assert_array_equal(o, b)


def numeric_grad(f, x, og, eps=1e-6):
    """d sum(f(x) * og) / dx by central differences (float64)."""
    x = x.astype(np.float64).copy()
    g = np.zeros_like(x)
    flat, gflat = x.reshape(-1), g.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        hi = np.sum(f(x) * og)
        flat[i] = old - eps
        lo = np.sum(f(x) * og)
        flat[i] = old
        gflat[i] = (hi - lo) / (2 * eps)
    return g


@pytest.fixture
def nn():
    """check_reqs, numeric_grad and TOL."""
    return types.SimpleNamespace(check_reqs=check_reqs, numeric_grad=numeric_grad, TOL=TOL)


# The loop of a kernel worker: reads (op, inputs, params, req, out)
# messages, runs mx_ops.invoke and answers ("ok", outputs) or ("error",
# message).  Length-prefixed pickles over stdin / stdout, between two
# processes of this test session.
_WORKER = r"""
import pickle, struct, sys
import numpy as np
from mx_ops import invoke
src, dst = sys.stdin.buffer, sys.stdout.buffer
while True:
    head = src.read(8)
    if len(head) < 8:
        break
    op, inputs, params, req, out = pickle.loads(src.read(struct.unpack("<Q", head)[0]))
    try:
        if out is not None:
            out = [o.copy() for o in out]
            invoke(op, inputs, out=out if len(out) > 1 else out[0], req=req, **params)
            got = out
        else:
            got = invoke(op, inputs, req=req, **params)
            got = got if isinstance(got, list) else [got]
        msg = ("ok", [np.asarray(g) for g in got])
    except Exception as e:
        msg = ("error", f"{type(e).__name__}: {e}")
    data = pickle.dumps(msg)
    dst.write(struct.pack("<Q", len(data)) + data)
    dst.flush()
"""


class WorkerDied(AssertionError):
    """The kernel worker was killed (a signal) or hung while running a call."""


class KernelWorker:
    """Runs operator calls in a child process, so that a kernel that traps
    (SIGFPE, SIGSEGV) or hangs fails the test that made the call instead of
    killing pytest; the next call starts a fresh child."""

    def __init__(self, timeout=60.0):
        self.timeout = timeout
        self.proc = None

    def _start(self):
        self.proc = subprocess.Popen([sys.executable, "-c", _WORKER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)

    def _read(self, n):
        """n bytes of the reply, b'' once the child has exited, or None after
        ``timeout`` seconds without a reply."""
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            if not sel.select(self.timeout):
                return None
        finally:
            sel.close()
        return self.proc.stdout.read(n)

    def _died(self, what, hung):
        proc, self.proc = self.proc, None
        if hung:
            proc.kill()
        code = proc.wait(timeout=self.timeout)
        why = (f"hung for {self.timeout} s" if hung
               else f"was killed by {signal.Signals(-code).name}" if code < 0
               else f"exited with status {code}")
        raise WorkerDied(f"the kernel worker {why} running {what}")

    def call(self, op, inputs, req="write", out=None, **params):
        """("ok", [outputs]) or ("error", message) of invoke(op, inputs, ...);
        raises WorkerDied when the child died or hung."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        shown = ", ".join(f"{a.dtype}{a.reshape(-1)[:8].tolist()}" for a in inputs)
        what = f"{op}({shown}, {params}, req={req})"
        data = pickle.dumps((op, list(inputs), params, req, out))
        try:
            self.proc.stdin.write(struct.pack("<Q", len(data)) + data)
            self.proc.stdin.flush()
        except BrokenPipeError:
            self._died(what, hung=False)
        head = self._read(8)
        if head is None or len(head) < 8:
            self._died(what, hung=head is None)
        return pickle.loads(self.proc.stdout.read(struct.unpack("<Q", head)[0]))

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait(timeout=self.timeout)
            self.proc = None


@pytest.fixture(scope="session")
def build_cxx(tmp_path_factory):
    """build(name, source) -> ctypes.CDLL of C++17 ``source`` compiled as a
    shared library (device code built for the host, say)."""
    def build(name, source):
        cxx = shutil.which("c++") or shutil.which("g++")
        if cxx is None:
            pytest.fail("a C++ compiler ('c++') is required to build the test library")
        d = tmp_path_factory.mktemp(name)
        (d / f"{name}.cpp").write_text(source)
        subprocess.run([cxx, "-shared", "-fPIC", "-O2", "-std=c++17", str(d / f"{name}.cpp"),
                        "-o", str(d / f"{name}.so")], check=True)
        return ctypes.CDLL(str(d / f"{name}.so"))
    return build


@pytest.fixture(scope="module")
def kernel_worker():
    """A KernelWorker shared by a module's tests."""
    worker = KernelWorker()
    yield worker
    worker.close()


# --- src/int_arith.h's rules, written again in Python integers -----------------------
def _wrap(v, dtype):
    """Python int v modulo 2^bits, into dtype's range."""
    info = np.iinfo(dtype)
    return (int(v) - info.min) % (1 << info.bits) + info.min


def _to_int(x, dtype):
    """Float x into an integer dtype: truncation; NaN, +-inf and values out of
    int32 (int64 for int64) give that type's MIN; int8 / uint8 then wrap."""
    lo = -(1 << (63 if np.dtype(dtype).itemsize == 8 else 31))
    x = float(x)
    return _wrap(int(x) if lo <= x < -lo else lo, dtype)    # NaN fails both comparisons


def _div(a, b):
    """Truncation toward zero; 0 for b == 0."""
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _mod(a, b):
    return 0 if b == 0 else a % b          # Python's: the divisor's sign


def _power(a, b):
    """Exact for b >= 0 (modulo 2^64 here, wrapped later); 1 / a ** -b
    truncated for b < 0, 0 ** -n included (0, as a / 0)."""
    if b >= 0:
        return pow(a, b, 1 << 64)
    return 1 if a == 1 else (-1 if b % 2 else 1) if a == -1 else 0


def _edges(dtype):
    """MIN, MIN + 1, -1, 0, 1, 2, MAX - 1, MAX (those dtype holds)."""
    info = np.iinfo(dtype)
    vals = (info.min, info.min + 1, -1, 0, 1, 2, info.max - 1, info.max)
    return np.array(sorted({v for v in vals if info.min <= v <= info.max}), dtype)


# elemwise kernel -> f(a, b, dtype) on Python ints, before wrapping into dtype
_BINARY = {
    "add": lambda a, b, t: a + b, "sub": lambda a, b, t: a - b, "mul": lambda a, b, t: a * b,
    "div": lambda a, b, t: _div(a, b), "mod": lambda a, b, t: _mod(a, b),
    "power": lambda a, b, t: _power(a, b),
    "maximum": lambda a, b, t: max(a, b), "minimum": lambda a, b, t: min(a, b),
    "hypot": lambda a, b, t: _to_int(math.hypot(a, b), t),
    "equal": lambda a, b, t: a == b, "not_equal": lambda a, b, t: a != b,
    "greater": lambda a, b, t: a > b, "greater_equal": lambda a, b, t: a >= b,
    "lesser": lambda a, b, t: a < b, "lesser_equal": lambda a, b, t: a <= b,
    "logical_and": lambda a, b, t: bool(a) and bool(b),
    "logical_or": lambda a, b, t: bool(a) or bool(b),
    "logical_xor": lambda a, b, t: bool(a) != bool(b),
}
# elemwise kernel -> f(x) on Python ints, before wrapping
_UNARY = {
    "negative": lambda x: -x, "abs": abs, "sign": lambda x: (x > 0) - (x < 0),
    "square": lambda x: x * x, "relu": lambda x: max(x, 0), "copy": lambda x: x,
    "logical_not": lambda x: int(x == 0),
}


def _binary(kernel, a, b, dtype):
    """The elementwise kernel over broadcast arrays a and b, by the rules."""
    a, b = np.broadcast_arrays(a, b)
    out = [_wrap(_BINARY[kernel](int(x), int(y), dtype), dtype)
           for x, y in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist())]
    return np.array(out, dtype).reshape(a.shape)


def _unary(kernel, x, dtype):
    out = [_wrap(_UNARY[kernel](int(v)), dtype) for v in x.reshape(-1).tolist()]
    return np.array(out, dtype).reshape(x.shape)


@pytest.fixture(scope="session")
def int_rules():
    """src/int_arith.h's rules in Python integers: wrap, to_int, div, mod,
    power, edges, binary(kernel, a, b, dtype), unary(kernel, x, dtype), and
    the kernel tables BINARY and UNARY."""
    return types.SimpleNamespace(wrap=_wrap, to_int=_to_int, div=_div, mod=_mod, power=_power,
                                 edges=_edges, binary=_binary, unary=_unary, BINARY=_BINARY,
                                 UNARY=_UNARY)


# --- samplers.h's direct layout, recomputed from mx_storage's Philox blocks ---

def _direct_variates(seed, offset, n, dist, dtype):
    """The standard variates (uniform, normal or exponential) of elements
    0 .. n-1 of the direct layout, in float64 from the same words: float32
    (and float16) take one 32-bit word per element (4 per block), float64 two
    (2 per block).  See mx_ops/ops/random/samplers.h."""
    from mx_storage import _philox
    per = 2 if np.dtype(dtype) == np.float64 else 4
    key = (seed & 0xffffffff, seed >> 32)
    words = []
    for blk in range((n + per - 1) // per):
        c = offset + blk
        words.extend(_philox.philox_block((c & 0xffffffff, c >> 32, 4, 0), key))
    w = np.array(words, np.uint64)
    if per == 2:      # 53-bit uniforms u, 1 - u in (0, 1]
        u = ((w[0::2] << np.uint64(21)) | (w[1::2] >> np.uint64(11))).astype(np.float64) * 2.0 ** -53
        if dist == "normal":
            r, t = np.sqrt(-2 * np.log(1 - u[0::2])), 2 * np.pi * u[1::2]
            z = np.stack([r * np.cos(t), r * np.sin(t)], axis=1).reshape(-1)
        else:
            z = -np.log(1 - u) if dist == "exponential" else u
        return z[:n]
    u24 = (w >> np.uint64(8)).astype(np.float64) * 2.0 ** -24                 # [0, 1)
    # (0, 1], formed in float32 as the kernel does (31 bits rounded to 24)
    u31 = ((w >> np.uint64(1)).astype(np.float32) * np.float32(2.0 ** -31)
           + np.float32(2.0 ** -32)).astype(np.float64)
    if dist == "normal":      # pairs (w0, w1), (w2, w3): radius, angle
        r, t = np.sqrt(-2 * np.log(u31[0::2])), 2 * np.pi * u24[1::2]
        z = np.stack([r * np.cos(t), r * np.sin(t)], axis=1).reshape(-1)
    else:
        z = -np.log(u31) if dist == "exponential" else u24
    return z[:n]


@pytest.fixture(scope="session")
def direct_variates():
    """variates(seed, offset, n, dist, dtype): samplers.h's direct layout in
    NumPy (float64 arithmetic; the float32 kernels' logf/sincos agree within
    a few float32 ulp)."""
    return _direct_variates
