"""The design notes' symbolic MLP, verbatim but for ``import mx`` and the
weight initialisation of the notebook the notes quote.

Trains a 2-layer MLP (FullyConnected 128, relu, FullyConnected 10,
SoftmaxOutput) on a toy problem with simple_bind, forward/backward and a
hand-written SGD step, and checks that it reaches accuracy above 0.95.
The toy data: 100 features drawn around one of 10 class centres.
"""
import numpy as np

import mx


class ToyData:
    """Ten Gaussian clusters in 100 dimensions; labels are the cluster ids."""

    def __init__(self, num_classes, num_features, seed=0):
        self.rng = np.random.default_rng(seed)
        self.centres = self.rng.uniform(-1, 1, (num_classes, num_features))
        self.num_classes = num_classes

    def get(self, batch_size):
        y = self.rng.integers(0, self.num_classes, batch_size)
        x = self.centres[y] + self.rng.normal(0, 0.5, (batch_size, self.centres.shape[1]))
        return x.astype(np.float32), y.astype(np.float32)


def main():
    toy_data = ToyData(10, 100)
    # --- the design notes' example, as written there ---------------------
    # Symbolic programming
    # Create Symbol Graph
    num_classes = 10
    net = mx.sym.Variable('data')
    net = mx.sym.FullyConnected(data=net, name='fc1', num_hidden=128)
    net = mx.sym.Activation(data=net, name='relu1', act_type="relu")
    net = mx.sym.FullyConnected(data=net, name='fc2', num_hidden=num_classes)
    net = mx.sym.SoftmaxOutput(data=net, name='out')
    mx.viz.plot_network(net)

    # Bind current symbol to get an executor, allocate all the ndarrays needed.
    # Allows specifying data types.
    num_features = 100
    batch_size = 100
    ex = net.simple_bind(ctx=mx.cpu(), data=(batch_size, num_features))
    args = dict(zip(net.list_arguments(), ex.arg_arrays))
    for name in args:
        print(name, args[name].shape)
    # The one addition to the notes' text, from the notebook it was taken
    # from: simple_bind zero-fills (MXNet 1.9.1 does too), and an MLP whose
    # weights are all zero never leaves chance accuracy.
    for name in args:
        data = args[name]
        if 'weight' in name:
            data[:] = mx.random.uniform(-0.1, 0.1, data.shape)
        if 'bias' in name:
            data[:] = 0

    # Start training
    learning_rate = 0.1
    final_acc = 0
    for i in range(100):
        x, y = toy_data.get(batch_size)
        args['data'][:] = x
        args['out_label'][:] = y
        ex.forward(is_train=True)
        ex.backward()
        # Imperative programming
        for weight, grad in zip(ex.arg_arrays, ex.grad_arrays):
            weight[:] -= learning_rate * (grad / batch_size)
        if i % 10 == 0:
            acc = (mx.nd.argmax_channel(ex.outputs[0]).asnumpy() == y).sum()
            final_acc = acc
            print('iteration %d, accuracy %f' % (i, float(acc)/y.shape[0]))
    assert final_acc > 0.95, "Low training accuracy."
    # ---------------------------------------------------------------------
    return float(final_acc) / batch_size


if __name__ == "__main__":
    main()
