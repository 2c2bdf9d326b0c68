"""Tolerances per dtype and the array comparisons of ``mx.test_utils``:
assert_almost_equal and its relatives, on NDArrays, NumPy arrays and scalars."""
import numbers

import numpy as np

from mx_engine import _context
from mx_engine._context import current_context
from mx_ndarray import NDArray, waitall


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


# -- comparisons -----------------------------------------------------------------
def _as_numpy(x):
    """NumPy values of an NDArray (dense or sparse), a SciPy sparse matrix
    or anything NumPy reads."""
    if isinstance(x, NDArray):
        return x.asnumpy()
    if hasattr(x, "toarray") and hasattr(x, "tocsr"):     # scipy.sparse
        return x.toarray()
    return x


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
