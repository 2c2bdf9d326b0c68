"""The two training workloads of compare_graph.py and bench_graph.py, for
ours, MXNet 1.9.1 and PyTorch.

This file imports nothing but NumPy: every function takes the framework
module (our ``mx``, MXNet's ``mxnet`` or ``torch``) as its first argument,
so the same file runs in our interpreter and in the references' own
virtual environments (benchmarks/net_worker.py), and ours and MXNet run
literally the same code.

- ``mlp``: examples/symbolic_mlp.py's net and loop (FullyConnected 128,
  relu, FullyConnected 10, SoftmaxOutput; batch 100, 100 features, the
  example's toy data).
- ``lenet``: MXNet's classic LeNet (Convolution 20 5x5, tanh, max Pooling
  2x2/2, Convolution 50 5x5, tanh, Pooling, Flatten, FullyConnected 500,
  tanh, FullyConnected 10, SoftmaxOutput; batch 64 of 1x28x28).

One training iteration, as the example writes it: set data and label,
forward(is_train=True), backward(), ``weight[:] -= lr * (grad / batch)``
over every argument and its gradient, then a wait.  simple_bind's default
grad_req ('write' for every argument) makes the data's gradient part of the
work, so PyTorch's equivalent computes and applies it too; its loss is the
summed cross entropy, whose gradient is SoftmaxOutput's ``p - onehot``.
"""
import numpy as np

NETS = {
    "mlp": dict(batch=100, data=(100,), classes=10, lr=0.1, label="out_label"),
    "lenet": dict(batch=64, data=(1, 28, 28), classes=10, lr=0.1, label="softmax_label"),
}
# Parameter shapes in MXNet's argument order (the order of torch's
# Module.parameters() for the equivalent nn.Sequential as well).
PARAM_SHAPES = {
    "mlp": {"fc1_weight": (128, 100), "fc1_bias": (128,),
            "fc2_weight": (10, 128), "fc2_bias": (10,)},
    "lenet": {"conv1_weight": (20, 1, 5, 5), "conv1_bias": (20,),
              "conv2_weight": (50, 20, 5, 5), "conv2_bias": (50,),
              "fc1_weight": (500, 800), "fc1_bias": (500,),
              "fc2_weight": (10, 500), "fc2_bias": (10,)},
}
NUM_BATCHES = 4   # distinct batches cycled through, generated before timing


# ---------------------------------------------------------------------------
# The symbols (the MXNet API: ours and MXNet's)
# ---------------------------------------------------------------------------
def mlp_symbol(mx):
    """examples/symbolic_mlp.py's net, as the design notes write it."""
    net = mx.sym.Variable('data')
    net = mx.sym.FullyConnected(data=net, name='fc1', num_hidden=128)
    net = mx.sym.Activation(data=net, name='relu1', act_type="relu")
    net = mx.sym.FullyConnected(data=net, name='fc2', num_hidden=10)
    return mx.sym.SoftmaxOutput(data=net, name='out')


def lenet_symbol(mx):
    """LeNet as MXNet's example/image-classification/symbols/lenet.py
    builds it."""
    data = mx.sym.Variable('data')
    conv1 = mx.sym.Convolution(data=data, kernel=(5, 5), num_filter=20, name='conv1')
    tanh1 = mx.sym.Activation(data=conv1, act_type="tanh", name='tanh1')
    pool1 = mx.sym.Pooling(data=tanh1, pool_type="max", kernel=(2, 2), stride=(2, 2),
                           name='pool1')
    conv2 = mx.sym.Convolution(data=pool1, kernel=(5, 5), num_filter=50, name='conv2')
    tanh2 = mx.sym.Activation(data=conv2, act_type="tanh", name='tanh2')
    pool2 = mx.sym.Pooling(data=tanh2, pool_type="max", kernel=(2, 2), stride=(2, 2),
                           name='pool2')
    flatten = mx.sym.Flatten(data=pool2, name='flatten')
    fc1 = mx.sym.FullyConnected(data=flatten, num_hidden=500, name='fc1')
    tanh3 = mx.sym.Activation(data=fc1, act_type="tanh", name='tanh3')
    fc2 = mx.sym.FullyConnected(data=tanh3, num_hidden=10, name='fc2')
    return mx.sym.SoftmaxOutput(data=fc2, name='softmax')


SYMBOLS = {"mlp": mlp_symbol, "lenet": lenet_symbol}


# ---------------------------------------------------------------------------
# Inputs: the same weights and batches for every side
# ---------------------------------------------------------------------------
def make_inputs(net, seed=0):
    """name -> float32 array: the parameters (uniform in +-1/sqrt(fan_in),
    biases zero: tanh stays out of saturation and no value goes subnormal
    while the timing loop trains on), ``data`` (NUM_BATCHES, batch, ...) and
    ``label`` (NUM_BATCHES, batch) of class ids stored as float32 as MXNet
    stores labels."""
    cfg = NETS[net]
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in PARAM_SHAPES[net].items():
        if name.endswith("_bias"):
            out[name] = np.zeros(shape, np.float32)
        else:
            bound = 1 / np.sqrt(np.prod(shape[1:]))
            out[name] = rng.uniform(-bound, bound, shape).astype(np.float32)
    n, b = NUM_BATCHES, cfg["batch"]
    labels = rng.integers(0, cfg["classes"], (n, b))
    if net == "mlp":
        # The example's ToyData: Gaussian clusters around ten class centres.
        centres = rng.uniform(-1, 1, (cfg["classes"],) + cfg["data"])
        data = centres[labels] + rng.normal(0, 0.5, (n, b) + cfg["data"])
    else:
        # Images in [0, 1) with a brighter class-dependent row, so the
        # labels can be learnt.  Small enough that no tanh rounds to exactly
        # 1.0f: saturated ties in a max-pooling window would let frameworks
        # route the gradient to different (equally right) places.
        data = rng.uniform(0, 1, (n, b) + cfg["data"])
        rows = 2 + 2 * labels
        data[np.arange(n)[:, None], np.arange(b), 0, rows, :] += 1.0
    out["data"] = data.astype(np.float32)
    out["label"] = labels.astype(np.float32)
    return out


def param_names(net):
    return list(PARAM_SHAPES[net])


# ---------------------------------------------------------------------------
# The MXNet API: one executor, the example's loop
# ---------------------------------------------------------------------------
def simple_bind(mx, net, symbol=None):
    """(executor, how, shapes) for ``net``: simple_bind from the data and
    label shapes alone, as the example does; where that cannot infer every
    parameter's shape (our partial shape inference is not merged yet),
    again with every parameter's shape given.  ``how`` says which one bound
    and ``shapes`` are the keyword arguments it took."""
    cfg = NETS[net]
    symbol = symbol if symbol is not None else SYMBOLS[net](mx)
    shapes = {"data": (cfg["batch"],) + cfg["data"], cfg["label"]: (cfg["batch"],)}
    try:
        return symbol.simple_bind(ctx=mx.cpu(), **shapes), "simple_bind", shapes
    except mx.base.MXNetError as first:
        shapes.update(PARAM_SHAPES[net])
        try:
            ex = symbol.simple_bind(ctx=mx.cpu(), **shapes)
        except mx.base.MXNetError as second:
            raise second from first      # not (only) inference: show both errors
        return ex, "simple_bind with the parameter shapes given", shapes


def bind_arrays(mx, net, inputs, symbol):
    """(args, args_grad) for bind(), in ``symbol``'s argument order: the
    parameters from ``inputs``, data and label from the first batch, zero
    gradients."""
    cfg = NETS[net]
    arrays = {name: mx.nd.array(inputs[name]) for name in param_names(net)}
    arrays["data"] = mx.nd.array(inputs["data"][0])
    arrays[cfg["label"]] = mx.nd.array(inputs["label"][0])
    args = [arrays[n] for n in symbol.list_arguments()]
    return args, [mx.nd.zeros(a.shape) for a in args]


class SymbolicTrainer:
    """The example's training loop over a simple_bind executor; ``mx`` is
    ours or MXNet's module."""

    def __init__(self, mx, net, inputs):
        cfg = NETS[net]
        self.mx, self.net = mx, net
        self.batch, self.lr, self.label = cfg["batch"], cfg["lr"], cfg["label"]
        self.symbol = SYMBOLS[net](mx)
        self.ex, self.how, _ = simple_bind(mx, net, self.symbol)
        self.args = dict(zip(self.symbol.list_arguments(), self.ex.arg_arrays))
        for name in param_names(net):
            self.args[name][:] = inputs[name]
        self.data, self.labels = inputs["data"], inputs["label"]
        mx.nd.waitall()

    def step(self, i):
        """One training iteration on batch ``i`` (mod NUM_BATCHES)."""
        args, ex, lr, batch_size = self.args, self.ex, self.lr, self.batch
        args['data'][:] = self.data[i % len(self.data)]
        args[self.label][:] = self.labels[i % len(self.labels)]
        ex.forward(is_train=True)
        ex.backward()
        for weight, grad in zip(ex.arg_arrays, ex.grad_arrays):
            weight[:] -= lr * (grad / batch_size)
        self.mx.nd.waitall()

    def outputs(self, i=0):
        """The SoftmaxOutput probabilities of batch ``i`` (inference)."""
        self.args['data'][:] = self.data[i]
        self.ex.forward(is_train=False)
        return self.ex.outputs[0].asnumpy()

    def params(self):
        return {name: self.args[name].asnumpy() for name in param_names(self.net)}


# ---------------------------------------------------------------------------
# PyTorch's equivalent
# ---------------------------------------------------------------------------
def torch_module(torch, net):
    nn = torch.nn
    if net == "mlp":
        return nn.Sequential(nn.Linear(100, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(
        nn.Conv2d(1, 20, 5), nn.Tanh(), nn.MaxPool2d(2, 2),
        nn.Conv2d(20, 50, 5), nn.Tanh(), nn.MaxPool2d(2, 2), nn.Flatten(),
        nn.Linear(800, 500), nn.Tanh(), nn.Linear(500, 10))


class TorchTrainer:
    """nn.Sequential, summed cross entropy, backward, manual SGD under
    no_grad; the input is a leaf that requires grad, as the executor's data
    argument has a gradient."""

    def __init__(self, torch, net, inputs):
        cfg = NETS[net]
        self.torch, self.net = torch, net
        self.batch, self.lr = cfg["batch"], cfg["lr"]
        self.model = torch_module(torch, net)
        self.weights = list(self.model.parameters())
        with torch.no_grad():
            for p, name in zip(self.weights, param_names(net)):
                assert tuple(p.shape) == PARAM_SHAPES[net][name], (name, p.shape)
                p.copy_(torch.from_numpy(inputs[name]))
        self.x = torch.zeros((cfg["batch"],) + cfg["data"], requires_grad=True)
        self.y = torch.zeros(cfg["batch"], dtype=torch.int64)
        self.data = [torch.from_numpy(d) for d in inputs["data"]]
        self.labels = [torch.from_numpy(lb.astype(np.int64)) for lb in inputs["label"]]

    def step(self, i):
        torch, F = self.torch, self.torch.nn.functional
        lr, batch_size = self.lr, self.batch
        with torch.no_grad():
            self.x.copy_(self.data[i % len(self.data)])
            self.y.copy_(self.labels[i % len(self.labels)])
        for p in [self.x] + self.weights:
            p.grad = None                        # fresh gradients, as grad_req 'write'
        loss = F.cross_entropy(self.model(self.x), self.y, reduction="sum")
        loss.backward()
        with torch.no_grad():
            for p in [self.x] + self.weights:
                p -= lr * (p.grad / batch_size)

    def outputs(self, i=0):
        with self.torch.no_grad():
            return self.torch.softmax(self.model(self.data[i]), -1).numpy()

    def params(self):
        return {name: p.detach().numpy().copy()
                for name, p in zip(param_names(self.net), self.weights)}


# ---------------------------------------------------------------------------
# The MLP trained imperatively with autograd (compare_autograd_mlp.py)
# ---------------------------------------------------------------------------
AUTOGRAD_NET = "mlp_autograd"       # the net name the workers know it by


class AutogradTrainer:
    """The MLP trained imperatively, as an MXNet 1.x autograd user writes
    it: parameters with attach_grad, the forward under autograd.record()
    (FullyConnected, relu, FullyConnected, then the summed cross entropy as
    Gluon's loss builds it: -log_softmax picked at the label, here through
    a one-hot mask), loss.backward(), and sgd_update per parameter with
    rescale_grad 1/batch; ``mx`` is ours or MXNet's module."""

    def __init__(self, mx, net, inputs):
        cfg = NETS["mlp"]
        self.mx, self.lr, self.batch = mx, cfg["lr"], cfg["batch"]
        self.weights = {name: mx.nd.array(inputs[name]) for name in param_names("mlp")}
        for w in self.weights.values():
            w.attach_grad()
        self.data = [mx.nd.array(d) for d in inputs["data"]]
        self.labels = [mx.nd.array(lb) for lb in inputs["label"]]
        self.how = "autograd.record() (no executor)"
        mx.nd.waitall()

    def forward(self, x):
        nd, w = self.mx.nd, self.weights
        h = nd.relu(nd.FullyConnected(x, w["fc1_weight"], w["fc1_bias"], num_hidden=128))
        return nd.FullyConnected(h, w["fc2_weight"], w["fc2_bias"], num_hidden=10)

    def step(self, i):
        mx = self.mx
        x, label = self.data[i % len(self.data)], self.labels[i % len(self.labels)]
        with mx.autograd.record():
            out = self.forward(x)
            loss = -mx.nd.sum(mx.nd.log_softmax(out) * mx.nd.one_hot(label, 10))
        loss.backward()
        for w in self.weights.values():
            mx.nd.sgd_update(w, w.grad, lr=self.lr, wd=0.0, rescale_grad=1.0 / self.batch,
                             out=w)
        mx.nd.waitall()

    def outputs(self, i=0):
        out = self.forward(self.data[i])
        return self.mx.nd.softmax(out).asnumpy()

    def params(self):
        return {name: w.asnumpy() for name, w in self.weights.items()}


class TorchEagerTrainer(TorchTrainer):
    """PyTorch eager's equivalent of AutogradTrainer: the data is no leaf
    that requires grad (no data gradient), summed cross entropy, backward,
    torch.optim.SGD's update with the loss scaled as rescale_grad scales."""

    def __init__(self, torch, net, inputs):
        super().__init__(torch, "mlp", inputs)
        self.x = torch.zeros((self.batch,) + NETS["mlp"]["data"])
        self.opt = torch.optim.SGD(self.weights, lr=self.lr)

    def step(self, i):
        torch, F = self.torch, self.torch.nn.functional
        self.opt.zero_grad(set_to_none=True)
        x, y = self.data[i % len(self.data)], self.labels[i % len(self.labels)]
        loss = F.cross_entropy(self.model(x), y, reduction="sum") / self.batch
        loss.backward()
        self.opt.step()


def trainer(framework, module, net, inputs):
    """The trainer of ``framework`` ('ours', 'mxnet' or 'torch')."""
    if net == AUTOGRAD_NET:
        cls = TorchEagerTrainer if framework == "torch" else AutogradTrainer
    else:
        cls = TorchTrainer if framework == "torch" else SymbolicTrainer
    return cls(module, net, inputs)
