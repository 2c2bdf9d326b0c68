"""LayerNorm, GroupNorm and InstanceNorm with MXNet 1.9.1's names,
parameters, shapes and types (src/operator/nn/layer_norm.cc,
group_norm.cc, instance_norm.cc), and their _backward_* operators.

All three normalize rows of an (outer, n, inner) view of the data (see
row_norm_cpu.h) and share one kernel:

- LayerNorm(data, gamma, beta; axis=-1, eps=1e-5, output_mean_var): rows
  across 'axis'; gamma and beta have the axis's length; outputs (output,
  mean, std), mean and std of the data's shape with 'axis' set to 1.
- GroupNorm(data, gamma, beta; num_groups=1, eps=1e-5, output_mean_var):
  data (N, C, ...) with C divisible by num_groups, each (sample, group)
  one row; gamma and beta have num_groups values (MXNet 1.9.1's shape);
  mean and std are (N, num_groups).
- InstanceNorm(data, gamma, beta; eps=1e-3): each (sample, channel) one
  row; gamma and beta have C values; float32 only, as MXNet's legacy
  operator; hidden outputs (mean, var) of shape (N, C), 'var' the variance.

std is sqrt(var + eps) with the biased variance.  The mean and std outputs
get no gradient.  Backward: _backward_<op>(out_grad, data, gamma, mean,
std or var) -> (data_grad, gamma_grad, beta_grad)."""
import math
import struct

import numpy as np

from mx_ops.core._nn_common import FLOATS
from mx_ops.core._params import Param
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.partial_infer import set_infer_shape_partial, set_infer_type_partial
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.norm import _row_norm_cpu
from mx_storage.resource import ResourceRequest

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_ROW_NORM_GPU = "mx_ops.ops.norm._row_norm_gpu"
_KERNELS = _row_norm_cpu.kernels()
ARGUMENTS = ("data", "gamma", "beta")
BACKWARD_ARGUMENTS = ("out_grad", "data", "gamma", "mean", "std")

_EPS_DOC = "An `epsilon` parameter to prevent division by 0."
_OMV_DOC = "Output the mean and std calculated along the given axis."


class _Norm:
    """One operator's geometry: ``view(params, shape)`` -> (outer, n, inner,
    per_row), ``stats(params, shape)`` -> the mean/std shape,
    ``vector(params, shape)`` -> the length of gamma and beta."""

    def __init__(self, name, view, stats, vector, save_var, dtypes, outputs):
        self.name, self.view, self.stats, self.vector = name, view, stats, vector
        self.save_var, self.dtypes, self.outputs = save_var, dtypes, outputs


def _layer_axis(op, params, shape):
    axis = params["axis"]
    if not -len(shape) <= axis < len(shape):
        raise ShapeError(f"{op}: argument 'axis' is {axis}, out of range for 'data' of shape "
                         f"{tuple(shape)}")
    return axis % len(shape)


def _layer_view(params, shape):
    a = _layer_axis("LayerNorm", params, shape)
    return math.prod(shape[:a]), shape[a], math.prod(shape[a + 1:]), 0


def _layer_stats(params, shape):
    a = _layer_axis("LayerNorm", params, shape)
    return tuple(shape[:a]) + (1,) + tuple(shape[a + 1:])


def _group_check(params, shape):
    g = params["num_groups"]
    if len(shape) < 3:
        raise ShapeError(f"GroupNorm: argument 'data' has shape {tuple(shape)}; it must have "
                         f"at least 3 dimensions (batch, channel, spatial...)")
    if shape[1] and shape[1] % g:
        raise ShapeError(f"GroupNorm: 'data' has {shape[1]} channels, not divisible by "
                         f"num_groups={g}")
    return g


def _group_view(params, shape):
    g = _group_check(params, shape)
    return shape[0] * g, math.prod(shape[1:]) // g, 1, g


def _group_stats(params, shape):
    return (shape[0], _group_check(params, shape))


def _instance_check(shape):
    if len(shape) < 3:
        raise ShapeError(f"InstanceNorm: argument 'data' has shape {tuple(shape)}; it must "
                         f"have at least 3 dimensions (batch, channel, spatial...)")


def _instance_view(params, shape):
    _instance_check(shape)
    return shape[0] * shape[1], math.prod(shape[2:]), 1, shape[1]


def _instance_stats(params, shape):
    _instance_check(shape)
    return (shape[0], shape[1])


NORMS = {
    "LayerNorm": _Norm("LayerNorm", _layer_view, _layer_stats,
                       lambda p, s: s[_layer_axis("LayerNorm", p, s)], False, FLOATS,
                       ("output", "mean", "std")),
    "GroupNorm": _Norm("GroupNorm", _group_view, _group_stats,
                       lambda p, s: _group_check(p, s), False, FLOATS,
                       ("output", "mean", "std")),
    "InstanceNorm": _Norm("InstanceNorm", _instance_view, _instance_stats,
                          lambda p, s: (_instance_check(s), s[1])[1], True, ("float32",),
                          ("output", "mean", "var")),
}

_PARAMS = {
    "LayerNorm": {
        "axis": Param("int", -1, doc="The axis to perform layer normalization. Usually, this "
                                     "should be be axis of the channel dimension. Negative "
                                     "values means indexing from right to left."),
        "eps": Param("float", 1e-5, doc=_EPS_DOC),
        "output_mean_var": Param("bool", False, doc=_OMV_DOC),
    },
    "GroupNorm": {
        "num_groups": Param("int", 1, low=1, doc="Total number of groups."),
        "eps": Param("float", 1e-5, doc=_EPS_DOC),
        "output_mean_var": Param("bool", False, doc=_OMV_DOC),
    },
    "InstanceNorm": {
        "eps": Param("float", 1e-3, doc=_EPS_DOC),
    },
}

_DOCS = {
    "LayerNorm": "Layer normalization: normalizes the data along 'axis' by its mean and "
                 "variance there, then scales by gamma and shifts by beta (both of the axis's "
                 "length): out = (data - mean) / sqrt(var + eps) * gamma + beta.  Outputs "
                 "(output, mean, std), mean and std returned only with output_mean_var.",
    "GroupNorm": "Group normalization: the channels of data (N, C, ...) are split into "
                 "num_groups groups; each (sample, group) is normalized by its mean and "
                 "variance, then scaled by gamma and shifted by beta (one value per group). "
                 "Outputs (output, mean, std) of which mean and std, (N, num_groups), are "
                 "returned only with output_mean_var.",
    "InstanceNorm": "Instance normalization: each (sample, channel) of data (N, C, ...) is "
                    "normalized by its mean and variance over the spatial dimensions, then "
                    "scaled by gamma and shifted by beta (one value per channel).",
}

_INPUT_DOCS = {
    "LayerNorm": {"data": "Input data to layer normalization", "gamma": "gamma array",
                  "beta": "beta array"},
    "GroupNorm": {"data": "Input data", "gamma": "gamma array", "beta": "beta array"},
    "InstanceNorm": {
        "data": "An n-dimensional input array (n > 2) of the form [batch, channel, "
                "spatial_dim1, spatial_dim2, ...].",
        "gamma": "A vector of length 'channel', which multiplies the normalized input.",
        "beta": "A vector of length 'channel', which is added to the product of the "
                "normalized input and the weight."},
}


def _forward_shape(norm):
    def infer(params, shapes):
        data = tuple(shapes[0])
        if not data:
            raise ShapeError(f"{norm.name}: argument 'data' must have at least one "
                             f"dimension, got shape ()")
        k = norm.vector(params, data)
        for name, s in zip(ARGUMENTS[1:], shapes[1:]):
            if tuple(s) != (k,):
                raise ShapeError(f"{norm.name}: argument '{name}' has shape {tuple(s)}; for "
                                 f"'data' of shape {data} it must be ({k},)")
        stats = norm.stats(params, data)
        return [data, stats, stats]
    return infer


def _backward_shape(norm):
    forward = _forward_shape(norm)

    def infer(params, shapes):
        og, data, gamma, mean, sd = (tuple(s) for s in shapes)
        op = f"_backward_{norm.name}"
        if og != data:
            raise ShapeError(f"{op}: argument 'out_grad' has shape {og}, which differs from "
                             f"'data' {data}")
        _, stats, _ = forward(params, [data, gamma, gamma])
        for name, s in ((BACKWARD_ARGUMENTS[3], mean), (BACKWARD_ARGUMENTS[4], sd)):
            if s != stats:
                raise ShapeError(f"{op}: argument '{name}' has shape {s}; for 'data' of "
                                 f"shape {data} it must be {stats}")
        return [data, gamma, gamma]
    return infer


def _types(norm, op, names):
    def infer(params, dtypes):
        data = dtypes[names.index("data")]
        if data not in norm.dtypes:
            raise TypeInferenceError(f"{op}: argument 'data' has dtype {data}; supported: "
                                     f"{', '.join(norm.dtypes)}")
        for name, d in zip(names, dtypes):
            if d != data:
                raise TypeInferenceError(f"{op}: argument '{name}' has dtype {d}, which "
                                         f"differs from 'data' {data}")
        return [data] * 3
    return infer


def _pack(norm, data_index):
    def pack(params, shapes):
        outer, n, inner, per_row = norm.view(params, tuple(shapes[data_index]))
        # eps is a float32 field in MXNet.
        return struct.pack("=qqqqdii", outer, n, inner, per_row,
                           float(np.float32(params["eps"])), norm.save_var, 0)  # RowNormParam
    return pack


def _workspace(norm):
    def size(params, shapes):
        outer, n, inner, per_row = norm.view(params, tuple(shapes[1]))
        return 8 * max(1, _row_norm_cpu.workspace_doubles(outer, n, inner, per_row))
    return size


def _visible(params):
    return 3 if params.get("output_mean_var") else 1


for _norm in NORMS.values():
    _name, _params = _norm.name, _PARAMS[_norm.name]
    _back_args = BACKWARD_ARGUMENTS[:4] + (_norm.outputs[2],)
    register(OpDef(
        _name, arguments=ARGUMENTS, outputs=_norm.outputs, params=_params,
        input_docs=_INPUT_DOCS[_name], infer_shape=_forward_shape(_norm),
        infer_type=_types(_norm, _name, ARGUMENTS),
        compute=computes(_KERNELS["forward"], gpu_compute(_ROW_NORM_GPU, "forward", _name)),
        pack_params=_pack(_norm, 0), num_visible_outputs=_visible,
        doc=_DOCS[_name] + f"  Backward: _backward_{_name}."))
    register(OpDef(
        f"_backward_{_name}", arguments=_back_args,
        outputs=("data_grad", "gamma_grad", "beta_grad"), params=_params,
        infer_shape=_backward_shape(_norm),
        infer_type=_types(_norm, f"_backward_{_name}", _back_args),
        compute=computes(_KERNELS["backward"], gpu_compute(_ROW_NORM_GPU, "backward", _name)),
        pack_params=_pack(_norm, 1), resources=(ResourceRequest.TEMP_SPACE,),
        workspace=_workspace(_norm), differentiable=False,
        doc=f"Gradient of {_name} from (out_grad, data, gamma, mean, {_norm.outputs[2]}) with "
            f"the forward's parameters: (data_grad, gamma_grad, beta_grad)."))
    # The backward reads the output gradient, data, gamma and the saved
    # statistics (outputs 1 and 2); these get no gradient themselves.
    set_gradient(_name, backward_op(_name, lambda n, g: [g[0], n.inputs[0], n.inputs[1],
                                                         n.outputs()[1], n.outputs()[2]]))


# --- partial inference (graph-level FInferShape/FInferType: 0 = unknown) ----------

def _partial_shape(norm):
    """gamma and beta from the data's channel (group) count, the outputs
    from the data's shape, once the dimensions they need are known."""
    def rule(params, ins, outs):
        if outs[0] is not None:
            ins.assign(0, outs[0], why="the shape of the output")
        data = ins[0]
        if data is None:
            return ins, outs
        outs.assign(0, data, why="the shape of 'data'")
        try:
            k = norm.vector(params, data)
        except IndexError:
            return ins, outs
        if k:
            for i in (1, 2):
                ins.assign(i, (k,), why=f"for 'data' of shape {tuple(data)}")
        stats = norm.stats(params, data)
        for i in (1, 2):
            outs.assign(i, stats, why=f"for 'data' of shape {tuple(data)}")
        return ins, outs
    return rule


def _partial_type(norm):
    def rule(params, ins, outs):
        known = [d for d in list(ins) + list(outs) if d is not None]
        if not known:
            return ins, outs
        data = known[0]
        if data not in norm.dtypes:
            raise TypeInferenceError(f"{norm.name}: argument 'data' has dtype {data}; "
                                     f"supported: {', '.join(norm.dtypes)}")
        for side in (ins, outs):
            for i in range(len(side)):
                side.assign(i, data, why=f"all of {norm.name}'s inputs and outputs share one "
                                         f"dtype")
        return ins, outs
    return rule


for _norm in NORMS.values():
    set_infer_shape_partial(_norm.name, _partial_shape(_norm))
    set_infer_type_partial(_norm.name, _partial_type(_norm))
