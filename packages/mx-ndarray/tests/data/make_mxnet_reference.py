"""Writes the MXNet 1.x reference files in this folder, with real MXNet:

    OPENBLAS_CORETYPE=Haswell /tmp/mxnet-venv/bin/python make_mxnet_reference.py

(MXNet 1.9.1, NumPy < 1.24).  Only NumPy is imported at module level, so that
``test_serialization.py`` imports ``SPEC`` and ``reference_values`` from here
to know what each file holds.
"""
import os

import numpy as np

# file -> (how it is written, [(name, dtype, shape), ...]).
#   "dict": mx.nd.save(f, {name: array})     V2 records, names
#   "list": mx.nd.save(f, [array, ...])      V2 records, no names
#   "np":   mx.npx.save(f, {name: array})    V3 records (np shape semantics)
SPEC = {
    "mxnet_dict.params": ("dict", [
        ("f32", "float32", (2, 3)),
        ("f64", "float64", (4,)),
        ("f16", "float16", (2, 2, 2)),
        ("u8", "uint8", (5,)),
        ("i32", "int32", (3, 1)),
        ("i8", "int8", (1, 2, 3, 1)),
        ("i64", "int64", (2,)),
        ("five_d", "float32", (1, 2, 1, 2, 1)),
        ("empty", "float32", (0, 3)),
        ("dense0_w\u00ebight", "float32", (1,)),
    ]),
    "mxnet_list.params": ("list", [
        (None, "float32", (3,)),
        (None, "int64", (2, 2)),
        (None, "uint8", (1,)),
    ]),
    "mxnet_np.params": ("np", [
        ("scalar", "float32", ()),
        ("zero", "int32", (2, 0)),
        ("vec", "float64", (3,)),
    ]),
}
# A row_sparse array of shape (3, 2), rows [1]: the loader must refuse it.
ROW_SPARSE_FILE = "mxnet_row_sparse.params"


def reference_values(dtype, shape):
    """The deterministic contents of an array of the reference files."""
    n = int(np.prod(shape, dtype=np.int64))
    k = np.arange(n, dtype=np.int64)
    kind = np.dtype(dtype)
    if kind == np.uint8:
        values = (k * 53 + 200) % 256
    elif kind == np.int64:
        values = (k - n // 2) * (2**33 + 1)
    elif kind.kind == "i":
        values = k - n // 2
    else:
        values = (k - n // 2) * 0.5
    return values.astype(dtype).reshape(shape)


def main():
    import mxnet as mx
    here = os.path.dirname(os.path.abspath(__file__))
    for fname, (form, entries) in SPEC.items():
        path = os.path.join(here, fname)
        if form == "np":
            mx.npx.set_np()
            mx.npx.save(path, {name: mx.np.array(reference_values(dt, shape), dtype=dt)
                               for name, dt, shape in entries})
            mx.npx.reset_np()
            continue
        arrays = [mx.nd.array(reference_values(dt, shape), dtype=dt)
                  for _, dt, shape in entries]
        if form == "dict":
            mx.nd.save(path, {name: a for (name, _, _), a in zip(entries, arrays)})
        else:
            mx.nd.save(path, arrays)
    sparse = mx.nd.sparse.row_sparse_array(
        (np.array([[1, 2]], dtype=np.float32), np.array([1])), shape=(3, 2))
    mx.nd.save(os.path.join(here, ROW_SPARSE_FILE), [sparse])


if __name__ == "__main__":
    main()
