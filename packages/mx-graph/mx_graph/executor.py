"""The Executor: a symbol bound to arrays (MXNet's GraphExecutor).

Binding runs the passes once: Gradient (for the arguments whose grad_req
is not 'null'), InferShape/InferType, PlaceDevice (group2ctx) and
PlanMemory; then it allocates the planned storages, carves every entry's
array out of them and prepares one engine call per node.  A symbol holding
a dynamic-shape operator (boolean_mask) skips the plan: its passes run node
by node, allocating as they go (dynamic_run).  forward() and
backward() only push those calls (mx_ndarray.PreparedCall): each node's
kernel goes to the engine with its read and write variables, so
independent branches run in parallel while Python returns at once.

With group2ctx (model parallelism) PlaceDevice puts each node on its
group's device and a ``_CrossDeviceCopy`` on every edge between two
devices; the executor allocates every array on its node's device, runs
the copies as NDArray copies between the kernel calls (copy_call), and
bind checks that the arrays it is given are where the plan needs them.
"""
import numpy as np

from mx_engine import Context
from mx_engine._engine import _set_symbolic
from mx_engine._profiler_api import entry as _api_entry
from mx_engine.base import MXNetError
from mx_ndarray import NDArray, empty, zeros
from mx_ndarray.sparse import zeros as sparse_zeros
from mx_ndarray.prepared import PreparedCall
from mx_ops.core._limits import check_shape
from mx_ops.core.node import Node, NodeEntry, make_node
from mx_ops.core.partial_infer import known as shape_known
from mx_ops.core.stype import STYPE_NAMES, stype_id

from mx_graph.copy_call import CopyCall, Steps
from mx_graph.dynamic_run import DynamicPasses
from mx_graph.sparse_run import StoragePasses
from mx_graph.graph import Graph
from mx_graph.passes.gradient import gradient
from mx_graph.passes.infer import entry_label, infer_shape, infer_type, variable_hints
from mx_graph.passes.infer_storage import infer_storage, may_be_sparse
from mx_graph.passes.place_device import COPY_OP, place_device
from mx_graph.passes.plan_memory import EXTERNAL, plan_memory

__all__ = ["Executor"]

_REQS = ("null", "write", "inplace", "add")


def _normalize_reqs(grad_req, arg_names):
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in arg_names}
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(arg_names):
            raise MXNetError(f"bind: grad_req has {len(grad_req)} entries for "
                             f"{len(arg_names)} arguments {arg_names}")
        reqs = dict(zip(arg_names, grad_req))
    elif isinstance(grad_req, dict):
        unknown = set(grad_req) - set(arg_names)
        if unknown:
            raise MXNetError(f"bind: grad_req names {sorted(unknown)}, which are not "
                             f"arguments; the arguments are {arg_names}")
        reqs = {n: grad_req.get(n, "null") for n in arg_names}
    else:
        raise TypeError(f"bind: grad_req must be a str, list or dict, got "
                        f"{type(grad_req).__name__}")
    for name, req in reqs.items():
        if req not in ("null", "write", "add", "inplace"):
            raise MXNetError(f"bind: grad_req for '{name}' is {req!r}; it must be one of "
                             f"'null', 'write', 'add'")
        if req == "inplace":
            reqs[name] = "write"
    return reqs


def _named_arrays(value, names, what):
    """``value`` (a list in ``names`` order, or a dict) as name -> array."""
    if value is None:
        return {}
    if isinstance(value, dict):
        unknown = set(value) - set(names)
        if unknown and what != "args_grad":
            raise MXNetError(f"bind: {what} names {sorted(unknown)}, which the symbol does "
                             f"not take; it takes {names}")
        return {k: v for k, v in value.items() if k in names}
    value = list(value)
    if len(value) != len(names):
        raise MXNetError(f"bind: {what} has {len(value)} arrays for {len(names)} names "
                         f"{names}")
    return dict(zip(names, value))


class _BoundGraph:
    """The passes' results for one symbol, one set of shapes and reqs."""

    def __init__(self, symbol, grad_reqs, shapes, dtypes, group2ctx, default_ctx, stypes=None):
        fwd = Graph(symbol._outputs)
        idx = fwd.indexed
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.output_names = symbol.list_outputs()
        variables = {}
        for nid in idx.input_nodes:
            node = idx.nodes[nid]
            if node.name in variables:
                raise MXNetError(f"bind: two different inputs are both named '{node.name}'")
            variables[node.name] = NodeEntry(node, 0)
        self.variables = variables
        # A dynamic-shape operator (boolean_mask) leaves the shapes after it
        # unknown until it runs: the passes then run node by node.
        self.dynamic = any(getattr(n.op, "dynamic_shape", False) for n in idx.nodes
                           if not n.is_variable)
        if self.dynamic and group2ctx:
            raise MXNetError("bind: group2ctx is not supported for a symbol holding a "
                             "dynamic-shape operator (" + ", ".join(sorted(
                                 {n.op.name for n in idx.nodes if not n.is_variable
                                  and getattr(n.op, "dynamic_shape", False)})) + ")")
        # Forward inference first: the head gradients take the outputs' shapes.
        fshapes = self._infer(fwd, shapes, dtypes)
        out_shapes = [fshapes[0][e] for e in idx.outputs]
        out_dtypes = [fshapes[1][e] for e in idx.outputs]
        xs = [variables[n] for n in self.arg_names if grad_reqs[n] != "null"]
        self.grad_reqs = grad_reqs
        self.group2ctx = group2ctx
        self.head_grads = []
        grad_entries = {}
        forward_of = {}       # backward node id -> its forward node (for placement)
        if xs:
            self.head_grads = [NodeEntry(Node(None, f"{name}_head_grad", {}, ()), 0)
                               for name in self.output_names]
            # An output's head gradient lives where the output is computed.
            for y, h in zip(fwd.outputs, self.head_grads):
                forward_of[h.node._id] = y.node
            grads, _ = gradient(fwd, xs, self.head_grads, forward_of)
            grad_entries = self._exclusive(fwd, xs, grads, forward_of)
        self.grad_entries = grad_entries       # arg name -> entry written to its grad
        nfwd = len(fwd.outputs)
        outputs = list(fwd.outputs) + list(grad_entries.values())
        graph = Graph(outputs, {"forward_node": forward_of})
        full_shapes, full_dtypes = dict(), dict()
        gidx = graph.indexed
        for name, e in variables.items():
            eid = gidx.entry_id(e)
            full_shapes[eid] = fshapes[0][idx.entry_id(e)]
            full_dtypes[eid] = fshapes[1][idx.entry_id(e)]
        self.needed_head_grads = []
        for i, e in enumerate(self.head_grads):
            if e.node._id in gidx._nid:
                eid = gidx.entry_id(e)
                full_shapes[eid], full_dtypes[eid] = out_shapes[i], out_dtypes[i]
                self.needed_head_grads.append(i)
        graph = infer_shape(graph, full_shapes)
        graph = infer_type(graph, full_dtypes)
        self._check_known(graph)
        if not self.dynamic:
            self._check_sizes(graph)
        if group2ctx:
            # A gradient ends on its variable's device, where its array is.
            colocate = {nfwd + k: variables[name].node for k, name in enumerate(grad_entries)}
            graph = place_device(graph, default_ctx, group2ctx, colocate_outputs=colocate)
            # Copies replace the nodes that read them: the outputs are new entries.
            self.grad_entries = dict(zip(grad_entries, graph.outputs[nfwd:]))
        gidx = graph.indexed
        # The nodes the forward outputs need come first in the topological
        # order (MXNet's num_forward_nodes); the rest is the backward pass.
        self.num_forward_nodes = max(gidx.node_id(e.node) for e in graph.outputs[:nfwd]) + 1
        self._infer_storage(graph, stypes or {}, default_ctx)
        self.graph = graph if self.dynamic or self.stypes is not None else plan_memory(
            graph, external=set(gidx.outputs))

    def _infer_storage(self, graph, stypes, default_ctx):
        """``stypes``: entry id -> storage of every entry where one is
        sparse (the graph then runs node by node, sparse_run), else None
        (the dense plan); ``arg_stypes`` the inputs' storage by name."""
        gidx = graph.indexed
        self.arg_stypes = {name: stypes.get(name) or _var_stype(e.node)
                           for name, e in self.variables.items()}
        known = {gidx.entry_id(e): self.arg_stypes[name]
                 for name, e in self.variables.items() if e.node._id in gidx._nid}
        self.stypes = None
        if not may_be_sparse(graph, known):
            return
        if self.group2ctx:
            raise MXNetError("bind: group2ctx is not supported for a symbol with sparse "
                             "storage (sparse arguments or gradients)")
        device = "gpu" if default_ctx.device_type == "gpu" else "cpu"
        found = infer_storage(graph, known, device)
        if any(s != "default" for s in found):
            self.stypes = found

    def grad_stype(self, name):
        """The storage type of argument ``name``'s gradient entry."""
        if self.stypes is None or name not in self.grad_entries:
            return "default"
        return self.stypes[self.graph.indexed.entry_id(self.grad_entries[name])]

    def _infer(self, graph, shapes, dtypes):
        idx = graph.indexed
        known_s = variable_hints(graph, "shape")
        known_t = variable_hints(graph, "dtype")
        for name, e in self.variables.items():
            eid = idx.entry_id(e)
            if name in shapes:
                known_s[eid] = tuple(shapes[name])
            if name in dtypes:
                known_t[eid] = np.dtype(dtypes[name]).name
        g = infer_shape(graph, known_s)
        g = infer_type(g, known_t)
        # Arguments whose dtype nothing decides are float32, as in MXNet.
        if g.attrs["dtype_num_unknown"]:
            for name, e in self.variables.items():
                eid = idx.entry_id(e)
                if g.attrs["dtype"][eid] is None:
                    known_t[eid] = "float32"
            g = infer_type(g, known_t)
        self._check_known(g)
        return g.attrs["shape"], g.attrs["dtype"]

    @staticmethod
    def _check_sizes(graph):
        """Every entry fits a device, checked before anything is allocated
        so that the error names the entry."""
        idx = graph.indexed
        for eid, (shape, dtype) in enumerate(zip(graph.attrs["shape"], graph.attrs["dtype"])):
            check_shape(shape, f"bind: entry '{entry_label(idx, eid)}'",
                        np.dtype(dtype).itemsize, dtype)

    def _check_known(self, graph):
        idx = graph.indexed
        for attr in ("shape", "dtype"):
            values = graph.attrs[attr]
            if attr == "shape":   # a shape with 0 dimensions is partly unknown
                values = [v if shape_known(v) else None for v in values]
            unknown = [idx.nodes[nid].name for nid in idx.input_nodes
                       if values[idx.entry_id(nid, 0)] is None]
            if self.dynamic:      # head gradients take the outputs' shapes as they run
                unknown = [name for name in unknown if name in self.variables]
            if unknown:
                raise MXNetError(f"bind: cannot infer the {attr} of {', '.join(unknown)}; "
                                 f"give {'it' if len(unknown) == 1 else 'them'} to "
                                 f"simple_bind (or bind arrays)")
            if self.dynamic:
                continue          # the rest is known as the nodes run
            missing = [eid for eid, v in enumerate(values) if v is None]
            if missing:
                e = idx.entry(missing[0])
                raise MXNetError(f"bind: cannot infer the {attr} of output {e.index} of "
                                 f"'{e.node.name}' ({e.node.op.name})")

    def _exclusive(self, fwd, xs, grads, forward_of):
        """Arg name -> an entry that only its gradient array receives: a
        gradient that is a variable, a forward value, shared by two
        arguments or read by another node gets a ``_copy`` node, so that
        the grad array can be written (or added to) directly.  The nodes
        made here belong to their argument (``forward_of``)."""
        fwd_ids = {n._id for n in fwd.indexed.nodes}
        probe = Graph(list(fwd.outputs) + [g for g in grads if g is not None])
        readers = probe.indexed.entry_refcounts()
        pidx = probe.indexed
        seen, out = set(), {}
        for x, g in zip(xs, grads):
            name = x.node.name
            if g is None:
                if self.grad_reqs[name] == "add":
                    continue          # nothing flows here: the array keeps its value
                g = NodeEntry(make_node("zeros_like", [x], name=f"{name}_zero_grad"), 0)
                forward_of[g.node._id] = x.node
            else:
                key = (g.node._id, g.index)
                if (g.node.is_variable or g.node._id in fwd_ids or key in seen
                        or readers[pidx.entry_id(g)] > 1):
                    g = NodeEntry(make_node("_copy", [g], name=f"{name}_grad_copy"), 0)
                    forward_of[g.node._id] = x.node
                seen.add(key)
            out[name] = g
        return out


class Executor:
    """A bound symbol: arrays for its arguments, gradients, auxiliary states
    and outputs, and the calls that compute them."""

    def __init__(self, symbol, ctx, bound, arg_arrays, grad_arrays, aux_arrays,
                 shared_storage=None):
        self._symbol = symbol
        self._ctx = ctx
        self._bound = bound
        self.arg_arrays = arg_arrays
        self.grad_arrays = grad_arrays
        self.aux_arrays = aux_arrays
        self._monitor = None
        self._monitor_all = False
        if bound.dynamic or bound.stypes is not None:
            named = dict(zip(bound.arg_names, arg_arrays))
            named.update(zip(bound.aux_names, aux_arrays))
            passes = DynamicPasses if bound.stypes is None else StoragePasses
            self._dynamic = passes(bound, ctx, named, dict(zip(bound.arg_names, grad_arrays)))
            self._storage = []
            self.outputs = []        # each forward's, once it ran
        else:
            self._dynamic = None
            self._allocate(shared_storage)
            self._prepare_calls()

    # -- construction ----------------------------------------------------
    @classmethod
    @_api_entry("MXExecutorBindEX")
    def bind(cls, symbol, ctx, args, args_grad=None, grad_req="write", aux_states=None,
             group2ctx=None, shared_exec=None):
        _check_ctx(ctx)
        arg_names = symbol.list_arguments()
        aux_names = symbol.list_auxiliary_states()
        args = _named_arrays(args, arg_names, "args")
        missing = [n for n in arg_names if n not in args]
        if missing:
            raise MXNetError(f"bind: no array given for argument(s) {missing}")
        grads = _named_arrays(args_grad, arg_names, "args_grad")
        aux = _named_arrays(aux_states, aux_names, "aux_states")
        missing = [n for n in aux_names if n not in aux]
        if missing:
            raise MXNetError(f"bind: no array given for auxiliary state(s) {missing}")
        reqs = _normalize_reqs(grad_req, arg_names)
        if args_grad is None:
            reqs = {n: "null" for n in arg_names}
        else:
            for n in arg_names:
                if reqs[n] != "null" and grads.get(n) is None:
                    reqs[n] = "null"
        for n, a in list(args.items()) + list(aux.items()) + list(grads.items()):
            if not isinstance(a, NDArray):
                raise TypeError(f"bind: the array for '{n}' must be an NDArray, got "
                                f"{type(a).__name__}")
        shapes = {n: a.shape for n, a in list(args.items()) + list(aux.items())}
        dtypes = {n: a.dtype for n, a in list(args.items()) + list(aux.items())}
        stypes = {n: a.stype for n, a in list(args.items()) + list(aux.items())}
        bound = _BoundGraph(symbol, reqs, shapes, dtypes, group2ctx, ctx, stypes)
        g = bound.graph
        idx = g.indexed
        for name, arr in list(args.items()) + list(aux.items()):
            eid = idx.entry_id(bound.variables[name])
            want = (g.attrs["shape"][eid], g.attrs["dtype"][eid])
            if (arr.shape, arr.dtype.name) != want:
                raise MXNetError(f"bind: the array for '{name}' is {arr.dtype.name} of shape "
                                 f"{arr.shape}, but the symbol needs {want[1]} of shape "
                                 f"{want[0]}")
        for name, arr in grads.items():
            if reqs.get(name, "null") != "null" and (arr.shape, arr.dtype) != (
                    args[name].shape, args[name].dtype):
                raise MXNetError(f"bind: the gradient array for '{name}' is {arr.dtype} of "
                                 f"shape {arr.shape}, the argument {args[name].dtype} of "
                                 f"shape {args[name].shape}")
        for what, named in (("array", list(args.items()) + list(aux.items())),
                            ("gradient array", [(n, a) for n, a in grads.items()
                                                if reqs.get(n, "null") != "null"])):
            for name, arr in named:
                want = _node_ctx(g, idx.node_id(bound.variables[name].node), ctx)
                if arr.context != want:
                    why = ("where group2ctx places it (its own ctx_group, or that of the "
                           "nodes reading it)" if group2ctx else
                           "the bind context: without group2ctx every array must be there")
                    raise MXNetError(f"bind: the {what} for '{name}' is on {arr.context}, but "
                                     f"the executor needs it on {want}, {why}; copy it "
                                     f"with as_in_context({want})")
        return cls(symbol, ctx, bound, [args[n] for n in arg_names],
                   [grads.get(n) if reqs[n] != "null" else None for n in arg_names],
                   [aux[n] for n in aux_names],
                   shared_storage=_shared_storage(shared_exec))

    @classmethod
    @_api_entry("MXExecutorSimpleBindEx")
    def simple_bind(cls, symbol, ctx, grad_req="write", type_dict=None, group2ctx=None,
                    shared_arg_names=None, shared_exec=None, shared_buffer=None, shapes=None,
                    stype_dict=None):
        _check_ctx(ctx)
        shared_storage = _shared_storage(shared_exec)
        arg_names = symbol.list_arguments()
        aux_names = symbol.list_auxiliary_states()
        inputs = set(arg_names) | set(aux_names)
        shapes = dict(shapes or {})
        unknown = set(shapes) - inputs
        if unknown:
            raise MXNetError(f"simple_bind: {sorted(unknown)} are not inputs of the symbol; "
                             f"its inputs are {arg_names + aux_names}")
        dtypes = dict(type_dict or {})
        reqs = _normalize_reqs(grad_req, arg_names)
        stypes = dict(stype_dict or {})
        unknown = set(stypes) - inputs
        if unknown:
            raise MXNetError(f"simple_bind: stype_dict names {sorted(unknown)}, which are not "
                             f"inputs of the symbol; its inputs are {arg_names + aux_names}")
        for name, stype in stypes.items():
            stype_id(stype, f"simple_bind: stype_dict['{name}']")
        bound = _BoundGraph(symbol, reqs, shapes, dtypes, group2ctx, ctx, stypes)
        g = bound.graph
        idx = g.indexed
        shared_args = set(shared_arg_names or ())
        spec = {}
        for name in arg_names + aux_names:
            eid = idx.entry_id(bound.variables[name])
            spec[name] = (g.attrs["shape"][eid], g.attrs["dtype"][eid],
                          _node_ctx(g, idx.node_id(bound.variables[name].node), ctx))

        def new_array(name, reuse, stype="default"):
            shape, dtype, where = spec[name]
            if reuse is not None and name in reuse:
                old = reuse[name]
                if old.shape == shape and old.dtype.name == dtype and old.stype == stype:
                    return old
            if stype != "default":
                return sparse_zeros(stype, shape, ctx=where, dtype=dtype)
            return zeros(shape, ctx=where, dtype=dtype)

        reuse_args = shared_exec.arg_dict if shared_exec is not None else None
        args = []
        for n in arg_names:
            if shared_buffer is not None and n not in shared_args and n in shapes:
                args.append(_from_buffer(shared_buffer, n, spec[n]))
            else:
                args.append(new_array(n, reuse_args if n in shared_args else None,
                                      bound.arg_stypes[n]))
        reuse_grads = shared_exec.grad_dict if shared_exec is not None else None
        grads = [new_array(n, reuse_grads if n in shared_args else None, bound.grad_stype(n))
                 if reqs[n] != "null" else None for n in arg_names]
        aux = [new_array(n, shared_exec.aux_dict if shared_exec is not None else None,
                         bound.arg_stypes[n]) for n in aux_names]
        return cls(symbol, ctx, bound, args, grads, aux, shared_storage=shared_storage)

    def _allocate(self, shared_storage):
        b, g = self._bound, self._bound.graph
        idx = g.indexed
        shapes, dtypes = g.attrs["shape"], g.attrs["dtype"]
        arrays = [None] * idx.num_entries
        named = dict(zip(b.arg_names, self.arg_arrays))
        named.update(zip(b.aux_names, self.aux_arrays))
        for name, e in b.variables.items():
            if e.node._id in idx._nid:
                arrays[idx.entry_id(e)] = named[name]
        self._head_grad_arrays = [None] * len(b.output_names)
        for i in b.needed_head_grads:
            eid = idx.entry_id(b.head_grads[i])
            where = _node_ctx(g, idx.node_id(b.head_grads[i].node), self._ctx)
            arrays[eid] = self._head_grad_arrays[i] = empty(
                shapes[eid], ctx=where, dtype=dtypes[eid])
        grads = dict(zip(b.arg_names, self.grad_arrays))
        for name, e in b.grad_entries.items():
            arrays[idx.entry_id(e)] = grads[name]
        self.outputs = []
        for i, eid in enumerate(idx.outputs[:len(b.output_names)]):
            if arrays[eid] is None:
                nid = idx.node_id(idx.entry(eid).node)
                arrays[eid] = empty(shapes[eid], ctx=_node_ctx(g, nid, self._ctx),
                                    dtype=dtypes[eid])
            self.outputs.append(arrays[eid])
        # One chunk per planned storage; entries are typed views of it.
        storage_ids = g.attrs["storage_id"]
        storage_ctx = {}
        for eid, sid in enumerate(storage_ids):
            if sid >= 0 and sid not in storage_ctx:
                nid = idx.node_id(idx.entry(eid).node)
                storage_ctx[sid] = _node_ctx(g, nid, self._ctx)
        pool = list(shared_storage or ())
        self._storage = []
        for sid, nbytes in enumerate(g.attrs["storage_bytes"]):
            ctx = storage_ctx.get(sid, self._ctx)
            buf = _take_shared(pool, nbytes, ctx)
            if buf is None:
                buf = empty((max(nbytes, 1),), ctx=ctx, dtype="uint8")
            self._storage.append(buf)
        for eid, sid in enumerate(storage_ids):
            if sid >= 0:
                arrays[eid] = self._storage[sid]._view_as(tuple(shapes[eid]), dtypes[eid], 0)
        self._arrays = arrays

    def _prepare_calls(self):
        b, g = self._bound, self._bound.graph
        idx = g.indexed
        inplace = g.attrs["inplace_entries"]
        grad_req_of = {idx.entry_id(e): b.grad_reqs[name] for name, e in b.grad_entries.items()}
        # A backward output nothing reads (the gradient of an input bound
        # with grad_req 'null', such as the data's) gets req 'null', as
        # MXNet's executor gives such entries kNullOp: the operator skips
        # that part of its work (FullyConnected's data-gradient GEMM).
        refs = idx.entry_refcounts()
        self._forward_calls, self._backward_calls = Steps(), Steps()
        self._call_nodes = []
        for nid, node in enumerate(idx.nodes):
            if node.is_variable:
                continue
            row, end = idx.node_row_ptr[nid], idx.node_row_ptr[nid + 1]
            backward = nid >= b.num_forward_nodes
            skip_unread = backward and node.op.name != COPY_OP     # a copy always writes
            reqs = []
            for eid in range(row, end):
                if skip_unread and refs[eid] == 0 and eid not in grad_req_of:
                    reqs.append("null")
                elif eid in grad_req_of:
                    reqs.append(grad_req_of[eid])
                elif eid in inplace:
                    reqs.append("inplace")
                else:
                    reqs.append("write")
            if node.op.name == COPY_OP:
                call = CopyCall(node.name, self._arrays[idx.inputs[nid][0]],
                                self._arrays[row], reqs[0])
            else:
                call = PreparedCall(node.op, node.params,
                                    [self._arrays[e] for e in idx.inputs[nid]],
                                    [self._arrays[e] for e in range(row, end)], reqs)
            (self._backward_calls if backward else self._forward_calls).append(call)
            self._call_nodes.append((backward, node, row, end, call))

    # -- running ---------------------------------------------------------
    @_api_entry("MXExecutorForward")
    def forward(self, is_train=False, **kwargs):
        """Runs the forward pass (pushes it; returns at once) after copying
        the NDArrays or array-likes in ``kwargs`` into the arguments."""
        arg_dict = self.arg_dict
        for name, value in kwargs.items():
            if name not in arg_dict:
                raise MXNetError(f"forward: '{name}' is not an argument; the arguments are "
                                 f"{self._bound.arg_names}")
            dst = arg_dict[name]
            if isinstance(value, NDArray):
                if value.shape != dst.shape:
                    raise MXNetError(f"forward: '{name}' has shape {value.shape}, the "
                                     f"executor was bound with {dst.shape}")
                value.copyto(dst)
            else:
                dst[:] = value
        self._run(False, bool(is_train))
        return self.outputs

    @_api_entry("MXExecutorBackwardEx")
    def backward(self, out_grads=None, is_train=True):
        """Runs the backward pass; ``out_grads`` are the gradients of the
        outputs, needed unless each output is a loss."""
        b = self._bound
        if not b.grad_entries:
            raise MXNetError("backward: the executor was bound without gradients "
                             "(grad_req 'null' for every argument)")
        if out_grads is None:
            out_grads = []
        elif isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        elif isinstance(out_grads, dict):
            out_grads = [out_grads.get(n) for n in b.output_names]
        out_grads = list(out_grads)
        if self._dynamic is not None and not self.outputs:
            raise MXNetError("backward: run forward(is_train=True) first")
        heads = self._checked_head_grads(out_grads)
        if self._dynamic is not None:
            self._dynamic.backward(heads, bool(is_train), self._dynamic_monitor())
            return
        for i, src in heads.items():
            src.copyto(self._head_grad_arrays[i])
        self._run(True, bool(is_train))

    def _checked_head_grads(self, out_grads):
        """{output index: its head gradient} for the outputs that are not
        losses, each checked against its output's shape (this forward
        pass's, when shapes are dynamic)."""
        b = self._bound
        heads = {}
        for i in b.needed_head_grads:
            src = out_grads[i] if i < len(out_grads) else None
            if src is None:
                raise MXNetError(
                    f"backward: output '{b.output_names[i]}' is not a loss, so its head "
                    f"gradient is required when calling backward. If you are attempting "
                    f"to minimize the output as an objective, please modify your network "
                    f"and pass it through the make_loss symbol.")
            if not isinstance(src, NDArray):
                raise TypeError(f"backward: out_grads[{i}] must be an NDArray, got "
                                f"{type(src).__name__}")
            want = self.outputs[i].shape
            if src.shape != want:
                raise MXNetError(f"backward: out_grads[{i}] has shape {src.shape}, output "
                                 f"'{b.output_names[i]}' has shape {want}")
            heads[i] = src
        return heads

    def _dynamic_monitor(self):
        """The monitor callback as DynamicPasses calls it, or None."""
        if self._monitor is None:
            return None

        def watch(node, inputs, outputs):
            if self._monitor_all:
                for arg, a in zip(node.op.input_names(node.params), inputs):
                    self._monitor(f"{node.name}_{arg}", a)
            for name, a in zip(node.op.output_names(node.params), outputs):
                self._monitor(f"{node.name}_{name}", a)
        return watch

    def _run(self, backward, is_train):
        if self._dynamic is not None:       # forward only: backward has its own
            self.outputs[:] = self._dynamic.forward(is_train, self._dynamic_monitor())
            return
        # What the passes push is the profiler's 'symbolic' (profile_symbolic).
        if self._monitor is None:
            prev = _set_symbolic(True)
            try:
                (self._backward_calls if backward else self._forward_calls).push(is_train)
            finally:
                _set_symbolic(prev)
            return
        for is_bwd, node, row, end, call in self._call_nodes:
            if is_bwd != backward:
                continue
            if self._monitor_all:
                # Before the push: an in-place node overwrites its input, and
                # the callback's reads queue behind whatever is pushed first.
                idx = self._bound.graph.indexed
                in_names = node.op.input_names(node.params)
                for arg, eid in zip(in_names, idx.inputs[idx.node_id(node)]):
                    self._monitor(f"{node.name}_{arg}", self._arrays[eid])
            prev = _set_symbolic(True)
            try:
                call.push(is_train)
            finally:
                _set_symbolic(prev)
            names = node.op.output_names(node.params)
            for i, eid in enumerate(range(row, end)):
                self._monitor(f"{node.name}_{names[i]}", self._arrays[eid])

    def set_monitor_callback(self, callback, monitor_all=False):
        """Calls ``callback(name, array)`` for every node output (and input
        with ``monitor_all``) as the passes run; None turns it off."""
        self._monitor = callback
        self._monitor_all = bool(monitor_all)

    # -- views -----------------------------------------------------------
    @property
    def arg_dict(self):
        return dict(zip(self._bound.arg_names, self.arg_arrays))

    @property
    def grad_dict(self):
        return dict(zip(self._bound.arg_names, self.grad_arrays))

    @property
    def aux_dict(self):
        return dict(zip(self._bound.aux_names, self.aux_arrays))

    @property
    def output_dict(self):
        return dict(zip(self._bound.output_names, self.outputs))

    @property
    def symbol(self):
        return self._symbol

    @property
    def memory_plan(self):
        """Planned and one-buffer-per-entry bytes, storages, in-place count."""
        g = self._bound.graph
        if self._dynamic is not None:      # allocated as the nodes run
            return {"planned_bytes": 0, "naive_bytes": 0, "num_storages": 0, "num_inplace": 0}
        return {"planned_bytes": g.attrs["planned_bytes"], "naive_bytes": g.attrs["naive_bytes"],
                "num_storages": len(g.attrs["storage_bytes"]),
                "num_inplace": len(g.attrs["inplace_entries"])}

    def debug_str(self):
        """The graph and its memory plan."""
        plan = self.memory_plan
        return (self._symbol.debug_str()
                + f"Total {plan['planned_bytes'] / 2 ** 20:.3f} MB allocated "
                  f"(one buffer per entry: {plan['naive_bytes'] / 2 ** 20:.3f} MB)\n")

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copies ``arg_params`` / ``aux_params`` (name -> NDArray) into the
        executor's arrays."""
        for params, target, what in ((arg_params, self.arg_dict, "arguments"),
                                     (aux_params or {}, self.aux_dict, "auxiliary states")):
            for name, value in params.items():
                if name in target:
                    dst = target[name]
                    if value.shape != dst.shape:
                        raise MXNetError(f"copy_params_from: '{name}' has shape "
                                         f"{value.shape}, the executor's {dst.shape}")
                    src = value.astype(dst.dtype) if value.dtype != dst.dtype else value
                    src.copyto(dst)
                elif not allow_extra_params:
                    raise ValueError(f'Find name "{name}" that is not in the {what}')

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new executor for new input shapes, sharing this one's arrays:
        an array whose shape stays is shared, one that shrinks is a view of
        the old memory, one that grows needs ``allow_up_sizing``."""
        b = self._bound
        if b.dynamic:       # the outputs' shapes stay unknown until a forward pass
            arg_shapes, _, aux_shapes = self._symbol.infer_shape_partial(**kwargs)
            if not all(shape_known(s) for s in arg_shapes + aux_shapes):
                arg_shapes = None
        else:
            arg_shapes, _, aux_shapes = self._symbol.infer_shape(**kwargs)
        if arg_shapes is None:
            raise MXNetError(f"reshape: the shapes {kwargs} do not determine every argument")

        def remap(names, arrays, shapes, grads=False):
            out = []
            for name, arr, shape in zip(names, arrays, shapes):
                if arr is None:
                    out.append(None)
                    continue
                if arr.shape == shape:
                    out.append(arr)
                    continue
                if name not in kwargs and not partial_shaping:
                    raise MXNetError(f"reshape: the shape of '{name}' changes from "
                                     f"{arr.shape} to {shape}; pass partial_shaping=True "
                                     f"to allow it")
                need = int(np.prod(shape)) * arr.dtype.itemsize
                have = int(np.prod(arr.shape)) * arr.dtype.itemsize
                if need <= have:
                    out.append(arr._view_as(tuple(shape), arr.dtype.name, 0))
                elif allow_up_sizing:
                    out.append(zeros(shape, ctx=arr.ctx, dtype=arr.dtype))
                else:
                    raise MXNetError(f"reshape: '{name}' grows from {arr.shape} to {shape}; "
                                     f"pass allow_up_sizing=True to allocate it anew")
            return out

        args = remap(b.arg_names, self.arg_arrays, arg_shapes)
        grads = remap(b.arg_names, self.grad_arrays, arg_shapes, grads=True)
        aux = remap(b.aux_names, self.aux_arrays, aux_shapes)
        shapes = {n: a.shape for n, a in zip(b.arg_names + b.aux_names, args + aux)}
        dtypes = {n: a.dtype for n, a in zip(b.arg_names + b.aux_names, args + aux)}
        stypes = {n: a.stype for n, a in zip(b.arg_names + b.aux_names, args + aux)}
        bound = _BoundGraph(self._symbol, b.grad_reqs, shapes, dtypes, b.group2ctx, self._ctx,
                            stypes)
        return Executor(self._symbol, self._ctx, bound, args, grads, aux,
                        shared_storage=self._storage)


def _var_stype(node):
    """A variable's storage type from its ``__storage_type__`` attribute
    (mx.sym.var(stype=...); MXNet's storage type code), else 'default'."""
    code = node.attrs.get("__storage_type__")
    return "default" if code is None else STYPE_NAMES.get(int(code), "default")


def _check_ctx(ctx):
    if not isinstance(ctx, Context):
        raise TypeError(f"bind: ctx must be a Context (mx.cpu(), mx.gpu(0)), got "
                        f"{type(ctx).__name__}")


def _node_ctx(graph, nid, default):
    devices = graph.attrs.get("device_ctx")
    return default if devices is None else devices[nid]


def _shared_storage(shared_exec):
    if shared_exec is None:
        return None
    if not isinstance(shared_exec, Executor):
        raise TypeError(f"bind: shared_exec must be an Executor, got "
                        f"{type(shared_exec).__name__}")
    return shared_exec._storage


def _take_shared(pool, nbytes, ctx):
    """The smallest storage of another executor that fits (removed from
    ``pool``), or None."""
    best = None
    for i, buf in enumerate(pool):
        if buf.ctx == ctx and buf.shape[0] >= nbytes and (
                best is None or buf.shape[0] < pool[best].shape[0]):
            best = i
    return None if best is None else pool.pop(best)


def _from_buffer(shared_buffer, name, spec):
    """MXNet's shared_buffer: an input array reused (as a view) when the
    buffer's one is big enough, else allocated and stored there."""
    shape, dtype, ctx = spec
    need = int(np.prod(shape)) * np.dtype(dtype).itemsize
    old = shared_buffer.get(name)
    if old is not None and old.ctx == ctx and old.size * old.dtype.itemsize >= need:
        return old._view_as(tuple(shape), dtype, 0)
    arr = zeros(shape, ctx=ctx, dtype=dtype)
    shared_buffer[name] = arr
    return arr
