"""``mx.viz``: plot_network and print_summary."""
from mx_graph.viz import plot_network, print_summary  # noqa: F401
