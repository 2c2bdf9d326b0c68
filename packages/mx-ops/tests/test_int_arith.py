"""Integer arithmetic that no data value traps on (issue 12, finding 1).

MIN / -1 and MIN % -1 killed the process with SIGFPE (x86's idiv traps on
them), and C leaves more undefined: -MIN, overflowing products and powers,
floats out of range converted to integers.  src/int_arith.h fixes a result
for each; the ``int_rules`` fixture writes those rules again in Python
integers, and here every kernel path is held to them -- elementwise,
broadcast, scalar, reflected scalar, req 'add' -- each call in a kernel
worker process, so that a trap fails its test instead of killing pytest.
MXNet 1.9.1's own outputs (data/int_edges_mxnet191.json) must match
wherever MXNet did not crash, and the GPU's copy of the rules
(_device_code.INT_ARITH), compiled for the host, must give the CPU
kernels' results.  test_int_fuzz.py fuzzes every integer operator of the
registry with the same rules."""
import ctypes
import json
import math
import pathlib

import numpy as np
import pytest

from mx_ops.core import _device_code
from mx_ops.core.dtypes import DTYPE_NAMES
from mx_ops.ops.elemwise import _elemwise_cpu, elemwise

INT_DTYPES = [d for d in DTYPE_NAMES if np.dtype(d).kind in "iu"]
FLOAT_DTYPES = [d for d in DTYPE_NAMES if np.dtype(d).kind == "f"]
INT_UNARY = [k for k, *_ in elemwise.UNARY.values() if k not in _elemwise_cpu.float_only_unary()]
REFERENCE = pathlib.Path(__file__).parent / "data" / "int_edges_mxnet191.json"


def run(worker, op, inputs, **params):
    status, got = worker.call(op, inputs, **params)
    assert status == "ok", got
    return got[0]


def pairs(rules, dtype):
    """Every (a, b) pair of edge values, as two arrays."""
    e = rules.edges(dtype)
    return np.repeat(e, e.size), np.tile(e, e.size)


# --- the finding: MIN / -1 and MIN % -1, on every path ------------------------------------
def _path_call(path, kernel, lhs, rhs):
    """(op, inputs, params) of lhs <kernel> rhs on one path; a scalar side is
    a one-element array, passed as the float64 the scalar ops take."""
    elem, bcast = elemwise.BINARY[kernel][0][0], elemwise.BINARY[kernel][1][0]
    if path == "elementwise":
        return elem, [lhs, rhs], {}
    if path == "broadcast":
        return bcast, [lhs, rhs[:1]], {}
    if path == "scalar":
        return f"_{kernel}_scalar", [lhs], {"scalar": float(rhs[0])}
    return f"_r{kernel}_scalar", [rhs], {"scalar": float(lhs[0])}   # reflected: scalar op array


PATHS = ["elementwise", "broadcast", "scalar", "reflected"]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
@pytest.mark.parametrize("kernel", ["div", "mod"])
def test_min_by_minus_one(kernel_worker, kernel, dtype, path):
    """The issue's repro: MIN / -1 == MIN and MIN % -1 == 0 (NumPy's
    wrap-around), where MXNet 1.9.1 (and this project before) died of
    SIGFPE on int32 and int64.  MIN as a float64 scalar is -2^bits exactly."""
    lo = int(np.iinfo(dtype).min)
    want = {"div": lo, "mod": 0}[kernel]
    op, inputs, params = _path_call(path, kernel, np.full(3, lo, dtype), np.full(3, -1, dtype))
    assert run(kernel_worker, op, inputs, **params).tolist() == [want] * 3
    # req 'add' runs the same expression
    status, got = kernel_worker.call(op, inputs, req="add", out=[np.ones(3, dtype)], **params)
    assert status == "ok" and got[0].tolist() == [want + 1] * 3


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("kernel", ["div", "mod"])
def test_zero_divisor_gives_zero(kernel_worker, int_rules, kernel, dtype, path):
    """The project's rule for b == 0 (NumPy's too), on every path; a scalar
    divisor of 0.5 becomes 0 first."""
    e = int_rules.edges(dtype)
    zero = np.zeros(e.size, dtype)
    op, inputs, params = _path_call(path, kernel, e, zero)
    assert not run(kernel_worker, op, inputs, **params).any()
    if path == "scalar":
        assert not run(kernel_worker, op, inputs, scalar=0.5).any()


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("kernel", sorted(elemwise.BINARY))
def test_binary_kernels_on_every_pair_of_edge_values(kernel_worker, int_rules, kernel, dtype):
    """All pairs of edge values, elementwise and broadcast (a column of
    every a against a row of every b)."""
    a, b = pairs(int_rules, dtype)
    want = int_rules.binary(kernel, a, b, dtype)
    elem, bcast = elemwise.BINARY[kernel][0][0], elemwise.BINARY[kernel][1][0]
    np.testing.assert_array_equal(run(kernel_worker, elem, [a, b]), want)
    e = int_rules.edges(dtype)
    got = run(kernel_worker, bcast, [e.reshape(-1, 1), e.reshape(1, -1)])
    np.testing.assert_array_equal(got.reshape(-1), want)


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("kernel", sorted(elemwise.BINARY))
def test_scalar_kernels_on_edge_values(kernel_worker, int_rules, kernel, dtype):
    """array op scalar and scalar op array with every edge value as the
    scalar, a float64 converted to the dtype first (so int64's MAX, which
    rounds to 2^63, becomes MIN)."""
    e = int_rules.edges(dtype)
    for name, (k, reflected, _) in elemwise.SCALAR.items():
        if k != kernel:
            continue
        for s in e.tolist():
            col = np.full(e.size, int_rules.to_int(float(s), dtype), dtype)
            want = int_rules.binary(kernel, *((col, e) if reflected else (e, col)), dtype)
            got = run(kernel_worker, name, [e], scalar=float(s))
            np.testing.assert_array_equal(got, want, err_msg=f"{name}, scalar {s}")


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("kernel", INT_UNARY)
def test_unary_kernels_on_edge_values(kernel_worker, int_rules, kernel, dtype):
    """-MIN == abs(MIN) == MIN; squares wrap."""
    name = next(n for n, (k, *_) in elemwise.UNARY.items() if k == kernel)
    e = int_rules.edges(dtype)
    np.testing.assert_array_equal(run(kernel_worker, name, [e]),
                                  int_rules.unary(kernel, e, dtype))


def test_power_is_exact_and_wraps(kernel_worker):
    """NumPy's integer power (exact, wrapping) where MXNet 1.9.1 rounded
    through float32; a negative exponent truncates 1 / a ** -b."""
    a = np.array([2, 3, 3, 0, -1, -1, 1, -2, 7], np.int64)
    b = np.array([62, 39, 40, -1, -3, -4, -5, -1, -2], np.int64)
    want = [2 ** 62, 3 ** 39, 3 ** 40 - 2 ** 64, 0, -1, 1, 1, 0, 0]
    assert run(kernel_worker, "_power", [a, b]).tolist() == want
    a32 = np.array([2, 3, -3], np.int32)
    np.testing.assert_array_equal(run(kernel_worker, "_power", [a32, np.full(3, 40, np.int32)]),
                                  np.power(a32, np.int32(40)))


# --- floats into integers ---------------------------------------------------------------------
FLOAT_EDGES = [math.nan, math.inf, -math.inf, 1e20, -1e20, 1e10, -1e10, 2.0 ** 31, -2.0 ** 31,
               -2.0 ** 31 - 1, 2.0 ** 63, -2.0 ** 63, 300.7, -300.7, 255.9, -1.5, -0.5, 0.5,
               2.5, 127.0, -129.0, 65504.0]


@pytest.mark.parametrize("src", FLOAT_DTYPES)
@pytest.mark.parametrize("dst", INT_DTYPES)
def test_cast_of_float_edge_values(kernel_worker, int_rules, src, dst):
    """NaN, infinities and out-of-range floats give MIN (of int32 for the
    8-bit types, which then wrap): x86-64's conversion, hence NumPy's
    astype there; in-range values truncate toward zero."""
    with np.errstate(over="ignore", invalid="ignore"):
        x = np.array(FLOAT_EDGES).astype(src)
    want = np.array([int_rules.to_int(v, dst) for v in x.tolist()], dst)
    np.testing.assert_array_equal(run(kernel_worker, "Cast", [x], dtype=dst), want)
    fits = np.abs(x.astype(np.float64)) < 2.0 ** 31
    np.testing.assert_array_equal(want[fits], x[fits].astype(dst))   # C's, as NumPy's


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_parameters_convert_as_cast_does(kernel_worker, int_rules, dtype):
    """_full's value, a scalar op's scalar, clip's bounds and one_hot's
    on / off values become the dtype by Cast's rule."""
    n = int_rules.edges(dtype).size
    for v in (math.inf, -math.inf, 1e20, -1e10, 300.7, -1.5):
        want = int_rules.to_int(v, dtype)
        assert run(kernel_worker, "_full", [], shape=(2,), value=v, dtype=dtype
                   ).tolist() == [want] * 2, v
        got = run(kernel_worker, "_plus_scalar", [np.zeros(2, dtype)], scalar=v)
        assert got.tolist() == [want] * 2, v
        got = run(kernel_worker, "clip", [int_rules.edges(dtype)], a_min=v, a_max=v)
        assert got.tolist() == [want] * n, v
        got = run(kernel_worker, "one_hot", [np.array([0.0])], depth=2, on_value=v,
                  off_value=-v, dtype=dtype)
        assert got.tolist() == [[want, int_rules.to_int(-v, dtype)]], v
    got = run(kernel_worker, "_plus_scalar", [np.zeros(1, dtype)], scalar="nan")
    assert got.tolist() == [int_rules.to_int(math.nan, dtype)]


def test_float_indices_that_fit_no_int64(kernel_worker):
    """NaN and +-inf as indices become INT64_MIN (what x86-64 gave): take
    clips it to row 0 or wraps it modulo the axis, gather_nd reports it
    out of range, one_hot gives a row of off values."""
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([math.nan, math.inf, -math.inf, 1e30, 2.0], np.float32)
    np.testing.assert_array_equal(run(kernel_worker, "take", [a, idx], mode="clip"),
                                  a[[0, 0, 0, 0, 2]])
    np.testing.assert_array_equal(run(kernel_worker, "take", [a, idx], mode="wrap"),
                                  a[[-2 ** 63 % 4] * 4 + [2]])
    status, msg = kernel_worker.call("gather_nd", [a, idx[:1].reshape(1, 1)])
    assert status == "error" and "out of range" in msg
    want = np.zeros((5, 3), np.float32)
    want[4, 2] = 1
    np.testing.assert_array_equal(run(kernel_worker, "one_hot", [idx], depth=3), want)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_norm_out_of_range_converts_as_cast_does(kernel_worker, int_rules, dtype):
    lo = float(np.iinfo(dtype).min)
    x = np.full(4, lo, dtype)
    assert run(kernel_worker, "norm", [x]).tolist() == [int_rules.to_int(2 * abs(lo), dtype)]


# --- MXNet 1.9.1's own outputs ----------------------------------------------------------------
def test_matches_mxnet_191_where_it_did_not_crash(kernel_worker, int_rules):
    """Every group of data/int_edges_mxnet191.json: the same values where
    MXNet computed them, and our rule where MXNet died of SIGFPE.  Left out:
    the groups MXNet computes through floating point, where NumPy's exact
    wrap-around is the rule here instead (int64 mod and abs in double go
    wrong beyond 2^53; squares out of range become MIN by the conversion)."""
    through_float = {"binary._mod.int64", "unary.abs.int64", "unary.square.int32",
                     "unary.square.int64"}
    checked = 0
    for key, entry in sorted(json.loads(REFERENCE.read_text()).items()):
        kind, rest = key.split(".", 1)
        if kind == "trap":       # b == 0 or MIN / -1: MXNet died, or (8 bits) wrapped
            op, dtype, a, b = rest.split(".")
            want = [int_rules.wrap(int_rules.div(int(a), int(b)), dtype)]
            assert entry.get("values", want) == want or entry == {"signal": "SIGFPE"}, key
            got = run(kernel_worker, op, [np.array([a], dtype), np.array([b], dtype)])
            assert got.tolist() == want, key
            checked += 1
            continue
        assert "values" in entry, f"{key}: MXNet 1.9.1 died: {entry}"
        if key in through_float:
            continue
        if kind == "binary":
            op, dtype = rest.split(".")
            got = run(kernel_worker, op, [np.array(entry["a"], dtype),
                                          np.array(entry["b"], dtype)])
        elif kind == "unary":
            op, dtype = rest.split(".")
            got = run(kernel_worker, op, [np.array(entry["x"], dtype)])
        elif kind == "scalar":
            dtype, s = rest.split(".", 1)
            got = run(kernel_worker, "_plus_scalar", [np.zeros(1, dtype)], scalar=float(s))
        else:
            src, dst = rest.split(".")
            with np.errstate(over="ignore"):
                x = np.array([float(v) for v in entry["x"]]).astype(src)
            got = run(kernel_worker, "Cast", [x], dtype=dst)
        assert got.tolist() == entry["values"], key
        checked += 1
    assert checked > 100


# --- the GPU's copy of the rules, compiled for the host ---------------------------------------
_HOST = r"""
#include <cmath>
#define __device__
""" + _device_code.INT_ARITH + r"""
template <typename A> static void binary(int op, const A *a, const A *b, A *out, long long n) {
  for (long long i = 0; i < n; ++i)
    out[i] = op == 0 ? mx_int_div(a[i], b[i]) : op == 1 ? mx_int_mod(a[i], b[i])
           : op == 2 ? mx_int_pow(a[i], b[i]) : op == 3 ? mx_wrap_add(a[i], b[i])
           : op == 4 ? mx_wrap_sub(a[i], b[i]) : op == 5 ? mx_wrap_mul(a[i], b[i])
           : op == 6 ? mx_wrap_neg(a[i]) : mx_wrap_abs(a[i]);
}
#define MX_BINARY(NAME, A) extern "C" void NAME(int op, const A *a, const A *b, A *o, \
                                                long long n) { binary(op, a, b, o, n); }
MX_BINARY(binary_int8, signed char) MX_BINARY(binary_uint8, unsigned char)
MX_BINARY(binary_int32, int) MX_BINARY(binary_int64, long long)
#define MX_CAST(NAME, D, S) extern "C" void NAME(const S *x, D *o, long long n) { \
    for (long long i = 0; i < n; ++i) o[i] = mx_convert<D>(x[i]); }
MX_CAST(cast_float32_int8, signed char, float) MX_CAST(cast_float32_uint8, unsigned char, float)
MX_CAST(cast_float32_int32, int, float) MX_CAST(cast_float32_int64, long long, float)
MX_CAST(cast_float64_int8, signed char, double) MX_CAST(cast_float64_uint8, unsigned char, double)
MX_CAST(cast_float64_int32, int, double) MX_CAST(cast_float64_int64, long long, double)
"""
# name -> (CPU operator, op number in _HOST's binary, unary)
_DEVICE_OPS = {"div": ("elemwise_div", 0), "mod": ("_mod", 1), "power": ("_power", 2),
               "add": ("elemwise_add", 3), "sub": ("elemwise_sub", 4),
               "mul": ("elemwise_mul", 5), "negative": ("negative", 6), "abs": ("abs", 7)}


@pytest.fixture(scope="module")
def device_code(build_cxx):
    return build_cxx("int_arith", _HOST)


def _ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


def _device_operands(rules, dtype):
    """Every pair of values for 8 bits; else the edge pairs and a seeded
    sample (half of it with small divisors)."""
    info = np.iinfo(dtype)
    if info.bits == 8:
        e = np.arange(info.min, info.max + 1).astype(dtype)
        return np.repeat(e, e.size), np.tile(e, e.size)
    rng = np.random.default_rng(12)
    a, b = pairs(rules, dtype)
    ra = rng.integers(info.min, info.max, 4000, dtype=dtype, endpoint=True)
    rb = np.concatenate([rng.integers(-9, 10, 2000),
                         rng.integers(info.min, info.max, 2000, endpoint=True)]).astype(dtype)
    return np.concatenate([a, ra]), np.concatenate([b, rb])


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("name", sorted(_DEVICE_OPS))
def test_device_int_arith_is_the_cpus(device_code, kernel_worker, int_rules, name, dtype):
    """INT_ARITH, which the GPU kernels compute with, gives the CPU kernels'
    results: over every int8 / uint8 pair, and edge pairs plus a seeded
    sample for int32 / int64 (the CPU divides 32-bit integers in double,
    the device in integers: both must be exact)."""
    op, code = _DEVICE_OPS[name]
    a, b = _device_operands(int_rules, dtype)
    got = np.empty_like(a)
    getattr(device_code, f"binary_{dtype}")(code, _ptr(a), _ptr(b), _ptr(got),
                                            ctypes.c_longlong(a.size))
    np.testing.assert_array_equal(got, run(kernel_worker, op, [a] if code >= 6 else [a, b]))


@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("dst", INT_DTYPES)
def test_device_conversion_is_the_cpus(device_code, kernel_worker, src, dst):
    """mx_convert (the GPU's Cast and every float parameter into an
    integer) is the CPU's convert, not CUDA's saturating conversion."""
    rng = np.random.default_rng(5)
    scale = 10.0 ** rng.integers(0, 22, 500)
    x = np.concatenate([FLOAT_EDGES, rng.standard_normal(500) * scale]).astype(src)
    got = np.empty(x.size, dst)
    getattr(device_code, f"cast_{src}_{dst}")(_ptr(x), _ptr(got), ctypes.c_longlong(x.size))
    np.testing.assert_array_equal(got, run(kernel_worker, "Cast", [x], dtype=dst))
