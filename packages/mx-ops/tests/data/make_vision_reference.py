"""Records MXNet 1.9.1's vision operators (outputs, and the data gradient
under random head gradients) in tests/data/vision_mxnet191.npz for
tests/test_vision.py.  The boxes exercise the rounding of coordinates
(x.5 at several scales), boxes reaching past the image, reversed boxes
(counted as one pixel), empty bins and batch indices outside the batch.
Run with MXNet 1.9.1's Python:
    /tmp/mxnet-venv/bin/python packages/mx-ops/tests/data/make_vision_reference.py
Each case stores '<case>/data', '<case>/rois', '<case>/g', '<case>/out',
'<case>/grad'; 'index' (JSON) gives each case's operator and parameters."""
import json
import os

import mxnet as mx
import numpy as np

rng = np.random.RandomState(0)

ROIS = np.array([
    [0, 0.5, 0.5, 3.5, 2.5],
    [1, -2, -3, 1.4, 10],
    [1, 4.6, 3, 2, 1],             # reversed: one pixel
    [0, 2.5, 1.5, 2.5, 1.5],
    [1, 0, 0, 11, 9],              # the whole image and more
    [2, 0, 0, 3, 3],               # batch index outside the batch
    [-1, 0, 0, 3, 3],
    [0.7, 1.25, 0.75, 6.75, 5.25],  # a fractional batch index truncates
])

# ROIAlign: MXNet leaves the output of a negative batch index unwritten and
# aborts on an empty box with aligned=True, so neither is recorded.
ALIGN_ROIS = np.array([
    [0, 0.5, 0.5, 3.5, 2.5],
    [1, -2, -3, 1.4, 10],          # past the image: samples outside read 0
    [1, 4.6, 3, 4.9, 3.2],         # under one pixel
    [0, 1.25, 0.75, 6.75, 5.25],
    [1, 0, 0, 11, 9],
])

CASES = [  # (case, op, data shape, params, dtype)
    ("pool_s1", "ROIPooling", (2, 3, 5, 6), {"pooled_size": (2, 3), "spatial_scale": 1.0},
     "float32"),
    ("pool_s05", "ROIPooling", (2, 2, 6, 7), {"pooled_size": (3, 2), "spatial_scale": 0.5},
     "float64"),
    ("pool_s075", "ROIPooling", (2, 2, 9, 9), {"pooled_size": (4, 4), "spatial_scale": 0.75},
     "float32"),
    ("align", "ROIAlign", (2, 3, 6, 7), {"pooled_size": (2, 3), "spatial_scale": 1.0},
     "float32"),
    ("align_ratio", "ROIAlign", (2, 2, 8, 8), {"pooled_size": (3, 2), "spatial_scale": 0.5,
                                              "sample_ratio": 2}, "float64"),
    ("align_aligned", "ROIAlign", (2, 2, 7, 9), {"pooled_size": (2, 2), "spatial_scale": 0.7,
                                                "aligned": True}, "float32"),
    ("align_psroi", "ROIAlign", (2, 8, 6, 6), {"pooled_size": (2, 2), "spatial_scale": 0.6,
                                              "position_sensitive": True, "sample_ratio": 3},
     "float64"),
]


def main():
    out, index = {}, {}
    for case, op, shape, params, dtype in CASES:
        x = mx.nd.array(rng.randn(*shape), dtype=dtype)
        rois = mx.nd.array(ALIGN_ROIS if op == "ROIAlign" else ROIS, dtype=dtype)
        x.attach_grad()
        with mx.autograd.record():
            y = (mx.nd.contrib.ROIAlign if op == "ROIAlign" else mx.nd.ROIPooling)(
                x, rois, **params)
        g = mx.nd.array(rng.randn(*y.shape), dtype=dtype)
        y.backward(g)
        for key, v in (("data", x), ("rois", rois), ("g", g), ("out", y), ("grad", x.grad)):
            out[f"{case}/{key}"] = v.asnumpy()
        index[case] = {"op": "_contrib_ROIAlign" if op == "ROIAlign" else op,
                       "params": params, "dtype": dtype}
    out["index"] = np.array(json.dumps(index))
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vision_mxnet191.npz")
    np.savez_compressed(path, **out)
    print("wrote", path)


if __name__ == "__main__":
    main()
