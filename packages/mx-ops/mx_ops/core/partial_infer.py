"""Partial shape and type inference of one operator call: MXNet's
FInferShape and FInferType, which fill the unknown input *and* output
attributes of a node from the known ones.  Graph passes (InferShape,
InferType, simple_bind) run these per node until nothing changes; that is
how ``simple_bind(data=(100, 784))`` learns FullyConnected's weight shape.

Conventions, MXNet 1.x's (before np_shape):

- a shape is None when nothing is known of it, else a tuple in which 0
  marks a dimension not known yet: ``(0, 784)`` is a batch of unknown size.
  A genuinely empty array therefore reads as partly unknown here, as it did
  in MXNet 1.x.  ``()`` is a known 0-d shape.
- a dtype is None when unknown, else a name ('float32').

An operator may carry a rule, ``OpDef.infer_shape_partial(params, ins,
outs)`` (and ``infer_type_partial``), set at registration or with
``set_infer_shape_partial`` / ``set_infer_type_partial``.  ``ins`` and
``outs`` are ``Slots``: lists of the current values whose ``assign(i,
value)`` merges a value in (MXNet's SHAPE_ASSIGN_CHECK) and raises
ShapeError / TypeInferenceError naming the operator, the argument and both
values on a conflict.  A rule fills what it can and returns ``(ins,
outs)``; it must not raise merely because something is still unknown.

After the rule (or without one), once every input is known, the operator's
own forward ``infer_shape`` / ``infer_type`` runs and its results are
assigned to the outputs: partial inference with known inputs is the
forward inference, with its checks, and a given output that disagrees with
it is an error.  Without a rule, types get MXNet's ElemwiseType default
first: unknown input dtypes take that of the first known input, or else of
the first known output, where the forward infer_type accepts the guess.
"""
import numpy as np

from mx_ops.core import registry
from mx_ops.core.registry import ShapeError, TypeInferenceError

__all__ = ["infer_shapes", "infer_types", "set_infer_shape_partial", "set_infer_type_partial",
           "Slots", "known", "merge_shape", "same_shape", "same_type", "fixed_type",
           "format_shape"]


def known(shape):
    """True when every dimension of ``shape`` is known."""
    return shape is not None and 0 not in shape


def format_shape(shape):
    return "unknown" if shape is None else str(tuple(shape))


class _Conflict(ValueError):
    """Two shapes or dtypes that cannot describe one value."""


def merge_shape(a, b):
    """The shape both ``a`` and ``b`` describe (MXNet's shape_assign), or
    ValueError when they disagree in rank or in a known dimension."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        raise _Conflict
    out = []
    for x, y in zip(a, b):
        if x and y and x != y:
            raise _Conflict
        out.append(x or y)
    return tuple(out)


def _merge_dtype(a, b):
    if a is None or b is None or a == b:
        return b if a is None else a
    raise _Conflict


class Slots(list):
    """The shapes (or dtypes) of one side of a call, as a rule sees them."""

    def __init__(self, op, side, names, values, attr):
        super().__init__(values)
        self.op, self.side, self.names, self.attr = op, side, list(names), attr

    def describe(self, i):
        """'argument 'weight'', 'output 'output'' or 'auxiliary state ...'."""
        name = self.names[i]
        kind = ("output" if self.side == "out" else
                "auxiliary state" if name in self.op.aux_states else "argument")
        return f"{kind} '{name}'"

    def assign(self, i, value, why=""):
        """Merges ``value`` into slot ``i`` and returns the result; a
        conflict raises naming the operator, the slot and both values."""
        have = self[i]
        try:
            merged = (merge_shape(have, value) if self.attr == "shape"
                      else _merge_dtype(have, value))
        except _Conflict:
            err = ShapeError if self.attr == "shape" else TypeInferenceError
            fmt = format_shape if self.attr == "shape" else str
            raise err(f"{self.op.name}: {self.describe(i)} has {self.attr} {fmt(have)}, "
                      f"expected {fmt(value)}" + (f" ({why})" if why else "")) from None
        self[i] = merged
        return merged


def same_shape(inputs=None, outputs=None):
    """A rule giving the listed inputs and outputs (all by default) one
    shape, merged from all of them in both directions (MXNet's
    ElemwiseShape)."""
    return _same("shape", inputs, outputs)


def same_type(inputs=None, outputs=None):
    """A type rule giving the listed inputs and outputs one dtype (MXNet's
    ElemwiseType)."""
    return _same("dtype", inputs, outputs)


def dtype_param(params, ins, outs):
    """A type rule: the output's dtype is the 'dtype' parameter; the
    inputs' are the caller's (MXNet leaves them to be known)."""
    outs.assign(0, params["dtype"], why=f"argument 'dtype' is {params['dtype']}")
    return ins, outs


def fixed_type(dtype):
    """A type rule: output 0 has ``dtype`` whatever the inputs; theirs are
    the caller's (the default rule would guess them from the output)."""
    def rule(params, ins, outs):
        outs.assign(0, dtype, why=f"its dtype is always {dtype}")
        return ins, outs
    return rule


def _same(attr, inputs, outputs):
    def rule(params, ins, outs):
        slots = ([(ins, i) for i in (range(len(ins)) if inputs is None else inputs)]
                 + [(outs, i) for i in (range(len(outs)) if outputs is None else outputs)])
        merged, source = None, None
        for side, i in slots:
            try:
                merged = (merge_shape(merged, side[i]) if attr == "shape"
                          else _merge_dtype(merged, side[i]))
            except _Conflict:
                err = ShapeError if attr == "shape" else TypeInferenceError
                fmt = format_shape if attr == "shape" else str
                raise err(f"{ins.op.name}: {side.describe(i)} has {attr} {fmt(side[i])}, "
                          f"which differs from {source} {fmt(merged)}") from None
            if side[i] is not None and source is None:
                source = side.describe(i)
        if merged is not None:
            for side, i in slots:
                side.assign(i, merged)
        return ins, outs
    return rule


def set_infer_shape_partial(op_name, rule):
    """Sets ``rule(params, ins, outs)`` as the partial shape inference of
    operator ``op_name`` (see the module's docstring)."""
    registry.get(op_name).infer_shape_partial = rule
    return rule


def set_infer_type_partial(op_name, rule):
    """Sets ``rule(params, ins, outs)`` as the partial type inference of
    operator ``op_name``."""
    registry.get(op_name).infer_type_partial = rule
    return rule


def _op(op):
    return registry.get(op) if isinstance(op, str) else op


def _slots(op, params, in_values, out_values, attr, norm):
    ins_names, out_names = op.input_names(params), op.output_names(params)
    out_values = [None] * len(out_names) if out_values is None else list(out_values)
    for side, names, values in (("input", ins_names, in_values), ("output", out_names,
                                                                   out_values)):
        if len(values) != len(names):
            raise registry.MXNetError(f"{op.name}: {len(values)} {side} {attr}s given for its "
                                      f"{len(names)} {side}s ({', '.join(names)})")
    return (Slots(op, "in", ins_names, [norm(op, n, v) for n, v in zip(ins_names, in_values)],
                  attr),
            Slots(op, "out", out_names, [norm(op, n, v) for n, v in zip(out_names, out_values)],
                  attr))


def _norm_shape(op, name, shape):
    if shape is None:
        return None
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ShapeError(f"{op.name}: '{name}' has shape {shape}; dimensions are >= 0, with 0 "
                         f"for a dimension not known yet")
    return shape


def _norm_dtype(op, name, dtype):
    return dtype if dtype is None or isinstance(dtype, str) else np.dtype(dtype).name


def _run(rule, params, ins, outs):
    """Runs a rule and merges what it returns into ``ins`` and ``outs``."""
    got = rule(params, ins, outs)
    if got is not None:
        new_ins, new_outs = got
        for slots, new in ((ins, new_ins), (outs, new_outs)):
            if new is slots:
                continue
            if len(new) != len(slots):
                raise registry.MXNetError(f"{ins.op.name}: its partial inference rule returned "
                                          f"{len(new)} entries for {len(slots)} slots")
            for i, v in enumerate(new):
                slots.assign(i, v)


def infer_shapes(op, params, in_shapes, out_shapes=None):
    """Fills the unknown input and output shapes of one call of ``op``.

    Parameters
    ----------
    op : OpDef or str
    params : dict
        The call's parsed parameters (``op.parse_params``).
    in_shapes : list
        One entry per input (``op.input_names(params)``): None when
        unknown, else a tuple with 0 for each unknown dimension.
    out_shapes : list, optional
        Likewise per output, hidden ones included; None: all unknown.

    Returns
    -------
    (in_shapes, out_shapes) : two new lists, filled as far as possible.

    Raises
    ------
    ShapeError
        Shapes that contradict each other, naming the operator, the
        argument or output and the shapes.
    """
    op = _op(op)
    ins, outs = _slots(op, params, in_shapes, out_shapes, "shape", _norm_shape)
    if op.infer_shape_partial is not None:
        _run(op.infer_shape_partial, params, ins, outs)
    if all(known(s) for s in ins):
        forward = op.infer_shape(params, [tuple(s) for s in ins])
        if len(forward) != len(outs):
            raise registry.MXNetError(f"{op.name}: infer_shape returned {len(forward)} shapes "
                                      f"for {len(outs)} outputs")
        for i, s in enumerate(forward):
            outs.assign(i, tuple(s), why="the output shape for the inputs' shapes "
                                         + ", ".join(map(format_shape, ins)))
    return list(ins), list(outs)


def infer_types(op, params, in_dtypes, out_dtypes=None):
    """Fills the unknown input and output dtypes of one call of ``op``: the
    counterpart of ``infer_shapes`` (None for unknown, names for known);
    raises TypeInferenceError on dtypes that contradict each other."""
    op = _op(op)
    ins, outs = _slots(op, params, in_dtypes, out_dtypes, "dtype", _norm_dtype)
    _run(op.infer_type_partial or _guess_types, params, ins, outs)
    if all(t is not None for t in ins):
        forward = op.infer_type(params, list(ins))
        if len(forward) != len(outs):
            raise registry.MXNetError(f"{op.name}: infer_type returned {len(forward)} dtypes "
                                      f"for {len(outs)} outputs")
        for i, t in enumerate(forward):
            outs.assign(i, _norm_dtype(op, outs.names[i], t),
                        why="the output dtype for the input dtypes " + ", ".join(ins))
    return list(ins), list(outs)


def _guess_types(params, ins, outs):
    """The default type rule (MXNet's ElemwiseType, without its check that
    known dtypes agree, which the forward infer_type makes): unknown inputs
    take the first known input's dtype, or the first known output's.  A
    guess the forward infer_type refuses is dropped, not reported: the
    operator's inputs need not share one dtype (take's indices)."""
    if all(t is not None for t in ins):
        return
    guess = next((t for t in ins if t is not None), None)
    if guess is None:
        guess = next((t for t in outs if t is not None), None)
    if guess is None:
        return
    trial = [guess if t is None else t for t in ins]
    try:
        ins.op.infer_type(params, trial)
    except TypeInferenceError:
        return
    for i, t in enumerate(trial):
        ins[i] = t
