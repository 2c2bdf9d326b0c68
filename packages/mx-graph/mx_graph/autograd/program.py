"""Backward programs for mx-ndarray's autograd tape.

The tape's nodes are the graph's nodes, so the backward is the Gradient
pass run on them (one set of gradient makers for executors and autograd).
The program is its new nodes flattened into calls on slots: the tape's
values fill the first slots, each call's outputs take the next ones.
mx-ndarray caches a program per tape structure and pushes its calls
through the plan-cached imperative path, so the pass runs once per
structure, not once per step."""
import array
from collections import Counter

from mx_ops.core._call import get_plan
from mx_ops.core.gradient import apply
from mx_ops.core.node import NodeEntry, topological_order, variable

from mx_graph.graph import Graph
from mx_graph.passes.gradient import gradient

__all__ = ["build_program"]

_NULL, _WRITE = 0, 1        # OpReqType kNullOp, kWriteTo


def build_program(nodes, base, heads, head_grad_slots, xs, nslots):
    """The program differentiating ``heads`` ((node, index) pairs) with
    respect to ``xs`` (idem), as mx_ndarray._autograd.set_program_builder
    describes: ``nodes`` the tape in topological order, ``base`` node id ->
    its first slot, ``head_grad_slots`` the slot of each given head
    gradient (None: ones), ``nslots`` the slots filled before the calls."""
    slot = {}           # (node id, output index) -> slot
    for node in nodes:
        for i in range(node.num_outputs):
            slot[(node._id, i)] = base[node._id] + i
    ys = [NodeEntry(n, i) for n, i in heads]
    ys_grads = []
    for y, s in zip(ys, head_grad_slots):
        if s is None:
            ys_grads.append(apply("ones_like", y))
        else:
            v = variable("head_grad")
            slot[(v._id, 0)] = s
            ys_grads.append(NodeEntry(v, 0))
    grads, _ = gradient(Graph(ys), [NodeEntry(n, i) for n, i in xs], ys_grads)
    calls = []          # (plan, input slots, its first output's slot)
    for node in topological_order([g for g in grads if g is not None]):
        if (node._id, 0) in slot:       # a tape node or a head gradient
            continue
        plan = get_plan(node.op, len(node.inputs), node.params)
        ins = tuple(slot[(e.node._id, e.index)] for e in node.inputs)
        # _call returns the visible outputs; a later call reading a hidden
        # one would find no slot (KeyError, a gradient maker's bug).
        for i in range(plan.nvisible):
            slot[(node._id, i)] = nslots + i
        calls.append((plan, ins, nslots))
        nslots += plan.nvisible
    results = [-1 if g is None else slot[(g.node._id, g.index)] for g in grads]
    # An output no later call and no result reads is computed for nothing
    # (the data gradient of a first layer): its req is kNullOp.  An output
    # that only one result reads may go straight into that variable's
    # gradient array (a 'write' there: no copy).
    reads = Counter(results)
    for _, ins, _ in calls:
        reads.update(ins)
    steps = []
    for plan, ins, first in calls:
        flags = [_WRITE] * plan.nout
        direct = []
        for i in range(plan.nvisible):
            if reads[first + i] == 0:
                flags[i] = _NULL
            elif reads[first + i] == 1 and first + i in results:
                direct.append((i, results.index(first + i)))
        reqs = array.array("i", flags).tobytes() if _NULL in flags else None
        steps.append((plan, ins, plan.nvisible, reqs, tuple(direct) or None))
    return steps, results
