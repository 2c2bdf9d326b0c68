"""The sparse family: cast_storage, _square_sum, _sparse_retain, and the
sparse kernels (storage-type inference, core.stype) of other families'
operators: the zero-preserving unary and scalar ones, the elementwise and
broadcast binary ones and add_n (binary.py), sum/mean/norm (reduce.py),
slice, where, zeros_like and clip (select.py)."""
from mx_ops.ops.sparse import cast_storage  # noqa: F401  (registers cast_storage)
from mx_ops.ops.sparse import sparse_ops  # noqa: F401  (sparse kernels of other families)
from mx_ops.ops.sparse import binary, reduce, select  # noqa: F401  (their storage rules)
