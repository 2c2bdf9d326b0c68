"""Partial shape inference of the elementwise operators, with MXNet 1.x's
rules: ElemwiseShape for unary, scalar and same-shape binary operators
(every input and the output share one shape, inferred in both directions:
an unknown operand takes the known one's, the inputs take the output's);
BinaryBroadcastShape for broadcast_* (forward: an output dimension is
unknown where an operand's is).
"""
from mx_ops.core.partial_infer import same_shape, set_infer_shape_partial
from mx_ops.core.registry import ShapeError
from mx_ops.ops.elemwise import elemwise


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


for _name in (list(elemwise.UNARY) + list(elemwise.SCALAR)
              + [names[0] for names, _ in elemwise.BINARY.values()]):
    set_infer_shape_partial(_name, same_shape())
for _, (_, _bcast) in elemwise.BINARY.items():
    set_infer_shape_partial(_bcast[0], _broadcast)
