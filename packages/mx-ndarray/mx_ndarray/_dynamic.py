"""Operators whose output shapes depend on their inputs' values
(``OpDef.dynamic_shape``: MXNet's boolean_mask), computed at the NDArray
level.

Such an operator cannot allocate its outputs before it runs, so it has no
kernel of its own: its implementation here reads the values that decide
the shape (waiting for them, as MXNet's kernel does) and computes the
result with operators whose shapes are known from then on.  Those calls
take the one call path, so autograd records them and their gradients
flow.  The generated ``mx.nd`` functions of these operators call
``call``; an executor whose graph holds one runs its nodes through
``compute`` (mx_graph.dynamic_run).
"""
import numpy as np

from mx_engine.base import MXNetError
from mx_ops.core import registry
from mx_ndarray._ndarray import NDArray, invoke
from mx_ndarray.ndarray import array, zeros

__all__ = ["call", "compute"]


def _kept_rows(index, ctx):
    """The positions of ``index``'s nonzero values, an int64 NDArray on ``ctx``."""
    return array(np.flatnonzero(index.asnumpy()), ctx=ctx, dtype="int64")


def _boolean_mask(params, data, index):
    return [invoke("take", [data, _kept_rows(index, data.context)], axis=0)]


def _boolean_mask_backward(params, ograd, data, index):
    rows = _kept_rows(index, data.context)
    grad = zeros(data.shape, ctx=data.context, dtype=data.dtype)
    if rows.shape[0]:
        grad = invoke("_contrib_index_copy", [grad, rows, ograd])
    return [grad, zeros(index.shape, ctx=index.context, dtype=index.dtype)]


_IMPLEMENTATIONS = {
    "_contrib_boolean_mask": _boolean_mask,
    "_backward_contrib_boolean_mask": _boolean_mask_backward,
}


def compute(op, params, inputs):
    """All outputs of dynamic-shape operator ``op`` (an OpDef) with parsed
    ``params`` on NDArray ``inputs``, after its shape checks."""
    for i, a in enumerate(inputs):
        if not isinstance(a, NDArray):
            raise TypeError(f"{op.name}: input {i} must be an NDArray, got {type(a).__name__}")
    op.infer_shape(params, [a.shape for a in inputs])      # raises ShapeError, naming it
    return _IMPLEMENTATIONS[op.name](params, *inputs)


def call(op_name, inputs, out, kwargs):
    """What the generated mx.nd function of dynamic-shape ``op_name`` does:
    the visible output(s), written into ``out`` when it is given."""
    op = registry.get(op_name)
    kwargs.pop("ctx", None)           # the inputs decide where it runs
    inputs = list(inputs)
    params = op.parse_call(kwargs, len(inputs))
    outputs = compute(op, params, inputs)[:op.visible_output_count(params)]
    if out is not None:
        outs = out if isinstance(out, (list, tuple)) else [out]
        if len(outs) != len(outputs):
            raise ValueError(f"{op_name}: 'out' must hold {len(outputs)} NDArray(s), got "
                             f"{len(outs)}")
        for dst, src in zip(outs, outputs):
            if dst.shape != src.shape:
                raise MXNetError(f"{op_name}: 'out' has shape {dst.shape}, the result "
                                 f"{src.shape}")
            src.copyto(dst)
        return out
    return outputs[0] if len(outputs) == 1 else outputs
