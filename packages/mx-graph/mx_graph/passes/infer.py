"""InferShape and InferType: nnvm's passes that attach "shape" and "dtype"
(one per entry, None where unknown) to a graph.

Each node's rule (mx_ops.shape_inference) fills unknown input and output
entries from the known ones, so shapes flow both ways: FullyConnected's
weight from its data, SoftmaxOutput's label from its data, an operand of
an elementwise op from its sibling.  Sweeps run forward then backward over
the topological order until nothing changes.  Errors name the node, its
operator, its inputs and their shapes.
"""
import numpy as np

from mx_engine.base import MXNetError
from mx_ops.core._limits import ArrayMemoryError, check_shape
from mx_ops.core.partial_infer import infer_shapes, infer_types, known as shape_known, merge_shape
from mx_ops.core.registry import ShapeError, TypeInferenceError

__all__ = ["infer_shape", "infer_type", "infer_symbol_shapes", "infer_symbol_types",
           "variable_hints", "entry_label"]

_MAX_SWEEPS = 8


def entry_label(idx, eid):
    """An entry as errors name it: a variable's name, else node_output."""
    e = idx.entry(eid)
    if e.node.is_variable:
        return e.node.name
    return f"{e.node.name}_{e.node.op.output_names(e.node.params)[e.index]}"


def _describe_inputs(idx, nid, values):
    node = idx.nodes[nid]
    names = node.op.input_names(node.params)
    parts = []
    for arg, eid in zip(names, idx.inputs[nid]):
        parts.append(f"{arg}={entry_label(idx, eid)}:{values[eid]}")
    return ", ".join(parts)


def _merge_type(a, b):
    if a is not None and b is not None and a != b:
        raise ValueError(f"{a} vs {b}")
    return b if a is None else a


def _sweep(graph, values, rule, what, error_type, merge):
    """Runs ``rule`` over every node, forward then backward, until a fixed
    point; ``values`` (per entry) is filled in place."""
    idx = graph.indexed
    order = [i for i, n in enumerate(idx.nodes) if not n.is_variable]
    for sweep in range(_MAX_SWEEPS):
        changed = False
        for nid in (order if sweep % 2 == 0 else reversed(order)):
            node = idx.nodes[nid]
            ins = idx.inputs[nid]
            row = idx.node_row_ptr[nid]
            outs = list(range(row, idx.node_row_ptr[nid + 1]))
            old_in = [values[e] for e in ins]
            old_out = [values[e] for e in outs]
            try:
                new_in, new_out = rule(node.op, node.params, old_in, old_out)
            except (ShapeError, TypeInferenceError, ValueError, TypeError,
                    ArrayMemoryError) as exc:
                # An array too large for any device stays a MemoryError.
                cls = ArrayMemoryError if isinstance(exc, ArrayMemoryError) else error_type
                raise cls(f"{what}: error in operator '{node.name}' ({node.op.name}): "
                          f"{exc}; inputs: {_describe_inputs(idx, nid, values)}") from None
            for eids, olds, news in ((ins, old_in, new_in), (outs, old_out, new_out)):
                for eid, old, new in zip(eids, olds, news):
                    if new is None or new == old:
                        continue
                    try:
                        merged = merge(values[eid], new)    # 0 dims are unknown
                    except ValueError:
                        raise error_type(
                            f"{what}: error in operator '{node.name}' ({node.op.name}): entry "
                            f"'{entry_label(idx, eid)}' is {values[eid]} but {new} is "
                            f"inferred; inputs: {_describe_inputs(idx, nid, values)}") from None
                    if merged != values[eid]:
                        values[eid] = merged
                        changed = True
        if not changed and sweep >= 1:
            break
    return values


def _shape_rule(op, params, ins, outs):
    new_in, new_out = infer_shapes(op, params, ins, outs)
    return _checked(new_in, "input"), _checked(new_out, "output")


def _checked(shapes, side):
    """Inferred shapes as int tuples, each within the size limits (0 is an
    unknown dimension here) before an executor allocates it."""
    out = []
    for k, s in enumerate(shapes):
        if s is not None:
            check_shape(s, f"inferred {side} {k}")
            s = tuple(int(d) for d in s)
        out.append(s)
    return out


def infer_shape(graph, shapes):
    """``graph`` with attribute "shape": a list per entry, starting from
    ``shapes`` (entry id -> shape), and "shape_num_unknown" (entries
    still unknown)."""
    values = [None] * graph.indexed.num_entries
    for eid, s in shapes.items():
        if s is not None:
            check_shape(s, f"InferShape: the shape given for '{entry_label(graph.indexed, eid)}'")
            values[eid] = tuple(int(d) for d in s)
    _sweep(graph, values, _shape_rule, "InferShape", ShapeError, merge_shape)
    return graph.with_attrs(shape=values,
                            shape_num_unknown=sum(not shape_known(v) for v in values))


def infer_type(graph, dtypes):
    """``graph`` with attribute "dtype" (names such as 'float32', one per
    entry) from ``dtypes`` (entry id -> name) and "dtype_num_unknown"."""
    values = [None] * graph.indexed.num_entries
    for eid, t in dtypes.items():
        values[eid] = None if t is None else np.dtype(t).name
    _sweep(graph, values, infer_types, "InferType", TypeInferenceError, _merge_type)
    return graph.with_attrs(dtype=values,
                            dtype_num_unknown=sum(v is None for v in values))


def variable_hints(graph, key):
    """Entry id -> value for variables that carry ``__shape__`` (key
    'shape') or ``__dtype__`` (key 'dtype') attributes."""
    from mx_graph.symbol import dtype_hint, shape_hint
    attr, parse = {"shape": ("__shape__", shape_hint), "dtype": ("__dtype__", dtype_hint)}[key]
    idx = graph.indexed
    out = {}
    for nid in idx.input_nodes:
        node = idx.nodes[nid]
        if attr in node.attrs:
            try:
                out[idx.entry_id(nid, 0)] = parse(node.attrs[attr])
            except ValueError as exc:
                raise MXNetError(f"variable '{node.name}': attribute {attr} {exc}") from None
    return out


def _given(sym, args, kwargs, what):
    """Input name -> value from a positional/keyword inference call."""
    arg_names = sym.list_arguments()
    inputs = set(sym.list_inputs())
    if args and kwargs:
        raise MXNetError(f"{what}: give the inputs positionally or by name, not both")
    if len(args) > len(arg_names):
        raise MXNetError(f"{what}: {len(args)} values given for {len(arg_names)} arguments")
    given = dict(zip(arg_names, args))
    for key, value in kwargs.items():
        if key not in inputs:
            raise MXNetError(f"{what}: '{key}' is not an input of the symbol; its inputs are "
                             f"{sorted(inputs)}")
        given[key] = value
    return {k: v for k, v in given.items() if v is not None}


def _by_name(graph):
    idx = graph.indexed
    return {idx.nodes[nid].name: idx.entry_id(nid, 0) for nid in idx.input_nodes}


def infer_symbol_shapes(sym, args, kwargs, partial):
    """Symbol.infer_shape / infer_shape_partial."""
    graph = sym._graph()
    names = _by_name(graph)
    known = variable_hints(graph, "shape")
    for key, shape in _given(sym, args, kwargs, "infer_shape").items():
        known[names[key]] = tuple(shape)       # zeros: dimensions still unknown
    values = infer_shape(graph, known).attrs["shape"]
    idx = graph.indexed
    arg = [values[names[n]] for n in sym.list_arguments()]
    aux = [values[names[n]] for n in sym.list_auxiliary_states()]
    out = [values[e] for e in idx.outputs]
    if partial:
        fix = lambda lst: [() if s is None else s for s in lst]  # noqa: E731
        return fix(arg), fix(out), fix(aux)
    if not all(shape_known(s) for s in arg + aux + out):
        return None, None, None
    return arg, out, aux


def infer_symbol_types(sym, args, kwargs):
    """Symbol.infer_type: NumPy type objects, or three Nones when the
    given types do not determine them all."""
    graph = sym._graph()
    names = _by_name(graph)
    known = variable_hints(graph, "dtype")
    for key, dtype in _given(sym, args, kwargs, "infer_type").items():
        known[names[key]] = np.dtype(dtype).name
    values = infer_type(graph, known).attrs["dtype"]
    idx = graph.indexed
    arg = [values[names[n]] for n in sym.list_arguments()]
    aux = [values[names[n]] for n in sym.list_auxiliary_states()]
    out = [values[e] for e in idx.outputs]
    if any(t is None for t in arg + aux + out):
        return None, None, None
    typ = lambda lst: [np.dtype(t).type for t in lst]  # noqa: E731
    return typ(arg), typ(out), typ(aux)
