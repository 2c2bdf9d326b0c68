"""Test data for ``mx.test_utils``: random arrays and shapes, and the NumPy
helpers (reductions, matrices with real eigenvalues) MXNet's tests use."""
import numpy as np
import numpy.random as rnd

from mx_ndarray import array

from mx._testing.compare import default_context, default_dtype

_SPARSE_ISSUE = "sparse gradient storage types are not built yet"


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
    """A random NDArray of ``shape``: standard normal when dense, else
    ``rand_sparse_ndarray``'s array of storage type ``stype``."""
    ctx = ctx or default_context()
    if stype == 'default':
        return array(random_arrays(shape), dtype=dtype, ctx=ctx)
    arr, _ = rand_sparse_ndarray(shape, stype, density=density, modifier_func=modifier_func,
                                 dtype=dtype, shuffle_csr_indices=shuffle_csr_indices,
                                 distribution=distribution, ctx=ctx)
    return arr


def rand_sparse_ndarray(shape, stype, density=None, dtype=None, distribution=None,
                        data_init=None, rsp_indices=None, modifier_func=None,
                        shuffle_csr_indices=False, ctx=None):
    """A random sparse array and its components, as MXNet's: row_sparse
    keeps each row with probability ``density`` (or the rows
    ``rsp_indices``) with uniform [0, 1) values, returning (arr, (values,
    indices)); csr keeps each entry with probability ``density``
    ('uniform'; 'powerlaw' doubles the entries of each row), returning
    (arr, (indptr, indices, data))."""
    from mx_ndarray import sparse
    ctx = ctx or default_context()
    density = rnd.rand() if density is None else density
    dtype = default_dtype() if dtype is None else dtype
    distribution = "uniform" if distribution is None else distribution
    if stype == 'row_sparse':
        if distribution != "uniform":
            raise ValueError(f"Distribution {distribution} not supported for row_sparse")
        if rsp_indices is not None:
            indices = np.asarray(rsp_indices)
            if len(indices) > shape[0]:
                raise ValueError(f"rand_sparse_ndarray: {len(indices)} rsp_indices for "
                                 f"{shape[0]} rows")
        else:
            indices = np.argwhere(rnd.rand(shape[0]) < density).flatten()
        if indices.shape[0] == 0:
            return (sparse.zeros('row_sparse', shape, dtype=dtype, ctx=ctx),
                    (np.array([], dtype=dtype), np.array([])))
        val = rnd.rand(indices.shape[0], *shape[1:]).astype(dtype)
        if data_init is not None:
            val.fill(data_init)
        if modifier_func is not None:
            val = assign_each(val, modifier_func)
        arr = sparse.row_sparse_array((val, indices), shape=shape, dtype=dtype, ctx=ctx)
        return arr, (val, indices)
    if stype == 'csr':
        if len(shape) != 2:
            raise ValueError(f"rand_sparse_ndarray: a csr array is 2-D, got shape {shape}")
        if distribution == "uniform":
            keep = rnd.rand(*shape) < density
        elif distribution == "powerlaw":
            keep = _powerlaw_pattern(shape, density)
        else:
            raise ValueError(f"Distribution not supported: {distribution}")
        _, cols = np.nonzero(keep)          # row-major: each row's columns ascending
        vals = rnd.rand(len(cols)) if data_init is None else np.full(len(cols), data_init)
        if modifier_func is not None:
            vals = assign_each(vals, modifier_func)
        indptr = np.concatenate([[0], np.cumsum(keep.sum(axis=1))])
        csr = sparse.csr_matrix((vals.astype(dtype), cols, indptr), shape=shape, dtype=dtype,
                                ctx=ctx)
        if shuffle_csr_indices:
            csr = shuffle_csr_column_indices(csr)
        return csr, (csr.indptr, csr.indices, csr.data)
    raise ValueError(f"rand_sparse_ndarray: unknown storage type {stype!r}")


def _powerlaw_pattern(shape, density):
    """Rows with 1, 2, 4, ... entries (as many as fit) until density * size
    entries are placed, as MXNet's powerlaw csr data set."""
    rows, cols = shape
    unused = int(rows * cols * density)
    keep = np.zeros(shape, dtype=bool)
    per_row = 1
    for r in range(rows):
        n = min(per_row, unused, cols)
        if n <= 0:
            break
        keep[r, :n] = True
        unused -= n
        per_row *= 2
    return keep


def create_sparse_array(shape, stype, data_init=None, rsp_indices=None, dtype=None,
                        modifier_func=None, density=.5, shuffle_csr_indices=False):
    """A random sparse array (MXNet's): ``rand_sparse_ndarray``'s array,
    with row_sparse ``rsp_indices`` sorted first (a canonical array)."""
    if stype == 'row_sparse':
        indices = None if rsp_indices is None else np.sort(np.asarray(rsp_indices))
        arr, _ = rand_sparse_ndarray(shape, stype, density=density, data_init=data_init,
                                     rsp_indices=indices, dtype=dtype,
                                     modifier_func=modifier_func)
    elif stype == 'csr':
        arr, _ = rand_sparse_ndarray(shape, stype, density=density, data_init=data_init,
                                     dtype=dtype, modifier_func=modifier_func,
                                     shuffle_csr_indices=shuffle_csr_indices)
    else:
        raise AssertionError(f"Unknown storage type: {stype}")
    return arr


def create_sparse_array_zd(shape, stype, density, data_init=None, rsp_indices=None,
                           dtype=None, modifier_func=None, shuffle_csr_indices=False):
    """``create_sparse_array`` where a row_sparse array keeps exactly the
    rows ``rsp_indices`` (none without them): MXNet's zero-density variant."""
    if stype == 'row_sparse':
        density = 0.0
        if rsp_indices is not None and len(rsp_indices) > shape[0]:
            raise ValueError(f"create_sparse_array_zd: {len(rsp_indices)} rsp_indices for "
                             f"{shape[0]} rows")
    return create_sparse_array(shape, stype, data_init=data_init, rsp_indices=rsp_indices,
                               dtype=dtype, modifier_func=modifier_func, density=density,
                               shuffle_csr_indices=shuffle_csr_indices)


def shuffle_csr_column_indices(csr):
    """A csr array with each row's column indices shuffled (its values
    moved along): an unsorted array, for check_format and kernels' tests."""
    from mx_ndarray import sparse
    indptr, indices, data = (x.asnumpy() for x in (csr.indptr, csr.indices, csr.data))
    for r in range(len(indptr) - 1):
        order = np.random.permutation(indptr[r + 1] - indptr[r]) + indptr[r]
        indices[indptr[r]:indptr[r + 1]] = indices[order]
        data[indptr[r]:indptr[r + 1]] = data[order]
    return sparse.csr_matrix((data, indices, indptr), shape=csr.shape, dtype=csr.dtype,
                             ctx=csr.context)


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
