"""Partial shape and type inference of the elementwise operators, with
MXNet 1.x's rules: ElemwiseShape for unary, scalar and same-shape binary
operators, Cast and the optimizer updates (every input and the output share
one shape, inferred in both directions: an unknown operand takes the known
one's, the inputs take the output's); BinaryBroadcastShape for broadcast_*
(forward: an output dimension is unknown where an operand's is); and the
type rules of the operators whose inputs do not share one dtype (Cast,
one_hot, where, take, gather_nd, scatter_nd).
"""
from mx_ops import elemwise, optimizer
from mx_ops.partial_infer import (same_shape, same_type, set_infer_shape_partial,
                                  set_infer_type_partial)
from mx_ops.registry import ShapeError


def _broadcast(params, ins, outs):
    """BinaryBroadcastShape: NumPy's broadcast where both dimensions are
    known, unknown where either is; forward only."""
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return ins, outs
    out = []
    for i in range(1, max(len(lhs), len(rhs)) + 1):
        a = lhs[-i] if i <= len(lhs) else 1
        b = rhs[-i] if i <= len(rhs) else 1
        if a and b and a != b and a != 1 and b != 1:
            raise ShapeError(f"{ins.op.name}: argument 'rhs' has shape {rhs}, which does not "
                             f"broadcast with 'lhs' {lhs}")
        out.append(0 if not (a and b) else a if b == 1 else b)
    outs.assign(0, tuple(reversed(out)), why=f"'lhs' {lhs} broadcast with 'rhs' {rhs}")
    return ins, outs


def _param_dtype(params, ins, outs):
    """Cast, one_hot: the output's dtype is the 'dtype' parameter; the
    input's is the caller's (MXNet leaves it to be known)."""
    outs.assign(0, params["dtype"], why=f"argument 'dtype' is {params['dtype']}")
    return ins, outs


_SAME_SHAPE = (list(elemwise.UNARY) + list(elemwise.SCALAR)
               + [names[0] for names, _ in elemwise.BINARY.values()]
               + list(optimizer.KINDS) + ["Cast", "zeros_like", "ones_like"])

for _name in _SAME_SHAPE:
    set_infer_shape_partial(_name, same_shape())
for _, (_, _bcast) in elemwise.BINARY.items():
    set_infer_shape_partial(_bcast[0], _broadcast)

set_infer_type_partial("Cast", _param_dtype)
set_infer_type_partial("one_hot", _param_dtype)
# x, y and the output share a dtype; the condition has its own.
set_infer_type_partial("where", same_type(inputs=(1, 2)))
# The data and the output share a dtype; the indices have their own (MXNet
# requires them known rather than guessing).
for _name in ("take", "gather_nd", "scatter_nd"):
    set_infer_type_partial(_name, same_type(inputs=(0,)))
