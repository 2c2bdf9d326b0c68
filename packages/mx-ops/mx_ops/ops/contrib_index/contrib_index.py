"""Registrations of MXNet's contrib index operators _contrib_index_copy
(with _contrib_backward_index_copy) and _contrib_index_array
(mx.nd.contrib.index_copy, mx.nd.contrib.index_array)."""
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
