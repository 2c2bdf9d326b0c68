"""Writes mxnet_sparse_optim.npz: MXNet 1.9.1's optimizer updates on
row_sparse gradients, for test_sparse_optimizer.py.

Run with the reference interpreter (never needed by the tests):
    /tmp/mxnet-venv/bin/python make_mxnet_sparse_optim.py

Each case is one call, ``op(weight, grad, *states, out=weight, **params)``.
The file holds ``cases`` (a JSON string: a list with, per case, its
``name``, ``op``, weight/state storage type ``stype``, table ``shape``,
``dtype``, ``params``, the output's storage type ``out_stype``, the
gradient's ``grad_indices`` and where its numbers start in the ``float32``
or ``float64`` array: ``offset``) and those two flat arrays.  A case's
numbers, in order: the gradient's rows (len(grad_indices) x row), the
weight, MXNet's weight after the call, then each state before and after.
The cases: every op with a
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
    numbers = [gdata, weight, w.asnumpy()]
    for x, y in zip(states, s):
        numbers += [x, y.asnumpy()]
    meta = {"op": op, "stype": wstype, "shape": list(shape), "dtype": dtype,
            "params": params, "out_stype": w.stype, "grad_indices": rows}
    return numbers, meta


def main():
    rng = np.random.RandomState(1691)
    cases, flat = [], {"float32": [], "float64": []}

    def add(name, numbers, meta):
        meta.update(name=name, offset=sum(a.size for a in flat[meta["dtype"]]))
        flat[meta["dtype"]] += [a.ravel() for a in numbers]
        cases.append(meta)

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
                add(f"{op}-{wstype}-lazy{lazy}-{setting}-{rows_key}-{len(shape)}d-{dtype}",
                    *one_case(rng, op, wstype, lazy, setting, rows_key, shape, dtype))
        if nstates:                 # row_sparse states storing no row yet
            add(f"{op}-row_sparse-fresh-states",
                *one_case(rng, op, "row_sparse", lazies[0], "clip", "some", (6, 3), "float32",
                          fresh=True))
    np.savez_compressed(OUT, cases=np.array(json.dumps(cases)),
                        **{k: np.concatenate(v) for k, v in flat.items()})
    print(f"{OUT.name}: {len(cases)} cases")


if __name__ == "__main__":
    main()
