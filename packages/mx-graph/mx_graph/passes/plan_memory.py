"""PlanMemory: nnvm's pass that gives every entry a storage id.

Walking the nodes in execution order with a reference count per entry:
- in place: an output may take an input's storage when the operator
  declares the pair (OpDef.inplace), the input is read for the last time
  here, it is not external (a variable, an output the caller keeps) and
  the sizes match;
- sharing: an entry whose last reader has run returns its storage to a free
  pool, and a later entry takes the best-fitting free storage on its device
  (MXNet's GraphAllocator: within a factor of 16, the smallest one big
  enough, else the largest smaller one, which grows).
What the backward pass reads of the forward pass is whatever the gradient
makers' nodes read (their declared backward dependencies), so forward
values die as soon as their last backward reader has run.

Attributes added: "storage_id" (per entry; EXTERNAL for entries the
caller provides), "storage_bytes" (per storage), "inplace_entries" (entry
ids written over their input), "planned_bytes" and "naive_bytes" (one
buffer per planned entry), for the report.
"""
import bisect
import os

import numpy as np

__all__ = ["plan_memory", "EXTERNAL", "MATCH_RANGE", "inplace_enabled", "sharing_enabled"]

EXTERNAL = -2
MATCH_RANGE = 16


def _flag(name):
    return os.environ.get(name, "1").strip().lower() not in ("0", "false", "no", "off")


def inplace_enabled():
    """MXNET_EXEC_ENABLE_INPLACE (default on), as MXNet reads it."""
    return _flag("MXNET_EXEC_ENABLE_INPLACE")


def sharing_enabled():
    """MX_EXEC_ENABLE_SHARING (default on): 0 gives every planned entry its
    own storage (MXNet has no switch for this; the planner's tests and
    benchmarks need one)."""
    return _flag("MX_EXEC_ENABLE_SHARING")


def _nbytes(shape, dtype):
    n = np.dtype(dtype).itemsize
    for d in shape:
        n *= d
    return int(n)


class _Pool:
    """Free storages per device, sorted by size."""

    def __init__(self, share):
        self.share = share
        self.sizes = []           # per storage id: bytes (grows)
        self.free = {}            # device -> sorted [(bytes, sid)]

    def request(self, nbytes, device):
        free = self.free.setdefault(device, [])
        if self.share and free:
            lo = bisect.bisect_left(free, (nbytes, -1))
            # The smallest free storage at least as big, within the range.
            if lo < len(free) and free[lo][0] <= nbytes * MATCH_RANGE:
                return free.pop(lo)[1]
            # Else the largest smaller one, which grows to fit.
            if lo > 0 and free[lo - 1][0] * MATCH_RANGE >= nbytes:
                size, sid = free.pop(lo - 1)
                self.sizes[sid] = nbytes
                return sid
        self.sizes.append(nbytes)
        return len(self.sizes) - 1

    def release(self, sid, device):
        bisect.insort(self.free.setdefault(device, []), (self.sizes[sid], sid))


def plan_memory(graph, external=(), inplace=None, share=None):
    """``graph`` (with "shape" and "dtype", and optionally "device": one
    per node) with a storage plan; entries in ``external`` and every
    variable's entry keep caller-provided memory.  ``inplace`` defaults to
    MXNET_EXEC_ENABLE_INPLACE and ``share`` to MX_EXEC_ENABLE_SHARING;
    ``share=False`` gives every entry its own storage."""
    if inplace is None:
        inplace = inplace_enabled()
    if share is None:
        share = sharing_enabled()
    idx = graph.indexed
    shapes, dtypes = graph.attrs["shape"], graph.attrs["dtype"]
    devices = graph.attrs.get("device") or [0] * idx.num_nodes
    external = set(external)
    for nid in idx.input_nodes:
        external.add(idx.entry_id(nid, 0))
    refs = idx.entry_refcounts()
    for eid in external:
        refs[eid] += 1                      # never released
    storage = [EXTERNAL] * idx.num_entries
    live = {}                               # storage id -> live entries on it
    pool = _Pool(share)
    inplace_entries = set()
    naive = 0

    # The device of each entry's producer: a storage returns to the pool
    # of the device it is on, also when its last reader (a copy to another
    # device) runs elsewhere.
    entry_dev = [devices[nid] for nid, node in enumerate(idx.nodes)
                 for _ in range(node.num_outputs)]

    def drop(eid):
        sid = storage[eid]
        if sid < 0:
            return
        live[sid] -= 1
        if live[sid] == 0:
            pool.release(sid, entry_dev[eid])

    for nid, node in enumerate(idx.nodes):
        if node.is_variable:
            continue
        row, end = idx.node_row_ptr[nid], idx.node_row_ptr[nid + 1]
        dev = devices[nid]
        taken = set()
        naive += sum(_nbytes(shapes[e], dtypes[e]) for e in range(row, end) if e not in external)
        if inplace:
            for i_in, i_out in node.op.inplace:
                if i_in >= len(idx.inputs[nid]) or row + i_out >= end:
                    continue
                e_in, e_out = idx.inputs[nid][i_in], row + i_out
                if (e_in in taken or e_out in external or storage[e_out] != EXTERNAL
                        or storage[e_in] < 0 or refs[e_in] != 1
                        or entry_dev[e_in] != dev
                        or _nbytes(shapes[e_in], dtypes[e_in])
                        != _nbytes(shapes[e_out], dtypes[e_out])):
                    continue
                taken.add(e_in)
                storage[e_out] = storage[e_in]
                live[storage[e_in]] += 1
                inplace_entries.add(e_out)
        for eid in range(row, end):
            if eid in external or storage[eid] != EXTERNAL:
                continue
            sid = pool.request(_nbytes(shapes[eid], dtypes[eid]), dev)
            storage[eid] = sid
            live[sid] = live.get(sid, 0) + 1
        for eid in idx.inputs[nid]:
            refs[eid] -= 1
            if refs[eid] == 0:
                drop(eid)
        for eid in range(row, end):
            if refs[eid] == 0:               # an output nobody reads
                drop(eid)
    return graph.with_attrs(storage_id=storage, storage_bytes=list(pool.sizes),
                            inplace_entries=inplace_entries,
                            planned_bytes=sum(pool.sizes), naive_bytes=naive)
