"""Embedding and _backward_Embedding with MXNet 1.x's names and parameters
(src/operator/tensor/indexing_op.h).

Embedding(data, weight) picks rows of weight (input_dim, output_dim) by the
indices in data (any dtype; C-cast to int64, so floats truncate toward
zero), clipped to [0, input_dim) as MXNet's forward does; the output is
data.shape + (output_dim,) of 'dtype', which is also the weight's dtype.

``_backward_Embedding(out_grad, data) -> (data_grad, weight_grad)``: the
indices get a zero gradient (MXNet computes none), the weight the sum of
out_grad's rows over the positions that picked each row, in a fixed order
(embedding_cpu.h).  Only dense gradients exist here, so sparse_grad=True
is refused."""
import struct

from mx_ops.core._nn_common import FLOATS
from mx_ops.core._params import Param, ParamError
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.partial_infer import set_infer_shape_partial, set_infer_type_partial
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.layer import _layer_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_LAYER_GPU = "mx_ops.ops.layer._layer_gpu"

_KERNELS = _layer_cpu.kernels()

PARAMS = {
    "input_dim": Param("int", low=1, doc="Vocabulary size of the input indices."),
    "output_dim": Param("int", low=1, doc="Dimension of the embedding vectors."),
    "dtype": Param("dtype", "float32", doc="Data type of weight."),
    "sparse_grad": Param("bool", False, doc="Compute row sparse gradient in the backward "
                                            "calculation (not supported: must be False)."),
}


def _check_params(op, params):
    if params["sparse_grad"]:
        raise ParamError(f"{op}: argument 'sparse_grad' True is not supported (row_sparse "
                         f"gradients are not implemented); use sparse_grad=False")


def _check_weight(op, params, weight):
    want = (params["input_dim"], params["output_dim"])
    if tuple(weight) != want:
        raise ShapeError(f"{op}: argument 'weight' has shape {tuple(weight)}, expected {want} "
                         f"(input_dim, output_dim)")


def _shape(params, shapes):
    op = "Embedding"
    _check_params(op, params)
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
    _check_params(op, params)
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


register(OpDef(
    "Embedding", arguments=("data", "weight"), params=PARAMS, infer_shape=_shape,
    input_docs={"data": "Indices into the table, any shape (cast to int, clipped to "
                        "[0, input_dim - 1]).",
                "weight": "The embedding table, (input_dim, output_dim)."},
    infer_type=_type,
    compute=computes(_KERNELS["embedding"], gpu_compute(_LAYER_GPU, "embedding", _pack)),
    pack_params=_pack,
    doc="Maps integer indices to vector representations (embeddings): output[..., :] = "
        "weight[clip(int(data[...]), 0, input_dim - 1), :].  Backward: "
        "_backward_Embedding(out_grad, data)."))

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


# --- partial inference (graph-level FInferShape/FInferType: 0 = unknown) ----------

def _embedding(params, ins, outs):
    """EmbeddingOpShape: once the data's rank is known, weight (input_dim,
    output_dim) and the output data.shape + (output_dim,)."""
    _check_params("Embedding", params)
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
