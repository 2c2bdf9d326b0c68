"""``mx.test_utils``: MXNet 1.9.1's ``mxnet.test_utils`` for ``mx``.

Same names, signatures and semantics.  It stands on ``mx_ops.test_utils``
(the operator-level finite-difference checks and the call-plan helpers,
re-exported here); what is here works on NDArrays, Symbols and executors.
Sparse storage types and data-set downloads are not available yet: those
helpers raise errors that say so.
"""
import contextlib
import numbers
import os
import time

import numpy as np
import numpy.random as rnd

from mx_engine import _context
from mx_engine._context import current_context
from mx_graph import sym as _sym
from mx_graph.symbol import Symbol
from mx_ndarray import NDArray, array, waitall
# The operator-level base (NumPy in, NumPy out), part of this module's API.
from mx_ops.test_utils import (numeric_gradient, plan_cache_limit,  # noqa: F401
                               same_outcome, symbolic_gradient)

_SPARSE_ISSUE = ("sparse storage types ('row_sparse', 'csr') do not exist in mx yet; they "
                 "come with the sparse-NDArray issue")


# -- contexts, dtypes and tolerances -------------------------------------------
def default_context():
    """The context tests run on: the calling thread's current context."""
    return current_context()


def set_default_context(ctx):
    """Makes ``ctx`` the calling thread's default context."""
    _context._default.ctx = ctx


def default_dtype():
    """The dtype test data is made in."""
    return np.float32


_INTS = ("bool", "int8", "uint8", "int32", "uint32", "int64", "uint64")


def default_rtols():
    """Default relative tolerance for each dtype."""
    tols = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5}
    tols.update({np.dtype(t): 0 for t in _INTS})
    return tols


def default_atols():
    """Default absolute tolerance for each dtype."""
    tols = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3,
            np.dtype(np.float64): 1e-20}
    tols.update({np.dtype(t): 0 for t in _INTS})
    return tols


def default_numeric_eps():
    """Finite-difference step per dtype (powers of two: the delta is exact)."""
    return {np.dtype(np.float16): 1.0 / 2**6, np.dtype(np.float32): 1.0 / 2**9,
            np.dtype(np.float64): 1.0 / 2**14}


def effective_dtype(dat):
    """The dtype whose tolerances apply to ``dat`` (no TF32 devices here:
    the array's own dtype)."""
    return np.dtype(dat.dtype)


def get_tolerance(dat, tol, default_tol):
    """``tol`` if a number, else its (or ``default_tol``'s) entry for
    ``dat``'s dtype."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = effective_dtype(dat)
    tol = {} if tol is None else tol
    return tol.get(dtype, default_tol[dtype])


def get_tols(x, y, rtol, atol):
    """The (rtol, atol) for comparing ``x`` and ``y``: the larger of the two
    arrays' defaults where not given."""
    x = np.array(x) if isinstance(x, numbers.Number) else x
    y = np.array(y) if isinstance(y, numbers.Number) else y
    return (max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols())),
            max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols())))


def get_atol(atol=None, dtype=np.dtype(np.float64)):
    return default_atols()[dtype] if atol is None else atol


def get_rtol(rtol=None, dtype=np.dtype(np.float64)):
    return default_rtols()[dtype] if rtol is None else rtol


def get_etol(etol=None):
    return 0 if etol is None else etol


# -- random data ---------------------------------------------------------------
def random_arrays(*shapes):
    """Standard-normal NumPy arrays of the default dtype, one per shape (the
    array itself when one shape is given)."""
    arrays = [np.array(np.random.randn(), dtype=default_dtype()) if len(s) == 0
              else np.random.randn(*s).astype(default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes, low=0.0, high=1.0, dtype=None):
    """Uniform [low, high) NumPy arrays, one per shape (always a list)."""
    dtype = default_dtype() if dtype is None else dtype
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population, k):
    """``k`` elements of ``population`` in random order, without replacement."""
    assert 0 <= k <= len(population)
    population_copy = population[:]
    np.random.shuffle(population_copy)
    return population_copy[0:k]


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return rnd.randint(low, dim0 + 1), rnd.randint(low, dim1 + 1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return rnd.randint(low, dim0 + 1), rnd.randint(low, dim1 + 1), rnd.randint(low, dim2 + 1)


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return tuple(rnd.randint(low, dim + 1, size=num_dim))


def rand_coord_2d(x_low, x_high, y_low, y_high):
    return (np.random.randint(x_low, x_high, dtype=np.int64),
            np.random.randint(y_low, y_high, dtype=np.int64))


def rand_ndarray(shape, stype='default', density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A standard-normal NDArray of ``shape`` (dense storage only so far)."""
    if stype != 'default':
        raise NotImplementedError(f"rand_ndarray(stype={stype!r}): {_SPARSE_ISSUE}")
    return array(random_arrays(shape), dtype=dtype, ctx=ctx or default_context())


def rand_sparse_ndarray(shape, stype, density=None, dtype=None, distribution=None,
                        data_init=None, rsp_indices=None, modifier_func=None,
                        shuffle_csr_indices=False, ctx=None):
    raise NotImplementedError(f"rand_sparse_ndarray: {_SPARSE_ISSUE}")


def create_sparse_array(shape, stype, data_init=None, rsp_indices=None, dtype=None,
                        modifier_func=None, density=.5, shuffle_csr_indices=False):
    raise NotImplementedError(f"create_sparse_array: {_SPARSE_ISSUE}")


def create_sparse_array_zd(shape, stype, density, data_init=None, rsp_indices=None,
                           dtype=None, modifier_func=None, shuffle_csr_indices=False):
    raise NotImplementedError(f"create_sparse_array_zd: {_SPARSE_ISSUE}")


def shuffle_csr_column_indices(csr):
    raise NotImplementedError(f"shuffle_csr_column_indices: {_SPARSE_ISSUE}")


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """Reduces ``dat`` over ``axis`` (None, int or list) one axis at a time
    with ``numpy_reduce_func`` (np.sum, np.max, ...)."""
    if isinstance(axis, int):
        axis = [axis]
    else:
        axis = list(axis) if axis is not None else range(len(dat.shape))
    ret = dat
    for i in reversed(sorted(axis)):
        ret = numpy_reduce_func(ret, axis=i)
    if keepdims:
        shape = list(dat.shape)
        for i in axis:
            shape[i] = 1
        ret = ret.reshape(tuple(shape))
    return ret


# -- comparisons -----------------------------------------------------------------
def _as_numpy(x):
    return x.asnumpy() if isinstance(x, NDArray) else x


def same(a, b):
    """Whether two arrays are equal in shape and every element."""
    return np.array_equal(_as_numpy(a), _as_numpy(b))


def checkShapes(a, b):
    if a.shape != b.shape:
        raise AssertionError(np.testing.build_err_msg(
            [a, b], err_msg=f"a.shape = {a.shape} and b.shape = {b.shape} are not equal"))


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """Whether ``|a - b| <= atol + rtol * |b|`` everywhere (np.allclose)."""
    a, b = _as_numpy(a), _as_numpy(b)
    if not use_broadcast:
        checkShapes(a, b)
    return np.allclose(a, b, rtol=get_rtol(rtol), atol=get_atol(atol), equal_nan=equal_nan)


def _find_max_violation(a, b, rtol, atol):
    """The index of the element that most exceeds the tolerance, and by how
    many tolerances (equal infinities count as equal)."""
    absdiff = np.where(np.equal(a, b), 0, np.abs(a - b))
    violation = absdiff / (atol + rtol * np.abs(b) + 1e-20)
    idx = tuple(int(i) for i in np.unravel_index(np.argmax(violation), violation.shape))
    return idx, np.max(violation)


def locationError(a, b, index, names, maxError=False):
    """'Location of [maximum ]error: (i, j), a=..., b=...'."""
    maximum = "maximum " if maxError else ""
    return "Location of %serror: %s, %s=%.8f, %s=%.8f" % (
        maximum, str(index), names[0], a[index], names[1], b[index])


def assert_almost_equal(a, b, rtol=None, atol=None, names=('a', 'b'), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Asserts that ``a`` and ``b`` (NDArrays, NumPy arrays or scalars) are
    almost equal; the message gives the worst element's index and values and
    the share of elements out of tolerance.  ``rtol``/``atol``: numbers,
    dicts dtype -> number, or None for the dtypes' defaults.  ``mismatches``:
    how many of the worst elements to print, and to count."""
    if not use_broadcast:
        checkShapes(a, b)
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = np.asarray(_as_numpy(a)), np.asarray(_as_numpy(b))
    if a.dtype == np.bool_ and b.dtype == np.bool_:
        np.testing.assert_equal(a, b)
        return
    if almost_equal(a, b, rtol, atol, equal_nan=equal_nan):
        return
    a, b = np.broadcast_arrays(a, b)
    index, rel = _find_max_violation(a, b, rtol, atol)
    if index != ():
        worst, worst_rel = index, rel
        print(f"\n*** Maximum errors for vector of size {a.size}:  rtol={rtol}, atol={atol}\n")
        # Zero the worst element out, one at a time, to count (up to
        # mismatches[1]) the elements out of tolerance.
        a_left, b_left = a.copy(), b.copy()
        i = 1
        while i <= a.size:
            if i <= mismatches[0]:
                print("%3d: Error %f  %s" % (i, rel, locationError(a, b, index, names)))
            a_left[index] = b_left[index] = 0
            if almost_equal(a_left, b_left, rtol, atol, equal_nan=equal_nan):
                break
            i += 1
            if i <= mismatches[1] or mismatches[1] <= 0:
                index, rel = _find_max_violation(a_left, b_left, rtol, atol)
            else:
                break
        degree = "at least " if mismatches[1] > 0 and i > mismatches[1] else ""
        msg = "Error %f exceeds tolerance rtol=%e, atol=%e (mismatch %s%f%%).\n%s" % (
            worst_rel, rtol, atol, degree, 100 * i / a.size,
            locationError(a, b, worst, names, maxError=True))
    else:
        msg = "Error %f exceeds tolerance rtol=%e, atol=%e.\n" % (rel, rtol, atol)
    with np.printoptions(threshold=4, suppress=True):
        raise AssertionError(np.testing.build_err_msg([a, b], err_msg=msg))


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    """assert_almost_equal with np.testing.assert_allclose's defaults."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=('a', 'b'),
                                 equal_nan=False, mismatches=(10, 10)):
    """Asserts that at most a share ``etol`` of the elements are out of
    tolerance; the message locates the worst element."""
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol, atol, names, equal_nan, mismatches=mismatches)
        return
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = np.asarray(_as_numpy(a)), np.asarray(_as_numpy(b))
    a, b = np.broadcast_arrays(a, b)
    bad = ~np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    rate = bad.sum() / bad.size
    if rate > etol:
        index, rel = _find_max_violation(a, b, rtol, atol)
        msg = "Error %f exceeds tolerance rtol=%e, atol=%e, etol=%e. Error_rate=%f.\n%s" % (
            rel, rtol, atol, etol, rate, locationError(a, b, index, names, maxError=True))
        raise AssertionError(np.testing.build_err_msg([a, b], err_msg=msg))


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=('a', 'b')):
    """assert_almost_equal where a NaN in either array matches anything."""
    a, b = np.copy(_as_numpy(a)), np.copy(_as_numpy(b))
    nan_mask = np.logical_or(np.isnan(a), np.isnan(b))
    a[nan_mask] = 0
    b[nan_mask] = 0
    assert_almost_equal(a, b, rtol, atol, names)


def assert_exception(f, exception_type, *args, **kwargs):
    """Asserts that ``f(*args, **kwargs)`` raises ``exception_type``."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)} did not raise "
                         f"{getattr(exception_type, '__name__', exception_type)}")


def same_array(array1, array2):
    """Whether two NDArrays share their memory: a change made through one
    shows in the other."""
    array1[:] += 1
    if not same(array1.asnumpy(), array2.asnumpy()):
        array1[:] -= 1
        return False
    array1[:] -= 1
    return same(array1.asnumpy(), array2.asnumpy())


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None):
    """assert_almost_equal over nested tuples of arrays (None matches all)."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def retry(n):
    """Decorator: runs a stochastic test up to ``n`` times, failing only if
    every try fails."""
    assert n > 0

    def decorate(f):
        def wrapper(*args, **kwargs):
            for i in range(n):
                try:
                    f(*args, **kwargs)
                    return
                except AssertionError:
                    if i == n - 1:
                        raise
                    waitall()
        return wrapper
    return decorate


# -- symbols through the executor ---------------------------------------------------
def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Runs ``sym`` forward on NumPy ``inputs`` (by argument name); its
    output as NumPy (a list if several)."""
    ctx = ctx or default_context()
    inputs = {k: array(v, ctx=ctx) for k, v in inputs.items()}
    exe = sym.bind(ctx, args=inputs)
    exe.forward(is_train=is_train)
    outputs = [x.asnumpy() for x in exe.outputs]
    return outputs[0] if len(outputs) == 1 else outputs


def _to_nd(value, ctx, dtype):
    """NumPy -> NDArray on ``ctx`` in ``dtype`` ("asnumpy": its own dtype);
    NDArrays pass through."""
    if isinstance(value, NDArray):
        return value
    value = np.asarray(value)
    return array(value, ctx=ctx, dtype=value.dtype if dtype == "asnumpy" else dtype)


def _check_dtype(dtype):
    assert dtype == "asnumpy" or dtype in (np.float16, np.float32, np.float64)


def _parse_location(sym, location, ctx, dtype=default_dtype()):
    """``location`` (list in list_arguments() order, or dict by name) as a
    dict name -> NDArray sorted by name."""
    assert isinstance(location, (dict, list, tuple))
    _check_dtype(dtype)
    if isinstance(location, dict):
        if set(location) != set(sym.list_arguments()):
            raise ValueError("Symbol arguments and keys of the given location do not match."
                             "symbol args:%s, location.keys():%s"
                             % (set(sym.list_arguments()), set(location)))
    else:
        location = dict(zip(sym.list_arguments(), location))
    return {k: _to_nd(location[k], ctx, dtype) for k in sorted(location)}


def _parse_aux_states(sym, aux_states, ctx, dtype=default_dtype()):
    """``aux_states`` (None, list or dict) as a dict name -> NDArray."""
    _check_dtype(dtype)
    if aux_states is None:
        return None
    names = sym.list_auxiliary_states()
    if isinstance(aux_states, dict):
        if set(aux_states) != set(names):
            raise ValueError("Symbol aux_states names and given aux_states do not match."
                             "symbol aux_names:%s, aux_states.keys:%s"
                             % (set(names), set(aux_states)))
    else:
        aux_states = dict(zip(names, aux_states))
    return {k: _to_nd(v, ctx, dtype) for k, v in aux_states.items()}


def numeric_grad(executor, location, aux_states=None, eps=1e-4, use_forward_train=True,
                 dtype=default_dtype()):
    """Central differences of sum(output 0) with respect to each float
    argument in ``location`` (dict name -> NumPy), through ``executor``."""
    assert dtype in (np.float16, np.float32, np.float64)

    def run():
        if aux_states is not None:
            for key, val in aux_states.items():
                executor.aux_dict[key][:] = array(val, dtype=dtype)
        executor.forward(is_train=use_forward_train)
        return executor.outputs[0].asnumpy().astype(np.float64).sum()

    location = {k: np.array(v, order='C') for k, v in location.items()}
    for k, v in location.items():
        executor.arg_dict[k][:] = array(v, dtype=dtype)
    approx_grads = {k: np.zeros(v.shape, dtype=dtype) for k, v in location.items()}
    for k, v in location.items():
        if v.dtype.kind != 'f':
            continue
        flat = v.ravel()
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps / 2.0
            executor.arg_dict[k][:] = array(v, dtype=dtype)
            f_plus = run()
            flat[i] = old - eps / 2.0
            executor.arg_dict[k][:] = array(v, dtype=dtype)
            f_minus = run()
            approx_grads[k].ravel()[i] = (f_plus - f_minus) / eps
            flat[i] = old
        executor.arg_dict[k][:] = array(v, dtype=dtype)
    return approx_grads


def _grad_req_dict(grad_req, arg_names):
    if isinstance(grad_req, str):
        return {k: grad_req for k in arg_names}
    if isinstance(grad_req, (list, tuple)):
        return dict(zip(arg_names, grad_req))
    return dict(grad_req)


def _check_grads(names, grad_req, expected, got, before, labels, rtol, atol, equal_nan=False):
    """Compares gradients by request: 'write' as is, 'add' less what the
    buffer held ``before``, 'null' untouched."""
    for name in names:
        req = grad_req[name]
        tags = (labels[0] % name, labels[1] % name)
        if req == 'write':
            assert_almost_equal(expected[name], got[name], rtol, atol, tags, equal_nan=equal_nan)
        elif req == 'add':
            assert_almost_equal(expected[name], _as_numpy(got[name]) - before[name], rtol, atol,
                                tags, equal_nan=equal_nan)
        elif req == 'null':
            assert_almost_equal(before[name], got[name], rtol, atol, tags, equal_nan=equal_nan)
        else:
            raise ValueError("Invalid grad_req %s for argument %s" % (req, name))


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=default_dtype()):
    """Asserts that the executor's backward pass of ``sym`` agrees with
    finite differences at ``location``, for the loss sum(sym * P) with a
    random projection P (elements >= 0.1, so no precision is lost)."""
    assert dtype in (np.float16, np.float32, np.float64)
    if grad_stype_dict and any(v != 'default' for v in grad_stype_dict.values()):
        raise NotImplementedError(f"check_numeric_gradient(grad_stype_dict=...): {_SPARSE_ISSUE}")
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    location_npy = {k: v.asnumpy() for k, v in location.items()}
    aux_states = _parse_aux_states(sym, aux_states, ctx, dtype)
    aux_npy = None if aux_states is None else {k: v.asnumpy() for k, v in aux_states.items()}
    if grad_nodes is None:
        grad_nodes = sym.list_arguments()
        grad_req = {k: 'write' for k in grad_nodes}
    elif isinstance(grad_nodes, (list, tuple)):
        grad_nodes = list(grad_nodes)
        grad_req = {k: 'write' for k in grad_nodes}
    elif isinstance(grad_nodes, dict):
        grad_req = dict(grad_nodes)
        grad_nodes = list(grad_nodes)
    else:
        raise ValueError("grad_nodes must be None, a list/tuple of names or a dict name -> req")
    _, out_shape, _ = sym.infer_shape(**{k: v.shape for k, v in location.items()})
    out = _sym.make_loss(sym * _sym.Variable("__random_proj"))
    location["__random_proj"] = array(np.random.rand(*out_shape[0]) + 0.1, ctx=ctx, dtype=dtype)
    grads_before = {k: np.random.normal(0, 0.01, size=location[k].shape)
                    for k in list(grad_nodes) + ["__random_proj"]}
    args_grad = {k: array(v, ctx=ctx, dtype=dtype) for k, v in grads_before.items()}
    grad_req = {k: grad_req.get(k, 'null') for k in out.list_arguments()}
    grad_req["__random_proj"] = 'write'
    executor = out.bind(ctx, args=location, args_grad=args_grad, grad_req=grad_req,
                        aux_states=aux_states)
    assert len(executor.outputs) == 1
    executor.forward(is_train=True)
    eps = get_tolerance(executor.outputs[0], numeric_eps, default_numeric_eps())
    # Finite differences need a step the low-precision dtypes can resolve.
    if dtype in (np.float32, np.float16):
        assert eps >= 1e-5
    executor.backward()
    numeric = numeric_grad(executor, location_npy, aux_npy, eps=eps,
                           use_forward_train=use_forward_train, dtype=dtype)
    _check_grads(grad_nodes, grad_req, numeric, executor.grad_dict, grads_before,
                 ("NUMERICAL_%s", "BACKWARD_%s"), rtol, atol)


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=default_dtype()):
    """Asserts that ``sym``'s outputs at ``location`` match ``expected``
    (list in output order, or dict by output name); returns the outputs."""
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux_states = _parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    executor = sym.bind(ctx=ctx, args=location, aux_states=aux_states)
    executor.forward(is_train=False)
    for name, expect, output in zip(sym.list_outputs(), expected, executor.outputs):
        assert_almost_equal(expect, output, rtol, atol,
                            ("EXPECTED_%s" % name, "FORWARD_%s" % name), equal_nan=equal_nan)
    return executor.outputs


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req='write', ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=default_dtype()):
    """Asserts that the executor's input gradients of ``sym`` at
    ``location`` for head gradients ``out_grads`` match ``expected`` (list
    in argument order, or dict by name), honouring ``grad_req``; returns the
    gradient arrays by name.  The gradient buffers start random, so 'add'
    and 'null' are checked against what they held."""
    if grad_stypes and any(v not in (None, 'default') for v in grad_stypes.values()):
        raise NotImplementedError(f"check_symbolic_backward(grad_stypes=...): {_SPARSE_ISSUE}")
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux_states = _parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(sym.list_arguments(), expected))
    before = {k: np.random.normal(size=np.shape(v)) for k, v in sorted(expected.items())}
    args_grad = {k: array(v, ctx=ctx, dtype=np.asarray(expected[k]).dtype
                          if dtype == "asnumpy" else dtype) for k, v in before.items()}
    grad_req = _grad_req_dict(grad_req, sym.list_arguments())
    executor = sym.bind(ctx=ctx, args=location, args_grad=args_grad, aux_states=aux_states,
                        grad_req=grad_req)
    executor.forward(is_train=True)
    if isinstance(out_grads, (list, tuple)):
        out_grads = [_to_nd(g, ctx, dtype) for g in out_grads]
    elif isinstance(out_grads, dict):
        out_grads = [_to_nd(out_grads[k], ctx, dtype) for k in sym.list_outputs()]
    else:
        assert out_grads is None
    # MXNet's backward with every request 'null' does nothing; mx's
    # executor refuses it as a likely mistake, so it is not called.
    if any(grad_req.get(k, 'null') != 'null' for k in args_grad):
        executor.backward(out_grads)
    _check_grads(list(expected), grad_req, expected, args_grad, before,
                 ("EXPECTED_%s", "BACKWARD_%s"), rtol, atol, equal_nan)
    return args_grad


def check_speed(sym, location=None, ctx=None, N=20, grad_req=None, typ="whole", **kwargs):
    """Seconds per forward+backward (typ "whole") or forward ("forward") of
    ``sym``, averaged over ``N`` runs after one warm-up run.  Shapes come
    from ``location`` (dict name -> NumPy) or ``kwargs``."""
    ctx = ctx or default_context()
    grad_req = grad_req or 'write'
    if location is None:
        exe = sym.simple_bind(grad_req=grad_req, ctx=ctx, **kwargs)
        location = {k: np.random.normal(size=arr.shape, scale=1.0)
                    for k, arr in exe.arg_dict.items()}
    else:
        assert isinstance(location, dict), 'Expect dict, get "location"=%s' % str(location)
        exe = sym.simple_bind(grad_req=grad_req, ctx=ctx,
                              **{k: v.shape for k, v in location.items()})
    for name, value in location.items():
        exe.arg_dict[name][:] = value.astype(exe.arg_dict[name].dtype)
    if typ == "whole":
        def step():
            exe.forward(is_train=True)
            exe.backward(out_grads=exe.outputs)
    elif typ == "forward":
        def step():
            exe.forward(is_train=False)
    else:
        raise ValueError('typ can only be "whole" or "forward".')
    step()
    waitall()
    tic = time.time()
    for _ in range(N):
        step()
    waitall()
    return (time.time() - tic) / N


def _smaller_dtype(dt1, dt2):
    return dt1 if dt2 is None or np.dtype(dt1).itemsize < np.dtype(dt2).itemsize else dt2


def check_consistency(sym, ctx_list, scale=1.0, grad_req='write', arg_params=None,
                      aux_params=None, rtol=None, atol=None, raise_on_err=True,
                      ground_truth=None, equal_nan=False, use_uniform=False,
                      rand_type=np.float64):
    """Asserts that ``sym`` (or one symbol per entry) gives the same outputs
    and gradients for every entry of ``ctx_list`` (dicts of simple_bind
    arguments: ctx, input shapes, type_dict); the most precise entry is the
    reference unless ``ground_truth`` is given.  Returns the reference."""
    assert len(ctx_list) > 1
    syms = [sym] * len(ctx_list) if isinstance(sym, Symbol) else list(sym)
    assert len(syms) == len(ctx_list)
    output_names = syms[0].list_outputs()
    arg_names = syms[0].list_arguments()
    exe_list = []
    for s, spec in zip(syms, ctx_list):
        assert s.list_arguments() == arg_names
        assert s.list_outputs() == output_names
        exe_list.append(s.simple_bind(grad_req=grad_req, **spec))
    arg_params = {} if arg_params is None else arg_params
    aux_params = {} if aux_params is None else aux_params
    for n, arr in sorted(exe_list[0].arg_dict.items()):
        if n not in arg_params:
            if use_uniform:
                arg_params[n] = np.random.uniform(-0.92 * scale, 0.92 * scale,
                                                  size=arr.shape).astype(rand_type)
            else:
                arg_params[n] = np.random.normal(size=arr.shape, scale=scale).astype(rand_type)
    for n in exe_list[0].aux_dict:
        aux_params.setdefault(n, 0)
    for exe in exe_list:
        for name, arr in exe.arg_dict.items():
            arr[:] = arg_params[name]
        for name, arr in exe.aux_dict.items():
            arr[:] = aux_params[name]
        if grad_req == "add":
            for arr in exe.grad_arrays:
                if arr is not None:
                    arr[:] = 0
    dtypes = [np.dtype(exe.outputs[0].dtype) for exe in exe_list]
    gt_idx = int(np.argmax([d.itemsize for d in dtypes]))
    gt = ground_truth
    if gt is None:
        gt = dict(exe_list[gt_idx].output_dict)
        if grad_req != 'null':
            gt.update(exe_list[gt_idx].grad_dict)

    def compare(arr, gtarr, rt, at, what):
        try:
            assert_almost_equal(arr, gtarr, rtol=rt, atol=at, equal_nan=equal_nan)
        except AssertionError as e:
            print(what)
            if raise_on_err:
                raise
            print(str(e))

    for exe in exe_list:
        exe.forward(is_train=False)
    for i, exe in enumerate(exe_list):
        if i != gt_idx:
            for name, arr in zip(output_names, exe.outputs):
                compare(arr, gt[name], rtol, atol,
                        'Predict Err: ctx %d vs ctx %d at %s' % (i, gt_idx, name))
    if grad_req == 'null':
        return gt
    for exe in exe_list:
        exe.forward(is_train=True)
    # Head gradients: the first executor's outputs in the least precise dtype.
    least = [out.dtype for out in exe_list[0].outputs]
    for exe in exe_list:
        least = [_smaller_dtype(out.dtype, dt) for out, dt in zip(exe.outputs, least)]
    golden = [out.asnumpy().astype(dt) for out, dt in zip(exe_list[0].outputs, least)]
    for exe in exe_list:
        exe.backward([array(g, ctx=out.context, dtype=out.dtype)
                      for g, out in zip(golden, exe.outputs)])
    for i, exe in enumerate(exe_list):
        if i == gt_idx:
            continue
        for name, arr in zip(output_names + arg_names, list(exe.outputs) + list(exe.grad_arrays)):
            if gt.get(name) is None:
                assert arr is None
                continue
            gtarr = gt[name]
            rt, at = rtol, atol
            small_arr = _smaller_dtype(arr.dtype, dtypes[i])
            small_gt = _smaller_dtype(gtarr.dtype, dtypes[gt_idx])
            if small_arr != arr.dtype or small_gt != gtarr.dtype:
                rt, at = get_tols(_as_numpy(arr).astype(small_arr),
                                  _as_numpy(gtarr).astype(small_gt), rtol, atol)
            compare(arr, gtarr, rt, at, 'Train Err: ctx %d vs ctx %d at %s' % (i, gt_idx, name))
    return gt


def same_symbol_structure(sym1, sym2):
    """Whether two symbols have the same nodes (ops and names) in the same
    order, compared through their JSON."""
    import json
    nodes1 = json.loads(sym1.tojson())["nodes"]
    nodes2 = json.loads(sym2.tojson())["nodes"]
    return len(nodes1) == len(nodes2) and all(
        (a["op"], a["name"]) == (b["op"], b["name"]) for a, b in zip(nodes1, nodes2))


# -- environment, devices, data --------------------------------------------------------
@contextlib.contextmanager
def environment(*args):
    """Sets environment variables inside the block (``environment(name,
    value)`` or ``environment({name: value})``; None unsets) and restores
    them after it, even on error."""
    if len(args) == 1 and isinstance(args[0], dict):
        env_vars = args[0]
    else:
        assert len(args) == 2, 'Expecting one dict arg or two args: env var name and value'
        env_vars = {args[0]: args[1]}

    def set_environ(values):
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    snapshot = {name: os.environ.get(name) for name in env_vars}
    set_environ(env_vars)
    try:
        yield
    finally:
        # Work queued inside the block may still read the variables.
        waitall()
        set_environ(snapshot)


def list_gpus():
    """The GPU ids available (``range(mx.context.num_gpus())``)."""
    from mx_engine._context import num_gpus
    return range(num_gpus())


def is_cd_run():
    return os.environ.get("CD_JOB", 0) == "1"


def is_aarch64_run():
    import platform
    return platform.machine() == "aarch64"


@contextlib.contextmanager
def discard_stderr():
    """Sends file descriptor 2, the process's stderr (native code's too),
    to /dev/null inside the block."""
    fd = 2
    saved = os.dup(fd)
    with open(os.devnull, 'w') as null:
        os.dup2(null.fileno(), fd)
        try:
            yield
        finally:
            os.dup2(saved, fd)
            os.close(saved)


def get_im2rec_path(home_env="MXNET_HOME"):
    """The path of tools/im2rec.py under ``$MXNET_HOME`` (mx ships no
    tools/ of its own)."""
    home = os.environ.get(home_env)
    path = os.path.join(home, 'tools', 'im2rec.py') if home else None
    if path and os.path.isfile(path):
        return path
    raise IOError(f'Could not find path to tools/im2rec.py (set {home_env} to an MXNet checkout)')


def has_tvm_ops():
    """False: mx has no TVM-generated operators."""
    return False


def is_op_runnable():
    """True: without TVM operators every op runs on every context."""
    return True


class _DataIterBase:
    """Stand-in for mx.io.DataIter until mx-io lands (its issue): the
    iterator protocol over ``next()``."""

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def __next__(self):
        return self.next()

    def reset(self):
        pass


class DummyIter(_DataIterBase):
    """An iterator that returns the first batch of ``real_iter`` forever
    (for speed tests)."""

    def __init__(self, real_iter):
        super().__init__()
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.batch_size = real_iter.batch_size
        self.the_batch = next(real_iter)

    def next(self):
        return self.the_batch


# Downloads: mx fetches nothing; each helper names the files to provide.
def _no_download(what, files):
    raise RuntimeError(f"{what}: mx downloads nothing; provide {files} yourself "
                       f"(MXNet 1.9.1 fetched them from data.mxnet.io)")


def download(url, fname=None, dirname=None, overwrite=False, retries=5):
    fname = fname or url.split("/")[-1]
    path = os.path.join(dirname, fname) if dirname else fname
    if os.path.exists(path) and not overwrite:
        return path
    _no_download("download", f"the file {path!r} (from {url})")


def download_model(model_name, dst_dir='./', meta_info=None):
    _no_download("download_model", f"'{model_name}-symbol.json' and '{model_name}-0000.params' "
                 f"in {dst_dir!r}")


_MNIST = ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
          "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz")


def get_mnist():
    _no_download("get_mnist", "the MNIST files " + ", ".join(_MNIST)
                 + " in the current directory")


def get_mnist_pkl():
    _no_download("get_mnist_pkl", "'data/mnist.pkl.gz'")


def get_mnist_ubyte():
    _no_download("get_mnist_ubyte", "'data/train-images-idx3-ubyte', "
                 "'data/train-labels-idx1-ubyte', 'data/t10k-images-idx3-ubyte' and "
                 "'data/t10k-labels-idx1-ubyte'")


def get_cifar10():
    _no_download("get_cifar10", "'data/cifar/train.rec', 'data/cifar/test.rec', "
                 "'data/cifar/train.lst' and 'data/cifar/test.lst'")


def get_mnist_iterator(batch_size, input_shape, num_parts=1, part_index=0):
    _no_download("get_mnist_iterator", "the MNIST files in 'data/' (and mx.io.MNISTIter, "
                 "not in mx yet)")


def get_zip_data(data_dir, url, data_origin_name):
    _no_download("get_zip_data", f"{os.path.join(data_dir, data_origin_name)!r}, unpacked")


def get_bz2_data(data_dir, data_name, url, data_origin_name):
    _no_download("get_bz2_data", f"{os.path.join(data_dir, data_name)!r}")


# -- checking random generators ------------------------------------------------------
def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """``nbuckets`` equiprobable buckets (lo, hi) from the quantile function
    ``ppf``, and their probabilities."""
    assert nbuckets > 0
    probs = [1.0 / nbuckets] * nbuckets
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets)))
               for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator, mu, sigma, nsamples=1000000):
    """Whether the mean of ``generator(nsamples)`` lies within 3 standard
    errors of ``mu``."""
    sample_mean = np.array(generator(nsamples)).mean()
    bound = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - bound < sample_mean < mu + bound)


def var_check(generator, sigma, nsamples=1000000):
    """Whether the sample variance of ``generator(nsamples)`` lies within 3
    standard errors of ``sigma**2``."""
    sample_var = np.array(generator(nsamples)).var(ddof=1)
    bound = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - bound < sample_var < sigma ** 2 + bound)


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Pearson's chi-square test of ``generator(nsamples)`` against
    ``probs`` over ``buckets``: (lo, hi) ranges for a continuous
    distribution (ascending, disjoint), or the values of a discrete one.
    Returns (p value, observed counts, expected counts)."""
    from scipy import stats
    assert isinstance(buckets, list)
    assert len(probs) == len(buckets)
    samples = _as_numpy(generator(nsamples))
    samples = np.asarray(samples).ravel()
    if isinstance(buckets[0], (list, tuple)):
        edges = np.empty(2 * len(buckets), np.float64)
        for i, (lo, hi) in enumerate(buckets):
            assert lo <= hi
            if i < len(buckets) - 1:
                assert hi <= buckets[i + 1][0]
            edges[2 * i], edges[2 * i + 1] = lo, hi
        # Samples in [lo_i, hi_i) land on odd positions 2i+1.
        ids = np.searchsorted(edges, samples, side='right')
        obs_freq = np.bincount(ids, minlength=2 * len(buckets) + 1)[1:2 * len(buckets):2]
    else:
        obs_freq = np.array([(samples == b).sum() for b in buckets])
    expected_freq = nsamples * np.asarray(probs, np.float64)
    chisq = float(((obs_freq - expected_freq) ** 2 / expected_freq).sum())
    p = float(stats.chi2.sf(chisq, len(buckets) - 1))
    return p, obs_freq, expected_freq


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2,
                     alpha=0.05):
    """Runs chi_square_check ``nrepeat`` times and asserts that at least a
    share ``success_rate`` of them pass at level ``alpha``; returns the p
    values."""
    results = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    cs_ret_l = [r[0] for r in results]
    if (np.array(cs_ret_l) > alpha).sum() < nrepeat * success_rate:
        raise AssertionError("Generator test fails, Chi-square p=%s, obs_freq=%s, "
                             "expected_freq=%s.\nbuckets=%s, probs=%s"
                             % (cs_ret_l, [r[1] for r in results], [r[2] for r in results],
                                buckets, probs))
    return cs_ret_l


# -- NumPy helpers MXNet's tests use ------------------------------------------------------
def collapse_sum_like(a, shape):
    """Sums ``a`` down to ``shape`` (undoes broadcasting, as gradients do)."""
    assert len(a.shape) >= len(shape)
    if np.prod(shape) == 0 or a.size == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = len(a.shape) - len(shape)
    assert all(s in (1, a.shape[lead + i]) for i, s in enumerate(shape))
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s != a.shape[lead + i])
    return a.sum(axis=axes).reshape(shape)


def assign_each(the_input, function):
    """``function`` applied to every element of a NumPy array."""
    if function is None:
        return np.array(the_input)
    return np.vectorize(function, otypes=[np.float64])(the_input)


def assign_each2(input1, input2, function):
    """``function`` applied elementwise to two same-shaped NumPy arrays."""
    if function is None:
        return np.array(input1)
    assert input1.shape == input2.shape
    return np.vectorize(function, otypes=[np.float64])(input1, input2)


def create_2d_tensor(rows, columns, dtype=np.int64):
    return array(np.arange(0, rows).reshape(rows, 1).repeat(columns, axis=1), dtype=dtype)


def create_vector(size, dtype=np.int64):
    return array(np.arange(0, size), dtype=dtype)


def get_identity_mat(size):
    return array(np.eye(size))


def get_identity_mat_batch(size):
    return array(np.stack([np.eye(size)] * 2))


def new_matrix_with_real_eigvals_2d(n):
    """An n x n matrix q^-1 D q with real eigenvalues D in (-10, 10) and a
    well-conditioned q (condition number < 3)."""
    while True:
        # A Householder reflection scaled by a random diagonal.
        v = np.random.uniform(-1.0, 1.0, (n, 1))
        v /= np.linalg.norm(v)
        q = (np.eye(n) - 2 * v @ v.T) @ np.diag(np.random.uniform(-1.0, 1.0, n))
        if np.linalg.cond(q, 2) < 3:
            break
    return np.linalg.inv(q) @ np.diag(np.random.uniform(-10.0, 10.0, n)) @ q


def new_matrix_with_real_eigvals_nd(shape):
    n = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(n)]).reshape(shape)


def new_orthonormal_matrix_2d(n):
    """A random n x n orthonormal matrix (Q of a QR factorisation)."""
    x = np.random.randn(n, n)
    return np.linalg.qr(x.T @ x)[0]


def new_sym_matrix_with_real_eigvals_2d(n):
    """A symmetric q^T D q with eigenvalues D in (-10, 10)."""
    q = new_orthonormal_matrix_2d(n)
    return q.T @ np.diag(np.random.uniform(-10.0, 10.0, n)) @ q


def new_sym_matrix_with_real_eigvals_nd(shape):
    n = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_sym_matrix_with_real_eigvals_2d(shape[-1])
                     for _ in range(n)]).reshape(shape)


# -- helpers over layers mx does not have yet ----------------------------------------------
def compare_optimizer(opt1, opt2, shape, dtype, w_stype='default', g_stype='default',
                      rtol=1e-4, atol=1e-5, compare_states=True, ntensors=1):
    raise NotImplementedError("compare_optimizer: mx.optimizer does not exist yet")


def check_gluon_hybridize_consistency(net_builder, data_l, numpy_func=None, test_grad=True,
                                      rtol=1E-4, atol=1E-4):
    raise NotImplementedError("check_gluon_hybridize_consistency: mx.gluon does not exist yet")
