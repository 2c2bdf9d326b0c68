"""The networks test_viz.py draws and summarises, written against the
shared MXNet 1.x API so one definition builds them both in mx (the test)
and in MXNet 1.9.1 (make_viz_expected.py, which wrote the expected
outputs beside this file).  Each builder takes the ``mx`` module and
returns the symbol and the data shapes."""


def mlp(mx):
    """The design notes' MLP."""
    data = mx.sym.Variable('data')
    net = mx.sym.FullyConnected(data=data, name='fc1', num_hidden=128)
    net = mx.sym.Activation(data=net, name='relu1', act_type="relu")
    net = mx.sym.FullyConnected(data=net, name='fc2', num_hidden=10)
    net = mx.sym.SoftmaxOutput(data=net, name='softmax')
    return net, {'data': (100, 100)}


def lenet(mx):
    """LeNet-5 as MXNet's MNIST example writes it."""
    data = mx.sym.Variable('data')
    net = mx.sym.Convolution(data=data, kernel=(5, 5), num_filter=20, name='conv1')
    net = mx.sym.Activation(data=net, act_type="tanh", name='tanh1')
    net = mx.sym.Pooling(data=net, pool_type="max", kernel=(2, 2), stride=(2, 2), name='pool1')
    net = mx.sym.Convolution(data=net, kernel=(5, 5), num_filter=50, name='conv2')
    net = mx.sym.Activation(data=net, act_type="tanh", name='tanh2')
    net = mx.sym.Pooling(data=net, pool_type="max", kernel=(2, 2), stride=(2, 2), name='pool2')
    net = mx.sym.Flatten(data=net, name='flatten')
    net = mx.sym.FullyConnected(data=net, num_hidden=500, name='fc1')
    net = mx.sym.Activation(data=net, act_type="tanh", name='tanh3')
    net = mx.sym.FullyConnected(data=net, num_hidden=10, name='fc2')
    return mx.sym.SoftmaxOutput(data=net, name='softmax'), {'data': (64, 1, 28, 28)}


def bn(mx):
    """A residual block with BatchNorm, LeakyReLU, a grouped convolution,
    a symbol sum (two previous layers), global pooling and layers without
    bias.  A fresh NameManager names the sum ``_plus0`` however many
    symbols were made before."""
    with mx.name.NameManager():
        return _bn(mx)


def _bn(mx):
    data = mx.sym.Variable('data')
    c0 = mx.sym.Convolution(data=data, kernel=(3, 3), stride=(2, 2), pad=(1, 1), num_filter=16,
                            no_bias=True, name='conv0')
    b0 = mx.sym.BatchNorm(data=c0, fix_gamma=False, eps=2e-5, name='bn0')
    a0 = mx.sym.LeakyReLU(data=b0, act_type='leaky', slope=0.1, name='lrelu0')
    c1 = mx.sym.Convolution(data=a0, kernel=(3, 3), pad=(1, 1), num_filter=16, num_group=4,
                            name='conv1')
    b1 = mx.sym.BatchNorm(data=c1, name='bn1')
    net = mx.sym.Activation(b1 + a0, act_type='relu', name='relu1')
    net = mx.sym.Pooling(net, global_pool=True, pool_type='avg', kernel=(1, 1), name='gpool')
    net = mx.sym.Flatten(net, name='flat')
    net = mx.sym.FullyConnected(net, num_hidden=10, no_bias=True, name='fc')
    return mx.sym.SoftmaxOutput(net, name='softmax'), {'data': (8, 3, 16, 16)}


NETS = {"mlp": mlp, "lenet": lenet, "bn": bn}


def misc(mx):
    """Embedding, a two-way SliceChannel whose outputs a Concat reads
    (multi-output edges), Reshape, Dropout: the other layers viz treats
    apart."""
    data = mx.sym.Variable('data')
    net = mx.sym.Embedding(data=data, input_dim=50, output_dim=16, name='embed')
    parts = mx.sym.SliceChannel(net, num_outputs=2, axis=1, name='split')
    net = mx.sym.Concat(parts[0], parts[1], dim=2, name='concat')
    net = mx.sym.Reshape(net, shape=(0, -1), name='reshape')
    net = mx.sym.Dropout(net, p=0.5, name='drop')
    net = mx.sym.FullyConnected(net, num_hidden=4, name='fc')
    return mx.sym.SoftmaxOutput(net, name='softmax'), {'data': (8, 10)}


NETS["misc"] = misc
