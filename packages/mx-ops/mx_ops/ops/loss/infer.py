"""Partial shape inference of the loss operators, with MXNet 1.x's rules:
SoftmaxOutput's label (class indices: the data's shape without its last
axis; with multi_output (batch, positions)), the regression outputs' label
(the data's shape, or (batch,) for data (batch, 1)), and MakeLoss and
BlockGrad, whose output is their input (ElemwiseShape, both directions).
Their types need no rule: the label takes the data's dtype under the
default ElemwiseType rule, as in MXNet.  0 in a shape is a dimension not
known yet (mx_ops.core.partial_infer).
"""
import math

from mx_ops.core.partial_infer import known, merge_shape, same_shape, set_infer_shape_partial
from mx_ops.core.registry import ShapeError
from mx_ops.ops.loss import loss, softmax_output


def _fits(a, b):
    try:
        merge_shape(a, b)
        return True
    except ValueError:
        return False


def _softmax_output(params, ins, outs):
    """SoftmaxOutput's InferShape: a label of the data's shape holds
    probabilities; otherwise it holds class indices, of the data's shape
    without its last axis, or with multi_output (batch, positions), (batch,
    *spatial) or (batch, 1, *spatial), the first when unknown.  The output
    has the data's shape."""
    op, (data, label) = "SoftmaxOutput", ins
    if data is None:
        return ins, outs
    softmax_output.geometry(op, params, data)                # checks the data's rank
    if params["multi_output"]:
        allowed = [(data[0], math.prod(data[2:])), data[:1] + data[2:],
                   data[:1] + (1,) + data[2:]]
        if label is None:
            ins.assign(1, allowed[0], why="class indices for multi_output")
        else:
            prob = _fits(data, label)
            index = {merge_shape(a, label) for a in allowed if _fits(a, label)}
            if not prob and not index:
                raise ShapeError(f"{op}: argument 'label' has shape {label}; with "
                                 f"multi_output=True and 'data' {data} it must be "
                                 f"{', '.join(map(str, dict.fromkeys(allowed)))} (class "
                                 f"indices) or {data} (probabilities)")
            # Where unknown dimensions leave several readings, nothing is inferred.
            if prob and not index:
                ins.assign(1, data, why="probabilities, the shape of 'data'")
                ins.assign(0, ins[1], why="the shape of the probabilities in 'label'")
            elif len(index) == 1 and not prob:
                ins.assign(1, index.pop(), why="class indices for multi_output")
    elif label is not None and len(label) == len(data):
        # Class indices have one axis less: this label holds probabilities.
        ins.assign(1, data, why="probabilities, the shape of 'data'")
        ins.assign(0, ins[1], why="the shape of the probabilities in 'label'")
    else:
        ins.assign(1, data[:-1], why=f"class indices: 'data' {data} without its last axis")
    outs.assign(0, ins[0], why="the shape of 'data'")
    return ins, outs


def _regression(op):
    def rule(params, ins, outs):
        """RegressionOpShape: an unknown label takes the data's shape, or
        (batch,) for data (batch, 1); a known one shares the data's batch
        size and number of elements."""
        data, label = ins
        if data is None:
            return ins, outs
        if not data:
            raise ShapeError(f"{op}: argument 'data' must have at least 1 dimension, got "
                             f"shape ()")
        if label is None:
            if len(data) == 2 and not data[1]:
                return ins, outs        # (batch,) or (batch, ?): wait for data's size
            ins.assign(1, data[:1] if len(data) == 2 and data[1] == 1 else data,
                       why=f"for 'data' {data}")
        elif label:
            batch = merge_shape(data[:1], label[:1]) if _fits(data[:1], label[:1]) else None
            if batch is None:
                loss.check_regression_label(op, data, label)          # raises naming both
            ins.assign(0, batch + data[1:])
            ins.assign(1, batch + label[1:])
        if known(ins[0]) and known(ins[1]):
            loss.check_regression_label(op, ins[0], ins[1])
        outs.assign(0, ins[0], why="the shape of 'data'")
        return ins, outs
    return rule


set_infer_shape_partial("SoftmaxOutput", _softmax_output)
for _name in loss.REGRESSIONS:
    set_infer_shape_partial(_name, _regression(_name))
for _name in ("MakeLoss", "BlockGrad"):
    set_infer_shape_partial(_name, same_shape())
