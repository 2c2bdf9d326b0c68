"""The 'nccl' store, MXNet 1.9.1's KVStoreNCCL, on CuPy's NCCL bindings.

A push sums a key's values, one per GPU, with ncclReduce onto one of
those GPUs (keys spread over them round robin, as the 'device' store
merges); a pull copies the stored value to that GPU's out and ncclBcasts
it to the others; a pushpull without an updater is one ncclAllReduce from
the values into the outs.  The calls of every key of one push, pull or
pushpull on one set of GPUs form one NCCL group: one engine function
(mx_kvstore._nccl_engine) that launches them on the communicators' streams
and waits for them.  The updater runs on the reduced value, on its GPU.

Dense values only (MXNet refuses sparse ones too), of the dtypes MXNet hands
NCCL.  A key's values on a single device, on CPUs or twice on one GPU are
summed and copied as the 'device' store does.  Unlike MXNet, one store may
serve several sets of GPUs (one clique of communicators per set).
"""
import mx_ndarray as nd

from mx_kvstore._comm import CommCPU, CommDevice
from mx_kvstore._nccl_comm import Clique, check_dtype, distinct_gpus, require_nccl
from mx_kvstore.errors import KVStoreError
from mx_kvstore.local import KVStoreLocal


def _check_dense(api, key, arrays):
    for a in arrays:
        if a.stype != "default":
            raise KVStoreError(f"KVStore.{api}: the 'nccl' store takes dense arrays only; "
                               f"key {key!r} has a {a.stype} one")


class _Group:
    """The NCCL calls of one clique, gathered over the keys of one call."""

    def __init__(self):
        self.calls, self.reads, self.writes = [], [], []


class KVStoreNCCL(KVStoreLocal):
    """``mx.kv.create('nccl')``: sums and broadcasts over GPUs with NCCL."""

    def __init__(self, kv_type="nccl"):
        self._nccl = require_nccl("mx.kv.create")
        super().__init__(kv_type)
        self._comm = CommDevice()
        self._cliques = {}          # sorted device ids -> Clique

    def _groups_by_clique(self):
        groups = {}

        def group(device_ids):
            ids = tuple(sorted(device_ids))
            if ids not in self._cliques:
                self._cliques[ids] = Clique(self._nccl, ids)
            return self._cliques[ids], groups.setdefault(ids, _Group())
        return groups, group

    def _push_groups(self, groups, priority, name):
        for ids, g in groups.items():
            self._cliques[ids].push_group(g.calls, g.reads, g.writes, priority, name)

    # --- init: dense values of NCCL's dtypes, kept in CPU memory as MXNet --------
    def _claim_new_keys(self, keys, groups, api):
        for key, group in zip(keys, groups):
            _check_dense(api, key, group)
            check_dtype(api, key, group[0].dtype)
        super()._claim_new_keys(keys, groups, api)

    def _init_impl(self, keys, values):
        for key, value in zip(keys, values):
            # Where 'local' keeps it: pinned CPU memory for a value on a GPU.
            self._store[key] = value.copyto(CommCPU.home(self._comm, value))

    # --- push ---------------------------------------------------------------------------
    def _push_impl(self, keys, groups, priority):
        for key, values in zip(keys, groups):
            _check_dense("push", key, values)
        nccl_groups, group = self._groups_by_clique()
        updates = []
        for key, values in zip(keys, groups):
            stored = self._store[key]
            ctx = self._comm.merge_context(key, values, stored)
            if self._updater is None:
                if stored.context != ctx:
                    stored = self._store[key] = nd.empty(stored.shape, ctx=ctx,
                                                         dtype=stored.dtype)
                merged = stored
            elif len(values) == 1:
                merged = values[0]       # MXNet hands a single value over as it is
            else:
                merged = self._comm.buffer(key, "merged", 0, stored.shape, stored.dtype, ctx)
            ids = distinct_gpus(values)
            if ids is None or ctx.device_type != "gpu":
                if merged is not values[0]:
                    self._comm.reduce(key, values, merged, priority)
            else:
                clique, g = group(ids)
                root = ctx.device_id
                for v in values:
                    dev = v.context.device_id
                    g.calls.append(clique.reduce(dev, v, merged if dev == root else None, root))
                g.reads.extend(values)
                g.writes.append(merged)
            updates.append((key, merged))
        self._push_groups(nccl_groups, priority, "KVStoreReduce")
        if self._updater is not None:
            for key, merged in updates:
                stored = self._store[key]
                if merged.context != stored.context:
                    stored = self._store[key] = stored.copyto(merged.context)
                self._updater(key, merged, stored)

    # --- pull ---------------------------------------------------------------------------
    def _pull_impl(self, keys, groups, priority):
        for key, outs in zip(keys, groups):
            _check_dense("pull", key, outs)
        nccl_groups, group = self._groups_by_clique()
        for key, outs in zip(keys, groups):
            stored = self._store[key]
            ids = distinct_gpus(outs)
            if ids is None:
                self._comm.broadcast(stored, outs, priority)
                continue
            # The root: the GPU that holds the stored value, else the one a
            # push of the key merges on (the stored value is copied there first).
            if stored.context.device_type == "gpu" and stored.context.device_id in ids:
                root = stored.context.device_id
                src = stored
            else:
                root = self._comm.merge_context(key, outs, stored).device_id
                src = outs[ids.index(root)]
            stored.copyto(outs[ids.index(root)])
            clique, g = group(ids)
            for out, dev in zip(outs, ids):
                if dev == root:
                    g.calls.append(clique.bcast(dev, src, root))
                else:
                    g.calls.append(clique.bcast(dev, out, root))
                    g.writes.append(out)
            g.reads.append(src)
        self._push_groups(nccl_groups, priority, "KVStoreBCast")

    # --- pushpull -----------------------------------------------------------------------
    def _pushpull_impl(self, keys, values, outs, priority):
        if self._updater is not None:
            return super()._pushpull_impl(keys, values, outs, priority)
        for key, vals, outs_ in zip(keys, values, outs):
            _check_dense("pushpull", key, vals + outs_)
        nccl_groups, group = self._groups_by_clique()
        keep = []                   # (out on the root GPU, stored) of the allreduced keys
        for key, vals, outs_ in zip(keys, values, outs):
            ids, out_ids = distinct_gpus(vals), distinct_gpus(outs_)
            if ids is None or out_ids is None or sorted(ids) != sorted(out_ids):
                self._push_impl([key], [vals], priority)
                self._pull_impl([key], [outs_], priority)
                continue
            clique, g = group(ids)
            for v, dev in zip(vals, ids):
                g.calls.append(clique.all_reduce(dev, v, outs_[out_ids.index(dev)]))
            g.reads.extend(v for v in vals if not any(v is o for o in outs_))
            g.writes.extend(outs_)
            # The store keeps the sum too, for later pulls: a copy on the GPU
            # the key merges on.
            stored = self._store[key]
            ctx = self._comm.merge_context(key, vals, stored)
            if stored.context != ctx:
                stored = self._store[key] = nd.empty(stored.shape, ctx=ctx, dtype=stored.dtype)
            keep.append((outs_[out_ids.index(ctx.device_id)], stored))
        self._push_groups(nccl_groups, priority, "KVStoreAllReduce")
        for out, stored in keep:
            out.copyto(stored)

    def _row_sparse_pull_impl(self, keys, groups, row_ids, priority):
        raise KVStoreError("KVStore.row_sparse_pull: the 'nccl' store does not support "
                           "sparse storage types")
