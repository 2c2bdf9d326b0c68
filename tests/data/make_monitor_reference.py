"""Writes monitor_reference.json here with real MXNet 1.9.1:

    OPENBLAS_CORETYPE=Haswell /tmp/mxnet-venv/bin/python tests/data/make_monitor_reference.py

What ``mx.mon.Monitor(1, pattern, sort=True, monitor_all)`` collects over
one forward and backward of a small network (FullyConnected, relu,
FullyConnected, SoftmaxOutput; every argument set to a linspace): per
(monitor_all, pattern) the [step, name, first value] rows of ``toc()``.
tests/test_monitor.py runs the same on ``mx``.
"""
import json
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "monitor_reference.json"
PATTERNS = (".*", ".*weight|.*output", "fc_.*")


def collect(mx):
    """{'<monitor_all>/<pattern>': [[step, name, value], ...]} for module ``mx``."""
    x = mx.sym.var("data")
    fc = mx.sym.FullyConnected(x, num_hidden=3, name="fc")
    act = mx.sym.Activation(fc, act_type="relu", name="relu")
    out = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(act, num_hidden=2, name="fc2"), name="sm")
    res = {}
    for monitor_all in (False, True):
        for pattern in PATTERNS:
            exe = out.simple_bind(mx.cpu(), data=(4, 5))
            for v in exe.arg_dict.values():
                v[:] = np.linspace(-1, 1, v.size).reshape(v.shape)
            mon = mx.mon.Monitor(1, pattern=pattern, sort=True, monitor_all=monitor_all)
            mon.install(exe)
            mon.tic()
            exe.forward(is_train=True)
            exe.backward()
            res[f"{int(monitor_all)}/{pattern}"] = [[n, k, float(v.split("\t")[0])]
                                                   for n, k, v in mon.toc()]
    return res


if __name__ == "__main__":
    import mxnet
    OUT.write_text(json.dumps(collect(mxnet), indent=0) + "\n")
    sys.exit(0)
