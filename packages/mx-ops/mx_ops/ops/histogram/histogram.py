"""Registration of _histogram (MXNet's histogram op, behind mx.nd.histogram
and mx.sym.histogram): the counts of the data's values in bins (int64)
and the bins' edges (the data's dtype).  Either 'bin_cnt' uniform bins over
'range' (one input), or the edges as a second input 'bins' (sorted, in
the data's dtype).  An empty range (lo == hi) is widened to
(lo - 0.5, hi + 0.5), as numpy.histogram and MXNet do."""
import struct

from mx_ops.core._params import Param
from mx_ops.core.partial_infer import same_type, set_infer_type_partial
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.histogram import _histogram_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_HISTOGRAM_GPU = "mx_ops.ops.histogram._histogram_gpu"


def _inputs(params):
    return ["data"] if params.get("bin_cnt") is not None else ["data", "bins"]


def _range(params):
    """(lo, hi) of uniform bins, checked and widened when empty."""
    rng = params["range"]
    if rng is None or len(rng) != 2:
        raise ShapeError(f"_histogram: argument 'range' must be (lo, hi) with 'bin_cnt', got "
                         f"{rng}")
    lo, hi = rng
    if not lo <= hi:
        raise ShapeError(f"_histogram: argument 'range' is {rng}; its first element must not "
                         f"exceed the second")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    if not hi - lo > 0:
        raise ShapeError(f"_histogram: argument 'range' is {rng}, too narrow for its bins in "
                         f"float64")
    return lo, hi


def _shapes(params, shapes):
    if params.get("bin_cnt") is not None:
        _range(params)
        n = params["bin_cnt"]
    else:
        bins = tuple(shapes[1])
        if len(bins) != 1 or bins[0] < 2:
            raise ShapeError(f"_histogram: argument 'bins' must be 1-D with at least two "
                             f"edges, got shape {bins}")
        n = bins[0] - 1
    return [(n,), (n + 1,)]


def _types(params, dtypes):
    if len(dtypes) == 2 and dtypes[1] != dtypes[0]:
        raise TypeInferenceError(f"_histogram: argument 'bins' has dtype {dtypes[1]}; it must "
                                 f"have the dtype of 'data', {dtypes[0]}")
    return ["int64", dtypes[0]]


def _pack(params, shapes):
    """mxop::HistogramParam: bin_cnt (0: the edges are an input), lo, hi."""
    if params.get("bin_cnt") is None:
        return struct.pack("=qdd", 0, 0.0, 0.0)
    return struct.pack("=qdd", params["bin_cnt"], *_range(params))


register(OpDef(
    "_histogram", arguments=("data", "bins"), list_input_names=_inputs,
    outputs=("output0", "output1"),
    input_docs={"data": "Input ndarray.", "bins": "The bins' edges, sorted (without "
                                                   "'bin_cnt')."},
    params={"bin_cnt": Param("int", None, low=1, doc="Number of uniform bins over 'range'."),
            "range": Param("float_tuple", None,
                           doc="(lo, hi) of the uniform bins; values outside are not "
                               "counted.")},
    infer_shape=_shapes, infer_type=_types,
    compute=computes(_histogram_cpu.kernels()["histogram"],
                     gpu_compute(_HISTOGRAM_GPU, "histogram", _pack)),
    pack_params=_pack, differentiable=False,
    doc="The histogram of the data: counts per bin (int64, the last bin including its "
        "right edge; NaN and values outside the bins are not counted) and the bins' edges."))


_EDGES_TYPE = same_type(outputs=(1,))


def _partial_types(params, ins, outs):
    """The counts are int64; the data, the given edges and the edges out
    share a dtype (the default rule would give the data int64)."""
    outs.assign(0, "int64", why="the counts are int64")
    return _EDGES_TYPE(params, ins, outs)


set_infer_type_partial("_histogram", _partial_types)
