"""Writes mxnet_sparse_optim.npz: MXNet 1.9.1's optimizer updates on
row_sparse gradients, for test_sparse_optimizer.py.

Run with the reference interpreter (never needed by the tests):
    /tmp/mxnet-venv/bin/python make_mxnet_sparse_optim.py

Each case is one call, ``op(weight, grad, *states, out=weight, **params)``,
with its inputs and MXNet's results stored under ``<case>/<name>``:
``weight``, ``grad_data``, ``grad_indices``, ``state0``, ``state1`` (the
inputs, dense), ``out_weight``, ``out_state0``, ``out_state1`` (after the
call) and ``meta`` (a JSON string: op, weight/state storage type, grad
shape, params and the output's storage type).  The cases: every op with a
row_sparse gradient (some rows, no rows, every row), dense and row_sparse
weights and states (all rows stored, as MXNet requires), lazy_update True
and False where the op has it, with and without clipping, float32 and
float64, a 2-D and a 3-D table; and row_sparse states that store no row
yet (``*-fresh-states``: MXNet fills them with zero rows).
"""
import itertools
import json
import pathlib

import mxnet as mx
import numpy as np

OUT = pathlib.Path(__file__).with_name("mxnet_sparse_optim.npz")

# op -> (number of states, its own params, has lazy_update)
OPS = {
    "sgd_update": (0, {}, True),
    "sgd_mom_update": (1, {"momentum": 0.9}, True),
    "adam_update": (2, {"beta1": 0.9, "beta2": 0.99, "epsilon": 1e-6}, True),
    "ftrl_update": (2, {"lamda1": 0.01, "beta": 1.0}, False),
    "adagrad_update": (1, {"epsilon": 1e-5}, False),
}
SETTINGS = {
    "clip": {"lr": 0.1, "wd": 0.05, "rescale_grad": 0.5, "clip_gradient": 0.7},
    "plain": {"lr": 0.05, "wd": 0.1, "rescale_grad": 1.0, "clip_gradient": -1.0},
}
ROWS = {"some": [1, 3, 4], "none": [], "all": None}


def one_case(rng, op, wstype, lazy, setting, rows_key, shape, dtype, fresh=False):
    nstates, own, _ = OPS[op]
    params = dict(SETTINGS[setting], **own)
    if op == "adagrad_update":
        params["wd"] = 0.0          # MXNet's sparse adagrad refuses weight decay
    if lazy is not None:
        params["lazy_update"] = lazy
    rows = list(range(shape[0])) if ROWS[rows_key] is None else ROWS[rows_key]
    weight = rng.uniform(-2, 2, shape).astype(dtype)
    gdata = rng.uniform(-3, 3, (len(rows),) + shape[1:]).astype(dtype)
    states = [rng.uniform(0.1, 1.0, shape).astype(dtype) for _ in range(nstates)]
    if op == "adam_update":
        states[0] -= 0.5            # the mean may be negative, the variance not
    if op == "ftrl_update":
        states[0] = rng.uniform(-1, 1, shape).astype(dtype)
    if fresh:                       # an optimizer's new states: zeros, no row stored
        states = [np.zeros(shape, dtype) for _ in states]
    w = mx.nd.array(weight, dtype=dtype).tostype(wstype)
    g = mx.nd.sparse.row_sparse_array((gdata, np.array(rows, dtype=np.int64)), shape=shape,
                                      dtype=dtype)
    s = [mx.nd.array(x, dtype=dtype).tostype(wstype) for x in states]
    fn = getattr(mx.nd.sparse, op)
    fn(w, g, *s, out=w, **params)
    result = {"weight": weight, "grad_data": gdata,
              "grad_indices": np.array(rows, dtype=np.int64), "out_weight": w.asnumpy()}
    for i, (x, y) in enumerate(zip(states, s)):
        result[f"state{i}"] = x
        result[f"out_state{i}"] = y.asnumpy()
    meta = {"op": op, "stype": wstype, "shape": list(shape), "dtype": dtype,
            "params": params, "out_stype": w.stype}
    return result, meta


def main():
    rng = np.random.RandomState(1691)
    arrays = {}
    for op, (nstates, _, has_lazy) in OPS.items():
        lazies = (True, False) if has_lazy else (None,)
        for wstype, lazy, setting, rows_key in itertools.product(
                ("default", "row_sparse"), lazies, SETTINGS, ROWS):
            if op == "ftrl_update" and wstype == "default" and rows_key != "some":
                continue        # the dense fallback: one case is enough
            shapes = [((6, 3), "float32")]
            if setting == "clip" and rows_key == "some":
                shapes += [((5, 2, 3), "float32"), ((6, 3), "float64")]
            for shape, dtype in shapes:
                case = f"{op}-{wstype}-lazy{lazy}-{setting}-{rows_key}-{len(shape)}d-{dtype}"
                result, meta = one_case(rng, op, wstype, lazy, setting, rows_key, shape, dtype)
                for k, v in result.items():
                    arrays[f"{case}/{k}"] = v
                arrays[f"{case}/meta"] = np.array(json.dumps(meta))
        if nstates:                 # row_sparse states storing no row yet
            case = f"{op}-row_sparse-fresh-states"
            result, meta = one_case(rng, op, "row_sparse", lazies[0], "clip", "some", (6, 3),
                                    "float32", fresh=True)
            for k, v in result.items():
                arrays[f"{case}/{k}"] = v
            arrays[f"{case}/meta"] = np.array(json.dumps(meta))
    np.savez_compressed(OUT, **arrays)
    print(f"{OUT.name}: {sum(k.endswith('/meta') for k in arrays)} cases")


if __name__ == "__main__":
    main()
