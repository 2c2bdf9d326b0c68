"""The single-machine stores, MXNet's KVStoreLocal: 'local' (sums and
updates in CPU memory) and 'device' (sums on the devices, 2bit compression
between them); 'nccl' (mx_kvstore.nccl) is made here on first use."""
import mx_ndarray as nd

from mx_kvstore._comm import CommCPU, CommDevice
from mx_kvstore.base import register_type
from mx_kvstore.kvstore import KVStore


class KVStoreLocal(KVStore):
    """A store on one machine: a push sums a key's values (one per device)
    and stores the sum, or hands (key, sum, stored) to the updater; a pull
    copies the stored value to every device asked for."""

    def __init__(self, kv_type="local"):
        super().__init__(kv_type)
        # MXNet sums on the devices for every name with 'device' in it
        self._comm = CommDevice() if "device" in kv_type else CommCPU()
        self._store = {}

    def _set_compression_impl(self, compression):
        super()._set_compression_impl(compression)
        self._comm.compression = compression

    def _init_impl(self, keys, values):
        for key, value in zip(keys, values):
            self._store[key] = value.copyto(self._comm.home(value))

    def _push_impl(self, keys, groups, priority):
        for key, values in zip(keys, groups):
            if any(v.stype != "default" for v in values):
                self._push_sparse(key, values)
                continue
            stored = self._store[key]
            ctx = self._comm.merge_context(key, values, stored)
            if self._updater is None:
                if stored.context != ctx or stored.stype != "default":
                    stored = self._store[key] = nd.empty(stored.shape, ctx=ctx,
                                                         dtype=stored.dtype)
                self._comm.reduce(key, values, stored, priority)
                continue
            if len(values) == 1 and self._comm.compression is None:
                merged = values[0]           # MXNet hands a single value over as it is
            else:
                merged = self._comm.buffer(key, "merged", 0, stored.shape, stored.dtype, ctx)
                self._comm.reduce(key, values, merged, priority)
            if merged.context != stored.context:
                # The update runs where the sum is: the weight moves there (MXNet
                # moves it from the CPU to the merging GPU the same way).
                stored = self._store[key] = stored.copyto(merged.context)
            self._updater(key, merged, stored)

    def _push_sparse(self, key, values):
        stored = self._store[key]
        merged = self._comm.reduce_sparse(key, values, stored.context)
        if self._updater is None:
            self._store[key] = merged
        else:
            self._updater(key, merged, stored)

    def _pull_impl(self, keys, groups, priority):
        for key, outs in zip(keys, groups):
            self._comm.broadcast(self._store[key], outs, priority)

    def _row_sparse_pull_impl(self, keys, groups, row_ids, priority):
        for key, outs, rids in zip(keys, groups, row_ids):
            stored = self._store[key]
            for out, rid in zip(outs, rids):
                # _sparse_retain keeps the distinct ids, sorted (rows the store
                # lacks as zeros), as MXNet's Unique + retain: all on the engine.
                ids = rid.as_in_context(stored.context).astype("int64", copy=False)
                nd.sparse.retain(stored, ids).copyto(out)


def _nccl(name):
    # Imported here: the module is only needed, and CuPy only looked for, when
    # a store of the type is made (mx_kvstore.nccl says what is missing).
    from mx_kvstore.nccl import KVStoreNCCL
    return KVStoreNCCL(name)


# MXNet 1.9.1's names (include/mxnet/kvstore.h): 'local_update_cpu' and
# 'local_allreduce_cpu' are 'local', 'local_allreduce_device' is 'device';
# `type` keeps the name given, as MXNet's does.
for _name in ("local", "device", "local_update_cpu", "local_allreduce_cpu",
              "local_allreduce_device"):
    register_type(_name, KVStoreLocal)
register_type("nccl", _nccl)
