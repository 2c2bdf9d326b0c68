"""Test data for ``mx.test_utils``: random arrays and shapes, and the NumPy
helpers (reductions, matrices with real eigenvalues) MXNet's tests use."""
import numpy as np
import numpy.random as rnd

from mx_ndarray import array

from mx._testing.compare import default_context, default_dtype

_SPARSE_ISSUE = ("sparse storage types ('row_sparse', 'csr') do not exist in mx yet; they "
                 "come with the sparse-NDArray issue")


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
