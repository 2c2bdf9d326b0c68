"""The autograd tape, backward side (MXNet's Imperative::Backward).

``backward`` walks the tape from the heads (nodes in topological order,
their kept values in one list of slots) and builds the tape's structure
key on the way: each node's (plan, inference[, scalar]) and the slots it
reads, the variables' grad_reqs, which heads come with a gradient and
which entries are differentiated.  A tape of a known structure replays its
cached program: the gradient calls, each a CallPlan with the slots it
reads, pushed through ``_invoke._call`` like any imperative call; only a
new structure runs mx-graph's Gradient pass over the recorded nodes (the
registered gradient makers) to build one (PROGRAM_LIMIT kept; a scalar
op's scalar is part of the structure, as its gradient nodes read it, so a
scalar that changes every step rebuilds every step).  mx-graph registers
that builder with ``set_program_builder`` when imported (mx-ndarray does
not import mx-graph); without it backward raises, naming the package.

With ``create_graph`` the program runs while recording, on the kept
values re-attached to their nodes, so the gradient calls are recorded in
turn (higher order).  Without ``retain_graph`` the op nodes drop their
values afterwards: a second backward raises MXNet's error."""
from cpython.bytes cimport PyBytes_AS_STRING
from libc.stdint cimport int32_t

from mx_ops.core._call cimport CallPlan, plan_for
from mx_ndarray._ndarray cimport NDArray
from mx_ndarray._invoke cimport _call
from mx_ndarray._tape cimport AGInfo, detached, on_tape

from mx_engine._profiler_api import entry as _api_entry
from mx_engine.base import MXNetError
from mx_ops.core import training
from mx_ops.core.node import Node

NOT_IN_GRAPH = (
    "Cannot differentiate node because it is not in a computational graph. You need to set "
    "is_recording to true or use autograd.record() to save computational graphs for "
    "backward. If you want to differentiate the same graph twice, you need to pass "
    "retain_graph=True to backward.")

_GRAD_REQS = ("write", "add", "null")
_builder = None             # mx-graph's program builder (set_program_builder)
cdef dict _programs = {}    # tape structure -> program (steps, results)
cdef Py_ssize_t PROGRAM_LIMIT = 64
cdef dict _NO_PARAMS = {}


def set_program_builder(builder):
    """Registers ``builder(nodes, base, heads, head_grad_slots, xs, nslots)``,
    which returns a backward program ``(steps, results)``: ``steps`` a list
    of (CallPlan, input slots, number of visible outputs, req flags,
    direct) whose visible outputs take the next slots (req flags: None, or
    bytes of one int32 OpReqType per output, 0 for an output no one reads,
    which a native kernel then skips; direct: None, or (output, x) pairs
    for outputs only x's result reads, which backward writes straight into
    x's gradient array where its grad_req is 'write'), ``results`` the
    slot of each x's gradient (-1: none).
    The forward values fill the slots from 0: each node's outputs from
    ``base[node._id]``, where ``nodes`` are the tape in topological order;
    given head gradients follow.  Returns the previous builder."""
    global _builder
    previous, _builder = _builder, builder
    _programs.clear()
    return previous


def mark(NDArray var, grad, str grad_req):
    """Makes ``var`` a variable of the tape (a new graph input) whose
    gradient goes to ``grad`` as ``grad_req`` says."""
    if grad_req not in _GRAD_REQS:
        raise ValueError(f"mark_variables: grad_req must be one of {_GRAD_REQS}, got "
                         f"{grad_req!r}")
    if grad is not None and not isinstance(grad, NDArray):
        raise TypeError(f"mark_variables: a gradient must be an NDArray, got "
                        f"{type(grad).__name__}")
    node = Node(None, "var", {}, ())
    node.info = AGInfo([detached(var)], grad, grad_req)
    var._ag_node = node
    var._ag_index = 0


def variable_info(NDArray a):
    """The AGInfo of ``a``'s variable node, or None."""
    node = a._ag_node
    if node is not None and node.op is None and node.info is not None:
        return node.info
    return None


def detach(NDArray a):
    """A view of ``a`` outside any graph."""
    return detached(a)


cdef NDArray attached(NDArray a, object node, int index):
    cdef NDArray v = detached(a)
    v._ag_node = node
    v._ag_index = index
    return v


@_api_entry("MXAutogradBackwardEx")
def backward(list heads, list head_grads, list variables, bint retain_graph, bint train_mode,
             bint create_graph):
    """Differentiates ``heads`` (NDArrays on the tape; ``head_grads`` one
    NDArray or None, meaning ones, per head).  ``variables`` None: every
    variable's gradient goes to its grad array per its grad_req (returns
    None); else the gradients with respect to those arrays are returned as
    new arrays."""
    cdef NDArray a
    cdef AGInfo info
    cdef list order = [], values = [], key = [], xs = [], xinfo = []
    cdef dict base = {}
    cdef bint cacheable = True
    cdef Py_ssize_t i, nfixed
    for i, a in enumerate(heads):
        g = head_grads[i]
        if g is not None and (not isinstance(g, NDArray) or (<NDArray>g).shape != a.shape):
            got = (<NDArray>g).shape if isinstance(g, NDArray) else type(g).__name__
            raise ValueError(f"backward: head_grads[{i}] must be an NDArray of the head's "
                             f"shape {a.shape}, got {got}")
        if not on_tape(a):
            raise MXNetError(NOT_IN_GRAPH)
    if variables is not None:
        for i, a in enumerate(variables):
            if not on_tape(a):
                raise MXNetError(f"Cannot differentiate with respect to the {i + 1}-th "
                                 f"variable because it does not require gradient.")
    # The tape in topological order (nnvm's DFSVisit post-order), its values
    # in slots and its structure.
    stack = [(a._ag_node, False) for a in reversed(heads)]
    while stack:
        node, done = stack.pop()
        nid = node._id
        if nid in base:
            continue
        if not done:
            stack.append((node, True))
            for e in reversed(node.inputs):
                if e.node._id not in base:
                    stack.append((e.node, False))
            continue
        info = node.info
        if info is None:
            raise MXNetError(NOT_IN_GRAPH)
        base[nid] = len(values)
        order.append(node)
        if node.op is None:
            if info.grad_req is None:        # a constant input
                values.append(info.outputs[0])
                key.append(None)
            else:
                values.append(attached(info.outputs[0], node, 0) if create_graph
                              else info.outputs[0])
                if variables is None and info.grad is not None and info.grad_req != "null":
                    xs.append((node, 0))
                    xinfo.append(info)
                key.append(info.grad_req)
            continue
        if create_graph:
            values.extend([attached(o, node, i) for i, o in enumerate(info.outputs)])
        else:
            values.extend(info.outputs)
        if info.sig is None:
            cacheable = False
        key.append((info.sig, tuple([base[e.node._id] + e.index for e in node.inputs])))
    head_slots = []
    for a, g in zip(heads, head_grads):
        if g is None:
            head_slots.append(None)
        else:
            head_slots.append(len(values))
            values.append(g)
    nfixed = len(values)
    if variables is not None:
        xs = [(a._ag_node, a._ag_index) for a in variables]
    # A variable the heads do not depend on is no slot (its gradient: zeros).
    xslots = tuple([base[n._id] + i if n._id in base else -1 for n, i in xs])
    heads_at = tuple([base[a._ag_node._id] + a._ag_index for a in heads])
    program = None
    if cacheable:
        k = (tuple(key), heads_at, tuple(head_slots), xslots)
        program = _programs.get(k)
    if program is None:
        if _builder is None:
            raise MXNetError("backward: the autograd backward needs mx-graph (its Gradient "
                             "pass); install the mx-graph package (import mx does so)")
        program = _builder(order, base, [(a._ag_node, a._ag_index) for a in heads],
                           head_slots, xs, len(values))
        if cacheable:
            if len(_programs) >= PROGRAM_LIMIT:
                _programs.pop(next(iter(_programs)))
            _programs[k] = program
    steps, results = program
    was_training = training.set_training(train_mode)
    was_recording = training.set_recording(create_graph)
    try:
        written = _run(steps, values, xinfo if variables is None else None)
        grads = [values[s] if s >= 0 else None for s in results]
        if variables is None:
            _store(grads, xinfo, written)
            out = None
        else:
            out = [_fresh(grads[i], variables[i], results[i] < nfixed)
                   for i in range(len(grads))]
    finally:
        training.set_recording(was_recording)
        training.set_training(was_training)
    if not retain_graph:
        for node in order:
            if node.op is not None:
                node.info = None
    return out


cdef set _run(list steps, list values, list xinfo):
    """Pushes the program's gradient calls; their outputs take the next
    slots.  With ``xinfo`` (backward into grad arrays), a gradient only its
    variable reads goes straight into a 'write' grad array; returns the
    indices of the variables so written."""
    cdef CallPlan plan
    cdef tuple ins
    cdef Py_ssize_t i, n
    cdef const int32_t* req_flags
    cdef AGInfo info
    cdef set written = set()
    for step in steps:
        plan, ins, n, reqs, direct = step
        args = [values[i] for i in ins]
        req_flags = NULL
        if reqs is not None:
            req_flags = <const int32_t*>PyBytes_AS_STRING(reqs)
        out = None
        if direct is not None and xinfo is not None:
            for i, k in direct:
                info = xinfo[k]
                if info.grad_req == "write":
                    if out is None:
                        out = [None] * n
                    out[i] = info.grad
                    written.add(k)
        res = _call(plan, args, out, None, NULL, 0, req_flags)
        if n == 1:
            values.append(res)
        else:
            values.extend(res)
    return written


cdef int _store(list grads, list xinfo, set written) except -1:
    """Each variable's gradient into its grad array, unless _run wrote it
    there: 'write' copies (zeros where none reached it), 'add'
    accumulates.  The grad array keeps its storage type (MXNet's rule): a
    gradient of another storage is cast on the way (the calls' storage
    dispatch: a row_sparse gradient added to a dense grad densifies)."""
    cdef AGInfo info
    cdef Py_ssize_t k
    for k in range(len(xinfo)):
        g, info = grads[k], xinfo[k]
        if k in written:
            continue
        if g is None:
            if info.grad_req != "add":
                _call(plan_for("zeros_like", 1, _NO_PARAMS), [info.grad], info.grad, None)
            continue
        store_grad(info.grad, g, info.grad_req)
    return 0


cpdef store_grad(NDArray grad, NDArray g, str req):
    """Gradient ``g`` into gradient array ``grad`` as ``req`` ('write' or
    'add') says, in ``grad``'s storage type (MXNet's rule: the grad array's
    storage wins; a gradient of another storage is cast by the calls'
    storage dispatch, so a row_sparse gradient added to a dense grad
    densifies).  The executor's node-by-node passes use it too."""
    if req != "add":
        _call(plan_for("_copy", 1, _NO_PARAMS), [g], grad, None)
    elif grad.stype_flag:
        # A sparse sum has a new structure (row_sparse: the union of the
        # rows): computed apart, then stored in the grad's storage.
        total = _call(plan_for("elemwise_add", 2, _NO_PARAMS), [grad, g], None, None)
        _call(plan_for("_copy", 1, _NO_PARAMS), [total], grad, None)
    else:
        _call(plan_for("elemwise_add", 2, _NO_PARAMS), [grad, g], grad, None)


cdef object _fresh(object g, NDArray x, bint shared):
    """A gradient returned by grad(): zeros where none reached ``x``, a copy
    where the program's slot is a value someone else holds."""
    if g is None:
        return _call(plan_for("zeros_like", 1, _NO_PARAMS), [x], None, None)
    if shared:
        return _call(plan_for("_copy", 1, _NO_PARAMS), [g], None, None)
    return g


def program_cache_size():
    """How many backward programs are cached (tests)."""
    return len(_programs)
