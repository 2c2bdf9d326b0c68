"""Call plans: the part of an operator call that depends only on the
operator and its parameters, worked out once per distinct call signature.

A call parses its keyword arguments, names its inputs, counts its outputs,
finds its compute and infers and packs for its input shapes and dtypes.
MXNet does the parsing once per node of a graph, but again on every
imperative call (17 us for ``mx.nd.relu`` on a tiny array in 1.9.1).  Here
``plan_for(op, nin, params)`` returns a :class:`CallPlan` from a bounded
cache keyed by the operator and the parameters' values (with their types:
``1`` and ``1.0`` parse differently), and each plan keeps a small bounded
cache of inference results keyed by the inputs' shapes and dtypes.  A miss,
or parameters that are not plain values (arrays, objects), takes the same
code without the cache, so results and errors are identical either way;
a call that fails is never cached, so it fails again the same way.

What a call still does every time: check its arrays (type, dtype,
context), reserve a random op's draws (in push order), size and take its
workspace, and allocate its outputs.
"""
from mx_engine._engine cimport intern_name

import numpy as np

from mx_ops.core import registry
from mx_ops.core.dtypes import DTYPE_FLAGS as _FLAG
from mx_ops.core._random_state import random_kind

cdef dict _ops = registry._ops          # name -> OpDef (the registry's own dict)
cdef dict _plans = {}                   # (OpDef, nin, frozen params) -> CallPlan
cdef dict _bare = {}                    # op name -> its last plan without parameters
cdef dict _recent = {}                  # op name -> its last plan with parameters
cdef Py_ssize_t _plan_limit = 2048      # `a * lr` with a changing lr must not grow it
cdef Py_ssize_t INFER_LIMIT = 16        # distinct (shapes, dtypes) kept per plan
cdef object _UNFROZEN = object()        # a value that cannot be a key
cdef object _INT_TUPLE = object()       # marks a tuple of ints in a key


cdef class Inferred:
    """Output shapes and dtypes, and packed parameters, for one (shapes,
    dtypes) of the inputs."""


cdef class CallPlan:
    """One operator with parsed parameters for ``nin`` inputs: everything
    its calls share.  Build through ``plan_for``/``plan_of`` (cached)."""

    def __init__(self, op, int nin, dict params):
        self.op = op
        self.params = op.parse_call(params, nin)
        self.names = op.input_names(self.params)
        self.nin = nin
        self.nout = op.output_count(self.params)
        self.nvisible = op.visible_output_count(self.params)
        self.skip_hidden = (op.hidden_outputs_for_backward
                            and self.nvisible < self.nout <= MAX_SKIPPED_OUTPUTS)
        self.mutated = op.mutated_inputs(self.params)
        self.random_kind = random_kind(op)
        self.has_workspace = op.workspace is not None
        sparse_from_dense = getattr(op, "sparse_from_dense", False)
        self.sparse_outputs = (sparse_from_dense(self.params) if callable(sparse_from_dense)
                               else sparse_from_dense)
        self.cname = intern_name(op.name)
        # A custom op's inference calls user code with state (its
        # CustomOpProp): it runs every time, as in MXNet.
        self.pure = op.attr_parser is None
        self._inferred = {}
        fn = op.compute.get("cpu")
        if op.compute_ex:
            self.cpu_kind = COMPUTE_EX
        elif fn is None:
            self.cpu_kind = COMPUTE_NONE
        elif callable(fn):
            self.cpu_kind = COMPUTE_PYTHON
            self.cpu_compute = fn
        else:
            self.cpu_kind = COMPUTE_NATIVE
            self.cpu_kernel = <size_t>fn

    cdef Inferred infer(self, tuple shapes, tuple dtypes):
        """The outputs for inputs of ``shapes`` (tuples) and ``dtypes``
        (names): the operator's inference, run on a miss and kept."""
        cdef Inferred r
        cdef tuple last = self._last
        if self.pure:
            if last is not None and last[0] == shapes and last[1] == dtypes:
                return <Inferred>last[2]
            key = (shapes, dtypes)
            r = self._inferred.get(key)
            if r is not None:
                self._last = (shapes, dtypes, r)    # one store: threads share plans
                return r
        r = Inferred.__new__(Inferred)
        in_shapes = list(shapes)
        out_shapes = self.op.infer_shape(self.params, in_shapes)
        out_dtypes = self.op.infer_type(self.params, list(dtypes))
        r.shapes = tuple([tuple([int(d) for d in s]) for s in out_shapes])
        r.dtypes = tuple(out_dtypes)
        r.flags = tuple([_FLAG.get(d, -1) for d in out_dtypes])
        pack = self.op.pack_params
        r.packed = pack(self.params, in_shapes) if pack is not None else b""
        if self.pure:
            if len(self._inferred) >= INFER_LIMIT:
                self._inferred.pop(next(iter(self._inferred)), None)   # the oldest
            self._inferred[key] = r
            self._last = (shapes, dtypes, r)
        return r

    def infer_outputs(self, shapes, dtypes):
        """(shapes, dtypes) of every output (Python's view of ``infer``)."""
        r = self.infer(tuple([tuple(s) for s in shapes]), tuple(dtypes))
        return r.shapes, r.dtypes

    def packed_params(self, shapes, dtypes):
        """The packed parameter block for inputs of ``shapes``/``dtypes``."""
        return self.infer(tuple([tuple(s) for s in shapes]), tuple(dtypes)).packed

    def __repr__(self):
        return f"<CallPlan {self.op.name} ({self.nin} input(s)) {self.params}>"


cdef object _frozen(object v):
    """``v`` as part of a cache key, its type included (``1``, ``1.0`` and
    ``True`` are equal but may parse differently), or _UNFROZEN."""
    t = type(v)
    if t is str or v is None:
        return v
    if t is int or t is float or t is bool:
        return (t, v)
    if t is tuple:
        for x in <tuple>v:
            if type(x) is not int:
                break
        else:
            return (_INT_TUPLE, v)     # a shape: the common case, no copy
    if t is tuple or t is list:
        items = [_frozen(x) for x in <object>v]
        for x in items:
            if x is _UNFROZEN:
                return _UNFROZEN
        return (t, tuple(items))
    if isinstance(v, np.generic):
        return (t, v)
    return _UNFROZEN


cdef bint _same_values(dict last, dict params):
    """Whether ``params`` holds the keys of ``last`` with values of the same
    types and equal (as ``_frozen`` keys would compare): plain values and
    tuples of ints only; anything else is not the same (plan_of decides)."""
    if last is None or len(last) != len(params):
        return False
    for name, v in params.items():
        w = last.get(name, _UNFROZEN)
        # No identity shortcut: a list or array passed again may have been
        # changed in place since; only immutable values compare equal here.
        if v is None:
            if w is not None:
                return False
            continue
        t = type(v)
        if t is not type(w):
            return False
        if t is tuple:
            if len(<tuple>v) != len(<tuple>w):
                return False
            for x, y in zip(<tuple>v, <tuple>w):
                if type(x) is not int or type(y) is not int or x != y:
                    return False
        elif t is str or t is int or t is float or t is bool:
            if v != w:
                return False
        else:
            return False
    return True


cdef CallPlan plan_for(str op_name, int nin, dict params):
    """The plan of ``op_name`` called on ``nin`` inputs with ``params``
    (raw keyword arguments: Python values or MXNet's strings)."""
    cdef CallPlan plan
    op = _ops.get(op_name)
    if op is None:
        op = registry.get(op_name)      # raises OperatorNotFound, naming it
    if params:
        # A loop calling one op with the same arguments (layers: FullyConnected
        # with num_hidden=3): compared with the last ones, no key built.
        plan = _recent.get(op_name)
        if (plan is not None and plan.op is op and plan.nin == nin
                and _same_values(plan._raw, params)):
            return plan
        plan = plan_of(op, nin, params)
        if plan.pure and _plan_limit > 0:
            plan._raw = dict(params)        # the caller's dict may change later
            _recent[op_name] = plan
        return plan
    # A call without parameters (NDArray's operators, mx.nd.relu(a)): by
    # name, no key to build; valid while the name is the same OpDef.
    plan = _bare.get(op_name)
    if plan is not None and plan.op is op and plan.nin == nin:
        return plan
    plan = plan_of(op, nin, params)
    if plan.pure and _plan_limit > 0:
        _bare[op_name] = plan
    return plan


cdef CallPlan plan_of(object op, int nin, dict params):
    cdef CallPlan plan
    cdef list key
    if not params:
        k = (op, nin)
    else:
        key = [op, nin]
        for name, value in params.items():
            v = _frozen(value)
            if v is _UNFROZEN:
                return CallPlan(op, nin, params)
            key.append(name)
            key.append(v)
        k = tuple(key)
    plan = _plans.get(k)
    if plan is None:
        plan = CallPlan(op, nin, params)    # raises on bad parameters: nothing kept
        # A custom op's parser builds its CustomOpProp (user code, with
        # state, re-registrable under one op_type): parsed every call.
        if plan.pure and _plan_limit > 0:
            if len(_plans) >= _plan_limit:
                _plans.pop(next(iter(_plans)), None)    # the oldest
            _plans[k] = plan
    return plan


def get_plan(op, nin, params):
    """The (cached) CallPlan of OpDef or operator name ``op`` on ``nin``
    inputs with raw keyword arguments ``params``."""
    if isinstance(op, str):
        return plan_for(op, nin, dict(params))
    return plan_of(op, nin, dict(params))


def plan_cache_info():
    """(plans kept, their limit)."""
    return len(_plans), _plan_limit


def set_plan_limit(n):
    """Sets the plan cache's bound (tests; 0 turns caching off: every call
    parses and infers afresh); returns the previous one.  The cache is
    emptied."""
    global _plan_limit
    previous = _plan_limit
    _plan_limit = max(int(n), 0)
    _plans.clear()
    _bare.clear()
    _recent.clear()
    return previous
