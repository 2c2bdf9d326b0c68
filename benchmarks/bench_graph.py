"""Training through mx-graph's executor, ours only: one iteration of the
example MLP and of LeNet (benchmarks/graph_nets.py: set data and label,
forward, backward, the example's SGD loop, a wait), and the cost of
simple_bind and bind (the graph passes, the memory plan, allocation and the
prepared calls).  Side-by-side ratios against MXNet 1.9.1 and PyTorch come
from ``benchmarks/compare_graph.py``."""
import mx

from . import graph_nets

NETS = list(graph_nets.NETS)


class TrainingIteration:
    params = [NETS]
    param_names = ["net"]

    def setup(self, net):
        self.trainer = graph_nets.SymbolicTrainer(mx, net, graph_nets.make_inputs(net))
        self.trainer.step(0)            # the first iteration touches every buffer
        self.i = 1

    def time_iteration(self, net):
        self.trainer.step(self.i)
        self.i += 1


class Bind:
    """simple_bind from the shapes (with the parameters' shapes given where
    our shape inference cannot yet infer them, as graph_nets.simple_bind
    decides once here) and bind with every array given."""
    params = [NETS]
    param_names = ["net"]

    def setup(self, net):
        self.symbol = graph_nets.SYMBOLS[net](mx)
        ex, self.how, self.shapes = graph_nets.simple_bind(mx, net, self.symbol)
        inputs = graph_nets.make_inputs(net)
        self.args, self.grads = graph_nets.bind_arrays(mx, net, inputs, self.symbol)
        mx.nd.waitall()

    def time_simple_bind(self, net):
        self.symbol.simple_bind(ctx=mx.cpu(), **self.shapes)

    def time_bind(self, net):
        self.symbol.bind(ctx=mx.cpu(), args=self.args, args_grad=self.grads)
