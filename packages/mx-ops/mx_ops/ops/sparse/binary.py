"""Storage rules and sparse kernels of the binary operators, as MXNet
1.9.1 dispatches them (checked case by case against MXNet in
mx-ndarray/tests/data/sparse/sparse_ops_mxnet191.json):

- elemwise_add/sub: rsp op rsp -> rsp, csr op csr -> csr; csr or rsp with
  dense -> dense by a sparse kernel; rsp with csr falls back.
- elemwise_mul: rsp * rsp, rsp * dense, dense * rsp -> rsp; csr * csr,
  csr * dense, dense * csr -> csr; rsp with csr falls back.
- elemwise_div: rsp / rsp and sparse with dense -> dense by a kernel; csr /
  csr and rsp with csr fall back.
- broadcast_add/sub (plus/minus): csr with dense, either side -> dense;
  broadcast_mul/div: csr (lhs) with a dense row, column or scalar (mul:
  also the same shape) -> csr; the rest with a sparse input falls back.
- add_n (ElementWiseSum): all row_sparse -> row_sparse; else falls back.
"""
from types import SimpleNamespace

import numpy as np

from mx_ops.core.registry import ShapeError, computes, gpu_compute
from mx_ops.core.stype import (DISPATCH_COMPUTE, DISPATCH_COMPUTE_EX, DISPATCH_FALLBACK,
                               set_storage_inference)
from mx_ops.ops.sparse import _sparse_cpu, _sparse_ops_cpu
from mx_ops.ops.sparse.cast_storage import blob_stype

_GPU = "mx_ops.ops.sparse._sparse_ops_gpu"


def _dense(in_stypes):
    return all(s == "default" for s in in_stypes)


# --- storage rules -----------------------------------------------------------------------
def _elemwise_rule(op):
    def infer(params, in_stypes, device):
        del params
        if _dense(in_stypes):
            return ["default"], DISPATCH_COMPUTE
        pair = set(in_stypes)
        if pair == {"row_sparse", "csr"}:
            return ["default"], DISPATCH_FALLBACK
        if len(pair) == 1:                  # both of one sparse kind
            kind = in_stypes[0]
            if op == "div":
                out = "default" if kind == "row_sparse" else None
            else:
                out = kind
            if out is None:
                return ["default"], DISPATCH_FALLBACK
            if kind == "csr" and device != "cpu" and op != "div":
                # csr op csr is CPU code: a GPU falls back, cast back to csr.
                return ["csr"], DISPATCH_FALLBACK
            return [out], DISPATCH_COMPUTE_EX
        kind = (pair - {"default"}).pop()   # one sparse, one dense
        return [kind if op == "mul" else "default"], DISPATCH_COMPUTE_EX
    return infer


def _broadcast_rule(op):
    def infer(params, in_stypes, device):
        del params, device
        if _dense(in_stypes):
            return ["default"], DISPATCH_COMPUTE
        if "row_sparse" in in_stypes or in_stypes == ["csr", "csr"]:
            return ["default"], DISPATCH_FALLBACK
        if op in ("add", "sub"):
            return ["default"], DISPATCH_COMPUTE_EX
        if in_stypes[0] == "csr":
            return ["csr"], DISPATCH_COMPUTE_EX
        return ["default"], DISPATCH_FALLBACK
    return infer


def _add_n_rule(params, in_stypes, device):
    del params, device
    if _dense(in_stypes):
        return ["default"], DISPATCH_COMPUTE
    if all(s == "row_sparse" for s in in_stypes):
        return ["row_sparse"], DISPATCH_COMPUTE_EX
    return ["default"], DISPATCH_FALLBACK


# --- the computes, one body for both devices ----------------------------------------------
def add_dense(k, lhs, rhs, sign, out, api):
    """Dense ``out`` = lhs + sign * rhs, one of them sparse and the other
    dense (broadcast to out's shape): the dense side written, the sparse
    side added onto it by ``k.scatter``."""
    xp = k.xp
    if blob_stype(lhs) != "default":
        if sign > 0:
            out[...] = xp.broadcast_to(xp.asarray(rhs, out.dtype), out.shape)
        else:
            xp.negative(xp.broadcast_to(xp.asarray(rhs, out.dtype), out.shape), out=out)
        k.scatter(lhs, 1, out, api)
    else:
        out[...] = xp.broadcast_to(xp.asarray(lhs, out.dtype), out.shape)
        k.scatter(rhs, sign, out, api)


def _multiply(k, a, b, kinds, out, api):
    if kinds == ("csr", "csr"):
        k.csr_csr_mul(a, b, out, api)
    elif kinds == ("row_sparse", "row_sparse"):
        k.rsp_rsp_mul(a, b, out, api)
    else:                               # sparse * dense, either order: commutes
        sp, dn = (a, b) if kinds[0] != "default" else (b, a)
        if blob_stype(sp) == "csr":
            k.csr_dense_op(sp, dn, "mul", out, api)
        else:
            k.rsp_dense_mul(sp, dn, out, api)


def _divide(k, a, b, out):
    """Dense ``out`` = a / b by the dense operator's own kernel (its integer
    rules included) on the densified operands."""
    from mx_ops.core._invoke import invoke
    out[...] = invoke("elemwise_div", [k.densify(a, out.dtype), k.densify(b, out.dtype)])


def elemwise_compute(op, k):
    """elemwise_<op>'s sparse compute over the kernels ``k`` (CPU or GPU)."""
    api = f"elemwise_{op}"
    sign = -1 if op == "sub" else 1

    def run(params, inputs, outputs, reqs):
        del params, reqs
        a, b = inputs
        out = outputs[0]
        kinds = (blob_stype(a), blob_stype(b))
        if op == "mul":
            _multiply(k, a, b, kinds, out, api)
        elif op == "div":
            _divide(k, a, b, out)
        elif kinds[0] == kinds[1]:
            k.union(a, b, sign, out)
        else:
            add_dense(k, a, b, sign, out, api)
    return run


def check_csr_operand(api, op, lhs_shape, rhs_shape):
    """broadcast_mul/div of a csr by a dense array: the dense side must be a
    row (1, n), a column (m, 1), a scalar (1, 1) or (mul) the same shape."""
    m, n = lhs_shape
    if len(rhs_shape) != 2 or rhs_shape[0] not in (1, m) or rhs_shape[1] not in (1, n):
        raise ShapeError(f"{api}: a csr 'lhs' of shape {tuple(lhs_shape)} needs a dense 'rhs' "
                         f"of shape (1, {n}), ({m}, 1), (1, 1) or {tuple(lhs_shape)}, got "
                         f"{tuple(rhs_shape)}")
    if op == "div" and rhs_shape[0] != 1 and rhs_shape[1] != 1:     # same shape, not a vector
        raise ValueError(f"{api}: please use elemwise_div for division between csr and "
                         f"dense of the same shape {tuple(lhs_shape)} (as MXNet)")


def broadcast_compute(op, k):
    """broadcast_<op>'s sparse compute over the kernels ``k``."""
    api = f"broadcast_{op}"
    sign = -1 if op == "sub" else 1

    def run(params, inputs, outputs, reqs):
        del params, reqs
        a, b = inputs
        if op in ("add", "sub"):
            add_dense(k, a, b, sign, outputs[0], api)
        else:
            check_csr_operand(api, op, a.shape, b.shape)
            k.csr_dense_op(a, b, op, outputs[0], api)
    return run


# --- the CPU kernels ---------------------------------------------------------------------
def _densify(x, dtype):
    """A dense NumPy copy of a SparseBlob (nogil cast kernels) or ``x``."""
    kind = blob_stype(x)
    if kind == "default":
        return np.asarray(x, dtype)
    out = np.empty(x.shape, dtype)
    (_sparse_cpu.csr_to_dense if kind == "csr" else _sparse_cpu.rsp_to_dense)(x, out)
    return out


def _scatter(blob, sign, out, api):
    if blob_stype(blob) == "csr":
        _sparse_ops_cpu.csr_scatter_add(blob, sign, out, api)
    else:
        _sparse_ops_cpu.rsp_scatter_add(blob, sign, out, api)


def _union(a, b, sign, out):
    if blob_stype(a) == "csr":
        _sparse_cpu.csr_union(a, b, sign, out)
    else:
        from mx_ops.ops.sparse.sparse_ops import rsp_union
        rsp_union(a, b, sign, out)


CPU = SimpleNamespace(
    xp=np, densify=_densify, scatter=_scatter, union=_union,
    csr_csr_mul=_sparse_ops_cpu.csr_csr_mul, rsp_rsp_mul=_sparse_ops_cpu.rsp_rsp_mul,
    csr_dense_op=_sparse_ops_cpu.csr_dense_op, rsp_dense_mul=_sparse_ops_cpu.rsp_dense_mul)


def _add_n_cpu(params, inputs, outputs, reqs):
    del params, reqs
    _sparse_ops_cpu.rsp_sum(inputs, outputs[0], "add_n")


# --- registration ------------------------------------------------------------------------
for _op in ("add", "sub", "mul", "div"):
    set_storage_inference(f"elemwise_{_op}", _elemwise_rule(_op), computes(
        elemwise_compute(_op, CPU), gpu_compute(_GPU, "elemwise_gpu", _op)))
for _op in ("add", "sub", "mul", "div"):
    set_storage_inference(f"broadcast_{_op}", _broadcast_rule(_op), computes(
        broadcast_compute(_op, CPU), gpu_compute(_GPU, "broadcast_gpu", _op)))
set_storage_inference("add_n", _add_n_rule, computes(_add_n_cpu, gpu_compute(_GPU, "add_n_gpu")))
