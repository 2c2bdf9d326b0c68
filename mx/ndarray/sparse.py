"""``mx.ndarray.sparse`` (``mx.nd.sparse``): sparse NDArrays (CSRNDArray,
RowSparseNDArray) and their constructors, as in MXNet 1.x, plus the
operators MXNet lists here: those with sparse kernels (mx_ops's sparse
family and storage-type inference) and any registered under the
``_sparse_`` prefix (``retain`` is ``_sparse_retain``)."""
from mx_ndarray import _internal as _internal_ops
from mx_ndarray import op as _op
from mx_ndarray.sparse import (BaseSparseNDArray, CSRNDArray, RowSparseNDArray,  # noqa: F401
                               add, array, cast_storage, csr_matrix, divide, empty, multiply,
                               retain, row_sparse_array, subtract, zeros)
from mx._prefixed import prefixed as _prefixed
from mx.base import NotSupportedForSparseNDArray  # noqa: F401

# MXNet's mx.nd.sparse also holds these operators (its `_sparse_<name>`
# aliases); with a sparse input they keep the storage type where a sparse
# kernel exists and fall back to dense otherwise.
_OPERATORS = (
    "abs", "sign", "sqrt", "square", "relu", "negative", "sin", "sinh", "tan", "tanh",
    "arcsin", "arcsinh", "arctan", "arctanh", "ceil", "floor", "rint", "round", "trunc", "fix",
    "expm1", "log1p", "degrees", "radians", "elemwise_add", "elemwise_sub", "elemwise_mul",
    "elemwise_div", "zeros_like", "cbrt", "exp", "log", "log10", "log2", "rsqrt", "sigmoid",
    "cos", "cosh", "arccos", "arccosh", "gamma", "gammaln", "clip", "slice", "sum", "mean",
    "norm", "where", "stop_gradient", "make_loss", "add_n", "broadcast_add", "broadcast_sub",
    "broadcast_mul", "broadcast_div", "broadcast_plus", "broadcast_minus", "dot", "Embedding",
    "FullyConnected", "ElementWiseSum", "concat", "LinearRegressionOutput",
    "LogisticRegressionOutput", "MAERegressionOutput", "sgd_update", "sgd_mom_update",
    "adam_update", "adagrad_update", "ftrl_update")
for _name in _OPERATORS:
    if hasattr(_op, _name):
        globals()[_name] = getattr(_op, _name)

_prefixed_getattr, _prefixed_dir = _prefixed(__name__, "_sparse_", _internal_ops)


def __getattr__(name):
    return _prefixed_getattr(name)


def __dir__():
    return sorted(set(globals()) | set(_prefixed_dir()))
