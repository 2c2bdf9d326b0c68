"""Writes viz_<net>.json beside this file: MXNet 1.9.1's print_summary
tables and plot_network Digraph sources for the networks of viz_nets.py.
test_viz.py compares mx.viz against them.  Run with MXNet 1.9.1 and
python-graphviz installed:

    OPENBLAS_CORETYPE=Haswell /tmp/mxnet-venv/bin/python make_viz_expected.py
"""
import contextlib
import io
import json
import os
import sys

import graphviz
import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from viz_nets import NETS  # noqa: E402


def summary(sym, **kwargs):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        mx.viz.print_summary(sym, **kwargs)
    return buf.getvalue()


def main():
    for name, build in NETS.items():
        sym, data_shapes = build(mx)
        arg_shapes, _, aux_shapes = sym.infer_shape(**data_shapes)
        # Every input's shape, so the test does not depend on how much
        # shape inference can do backwards from the data alone.
        input_shapes = dict(zip(sym.list_arguments(), arg_shapes))
        input_shapes.update(zip(sym.list_auxiliary_states(), aux_shapes))
        table = summary(sym, shape=data_shapes)
        assert table == summary(sym, shape=input_shapes)
        out = {
            "mxnet": mx.__version__,
            "graphviz": graphviz.__version__,
            "data_shapes": data_shapes,
            "input_shapes": input_shapes,
            "summary": table,
            "summary_no_shape": summary(sym),
            "summary_narrow": summary(sym, shape=data_shapes, line_length=80,
                                      positions=[30, 50, 60, 80]),
            "plot": plot(sym, title=name, shape=data_shapes),
            "plot_no_shape": plot(sym, title=name),
            "plot_dtype": plot(sym, title=name, shape=data_shapes,
                               dtype={"data": np.float32}),
            "plot_weights": plot(sym, title=name, hide_weights=False,
                                 node_attrs={"shape": "oval", "fixedsize": "false"}),
        }
        with open(os.path.join(HERE, f"viz_{name}.json"), "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")


def plot(sym, **kwargs):
    return mx.viz.plot_network(sym, **kwargs).source


if __name__ == "__main__":
    main()
