"""Gradients of the neural-network operators: each maps to its dedicated
``_backward_<op>`` node (MXNet's legacy convention, core.gradient's
backward_op), whose inputs are the out_grad and the forward values that
op's backward reads, and whose outputs are the input gradients in order."""
from mx_ops.core.gradient import backward_op, set_gradient


def _out(node):
    return node.outputs()[0]


set_gradient("FullyConnected", backward_op(
    "FullyConnected", lambda n, g: [g[0], n.inputs[0], n.inputs[1]]))
set_gradient("Activation", backward_op("Activation", lambda n, g: [g[0], _out(n)]))
set_gradient("softmax", backward_op("softmax", lambda n, g: [g[0], _out(n)]))
set_gradient("log_softmax", backward_op("log_softmax", lambda n, g: [g[0], _out(n)]))
set_gradient("softmin", backward_op("softmin", lambda n, g: [g[0], _out(n)]))
set_gradient("SoftmaxActivation", backward_op("SoftmaxActivation", lambda n, g: [g[0], _out(n)]))
set_gradient("Pooling", backward_op("Pooling", lambda n, g: [g[0], n.inputs[0], _out(n)]))


def _leaky_reads(node, ograds):
    """prelu's backward reads data and gamma (and yields gamma's gradient);
    rrelu's the mask (its slopes) and the output, in MXNet's
    DeclareBackwardDependency order; gelu's the input; the other kinds only
    the output."""
    og, act = ograds[0], node.params["act_type"]
    if act == "prelu":
        return [og, node.inputs[0], node.inputs[1]]
    if act == "rrelu":
        return [og, node.outputs()[1], _out(node)]
    if act == "gelu":
        return [og, node.inputs[0]]
    return [og, _out(node)]


set_gradient("LeakyReLU", backward_op("LeakyReLU", _leaky_reads))
for _name in ("Convolution", "Deconvolution"):
    set_gradient(_name, backward_op(_name, lambda n, g: [g[0], n.inputs[0], n.inputs[1]]))
