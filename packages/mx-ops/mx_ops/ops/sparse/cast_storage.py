"""cast_storage: dense <-> csr, dense <-> row_sparse, sparse -> dense, as a
registered operator whose storage-type inference picks the sparse kernels
(core.stype).  dense -> dense is the dense copy kernel."""
import numpy as np

from mx_ops.core import registry
from mx_ops.core._params import Param
from mx_ops.core.gradient import apply, set_gradient
from mx_ops.core.registry import OpDef, register
from mx_ops.core.stype import (DISPATCH_COMPUTE, DISPATCH_COMPUTE_EX, SparseBlob,
                               set_storage_inference)
from mx_ops.ops.sparse import _sparse_cpu

_SPARSE_GPU = "mx_ops.ops.sparse._sparse_gpu"


def blob_stype(x):
    """'default' for a dense array, else the SparseBlob's stype."""
    return x.stype if isinstance(x, SparseBlob) else "default"


def check_cast(src, dst, shape, api="cast_storage"):
    """Refuses the casts MXNet has no kernel for, naming them."""
    if src == dst or "default" in (src, dst):
        if dst == "csr" and len(shape) != 2:
            raise ValueError(f"{api}: a csr array is 2-D; the input has shape {shape}")
        if dst == "row_sparse" and len(shape) < 1:
            raise ValueError(f"{api}: a row_sparse array has at least one dimension; the "
                             f"input is 0-d")
        return
    raise ValueError(f"{api}: cast_storage from {src} to {dst} is not supported")


def _infer_storage(params, in_stypes, device):
    del device
    out = params["stype"]
    if "default" not in (in_stypes[0], out) and in_stypes[0] != out:
        raise ValueError(f"cast_storage from {in_stypes[0]} to {out} is not supported")
    mode = DISPATCH_COMPUTE if in_stypes[0] == out == "default" else DISPATCH_COMPUTE_EX
    return [out], mode


def cast_cpu(params, inputs, outputs, reqs):
    """The CPU kernels: two passes (count, allocate, fill) into sparse, a
    scatter into dense, a copy between two arrays of one sparse stype."""
    del params, reqs
    src, dst = inputs[0], outputs[0]
    kind = (blob_stype(src), blob_stype(dst))
    if kind == ("default", "csr"):
        _sparse_cpu.dense_to_csr(np.ascontiguousarray(src), dst)
    elif kind == ("default", "row_sparse"):
        _sparse_cpu.dense_to_rsp(np.ascontiguousarray(src), dst)
    elif kind == ("csr", "default"):
        _sparse_cpu.csr_to_dense(src, dst)
    elif kind == ("row_sparse", "default"):
        _sparse_cpu.rsp_to_dense(src, dst)
    elif kind[0] == kind[1] != "default":
        copy_blob(src, dst)
    else:
        check_cast(kind[0], kind[1], dst.shape)


def copy_blob(src, dst):
    """dst = a copy of src's components (one sparse stype), in dst's dtype."""
    xp = dst.xp
    dst.data = xp.array(src.data, dtype=dst.dtype)
    dst.indices = xp.array(src.indices)
    dst.indptr = None if src.indptr is None else xp.array(src.indptr)


register(OpDef(
    "cast_storage", arguments=("data",), input_docs={"data": "The input."},
    params={"stype": Param("str", choices=("default", "row_sparse", "csr"),
                           doc="Output storage type.")},
    infer_shape=lambda p, s: [tuple(s[0])], infer_type=lambda p, t: [t[0]],
    compute=dict(registry.get("_copy").compute),
    doc="Casts tensor storage type to the new type: dense to csr or row_sparse, either "
        "sparse type to dense, or a copy within one storage type."))

set_storage_inference(
    "cast_storage", _infer_storage,
    registry.computes(cast_cpu, registry.gpu_compute(_SPARSE_GPU, "cast_gpu")),
    sparse_from_dense=True)

# The values pass through unchanged: the gradient is the head gradient
# (MXNet's _backward_cast_storage, a copy).
set_gradient("cast_storage", lambda node, ograds: [apply("_copy", ograds[0])])
