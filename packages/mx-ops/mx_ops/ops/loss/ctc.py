"""CTCLoss (MXNet 1.x's ctc_loss-inl.h; aliases ctc_loss, _contrib_CTCLoss,
_contrib_ctc_loss): the connectionist temporal classification loss of
activations 'data' (T, N, alphabet) against 'label' (N, L), one loss per
sequence (N,).  'data_lengths' and 'label_lengths' (N,) are inputs only
with use_data_lengths / use_label_lengths (MXNet's list of inputs changes
with them); without label lengths a sequence's labels end at the first
padding value (0 with blank_label='first', -1 with 'last').  The forward
also computes the loss's gradient w.r.t. 'data' into a hidden output
'grad' (MXNet's NumVisibleOutputs = 1), except in an NDArray call that
autograd does not record (the loss alone: alpha, no beta); the backward
scales it by the output gradient: ``_backward_ctc_loss(out_grad, grad) -> data_grad``.
Labels and lengths may have any dtype (read as MXNet's cast to int) and
take no gradient (zeros).  ctc_cpu.h has the recursion."""
import struct

from mx_ops.core._nn_common import FLOATS, same_float_types
from mx_ops.core._params import Param
from mx_ops.core.gradient import apply, set_gradient, zeros_like
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.loss import _ctc_cpu

_CTC_GPU = "mx_ops.ops.loss._ctc_gpu"
_KERNELS = _ctc_cpu.kernels()

_PARAMS = {
    "use_data_lengths": Param("bool", False, doc="Whether the data lenghts are decided by "
                                                 "`data_lengths`. If false, the lengths are "
                                                 "equal to the max sequence length."),
    "use_label_lengths": Param("bool", False, doc="Whether the label lenghts are decided by "
                                                  "`label_lengths`, or derived from "
                                                  "`padding_mask`. If false, the lengths are "
                                                  "derived from the first occurrence of the "
                                                  "value of `padding_mask`. The value of "
                                                  "`padding_mask` is ``0`` when first CTC label "
                                                  "is reserved for blank, and ``-1`` when last "
                                                  "label is reserved for blank. See "
                                                  "`blank_label`."),
    "blank_label": Param("str", "first", choices=("first", "last"),
                         doc="Set the label that is reserved for blank label.If \"first\", "
                             "0-th label is reserved, and label values for tokens in the "
                             "vocabulary are between ``1`` and ``alphabet_size-1``, and the "
                             "padding mask is ``-1``. If \"last\", last label value "
                             "``alphabet_size-1`` is reserved for blank label instead, and "
                             "label values for tokens in the vocabulary are between ``0`` and "
                             "``alphabet_size-2``, and the padding mask is ``0``."),
}


def _inputs(p):
    return (["data", "label"] + (["data_lengths"] if p["use_data_lengths"] else [])
            + (["label_lengths"] if p["use_label_lengths"] else []))


def _shape(params, shapes):
    """MXNet's CTCLossOpShape: data 3-D, label (N, L) with L <= T, lengths (N,)."""
    data, label = tuple(shapes[0]), tuple(shapes[1])
    if len(data) != 3 or data[2] < 1:
        raise ShapeError(f"CTCLoss: argument 'data' has shape {data}; it must be 3-D "
                         f"(sequence length, batch, alphabet), the alphabet holding at least "
                         f"the blank")
    if len(label) != 2 or label[0] != data[1]:
        raise ShapeError(f"CTCLoss: argument 'label' has shape {label}; for 'data' {data} it "
                         f"must be ({data[1]}, label length)")
    if label[1] > data[0]:
        raise ShapeError(f"CTCLoss: the max number of labels ({label[1]}) cannot exceed the "
                         f"maximum sequence length of the data ({data[0]})")
    for name, shape in zip(_inputs(params)[2:], shapes[2:]):
        if tuple(shape) != (data[1],):
            raise ShapeError(f"CTCLoss: argument '{name}' has shape {tuple(shape)}; it must "
                             f"be ({data[1]},), one length per sequence")
    return [(data[1],), data]


def _type(params, dtypes):
    if dtypes[0] not in FLOATS:
        raise TypeInferenceError(f"CTCLoss: argument 'data' has dtype {dtypes[0]}; supported: "
                                 f"{', '.join(FLOATS)}")
    return [dtypes[0], dtypes[0]]


def pack(params, shapes=None):
    """mxop::CtcParam."""
    return struct.pack("=iiii", params["blank_label"] == "last", params["use_data_lengths"],
                       params["use_label_lengths"], 0)


def _bwd_shape(params, shapes):
    og, grad = tuple(shapes[0]), tuple(shapes[1])
    if len(grad) != 3 or og != grad[1:2]:
        raise ShapeError(f"_backward_ctc_loss: argument 'out_grad' has shape {og}; for 'grad' "
                         f"{grad} it must be one value per sequence, {grad[1:2]}")
    return [grad]


register(OpDef(
    "CTCLoss", arguments=("data", "label", "data_lengths", "label_lengths"),
    list_input_names=_inputs, num_visible_outputs=1, hidden_outputs_for_backward=True,
    outputs=("output0", "output1"),         # MXNet names none: the loss, the hidden gradient
    params=_PARAMS, aliases=("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"),
    input_docs={"data": "Input ndarray",
                "label": "Ground-truth labels for the loss.",
                "data_lengths": "Lengths of data for each of the samples. Only required when "
                                "use_data_lengths is true.",
                "label_lengths": "Lengths of labels for each of the samples. Only required "
                                 "when use_label_lengths is true."},
    infer_shape=_shape, infer_type=_type, pack_params=pack,
    compute=computes(_KERNELS["forward"], gpu_compute(_CTC_GPU, "forward")),
    doc="Connectionist Temporal Classification Loss: the negative log-likelihood of each "
        "label sequence under softmax(data) over the alphabet, summed over the alignments "
        "(blank, repeated labels collapsed).  'data' is (sequence length, batch, alphabet), "
        "'label' (batch, label length); output (batch,).  A sequence whose labels do not fit "
        "its steps has loss 0.  Without label_lengths the labels end at the padding value: "
        "0 with blank_label='first', -1 with 'last' (what MXNet 1.9.1 computes; its "
        "blank_label text says the reverse)."))

register(OpDef(
    "_backward_ctc_loss", arguments=("out_grad", "grad"), outputs=("data_grad",),
    infer_shape=_bwd_shape,
    infer_type=same_float_types("_backward_ctc_loss", lambda p: ["out_grad", "grad"]),
    compute=computes(_KERNELS["backward"], gpu_compute(_CTC_GPU, "backward")),
    differentiable=False,
    doc="Gradient of CTCLoss: out_grad[b] * grad[t, b, :], grad being the forward's hidden "
        "output."))


def _gradient(node, ograds):
    grad = node.outputs()[1]
    return ([apply("_backward_ctc_loss", ograds[0], grad)]
            + [zeros_like(entry) for entry in node.inputs[1:]])


set_gradient("CTCLoss", _gradient)
