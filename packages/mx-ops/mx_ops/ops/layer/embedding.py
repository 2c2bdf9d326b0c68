"""Embedding and _backward_Embedding with MXNet 1.x's names and parameters
(src/operator/tensor/indexing_op.h).

Embedding(data, weight) picks rows of weight (input_dim, output_dim) by the
indices in data (any dtype; C-cast to int64, so floats truncate toward
zero), clipped to [0, input_dim) as MXNet's forward does; the output is
data.shape + (output_dim,) of 'dtype', which is also the weight's dtype.

``_backward_Embedding(out_grad, data) -> (data_grad, weight_grad)``: the
indices get a zero gradient (MXNet computes none), the weight the sum of
out_grad's rows over the positions that picked each row, in a fixed order
(embedding_cpu.h).  With sparse_grad=True its storage rule makes the weight
gradient row_sparse (MXNet's SparseEmbeddingOpBackwardEx): the sorted
distinct indices present and their summed rows, by embedding_rsp_cpu.h
without the GIL (an index out of [0, input_dim) is then an error, as in
MXNet).  ``_contrib_SparseEmbedding`` is Embedding whose weight gradient is
always row_sparse (mx.nd.contrib.SparseEmbedding)."""
import struct

import numpy as np

from mx_ops.core._nn_common import FLOATS
from mx_ops.core._params import Param
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.node import make_node
from mx_ops.core.partial_infer import set_infer_shape_partial, set_infer_type_partial
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.core.stype import (DISPATCH_COMPUTE, DISPATCH_COMPUTE_EX, DISPATCH_FALLBACK,
                               set_storage_inference)
from mx_ops.ops.layer import _layer_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_LAYER_GPU = "mx_ops.ops.layer._layer_gpu"

_KERNELS = _layer_cpu.kernels()

PARAMS = {
    "input_dim": Param("int", low=1, doc="Vocabulary size of the input indices."),
    "output_dim": Param("int", low=1, doc="Dimension of the embedding vectors."),
    "dtype": Param("dtype", "float32", doc="Data type of weight."),
    "sparse_grad": Param("bool", False, doc="Compute row sparse gradient in the backward "
                                            "calculation. If set to True, the grad's storage "
                                            "type is row_sparse."),
}


def _check_weight(op, params, weight):
    want = (params["input_dim"], params["output_dim"])
    if tuple(weight) != want:
        raise ShapeError(f"{op}: argument 'weight' has shape {tuple(weight)}, expected {want} "
                         f"(input_dim, output_dim)")


def _shape(params, shapes):
    op = "Embedding"
    _check_weight(op, params, shapes[1])
    return [tuple(shapes[0]) + (params["output_dim"],)]


def _type(params, dtypes):
    if dtypes[1] != params["dtype"]:
        raise TypeInferenceError(f"Embedding: argument 'weight' has dtype {dtypes[1]}, but "
                                 f"argument 'dtype' is {params['dtype']} (the weight's and the "
                                 f"output's dtype)")
    return [params["dtype"]]


def _pack(params, shapes):
    return struct.pack("=qq", params["input_dim"], params["output_dim"])  # EmbeddingParam


def _bwd_shape(params, shapes):
    op = "_backward_Embedding"
    og, data = tuple(shapes[0]), tuple(shapes[1])
    want = data + (params["output_dim"],)
    if og != want:
        raise ShapeError(f"{op}: argument 'out_grad' has shape {og}, expected {want} ('data' "
                         f"{data} + (output_dim,))")
    return [data, (params["input_dim"], params["output_dim"])]


def _bwd_type(params, dtypes):
    op = "_backward_Embedding"
    if dtypes[0] != params["dtype"]:
        raise TypeInferenceError(f"{op}: argument 'out_grad' has dtype {dtypes[0]}, but "
                                 f"argument 'dtype' is {params['dtype']}")
    if dtypes[0] not in FLOATS:
        raise TypeInferenceError(f"{op}: the weight's gradient needs a float dtype; 'dtype' "
                                 f"is {dtypes[0]} (supported: {', '.join(FLOATS)})")
    return [dtypes[1], dtypes[0]]


_FORWARD = dict(
    arguments=("data", "weight"), params=PARAMS, infer_shape=_shape,
    input_docs={"data": "Indices into the table, any shape (cast to int, clipped to "
                        "[0, input_dim - 1]).",
                "weight": "The embedding table, (input_dim, output_dim)."},
    infer_type=_type,
    compute=computes(_KERNELS["embedding"], gpu_compute(_LAYER_GPU, "embedding", _pack)),
    pack_params=_pack,
    doc="Maps integer indices to vector representations (embeddings): output[..., :] = "
        "weight[clip(int(data[...]), 0, input_dim - 1), :].  Backward: "
        "_backward_Embedding(out_grad, data); with sparse_grad=True the weight's gradient "
        "is row_sparse.")
register(OpDef("Embedding", **_FORWARD))
register(OpDef("_contrib_SparseEmbedding", **dict(
    _FORWARD, doc="Embedding for a large input_dim whose weight gradient is always "
                  "row_sparse (the sorted distinct indices present and their summed rows); "
                  "'sparse_grad' is ignored.")))

register(OpDef(
    "_backward_Embedding", arguments=("out_grad", "data"),
    outputs=("data_grad", "weight_grad"), params=PARAMS, infer_shape=_bwd_shape,
    infer_type=_bwd_type,
    compute=computes(_KERNELS["embedding_backward"],
                     gpu_compute(_LAYER_GPU, "embedding_backward", _pack)),
    pack_params=_pack, differentiable=False,
    doc="Gradient of Embedding from (out_grad, data): (data_grad = 0, weight_grad, the "
        "rows of out_grad summed per picked weight row)."))


# The gradient: _backward_Embedding reads the out_grad and the indices.
set_gradient("Embedding", backward_op("Embedding", lambda n, g: [g[0], n.inputs[0]]))


def _sparse_embedding_grad(node, ograds):
    """SparseEmbedding's gradient: _backward_Embedding with sparse_grad."""
    back = make_node("_backward_Embedding", [ograds[0], node.inputs[0]],
                     name=f"{node.name}_backward", **dict(node.params, sparse_grad=True))
    return back.outputs()


set_gradient("_contrib_SparseEmbedding", _sparse_embedding_grad)


# --- the row_sparse weight gradient (sparse_grad=True) --------------------------------
def _bwd_storage(params, in_stypes, device):
    """MXNet's EmbeddingOpBackwardStorageType: sparse_grad makes the weight
    gradient row_sparse by the sparse kernel (dense out_grad and indices);
    without it, or with a sparse input, everything is dense (a sparse input
    falls back)."""
    del device
    dense_in = all(s == "default" for s in in_stypes)
    if params["sparse_grad"] and dense_in:
        return ["default", "row_sparse"], DISPATCH_COMPUTE_EX
    return ["default", "default"], DISPATCH_COMPUTE if dense_in else DISPATCH_FALLBACK


def _zero_data_grad(out, req):
    if req != "null":
        out[...] = 0


def _bwd_rsp_cpu(params, inputs, outputs, reqs):
    og, idx = inputs
    _zero_data_grad(outputs[0], reqs[0])
    _layer_cpu.embedding_rsp_grad(np.ascontiguousarray(og), np.ascontiguousarray(idx),
                                  outputs[1], params["input_dim"])


def _bwd_rsp_gpu(params, inputs, outputs, reqs):
    """The same rows with CuPy: unique indices, then the positions' rows
    added per kept row (atomics: the order of the sum is not fixed)."""
    import cupyx
    og, idx = inputs
    blob = outputs[1]
    xp = blob.xp
    _zero_data_grad(outputs[0], reqs[0])
    rows = idx.reshape(-1).astype(np.int64)
    if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= params["input_dim"]):
        raise IndexError(f"_backward_Embedding: an index of 'data' is out of range [0, "
                         f"{params['input_dim']}) (input_dim); sparse_grad=True does not "
                         f"clip indices")
    kept, where = xp.unique(rows, return_inverse=True)
    acc = np.float32 if blob.dtype == np.float16 else blob.dtype
    sums = xp.zeros((kept.shape[0], blob.shape[1]), acc)
    cupyx.scatter_add(sums, where.reshape(-1), og.reshape(-1, blob.shape[1]).astype(acc))
    blob.alloc_rsp(int(kept.shape[0]))
    blob.indices[...] = kept
    blob.data[...] = sums.astype(blob.dtype)


def _bwd_sparse_from_dense(params):
    """Which calls of _backward_Embedding take the storage dispatch: those
    with sparse_grad, whose output is row_sparse from dense inputs."""
    return bool(params["sparse_grad"])


set_storage_inference("_backward_Embedding", _bwd_storage,
                      {"cpu": _bwd_rsp_cpu, "gpu": _bwd_rsp_gpu},
                      sparse_from_dense=_bwd_sparse_from_dense)


# --- partial inference (graph-level FInferShape/FInferType: 0 = unknown) ----------

def _embedding(params, ins, outs):
    """EmbeddingOpShape: once the data's rank is known, weight (input_dim,
    output_dim) and the output data.shape + (output_dim,)."""
    data = ins[0]
    if data is None:
        return ins, outs
    ins.assign(1, (params["input_dim"], params["output_dim"]), why="input_dim, output_dim")
    outs.assign(0, data + (params["output_dim"],), why=f"'data' {data} + (output_dim,)")
    return ins, outs


def _embedding_types(params, ins, outs):
    """EmbeddingOpType: the weight and the output have the 'dtype'
    parameter's dtype; the indices' dtype is the caller's."""
    dtype = params["dtype"]
    ins.assign(1, dtype, why=f"Embedding's argument 'dtype' is {dtype}")
    outs.assign(0, dtype, why=f"Embedding's argument 'dtype' is {dtype}")
    return ins, outs


set_infer_shape_partial("Embedding", _embedding)
set_infer_type_partial("Embedding", _embedding_types)
set_infer_shape_partial("_contrib_SparseEmbedding", _embedding)
set_infer_type_partial("_contrib_SparseEmbedding", _embedding_types)
