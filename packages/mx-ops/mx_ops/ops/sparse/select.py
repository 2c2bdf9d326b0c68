"""Storage rules and sparse kernels of slice, where, zeros_like and clip,
as MXNet 1.9.1 dispatches them (checked against MXNet in mx-ndarray's
tests/data/sparse/sparse_ops_mxnet191.json):

- slice of a csr (step 1) -> csr, rows and columns; of a row_sparse falls
  back (slice_axis always falls back: MXNet has no sparse slice_axis).
- where with a csr condition and dense x, y -> dense; else falls back.
- zeros_like keeps the storage type (nothing stored); clip keeps it when
  a_min <= 0 <= a_max and is refused otherwise, as in MXNet.
"""
from mx_ops.core.registry import computes, gpu_compute
from mx_ops.core.stype import (DISPATCH_COMPUTE, DISPATCH_COMPUTE_EX, DISPATCH_FALLBACK,
                               set_storage_inference)
from mx_ops.ops.shape.shape import _slices
from mx_ops.ops.sparse import _sparse_ops_cpu
from mx_ops.ops.sparse.sparse_ops import on_values

_GPU = "mx_ops.ops.sparse._sparse_ops_gpu"


def _slice_rule(params, in_stypes, device):
    del device
    if in_stypes[0] == "default":
        return ["default"], DISPATCH_COMPUTE
    steps = params["step"] or ()
    if in_stypes[0] == "csr" and all(s in (None, 1) for s in steps):
        return ["csr"], DISPATCH_COMPUTE_EX
    return ["default"], DISPATCH_FALLBACK


def slice_bounds(params, shape):
    """(r0, r1, c0, c1) of a csr slice (Python slice semantics, as the
    dense slice's shape inference)."""
    (r0, r1, _), (c0, c1, _) = _slices(params, shape)
    return r0, max(r0, r1), c0, max(c0, c1)


def _slice_cpu(params, inputs, outputs, reqs):
    del reqs
    r0, r1, c0, c1 = slice_bounds(params, inputs[0].shape)
    _sparse_ops_cpu.csr_slice(inputs[0], r0, r1, c0, c1, outputs[0], "slice")


def _where_rule(params, in_stypes, device):
    del params, device
    if all(s == "default" for s in in_stypes):
        return ["default"], DISPATCH_COMPUTE
    if in_stypes == ["csr", "default", "default"]:
        return ["default"], DISPATCH_COMPUTE_EX
    return ["default"], DISPATCH_FALLBACK


def _where_cpu(params, inputs, outputs, reqs):
    del params, reqs
    cond, x, y = inputs
    _sparse_ops_cpu.csr_where(cond, x, y, outputs[0], "where")


def _keep_stype(params, in_stypes, device):
    del params, device
    if in_stypes[0] == "default":
        return ["default"], DISPATCH_COMPUTE
    return [in_stypes[0]], DISPATCH_COMPUTE_EX


def _zeros_like(params, inputs, outputs, reqs):
    del params, inputs, reqs
    outputs[0].set_zero()


def _clip_rule(params, in_stypes, device):
    if in_stypes[0] != "default" and not params["a_min"] <= 0 <= params["a_max"]:
        # MXNet: "Operator not implemented" (clip would store every zero).
        raise ValueError(f"clip: a {in_stypes[0]} input needs a_min <= 0 <= a_max to stay "
                         f"sparse, got a_min={params['a_min']}, a_max={params['a_max']}; "
                         f"MXNet has no kernel for this (cast to dense with "
                         f"tostype('default') first)")
    return _keep_stype(params, in_stypes, device)


set_storage_inference("slice", _slice_rule, computes(_slice_cpu,
                                                     gpu_compute(_GPU, "slice_gpu")))
set_storage_inference("where", _where_rule, computes(_where_cpu,
                                                     gpu_compute(_GPU, "where_gpu")))
set_storage_inference("zeros_like", _keep_stype, {"cpu": _zeros_like, "gpu": _zeros_like})
_clip = on_values("clip")
set_storage_inference("clip", _clip_rule, {"cpu": _clip, "gpu": _clip})
