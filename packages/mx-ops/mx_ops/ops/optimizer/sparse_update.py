"""The optimizer updates on row_sparse gradients (MXNet 1.9.1's
FInferStorageType and FComputeEx of sgd_update, sgd_mom_update,
adam_update and ftrl_update) and _sparse_adagrad_update
(``mx.nd.sparse.adagrad_update``), which has no dense form.

Storage rules, as MXNet's:
- sgd_update: a row_sparse grad with a dense or row_sparse weight.
- sgd_mom_update, adam_update: likewise, the states of the weight's storage.
- ftrl_update: everything row_sparse (a dense weight falls back to dense).
- _sparse_adagrad_update: a row_sparse grad, weight and history of one
  storage, wd = 0; anything else is refused, as MXNet refuses it.
A row_sparse weight must store every row (MXNet's CheckAllRowsPresent),
and so must a row_sparse state, unless it stores none (all zeros: it gets
every row).  Other combinations fall back to the dense update.

lazy_update=True (and FTRL, AdaGrad always) changes only the gradient's
rows: weight decay, momentum, the moments and clipping apply to those
alone.  lazy_update=False gives every row the standard step with a zero
gradient where the gradient stores none: the dense update's result.  The
weight and states change in place (out=weight); another out gets the
updated weight and leaves the weight alone, as a dense update does."""
import logging

import numpy as np

from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param
from mx_ops.core.dtypes import DTYPE_FLAGS
from mx_ops.core.partial_infer import same_shape, set_infer_shape_partial
from mx_ops.core.registry import OpDef, computes, gpu_compute, register
from mx_ops.core.stype import (DISPATCH_COMPUTE, DISPATCH_COMPUTE_EX, DISPATCH_FALLBACK,
                               set_storage_inference)
from mx_ops.ops.optimizer import _optimizer_cpu
from mx_ops.ops.optimizer.optimizer import _COMMON, _same_shapes, values
from mx_ops.ops.sparse._sparse_cpu import check_rsp

_OPTIMIZER_GPU = "mx_ops.ops.optimizer._optimizer_gpu"
ADAGRAD = "_sparse_adagrad_update"
# Codes of optimizer_cpu.h (kAdagrad) and the state arguments of each op.
RSP_KINDS = {"sgd_update": 0, "sgd_mom_update": 1, "adam_update": 2, "ftrl_update": 4,
             ADAGRAD: 5}
STATES = {"sgd_update": (), "sgd_mom_update": ("mom",), "adam_update": ("mean", "var"),
          "ftrl_update": ("z", "n"), ADAGRAD: ("history",)}
_LAZY_TEXT = ("Optimizer with lazy_update = True detected. Be aware that lazy update with "
              "row_sparse gradient is different from standard update, and may lead to "
              "different empirical results. See "
              "https://mxnet.apache.org/api/python/optimization/optimization.html for more "
              "details.")
_log = logging.getLogger("mx.optimizer")
_warned = []


# --- _sparse_adagrad_update ---------------------------------------------------------------
def _no_dense_adagrad(params, inputs, outputs, reqs):
    raise ValueError(f"{ADAGRAD}: 'grad' must be row_sparse")


register(OpDef(
    ADAGRAD, arguments=("weight", "grad", "history"),
    params={"lr": _COMMON["lr"],
            "epsilon": Param("float", 1e-07, doc="epsilon"),
            "wd": Param("float", 0.0, doc="weight decay"),
            "rescale_grad": _COMMON["rescale_grad"],
            "clip_gradient": _COMMON["clip_gradient"]},
    input_docs={"weight": "Weight", "grad": "Gradient",
                "history": "History: the sum of squared gradients, updated in place."},
    infer_shape=_same_shapes(ADAGRAD, ("weight", "grad", "history")),
    infer_type=same_float_types(ADAGRAD, lambda p: ["weight", "grad", "history"]),
    compute=computes(_no_dense_adagrad, _no_dense_adagrad), inplace=((0, 0),),
    mutate_inputs=(2,), differentiable=False,
    doc="Update function for AdaGrad optimizer (row_sparse gradients only): rescaled_grad = "
        "clip(grad * rescale_grad, clip_gradient); history = history + "
        "square(rescaled_grad); w = w - learning_rate * rescaled_grad / sqrt(history + "
        "epsilon).  Only the rows of the gradient change.  Non-zero weight decay is not "
        "supported."))
set_infer_shape_partial(ADAGRAD, same_shape())


def rsp_values(op, params):
    """The seven OptParam numbers (float32-rounded, as MXNet's fields)."""
    if op != ADAGRAD:
        return values(op, params)
    raw = [params["lr"], params["wd"], params["rescale_grad"], params["clip_gradient"],
           params["epsilon"], 0.0, 0.0]
    return [float(np.float32(v)) for v in raw]


# --- storage rules -------------------------------------------------------------------------
def _warn_lazy(params):
    """MXNet's LogLazyUpdate: once, when a lazy update has weight decay."""
    if params.get("lazy_update") and params["wd"] != 0 and not _warned:
        _warned.append(True)
        _log.warning(_LAZY_TEXT)


def _storage_rule(op):
    def infer(params, in_stypes, device):
        del device
        weight, grad, states = in_stypes[0], in_stypes[1], in_stypes[2:]
        if op == "ftrl_update":
            ok = all(s == "row_sparse" for s in in_stypes)
        else:
            ok = (grad == "row_sparse" and weight in ("default", "row_sparse")
                  and all(s == weight for s in states))
        if ok and op == ADAGRAD and params["wd"] != 0:
            raise ValueError(f"{ADAGRAD}: wd must be 0 (MXNet's sparse AdaGrad has no weight "
                             f"decay), got wd={params['wd']}")
        if ok:
            _warn_lazy(params)
            return [weight], DISPATCH_COMPUTE_EX
        if op == ADAGRAD:
            raise ValueError(
                f"{ADAGRAD}: needs a row_sparse 'grad' with 'weight' and 'history' of one "
                f"storage type (default or row_sparse); got weight {weight}, grad {grad}, "
                f"history {states[0]}")
        if all(s == "default" for s in in_stypes):
            return ["default"], DISPATCH_COMPUTE
        return ["default"], DISPATCH_FALLBACK
    return infer


# --- the kernels ---------------------------------------------------------------------------
def _is_sparse(x):
    return hasattr(x, "stype")


def check_grad(op, grad, xp=np):
    """Raises ValueError unless row_sparse ``grad``'s stored values fit its
    indices and its indices are sorted, unique and in range."""
    n = grad.indices.shape[0]
    want = (n,) + tuple(grad.shape[1:])
    if tuple(grad.data.shape) != want:
        raise ValueError(f"{op}: argument 'grad' (row_sparse) stores values of shape "
                         f"{tuple(grad.data.shape)} for {n} indices; expected {want}")
    # On a GPU the indices come over (nnz int64s) for the same nogil check.
    host = grad.indices if xp is np else xp.asnumpy(grad.indices)
    code, pos = check_rsp(host, grad.shape[0])
    if code == 5:
        raise ValueError(f"{op}: argument 'grad' (row_sparse) has index {int(host[pos])} at "
                         f"position {pos}, outside [0, {grad.shape[0]})")
    if code:
        raise ValueError(f"{op}: argument 'grad' (row_sparse) has indices not sorted ascending "
                         f"and unique at position {pos} ({int(host[pos - 1])} then "
                         f"{int(host[pos])}); sort them (and sum duplicates) first")


def _address(a):
    """The first byte of NumPy or CuPy array ``a``."""
    return a.__array_interface__["data"][0] if isinstance(a, np.ndarray) else a.data.ptr


def _table(op, name, x):
    """The dense (rows, ...) values of argument ``name``: a dense array, or
    a row_sparse one's data when it stores every row.  A row_sparse state
    storing no row is all zeros: it gets every row, zero (MXNet's
    FillDnsZerosRspImpl), so an optimizer's fresh sparse states work."""
    if not _is_sparse(x):
        return x
    rows = x.shape[0] if x.shape else 1
    if name != "weight" and x.indices.shape[0] == 0 and rows:
        x.alloc_rsp(rows)
        x.data[...] = 0
        x.indices[...] = x.xp.arange(rows, dtype=x.indices.dtype)
    if x.indices.shape[0] != rows:
        raise ValueError(f"{op}: a row_sparse '{name}' must store every row (MXNet updates "
                         f"row_sparse weights and states only with all rows present); it "
                         f"stores {x.indices.shape[0]} of {x.shape[0]}")
    return x.data


def _output_table(op, weight, out):
    """The table the update writes: the weight's own when ``out`` is the
    weight, else ``out`` holding a copy of the weight."""
    if _is_sparse(weight):
        if out is weight:
            return weight.data
        xp = out.xp
        out.data = xp.array(weight.data)
        out.indices = xp.array(weight.indices)
        return out.data
    if _address(out) == _address(weight):
        return out
    out[...] = weight
    return out


def prepare(op, inputs, outputs, xp=np):
    """(table, grad data, grad indices, state tables) of one update, checked."""
    weight, grad, states = inputs[0], inputs[1], inputs[2:]
    check_grad(op, grad, xp)
    _table(op, "weight", weight)
    tables = [_table(op, name, s) for name, s in zip(STATES[op], states)]
    table = _output_table(op, weight, outputs[0])
    for name, t in zip(("weight",) + STATES[op], [table] + tables):
        if not t.flags.c_contiguous:
            raise ValueError(f"{op}: '{name}' must be C-contiguous to be updated in place")
    data = xp.ascontiguousarray(grad.data, dtype=table.dtype)
    indices = xp.ascontiguousarray(grad.indices, dtype=np.int64)
    return table, data, indices, tables


def _cpu(op):
    kind = RSP_KINDS[op]

    def run(params, inputs, outputs, reqs):
        del reqs
        table, data, indices, tables = prepare(op, inputs, outputs)
        lazy = params.get("lazy_update", True)
        _optimizer_cpu.rsp_update(kind, rsp_values(op, params), DTYPE_FLAGS[table.dtype.name],
                                  table, data, indices, tables, lazy)
    return run


for _op in RSP_KINDS:
    set_storage_inference(_op, _storage_rule(_op), computes(
        _cpu(_op), gpu_compute(_OPTIMIZER_GPU, "rsp_compute", _op)),
        sparse_from_dense=_op == ADAGRAD)
