"""Storage rules and sparse kernels of sum, mean and norm, as MXNet 1.9.1
dispatches them (checked against MXNet in mx-ndarray's
tests/data/sparse/sparse_ops_mxnet191.json):

- sum/mean of a csr over axis 0 or 1 (keepdims and exclude off) -> dense,
  by a kernel over the stored values; any other axis, keepdims or a
  row_sparse input falls back to dense.
- norm (ord 2, keepdims off) of a csr over all axes, axis 0 or axis 1, and
  of a row_sparse over all axes -> dense; the rest falls back.
"""
from types import SimpleNamespace

import numpy as np

from mx_ops.core.registry import computes, gpu_compute
from mx_ops.core.stype import (DISPATCH_COMPUTE, DISPATCH_COMPUTE_EX, DISPATCH_FALLBACK,
                               set_storage_inference)
from mx_ops.ops.sparse import _sparse_ops_cpu

_GPU = "mx_ops.ops.sparse._sparse_ops_gpu"


def _one_axis(params):
    """0 or 1 where ``axis`` names exactly that axis of a 2-D input, None
    for every axis, -1 for anything MXNet's csr kernels do not take."""
    axis = params["axis"]
    if axis is None or len(axis) == 0:
        return None
    return axis[0] if len(axis) == 1 and axis[0] in (0, 1) else -1


def _sum_rule(params, in_stypes, device):
    del device
    if in_stypes[0] == "default":
        return ["default"], DISPATCH_COMPUTE
    if in_stypes[0] == "csr" and _one_axis(params) in (0, 1) and not params["keepdims"] \
            and not params["exclude"]:
        return ["default"], DISPATCH_COMPUTE_EX
    return ["default"], DISPATCH_FALLBACK


def _norm_rule(params, in_stypes, device):
    del device
    if in_stypes[0] == "default":
        return ["default"], DISPATCH_COMPUTE
    axis = _one_axis(params)
    ok = params["ord"] == 2 and not params["keepdims"] and (
        axis is None or (in_stypes[0] == "csr" and axis in (0, 1)))
    return ["default"], DISPATCH_COMPUTE_EX if ok else DISPATCH_FALLBACK


def finish(op, sums, src_shape, axis, out, xp):
    """out = the float64 ``sums`` turned into op's result (mean divides by
    the reduced count, norm takes the root), in out's dtype."""
    if op == "mean":
        sums = sums / (src_shape[axis] if axis is not None else int(np.prod(src_shape)))
    elif op == "norm":
        sums = xp.sqrt(sums)
    if out.dtype.kind in "iu":
        sums = xp.trunc(sums)      # MXNet's integer results truncate toward zero
    out.reshape(-1)[...] = sums.astype(out.dtype)


def reduce_compute(op, k):
    """op's sparse compute over ``k`` (CPU or GPU): ``k.xp`` (numpy or
    cupy) and ``k.axis_sums(csr, axis, square, api)``, float64 sums."""
    def run(params, inputs, outputs, reqs):
        del reqs
        src, out = inputs[0], outputs[0]
        axis = _one_axis(params)
        square = op == "norm"
        if axis is None:            # every axis: the stored values alone
            v = src.data.astype(k.xp.float64).reshape(-1)
            sums = k.xp.reshape(v @ v if square else v.sum(), (1,))
        else:
            sums = k.axis_sums(src, axis, square, op)
        finish(op, sums, src.shape, axis, out, k.xp)
    return run


CPU = SimpleNamespace(xp=np, axis_sums=_sparse_ops_cpu.csr_reduce)


for _op, _rule in (("sum", _sum_rule), ("mean", _sum_rule), ("norm", _norm_rule)):
    set_storage_inference(_op, _rule, computes(reduce_compute(_op, CPU),
                                               gpu_compute(_GPU, "reduce_gpu", _op)))
