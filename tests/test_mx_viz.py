"""``mx.viz`` is mx-graph's viz, reachable as MXNet 1.x's ``mx.viz``."""
import mx
from mx_graph import viz


def test_mx_viz_is_mx_graph_viz():
    assert mx.viz.plot_network is viz.plot_network
    assert mx.viz.print_summary is viz.print_summary


def test_mx_viz_summarises_an_mx_sym_network(capsys):
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    mx.viz.print_summary(net, shape={"data": (2, 5)})
    out = capsys.readouterr().out
    assert "fc(FullyConnected)" in out and "Total params: 18" in out
