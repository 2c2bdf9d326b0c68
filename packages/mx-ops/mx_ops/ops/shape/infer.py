"""Partial shape inference of the operators that join, split and rearrange
arrays, with MXNet 1.x's rules (src/operator/nn/concat.cc,
slice_channel-inl.h, tensor/matrix_op-inl.h, tensor/dot-inl.h):

- Concat: every input and the output agree off the joined axis, in both
  directions; the output's joined size is the sum of the inputs' once all
  are known.  An input's joined size is not inferred from the output's.
- SliceChannel: the outputs from the data, and the data back from any
  output.
- Flatten, dot: forward, unknown dimensions carrying through.
- Reshape: forward, then the input's one unknown dimension from a known
  output (ReverseReshapeInferShape).
- transpose: both directions.

0 in a shape is a dimension not known yet (mx_ops.partial_infer).
"""
import math

from mx_ops import join, shape
from mx_ops.partial_infer import known, merge_shape, set_infer_shape_partial
from mx_ops.registry import ShapeError


def _concat(params, ins, outs):
    """ConcatShape, with one difference: an input of unknown rank leaves the
    output's joined size unknown (MXNet counts it as 0 there)."""
    common, total, unknown, source = None, 0, False, None
    slots = [(ins, i) for i in range(len(ins))] + [(outs, 0)]
    for side, i in slots:
        s = side[i]
        if s is None:
            unknown = unknown or side is ins
            continue
        axis = join._axis("Concat", "dim", params["dim"], s, side.describe(i))
        if side is ins:
            total += s[axis]
            unknown = unknown or not s[axis]
        rest = s[:axis] + (0,) + s[axis + 1:]
        try:
            common = merge_shape(common, rest)
        except ValueError:
            raise ShapeError(f"Concat: {side.describe(i)} has shape {s}, which differs from "
                             f"{source} {common} on an axis other than "
                             f"dim={params['dim']}") from None
        source = source or side.describe(i)
    if common is None:
        return ins, outs
    for i in range(len(ins)):
        ins.assign(i, common, why=f"the shapes off axis dim={params['dim']}")
    if not unknown:
        common = common[:axis] + (total,) + common[axis + 1:]
    outs.assign(0, common, why=f"the inputs joined along dim={params['dim']}")
    return ins, outs


def _slice_channel(params, ins, outs):
    """SliceChannel's InferShape: each output is the data with its split
    axis divided by num_outputs (dropped with squeeze_axis); the data comes
    back from an output."""
    data = ins[0]
    if data is None:
        return ins, outs
    n, squeeze = params["num_outputs"], params["squeeze_axis"]
    axis = join._axis("SliceChannel", "axis", params["axis"], data, "'data'")
    for _ in range(2):                   # again with what the outputs taught the data
        data = ins[0]
        size = data[axis]
        if size and size % n:
            raise ShapeError(f"SliceChannel: axis {params['axis']} of 'data' {data} has size "
                             f"{size}, which num_outputs={n} does not divide")
        if squeeze and size and size != n:
            raise ShapeError(f"SliceChannel: squeeze_axis=True needs axis {params['axis']} of "
                             f"'data' {data} to have size num_outputs={n}")
        part = data[:axis] + (() if squeeze else (size // n,)) + data[axis + 1:]
        for i in range(n):
            out = outs.assign(i, part, why=f"'data' {data} split {n} ways along axis "
                                           f"{params['axis']}")
            back = (out[:axis] + (n,) + out[axis:] if squeeze
                    else out[:axis] + (out[axis] * n,) + out[axis + 1:])
            ins.assign(0, back, why=f"{n} outputs of shape {out}")
    return ins, outs


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


def _dot(params, ins, outs):
    """DotShape, forward: the output keeps lhs's and rhs's free axes, unknown
    where theirs are; the contracted sizes are checked where both are
    known."""
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return ins, outs
    ta, tb = params["transpose_a"], params["transpose_b"]
    if not lhs or not rhs:
        raise ShapeError(f"dot: 0-d inputs are not supported (lhs {lhs}, rhs {rhs})")
    if len(lhs) == 1 and len(rhs) == 1:
        if ta or tb:
            raise ShapeError("dot: vectors cannot be transposed")
        lk, rk, out = lhs[0], rhs[0], (1,)
    else:
        lk, lout = (lhs[0], lhs[1:]) if ta else (lhs[-1], lhs[:-1])
        rk, rout = (rhs[-1], rhs[:-1]) if tb else (rhs[0], rhs[1:])
        out = ((lout if len(lhs) > 1 else ()) + (rout if len(rhs) > 1 else ())) or (1,)
    if lk and rk and lk != rk:
        raise ShapeError(f"dot: argument 'rhs' has shape {rhs}, whose contracted axis ({rk}) "
                         f"differs from that of 'lhs' {lhs} ({lk})")
    outs.assign(0, out, why=f"lhs {lhs} . rhs {rhs}")
    return ins, outs


for _name, _rule in (("Concat", _concat), ("SliceChannel", _slice_channel),
                     ("Flatten", _flatten), ("Reshape", _reshape), ("transpose", _transpose),
                     ("dot", _dot)):
    set_infer_shape_partial(_name, _rule)
