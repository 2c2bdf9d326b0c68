"""Gradients of the output (loss) operators, Embedding, UpSampling and
L2Normalization.  Each maps to its ``_backward_<op>`` node reading what
MXNet's backward declares it reads, except BlockGrad, whose gradient is a
zeros_like node (MXNet's MakeZeroGradNodes), and make_loss, whose gradient
is a ones_like node (as MXNet 1.x gives it).

The loss operators' gradients are those of their losses, so they do not
agree with finite differences of the forward output: tests compare them
with the losses' derivatives instead."""
from mx_ops.gradient import apply, set_gradient
from mx_ops.node import make_node


def _backward(name, reads):
    """A maker whose ``_backward_<name>`` node reads ``reads(node, ograds)``
    and gives one gradient per input."""
    def maker(node, ograds):
        back = make_node(f"_backward_{name}", reads(node, ograds),
                         name=f"{node.name}_backward", **node.params)
        return back.outputs()
    return maker


def _out(node, i=0):
    return node.outputs()[i]


set_gradient("SoftmaxOutput", _backward(
    "SoftmaxOutput", lambda n, g: ([g[0]] if n.params["out_grad"] else [])
    + [n.inputs[1], _out(n)]))
for _name in ("LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput"):
    set_gradient(_name, _backward(_name, lambda n, g: [n.inputs[1], _out(n)]))
set_gradient("MakeLoss", _backward("MakeLoss", lambda n, g: [n.inputs[0]]))
set_gradient("make_loss", lambda node, ograds: [apply("ones_like", node.inputs[0])])
set_gradient("BlockGrad", lambda node, ograds: [apply("zeros_like", node.inputs[0])])
set_gradient("Embedding", _backward("Embedding", lambda n, g: [g[0], n.inputs[0]]))
# with one input out_grad tells the input's shape; with several the inputs do
set_gradient("UpSampling", _backward(
    "UpSampling", lambda n, g: [g[0]] + (list(n.inputs) if n.params["num_args"] > 1 else [])))
# the norm (hidden output 1) gets no gradient of its own, as in MXNet
set_gradient("L2Normalization", _backward(
    "L2Normalization", lambda n, g: [g[0], _out(n, 0), _out(n, 1)]))
