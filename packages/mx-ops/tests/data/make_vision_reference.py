"""Records MXNet 1.9.1's vision operators (outputs, and the inputs'
gradients under random head gradients) in tests/data/vision_mxnet191.npz
for tests/test_vision.py.  The boxes exercise the rounding of coordinates
(x.5 at several scales), boxes reaching past the image, reversed boxes
(counted as one pixel), empty bins and batch indices outside the batch;
the resizes every mode, with and without align_corners; the adaptive
poolings every form of output_size, overlapping windows included.
Run with MXNet 1.9.1's Python:
    /tmp/mxnet-venv/bin/python packages/mx-ops/tests/data/make_vision_reference.py
Each case stores its inputs '<case>/in<i>', the head gradient '<case>/g',
'<case>/out' and the inputs' gradients '<case>/grad<i>'; 'index' (JSON)
gives each case's operator, parameters and input count."""
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

ROI = [  # (case, op, data shape, params, dtype)
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

RESIZE = [  # (case, data shape, like shape or None, params, dtype)
    ("resize_up", (2, 3, 4, 5), None, {"height": 7, "width": 9}, "float32"),
    ("resize_down", (1, 2, 9, 8), None, {"height": 4, "width": 3}, "float64"),
    ("resize_unaligned", (1, 2, 4, 5), None, {"height": 7, "width": 3, "align_corners": False},
     "float32"),
    ("resize_unaligned_down", (1, 1, 9, 7), None, {"height": 4, "width": 1,
                                                   "align_corners": False}, "float64"),
    ("resize_scale", (1, 2, 5, 6), None, {"scale_height": 1.7, "scale_width": 0.6}, "float32"),
    ("resize_odd_scale", (1, 1, 5, 6), None, {"mode": "odd_scale", "scale_height": 2.0,
                                              "scale_width": 1.5}, "float32"),
    ("resize_like", (2, 1, 3, 4), (2, 1, 6, 2), {"mode": "like"}, "float32"),
    ("resize_to_even_down", (1, 1, 5, 6), None, {"mode": "to_even_down"}, "float32"),
    ("resize_to_even_up", (1, 1, 5, 6), None, {"mode": "to_even_up"}, "float32"),
    ("resize_to_odd_down", (1, 1, 5, 6), None, {"mode": "to_odd_down"}, "float32"),
    ("resize_to_odd_up", (1, 1, 5, 6), None, {"mode": "to_odd_up", "align_corners": False},
     "float32"),
    ("resize_same", (1, 2, 3, 4), None, {"height": 3, "width": 4}, "float32"),
    ("resize_to_one", (1, 2, 3, 4), None, {"height": 1, "width": 1, "align_corners": False},
     "float32"),
]

ADAPTIVE = [  # (case, data shape, params, dtype)
    ("adaptive_default", (2, 3, 5, 7), {}, "float32"),
    ("adaptive_square", (2, 2, 5, 7), {"output_size": 3}, "float32"),
    ("adaptive_hw", (1, 2, 9, 7), {"output_size": (2, 4)}, "float64"),
    ("adaptive_larger", (1, 2, 5, 7), {"output_size": (7, 9)}, "float32"),
    ("adaptive_odd", (1, 1, 13, 11), {"output_size": (5, 3)}, "float64"),
    ("adaptive_three", (1, 1, 4, 4), {"output_size": (1, 2, 3)}, "float32"),
]


def _record(out, index, case, fn, name, ins, params, dtype):
    for x in ins:
        x.attach_grad()
    with mx.autograd.record():
        y = fn(*ins, **params)
    g = mx.nd.array(rng.randn(*y.shape), dtype=dtype)
    y.backward(g)
    for i, x in enumerate(ins):
        out[f"{case}/in{i}"] = x.asnumpy()
        out[f"{case}/grad{i}"] = x.grad.asnumpy()
    out[f"{case}/g"] = g.asnumpy()
    out[f"{case}/out"] = y.asnumpy()
    index[case] = {"op": name, "params": params, "nin": len(ins)}


def main():
    out, index = {}, {}
    for case, op, shape, params, dtype in ROI:
        x = mx.nd.array(rng.randn(*shape), dtype=dtype)
        rois = mx.nd.array(ALIGN_ROIS if op == "ROIAlign" else ROIS, dtype=dtype)
        fn, name = ((mx.nd.contrib.ROIAlign, "_contrib_ROIAlign") if op == "ROIAlign"
                    else (mx.nd.ROIPooling, "ROIPooling"))
        _record(out, index, case, fn, name, [x, rois], params, dtype)
    for case, shape, like, params, dtype in RESIZE:
        ins = [mx.nd.array(rng.randn(*s), dtype=dtype) for s in [shape] + ([like] if like else [])]
        _record(out, index, case, mx.nd.contrib.BilinearResize2D, "_contrib_BilinearResize2D",
                ins, params, dtype)
    for case, shape, params, dtype in ADAPTIVE:
        _record(out, index, case, mx.nd.contrib.AdaptiveAvgPooling2D,
                "_contrib_AdaptiveAvgPooling2D", [mx.nd.array(rng.randn(*shape), dtype=dtype)],
                params, dtype)
    out["index"] = np.array(json.dumps(index))
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vision_mxnet191.npz")
    np.savez_compressed(path, **out)
    print("wrote", path)


if __name__ == "__main__":
    main()
