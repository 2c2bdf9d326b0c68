"""The sparse family: cast_storage, _square_sum, _sparse_retain, and the
sparse kernels (storage-type inference, core.stype) of elemwise_add/sub and
the zero-preserving unary and scalar operators."""
from mx_ops.ops.sparse import cast_storage  # noqa: F401  (registers cast_storage)
from mx_ops.ops.sparse import sparse_ops  # noqa: F401  (sparse kernels of other families)
