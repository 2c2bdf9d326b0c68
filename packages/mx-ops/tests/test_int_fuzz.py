"""Every operator of the registry that computes on integers, fuzzed with
integer edge values (MIN, MIN + 1, -1, 0, 1, MAX of every integer dtype)
and, where it converts floats into integers, floats that fit no integer.

The operators come from the registry, not from a list: every operator
whose type inference takes integer inputs is fuzzed, and the
classification test fails for a new operator until it has a way to be
called here (SPECS, or its defaults) or is shown to be float-only
(FLOAT_ONLY), and until it has a reference (REFERENCES) or is declared to
only move elements (MOVES).  Each call runs in a kernel worker process, so
a trap fails its example instead of killing pytest, and:
  - the call returns, or raises an error its spec allows; it never dies;
  - req 'add' gives the old output plus what req 'write' gives, wrapping;
  - where the operator computes, the result is what the rules of
    src/int_arith.h give (the ``int_rules`` fixture; test_int_arith.py
    checks the same rules path by path)."""
import math

import numpy as np
import pytest
from hypothesis import Phase, given, settings, strategies as st

from mx_ops import registry
from mx_ops.core.dtypes import DTYPE_NAMES
from mx_ops.ops.elemwise import _elemwise_cpu, elemwise

INT_DTYPES = [d for d in DTYPE_NAMES if np.dtype(d).kind in "iu"]
FLOAT_DTYPES = [d for d in DTYPE_NAMES if np.dtype(d).kind == "f"]
FLOAT_EDGES = [math.nan, math.inf, -math.inf, 1e20, -1e20, 2.0 ** 63, -2.0 ** 63, 2.0 ** 31,
               -2.0 ** 31, 1e10, 300.7, -300.7, 255.9, -1.5, -0.5, 0.5, 0.0, 2.5]


# --- drawing operands ---------------------------------------------------------------------
def int_values(dtype):
    """Mostly edge values, some anywhere in the dtype."""
    info = np.iinfo(dtype)
    return st.one_of(st.sampled_from(edges(dtype).tolist()),
                     st.integers(int(info.min), int(info.max)))


def edges(dtype):
    """int_rules.edges (strategies are built where fixtures are not)."""
    info = np.iinfo(dtype)
    vals = (info.min, info.min + 1, -1, 0, 1, 2, info.max - 1, info.max)
    return np.array(sorted({int(v) for v in vals if info.min <= v <= info.max}), dtype)


def ints(draw, dtype, shape):
    n = math.prod(shape)
    return np.array(draw(st.lists(int_values(dtype), min_size=n, max_size=n)),
                    dtype).reshape(shape)


def floats(draw, dtype, shape):
    n = math.prod(shape)
    vals = draw(st.lists(st.one_of(st.sampled_from(FLOAT_EDGES), st.floats(width=32)),
                         min_size=n, max_size=n))
    with np.errstate(over="ignore"):
        return np.array(vals).astype(dtype).reshape(shape)


def values(draw, dtype, shape):
    return (ints if np.dtype(dtype).kind in "iu" else floats)(draw, dtype, shape)


def any_values(draw, shape):
    """Indices or a condition: an array of any dtype."""
    return values(draw, draw(st.sampled_from(DTYPE_NAMES)), shape)


def float_param(draw, dtype):
    """A float parameter: an edge value of dtype or a float edge value (NaN
    as MXNet writes it, 'nan')."""
    v = draw(st.one_of(int_values(dtype).map(float), st.sampled_from(FLOAT_EDGES)))
    return "nan" if math.isnan(v) else v


def size(draw):
    return draw(st.integers(1, 5))


# --- how to call each operator ---------------------------------------------------------------
class Spec:
    """``params(draw, dtype)`` and ``inputs(draw, dtype, params)`` of one
    call, for ``dtype`` the integer dtype drawn for it; ``errors``: what an
    error the operator may raise on these values says."""

    def __init__(self, inputs=None, params=None, errors=None, add_is_sum=True):
        self.inputs = inputs            # None: same_shape(the operator's argument count)
        self.params = params or (lambda draw, dtype: {})
        self.errors = errors
        self.add_is_sum = add_is_sum    # req 'add' == the old output + req 'write'


def same_shape(n):
    """n arrays of one 1-d shape: for one or two arguments every edge value or
    pair of edge values first (so an edge case is never left to chance),
    then drawn values."""
    def inputs(draw, dtype, params):
        k = size(draw)
        drawn = [ints(draw, dtype, (k,)) for _ in range(n)]
        if n > 2:
            return drawn
        e = edges(dtype)
        grid = [e] if n == 1 else [np.repeat(e, e.size), np.tile(e, e.size)]
        return [np.concatenate([g, d]) for g, d in zip(grid, drawn)]
    return inputs


def broadcast_pair(draw, dtype, params):
    """A column against a row, both every edge value and then drawn ones:
    the broadcasting loop over every pair."""
    col, row = (np.concatenate([edges(dtype), ints(draw, dtype, (size(draw),))])
                for _ in range(2))
    rhs = draw(st.sampled_from([(1, -1), (-1,)]))
    return [col.reshape(-1, 1), row.reshape(rhs)]


def no_inputs(draw, dtype, params):
    return []


def fill_params(value):
    def params(draw, dtype):
        out = {"shape": (size(draw),), "dtype": dtype}
        if value:
            out["value"] = float_param(draw, dtype)
        return out
    return params


def arange_params(draw, dtype):
    start = float_param(draw, dtype)
    step = draw(st.sampled_from([1.0, -1.0, 0.5, 1e10]))
    start = 0.0 if start == "nan" or math.isinf(start) else start
    return {"start": start, "stop": start + step * size(draw), "step": step, "dtype": dtype}


def randint_params(draw, dtype):
    low, high = sorted(draw(st.lists(int_values(dtype), min_size=2, max_size=2, unique=True)))
    return {"low": low, "high": high, "shape": (3,), "dtype": dtype}


def cast_inputs(draw, dtype, params):
    return [any_values(draw, (size(draw),))]


def where_inputs(draw, dtype, params):
    return [any_values(draw, (3,)), ints(draw, dtype, (3,)), ints(draw, dtype, (3,))]


def take_inputs(draw, dtype, params):
    return [ints(draw, dtype, (size(draw), 2)), any_values(draw, (size(draw),))]


def take_grad_inputs(draw, dtype, params):
    k = size(draw)
    return [ints(draw, dtype, (k, 2)), any_values(draw, (k,)), ints(draw, dtype, (size(draw), 2))]


def topk_grad_inputs(draw, dtype, params):
    k = params["k"]
    return [ints(draw, dtype, (k,)), any_values(draw, (k,)), ints(draw, dtype, (k + size(draw),))]


def pick_inputs(draw, dtype, params):
    n = size(draw)
    return [ints(draw, dtype, (n, size(draw))), any_values(draw, (n,))]


def pick_grad_inputs(draw, dtype, params):
    n = size(draw)
    return [ints(draw, dtype, (n,)), any_values(draw, (n,)), ints(draw, dtype, (n, size(draw)))]


def fill_element_inputs(draw, dtype, params):
    n = size(draw)
    return [ints(draw, dtype, (n, size(draw))), ints(draw, dtype, (n,)), any_values(draw, (n,))]


def one_hot_params(draw, dtype):
    return {"depth": size(draw), "dtype": dtype, "on_value": float_param(draw, dtype),
            "off_value": float_param(draw, dtype)}


def nd_index_inputs(kind):
    """gather_nd, scatter_nd, _scatter_set_nd, _backward_gather_nd on 1-d
    arrays of n: indices (1, k) of any dtype, mostly out of range."""
    def inputs(draw, dtype, params):
        n, k = params["shape"][0] if params.get("shape") else size(draw), size(draw)
        idx = any_values(draw, (1, k))
        return {"gather": [ints(draw, dtype, (n,)), idx],
                "scatter": [ints(draw, dtype, (k,)), idx],
                "set": [ints(draw, dtype, (n,)), ints(draw, dtype, (k,)), idx],
                "backward": [ints(draw, dtype, (k,)), idx, ints(draw, dtype, (n,))]}[kind]
    return inputs


def embedding_inputs(draw, dtype, params):
    return [any_values(draw, (size(draw),)), ints(draw, dtype, (params["input_dim"], 2))]


def concat_grad_inputs(draw, dtype, params):
    """(ograd of n + m, the forward's two inputs of n and m)."""
    n, m = size(draw), size(draw)
    return [ints(draw, dtype, (n + m,)), ints(draw, dtype, (n,)), ints(draw, dtype, (m,))]


def region_params(draw, dtype):
    return {"begin": (0,), "end": (1,)}


def region_scalar_params(draw, dtype):
    return {"scalar": float_param(draw, dtype), **region_params(draw, dtype)}


def axis_slice_params(draw, dtype):
    return {"axis": 0, "begin": 0, "end": 1}


def region_and_whole(draw, dtype, params):
    """(the region of 1, the whole of 3): _slice_assign's lhs is the whole."""
    return [ints(draw, dtype, (1,)), ints(draw, dtype, (3,))]


def whole_and_region(draw, dtype, params):
    return [ints(draw, dtype, (3,)), ints(draw, dtype, (1,))]


def eye_params(draw, dtype):
    return {"N": size(draw), "M": draw(st.integers(0, 5)), "k": draw(st.integers(-6, 6)),
            "dtype": dtype}


def linspace_params(draw, dtype):
    return {"start": float_param(draw, dtype), "stop": float_param(draw, dtype),
            "num": draw(st.integers(0, 5)), "endpoint": draw(st.booleans()), "dtype": dtype}


def diag_params(draw, dtype):
    return {"k": draw(st.integers(-2, 2))}


def diag_inputs(draw, dtype, params):
    shape = draw(st.sampled_from([(size(draw),), (size(draw), size(draw))]))
    return [ints(draw, dtype, shape)]


def diag_grad_inputs(draw, dtype, params):
    n, m = size(draw), size(draw)
    return [ints(draw, dtype, (min(n, m),)), ints(draw, dtype, (n, m))]


def histogram_params(draw, dtype):
    lo, hi = sorted(draw(st.lists(int_values(dtype), min_size=2, max_size=2)))
    return {"bin_cnt": size(draw), "range": (float(lo), float(hi))}


def index_copy_inputs(draw, dtype, params):
    k = size(draw)
    return [ints(draw, dtype, (size(draw), 2)), any_values(draw, (k,)), ints(draw, dtype, (k, 2))]


SPECS = {
    **{name: Spec(broadcast_pair) for _, names in elemwise.BINARY.values() for name in names[:1]},
    # (test_int_arith.py runs every edge value as the scalar of every one)
    **{name: Spec(params=lambda draw, dtype: {"scalar": float_param(draw, dtype)})
       for name in elemwise.SCALAR},
    "add_n": Spec(lambda draw, dtype, params: same_shape(draw(st.integers(1, 6)))(
        draw, dtype, params)),
    "where": Spec(where_inputs),
    "Cast": Spec(cast_inputs, lambda draw, dtype: {"dtype": dtype}),
    "_backward_Cast": Spec(lambda draw, dtype, params: [any_values(draw, (3,)),
                                                        ints(draw, dtype, (3,))]),
    "clip": Spec(params=lambda draw, dtype: {"a_min": float_param(draw, dtype),
                                             "a_max": float_param(draw, dtype)},
                 errors="exceeds"),
    "_full": Spec(no_inputs, fill_params(True)),
    "_zeros": Spec(no_inputs, fill_params(False)),
    "_ones": Spec(no_inputs, fill_params(False)),
    "_arange": Spec(no_inputs, arange_params, errors="holds no element"),
    "_random_randint": Spec(no_inputs, randint_params),
    "take": Spec(take_inputs, lambda draw, dtype: {
        "mode": draw(st.sampled_from(["clip", "wrap", "raise"]))}, errors="out of range"),
    "_backward_take": Spec(take_grad_inputs, lambda draw, dtype: {
        "mode": draw(st.sampled_from(["clip", "wrap"]))}),
    "_backward_topk": Spec(topk_grad_inputs, lambda draw, dtype: {"k": size(draw)}),
    "pick": Spec(pick_inputs, lambda draw, dtype: {
        "mode": draw(st.sampled_from(["clip", "wrap"]))}),
    "_backward_pick": Spec(pick_grad_inputs, lambda draw, dtype: {
        "mode": draw(st.sampled_from(["clip", "wrap"]))}),
    "batch_take": Spec(lambda draw, dtype, params: [
        ints(draw, dtype, (3, size(draw))), ints(draw, "int32", (3,))]),
    "fill_element_0index": Spec(fill_element_inputs),
    "_eye": Spec(no_inputs, eye_params),
    "_linspace": Spec(no_inputs, linspace_params),
    "diag": Spec(diag_inputs, diag_params, errors="does not exist"),
    "cast_storage": Spec(params=lambda draw, dtype: {"stype": "default"}),
    "_sparse_retain": Spec(lambda draw, dtype, params: [ints(draw, dtype, (3, 2)),
                                                        ints(draw, "int64", (2,))],
                           errors="must be row_sparse"),
    "_backward_diag": Spec(diag_grad_inputs),
    "_ravel_multi_index": Spec(lambda draw, dtype, params: [ints(draw, dtype, (2, size(draw)))],
                               lambda draw, dtype: {"shape": (3, 4)}),
    "_unravel_index": Spec(params=lambda draw, dtype: {"shape": (3, 4)}),
    "_histogram": Spec(same_shape(1), histogram_params, errors="too narrow"),
    "_contrib_index_copy": Spec(index_copy_inputs, errors="out of range"),
    "_contrib_quadratic": Spec(params=lambda draw, dtype: {"a": 2.5, "b": -1.5, "c": 0.7}),
    "_contrib_backward_quadratic": Spec(params=lambda draw, dtype: {"a": 2.5, "b": -1.5}),
    "_contrib_allclose": Spec(params=lambda draw, dtype: {"atol": float(draw(st.integers(0, 2)))}),
    "_contrib_backward_index_copy": Spec(lambda draw, dtype, params: [
        ints(draw, dtype, (size(draw), 2)), any_values(draw, (size(draw),))],
        errors="out of range"),
    "one_hot": Spec(lambda draw, dtype, params: [any_values(draw, (size(draw),))],
                    one_hot_params),
    "gather_nd": Spec(nd_index_inputs("gather"), errors="out of range"),
    # req 'add' adds every duplicate index's row, where write keeps the last
    "scatter_nd": Spec(nd_index_inputs("scatter"), lambda draw, dtype: {"shape": (size(draw),)},
                       errors="out of range", add_is_sum=False),
    "_scatter_set_nd": Spec(nd_index_inputs("set"), errors="out of range", add_is_sum=False),
    "_backward_gather_nd": Spec(nd_index_inputs("backward"), errors="out of range"),
    **{name: Spec(embedding_inputs, lambda draw, dtype: {
        "input_dim": size(draw), "output_dim": 2, "dtype": dtype})
       for name in ("Embedding", "_contrib_SparseEmbedding")},
    "_slice_assign_scalar": Spec(params=region_scalar_params),
    "_slice_assign": Spec(whole_and_region, region_params),
    "_backward_slice": Spec(region_and_whole, region_params),
    "slice": Spec(params=region_params),
    "slice_axis": Spec(params=axis_slice_params),
    "_backward_slice_axis": Spec(region_and_whole, axis_slice_params),
    "broadcast_to": Spec(lambda draw, dtype, params: [ints(draw, dtype, (1,))],
                         lambda draw, dtype: {"shape": (size(draw),)}),
    "expand_dims": Spec(params=lambda draw, dtype: {"axis": 0}),
    "SliceChannel": Spec(params=lambda draw, dtype: {"num_outputs": 1, "axis": 0}),
    "Concat": Spec(params=lambda draw, dtype: {"dim": 0}),
    "_backward_Concat": Spec(concat_grad_inputs, lambda draw, dtype: {"dim": 0}),
    "Reshape": Spec(params=lambda draw, dtype: {"shape": (-1,)}),
    "_broadcast_reduce_like": Spec(lambda draw, dtype, params: [ints(draw, dtype, (1,)),
                                                                ints(draw, dtype, (size(draw),))]),
    "norm": Spec(params=lambda draw, dtype: {"ord": draw(st.sampled_from([1, 2]))}),
    **{name: Spec(lambda draw, dtype, params: [ints(draw, dtype, (1, 4, 2, 2))],
                  lambda draw, dtype: {"block_size": 2})
       for name in ("depth_to_space", "space_to_depth")},
    "repeat": Spec(params=lambda draw, dtype: {"repeats": 2}),
    "_backward_repeat": Spec(params=lambda draw, dtype: {"repeats": 1}),
    "tile": Spec(params=lambda draw, dtype: {"reps": (2,)}),
    "_backward_tile": Spec(params=lambda draw, dtype: {"reps": (1,)}),
    "reverse": Spec(params=lambda draw, dtype: {"axis": (0,)}),
    "_split_v2": Spec(params=lambda draw, dtype: {"indices": (0,), "axis": 0}),
    **{name: Spec(lambda draw, dtype, params: [ints(draw, dtype, (3, 2))])
       for name in ("SequenceMask", "SequenceReverse", "SequenceLast")},
    "_backward_SequenceLast": Spec(lambda draw, dtype, params: [ints(draw, dtype, (2,)),
                                                                ints(draw, dtype, (3, 2))]),
}

# Operators whose defaults cannot run, with parameters under which their
# type inference turns integer inputs down (checked below).
FLOAT_ONLY = {
    "Activation": {"act_type": "relu"}, "_backward_Activation": {"act_type": "relu"},
    "Convolution": {"kernel": (1,), "num_filter": 1},
    "_backward_Convolution": {"kernel": (1,), "num_filter": 1},
    "Deconvolution": {"kernel": (1,), "num_filter": 1},
    "_backward_Deconvolution": {"kernel": (1,), "num_filter": 1},
    "FullyConnected": {"num_hidden": 1}, "_backward_FullyConnected": {"num_hidden": 1},
    "LRN": {"nsize": 1}, "_backward_LRN": {"nsize": 1},
    "moments": {"axes": (0,)},
    "RNN": {"state_size": 1, "num_layers": 1, "mode": "gru"},
    "_backward_RNN": {"state_size": 1, "num_layers": 1, "mode": "gru"},
    "UpSampling": {"scale": 1, "sample_type": "nearest"},
    "_backward_UpSampling": {"scale": 1, "sample_type": "nearest", "num_args": 1},
    "_backward_Embedding": {"input_dim": 2, "output_dim": 2},
    **{name: {"pooled_size": (1, 1), "spatial_scale": 1.0}
       for name in ("ROIPooling", "_backward_ROIPooling", "_contrib_ROIAlign",
                    "_backward_ROIAlign")},
    "adam_update": {"lr": 0.1}, "ftrl_update": {"lr": 0.1}, "rmsprop_update": {"lr": 0.1},
    "sgd_mom_update": {"lr": 0.1}, "sgd_update": {"lr": 0.1},
    "_sparse_adagrad_update": {"lr": 0.1},
    **{name: {"lr": 0.1} for name in (
        "nag_mom_update", "mp_nag_mom_update", "mp_sgd_update", "mp_sgd_mom_update",
        "signsgd_update", "signum_update", "rmspropalex_update", "lamb_update_phase2",
        "mp_lamb_update_phase2")},
    "ftml_update": {"lr": 0.1, "t": 1},
    "lamb_update_phase1": {"t": 1, "wd": 0.0}, "mp_lamb_update_phase1": {"t": 1, "wd": 0.0},
    **{name: {"lrs": (0.1,), "wds": (0.0,)} for name in (
        "multi_sgd_update", "multi_sgd_mom_update", "multi_mp_sgd_update",
        "multi_mp_sgd_mom_update")},
    "multi_lars": {"eta": 1.0, "eps": 1e-8},
    "_adamw_update": {"lr": 0.1, "eta": 1.0},
    "_mp_adamw_update": {"lr": 0.1, "eta": 1.0},
    **{name: {"lrs": (0.1,), "wds": (0.0,), "etas": (1.0,)}
       for name in ("_multi_adamw_update", "_multi_mp_adamw_update")},
    **{name: {"learning_rates": (0.1,), "wds": (0.0,), "step_count": (1,)}
       for name in ("_multi_lamb_update", "_multi_mp_lamb_update")},
    "Pad": {"mode": "edge", "pad_width": (0,) * 8},
    "_backward_Pad": {"mode": "edge", "pad_width": (0,) * 8},
    "im2col": {"kernel": (1,)}, "_backward_im2col": {"kernel": (1,)},
    "GridGenerator": {"transform_type": "warp"},
    "_backward_GridGenerator": {"transform_type": "warp"},
    **{name: {"transform_type": "affine", "sampler_type": "bilinear"}
       for name in ("SpatialTransformer", "_backward_SpatialTransformer")},
    "col2im": {"output_size": (1,), "kernel": (1,)},
    **{f"{prefix}_interleaved_matmul_{name}": {"heads": 1}
       for prefix in ("_contrib", "_backward")
       for name in ("selfatt_qk", "selfatt_valatt", "encdec_qk", "encdec_valatt")},
}


def _input_count(op, params):
    if op.key_var_num_args is not None:
        return 2
    return len(op.input_names(op.parse_params(params))) if op.num_inputs is None \
        else op.num_inputs


def _takes_integers(name, params):
    """True when ``name`` with ``params`` types integer inputs (an integer
    output dtype for one without inputs), False for a TypeInferenceError;
    other errors propagate."""
    op = registry.get(name)
    kwargs = op.parse_call(dict(params), _input_count(op, params))
    try:
        out = op.infer_type(kwargs, ["int32"] * op.input_count(kwargs))
    except registry.TypeInferenceError:
        return False
    return op.input_count(kwargs) > 0 or np.dtype(out[0]).kind in "iu"


def classify():
    """(integer operators, float-only operators, operators that cannot be
    called) over the registry's operators with a CPU compute."""
    ints_, floats_, unknown = [], [], []
    for name in sorted(registry.list_ops()):
        if "cpu" not in registry.get(name).compute:
            continue
        params = FLOAT_ONLY.get(name, {})
        if name in SPECS and not params:
            ints_.append(name)
            continue
        try:
            (ints_ if _takes_integers(name, params) else floats_).append(name)
        except Exception as e:      # noqa: BLE001 -- any failure: it needs a spec
            unknown.append(f"{name}: {e}")
    return ints_, floats_, unknown


INT_OPS, FLOAT_OPS, UNKNOWN_OPS = classify()


# --- references ----------------------------------------------------------------------------
def _kernel_of(table, name):
    return next(k for k, (elem, bcast) in table.items() if name in elem + bcast)


def ref_binary(r, name, inputs, params, dtype):
    kernel = "add" if name == "_grad_add" else _kernel_of(elemwise.BINARY, name)
    return r.binary(kernel, inputs[0], inputs[1], dtype)


def ref_scalar(r, name, inputs, params, dtype):
    kernel, reflected, _ = elemwise.SCALAR[name]
    s = np.array(r.to_int(float(params["scalar"]), dtype), dtype)
    return r.binary(kernel, *((s, inputs[0]) if reflected else (inputs[0], s)), dtype)


def ref_unary(r, name, inputs, params, dtype):
    return r.unary(elemwise.UNARY[name][0], inputs[0], dtype)


def ref_square_sum(r, name, inputs, params, dtype):
    """_square_sum over every axis: each square wraps, then the sum does."""
    vals = [r.wrap(int(v) * int(v), dtype) for v in inputs[0].reshape(-1).tolist()]
    return np.array([r.wrap(sum(vals), dtype)], dtype)


def ref_reduce(r, name, inputs, params, dtype):
    x = inputs[0]
    vals = [int(v) for v in x.reshape(-1).tolist()]
    if name in ("sum", "nansum"):
        out = sum(vals)
    elif name in ("prod", "nanprod"):
        out = math.prod(vals)
    elif name == "mean":        # an int64 sum, truncated by the count
        out = r.div(r.wrap(sum(vals), "int64"), len(vals))
    elif name in ("max", "min"):
        out = max(vals) if name == "max" else min(vals)
    else:
        return None             # norm, a float result: test_int_arith.py's norm test
    return np.array([r.wrap(out, dtype)], dtype)


def ref_add_n(r, name, inputs, params, dtype):
    return np.array([r.wrap(sum(int(v) for v in col), dtype)
                     for col in zip(*(a.tolist() for a in inputs))], dtype)


def ref_cast(r, name, inputs, params, dtype):
    x = inputs[0]
    if x.dtype.kind == "f":
        return np.array([r.to_int(v, dtype) for v in x.astype(np.float64).tolist()], dtype)
    return np.array([r.wrap(v, dtype) for v in x.tolist()], dtype)


def ref_clip(r, name, inputs, params, dtype):
    lo, hi = (r.to_int(float(params[k]), dtype) for k in ("a_min", "a_max"))
    return np.array([lo if v < lo else hi if v > hi else v for v in inputs[0].tolist()], dtype)


def ref_full(r, name, inputs, params, dtype):
    value = {"_zeros": 0.0, "_ones": 1.0}.get(name, params.get("value"))
    return np.full(params["shape"], r.to_int(float(value), dtype), dtype)


def ref_arange(r, name, inputs, params, dtype):
    start, step = params["start"], params["step"]
    n = math.ceil((params["stop"] - start) / step)
    return np.array([r.to_int(start + i * step, dtype) for i in range(n)], dtype)


def index_of(r, v):
    """An index as the kernels read it: a C cast to int64 by the rule."""
    return r.to_int(v, "int64") if isinstance(v, float) else int(v)


def ref_take(r, name, inputs, params, dtype):
    a, idx = inputs
    n, rows = a.shape[0], [index_of(r, v) for v in idx.tolist()]
    if params["mode"] == "raise":
        return None if any(not 0 <= j < n for j in rows) else a[rows]
    return a[[j % n if params["mode"] == "wrap" else min(max(j, 0), n - 1) for j in rows]]


def ref_one_hot(r, name, inputs, params, dtype):
    on, off = (r.to_int(float(params[k]), dtype) for k in ("on_value", "off_value"))
    depth = params["depth"]
    rows = [index_of(r, v) for v in inputs[0].tolist()]
    return np.array([[on if i == j else off for i in range(depth)] for j in rows], dtype)


def ref_where(r, name, inputs, params, dtype):
    return np.where(inputs[0] != 0, inputs[1], inputs[2])


def ref_slice_assign_scalar(r, name, inputs, params, dtype):
    out = inputs[0].copy()
    out[0] = r.to_int(float(params["scalar"]), dtype)
    return out


def ref_gather_nd(r, name, inputs, params, dtype):
    data, idx = inputs
    rows = [index_of(r, v) for v in idx.reshape(-1).tolist()]
    rows = [j + data.shape[0] if j < 0 else j for j in rows]
    return None if any(not 0 <= j < data.shape[0] for j in rows) else data[rows]


def ref_sort(r, name, inputs, params, dtype):
    """sort, argsort (ascending) and topk (its defaults: the index of the
    largest, the first of ties): stable orders of 1-d integers."""
    x = inputs[0]
    if name == "topk":
        return np.array([int(np.argmax(x))], np.float32)
    order = np.argsort(x, kind="stable")
    return x[order] if name == "sort" else order.astype(np.float32)


def ref_pick(r, name, inputs, params, dtype):
    """pick along the last axis, batch_take (clip) and fill_element_0index."""
    a = inputs[0]
    n = a.shape[1]
    cols = [index_of(r, v) for v in inputs[-1].tolist()]
    if name == "fill_element_0index":
        out = a.copy()
        for i, j in enumerate(cols):
            if 0 <= j < n:
                out[i, j] = inputs[1][i]
        return out
    wrap = params.get("mode") == "wrap"
    cols = [j % n if wrap else min(max(j, 0), n - 1) for j in cols]
    return a[np.arange(a.shape[0]), cols]


def ref_shape_array(r, name, inputs, params, dtype):
    x = inputs[0]
    return np.array(x.shape if name == "shape_array" else [x.size], np.int64)


def ref_eye(r, name, inputs, params, dtype):
    return np.eye(params["N"], params["M"] or params["N"], params["k"], dtype)


def ref_linspace(r, name, inputs, params, dtype):
    start, stop, num = float(params["start"]), float(params["stop"]), params["num"]
    div = (num - 1 if num > 1 else 0) if params["endpoint"] else num
    step = (stop - start) / div if div else 0.0
    return np.array([r.to_int(start + i * step, dtype) for i in range(num)], dtype)


def ref_diag(r, name, inputs, params, dtype):
    x, k = inputs[0], params["k"]
    if x.ndim == 2 and not -x.shape[0] <= k <= x.shape[1]:
        return None
    return np.diag(x, k)


def _c_divmod(v, d):
    """C's truncating division and remainder of Python ints."""
    q = abs(v) // d * (1 if v >= 0 else -1)
    return q, v - q * d


def ref_ravel(r, name, inputs, params, dtype):
    if name == "_ravel_multi_index":
        rows, cols = inputs[0].tolist()
        return np.array([r.wrap(r.wrap(a * 4, "int64") + b, dtype) for a, b in zip(rows, cols)],
                        dtype)
    out = [_c_divmod(v, 4) for v in inputs[0].tolist()]
    return np.array([[q for q, _ in out], [m for _, m in out]], dtype)


def ref_histogram(r, name, inputs, params, dtype):
    """MXNet's rule (histogram_cpu.h): a first guess, corrected once by the
    edges converted to the dtype."""
    cnt, (lo, hi) = params["bin_cnt"], params["range"]
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    if not hi - lo > 0:
        return None                          # the op refuses the range
    e = [r.to_int((lo * (cnt - i) + hi * i) / cnt, dtype) for i in range(cnt + 1)]
    counts = np.zeros(cnt, np.int64)
    for x in inputs[0].tolist():
        if not lo <= float(x) <= hi:         # the kernel compares in double
            continue
        t = min(int((float(x) - lo) * cnt / (hi - lo)), cnt - 1)
        t -= x < e[t]
        t += t < cnt - 1 and x >= e[t + 1]
        if 0 <= t < cnt:
            counts[t] += 1
    return counts


def ref_quadratic(r, name, inputs, params, dtype):
    """float32 arithmetic (MXNet's for integers), then the conversion rule."""
    f = np.float32
    a, b = f(params.get("a", 0.0)), f(params.get("b", 0.0))
    with np.errstate(over="ignore", invalid="ignore"):
        if name == "_contrib_quadratic":
            vals = [f(x) * (a * f(x) + b) + f(params.get("c", 0.0)) for x in inputs[0].tolist()]
        else:
            vals = [f(g) * (f(2) * a * f(x) + b) for g, x in zip(*(i.tolist() for i in inputs))]
    return np.array([r.to_int(v, dtype) for v in vals], dtype)


def ref_div_sqrt_dim(r, name, inputs, params, dtype):
    x = inputs[0]
    s = int(np.sqrt(np.float32(x.shape[-1])))
    return np.array([r.wrap(r.div(v, s), dtype) for v in x.tolist()], dtype)


def ref_allclose(r, name, inputs, params, dtype):
    atol, rtol = float(np.float32(params.get("atol", 1e-8))), float(np.float32(1e-5))
    close = all(x == y or abs(float(x) - float(y)) <= atol + rtol * abs(float(y))
                for x, y in zip(*(i.tolist() for i in inputs)))
    return np.array(int(close), np.uint8)


def ref_index_copy(r, name, inputs, params, dtype):
    old, idx, new = inputs
    rows = [index_of(r, v) for v in idx.tolist()]
    if any(not 0 <= j < old.shape[0] for j in rows):
        return None
    out = old.copy()
    out[rows] = new
    return out


REFERENCES = {
    **{n: ref_binary for _, (elem, bcast) in elemwise.BINARY.items() for n in elem[:1] + bcast[:1]},
    "_grad_add": ref_binary,
    **{n: ref_scalar for n in elemwise.SCALAR},
    **{n: ref_unary for n, (k, *_) in elemwise.UNARY.items()
       if k not in _elemwise_cpu.float_only_unary()},
    **{n: ref_reduce for n in ("sum", "nansum", "prod", "nanprod", "mean", "max", "min", "norm")},
    "add_n": ref_add_n, "Cast": ref_cast, "_backward_Cast": ref_cast, "clip": ref_clip,
    "_full": ref_full, "_zeros": ref_full, "_ones": ref_full, "_arange": ref_arange,
    "take": ref_take, "one_hot": ref_one_hot, "where": ref_where,
    "_slice_assign_scalar": ref_slice_assign_scalar, "gather_nd": ref_gather_nd,
    "shape_array": ref_shape_array, "size_array": ref_shape_array,
    "sort": ref_sort, "argsort": ref_sort, "topk": ref_sort,
    "pick": ref_pick, "batch_take": ref_pick, "fill_element_0index": ref_pick,
    "_eye": ref_eye, "_linspace": ref_linspace, "diag": ref_diag,
    "_ravel_multi_index": ref_ravel, "_unravel_index": ref_ravel, "_histogram": ref_histogram,
    "_contrib_index_copy": ref_index_copy, "_contrib_quadratic": ref_quadratic,
    "_contrib_backward_quadratic": ref_quadratic, "_contrib_div_sqrt_dim": ref_div_sqrt_dim,
    "_contrib_allclose": ref_allclose, "_square_sum": ref_square_sum,
}
# Operators that only move, copy, fill or sum elements of their integer inputs
# (no conversion, no arithmetic beyond req 'add' and wrapping sums): held to
# "never dies" and "req 'add' wraps".
MOVES = {
    "BlockGrad", "Concat", "Flatten", "MakeLoss", "make_loss", "Reshape", "_CrossDeviceCopy",
    "_backward_Concat", "_backward_gather_nd", "_backward_take", "_broadcast_reduce_like",
    "_collapse_sum_like", "_scatter_set_nd", "_shuffle", "broadcast_like", "ones_like",
    "reshape_like", "transpose", "zeros_like", "scatter_nd", "Embedding",
    "_contrib_SparseEmbedding", "_slice_assign",
    "_backward_slice", "_backward_slice_axis", "slice", "slice_axis", "broadcast_to",
    "expand_dims", "SliceChannel", "_random_randint", "_backward_topk", "_backward_pick",
    "SwapAxis", "broadcast_axis", "_backward_broadcast_axis", "depth_to_space",
    "space_to_depth", "repeat", "_backward_repeat", "tile", "_backward_tile", "reverse",
    "slice_like", "_backward_slice_like", "squeeze", "stack", "_split_v2", "SequenceMask",
    "SequenceReverse", "SequenceLast", "_backward_SequenceLast", "_contrib_arange_like",
    "_backward_diag", "_contrib_backward_index_copy", "_contrib_index_array",
    "cast_storage", "_sparse_retain",
}


def test_every_operator_is_classified():
    """A new operator fails here until it is fuzzed (a spec, or defaults that
    run) or shown float-only, and until it has a reference or is a move."""
    assert not UNKNOWN_OPS, "give these a Spec or a FLOAT_ONLY entry: " + "; ".join(UNKNOWN_OPS)
    for name in FLOAT_ONLY:
        assert name in FLOAT_OPS, f"{name} takes integers: give it a Spec instead"
    missing = sorted(set(INT_OPS) - set(REFERENCES) - MOVES)
    assert not missing, f"give these a reference or list them in MOVES: {missing}"
    assert len(INT_OPS) > 100


# --- the property ----------------------------------------------------------------------------
def _assert_equal(got, want, name):
    if want is not None:
        np.testing.assert_array_equal(got, np.asarray(want).reshape(got.shape), err_msg=name)


# Every example runs every integer dtype (none is left to a draw).  No
# shrinking: a call that kills the worker costs a new worker process per
# shrink step, and the edge values every example starts with are readable.
@pytest.mark.parametrize("name", INT_OPS)
@settings(max_examples=3, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(data=st.data())
def test_integer_operator_on_edge_values(kernel_worker, int_rules, name, data):
    spec = SPECS.get(name, Spec())
    make = spec.inputs or same_shape(_input_count(registry.get(name), {}))
    for dtype in ["int32", "int64"] if name == "_random_randint" else INT_DTYPES:
        params = spec.params(data.draw, dtype)
        inputs = make(data.draw, dtype, params)
        check_call(kernel_worker, int_rules, name, spec, dtype, inputs, params, data.draw)


def check_call(worker, rules, name, spec, dtype, inputs, params, draw):
    """One call against the three properties (see the module's docstring)."""
    status, got = worker.call(name, inputs, **params)
    if status == "error":
        assert spec.errors and spec.errors in got, got
        return
    ref = REFERENCES.get(name)
    _assert_equal(got[0], ref and ref(rules, name, inputs, params, dtype), f"{name} {params}")
    if not spec.add_is_sum or not all(g.dtype.kind in "iu" for g in got):
        return                       # float outputs: req 'add' rounds once, not twice
    base = [ints(draw, g.dtype.name, g.shape) for g in got]
    status, added = worker.call(name, inputs, req="add", out=base, **params)
    if status == "error":
        assert "req 'add'" in added, added
        return
    for a, b, g in zip(added, base, got):
        np.testing.assert_array_equal(a, b + g, err_msg=f"{name}, req 'add'")   # NumPy wraps
