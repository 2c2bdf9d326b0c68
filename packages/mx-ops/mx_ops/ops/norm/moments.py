"""moments: the mean and (biased) variance of the data over 'axes', with
MXNet 1.9.1's parameters, shapes and types (src/operator/nn/moments.cc):
outputs (mean, var) of the reduction's shape (ReduceAxesShapeImpl, with
'keepdims'), in the data's dtype (float16, float32, float64; MXNet also
runs integers); 'axes' must be given (MXNet: "Empty axes is not
supported").  Backward: _backward_moments(mean_grad, var_grad, data,
mean) -> data_grad = (mean_grad + 2 var_grad (data - mean)) / N."""
import struct

from mx_ops.core._params import Param
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.partial_infer import set_infer_shape_partial
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.norm import _moments_cpu
from mx_ops.ops.reduce.reduce import FLOATS, MAX_DIM, normalize_axes, reduce_shape

_MOMENTS_GPU = "mx_ops.ops.norm._moments_gpu"
_KERNELS = _moments_cpu.kernels()
# mxop::MomentsParam: ndim, reserved, dims[8], reduced[8]
_PARAM = struct.Struct(f"=2i{MAX_DIM}q{MAX_DIM}i")

_PARAMS = {
    "axes": Param("shape", None, doc="Array of ints. Axes along which to compute mean and "
                                     "variance."),
    "keepdims": Param("bool", False, doc="produce moments with the same dimensionality as the "
                                         "input."),
}


def _axes(op, params, shape):
    axes = params["axes"]
    if not axes:
        raise ShapeError(f"{op}: argument 'axes' is empty; MXNet does not support empty axes "
                         f"(pass every axis for global moments)")
    return normalize_axes(op, axes, shape)


def _out_shape(op, params, shape):
    _axes(op, params, shape)
    return reduce_shape(op, {"axis": params["axes"], "keepdims": params["keepdims"]}, shape)


def merged_dims(op, params, shape):
    """(dims, reduced flags): the data's dimensions without those of size 1,
    neighbours of one kind merged."""
    axes = set(_axes(op, params, shape))
    dims, flags = [], []
    for i, e in enumerate(shape):
        if e == 1:
            continue
        red = i in axes
        if flags and flags[-1] == red:
            dims[-1] *= e
        else:
            dims.append(e)
            flags.append(red)
    return dims, flags


def _pack(data_index):
    def pack(params, shapes):
        dims, flags = merged_dims("moments", params, tuple(shapes[data_index]))
        pad = MAX_DIM - len(dims)
        return _PARAM.pack(len(dims), 0, *dims, *([0] * pad), *map(int, flags), *([0] * pad))
    return pack


def _forward_shape(params, shapes):
    out = _out_shape("moments", params, tuple(shapes[0]))
    return [out, out]


def _backward_shape(params, shapes):
    gm, gv, data, mean = (tuple(s) for s in shapes)
    out = _out_shape("_backward_moments", params, data)
    for name, s in (("mean_grad", gm), ("var_grad", gv), ("mean", mean)):
        if s != out:
            raise ShapeError(f"_backward_moments: argument '{name}' has shape {s}; for 'data' "
                             f"of shape {data} it must be {out}")
    return [data]


def _forward_type(params, dtypes):
    # MXNet also runs integer moments (truncating means); here they are
    # refused, as the kernels' sums of squares would overflow.
    if dtypes[0] not in FLOATS:
        raise TypeInferenceError(f"moments: argument 'data' has dtype {dtypes[0]}; "
                                 f"supported: {', '.join(FLOATS)}")
    return [dtypes[0], dtypes[0]]


def _backward_type(params, dtypes):
    if dtypes[2] not in FLOATS:
        raise TypeInferenceError(f"_backward_moments: argument 'data' has dtype {dtypes[2]}; "
                                 f"supported: {', '.join(FLOATS)}")
    for name, d in zip(("mean_grad", "var_grad", "data", "mean"), dtypes):
        if d != dtypes[2]:
            raise TypeInferenceError(f"_backward_moments: argument '{name}' has dtype {d}, "
                                     f"which differs from 'data' {dtypes[2]}")
    return [dtypes[2]]


register(OpDef(
    "moments", arguments=("data",), outputs=("mean", "var"), params=_PARAMS,
    input_docs={"data": "Input ndarray"}, infer_shape=_forward_shape,
    infer_type=_forward_type,
    compute=computes(_KERNELS["forward"], gpu_compute(_MOMENTS_GPU, "forward")),
    pack_params=_pack(0),
    doc="Calculate the mean and variance of `data` along 'axes' (both of the reduced shape; "
        "'keepdims' keeps the reduced axes as size 1).  Backward: _backward_moments."))

register(OpDef(
    "_backward_moments", arguments=("mean_grad", "var_grad", "data", "mean"),
    outputs=("data_grad",), params=_PARAMS, infer_shape=_backward_shape,
    infer_type=_backward_type,
    compute=computes(_KERNELS["backward"], gpu_compute(_MOMENTS_GPU, "backward")),
    pack_params=_pack(2), differentiable=False,
    doc="Gradient of moments from (mean_grad, var_grad, data, mean): (mean_grad + 2 var_grad "
        "(data - mean)) / N over the reduced axes."))

# The backward reads both output gradients, the data and the mean.
set_gradient("moments", backward_op("moments", lambda n, g: [g[0], g[1], n.inputs[0],
                                                             n.outputs()[0]]))


def _partial(params, ins, outs):
    """The outputs' shape once the data's rank and reduced axes are known
    (unknown dimensions stay unknown)."""
    data = ins[0]
    if data is None:
        return ins, outs
    out = _out_shape("moments", params, data)
    outs.assign(0, out, why=f"moments of 'data' {tuple(data)}")
    outs.assign(1, out, why=f"moments of 'data' {tuple(data)}")
    return ins, outs


set_infer_shape_partial("moments", _partial)
