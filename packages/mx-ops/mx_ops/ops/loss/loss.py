"""The regression outputs, MakeLoss (and MXNet's older make_loss) and
BlockGrad (alias stop_gradient), with MXNet 1.x's names, parameters and
gradients.

Forwards reuse the elementwise kernels (identity, or sigmoid for
LogisticRegressionOutput), CPU and GPU alike.  The backwards are gradients
of the losses these operators stand for, so out_grad is never read:
- LinearRegressionOutput / LogisticRegressionOutput:
  grad_scale / num_output * (output - label),
- MAERegressionOutput: grad_scale / num_output * sign(output - label) with
  MXNet's minus_sign (-1 where they are equal),
  where num_output = label.size / label.shape[0]; the label's gradient is 0.
  ``_backward_<Op>(label, out_data) -> (data_grad, label_grad)``, also
  under MXNet 1.x's names (``_backward_linear_reg_out``, ...).
- MakeLoss: grad_scale everywhere, divided with normalization='batch' by
  what MXNet's FlatTo2D calls the batch (the product of all axes but the
  last: 1 for a 1-D loss) and with 'valid' by the number of elements greater
  than valid_thresh (at least 1).  ``_backward_MakeLoss(data) ->
  data_grad``: data gives the shape, and with 'valid' the count.
- make_loss: MakeLoss with its defaults under its own registration; the
  gradient is a ones_like node (loss_grad.py).
- BlockGrad: the gradient is zero (a zeros_like node, see loss_grad.py).
"""
import math
import struct

from mx_ops.core import registry
from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.loss import _loss_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_LOSS_GPU = "mx_ops.ops.loss._loss_gpu"

_KERNELS = _loss_cpu.kernels()


def _unary_compute(name):
    """The compute of an elementwise op (CPU address and GPU callable): it
    reads input 0 only, so it serves an op with a label input too."""
    return dict(registry.get(name).compute)


# --- regression outputs ---------------------------------------------------------
_REG_PARAMS = {"grad_scale": Param("float", 1.0, doc="Scale the gradient by a float "
                                                     "factor")}
# MXNet name -> (forward op, MXNet 1.x's backward name, MAE, forward, loss)
REGRESSIONS = {
    "LinearRegressionOutput": ("_copy", "_backward_linear_reg_out", False, "the identity",
                               "squared"),
    "LogisticRegressionOutput": ("sigmoid", "_backward_logistic_reg_out", False,
                                 "the logistic function 1 / (1 + exp(-x))", "cross-entropy"),
    "MAERegressionOutput": ("_copy", "_backward_mae_reg_out", True, "the identity", "L1"),
}


def check_regression_label(op, data, label):
    """MXNet's rule: the label has data's first dimension and size ((n,) for
    data (n, 1), or data's shape)."""
    data, label = tuple(data), tuple(label)
    if not data:
        raise ShapeError(f"{op}: argument 'data' must have at least 1 dimension, got shape ()")
    if not label or label[0] != data[0] or math.prod(label) != math.prod(data):
        raise ShapeError(f"{op}: argument 'label' has shape {label}, which does not match "
                         f"'data' {data}: it must have data's first dimension and number of "
                         f"elements, e.g. {data}")


def _reg_shape(op):
    def infer(params, shapes):
        check_regression_label(op, shapes[0], shapes[1])
        return [tuple(shapes[0])]
    return infer


def _reg_bwd_shape(op):
    def infer(params, shapes):
        label, out = tuple(shapes[0]), tuple(shapes[1])
        check_regression_label(op, out, label)
        return [out, label]
    return infer


def _reg_pack(mae):
    def pack(params, shapes):
        label = tuple(shapes[0])
        num_output = math.prod(label[1:]) if label[0] else 1
        return struct.pack("=dii", params["grad_scale"] / max(num_output, 1), mae, 0)
    return pack                                                    # mxop::RegressionParam


for _name, (_fwd, _old, _mae, _what, _loss) in REGRESSIONS.items():
    register(OpDef(
        _name, arguments=("data", "label"), params=_REG_PARAMS, infer_shape=_reg_shape(_name),
        input_docs={"label": "The regression targets: data's first dimension and size (data's "
                                  "shape, or (n,) for data (n, 1))."},
        infer_type=same_float_types(_name, lambda p: ["data", "label"]),
        compute=_unary_compute(_fwd), inplace=((0, 0),),
        doc=f"Computes {_what} of 'data' for a regression against 'label'; the backward "
            f"pass gives the gradient of the {_loss} loss, "
            f"grad_scale / num_output * {'sign' if _mae else ''}(output - label), ignoring "
            f"out_grad.  Backward: _backward_{_name}(label, out_data)."))
    _back = f"_backward_{_name}"
    register(OpDef(
        _back, arguments=("label", "out_data"), outputs=("data_grad", "label_grad"),
        params=_REG_PARAMS, infer_shape=_reg_bwd_shape(_back),
        infer_type=same_float_types(_back, lambda p: ["label", "out_data"], nout=2),
        compute=computes(_KERNELS["regression_backward"],
                         gpu_compute(_LOSS_GPU, "regression_backward", _reg_pack(_mae))),
        pack_params=_reg_pack(_mae), aliases=(_old,), differentiable=False,
        doc=f"Gradient of {_name} from (label, out_data): (data_grad, label_grad = 0)."))


# --- MakeLoss -------------------------------------------------------------------
_MAKE_LOSS_PARAMS = {
    "grad_scale": Param("float", 1.0, doc="Gradient scale as a supplement to unary and "
                                          "binary operators"),
    "valid_thresh": Param("float", 0.0, doc="clip each element in the array to 0 when it is "
                                            "less than valid_thresh. This is used when "
                                            "normalization is set to 'valid'."),
    "normalization": Param("str", "null", choices=("null", "batch", "valid"),
                           doc="If this is set to null, the output gradient will not be "
                               "normalized. If this is set to batch, the output gradient will "
                               "be divided by the batch size. If this is set to valid, the "
                               "output gradient will be divided by the number of valid input "
                               "elements."),
}


def _make_loss_pack(params, shapes):
    data = tuple(shapes[0])
    scale = params["grad_scale"]
    if params["normalization"] == "batch":
        scale /= max(math.prod(data[:-1]), 1)      # MXNet: FlatTo2D's first dimension
    return struct.pack("=ddii", scale, params["valid_thresh"],
                       params["normalization"] == "valid", 0)      # mxop::MakeLossParam


register(OpDef(
    "MakeLoss", arguments=("data",), params=_MAKE_LOSS_PARAMS,
    infer_shape=lambda p, s: [tuple(s[0])], infer_type=lambda p, t: [t[0]],
    compute=_unary_compute("_copy"), inplace=((0, 0),),
    doc="Makes its input a loss: the forward is the identity, and the backward pass gives "
        "the gradient grad_scale (normalized per 'normalization') for every element, "
        "ignoring out_grad.  Backward: _backward_MakeLoss(data)."))

register(OpDef(
    "_backward_MakeLoss", arguments=("data",), outputs=("data_grad",),
    params=_MAKE_LOSS_PARAMS, infer_shape=lambda p, s: [tuple(s[0])],
    infer_type=same_float_types("_backward_MakeLoss", lambda p: ["data"]),
    compute=computes(_KERNELS["make_loss_backward"],
                     gpu_compute(_LOSS_GPU, "make_loss_backward", _make_loss_pack)),
    pack_params=_make_loss_pack, differentiable=False,
    doc="Gradient of MakeLoss from its input 'data' (its shape, and with "
        "normalization='valid' the count of elements above valid_thresh): data_grad."))


# MXNet 1.x's make_loss, a registration of its own (deprecated there for
# MakeLoss): the identity with output 'loss' and no parameters, whose
# gradient is ones_like(data) (loss_grad.py): MakeLoss with its defaults.
register(OpDef(
    "make_loss", arguments=("data",), outputs=("loss",),
    infer_shape=lambda p, s: [tuple(s[0])], infer_type=lambda p, t: [t[0]],
    compute=_unary_compute("_copy"), inplace=((0, 0),),
    doc="Makes its input a loss (deprecated: use MakeLoss): the forward is the identity, "
        "and the gradient of 'data' is 1 everywhere, ignoring out_grad."))


# --- BlockGrad ------------------------------------------------------------------
register(OpDef(
    "BlockGrad", arguments=("data",), infer_shape=lambda p, s: [tuple(s[0])],
    infer_type=lambda p, t: [t[0]], compute=_unary_compute("_copy"), inplace=((0, 0),),
    aliases=("stop_gradient",),
    doc="Stops gradient computation: the forward is the identity, and the gradient of "
        "'data' is zero."))
