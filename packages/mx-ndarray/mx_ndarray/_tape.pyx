"""The autograd tape, recording side (MXNet's Imperative::RecordOp).

When this thread records (``mx.autograd.record()``) and some input of a
call is on the tape (a variable from attach_grad, or an output of a
recorded call), ``_invoke._call`` records the call as an
``mx_ops.core.node.Node``, the node type graphs and gradient makers use:
its inputs are the entries of the arrays it read (a constant input becomes
a variable node), its ``info`` an AGInfo holding its outputs, detached (so
no cycle runs array -> node -> array) for the backward to read: a random
op's drawn values (Dropout's mask, a hidden output) are replayed, never
recomputed.  Every output then carries its entry (``_ag_node``,
``_ag_index``).  The backward side is _autograd (mx-graph builds its
programs).

``recording_threads`` counts the threads whose flag is on
(``training.set_recording`` tells it), so that ``_call`` reads one C int
and no thread-local while nobody records.  A thread that ends while
recording leaves the count up: calls then also read their thread-local
flag, which is still right."""
from cpython.ref cimport PyObject

from mx_ops.core._call cimport CallPlan, Inferred
from mx_ndarray._chunk cimport _chunk_incref
from mx_ndarray._ndarray cimport NDArray

from types import MappingProxyType

from mx_engine.base import MXNetError
from mx_ops.core import node as _node_mod
from mx_ops.core import training as _training_mod
from mx_ops.core.node import Node, NodeEntry

cdef extern from *:
    """
    #include <structmember.h>   /* PyMemberDef (in descrobject.h from Python 3.12) */

    /* A tuple subclass instance (NodeEntry) from two items, without the
       namedtuple's Python-level __new__. */
    static PyObject* mx_tuple_subtype2(PyObject* cls, PyObject* a, PyObject* b) {
        PyObject* items = PyTuple_Pack(2, a, b);
        if (items == NULL) return NULL;
        PyObject* args = PyTuple_Pack(1, items);
        Py_DECREF(items);
        if (args == NULL) return NULL;
        PyObject* r = PyTuple_Type.tp_new((PyTypeObject*)cls, args, NULL);
        Py_DECREF(args);
        return r;
    }

    /* Node's slots written through their offsets (their member
       descriptors' own), as Node.__init__ would set them: a recorded call
       pays a few pointer stores instead of eight attribute lookups. */
    #define MX_NODE_SLOTS 8
    static Py_ssize_t mx_node_off[MX_NODE_SLOTS];

    static int mx_node_offsets(PyObject* cls, PyObject* names) {
        for (Py_ssize_t i = 0; i < MX_NODE_SLOTS; i++) {
            PyObject* d = PyObject_GetAttr(cls, PyTuple_GET_ITEM(names, i));
            if (d == NULL) return -1;
            if (Py_TYPE(d) != &PyMemberDescr_Type) {
                Py_DECREF(d);
                PyErr_SetString(PyExc_TypeError, "Node's slots are no member descriptors");
                return -1;
            }
            mx_node_off[i] = ((PyMemberDescrObject*)d)->d_member->offset;
            Py_DECREF(d);
        }
        return 0;
    }

    static PyObject* mx_node_new(PyObject* cls, PyObject** values) {
        PyTypeObject* t = (PyTypeObject*)cls;
        PyObject* obj = t->tp_alloc(t, 0);
        if (obj == NULL) return NULL;
        for (int i = 0; i < MX_NODE_SLOTS; i++) {
            Py_INCREF(values[i]);
            *(PyObject**)((char*)obj + mx_node_off[i]) = values[i];
        }
        return obj;
    }
    """
    object mx_tuple_subtype2(object cls, object a, object b)
    int mx_node_offsets(object cls, object names) except -1
    object mx_node_new(object cls, PyObject** values)

# The order of mx_node_new's values; every slot of Node, checked here.
_NODE_SLOTS = ("op", "name", "params", "inputs", "control_deps", "attrs", "info", "_id")
assert sorted(_NODE_SLOTS) == sorted(Node.__slots__), "mx_ops Node's slots changed"
mx_node_offsets(Node, _NODE_SLOTS)
_ids = _node_mod._ids           # Node's own id counter (Node.__init__ draws from it)

ASSIGN_ERROR = (
    "Assigning to NDArrays that are already in a computational graph will cause undefined "
    "behavior when evaluating gradients. Please call backward first to clear the graph or do "
    "this out side of a record section. Also note that you cannot use inplace operations like "
    "+=, *=, relu(x, out=x), y[idx]=x, etc inside a record section.")


cdef class AGInfo:
    """What the tape keeps on a node (nnvm Node.info)."""

    def __init__(self, outputs, grad=None, grad_req=None, sig=None):
        self.outputs = outputs
        self.grad = grad
        self.grad_req = grad_req
        self.sig = sig


cdef int recording_threads = 0


def _count_recording(int delta):
    """training.set_recording's listener: keeps recording_threads."""
    global recording_threads
    recording_threads += delta


_training_mod._record_listeners.append(_count_recording)


cdef inline object _entry(object node, int index):
    """NodeEntry(node, index), at C speed: one per recorded input."""
    return mx_tuple_subtype2(NodeEntry, node, index)


# A tape node has no control dependencies and no string attributes (nor a
# constant's node inputs or parameters); these shared empties are
# read-only, so a write fails loudly instead of reaching every node
# (get_symbol copies the nodes it hands out).
_NO_DEPS = _NO_INPUTS = ()
_NO_ATTRS = _NO_PARAMS = MappingProxyType({})


cdef object _node(object op, str name, object params, object inputs):
    """Node(op, name, params, inputs) without its Python __init__ (a
    recorded call's cost); tests/test_tape.py checks every slot.  Fewer
    new containers also mean fewer garbage-collector passes."""
    cdef PyObject* values[8]
    node_id = next(_ids)
    values[0] = <PyObject*>op
    values[1] = <PyObject*>name
    values[2] = <PyObject*>params
    values[3] = <PyObject*>inputs
    values[4] = <PyObject*>_NO_DEPS
    values[5] = <PyObject*>_NO_ATTRS
    values[6] = <PyObject*>None
    values[7] = <PyObject*>node_id
    return mx_node_new(Node, values)


_sparse_detached = None     # mx_ndarray._sparse_base's, set at its import


def set_sparse_detach(fn):
    """Installs ``fn(a)``: a sparse array's ``detached``."""
    global _sparse_detached
    _sparse_detached = fn


cdef NDArray detached(NDArray a):
    """A view of all of ``a`` outside any graph (NDArray.detach); a sparse
    array's shares its storage (chunk and components)."""
    if a.stype_flag:
        return _sparse_detached(a)
    cdef NDArray v = NDArray.__new__(NDArray)
    _chunk_incref(a.chunk)
    v.chunk = a.chunk
    v.offset = a.offset
    v.shape = a.shape
    v.dtype_flag = a.dtype_flag
    v.context = a.context
    return v


cdef inline bint on_tape(NDArray a):
    """Whether ``a`` is in a recorded graph whose values are still kept
    (MXNet's !AGInfo::IsNone): backward without retain_graph drops them."""
    return a._ag_node is not None and a._ag_node.info is not None


cdef int record_call(CallPlan plan, Inferred r, list inputs, list outputs, bint given_out,
                     const char* scalar) except -1:
    """Records one call of ``plan`` (inputs -> outputs) when an input is on
    the tape.  ``given_out``: the outputs are the caller's ``out`` arrays,
    which must not be on the tape (MXNet raises).  ``scalar`` points to
    the call's double where a scalar op packed it per call."""
    cdef Py_ssize_t i, n = len(inputs), nvisible = plan.nvisible
    cdef NDArray a
    cdef list entries, saved
    cdef AGInfo info
    if given_out:
        for i in range(nvisible):
            if on_tape(<NDArray>outputs[i]):
                raise MXNetError(ASSIGN_ERROR)
    for i in range(n):
        if on_tape(<NDArray>inputs[i]):
            break
    else:
        return 0
    entries = []
    for i in range(n):
        a = <NDArray>inputs[i]
        if on_tape(a):
            entries.append(_entry(a._ag_node, a._ag_index))
        else:           # a constant: a variable node holding it, no gradient
            var = _node(None, "const", _NO_PARAMS, _NO_INPUTS)
            info = AGInfo.__new__(AGInfo)       # grad None, grad_req None: a constant
            info.outputs = [a]
            var.info = info
            entries.append(_entry(var, 0))
    params = plan.params
    if scalar != NULL:
        params = dict(params)
        value = (<const double*>scalar)[0]
        params["scalar"] = value
        sig = (plan, r, value)
    elif plan.pure:
        sig = (plan, r)
    else:
        sig = None
    node = _node(plan.op, plan.op.name, params, entries)
    saved = list(outputs)
    for i in range(nvisible):
        a = <NDArray>outputs[i]
        saved[i] = detached(a)
        a._ag_node = node
        a._ag_index = i
    info = AGInfo.__new__(AGInfo)
    info.outputs = saved
    info.sig = sig
    node.info = info
    return 0
