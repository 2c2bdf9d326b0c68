"""The networks behind the reference -symbol.json files in this folder.

Each builder takes the ``mx`` it runs under, real MXNet 1.9.1
(``make_mxnet_json.py`` writes ``<name>-symbol.json`` from them) or this
project's, as ``local_mx()`` gives it (``test_json_format.py`` builds the
same nets and compares its dump with MXNet's file), so the code must stay
in the API both share.
Each build runs in a fresh NameManager so that automatic names
(``_plusscalar0``, ``concat0``) do not depend on what ran before.

``SHAPES`` gives input shapes that determine every shape of a net, for
infer_shape checks on both sides.
"""


def local_mx():
    """The parts of this project's ``mx`` that the builders use, from the
    layers an mx-graph test may import (``mx`` itself sits above them)."""
    import types

    from mx_graph import attribute, name, sym
    from mx_ops.ext import custom
    return types.SimpleNamespace(sym=sym, name=name, AttrScope=attribute.AttrScope,
                                 operator=custom)


class _Init:
    """An initializer as mx.init would give it: what Variable(init=) reads
    is its ``dumps()``."""

    def dumps(self):
        return '["xavier", {"rnd_type": "gaussian", "factor_type": "avg", "magnitude": 2}]'


def mlp(mx):
    """The design notes' MLP."""
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data=data, name="fc1", num_hidden=128)
    act1 = mx.sym.Activation(data=fc1, name="relu1", act_type="relu")
    fc2 = mx.sym.FullyConnected(data=act1, name="fc2", num_hidden=10)
    return mx.sym.SoftmaxOutput(data=fc2, name="softmax")


def lenet(mx):
    """LeNet with Convolution, Pooling, Flatten, tanh (op and activation),
    BatchNorm (aux states and hidden outputs) and Dropout."""
    data = mx.sym.Variable("data")
    conv1 = mx.sym.Convolution(data=data, kernel=(5, 5), num_filter=20, name="conv1")
    tanh1 = mx.sym.Activation(data=conv1, act_type="tanh", name="tanh1")
    pool1 = mx.sym.Pooling(data=tanh1, pool_type="max", kernel=(2, 2), stride=(2, 2),
                           name="pool1")
    conv2 = mx.sym.Convolution(data=pool1, kernel=(5, 5), num_filter=50, pad=(1, 1),
                               name="conv2")
    bn2 = mx.sym.BatchNorm(data=conv2, fix_gamma=False, eps=2e-5, momentum=0.9, name="bn2")
    tanh2 = mx.sym.tanh(data=bn2, name="tanh2")
    pool2 = mx.sym.Pooling(data=tanh2, pool_type="avg", kernel=(2, 2), stride=(2, 2),
                           name="pool2")
    flat = mx.sym.Flatten(data=pool2, name="flatten")
    fc1 = mx.sym.FullyConnected(data=flat, num_hidden=500, name="fc1")
    tanh3 = mx.sym.Activation(data=fc1, act_type="tanh", name="tanh3")
    drop = mx.sym.Dropout(data=tanh3, p=0.5, name="drop")
    fc2 = mx.sym.FullyConnected(data=drop, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(data=fc2, name="softmax")


def branches(mx):
    """SliceChannel, Concat (automatic name, num_args filled in), an
    elementwise sum, FullyConnected without bias, BatchNorm showing its
    mean and var, and several heads through Group, some of them outputs
    other than a node's first."""
    data = mx.sym.Variable("data")
    parts = mx.sym.SliceChannel(data, num_outputs=3, axis=1, name="split")
    summed = parts[0] + parts[2]
    joined = mx.sym.Concat(parts[1], summed, parts[1], dim=1)
    bn = mx.sym.BatchNorm(joined, output_mean_var=True, name="bn")
    fc = mx.sym.FullyConnected(bn[0], num_hidden=4, no_bias=True, flatten=False, name="fc")
    return mx.sym.Group([fc, parts[2], bn[1], bn[2], joined])


def internals(mx):
    """get_internals of a small net with BatchNorm: every visible output
    of every node (hidden ones are not listed) and every variable,
    aux states included."""
    data = mx.sym.Variable("data")
    conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, no_bias=True, name="conv")
    bn = mx.sym.BatchNorm(conv, name="bn")
    act = mx.sym.Activation(bn, act_type="relu", name="relu")
    fc = mx.sym.FullyConnected(act, num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax").get_internals()


def arithmetic(mx):
    """Symbol arithmetic with symbols and scalars (int and float scalars
    keep their spelling: "2", "0.5")."""
    a = mx.sym.Variable("a")
    b = mx.sym.Variable("b")
    x = (a + 2) * 0.5 - 1
    y = 3 / x + a * b
    z = y ** 2 - b / 4 + 2 ** a
    w = -(1 - z) + a - b
    v = mx.sym.maximum(w, 0.25) + mx.sym.minimum(3, a) + b % 3 + a / b
    return v


def attributes(mx):
    """AttrScope(ctx_group=...), Variable(lr_mult=, wd_mult=, shape=,
    dtype=, init=), a user attribute on a variable and dunder attributes
    on operators (inherited by the variables they create)."""
    with mx.AttrScope(ctx_group="dev1"):
        data = mx.sym.Variable("data", attr={"mood": "calm"}, dtype="float64")
        weight = mx.sym.Variable("fc1_weight", lr_mult=0.1, wd_mult=0.0, shape=(64, 100),
                                 dtype="float64", init=_Init())
        fc1 = mx.sym.FullyConnected(data=data, weight=weight, num_hidden=64, name="fc1")
        act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    with mx.AttrScope(ctx_group="dev2", lr_mult="2"):
        fc2 = mx.sym.FullyConnected(act, num_hidden=10, name="fc2",
                                    attr={"__mood__": "happy"})
        prelu = mx.sym.LeakyReLU(fc2, act_type="prelu", name="prelu")
    return mx.sym.SoftmaxOutput(prelu, name="softmax")


def wide(mx):
    """A Concat of twelve inputs (more than ten entries: one per line) and
    attribute values and a name that need escaping or are not ASCII."""
    parts = [mx.sym.Variable(f"v{i}") for i in range(11)]
    parts.append(mx.sym.Variable("v\u00e9", attr={"note": 'say "hi"\n\tback\\slash \u00fc'}))
    return mx.sym.Concat(*parts, dim=0, name="cat")


_SCALE_BY_IN = []     # the mx.operator modules it is registered with


def register_scale_by(mx):
    """Registers the custom operator 'json_scale_by' (out = data * factor)
    with ``mx.operator``, once."""
    if any(m is mx.operator for m in _SCALE_BY_IN):
        return

    class ScaleBy(mx.operator.CustomOp):
        def __init__(self, factor):
            super().__init__()
            self.factor = factor

        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * self.factor)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0] * self.factor)

    @mx.operator.register("json_scale_by")
    class ScaleByProp(mx.operator.CustomOpProp):
        def __init__(self, factor="1"):
            super().__init__(need_top_grad=True)
            self.factor = float(factor)

        def list_arguments(self):
            return ["data"]

        def list_outputs(self):
            return ["output"]

        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return ScaleBy(self.factor)

    _SCALE_BY_IN.append(mx.operator)


def custom(mx):
    """A Custom operator node: its string arguments are its attrs (the
    parsed CustomOpProp stays out of the file)."""
    register_scale_by(mx)
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=5, name="fc")
    scaled = mx.sym.Custom(fc, op_type="json_scale_by", factor=3, name="scale")
    return mx.sym.Activation(scaled, act_type="sigmoid", name="sig")


NETS = {
    "mlp": mlp,
    "lenet": lenet,
    "branches": branches,
    "internals": internals,
    "arithmetic": arithmetic,
    "attributes": attributes,
    "custom": custom,
    "wide": wide,
}

SHAPES = {
    "mlp": {"data": (100, 100)},
    "lenet": {"data": (64, 1, 28, 28)},
    "branches": {"data": (2, 6, 5)},
    "internals": {"data": (2, 3, 6, 6)},
    "arithmetic": {"a": (3, 4), "b": (3, 4)},
    "attributes": {"data": (8, 100)},
    "custom": {"data": (4, 7)},
    "wide": {**{f"v{i}": (1, 3) for i in range(11)}, "v\u00e9": (2, 3)},
}

# Pre-1.0 files: written by hand in MXNet 0.8's layout ("param" and "attr"
# per node, two-element entries, no node_row_ptr, no aux inputs, hidden keys
# without underscores); MXNet's upgrade of each is <name>-upgraded.json.
LEGACY = ("legacy_v080",)


def build(mx, name):
    """The net ``name`` built with ``mx`` in a fresh NameManager."""
    with mx.name.NameManager():
        return NETS[name](mx)
