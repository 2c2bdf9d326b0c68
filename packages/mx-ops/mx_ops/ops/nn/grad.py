"""Gradients of the neural-network operators: each maps to its dedicated
``_backward_<op>`` node (MXNet's legacy convention), whose inputs are the
out_grad and the forward values that op's backward reads, and whose
outputs are the input gradients in order."""
from mx_ops.gradient import set_gradient
from mx_ops.node import make_node


def _backward(name, reads):
    """A maker whose backward node reads ``reads(node, out_grad)``."""
    def maker(node, ograds):
        back = make_node(f"_backward_{name}", reads(node, ograds[0]),
                         name=f"{node.name}_backward", **node.params)
        return back.outputs()
    return maker


def _out(node):
    return node.outputs()[0]


set_gradient("FullyConnected", _backward(
    "FullyConnected", lambda n, g: [g, n.inputs[0], n.inputs[1]]))
set_gradient("Activation", _backward("Activation", lambda n, g: [g, _out(n)]))
set_gradient("softmax", _backward("softmax", lambda n, g: [g, _out(n)]))
set_gradient("log_softmax", _backward("log_softmax", lambda n, g: [g, _out(n)]))
set_gradient("Pooling", _backward("Pooling", lambda n, g: [g, n.inputs[0], _out(n)]))


def _leaky_reads(node, og):
    """prelu's backward reads data and gamma (and yields gamma's gradient);
    rrelu's the mask (its slopes) and the output, in MXNet's
    DeclareBackwardDependency order; the other kinds only the output."""
    act = node.params["act_type"]
    if act == "prelu":
        return [og, node.inputs[0], node.inputs[1]]
    if act == "rrelu":
        return [og, node.outputs()[1], _out(node)]
    return [og, _out(node)]


set_gradient("LeakyReLU", _backward("LeakyReLU", _leaky_reads))
for _name in ("Convolution", "Deconvolution"):
    set_gradient(_name, _backward(_name, lambda n, g: [g, n.inputs[0], n.inputs[1]]))
# BatchNorm's backward reads the saved mean and inverse std (outputs 1 and
# 2), the inputs and the moving statistics; the aux states get no gradient
# (MXNet's _NoGradient), and neither do the mean and var outputs.
_bn_backward = _backward("BatchNorm", lambda n, g: [g, n.outputs()[1], n.outputs()[2],
                                                    *n.inputs])
set_gradient("BatchNorm", lambda node, ograds: _bn_backward(node, ograds) + [None, None])
set_gradient("Dropout", _backward("Dropout", lambda n, g: [g, n.outputs()[1]]))
