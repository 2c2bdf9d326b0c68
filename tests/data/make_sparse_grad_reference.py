"""Writes sparse_grad_reference.npz here with real MXNet 1.9.1:

    OPENBLAS_CORETYPE=Haswell /tmp/mxnet-venv/bin/python tests/data/make_sparse_grad_reference.py

What tests/test_sparse_grad.py compares with ours (sparse gradients in
autograd and the executor).  Each case stores its gradient's storage type
(``<case>.stype``), its dense value (``<case>.dense``) and, for a
row_sparse one, its kept rows (``<case>.indices``):

- ``emb``: Embedding(sparse_grad=True) recorded, head gradient HEAD,
  weight.attach_grad(stype='row_sparse');
- ``emb_dense``: the same with sparse_grad=False and a dense grad;
- ``emb_grad``: autograd.grad of the first case with a dense attached grad;
- ``emb_twice``: two Embedding calls on one weight, summed;
- ``sparse_embedding``: mx.nd.contrib.SparseEmbedding;
- ``dense_into_rsp``: (x * 2) with x.attach_grad(stype='row_sparse');
- ``dense_into_csr``: the same with stype='csr';
- ``rsp_var``: square(r) of a row_sparse r with a row_sparse grad;
- ``exe``: simple_bind of MakeLoss(sum(Embedding(sparse_grad=True)^2))
  (grad_dict['w'] after one forward/backward; ``exe.out`` the loss);
- ``exe_fallback``: relu(exp(c)) + transpose(W) with c csr (stype_dict),
  its output (``exe_fallback.out``) and W's gradient for a head of ones.
MXNet refuses grad_req 'add' for Embedding's row_sparse gradient (its
kernel checks req == kWriteTo), so 'add' is tested against the sum of two
'write' cases (``emb`` and ``emb2``).
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "sparse_grad_reference.npz"
ROWS, DIM = 8, 4
IDX = np.array([[1, 5, 1], [7, 5, 0]], np.float32)
IDX2 = np.array([[2, 5]], np.float32)


def inputs():
    rng = np.random.RandomState(7)
    return {"w": rng.rand(ROWS, DIM).astype(np.float32),
            "head": rng.rand(2, 3, DIM).astype(np.float32),
            "head2": rng.rand(1, 2, DIM).astype(np.float32),
            "x": rng.rand(3, 2).astype(np.float32),
            "r": np.array([[0, 0], [1, 2], [0, 0], [3, 0]], np.float32),
            "c": np.array([[0, 1, 0], [2, 0, 0]], np.float32),
            "W": rng.rand(3, 2).astype(np.float32)}


def store(out, name, g):
    out[f"{name}.stype"] = np.array(g.stype)
    out[f"{name}.dense"] = g.asnumpy()
    if g.stype == "row_sparse":
        out[f"{name}.indices"] = g.indices.asnumpy()


def main():
    import mxnet as mx
    nd, ag = mx.nd, mx.autograd
    x = inputs()
    out = {k: v for k, v in x.items()}

    def emb_grad(idx, head, sparse=True, stype="row_sparse"):
        w = nd.array(x["w"])
        w.attach_grad(stype=stype)
        with ag.record():
            y = nd.Embedding(nd.array(idx), w, input_dim=ROWS, output_dim=DIM,
                             sparse_grad=sparse)
        y.backward(nd.array(head))
        return w.grad

    store(out, "emb", emb_grad(IDX, x["head"]))
    store(out, "emb2", emb_grad(IDX2, x["head2"]))
    store(out, "emb_dense", emb_grad(IDX, x["head"], False, "default"))
    w = nd.array(x["w"])
    w.attach_grad()
    with ag.record():
        y = nd.Embedding(nd.array(IDX), w, input_dim=ROWS, output_dim=DIM, sparse_grad=True)
    store(out, "emb_grad", ag.grad(y, [w], head_grads=nd.array(x["head"]))[0])
    w = nd.array(x["w"])
    w.attach_grad(stype="row_sparse")
    with ag.record():
        a = nd.Embedding(nd.array(IDX), w, input_dim=ROWS, output_dim=DIM, sparse_grad=True)
        b = nd.Embedding(nd.array(IDX2), w, input_dim=ROWS, output_dim=DIM, sparse_grad=True)
        loss = (a * nd.array(x["head"])).sum() + (b * nd.array(x["head2"])).sum()
    loss.backward()
    store(out, "emb_twice", w.grad)
    w = nd.array(x["w"])
    w.attach_grad(stype="row_sparse")
    with ag.record():
        y = nd.contrib.SparseEmbedding(nd.array(IDX), w, input_dim=ROWS, output_dim=DIM)
    y.backward(nd.array(x["head"]))
    store(out, "sparse_embedding", w.grad)
    for stype in ("row_sparse", "csr"):
        v = nd.array(x["x"])
        v.attach_grad(stype=stype)
        with ag.record():
            y = v * 2
        y.backward()
        store(out, "dense_into_" + ("rsp" if stype == "row_sparse" else "csr"), v.grad)
    r = nd.array(x["r"]).tostype("row_sparse")
    r.attach_grad(stype="row_sparse")
    with ag.record():
        y = nd.square(r)
    out["rsp_var.out_stype"] = np.array(y.stype)
    y.backward()
    store(out, "rsp_var", r.grad)

    data, wv = mx.sym.var("data"), mx.sym.var("w")
    e = mx.sym.Embedding(data, wv, input_dim=ROWS, output_dim=DIM, sparse_grad=True)
    loss = mx.sym.MakeLoss(mx.sym.sum(e * e))
    exe = loss.simple_bind(mx.cpu(), data=IDX.shape, w=(ROWS, DIM),
                           grad_req={"data": "null", "w": "write"})
    exe.arg_dict["data"][:] = IDX
    exe.arg_dict["w"][:] = x["w"]
    out["exe.out"] = exe.forward(is_train=True)[0].asnumpy()
    exe.backward()
    store(out, "exe", exe.grad_dict["w"])

    c, W = mx.sym.var("c", stype="csr"), mx.sym.var("W")
    o = mx.sym.relu(mx.sym.exp(c)) + mx.sym.transpose(W)
    exe = o.simple_bind(mx.cpu(), c=(2, 3), W=(3, 2), stype_dict={"c": "csr", "W": "default"},
                        grad_req={"c": "null", "W": "write"})
    out["exe_fallback.c_stype"] = np.array(exe.arg_dict["c"].stype)
    exe.arg_dict["c"][:] = nd.array(x["c"]).tostype("csr")
    exe.arg_dict["W"][:] = x["W"]
    out["exe_fallback.out"] = exe.forward(is_train=True)[0].asnumpy()
    exe.backward(nd.ones((2, 3)))
    store(out, "exe_fallback", exe.grad_dict["W"])
    np.savez(OUT, **out)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
