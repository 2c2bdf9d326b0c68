"""Records MXNet 1.9.1's CTCLoss (losses, and data gradients under random
output gradients through autograd) in tests/data/ctc_mxnet191.npz for
tests/test_ctc.py.  Run with MXNet 1.9.1's Python:
    /tmp/mxnet-venv/bin/python packages/mx-ops/tests/data/make_ctc_reference.py
MXNet computes CTCLoss in float32 only.  Each case stores '<case>/data',
'<case>/label', '<case>/data_lengths' and '<case>/label_lengths' where used,
'<case>/og' (the output gradient), '<case>/loss' and '<case>/grad';
'index' maps each case to its parameters."""
import json
import os

import mxnet as mx
import numpy as np

rng = np.random.RandomState(0)

# (case, (T, N, alphabet), labels, data_lengths, label_lengths, parameters)
CASES = [
    # 0 pads with blank 'first'; repeated labels need a blank between them.
    ("first_padded", (7, 4, 6), [[1, 2, 2, 0], [3, 0, 0, 0], [5, 5, 5, 0], [1, 2, 3, 4]],
     None, None, {}),
    # -1 pads with 'last'; 0 is a label there.
    ("last_padded", (6, 3, 5), [[0, 1, -1], [3, 3, -1], [2, -1, -1]], None, None,
     dict(blank_label="last")),
    # Lengths given: steps short of T, a label list cut before its padding,
    # an empty one, and a sequence whose labels cannot fit (loss 0).
    ("lengths", (8, 5, 5), [[1, 2, 1], [4, 4, 4], [2, 3, 0], [3, 1, 2], [1, 1, 2]],
     [8, 5, 6, 3, 3], [3, 2, 0, 3, 3], dict(use_data_lengths=True, use_label_lengths=True)),
    ("data_lengths_last", (5, 3, 4), [[0, 0, -1], [1, 2, 0], [2, -1, -1]], [5, 4, 2], None,
     dict(use_data_lengths=True, blank_label="last")),
    ("label_lengths_last", (6, 2, 7), [[5, 0, 5, 1], [2, 2, 3, 4]], None, [4, 2],
     dict(use_label_lengths=True, blank_label="last")),
    # Large activations (the log-space recursion) and integer labels.
    ("wide", (12, 3, 9), [[1, 8, 8, 2, 3], [7, 6, 5, 0, 0], [4, 0, 0, 0, 0]], None, None,
     dict(scale=20.0, label_dtype="int32")),
]


def main():
    out, index = {}, {}
    for case, (T, N, A), labels, dlen, llen, params in CASES:
        params = dict(params)
        scale = params.pop("scale", 1.0)
        label_dtype = params.pop("label_dtype", "float32")
        data = (rng.randn(T, N, A) * scale).astype(np.float32)
        label = np.array(labels, dtype=label_dtype)
        og = rng.uniform(0.5, 2.0, N).astype(np.float32)
        x = mx.nd.array(data)
        x.attach_grad()
        ins = [x, mx.nd.array(label, dtype=label_dtype)]
        out[f"{case}/data"], out[f"{case}/label"] = data, label
        for name, v in (("data_lengths", dlen), ("label_lengths", llen)):
            if v is not None:
                out[f"{case}/{name}"] = np.array(v, np.float32)
                ins.append(mx.nd.array(v))
        with mx.autograd.record():
            y = mx.nd.CTCLoss(*ins, **params)
        y.backward(mx.nd.array(og))
        out[f"{case}/og"], out[f"{case}/loss"] = og, y.asnumpy()
        out[f"{case}/grad"] = x.grad.asnumpy()
        index[case] = params
    out["index"] = np.array(json.dumps(index))
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ctc_mxnet191.npz")
    np.savez_compressed(path, **out)
    print("wrote", path, len(index), "cases")


if __name__ == "__main__":
    main()
