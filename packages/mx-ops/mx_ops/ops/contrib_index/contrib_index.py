"""Registrations of MXNet's contrib index operators _contrib_index_copy
(with _contrib_backward_index_copy), _contrib_index_array and
_contrib_boolean_mask (mx.nd.contrib.index_copy, index_array, boolean_mask)."""
import struct

from mx_ops.core._params import Param
from mx_ops.core.gradient import apply, set_gradient, zeros_like
from mx_ops.core.node import NodeEntry
from mx_ops.core.partial_infer import fixed_type, same_type, set_infer_type_partial
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.contrib_index import _contrib_index_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_GPU = "mx_ops.ops.contrib_index._contrib_index_gpu"

_KERNELS = _contrib_index_cpu.kernels()


def _copy_shape(params, shapes):
    old, idx, new = (tuple(s) for s in shapes)
    if len(old) == 0 or len(idx) != 1 or new != idx + old[1:]:
        raise ShapeError(f"_contrib_index_copy: 'old_tensor' {old} needs a 1-D 'index_vector' "
                         f"(got {idx}) and a 'new_tensor' of shape (len(index_vector),) + "
                         f"old_tensor.shape[1:] (got {new})")
    return [old]


def _copy_type(params, dtypes):
    if dtypes[2] != dtypes[0]:
        raise TypeInferenceError(f"_contrib_index_copy: 'new_tensor' has dtype {dtypes[2]}, "
                                 f"'old_tensor' {dtypes[0]}")
    return [dtypes[0]]


register(OpDef(
    "_contrib_index_copy", arguments=("old_tensor", "index_vector", "new_tensor"),
    input_docs={"old_tensor": "Old tensor.", "index_vector": "Index vector (rows of "
                "'old_tensor', any dtype, cast to int).", "new_tensor": "New tensor to be "
                "copied, (len(index_vector),) + old_tensor.shape[1:]."},
    infer_shape=_copy_shape, infer_type=_copy_type,
    compute=computes(_KERNELS["index_copy"], gpu_compute(_GPU, "index_copy")),
    inplace=((0, 0),),
    doc="A copy of 'old_tensor' whose row index_vector[i] (axis 0) is row i of "
        "'new_tensor' (the last one where indices repeat)."))


def _backward_shape(params, shapes):
    g, idx = tuple(shapes[0]), tuple(shapes[1])
    if len(g) == 0 or len(idx) != 1:
        raise ShapeError(f"_contrib_backward_index_copy: 'ograd' {g} needs a 1-D "
                         f"'index_vector', got {idx}")
    return [g, idx + g[1:]]


register(OpDef(
    "_contrib_backward_index_copy", arguments=("ograd", "index_vector"),
    input_docs={"ograd": "Gradient of index_copy's output.",
                "index_vector": "index_copy's 'index_vector'."},
    outputs=("old_tensor_grad", "new_tensor_grad"),
    infer_shape=_backward_shape, infer_type=lambda p, t: [t[0], t[0]],
    compute=computes(_KERNELS["index_copy_backward"],
                     gpu_compute(_GPU, "index_copy_backward")),
    differentiable=False,
    doc="index_copy's gradients: the output gradient with the replaced rows zeroed "
        "(old_tensor's), and its rows at 'index_vector' (new_tensor's)."))


def _index_copy(node, ograds):
    old, idx, _ = node.inputs
    back = apply("_contrib_backward_index_copy", ograds[0], idx)
    return [back, zeros_like(idx), NodeEntry(back.node, 1)]


set_gradient("_contrib_index_copy", _index_copy)
set_infer_type_partial("_contrib_index_copy", same_type(inputs=(0, 2)))
set_infer_type_partial("_contrib_backward_index_copy", same_type(inputs=(0,)))


# --- index_array ------------------------------------------------------------------------

def _axes(params, shape):
    nd, axes = len(shape), params["axes"]
    if axes is None:
        return tuple(range(nd))
    out = []
    for a in axes:
        if not -nd <= a < nd:
            raise ShapeError(f"_contrib_index_array: argument 'axes' holds {a}, out of range "
                             f"for 'data' of shape {tuple(shape)}")
        out.append(a % nd)
    return tuple(out)


def _array_pack(params, shapes):
    shape = tuple(shapes[0])
    axes = _axes(params, shape)
    return struct.pack(f"={len(shape) + len(axes) + 2}q", len(shape), *shape, len(axes), *axes)


register(OpDef(
    "_contrib_index_array", arguments=("data",), input_docs={"data": "Input data."},
    params={"axes": Param("shape", None, doc="The axes to include in the index array "
                                             "(negative values count from the end); None: "
                                             "all of them.")},
    infer_shape=lambda p, s: [tuple(s[0]) + (len(_axes(p, s[0])),)],
    infer_type=lambda p, t: ["int64"],
    compute=computes(_KERNELS["index_array"], gpu_compute(_GPU, "index_array", _array_pack)),
    pack_params=_array_pack,
    doc="The index of every element of 'data' along 'axes': int64, data.shape + "
        "(len(axes),), out[..., j] the element's coordinate on axes[j]."))

# Values of the data are not read: MXNet's zero gradient.
set_gradient("_contrib_index_array", lambda node, ograds: [zeros_like(node.inputs[0])])
set_infer_type_partial("_contrib_index_array", fixed_type("int64"))


# --- boolean_mask -----------------------------------------------------------------------
# The output's length is the number of nonzero mask values: a dynamic shape.
# Inference leaves that dimension 0 (unknown); mx-ndarray computes the pair
# from the mask's values (mx_ndarray._dynamic), and an executor holding one
# runs its graph node by node.

def _mask_shapes(params, shapes):
    data, index = (tuple(s) for s in shapes)
    if params["axis"] != 0:
        raise ShapeError(f"_contrib_boolean_mask: argument 'axis' is {params['axis']}; only 0 "
                         f"is supported, as in MXNet 1.9.1")
    if len(data) == 0 or len(index) != 1 or (index[0] and data[0] and index[0] != data[0]):
        raise ShapeError(f"_contrib_boolean_mask: argument 'index' has shape {index}; it must "
                         f"be 1-D with the length of axis 0 of 'data' {data}")
    return [(0,) + data[1:]]


def _mask_partial(params, ins, outs):
    if ins[0] is not None and ins[1] is not None:
        _mask_shapes(params, ins)
    if ins[0] is not None and len(ins[0]):
        outs.assign(0, (0,) + tuple(ins[0][1:]))
        ins.assign(1, (ins[0][0],))
    return ins, outs


register(OpDef(
    "_contrib_boolean_mask", arguments=("data", "index"),
    input_docs={"data": "Data.", "index": "Mask: 1-D, as long as axis 0 of 'data'; a row is "
                                          "kept where it is nonzero."},
    params={"axis": Param("int", 0, doc="The axis to select along (only 0).")},
    infer_shape=_mask_shapes, infer_shape_partial=_mask_partial,
    infer_type=lambda p, t: [t[0]], compute={}, dynamic_shape=True,
    doc="The rows of 'data' (axis 0) where 'index' is nonzero, in order; the output's "
        "length depends on the mask's values."))


def _mask_backward_partial(params, ins, outs):
    # The gradients have the forward inputs' shapes, whatever the mask kept.
    for i in (0, 1):
        if ins[i + 1] is not None:
            outs.assign(i, tuple(ins[i + 1]))
    return ins, outs


register(OpDef(
    "_backward_contrib_boolean_mask", arguments=("ograd", "data", "index"),
    input_docs={"ograd": "Gradient of boolean_mask's output.",
                "data": "boolean_mask's input 'data'.", "index": "boolean_mask's mask."},
    params={"axis": Param("int", 0, doc="boolean_mask's axis.")},
    outputs=("data_grad", "index_grad"),
    infer_shape=lambda p, s: [tuple(s[1]), tuple(s[2])],
    infer_shape_partial=_mask_backward_partial,
    infer_type=lambda p, t: [t[1], t[2]], compute={}, dynamic_shape=True,
    differentiable=False,
    doc="boolean_mask's gradients: the output gradient's rows scattered back to the kept "
        "rows of 'data' (zeros elsewhere), and zeros for 'index'."))


def _mask_gradient(node, ograds):
    back = apply("_backward_contrib_boolean_mask", ograds[0], *node.inputs,
                 axis=node.params["axis"])
    return [back, NodeEntry(back.node, 1)]


set_gradient("_contrib_boolean_mask", _mask_gradient)
set_infer_type_partial("_contrib_boolean_mask", same_type(inputs=(0,)))


def _mask_backward_types(params, ins, outs):
    # ograd, data and data_grad share a dtype; index_grad has the mask's.
    for i, o in ((1, 0), (0, 0), (2, 1)):
        if ins[i] is not None:
            outs.assign(o, ins[i])
    for o, i in ((0, 0), (0, 1), (1, 2)):
        if outs[o] is not None:
            ins.assign(i, outs[o])
    return ins, outs


set_infer_type_partial("_backward_contrib_boolean_mask", _mask_backward_types)
