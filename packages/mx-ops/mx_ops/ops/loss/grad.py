"""Gradients of the output (loss) operators.  Each maps to its
``_backward_<op>`` node reading what MXNet's backward declares it reads
(core.gradient's backward_op), except BlockGrad, whose gradient is a
zeros_like node (MXNet's MakeZeroGradNodes), and make_loss, whose gradient
is a ones_like node (as MXNet 1.x gives it).

The loss operators' gradients are those of their losses, so they do not
agree with finite differences of the forward output: tests compare them
with the losses' derivatives instead."""
from mx_ops.core.gradient import apply, backward_op, set_gradient


def _out(node):
    return node.outputs()[0]


set_gradient("SoftmaxOutput", backward_op(
    "SoftmaxOutput", lambda n, g: ([g[0]] if n.params["out_grad"] else [])
    + [n.inputs[1], _out(n)]))
for _name in ("LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput"):
    set_gradient(_name, backward_op(_name, lambda n, g: [n.inputs[1], _out(n)]))
set_gradient("softmax_cross_entropy", backward_op(
    "softmax_cross_entropy", lambda n, g: [g[0], n.inputs[0], n.inputs[1]]))
set_gradient("MakeLoss", backward_op("MakeLoss", lambda n, g: [n.inputs[0]]))
set_gradient("make_loss", lambda node, ograds: [apply("ones_like", node.inputs[0])])
set_gradient("BlockGrad", lambda node, ograds: [apply("zeros_like", node.inputs[0])])
