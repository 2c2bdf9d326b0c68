"""The cases of make_sparse_ops_reference.py (run under MXNet 1.9.1) and
test_sparse_ops.py (run here): each is (name, op, inputs, params) where an
input is (array name, stype) and ``op`` is the mx.nd function's name.
The arrays are small, with empty rows and columns, so every storage rule
and every kernel's edge (rows only one side stores, rows none stores) runs."""
import numpy as np

STYPES = ("default", "row_sparse", "csr")


def arrays():
    """The named dense inputs (float32) the cases cast to their stypes."""
    rng = np.random.RandomState(25)
    a = rng.randn(6, 5).astype("float32")
    a[rng.rand(6, 5) < 0.55] = 0
    a[2] = 0
    a[:, 3] = 0
    b = rng.randn(6, 5).astype("float32")
    b[rng.rand(6, 5) < 0.55] = 0
    b[4] = 0
    b[2, 1] = 1.5
    c = rng.randn(6, 5).astype("float32")
    c[rng.rand(6, 5) < 0.7] = 0
    d = np.abs(rng.randn(6, 5)).astype("float32") + 0.5   # a divisor without zeros
    return {
        "a": a, "b": b, "c": c, "d": d,
        "z": np.zeros((6, 5), "float32"),
        "row": rng.randn(1, 5).astype("float32"),
        "col": rng.randn(6, 1).astype("float32"),
        "one": rng.randn(1, 1).astype("float32"),
        "rowpos": np.abs(rng.randn(1, 5)).astype("float32") + 0.5,
        "colpos": np.abs(rng.randn(6, 1)).astype("float32") + 0.5,
        "cond": (rng.rand(6, 5) < 0.3).astype("float32") * rng.randn(6, 5).astype("float32"),
    }


def _pairs(op, lhs, rhs):
    return [(f"{op}.{lhs}_{s}.{rhs}_{t}", op, [(lhs, s), (rhs, t)], {})
            for s in STYPES for t in STYPES]


def cases():
    out = []
    for op in ("elemwise_add", "elemwise_sub", "elemwise_mul"):
        out += _pairs(op, "a", "b")
    out += _pairs("elemwise_div", "a", "d")
    for op in ("broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div",
               "broadcast_plus", "broadcast_minus"):
        for vec in ("rowpos", "colpos", "one"):
            for s in STYPES[1:]:
                out.append((f"{op}.a_{s}.{vec}", op, [("a", s), (vec, "default")], {}))
        for s in STYPES[1:]:
            out.append((f"{op}.a_{s}.d_default", op, [("a", s), ("d", "default")], {}))
            out.append((f"{op}.rowpos.a_{s}", op, [("rowpos", "default"), ("a", s)], {}))
    for op in ("add_n", "ElementWiseSum"):
        for stypes in (("row_sparse",) * 2, ("row_sparse",) * 4, ("csr",) * 3,
                       ("row_sparse", "default", "row_sparse"),
                       ("default", "row_sparse", "row_sparse"),
                       ("row_sparse", "csr"), ("csr", "default", "csr"),
                       ("default", "csr", "row_sparse"), ("row_sparse",)):
            names = ("a", "b", "c", "z")
            ins = [(names[i], s) for i, s in enumerate(stypes)]
            out.append((f"{op}." + "_".join(s[:3] for s in stypes), op, ins, {}))
    for s in STYPES[1:]:
        for begin, end in (((1,), (4,)), ((0,), (6,)), ((3,), (3,)), ((1, 1), (5, 4)),
                           ((None,), (2,)), ((-4,), (None,))):
            out.append((f"slice.a_{s}.{begin}_{end}", "slice", [("a", s)],
                        {"begin": begin, "end": end}))
        for axis, begin, end in ((0, 1, 4), (1, 1, 3), (0, 2, None)):
            out.append((f"slice_axis.a_{s}.{axis}_{begin}_{end}", "slice_axis", [("a", s)],
                        {"axis": axis, "begin": begin, "end": end}))
    for cs in STYPES:
        for xs in ("default", "csr"):
            out.append((f"where.cond_{cs}.{xs}", "where",
                        [("cond", cs), ("a", xs), ("b", xs)], {}))
    for s in STYPES[1:]:
        for params in ({}, {"ord": 2}, {"ord": 1}, {"axis": 0}, {"axis": 1},
                       {"axis": 1, "keepdims": True}, {"axis": (0, 1)}):
            key = "_".join(f"{k}{v}" for k, v in params.items()) or "none"
            out.append((f"norm.a_{s}.{key}", "norm", [("a", s)], params))
        for op in ("sum", "mean"):
            for params in ({}, {"axis": 0}, {"axis": 1}, {"axis": 0, "keepdims": True},
                           {"axis": 1, "keepdims": True}, {"axis": -1}, {"axis": (0, 1)},
                           {"axis": 1, "exclude": True}):
                key = "_".join(f"{k}{v}" for k, v in params.items()) or "none"
                out.append((f"{op}.a_{s}.{key}", op, [("a", s)], params))
        for op, params in (("zeros_like", {}), ("ones_like", {}), ("negative", {}),
                           ("_copy", {}), ("identity", {}),
                           ("clip", {"a_min": -0.5, "a_max": 0.5}),
                           ("clip", {"a_min": 0.1, "a_max": 0.5}),
                           ("clip", {"a_min": -0.5, "a_max": -0.1})):
            key = "_".join(f"{k}{v}" for k, v in params.items()) or "none"
            out.append((f"{op}.a_{s}.{key}", op, [("a", s)], params))
    return out
