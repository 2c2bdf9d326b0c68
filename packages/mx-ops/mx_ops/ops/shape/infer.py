"""Partial shape inference of the operators that rearrange arrays, with
MXNet 1.x's rules (src/operator/tensor/matrix_op-inl.h):

- Flatten: forward, unknown dimensions carrying through.
- Reshape: forward, then the input's one unknown dimension from a known
  output (ReverseReshapeInferShape).
- transpose: both directions.
- shape_array: (rank,) once the rank is known; size_array: (1,).

0 in a shape is a dimension not known yet (mx_ops.core.partial_infer).
"""
import math

from mx_ops.core.partial_infer import known, set_infer_shape_partial, set_infer_type_partial
from mx_ops.core.registry import ShapeError
from mx_ops.ops.shape import shape


def _flatten(params, ins, outs):
    """FlattenShape: (d0, d1 * ... * dn), unknown where a factor is."""
    data = ins[0]
    if data is not None:
        outs.assign(0, (data[0], math.prod(data[1:])) if data else (1, 1),
                    why=f"'data' {data} flattened")
    return ins, outs


def _reshape(params, ins, outs):
    """ReshapeShape: the output from the data; then the data's one unknown
    dimension from a known output, the sizes being equal."""
    src, target = ins[0], params["shape"]
    if src is not None and target:
        out = shape.reshape_shape(src, target, params["reverse"], partial=True)
        outs.assign(0, out, why=f"'data' {src} reshaped to {tuple(target)}")
    src, out = ins[0], outs[0]
    if src is not None and known(out) and src.count(0) == 1:
        size, rest = math.prod(out), math.prod(d for d in src if d)
        if size % rest:
            raise ShapeError(f"Reshape: output 'output' has shape {out} ({size} elements), "
                             f"which 'data' {src} cannot hold")
        ins.assign(0, tuple(d or size // rest for d in src),
                   why=f"the size of the output {out}")
    return ins, outs


def _transpose(params, ins, outs):
    """TransposeShape: the output's axes from the data's, and back."""
    data, out = ins[0], outs[0]
    if data is None and out is None:
        return ins, outs
    axes = shape._axes(params, len(data if data is not None else out))
    if data is not None:
        outs.assign(0, tuple(data[a] for a in axes), why=f"'data' {data} permuted by {axes}")
    out = outs[0]
    back = [0] * len(out)
    for i, a in enumerate(axes):
        back[a] = out[i]
    ins.assign(0, tuple(back), why=f"the output {out} permuted back by {axes}")
    return ins, outs


def _shape_array(params, ins, outs):
    """shape_array: (the data's rank,) once the rank is known, whatever its
    dimensions."""
    if ins[0] is not None:
        outs.assign(0, (len(ins[0]),), why=f"the rank of 'data' {ins[0]}")
    return ins, outs


def _size_array(params, ins, outs):
    """size_array: (1,), whatever the data."""
    outs.assign(0, (1,))
    return ins, outs


def _int64(params, ins, outs):
    """shape_array, size_array: an int64 output; the data's dtype is the
    caller's (the default rule would guess int64 for it)."""
    outs.assign(0, "int64")
    return ins, outs


for _name, _rule in (("Flatten", _flatten), ("Reshape", _reshape), ("transpose", _transpose),
                     ("shape_array", _shape_array), ("size_array", _size_array)):
    set_infer_shape_partial(_name, _rule)
for _name in ("shape_array", "size_array"):
    set_infer_type_partial(_name, _int64)
